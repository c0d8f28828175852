//! High availability (`[ha]`): several `fedsched run` against one simulated fleet, one output
//! directory, and the simulator's host API for the Lease (each instance reaches it by its own
//! cluster path, so a lease fault can cut one instance off). Short durations: a lease of 2 s,
//! a renew deadline of 1.5 s, a retry period of 300 ms.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::live::{Setup, setup_with};
use crate::support::*;

const POLL: &str = "timeout = \"5s\"\nread_timeout = \"2s\"\npage_size = 4";
const LEASE_MS: u64 = 2000;

/// One instance: its config (its own state directory, the shared output), its process and
/// every line it logged (across restarts).
struct Instance {
    name: String,
    config: PathBuf,
    state: PathBuf,
    child: Option<Child>,
    logs: Vec<Arc<Mutex<String>>>,
}

impl Instance {
    /// An instance named `name` (its identity) that reaches the lease under `via`'s path.
    fn new(t: &Setup, name: &str, via: &str) -> Instance {
        Instance::with(t, name, via, None, "")
    }

    /// [`Instance::new`] with its own output directory and more configuration.
    fn with(t: &Setup, name: &str, via: &str, output: Option<&std::path::Path>, extra: &str) -> Instance {
        let mut base = std::fs::read_to_string(&t.config).expect("config");
        if let Some(out) = output {
            let old = format!("output_dir = {:?}", t.s.out().display().to_string());
            assert!(base.contains(&old), "the setup's config names its output_dir");
            base = base.replace(&old, &format!("output_dir = {:?}", out.display().to_string()));
        }
        let state = t.s.dir.path().join(format!("state-{name}"));
        let old = format!("state_dir = {:?}", t.s.state().display().to_string());
        assert!(base.contains(&old), "the setup's config names its state_dir");
        let endpoints: serde_json::Value =
            serde_json::from_slice(&std::fs::read(t.sim.meta().join("endpoints.json")).expect("endpoints"))
                .expect("json");
        let https = endpoints["https"].as_str().expect("https");
        let meta = t.sim.meta();
        let text = format!(
            "{}\n[ha]\nserver = \"https://{https}/clusters/{via}\"\ntoken_file = {:?}\nca_file = {:?}\nlease_namespace = \"fedsched\"\nidentity = \"{name}\"\nlease_duration = \"2s\"\nrenew_deadline = \"1500ms\"\nretry_period = \"300ms\"\n{extra}",
            base.replace(&old, &format!("state_dir = {:?}", state.display().to_string())),
            meta.join("tokens").join(via).display().to_string(),
            meta.join("ca.crt").display().to_string(),
        );
        let config = t.s.dir.path().join(format!("fedsched-{name}.toml"));
        std::fs::write(&config, text).expect("write config");
        Instance { name: name.to_string(), config, state, child: None, logs: Vec::new() }
    }

    fn start(&mut self) {
        let _ = std::fs::remove_file(self.state.join("http.addr"));
        let (child, log) = crate::live::daemon_with(&self.config, "info");
        self.logs.push(log);
        self.child = Some(child);
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn terminate(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let start = Instant::now();
            while c.try_wait().ok().flatten().is_none() {
                if start.elapsed() > Duration::from_secs(15) {
                    let _ = c.kill();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.wait();
        }
    }

    /// Every line logged (JSON), all runs.
    fn lines(&self) -> Vec<serde_json::Value> {
        self.logs
            .iter()
            .flat_map(|l| l.lock().expect("lock").lines().map(str::to_string).collect::<Vec<_>>())
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect()
    }

    fn logged(&self, message: &str) -> Vec<serde_json::Value> {
        self.lines().into_iter().filter(|l| l["message"] == message).collect()
    }

    /// `/api/v1/status` of the running instance (Null while it is not answering).
    fn status(&self) -> serde_json::Value {
        let Ok(addr) = std::fs::read_to_string(self.state.join("http.addr")) else { return serde_json::Value::Null };
        let Ok(addr) = addr.trim().parse::<std::net::SocketAddr>() else { return serde_json::Value::Null };
        match get(addr, "/api/v1/status") {
            Some((200, body)) => serde_json::from_str(&body).unwrap_or_default(),
            _ => serde_json::Value::Null,
        }
    }

    fn readyz(&self) -> u16 {
        let addr = std::fs::read_to_string(self.state.join("http.addr")).expect("http.addr");
        get(addr.trim().parse().expect("addr"), "/readyz").map(|(c, _)| c).unwrap_or(0)
    }

    fn role(&self) -> String {
        self.status()["ha"]["role"].as_str().unwrap_or("").to_string()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub(crate) fn get(addr: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut raw = String::new();
    c.read_to_string(&mut raw).ok()?;
    let code = raw.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Some((code, raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// Unix ms of a log line's RFC 3339 UTC `timestamp` (`2026-12-02T01:17:47.123456Z`).
fn at_ms(line: &serde_json::Value) -> u64 {
    let ts = line["timestamp"].as_str().expect("timestamp");
    let n = |r: std::ops::Range<usize>| ts[r].parse::<i64>().expect("digits");
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let (hh, mm, ss) = (n(11..13), n(14..16), n(17..19));
    let frac = ts[19..].trim_start_matches('.').trim_end_matches('Z');
    let ms = format!("{frac:0<3}")[..3].parse::<i64>().expect("ms");
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000 + ms) as u64
}

/// The lease's holders as the simulator recorded them: (holder, unix ms it took the lease).
fn holders(t: &Setup) -> Vec<(String, u64)> {
    let (code, body) = t.sim.http("GET", "/admin/leases", "");
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    v["items"][0]["holders"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| (h["holder"].as_str().unwrap_or("").to_string(), h["atMs"].as_u64().unwrap_or(0)))
        .collect()
}

/// The output as the GitOps tool sees it: every file but fedsched's transient ones.
fn published(t: &Setup) -> std::collections::BTreeMap<String, String> {
    let mut files = tree(&t.s.out());
    files.retain(|k, _| !k.starts_with(".fedsched/") || k.starts_with(".fedsched/placements/"));
    files.into_iter().map(|(k, v)| (k, text(&v))).collect()
}

fn web_clusters(t: &Setup) -> Vec<(String, i64)> {
    let text = placements_of(&t.s.out()).unwrap_or_default();
    let p: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let web = p["placements"].as_array().into_iter().flatten().find(|w| w["workload"]["name"] == "web").cloned();
    web.and_then(|w| w["clusters"].as_array().cloned())
        .into_iter()
        .flatten()
        .map(|c| (c["name"].as_str().unwrap_or("").to_string(), c["replicas"].as_i64().unwrap_or(0)))
        .collect()
}

/// A second policy for web, of higher priority, without preemption: the first claimer keeps
/// the template (Karmada's rule, which the store remembers). An instance that forgot the
/// claim would move web to member-001 alone.
const RIVAL: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: web-rival}
spec:
  priority: 10
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}
  placement:
    clusterAffinity: {clusterNames: [member-001]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
"#;

fn wait_role(i: &Instance, role: &str, limit: Duration) {
    wait_for(&format!("{} to be {role}", i.name), limit, || i.role() == role);
}

#[test]
fn one_leader_publishes_and_a_standby_takes_over_without_changing_a_placement() {
    let t = setup_with(3, false, POLL, &[]);
    let mut a = Instance::new(&t, "a", "member-000");
    let mut b = Instance::new(&t, "b", "member-001");
    a.start();
    wait_role(&a, "leader", Duration::from_secs(30));
    wait_for("a's first publish", Duration::from_secs(30), || web_clusters(&t).len() >= 2);
    // The rival policy arrives; the first claimer keeps web.
    let passes = a.logged("reconcile done").len();
    t.s.write("apps/rival.yaml", RIVAL);
    wait_for("a's pass after the rival policy", Duration::from_secs(20), || {
        a.logged("reconcile done").iter().skip(passes).any(|l| l["trigger"] == "policy-change")
    });
    let division = web_clusters(&t);
    assert!(division.len() >= 2, "web stays divided by its first claimer: {division:?}");
    assert_eq!(division.iter().map(|(_, r)| r).sum::<i64>(), 6);

    b.start();
    wait_for("b's shadow passes", Duration::from_secs(30), || {
        b.logged("reconcile done in shadow; nothing published").len() >= 3
    });
    // Exactly one publishes: a leads, b stands by (ready, serving its own store) and knows a.
    let sb = b.status();
    assert_eq!(sb["ha"]["role"], "standby", "{sb}");
    assert_eq!(sb["ha"]["holder"], "a", "{sb}");
    assert_eq!(b.readyz(), 200, "a standby is ready");
    assert_eq!(a.role(), "leader");
    assert!(b.logged("reconcile done").is_empty(), "the standby published");
    let metrics = get(
        std::fs::read_to_string(b.state.join("http.addr")).expect("addr").trim().parse().expect("addr"),
        "/metrics",
    )
    .expect("metrics")
    .1;
    assert!(metrics.contains("fedsched_ha_leader{identity=\"b\"} 0"), "{metrics}");
    // The leader owns the shared output directory; the standby does not.
    assert_eq!(owner(&t), canonical(&a.state), "the leader owns the output directory");

    // kill -9 the leader: b takes over within the lease duration and one pass.
    let before = published(&t);
    let killed = Instant::now();
    a.kill9();
    wait_for("b's takeover pass", Duration::from_secs(30), || !b.logged("reconcile done").is_empty());
    let took = killed.elapsed();
    eprintln!("takeover after kill -9: {} ms (lease {LEASE_MS} ms)", took.as_millis());
    let pass_ms = b.logged("reconcile done")[0]["duration_ms"].as_u64().unwrap_or(0);
    assert!(
        took < Duration::from_millis(LEASE_MS + 300 * 2 + pass_ms + 3000),
        "takeover took {took:?} (pass {pass_ms} ms)"
    );
    // A few more passes as the leader: not a byte of the output changed.
    let n = b.logged("reconcile done").len();
    wait_for("two more passes of b", Duration::from_secs(20), || b.logged("reconcile done").len() >= n + 2);
    assert_eq!(published(&t), before, "the takeover changed the output");
    assert_eq!(web_clusters(&t), division);
    let adopted = b.logged("takeover: adopted the published placements; publishing as the leader");
    assert_eq!(adopted.len(), 1, "one takeover");
    assert!(adopted[0]["changed"].as_u64().unwrap_or(0) >= 1, "b's own store had nothing recorded: {}", adopted[0]);
    let sb = b.status();
    assert_eq!((sb["ha"]["role"].as_str(), sb["ha"]["holder"].as_str()), (Some("leader"), Some("b")), "{sb}");
    assert_eq!(sb["ha"]["transitions"], 1, "{sb}");
    assert_eq!(owner(&t), canonical(&b.state), "the new leader owns the output directory");
}

/// The state directory named by the output directory's owner file.
fn owner(t: &Setup) -> String {
    let bytes = std::fs::read(t.s.out().join(".fedsched/owner")).unwrap_or_default();
    let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    doc["state_dir"].as_str().unwrap_or("").to_string()
}

fn canonical(p: &std::path::Path) -> String {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf()).display().to_string()
}

#[test]
fn a_leader_cut_off_from_the_lease_stops_publishing_before_its_lease_expires() {
    let t = setup_with(2, false, POLL, &[]);
    let mut a = Instance::new(&t, "a", "member-000");
    let mut b = Instance::new(&t, "b", "member-001");
    a.start();
    wait_role(&a, "leader", Duration::from_secs(30));
    b.start();
    wait_for("b's shadow pass", Duration::from_secs(30), || {
        !b.logged("reconcile done in shadow; nothing published").is_empty()
    });
    wait_for("a to publish as leader", Duration::from_secs(20), || a.logged("reconcile done").len() >= 2);
    // a's lease requests hang from now on; its members and b's lease path still answer.
    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-000/leases/fault", r#"{"timeout": true}"#);
    assert_eq!(code, 200, "{body}");
    wait_role(&b, "leader", Duration::from_secs(30));
    wait_for("a to log the loss", Duration::from_secs(10), || {
        !a.logged("leadership lost: publishing stops").is_empty()
    });
    let lost = at_ms(&a.logged("leadership lost: publishing stops")[0]);
    let b_took = holders(&t).iter().find(|(h, _)| h == "b").map(|(_, at)| *at).expect("b took the lease");
    assert!(lost < b_took, "a stopped at {lost}, b acquired at {b_took}");
    for pass in a.logged("reconcile done") {
        assert!(at_ms(&pass) < b_took, "a published at {} after b acquired at {b_took}", at_ms(&pass));
    }
    // a goes on polling and deciding in shadow, ready for its turn.
    let shadow = a.logged("reconcile done in shadow; nothing published").len();
    wait_for("a's shadow passes", Duration::from_secs(20), || {
        a.logged("reconcile done in shadow; nothing published").len() > shadow
    });
    assert_eq!(a.role(), "standby");
    assert_eq!(a.readyz(), 200);
}

/// A small deterministic generator (xorshift): the same restarts every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn instances_restarted_at_random_never_publish_at_the_same_time() {
    let t = setup_with(3, false, POLL, &[]);
    let mut all: Vec<Instance> = ["a", "b", "c"]
        .iter()
        .zip(["member-000", "member-001", "member-002"])
        .map(|(n, v)| Instance::new(&t, n, v))
        .collect();
    for i in &mut all {
        i.start();
    }
    wait_for("a first leader", Duration::from_secs(40), || all.iter().any(|i| i.role() == "leader"));
    let mut rng = Rng(0x5eed_f00d);
    for _ in 0..50 {
        let k = rng.next(3) as usize;
        let running = all.iter().filter(|i| i.child.is_some()).count();
        match (all[k].child.is_some(), rng.next(2)) {
            (true, _) if running == 1 => all[k].kill9(),
            (true, 0) => all[k].kill9(),
            (true, _) => all[k].terminate(),
            (false, _) => all[k].start(),
        }
        if all.iter().all(|i| i.child.is_none()) {
            all[(k + 1) % 3].start();
        }
        std::thread::sleep(Duration::from_millis(200 + rng.next(1300)));
    }
    for i in &mut all {
        if i.child.is_none() {
            i.start();
        }
    }
    wait_for("a leader at the end", Duration::from_secs(40), || all.iter().any(|i| i.role() == "leader"));
    for i in &mut all {
        i.terminate();
    }

    // Tenures from the simulator's record of the lease: [took it, next holder took it).
    let h = holders(&t);
    let tenures: Vec<(String, u64, u64)> = h
        .iter()
        .enumerate()
        .map(|(n, (who, from))| (who.clone(), *from, h.get(n + 1).map(|(_, at)| *at).unwrap_or(u64::MAX)))
        .collect();
    let mut publishers = std::collections::BTreeSet::new();
    let mut passes = 0;
    for i in &all {
        for pass in i.logged("reconcile done") {
            let end = at_ms(&pass);
            let started = end - pass["duration_ms"].as_u64().unwrap_or(0);
            let written = end - pass["record_ms"].as_u64().unwrap_or(0);
            let inside = tenures.iter().any(|(who, from, to)| *who == i.name && *from <= started + 5 && written <= *to);
            assert!(inside, "{} published during [{started}, {written}] outside its tenure: {tenures:?}", i.name);
            publishers.insert(i.name.clone());
            passes += 1;
        }
    }
    eprintln!("{passes} published passes by {publishers:?}; {} changes of holder", tenures.len());
    assert!(publishers.len() >= 2, "the restarts never moved the lease: {tenures:?}");
    assert!(tenures.len() >= 4, "{tenures:?}");
}

const EXTRA: &str = r#"apiVersion: v1
kind: ConfigMap
metadata: {name: extra, namespace: shop}
data: {k: v}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: extra}
spec:
  resourceSelectors:
  - {apiVersion: v1, kind: ConfigMap, name: extra, namespace: shop}
  placement:
    clusterAffinity: {clusterNames: [member-000]}
"#;

fn git(args: &[&str]) -> String {
    let o = Command::new("git").args(args).output().expect("git");
    assert!(o.status.success(), "git {args:?}: {}", text(&o.stderr));
    text(&o.stdout).trim().to_string()
}

#[test]
fn in_git_mode_the_new_leader_continues_the_old_leaders_history() {
    let t = setup_with(2, false, POLL, &[]);
    let remote = t.s.dir.path().join("remote.git");
    let remote_s = remote.display().to_string();
    git(&["init", "-q", "--bare", "-b", "main", &remote_s]);
    let cfg = format!("[git]\nenabled = true\nremote = {remote_s:?}\nbranch = \"main\"\npush = true\n");
    let (out_a, out_b) = (t.s.dir.path().join("out-a"), t.s.dir.path().join("out-b"));
    let mut a = Instance::with(&t, "a", "member-000", Some(&out_a), &cfg);
    let mut b = Instance::with(&t, "b", "member-001", Some(&out_b), &cfg);
    let gd = format!("--git-dir={remote_s}");
    let head = || {
        let o = Command::new("git").args([gd.as_str(), "rev-parse", "-q", "--verify", "main"]).output().expect("git");
        text(&o.stdout).trim().to_string()
    };
    a.start();
    wait_role(&a, "leader", Duration::from_secs(30));
    wait_for("a's first push", Duration::from_secs(30), || !head().is_empty());
    b.start();
    wait_for("b's shadow passes", Duration::from_secs(30), || {
        b.logged("reconcile done in shadow; nothing published").len() >= 2
    });
    assert!(!out_b.join(".fedsched/placements/ff.json").exists(), "the standby wrote its output");
    let pushed = head();
    // The summary a pushed: each shard's path and blob id (`mode blob id\tpath` lines).
    let pushed_shards: Vec<(String, String)> = git(&[&gd, "ls-tree", "-r", "main", ".fedsched/placements"])
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(head, path)| (path.to_string(), head.rsplit(' ').next().unwrap_or("").to_string()))
        .collect();
    assert_eq!(pushed_shards.len(), 256, "{pushed_shards:?}");

    a.kill9();
    wait_for("b's takeover passes", Duration::from_secs(30), || b.logged("reconcile done").len() >= 2);
    assert_eq!(
        b.logged("takeover: the output is the remote branch as the last leader pushed it").len(),
        1,
        "b synced its work tree before adopting"
    );
    // Nothing changed: no new commit, the same placements.
    assert_eq!(head(), pushed, "the takeover committed a change");
    let paths: Vec<String> = pushed_shards.iter().map(|(p, _)| out_b.join(p).display().to_string()).collect();
    let args: Vec<&str> = std::iter::once("hash-object").chain(paths.iter().map(String::as_str)).collect();
    let b_ids = git(&args);
    assert_eq!(
        b_ids.lines().collect::<Vec<_>>(),
        pushed_shards.iter().map(|(_, id)| id.as_str()).collect::<Vec<_>>(),
        "b's summary"
    );
    // A change: b commits on top of a's history and pushes fast-forward.
    t.s.write("apps/extra.yaml", EXTRA);
    wait_for("b's push of the change", Duration::from_secs(30), || head() != pushed);
    let new = head();
    git(&[&gd, "merge-base", "--is-ancestor", &pushed, &new]);
    assert_eq!(git(&[&gd, "rev-list", "--count", &format!("{pushed}..{new}")]), "1");
    assert!(git(&[&gd, "rev-list", "--merges", "main"]).is_empty(), "a merge in the output history");
    assert!(b.lines().iter().all(|l| l["message"] != "push failed"), "b's push was rejected");
}

#[test]
fn render_refuses_a_configuration_with_ha() {
    let t = setup_with(1, false, POLL, &[]);
    let a = Instance::new(&t, "a", "member-000");
    let o = fedsched(&["render", "-c", a.config.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(64), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("only the elected leader"), "{}", text(&o.stderr));
    assert!(!t.s.out().join(".fedsched/placements/ff.json").exists(), "render wrote the output");
}

#[test]
fn a_leader_does_not_publish_into_an_output_directory_another_daemon_owns() {
    let t = setup_with(2, false, POLL, &[]);
    // A daemon without [ha], its own state directory, the same output directory.
    let base = std::fs::read_to_string(&t.config).expect("config");
    let old = format!("state_dir = {:?}", t.s.state().display().to_string());
    assert!(base.contains(&old), "the setup's config names its state_dir");
    let solo_state = t.s.dir.path().join("state-solo");
    let solo_config = t.s.dir.path().join("fedsched-solo.toml");
    let solo_text = base.replace(&old, &format!("state_dir = {:?}", solo_state.display().to_string()));
    std::fs::write(&solo_config, solo_text).expect("write config");
    let (solo, solo_log) = crate::live::daemon_with(&solo_config, "info");
    /// Killed if the test fails before it stops it.
    struct Solo(Child);
    impl Drop for Solo {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut solo = Solo(solo);
    wait_for("the solo daemon's first pass", Duration::from_secs(30), || {
        solo_log.lock().map(|l| l.contains("reconcile done")).unwrap_or(false)
    });
    assert_eq!(owner(&t), canonical(&solo_state));

    // The HA instance wins the lease but not the directory: it does not publish.
    let mut a = Instance::new(&t, "a", "member-000");
    a.start();
    wait_for("a's refused takeover", Duration::from_secs(30), || {
        !a.logged("takeover: the output directory is not ours; not publishing").is_empty()
    });
    let refused = a.logged("takeover: the output directory is not ours; not publishing");
    let error = refused[0]["error"].as_str().unwrap_or("").to_string();
    assert!(error.contains(&solo.0.id().to_string()) && error.contains("fedsched run"), "{error}");
    assert!(a.logged("reconcile done").is_empty(), "a published beside the solo daemon");
    assert_eq!(refused.len(), 1, "refused once per term, not every turn of the loop");

    // The solo daemon stops: a claims the directory and publishes.
    let _ = Command::new("kill").args(["-TERM", &solo.0.id().to_string()]).status();
    let _ = solo.0.wait();
    wait_for("a's takeover pass", Duration::from_secs(30), || !a.logged("reconcile done").is_empty());
    assert_eq!(owner(&t), canonical(&a.state));
}

const RETRY_MS: u64 = 300;

/// Wall-clock unix ms (the clock the instances' log lines and the simulator's record use).
fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill").args(["-s", sig, &pid.to_string()]).status().expect("kill");
    assert!(status.success(), "kill -{sig} {pid}");
}

impl Instance {
    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGSTOP: nothing of the process runs (a GC stall, a frozen VM).
    fn pause(&self) {
        signal(self.pid(), "STOP");
    }

    fn resume(&self) {
        signal(self.pid(), "CONT");
    }

    /// Log lines with `message` at or after unix ms `from`.
    fn logged_since(&self, message: &str, from: u64) -> Vec<serde_json::Value> {
        self.logged(message).into_iter().filter(|l| at_ms(l) >= from).collect()
    }
}

/// Every write of the lease the simulator served: (holder, unix ms).
fn lease_writes(t: &Setup) -> Vec<(String, u64)> {
    let (code, body) = t.sim.http("GET", "/admin/leases", "");
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    v["items"][0]["writes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| (h["holder"].as_str().unwrap_or("").to_string(), h["atMs"].as_u64().unwrap_or(0)))
        .collect()
}

/// The first write of the lease by a holder at or after `from` (unix ms): a leader renewing or
/// acquiring then.
fn leader_since(t: &Setup, from: u64) -> Option<(String, u64)> {
    lease_writes(t).into_iter().find(|(h, at)| !h.is_empty() && *at >= from)
}

/// The holder of the lease at unix ms `at`, by the simulator's record.
fn holder_at(history: &[(String, u64)], at: u64) -> Option<&str> {
    history.iter().take_while(|(_, from)| *from <= at).last().map(|(h, _)| h.as_str())
}

/// Every published pass of `all` (its fence check to its publish) lies inside its publisher's
/// tenure of the lease. Returns the number of passes checked.
fn assert_passes_inside_tenures(t: &Setup, all: &[&Instance]) -> usize {
    let h = holders(t);
    let tenures: Vec<(String, u64, u64)> = h
        .iter()
        .enumerate()
        .map(|(n, (who, from))| (who.clone(), *from, h.get(n + 1).map(|(_, at)| *at).unwrap_or(u64::MAX)))
        .collect();
    let mut passes = 0;
    for i in all {
        for pass in i.logged("reconcile done") {
            let end = at_ms(&pass);
            let started = end - pass["duration_ms"].as_u64().unwrap_or(0);
            let written = end - pass["record_ms"].as_u64().unwrap_or(0);
            let inside = tenures.iter().any(|(who, from, to)| *who == i.name && *from <= started + 5 && written <= *to);
            assert!(inside, "{} published during [{started}, {written}] outside its tenure: {tenures:?}", i.name);
            passes += 1;
        }
    }
    passes
}

#[test]
fn a_leader_paused_past_its_lease_sees_the_new_holder_within_a_retry_period_and_never_publishes_again() {
    let t = setup_with(2, false, POLL, &[]);
    let mut a = Instance::new(&t, "a", "member-000");
    let mut b = Instance::new(&t, "b", "member-001");
    a.start();
    wait_role(&a, "leader", Duration::from_secs(30));
    b.start();
    wait_for("b's shadow passes", Duration::from_secs(30), || {
        b.logged("reconcile done in shadow; nothing published").len() >= 2
    });
    wait_for("a to publish as leader", Duration::from_secs(20), || a.logged("reconcile done").len() >= 2);
    let paused = now_ms();
    a.pause();
    wait_role(&b, "leader", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis((3 * LEASE_MS).saturating_sub(now_ms() - paused)));
    let resumed = now_ms();
    a.resume();
    wait_for("a to observe b", Duration::from_secs(10), || {
        a.logged_since("lease holder observed", resumed).iter().any(|l| l["holder"] == "b")
    });
    let seen = a.logged_since("lease holder observed", resumed).into_iter().find(|l| l["holder"] == "b").expect("seen");
    let took = at_ms(&seen) - resumed;
    eprintln!("paused {} ms; a saw b {took} ms after its resumption", resumed - paused);
    assert!(took <= RETRY_MS, "a saw the new holder {took} ms after its resumption (retry period {RETRY_MS} ms)");
    // a goes on in shadow and never published after b took the lease.
    let shadow = a.logged("reconcile done in shadow; nothing published").len();
    wait_for("a's shadow passes", Duration::from_secs(20), || {
        a.logged("reconcile done in shadow; nothing published").len() > shadow
    });
    assert_eq!(a.role(), "standby");
    assert_eq!(a.status()["ha"]["holder"], "b");
    let b_took = holders(&t).iter().find(|(h, _)| h == "b").map(|(_, at)| *at).expect("b took the lease");
    assert!(a.logged("reconcile done").iter().all(|p| at_ms(p) < b_took), "a published after b took the lease");
    assert!(assert_passes_inside_tenures(&t, &[&a, &b]) >= 2);
}

#[test]
fn a_sole_instance_paused_past_its_lease_takes_it_back_and_publishes() {
    let t = setup_with(1, false, POLL, &[]);
    let mut a = Instance::new(&t, "a", "member-000");
    a.start();
    wait_role(&a, "leader", Duration::from_secs(30));
    wait_for("a's first publish", Duration::from_secs(30), || !a.logged("reconcile done").is_empty());
    a.pause();
    std::thread::sleep(Duration::from_millis(3 * LEASE_MS));
    let resumed = now_ms();
    a.resume();
    wait_for("a to lead again", Duration::from_secs(20), || {
        !a.logged_since("lease acquired: this instance is the leader", resumed).is_empty()
    });
    let again = at_ms(&a.logged_since("lease acquired: this instance is the leader", resumed)[0]) - resumed;
    eprintln!("a sole instance paused {} ms took its lease back {again} ms after its resumption", 3 * LEASE_MS);
    let bound = LEASE_MS + 2 * RETRY_MS;
    assert!(again <= bound, "the sole instance led again {again} ms after its resumption (bound {bound} ms)");
    wait_for("a's pass as the leader again", Duration::from_secs(20), || {
        a.logged_since("reconcile done", resumed).iter().any(|p| p["trigger"] == "takeover")
    });
    assert_eq!(a.role(), "leader");
}

#[test]
fn the_host_api_stopped_past_the_lease_leaves_a_leader_within_the_bound_of_its_return() {
    let t = setup_with(2, false, POLL, &[]);
    let mut a = Instance::new(&t, "a", "member-000");
    let mut b = Instance::new(&t, "b", "member-001");
    a.start();
    wait_role(&a, "leader", Duration::from_secs(30));
    b.start();
    wait_for("b's shadow passes", Duration::from_secs(30), || {
        !b.logged("reconcile done in shadow; nothing published").is_empty()
    });
    let stopped = now_ms();
    signal(t.sim.pid(), "STOP");
    std::thread::sleep(Duration::from_millis(3 * LEASE_MS));
    let back = now_ms();
    signal(t.sim.pid(), "CONT");
    // a stopped publishing at its renew deadline, while the API was stopped.
    wait_for("a to log the loss", Duration::from_secs(10), || {
        !a.logged_since("leadership lost: publishing stops", stopped).is_empty()
    });
    let lost = at_ms(&a.logged_since("leadership lost: publishing stops", stopped)[0]);
    assert!(lost < back, "a stepped down at {lost}, after the API came back at {back}");
    assert!(a.logged("reconcile done").iter().all(|p| at_ms(p) <= lost), "a published after its renew deadline");
    wait_for("a leader again", Duration::from_secs(20), || leader_since(&t, back).is_some());
    let (who, at) = leader_since(&t, back).expect("leader");
    let after = at - back;
    eprintln!("host API stopped {} ms: {who} led again {after} ms after it came back", back - stopped);
    let bound = LEASE_MS + 2 * RETRY_MS;
    assert!(after <= bound, "{who} led {after} ms after the host API came back (bound {bound} ms)");
    assert!(assert_passes_inside_tenures(&t, &[&a, &b]) >= 1);
}

/// A bare remote whose `reference-transaction` hook records every ref update it commits, with
/// the time (unix ns) it did: the remote's own account of what landed when.
struct Remote {
    path: PathBuf,
    log: PathBuf,
}

impl Remote {
    fn new(t: &Setup) -> Remote {
        let path = t.s.dir.path().join("remote.git");
        let log = t.s.dir.path().join("remote-updates.log");
        git(&["init", "-q", "--bare", "-b", "main", &path.display().to_string()]);
        let hook = path.join("hooks/reference-transaction");
        std::fs::create_dir_all(hook.parent().expect("hooks")).expect("mkdir");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\n[ \"$1\" = committed ] || exit 0\nnow=$(date +%s%N)\nwhile read old new ref; do echo \"$now $old $new $ref\" >> {:?}; done\n",
                log.display().to_string()
            ),
        )
        .expect("hook");
        git(&["-C", &path.display().to_string(), "config", "core.logAllRefUpdates", "false"]);
        let o = Command::new("chmod").arg("+x").arg(&hook).output().expect("chmod");
        assert!(o.status.success());
        Remote { path, log }
    }

    fn gd(&self) -> String {
        format!("--git-dir={}", self.path.display())
    }

    /// The branch's commit ("" before the first push).
    fn head(&self) -> String {
        let o = Command::new("git")
            .args([self.gd().as_str(), "rev-parse", "-q", "--verify", "main"])
            .output()
            .expect("git");
        text(&o.stdout).trim().to_string()
    }

    fn author(&self, sha: &str) -> String {
        git(&[&self.gd(), "log", "-1", "--format=%an", sha])
    }

    /// Every update of the branch the remote committed: (unix ms, old, new), in order.
    fn updates(&self) -> Vec<(u64, String, String)> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f.len() == 4 && f[3] == "refs/heads/main")
                    .then(|| (f[0].parse::<u64>().unwrap_or(0) / 1_000_000, f[1].to_string(), f[2].to_string()))
            })
            .collect()
    }

    /// Every update of the branch landed while its author held the lease (by the simulator's
    /// record), and the remote's account is whole (each update starts where the last ended, the
    /// last is the branch). Returns the number of updates.
    fn assert_every_update_by_the_holder(&self, t: &Setup) -> usize {
        let history = holders(t);
        // The hooks of two pushes that land one after the other run concurrently and may append
        // out of order: the remote's account is the chain of updates from the first push on.
        let mut logged = self.updates();
        let mut updates = Vec::with_capacity(logged.len());
        let mut tip = "0".repeat(40);
        while let Some(i) = logged.iter().position(|(_, old, _)| *old == tip) {
            let update = logged.remove(i);
            tip = update.2.clone();
            updates.push(update);
        }
        assert!(
            logged.is_empty(),
            "updates of the branch the remote's log does not chain: {logged:?} after {updates:?}"
        );
        let mut last = "0".repeat(40);
        for (at, old, new) in &updates {
            assert_eq!(*old, last, "an update of the branch the remote's log does not have, before {new}");
            let author = self.author(new);
            let holder = holder_at(&history, *at).unwrap_or("");
            assert_eq!(
                author.strip_prefix("fedsched-").unwrap_or(&author),
                holder,
                "{new} by {author} landed at {at} while the lease was {holder:?}'s: {history:?}"
            );
            last = new.clone();
        }
        assert_eq!(last, self.head(), "the branch moved without the remote's log");
        updates.len()
    }
}

/// A git-mode instance: its own work tree, the shared remote, its own author name.
fn git_instance(t: &Setup, name: &str, via: &str, remote: &str) -> Instance {
    let out = t.s.dir.path().join(format!("out-{name}"));
    let cfg = format!(
        "[git]\nenabled = true\nremote = {remote:?}\nbranch = \"main\"\npush = true\nauthor_name = \"fedsched-{name}\"\n"
    );
    Instance::with(t, name, via, Some(&out), &cfg)
}

/// A ConfigMap whose data changes with `n`: each change is a commit to push.
fn churn(n: u64) -> String {
    EXTRA.replace("data: {k: v}", &format!("data: {{k: \"{n}\"}}"))
}

#[test]
fn a_push_in_flight_when_the_lease_moves_is_killed_and_never_lands() {
    let t = setup_with(2, false, POLL, &[]);
    let remote = Remote::new(&t);
    // a reaches the remote through a receive-pack that waits while a flag file exists.
    let (flag, started) = (t.s.dir.path().join("hold-pushes"), t.s.dir.path().join("push-started"));
    let slow = t.s.dir.path().join("slow-receive-pack");
    std::fs::write(
        &slow,
        format!(
            "#!/bin/sh\nif [ -e {flag:?} ]; then touch {started:?}; while [ -e {flag:?} ]; do sleep 0.05; done; fi\nexec git-receive-pack \"$@\"\n",
            flag = flag.display().to_string(),
            started = started.display().to_string()
        ),
    )
    .expect("script");
    assert!(Command::new("chmod").arg("+x").arg(&slow).status().expect("chmod").success());
    let out_a = t.s.dir.path().join("out-a");
    let oa = out_a.display().to_string();
    git(&["init", "-q", "-b", "main", &oa]);
    git(&["-C", &oa, "remote", "add", "origin", &remote.path.display().to_string()]);
    git(&["-C", &oa, "config", "remote.origin.receivepack", &slow.display().to_string()]);
    let mut a = git_instance(&t, "a", "member-000", "origin");
    let mut b = git_instance(&t, "b", "member-001", &remote.path.display().to_string());
    a.start();
    wait_role(&a, "leader", Duration::from_secs(30));
    wait_for("a's first push", Duration::from_secs(30), || !remote.head().is_empty());
    b.start();
    wait_for("b's shadow passes", Duration::from_secs(30), || {
        b.logged("reconcile done in shadow; nothing published").len() >= 2
    });
    let before = remote.head();
    // a's next push hangs in the remote; then a is cut off from the lease.
    std::fs::write(&flag, "").expect("flag");
    t.s.write("apps/extra.yaml", EXTRA);
    wait_for("a's push in flight", Duration::from_secs(30), || started.exists());
    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-000/leases/fault", r#"{"timeout": true}"#);
    assert_eq!(code, 200, "{body}");
    wait_role(&b, "leader", Duration::from_secs(30));
    wait_for("b's push of the change", Duration::from_secs(30), || {
        let head = remote.head();
        head != before && remote.author(&head) == "fedsched-b"
    });
    // The push a started inside its lease was killed at its renew deadline, before b took over.
    let killed: Vec<serde_json::Value> = a
        .logged("push failed")
        .into_iter()
        .filter(|l| l["error"].as_str().is_some_and(|e| e.contains("renew deadline")))
        .collect();
    assert!(!killed.is_empty(), "a's push was not killed at its deadline: {:?}", a.logged("push failed"));
    let b_took = holders(&t).iter().find(|(h, _)| h == "b").map(|(_, at)| *at).expect("b took the lease");
    assert!(at_ms(&killed[0]) < b_took, "a's push outlived its lease");
    // Release what a's push was waiting for: nothing of a lands, now or later.
    std::fs::remove_file(&flag).expect("flag");
    t.s.write("apps/extra.yaml", &churn(1));
    wait_for("b's next push", Duration::from_secs(30), || remote.updates().len() >= 3);
    let a_head = git(&["-C", &oa, "rev-parse", "HEAD"]);
    let o = Command::new("git").args([remote.gd().as_str(), "cat-file", "-e", &a_head]).output().expect("git");
    assert!(!o.status.success() || a_head == before, "a's commit reached the remote");
    assert!(remote.assert_every_update_by_the_holder(&t) >= 3);
    assert!(b.logged("push rejected: the remote moved").is_empty(), "b was rejected");
    assert!(b.logged("push failed").is_empty(), "b's pushes failed");
}

/// One fault of a seeded schedule.
#[derive(Debug, Clone)]
enum Fault {
    Kill(usize),
    Pause(usize),
    /// The lease endpoints under `via` (one instance's path, or all of them) fail this way.
    Outage(Vec<usize>, &'static str),
}

#[test]
fn seeded_schedules_of_kills_pauses_and_host_api_outages_keep_one_publisher_and_a_leader() {
    let t = setup_with(3, false, POLL, &[]);
    let remote = Remote::new(&t);
    let r = remote.path.display().to_string();
    let vias = ["member-000", "member-001", "member-002"];
    let mut all: Vec<Instance> = ["a", "b", "c"].iter().zip(vias).map(|(n, v)| git_instance(&t, n, v, &r)).collect();
    for i in &mut all {
        i.start();
    }
    wait_for("a first leader", Duration::from_secs(40), || all.iter().any(|i| i.role() == "leader"));
    wait_for("a first push", Duration::from_secs(40), || !remote.head().is_empty());
    // A policy that changes every ~700 ms: every leader pass has something to push.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, dir) = (Arc::clone(&stop), t.s.policies().join("apps"));
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                let _ = std::fs::write(dir.join("extra.yaml"), churn(n));
                std::thread::sleep(Duration::from_millis(700));
            }
        })
    };
    let seed: u64 = std::env::var("FEDSCHED_HA_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_0050);
    let mut rng = Rng(seed | 1);
    let bound = LEASE_MS + 2 * RETRY_MS;
    let mut faults: Vec<(Fault, u64, u64)> = Vec::new();
    for _ in 0..16 {
        let k = rng.next(3) as usize;
        let len = 200 + rng.next(4800);
        let fault = match rng.next(6) {
            0 | 1 => Fault::Kill(k),
            2 | 3 => Fault::Pause(k),
            4 => Fault::Outage(vec![0, 1, 2], ["timeout", "status", "latency"][rng.next(3) as usize]),
            _ => Fault::Outage(vec![k], ["timeout", "status", "latency"][rng.next(3) as usize]),
        };
        let start = now_ms();
        match &fault {
            Fault::Kill(k) => all[*k].kill9(),
            Fault::Pause(k) => all[*k].pause(),
            Fault::Outage(on, mode) => {
                let body = match *mode {
                    "timeout" => r#"{"timeout": true}"#,
                    "status" => r#"{"status": 503}"#,
                    _ => r#"{"latencyMs": 1200}"#,
                };
                for v in on {
                    let (code, b) = t.sim.http("PUT", &format!("/admin/clusters/{}/leases/fault", vias[*v]), body);
                    assert_eq!(code, 200, "{b}");
                }
            }
        }
        std::thread::sleep(Duration::from_millis(len));
        match &fault {
            Fault::Kill(k) => all[*k].start(),
            Fault::Pause(k) => all[*k].resume(),
            Fault::Outage(on, _) => {
                for v in on {
                    let (code, b) = t.sim.http("DELETE", &format!("/admin/clusters/{}/leases/fault", vias[*v]), "");
                    assert_eq!(code, 200, "{b}");
                }
            }
        }
        faults.push((fault, start, now_ms()));
        // Quiet for a while: often longer than the bound, so that it is checked.
        std::thread::sleep(Duration::from_millis(rng.next(2 * bound + 1000)));
    }
    std::thread::sleep(Duration::from_millis(bound + 500));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = writer.join();
    let ended = now_ms();
    for i in &mut all {
        i.terminate();
    }

    // Never two publishers, never a push landing after its author lost the lease: the remote's
    // own account of every update against the simulator's record of the lease.
    let updates = remote.assert_every_update_by_the_holder(&t);
    // A leader within lease_duration + 2 × retry_period after every fault that was followed by
    // that much quiet.
    let mut checked = 0;
    for (n, (fault, _, end)) in faults.iter().enumerate() {
        let quiet_until = faults.get(n + 1).map_or(ended, |f| f.1);
        if *end + bound > quiet_until {
            continue;
        }
        let led = lease_writes(&t).iter().find(|(h, at)| !h.is_empty() && *at >= *end).map(|(h, at)| (h.clone(), *at));
        let (who, at) = led.unwrap_or_else(|| panic!("no leader after {fault:?} (ended {end})"));
        assert!(at <= end + bound, "{who} led {} ms after {fault:?} ended (bound {bound} ms)", at - end);
        checked += 1;
    }
    let h = holders(&t);
    eprintln!(
        "seed {seed:#x}: {} faults, {checked} followed by a leader within {bound} ms, {updates} pushes landed, {} changes of holder",
        faults.len(),
        h.len()
    );
    assert!(checked >= 4, "too few faults were followed by quiet: {faults:?}");
    assert!(h.len() >= 3, "the faults never moved the lease: {h:?}");
    assert!(updates >= 5, "too few pushes");
}

/// A takeover in the middle of a progressive rollout (issue 52): the leader `a` holds api's
/// rollout at its second stage (`next`, waiting for its approval); `a` is killed and `b`
/// takes over. `b` continues at `next`: the canary and `next` keep the new version (no restart
/// at the first stage), the last member keeps the previous one (no stage skipped, no gate
/// skipped), until the approval commit releases it.
#[test]
fn a_takeover_in_the_middle_of_a_rollout_continues_at_its_stage() {
    let t = setup_with(3, true, POLL, &[]);
    let write = |image: &str, approved: &str| {
        let text = crate::rollout::app_with(image, "", approved)
            .replace("{name: next, maxConcurrency: 1}", "{name: next, maxConcurrency: 1, requireApproval: true}");
        assert!(text.contains("requireApproval"), "{text}");
        t.s.write("apps/api.yaml", &text);
    };
    write("api:1", "");
    let mut a = Instance::new(&t, "a", "member-000");
    let mut b = Instance::new(&t, "b", "member-001");
    a.start();
    wait_role(&a, "leader", Duration::from_secs(30));
    wait_for("api:1 everywhere", Duration::from_secs(60), || crate::rollout::images(&t) == ["api:1"; 3]);
    b.start();
    wait_for("b's shadow passes", Duration::from_secs(30), || {
        b.logged("reconcile done in shadow; nothing published").len() >= 2
    });
    write("api:2", "");
    wait_for("the rollout at its second stage", Duration::from_secs(60), || {
        crate::rollout::images(&t) == ["api:2", "api:2", "api:1"]
    });
    let rollout = |i: &Instance| {
        let addr = std::fs::read_to_string(i.state.join("http.addr")).ok()?;
        let (code, body) = get(addr.trim().parse().ok()?, "/api/v1/workloads/shop/api/rollout")?;
        (code == 200).then(|| serde_json::from_str::<serde_json::Value>(&body).ok()).flatten()
    };
    wait_for("a's gate asks for the approval", Duration::from_secs(30), || {
        rollout(&a).is_some_and(|r| r.to_string().contains("\"approvalRequired\":true"))
    });

    a.kill9();
    wait_role(&b, "leader", Duration::from_secs(30));
    let n = b.logged("reconcile done").len();
    wait_for("three passes of b as the leader", Duration::from_secs(30), || b.logged("reconcile done").len() >= n + 3);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        crate::rollout::images(&t),
        ["api:2", "api:2", "api:1"],
        "b restarted the rollout or skipped a stage:\n{}",
        b.lines().iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n")
    );
    let r = rollout(&b).expect("b's rollout document");
    let doc = r.to_string();
    assert!(doc.contains("\"stage\":\"next\"") && doc.contains("\"state\":\"Progressing\""), "{r:#}");

    // The approval commit: b releases the last stage.
    write("api:2", "  approvedStages: [next]\n");
    wait_for("the last stage", Duration::from_secs(60), || crate::rollout::images(&t) == ["api:2"; 3]);
}
