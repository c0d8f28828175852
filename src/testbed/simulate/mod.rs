//! `fedsched simulate`: a fleet of simulated member clusters that speaks the Kubernetes API,
//! so that the demo, the tests and the benchmarks go through the production poller.
//!
//! - [`fleet`]: fleet directories (Cluster object + nodes and pods as `kubectl get nodes,pods
//!   -A -o yaml` prints them) and the synthetic fleet generator.
//! - [`server`]: the API shapes (`/version`, `/api`, `/api/v1/nodes`, pods, pagination,
//!   selectors), bearer tokens, faults switchable at run time through admin endpoints.
//! - [`apply`]: the GitOps agent: pods for the workloads in each cluster's output directory,
//!   bound first-fit or left Unschedulable, Ready at once or after `--ready-after`; nodes
//!   NotReady and shrinking (admin endpoints in [`server`]).
//! - [`lease`]: `coordination.k8s.io/v1` Leases (get, create, replace with resourceVersion
//!   conflicts) for leader election, with a fault of their own.
//! - [`watch`]: resource versions, the window of watch events every change records, watch
//!   streams with bookmarks and 410 Gone, and the churn generator (`--churn`).
//!
//! On start it writes, under `FLEET/.simulator/`: `ca.crt` (a CA made for this run; the
//! server certificate is for `127.0.0.1` and `localhost`), `tokens/<cluster>` (kept across
//! runs), `admin-token`, `kubeconfig` (a context per cluster, for kubectl and client
//! libraries), `clusters/<cluster>.yaml` (Cluster objects with `spec.apiEndpoint` for a policy
//! repository), `fedsched.toml` (`[clusters.<name>]` access entries) and `endpoints.json`.
//! It listens on loopback addresses only.

pub mod apply;
pub mod fleet;
pub mod lease;
pub mod repo;
pub mod server;
pub mod watch;

use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use server::{Served, State};

/// Errors of the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A fleet directory is not usable.
    #[error("{}: {message}", path.display())]
    Fleet { path: PathBuf, message: String },
    /// Certificates or TLS setup failed.
    #[error("tls: {0}")]
    Tls(String),
    /// The listen address is not a loopback address.
    #[error("{0}: the simulator listens on loopback addresses only")]
    NotLoopback(SocketAddr),
    /// Binding failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// What `fedsched simulate` serves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The fleet directory.
    pub fleet: PathBuf,
    /// HTTPS address.
    pub listen: SocketAddr,
    /// Optional plain HTTP address.
    pub listen_http: Option<SocketAddr>,
    /// The output directory to apply (`OUT/<cluster>/…`).
    pub apply: Option<PathBuf>,
    /// How often the output directory is checked for changes.
    pub apply_interval: Duration,
    /// Pods modified per cluster per second (0: none), for watch benchmarks.
    pub churn: f64,
    /// Watch events each cluster retains; a watch from an older version gets 410.
    pub watch_window: usize,
    /// A pod the agent binds turns Ready this long after it starts (0: at once).
    pub ready_after: Duration,
    /// Offer HTTP/1.1 only over HTTPS (otherwise HTTP/2 first, then HTTP/1.1, by ALPN).
    pub http1_only: bool,
    /// HTTP/2 streams one connection may carry at once (None: hyper's default).
    pub max_concurrent_streams: Option<u32>,
}

/// The addresses actually bound (port 0 resolved).
#[derive(Debug, Clone)]
pub struct Bound {
    /// HTTPS.
    pub https: SocketAddr,
    /// HTTP, when asked for.
    pub http: Option<SocketAddr>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SimError + '_ {
    move |source| SimError::Io { path: path.to_path_buf(), source }
}

fn random_token() -> Result<String, SimError> {
    let path = Path::new("/dev/urandom");
    let mut buf = [0u8; 24];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut buf)).map_err(io(path))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn write_private(path: &Path, content: &str) -> Result<(), SimError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path).map_err(io(path))?;
    std::io::Write::write_all(&mut f, content.as_bytes()).map_err(io(path))
}

/// A token kept in `path` (created on first use).
fn token_at(path: &Path) -> Result<String, SimError> {
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
        _ => {
            let t = random_token()?;
            write_private(path, &t)?;
            Ok(t)
        }
    }
}

/// A throwaway CA and a server certificate it signed (for `localhost`, `127.0.0.1`, `::1`).
pub(crate) struct Certs {
    pub(crate) ca_pem: String,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

/// Makes a [`Certs`].
pub(crate) fn make_certs() -> Result<Certs, SimError> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let tls = |e: rcgen::Error| SimError::Tls(e.to_string());
    let ca_key = KeyPair::generate().map_err(tls)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(tls)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "fedsched simulator CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca_cert = ca.self_signed(&ca_key).map_err(tls)?;
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().map_err(tls)?;
    let mut params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()])
        .map_err(tls)?;
    params.distinguished_name.push(DnType::CommonName, "fedsched-simulator");
    let cert = params.signed_by(&key, &issuer).map_err(tls)?;
    Ok(Certs { ca_pem: ca_cert.pem(), cert_der: cert.der().to_vec(), key_der: key.serialize_der() })
}

/// A TLS acceptor with the server certificate of `certs`, offering HTTP/2 and HTTP/1.1 (or
/// HTTP/1.1 only) by ALPN.
pub(crate) fn tls_acceptor(certs: &Certs, http1_only: bool) -> Result<tokio_rustls::TlsAcceptor, SimError> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SimError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(certs.cert_der.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certs.key_der.clone())),
        )
        .map_err(|e| SimError::Tls(e.to_string()))?;
    cfg.alpn_protocols = match http1_only {
        true => vec![b"http/1.1".to_vec()],
        false => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
}

async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, SimError> {
    if !addr.ip().is_loopback() {
        return Err(SimError::NotLoopback(addr));
    }
    tokio::net::TcpListener::bind(addr).await.map_err(|source| SimError::Bind { addr, source })
}

/// Loads the fleet, writes the client files, binds, and serves until the future is dropped.
pub async fn serve(opts: Options) -> Result<(), SimError> {
    let fleet = fleet::load(&opts.fleet)?;
    let meta = opts.fleet.join(".simulator");
    let _ = std::fs::remove_file(meta.join("endpoints.json"));
    std::fs::create_dir_all(meta.join("tokens")).map_err(io(&meta))?;
    std::fs::create_dir_all(meta.join("clusters")).map_err(io(&meta))?;
    let admin_token = token_at(&meta.join("admin-token"))?;
    let certs = make_certs()?;
    let acceptor = tls_acceptor(&certs, opts.http1_only)?;
    let https = bind(opts.listen).await?;
    let https_addr = https.local_addr().map_err(|source| SimError::Bind { addr: opts.listen, source })?;
    let http = match opts.listen_http {
        Some(a) => Some(bind(a).await?),
        None => None,
    };
    let http_addr = match &http {
        Some(l) => Some(l.local_addr().map_err(|source| SimError::Bind { addr: https_addr, source })?),
        None => None,
    };

    let events = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut served = BTreeMap::new();
    for c in fleet {
        let token = token_at(&meta.join("tokens").join(&c.name))?;
        let log = watch::WatchLog::new(opts.watch_window, Arc::clone(&events));
        served.insert(c.name.clone(), Served::new(c, token, log));
    }
    write_client_files(&meta, &served, https_addr, http_addr, &certs.ca_pem)?;

    let (apply_tx, apply_rx) = tokio::sync::mpsc::channel(1);
    let state = Arc::new(State {
        clusters: RwLock::new(served),
        admin_token,
        requests: RwLock::new(BTreeMap::new()),
        user_agents: RwLock::default(),
        discovery_requests: RwLock::default(),
        object_reads: RwLock::default(),
        agent_reads: RwLock::default(),
        other_reads: RwLock::default(),
        get_bytes: RwLock::default(),
        watch_bytes: Arc::default(),
        apply_now: opts.apply.as_ref().map(|_| apply_tx),
        events,
        open_watches: Arc::new(std::sync::atomic::AtomicU64::new(0)),
        connections: Default::default(),
        max_concurrent_streams: opts.max_concurrent_streams,
        agent: apply::Agent { ready_after: opts.ready_after, ..Default::default() },
        leases: Default::default(),
    });
    if opts.churn > 0.0 {
        tokio::spawn(watch::churn(Arc::clone(&state), opts.churn));
    }
    if let Some(out) = opts.apply.clone() {
        tokio::spawn(agent(Arc::clone(&state), out, opts.apply_interval, apply_rx));
    }
    tracing::info!(https = %https_addr, http = ?http_addr, fleet = %opts.fleet.display(), "simulator serving");
    let server_name = https_addr.to_string();
    let tls_loop = accept_loop(https, Some(acceptor), Arc::clone(&state), server_name.clone());
    match http {
        Some(h) => {
            let name = http_addr.map(|a| a.to_string()).unwrap_or_default();
            tokio::join!(tls_loop, accept_loop(h, None, state, name));
        }
        None => tls_loop.await,
    }
    Ok(())
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    state: Arc<State>,
    server_name: String,
) {
    loop {
        let stream = match listener.accept().await {
            // Only HTTPS connections freeze (the admin endpoints are on plain HTTP).
            Ok((s, _)) => Frozen::new(s, &state.connections, tls.is_some()),
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let state = Arc::clone(&state);
        let tls = tls.clone();
        let name = server_name.clone();
        tokio::spawn(async move {
            let counts = Arc::clone(&state.connections);
            let max_streams = state.max_concurrent_streams;
            let svc = hyper::service::service_fn(move |req| server::handle(Arc::clone(&state), req, name.clone()));
            // HTTP/1.1, or HTTP/2 (told by its preface: after ALPN's `h2` over TLS).
            let mut builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            if let Some(n) = max_streams {
                builder.http2().max_concurrent_streams(n);
            }
            let result = match tls {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(s) => {
                        let h2 = s.get_ref().1.alpn_protocol() == Some(b"h2");
                        let _open = counts.opened(h2);
                        let mut goaway = counts.goaway();
                        let mut conn = std::pin::pin!(builder.serve_connection(TokioIo::new(s), svc));
                        tokio::select! {
                            result = conn.as_mut() => result,
                            // GOAWAY (HTTP/2) or `Connection: close` (HTTP/1.1): the streams
                            // open go on to their end; no new one is taken.
                            _ = goaway.changed() => {
                                conn.as_mut().graceful_shutdown();
                                conn.await
                            }
                        }
                    }
                    Err(error) => {
                        tracing::debug!(%error, "TLS handshake failed");
                        return;
                    }
                },
                None => builder.serve_connection(TokioIo::new(stream), svc).await,
            };
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
}

/// A connection that stops reading and writing for good once
/// [`server::Connections::frozen`] says so (`POST /admin/connections/freeze`): its reads and
/// writes stay pending, and nothing wakes them.
struct Frozen<S> {
    inner: S,
    serial: u64,
    connections: Arc<server::Connections>,
}

impl<S> Frozen<S> {
    /// A connection that freezes with the others when `freezes`.
    fn new(inner: S, connections: &Arc<server::Connections>, freezes: bool) -> Self {
        let serial = match freezes {
            true => connections.serial(),
            false => u64::MAX,
        };
        Frozen { inner, serial, connections: Arc::clone(connections) }
    }

    fn frozen(&self) -> bool {
        self.connections.frozen(self.serial)
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Frozen<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.frozen() {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Frozen<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.frozen() {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.frozen() {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.frozen() {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The GitOps agent: applies `OUT/<cluster>` whenever its files change (and on request), and
/// turns pods Ready once their delay passed ([`apply::promote`]).
async fn agent(state: Arc<State>, out: PathBuf, every: Duration, mut now: tokio::sync::mpsc::Receiver<()>) {
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    // With a Ready delay, look often enough that pods turn Ready close to on time.
    let every = match state.agent.ready_after.is_zero() {
        true => every,
        false => every.min(Duration::from_millis(200)),
    };
    loop {
        let names: Vec<String> = state.clusters.read().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect();
        for name in names {
            let now_ms = crate::util::clock::now_ms();
            if !state.agent.ready_after.is_zero() {
                let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
                if let Some(c) = clusters.get_mut(&name) {
                    let before = c.fleet.pods.clone();
                    if apply::promote(&mut c.fleet, now_ms) > 0 {
                        record_changes(&mut c.log, watch::Resource::Pods, &before, &mut c.fleet.pods);
                    }
                }
            }
            let dir = out.join(&name);
            let print = fingerprint(&dir);
            if seen.get(&name) == Some(&print) {
                continue;
            }
            let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
            let Some(c) = clusters.get_mut(&name) else { continue };
            // A paused GitOps agent sees the new revision and applies nothing.
            c.revisions.1 = apply::revision(print);
            if c.gitops.as_ref().is_some_and(|a| a.paused) {
                continue;
            }
            let before = c.fleet.pods.clone();
            match apply::apply(&mut c.fleet, &dir, &state.agent, now_ms) {
                Ok(r) => {
                    c.revisions.0 = c.revisions.1.clone();
                    let marked = apply::mark_bad_images(&mut c.fleet, &c.bad_images, now_ms);
                    if r.changed() || marked > 0 {
                        record_changes(&mut c.log, watch::Resource::Pods, &before, &mut c.fleet.pods);
                        tracing::info!(cluster = %name, created = r.created, deleted = r.deleted, bound = r.bound, unschedulable = r.unschedulable, "applied");
                    }
                    seen.insert(name, print);
                }
                Err(error) => tracing::warn!(cluster = %name, %error, "apply failed"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            Some(()) = now.recv() => seen.clear(),
        }
    }
}

/// Records a watch event for every pod (or node) that was added, changed or removed.
pub(crate) fn record_changes(
    log: &mut watch::WatchLog,
    resource: watch::Resource,
    before: &[Value],
    after: &mut [Value],
) {
    fn key(v: &Value) -> (String, String) {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
        (s("/metadata/namespace"), s("/metadata/name"))
    }
    let old: BTreeMap<(String, String), &Value> = before.iter().map(|v| (key(v), v)).collect();
    let mut seen = std::collections::BTreeSet::new();
    for pod in after.iter_mut() {
        let k = key(pod);
        match old.get(&k) {
            Some(o) if *o == pod => {}
            Some(_) => log.record(resource, "MODIFIED", pod),
            None => log.record(resource, "ADDED", pod),
        }
        seen.insert(k);
    }
    for (k, o) in old {
        if !seen.contains(&k) {
            log.record(resource, "DELETED", &mut o.clone());
        }
    }
}

/// Names, sizes and modification times of every file below `dir`, hashed.
fn fingerprint(dir: &Path) -> u64 {
    fn walk(dir: &Path, acc: &mut String) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                walk(&p, acc);
            } else if let Ok(m) = e.metadata() {
                let t =
                    m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).unwrap_or_default();
                acc.push_str(&format!("{}:{}:{}\n", p.display(), m.len(), t.as_nanos()));
            }
        }
    }
    let mut acc = String::new();
    walk(dir, &mut acc);
    crate::util::hash::fnv1a64(acc.as_bytes())
}

fn write_client_files(
    meta: &Path,
    served: &BTreeMap<String, Served>,
    https: SocketAddr,
    http: Option<SocketAddr>,
    ca_pem: &str,
) -> Result<(), SimError> {
    let ca_path = meta.join("ca.crt");
    std::fs::write(&ca_path, ca_pem).map_err(io(&ca_path))?;
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let ca_abs = abs(&ca_path);
    let mut clusters = Vec::new();
    let mut users = Vec::new();
    let mut contexts = Vec::new();
    let mut toml = String::from("# Written by `fedsched simulate`: live access to the simulated fleet.\n");
    let mut endpoints = serde_json::Map::new();
    for (name, c) in served {
        let url = format!("https://{https}/clusters/{name}");
        clusters.push(
            json!({"name": name, "cluster": {"server": url, "certificate-authority": ca_abs.display().to_string()}}),
        );
        users.push(json!({"name": name, "user": {"token": c.token}}));
        contexts.push(json!({"name": name, "context": {"cluster": name, "user": name}}));
        if let Some(h) = http {
            let hn = format!("{name}-http");
            clusters.push(json!({"name": hn, "cluster": {"server": format!("http://{h}/clusters/{name}")}}));
            contexts.push(json!({"name": hn, "context": {"cluster": hn, "user": name}}));
        }
        let token_path = abs(&meta.join("tokens").join(name));
        toml.push_str(&format!(
            "\n[clusters.{name:?}]\ntoken_file = {:?}\nca_file = {:?}\n",
            token_path.display().to_string(),
            ca_abs.display().to_string()
        ));
        let mut cluster = c.fleet.cluster.clone();
        if let Some(o) = cluster.as_object_mut() {
            // The status goes (a live member's figures come from its poll), but for the APIs
            // it serves: a Cluster object without them is warned about at every load.
            let apis = o.remove("status").and_then(|mut st| st.get_mut("apiEnablements").map(Value::take));
            if let Some(apis) = apis {
                o.insert("status".into(), json!({"apiEnablements": apis}));
            }
            if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                for k in ["resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"] {
                    m.remove(k);
                }
            }
        }
        cluster["spec"]["apiEndpoint"] = json!(url);
        cluster["spec"]["syncMode"] = cluster["spec"].get("syncMode").cloned().unwrap_or_else(|| json!("Push"));
        let cpath = meta.join("clusters").join(format!("{name}.yaml"));
        std::fs::write(&cpath, crate::render::yaml::to_yaml(&cluster)).map_err(io(&cpath))?;
        endpoints.insert(name.clone(), json!(url));
    }
    let first = served.keys().next().cloned().unwrap_or_default();
    let kubeconfig = json!({"apiVersion": "v1", "kind": "Config", "current-context": first,
        "clusters": clusters, "users": users, "contexts": contexts, "preferences": {}});
    write_private(&meta.join("kubeconfig"), &crate::render::yaml::to_yaml(&kubeconfig))?;
    let tpath = meta.join("fedsched.toml");
    std::fs::write(&tpath, toml).map_err(io(&tpath))?;
    let e = json!({"https": https.to_string(), "http": http.map(|h| h.to_string()), "clusters": endpoints,
        "caFile": ca_abs.display().to_string()});
    let epath = meta.join("endpoints.json");
    // Written last: its presence means the server is about to accept connections.
    std::fs::write(&epath, serde_json::to_vec_pretty(&e).unwrap_or_default()).map_err(io(&epath))?;
    Ok(())
}
