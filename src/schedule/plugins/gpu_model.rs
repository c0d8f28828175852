//! `gpu-model`: for workloads that request GPUs, prefers clusters with more memory per GPU
//! (node label `nvidia.com/gpu.memory` on Ready, schedulable nodes with a free GPU; for
//! offline clusters the same label on the Cluster object). A workload that names a model
//! (node selector / affinity on `nvidia.com/gpu.product`, or `fedsched.io/gpu-product`) has
//! it enforced by the node-level estimator; this scorer only ranks. Normalised min-max.

use crate::model::dimensions::{GPU_RESOURCES, gpu_memory_mib};
use crate::schedule::framework::{PluginContext, ScorePlugin, UNKNOWN_SCORE, min_max_normalize};

pub struct GpuModel;

impl ScorePlugin for GpuModel {
    fn name(&self) -> &'static str {
        "gpu-model"
    }

    fn score(&self, ctx: &PluginContext<'_>) -> i64 {
        let req = &ctx.workload.requirements.request;
        let Some(gpu) = GPU_RESOURCES.iter().find(|g| req.get(g) > 0) else { return UNKNOWN_SCORE };
        let want = req.get(gpu);
        let c = ctx.cluster;
        if c.nodes.is_empty() {
            return gpu_memory_mib(&c.labels).unwrap_or(UNKNOWN_SCORE);
        }
        c.nodes
            .iter()
            .filter(|n| n.ready && !n.unschedulable)
            .filter(|n| n.allocatable.get(gpu).saturating_sub(n.requested.get(gpu)) >= want)
            .filter_map(|n| gpu_memory_mib(&n.labels))
            .max()
            .unwrap_or(UNKNOWN_SCORE)
    }

    fn normalize(&self, scores: &mut [i64]) {
        min_max_normalize(scores);
    }
}
