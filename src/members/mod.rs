//! Member clusters: where cluster state comes from (the "poll" stage).
//!
//! Owns: turning what fedsched knows about a member into a [`ClusterSnapshot`].
//!
//! - [`offline`]: a Cluster object without live access is described by its own `.status`.
//! - [`live`]: the poller: lists Nodes and Pods from each member's Kubernetes API (paginated,
//!   with read timeouts, a per-poll deadline, bounded concurrency and backoff) and keeps, per
//!   cluster, the last good observation and the last error ([`live::LiveView`]).
//! - [`decode`]: narrow decoding of list pages (only what the model needs) and the fold of
//!   pages into an observation.
//!
//! [`apply_live`] merges a [`live::LiveView`] into the offline snapshots: the Cluster object
//! still gives the name, labels, provider, region, zones, taints and resource models; the
//! poll gives health, nodes, pod counts and the resource summary (computed as Karmada's
//! cluster status controller does), and the member's discovery documents the APIs it serves
//! (until a discovery succeeded: the last stored live list, else the Cluster object's
//! `status.apiEnablements`, else none — taken to serve every API). A failing cluster keeps
//! its last observation (in memory, or the last live snapshot in the store after a restart)
//! and its API list, with health `Unreachable` (or
//! `NotReady` for a 401/403: the API answered but refused) and Karmada's matching
//! `NoSchedule` taint, so it receives nothing new but keeps what it has.

pub mod decode;
pub mod live;
pub mod offline;

use std::sync::Arc;

pub use offline::offline_snapshot;

use crate::model::snapshot::ResourceSummary;
use crate::model::{ClusterSnapshot, ClusterTaint, Freshness, Health, SnapshotSource};
use crate::policy::PolicySet;
use crate::policy::types::TaintEffect;
use live::{LiveData, LiveView};

/// Karmada's taint for clusters whose Ready condition is not True.
pub const TAINT_NOT_READY: &str = "cluster.karmada.io/not-ready";
/// Karmada's taint for clusters that cannot be reached.
pub const TAINT_UNREACHABLE: &str = "cluster.karmada.io/unreachable";

/// The resource summary of a member's live data ([`ResourceSummary::from_nodes`], Karmada's
/// cluster status summary), kept with what it was computed from: the same node list (the same
/// `Arc`: the poller keeps a member's list while its nodes are unchanged), unbound requests
/// and resource models give it again without a walk of every node. Shared by the copies of a
/// [`LiveView`] (the daemon hands one to each pass), so a quiet member's summary is computed
/// once, not on every pass.
#[derive(Debug, Default, Clone)]
pub struct SummaryMemo(Arc<std::sync::Mutex<Option<Summarised>>>);

#[derive(Debug)]
struct Summarised {
    nodes: Arc<Vec<crate::model::NodeView>>,
    unbound: crate::model::ResourceList,
    unbound_pods: u32,
    unlisted: crate::model::ResourceList,
    models: Vec<crate::model::snapshot::ModelGrade>,
    summary: Arc<ResourceSummary>,
}

impl SummaryMemo {
    /// The summary of `data` under `models`: the kept one when it was computed from the same.
    /// The kept one is shared, not copied: every pass's snapshot of the member holds it.
    pub fn of(&self, data: &LiveData, models: &[crate::model::snapshot::ModelGrade]) -> Arc<ResourceSummary> {
        // The unbound pods' requests without their `pods` entry (counted apart).
        let unbound_requests = || data.unbound.0.iter().filter(|(name, _)| name.as_str() != "pods");
        let mut memo = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(m) = memo.as_ref()
            && Arc::ptr_eq(&m.nodes, &data.nodes)
            && m.unbound.0.iter().eq(unbound_requests())
            && m.unbound_pods == data.pods.unbound
            && m.unlisted == data.unlisted
            && m.models == models
        {
            return Arc::clone(&m.summary);
        }
        let unbound = crate::model::ResourceList(unbound_requests().map(|(k, v)| (k.clone(), *v)).collect());
        let summary = Arc::new(
            ResourceSummary::from_nodes(&data.nodes, &unbound, data.pods.unbound, models).with_unlisted(&data.unlisted),
        );
        *memo = Some(Summarised {
            nodes: Arc::clone(&data.nodes),
            unbound,
            unbound_pods: data.pods.unbound,
            unlisted: data.unlisted.clone(),
            models: models.to_vec(),
            summary: Arc::clone(&summary),
        });
        summary
    }
}

/// Replaces the snapshot of every cluster in `view` by its live form. `stored` returns the last
/// stored snapshot of a cluster (used when a cluster fails before any poll of this process
/// succeeded); only a live one is reused.
pub fn apply_live(
    set: &PolicySet,
    snapshots: &mut [ClusterSnapshot],
    view: &LiveView,
    stored: impl Fn(&str) -> Option<ClusterSnapshot>,
) {
    for snap in snapshots.iter_mut() {
        let Some(status) = view.clusters.get(&snap.name) else { continue };
        let Some(cluster) = set.cluster(&snap.name) else { continue };
        // The last live snapshot in the store, read only when this process lacks something:
        // an observation, or an API list after a discovery that failed.
        let no_apis = status.apis.is_none() && status.discovery_error.is_some();
        let stored_live = (status.last_good.is_none() || no_apis)
            .then(|| stored(&snap.name))
            .flatten()
            .filter(|s| matches!(s.source, SnapshotSource::Live { .. }));
        let (stored_data, stored_apis) = match stored_live {
            Some(s) => (
                Some(Arc::new({
                    let summary = s.summary.map(Arc::unwrap_or_clone).unwrap_or_default();
                    let unlisted = summary.unlisted(&s.nodes);
                    LiveData {
                        nodes: s.nodes,
                        unbound: summary.allocating,
                        pods: s.pods.unwrap_or_default(),
                        unlisted,
                        poll: s.poll.unwrap_or_default(),
                    }
                })),
                Some(s.api_enablements).filter(|a| !a.is_empty()),
            ),
            None => (None, None),
        };
        let last: Option<Arc<LiveData>> = status.last_good.clone().or(stored_data);
        // The APIs it serves: its last discovery, else the last stored live list, else the
        // Cluster object's own `status.apiEnablements` (empty: taken to serve every API).
        match (&status.apis, stored_apis) {
            (Some(apis), _) => snap.api_enablements = Arc::clone(apis),
            (None, Some(apis)) => snap.api_enablements = apis,
            (None, None) => {}
        }
        let health = match &status.error {
            None => Health::Ready,
            Some(e) => e.health(),
        };
        let spec_taint = |key: &str| cluster.spec.taints.iter().any(|t| t.key == key);
        snap.taints.retain(|t| (t.key != TAINT_NOT_READY && t.key != TAINT_UNREACHABLE) || spec_taint(&t.key));
        let synthetic = match &health {
            Health::Ready => None,
            Health::NotReady { .. } => Some(TAINT_NOT_READY),
            Health::Unreachable { .. } => Some(TAINT_UNREACHABLE),
        };
        if let Some(key) = synthetic
            && !snap.taints.iter().any(|t| t.key == key)
        {
            snap.taints.push(ClusterTaint { key: key.to_string(), value: None, effect: TaintEffect::NoSchedule });
        }
        snap.health = health;
        snap.source = SnapshotSource::Live { endpoint: status.endpoint.clone() };
        snap.summary_free.reset();
        match last {
            Some(data) => {
                snap.summary = Some(status.summary.of(&data, &snap.resource_models));
                snap.nodes = data.nodes.clone();
                snap.pods = Some(data.pods.clone());
                snap.poll = Some(data.poll.clone());
            }
            None => {
                // Never seen: nothing is known about its capacity.
                snap.summary = Some(Arc::default());
                snap.nodes = Arc::default();
                snap.pods = None;
                snap.poll = None;
            }
        }
        // Age and confidence are computed by the pass (it knows the time and the settings).
        snap.freshness = Some(Freshness {
            polled_at_ms: snap.poll.as_ref().map_or(0, |p| p.at_ms),
            consecutive_failures: status.consecutive_failures,
            age_ms: 0,
            confidence_ppm: 1_000_000,
        });
        snap.index.reset();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use super::*;
    use live::{LiveStatus, PollError};

    fn set(with_list: bool) -> PolicySet {
        let status = if with_list {
            "status:\n  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]\n"
        } else {
            ""
        };
        let doc = format!(
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: m}}\nspec: {{syncMode: Push}}\n{status}"
        );
        let (set, errors) = crate::policy::load::load_sources([(PathBuf::from("c.yaml"), doc)]);
        assert!(errors.is_empty(), "{errors:?}");
        set
    }

    /// The kept summary is the one [`ResourceSummary::from_nodes`] gives for what is asked
    /// now, whatever was asked before: the same list, a changed list, other unbound requests,
    /// other resource models.
    #[test]
    fn the_summary_memo_answers_as_a_fresh_summary_does() {
        use crate::model::snapshot::{ModelGrade, PollFacts};
        use crate::model::{NodeView, PodFacts, ResourceList};

        let node = |name: &str, cpu: i64| NodeView::ready(name, ResourceList::of(&[("cpu", cpu), ("memory", 8 << 30)]));
        let data = |nodes: Arc<Vec<NodeView>>, unbound: i64, pending: u32| LiveData {
            nodes,
            unbound: ResourceList::of(&[("cpu", unbound), ("pods", 7000)]),
            pods: Arc::new(PodFacts { unbound: pending, ..Default::default() }),
            unlisted: ResourceList::of(&[("cpu", 300), ("pods", 2000)]),
            poll: PollFacts::default(),
        };
        let grades = |min: i64| {
            vec![
                ModelGrade { grade: 0, ranges: vec![("cpu".into(), 0, min)] },
                ModelGrade { grade: 1, ranges: vec![("cpu".into(), min, i64::MAX)] },
            ]
        };
        let fresh = |d: &LiveData, models: &[ModelGrade]| {
            let mut unbound = d.unbound.clone();
            unbound.0.remove("pods");
            ResourceSummary::from_nodes(&d.nodes, &unbound, d.pods.unbound, models).with_unlisted(&d.unlisted)
        };
        let memo = SummaryMemo::default();
        let nodes = Arc::new(vec![node("a", 4000), node("b", 1000)]);
        let mut cases = vec![
            (data(Arc::clone(&nodes), 500, 1), grades(2000)),
            (data(Arc::clone(&nodes), 500, 1), grades(2000)),
            (data(Arc::clone(&nodes), 900, 1), grades(2000)),
            (data(Arc::clone(&nodes), 900, 3), grades(2000)),
            (data(Arc::clone(&nodes), 900, 3), grades(500)),
        ];
        let mut changed = (*nodes).clone();
        changed[1] = node("b", 3000);
        cases.push((data(Arc::new(changed), 900, 3), grades(500)));
        for (i, (d, models)) in cases.iter().enumerate() {
            assert_eq!(*memo.of(d, models), fresh(d, models), "case {i}");
            assert_eq!(*memo.clone().of(d, models), fresh(d, models), "case {i}, through a copy of the view");
            // Asked again of the same data: the kept summary itself, not a copy.
            assert!(Arc::ptr_eq(&memo.of(d, models), &memo.of(d, models)), "case {i}: shared");
        }
    }

    fn apis(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// The member `m` after `apply_live` with `status` and, in the store, a live snapshot
    /// listing `stored`.
    fn applied(set: &PolicySet, status: LiveStatus, stored: Option<BTreeSet<String>>) -> BTreeSet<String> {
        let mut snaps: Vec<ClusterSnapshot> =
            set.clusters.iter().map(|c| offline_snapshot(c).expect("offline")).collect();
        let mut stored_snap = snaps[0].clone();
        stored_snap.source = SnapshotSource::Live { endpoint: "e".into() };
        stored_snap.api_enablements = Arc::new(stored.clone().unwrap_or_default());
        let view = LiveView { clusters: [("m".to_string(), status)].into() };
        apply_live(set, &mut snaps, &view, |_| stored.as_ref().map(|_| stored_snap.clone()));
        (*snaps[0].api_enablements).clone()
    }

    #[test]
    fn the_api_list_of_a_live_member_is_its_discovery_else_the_stored_one_else_its_cluster_object() {
        let data = Some(Arc::new(LiveData::default()));
        let found = apis(&["v1/Pod", "apps.kruise.io/v1alpha1/CloneSet"]);
        let discovered =
            || LiveStatus { last_good: data.clone(), apis: Some(Arc::new(found.clone())), ..Default::default() };
        let failed = PollError::Http { status: 503, what: "discovery", message: "down".into() };
        let never =
            || LiveStatus { last_good: data.clone(), discovery_error: Some(failed.clone()), ..Default::default() };
        let old = apis(&["v1/Pod"]);
        for with_list in [false, true] {
            let set = set(with_list);
            let object = if with_list { apis(&["apps/v1/Deployment"]) } else { BTreeSet::new() };
            // Discovered: the discovery wins over the store and the Cluster object.
            assert_eq!(applied(&set, discovered(), Some(old.clone())), found);
            // Never discovered in this process, the discovery failed: the stored live list…
            assert_eq!(applied(&set, never(), Some(old.clone())), old);
            // …else the Cluster object's own (none: empty, taken to serve every API).
            assert_eq!(applied(&set, never(), None), object);
            // Not attempted yet (no error): the Cluster object's, the store is not read.
            assert_eq!(
                applied(&set, LiveStatus { last_good: data.clone(), ..Default::default() }, Some(old.clone())),
                object
            );
        }
    }
}
