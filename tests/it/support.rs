//! Helpers for driving the real binary on temporary directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fedsched")
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The placement summary of an output directory as one document, in the format of the single
/// `placements.json` of earlier versions: `{"placements":[…]}` with one entry per line, the
/// entries of every shard under `.fedsched/placements/` in shard order. `NotFound` when
/// nothing was published.
pub fn placements_of(out: &Path) -> std::io::Result<String> {
    let mut shards: Vec<PathBuf> = std::fs::read_dir(out.join(".fedsched/placements"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    shards.sort();
    let mut items = Vec::new();
    for shard in shards {
        let text = std::fs::read_to_string(&shard)?;
        let inner = text.strip_prefix("{\"placements\":[\n").and_then(|t| t.strip_suffix("\n]}\n"));
        match inner {
            Some(inner) => items.push(inner.to_string()),
            None if text == "{\"placements\":[]}\n" => {}
            None => return Err(std::io::Error::other(format!("{}: not a summary shard: {text}", shard.display()))),
        }
    }
    Ok(match items.is_empty() {
        true => "{\"placements\":[]}\n".to_string(),
        false => format!("{{\"placements\":[\n{}\n]}}\n", items.join(",\n")),
    })
}

/// The binary with the given arguments, as a command; no config from the environment.
pub fn fedsched_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args).env_remove("FEDSCHED_CONFIG").env_remove("NOTIFY_SOCKET").env("FEDSCHED_LOG", "warn");
    c
}

/// Runs the binary with the given arguments; no config from the environment.
pub fn fedsched(args: &[&str]) -> Output {
    fedsched_cmd(args).output().expect("run fedsched")
}

/// Waits for `child` to end within `limit` and returns its output (read meanwhile, so that a
/// full pipe cannot stall it); a child still running then is killed and the test fails: it
/// hangs.
pub fn output_within(child: Child, limit: Duration) -> Output {
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
            panic!("process {id} did not end within {limit:?}: it hangs");
        }
    }
}

/// Runs `cmd` with its output piped to its end, within `limit` ([`output_within`]).
pub fn within(mut cmd: Command, limit: Duration) -> Output {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    output_within(child, limit)
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A scratch area: a policy repository, an output and a state directory.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch { dir: tempfile::tempdir().expect("tempdir") }
    }

    /// A scratch area whose policy repository is a copy of `config/demo`.
    pub fn with_demo() -> Self {
        let s = Scratch::new();
        copy_dir(&repo_root().join("config/demo"), &s.policies());
        s
    }

    /// A copy of `config/demo` whose clusters also serve `kind` of `api_version` (a CRD: the
    /// demo's Cluster objects list only the built-in APIs, so the `api-enablement` filter
    /// keeps any other kind off them).
    pub fn with_demo_serving(api_version: &str, kind: &str) -> Self {
        let s = Scratch::with_demo();
        s.serve(api_version, kind);
        s
    }

    /// Adds `kind` of `api_version` to the `status.apiEnablements` of every Cluster object of
    /// the repository's `clusters/` that lists some.
    pub fn serve(&self, api_version: &str, kind: &str) {
        let entry = format!(
            "  apiEnablements:\n  - groupVersion: {api_version}\n    resources: [{{name: {}s, kind: {kind}}}]\n",
            kind.to_lowercase()
        );
        let dir = self.policies().join("clusters");
        for e in std::fs::read_dir(&dir).expect("clusters/").flatten() {
            let text = std::fs::read_to_string(e.path()).expect("read");
            assert!(text.contains("  apiEnablements:\n"), "{} lists no APIs", e.path().display());
            std::fs::write(e.path(), text.replace("  apiEnablements:\n", &entry)).expect("write");
        }
    }

    pub fn policies(&self) -> PathBuf {
        self.dir.path().join("policies")
    }
    pub fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.policies().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, content).expect("write");
    }

    pub fn render(&self) -> Output {
        fedsched(&[
            "render",
            "--policies",
            self.policies().to_str().expect("utf8"),
            "--out",
            self.out().to_str().expect("utf8"),
            "--state",
            self.state().to_str().expect("utf8"),
        ])
    }

    /// `fedsched render` with extra arguments and environment (a clean environment
    /// otherwise: no config, no notify socket, no crash hook unless `env` sets it).
    pub fn render_with(&self, extra: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(bin())
            .arg("render")
            .arg("--policies")
            .arg(self.policies())
            .arg("--out")
            .arg(self.out())
            .arg("--state")
            .arg(self.state())
            .args(extra)
            .env_remove("FEDSCHED_CONFIG")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("FEDSCHED_TEST_CRASH_AFTER_STEP")
            .env("FEDSCHED_LOG", "warn")
            .envs(env.iter().copied())
            .output()
            .expect("run fedsched")
    }

    pub fn cmd(&self, sub: &str, extra: &[&str]) -> Output {
        let mut args = vec![
            sub.to_string(),
            "--policies".into(),
            self.policies().display().to_string(),
            "--state".into(),
            self.state().display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        fedsched(&refs)
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("entry");
        let p = e.path();
        let target = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).expect("copy");
        }
    }
}

/// Every file below `dir` (relative path → bytes).
pub fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd {
            let e = e.expect("entry");
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).expect("prefix").to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// Modification times of every file below `dir`.
pub fn mtimes(dir: &Path) -> BTreeMap<String, std::time::SystemTime> {
    tree(dir)
        .keys()
        .map(|k| (k.clone(), std::fs::metadata(dir.join(k)).and_then(|m| m.modified()).expect("mtime")))
        .collect()
}

/// Compares a directory with a golden directory; `FEDSCHED_BLESS=1` rewrites the golden. The
/// summary's 256 shards (`.fedsched/placements/`, all present) are compared as one document,
/// `.fedsched/placements.joined.json` in the golden ([`placements_of`]): which shard holds a
/// workload is the unit tests' concern, what the summary says is the golden's.
pub fn assert_golden(actual_dir: &Path, golden: &str) {
    let golden_dir = repo_root().join("tests/golden").join(golden);
    let mut actual = tree(actual_dir);
    let shards = actual.keys().filter(|k| k.starts_with(".fedsched/placements/")).count();
    if shards > 0 {
        assert_eq!(shards, 256, "the summary's shards in {}", actual_dir.display());
        actual.retain(|k, _| !k.starts_with(".fedsched/placements/"));
        let joined = placements_of(actual_dir).expect("the summary");
        actual.insert(".fedsched/placements.joined.json".into(), joined.into_bytes());
    }
    if std::env::var_os("FEDSCHED_BLESS").is_some() {
        let _ = std::fs::remove_dir_all(&golden_dir);
        for (rel, bytes) in &actual {
            let p = golden_dir.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, bytes).expect("write golden");
        }
        return;
    }
    let expected = tree(&golden_dir);
    assert!(!expected.is_empty(), "golden {golden} is missing: run with FEDSCHED_BLESS=1");
    let a: Vec<&String> = actual.keys().collect();
    let e: Vec<&String> = expected.keys().collect();
    assert_eq!(a, e, "file set differs from golden {golden}");
    for (rel, bytes) in &expected {
        let got = &actual[rel];
        if got != bytes {
            panic!("{rel} differs from golden {golden}\n--- expected\n{}\n--- actual\n{}", text(bytes), text(got));
        }
    }
}

/// Polls `cond` every 50 ms until it holds; fails the test after `limit`.
pub fn wait_for(what: &str, limit: std::time::Duration, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// One `GET` with `Connection: close` to `addr` (`host:port`): (status, body), or None when no
/// answer came (refused, closed, 10 s without a byte).
pub fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr.trim()).ok()?;
    c.set_read_timeout(Some(std::time::Duration::from_secs(10))).ok()?;
    write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut raw = String::new();
    c.read_to_string(&mut raw).ok()?;
    let code = raw.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Some((code, raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// An HTTP answer of [`http_request`]: status, headers (names lower-cased; a repeated header's
/// values joined with `\n`), body.
#[derive(Debug)]
pub struct HttpAnswer {
    pub code: u16,
    pub headers: std::collections::BTreeMap<String, String>,
    pub body: String,
}

/// One HTTP/1.1 request with `Connection: close` and a `Content-Length` body; the answer is read
/// to the end (20 s without a byte: a panic). The body must be UTF-8 and not chunked.
pub fn http_request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpAnswer {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr.trim()).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20))).expect("timeout");
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("write request");
    // A server may answer (413) and close before it read a large body.
    let _ = s.write_all(body);
    // Read to the end of the body its Content-Length announces (a server may keep the
    // connection open whatever the request said), or to the end of the stream.
    let mut raw = Vec::new();
    let mut chunk = [0u8; 64 << 10];
    let end_of = |raw: &[u8]| raw.windows(4).position(|w| w == b"\r\n\r\n");
    loop {
        if let Some(at) = end_of(&raw) {
            let head = String::from_utf8_lossy(&raw[..at]).into_owned();
            let announced = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse::<usize>().ok());
            if announced.is_some_and(|n| raw.len() - at - 4 >= n) {
                break;
            }
        }
        let n = s.read(&mut chunk).expect("read response");
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8(raw).expect("utf8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("header end");
    let (head, body) = (head.to_string(), body.to_string());
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line}");
    let code: u16 = parts.next().and_then(|c| c.parse().ok()).expect("status code");
    let mut headers = std::collections::BTreeMap::<String, String>::new();
    for (k, v) in lines.filter_map(|l| l.split_once(':')) {
        let e = headers.entry(k.trim().to_ascii_lowercase()).or_default();
        if !e.is_empty() {
            e.push('\n');
        }
        e.push_str(v.trim());
    }
    assert!(!headers.get("transfer-encoding").is_some_and(|v| v.contains("chunked")), "unexpected chunked body");
    if let Some(len) = headers.get("content-length") {
        assert_eq!(len.parse::<usize>().expect("length"), body.len(), "content-length of {path}");
    }
    HttpAnswer { code, headers, body }
}

/// Collects a child's stderr in the background (so a chatty child never blocks on a full pipe).
pub fn capture_stderr(child: &mut std::process::Child) -> std::sync::Arc<std::sync::Mutex<String>> {
    use std::io::BufRead;
    let buf = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    if let Some(err) = child.stderr.take() {
        let b = std::sync::Arc::clone(&buf);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                let mut g = b.lock().expect("lock");
                g.push_str(&line);
                g.push('\n');
            }
        });
    }
    buf
}

/// A `fedsched run` on a scratch area, with a config file of its own; killed when dropped.
pub struct Daemon {
    pub child: std::process::Child,
    pub config: PathBuf,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Daemon {
    /// Starts the daemon with `[reconcile] interval = "1h"`, a 200 ms debounce, JSON logs at info
    /// level, and `extra_config` appended to the config file.
    pub fn start(s: &Scratch, extra_config: &str, env: &[(&str, &str)]) -> Daemon {
        let config = s.dir.path().join("fedsched.toml");
        // A free port unless the test sets [http]: daemons side by side never share one (a port
        // in use fails the start).
        let http = if extra_config.contains("[http]") { "" } else { "[http]\nlisten = \"127.0.0.1:0\"\n" };
        std::fs::write(
            &config,
            format!(
                "[reconcile]\ninterval = \"1h\"\ndebounce = \"200ms\"\nshutdown_timeout = \"5s\"\n[log]\nformat = \"json\"\n{http}{extra_config}"
            ),
        )
        .expect("write config");
        let mut child = Command::new(bin())
            .args(["run", "--config"])
            .arg(&config)
            .arg("--policies")
            .arg(s.policies())
            .arg("--out")
            .arg(s.out())
            .arg("--state")
            .arg(s.state())
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env_remove("FEDSCHED_TEST_STALL_RECONCILE_MS")
            .envs(env.iter().copied())
            .env("FEDSCHED_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn daemon");
        let stderr = capture_stderr(&mut child);
        Daemon { child, config, stderr }
    }

    /// Sends a signal (`TERM`, `INT`, `HUP`).
    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill").args(["-s", sig, &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success());
    }

    /// What the daemon logged so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits for exit (bounded) and returns (exit code, everything it logged).
    pub fn wait(mut self, limit: std::time::Duration) -> (Option<i32>, String) {
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Let the reader thread drain what is left in the pipe.
                std::thread::sleep(std::time::Duration::from_millis(100));
                return (status.code(), self.stderr());
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!("daemon did not exit within {limit:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// SIGTERM, then [`Daemon::wait`] up to 15 s.
    pub fn stop(self) -> (Option<i32>, String) {
        self.signal("TERM");
        self.wait(std::time::Duration::from_secs(15))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// Says on the terminal (past the test harness's capture) that a test did not run and why.
pub fn skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// Karmada's published example files: the directory `FEDSCHED_KARMADA_EXAMPLES` names (it must
/// exist: `.ci/run` sets it, so CI never skips), else `../shared/karmada-examples` beside the
/// repository when it is there. `None` (a user's clone has no `../shared`): the caller returns,
/// and this says that it was skipped.
pub fn karmada_examples() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("FEDSCHED_KARMADA_EXAMPLES").map(PathBuf::from) {
        assert!(
            dir.join("README.md").is_file(),
            "FEDSCHED_KARMADA_EXAMPLES={} is not Karmada's example directory",
            dir.display()
        );
        return Some(dir);
    }
    let beside = repo_root().join("../shared/karmada-examples");
    if beside.join("README.md").is_file() {
        return Some(beside);
    }
    skipped(
        "Karmada's example files are not here (set FEDSCHED_KARMADA_EXAMPLES to a copy of \
         karmada-io/karmada's examples, laid out as ../shared/karmada-examples)",
    );
    None
}

/// Two offline clusters, `a` and `b`, that serve Deployments (64 CPUs, 256 Gi each).
pub const TWO_CLUSTERS: &str = "\
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: a}
spec: {syncMode: Push}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {cpu: '64', memory: 256Gi, pods: '1000'}}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: b}
spec: {syncMode: Push}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {cpu: '64', memory: 256Gi, pods: '1000'}}
";

/// The scoring probe: a Duplicated Deployment `shop/probe` on one cluster (tier general or
/// gpu), under `profile` when given.
pub fn probe(profile: Option<&str>) -> String {
    let annotation = profile.map(|p| format!("\n  annotations:\n    fedsched.io/profile: {p}")).unwrap_or_default();
    format!(
        r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: probe
  namespace: shop{annotation}
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: probe
  placement:
    clusterAffinity:
      labelSelector:
        matchExpressions:
        - {{key: tier, operator: In, values: [general, gpu]}}
    spreadConstraints:
    - {{spreadByField: cluster, maxGroups: 1}}
    replicaScheduling:
      replicaSchedulingType: Duplicated
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: probe
  namespace: shop
spec:
  replicas: 2
  selector: {{matchLabels: {{app: probe}}}}
  template:
    metadata: {{labels: {{app: probe}}}}
    spec:
      containers:
      - name: probe
        image: registry.example.com/probe:1
        resources: {{requests: {{cpu: 500m, memory: 512Mi}}}}
"#
    )
}
