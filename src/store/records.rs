//! The records the store keeps. All are bincode-friendly: plain structs and enums, no
//! `skip_serializing_if`, `flatten`, `untagged` or `serde_json::Value` (JSON inputs live in
//! blobs, referenced by hash).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::codec::Versioned;
use crate::model::{ClusterSnapshot, Health};
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
    const SCHEMA: u16 = 1;
}

impl Versioned for HistoryRecord {
    const WHAT: &'static str = "history record";
    const SCHEMA: u16 = 1;
}

impl Versioned for PlacementRecord {
    const WHAT: &'static str = "placement record";
    const SCHEMA: u16 = 1;
}
