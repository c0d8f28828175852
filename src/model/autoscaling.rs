//! Autoscaled workloads (issue 54): which templates a HorizontalPodAutoscaler of the
//! repository scales, and how its `minReplicas` / `maxReplicas` are divided over the members
//! its target runs on, so that each member's HPA scales its own share and GitOps does not
//! fight it (the target's rendered `spec.replicas` is left out, see docs/guide/resource-model.md "Autoscaled
//! workloads").
//!
//! - An `autoscaling/v2` (or `v1`) `HorizontalPodAutoscaler` names its target in
//!   `spec.scaleTargetRef` (apiVersion, kind, name; the HPA's namespace). The target is
//!   autoscaled; the HPA is rendered per member with its bounds divided
//!   ([`divide_bounds`]).
//! - Karmada's label `resourcetemplate.karmada.io/retain-replicas: "true"` on a template
//!   (which Karmada's hpa-scale-target-marker sets on an HPA's target) marks it autoscaled too:
//!   Karmada then keeps the member's `spec.replicas`, as leaving the field out does here.
//! - Karmada's `FederatedHPA` (`autoscaling.karmada.io/v1alpha1`) scales the template in
//!   Karmada's control plane from metrics fedsched does not read: it is named in a warning
//!   (`policy::validate`), and its target keeps its declared replicas.

use std::collections::BTreeMap;

use crate::policy::{ObjectKey, Template};

/// Karmada's label asking to keep the member's `spec.replicas` (`util.RetainReplicasLabel`).
pub const RETAIN_REPLICAS_LABEL: &str = "resourcetemplate.karmada.io/retain-replicas";

/// Whether `t` is a HorizontalPodAutoscaler (`autoscaling/v1` or `autoscaling/v2`).
pub fn is_hpa(key: &ObjectKey) -> bool {
    key.group() == "autoscaling" && key.kind == "HorizontalPodAutoscaler"
}

/// Whether `t` is Karmada's FederatedHPA.
pub fn is_federated_hpa(key: &ObjectKey) -> bool {
    key.group() == "autoscaling.karmada.io" && key.kind == "FederatedHPA"
}

/// The workload an HPA template scales (`spec.scaleTargetRef`, in the HPA's namespace); None
/// for any other template or an HPA without a complete reference.
pub fn scale_target(t: &Template) -> Option<ObjectKey> {
    if !is_hpa(&t.key) {
        return None;
    }
    let r = t.object.pointer("/spec/scaleTargetRef")?;
    let field = |name: &str| r.get(name).and_then(serde_json::Value::as_str).filter(|s| !s.is_empty());
    Some(ObjectKey {
        api_version: field("apiVersion")?.into(),
        kind: field("kind")?.into(),
        namespace: t.key.namespace.clone(),
        name: field("name")?.into(),
    })
}

/// Whether a reference names `key`: the same group (any version: an HPA may name
/// `apps/v1` while the template is written in another version of the group), kind, namespace
/// and name.
pub fn names(reference: &ObjectKey, key: &ObjectKey) -> bool {
    reference.group() == key.group()
        && reference.kind == key.kind
        && reference.namespace == key.namespace
        && reference.name == key.name
}

/// Whether the template carries Karmada's retain-replicas label with value `true`.
pub fn retains_replicas(t: &Template) -> bool {
    t.meta.labels.get(RETAIN_REPLICAS_LABEL).is_some_and(|v| v == "true")
}

/// The templates of a repository that an HPA of it scales (by group, kind, namespace and
/// name), made once per pass.
#[derive(Debug, Default, Clone, PartialEq, Eq, Hash)]
pub struct Autoscaled {
    targets: std::collections::BTreeSet<(String, String, Option<String>, String)>,
}

impl Autoscaled {
    /// The HPAs' targets among `templates`.
    pub fn of<'t>(templates: impl IntoIterator<Item = &'t Template>) -> Autoscaled {
        let targets = templates.into_iter().filter_map(scale_target).map(|r| Self::id(&r)).collect();
        Autoscaled { targets }
    }

    fn id(k: &ObjectKey) -> (String, String, Option<String>, String) {
        (k.group().to_string(), k.kind.to_string(), k.namespace.as_ref().map(|n| n.to_string()), k.name.to_string())
    }

    /// Whether a member HPA owns `t`'s replicas: an HPA of the repository names it, or it
    /// carries Karmada's retain-replicas label.
    pub fn owns_replicas(&self, t: &Template) -> bool {
        retains_replicas(t) || (!self.targets.is_empty() && self.targets.contains(&Self::id(&t.key)))
    }

    /// Whether an HPA of the repository names `key`.
    pub fn is_target(&self, key: &ObjectKey) -> bool {
        !self.targets.is_empty() && self.targets.contains(&Self::id(key))
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}

/// An HPA's bounds (`minReplicas`, default 1; `maxReplicas`).
pub fn bounds(t: &Template) -> Option<(i64, i64)> {
    let spec = t.object.get("spec")?;
    let max = spec.get("maxReplicas").and_then(serde_json::Value::as_i64)?;
    let min = spec.get("minReplicas").and_then(serde_json::Value::as_i64).unwrap_or(1);
    Some((min, max))
}

/// `minReplicas` and `maxReplicas` divided over the members with replicas in `placement`
/// (member → replicas the scheduler decided), in proportion to those replicas (Webster, ties
/// by `tie`): every member with replicas gets at least 1 as its minimum (so the minimums sum
/// to more than `min` when `min` is smaller than the number of members), and a maximum at
/// least its minimum. Members without replicas get nothing (the HPA is not rendered there).
pub fn divide_bounds(
    (min, max): (i64, i64),
    placement: &BTreeMap<String, i64>,
    divide: impl Fn(i64, &BTreeMap<String, i64>) -> BTreeMap<String, i64>,
) -> BTreeMap<String, (i64, i64)> {
    let weights: BTreeMap<String, i64> =
        placement.iter().filter(|(_, r)| **r > 0).map(|(c, r)| (c.clone(), *r)).collect();
    if weights.is_empty() {
        return BTreeMap::new();
    }
    let mins = divide(min.max(0), &weights);
    let maxs = divide(max.max(1), &weights);
    weights
        .keys()
        .map(|c| {
            let lo = mins.get(c).copied().unwrap_or(0).max(1);
            let hi = maxs.get(c).copied().unwrap_or(0).max(lo);
            (c.clone(), (lo, hi))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Largest remainders (the caller's Webster in the pass; equal on these cases).
    fn proportional(total: i64, w: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
        let sum: i64 = w.values().sum();
        let mut out: BTreeMap<String, i64> = w.iter().map(|(k, v)| (k.clone(), total * v / sum)).collect();
        let mut rest: Vec<(i64, &String)> = w.iter().map(|(k, v)| (-(total * v % sum), k)).collect();
        rest.sort();
        let left = total - out.values().sum::<i64>();
        for (_, k) in rest.into_iter().take(left as usize) {
            *out.entry(k.clone()).or_insert(0) += 1;
        }
        out
    }

    fn m(items: &[(&str, i64)]) -> BTreeMap<String, i64> {
        items.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn bounds_follow_the_placement_and_every_member_gets_at_least_one() {
        let placement = m(&[("a", 6), ("b", 3), ("c", 0)]);
        let got = divide_bounds((3, 30), &placement, proportional);
        assert_eq!(got, [("a".to_string(), (2, 20)), ("b".to_string(), (1, 10))].into());
        // min 1 over two members: each keeps one.
        let got = divide_bounds((1, 2), &placement, proportional);
        assert_eq!(got, [("a".to_string(), (1, 1)), ("b".to_string(), (1, 1))].into());
        assert!(divide_bounds((1, 5), &m(&[("a", 0)]), proportional).is_empty());
    }
}
