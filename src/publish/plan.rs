//! What a publish is asked to do ([`PublishPlan`], [`ClusterFiles`]) and what it did
//! ([`PublishReport`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::HeldCluster;

/// Everything one reconcile wants in the output directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishPlan {
    /// Desired content per cluster name. Clusters absent here are left untouched.
    pub clusters: BTreeMap<String, ClusterFiles>,
    /// The summary's shard files to publish (`OUT/.fedsched/placements/<xx>.json`); `None`
    /// leaves the summary alone.
    pub summary: Option<SummaryPlan>,
    /// The files of every workload that is still placed: its key → the paths (relative to a
    /// cluster directory) of its files and kept files. A removal of one of these paths is a
    /// decision's (a move, a purge after graceful eviction, a scale-down): the ratio guard does
    /// not count it. A workload with any change in a held cluster has all its changes held, in
    /// every cluster (a move is all or nothing). Empty: every removal counts. Shared: the
    /// reconciler keeps it between passes and changes only the entries of changed decisions.
    pub owners: Arc<Owners>,
    /// The format of each cluster directory's index files ([`crate::render::layout`]): the
    /// publisher writes them after the directory's objects and never removes one.
    pub layout: crate::render::layout::Layout,
    /// Every cluster of the pass, for the layout's root files
    /// ([`crate::render::layout::Layout::root_files`]): each one whose directory exists once
    /// published gets its root files, and the generated root files of any other cluster are
    /// removed. `None` leaves the root files alone.
    pub roots: Option<BTreeSet<String>>,
}

/// The shard files of the placement summary a publish writes ([`crate::render::summary`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryPlan {
    /// Shard file name (`00.json`) → its bytes. Shared: the reconciler keeps the shards it
    /// publishes.
    pub shards: BTreeMap<String, Arc<String>>,
    /// Each shard is compared with the disk's copy and written only when it differs, and the
    /// single `placements.json` of earlier versions is removed: a full check, or the first
    /// publish of a process. Otherwise the shards differ from those this process last
    /// published, which it takes to be on the disk: written without reading the disk.
    pub compare: bool,
    /// Per shard file name, the entries of the workloads this publish removes (their template
    /// or policy deleted): each entry's line ([`crate::render::summary::summary_item`]) and
    /// the files its removal deletes (`cluster/path`). A removal the mass-deletion guard holds
    /// keeps its files, and so its entry: the shard is published with it, so that a new leader
    /// adopts the placement whose files stay (`[ha]`, invariant 3 of issue 46). Each such
    /// shard is in `shards`.
    pub removals: BTreeMap<String, Vec<(String, Vec<String>)>>,
}

/// [`PublishPlan::owners`]: per workload key, the paths of its files and kept files.
pub type Owners = BTreeMap<String, BTreeSet<String>>;

/// The desired files of one cluster directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterFiles {
    /// Object files by path relative to the cluster directory (`default/apps_deployment_web.yaml`),
    /// each content beginning with [`crate::render::GENERATED_HEADER`] on its own line.
    pub files: BTreeMap<String, String>,
    /// Relative paths of existing files that must be kept (and stay named by the cluster's
    /// index) although they are not in `files`, e.g. a workload that failed to
    /// schedule or render keeps its previous output.
    pub keep: BTreeSet<String>,
    /// Paths of `keep` that the caller read on the disk in this pass and found to hold bytes
    /// it rendered (so beginning with [`crate::render::GENERATED_HEADER`]): the publish counts
    /// them as generated without reading their first line again.
    pub generated: BTreeSet<String>,
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
    /// Of the planned files found with their bytes (paths relative to the output root, `/`
    /// separated): the stat of each that proves them from now on
    /// ([`crate::util::stat::FileStat::settled_at`]), so that a later check can stat the file
    /// instead of reading it.
    pub stats: std::collections::HashMap<String, crate::util::stat::FileStat>,
    /// Clusters the mass-deletion guard held: nothing in their directories changed.
    pub held: Vec<HeldCluster>,
    /// Workloads with a change in a held cluster, whose changes in other clusters were held
    /// with it (all or nothing), in key order.
    pub held_moves: Vec<HeldMove>,
    /// Objects no placed workload owns any more whose removal a held cluster held, kept on
    /// the other clusters too (a deletion applies to every cluster or none), in path order.
    pub held_removals: Vec<HeldRemoval>,
}

/// The removal of an object no placed workload owns (its template or policy deleted) that a
/// held cluster held, and so every other cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldRemoval {
    /// The object's file, relative to a cluster directory.
    pub path: String,
    /// The held clusters that hold its removal.
    pub held: BTreeSet<String>,
    /// The other clusters where its removal waited with them.
    pub waiting: BTreeSet<String>,
}

impl std::fmt::Display for HeldRemoval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |s: &BTreeSet<String>| s.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
        write!(
            f,
            "{}: its removal from {} waits for held {} (a deletion applies to every cluster or none)",
            self.path,
            join(&self.waiting),
            join(&self.held)
        )
    }
}

/// A workload's change held whole because one of its clusters was held: nothing of it was
/// published (its placement, history and engine state stay as last published).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldMove {
    /// The workload's key ([`PublishPlan::owners`]).
    pub owner: String,
    /// The held clusters where it had a change (or a kept file).
    pub held: BTreeSet<String>,
    /// The other clusters where its changes waited with them (empty: its change was only on
    /// held clusters).
    pub waiting: BTreeSet<String>,
}

impl std::fmt::Display for HeldMove {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |s: &BTreeSet<String>| s.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
        if self.waiting.is_empty() {
            return write!(
                f,
                "{}: its change on held {} waits (a move is all or nothing)",
                self.owner,
                join(&self.held)
            );
        }
        write!(
            f,
            "{}: its changes on {} wait for held {} (a move is all or nothing)",
            self.owner,
            join(&self.waiting),
            join(&self.held)
        )
    }
}
