//! What a publish is asked to do ([`PublishPlan`], [`ClusterFiles`]) and what it did
//! ([`PublishReport`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::HeldCluster;

/// Everything one reconcile wants in the output directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishPlan {
    /// Desired content per cluster name. Clusters absent here are left untouched.
    pub clusters: BTreeMap<String, ClusterFiles>,
    /// Bytes for `OUT/.fedsched/placements.json`; `None` leaves any existing summary alone.
    pub summary: Option<String>,
}

/// The desired files of one cluster directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterFiles {
    /// Object files by path relative to the cluster directory (`default/apps_deployment_web.yaml`),
    /// each content beginning with [`crate::render::GENERATED_HEADER`] on its own line.
    pub files: BTreeMap<String, String>,
    /// Relative paths of existing files that must be kept (and stay listed in the
    /// kustomization) although they are not in `files`, e.g. a workload that failed to
    /// schedule or render keeps its previous output.
    pub keep: BTreeSet<String>,
}

/// What a publish did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishReport {
    /// Files created or replaced, sorted.
    pub written: Vec<PathBuf>,
    /// Files deleted, sorted.
    pub removed: Vec<PathBuf>,
    /// Number of desired files whose bytes were already on disk (not rewritten).
    pub unchanged: usize,
    /// Clusters the mass-deletion guard held: nothing in their directories changed.
    pub held: Vec<HeldCluster>,
}
