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
