//! Overrides: Karmada's OverridePolicy / ClusterOverridePolicy applied to a rendered manifest
//! for one member cluster (`pkg/util/overridemanager`). Pure: no I/O.
//!
//! Order (Karmada's): every matching ClusterOverridePolicy first, then the OverridePolicies of
//! the template's namespace (cluster-scoped templates get only ClusterOverridePolicies). Within
//! each kind, by ascending implicit priority (match-all, then label selector, then name: the
//! most specific policy is applied last and wins), then by name. Inside a policy its rules in
//! order, each when its `targetCluster` is absent or matches the cluster. Inside a rule: image
//! → command → args → labels → annotations → field → plaintext.
//!
//! A patch that cannot apply (for example `replace` on a missing path) fails the whole object
//! for that cluster with an [`OverrideError`] naming the policy, the rule and the overrider.
//!
//! Deviations from Karmada, all towards failing loudly or keeping data:
//! - label/annotation keys containing `/` work (Karmada builds an unescaped JSON pointer);
//! - an image reference with both a tag and a digest keeps both (Karmada keeps only the tag);
//! - non-string elements of `command`/`args` and non-map `labels`/`annotations` are errors.
//!
//! Files, one concept each: this file applies the overriders of each rule in order;
//! `order.rs` decides which policies apply and in what order; `patch.rs` holds JSON pointers,
//! RFC 6902 operations and the plaintext overrider; `image.rs` image references and the image
//! overrider; `command_args.rs`, `labels.rs` and `field.rs` the other overrider families;
//! `error.rs` the [`OverrideError`].

mod command_args;
mod error;
mod field;
mod image;
mod labels;
mod order;
mod patch;

use serde_json::Value;

use crate::policy::matching::{ClusterFacts, cluster_matches};
use crate::policy::types::Overriders;

pub use error::OverrideError;
pub use image::ImageRef;
pub use order::{ApplicableOverride, OverrideKind, applicable, applicable_indexed};
pub use patch::{parse_pointer, patch};

use command_args::apply_command_args;
use field::apply_field;
use image::apply_image;
use labels::apply_label_annotation;
use patch::apply_plaintext;

/// Annotation listing the override policies applied to an object, in application order.
pub const ANNOTATION_APPLIED_OVERRIDES: &str = "fedsched.io/applied-overrides";

/// Applies `policies` (in the given order) to `obj`, the manifest of a `kind` object for the
/// cluster described by `cluster`. Returns the policies that had at least one rule for this
/// cluster, in order (each once), as [`ApplicableOverride::display_ref`]. On error `obj` may be
/// partly overridden and must be discarded.
pub fn apply(
    obj: &mut Value,
    kind: &str,
    policies: &[ApplicableOverride<'_>],
    cluster: &ClusterFacts<'_>,
) -> Result<Vec<String>, OverrideError> {
    let mut applied = Vec::new();
    for p in policies {
        let mut any = false;
        for (i, rule) in p.policy.spec.rules().iter().enumerate() {
            if let Some(tc) = &rule.target_cluster
                && !cluster_matches(tc, cluster)
            {
                continue;
            }
            any = true;
            apply_overriders(obj, kind, &rule.overriders)
                .and_then(|()| check_known_fields(obj, kind).map_err(|reason| (RESULT.to_string(), reason)))
                .map_err(|(overrider, reason)| OverrideError { policy: p.display_ref(), rule: i, overrider, reason })?;
        }
        if any {
            applied.push(p.display_ref());
        }
    }
    Ok(applied)
}

/// (overrider label, reason)
type Failed = (String, String);

fn apply_overriders(obj: &mut Value, kind: &str, o: &Overriders) -> Result<(), Failed> {
    fn at(name: &'static str, i: usize) -> impl FnOnce(String) -> Failed {
        move |reason| (format!("{name}[{i}]"), reason)
    }
    for (i, img) in o.image_overrider.iter().enumerate() {
        apply_image(obj, kind, img).map_err(at("imageOverrider", i))?;
    }
    for (i, c) in o.command_overrider.iter().enumerate() {
        apply_command_args(obj, kind, "command", c).map_err(at("commandOverrider", i))?;
    }
    for (i, c) in o.args_overrider.iter().enumerate() {
        apply_command_args(obj, kind, "args", c).map_err(at("argsOverrider", i))?;
    }
    for (i, l) in o.labels_overrider.iter().enumerate() {
        apply_label_annotation(obj, "labels", l).map_err(at("labelsOverrider", i))?;
    }
    for (i, a) in o.annotations_overrider.iter().enumerate() {
        apply_label_annotation(obj, "annotations", a).map_err(at("annotationsOverrider", i))?;
    }
    for (i, f) in o.field_overrider.iter().enumerate() {
        apply_field(obj, f).map_err(|(sub, reason)| (format!("fieldOverrider[{i}]{sub}"), reason))?;
    }
    for (i, p) in o.plaintext.iter().enumerate() {
        apply_plaintext(obj, p).map_err(at("plaintext", i))?;
    }
    Ok(())
}

/// [`OverrideError::overrider`] when the overriders of a rule applied but left an invalid
/// object ([`check_known_fields`]).
pub const RESULT: &str = "the overridden object";

/// The fields of an overridden object whose type Kubernetes fixes and the workload model
/// reads: `spec.replicas` (and a Job's `parallelism`, `completions`) an integer in 0..2³¹,
/// and every container's (and init container's) `resources` requests and limits valid,
/// non-negative quantities. An override that breaks one is a render failure for that
/// cluster (the previous file is kept), never an invalid manifest in the output.
pub fn check_known_fields(obj: &Value, kind: &str) -> Result<(), String> {
    // Only the built-in workload kinds: a custom resource's fields mean what its CRD says.
    let Some(pod_spec) = pod_spec_pointer(kind, true) else { return Ok(()) };
    for field in ["replicas", "parallelism", "completions"] {
        if let Some(v) = obj.pointer(&format!("/spec/{field}")) {
            let ok = v.as_i64().is_some_and(|n| (0..=i64::from(i32::MAX)).contains(&n));
            if !ok {
                return Err(format!("spec.{field} must be an integer from 0 to 2147483647, found {v}"));
            }
        }
    }
    let Some(pod) = obj.pointer(pod_spec) else { return Ok(()) };
    for list in ["containers", "initContainers"] {
        let Some(containers) = pod.get(list).and_then(Value::as_array) else { continue };
        for (i, c) in containers.iter().enumerate() {
            for part in ["requests", "limits"] {
                let Some(map) = c.pointer(&format!("/resources/{part}")).and_then(Value::as_object) else { continue };
                for (resource, q) in map {
                    let at = format!("{list}[{i}].resources.{part}.{resource}");
                    let text = match q {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        other => return Err(format!("{at} must be a quantity, found {other}")),
                    };
                    match crate::model::quantity::parse_milli(&text) {
                        Ok(m) if m < 0 => return Err(format!("{at} must not be negative, found {text}")),
                        Ok(_) => {}
                        Err(e) => return Err(format!("{at}: {e}")),
                    }
                }
            }
        }
    }
    Ok(())
}

/// Where the pod spec of a workload kind is (Karmada's list for image overriders).
fn pod_spec_pointer(kind: &str, with_job: bool) -> Option<&'static str> {
    match kind {
        "Pod" => Some("/spec"),
        "ReplicaSet" | "Deployment" | "DaemonSet" | "StatefulSet" => Some("/spec/template/spec"),
        "Job" if with_job => Some("/spec/template/spec"),
        _ => None,
    }
}

/// Labels of every applied policy, for the annotation value: joined with `, `.
pub fn applied_annotation(applied: &[String]) -> Option<String> {
    (!applied.is_empty()).then(|| applied.join(", "))
}

/// Fixtures shared by the tests of every overrider family.
#[cfg(test)]
mod test_fixtures {
    use super::*;
    use crate::policy::types::{OverrideSpec, RuleWithCluster};
    use crate::policy::{Policy, Source, types::ObjectMeta};
    use serde_json::json;
    use std::collections::BTreeMap;

    pub(super) fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx", "for": "x", "bar": "y"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.25"},
                {"name": "sidecar", "image": "fictional.registry.example:10443/sub/side@sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c", "command": ["run"], "args": ["-a", "-b", "-a"]}
            ]}}}
        })
    }

    pub(super) fn facts_labels() -> BTreeMap<String, String> {
        [("location".to_string(), "us".to_string())].into()
    }

    pub(super) fn with_rules(rules: Vec<RuleWithCluster>) -> Policy<OverrideSpec> {
        Policy {
            meta: ObjectMeta { name: "op".into(), namespace: Some("default".into()), ..Default::default() },
            spec: OverrideSpec { override_rules: rules, ..Default::default() },
            source: Source { file: "op.yaml".into(), document: 1 },
        }
    }

    pub(super) fn run(obj: &mut Value, o: Overriders) -> Result<Vec<String>, OverrideError> {
        let labels = facts_labels();
        let facts = ClusterFacts { name: "member1", labels: &labels, provider: None, region: None, zones: &[] };
        let p = with_rules(vec![RuleWithCluster { target_cluster: None, overriders: o }]);
        apply(obj, "Deployment", &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &p }], &facts)
    }
}

#[cfg(test)]
mod tests {
    use super::test_fixtures::{deployment, facts_labels, with_rules};
    use super::*;
    use crate::policy::types::{
        ClusterAffinity, LabelAnnotationOverrider, OverriderOperator, PlaintextOverrider, RuleWithCluster,
    };
    use serde_json::json;

    #[test]
    fn plaintext_and_rule_order_and_target_cluster() {
        use OverriderOperator::*;
        let labels = facts_labels();
        let facts = ClusterFacts { name: "member1", labels: &labels, provider: None, region: None, zones: &[] };
        let pt = |path: &str, op, value: Option<Value>| PlaintextOverrider { path: path.into(), operator: op, value };
        let names = |n: &[&str]| ClusterAffinity {
            cluster_names: n.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let p = with_rules(vec![
            RuleWithCluster {
                target_cluster: Some(names(&["member2"])),
                overriders: Overriders {
                    plaintext: vec![pt("/spec/replicas", Replace, Some(json!(99)))],
                    ..Default::default()
                },
            },
            RuleWithCluster {
                target_cluster: Some(names(&["member1"])),
                overriders: Overriders {
                    plaintext: vec![
                        pt("/metadata/annotations", Add, Some(json!({"foo": "bar"}))),
                        pt("/spec/replicas", Replace, Some(json!(1))),
                    ],
                    // Labels run before plaintext inside a rule, so plaintext sees (and wins over) them.
                    labels_overrider: vec![LabelAnnotationOverrider {
                        operator: Add,
                        value: [("tier".to_string(), "a".to_string())].into(),
                    }],
                    ..Default::default()
                },
            },
            RuleWithCluster {
                target_cluster: None,
                overriders: Overriders {
                    plaintext: vec![pt("/metadata/labels/tier", Replace, Some(json!("b")))],
                    ..Default::default()
                },
            },
        ]);
        let mut obj = deployment();
        let applied = apply(
            &mut obj,
            "Deployment",
            &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &p }],
            &facts,
        )
        .expect("apply");
        assert_eq!(applied, vec!["OverridePolicy/default/op"]);
        assert_eq!(obj["spec"]["replicas"], json!(1));
        assert_eq!(obj["metadata"]["annotations"], json!({"foo": "bar"}));
        assert_eq!(obj["metadata"]["labels"]["tier"], json!("b"));

        // A rule for another cluster only: nothing applied, nothing recorded.
        let only2 = with_rules(vec![RuleWithCluster {
            target_cluster: Some(names(&["member2"])),
            overriders: Overriders {
                plaintext: vec![pt("/spec/replicas", Replace, Some(json!(99)))],
                ..Default::default()
            },
        }]);
        let mut obj = deployment();
        let applied = apply(
            &mut obj,
            "Deployment",
            &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &only2 }],
            &facts,
        )
        .expect("apply");
        assert!(applied.is_empty());
        assert_eq!(obj, deployment());

        // The failing rule is named by index.
        let bad = with_rules(vec![
            RuleWithCluster { target_cluster: None, overriders: Overriders::default() },
            RuleWithCluster {
                target_cluster: None,
                overriders: Overriders {
                    plaintext: vec![
                        pt("/spec/replicas", Replace, Some(json!(3))),
                        pt("/spec/nothing", Replace, Some(json!(1))),
                    ],
                    ..Default::default()
                },
            },
        ]);
        let e = apply(
            &mut deployment(),
            "Deployment",
            &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &bad }],
            &facts,
        )
        .expect_err("fails");
        assert_eq!(e.to_string(), "OverridePolicy/default/op: rule 1: plaintext[1]: path /spec/nothing does not exist");
    }
}
