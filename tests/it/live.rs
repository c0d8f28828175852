//! Live members: the real binary polls a simulated fleet (`fedsched simulate`) over HTTPS with
//! bearer tokens; every fault is injected and survived; kubectl and the Python `kubernetes`
//! client list the simulator with pagination; a `kubectl get nodes,pods -A -o yaml` capture
//! loads as a fleet.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

/// A running simulator.
pub(crate) struct Sim {
    child: Child,
    fleet: PathBuf,
    endpoints: serde_json::Value,
}

impl Sim {
    pub(crate) fn start(fleet: &Path, apply: Option<&Path>, extra: &[&str]) -> Sim {
        let mut cmd = Command::new(bin());
        cmd.args(["simulate", "--fleet"])
            .arg(fleet)
            .args(["--listen", "127.0.0.1:0", "--listen-http", "127.0.0.1:0", "--apply-interval", "200ms"])
            .env("FEDSCHED_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(out) = apply {
            cmd.arg("--apply").arg(out);
        }
        cmd.args(extra);
        let child = cmd.spawn().expect("spawn simulator");
        let path = fleet.join(".simulator/endpoints.json");
        let start = Instant::now();
        let endpoints = loop {
            if let Some(v) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
                break v;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "simulator did not start");
            std::thread::sleep(Duration::from_millis(50));
        };
        Sim { child, fleet: fleet.to_path_buf(), endpoints }
    }

    pub(crate) fn meta(&self) -> PathBuf {
        self.fleet.join(".simulator")
    }

    /// The simulator's process id (to stop it: a host API that hangs).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kubeconfig(&self) -> PathBuf {
        self.meta().join("kubeconfig")
    }

    pub(crate) fn token(&self, cluster: &str) -> String {
        std::fs::read_to_string(self.meta().join("tokens").join(cluster)).expect("token").trim().to_string()
    }

    /// A request to the plain HTTP listener with the admin token; returns (status, body).
    pub(crate) fn http(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let admin = std::fs::read_to_string(self.meta().join("admin-token")).expect("admin token");
        self.http_as(method, path, body, &admin)
    }

    /// A request to the plain HTTP listener with a bearer token; returns (status, body).
    pub(crate) fn http_as(&self, method: &str, path: &str, body: &str, token: &str) -> (u16, String) {
        let addr = self.endpoints["http"].as_str().expect("http address");
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            token.trim(),
            body.len()
        )
        .expect("write");
        let mut resp = String::new();
        s.read_to_string(&mut resp).expect("read");
        let code = resp.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        let body = resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (code, body)
    }

    pub(crate) fn fault(&self, cluster: &str, fault: &str) {
        let (code, body) = self.http("PUT", &format!("/admin/clusters/{cluster}/fault"), fault);
        assert_eq!(code, 200, "setting fault {fault}: {body}");
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fleet of `n` generated clusters, a policy repository with their Cluster objects (from the
/// simulator) and a Deployment divided by available replicas, and a config with live access.
pub(crate) struct Setup {
    pub(crate) s: Scratch,
    pub(crate) sim: Sim,
    pub(crate) config: PathBuf,
}

pub(crate) const APP: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: web}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}
  - {apiVersion: v1, kind: Namespace, name: shop}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
"#;

pub(crate) fn setup(n: usize, apply: bool, poll: &str) -> Setup {
    setup_with(n, apply, poll, &[])
}

/// [`setup`] with more arguments for the simulator.
pub(crate) fn setup_with(n: usize, apply: bool, poll: &str, sim_args: &[&str]) -> Setup {
    let s = Scratch::new();
    let fleet = s.dir.path().join("fleet");
    let g = fedsched(&[
        "simulate",
        "--generate",
        &n.to_string(),
        "--nodes",
        "4",
        "--pods",
        "9",
        "--out",
        fleet.to_str().expect("utf8"),
    ]);
    assert!(g.status.success(), "{}", text(&g.stderr));
    let sim = Sim::start(&fleet, apply.then(|| s.out()).as_deref(), sim_args);
    copy_dir(&sim.meta().join("clusters"), &s.policies().join("clusters"));
    s.write("apps/web.yaml", APP);
    let config = s.dir.path().join("fedsched.toml");
    let access = std::fs::read_to_string(sim.meta().join("fedsched.toml")).expect("access");
    // Daemons of tests that run side by side must not share the default HTTP port.
    let http = if poll.contains("[http]") { "" } else { "\n[http]\nlisten = \"127.0.0.1:0\"" };
    std::fs::write(
        &config,
        format!(
            "policy_dir = {:?}\noutput_dir = {:?}\nstate_dir = {:?}\n[reconcile]\ninterval = \"1s\"\ndebounce = \"100ms\"\n[poll]\n{poll}{http}\n[log]\nformat = \"json\"\n{access}",
            s.policies().display().to_string(),
            s.out().display().to_string(),
            s.state().display().to_string(),
        ),
    )
    .expect("config");
    Setup { s, sim, config }
}

fn snapshots(s: &Scratch, cluster: &str) -> serde_json::Value {
    let o = s.cmd("snapshots", &[cluster, "-o", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("json")
}

/// Every byte below `dir` as lossy text.
fn all_text(dir: &Path) -> String {
    tree(dir).values().map(|b| String::from_utf8_lossy(b).into_owned()).collect::<Vec<_>>().join("\n")
}

#[test]
fn render_polls_the_fleet_over_https_and_never_writes_tokens() {
    let t = setup(3, false, "timeout = \"5s\"\nread_timeout = \"2s\"\npage_size = 4");
    let o = fedsched(&["render", "-c", t.config.to_str().expect("utf8")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for c in ["member-000", "member-001", "member-002"] {
        assert!(t.s.out().join(c).join("shop/apps_deployment_web.yaml").exists(), "no output for {c}");
        let v = snapshots(&t.s, c);
        let last = &v["versions"].as_array().expect("versions")[0];
        assert_eq!(last["health"], "Ready", "{v}");
    }
    // The replicas follow the live capacity: 6 in total.
    let placements = placements_of(&t.s.out()).expect("placements");
    let p: serde_json::Value = serde_json::from_str(&placements).expect("json");
    let web = p["placements"].as_array().expect("list").iter().find(|w| w["workload"]["name"] == "web").cloned();
    let total: i64 = web.expect("web")["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .map(|c| c["replicas"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(total, 6);
    // Tokens appear nowhere: output, store, messages.
    let out = all_text(&t.s.out()) + &all_text(&t.s.state()) + &text(&o.stderr);
    for c in ["member-000", "member-001", "member-002"] {
        assert!(!out.contains(&t.sim.token(c)), "the token of {c} leaked");
    }
}

#[test]
fn the_daemon_survives_every_fault_and_keeps_what_it_published() {
    let t = setup(3, true, "timeout = \"3s\"\nread_timeout = \"1s\"\npage_size = 3\nmax_backoff = \"1s\"");
    let (mut child, log) = daemon(&t, "info");
    let web = |c: &str| t.s.out().join(c).join("shop/apps_deployment_web.yaml");
    wait_for("the first live reconcile", Duration::from_secs(30), || {
        ["member-000", "member-001", "member-002"].iter().all(|c| web(c).exists())
    });
    // The agent applies the output: the pods of web appear in the simulated clusters.
    wait_for("the agent to create the pods of web", Duration::from_secs(20), || {
        let o = Command::new(crate::tools::kubectl())
            .arg("--kubeconfig")
            .arg(t.sim.kubeconfig())
            .args(["--context", "member-000", "get", "pods", "-n", "shop", "-o", "name"])
            .output()
            .expect("kubectl");
        text(&o.stdout).contains("pod/web-sim-")
    });

    let faults: &[(&str, &[&str])] = &[
        (r#"{"status": 500}"#, &["http"]),
        (r#"{"status": 503}"#, &["http"]),
        (r#"{"status": 403}"#, &["forbidden"]),
        (r#"{"timeout": true}"#, &["transport", "deadline"]),
        (r#"{"reset": true}"#, &["transport"]),
        (r#"{"truncate": true}"#, &["decode"]),
        (r#"{"invalidJson": true}"#, &["decode"]),
        (r#"{"goneOnContinue": true}"#, &["gone"]),
    ];
    for (fault, kinds) in faults {
        let before = web("member-001");
        let published = std::fs::read(&before).expect("published file");
        let mark = log.lock().expect("lock").len();
        t.sim.fault("member-001", fault);
        wait_for(&format!("the {fault} failure to be logged"), Duration::from_secs(20), || {
            let l = log.lock().expect("lock");
            l[mark..].lines().any(|line| {
                line.contains("poll failed")
                    && line.contains("member-001")
                    && kinds.iter().any(|k| line.contains(&format!("\"kind\":\"{k}\"")))
            })
        });
        // The failing cluster keeps its output; the others go on being polled.
        let ok_mark = log.lock().expect("lock").len();
        wait_for("a reconcile during the fault", Duration::from_secs(20), || {
            log.lock().expect("lock")[ok_mark..].contains("reconcile done")
        });
        assert_eq!(std::fs::read(&before).expect("still there"), published, "output changed under {fault}");
        {
            let l = log.lock().expect("lock");
            assert!(
                !l[mark..].lines().any(|line| line.contains("poll failed") && !line.contains("member-001")),
                "another cluster failed under {fault}:\n{}",
                &l[mark..]
            );
        }
        t.sim.fault("member-001", "{}");
    }
    // Latency below the read timeout is no failure.
    t.sim.fault("member-001", r#"{"latencyMs": 200}"#);
    let mark = log.lock().expect("lock").len();
    wait_for("two reconciles with latency", Duration::from_secs(20), || {
        log.lock().expect("lock")[mark..].matches("reconcile done").count() >= 2
    });
    t.sim.fault("member-001", "{}");

    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().expect("lock").clone();
    assert!(!l.contains("panicked"), "{l}");
    for c in ["member-000", "member-001", "member-002"] {
        assert!(!l.contains(&t.sim.token(c)), "a token appears in the log");
        assert!(!all_text(&t.s.state()).contains(&t.sim.token(c)), "a token appears in the store");
    }
    // The store saw member-001 unreachable and, under 403, not ready; its nodes were kept.
    let v = snapshots(&t.s, "member-001");
    let healths: Vec<String> = v["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|m| format!("{} {}", m["health"], m["healthReason"]))
        .collect();
    // A state and a reason, never Rust's debug form (`Unreachable { reason: … }`).
    assert!(healths.iter().all(|h| !h.contains('{')), "{healths:?}");
    assert!(healths.iter().any(|h| h.contains("Unreachable")), "{healths:?}");
    assert!(healths.iter().any(|h| h.contains("NotReady") && h.contains("forbidden")), "{healths:?}");
    assert!(healths.iter().any(|h| h.contains("Ready") && !h.contains("NotReady")), "{healths:?}");
}

#[test]
fn kubectl_lists_with_pagination_and_its_capture_loads_as_a_fleet() {
    let t = setup(2, false, "");
    let run = |kubeconfig: &Path, args: &[&str]| {
        let o = Command::new(crate::tools::kubectl())
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .expect("run kubectl");
        assert!(o.status.success(), "kubectl {args:?}: {}", text(&o.stderr));
        o
    };
    let kc = t.sim.kubeconfig();
    let o = run(&kc, &["--context", "member-001", "get", "pods", "-A", "--chunk-size", "2", "-o", "name", "-v=6"]);
    let names = text(&o.stdout);
    assert_eq!(names.lines().count(), 9, "{names}");
    let pages = text(&o.stderr).matches("continue=").count();
    assert!(pages >= 4, "kubectl did not page:\n{}", text(&o.stderr));
    // Field selectors and the namespaced path.
    let o = run(
        &kc,
        &["--context", "member-001", "get", "pods", "-A", "--field-selector", "status.phase=Running", "-o", "name"],
    );
    assert!(text(&o.stdout).lines().count() >= 1);
    let o = run(&kc, &["--context", "member-001", "get", "pods", "-n", "team-1", "-o", "name"]);
    assert!(text(&o.stdout).lines().all(|l| l.starts_with("pod/")));
    // Plain HTTP serves the same API (with the same token).
    let (code, body) =
        t.sim.http_as("GET", "/clusters/member-001/api/v1/nodes?limit=1", "", &t.sim.token("member-001"));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"continue\":\"member-001.1\""), "{body}");
    let (code, _) = t.sim.http_as("GET", "/clusters/member-001/api/v1/nodes", "", "wrong");
    assert_eq!(code, 401);
    // A wrong token is refused.
    let bad = t.s.dir.path().join("bad-kubeconfig");
    std::fs::write(&bad, std::fs::read_to_string(&kc).expect("kubeconfig").replace(&t.sim.token("member-001"), "nope"))
        .expect("write");
    let o = Command::new(crate::tools::kubectl())
        .arg("--kubeconfig")
        .arg(&bad)
        .args(["--context", "member-001", "get", "nodes"])
        .output()
        .expect("kubectl");
    assert!(!o.status.success());

    // Capture a cluster the way an operator would and serve the capture.
    let capture = run(&kc, &["--context", "member-001", "get", "nodes,pods", "-A", "-o", "yaml"]);
    let fleet2 = t.s.dir.path().join("captured");
    std::fs::create_dir_all(fleet2.join("prod-1")).expect("mkdir");
    std::fs::write(fleet2.join("prod-1/capture.yaml"), &capture.stdout).expect("write");
    let sim2 = Sim::start(&fleet2, None, &[]);
    let o = run(&sim2.kubeconfig(), &["--context", "prod-1", "get", "nodes,pods", "-A", "-o", "name"]);
    let again = text(&o.stdout);
    assert_eq!(again.lines().filter(|l| l.starts_with("node/")).count(), 4, "{again}");
    assert_eq!(again.lines().filter(|l| l.starts_with("pod/")).count(), 9, "{again}");
}

#[test]
fn the_python_kubernetes_client_lists_with_pagination() {
    let py = crate::tools::python_with_kubernetes();
    let t = setup(1, false, "");
    let script = r#"
import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1], context=sys.argv[2])
v1 = client.CoreV1Api()
def all_pages(fn, **kw):
    items, token, pages = [], None, 0
    while True:
        r = fn(limit=2, _continue=token, **kw) if token else fn(limit=2, **kw)
        pages += 1
        items += r.items
        token = r.metadata._continue
        if not token:
            return items, pages
nodes, np = all_pages(v1.list_node)
pods, pp = all_pages(v1.list_pod_for_all_namespaces)
bound, _ = all_pages(v1.list_pod_for_all_namespaces, field_selector="spec.nodeName=" + nodes[0].metadata.name)
ns, _ = all_pages(v1.list_namespaced_pod, namespace="team-0")
print(len(nodes), np, len(pods), pp, len(bound) <= len(pods), all(p.metadata.namespace == "team-0" for p in ns))
"#;
    let o = Command::new(py).arg("-c").arg(script).arg(t.sim.kubeconfig()).arg("member-000").output().expect("python");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "4 2 9 5 True True");
}

/// The replicas of `web` placed on `cluster` by the last pass (0 when not placed there).
fn web_replicas(s: &Scratch, cluster: &str) -> i64 {
    let Ok(text) = placements_of(&s.out()) else { return -1 };
    let Ok(p) = serde_json::from_str::<serde_json::Value>(&text) else { return -1 };
    let web = p["placements"].as_array().into_iter().flatten().find(|w| w["workload"]["name"] == "web");
    web.and_then(|w| w["clusters"].as_array().cloned())
        .into_iter()
        .flatten()
        .find(|c| c["name"] == cluster)
        .and_then(|c| c["replicas"].as_i64())
        .unwrap_or(0)
}

impl Sim {
    /// The simulator's counters: requests by cluster, watch events produced, open streams.
    fn stats(&self) -> serde_json::Value {
        let (code, body) = self.http("GET", "/admin/stats", "");
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).expect("stats")
    }

    /// The names of a cluster's nodes, through its API.
    pub(crate) fn nodes(&self, cluster: &str) -> Vec<String> {
        let (code, body) = self.http_as("GET", &format!("/clusters/{cluster}/api/v1/nodes"), "", &self.token(cluster));
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).expect("node list");
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap_or("").into())
            .collect()
    }

    /// Fills every node of a cluster with a pod that requests more CPU than any node has,
    /// through the admin endpoint (ADDED watch events): nothing fits there any more.
    pub(crate) fn fill(&self, cluster: &str) {
        for n in self.nodes(cluster) {
            let pod = format!(
                r#"{{"spec": {{"nodeName": "{n}", "containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "1000"}}}}}}]}},
                    "status": {{"phase": "Running"}}}}"#
            );
            let (code, body) = self.http("PUT", &format!("/admin/clusters/{cluster}/namespaces/fill/pods/{n}"), &pod);
            assert_eq!(code, 200, "{body}");
        }
    }
}

pub(crate) fn daemon(t: &Setup, log_level: &str) -> (Child, std::sync::Arc<std::sync::Mutex<String>>) {
    daemon_with(&t.config, log_level)
}

/// `fedsched run -c config` with its stderr captured.
pub(crate) fn daemon_with(config: &Path, log_level: &str) -> (Child, std::sync::Arc<std::sync::Mutex<String>>) {
    let mut child = Command::new(bin())
        .args(["run", "-c"])
        .arg(config)
        .env_remove("NOTIFY_SOCKET")
        .env("FEDSCHED_LOG", log_level)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn daemon");
    let log = capture_stderr(&mut child);
    (child, log)
}

/// Every member placed some replicas of web and each has its two watches open.
pub(crate) fn wait_until_watching(t: &Setup, clusters: &[&str]) {
    wait_for("the first live reconcile", Duration::from_secs(30), || {
        clusters.iter().all(|c| web_replicas(&t.s, c) > 0)
    });
    wait_for("the watches to open", Duration::from_secs(20), || {
        t.sim.stats()["openWatches"].as_u64().unwrap_or(0) >= 2 * clusters.len() as u64
    });
}

/// CPU cores allocated on a cluster as the running daemon sees it (`fedsched resources`,
/// answered by the daemon's API).
fn allocated_cores(t: &Setup, cluster: &str) -> f64 {
    let o = fedsched(&["resources", "-c", t.config.to_str().expect("utf8"), "-o", "json"]);
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&o.stdout) else { return -1.0 };
    doc["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["clusters"].as_array().cloned().unwrap_or_default())
        .find(|c| c["name"] == cluster)
        .and_then(|c| c["resources"]["cpu"]["normalised"]["allocated"].as_f64())
        .unwrap_or(-1.0)
}

pub(crate) const WATCHED: &str =
    "timeout = \"5s\"\nread_timeout = \"2s\"\npage_size = 4\n[http]\nlisten = \"127.0.0.1:0\"";

#[test]
fn a_change_in_a_member_reaches_the_output_through_its_watch_without_a_new_list() {
    let t = setup(3, false, WATCHED);
    let (child, log) = daemon(&t, "info");
    let clusters = ["member-000", "member-001", "member-002"];
    wait_until_watching(&t, &clusters);
    let before = t.sim.stats();
    let requests = |s: &serde_json::Value| s["requests"]["member-000"].as_u64().unwrap_or(0);

    // member-000 fills up: the ADDED events reach the daemon's cache…
    t.sim.fill("member-000");
    wait_for("the pods to be seen", Duration::from_secs(30), || allocated_cores(&t, "member-000") >= 4000.0);
    // … and a workload added now is placed elsewhere.
    let api_yaml = APP.split_once("---\n").map(|(_, rest)| rest).expect("documents");
    let api_yaml = api_yaml
        .replace("{name: web", "{name: api")
        .replace("name: web,", "name: api,")
        .replace("replicas: 6", "replicas: 4");
    t.s.write("apps/api.yaml", &api_yaml.replace("  - {apiVersion: v1, kind: Namespace, name: shop}\n", ""));
    wait_for("api to be placed", Duration::from_secs(30), || {
        let text = placements_of(&t.s.out()).unwrap_or_default();
        text.contains("\"api\"")
    });
    let api = |c: &str| {
        let text = placements_of(&t.s.out()).expect("placements");
        let p: serde_json::Value = serde_json::from_str(&text).expect("json");
        let w = p["placements"].as_array().expect("list").iter().find(|w| w["workload"]["name"] == "api").cloned();
        w.and_then(|w| w["clusters"].as_array().cloned())
            .into_iter()
            .flatten()
            .find(|x| x["name"] == c)
            .and_then(|x| x["replicas"].as_i64())
            .unwrap_or(0)
    };
    assert_eq!(api("member-000"), 0, "api placed on the full member");
    assert_eq!(api("member-001") + api("member-002"), 4);
    // It empties again (DELETED events).
    for n in t.sim.nodes("member-000") {
        let (code, body) = t.sim.http("DELETE", &format!("/admin/clusters/member-000/namespaces/fill/pods/{n}"), "");
        assert_eq!(code, 200, "{body}");
    }
    wait_for("the pods to be gone", Duration::from_secs(30), || {
        (0.0..1000.0).contains(&allocated_cores(&t, "member-000"))
    });
    // No list request was needed for any of it (the two requests are the test's own node
    // lists, in `fill` and above).
    let after = t.sim.stats();
    assert!(after["events"].as_u64() > before["events"].as_u64(), "{after}");
    assert_eq!(requests(&after), requests(&before) + 2, "member-000 was listed again: {before} → {after}");

    stop_without_failures(child, &log);
}

#[test]
fn a_dropped_watch_rewatches_and_an_expired_one_relists() {
    let t = setup(3, false, WATCHED);
    let (child, log) = daemon(&t, "fedsched=debug");
    let clusters = ["member-000", "member-001", "member-002"];
    wait_until_watching(&t, &clusters);

    // Dropped streams: the watchers come back from their last version and the events recorded
    // meanwhile are replayed.
    let (code, body) = t.sim.http("POST", "/admin/clusters/member-001/watches/close", "");
    assert_eq!(code, 200, "{body}");
    t.sim.fill("member-001");
    wait_for("the pods of member-001 to be seen", Duration::from_secs(30), || {
        allocated_cores(&t, "member-001") >= 4000.0
    });
    assert!(!log.lock().expect("lock").contains("relisting"), "a dropped stream must not relist");

    // The event window forgotten (410 Gone on the next watch): the watchers relist.
    let (code, body) = t.sim.http("POST", "/admin/clusters/member-002/watches/compact", "");
    assert_eq!(code, 200, "{body}");
    wait_for("the relist after 410 Gone", Duration::from_secs(30), || {
        log.lock().expect("lock").lines().any(|l| l.contains("relisting") && l.contains("member-002"))
    });
    t.sim.fill("member-002");
    wait_for("the pods of member-002 to be seen", Duration::from_secs(30), || {
        allocated_cores(&t, "member-002") >= 4000.0
    });

    stop_without_failures(child, &log);
}

/// Stops the daemon; its log, returned, shows no panic and no failed poll.
fn stop_without_failures(mut child: Child, log: &std::sync::Arc<std::sync::Mutex<String>>) -> String {
    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().expect("lock").clone();
    assert!(!l.contains("panicked") && !l.contains("poll failed"), "{l}");
    l
}

/// The simulator's HTTPS connections speaking `proto` ("h2" or "http/1.1"): (accepted, open).
fn connections(t: &Setup, proto: &str) -> (u64, u64) {
    let c = &t.sim.stats()["connections"];
    (c["accepted"][proto].as_u64().unwrap_or(0), c["open"][proto].as_u64().unwrap_or(0))
}

#[test]
fn both_watches_of_a_member_share_one_http2_connection() {
    let t = setup(3, false, WATCHED);
    let (child, log) = daemon(&t, "info");
    let clusters = ["member-000", "member-001", "member-002"];
    wait_until_watching(&t, &clusters);
    // Six streams (nodes and pods of three members) on three connections, one TLS handshake
    // each: the second watch of a member waited for the first one's connection.
    assert_eq!(t.sim.stats()["openWatches"], 6);
    assert_eq!(connections(&t, "h2"), (3, 3), "{}", t.sim.stats());

    // The server ends member-001's streams: both are watched again on the same connection,
    // and an event still arrives.
    let (code, body) = t.sim.http("POST", "/admin/clusters/member-001/watches/close", "");
    assert_eq!(code, 200, "{body}");
    t.sim.fill("member-001");
    wait_for("the pods of member-001 to be seen", Duration::from_secs(30), || {
        allocated_cores(&t, "member-001") >= 4000.0
    });
    wait_for("the watches to open again", Duration::from_secs(20), || t.sim.stats()["openWatches"] == 6);
    assert_eq!(connections(&t, "h2"), (3, 3), "{}", t.sim.stats());

    stop_without_failures(child, &log);
}

#[test]
fn a_watch_connection_that_hangs_open_is_pinged_given_up_and_replaced() {
    let t = setup(1, false, "timeout = \"5s\"\nread_timeout = \"2s\"\npage_size = 4\nwatch_ping_interval = \"1s\"");
    let (mut child, log) = daemon(&t, "info");
    wait_until_watching(&t, &["member-000"]);
    assert_eq!(connections(&t, "h2"), (1, 1), "{}", t.sim.stats());
    // The server stops reading and writing on every connection it has, and keeps them open.
    let (code, body) = t.sim.http("POST", "/admin/connections/freeze", "");
    assert_eq!(code, 200, "{body}");
    // The silent connection is pinged after a second, given up two seconds later, and both
    // watches are made again on one new connection (the streams themselves would wait 60 s
    // or more).
    wait_for("a new watch connection", Duration::from_secs(20), || connections(&t, "h2").0 >= 2);
    wait_for("the watches to open again", Duration::from_secs(20), || t.sim.stats()["openWatches"] == 4);
    assert_eq!(connections(&t, "h2"), (2, 2), "the frozen one is still open: {}", t.sim.stats());
    t.sim.fill("member-000");
    wait_for("the pods to be seen", Duration::from_secs(30), || allocated_cores(&t, "member-000") >= 4000.0);
    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().expect("lock").clone();
    assert!(!l.contains("panicked"), "{l}");
}

#[test]
fn after_a_goaway_the_watches_go_on_then_move_to_a_new_connection() {
    let t = setup(1, false, WATCHED);
    let (child, log) = daemon(&t, "fedsched=debug");
    wait_until_watching(&t, &["member-000"]);
    assert_eq!(connections(&t, "h2"), (1, 1), "{}", t.sim.stats());
    // The server says GOAWAY (as kube-apiserver does to spread clients over its replicas):
    // the open streams go on, and still bring events.
    let (code, body) = t.sim.http("POST", "/admin/connections/goaway", "");
    assert_eq!(code, 200, "{body}");
    t.sim.fill("member-000");
    wait_for("the pods to be seen", Duration::from_secs(30), || allocated_cores(&t, "member-000") >= 4000.0);
    assert_eq!(connections(&t, "h2"), (1, 1), "{}", t.sim.stats());
    // When they end, both are made again on one new connection, and the old one closes.
    let (code, body) = t.sim.http("POST", "/admin/clusters/member-000/watches/close", "");
    assert_eq!(code, 200, "{body}");
    wait_for("the watches on a new connection", Duration::from_secs(20), || {
        connections(&t, "h2") == (2, 1) && t.sim.stats()["openWatches"] == 2
    });
    for n in t.sim.nodes("member-000") {
        let (code, body) = t.sim.http("DELETE", &format!("/admin/clusters/member-000/namespaces/fill/pods/{n}"), "");
        assert_eq!(code, 200, "{body}");
    }
    wait_for("the pods to be gone", Duration::from_secs(30), || {
        (0.0..1000.0).contains(&allocated_cores(&t, "member-000"))
    });
    let l = stop_without_failures(child, &log);
    assert!(!l.contains("watch stopped"), "{l}");
}

#[test]
fn a_server_that_allows_one_stream_per_connection_gets_a_connection_per_watch() {
    // (As a proxy in front of an API server may: HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS 1.)
    let t = setup_with(2, false, WATCHED, &["--max-concurrent-streams", "1"]);
    let (child, log) = daemon(&t, "info");
    // The second watch of each member finds no room on the shared connection: after
    // read_timeout it is sent on a connection of its own, and both stay open.
    wait_until_watching(&t, &["member-000", "member-001"]);
    assert_eq!(connections(&t, "h2").1, 2, "{}", t.sim.stats());
    t.sim.fill("member-000");
    wait_for("the pods to be seen", Duration::from_secs(30), || allocated_cores(&t, "member-000") >= 4000.0);
    stop_without_failures(child, &log);
}

#[test]
fn watches_run_over_http1_when_the_server_offers_no_http2() {
    let t = setup_with(2, false, WATCHED, &["--http1-only"]);
    let (child, log) = daemon(&t, "info");
    wait_until_watching(&t, &["member-000", "member-001"]);
    // One HTTP/1.1 connection per open stream; nothing spoke HTTP/2.
    assert_eq!(connections(&t, "h2").0, 0, "{}", t.sim.stats());
    assert!(connections(&t, "http/1.1").1 >= 4, "{}", t.sim.stats());
    t.sim.fill("member-000");
    wait_for("the pods of member-000 to be seen", Duration::from_secs(30), || {
        allocated_cores(&t, "member-000") >= 4000.0
    });
    stop_without_failures(child, &log);
}

#[test]
fn with_watch_off_every_round_lists() {
    let t = setup(1, false, "watch = false\ntimeout = \"5s\"\nread_timeout = \"2s\"");
    let (mut child, _log) = daemon(&t, "info");
    wait_for("the first live reconcile", Duration::from_secs(30), || web_replicas(&t.s, "member-000") > 0);
    let first = t.sim.stats()["requests"]["member-000"].as_u64().unwrap_or(0);
    wait_for("another list", Duration::from_secs(30), || {
        t.sim.stats()["requests"]["member-000"].as_u64().unwrap_or(0) > first
    });
    assert_eq!(t.sim.stats()["openWatches"], 0);
    child.kill().expect("kill");
    let _ = child.wait();
}

/// With watches, a member's reported age counts from the last event or bookmark received,
/// not from the store's `lastSeen` (refreshed once a minute while nothing changes): the
/// simulator sends a bookmark every 5 s, so the age stays under two of those however long the
/// member is quiet. (Before, it climbed to 60 s between refreshes.)
#[test]
fn a_watched_members_age_counts_from_its_last_event_or_bookmark() {
    let t = setup(1, false, WATCHED);
    let (mut child, _log) = daemon(&t, "info");
    wait_until_watching(&t, &["member-000"]);
    let addr: std::net::SocketAddr =
        std::fs::read_to_string(t.s.state().join("http.addr")).expect("http.addr").trim().parse().expect("addr");
    let member = || {
        let (code, body) = crate::ha::get(addr, "/api/v1/clusters").expect("clusters");
        assert_eq!(code, 200, "{body}");
        let doc: serde_json::Value = serde_json::from_str(&body).expect("json");
        doc["clusters"].as_array().expect("list").iter().find(|c| c["name"] == "member-000").cloned().expect("member")
    };
    let first = member();
    let last_seen = first["snapshot"]["lastSeen"].clone();
    // Quiet for longer than two bookmarks: nothing changes, the store's lastSeen stays.
    let bookmark = fedsched::testbed::simulate::watch::BOOKMARK_EVERY;
    std::thread::sleep(bookmark * 3);
    let later = member();
    assert_eq!(later["snapshot"]["lastSeen"], last_seen, "the content changed: {later}");
    let age = later["snapshot"]["ageSeconds"].as_f64().expect("age");
    assert!(
        age < 2.0 * bookmark.as_secs_f64(),
        "age {age} s after {} s without a change: {later}",
        3 * bookmark.as_secs()
    );
    assert_ne!(later["snapshot"]["observedAt"], last_seen, "observedAt follows the bookmarks: {later}");
    // The metric counts from the same observation.
    let (code, metrics) = crate::ha::get(addr, "/metrics").expect("metrics");
    assert_eq!(code, 200, "{metrics}");
    let line = metrics
        .lines()
        .find(|l| l.starts_with("fedsched_snapshot_age_seconds{cluster=\"member-000\"}"))
        .unwrap_or_else(|| panic!("no age metric: {metrics}"));
    let metric: f64 = line.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a number");
    assert!(metric < 2.0 * bookmark.as_secs_f64(), "{line} after {} s without a change", 3 * bookmark.as_secs());
    // And explain's observedAt of the data the decision used (the same version).
    let (code, body) = crate::ha::get(addr, "/api/v1/workloads/shop/Deployment/web/explain").expect("explain");
    assert_eq!(code, 200, "{body}");
    let doc: serde_json::Value = serde_json::from_str(&body).expect("json");
    let data = doc["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .find(|c| c["name"] == "member-000")
        .expect("member")["data"]
        .clone();
    assert_eq!(data["snapshotVersion"], later["snapshot"]["version"], "{data}");
    assert_ne!(data["observedAt"], last_seen, "explain's observedAt follows the bookmarks: {data}");
    let _ = child.kill();
    let _ = child.wait();
}

/// A member's API server that hangs (SIGSTOP: its connections stay open, new ones are
/// accepted and never answered) is Unreachable within one `watch_ping_interval` and
/// `read_timeout` (the ping that goes unanswered), plus a pass. Before, the watches first
/// tried a new connection (`read_timeout`), then one of their own (`read_timeout` again), and
/// the failure waited for the next round: Ready at confidence 1.0 for 21.5 s against a real
/// API server.
#[test]
fn a_hung_api_server_is_unreachable_within_a_ping_and_the_read_timeout() {
    let (ping, read_timeout) = (2, 8);
    let t = setup(
        1,
        false,
        &format!(
            "timeout = \"5s\"\nread_timeout = \"{read_timeout}s\"\npage_size = 4\nwatch_ping_interval = \"{ping}s\"\n\
             [http]\nlisten = \"127.0.0.1:0\""
        ),
    );
    let (mut child, log) = daemon(&t, "info");
    wait_until_watching(&t, &["member-000"]);
    let addr: std::net::SocketAddr =
        std::fs::read_to_string(t.s.state().join("http.addr")).expect("http.addr").trim().parse().expect("addr");
    let state = || {
        let (code, body) = crate::ha::get(addr, "/api/v1/clusters").expect("clusters");
        assert_eq!(code, 200, "{body}");
        let doc: serde_json::Value = serde_json::from_str(&body).expect("json");
        let member = doc["clusters"].as_array().expect("list").iter().find(|c| c["name"] == "member-000").cloned();
        member.expect("member")["state"].as_str().expect("state").to_string()
    };
    assert_eq!(state(), "Ready");
    let (code, body) = t.sim.http("POST", "/admin/connections/stop", "");
    assert_eq!(code, 200, "{body}");
    let stopped = std::time::Instant::now();
    wait_for("the member to be Unreachable", Duration::from_secs(40), || state() == "Unreachable");
    let took = stopped.elapsed();
    // One ping (sent at most `ping` after the last read), its `read_timeout`, and 3 s for the
    // round and the pass on a loaded machine.
    let bound = Duration::from_secs(ping + read_timeout + 3);
    assert!(took <= bound, "Unreachable after {took:?}, more than {bound:?}");
    let l = log.lock().expect("lock").clone();
    assert!(l.contains("not even a ping"), "the error names the unanswered ping: {l}");
    child.kill().expect("kill");
    let _ = child.wait();
}

/// The daemon loads the repository at start with its configured settings, as every pass does
/// (issue 51): a policy naming a profile only the config defines is valid there, so the live
/// members are polled before the first pass, and that pass places on what they report. (With
/// the built-in profile only, the start's load failed, no member was a target, and the first
/// pass placed on the Cluster objects' offline status.)
#[test]
fn the_first_pass_polls_the_live_members_of_a_policy_naming_a_configured_profile() {
    let t = setup(2, false, "timeout = \"5s\"\nread_timeout = \"5s\"");
    let named = "kind: ClusterPropagationPolicy\nmetadata: {name: web, annotations: {fedsched.io/profile: spread}}";
    t.s.write("apps/web.yaml", &APP.replace("kind: ClusterPropagationPolicy\nmetadata: {name: web}", named));
    let access = std::fs::read_to_string(t.sim.meta().join("fedsched.toml")).expect("access");
    let extra = format!(
        "[poll]\ntimeout = \"5s\"\nread_timeout = \"5s\"\n[profiles.spread]\nscores = {{ least-allocated = 1 }}\n{access}"
    );
    let mut d = crate::daemon::InProcess::start(&t.s, &extra, false);
    let v = d.passes(1);
    let pass = v.last_pass.as_ref().expect("a pass");
    assert_eq!(pass.trigger, fedsched::publish::Trigger::Startup);
    assert_eq!(pass.outcome, fedsched::views::status::PassOutcome::Ok, "{:?}", pass.outcome);
    let inputs = v.inputs.as_ref().expect("inputs");
    for c in ["member-000", "member-001"] {
        let snapshot = inputs.snapshots.iter().find(|s| s.name == c).expect("member");
        assert!(snapshot.is_live(), "{c} was not polled before the first pass: {:?}", snapshot.source);
        assert!(web_replicas(&t.s, c) > 0, "the first pass placed nothing on {c}");
    }
    d.stop();
}
