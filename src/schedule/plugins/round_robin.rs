//! `weighted-round-robin`: spreads workloads over clusters in proportion to configured weights
//! (`round_robin_weights` of the profile, default 1, 0 = never preferred), without state:
//! weighted rendezvous hashing of (workload, cluster), so each workload has its own rotation
//! of the clusters, a cluster is first for about `weight / Σ weights` of the workloads, and
//! the answer never changes for the same inputs. Normalised by rank: the first cluster of the
//! rotation scores 100, the last 0.

use crate::schedule::framework::{MAX_SCORE, PluginContext, ScorePlugin, UNKNOWN_SCORE};
use crate::util::hash::fnv1a64;

pub struct WeightedRoundRobin;

impl ScorePlugin for WeightedRoundRobin {
    /// Reads the profile's weights, the workload's and the cluster's names only.
    fn static_only(&self, _settings: &crate::schedule::framework::ScoreSettings) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "weighted-round-robin"
    }

    fn score(&self, ctx: &PluginContext<'_>) -> i64 {
        let w = ctx.settings.round_robin_weights.get(&ctx.cluster.name).copied().unwrap_or(1);
        if w <= 0 {
            return UNKNOWN_SCORE;
        }
        let h = fnv1a64(format!("{}\u{0}{}", ctx.key.store_key(), ctx.cluster.name).as_bytes());
        // u in (0, 1): the top 53 bits, never 0.
        let u = ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let key = -(w as f64) / u.ln();
        (key * 1e9).min(i64::MAX as f64 / 2.0) as i64
    }

    fn normalize(&self, scores: &mut [i64]) {
        let n = scores.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|a, b| scores[*b].cmp(&scores[*a]).then(a.cmp(b)));
        let mut out = vec![0; n];
        for (rank, i) in order.into_iter().enumerate() {
            out[i] = if scores[i] == UNKNOWN_SCORE {
                0
            } else if n <= 1 {
                MAX_SCORE
            } else {
                (n - 1 - rank) as i64 * MAX_SCORE / (n - 1) as i64
            };
        }
        scores.copy_from_slice(&out);
    }
}
