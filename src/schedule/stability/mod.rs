//! The stability engine (issue 13 §2–§6): when to take replicas off a cluster, when to delete
//! what was left behind, when to move back — and when not to.
//!
//! One pure function, [`step`]: the state of the previous pass ([`StabilityState`]), this
//! pass's observations ([`Inputs`]: each member's condition, each workload's placement, pods
//! that cannot be scheduled or are not Ready, replicas observed Ready), the time (`now_ms`,
//! passed in: no clock is read here) and the [`StabilitySettings`] give the next state and
//! the [`Action`]s of this pass, each with its [`Cause`]. Same inputs ⇒ same output.
//!
//! What it keeps:
//! - per member, a health timeline ([`ClusterTimeline`]: unhealthy since / healthy since);
//! - per workload ([`WorkloadStability`]): graceful eviction tasks (Karmada's
//!   `gracefulEvictionTasks`: from cluster, replicas, reason, since, purge mode, grace), the
//!   clusters it was moved away from (move-back candidates), Unschedulable replicas being
//!   timed, the capacity marks that distrust a cluster's figures for a request shape, pods
//!   not Ready being timed (application failover), the time of its last move;
//! - the removals of the last minute (the rate limit) and the storm guard.
//!
//! The rules (hysteresis everywhere a state changes):
//! - a member unhealthy (NotReady or Unreachable, in any mix) for the workload's toleration
//!   of Karmada's `cluster.karmada.io/not-ready|unreachable:NoExecute` taint is evicted from
//!   the workload ([`health`] keeps the timeline; one healthy observation resets it);
//! - an eviction task is purged once the workload left the cluster and its replicas are
//!   observed Ready on every other cluster it is placed on, or after the grace period when it
//!   runs somewhere else; `Directly` purges at once; `Never` keeps the files;
//! - Unschedulable replicas of a movable workload for `unschedulable_after` are rescheduled
//!   and the cluster's capacity for that request shape is distrusted until its figure changes;
//! - an evicted-from member healthy for `stable_for` gets its workload back when the policy
//!   prefers it (at most `max_moves_per_pass` per pass, never before `min_stay`);
//! - evictions, reschedules and purges together are limited per minute; while more than
//!   `unhealthy_threshold` of the live members are unhealthy (whenever each went: Kubernetes'
//!   disruption rule, [`health`]) the storm guard holds them all.

pub mod health;
pub mod taints;
mod workload;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::policy::ObjectKey;
use crate::policy::types::{PurgeMode, Toleration};

pub use health::{ClusterTimeline, Condition, Storm, TAINT_NOT_READY, TAINT_UNREACHABLE};
pub use taints::AddedTaint;

/// The `[reschedule]` settings in pure form (milliseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct StabilitySettings {
    /// Unschedulable replicas are moved after this long (default 3 minutes).
    pub unschedulable_after_ms: u64,
    /// A recovered member is trusted again after this long (default 5 minutes).
    pub stable_for_ms: u64,
    /// Most move-backs in one pass (default 10).
    pub max_moves_per_pass: usize,
    /// Whether workloads return to the members their policy prefers (default true).
    pub move_back: bool,
    /// Most evictions, reschedules and purges in any minute (default 60).
    pub max_evictions_per_minute: usize,
    /// Share of live members unhealthy at once above which nothing is evicted (default 0.55).
    pub unhealthy_threshold: f64,
    /// Toleration of the not-ready / unreachable taints when the policy has none (default
    /// 300 s, Karmada's webhook default).
    pub default_toleration_ms: u64,
    /// Grace period of a cluster failover's graceful eviction (default 10 minutes, Karmada's
    /// `--graceful-eviction-timeout`).
    pub grace_period_ms: u64,
    /// A workload moved (evicted, rescheduled, moved back) stays where it went at least this
    /// long before another reschedule or move-back (default 5 minutes).
    pub min_stay_ms: u64,
    /// Whether members lost for their toleration are evicted at all (default true).
    pub cluster_failover: bool,
}

impl Default for StabilitySettings {
    fn default() -> Self {
        StabilitySettings {
            unschedulable_after_ms: 180_000,
            stable_for_ms: 300_000,
            max_moves_per_pass: 10,
            move_back: true,
            max_evictions_per_minute: 60,
            unhealthy_threshold: 0.55,
            default_toleration_ms: 300_000,
            grace_period_ms: 600_000,
            min_stay_ms: 300_000,
            cluster_failover: true,
        }
    }
}

/// Everything the engine keeps between passes (stored, and recorded with the decisions that
/// used it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StabilityState {
    /// Per member, in name order.
    pub clusters: BTreeMap<String, ClusterTimeline>,
    /// Per workload with any state (workloads with none are absent).
    pub workloads: BTreeMap<ObjectKey, WorkloadStability>,
    /// Times (unix ms) of the evictions, reschedules and purges of the last minute.
    pub recent_removals: Vec<u64>,
    /// The storm guard, while it holds.
    pub storm: Option<Storm>,
    /// Per member, the taints ClusterTaintPolicies put on it ([`taints`]; members without
    /// any are absent).
    pub taints: BTreeMap<String, Vec<AddedTaint>>,
    /// Per WorkloadRebalancer (by name), the generation it last acted on and its outcome.
    pub rebalances: BTreeMap<String, Rebalance>,
}

/// What one WorkloadRebalancer generation did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rebalance {
    /// Hash of its `metadata.generation` and spec: a new value acts again.
    pub generation_hash: u64,
    /// Its `metadata.generation`, when it has one.
    pub generation: Option<i64>,
    /// Unix ms it acted.
    pub at_ms: u64,
    /// Per named workload (`apiVersion Kind/namespace/name`, in its order): whether it was
    /// decided afresh (`Successful`), not found (`NotFound`: no placed workload of that name),
    /// or decided afresh but its change held whole by the mass-deletion guard (`Pending`: it
    /// is decided afresh again each pass until published).
    pub workloads: Vec<(String, String)>,
}

/// Karmada's purge modes (a stored copy: the policy enum may grow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Purge {
    Directly,
    Gracefully,
    Never,
}

impl From<PurgeMode> for Purge {
    fn from(p: PurgeMode) -> Self {
        match p {
            PurgeMode::Directly => Purge::Directly,
            PurgeMode::Gracefully => Purge::Gracefully,
            PurgeMode::Never => Purge::Never,
        }
    }
}

/// Why replicas left a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Reason {
    /// The member was NotReady for the toleration.
    ClusterNotReady,
    /// The member was Unreachable for the toleration.
    ClusterUnreachable,
    /// The workload's pods on the member were not Ready for `decisionConditions.tolerationSeconds`.
    ApplicationFailover,
    /// A ClusterTaintPolicy put a `NoExecute` taint on the member that the workload does not
    /// tolerate (for longer than its toleration).
    ClusterTainted,
    /// A move-back decided the workload afresh: a member it left or shrank on keeps its previous
    /// files until the new placement is Ready (a hand-over, not an eviction).
    MoveBack,
    /// A WorkloadRebalancer decided the workload afresh (a hand-over, as [`Reason::MoveBack`]).
    Rebalance,
    /// A failover's decision (the workload decided again without the member it was evicted
    /// from) left or shrank it on another member, still healthy: a hand-over, as
    /// [`Reason::MoveBack`] (e.g. the next `clusterAffinities` term taking the whole workload).
    Failover,
    /// Any other decision left a member (a scale-down, a policy or template edit): a
    /// hand-over, as [`Reason::MoveBack`].
    Moved,
}

impl Reason {
    /// The reasons failover evicts for (an [`ActionKind::Evict`]'s; the others hand over,
    /// [`ActionKind::Handover`]).
    pub const FAILOVER: [Reason; 4] =
        [Reason::ClusterNotReady, Reason::ClusterUnreachable, Reason::ApplicationFailover, Reason::ClusterTainted];

    /// A hand-over's reason (make before break from a member the decision left or shrank
    /// on), not an eviction's.
    pub fn is_handover(self) -> bool {
        matches!(self, Reason::MoveBack | Reason::Rebalance | Reason::Failover | Reason::Moved)
    }

    /// Kebab-case name (history, explain, the metrics' `reason` label).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ClusterNotReady => "cluster-not-ready",
            Reason::ClusterUnreachable => "cluster-unreachable",
            Reason::ApplicationFailover => "application-failover",
            Reason::ClusterTainted => "cluster-tainted",
            Reason::MoveBack => "move-back",
            Reason::Rebalance => "rebalance",
            Reason::Failover => "failover",
            Reason::Moved => "move",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an event of the stability engine is — an [`Action`] that goes into the history — as the
/// report, the API, the plan and the metrics name it: one type from the engine to the metrics'
/// encoder, so that a new kind is a compile error wherever it must be counted or shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// Failover evicted the workload from the member, for this reason.
    Eviction(Reason),
    Purge,
    Reschedule,
    CannotMove,
    MoveBack,
    Rebalance,
    GraceExpired,
    Handover,
    StormStarted,
    StormEnded,
}

impl EventKind {
    /// Every kind, an eviction with each reason failover evicts for.
    pub fn all() -> Vec<EventKind> {
        let mut all: Vec<EventKind> = Reason::FAILOVER.into_iter().map(EventKind::Eviction).collect();
        all.extend([
            EventKind::Purge,
            EventKind::Reschedule,
            EventKind::CannotMove,
            EventKind::MoveBack,
            EventKind::Rebalance,
            EventKind::GraceExpired,
            EventKind::Handover,
            EventKind::StormStarted,
            EventKind::StormEnded,
        ]);
        all
    }

    /// Kebab-case name (the report's and the API's `kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Eviction(_) => "eviction",
            EventKind::Purge => "purge",
            EventKind::Reschedule => "reschedule",
            EventKind::CannotMove => "cannot-move",
            EventKind::MoveBack => "move-back",
            EventKind::Rebalance => "rebalance",
            EventKind::GraceExpired => "grace-expired",
            EventKind::Handover => "handover",
            EventKind::StormStarted => "storm-started",
            EventKind::StormEnded => "storm-ended",
        }
    }

    /// The metrics' `reason` label: an eviction's reason, `unschedulable` for a reschedule,
    /// `storm` for the storm guard, else the kind's name.
    pub fn reason(self) -> &'static str {
        match self {
            EventKind::Eviction(reason) => reason.as_str(),
            EventKind::Reschedule => "unschedulable",
            EventKind::StormStarted | EventKind::StormEnded => "storm",
            other => other.as_str(),
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A graceful eviction task: the workload left `cluster`, whose files stay until purged. A
/// hand-over ([`EvictionTask::is_handover`]: reason `MoveBack`, `Rebalance` or `Failover`) is the
/// same for a move: the member it left or shrank on keeps its previous files, as they are,
/// until the new placement is Ready (make before break); the member is not evicted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictionTask {
    pub cluster: String,
    /// Replicas the workload had there.
    pub replicas: i32,
    pub reason: Reason,
    /// Unix ms of the eviction.
    pub since_ms: u64,
    pub purge: Purge,
    pub grace_ms: u64,
    /// Unix ms the grace period was found passed while no replica of the workload was Ready
    /// anywhere else: the files stay (never purged while it runs nowhere else), said once.
    pub grace_expired_ms: Option<u64>,
}

impl EvictionTask {
    /// A hand-over (a move-back's, a rebalance's, a failover decision's on a healthy member),
    /// not a failover's eviction.
    pub fn is_handover(&self) -> bool {
        self.reason.is_handover()
    }
}

/// A cluster a workload was moved away from by failover (Karmada's `clustersBeforeFailover`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedFrom {
    pub replicas: i32,
    pub at_ms: u64,
    pub reason: Reason,
}

/// Unschedulable replicas on one cluster, being timed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub since_ms: u64,
    pub replicas: u32,
}

/// A cluster's capacity figure for a request shape, distrusted after replicas of that shape
/// stayed Unschedulable there: the cluster holds at most `cap` replicas of the workload until
/// the figure changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapacityMark {
    pub cluster: String,
    /// Hash of the per-replica request shape.
    pub shape: u64,
    /// The capacity figure distrusted (a hash of what the estimate read).
    pub capacity: u64,
    /// Replicas the cluster kept (those that could run).
    pub cap: i32,
    pub since_ms: u64,
}

/// One workload's stability state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadStability {
    /// Graceful eviction tasks not purged yet, in cluster order.
    pub tasks: Vec<EvictionTask>,
    /// Clusters failover moved it away from.
    pub moved_from: BTreeMap<String, MovedFrom>,
    /// Unschedulable replicas being timed, per cluster.
    pub unschedulable: BTreeMap<String, Pending>,
    /// Distrusted capacity figures.
    pub marks: Vec<CapacityMark>,
    /// Clusters where its pods are not Ready, since when (application failover).
    pub not_ready_since: BTreeMap<String, u64>,
    /// Clusters where it cannot move although replicas stay Unschedulable (reported once).
    pub stuck: BTreeSet<String>,
    /// Unix ms of its last move (0: never moved).
    pub moved_at_ms: u64,
    /// Actions of earlier passes (an eviction, its `Directly` purge, a move-back…) whose change
    /// the publish's mass-deletion guard held whole: history notes once the change is published
    /// (the history records only what was published), in the order they were taken.
    #[serde(default)]
    pub unpublished: Vec<Action>,
}

impl WorkloadStability {
    /// No state worth keeping.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
            && self.moved_from.is_empty()
            && self.unschedulable.is_empty()
            && self.marks.is_empty()
            && self.not_ready_since.is_empty()
            && self.stuck.is_empty()
            && self.unpublished.is_empty()
    }

    /// Whether it moved less than `min_stay_ms` before `now_ms` (never moved: false).
    pub fn moved_recently(&self, now_ms: u64, min_stay_ms: u64) -> bool {
        self.moved_at_ms > 0 && now_ms < self.moved_at_ms.saturating_add(min_stay_ms)
    }

    /// Clusters the scheduler must leave out (Karmada's ClusterEviction filter): those with an
    /// eviction task, and those failover moved it away from until it moves back (or, with
    /// `move_back = false`, until they have been healthy for `stable_for`).
    pub fn evicted(&self) -> BTreeSet<&str> {
        let tasks = self.tasks.iter().filter(|t| !t.is_handover()).map(|t| t.cluster.as_str());
        tasks.chain(self.moved_from.keys().map(String::as_str)).collect()
    }

    /// The tasks whose files stay after the pass: graceful evictions and hand-overs not purged.
    /// A `Directly` task's files went in the pass that started it (it only keeps the member
    /// out of the workload's decisions until the workload left), so it is none of them. The
    /// one definition of what a pass leaves: the files the render keeps ([`Self::kept`]), the
    /// summary's `gracefulEvictionTasks` and what a takeover adopts (`reconcile::adopt`).
    pub fn kept_tasks(&self) -> impl Iterator<Item = &EvictionTask> + Clone {
        self.tasks.iter().filter(|t| t.purge != Purge::Directly)
    }

    /// Clusters whose previous files are kept although the workload left them or shrank there
    /// (the clusters of [`Self::kept_tasks`]).
    pub fn kept(&self) -> BTreeSet<&str> {
        self.kept_tasks().map(|t| t.cluster.as_str()).collect()
    }

    /// The replica cap of `cluster` for request shape `shape`, while a mark distrusts it.
    pub fn cap(&self, cluster: &str, shape: u64) -> Option<i32> {
        self.marks.iter().filter(|m| m.cluster == cluster && m.shape == shape).map(|m| m.cap).min()
    }
}

/// How a workload may move when replicas cannot run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mobility {
    /// Divided by dynamic weights or Aggregated: Unschedulable replicas are moved.
    Divided,
    /// Divided by static weights: the weights are the user's; moved only when `allowed`.
    StaticWeights { allowed: bool },
    /// Duplicated: every cluster runs all replicas; nothing can move (reported).
    Duplicated,
}

/// A policy's failover rule as the engine reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailoverRule {
    pub purge: Purge,
    /// Grace period of a `Gracefully` eviction (None: the settings' default).
    pub grace_ms: Option<u64>,
}

/// `failover.application` as the engine reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApplicationRule {
    pub toleration_ms: u64,
    pub rule: FailoverRule,
}

/// What a member looks like this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInput {
    pub name: String,
    pub condition: Condition,
    /// Why (the poll error, the Ready condition's message); empty when Ready.
    pub reason: String,
    /// A live member (polled): only live members count for the storm guard.
    pub live: bool,
    /// The `NoExecute` taints ClusterTaintPolicies put on it: workloads that do not tolerate
    /// one are evicted after their toleration, counted from the time it was added.
    pub no_execute: Vec<AddedTaint>,
}

/// Unschedulable replicas of a workload on one cluster, with the figures they were judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unschedulable {
    pub replicas: u32,
}

/// What one workload looks like this pass.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadInput {
    pub key: ObjectKey,
    /// Replicas per cluster of the placement in force (the previous decision).
    pub placed: BTreeMap<String, i32>,
    pub mobility: Mobility,
    /// The policy's `clusterTolerations`.
    pub tolerations: Vec<Toleration>,
    /// `failover.cluster` (purge mode defaults to Gracefully).
    pub cluster_rule: FailoverRule,
    /// `failover.application`, when the policy has it.
    pub application: Option<ApplicationRule>,
    /// Replicas observed Ready, per cluster.
    pub ready: BTreeMap<String, i32>,
    /// Clusters where its pods are observed and not Ready (application failover).
    pub not_ready: BTreeSet<String>,
    /// Unschedulable replicas per cluster.
    pub unschedulable: BTreeMap<String, Unschedulable>,
    /// Hash of its per-replica request shape.
    pub shape: u64,
    /// Per cluster, the capacity figure its estimate reads (a mark holds while it is equal).
    pub capacity: BTreeMap<String, u64>,
    /// Clusters its policy prefers over its current placement (static weight, earlier
    /// affinity term, higher score): move-back targets; `None`: every cluster it was moved
    /// away from.
    pub prefers: Option<BTreeSet<String>>,
}

impl WorkloadInput {
    /// A workload placed on `placed`, Divided, with Karmada's defaults and nothing observed.
    pub fn new(key: ObjectKey, placed: BTreeMap<String, i32>) -> Self {
        WorkloadInput {
            key,
            placed,
            mobility: Mobility::Divided,
            tolerations: Vec::new(),
            cluster_rule: FailoverRule { purge: Purge::Gracefully, grace_ms: None },
            application: None,
            ready: BTreeMap::new(),
            not_ready: BTreeSet::new(),
            unschedulable: BTreeMap::new(),
            shape: 0,
            capacity: BTreeMap::new(),
            prefers: None,
        }
    }
}

/// This pass's observations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inputs {
    pub clusters: Vec<ClusterInput>,
    pub workloads: Vec<WorkloadInput>,
}

/// Why an action fired: the cluster's condition, how long it held, the rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// The condition observed (`Unreachable: connection refused`, `2 replicas Unschedulable`).
    pub condition: String,
    /// Unix ms since when it held (0 when not timed).
    pub since_ms: u64,
    /// How long it held, ms.
    pub for_ms: u64,
    /// The rule that fired (`toleration 300s of cluster.karmada.io/unreachable:NoExecute`).
    pub rule: String,
}

/// Why an eviction task was purged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PurgeReason {
    /// The replacement replicas are Ready elsewhere.
    ReplacementReady,
    /// The grace period passed.
    GraceElapsed,
    /// `purgeMode: Directly`.
    Directly,
    /// The member left the fleet.
    ClusterGone,
    /// The workload returned to the cluster before the purge (its files are decided again).
    MovedBack,
}

/// A due action that was not taken this pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Held {
    /// `max_evictions_per_minute`.
    RateLimit,
    /// The storm guard.
    Storm,
    /// `max_moves_per_pass`.
    MovesPerPass,
    /// `min_stay`: the workload moved too recently.
    MinStay,
    /// The publish's mass-deletion guard held the removal (a purge stays due until it goes).
    MassDeletionGuard,
    /// A move-back whose fresh decision placed no replica on the member (no room there now,
    /// nothing schedulable, or its policy preferred others): not a move-back; the member keeps
    /// the files its eviction kept and stays a move-back candidate (tried again after
    /// `min_stay`).
    NotPlaced,
    /// The end of a graceful task whose member is not Ready or unreachable while the workload's
    /// placement gives it more replicas than the kept file: ending it would put new replicas
    /// on the member (Karmada's `NoSchedule` taint); due again once the member is Ready.
    MemberNotReady,
}

/// What an action does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionKind {
    /// The workload leaves the cluster; a graceful eviction task starts.
    Evict { replicas: i32, reason: Reason, purge: Purge, grace_ms: u64 },
    /// The cluster's kept files for the workload go (`of`: the task's reason; a hand-over's
    /// files are replaced by the new placement's).
    Purge { reason: PurgeReason, of: Reason },
    /// Unschedulable replicas leave the cluster; the cluster keeps `cap`.
    Reschedule { replicas: u32, cap: i32 },
    /// Unschedulable replicas of a workload that cannot move (reported once).
    CannotMove { replicas: u32 },
    /// The workload returns to a cluster it was moved away from.
    MoveBack { replicas: i32 },
    /// A due action held back (repeats every pass while it holds; not history).
    Held { action: String, by: Held },
    /// The storm guard started holding evictions.
    StormStarted { unhealthy: usize, live: usize },
    /// The storm guard released.
    StormEnded { unhealthy: usize, live: usize },
    /// A WorkloadRebalancer asked for a fresh decision of the workload.
    Rebalance { rebalancer: String, generation: Option<i64> },
    /// The grace period of a graceful eviction passed while no replica of the workload is
    /// Ready anywhere else: its files stay on the cluster until one is (said once).
    GraceExpired { grace_ms: u64 },
    /// A move decided afresh left or shrank the workload on the cluster: its previous files
    /// (`replicas`) stay until the new placement is Ready (`reason`: `MoveBack`, `Rebalance`).
    Handover { replicas: i32, reason: Reason, grace_ms: u64 },
}

/// One action of a pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// None for fleet-wide actions (the storm guard).
    pub workload: Option<ObjectKey>,
    /// The member concerned (empty for fleet-wide actions).
    pub cluster: String,
    pub kind: ActionKind,
    pub cause: Cause,
}

impl Action {
    /// Whether the action belongs in the history (everything but held actions).
    pub fn is_event(&self) -> bool {
        self.event().is_some()
    }

    /// The event this action is; None for a held action (not history).
    pub fn event(&self) -> Option<EventKind> {
        Some(match &self.kind {
            ActionKind::Evict { reason, .. } => EventKind::Eviction(*reason),
            ActionKind::Purge { .. } => EventKind::Purge,
            ActionKind::Reschedule { .. } => EventKind::Reschedule,
            ActionKind::CannotMove { .. } => EventKind::CannotMove,
            ActionKind::MoveBack { .. } => EventKind::MoveBack,
            ActionKind::Held { .. } => return None,
            ActionKind::StormStarted { .. } => EventKind::StormStarted,
            ActionKind::StormEnded { .. } => EventKind::StormEnded,
            ActionKind::Rebalance { .. } => EventKind::Rebalance,
            ActionKind::GraceExpired { .. } => EventKind::GraceExpired,
            ActionKind::Handover { .. } => EventKind::Handover,
        })
    }

    /// The metric reason label ([`EventKind::reason`]; `held` for a held action):
    /// `cluster-not-ready`, `unschedulable`, `move-back`…
    pub fn reason_label(&self) -> String {
        self.event().map_or("held", EventKind::reason).to_string()
    }
}

/// How each event's history note begins ([`Action`]'s `Display`, a held action's excepted): a
/// history record's notes are the decision's own followed by the pass's events, and only the
/// former are compared with the next pass's ([`Action::is_event_note`]).
const EVENT_NOTES: &[&str] = &[
    "evicted ",
    "released the previous files kept on ",
    "purged the files left on ",
    "rescheduled ",
    "moved back to ",
    "storm guard: ",
    "storm guard released: ",
    "rebalanced by WorkloadRebalancer ",
    "kept the previous files on ",
    "grace period ",
];

impl Action {
    /// Whether a history note is an event's (this type's `Display` of an action that is an
    /// event): the record stage compares a workload's notes with its last record's without
    /// them (an event is recorded once, in the pass it happens), whether it knows that record
    /// from its own pass or reads it from the store after a restart (warm = cold).
    pub fn is_event_note(note: &str) -> bool {
        EVENT_NOTES.iter().any(|p| note.starts_with(p))
            || note.split_once(" replicas Unschedulable on ").is_some_and(|(n, rest)| {
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && rest.contains(" cannot move (")
            })
    }
}

fn secs(ms: u64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(ms / 1000)).to_string()
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.cause;
        let held_for = if c.since_ms > 0 { format!(" for {}", secs(c.for_ms)) } else { String::new() };
        match &self.kind {
            ActionKind::Evict { replicas, reason, purge, grace_ms } => write!(
                f,
                "evicted {replicas} replicas from {} ({reason}: {}{held_for}; {}); purge {purge:?}, grace {}",
                self.cluster,
                c.condition,
                c.rule,
                secs(*grace_ms)
            ),
            ActionKind::Purge { reason, of } if of.is_handover() => write!(
                f,
                "released the previous files kept on {} for the {of} ({reason:?}: {}; {})",
                self.cluster, c.condition, c.rule
            ),
            ActionKind::Purge { reason, .. } => {
                write!(f, "purged the files left on {} ({reason:?}: {}; {})", self.cluster, c.condition, c.rule)
            }
            ActionKind::Reschedule { replicas, cap } => write!(
                f,
                "rescheduled {replicas} Unschedulable replicas off {} ({}{held_for}; {}); it keeps {cap} until its capacity changes",
                self.cluster, c.condition, c.rule
            ),
            ActionKind::CannotMove { replicas } => write!(
                f,
                "{replicas} replicas Unschedulable on {} cannot move ({}{held_for}; {})",
                self.cluster, c.condition, c.rule
            ),
            ActionKind::MoveBack { replicas } => write!(
                f,
                "moved back to {} ({replicas} replicas before failover; {}{held_for}; {})",
                self.cluster, c.condition, c.rule
            ),
            ActionKind::Held { action, by } => write!(f, "{action} on {} held by {by:?} ({})", self.cluster, c.rule),
            ActionKind::StormStarted { unhealthy, live } => {
                write!(f, "storm guard: {unhealthy} of {live} live members unhealthy; evicting nothing ({})", c.rule)
            }
            ActionKind::StormEnded { unhealthy, live } => {
                write!(f, "storm guard released: {unhealthy} of {live} live members unhealthy ({})", c.rule)
            }
            ActionKind::Rebalance { rebalancer, generation } => {
                let g = generation.map(|g| format!(" generation {g}")).unwrap_or_default();
                write!(f, "rebalanced by WorkloadRebalancer {rebalancer}{g}: decided afresh ({})", c.rule)
            }
            ActionKind::Handover { replicas, reason, grace_ms } => write!(
                f,
                "kept the previous files on {} ({replicas} replicas) until the new placement is Ready ({reason}; grace {})",
                self.cluster,
                secs(*grace_ms)
            ),
            ActionKind::GraceExpired { grace_ms } => write!(
                f,
                "grace period {} passed with {}: the files left on {} stay until a replica is Ready elsewhere ({})",
                secs(*grace_ms),
                c.condition,
                self.cluster,
                c.rule
            ),
        }
    }
}

/// What [`step`] hands back.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub state: StabilityState,
    /// In order: the storm guard, then per workload in key order.
    pub actions: Vec<Action>,
    /// Workloads with an eviction due but held, or a graceful eviction not purged yet.
    pub pending_failover: BTreeSet<ObjectKey>,
}

impl StabilityState {
    /// Workloads whose files stay on a cluster past their grace period because no replica of
    /// theirs is Ready anywhere else.
    pub fn kept_past_grace(&self) -> usize {
        self.workloads.values().filter(|w| w.tasks.iter().any(|t| t.grace_expired_ms.is_some())).count()
    }
}

/// The removals budget of one pass: the rate limit and the storm guard.
pub(crate) struct Budget {
    /// Removals still allowed this minute.
    pub left: usize,
    pub storm: bool,
    pub moves_left: usize,
    pub now_ms: u64,
    pub taken: Vec<u64>,
}

impl Budget {
    /// Takes one removal, or says what holds it.
    pub fn take(&mut self) -> Result<(), Held> {
        if self.storm {
            return Err(Held::Storm);
        }
        if self.left == 0 {
            return Err(Held::RateLimit);
        }
        self.left -= 1;
        self.taken.push(self.now_ms);
        Ok(())
    }

    /// Takes one move-back, or says what holds it.
    pub fn take_move(&mut self) -> Result<(), Held> {
        if self.storm {
            return Err(Held::Storm);
        }
        if self.moves_left == 0 {
            return Err(Held::MovesPerPass);
        }
        self.moves_left -= 1;
        Ok(())
    }
}

/// One pass of the engine: the next state and this pass's actions. Pure.
pub fn step(state: &StabilityState, inputs: &Inputs, now_ms: u64, settings: &StabilitySettings) -> Step {
    let mut actions = Vec::new();
    let mut clusters = health::advance(&state.clusters, &inputs.clusters, now_ms);
    let storm = health::storm(state.storm.as_ref(), &mut clusters, now_ms, settings, &mut actions);
    let recent: Vec<u64> =
        state.recent_removals.iter().copied().filter(|t| now_ms < t.saturating_add(60_000) && *t <= now_ms).collect();
    let mut budget = Budget {
        left: settings.max_evictions_per_minute.saturating_sub(recent.len()),
        storm: storm.is_some(),
        moves_left: settings.max_moves_per_pass,
        now_ms,
        taken: Vec::new(),
    };
    let mut by_key: BTreeMap<&ObjectKey, &WorkloadInput> = BTreeMap::new();
    for w in &inputs.workloads {
        by_key.entry(&w.key).or_insert(w);
    }
    let mut workloads = BTreeMap::new();
    let mut pending_failover = BTreeSet::new();
    let empty = WorkloadStability::default();
    let no_execute: BTreeMap<&str, &[AddedTaint]> = inputs
        .clusters
        .iter()
        .filter(|c| !c.no_execute.is_empty())
        .map(|c| (c.name.as_str(), c.no_execute.as_slice()))
        .collect();
    for (key, input) in by_key {
        let old = state.workloads.get(key).unwrap_or(&empty);
        let ctx = workload::Ctx { clusters: &clusters, no_execute: &no_execute, settings, now_ms };
        let (next, pending) = workload::step(&ctx, old, input, &mut budget, &mut actions);
        if pending {
            pending_failover.insert(key.clone());
        }
        if !next.is_empty() {
            workloads.insert(key.clone(), next);
        }
    }
    let mut recent_removals = recent;
    recent_removals.extend(budget.taken);
    let (taints, rebalances) = (state.taints.clone(), state.rebalances.clone());
    Step {
        state: StabilityState { clusters, workloads, recent_removals, storm, taints, rebalances },
        actions,
        pending_failover,
    }
}
