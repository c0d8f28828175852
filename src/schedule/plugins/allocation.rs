//! `least-allocated` (spread load) and `most-allocated` (bin-pack): how full a cluster would be
//! with one more replica, from its resource summary, averaged over the resources the workload
//! requests (cpu and memory when it requests nothing). Kubernetes' NodeResources scoring
//! strategies at cluster level. With `[model.cpu_performance]` and node-level data, CPU is
//! compared in normalised cores (a fast node's free core counts for more). Normalised min-max across the feasible clusters (the best
//! cluster 100, the worst 0), so a weight means the same for every scorer. A cluster without a
//! summary scores 0.

use crate::model::ClusterSnapshot;
use crate::schedule::framework::{PluginContext, ScorePlugin, UNKNOWN_SCORE, min_max_normalize};

/// Prefers the emptiest clusters.
pub struct LeastAllocated;

/// Prefers the fullest clusters that still fit.
pub struct MostAllocated;

/// Mean utilisation (0..=1000 ‰) after adding one replica, over the requested resources the
/// cluster declares; None when the cluster has no summary or none of those resources.
pub fn utilisation_permille(cluster: &ClusterSnapshot, ctx: &PluginContext<'_>) -> Option<i64> {
    let s = cluster.summary.as_ref()?;
    let request = &ctx.workload.requirements.request;
    let mut dims: Vec<(&str, i64)> = request.iter().filter(|(n, v)| *n != "pods" && *v > 0).collect();
    if dims.is_empty() {
        dims = vec![("cpu", 0), ("memory", 0)];
    }
    let mut sum = 0i128;
    let mut n = 0i128;
    let model = &ctx.settings.model;
    for (name, want) in dims {
        let total = s.allocatable.get(name);
        if total <= 0 {
            continue;
        }
        let used = s.allocated.get(name).saturating_add(s.allocating.get(name)).saturating_add(want);
        if name == "cpu" && !cluster.nodes.is_empty() && model.has_cpu_performance() {
            // Normalised cores: each node's CPU weighted by its performance factor; requests
            // not on a listed node (pending) at the cluster's mean factor.
            let fig = crate::model::nodes::cpu_figures(&cluster.nodes, model);
            let used_n = fig.requested_normalised + (used - fig.requested_raw) as f64 * fig.mean_factor();
            if fig.allocatable_normalised > 0.0 {
                sum += ((used_n * 1000.0 / fig.allocatable_normalised) as i128).clamp(0, 1000);
                n += 1;
                continue;
            }
        }
        sum += (i128::from(used) * 1000 / i128::from(total)).clamp(0, 1000);
        n += 1;
    }
    (n > 0).then(|| (sum / n) as i64)
}

impl ScorePlugin for LeastAllocated {
    fn name(&self) -> &'static str {
        "least-allocated"
    }

    fn score(&self, ctx: &PluginContext<'_>) -> i64 {
        utilisation_permille(ctx.cluster, ctx).map(|u| 1000 - u).unwrap_or(UNKNOWN_SCORE)
    }

    fn normalize(&self, scores: &mut [i64]) {
        min_max_normalize(scores);
    }
}

impl ScorePlugin for MostAllocated {
    fn name(&self) -> &'static str {
        "most-allocated"
    }

    fn score(&self, ctx: &PluginContext<'_>) -> i64 {
        utilisation_permille(ctx.cluster, ctx).unwrap_or(UNKNOWN_SCORE)
    }

    fn normalize(&self, scores: &mut [i64]) {
        min_max_normalize(scores);
    }
}
