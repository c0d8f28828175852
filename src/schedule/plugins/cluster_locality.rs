//! `cluster-locality`: prefer clusters that already run the workload (Karmada's only effective
//! score: 100 if present in the previous decision, else 0).

use crate::schedule::framework::{MAX_SCORE, PluginContext, ScorePlugin};

pub struct ClusterLocality;

/// Registered name.
pub const NAME: &str = "cluster-locality";

impl ScorePlugin for ClusterLocality {
    /// Reads the previous placement only.
    fn static_only(&self, _settings: &crate::schedule::framework::ScoreSettings) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn score(&self, ctx: &PluginContext<'_>) -> i64 {
        if ctx.previous.contains_key(&ctx.cluster.name) { MAX_SCORE } else { 0 }
    }
}
