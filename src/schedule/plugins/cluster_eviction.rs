//! `cluster-eviction`: Karmada's ClusterEviction filter. A cluster the workload is being
//! evicted from (a graceful eviction task of the stability engine, or a member it left by
//! failover and has not returned to) is rejected, also when it is in the previous placement:
//! failover took the workload off it.

use crate::schedule::framework::{FilterPlugin, Fit, MemoContext, PluginContext, memo_hash};

pub struct ClusterEviction;

impl FilterPlugin for ClusterEviction {
    fn name(&self) -> &'static str {
        "cluster-eviction"
    }

    fn filter(&self, ctx: &PluginContext<'_>) -> Fit {
        if ctx.evicted.contains(&ctx.cluster.name) {
            Fit::Reject("cluster is in the workload's graceful eviction tasks (failover)".into())
        } else {
            Fit::Pass
        }
    }

    fn memo_key(&self, ctx: &MemoContext<'_>) -> Option<u64> {
        Some(memo_hash(ctx.evicted))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::model::{ClusterSnapshot, Workload};
    use crate::policy::ObjectKey;
    use crate::policy::types::Placement;

    #[test]
    fn rejects_evicted_clusters_even_when_previously_placed() {
        let key = ObjectKey { api_version: "v1".into(), kind: "Pod".into(), namespace: None, name: "p".into() };
        let workload = Workload::non_workload();
        let placement = Placement::default();
        let previous = BTreeMap::from([("a".to_string(), 1)]);
        let evicted = BTreeSet::from(["a".to_string()]);
        let settings = Default::default();
        let fit = |name: &str| {
            let cluster = ClusterSnapshot::offline(name, "clusters.yaml");
            ClusterEviction.filter(&PluginContext {
                key: &key,
                workload: &workload,
                placement: &placement,
                affinity: None,
                cluster: &cluster,
                previous: &previous,
                evicted: &evicted,
                settings: &settings,
            })
        };
        assert!(matches!(fit("a"), Fit::Reject(r) if r.contains("graceful eviction")));
        assert_eq!(fit("b"), Fit::Pass);
    }
}
