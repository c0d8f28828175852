//! What an operator meets in the first hour (issue 49), each as a user meets it: the real
//! binary on the demo repository, on a live simulated fleet, in a pipe, in a git output.

use std::process::{Command, Stdio};

use crate::support::*;

/// Runs `fedsched args` with stdout a pipe whose reader is already gone, as `fedsched … | head
/// -1` once `head` has its line: every write to stdout fails with `EPIPE` (the Rust runtime
/// ignores SIGPIPE, so `println!` panicked with exit 101). Returns (exit code, stderr).
fn into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(bin())
        .args(args)
        .env_remove("FEDSCHED_CONFIG")
        .env("FEDSCHED_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run fedsched");
    (out.status.code(), text(&out.stderr))
}

/// Item 10: every command that prints ends quietly when its reader went away (141, as a
/// coreutils program killed by SIGPIPE reports; or 0), never with a panic.
#[test]
fn writing_into_a_closed_pipe_ends_quietly() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let (p, st, out) = (s.policies(), s.state(), s.out());
    let (p, st, out) = (p.to_str().expect("utf8"), st.to_str().expect("utf8"), out.to_str().expect("utf8"));
    let runs: Vec<Vec<&str>> = vec![
        vec!["completion", "bash"],
        vec!["completion", "zsh"],
        vec!["check", "--policies", p],
        vec!["check", "--policies", p, "-o", "json"],
        vec!["resources", "--policies", p, "--state", st],
        vec!["resources", "--policies", p, "--state", st, "-o", "yaml"],
        vec!["explain", "--policies", p, "--state", st, "Deployment/shop/web"],
        vec!["history", "--policies", p, "--state", st, "Deployment/shop/web", "-o", "json"],
        vec!["snapshots", "--policies", p, "--state", st, "eu-west-a"],
        vec!["status", "--policies", p, "--state", st],
        vec!["plan", "--policies", p, "--out", out, "--state", st, "--local"],
    ];
    for args in runs {
        let (code, err) = into_closed_pipe(&args);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
        assert!(matches!(code, Some(0) | Some(141)), "{args:?}: exit {code:?}: {err}");
    }
}

/// Item 12: every command with `-o json` has `-o yaml`, and `plan -o yaml` is the JSON plan as
/// YAML.
#[test]
fn plan_prints_yaml_like_every_command_with_json() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let web = std::fs::read_to_string(s.policies().join("apps/web.yaml")).expect("read");
    s.write("apps/web.yaml", &web.replace("replicas: 9", "replicas: 12"));
    let args = |format: &str| {
        let (p, o, st) = (s.policies(), s.out(), s.state());
        let v = vec![
            "plan".to_string(),
            "--local".into(),
            "--policies".into(),
            p.display().to_string(),
            "--out".into(),
            o.display().to_string(),
            "--state".into(),
            st.display().to_string(),
            "-o".into(),
            format.into(),
        ];
        v
    };
    let run = |format: &str| {
        let a = args(format);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        fedsched(&refs)
    };
    let json = run("json");
    let yaml = run("yaml");
    assert_eq!(yaml.status.code(), Some(2), "changes: {}", text(&yaml.stderr));
    let from_json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let from_yaml: serde_json::Value = serde_saphyr::from_str(&text(&yaml.stdout)).expect("yaml");
    assert_eq!(from_json, from_yaml);
    // And per subcommand: `-o json` implies `-o yaml` (the help lists the values).
    for sub in ["check", "explain", "history", "resources", "status", "snapshots", "plan", "replay", "interpret"] {
        let help = text(&fedsched(&[sub, "--help"]).stdout);
        let line = help.lines().find(|l| l.contains("--output")).unwrap_or_else(|| panic!("{sub}: no --output"));
        assert!(line.contains("json") && line.contains("yaml"), "{sub}: {line}");
    }
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Item 15: git mode leaves nothing untracked in the output: `git status` is clean after a
/// render, the lock file included (it is in the clone's `info/exclude`, never committed).
#[test]
fn git_mode_leaves_no_untracked_lock() {
    let s = Scratch::with_demo();
    let cfg = s.dir.path().join("fedsched.toml");
    std::fs::write(&cfg, "[git]\nenabled = true\nauthor_name = \"bot\"\nauthor_email = \"bot@example.com\"\n")
        .expect("config");
    let out = s.render_with(&["--config", cfg.to_str().expect("utf8")], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(s.out().join(".fedsched/lock").is_file());
    assert_eq!(git(&s.out(), &["status", "--porcelain", "--untracked-files=all"]), "");
    let tracked = git(&s.out(), &["ls-files"]);
    assert!(!tracked.contains(".fedsched/lock") && !tracked.contains(".fedsched/owner"), "{tracked}");
    // A second render does not list the entries twice.
    assert!(s.render_with(&["--config", cfg.to_str().expect("utf8")], &[]).status.success());
    let exclude = std::fs::read_to_string(s.out().join(".git/info/exclude")).expect("exclude");
    assert_eq!(exclude.matches("/.fedsched/lock").count(), 1, "{exclude}");
}

/// A GET on the daemon's HTTP listener (`<state>/http.addr`); returns (status, body).
fn daemon_get(state: &std::path::Path, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let file = state.join("http.addr");
    wait_for("the HTTP address file", std::time::Duration::from_secs(30), || file.exists());
    let addr = std::fs::read_to_string(&file).expect("http.addr").trim().to_string();
    let mut s = std::net::TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20))).expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("write");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let code = raw.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    // A chunked body: the chunks' sizes are lines of hex digits; the JSON and the metrics
    // text never are.
    let body = body.lines().filter(|l| !l.chars().all(|c| c.is_ascii_hexdigit()) || l.is_empty()).collect();
    (code, body)
}

/// Items 2, 5 and 16 on a live fleet, as the live demo shows them: no warning about the
/// simulator's own Cluster files; `fedsched_polls_total{outcome="offline"}` only for offline
/// members; an outage logged once per failed poll, each line naming the cluster, in fedsched's
/// words (no rustls documentation link, no ERROR line of the HTTP library); a log line when
/// the member recovers; the outage one snapshot version, whatever its error text.
#[test]
fn a_live_outage_reads_as_one_version_in_our_words_and_its_recovery_is_logged() {
    use std::time::Duration;
    let t = crate::live::setup(2, false, "timeout = \"3s\"\nread_timeout = \"1s\"\nmax_backoff = \"1s\"");
    let (mut child, log) = crate::live::daemon(&t, "info");
    let logged = || log.lock().expect("lock").clone();
    wait_for("the first live reconcile", Duration::from_secs(60), || logged().contains("reconcile done"));
    assert!(!logged().contains("apiEnablements"), "warnings about the simulator's Cluster files: {}", logged());
    let (code, metrics) = daemon_get(&t.s.state(), "/metrics");
    assert_eq!(code, 200);
    assert!(metrics.contains("fedsched_polls_total{cluster=\"member-001\",outcome=\"ok\"}"), "{metrics}");
    assert!(!metrics.contains("outcome=\"offline\""), "live members counted as offline builds: {metrics}");

    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-001/outage", r#"{"mode": "refused"}"#);
    assert_eq!(code, 200, "{body}");
    let failures = || logged().lines().filter(|l| l.contains("poll failed") && l.contains("member-001")).count();
    wait_for("three failed polls of member-001", Duration::from_secs(60), || failures() >= 3);
    let (code, body) = t.sim.http("DELETE", "/admin/clusters/member-001/outage", "");
    assert_eq!(code, 200, "{body}");
    wait_for("the recovery to be logged", Duration::from_secs(60), || {
        logged().lines().any(|l| l.contains("recovered") && l.contains("member-001"))
    });
    let _ = child.kill();
    let _ = child.wait();
    let all = logged();
    let errors: Vec<&str> = all.lines().filter(|l| l.contains("\"level\":\"ERROR\"")).collect();
    assert!(errors.is_empty(), "ERROR lines during an outage the poller reports itself: {errors:#?}");
    for needle in ["docs.rs", "ServiceError", "SendRequest"] {
        assert!(!all.contains(needle), "{needle} in the log: {all}");
    }
    let o = t.s.cmd("snapshots", &["member-001", "-o", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let versions = doc["versions"].as_array().expect("versions");
    let health: Vec<&str> = versions.iter().map(|v| v["health"].as_str().unwrap_or("")).collect();
    assert_eq!(health.iter().filter(|h| **h == "Unreachable").count(), 1, "one outage, one version: {doc}");
    assert!(!text(&o.stdout).contains("docs.rs") && !text(&o.stdout).contains("ServiceError"), "{doc}");
    let history = t.s.cmd("history", &["Deployment/shop/web", "-o", "json"]);
    assert!(!text(&history.stdout).contains("docs.rs"), "{}", text(&history.stdout));
}
