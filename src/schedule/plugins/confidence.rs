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
        let age = ctx.cluster.freshness.map_or(0, |f| f.age_ms);
        Fit::Reject(format!(
            "confidence {c:.2} is below {min:.2} (data {} old): no new replicas",
            humantime::format_duration(std::time::Duration::from_secs(age / 1000))
        ))
    }

    fn memo_key(&self, ctx: &MemoContext<'_>) -> Option<u64> {
        Some(memo_hash(&ctx.settings.model.min_confidence.to_bits()))
    }
}
