//! Progressive rollouts (issue 52) on the simulator with `--apply`: the daemon, a fleet of three
//! members whose GitOps agent applies the output, and a bad image made to crash-loop on the
//! canary member (`PUT /admin/clusters/{name}/images`). A good change goes through three stages,
//! each after `minSuccessTime` of health; a bad one halts after the canary with no file of a
//! later stage changed.

use std::time::Duration;

use crate::live::{WATCHED, daemon, setup_with};
use crate::support::*;

const MEMBERS: [&str; 3] = ["member-000", "member-001", "member-002"];

/// `api` duplicated to the three members, and its RolloutPolicy: canary member-000, then one
/// more, then the last; 3 s of health each.
fn app(image: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: api, namespace: shop}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}}}
    spec:
      containers: [{{name: c, image: "{image}", resources: {{requests: {{cpu: 50m, memory: 32Mi}}}}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {{name: api}}
spec:
  resourceSelectors:
  - {{apiVersion: apps/v1, kind: Deployment, name: api, namespace: shop}}
  placement:
    clusterAffinity: {{clusterNames: [member-000, member-001, member-002]}}
    replicaScheduling: {{replicaSchedulingType: Duplicated}}
---
apiVersion: fedsched.io/v1alpha1
kind: RolloutPolicy
metadata: {{name: api, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: api}}]
  stages:
  - {{name: canary, clusterAffinity: {{clusterNames: [member-000]}}}}
  - {{name: next, maxConcurrency: 1}}
  minSuccessTime: 3s
  progressDeadline: 2m
"#
    )
}

/// The image of api's file on a member ("-": none).
fn image(t: &crate::live::Setup, member: &str) -> String {
    let text =
        std::fs::read_to_string(t.s.out().join(member).join("shop/apps_deployment_api.yaml")).unwrap_or_default();
    text.lines().find_map(|l| l.split("image: ").nth(1)).unwrap_or("-").trim_matches('"').to_string()
}

fn images(t: &crate::live::Setup) -> Vec<String> {
    MEMBERS.iter().map(|m| image(t, m)).collect()
}

/// The rollout block of `fedsched status Deployment/shop/api -o json` (answered by the daemon).
fn rollout(t: &crate::live::Setup) -> serde_json::Value {
    let o = fedsched(&["status", "-c", t.config.to_str().expect("utf8"), "Deployment/shop/api", "-o", "json"]);
    serde_json::from_slice::<serde_json::Value>(&o.stdout).map(|d| d["rollout"].clone()).unwrap_or_default()
}

#[test]
fn a_good_change_goes_through_three_stages_and_a_bad_image_halts_after_the_canary() {
    let t = setup_with(3, true, WATCHED, &[]);
    t.s.write("apps/api.yaml", &app("api:1"));
    let (mut child, log) = daemon(&t, "info");
    let l = || log.lock().expect("lock").clone();
    wait_for("api:1 everywhere", Duration::from_secs(90), || images(&t) == ["api:1"; 3]);
    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-000/images", r#"{"crash": ["api:bad"]}"#);
    assert_eq!(code, 200, "{body}");

    // A good change: the canary first, the others on the previous version meanwhile.
    t.s.write("apps/api.yaml", &app("api:2"));
    wait_for("the canary", Duration::from_secs(60), || image(&t, "member-000") == "api:2");
    assert_eq!(images(&t)[2], "api:1", "the last stage before two gates:\n{}", l());
    let mut seen = Vec::new();
    wait_for("api:2 everywhere", Duration::from_secs(120), || {
        let now = images(&t);
        if seen.last() != Some(&now) {
            seen.push(now.clone());
        }
        now == ["api:2"; 3]
    });
    // Stage by stage: never the last member before the middle one.
    assert!(seen.iter().all(|s| s[2] != "api:2" || s[1] == "api:2"), "{seen:?}");
    wait_for("the rollout to complete", Duration::from_secs(60), || rollout(&t)["state"] == "Complete");

    // A bad image: the canary's pods crash-loop; halted, the later stages' files untouched.
    let file = |m: &str| std::fs::read(t.s.out().join(m).join("shop/apps_deployment_api.yaml")).expect("file");
    let before: Vec<Vec<u8>> = MEMBERS[1..].iter().map(|m| file(m)).collect();
    t.s.write("apps/api.yaml", &app("api:bad"));
    wait_for("the halt", Duration::from_secs(90), || rollout(&t)["state"] == "Halted");
    let r = rollout(&t);
    assert_eq!(r["stage"], "canary", "{r:#}");
    assert!(r["failures"]["clusters"]["member-000"].as_str().is_some_and(|w| w.contains("CrashLoopBackOff")), "{r:#}");
    // Longer than a gate: nothing moves.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(images(&t), ["api:bad", "api:2", "api:2"]);
    let after: Vec<Vec<u8>> = MEMBERS[1..].iter().map(|m| file(m)).collect();
    assert_eq!(before, after, "a later stage's file changed");
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(!l().contains("panicked"), "{}", l());
}
