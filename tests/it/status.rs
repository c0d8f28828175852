//! `fedsched status`: what the members run, on a simulated fleet whose GitOps agent applies the
//! output (`fedsched simulate --apply`): pods Ready after a delay (Progressing, then Healthy),
//! a cluster outage (Unknown), a node NotReady and a node that shrinks (Degraded), through the
//! running daemon's API and then from the stopped daemon's store; the same block in `explain`.

use std::time::Duration;

use crate::live::{WATCHED, daemon, setup_with};
use crate::support::*;

/// A Deployment duplicated to two members (its replicas do not follow their capacity).
const API: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: api}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: api, namespace: shop}
  placement:
    clusterAffinity: {clusterNames: [member-000, member-001]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
"#;

/// `fedsched status` with the given stuck threshold: `SLOW` while the test waits for pods that are
/// not Ready yet (a loaded machine observes them late, and they must not count as stuck), `QUICK`
/// where it waits for them to be stuck.
/// `ok`: the command answered, with the exit code of the state it printed (issue 49 item 11:
/// 0 Healthy, 3 Progressing, 4 Degraded, 5 Unknown; a list: its most severe state).
fn status(t: &crate::live::Setup, stuck: &str, args: &[&str]) -> (bool, String) {
    let config = t.config.to_str().expect("utf8");
    let mut all = vec!["status", "-c", config, "--stuck-after", stuck];
    all.extend_from_slice(args);
    let o = fedsched(&all);
    let out = text(&o.stdout);
    let json_state =
        serde_json::from_str::<serde_json::Value>(&out).ok().map(|d| d["state"].as_str().map(str::to_string));
    let state = ["Degraded", "Unknown", "Progressing"].into_iter().find(|s| match &json_state {
        Some(state) => state.as_deref() == Some(*s),
        None => out.lines().any(|l| l.ends_with(&format!(": {s}")) || l.contains(&format!(": {s} ("))),
    });
    let expected = match state {
        Some("Progressing") => 3,
        Some("Degraded") => 4,
        Some("Unknown") => 5,
        _ => 0,
    };
    let answered = !out.is_empty() && o.status.code() == Some(expected);
    (answered, out + &text(&o.stderr))
}

const SLOW: &str = "10m";
const QUICK: &str = "1s";

fn api_status(t: &crate::live::Setup, stuck: &str) -> serde_json::Value {
    let (ok, out) = status(t, stuck, &["Deployment/shop/api", "-o", "json"]);
    match ok {
        true => serde_json::from_str(&out).unwrap_or_default(),
        false => serde_json::json!({ "failed": out }),
    }
}

fn cluster<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["clusters"].as_array().and_then(|cs| cs.iter().find(|c| c["name"] == name)).unwrap_or(&serde_json::Value::Null)
}

/// Waits until `api`'s state is `state` (and `also` holds on the document); returns it. `Degraded`
/// is judged with the `QUICK` threshold, every other state with `SLOW`.
fn wait_state(
    t: &crate::live::Setup,
    state: &str,
    secs: u64,
    also: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        last = api_status(t, if state == "Degraded" { QUICK } else { SLOW });
        if last["state"] == state && also(&last) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("api did not become {state} in {secs} s; last status:\n{last:#}");
}

#[test]
fn status_follows_what_the_members_run() {
    // The pods turn Ready 20 s after they are bound: wide enough that a loaded machine (the
    // suite runs simulators side by side) still observes them not Ready first.
    let t = setup_with(2, true, WATCHED, &["--ready-after", "20s"]);
    t.s.write("apps/api.yaml", API);
    let (mut child, log) = daemon(&t, "info");
    let placed = || placements_of(&t.s.out()).unwrap_or_default();
    let started = std::time::Instant::now();
    while !placed().contains("\"api\"") {
        let l = log.lock().expect("lock").clone();
        assert!(started.elapsed() < Duration::from_secs(60), "api was not placed:\n{l}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Pods start not Ready: Progressing, with the reason and the desired replicas per cluster.
    let doc = wait_state(&t, "Progressing", 60, |d| {
        cluster(d, "member-000")["pending"]["reasons"]["ContainersNotReady"].as_u64() == Some(2)
    });
    assert_eq!(cluster(&doc, "member-000")["desired"], 2, "{doc:#}");
    assert_eq!(cluster(&doc, "member-000")["state"], "Progressing", "{doc:#}");
    // Then Ready: Healthy everywhere, and the list of workloads that are not Healthy is empty
    // of api.
    let doc = wait_state(&t, "Healthy", 120, |_| true);
    for c in ["member-000", "member-001"] {
        assert_eq!((cluster(&doc, c)["ready"].as_u64(), cluster(&doc, c)["missing"].as_u64()), (Some(2), Some(0)));
    }
    let (ok, out) = status(&t, SLOW, &["Deployment/shop/api"]);
    assert!(ok, "{out}");
    assert!(out.starts_with("apps/v1 Deployment/shop/api: Healthy\n"), "{out}");
    assert!(
        out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["member-000", "2", "2", "0", "0", "Ready"]),
        "{out}"
    );
    wait_for("no workload to be listed", Duration::from_secs(60), || {
        let (ok, out) = status(&t, SLOW, &[]);
        ok && out.starts_with("every workload is Healthy")
    });

    // member-001 goes down: Unknown, and listed.
    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-001/outage", r#"{"mode": "refused"}"#);
    assert_eq!(code, 200, "{body}");
    let doc = wait_state(&t, "Unknown", 60, |_| true);
    assert_eq!(cluster(&doc, "member-001")["state"], "Unknown", "{doc:#}");
    assert!(cluster(&doc, "member-001")["reason"].as_str().is_some_and(|r| r.contains("unreachable")), "{doc:#}");
    let (ok, out) = status(&t, SLOW, &[]);
    assert!(ok && out.contains("Deployment/shop/api: Unknown"), "{out}");
    let (code, body) = t.sim.http("DELETE", "/admin/clusters/member-001/outage", "");
    assert_eq!(code, 200, "{body}");
    wait_state(&t, "Healthy", 120, |_| true);

    // The nodes of member-000 go NotReady: its pods are not Ready for longer than 1 s.
    let nodes = t.sim.nodes("member-000");
    for n in &nodes {
        let (code, body) =
            t.sim.http("PUT", &format!("/admin/clusters/member-000/nodes/{n}/ready"), r#"{"ready": false}"#);
        assert_eq!(code, 200, "{body}");
    }
    let doc = wait_state(&t, "Degraded", 60, |d| {
        cluster(d, "member-000")["pending"]["reasons"]["NodeNotReady"].as_u64() == Some(2)
    });
    let reason = cluster(&doc, "member-000")["reason"].as_str().unwrap_or("").to_string();
    assert!(reason.contains("not Ready for longer than 1s"), "{doc:#}");
    for n in &nodes {
        let (code, body) =
            t.sim.http("PUT", &format!("/admin/clusters/member-000/nodes/{n}/ready"), r#"{"ready": true}"#);
        assert_eq!(code, 200, "{body}");
    }
    wait_state(&t, "Healthy", 120, |_| true);

    // member-001 shrinks: its pods no longer fit anywhere there and stay Unschedulable.
    for n in t.sim.nodes("member-001") {
        let (code, body) =
            t.sim.http("PUT", &format!("/admin/clusters/member-001/nodes/{n}/allocatable"), r#"{"cpu": "50m"}"#);
        assert_eq!(code, 200, "{body}");
    }
    let doc = wait_state(&t, "Degraded", 60, |d| {
        let c = cluster(d, "member-001");
        c["unschedulable"]["count"].as_u64() == Some(2)
            && c["reason"].as_str().is_some_and(|r| r.contains("Unschedulable for longer"))
    });
    let (ok, out) = status(&t, QUICK, &["Deployment/shop/api"]);
    assert!(
        ok && out.contains("Unschedulable=2") && out.contains("Unschedulable for longer than 1s"),
        "{out}\n{doc:#}"
    );
    // explain carries the same block.
    let o = fedsched(&["explain", "-c", t.config.to_str().expect("utf8"), "Deployment/shop/api", "-o", "json"]);
    let ex: serde_json::Value = serde_json::from_slice(&o.stdout).expect("explain json");
    assert_eq!(cluster(&ex["status"], "member-001")["unschedulable"]["count"], 2, "{ex:#}");

    // The daemon stops: status reads its state directory.
    child.kill().expect("kill");
    let _ = child.wait();
    let (ok, out) = status(&t, QUICK, &["Deployment/shop/api"]);
    assert!(ok && out.contains("Deployment/shop/api: Degraded"), "{out}");
    let (ok, out) = status(&t, QUICK, &["Deployment/shop/none"]);
    assert!(!ok && out.contains("no placement"), "{out}");
    let l = log.lock().expect("lock").clone();
    assert!(!l.contains("panicked"), "{l}");
}
