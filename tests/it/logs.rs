//! What the daemon logs about workloads (issue 16): an unschedulable workload is a WARN when
//! it becomes unschedulable (or its reason changes), not every pass; its recovery is an INFO.

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
