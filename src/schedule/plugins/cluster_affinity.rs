//! `cluster-affinity`: the placement's cluster affinity (names, exclude, label and field
//! selectors) must match the cluster.

use crate::policy::matching::cluster_matches;
use crate::schedule::framework::{FilterPlugin, Fit, MemoContext, PluginContext, memo_hash};

pub struct ClusterAffinityFilter;

impl FilterPlugin for ClusterAffinityFilter {
    fn name(&self) -> &'static str {
        "cluster-affinity"
    }

    fn filter(&self, ctx: &PluginContext<'_>) -> Fit {
        let Some(aff) = ctx.affinity else {
            return Fit::Pass;
        };
        if cluster_matches(aff, &ctx.cluster.facts()) {
            return Fit::Pass;
        }
        let name = &ctx.cluster.name;
        let reason = if aff.exclude.iter().any(|e| e == name) {
            "cluster is excluded by clusterAffinity.exclude".to_string()
        } else if !aff.cluster_names.is_empty() && !aff.cluster_names.iter().any(|n| n == name) {
            format!("cluster is not in clusterAffinity.clusterNames {:?}", aff.cluster_names)
        } else {
            "cluster does not match the clusterAffinity label or field selector".to_string()
        };
        Fit::Reject(reason)
    }

    fn memo_key(&self, ctx: &MemoContext<'_>) -> Option<u64> {
        Some(memo_hash(&ctx.affinity))
    }
}
