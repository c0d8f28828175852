//! The daemon's HTTP listener: health, readiness, Prometheus metrics (parsed strictly), the
//! JSON API compared with the CLI's JSON (through the CLI's fallback while the daemon runs,
//! and from the store after it stopped), the bearer token, and a stuck loop that stops the
//! watchdog pings and turns `/healthz` to 503.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

const TOKEN: &str = "t0ps3cret-7d1f2a";

/// The daemon's bound HTTP address, from `<state>/http.addr`.
pub fn addr(s: &Scratch) -> String {
    let file = s.state().join("http.addr");
    wait_for("the HTTP address file", Duration::from_secs(30), || file.exists());
    std::fs::read_to_string(&file).expect("read http.addr").trim().to_string()
}

/// Starts the daemon with the HTTP listener on a free loopback port plus `http` settings.
fn start_with_http(s: &Scratch, http: &str, env: &[(&str, &str)]) -> Daemon {
    Daemon::start(s, &format!("[http]\nlisten = \"127.0.0.1:0\"\n{http}"), env)
}

/// One request ([`http_request`]) with the bearer token if given. Returns (status, headers
/// lower-cased, body).
fn request(addr: &str, method: &str, path: &str, token: Option<&str>) -> (u16, BTreeMap<String, String>, String) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let a = http_request(addr, method, path, &headers, b"");
    (a.code, a.headers, a.body)
}

fn get_json(addr: &str, path: &str, token: Option<&str>) -> Value {
    let (code, headers, body) = request(addr, "GET", path, token);
    assert_eq!(code, 200, "{path}: {body}");
    assert!(headers.get("content-type").is_some_and(|c| c.starts_with("application/json")), "{path}: {headers:?}");
    serde_json::from_str(&body).expect("json body")
}

// ------------------------------------------------------------------------------------------
// A strict parser of the Prometheus text exposition format (0.0.4).

#[derive(Debug, Default)]
struct Family {
    kind: String,
    help: bool,
}

#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse::<f64>().map_err(|e| format!("value {s:?}: {e}")),
    }
}

/// Parses `{a="x",b="y"}` (the braces included) and returns the labels and the rest.
fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    let mut rest = s.strip_prefix('{').ok_or("expected {")?;
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        }
        let eq = rest.find('=').ok_or("label without =")?;
        let name = &rest[..eq];
        if !is_label_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        rest = rest[eq + 1..].strip_prefix('"').ok_or("label value not quoted")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("unterminated label value".into()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?}")),
                },
                Some((_, '\n')) => return Err("newline in label value".into()),
                Some((_, c)) => value.push(c),
            }
        };
        if labels.insert(name.to_string(), value).is_some() {
            return Err(format!("duplicate label {name}"));
        }
        rest = &rest[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.starts_with('}') {
            return Err("expected , or }".into());
        }
    }
}

/// Parses the whole exposition; panics with the line on any deviation.
fn parse_prometheus(text: &str) -> (BTreeMap<String, Family>, Vec<Sample>) {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut samples = Vec::new();
    let mut seen = BTreeSet::new();
    let mut current: Option<String> = None;
    assert!(text.ends_with('\n'), "exposition must end with a newline");
    for (n, line) in text.lines().enumerate() {
        let fail = |m: &str| -> ! { panic!("line {}: {m}: {line:?}", n + 1) };
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let keyword = parts.next().unwrap_or("");
            let name = parts.next().unwrap_or_else(|| fail("comment without a metric name"));
            if !is_metric_name(name) {
                fail("bad metric name");
            }
            let arg = parts.next().unwrap_or_else(|| fail("missing text"));
            let f = families.entry(name.to_string()).or_default();
            match keyword {
                "HELP" => {
                    if f.help {
                        fail("second HELP");
                    }
                    f.help = true;
                }
                "TYPE" => {
                    if !f.kind.is_empty() {
                        fail("second TYPE");
                    }
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&arg) {
                        fail("unknown type");
                    }
                    if samples.iter().any(|s: &Sample| family_of(&s.name, arg) == name) {
                        fail("TYPE after samples");
                    }
                    f.kind = arg.to_string();
                    current = Some(name.to_string());
                }
                _ => {}
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or_else(|| fail("sample without value"));
        let name = &line[..name_end];
        if !is_metric_name(name) {
            fail("bad metric name");
        }
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..]).unwrap_or_else(|e| fail(&e))
        } else {
            (BTreeMap::new(), &line[name_end..])
        };
        let rest = rest.strip_prefix(' ').unwrap_or_else(|| fail("no space before the value"));
        let mut fields = rest.split(' ');
        let value = parse_value(fields.next().unwrap_or("")).unwrap_or_else(|e| fail(&e));
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().unwrap_or_else(|_| fail("bad timestamp"));
        }
        if fields.next().is_some() {
            fail("trailing fields");
        }
        // The sample belongs to the family declared last.
        let fam = current.as_deref().unwrap_or_else(|| fail("sample before any TYPE"));
        let kind = &families[fam].kind;
        if family_of(name, kind) != fam {
            fail(&format!("sample does not belong to family {fam}"));
        }
        if !seen.insert((name.to_string(), labels.clone())) {
            fail("duplicate series");
        }
        samples.push(Sample { name: name.to_string(), labels, value });
    }
    (families, samples)
}

fn family_of<'a>(sample: &'a str, kind: &str) -> &'a str {
    if kind == "histogram" || kind == "summary" {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = sample.strip_suffix(suffix) {
                return base;
            }
        }
    }
    sample
}

/// Labels of a series without `le`.
type SeriesKey = Vec<(String, String)>;

/// Histogram rules: cumulative buckets, a +Inf bucket equal to _count.
fn check_histograms(families: &BTreeMap<String, Family>, samples: &[Sample]) {
    for (name, f) in families.iter().filter(|(_, f)| f.kind == "histogram") {
        let mut series: BTreeMap<SeriesKey, Vec<(f64, f64)>> = BTreeMap::new();
        let mut counts: BTreeMap<SeriesKey, f64> = BTreeMap::new();
        for s in samples {
            let key: SeriesKey =
                s.labels.iter().filter(|(k, _)| *k != "le").map(|(k, v)| (k.clone(), v.clone())).collect();
            if s.name == format!("{name}_bucket") {
                let le = parse_value(s.labels.get("le").expect("bucket without le")).expect("le value");
                series.entry(key).or_default().push((le, s.value));
            } else if s.name == format!("{name}_count") {
                counts.insert(key, s.value);
            }
        }
        assert!(f.help, "{name} has no HELP");
        for (key, mut buckets) in series {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{name}{key:?}: buckets not cumulative");
            let last = buckets.last().expect("buckets");
            assert!(last.0.is_infinite(), "{name}{key:?}: no +Inf bucket");
            assert_eq!(Some(&last.1), counts.get(&key), "{name}{key:?}: +Inf bucket != _count");
        }
    }
}

fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && s.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .unwrap_or_else(|| panic!("no sample {name}{labels:?}"))
        .value
}

const WORKLOADS: [&str; 7] = [
    "Deployment/shop/web",
    "Deployment/shop/api",
    "Job/ml/trainer",
    "Deployment/ml/reindex",
    "Deployment/edge/edge-cache",
    "Namespace//shop",
    "ConfigMap/shop/web-config",
];
const CLUSTERS: [&str; 5] = ["eu-west-a", "eu-west-b", "us-east-gpu", "us-east-edge", "us-east-legacy"];

fn api_path(r: &str, what: &str) -> String {
    let parts: Vec<&str> = r.split('/').collect();
    let ns = if parts[1].is_empty() { "_" } else { parts[1] };
    format!("/api/v1/workloads/{ns}/{}/{}/{what}", parts[0], parts[2])
}

/// Runs a read-only CLI command with the daemon's config; returns its JSON.
fn cli_json(s: &Scratch, config: &std::path::Path, sub: &str, arg: &str) -> Value {
    let out = fedsched(&[
        sub,
        "--config",
        config.to_str().expect("utf8"),
        "--policies",
        s.policies().to_str().expect("utf8"),
        "--state",
        s.state().to_str().expect("utf8"),
        arg,
        "-o",
        "json",
    ]);
    assert!(out.status.success(), "{sub} {arg}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("cli json")
}

#[test]
fn metrics_parse_and_the_json_api_answers_like_the_cli_behind_a_token() {
    let s = Scratch::with_demo();
    let token_file = s.dir.path().join("api.token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("token");
    let d = start_with_http(&s, &format!("token_file = {:?}\n", token_file.to_str().expect("utf8")), &[]);
    let addr = addr(&s);
    wait_for("readiness", Duration::from_secs(30), || request(&addr, "GET", "/readyz", None).0 == 200);

    // Health and metrics are open; the JSON API needs the token.
    assert_eq!(request(&addr, "GET", "/healthz", None).0, 200);
    for path in ["/api/v1/clusters", "/api/v1/workloads", "/api/v1/status", &api_path(WORKLOADS[0], "explain")] {
        let (code, headers, _) = request(&addr, "GET", path, None);
        assert_eq!(code, 401, "{path} without a token");
        assert_eq!(headers.get("www-authenticate").map(String::as_str), Some("Bearer"));
        assert_eq!(request(&addr, "GET", path, Some("t0ps3cret-7d1f2b")).0, 401, "{path} with a wrong token");
        assert_eq!(request(&addr, "GET", path, Some(&TOKEN[..TOKEN.len() - 1])).0, 401, "{path} with a prefix");
        assert_eq!(request(&addr, "GET", path, Some(TOKEN)).0, 200, "{path} with the token");
    }
    // Nothing writes; unknown paths are 404.
    assert_eq!(request(&addr, "POST", "/api/v1/workloads", Some(TOKEN)).0, 405);
    assert_eq!(request(&addr, "DELETE", "/api/v1/clusters", Some(TOKEN)).0, 405);
    assert_eq!(request(&addr, "GET", "/api/v1/nope", Some(TOKEN)).0, 404);
    let (code, _, body) = request(&addr, "GET", &api_path("Deployment/shop/nope", "explain"), Some(TOKEN));
    assert_eq!(code, 404, "{body}");

    // /metrics: strict Prometheus text.
    let (code, headers, body) = request(&addr, "GET", "/metrics", None);
    assert_eq!(code, 200);
    assert_eq!(headers.get("content-type").map(String::as_str), Some("text/plain; version=0.0.4; charset=utf-8"));
    let (families, samples) = parse_prometheus(&body);
    check_histograms(&families, &samples);
    for (name, f) in &families {
        assert!(name.starts_with("fedsched_"), "{name}");
        assert!(f.help && !f.kind.is_empty(), "{name}: HELP and TYPE");
        if f.kind == "counter" {
            assert!(name.ends_with("_total"), "{name}");
        }
    }
    for s in &samples {
        for k in s.labels.keys() {
            assert!(["cluster", "phase", "outcome", "state", "le"].contains(&k.as_str()), "{}: label {k}", s.name);
        }
    }
    for name in [
        "fedsched_polls_total",
        "fedsched_poll_duration_seconds",
        "fedsched_snapshot_age_seconds",
        "fedsched_snapshot_confidence_ratio",
        "fedsched_reconcile_phase_duration_seconds",
        "fedsched_workloads",
        "fedsched_replicas_placed",
        "fedsched_files_written_total",
        "fedsched_files_removed_total",
        "fedsched_mass_deletion_holds_total",
        "fedsched_policy_load_errors_total",
        "fedsched_store_size_bytes",
        "fedsched_reconciles_total",
    ] {
        assert!(families.contains_key(name), "missing {name}");
    }
    assert_eq!(value(&samples, "fedsched_workloads", &[("state", "scheduled")]), 9.0);
    assert_eq!(value(&samples, "fedsched_workloads", &[("state", "unschedulable")]), 1.0);
    assert_eq!(value(&samples, "fedsched_workloads", &[("state", "pending_failover")]), 0.0);
    assert_eq!(value(&samples, "fedsched_reconciles_total", &[("outcome", "ok")]), 1.0);
    assert!(value(&samples, "fedsched_files_written_total", &[]) > 0.0);
    assert!(value(&samples, "fedsched_store_size_bytes", &[]) > 0.0);
    let mut phases = 0.0;
    for phase in ["load", "poll", "schedule", "decide", "render", "publish", "record"] {
        assert_eq!(value(&samples, "fedsched_reconcile_phase_duration_seconds_count", &[("phase", phase)]), 1.0);
        phases += value(&samples, "fedsched_reconcile_phase_duration_seconds_sum", &[("phase", phase)]);
    }
    // The pass's duration covers every phase.
    let pass = value(&samples, "fedsched_reconcile_duration_seconds_sum", &[]);
    assert!(pass >= phases * (1.0 - 1e-9), "pass {pass} s, its phases {phases} s");
    for c in CLUSTERS {
        assert_eq!(value(&samples, "fedsched_snapshot_confidence_ratio", &[("cluster", c)]), 1.0);
        assert!(value(&samples, "fedsched_snapshot_age_seconds", &[("cluster", c)]) < 600.0);
        assert_eq!(value(&samples, "fedsched_polls_total", &[("cluster", c), ("outcome", "offline")]), 1.0);
        assert_eq!(value(&samples, "fedsched_mass_deletion_holds_total", &[("cluster", c)]), 0.0);
        assert_eq!(value(&samples, "fedsched_cluster_ready", &[("cluster", c)]), f64::from(c != "us-east-legacy"));
    }
    assert_eq!(value(&samples, "fedsched_replicas_placed", &[("cluster", "us-east-legacy")]), 0.0);

    // The JSON API.
    let clusters = get_json(&addr, "/api/v1/clusters", Some(TOKEN));
    let list = clusters["clusters"].as_array().expect("clusters");
    let names: BTreeSet<&str> = list.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, CLUSTERS.into_iter().collect());
    for c in list {
        assert_eq!(c["confidence"], 1.0, "{c}");
        assert!(c["snapshot"]["version"].is_u64() && c["snapshot"]["ageSeconds"].is_number(), "{c}");
        let expected = if c["name"] == "us-east-legacy" { "NotReady" } else { "Ready" };
        assert_eq!(c["state"], expected, "{c}");
        assert!(c["capacity"]["available"].is_object(), "{c}");
        let placed = value(&samples, "fedsched_replicas_placed", &[("cluster", c["name"].as_str().expect("name"))]);
        assert_eq!(c["replicas"].as_f64(), Some(placed), "{c}");
    }
    let status = get_json(&addr, "/api/v1/status", Some(TOKEN));
    assert_eq!(status["ready"], true, "{status}");
    assert_eq!(status["lastPass"]["outcome"], "ok", "{status}");

    let mut api = BTreeMap::new();
    // /api/v1/workloads is what the output's placements.json says …
    let sort = |v: &Value| {
        let mut items: Vec<Value> = v["placements"].as_array().expect("placements").clone();
        items.sort_by_key(|i| i["workload"].to_string());
        items
    };
    let mut workloads = get_json(&addr, "/api/v1/workloads", Some(TOKEN));
    let on_disk: Value = serde_json::from_str(&placements_of(&s.out()).expect("read")).expect("the summary");
    // … with `fedsched get`'s columns besides the summary's fields.
    for item in workloads["placements"].as_array_mut().expect("placements") {
        let o = item.as_object_mut().expect("an object");
        for column in ["replicas", "suspended", "lazyHeld", "labels", "decidedAt"] {
            assert!(o.remove(column).is_some(), "no {column} in {o:?}");
        }
    }
    assert_eq!(sort(&workloads), sort(&on_disk));
    // `fedsched get` is the same document, through the fallback; its filters are the query's.
    let shop = get_json(&addr, "/api/v1/workloads?namespace=shop&selector=app%3Dweb", Some(TOKEN));
    let names: Vec<&str> =
        shop["placements"].as_array().expect("rows").iter().filter_map(|r| r["workload"]["name"].as_str()).collect();
    assert_eq!(names, ["web"], "{shop}");
    assert_eq!(
        cli_json(&s, &d.config, "get", "--namespace=shop"),
        get_json(&addr, "/api/v1/workloads?namespace=shop", Some(TOKEN))
    );
    api.insert(
        ("get", "--namespace=shop".to_string()),
        get_json(&addr, "/api/v1/workloads?namespace=shop", Some(TOKEN)),
    );
    assert_eq!(request(&addr, "GET", "/api/v1/workloads?cluster=nowhere", Some(TOKEN)).0, 404);
    assert_eq!(request(&addr, "GET", "/api/v1/workloads?state=sleeping", Some(TOKEN)).0, 400);
    let config = d.config.to_str().expect("utf8");
    assert_eq!(s.cmd("get", &["--config", config, "--cluster", "nowhere"]).status.code(), Some(1));

    // explain / history / snapshots / get: API == CLI through the fallback (store locked) now,
    // and == CLI from the store after the daemon stopped.
    for r in WORKLOADS {
        for what in ["explain", "history"] {
            let doc = get_json(&addr, &api_path(r, what), Some(TOKEN));
            // Ages are measured when each answers (a second apart on a loaded machine).
            let (mut cli, mut fallback) = (cli_json(&s, &d.config, what, r), doc.clone());
            strip_ages(&mut cli);
            strip_ages(&mut fallback);
            assert_eq!(cli, fallback, "{what} {r} via the fallback");
            api.insert((what, r.to_string()), doc);
        }
    }
    for c in CLUSTERS {
        let doc = get_json(&addr, &format!("/api/v1/clusters/{c}/snapshots"), Some(TOKEN));
        assert_eq!(doc["versions"].as_array().map(Vec::len), Some(1), "{doc}");
        assert_eq!(cli_json(&s, &d.config, "snapshots", c), doc, "snapshots {c} via the fallback");
        api.insert(("snapshots", c.to_string()), doc);
    }
    // Without the token in the config, the fallback is refused.
    let out = s.cmd("history", &["Deployment/shop/web", "--server", &format!("http://{addr}")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("401"), "{}", text(&out.stderr));

    let (code, stderr) = d.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(TOKEN), "the token reached the log");
    assert!(!s.state().join("http.addr").exists(), "http.addr left behind");
    for ((what, arg), doc) in &api {
        let mut cli = cli_json(&s, &s.dir.path().join("fedsched.toml"), what, arg);
        let mut doc = doc.clone();
        // Ages are measured when each answers (a second apart at most), not stored.
        strip_ages(&mut cli);
        strip_ages(&mut doc);
        assert_eq!(cli, doc, "{what} {arg}: the API and the CLI from the store differ");
    }
}

/// Removes the `observedAgeSeconds` fields (the age of an observation at the time of asking).
fn strip_ages(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("observedAgeSeconds");
            m.values_mut().for_each(strip_ages);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_ages),
        _ => {}
    }
}

#[test]
fn a_stuck_loop_stops_the_watchdog_and_fails_healthz() {
    use std::os::unix::net::UnixDatagram;
    let s = Scratch::with_demo();
    let sock_path = s.dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_millis(50))).expect("timeout");
    let d = start_with_http(
        &s,
        "heartbeat_timeout = \"1s\"\n",
        &[
            ("NOTIFY_SOCKET", sock_path.to_str().expect("utf8")),
            ("WATCHDOG_USEC", "400000"),
            ("FEDSCHED_TEST_STALL_RECONCILE_MS", "5000"),
        ],
    );
    let addr = addr(&s);
    let mut buf = [0u8; 4096];
    let mut pings: Vec<Instant> = Vec::new();
    let mut ready = false;
    let start = Instant::now();
    while !(ready && pings.len() >= 3) {
        assert!(start.elapsed() < Duration::from_secs(30), "no READY and pings: {ready} {}", pings.len());
        if let Ok(n) = sock.recv(&mut buf) {
            let m = String::from_utf8_lossy(&buf[..n]);
            ready |= m.contains("READY=1");
            if m.contains("WATCHDOG=1") {
                pings.push(Instant::now());
            }
        }
    }
    assert_eq!(request(&addr, "GET", "/healthz", None).0, 200);

    // A policy change starts a pass that stalls for 5 s inside the reconcile (stalled, and the
    // watchdog unfed, once it has run for the 1 s heartbeat timeout).
    s.write("apps/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: shop\n");
    let touched = Instant::now();
    let mut health: Vec<(Instant, u16)> = Vec::new();
    let mut last_probe = Instant::now();
    while touched.elapsed() < Duration::from_secs(10) {
        if let Ok(n) = sock.recv(&mut buf)
            && String::from_utf8_lossy(&buf[..n]).contains("WATCHDOG=1")
        {
            pings.push(Instant::now());
        }
        if last_probe.elapsed() >= Duration::from_millis(150) {
            last_probe = Instant::now();
            health.push((last_probe, request(&addr, "GET", "/healthz", None).0));
        }
    }
    let after: Vec<Instant> = pings.iter().copied().filter(|p| *p > touched).collect();
    let longest = after
        .windows(2)
        .map(|w| w[1] - w[0])
        .chain(after.first().map(|f| *f - touched))
        .max()
        .expect("pings after the change");
    assert!(longest >= Duration::from_secs(2), "watchdog pings went on during the stall (longest gap {longest:?})");
    let first_503 = health.iter().find(|(_, c)| *c == 503).map(|(t, _)| *t).expect("/healthz never said 503");
    assert!(
        health.iter().any(|(t, c)| *t > first_503 && *c == 200),
        "/healthz did not recover after the stall: {:?}",
        health.iter().map(|(_, c)| c).collect::<Vec<_>>()
    );
    assert!(after.iter().any(|p| *p > first_503), "watchdog pings did not resume after the stall");
    let (code, stderr) = d.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_port_in_use_fails_the_start_and_says_so() {
    let s = Scratch::with_demo();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let config = s.dir.path().join("fedsched.toml");
    std::fs::write(&config, format!("[http]\nlisten = \"127.0.0.1:{port}\"\n")).expect("config");
    let mut child = std::process::Command::new(bin())
        .args(["run", "--config"])
        .arg(&config)
        .arg("--policies")
        .arg(s.policies())
        .arg("--out")
        .arg(s.out())
        .arg("--state")
        .arg(s.state())
        .env_remove("NOTIFY_SOCKET")
        .env("FEDSCHED_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = capture_stderr(&mut child);
    let mut status = None;
    wait_for("the daemon to exit", Duration::from_secs(60), || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    let read = || stderr.lock().map(|e| e.clone()).unwrap_or_default();
    wait_for("the error on stderr", Duration::from_secs(10), || read().contains("already in use"));
    let err = read();
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")) && err.contains("already in use"), "{err}");
    // Nothing was published by a daemon that could not start.
    assert!(!s.out().join("eu-west-a").exists());
    drop(taken);
}
