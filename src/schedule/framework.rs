//! The plugin framework: filter and score plugin traits, their contexts, and the one list
//! of built-in plugins ([`registry`]).
//!
//! Plugins take a context struct, so adding a field later breaks no plugin (Karmada had to
//! add a second filter interface to learn that). Filters answer pass or reject-with-reason;
//! scorers answer 0..=100.

use std::collections::BTreeMap;

use crate::model::{ClusterSnapshot, Workload};
use crate::policy::ObjectKey;
use crate::policy::types::Placement;

use super::plugins;

/// Highest score a plugin may give.
pub const MAX_SCORE: i64 = 100;

/// What a filter or score plugin may look at for one (workload, cluster) pair.
pub struct PluginContext<'a> {
    pub key: &'a ObjectKey,
    pub workload: &'a Workload,
    pub placement: &'a Placement,
    /// The placement terms in force: `clusterAffinity`, or the active `clusterAffinities` term.
    pub affinity: Option<&'a crate::policy::types::ClusterAffinity>,
    pub cluster: &'a ClusterSnapshot,
    /// Replicas per cluster of the previous decision (empty for a first schedule).
    pub previous: &'a BTreeMap<String, i32>,
}

/// A filter's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    Pass,
    Reject(String),
}

/// Removes clusters that cannot run the workload.
pub trait FilterPlugin: Send + Sync {
    fn name(&self) -> &'static str;
    fn filter(&self, ctx: &PluginContext<'_>) -> Fit;
}

/// Ranks feasible clusters; 0..=100, higher is better.
pub trait ScorePlugin: Send + Sync {
    fn name(&self) -> &'static str;
    fn score(&self, ctx: &PluginContext<'_>) -> i64;
}

/// A plugin of either kind, as registered.
pub enum Plugin {
    Filter(Box<dyn FilterPlugin>),
    Score(Box<dyn ScorePlugin>),
}

impl Plugin {
    pub fn name(&self) -> &'static str {
        match self {
            Plugin::Filter(p) => p.name(),
            Plugin::Score(p) => p.name(),
        }
    }
}

/// Every built-in plugin, in the order filters run. The one place a plugin is registered.
pub fn registry() -> Vec<Plugin> {
    vec![
        Plugin::Filter(Box::new(plugins::api_enablement::ApiEnablement)),
        Plugin::Filter(Box::new(plugins::taint_toleration::TaintToleration)),
        Plugin::Filter(Box::new(plugins::cluster_affinity::ClusterAffinityFilter)),
        Plugin::Filter(Box::new(plugins::spread_constraint::SpreadConstraintFilter)),
        Plugin::Score(Box::new(plugins::cluster_locality::ClusterLocality)),
    ]
}

/// The plugins of one scheduling profile, with score weights.
pub struct Framework {
    pub filters: Vec<Box<dyn FilterPlugin>>,
    pub scorers: Vec<(Box<dyn ScorePlugin>, i64)>,
    pub estimators: Vec<Box<dyn crate::model::estimate::Estimator>>,
}

impl Framework {
    /// Karmada's default profile: every filter, locality as the only effective score (weight 1).
    pub fn karmada_default() -> Self {
        let mut filters = Vec::new();
        let mut scorers = Vec::new();
        for p in registry() {
            match p {
                Plugin::Filter(f) => filters.push(f),
                Plugin::Score(s) => scorers.push((s, 1)),
            }
        }
        Framework { filters, scorers, estimators: crate::model::estimate::estimators() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_kebab_case() {
        let names: Vec<&str> = registry().iter().map(Plugin::name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "duplicate plugin names: {names:?}");
        for n in names {
            assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{n}");
        }
    }
}
