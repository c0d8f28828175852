//! The invariants (issue 46), checked by the world after every pass and at every simulated
//! instant, on what a GitOps tool and an operator can see — the output directory, the pods
//! of the members, the store's placements, history and engine state — not on how fedsched
//! got there:
//!
//! 1. availability floor: an agent applying fedsched's output never takes a workload that has
//!    Ready replicas to none, unless the removal was made before it broke, by what fedsched
//!    observed ([`Break`]): the pass that published it saw, in a fresh poll, Ready replicas on
//!    a member the output keeps (a member's pods that stop being Ready between the poll and the
//!    publish are a race no pass can see, Karmada's too), or a replacement was Ready somewhere
//!    else after the removal was published; a purge for an elapsed grace period never happens
//!    while nothing is observed Ready elsewhere. Operator edits are the operator's moves: a
//!    deleted template, a scale to 0 and the time a policy edit takes to settle are exempt.
//! 2. no double run beyond the grace period: a Divided workload's published replicas (less
//!    those its members' polls saw Pending Unschedulable: they run nowhere) exceed its
//!    replicas only while it has a graceful eviction task in its grace window (plus a
//!    minute and a pass: the rate limit), of purge mode `Never`, or with nothing observed
//!    Ready elsewhere, or while the storm guard holds, or while the mass-deletion guard holds
//!    its change whole (`held_moves`: its files stay as last published — a scale-down held
//!    on a held cluster — which invariant 3 checks).
//! 3. whole or not at all, and the store says what was published: after a pass, every
//!    workload's files on disk are exactly those of its placement in the store (its targets,
//!    with their replicas) and the files of its graceful eviction tasks — also while the
//!    mass-deletion guard holds its change (then none of its files changed either).
//! 4. a member seen NotReady or Unreachable by a pass gets no new replicas in that pass.
//! 5. warm equals cold ([`crate::reconcile::audit::compare`]).
//! 6. every recorded decision replays `identical` ([`crate::views::replay::document`]); only a
//!    takeover's adoption records (no decision of this instance: [`crate::reconcile::is_adoption`])
//!    may be not replayable ([`replays_identical`]).
//! 7. every cluster directory is consistent at every instant, across kill -9: every file its
//!    kustomization lists exists, and each file is as before the publish or as after it (the
//!    state a recovery completes).
//! 8. no flap, truthful causes: a workload is evicted from a member for its health only once
//!    the passes have seen the member unhealthy for the workload's toleration; never in a pass
//!    whose view has more than `unhealthy_threshold` of the members unhealthy (the storm rule,
//!    judged at each pass: members lost a few seconds apart are a storm from the pass they are
//!    a majority), and after a storm only a toleration after its end.
//! 9. progressive rollouts (seeds of [`super::spec::ROLLOUT_SEEDS`], [`RolloutWatch`]): no
//!    cluster outside a stage that passed its gates runs the new version — every gate takes at
//!    least `minSuccessTime` (no approvals in the simulation), so a stage `k` first holds a
//!    version in the output at least `(k - j)` × `minSuccessTime` after the version was first
//!    published, to stage `j`; checked after every pass, a killed one's partial publish too,
//!    and across restarts and `[ha]` takeovers (a version a template has when it is created or
//!    restored goes everywhere at once: not a rollout).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::spec::{Settings, Workload};
use crate::members::live::LiveView;
use crate::model::ClusterSnapshot;
use crate::reconcile::ReconcileReport;
use crate::schedule::stability::{EventKind, Purge, Reason, StabilityState};
use crate::store::Store;

/// An invariant that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Simulated time (ms since the world's start).
    pub at_ms: u64,
    /// The invariant's number (0: the world itself could not go on: a pass failed).
    pub invariant: u8,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invariant {} at t={}.{:03}s: {}", self.invariant, self.at_ms / 1000, self.at_ms % 1000, self.message)
    }
}

/// One file of the output directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    pub hash: u64,
    /// `spec.replicas` of a Deployment.
    pub replicas: Option<i64>,
    /// The image tag of a Deployment's container (`registry.example/<name>:<tag>`).
    pub image: Option<u32>,
    /// The paths a `kustomization.yaml` lists.
    pub listed: Option<Vec<String>>,
}

/// The output directory's cluster directories (not `.fedsched/`): path → file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    pub files: BTreeMap<String, FileInfo>,
}

impl Tree {
    /// A digest of one cluster directory.
    pub fn cluster_digest(&self, cluster: &str) -> u64 {
        let prefix = format!("{cluster}/");
        let mut h = crate::util::hash::FNV1A64_START;
        for (p, f) in self.files.range(prefix.clone()..).take_while(|(p, _)| p.starts_with(&prefix)) {
            h = crate::util::hash::fnv1a64_more(h, p.as_bytes());
            h = crate::util::hash::fnv1a64_more(h, &f.hash.to_le_bytes());
        }
        h
    }

    /// A digest of everything.
    pub fn digest(&self) -> u64 {
        let mut h = crate::util::hash::FNV1A64_START;
        for (p, f) in &self.files {
            h = crate::util::hash::fnv1a64_more(h, p.as_bytes());
            h = crate::util::hash::fnv1a64_more(h, &f.hash.to_le_bytes());
        }
        h
    }

    /// Replicas of `w` per cluster (a file without replicas counts 1).
    pub fn replicas(&self, w: &Workload, clusters: &[String]) -> BTreeMap<String, i64> {
        let path = crate::render::object_path(&w.key());
        clusters
            .iter()
            .filter_map(|c| self.files.get(&format!("{c}/{path}")).map(|f| (c.clone(), f.replicas.unwrap_or(1))))
            .collect()
    }
}

/// Reads trees, reading again only the files whose inode, size or modification time changed.
#[derive(Default)]
pub struct TreeReader {
    known: HashMap<String, (u64, u64, i64, i64, FileInfo)>,
}

fn replicas_of(text: &str) -> Option<i64> {
    let at = text.find("\nspec:\n  replicas: ")?;
    let rest = &text[at + "\nspec:\n  replicas: ".len()..];
    rest.split('\n').next()?.trim().parse().ok()
}

fn image_of(text: &str) -> Option<u32> {
    let at = text.find("image: registry.example/")?;
    let line = text[at..].split('\n').next()?;
    line.rsplit(':').next()?.trim().trim_matches('"').parse().ok()
}

fn listed_of(text: &str) -> Vec<String> {
    text.lines().filter_map(|l| l.strip_prefix("- ")).map(str::to_string).collect()
}

impl TreeReader {
    /// The tree of `out` now.
    pub fn read(&mut self, out: &Path) -> Tree {
        let mut tree = Tree::default();
        let mut seen = HashMap::with_capacity(self.known.len());
        let mut stack = vec![(out.to_path_buf(), String::new())];
        while let Some((dir, rel)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else { continue };
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let path = e.path();
                let r = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
                let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
                if meta.is_dir() {
                    if !(rel.is_empty() && name == crate::publish::STATE_DIR) {
                        stack.push((path, r));
                    }
                    continue;
                }
                let stamp = (meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec());
                let info = match self.known.get(&r) {
                    Some((ino, size, s, ns, info)) if (*ino, *size, *s, *ns) == stamp => info.clone(),
                    _ => {
                        let Ok(bytes) = std::fs::read(&path) else { continue };
                        let text = String::from_utf8_lossy(&bytes);
                        FileInfo {
                            hash: crate::util::hash::fnv1a64(&bytes),
                            replicas: if name.contains("apps_deployment_") { replicas_of(&text) } else { None },
                            image: if name.contains("apps_deployment_") { image_of(&text) } else { None },
                            listed: (name == "kustomization.yaml").then(|| listed_of(&text)),
                        }
                    }
                };
                seen.insert(r.clone(), (stamp.0, stamp.1, stamp.2, stamp.3, info.clone()));
                tree.files.insert(r, info);
            }
        }
        self.known = seen;
        tree
    }
}

/// Invariant 7 on `now`: every file a kustomization lists exists, and (with `old` and `new`)
/// every file is as in the old state or the new one.
pub fn consistent(now: &Tree, old: Option<&Tree>, new: Option<&Tree>) -> Result<(), String> {
    for (path, f) in &now.files {
        if let (Some(old), Some(new)) = (old, new)
            && old.files.get(path).map(|o| o.hash) != Some(f.hash)
            && new.files.get(path).map(|n| n.hash) != Some(f.hash)
        {
            return Err(format!("{path} is neither as before the publish nor as after it"));
        }
        let Some(cluster) = path.strip_suffix("/kustomization.yaml") else { continue };
        for file in f.listed.iter().flatten() {
            if !now.files.contains_key(&format!("{cluster}/{file}")) {
                return Err(format!("{path} lists {file}, which is not there"));
            }
        }
    }
    Ok(())
}

/// Ready replicas of a pod owner per member, as the pass's live view observed them.
pub fn observed_ready(view: &LiveView, owner: &str) -> BTreeMap<String, u32> {
    let key = format!("ReplicaSet/{owner}");
    view.clusters
        .iter()
        .filter_map(|(c, s)| {
            let data = s.last_good.as_ref()?;
            let ready = data.pods.owners.get(&key).map_or(0, |o| o.ready);
            Some((c.clone(), ready))
        })
        .collect()
}

/// Invariant 1's judge of one break: a publish that removed replicas of a workload from a
/// member. The removal is made before it breaks when, at its publish, the pass that decided it
/// observed Ready replicas of the workload on another member the output keeps it on, in a fresh
/// observation ([`Break::at_publish`]) — or when the world had Ready replicas of it on
/// another member at some instant between the publish and the agent's removal (`ready_elsewhere`,
/// kept up to date by the world) — or when the policy's own `purgeMode: Directly` removed it.
/// The agent's removal of a workload's last Ready replicas breaks invariant 1 unless one of
/// these holds ([`Break::violated_by`]).
///
/// Why the observation counts: fedsched decides on what its poll saw, and a member's pods can
/// stop being Ready between that poll and the publish (a node that shrinks, a crash); no rule
/// on what a pass observes can see that, and Karmada's controllers race the same way. The
/// promise is "by what fedsched observed": a removal the pass published while its own view
/// showed nothing Ready on the members it keeps still fails (so does one decided on a member's
/// stale observation — older than a poll round can be, or of a member whose last poll failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Break {
    /// The pass's view showed Ready replicas on a member the output keeps the workload on.
    pub observed_elsewhere: bool,
    /// Replicas were Ready on another member at some instant since the publish (the world's
    /// truth).
    pub ready_elsewhere: bool,
    /// A `purgeMode: Directly` purge: the policy's own rule removes the old copy at once.
    pub directly: bool,
}

impl Break {
    /// The break of a publish that removed replicas of pods `owner` from `member`: `view` is
    /// the view of the pass that published it, `now_ms` (Unix ms) its time, `max_age_ms` how
    /// old an observation may be and still count (a poll round's interval and timeout),
    /// `kept` the workload's replicas per member in the published output, `ready_elsewhere`
    /// whether the world runs Ready replicas of it elsewhere now.
    pub fn at_publish(
        view: &LiveView,
        (now_ms, max_age_ms): (u64, u64),
        (owner, member): (&str, &str),
        kept: &BTreeMap<String, i64>,
        ready_elsewhere: bool,
        directly: bool,
    ) -> Break {
        let observed_elsewhere = fresh_ready(view, owner, now_ms, max_age_ms)
            .iter()
            .any(|(c, r)| c != member && *r > 0 && kept.get(c).is_some_and(|k| *k > 0));
        Break { observed_elsewhere, ready_elsewhere, directly }
    }

    /// Whether an agent's removal that took the workload from `total_before` Ready replicas
    /// in the world to `total_after` breaks invariant 1 (an operator's own move is exempt by
    /// the caller).
    pub fn violated_by(this: Option<&Break>, total_before: usize, total_after: usize) -> bool {
        let made = this.is_none_or(|b| b.observed_elsewhere || b.ready_elsewhere || b.directly);
        total_before > 0 && total_after == 0 && !made
    }
}

/// Ready replicas of pods `owner` per member in the fresh observations of `view`: members
/// whose last poll succeeded at most `max_age_ms` before `now_ms` (Unix ms).
pub fn fresh_ready(view: &LiveView, owner: &str, now_ms: u64, max_age_ms: u64) -> BTreeMap<String, u32> {
    let key = format!("ReplicaSet/{owner}");
    view.clusters
        .iter()
        .filter(|(_, s)| s.error.is_none())
        .filter_map(|(c, s)| {
            let data = s.last_good.as_ref()?;
            (data.poll.at_ms.saturating_add(max_age_ms) >= now_ms)
                .then(|| (c.clone(), data.pods.owners.get(&key).map_or(0, |o| o.ready)))
        })
        .collect()
}

/// What the checks after a pass read.
pub struct PassCtx<'a> {
    pub now: u64,
    pub settings: &'a Settings,
    /// Every workload the world knows, with whether its template is in the repository now.
    pub workloads: &'a [(Workload, bool)],
    pub clusters: &'a [String],
    pub before: &'a Tree,
    pub after: &'a Tree,
    pub view: &'a LiveView,
    /// The members as the pass decided on them: the view's observations, or for a member this
    /// process has not polled successfully yet, the last one in the store.
    pub snapshots: &'a [ClusterSnapshot],
    pub store: &'a Store,
    pub report: &'a ReconcileReport,
    /// Since when each member unhealthy in the passes' views has been so.
    pub unhealthy_since: &'a BTreeMap<String, u64>,
    /// The storm rule: the share of members unhealthy above which nothing is evicted
    /// (`[reschedule] unhealthy_threshold`), and when the passes' views last fell to it
    /// from above (a storm's end).
    pub storm_threshold: f64,
    pub storm_ended: Option<u64>,
}

/// Invariant 9 (issue 52): when each stage of a rollout first held each version of each
/// workload in the output, and which versions are not rolled out (a template's version when
/// it is created or restored).
#[derive(Debug, Clone, Default)]
pub struct RolloutWatch {
    /// (workload, image) → when the output first held it, and on which stage (the lowest
    /// then).
    first: BTreeMap<(String, u32), (u64, usize)>,
    /// (workload, image, stage) → when that stage first held it.
    stages: BTreeMap<(String, u32, usize), u64>,
    /// Workload → the image it was created or restored with.
    exempt: BTreeMap<String, u32>,
}

impl RolloutWatch {
    /// Workload `name` is created or restored with `image`: that version is not rolled out.
    pub fn created(&mut self, name: &str, image: u32) {
        self.exempt.insert(name.to_string(), image);
    }

    /// Invariant 9 on the output `tree` at `now` (ms): `workloads` as the repository has them
    /// (with whether each is present), `clusters` the members by index.
    pub fn check(
        &mut self,
        rollout: &super::spec::Rollout,
        now: u64,
        workloads: &[(Workload, bool)],
        clusters: &[String],
        tree: &Tree,
    ) -> Result<(), String> {
        for (w, present) in workloads {
            if !present || self.exempt.get(&w.name) == Some(&w.image) {
                continue;
            }
            let path = crate::render::object_path(&w.key());
            let holding: Vec<usize> = (0..clusters.len())
                .filter(|m| tree.files.get(&format!("{}/{path}", clusters[*m])).and_then(|f| f.image) == Some(w.image))
                .map(|m| rollout.stage_of(m))
                .collect();
            let Some(lowest) = holding.iter().min() else { continue };
            let &mut (first_at, first_stage) = self.first.entry((w.name.clone(), w.image)).or_insert((now, *lowest));
            for stage in holding {
                let at = *self.stages.entry((w.name.clone(), w.image, stage)).or_insert(now);
                let gates = stage.saturating_sub(first_stage) as u64;
                if at < first_at + gates * rollout.min_success_ms {
                    return Err(format!(
                        "{}: image {} on stage {stage} at t={}.{:03}s, {} ms after it was first published (to stage \
                         {first_stage} at t={}.{:03}s): {gates} gate(s) of minSuccessTime {} ms cannot have passed",
                        w.key(),
                        w.image,
                        at / 1000,
                        at % 1000,
                        at - first_at,
                        first_at / 1000,
                        first_at % 1000,
                        rollout.min_success_ms
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether a pass's view has more than `threshold` of its members unhealthy (the storm rule,
/// judged at each pass whenever each went).
pub fn storm_in(view: &LiveView, threshold: f64) -> bool {
    let n = view.clusters.len();
    let unhealthy = view.clusters.values().filter(|s| s.error.is_some()).count();
    n > 0 && unhealthy as f64 / n as f64 > threshold
}

/// Invariants 1 (purge), 2, 3, 4 and 8 after a completed pass.
pub fn after_pass(ctx: &PassCtx<'_>) -> Result<(), Violation> {
    let v = |invariant: u8, message: String| Violation { at_ms: ctx.now, invariant, message };
    let state = ctx.store.stability().map_err(|e| v(0, format!("cannot read the stability state: {e}")))?;
    unhealthy_members_get_nothing(ctx).map_err(|m| v(4, m))?;
    evictions_are_due(ctx).map_err(|m| v(8, m))?;
    purges_leave_something_ready(ctx).map_err(|m| v(1, m))?;
    let held_moves: BTreeSet<&str> = ctx.report.held_moves.iter().map(|m| m.owner.as_str()).collect();
    let held: BTreeSet<&str> = ctx.report.held_clusters.iter().map(|h| h.cluster.as_str()).collect();
    for (w, present) in ctx.workloads {
        let key = w.key();
        let disk = ctx.after.replicas(w, ctx.clusters);
        let placement = ctx.store.placement(&key).map_err(|e| v(0, format!("cannot read a placement: {e}")))?;
        let ws = state.workloads.get(&key);
        let kept: BTreeSet<&str> = ws.map(|s| s.kept()).unwrap_or_default();
        let mut expected: BTreeSet<&str> = kept.clone();
        if let Some(p) = &placement {
            expected.extend(p.files.keys().map(String::as_str));
        }
        let on_disk: BTreeSet<&str> = disk.keys().map(String::as_str).collect();
        let held_whole = held_moves.contains(key.to_string().as_str())
            || (on_disk != expected && expected.union(&on_disk).any(|c| held.contains(c)));
        if held_whole {
            // Its change waits for a held cluster, whole: nothing of it changed on any cluster
            // (and the store keeps what was published: compared below like any other).
            let path = crate::render::object_path(&key);
            for c in ctx.clusters {
                let p = format!("{c}/{path}");
                if ctx.before.files.get(&p).map(|f| f.hash) != ctx.after.files.get(&p).map(|f| f.hash) {
                    return Err(v(
                        3,
                        format!("{key}: its change waits for a held cluster, yet its file on {c} changed"),
                    ));
                }
            }
        }
        if on_disk != expected {
            return Err(v(
                3,
                format!(
                    "{key}: on disk in {on_disk:?}, but the store places it in {:?} and keeps files in {kept:?}",
                    placement.as_ref().map(|p| p.files.keys().collect::<Vec<_>>()).unwrap_or_default()
                ),
            ));
        }
        if let Some(p) = &placement {
            for (c, r) in &p.targets {
                if let (Some(r), Some(d)) = (r, disk.get(c))
                    && i64::from(*r) != *d
                    && !kept.contains(c.as_str())
                {
                    return Err(v(3, format!("{key}: {d} replicas on {c} on disk, {r} in the store's placement")));
                }
            }
        }
        if *present && w.divided() {
            // Published, less those observed Unschedulable ([`unschedulable_published`]).
            let runs: i64 = disk.values().sum::<i64>() - unschedulable_published(ctx.view, w, &disk);
            // A change the guard holds whole (a scale-down on a held cluster) leaves the
            // workload as last published, for its previous count: nothing of it changed (checked
            // above), so nothing runs twice that did not before.
            let held = held_moves.contains(key.to_string().as_str());
            if runs > i64::from(w.replicas) && !held && !double_run_excused(ctx, w, ws, &state) {
                return Err(v(
                    2,
                    format!(
                        "{key}: {runs} replicas published (not Unschedulable) for {} ({disk:?}), no eviction in its grace window",
                        w.replicas
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The replicas of `w` published on members (`disk`) that run nowhere: on each member whose
/// last poll succeeded, those of its pods the poll saw Pending with `PodScheduled=False,
/// reason=Unschedulable` (at most the replicas published there). A workload that cannot be
/// scheduled keeps its previous files (docs/guide/output.md), so an operator's edit that
/// cannot be carried out leaves the previous copies as they were — a `Duplicated` placement
/// under a policy now `Divided` (simulation seed 171): the copies on a member without room
/// are no second run of the workload; once they run, they count.
fn unschedulable_published(view: &LiveView, w: &Workload, disk: &BTreeMap<String, i64>) -> i64 {
    let key = format!("ReplicaSet/{}", w.pod_owner());
    disk.iter()
        .filter_map(|(c, published)| {
            let s = view.clusters.get(c).filter(|s| s.error.is_none())?;
            let o = s.last_good.as_ref()?.pods.owners.get(&key)?;
            Some(i64::try_from(o.unschedulable_since.len()).unwrap_or(i64::MAX).min(*published))
        })
        .sum()
}

fn double_run_excused(
    ctx: &PassCtx<'_>,
    w: &Workload,
    ws: Option<&crate::schedule::stability::WorkloadStability>,
    state: &StabilityState,
) -> bool {
    if state.storm.is_some() {
        return true;
    }
    let slack = 60_000 + ctx.settings.interval_ms;
    let ready = observed_ready(ctx.view, &w.pod_owner());
    ws.is_some_and(|ws| {
        ws.tasks.iter().any(|t| {
            let elsewhere: u32 = ready.iter().filter(|(c, _)| **c != t.cluster).map(|(_, r)| *r).sum();
            t.purge == Purge::Never || ctx.now < t.since_ms + t.grace_ms + slack || elsewhere == 0
        })
    })
}

/// Invariant 4: no member the pass saw unhealthy gets more replicas of any workload.
fn unhealthy_members_get_nothing(ctx: &PassCtx<'_>) -> Result<(), String> {
    let unhealthy: Vec<&String> = ctx.view.clusters.iter().filter(|(_, s)| s.error.is_some()).map(|(c, _)| c).collect();
    if unhealthy.is_empty() {
        return Ok(());
    }
    for (w, _) in ctx.workloads {
        let path = crate::render::object_path(&w.key());
        for c in &unhealthy {
            let p = format!("{c}/{path}");
            let before = ctx.before.files.get(&p).map_or(0, |f| f.replicas.unwrap_or(1));
            let after = ctx.after.files.get(&p).map_or(0, |f| f.replicas.unwrap_or(1));
            if after > before {
                let why =
                    ctx.view.clusters.get(*c).and_then(|s| s.error.as_ref()).map(|e| e.to_string()).unwrap_or_default();
                return Err(format!(
                    "{}: {c} ({why}) went from {before} to {after} replicas in a pass that saw it unhealthy",
                    w.key()
                ));
            }
        }
    }
    Ok(())
}

/// Invariant 8: each eviction for a member's health comes after the member was seen unhealthy
/// for the workload's toleration; none in a pass whose view has more than the storm threshold
/// of the members unhealthy (Kubernetes' partial-disruption rule, judged at each pass: a
/// majority lost a few seconds apart is a storm from the pass it is a majority); and after a
/// storm, a member still unhealthy is evicted only a toleration after the storm's end.
fn evictions_are_due(ctx: &PassCtx<'_>) -> Result<(), String> {
    let storm = storm_in(ctx.view, ctx.storm_threshold);
    for e in &ctx.report.stability.events {
        if !matches!(e.kind, EventKind::Eviction(Reason::ClusterUnreachable | Reason::ClusterNotReady)) {
            continue;
        }
        let Some(key) = &e.workload else { continue };
        let Some((w, _)) = ctx.workloads.iter().find(|(w, _)| w.key() == *key) else { continue };
        if storm {
            let unhealthy = ctx.view.clusters.values().filter(|s| s.error.is_some()).count();
            return Err(format!(
                "{key}: evicted from {} in a pass that saw {unhealthy} of {} members unhealthy (storm threshold {}): {}",
                e.cluster,
                ctx.view.clusters.len(),
                ctx.storm_threshold,
                e.text
            ));
        }
        let tol = w.toleration_ms(ctx.settings.toleration_ms);
        match ctx.unhealthy_since.get(&e.cluster) {
            None => return Err(format!("{key}: evicted from {} which the passes saw healthy: {}", e.cluster, e.text)),
            Some(since) if ctx.now < since + tol => {
                return Err(format!(
                    "{key}: evicted from {} after {} ms unhealthy, toleration {tol} ms: {}",
                    e.cluster,
                    ctx.now - since,
                    e.text
                ));
            }
            Some(since) if ctx.storm_ended.is_some_and(|end| end > *since && ctx.now < end + tol) => {
                return Err(format!(
                    "{key}: evicted from {} {} ms after the storm ended (unhealthy since before it), toleration {tol} ms: {}",
                    e.cluster,
                    ctx.now - ctx.storm_ended.unwrap_or_default(),
                    e.text
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Ready replicas of a pod owner per member, as the pass decided on them (its snapshots: the
/// view's observations, or the store's last one of a member this process has not polled
/// successfully yet); a member whose pods nothing observed counts none.
pub fn decided_ready(snapshots: &[ClusterSnapshot], owner: &str) -> BTreeMap<String, u32> {
    let key = format!("ReplicaSet/{owner}");
    snapshots
        .iter()
        .map(|s| (s.name.clone(), s.pods.as_ref().and_then(|p| p.owners.get(&key)).map_or(0, |o| o.ready)))
        .collect()
}

/// Invariant 1, the purge half: a purge for an elapsed grace period only with replicas
/// Ready elsewhere (or left on the member) in what the pass decided on.
fn purges_leave_something_ready(ctx: &PassCtx<'_>) -> Result<(), String> {
    for e in &ctx.report.stability.events {
        if e.kind != EventKind::Purge || !e.text.contains("GraceElapsed") {
            continue;
        }
        let Some(key) = &e.workload else { continue };
        let Some((w, _)) = ctx.workloads.iter().find(|(w, _)| w.key() == *key) else { continue };
        let ready = decided_ready(ctx.snapshots, &w.pod_owner());
        let elsewhere: u32 = ready.iter().filter(|(c, _)| **c != e.cluster).map(|(_, r)| *r).sum();
        // A hand-over that leaves the workload on the member with fewer replicas (a move-back
        // or rebalance that shrinks it) keeps those of its Ready replicas the placement keeps.
        let placed = ctx.store.placement(key).ok().flatten().map(|p| p.targets).unwrap_or_default();
        let stays = placed.get(&e.cluster).copied().flatten().map_or(0, |r| u32::try_from(r).unwrap_or(0));
        let left_here = stays.min(ready.get(&e.cluster).copied().unwrap_or(0));
        if elsewhere + left_here == 0 {
            return Err(format!(
                "{key}: purged from {} with nothing Ready elsewhere (observed Ready {ready:?}, placed {placed:?}): {}",
                e.cluster, e.text
            ));
        }
    }
    Ok(())
}

/// Invariant 6 on the replay document of `records` ([`crate::views::replay::document`], in
/// their order): every decision replays `identical`; a record reported not replayable is a
/// takeover's adoption record ([`crate::reconcile::is_adoption`]) or a violation — a decision
/// whose inputs were not stored cannot be checked, so it would hide any difference.
pub fn replays_identical(doc: &serde_json::Value, records: &[crate::store::HistoryRecord]) -> Result<(), String> {
    let decisions = doc["decisions"].as_array().map(Vec::as_slice).unwrap_or_default();
    if decisions.len() != records.len() {
        return Err(format!("the replay lists {} decisions for {} records", decisions.len(), records.len()));
    }
    if let Some(first) = decisions.iter().find(|d| d["status"] == "different") {
        return Err(format!("{} decision(s) replay different; first: {first}", doc["different"]));
    }
    let not_replayable = decisions.iter().zip(records).filter(|(d, r)| {
        d["status"] != "identical" && !(d["status"] == "not-replayable" && crate::reconcile::is_adoption(r))
    });
    let mut it = not_replayable.map(|(d, _)| d);
    if let Some(first) = it.next() {
        return Err(format!(
            "{} decision(s) not replayable that are no takeover's adoption; first: {first}",
            1 + it.count()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{DecisionInputs, HistoryRecord};

    fn record(seq: u64, trigger: &str, notes: &[&str]) -> HistoryRecord {
        HistoryRecord {
            seq,
            at_ms: 0,
            trigger: trigger.into(),
            workload: crate::policy::ObjectKey {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("shop".into()),
                name: "web".into(),
            },
            policy: None,
            inputs: DecisionInputs {
                template_hash: 1,
                policy_hash: 1,
                snapshot_versions: 0,
                previous: Default::default(),
                previous_affinity: None,
                profile: String::new(),
                stability: 0,
            },
            result: crate::schedule::ScheduleResult::unschedulable(""),
            notes: notes.iter().map(|n| n.to_string()).collect(),
        }
    }

    fn doc(statuses: &[&str]) -> serde_json::Value {
        let decisions: Vec<serde_json::Value> =
            statuses.iter().map(|s| serde_json::json!({"status": s, "reason": "r"})).collect();
        let different = statuses.iter().filter(|s| **s == "different").count();
        serde_json::json!({"different": different, "decisions": decisions})
    }

    /// Invariant 6: a decision replays `identical`; only a takeover's adoption record may be
    /// not replayable — a decision marked so (its inputs not stored) fails, as one that
    /// replays `different` does.
    #[test]
    fn only_an_adoption_record_may_be_not_replayable() {
        let dir = tempfile::tempdir().expect("tmp");
        let out = dir.path().join("out");
        // An adoption's record, as a takeover writes it.
        let store = crate::store::Store::open(&dir.path().join("state")).expect("store");
        let placed = crate::store::PlacementRecord {
            workload: record(0, "", &[]).workload,
            policy: None,
            result: crate::schedule::ScheduleResult::unschedulable(""),
            targets: Default::default(),
            affinity_name: None,
            files: Default::default(),
            history_seq: 0,
            decided_at_ms: 0,
        };
        store.put_placement(&placed).expect("put");
        std::fs::create_dir_all(out.join(".fedsched")).expect("mkdir");
        std::fs::write(out.join(".fedsched/placements.json"), "{\"placements\":[]}\n").expect("write");
        crate::reconcile::adopt_published(&store, &out, 5).expect("adopt");
        let adopted = store.history(&placed.workload).expect("history");
        assert!(adopted.len() == 1 && crate::reconcile::is_adoption(&adopted[0]), "{adopted:?}");
        let decision = record(2, "timer", &[]);
        let records = [adopted[0].clone(), decision.clone()];
        assert_eq!(replays_identical(&doc(&["not-replayable", "identical"]), &records), Ok(()));
        let e = replays_identical(&doc(&["not-replayable", "not-replayable"]), &records).expect_err("a decision");
        assert!(e.starts_with("1 decision(s) not replayable that are no takeover's adoption"), "{e}");
        let e = replays_identical(&doc(&["identical", "different"]), &records).expect_err("different");
        assert!(e.starts_with("1 decision(s) replay different"), "{e}");
    }
}

#[cfg(test)]
mod observation_tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::{Break, fresh_ready};
    use crate::members::live::{LiveData, LiveStatus, LiveView, PollError};
    use crate::model::{OwnerState, PodFacts};

    const OWNER: &str = "shop/w036-sim";
    const NOW: u64 = 1_800_001_221_000;
    /// A poll round's interval and timeout (30 s and 5 s).
    const MAX_AGE: u64 = 35_000;

    /// A member polled at `at_ms` running `ready` Ready replicas of `OWNER`.
    fn polled(at_ms: u64, ready: u32) -> LiveStatus {
        let mut pods = PodFacts::default();
        let state = OwnerState { pods: 2, bound: 2, running: 2, ready, ..OwnerState::default() };
        pods.owners.insert(format!("ReplicaSet/{OWNER}"), state);
        let mut data = LiveData { pods: Arc::new(pods), ..LiveData::default() };
        data.poll.at_ms = at_ms;
        LiveStatus { last_good: Some(Arc::new(data)), ..LiveStatus::default() }
    }

    fn view(members: Vec<(&str, LiveStatus)>) -> LiveView {
        LiveView { clusters: members.into_iter().map(|(c, s)| (c.to_string(), s)).collect() }
    }

    fn kept(members: &[(&str, i64)]) -> BTreeMap<String, i64> {
        members.iter().map(|(c, r)| (c.to_string(), *r)).collect()
    }

    /// The removal of member-005's replica, published by a pass whose view is `v`, the output
    /// keeping member-007 with 1; the world runs nothing Ready elsewhere at the publish (seed
    /// 106: member-007's pods crashed after the poll). Whether the agent's removal of the last
    /// Ready replica then breaks invariant 1.
    fn breaks(v: &LiveView, kept_on: &[(&str, i64)]) -> bool {
        let b = Break::at_publish(v, (NOW, MAX_AGE), (OWNER, "member-005"), &kept(kept_on), false, false);
        Break::violated_by(Some(&b), 1, 0)
    }

    #[test]
    fn a_removal_is_judged_by_what_the_pass_that_published_it_observed() {
        // The pass saw member-007's 2 replicas Ready 21 s before: made before break by what
        // fedsched observed, though they stopped being Ready before the publish.
        let seen = view(vec![("member-005", polled(NOW - 21_000, 1)), ("member-007", polled(NOW - 21_000, 2))]);
        assert!(!breaks(&seen, &[("member-007", 1)]));
        // Its own view showed nothing Ready elsewhere: a real break.
        let none = view(vec![("member-005", polled(NOW - 21_000, 1)), ("member-007", polled(NOW - 21_000, 0))]);
        assert!(breaks(&none, &[("member-007", 1)]));
        // Ready only on a member the output leaves: nothing Ready stays.
        assert!(breaks(&seen, &[("member-003", 1)]));
        // Ready only in the removed member's own observation.
        assert!(breaks(&view(vec![("member-005", polled(NOW - 1_000, 1))]), &[("member-007", 1)]));
    }

    #[test]
    fn a_stale_or_failed_observation_proves_nothing() {
        // Older than a poll round can be.
        let stale = view(vec![("member-007", polled(NOW - MAX_AGE - 1, 2))]);
        assert!(fresh_ready(&stale, OWNER, NOW, MAX_AGE).is_empty());
        assert!(breaks(&stale, &[("member-007", 1)]));
        // The member's last poll failed: its last good observation is no evidence.
        let mut failed = polled(NOW - 1_000, 2);
        failed.error = Some(PollError::Deadline(std::time::Duration::from_secs(5)));
        assert!(breaks(&view(vec![("member-007", failed)]), &[("member-007", 1)]));
        // The world's truth still makes it: replicas Ready elsewhere since the publish.
        let b =
            Break::at_publish(&stale, (NOW, MAX_AGE), (OWNER, "member-005"), &kept(&[("member-007", 1)]), true, false);
        assert!(!Break::violated_by(Some(&b), 1, 0));
        // Only the removal of the last Ready replicas breaks.
        let b = Break::at_publish(&stale, (NOW, MAX_AGE), (OWNER, "member-005"), &kept(&[]), false, false);
        assert!(!Break::violated_by(Some(&b), 2, 1));
        assert!(Break::violated_by(Some(&b), 2, 0));
    }
}
