//! The simulator's HTTP(S) server: the Kubernetes API shapes a poller, kubectl and client
//! libraries use, per cluster under `/clusters/<name>`, with bearer-token auth and faults.
//!
//! Served (GET): `/version`, the discovery documents (`/api`, `/apis` — aggregated when the
//! `Accept` asks for `as=APIGroupDiscoveryList`, unless the cluster's `legacyDiscovery` —,
//! `/api/<v>`, `/apis/<g>/<v>`: the APIs of the cluster's Cluster object's
//! `status.apiEnablements`, or the standard list), `/api/v1/nodes[/{name}]`,
//! `/api/v1/pods`, `/api/v1/namespaces/{ns}/pods[/{name}]`. Lists honour `limit` and
//! `continue` (an opaque offset token), return `resourceVersion` (and accept it as a
//! parameter), and filter by `fieldSelector` (`spec.nodeName`, `status.phase`,
//! `metadata.name`, `metadata.namespace`; `=`, `==`, `!=`) and `labelSelector` (`k=v`,
//! `k!=v`, `k`, `!k`). Watches (`?watch=1`) of nodes and pods are streamed by
//! [`super::watch`]; of anything else, answered 405.
//!
//! Admin (bearer: the admin token): `GET|PUT /admin/clusters/{name}/fault` reads or sets the
//! cluster's [`Fault`]; `PUT|PATCH|DELETE /admin/clusters/{name}/nodes/{node}` and
//! `…/namespaces/{ns}/pods/{pod}` edit one object (with its watch event);
//! `POST /admin/clusters/{name}/watches/close|compact`; `PUT /admin/clusters/{name}/apis`
//! (the APIs it serves, as `status.apiEnablements`); `PUT|DELETE
//! /admin/clusters/{name}/leases/fault` and `GET /admin/leases` ([`super::lease`]); `POST /admin/apply` runs the GitOps
//! agent now; `POST /admin/connections/freeze` stops every HTTPS connection open now for good
//! (it neither reads nor writes again); `POST /admin/connections/stop` freezes those and every
//! later one (a SIGSTOPped server); `POST /admin/connections/goaway` shuts every HTTPS
//! connection open now down gracefully (HTTP/2's GOAWAY: its streams go on, no new one); `GET /admin/stats` (with `objectReads`: the workload objects read, by cluster; `agentReads`: the GitOps agent objects read; `otherReads`: other kinds' namespaced objects read, by path; `getBytes`: the GET responses' body bytes, by cluster; `watchBytes`: the watch streams' bytes) and `PUT /admin/clusters/{name}/agent` (`{"kind": "Kustomization", "namespace": "flux-system", "name": "apps", "paused": false}`: serve that Flux `Kustomization` or Argo CD `Application` with the revision of the member's directory the agent applied and the health of what it applied, [`super::apply::agent_object`]; paused, the agent applies nothing new) and `GET /admin/requests`. The member's own troubles:
//! `PUT /admin/clusters/{name}/nodes/{node}/ready` (`{"ready": false}`: the node and its pods
//! NotReady; `true`: back), `PUT …/nodes/{node}/allocatable` (`{"cpu": "2"}`: the node
//! shrinks, the agent's pods that no longer fit are placed again), `PUT|DELETE
//! /admin/clusters/{name}/outage` (`{"mode": "refused"}`: every connection is closed unanswered;
//! `"hung"`: never answered; DELETE: back, every fault cleared), `PUT
//! /admin/clusters/{name}/images` (`{"crash": ["web:2"], "neverReady": [...]}`: the pods of
//! those images crash in a loop, or never turn Ready, there: a bad version on chosen members).
//!
//! Layout: [`handle`] routes; `cluster_api` authenticates, applies the faults
//! (`injected_fault` before, `damage` after) and serves a watch or a GET (`api`:
//! `discovery`, `list`, `get`); `admin` serves object edits (`edit_object`) and the other
//! admin endpoints (`admin_rest`, one function each).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::fleet::{FleetCluster, sort_objects};
use super::watch::{ChannelBody, Resource, WatchLog, WatchRequest};

/// Faults injected into one cluster's responses, switchable at run time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    /// Delay before every response, milliseconds.
    pub latency_ms: u64,
    /// Answer every request with this status (`500`, `503`, `403`…).
    pub status: Option<u16>,
    /// Never answer (the client's read timeout must fire).
    pub timeout: bool,
    /// Close the connection without a response.
    pub reset: bool,
    /// Cut the body of successful responses in half.
    pub truncate: bool,
    /// Answer successful requests with a body that is not JSON.
    pub invalid_json: bool,
    /// Answer every request that carries a continue token with 410 Gone, and every watch
    /// with a 410 `ERROR` event (so a watcher's relist meets the expired continue tokens).
    pub gone_on_continue: bool,
    /// Answer the discovery documents (`/api`, `/apis`, `/api/<v>`, `/apis/<g>/<v>`) only
    /// with this status; everything else is served.
    pub discovery_status: Option<u16>,
    /// Serve `/api` and `/apis` in the plain form only, whatever the client accepts (an API
    /// server before Kubernetes 1.26): the client reads each group version's list.
    pub legacy_discovery: bool,
}

/// One served cluster.
#[derive(Debug)]
pub struct Served {
    /// Its objects.
    pub fleet: FleetCluster,
    /// Its bearer token.
    pub token: String,
    /// Its resource version and window of watch events.
    pub log: WatchLog,
    /// Its faults.
    pub fault: Fault,
    /// The APIs it serves, by group version ([`super::fleet::served_apis`]).
    pub apis: BTreeMap<String, Vec<(String, String)>>,
    /// Images whose pods go bad here (`PUT /admin/clusters/{name}/images`).
    pub bad_images: super::apply::BadImages,
    /// The GitOps agent object served here, if any (`PUT /admin/clusters/{name}/agent`).
    pub gitops: Option<super::apply::GitOpsAgent>,
    /// The revision of its directory the agent applied last, and the latest it saw
    /// ([`super::apply::revision`]; the same unless the agent is paused).
    pub revisions: (String, String),
}

impl Served {
    /// A served cluster: its objects, token and watch log; the APIs of its Cluster object.
    pub fn new(fleet: FleetCluster, token: String, log: WatchLog) -> Served {
        let apis = super::fleet::served_apis(&fleet.cluster);
        Served {
            fleet,
            token,
            log,
            fault: Fault::default(),
            apis,
            bad_images: Default::default(),
            gitops: None,
            revisions: Default::default(),
        }
    }
}

/// Most distinct paths of [`State::other_reads`] kept per cluster.
pub const MAX_OTHER_PATHS: usize = 100;

/// Everything the server shares between connections.
#[derive(Debug)]
pub struct State {
    /// By cluster name.
    pub clusters: RwLock<BTreeMap<String, Served>>,
    /// Bearer token of the admin endpoints.
    pub admin_token: String,
    /// Requests served, by cluster (for tests and curiosity).
    pub requests: RwLock<BTreeMap<String, u64>>,
    /// Discovery documents requested, by cluster.
    pub discovery_requests: RwLock<BTreeMap<String, u64>>,
    /// Workload objects (`/apis/apps/v1/namespaces/…`) requested, by cluster.
    pub object_reads: RwLock<BTreeMap<String, u64>>,
    /// GitOps agent objects (Flux `Kustomization`, Argo CD `Application`) requested, by cluster.
    pub agent_reads: RwLock<BTreeMap<String, u64>>,
    /// Other kinds' namespaced objects (`/apis/<group>/<version>/namespaces/<ns>/<resource>/<name>`)
    /// requested, by cluster and path (at most [`MAX_OTHER_PATHS`] paths a cluster): the path a
    /// client read a custom kind's object at.
    pub other_reads: RwLock<BTreeMap<String, BTreeMap<String, u64>>>,
    /// Bytes of the bodies of the GET responses (not watches) to authenticated cluster
    /// requests, by cluster.
    pub get_bytes: RwLock<BTreeMap<String, u64>>,
    /// Bytes of every watch stream's lines sent (every cluster).
    pub watch_bytes: Arc<AtomicU64>,
    /// Every `User-Agent` seen on an authenticated cluster request ("" for none).
    pub user_agents: RwLock<std::collections::BTreeSet<String>>,
    /// Runs the GitOps agent (set when `--apply` is given).
    pub apply_now: Option<tokio::sync::mpsc::Sender<()>>,
    /// Watch events produced (every cluster).
    pub events: Arc<AtomicU64>,
    /// Watch streams open now.
    pub open_watches: Arc<AtomicU64>,
    /// HTTPS connections, by protocol.
    pub connections: Arc<Connections>,
    /// HTTP/2 streams one connection may carry at once (None: hyper's default).
    pub max_concurrent_streams: Option<u32>,
    /// How the GitOps agent behaves (its Ready delay).
    pub agent: super::apply::Agent,
    /// `coordination.k8s.io/v1` Leases of every cluster (leader election's host API).
    pub leases: super::lease::Leases,
}

/// HTTPS connections served: accepted (TLS handshake done) and open now, by the protocol
/// ALPN chose (`h2`, or HTTP/1.1); and which of them are frozen
/// (`POST /admin/connections/freeze`).
#[derive(Debug, Default)]
pub struct Connections {
    accepted: [AtomicU64; 2],
    open: [AtomicU64; 2],
    /// Connections accepted so far: the next one's serial number.
    serials: AtomicU64,
    /// Connections whose serial number is below this neither read nor write any more.
    frozen_below: AtomicU64,
    /// Bumped by `POST /admin/connections/goaway`: every connection open then shuts down
    /// gracefully.
    goaway: tokio::sync::watch::Sender<u64>,
}

/// One open connection of [`Connections`]; closed when dropped.
pub struct Open<'a>(&'a Connections, usize);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.open[self.1].fetch_sub(1, Ordering::Relaxed);
    }
}

impl Connections {
    /// Counts a connection that completed its TLS handshake, open until the guard drops.
    pub fn opened(&self, h2: bool) -> Open<'_> {
        let i = usize::from(h2);
        self.accepted[i].fetch_add(1, Ordering::Relaxed);
        self.open[i].fetch_add(1, Ordering::Relaxed);
        Open(self, i)
    }

    /// The serial number of a connection just accepted.
    pub fn serial(&self) -> u64 {
        self.serials.fetch_add(1, Ordering::Relaxed)
    }

    /// What tells a connection just accepted to shut down gracefully (GOAWAY in HTTP/2): a
    /// change after this call.
    pub fn goaway(&self) -> tokio::sync::watch::Receiver<u64> {
        self.goaway.subscribe()
    }

    /// Tells every open connection to shut down gracefully; returns how many were told.
    fn send_goaway(&self) -> usize {
        self.goaway.send_modify(|n| *n += 1);
        self.goaway.receiver_count()
    }

    /// Whether the connection with this serial number is frozen.
    pub fn frozen(&self, serial: u64) -> bool {
        serial < self.frozen_below.load(Ordering::Relaxed)
    }

    /// Freezes every connection accepted so far, for good: each stops reading and writing,
    /// as a peer that hangs with its connections open (the kernel still acknowledges what the
    /// client sends). Later connections are served.
    fn freeze(&self) -> u64 {
        let n = self.serials.load(Ordering::Relaxed);
        self.frozen_below.fetch_max(n, Ordering::Relaxed);
        n
    }

    /// Freezes every connection, those accepted later too (their TLS handshake never ends):
    /// an API server stopped with SIGSTOP, whose kernel still accepts connections and
    /// acknowledges what the client sends.
    fn stop(&self) {
        self.frozen_below.store(u64::MAX, Ordering::Relaxed);
    }

    /// `{"accepted": {"http/1.1": n, "h2": n}, "open": {…}}`.
    fn stats(&self) -> Value {
        let by =
            |c: &[AtomicU64; 2]| json!({"http/1.1": c[0].load(Ordering::Relaxed), "h2": c[1].load(Ordering::Relaxed)});
        json!({"accepted": by(&self.accepted), "open": by(&self.open)})
    }
}

/// A request the service drops without a response (the `reset` fault).
#[derive(Debug, thiserror::Error)]
#[error("connection reset by fault injection")]
pub struct Reset;

/// A response: a whole body, or a watch stream.
pub type Resp = Response<BoxBody<Bytes, std::convert::Infallible>>;

pub(super) fn respond(code: StatusCode, body: Vec<u8>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = code;
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    r
}

pub(super) fn status(code: StatusCode, reason: &str, message: &str) -> Resp {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    respond(code, body.to_string().into_bytes())
}

pub(super) fn ok(v: &Value) -> Resp {
    respond(StatusCode::OK, serde_json::to_vec(v).unwrap_or_default())
}

fn bearer(req: &Request<Incoming>) -> Option<&str> {
    req.headers().get(hyper::header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ")
}

/// Constant-time comparison of tokens.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves one request: the router. `/healthz`, `/admin/…` (`admin`) and the per-cluster API
/// under `/clusters/<name>/…` (`cluster_api`).
pub async fn handle(state: Arc<State>, req: Request<Incoming>, server: String) -> Result<Resp, Reset> {
    let path = req.uri().path().to_string();
    if path == "/healthz" {
        return Ok(respond(StatusCode::OK, b"ok".to_vec()));
    }
    if let Some(rest) = path.strip_prefix("/admin/") {
        return Ok(admin(&state, req, rest).await);
    }
    let Some(rest) = path.strip_prefix("/clusters/") else {
        return Ok(status(StatusCode::NOT_FOUND, "NotFound", "the server could not find the requested resource"));
    };
    let (cluster, api_path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if let Some(rest) = api_path.strip_prefix("/apis/coordination.k8s.io/v1/") {
        let segs: Vec<String> = rest.split('/').filter(|s| !s.is_empty()).map(str::to_string).collect();
        return lease_api(&state, req, cluster, &segs).await;
    }
    cluster_api(&state, &req, cluster, api_path, &server).await
}

/// One request to a cluster's Leases ([`super::lease`]): authentication, the lease fault (not
/// the member's), then the lease endpoints.
async fn lease_api(state: &Arc<State>, req: Request<Incoming>, cluster: &str, segs: &[String]) -> Result<Resp, Reset> {
    if let Err(resp) = authenticate(state, &req, cluster) {
        return Ok(*resp);
    }
    let query = parse_query(req.uri().query().unwrap_or(""));
    if let Some(resp) = injected_fault(&state.leases.fault(cluster), cluster, &query).await? {
        return Ok(resp);
    }
    let method = req.method().clone();
    let body = match Limited::new(req.into_body(), 1 << 20).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return Ok(status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string())),
    };
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    Ok(state.leases.serve(&method, &segs, &body))
}

/// One request to a simulated cluster's API: authentication, the cluster's faults, then a
/// watch stream ([`watch`]) or a GET ([`api`]), damaged when the fault says so.
async fn cluster_api(
    state: &Arc<State>,
    req: &Request<Incoming>,
    cluster: &str,
    api_path: &str,
    server: &str,
) -> Result<Resp, Reset> {
    let query = parse_query(req.uri().query().unwrap_or(""));
    let fault = match authenticate(state, req, cluster) {
        Ok(fault) => fault,
        Err(resp) => return Ok(*resp),
    };
    *state.requests.write().unwrap_or_else(|p| p.into_inner()).entry(cluster.to_string()).or_insert(0) += 1;
    let agent = req.headers().get(hyper::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    state.user_agents.write().unwrap_or_else(|p| p.into_inner()).insert(agent.to_string());
    if let Some(resp) = injected_fault(&fault, cluster, &query).await? {
        return Ok(resp);
    }
    if req.method() != Method::GET {
        return Ok(status(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "the simulator only serves GET"));
    }
    if is_discovery(api_path) {
        *state.discovery_requests.write().unwrap_or_else(|p| p.into_inner()).entry(cluster.to_string()).or_insert(0) +=
            1;
        if let Some(code) = fault.discovery_status {
            let code = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            return Ok(status(code, "ServiceUnavailable", &format!("injected discovery fault on cluster {cluster}")));
        }
    }
    if query.get("watch").is_some_and(|w| w == "true" || w == "1") {
        return Ok(watch(state, cluster, api_path, &query, &fault));
    }
    if api_path.starts_with("/apis/apps/v1/namespaces/") {
        *state.object_reads.write().unwrap_or_else(|p| p.into_inner()).entry(cluster.to_string()).or_insert(0) += 1;
    }
    if api_path.starts_with("/apis/kustomize.toolkit.fluxcd.io/") || api_path.starts_with("/apis/argoproj.io/") {
        *state.agent_reads.write().unwrap_or_else(|p| p.into_inner()).entry(cluster.to_string()).or_insert(0) += 1;
    } else if api_path.starts_with("/apis/")
        && !api_path.starts_with("/apis/apps/v1/")
        && api_path.split('/').filter(|s| !s.is_empty()).nth(3) == Some("namespaces")
    {
        let mut reads = state.other_reads.write().unwrap_or_else(|p| p.into_inner());
        let paths = reads.entry(cluster.to_string()).or_default();
        if paths.len() < MAX_OTHER_PATHS || paths.contains_key(api_path) {
            *paths.entry(api_path.to_string()).or_insert(0) += 1;
        }
    }
    let accept = req.headers().get(hyper::header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let aggregated = !fault.legacy_discovery && accept.contains("as=APIGroupDiscoveryList");
    let resp = {
        let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
        match clusters.get(cluster) {
            Some(c) => api(c, api_path, &query, server, cluster, aggregated),
            None => status(StatusCode::NOT_FOUND, "NotFound", "cluster removed"),
        }
    };
    if let Some(n) = hyper::body::Body::size_hint(resp.body()).exact() {
        *state.get_bytes.write().unwrap_or_else(|p| p.into_inner()).entry(cluster.to_string()).or_insert(0) += n;
    }
    Ok(damage(resp, &fault).await)
}

/// The cluster's faults, if it exists and the request carries its bearer token; otherwise the
/// 404 or 401 response.
fn authenticate(state: &State, req: &Request<Incoming>, cluster: &str) -> Result<Fault, Box<Resp>> {
    let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
    let Some(c) = clusters.get(cluster) else {
        return Err(Box::new(status(StatusCode::NOT_FOUND, "NotFound", &format!("no simulated cluster {cluster:?}"))));
    };
    if !bearer(req).is_some_and(|t| same(t, &c.token)) {
        return Err(Box::new(status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized")));
    }
    Ok(c.fault.clone())
}

/// The faults that act before the request is served: latency, timeout (never answer), reset
/// (`Err`), an injected status, 410 on continue tokens. `Some` is the response to send instead.
async fn injected_fault(fault: &Fault, cluster: &str, query: &BTreeMap<String, String>) -> Result<Option<Resp>, Reset> {
    if fault.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(fault.latency_ms)).await;
    }
    if fault.timeout {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    if fault.reset {
        return Err(Reset);
    }
    if let Some(code) = fault.status {
        let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let reason = match code.as_u16() {
            403 => "Forbidden",
            401 => "Unauthorized",
            503 => "ServiceUnavailable",
            _ => "InternalError",
        };
        let msg = if code == StatusCode::FORBIDDEN {
            format!(
                "pods is forbidden: User \"system:serviceaccount:fedsched:poller\" cannot list resource \"pods\" in API group \"\" at the cluster scope (cluster {cluster})"
            )
        } else {
            format!("injected fault on cluster {cluster}")
        };
        return Ok(Some(status(code, reason, &msg)));
    }
    if fault.gone_on_continue && query.get("continue").is_some_and(|c| !c.is_empty()) {
        return Ok(Some(status(
            StatusCode::GONE,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        )));
    }
    Ok(None)
}

/// The faults that act on a successful response's body: `truncate` (half of it) and
/// `invalid_json`.
async fn damage(resp: Resp, fault: &Fault) -> Resp {
    if resp.status() != StatusCode::OK || !(fault.truncate || fault.invalid_json) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let body = if fault.invalid_json {
        b"{\"kind\": \"PodList\", \"items\": [<html>oops</html>".to_vec()
    } else {
        bytes[..bytes.len() / 2].to_vec()
    };
    Response::from_parts(parts, Full::new(Bytes::from(body)).boxed())
}

/// Starts a watch stream (`?watch=1`).
fn watch(state: &Arc<State>, cluster: &str, path: &str, q: &BTreeMap<String, String>, fault: &Fault) -> Resp {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (resource, namespace) = match segs.as_slice() {
        ["api", "v1", "nodes"] => (Resource::Nodes, None),
        ["api", "v1", "pods"] => (Resource::Pods, None),
        ["api", "v1", "namespaces", ns, "pods"] => (Resource::Pods, Some(ns.to_string())),
        _ => return status(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "watch is served for nodes and pods"),
    };
    let from = match q.get("resourceVersion").filter(|v| !v.is_empty()).map(|v| v.parse::<u64>()) {
        None => None,
        Some(Ok(v)) => Some(v),
        Some(Err(_)) => return status(StatusCode::BAD_REQUEST, "BadRequest", "resourceVersion: invalid value"),
    };
    let timeout = match q.get("timeoutSeconds").map(|t| t.parse::<u64>()) {
        None => super::watch::MAX_TIMEOUT,
        Some(Ok(t)) => Duration::from_secs(t).min(super::watch::MAX_TIMEOUT),
        Some(Err(_)) => return status(StatusCode::BAD_REQUEST, "BadRequest", "timeoutSeconds: invalid value"),
    };
    let w = WatchRequest {
        cluster: cluster.to_string(),
        resource,
        namespace,
        from,
        bookmarks: q.get("allowWatchBookmarks").is_some_and(|b| b == "true" || b == "1"),
        timeout,
        damaged: if fault.truncate {
            Some(true)
        } else if fault.invalid_json {
            Some(false)
        } else {
            None
        },
        gone: fault.gone_on_continue,
    };
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(super::watch::stream(Arc::clone(state), w, tx));
    let mut r = Response::new(BoxBody::new(ChannelBody(rx, Arc::clone(&state.watch_bytes))));
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    r
}

/// A GET of the cluster's API: discovery ([`discovery`]), then nodes and pods (lists and
/// single objects), and the Deployments or StatefulSets the agent applied (`--apply`), with
/// their status ([`super::apply::workload_object`]): one, or a namespace's list of them.
fn api(c: &Served, path: &str, q: &BTreeMap<String, String>, server: &str, name: &str, aggregated: bool) -> Resp {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["api", "v1", "nodes"] => list(c, "NodeList", &c.fleet.nodes, None, q, name),
        ["api", "v1", "nodes", n] => get(&c.fleet.nodes, None, n, "nodes"),
        ["api", "v1", "pods"] => list(c, "PodList", &c.fleet.pods, None, q, name),
        ["api", "v1", "namespaces", ns, "pods"] => list(c, "PodList", &c.fleet.pods, Some(ns), q, name),
        ["api", "v1", "namespaces", ns, "pods", n] => get(&c.fleet.pods, Some(ns), n, "pods"),
        ["apis", "apps", "v1", "namespaces", ns, plural @ ("deployments" | "statefulsets")] => {
            let kind = if *plural == "deployments" { "Deployment" } else { "StatefulSet" };
            let prefix = format!("{kind}/{ns}/");
            let items: Vec<Value> = c
                .fleet
                .workloads
                .keys()
                .filter(|w| w.starts_with(&prefix))
                .filter_map(|w| super::apply::workload_object(&c.fleet, w))
                .collect();
            list(c, &format!("{kind}List"), &items, Some(ns), q, name)
        }
        ["apis", "apps", "v1", "namespaces", ns, plural @ ("deployments" | "statefulsets"), n] => {
            let kind = if *plural == "deployments" { "Deployment" } else { "StatefulSet" };
            match super::apply::workload_object(&c.fleet, &format!("{kind}/{ns}/{n}")) {
                Some(o) => ok(&o),
                None => status(StatusCode::NOT_FOUND, "NotFound", &format!("{plural} \"{n}\" not found")),
            }
        }
        ["apis", "kustomize.toolkit.fluxcd.io", "v1", "namespaces", ns, "kustomizations", n]
        | ["apis", "argoproj.io", "v1alpha1", "namespaces", ns, "applications", n] => {
            let kind = if path.contains("/kustomizations/") { "Kustomization" } else { "Application" };
            match &c.gitops {
                Some(a) if a.kind == kind && a.namespace == *ns && a.name == *n => {
                    ok(&super::apply::agent_object(&c.fleet, a, &c.revisions.0, &c.revisions.1))
                }
                _ => status(StatusCode::NOT_FOUND, "NotFound", &format!("{kind} \"{n}\" not found")),
            }
        }
        segs => discovery(c, segs, server, aggregated).unwrap_or_else(|| {
            status(StatusCode::NOT_FOUND, "NotFound", "the server could not find the requested resource")
        }),
    }
}

/// Whether resources of `kind` are cluster-scoped (for the discovery documents).
fn cluster_scoped(kind: &str) -> bool {
    matches!(
        kind,
        "Node"
            | "Namespace"
            | "PersistentVolume"
            | "CustomResourceDefinition"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "StorageClass"
            | "IngressClass"
    )
}

/// The aggregated `/api` (`core`) or `/apis` document (`APIGroupDiscoveryList`, v2).
fn aggregated_discovery(c: &Served, core: bool) -> Resp {
    let mut groups: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (gv, resources) in &c.apis {
        let (group, version) = gv.split_once('/').unwrap_or(("", gv));
        if group.is_empty() != core {
            continue;
        }
        let resources: Vec<Value> = resources
            .iter()
            .map(|(name, kind)| {
                json!({"resource": name, "responseKind": {"group": group, "version": version, "kind": kind},
                    "scope": if cluster_scoped(kind) { "Cluster" } else { "Namespaced" },
                    "verbs": ["get", "list", "watch"]})
            })
            .collect();
        groups
            .entry(group)
            .or_default()
            .push(json!({"version": version, "resources": resources, "freshness": "Current"}));
    }
    let items: Vec<Value> =
        groups.into_iter().map(|(name, versions)| json!({"metadata": {"name": name}, "versions": versions})).collect();
    let mut r = ok(&json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {}, "items": items}));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
    );
    r
}

/// The discovery documents: `/version`, `/api`, `/apis` (aggregated when the client asks for
/// it and the cluster is not `legacyDiscovery`), `/api/<v>`, `/apis/<g>/<v>`, of the APIs the
/// cluster serves ([`super::fleet::served_apis`]: its Cluster object's
/// `status.apiEnablements`, or the standard list).
fn discovery(c: &Served, segs: &[&str], server: &str, aggregated: bool) -> Option<Resp> {
    let resource_list = |gv: &str| {
        let resources = c.apis.get(gv)?;
        let items: Vec<Value> = resources
            .iter()
            .map(|(name, kind)| {
                json!({"name": name, "singularName": "", "namespaced": !cluster_scoped(kind), "kind": kind,
                    "verbs": ["get", "list", "watch"]})
            })
            .collect();
        Some(ok(&json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items})))
    };
    Some(match segs {
        ["api"] | ["apis"] if aggregated => aggregated_discovery(c, segs == ["api"]),
        ["version"] => ok(&json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-fedsched-sim",
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0", "compiler": "gc", "platform": "linux/amd64"})),
        ["api"] => {
            let versions: Vec<&String> = c.apis.keys().filter(|gv| !gv.contains('/')).collect();
            ok(&json!({"kind": "APIVersions", "versions": versions,
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}]}))
        }
        ["apis"] => {
            let mut groups: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
            for gv in c.apis.keys() {
                if let Some((g, v)) = gv.split_once('/') {
                    groups.entry(g).or_default().push(json!({"groupVersion": gv, "version": v}));
                }
            }
            let groups: Vec<Value> = groups
                .into_iter()
                .map(|(name, versions)| {
                    let preferred = versions.first().cloned().unwrap_or(Value::Null);
                    json!({"name": name, "versions": versions, "preferredVersion": preferred})
                })
                .collect();
            ok(&json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["api", v] => return resource_list(v),
        ["apis", g, v] => return resource_list(&format!("{g}/{v}")),
        _ => return None,
    })
}

/// Whether `path` is a discovery document ([`discovery`]).
fn is_discovery(path: &str) -> bool {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    matches!(segs.as_slice(), ["api"] | ["apis"] | ["api", _] | ["apis", _, _])
}

fn get(items: &[Value], ns: Option<&str>, name: &str, resource: &str) -> Resp {
    let found = items.iter().find(|v| {
        v.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            && ns.is_none_or(|ns| v.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns))
    });
    match found {
        Some(v) => ok(&with_kind(v, resource)),
        None => status(StatusCode::NOT_FOUND, "NotFound", &format!("{resource} \"{name}\" not found")),
    }
}

fn with_kind(v: &Value, resource: &str) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), json!("v1"));
        o.insert("kind".into(), json!(if resource == "nodes" { "Node" } else { "Pod" }));
    }
    v
}

/// A parsed selector requirement: (key, op, value).
type Requirement = (String, &'static str, String);

fn parse_field_selector(s: &str, kind: &str) -> Result<Vec<Requirement>, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (k, op, v) = if let Some((k, v)) = part.split_once("!=") {
            (k, "!=", v)
        } else if let Some((k, v)) = part.split_once("==") {
            (k, "=", v)
        } else if let Some((k, v)) = part.split_once('=') {
            (k, "=", v)
        } else {
            return Err(format!("invalid selector: '{part}'; can't understand '{part}'"));
        };
        let supported: &[&str] = if kind == "PodList" {
            &["spec.nodeName", "status.phase", "metadata.name", "metadata.namespace"]
        } else {
            &["metadata.name", "spec.unschedulable"]
        };
        if !supported.contains(&k) {
            return Err(format!("field label not supported: {k}"));
        }
        out.push((k.to_string(), op, v.to_string()));
    }
    Ok(out)
}

fn field_value(v: &Value, key: &str) -> String {
    let ptr = format!("/{}", key.replace('.', "/"));
    match v.pointer(&ptr) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        None if key == "spec.unschedulable" => "false".into(),
        _ => String::new(),
    }
}

fn parse_label_selector(s: &str) -> Vec<Requirement> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|part| {
            if let Some((k, v)) = part.split_once("!=") {
                (k.trim().to_string(), "!=", v.trim().to_string())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (k.trim().to_string(), "=", v.trim().to_string())
            } else if let Some(k) = part.trim().strip_prefix('!') {
                (k.to_string(), "!exists", String::new())
            } else {
                (part.trim().to_string(), "exists", String::new())
            }
        })
        .collect()
}

fn label_matches(v: &Value, reqs: &[Requirement]) -> bool {
    let labels = v.pointer("/metadata/labels").and_then(Value::as_object);
    reqs.iter().all(|(k, op, val)| {
        let got = labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        match *op {
            "=" => got == Some(val.as_str()),
            "!=" => got != Some(val.as_str()),
            "exists" => got.is_some(),
            _ => got.is_none(),
        }
    })
}

fn list(c: &Served, kind: &str, items: &[Value], ns: Option<&str>, q: &BTreeMap<String, String>, name: &str) -> Resp {
    let fields = match parse_field_selector(q.get("fieldSelector").map(String::as_str).unwrap_or(""), kind) {
        Ok(f) => f,
        Err(m) => return status(StatusCode::BAD_REQUEST, "BadRequest", &m),
    };
    let labels = parse_label_selector(q.get("labelSelector").map(String::as_str).unwrap_or(""));
    let limit: usize = match q.get("limit").map(|l| l.parse::<usize>()) {
        None => 0,
        Some(Ok(l)) => l,
        Some(Err(_)) => return status(StatusCode::BAD_REQUEST, "BadRequest", "limit: invalid value"),
    };
    let offset = match q.get("continue").filter(|c| !c.is_empty()) {
        None => 0,
        Some(token) => match token.strip_prefix(&format!("{name}.")).and_then(|o| o.parse::<usize>().ok()) {
            Some(o) => o,
            None => {
                return status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    "continue key is not valid: not a token of this server",
                );
            }
        },
    };
    let matching: Vec<&Value> = items
        .iter()
        .filter(|v| ns.is_none_or(|ns| v.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)))
        .filter(|v| {
            fields.iter().all(|(k, op, val)| {
                let got = field_value(v, k);
                if *op == "!=" { got != *val } else { got == *val }
            })
        })
        .filter(|v| label_matches(v, &labels))
        .collect();
    let end = if limit == 0 { matching.len() } else { offset.saturating_add(limit).min(matching.len()) };
    let start = offset.min(end);
    let page: Vec<&Value> = matching[start..end].to_vec();
    let mut meta = json!({"resourceVersion": c.log.rv.to_string()});
    if end < matching.len() {
        meta["continue"] = json!(format!("{name}.{end}"));
        meta["remainingItemCount"] = json!(matching.len() - end);
    }
    let body = json!({"kind": kind, "apiVersion": "v1", "metadata": meta, "items": page});
    ok(&body)
}

async fn admin(state: &State, req: Request<Incoming>, rest: &str) -> Resp {
    if !bearer(&req).is_some_and(|t| same(t, &state.admin_token)) {
        return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
    }
    let segs: Vec<String> = rest.split('/').filter(|s| !s.is_empty()).map(str::to_string).collect();
    let method = req.method().clone();
    let object = match segs.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["clusters", c, "nodes", n] => Some((c.to_string(), Resource::Nodes, None, n.to_string())),
        ["clusters", c, "namespaces", ns, "pods", n] => {
            Some((c.to_string(), Resource::Pods, Some(ns.to_string()), n.to_string()))
        }
        _ => None,
    };
    if let Some((cluster, resource, ns, name)) = object {
        let body = match Limited::new(req.into_body(), 4 << 20).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
        };
        return edit_object(state, method, &cluster, resource, ns.as_deref(), &name, &body);
    }
    admin_rest(state, req, segs, method).await
}

/// `PUT` (create or replace), `PATCH` (merge patch) or `DELETE` one node or pod, with its
/// watch event.
fn edit_object(
    state: &State,
    method: Method,
    cluster: &str,
    resource: Resource,
    ns: Option<&str>,
    name: &str,
    body: &[u8],
) -> Resp {
    let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
    let Some(c) = clusters.get_mut(cluster) else {
        return status(StatusCode::NOT_FOUND, "NotFound", "no such cluster");
    };
    let Served { fleet, log, .. } = c;
    let items = match resource {
        Resource::Nodes => &mut fleet.nodes,
        Resource::Pods => &mut fleet.pods,
    };
    let at = items.iter().position(|v| {
        v.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            && ns.is_none_or(|ns| v.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns))
    });
    let parsed = || -> Result<Value, Box<Resp>> {
        serde_json::from_slice(body)
            .map_err(|e| Box::new(status(StatusCode::BAD_REQUEST, "BadRequest", &format!("body: {e}"))))
    };
    let named = |mut v: Value| {
        if !v.is_object() {
            v = json!({});
        }
        v["metadata"]["name"] = json!(name);
        if let Some(ns) = ns {
            v["metadata"]["namespace"] = json!(ns);
        }
        v
    };
    match (method, at) {
        (Method::PUT, at) => {
            let mut v = match parsed() {
                Ok(v) => named(v),
                Err(r) => return *r,
            };
            let kind = if at.is_some() { "MODIFIED" } else { "ADDED" };
            log.record(resource, kind, &mut v);
            match at {
                Some(i) => items[i] = v.clone(),
                None => {
                    items.push(v.clone());
                    sort_objects(items);
                }
            }
            ok(&v)
        }
        (Method::PATCH, Some(i)) => {
            let patch = match parsed() {
                Ok(p) => p,
                Err(r) => return *r,
            };
            let mut v = items[i].clone();
            super::watch::merge_patch(&mut v, &patch);
            let mut v = named(v);
            log.record(resource, "MODIFIED", &mut v);
            items[i] = v.clone();
            ok(&v)
        }
        (Method::DELETE, Some(i)) => {
            let mut v = items.remove(i);
            log.record(resource, "DELETED", &mut v);
            ok(&v)
        }
        (Method::PATCH | Method::DELETE, None) => {
            status(StatusCode::NOT_FOUND, "NotFound", &format!("{name:?} not found"))
        }
        _ => status(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "PUT, PATCH or DELETE"),
    }
}

/// The admin endpoints that are not object edits: faults, the GitOps agent, watches, stats.
async fn admin_rest(state: &State, req: Request<Incoming>, segs: Vec<String>, method: Method) -> Resp {
    match (method, segs.iter().map(String::as_str).collect::<Vec<_>>().as_slice()) {
        (Method::GET, ["clusters", name, "fault"]) => get_fault(state, name),
        (Method::PUT, ["clusters", name, "fault"]) => put_fault(state, req, name).await,
        (Method::POST, ["apply"]) => apply_now(state),
        (Method::POST, ["clusters", name, "watches", action @ ("close" | "compact")]) => {
            watches(state, name, action == &"close")
        }
        (Method::POST, ["connections", "freeze"]) => ok(&json!({"frozen": state.connections.freeze()})),
        (Method::POST, ["connections", "stop"]) => {
            state.connections.stop();
            ok(&json!({"stopped": true}))
        }
        (Method::POST, ["connections", "goaway"]) => ok(&json!({"told": state.connections.send_goaway()})),
        (Method::GET, ["stats"]) => ok(&json!({
            "requests": &*state.requests.read().unwrap_or_else(|p| p.into_inner()),
            "events": state.events.load(Ordering::Relaxed),
            "openWatches": state.open_watches.load(Ordering::Relaxed),
            "connections": state.connections.stats(),
            "userAgents": &*state.user_agents.read().unwrap_or_else(|p| p.into_inner()),
            "discovery": &*state.discovery_requests.read().unwrap_or_else(|p| p.into_inner()),
            "objectReads": &*state.object_reads.read().unwrap_or_else(|p| p.into_inner()),
            "agentReads": &*state.agent_reads.read().unwrap_or_else(|p| p.into_inner()),
            "otherReads": &*state.other_reads.read().unwrap_or_else(|p| p.into_inner()),
            "getBytes": &*state.get_bytes.read().unwrap_or_else(|p| p.into_inner()),
            "watchBytes": state.watch_bytes.load(Ordering::Relaxed),
        })),
        (Method::PUT, ["clusters", name, "nodes", node, what @ ("ready" | "allocatable")]) => {
            let body = match Limited::new(req.into_body(), 64 << 10).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
            };
            node_trouble(state, name, node, what, &body)
        }
        (Method::PUT, ["clusters", name, "outage"]) => outage(state, req, name).await,
        (Method::PUT, ["clusters", name, "images"]) => {
            let body = match Limited::new(req.into_body(), 64 << 10).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
            };
            bad_images(state, name, &body)
        }
        (Method::PUT, ["clusters", name, "agent"]) => {
            let body = match Limited::new(req.into_body(), 64 << 10).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
            };
            let agent: super::apply::GitOpsAgent = match serde_json::from_slice(&body) {
                Ok(a) => a,
                Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("agent: {e}")),
            };
            if !matches!(agent.kind.as_str(), "Kustomization" | "Application") {
                return status(StatusCode::BAD_REQUEST, "BadRequest", "agent: kind is Kustomization or Application");
            }
            let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
            let Some(c) = clusters.get_mut(*name) else { return status(StatusCode::NOT_FOUND, "NotFound", name) };
            c.gitops = Some(agent);
            ok(&json!({"revisions": [c.revisions.0, c.revisions.1]}))
        }
        (Method::PUT, ["clusters", name, "apis"]) => {
            let body = match Limited::new(req.into_body(), 4 << 20).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
            };
            set_apis(state, name, &body)
        }
        (Method::PUT, ["clusters", name, "leases", "fault"]) => {
            let body = match Limited::new(req.into_body(), 64 << 10).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
            };
            match serde_json::from_slice::<Fault>(&body) {
                Ok(fault) => state.leases.set_fault(name, fault),
                Err(e) => status(StatusCode::BAD_REQUEST, "BadRequest", &format!("fault: {e}")),
            }
        }
        (Method::DELETE, ["clusters", name, "leases", "fault"]) => state.leases.set_fault(name, Fault::default()),
        (Method::GET, ["leases"]) => state.leases.list(),
        (Method::DELETE, ["clusters", name, "outage"]) => set_fault(state, name, Fault::default()),
        (Method::GET, ["requests"]) => {
            ok(&serde_json::to_value(&*state.requests.read().unwrap_or_else(|p| p.into_inner())).unwrap_or_default())
        }
        _ => status(StatusCode::NOT_FOUND, "NotFound", "unknown admin endpoint"),
    }
}

/// `PUT /admin/clusters/{name}/images` `{"crash": [images], "neverReady": [images]}`: the pods
/// of those images crash in a loop, or never turn Ready, on this member (those running now
/// and those the agent creates), until another list replaces this one.
fn bad_images(state: &State, name: &str, body: &[u8]) -> Resp {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Body {
        #[serde(default)]
        crash: Vec<String>,
        #[serde(default)]
        never_ready: Vec<String>,
    }
    let b: Body = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("images: {e}")),
    };
    let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
    let Some(c) = clusters.get_mut(name) else { return status(StatusCode::NOT_FOUND, "NotFound", name) };
    c.bad_images =
        b.crash.into_iter().map(|i| (i, true)).chain(b.never_ready.into_iter().map(|i| (i, false))).collect();
    let before = c.fleet.pods.clone();
    let marked = super::apply::mark_bad_images(&mut c.fleet, &c.bad_images, crate::util::clock::now_ms());
    if marked > 0 {
        super::record_changes(&mut c.log, Resource::Pods, &before, &mut c.fleet.pods);
    }
    ok(&json!({"marked": marked}))
}

/// `GET /admin/clusters/{name}/fault`.
fn get_fault(state: &State, name: &str) -> Resp {
    let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
    match clusters.get(name) {
        Some(c) => ok(&serde_json::to_value(&c.fault).unwrap_or_default()),
        None => status(StatusCode::NOT_FOUND, "NotFound", "no such cluster"),
    }
}

/// `PUT /admin/clusters/{name}/fault`: sets the cluster's faults and closes its watch streams.
async fn put_fault(state: &State, req: Request<Incoming>, name: &str) -> Resp {
    let body = match Limited::new(req.into_body(), 64 << 10).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
    };
    let fault: Fault = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("fault: {e}")),
    };
    set_fault(state, name, fault)
}

/// `PUT /admin/clusters/{name}/nodes/{node}/ready` (`{"ready": bool}`) or `…/allocatable`
/// (a map of resource → quantity): the node changes, with the watch events of the node and of
/// every pod that changed with it.
fn node_trouble(state: &State, name: &str, node: &str, what: &str, body: &[u8]) -> Resp {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("body: {e}")),
    };
    let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
    let Some(c) = clusters.get_mut(name) else {
        return status(StatusCode::NOT_FOUND, "NotFound", "no such cluster");
    };
    let (nodes_before, pods_before) = (c.fleet.nodes.clone(), c.fleet.pods.clone());
    let now = crate::util::clock::now_ms();
    let done = match (what, v.get("ready").and_then(Value::as_bool), v.as_object()) {
        ("ready", Some(ready), _) => {
            super::apply::set_node_ready(&mut c.fleet, node, ready, now).then(|| json!({"ready": ready}))
        }
        ("ready", None, _) => return status(StatusCode::BAD_REQUEST, "BadRequest", "body: {\"ready\": true|false}"),
        (_, _, Some(amounts)) if amounts.values().all(Value::is_string) => {
            super::apply::set_node_allocatable(&mut c.fleet, node, amounts, &state.agent, now)
                .map(|r| json!({"rebound": r.bound, "unschedulable": r.unschedulable}))
        }
        _ => return status(StatusCode::BAD_REQUEST, "BadRequest", "body: a map of resource name to quantity"),
    };
    let Some(answer) = done else {
        return status(StatusCode::NOT_FOUND, "NotFound", &format!("no node {node:?}"));
    };
    let Served { fleet, log, .. } = c;
    super::record_changes(log, Resource::Nodes, &nodes_before, &mut fleet.nodes);
    super::record_changes(log, Resource::Pods, &pods_before, &mut fleet.pods);
    tracing::info!(cluster = %name, node = %node, %what, "node changed");
    ok(&answer)
}

/// `PUT /admin/clusters/{name}/outage` (`{"mode": "refused" | "hung"}`): the cluster's API is
/// down: connections closed without an answer, or never answered.
async fn outage(state: &State, req: Request<Incoming>, name: &str) -> Resp {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outage {
        mode: String,
    }
    let body = match Limited::new(req.into_body(), 64 << 10).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
    };
    let fault = match serde_json::from_slice::<Outage>(&body).map(|o| o.mode) {
        Ok(m) if m == "refused" => Fault { reset: true, ..Default::default() },
        Ok(m) if m == "hung" => Fault { timeout: true, ..Default::default() },
        Ok(m) => return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("mode {m:?}: refused or hung")),
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("outage: {e}")),
    };
    set_fault(state, name, fault)
}

/// `PUT /admin/clusters/{name}/apis` (`status.apiEnablements` in Karmada's form: `[{groupVersion,
/// resources: [{name, kind}]}]`): the APIs the cluster serves from now on (a CRD installed or
/// removed).
fn set_apis(state: &State, name: &str, body: &[u8]) -> Resp {
    let list: Value = match serde_json::from_slice(body) {
        Ok(v @ Value::Array(_)) => v,
        Ok(_) => return status(StatusCode::BAD_REQUEST, "BadRequest", "body: a list of {groupVersion, resources}"),
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &format!("body: {e}")),
    };
    let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
    let Some(c) = clusters.get_mut(name) else {
        return status(StatusCode::NOT_FOUND, "NotFound", "no such cluster");
    };
    c.apis = super::fleet::served_apis(&json!({"status": {"apiEnablements": list}}));
    tracing::info!(cluster = %name, groupversions = c.apis.len(), "APIs changed");
    ok(&json!({"groupVersions": c.apis.keys().collect::<Vec<_>>()}))
}

/// Sets a cluster's faults and closes its watch streams.
fn set_fault(state: &State, name: &str, fault: Fault) -> Resp {
    let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
    match clusters.get_mut(name) {
        Some(c) => {
            tracing::info!(cluster = %name, fault = ?fault, "fault set");
            c.fault = fault;
            c.log.close_streams();
            ok(&serde_json::to_value(&c.fault).unwrap_or_default())
        }
        None => status(StatusCode::NOT_FOUND, "NotFound", "no such cluster"),
    }
}

/// `POST /admin/apply`: runs the GitOps agent now.
fn apply_now(state: &State) -> Resp {
    match &state.apply_now {
        Some(tx) => {
            let _ = tx.try_send(());
            ok(&json!({"apply": "scheduled"}))
        }
        None => status(StatusCode::BAD_REQUEST, "BadRequest", "the simulator runs without --apply"),
    }
}

/// `POST /admin/clusters/{name}/watches/close` (`close`: every watcher re-watches) or
/// `…/compact` (every watcher relists).
fn watches(state: &State, name: &str, close: bool) -> Resp {
    let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
    match clusters.get_mut(name) {
        Some(c) => {
            if close {
                c.log.close_streams();
            } else {
                c.log.compact();
            }
            ok(&json!({"resourceVersion": c.log.rv.to_string(), "compacted": c.log.compacted.to_string()}))
        }
        None => status(StatusCode::NOT_FOUND, "NotFound", "no such cluster"),
    }
}

/// Parses a query string (percent-decoded; `+` is a space).
pub fn parse_query(q: &str) -> BTreeMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (crate::util::percent::decode(k), crate::util::percent::decode(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_selectors() {
        let q = parse_query("limit=2&continue=m.4&fieldSelector=status.phase%21%3DFailed%2Cspec.nodeName%3Dn1");
        assert_eq!(q["fieldSelector"], "status.phase!=Failed,spec.nodeName=n1");
        let f = parse_field_selector(&q["fieldSelector"], "PodList").expect("valid");
        assert_eq!(f[0], ("status.phase".to_string(), "!=", "Failed".to_string()));
        assert!(parse_field_selector("spec.foo=x", "PodList").is_err());
        let pod =
            json!({"metadata": {"labels": {"app": "web"}}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        assert_eq!(field_value(&pod, "spec.nodeName"), "n1");
        assert!(label_matches(&pod, &parse_label_selector("app=web,!tier")));
        assert!(!label_matches(&pod, &parse_label_selector("app!=web")));
        assert_eq!(crate::util::percent::decode("a%2"), "a%2");
    }
}
