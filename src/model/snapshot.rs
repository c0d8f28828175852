//! What fedsched knows about one member cluster at one moment: the [`ClusterSnapshot`].
//!
//! A snapshot is produced by a member source (offline Cluster status today, the live poller
//! next) and is what the scheduler and the store see. It holds no time of observation so that
//! identical content hashes identically; the time lives beside it ([`Observed`]).
//!
//! Live snapshots also carry node-level data ([`NodeView`]: what each node offers and what its
//! pods request) and pod counts ([`PodFacts`], with what each owner's pods are doing:
//! [`OwnerState`]), from which [`ResourceSummary::from_nodes`]
//! derives the summary exactly as Karmada's cluster status controller does, so the
//! summary-level estimators work unchanged; the node-level estimator reads the nodes. How the
//! poll went ([`PollFacts`]) rides along but is not content: it does not change the hash.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::resources::ResourceList;
use crate::policy::matching::ClusterFacts;
use crate::policy::types::TaintEffect;

/// How a snapshot was obtained.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SnapshotSource {
    /// Declared in the policy repository (the Cluster object's own status).
    Offline { file: String },
    /// Polled from the member's Kubernetes API.
    Live { endpoint: String },
}

/// A taint on a Cluster (Karmada's `spec.taints`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClusterTaint {
    pub key: String,
    pub value: Option<String>,
    pub effect: TaintEffect,
}

/// Health of a cluster as last observed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Health {
    Ready,
    NotReady { reason: String },
    Unreachable { reason: String },
}

impl Health {
    pub fn is_ready(&self) -> bool {
        matches!(self, Health::Ready)
    }
}

/// One grade of a customized resource model (`spec.resourceModels`), quantities in milli-units.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelGrade {
    pub grade: u32,
    /// (resource, min, max) in the declared order; max = i64::MAX for the open end.
    pub ranges: Vec<(String, i64, i64)>,
}

/// Karmada's `status.resourceSummary`, in milli-units.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceSummary {
    pub allocatable: ResourceList,
    pub allocated: ResourceList,
    pub allocating: ResourceList,
    /// grade → number of nodes in that grade.
    pub allocatable_modelings: BTreeMap<u32, i64>,
    /// Modelled nodes of `allocatable_modelings` that assumed replicas were placed on
    /// ([`crate::model::assumed::deduct`] on a member without node data: an offline member's
    /// decisions of this pass), in first-fit order per grade; the grade's other nodes are
    /// untouched. Empty as declared or polled; not stored (a deduction lasts one pass, and the
    /// store's binary records have no place for it).
    #[serde(skip)]
    pub modelled_taken: Vec<ModelledTaken>,
}

/// `nodes` modelled nodes of one grade that assumed replicas were placed on, and what they
/// took of each (milli-units of the grade's modelled resources, and pod slots): the resource
/// models' estimator reads what is left of the grade's lower bounds and of 110 pod slots.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelledTaken {
    pub grade: u32,
    pub nodes: i64,
    /// Taken on each of these nodes, milli-units (`pods` left out).
    pub taken: ResourceList,
    /// Pod slots taken on each of these nodes.
    pub pods: i64,
}

impl ResourceSummary {
    /// Karmada's cluster status controller (`cluster_status_controller.go`): `allocatable` =
    /// Σ node allocatable; `allocated` = Σ requests of the non-terminated pods bound to a node,
    /// plus their count as `pods` (here the listed nodes' pods; those of a node that is not
    /// listed are added by [`ResourceSummary::with_unlisted`]); `allocating` = Σ requests of the pods not bound yet
    /// (`unbound`, with `unbound_pods`), plus their count; `allocatableModelings` per the
    /// cluster's resource models (see [`allocatable_modelings`]).
    pub fn from_nodes(
        nodes: &[NodeView],
        unbound: &ResourceList,
        unbound_pods: u32,
        models: &[ModelGrade],
    ) -> ResourceSummary {
        let mut allocatable = ResourceList::new();
        let mut allocated = ResourceList::new();
        let mut bound_pods: i64 = 0;
        for n in nodes {
            allocatable.add(&n.allocatable);
            allocated.add(&n.requested);
            bound_pods = bound_pods.saturating_add(i64::from(n.pods));
        }
        allocated.set("pods", bound_pods.saturating_mul(1000));
        let mut allocating = unbound.clone();
        allocating.set("pods", i64::from(unbound_pods).saturating_mul(1000));
        ResourceSummary {
            allocatable,
            allocated,
            allocating,
            allocatable_modelings: allocatable_modelings(nodes, models),
            modelled_taken: Vec::new(),
        }
    }

    /// Adds to `allocated` the requests (and the `pods` count) of the non-terminated pods bound
    /// to a node that is not listed: Karmada's `getAllocatedResource` counts every pod with a
    /// `spec.nodeName`, whether or not that node is in its node list (a node deleted while its
    /// pods are not yet, a node created between the two lists).
    pub fn with_unlisted(mut self, unlisted: &ResourceList) -> ResourceSummary {
        self.allocated.add(unlisted);
        self
    }

    /// What [`ResourceSummary::with_unlisted`] added to `allocated`, read back from a stored
    /// summary and its `nodes`: `allocated` less the listed nodes' pods.
    pub fn unlisted(&self, nodes: &[NodeView]) -> ResourceList {
        let mut listed = ResourceList::new();
        let mut pods: i64 = 0;
        for n in nodes {
            listed.add(&n.requested);
            pods = pods.saturating_add(i64::from(n.pods));
        }
        listed.set("pods", pods.saturating_mul(1000));
        let mut out = ResourceList::new();
        for (name, v) in &self.allocated.0 {
            let rest = v.saturating_sub(listed.get(name));
            if rest > 0 {
                out.set(name, rest);
            }
        }
        out
    }
}

/// Karmada's `allocatableModelings` (`pkg/modeling`): for every node, the free amount
/// (allocatable − requests of its pods) of each modelled resource; the node's grade is the
/// lowest over those resources of the highest grade whose `min` ≤ free; nodes are counted per
/// grade. Every grade appears (count 0 included). Karmada's loop stops counting at the first
/// node without free pod slots; this one does not copy that quirk. No models ⇒ empty.
pub fn allocatable_modelings(nodes: &[NodeView], models: &[ModelGrade]) -> BTreeMap<u32, i64> {
    let mut out: BTreeMap<u32, i64> = models.iter().map(|m| (m.grade, 0)).collect();
    let Some(first) = models.first() else { return out };
    let mut sorted: Vec<&ModelGrade> = models.iter().collect();
    sorted.sort_by_key(|m| m.grade);
    for n in nodes {
        let mut node_grade: Option<u32> = None;
        for (resource, _, _) in &first.ranges {
            let free = n.allocatable.get(resource).saturating_sub(n.requested.get(resource));
            let g = sorted
                .iter()
                .filter(|m| m.ranges.iter().any(|(r, min, _)| r == resource && *min <= free))
                .map(|m| m.grade)
                .max()
                .unwrap_or(sorted[0].grade);
            node_grade = Some(node_grade.map_or(g, |cur| cur.min(g)));
        }
        if let Some(g) = node_grade {
            *out.entry(g).or_insert(0) += 1;
        }
    }
    out
}

/// One node as the live poller saw it: the node-level data for the node estimator.
///
/// What a pod does not change (labels, taints, allocatable, capacity) is shared (`Arc`, stored
/// and hashed as the value itself): a deduction copies a member's node list before it adds
/// pods, and copying every node's labels and lists was most of a first pass's deductions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeView {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels` (node selectors and affinity match these).
    pub labels: Arc<BTreeMap<String, String>>,
    /// `spec.taints`.
    pub taints: Arc<Vec<ClusterTaint>>,
    /// `status.allocatable`, milli-units.
    pub allocatable: Arc<ResourceList>,
    /// `status.capacity`, milli-units.
    pub capacity: Arc<ResourceList>,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// Σ requests of the non-terminated pods bound to this node.
    pub requested: ResourceList,
    /// Number of non-terminated pods bound to this node.
    pub pods: u32,
}

/// Pod counts of a live cluster (content: part of the hash), and per controlling owner what its
/// pods are doing ([`OwnerState`]: bound, running, ready, pending with reasons and since when).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PodFacts {
    /// Non-terminated pods bound to a node.
    pub bound: u32,
    /// Pods not bound to a node yet (pending).
    pub unbound: u32,
    /// Pods with `PodScheduled=False, reason=Unschedulable`, by controlling owner
    /// (`Kind/namespace/name`; `Pod/namespace/name` for pods without one).
    pub unschedulable: BTreeMap<String, u32>,
    /// Non-terminated pods (bound or not) by controlling owner, as `unschedulable`: how many
    /// replicas of each workload a live member runs (assumed workloads are matched to these).
    pub by_owner: BTreeMap<String, u32>,
    /// What the non-terminated pods of each controlling owner are doing, keyed as `by_owner`
    /// (same keys: `owners[k].pods == by_owner[k]`).
    pub owners: BTreeMap<String, OwnerState>,
    /// The status of the member's own workload objects the poller was asked to read (a
    /// progressive rollout's gated stage, [`crate::members::live::Poller::want_objects`]), by
    /// `Kind/namespace/name`; empty when none was asked for or the member has none of them.
    /// Not stored (the store's snapshots keep what scheduling reads; the rollout keeps what it
    /// decided from these in its own state).
    #[serde(skip)]
    pub objects: BTreeMap<String, ObjectStatus>,
    /// The sync state of the member's GitOps agent objects the poller was asked to read (a
    /// Flux `Kustomization` or an Argo CD `Application` a Cluster names in its
    /// `rollout.fedsched.io/gitops-agent` annotation, read while a progressive rollout gates
    /// or is about to release its stage), by `Kind/namespace/name`. Not stored, as `objects`.
    #[serde(skip)]
    pub agents: BTreeMap<String, AgentStatus>,
    /// The member's own objects of the kinds a progressive rollout judges by Karmada's health
    /// interpretation (not a Deployment, StatefulSet, DaemonSet or Job: a custom kind with a
    /// `healthInterpretation` script, a native kind Karmada's default judges), as the poller
    /// read them, by `Kind/namespace/name`. Not stored, as `objects`.
    #[serde(skip)]
    pub interpreted: BTreeMap<String, RawObject>,
}

/// A member's object as read (`metadata.managedFields` left out), for an interpreter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RawObject {
    /// `metadata.generation` (0 when absent).
    pub generation: i64,
    /// The object, JSON.
    pub text: Arc<str>,
}

/// What a member's GitOps agent says of the directory it syncs: a Flux `Kustomization`
/// (`status.lastAppliedRevision`, `lastAttemptedRevision`, the `Ready` condition) or an Argo CD
/// `Application` (`status.sync.status`, `status.sync.revision`, `status.health`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AgentStatus {
    /// `Kustomization` or `Application`.
    pub kind: String,
    /// The revision the agent applied last (Flux's `lastAppliedRevision`, `main@sha1:…`; Argo
    /// CD's `status.sync.revision`).
    pub revision: String,
    /// Whether the agent is done with that revision: Flux's `lastAttemptedRevision` equals it
    /// (no newer one being tried or failing); Argo CD's `status.sync.status` is `Synced`.
    pub synced: bool,
    /// The agent's health verdict on what it applied.
    pub health: AgentHealth,
    /// The agent's own words (the condition's or the health's message, or why the newer
    /// revision did not apply).
    pub message: String,
}

/// The health a GitOps agent reports for what it applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AgentHealth {
    /// Flux `Ready=True`; Argo CD `Healthy`.
    Healthy,
    /// Not yet (Flux `Ready=Unknown`, or `False` for another reason than a failed health
    /// check; Argo CD `Progressing`, `Suspended`, `Missing`, `Unknown`), with the agent's word.
    #[default]
    Progressing,
    /// The agent judged it failed: Flux `Ready=False, reason=HealthCheckFailed`; Argo CD
    /// `Degraded`.
    Degraded,
}

/// How a member's GitOps agent stands on a rollout's new version ([`AgentStatus::verdict`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentVerdict {
    /// The agent has not applied a revision after the one it had at the release.
    NotSynced(String),
    /// Applied, not healthy yet.
    SyncedProgressing(String),
    /// Applied, and the agent judged it failed.
    SyncedDegraded(String),
    /// Applied and healthy.
    SyncedHealthy(String),
}

impl AgentStatus {
    /// The agent's stand on a version released when it was at `at_release` (its revision
    /// then, read before the new files were published; `None`: not read then, the revision
    /// is not compared): synced once it applied another revision and is done with it.
    pub fn verdict(&self, at_release: Option<&str>) -> AgentVerdict {
        let rev = if self.revision.is_empty() { "no revision" } else { self.revision.as_str() };
        if self.revision.is_empty() || at_release.is_some_and(|r| r == self.revision) {
            let why = match at_release {
                Some(_) => format!("still at {rev}, the revision it had at the release"),
                None => format!("at {rev}"),
            };
            return AgentVerdict::NotSynced(self.with_message(why));
        }
        if !self.synced {
            return AgentVerdict::NotSynced(self.with_message(format!("applied {rev}, not done syncing")));
        }
        match self.health {
            AgentHealth::Healthy => AgentVerdict::SyncedHealthy(format!("synced {rev}, healthy")),
            AgentHealth::Progressing => {
                AgentVerdict::SyncedProgressing(self.with_message(format!("synced {rev}, not healthy yet")))
            }
            AgentHealth::Degraded => AgentVerdict::SyncedDegraded(self.with_message(format!("synced {rev}, degraded"))),
        }
    }

    fn with_message(&self, what: String) -> String {
        match self.message.is_empty() {
            true => what,
            false => format!("{what}: {}", self.message),
        }
    }
}

/// What a member's Deployment, StatefulSet or DaemonSet says of its own rollout: its
/// `metadata.generation`, `status.observedGeneration` and replica counts (a DaemonSet's
/// `desiredNumberScheduled`, `updatedNumberScheduled`, `numberReady`, `numberAvailable`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ObjectStatus {
    pub generation: i64,
    pub observed_generation: i64,
    /// Replicas wanted (`spec.replicas`, 1 when unset; a DaemonSet's `desiredNumberScheduled`).
    pub desired: i64,
    /// Replicas of any version (`status.replicas`; a DaemonSet's `currentNumberScheduled`).
    pub current: i64,
    /// Replicas of the latest pod template (`status.updatedReplicas`).
    pub updated: i64,
    pub ready: i64,
    /// Ready for `minReadySeconds` (`status.availableReplicas`; a StatefulSet's as well).
    pub available: i64,
    /// Why the member's controller gave up on the rollout: a Deployment's `Progressing`
    /// condition with reason `ProgressDeadlineExceeded` (its message).
    pub stalled: Option<String>,
}

/// Whether a member's object has rolled out its latest spec, as `kubectl rollout status`
/// judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RolledOut {
    Done,
    /// Not yet, with what it waits for.
    Waiting(String),
    /// The member's controller gave up (`ProgressDeadlineExceeded`).
    Failed(String),
}

impl ObjectStatus {
    /// Whether the poller reads `key`'s kind into an [`ObjectStatus`] (a Deployment,
    /// StatefulSet or DaemonSet); an object of another kind is kept whole ([`RawObject`]) for
    /// its health interpretation.
    pub fn of_kind(key: &crate::policy::ObjectKey) -> bool {
        key.group() == "apps" && matches!(key.kind.as_str(), "Deployment" | "StatefulSet" | "DaemonSet")
    }

    /// `kubectl rollout status`'s rule: the controller observed the latest generation; every
    /// wanted replica is of the latest template; no replica of an older one is left; every
    /// updated replica is available.
    pub fn rolled_out(&self) -> RolledOut {
        if let Some(why) = &self.stalled {
            return RolledOut::Failed(format!("ProgressDeadlineExceeded: {why}"));
        }
        let waiting = if self.observed_generation < self.generation {
            format!("generation {} not observed yet (observed {})", self.generation, self.observed_generation)
        } else if self.updated < self.desired {
            format!("{} of {} replicas updated", self.updated, self.desired)
        } else if self.current > self.updated {
            format!("{} old replicas pending termination", self.current - self.updated)
        } else if self.available < self.updated {
            format!("{} of {} updated replicas available", self.available, self.updated)
        } else {
            return RolledOut::Done;
        };
        RolledOut::Waiting(waiting)
    }
}

/// The state of one owner's non-terminated pods on a member (or of a workload's owners summed,
/// [`crate::model::assumed::Owner::state`]). Content: timestamps from the member, never ages,
/// so the snapshot hashes the same while nothing happens.
///
/// Invariants: `bound, running, ready ≤ pods`; `not_ready_since.len() == pods − ready ==
/// Σ pending_reasons`; `unschedulable_since.len() ≤ pods − bound`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OwnerState {
    /// Non-terminated pods (phase neither `Succeeded` nor `Failed`).
    pub pods: u32,
    /// Of those, pods bound to a node (`spec.nodeName` set).
    pub bound: u32,
    /// Of those, pods in phase `Running`.
    pub running: u32,
    /// Of those, pods whose `Ready` condition is `True`.
    pub ready: u32,
    /// One Unix-ms timestamp per unbound pod with `PodScheduled=False, reason=Unschedulable`:
    /// that condition's `lastTransitionTime` (the pod's `creationTimestamp` when absent, 0 when
    /// both are), sorted ascending.
    pub unschedulable_since: Vec<u64>,
    /// One Unix-ms timestamp per pod that is not Ready (bound or not): the `Ready=False`
    /// condition's `lastTransitionTime` (the pod's `creationTimestamp` when the condition is
    /// absent, 0 when both are), sorted ascending.
    pub not_ready_since: Vec<u64>,
    /// Why the pods that are not Ready are not, one count per pod: an unbound pod counts under
    /// its `PodScheduled=False` reason (`Unschedulable`, `SchedulingGated`…; `Scheduling` while
    /// the scheduler has not reported), a bound pod not yet `Running` under `Starting`, a
    /// running pod under its `Ready=False` reason (`ContainersNotReady`…; `NotReady` without).
    pub pending_reasons: BTreeMap<String, u32>,
}

impl OwnerState {
    /// Adds another owner's pods (a Deployment's ReplicaSets summed): counts added, the
    /// timestamp vectors merged in order, the reasons added.
    pub fn merge(&mut self, o: &OwnerState) {
        self.pods = self.pods.saturating_add(o.pods);
        self.bound = self.bound.saturating_add(o.bound);
        self.running = self.running.saturating_add(o.running);
        self.ready = self.ready.saturating_add(o.ready);
        merge_sorted(&mut self.unschedulable_since, &o.unschedulable_since);
        merge_sorted(&mut self.not_ready_since, &o.not_ready_since);
        for (reason, n) in &o.pending_reasons {
            let e = self.pending_reasons.entry(reason.clone()).or_insert(0);
            *e = e.saturating_add(*n);
        }
    }

    /// Pods that are not Ready (`pods − ready`).
    pub fn not_ready(&self) -> u32 {
        self.pods.saturating_sub(self.ready)
    }
}

/// `into ∪ from`, both sorted ascending, kept sorted.
fn merge_sorted(into: &mut Vec<u64>, from: &[u64]) {
    if from.is_empty() {
        return;
    }
    let mut out = Vec::with_capacity(into.len() + from.len());
    let (mut i, mut j) = (0, 0);
    while i < into.len() && j < from.len() {
        if into[i] <= from[j] {
            out.push(into[i]);
            i += 1;
        } else {
            out.push(from[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&into[i..]);
    out.extend_from_slice(&from[j..]);
    *into = out;
}

/// How a poll went (not content: excluded from the hash).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PollFacts {
    /// Wall time of the poll, milliseconds.
    pub duration_ms: u64,
    /// List pages fetched (nodes and pods).
    pub pages: u32,
    /// Nodes listed.
    pub nodes: u32,
    /// Pods listed (terminated ones included).
    pub pods: u32,
    /// Unix ms when the poll completed (0 = unknown).
    pub at_ms: u64,
}

/// A per-cluster constraint from the policy repository (Cluster annotations
/// `fedsched.io/reserve`, `fedsched.io/max-replicas-per-workload`). Content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClusterConstraints {
    /// Headroom kept free per resource.
    pub reserve: Vec<(String, Reserve)>,
    /// Most replicas of one workload the cluster may hold.
    pub max_replicas_per_workload: Option<i64>,
}

impl ClusterConstraints {
    /// No constraint.
    pub fn is_empty(&self) -> bool {
        self.reserve.is_empty() && self.max_replicas_per_workload.is_none()
    }

    /// Amount of `resource` (milli-units) to keep free out of `allocatable`.
    pub fn reserved(&self, resource: &str, allocatable: i64) -> i64 {
        self.reserve.iter().filter(|(r, _)| r == resource).map(|(_, v)| v.of(allocatable)).max().unwrap_or(0)
    }
}

/// How much of a resource is kept free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reserve {
    /// Hundredths of a percent of allocatable (`10%` = 1000).
    Basis(u32),
    /// An amount in milli-units.
    Amount(i64),
}

impl Reserve {
    /// The reserved amount out of `allocatable`.
    pub fn of(self, allocatable: i64) -> i64 {
        match self {
            Reserve::Basis(b) => (i128::from(allocatable) * i128::from(b) / 10_000) as i64,
            Reserve::Amount(a) => a,
        }
    }
}

/// How fresh a live view is (not content). Offline clusters have none (confidence 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Freshness {
    /// Unix ms of the last successful poll (0 = never).
    pub polled_at_ms: u64,
    /// Polls that failed since then.
    pub consecutive_failures: u32,
    /// Age of the data when the confidence was computed.
    pub age_ms: u64,
    /// Confidence in parts per million, set by the reconcile pass (1_000_000 = 1).
    pub confidence_ppm: u32,
}

impl Freshness {
    /// Confidence in [0, 1].
    pub fn confidence(&self) -> f64 {
        f64::from(self.confidence_ppm.min(1_000_000)) / 1e6
    }
}

/// Everything the scheduler may consult about one member cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClusterSnapshot {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub provider: Option<String>,
    pub region: Option<String>,
    pub zones: Vec<String>,
    pub taints: Vec<ClusterTaint>,
    pub health: Health,
    pub source: SnapshotSource,
    /// `group/version/Kind` entries the member serves; empty = unknown (nothing is filtered).
    /// Shared (a member's discovery list, hundreds of entries, is copied into every pass's
    /// snapshot of it); hashes and serializes as the set.
    pub api_enablements: std::sync::Arc<BTreeSet<String>>,
    /// Summary-level capacity, when known. Shared (the poller's memo of a member's summary is
    /// in every pass's snapshot of it, and each copy of a snapshot holds the same one); a
    /// deduction changes a copy of its own (`Arc::make_mut`). Hashes and serialises as the
    /// summary itself.
    pub summary: Option<std::sync::Arc<ResourceSummary>>,
    pub resource_models: Vec<ModelGrade>,
    /// Node-level data of a live cluster; empty for offline clusters. Shared with the poller's
    /// data and between the pass's copies of the snapshot; a deduction that changes a node
    /// copies it (`Arc::make_mut`). Serialised as the vector itself (serde's `rc` feature).
    pub nodes: std::sync::Arc<Vec<NodeView>>,
    /// Pod counts of a live cluster; None for offline clusters. Shared as `nodes` is (a
    /// change copies: `Arc::make_mut`); serialised as the facts themselves.
    pub pods: Option<std::sync::Arc<PodFacts>>,
    /// How the poll that produced this snapshot went; None for offline clusters.
    pub poll: Option<PollFacts>,
    /// Reserve and per-workload limits from the Cluster object's annotations.
    pub constraints: ClusterConstraints,
    /// Age and confidence of a live view (not content); None = offline, confidence 1.
    pub freshness: Option<Freshness>,
    /// Grouped nodes for the node-level estimator (not content, not stored).
    #[serde(skip)]
    pub index: super::nodes::IndexCache,
    /// The summary's free amounts for the summary estimator (not content, not stored).
    #[serde(skip)]
    pub summary_free: super::estimate::SummaryCache,
    /// What assumed-replica deductions took from this view (the summary and nodes above hold
    /// the result; this says how much of it is assumed, for explain). Not content, not stored.
    #[serde(skip)]
    pub taken: Taken,
}

/// Replicas deducted from a view as assumed ([`crate::model::assumed::deduct`]) and their
/// requests. Not content: it compares equal and hashes to nothing (the deducted figures are
/// content); a clone keeps it.
#[derive(Debug, Clone, Default)]
pub struct Taken {
    /// Replicas deducted.
    pub replicas: i64,
    /// Their requests summed (milli-units), `pods` left out.
    pub request: ResourceList,
}

impl PartialEq for Taken {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Taken {}

impl std::hash::Hash for Taken {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl ClusterSnapshot {
    /// Confidence in this view: 1 for offline clusters and fresh polls.
    pub fn confidence(&self) -> f64 {
        self.freshness.map_or(1.0, |f| f.confidence())
    }

    /// Unix ms as of which this view is known to be current: the later of its own observation
    /// (a live member's poll, or with watches the last event, bookmark or list received) and
    /// `recorded_ms` (the store's `last_seen_ms` of its content, refreshed only every minute
    /// while nothing changes; later than the observation a stored copy carries). What every
    /// reported age counts from.
    pub fn observed_at_ms(&self, recorded_ms: u64) -> u64 {
        self.freshness.map_or(0, |f| f.polled_at_ms).max(recorded_ms)
    }

    /// The member's CPU performance factor where CPU is compared across members (the price of
    /// a normalised core in `cost-first`, the normalised division): the mean factor of its
    /// nodes' allocatable CPU (from the node index when it is built), else that of the Cluster
    /// object's labels (offline members); 1 without a performance table.
    pub fn cpu_factor(&self, settings: &super::dimensions::ModelSettings) -> f64 {
        if !settings.has_cpu_performance() {
            return 1.0;
        }
        if self.nodes.is_empty() {
            return settings.cpu_factor(&self.labels);
        }
        match self.index.built() {
            Some(index) => index.cpu_mean_factor(),
            None => super::nodes::cpu_figures(&self.nodes, settings).mean_factor(),
        }
    }

    /// Whether node-level data is known (a live cluster polled at least once).
    pub fn is_live(&self) -> bool {
        matches!(self.source, SnapshotSource::Live { .. })
    }

    /// The node index for these settings (built once per snapshot object).
    pub fn node_index(
        &self,
        dims: &super::dimensions::Dimensions,
        settings: &std::sync::Arc<super::dimensions::ModelSettings>,
    ) -> std::sync::Arc<super::nodes::NodeIndex> {
        self.index.get(&self.nodes, dims, settings)
    }

    pub fn facts(&self) -> ClusterFacts<'_> {
        ClusterFacts {
            name: &self.name,
            labels: &self.labels,
            provider: self.provider.as_deref(),
            region: self.region.as_deref(),
            zones: &self.zones,
        }
    }

    /// A stable content hash (FNV-1a 64 over the canonical JSON), used to version snapshots.
    /// [`ClusterSnapshot::poll`] is not content; an offline snapshot hashes as it did before
    /// node-level data existed. Of an unhealthy member's reason only its kind counts (the text
    /// before the first `: `, `transport` of `transport: listing nodes: …`): one outage whose
    /// error text varies from poll to poll (a reset, then a refused connection) is one version.
    pub fn content_hash(&self) -> u64 {
        #[derive(Serialize)]
        struct Content<'a> {
            name: &'a String,
            labels: &'a BTreeMap<String, String>,
            provider: &'a Option<String>,
            region: &'a Option<String>,
            zones: &'a Vec<String>,
            taints: &'a Vec<ClusterTaint>,
            health: &'a Health,
            source: &'a SnapshotSource,
            api_enablements: &'a BTreeSet<String>,
            summary: &'a Option<std::sync::Arc<ResourceSummary>>,
            resource_models: &'a Vec<ModelGrade>,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            nodes: &'a [NodeView],
            #[serde(skip_serializing_if = "Option::is_none")]
            pods: &'a Option<std::sync::Arc<PodFacts>>,
            #[serde(skip_serializing_if = "ClusterConstraints::is_empty")]
            constraints: &'a ClusterConstraints,
        }
        let kind = |reason: &str| reason.split(": ").next().unwrap_or_default().to_string();
        let health = match &self.health {
            Health::Ready => Health::Ready,
            Health::NotReady { reason } => Health::NotReady { reason: kind(reason) },
            Health::Unreachable { reason } => Health::Unreachable { reason: kind(reason) },
        };
        let c = Content {
            name: &self.name,
            labels: &self.labels,
            provider: &self.provider,
            region: &self.region,
            zones: &self.zones,
            taints: &self.taints,
            health: &health,
            source: &self.source,
            api_enablements: &self.api_enablements,
            summary: &self.summary,
            resource_models: &self.resource_models,
            nodes: &self.nodes,
            pods: &self.pods,
            constraints: &self.constraints,
        };
        let bytes = serde_json::to_vec(&c).unwrap_or_default();
        crate::util::hash::fnv1a64(&bytes)
    }
}

/// When a snapshot was taken and how trustworthy it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    /// Unix time in milliseconds of the observation.
    pub at_ms: u64,
    /// Confidence in [0, 1]: 1 for offline clusters and fresh polls.
    pub confidence: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kubectl rollout status`'s rule, each way of not being done.
    #[test]
    fn an_object_is_rolled_out_when_its_controller_has_every_replica_of_the_latest_spec_available() {
        let done = ObjectStatus {
            generation: 3,
            observed_generation: 3,
            desired: 2,
            current: 2,
            updated: 2,
            ready: 2,
            available: 2,
            stalled: None,
        };
        assert_eq!(done.rolled_out(), RolledOut::Done);
        let waiting = |o: ObjectStatus| matches!(o.rolled_out(), RolledOut::Waiting(_));
        assert!(waiting(ObjectStatus { observed_generation: 2, ..done.clone() }), "generation not observed");
        assert!(waiting(ObjectStatus { updated: 1, available: 1, ..done.clone() }), "one replica not updated");
        assert!(waiting(ObjectStatus { current: 3, ..done.clone() }), "an old replica left");
        assert!(waiting(ObjectStatus { available: 1, ..done.clone() }), "an updated replica not available");
        let stalled = ObjectStatus { stalled: Some("ReplicaSet web-1 has timed out".into()), ..done };
        assert!(matches!(stalled.rolled_out(), RolledOut::Failed(why) if why.contains("ProgressDeadlineExceeded")));
    }

    fn node(name: &str, cpu: i64, mem: i64, req_cpu: i64, req_mem: i64, pods: u32) -> NodeView {
        let allocatable = ResourceList::of(&[("cpu", cpu), ("memory", mem), ("pods", 110_000)]);
        NodeView::ready(name, allocatable.clone())
            .with_capacity(allocatable)
            .with_requested(ResourceList::of(&[("cpu", req_cpu), ("memory", req_mem)]), pods)
    }

    #[test]
    fn summary_follows_karmadas_status_controller() {
        let gi = 1024 * 1024 * 1024 * 1000;
        let nodes = vec![node("a", 4000, 8 * gi, 1000, 2 * gi, 3), node("b", 2000, 4 * gi, 500, 0, 1)];
        let mut unbound = ResourceList::new();
        unbound.set("cpu", 250);
        let s = ResourceSummary::from_nodes(&nodes, &unbound, 2, &[]);
        assert_eq!(s.allocatable.get("cpu"), 6000);
        assert_eq!(s.allocatable.get("pods"), 220_000);
        assert_eq!(s.allocated.get("cpu"), 1500);
        assert_eq!(s.allocated.get("memory"), 2 * gi);
        assert_eq!(s.allocated.get("pods"), 4000);
        assert_eq!(s.allocating.get("cpu"), 250);
        assert_eq!(s.allocating.get("pods"), 2000);
        assert!(s.allocatable_modelings.is_empty());
    }

    #[test]
    fn modelings_grade_each_node_by_its_scarcest_resource() {
        let gi = 1024 * 1024 * 1024 * 1000;
        let g = |grade, cpu: (i64, i64), mem: (i64, i64)| ModelGrade {
            grade,
            ranges: vec![("cpu".into(), cpu.0, cpu.1), ("memory".into(), mem.0, mem.1)],
        };
        let models = vec![
            g(0, (0, 1000), (0, 4 * gi)),
            g(1, (1000, 2000), (4 * gi, 16 * gi)),
            g(2, (2000, i64::MAX), (16 * gi, i64::MAX)),
        ];
        // a: 3 CPU free, 6 Gi free → cpu grade 2, memory grade 1 → 1.
        // b: 0.5 CPU free, 64 Gi free → 0. c: 8 CPU, 32 Gi free → 2.
        let nodes = vec![
            node("a", 4000, 8 * gi, 1000, 2 * gi, 1),
            node("b", 1000, 64 * gi, 500, 0, 1),
            node("c", 8000, 32 * gi, 0, 0, 0),
        ];
        let m = allocatable_modelings(&nodes, &models);
        assert_eq!(m, BTreeMap::from([(0, 1), (1, 1), (2, 1)]));
    }

    #[test]
    fn poll_facts_are_not_content() {
        let mut s = ClusterSnapshot::live("m", "https://127.0.0.1:1")
            .with_nodes(vec![node("a", 1000, 1000, 0, 0, 0)])
            .with_pods(PodFacts::default())
            .with_poll(PollFacts { duration_ms: 5, pages: 2, nodes: 1, pods: 0, at_ms: 1 });
        let h = s.content_hash();
        s.poll = Some(PollFacts { duration_ms: 900, pages: 2, nodes: 1, pods: 0, at_ms: 2 });
        s.freshness = Some(Freshness { polled_at_ms: 2, consecutive_failures: 1, age_ms: 5, confidence_ppm: 10 });
        assert_eq!(h, s.content_hash());
        std::sync::Arc::make_mut(&mut s.nodes)[0].requested.set("cpu", 1);
        assert_ne!(h, s.content_hash());
    }
}
