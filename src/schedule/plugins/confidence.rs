//! `confidence`: a cluster whose view is too old or whose polls keep failing (confidence below
//! `[model] min_confidence`) receives no new replicas. Clusters already running the workload
//! pass: they keep what they have (their free capacity is counted as zero when estimating).
//! Offline clusters and fresh polls have confidence 1 and always pass.

use crate::schedule::framework::{FilterPlugin, Fit, MemoContext, PluginContext, memo_hash};

pub struct Confidence;

impl FilterPlugin for Confidence {
    fn name(&self) -> &'static str {
        "confidence"
    }

    fn filter(&self, ctx: &PluginContext<'_>) -> Fit {
        let c = ctx.cluster.confidence();
        let min = ctx.settings.model.min_confidence;
        if c >= min || ctx.previous.contains_key(&ctx.cluster.name) {
            return Fit::Pass;
        }
        // The reason names when the member was last heard from, not the data's age nor the
        // failed polls: those grow every pass, and a rejection that read them would make every
        // decision of the fleet depend on the clock while one member is silent
        // (`reconcile::cache::fleet_static_key` keys a rejected cluster on this only).
        let heard = match ctx.cluster.freshness.map_or(0, |f| f.polled_at_ms) {
            0 => "never heard from".to_owned(),
            ms => format!("last heard from {}", crate::util::clock::rfc3339_ms(ms)),
        };
        Fit::Reject(format!("confidence is below {min:.2} ({heard}): no new replicas"))
    }

    fn memo_key(&self, ctx: &MemoContext<'_>) -> Option<u64> {
        Some(memo_hash(&ctx.settings.model.min_confidence.to_bits()))
    }
}
