//! `api-enablement`: the member must serve the template's kind (when its API list is known).
//! Clusters already running the workload always pass, so a vanished API never deletes it.

use crate::schedule::framework::{FilterPlugin, Fit, MemoContext, PluginContext, memo_hash};

pub struct ApiEnablement;

impl FilterPlugin for ApiEnablement {
    fn name(&self) -> &'static str {
        "api-enablement"
    }

    fn filter(&self, ctx: &PluginContext<'_>) -> Fit {
        let apis = &ctx.cluster.api_enablements;
        if apis.is_empty() || ctx.previous.contains_key(&ctx.cluster.name) {
            return Fit::Pass;
        }
        let gvk = format!("{}/{}", ctx.key.api_version, ctx.key.kind);
        if apis.contains(&gvk) { Fit::Pass } else { Fit::Reject(format!("cluster does not serve {gvk}")) }
    }

    fn memo_key(&self, ctx: &MemoContext<'_>) -> Option<u64> {
        Some(memo_hash(&(&ctx.key.api_version, &ctx.key.kind)))
    }
}
