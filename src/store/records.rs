//! The records the store keeps. All are bincode-friendly: plain structs and enums, no
//! `skip_serializing_if`, `flatten`, `untagged` or `serde_json::Value` (JSON inputs live in
//! blobs, referenced by hash).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::StoreError;
use super::codec::{Codec, Versioned, decode_payload};
use crate::model::snapshot::{ModelGrade, ResourceSummary};
use crate::model::{
    ClusterConstraints, ClusterSnapshot, ClusterTaint, Health, NodeView, PodFacts, PollFacts, SnapshotSource,
};
use crate::policy::{ObjectKey, PolicyRef};
use crate::schedule::ScheduleResult;

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
    /// Cluster → snapshot version used.
    pub snapshot_versions: BTreeMap<String, u64>,
    /// Replicas per cluster of the previous decision.
    pub previous: BTreeMap<String, i32>,
    /// The `clusterAffinities` term in force before the decision.
    pub previous_affinity: Option<String>,
    /// Name of the scheduling profile (plugin set and weights).
    pub profile: String,
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
    /// The decision with every cluster's verdict and reasons.
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
    /// The last result, scheduled or not.
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

impl Versioned for SnapshotMeta {
    const WHAT: &'static str = "snapshot meta";
    const SCHEMA: u16 = 1;
}

impl Versioned for ClusterSnapshot {
    const WHAT: &'static str = "cluster snapshot";
    /// 2: node-level data, pod counts and poll facts (live members).
    /// 3: pods by owner, poll time, cluster constraints, freshness (the resource model).
    const SCHEMA: u16 = 3;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        match schema {
            1 => Some(decode_payload::<ClusterSnapshotV1>(Self::WHAT, codec, payload).map(ClusterSnapshotV1::upgrade)),
            2 => Some(decode_payload::<ClusterSnapshotV2>(Self::WHAT, codec, payload).map(ClusterSnapshotV2::upgrade)),
            _ => None,
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
            api_enablements: self.api_enablements,
            summary: self.summary,
            resource_models: self.resource_models,
            nodes: self.nodes,
            pods: self.pods.map(|p| PodFacts {
                bound: p.bound,
                unbound: p.unbound,
                unschedulable: p.unschedulable,
                by_owner: BTreeMap::new(),
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
            api_enablements: self.api_enablements,
            summary: self.summary,
            resource_models: self.resource_models,
            nodes: Vec::new(),
            pods: None,
            poll: None,
            constraints: ClusterConstraints::default(),
            freshness: None,
            index: Default::default(),
        }
    }
}

impl Versioned for HistoryRecord {
    const WHAT: &'static str = "history record";
    const SCHEMA: u16 = 1;
}

impl Versioned for PlacementRecord {
    const WHAT: &'static str = "placement record";
    const SCHEMA: u16 = 1;
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
}
