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

/// Item 3: `check` reports every structural error of a document, not the first (serde stops
/// at the first, and a mapping's keys come in name order), and never the YAML parser's advice
/// to programmers.
#[test]
fn check_reports_every_structural_error_of_a_document() {
    let s = Scratch::new();
    s.write(
        "pp.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: web, namespace: shop}\n\
         spec:\n  resourceSelecters:\n  - {apiVersion: apps/v1, kind: Deployment, name: web}\n  placement:\n    \
         replicaScheduling:\n      replicaSchedulingType: Divded\n      replicaDivisionPreference: Wieghted\n",
    );
    s.write(
        "dup.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\ndata: {a: \"1\", a: \"2\"}\n",
    );
    s.write(
        "cluster.yaml",
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: m1}\nspec: {syncMode: Push, zonez: [a]}\n\
         status: {kubernetesVersion: 1, resourceSummary: {allocatable: {cpu: lots}}}\n",
    );
    let p = s.policies();
    let o = fedsched(&["check", "--policies", p.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for line in [
        "pp.yaml: document 1: spec: missing field `resourceSelectors`",
        "pp.yaml: document 1: spec.resourceSelecters: unknown field `resourceSelecters` (did you mean `resourceSelectors`?)",
        "pp.yaml: document 1: spec.placement.replicaScheduling.replicaSchedulingType: unknown variant `Divded`",
        "pp.yaml: document 1: spec.placement.replicaScheduling.replicaDivisionPreference: unknown variant `Wieghted`",
        "cluster.yaml: document 1: spec.zonez: unknown field `zonez` (did you mean `zones`?)",
        "cluster.yaml: document 1: status.kubernetesVersion: invalid type",
        "dup.yaml: document 1: invalid YAML at line 4, column 16: duplicate mapping key `a`",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    assert!(!out.contains("Options") && !out.contains("DuplicateKeyPolicy"), "{out}");
    // The JSON form lists the same findings.
    let o = fedsched(&["check", "--policies", p.to_str().expect("utf8"), "-o", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let pp = doc["findings"].as_array().expect("findings").iter().filter(|f| f["file"] == "pp.yaml").count();
    assert_eq!(pp, 4, "{doc:#}");
}

/// The demo repository with `extra` added as `apps/extra.yaml`, checked; (exit code, stderr,
/// the JSON findings).
fn check_demo_with(extra: &str) -> (Option<i32>, String, Vec<serde_json::Value>) {
    let s = Scratch::with_demo();
    s.write("apps/extra.yaml", extra);
    let p = s.policies();
    let o = fedsched(&["check", "--policies", p.to_str().expect("utf8")]);
    let j = fedsched(&["check", "--policies", p.to_str().expect("utf8"), "-o", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&j.stdout).expect("json");
    (o.status.code(), text(&o.stderr), doc["findings"].as_array().cloned().unwrap_or_default())
}

/// Item 8: a cluster name no Cluster has (placement, static weight, override target), selectors
/// matching no template, a WorkloadRebalancer naming no workload, an unknown key of `metadata`:
/// accepted (exit 0, as Karmada accepts them), each a warning naming file, document and field.
#[test]
fn typos_that_karmada_accepts_are_warned_about_not_silent() {
    let extra = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  nmae: typo
  name: api2
  namespace: shop
spec:
  replicas: 2
  selector: {matchLabels: {app: api2}}
  template:
    metadata: {labels: {app: api2}}
    spec: {containers: [{name: a, image: nginx}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: api2, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: api3}
  placement:
    clusterAffinity: {clusterNames: [eu-west-a, eu-wset-b]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - targetCluster: {clusterNames: [eu-west-z]}
          weight: 1
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: api2, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: api2}
  overrideRules:
  - targetCluster: {clusterNames: [us-esat-gpu]}
    overriders:
      labelsOverrider: [{operator: add, value: {a: b}}]
---
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {name: rb}
spec:
  workloads:
  - {apiVersion: apps/v1, kind: Deployment, name: nope, namespace: shop}
"#;
    let (code, err, findings) = check_demo_with(extra);
    assert_eq!(code, Some(0), "accepted: {err}");
    for (document, field, words) in [
        (1, "metadata.nmae", "did you mean `name`"),
        (2, "spec.resourceSelectors[0]", "matches no template"),
        (2, "spec.placement.clusterAffinity.clusterNames[1]", "did you mean `eu-west-b`"),
        (
            2,
            "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].targetCluster.clusterNames[0]",
            "`eu-west-z` names no Cluster",
        ),
        (3, "spec.overrideRules[0].targetCluster.clusterNames[0]", "did you mean `us-east-gpu`"),
        (4, "spec.workloads[0]", "names no template"),
    ] {
        let line = format!("warning: apps/extra.yaml: document {document}: {field}: ");
        assert!(err.lines().any(|l| l.starts_with(&line) && l.contains(words)), "no {line}…{words} in:\n{err}");
        assert!(
            findings.iter().any(|f| f["file"] == "apps/extra.yaml"
                && f["document"] == document
                && f["field"] == field
                && f["severity"] == "warning"),
            "{field} not in the JSON findings"
        );
    }
    // The demo itself has no such typo.
    let (_, err, _) = check_demo_with("");
    assert!(!err.contains("names no Cluster") && !err.contains("matches no template"), "{err}");
}

const GPU_FLEET: &str = r#"apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: a100
  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
spec: {syncMode: Push}
status:
  conditions: [{type: Ready, status: "True"}]
  resourceSummary:
    allocatable: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "8", pods: "110"}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: t4
  labels: {nvidia.com/gpu.product: Tesla-T4}
spec: {syncMode: Push}
status:
  conditions: [{type: Ready, status: "True"}]
  resourceSummary:
    allocatable: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "16", pods: "110"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: train
  namespace: ml
  annotations: {fedsched.io/gpu-product: NVIDIA-A100-SXM4-80GB}
spec:
  replicas: 3
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec:
      containers:
      - {name: t, image: trainer, resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: "1"}}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: train, namespace: ml}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: train}]
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
"#;

/// Item 9: `fedsched.io/gpu-product` on offline members is honoured from the Cluster object's
/// labels (`nvidia.com/gpu.product`, as on nodes): an A100-only workload goes to the A100
/// cluster only (it was split 2/1 with a T4 cluster), and explain says why the T4 one took none.
#[test]
fn gpu_product_is_honoured_on_offline_members() {
    let s = Scratch::new();
    s.write("fleet.yaml", GPU_FLEET);
    let o = s.render();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(s.out().join("a100/ml/apps_deployment_train.yaml").is_file());
    assert!(!s.out().join("t4/ml/apps_deployment_train.yaml").exists(), "an A100-only workload on a T4 cluster");
    let rendered = std::fs::read_to_string(s.out().join("a100/ml/apps_deployment_train.yaml")).expect("read");
    assert!(rendered.contains("replicas: 3"), "{rendered}");
    let e = s.cmd("explain", &["Deployment/ml/train"]);
    let shown = text(&e.stdout);
    assert!(
        shown.contains("estimator gpu-model: 0 more replicas fit")
            && shown.contains("GPU model: the replica needs nvidia.com/gpu.product in [NVIDIA-A100-SXM4-80GB]; the Cluster object has nvidia.com/gpu.product=Tesla-T4"),
        "{shown}"
    );
}

/// Item 6: explain names the limiting dimension of an offline member (`cpu: … free, … per
/// replica`), and the text view says what its `+` and `x` marks mean.
#[test]
fn explain_names_the_limiting_dimension_and_its_marks() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let e = s.cmd("explain", &["Deployment/ml/reindex"]);
    assert!(e.status.success(), "{}", text(&e.stderr));
    let shown = text(&e.stdout);
    assert!(shown.contains("clusters (+ selected, x filtered out, blank: feasible but not selected):"), "{shown}");
    // eu-west-a: 64 CPU, 24 allocated: 40 free, 40 per replica; memory 172Gi free of 64Gi each.
    assert!(shown.contains("model: resource summary: cpu: 40 free, 40 per replica: 1 replicas (limiting)"), "{shown}");
    assert!(shown.contains("model: resource summary: memory: 172Gi free, 64Gi per replica: 2 replicas\n"), "{shown}");
    // The trainer asks for a GPU: a member without any says so.
    let e = s.cmd("explain", &["Job/ml/trainer"]);
    let shown = text(&e.stdout);
    assert!(
        shown.contains("model: resource summary: nvidia.com/gpu: 0 free (the cluster has none), 1 per replica: 0 replicas (limiting)"),
        "{shown}"
    );
}

/// Every rendered file of the output directory (relative path → content), but the
/// kustomizations and fedsched's own bookkeeping.
fn rendered_files(root: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut std::collections::BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).expect("prefix").to_string_lossy().into_owned();
            if rel.starts_with('.') {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else if !rel.ends_with("kustomization.yaml") {
                out.insert(rel, std::fs::read_to_string(&p).expect("read"));
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Item 14: an object's provenance names its file, not its position among the file's
/// documents: reordering the demo's `apps/web.yaml` (the Service moved last) rewrites no
/// rendered file in any cluster (each `document N` moved before, so Argo CD synced them again).
#[test]
fn provenance_does_not_depend_on_the_position_of_other_documents() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let before = rendered_files(&s.out());
    let web = std::fs::read_to_string(s.policies().join("apps/web.yaml")).expect("read");
    let docs: Vec<&str> = web.split("\n---\n").collect();
    assert_eq!(docs.len(), 3);
    s.write("apps/web.yaml", &[docs[0], docs[2], docs[1]].join("\n---\n"));
    let o = s.render();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let after = rendered_files(&s.out());
    let changed: Vec<&String> = before.keys().filter(|k| before.get(*k) != after.get(*k)).collect();
    assert!(changed.is_empty() && before.len() == after.len(), "rewritten: {changed:?}");
    let config = after.iter().find(|(k, _)| k.ends_with("shop/core_configmap_web-config.yaml")).expect("rendered");
    assert!(config.1.contains("fedsched.io/source: apps/web.yaml\n"), "{}", config.1);
}

/// Item 11: `status` gates CI as `kubectl rollout status` does: its exit code is the state's
/// (the demo's members are offline, not observed: Unknown, 5; the list: its most severe
/// state, Degraded, 4), and `--wait` gives up at its timeout with the last state's code.
#[test]
fn status_exit_codes_gate_ci_and_wait_has_a_timeout() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let o = s.cmd("status", &["Deployment/shop/web"]);
    assert!(
        text(&o.stdout).starts_with("apps/v1 Deployment/shop/web: Unknown (no target cluster is observed)\n"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(o.status.code(), Some(5), "{}", text(&o.stderr));
    let o = s.cmd("status", &["-o", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    // The list: its most severe state, the demo's unschedulable ml/reindex (Degraded), before
    // the Unknown others.
    assert_eq!((doc["counts"]["Degraded"].as_u64(), doc["counts"]["Unknown"].as_u64().is_some()), (Some(1), true));
    assert_eq!(o.status.code(), Some(4), "{doc:#}");
    let started = std::time::Instant::now();
    let o = s.cmd("status", &["Deployment/shop/web", "--wait", "3s"]);
    assert!(started.elapsed() >= std::time::Duration::from_secs(3), "did not wait");
    assert_eq!(o.status.code(), Some(5), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("timed out after 3s waiting for Healthy: Unknown"), "{}", text(&o.stderr));
    // An unknown workload stays invalid input.
    assert_eq!(s.cmd("status", &["Deployment/shop/none"]).status.code(), Some(1));
}

/// Item 17: `tools/split-debug.sh` ships the binary stripped with its line tables in a separate
/// `.debug` file, linked by `.gnu_debuglink`. Run here on a copy of the test build (which keeps
/// line tables, as the release profile does): the stripped binary still runs. Skipped, and
/// said, without binutils.
#[test]
fn the_shipped_binary_is_stripped_with_its_line_tables_beside_it() {
    let has = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if !has("objcopy") || !has("readelf") {
        eprintln!("SKIPPED operator::the_shipped_binary_is_stripped…: binutils (objcopy, readelf) not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("fedsched");
    std::fs::copy(bin(), &copy).expect("copy the binary");
    let before = std::fs::metadata(&copy).expect("size").len();
    let o = Command::new(repo_root().join("tools/split-debug.sh")).arg(&copy).output().expect("run split-debug.sh");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let after = std::fs::metadata(&copy).expect("size").len();
    assert!(after * 2 < before, "stripped {after} of {before} bytes");
    let sections = |file: &std::path::Path| {
        text(&Command::new("readelf").arg("-S").arg("-W").arg(file).output().expect("readelf").stdout)
    };
    let shipped = sections(&copy);
    assert!(!shipped.contains(".debug_line") && !shipped.contains(".symtab"), "{shipped}");
    assert!(shipped.contains(".gnu_debuglink"), "{shipped}");
    assert!(sections(&dir.path().join("fedsched.debug")).contains(".debug_line"));
    let v = Command::new(&copy).arg("--version").output().expect("run the stripped binary");
    assert!(v.status.success() && text(&v.stdout).starts_with("fedsched "), "{}", text(&v.stderr));
}

/// Item 1: `resources` shows one unit per row (cores, binary byte suffixes: the demo's region
/// us-east-1 showed `memory 1Ti … 328Gi`, and CPU as `59600m` next to `7`), lists every member
/// with its health, and a NotReady member (the demo's `us-east-legacy`, 40 CPU free) counts nothing
/// as free.
#[test]
fn resources_show_one_unit_per_row_and_count_no_unhealthy_member_as_free() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let o = s.cmd("resources", &[]);
    let shown = text(&o.stdout);
    assert!(shown.contains("  memory               capacity 1024Gi  allocated 328Gi  free 524Gi\n"), "{shown}");
    assert!(
        shown.contains(
            "  cpu                  capacity 160 (160.0 normalised)  allocated 52 (52.0 normalised)  free 68 "
        ),
        "{shown}"
    );
    assert!(
        shown.contains("  us-east-legacy: offline, NotReady (ClusterNotReachable): nothing counted as free\n"),
        "{shown}"
    );
    assert!(shown.contains("  eu-west-a: offline, Ready\n"), "{shown}");
    let o = s.cmd("resources", &["-o", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let east = doc["groups"].as_array().and_then(|g| g.iter().find(|g| g["group"] == "us-east-1")).expect("us-east-1");
    let legacy =
        east["clusters"].as_array().and_then(|c| c.iter().find(|c| c["name"] == "us-east-legacy")).expect("legacy");
    assert_eq!((legacy["health"].as_str(), legacy["resources"]["cpu"]["free"].as_str()), (Some("NotReady"), Some("0")));
    assert_eq!(
        (legacy["resources"]["cpu"]["capacity"].as_str(), legacy["resources"]["cpu"]["allocated"].as_str()),
        (Some("48"), Some("8"))
    );
    // The group's free CPU is its Ready members' only.
    let free: f64 = east["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["health"] == "Ready")
        .map(|c| c["resources"]["cpu"]["free"].as_str().and_then(|q| q.parse::<f64>().ok()).unwrap_or(-1e9))
        .sum();
    assert_eq!(east["resources"]["cpu"]["free"].as_str().and_then(|q| q.parse::<f64>().ok()), Some(free), "{east:#}");
}

/// Item 4: `snapshots CLUSTER --version N` shows what a stored version contained, `--diff N M`
/// what changed between two (here the demo's eu-west-a with 8 more CPU allocated).
#[test]
fn snapshots_show_a_version_and_the_difference_of_two() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let path = s.policies().join("clusters/eu-west.yaml");
    let text_before = std::fs::read_to_string(&path).expect("read");
    let changed = text_before.replacen("allocated: {cpu: \"22\",", "allocated: {cpu: \"30\",", 1);
    assert_ne!(changed, text_before);
    std::fs::write(&path, changed).expect("write");
    assert!(s.render().status.success());
    let o = s.cmd("snapshots", &["eu-west-a", "--version", "2", "-o", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!((v["version"].as_u64(), v["health"].as_str()), (Some(2), Some("Ready")), "{v:#}");
    assert_eq!(
        (v["summary"]["allocated"]["cpu"].as_str(), v["summary"]["free"]["cpu"].as_str()),
        (Some("30"), Some("32"))
    );
    let o = s.cmd("snapshots", &["eu-west-a", "--diff", "1", "2"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "cluster eu-west-a: version 1 -> 2: 2 change(s)\n  summary.allocated.cpu: \"22\" -> \"30\"\n  \
         summary.free.cpu: \"40\" -> \"32\"\n"
    );
    let o = s.cmd("snapshots", &["eu-west-a", "--version", "9"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("no stored snapshot version 9"), "{}", text(&o.stderr));
}

/// The rows of `fedsched get`'s table: (KIND/NAMESPACE/NAME, POLICY, STATE, CLUSTERS, REPLICAS,
/// FLAGS), the header checked.
fn get_rows(s: &Scratch, extra: &[&str]) -> Vec<(String, String, String, String, String, String)> {
    let o = s.cmd("get", extra);
    assert_eq!(o.status.code(), Some(0), "get {extra:?}: {}", text(&o.stderr));
    let out = text(&o.stdout);
    let mut lines = out.lines();
    let Some(header) = lines.next() else { return Vec::new() };
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns[..8],
        ["NAMESPACE", "KIND", "NAME", "POLICY", "STATE", "CLUSTERS", "REPLICAS", "FLAGS"],
        "{out}"
    );
    lines
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            let ns = if c[0] == "-" { "" } else { c[0] };
            let f = |i: usize| c[i].to_string();
            (format!("{}/{ns}/{}", c[1], c[2]), f(3), f(4), f(5), f(6), f(7))
        })
        .collect()
}

/// Item 13: `fedsched get` lists every placed workload from the store alone (no daemon, no
/// policy repository read): policy, clusters and replicas, state and the suspended / Lazy-held
/// flags; filtered by namespace, cluster, label and state; `-o json|yaml|wide`; an unknown
/// cluster is invalid input (1), a bad filter a usage error (64). Suspended and Lazy-held
/// workloads are also named by `render`, `explain` and `history`.
#[test]
fn get_lists_the_fleet_filtered_and_names_suspended_and_lazy_held_workloads() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    // The repository is not what `get` reads: it answers with the policies gone.
    std::fs::remove_dir_all(s.policies()).expect("remove the repository");
    let rows = get_rows(&s, &[]);
    assert_eq!(rows.len(), 10, "{rows:#?}");
    let row = |rows: &[(String, String, String, String, String, String)], w: &str| {
        rows.iter().find(|r| r.0 == w).cloned().unwrap_or_else(|| panic!("no {w} in {rows:#?}"))
    };
    let web = row(&rows, "Deployment/shop/web");
    assert_eq!((web.1.as_str(), web.2.as_str(), web.4.as_str(), web.5.as_str()), ("pp/web", "Scheduled", "9", "-"));
    let sum: i64 = web.3.split(',').map(|c| c.split_once('=').expect("cluster=n").1.parse::<i64>().expect("n")).sum();
    assert_eq!(sum, 9, "{web:?}");
    assert_eq!(row(&rows, "Namespace//shop").1, "cpp/namespaces");
    assert_eq!(row(&rows, "Deployment/ml/reindex").2, "Unschedulable");
    let names = |rows: Vec<(String, String, String, String, String, String)>| {
        let mut n: Vec<String> = rows.into_iter().map(|r| r.0).collect();
        n.sort();
        n
    };
    assert_eq!(names(get_rows(&s, &["-n", "ml"])), ["Deployment/ml/reindex", "Job/ml/trainer"]);
    assert_eq!(
        names(get_rows(&s, &["--cluster", "us-east-edge"])),
        ["Deployment/edge/edge-cache", "Namespace//edge", "Namespace//ml", "Namespace//shop"]
    );
    assert_eq!(names(get_rows(&s, &["-l", "app in (web, api)"])), ["Deployment/shop/api", "Deployment/shop/web"]);
    assert_eq!(names(get_rows(&s, &["-l", "app!=web", "-n", "shop", "--only", "scheduled"])).len(), 3);
    assert_eq!(names(get_rows(&s, &["--only", "unschedulable"])), ["Deployment/ml/reindex"]);
    // Nothing matches: no table, said on stderr, exit 0.
    let o = s.cmd("get", &["--only", "suspended"]);
    assert_eq!((o.status.code(), text(&o.stdout)), (Some(0), String::new()));
    assert!(text(&o.stderr).contains("no workloads found"), "{}", text(&o.stderr));
    // Exit codes as the other commands'.
    let o = s.cmd("get", &["--cluster", "nowhere"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("unknown cluster nowhere"), "{}", text(&o.stderr));
    assert_eq!(s.cmd("get", &["-l", "app in web"]).status.code(), Some(64));
    assert_eq!(s.cmd("get", &["--only", "sleeping"]).status.code(), Some(64));
    // JSON, YAML and wide: the same rows.
    let o = s.cmd("get", &["-o", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let items = doc["placements"].as_array().expect("placements");
    assert_eq!(items.len(), 10);
    let web =
        items.iter().find(|i| i["workload"]["name"] == "web" && i["workload"]["kind"] == "Deployment").expect("web");
    assert_eq!(
        (&web["replicas"], &web["suspended"], &web["lazyHeld"]),
        (&serde_json::json!(9), &serde_json::Value::Null, &serde_json::json!(false))
    );
    assert_eq!(web["labels"]["app"], "web", "{web}");
    let yaml = text(&s.cmd("get", &["-o", "yaml"]).stdout);
    assert!(yaml.starts_with("placements:\n") && yaml.contains("lazyHeld: false"), "{yaml}");
    let wide = text(&s.cmd("get", &["-o", "wide"]).stdout);
    let header: Vec<&str> = wide.lines().next().map(|h| h.split_whitespace().collect()).unwrap_or_default();
    assert_eq!(header[8..], ["DECIDED", "AFFINITY", "LABELS", "REASON"], "{wide}");
    assert!(wide.contains("app=web") && wide.contains("are not enough to schedule 4"), "{wide}");

    // api suspended on eu-west-b; batch (ml) turned Lazy, then changed: its workloads stay on
    // the spec of their last decision.
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let shop = std::fs::read_to_string(s.policies().join("policies/shop.yaml")).expect("read");
    assert!(shop.rsplit("---").next().is_some_and(|last| last.contains("  name: api\n")), "the last policy is api's");
    s.write(
        "policies/shop.yaml",
        &format!("{shop}  suspension:\n    dispatchingOnClusters:\n      clusterNames: [eu-west-b]\n"),
    );
    let ml = std::fs::read_to_string(s.policies().join("policies/ml.yaml")).expect("read");
    s.write("policies/ml.yaml", &ml.replacen("spec:\n", "spec:\n  activationPreference: Lazy\n", 1));
    assert!(s.render().status.success());
    s.write(
        "policies/ml.yaml",
        &ml.replacen("spec:\n", "spec:\n  activationPreference: Lazy\n", 1).replace("Aggregated", "Weighted"),
    );
    let o = s.render();
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("suspended: Deployment/shop/api: dispatching to eu-west-b"), "{err}");
    assert!(err.contains("lazy-held: Job/ml/trainer: held by activationPreference: Lazy"), "{err}");
    assert!(err.contains("9 scheduled (1 suspended, 2 held by a Lazy policy)"), "{err}");
    let rows = get_rows(&s, &[]);
    assert_eq!(row(&rows, "Deployment/shop/api").5, "Suspended");
    assert_eq!(row(&rows, "Job/ml/trainer").5, "LazyHeld");
    assert_eq!(row(&rows, "Deployment/shop/web").5, "-");
    assert_eq!(names(get_rows(&s, &["--only", "suspended"])), ["Deployment/shop/api"]);
    assert_eq!(names(get_rows(&s, &["--only", "lazy-held"])), ["Deployment/ml/reindex", "Job/ml/trainer"]);
    assert!(text(&s.cmd("get", &["-o", "wide"]).stdout).contains("Suspended(eu-west-b)"));
    let doc: serde_json::Value =
        serde_json::from_slice(&s.cmd("get", &["-o", "json", "-n", "shop", "-l", "app=api"]).stdout).expect("json");
    assert_eq!(
        doc["placements"][0]["suspended"],
        serde_json::json!({"everyCluster": false, "clusters": ["eu-west-b"]})
    );
    // explain and history name them too.
    let explain = text(&s.cmd("explain", &["Deployment/shop/api"]).stdout);
    assert!(explain.contains("suspended: dispatching to eu-west-b"), "{explain}");
    let explain = text(&s.cmd("explain", &["Job/ml/trainer"]).stdout);
    assert!(explain.contains("held by activationPreference: Lazy"), "{explain}");
    let doc: serde_json::Value =
        serde_json::from_slice(&s.cmd("explain", &["Job/ml/trainer", "-o", "json"]).stdout).expect("json");
    assert_eq!((&doc["lazyHeld"], &doc["suspended"]), (&serde_json::json!(true), &serde_json::Value::Null));
    let history = text(&s.cmd("history", &["Deployment/shop/api"]).stdout);
    assert!(history.lines().last().is_some_and(|l| l.contains("suspended: dispatching to eu-west-b")), "{history}");
    assert!(!history.lines().nth(1).is_some_and(|l| l.contains("suspended")), "the first decision was not: {history}");
    let doc: serde_json::Value =
        serde_json::from_slice(&s.cmd("history", &["Job/ml/trainer", "-o", "json"]).stdout).expect("json");
    let held: Vec<&serde_json::Value> = doc.as_array().expect("records").iter().map(|r| &r["lazyHeld"]).collect();
    assert_eq!(held.first().copied(), Some(&serde_json::json!(false)), "{doc:#}");
    assert_eq!(held.last().copied(), Some(&serde_json::json!(true)), "{doc:#}");
    // The template changes: the hold ends, and the list says so.
    let trainer = std::fs::read_to_string(s.policies().join("apps/trainer.yaml")).expect("read");
    s.write("apps/trainer.yaml", &trainer.replacen("metadata:\n", "metadata:\n  annotations: {edited: \"1\"}\n", 1));
    let o = s.render_with(&["--allow-mass-delete"], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(row(&get_rows(&s, &[]), "Job/ml/trainer").5, "-");
}
