//! Live members: polling each member's Kubernetes API for Nodes and Pods.
//!
//! Client: kube-rs (`kube::Client` over rustls, certificate verification on unless the
//! Cluster object says `insecureSkipTLSVerification`), which brings kubeconfig handling,
//! client certificates, exec credential plugins, token files re-read on rotation and proxies.
//! Pages are fetched raw (`Client::send`) and decoded narrowly ([`super::decode`]).
//!
//! Per poll of one cluster: `GET /api/v1/nodes?limit=N` and `GET /api/v1/pods?limit=N`
//! following `continue` tokens; a 410 Gone on a continue token restarts that list (up to
//! [`MAX_RESTARTS`] times). Every request has the read timeout `poll.read_timeout`; the whole
//! poll has the deadline `poll.timeout`. At most `poll.concurrency` clusters are polled at
//! once. A cluster that fails is retried after an exponential backoff with jitter (base: the
//! poll interval, cap: `poll.max_backoff`); meanwhile it keeps its last good observation.
//!
//! Tokens: kube keeps them in `SecretString`s and never prints them; this module only ever
//! names token *files*, and endpoints are shown without user info.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use http_body_util::BodyExt;

use super::decode::{
    Fold, Keyed, NodeCache, NodeItem, Observation, PodCache, PodItem, Sink, WatchCache, WatchEvent, decode_event,
    decode_page,
};
use crate::config::{ClusterAccess, Config, PollSection};
use crate::model::{Health, NodeView, PodFacts, PollFacts, ResourceList};
use crate::policy::{ClusterObject, PolicySet};
use crate::util::clock::now_ms;

/// How often a list restarts after its continue token expired (410 Gone) before giving up.
pub const MAX_RESTARTS: u32 = 3;
/// Largest response body accepted for one page (and for one watch event).
pub const MAX_PAGE_BYTES: usize = 64 << 20;
/// `timeoutSeconds` of a watch request, before a per-cluster jitter of up to half of it: the
/// server ends the stream then and the watcher re-watches from the last resource version.
pub const WATCH_TIMEOUT_SECS: u64 = 60;

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
    for (name, access) in &cfg.clusters {
        match set.clusters.iter().find(|c| &c.meta.name == name) {
            Some(c) => out.push(Target::new(c, access)),
            None => unknown.push(name.clone()),
        }
    }
    (out, unknown)
}

/// Why a poll of one cluster failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PollError {
    /// The access configuration cannot be used (kubeconfig, token or CA file, endpoint).
    #[error("access: {0}")]
    Access(String),
    /// 401 or 403: the API answered but refused the credentials.
    #[error("forbidden (HTTP {status}) listing {what}: {message} (the poller needs get/list/watch on nodes and pods)")]
    Forbidden { status: u16, what: &'static str, message: String },
    /// Any other non-success status.
    #[error("HTTP {status} listing {what}: {message}")]
    Http { status: u16, what: &'static str, message: String },
    /// Continue tokens kept expiring.
    #[error("listing {what}: continue token expired (410 Gone) {restarts} times in a row")]
    Gone { what: &'static str, restarts: u32 },
    /// The body is not a list page.
    #[error("listing {what}: invalid response: {message}")]
    Decode { what: &'static str, message: String },
    /// Connection, TLS, read timeout, reset, truncated body.
    #[error("listing {what}: {message}")]
    Transport { what: &'static str, message: String },
    /// The poll as a whole took longer than `poll.timeout`.
    #[error("poll exceeded its deadline of {}", humantime::format_duration(*.0))]
    Deadline(Duration),
}

impl PollError {
    /// A short, stable name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            PollError::Access(_) => "access",
            PollError::Forbidden { .. } => "forbidden",
            PollError::Http { .. } => "http",
            PollError::Gone { .. } => "gone",
            PollError::Decode { .. } => "decode",
            PollError::Transport { .. } => "transport",
            PollError::Deadline(_) => "deadline",
        }
    }

    /// The health a cluster has while this is its last error: `NotReady` when the API answered
    /// but refused (401/403: the cluster is up, our credentials are not), `Unreachable`
    /// otherwise.
    pub fn health(&self) -> Health {
        let reason = format!("{}: {self}", self.kind());
        match self {
            PollError::Forbidden { .. } => Health::NotReady { reason },
            _ => Health::Unreachable { reason },
        }
    }
}

/// What a successful poll saw (shared: the view is cloned for every reconcile).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveData {
    /// Nodes with the requests of their pods (shared with the snapshots built from them).
    pub nodes: Arc<Vec<NodeView>>,
    /// Σ requests of pods not bound yet.
    pub unbound: ResourceList,
    /// Pod counts.
    pub pods: PodFacts,
    /// How the poll went.
    pub poll: PollFacts,
}

/// What the poller knows of one cluster.
#[derive(Debug, Clone, Default)]
pub struct LiveStatus {
    /// The endpoint polled, without user info (`kubeconfig:<path>` before the first poll).
    pub endpoint: String,
    /// The last successful observation.
    pub last_good: Option<Arc<LiveData>>,
    /// The error of the last attempt; None after a success.
    pub error: Option<PollError>,
    /// Failures since the last success.
    pub consecutive_failures: u32,
    /// Counters since start (metrics).
    pub polls_total: u64,
    /// Failed polls since start, by [`PollError::kind`].
    pub failures_total: BTreeMap<&'static str, u64>,
    /// Whether the last round was served from watches (`[poll] watch`), not a list.
    pub watching: bool,
    /// Watch events applied (bookmarks excluded) since the current watches started.
    pub watch_events: u64,
    /// Lists restarted by the watches (410 Gone) since they started.
    pub relists: u64,
}

/// Per-cluster live state, as the reconcile consumes it.
#[derive(Debug, Clone, Default)]
pub struct LiveView {
    /// By cluster name.
    pub clusters: BTreeMap<String, LiveStatus>,
}

/// What one round did.
#[derive(Debug, Clone, Default)]
pub struct RoundReport {
    /// Clusters polled successfully.
    pub ok: Vec<String>,
    /// Clusters whose poll failed, with the error and the backoff before the next attempt.
    pub failed: Vec<(String, PollError, Duration)>,
    /// Clusters skipped because they are backing off.
    pub skipped: Vec<String>,
    /// Whether anything the reconcile reads changed.
    pub changed: bool,
}

struct Built {
    target: Target,
    client: kube::Client,
    /// The client of watch streams: no read timeout (a watch is idle between events); the
    /// watcher bounds the wait for headers and for the next event itself.
    watch_client: Option<kube::Client>,
    /// What `client` was built from (a watched cluster's list client is rebuilt after its
    /// list, so that the pooled connection and its large read buffer are let go).
    config: kube::Config,
    endpoint: String,
}

/// What a watched cluster's tasks share with the poller.
#[derive(Debug, Default)]
struct Shared {
    cache: WatchCache,
    /// Set by a watcher that stopped (its connection failed); the next round reports it.
    failed: Option<PollError>,
    events: u64,
    relists: u64,
}

/// The watches of one cluster: a task per resource keeping [`Shared::cache`] up to date.
struct Watcher {
    target: Target,
    shared: Arc<std::sync::Mutex<Shared>>,
    tasks: Vec<tokio::task::AbortHandle>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// What listing a cluster gave: its data and, when watching, the cache the watches start from.
type Listed = Result<(LiveData, Option<Start>), PollError>;

/// What the initial list of a watched cluster hands to its watchers.
struct Start {
    cache: WatchCache,
    nodes_rv: String,
    pods_rv: String,
}

/// The poller: one kube client per cluster, kept between rounds, and the per-cluster state.
pub struct Poller {
    poll: PollSection,
    interval: Duration,
    clients: BTreeMap<String, Built>,
    watchers: BTreeMap<String, Watcher>,
    /// Bounds the lists the watchers restart (410 Gone) to `poll.concurrency` at once.
    permits: Arc<tokio::sync::Semaphore>,
    next_attempt: BTreeMap<String, Instant>,
    view: LiveView,
    seed: u64,
}

fn lock(m: &std::sync::Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn live_data(obs: Observation, duration: Duration, pages: u32) -> LiveData {
    let poll = PollFacts {
        duration_ms: duration.as_millis() as u64,
        pages,
        nodes: obs.nodes.len() as u32,
        pods: obs.listed_pods,
        at_ms: now_ms(),
    };
    LiveData { nodes: Arc::new(obs.nodes), unbound: obs.unbound, pods: obs.pods, poll }
}

impl Poller {
    /// A poller; `interval` is the poll interval (the base of the backoff).
    pub fn new(poll: PollSection, interval: Duration) -> Poller {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x5eed);
        Poller {
            permits: Arc::new(tokio::sync::Semaphore::new(poll.concurrency.max(1))),
            poll,
            interval,
            clients: BTreeMap::new(),
            watchers: BTreeMap::new(),
            next_attempt: BTreeMap::new(),
            view: LiveView::default(),
            seed,
        }
    }

    /// Changes the settings (after a configuration reload).
    pub fn reconfigure(&mut self, poll: PollSection, interval: Duration) {
        if poll != self.poll {
            self.clients.clear();
            self.watchers.clear();
            self.permits = Arc::new(tokio::sync::Semaphore::new(poll.concurrency.max(1)));
        }
        self.poll = poll;
        self.interval = interval;
    }

    /// The current per-cluster state.
    pub fn view(&self) -> &LiveView {
        &self.view
    }

    /// Polls every target that is not backing off, at most `poll.concurrency` at once, each
    /// within `poll.timeout`. Clusters no longer targeted are forgotten.
    ///
    /// With `poll.watch`, a cluster is listed once; then watches keep its cache current and
    /// the rounds read the cache (no request). A watch that failed is reported as this round's
    /// failure of the cluster; after its backoff the cluster is listed again.
    pub async fn round(&mut self, targets: &[Target]) -> RoundReport {
        let mut report = RoundReport::default();
        let names: std::collections::BTreeSet<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        let before = self.view.clusters.len();
        self.view.clusters.retain(|k, _| names.contains(k.as_str()));
        self.clients.retain(|k, _| names.contains(k.as_str()));
        self.watchers.retain(|k, _| names.contains(k.as_str()));
        self.next_attempt.retain(|k, _| names.contains(k.as_str()));
        report.changed |= before != self.view.clusters.len();

        let now = Instant::now();
        let mut jobs = Vec::new();
        let mut results: Vec<(Target, Option<Built>, Result<LiveData, PollError>)> = Vec::new();
        for t in targets {
            let status = self
                .view
                .clusters
                .entry(t.name.clone())
                .or_insert_with(|| LiveStatus { endpoint: describe_endpoint(t), ..Default::default() });
            if status.polls_total == 0 {
                report.changed = true;
            }
            if self.next_attempt.get(&t.name).is_some_and(|at| *at > now) {
                report.skipped.push(t.name.clone());
                continue;
            }
            if self.poll.watch
                && let Some(w) = self.watchers.get(&t.name).filter(|w| w.target == *t)
            {
                let started = Instant::now();
                let result = {
                    let mut sh = lock(&w.shared);
                    status.watching = true;
                    status.watch_events = sh.events;
                    status.relists = sh.relists;
                    match sh.failed.take() {
                        Some(e) => Err(e),
                        None => Ok(live_data(sh.cache.observation(), started.elapsed(), 0)),
                    }
                };
                let outcome = match &result {
                    Ok(_) => crate::metrics::PollOutcome::Ok,
                    Err(_) => crate::metrics::PollOutcome::Error,
                };
                crate::metrics::record_poll(&t.name, started.elapsed(), outcome);
                if let Err(e) = &result {
                    self.watchers.remove(&t.name);
                    if !keeps_client(e) {
                        self.clients.remove(&t.name);
                    }
                }
                results.push((t.clone(), None, result));
                continue;
            }
            self.watchers.remove(&t.name);
            status.watching = false;
            let built = self.clients.remove(&t.name).filter(|b| b.target == *t);
            jobs.push((t.clone(), built));
        }
        let poll = self.poll.clone();
        let listed: Vec<(Target, Option<Built>, Listed)> = futures_util::stream::iter(jobs)
            .map(|(t, built)| {
                let poll = poll.clone();
                async move {
                    let started = Instant::now();
                    let (built, result) = poll_one(&t, built, &poll).await;
                    let outcome = match &result {
                        Ok(_) => crate::metrics::PollOutcome::Ok,
                        Err(PollError::Deadline(_)) => crate::metrics::PollOutcome::Timeout,
                        Err(_) => crate::metrics::PollOutcome::Error,
                    };
                    crate::metrics::record_poll(&t.name, started.elapsed(), outcome);
                    (t, built, result)
                }
            })
            .buffer_unordered(self.poll.concurrency.max(1))
            .collect()
            .await;
        for (t, mut built, result) in listed {
            let result = match result {
                Ok((data, Some(start))) => {
                    if let Some(b) = &mut built {
                        // A fresh client: the list's pooled connection (with a read buffer
                        // grown to the page size) is closed; relists open a new one.
                        if let Ok(c) = kube::Client::try_from(b.config.clone()) {
                            b.client = c;
                        }
                        self.start_watch(b, start);
                    }
                    Ok(data)
                }
                Ok((data, None)) => Ok(data),
                Err(e) => Err(e),
            };
            results.push((t, built, result));
        }

        for (t, built, result) in results {
            let status = self.view.clusters.entry(t.name.clone()).or_default();
            status.polls_total += 1;
            if let Some(b) = built {
                status.endpoint = b.endpoint.clone();
                self.clients.insert(t.name.clone(), b);
            }
            match result {
                Ok(data) => {
                    let same = status.last_good.as_deref().is_some_and(|old| {
                        old.nodes == data.nodes && old.pods == data.pods && old.unbound == data.unbound
                    });
                    report.changed |= !same || status.error.is_some();
                    status.last_good = Some(Arc::new(data));
                    status.error = None;
                    status.consecutive_failures = 0;
                    self.next_attempt.remove(&t.name);
                    report.ok.push(t.name.clone());
                }
                Err(e) => {
                    status.watching = false;
                    report.changed |= status.error.as_ref() != Some(&e);
                    status.consecutive_failures = status.consecutive_failures.saturating_add(1);
                    *status.failures_total.entry(e.kind()).or_insert(0) += 1;
                    status.error = Some(e.clone());
                    let failures = status.consecutive_failures;
                    let delay = self.backoff(&t.name, failures);
                    self.next_attempt.insert(t.name.clone(), Instant::now() + delay);
                    report.failed.push((t.name.clone(), e, delay));
                }
            }
        }
        report.ok.sort();
        report.failed.sort_by(|a, b| a.0.cmp(&b.0));
        report
    }

    /// Starts the watches of a cluster just listed.
    fn start_watch(&mut self, b: &Built, start: Start) {
        let Some(watch) = b.watch_client.clone() else { return };
        let shared = Arc::new(std::sync::Mutex::new(Shared { cache: start.cache, ..Default::default() }));
        let jitter = crate::util::hash::fnv1a64(b.target.name.as_bytes()) % (WATCH_TIMEOUT_SECS / 2 + 1);
        let ctx = Ctx {
            list: b.client.clone(),
            watch,
            shared: Arc::clone(&shared),
            poll: self.poll.clone(),
            permits: Arc::clone(&self.permits),
            timeout_secs: WATCH_TIMEOUT_SECS + jitter,
            cluster: b.target.name.clone(),
        };
        let nodes = tokio::spawn(watch_loop::<NodeItem>(ctx.clone(), "/api/v1/nodes", "nodes", start.nodes_rv));
        let pods = tokio::spawn(watch_loop::<PodItem>(ctx, "/api/v1/pods", "pods", start.pods_rv));
        self.watchers.insert(
            b.target.name.clone(),
            Watcher { target: b.target.clone(), shared, tasks: vec![nodes.abort_handle(), pods.abort_handle()] },
        );
    }

    /// `interval × 2^(failures−1)`, capped at `poll.max_backoff`, times a jitter in [0.5, 1].
    fn backoff(&mut self, name: &str, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(16);
        let base = self.interval.saturating_mul(1u32 << exp).min(self.poll.max_backoff);
        self.seed = self.seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let r = crate::util::hash::fnv1a64(format!("{name}{}", self.seed).as_bytes());
        let jitter = 0.5 + (r % 1000) as f64 / 2000.0;
        base.mul_f64(jitter)
    }
}

/// `https://host:port/path` of a target (user info removed), or `kubeconfig:<path>`.
pub fn describe_endpoint(t: &Target) -> String {
    match (&t.access.kubeconfig, &t.api_endpoint) {
        (Some(k), _) => format!("kubeconfig:{}", k.display()),
        (None, Some(e)) => strip_userinfo(e),
        (None, None) => "(no endpoint)".into(),
    }
}

fn strip_userinfo(url: &str) -> String {
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

/// Keeps a client after this error? A client whose connection misbehaved is rebuilt next time
/// (fresh connections).
fn keeps_client(e: &PollError) -> bool {
    matches!(e, PollError::Forbidden { .. } | PollError::Http { .. })
}

async fn poll_one(t: &Target, built: Option<Built>, poll: &PollSection) -> (Option<Built>, Listed) {
    let started = Instant::now();
    // The deadline covers building the client too (an exec credential plugin may hang).
    let attempt = async {
        let built = match built {
            Some(b) => b,
            None => build(t, poll).await.map_err(|e| (None, e))?,
        };
        let listed = if poll.watch {
            list_to_cache(&built.client, poll.page_size)
                .await
                .map(|(start, pages)| (start.cache.observation(), pages, Some(start)))
        } else {
            list_cluster(&built.client, poll.page_size).await.map(|(fold, pages)| (fold.finish(), pages, None))
        };
        match listed {
            Ok(r) => Ok((built, r)),
            Err(e) => Err((Some(built), e)),
        }
    };
    let (built, result) = match tokio::time::timeout(poll.timeout, attempt).await {
        Ok(Ok((built, (obs, pages, start)))) => (Some(built), Ok((live_data(obs, started.elapsed(), pages), start))),
        Ok(Err((built, e))) => (built, Err(e)),
        Err(_) => (None, Err(PollError::Deadline(poll.timeout))),
    };
    let keep = match &result {
        Ok(_) => true,
        Err(e) => keeps_client(e),
    };
    (built.filter(|_| keep), result)
}

async fn build(t: &Target, poll: &PollSection) -> Result<Built, PollError> {
    let access = |m: String| PollError::Access(m);
    let (mut cfg, endpoint) = match &t.access.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| access(format!("kubeconfig {}: {}", path.display(), chain(&e))))?;
            let opts = kube::config::KubeConfigOptions { context: t.access.context.clone(), ..Default::default() };
            let cfg = kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| access(format!("kubeconfig {}: {}", path.display(), chain(&e))))?;
            let endpoint = strip_userinfo(&cfg.cluster_url.to_string());
            (cfg, endpoint)
        }
        None => {
            let Some(url) = t.api_endpoint.as_deref() else {
                return Err(access("no kubeconfig configured and the Cluster object has no spec.apiEndpoint".into()));
            };
            let uri: http::Uri =
                url.parse().map_err(|e| access(format!("spec.apiEndpoint {}: {e}", strip_userinfo(url))))?;
            let mut cfg = kube::Config::new(uri);
            if let Some(ca) = &t.access.ca_file {
                cfg.root_cert = Some(read_ca(ca)?);
            }
            match &t.access.token_file {
                Some(p) => {
                    // Checked here for a clear message; kube re-reads it (token rotation).
                    let token =
                        std::fs::read_to_string(p).map_err(|e| access(format!("token file {}: {e}", p.display())))?;
                    if token.trim().is_empty() {
                        return Err(access(format!("token file {} is empty", p.display())));
                    }
                    cfg.auth_info.token_file = Some(p.display().to_string());
                }
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
            (cfg, strip_userinfo(url))
        }
    };
    cfg.connect_timeout = Some(poll.read_timeout);
    cfg.read_timeout = Some(poll.read_timeout);
    cfg.write_timeout = Some(poll.read_timeout);
    cfg.reset_reader_on_write = true;
    // Our own backoff decides when to try again; kube's retry would hide 503s inside a poll.
    cfg.default_retry = false;
    let watch_client = if poll.watch {
        let mut w = cfg.clone();
        w.read_timeout = None;
        Some(kube::Client::try_from(w).map_err(|e| access(format!("client: {}", chain(&e))))?)
    } else {
        None
    };
    let client = kube::Client::try_from(cfg.clone()).map_err(|e| access(format!("client: {}", chain(&e))))?;
    Ok(Built { target: t.clone(), client, watch_client, config: cfg, endpoint })
}

fn read_ca(path: &Path) -> Result<Vec<Vec<u8>>, PollError> {
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

/// An error and its sources, `: `-separated.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

async fn list_cluster(client: &kube::Client, page_size: u32) -> Result<(Fold, u32), PollError> {
    let mut fold = Fold::default();
    let (node_pages, _) = list_all::<NodeItem, _>(client, "/api/v1/nodes", "nodes", page_size, &mut fold).await?;
    let (pod_pages, _) = list_all::<PodItem, _>(client, "/api/v1/pods", "pods", page_size, &mut fold).await?;
    Ok((fold, node_pages + pod_pages))
}

/// The same lists as [`list_cluster`], into a [`WatchCache`], with the resource versions the
/// watches start from.
async fn list_to_cache(client: &kube::Client, page_size: u32) -> Result<(Start, u32), PollError> {
    let mut cache = WatchCache::default();
    let (node_pages, nodes_rv) =
        list_all::<NodeItem, _>(client, "/api/v1/nodes", "nodes", page_size, &mut cache.nodes).await?;
    let (pod_pages, pods_rv) =
        list_all::<PodItem, _>(client, "/api/v1/pods", "pods", page_size, &mut cache.pods).await?;
    Ok((Start { cache, nodes_rv, pods_rv }, node_pages + pod_pages))
}

/// Lists every page of `path` into `sink`; returns the pages and the resource version of the
/// first page (a watch from there replays whatever changed while the pages were fetched).
async fn list_all<T: serde::de::DeserializeOwned, S: Sink<T>>(
    client: &kube::Client,
    path: &str,
    what: &'static str,
    page_size: u32,
    sink: &mut S,
) -> Result<(u32, String), PollError> {
    let mut token: Option<String> = None;
    let mut restarts = 0;
    let mut pages = 0;
    let mut rv = String::new();
    loop {
        let mut url = format!("{path}?limit={page_size}");
        if let Some(t) = &token {
            url.push_str("&continue=");
            url.push_str(&crate::util::percent::encode(t));
        }
        match get(client, &url, what).await {
            Ok(bytes) => {
                let page = decode_page::<T>(&bytes).map_err(|e| PollError::Decode { what, message: e.to_string() })?;
                if token.is_none() {
                    rv = page.metadata.resource_version.clone().unwrap_or_default();
                }
                pages += 1;
                sink.add(page.items);
                match page.metadata.next() {
                    Some(t) => token = Some(t.to_string()),
                    None => return Ok((pages, rv)),
                }
            }
            Err(Got::Gone(message)) if token.is_some() => {
                restarts += 1;
                if restarts > MAX_RESTARTS {
                    return Err(PollError::Gone { what, restarts: restarts - 1 });
                }
                tracing::debug!(what, %message, restarts, "continue token expired; restarting the list");
                token = None;
                sink.reset();
            }
            Err(Got::Gone(message)) => return Err(PollError::Http { status: 410, what, message }),
            Err(Got::Failed(e)) => return Err(e),
        }
    }
}

/// A watched resource: how its events and relists change a [`WatchCache`].
trait Watched: serde::de::DeserializeOwned + Keyed + Send + 'static {
    type Part: Sink<Self> + Default + Send;
    fn upsert(cache: &mut WatchCache, item: Self);
    fn delete(cache: &mut WatchCache, item: &Self);
    fn replace(cache: &mut WatchCache, part: Self::Part);
}

impl Watched for NodeItem {
    type Part = NodeCache;
    fn upsert(cache: &mut WatchCache, item: Self) {
        cache.nodes.upsert(item)
    }
    fn delete(cache: &mut WatchCache, item: &Self) {
        cache.nodes.delete(&item.metadata.name)
    }
    fn replace(cache: &mut WatchCache, part: NodeCache) {
        cache.nodes = part
    }
}

impl Watched for PodItem {
    type Part = PodCache;
    fn upsert(cache: &mut WatchCache, item: Self) {
        cache.pods.upsert(&item)
    }
    fn delete(cache: &mut WatchCache, item: &Self) {
        cache.pods.delete(&item.key())
    }
    fn replace(cache: &mut WatchCache, part: PodCache) {
        cache.pods = part
    }
}

/// Applies decoded events to a cache: the one place watch semantics live (the watcher and the
/// tests call it). Returns the last resource version seen, and the `ERROR` status that ends
/// the stream, if any (events after it are not applied).
fn apply_events<T: Watched>(
    cache: &mut WatchCache,
    events: Vec<WatchEvent<T>>,
    rv: &mut String,
    applied: &mut u64,
) -> Option<super::decode::StatusItem> {
    for ev in events {
        let seen = match ev {
            WatchEvent::Added(t) | WatchEvent::Modified(t) => {
                let seen = t.resource_version().map(str::to_string);
                T::upsert(cache, t);
                *applied += 1;
                seen
            }
            WatchEvent::Deleted(t) => {
                T::delete(cache, &t);
                *applied += 1;
                t.resource_version().map(str::to_string)
            }
            WatchEvent::Bookmark(t) => t.resource_version().map(str::to_string),
            WatchEvent::Error(s) => return Some(s),
        };
        if let Some(v) = seen.filter(|v| !v.is_empty()) {
            *rv = v;
        }
    }
    None
}

/// What a watcher task needs.
#[derive(Clone)]
struct Ctx {
    list: kube::Client,
    watch: kube::Client,
    shared: Arc<std::sync::Mutex<Shared>>,
    poll: PollSection,
    permits: Arc<tokio::sync::Semaphore>,
    timeout_secs: u64,
    cluster: String,
}

/// One resource's watch: re-watches from the last resource version when the stream ends,
/// relists on 410 Gone, and stops (leaving the error for the next round) when a request fails.
async fn watch_loop<T: Watched>(ctx: Ctx, path: &'static str, what: &'static str, mut rv: String) {
    loop {
        let started = Instant::now();
        let failed = match watch_once::<T>(&ctx, path, what, &mut rv).await {
            Ok(events) => {
                if events == 0 && started.elapsed() < Duration::from_secs(1) {
                    // A stream that ends at once, repeatedly, must not spin.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                continue;
            }
            Err(Got::Gone(message)) => {
                tracing::debug!(cluster = %ctx.cluster, what, %message, "watch expired (410 Gone); relisting");
                match relist::<T>(&ctx, path, what).await {
                    Ok(new_rv) => {
                        rv = new_rv;
                        continue;
                    }
                    Err(e) => e,
                }
            }
            Err(Got::Failed(e)) => e,
        };
        tracing::debug!(cluster = %ctx.cluster, what, error = %failed, "watch stopped");
        lock(&ctx.shared).failed = Some(failed);
        return;
    }
}

/// Lists `path` again (at most `poll.concurrency` relists at once, within `poll.timeout`) and
/// replaces that part of the cache; returns the list's resource version.
async fn relist<T: Watched>(ctx: &Ctx, path: &str, what: &'static str) -> Result<String, PollError> {
    let _permit = ctx.permits.acquire().await.map_err(|e| PollError::Transport { what, message: e.to_string() })?;
    let list = async {
        let mut part = T::Part::default();
        let (_, rv) = list_all::<T, _>(&ctx.list, path, what, ctx.poll.page_size, &mut part).await?;
        Ok::<_, PollError>((part, rv))
    };
    let (part, rv) =
        tokio::time::timeout(ctx.poll.timeout, list).await.map_err(|_| PollError::Deadline(ctx.poll.timeout))??;
    let mut sh = lock(&ctx.shared);
    T::replace(&mut sh.cache, part);
    sh.relists += 1;
    Ok(rv)
}

/// One watch request, read until the stream ends. `Ok(events applied)` when it ended normally
/// (server timeout, closed, idle longer than `timeoutSeconds` + `read_timeout`, broken
/// mid-stream): re-watch from `rv`. `Gone` for 410 (as a status or an `ERROR` event).
async fn watch_once<T: Watched>(ctx: &Ctx, path: &str, what: &'static str, rv: &mut String) -> Result<u64, Got> {
    let url = format!(
        "{path}?watch=1&resourceVersion={}&allowWatchBookmarks=true&timeoutSeconds={}",
        crate::util::percent::encode(rv),
        ctx.timeout_secs
    );
    let failed = |message: String| Got::Failed(PollError::Transport { what, message });
    let req = http::Request::get(url)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(Vec::new()))
        .map_err(|e| failed(e.to_string()))?;
    let res = match tokio::time::timeout(ctx.poll.read_timeout, ctx.watch.send(req)).await {
        Err(_) => {
            return Err(failed(format!(
                "watch: no response within {}",
                humantime::format_duration(ctx.poll.read_timeout)
            )));
        }
        Ok(Err(e)) => return Err(failed(format!("watch: {}", chain(&e)))),
        Ok(Ok(r)) => r,
    };
    let status = res.status();
    let mut body = res.into_body();
    if !status.is_success() {
        let bytes = tokio::time::timeout(ctx.poll.read_timeout, http_body_util::Limited::new(body, 1 << 20).collect())
            .await
            .ok()
            .and_then(Result::ok)
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(http_error(status.as_u16(), status_message(&bytes), what));
    }
    tracing::trace!(cluster = %ctx.cluster, what, rv = %rv, "watching");
    let idle = Duration::from_secs(ctx.timeout_secs) + ctx.poll.read_timeout;
    let mut buf: Vec<u8> = Vec::new();
    let mut applied = 0u64;
    loop {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Ok(applied),
            Ok(None) => {
                if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                    return Err(Got::Failed(PollError::Decode {
                        what,
                        message: format!("watch stream ended inside an event ({} bytes)", buf.len()),
                    }));
                }
                return Ok(applied);
            }
            Ok(Some(Err(e))) => {
                tracing::debug!(cluster = %ctx.cluster, what, error = %chain(&e), "watch stream broke; re-watching");
                return Ok(applied);
            }
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else { continue };
        tracing::trace!(cluster = %ctx.cluster, what, bytes = data.len(), "watch data");
        buf.extend_from_slice(&data);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(i) = buf[start..].iter().position(|b| *b == b'\n') {
            let line = &buf[start..start + i];
            start += i + 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let ev =
                decode_event::<T>(line).map_err(|e| Got::Failed(PollError::Decode { what, message: e.to_string() }))?;
            events.push(ev);
        }
        buf.drain(..start);
        if buf.len() > MAX_PAGE_BYTES {
            return Err(Got::Failed(PollError::Decode { what, message: "watch event larger than 64 MiB".into() }));
        }
        if events.is_empty() {
            continue;
        }
        let ended = {
            let mut sh = lock(&ctx.shared);
            let mut n = 0;
            let ended = apply_events(&mut sh.cache, events, rv, &mut n);
            sh.events += n;
            applied += n;
            ended
        };
        tracing::trace!(cluster = %ctx.cluster, what, applied, rv = %rv, "watch events applied");
        if let Some(s) = ended {
            if s.code == Some(410) {
                return Err(Got::Gone(s.message));
            }
            tracing::debug!(cluster = %ctx.cluster, what, code = ?s.code, message = %s.message, "watch ERROR event; re-watching");
            return Ok(applied);
        }
    }
}

enum Got {
    Gone(String),
    Failed(PollError),
}

async fn get(client: &kube::Client, url: &str, what: &'static str) -> Result<Vec<u8>, Got> {
    let req = http::Request::get(url)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(Vec::new()))
        .map_err(|e| Got::Failed(PollError::Transport { what, message: e.to_string() }))?;
    let res = client.send(req).await.map_err(|e| Got::Failed(PollError::Transport { what, message: chain(&e) }))?;
    let status = res.status();
    let body = http_body_util::Limited::new(res.into_body(), MAX_PAGE_BYTES)
        .collect()
        .await
        .map_err(|e| Got::Failed(PollError::Transport { what, message: format!("reading the body: {}", chain(&*e)) }))?
        .to_bytes();
    if status.is_success() {
        return Ok(body.to_vec());
    }
    Err(http_error(status.as_u16(), status_message(&body), what))
}

fn http_error(status: u16, message: String, what: &'static str) -> Got {
    match status {
        410 => Got::Gone(message),
        s @ (401 | 403) => Got::Failed(PollError::Forbidden { status: s, what, message }),
        s => Got::Failed(PollError::Http { status: s, what, message }),
    }
}

/// The `message` of a `Status` body, or the start of the body; at most 300 characters.
fn status_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Status {
        #[serde(default)]
        message: String,
    }
    let m = match serde_json::from_slice::<Status>(body) {
        Ok(s) if !s.message.is_empty() => s.message,
        _ => String::from_utf8_lossy(body).trim().to_string(),
    };
    m.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::super::decode::{Fold, Observation};
    use super::*;

    #[test]
    fn endpoints_are_shown_without_credentials() {
        assert_eq!(strip_userinfo("https://u:secret@10.0.0.1:6443/k8s"), "https://10.0.0.1:6443/k8s");
        assert_eq!(strip_userinfo("https://10.0.0.1:6443"), "https://10.0.0.1:6443");
    }

    #[test]
    fn forbidden_is_not_unreachable() {
        let f = PollError::Forbidden { status: 403, what: "pods", message: "no".into() };
        assert!(matches!(f.health(), Health::NotReady { .. }));
        let t = PollError::Transport { what: "pods", message: "reset".into() };
        assert!(matches!(t.health(), Health::Unreachable { .. }));
        assert_eq!(crate::util::percent::encode("a+b/c=="), "a%2Bb%2Fc%3D%3D");
    }

    /// A pseudo-random pod or node as the API serves it.
    fn pod_json(r: u64, name: &str, rv: u64) -> String {
        let node =
            ["\"nodeName\":\"n1\",", "\"nodeName\":\"n2\",", "", "\"nodeName\":\"ghost\",", "\"nodeName\":\"\","]
                [(r % 5) as usize];
        let phase = ["Running", "Pending", "Succeeded", "Failed", "Running"][((r >> 3) % 5) as usize];
        let cond = if (r >> 6).is_multiple_of(3) {
            r#","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]"#
        } else {
            ""
        };
        let owner = match (r >> 8) % 4 {
            0 => String::new(),
            k => format!(r#","ownerReferences":[{{"kind":"ReplicaSet","name":"rs-{k}","controller":true}}]"#),
        };
        let req = ["\"cpu\":\"250m\"", "\"cpu\":\"1\",\"memory\":\"64Mi\"", "\"memory\":\"1Gi\"", ""]
            [((r >> 10) % 4) as usize];
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"{owner},"annotations":{{"x":"{r}"}}}},"spec":{{{node}"containers":[{{"resources":{{"requests":{{{req}}}}}}}]}},"status":{{"phase":"{phase}"{cond}}}}}"#
        )
    }

    fn node_json(r: u64, name: &str, rv: u64) -> String {
        let unsched = r.is_multiple_of(2);
        format!(
            r#"{{"metadata":{{"name":"{name}","resourceVersion":"{rv}","labels":{{"r":"{}"}}}},"spec":{{"unschedulable":{unsched}}},"status":{{"allocatable":{{"cpu":"4","memory":"8Gi"}},"conditions":[{{"type":"Ready","status":"True"}}]}}}}"#,
            r % 7
        )
    }

    fn fresh(nodes: &BTreeMap<String, String>, pods: &BTreeMap<String, String>) -> Observation {
        let page = |items: &BTreeMap<String, String>| {
            format!(
                r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{}]}}"#,
                items.values().cloned().collect::<Vec<_>>().join(",")
            )
        };
        let mut f = Fold::default();
        f.nodes(decode_page::<NodeItem>(page(nodes).as_bytes()).expect("nodes").items);
        f.pods(decode_page::<PodItem>(page(pods).as_bytes()).expect("pods").items);
        f.finish()
    }

    fn event<T: Watched>(kind: &str, object: &str) -> WatchEvent<T> {
        decode_event::<T>(format!(r#"{{"type":"{kind}","object":{object}}}"#).as_bytes()).expect("event")
    }

    #[test]
    fn the_watched_cache_equals_a_fresh_list_after_any_sequence_of_events() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            seed >> 20
        };
        let (mut nodes, mut pods) = (BTreeMap::new(), BTreeMap::new());
        let mut cache = WatchCache::default();
        let (mut rv, mut seen, mut applied) = (1u64, String::new(), 0u64);
        let mut relists = 0;
        for step in 0..2000 {
            rv += 1;
            let r = next();
            match r % 10 {
                0..=4 => {
                    let name = format!("p{}", next() % 40);
                    let kind = if pods.contains_key(&name) { "MODIFIED" } else { "ADDED" };
                    let json = pod_json(next(), &name, rv);
                    pods.insert(name, json.clone());
                    apply_events::<PodItem>(&mut cache, vec![event(kind, &json)], &mut seen, &mut applied);
                }
                5 | 6 => {
                    let Some(name) = pods.keys().nth((next() % 40) as usize % pods.len().max(1)).cloned() else {
                        continue;
                    };
                    let json = pods.remove(&name).expect("present");
                    apply_events::<PodItem>(&mut cache, vec![event("DELETED", &json)], &mut seen, &mut applied);
                }
                7 => {
                    let name = format!("n{}", 1 + next() % 3);
                    let json = node_json(next(), &name, rv);
                    nodes.insert(name, json.clone());
                    apply_events::<NodeItem>(&mut cache, vec![event("MODIFIED", &json)], &mut seen, &mut applied);
                }
                8 => {
                    let name = format!("n{}", 1 + next() % 3);
                    if let Some(json) = nodes.remove(&name) {
                        apply_events::<NodeItem>(&mut cache, vec![event("DELETED", &json)], &mut seen, &mut applied);
                    }
                }
                _ => {
                    // A bookmark, or (one time in four) 410 Gone: events were missed (a pod
                    // changes unseen), then the relist replaces the pods.
                    let b = format!(r#"{{"metadata":{{"resourceVersion":"{rv}"}}}}"#);
                    let mut evs = vec![event::<PodItem>("BOOKMARK", &b)];
                    if next().is_multiple_of(4) {
                        let unseen = format!("unseen-{step}");
                        pods.insert(unseen.clone(), pod_json(next(), &unseen, rv));
                        evs.push(event(
                            "ERROR",
                            r#"{"kind":"Status","code":410,"reason":"Expired","message":"too old"}"#,
                        ));
                        let gone = apply_events::<PodItem>(&mut cache, evs, &mut seen, &mut applied);
                        assert_eq!(gone.and_then(|s| s.code), Some(410));
                        assert_ne!(cache.observation(), fresh(&nodes, &pods), "step {step}: the missed event shows");
                        let page = format!(r#"{{"items":[{}]}}"#, pods.values().cloned().collect::<Vec<_>>().join(","));
                        let mut part = PodCache::default();
                        part.add(decode_page::<PodItem>(page.as_bytes()).expect("page").items);
                        PodItem::replace(&mut cache, part);
                        relists += 1;
                    } else {
                        assert!(apply_events(&mut cache, evs, &mut seen, &mut applied).is_none());
                    }
                    assert_eq!(seen, rv.to_string());
                }
            }
            assert_eq!(cache.observation(), fresh(&nodes, &pods), "step {step}");
        }
        assert!(relists > 5 && applied > 1000, "{relists} relists, {applied} events");
        let o = cache.observation();
        assert!(o.pods.bound > 0 && o.pods.unbound > 0 && !o.pods.unschedulable.is_empty(), "{o:?}");
    }

    #[test]
    fn events_decode_in_any_field_order_and_errors_name_the_event() {
        let e =
            decode_event::<PodItem>(br#"{"object":{"metadata":{"name":"a","resourceVersion":"5"}},"type":"ADDED"}"#)
                .expect("object first");
        assert!(matches!(e, WatchEvent::Added(p) if p.metadata.name == "a" && p.resource_version() == Some("5")));
        let e =
            decode_event::<NodeItem>(br#"{"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410}}"#)
                .expect("error");
        assert!(matches!(e, WatchEvent::Error(s) if s.code == Some(410)));
        assert!(decode_event::<PodItem>(br#"{"type":"SOMETHING","object":{}}"#).is_err());
        assert!(decode_event::<PodItem>(br#"{"type":"ADDED","object":{"spec":{"containers":3}}}"#).is_err());
    }

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        let poll = PollSection { max_backoff: Duration::from_secs(60), ..Default::default() };
        let mut p = Poller::new(poll, Duration::from_secs(10));
        for (n, lo, hi) in [(1, 5, 10), (2, 10, 20), (3, 20, 40), (10, 30, 60)] {
            let d = p.backoff("m", n);
            assert!(d >= Duration::from_secs(lo) && d <= Duration::from_secs(hi), "{n}: {d:?}");
        }
    }
}
