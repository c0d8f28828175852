//! The records the store keeps. All are bincode-friendly: plain structs and enums, no
//! `skip_serializing_if`, `flatten`, `untagged` or `serde_json::Value` (JSON inputs live in
//! blobs, referenced by hash).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::StoreError;
use super::codec::{Codec, Versioned, decode_payload};
use crate::model::snapshot::{ModelGrade, ResourceSummary};
use crate::model::{
    ClusterConstraints, ClusterSnapshot, ClusterTaint, Freshness, Health, NodeView, PodFacts, PollFacts, SnapshotSource,
};
use crate::policy::{ObjectKey, PolicyRef};
use crate::schedule::fleet::{names_blob, universe_of};
use crate::schedule::{ClusterSet, ClusterVerdict, ESTIMATOR_PREFIX, Outcome, Rejection, ScheduleResult, UniversePos};
use crate::util::hash::fnv1a64;

/// One version of a cluster's snapshot: when its content was first and last seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotMeta {
    /// 1, 2, … per cluster; a new version only when the content hash changes.
    pub version: u64,
    /// [`ClusterSnapshot::content_hash`] of this version.
    pub hash: u64,
    /// Unix ms of the first observation with this content.
    pub first_seen_ms: u64,
    /// Unix ms of the last observation with this content (never goes backwards).
    pub last_seen_ms: u64,
    /// Health in this version (part of the content).
    pub health: Health,
    /// Confidence of the last observation with this content.
    pub confidence: f64,
}

/// What a decision consumed besides the cluster snapshots themselves: enough to replay it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionInputs {
    /// Blob hash of the template JSON.
    pub template_hash: u64,
    /// Blob hash of the policy JSON.
    pub policy_hash: u64,
    /// Blob hash of the cluster → snapshot version map the pass used
    /// ([`super::Store::put_versions`]; one blob per distinct map, shared by the decisions of
    /// every pass that saw it).
    pub snapshot_versions: u64,
    /// Replicas per cluster of the previous decision.
    pub previous: BTreeMap<String, i32>,
    /// The `clusterAffinities` term in force before the decision.
    pub previous_affinity: Option<String>,
    /// Name of the scheduling profile (plugin set and weights).
    pub profile: String,
    /// Blob hash of the stability engine's state the pass started from (the store's codec; JSON
    /// before replay existed, empty when the state had workloads): with the snapshots, the
    /// placements and the time, what rebuilds the pass's evictions and its directives. 0: not recorded (schema 2).
    pub stability: u64,
}

/// One scheduling decision, appended to the history and never changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// Assigned by the store: monotonic across all workloads.
    pub seq: u64,
    /// Unix ms of the decision.
    pub at_ms: u64,
    /// What caused the decision (`policy-change`, `cluster-change:member1`, `timer`…).
    pub trigger: String,
    /// The workload decided on.
    pub workload: ObjectKey,
    /// The policy that claimed it, if any.
    pub policy: Option<PolicyRef>,
    /// What the decision consumed (for replay).
    pub inputs: DecisionInputs,
    /// The decision with every cluster's verdict and reasons (stored in the compact form of
    /// [`super::compact`]).
    #[serde(with = "super::compact")]
    pub result: ScheduleResult,
    /// Free-form notes for explain.
    pub notes: Vec<String>,
}

/// Where a workload is placed now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementRecord {
    /// The workload placed.
    pub workload: ObjectKey,
    /// The policy that claimed it, if any.
    pub policy: Option<PolicyRef>,
    /// The last result, scheduled or not (stored in the compact form of [`super::compact`]).
    #[serde(with = "super::compact")]
    pub result: ScheduleResult,
    /// The last successful targets: what the output holds.
    pub targets: BTreeMap<String, Option<i32>>,
    /// The `clusterAffinities` term of the last successful targets.
    pub affinity_name: Option<String>,
    /// Cluster → output path (relative to the output directory) of the rendered manifest.
    pub files: BTreeMap<String, String>,
    /// Sequence number of the history record of the last result.
    pub history_seq: u64,
    /// Unix ms of the last result.
    pub decided_at_ms: u64,
}

impl PlacementRecord {
    /// What the summary's shards and `/api/v1/workloads` show of it ([`crate::render::summary`]).
    pub fn summary(&self) -> crate::render::summary::Placement<'_> {
        crate::render::summary::Placement {
            workload: &self.workload,
            policy: self.policy.as_ref(),
            outcome: &self.result.outcome,
            targets: &self.targets,
            files: &self.files,
            affinity: self.affinity_name.as_deref(),
            // The engine's state holds them (the summary adds them: `reconcile::plan`).
            tasks: &[],
        }
    }
}

impl Versioned for SnapshotMeta {
    const WHAT: &'static str = "snapshot meta";
    const SCHEMA: u16 = 1;
}

impl Versioned for ClusterSnapshot {
    const WHAT: &'static str = "cluster snapshot";
    /// 2: node-level data, pod counts and poll facts (live members).
    /// 3: pods by owner, poll time, cluster constraints, freshness (the resource model).
    /// 4: what each owner's pods are doing ([`PodFacts::owners`]: ready, pending, since when).
    const SCHEMA: u16 = 4;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        match schema {
            1 => Some(decode_payload::<ClusterSnapshotV1>(Self::WHAT, codec, payload).map(ClusterSnapshotV1::upgrade)),
            2 => Some(decode_payload::<ClusterSnapshotV2>(Self::WHAT, codec, payload).map(ClusterSnapshotV2::upgrade)),
            3 => Some(decode_payload::<ClusterSnapshotV3>(Self::WHAT, codec, payload).map(ClusterSnapshotV3::upgrade)),
            _ => None,
        }
    }
}

/// Schema 3 of [`ClusterSnapshot`] (before the pods' states), decoded and upgraded in memory:
/// no [`PodFacts::owners`] (a member's next poll fills them).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct ClusterSnapshotV3 {
    name: String,
    labels: BTreeMap<String, String>,
    provider: Option<String>,
    region: Option<String>,
    zones: Vec<String>,
    taints: Vec<ClusterTaint>,
    health: Health,
    source: SnapshotSource,
    api_enablements: BTreeSet<String>,
    summary: Option<ResourceSummary>,
    resource_models: Vec<ModelGrade>,
    nodes: Vec<NodeView>,
    pods: Option<PodFactsV3>,
    poll: Option<PollFacts>,
    constraints: ClusterConstraints,
    freshness: Option<Freshness>,
}

/// [`PodFacts`] of schema 3.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct PodFactsV3 {
    bound: u32,
    unbound: u32,
    unschedulable: BTreeMap<String, u32>,
    by_owner: BTreeMap<String, u32>,
}

impl ClusterSnapshotV3 {
    fn upgrade(self) -> ClusterSnapshot {
        ClusterSnapshot {
            name: self.name,
            labels: self.labels,
            provider: self.provider,
            region: self.region,
            zones: self.zones,
            taints: self.taints,
            health: self.health,
            source: self.source,
            api_enablements: std::sync::Arc::new(self.api_enablements),
            summary: self.summary.map(std::sync::Arc::new),
            resource_models: self.resource_models,
            nodes: std::sync::Arc::new(self.nodes),
            pods: self.pods.map(|p| {
                Arc::new(PodFacts {
                    bound: p.bound,
                    unbound: p.unbound,
                    unschedulable: p.unschedulable,
                    by_owner: p.by_owner,
                    owners: BTreeMap::new(),
                    objects: BTreeMap::new(),
                    agents: BTreeMap::new(),
                    interpreted: BTreeMap::new(),
                })
            }),
            poll: self.poll,
            constraints: self.constraints,
            freshness: self.freshness,
            index: Default::default(),
            summary_free: Default::default(),
            taken: Default::default(),
        }
    }
}

/// Schema 2 of [`ClusterSnapshot`] (live members, before the resource model), decoded and
/// upgraded in memory: no pods by owner, no poll time, no constraints, no freshness.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct ClusterSnapshotV2 {
    name: String,
    labels: BTreeMap<String, String>,
    provider: Option<String>,
    region: Option<String>,
    zones: Vec<String>,
    taints: Vec<ClusterTaint>,
    health: Health,
    source: SnapshotSource,
    api_enablements: BTreeSet<String>,
    summary: Option<ResourceSummary>,
    resource_models: Vec<ModelGrade>,
    nodes: Vec<NodeView>,
    pods: Option<PodFactsV2>,
    poll: Option<PollFactsV2>,
}

/// [`PodFacts`] of schema 2.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct PodFactsV2 {
    bound: u32,
    unbound: u32,
    unschedulable: BTreeMap<String, u32>,
}

/// [`PollFacts`] of schema 2.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct PollFactsV2 {
    duration_ms: u64,
    pages: u32,
    nodes: u32,
    pods: u32,
}

impl ClusterSnapshotV2 {
    fn upgrade(self) -> ClusterSnapshot {
        ClusterSnapshot {
            name: self.name,
            labels: self.labels,
            provider: self.provider,
            region: self.region,
            zones: self.zones,
            taints: self.taints,
            health: self.health,
            source: self.source,
            api_enablements: std::sync::Arc::new(self.api_enablements),
            summary: self.summary.map(std::sync::Arc::new),
            resource_models: self.resource_models,
            nodes: std::sync::Arc::new(self.nodes),
            pods: self.pods.map(|p| {
                Arc::new(PodFacts {
                    bound: p.bound,
                    unbound: p.unbound,
                    unschedulable: p.unschedulable,
                    by_owner: BTreeMap::new(),
                    owners: BTreeMap::new(),
                    objects: BTreeMap::new(),
                    agents: BTreeMap::new(),
                    interpreted: BTreeMap::new(),
                })
            }),
            poll: self.poll.map(|p| PollFacts {
                duration_ms: p.duration_ms,
                pages: p.pages,
                nodes: p.nodes,
                pods: p.pods,
                at_ms: 0,
            }),
            constraints: ClusterConstraints::default(),
            freshness: None,
            index: Default::default(),
            summary_free: Default::default(),
            taken: Default::default(),
        }
    }
}

/// Schema 1 of [`ClusterSnapshot`] (before live members), decoded and upgraded in memory.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct ClusterSnapshotV1 {
    name: String,
    labels: BTreeMap<String, String>,
    provider: Option<String>,
    region: Option<String>,
    zones: Vec<String>,
    taints: Vec<ClusterTaint>,
    health: Health,
    source: SnapshotSource,
    api_enablements: BTreeSet<String>,
    summary: Option<ResourceSummary>,
    resource_models: Vec<ModelGrade>,
}

impl ClusterSnapshotV1 {
    fn upgrade(self) -> ClusterSnapshot {
        ClusterSnapshot {
            name: self.name,
            labels: self.labels,
            provider: self.provider,
            region: self.region,
            zones: self.zones,
            taints: self.taints,
            health: self.health,
            source: self.source,
            api_enablements: std::sync::Arc::new(self.api_enablements),
            summary: self.summary.map(std::sync::Arc::new),
            resource_models: self.resource_models,
            nodes: Default::default(),
            pods: None,
            poll: None,
            constraints: ClusterConstraints::default(),
            freshness: None,
            index: Default::default(),
            summary_free: Default::default(),
            taken: Default::default(),
        }
    }
}

impl Versioned for HistoryRecord {
    const WHAT: &'static str = "history record";
    /// 2: compact results (verdicts of feasible clusters only, rejections grouped, typed
    /// estimates) and the snapshot versions as a blob reference. Schema 1 records are rewritten
    /// when the store is opened ([`super::Store::open`], store layout 2).
    /// 3: the stability state the pass started from ([`DecisionInputs::stability`]).
    /// 4: the result's verdicts as rows ([`super::compact`]).
    const SCHEMA: u16 = 4;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        match schema {
            2 => Some(decode_payload::<HistoryRecordV2>(Self::WHAT, codec, payload).map(HistoryRecordV2::upgrade)),
            3 => Some(decode_payload::<HistoryRecordV3>(Self::WHAT, codec, payload).map(HistoryRecordV3::upgrade)),
            _ => None,
        }
    }
}

/// [`HistoryRecord`] of schemas 2 and 3 (`I`: their decision inputs), upgraded in memory: the
/// result's verdicts as plain structs.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct HistoryRecordPlain<I> {
    pub seq: u64,
    pub at_ms: u64,
    pub trigger: String,
    pub workload: ObjectKey,
    pub policy: Option<PolicyRef>,
    pub inputs: I,
    pub result: ScheduleResult,
    pub notes: Vec<String>,
}

/// [`HistoryRecord`] of schema 3.
pub(super) type HistoryRecordV3 = HistoryRecordPlain<DecisionInputs>;
/// [`HistoryRecord`] of schema 2 (stability state not recorded: 0).
pub(super) type HistoryRecordV2 = HistoryRecordPlain<DecisionInputsV2>;

impl<I: Into<DecisionInputs>> HistoryRecordPlain<I> {
    fn upgrade(self) -> HistoryRecord {
        HistoryRecord {
            seq: self.seq,
            at_ms: self.at_ms,
            trigger: self.trigger,
            workload: self.workload,
            policy: self.policy,
            inputs: self.inputs.into(),
            result: self.result,
            notes: self.notes,
        }
    }
}

/// [`DecisionInputs`] of history schema 2: no stability state reference.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DecisionInputsV2 {
    pub template_hash: u64,
    pub policy_hash: u64,
    pub snapshot_versions: u64,
    pub previous: BTreeMap<String, i32>,
    pub previous_affinity: Option<String>,
    pub profile: String,
}

impl From<DecisionInputsV2> for DecisionInputs {
    fn from(i: DecisionInputsV2) -> DecisionInputs {
        DecisionInputs {
            template_hash: i.template_hash,
            policy_hash: i.policy_hash,
            snapshot_versions: i.snapshot_versions,
            previous: i.previous,
            previous_affinity: i.previous_affinity,
            profile: i.profile,
            stability: 0,
        }
    }
}

impl Versioned for PlacementRecord {
    const WHAT: &'static str = "placement record";
    /// 2: compact results, as [`HistoryRecord`].
    /// 3: the result's verdicts as rows ([`super::compact`]).
    const SCHEMA: u16 = 3;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        match schema {
            2 => Some(decode_payload::<PlacementRecordV2>(Self::WHAT, codec, payload).map(|p| p.upgrade_with(|r| r))),
            _ => None,
        }
    }
}

/// [`PlacementRecord`] of schemas 1 and 2 (`R`: their result), upgraded in memory: schema 1
/// a verdict for every cluster, schema 2 the result's verdicts as plain structs.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct PlacementRecordPlain<R> {
    pub workload: ObjectKey,
    pub policy: Option<PolicyRef>,
    pub result: R,
    pub targets: BTreeMap<String, Option<i32>>,
    pub affinity_name: Option<String>,
    pub files: BTreeMap<String, String>,
    pub history_seq: u64,
    pub decided_at_ms: u64,
}

/// [`PlacementRecord`] of schema 2.
pub(super) type PlacementRecordV2 = PlacementRecordPlain<ScheduleResult>;
/// [`PlacementRecord`] of schema 1.
pub(super) type PlacementRecordV1 = PlacementRecordPlain<ScheduleResultV1>;

impl<R> PlacementRecordPlain<R> {
    /// The record in the current form, its result converted by `result`.
    fn upgrade_with(self, result: impl FnOnce(R) -> ScheduleResult) -> PlacementRecord {
        PlacementRecord {
            workload: self.workload,
            policy: self.policy,
            result: result(self.result),
            targets: self.targets,
            affinity_name: self.affinity_name,
            files: self.files,
            history_seq: self.history_seq,
            decided_at_ms: self.decided_at_ms,
        }
    }
}

/// What the upgrade of a schema 1 record needs to store: the blobs its new form references.
pub(super) struct Upgraded<T> {
    pub record: T,
    /// Blob bytes to store (versions maps and universes).
    pub blobs: Vec<Vec<u8>>,
}

/// [`ClusterVerdict`](crate::schedule::ClusterVerdict) of schema 1: estimator answers as
/// `estimator <name>: <n> more replicas fit` reasons.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct ClusterVerdictV1 {
    pub name: String,
    pub feasible: bool,
    pub reasons: Vec<String>,
    pub score: i64,
    pub scores: Vec<(String, i64)>,
    pub available_replicas: Option<i64>,
    pub replicas: Option<i32>,
    pub selected: bool,
}

/// [`ScheduleResult`] of schema 1: a verdict for every cluster.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct ScheduleResultV1 {
    pub outcome: Outcome,
    pub verdicts: Vec<ClusterVerdictV1>,
    pub affinity_name: Option<String>,
}

/// [`DecisionInputs`] of schema 1: the versions map inline.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct DecisionInputsV1 {
    pub template_hash: u64,
    pub policy_hash: u64,
    pub snapshot_versions: BTreeMap<String, u64>,
    pub previous: BTreeMap<String, i32>,
    pub previous_affinity: Option<String>,
    pub profile: String,
}

/// [`HistoryRecord`] of schema 1.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct HistoryRecordV1 {
    pub seq: u64,
    pub at_ms: u64,
    pub trigger: String,
    pub workload: ObjectKey,
    pub policy: Option<PolicyRef>,
    pub inputs: DecisionInputsV1,
    pub result: ScheduleResultV1,
    pub notes: Vec<String>,
}

/// The bytes of a versions map blob ([`super::Store::put_versions`]).
pub(super) fn versions_blob(versions: &BTreeMap<String, u64>) -> Vec<u8> {
    serde_json::to_vec(versions).unwrap_or_default()
}

impl ScheduleResultV1 {
    /// The compact form: feasible (and dependency-added) verdicts kept, with the estimator
    /// reasons turned into typed estimates; the rest grouped by reasons over the sorted names
    /// of every verdict (the universe, returned as a blob to store).
    pub(super) fn upgrade(self, blobs: &mut Vec<Vec<u8>>) -> ScheduleResult {
        let mut all = self.verdicts;
        all.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<String> = all.iter().map(|v| v.name.clone()).collect();
        let universe = universe_of(&names);
        if universe != 0 {
            blobs.push(names_blob(&names));
        }
        let mut verdicts = Vec::new();
        let mut groups: Vec<(Vec<String>, Vec<UniversePos>)> = Vec::new();
        for (p, v) in all.into_iter().enumerate() {
            if v.feasible || v.selected {
                let mut estimates = Vec::new();
                let mut reasons = Vec::new();
                for r in v.reasons {
                    match parse_estimate(&r) {
                        Some((name, n)) if v.feasible => estimates.push((name.into(), n)),
                        _ => reasons.push(r),
                    }
                }
                verdicts.push(ClusterVerdict {
                    name: v.name,
                    feasible: v.feasible,
                    reasons,
                    score: v.score,
                    scores: v.scores.into_iter().map(|(name, s)| (name.into(), s)).collect(),
                    available_replicas: v.available_replicas,
                    replicas: v.replicas,
                    selected: v.selected,
                    estimates,
                });
                continue;
            }
            match groups.iter_mut().find(|(r, _)| *r == v.reasons) {
                Some((_, m)) => m.push(UniversePos::at(p)),
                None => groups.push((v.reasons, vec![UniversePos::at(p)])),
            }
        }
        ScheduleResult {
            outcome: self.outcome,
            verdicts: verdicts.into(),
            rejected: groups
                .into_iter()
                .map(|(reasons, m)| Rejection { reasons, clusters: ClusterSet::from_sorted(m) })
                .collect(),
            universe,
            affinity_name: self.affinity_name,
        }
    }
}

/// `estimator <name>: <n> more replicas fit` → (name, n): how schema 1 kept estimates.
fn parse_estimate(r: &str) -> Option<(String, i64)> {
    let rest = r.strip_prefix(ESTIMATOR_PREFIX)?;
    let (name, tail) = rest.split_once(": ")?;
    let n: i64 = tail.strip_suffix(" more replicas fit")?.parse().ok()?;
    Some((name.to_string(), n))
}

impl DecisionInputsV1 {
    fn upgrade(self, blobs: &mut Vec<Vec<u8>>) -> DecisionInputs {
        let bytes = versions_blob(&self.snapshot_versions);
        let hash = fnv1a64(&bytes);
        blobs.push(bytes);
        DecisionInputs {
            template_hash: self.template_hash,
            policy_hash: self.policy_hash,
            snapshot_versions: hash,
            previous: self.previous,
            previous_affinity: self.previous_affinity,
            profile: self.profile,
            stability: 0,
        }
    }
}

impl HistoryRecordV1 {
    pub(super) fn upgrade(self) -> Upgraded<HistoryRecord> {
        let mut blobs = Vec::new();
        let record = HistoryRecord {
            seq: self.seq,
            at_ms: self.at_ms,
            trigger: self.trigger,
            workload: self.workload,
            policy: self.policy,
            inputs: self.inputs.upgrade(&mut blobs),
            result: self.result.upgrade(&mut blobs),
            notes: self.notes,
        };
        Upgraded { record, blobs }
    }
}

impl PlacementRecordV1 {
    pub(super) fn upgrade(self) -> Upgraded<PlacementRecord> {
        let mut blobs = Vec::new();
        let record = self.upgrade_with(|r| r.upgrade(&mut blobs));
        Upgraded { record, blobs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec::{bincode_config, decode};

    #[test]
    fn schema_1_snapshots_upgrade_without_node_data() {
        let v1 = ClusterSnapshotV1 {
            name: "m1".into(),
            labels: BTreeMap::new(),
            provider: None,
            region: Some("eu".into()),
            zones: vec![],
            taints: vec![],
            health: Health::Ready,
            source: SnapshotSource::Offline { file: "c.yaml".into() },
            api_enablements: BTreeSet::new(),
            summary: None,
            resource_models: vec![],
        };
        let payload = bincode::serde::encode_to_vec(&v1, bincode_config()).expect("encode");
        let mut bytes = vec![0xF5, 1, 0, 1];
        bytes.extend_from_slice(&payload);
        let snap: ClusterSnapshot = decode(&bytes).expect("schema 1 decodes");
        assert_eq!(snap.region.as_deref(), Some("eu"));
        assert!(snap.nodes.is_empty() && snap.pods.is_none() && snap.poll.is_none());
        let mut bad = bytes.clone();
        bad[3] = 9;
        assert!(decode::<ClusterSnapshot>(&bad).is_err());
    }

    #[test]
    fn schema_2_snapshots_upgrade_without_model_facts() {
        let v2 = ClusterSnapshotV2 {
            name: "m1".into(),
            labels: BTreeMap::new(),
            provider: None,
            region: None,
            zones: vec![],
            taints: vec![],
            health: Health::Ready,
            source: SnapshotSource::Live { endpoint: "https://m1".into() },
            api_enablements: BTreeSet::new(),
            summary: None,
            resource_models: vec![],
            nodes: vec![],
            pods: Some(PodFactsV2 { bound: 3, unbound: 1, unschedulable: BTreeMap::new() }),
            poll: Some(PollFactsV2 { duration_ms: 7, pages: 2, nodes: 0, pods: 4 }),
        };
        let payload = bincode::serde::encode_to_vec(&v2, bincode_config()).expect("encode");
        let mut bytes = vec![0xF5, 1, 0, 2];
        bytes.extend_from_slice(&payload);
        let snap: ClusterSnapshot = decode(&bytes).expect("schema 2 decodes");
        assert_eq!(snap.pods.as_ref().map(|p| (p.bound, p.by_owner.len())), Some((3, 0)));
        assert_eq!(snap.poll.as_ref().map(|p| (p.duration_ms, p.at_ms)), Some((7, 0)));
        assert!(snap.constraints.is_empty() && snap.freshness.is_none());
        // The current schema round-trips, freshness and constraints included.
        let mut cur = snap.clone();
        cur.constraints.max_replicas_per_workload = Some(5);
        cur.freshness = Some(crate::model::Freshness { confidence_ppm: 500_000, ..Default::default() });
        let back: ClusterSnapshot = decode(&crate::store::codec::encode(&cur).expect("encode")).expect("decode");
        assert_eq!(back, cur);
        assert_eq!(back.freshness, cur.freshness);
    }

    #[test]
    fn schema_2_history_records_upgrade_without_a_stability_state() {
        let v2 = HistoryRecordV2 {
            seq: 4,
            at_ms: 5,
            trigger: "timer".into(),
            workload: ObjectKey { api_version: "v1".into(), kind: "Pod".into(), namespace: None, name: "p".into() },
            policy: None,
            inputs: DecisionInputsV2 {
                template_hash: 1,
                policy_hash: 2,
                snapshot_versions: 3,
                previous: [("m1".to_string(), 2)].into(),
                previous_affinity: None,
                profile: "karmada-default".into(),
            },
            result: ScheduleResult::unschedulable("why"),
            notes: vec!["n".into()],
        };
        let payload = bincode::serde::encode_to_vec(&v2, bincode_config()).expect("encode");
        let mut bytes = vec![0xF5, 1, 0, 2];
        bytes.extend_from_slice(&payload);
        let h: HistoryRecord = decode(&bytes).expect("schema 2 decodes");
        assert_eq!((h.seq, h.inputs.snapshot_versions, h.inputs.stability), (4, 3, 0));
        assert_eq!(h.notes, vec!["n".to_string()]);
        let current = HistoryRecord { inputs: DecisionInputs { stability: 9, ..h.inputs.clone() }, ..h };
        let back: HistoryRecord = decode(&crate::store::codec::encode(&current).expect("encode")).expect("decode");
        assert_eq!(back.inputs.stability, 9);
    }

    #[test]
    fn plain_verdicts_of_history_3_and_placement_2_upgrade_to_rows() {
        let verdict = |name: &str, selected: bool| ClusterVerdict {
            name: name.into(),
            feasible: true,
            reasons: vec!["model: 2 of 3 nodes fit".into()],
            score: 100,
            scores: vec![("cluster-locality".into(), 100)],
            available_replicas: Some(4),
            replicas: selected.then_some(2),
            selected,
            estimates: vec![("general".into(), 4)],
        };
        let result = ScheduleResult {
            outcome: Outcome::Scheduled { targets: [("m1".to_string(), Some(2))].into() },
            verdicts: std::sync::Arc::new(vec![verdict("m1", true), verdict("m2", false)]),
            rejected: vec![],
            universe: 7,
            affinity_name: None,
        };
        let workload =
            ObjectKey { api_version: "apps/v1".into(), kind: "Deployment".into(), namespace: None, name: "w".into() };
        let envelope = |schema: u16, payload: Vec<u8>| {
            let mut bytes = vec![0xF5, 1];
            bytes.extend_from_slice(&schema.to_be_bytes());
            bytes.extend(payload);
            bytes
        };
        let v3 = HistoryRecordV3 {
            seq: 4,
            at_ms: 5,
            trigger: "timer".into(),
            workload: workload.clone(),
            policy: None,
            inputs: DecisionInputs {
                template_hash: 1,
                policy_hash: 2,
                snapshot_versions: 3,
                previous: BTreeMap::new(),
                previous_affinity: None,
                profile: "karmada-default".into(),
                stability: 9,
            },
            result: result.clone(),
            notes: vec!["n".into()],
        };
        let bytes = envelope(3, bincode::serde::encode_to_vec(&v3, bincode_config()).expect("encode"));
        let h: HistoryRecord = decode(&bytes).expect("schema 3 decodes");
        assert_eq!((h.seq, h.inputs.stability, &h.result), (4, 9, &result));
        let rewritten = crate::store::codec::encode(&h).expect("encode");
        assert!(rewritten.len() < bytes.len(), "rows {} bytes, plain {} bytes", rewritten.len(), bytes.len());
        assert_eq!(decode::<HistoryRecord>(&rewritten).expect("decode"), h);

        let v2 = PlacementRecordV2 {
            workload,
            policy: None,
            result: result.clone(),
            targets: [("m1".to_string(), Some(2))].into(),
            affinity_name: None,
            files: [("m1".to_string(), "m1/w.yaml".to_string())].into(),
            history_seq: 4,
            decided_at_ms: 5,
        };
        let bytes = envelope(2, bincode::serde::encode_to_vec(&v2, bincode_config()).expect("encode"));
        let p: PlacementRecord = decode(&bytes).expect("placement schema 2 decodes");
        assert_eq!((&p.result, p.history_seq, p.files.len()), (&result, 4, 1));
        assert_eq!(decode::<PlacementRecord>(&crate::store::codec::encode(&p).expect("encode")).expect("decode"), p);
    }

    #[test]
    fn schema_3_snapshots_upgrade_without_pod_states() {
        let v3 = ClusterSnapshotV3 {
            name: "m1".into(),
            labels: BTreeMap::new(),
            provider: None,
            region: None,
            zones: vec![],
            taints: vec![],
            health: Health::Ready,
            source: SnapshotSource::Live { endpoint: "https://m1".into() },
            api_enablements: BTreeSet::new(),
            summary: None,
            resource_models: vec![],
            nodes: vec![],
            pods: Some(PodFactsV3 {
                bound: 2,
                unbound: 1,
                unschedulable: BTreeMap::new(),
                by_owner: [("ReplicaSet/ns/web-1".to_string(), 3)].into(),
            }),
            poll: Some(PollFacts { duration_ms: 7, pages: 2, nodes: 0, pods: 3, at_ms: 9 }),
            constraints: ClusterConstraints { max_replicas_per_workload: Some(4), ..Default::default() },
            freshness: Some(Freshness { polled_at_ms: 9, ..Default::default() }),
        };
        let payload = bincode::serde::encode_to_vec(&v3, bincode_config()).expect("encode");
        let mut bytes = vec![0xF5, 1, 0, 3];
        bytes.extend_from_slice(&payload);
        let snap: ClusterSnapshot = decode(&bytes).expect("schema 3 decodes");
        let pods = snap.pods.as_ref().expect("pods");
        assert_eq!((pods.bound, pods.by_owner.get("ReplicaSet/ns/web-1"), pods.owners.len()), (2, Some(&3), 0));
        assert_eq!(snap.poll.as_ref().map(|p| p.at_ms), Some(9));
        assert_eq!(snap.constraints.max_replicas_per_workload, Some(4));
        assert_eq!(snap.freshness.map(|f| f.polled_at_ms), Some(9));
        // The current schema round-trips the owners' states.
        let mut cur = snap.clone();
        if let Some(p) = cur.pods.as_mut() {
            Arc::make_mut(p).owners.insert(
                "ReplicaSet/ns/web-1".into(),
                crate::model::OwnerState {
                    pods: 3,
                    bound: 2,
                    running: 2,
                    ready: 1,
                    unschedulable_since: vec![5],
                    not_ready_since: vec![5, 8],
                    pending_reasons: [("Unschedulable".to_string(), 1), ("Starting".to_string(), 1)].into(),
                },
            );
        }
        let back: ClusterSnapshot = decode(&crate::store::codec::encode(&cur).expect("encode")).expect("decode");
        assert_eq!(back, cur);
    }
}
