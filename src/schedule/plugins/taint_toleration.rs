//! `taint-toleration`: every NoSchedule / NoExecute taint of the cluster must be tolerated by
//! the placement's `clusterTolerations` (Kubernetes toleration semantics). Clusters already
//! running the workload pass: eviction is failover's decision, not the filter's.

use crate::model::ClusterTaint;
use crate::policy::types::{TaintEffect, Toleration, TolerationOperator};
use crate::schedule::framework::{FilterPlugin, Fit, MemoContext, PluginContext, memo_hash};

pub struct TaintToleration;

/// Kubernetes' `Toleration.ToleratesTaint`.
pub fn tolerates(t: &Toleration, taint: &ClusterTaint) -> bool {
    if let Some(effect) = t.effect
        && effect != taint.effect
    {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.unwrap_or(TolerationOperator::Equal) {
        // An empty key with Exists matches every taint.
        TolerationOperator::Exists => true,
        TolerationOperator::Equal => {
            if key.is_empty() {
                return false;
            }
            t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        TolerationOperator::Lt | TolerationOperator::Gt => false,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: Option<&str>, effect: TaintEffect) -> ClusterTaint {
        ClusterTaint { key: key.into(), value: value.map(Into::into), effect }
    }

    #[test]
    fn kubernetes_toleration_rules() {
        let t = taint("dedicated", Some("gpu"), TaintEffect::NoSchedule);
        let cases = [
            (Toleration { key: Some("dedicated".into()), value: Some("gpu".into()), ..Default::default() }, true),
            (Toleration { key: Some("dedicated".into()), value: Some("web".into()), ..Default::default() }, false),
            (
                Toleration {
                    key: Some("dedicated".into()),
                    operator: Some(TolerationOperator::Exists),
                    ..Default::default()
                },
                true,
            ),
            (Toleration { operator: Some(TolerationOperator::Exists), ..Default::default() }, true),
            (
                Toleration {
                    operator: Some(TolerationOperator::Exists),
                    effect: Some(TaintEffect::NoExecute),
                    ..Default::default()
                },
                false,
            ),
            // Karmada's sample: effect only, no key, operator defaults to Equal ⇒ no match.
            (Toleration { effect: Some(TaintEffect::NoSchedule), ..Default::default() }, false),
        ];
        for (tol, want) in cases {
            assert_eq!(tolerates(&tol, &t), want, "{tol:?}");
        }
    }
}
