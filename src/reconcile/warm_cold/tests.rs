//! The net under every memo of the reconciler (issue 51): **a warm pass decides what a cold one
//! would**. A property over random sequences of what happens to a daemon — template edits
//! (replicas, image, deletion and return), policy edits (another replica scheduling, a
//! PropagationPolicy pinned to one member, an OverridePolicy added or changed), member
//! capacity changes and polls, clock steps (past the assumed-replica TTL, the full check, the
//! confidence's decay), SIGHUP and a configuration reload (a new reconciler on the same
//! store) — compares after every step the warm reconciler's placements and output with those
//! of a reconciler started fresh on its own store for that one pass (its persisted decisions
//! forgotten first, so it decides everything from scratch: `Kept::default()`'s path).
//!
//! The simulation's invariant 5 (`testbed/dst`) compares the same per pass over a whole world;
//! this one is the unit-level net a change of kept state runs in seconds
//! (`cargo test --lib reconcile::warm_cold`). More cases: `FEDSCHED_WARM_COLD_CASES=64`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::members::live::{LiveData, LiveStatus, LiveView};
use crate::model::snapshot::PollFacts;
use crate::policy::ObjectKey;
use crate::publish::Trigger;
use crate::reconcile::{Changed, PhaseTimings, Reconciler, Settings};
use crate::store::Store;
use crate::testbed::simulate::repo::{self, FleetSpec, RepoSpec};

/// Workloads of the generated repository: Duplicated (0–7, 20–27), Divided by available
/// replicas (8–15, 28–35), static weights (16–18, 36–38), spread constraints (19) and
/// ordered affinity groups (39).
const WORKLOADS: usize = 40;
/// Live members (4 nodes, 12 pods each).
const MEMBERS: usize = 6;

/// How a workload's PropagationPolicy is edited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PolicyEdit {
    /// As generated.
    Original,
    /// `replicaScheduling: Duplicated`.
    Duplicated,
    /// `clusterAffinity: {clusterNames: [member c]}` (groups and spread constraints dropped).
    Pinned(usize),
}

/// One thing that happens to the daemon before a pass.
#[derive(Debug, Clone)]
enum Step {
    Replicas {
        w: usize,
        replicas: i64,
    },
    /// Another image: the template changes, its replicas do not.
    Image {
        w: usize,
    },
    /// The workload's file removed, or put back.
    Toggle {
        w: usize,
    },
    Policy {
        w: usize,
        edit: PolicyEdit,
    },
    /// An OverridePolicy added (or its label changed) for the workload.
    Override {
        w: usize,
    },
    /// Member `c`'s nodes' allocatable CPU and memory scaled to `percent`, polled now.
    Capacity {
        c: usize,
        percent: i64,
    },
    /// Every member polled again now, nothing changed (the same node lists).
    Poll,
    Clock {
        ms: u64,
    },
    /// A pass triggered by SIGHUP (the whole output compared).
    Sighup,
    /// A configuration reload: a new reconciler on the same store (the daemon's `reload`).
    Reload,
}

fn step() -> impl Strategy<Value = Step> {
    let w = 0..WORKLOADS;
    prop_oneof![
        3 => (w.clone(), 0i64..12).prop_map(|(w, replicas)| Step::Replicas { w, replicas }),
        1 => w.clone().prop_map(|w| Step::Image { w }),
        1 => w.clone().prop_map(|w| Step::Toggle { w }),
        3 => (w.clone(), prop_oneof![
            Just(PolicyEdit::Original),
            Just(PolicyEdit::Duplicated),
            (0..MEMBERS).prop_map(PolicyEdit::Pinned),
        ])
            .prop_map(|(w, edit)| Step::Policy { w, edit }),
        1 => w.prop_map(|w| Step::Override { w }),
        2 => (0..MEMBERS, prop_oneof![Just(25i64), Just(50), Just(200)])
            .prop_map(|(c, percent)| Step::Capacity { c, percent }),
        1 => Just(Step::Poll),
        2 => prop_oneof![Just(1_000u64), Just(65_000), Just(400_000), Just(700_000), Just(3_000_000)]
            .prop_map(|ms| Step::Clock { ms }),
        1 => Just(Step::Sighup),
        1 => Just(Step::Reload),
    ]
}

/// A workload as the repository has it now.
#[derive(Debug, Clone)]
struct Workload {
    present: bool,
    replicas: i64,
    image: u32,
    policy: PolicyEdit,
    /// The label value of an added OverridePolicy (0: none added).
    label: u32,
}

/// The daemon under test and what happens around it.
struct World {
    _dir: tempfile::TempDir,
    policies: PathBuf,
    view: LiveView,
    workloads: Vec<Workload>,
    now: u64,
    warm: Reconciler,
    warm_out: PathBuf,
    cold_state: PathBuf,
    cold_out: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let policies = dir.path().join("repo");
        let spec =
            RepoSpec { fleet: FleetSpec { clusters: MEMBERS, nodes: 4, pods: 12, seed: 9 }, workloads: WORKLOADS };
        let mut view = LiveView::default();
        repo::write_repo(&policies, &spec, |_, c, obs| {
            let poll = PollFacts { at_ms: 500, duration_ms: 1, pages: 2, nodes: 4, pods: obs.listed_pods };
            let data = LiveData::of(obs, poll);
            let status = LiveStatus { endpoint: "sim".into(), last_good: Some(Arc::new(data)), ..Default::default() };
            view.clusters.insert(c.name.clone(), status);
        })
        .expect("generate");
        let workloads = (0..WORKLOADS)
            .map(|i| Workload {
                present: true,
                replicas: repo::replicas_of(i),
                image: 0,
                policy: PolicyEdit::Original,
                label: 0,
            })
            .collect();
        let warm = Reconciler::new(Store::open(&dir.path().join("warm-state")).expect("store"), Settings::builtin());
        World {
            policies,
            view,
            workloads,
            now: 1_000,
            warm,
            warm_out: dir.path().join("warm-out"),
            cold_state: dir.path().join("cold-state"),
            cold_out: dir.path().join("cold-out"),
            _dir: dir,
        }
    }

    /// Writes workload `i`'s file as [`World::workloads`] has it (or removes it).
    fn write(&self, i: usize) {
        let path = self.policies.join(repo::workload_file(i));
        let w = &self.workloads[i];
        if !w.present {
            let _ = std::fs::remove_file(&path);
            return;
        }
        let mut deployment = repo::deployment(i, w.replicas);
        if w.image > 0 {
            deployment["spec"]["template"]["spec"]["containers"][0]["image"] =
                json!(format!("registry.example/{}:2.{}.0", repo::workload_name(i), w.image));
        }
        let mut policy = repo::propagation_policy(i, MEMBERS);
        let placement = &mut policy["spec"]["placement"];
        match w.policy {
            PolicyEdit::Original => {}
            PolicyEdit::Duplicated => {
                placement["replicaScheduling"] = json!({"replicaSchedulingType": "Duplicated"});
            }
            PolicyEdit::Pinned(c) => {
                if let Some(p) = placement.as_object_mut() {
                    p.remove("clusterAffinities");
                    p.remove("spreadConstraints");
                }
                placement["clusterAffinity"] =
                    json!({"clusterNames": [crate::testbed::simulate::fleet::cluster_name(c)]});
            }
        }
        let mut docs = vec![deployment, policy];
        docs.extend(repo::override_policy(i));
        if w.label > 0 {
            docs.push(label_override(i, w.label));
        }
        let text = docs.iter().map(crate::render::yaml::to_yaml).collect::<Vec<_>>().join("---\n");
        std::fs::write(&path, text).expect("write a workload");
    }

    /// Makes `step` happen (before the pass that follows it); the trigger of that pass.
    fn apply(&mut self, step: &Step) -> Trigger {
        self.now += 1_000;
        match *step {
            Step::Replicas { w, replicas } => {
                self.workloads[w].replicas = replicas;
                self.workloads[w].present = true;
                self.write(w);
            }
            Step::Image { w } => {
                self.workloads[w].image += 1;
                self.workloads[w].present = true;
                self.write(w);
            }
            Step::Toggle { w } => {
                self.workloads[w].present = !self.workloads[w].present;
                self.write(w);
            }
            Step::Policy { w, edit } => {
                self.workloads[w].policy = edit;
                self.workloads[w].present = true;
                self.write(w);
            }
            Step::Override { w } => {
                self.workloads[w].label += 1;
                self.workloads[w].present = true;
                self.write(w);
            }
            Step::Capacity { c, percent } => {
                let name = crate::testbed::simulate::fleet::cluster_name(c);
                let now = self.now;
                if let Some(data) = self.view.clusters.get_mut(&name).and_then(|s| s.last_good.as_mut()) {
                    let mut nodes = (*data.nodes).clone();
                    for n in &mut nodes {
                        let mut allocatable = (*n.allocatable).clone();
                        for r in ["cpu", "memory"] {
                            if let Some(v) = allocatable.0.get_mut(r) {
                                *v = *v * percent / 100;
                            }
                        }
                        n.allocatable = Arc::new(allocatable);
                    }
                    let data = Arc::make_mut(data);
                    data.nodes = Arc::new(nodes);
                    data.poll.at_ms = now;
                }
            }
            Step::Poll => {
                for status in self.view.clusters.values_mut() {
                    if let Some(data) = status.last_good.as_mut() {
                        Arc::make_mut(data).poll.at_ms = self.now;
                    }
                }
            }
            Step::Clock { ms } => self.now += ms,
            Step::Sighup => return Trigger::Sighup,
            Step::Reload => {
                let store = self.warm.store.clone();
                self.warm = Reconciler::new(store, Settings::builtin());
                return Trigger::Sighup;
            }
        }
        Trigger::Timer
    }

    /// One pass of `r` at the world's clock.
    fn pass(&self, r: &Reconciler, out: &Path, trigger: Trigger) -> Result<crate::reconcile::ReconcileReport, String> {
        let mut inputs = r
            .load_inputs(&self.policies, &mut PhaseTimings::default(), &Changed::Unknown)
            .map_err(|e| format!("inputs: {e:?}"))?;
        inputs.apply_live(&self.view, &r.store);
        r.reconcile(&inputs, out, trigger, self.now).map_err(|e| format!("pass: {e}"))
    }

    /// A pass of the warm reconciler and one of a fresh reconciler on the cold store, then
    /// the comparison: the same outcome, the same placements, the same output byte for byte.
    fn both(&self, trigger: Trigger, what: &str) -> Result<(), String> {
        let warm = self.pass(&self.warm, &self.warm_out, trigger);
        let cold = {
            let store = Store::open(&self.cold_state).expect("store");
            let all: Vec<ObjectKey> = store.placements().expect("placements").into_iter().map(|p| p.workload).collect();
            store.remove_stored_decisions(&all).expect("forget the persisted decisions");
            self.pass(&Reconciler::new(store, Settings::builtin()), &self.cold_out, trigger)
        };
        match (&warm, &cold) {
            (Ok(_), Ok(_)) | (Err(_), Err(_)) => {}
            _ => return Err(format!("{what}: warm {warm:?}, cold {cold:?}", warm = warm.map(|r| r.summary()))),
        }
        let cold_store = Store::open(&self.cold_state).expect("store");
        let (w, c) = (placements(&self.warm.store), placements(&cold_store));
        if w != c {
            let differ: Vec<String> = w
                .iter()
                .zip(&c)
                .filter(|(a, b)| a != b)
                .take(3)
                .map(|(a, b)| format!("warm {a}\n   cold {b}"))
                .collect();
            return Err(format!("{what}: placements differ ({} / {}):\n {}", w.len(), c.len(), differ.join("\n ")));
        }
        let (w, c) = (tree(&self.warm_out), tree(&self.cold_out));
        if w != c {
            let differ: Vec<&String> = w.keys().chain(c.keys()).filter(|k| w.get(*k) != c.get(*k)).take(5).collect();
            return Err(format!("{what}: the outputs differ at {differ:?}"));
        }
        Ok(())
    }
}

/// An OverridePolicy that adds the label `rev: <label>` to workload `i` on every member.
fn label_override(i: usize, label: u32) -> Value {
    let name = repo::workload_name(i);
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "OverridePolicy",
        "metadata": {"name": format!("{name}-rev"), "namespace": repo::namespace_of(i)},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "overrideRules": [{"overriders": {"labelsOverrider": [
                {"operator": "add", "value": {"rev": format!("r{label}")}}]}}],
        },
    })
}

/// The placements a store holds, as a pass leaves them: policy, outcome, targets, affinity
/// term, files, history sequence.
fn placements(store: &Store) -> Vec<String> {
    store
        .placements()
        .expect("placements")
        .iter()
        .map(|p| {
            let outcome = std::mem::discriminant(&p.result.outcome);
            format!(
                "{} {:?} {outcome:?} {:?} {:?} {:?} seq {}",
                p.workload.display_ref(),
                p.policy,
                p.targets,
                p.affinity_name,
                p.files,
                p.history_seq
            )
        })
        .collect()
}

/// Every file under `dir` (the output lock left out).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().contains(".fedsched/lock") {
                let rel = p.strip_prefix(dir).expect("prefix").to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// Two quiet passes, then `steps`, each followed by a pass compared warm against cold.
fn run(steps: &[Step]) -> Result<(), String> {
    let mut world = World::new();
    world.both(Trigger::Startup, "the first pass")?;
    world.now += 1_000;
    world.both(Trigger::Timer, "a quiet pass")?;
    for (k, step) in steps.iter().enumerate() {
        let trigger = world.apply(step);
        world.both(trigger, &format!("step {k} ({step:?}) at {} ms", world.now))?;
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("FEDSCHED_WARM_COLD_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(6)
}

/// The sequences are drawn from a fixed seed (one run is one exact run); another seed explores
/// others: `FEDSCHED_WARM_COLD_SEED=7`.
fn seed() -> u64 {
    std::env::var("FEDSCHED_WARM_COLD_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(51)
}

/// Found by the property (a random seed, session 6). Workload 19 (spread constraints, so its
/// outcome reads capacity) is decided on its clusters' state with verdicts V1 and recorded;
/// the deductions of the first quiet pass decide it again with other figures V2 and the same
/// outcome, which the record stage does not record (its placement keeps V1) while the decision
/// is persisted with the state of V2. After the restart the decision came back with V1 and the
/// state of V2: its first check computed every verdict again and found the outcome standing
/// on V2' but kept V1 with the new state; member-005's capacity doubled next, only its verdict
/// was computed again and combined with the stale V1 of the others: the outcome "stood" where
/// a cold pass moves it. Fixed: a kept decision holds the verdicts of its state
/// (`CachedDecision::held`: those it last stood on), and is persisted with its state only when
/// a restart restores those verdicts (`cache::STATE_UNKNOWN` otherwise).
#[test]
fn a_capacity_change_after_a_restart_decides_what_a_cold_pass_would() {
    let steps = [Step::Replicas { w: 23, replicas: 5 }, Step::Reload, Step::Capacity { c: 5, percent: 200 }];
    if let Err(difference) = run(&steps) {
        panic!("{difference}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 48, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(seed()), ..ProptestConfig::default() })]

    /// After every step of any sequence, the warm reconciler's placements and output are a
    /// fresh reconciler's.
    #[test]
    fn a_warm_pass_decides_what_a_cold_one_would(steps in proptest::collection::vec(step(), 1..9)) {
        if let Err(difference) = run(&steps) {
            return Err(TestCaseError::fail(difference));
        }
    }
}

/// What the warm reconciler leaves after each pass of `steps` (two quiet passes first): its
/// placements and every output file's digest, a line each; and how many workloads the second
/// quiet pass decided again (the first sees the first pass's placements as previous ones).
fn transcript(steps: &[Step]) -> (Vec<String>, usize) {
    let mut world = World::new();
    let mut lines = Vec::new();
    let mut decided = Vec::new();
    let mut note = |world: &World, what: String, trigger: Trigger| {
        let report = world.pass(&world.warm, &world.warm_out, trigger);
        decided.push(report.as_ref().map_or(0, |r| r.decided));
        lines.push(format!("{what}: {}", report.is_ok()));
        lines.extend(placements(&world.warm.store));
        let files = tree(&world.warm_out);
        lines.extend(files.iter().map(|(path, bytes)| format!("{path} {:016x}", crate::util::hash::fnv1a64(bytes))));
    };
    note(&world, "the first pass".into(), Trigger::Startup);
    for _ in 0..2 {
        world.now += 1_000;
        note(&world, "a quiet pass".into(), Trigger::Timer);
    }
    for (k, step) in steps.iter().enumerate() {
        let trigger = world.apply(step);
        note(&world, format!("step {k} ({step:?})"), trigger);
    }
    (lines, decided[2])
}

/// Every memo switched off ([`crate::util::memo::switch_off`], as `fedsched bench --ablate`
/// does), a warm sequence of passes — edits of templates and policies, an OverridePolicy, a
/// deletion and its return, capacity changes, polls, clock steps past the assumed-replica TTL
/// and the full check, SIGHUP, a reload — decides and renders exactly what it does with every
/// memo on: the same placements (policy, outcome, targets, files, history sequence) and the
/// same output, byte for byte, after every pass. The switch is the whole process's, so the
/// side with every memo off runs in a child process of this test binary (this test alone).
#[test]
fn every_memo_off_decides_and_renders_what_every_memo_on_does() {
    const CHILD: &str = "FEDSCHED_TEST_EVERY_MEMO_OFF";
    const BEGIN: &str = "--- transcript begins ---";
    const END: &str = "--- transcript ends ---";
    let steps = [
        Step::Replicas { w: 9, replicas: 7 },
        Step::Capacity { c: 2, percent: 50 },
        Step::Image { w: 3 },
        Step::Policy { w: 12, edit: PolicyEdit::Pinned(4) },
        Step::Poll,
        Step::Override { w: 21 },
        Step::Clock { ms: 400_000 },
        Step::Toggle { w: 30 },
        Step::Capacity { c: 5, percent: 200 },
        Step::Sighup,
        Step::Policy { w: 28, edit: PolicyEdit::Duplicated },
        Step::Toggle { w: 30 },
        Step::Reload,
        Step::Capacity { c: 2, percent: 200 },
        Step::Replicas { w: 19, replicas: 11 },
        Step::Clock { ms: 700_000 },
        Step::Policy { w: 12, edit: PolicyEdit::Original },
    ];
    if std::env::var_os(CHILD).is_some() {
        crate::util::memo::switch_off(&crate::util::memo::Name::ALL);
        let (lines, quiet) = transcript(&steps);
        // The switch works: the quiet pass decided every workload again.
        assert_eq!(quiet, WORKLOADS, "every memo off, the quiet pass decided {quiet} workloads again");
        println!("{BEGIN}\n{}\n{END}", lines.join("\n"));
        return;
    }
    let (on, quiet) = transcript(&steps);
    assert_eq!(quiet, 0, "every memo on, the quiet pass decided {quiet} workloads again");
    assert!(on.len() > 40 * 19, "a transcript of every pass: {} lines", on.len());
    let exe = std::env::current_exe().expect("the test binary");
    let name = "reconcile::warm_cold::every_memo_off_decides_and_renders_what_every_memo_on_does";
    let child = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("run the test binary with every memo off");
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(child.status.success(), "every memo off: {}\n{}", stdout, String::from_utf8_lossy(&child.stderr));
    let off: Vec<String> = stdout
        .split_once(BEGIN)
        .and_then(|(_, rest)| rest.split_once(END))
        .map(|(body, _)| body.trim_matches('\n').lines().map(str::to_string).collect())
        .unwrap_or_default();
    assert_eq!(off.len(), on.len(), "every memo off gave another number of lines");
    if let Some((a, b)) = on.iter().zip(&off).find(|(a, b)| a != b) {
        panic!("every memo on:  {a}\nevery memo off: {b}");
    }
}

/// A hand-over's history note is an event of its pass: recorded once, in that pass. A cold pass
/// (or a restart) reads the last record from the store, whose notes list the pass's events
/// after the decision's own, and compared them all with its own notes: it recorded the
/// unchanged decision again (warm history seq 42, cold 43). Workload 0 (Duplicated on
/// member-000, -002 and -004, its replica Ready on each) pinned to member-001 hands over from
/// the three (`HandOver::Moved`: nothing Ready would be left); the next passes record nothing
/// more, warm or cold.
#[test]
fn a_handovers_note_is_recorded_once_warm_or_cold() {
    let mut world = World::new();
    let owner = format!("ReplicaSet/{}/{}-5d8f9", repo::namespace_of(0), repo::workload_name(0));
    for c in [0, 2, 4] {
        let name = crate::testbed::simulate::fleet::cluster_name(c);
        let Some(data) = world.view.clusters.get_mut(&name).and_then(|s| s.last_good.as_mut()) else { continue };
        let data = Arc::make_mut(data);
        let pods = Arc::make_mut(&mut data.pods);
        pods.by_owner.insert(owner.clone(), 1);
        let ready = crate::model::OwnerState { pods: 1, bound: 1, running: 1, ready: 1, ..Default::default() };
        pods.owners.insert(owner.clone(), ready);
    }
    world.both(Trigger::Startup, "the first pass").expect("warm = cold");
    let steps = [
        Step::Policy { w: 0, edit: PolicyEdit::Pinned(1) },
        Step::Sighup,
        Step::Clock { ms: 65_000 },
        Step::Reload,
        Step::Poll,
    ];
    for (k, step) in steps.iter().enumerate() {
        let trigger = world.apply(step);
        if let Err(difference) = world.both(trigger, &format!("step {k} ({step:?})")) {
            panic!("{difference}");
        }
    }
    let key = world.warm.store.placements().expect("placements").remove(0).workload;
    assert_eq!(key.name, repo::workload_name(0));
    let notes: Vec<Vec<String>> =
        world.warm.store.history(&key).expect("history").into_iter().map(|h| h.notes).collect();
    assert_eq!(notes.len(), 2, "{notes:#?}");
    assert_eq!(notes[1].len(), 3, "a hand-over from each member: {notes:#?}");
    assert!(notes[1].iter().all(|n| n.starts_with("kept the previous files on member-00")), "{notes:#?}");
}
