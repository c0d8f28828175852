//! What `check` reports and how (issue 16): overrides that would leave an invalid object,
//! named by file, document and field; `-o json` / `-o yaml` for CI annotations.

use crate::support::*;

const CLUSTERS: &str = "\
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: a}
spec: {syncMode: Push}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {cpu: '64', memory: 256Gi, pods: '1000'}}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: b}
spec: {syncMode: Push}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {cpu: '64', memory: 256Gi, pods: '1000'}}
";

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
    s.write("clusters.yaml", CLUSTERS);
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
