//! `taint-toleration`: every NoSchedule / NoExecute taint of the cluster must be tolerated by
//! the placement's `clusterTolerations` (Kubernetes toleration semantics). Clusters already
//! running the workload pass: eviction is failover's decision, not the filter's.

use crate::model::nodes::tolerates;
use crate::policy::types::TaintEffect;
use crate::schedule::framework::{FilterPlugin, Fit, MemoContext, PluginContext, memo_hash};

pub struct TaintToleration;

impl FilterPlugin for TaintToleration {
    fn name(&self) -> &'static str {
        "taint-toleration"
    }

    fn filter(&self, ctx: &PluginContext<'_>) -> Fit {
        if ctx.previous.contains_key(&ctx.cluster.name) {
            return Fit::Pass;
        }
        for taint in &ctx.cluster.taints {
            if taint.effect == TaintEffect::PreferNoSchedule {
                continue;
            }
            if !ctx.placement.cluster_tolerations.iter().any(|t| tolerates(t, taint)) {
                let v = taint.value.as_deref().map(|v| format!("={v}")).unwrap_or_default();
                return Fit::Reject(format!("cluster had untolerated taint {{{}{v}:{:?}}}", taint.key, taint.effect));
            }
        }
        Fit::Pass
    }

    fn memo_key(&self, ctx: &MemoContext<'_>) -> Option<u64> {
        Some(memo_hash(&ctx.placement.cluster_tolerations))
    }
}
