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

fn get(addr: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
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
