//! `fedsched run`: reconciles at start and on policy changes, keeps the last good output on a
//! bad edit, refuses a second instance on the same state, and stops cleanly on SIGTERM.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::*;

fn file_contains(p: &Path, needle: &str) -> bool {
    std::fs::read_to_string(p).map(|s| s.contains(needle)).unwrap_or(false)
}

#[test]
fn daemon_reacts_to_edits_keeps_last_good_and_stops_cleanly() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[]);
    let web = s.out().join("eu-west-a/shop/apps_deployment_web.yaml");
    wait_for("the startup reconcile", Duration::from_secs(30), || web.exists());

    // A second fedsched on the same state directory fails fast with a clear message.
    let second = s.render();
    assert_eq!(second.status.code(), Some(2), "{}", text(&second.stderr));
    assert!(text(&second.stderr).contains("in use"), "{}", text(&second.stderr));

    // An edit is picked up (an editor-style save: write a temp file, rename over).
    let path = s.policies().join("apps/web.yaml");
    let edited = std::fs::read_to_string(&path).expect("read").replace("replicas: 9", "replicas: 18");
    let tmp = s.policies().join("apps/.web.yaml.tmp");
    std::fs::write(&tmp, &edited).expect("write");
    std::fs::rename(&tmp, &path).expect("rename");
    // The publish is complete once its journal is gone (the first rename already shows the edit).
    let journal = s.out().join(".fedsched/journal.json");
    wait_for("the edit to be rendered", Duration::from_secs(30), || {
        file_contains(&web, "replicas: 7\n") && !journal.exists()
    });

    // A broken edit keeps the last good output.
    let before = tree(&s.out());
    std::fs::write(s.policies().join("apps/broken.yaml"), "kind: [\n").expect("write");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(before, tree(&s.out()), "output changed after an invalid edit");
    std::fs::remove_file(s.policies().join("apps/broken.yaml")).expect("rm");

    // SIGTERM: exit 0 within a few seconds, store intact.
    let started = Instant::now();
    d.signal("TERM");
    let (code, stderr) = d.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(stderr.contains("invalid policy input"), "the bad edit was not reported: {stderr}");
    let h = s.cmd("history", &["Deployment/shop/web", "-o", "json"]);
    assert!(h.status.success(), "{}", text(&h.stderr));
    let v: serde_json::Value = serde_json::from_slice(&h.stdout).expect("json");
    assert!(v.as_array().map(|a| a.len() >= 2).unwrap_or(false), "history: {v}");
}

#[test]
fn sigint_also_stops_cleanly() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[]);
    wait_for("the startup reconcile", Duration::from_secs(30), || {
        s.out().join("us-east-gpu/kustomization.yaml").exists()
    });
    d.signal("INT");
    let (code, stderr) = d.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_burst_of_file_changes_is_one_reconcile() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[]);
    wait_for("the startup reconcile", Duration::from_secs(30), || {
        s.out().join("us-east-gpu/kustomization.yaml").exists()
    });
    // Like a git checkout: many files created and rewritten over about half a second.
    for i in 0..150 {
        let body = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: burst-{i}\n  namespace: shop\ndata:\n  i: \"{i}\"\n"
        );
        std::fs::write(s.policies().join(format!("apps/burst-{i}.yaml")), body).expect("write");
        if i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(30));
        }
    }
    std::thread::sleep(Duration::from_millis(2500));
    d.signal("TERM");
    let (code, stderr) = d.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "{stderr}");
    let passes = stderr.lines().filter(|l| l.contains("reconcile done") && l.contains("policy-change")).count();
    assert_eq!(passes, 1, "expected one reconcile for the burst:\n{stderr}");
}

#[test]
fn systemd_hears_ready_after_the_first_reconcile_and_watchdog_from_the_loop() {
    use std::os::unix::net::UnixDatagram;
    let s = Scratch::with_demo();
    let sock_path = s.dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let d = Daemon::start(&s, "", &[("NOTIFY_SOCKET", sock_path.to_str().expect("utf8")), ("WATCHDOG_USEC", "400000")]);
    let mut messages = Vec::new();
    let mut buf = [0u8; 4096];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let n = sock.recv(&mut buf).expect("notification");
        let m = String::from_utf8_lossy(&buf[..n]).into_owned();
        if m.contains("READY=1") {
            // READY comes after the first good reconcile: the output is there.
            assert!(s.out().join("eu-west-a/kustomization.yaml").exists(), "READY before the output was written");
        }
        messages.push(m);
        if messages.iter().any(|m| m.contains("READY=1"))
            && messages.iter().filter(|m| m.contains("WATCHDOG=1")).count() >= 3
        {
            break;
        }
    }
    assert!(messages.iter().any(|m| m.contains("READY=1")), "{messages:?}");
    assert!(messages.iter().filter(|m| m.contains("WATCHDOG=1")).count() >= 3, "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("STATUS=")), "{messages:?}");
    d.signal("TERM");
    let (code, stderr) = d.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "{stderr}");
}
