//! Failover, descheduling and move-back (docs/guide/failures.md).
//!
//! On the in-process daemon with a manual clock (no sleeps): a member lost for the toleration
//! has its workload evicted, the files it left are kept until the replacement runs and then
//! purged, and the workload moves back once the member has been healthy for `stable_for`;
//! every move is in the history once, and in the metrics; a member flapping every 20 s for 10
//! minutes moves nothing. On the simulator with `--apply` (the real daemon, real time, short
//! `[reschedule]` durations, waiting on conditions): an outage moves the workload away,
//! purges after the replacement is Ready and moves it back; 3 of 5 members failing at once
//! trip the storm guard (nothing moves, it says so); a member that shrinks has its
//! Unschedulable replicas moved within `unschedulable_after` and not sent back.

use fedsched::daemon::Control;

use crate::daemon::InProcess;
use crate::support::*;

const POLICY: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: shop
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        dynamicWeight: AvailableReplicas
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: settings
  namespace: shop
spec:
  resourceSelectors:
  - {apiVersion: v1, kind: ConfigMap, name: settings}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: registry.example.com/web:1
        resources: {requests: {cpu: "1", memory: 1Gi}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data: {mode: prod}
"#;

fn clusters(m1_ready: &str) -> String {
    ["m1", "m2", "m3"]
        .iter()
        .map(|name| {
            let status = if *name == "m1" { m1_ready } else { "True" };
            format!(
                "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\nspec:\n  syncMode: Push\n\
                 status:\n  conditions:\n  - {{type: Ready, status: \"{status}\", reason: KubeletDown}}\n  resourceSummary:\n\
                 \x20   allocatable: {{cpu: \"20\", memory: 80Gi, pods: \"110\"}}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

fn replicas(s: &Scratch, cluster: &str) -> Option<i64> {
    let text = std::fs::read_to_string(s.out().join(cluster).join("shop/apps_deployment_web.yaml")).ok()?;
    text.lines().find_map(|l| l.trim().strip_prefix("replicas: ")).and_then(|v| v.parse().ok())
}

fn history_notes(s: &Scratch) -> Vec<String> {
    history_notes_of(s, "Deployment/shop/web")
}

#[test]
fn outage_evicts_after_the_toleration_purges_after_the_replacement_and_moves_back() {
    let s = Scratch::new();
    s.write("apps.yaml", POLICY);
    s.write("clusters.yaml", &clusters("True"));
    let mut d = InProcess::start(&s, "", false);
    d.passes(1);
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(2), Some(2)));

    // m1 goes NotReady: nothing moves within the toleration (300 s by default).
    s.write("clusters.yaml", &clusters("False"));
    d.clock.advance_ms(60_000);
    d.send(Control::PolicyChanged);
    d.passes(2);
    d.clock.advance_ms(290_000);
    d.send(Control::Tick);
    d.passes(3);
    assert_eq!(replicas(&s, "m1"), Some(2), "evicted before the toleration");

    // 300 s after it went: evicted; its file stays until the replacement runs.
    d.clock.advance_ms(10_000);
    d.send(Control::Tick);
    let v = d.passes(4);
    assert_eq!(replicas(&s, "m2").unwrap_or(0) + replicas(&s, "m3").unwrap_or(0), 6, "{:?}", v.last_pass);
    assert_eq!(replicas(&s, "m1"), Some(2), "graceful eviction keeps the old copy");
    assert_eq!(d.metric("fedsched_evictions_total{cluster=\"m1\",reason=\"cluster-not-ready\"}"), Some(1.0));
    assert_eq!(d.metric("fedsched_workloads{state=\"pending_failover\"}"), Some(1.0));

    // Offline members count their replicas as running: purged on the next pass.
    d.clock.advance_ms(10_000);
    d.send(Control::Tick);
    d.passes(5);
    assert_eq!(replicas(&s, "m1"), None, "purged");
    assert!(
        s.out().join("m1/shop/core_configmap_settings.yaml").exists(),
        "{:?}",
        tree(&s.out()).keys().collect::<Vec<_>>()
    );
    assert_eq!(d.metric("fedsched_workloads{state=\"pending_failover\"}"), Some(0.0));

    // m1 recovers: nothing returns before stable_for (5 min), then the workload moves back.
    s.write("clusters.yaml", &clusters("True"));
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    d.passes(6);
    assert_eq!(replicas(&s, "m1"), None, "moved back before stable_for");
    d.clock.advance_ms(240_000);
    d.send(Control::Tick);
    d.passes(7);
    assert_eq!(replicas(&s, "m1"), None, "moved back before stable_for");
    d.clock.advance_ms(60_000);
    d.send(Control::Tick);
    d.passes(8);
    // Make before break: m2 and m3 keep their 3 while m1's 2 start (offline members count
    // their replicas as running: released on the next pass).
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(3), Some(3)));
    d.clock.advance_ms(10_000);
    d.send(Control::Tick);
    d.passes(9);
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(2), Some(2)));
    // Quiet afterwards.
    d.clock.advance_ms(60_000);
    d.send(Control::Tick);
    d.passes(10);
    assert_eq!(replicas(&s, "m1"), Some(2));
    d.stop();

    let notes = history_notes(&s);
    let count = |needle: &str| notes.iter().filter(|n| n.contains(needle)).count();
    assert_eq!(count("evicted 2 replicas from m1"), 1, "{notes:#?}");
    assert_eq!(count("purged the files left on m1"), 1, "{notes:#?}");
    assert_eq!(count("moved back to m1"), 1, "{notes:#?}");
    for c in ["m2", "m3"] {
        let kept = format!("kept the previous files on {c} (3 replicas) until the new placement is Ready (move-back");
        assert_eq!(count(&kept), 1, "{notes:#?}");
        assert_eq!(count(&format!("released the previous files kept on {c} for the move-back")), 1, "{notes:#?}");
    }
    let eviction = notes.iter().find(|n| n.contains("evicted")).cloned().unwrap_or_default();
    assert!(
        eviction.contains("NotReady") && eviction.contains("toleration 5m of cluster.karmada.io/not-ready"),
        "{eviction}"
    );
}

/// Issue 46, invariant 4: a member seen NotReady gets no new replicas from that moment
/// (Karmada's `NoSchedule` taint on detection), long before its toleration: a scale-up 6 → 12
/// five seconds after the loss leaves it its 2 and puts the 6 new ones on the Ready members;
/// after the toleration it is evicted as before.
#[test]
fn a_member_not_ready_gets_no_new_replicas_before_its_toleration() {
    let s = Scratch::new();
    s.write("apps.yaml", POLICY);
    s.write("clusters.yaml", &clusters("True"));
    let mut d = InProcess::start(&s, "", false);
    d.passes(1);
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(2), Some(2)));
    s.write("clusters.yaml", &clusters("False"));
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    d.passes(2);
    s.write("apps.yaml", &POLICY.replace("replicas: 6", "replicas: 12"));
    d.clock.advance_ms(5_000);
    d.send(Control::PolicyChanged);
    d.passes(3);
    assert_eq!(replicas(&s, "m1"), Some(2), "the member not Ready got new replicas");
    assert_eq!(replicas(&s, "m2").unwrap_or(0) + replicas(&s, "m3").unwrap_or(0), 10);
    // Ready again: it takes its share of the next scale-up.
    s.write("clusters.yaml", &clusters("True"));
    s.write("apps.yaml", &POLICY.replace("replicas: 6", "replicas: 15"));
    d.clock.advance_ms(5_000);
    d.send(Control::PolicyChanged);
    d.passes(4);
    assert!(replicas(&s, "m1").is_some_and(|r| r > 2), "{:?}", replicas(&s, "m1"));
    d.stop();
}

#[test]
fn a_member_flapping_every_20s_for_10_minutes_moves_nothing() {
    let s = Scratch::new();
    s.write("apps.yaml", POLICY);
    s.write("clusters.yaml", &clusters("True"));
    let mut d = InProcess::start(&s, "", false);
    d.passes(1);
    let before = tree(&s.out());
    let mut n = 1;
    for i in 0..30 {
        s.write("clusters.yaml", &clusters(if i % 2 == 0 { "False" } else { "True" }));
        d.clock.advance_ms(20_000);
        d.send(Control::PolicyChanged);
        n += 1;
        d.passes(n);
    }
    // And a timer pass after it.
    d.clock.advance_ms(20_000);
    d.send(Control::Tick);
    d.passes(n + 1);
    let mut after = tree(&s.out());
    let mut before = before;
    for t in [&mut before, &mut after] {
        t.remove(".fedsched/lock");
    }
    assert_eq!(before, after, "the output changed");
    assert_eq!(d.metric("fedsched_evictions_total{cluster=\"m1\",reason=\"cluster-not-ready\"}"), None);
    d.stop();
    let notes = history_notes(&s);
    assert!(notes.iter().all(|n| !n.contains("evicted") && !n.contains("moved back")), "{notes:#?}");
}

/// The simulator with `--apply` (its agent runs what the output says): a member whose API
/// fails is evicted after the toleration, its file stays until the replacement pods are
/// Ready on the others, then goes; when it answers again it gets the workload back after
/// `stable_for`. Real time with short `[reschedule]` durations: the test waits on conditions.
#[test]
fn simulated_outage_moves_the_workload_away_and_back() {
    use std::time::Duration;

    let t = crate::live::setup(3, true, "timeout = \"2s\"\nread_timeout = \"1s\"\nmax_backoff = \"1s\"");
    let mut cfg = std::fs::read_to_string(&t.config).expect("config");
    cfg.push_str(
        "\n[reschedule]\ntoleration = \"3s\"\nstable_for = \"4s\"\nmin_stay = \"1s\"\ngrace_period = \"10m\"\n",
    );
    std::fs::write(&t.config, cfg).expect("config");
    let (mut child, log) = crate::live::daemon(&t, "info");
    let web = |c: &str| t.s.out().join(c).join("shop/apps_deployment_web.yaml");
    let members = ["member-000", "member-001", "member-002"];
    wait_for("the first live reconcile", Duration::from_secs(30), || members.iter().all(|c| web(c).exists()));

    t.sim.fault("member-000", r#"{"status": 503}"#);
    let evicted = || {
        let l = log.lock().map(|l| l.clone()).unwrap_or_default();
        l.contains("evicted") && l.contains("member-000")
    };
    wait_for("the eviction", Duration::from_secs(40), evicted);
    wait_for("the purge after the replacement is Ready", Duration::from_secs(40), || !web("member-000").exists());
    assert!(web("member-001").exists() && web("member-002").exists());
    let left: Vec<String> = tree(&t.s.out().join("member-000")).into_keys().collect();
    assert!(left.iter().any(|f| f.contains("namespace_shop")), "the namespace stays: {left:?}");

    t.sim.fault("member-000", "{}");
    wait_for("the move back after stable_for", Duration::from_secs(40), || web("member-000").exists());
    // The record stage follows the publish: wait for the pass to record before stopping it.
    wait_for("the move back recorded", Duration::from_secs(20), || {
        text(&t.s.cmd("history", &["Deployment/shop/web", "-o", "json"]).stdout).contains("moved back to member-000")
    });
    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().map(|l| l.clone()).unwrap_or_default();
    assert!(!l.contains("panicked") && !l.contains("storm guard"), "{l}");
    let h = t.s.cmd("history", &["Deployment/shop/web", "-o", "json"]);
    assert!(h.status.success(), "{}", text(&h.stderr));
    let notes = text(&h.stdout);
    for needle in ["evicted", "purged the files left on member-000", "moved back to member-000"] {
        assert_eq!(notes.matches(needle).count(), 1, "{needle}: {notes}");
    }
}

/// 3 of 5 simulated members fail at once: fedsched assumes its own view is partitioned and
/// evicts nothing, saying so on every pass; when they answer again the guard releases.
#[test]
fn simulated_storm_moves_nothing_and_says_so() {
    use std::time::Duration;

    let t = crate::live::setup(5, true, "timeout = \"2s\"\nread_timeout = \"1s\"\nmax_backoff = \"1s\"");
    let mut cfg = std::fs::read_to_string(&t.config).expect("config");
    cfg.push_str("\n[reschedule]\ntoleration = \"3s\"\nstable_for = \"4s\"\nmin_stay = \"1s\"\n");
    std::fs::write(&t.config, cfg).expect("config");
    let (mut child, log) = crate::live::daemon(&t, "info");
    let members = ["member-000", "member-001", "member-002", "member-003", "member-004"];
    let placed = || members.iter().filter(|c| t.s.out().join(c).join("shop/apps_deployment_web.yaml").exists()).count();
    // The whole first publish, not only its first files: a snapshot taken while the journal is
    // still being applied (the last clusters' kustomizations not yet renamed into place) would
    // differ from the finished output.
    let publishing = || t.s.out().join(".fedsched/journal.json").exists();
    wait_for("the first live reconcile", Duration::from_secs(30), || placed() >= 3 && !publishing());
    let snapshot = || {
        let mut t = tree(&t.s.out());
        t.retain(|k, _| !k.starts_with(".fedsched"));
        t
    };
    let before = snapshot();
    for m in &members[..3] {
        t.sim.fault(m, r#"{"status": 503}"#);
    }
    // Every pass while it holds warns; eight passes are well past the 3 s toleration.
    wait_for("the storm guard to hold for eight passes", Duration::from_secs(60), || {
        log.lock().map(|l| l.matches("failover suppressed by the storm guard").count() >= 8).unwrap_or(false)
    });
    assert_eq!(snapshot(), before, "the output changed during the storm");
    for m in &members[..3] {
        t.sim.fault(m, "{}");
    }
    wait_for("the storm guard to release", Duration::from_secs(30), || {
        log.lock().map(|l| l.contains("storm guard released")).unwrap_or(false)
    });
    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().map(|l| l.clone()).unwrap_or_default();
    assert!(!l.contains("evicted") && !l.contains("panicked"), "{l}");
    assert!(l.contains("storm guard: 3 of 5 live members"), "{l}");
}

/// A simulated member shrinks until the workload's pods no longer fit: they stay
/// Unschedulable, and after `unschedulable_after` they are rescheduled on the others; the
/// member's capacity is distrusted, so they do not come back while it stays small.
#[test]
fn simulated_unschedulable_replicas_move_within_unschedulable_after() {
    use std::time::Duration;

    let t = crate::live::setup(3, true, "timeout = \"2s\"\nread_timeout = \"1s\"\nmax_backoff = \"1s\"");
    let mut cfg = std::fs::read_to_string(&t.config).expect("config");
    cfg.push_str("\n[reschedule]\nunschedulable_after = \"3s\"\nmin_stay = \"1s\"\n");
    std::fs::write(&t.config, cfg).expect("config");
    let (mut child, log) = crate::live::daemon(&t, "info");
    let web = |c: &str| t.s.out().join(c).join("shop/apps_deployment_web.yaml");
    let members = ["member-000", "member-001", "member-002"];
    wait_for("the first live reconcile", Duration::from_secs(30), || members.iter().all(|c| web(c).exists()));
    for n in t.sim.nodes("member-001") {
        let (code, body) =
            t.sim.http("PUT", &format!("/admin/clusters/member-001/nodes/{n}/allocatable"), r#"{"cpu": "50m"}"#);
        assert_eq!(code, 200, "{body}");
    }
    wait_for("the reschedule off member-001", Duration::from_secs(60), || {
        log.lock().map(|l| l.contains("Unschedulable replicas off member-001")).unwrap_or(false)
    });
    wait_for("member-001's file to go", Duration::from_secs(20), || !web("member-001").exists());
    // It stays away while its capacity is what it was judged by.
    let mark = log.lock().map(|l| l.len()).unwrap_or(0);
    wait_for("five more passes", Duration::from_secs(30), || {
        log.lock().map(|l| l[mark..].matches("reconcile done").count() >= 5).unwrap_or(false)
    });
    assert!(!web("member-001").exists(), "sent straight back");
    child.kill().expect("kill");
    let _ = child.wait();
    let h = t.s.cmd("history", &["Deployment/shop/web", "-o", "json"]);
    assert!(h.status.success(), "{}", text(&h.stderr));
    let notes = text(&h.stdout);
    assert_eq!(notes.matches("Unschedulable replicas off member-001").count(), 1, "{notes}");
}

/// Application failover on the simulator with `--apply`: the nodes of one member go NotReady,
/// so the workload's pods there are not Ready; after `decisionConditions.tolerationSeconds` the
/// workload is evicted from that member (the member itself stays Ready), its file stays until
/// the replacement pods are Ready on the others, then goes. Recorded once each.
#[test]
fn simulated_application_failover_moves_pods_not_ready_for_the_toleration() {
    use std::time::Duration;

    let t = crate::live::setup(3, true, crate::live::WATCHED);
    let app = t.s.policies().join("apps/web.yaml");
    let text_of = std::fs::read_to_string(&app).expect("app");
    let with_failover = text_of.replace(
        "      weightPreference: {dynamicWeight: AvailableReplicas}\n",
        "      weightPreference: {dynamicWeight: AvailableReplicas}\n  propagateDeps: true\n  failover:\n    application:\n\
         \x20     decisionConditions: {tolerationSeconds: 3}\n      purgeMode: Gracefully\n\
         \x20     gracePeriodSeconds: 600\n",
    );
    assert_ne!(with_failover, text_of, "the policy was not extended");
    std::fs::write(&app, with_failover).expect("app");
    let mut cfg = std::fs::read_to_string(&t.config).expect("config");
    cfg.push_str("\n[reschedule]\nmin_stay = \"1s\"\nstable_for = \"10m\"\n");
    std::fs::write(&t.config, cfg).expect("config");
    let (mut child, log) = crate::live::daemon(&t, "info");
    let web = |c: &str| t.s.out().join(c).join("shop/apps_deployment_web.yaml");
    let members = ["member-000", "member-001", "member-002"];
    let start = std::time::Instant::now();
    while !members.iter().all(|c| web(c).exists()) {
        let l = log.lock().map(|l| l.clone()).unwrap_or_default();
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no first live reconcile: {}",
            &l[l.len().saturating_sub(3000)..]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let logged = |needle: &str| log.lock().map(|l| l.contains(needle)).unwrap_or(false);
    assert!(!logged("application-failover"), "evicted before any pod failed");
    for n in t.sim.nodes("member-000") {
        let (code, body) =
            t.sim.http("PUT", &format!("/admin/clusters/member-000/nodes/{n}/ready"), r#"{"ready": false}"#);
        assert_eq!(code, 200, "{body}");
    }
    wait_for("the application failover off member-000", Duration::from_secs(60), || {
        logged("from member-000 (application-failover")
    });
    wait_for("the purge after the replacement is Ready", Duration::from_secs(60), || !web("member-000").exists());
    assert!(web("member-001").exists() && web("member-002").exists());
    two_more_passes(&log);
    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().map(|l| l.clone()).unwrap_or_default();
    assert!(!l.contains("panicked") && !l.contains("storm guard"), "{l}");
    let notes = history_notes_of(&t.s, "Deployment/shop/web");
    let count = |needle: &str| notes.iter().filter(|n| n.contains(needle)).count();
    assert_eq!(count("from member-000 (application-failover"), 1, "{notes:#?}");
    assert_eq!(count("purged the files left on member-000"), 1, "{notes:#?}");
    assert!(notes.iter().all(|n| !n.contains("member-001") || !n.contains("evicted")), "{notes:#?}");
}

/// A ClusterTaintPolicy on the simulator: the member's Ready condition as fedsched observes it
/// (`Unknown` while its API fails) adds a NoExecute taint nobody tolerates, so the workload
/// leaves at once — long before the 10 min toleration of the built-in unreachable taint — and
/// when the member answers again (`Ready` `True`: removeOnConditions) the taint goes and the
/// workload moves back after `stable_for`.
#[test]
fn simulated_cluster_taint_policy_evicts_from_observed_conditions() {
    use std::time::Duration;

    let t = crate::live::setup(3, true, "timeout = \"5s\"\nread_timeout = \"2s\"\nmax_backoff = \"1s\"");
    t.s.write(
        "taints.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata: {name: lost}\nspec:\n\
         \x20 addOnConditions: [{conditionType: Ready, operator: In, statusValues: [\"Unknown\", \"False\"]}]\n\
         \x20 removeOnConditions: [{conditionType: Ready, operator: In, statusValues: [\"True\"]}]\n\
         \x20 taints: [{key: example.com/lost, effect: NoExecute}]\n",
    );
    let mut cfg = std::fs::read_to_string(&t.config).expect("config");
    cfg.push_str("\n[reschedule]\ntoleration = \"10m\"\nstable_for = \"3s\"\nmin_stay = \"1s\"\n");
    std::fs::write(&t.config, cfg).expect("config");
    let (mut child, log) = crate::live::daemon(&t, "info");
    let web = |c: &str| t.s.out().join(c).join("shop/apps_deployment_web.yaml");
    let members = ["member-000", "member-001", "member-002"];
    wait_for("the first live reconcile", Duration::from_secs(30), || members.iter().all(|c| web(c).exists()));
    let logged = |needle: &str| log.lock().map(|l| l.contains(needle)).unwrap_or(false);
    t.sim.fault("member-000", r#"{"status": 503}"#);
    wait_for("the taint's eviction", Duration::from_secs(40), || logged("from member-000 (cluster-tainted"));
    wait_for("the purge", Duration::from_secs(40), || !web("member-000").exists());
    t.sim.fault("member-000", "{}");
    wait_for("the move back once the taint is gone", Duration::from_secs(40), || web("member-000").exists());
    two_more_passes(&log);
    child.kill().expect("kill");
    let _ = child.wait();
    let notes = history_notes_of(&t.s, "Deployment/shop/web");
    let count = |needle: &str| notes.iter().filter(|n| n.contains(needle)).count();
    // A taint nobody tolerates evicts on every spell: on a loaded machine a poll that times out
    // is one more spell (one more eviction, one more move-back), so the counts are at least one
    // and go in pairs.
    let (evicted, back) =
        (count("tainted example.com/lost:NoExecute by ClusterTaintPolicy lost"), count("moved back to member-000"));
    assert!(evicted >= 1 && back >= 1 && evicted.abs_diff(back) <= 1, "{notes:#?}");
    assert_eq!(count("unreachable:NoExecute"), 0, "the built-in toleration fired: {notes:#?}");
}

/// The mass-deletion guard and moves (docs/guide/failures.md, the guard and moves): removals of
/// files whose inputs went are held by the ratio, and a workload moving through a held cluster
/// moves whole or not at all; a decision that moves a workload off a cluster (here emptying
/// it) is not held by the ratio.
#[test]
fn the_guard_holds_a_move_whole_and_never_a_decisions_removal() {
    let policies = |web_on: &str| {
        format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: web, namespace: default}}\n\
             spec:\n  resourceSelectors:\n  - {{apiVersion: apps/v1, kind: Deployment, name: web}}\n  placement:\n\
             \x20   clusterAffinity: {{clusterNames: [{web_on}]}}\n---\n\
             apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: cms, namespace: default}}\n\
             spec:\n  resourceSelectors:\n  - {{apiVersion: v1, kind: ConfigMap}}\n  placement:\n\
             \x20   clusterAffinity: {{clusterNames: [m1, m2]}}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: default}}\nspec:\n  replicas: 2\n\
             \x20 selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n\
             \x20   spec: {{containers: [{{name: web, image: registry.example.com/web:1}}]}}\n"
        )
    };
    let cm = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default}}\ndata: {{k: v}}\n")
    };
    let s = Scratch::new();
    s.write("clusters.yaml", &clusters("True"));
    s.write("apps.yaml", &policies("m1"));
    s.write("a.yaml", &cm("a"));
    s.write("b.yaml", &cm("b"));
    let render = |extra: &[&str]| {
        let out = s.out();
        let mut args = vec!["--out", out.to_str().expect("utf8")];
        args.extend_from_slice(extra);
        let out = s.cmd("render", &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let web = |c: &str| s.out().join(c).join("default/apps_deployment_web.yaml").exists();
    render(&[]);
    assert!(web("m1") && !web("m3"));

    // a and b go (2 of m1's 3 objects, 2 of m2's 2: both held) while web moves m1 → m3: its
    // addition on m3 waits for its removal from m1.
    std::fs::remove_file(s.policies().join("a.yaml")).expect("rm");
    std::fs::remove_file(s.policies().join("b.yaml")).expect("rm");
    s.write("apps.yaml", &policies("m3"));
    let err = render(&[]);
    assert!(err.contains("held: m1"), "{err}");
    assert!(web("m1") && !web("m3"), "the workload runs twice: {err}");
    assert!(err.contains("held whole: Deployment/default/web: its changes on m3 wait for held m1"), "{err}");
    // Not published, so not recorded: the history's last placement is still m1's.
    let notes = history_notes_of(&s, "Deployment/default/web");
    assert!(notes.iter().all(|n| !n.contains("m3")), "{notes:#?}");
    // Held again on the next pass; confirmed, the move goes whole.
    render(&[]);
    assert!(web("m1") && !web("m3"));
    render(&["--allow-mass-delete"]);
    assert!(!web("m1") && web("m3"));

    // web leaves m3, its only object: a decision's removal, not held by the ratio.
    s.write("apps.yaml", &policies("m2"));
    let err = render(&[]);
    assert!(!err.contains("held"), "{err}");
    assert!(!web("m3") && web("m2"));
    assert!(s.out().join("m3/kustomization.yaml").exists());
}

/// Issue 46, bug 3: under the mass-deletion guard a workload's change is published whole or
/// not at all. m1 holds 9 objects (web's 2 replicas, the settings, the shop Namespace, 6
/// ConfigMaps); it is lost at the moment the 6 ConfigMaps' templates are deleted: their
/// removal (6 of 9) holds m1, and so their removal from m2 and m3 (a deletion is applied to
/// every cluster or none). After the toleration web is evicted from m1, whose copy the hold
/// would keep: its replacement waits too (never 8 replicas of 6), and nothing of it is
/// recorded while held (the store keeps what was published). `allow_mass_delete` applies it
/// all: the eviction is recorded then, and its purge once the replacement is Ready.
#[test]
fn the_guard_holds_a_failover_and_a_deletion_whole() {
    let names: Vec<String> = (0..6).map(|i| format!("gone-{i}")).collect();
    let stay: Vec<String> = (0..6).map(|i| format!("stay-{i}")).collect();
    let selectors = |names: &[String]| {
        names.iter().map(|n| format!("  - {{apiVersion: v1, kind: ConfigMap, name: {n}}}\n")).collect::<String>()
    };
    let cm = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: shop}}\ndata: {{k: v}}\n")
    };
    let s = Scratch::new();
    s.write("apps.yaml", POLICY);
    s.write("clusters.yaml", &clusters("True"));
    s.write(
        "gone.yaml",
        &format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: gone, namespace: shop}}\n\
             spec:\n  resourceSelectors:\n{}",
            selectors(&names)
        ),
    );
    // m2 and m3 hold 6 more objects each: removing 6 of their 15 is not held.
    s.write(
        "stay.yaml",
        &format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: stay, namespace: shop}}\n\
             spec:\n  resourceSelectors:\n{}  placement:\n    clusterAffinity: {{clusterNames: [m2, m3]}}\n",
            selectors(&stay)
        ),
    );
    for n in names.iter().chain(&stay) {
        s.write(&format!("cm-{n}.yaml"), &cm(n));
    }
    let mut d = InProcess::start(&s, "", false);
    d.passes(1);
    let web = || ["m1", "m2", "m3"].map(|c| replicas(&s, c));
    let gone_on = |c: &str| {
        names.iter().filter(|n| s.out().join(c).join(format!("shop/core_configmap_{n}.yaml")).exists()).count()
    };
    assert_eq!(web(), [Some(2), Some(2), Some(2)]);
    assert_eq!(["m1", "m2", "m3"].map(gone_on), [6, 6, 6]);

    // m1 lost, the 6 templates deleted at the same time: held on m1, so on m2 and m3 too.
    s.write("clusters.yaml", &clusters("False"));
    for n in &names {
        std::fs::remove_file(s.policies().join(format!("cm-{n}.yaml"))).expect("rm");
    }
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    let v = d.passes(2);
    assert_eq!(["m1", "m2", "m3"].map(gone_on), [6, 6, 6], "a deletion half applied: {:?}", v.last_pass);

    // Past the toleration: evicted from m1, whose copy stays (held); the additions wait.
    d.clock.advance_ms(300_000);
    d.send(Control::Tick);
    d.passes(3);
    assert_eq!(web(), [Some(2), Some(2), Some(2)], "the eviction's additions went out while m1 is held");
    // The purge falls due (offline members count as Ready) and is held: not recorded.
    for n in 4..6 {
        d.clock.advance_ms(10_000);
        d.send(Control::Tick);
        d.passes(n);
        assert_eq!(web().iter().map(|r| r.unwrap_or(0)).sum::<i64>(), 6, "{n}: {:?}", web());
    }
    let notes = history_notes(&s);
    let count = |notes: &[String], needle: &str| notes.iter().filter(|n| n.contains(needle)).count();
    // Evicted, but not published: the history says its changes wait, not that it was evicted.
    assert_eq!(
        count(&notes, "evicted 2 replicas from m1"),
        0,
        "an eviction recorded that was not published: {notes:#?}"
    );
    assert_eq!(count(&notes, "purged the files left on m1"), 0, "a purge recorded that never happened: {notes:#?}");
    // Nor is the held move itself: the hold is the report's and the log's.
    assert_eq!(count(&notes, "wait for held"), 0, "{notes:#?}");
    assert_eq!(d.metric("fedsched_workloads{state=\"pending_failover\"}"), Some(1.0));
    let removed = |s: &Scratch| count(&history_notes_of(s, "ConfigMap/shop/gone-0"), "template removed");
    assert_eq!(removed(&s), 0, "a removal recorded that was not published");

    // Confirmed: the deletion everywhere, the move whole.
    let config = s.dir.path().join("fedsched.toml");
    let text = std::fs::read_to_string(&config).expect("config") + "[publish]\nallow_mass_delete = true\n";
    std::fs::write(&config, text).expect("config");
    d.clock.advance_ms(10_000);
    d.send(Control::Reload);
    d.passes(6);
    assert_eq!(["m1", "m2", "m3"].map(gone_on), [0, 0, 0]);
    // The eviction is published now (its grace period counts from here), the purge follows
    // once the replacement is Ready.
    assert_eq!(web(), [Some(2), Some(3), Some(3)]);
    d.clock.advance_ms(10_000);
    d.send(Control::Tick);
    d.passes(7);
    assert_eq!(web(), [None, Some(3), Some(3)]);
    d.stop();
    let notes = history_notes(&s);
    assert_eq!(count(&notes, "purged the files left on m1"), 1, "{notes:#?}");
    assert_eq!(count(&notes, "evicted 2 replicas from m1"), 1, "recorded once published: {notes:#?}");
    let (evicted, purged) = (
        notes.iter().position(|n| n.contains("evicted 2 replicas from m1")),
        notes.iter().position(|n| n.contains("purged the files left on m1")),
    );
    assert!(evicted < purged, "{notes:#?}");
    assert_eq!(removed(&s), 1);
}

/// Waits for two more passes to finish (a pass publishes before it records: a test that stops
/// the daemon right after seeing a file change may stop it before the history has the move).
fn two_more_passes(log: &std::sync::Arc<std::sync::Mutex<String>>) {
    let mark = log.lock().map(|l| l.len()).unwrap_or(0);
    wait_for("two more passes", std::time::Duration::from_secs(30), || {
        log.lock().map(|l| l[mark..].matches("reconcile done").count() >= 2).unwrap_or(false)
    });
}

fn history_notes_of(s: &Scratch, workload: &str) -> Vec<String> {
    let h = s.cmd("history", &[workload, "-o", "json"]);
    assert!(h.status.success(), "{}", text(&h.stderr));
    let v: serde_json::Value = serde_json::from_slice(&h.stdout).expect("json");
    v.as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["notes"].as_array().cloned().unwrap_or_default())
        .map(|n| n.as_str().unwrap_or_default().to_string())
        .collect()
}

const TAINT_POLICY: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: network-down
spec:
  targetClusters: {clusterNames: [m1, m2]}
  addOnConditions:
  - {conditionType: NetworkAvailable, operator: In, statusValues: ["False"]}
  removeOnConditions:
  - {conditionType: NetworkAvailable, operator: In, statusValues: ["True"]}
  taints:
  - {key: example.com/network-down, effect: NoExecute}
"#;

/// Members whose `NetworkAvailable` condition is `network` for m1, `True` for the others.
fn clusters_with_network(network: &str) -> String {
    ["m1", "m2", "m3"]
        .iter()
        .map(|name| {
            let status = if *name == "m1" { network } else { "True" };
            format!(
                "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\nspec:\n  syncMode: Push\n\
                 status:\n  conditions:\n  - {{type: Ready, status: \"True\"}}\n  - {{type: NetworkAvailable, status: \"{status}\"}}\n\
                 \x20 resourceSummary:\n    allocatable: {{cpu: \"20\", memory: 80Gi, pods: \"110\"}}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// A ClusterTaintPolicy taints a member from its conditions: its NoExecute taint evicts the
/// workload that does not tolerate it (the filters keep it off the member), the member keeps
/// the taint while neither condition list matches, and loses it on removeOnConditions — then
/// the workload moves back.
#[test]
fn a_cluster_taint_policy_taints_from_conditions_evicts_and_lets_back() {
    let s = Scratch::new();
    s.write("apps.yaml", POLICY);
    s.write("taints.yaml", TAINT_POLICY);
    s.write("clusters.yaml", &clusters_with_network("True"));
    let mut d = InProcess::start(&s, "", false);
    d.passes(1);
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(2), Some(2)));

    // NetworkAvailable False on m1: tainted, and the workload (no toleration) evicted at once.
    s.write("clusters.yaml", &clusters_with_network("False"));
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    d.passes(2);
    assert_eq!(replicas(&s, "m2").unwrap_or(0) + replicas(&s, "m3").unwrap_or(0), 6);
    assert_eq!(d.metric("fedsched_evictions_total{cluster=\"m1\",reason=\"cluster-tainted\"}"), Some(1.0));
    // The condition disappears (neither list matches): the taint stays, nothing returns.
    s.write(
        "clusters.yaml",
        &clusters_with_network("True").replacen("  - {type: NetworkAvailable, status: \"True\"}\n", "", 1),
    );
    d.clock.advance_ms(600_000);
    d.send(Control::PolicyChanged);
    d.passes(3);
    d.clock.advance_ms(10_000);
    d.send(Control::Tick);
    d.passes(4);
    assert_eq!(replicas(&s, "m1"), None, "purged, and not back while tainted");
    // NetworkAvailable True: the taint goes; m1 has been Ready for stable_for: moved back.
    s.write("clusters.yaml", &clusters_with_network("True"));
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    d.passes(5);
    d.clock.advance_ms(10_000);
    d.send(Control::Tick);
    d.passes(6);
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(2), Some(2)));
    d.stop();
    let notes = history_notes(&s);
    let count = |needle: &str| notes.iter().filter(|n| n.contains(needle)).count();
    assert_eq!(count("tainted example.com/network-down:NoExecute by ClusterTaintPolicy network-down"), 1, "{notes:#?}");
    assert_eq!(count("moved back to m1"), 1, "{notes:#?}");
}

fn rebalancer(generation: i64, names: &[&str]) -> String {
    let workloads: String = names
        .iter()
        .map(|n| format!("  - {{apiVersion: apps/v1, kind: Deployment, name: {n}, namespace: shop}}\n"))
        .collect();
    format!(
        "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {{name: rebalance-web, generation: {generation}}}\n\
         spec:\n  workloads:\n{workloads}"
    )
}

/// A WorkloadRebalancer decides the workloads it names afresh, once per generation: with
/// `move_back = false` (Karmada's behaviour) a workload failed over stays where failover put it
/// after its member recovers, until a rebalancer asks — then it is divided again as a first
/// schedule would; the history, the metrics and `status` say so; the same generation does
/// nothing more, a new one acts again.
#[test]
fn a_workload_rebalancer_decides_afresh_once_per_generation() {
    let s = Scratch::new();
    s.write("apps.yaml", POLICY);
    s.write("clusters.yaml", &clusters("True"));
    let mut d = InProcess::start(&s, "[reschedule]\nmove_back = false\n", false);
    d.passes(1);
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(2), Some(2)));
    // m1 lost for the toleration: evicted, then purged; it recovers and stays without it.
    s.write("clusters.yaml", &clusters("False"));
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    d.passes(2);
    d.clock.advance_ms(300_000);
    d.send(Control::Tick);
    d.passes(3);
    d.clock.advance_ms(10_000);
    d.send(Control::Tick);
    d.passes(4);
    s.write("clusters.yaml", &clusters("True"));
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    d.passes(5);
    d.clock.advance_ms(400_000);
    d.send(Control::Tick);
    d.passes(6);
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (None, Some(3), Some(3)));

    // The rebalancer (also naming a workload that does not exist): decided afresh, 2/2/2.
    s.write("rebalance.yaml", &rebalancer(1, &["web", "ghost"]));
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    d.passes(7);
    // Make before break: m2 and m3 keep their 3 until m1's 2 run (next pass, offline).
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(3), Some(3)));
    d.clock.advance_ms(10_000);
    d.send(Control::Tick);
    d.passes(8);
    assert_eq!((replicas(&s, "m1"), replicas(&s, "m2"), replicas(&s, "m3")), (Some(2), Some(2), Some(2)));
    // Same generation: nothing more.
    for n in 9..11 {
        d.clock.advance_ms(10_000);
        d.send(Control::Tick);
        d.passes(n);
    }
    // Generation 2: again (a history record although the split stays).
    s.write("rebalance.yaml", &rebalancer(2, &["web"]));
    d.clock.advance_ms(10_000);
    d.send(Control::PolicyChanged);
    d.passes(11);
    assert_eq!(d.metric("fedsched_reschedules_total{reason=\"rebalance\"}"), Some(2.0));
    d.stop();

    let notes = history_notes(&s);
    let count = |needle: &str| notes.iter().filter(|n| n.contains(needle)).count();
    assert_eq!(count("rebalanced by WorkloadRebalancer rebalance-web generation 1: decided afresh"), 1, "{notes:#?}");
    assert_eq!(count("rebalanced by WorkloadRebalancer rebalance-web generation 2"), 1, "{notes:#?}");
    let st = s.cmd("status", &["Deployment/shop/web", "-o", "json"]);
    // The demo's members are offline, so not observed: Unknown, exit 5 (issue 49 item 11).
    assert_eq!(st.status.code(), Some(5), "{}", text(&st.stderr));
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).expect("json");
    assert_eq!(v["rebalances"][0]["rebalancer"], "rebalance-web", "{v:#}");
    assert_eq!(v["rebalances"][0]["generation"], 2);
    assert_eq!(v["rebalances"][0]["result"], "Successful");
    let st = s.cmd("status", &["Deployment/shop/web"]);
    assert!(text(&st.stdout).contains("rebalanced by WorkloadRebalancer rebalance-web generation 2: Successful"));
}
