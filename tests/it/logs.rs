//! What the daemon logs and the history records about workloads (issue 16): an unschedulable
//! workload is a WARN when it becomes unschedulable (or its reason changes), not every pass;
//! its recovery is an INFO; the history has one record per real change of a decision.

use std::time::Duration;

use crate::support::*;

fn count(log: &str, what: &str) -> usize {
    log.lines().filter(|l| l.contains(what)).count()
}

#[test]
fn an_unschedulable_workload_is_logged_on_change_not_every_pass() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[]);
    let passes = |n: usize| {
        wait_for(&format!("{n} passes"), Duration::from_secs(120), || count(&d.stderr(), "reconcile done") >= n)
    };
    passes(1);
    let unschedulable = |log: &str| count(log, "workload unschedulable;");
    assert_eq!(unschedulable(&d.stderr()), 1, "{}", d.stderr());
    assert!(d.stderr().contains("Deployment/ml/reindex") || d.stderr().contains("reindex"), "{}", d.stderr());
    // Another pass (an unrelated edit): the same problem is not logged again.
    let web = s.policies().join("apps/web.yaml");
    let text = std::fs::read_to_string(&web).expect("read");
    std::fs::write(&web, text.replace("replicas: 9", "replicas: 10")).expect("write");
    passes(2);
    assert_eq!(unschedulable(&d.stderr()), 1, "logged again:\n{}", d.stderr());
    // The workload goes: its recovery is said once.
    let trainer = s.policies().join("apps/trainer.yaml");
    let text = std::fs::read_to_string(&trainer).expect("read");
    let kept: Vec<&str> = text.split("\n---\n").filter(|doc| !doc.contains("name: reindex")).collect();
    std::fs::write(&trainer, kept.join("\n---\n")).expect("write");
    passes(3);
    let (_, log) = d.stop();
    assert_eq!(count(&log, "no longer unschedulable"), 1, "{log}");
    assert_eq!(unschedulable(&log), 1, "{log}");
}

#[test]
fn the_history_has_one_record_per_real_change_of_a_decision() {
    let s = Scratch::with_demo();
    let records = |w: &str| {
        let out = s.cmd("history", &[w, "-o", "json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json").as_array().map_or(0, Vec::len)
    };
    // Three identical renders (each a new process; the second sees the first placement as
    // previous, which changes scores and available replicas but not the decision).
    for _ in 0..3 {
        assert!(s.render().status.success());
    }
    assert_eq!(records("Deployment/shop/api"), 1, "identical decisions recorded again");
    // A real change is recorded once.
    let web = s.policies().join("apps/web.yaml");
    let text = std::fs::read_to_string(&web).expect("read");
    std::fs::write(&web, text.replace("replicas: 9", "replicas: 12")).expect("write");
    assert!(s.render().status.success());
    assert!(s.render().status.success());
    assert_eq!(records("Deployment/shop/web"), 2);
}
