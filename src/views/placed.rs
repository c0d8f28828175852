//! The current placements as the read side sees them ([`Placed`]): the daemon publishes one
//! with the status after every good pass, made from the placements its reconciler already
//! holds in memory (`Reconciler::placements`: the `Arc`s of the pass, not read again from
//! the store), so that a page or an API answer reads what the pass holds instead of decoding
//! every placement from sled. What a view needs beyond one placement is derived on first use
//! and kept with it (one build per pass, on a reader's thread, never on the pass's):
//!
//! - the placements in store order ([`crate::policy::ObjectKey::store_key`]) with an index by
//!   workload (kind case-insensitive, namespace, name), by namespace, by policy name, by
//!   target cluster, and the unschedulable ones (the matrix pages from them without looking
//!   at the other rows);
//! - the replicas per cluster (`/api/v1/clusters`, the status);
//! - which workloads require which (the explain's `requiredBy`, [`Placed::required_by`]);
//! - the resources document's figures of the pass's snapshots ([`Placed::figures`]: per
//!   member its amounts, normalised CPU from its nodes, GPUs by model; the Fleet page's),
//!   which the API makes as soon as the pass is published, on its own thread, from the last
//!   pass's (only the members whose data changed are figured again);
//! - each cluster's workloads document ([`crate::views::placements::cluster_workloads`]),
//!   kept for the last [`ON_CLUSTER_KEPT`] clusters asked for.
//!
//! A `Placed` never changes once published: the next pass publishes another one (an `Arc`
//! swapped in the status), so a reader holds no lock a pass waits for, and a pass never
//! waits for a reader. [`Placed::examined`] counts the placements the views read from it
//! (the index builds apart), so a test can show that a page's work does not grow with the
//! number of workloads.
//!
//! The CLI reads the store ([`Source::Store`]: a placement by its key, or every placement to
//! match a reference, as before); the daemon's views read a `Placed` ([`Source::Pass`]). One
//! implementation per view serves both.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::policy::ObjectKey;
use crate::schedule::Outcome;
use crate::store::{PlacementRecord, Store, StoreError};
use crate::views::explain::WorkloadRef;

/// How many clusters' workloads documents a [`Placed`] keeps.
pub const ON_CLUSTER_KEPT: usize = 64;

/// Which workloads require which (dependency → the workloads that need it).
pub type RequiredBy = BTreeMap<ObjectKey, Vec<ObjectKey>>;

/// The placements of one pass with the indexes the views read them by (module docs).
#[derive(Default)]
pub struct Placed {
    given: Vec<Arc<PlacementRecord>>,
    index: OnceLock<Index>,
    replicas: OnceLock<BTreeMap<String, i64>>,
    required_by: OnceLock<RequiredBy>,
    figures: OnceLock<Arc<crate::views::resources::Figures>>,
    on_cluster: Mutex<Vec<(String, Arc<serde_json::Value>)>>,
    examined: AtomicU64,
    builds: AtomicU64,
}

impl std::fmt::Debug for Placed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Placed").field("placements", &self.given.len()).finish_non_exhaustive()
    }
}

/// The derived order and indexes (positions in `all`, ascending: store order).
#[derive(Default)]
struct Index {
    all: Vec<Arc<PlacementRecord>>,
    by_workload: HashMap<(String, Option<String>, String), Vec<u32>>,
    by_namespace: HashMap<Option<String>, Vec<u32>>,
    by_policy: HashMap<String, Vec<u32>>,
    by_cluster: HashMap<String, Vec<u32>>,
    unschedulable: Vec<u32>,
    /// Every cluster some placement targets, in name order.
    targeted: Vec<String>,
}

impl Placed {
    /// The placements of a pass, in any order.
    pub fn new(placements: Vec<Arc<PlacementRecord>>) -> Placed {
        Placed { given: placements, ..Default::default() }
    }

    /// Every placement the store holds (one read of the whole tree: for a process without a
    /// pass, as the daemon before its first good one).
    pub fn from_store(store: &Store) -> Result<Placed, StoreError> {
        Ok(Placed::new(store.placements()?.into_iter().map(Arc::new).collect()))
    }

    /// How many placements.
    pub fn len(&self) -> usize {
        self.given.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.given.is_empty()
    }

    /// Placements the views read from this one since it was made (the index builds apart).
    pub fn examined(&self) -> u64 {
        self.examined.load(Ordering::Relaxed)
    }

    /// How many times the index, the replicas or the dependency map was built (once each at
    /// most).
    pub fn builds(&self) -> u64 {
        self.builds.load(Ordering::Relaxed)
    }

    fn count(&self, n: usize) {
        self.examined.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            self.builds.fetch_add(1, Ordering::Relaxed);
            Index::of(&self.given)
        })
    }

    /// The placement at a store-order position (counted as examined).
    pub fn at(&self, i: u32) -> &Arc<PlacementRecord> {
        self.count(1);
        &self.index().all[i as usize]
    }

    /// The placements a reference names (kind case-insensitive), in store order.
    pub fn matching(&self, r: &WorkloadRef) -> Vec<Arc<PlacementRecord>> {
        let key = (r.kind.to_ascii_lowercase(), r.namespace.clone(), r.name.clone());
        let index = self.index();
        let found = index.by_workload.get(&key).map(Vec::as_slice).unwrap_or_default();
        found.iter().map(|&i| Arc::clone(self.at(i))).collect()
    }

    /// A workload's placement.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<PlacementRecord>> {
        let r = WorkloadRef {
            kind: key.kind.to_string(),
            namespace: key.namespace.as_deref().map(str::to_string),
            name: key.name.to_string(),
        };
        self.matching(&r).into_iter().find(|p| p.workload == *key)
    }

    /// The policy of a workload's placement, not counted as examined: for the derived maps
    /// ([`Placed::required_by`]), made once per pass.
    pub fn policy_of(&self, key: &ObjectKey) -> Option<crate::policy::PolicyRef> {
        let index = self.index();
        let found = index.by_workload.get(&(
            key.kind.to_ascii_lowercase().to_string(),
            key.namespace.as_deref().map(str::to_string),
            key.name.to_string(),
        ))?;
        found.iter().map(|&i| &index.all[i as usize]).find(|p| p.workload == *key)?.policy.clone()
    }

    /// Number of placements in store order (positions `0..len`).
    pub fn positions(&self) -> std::ops::Range<u32> {
        0..self.index().all.len() as u32
    }

    /// Positions of the placements of a namespace (`None`: cluster-scoped).
    pub fn in_namespace(&self, ns: Option<&str>) -> &[u32] {
        self.index().by_namespace.get(&ns.map(str::to_string)).map(Vec::as_slice).unwrap_or_default()
    }

    /// Positions of the placements claimed by a policy of this name.
    pub fn of_policy(&self, name: &str) -> &[u32] {
        self.index().by_policy.get(name).map(Vec::as_slice).unwrap_or_default()
    }

    /// Positions of the placements that target a cluster.
    pub fn on_cluster(&self, cluster: &str) -> &[u32] {
        self.index().by_cluster.get(cluster).map(Vec::as_slice).unwrap_or_default()
    }

    /// Positions of the unschedulable placements.
    pub fn unschedulable(&self) -> &[u32] {
        &self.index().unschedulable
    }

    /// Every cluster some placement targets, in name order.
    pub fn targeted(&self) -> &[String] {
        &self.index().targeted
    }

    /// Replicas placed on each cluster.
    pub fn replicas_by_cluster(&self) -> &BTreeMap<String, i64> {
        self.replicas.get_or_init(|| {
            self.builds.fetch_add(1, Ordering::Relaxed);
            crate::views::report::replicas_by_cluster(self.given.iter().map(|p| &**p))
        })
    }

    /// Which workloads require which, made by `make` the first time (the caller's inputs are
    /// the pass's, as this is).
    pub fn required_by(&self, make: impl FnOnce() -> RequiredBy) -> &RequiredBy {
        self.required_by.get_or_init(|| {
            self.builds.fetch_add(1, Ordering::Relaxed);
            make()
        })
    }

    /// The resources document's figures of the pass's snapshots, made by `make` the first
    /// time (the caller's snapshots are the pass's, as this is). The API makes them on its own
    /// blocking thread as soon as a pass is published, from the last pass's
    /// (`api::prepare_passes`); a reader that asks meanwhile waits for those.
    pub fn figures(
        &self,
        make: impl FnOnce() -> crate::views::resources::Figures,
    ) -> &crate::views::resources::Figures {
        self.figures.get_or_init(|| {
            self.builds.fetch_add(1, Ordering::Relaxed);
            Arc::new(make())
        })
    }

    /// The figures, when made already.
    pub fn figures_made(&self) -> Option<Arc<crate::views::resources::Figures>> {
        self.figures.get().cloned()
    }

    /// A cluster's workloads document, kept with this pass for the last [`ON_CLUSTER_KEPT`]
    /// clusters asked for (made by `make` otherwise).
    pub fn cluster_document<E>(
        &self,
        cluster: &str,
        make: impl FnOnce() -> Result<serde_json::Value, E>,
    ) -> Result<Arc<serde_json::Value>, E> {
        let kept = |list: &Vec<(String, Arc<serde_json::Value>)>| {
            list.iter().find(|(c, _)| c == cluster).map(|(_, d)| Arc::clone(d))
        };
        if let Some(d) = kept(&self.on_cluster.lock().unwrap_or_else(|p| p.into_inner())) {
            return Ok(d);
        }
        // Made without the lock held: two readers of one cluster may both make it.
        let doc = Arc::new(make()?);
        let mut list = self.on_cluster.lock().unwrap_or_else(|p| p.into_inner());
        if kept(&list).is_none() {
            if list.len() >= ON_CLUSTER_KEPT {
                list.remove(0);
            }
            list.push((cluster.to_string(), Arc::clone(&doc)));
        }
        Ok(doc)
    }
}

impl Index {
    fn of(given: &[Arc<PlacementRecord>]) -> Index {
        let mut keyed: Vec<(String, &Arc<PlacementRecord>)> =
            given.iter().map(|p| (p.workload.store_key(), p)).collect();
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut index = Index::default();
        let mut targeted = std::collections::BTreeSet::new();
        for (i, (_, p)) in keyed.into_iter().enumerate() {
            let i = i as u32;
            let w = &p.workload;
            let ns = w.namespace.as_deref().map(str::to_string);
            index
                .by_workload
                .entry((w.kind.to_ascii_lowercase().to_string(), ns.clone(), w.name.to_string()))
                .or_default()
                .push(i);
            index.by_namespace.entry(ns).or_default().push(i);
            if let Some(policy) = &p.policy {
                index.by_policy.entry(policy.name.clone()).or_default().push(i);
            }
            for c in p.targets.keys() {
                match index.by_cluster.get_mut(c) {
                    Some(list) => list.push(i),
                    None => {
                        index.by_cluster.insert(c.clone(), vec![i]);
                        targeted.insert(c.clone());
                    }
                }
            }
            if matches!(p.result.outcome, Outcome::Unschedulable { .. }) {
                index.unschedulable.push(i);
            }
            index.all.push(Arc::clone(p));
        }
        index.targeted = targeted.into_iter().collect();
        index
    }
}

/// Where a view reads placements: the store, one at a time (the CLI), or a pass's
/// [`Placed`] (the daemon).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Store(&'a Store),
    Pass(&'a Placed),
}

impl Source<'_> {
    /// A workload's placement.
    pub fn placement(&self, key: &ObjectKey) -> Result<Option<Arc<PlacementRecord>>, StoreError> {
        match self {
            Source::Store(s) => Ok(s.placement(key)?.map(Arc::new)),
            Source::Pass(p) => Ok(p.get(key)),
        }
    }

    /// The placements a reference names, in store order.
    pub fn matching(&self, r: &WorkloadRef) -> Result<Vec<Arc<PlacementRecord>>, StoreError> {
        match self {
            Source::Store(s) => {
                Ok(s.placements()?.into_iter().filter(|p| r.matches(&p.workload)).map(Arc::new).collect())
            }
            Source::Pass(p) => Ok(p.matching(r)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{PolicyKind, PolicyRef};
    use crate::schedule::ScheduleResult;

    fn placement(ns: &str, name: &str, on: &[&str]) -> Arc<PlacementRecord> {
        let targets: BTreeMap<String, Option<i32>> = on.iter().map(|c| (c.to_string(), Some(2))).collect();
        Arc::new(PlacementRecord {
            workload: ObjectKey {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some(ns.into()),
                name: name.into(),
            },
            policy: Some(PolicyRef {
                kind: PolicyKind::PropagationPolicy,
                namespace: Some(ns.into()),
                name: "p".into(),
            }),
            result: ScheduleResult {
                outcome: if on.is_empty() {
                    Outcome::Unschedulable { reason: "none fits".into() }
                } else {
                    Outcome::Scheduled { targets: targets.clone() }
                },
                verdicts: Default::default(),
                rejected: Vec::new(),
                universe: 0,
                affinity_name: None,
            },
            files: BTreeMap::new(),
            targets,
            affinity_name: None,
            history_seq: 0,
            decided_at_ms: 0,
        })
    }

    #[test]
    fn the_index_is_in_store_order_and_finds_by_workload_namespace_policy_and_cluster() {
        let given =
            vec![placement("b", "web", &["m2"]), placement("a", "api", &["m1", "m2"]), placement("a", "job", &[])];
        let placed = Placed::new(given);
        assert_eq!(placed.builds(), 0, "nothing is built before a view asks");
        let names: Vec<String> = placed.positions().map(|i| placed.at(i).workload.name.to_string()).collect();
        assert_eq!(names, ["api", "job", "web"], "store order");
        assert_eq!(placed.in_namespace(Some("a")), &[0, 1]);
        assert_eq!(placed.of_policy("p"), &[0, 1, 2]);
        assert_eq!(placed.on_cluster("m2"), &[0, 2]);
        assert_eq!(placed.unschedulable(), &[1]);
        assert_eq!(placed.targeted(), ["m1", "m2"]);
        assert_eq!(placed.replicas_by_cluster().get("m2"), Some(&4));
        let r = WorkloadRef { kind: "deployment".into(), namespace: Some("b".into()), name: "web".into() };
        assert_eq!(placed.matching(&r).len(), 1);
        assert_eq!(placed.builds(), 2, "the index and the replicas, once each");
    }
}
