//! Live members' API enablements from their discovery documents (aggregated, or plain: one list
//! per group version): a workload of a CRD goes only to the members that serve its group (the generated fleet serves `apps.kruise.io/v1alpha1`
//! on even clusters only), discovery is not read again every round, a member whose discovery
//! fails keeps its last list, and one whose discovery never succeeded is taken to serve every
//! API (the practical rule, logged).

use std::path::Path;
use std::time::Duration;

use crate::live::{daemon, setup};
use crate::support::*;

const CLONES: &str = r#"apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: clones, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: clones}}
  template:
    metadata: {labels: {app: clones}}
    spec:
      containers: [{name: c, image: nginx}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: clones, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet, name: clones}]
  placement:
    replicaScheduling: {replicaSchedulingType: Duplicated}
"#;

const POLL: &str = "timeout = \"5s\"\nread_timeout = \"2s\"\nmax_backoff = \"1s\"\n[http]\nlisten = \"127.0.0.1:0\"";

/// Whether the output of `cluster` holds the CloneSet.
fn has_clones(out: &Path, cluster: &str) -> bool {
    tree(&out.join(cluster)).keys().any(|k| k.contains("cloneset"))
}

fn has_web(out: &Path, cluster: &str) -> bool {
    out.join(cluster).join("shop/apps_deployment_web.yaml").exists()
}

/// Discovery documents the simulator served to `cluster`.
fn discovery_requests(sim: &crate::live::Sim, cluster: &str) -> u64 {
    let (code, body) = sim.http("GET", "/admin/stats", "");
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("stats");
    v["discovery"][cluster].as_u64().unwrap_or(0)
}

#[test]
fn a_crd_workload_goes_only_where_its_group_is_served_and_a_failed_discovery_keeps_the_list() {
    let t = setup(2, false, POLL);
    t.s.write("apps/clones.yaml", CLONES);
    // member-000 answers the aggregated discovery documents, member-001 only the plain ones.
    t.sim.fault("member-001", r#"{"legacyDiscovery": true}"#);
    let (mut child, log) = daemon(&t, "info");
    let out = t.s.out();
    wait_for("the first live reconcile", Duration::from_secs(30), || {
        has_web(&out, "member-000") && has_web(&out, "member-001") && has_clones(&out, "member-000")
    });
    assert!(!has_clones(&out, "member-001"), "member-001 does not serve apps.kruise.io/v1alpha1");
    // The pass publishes before it records: explain answers once the pass has ended.
    wait_for("the first pass recorded", Duration::from_secs(30), || {
        t.s.cmd("explain", &["CloneSet/shop/clones", "-o", "json"]).status.success()
    });
    let why = t.s.cmd("explain", &["CloneSet/shop/clones", "-o", "json"]);
    assert!(
        text(&why.stdout).contains("cluster does not serve apps.kruise.io/v1alpha1/CloneSet"),
        "{}{}",
        text(&why.stdout),
        text(&why.stderr)
    );

    // Discovery is read once, not every round.
    let first = (discovery_requests(&t.sim, "member-000"), discovery_requests(&t.sim, "member-001"));
    // Aggregated: `/api` and `/apis`; plain: those and a list per group version (10 here).
    assert_eq!(first, (2, 12), "discovery requests of member-000, member-001");
    let mark = log.lock().expect("lock").len();
    wait_for("three more reconciles", Duration::from_secs(30), || {
        log.lock().expect("lock")[mark..].matches("reconcile done").count() >= 3
    });
    let again = (discovery_requests(&t.sim, "member-000"), discovery_requests(&t.sim, "member-001"));
    assert_eq!(again, first, "discovery was read again without a reason");

    // member-001 goes down, then comes back with its discovery failing: it keeps its list,
    // so the CloneSet still does not go there.
    t.sim.fault("member-001", r#"{"status": 503}"#);
    wait_for("member-001 to fail", Duration::from_secs(20), || {
        log.lock().expect("lock")[mark..].lines().any(|l| l.contains("poll failed") && l.contains("member-001"))
    });
    let before = discovery_requests(&t.sim, "member-001");
    t.sim.fault("member-001", r#"{"discoveryStatus": 503, "legacyDiscovery": true}"#);
    wait_for("member-001 to recover and fail its discovery", Duration::from_secs(30), || {
        log.lock().expect("lock")[mark..]
            .lines()
            .any(|l| l.contains("keeping the member's last API list") && l.contains("member-001"))
    });
    assert!(discovery_requests(&t.sim, "member-001") > before, "no discovery after the recovery");
    let mark = log.lock().expect("lock").len();
    wait_for("two reconciles after the recovery", Duration::from_secs(30), || {
        log.lock().expect("lock")[mark..].matches("reconcile done").count() >= 2
    });
    assert!(has_clones(&out, "member-000") && has_web(&out, "member-001"));
    assert!(!has_clones(&out, "member-001"), "a failed discovery lost member-001's list");
    let why = t.s.cmd("explain", &["CloneSet/shop/clones", "-o", "json"]);
    assert!(
        text(&why.stdout).contains("cluster does not serve apps.kruise.io/v1alpha1/CloneSet"),
        "{}",
        text(&why.stdout)
    );

    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().expect("lock").clone();
    assert!(!l.contains("panicked"), "{l}");
}

#[test]
fn a_member_whose_discovery_never_succeeded_is_taken_to_serve_every_api() {
    let t = setup(2, false, POLL);
    t.s.write("apps/clones.yaml", CLONES);
    // Nothing known of member-001's APIs: its Cluster object lists none either (the
    // simulator's files keep status.apiEnablements, the second fallback).
    let file = t.s.policies().join("clusters/member-001.yaml");
    let body = std::fs::read_to_string(&file).expect("cluster file");
    let mut in_status = false;
    let kept: Vec<&str> = body
        .lines()
        .filter(|l| {
            if !l.starts_with(' ') && !l.starts_with('-') {
                in_status = l.starts_with("status:");
            }
            !in_status
        })
        .collect();
    assert!(kept.len() < body.lines().count() && body.contains("apiEnablements"), "{body}");
    std::fs::write(&file, kept.join("\n") + "\n").expect("write");
    t.sim.fault("member-001", r#"{"discoveryStatus": 503}"#);
    let o = fedsched(&["render", "-c", t.config.to_str().expect("utf8")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = t.s.out();
    assert!(has_clones(&out, "member-000") && has_web(&out, "member-001"));
    // Nothing is known of member-001's APIs: the practical rule, said in the log.
    assert!(has_clones(&out, "member-001"), "the practical rule places the CloneSet on member-001");
    let err = text(&o.stderr);
    assert!(err.contains("no API list of the member was read yet") && err.contains("member-001"), "{err}");
}

#[test]
fn the_demo_lists_its_apis_so_a_crd_it_does_not_serve_goes_nowhere() {
    let s = Scratch::with_demo();
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("apiEnablements"), "{}", text(&out.stderr));
    let check = fedsched(&["check", "--policies", s.policies().to_str().expect("utf8")]);
    assert!(!text(&check.stderr).contains("apiEnablements"), "{}", text(&check.stderr));
    // A CloneSet: no demo cluster serves apps.kruise.io, so it is placed nowhere, and says why.
    s.write("apps/clones.yaml", CLONES);
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!tree(&s.out()).keys().any(|k| k.contains("cloneset")), "{:?}", tree(&s.out()).keys());
    let why = text(&s.cmd("explain", &["CloneSet/shop/clones", "-o", "json"]).stdout);
    assert!(why.contains("cluster does not serve apps.kruise.io/v1alpha1/CloneSet"), "{why}");
    // Served by the clusters, it is placed.
    s.serve("apps.kruise.io/v1alpha1", "CloneSet");
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(tree(&s.out()).keys().any(|k| k.contains("cloneset")), "{:?}", tree(&s.out()).keys());
}

#[test]
fn a_crd_installed_in_a_member_is_seen_at_the_next_discovery_interval() {
    let t = setup(2, false, &format!("discovery_interval = \"2s\"\n{POLL}"));
    t.s.write("apps/clones.yaml", CLONES);
    let (mut child, log) = daemon(&t, "info");
    let out = t.s.out();
    wait_for("the first live reconcile", Duration::from_secs(30), || {
        has_web(&out, "member-001") && has_clones(&out, "member-000")
    });
    assert!(!has_clones(&out, "member-001"));
    // The CRD is installed in member-001 (its API server now serves the group).
    let apis = r#"[{"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"}]},
        {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
        {"groupVersion": "apps.kruise.io/v1alpha1", "resources": [{"name": "clonesets", "kind": "CloneSet"}]}]"#;
    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-001/apis", apis);
    assert_eq!(code, 200, "{body}");
    wait_for("the CloneSet to reach member-001", Duration::from_secs(30), || has_clones(&out, "member-001"));
    // Logged at the first discovery and at the change.
    let changes = log
        .lock()
        .expect("lock")
        .lines()
        .filter(|l| l.contains("API list changed") && l.contains("member-001"))
        .count();
    assert_eq!(changes, 2, "{}", log.lock().expect("lock"));
    child.kill().expect("kill");
    let _ = child.wait();
}
