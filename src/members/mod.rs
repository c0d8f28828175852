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
//!
//! # Its stage of the pass
//!
//! **Poll → snapshot** (`members`): each member becomes a `model::ClusterSnapshot`. Offline
//! clusters (no live access configured) are described by their Cluster object's own status; live
//! clusters by their last poll (`members::live::LiveView`, merged by `members::apply_live`). The
//! daemon polls on its timer in a task and receives the round (`RoundReport`, with each poll's
//! outcome for the metrics) as an event; `render` polls once before its pass. The store keeps a new
//! snapshot version only when the content hash changes (poll timings are not content); the members
//! this process has not recorded yet are hashed, and encoded when a new version is due, on every
//! core before their writes (`store::PreparedSnapshot`).
//!
//! # In detail
//!
//! Where cluster state comes from. `offline.rs`: a Cluster object's own status. `live/`: the poller
//! — `credentials.rs` (**the one home of credentials**: every source of the `Authorization` header
//! — token, token file, basic auth, exec plugin, oidc `id-token` — taken out of the kubeconfig
//! before kube sees it and put on each request by a tower layer, `Authorize`; values checked as
//! header values when read; exec plugins run asynchronously in their own process group within
//! `poll.timeout`, killed with it, their credential cached per configuration until it expires or is
//! answered 401; kubeconfig errors by position only, and the `Redactor` that removes a cluster's
//! credential values from every message of its build and poll), `access.rs` (targets: kubeconfig,
//! or `spec.apiEndpoint` + token file + CA; the kube clients: kube's own for lists, and for watches
//! one built from kube's layers on hyper-util's client with ALPN `h2`, so both watches of a member
//! share one HTTP/2 connection, pinged after `[poll] watch_ping_interval` of silence and given up
//! after `read_timeout` without an answer; its connector stamps every read (`Wire`), so that a
//! stream broken after a longer silence is known as an unanswered ping: the server hangs, the watch
//! fails at once and `Poller::watch_lost` has the daemon start a round then —
//! `live::a_hung_api_server_is_unreachable_within_a_ping_and_the_read_timeout`), `poller.rs`
//! (`Poller::round`: bounded concurrency, a per-poll deadline, backoff with jitter, the
//! `RoundReport` with each poll's outcome and duration; after it, the discovery of the members due:
//! first success, recovery, `[poll] discovery_interval`), `list.rs` (raw paginated `GET`s with a
//! read timeout, 410 restarts), `discovery.rs` (the APIs a member serves, from `/api` and `/apis` —
//! aggregated, or plain and then each group version's resource list —, as `group/version/Kind`
//! entries; bounded sizes and counts, a group version that fails keeps its last entries),
//! `watch.rs` (with `[poll] watch`, the default: a member is listed once, then two tasks per member
//! watch nodes and pods from the list's resource version and apply the events to the member's
//! `WatchCache`; a member's watch requests are sent one at a time (each until its answer), so that
//! the second finds the first one's HTTP/2 connection instead of opening its own; a request the
//! shared connection does not answer within `read_timeout` is sent once more on the watch's own
//! HTTP/1.1 connection (`OwnConnection`: a server that allows one stream per connection); a stream
//! that ends is re-watched, 410 relists, a failed watch is the next round's failed poll; every
//! event, bookmark and relist stamps `Shared::heard_ms`, the time a round served from the cache is
//! observed at), `error.rs` (typed `PollError`s; 401/403 → `NotReady`, the rest → `Unreachable`).
//! `decode.rs`: narrow serde structs for list pages and watch events (only the fields the model
//! needs, quantities parsed in place), `Fold` (pages → node views, pod counts, unbound requests)
//! and the watch caches (`NodeCache`, `PodCache`: per pod its node, request, owner and state,
//! interned per cluster — strings one pointer wide, `Interned`, so a pod's entry stays within 64
//! bytes (a compile-time check; the pods table is the largest part of the poller's memory) —, with
//! the fold's sums kept up to date per event; equal to a fresh `Fold` of the same objects, tested
//! over random event sequences). `mod.rs`: `apply_live`, the one place live data becomes a snapshot
//! (Karmada's summary via `ResourceSummary::from_nodes`, kept per member node list in
//! `SummaryMemo`, which the view's copies share; the snapshot holds the kept summary itself, an
//! `Arc` — a pass's deduction copies it, `Arc::make_mut` — so a round does not copy 1,000
//! summaries; the poller keeps a member's node list — the same `Arc` — while its nodes are equal,
//! synthetic taints, last-known data on failure, the API enablements from discovery — else the last
//! stored live list, else the Cluster object's).

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

/// The key of the `NoSchedule` taint a member's health puts on it (Karmada's cluster
/// controller taints a not-Ready or unreachable cluster at once); None when Ready.
pub fn health_taint(health: &Health) -> Option<&'static str> {
    match health {
        Health::Ready => None,
        Health::NotReady { .. } => Some(TAINT_NOT_READY),
        Health::Unreachable { .. } => Some(TAINT_UNREACHABLE),
    }
}

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
        if let Some(key) = health_taint(&health)
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
