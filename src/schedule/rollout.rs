//! The progressive rollout engine (issue 52): a `RolloutPolicy`'s stages and gates as one pure
//! function, [`step`], over a workload's stored [`RolloutState`], what its members show of the
//! new version ([`ClusterHealth`] per cluster) and the time. No I/O, no clock: the reconciler
//! reads and writes the state (`reconcile::rollout`), renders each cluster's files from the
//! version its stage has reached ([`RolloutState::runs_new`]) and records each transition.
//!
//! Rules:
//! - A change (another template content) starts a rollout: stage 1 is released at once, the
//!   other clusters keep the previous version — the last one that completed a rollout
//!   ([`RolloutState::stable`]). The reconciler may hold a release one poll round, until its
//!   members' objects are read ([`RolloutState::held`]): the held stage's members keep what
//!   they ran, no gate is evaluated, and the release is noted (and its gate counts) when it
//!   goes ahead.
//! - **Supersede** (`onNewVersion: Supersede`, the default): a change while a rollout is under
//!   way (progressing, halted or rolled back) replaces its target and starts again at stage 1;
//!   the previous version stays the last one that completed, so a version that never passed a
//!   gate never reaches a later stage.
//! - **Queue** (`onNewVersion: Queue`): a change while a rollout is progressing waits
//!   ([`RolloutState::queued`]; of several, the newest) and starts at stage 1 when the rollout
//!   under way completes (its version is then the previous one), halts or rolls back. A change
//!   while halted or rolled back starts at once, as with Supersede (a fix is the way out of a
//!   halt); a template back at the version under way drops the one that waited.
//! - A stage's clusters are fixed at its release ([`RolloutState::released_to`]): a cluster
//!   that joins the gated stage later (a failover's replacement, a stage by `maxConcurrency`
//!   whose share shifts) keeps the previous version until the stage passes its gate, so a
//!   failover never moves a version onto a cluster before its gate (in a halted rollout:
//!   never the version that failed).
//! - A stage's gate passes when every cluster of the stage is observed Healthy on the new
//!   version for `minSuccessTime` without a break, and, with `requireApproval`, the stage is
//!   approved. A cluster that cannot be observed (offline, unreachable, a kind whose pods are not
//!   attributed) makes its stage pass only by approval or once `minSuccessTime` has passed since
//!   the release — never at once.
//! - A cluster fails when its new pods crash in a loop (or cannot pull their image), or when
//!   it is not Healthy `progressDeadline` after its stage's release. More failed clusters than
//!   `maxFailures` stop the rollout: `Halt` keeps the failed stage on the new version and every
//!   later one on the previous; `Rollback` also puts the failed stage back on the previous.
//! - An approval is a stage name in `spec.approvedStages` that was not there when the rollout
//!   started (the commit that adds it is the approval, reviewed and recorded in git).
//! - The clusters no stage names form a final stage; the rollout is complete when its gate
//!   passes, and the new version becomes the previous one of the next rollout.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::policy::matching::{ClusterFacts, cluster_matches};
use crate::policy::types::{OnFailure, OnNewVersion, RolloutSpec};

/// Transitions kept per workload (the oldest go first).
pub const MAX_TRANSITIONS: usize = 64;

/// Where a rollout is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Stages `0..released` run the new version; the last released one is gated.
    Progressing,
    /// Stopped at a failed stage: it keeps the new version, the later stages the previous.
    Halted,
    /// Stopped at a failed stage, which went back to the previous version.
    RolledBack,
    /// Every cluster runs the new version.
    Complete,
}

impl Phase {
    pub fn as_str(&self) -> &'static str {
        match self {
            Phase::Progressing => "Progressing",
            Phase::Halted => "Halted",
            Phase::RolledBack => "RolledBack",
            Phase::Complete => "Complete",
        }
    }
}

/// One stage transition with its cause (the rollout's own history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    pub at_ms: u64,
    /// The stage concerned (its name; `final` for the clusters no stage names).
    pub stage: String,
    /// `released`, `passed`, `halted`, `rolled-back`, `complete`, `superseded`.
    pub event: String,
    pub cause: String,
}

/// A workload's rollout, kept in the store between passes (and across restarts and
/// takeovers: a new leader continues where the state says, never at stage 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutState {
    /// The RolloutPolicy (`namespace/name`).
    pub policy: String,
    /// Hash of the version every cluster not released runs (the last completed one).
    pub stable_hash: u64,
    /// That version's template object (JSON text), so that it can be rendered after a restart.
    pub stable: String,
    /// Hash of the version being rolled out (equal to `stable_hash` when complete).
    pub target_hash: u64,
    /// That version's template object (JSON text): the previous version of the next rollout
    /// once this one completes.
    #[serde(default)]
    pub target: String,
    pub phase: Phase,
    /// Stages released (1 = the first stage runs the new version); the stage at
    /// `released - 1` is the one gated.
    pub released: usize,
    /// When the gated stage was released.
    pub released_at_ms: u64,
    /// Since when every observed cluster of the gated stage has been Healthy.
    pub healthy_since_ms: Option<u64>,
    /// Clusters that failed in this rollout, with why.
    pub failed: BTreeMap<String, String>,
    /// `approvedStages` when the rollout started: those names do not approve it.
    pub approvals_at_start: BTreeSet<String>,
    pub transitions: Vec<Transition>,
    /// What the views show (set by the reconciler from the policy and the placement): the
    /// workload's clusters by stage, named.
    #[serde(default)]
    pub stages: Vec<(String, Vec<String>)>,
    /// The gate's figures: minSuccessTime and progressDeadline in ms, maxFailures as a count,
    /// and whether the gated stage needs an approval.
    #[serde(default)]
    pub gate: GateFigures,
    /// The workload object's `metadata.generation` on each member of the gated stage when it
    /// was released, as read before the new version was published (set by the reconciler):
    /// the member runs the new version once its object's generation is above it.
    #[serde(default)]
    pub generations: BTreeMap<String, i64>,
    /// The revision each member's GitOps agent had applied when the gated stage was released
    /// (read before the new version was published; members a Cluster annotation names an
    /// agent for, [`GITOPS_AGENT_ANNOTATION`]): the agent has synced the new version once it
    /// applied another revision and is done with it ([`crate::model::AgentStatus::verdict`]).
    #[serde(default)]
    pub agent_revisions: BTreeMap<String, String>,
    /// What each member of the gated stage showed at the last pass (set by the reconciler;
    /// empty when no stage is gated): what the views show per cluster.
    #[serde(default)]
    pub observed: BTreeMap<String, MemberObserved>,
    /// The version that waits for this rollout to end (`onNewVersion: Queue`).
    #[serde(default)]
    pub queued: Option<Queued>,
    /// The clusters of the gated (or stopped) stage when it was released: they alone run the
    /// new version until the stage passes its gate, and they alone are gated. `None`: not
    /// fixed yet (set by the first [`step`] after the release; a state stored before this
    /// field counts the whole stage).
    #[serde(default)]
    pub released_to: Option<BTreeSet<String>>,
    /// A stage release that waits for its members' objects to be read (set by the reconciler,
    /// `reconcile::rollout`): the members of the stage at `released - 1` keep the version they
    /// ran until a poll after the release was due has read what the gate compares with (each
    /// object's generation, each GitOps agent's revision), so that the gate never judges the
    /// stage on an observation older than the version change. No gate is evaluated meanwhile.
    #[serde(default)]
    pub held: Option<HeldRelease>,
}

/// A stage's release held until its members' objects are read ([`RolloutState::held`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldRelease {
    /// The `released` transition, noted (at the time of the release) when the stage gets the
    /// new version; its `at_ms` is when the release was due.
    pub release: Transition,
    /// The version some of the stage's members ran when the release was due, where it is not
    /// the previous one (a superseded rollout's canary): they keep it until the release.
    pub keep: Option<KeptVersion>,
}

/// A version the members of a held stage keep ([`HeldRelease::keep`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptVersion {
    pub hash: u64,
    /// Its template object (JSON text).
    pub object: String,
    /// The members that run it.
    pub on: BTreeSet<String>,
}

/// A version that waits for the rollout under way (`onNewVersion: Queue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    pub hash: u64,
    /// Its template object (JSON text).
    pub object: String,
    pub since_ms: u64,
}

/// What one member of the gated stage showed at the last pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberObserved {
    /// `Healthy`, `Progressing`, `NotSynced`, `NotObserved` or `Failed` ([`ClusterHealth::label`]).
    pub state: String,
    /// The member's GitOps agent's stand on the new version, in words (`None`: no agent
    /// named, or its object not read).
    pub agent: Option<String>,
}

// The annotation and its parser live with the RolloutPolicy kind (`policy::types`), which
// `check` validates without reaching up into the scheduler.
pub use crate::policy::types::{GITOPS_AGENT_ANNOTATION, agent_object};

/// The figures of a rollout's gates, as the policy said them at the last pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateFigures {
    pub min_success_ms: u64,
    pub deadline_ms: Option<u64>,
    pub max_failures: usize,
    pub needs_approval: bool,
}

impl GateFigures {
    /// The figures of `spec` for `stages` (the workload's clusters by stage) at stage `current`.
    pub fn of(spec: &RolloutSpec, stages: &[Vec<&str>], current: Option<usize>) -> Self {
        let total: usize = stages.iter().map(Vec::len).sum();
        GateFigures {
            min_success_ms: spec.min_success_time().as_millis() as u64,
            deadline_ms: spec.progress_deadline().map(|d| d.as_millis() as u64),
            max_failures: spec.max_failures.as_ref().map_or(0, |m| m.of(total)),
            needs_approval: current.and_then(|c| spec.stages.get(c)).is_some_and(|s| s.require_approval),
        }
    }
}

/// What one member shows of the new version of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterHealth {
    /// Every desired replica Ready, none other, observed after the release.
    Healthy,
    /// Not there yet (pods starting, not observed since the release).
    Progressing,
    /// Cannot be observed (offline, unreachable, pods not attributed for the kind).
    NotObserved,
    /// The member's GitOps agent has not synced the new version yet (its words): what the
    /// member runs is no evidence of the new version, good or bad.
    NotSynced(String),
    /// Crash-looping or failing to start, with the reason.
    Failed(String),
}

impl ClusterHealth {
    /// Its name in the views.
    pub fn label(&self) -> &'static str {
        match self {
            ClusterHealth::Healthy => "Healthy",
            ClusterHealth::Progressing => "Progressing",
            ClusterHealth::NotObserved => "NotObserved",
            ClusterHealth::NotSynced(_) => "NotSynced",
            ClusterHealth::Failed(_) => "Failed",
        }
    }
}

/// The name of the final stage (the clusters no stage names).
pub const FINAL_STAGE: &str = "final";

impl RolloutState {
    /// The state of a workload first seen under a RolloutPolicy: complete on its version.
    pub fn settled(policy: String, hash: u64, object: String) -> Self {
        RolloutState {
            policy,
            stable_hash: hash,
            target: object.clone(),
            stable: object,
            target_hash: hash,
            phase: Phase::Complete,
            released: 0,
            released_at_ms: 0,
            healthy_since_ms: None,
            failed: BTreeMap::new(),
            approvals_at_start: BTreeSet::new(),
            transitions: Vec::new(),
            stages: Vec::new(),
            gate: GateFigures::default(),
            generations: BTreeMap::new(),
            agent_revisions: BTreeMap::new(),
            observed: BTreeMap::new(),
            queued: None,
            released_to: None,
            held: None,
        }
    }

    /// The state without what each pass sets again for the views (`stages`, `gate`,
    /// `observed`): what the leader publishes in the summary for a takeover
    /// ([`crate::render::summary::rollout_item`]) and what a new leader adopts.
    pub fn course(&self) -> RolloutState {
        RolloutState { stages: Vec::new(), gate: GateFigures::default(), observed: BTreeMap::new(), ..self.clone() }
    }

    /// Whether two states have the same course ([`RolloutState::course`]): they differ at
    /// most in what the views show.
    pub fn same_course(&self, other: &RolloutState) -> bool {
        // Destructured whole: a new field is compared or named here as a view's.
        let RolloutState {
            policy,
            stable_hash,
            stable,
            target_hash,
            target,
            phase,
            released,
            released_at_ms,
            healthy_since_ms,
            failed,
            approvals_at_start,
            transitions,
            stages: _,
            gate: _,
            generations,
            agent_revisions,
            observed: _,
            queued,
            released_to,
            held,
        } = self;
        *policy == other.policy
            && *stable_hash == other.stable_hash
            && *target_hash == other.target_hash
            && *phase == other.phase
            && *released == other.released
            && *released_at_ms == other.released_at_ms
            && *healthy_since_ms == other.healthy_since_ms
            && *failed == other.failed
            && *approvals_at_start == other.approvals_at_start
            && *transitions == other.transitions
            && *generations == other.generations
            && *agent_revisions == other.agent_revisions
            && *queued == other.queued
            && *released_to == other.released_to
            && *held == other.held
            && *stable == other.stable
            && *target == other.target
    }

    /// Whether a cluster of stage `stage` runs the new version.
    pub fn runs_new(&self, stage: usize) -> bool {
        if self.held_stage() == Some(stage) {
            return false;
        }
        match self.phase {
            Phase::Complete => true,
            Phase::Progressing | Phase::Halted => stage < self.released,
            Phase::RolledBack => stage + 1 < self.released,
        }
    }

    /// Whether `cluster`, of stage `stage`, runs the new version: as [`RolloutState::runs_new`],
    /// except that of the gated (or halted) stage only the clusters it was released to do.
    pub fn runs_new_on(&self, stage: usize, cluster: &str) -> bool {
        if self.held_stage() == Some(stage) {
            return false;
        }
        match self.phase {
            Phase::Progressing | Phase::Halted if stage + 1 == self.released => {
                self.released_to.as_ref().is_none_or(|to| to.contains(cluster))
            }
            _ => self.runs_new(stage),
        }
    }

    /// The stage whose release is held ([`RolloutState::held`]): its index.
    pub fn held_stage(&self) -> Option<usize> {
        (self.phase == Phase::Progressing && self.held.is_some() && self.released > 0).then(|| self.released - 1)
    }

    /// The version `cluster`, of stage `stage`, runs: its hash and template object.
    pub fn version_on(&self, stage: usize, cluster: &str) -> (u64, &str) {
        if self.held_stage() == Some(stage)
            && let Some(k) = self.held.as_ref().and_then(|h| h.keep.as_ref()).filter(|k| k.on.contains(cluster))
        {
            return (k.hash, &k.object);
        }
        match self.runs_new_on(stage, cluster) {
            true => (self.target_hash, &self.target),
            false => (self.stable_hash, &self.stable),
        }
    }

    /// The held release goes ahead at `now_ms`: its stage gets the new version, its
    /// `released` transition is noted now, and its gate counts from now.
    pub fn release_held(&mut self, now_ms: u64) -> Option<HeldRelease> {
        let h = self.held.take()?;
        self.released_at_ms = now_ms;
        self.healthy_since_ms = None;
        self.note(now_ms, &h.release.stage, "released", h.release.cause.clone());
        Some(h)
    }

    /// Holds the release this pass made (the last transition, `released`) until its members'
    /// objects are read; the members of `keep` keep that version meanwhile.
    pub fn hold_release(&mut self, keep: Option<KeptVersion>) {
        if self.phase != Phase::Progressing || self.transitions.last().is_none_or(|t| t.event != "released") {
            return;
        }
        if let Some(release) = self.transitions.pop() {
            self.held = Some(HeldRelease { release, keep });
        }
    }

    /// The stage gated (or stopped at): its index.
    pub fn current(&self) -> Option<usize> {
        (self.phase != Phase::Complete && self.released > 0).then(|| self.released - 1)
    }

    fn note(&mut self, at_ms: u64, stage: &str, event: &str, cause: String) {
        self.transitions.push(Transition { at_ms, stage: stage.to_string(), event: event.to_string(), cause });
        if self.transitions.len() > MAX_TRANSITIONS {
            let extra = self.transitions.len() - MAX_TRANSITIONS;
            self.transitions.drain(..extra);
        }
    }

    /// A new version `hash` (template object `object`, the policy's approvals `approved`):
    /// starts a rollout at stage 1, or supersedes the one under way (see the module).
    pub fn change(&mut self, spec: &RolloutSpec, (hash, object): (u64, &str), now_ms: u64) {
        let at = self.current().map(|s| stage_name(spec, s).to_string()).unwrap_or_default();
        if hash == self.target_hash {
            if let Some(q) = self.queued.take() {
                let cause = format!(
                    "the template is back at the version under way ({hash:016x}): {:016x} waits no more",
                    q.hash
                );
                self.note(now_ms, &at, "unqueued", cause);
            }
            return;
        }
        if spec.on_new_version == OnNewVersion::Queue && self.phase == Phase::Progressing {
            if self.queued.as_ref().is_some_and(|q| q.hash == hash) {
                return;
            }
            let mut cause = format!(
                "a new version ({hash:016x}) waits for the rollout of {:016x} (onNewVersion: Queue)",
                self.target_hash
            );
            if let Some(q) = &self.queued {
                cause.push_str(&format!("; it replaces {:016x}, which waited", q.hash));
            }
            self.queued = Some(Queued { hash, object: object.to_string(), since_ms: now_ms });
            self.note(now_ms, &at, "queued", cause);
            return;
        }
        self.queued = None;
        self.held = None;
        let first = stage_name(spec, 0).to_string();
        let cause = match self.phase {
            Phase::Complete => format!("a new version ({hash:016x}) replaces {:016x}", self.stable_hash),
            _ => {
                let cause = format!(
                    "superseded by a new version ({hash:016x}): {:016x} stops, the previous version stays {:016x}",
                    self.target_hash, self.stable_hash
                );
                self.note(now_ms, &at, "superseded", cause.clone());
                cause
            }
        };
        self.target_hash = hash;
        self.target = object.to_string();
        self.phase = Phase::Progressing;
        self.released = 1;
        self.released_at_ms = now_ms;
        self.healthy_since_ms = None;
        self.released_to = None;
        self.failed.clear();
        self.approvals_at_start = spec.approved_stages.iter().cloned().collect();
        self.note(now_ms, &first, "released", cause);
    }

    /// The rollout under way ended (complete, halted, rolled back): the version that waited,
    /// if any, starts at stage 1.
    fn start_queued(&mut self, spec: &RolloutSpec, now_ms: u64) {
        if let Some(q) = self.queued.take() {
            self.change(spec, (q.hash, &q.object), now_ms);
        }
    }

    /// Whether `stage` is approved for this rollout.
    pub fn approved(&self, spec: &RolloutSpec, stage: usize) -> bool {
        let name = stage_name(spec, stage);
        spec.approved_stages.iter().any(|a| a == name) && !self.approvals_at_start.contains(name)
    }
}

/// The name of stage `i` of `spec` (`final` past the named ones).
pub fn stage_name(spec: &RolloutSpec, i: usize) -> &str {
    spec.stages.get(i).map_or(FINAL_STAGE, |s| s.name.as_str())
}

/// The workload's clusters by stage (`spec.stages.len() + 1` lists, the last the final stage):
/// a stage by `clusterAffinity` takes the clusters it matches, a stage by `maxConcurrency` the
/// next ones in name order, each cluster in its first stage only. `facts` gives a cluster's
/// labels and fields (`None`: matched by name only).
pub fn partition<'a>(
    spec: &RolloutSpec,
    clusters: &[&'a str],
    facts: impl Fn(&str) -> Option<ClusterFacts<'a>>,
) -> Vec<Vec<&'a str>> {
    let mut sorted: Vec<&'a str> = clusters.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let total = sorted.len();
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::with_capacity(spec.stages.len() + 1);
    for stage in &spec.stages {
        let mut members = Vec::new();
        match (&stage.cluster_affinity, &stage.max_concurrency) {
            (Some(aff), _) => {
                for c in sorted.iter().filter(|c| !taken.contains(*c)) {
                    let empty = BTreeMap::new();
                    let f = facts(c).unwrap_or(ClusterFacts {
                        name: c,
                        labels: &empty,
                        provider: None,
                        region: None,
                        zones: &[],
                    });
                    if cluster_matches(aff, &f) {
                        members.push(*c);
                    }
                }
            }
            (None, Some(n)) => {
                let n = n.of(total).max(1);
                members.extend(sorted.iter().filter(|c| !taken.contains(*c)).take(n).copied());
            }
            (None, None) => {}
        }
        taken.extend(members.iter().copied());
        out.push(members);
    }
    out.push(sorted.iter().filter(|c| !taken.contains(*c)).copied().collect());
    out
}

/// One gate evaluation: the state after observing the gated stage's clusters (`health`, by
/// cluster; a cluster without an entry is not observed) at `now_ms`, given the workload's
/// clusters by stage (`stages`, from [`partition`]).
pub fn step(
    state: &mut RolloutState,
    spec: &RolloutSpec,
    stages: &[Vec<&str>],
    health: &BTreeMap<String, ClusterHealth>,
    now_ms: u64,
) {
    let Some(current) = state.current().filter(|_| state.phase == Phase::Progressing) else { return };
    if state.held.is_some() {
        return;
    }
    let name = stage_name(spec, current).to_string();
    let stage: &[&str] = stages.get(current).map_or(&[], Vec::as_slice);
    // The stage's clusters at its release are the ones gated; one that joined since runs the
    // previous version and is not evidence either way.
    let to = state.released_to.get_or_insert_with(|| stage.iter().map(|c| c.to_string()).collect());
    let members: Vec<&str> = stage.iter().copied().filter(|c| to.contains(*c)).collect();
    let min_ms = spec.min_success_time().as_millis() as u64;
    let since_release = now_ms.saturating_sub(state.released_at_ms);
    let deadline_passed = spec.progress_deadline().is_some_and(|d| since_release >= d.as_millis() as u64);
    let (mut healthy, mut unobserved) = (true, false);
    for c in &members {
        if state.failed.contains_key(*c) {
            continue;
        }
        match health.get(*c).unwrap_or(&ClusterHealth::NotObserved) {
            ClusterHealth::Healthy => {}
            ClusterHealth::NotObserved => unobserved = true,
            ClusterHealth::Failed(why) => {
                state.failed.insert(c.to_string(), why.clone());
                healthy = false;
            }
            ClusterHealth::Progressing if deadline_passed => {
                let why = format!(
                    "not Healthy within progressDeadline ({})",
                    spec.progress_deadline.as_deref().unwrap_or("")
                );
                state.failed.insert(c.to_string(), why);
                healthy = false;
            }
            ClusterHealth::NotSynced(why) if deadline_passed => {
                let why = format!(
                    "not synced by its GitOps agent within progressDeadline ({}): {why}",
                    spec.progress_deadline.as_deref().unwrap_or("")
                );
                state.failed.insert(c.to_string(), why);
                healthy = false;
            }
            ClusterHealth::Progressing | ClusterHealth::NotSynced(_) => healthy = false,
        }
    }
    let total: usize = stages.iter().map(Vec::len).sum();
    let allowed = spec.max_failures.as_ref().map_or(0, |m| m.of(total));
    if state.failed.len() > allowed {
        let list: Vec<String> = state.failed.iter().map(|(c, why)| format!("{c}: {why}")).collect();
        let cause = format!("{} cluster(s) failed, maxFailures {allowed}: {}", state.failed.len(), list.join("; "));
        let (phase, event) = match spec.on_failure {
            OnFailure::Halt => (Phase::Halted, "halted"),
            OnFailure::Rollback => (Phase::RolledBack, "rolled-back"),
        };
        state.phase = phase;
        state.healthy_since_ms = None;
        state.note(now_ms, &name, event, cause);
        state.start_queued(spec, now_ms);
        return;
    }
    if !healthy {
        state.healthy_since_ms = None;
        return;
    }
    let since = *state.healthy_since_ms.get_or_insert(now_ms);
    let approved = state.approved(spec, current);
    let needs_approval = spec.stages.get(current).is_some_and(|s| s.require_approval);
    let timed = now_ms.saturating_sub(since) >= min_ms && (!unobserved || since_release >= min_ms);
    let min = humantime::format_duration(spec.min_success_time());
    let cause = if needs_approval && !approved {
        return;
    } else if unobserved && approved {
        format!("stage `{name}` approved in approvedStages; some clusters cannot be observed")
    } else if !timed {
        return;
    } else if unobserved {
        format!("minSuccessTime ({min}) passed since the release; some clusters cannot be observed")
    } else if needs_approval {
        format!("Healthy for minSuccessTime ({min}) and approved in approvedStages")
    } else {
        format!("Healthy for minSuccessTime ({min})")
    };
    state.note(now_ms, &name, "passed", cause);
    if current >= spec.stages.len() {
        state.phase = Phase::Complete;
        state.stable_hash = state.target_hash;
        state.stable = state.target.clone();
        state.healthy_since_ms = None;
        state.released_to = None;
        state.note(now_ms, FINAL_STAGE, "complete", "every cluster runs the new version".into());
        state.start_queued(spec, now_ms);
        return;
    }
    state.released += 1;
    state.released_at_ms = now_ms;
    state.healthy_since_ms = None;
    state.released_to = stages.get(current + 1).map(|cs| cs.iter().map(|c| c.to_string()).collect());
    let next = stage_name(spec, current + 1).to_string();
    state.note(now_ms, &next, "released", format!("stage `{name}` passed its gate"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::types::{ClusterAffinity, IntOrPercent, RolloutStage};

    const MIN: u64 = 60_000;

    fn spec(on_failure: OnFailure) -> RolloutSpec {
        let stage = |name: &str, aff: Option<Vec<&str>>, n: Option<i64>| RolloutStage {
            name: name.into(),
            cluster_affinity: aff.map(|names| ClusterAffinity {
                cluster_names: names.into_iter().map(String::from).collect(),
                ..ClusterAffinity::default()
            }),
            max_concurrency: n.map(IntOrPercent::Int),
            require_approval: false,
        };
        RolloutSpec {
            resource_selectors: Vec::new(),
            stages: vec![stage("canary", Some(vec!["m1"]), None), stage("wave", None, Some(2))],
            min_success_time: Some("1m".into()),
            progress_deadline: Some("10m".into()),
            max_failures: None,
            approved_stages: Vec::new(),
            on_failure,
            on_new_version: OnNewVersion::Supersede,
        }
    }

    const FLEET: [&str; 5] = ["m1", "m2", "m3", "m4", "m5"];

    fn all(h: ClusterHealth) -> BTreeMap<String, ClusterHealth> {
        FLEET.iter().map(|c| (c.to_string(), h.clone())).collect()
    }

    /// Which clusters run the new version.
    fn new_on(s: &RolloutState, stages: &[Vec<&str>]) -> Vec<String> {
        let mut out: Vec<String> = stages
            .iter()
            .enumerate()
            .filter(|(i, _)| s.runs_new(*i))
            .flat_map(|(_, cs)| cs.iter().map(|c| c.to_string()))
            .collect();
        out.sort();
        out
    }

    fn started(spec: &RolloutSpec) -> RolloutState {
        let mut s = RolloutState::settled("shop/web".into(), 1, "{}".into());
        s.change(spec, (2, "{\"v\":2}"), 0);
        s
    }

    #[test]
    fn a_clusters_gitops_agent_annotation_names_a_flux_or_argo_cd_object() {
        let k = agent_object("Kustomization/flux-system/apps").expect("flux");
        assert_eq!(
            (k.api_version.as_str(), k.display_ref()),
            ("kustomize.toolkit.fluxcd.io/v1", "Kustomization/flux-system/apps".into())
        );
        let a = agent_object("Application/argocd/eu-1").expect("argo");
        assert_eq!(a.api_version, "argoproj.io/v1alpha1");
        for bad in ["HelmRelease/flux-system/x", "Kustomization/apps", "Kustomization/Flux/apps", "Application//x"] {
            assert!(agent_object(bad).is_err(), "{bad}");
        }
        // A member not synced past the deadline fails as such.
        let sp = spec(OnFailure::Halt);
        let stages = partition(&sp, &FLEET, |_| None);
        let mut s = started(&sp);
        let mut h = all(ClusterHealth::Healthy);
        h.insert("m1".into(), ClusterHealth::NotSynced("still at r1".into()));
        step(&mut s, &sp, &stages, &h, 9 * MIN);
        assert_eq!((s.phase.clone(), s.released), (Phase::Progressing, 1));
        step(&mut s, &sp, &stages, &h, 10 * MIN);
        assert_eq!(s.phase, Phase::Halted);
        assert!(s.failed["m1"].starts_with("not synced by its GitOps agent within progressDeadline"), "{:?}", s.failed);
    }

    #[test]
    fn stages_by_affinity_then_concurrency_then_the_rest() {
        let sp = spec(OnFailure::Halt);
        let p = partition(&sp, &["m5", "m3", "m1", "m4", "m2"], |_| None);
        assert_eq!(p, vec![vec!["m1"], vec!["m2", "m3"], vec!["m4", "m5"]]);
    }

    #[test]
    fn a_good_change_goes_through_every_stage_after_min_success_time_each() {
        let sp = spec(OnFailure::Halt);
        let stages = partition(&sp, &FLEET, |_| None);
        let mut s = started(&sp);
        assert_eq!(new_on(&s, &stages), ["m1"]);
        // Healthy, but not for a minute yet: still stage 1.
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 1_000);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), MIN);
        assert_eq!(new_on(&s, &stages), ["m1"]);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), MIN + 1_000);
        assert_eq!(new_on(&s, &stages), ["m1", "m2", "m3"]);
        // A break in health restarts the minute.
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), MIN + 2_000);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Progressing), MIN + 30_000);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), MIN + 40_000);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 2 * MIN + 10_000);
        assert_eq!(s.released, 2, "passed without a minute of health");
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 2 * MIN + 40_000);
        assert_eq!(new_on(&s, &stages), FLEET);
        assert_eq!(s.phase, Phase::Progressing, "the final stage is gated too");
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 3 * MIN + 40_000);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 4 * MIN + 40_000);
        assert_eq!((s.phase.clone(), s.stable_hash, s.stable.as_str()), (Phase::Complete, 2, "{\"v\":2}"));
        let events: Vec<(&str, &str)> = s.transitions.iter().map(|t| (t.stage.as_str(), t.event.as_str())).collect();
        assert_eq!(
            events,
            [
                ("canary", "released"),
                ("canary", "passed"),
                ("wave", "released"),
                ("wave", "passed"),
                ("final", "released"),
                ("final", "passed"),
                ("final", "complete")
            ]
        );
    }

    #[test]
    fn a_crash_looping_canary_halts_with_later_stages_on_the_previous_version() {
        let sp = spec(OnFailure::Halt);
        let stages = partition(&sp, &FLEET, |_| None);
        let mut s = started(&sp);
        let mut h = all(ClusterHealth::Healthy);
        h.insert("m1".into(), ClusterHealth::Failed("CrashLoopBackOff on 2 pods".into()));
        step(&mut s, &sp, &stages, &h, 5_000);
        assert_eq!(s.phase, Phase::Halted);
        assert_eq!(new_on(&s, &stages), ["m1"], "Halt keeps the failed stage, nothing else moves");
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 10 * MIN);
        assert_eq!((s.phase.clone(), new_on(&s, &stages)), (Phase::Halted, vec!["m1".to_string()]));
        assert!(s.transitions.last().is_some_and(|t| t.event == "halted" && t.cause.contains("CrashLoopBackOff")));
        // Rollback: the failed stage goes back too.
        let sp = spec(OnFailure::Rollback);
        let mut s = started(&sp);
        step(&mut s, &sp, &stages, &h, 5_000);
        assert_eq!((s.phase.clone(), new_on(&s, &stages)), (Phase::RolledBack, Vec::<String>::new()));
        // A fix supersedes: stage 1 again, the previous version still the completed one.
        s.change(&sp, (3, "{\"v\":3}"), 6_000);
        assert_eq!((s.phase.clone(), s.released, s.stable_hash, s.target_hash), (Phase::Progressing, 1, 1, 3));
        assert_eq!(new_on(&s, &stages), ["m1"]);
    }

    #[test]
    fn never_ready_fails_at_the_deadline_and_max_failures_tolerates() {
        let mut sp = spec(OnFailure::Halt);
        sp.max_failures = Some(IntOrPercent::Int(1));
        let stages = partition(&sp, &FLEET, |_| None);
        let mut s = started(&sp);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Progressing), 9 * MIN);
        assert!(s.failed.is_empty());
        // One failure is tolerated, and the stage with nothing else in it passes.
        step(&mut s, &sp, &stages, &all(ClusterHealth::Progressing), 10 * MIN);
        assert_eq!((s.failed.len(), s.phase.clone()), (1, Phase::Progressing));
        step(&mut s, &sp, &stages, &all(ClusterHealth::Progressing), 10 * MIN + 1);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Progressing), 11 * MIN + 2);
        assert_eq!(s.released, 2);
        // The second one stops it.
        let mut h = all(ClusterHealth::Healthy);
        h.insert("m2".into(), ClusterHealth::Failed("ImagePullBackOff".into()));
        step(&mut s, &sp, &stages, &h, 12 * MIN);
        assert_eq!(s.phase, Phase::Halted);
    }

    #[test]
    fn an_approval_commit_releases_a_stage_that_requires_one_and_old_approvals_do_not() {
        let mut sp = spec(OnFailure::Halt);
        sp.stages[0].require_approval = true;
        sp.approved_stages = vec!["canary".into()]; // there before the rollout: does not count
        let stages = partition(&sp, &FLEET, |_| None);
        let mut s = started(&sp);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 0);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 30 * MIN);
        assert_eq!(s.released, 1, "released without a new approval");
        // The commit: taken out, then added again (or added for the first time).
        sp.approved_stages.clear();
        s.approvals_at_start.clear();
        sp.approved_stages.push("canary".into());
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 31 * MIN);
        assert_eq!(s.released, 2);
        assert!(s.transitions.iter().any(|t| t.event == "passed" && t.cause.contains("approved")));
    }

    #[test]
    fn an_unobservable_stage_passes_only_by_time_or_approval_never_at_once() {
        let sp = spec(OnFailure::Halt);
        let stages = partition(&sp, &FLEET, |_| None);
        let mut s = started(&sp);
        let none = BTreeMap::new();
        step(&mut s, &sp, &stages, &none, 0);
        step(&mut s, &sp, &stages, &none, MIN - 1);
        assert_eq!(s.released, 1);
        step(&mut s, &sp, &stages, &none, MIN);
        assert_eq!(s.released, 2);
        // By approval: at once.
        let mut sp = spec(OnFailure::Halt);
        let mut s = started(&sp);
        sp.approved_stages.push("canary".into());
        step(&mut s, &sp, &stages, &none, 1);
        assert_eq!(s.released, 2);
    }

    /// `onNewVersion: Queue`: a change while progressing waits (the newest of several), the
    /// rollout under way goes on to complete, then the waiting version starts at the canary
    /// with the completed one as its previous version; a template back at the version under
    /// way drops it; a halt starts it at once. Supersede (the default) restarts at once.
    #[test]
    fn a_new_version_supersedes_or_waits_for_the_rollout_under_way_as_the_policy_says() {
        let sp = spec(OnFailure::Halt);
        let stages = partition(&sp, &FLEET, |_| None);
        let healthy = all(ClusterHealth::Healthy);
        // Supersede: v3 restarts at the canary, the wave that ran v2 goes back to v1.
        let mut s = started(&sp);
        step(&mut s, &sp, &stages, &healthy, 0);
        step(&mut s, &sp, &stages, &healthy, MIN);
        assert_eq!(s.released, 2);
        s.change(&sp, (3, "{\"v\":3}"), MIN + 1);
        assert_eq!((s.released, s.target_hash, s.stable_hash, new_on(&s, &stages)), (1, 3, 1, vec!["m1".into()]));

        let mut sp = spec(OnFailure::Halt);
        sp.on_new_version = OnNewVersion::Queue;
        let mut s = started(&sp);
        step(&mut s, &sp, &stages, &healthy, 0);
        step(&mut s, &sp, &stages, &healthy, MIN);
        s.change(&sp, (3, "{\"v\":3}"), MIN + 1);
        s.change(&sp, (4, "{\"v\":4}"), MIN + 2);
        assert_eq!((s.released, s.target_hash, s.queued.as_ref().map(|q| q.hash)), (2, 2, Some(4)), "{s:#?}");
        assert_eq!(new_on(&s, &stages), ["m1", "m2", "m3"], "the rollout under way goes on");
        let queued: Vec<&str> =
            s.transitions.iter().filter(|t| t.event == "queued").map(|t| t.cause.as_str()).collect();
        assert_eq!(queued.len(), 2);
        assert!(queued[1].contains("replaces 0000000000000003, which waited"), "{queued:?}");
        // Back at the version under way: nothing waits.
        s.change(&sp, (2, "{\"v\":2}"), MIN + 3);
        assert_eq!(s.queued, None);
        assert_eq!(s.transitions.last().map(|t| t.event.as_str()), Some("unqueued"));
        s.change(&sp, (4, "{\"v\":4}"), MIN + 4);
        for t in [MIN + 5, 2 * MIN + 5, 2 * MIN + 6, 3 * MIN + 6] {
            step(&mut s, &sp, &stages, &healthy, t);
        }
        // v2 completed, and v4 started at the canary on top of it in the same step.
        assert_eq!((s.phase.clone(), s.released, s.stable_hash, s.target_hash), (Phase::Progressing, 1, 2, 4));
        assert_eq!((s.stable.as_str(), s.queued.as_ref()), ("{\"v\":2}", None));
        assert_eq!(new_on(&s, &stages), ["m1"]);
        let events: Vec<&str> = s.transitions.iter().rev().take(3).map(|t| t.event.as_str()).collect();
        assert_eq!(events, ["released", "complete", "passed"]);
        // Queued while the canary halts: it starts at once (a fix is the way out of a halt).
        s.change(&sp, (5, "{\"v\":5}"), 3 * MIN + 7);
        let mut h = healthy.clone();
        h.insert("m1".into(), ClusterHealth::Failed("CrashLoopBackOff on 2 pods".into()));
        step(&mut s, &sp, &stages, &h, 3 * MIN + 8);
        assert_eq!((s.phase.clone(), s.released, s.stable_hash, s.target_hash), (Phase::Progressing, 1, 2, 5));
        // While halted, a change starts at once under Queue too.
        step(&mut s, &sp, &stages, &h, 3 * MIN + 9);
        assert_eq!(s.phase, Phase::Halted);
        s.change(&sp, (6, "{\"v\":6}"), 3 * MIN + 10);
        assert_eq!((s.phase.clone(), s.target_hash, s.queued.as_ref()), (Phase::Progressing, 6, None));
    }

    /// The gated stage's clusters are those it was released to: a cluster that joins it later
    /// (a failover's replacement shifting a `maxConcurrency` stage) runs the previous version
    /// and is not gated until the stage passes; in a halted rollout it never gets the version
    /// that failed.
    #[test]
    fn a_cluster_that_joins_the_gated_stage_later_keeps_the_previous_version() {
        let mut sp = spec(OnFailure::Halt);
        sp.stages[0].cluster_affinity = None;
        sp.stages[0].max_concurrency = Some(IntOrPercent::Int(1));
        let stages = partition(&sp, &FLEET, |_| None);
        assert_eq!(stages[0], ["m1"]);
        let runs = |s: &RolloutState, stages: &[Vec<&str>]| -> Vec<String> {
            let mut out: Vec<String> = stages
                .iter()
                .enumerate()
                .flat_map(|(i, cs)| cs.iter().filter(move |c| s.runs_new_on(i, c)).map(|c| c.to_string()))
                .collect();
            out.sort();
            out
        };
        let mut s = started(&sp);
        let mut h = all(ClusterHealth::Healthy);
        h.insert("m1".into(), ClusterHealth::Failed("CrashLoopBackOff on 2 pods".into()));
        step(&mut s, &sp, &stages, &h, 1_000);
        assert_eq!((s.phase.clone(), runs(&s, &stages)), (Phase::Halted, vec!["m1".to_string()]));
        // m1 is lost, m6 replaces it: the canary by maxConcurrency is now m2, which keeps v1.
        let after = partition(&sp, &["m2", "m3", "m4", "m5", "m6"], |_| None);
        assert_eq!(after[0], ["m2"]);
        assert_eq!(runs(&s, &after), Vec::<String>::new(), "the version that failed moved to a new cluster");
        // Progressing: the newcomer is not gated, and gets the version once the stage passes.
        let mut s = started(&sp);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 1_000);
        let mut h = all(ClusterHealth::Healthy);
        h.insert("m2".into(), ClusterHealth::Failed("its previous version's pods".into()));
        step(&mut s, &sp, &after, &h, 2_000);
        assert_eq!((s.phase.clone(), runs(&s, &after)), (Phase::Progressing, vec![]), "{s:#?}");
        step(&mut s, &sp, &after, &h, MIN + 1_000);
        assert_eq!(s.released, 2, "{s:#?}");
        assert_eq!(runs(&s, &after), ["m2", "m3", "m4"], "the stage passed: m2 gets it, the wave is released");
    }

    #[test]
    fn a_stored_state_continues_where_it_was() {
        let sp = spec(OnFailure::Halt);
        let stages = partition(&sp, &FLEET, |_| None);
        let mut s = started(&sp);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), 1_000);
        step(&mut s, &sp, &stages, &all(ClusterHealth::Healthy), MIN + 1_000);
        let json = serde_json::to_string(&s).expect("encode");
        let mut back: RolloutState = serde_json::from_str(&json).expect("decode");
        assert_eq!(back, s);
        // The healthy-since time of the second stage is kept: no gate is skipped or restarted.
        step(&mut back, &sp, &stages, &all(ClusterHealth::Healthy), MIN + 2_000);
        step(&mut back, &sp, &stages, &all(ClusterHealth::Healthy), 2 * MIN + 1_000);
        assert_eq!(back.released, 2);
        step(&mut back, &sp, &stages, &all(ClusterHealth::Healthy), 2 * MIN + 2_001);
        assert_eq!(back.released, 3);
    }
}
