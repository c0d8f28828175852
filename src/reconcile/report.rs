//! What a pass tells its caller: the [`ReconcileReport`] (counts, problems, held clusters,
//! the commit, phase timings), the [`Problem`]s of workloads that could not be (fully)
//! placed, and why a pass stopped ([`ReconcileError`]).

use std::time::Duration;

use crate::policy::{LoadError, ObjectKey};
use crate::publish;
use crate::publish::Trigger;
use crate::schedule::stability::EventKind;
use crate::store::StoreError;

/// Wall time of each phase of a pass. `load` and `poll` (snapshot building) are measured by
/// [`super::Reconciler::load_inputs`]; `poll` also covers recording the snapshots; `record` is the store
/// writes after publishing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhaseTimings {
    /// Reading, defaulting and validating the policy repository.
    pub load: Duration,
    /// Building member snapshots and recording them in the store.
    pub poll: Duration,
    /// The stability stage (ClusterTaintPolicy taints, the engine's step, directives).
    pub stability: Duration,
    /// Filter, score, select, assign for every workload.
    pub schedule: Duration,
    /// CPU time of the pass's thread in the schedule phase, with that of the threads that
    /// computed its split estimates: the schedule work itself, without the time a thread
    /// waited for a core on a busy machine.
    pub schedule_cpu: Duration,
    /// The decide stage's own work besides scheduling and rendering: claims, decision keys,
    /// checks that kept decisions still stand, deductions (a pass that changed little spends
    /// its decide stage here).
    pub decide: Duration,
    /// Rendering manifests.
    pub render: Duration,
    /// Writing the output directory.
    pub publish: Duration,
    /// Recording decisions and history, and the store flush.
    pub record: Duration,
}

impl PhaseTimings {
    /// The pass's wall time: every phase (`schedule_cpu` is not one: it is the schedule
    /// phase's work).
    pub fn total(&self) -> Duration {
        self.load + self.poll + self.stability + self.schedule + self.decide + self.render + self.publish + self.record
    }
}

/// Why a pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{} invalid input(s) in the policy repository", .0.len())]
    Invalid(Vec<LoadError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Publish(#[from] publish::PublishError),
    #[error("git mode: {0}")]
    Git(#[from] publish::git::GitError),
    /// The repository places no workload any more while the store has placements (every
    /// template, or every policy, gone: a bad checkout or an emptied branch looks like this):
    /// held as the mass-deletion guard holds a cluster, until confirmed.
    #[error(
        "the policy repository places no workload any more: all {placed} placed workload(s) would be removed from \
         every cluster; held by the mass-deletion guard, nothing written or recorded (if this is meant, confirm once \
         with `fedsched render --allow-mass-delete` or set [publish] allow_mass_delete = true)"
    )]
    Emptied { placed: usize },
    /// `[ha]`: this instance may not publish (standby, or its lease's renew deadline passed):
    /// the pass decided in shadow and stopped before writing anything.
    #[error("{reason}; decided {workloads} workload(s) in shadow, nothing published")]
    Fenced { reason: String, workloads: usize, scheduled: usize },
    /// The process is shutting down ([`super::WriteGate::stop`]): the pass stopped before
    /// publishing.
    #[error("the pass stopped before publishing: shutting down")]
    Stopped,
    /// A preview's comparison with the output directory met a publish each time it tried.
    #[error("the daemon kept publishing while the plan compared its output directory; ask again")]
    Busy,
}

/// A workload that could not be (fully) placed this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub workload: ObjectKey,
    pub cluster: Option<String>,
    pub reason: String,
}

/// What one pass did.
#[derive(Debug, Clone, Default)]
pub struct ReconcileReport {
    /// What caused the pass.
    pub trigger: Trigger,
    pub workloads: usize,
    pub scheduled: usize,
    /// Workloads scheduled and rendered this pass (the others reused a cached decision).
    pub decided: usize,
    /// The pass compared every file with the disk, as a new process's first pass does (the
    /// first pass, a periodic check, or the first after [`crate::reconcile::Reconciler::forget`]).
    pub full_check: bool,
    /// Why they were decided again: see [`Redecided`].
    pub redecided: Redecided,
    pub unschedulable: Vec<Problem>,
    pub render_failures: Vec<Problem>,
    /// Workloads whose policy in force suspends dispatching, with the clusters it suspends
    /// (empty: every cluster): their files stay as they were.
    pub suspended: Vec<(ObjectKey, Vec<String>)>,
    /// Workloads a Lazy policy holds on the spec of their last decision (the policy changed,
    /// the template did not).
    pub lazy_held: Vec<ObjectKey>,
    pub removed_workloads: Vec<ObjectKey>,
    pub files_written: usize,
    pub files_removed: usize,
    pub files_unchanged: usize,
    /// Clusters the mass-deletion guard held this pass (their directories did not change).
    pub held_clusters: Vec<publish::HeldCluster>,
    /// Workloads whose change the guard held whole this pass (their files stayed as they were
    /// on every cluster; the store has the decision that waits).
    pub held_moves: Vec<publish::HeldMove>,
    /// The commit git mode made, if any.
    pub commit: Option<String>,
    pub new_snapshot_versions: usize,
    /// Replicas decided for live members but not running there yet, deducted this pass.
    pub assumed_replicas: i64,
    pub history_records: usize,
    pub duration_ms: u128,
    /// Time per phase (the caller adds `load` and `poll` from [`super::Reconciler::load_inputs`]).
    pub phases: PhaseTimings,
    /// What failover did this pass (evictions, purges, reschedules, move-backs, storm guard).
    pub stability: StabilityReport,
    /// Every workload under a RolloutPolicy after the pass: (workload, state — Progressing,
    /// Halted, RolledBack, Complete —, the index of the stage gated or stopped at, or the
    /// number of stages passed when complete).
    pub rollouts: Vec<(String, &'static str, usize)>,
    /// The workload objects the poller should read on each member for the next pass (the
    /// rollouts' stages gated and next; empty without a RolloutPolicy).
    pub rollout_objects: std::collections::BTreeMap<String, Vec<crate::policy::ObjectKey>>,
    /// Templates the rollout stage looked at (0 without a RolloutPolicy or a stored rollout).
    pub rollout_examined: usize,
}

/// Why a pass decided workloads again instead of reusing their cached decisions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Redecided {
    /// No cached decision (a new workload, the first pass of a process, or after an error).
    pub new: usize,
    /// What it reads that is not capacity changed: template, policy, claim, previous
    /// placement, profile, overrides, the fleet's filter facts, a failover directive.
    pub inputs: usize,
    /// Only the capacity (or its freshness, or this pass's deductions) of a cluster that
    /// passed its filters changed.
    pub capacity: usize,
    /// Not decided again: the capacity of a cluster that passed its filters changed, but its
    /// verdicts computed again gave the same outcome (kept with the figures it was made with).
    pub outcome_stood: usize,
    /// A restored decision whose files were not on the disk as recorded (a full check).
    pub files: usize,
    /// Its history record notes a failover action this pass: decided again so that the
    /// record holds the figures of the inputs it stores (and replays).
    pub noted: usize,
    /// The memo of decisions or of standing outcomes switched off for a benchmark
    /// ([`crate::util::memo::switch_off`]): decided again whatever it kept.
    pub memo_off: usize,
}

/// What the stability engine did in one pass (for metrics, logs and status).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StabilityReport {
    /// Every eviction, purge, reschedule, move-back and storm guard change of the pass.
    pub events: Vec<StabilityEvent>,
    /// Workloads with an eviction due but held, or a graceful eviction not purged yet.
    pub pending_failover: usize,
    /// Workloads whose old copy stays past its grace period because no replica of theirs is
    /// Ready anywhere else.
    pub kept_past_grace: usize,
    /// While the storm guard holds: why.
    pub storm: Option<String>,
    /// Due actions held this pass (rate limit, storm guard, `max_moves_per_pass`, `min_stay`).
    pub held: usize,
}

/// One event of [`StabilityReport::events`].
#[derive(Debug, Clone, PartialEq)]
pub struct StabilityEvent {
    /// None for the storm guard.
    pub workload: Option<ObjectKey>,
    /// The member (empty for the storm guard).
    pub cluster: String,
    /// What it is (its name, its metric and its metric reason: [`EventKind`]).
    pub kind: EventKind,
    /// The history note.
    pub text: String,
}

/// How a report names what a suspension suspends ([`ReconcileReport::suspended`]).
pub fn suspended_on(clusters: &[String]) -> String {
    match clusters.is_empty() {
        true => "every cluster".to_string(),
        false => clusters.join(", "),
    }
}

impl ReconcileReport {
    /// One line for logs and systemd's STATUS=.
    pub fn summary(&self) -> String {
        let held = match self.held_clusters.len() {
            0 => String::new(),
            n => format!("; {n} cluster(s) held by the mass-deletion guard"),
        };
        let assumed = match self.assumed_replicas {
            0 => String::new(),
            n => format!("; {n} assumed replica(s) deducted from live members"),
        };
        let storm = match &self.stability.storm {
            Some(why) => format!("; {why}"),
            None => String::new(),
        };
        let moves = match self.stability.events.len() {
            0 => String::new(),
            n => format!("; {n} failover event(s)"),
        };
        let mut paused = Vec::new();
        if !self.suspended.is_empty() {
            paused.push(format!("{} suspended", self.suspended.len()));
        }
        if !self.lazy_held.is_empty() {
            paused.push(format!("{} held by a Lazy policy", self.lazy_held.len()));
        }
        let paused = match paused.is_empty() {
            true => String::new(),
            false => format!(" ({})", paused.join(", ")),
        };
        format!(
            "{} workloads: {} scheduled{paused}, {} unschedulable, {} render failures; files: {} written, {} removed, {} unchanged{held}{assumed}{moves}{storm}; {} ms",
            self.workloads,
            self.scheduled,
            self.unschedulable.len(),
            self.render_failures.len(),
            self.files_written,
            self.files_removed,
            self.files_unchanged,
            self.duration_ms
        )
    }
}
