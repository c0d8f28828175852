//! `replica-limit`: the Cluster annotation `fedsched.io/max-replicas-per-workload` caps the
//! replicas one workload may hold there. Duplicated workloads asking for more are rejected;
//! divided ones see the cluster's available replicas capped (in the scheduler).

use crate::schedule::Strategy;
use crate::schedule::framework::{FilterPlugin, Fit, PluginContext};

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
}
