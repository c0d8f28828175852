//! Credentials (issue 47): a control character in any token source is an error of that member,
//! never a panic (render, the daemon's poller, `[ha]`'s host client); an exec credential plugin
//! runs under `poll.timeout`, is killed with its process group (past its budget, or when the
//! daemon stops), and its credential is cached until it expires or is refused; no message,
//! log line, API answer, store entry or CLI output quotes a kubeconfig's content, whatever
//! field holds the secret and however the file is broken.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::live::{Setup, daemon_with, setup_with};
use crate::support::*;

/// A simulated fleet and what a test writes beside it (kubeconfigs, plugins, configs).
struct Fleet {
    t: Setup,
    endpoints: serde_json::Value,
}

impl Fleet {
    fn new(n: usize) -> Fleet {
        let t = setup_with(n, false, "", &[]);
        let endpoints = serde_json::from_slice(&std::fs::read(t.sim.meta().join("endpoints.json")).expect("endpoints"))
            .expect("json");
        Fleet { t, endpoints }
    }

    fn dir(&self) -> &Path {
        self.t.s.dir.path()
    }

    fn token(&self, cluster: &str) -> String {
        std::fs::read_to_string(self.t.sim.meta().join("tokens").join(cluster)).expect("token").trim().to_string()
    }

    /// The `[clusters.NAME]` lines of the simulator's own access (token file and CA).
    fn token_access(&self, cluster: &str) -> String {
        format!(
            "token_file = {:?}\nca_file = {:?}\n",
            self.t.sim.meta().join("tokens").join(cluster).display().to_string(),
            self.t.sim.meta().join("ca.crt").display().to_string()
        )
    }

    /// A kubeconfig for `cluster` whose user is `user` (YAML lines under `user:`, indented by
    /// four spaces), written to `name`; returns the `[clusters.NAME]` lines naming it.
    fn kubeconfig(&self, name: &str, cluster: &str, user: &str) -> String {
        let server = self.endpoints["clusters"][cluster].as_str().expect("server");
        let ca = self.endpoints["caFile"].as_str().expect("CA");
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\ncontexts:\n- name: c\n  context: {{cluster: k, user: u}}\nusers:\n- name: u\n  user:\n{user}"
        );
        let path = self.dir().join(name);
        std::fs::write(&path, text).expect("kubeconfig");
        format!("kubeconfig = {:?}\n", path.display().to_string())
    }

    /// An executable shell script.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir().join(name);
        std::fs::write(&path, body).expect("script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// A config polling each `(cluster, access lines)`, with `poll` in `[poll]` and `extra` after.
    fn config(&self, name: &str, members: &[(&str, String)], poll: &str, extra: &str) -> PathBuf {
        let s = &self.t.s;
        let mut text = format!(
            "policy_dir = {:?}\noutput_dir = {:?}\nstate_dir = {:?}\n[reconcile]\ninterval = \"1s\"\ndebounce = \"100ms\"\n[poll]\nmax_backoff = \"1s\"\n{poll}\n[http]\nlisten = \"127.0.0.1:0\"\n[log]\nformat = \"json\"\n{extra}\n",
            s.policies().display().to_string(),
            s.out().display().to_string(),
            s.state().display().to_string(),
        );
        for (cluster, access) in members {
            text.push_str(&format!("[clusters.{cluster:?}]\n{access}"));
        }
        let path = self.dir().join(name);
        std::fs::write(&path, text).expect("config");
        path
    }

    fn web(&self, cluster: &str) -> PathBuf {
        self.t.s.out().join(cluster).join("shop/apps_deployment_web.yaml")
    }
}

/// An exec user running `command` (client.authentication.k8s.io/v1, never interactive).
fn exec_user(command: &Path) -> String {
    format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {:?}\n      interactiveMode: Never\n",
        command.display().to_string()
    )
}

fn render(config: &Path) -> Output {
    within(fedsched_cmd(&["render", "-c", config.to_str().expect("utf8")]), Duration::from_secs(90))
}

/// Whether a process is gone (or a zombie nobody reaped: it runs nothing).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) == Some("Z"),
    }
}

fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// SIGTERM, then the exit code within 20 s.
fn terminate(child: &mut Child) -> Option<i32> {
    let _ = Command::new("kill").args(["-s", "TERM", &child.id().to_string()]).status();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status.code();
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the daemon did not stop within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `GET` to the daemon whose state directory is `state`.
fn daemon_get(state: &Path, path: &str) -> Option<(u16, String)> {
    http_get(&std::fs::read_to_string(state.join("http.addr")).ok()?, path)
}

/// Every token source of a member with `bad` in its token: (cluster, user YAML, what the
/// message names). `yaml` is the YAML escape of the character, `json` its JSON escape, `raw`
/// the byte.
fn bad_members(f: &Fleet, tag: &str, yaml: &str, json: &str, raw: u8) -> Vec<(&'static str, String, &'static str)> {
    let plugin = f.script(
        &format!("bad-{tag}.sh"),
        &format!(
            "#!/bin/sh\nprintf '%s' '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"abc{json}def\"}}}}'\n"
        ),
    );
    let token_file = f.dir().join(format!("bad-{tag}.token"));
    std::fs::write(&token_file, [b"abc".as_slice(), &[raw], b"def\n"].concat()).expect("token file");
    vec![
        ("member-001", format!("    token: \"abc{yaml}def\"\n"), "user \"u\": token: contains a character not allowed"),
        ("member-002", exec_user(&plugin), "printed a token with a character not allowed"),
        (
            "member-003",
            format!("    auth-provider:\n      name: oidc\n      config:\n        id-token: \"abc{yaml}def\"\n"),
            "auth-provider oidc: id-token: contains a character not allowed",
        ),
        (
            "member-004",
            format!("    tokenFile: {:?}\n", token_file.display().to_string()),
            "the token contains characters not allowed",
        ),
    ]
}

const CONTROL: [(&str, &str, &str, u8); 5] = [
    ("soh", "\\u0001", "\\u0001", 1),
    ("nul", "\\0", "\\u0000", 0),
    ("lf", "\\n", "\\n", b'\n'),
    ("cr", "\\r", "\\r", b'\r'),
    ("del", "\\x7f", "\\u007f", 0x7f),
];

#[test]
fn a_control_character_in_any_token_source_is_an_error_of_that_member_never_a_panic() {
    let f = Fleet::new(5);
    for (tag, yaml, json, raw) in CONTROL {
        let bad = bad_members(&f, tag, yaml, json, raw);
        let mut members = vec![("member-000", f.token_access("member-000"))];
        for (cluster, user, _) in &bad {
            members.push((cluster, f.kubeconfig(&format!("{cluster}-{tag}.kubeconfig"), cluster, user)));
        }
        let config = f.config(&format!("{tag}.toml"), &members, "timeout = \"5s\"", "");
        let o = render(&config);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{tag}: {err}");
        assert!(!err.contains("panicked"), "{tag}: {err}");
        for (cluster, _, names) in &bad {
            assert!(
                err.lines().any(|l| l.contains(&format!("poll failed: {cluster}: access:")) && l.contains(names)),
                "{tag}: {cluster} is not reported as an access error naming its source:\n{err}"
            );
        }
        assert!(f.web("member-000").exists(), "{tag}: the good member got no output:\n{err}");
    }

    // The daemon: the poller goes on (passes complete, the good member is placed), each bad
    // member is a failed poll of its own.
    let (tag, yaml, json, raw) = CONTROL[0];
    let bad = bad_members(&f, tag, yaml, json, raw);
    let mut members = vec![("member-000", f.token_access("member-000"))];
    for (cluster, user, _) in &bad {
        members.push((cluster, f.kubeconfig(&format!("{cluster}-daemon.kubeconfig"), cluster, user)));
    }
    let _ = std::fs::remove_dir_all(f.t.s.out());
    let config = f.config("daemon.toml", &members, "timeout = \"5s\"", "");
    let (mut child, log) = daemon_with(&config, "info");
    wait_for("the good member's output and three passes", Duration::from_secs(60), || {
        f.web("member-000").exists() && log.lock().expect("log").matches("reconcile done").count() >= 3
    });
    for (cluster, _, _) in &bad {
        wait_for(&format!("{cluster}'s failure to be logged"), Duration::from_secs(20), || {
            log.lock()
                .expect("log")
                .lines()
                .any(|l| l.contains("poll failed") && l.contains(cluster) && l.contains("not allowed in"))
        });
    }
    assert_eq!(daemon_get(&f.t.s.state(), "/healthz").map(|r| r.0), Some(200));
    assert_eq!(terminate(&mut child), Some(0));
    let l = log.lock().expect("log").clone();
    assert!(!l.contains("panicked"), "{l}");

    // [ha]: the host cluster's kubeconfig with such a token fails the start with a message.
    let host = f.kubeconfig("host.kubeconfig", "member-000", "    token: \"abc\\u0001def\"\n");
    let config = f.config(
        "ha.toml",
        &[("member-000", f.token_access("member-000"))],
        "",
        &format!("[ha]\n{host}lease_namespace = \"fedsched\"\n"),
    );
    let o = within(fedsched_cmd(&["run", "-c", config.to_str().expect("utf8")]), Duration::from_secs(60));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("[ha] host cluster") && err.contains("token: contains a character not allowed"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_exec_plugin_that_never_returns_is_killed_with_its_process_group() {
    let f = Fleet::new(2);
    let pid_file = f.dir().join("pids");
    let plugin = f.script(
        "hang.sh",
        &format!("#!/bin/sh\necho $$ >> {0:?}\nsleep 600 &\necho $! >> {0:?}\nwait\n", pid_file.display().to_string()),
    );
    let members = [
        ("member-000", f.token_access("member-000")),
        ("member-001", f.kubeconfig("hang.kubeconfig", "member-001", &exec_user(&plugin))),
    ];
    let config = f.config("render.toml", &members, "timeout = \"2s\"", "");
    let o = render(&config);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.lines().any(|l| l.contains("member-001")
            && l.contains("did not finish within")
            && l.contains("killed with its process group")),
        "{err}"
    );
    assert!(f.web("member-000").exists(), "the other member was not polled: {err}");
    let started = pids(&pid_file);
    assert_eq!(started.len(), 2, "the plugin and its child");
    for pid in &started {
        assert!(gone(*pid), "process {pid} of the plugin's group survived");
    }

    // SIGTERM while the plugin runs (a budget far away): the daemon stops, the group goes.
    std::fs::remove_file(&pid_file).expect("pids");
    let config = f.config("daemon.toml", &members, "timeout = \"10m\"", "");
    let (mut child, log) = daemon_with(&config, "info");
    wait_for("the plugin to run", Duration::from_secs(30), || pids(&pid_file).len() == 2);
    assert_eq!(terminate(&mut child), Some(0), "{}", log.lock().expect("log"));
    for pid in pids(&pid_file) {
        wait_for(&format!("process {pid} of the plugin's group to end"), Duration::from_secs(5), || gone(pid));
    }
}

/// A plugin that prints the token in `token` with the expiration in `expires` and counts its
/// runs in `runs` (one line each).
fn counting_plugin(f: &Fleet) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let (token, expires, runs) = (f.dir().join("plugin.token"), f.dir().join("plugin.expires"), f.dir().join("runs"));
    let plugin = f.script(
        "counting.sh",
        &format!(
            "#!/bin/sh\necho run >> {runs:?}\nprintf '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"%s\",\"expirationTimestamp\":\"%s\"}}}}' \"$(cat {token:?})\" \"$(cat {expires:?})\"\n",
            runs = runs.display().to_string(),
            token = token.display().to_string(),
            expires = expires.display().to_string(),
        ),
    );
    (plugin, token, expires, runs)
}

fn runs(file: &Path) -> usize {
    std::fs::read_to_string(file).map(|t| t.lines().count()).unwrap_or(0)
}

#[test]
fn an_exec_plugins_credential_is_cached_until_it_expires_or_is_refused() {
    let f = Fleet::new(2);
    let (plugin, token, expires, run_file) = counting_plugin(&f);
    std::fs::write(&token, f.token("member-001")).expect("token");
    std::fs::write(&expires, "2099-01-01T00:00:00Z").expect("expiry");
    let members = [
        ("member-000", f.token_access("member-000")),
        ("member-001", f.kubeconfig("exec.kubeconfig", "member-001", &exec_user(&plugin))),
    ];
    let config = f.config("render.toml", &members, "timeout = \"10s\"", "");
    // Valid until 2099: one run for the whole render (list and watch clients, discovery).
    let o = render(&config);
    assert!(o.status.success() && f.web("member-001").exists(), "{}", text(&o.stderr));
    assert_eq!(runs(&run_file), 1, "{}", text(&o.stderr));
    // Already expired: every request runs it again.
    std::fs::write(&run_file, "").expect("runs");
    std::fs::write(&expires, "2001-01-01T00:00:00Z").expect("expiry");
    let o = render(&config);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(runs(&run_file) >= 3, "an expired credential was used again: {} runs", runs(&run_file));

    // The daemon, with a wrong token valid until 2099: the 401 lets it go, and the plugin's
    // next credential (the right token) is used from then on, for every round.
    let _ = std::fs::remove_dir_all(f.t.s.out());
    std::fs::write(&run_file, "").expect("runs");
    std::fs::write(&expires, "2099-01-01T00:00:00Z").expect("expiry");
    std::fs::write(&token, "wrong-token").expect("token");
    let config = f.config("daemon.toml", &members, "timeout = \"10s\"", "");
    let (mut child, log) = daemon_with(&config, "info");
    wait_for("the 401 of member-001", Duration::from_secs(30), || {
        log.lock()
            .expect("log")
            .lines()
            .any(|l| l.contains("poll failed") && l.contains("member-001") && l.contains("401"))
    });
    std::fs::write(&token, f.token("member-001")).expect("token");
    // Its first good poll in this process is followed by its discovery.
    wait_for("a good poll of member-001", Duration::from_secs(30), || {
        log.lock()
            .expect("log")
            .lines()
            .any(|l| l.contains("discovery: the member's API list changed") && l.contains("\"member-001\""))
    });
    let after = runs(&run_file);
    let mark = log.lock().expect("log").len();
    wait_for("five more passes", Duration::from_secs(60), || {
        log.lock().expect("log")[mark..].matches("reconcile done").count() >= 5
    });
    assert_eq!(
        runs(&run_file),
        after,
        "the plugin ran again while its credential was valid:\n{}",
        log.lock().expect("log")
    );
    assert_eq!(terminate(&mut child), Some(0));
}

/// Values no output may contain: every canary starts with this.
const CANARY: &str = "CANARY";

/// Base64 (standard, padded), by coreutils' `base64`.
fn b64(bytes: &[u8]) -> String {
    let mut child = Command::new("base64")
        .arg("-w0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("base64 (coreutils)");
    child.stdin.take().expect("stdin").write_all(bytes).expect("write");
    text(&child.wait_with_output().expect("base64").stdout).trim().to_string()
}

/// The secrets of the canary kubeconfig: (key as written, value), one per field that can hold
/// a credential.
fn canary_fields() -> Vec<(&'static str, String)> {
    let cert = b64(b"-----BEGIN CERTIFICATE-----\nCANARYcertificate0123456789abcdef\n-----END CERTIFICATE-----\n");
    let key = b64(b"-----BEGIN PRIVATE KEY-----\nCANARYprivatekey0123456789abcdef\n-----END PRIVATE KEY-----\n");
    vec![
        ("token", "CANARYtoken0a1b2c3d4e5f6".into()),
        ("password", "CANARYpassword9f8e7d6c".into()),
        ("client-certificate-data", cert),
        ("client-key-data", key),
        ("id-token", "CANARYidtoken55aa66bb77".into()),
        ("client-secret", "CANARYclientsecret1234".into()),
        ("- --secret=", "CANARYexecarg8899aabb".into()),
        ("value", "CANARYexecenv3344ccdd".into()),
    ]
}

/// A kubeconfig user with every credential field filled with a canary.
fn canary_user(fields: &[(&str, String)]) -> String {
    let v = |k: &str| fields.iter().find(|(f, _)| *f == k).map(|(_, v)| v.clone()).unwrap_or_default();
    format!(
        "    token: {}\n    username: fedsched\n    password: {}\n    client-certificate-data: {}\n    client-key-data: {}\n    auth-provider:\n      name: oidc\n      config:\n        id-token: {}\n        client-secret: {}\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /nonexistent/plugin\n      args:\n      - --secret={}\n      env:\n      - name: SECRET\n        value: {}\n",
        v("token"),
        v("password"),
        v("client-certificate-data"),
        v("client-key-data"),
        v("id-token"),
        v("client-secret"),
        v("- --secret="),
        v("value")
    )
}

/// The ways a kubeconfig's line holding a secret gets broken.
fn break_line(text: &str, key: &str, how: usize) -> Vec<u8> {
    let lines: Vec<&str> = text.lines().collect();
    let i = lines.iter().position(|l| l.trim_start().starts_with(key)).expect("key line");
    let line = lines[i];
    let indent = line.len() - line.trim_start().len();
    let (k, v) = line.trim_start().split_at(key.len());
    let v = v.trim_start_matches(':').trim();
    let k = k.trim_end_matches(':');
    let sep = if key.ends_with('=') { "" } else { ": " };
    let pad = " ".repeat(indent);
    let new: Vec<u8> = match how {
        0 => format!("{}{k}{sep}{v}", " ".repeat(indent.saturating_sub(1))).into_bytes(),
        1 => format!("{pad}   {k}{sep}{v}").into_bytes(),
        2 => format!("\t{k}{sep}{v}").into_bytes(),
        3 => format!("{line}\n{line}").into_bytes(),
        4 => format!("{pad}{k}{sep}[{v}, {{x: {v}}}]").into_bytes(),
        5 => format!("{pad}{k}{sep}{{a: {v}}}").into_bytes(),
        6 => format!("{pad}{k}{sep}\"{v}").into_bytes(),
        7 => format!("{pad}{k}{sep}*{v}").into_bytes(),
        8 => format!("{pad}{k}{sep}!{v} {v}").into_bytes(),
        9 => [format!("{pad}{k}{sep}{v}").as_bytes(), b"\xff\xfe", v.as_bytes()].concat(),
        10 => format!("{pad}{k}{sep}\"{v}\\u0001\"").into_bytes(),
        11 => format!("{pad}{k}{sep}'{v}'\n{pad}  {v}: {v}").into_bytes(),
        _ => {
            // Truncated in the middle of the value.
            let mut t = lines[..i].join("\n").into_bytes();
            t.extend(format!("\n{pad}{k}{sep}{}", &v[..v.len() / 2]).into_bytes());
            return t;
        }
    };
    let mut out = lines[..i].join("\n").into_bytes();
    out.push(b'\n');
    out.extend(new);
    out.push(b'\n');
    out.extend(lines[i + 1..].join("\n").into_bytes());
    out.push(b'\n');
    out
}

const BREAKS: usize = 13;

#[test]
fn no_output_quotes_a_kubeconfig_whatever_field_holds_the_secret_and_however_it_is_broken() {
    let s = Scratch::new();
    let fields = canary_fields();
    let user = canary_user(&fields);
    let kubeconfig = |user: &str, server: &str, proxy: &str| {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: {server}\n{proxy}contexts:\n- name: c\n  context: {{cluster: k, user: u}}\nusers:\n- name: u\n  user:\n{user}"
        )
    };
    let refused = "https://127.0.0.1:1";
    let whole = kubeconfig(&user, refused, "");
    let mut files: Vec<Vec<u8>> = Vec::new();
    // Every field's line broken every way, in YAML.
    for (key, _) in &fields {
        for how in 0..BREAKS {
            files.push(break_line(&whole, key, how));
        }
    }
    // The same file in JSON: whole, truncated, a comma missing, a duplicate key.
    let v = |k: &str| fields.iter().find(|(f, _)| *f == k).map(|(_, v)| v.clone()).unwrap_or_default();
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": refused}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {
            "token": v("token"), "username": "fedsched", "password": v("password"),
            "client-certificate-data": v("client-certificate-data"), "client-key-data": v("client-key-data"),
            "auth-provider": {"name": "oidc", "config": {"id-token": v("id-token"), "client-secret": v("client-secret")}},
            "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/nonexistent/plugin",
                "args": [format!("--secret={}", v("- --secret="))], "env": [{"name": "SECRET", "value": v("value")}]},
        }}],
    }))
    .expect("json");
    files.push(json.clone().into_bytes());
    for (key, value) in &fields {
        if let Some(at) = json.find(value.as_str()) {
            files.push(json.as_bytes()[..at + value.len() / 2].to_vec());
            files.push(json.replacen(&format!("\"{value}\","), &format!("\"{value}\""), 1).into_bytes());
            let key = key.trim_start_matches("- ").trim_end_matches('=');
            files.push(
                json.replacen(&format!("\"{value}\""), &format!("\"{value}\", \"{key}\": \"{value}\""), 1).into_bytes(),
            );
        }
    }
    // Each source alone, as it is used: a refused connection, a plugin that fails or prints
    // garbage echoing its arguments, a bad key, a proxy or server URL with a password.
    let dir = s.dir.path();
    let script = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, body).expect("script");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        p.display().to_string()
    };
    let echo_bad = script("echo-bad.sh", "#!/bin/sh\necho \"{not json: $1 $SECRET\"\n");
    let echo_fail = script("echo-fail.sh", "#!/bin/sh\necho \"$1 $SECRET\"\nexit 3\n");
    let echo_ctl = script(
        "echo-ctl.sh",
        "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\\\\u0001\"}}' \"$SECRET\"\n",
    );
    let echo_version = script(
        "echo-version.sh",
        "#!/bin/sh\nprintf '{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"x\"}}' \"$SECRET\"\n",
    );
    let token_file = dir.join("canary.token");
    std::fs::write(&token_file, "CANARYtokenfile77ee88ff\u{1}\n").expect("token file");
    let exec = |command: &str| {
        format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {command}\n      args: [{}]\n      env:\n      - name: SECRET\n        value: {}\n",
            v("- --secret="),
            v("value")
        )
    };
    let alone = [
        format!("    token: {}\n", v("token")),
        format!("    username: fedsched\n    password: {}\n", v("password")),
        format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            v("client-certificate-data"),
            v("client-key-data")
        ),
        format!(
            "    client-certificate-data: {}\n    client-key-data: CANARY!!notbase64\n",
            v("client-certificate-data")
        ),
        format!("    client-certificate-data: CANARY!!notbase64\n    client-key-data: {}\n", v("client-key-data")),
        format!("    auth-provider:\n      name: oidc\n      config: {{id-token: {}}}\n", v("id-token")),
        format!("    auth-provider:\n      name: gcp\n      config: {{access-token: {}}}\n", v("id-token")),
        format!("    tokenFile: {:?}\n", token_file.display().to_string()),
        exec("/nonexistent/plugin"),
        exec(&echo_bad),
        exec(&echo_fail),
        exec(&echo_ctl),
        exec(&echo_version),
    ];
    for user in &alone {
        files.push(kubeconfig(user, refused, "").into_bytes());
    }
    files.push(kubeconfig(&alone[0], refused, "    proxy-url: ftp://u:CANARYproxypw1122@127.0.0.1:1\n").into_bytes());
    files.push(kubeconfig(&alone[0], refused, "    proxy-url: http://u:CANARYproxypw1122@127.0.0.1:1\n").into_bytes());
    files.push(kubeconfig(&alone[0], "https://u:CANARYserverpw3344@127.0.0.1:1", "").into_bytes());
    files.push(kubeconfig(&alone[0], "https://u:CANARYserverpw3344@127.0.0.1:1:bad", "").into_bytes());

    // One member per file.
    let mut config = format!(
        "policy_dir = {:?}\noutput_dir = {:?}\nstate_dir = {:?}\n[reconcile]\ninterval = \"1s\"\n[poll]\ntimeout = \"5s\"\nconcurrency = 64\n[http]\nlisten = \"127.0.0.1:0\"\n[log]\nformat = \"json\"\n",
        s.policies().display().to_string(),
        s.out().display().to_string(),
        s.state().display().to_string()
    );
    let names: Vec<String> = (0..files.len()).map(|i| format!("m{i:03}")).collect();
    for (name, bytes) in names.iter().zip(&files) {
        let path = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&path, bytes).expect("kubeconfig");
        config.push_str(&format!("[clusters.{name}]\nkubeconfig = {:?}\n", path.display().to_string()));
        s.write(
            &format!("clusters/{name}.yaml"),
            &format!("apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: {name}}}\nspec: {{syncMode: Push}}\n"),
        );
    }
    let config_path = dir.join("fedsched.toml");
    std::fs::write(&config_path, config).expect("config");

    let leaks = |what: &str, text: &str| {
        let mut found = Vec::new();
        if let Some(at) = text.find(CANARY) {
            found.push(text[at.saturating_sub(60)..(at + 60).min(text.len())].to_string());
        }
        for (_, value) in &fields {
            for w in value.as_bytes().windows(16) {
                let w = std::str::from_utf8(w).unwrap_or("");
                if !w.is_empty() && text.contains(w) {
                    found.push(format!("a part of a value: {w}"));
                }
            }
        }
        assert!(found.is_empty(), "{what} quotes a credential: {found:?}");
    };

    let o = render(&config_path);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for name in &names {
        assert!(err.contains(&format!("poll failed: {name}:")), "{name} was not reported:\n{err}");
    }
    leaks("render's stderr", &err);

    let (mut child, log) = daemon_with(&config_path, "info");
    wait_for("every member's failure in the log", Duration::from_secs(60), || {
        let l = log.lock().expect("log");
        names.iter().all(|n| l.lines().any(|line| line.contains("poll failed") && line.contains(&format!("\"{n}\""))))
    });
    wait_for("a pass after them", Duration::from_secs(30), || {
        daemon_get(&s.state(), "/api/v1/clusters")
            .is_some_and(|(code, body)| code == 200 && names.iter().all(|n| body.contains(&format!("\"{n}\""))))
    });
    let (_, clusters) = daemon_get(&s.state(), "/api/v1/clusters").expect("clusters");
    leaks("/api/v1/clusters", &clusters);
    let (_, status) = daemon_get(&s.state(), "/api/v1/status").expect("status");
    leaks("/api/v1/status", &status);
    assert_eq!(terminate(&mut child), Some(0));
    let l = log.lock().expect("log").clone();
    assert!(!l.contains("panicked"), "{l}");
    leaks("the daemon's log", &l);
    let store: String =
        tree(&s.state()).values().map(|b| String::from_utf8_lossy(b).into_owned()).collect::<Vec<_>>().join("\n");
    leaks("the store", &store);
    let mut reasons = 0;
    for name in &names {
        let o = s.cmd("snapshots", &[name, "-o", "json"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        leaks(&format!("snapshots {name} -o json"), &out);
        reasons += usize::from(out.contains("access:") || out.contains("listing"));
    }
    assert_eq!(reasons, names.len(), "every member's reason is stored");
}
