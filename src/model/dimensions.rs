//! Resource dimensions as plugins: what a replica asks of one dimension, what a node or a
//! cluster summary has free of it, and whether it bounds the estimate (hard) or only informs
//! scoring. Every dimension is registered in one list, [`Dimensions::new`]: the built-ins
//! (cpu, memory, ephemeral-storage, pod slots, GPUs by count and by model), the label-backed
//! dimensions (network bandwidth, local storage…) and the extended resources named in
//! `[model]` of the config. A new kind of resource is a config entry or one `Dimension`
//! implementation here, never a change to the scheduler.
//!
//! Any resource a workload requests that no dimension names is still counted (as Karmada's
//! estimators do): [`Dimensions::for_request`] adds a generic [`ResourceDimension`] for it.
//!
//! Also here: [`ModelSettings`] (the `[model]` section in pure form) and the CPU performance
//! table ([`ModelSettings::cpu_factor`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::quantity::parse_milli;
use super::snapshot::{NodeView, ResourceSummary};
use super::workload::ReplicaRequirements;

/// Node label with the GPU model (NVIDIA GPU feature discovery).
pub const GPU_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";
/// Node label with the memory of one GPU in MiB (NVIDIA GPU feature discovery).
pub const GPU_MEMORY_LABEL: &str = "nvidia.com/gpu.memory";
/// Template annotation: GPU models a replica accepts (comma-separated values of
/// [`GPU_PRODUCT_LABEL`]); a hard constraint.
pub const GPU_PRODUCT_ANNOTATION: &str = "fedsched.io/gpu-product";
/// Template annotation: least memory per GPU a replica accepts (a quantity, e.g. `40Gi`); a
/// hard constraint against [`GPU_MEMORY_LABEL`].
pub const GPU_MEMORY_ANNOTATION: &str = "fedsched.io/gpu-memory";
/// Template annotation: per-replica amounts of label-backed dimensions
/// (`fedsched.io/network-bandwidth=2G,fedsched.io/local-storage=100Gi`).
pub const REQUESTS_ANNOTATION: &str = "fedsched.io/requests";

/// A label-backed dimension: a node offers the quantity in its label `label`; a replica asks
/// for it through [`REQUESTS_ANNOTATION`]. Running pods do not declare their use of it, so the
/// label is capacity per node (it bounds how many replicas of one workload a node takes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelDimension {
    /// Resource name used in requests (`fedsched.io/network-bandwidth`).
    pub resource: String,
    /// Node label holding the node's amount as a quantity (`10G`, `500Gi`).
    pub label: String,
    /// Whether the dimension bounds the estimate; a soft one is shown but not enforced.
    pub hard: bool,
}

/// The `[model]` settings in pure form (durations in milliseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    /// Extended resources to model by name (`example.com/dpu`): shown in `resources` and
    /// explain; any requested resource is counted in estimates anyway.
    pub extended: Vec<String>,
    /// Label-backed dimensions (network bandwidth, storage capacity).
    pub label_dimensions: Vec<LabelDimension>,
    /// CPU performance factor by node (or Cluster) label value.
    pub cpu_performance: BTreeMap<String, f64>,
    /// Labels whose value is looked up in `cpu_performance`, first match wins.
    pub cpu_performance_labels: Vec<String>,
    /// A built-in table of factors by instance type (opt-in), below `cpu_performance`.
    pub cpu_performance_table: Option<super::cpu_table::CpuTable>,
    /// Confidence halves every this many ms of snapshot age beyond `fresh_for_ms`.
    pub confidence_half_life_ms: u64,
    /// Age up to which a live snapshot counts as fresh (confidence 1).
    pub fresh_for_ms: u64,
    /// Factor applied to the confidence per consecutive failed poll.
    pub failure_penalty: f64,
    /// Below this confidence a cluster receives no new replicas.
    pub min_confidence: f64,
    /// How long a decision not yet visible in a live member is deducted from its capacity.
    pub assumed_ttl_ms: u64,
    /// Whether a pass's decisions deduct what they place on offline members from the views
    /// the pass's later decisions see (within the pass only; `false`: the Cluster status as
    /// declared for every decision, as Karmada's general estimator reads it).
    pub offline_deductions: bool,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            extended: Vec::new(),
            label_dimensions: Vec::new(),
            cpu_performance: BTreeMap::new(),
            cpu_performance_labels: vec![
                "node.kubernetes.io/instance-type".into(),
                "feature.node.kubernetes.io/cpu-model.vendor_id".into(),
            ],
            cpu_performance_table: None,
            confidence_half_life_ms: 10 * 60_000,
            fresh_for_ms: 60_000,
            failure_penalty: 0.8,
            min_confidence: 0.2,
            assumed_ttl_ms: 5 * 60_000,
            offline_deductions: true,
        }
    }
}

impl ModelSettings {
    /// Whether CPU performance factors are configured at all (an entry or a built-in table):
    /// without, every factor is 1 and CPU compares in raw cores.
    pub fn has_cpu_performance(&self) -> bool {
        !self.cpu_performance.is_empty() || self.cpu_performance_table.is_some()
    }

    /// CPU performance factor for a label set: the first of `cpu_performance_labels` whose
    /// value has an entry in `cpu_performance`; else the first whose value the built-in table
    /// knows (`node.kubernetes.io/instance-type`); 1.0 otherwise.
    pub fn cpu_factor(&self, labels: &BTreeMap<String, String>) -> f64 {
        if !self.has_cpu_performance() {
            return 1.0;
        }
        let values = || self.cpu_performance_labels.iter().filter_map(|k| labels.get(k));
        values()
            .find_map(|v| self.cpu_performance.get(v).copied())
            .or_else(|| self.cpu_performance_table.and_then(|t| values().find_map(|v| t.factor(v))))
            .unwrap_or(1.0)
    }

    /// Confidence in a live observation: 1 while younger than `fresh_for_ms`, then halving
    /// every `confidence_half_life_ms`, times `failure_penalty` per consecutive failed poll.
    pub fn confidence(&self, age_ms: u64, consecutive_failures: u32) -> f64 {
        let stale = age_ms.saturating_sub(self.fresh_for_ms) as f64;
        let half = self.confidence_half_life_ms.max(1) as f64;
        let by_age = 0.5f64.powf(stale / half);
        let by_failures = self.failure_penalty.clamp(0.0, 1.0).powi(consecutive_failures.min(64) as i32);
        (by_age * by_failures).clamp(0.0, 1.0)
    }
}

/// One resource dimension.
pub trait Dimension: Send + Sync {
    /// Resource name (`cpu`, `nvidia.com/gpu`, `fedsched.io/network-bandwidth`).
    fn name(&self) -> &str;
    /// Per-replica amount in milli-units; 0 = not requested.
    fn request(&self, req: &ReplicaRequirements) -> i64;
    /// Free amount on one node in milli-units (0 when the node lacks the dimension).
    fn node_free(&self, node: &NodeView) -> i64;
    /// Free amount in a cluster summary; None when summaries do not carry the dimension.
    fn summary_free(&self, summary: &ResourceSummary) -> Option<i64>;
    /// Whether the dimension bounds the estimate (a soft one informs scoring only).
    fn hard(&self) -> bool {
        true
    }
}

/// A resource of `status.allocatable` (cpu, memory, ephemeral-storage, GPUs, extended
/// resources): free = allocatable − requests of the node's pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDimension(pub String);

impl Dimension for ResourceDimension {
    fn name(&self) -> &str {
        &self.0
    }
    fn request(&self, req: &ReplicaRequirements) -> i64 {
        req.request.get(&self.0).max(0)
    }
    fn node_free(&self, node: &NodeView) -> i64 {
        node.allocatable.get(&self.0).saturating_sub(node.requested.get(&self.0)).max(0)
    }
    fn summary_free(&self, s: &ResourceSummary) -> Option<i64> {
        Some(
            s.allocatable
                .get(&self.0)
                .saturating_sub(s.allocated.get(&self.0))
                .saturating_sub(s.allocating.get(&self.0))
                .max(0),
        )
    }
}

/// Pod slots: every replica takes one; free = allocatable pods − pods on the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodSlots;

impl Dimension for PodSlots {
    fn name(&self) -> &str {
        "pods"
    }
    fn request(&self, _req: &ReplicaRequirements) -> i64 {
        1000
    }
    fn node_free(&self, node: &NodeView) -> i64 {
        (node.allocatable.get("pods") / 1000).saturating_sub(i64::from(node.pods)).max(0).saturating_mul(1000)
    }
    fn summary_free(&self, s: &ResourceSummary) -> Option<i64> {
        let free = s.allocatable.get("pods") / 1000 - s.allocated.get("pods") / 1000 - s.allocating.get("pods") / 1000;
        Some(free.max(0).saturating_mul(1000))
    }
}

/// A label-backed dimension ([`LabelDimension`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelBacked(pub LabelDimension);

impl Dimension for LabelBacked {
    fn name(&self) -> &str {
        &self.0.resource
    }
    fn request(&self, req: &ReplicaRequirements) -> i64 {
        req.extra.get(&self.0.resource).max(0)
    }
    fn node_free(&self, node: &NodeView) -> i64 {
        node.labels.get(&self.0.label).and_then(|v| parse_milli(v).ok()).unwrap_or(0).max(0)
    }
    fn summary_free(&self, _s: &ResourceSummary) -> Option<i64> {
        None
    }
    fn hard(&self) -> bool {
        self.0.hard
    }
}

/// The GPU model constraint of a replica ([`GPU_PRODUCT_ANNOTATION`], [`GPU_MEMORY_ANNOTATION`]);
/// a node selector or required node affinity on [`GPU_PRODUCT_LABEL`] is matched like any
/// other label.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct GpuConstraint {
    /// Accepted values of [`GPU_PRODUCT_LABEL`]; empty = any.
    pub products: Vec<String>,
    /// Least memory per GPU in MiB; 0 = any.
    pub min_memory_mib: i64,
}

impl GpuConstraint {
    /// Whether the replica constrains the GPU model.
    pub fn is_set(&self) -> bool {
        !self.products.is_empty() || self.min_memory_mib > 0
    }

    /// Whether a node (or a Cluster, by its labels) satisfies the constraint. Labels that
    /// are absent fail a set constraint.
    pub fn admits(&self, labels: &BTreeMap<String, String>) -> bool {
        if !self.products.is_empty() && !labels.get(GPU_PRODUCT_LABEL).is_some_and(|p| self.products.contains(p)) {
            return false;
        }
        if self.min_memory_mib > 0 && gpu_memory_mib(labels).is_none_or(|m| m < self.min_memory_mib) {
            return false;
        }
        true
    }

    /// Reads the annotations of a template; errors name the annotation.
    pub fn from_annotations(annotations: &BTreeMap<String, String>) -> Result<GpuConstraint, (String, String)> {
        let products = annotations
            .get(GPU_PRODUCT_ANNOTATION)
            .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect())
            .unwrap_or_default();
        let min_memory_mib = match annotations.get(GPU_MEMORY_ANNOTATION) {
            None => 0,
            Some(v) => {
                let milli = parse_milli(v).map_err(|e| (GPU_MEMORY_ANNOTATION.to_string(), e.to_string()))?;
                milli / 1000 / (1 << 20)
            }
        };
        Ok(GpuConstraint { products, min_memory_mib })
    }
}

/// Memory per GPU (MiB) from [`GPU_MEMORY_LABEL`].
pub fn gpu_memory_mib(labels: &BTreeMap<String, String>) -> Option<i64> {
    labels.get(GPU_MEMORY_LABEL).and_then(|v| v.trim().parse::<i64>().ok())
}

/// Resources counted as GPUs.
pub const GPU_RESOURCES: [&str; 2] = ["nvidia.com/gpu", "amd.com/gpu"];

/// Parses [`REQUESTS_ANNOTATION`]: `name=quantity` pairs separated by commas.
pub fn parse_requests_annotation(text: &str) -> Result<super::ResourceList, String> {
    let mut out = super::ResourceList::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, q) = part.split_once('=').ok_or_else(|| format!("{part:?} is not name=quantity"))?;
        let milli = parse_milli(q).map_err(|e| e.to_string())?;
        out.set(name.trim(), milli);
    }
    Ok(out)
}

/// The registered dimensions.
#[derive(Clone)]
pub struct Dimensions {
    list: Vec<Arc<dyn Dimension>>,
    /// What the list was built from, hashed ([`Dimensions::id`]).
    id: u64,
}

impl std::fmt::Debug for Dimensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.list.iter().map(|d| d.name())).finish()
    }
}

impl Dimensions {
    /// The one list: built-ins, then label-backed dimensions and extended resources from the
    /// settings.
    pub fn new(settings: &ModelSettings) -> Dimensions {
        let mut list: Vec<Arc<dyn Dimension>> = Vec::new();
        for r in ["cpu", "memory", "ephemeral-storage"] {
            list.push(Arc::new(ResourceDimension(r.into())));
        }
        list.push(Arc::new(PodSlots));
        for g in GPU_RESOURCES {
            list.push(Arc::new(ResourceDimension(g.into())));
        }
        for l in &settings.label_dimensions {
            list.push(Arc::new(LabelBacked(l.clone())));
        }
        for e in &settings.extended {
            if !list.iter().any(|d| d.name() == e) {
                list.push(Arc::new(ResourceDimension(e.clone())));
            }
        }
        // The list is a function of these settings alone.
        let id =
            crate::util::hash::fnv1a64(format!("{:?} {:?}", settings.label_dimensions, settings.extended).as_bytes());
        Dimensions { list, id }
    }

    /// Equal for lists built from equal settings: an index built with one list answers for
    /// another only when their ids are equal.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Every registered dimension, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Dimension>> {
        self.list.iter()
    }

    /// Names of the registered dimensions, in order.
    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|d| d.name().to_string()).collect()
    }

    /// The dimension of that name: a registered one, else a generic [`ResourceDimension`].
    pub fn get(&self, name: &str) -> Arc<dyn Dimension> {
        self.list
            .iter()
            .find(|d| d.name() == name)
            .cloned()
            .unwrap_or_else(|| Arc::new(ResourceDimension(name.to_string())))
    }

    /// What a replica asks, per dimension that bounds the estimate: every hard registered
    /// dimension with a request, plus a generic one for each requested resource no dimension
    /// names (Karmada counts every requested resource). Pod slots are not listed (every
    /// estimator bounds by them).
    pub fn requested(&self, req: &ReplicaRequirements) -> Vec<(Arc<dyn Dimension>, i64)> {
        let mut out: Vec<(Arc<dyn Dimension>, i64)> = Vec::new();
        for d in &self.list {
            let want = d.request(req);
            if d.name() != "pods" && d.hard() && want > 0 {
                out.push((d.clone(), want));
            }
        }
        for (name, want) in req.request.iter() {
            if want > 0 && name != "pods" && !self.list.iter().any(|d| d.name() == name) {
                out.push((Arc::new(ResourceDimension(name.to_string())), want));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ResourceList;

    fn list(items: &[(&str, i64)]) -> ResourceList {
        ResourceList::of(items)
    }

    fn node(alloc: &[(&str, i64)], used: &[(&str, i64)], pods: u32, labels: &[(&str, &str)]) -> NodeView {
        NodeView::ready("n", list(alloc))
            .with_labels(labels.iter().copied())
            .with_capacity(list(alloc))
            .with_requested(list(used), pods)
    }

    #[test]
    fn each_dimension_reads_requests_and_free_amounts() {
        let settings = ModelSettings {
            extended: vec!["example.com/dpu".into()],
            label_dimensions: vec![LabelDimension {
                resource: "fedsched.io/network-bandwidth".into(),
                label: "net.example.com/bandwidth".into(),
                hard: true,
            }],
            ..Default::default()
        };
        let dims = Dimensions::new(&settings);
        let n = node(
            &[
                ("cpu", 8000),
                ("memory", 16_000),
                ("pods", 110_000),
                ("nvidia.com/gpu", 4000),
                ("example.com/dpu", 2000),
            ],
            &[("cpu", 3000), ("memory", 20_000), ("nvidia.com/gpu", 1000)],
            100,
            &[("net.example.com/bandwidth", "10G")],
        );
        let mut req = ReplicaRequirements {
            request: list(&[("cpu", 500), ("nvidia.com/gpu", 1000), ("example.com/dpu", 1000), ("hugepages-2Mi", 1)]),
            ..Default::default()
        };
        req.extra.set("fedsched.io/network-bandwidth", 2_000_000_000_000);
        // (dimension, request, node free)
        let cases: [(&str, i64, i64); 8] = [
            ("cpu", 500, 5000),
            ("memory", 0, 0), // over-committed: floored at zero
            ("ephemeral-storage", 0, 0),
            ("pods", 1000, 10_000),
            ("nvidia.com/gpu", 1000, 3000),
            ("amd.com/gpu", 0, 0),
            ("fedsched.io/network-bandwidth", 2_000_000_000_000, 10_000_000_000_000),
            ("example.com/dpu", 1000, 2000),
        ];
        for (name, want, free) in cases {
            let d = dims.get(name);
            assert_eq!((d.request(&req), d.node_free(&n)), (want, free), "{name}");
        }
        let requested: Vec<String> = dims.requested(&req).iter().map(|(d, _)| d.name().to_string()).collect();
        assert_eq!(
            requested,
            ["cpu", "nvidia.com/gpu", "fedsched.io/network-bandwidth", "example.com/dpu", "hugepages-2Mi"]
        );
        let s = ResourceSummary {
            allocatable: list(&[("cpu", 8000), ("pods", 10_000)]),
            allocated: list(&[("cpu", 1000), ("pods", 4000)]),
            allocating: list(&[("cpu", 500), ("pods", 1000)]),
            ..Default::default()
        };
        assert_eq!(dims.get("cpu").summary_free(&s), Some(6500));
        assert_eq!(dims.get("pods").summary_free(&s), Some(5000));
        assert_eq!(dims.get("fedsched.io/network-bandwidth").summary_free(&s), None);
    }

    #[test]
    fn gpu_model_constraint_and_cpu_factor() {
        let labels: BTreeMap<String, String> = [
            (GPU_PRODUCT_LABEL.to_string(), "NVIDIA-A100-SXM4-80GB".to_string()),
            (GPU_MEMORY_LABEL.to_string(), "81920".to_string()),
            ("feature.node.kubernetes.io/cpu-model.vendor_id".to_string(), "AuthenticAMD".to_string()),
        ]
        .into();
        let ann = |p: &str, m: &str| -> BTreeMap<String, String> {
            let mut a = BTreeMap::new();
            if !p.is_empty() {
                a.insert(GPU_PRODUCT_ANNOTATION.to_string(), p.to_string());
            }
            if !m.is_empty() {
                a.insert(GPU_MEMORY_ANNOTATION.to_string(), m.to_string());
            }
            a
        };
        let cases = [
            ("", "", true),
            ("NVIDIA-A100-SXM4-80GB", "", true),
            ("NVIDIA-H100, NVIDIA-A100-SXM4-80GB", "", true),
            ("NVIDIA-H100", "", false),
            ("", "40Gi", true),
            ("", "96Gi", false),
        ];
        for (p, m, want) in cases {
            let g = GpuConstraint::from_annotations(&ann(p, m)).expect("valid");
            assert_eq!(g.admits(&labels), want, "{p} {m}");
        }
        assert!(GpuConstraint::from_annotations(&ann("", "lots")).is_err());
        assert!(!GpuConstraint { products: vec!["x".into()], min_memory_mib: 0 }.admits(&BTreeMap::new()));
        let mut s = ModelSettings::default();
        assert_eq!(s.cpu_factor(&labels), 1.0);
        s.cpu_performance.insert("AuthenticAMD".into(), 1.2);
        assert_eq!(s.cpu_factor(&labels), 1.2);
    }

    #[test]
    fn confidence_decays_with_age_and_failures() {
        let s = ModelSettings::default();
        assert_eq!(s.confidence(0, 0), 1.0);
        assert_eq!(s.confidence(60_000, 0), 1.0);
        assert!((s.confidence(60_000 + 600_000, 0) - 0.5).abs() < 1e-9);
        assert!((s.confidence(0, 2) - 0.64).abs() < 1e-9);
        assert!(s.confidence(u64::MAX, 0) < 1e-6);
    }

    #[test]
    fn requests_annotation() {
        let r =
            parse_requests_annotation("fedsched.io/network-bandwidth=2G, fedsched.io/local-storage=1Gi").expect("ok");
        assert_eq!(r.get("fedsched.io/network-bandwidth"), 2_000_000_000_000);
        assert!(parse_requests_annotation("bandwidth").is_err());
        assert!(parse_requests_annotation("a=lots").is_err());
    }
}
