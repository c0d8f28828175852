//! Reaching a member: the targets (`[clusters.<name>]` joined with the Cluster object), the
//! kube client of each (kubeconfig, or `spec.apiEndpoint` + token file + CA), and how an
//! endpoint is shown (never with user info).
//!
//! Every request carries `User-Agent: fedsched/<version>`. Credentials (tokens, token files,
//! basic auth, exec plugins, auth providers) are taken out of the kubeconfig before kube sees it
//! and put on each request by [`super::credentials`]; a kubeconfig that cannot be loaded is
//! reported without its content, and every message of a build goes through the cluster's
//! [`Redactor`]. An X.509 v1 client certificate, which rustls cannot use, is named as such
//! instead of as a bad private key.

use std::path::PathBuf;

use super::*;

/// One member to poll: its name and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Cluster name (the Cluster object's and the output directory's).
    pub name: String,
    /// `[clusters.<name>]` from the configuration.
    pub access: ClusterAccess,
    /// The Cluster object's `spec.apiEndpoint` (used without a kubeconfig).
    pub api_endpoint: Option<String>,
    /// The Cluster object's `spec.insecureSkipTLSVerification`.
    pub insecure_skip_tls_verification: bool,
    /// The Cluster object's `spec.proxyURL`.
    pub proxy_url: Option<String>,
}

impl Target {
    /// The target of a Cluster object with configured access.
    pub fn new(c: &ClusterObject, access: &ClusterAccess) -> Target {
        Target {
            name: c.meta.name.clone(),
            access: access.clone(),
            api_endpoint: c.spec.api_endpoint.clone(),
            insecure_skip_tls_verification: c.spec.insecure_skip_tls_verification,
            proxy_url: c.spec.proxy_url.clone(),
        }
    }
}

/// The live targets: every `[clusters.<name>]` whose Cluster object is in the repository.
/// Returns the targets and the names configured without a Cluster object.
pub fn targets(cfg: &Config, set: &PolicySet) -> (Vec<Target>, Vec<String>) {
    let mut out = Vec::new();
    let mut unknown = Vec::new();
    for (name, access) in cfg.clusters.iter().filter(|(_, a)| a.is_live()) {
        match set.clusters.iter().find(|c| &c.meta.name == name) {
            Some(c) => out.push(Target::new(c, access)),
            None => unknown.push(name.clone()),
        }
    }
    (out, unknown)
}

pub(super) struct Built {
    pub(super) target: Target,
    pub(super) client: kube::Client,
    /// The client of watch streams: no read timeout (a watch is idle between events); the
    /// watcher bounds the wait for headers and for the next event itself.
    pub(super) watch_client: Option<kube::Client>,
    /// When `watch_client`'s connection last read anything ([`Wire`]).
    pub(super) wire: Arc<Wire>,
    /// What `client` was built from (a watched cluster's list client is rebuilt after its
    /// list, so that the pooled connection and its large read buffer are let go).
    pub(super) config: Arc<kube::Config>,
    pub(super) endpoint: String,
    /// The target's credentials, when it has some (put on every request).
    pub(super) credentials: Option<Arc<Credentials>>,
    /// Removes the target's credential values from messages.
    pub(super) redactor: Arc<Redactor>,
    /// Until when the client certificate an exec plugin issued is valid (the clients are built
    /// again after it).
    pub(super) valid_until: Option<std::time::SystemTime>,
}

impl Built {
    /// A fresh client with the same configuration (and credentials) as `client`.
    pub(super) fn rebuild(&self) -> Result<kube::Client, PollError> {
        client_of((*self.config).clone(), self.credentials.clone())
    }

    /// Whether the client certificate an exec plugin issued has expired (or expires within
    /// 10 s).
    pub(super) fn expired(&self) -> bool {
        self.valid_until.is_some_and(|t| std::time::SystemTime::now() + Duration::from_secs(10) >= t)
    }
}

/// The `User-Agent` of every request to a member's API server.
pub const USER_AGENT: &str = concat!("fedsched/", env!("CARGO_PKG_VERSION"));

/// The kube client of `cfg`, with the credentials' `Authorization` header on every request.
pub(super) fn client_of(cfg: kube::Config, credentials: Option<Arc<Credentials>>) -> Result<kube::Client, PollError> {
    let auth = cfg.auth_info.clone();
    let builder = kube::client::ClientBuilder::try_from(cfg).map_err(|e| client_error(&auth, "client", &e))?;
    Ok(builder.with_layer(&AuthorizeLayer(credentials)).build())
}

/// The client of a member's watch streams: one connection carries both watches (nodes and
/// pods) when the API server speaks HTTP/2 (offered by ALPN, as every kube-apiserver does);
/// HTTP/1.1 otherwise, one connection per open stream. An HTTP/2 connection silent for
/// `poll.watch_ping_interval` is pinged (client-go's `ReadIdleTimeout`, 30 s) and closed when
/// the ping is not answered within `poll.read_timeout`, so a peer that hangs with the
/// connection open breaks both streams at once instead of leaving them waiting.
///
/// Behind a proxy (`spec.proxyURL`) the member's client is kube's own, HTTP/1.1 only: kube's
/// client handles proxy tunnels, which this stack does not repeat.
///
/// Every read of its connections stamps `wire`: with the pings, a connection that answers is
/// read at least every `watch_ping_interval`, so a stream that breaks after a longer silence
/// broke because the ping went unanswered ([`Wire::quiet_for`]).
fn watch_client_of(
    cfg: kube::Config,
    credentials: Option<Arc<Credentials>>,
    poll: &PollSection,
    wire: &Arc<Wire>,
) -> Result<kube::Client, PollError> {
    use kube::client::ConfigExt;
    use tower::ServiceBuilder;
    if !multiplexes(&cfg) {
        return client_of(cfg, credentials);
    }
    let failed = |what: &str, e: &dyn std::error::Error| client_error(&cfg.auth_info, what, e);
    let tls = cfg.rustls_client_config().map_err(|e| failed("watch client: TLS", &e))?;
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http();
    let https = match &cfg.tls_server_name {
        Some(name) => {
            let name = rustls::pki_types::ServerName::try_from(name.clone())
                .map_err(|e| PollError::Access(format!("tls-server-name {name:?}: {e}")))?;
            https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => https,
    };
    let mut connector = hyper_timeout::TimeoutConnector::new(https.enable_all_versions().wrap_connector(tcp));
    connector.set_connect_timeout(cfg.connect_timeout);
    connector.set_write_timeout(cfg.write_timeout);
    connector.set_read_timeout(cfg.read_timeout);
    let connector = Stamping { inner: connector, wire: Arc::clone(wire) };
    let ping = Some(poll.watch_ping_interval).filter(|d| !d.is_zero());
    let http = hyper_util::client::legacy::Builder::new(hyper_util::rt::TokioExecutor::new())
        .timer(hyper_util::rt::TokioTimer::new())
        .http2_keep_alive_interval(ping)
        .http2_keep_alive_timeout(poll.read_timeout)
        .http2_keep_alive_while_idle(true)
        .build::<_, kube::client::Body>(connector);
    let service = ServiceBuilder::new()
        .layer(AuthorizeLayer(credentials))
        .layer(cfg.base_uri_layer())
        .layer(cfg.extra_headers_layer().map_err(|e| failed("watch client: headers", &e))?)
        .map_err(tower::BoxError::from)
        .service(http);
    Ok(kube::Client::new(service, cfg.default_namespace))
}

/// When a member's watch connection last read anything from the server (an event, a bookmark,
/// the answer to a ping, a TLS record): what tells a server that stopped answering from a
/// connection that was closed.
#[derive(Debug)]
pub(super) struct Wire {
    base: Instant,
    /// Milliseconds since `base` of the last read, plus one (0: never read).
    read: std::sync::atomic::AtomicU64,
}

impl Default for Wire {
    fn default() -> Self {
        Wire { base: Instant::now(), read: std::sync::atomic::AtomicU64::new(0) }
    }
}

impl Wire {
    fn stamp(&self) {
        let ms = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1;
        self.read.fetch_max(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// How long nothing was read (`None`: never, or not a connection this stamps).
    pub(super) fn quiet_for(&self) -> Option<Duration> {
        match self.read.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            ms => Some(self.base.elapsed().saturating_sub(Duration::from_millis(ms - 1))),
        }
    }
}

/// A connector whose connections stamp a [`Wire`] at every read.
#[derive(Clone)]
struct Stamping<C> {
    inner: C,
    wire: Arc<Wire>,
}

impl<C> tower::Service<http::Uri> for Stamping<C>
where
    C: tower::Service<http::Uri>,
    C::Future: Send + 'static,
{
    type Response = Stamped<C::Response>;
    type Error = C::Error;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let wire = Arc::clone(&self.wire);
        let connecting = self.inner.call(uri);
        Box::pin(async move { connecting.await.map(|io| Stamped { io, wire }) })
    }
}

/// A connection of [`Stamping`].
struct Stamped<S> {
    io: S,
    wire: Arc<Wire>,
}

impl<S: hyper::rt::Read + Unpin> hyper::rt::Read for Stamped<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let read = std::pin::Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(read, std::task::Poll::Ready(Ok(()))) {
            self.wire.stamp();
        }
        read
    }
}

impl<S: hyper::rt::Write + Unpin> hyper::rt::Write for Stamped<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

impl<S: hyper_util::client::legacy::connect::Connection> hyper_util::client::legacy::connect::Connection
    for Stamped<S>
{
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        self.io.connected()
    }
}

/// Whether [`watch_client_of`] builds its own client for `cfg` (one that may carry both
/// watches on one HTTP/2 connection), not kube's (HTTP/1.1).
pub(super) fn multiplexes(cfg: &kube::Config) -> bool {
    cfg.proxy_url.is_none()
}

/// The error of a client that cannot be built for `what`: the client certificate's problem
/// when it has one ([`client_cert_problem`], read only now), else `e`.
fn client_error(auth: &kube::config::AuthInfo, what: &str, e: &dyn std::error::Error) -> PollError {
    match client_cert_problem(auth) {
        Some(p) => PollError::Access(format!("client certificate: {p}")),
        None => PollError::Access(format!("{what}: {}", chain(e))),
    }
}

/// Why the client certificate of `auth` cannot be used, when it is an X.509 v1 certificate
/// (rustls and webpki accept only v3; kube reports that as an invalid private key).
fn client_cert_problem(auth: &kube::config::AuthInfo) -> Option<String> {
    let (pem, from) = match (&auth.client_certificate_data, &auth.client_certificate) {
        (Some(data), _) => (base64_decode(data)?, "client-certificate-data".to_string()),
        (None, Some(path)) => (std::fs::read(path).ok()?, path.clone()),
        (None, None) => return None,
    };
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let first = CertificateDer::pem_slice_iter(&pem).next()?.ok()?;
    is_x509_v1(first.as_ref()).then(|| {
        format!(
            "{from} is an X.509 v1 certificate, which fedsched's TLS library does not accept; issue a v3 \
             certificate (openssl x509 -req ... -extfile with basicConstraints/keyUsage, or cfssl)"
        )
    })
}

/// Whether a DER certificate has no version field (`[0] EXPLICIT Version` absent from the
/// TBSCertificate): an X.509 v1 certificate. Malformed input is not v1.
pub(super) fn is_x509_v1(der: &[u8]) -> bool {
    // SEQUENCE header: tag, then a short or long length.
    fn content(der: &[u8]) -> Option<&[u8]> {
        let (&tag, rest) = der.split_first()?;
        if tag != 0x30 {
            return None;
        }
        let (&len, rest) = rest.split_first()?;
        if len < 0x80 {
            return rest.get(..usize::from(len));
        }
        let n = usize::from(len & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let size = rest.get(..n)?.iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        rest.get(n..n.checked_add(size)?)
    }
    content(der).and_then(content).and_then(|tbs| tbs.first()).is_some_and(|&tag| tag != 0xa0)
}

/// Standard base64 (padding optional, whitespace ignored); None when not base64.
pub(super) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in text.bytes().filter(|b| !b.is_ascii_whitespace() && *b != b'=') {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// `https://host:port/path` of a target (user info removed), or `kubeconfig:<path>`.
pub fn describe_endpoint(t: &Target) -> String {
    match (&t.access.kubeconfig, &t.api_endpoint) {
        (Some(k), _) => format!("kubeconfig:{}", k.display()),
        (None, Some(e)) => strip_userinfo(e),
        (None, None) => "(no endpoint)".into(),
    }
}

pub(super) fn strip_userinfo(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

pub(super) async fn build(t: &Target, poll: &PollSection) -> Result<Built, PollError> {
    let (loaded, redactor) = match &t.access.kubeconfig {
        Some(path) => {
            let kc = read_kubeconfig(path)?;
            let redactor = Redactor::of_kubeconfig(&kc);
            (load_kubeconfig(path, kc, t.access.context.clone()).await, redactor)
        }
        None => {
            let urls: Vec<&str> = t.api_endpoint.iter().chain(&t.proxy_url).map(String::as_str).collect();
            (endpoint_config(t), Redactor::of(&kube::config::AuthInfo::default(), &urls))
        }
    };
    let redactor = Arc::new(redactor);
    match configure(t, loaded, poll, &redactor).await {
        Ok(b) => Ok(b),
        Err(e) => Err(redactor.error(e)),
    }
}

/// The largest kubeconfig read (a kubeconfig of thousands of clusters is a few MiB).
const MAX_KUBECONFIG_BYTES: u64 = 16 << 20;

/// Reads and parses a kubeconfig; errors never quote it ([`kubeconfig_error`]).
fn read_kubeconfig(path: &Path) -> Result<kube::config::Kubeconfig, PollError> {
    let access = |m: String| PollError::Access(m);
    let size = std::fs::metadata(path).map_err(|e| access(format!("kubeconfig {}: {e}", path.display())))?.len();
    if size > MAX_KUBECONFIG_BYTES {
        return Err(access(format!("kubeconfig {}: larger than {MAX_KUBECONFIG_BYTES} bytes", path.display())));
    }
    // kube decodes a file that starts with a UTF-16 byte-order mark two bytes at a time and
    // panics on an odd count: refuse such a file here (found by `fedsched fuzz`, seed 2). Its
    // first two bytes are enough (kube reads the whole file next).
    let mut head = Vec::with_capacity(2);
    std::fs::File::open(path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 2), &mut head))
        .map_err(|e| access(format!("kubeconfig {}: {e}", path.display())))?;
    if matches!(head[..], [0xFF, 0xFE] | [0xFE, 0xFF]) && size % 2 == 1 {
        return Err(access(format!(
            "kubeconfig {}: starts with a UTF-16 byte-order mark but has an odd number of bytes",
            path.display()
        )));
    }
    kube::config::Kubeconfig::read_from(path).map_err(|e| {
        let text = std::fs::read_to_string(path).ok();
        access(kubeconfig_error(path, text.as_deref(), &e))
    })
}

/// What a target's client is built from: kube's configuration (credentials still in it), the
/// endpoint as shown, the kubeconfig user (for messages) and the kubeconfig's directory.
struct Loaded {
    cfg: kube::Config,
    endpoint: String,
    user: String,
    base: Option<PathBuf>,
}

/// The configuration of `context` (default: the current one) in a parsed kubeconfig.
async fn load_kubeconfig(
    path: &Path,
    kc: kube::config::Kubeconfig,
    context: Option<String>,
) -> Result<Loaded, PollError> {
    let name = context.clone().or_else(|| kc.current_context.clone());
    let user = name
        .and_then(|c| kc.contexts.iter().find(|n| n.name == c))
        .and_then(|n| n.context.as_ref()?.user.clone())
        .unwrap_or_default();
    let opts = kube::config::KubeConfigOptions { context, ..Default::default() };
    let cfg = kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .map_err(|e| PollError::Access(kubeconfig_error(path, None, &e)))?;
    let endpoint = strip_userinfo(&cfg.cluster_url.to_string());
    Ok(Loaded { cfg, endpoint, user, base: path.parent().map(Path::to_path_buf) })
}

/// The clients of a target from its loaded configuration: the credentials taken out of it
/// (an exec plugin's client certificate put back as the TLS identity), the poll's timeouts.
async fn configure(
    t: &Target,
    loaded: Result<Loaded, PollError>,
    poll: &PollSection,
    redactor: &Arc<Redactor>,
) -> Result<Built, PollError> {
    let Loaded { mut cfg, endpoint, user, base } = loaded?;
    // kube's client panics on a server URL without a scheme or host ("127.0.0.1:1", found by
    // `fedsched fuzz` in a kubeconfig, seed 2; a Cluster's `spec.apiEndpoint` and `[ha]
    // server` are the same URL): an error for this target instead.
    if !matches!(cfg.cluster_url.scheme_str(), Some("http" | "https")) || cfg.cluster_url.host().is_none() {
        let server = match &t.access.kubeconfig {
            Some(path) => format!("kubeconfig {}: the cluster's server", path.display()),
            None => "the server (spec.apiEndpoint, or [ha] server)".to_string(),
        };
        return Err(PollError::Access(format!("{server} must be an http:// or https:// URL with a host")));
    }
    if let Some(proxy) = &cfg.proxy_url
        && !matches!(proxy.scheme_str(), Some("http" | "https" | "socks5"))
    {
        return Err(PollError::Access(format!(
            "proxy {}: only http, https and socks5 proxies are supported",
            strip_userinfo(&proxy.to_string())
        )));
    }
    // An exec plugin's budget ends before the poll's deadline, so that its error names it.
    let budget = poll.timeout.mul_f64(0.9);
    let credentials = Credentials::take(&mut cfg.auth_info, &user, base.as_deref(), budget)?;
    let mut valid_until = None;
    if let Some(c) = &credentials
        && let Some((identity, until)) = c.identity().await?
    {
        use secrecy::ExposeSecret;
        cfg.auth_info.client_certificate_data = Some(base64_encode(identity.certificate.as_bytes()));
        cfg.auth_info.client_key_data = Some(base64_encode(identity.key.expose_secret().as_bytes()).into());
        valid_until = until;
    }
    cfg.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static(USER_AGENT)));
    cfg.connect_timeout = Some(poll.read_timeout);
    cfg.read_timeout = Some(poll.read_timeout);
    cfg.write_timeout = Some(poll.read_timeout);
    cfg.reset_reader_on_write = true;
    // Our own backoff decides when to try again; kube's retry would hide 503s inside a poll.
    cfg.default_retry = false;
    let wire = Arc::default();
    let watch_client = if poll.watch {
        let mut w = cfg.clone();
        w.read_timeout = None;
        Some(watch_client_of(w, credentials.clone(), poll, &wire)?)
    } else {
        None
    };
    let client = client_of(cfg.clone(), credentials.clone())?;
    let config = Arc::new(cfg);
    Ok(Built {
        target: t.clone(),
        client,
        watch_client,
        wire,
        config,
        endpoint,
        credentials,
        redactor: Arc::clone(redactor),
        valid_until,
    })
}

/// A client of a cluster that is not a member (the host cluster of leader election, `[ha]`):
/// the same construction as a member's (kubeconfig, or `server` + token file + CA; the
/// `User-Agent`, token-file rotation), every request bounded by `timeout`, no retries.
pub async fn host_client(
    access: &ClusterAccess,
    server: Option<&str>,
    timeout: Duration,
) -> Result<kube::Client, PollError> {
    let target = Target {
        name: "(host)".into(),
        access: access.clone(),
        api_endpoint: server.map(str::to_string),
        insecure_skip_tls_verification: false,
        proxy_url: None,
    };
    let poll = PollSection { timeout, read_timeout: timeout, watch: false, ..PollSection::default() };
    Ok(build(&target, &poll).await?.client)
}

/// The client configuration of a target without a kubeconfig: the Cluster object's
/// `spec.apiEndpoint`, `insecureSkipTLSVerification` and `proxyURL`, with the configured CA
/// and token file; and the endpoint as shown (without user info).
fn endpoint_config(t: &Target) -> Result<Loaded, PollError> {
    let access = |m: String| PollError::Access(m);
    let Some(url) = t.api_endpoint.as_deref() else {
        return Err(access("no kubeconfig configured and the Cluster object has no spec.apiEndpoint".into()));
    };
    let uri: http::Uri = url.parse().map_err(|e| access(format!("spec.apiEndpoint {}: {e}", strip_userinfo(url))))?;
    let mut cfg = kube::Config::new(uri);
    if let Some(ca) = &t.access.ca_file {
        cfg.root_cert = Some(read_ca(ca)?);
    }
    match &t.access.token_file {
        // Taken out by `Credentials::take` (trimmed, re-read for rotation), not read by kube.
        Some(p) => cfg.auth_info.token_file = Some(p.display().to_string()),
        None => return Err(access("token_file is required with the Cluster's spec.apiEndpoint".into())),
    }
    if t.insecure_skip_tls_verification {
        tracing::warn!(
            cluster = %t.name,
            "insecureSkipTLSVerification is set: the API server's certificate is not verified"
        );
        cfg.accept_invalid_certs = true;
    }
    if let Some(proxy) = &t.proxy_url {
        cfg.proxy_url =
            Some(proxy.parse().map_err(|e| access(format!("spec.proxyURL {}: {e}", strip_userinfo(proxy))))?);
    }
    Ok(Loaded { cfg, endpoint: strip_userinfo(url), user: String::new(), base: None })
}

pub(super) fn read_ca(path: &Path) -> Result<Vec<Vec<u8>>, PollError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bytes = std::fs::read(path).map_err(|e| PollError::Access(format!("CA file {}: {e}", path.display())))?;
    let certs: Result<Vec<Vec<u8>>, _> =
        CertificateDer::pem_slice_iter(&bytes).map(|c| c.map(|c| c.as_ref().to_vec())).collect();
    match certs {
        Ok(c) if !c.is_empty() => Ok(c),
        Ok(_) => Err(PollError::Access(format!("CA file {}: no PEM certificate in it", path.display()))),
        Err(e) => Err(PollError::Access(format!("CA file {}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inputs kube's client panics on (`fedsched fuzz`, seed 2, cases 1228 and 110545) are
    /// errors for their target, however the server URL arrives: a kubeconfig starting with a
    /// UTF-16 byte-order mark and an odd number of bytes; a server without a scheme in a
    /// kubeconfig, in a Cluster's `spec.apiEndpoint` and in `[ha] server`.
    #[tokio::test]
    async fn a_server_url_or_kubeconfig_kube_would_panic_on_is_an_error_for_its_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("token");
        std::fs::write(&token, "abc\n").expect("token");
        let poll = PollSection { watch: false, ..PollSection::default() };
        let kubeconfig = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).expect("kubeconfig");
            Target {
                name: name.into(),
                access: ClusterAccess { kubeconfig: Some(path), ..Default::default() },
                api_endpoint: None,
                insecure_skip_tls_verification: false,
                proxy_url: None,
            }
        };
        let odd_bom = kubeconfig("bom", &[0xFF, 0xFE, b'a', 0, b'b']);
        let schemeless = kubeconfig(
            "schemeless",
            b"apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: a, cluster: {server: '127.0.0.1:1'}}]\n\
              users: [{name: u, user: {token: abc}}]\ncontexts: [{name: c, context: {cluster: a, user: u}}]\n",
        );
        let endpoint = Target {
            name: "endpoint".into(),
            access: ClusterAccess { token_file: Some(token.clone()), ..Default::default() },
            api_endpoint: Some("127.0.0.1:1".into()),
            insecure_skip_tls_verification: false,
            proxy_url: None,
        };
        for (t, says) in [
            (&odd_bom, "byte-order mark"),
            (&schemeless, "the cluster's server must be an http:// or https:// URL with a host"),
            (&endpoint, "must be an http:// or https:// URL with a host"),
        ] {
            match build(t, &poll).await {
                Ok(_) => panic!("{}: built", t.name),
                Err(e) => assert!(e.to_string().contains(says), "{}: {e}", t.name),
            }
        }
        let ha = ClusterAccess { token_file: Some(token), ..Default::default() };
        match host_client(&ha, Some("127.0.0.1:1"), Duration::from_secs(1)).await {
            Ok(_) => panic!("[ha] server: a host client"),
            Err(e) => assert!(e.to_string().contains("must be an http:// or https:// URL with a host"), "{e}"),
        }
    }

    /// A TLS server with the simulator's throwaway CA, offering HTTP/2 and HTTP/1.1, that
    /// answers every request with the HTTP version it came in.
    async fn version_server(certs: &crate::testbed::simulate::Certs) -> std::net::SocketAddr {
        let acceptor = crate::testbed::simulate::tls_acceptor(certs, false).expect("acceptor");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(stream).await else { return };
                    let svc = hyper::service::service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                        let body = http_body_util::Full::new(bytes::Bytes::from(format!("{:?}", req.version())));
                        Ok::<_, std::convert::Infallible>(http::Response::new(body))
                    });
                    let builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
                    let _ = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), svc).await;
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn the_watch_client_verifies_the_server_and_speaks_http2_with_it() {
        use crate::testbed::simulate::make_certs;
        let certs = make_certs().expect("certificates");
        let addr = version_server(&certs).await;
        let dir = tempfile::tempdir().expect("directory");
        let (ours, other) = (dir.path().join("ca.pem"), dir.path().join("other.pem"));
        std::fs::write(&ours, &certs.ca_pem).expect("CA");
        std::fs::write(&other, make_certs().expect("other certificates").ca_pem).expect("other CA");
        let get = |ca: &Path, insecure: bool| {
            let mut cfg = kube::Config::new(format!("https://{addr}").parse().expect("URI"));
            cfg.root_cert = Some(read_ca(ca).expect("CA"));
            cfg.accept_invalid_certs = insecure;
            let client = watch_client_of(cfg, None, &PollSection::default(), &Arc::default());
            async move {
                let req = http::Request::get("/version").body(kube::client::Body::from(Vec::new())).expect("request");
                let res = client.expect("client").send(req).await.map_err(|e| chain(&e))?;
                let body = res.into_body().collect().await.map_err(|e| e.to_string())?;
                Ok::<_, String>(String::from_utf8_lossy(&body.to_bytes()).into_owned())
            }
        };
        assert_eq!(get(&ours, false).await, Ok("HTTP/2.0".to_string()));
        let refused = get(&other, false).await.expect_err("a server its CA did not sign");
        assert!(refused.contains("certificate"), "{refused}");
        // insecureSkipTLSVerification: the same server accepted.
        assert_eq!(get(&other, true).await, Ok("HTTP/2.0".to_string()));
    }

    #[test]
    fn endpoint_config_applies_tls_and_proxy_fields() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let token = dir.path().join("token");
        let _ = std::fs::write(&token, "abc\n");
        let access = ClusterAccess { token_file: Some(token), ..Default::default() };
        let mut t = Target {
            name: "a".into(),
            access,
            api_endpoint: Some("https://u:p@10.0.0.1:6443".into()),
            insecure_skip_tls_verification: false,
            proxy_url: None,
        };
        let Loaded { cfg, endpoint: shown, .. } = endpoint_config(&t).expect("config");
        assert_eq!(shown, "https://10.0.0.1:6443");
        assert!(!cfg.accept_invalid_certs);
        assert!(cfg.proxy_url.is_none());
        t.insecure_skip_tls_verification = true;
        t.proxy_url = Some("http://proxy.example:3128".into());
        let cfg = endpoint_config(&t).expect("config").cfg;
        assert!(cfg.accept_invalid_certs, "insecureSkipTLSVerification is not applied");
        assert_eq!(cfg.proxy_url.map(|u| u.to_string()), Some("http://proxy.example:3128/".into()));
        t.proxy_url = Some("not a url".into());
        let e = endpoint_config(&t).map(|_| ()).expect_err("bad proxy");
        assert!(e.to_string().contains("spec.proxyURL"), "{e}");
    }

    #[test]
    fn endpoints_are_shown_without_credentials() {
        assert_eq!(strip_userinfo("https://u:secret@10.0.0.1:6443/k8s"), "https://10.0.0.1:6443/k8s");
        assert_eq!(strip_userinfo("https://10.0.0.1:6443"), "https://10.0.0.1:6443");
    }

    #[test]
    fn x509_v1_certificates_are_recognised() {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["client".to_string()]).expect("params").self_signed(&key);
        let der = cert.expect("cert").der().to_vec();
        assert!(!is_x509_v1(&der), "rcgen writes v3");
        // The same certificate without its `[0] Version` element (5 bytes: a0 03 02 01 02).
        let v1 = strip_version(&der);
        assert!(is_x509_v1(&v1));
        assert!(!is_x509_v1(b""));
        assert!(!is_x509_v1(&[0x30, 0x85, 0, 0, 0, 0, 0]));
        // Through a kubeconfig's client-certificate-data: the message names the version.
        let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", base64_encode(&v1));
        let auth = kube::config::AuthInfo {
            client_certificate_data: Some(base64_encode(pem.as_bytes())),
            ..Default::default()
        };
        let p = client_cert_problem(&auth).expect("a problem");
        assert!(p.contains("X.509 v1"), "{p}");
        // Both clients of a member say so when they cannot be built with it.
        let key_pem = key.serialize_pem();
        let mut cfg = kube::Config::new("https://127.0.0.1:6443".parse().expect("URI"));
        cfg.auth_info =
            kube::config::AuthInfo { client_key_data: Some(base64_encode(key_pem.as_bytes()).into()), ..auth };
        for e in [
            client_of(cfg.clone(), None).err(),
            watch_client_of(cfg, None, &PollSection::default(), &Arc::default()).err(),
        ] {
            let e = e.expect("no client with a v1 certificate").to_string();
            assert!(e.contains("X.509 v1"), "{e}");
        }
        assert_eq!(base64_decode(&base64_encode(b"fedsched!")).as_deref(), Some(&b"fedsched!"[..]));
    }

    fn strip_version(der: &[u8]) -> Vec<u8> {
        fn header(len: usize) -> Vec<u8> {
            let mut h = vec![0x30];
            if len < 0x80 {
                h.push(len as u8);
            } else {
                let bytes: Vec<u8> = len.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
                h.push(0x80 | bytes.len() as u8);
                h.extend(bytes);
            }
            h
        }
        fn split(der: &[u8]) -> (&[u8], &[u8]) {
            let len = der[1];
            let (n, size) = if len < 0x80 {
                (0, usize::from(len))
            } else {
                let n = usize::from(len & 0x7f);
                (n, der[2..2 + n].iter().fold(0usize, |a, b| (a << 8) | usize::from(*b)))
            };
            let start = 2 + n;
            (&der[start..start + size], &der[start + size..])
        }
        let (outer, _) = split(der);
        let (tbs, rest) = split(outer);
        assert_eq!(&tbs[..5], &[0xa0, 0x03, 0x02, 0x01, 0x02]);
        let tbs = &tbs[5..];
        let mut new_tbs = header(tbs.len());
        new_tbs.extend_from_slice(tbs);
        new_tbs.extend_from_slice(rest);
        let mut out = header(new_tbs.len());
        out.extend(new_tbs);
        out
    }
}
