//! What fedsched knows about one member cluster at one moment: the [`ClusterSnapshot`].
//!
//! A snapshot is produced by a member source (offline Cluster status today, the live poller
//! next) and is what the scheduler and the store see. It holds no time of observation so that
//! identical content hashes identically; the time lives beside it ([`Observed`]).

use std::collections::{BTreeMap, BTreeSet};

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
    pub api_enablements: BTreeSet<String>,
    /// Summary-level capacity, when known.
    pub summary: Option<ResourceSummary>,
    pub resource_models: Vec<ModelGrade>,
}

impl ClusterSnapshot {
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
    pub fn content_hash(&self) -> u64 {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        crate::model::fnv1a64(&bytes)
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
