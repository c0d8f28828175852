//! Credentials of a cluster fedsched talks to (a member, or the host cluster of `[ha]`): every
//! source of the `Authorization` header in one place. kube is given none of them (it would
//! panic on a token that is not a header value, run exec plugins synchronously, unbounded and
//! three times per client); it keeps the TLS identity and impersonation only.
//!
//! Sources, in client-go's and kube's precedence: an `auth-provider` (`oidc`: its `id-token`;
//! `gcp` and `azure` are refused with client-go's advice, as kubectl does since 1.26), basic
//! auth (`username` + `password`), an inline `token`, a token file (`tokenFile`, or
//! `token_file` in the configuration: [`TokenFile`]), an exec credential plugin
//! ([`ExecPlugin`]). Every value is checked as an HTTP header value when it is read: a control
//! character (NUL, `\n`, `\r`, DEL…) is an error of that cluster naming the field
//! ([`CredentialError`]), never a panic. No message quotes a value; [`Redactor`] is the last
//! line of defence for messages made from a kubeconfig by other code (kube, rustls).
//!
//! Exec plugins run without a terminal (stdin `/dev/null`, stderr passed through as client-go
//! does), in a process group of their own, under a budget (`poll.timeout` for a member, the
//! renew deadline for the host cluster); past it, or when the poll that waits for it is
//! dropped (SIGTERM), the whole group is killed. Their output is read up to 1 MiB. Their
//! credential is cached until its `expirationTimestamp` (less 10 s), or without one until a
//! request is answered 401, as client-go does; plugins with the same configuration share one
//! cache (client-go's global cache), so a member's list and watch clients, their rebuilds after
//! an error and a host cluster with the same user run it once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::SystemTime;

use secrecy::{ExposeSecret, SecretString};

use super::*;

/// Why a credential cannot be used. Messages name the source (field, file, plugin), never a
/// value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// A value is not an HTTP header value.
    #[error(
        "{field}: contains a character not allowed in an HTTP header (a control character such as NUL, a \
         newline or DEL); the value is not shown"
    )]
    Header { field: String },
    /// A token file cannot be used.
    #[error("token file {}: {reason}", path.display())]
    TokenFile { path: PathBuf, reason: String },
    /// An exec credential plugin failed.
    #[error("exec plugin {command}: {reason}")]
    Exec { command: String, reason: String },
    /// An auth provider cannot be used.
    #[error("{field}: {reason}")]
    Unsupported { field: String, reason: String },
}

impl From<CredentialError> for PollError {
    fn from(e: CredentialError) -> PollError {
        PollError::Access(e.to_string())
    }
}

/// The credential error in an error's chain (a request refused by [`Authorize`]), if any.
pub(super) fn credential_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a CredentialError> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(found) = c.downcast_ref::<CredentialError>() {
            return Some(found);
        }
        cur = c.source();
    }
    None
}

/// `Bearer <token>` as a sensitive header value; `field` names the token's source.
fn bearer(token: &str, field: &str) -> Result<http::HeaderValue, CredentialError> {
    let mut v = http::HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| CredentialError::Header { field: field.to_string() })?;
    v.set_sensitive(true);
    Ok(v)
}

/// `Basic base64(user:password)` as a sensitive header value.
fn basic(user: &str, password: &str) -> http::HeaderValue {
    let mut v =
        http::HeaderValue::from_str(&format!("Basic {}", base64_encode(format!("{user}:{password}").as_bytes())))
            .unwrap_or_else(|_| http::HeaderValue::from_static("Basic"));
    v.set_sensitive(true);
    v
}

/// Standard base64 with padding.
pub(super) fn base64_encode(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// How long a token read from a file is used before the file is read again.
const TOKEN_REREAD: Duration = Duration::from_secs(60);

/// A bearer token file: read when the client is built, then again at most once a minute; its
/// content trimmed of leading and trailing whitespace (client-go's rule). If a re-read fails or
/// finds the file empty, the last token read is kept (the file may be gone on purpose).
pub(super) struct TokenFile {
    path: PathBuf,
    /// (when read, the `Authorization` header value).
    current: std::sync::Mutex<(Instant, http::HeaderValue)>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile").field("path", &self.path).finish_non_exhaustive()
    }
}

impl TokenFile {
    /// Reads `path`; errors name the file, never its content.
    pub(super) fn open(path: &Path) -> Result<TokenFile, CredentialError> {
        let header = Self::read(path)?;
        Ok(TokenFile { path: path.to_path_buf(), current: std::sync::Mutex::new((Instant::now(), header)) })
    }

    fn read(path: &Path) -> Result<http::HeaderValue, CredentialError> {
        let failed = |reason: String| CredentialError::TokenFile { path: path.to_path_buf(), reason };
        let text = std::fs::read(path).map_err(|e| failed(e.to_string()))?;
        let text = String::from_utf8(text)
            .map_err(|_| failed("the token is not UTF-8 text (characters not allowed in a header)".into()))?;
        let token = text.trim();
        if token.is_empty() {
            return Err(failed("is empty".into()));
        }
        bearer(token, "").map_err(|_| failed("the token contains characters not allowed in a header".into()))
    }

    /// The `Authorization` header value, re-reading the file when the last read is a minute
    /// old.
    pub(super) fn header(&self) -> http::HeaderValue {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current.0.elapsed() >= TOKEN_REREAD {
            match Self::read(&self.path) {
                Ok(v) => current.1 = v,
                Err(error) => tracing::warn!(%error, "cannot re-read the token file; using the last token read"),
            }
            current.0 = Instant::now();
        }
        current.1.clone()
    }
}

/// The largest output an exec plugin may print (an `ExecCredential` with a certificate and
/// its key is a few KiB).
pub const MAX_EXEC_OUTPUT: usize = 1 << 20;

/// A cached credential is used until this long before its `expirationTimestamp`.
const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

/// An exec plugin's configuration, as it is run (the cache's key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ExecSpec {
    /// The command as written (for messages).
    shown: String,
    /// The command to run: relative paths with a separator resolved against the kubeconfig's
    /// directory (client-go's rule).
    command: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    api_version: String,
    /// `KUBERNETES_EXEC_INFO`.
    info: String,
    install_hint: Option<String>,
}

/// What a plugin issued.
#[derive(Clone)]
struct Issued {
    header: Option<http::HeaderValue>,
    identity: Option<Identity>,
    expires: Option<SystemTime>,
}

/// A client certificate and key a plugin issued (PEM).
#[derive(Clone)]
pub(super) struct Identity {
    pub(super) certificate: String,
    pub(super) key: SecretString,
}

/// An exec credential plugin and its cached credential.
pub(super) struct ExecPlugin {
    spec: ExecSpec,
    cached: tokio::sync::Mutex<Option<Issued>>,
}

/// Plugins by configuration (client-go's global cache): one credential per configuration in
/// the process, whatever client asks for it. Cleared when it grows past 1,024 configurations
/// (a configuration reloaded many times with new plugins).
static EXEC_PLUGINS: LazyLock<std::sync::Mutex<HashMap<ExecSpec, Arc<ExecPlugin>>>> = LazyLock::new(Default::default);

/// The output of a plugin (client.authentication.k8s.io `ExecCredential`), narrowly.
#[derive(serde::Deserialize)]
struct ExecOutput {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
    status: Option<ExecStatus>,
}

#[derive(serde::Deserialize)]
struct ExecStatus {
    #[serde(rename = "expirationTimestamp")]
    expiration_timestamp: Option<String>,
    token: Option<String>,
    #[serde(rename = "clientCertificateData")]
    client_certificate_data: Option<String>,
    #[serde(rename = "clientKeyData")]
    client_key_data: Option<String>,
}

/// Kills a process group when dropped, unless disarmed: a plugin that ran past its budget, or
/// whose poll was dropped (the daemon stopping), goes with everything it started.
struct ProcessGroup(Option<rustix::process::Pid>);

impl ProcessGroup {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl ExecPlugin {
    /// The plugin of `exec` (shared with every other client of the same configuration).
    fn of(exec: &kube::config::ExecConfig, base: Option<&Path>) -> Result<Arc<ExecPlugin>, CredentialError> {
        let shown = exec.command.clone().unwrap_or_default();
        let unsupported = |reason: String| CredentialError::Exec { command: shown.clone(), reason };
        if shown.is_empty() {
            return Err(CredentialError::Unsupported { field: "exec".into(), reason: "no command".into() });
        }
        let api_version = exec.api_version.clone().unwrap_or_default();
        if !matches!(api_version.as_str(), "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1") {
            return Err(unsupported(format!(
                "exec.apiVersion {api_version:?} is not client.authentication.k8s.io/v1 or v1beta1"
            )));
        }
        if exec.interactive_mode == Some(kube::config::ExecInteractiveMode::Always) {
            return Err(unsupported(
                "interactiveMode Always needs a terminal; fedsched runs credential plugins without one".into(),
            ));
        }
        let command = match base {
            Some(dir) if shown.contains('/') && Path::new(&shown).is_relative() => dir.join(&shown),
            _ => PathBuf::from(&shown),
        };
        let env =
            exec.env.iter().flatten().filter_map(|e| Some((e.get("name")?.clone(), e.get("value")?.clone()))).collect();
        let mut spec = serde_json::json!({"interactive": false});
        if exec.provide_cluster_info {
            let cluster =
                exec.cluster.as_ref().ok_or_else(|| unsupported("provideClusterInfo without a cluster".into()))?;
            spec["cluster"] = serde_json::to_value(cluster).unwrap_or_default();
        }
        let info = serde_json::json!({"apiVersion": api_version, "kind": "ExecCredential", "spec": spec}).to_string();
        let spec = ExecSpec {
            shown: shown.clone(),
            command,
            args: exec.args.clone().unwrap_or_default(),
            env,
            api_version,
            info,
            install_hint: exec.install_hint.clone(),
        };
        let mut plugins = EXEC_PLUGINS.lock().unwrap_or_else(|p| p.into_inner());
        if plugins.len() >= 1024 {
            plugins.clear();
        }
        let plugin = plugins
            .entry(spec.clone())
            .or_insert_with(|| Arc::new(ExecPlugin { spec, cached: tokio::sync::Mutex::new(None) }));
        Ok(Arc::clone(plugin))
    }

    fn failed(&self, reason: impl Into<String>) -> CredentialError {
        CredentialError::Exec { command: self.spec.shown.clone(), reason: reason.into() }
    }

    /// The cached credential while it is valid, else a fresh one (the plugin run within
    /// `budget`). Callers wait for one run at a time.
    async fn issued(&self, budget: Duration) -> Result<Issued, CredentialError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref()
            && c.expires.is_none_or(|at| SystemTime::now() + EXPIRY_MARGIN < at)
        {
            return Ok(c.clone());
        }
        let issued = self.run(budget).await?;
        *cached = Some(issued.clone());
        Ok(issued)
    }

    /// Forgets the cached credential if it is still the one that sent `used` (a 401: the next
    /// request runs the plugin again, as client-go does).
    fn rejected(&self, used: &http::HeaderValue) {
        if let Ok(mut cached) = self.cached.try_lock()
            && cached.as_ref().and_then(|c| c.header.as_ref()) == Some(used)
        {
            *cached = None;
        }
    }

    /// Runs the plugin once, within `budget`.
    async fn run(&self, budget: Duration) -> Result<Issued, CredentialError> {
        use tokio::io::AsyncReadExt;
        let mut cmd = tokio::process::Command::new(&self.spec.command);
        cmd.args(&self.spec.args)
            .envs(self.spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("KUBERNETES_EXEC_INFO", &self.spec.info)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            let hint = match (&self.spec.install_hint, e.kind()) {
                (Some(h), std::io::ErrorKind::NotFound) => format!(" ({})", h.trim()),
                _ => String::new(),
            };
            self.failed(format!("cannot start: {e}{hint}"))
        })?;
        let group = ProcessGroup(child.id().and_then(|id| rustix::process::Pid::from_raw(id as i32)));
        let mut stdout = child.stdout.take();
        let work = async {
            let mut out = Vec::new();
            if let Some(s) = stdout.as_mut() {
                s.take(MAX_EXEC_OUTPUT as u64 + 1).read_to_end(&mut out).await?;
            }
            if out.len() > MAX_EXEC_OUTPUT {
                return Ok((out, None));
            }
            child.wait().await.map(|status| (out, Some(status)))
        };
        let (out, status) = match tokio::time::timeout(budget, work).await {
            Err(_) => {
                return Err(self.failed(format!(
                    "did not finish within {}; it was killed with its process group",
                    humantime::format_duration(budget)
                )));
            }
            Ok(Err(e)) => return Err(self.failed(format!("reading its output: {e}"))),
            Ok(Ok((_, None))) => return Err(self.failed(format!("printed more than {MAX_EXEC_OUTPUT} bytes"))),
            Ok(Ok((out, Some(status)))) => (out, status),
        };
        if !status.success() {
            return Err(self.failed(format!("failed ({status}); what it printed on standard error is in fedsched's")));
        }
        group.disarm();
        self.parse(&out)
    }

    /// The credential in a plugin's output. Messages give positions, never the output.
    fn parse(&self, out: &[u8]) -> Result<Issued, CredentialError> {
        let parsed: ExecOutput = match serde_json::from_slice(out) {
            Ok(p) => p,
            Err(json) => match std::str::from_utf8(out).ok().map(serde_saphyr::from_str::<ExecOutput>) {
                Some(Ok(p)) => p,
                _ => {
                    return Err(self.failed(format!(
                        "its output is not an ExecCredential in JSON (line {}, column {}; the output is not shown)",
                        json.line(),
                        json.column()
                    )));
                }
            },
        };
        if parsed.kind.as_deref().is_some_and(|k| k != "ExecCredential") {
            return Err(self.failed("its output is not of kind ExecCredential"));
        }
        let version = parsed.api_version.unwrap_or_default();
        if version != self.spec.api_version {
            return Err(self.failed(format!(
                "is configured with apiVersion {}, and its output has {:?}",
                self.spec.api_version,
                version.chars().take(80).collect::<String>()
            )));
        }
        let status = parsed.status.ok_or_else(|| self.failed("its output has no status"))?;
        let expires = match status.expiration_timestamp.as_deref() {
            None | Some("") => None,
            Some(t) => Some(
                crate::util::clock::parse_rfc3339(t)
                    .ok_or_else(|| self.failed("status.expirationTimestamp is not an RFC 3339 time"))?,
            ),
        };
        let header = match status.token.as_deref() {
            None | Some("") => None,
            Some(t) => Some(bearer(t, "").map_err(|_| {
                self.failed(
                    "printed a token with a character not allowed in an HTTP header (a control character such as \
                     NUL, a newline or DEL); the token is not shown",
                )
            })?),
        };
        let identity = match (status.client_certificate_data, status.client_key_data) {
            (Some(certificate), Some(key)) => Some(Identity { certificate, key: key.into() }),
            (None, None) => None,
            _ => {
                return Err(
                    self.failed("printed a client certificate without its key, or a key without its certificate")
                );
            }
        };
        if header.is_none() && identity.is_none() {
            return Err(self.failed("printed neither a token nor a client certificate and key"));
        }
        Ok(Issued { header, identity, expires })
    }
}

/// Where a cluster's `Authorization` header comes from.
enum Source {
    /// An inline token, basic auth, an OIDC `id-token`.
    Static(http::HeaderValue),
    File(TokenFile),
    Exec(Arc<ExecPlugin>),
}

/// The credentials of one cluster ([`Credentials::take`]), shared by its clients.
pub(super) struct Credentials {
    source: Source,
    /// The budget of an exec plugin's run.
    budget: Duration,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.source {
            Source::Static(_) => "static",
            Source::File(t) => return f.debug_tuple("Credentials").field(t).finish(),
            Source::Exec(p) => return f.debug_tuple("Credentials").field(&p.spec.shown).finish(),
        };
        f.debug_tuple("Credentials").field(&kind).finish()
    }
}

impl Credentials {
    /// Takes every credential out of `auth` (kube keeps the TLS identity and impersonation);
    /// `user` names the kubeconfig user in messages, `base` is the kubeconfig's directory
    /// (relative `tokenFile` and plugin paths), `budget` bounds an exec plugin's run. `None`:
    /// no credential (a client certificate, or anonymous).
    pub(super) fn take(
        auth: &mut kube::config::AuthInfo,
        user: &str,
        base: Option<&Path>,
        budget: Duration,
    ) -> Result<Option<Arc<Credentials>>, CredentialError> {
        let (provider, username, password) = (auth.auth_provider.take(), auth.username.take(), auth.password.take());
        let (token, token_file, exec) = (auth.token.take(), auth.token_file.take(), auth.exec.take());
        // A client certificate in the kubeconfig wins over an exec plugin (client-go's rule).
        let certificate = auth.client_certificate.is_some() || auth.client_certificate_data.is_some();
        let field = |name: &str| format!("user {user:?}: {name}");
        let source = if let Some(p) = provider {
            Source::Static(provider_token(&p, &field("auth-provider"))?)
        } else if let (Some(u), Some(p)) = (&username, &password) {
            Source::Static(basic(u, p.expose_secret()))
        } else if let Some(t) = token {
            Source::Static(bearer(t.expose_secret(), &field("token"))?)
        } else if let Some(path) = token_file {
            let path = match base {
                Some(dir) if Path::new(&path).is_relative() => dir.join(path),
                _ => PathBuf::from(path),
            };
            Source::File(TokenFile::open(&path)?)
        } else if let Some(e) = exec.filter(|_| !certificate) {
            Source::Exec(ExecPlugin::of(&e, base)?)
        } else {
            return Ok(None);
        };
        Ok(Some(Arc::new(Credentials { source, budget })))
    }

    /// The `Authorization` header value (an exec plugin run when its credential is not cached
    /// or has expired); `None` when the credential is a client certificate.
    pub(super) async fn header(&self) -> Result<Option<http::HeaderValue>, CredentialError> {
        match &self.source {
            Source::Static(v) => Ok(Some(v.clone())),
            Source::File(t) => Ok(Some(t.header())),
            Source::Exec(p) => Ok(p.issued(self.budget).await?.header),
        }
    }

    /// The client certificate an exec plugin issued, and until when it is valid.
    pub(super) async fn identity(&self) -> Result<Option<(Identity, Option<SystemTime>)>, CredentialError> {
        match &self.source {
            Source::Exec(p) => {
                let issued = p.issued(self.budget).await?;
                Ok(issued.identity.map(|i| (i, issued.expires)))
            }
            _ => Ok(None),
        }
    }

    /// A request with `used` was answered 401.
    fn rejected(&self, used: &http::HeaderValue) {
        if let Source::Exec(p) = &self.source {
            p.rejected(used);
        }
    }
}

/// The token of an `auth-provider`: `oidc`'s `id-token` (not refreshed: kube's rule without
/// its `oidc` feature); `gcp` and `azure` are refused as kubectl refuses them since 1.26.
fn provider_token(p: &kube::config::AuthProviderConfig, field: &str) -> Result<http::HeaderValue, CredentialError> {
    let unsupported = |reason: String| CredentialError::Unsupported { field: field.to_string(), reason };
    match p.name.as_str() {
        "oidc" => match p.config.get("id-token") {
            Some(t) => bearer(t, &format!("{field} oidc: id-token")),
            None => Err(unsupported("oidc without an id-token (refreshing one is not supported)".into())),
        },
        "gcp" => Err(unsupported(
            "the gcp auth provider was removed from client-go (Kubernetes 1.26); use the gke-gcloud-auth-plugin \
             exec plugin (https://cloud.google.com/blog/products/containers-kubernetes/kubectl-auth-changes-in-gke)"
                .into(),
        )),
        "azure" => Err(unsupported(
            "the azure auth provider was removed from client-go (Kubernetes 1.26); use the kubelogin exec plugin \
             (https://github.com/Azure/kubelogin)"
                .into(),
        )),
        other => Err(unsupported(format!("unknown auth provider {:?}", other.chars().take(40).collect::<String>()))),
    }
}

/// Puts a cluster's `Authorization` header on every request ([`Authorize`]).
#[derive(Clone, Default)]
pub(super) struct AuthorizeLayer(pub(super) Option<Arc<Credentials>>);

impl<S> tower::Layer<S> for AuthorizeLayer {
    type Service = Authorize<S>;
    fn layer(&self, inner: S) -> Authorize<S> {
        Authorize { inner: Arc::new(tokio::sync::Mutex::new(inner)), credentials: self.0.clone() }
    }
}

/// The header of [`Credentials::header`] on every request: a credential that cannot be had
/// fails the request with the [`CredentialError`] (which [`credential_error`] finds); a 401
/// answer lets an exec plugin's cached credential go. The inner service is called under a
/// mutex (only to start the request), so a service that is not `Clone` (kube's boxed stack)
/// can sit under an asynchronous header.
pub(super) struct Authorize<S> {
    inner: Arc<tokio::sync::Mutex<S>>,
    credentials: Option<Arc<Credentials>>,
}

impl<S> Clone for Authorize<S> {
    fn clone(&self) -> Self {
        Authorize { inner: Arc::clone(&self.inner), credentials: self.credentials.clone() }
    }
}

type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<kube::client::Body>> for Authorize<S>
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<tower::BoxError>,
{
    type Response = http::Response<B>;
    type Error = tower::BoxError;
    type Future = BoxFuture<Result<http::Response<B>, tower::BoxError>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<kube::client::Body>) -> Self::Future {
        use tower::ServiceExt;
        let (inner, credentials) = (Arc::clone(&self.inner), self.credentials.clone());
        Box::pin(async move {
            let used = match &credentials {
                Some(c) => c.header().await?,
                None => None,
            };
            if let Some(v) = &used {
                req.headers_mut().insert(http::header::AUTHORIZATION, v.clone());
            }
            let answer = {
                let mut service = inner.lock().await;
                service.ready().await.map_err(Into::into)?.call(req)
            };
            let res = answer.await.map_err(Into::into)?;
            if res.status() == http::StatusCode::UNAUTHORIZED
                && let (Some(c), Some(v)) = (&credentials, &used)
            {
                c.rejected(v);
            }
            Ok(res)
        })
    }
}

/// Removes a cluster's credential values from a message (whole, and any 16-character run of a
/// longer one): the last line of defence for messages that other code (kube, rustls, the
/// YAML parser) made from a kubeconfig. The values: token, password, client key and
/// certificate data, exec arguments and environment values, auth-provider configuration,
/// the userinfo of the server and proxy URLs.
#[derive(Default)]
pub(super) struct Redactor {
    whole: Vec<String>,
    /// Every [`RUN`]-byte window of the values, as a number: no allocation per window and
    /// foldhash, not SipHash — a kubeconfig's megabyte credential (a megabyte of windows) took
    /// 1 s per client build as `HashSet<Vec<u8>>` in a debug build.
    runs: crate::util::hash::KeySet<u128>,
}

/// The length of the runs [`Redactor`] looks for (the width of a `u128`).
const RUN: usize = 16;

/// The [`RUN`]-byte windows of `bytes`, as numbers.
fn windows(bytes: &[u8]) -> impl Iterator<Item = u128> + '_ {
    bytes.windows(RUN).filter_map(|w| <[u8; RUN]>::try_from(w).ok()).map(u128::from_le_bytes)
}

impl Redactor {
    /// The values of `auth` and of the URLs.
    pub(super) fn of(auth: &kube::config::AuthInfo, urls: &[&str]) -> Redactor {
        let mut values: Vec<String> = Vec::new();
        for s in [&auth.token, &auth.password, &auth.client_key_data].into_iter().flatten() {
            values.push(s.expose_secret().to_string());
        }
        values.extend(auth.client_certificate_data.clone());
        if let Some(e) = &auth.exec {
            values.extend(e.args.iter().flatten().cloned());
            values.extend(e.env.iter().flatten().filter_map(|m| m.get("value").cloned()));
        }
        if let Some(p) = &auth.auth_provider {
            values.extend(p.config.values().cloned());
        }
        for url in urls {
            if let Some((_, rest)) = url.split_once("://")
                && let Some((info, _)) = rest.split('/').next().unwrap_or("").rsplit_once('@')
            {
                values.push(info.to_string());
                values.extend(info.split(':').map(str::to_string));
            }
        }
        let mut r = Redactor::default();
        for v in values {
            for part in std::iter::once(v.as_str()).chain(v.lines()) {
                let part = part.trim();
                if part.len() >= 6 && !r.whole.iter().any(|w| w == part) {
                    r.whole.push(part.to_string());
                }
                r.runs.extend(windows(part.as_bytes()));
            }
        }
        // Longest first: a value that contains another is removed whole.
        r.whole.sort_by_key(|w| std::cmp::Reverse(w.len()));
        r
    }

    /// The values of every user of a kubeconfig, and the URLs of its clusters.
    pub(super) fn of_kubeconfig(kc: &kube::config::Kubeconfig) -> Redactor {
        let urls: Vec<&str> = kc
            .clusters
            .iter()
            .filter_map(|c| c.cluster.as_ref())
            .flat_map(|c| c.server.iter().chain(&c.proxy_url))
            .map(String::as_str)
            .collect();
        let mut r = Redactor::of(&kube::config::AuthInfo::default(), &urls);
        for user in kc.auth_infos.iter().filter_map(|u| u.auth_info.as_ref()) {
            let one = Redactor::of(user, &[]);
            r.runs.extend(one.runs);
            for w in one.whole {
                if !r.whole.contains(&w) {
                    r.whole.push(w);
                }
            }
        }
        r.whole.sort_by_key(|w| std::cmp::Reverse(w.len()));
        r
    }

    /// `message` without the values.
    pub(super) fn redact(&self, message: &str) -> String {
        let mut out = message.to_string();
        for w in &self.whole {
            if out.contains(w.as_str()) {
                out = out.replace(w.as_str(), "<redacted>");
            }
        }
        if self.runs.is_empty() || out.len() < RUN {
            return out;
        }
        let bytes = out.as_bytes();
        let mut hidden = vec![false; bytes.len()];
        for (i, w) in windows(bytes).enumerate() {
            if self.runs.contains(&w) {
                hidden[i..i + RUN].iter_mut().for_each(|h| *h = true);
            }
        }
        if !hidden.contains(&true) {
            return out;
        }
        let mut kept = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if hidden[i] {
                kept.extend_from_slice(b"<redacted>");
                while i < bytes.len() && hidden[i] {
                    i += 1;
                }
            } else {
                kept.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8_lossy(&kept).into_owned()
    }

    /// `e` with its message redacted.
    pub(super) fn error(&self, e: PollError) -> PollError {
        match e {
            PollError::Access(m) => PollError::Access(self.redact(&m)),
            PollError::Forbidden { status, what, message } => {
                PollError::Forbidden { status, what, message: self.redact(&message) }
            }
            PollError::Http { status, what, message } => {
                PollError::Http { status, what, message: self.redact(&message) }
            }
            PollError::Decode { what, message } => PollError::Decode { what, message: self.redact(&message) },
            PollError::Transport { what, message } => PollError::Transport { what, message: self.redact(&message) },
            other => other,
        }
    }
}

/// The keys a kubeconfig has (shown in a parse error's position: they are not secret).
const KUBECONFIG_KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "preferences",
    "clusters",
    "cluster",
    "contexts",
    "context",
    "users",
    "user",
    "name",
    "current-context",
    "server",
    "certificate-authority",
    "certificate-authority-data",
    "insecure-skip-tls-verify",
    "tls-server-name",
    "proxy-url",
    "disable-compression",
    "extensions",
    "extension",
    "namespace",
    "token",
    "tokenFile",
    "username",
    "password",
    "client-certificate",
    "client-certificate-data",
    "client-key",
    "client-key-data",
    "as",
    "as-uid",
    "as-groups",
    "as-user-extra",
    "auth-provider",
    "config",
    "exec",
    "command",
    "args",
    "env",
    "value",
    "installHint",
    "interactiveMode",
    "provideClusterInfo",
];

/// A kubeconfig that cannot be loaded, said without its content: a YAML error gives its line,
/// column and (when it is one of a kubeconfig's keys) the key on that line, never the text
/// around it (it would quote tokens and keys); a base64 error names the field, not the byte.
pub(super) fn kubeconfig_error(path: &Path, text: Option<&str>, e: &kube::config::KubeconfigError) -> String {
    use kube::config::{KubeconfigError as K, LoadDataError as L};
    let at = format!("kubeconfig {}", path.display());
    let data = |what: &str, e: &L| match e {
        L::DecodeBase64(_) => format!("{at}: {what}-data is not valid base64"),
        other => format!("{at}: {what}: {}", chain(other)),
    };
    match e {
        K::Parse(p) => {
            let Some(loc) = p.location() else {
                return format!("{at}: not a valid kubeconfig (not YAML; the file's content is not shown)");
            };
            let key = text
                .and_then(|t| t.lines().nth((loc.line() as usize).saturating_sub(1)))
                .and_then(|l| l.trim_start().trim_start_matches("- ").split_once(':'))
                .map(|(k, _)| k.trim())
                .filter(|k| KUBECONFIG_KEYS.contains(k))
                .map(|k| format!(", at key {k}"))
                .unwrap_or_default();
            format!(
                "{at}: not a valid kubeconfig: YAML error at line {}, column {}{key} (a misplaced indentation, a \
                 tab, a duplicate key or a value of the wrong type; the file's content is not shown)",
                loc.line(),
                loc.column()
            )
        }
        K::LoadCertificateAuthority(e) => data("certificate-authority", e),
        K::LoadClientCertificate(e) => data("client-certificate", e),
        K::LoadClientKey(e) => data("client-key", e),
        other => format!("{at}: {}", chain(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_with_control_characters_are_errors_naming_the_field() {
        for bad in ["abc\u{1}def", "a\0b", "a\nb", "a\rb", "a\u{7f}b"] {
            let e = bearer(bad, "user \"u\": token").expect_err(bad);
            let m = e.to_string();
            assert!(m.contains("user \"u\": token") && !m.contains(bad), "{m}");
        }
        assert_eq!(bearer("abc.def", "t").expect("valid").to_str().ok(), Some("Bearer abc.def"));
        assert_eq!(basic("u", "p\n").to_str().ok(), Some("Basic dTpwCg=="));
    }

    #[test]
    fn the_redactor_removes_values_whole_and_in_part() {
        let auth = kube::config::AuthInfo {
            token: Some("CANARY-token-0123456789abcdef".to_string().into()),
            ..Default::default()
        };
        let r = Redactor::of(&auth, &["http://user:pw-CANARY-proxy@proxy:3128"]);
        let m = r.redact("a CANARY-token-0123456789abcdef b, line: token: CANARY-token-0123456 c");
        assert!(!m.contains("CANARY-token"), "{m}");
        assert!(m.starts_with("a <redacted> b"), "{m}");
        let m = r.redact("proxy user:pw-CANARY-proxy@proxy refused");
        assert!(!m.contains("CANARY"), "{m}");
        assert_eq!(r.redact("nothing secret here, not at all"), "nothing secret here, not at all");
    }

    #[test]
    fn token_files_are_trimmed_and_never_shown() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let p = dir.path().join("token");
        let _ = std::fs::write(&p, "  abc.def\r\n");
        let t = TokenFile::open(&p).expect("token");
        assert_eq!(t.header().to_str().ok(), Some("Bearer abc.def"));
        assert!(!format!("{t:?}").contains("abc"));
        let _ = std::fs::write(&p, "\n\n");
        let e = TokenFile::open(&p).expect_err("empty");
        assert!(e.to_string().contains("is empty"), "{e}");
        let _ = std::fs::write(&p, "a\nb");
        assert!(TokenFile::open(&p).is_err(), "a newline inside the token is not a header value");
        let _ = std::fs::write(&p, b"ab\xffcd");
        let e = TokenFile::open(&p).expect_err("not UTF-8");
        assert!(!e.to_string().contains("ab"), "{e}");
    }

    #[test]
    fn base64_round_trips() {
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            assert_eq!(base64_decode(&base64_encode(s.as_bytes())).as_deref(), Some(s.as_bytes()));
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
    }
}
