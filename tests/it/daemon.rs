//! The daemon. In-process (most tests): `daemon::Daemon` on real files in a temp dir, driven
//! through a control channel and a manual clock, observed through its status view and
//! metrics — it reconciles at start and on policy changes, keeps the last good output on a bad
//! edit, turns a burst of file changes into one pass, and a reload puts new profiles,
//! `[publish]` and `[model]` in force (an invalid file keeps the old ones); the API explains
//! with the daemon's profiles. On the real binary (a few): SIGHUP reloads, SIGTERM and SIGINT
//! stop cleanly (exit 0), a second instance on the same state is refused, and systemd hears
//! READY and WATCHDOG.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedsched::config::{Config, Paths};
use fedsched::daemon::{self as fd, Control, control_channel};
use fedsched::metrics::Metrics;
use fedsched::util::clock::ManualClock;
use fedsched::views::status::{PassOutcome, StatusView};
use tokio::sync::{mpsc, watch};

use crate::support::*;

fn file_contains(p: &Path, needle: &str) -> bool {
    std::fs::read_to_string(p).map(|s| s.contains(needle)).unwrap_or(false)
}

/// Unix ms the manual clock starts at (2023-11-14T22:13:20Z).
const T0: u64 = 1_700_000_000_000;

/// The config every in-process daemon starts from, then `extra`.
fn config_text(extra: &str) -> String {
    // A free port unless the test sets [http]: daemons side by side never share one (a port in
    // use fails the start).
    let http = if extra.contains("[http]") { "" } else { "[http]\nlisten = \"127.0.0.1:0\"\n" };
    format!("[reconcile]\ninterval = \"1h\"\ndebounce = \"200ms\"\nshutdown_timeout = \"5s\"\n{http}{extra}")
}

/// A daemon running in this process on a scratch area (also used by `failover.rs`).
pub(crate) struct InProcess {
    rt: tokio::runtime::Runtime,
    control: mpsc::UnboundedSender<Control>,
    status: watch::Receiver<Arc<StatusView>>,
    metrics: Arc<Metrics>,
    pub(crate) clock: ManualClock,
    config: PathBuf,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl InProcess {
    /// Starts the daemon with `extra` appended to the config; `watch_dir`: whether it watches
    /// the policy directory (else changes are reported with [`Control::PolicyChanged`]).
    pub(crate) fn start(s: &Scratch, extra: &str, watch_dir: bool) -> InProcess {
        let config = s.dir.path().join("fedsched.toml");
        std::fs::write(&config, config_text(extra)).expect("write config");
        let cfg = Config::load(&config).expect("config");
        let paths = Paths { policy_dir: s.policies(), output_dir: s.out(), state_dir: s.state() };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let clock = ManualClock::new(T0);
        let (control, stream) = control_channel();
        let daemon = rt
            .block_on(fd::Daemon::start(cfg, Some(config.clone()), paths, Arc::new(clock.clone())))
            .expect("daemon starts");
        let daemon = if watch_dir { daemon } else { daemon.without_policy_watch() };
        let (status, metrics) = (daemon.status(), daemon.metrics());
        let task = rt.spawn(daemon.run(stream));
        InProcess { rt, control, status, metrics, clock, config, task: Some(task) }
    }

    pub(crate) fn send(&self, c: Control) {
        self.control.send(c).expect("the daemon is running");
    }

    /// Waits (up to 30 s) until `n` passes have finished; returns the status then.
    pub(crate) fn passes(&mut self, n: u64) -> Arc<StatusView> {
        let status = &mut self.status;
        let v = self
            .rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(30), status.wait_for(|v| v.passes >= n)).await })
            .unwrap_or_else(|_| panic!("timed out waiting for pass {n}"))
            .expect("status")
            .clone();
        assert_eq!(v.passes, n, "more passes than expected");
        v
    }

    fn now(&self) -> Arc<StatusView> {
        self.status.borrow().clone()
    }

    pub(crate) fn metric(&self, name_and_labels: &str) -> Option<f64> {
        let text = self.metrics.refresh_and_encode(&self.now(), T0, 0, None).expect("encode");
        text.lines()
            .find_map(|l| l.strip_prefix(name_and_labels).and_then(|v| v.strip_prefix(' ')))
            .and_then(|v| v.parse().ok())
    }

    /// Sends a shutdown and waits for the loop to end (it flushes the store).
    pub(crate) fn stop(mut self) {
        self.send(Control::Shutdown("test"));
        let task = self.task.take().expect("running");
        let r = self.rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), task).await });
        r.expect("stopped in time").expect("loop task").expect("clean exit");
    }
}

fn outcome(v: &StatusView) -> &PassOutcome {
    &v.last_pass.as_ref().expect("a pass").outcome
}

#[test]
fn reacts_to_edits_keeps_last_good_and_stops_cleanly() {
    let s = Scratch::with_demo();
    let mut d = InProcess::start(&s, "", false);
    let web = s.out().join("eu-west-a/shop/apps_deployment_web.yaml");
    let v = d.passes(1);
    assert_eq!(outcome(&v), &PassOutcome::Ok);
    assert!(web.exists() && v.ready && v.is_ready());
    // Wall-clock stamps come from the injected clock.
    assert_eq!((v.started_at_ms, v.last_success_ms), (T0, Some(T0)));
    assert_eq!(d.metric("fedsched_reconciles_total{outcome=\"ok\"}"), Some(1.0));
    assert_eq!(d.metric("fedsched_polls_total{cluster=\"eu-west-a\",outcome=\"offline\"}"), Some(1.0));

    // A second fedsched on the same state directory fails fast with a clear message.
    let second = s.render();
    assert_eq!(second.status.code(), Some(2), "{}", text(&second.stderr));
    assert!(text(&second.stderr).contains("in use"), "{}", text(&second.stderr));

    // An edit is picked up.
    let path = s.policies().join("apps/web.yaml");
    let edited = std::fs::read_to_string(&path).expect("read").replace("replicas: 9", "replicas: 18");
    std::fs::write(&path, edited).expect("write");
    d.clock.advance_ms(60_000);
    d.send(Control::PolicyChanged);
    let v = d.passes(2);
    assert_eq!(v.last_pass.as_ref().map(|p| (p.trigger.as_str(), p.at_ms)), Some(("policy-change", T0 + 60_000)));
    assert!(file_contains(&web, "replicas: 7\n"), "the edit was not rendered");
    assert!(!s.out().join(".fedsched/journal.json").exists());

    // A broken edit keeps the last good output (and the last good inputs).
    let before = tree(&s.out());
    std::fs::write(s.policies().join("apps/broken.yaml"), "kind: [\n").expect("write");
    d.send(Control::PolicyChanged);
    let v = d.passes(3);
    assert!(
        matches!(outcome(&v), PassOutcome::Invalid { errors, first } if *errors > 0 && first.contains("apps/broken.yaml")),
        "{:?}",
        outcome(&v)
    );
    assert!(v.policy_errors > 0 && v.inputs.is_some() && v.is_ready());
    assert_eq!(v.last_success_ms, Some(T0 + 60_000));
    assert_eq!(before, tree(&s.out()), "output changed after an invalid edit");
    assert_eq!(d.metric("fedsched_policy_errors"), Some(v.policy_errors as f64));
    std::fs::remove_file(s.policies().join("apps/broken.yaml")).expect("rm");
    // A timer pass repairs it.
    d.send(Control::Tick);
    let v = d.passes(4);
    assert_eq!(v.last_pass.as_ref().map(|p| p.trigger.as_str()), Some("timer"));
    assert_eq!(outcome(&v), &PassOutcome::Ok);

    d.stop();
    let h = s.cmd("history", &["Deployment/shop/web", "-o", "json"]);
    assert!(h.status.success(), "{}", text(&h.stderr));
    let v: serde_json::Value = serde_json::from_slice(&h.stdout).expect("json");
    assert!(v.as_array().map(|a| a.len() >= 2).unwrap_or(false), "history: {v}");
}

#[test]
fn a_reload_puts_new_profiles_publish_and_model_settings_in_force() {
    let s = Scratch::with_demo();
    let mut d = InProcess::start(&s, "[publish]\nmax_delete_ratio = 1.0\n", false);
    assert_eq!(outcome(&d.passes(1)), &PassOutcome::Ok);
    let edge = s.out().join("us-east-edge/edge/apps_deployment_edge-cache.yaml");
    assert!(edge.exists());

    // The repository now names profile `spread` and drops the edge-cache Deployment; the new
    // config defines `spread`, holds any removal and models `example.com/dpu`. With the old
    // settings the pass would be invalid (unknown profile) and the removal would go through.
    s.write("probe.yaml", &probe(Some("spread")));
    std::fs::remove_file(s.policies().join("apps/edge.yaml")).expect("rm");
    std::fs::write(
        &d.config,
        config_text(
            "[profiles.spread]\nscores = { least-allocated = 1 }\n[publish]\nmax_delete_ratio = 0.0\n\
             [model]\nextended = [\"example.com/dpu\"]\n",
        ),
    )
    .expect("write config");
    d.send(Control::Reload);
    let v = d.passes(2);
    assert_eq!(v.last_pass.as_ref().map(|p| p.trigger.as_str()), Some("sighup"));
    assert_eq!(outcome(&v), &PassOutcome::Ok, "the new profile is not in force");
    let report = v.last_report.as_ref().expect("report");
    // The profile: least-allocated puts the probe on the emptiest cluster.
    assert!(s.out().join("eu-west-a/shop/apps_deployment_probe.yaml").exists(), "{}", report.summary());
    // [publish]: the removal is held.
    assert!(!report.held_clusters.is_empty(), "{}", report.summary());
    assert!(edge.exists(), "the held removal went through");
    assert_eq!(d.metric("fedsched_mass_deletion_holds_total{cluster=\"us-east-edge\"}"), Some(1.0));
    // [model]: the pass ran with the new model (offline members have no output that depends on
    // `extended`); the read side answers with the same profiles.
    let profiles = v.profiles.as_ref().expect("profiles");
    assert!(profiles.get("spread").is_some());
    assert_eq!(profiles.model().extended, ["example.com/dpu"]);

    // An invalid file keeps the settings in force.
    std::fs::write(&d.config, "[publish]\nmax_delete_ratio = 7\n").expect("write config");
    d.send(Control::Reload);
    let v = d.passes(3);
    assert_eq!(outcome(&v), &PassOutcome::Ok, "the old settings were dropped");
    assert!(!v.last_report.as_ref().expect("report").held_clusters.is_empty());
    assert!(edge.exists());
    d.stop();
}

#[test]
fn a_burst_of_file_changes_is_one_reconcile() {
    let s = Scratch::with_demo();
    let mut d = InProcess::start(&s, "", true);
    d.passes(1);
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
    let v = d.passes(2);
    assert_eq!(v.last_pass.as_ref().map(|p| p.trigger.as_str()), Some("policy-change"));
    assert!(s.out().join("eu-west-a/shop/apps_configmap_burst-149.yaml").exists() || v.last_report.is_some());
    // Quiet now: no second pass follows.
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(d.now().passes, 2, "expected one reconcile for the burst");
    d.stop();
}

/// With the policy watch on, an edit of a file the last walk read is read again from the path
/// the watch names (no walk), and its output follows; a file then added (the watch names a
/// path no walk read) makes the pass walk, and the edit made with it is seen too.
#[test]
fn the_watch_names_the_edited_file_and_an_added_one_walks() {
    let s = Scratch::with_demo();
    let mut d = InProcess::start(&s, "", true);
    assert_eq!(outcome(&d.passes(1)), &PassOutcome::Ok);
    let web = s.out().join("eu-west-a/shop/apps_deployment_web.yaml");
    assert!(file_contains(&web, "replicas: 4\n"), "the demo's division");
    let path = s.policies().join("apps/web.yaml");
    let edited = std::fs::read_to_string(&path).expect("read").replace("replicas: 9", "replicas: 18");
    std::fs::write(&path, &edited).expect("write");
    let v = d.passes(2);
    assert_eq!(v.last_pass.as_ref().map(|p| p.trigger.as_str()), Some("policy-change"));
    assert_eq!(outcome(&v), &PassOutcome::Ok);
    assert!(file_contains(&web, "replicas: 7\n"), "the edit the watch named was not rendered");
    // A new file and, in the same burst, an edit back: the pass walks and sees both.
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: added\n  namespace: shop\ndata:\n  k: v\n";
    std::fs::write(s.policies().join("apps/added.yaml"), body).expect("write");
    std::fs::write(&path, edited.replace("replicas: 18", "replicas: 9")).expect("write");
    let v = d.passes(3);
    assert_eq!(outcome(&v), &PassOutcome::Ok);
    let inputs = v.inputs.as_ref().expect("inputs");
    assert!(inputs.set.templates.iter().any(|t| t.key.name == "added"), "the added file was not read");
    assert!(!file_contains(&web, "replicas: 7\n"), "the edit beside the added file was not rendered");
    d.stop();
}

/// A minimal HTTP/1.1 GET (`Connection: close`); returns (status, body).
fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).expect("connect");
    write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("request");
    let mut raw = String::new();
    c.read_to_string(&mut raw).expect("response");
    let code = raw.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

#[test]
fn the_api_explains_with_the_configured_profiles_like_the_cli() {
    use fedsched::views::explain::{WorkloadRef, explain};
    let s = Scratch::with_demo();
    s.write("probe.yaml", &probe(Some("spread")));
    let cfg = Config::parse("[profiles.spread]\nscores = { least-allocated = 1 }\n", Path::new("fedsched.toml"))
        .expect("config");
    let profiles = Arc::new(cfg.profiles().expect("profiles"));
    let settings = fedsched::reconcile::Settings::from_config(&cfg, false).expect("settings");
    let policies = s.policies();
    let inputs = fedsched::reconcile::load_inputs(fedsched::reconcile::Repository::Dir(&policies), &settings);
    let inputs = Arc::new(inputs.expect("inputs"));
    // Nothing decided yet: explain schedules the probe now, with the policy's profile.
    let store = fedsched::store::Store::open(&s.state()).expect("store");
    let r = WorkloadRef { kind: "Deployment".into(), namespace: Some("shop".into()), name: "probe".into() };
    let cli = explain(&inputs, &store, &profiles, &r, T0).expect("explain");
    let (_tx, status) =
        watch::channel(Arc::new(StatusView { inputs: Some(inputs), profiles: Some(profiles), ..Default::default() }));
    let clock = ManualClock::new(T0);
    let state = fedsched::api::ApiState {
        store: store.clone(),
        status,
        heartbeat: Arc::new(fedsched::views::status::Heartbeat::new(T0)),
        heartbeat_timeout: Duration::from_secs(5),
        token: None,
        metrics_require_token: false,
        metrics: Arc::new(Metrics::new()),
        clock: Arc::new(clock),
        output_dir: s.out(),
        plans: Default::default(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let server = rt.block_on(fedsched::api::start("127.0.0.1:0".parse().expect("addr"), state)).expect("listen");
    let (code, body) = get(server.addr, "/api/v1/workloads/shop/Deployment/probe/explain");
    assert_eq!(code, 200, "{body}");
    let api: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(api, cli, "the API and the CLI explain differently");
    // And the answer is the configured profile's: least-allocated scored, the emptiest cluster.
    assert_eq!(api["source"], "dry-run", "{api}");
    let clusters = api["clusters"].as_array().expect("clusters");
    assert!(clusters.iter().any(|c| c["scores"].get("least-allocated").is_some()), "{api}");
    // The heartbeat age is the injected clock's.
    assert_eq!(get(server.addr, "/healthz").0, 200);
    rt.block_on(server.shutdown(Duration::from_secs(5)));
}

// The real binary: signals.

#[test]
fn sighup_reloads_and_sigterm_stops_cleanly() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[]);
    wait_for("the startup reconcile", Duration::from_secs(30), || {
        s.out().join("us-east-gpu/kustomization.yaml").exists()
    });
    s.write("probe.yaml", &probe(Some("spread")));
    let mut config = std::fs::read_to_string(&d.config).expect("config");
    config.push_str("[profiles.spread]\nscores = { least-allocated = 1 }\n");
    std::fs::write(&d.config, config).expect("write config");
    d.signal("HUP");
    let probe = s.out().join("eu-west-a/shop/apps_deployment_probe.yaml");
    wait_for("the reloaded profile to place the probe", Duration::from_secs(30), || probe.exists());
    let started = Instant::now();
    d.signal("TERM");
    let (code, stderr) = d.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(stderr.contains("configuration reloaded"), "{stderr}");
    assert!(stderr.lines().any(|l| l.contains("reconcile done") && l.contains("sighup")), "{stderr}");
}

/// SIGINT stops cleanly too. On the way: the repository's warnings and notes are logged by
/// the daemon's passes as `check` prints them, once per change, not on every pass.
#[test]
fn sigint_also_stops_cleanly_and_findings_are_logged_once() {
    let s = Scratch::with_demo();
    s.write(
        "policies/elsewhere.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: elsewhere, namespace: shop}\nspec:\n  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: ml}]\n",
    );
    let d = Daemon::start(&s, "", &[]);
    wait_for("the startup reconcile", Duration::from_secs(30), || {
        s.out().join("us-east-gpu/kustomization.yaml").exists()
    });
    // A second pass: the web Deployment scaled from 9 to 18 replicas.
    let web = s.policies().join("apps/web.yaml");
    let text = std::fs::read_to_string(&web).expect("web.yaml").replace("replicas: 9", "replicas: 18");
    std::fs::write(&web, text).expect("scale web");
    let out = s.out().join("eu-west-a/shop/apps_deployment_web.yaml");
    wait_for("a second pass", Duration::from_secs(30), || {
        std::fs::read_to_string(&out).is_ok_and(|t| !t.contains("replicas: 4\n"))
    });
    d.signal("INT");
    let (code, stderr) = d.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "{stderr}");
    let warned: Vec<&str> = stderr.lines().filter(|l| l.contains("spec.resourceSelectors[0].namespace")).collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(warned[0].contains("elsewhere.yaml") && warned[0].contains("matches nothing"), "{stderr}");
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

/// `[audit] interval`: the daemon decides afresh on a copy of its store an interval after the
/// last audit (the first an interval after its first pass) and, being correct, finds nothing
/// kept wrong: audits counted, no difference; not due, nothing runs.
#[test]
fn the_self_audit_runs_every_interval_and_finds_nothing_on_a_correct_daemon() {
    let s = Scratch::with_demo();
    let mut d = InProcess::start(&s, "[audit]\ninterval = \"10m\"\n", false);
    d.passes(1);
    let audits = |d: &InProcess| d.metric("fedsched_audits_total");
    d.clock.advance_ms(60_000);
    d.send(Control::Tick);
    d.passes(2);
    d.send(Control::Tick);
    d.passes(3);
    assert_eq!(audits(&d), Some(0.0), "not due a minute after the first pass");
    d.clock.advance_ms(600_000);
    d.send(Control::Tick);
    d.passes(4);
    // The audit follows the pass that found it due; the next pass comes after it.
    d.send(Control::Tick);
    d.passes(5);
    assert_eq!(audits(&d), Some(1.0));
    assert_eq!(d.metric("fedsched_audit_differences_total"), Some(0.0));
    assert!(d.metric("fedsched_audit_duration_seconds").is_some_and(|s| s > 0.0));
    d.stop();
}

/// A difference the audit finds (here made by the debug builds' test hook
/// `FEDSCHED_TEST_AUDIT_SKEW`: the kept side's first decision targets one cluster more, as a
/// stale memo would) is logged with its workload and the memo involved, counted in
/// `fedsched_audit_differences_total`, and the fresh decision wins: the daemon forgets what it
/// kept and its next pass (trigger `audit`) starts from the store as a new process's first
/// pass does (a full check of every file).
#[test]
fn an_audit_difference_is_logged_counted_and_the_fresh_decision_wins() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "[audit]\ninterval = \"1s\"\n", &[("FEDSCHED_TEST_AUDIT_SKEW", "1")]);
    wait_for("the startup reconcile", Duration::from_secs(30), || d.stderr().contains("reconcile done"));
    std::thread::sleep(Duration::from_millis(1_100));
    let web = std::fs::read_to_string(s.policies().join("apps/web.yaml")).expect("read");
    s.write("apps/web.yaml", &web.replace("replicas: 9", "replicas: 8"));
    wait_for("the audit's pass", Duration::from_secs(30), || d.stderr().contains("\"trigger\":\"audit\""));
    let log = d.stderr();
    let found = log.lines().find(|l| l.contains("audit: what the daemon kept differs")).expect("a difference logged");
    assert!(found.contains("\"workload\":\"") && found.contains("audit-test-skew"), "{found}");
    assert!(found.contains(fedsched::reconcile::audit::MEMO_DECISION), "{found}");
    let audit_pass = log
        .lines()
        .find(|l| l.contains("\"trigger\":\"audit\"") && l.contains("reconcile done"))
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .expect("the audit's pass");
    // Nothing kept: the pass starts as a new process's first pass (every file checked).
    assert_eq!(audit_pass["full_check"].as_bool(), Some(true), "decided afresh: {audit_pass}");
    let addr: std::net::SocketAddr =
        std::fs::read_to_string(s.state().join("http.addr")).expect("address file").trim().parse().expect("address");
    let (_, metrics) = get(addr, "/metrics");
    let differences = metrics
        .lines()
        .find_map(|l| l.strip_prefix("fedsched_audit_differences_total "))
        .and_then(|v| v.parse::<f64>().ok());
    assert!(differences.is_some_and(|n| n >= 1.0), "{metrics}");
    let (code, log) = d.stop();
    assert_eq!(code, Some(0), "{log}");
}
