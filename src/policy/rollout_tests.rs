//! `RolloutPolicy` (`fedsched.io/v1alpha1`): parse, validation, selection, what `check` says
//! of offline stages, and the CRD-style schema in `config/crds/` against the parser.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::load::load_sources;
use super::types::{IntOrPercent, OnFailure, OnNewVersion, RolloutSpec};
use super::{LoadError, PolicySet, defaults, matching, validate};

const SCHEMA: &str = "config/crds/rolloutpolicies.fedsched.io.yaml";

/// Loads, defaults and validates `yaml` as `r.yaml`: the set and every error.
fn load(yaml: &str) -> (PolicySet, Vec<LoadError>) {
    let (mut set, mut errors) = load_sources([(PathBuf::from("r.yaml"), yaml.to_string())]);
    defaults::apply(&mut set);
    errors.extend(validate::validate(&set));
    errors.dedup_by(|a, b| a.to_string() == b.to_string());
    (set, errors)
}

const GOOD: &str = "apiVersion: fedsched.io/v1alpha1
kind: RolloutPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: web}}}]
  stages:
    - name: canary
      clusterAffinity: {clusterNames: [m1]}
      requireApproval: true
    - name: half
      maxConcurrency: 50%
    - name: two
      maxConcurrency: 2
  minSuccessTime: 2m
  progressDeadline: 15m
  maxFailures: 1
  approvedStages: [canary]
  onFailure: Rollback
  onNewVersion: Queue
";

#[test]
fn a_rollout_policy_parses_with_its_stages_gates_and_failure_mode() {
    let (set, errors) = load(GOOD);
    assert!(errors.is_empty(), "{errors:?}");
    let p = &set.rollout_policies[0];
    assert_eq!((p.name(), p.namespace()), ("web", Some("shop")));
    let s: &RolloutSpec = &p.spec;
    assert_eq!(s.stages.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["canary", "half", "two"]);
    assert!(s.stages[0].require_approval && !s.stages[1].require_approval);
    assert_eq!(s.stages[1].max_concurrency, Some(IntOrPercent::Text("50%".into())));
    assert_eq!(s.stages[1].max_concurrency.as_ref().map(|m| m.of(5)), Some(3), "50% of 5 rounds up");
    assert_eq!(s.min_success_time(), std::time::Duration::from_secs(120));
    assert_eq!(s.progress_deadline(), Some(std::time::Duration::from_secs(900)));
    assert_eq!((s.on_failure, s.on_new_version), (OnFailure::Rollback, OnNewVersion::Queue));
    // Defaults: 5 minutes, no deadline, Halt.
    let minimal = "apiVersion: fedsched.io/v1alpha1\nkind: RolloutPolicy\nmetadata: {name: m}\nspec:\n  \
                   resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  stages: [{name: a, maxConcurrency: 1}]\n";
    let (set, errors) = load(minimal);
    assert!(errors.is_empty(), "{errors:?}");
    let s = &set.rollout_policies[0].spec;
    assert_eq!(s.min_success_time(), super::types::DEFAULT_MIN_SUCCESS_TIME);
    assert!(s.min_success_time() > std::time::Duration::ZERO);
    assert_eq!((s.progress_deadline(), s.on_failure), (None, OnFailure::Halt));
    assert_eq!(s.on_new_version, OnNewVersion::Supersede, "a new version supersedes by default");
    assert_eq!(set.rollout_policies[0].namespace(), Some("default"));
}

#[test]
fn rollout_policy_errors_name_file_document_and_field() {
    let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n---\n\
               apiVersion: fedsched.io/v1alpha1
kind: RolloutPolicy
metadata: {name: bad}
spec:
  resourceSelectors: []
  stages:
    - {name: Canary, clusterAffinity: {clusterNames: [m1]}, maxConcurrency: 1}
    - {name: b}
    - {name: b, maxConcurrency: 0}
    - {name: c, maxConcurrency: 150%}
    - {name: d, maxConcurrency: lots}
  minSuccessTime: soon
  progressDeadline: 1m
  maxFailures: -1
  approvedStages: [nope]
  onFailure: Retry
";
    let (_, errors) = load(bad);
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    // The typed decode refuses the unknown enum value first, naming its field.
    assert!(text.iter().any(|e| e.starts_with("r.yaml: document 2: spec.onFailure:")), "{text:#?}");
    let fixed = bad.replace("onFailure: Retry", "onFailure: Halt");
    let (_, errors) = load(&fixed);
    let fields: BTreeSet<String> = errors
        .iter()
        .inspect(|e| assert!(e.to_string().starts_with("r.yaml: document 2: "), "{e}"))
        .map(|e| e.field.clone())
        .collect();
    for f in [
        "spec.resourceSelectors",
        "spec.stages[0].name",
        "spec.stages[0]",
        "spec.stages[1]",
        "spec.stages[2].name",
        "spec.stages[2].maxConcurrency",
        "spec.stages[3].maxConcurrency",
        "spec.stages[4].maxConcurrency",
        "spec.minSuccessTime",
        "spec.maxFailures",
        "spec.approvedStages[0]",
    ] {
        assert!(fields.contains(f), "no error at {f}: {errors:#?}");
    }
    // onNewVersion is Supersede or Queue, named by file, document and field.
    let (_, errors) = load(&GOOD.replace("onNewVersion: Queue", "onNewVersion: Later"));
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(text.iter().any(|e| e.starts_with("r.yaml: document 1: spec.onNewVersion:")), "{text:#?}");
    // A Secret is not rolled out: its data would be kept in the state store.
    let secret = GOOD.replace("{apiVersion: apps/v1, kind: Deployment,", "{apiVersion: v1, kind: Secret,");
    let (_, errors) = load(&secret);
    assert!(
        errors.iter().any(|e| e.field == "spec.resourceSelectors[0].kind" && e.message.contains("Secret")),
        "{errors:?}"
    );
    // A deadline shorter than the (default) success time can never be met.
    let short = GOOD.replace("minSuccessTime: 2m", "minSuccessTime: 20m");
    let (_, errors) = load(&short);
    assert!(errors.iter().any(|e| e.field == "spec.progressDeadline"), "{errors:?}");
    // An unknown kind of fedsched's group names both kinds it knows.
    let (_, errors) = load("apiVersion: fedsched.io/v1alpha1\nkind: Rollout\nmetadata: {name: x}\n");
    assert!(errors.iter().any(|e| e.field == "kind" && e.message.contains("RolloutPolicy")), "{errors:?}");
}

#[test]
fn a_rollout_policy_selects_templates_of_its_namespace_as_a_propagation_policy_does() {
    let yaml = format!(
        "{GOOD}---\napiVersion: fedsched.io/v1alpha1\nkind: RolloutPolicy\nmetadata: {{name: all, namespace: shop}}\n\
         spec:\n  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment}}]\n  stages: [{{name: a, maxConcurrency: 1}}]\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: shop, labels: {{app: web}}}}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: db, namespace: shop}}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: other, labels: {{app: web}}}}\n"
    );
    let (set, errors) = load(&yaml);
    assert!(errors.is_empty(), "{errors:?}");
    let by = |ns: &str, name: &str| {
        let t = set.find_template("Deployment", Some(ns), name).expect("template");
        matching::rollout_policy_for(&set, t).map(|p| p.name().to_string())
    };
    // The label selector is more specific than apiVersion/kind alone.
    assert_eq!(by("shop", "web").as_deref(), Some("web"));
    assert_eq!(by("shop", "db").as_deref(), Some("all"));
    assert_eq!(by("other", "web"), None, "another namespace's template");
}

#[test]
fn check_says_how_an_offline_stage_passes_its_gate() {
    let yaml = format!(
        "{GOOD}---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: m1}}\nspec: {{syncMode: Push}}\n---\n\
         apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: m2}}\nspec: {{syncMode: Push}}\n"
    );
    let (set, errors) = load(&yaml);
    assert!(errors.is_empty(), "{errors:?}");
    // m1 (the canary stage's) offline, m2 live: the canary stage and the rest are named.
    let notes = validate::rollout_offline_notes(&set, |c| c == "m2");
    let canary = notes.iter().find(|n| n.field == "spec.stages[0]").expect("canary note");
    assert!(canary.message.contains("(m1)"), "{canary}");
    assert!(canary.message.contains("only by approval") && canary.message.contains("2m"), "{canary}");
    assert!(canary.message.contains("never at once"), "{canary}");
    assert!(!notes.iter().any(|n| n.message.contains("m2")), "a live cluster is named: {notes:?}");
    // Every member live: nothing to say.
    assert!(validate::rollout_offline_notes(&set, |_| true).is_empty());
    // m2 offline too: it is in no affinity stage, so the maxConcurrency stages and the final one may hold it.
    let notes = validate::rollout_offline_notes(&set, |_| false);
    for f in ["spec.stages[1]", "spec.stages[2]", "spec.stages"] {
        assert!(notes.iter().any(|n| n.field == f && n.message.contains("m2")), "{f}: {notes:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// The CRD-style schema against the parser

/// The schema of `spec` in the repository's CRD.
fn spec_schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA);
    let text = std::fs::read_to_string(&path).expect("read the schema");
    let (set, errors) = load_sources([(PathBuf::from("crd.yaml"), text)]);
    assert!(errors.is_empty(), "{errors:?}");
    let crd = &set.templates[0].object;
    assert_eq!(crd.pointer("/spec/names/kind"), Some(&json!("RolloutPolicy")));
    assert_eq!(crd.pointer("/spec/group"), Some(&json!(super::FEDSCHED_GROUP)));
    crd.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec").cloned().expect("spec schema")
}

/// A value for `schema` with every property set (enums: the first value).
fn sample(schema: &Value) -> Value {
    if schema.get("x-kubernetes-int-or-string") == Some(&json!(true)) {
        return json!(1);
    }
    if let Some(first) = schema.pointer("/enum/0") {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => match schema.get("properties").and_then(Value::as_object) {
            Some(props) => Value::Object(props.iter().map(|(k, s)| (k.clone(), sample(s))).collect()),
            None => json!({"k": "v"}),
        },
        Some("array") => json!([sample(&schema["items"])]),
        Some("boolean") => json!(true),
        Some("integer") => json!(1),
        _ => json!("5m"),
    }
}

/// Every mapping of the schema with its own properties: (JSON pointer in a [`sample`], names).
fn objects(schema: &Value, at: String, out: &mut Vec<(String, BTreeSet<String>)>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        out.push((at.clone(), props.keys().cloned().collect()));
        for (k, s) in props {
            objects(s, format!("{at}/{k}"), out);
        }
    }
    if let Some(items) = schema.get("items") {
        objects(items, format!("{at}/0"), out);
    }
}

/// The field names serde expects where it refused `zzUnknown` (`expected one of `a`, `b``).
fn expected_fields(message: &str) -> BTreeSet<String> {
    let (_, list) = message.split_once("expected").unwrap_or(("", ""));
    list.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn the_rollout_schema_has_every_field_the_parser_accepts_and_no_other() {
    let schema = spec_schema();
    let doc = sample(&schema);
    // Every field of the schema is accepted by the typed decode.
    let spec: Result<RolloutSpec, _> = serde_json::from_value(doc.clone());
    assert!(spec.is_ok(), "{spec:?}\n{doc:#}");
    // Every mapping's fields are exactly the parser's: an unknown field is refused with the list.
    let mut maps = Vec::new();
    objects(&schema, String::new(), &mut maps);
    assert!(maps.len() > 8, "{maps:?}");
    for (at, names) in maps {
        let mut probe = doc.clone();
        let target = if at.is_empty() { Some(&mut probe) } else { probe.pointer_mut(&at) };
        let Some(Value::Object(m)) = target else { panic!("{at} is no mapping in {doc:#}") };
        m.insert("zzUnknown".into(), json!(1));
        let err = serde_json::from_value::<RolloutSpec>(probe).expect_err("unknown field accepted");
        let expected = expected_fields(&err.to_string());
        assert_eq!(expected, names, "spec{at}: the parser's fields (left) and the schema's (right) differ: {err}");
    }
    // And the required lists name fields that exist.
    let _: &Map<String, Value> = schema["properties"].as_object().expect("properties");
    for r in schema["required"].as_array().into_iter().flatten() {
        assert!(schema["properties"].get(r.as_str().unwrap_or("")).is_some(), "{r}");
    }
}
