//! A stalled pass is visible and survivable (issue 47): while a pass is stuck the event loop
//! keeps turning, `/healthz` says why it fails, the web view's pages answer (issue 53), and
//! SIGTERM ends the daemon within its
//! `reconcile.shutdown_timeout`; a publish stopped by the shutdown with its journal written is
//! completed by the next start, even when that start's repository is invalid.
//!
//! The stalls come from the debug builds' test hooks (`FEDSCHED_TEST_STALL_RECONCILE_MS`: a pass
//! sleeps; `FEDSCHED_TEST_PAUSE_AFTER_JOURNAL_MS`: a publish waits with its journal written).
//! No timing is asserted beyond generous outer limits on "ends".

use std::time::Duration;

use fedsched::api::client::{ServerUrl, get};
use serde_json::Value;

use crate::support::*;

fn url(s: &Scratch) -> ServerUrl {
    let addr = std::fs::read_to_string(s.state().join("http.addr")).expect("http.addr");
    ServerUrl::parse(addr.trim()).expect("url")
}

#[test]
fn sigterm_ends_the_daemon_during_a_stuck_pass_and_healthz_says_why() {
    let s = Scratch::with_demo();
    let d = Daemon::start(
        &s,
        "[http]\nlisten = \"127.0.0.1:0\"\nheartbeat_timeout = \"1s\"\n",
        &[("FEDSCHED_TEST_STALL_RECONCILE_MS", "600000")],
    );
    wait_for("the startup pass", Duration::from_secs(60), || d.stderr().contains("reconcile done"));
    let url = url(&s);
    let (code, _) = get(&url, "/healthz", None, Duration::from_secs(10)).expect("healthz");
    assert_eq!(code, 200);
    // An edit starts a pass that hangs (ten minutes).
    s.write("apps/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: shop\n");
    wait_for("the pass to hang", Duration::from_secs(60), || d.stderr().contains("stalling the reconcile"));
    // The loop turns (the listener answers, the heartbeat is fresh) but the pass is stuck.
    let mut seen = Value::Null;
    wait_for("/healthz to fail", Duration::from_secs(60), || {
        let (code, body) = get(&url, "/healthz", None, Duration::from_secs(10)).expect("healthz");
        seen = serde_json::from_str(&body).unwrap_or(Value::Null);
        code == 503
    });
    assert!(seen["reason"].as_str().is_some_and(|r| r.contains("a pass has been running")), "{seen}");
    // The web view never waits for a pass: every page answers from the last good one.
    for page in ["/ui/", "/ui/placements", "/ui/workloads/shop/Deployment/web", "/ui/clusters/eu-west-a", "/ui/plan"] {
        let (code, body) = get(&url, page, None, Duration::from_secs(10)).expect(page);
        assert_eq!(code, 200, "{page} during a stuck pass: {body}");
    }
    d.signal("TERM");
    // `shutdown_timeout` is 5 s: a generous limit on "ends", not a measurement.
    let (code, stderr) = d.wait(Duration::from_secs(20));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("stopping the pass under way"), "{stderr}");
}

/// Every cluster directory lists only files that exist.
fn consistent(out: &std::path::Path) {
    for entry in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let k = entry.path().join("kustomization.yaml");
        let Ok(text) = std::fs::read_to_string(&k) else { continue };
        for line in text.lines().filter_map(|l| l.strip_prefix("- ")) {
            assert!(entry.path().join(line).exists(), "{} lists {line}, which is missing", k.display());
        }
    }
}

#[test]
fn sigterm_stops_a_publish_at_its_journal_and_the_next_start_completes_it() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[("FEDSCHED_TEST_PAUSE_AFTER_JOURNAL_MS", "2000")]);
    wait_for("the startup publish to write its journal", Duration::from_secs(60), || {
        d.stderr().contains("pausing the publish with its journal written")
    });
    d.signal("TERM");
    let (code, stderr) = d.wait(Duration::from_secs(20));
    assert_eq!(code, Some(0), "{stderr}");
    let journal = s.out().join(".fedsched/journal.json");
    assert!(journal.exists(), "the publish was not stopped at its journal: {stderr}");
    consistent(&s.out());
    assert!(!s.out().join("eu-west-a/shop/apps_deployment_web.yaml").exists(), "{stderr}");
    // The next start completes it before any pass, here one that fails on an invalid repository.
    s.write("apps/broken.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: [\n");
    let d = Daemon::start(&s, "", &[]);
    wait_for("the first pass", Duration::from_secs(60), || d.stderr().contains("policy repository invalid"));
    let (code, stderr) = d.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("completed an interrupted publish"), "{stderr}");
    assert!(!journal.exists());
    assert!(s.out().join("eu-west-a/shop/apps_deployment_web.yaml").exists(), "{stderr}");
    consistent(&s.out());
}
