//! Invalid manifests are not written (issue 47, item 9): what the API server would refuse is
//! refused here first, named by file, document and field.

use crate::support::*;

fn app(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: {name}, namespace: shop}}\n\
         spec:\n  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: {name}}}]\n  placement:\n    \
         clusterAffinity: {{clusterNames: [a, b]}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: shop}}\n\
         spec:\n  replicas: 2\n  template:\n    spec:\n      containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: {cpu}}}}}}}]\n"
    )
}

fn check(s: &Scratch) -> std::process::Output {
    fedsched(&["check", "--policies", s.policies().to_str().expect("utf-8")])
}

#[test]
fn a_negative_request_is_refused_and_its_workload_not_written() {
    let s = Scratch::new();
    s.write("clusters.yaml", TWO_CLUSTERS);
    s.write("good.yaml", &app("good", "250m"));
    s.write("bad.yaml", &app("bad", "-250m"));
    let out = check(&s);
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stdout);
    assert!(
        said.contains("bad.yaml: document 2: spec.template.spec.containers[0].resources.requests.cpu:")
            && said.contains("greater than or equal to 0"),
        "{said}"
    );
    let out = s.render();
    let files = tree(&s.out());
    assert!(files.keys().any(|k| k.ends_with("apps_deployment_good.yaml")), "{}", text(&out.stderr));
    assert!(!files.keys().any(|k| k.ends_with("apps_deployment_bad.yaml")), "an invalid manifest was written");
    assert!(
        text(&out.stderr).contains("Deployment/shop/bad") || text(&out.stderr).contains("shop/bad"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_negative_allocatable_in_a_cluster_object_is_refused() {
    let s = Scratch::new();
    s.write("clusters.yaml", &TWO_CLUSTERS.replacen("cpu: '64'", "cpu: '-64'", 1));
    s.write("good.yaml", &app("good", "250m"));
    let out = check(&s);
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stdout);
    assert!(
        said.contains(
            "clusters.yaml: document 1: status.resourceSummary.allocatable.cpu: must be greater than or equal to 0"
        ),
        "{said}"
    );
    assert!(!s.render().status.success());
    assert!(!s.out().join("a").exists(), "written from an invalid Cluster object");
}

/// A field Kubernetes' schema for the kind does not have (a typo of `replicas`, of
/// `imagePullPolicy`): named by file, document and field with the nearest real field, in
/// `check` and in the pass (`render`'s log, the daemon's findings are the same function); the
/// workload is still written (a newer Kubernetes may know the field: a warning, not an error).
#[test]
fn an_unknown_template_field_is_named_in_check_and_in_every_pass() {
    let s = Scratch::new();
    s.write("clusters.yaml", TWO_CLUSTERS);
    s.write(
        "typo.yaml",
        &app("typo", "250m")
            .replace("  replicas: 2\n", "  replicas: 2\n  replica: 3\n")
            .replace("image: nginx,", "image: nginx, imagePulPolicy: Always,"),
    );
    let out = check(&s);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    for field in ["spec.replica:", "spec.template.spec.containers[0].imagePulPolicy:"] {
        assert!(said.contains(&format!("typo.yaml: document 2: {field}")), "{field} not named: {said}");
    }
    assert!(said.contains("did you mean `replicas`") && said.contains("did you mean `imagePullPolicy`"), "{said}");
    // The whole message, as a reader sees it.
    assert!(
        said.contains(
            "typo.yaml: document 2: spec.replica: unknown field of Deployment in Kubernetes 1.33's schema (did you \
             mean `replicas`?): written as it is — the API server drops it (or, with strict field validation as \
             kubectl and Argo CD apply, refuses the manifest)\n"
        ),
        "{said}"
    );
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("typo.yaml: document 2: spec.template.spec.containers[0].imagePulPolicy:"),
        "{}",
        text(&out.stderr)
    );
    assert!(tree(&s.out()).keys().any(|k| k.ends_with("apps_deployment_typo.yaml")));
}
