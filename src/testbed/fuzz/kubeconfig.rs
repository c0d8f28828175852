//! The kubeconfig target: a kubeconfig with every way of authenticating (inline token, token
//! file, basic auth, exec plugin, `auth-provider` oidc/gcp/azure, client certificate data and
//! files) and every cluster field, each credential a canary, mutated as a document and as bytes
//! (YAML or JSON), then given to the real entry points: a poll round of the production
//! poller (kubeconfig read, credentials taken and resolved — the exec plugin run —, the
//! clients built, one request to a closed local port) and the `[ha]` host client. Two
//! properties: no panic or hang, and no canary in any error message.
//!
//! Safety of the host: every `server` and `proxy-url` that is not a local address is replaced
//! by one (a mutated URL never reaches the network); an exec plugin's command is `printf` (its
//! output fuzzed through its arguments), `false` or a missing path; file paths are names in
//! the case's directory.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::mutate::{MAX_TEXT, Rng, mutate_bytes, mutate_value, string, to_text};
use crate::config::{ClusterAccess, PollSection};
use crate::members::live::{Poller, Target};

/// The canary every credential of the seed contains.
pub const CANARY: &str = "CANARY7f3a";

/// Local addresses (and malformed ones) a `server` may be.
const SERVERS: &[&str] = &[
    "https://127.0.0.1:1",
    "http://127.0.0.1:1/prefix",
    "https://localhost:1",
    "https://[::1]:1",
    "https://127.0.0.1:1/a%20b?x=1",
    "https://127.0.0.1",
    "127.0.0.1:1",
    "",
    "https://",
    "https://[::1",
    "unix:///var/run/x.sock",
    "ftp://127.0.0.1:1",
];

const PROXIES: &[&str] = &["http://127.0.0.1:1", "socks5://127.0.0.1:1", "https://127.0.0.1:1", "gopher://127.0.0.1:1"];

fn exec_output(rng: &mut Rng) -> String {
    let status = match rng.below(5) {
        0 => json!({"token": format!("{CANARY}-exec\u{1}")}),
        1 => json!({"token": format!("{CANARY}-exec"), "expirationTimestamp": "2000-01-01T00:00:00Z"}),
        2 => {
            json!({"clientCertificateData": format!("-----BEGIN CERTIFICATE-----\n{CANARY}\n-----END CERTIFICATE-----"),
                    "clientKeyData": format!("-----BEGIN PRIVATE KEY-----\n{CANARY}\n-----END PRIVATE KEY-----")})
        }
        3 => json!({"token": string(rng)}),
        _ => json!({"token": format!("{CANARY}-exec"), "expirationTimestamp": "not a time"}),
    };
    let mut doc = json!({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status});
    if rng.chance(30) {
        mutate_value(rng, &mut doc, &[], 2);
    }
    serde_json::to_string(&doc).unwrap_or_default()
}

/// The seed: one context per way of authenticating.
fn seed(rng: &mut Rng) -> Value {
    let users = json!([
        {"name": "token", "user": {"token": format!("{CANARY}-token")}},
        {"name": "file", "user": {"tokenFile": "token"}},
        {"name": "basic", "user": {"username": "admin", "password": format!("{CANARY}-password")}},
        {"name": "exec", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "printf",
            "args": ["%s", exec_output(rng)], "env": [{"name": "X", "value": format!("{CANARY}-env")}],
            "interactiveMode": "Never", "provideClusterInfo": true}}},
        {"name": "oidc", "user": {"auth-provider": {"name": "oidc", "config": {"id-token": format!("{CANARY}-oidc"),
            "client-secret": format!("{CANARY}-secret"), "refresh-token": format!("{CANARY}-refresh")}}}},
        {"name": "gcp", "user": {"auth-provider": {"name": "gcp", "config": {"access-token": format!("{CANARY}-gcp")}}}},
        {"name": "certs", "user": {"client-certificate-data": "bm90IGEgY2VydA==", "client-key-data": "bm90IGEga2V5",
            "as": "someone", "as-groups": ["a", "b"]}},
        {"name": "certfiles", "user": {"client-certificate": "cert.pem", "client-key": "key.pem"}},
    ]);
    let names = ["token", "file", "basic", "exec", "oidc", "gcp", "certs", "certfiles"];
    let contexts: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "context": {"cluster": if *n == "certs" { "other" } else { "local" }, "user": n, "namespace": "default"}}))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {"name": "local", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": "bm90IGEgQ0E=",
                "tls-server-name": "kubernetes", "extensions": [{"name": "x", "extension": {"a": 1}}]}},
            {"name": "other", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": true,
                "proxy-url": "http://127.0.0.1:1", "certificate-authority": "ca.pem", "disable-compression": true}},
        ],
        "users": users,
        "contexts": contexts,
        "current-context": rng.pick(&names),
    })
}

/// A generated kubeconfig.
#[derive(Debug)]
pub struct KubeconfigCase {
    pub text: Vec<u8>,
    /// The context given in `[clusters.NAME] context` (None: the current one).
    pub context: Option<String>,
    pub token_file: Vec<u8>,
}

pub(crate) fn generate(rng: &mut Rng) -> KubeconfigCase {
    let mut doc = seed(rng);
    // A donor without canaries: a credential copied into a name would be quoted legitimately.
    let donor = serde_json::to_string(&seed(rng)).unwrap_or_default().replace(CANARY, "donor");
    let donors = [serde_json::from_str(&donor).unwrap_or(Value::Null)];
    if rng.chance(80) {
        mutate_value(rng, &mut doc, &donors, 5);
    }
    if rng.chance(25) {
        // A credential with a control byte or of a megabyte.
        let v = if rng.chance(50) {
            format!("{CANARY}\u{0}{}", string(rng))
        } else {
            format!("{CANARY}{}", "t".repeat(1 << 20))
        };
        let field = *rng.pick(&[
            "/users/0/user/token",
            "/users/2/user/password",
            "/users/4/user/auth-provider/config/id-token",
        ]);
        if let Some(slot) = doc.pointer_mut(field) {
            *slot = Value::String(v);
        }
    }
    make_safe(&mut doc);
    // As the repository target writes its documents (`to_text`): a deep nesting as block YAML
    // is quadratic in its depth (a 2,000-level one was a 54 MB kubeconfig, 8 s per case to
    // generate, write and parse again, and refused unread by the size limit anyway).
    // Pretty JSON is quadratic in the depth too (each level indents every line below it): a
    // deep nesting goes straight to compact JSON, the text its pretty form fell back to
    // (seed 3 case 14089: 14 s of CPU building a pretty string of gigabytes, to drop it).
    let mut text = if rng.chance(25) {
        (super::mutate::depth(&doc, 0) <= 200)
            .then(|| serde_json::to_string_pretty(&doc).ok())
            .flatten()
            .filter(|t| t.len() <= MAX_TEXT)
            .or_else(|| serde_json::to_string(&doc).ok())
    } else {
        to_text(rng, &doc)
    }
    .unwrap_or_default()
    .into_bytes();
    if rng.chance(30) {
        mutate_bytes(rng, &mut text, 3);
    }
    let context = rng.chance(30).then(|| rng.pick(&["token", "exec", "missing", "file"]).to_string());
    let token_file = match rng.below(4) {
        0 => format!("{CANARY}-file\u{1}").into_bytes(),
        1 => Vec::new(),
        2 => vec![0xff, 0xfe],
        _ => format!("  {CANARY}-file\n").into_bytes(),
    };
    KubeconfigCase { text, context, token_file }
}

/// Every server and proxy local, every exec command harmless, every file name in the case's
/// directory (the mutation may have put any value anywhere).
fn make_safe(v: &mut Value) {
    fn walk(v: &mut Value, key: Option<&str>) {
        match v {
            Value::Object(m) => {
                for (k, child) in m.iter_mut() {
                    walk(child, Some(k.as_str()));
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|c| walk(c, key)),
            _ => {}
        }
        let Some(key) = key else { return };
        match key {
            "server" if !local(v) => *v = json!(SERVERS[v.to_string().len() % SERVERS.len()]),
            "proxy-url" if !local(v) => *v = json!(PROXIES[v.to_string().len() % PROXIES.len()]),
            "command" if !matches!(v.as_str(), Some("printf" | "false" | "/nonexistent/fedsched-plugin")) => {
                *v = json!("/nonexistent/fedsched-plugin");
            }
            "tokenFile" | "client-certificate" | "client-key" | "certificate-authority" => {
                let name = v.as_str().unwrap_or("");
                if !matches!(name, "token" | "cert.pem" | "key.pem" | "ca.pem" | "missing") {
                    *v = json!("missing");
                }
            }
            _ => {}
        }
    }
    walk(v, None);
}

/// Whether a server or proxy value is one of the local (or malformed) ones.
fn local(v: &Value) -> bool {
    v.as_str().is_some_and(|s| SERVERS.contains(&s) || PROXIES.contains(&s)) || !v.is_string()
}

/// Writes the case under `work` and runs it through a poll round and the host client.
pub fn run(case: &KubeconfigCase, work: &Path, runtime: &tokio::runtime::Runtime) -> Result<(), String> {
    super::repo::fresh(work)?;
    let path = work.join("kubeconfig");
    let write = |name: &str, bytes: &[u8]| std::fs::write(work.join(name), bytes).map_err(|e| format!("{name}: {e}"));
    write("kubeconfig", &case.text)?;
    write("token", &case.token_file)?;
    write("cert.pem", format!("-----BEGIN CERTIFICATE-----\n{CANARY}\n-----END CERTIFICATE-----\n").as_bytes())?;
    write("key.pem", format!("-----BEGIN PRIVATE KEY-----\n{CANARY}\n-----END PRIVATE KEY-----\n").as_bytes())?;
    write("ca.pem", b"not a CA")?;
    let access = ClusterAccess { kubeconfig: Some(path), context: case.context.clone(), ..ClusterAccess::default() };
    let target = Target {
        name: "fuzz".into(),
        access: access.clone(),
        api_endpoint: None,
        insecure_skip_tls_verification: false,
        proxy_url: None,
    };
    let poll = PollSection {
        timeout: Duration::from_secs(3),
        read_timeout: Duration::from_secs(1),
        watch: false,
        ..PollSection::default()
    };
    let mut messages = Vec::new();
    runtime.block_on(async {
        let mut poller = Poller::new(poll, Duration::from_secs(30));
        let report = poller.round(std::slice::from_ref(&target)).await;
        messages.extend(report.failed.iter().map(|(_, e, _)| e.to_string()));
        for status in poller.view().clusters.values() {
            messages.push(format!("{status:?}"));
        }
        if let Err(e) = crate::members::live::host_client(&access, None, Duration::from_secs(1)).await {
            messages.push(e.to_string());
        }
    });
    if !canary_only_in_credentials(&case.text) {
        return Ok(());
    }
    match messages.iter().find(|m| m.contains(CANARY)) {
        Some(m) => Err(format!("a credential in an error message: {}", m.chars().take(300).collect::<String>())),
        None => Ok(()),
    }
}

/// Whether every canary of the kubeconfig is in a credential field: true when the text is not
/// a YAML document at all (its errors must not quote it anywhere), false when a mutation moved
/// a canary into a name or a key, which messages may quote.
fn canary_only_in_credentials(text: &[u8]) -> bool {
    const CREDENTIALS: &[&str] = &[
        "token",
        "password",
        "id-token",
        "client-secret",
        "refresh-token",
        "access-token",
        "value",
        "args",
        "client-certificate-data",
        "client-key-data",
    ];
    fn walk(v: &Value, key: Option<&str>) -> bool {
        match v {
            Value::Object(m) => m.iter().all(|(k, c)| !k.contains(CANARY) && walk(c, Some(k))),
            Value::Array(a) => a.iter().all(|c| walk(c, key)),
            Value::String(s) if s.contains(CANARY) => key.is_some_and(|k| CREDENTIALS.contains(&k)),
            _ => true,
        }
    }
    let Ok(text) = std::str::from_utf8(text) else { return true };
    match serde_saphyr::from_str_with_options::<Value>(text, crate::policy::load::yaml_options()) {
        Ok(v) => walk(&v, None),
        Err(_) => true,
    }
}

/// The case as text, for a person.
pub fn show(case: &KubeconfigCase) -> String {
    format!(
        "==> kubeconfig ({} bytes), context {:?}\n{}\n==> token ({} bytes)\n",
        case.text.len(),
        case.context,
        String::from_utf8_lossy(&case.text),
        case.token_file.len()
    )
}
