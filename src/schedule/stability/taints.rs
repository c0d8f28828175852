//! `ClusterTaintPolicy` (policy.karmada.io/v1alpha1), as Karmada's cluster taint policy
//! controller applies it: per member, the policies in order; a policy whose `targetClusters`
//! matches (or has none) adds its `taints` when every `addOnConditions` entry matches the
//! member's conditions, and removes them when every `removeOnConditions` entry matches; an
//! empty list never matches. When neither matches the taints stay as they are: the added
//! taints are state ([`AddedTaint`], in [`super::StabilityState::taints`]) and the time each
//! was added is the start of its `NoExecute` toleration.
//!
//! A condition entry matches when the member has a condition of its `conditionType` whose
//! status is (`In`) or is not (`NotIn`) one of `statusValues`; a member without that condition
//! does not match. A taint exists already when the member has one with the same key and effect
//! (its own `spec.taints` included: those are never added twice, and never removed — they are
//! the repository's).
//!
//! Where fedsched differs (docs/guide/failures.md): policies apply in name order (the
//! repository has no creation times), and an added taint lives only while its policy exists
//! and lists it (Karmada leaves it on the Cluster object when the policy goes; in a GitOps
//! repository there would be no way to take it off).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::ClusterTaint;
use crate::policy::matching::{ClusterFacts, cluster_matches};
use crate::policy::types::{ClusterTaintPolicySpec, MatchCondition, SelectorOperator, TaintEffect};

/// A taint a ClusterTaintPolicy put on a member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddedTaint {
    pub key: String,
    pub value: Option<String>,
    pub effect: TaintEffect,
    /// Unix ms it was added (Karmada's `timeAdded`).
    pub added_at_ms: u64,
    /// The policy that added it.
    pub policy: String,
}

impl AddedTaint {
    /// The taint as filters and estimators read it.
    pub fn taint(&self) -> ClusterTaint {
        ClusterTaint { key: self.key.clone(), value: self.value.clone(), effect: self.effect }
    }
}

/// One member as the taint policies see it.
pub struct Member<'a> {
    pub facts: ClusterFacts<'a>,
    /// Its conditions: (type, status).
    pub conditions: &'a [(String, String)],
    /// Its own taints (`spec.taints`, and those fedsched derives from its health).
    pub taints: &'a [ClusterTaint],
}

/// Whether every entry of `matches` holds for `conditions` (empty: false).
pub fn conditions_match(conditions: &[(String, String)], matches: &[MatchCondition]) -> bool {
    !matches.is_empty()
        && matches.iter().all(|m| {
            conditions.iter().filter(|(t, _)| *t == m.condition_type).any(|(_, status)| {
                let listed = m.status_values.iter().any(|v| v == status);
                match m.operator {
                    SelectorOperator::In => listed,
                    SelectorOperator::NotIn => !listed,
                    _ => false,
                }
            })
        })
}

/// The taints the policies (`(name, spec)`, any order) leave on `member`, given those they had
/// added before (`previous`), at `now_ms`. Pure.
pub fn apply(
    policies: &[(&str, &ClusterTaintPolicySpec)],
    member: &Member<'_>,
    previous: &[AddedTaint],
    now_ms: u64,
) -> Vec<AddedTaint> {
    let mut ordered: Vec<&(&str, &ClusterTaintPolicySpec)> = policies.iter().collect();
    ordered.sort_by_key(|(name, _)| *name);
    let by_name: BTreeMap<&str, &ClusterTaintPolicySpec> = ordered.iter().map(|(n, s)| (*n, *s)).collect();
    // A taint outlives neither its policy nor its place in the policy's list.
    let mut current: Vec<AddedTaint> = previous
        .iter()
        .filter(|a| {
            by_name
                .get(a.policy.as_str())
                .is_some_and(|s| s.taints.iter().any(|t| t.key == a.key && t.effect == a.effect))
        })
        .cloned()
        .collect();
    for (name, spec) in ordered {
        if spec.target_clusters.as_ref().is_some_and(|t| !cluster_matches(t, &member.facts)) {
            continue;
        }
        if conditions_match(member.conditions, &spec.add_on_conditions) {
            for t in &spec.taints {
                let exists = member.taints.iter().any(|m| m.key == t.key && m.effect == t.effect)
                    || current.iter().any(|a| a.key == t.key && a.effect == t.effect);
                if !exists {
                    current.push(AddedTaint {
                        key: t.key.clone(),
                        value: t.value.clone(),
                        effect: t.effect,
                        added_at_ms: now_ms,
                        policy: (*name).to_string(),
                    });
                }
            }
        }
        if conditions_match(member.conditions, &spec.remove_on_conditions) {
            current.retain(|a| !spec.taints.iter().any(|t| t.key == a.key && t.effect == a.effect));
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::types::{ClusterAffinity, TaintSpec};

    fn cond(t: &str, op: SelectorOperator, values: &[&str]) -> MatchCondition {
        MatchCondition {
            condition_type: t.into(),
            operator: op,
            status_values: values.iter().map(|v| (*v).to_string()).collect(),
        }
    }

    fn not_ready_policy() -> ClusterTaintPolicySpec {
        ClusterTaintPolicySpec {
            target_clusters: None,
            add_on_conditions: vec![cond("Ready", SelectorOperator::NotIn, &["True"])],
            remove_on_conditions: vec![cond("Ready", SelectorOperator::In, &["True"])],
            taints: vec![TaintSpec { key: "example.com/down".into(), effect: TaintEffect::NoExecute, value: None }],
        }
    }

    fn run(
        policies: &[(&str, &ClusterTaintPolicySpec)],
        name: &str,
        conditions: &[(&str, &str)],
        previous: &[AddedTaint],
        now: u64,
    ) -> Vec<AddedTaint> {
        let labels = BTreeMap::new();
        let conditions: Vec<(String, String)> =
            conditions.iter().map(|(t, s)| ((*t).to_string(), (*s).to_string())).collect();
        let member = Member {
            facts: ClusterFacts { name, labels: &labels, provider: None, region: None, zones: &[] },
            conditions: &conditions,
            taints: &[],
        };
        apply(policies, &member, previous, now)
    }

    #[test]
    fn added_on_conditions_kept_while_neither_matches_removed_on_conditions() {
        let spec = not_ready_policy();
        let p = [("down", &spec)];
        assert!(run(&p, "m1", &[("Ready", "True")], &[], 1).is_empty());
        let added = run(&p, "m1", &[("Ready", "False")], &[], 10);
        assert_eq!(added.len(), 1);
        assert_eq!(
            (added[0].key.as_str(), added[0].added_at_ms, added[0].policy.as_str()),
            ("example.com/down", 10, "down")
        );
        // Still NotReady later: the time it was added stays.
        assert_eq!(run(&p, "m1", &[("Ready", "Unknown")], &added, 20), added);
        // Neither list matches (no Ready condition at all): kept.
        assert_eq!(run(&p, "m1", &[], &added, 30), added);
        // Ready again: removed.
        assert!(run(&p, "m1", &[("Ready", "True")], &added, 40).is_empty());
    }

    #[test]
    fn conditions_are_anded_and_an_empty_list_never_matches() {
        let two = [cond("Ready", SelectorOperator::In, &["True"]), cond("NetworkOK", SelectorOperator::In, &["False"])];
        let c = |v: &[(&str, &str)]| v.iter().map(|(a, b)| ((*a).to_string(), (*b).to_string())).collect::<Vec<_>>();
        assert!(conditions_match(&c(&[("Ready", "True"), ("NetworkOK", "False")]), &two));
        assert!(!conditions_match(&c(&[("Ready", "True")]), &two), "a missing condition does not match");
        assert!(!conditions_match(&c(&[("Ready", "True"), ("NetworkOK", "True")]), &two));
        assert!(!conditions_match(&c(&[("Ready", "True")]), &[]));
        let not_in = [cond("Ready", SelectorOperator::NotIn, &["True"])];
        assert!(!conditions_match(&c(&[]), &not_in), "NotIn needs the condition too");
    }

    #[test]
    fn target_clusters_existing_taints_and_the_policys_lifetime() {
        let mut spec = not_ready_policy();
        spec.target_clusters = Some(ClusterAffinity { cluster_names: vec!["m2".into()], ..ClusterAffinity::default() });
        let p = [("down", &spec)];
        assert!(run(&p, "m1", &[("Ready", "False")], &[], 1).is_empty(), "m1 is not a target");
        let added = run(&p, "m2", &[("Ready", "False")], &[], 1);
        assert_eq!(added.len(), 1);
        // The member's own taint with that key and effect: not added again.
        let labels = BTreeMap::new();
        let conditions = vec![("Ready".to_string(), "False".to_string())];
        let own = [ClusterTaint { key: "example.com/down".into(), value: None, effect: TaintEffect::NoExecute }];
        let member = Member {
            facts: ClusterFacts { name: "m2", labels: &labels, provider: None, region: None, zones: &[] },
            conditions: &conditions,
            taints: &own,
        };
        assert!(apply(&p, &member, &[], 1).is_empty());
        // The policy gone, or no longer listing the taint: the taint goes.
        assert!(run(&[], "m2", &[("Ready", "False")], &added, 2).is_empty());
        let mut other = spec.clone();
        other.taints[0].key = "example.com/other".into();
        let kept = run(&[("down", &other)], "m2", &[("Ready", "False")], &added, 2);
        assert_eq!(kept.iter().map(|a| a.key.as_str()).collect::<Vec<_>>(), ["example.com/other"]);
    }

    #[test]
    fn policies_apply_in_name_order() {
        // `a` adds the taint, `b` (same taint) removes it on the same condition: b wins.
        let add = not_ready_policy();
        let mut remove = not_ready_policy();
        remove.add_on_conditions = vec![];
        remove.remove_on_conditions = vec![cond("Ready", SelectorOperator::In, &["False"])];
        let out = run(&[("b", &remove), ("a", &add)], "m1", &[("Ready", "False")], &[], 1);
        assert!(out.is_empty(), "{out:?}");
        let out = run(&[("a", &remove), ("b", &add)], "m1", &[("Ready", "False")], &[], 1);
        assert_eq!(out.len(), 1);
    }
}
