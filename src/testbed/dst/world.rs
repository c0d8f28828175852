//! The world: a policy repository on disk, the members and their agents, one daemon (two
//! under `[ha]`) on a real store and a real output directory, a clock that only the world
//! moves, and the fault schedule. [`World::run`] goes from event to event — the next fault
//! action, pod start or Ready time, agent sync, poll round, pass — never sleeping; every
//! invariant is checked after every pass and at every instant something happened.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::check::{self, Break, PassCtx, Tree, TreeReader, Violation};
use super::daemon::{Instance, Passed, merge};
use super::faults::{Cut, Fault, Scheduled};
use super::member::Sim;
use super::spec::{Strategy, Workload, WorldSpec};
use crate::config::Config;

/// Steps the simulation may take at one instant before it is declared stuck (a normal instant
/// takes a handful: faults, promotions, agent syncs, a pass).
const STEPS_PER_INSTANT: u32 = 10_000;
use crate::reconcile::{Changed, Inputs, ReconcileReport};

/// Unix ms of the world's start (2027-01-15).
pub const T0: u64 = 1_800_000_000_000;
/// The daemon's debounce of policy changes.
const DEBOUNCE_MS: u64 = 1_000;

/// What the world does at one instant (a fault's start or end).
#[derive(Debug, Clone, PartialEq)]
enum Act {
    Cut { member: usize, cut: Cut, agent: bool },
    Uncut { member: usize, cut: Cut, agent: bool },
    NodeFault { member: usize, node: usize, on: bool },
    Capacity { member: usize, node: usize, percent: u32 },
    AddNode { member: usize },
    Crash { member: usize, workload: usize, on: bool },
    NeverReady { workload: usize, on: bool },
    Image { workload: usize },
    Scale { workload: usize, replicas: u32 },
    Policy { workload: usize, strategy: Strategy },
    Delete { workloads: Vec<usize>, on: bool },
    Rebalance { workloads: Vec<usize> },
    Taint { on: bool },
    Lag { member: usize, lag_ms: Option<u64> },
    Restart,
    Kill { step: u32, restart_ms: u64 },
    LeaderChange,
}

fn expand(s: &Scheduled, out: &mut Vec<(u64, Act)>) {
    let at = s.at_ms;
    match s.fault.clone() {
        Fault::Outage { member, cut, for_ms, agent } => {
            out.push((at, Act::Cut { member, cut, agent }));
            out.push((at + for_ms, Act::Uncut { member, cut, agent }));
        }
        Fault::Flap { member, down_ms, up_ms, times } => {
            let mut t = at;
            for _ in 0..times {
                out.push((t, Act::Cut { member, cut: Cut::Refused, agent: false }));
                out.push((t + down_ms, Act::Uncut { member, cut: Cut::Refused, agent: false }));
                t += down_ms + up_ms;
            }
        }
        Fault::NodeNotReady { member, node, for_ms } => {
            out.push((at, Act::NodeFault { member, node, on: true }));
            out.push((at + for_ms, Act::NodeFault { member, node, on: false }));
        }
        Fault::Capacity { member, node, percent } => out.push((at, Act::Capacity { member, node, percent })),
        Fault::AddNode { member } => out.push((at, Act::AddNode { member })),
        Fault::Crash { member, workload, for_ms } => {
            out.push((at, Act::Crash { member, workload, on: true }));
            out.push((at + for_ms, Act::Crash { member, workload, on: false }));
        }
        Fault::NeverReady { workload, for_ms } => {
            out.push((at, Act::NeverReady { workload, on: true }));
            out.push((at + for_ms, Act::NeverReady { workload, on: false }));
        }
        Fault::Image { workload } => out.push((at, Act::Image { workload })),
        Fault::Scale { workload, replicas } => out.push((at, Act::Scale { workload, replicas })),
        Fault::Policy { workload, strategy } => out.push((at, Act::Policy { workload, strategy })),
        Fault::Delete { workloads, for_ms } => {
            out.push((at, Act::Delete { workloads: workloads.clone(), on: true }));
            if let Some(ms) = for_ms {
                out.push((at + ms, Act::Delete { workloads, on: false }));
            }
        }
        Fault::Rebalance { workloads } => out.push((at, Act::Rebalance { workloads })),
        Fault::TaintPolicy { for_ms } => {
            out.push((at, Act::Taint { on: true }));
            out.push((at + for_ms, Act::Taint { on: false }));
        }
        Fault::Storm { members, gap_ms, for_ms, cut } => {
            for (k, member) in members.into_iter().enumerate() {
                let t = at + k as u64 * gap_ms;
                out.push((t, Act::Cut { member, cut, agent: false }));
                out.push((t + for_ms, Act::Uncut { member, cut, agent: false }));
            }
        }
        Fault::AgentLag { member, lag_ms, for_ms } => {
            out.push((at, Act::Lag { member, lag_ms: Some(lag_ms) }));
            out.push((at + for_ms, Act::Lag { member, lag_ms: None }));
        }
        Fault::Restart => out.push((at, Act::Restart)),
        Fault::Kill { step, restart_ms } => out.push((at, Act::Kill { step, restart_ms })),
        Fault::LeaderChange => out.push((at, Act::LeaderChange)),
    }
}

/// The repository as the operator keeps it.
struct Repo {
    workloads: Vec<Workload>,
    present: Vec<bool>,
    /// When each workload's policy was last edited (its moves are the operator's for a while).
    policy_edited: Vec<Option<u64>>,
    never_ready: Vec<bool>,
    rebalance: Option<(u32, Vec<usize>)>,
    taint: bool,
}

/// The run's trace: one line per thing that happened, and their digest.
#[derive(Default)]
pub struct Trace {
    pub digest: u64,
    pub lines: Option<Vec<String>>,
}

impl Trace {
    fn note(&mut self, now: u64, what: String) {
        let line = format!("{:>7}.{:03} {what}", now / 1000, now % 1000);
        self.digest = crate::util::hash::fnv1a64_more(self.digest ^ 0x9e37, line.as_bytes());
        if let Some(l) = &mut self.lines {
            l.push(line);
        }
    }
}

/// A repository's files as a load keeps them (path, content hash, text): [`Inputs::sources`].
type Sources = Vec<(PathBuf, u64, Arc<str>)>;

/// A world, ready to run.
pub struct World {
    spec: WorldSpec,
    cfg: Config,
    _root: tempfile::TempDir,
    policy: PathBuf,
    out: PathBuf,
    scratch: PathBuf,
    now: u64,
    members: Vec<Sim>,
    names: Vec<String>,
    repo: Repo,
    instances: Vec<Instance>,
    acts: Vec<(u64, Act)>,
    cursor: usize,
    next_tick: u64,
    policy_due: Option<u64>,
    tree: Tree,
    reader: TreeReader,
    unhealthy_since: BTreeMap<String, u64>,
    /// The storm rule as the daemon's settings give it, whether the last pass's view was in a
    /// storm, and when the last storm ended (invariant 8).
    storm_threshold: f64,
    in_storm: bool,
    storm_ended: Option<u64>,
    breaks: BTreeMap<(usize, usize), Break>,
    pub trace: Trace,
    /// Check warm = cold after every n-th completed pass (0: never).
    warm_cold_every: u64,
    /// The warm = cold audit's cold load of the last repository audited, with its files.
    cold: Option<(Arc<Sources>, Inputs)>,
    /// `FEDSCHED_DST_WATCH`: a workload whose disk, store placement and tasks the trace shows
    /// after every pass (a debugging aid; the trace's digest changes with it).
    watch: Option<String>,
    /// After a kill mid-publish: the output as the next start's recovery completes it.
    completed: Option<Tree>,
    scratch_seq: u64,
    pub passes: u64,
    /// Invariant 9's record of the rollouts (seeds of [`super::spec::ROLLOUT_SEEDS`]).
    rollouts: check::RolloutWatch,
}

/// A scratch directory on a memory file system when there is one (the world's publishes and
/// store flushes sync their file system).
fn scratch_root() -> std::io::Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::Builder::new().prefix("fedsched-dst-").tempdir_in(shm)
    {
        return Ok(d);
    }
    tempfile::Builder::new().prefix("fedsched-dst-").tempdir()
}

fn write(path: &Path, text: &str) -> Result<(), Violation> {
    let fail = |e: std::io::Error| Violation { at_ms: 0, invariant: 0, message: format!("{}: {e}", path.display()) };
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).map_err(fail)?;
    }
    std::fs::write(path, text).map_err(fail)
}

impl World {
    /// The world of `spec` with the faults `schedule` (already filtered).
    pub fn new(spec: WorldSpec, schedule: &[Scheduled], trace: bool, warm_cold_every: u64) -> Result<World, Violation> {
        let root =
            scratch_root().map_err(|e| Violation { at_ms: 0, invariant: 0, message: format!("scratch: {e}") })?;
        let (policy, out, scratch) =
            (root.path().join("policies"), root.path().join("out"), root.path().join("scratch"));
        let config_path = root.path().join("fedsched.toml");
        let cfg = Config::parse(&spec.settings.config_toml(), &config_path).map_err(|e| Violation {
            at_ms: 0,
            invariant: 0,
            message: format!("config: {e}"),
        })?;
        let mut acts = Vec::new();
        for s in schedule {
            expand(s, &mut acts);
        }
        acts.sort_by_key(|(t, _)| *t);
        let n_w = spec.workloads.len();
        let mut instances = vec![Instance::new("a", root.path().join("state-a"), spec.settings.ha, true)];
        if spec.settings.ha {
            instances.push(Instance::new("b", root.path().join("state-b"), true, false));
        }
        let mut world = World {
            members: spec.members.iter().map(Sim::new).collect(),
            names: spec.members.iter().map(|m| m.name.clone()).collect(),
            repo: Repo {
                workloads: spec.workloads.clone(),
                present: vec![true; n_w],
                policy_edited: vec![None; n_w],
                never_ready: vec![false; n_w],
                rebalance: None,
                taint: false,
            },
            spec,
            cfg,
            policy,
            out,
            scratch,
            _root: root,
            now: 0,
            instances,
            acts,
            cursor: 0,
            next_tick: 0,
            policy_due: None,
            tree: Tree::default(),
            reader: TreeReader::default(),
            unhealthy_since: BTreeMap::new(),
            storm_threshold: 0.0,
            in_storm: false,
            storm_ended: None,
            breaks: BTreeMap::new(),
            trace: Trace { digest: crate::util::hash::FNV1A64_START, lines: trace.then(Vec::new) },
            warm_cold_every,
            cold: None,
            watch: std::env::var("FEDSCHED_DST_WATCH").ok().filter(|w| !w.is_empty()),
            completed: None,
            scratch_seq: 0,
            passes: 0,
            rollouts: check::RolloutWatch::default(),
        };
        for w in &world.repo.workloads {
            world.rollouts.created(&w.name, w.image);
        }
        world.storm_threshold = crate::reconcile::Settings::from_config(&world.cfg, false)
            .map_err(|e| Violation { at_ms: 0, invariant: 0, message: format!("settings: {e}") })?
            .stability
            .unhealthy_threshold;
        world.write_repo()?;
        for m in &mut world.members {
            m.changed();
        }
        let (cfg, out) = (world.cfg.clone(), world.out.clone());
        for i in &mut world.instances {
            i.start(&cfg, &out).map_err(|e| Violation { at_ms: 0, invariant: 0, message: format!("start: {e:#}") })?;
        }
        Ok(world)
    }

    fn violation(&self, invariant: u8, message: String) -> Violation {
        Violation { at_ms: self.now, invariant, message }
    }

    // ---- the repository ---------------------------------------------------------------

    fn write_repo(&mut self) -> Result<(), Violation> {
        for m in &self.spec.members {
            let path = self.policy.join(format!("clusters/{}.yaml", m.name));
            write(&path, &crate::render::yaml::to_yaml(&m.cluster))?;
        }
        for w in 0..self.repo.workloads.len() {
            self.write_workload(w)?;
        }
        if let Some(r) = &self.spec.rollout {
            for ns in ["shop", "team-a"] {
                write(
                    &self.policy.join(format!("policies/rollout-{ns}.yaml")),
                    &r.policy_yaml(ns, &self.spec.members),
                )?;
            }
        }
        Ok(())
    }

    fn template_path(w: &Workload) -> String {
        format!("apps/{}-{}.yaml", w.namespace, w.name)
    }

    fn policy_path(w: &Workload) -> String {
        format!("policies/{}-{}.yaml", w.namespace, w.name)
    }

    /// Writes workload `i`'s template and policy as the repository has them now; returns the
    /// paths written or removed.
    fn write_workload(&mut self, i: usize) -> Result<Vec<PathBuf>, Violation> {
        let w = &self.repo.workloads[i];
        let (t, p) = (Self::template_path(w), Self::policy_path(w));
        let template = self.policy.join(&t);
        if self.repo.present[i] {
            write(&template, &w.template_yaml())?;
        } else {
            let _ = std::fs::remove_file(&template);
        }
        write(&self.policy.join(&p), &w.policy_yaml(&self.spec.members))?;
        Ok(vec![PathBuf::from(t), PathBuf::from(p)])
    }

    /// The watch saw `paths` change: every running instance reads them at its next pass, and a
    /// pass follows after the debounce.
    fn edited(&mut self, paths: Vec<PathBuf>) {
        for i in &mut self.instances {
            let seen = std::mem::replace(&mut i.changes, Changed::Nothing);
            i.changes = merge(seen, Changed::Files(paths.clone()));
        }
        self.policy_due = Some(self.policy_due.unwrap_or(self.now + DEBOUNCE_MS));
    }

    fn rebalancer_yaml(generation: u32, ws: &[usize], all: &[Workload]) -> String {
        let items: String = ws
            .iter()
            .filter_map(|i| all.get(*i))
            .map(|w| {
                format!("  - {{apiVersion: apps/v1, kind: Deployment, name: {}, namespace: {}}}\n", w.name, w.namespace)
            })
            .collect();
        format!(
            "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {{name: dst, generation: {generation}}}\nspec:\n  workloads:\n{items}"
        )
    }

    const TAINT_POLICY: &'static str = "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata: {name: lost}\nspec:\n\
         \x20 addOnConditions: [{conditionType: Ready, operator: In, statusValues: [\"Unknown\", \"False\"]}]\n\
         \x20 removeOnConditions: [{conditionType: Ready, operator: In, statusValues: [\"True\"]}]\n\
         \x20 taints: [{key: dst.example/lost, effect: NoExecute}]\n";

    // ---- faults -----------------------------------------------------------------------

    fn act(&mut self, act: Act) -> Result<(), Violation> {
        self.trace.note(self.now, format!("{act:?}"));
        let now = self.abs();
        match act {
            Act::Cut { member, cut, agent } => {
                let m = &mut self.members[member];
                m.cuts += 1;
                m.cut = cut;
                m.agent_cuts += u32::from(agent);
                if cut == Cut::Dead {
                    m.set_dead(true, now);
                }
            }
            Act::Uncut { member, cut, agent } => {
                let m = &mut self.members[member];
                m.cuts = m.cuts.saturating_sub(1);
                if agent {
                    m.agent_cuts = m.agent_cuts.saturating_sub(1);
                }
                if cut == Cut::Dead {
                    m.set_dead(false, now);
                }
            }
            Act::NodeFault { member, node, on } => self.members[member].node_fault(node, on, now),
            Act::Capacity { member, node, percent } => self.members[member].capacity(node, percent, now),
            Act::AddNode { member } => self.members[member].add_node(now),
            Act::Crash { member, workload, on } => {
                let owner = self.repo.workloads[workload].pod_owner();
                self.members[member].set_crashing(owner, on, now);
            }
            Act::Lag { member, lag_ms } => {
                let m = &mut self.members[member];
                m.lag_ms = lag_ms.unwrap_or(m.base_lag_ms);
            }
            Act::Restart => {
                let (cfg, out) = (self.cfg.clone(), self.out.clone());
                for i in &mut self.instances {
                    if i.reconciler.is_some() {
                        i.stop(true);
                        i.start(&cfg, &out).map_err(|e| Violation {
                            at_ms: self.now,
                            invariant: 0,
                            message: format!("restart: {e:#}"),
                        })?;
                    }
                }
                self.start_rounds();
            }
            Act::Kill { step, restart_ms } => {
                let leader = self.leader();
                let i = &mut self.instances[leader];
                i.kill.arm(step as usize);
                i.restart_after_ms = restart_ms;
            }
            Act::LeaderChange => self.leader_change()?,
            repo => self.repo_act(repo)?,
        }
        Ok(())
    }

    fn repo_act(&mut self, act: Act) -> Result<(), Violation> {
        let mut paths = Vec::new();
        match act {
            Act::NeverReady { workload, on } => {
                self.repo.never_ready[workload] = on;
                self.repo.workloads[workload].image += 1;
                let owner = self.repo.workloads[workload].pod_owner();
                let now = self.abs();
                for m in &mut self.members {
                    m.set_crashing(owner.clone(), on, now);
                }
                paths = self.write_workload(workload)?;
            }
            Act::Image { workload } => {
                self.repo.workloads[workload].image += 1;
                paths = self.write_workload(workload)?;
            }
            Act::Scale { workload, replicas } => {
                self.repo.workloads[workload].replicas = replicas;
                paths = self.write_workload(workload)?;
            }
            Act::Policy { workload, strategy } => {
                self.repo.workloads[workload].strategy = strategy;
                self.repo.policy_edited[workload] = Some(self.now);
                paths = self.write_workload(workload)?;
            }
            Act::Delete { workloads, on } => {
                for w in workloads {
                    self.repo.present[w] = !on;
                    if !on {
                        let w = &self.repo.workloads[w];
                        self.rollouts.created(&w.name, w.image);
                    }
                    paths.extend(self.write_workload(w)?);
                }
            }
            Act::Rebalance { workloads } => {
                let generation = self.repo.rebalance.as_ref().map_or(1, |(g, _)| g + 1);
                let text = Self::rebalancer_yaml(generation, &workloads, &self.repo.workloads);
                write(&self.policy.join("rebalance.yaml"), &text)?;
                self.repo.rebalance = Some((generation, workloads));
                paths.push(PathBuf::from("rebalance.yaml"));
            }
            Act::Taint { on } => {
                let path = self.policy.join("taints.yaml");
                if on {
                    write(&path, Self::TAINT_POLICY)?;
                } else {
                    let _ = std::fs::remove_file(&path);
                }
                self.repo.taint = on;
                paths.push(PathBuf::from("taints.yaml"));
            }
            _ => {}
        }
        self.edited(paths);
        Ok(())
    }

    fn leader(&self) -> usize {
        self.instances.iter().position(|i| i.leader.load(std::sync::atomic::Ordering::SeqCst)).unwrap_or(0)
    }

    /// `[ha]`: the leader loses its lease; the standby (when running) takes over and passes.
    fn leader_change(&mut self) -> Result<(), Violation> {
        if self.instances.len() < 2 {
            return Ok(());
        }
        let old = self.leader();
        let new = 1 - old;
        if self.instances[new].reconciler.is_none() {
            return Ok(());
        }
        self.instances[old].lose_lease();
        let (cfg, out, now) = (self.cfg.clone(), self.out.clone(), self.abs());
        self.instances[new].take_over(&cfg, &out, now).map_err(|e| self.violation(0, format!("takeover: {e:#}")))?;
        self.tree = self.reader.read(&self.out);
        self.pass(new, crate::publish::Trigger::Takeover)
    }

    /// Unix ms now.
    fn abs(&self) -> u64 {
        T0 + self.now
    }
}

/// What the world reports when it has run.
pub struct Ran {
    pub violation: Option<Violation>,
    pub digest: u64,
    pub passes: u64,
    pub trace: Option<Vec<String>>,
}

impl World {
    /// Runs the world to its end (or its first violation).
    pub fn run(mut self) -> Ran {
        let result = self.run_loop().and_then(|()| self.final_checks());
        let violation = result.err();
        if let Some(v) = &violation {
            self.trace.note(v.at_ms, format!("VIOLATION {v}"));
        }
        Ran { violation, digest: self.trace.digest, passes: self.passes, trace: self.trace.lines.take() }
    }

    fn run_loop(&mut self) -> Result<(), Violation> {
        // Steps taken at the current instant: an event that stays due without being handled
        // would hold the clock forever; the simulation reports it instead of hanging.
        let mut at_now = 0u32;
        loop {
            let Some(next) = self.next_event() else { return Ok(()) };
            if next > self.spec.duration_ms {
                return Ok(());
            }
            at_now = if next == self.now { at_now + 1 } else { 0 };
            if at_now > STEPS_PER_INSTANT {
                return Err(self.violation(0, format!("the simulation is stuck: {at_now} steps at one instant")));
            }
            self.now = next;
            while self.cursor < self.acts.len() && self.acts[self.cursor].0 <= self.now {
                let act = self.acts[self.cursor].1.clone();
                self.cursor += 1;
                self.act(act)?;
            }
            let now = self.abs();
            for m in &mut self.members {
                if m.next_promotion().is_some_and(|t| t <= now) {
                    m.promote(now);
                }
            }
            self.update_breaks();
            for m in 0..self.members.len() {
                if self.members[m].agent_cuts == 0 && self.members[m].due.is_some_and(|t| t <= self.now) {
                    self.agent_sync(m)?;
                }
            }
            for i in 0..self.instances.len() {
                if self.instances[i].restart_at.is_some_and(|t| t <= self.now) && self.instances[i].reconciler.is_none()
                {
                    let (cfg, out) = (self.cfg.clone(), self.out.clone());
                    self.instances[i]
                        .start(&cfg, &out)
                        .map_err(|e| self.violation(0, format!("restart after the kill: {e:#}")))?;
                    self.trace.note(self.now, format!("{} started again", self.instances[i].name));
                    self.start_round(i);
                }
                if self.instances[i].round.as_ref().is_some_and(|(t, _)| *t <= self.now) {
                    self.instances[i].round_returned();
                    let trigger = match self.instances[i].passes_since_start {
                        0 => crate::publish::Trigger::Startup,
                        _ => crate::publish::Trigger::Timer,
                    };
                    self.pass(i, trigger)?;
                }
            }
            if self.policy_due.is_some_and(|t| t <= self.now) {
                self.policy_due = None;
                for i in 0..self.instances.len() {
                    if self.instances[i].passes_since_start > 0 {
                        self.pass(i, crate::publish::Trigger::PolicyChange)?;
                    }
                }
            }
            if self.next_tick <= self.now {
                self.next_tick = self.now + self.spec.settings.interval_ms;
                self.start_rounds();
            }
        }
    }

    fn next_event(&self) -> Option<u64> {
        let mut next = vec![self.next_tick];
        next.extend(self.acts.get(self.cursor).map(|a| a.0));
        next.extend(self.policy_due);
        for i in &self.instances {
            next.extend(i.round.as_ref().map(|r| r.0));
            next.extend(i.restart_at.filter(|_| i.reconciler.is_none()));
        }
        for m in &self.members {
            if m.agent_cuts == 0 {
                next.extend(m.due);
            }
            next.extend(m.next_promotion().map(|t| t.saturating_sub(T0)));
        }
        next.into_iter().min().map(|t| t.max(self.now))
    }

    fn start_rounds(&mut self) {
        for i in 0..self.instances.len() {
            self.start_round(i);
        }
    }

    /// A poll round of instance `i`: every member answers now; the round returns now, or after
    /// the poll timeout when a member hangs.
    fn start_round(&mut self, i: usize) {
        if self.instances[i].reconciler.is_none() || self.instances[i].round.is_some() {
            return;
        }
        let now = self.abs();
        let timeout = Duration::from_millis(self.spec.settings.poll_timeout_ms);
        let mut hung = false;
        let mut results = Vec::with_capacity(self.members.len());
        for m in &mut self.members {
            hung |= m.hangs();
            results.push((m.fleet.name.clone(), m.poll(now, timeout)));
        }
        let due = self.now + if hung { self.spec.settings.poll_timeout_ms } else { 0 };
        self.instances[i].round = Some((due, results));
    }
}

impl World {
    /// A pass of instance `i`, and every check that follows it.
    fn pass(&mut self, i: usize, trigger: crate::publish::Trigger) -> Result<(), Violation> {
        let before = self.tree.clone();
        let now = self.abs();
        let passed = self.instances[i]
            .pass(&self.policy, &self.out, trigger, now, self.now)
            .map_err(|m| self.violation(0, format!("{}: {m}", self.instances[i].name)))?;
        match passed {
            Passed::Down | Passed::Shadow | Passed::Held => Ok(()),
            Passed::Killed => {
                // The killed pass saw its view (its stability state may be stored before the
                // publish step the kill hit): a member it saw unhealthy counts from then.
                self.observed(i);
                let crashed = self.reader.read(&self.out);
                let recovered = self.recovered()?;
                check::consistent(&crashed, Some(&before), Some(&recovered))
                    .map_err(|m| self.violation(7, format!("killed mid-publish: {m}")))?;
                // The next pass completes the interrupted publish first: what it changes is
                // judged from the completed state.
                self.completed = Some(recovered);
                self.trace.note(self.now, format!("{} killed in its {trigger} pass", self.instances[i].name));
                self.rollouts_hold(&crashed)?;
                self.published(i, &before, crashed, &[]);
                Ok(())
            }
            Passed::Done(report, inputs) => {
                self.passes += 1;
                let after = self.reader.read(&self.out);
                check::consistent(&after, None, None).map_err(|m| self.violation(7, m))?;
                self.observed(i);
                self.trace.note(
                    self.now,
                    format!(
                        "{} {trigger}: {} written, {} removed, held {:?}, events {:?}, tree {:016x}",
                        self.instances[i].name,
                        report.files_written,
                        report.files_removed,
                        report.held_clusters.iter().map(|h| h.cluster.clone()).collect::<Vec<_>>(),
                        report
                            .stability
                            .events
                            .iter()
                            .map(|e| match &e.workload {
                                Some(w) => format!("{}: {}", w.name, e.text),
                                None => e.text.clone(),
                            })
                            .collect::<Vec<_>>(),
                        after.digest()
                    ),
                );
                let completed = self.completed.take();
                self.check_pass(i, (completed.as_ref().unwrap_or(&before), &after), &report, &inputs)?;
                self.rollouts_hold(&after)?;
                let directly: Vec<(String, String)> = report
                    .stability
                    .events
                    .iter()
                    .filter(|e| e.kind == crate::schedule::stability::EventKind::Purge && e.text.contains("(Directly"))
                    .filter_map(|e| Some((e.workload.as_ref()?.name.to_string(), e.cluster.clone())))
                    .collect();
                self.published(i, &before, after, &directly);
                self.warm_equals_cold(i, &inputs)?;
                Ok(())
            }
        }
    }

    /// The output after a publish of instance `i`: agents of the clusters that changed are due,
    /// and the removals of replicas start being watched (invariant 1, judged by what the pass
    /// observed: [`Break`]).
    fn published(&mut self, i: usize, before: &Tree, after: Tree, directly: &[(String, String)]) {
        let now = self.now;
        let fresh = (self.abs(), self.spec.settings.interval_ms + self.spec.settings.poll_timeout_ms);
        for (mi, m) in self.members.iter_mut().enumerate() {
            let name = &self.names[mi];
            if before.cluster_digest(name) != after.cluster_digest(name) {
                m.due = Some(m.due.unwrap_or(now + m.lag_ms).min(now + m.lag_ms));
            }
        }
        for (wi, w) in self.repo.workloads.iter().enumerate() {
            let (b, a) = (before.replicas(w, &self.names), after.replicas(w, &self.names));
            for (mi, name) in self.names.iter().enumerate() {
                let (rb, ra) = (b.get(name).copied().unwrap_or(0), a.get(name).copied().unwrap_or(0));
                if ra < rb {
                    let elsewhere = self.ready_total(&w.pod_owner())
                        > self.members[mi].ready.get(&w.pod_owner()).copied().unwrap_or(0);
                    let directly = directly.iter().any(|(w2, c)| *w2 == w.name && c == name);
                    let owner = w.pod_owner();
                    let view = &self.instances[i].view;
                    let b = Break::at_publish(view, fresh, (&owner, name), &a, elsewhere, directly);
                    self.breaks.insert((mi, wi), b);
                } else if ra > rb {
                    self.breaks.remove(&(mi, wi));
                }
            }
        }
        self.tree = after;
    }

    /// Invariant 9 on an output `tree` (a world with a rollout).
    fn rollouts_hold(&mut self, tree: &Tree) -> Result<(), Violation> {
        let Some(rollout) = &self.spec.rollout else { return Ok(()) };
        let workloads: Vec<(Workload, bool)> =
            self.repo.workloads.iter().cloned().zip(self.repo.present.iter().copied()).collect();
        self.rollouts.check(rollout, self.now, &workloads, &self.names, tree).map_err(|m| Violation {
            at_ms: self.now,
            invariant: 9,
            message: m,
        })
    }

    fn ready_total(&self, owner: &str) -> usize {
        self.members.iter().map(|m| m.ready.get(owner).copied().unwrap_or(0)).sum()
    }

    /// Every instant: a removal whose workload now has Ready replicas elsewhere is made
    /// before it breaks.
    fn update_breaks(&mut self) {
        let keys: Vec<(usize, usize)> =
            self.breaks.iter().filter(|(_, b)| !b.ready_elsewhere).map(|(k, _)| *k).collect();
        for (mi, wi) in keys {
            let owner = self.repo.workloads[wi].pod_owner();
            let here = self.members[mi].ready.get(&owner).copied().unwrap_or(0);
            if self.ready_total(&owner) > here
                && let Some(b) = self.breaks.get_mut(&(mi, wi))
            {
                b.ready_elsewhere = true;
            }
        }
    }

    /// The state a recovery of the output directory completes (on a copy).
    fn recovered(&mut self) -> Result<Tree, Violation> {
        self.scratch_seq += 1;
        let copy = self.scratch.join(format!("recover-{}", self.scratch_seq));
        copy_tree(&self.out, &copy).map_err(|e| self.violation(0, format!("copy of the output: {e}")))?;
        crate::publish::recover(&copy).map_err(|e| self.violation(7, format!("the recovery fails: {e}")))?;
        let tree = TreeReader::default().read(&copy);
        let _ = std::fs::remove_dir_all(&copy);
        Ok(tree)
    }

    /// The members' health as the pass of instance `i` saw it (invariant 8's timelines).
    fn observed(&mut self, i: usize) {
        let now = self.now;
        let storm = check::storm_in(&self.instances[i].view, self.storm_threshold);
        if self.in_storm && !storm {
            self.storm_ended = Some(now);
        }
        self.in_storm = storm;
        for (name, status) in &self.instances[i].view.clusters {
            match status.error {
                Some(_) => {
                    self.unhealthy_since.entry(name.clone()).or_insert(now);
                }
                None => {
                    self.unhealthy_since.remove(name);
                }
            }
        }
    }

    fn check_pass(
        &mut self,
        i: usize,
        (before, after): (&Tree, &Tree),
        report: &ReconcileReport,
        inputs: &Inputs,
    ) -> Result<(), Violation> {
        let Some(r) = self.instances[i].reconciler.clone() else { return Ok(()) };
        if let Some(watch) = &self.watch {
            for w in self.repo.workloads.iter().filter(|w| w.name == *watch) {
                let tasks = r.store.stability().ok().and_then(|s| s.workloads.get(&w.key()).map(|s| s.tasks.clone()));
                let line = format!(
                    "watch {}: disk {:?}, store places {:?}, tasks {:?}",
                    w.name,
                    after.replicas(w, &self.names),
                    r.store.placement(&w.key()).ok().flatten().map(|p| (p.targets, p.result.outcome)),
                    tasks.unwrap_or_default()
                );
                self.trace.note(self.now, line);
            }
        }
        let workloads: Vec<(Workload, bool)> =
            self.repo.workloads.iter().cloned().zip(self.repo.present.iter().copied()).collect();
        let ctx = PassCtx {
            now: self.now,
            settings: &self.spec.settings,
            workloads: &workloads,
            clusters: &self.names,
            before,
            after,
            view: &self.instances[i].view,
            snapshots: &inputs.snapshots,
            store: &r.store,
            report,
            unhealthy_since: &self.unhealthy_since,
            storm_threshold: self.storm_threshold,
            storm_ended: self.storm_ended,
        };
        check::after_pass(&ctx)
    }

    /// Invariant 5 after a pass of instance `i`.
    fn warm_equals_cold(&mut self, i: usize, inputs: &Arc<Inputs>) -> Result<(), Violation> {
        if self.warm_cold_every == 0 || !self.passes.is_multiple_of(self.warm_cold_every) {
            return Ok(());
        }
        let Some(r) = self.instances[i].reconciler.clone() else { return Ok(()) };
        let settings = crate::reconcile::Settings::from_config(&self.cfg, false)
            .map_err(|e| self.violation(0, format!("settings: {e}")))?;
        // The cold side's load, made afresh once per distinct repository content (the same
        // files, byte for byte): a pure function of the files and the settings.
        let cold = match &self.cold {
            Some((files, loaded)) if **files == *inputs.sources => loaded.clone(),
            _ => {
                let loaded = crate::reconcile::audit::cold_inputs(inputs, &settings)
                    .map_err(|e| self.violation(0, format!("the audit's cold load failed: {e}")))?;
                self.cold = Some((Arc::clone(&inputs.sources), loaded.clone()));
                loaded
            }
        };
        let audit = r
            .audit_loaded(settings, inputs, cold, &self.instances[i].view, &self.out, self.abs())
            .map_err(|e| self.violation(0, format!("the audit failed: {e}")))?;
        if let Some(first) = audit.differences.first() {
            let more = audit.differences.len() - 1;
            return Err(self.violation(5, format!("warm and cold differ: {first} (and {more} more)")));
        }
        Ok(())
    }

    /// The agent of member `m` applies its directory as it is now.
    fn agent_sync(&mut self, m: usize) -> Result<(), Violation> {
        let name = self.names[m].clone();
        let digest = self.tree.cluster_digest(&name);
        self.members[m].due = None;
        if self.members[m].applied == Some(digest) {
            return Ok(());
        }
        let desired = crate::testbed::simulate::apply::desired(&self.out.join(&name))
            .map_err(|e| self.violation(7, format!("the agent of {name} cannot read its directory: {e}")))?;
        let before: BTreeMap<String, usize> = self.members[m].ready.clone();
        let now = self.abs();
        let report = self.members[m].apply(Arc::new(desired), digest, now);
        self.trace.note(
            self.now,
            format!(
                "agent {name}: +{} -{} bound {} unschedulable {}",
                report.created, report.deleted, report.bound, report.unschedulable
            ),
        );
        for (owner, removed) in &report.ready_removed {
            let Some(wi) = self.repo.workloads.iter().position(|w| w.pod_owner() == *owner) else { continue };
            let here_before = before.get(owner).copied().unwrap_or(0);
            let total_after = self.ready_total(owner);
            let total_before = total_after - self.members[m].ready.get(owner).copied().unwrap_or(0) + here_before;
            if Break::violated_by(self.breaks.get(&(m, wi)), total_before, total_after) && !self.exempt(wi) {
                let w = &self.repo.workloads[wi];
                return Err(self.violation(1, format!(
                    "{}: the agent of {name} removed {removed} Ready replicas, its last ones: the pass that published the removal observed none Ready on the members it keeps, and none was Ready elsewhere since",
                    w.key()
                )));
            }
        }
        self.breaks.retain(|(mi, _), _| *mi != m);
        Ok(())
    }

    /// The operator's own moves: a deleted template, a scale to 0, a policy edit settling.
    fn exempt(&self, wi: usize) -> bool {
        let s = &self.spec.settings;
        let settle = 2 * s.interval_ms + 120_000 + 90_000 + 30_000;
        !self.repo.present[wi]
            || self.repo.workloads[wi].replicas == 0
            || self.repo.policy_edited[wi].is_some_and(|t| self.now < t + settle)
    }

    /// At the end: every recorded decision replays identical (invariant 6).
    fn final_checks(&mut self) -> Result<(), Violation> {
        let settings = || crate::reconcile::Settings::from_config(&self.cfg, false).unwrap_or_default();
        for i in &self.instances {
            let Some(r) = &i.reconciler else { continue };
            let store = &r.store;
            let mut records = Vec::new();
            let keys = store.workloads_with_history().map_err(|e| self.violation(0, format!("history: {e}")))?;
            for k in keys {
                records.extend(store.history(&k).map_err(|e| self.violation(0, format!("history: {e}")))?);
            }
            records.sort_by_key(|r| r.seq);
            let doc = crate::views::replay::document(store, &records, &settings)
                .map_err(|e| self.violation(0, format!("replay: {e}")))?;
            check::replays_identical(&doc, &records).map_err(|m| self.violation(6, m))?;
            self.trace.note(self.now, format!("{}: {} records replayed", i.name, doc["replayed"]));
        }
        Ok(())
    }
}

/// Copies a directory tree (regular files and directories).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let kind = e.file_type()?;
        let dest = to.join(e.file_name());
        if kind.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else if kind.is_file() {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}
