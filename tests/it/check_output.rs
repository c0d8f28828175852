//! What `check` reports and how (issue 16): overrides that would leave an invalid object,
//! named by file, document and field; `-o json` / `-o yaml` for CI annotations.

use crate::support::*;

const APP: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {clusterAffinity: {clusterNames: [a, b]}, replicaScheduling: {replicaSchedulingType: Duplicated}}
";

const BAD_OVERRIDES: &str = "\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: bad, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
  - targetCluster: {clusterNames: [a]}
    overriders:
      plaintext: [{path: /spec/replicas, operator: replace, value: not-a-number}]
  - targetCluster: {clusterNames: [b]}
    overriders:
      plaintext: [{path: /spec/template/spec/containers/0/resources/requests/cpu, operator: replace, value: '-1'}]
";

fn scratch() -> Scratch {
    let s = Scratch::new();
    s.write("clusters.yaml", TWO_CLUSTERS);
    s.write("app.yaml", APP);
    s
}

fn check(s: &Scratch, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["check", "--policies"];
    let dir = s.policies().display().to_string();
    args.push(&dir);
    args.extend_from_slice(extra);
    fedsched(&args)
}

#[test]
fn overrides_that_leave_an_invalid_object_are_named_by_check_and_fail_the_render_for_that_cluster() {
    let s = scratch();
    assert!(s.render().status.success());
    let file = |c: &str| std::fs::read_to_string(s.out().join(c).join("shop/apps_deployment_web.yaml")).expect("file");
    let (a0, b0) = (file("a"), file("b"));
    s.write("override.yaml", BAD_OVERRIDES);
    let out = check(&s, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("override.yaml: document 1: spec.overrideRules[0].overriders: ")
            && report.contains(
                "for cluster a: spec.replicas must be an integer from 0 to 2147483647, found \"not-a-number\""
            ),
        "{report}"
    );
    assert!(
        report.contains("override.yaml: document 1: spec.overrideRules[1].overriders: ")
            && report.contains("for cluster b: containers[0].resources.requests.cpu must not be negative, found -1"),
        "{report}"
    );
    // A pass reports a render failure per cluster and keeps the previous files.
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("render failed: ") && err.contains("on a: ") && err.contains("on b: "), "{err}");
    assert_eq!((file("a"), file("b")), (a0, b0), "an invalid override reached the output");
}

#[test]
fn check_as_json_or_yaml_lists_every_finding_with_file_document_field_and_severity() {
    let s = scratch();
    s.write("override.yaml", BAD_OVERRIDES);
    s.write("app.yaml", &APP.replace("  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n  placement", "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n  schedulerName: other\n  placement"));
    let out = check(&s, &["-o", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document on stdout");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["counts"]["templates"], 1);
    let findings = doc["findings"].as_array().expect("findings");
    let has = |file: &str, document: u64, field: &str, severity: &str| {
        findings.iter().any(|f| {
            f["file"] == file
                && f["document"] == document
                && f["field"] == field
                && f["severity"] == severity
                && f["message"].as_str().is_some_and(|m| !m.is_empty())
        })
    };
    assert!(has("override.yaml", 1, "spec.overrideRules[0].overriders", "error"), "{doc:#}");
    assert!(has("override.yaml", 1, "spec.overrideRules[1].overriders", "error"), "{doc:#}");
    assert!(has("app.yaml", 2, "spec.schedulerName", "warning"), "{doc:#}");
    // YAML: the same document.
    let out = check(&s, &["-o", "yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let yaml: serde_json::Value = serde_saphyr::from_str(&text(&out.stdout)).expect("YAML");
    assert_eq!(yaml, doc);
    // A repository that does not load: its errors, no counts; a valid one: ok.
    s.write("broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x]}\n");
    let doc: serde_json::Value = serde_json::from_slice(&check(&s, &["-o", "json"]).stdout).expect("json");
    assert!(
        doc["counts"].is_null()
            && doc["findings"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["file"] == "broken.yaml" && f["severity"] == "error")),
        "{doc:#}"
    );
    std::fs::remove_file(s.policies().join("broken.yaml")).expect("rm");
    std::fs::remove_file(s.policies().join("override.yaml")).expect("rm");
    let out = check(&s, &["-o", "json"]);
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["ok"], true);
}

#[test]
fn read_only_commands_answer_in_yaml_as_in_json() {
    let s = scratch();
    assert!(s.render().status.success());
    for (cmd, arg) in [("history", "Deployment/shop/web"), ("explain", "Deployment/shop/web"), ("snapshots", "a")] {
        let json = s.cmd(cmd, &[arg, "-o", "json"]);
        let yaml = s.cmd(cmd, &[arg, "-o", "yaml"]);
        assert!(json.status.success() && yaml.status.success(), "{cmd}: {}", text(&yaml.stderr));
        let j: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
        let y: serde_json::Value = serde_saphyr::from_str(&text(&yaml.stdout)).expect("yaml");
        // Same keys at the top (numbers may differ in form: 1.0 against 1).
        let keys = |v: &serde_json::Value| match v {
            serde_json::Value::Object(m) => m.keys().cloned().collect::<Vec<_>>(),
            serde_json::Value::Array(a) => vec![a.len().to_string()],
            _ => vec![],
        };
        assert_eq!(keys(&y), keys(&j), "{cmd}");
    }
}

#[test]
fn a_file_that_cannot_be_read_is_an_io_failure_not_a_policy_error() {
    let s = scratch();
    assert!(s.render().status.success());
    let before = tree(&s.out());
    // A link to a file that is not there: reading it fails (as a file would with its
    // descriptors exhausted or a disk error).
    std::os::unix::fs::symlink(s.policies().join("missing.yaml"), s.policies().join("broken.yaml")).expect("link");
    let out = s.render();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "an I/O error is an operational failure: {err}");
    assert!(err.contains("cannot read the policy repository: broken.yaml: cannot read file"), "{err}");
    assert!(!err.contains("error(s) in the policy repository"), "{err}");
    assert!(tree(&s.out()) == before, "the output changed");
}

#[test]
fn the_daemon_reports_an_unreadable_file_as_a_failed_pass_not_an_invalid_repository() {
    use fedsched::daemon::Control;
    use fedsched::views::status::PassOutcome;
    let s = scratch();
    let mut d = crate::daemon::InProcess::start(&s, "", false);
    let v = d.passes(1);
    assert_eq!(v.last_pass.as_ref().map(|p| &p.outcome), Some(&PassOutcome::Ok));
    std::os::unix::fs::symlink(s.policies().join("missing.yaml"), s.policies().join("broken.yaml")).expect("link");
    d.clock.advance_ms(60_000);
    d.send(Control::PolicyChanged);
    let v = d.passes(2);
    match v.last_pass.as_ref().map(|p| &p.outcome) {
        Some(PassOutcome::Failed { message }) => {
            assert!(message.contains("cannot read the policy repository: broken.yaml"), "{message}")
        }
        other => panic!("expected a failed pass, got {other:?}"),
    }
    assert_eq!(v.policy_errors, 0, "an I/O error counted as a policy error");
}

/// A `namespace` on a cluster-scoped kind (issue 47): a warning naming file, document and
/// field, and the file in `_cluster/` without it (the API server ignores it too).
#[test]
fn a_namespace_on_a_cluster_scoped_kind_is_warned_about() {
    let s = scratch();
    s.write(
        "rbac.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader, namespace: shop}\nrules: []\n",
    );
    let out = check(&s, &["-o", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let warned = doc["findings"].as_array().into_iter().flatten().any(|f| {
        f["file"] == "rbac.yaml"
            && f["document"] == 1
            && f["field"] == "metadata.namespace"
            && f["severity"] == "warning"
            && f["message"]
                .as_str()
                .is_some_and(|m| m.contains("ClusterRole is cluster-scoped") && m.contains("`shop`"))
    });
    assert!(warned, "{doc:#}");
    let out = check(&s, &[]);
    assert!(
        text(&out.stderr).contains("rbac.yaml: document 1: metadata.namespace: ClusterRole is cluster-scoped"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 52: `check` says how a RolloutPolicy stage of offline members passes its gate (text:
/// a `note:` on stderr; JSON: a finding of severity `note`), and names a RolloutPolicy's
/// errors by file, document and field.
#[test]
fn check_says_how_an_offline_rollout_stage_passes_and_names_rollout_errors() {
    let s = scratch();
    let policy = "apiVersion: fedsched.io/v1alpha1\nkind: RolloutPolicy\nmetadata: {name: web, namespace: shop}\nspec:\n  \
                  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n  \
                  stages: [{name: canary, clusterAffinity: {clusterNames: [a]}}]\n  minSuccessTime: 2m\n";
    s.write("rollout.yaml", policy);
    let out = check(&s, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("note: rollout.yaml: document 1: spec.stages[0]: stage `canary` may hold offline clusters (a)")
            && err.contains("only by approval")
            && err.contains("2m"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&check(&s, &["-o", "json"]).stdout).expect("json");
    assert_eq!(doc["counts"]["rolloutPolicies"], 1, "{doc:#}");
    assert!(
        doc["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|f| f["file"] == "rollout.yaml" && f["field"] == "spec.stages[0]" && f["severity"] == "note"),
        "{doc:#}"
    );
    s.write("rollout.yaml", &policy.replace("minSuccessTime: 2m", "minSuccessTime: soon"));
    let out = check(&s, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("rollout.yaml: document 1: spec.minSuccessTime: `soon` is not a duration"),
        "{}",
        text(&out.stdout)
    );
}
