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
//! - The fields an autoscaled workload's files leave out ([`replica_fields`]): its replica
//!   path, what its `replicaRevision` writes (found by revising to two counts and comparing),
//!   and for a kind whose `replicaResource` script only reads its count, the field it reads it
//!   from ([`read_fields`]: each whole number equal to the count changed in turn).
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

/// Two replica counts that no template declares, to find by difference the fields a
/// script writes the replicas to or reads them from.
const PROBES: (i32, i32) = (7919, 104_729);

/// The fields a workload's replicas are written to, which an HPA-managed workload's files
/// leave out: what its `replicaRevision` (script or built-in) writes — every field whose value
/// differs between two revisions of `object` to different replica counts —, its replica path,
/// and `read` (the fields its `replicaResource` reads them from: [`read_fields`]). JSON
/// pointers.
pub fn replica_fields(
    workload: &crate::model::Workload,
    object: &serde_json::Value,
    read: &[String],
) -> Result<Vec<String>, crate::model::interpreter::InterpreterError> {
    let mut out: Vec<String> = workload.replica_path.iter().chain(read).cloned().collect();
    if let Some(revision) = &workload.revision {
        let a = revision.apply(object, PROBES.0)?;
        let b = revision.apply(object, PROBES.1)?;
        differing_fields(&a, &b, &mut String::new(), &mut out);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The fields of `object` (a kind read by a `replicaResource` script, `GetReplicas`) that the
/// script reads its replica count from: the whole numbers equal to the count it answers
/// (`declared`) that, changed, change its answer. Empty when none does (the template does not
/// set its replicas, or the script computes them). At most 32 candidates are tried.
pub fn read_fields(
    table: &crate::model::workload::InterpreterTable,
    object: &serde_json::Value,
    declared: i32,
) -> Vec<String> {
    use crate::model::interpreter::{Args, Operation, Outcome};
    const CANDIDATES: usize = 32;
    let api_version = object.get("apiVersion").and_then(serde_json::Value::as_str).unwrap_or("");
    let kind = object.get("kind").and_then(serde_json::Value::as_str).unwrap_or("");
    let mut candidates = Vec::new();
    numbers_equal_to(object, i64::from(declared), &mut String::new(), &mut candidates);
    let probe = if declared == PROBES.0 { PROBES.1 } else { PROBES.0 };
    candidates
        .into_iter()
        .take(CANDIDATES)
        .filter(|path| {
            let mut changed = object.clone();
            let Some(slot) = changed.pointer_mut(path) else { return false };
            *slot = serde_json::Value::from(probe);
            let args = Args { desired: Some(&changed), ..Args::default() };
            matches!(
                table.customizations.run(api_version, kind, Operation::InterpretReplica, &args),
                Some(Ok(Outcome::Replica { replicas, .. })) if replicas != declared
            )
        })
        .collect()
}

/// Appends to `out` the pointers (below `at`) where `a` and `b` differ: into objects, and into
/// arrays of the same length, element by element; elsewhere the whole value.
fn differing_fields(a: &serde_json::Value, b: &serde_json::Value, at: &mut String, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let len = at.len();
                push_segment(at, key);
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => differing_fields(p, q, at, out),
                    _ => out.push(at.clone()),
                }
                at.truncate(len);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                let len = at.len();
                push_segment(at, &i.to_string());
                differing_fields(p, q, at, out);
                at.truncate(len);
            }
        }
        _ if a != b => out.push(at.clone()),
        _ => {}
    }
}

/// Appends to `out` the pointers (below `at`) of the whole numbers in `v` equal to `n`, the
/// object's `metadata` and `status` left out.
fn numbers_equal_to(v: &serde_json::Value, n: i64, at: &mut String, out: &mut Vec<String>) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            for (key, child) in map {
                if at.is_empty() && (key == "metadata" || key == "status") {
                    continue;
                }
                let len = at.len();
                push_segment(at, key);
                numbers_equal_to(child, n, at, out);
                at.truncate(len);
            }
        }
        Value::Array(list) => {
            for (i, child) in list.iter().enumerate() {
                let len = at.len();
                push_segment(at, &i.to_string());
                numbers_equal_to(child, n, at, out);
                at.truncate(len);
            }
        }
        Value::Number(x) if x.as_i64() == Some(n) => out.push(at.clone()),
        _ => {}
    }
}

/// Appends `/segment` to a JSON pointer, escaped (RFC 6901: `~` as `~0`, `/` as `~1`).
fn push_segment(at: &mut String, segment: &str) {
    at.push('/');
    at.push_str(&segment.replace('~', "~0").replace('/', "~1"));
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

    #[test]
    fn the_fields_that_differ_between_two_objects() {
        let a = serde_json::json!({"spec": {"replicas": 1, "keep": 3, "a/b": 1, "list": [{"n": 1}, {"n": 5}],
            "short": [1], "only_a": true}, "kind": "X"});
        let b = serde_json::json!({"spec": {"replicas": 2, "keep": 3, "a/b": 2, "list": [{"n": 2}, {"n": 5}],
            "short": [1, 2], "only_b": 1}, "kind": "X"});
        let mut out = Vec::new();
        differing_fields(&a, &b, &mut String::new(), &mut out);
        out.sort();
        assert_eq!(
            out,
            ["/spec/a~1b", "/spec/list/0/n", "/spec/only_a", "/spec/only_b", "/spec/replicas", "/spec/short"]
        );
        let mut numbers = Vec::new();
        let v = serde_json::json!({"metadata": {"generation": 4}, "spec": {"replicas": 4, "x": [4, "4", 3]}, "status": {"replicas": 4}});
        numbers_equal_to(&v, 4, &mut String::new(), &mut numbers);
        assert_eq!(numbers, ["/spec/replicas", "/spec/x/0"]);
    }
}
