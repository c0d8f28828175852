//! Assumed workloads (Karmada's scheduling overcommit protection): replicas fedsched has
//! decided for a live member but that the member does not run yet (rendered, not yet applied
//! and started) are deducted from that member's capacity until they appear or expire, so
//! back-to-back passes do not promise the same room twice. An offline member (no nodes, no
//! pods) is deducted from as well when the pass asks (its decisions of the pass, all pending:
//! `allocating`), never across passes: its Cluster status is what it declares. A member with
//! resource models has its deducted replicas placed on its modelled nodes as the resource-model
//! estimator counts them ([`super::estimate::deduct_from_models`]); a live member with models
//! has its nodes graded again.
//!
//! Observed replicas are counted from the member's pods by controlling owner
//! ([`PodFacts::by_owner`]): a Deployment's pods belong to its ReplicaSets (`<name>-<hash>`),
//! StatefulSet, ReplicaSet and Job pods to the object itself, a bare Pod to itself. Kinds whose
//! pods cannot be attributed count as not observed until the decision expires. The same
//! attribution sums what those pods are doing ([`Owner::state`], from [`PodFacts::owners`]).

use super::dimensions::Dimensions;
use super::nodes::{CompiledRequest, first_fit_naive};
use std::collections::BTreeMap;

use super::snapshot::{ClusterSnapshot, OwnerState, PodFacts};
use super::workload::ReplicaRequirements;
use crate::policy::ObjectKey;

/// Replicas of `workload` that a live member runs (non-terminated pods, bound or pending).
pub fn observed(pods: &PodFacts, workload: &ObjectKey) -> i64 {
    Owner::of(workload).observed(pods)
}

/// How a workload's pods are found among a member's pods by owner ([`observed`]), computed
/// once per workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// A Deployment: its ReplicaSets, `ReplicaSet/<ns>/<name>-<hash>` (this prefix).
    ReplicaSets(String),
    /// The object itself (`Kind/<ns>/<name>`).
    Exact(String),
    /// Pods that cannot be attributed.
    Unknown,
}

impl Owner {
    /// The owner key of `workload`'s pods.
    pub fn of(workload: &ObjectKey) -> Owner {
        let mut key = String::new();
        match Owner::write_key(workload, &mut key) {
            Some(true) => Owner::ReplicaSets(key),
            Some(false) => Owner::Exact(key),
            None => Owner::Unknown,
        }
    }

    /// Writes [`Owner::key`] of `workload`'s owner into `out` (cleared first): `Some(true)` for
    /// a Deployment's ReplicaSets prefix, `Some(false)` for the object itself, `None` (nothing
    /// written) for pods that cannot be attributed.
    pub fn write_key(workload: &ObjectKey, out: &mut String) -> Option<bool> {
        out.clear();
        let ns = workload.namespace.as_deref().unwrap_or("default");
        let (kind, replica_sets) = match (workload.group(), workload.kind.as_str()) {
            ("apps", "Deployment") => ("ReplicaSet", true),
            ("apps", kind @ ("StatefulSet" | "ReplicaSet")) | ("batch", kind @ "Job") | ("", kind @ "Pod") => {
                (kind, false)
            }
            _ => return None,
        };
        for part in [kind, "/", ns, "/", workload.name.as_str()] {
            out.push_str(part);
        }
        if replica_sets {
            out.push('-');
        }
        Some(replica_sets)
    }

    /// Replicas of the workload that a live member runs.
    pub fn observed(&self, pods: &PodFacts) -> i64 {
        let total: u64 = self.entries(&pods.by_owner).map(|(_, n)| u64::from(*n)).sum();
        i64::try_from(total).unwrap_or(i64::MAX)
    }

    /// What the workload's pods on a live member are doing: the [`OwnerState`]s of its owners
    /// summed (a Deployment's ReplicaSets, as [`Owner::observed`] counts them). Empty for a
    /// workload whose pods cannot be attributed.
    pub fn state(&self, pods: &PodFacts) -> OwnerState {
        let mut out = OwnerState::default();
        for (_, s) in self.entries(&pods.owners) {
            out.merge(s);
        }
        out
    }

    /// Whether any key of `owners` (`Kind/ns/name`) belongs to this workload.
    pub fn owns_any<K: std::borrow::Borrow<str> + Ord, V>(&self, owners: &BTreeMap<K, V>) -> bool {
        self.entries(owners).next().is_some()
    }

    /// The key a workload's owner is found under in a map built by [`Owner::claimants`]
    /// (the prefix of a Deployment's ReplicaSets, the object itself); None when its pods cannot
    /// be attributed.
    pub fn key(&self) -> Option<&str> {
        match self {
            Owner::ReplicaSets(k) | Owner::Exact(k) => Some(k),
            Owner::Unknown => None,
        }
    }

    /// The inverse of the attribution: the [`Owner::key`]s of every workload a pod owner
    /// (`Kind/ns/name`) belongs to — itself, and for a ReplicaSet `<name>-<hash>` the
    /// Deployment `<name>`. Lets a fleet-wide map of pod owners be asked per workload with
    /// one lookup instead of one range scan per member.
    pub fn claimants(pod_owner: &str) -> impl Iterator<Item = &str> {
        let deployment = pod_owner
            .strip_prefix("ReplicaSet/")
            .and_then(|rest| rest.split_once('/'))
            .and_then(|(_, name)| name.rfind('-').map(|i| name.len() - i))
            .map(|tail| &pod_owner[..pod_owner.len() - tail + 1]);
        std::iter::once(pod_owner).chain(deployment)
    }

    /// The entries of a map keyed by owner (`Kind/ns/name`) that belong to this workload.
    fn entries<'a, K: std::borrow::Borrow<str> + Ord, V>(
        &'a self,
        map: &'a BTreeMap<K, V>,
    ) -> Box<dyn Iterator<Item = (&'a K, &'a V)> + 'a> {
        match self {
            Owner::ReplicaSets(prefix) => Box::new(
                map.range::<str, _>((std::ops::Bound::Included(prefix.as_str()), std::ops::Bound::Unbounded))
                    .take_while(move |(k, _)| k.borrow().starts_with(prefix.as_str()))
                    .filter(move |(k, _)| !k.borrow()[prefix.len()..].contains('-')),
            ),
            Owner::Exact(key) => Box::new(map.get_key_value(key.as_str()).into_iter()),
            Owner::Unknown => Box::new(std::iter::empty()),
        }
    }
}

/// Replicas still assumed: decided minus observed (never negative).
pub fn pending(decided: i64, observed: i64) -> i64 {
    decided.saturating_sub(observed).max(0)
}

/// Deducts `count` assumed replicas of `req` (`compiled`: its compiled form, with the
/// dimensions `dims`) from a snapshot (an offline one has no nodes: all pending), noted in
/// its [`ClusterSnapshot::taken`]: placed first-fit on the nodes that admit them
/// (their requests added to the node and to the summary's `allocated`), the rest added to the
/// summary's `allocating` (pending pods). Returns how many went on nodes. Keeps the
/// snapshot's node index up to date (regrouping only the nodes that changed) when it was
/// built.
pub fn deduct(
    snap: &mut ClusterSnapshot,
    req: &ReplicaRequirements,
    compiled: &CompiledRequest,
    count: i64,
    dims: &Dimensions,
) -> i64 {
    if count <= 0 {
        return 0;
    }
    snap.taken.replicas = snap.taken.replicas.saturating_add(count);
    for (name, want) in req.request.iter().filter(|(name, _)| *name != "pods") {
        snap.taken.request.add_amount(name, want.saturating_mul(count));
    }
    // Where they go, from the node groups when the view has its index (a deduction walks
    // past the nodes earlier ones filled: no resource looked up by name for those).
    let fits = snap
        .index
        .built()
        .and_then(|idx| idx.first_fit(&snap.nodes, compiled, dims, count))
        .unwrap_or_else(|| first_fit_naive(&snap.nodes, compiled, count));
    debug_assert_eq!(fits, first_fit_naive(&snap.nodes, compiled, count));
    let mut placed = 0;
    let mut changed = Vec::with_capacity(fits.len());
    for (i, k) in fits {
        // Copy-on-write: the node views are shared with the poller's data and other snapshots.
        let Some(node) = std::sync::Arc::make_mut(&mut snap.nodes).get_mut(i) else { break };
        for (name, want) in req.request.iter() {
            node.requested.add_amount(name, want.saturating_mul(k));
        }
        node.pods = node.pods.saturating_add(u32::try_from(k).unwrap_or(u32::MAX));
        changed.push(i);
        placed += k;
    }
    let left = count - placed;
    if let Some(s) = snap.summary.as_mut().map(std::sync::Arc::make_mut) {
        for (name, want) in req.request.iter() {
            if name == "pods" {
                continue;
            }
            s.allocated.add_amount(name, want.saturating_mul(placed));
            s.allocating.add_amount(name, want.saturating_mul(left));
        }
        s.allocated.add_amount("pods", placed.saturating_mul(1000));
        s.allocating.add_amount("pods", left.saturating_mul(1000));
        // Resource models count nodes by grade: an offline member's replicas go on its
        // modelled nodes (what the resource models' estimator reads), a live member's nodes
        // are graded again from what they have free now.
        if !snap.resource_models.is_empty() && !s.allocatable_modelings.is_empty() {
            if snap.nodes.is_empty() {
                super::estimate::deduct_from_models(s, &snap.resource_models, req, left);
            } else if !changed.is_empty() {
                s.allocatable_modelings = super::snapshot::allocatable_modelings(&snap.nodes, &snap.resource_models);
            }
        }
    }
    snap.summary_free.deducted(snap.summary.as_deref(), req);
    // The index follows the nodes: in place when this view alone holds it (every deduction
    // from it after the pass's first), else on a copy.
    if let Some(mut index) = snap.index.take() {
        match std::sync::Arc::get_mut(&mut index) {
            Some(own) => {
                if own.add_pods(&snap.nodes, &changed) {
                    snap.index.set_shared(index);
                }
            }
            None => {
                if let Some(new) = index.after_added_pods(&snap.nodes, &changed) {
                    snap.index.set(new);
                }
            }
        }
    }
    placed
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::model::dimensions::ModelSettings;
    use crate::model::snapshot::ResourceSummary;
    use crate::model::{NodeView, ResourceList, SnapshotSource};

    fn key(api: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey { api_version: api.into(), kind: kind.into(), namespace: Some("shop".into()), name: name.into() }
    }

    /// A workload owns a pod owner exactly when its key is among the pod owner's claimants.
    #[test]
    fn claimants_invert_the_attribution() {
        let owners = [
            "ReplicaSet/shop/web-5d8f9",
            "ReplicaSet/shop/web-api-77c",
            "ReplicaSet/shop/web",
            "ReplicaSet/shop/-x",
            "StatefulSet/shop/db",
            "StatefulSet/shop/db-0",
            "Job/shop/etl",
            "Pod/shop/web-5d8f9",
            "ReplicaSet/other/web-1",
        ];
        let workloads = [
            key("apps/v1", "Deployment", "web"),
            key("apps/v1", "Deployment", "web-api"),
            key("apps/v1", "Deployment", ""),
            key("apps/v1", "ReplicaSet", "web-5d8f9"),
            key("apps/v1", "ReplicaSet", "web"),
            key("apps/v1", "StatefulSet", "db"),
            key("batch/v1", "Job", "etl"),
            key("v1", "Pod", "web-5d8f9"),
            key("v1", "ConfigMap", "web"),
        ];
        for o in owners {
            let map: BTreeMap<String, ()> = [(o.to_string(), ())].into();
            for w in &workloads {
                let owner = Owner::of(w);
                let claimed = owner.key().is_some_and(|k| Owner::claimants(o).any(|c| c == k));
                assert_eq!(owner.owns_any(&map), claimed, "{o} and {w}");
            }
        }
    }

    #[test]
    fn observed_replicas_by_owner() {
        let pods = PodFacts {
            by_owner: [
                ("ReplicaSet/shop/web-5d8f9".to_string(), 2),
                ("ReplicaSet/shop/web-sim".to_string(), 1),
                ("ReplicaSet/shop/web-api-77c".to_string(), 4),
                ("StatefulSet/shop/db".to_string(), 3),
                ("Job/shop/etl".to_string(), 1),
            ]
            .into(),
            ..Default::default()
        };
        let cases = [
            (key("apps/v1", "Deployment", "web"), 3),
            (key("apps/v1", "Deployment", "web-api"), 4),
            (key("apps/v1", "StatefulSet", "db"), 3),
            (key("batch/v1", "Job", "etl"), 1),
            (key("apps/v1", "Deployment", "none"), 0),
            (key("example.com/v1", "Model", "web"), 0),
        ];
        for (k, want) in cases {
            assert_eq!(observed(&pods, &k), want, "{}", k.name);
        }
        assert_eq!(pending(5, 3), 2);
        assert_eq!(pending(2, 3), 0);
    }

    #[test]
    fn state_sums_a_workloads_owners() {
        let st = |pods, ready, since: &[u64], reason: &str| OwnerState {
            pods,
            bound: pods,
            running: pods,
            ready,
            unschedulable_since: vec![],
            not_ready_since: since.to_vec(),
            pending_reasons: if since.is_empty() {
                BTreeMap::new()
            } else {
                [(reason.to_string(), pods - ready)].into()
            },
        };
        let pods = PodFacts {
            owners: [
                ("ReplicaSet/shop/web-5d8f9".to_string(), st(2, 1, &[30], "NotReady")),
                ("ReplicaSet/shop/web-sim".to_string(), st(3, 1, &[10, 40], "NotReady")),
                ("ReplicaSet/shop/web-api-77c".to_string(), st(4, 0, &[1, 2, 3, 4], "Starting")),
                ("StatefulSet/shop/db".to_string(), st(3, 3, &[], "")),
            ]
            .into(),
            ..Default::default()
        };
        let web = Owner::of(&key("apps/v1", "Deployment", "web")).state(&pods);
        assert_eq!((web.pods, web.bound, web.running, web.ready), (5, 5, 5, 2));
        assert_eq!(web.not_ready_since, vec![10, 30, 40], "merged in order, web-api left out");
        assert_eq!(web.pending_reasons, BTreeMap::from([("NotReady".to_string(), 3)]));
        assert_eq!(web.not_ready(), 3);
        let db = Owner::of(&key("apps/v1", "StatefulSet", "db")).state(&pods);
        assert_eq!((db.pods, db.ready), (3, 3));
        assert_eq!(Owner::of(&key("example.com/v1", "Model", "web")).state(&pods), OwnerState::default());
        assert_eq!(Owner::of(&key("apps/v1", "Deployment", "none")).state(&pods), OwnerState::default());
    }

    #[test]
    fn deduction_places_first_fit_then_pending() {
        let node = |name: &str, cpu: i64| NodeView::ready(name, ResourceList::of(&[("cpu", cpu), ("pods", 110_000)]));
        let nodes = vec![node("a", 2000), node("b", 1000)];
        let mut snap = ClusterSnapshot::live("m", "https://x")
            .with_summary(ResourceSummary::from_nodes(&nodes, &ResourceList::new(), 0, &[]))
            .with_nodes(nodes)
            .with_pods(PodFacts::default());
        let req =
            ReplicaRequirements { request: ResourceList([("cpu".to_string(), 1000)].into()), ..Default::default() };
        let dims = Dimensions::new(&ModelSettings::default());
        // The node views and the summary are shared (with the poller's data and memo); a
        // deduction copies them.
        let shared = snap.nodes.clone();
        let shared_summary = snap.summary.clone().expect("summary");
        assert_eq!(deduct(&mut snap, &req, &CompiledRequest::compile(u64::MAX, &req, &dims), 0, &dims), 0);
        assert!(std::sync::Arc::ptr_eq(&shared, &snap.nodes), "nothing deducted, nothing copied");
        assert!(
            snap.summary.as_ref().is_some_and(|s| std::sync::Arc::ptr_eq(s, &shared_summary)),
            "summary not copied"
        );
        assert_eq!(deduct(&mut snap, &req, &CompiledRequest::compile(u64::MAX, &req, &dims), 5, &dims), 3);
        assert_eq!(shared[0].requested.get("cpu"), 0, "the shared views are left as they were");
        assert_eq!(
            (shared_summary.allocated.get("cpu"), shared_summary.allocating.get("cpu")),
            (0, 0),
            "the shared summary is left as it was"
        );
        assert_eq!(snap.nodes[0].requested.get("cpu"), 2000);
        assert_eq!(snap.nodes[1].pods, 1);
        let s = snap.summary.as_ref().expect("summary");
        assert_eq!((s.allocated.get("cpu"), s.allocating.get("cpu"), s.allocating.get("pods")), (3000, 2000, 2000));
        // A built node index is updated in place: equal to a fresh build.
        let settings = std::sync::Arc::new(ModelSettings::default());
        let more = |name: &str, cpu: i64, zone: &str| NodeView {
            labels: std::sync::Arc::new([("zone".to_string(), zone.to_string())].into()),
            ..node(name, cpu)
        };
        // Four nodes c, d, f in zone a and e in zone b, with these CPUs.
        let four = |[c, d, e, f]: [i64; 4]| {
            std::sync::Arc::new(vec![more("c", c, "a"), more("d", d, "a"), more("e", e, "b"), more("f", f, "a")])
        };
        snap.nodes = four([4000, 4000, 4000, 1500]);
        snap.index.reset();
        for count in [1, 2, 3, 1] {
            let built = snap.node_index(&dims, &settings);
            deduct(&mut snap, &req, &CompiledRequest::compile(u64::MAX, &req, &dims), count, &dims);
            let kept = snap.node_index(&dims, &settings);
            assert!(!std::sync::Arc::ptr_eq(&built, &kept), "the index follows the deduction");
            let fresh = crate::model::nodes::NodeIndex::build(&snap.nodes, &dims, &settings);
            assert_eq!(kept.canonical(), fresh.canonical());
        }
        // An index no one else holds is updated in place, to the same groups.
        snap.nodes = four([8000, 8000, 4000, 6500]);
        snap.index.reset();
        let first = snap.node_index(&dims, &settings);
        let address = std::sync::Arc::as_ptr(&first);
        drop(first);
        for count in [1, 2, 3, 1, 4] {
            deduct(&mut snap, &req, &CompiledRequest::compile(u64::MAX, &req, &dims), count, &dims);
            let kept = snap.node_index(&dims, &settings);
            assert_eq!(std::sync::Arc::as_ptr(&kept), address, "updated in place");
            let fresh = crate::model::nodes::NodeIndex::build(&snap.nodes, &dims, &settings);
            assert_eq!(kept.canonical(), fresh.canonical());
            let cpu = |r: i64| ReplicaRequirements {
                request: ResourceList([("cpu".to_string(), r)].into()),
                ..Default::default()
            };
            for r in [500, 1000, 3000] {
                let compiled = crate::model::nodes::CompiledRequest::compile(r as u64, &cpu(r), &dims);
                assert_eq!(
                    kept.estimate(&snap.nodes, &compiled),
                    fresh.estimate(&snap.nodes, &compiled),
                    "estimates follow"
                );
            }
        }
        // An offline snapshot (no nodes): every replica pending, noted as taken.
        let mut offline = ClusterSnapshot::offline("o", "o.yaml").with_summary(ResourceSummary {
            allocatable: ResourceList::of(&[("cpu", 14_000), ("pods", 110_000)]),
            ..Default::default()
        });
        assert_eq!(deduct(&mut offline, &req, &CompiledRequest::compile(u64::MAX, &req, &dims), 5, &dims), 0);
        let s = offline.summary.as_ref().expect("summary");
        assert_eq!((s.allocating.get("cpu"), s.allocating.get("pods")), (5000, 5000));
        assert_eq!((offline.taken.replicas, offline.taken.request.get("cpu")), (5, 5000));
        assert!(!matches!(offline.source, SnapshotSource::Live { .. }));
    }
}
