//! The plugin framework: filter and score plugin traits, their contexts, and the one list
//! of built-in plugins ([`registry`]).
//!
//! Plugins take a context struct, so adding a field later breaks no plugin (Karmada had to
//! add a second filter interface to learn that). Filters answer pass or reject-with-reason;
//! scorers answer a raw score per cluster, which [`ScorePlugin::normalize`] maps to 0..=100
//! across the feasible clusters (the default keeps raw scores that are already 0..=100).
//! A [`Framework`] is one profile: the enabled filters, the weighted scorers and the settings
//! (price table, round-robin weights) the scorers read; profiles are built from [`registry`]
//! by [`super::profile::Profiles`].

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
    /// Clusters failover evicted the workload from ([`super::Failover::evicted`]).
    pub evicted: &'a std::collections::BTreeSet<String>,
    /// Settings of the profile in force (price table, round-robin weights).
    pub settings: &'a ScoreSettings,
}

/// What configurable scorers read: the price table and the round-robin weights of a profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreSettings {
    /// Prices per cluster or region (`[cost]` in the config).
    pub cost: super::profile::CostTable,
    /// Cluster → weight for `weighted-round-robin` (absent = 1, 0 = never preferred).
    pub round_robin_weights: BTreeMap<String, i64>,
    /// The resource model settings (`[model]`): CPU performance, confidence threshold.
    pub model: std::sync::Arc<crate::model::dimensions::ModelSettings>,
    /// How dynamic weights and Aggregated divide a workload that requests CPU
    /// (`[profiles.<name>] cpu_division`).
    pub cpu_division: CpuDivision,
}

/// How dynamic weights and Aggregated weigh a cluster's free replicas of a workload that
/// requests CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuDivision {
    /// By free replicas in raw cores, as Karmada (the default).
    #[default]
    Raw,
    /// By free replicas times the member's CPU performance factor (normalised cores): a
    /// member 20 % faster gets 20 % more of a throughput-bound service's replicas, never more
    /// than fit in raw cores.
    Normalised,
}

/// A raw score meaning "this plugin cannot tell for this cluster"; normalised to 0.
pub const UNKNOWN_SCORE: i64 = i64::MIN;

/// A filter's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    Pass,
    Reject(String),
}

/// What a filter's memo key may look at: the workload side of a [`PluginContext`] (no cluster,
/// no previous placement).
pub struct MemoContext<'a> {
    pub key: &'a ObjectKey,
    pub workload: &'a Workload,
    pub placement: &'a Placement,
    /// The placement terms in force (as [`PluginContext::affinity`]).
    pub affinity: Option<&'a crate::policy::types::ClusterAffinity>,
    /// As [`PluginContext::evicted`].
    pub evicted: &'a std::collections::BTreeSet<String>,
    pub settings: &'a ScoreSettings,
}

/// Removes clusters that cannot run the workload.
pub trait FilterPlugin: Send + Sync {
    fn name(&self) -> &'static str;
    fn filter(&self, ctx: &PluginContext<'_>) -> Fit;

    /// A hash of the projection of the workload (and settings) this filter's answer depends
    /// on, for clusters outside the previous placement; `None` (the default) when the filter
    /// must run for every pair. Contract: for a cluster not in `previous`, two contexts with
    /// the same key get the same [`Fit`], and the answer reads only cluster fields that do not
    /// change within a pass (labels, taints, APIs, topology, constraints, confidence — not free
    /// capacity, which assumed replicas change). [`super::Fleet`] evaluates a keyed filter once
    /// per (key, cluster) and shares the answer across workloads. Checked for every registered
    /// filter on generated inputs: `it::architecture::registry`.
    fn memo_key(&self, _ctx: &MemoContext<'_>) -> Option<u64> {
        None
    }
}

/// Hash of a memo key's projection (deterministic within a process; memo keys never leave it):
/// foldhash's quality variant, seeded once per process — several times cheaper than SipHash
/// with fixed keys, which hashed every workload's affinity and every filter's memo key (3–4 %
/// of S1), and a seed no policy file can know, so no one can make two projections collide.
pub fn memo_hash<T: std::hash::Hash + ?Sized>(v: &T) -> u64 {
    use std::hash::BuildHasher;
    static SEED: std::sync::OnceLock<foldhash::quality::RandomState> = std::sync::OnceLock::new();
    SEED.get_or_init(Default::default).hash_one(v)
}

/// Ranks feasible clusters; higher is better. `score` gives a raw value per cluster;
/// `normalize` maps the raw values of all feasible clusters to 0..=100 in place.
pub trait ScorePlugin: Send + Sync {
    /// Stable kebab-case name, used in profiles and explain.
    fn name(&self) -> &'static str;
    /// Raw score of one cluster ([`UNKNOWN_SCORE`] when the plugin has no data).
    fn score(&self, ctx: &PluginContext<'_>) -> i64;
    /// Whether the raw score reads only what a decision's key covers — the request, the
    /// previous placement, the profile's settings, the cluster's name and static facts
    /// (region, labels) — and never its free capacity, nodes, deductions or freshness: then
    /// every cluster's score stays while only capacity changes, and a decision is checked by
    /// the verdicts of the clusters that changed alone ([`crate::schedule::outcome_stands`]).
    /// `settings`: the profile's (a scorer may read static facts under some settings only).
    /// Default: no. Checked for every registered scorer on generated inputs:
    /// `it::architecture::registry`.
    fn static_only(&self, _settings: &ScoreSettings) -> bool {
        false
    }
    /// Maps raw scores to 0..=100 across clusters. Default: clamp (for scores already 0..=100).
    fn normalize(&self, scores: &mut [i64]) {
        for s in scores {
            *s = if *s == UNKNOWN_SCORE { 0 } else { (*s).clamp(0, MAX_SCORE) };
        }
    }
}

/// Min-max normalisation: the best known raw score becomes 100, the worst 0, unknown scores 0;
/// when every known score is equal they all become 100.
pub fn min_max_normalize(scores: &mut [i64]) {
    let known = scores.iter().copied().filter(|s| *s != UNKNOWN_SCORE);
    let (Some(min), Some(max)) = (known.clone().min(), known.max()) else {
        scores.iter_mut().for_each(|s| *s = 0);
        return;
    };
    for s in scores {
        *s = if *s == UNKNOWN_SCORE {
            0
        } else if max == min {
            MAX_SCORE
        } else {
            let v = (i128::from(*s) - i128::from(min)) * i128::from(MAX_SCORE) / (i128::from(max) - i128::from(min));
            v as i64
        };
    }
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
        Plugin::Filter(Box::new(plugins::cluster_eviction::ClusterEviction)),
        Plugin::Filter(Box::new(plugins::taint_toleration::TaintToleration)),
        Plugin::Filter(Box::new(plugins::cluster_affinity::ClusterAffinityFilter)),
        Plugin::Filter(Box::new(plugins::spread_constraint::SpreadConstraintFilter)),
        Plugin::Filter(Box::new(plugins::confidence::Confidence)),
        Plugin::Filter(Box::new(plugins::replica_limit::ReplicaLimit)),
        Plugin::Score(Box::new(plugins::cluster_locality::ClusterLocality)),
        Plugin::Score(Box::new(plugins::allocation::LeastAllocated)),
        Plugin::Score(Box::new(plugins::allocation::MostAllocated)),
        Plugin::Score(Box::new(plugins::cost_first::CostFirst)),
        Plugin::Score(Box::new(plugins::round_robin::WeightedRoundRobin)),
        Plugin::Score(Box::new(plugins::gpu_model::GpuModel)),
    ]
}

/// Name of the built-in profile that reproduces Karmada's scheduler.
pub const KARMADA_DEFAULT: &str = "karmada-default";

/// The plugins of one scheduling profile, with score weights.
pub struct Framework {
    /// Profile name, recorded in every decision.
    pub name: String,
    pub filters: Vec<Box<dyn FilterPlugin>>,
    /// Enabled scorers with their weights (> 0), in registry order.
    pub scorers: Vec<(Box<dyn ScorePlugin>, i64)>,
    pub estimators: Vec<Box<dyn crate::model::estimate::Estimator>>,
    pub settings: ScoreSettings,
    /// A stable hash of everything above that decides an outcome (plugin names and order,
    /// weights, settings): part of every decision key, so that a profile changed under the
    /// same name (a reload, a restart with another config) decides its workloads again.
    pub digest: u64,
}

impl Framework {
    /// Whether every score plugin reads only static facts ([`ScorePlugin::static_only`]).
    pub fn scores_static(&self) -> bool {
        self.scorers.iter().all(|(p, _)| p.static_only(&self.settings))
    }

    /// Karmada's default profile: every filter, locality as the only score (weight 1); ties
    /// are broken by available replicas, then name, in selection.
    pub fn karmada_default() -> Self {
        let scores = [(plugins::cluster_locality::NAME.to_string(), 1)].into_iter().collect();
        Framework::build(KARMADA_DEFAULT, None, &scores, ScoreSettings::default())
            .unwrap_or_else(|_| Framework::empty(KARMADA_DEFAULT))
    }

    fn empty(name: &str) -> Self {
        Framework {
            name: name.into(),
            filters: Vec::new(),
            scorers: Vec::new(),
            estimators: crate::model::estimate::estimators(),
            settings: ScoreSettings::default(),
            digest: 0,
        }
    }

    /// Builds a profile from the registry: `filters` (None = all, in registry order) and
    /// score weights by plugin name (weight 0 disables a scorer). Unknown names are errors.
    pub fn build(
        name: &str,
        filters: Option<&[String]>,
        scores: &BTreeMap<String, i64>,
        settings: ScoreSettings,
    ) -> Result<Self, String> {
        let registry = registry();
        let known = |n: &str, want_filter: bool| {
            registry.iter().any(|p| p.name() == n && matches!(p, Plugin::Filter(_)) == want_filter)
        };
        for f in filters.unwrap_or(&[]) {
            if !known(f, true) {
                return Err(format!("unknown filter plugin {f:?} (known: {})", names(&registry, true)));
            }
        }
        for (s, w) in scores {
            if !known(s, false) {
                return Err(format!("unknown score plugin {s:?} (known: {})", names(&registry, false)));
            }
            if *w < 0 {
                return Err(format!("score weight of {s} must not be negative"));
            }
        }
        let mut fw = Framework::empty(name);
        fw.estimators = crate::model::estimate::estimators_with(&settings.model);
        fw.settings = settings;
        for p in registry {
            match p {
                Plugin::Filter(f) => {
                    if filters.is_none_or(|list| list.iter().any(|n| n == f.name())) {
                        fw.filters.push(f);
                    }
                }
                Plugin::Score(s) => {
                    if let Some(w) = scores.get(s.name()).copied().filter(|w| *w > 0) {
                        fw.scorers.push((s, w));
                    }
                }
            }
        }
        fw.refresh_digest();
        Ok(fw)
    }

    /// Recomputes [`Framework::digest`] after the plugins or settings changed.
    pub fn refresh_digest(&mut self) {
        let filters: Vec<&str> = self.filters.iter().map(|f| f.name()).collect();
        let scorers: Vec<(&str, i64)> = self.scorers.iter().map(|(s, w)| (s.name(), *w)).collect();
        let estimators: Vec<&str> = self.estimators.iter().map(|e| e.name()).collect();
        // Debug output of ordered collections and plain values: stable for a build; a
        // different build at worst decides its workloads again once.
        let text = format!("{}\u{0}{filters:?}\u{0}{scorers:?}\u{0}{estimators:?}\u{0}{:?}", self.name, self.settings);
        self.digest = crate::util::hash::fnv1a64(text.as_bytes());
    }
}

fn names(registry: &[Plugin], filters: bool) -> String {
    registry
        .iter()
        .filter(|p| matches!(p, Plugin::Filter(_)) == filters)
        .map(Plugin::name)
        .collect::<Vec<_>>()
        .join(", ")
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

    #[test]
    fn karmada_default_is_every_filter_and_locality_only() {
        let fw = Framework::karmada_default();
        assert_eq!(fw.filters.len(), registry().iter().filter(|p| matches!(p, Plugin::Filter(_))).count());
        let scorers: Vec<(&str, i64)> = fw.scorers.iter().map(|(s, w)| (s.name(), *w)).collect();
        assert_eq!(scorers, vec![("cluster-locality", 1)]);
    }

    #[test]
    fn build_rejects_unknown_names() {
        let scores = [("cheapest".to_string(), 1)].into_iter().collect();
        let e = Framework::build("p", None, &scores, ScoreSettings::default()).err().unwrap_or_default();
        assert!(e.contains("cheapest") && e.contains("cost-first"), "{e}");
        let e = Framework::build("p", Some(&["nope".to_string()]), &BTreeMap::new(), ScoreSettings::default())
            .err()
            .unwrap_or_default();
        assert!(e.contains("nope"), "{e}");
    }

    #[test]
    fn min_max() {
        let mut s = vec![10, 20, UNKNOWN_SCORE, 30];
        min_max_normalize(&mut s);
        assert_eq!(s, vec![0, 50, 0, 100]);
        let mut s = vec![7, 7];
        min_max_normalize(&mut s);
        assert_eq!(s, vec![100, 100]);
    }
}
