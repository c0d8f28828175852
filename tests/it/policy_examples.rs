//! The policy loader against Karmada's own example files (`shared/karmada-examples`), plus
//! broken repositories built in temporary directories.

use std::fs;
use std::path::{Path, PathBuf};

use fedsched::policy::load::{load_dir, load_repository, load_sources};
use fedsched::policy::types::{ReplicaDivisionPreference, ReplicaSchedulingType, SelectorOperator, TaintEffect};
use fedsched::policy::{LoadError, PolicySet, defaults, validate::validate};

/// Karmada's example files, or `None` (skipped, and said so) where they are not available.
fn examples() -> Option<PathBuf> {
    crate::support::karmada_examples()
}

/// Every `*.yaml` below `root`, relative, sorted.
fn yaml_files(root: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
        let dir = root.join(rel);
        let mut names: Vec<_> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").file_name())
            .collect();
        names.sort();
        for n in names {
            let r = rel.join(n);
            if root.join(&r).is_dir() {
                walk(root, &r, out);
            } else if r.extension().is_some_and(|x| x == "yaml") {
                out.push(r);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, Path::new(""), &mut out);
    out
}

/// Loads one example file alone, applies defaults and validates, like `load_repository`.
/// `None` where Karmada's example files are not available (the caller returns: skipped).
fn load_one(rel: &str) -> Option<(PolicySet, Vec<LoadError>)> {
    let path = examples()?.join(rel);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut set, mut errors) = load_sources([(PathBuf::from(rel), text)]);
    defaults::apply(&mut set);
    errors.extend(validate(&set));
    Some((set, errors))
}

fn shown(errors: &[LoadError]) -> String {
    errors.iter().map(|e| format!("  {e}\n")).collect::<String>()
}

/// How a known-invalid example must fail.
enum Expect {
    /// A YAML error at this line of the file that mentions a `{{...}}` placeholder.
    Placeholder { line: usize },
    /// Typed-decode errors, every one of the document (issue 49 item 3), in field order: each
    /// naming this field and containing this text.
    Fields(&'static [(&'static str, &'static str)]),
    /// Not a Kubernetes object: every document lacks `apiVersion` and `kind`.
    NotAnObject,
}

fn expectation(rel: &str) -> Option<Expect> {
    Some(match rel {
        "performance/clusterloader2-deployment.yaml" => Expect::Placeholder { line: 4 },
        "performance/clusterloader2-policy.yaml" => Expect::Placeholder { line: 4 },
        "performance/kwok-node.yaml" => Expect::Placeholder { line: 11 },
        "interpreter-examples/customresourceinterpreter/webhook-configuration.yaml" => Expect::Placeholder { line: 15 },
        "proposals/federated-resource-quota-enhancement-policy.yaml" => {
            // The proposal's fragment has no resourceSelectors either.
            Expect::Fields(&[
                ("spec", "missing field `resourceSelectors`"),
                ("spec.failover.application.purgeMode", "unknown variant `Immediately`"),
            ])
        }
        // karmadactl interpret's `--observed`-status input: a list of status items.
        "interpreter-examples/karmadactlinterpret/status-file.yaml" => Expect::NotAnObject,
        _ if rel.starts_with("resourcecustomizations/") && rel.contains("/testdata/") => Expect::NotAnObject,
        _ => return None,
    })
}

#[test]
fn every_example_file_loads_alone_or_fails_for_the_known_reason() {
    let Some(root) = examples() else { return };
    let files = yaml_files(&root);
    assert!(files.len() > 190, "only {} example files found", files.len());
    let mut invalid_seen = 0;
    for rel in &files {
        let rel_str = rel.to_string_lossy().to_string();
        let Some((set, errors)) = load_one(&rel_str) else { return };
        for e in &errors {
            assert_eq!(e.file, *rel, "error names the wrong file: {e}");
        }
        match expectation(&rel_str) {
            None => {
                assert!(errors.is_empty(), "{rel_str} must load cleanly:\n{}", shown(&errors));
                let objects = set.templates.len()
                    + set.propagation_policies.len()
                    + set.cluster_propagation_policies.len()
                    + set.override_policies.len()
                    + set.cluster_override_policies.len()
                    + set.clusters.len()
                    + set.interpreter_objects.len();
                assert!(objects > 0, "{rel_str} loaded no object");
            }
            Some(expect) => {
                invalid_seen += 1;
                assert!(!errors.is_empty(), "{rel_str} must be rejected");
                match expect {
                    Expect::Placeholder { line } => {
                        assert_eq!(errors.len(), 1, "{rel_str}:\n{}", shown(&errors));
                        let m = &errors[0].message;
                        assert_eq!(errors[0].document, Some(1));
                        assert!(m.contains(&format!("line {line},")), "{rel_str}: {m}");
                        assert!(m.contains("placeholder"), "{rel_str}: {m}");
                    }
                    Expect::Fields(expected) => {
                        assert_eq!(errors.len(), expected.len(), "{rel_str}:\n{}", shown(&errors));
                        for (e, (field, text)) in errors.iter().zip(expected) {
                            assert_eq!(e.field, *field, "{rel_str}:\n{}", shown(&errors));
                            assert!(e.message.contains(text), "{e}");
                        }
                        assert!(set.propagation_policies.is_empty());
                    }
                    Expect::NotAnObject => {
                        for e in &errors {
                            assert!(
                                (e.field == "apiVersion" || e.field == "kind")
                                    && e.message.contains("required field is missing"),
                                "{rel_str}: unexpected error {e}"
                            );
                        }
                        assert!(errors.iter().any(|e| e.field == "apiVersion"));
                        assert_eq!(set, PolicySet::default());
                    }
                }
            }
        }
    }
    // 4 placeholder files, the proposal, status-file.yaml and the interpreter test vectors.
    assert!(invalid_seen > 100, "only {invalid_seen} known-invalid files seen");
    for known in [
        "performance/clusterloader2-deployment.yaml",
        "performance/clusterloader2-policy.yaml",
        "performance/kwok-node.yaml",
        "interpreter-examples/customresourceinterpreter/webhook-configuration.yaml",
        "proposals/federated-resource-quota-enhancement-policy.yaml",
    ] {
        assert!(root.join(known).is_file(), "known-invalid example {known} is missing");
    }
}

#[test]
fn whole_example_directory_at_once() {
    let Some(root) = examples() else { return };
    let (set, errors) = load_repository(&root);
    // Every error comes from a known-invalid file, or is a duplicate: the examples reuse names
    // (three PropagationPolicies `default/example-policy`, three Deployments `default/nginx`).
    let mut duplicates = Vec::new();
    for e in &errors {
        let rel = e.file.to_string_lossy();
        if expectation(&rel).is_some() {
            continue;
        }
        assert!(e.message.starts_with("duplicate "), "unexpected error: {e}");
        assert!(e.message.contains("already defined in "), "{e}");
        duplicates.push(e);
    }
    let dup_text = shown(&errors);
    assert!(
        duplicates.iter().any(|e| e.message.contains("duplicate PropagationPolicy default/example-policy")),
        "{dup_text}"
    );
    assert!(duplicates.iter().any(|e| e.message.contains("duplicate Deployment default/nginx")), "{dup_text}");
    // The first definition wins, in sorted walk order.
    let pp = set.propagation_policies.iter().find(|p| p.meta.name == "example-policy").expect("example-policy");
    assert_eq!(pp.source.file, PathBuf::from("artifacts-example/policy_with_labelSelector.yaml"));

    assert_eq!(set.clusters.len(), 1);
    assert_eq!(set.cluster_propagation_policies.len(), 1, "the two CPPs share a name");
    // 27 built-in customizations + the karmadactl example.
    assert_eq!(set.interpreter_objects.iter().filter(|o| o.key.kind == "ResourceInterpreterCustomization").count(), 28);
    let scope = |g: &str, k: &str| set.crd_scopes.get(&(g.to_string(), k.to_string())).copied();
    assert_eq!(scope("webapp.my.domain", "Guestbook"), Some(true));
    assert_eq!(scope("workload.example.io", "Workload"), Some(true));
    assert_eq!(scope("policy.karmada.io", "ClusterPropagationPolicy"), Some(false));
    assert_eq!(scope("apps.karmada.io", "WorkloadRebalancer"), Some(false));
    // The Guestbook CR lands in `default`; CRDs and Namespaces are cluster-scoped.
    let gb = set.find_template("Guestbook", Some("default"), "guestbook-sample").expect("guestbook");
    assert_eq!(gb.key.api_version, "webapp.my.domain/v1");
    assert!(set.find_template("Namespace", None, "karmada-cluster").is_some());
    assert!(set.find_template("CustomResourceDefinition", None, "guestbooks.webapp.my.domain").is_some());
    // Sorted lists.
    let keys: Vec<_> = set.templates.iter().map(|t| t.key.clone()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);

    // Deterministic: a second load gives the same set and errors.
    let (again, errors_again) = load_repository(&root);
    assert_eq!(again, set);
    assert_eq!(errors_again, errors);
}

#[test]
fn nginx_sample_is_divided_weighted_one_to_one() {
    let Some((set, errors)) = load_one("samples/nginx/propagationpolicy.yaml") else { return };
    assert!(errors.is_empty(), "{}", shown(&errors));
    let pp = &set.propagation_policies[0];
    assert_eq!(pp.meta.name, "nginx-propagation");
    assert_eq!(pp.meta.namespace.as_deref(), Some("default"));
    assert_eq!(pp.spec.resource_selectors[0].namespace.as_deref(), Some("default"));
    let rs = pp.spec.placement.replica_scheduling.as_ref().expect("replicaScheduling");
    assert_eq!(rs.replica_scheduling_type, Some(ReplicaSchedulingType::Divided));
    assert_eq!(rs.replica_division_preference, Some(ReplicaDivisionPreference::Weighted));
    let weights: Vec<(Vec<String>, i64)> = rs
        .weight_preference
        .as_ref()
        .expect("weightPreference")
        .static_weight_list
        .iter()
        .map(|w| (w.target_cluster.cluster_names.clone(), w.weight))
        .collect();
    assert_eq!(weights, vec![(vec!["member1".to_string()], 1), (vec!["member2".to_string()], 1)]);
}

#[test]
fn cr_cluster_after_defaults() {
    let Some((set, errors)) = load_one("artifacts-example/cr_cluster.yaml") else { return };
    assert!(errors.is_empty(), "{}", shown(&errors));
    assert_eq!(set.clusters.len(), 1);
    let c = &set.clusters[0];
    assert_eq!(c.meta.name, "cluster-foo");
    assert_eq!(c.meta.namespace, None, "Cluster is cluster-scoped");
    assert_eq!(c.spec.provider.as_deref(), Some("huaweicloud"));
    assert_eq!(c.spec.region.as_deref(), Some("ap-southeast-1"));
    assert_eq!(c.spec.zones, vec!["az-1".to_string()]);
    assert_eq!(c.spec.zone, None);
    // The Secret of the same file is a template in its own namespace.
    let s = set.find_template("Secret", Some("karmada-cluster"), "secret-foo");
    assert!(s.is_some());
    assert_eq!(c.source.document, 1);
    assert_eq!(s.map(|t| t.source.document), Some(2));
}

#[test]
fn toleration_and_field_selector_examples() {
    let Some((set, errors)) = load_one("artifacts-example/propagationpolicy_taintToleration.yaml") else { return };
    assert!(errors.is_empty(), "{}", shown(&errors));
    let tol = &set.propagation_policies[0].spec.placement.cluster_tolerations;
    assert_eq!(tol.len(), 1);
    assert_eq!(tol[0].effect, Some(TaintEffect::NoSchedule));
    assert_eq!(tol[0].key, None);

    let Some((set, errors)) = load_one("artifacts-example/propagation_fieldsselector.yaml") else { return };
    assert!(errors.is_empty(), "{}", shown(&errors));
    let aff = set.propagation_policies[0].spec.placement.cluster_affinity.as_ref().expect("clusterAffinity");
    let exprs: Vec<_> = aff
        .field_selector
        .as_ref()
        .expect("fieldSelector")
        .match_expressions
        .iter()
        .map(|r| (r.key.as_str(), r.operator, r.values.clone()))
        .collect();
    assert_eq!(
        exprs,
        vec![
            ("provider", SelectorOperator::In, vec!["huaweicloud".to_string()]),
            ("region", SelectorOperator::NotIn, vec!["cn-south-1".to_string()]),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Broken repositories

fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, text) in files {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(&path, text).expect("write");
    }
    dir
}

const GOOD_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata: {a: b}\n";

const MALFORMED: &str = "\
# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: first
---
# only a comment: not counted
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: second
  labels: {a: b
data: {}
";

#[test]
fn malformed_yaml_names_file_document_and_line() {
    let dir = repo(&[("sub/bad.yaml", MALFORMED), ("good.yaml", GOOD_CM)]);
    let (set, errors) = load_dir(dir.path());
    assert_eq!(errors.len(), 1, "{}", shown(&errors));
    let e = &errors[0];
    assert_eq!(e.file, PathBuf::from("sub/bad.yaml"));
    assert_eq!(e.document, Some(2), "empty documents are not counted");
    assert!(e.message.contains("line 1"), "{e}");
    let line: usize = e
        .message
        .split("line ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.parse().ok())
        .expect("line number");
    assert!((14..=15).contains(&line), "line {line} not at the broken mapping: {e}");
    assert!(e.to_string().starts_with("sub/bad.yaml: document 2: "), "{e}");
    // The other documents of the file and the other files still load.
    let names: Vec<_> = set.templates.iter().map(|t| t.key.name.as_str()).collect();
    assert_eq!(names, vec!["first", "good"]);
}

#[test]
fn unknown_kind_wrong_type_missing_field_all_reported_together() {
    let unknown_kind =
        "apiVersion: policy.karmada.io/v1alpha1\nkind: ReplicaSchedulingPolicy\nmetadata: {name: r}\nspec: {}\n";
    let wrong_type = "\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: p, namespace: web}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment}
  priority: high
";
    let missing = "\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: q}
spec:
  placement:
    clusterAffinity: {clusterNames: [m1]}
";
    let no_name = "apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n";
    let invalid = "\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: s}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
  placement:
    spreadConstraints:
    - {spreadByField: region, maxGroups: 1, minGroups: 2}
";
    let dir = repo(&[
        ("a-unknown.yaml", unknown_kind),
        ("b/wrong-type.yml", wrong_type),
        ("c-missing.yaml", missing),
        ("d-no-name.yaml", no_name),
        ("e-invalid.yaml", invalid),
        ("f-good.yaml", GOOD_CM),
        (".git/config.yaml", "not: [valid"),
        ("notes.txt", "not: [valid"),
    ]);
    let (set, errors) = load_repository(dir.path());
    let got: Vec<(String, Option<usize>, String)> =
        errors.iter().map(|e| (e.file.to_string_lossy().to_string(), e.document, e.field.clone())).collect();
    assert_eq!(
        got,
        vec![
            ("a-unknown.yaml".to_string(), Some(1), "kind".to_string()),
            ("b/wrong-type.yml".to_string(), Some(1), "spec.priority".to_string()),
            ("c-missing.yaml".to_string(), Some(1), "spec".to_string()),
            ("d-no-name.yaml".to_string(), Some(1), "metadata.name".to_string()),
            ("e-invalid.yaml".to_string(), Some(1), "spec.placement.spreadConstraints[0].maxGroups".to_string()),
            ("e-invalid.yaml".to_string(), Some(1), "spec.placement.spreadConstraints".to_string()),
        ],
        "{}",
        shown(&errors)
    );
    assert!(errors[0].message.contains("unknown kind ReplicaSchedulingPolicy in policy.karmada.io/v1alpha1"));
    assert!(errors[1].message.contains("invalid type"), "{}", errors[1]);
    assert!(errors[2].message.contains("missing field `resourceSelectors`"), "{}", errors[2]);
    assert!(errors[3].message.contains("required field is missing"));
    assert_eq!(set.templates.len(), 1);
    assert_eq!(set.propagation_policies.len(), 1, "only the semantically invalid one is kept");
}

#[test]
fn missing_directory_is_an_error() {
    let dir = repo(&[]);
    let missing = dir.path().join("nope");
    let (set, errors) = load_dir(&missing);
    assert_eq!(set, PolicySet::default());
    assert_eq!(errors.len(), 1);
    assert!(errors[0].message.contains("cannot read policy directory"), "{}", errors[0]);
}
