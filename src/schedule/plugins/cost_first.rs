//! `cost-first`: prefers the cluster where one replica is cheapest, from the profile's price
//! table (`[cost]`): a price entry for the cluster, else for its region; price per unit of each
//! dimension (cpu per core, memory and other byte resources per GiB, anything else per unit).
//! A dimension without a price costs nothing; an entry marked `spot` costs
//! `(1 + spot_risk)` times its prices (the interruption risk the operator puts on spot
//! capacity). A workload without requests is priced as 1 core + 1 GiB. Clusters without a
//! price entry score 0; the others are normalised min-max (cheapest 100, dearest 0).
//!
//! CPU is priced per normalised core: with `[model.cpu_performance]`, a replica's cores cost
//! their price divided by the member's CPU performance factor
//! ([`crate::model::ClusterSnapshot::cpu_factor`]), so at the same price per core a member 20 %
//! faster does a replica's work for 1/1.2 of the price. The request itself stays in raw cores.

use crate::schedule::framework::{PluginContext, ScorePlugin, UNKNOWN_SCORE, min_max_normalize};

pub struct CostFirst;

/// Price of one replica in micro-units of the table's currency; None without a price entry.
pub fn replica_cost_micros(ctx: &PluginContext<'_>) -> Option<i64> {
    let table = &ctx.settings.cost;
    let entry = table
        .clusters
        .get(&ctx.cluster.name)
        .or_else(|| ctx.cluster.region.as_ref().and_then(|r| table.regions.get(r)))?;
    let request = &ctx.workload.requirements.request;
    let mut dims: Vec<(&str, i64)> = request.iter().filter(|(n, v)| *n != "pods" && *v > 0).collect();
    if dims.is_empty() {
        dims = vec![("cpu", 1000), ("memory", (1i64 << 30) * 1000)];
    }
    let mut cost = 0.0f64;
    for (name, milli) in dims {
        let Some(price) = entry.prices.get(name) else { continue };
        let units = if name == "memory" || name.contains("storage") || name.starts_with("hugepages-") {
            milli as f64 / 1000.0 / f64::from(1u32 << 30)
        } else if name == "cpu" {
            milli as f64 / 1000.0 / ctx.cluster.cpu_factor(&ctx.settings.model)
        } else {
            milli as f64 / 1000.0
        };
        cost += units * price.0;
    }
    if entry.spot {
        cost *= 1.0 + table.spot_risk.0;
    }
    Some((cost * 1_000_000.0).round() as i64)
}

impl ScorePlugin for CostFirst {
    /// Reads the profile's price table, the cluster's name and region, and the request only;
    /// with a CPU performance table also the member's nodes (their CPU factors), which are not
    /// static facts.
    fn static_only(&self, settings: &crate::schedule::framework::ScoreSettings) -> bool {
        !settings.model.has_cpu_performance()
    }

    fn name(&self) -> &'static str {
        "cost-first"
    }

    fn score(&self, ctx: &PluginContext<'_>) -> i64 {
        // Negated: cheaper is better.
        replica_cost_micros(ctx).map(|c| -c).unwrap_or(UNKNOWN_SCORE)
    }

    fn normalize(&self, scores: &mut [i64]) {
        min_max_normalize(scores);
    }
}
