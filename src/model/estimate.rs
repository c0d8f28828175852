//! Replica estimators: how many more replicas of a workload a cluster can take. Several
//! estimators may answer for one cluster; the minimum wins (Karmada's rule). An estimator that
//! cannot tell returns `None` and is ignored.

use std::sync::Arc;

use super::dimensions::{Dimensions, ModelSettings};
use super::nodes::Compiler;
use super::resources::ResourceList;
use super::snapshot::{ClusterSnapshot, ModelGrade};
use super::workload::ReplicaRequirements;

/// A replica estimator. Registered in [`estimators`].
pub trait Estimator: Send + Sync {
    /// Stable name, shown in explain.
    fn name(&self) -> &'static str;
    /// Maximum number of additional replicas, or None when this estimator has no data.
    fn max_replicas(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements) -> Option<i64>;
    /// [`Estimator::max_replicas`] for each of `clusters`, in order: an estimator with
    /// per-request preparation (the node-level one compiles the request) does it once.
    fn max_replicas_each(&self, clusters: &[&ClusterSnapshot], req: &ReplicaRequirements) -> Vec<Option<i64>> {
        clusters.iter().map(|c| self.max_replicas(c, req)).collect()
    }
    /// Lines for explain on why the estimate is what it is, each given to `line` (only asked
    /// when a cluster cannot take every replica).
    fn explain(&self, _cluster: &ClusterSnapshot, _req: &ReplicaRequirements, _line: &mut dyn FnMut(&str)) {}
}

/// Every built-in estimator with the default model settings.
pub fn estimators() -> Vec<Box<dyn Estimator>> {
    estimators_with(&Arc::new(ModelSettings::default()))
}

/// Every built-in estimator, in one list: Karmada's general estimator (summary, or resource
/// models when they apply), the node-level estimator (live clusters), the GPU model of members
/// without node data, the cluster reserve.
pub fn estimators_with(settings: &Arc<ModelSettings>) -> Vec<Box<dyn Estimator>> {
    vec![
        Box::new(SummaryEstimator),
        Box::new(ResourceModelEstimator),
        Box::new(NodeEstimator::new(settings.clone())),
        Box::new(GpuModelEstimator),
        Box::new(ReserveEstimator),
    ]
}

/// The GPU model a replica asks for (`fedsched.io/gpu-product`, `fedsched.io/gpu-memory`) on a
/// member without node data (offline, or described by resource models): the node-level
/// estimator enforces it per node on live members; here the Cluster object's own labels
/// answer, with the same label names as a node's (`nvidia.com/gpu.product`,
/// `nvidia.com/gpu.memory` in MiB). A member whose labels do not admit the model takes no
/// replica (a member that declares no model cannot be trusted to have it); one that does, or a
/// replica without a model constraint, gets no answer from this estimator.
pub struct GpuModelEstimator;

impl Estimator for GpuModelEstimator {
    fn name(&self) -> &'static str {
        "gpu-model"
    }

    fn max_replicas(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements) -> Option<i64> {
        (cluster.nodes.is_empty() && req.gpu.is_set() && !req.gpu.admits(&cluster.labels)).then_some(0)
    }

    fn explain(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements, line: &mut dyn FnMut(&str)) {
        if self.max_replicas(cluster, req).is_none() {
            return;
        }
        use super::dimensions::{GPU_MEMORY_LABEL, GPU_PRODUCT_LABEL};
        let mut wants = Vec::new();
        if !req.gpu.products.is_empty() {
            wants.push(format!("{GPU_PRODUCT_LABEL} in [{}]", req.gpu.products.join(", ")));
        }
        if req.gpu.min_memory_mib > 0 {
            wants.push(format!("{GPU_MEMORY_LABEL} >= {} MiB", req.gpu.min_memory_mib));
        }
        let has = |label: &str| match cluster.labels.get(label) {
            Some(v) => format!("{label}={v}"),
            None => format!("no {label} label"),
        };
        line(&format!(
            "GPU model: the replica needs {}; the Cluster object has {}, {}",
            wants.join(" and "),
            has(GPU_PRODUCT_LABEL),
            has(GPU_MEMORY_LABEL)
        ));
    }
}

/// One estimator's answer as a verdict keeps it for explain: the estimator's name (the
/// built-in names borrowed) and the replicas.
pub type Estimate = (std::borrow::Cow<'static, str>, i64);

/// Per cluster of `clusters` (in order): the minimum over the estimators that answer (None
/// when none does) and their answers, in the estimators' order.
pub fn max_available(
    estimators: &[Box<dyn Estimator>],
    clusters: &[&ClusterSnapshot],
    req: &ReplicaRequirements,
) -> Vec<(Option<i64>, Vec<Estimate>)> {
    let mut out: Vec<(Option<i64>, Vec<Estimate>)> = clusters.iter().map(|_| (None, Vec::new())).collect();
    push_estimates(estimators, clusters, req, |k, answer| {
        if let Some((_, answers)) = out.get_mut(k) {
            answers.push(answer);
        }
    });
    for (min, answers) in &mut out {
        *min = answers.iter().map(|a| a.1).min();
    }
    out
}

/// The estimators' answers for `clusters`, each given to `push` with its cluster's index in
/// `clusters`: per cluster in the estimators' order (an estimator that cannot tell gives
/// none). Their minimum is the cluster's estimate ([`max_available`]).
pub fn push_estimates(
    estimators: &[Box<dyn Estimator>],
    clusters: &[&ClusterSnapshot],
    req: &ReplicaRequirements,
    mut push: impl FnMut(usize, Estimate),
) {
    for e in estimators {
        for (k, r) in e.max_replicas_each(clusters, req).into_iter().enumerate() {
            if let Some(r) = r {
                push(k, (std::borrow::Cow::Borrowed(e.name()), r.max(0)));
            }
        }
    }
}

/// Karmada's general estimator over `status.resourceSummary`:
/// `floor((allocatable − allocated − allocating) / request)` per requested resource, a
/// resource the cluster does not have allows 0, bounded by the free pod count. When the
/// cluster's resource models apply ([`models_apply`]) Karmada uses them instead, and so does
/// this estimator (it answers None and [`ResourceModelEstimator`] answers). A cluster without
/// `status.resourceSummary` allows 0 (as Karmada's `GeneralEstimator`).
pub struct SummaryEstimator;

/// Free pod slots of a summary (Karmada's `allowedPods`), at least 0.
fn allowed_pods(s: &super::snapshot::ResourceSummary) -> i64 {
    (free_of(s, "pods") / 1000).max(0)
}

/// What `allocatable.free_after(allocated, allocating)` gives for one resource, without
/// building the whole list (the estimators ask per cluster and workload).
fn free_of(s: &super::snapshot::ResourceSummary, name: &str) -> i64 {
    match s.allocatable.0.get(name) {
        Some(total) => total.saturating_sub(s.allocated.get(name)).saturating_sub(s.allocating.get(name)).max(0),
        None => 0,
    }
}

/// Whether Karmada's general estimator uses the resource models for this request: the
/// summary has `allocatableModelings`, the cluster has models, and every requested resource
/// is modelled (a missing one makes the models inapplicable: Karmada falls back to the
/// summary).
pub fn models_apply(cluster: &ClusterSnapshot, req: &ReplicaRequirements) -> bool {
    let Some(s) = cluster.summary.as_ref() else { return false };
    if s.allocatable_modelings.is_empty() || cluster.resource_models.is_empty() {
        return false;
    }
    req.request
        .iter()
        .filter(|(n, w)| *w > 0 && *n != "pods")
        .all(|(n, _)| cluster.resource_models.iter().any(|g| g.ranges.iter().any(|r| r.0 == n)))
}

impl Estimator for SummaryEstimator {
    fn name(&self) -> &'static str {
        "resource-summary"
    }

    fn max_replicas(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements) -> Option<i64> {
        // Karmada: a cluster that reports no resource summary can take no replica.
        let Some(s) = cluster.summary.as_ref() else { return Some(0) };
        if models_apply(cluster, req) {
            return None;
        }
        let mut max = allowed_pods(s);
        for (name, want) in req.request.iter() {
            if name == "pods" || want <= 0 {
                continue;
            }
            max = max.min(free_of(s, name) / want);
        }
        Some(max)
    }

    /// Per requested resource its free amount and the request per replica, the limiting one
    /// marked (`cpu: 14 free, 1 per replica: 14 replicas (limiting)`, `example.com/dpu: 0 free,
    /// 1 per replica: 0 replicas (limiting)`), and the free pod slots.
    fn explain(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements, line: &mut dyn FnMut(&str)) {
        let Some(s) = cluster.summary.as_ref() else {
            line("resource summary: the Cluster object reports no status.resourceSummary: no replica (as Karmada)");
            return;
        };
        let fmt = super::quantity::format_milli;
        if cluster.taken.replicas > 0 {
            let by = if cluster.is_live() {
                "earlier decisions, not running there yet"
            } else {
                "earlier decisions of this pass (offline member: the Cluster status is as declared)"
            };
            let took: Vec<String> =
                cluster.taken.request.iter().map(|(name, n)| format!("{name} {}", fmt(name, n))).collect();
            line(&format!(
                "assumed: {} replicas of {by} deducted ({}): the free amounts below are what is left",
                cluster.taken.replicas,
                took.join(", ")
            ));
        }
        if models_apply(cluster, req) {
            return;
        }
        let mut rows: Vec<(String, i64)> = req
            .request
            .iter()
            .filter(|(name, want)| *name != "pods" && *want > 0)
            .map(|(name, want)| {
                let free = free_of(s, name);
                let absent = if s.allocatable.0.contains_key(name) { "" } else { " (the cluster has none)" };
                let text = format!("{name}: {} free{absent}, {} per replica", fmt(name, free), fmt(name, want));
                (text, free / want)
            })
            .collect();
        rows.push((format!("pods: {} free slots", allowed_pods(s)), allowed_pods(s)));
        let least = rows.iter().map(|r| r.1).min().unwrap_or(0);
        for (text, n) in rows {
            let mark = if n == least { " (limiting)" } else { "" };
            line(&format!("resource summary: {text}: {n} replicas{mark}"));
        }
    }

    /// The same answers from each view's free amounts by resource id ([`SummaryFree`], made
    /// once per view): the request's names are looked up once, not three times per cluster.
    fn max_replicas_each(&self, clusters: &[&ClusterSnapshot], req: &ReplicaRequirements) -> Vec<Option<i64>> {
        let wanted: Option<Vec<(u32, i64)>> = req
            .request
            .iter()
            .filter(|(name, want)| *name != "pods" && *want > 0)
            .map(|(name, want)| super::resources::resource_id(name).map(|id| (id, want)))
            .collect();
        let Some(wanted) = wanted else {
            return clusters.iter().map(|c| self.max_replicas(c, req)).collect();
        };
        clusters
            .iter()
            .map(|c| {
                if c.summary.is_none() {
                    return Some(0);
                }
                let free = c.summary_free.get(c);
                if !free.complete {
                    return self.max_replicas(c, req);
                }
                if free.models && models_apply(c, req) {
                    return None;
                }
                let max = wanted.iter().fold(free.pods, |max, (id, want)| max.min(free.of_id(*id) / want));
                debug_assert_eq!(Some(max), self.max_replicas(c, req), "{}", c.name);
                Some(max)
            })
            .collect()
    }
}

/// A view's free amounts as the summary estimator reads them, by resource id
/// ([`super::resources::resource_id`]): per allocatable resource `allocatable − allocated −
/// allocating` (at least 0), the free pod slots, and whether resource models may apply.
#[derive(Debug, Default)]
pub struct SummaryFree {
    /// (resource id, free milli-units), sorted by id.
    free: Vec<(u32, i64)>,
    /// Free pod slots ([`allowed_pods`]).
    pods: i64,
    /// The summary has `allocatableModelings` and the cluster has models: whether they apply
    /// depends on the request ([`models_apply`]).
    models: bool,
    /// Every allocatable resource has an id (else the estimator reads the summary by name).
    complete: bool,
}

impl SummaryFree {
    fn of(cluster: &ClusterSnapshot) -> SummaryFree {
        let Some(s) = cluster.summary.as_ref() else { return SummaryFree::default() };
        let mut complete = true;
        let mut free: Vec<(u32, i64)> = s
            .allocatable
            .iter()
            .filter_map(|(name, _)| {
                let id = super::resources::resource_id(name);
                complete &= id.is_some();
                id.map(|id| (id, free_of(s, name)))
            })
            .collect();
        free.sort_unstable();
        let models = !s.allocatable_modelings.is_empty() && !cluster.resource_models.is_empty();
        SummaryFree { free, pods: allowed_pods(s), models, complete }
    }

    /// The free amount of resource `id` (0: not allocatable).
    fn of_id(&self, id: u32) -> i64 {
        match self.free.len() {
            0..=8 => self.free.iter().find(|(i, _)| *i == id).map_or(0, |(_, f)| *f),
            _ => self.free.binary_search_by_key(&id, |(i, _)| *i).map_or(0, |k| self.free[k].1),
        }
    }
}

/// The lazily made [`SummaryFree`] of a snapshot (not content: [`crate::util::derived::Derived`]);
/// whatever changes the summary resets it (the assumed-replica deduction, the poller's merge,
/// the builders).
pub type SummaryCache = crate::util::derived::Derived<SummaryFree>;

impl SummaryCache {
    /// After `req`'s replicas were deducted from `summary` (its allocated and allocating grew
    /// by the request's resources and pods, nothing else changed): the free amounts of the
    /// requested resources and the pod slots read again, the others kept (a deduction no
    /// longer makes every resource's free amount again). Forgets them when none were made.
    pub fn deducted(&mut self, summary: Option<&super::snapshot::ResourceSummary>, req: &ReplicaRequirements) {
        let (Some(s), Some(old)) = (summary, self.take()) else {
            self.reset();
            return;
        };
        let mut free = old.free.clone();
        for name in req.request.iter().map(|(name, _)| name).chain(["pods"]) {
            if let Some(id) = super::resources::resource_id(name)
                && let Ok(k) = free.binary_search_by_key(&id, |(i, _)| *i)
            {
                free[k].1 = free_of(s, name);
            }
        }
        self.set_shared(std::sync::Arc::new(SummaryFree {
            free,
            pods: allowed_pods(s),
            models: old.models,
            complete: old.complete,
        }));
    }

    /// The free amounts of `cluster` (whose cache this is), made on first use.
    pub fn get(&self, cluster: &ClusterSnapshot) -> &SummaryFree {
        let free = self.get_or_make(|| SummaryFree::of(cluster));
        debug_assert!(
            {
                let now = SummaryFree::of(cluster);
                (&free.free, free.pods, free.models) == (&now.free, now.pods, now.models)
            },
            "{}: the summary changed without resetting its free amounts",
            cluster.name
        );
        free
    }
}

/// Karmada's resource-model estimator over `allocatableModelings`: every node of a grade is
/// taken to have the grade's lower bound of each modelled resource and 110 pod slots; replicas
/// are packed first-fit node by node (identical replicas on independent nodes: the sum of
/// per-node floors), bounded by the summary's free pod slots. None when the models do not
/// apply ([`models_apply`]). The `allocatableModelings` it reads are counted without the
/// upstream quirk of stopping at the first full node ([`super::snapshot::allocatable_modelings`]).
/// Modelled nodes that earlier decisions of the pass took replicas on
/// ([`ResourceSummary::modelled_taken`](super::snapshot::ResourceSummary), placed by
/// [`deduct_from_models`]) offer what is left of those bounds.
pub struct ResourceModelEstimator;

/// Pods a modelled virtual node holds (Karmada's assumption).
const MODEL_NODE_PODS: i64 = 110;

/// The requested resources that some grade models, with the request per replica.
fn modelled_request<'a>(models: &[ModelGrade], req: &'a ReplicaRequirements) -> Vec<(&'a str, i64)> {
    req.request.iter().filter(|(n, w)| *w > 0 && models.iter().any(|g| g.ranges.iter().any(|r| r.0 == *n))).collect()
}

/// Replicas of `modelled` one node of `grade` takes when `taken` of its lower bounds and
/// `pods` of its 110 pod slots are taken already.
fn per_model_node(grade: &ModelGrade, modelled: &[(&str, i64)], taken: &ResourceList, pods: i64) -> i64 {
    let mut per_node = (MODEL_NODE_PODS - pods).max(0);
    for (name, want) in modelled {
        let min = grade.ranges.iter().find(|r| r.0 == *name).map(|r| r.1).unwrap_or(0);
        per_node = per_node.min((min.saturating_sub(taken.get(name)) / want).max(0));
    }
    per_node
}

/// The nodes of each grade (grades in ascending order, as Karmada's overcommit protection lists
/// its model nodes, `buildModelNodes`) as the estimator sees them: per group of nodes, (grade,
/// nodes, what each took, pod slots each took) — the groups that earlier deductions placed
/// replicas on first (first-fit order), then the grade's untouched nodes.
fn model_nodes<'a>(
    models: &'a [ModelGrade],
    s: &'a super::snapshot::ResourceSummary,
) -> impl Iterator<Item = (&'a ModelGrade, i64, std::borrow::Cow<'a, ResourceList>, i64)> + 'a {
    let mut sorted: Vec<&'a ModelGrade> = models.iter().collect();
    sorted.sort_by_key(|g| g.grade);
    sorted.into_iter().flat_map(move |grade| {
        let mut left = s.allocatable_modelings.get(&grade.grade).copied().unwrap_or(0).max(0);
        let mut groups = Vec::new();
        for t in s.modelled_taken.iter().filter(|t| t.grade == grade.grade) {
            let n = t.nodes.min(left);
            if n > 0 {
                groups.push((grade, n, std::borrow::Cow::Borrowed(&t.taken), t.pods));
                left -= n;
            }
        }
        if left > 0 {
            groups.push((grade, left, std::borrow::Cow::Owned(ResourceList::new()), 0));
        }
        groups
    })
}

/// Places `count` assumed replicas of `req` first-fit on the modelled nodes of `s` (in
/// [`model_nodes`] order: Karmada's `SchedulingOvercommitProtection` simulates its assumed
/// workloads on its model nodes the same way), as
/// [`ResourceModelEstimator`] counts them: a node takes replicas while the grade's lower bound
/// of every modelled resource the replica requests, less what it took already, and its 110
/// pod slots allow. Notes them in `s.modelled_taken`; returns how many were placed (the rest
/// fit on no modelled node). The summary's `allocating` is the caller's.
pub fn deduct_from_models(
    s: &mut super::snapshot::ResourceSummary,
    models: &[ModelGrade],
    req: &ReplicaRequirements,
    count: i64,
) -> i64 {
    use super::snapshot::ModelledTaken;
    if count <= 0 || models.is_empty() || s.allocatable_modelings.is_empty() {
        return 0;
    }
    let modelled = modelled_request(models, req);
    let mut left = count;
    let mut out: Vec<ModelledTaken> = Vec::with_capacity(s.modelled_taken.len() + 2);
    // Adjacent groups with the same state are one.
    let push = |out: &mut Vec<ModelledTaken>, t: ModelledTaken| {
        if t.nodes <= 0 {
            return;
        }
        match out.last_mut() {
            Some(last) if (last.grade, &last.taken, last.pods) == (t.grade, &t.taken, t.pods) => last.nodes += t.nodes,
            _ => out.push(t),
        }
    };
    for (grade, nodes, taken, pods) in model_nodes(models, s) {
        let untouched = taken.is_empty() && pods == 0;
        let group = |nodes: i64, k: i64| {
            let mut taken = taken.clone().into_owned();
            for (name, want) in &modelled {
                taken.add_amount(name, want.saturating_mul(k));
            }
            ModelledTaken { grade: grade.grade, nodes, taken, pods: pods.saturating_add(k) }
        };
        let fit = per_model_node(grade, &modelled, &taken, pods);
        if left == 0 || fit == 0 {
            if !untouched {
                push(&mut out, group(nodes, 0));
            }
            continue;
        }
        let full = (left / fit).min(nodes);
        push(&mut out, group(full, fit));
        left -= full * fit;
        let mut rest = nodes - full;
        if rest > 0 && left > 0 {
            push(&mut out, group(1, left));
            left = 0;
            rest -= 1;
        }
        if !untouched {
            push(&mut out, group(rest, 0));
        }
    }
    s.modelled_taken = out;
    count - left
}

impl Estimator for ResourceModelEstimator {
    fn name(&self) -> &'static str {
        "resource-models"
    }

    fn max_replicas(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements) -> Option<i64> {
        let s = cluster.summary.as_ref()?;
        if !models_apply(cluster, req) {
            return None;
        }
        // Only resources that are both requested and modelled constrain this estimate.
        let modelled = modelled_request(&cluster.resource_models, req);
        let total = model_nodes(&cluster.resource_models, s).fold(0i64, |total, (grade, nodes, taken, pods)| {
            total.saturating_add(per_model_node(grade, &modelled, &taken, pods).saturating_mul(nodes))
        });
        Some(total.min(allowed_pods(s)))
    }

    /// Per grade with nodes, the replicas a node takes by the grade's lower bounds (less what
    /// earlier decisions of the pass took there), and the free pod slots that bound the sum.
    fn explain(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements, line: &mut dyn FnMut(&str)) {
        let Some(s) = cluster.summary.as_ref().filter(|_| models_apply(cluster, req)) else { return };
        let fmt = super::quantity::format_milli;
        let modelled = modelled_request(&cluster.resource_models, req);
        for (grade, count, taken, pods) in model_nodes(&cluster.resource_models, s) {
            let per_node = per_model_node(grade, &modelled, &taken, pods);
            let parts: Vec<String> = modelled
                .iter()
                .filter_map(|(name, want)| {
                    let r = grade.ranges.iter().find(|r| r.0 == *name)?;
                    Some(format!("{name} {} per node, {} per replica", fmt(name, r.1), fmt(name, *want)))
                })
                .collect();
            let took = if pods > 0 {
                let mut what: Vec<String> = taken.iter().map(|(name, n)| format!("{name} {}", fmt(name, n))).collect();
                what.push(format!("{pods} pods"));
                format!(", earlier decisions of this pass took {} of each", what.join(", "))
            } else {
                String::new()
            };
            line(&format!(
                "resource models: grade {}: {count} nodes x {per_node} replicas ({}{took})",
                grade.grade,
                parts.join("; ")
            ));
        }
        line(&format!("resource models: pods: {} free slots bound the sum", allowed_pods(s)));
    }
}

/// Unbuilt node indexes one request needs before they are built on every core (fewer are
/// not worth the threads).
const PARALLEL_INDEXES: usize = 16;

/// The node-level estimator ([`super::nodes`]): live clusters with node data only; offline
/// clusters keep the summary estimators.
pub struct NodeEstimator {
    settings: Arc<ModelSettings>,
    dims: Dimensions,
    compiler: Compiler,
}

impl NodeEstimator {
    /// An estimator with these settings (dimensions, CPU factors).
    pub fn new(settings: Arc<ModelSettings>) -> NodeEstimator {
        NodeEstimator { dims: Dimensions::new(&settings), settings, compiler: Compiler::default() }
    }
}

impl Estimator for NodeEstimator {
    fn name(&self) -> &'static str {
        "node-level"
    }

    fn max_replicas(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements) -> Option<i64> {
        if cluster.nodes.is_empty() {
            return None;
        }
        let compiled = self.compiler.compile(req, &self.dims);
        Some(cluster.node_index(&self.dims, &self.settings).estimate(&cluster.nodes, &compiled))
    }

    fn max_replicas_each(&self, clusters: &[&ClusterSnapshot], req: &ReplicaRequirements) -> Vec<Option<i64>> {
        if clusters.iter().all(|c| c.nodes.is_empty()) {
            return vec![None; clusters.len()];
        }
        let compiled = self.compiler.compile(req, &self.dims);
        // The node indexes this request is the first to need (a first pass meets every
        // member's nodes ungrouped), built on every core when there are many: an index is the
        // same whichever thread groups it.
        let unbuilt: Vec<&ClusterSnapshot> =
            clusters.iter().copied().filter(|c| !c.nodes.is_empty() && c.index.built().is_none()).collect();
        if unbuilt.len() >= PARALLEL_INDEXES {
            crate::util::threads::map_ordered(&unbuilt, crate::util::threads::workers(), |c| {
                c.node_index(&self.dims, &self.settings);
            });
        }
        clusters
            .iter()
            .map(|c| match c.nodes.is_empty() {
                true => None,
                false => {
                    Some(c.index.with(&c.nodes, &self.dims, &self.settings, |idx| idx.estimate(&c.nodes, &compiled)))
                }
            })
            .collect()
    }

    fn explain(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements, line: &mut dyn FnMut(&str)) {
        if cluster.nodes.is_empty() {
            return;
        }
        let compiled = self.compiler.compile(req, &self.dims);
        let lines = cluster
            .index
            .with(&cluster.nodes, &self.dims, &self.settings, |idx| idx.explain_shared(&cluster.nodes, &compiled));
        lines.iter().for_each(|l| line(l));
    }
}

/// The cluster's reserve (`fedsched.io/reserve`): over the requested resources that have a
/// reserve, `floor((free − reserve) / request)` on the summary. None without a reserve.
pub struct ReserveEstimator;

impl Estimator for ReserveEstimator {
    fn name(&self) -> &'static str {
        "cluster-reserve"
    }

    fn max_replicas(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements) -> Option<i64> {
        let c = &cluster.constraints;
        if c.reserve.is_empty() {
            return None;
        }
        let s = cluster.summary.as_ref()?;
        let free = s.allocatable.free_after(&s.allocated, &s.allocating);
        let mut max: Option<i64> = None;
        let pods_reserved = c.reserved("pods", s.allocatable.get("pods"));
        if pods_reserved > 0 {
            max = Some((free.get("pods").saturating_sub(pods_reserved) / 1000).max(0));
        }
        for (name, want) in req.request.iter() {
            if want <= 0 || name == "pods" || !c.reserve.iter().any(|(r, _)| r == name) {
                continue;
            }
            let left = free.get(name).saturating_sub(c.reserved(name, s.allocatable.get(name))).max(0);
            let n = left / want;
            max = Some(max.map_or(n, |m| m.min(n)));
        }
        max
    }

    fn explain(&self, cluster: &ClusterSnapshot, req: &ReplicaRequirements, line: &mut dyn FnMut(&str)) {
        let c = &cluster.constraints;
        let Some(s) = cluster.summary.as_ref() else { return };
        for (r, v) in c.reserve.iter().filter(|(r, _)| r == "pods" || req.request.get(r) > 0) {
            line(&format!(
                "reserve: {} of {r} kept free",
                super::quantity::format_milli(r, v.of(s.allocatable.get(r)))
            ));
        }
    }
}

/// The confidence discount: below 1, the free replicas are multiplied by the confidence
/// (rounded down). Returns the discounted value.
pub fn discount(free: i64, confidence: f64) -> i64 {
    if confidence >= 1.0 {
        return free;
    }
    ((free as f64) * confidence.max(0.0)).floor() as i64
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::model::snapshot::ResourceSummary;

    fn list(items: &[(&str, i64)]) -> ResourceList {
        ResourceList::of(items)
    }

    fn cluster(summary: ResourceSummary, models: Vec<ModelGrade>) -> ClusterSnapshot {
        ClusterSnapshot::offline("m1", "c.yaml").with_summary(summary).with_resource_models(models)
    }

    const GI: i64 = 1 << 30;

    /// Issue 49: `fedsched.io/gpu-product` on members without node data is read from the
    /// Cluster object's labels; one that declares another model, or none, takes nothing.
    #[test]
    fn the_gpu_model_of_a_member_without_nodes_comes_from_its_labels() {
        let summary = ResourceSummary {
            allocatable: list(&[("cpu", 64_000), ("nvidia.com/gpu", 8_000), ("pods", 110_000)]),
            ..Default::default()
        };
        let a100 = cluster(summary.clone(), vec![]).with_labels([("nvidia.com/gpu.product", "NVIDIA-A100")]);
        let t4 = cluster(summary.clone(), vec![]).with_labels([("nvidia.com/gpu.product", "Tesla-T4")]);
        let silent = cluster(summary, vec![]);
        let mut req = ReplicaRequirements { request: list(&[("nvidia.com/gpu", 1000)]), ..Default::default() };
        req.gpu.products = vec!["NVIDIA-A100".into()];
        let answers = max_available(&estimators(), &[&a100, &t4, &silent], &req);
        let fits: Vec<Option<i64>> = answers.iter().map(|a| a.0).collect();
        assert_eq!(fits, [Some(8), Some(0), Some(0)], "{answers:?}");
        let mut lines = Vec::new();
        GpuModelEstimator.explain(&t4, &req, &mut |l| lines.push(l.to_string()));
        assert_eq!(
            lines,
            ["GPU model: the replica needs nvidia.com/gpu.product in [NVIDIA-A100]; the Cluster object has \
              nvidia.com/gpu.product=Tesla-T4, no nvidia.com/gpu.memory label"]
        );
        // Without a model constraint the labels do not matter.
        req.gpu = Default::default();
        assert_eq!(max_available(&estimators(), &[&t4], &req)[0].0, Some(8));
    }

    #[test]
    fn a_cluster_without_a_resource_summary_takes_no_replica() {
        // Karmada's GeneralEstimator returns 0 when `status.resourceSummary` is nil.
        let mut c = cluster(ResourceSummary::default(), vec![]);
        c.summary = None;
        let req = ReplicaRequirements { request: list(&[("cpu", 100)]), ..Default::default() };
        let (max, answers) = max_available(&estimators(), &[&c], &req).remove(0);
        assert_eq!(max, Some(0), "{answers:?}");
        assert!(answers.iter().any(|a| a.0 == "resource-summary" && a.1 == 0), "{answers:?}");
        // Without any request either: no summary, no pod slots known.
        let (max, _) = max_available(&estimators(), &[&c], &ReplicaRequirements::default()).remove(0);
        assert_eq!(max, Some(0));
    }

    #[test]
    fn general_estimator_matches_karmada_example() {
        // allocatable 4 CPU / 8Gi, allocated 1 / 2Gi, request 500m / 1Gi ⇒ 6 (karmada-semantics §2.7).
        let c = cluster(
            ResourceSummary {
                allocatable: list(&[("cpu", 4000), ("memory", 8 * GI * 1000), ("pods", 110_000)]),
                allocated: list(&[("cpu", 1000), ("memory", 2 * GI * 1000)]),
                ..Default::default()
            },
            vec![],
        );
        let req = ReplicaRequirements { request: list(&[("cpu", 500), ("memory", GI * 1000)]), ..Default::default() };
        assert_eq!(SummaryEstimator.max_replicas(&c, &req), Some(6));
    }

    #[test]
    fn missing_resource_and_pods_bound() {
        let c = cluster(
            ResourceSummary {
                allocatable: list(&[("cpu", 100_000), ("pods", 3000)]),
                allocating: list(&[("pods", 1000)]),
                ..Default::default()
            },
            vec![],
        );
        let gpu = ReplicaRequirements { request: list(&[("nvidia.com/gpu", 1000)]), ..Default::default() };
        assert_eq!(SummaryEstimator.max_replicas(&c, &gpu), Some(0));
        let none = ReplicaRequirements::default();
        assert_eq!(SummaryEstimator.max_replicas(&c, &none), Some(2));
    }

    /// The summary estimator's per-view free amounts by resource id answer what the summary
    /// read by name answers, for every request shape and summary shape (extended resources,
    /// a missing resource, resource models, no summary), and follow a deduction.
    #[test]
    fn free_amounts_by_id_answer_as_the_summary_by_name() {
        let grades = vec![ModelGrade { grade: 0, ranges: vec![("cpu".into(), 0, 4000)] }];
        let big = ResourceSummary {
            allocatable: list(&[
                ("cpu", 64_000),
                ("memory", 256 * GI * 1000),
                ("pods", 110_000),
                ("example.com/fpga", 4000),
            ]),
            allocated: list(&[("cpu", 10_500), ("memory", 9 * GI * 1000), ("pods", 7000)]),
            allocating: list(&[("cpu", 70_000), ("pods", 1000)]),
            ..Default::default()
        };
        let modelled = ResourceSummary {
            allocatable: list(&[("cpu", 8000), ("pods", 220_000)]),
            allocatable_modelings: [(0, 2)].into_iter().collect(),
            ..Default::default()
        };
        let mut bare = cluster(ResourceSummary::default(), vec![]);
        bare.summary = None;
        let clusters = [
            cluster(big.clone(), vec![]),
            cluster(ResourceSummary { allocated: list(&[("cpu", 1000)]), ..big }, vec![]),
            cluster(modelled, grades),
            bare,
            cluster(ResourceSummary::default(), vec![]),
        ];
        let refs: Vec<&ClusterSnapshot> = clusters.iter().collect();
        let requests = [
            list(&[("cpu", 250), ("memory", GI * 1000)]),
            list(&[("cpu", 100), ("example.com/fpga", 1000)]),
            list(&[("nvidia.com/gpu", 1000)]),
            list(&[("cpu", 0), ("pods", 5000)]),
            list(&[("memory", 512)]),
            list(&[]),
        ];
        for request in requests {
            let req = ReplicaRequirements { request, ..Default::default() };
            let by_name: Vec<Option<i64>> = refs.iter().map(|c| SummaryEstimator.max_replicas(c, &req)).collect();
            assert_eq!(SummaryEstimator.max_replicas_each(&refs, &req), by_name, "{req:?}");
        }
        // A deduction changes the summary: the next estimate reads the new free amounts.
        let node = crate::model::NodeView::ready("n", list(&[("cpu", 4000), ("pods", 110_000)]));
        let mut live = ClusterSnapshot::live("m2", "https://x")
            .with_summary(ResourceSummary::from_nodes(std::slice::from_ref(&node), &ResourceList::new(), 0, &[]))
            .with_nodes(vec![node])
            .with_pods(crate::model::PodFacts::default());
        let req = ReplicaRequirements { request: list(&[("cpu", 1000)]), ..Default::default() };
        assert_eq!(SummaryEstimator.max_replicas_each(&[&live], &req), vec![Some(4)]);
        let dims = Dimensions::new(&ModelSettings::default());
        let compiled = super::super::nodes::CompiledRequest::compile(u64::MAX, &req, &dims);
        assert_eq!(crate::model::assumed::deduct(&mut live, &req, &compiled, 3, &dims), 3);
        assert_eq!(SummaryEstimator.max_replicas_each(&[&live], &req), vec![Some(1)]);
        // Ids are the process's: the same name, the same id.
        assert_eq!(super::super::resources::resource_id("cpu"), super::super::resources::resource_id("cpu"));
        assert_ne!(super::super::resources::resource_id("cpu"), super::super::resources::resource_id("memory"));
    }

    #[test]
    fn resource_model_example() {
        // Grades cpu [0,1), [1,2), [2,4), one node each, request 1.5 CPU ⇒ 1.
        let grades = vec![
            ModelGrade { grade: 0, ranges: vec![("cpu".into(), 0, 1000)] },
            ModelGrade { grade: 1, ranges: vec![("cpu".into(), 1000, 2000)] },
            ModelGrade { grade: 2, ranges: vec![("cpu".into(), 2000, 4000)] },
        ];
        let c = cluster(
            ResourceSummary {
                allocatable: list(&[("cpu", 7000), ("pods", 330_000)]),
                allocatable_modelings: [(0, 1), (1, 1), (2, 1)].into_iter().collect(),
                ..Default::default()
            },
            grades,
        );
        let req = ReplicaRequirements { request: list(&[("cpu", 1500)]), ..Default::default() };
        assert_eq!(ResourceModelEstimator.max_replicas(&c, &req), Some(1));
        let (min, answers) = max_available(&estimators(), &[&c], &req).remove(0);
        assert_eq!(min, Some(1));
        // The models apply: the summary estimator defers to them, as Karmada's does.
        assert_eq!(answers, vec![("resource-models".into(), 1)]);
        // A requested resource the models lack makes them inapplicable: summary instead.
        let gpu =
            ReplicaRequirements { request: list(&[("cpu", 1500), ("nvidia.com/gpu", 1000)]), ..Default::default() };
        assert_eq!(ResourceModelEstimator.max_replicas(&c, &gpu), None);
        assert_eq!(SummaryEstimator.max_replicas(&c, &gpu), Some(0));
    }

    /// Grades by CPU: g0 [0, 2), g1 [2, 4) two nodes, g2 [4, ∞) one node (and memory
    /// [0, ∞) everywhere, so a memory request is modelled), with plenty of pod slots.
    fn modelled_member() -> ClusterSnapshot {
        let g = |grade: u32, cpu: i64| ModelGrade {
            grade,
            ranges: vec![("cpu".into(), cpu, i64::MAX), ("memory".into(), 8 * GI * 1000, i64::MAX)],
        };
        cluster(
            ResourceSummary {
                allocatable: list(&[("cpu", 14_000), ("memory", 64 * GI * 1000), ("pods", 1_100_000)]),
                allocatable_modelings: [(0, 1), (1, 2), (2, 1)].into_iter().collect(),
                ..Default::default()
            },
            // Declared out of order: deductions go to the grades in ascending order.
            vec![g(2, 4000), g(0, 0), g(1, 2000)],
        )
    }

    /// An offline member described by resource models: what one decision of the pass places
    /// there is taken from its modelled nodes (first-fit, in the estimator's own terms), so the
    /// next decision sees what is left of them — not only fewer pod slots — and explain says
    /// what earlier decisions took per node.
    #[test]
    fn resource_models_follow_what_earlier_decisions_took() {
        let dims = Dimensions::new(&ModelSettings::default());
        let cpu = |milli| ReplicaRequirements { request: list(&[("cpu", milli)]), ..Default::default() };
        let mut c = modelled_member();
        // 1 CPU: g1 2 nodes x 2 + g2 4 = 8.
        assert_eq!(ResourceModelEstimator.max_replicas(&c, &cpu(1000)), Some(8));
        let deduct = |c: &mut ClusterSnapshot, req: &ReplicaRequirements, n| {
            let compiled = super::super::nodes::CompiledRequest::compile(u64::MAX, req, &dims);
            crate::model::assumed::deduct(c, req, &compiled, n, &dims)
        };
        deduct(&mut c, &cpu(1000), 5);
        // First fit: both g1 nodes full, 1 CPU of g2's 4 taken.
        assert_eq!(ResourceModelEstimator.max_replicas(&c, &cpu(1000)), Some(3));
        assert_eq!(ResourceModelEstimator.max_replicas(&c, &cpu(2000)), Some(1), "3 CPU left on g2's node");
        let mut lines = Vec::new();
        ResourceModelEstimator.explain(&c, &cpu(1000), &mut |l| lines.push(l.to_string()));
        assert!(
            lines.iter().any(|l| l.contains("grade 2: 1 nodes x 3 replicas")
                && l.contains("earlier decisions of this pass took cpu 1, 1 pods of each")),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l.contains("grade 1: 2 nodes x 0 replicas")), "{lines:?}");
        // Two decisions that together exceed the member's modelled room: the second gets 3.
        deduct(&mut c, &cpu(1000), 3);
        assert_eq!(ResourceModelEstimator.max_replicas(&c, &cpu(1000)), Some(0));
        // A request no grade models all of (a GPU) is not estimated by the models, but its
        // replicas still take their modelled part (CPU) of the nodes.
        let mut c = modelled_member();
        let gpu =
            ReplicaRequirements { request: list(&[("cpu", 2000), ("nvidia.com/gpu", 1000)]), ..Default::default() };
        assert!(!models_apply(&c, &gpu));
        deduct(&mut c, &gpu, 2);
        assert_eq!(ResourceModelEstimator.max_replicas(&c, &cpu(2000)), Some(2), "g2's node: 4 CPU left");
    }

    /// The grouped first-fit equals a first fit node by node over the modelled nodes listed
    /// one by one, for sequences of mixed requests (CPU, memory, both).
    #[test]
    fn modelled_deductions_equal_a_node_by_node_first_fit() {
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for _ in 0..200 {
            let mut c = modelled_member();
            let grades = c.resource_models.clone();
            let mut ascending = grades.clone();
            ascending.sort_by_key(|g| g.grade);
            // The nodes one by one: (grade index, cpu left, memory left, pods left).
            let mut nodes: Vec<(usize, i64, i64, i64)> = Vec::new();
            for (gi, g) in ascending.iter().enumerate() {
                let n = c.summary.as_ref().and_then(|s| s.allocatable_modelings.get(&g.grade).copied()).unwrap_or(0);
                for _ in 0..n {
                    nodes.push((gi, g.ranges[0].1, g.ranges[1].1, MODEL_NODE_PODS));
                }
            }
            for _ in 0..6 {
                let (cpu, mem) = match next(3) {
                    0 => (500 * (1 + next(4) as i64), 0),
                    1 => (0, GI * 1000 * (1 + next(3) as i64)),
                    _ => (1000 * (1 + next(2) as i64), GI * 500 * (1 + next(4) as i64)),
                };
                let mut items = Vec::new();
                if cpu > 0 {
                    items.push(("cpu", cpu));
                }
                if mem > 0 {
                    items.push(("memory", mem));
                }
                let req = ReplicaRequirements { request: list(&items), ..Default::default() };
                let fits = |n: &(usize, i64, i64, i64)| {
                    let by = |left: i64, want: i64| if want > 0 { left / want } else { i64::MAX };
                    by(n.1, cpu).min(by(n.2, mem)).min(n.3)
                };
                let want: i64 = nodes.iter().map(fits).sum();
                assert_eq!(ResourceModelEstimator.max_replicas(&c, &req), Some(want), "{req:?}");
                let count = next(want as u64 + 3) as i64;
                let mut left = count;
                for n in nodes.iter_mut() {
                    let k = fits(n).min(left);
                    *n = (n.0, n.1 - k * cpu, n.2 - k * mem, n.3 - k);
                    left -= k;
                }
                let placed = {
                    let s = std::sync::Arc::make_mut(c.summary.as_mut().expect("summary"));
                    deduct_from_models(s, &grades, &req, count)
                };
                assert_eq!(placed, count - left);
            }
        }
    }

    /// A live member's nodes are graded again after a deduction, as its status would report.
    #[test]
    fn a_live_members_modelings_follow_a_deduction() {
        let dims = Dimensions::new(&ModelSettings::default());
        let grades = vec![
            ModelGrade { grade: 0, ranges: vec![("cpu".into(), 0, 2000)] },
            ModelGrade { grade: 1, ranges: vec![("cpu".into(), 2000, i64::MAX)] },
        ];
        let node = |n: &str| crate::model::NodeView::ready(n, list(&[("cpu", 4000), ("pods", 110_000)]));
        let nodes = vec![node("a"), node("b")];
        let mut live = ClusterSnapshot::live("m", "https://x")
            .with_summary(ResourceSummary::from_nodes(&nodes, &ResourceList::new(), 0, &grades))
            .with_nodes(nodes)
            .with_pods(crate::model::PodFacts::default())
            .with_resource_models(grades);
        let req = ReplicaRequirements { request: list(&[("cpu", 1500)]), ..Default::default() };
        assert_eq!(ResourceModelEstimator.max_replicas(&live, &req), Some(2), "two nodes of grade 1: 2 CPU each");
        let compiled = super::super::nodes::CompiledRequest::compile(u64::MAX, &req, &dims);
        assert_eq!(crate::model::assumed::deduct(&mut live, &req, &compiled, 1, &dims), 1);
        assert_eq!(ResourceModelEstimator.max_replicas(&live, &req), Some(2), "node a has 2.5 CPU free: still grade 1");
        assert_eq!(crate::model::assumed::deduct(&mut live, &req, &compiled, 1, &dims), 1);
        assert_eq!(ResourceModelEstimator.max_replicas(&live, &req), Some(1), "node a has 1 CPU free: grade 0");
    }
}
