//! Node-level estimation (Karmada's accurate estimator, `NodeResourceEstimator`): for each node
//! a replica may use — node selector, required node affinity (`In`, `NotIn`, `Exists`,
//! `DoesNotExist`, `Gt`, `Lt`; `matchFields` on `metadata.name`), tolerations against the
//! node's `NoSchedule`/`NoExecute` taints, schedulable and Ready, the GPU model constraint —
//! `floor(min over requested dimensions(free / request))`, bounded by the node's free pod
//! slots; summed over nodes. Free = allocatable − requests of the node's non-finished pods.
//!
//! Fast path: a cluster's nodes are grouped once per snapshot ([`NodeIndex`]: identical free
//! vector, free pod slots, taints, schedulability and CPU factor form one group), a replica's
//! requirements are compiled once ([`CompiledRequest`]: tolerations and affinity parsed), and
//! the answer per (cluster, request shape) is cached in the index, with the counts explain
//! formats; after a deduction a cached answer follows the nodes it moved (their figures
//! before and after) instead of walking every group again. A cache miss costs one division
//! per group; a request that looks at labels also
//! reads which nodes its label constraints admit, matched once per (snapshot, label
//! constraints) and kept in the index: requests of different sizes with the same node
//! selector, affinity and GPU model share it.
//! [`estimate_naive`] is the per-node loop the fast path must equal (tests, benchmark).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;

use super::dimensions::{Dimension, Dimensions, GpuConstraint, ModelSettings};
use super::snapshot::{ClusterTaint, NodeView};
use super::workload::ReplicaRequirements;
use crate::policy::types::{TaintEffect, Toleration, TolerationOperator};
use crate::util::hash::IdMap;

/// One `nodeSelectorRequirement`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NodeRequirement {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

/// One `nodeSelectorTerm`: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeTerm {
    #[serde(default)]
    pub match_expressions: Vec<NodeRequirement>,
    #[serde(default)]
    pub match_fields: Vec<NodeRequirement>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequiredAffinity {
    #[serde(default)]
    node_selector_terms: Vec<NodeTerm>,
}

impl NodeRequirement {
    /// Kubernetes' `nodeSelectorRequirement` against one value (None = key absent).
    pub fn matches(&self, value: Option<&str>) -> bool {
        let int = |s: &str| s.trim().parse::<i64>().ok();
        match self.operator.as_str() {
            "In" => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            "NotIn" => value.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            "Gt" | "Lt" => {
                let (Some(v), [bound]) = (value.and_then(int), self.values.as_slice()) else { return false };
                let Some(b) = int(bound) else { return false };
                if self.operator == "Gt" { v > b } else { v < b }
            }
            _ => false,
        }
    }
}

impl NodeTerm {
    /// A term with no requirement matches nothing (Kubernetes).
    pub fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        if self.match_expressions.is_empty() && self.match_fields.is_empty() {
            return false;
        }
        self.match_expressions.iter().all(|r| r.matches(labels.get(&r.key).map(String::as_str)))
            && self.match_fields.iter().all(|r| r.matches((r.key == "metadata.name").then_some(node_name)))
    }
}

/// Kubernetes' `Toleration.ToleratesTaint` for a pod toleration and a node (or cluster) taint:
/// the one rule, used by the node-level estimator and the `taint-toleration` filter.
pub fn tolerates(t: &Toleration, taint: &ClusterTaint) -> bool {
    if let Some(effect) = t.effect
        && effect != taint.effect
    {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.unwrap_or(TolerationOperator::Equal) {
        // An empty key with Exists matches every taint.
        TolerationOperator::Exists => true,
        // An empty key with Equal matches any key whose value equals the toleration's
        // (Kubernetes' `ToleratesTaint`; Karmada's taint-toleration example relies on it).
        TolerationOperator::Equal => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        TolerationOperator::Lt | TolerationOperator::Gt => false,
    }
}

/// Whether every `NoSchedule`/`NoExecute` taint is tolerated.
pub fn tolerates_all(tolerations: &[Toleration], taints: &[ClusterTaint]) -> bool {
    taints
        .iter()
        .filter(|t| t.effect != TaintEffect::PreferNoSchedule)
        .all(|taint| tolerations.iter().any(|t| tolerates(t, taint)))
}

/// A replica's requirements, parsed once: what the node loop reads.
#[derive(Debug)]
pub struct CompiledRequest {
    /// Unique per compilation in the process (the cache key in [`NodeIndex`]); `u64::MAX`:
    /// not cached.
    pub id: u64,
    /// Unique per distinct label constraints (node selector, required node affinity, GPU
    /// model) in the process: the key of the admitted nodes in [`NodeIndex`]; `u64::MAX`: not
    /// cached.
    pub labels: u64,
    /// Requested amount per dimension that bounds the estimate (pod slots excluded).
    pub wants: Vec<(Arc<dyn Dimension>, i64)>,
    /// Per entry of `wants`, its amount as a [`Divisor`]: the node loop divides free amounts
    /// by it once per group and walk.
    divisors: Vec<Divisor>,
    pub node_selector: Vec<(String, String)>,
    /// Required node affinity terms (any must hold); None = no required affinity.
    pub affinity: Option<Vec<NodeTerm>>,
    pub tolerations: Vec<Toleration>,
    pub gpu: GpuConstraint,
}

impl std::fmt::Debug for dyn Dimension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl CompiledRequest {
    /// Compiles requirements. Tolerations or affinity that cannot be read make the request
    /// match no node (never more than the pod could get).
    pub fn compile(id: u64, req: &ReplicaRequirements, dims: &Dimensions) -> CompiledRequest {
        let tolerations: Vec<Toleration> = if req.tolerations.is_empty() {
            Vec::new()
        } else {
            serde_json::from_str::<Vec<serde_json::Value>>(&req.tolerations)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|v| serde_json::from_value::<Toleration>(v).ok())
                .collect()
        };
        let affinity = if req.node_affinity.is_empty() {
            None
        } else {
            Some(serde_json::from_str::<RequiredAffinity>(&req.node_affinity).unwrap_or_default().node_selector_terms)
        };
        let wants = dims.requested(req);
        CompiledRequest {
            id,
            labels: u64::MAX,
            divisors: wants.iter().map(|(_, want)| Divisor::new(*want)).collect(),
            wants,
            node_selector: req.node_selector.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            affinity,
            tolerations,
            gpu: req.gpu.clone(),
        }
    }

    /// [`CompiledRequest::compile`] with the process's id of its label constraints, so the
    /// nodes they admit are matched once per index ([`NodeIndex`] keeps them).
    pub fn compile_labelled(id: u64, req: &ReplicaRequirements, dims: &Dimensions) -> CompiledRequest {
        let mut c = CompiledRequest::compile(id, req, dims);
        if c.reads_labels() {
            c.labels = label_id(req);
        }
        c
    }

    /// Whether the request looks at node labels or names.
    pub fn reads_labels(&self) -> bool {
        !self.node_selector.is_empty() || self.affinity.is_some() || self.gpu.is_set()
    }

    /// Node selector, required node affinity and GPU model against a node's name and labels.
    pub fn admits_labels(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.node_selector.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.affinity.as_ref().is_none_or(|terms| terms.iter().any(|t| t.matches(name, labels)))
            && (!self.gpu.is_set() || self.gpu.admits(labels))
    }

    /// Every node predicate: schedulable, Ready, taints tolerated, labels admitted.
    pub fn admits(&self, node: &NodeView) -> bool {
        node.ready
            && !node.unschedulable
            && tolerates_all(&self.tolerations, &node.taints)
            && self.admits_labels(&node.name, &node.labels)
    }

    /// Replicas one node takes by its free amounts (no predicates).
    pub fn per_node(&self, node: &NodeView) -> i64 {
        let mut n = super::dimensions::PodSlots.node_free(node) / 1000;
        for (d, want) in &self.wants {
            n = n.min(d.node_free(node) / want);
        }
        n.max(0)
    }
}

/// Division of non-negative amounts by one positive amount, by a multiplication and shifts
/// instead of a division instruction (the estimate divides every node group's free amounts by
/// the same request): the round-up method of Granlund and Montgomery, "Division by Invariant
/// Integers using Multiplication" (PLDI 1994, figure 4.1), exact for every dividend below
/// 2⁶⁴. A negative dividend, or a divisor that is not positive, divides as `/` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Divisor {
    d: i64,
    magic: u64,
    shift1: u32,
    shift2: u32,
}

impl Divisor {
    pub(crate) fn new(d: i64) -> Divisor {
        let Ok(du) = u64::try_from(d) else { return Divisor { d, magic: 0, shift1: 0, shift2: 0 } };
        if du == 0 {
            return Divisor { d, magic: 0, shift1: 0, shift2: 0 };
        }
        // l = ⌈log₂ d⌉ (d < 2⁶³, so l ≤ 63); m = ⌊2⁶⁴ · (2ˡ − d) / d⌋ + 1, below 2⁶⁴ since 2ˡ − d < d.
        let l = 64 - (du - 1).leading_zeros();
        let m = ((1u128 << 64) * ((1u128 << l) - u128::from(du))) / u128::from(du) + 1;
        Divisor { d, magic: u64::try_from(m).unwrap_or(u64::MAX), shift1: l.min(1), shift2: l.saturating_sub(1) }
    }

    /// `n / d`, rounded toward zero as `/` rounds.
    #[inline]
    pub(crate) fn div(&self, n: i64) -> i64 {
        match u64::try_from(n) {
            Ok(n) if self.d > 0 => {
                let t = ((u128::from(n) * u128::from(self.magic)) >> 64) as u64;
                ((t + ((n - t) >> self.shift1)) >> self.shift2) as i64
            }
            _ => n / self.d,
        }
    }
}

/// The wanted columns of a request in one index ([`NodeIndex::wanted_columns`]): per wanted
/// dimension its column (`None`: no node has it) and the request's amount of it. Up to four
/// on the stack (requests want CPU, memory and perhaps one accelerator), more in a vector.
enum Cols {
    Few(usize, [(Option<usize>, Divisor); 4]),
    Many(Vec<(Option<usize>, Divisor)>),
}

impl std::ops::Deref for Cols {
    type Target = [(Option<usize>, Divisor)];
    fn deref(&self) -> &Self::Target {
        match self {
            Cols::Few(n, cols) => cols.get(..*n).unwrap_or(&[]),
            Cols::Many(cols) => cols,
        }
    }
}

/// What makes nodes identical for the estimator: free vector, free pod slots, taints,
/// schedulable and Ready, CPU factor (bits).
type GroupKey = (Vec<i64>, i64, Vec<ClusterTaint>, bool, u64);

/// Nodes with identical free vector, pod slots, taints, schedulability and CPU factor.
#[derive(Debug, Clone)]
struct NodeGroup {
    /// Free amount per column of [`NodeIndex::columns`].
    free: Vec<i64>,
    pods_free: i64,
    taints: Vec<ClusterTaint>,
    usable: bool,
    cpu_factor: f64,
    /// Indices into the snapshot's nodes.
    nodes: Vec<u32>,
}

impl NodeGroup {
    /// Replicas one node of the group takes, by its pod slots and the wanted columns
    /// ([`NodeIndex::wanted_columns`]); may be ≤ 0.
    fn per_replica(&self, cols: &[(Option<usize>, Divisor)]) -> i64 {
        per_replica(&self.free, self.pods_free, cols)
    }
}

/// Cluster-wide CPU figures, raw and normalised by the performance table (cores × 1000).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuFigures {
    pub allocatable_raw: i64,
    pub requested_raw: i64,
    pub allocatable_normalised: f64,
    pub requested_normalised: f64,
    /// Largest free CPU of one schedulable Ready node, raw, and that node's normalised free.
    pub largest_free_raw: i64,
    pub largest_free_normalised: f64,
}

impl CpuFigures {
    /// Average performance factor of the allocatable CPU (1 without nodes).
    pub fn mean_factor(&self) -> f64 {
        if self.allocatable_raw > 0 { self.allocatable_normalised / self.allocatable_raw as f64 } else { 1.0 }
    }
}

/// CPU figures of a set of nodes, raw and normalised by the performance table.
pub fn cpu_figures(nodes: &[NodeView], settings: &ModelSettings) -> CpuFigures {
    cpu_figures_with(nodes, |_, n| settings.cpu_factor(&n.labels))
}

/// [`cpu_figures`] with each node's CPU factor given by `factor` (node index, node).
fn cpu_figures_with(nodes: &[NodeView], factor: impl Fn(usize, &NodeView) -> f64) -> CpuFigures {
    let mut cpu = CpuFigures::default();
    for (i, n) in nodes.iter().enumerate() {
        let factor = factor(i, n);
        let alloc = n.allocatable.get("cpu");
        let used = n.requested.get("cpu");
        cpu.allocatable_raw = cpu.allocatable_raw.saturating_add(alloc);
        cpu.requested_raw = cpu.requested_raw.saturating_add(used);
        cpu.allocatable_normalised += alloc as f64 * factor;
        cpu.requested_normalised += used as f64 * factor;
        let free_cpu = alloc.saturating_sub(used).max(0);
        if n.ready && !n.unschedulable && free_cpu as f64 * factor > cpu.largest_free_normalised {
            cpu.largest_free_normalised = free_cpu as f64 * factor;
            cpu.largest_free_raw = free_cpu;
        }
    }
    cpu
}

/// The grouped nodes of one snapshot, with the per-request-shape answers of this snapshot.
#[derive(Debug)]
pub struct NodeIndex {
    /// The model settings it was built with (their identity: it holds them).
    settings: crate::util::memo::ArcKey<ModelSettings>,
    /// [`Dimensions::id`] of the dimensions the columns came from.
    dims: u64,
    columns: Vec<Arc<dyn Dimension>>,
    /// How many of the first columns are allocatable resources (pods do not change which
    /// nodes have them); the rest are backed by labels.
    allocatable_columns: usize,
    /// The groups, in no particular order: every answer is the same whatever their order.
    groups: Vec<NodeGroup>,
    /// Per node (by position), its group.
    group_of: Vec<NodeGroupIx>,
    /// CPU figures for explain ([`NodeIndex::cpu`]), computed on first use: a deduction
    /// changes them, and explain is asked of few of the views a pass deducts from.
    cpu: OnceLock<CpuFigures>,
    /// The nodes' allocatable CPU, raw and normalised, summed as [`cpu_figures`] sums them
    /// (pods do not change it: kept when pods are added). Its mean factor tells explain
    /// whether the CPU is heterogeneous without the figures a deduction resets.
    cpu_allocatable: (i64, f64),
    /// Per compiled request ([`CompiledRequest::id`]): its walk over the groups, as of the
    /// first so many entries of `moved` (brought up to date when asked again).
    cache: Mutex<IdMap<u64, (Walk, usize)>>,
    /// The nodes pods were added to since the index was built ([`NodeIndex::add_pods`]), in
    /// order: a cached walk follows them instead of walking every group again.
    moved: Vec<Moved>,
    /// Per label constraints ([`CompiledRequest::labels`]): which nodes (by position) they
    /// admit. Pods do not change labels: kept when pods are added.
    admitted: Mutex<IdMap<u64, Arc<[bool]>>>,
    /// Per compiled request ([`CompiledRequest::id`]): its explain lines
    /// ([`NodeIndex::explain_shared`]) for the nodes as they are. Forgotten when pods are
    /// added (the lines read the free amounts); a copy starts without them.
    explained: Mutex<IdMap<u64, Arc<[String]>>>,
}

/// The index of a node group among a [`NodeIndex`]'s groups, as the index keeps each node's
/// (`group_of`) while pods move nodes between groups (a node's position, the other index the
/// index keeps, is a `u32` of the snapshot's node list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NodeGroupIx(u32);

impl NodeGroupIx {
    /// The group at this index of the groups.
    fn at(index: usize) -> Self {
        NodeGroupIx(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// Its index in the groups.
    const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A node pods were added to: its free amounts (per column) and pod slots before and after.
#[derive(Debug, Clone)]
struct Moved {
    node: u32,
    before: (Box<[i64]>, i64),
    after: (Box<[i64]>, i64),
}

/// Moves a cached walk follows at most when it is asked again; beyond, it is walked again.
const MOVES_FOLLOWED: usize = 64;
/// Moves an index keeps; beyond, all but the last [`MOVES_FOLLOWED`] go, with the cached
/// walks older than those.
const MOVES_KEPT: usize = 2 * MOVES_FOLLOWED;

/// Replicas one node with these free amounts and pod slots takes of the wanted columns
/// ([`NodeIndex::wanted_columns`]); may be ≤ 0.
fn per_replica(free: &[i64], pods_free: i64, cols: &[(Option<usize>, Divisor)]) -> i64 {
    cols.iter().fold(pods_free, |acc, (c, want)| match c.and_then(|c| free.get(c)) {
        Some(free) => acc.min(want.div(*free)),
        None => 0,
    })
}

/// One request's walk over a snapshot's node groups: the estimate, and where the nodes went
/// (the counts explain formats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Walk {
    total: i64,
    fit: usize,
    unusable: usize,
    tainted: usize,
    unlabelled: usize,
    full: usize,
}

impl NodeIndex {
    /// Groups the nodes. `settings` gives the CPU factors and label-backed dimensions.
    pub fn build(nodes: &[NodeView], dims: &Dimensions, settings: &Arc<ModelSettings>) -> NodeIndex {
        let mut columns: Vec<Arc<dyn Dimension>> = Vec::new();
        let mut seen: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        for n in nodes {
            for (name, _) in n.allocatable.iter() {
                if name != "pods" && seen.insert(name) {
                    columns.push(dims.get(name));
                }
            }
        }
        let allocatable_columns = columns.len();
        for d in dims.iter() {
            if !d.hard() || d.name() == "pods" || seen.contains(d.name()) {
                continue;
            }
            // Label-backed dimensions (no allocatable entry) still get a column.
            if nodes.iter().any(|n| d.node_free(n) > 0) {
                columns.push(d.clone());
            }
        }
        let mut groups: Vec<NodeGroup> = Vec::new();
        let mut by_key: HashMap<GroupKey, usize> = HashMap::new();
        let mut group_of = Vec::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let free: Vec<i64> = columns.iter().map(|d| d.node_free(n)).collect();
            let pods_free = super::dimensions::PodSlots.node_free(n) / 1000;
            let usable = n.ready && !n.unschedulable;
            let factor = settings.cpu_factor(&n.labels);
            let key = (free, pods_free, n.taints.to_vec(), usable, factor.to_bits());
            let idx = u32::try_from(i).unwrap_or(u32::MAX);
            match by_key.get(&key) {
                Some(g) => {
                    groups[*g].nodes.push(idx);
                    group_of.push(NodeGroupIx::at(*g));
                }
                None => {
                    group_of.push(NodeGroupIx::at(groups.len()));
                    by_key.insert(key.clone(), groups.len());
                    let (free, pods_free, taints, usable, _) = key;
                    groups.push(NodeGroup { free, pods_free, taints, usable, cpu_factor: factor, nodes: vec![idx] });
                }
            }
        }
        let mut cpu_allocatable = (0i64, 0f64);
        for (n, &g) in nodes.iter().zip(&group_of) {
            let alloc = n.allocatable.get("cpu");
            let factor = groups.get(g.index()).map_or(1.0, |g| g.cpu_factor);
            cpu_allocatable.0 = cpu_allocatable.0.saturating_add(alloc);
            cpu_allocatable.1 += alloc as f64 * factor;
        }
        NodeIndex {
            settings: crate::util::memo::ArcKey::of(settings),
            dims: dims.id(),
            columns,
            allocatable_columns,
            groups,
            group_of,
            cpu: OnceLock::new(),
            cpu_allocatable,
            cache: Mutex::new(IdMap::default()),
            moved: Vec::new(),
            admitted: Mutex::new(IdMap::default()),
            explained: Mutex::new(IdMap::default()),
        }
    }

    /// The cluster-wide CPU figures of `nodes` (the nodes this index was built from), each
    /// node's CPU factor from its group: [`cpu_figures`] of the nodes with the index's settings.
    pub fn cpu(&self, nodes: &[NodeView]) -> CpuFigures {
        *self.cpu.get_or_init(|| {
            let mut factors = vec![1.0; nodes.len()];
            for g in &self.groups {
                for &n in &g.nodes {
                    if let Some(x) = factors.get_mut(n as usize) {
                        *x = g.cpu_factor;
                    }
                }
            }
            cpu_figures_with(nodes, |i, _| factors.get(i).copied().unwrap_or(1.0))
        })
    }

    /// [`CpuFigures::mean_factor`] of [`NodeIndex::cpu`], from the allocatable CPU alone
    /// (the same bits: the same sums in the same order).
    pub fn cpu_mean_factor(&self) -> f64 {
        let (raw, normalised) = self.cpu_allocatable;
        CpuFigures { allocatable_raw: raw, allocatable_normalised: normalised, ..CpuFigures::default() }.mean_factor()
    }

    /// The index of `nodes` after the nodes at `changed` had pods added (their `requested`
    /// and `pods` grew; nothing else changed): those nodes are moved to the group of their new
    /// key, the rest is kept. Equal to [`NodeIndex::build`] on the changed nodes (same groups,
    /// in the same order, same CPU figures); `None` when a full build is needed (a column
    /// backed by labels may have lost its last free node).
    pub fn after_added_pods(&self, nodes: &[NodeView], changed: &[usize]) -> Option<NodeIndex> {
        let mut copy = NodeIndex {
            settings: self.settings.clone(),
            dims: self.dims,
            columns: self.columns.clone(),
            allocatable_columns: self.allocatable_columns,
            groups: self.groups.clone(),
            group_of: self.group_of.clone(),
            cpu: OnceLock::new(),
            cpu_allocatable: self.cpu_allocatable,
            cache: Mutex::new(self.cache.lock().map(|c| c.clone()).unwrap_or_default()),
            moved: self.moved.clone(),
            admitted: Mutex::new(self.admitted.lock().map(|a| a.clone()).unwrap_or_default()),
            explained: Mutex::new(IdMap::default()),
        };
        copy.add_pods(nodes, changed).then_some(copy)
    }

    /// [`NodeIndex::after_added_pods`] in place, for an index no one else holds (a pass's
    /// deductions from one member's view after the first: no copy of every group). `false`
    /// when a full build is needed; the index is then in no useful state and must be dropped.
    pub fn add_pods(&mut self, nodes: &[NodeView], changed: &[usize]) -> bool {
        if self.group_of.len() != nodes.len() {
            return false;
        }
        // Moves are logged only for cached walks to follow: with none cached, a walk made
        // later starts from the nodes as they are then.
        let logged = self.cache.get_mut().is_ok_and(|c| !c.is_empty());
        if let Ok(explained) = self.explained.get_mut() {
            explained.clear();
        }
        if !logged {
            self.moved.clear();
        }
        for &i in changed {
            let figures = |idx: &NodeIndex| {
                let g = idx.group_of.get(i).and_then(|g| idx.groups.get(g.index()));
                g.map(|g| (g.free.clone().into_boxed_slice(), g.pods_free))
            };
            let before = if logged { figures(self) } else { None };
            if !self.move_node(nodes, i) {
                return false;
            }
            if let Some(before) = before
                && let (Some(after), Ok(node)) = (figures(self), u32::try_from(i))
            {
                self.moved.push(Moved { node, before, after });
            }
        }
        // A label-backed column must keep a node with room (a build would not have it).
        let (from, to) = (self.allocatable_columns, self.columns.len());
        if !(from..to).all(|c| self.groups.iter().any(|g| g.free.get(c).is_some_and(|f| *f > 0))) {
            return false;
        }
        self.cpu = OnceLock::new();
        if self.moved.len() > MOVES_KEPT {
            // The oldest moves go, with the walks that would still need them.
            let cut = self.moved.len() - MOVES_FOLLOWED;
            self.moved.drain(..cut);
            if let Ok(cache) = self.cache.get_mut() {
                cache.retain(|_, (_, at)| *at >= cut);
                cache.values_mut().for_each(|(_, at)| *at -= cut);
            }
        }
        true
    }

    /// Moves node `i` (its pods changed) to the group of its new key: an existing group, its
    /// own group when it was alone there, or a new one. An emptied group is removed (the last
    /// group takes its place). `false` when the node is not in the index.
    fn move_node(&mut self, nodes: &[NodeView], i: usize) -> bool {
        let (Some(n), Some(&old)) = (nodes.get(i), self.group_of.get(i)) else { return false };
        let old = old.index();
        let idx = u32::try_from(i).unwrap_or(u32::MAX);
        let free: Vec<i64> = self.columns.iter().map(|d| d.node_free(n)).collect();
        let pods_free = super::dimensions::PodSlots.node_free(n) / 1000;
        let groups = &mut self.groups;
        let Some(from) = groups.get_mut(old) else { return false };
        let Ok(at) = from.nodes.binary_search(&idx) else { return false };
        from.nodes.remove(at);
        let emptied = from.nodes.is_empty();
        let to = {
            let from = &groups[old];
            groups.iter().position(|g| {
                g.pods_free == pods_free
                    && g.free == free
                    && !g.nodes.is_empty()
                    && g.usable == from.usable
                    && g.cpu_factor.to_bits() == from.cpu_factor.to_bits()
                    && g.taints == from.taints
            })
        };
        let to = match to {
            Some(to) => to,
            None if emptied => {
                // Alone in its group: the group takes the node's new figures.
                let g = &mut groups[old];
                (g.free, g.pods_free) = (free, pods_free);
                old
            }
            None => {
                let from = &groups[old];
                let group = NodeGroup {
                    free,
                    pods_free,
                    taints: from.taints.clone(),
                    usable: from.usable,
                    cpu_factor: from.cpu_factor,
                    nodes: Vec::new(),
                };
                groups.push(group);
                groups.len() - 1
            }
        };
        let g = &mut groups[to];
        let at = g.nodes.partition_point(|x| *x < idx);
        g.nodes.insert(at, idx);
        self.group_of[i] = NodeGroupIx::at(to);
        if emptied && to != old {
            // The last group fills the emptied one's place.
            groups.swap_remove(old);
            if let Some(moved) = groups.get(old) {
                let slot = NodeGroupIx::at(old);
                for &m in &moved.nodes {
                    if let Some(x) = self.group_of.get_mut(m as usize) {
                        *x = slot;
                    }
                }
            }
        }
        true
    }

    /// The index whatever its groups' order (tests compare an updated index with a build):
    /// its columns and its groups by first node. Checks that every node is in the group
    /// `group_of` names.
    #[cfg(test)]
    pub(crate) fn canonical(&self) -> String {
        for (gi, g) in self.groups.iter().enumerate() {
            assert!(!g.nodes.is_empty(), "an empty group is kept");
            for &n in &g.nodes {
                assert_eq!(self.group_of[n as usize].index(), gi, "node {n}");
            }
        }
        let mut groups: Vec<&NodeGroup> = self.groups.iter().collect();
        groups.sort_by_key(|g| g.nodes.first().copied());
        let columns: Vec<&str> = self.columns.iter().map(|c| c.name()).collect();
        format!("{columns:?} {} {groups:?}", self.allocatable_columns)
    }

    /// Number of node groups (for tests and the benchmark).
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The node-level estimate for a compiled request, cached per request.
    pub fn estimate(&self, nodes: &[NodeView], req: &CompiledRequest) -> i64 {
        self.walk(nodes, req).total
    }

    /// The request's walk, from the cache or computed (and cached).
    fn walk(&self, nodes: &[NodeView], req: &CompiledRequest) -> Walk {
        if req.id == u64::MAX {
            return self.compute(nodes, req);
        }
        let now = self.moved.len();
        let cached = match crate::util::memo::on(crate::util::memo::Name::NodeWalks) {
            true => self.cache.lock().ok().and_then(|cache| cache.get(&req.id).copied()),
            false => None,
        };
        let v = match cached {
            Some((v, at)) if at == now => return v,
            Some((v, at)) if at < now && now - at <= MOVES_FOLLOWED => {
                match self.moved.get(at..).and_then(|moved| self.follow(nodes, req, v, moved)) {
                    Some(v) => {
                        debug_assert_eq!(v, self.compute(nodes, req), "a walk that followed the moved nodes");
                        v
                    }
                    None => self.compute(nodes, req),
                }
            }
            _ => self.compute(nodes, req),
        };
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(req.id, (v, now));
        }
        v
    }

    /// `walk` after the nodes of `moved` took their new figures, node by node: each node the
    /// request may use (its group usable and tolerated, its labels admitted: none of which
    /// pods change) leaves its old count and enters its new one. `None` when a sum may have
    /// saturated (then only a walk over the groups is exact).
    fn follow(&self, nodes: &[NodeView], req: &CompiledRequest, mut walk: Walk, moved: &[Moved]) -> Option<Walk> {
        if walk.total == i64::MAX {
            return None;
        }
        let cols = self.wanted_columns(req);
        let admitted = self.admission(nodes, req);
        for m in moved {
            let i = m.node as usize;
            let group = self.groups.get(self.group_of.get(i)?.index())?;
            let admits = admitted.as_ref().is_none_or(|bits| bits.get(i).copied().unwrap_or(false));
            if !group.usable || !tolerates_all(&req.tolerations, &group.taints) || !admits {
                continue;
            }
            match per_replica(&m.before.0, m.before.1, &cols) {
                per if per <= 0 => walk.full = walk.full.checked_sub(1)?,
                per => {
                    walk.fit = walk.fit.checked_sub(1)?;
                    walk.total = walk.total.checked_sub(per)?;
                }
            }
            match per_replica(&m.after.0, m.after.1, &cols) {
                per if per <= 0 => walk.full += 1,
                per => {
                    walk.fit += 1;
                    walk.total = walk.total.checked_add(per).filter(|t| *t < i64::MAX)?;
                }
            }
        }
        Some(walk)
    }

    /// Which nodes (by position) the request's label constraints admit; None when it reads no
    /// labels (every node is admitted).
    fn admission(&self, nodes: &[NodeView], req: &CompiledRequest) -> Option<Arc<[bool]>> {
        if !req.reads_labels() {
            return None;
        }
        let matched = || -> Arc<[bool]> { nodes.iter().map(|n| req.admits_labels(&n.name, &n.labels)).collect() };
        if req.labels == u64::MAX {
            return Some(matched());
        }
        if let Ok(admitted) = self.admitted.lock()
            && let Some(bits) = admitted.get(&req.labels)
            && bits.len() == nodes.len()
        {
            return Some(bits.clone());
        }
        let bits = matched();
        if let Ok(mut admitted) = self.admitted.lock() {
            admitted.insert(req.labels, bits.clone());
        }
        Some(bits)
    }

    /// Per wanted dimension of `req` its column; a dimension no node has lets nothing fit.
    fn wanted_columns(&self, req: &CompiledRequest) -> Cols {
        let column = |d: &Arc<dyn Dimension>| {
            self.columns.iter().position(|c| std::ptr::addr_eq(Arc::as_ptr(c), Arc::as_ptr(d)) || c.name() == d.name())
        };
        let mut wanted = req.wants.iter().zip(&req.divisors).map(|((d, _), want)| (column(d), *want));
        match req.wants.len() {
            n @ 0..=4 => {
                let mut few = [(None, Divisor::new(1)); 4];
                for slot in few.iter_mut().take(n) {
                    if let Some(c) = wanted.next() {
                        *slot = c;
                    }
                }
                Cols::Few(n, few)
            }
            _ => Cols::Many(wanted.collect()),
        }
    }

    /// Where `count` replicas of `req` go first-fit, in node order: (node position, replicas)
    /// for each node that takes some, as [`CompiledRequest::admits`] and
    /// [`CompiledRequest::per_node`] give node by node, from the groups (each group's figure
    /// computed once, no node's maps read, the walk stops once every replica is placed).
    /// Fewer than `count` when the nodes are full. `None` when the index was built with other
    /// dimensions than `dims` (another profile's model settings) or other nodes.
    pub fn first_fit(
        &self,
        nodes: &[NodeView],
        req: &CompiledRequest,
        dims: &Dimensions,
        count: i64,
    ) -> Option<Vec<(usize, i64)>> {
        if self.dims != dims.id() || self.group_of.len() != nodes.len() {
            return None;
        }
        let cols = self.wanted_columns(req);
        let admitted = self.admission(nodes, req);
        let mut per_group: Vec<Option<i64>> = vec![None; self.groups.len()];
        let mut out = Vec::new();
        let mut left = count;
        for (i, &g) in self.group_of.iter().enumerate() {
            if left <= 0 {
                break;
            }
            if admitted.as_ref().is_some_and(|bits| !bits.get(i).copied().unwrap_or(false)) {
                continue;
            }
            let (Some(slot), Some(group)) = (per_group.get_mut(g.index()), self.groups.get(g.index())) else {
                return None;
            };
            let per = *slot.get_or_insert_with(|| {
                if group.usable && tolerates_all(&req.tolerations, &group.taints) {
                    group.per_replica(&cols).max(0)
                } else {
                    0
                }
            });
            let k = per.min(left);
            if k > 0 {
                out.push((i, k));
                left -= k;
            }
        }
        Some(out)
    }

    fn compute(&self, nodes: &[NodeView], req: &CompiledRequest) -> Walk {
        let cols = self.wanted_columns(req);
        let admitted = self.admission(nodes, req);
        let mut w = Walk::default();
        for g in &self.groups {
            let n = g.nodes.len();
            if !g.usable {
                w.unusable += n;
                continue;
            }
            if !tolerates_all(&req.tolerations, &g.taints) {
                w.tainted += n;
                continue;
            }
            let count = match &admitted {
                Some(bits) => g.nodes.iter().filter(|i| bits.get(**i as usize).copied().unwrap_or(false)).count(),
                None => n,
            };
            w.unlabelled += n - count;
            let per = g.per_replica(&cols);
            if per <= 0 {
                w.full += count;
                continue;
            }
            w.fit += count;
            w.total = w.total.saturating_add(per.saturating_mul(count as i64));
        }
        w
    }

    /// [`NodeIndex::explain`], kept per compiled request until pods are added: the scheduler
    /// asks it of every cluster that cannot take all of a workload's replicas, and workloads
    /// of one request shape ask it of the same clusters in turn.
    pub fn explain_shared(&self, nodes: &[NodeView], req: &CompiledRequest) -> Arc<[String]> {
        if req.id == u64::MAX {
            return self.explain(nodes, req).into();
        }
        if let Ok(explained) = self.explained.lock()
            && let Some(lines) = explained.get(&req.id)
        {
            return lines.clone();
        }
        let lines: Arc<[String]> = self.explain(nodes, req).into();
        if let Ok(mut explained) = self.explained.lock() {
            explained.insert(req.id, lines.clone());
        }
        lines
    }

    /// Why nodes were left out and the largest free amounts, for explain (the counts come from
    /// the request's walk: cached when the estimate was asked).
    pub fn explain(&self, nodes: &[NodeView], req: &CompiledRequest) -> Vec<String> {
        let Walk { fit, unusable, tainted, unlabelled, full, .. } = self.walk(nodes, req);
        let mut out = Vec::with_capacity(1 + req.wants.len());
        out.push(format!(
            "{fit} of {} nodes fit a replica (not Ready or cordoned: {unusable}, untolerated taints: {tainted}, \
             selector/affinity/GPU model: {unlabelled}, too full: {full})",
            nodes.len()
        ));
        for (d, want) in &req.wants {
            let Some(c) = self.columns.iter().position(|x| x.name() == d.name()) else {
                out.push(format!("{}: {} per replica, no node has it", d.name(), shown(d.name(), *want)));
                continue;
            };
            let best = self.groups.iter().filter(|g| g.usable).map(|g| g.free[c]).max().unwrap_or(0);
            // Heterogeneous CPU (a mean performance factor other than 1): raw and normalised.
            let cpu =
                (d.name() == "cpu" && (self.cpu_mean_factor() - 1.0).abs() > f64::EPSILON).then(|| self.cpu(nodes));
            if let Some(cpu) = cpu {
                let best_group = self.groups.iter().filter(|g| g.usable).max_by(|a, b| {
                    (a.free[c] as f64 * a.cpu_factor)
                        .total_cmp(&(b.free[c] as f64 * b.cpu_factor))
                        .then_with(|| a.nodes.first().cmp(&b.nodes.first()))
                });
                let factor = best_group.map_or(1.0, |g| g.cpu_factor);
                out.push(format!(
                    "cpu: {} normalised cores ({} raw) needed per replica, largest node has {} normalised ({} raw) free",
                    cores(*want as f64 * factor),
                    cores(*want as f64),
                    cores(cpu.largest_free_normalised),
                    cores(cpu.largest_free_raw as f64),
                ));
            } else {
                out.push(format!(
                    "{}: {} per replica, largest node has {} free",
                    d.name(),
                    shown(d.name(), *want),
                    shown(d.name(), best)
                ));
            }
        }
        out
    }
}

fn shown(name: &str, milli: i64) -> String {
    super::quantity::format_milli(name, milli)
}

/// Milli-cores as cores with at most one decimal.
fn cores(milli: f64) -> String {
    let v = (milli / 100.0).round() / 10.0;
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

/// The per-node first fit without grouping: what [`NodeIndex::first_fit`] must equal.
pub fn first_fit_naive(nodes: &[NodeView], req: &CompiledRequest, count: i64) -> Vec<(usize, i64)> {
    let mut out = Vec::new();
    let mut left = count;
    for (i, n) in nodes.iter().enumerate() {
        if left <= 0 {
            break;
        }
        if !req.admits(n) {
            continue;
        }
        let k = req.per_node(n).min(left);
        if k > 0 {
            out.push((i, k));
            left -= k;
        }
    }
    out
}

/// The per-node loop without grouping or caching: what [`NodeIndex::estimate`] must equal.
pub fn estimate_naive(nodes: &[NodeView], req: &CompiledRequest) -> i64 {
    nodes.iter().filter(|n| req.admits(n)).map(|n| req.per_node(n)).fold(0i64, |a, b| a.saturating_add(b))
}

/// The lazily built [`NodeIndex`] of a snapshot (not content: [`crate::util::derived::Derived`]).
pub type IndexCache = crate::util::derived::Derived<NodeIndex>;

impl IndexCache {
    /// The index, built on first use with these settings; a different settings object gets a
    /// fresh, uncached index.
    pub fn get(&self, nodes: &[NodeView], dims: &Dimensions, settings: &Arc<ModelSettings>) -> Arc<NodeIndex> {
        match self.cached(nodes, dims, settings) {
            Some(idx) => Arc::clone(idx),
            None => Arc::new(NodeIndex::build(nodes, dims, settings)),
        }
    }

    /// `f` of the index, as [`IndexCache::get`] gives it, borrowed when it is the cached one
    /// (the estimators ask once per workload and cluster: no reference count moved).
    pub fn with<R>(
        &self,
        nodes: &[NodeView],
        dims: &Dimensions,
        settings: &Arc<ModelSettings>,
        f: impl FnOnce(&NodeIndex) -> R,
    ) -> R {
        match self.cached(nodes, dims, settings) {
            Some(idx) => f(idx),
            None => f(&NodeIndex::build(nodes, dims, settings)),
        }
    }

    /// The cached index (built on first use) when it was built with these settings.
    fn cached(&self, nodes: &[NodeView], dims: &Dimensions, settings: &Arc<ModelSettings>) -> Option<&Arc<NodeIndex>> {
        let idx = self.get_or_make(|| NodeIndex::build(nodes, dims, settings));
        idx.settings.is(settings).then_some(idx)
    }

    /// Sets the index (of the current nodes).
    pub fn set(&mut self, index: NodeIndex) {
        self.set_shared(Arc::new(index));
    }
}

/// Compiles requirements once per distinct shape (bounded; cleared when full).
///
/// Ids come from one counter for the whole process: every profile has its own compiler, and
/// their requests meet in the same snapshots' indexes, where an id is a cache key.
#[derive(Debug, Default)]
pub struct Compiler {
    cache: Mutex<Compiled>,
    /// The last request compiled or found: the scheduler asks for one workload across every
    /// cluster in a row, so an equality check usually spares the hashing.
    last: Mutex<Option<(ReplicaRequirements, Arc<CompiledRequest>)>>,
}

/// What a [`Compiler`] keeps: compiled requests by shape, label-constraint ids.
#[derive(Debug, Default)]
struct Compiled {
    requests: HashMap<ReplicaRequirements, Arc<CompiledRequest>>,
}

/// The parts of a request that read node labels and names.
type LabelConstraints = (BTreeMap<String, String>, String, GpuConstraint);

/// Distinct request shapes kept compiled before the compiler starts over.
const COMPILED_LIMIT: usize = 4096;

/// The next [`CompiledRequest::id`] or [`CompiledRequest::labels`] (never reused in a process,
/// so a stale cache entry can never answer for another request).
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The [`CompiledRequest::labels`] of `req`'s label constraints: one id per distinct
/// constraints in the process (every compiler and the deductions share them; bounded, a new
/// id once the table started over).
fn label_id(req: &ReplicaRequirements) -> u64 {
    static LABELS: OnceLock<Mutex<HashMap<LabelConstraints, u64>>> = OnceLock::new();
    let Ok(mut labels) = LABELS.get_or_init(Default::default).lock() else { return u64::MAX };
    if labels.len() >= COMPILED_LIMIT {
        labels.clear();
    }
    let key = (req.node_selector.clone(), req.node_affinity.clone(), req.gpu.clone());
    *labels.entry(key).or_insert_with(next_id)
}

impl Compiler {
    /// The compiled form of `req`; equal requirements get the same compiled request (and id).
    pub fn compile(&self, req: &ReplicaRequirements, dims: &Dimensions) -> Arc<CompiledRequest> {
        if let Ok(last) = self.last.lock()
            && let Some((r, c)) = last.as_ref()
            && r == req
        {
            return c.clone();
        }
        let c = self.lookup(req, dims);
        if let Ok(mut last) = self.last.lock() {
            *last = Some((req.clone(), c.clone()));
        }
        c
    }

    fn lookup(&self, req: &ReplicaRequirements, dims: &Dimensions) -> Arc<CompiledRequest> {
        let Ok(mut guard) = self.cache.lock() else {
            return Arc::new(CompiledRequest::compile(u64::MAX, req, dims));
        };
        let compiled = &mut *guard;
        if let Some(c) = compiled.requests.get(req) {
            return c.clone();
        }
        if compiled.requests.len() >= COMPILED_LIMIT {
            compiled.requests.clear();
        }
        let c = Arc::new(CompiledRequest::compile_labelled(next_id(), req, dims));
        compiled.requests.insert(req.clone(), c.clone());
        c
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::ResourceList;

    fn taint(key: &str, value: Option<&str>, effect: TaintEffect) -> ClusterTaint {
        ClusterTaint { key: key.into(), value: value.map(Into::into), effect }
    }

    #[test]
    fn kubernetes_toleration_rules() {
        let t = taint("dedicated", Some("gpu"), TaintEffect::NoSchedule);
        let cases = [
            (Toleration { key: Some("dedicated".into()), value: Some("gpu".into()), ..Default::default() }, true),
            (Toleration { key: Some("dedicated".into()), value: Some("web".into()), ..Default::default() }, false),
            (
                Toleration {
                    key: Some("dedicated".into()),
                    operator: Some(TolerationOperator::Exists),
                    ..Default::default()
                },
                true,
            ),
            (Toleration { operator: Some(TolerationOperator::Exists), ..Default::default() }, true),
            (
                Toleration {
                    operator: Some(TolerationOperator::Exists),
                    effect: Some(TaintEffect::NoExecute),
                    ..Default::default()
                },
                false,
            ),
            // Effect only, no key, operator defaults to Equal: the value (empty) must equal the
            // taint's, so this taint with value `gpu` is not tolerated…
            (Toleration { effect: Some(TaintEffect::NoSchedule), ..Default::default() }, false),
        ];
        for (tol, want) in cases {
            assert_eq!(tolerates(&tol, &t), want, "{tol:?}");
        }
        // …but a taint with an empty value and that effect is (Karmada's
        // `propagationpolicy_taintToleration.yaml`: `{effect: NoSchedule}`).
        let bare = taint("cluster.karmada.io/unschedulable", None, TaintEffect::NoSchedule);
        let effect_only = Toleration { effect: Some(TaintEffect::NoSchedule), ..Default::default() };
        assert!(tolerates(&effect_only, &bare));
        assert!(!tolerates(&effect_only, &taint("k", None, TaintEffect::NoExecute)));
        let empty_equal = Toleration { operator: Some(TolerationOperator::Equal), ..Default::default() };
        assert!(tolerates(&empty_equal, &bare), "no effect on the toleration matches every effect");
    }

    fn list(items: &[(&str, i64)]) -> ResourceList {
        ResourceList::of(items)
    }

    fn node(name: &str, cpu: i64, mem: i64, pods: i64) -> NodeView {
        NodeView::ready(name, list(&[("cpu", cpu), ("memory", mem), ("pods", pods * 1000)]))
    }

    fn settings() -> Arc<ModelSettings> {
        Arc::new(ModelSettings::default())
    }

    fn estimate(nodes: &[NodeView], req: &ReplicaRequirements) -> (i64, i64) {
        let s = settings();
        let dims = Dimensions::new(&s);
        let c = CompiledRequest::compile(1, req, &dims);
        let idx = NodeIndex::build(nodes, &dims, &s);
        (idx.estimate(nodes, &c), estimate_naive(nodes, &c))
    }

    fn req(cpu: i64) -> ReplicaRequirements {
        ReplicaRequirements { request: list(&[("cpu", cpu)]), ..Default::default() }
    }

    #[test]
    fn karmada_accurate_estimator_sums_per_node_floors() {
        // 3 nodes with 4, 2.5 and 1 CPU free; 1 CPU per replica ⇒ 4 + 2 + 1 = 7, where the
        // summary (7.5 CPU free) would say 7 too but 1.5-CPU replicas differ: 2 + 1 + 0 = 3 vs 5.
        let mut nodes =
            vec![node("a", 4000, 1 << 40, 110), node("b", 4000, 1 << 40, 110), node("c", 1000, 1 << 40, 110)];
        nodes[1].requested = list(&[("cpu", 1500)]);
        assert_eq!(estimate(&nodes, &req(1000)), (7, 7));
        assert_eq!(estimate(&nodes, &req(1500)), (3, 3));
        // Pod slots bound each node.
        nodes[0].pods = 108;
        assert_eq!(estimate(&nodes, &req(1000)).0, 2 + 2 + 1);
        // A resource no node has: nothing fits.
        let gpu = ReplicaRequirements { request: list(&[("nvidia.com/gpu", 1000)]), ..Default::default() };
        assert_eq!(estimate(&nodes, &gpu), (0, 0));
    }

    #[test]
    fn node_predicates() {
        let mut gpu = node("g", 8000, 1 << 40, 110);
        std::sync::Arc::make_mut(&mut gpu.labels).insert("disk".into(), "ssd".into());
        std::sync::Arc::make_mut(&mut gpu.labels).insert("gen".into(), "5".into());
        std::sync::Arc::make_mut(&mut gpu.labels)
            .insert(super::super::dimensions::GPU_PRODUCT_LABEL.into(), "A100".into());
        std::sync::Arc::make_mut(&mut gpu.taints).push(ClusterTaint {
            key: "gpu".into(),
            value: Some("yes".into()),
            effect: TaintEffect::NoSchedule,
        });
        let mut cordoned = node("c", 8000, 1 << 40, 110);
        cordoned.unschedulable = true;
        let mut not_ready = node("n", 8000, 1 << 40, 110);
        not_ready.ready = false;
        let mut soft = node("p", 8000, 1 << 40, 110);
        std::sync::Arc::make_mut(&mut soft.taints).push(ClusterTaint {
            key: "x".into(),
            value: None,
            effect: TaintEffect::PreferNoSchedule,
        });
        let nodes = vec![gpu, cordoned, not_ready, soft];
        let tol = r#"[{"key":"gpu","operator":"Equal","value":"yes","effect":"NoSchedule"}]"#;
        let aff = |op: &str, values: &str| {
            format!(
                r#"{{"nodeSelectorTerms":[{{"matchExpressions":[{{"key":"gen","operator":"{op}","values":{values}}}]}}]}}"#
            )
        };
        // (selector, tolerations, affinity, gpu products, expected replicas at 1 CPU each)
        type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, String, Vec<&'a str>, i64);
        let cases: Vec<Case<'_>> = vec![
            (vec![], "", String::new(), vec![], 8),   // only the PreferNoSchedule node
            (vec![], tol, String::new(), vec![], 16), // + the tainted GPU node
            (vec![("disk", "ssd")], tol, String::new(), vec![], 8),
            (vec![("disk", "hdd")], tol, String::new(), vec![], 0),
            (vec![], tol, aff("In", r#"["5","6"]"#), vec![], 8),
            (vec![], tol, aff("NotIn", r#"["5"]"#), vec![], 8), // the node without the label
            (vec![], tol, aff("Exists", "[]"), vec![], 8),
            (vec![], tol, aff("DoesNotExist", "[]"), vec![], 8),
            (vec![], tol, aff("Gt", r#"["4"]"#), vec![], 8),
            (vec![], tol, aff("Gt", r#"["5"]"#), vec![], 0),
            (vec![], tol, aff("Lt", r#"["6"]"#), vec![], 8),
            (vec![], tol, r#"{"nodeSelectorTerms":[]}"#.to_string(), vec![], 0),
            (vec![], tol, String::new(), vec!["A100"], 8),
            (vec![], tol, String::new(), vec!["H100"], 0),
        ];
        for (sel, tolerations, affinity, products, want) in cases {
            let mut r = req(1000);
            r.node_selector = sel.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            r.tolerations = tolerations.to_string();
            r.node_affinity = affinity.clone();
            r.gpu.products = products.iter().map(|p| p.to_string()).collect();
            assert_eq!(estimate(&nodes, &r), (want, want), "{sel:?} {tolerations} {affinity} {products:?}");
        }
    }

    #[test]
    fn identical_nodes_form_one_group_and_answers_are_cached() {
        let nodes: Vec<NodeView> = (0..100)
            .map(|i| {
                let mut n = node(&format!("n{i}"), 4000, 1 << 34, 110);
                std::sync::Arc::make_mut(&mut n.labels).insert("kubernetes.io/hostname".into(), format!("n{i}"));
                n
            })
            .collect();
        let s = settings();
        let dims = Dimensions::new(&s);
        let idx = NodeIndex::build(&nodes, &dims, &s);
        assert_eq!(idx.group_count(), 1);
        let c = CompiledRequest::compile(7, &req(1000), &dims);
        assert_eq!(idx.estimate(&nodes, &c), 400);
        assert_eq!(idx.cache.lock().map(|m| m.get(&7).map(|w| w.0.total)).ok().flatten(), Some(400));
        // A selector on the unique label is still exact.
        let mut one = req(1000);
        one.node_selector.insert("kubernetes.io/hostname".into(), "n7".into());
        let c = CompiledRequest::compile(8, &one, &dims);
        assert_eq!(idx.estimate(&nodes, &c), 4);
    }

    /// Every profile has its own compiler; their requests meet in the same index. Two
    /// different requests must never share a cache entry (ids were per compiler once: the
    /// second profile's first request got the first profile's answer).
    #[test]
    fn compilers_of_different_profiles_never_share_an_answer() {
        let nodes: Vec<NodeView> = (0..4).map(|i| node(&format!("n{i}"), 4000, 1 << 34, 110)).collect();
        let s = settings();
        let dims = Dimensions::new(&s);
        let idx = NodeIndex::build(&nodes, &dims, &s);
        let (a, b) = (Compiler::default(), Compiler::default());
        let small = a.compile(&req(1000), &dims);
        let large = b.compile(&req(2000), &dims);
        assert_ne!(small.id, large.id);
        assert_eq!(idx.estimate(&nodes, &small), 16);
        assert_eq!(idx.estimate(&nodes, &large), 8);
    }

    /// The first fit by the groups equals the node-by-node one (the deduction places its
    /// replicas with it), before and after pods are added; an index built with other
    /// dimensions does not answer.
    #[test]
    fn first_fit_by_the_groups_equals_the_node_by_node_one() {
        let mut nodes: Vec<NodeView> = (0..10)
            .map(|i| {
                let mut n = node(&format!("n{i}"), 1000 * (1 + i % 4), 1 << 33, 4 + i);
                std::sync::Arc::make_mut(&mut n.labels).insert("zone".into(), format!("z{}", i % 2));
                n
            })
            .collect();
        nodes[3].ready = false;
        nodes[5].unschedulable = true;
        nodes[6].taints = Arc::new(vec![taint("dedicated", Some("gpu"), TaintEffect::NoSchedule)]);
        nodes[7].requested = list(&[("cpu", 4000)]);
        let s = settings();
        let dims = Dimensions::new(&s);
        let compiler = Compiler::default();
        let mut zoned = req(500);
        zoned.node_selector.insert("zone".into(), "z1".into());
        let mut tolerant = req(1500);
        tolerant.tolerations = r#"[{"key":"dedicated","operator":"Exists"}]"#.into();
        let shapes = [req(500), req(3000), zoned, tolerant];
        let fits = |idx: &NodeIndex, nodes: &[NodeView], c: &CompiledRequest| {
            for count in [1, 3, 7, 40, i64::from(i32::MAX)] {
                assert_eq!(idx.first_fit(nodes, c, &dims, count), Some(first_fit_naive(nodes, c, count)), "{count}");
            }
        };
        let mut idx = NodeIndex::build(&nodes, &dims, &s);
        for r in &shapes {
            let c = compiler.compile(r, &dims);
            fits(&idx, &nodes, &c);
        }
        for i in [0, 1, 6] {
            nodes[i].requested = list(&[("cpu", 500), ("memory", 1 << 30)]);
            nodes[i].pods = 2;
        }
        assert!(idx.add_pods(&nodes, &[0, 1, 6]));
        for r in &shapes {
            let c = compiler.compile(r, &dims);
            fits(&idx, &nodes, &c);
        }
        let labelled = ModelSettings {
            label_dimensions: vec![crate::model::dimensions::LabelDimension {
                resource: "fedsched.io/network-bandwidth".into(),
                label: "bandwidth".into(),
                hard: true,
            }],
            ..ModelSettings::default()
        };
        let other = Dimensions::new(&labelled);
        assert_ne!(other.id(), dims.id());
        assert_eq!(Dimensions::new(&ModelSettings::default()).id(), dims.id());
        assert_eq!(idx.first_fit(&nodes, &compiler.compile(&shapes[0], &other), &other, 1), None);
    }

    /// Requests of different sizes under the same label constraints share the nodes those
    /// admit; a deduction (pods added) keeps them, and every answer and explain count stays
    /// the per-node loop's.
    #[test]
    fn label_admission_is_shared_by_equal_constraints_and_survives_deductions() {
        let mut nodes: Vec<NodeView> = (0..12)
            .map(|i| {
                let mut n = node(&format!("n{i}"), 4000, 1 << 34, 110);
                std::sync::Arc::make_mut(&mut n.labels).insert("zone".into(), format!("z{}", i % 3));
                n
            })
            .collect();
        let s = settings();
        let dims = Dimensions::new(&s);
        let compiler = Compiler::default();
        let shaped = |cpu: i64, zone: &str| {
            let mut r = req(cpu);
            r.node_selector.insert("zone".into(), zone.into());
            compiler.compile(&r, &dims)
        };
        let (one, two, other) = (shaped(1000, "z1"), shaped(2000, "z1"), shaped(1000, "z2"));
        assert_eq!(one.labels, two.labels, "same selector, same label constraints");
        assert_ne!(one.labels, other.labels);
        assert_ne!(one.labels, u64::MAX);
        let fit_line = |idx: &NodeIndex, nodes: &[NodeView], c: &CompiledRequest| {
            let fit = nodes.iter().filter(|n| c.admits(n) && c.per_node(n) > 0).count();
            let line = idx.explain(nodes, c).remove(0);
            (line.starts_with(&format!("{fit} of {} nodes fit", nodes.len())), line)
        };
        let mut idx = NodeIndex::build(&nodes, &dims, &s);
        for c in [&one, &two, &other] {
            assert_eq!(idx.estimate(&nodes, c), estimate_naive(&nodes, c));
        }
        let before = idx.cpu(&nodes);
        assert_eq!(before, cpu_figures(&nodes, &s));
        let explained: Vec<Arc<[String]>> = [&one, &two, &other].map(|c| idx.explain_shared(&nodes, c)).into();
        for (c, lines) in [&one, &two, &other].iter().zip(&explained) {
            assert_eq!(**lines, *idx.explain(&nodes, c));
            assert!(Arc::ptr_eq(lines, &idx.explain_shared(&nodes, c)), "kept");
        }
        // n1 and n4 (z1, z1) fill up: nodes move groups, the admitted nodes stay right.
        for i in [1, 4] {
            nodes[i].requested = list(&[("cpu", 3500)]);
            nodes[i].pods = 3;
        }
        let copy = idx.after_added_pods(&nodes, &[1, 4]).expect("same columns");
        assert!(idx.add_pods(&nodes, &[1, 4]));
        for index in [&idx, &copy] {
            for c in [&one, &two, &other] {
                assert_eq!(index.estimate(&nodes, c), estimate_naive(&nodes, c));
                let (ok, line) = fit_line(index, &nodes, c);
                assert!(ok, "{line}");
            }
            assert!(fit_line(index, &nodes, &one).1.contains("selector/affinity/GPU model: 8, too full: 2"));
            // The explain lines kept before the pods were added are not given again.
            for c in [&one, &two, &other] {
                assert_eq!(*index.explain_shared(&nodes, c), *index.explain(&nodes, c));
            }
            assert_ne!(*index.explain_shared(&nodes, &one), *explained[0]);
            // The CPU figures follow the added pods (the ones computed before are not kept).
            assert_eq!(index.cpu(&nodes), cpu_figures(&nodes, &s));
            assert_ne!(index.cpu(&nodes), before);
            // The mean factor explain asks first is the figures' own, kept through the pods.
            assert_eq!(index.cpu_mean_factor().to_bits(), index.cpu(&nodes).mean_factor().to_bits());
        }
    }

    #[test]
    fn heterogeneous_cpu_is_explained_raw_and_normalised() {
        let mut amd = node("amd", 10_000, 1 << 40, 110);
        std::sync::Arc::make_mut(&mut amd.labels)
            .insert("feature.node.kubernetes.io/cpu-model.vendor_id".into(), "AuthenticAMD".into());
        amd.requested = list(&[("cpu", 2_000)]);
        let intel = node("intel", 4_000, 1 << 40, 110);
        let mut s = ModelSettings::default();
        s.cpu_performance.insert("AuthenticAMD".into(), 1.2);
        let s = Arc::new(s);
        let dims = Dimensions::new(&s);
        let nodes = vec![amd, intel];
        let idx = NodeIndex::build(&nodes, &dims, &s);
        let cpu = idx.cpu(&nodes);
        assert_eq!((cpu.allocatable_raw, cpu.allocatable_normalised.round() as i64), (14_000, 16_000));
        assert_eq!(cpu, cpu_figures(&nodes, &s));
        assert_eq!(idx.cpu_mean_factor().to_bits(), cpu.mean_factor().to_bits());
        let c = CompiledRequest::compile(1, &req(10_000), &dims);
        assert_eq!(idx.estimate(&nodes, &c), 0);
        let lines = idx.explain(&nodes, &c);
        assert!(lines.iter().any(|l| l.contains("0 of 2 nodes fit")), "{lines:?}");
        assert!(
            lines.iter().any(|l| l
                == "cpu: 12 normalised cores (10 raw) needed per replica, largest node has 9.6 normalised (8 raw) free"),
            "{lines:?}"
        );
    }

    /// First-fit placement of `count` identical pods, one at a time: how many land.
    fn first_fit(nodes: &[NodeView], req: &CompiledRequest, request: &ResourceList, count: i64) -> i64 {
        let mut nodes = nodes.to_vec();
        let mut placed = 0;
        for _ in 0..count {
            let Some(n) = nodes.iter_mut().find(|n| req.admits(n) && req.per_node(n) >= 1) else { break };
            n.requested.add(request);
            n.pods += 1;
            placed += 1;
        }
        placed
    }

    #[test]
    fn a_divisor_divides_as_the_division_instruction() {
        let divisors =
            [1, 2, 3, 7, 10, 1000, 1 << 20, (1 << 20) + 1, 999_999_937, (1 << 62) + 1, i64::MAX - 1, i64::MAX];
        let dividends = [0, 1, 2, 999, 1000, 1001, (1 << 40) - 1, 1 << 40, i64::MAX - 1, i64::MAX, -1, -1000, i64::MIN];
        for d in divisors {
            let divisor = Divisor::new(d);
            for n in dividends.into_iter().chain([d - 1, d, d.saturating_add(1)].into_iter().filter(|n| *n >= 0)) {
                assert_eq!(divisor.div(n), n / d, "{n} / {d}");
            }
        }
    }

    proptest! {
        #[test]
        fn a_divisor_divides_any_amount(d in 1i64.., n in any::<i64>(), small in 1i64..100_000, near in 0i64..100_000) {
            prop_assert_eq!(Divisor::new(d).div(n), n / d);
            prop_assert_eq!(Divisor::new(small).div(n), n / small);
            // Dividends next to multiples of the divisor, where a rounding error would show.
            let k = n.unsigned_abs() % (1 << 40);
            let m = i64::try_from(k).unwrap().saturating_mul(small);
            for n in [m.saturating_sub(1), m, m.saturating_add(1), m.saturating_add(near)] {
                prop_assert_eq!(Divisor::new(small).div(n), n / small);
            }
        }

        #[test]
        fn estimate_is_what_first_fit_achieves(
            shapes in prop::collection::vec((0i64..16, 0i64..64, 0i64..12, 0u32..8, any::<bool>(), any::<bool>(), 0u8..3), 1..12),
            cpu in 1i64..6,
            mem in 0i64..8,
            selector in any::<bool>(),
        ) {
            let nodes: Vec<NodeView> = shapes.iter().enumerate().map(|(i, (c, m, p, used, ready, taint, zone))| {
                let mut n = node(&format!("n{i}"), c * 500, m * 1024, *p);
                n.requested = list(&[("cpu", i64::from(*used) * 250)]);
                n.pods = *used / 2;
                n.ready = *ready || i % 2 == 0;
                if *taint {
                    std::sync::Arc::make_mut(&mut n.taints).push(ClusterTaint { key: "t".into(), value: None, effect: TaintEffect::NoSchedule });
                }
                std::sync::Arc::make_mut(&mut n.labels).insert("zone".into(), format!("z{zone}"));
                n
            }).collect();
            let request = if mem == 0 { list(&[("cpu", cpu * 250)]) } else { list(&[("cpu", cpu * 250), ("memory", mem * 256)]) };
            let mut r = ReplicaRequirements { request: request.clone(), ..Default::default() };
            if selector {
                r.node_selector.insert("zone".into(), "z1".into());
            }
            let (fast, naive) = estimate(&nodes, &r);
            prop_assert_eq!(fast, naive);
            let dims = Dimensions::new(&settings());
            let c = CompiledRequest::compile(1, &r, &dims);
            // Never more than first-fit achieves, and for identical pods exactly that.
            prop_assert_eq!(first_fit(&nodes, &c, &request, fast + 3), fast);
        }

        /// Pods added node by node, the index moved along (`add_pods`: groups joined, left,
        /// emptied and replaced by the last one) is after every step the index a build of the
        /// nodes gives, whatever its groups' order, and its first fit the node-by-node one.
        #[test]
        fn an_index_moved_along_added_pods_is_a_fresh_build(
            cpus in prop::collection::vec(1i64..5, 2..14),
            steps in prop::collection::vec((0usize..14, 1i64..4), 1..30),
            count in 1i64..20,
        ) {
            let s = settings();
            let dims = Dimensions::new(&s);
            let mut nodes: Vec<NodeView> =
                cpus.iter().enumerate().map(|(i, c)| node(&format!("n{i}"), c * 1000, 1 << 34, 110)).collect();
            let mut idx = NodeIndex::build(&nodes, &dims, &s);
            let c = CompiledRequest::compile(u64::MAX, &req(500), &dims);
            // Cached walks, one asked at every step, one every third (it follows several
            // moves at once): always the walk of a fresh build.
            let (every, third) = (CompiledRequest::compile(11, &req(700), &dims), CompiledRequest::compile(12, &req(1500), &dims));
            prop_assert_eq!(idx.estimate(&nodes, &third), estimate_naive(&nodes, &third));
            for (step, (at, pods)) in steps.into_iter().enumerate() {
                let i = at % nodes.len();
                let used = nodes[i].requested.get("cpu");
                nodes[i].requested = list(&[("cpu", used + pods * 500)]);
                nodes[i].pods += u32::try_from(pods).unwrap_or(0);
                prop_assert!(idx.add_pods(&nodes, &[i]));
                prop_assert_eq!(idx.canonical(), NodeIndex::build(&nodes, &dims, &s).canonical());
                prop_assert_eq!(idx.first_fit(&nodes, &c, &dims, count), Some(first_fit_naive(&nodes, &c, count)));
                prop_assert_eq!(idx.estimate(&nodes, &c), estimate_naive(&nodes, &c));
                let fresh = NodeIndex::build(&nodes, &dims, &s);
                prop_assert_eq!(idx.explain(&nodes, &every), fresh.explain(&nodes, &every));
                if step % 3 == 2 {
                    prop_assert_eq!(idx.explain(&nodes, &third), fresh.explain(&nodes, &third));
                }
            }
        }
    }
}
