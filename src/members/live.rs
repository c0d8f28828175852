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

use super::decode::{Fold, NodeItem, PodItem, decode_page};
use crate::config::{ClusterAccess, Config, PollSection};
use crate::model::{Health, NodeView, PodFacts, PollFacts, ResourceList};
use crate::policy::{ClusterObject, PolicySet};

/// How often a list restarts after its continue token expired (410 Gone) before giving up.
pub const MAX_RESTARTS: u32 = 3;
/// Largest response body accepted for one page.
pub const MAX_PAGE_BYTES: usize = 64 << 20;

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
    /// Nodes with the requests of their pods.
    pub nodes: Vec<NodeView>,
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
    endpoint: String,
}

/// The poller: one kube client per cluster, kept between rounds, and the per-cluster state.
pub struct Poller {
    poll: PollSection,
    interval: Duration,
    clients: BTreeMap<String, Built>,
    next_attempt: BTreeMap<String, Instant>,
    view: LiveView,
    seed: u64,
}

impl Poller {
    /// A poller; `interval` is the poll interval (the base of the backoff).
    pub fn new(poll: PollSection, interval: Duration) -> Poller {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x5eed);
        Poller {
            poll,
            interval,
            clients: BTreeMap::new(),
            next_attempt: BTreeMap::new(),
            view: LiveView::default(),
            seed,
        }
    }

    /// Changes the settings (after a configuration reload).
    pub fn reconfigure(&mut self, poll: PollSection, interval: Duration) {
        if poll != self.poll {
            self.clients.clear();
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
    pub async fn round(&mut self, targets: &[Target]) -> RoundReport {
        let mut report = RoundReport::default();
        let names: std::collections::BTreeSet<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        let before = self.view.clusters.len();
        self.view.clusters.retain(|k, _| names.contains(k.as_str()));
        self.clients.retain(|k, _| names.contains(k.as_str()));
        self.next_attempt.retain(|k, _| names.contains(k.as_str()));
        report.changed |= before != self.view.clusters.len();

        let now = Instant::now();
        let mut jobs = Vec::new();
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
            let built = self.clients.remove(&t.name).filter(|b| b.target == *t);
            jobs.push((t.clone(), built));
        }
        let poll = self.poll.clone();
        let results: Vec<(Target, Option<Built>, Result<LiveData, PollError>)> = futures_util::stream::iter(jobs)
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

    /// `interval × 2^(failures−1)`, capped at `poll.max_backoff`, times a jitter in [0.5, 1].
    fn backoff(&mut self, name: &str, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(16);
        let base = self.interval.saturating_mul(1u32 << exp).min(self.poll.max_backoff);
        self.seed = self.seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let r = crate::model::fnv1a64(format!("{name}{}", self.seed).as_bytes());
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

async fn poll_one(
    t: &Target,
    built: Option<Built>,
    poll: &PollSection,
) -> (Option<Built>, Result<LiveData, PollError>) {
    let started = Instant::now();
    // The deadline covers building the client too (an exec credential plugin may hang).
    let attempt = async {
        let built = match built {
            Some(b) => b,
            None => build(t, poll).await.map_err(|e| (None, e))?,
        };
        match list_cluster(&built.client, poll.page_size).await {
            Ok(r) => Ok((built, r)),
            Err(e) => Err((Some(built), e)),
        }
    };
    let (built, result) = match tokio::time::timeout(poll.timeout, attempt).await {
        Ok(Ok((built, (fold, pages)))) => {
            let obs = fold.finish();
            let poll_facts = PollFacts {
                duration_ms: started.elapsed().as_millis() as u64,
                pages,
                nodes: obs.nodes.len() as u32,
                pods: obs.listed_pods,
                at_ms: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis() as u64)
                    .unwrap_or(0),
            };
            (Some(built), Ok(LiveData { nodes: obs.nodes, unbound: obs.unbound, pods: obs.pods, poll: poll_facts }))
        }
        Ok(Err((built, e))) => (built, Err(e)),
        Err(_) => (None, Err(PollError::Deadline(poll.timeout))),
    };
    // A client whose connection misbehaved is rebuilt next time (fresh connections).
    let keep = matches!(&result, Ok(_) | Err(PollError::Forbidden { .. }) | Err(PollError::Http { .. }));
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
    let client = kube::Client::try_from(cfg).map_err(|e| access(format!("client: {}", chain(&e))))?;
    Ok(Built { target: t.clone(), client, endpoint })
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
    let node_pages = list_all::<NodeItem>(client, "/api/v1/nodes", "nodes", page_size, &mut fold).await?;
    let pod_pages = list_all::<PodItem>(client, "/api/v1/pods", "pods", page_size, &mut fold).await?;
    Ok((fold, node_pages + pod_pages))
}

trait Listed: serde::de::DeserializeOwned {
    fn add(fold: &mut Fold, items: Vec<Self>);
    fn reset(fold: &mut Fold);
}

impl Listed for NodeItem {
    fn add(fold: &mut Fold, items: Vec<Self>) {
        fold.nodes(items)
    }
    fn reset(fold: &mut Fold) {
        fold.reset_nodes()
    }
}

impl Listed for PodItem {
    fn add(fold: &mut Fold, items: Vec<Self>) {
        fold.pods(items)
    }
    fn reset(fold: &mut Fold) {
        fold.reset_pods()
    }
}

async fn list_all<T: Listed>(
    client: &kube::Client,
    path: &str,
    what: &'static str,
    page_size: u32,
    fold: &mut Fold,
) -> Result<u32, PollError> {
    let mut token: Option<String> = None;
    let mut restarts = 0;
    let mut pages = 0;
    loop {
        let mut url = format!("{path}?limit={page_size}");
        if let Some(t) = &token {
            url.push_str("&continue=");
            url.push_str(&crate::api::client::segment(t));
        }
        match get(client, &url, what).await {
            Ok(bytes) => {
                let page = decode_page::<T>(&bytes).map_err(|e| PollError::Decode { what, message: e.to_string() })?;
                pages += 1;
                T::add(fold, page.items);
                match page.metadata.next() {
                    Some(t) => token = Some(t.to_string()),
                    None => return Ok(pages),
                }
            }
            Err(Got::Gone(message)) if token.is_some() => {
                restarts += 1;
                if restarts > MAX_RESTARTS {
                    return Err(PollError::Gone { what, restarts: restarts - 1 });
                }
                tracing::debug!(what, %message, restarts, "continue token expired; restarting the list");
                token = None;
                T::reset(fold);
            }
            Err(Got::Gone(message)) => return Err(PollError::Http { status: 410, what, message }),
            Err(Got::Failed(e)) => return Err(e),
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
    let message = status_message(&body);
    Err(match status.as_u16() {
        410 => Got::Gone(message),
        s @ (401 | 403) => Got::Failed(PollError::Forbidden { status: s, what, message }),
        s => Got::Failed(PollError::Http { status: s, what, message }),
    })
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
        assert_eq!(crate::api::client::segment("a+b/c=="), "a%2Bb%2Fc%3D%3D");
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
