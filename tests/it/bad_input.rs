//! Invalid input: clear errors naming file, document and field; nothing in the output changes.

use crate::support::*;

#[test]
fn invalid_policy_leaves_previous_output_untouched() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let before = tree(&s.out());
    s.write(
        "policies/broken.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: broken\n  namespace: shop\nspec:\n  resourceSelectors:\n  - apiVersion: apps/v1\n    kind: Deployment\n  placement:\n    replicaScheduling:\n      replicaSchedulingType: Dividedd\n",
    );
    let out = s.render();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("policies/broken.yaml: document 1: spec.placement.replicaScheduling.replicaSchedulingType"),
        "{err}"
    );
    assert_eq!(before, tree(&s.out()), "output changed after invalid input");
}

#[test]
fn check_prints_every_error_with_file_document_and_field() {
    let s = Scratch::new();
    s.write("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\nkey: [unclosed\n");
    s.write(
        "nested/b.yml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: p\nspec:\n  resourceSelectors:\n  - apiVersion: v1\n    kind: ConfigMap\n  priority: high\n",
    );
    s.write(
        "c.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicyy\nmetadata:\n  name: q\nspec: {}\n",
    );
    s.write(".git/ignored.yaml", "this: [is not: read\n");
    let out = fedsched(&["check", "--policies", s.policies().to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.iter().any(|l| l.starts_with("a.yaml: document 2: ")), "{stdout}");
    assert!(lines.iter().any(|l| l.starts_with("nested/b.yml: document 1: spec.priority: ")), "{stdout}");
    assert!(
        lines.iter().any(|l| l.starts_with("c.yaml: document 1: kind: ") && l.contains("PropagationPolicyy")),
        "{stdout}"
    );
    assert!(!stdout.contains(".git"), "{stdout}");
}

#[test]
fn demo_repository_checks_clean() {
    let out = fedsched(&["check", "--policies", repo_root().join("config/demo").to_str().expect("utf8")]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
}

#[test]
fn object_names_that_would_escape_the_output_are_rejected() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let before = tree(&s.out());
    s.write("apps/evil.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ../../escape\n  namespace: shop\n");
    let out = s.render();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("metadata.name"), "{}", text(&out.stderr));
    assert_eq!(before, tree(&s.out()));
    assert!(!s.dir.path().join("escape").exists());
}

#[test]
fn config_errors_name_the_key() {
    let s = Scratch::new();
    let cfg = s.dir.path().join("fedsched.toml");
    std::fs::write(&cfg, "[reconcile]\ninterval = \"soon\"\n").expect("write");
    let out = fedsched(&["--config", cfg.to_str().expect("utf8"), "check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("reconcile.interval"), "{}", text(&out.stderr));
    std::fs::write(&cfg, "policy_dirr = \"x\"\n").expect("write");
    let out = fedsched(&["--config", cfg.to_str().expect("utf8"), "check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("policy_dirr"), "{}", text(&out.stderr));
}

#[test]
fn the_shipped_config_files_parse() {
    for f in ["config/fedsched.toml", "config/demo.toml"] {
        let p = repo_root().join(f);
        let out = fedsched(&[
            "--config",
            p.to_str().expect("utf8"),
            "check",
            "--policies",
            repo_root().join("config/demo").to_str().expect("utf8"),
        ]);
        assert!(out.status.success(), "{f}: {}", text(&out.stderr));
    }
}

/// Karmada accepts a PropagationPolicy whose selector names another namespace (it never
/// matches); so does fedsched, and `check` says why it will not do what it seems to.
#[test]
fn check_accepts_and_warns_about_a_selector_of_another_namespace() {
    let s = Scratch::new();
    s.write(
        "pp.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: p\n  namespace: team\nspec:\n  resourceSelectors:\n  - apiVersion: v1\n    kind: ConfigMap\n    namespace: other\n",
    );
    s.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: other\n");
    let out = fedsched(&["check", "--policies", s.policies().to_str().expect("utf8")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: ") && err.contains("pp.yaml: document 1: spec.resourceSelectors[0].namespace"),
        "{err}"
    );
    assert!(err.contains("matches nothing"), "{err}");
}

/// `replicas: 2147483647` (2³¹−1) with a static weight list: division costs O(clusters · log),
/// not O(replicas) (one by one it ran for minutes), and the split is exact.
#[test]
fn the_largest_replica_count_divides_at_once_and_exactly() {
    let s = Scratch::new();
    s.write("all.yaml", include_str!("../fixtures/max-replicas.yaml"));
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m1 = std::fs::read_to_string(s.out().join("m1/default/apps_deployment_big.yaml")).expect("m1");
    let m2 = std::fs::read_to_string(s.out().join("m2/default/apps_deployment_big.yaml")).expect("m2");
    // 1 : 2 of 2147483647 by Webster.
    assert!(m1.contains("  replicas: 715827882\n"), "{m1}");
    assert!(m2.contains("  replicas: 1431655765\n"), "{m2}");
}
