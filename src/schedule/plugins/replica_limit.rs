//! `replica-limit`: the Cluster annotation `fedsched.io/max-replicas-per-workload` caps the
//! replicas one workload may hold there. Duplicated workloads asking for more are rejected;
//! divided ones see the cluster's available replicas capped (in the scheduler).

use crate::schedule::Strategy;
use crate::schedule::framework::{FilterPlugin, Fit, MemoContext, PluginContext, memo_hash};

pub struct ReplicaLimit;

impl FilterPlugin for ReplicaLimit {
    fn name(&self) -> &'static str {
        "replica-limit"
    }

    fn filter(&self, ctx: &PluginContext<'_>) -> Fit {
        let (Some(max), Some(want)) = (ctx.cluster.constraints.max_replicas_per_workload, ctx.workload.replicas) else {
            return Fit::Pass;
        };
        if Strategy::of(ctx.placement) == Strategy::Duplicated && i64::from(want) > max {
            return Fit::Reject(format!("cluster allows at most {max} replicas per workload, {want} asked"));
        }
        Fit::Pass
    }

    fn memo_key(&self, ctx: &MemoContext<'_>) -> Option<u64> {
        // Only a duplicated workload with replicas can be rejected, by its replica count.
        let duplicated = Strategy::of(ctx.placement) == Strategy::Duplicated;
        Some(match ctx.workload.replicas.filter(|_| duplicated) {
            Some(want) => memo_hash(&(1u8, want)),
            None => memo_hash(&0u8),
        })
    }
}
