//! Issue 16 (a subset): unsafe inputs and misleading output. `check` rejects what a pass
//! cannot use; one bad template does not block the others; the repository walk stays inside
//! the repository; non-Kubernetes YAML is skipped.

use crate::support::*;

fn deployment(name: &str, replicas: &str, cpu: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: ml\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - name: c\n        image: x\n        resources:\n          requests:\n            cpu: {cpu}\n"
    )
}

fn check(s: &Scratch) -> (Option<i32>, String, String) {
    let out = fedsched(&["check", "--policies", s.policies().to_str().expect("utf8")]);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn check_rejects_replicas_and_quantities_a_pass_cannot_read() {
    let s = Scratch::with_demo();
    s.write(
        "apps/bad.yaml",
        &[
            deployment("as-string", "\"two\"", "1"),
            deployment("negative", "-1", "1"),
            deployment("float", "1.5", "1"),
            deployment("huge", "2147483648", "1"),
            deployment("bad-cpu", "1", "lots"),
            deployment("fine", "2", "100m"),
        ]
        .join("---\n"),
    );
    let (code, stdout, _) = check(&s);
    assert_eq!(code, Some(1), "{stdout}");
    for (doc, field) in [(1, "spec.replicas"), (2, "spec.replicas"), (3, "spec.replicas"), (4, "spec.replicas")] {
        let want = format!("apps/bad.yaml: document {doc}: {field}: expected a non-negative 32-bit integer");
        assert!(stdout.contains(&want), "{want}\n{stdout}");
    }
    assert!(
        stdout.contains("apps/bad.yaml: document 5: spec.template.spec.containers[0].resources.requests.cpu"),
        "{stdout}"
    );
    assert!(!stdout.contains("document 6"), "{stdout}");

    // The pass skips only those workloads: the others (and the good one) are rendered.
    let out = s.render();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("as-string"), "the skipped workload is reported: {err}");
    let files = tree(&s.out());
    assert!(files.keys().any(|k| k.ends_with("ml/apps_deployment_fine.yaml")), "{:?}", files.keys());
    assert!(files.keys().any(|k| k.ends_with("shop/apps_deployment_web.yaml")), "{:?}", files.keys());
    assert!(!files.keys().any(|k| k.contains("as-string")), "{:?}", files.keys());
}

#[test]
fn kinds_and_api_versions_that_would_leave_the_output_directory_are_check_errors() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let before = tree(&s.out());
    s.write(
        "apps/evil.yaml",
        "apiVersion: v1\nkind: Foo/..\nmetadata: {name: a, namespace: shop}\n---\napiVersion: apps/v1/..\nkind: ConfigMap\nmetadata: {name: b, namespace: shop}\n",
    );
    let (code, stdout, _) = check(&s);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("apps/evil.yaml: document 1: kind: "), "{stdout}");
    assert!(stdout.contains("apps/evil.yaml: document 2: apiVersion: "), "{stdout}");
    // `render` refuses the repository as for every malformed document: exit 1, naming the
    // file, nothing written.
    let out = s.render();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("apps/evil.yaml: document 1: kind"), "{err}");
    assert_eq!(before, tree(&s.out()));
}

#[test]
fn token_files_ending_in_a_newline_work_and_requests_carry_a_user_agent() {
    let t = crate::live::setup(2, false, "timeout = \"5s\"\nread_timeout = \"2s\"");
    let meta = t.sim.meta();
    let endpoints: serde_json::Value =
        serde_json::from_slice(&std::fs::read(meta.join("endpoints.json")).expect("endpoints")).expect("json");
    let ca = endpoints["caFile"].as_str().expect("ca").to_string();
    // What `echo TOKEN > file` writes.
    let dir = t.s.dir.path();
    let mut access = String::new();
    for (i, c) in ["member-000", "member-001"].iter().enumerate() {
        let token = std::fs::read_to_string(meta.join("tokens").join(c)).expect("token");
        let file = dir.join(format!("token-{c}"));
        std::fs::write(&file, format!("{}\n", token.trim())).expect("token file");
        if i == 0 {
            access.push_str(&format!(
                "[clusters.{c:?}]\ntoken_file = {:?}\nca_file = {ca:?}\n",
                file.display().to_string()
            ));
        } else {
            // A kubeconfig whose user has `tokenFile:`.
            let url = endpoints["clusters"][c].as_str().expect("url");
            let kc = dir.join("kubeconfig");
            std::fs::write(
                &kc,
                format!(
                    "apiVersion: v1\nkind: Config\ncurrent-context: m\nclusters:\n- name: m\n  cluster: {{server: {url:?}, certificate-authority: {ca:?}}}\nusers:\n- name: m\n  user: {{tokenFile: {:?}}}\ncontexts:\n- name: m\n  context: {{cluster: m, user: m}}\n",
                    file.display().to_string()
                ),
            )
            .expect("kubeconfig");
            access.push_str(&format!("[clusters.{c:?}]\nkubeconfig = {:?}\n", kc.display().to_string()));
        }
    }
    let config = dir.join("newline.toml");
    std::fs::write(
        &config,
        format!(
            "policy_dir = {:?}\noutput_dir = {:?}\nstate_dir = {:?}\n[poll]\ntimeout = \"5s\"\nread_timeout = \"2s\"\n{access}",
            t.s.policies().display().to_string(),
            t.s.out().display().to_string(),
            t.s.state().display().to_string(),
        ),
    )
    .expect("config");
    let o = fedsched(&["render", "-c", config.to_str().expect("utf8")]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("poll failed"), "{err}");
    for c in ["member-000", "member-001"] {
        let s = t.s.cmd("snapshots", &[c, "-o", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&s.stdout).expect("json");
        assert_eq!(v["versions"][0]["health"], "Ready", "{c}: {v}");
    }
    let (code, stats) = t.sim.http("GET", "/admin/stats", "");
    assert_eq!(code, 200, "{stats}");
    let stats: serde_json::Value = serde_json::from_str(&stats).expect("json");
    let agents: Vec<&str> = stats["userAgents"].as_array().expect("agents").iter().filter_map(|a| a.as_str()).collect();
    assert!(!agents.is_empty() && agents.iter().all(|a| a.starts_with("fedsched/")), "{agents:?}");
}

#[test]
fn links_out_of_the_repository_and_non_kubernetes_yaml_are_skipped_with_a_note() {
    let s = Scratch::with_demo();
    let outside = s.dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(
        outside.join("secret.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen, namespace: shop}\nstringData: {password: hunter2}\n",
    )
    .expect("write");
    std::os::unix::fs::symlink(outside.join("secret.yaml"), s.policies().join("apps/secret.yaml")).expect("link");
    std::os::unix::fs::symlink("/", s.policies().join("root")).expect("link");
    s.write("chart/Chart.yaml", "apiVersion: v2\nname: shop\nversion: 1.0.0\n");
    s.write(
        "chart/templates/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
    );
    s.write("chart/values.yaml", "replicas: 3\n");
    s.write("values.yaml", "replicas: 3\n");
    s.write("overlay/kustomization.yaml", "resources: [../apps]\n");
    s.write("ci/pipeline.yaml", "stages: [build, test]\n");
    s.write(".fedschedignore", "# not manifests\nci/\n");
    let (code, stdout, stderr) = check(&s);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    for note in [
        "note: apps/secret.yaml: not followed: a symbolic link out of the policy repository",
        "note: root: not followed",
        "note: chart: skipped: a Helm chart",
        "note: values.yaml: skipped: Helm values",
        "note: overlay/kustomization.yaml: skipped",
    ] {
        assert!(stderr.contains(note), "{note}\n{stderr}");
    }
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let all = tree(&s.out());
    assert!(!all.values().any(|b| String::from_utf8_lossy(b).contains("hunter2")), "a secret was copied");

    // `[policy] follow_symlinks = "never"`: not even a link inside the repository; `ignore`.
    std::os::unix::fs::symlink(s.policies().join("apps/web.yaml"), s.policies().join("web-link.yaml")).expect("link");
    s.write("extra/todo.yaml", "todo: [a, b]\n");
    let cfg = s.dir.path().join("fedsched.toml");
    std::fs::write(&cfg, "[policy]\nfollow_symlinks = \"never\"\nignore = [\"todo.yaml\"]\n").expect("config");
    let out =
        fedsched(&["-c", cfg.to_str().expect("utf8"), "check", "--policies", s.policies().to_str().expect("utf8")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}{stderr}", text(&out.stdout));
    assert!(
        stderr.contains("note: web-link.yaml: not followed: a symbolic link ([policy] follow_symlinks"),
        "{stderr}"
    );
    // Without the config, the link inside is followed and duplicates web.yaml's objects.
    let (code, stdout, _) = check(&s);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("web-link.yaml") && stdout.contains("duplicate"), "{stdout}");
    std::fs::write(&cfg, "[policy]\nfollow_symlinks = \"sometimes\"\n").expect("config");
    let out =
        fedsched(&["-c", cfg.to_str().expect("utf8"), "check", "--policies", s.policies().to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("follow_symlinks"), "{}", text(&out.stderr));
}

/// One GET with `Connection: close`; (status, body), or None when the connection was closed
/// or refused before an answer.
fn try_get(addr: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).ok()?;
    c.set_read_timeout(Some(std::time::Duration::from_secs(5))).ok()?;
    write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut raw = String::new();
    c.read_to_string(&mut raw).ok()?;
    let code = raw.split(' ').nth(1).and_then(|c| c.parse().ok())?;
    Some((code, raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// Whether the server closed `c` (EOF or reset) within `limit`.
fn closed_within(c: &mut std::net::TcpStream, limit: std::time::Duration) -> bool {
    use std::io::Read;
    let _ = c.set_read_timeout(Some(limit));
    let mut buf = [0u8; 512];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // a 408 or similar before the close
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn the_http_listener_caps_connections_and_closes_slow_and_idle_ones() {
    use std::io::Write;
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    let s = Scratch::new();
    let store = fedsched::store::Store::open(&s.state()).expect("store");
    let (_tx, status) = tokio::sync::watch::channel(Arc::new(fedsched::views::status::StatusView::default()));
    let now = fedsched::util::clock::now_ms();
    let state = fedsched::api::ApiState {
        store,
        status,
        heartbeat: Arc::new(fedsched::views::status::Heartbeat::new(now)),
        heartbeat_timeout: Duration::from_secs(3600),
        token: None,
        metrics_require_token: false,
        metrics: Arc::new(fedsched::metrics::Metrics::new()),
        clock: Arc::new(fedsched::util::clock::SystemClock),
        output_dir: s.out(),
        plans: Default::default(),
    };
    let limits = fedsched::api::Limits { max_connections: 64, header_timeout: Duration::from_millis(800) };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let addr = "127.0.0.1:0".parse().expect("addr");
    let server = rt.block_on(fedsched::api::start_with(addr, state, limits)).expect("listen");
    let addr = server.addr;
    assert_eq!(try_get(addr, "/healthz").map(|r| r.0), Some(200));

    // 300 idle connections (the first 64 are served, the rest closed at once), a kept-alive
    // connection after its answer, and a client that sends its headers a byte at a time.
    let mut idle: Vec<std::net::TcpStream> = (0..300).filter_map(|_| std::net::TcpStream::connect(addr).ok()).collect();
    assert!(idle.len() >= 250, "only {} connections", idle.len());
    let mut kept = std::net::TcpStream::connect(addr).expect("connect");
    write!(kept, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("request");
    let mut slow = std::net::TcpStream::connect(addr).expect("connect");
    let trickle = std::thread::spawn(move || {
        let request =
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
        for b in request {
            if slow.write_all(&[*b]).is_err() {
                return (true, slow);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        (false, slow)
    });

    // /healthz answers again within a few header timeouts.
    let start = Instant::now();
    loop {
        if try_get(addr, "/healthz").is_some_and(|r| r.0 == 200) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "/healthz never answered again");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Every idle connection is closed by the server.
    for (i, c) in idle.iter_mut().enumerate() {
        assert!(closed_within(c, Duration::from_secs(5)), "idle connection {i} still open");
    }
    assert!(closed_within(&mut kept, Duration::from_secs(5)), "the kept-alive connection is still open");
    let (cut, mut slow) = trickle.join().expect("trickle");
    assert!(cut || closed_within(&mut slow, Duration::from_secs(2)), "the slow client was served to the end");
    rt.block_on(server.shutdown(Duration::from_secs(5)));
}

#[test]
fn exit_codes_separate_unknown_names_usage_errors_and_failures() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    // Known names: 0.
    assert_eq!(s.cmd("history", &["Deployment/shop/web"]).status.code(), Some(0));
    assert_eq!(s.cmd("snapshots", &["eu-west-a"]).status.code(), Some(0));
    // Unknown names: 1 for every command.
    for (sub, arg) in [("history", "Deployment/shop/nope"), ("snapshots", "nope"), ("explain", "Deployment/shop/nope")]
    {
        let out = s.cmd(sub, &[arg]);
        assert_eq!(out.status.code(), Some(1), "{sub} {arg}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("nope"), "{sub}: {}", text(&out.stderr));
    }
    let out = s.cmd("history", &["Deployment/shop/nope", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    // Usage errors: 64, not 2 (operational failures).
    for args in [&["render", "--bogus"][..], &["frobnicate"], &[], &["completion", "tcsh"]] {
        let out = fedsched(args);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", text(&out.stderr));
    }
    assert_eq!(fedsched(&["--help"]).status.code(), Some(0));
}

#[test]
fn completion_scripts_and_version_with_the_commit() {
    let bash = fedsched(&["completion", "bash"]);
    assert!(bash.status.success());
    let script = text(&bash.stdout);
    assert!(script.contains("fedsched") && script.contains("complete"), "{script}");
    // The script loads in bash and registers a completion for fedsched.
    if let Ok(out) = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("source /dev/stdin <<'EOF_COMPLETION'\n{script}\nEOF_COMPLETION\ncomplete -p fedsched"))
        .output()
    {
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("fedsched"), "{}", text(&out.stdout));
    }
    let zsh = text(&fedsched(&["completion", "zsh"]).stdout);
    assert!(zsh.starts_with("#compdef fedsched"), "{zsh}");
    let fish = text(&fedsched(&["completion", "fish"]).stdout);
    assert!(fish.contains("complete -c fedsched"), "{fish}");
    for sub in ["render", "check", "history", "completion"] {
        assert!(fish.contains(sub), "fish completion lacks {sub}");
    }

    let v = fedsched(&["--version"]);
    assert!(v.status.success());
    let line = text(&v.stdout);
    let commit = line.trim().strip_prefix(&format!("fedsched {} (commit ", env!("CARGO_PKG_VERSION")));
    let commit = commit.and_then(|c| c.strip_suffix(')')).unwrap_or_else(|| panic!("{line}"));
    assert!(commit == "unknown" || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())), "{line}");
    if let Ok(out) = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output()
        && out.status.success()
    {
        assert_eq!(commit, text(&out.stdout).trim(), "the commit of the build");
    }
}
