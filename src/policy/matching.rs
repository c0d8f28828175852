//! Which PropagationPolicy claims which template, and selector matching.
//! (Placeholder in main until the policy branch lands.)
use std::collections::BTreeMap;

use super::types::ClusterAffinity;

pub struct ClusterFacts<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub provider: Option<&'a str>,
    pub region: Option<&'a str>,
    pub zones: &'a [String],
}

pub fn cluster_matches(aff: &ClusterAffinity, c: &ClusterFacts) -> bool {
    !aff.exclude.iter().any(|e| e == c.name) && (aff.cluster_names.is_empty() || aff.cluster_names.iter().any(|n| n == c.name))
}
