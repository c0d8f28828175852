//! Scheduling profiles: named plugin sets with score weights, from the config file
//! (`[profiles.<name>]`, `[cost]`), built into [`Framework`]s once. The built-in profile
//! [`KARMADA_DEFAULT`] reproduces Karmada's scheduler and cannot be redefined. A policy picks
//! its profile with the annotation [`PROFILE_ANNOTATION`].

use std::collections::BTreeMap;

use serde::Deserialize;

use super::framework::{Framework, KARMADA_DEFAULT, ScoreSettings};
use crate::policy::PolicySet;
use crate::policy::load::LoadError;

/// Annotation on a PropagationPolicy / ClusterPropagationPolicy naming its profile.
pub const PROFILE_ANNOTATION: &str = "fedsched.io/profile";

/// A price (currency units per unit of a dimension); finite and not negative once validated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Price(pub f64);

// Prices are validated finite, so equality is reflexive.
impl Eq for Price {}

/// One row of the price table: price per dimension (`cpu` per core, `memory` per GiB, other
/// resources per unit) and whether this is spot capacity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct PriceEntry {
    /// Spot (interruptible) capacity: prices are raised by `spot_risk`.
    #[serde(default)]
    pub spot: bool,
    /// Resource name → price per unit.
    #[serde(flatten)]
    pub prices: BTreeMap<String, Price>,
}

/// `[cost]`: the price table, per cluster (wins) or per region.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostTable {
    /// Fraction added to spot prices to account for interruptions (0.25 = +25 %).
    #[serde(default)]
    pub spot_risk: Price,
    #[serde(default)]
    pub clusters: BTreeMap<String, PriceEntry>,
    #[serde(default)]
    pub regions: BTreeMap<String, PriceEntry>,
}

/// `[profiles.<name>]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ProfileConfig {
    /// Filter plugins to run (default: all, in registry order).
    #[serde(default)]
    pub filters: Option<Vec<String>>,
    /// Score plugin → weight; plugins not listed are off.
    #[serde(default)]
    pub scores: BTreeMap<String, i64>,
    /// Cluster → weight for `weighted-round-robin` (default 1).
    #[serde(default)]
    pub round_robin_weights: BTreeMap<String, i64>,
    /// `raw` (default, Karmada) or `normalised`: dynamic weights and Aggregated weigh a
    /// member's free replicas of a workload requesting CPU by its CPU performance factor.
    #[serde(default)]
    pub cpu_division: super::framework::CpuDivision,
}

/// Every profile, built.
pub struct Profiles {
    default: Framework,
    frameworks: BTreeMap<String, Framework>,
}

impl Default for Profiles {
    fn default() -> Self {
        Profiles::builtin()
    }
}

impl Profiles {
    /// Only the built-in `karmada-default`.
    pub fn builtin() -> Self {
        Profiles { default: Framework::karmada_default(), frameworks: BTreeMap::new() }
    }

    /// The built-in `karmada-default`.
    pub fn default_profile(&self) -> &Framework {
        &self.default
    }

    /// Builds the configured profiles beside the built-in one. Errors name the profile (the
    /// key path in the config: `profiles.<name>…` or `cost…`).
    pub fn from_config(profiles: &BTreeMap<String, ProfileConfig>, cost: &CostTable) -> Result<Self, (String, String)> {
        let check_price = |key: String, p: &Price| {
            if p.0.is_finite() && p.0 >= 0.0 { Ok(()) } else { Err((key, "must be a finite number ≥ 0".to_string())) }
        };
        check_price("cost.spot_risk".into(), &cost.spot_risk)?;
        for (scope, table) in [("clusters", &cost.clusters), ("regions", &cost.regions)] {
            for (name, entry) in table {
                for (dim, p) in &entry.prices {
                    check_price(format!("cost.{scope}.{name}.{dim}"), p)?;
                }
            }
        }
        let mut out = Profiles::builtin();
        for (name, p) in profiles {
            if name == KARMADA_DEFAULT {
                return Err((format!("profiles.{name}"), "the built-in profile cannot be redefined".into()));
            }
            if let Some((c, w)) = p.round_robin_weights.iter().find(|(_, w)| **w < 0) {
                return Err((format!("profiles.{name}.round_robin_weights.{c}"), format!("{w} is negative")));
            }
            let settings = ScoreSettings {
                cost: cost.clone(),
                round_robin_weights: p.round_robin_weights.clone(),
                model: Default::default(),
                cpu_division: p.cpu_division,
            };
            let fw = Framework::build(name, p.filters.as_deref(), &p.scores, settings)
                .map_err(|e| (format!("profiles.{name}"), e))?;
            out.frameworks.insert(name.clone(), fw);
        }
        Ok(out)
    }

    /// Uses these resource-model settings in every profile (estimators and scorers).
    pub fn with_model(mut self, model: std::sync::Arc<crate::model::dimensions::ModelSettings>) -> Self {
        for fw in std::iter::once(&mut self.default).chain(self.frameworks.values_mut()) {
            fw.settings.model = model.clone();
            fw.estimators = crate::model::estimate::estimators_with(&model);
            fw.refresh_digest();
        }
        self
    }

    /// The resource-model settings the profiles use.
    pub fn model(&self) -> &std::sync::Arc<crate::model::dimensions::ModelSettings> {
        &self.default.settings.model
    }

    /// The profile of that name.
    pub fn get(&self, name: &str) -> Option<&Framework> {
        if name == KARMADA_DEFAULT { Some(&self.default) } else { self.frameworks.get(name) }
    }

    /// A digest of every profile (name and [`Framework::digest`]): equal digests, the same
    /// answers for every policy.
    pub fn digest(&self) -> u64 {
        let all: Vec<(&str, u64)> = std::iter::once((self.default.name.as_str(), self.default.digest))
            .chain(self.frameworks.iter().map(|(n, f)| (n.as_str(), f.digest)))
            .collect();
        crate::util::hash::fnv1a64(format!("{all:?}").as_bytes())
    }

    /// Profile names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.frameworks.keys().map(String::as_str).collect();
        names.push(KARMADA_DEFAULT);
        names.sort_unstable();
        names
    }

    /// The profile named by a policy's annotations (`karmada-default` without one).
    pub fn for_policy(&self, annotations: &BTreeMap<String, String>) -> Option<&Framework> {
        self.get(profile_name(annotations))
    }

    /// Every PropagationPolicy / ClusterPropagationPolicy naming an unknown profile.
    pub fn validate(&self, set: &PolicySet) -> Vec<LoadError> {
        set.propagation_policies
            .iter()
            .chain(&set.cluster_propagation_policies)
            .filter(|p| self.for_policy(&p.meta.annotations).is_none())
            .map(|p| {
                LoadError::at(
                    &p.source,
                    format!("metadata.annotations.{PROFILE_ANNOTATION}"),
                    format!(
                        "unknown scheduling profile {:?} (known: {})",
                        profile_name(&p.meta.annotations),
                        self.names().join(", ")
                    ),
                )
            })
            .collect()
    }
}

/// The profile name a policy asks for.
pub fn profile_name(annotations: &BTreeMap<String, String>) -> &str {
    annotations.get(PROFILE_ANNOTATION).map(String::as_str).unwrap_or(KARMADA_DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_profiles_build_and_errors_name_the_key() {
        let cost: CostTable =
            toml::from_str("spot_risk = 0.2\n[clusters.a]\ncpu = 0.03\nmemory = 0.004\nspot = true\n").expect("valid");
        assert!(cost.clusters["a"].spot);
        assert_eq!(cost.clusters["a"].prices["cpu"], Price(0.03));
        let profiles: BTreeMap<String, ProfileConfig> =
            toml::from_str("[binpack]\nscores = { most-allocated = 2, cluster-locality = 1 }\n").expect("valid");
        let p = Profiles::from_config(&profiles, &cost).expect("valid");
        assert_eq!(p.names(), vec!["binpack", "karmada-default"]);
        let bad: BTreeMap<String, ProfileConfig> =
            toml::from_str("[x]\nscores = { cheapest = 1 }\n").expect("valid toml");
        let (key, msg) = Profiles::from_config(&bad, &cost).err().unwrap_or_default();
        assert_eq!(key, "profiles.x");
        assert!(msg.contains("cheapest"), "{msg}");
        let redefined: BTreeMap<String, ProfileConfig> = toml::from_str("[karmada-default]\n").expect("valid toml");
        assert!(Profiles::from_config(&redefined, &cost).is_err());
        let neg: CostTable = toml::from_str("[regions.r]\ncpu = -1.0\n").expect("valid toml");
        let (key, _) = Profiles::from_config(&BTreeMap::new(), &neg).err().unwrap_or_default();
        assert_eq!(key, "cost.regions.r.cpu");
    }
}
