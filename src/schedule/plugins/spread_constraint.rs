//! `spread-constraint`: when a placement spreads by provider, region or zone, clusters that do
//! not declare that property cannot take part.

use crate::policy::types::SpreadByField;
use crate::schedule::framework::{FilterPlugin, Fit, MemoContext, PluginContext, memo_hash};

pub struct SpreadConstraintFilter;

impl FilterPlugin for SpreadConstraintFilter {
    fn name(&self) -> &'static str {
        "spread-constraint"
    }

    fn filter(&self, ctx: &PluginContext<'_>) -> Fit {
        let c = ctx.cluster;
        for sc in &ctx.placement.spread_constraints {
            let missing = match sc.spread_by_field {
                Some(SpreadByField::Provider) => c.provider.as_deref().unwrap_or("").is_empty().then_some("provider"),
                Some(SpreadByField::Region) => c.region.as_deref().unwrap_or("").is_empty().then_some("region"),
                Some(SpreadByField::Zone) => c.zones.is_empty().then_some("zone"),
                Some(SpreadByField::Cluster) | None => None,
            };
            if let Some(field) = missing {
                return Fit::Reject(format!("cluster has no {field}, required by spreadConstraints"));
            }
            if let Some(label) = &sc.spread_by_label
                && !c.labels.contains_key(label)
            {
                return Fit::Reject(format!("cluster has no label {label}, required by spreadConstraints"));
            }
        }
        Fit::Pass
    }

    fn memo_key(&self, ctx: &MemoContext<'_>) -> Option<u64> {
        Some(memo_hash(&ctx.placement.spread_constraints))
    }
}
