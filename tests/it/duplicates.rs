//! Ten thousand copies of one entry (issue 47, item 9): refused with one message, or acted on
//! once with one summary line — never one log line (or one error) per copy.

use crate::support::*;

const APP: &str = "\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement:
    clusterAffinity: {clusterNames: [a, b]}
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 4
  template:
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m}}}]
";

const COPIES: usize = 10_000;

#[test]
fn ten_thousand_copies_of_a_taint_are_one_error() {
    let s = Scratch::new();
    s.write("app.yaml", APP);
    let taints: String = (0..=COPIES).map(|_| "  - {key: dedicated, value: gpu, effect: NoSchedule}\n").collect();
    let clusters =
        TWO_CLUSTERS.replacen("spec: {syncMode: Push}\n", &format!("spec:\n  syncMode: Push\n  taints:\n{taints}"), 1);
    s.write("clusters.yaml", &clusters);
    let out = fedsched(&["check", "--policies", s.policies().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("taints")).collect();
    assert_eq!(lines.len(), 1, "{said}");
    assert!(
        lines[0].starts_with("clusters.yaml: document 1: spec.taints[1]: duplicate of spec.taints[0]")
            && lines[0].contains(&format!("({COPIES} duplicates in all)")),
        "{}",
        lines[0]
    );
}

#[test]
fn ten_thousand_copies_of_a_rebalancer_entry_are_one_warning_and_one_rebalance() {
    let s = Scratch::new();
    s.write("app.yaml", APP);
    s.write("clusters.yaml", TWO_CLUSTERS);
    assert!(s.render().status.success());
    let entries: String =
        (0..COPIES).map(|_| "  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}\n").collect();
    s.write(
        "rebalance.yaml",
        &format!("apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {{name: again, generation: 1}}\nspec:\n  workloads:\n{entries}"),
    );
    let out = fedsched(&["check", "--policies", s.policies().to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    let warned: Vec<String> =
        text(&out.stderr).lines().filter(|l| l.contains("rebalance.yaml")).map(String::from).collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("spec.workloads[1]") && warned[0].contains(&format!("{} of {COPIES} entries", COPIES - 1)),
        "{}",
        warned[0]
    );
    let out = s.render_with(&[], &[("FEDSCHED_LOG", "info")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = text(&out.stderr);
    let lines = log.lines().filter(|l| l.contains("stability") || l.contains("Rebalance")).count();
    assert!(lines <= 3, "{lines} log lines: {log}");
    let h = s.cmd("history", &["Deployment/shop/web", "-o", "json"]);
    let notes = text(&h.stdout);
    assert_eq!(notes.matches("rebalanced by WorkloadRebalancer again generation 1").count(), 1, "{notes}");
}
