//! The HTTP listener: health, readiness, Prometheus metrics and the read-only JSON API.
//! The only module that knows HTTP (the server here, the CLI's client in [`client`]).
//!
//! | path | answers |
//! |---|---|
//! | `/healthz` | 200 while the event loop turns and passes finish ([`Heartbeat::stalled`]), else 503 with the reason |
//! | `/readyz` | 200 once a pass completed and the last pass did not fail operationally, else 503 |
//! | `/metrics` | Prometheus text format (the daemon's [`crate::metrics::Metrics`]) |
//! | `/api/v1/status` | the last pass and readiness |
//! | `/api/v1/clusters` | members: state, capacity, confidence, snapshot age, replicas |
//! | `/api/v1/clusters/{name}/snapshots` | as `fedsched snapshots -o json` |
//! | `/api/v1/clusters/{name}/workloads` | what runs on the cluster and what was refused there ([`crate::views::placements::cluster_workloads`]) |
//! | `/api/v1/placements?namespace=&policy=&label=&state=&page=&perPage=&clusterPage=&clustersPerPage=` | one page of the workload × cluster matrix ([`crate::views::placements::matrix`]) |
//! | `/api/v1/resources?by=region\|zone\|provider\|label=KEY` | as `fedsched resources -o json` |
//! | `/api/v1/workloads?namespace=&cluster=&selector=&state=` | as `fedsched get -o json`: every placement with the summary's fields (`.fedsched/placements/`), its replicas, `suspended`, `lazyHeld`, labels; filtered (an unknown cluster: 404) |
//! | `/api/v1/workloads/{ns}/{kind}/{name}/explain` | as `fedsched explain -o json` (`ns` = `_` for cluster-scoped), with the profiles of the last good pass |
//! | `/api/v1/workloads/{ns}/{kind}/{name}/history` | as `fedsched history -o json` |
//! | `/api/v1/workloads/{ns}/{kind}/{name}/status?stuckAfter=5m` | as `fedsched status KIND/NS/NAME -o json` |
//! | `/api/v1/workloads/status?stuckAfter=5m` | every workload that is not Healthy, as `fedsched status -o json` |
//! | `/api/v1/workloads/{ns}/{name}/rollout` | its progressive rollout: stage, gate, time left, failures, transitions |
//! | `POST /api/v1/plan` | `fedsched plan` on the daemon: the body is a [`PlanRequest`] (the changed repository's files, the base's), the answer the plan document (as `fedsched plan -o json`); 422 with `errors` for an invalid repository, 503 before the first good pass, 429 while another plan runs |
//!
//! | `/ui/…` | the read-only web view ([`ui`]): the same documents as HTML |
//!
//! Every route but the plan (and the web view's login and logout) is GET; nothing here writes (a plan previews on a copy of the
//! reconciler's cache and a dry run of the store: [`crate::reconcile::Reconciler::preview_warm`]). The store is read through the daemon's
//! [`Store`] handle (sled allows one process), on blocking threads; the loop's state comes
//! from a `watch` of [`StatusView`] (the last good inputs and the profiles they ran with), the
//! metrics from the daemon's `Arc` of them, the wall clock from the daemon's clock. With
//! `http.token_file`, `/api/v1/…` (and `/metrics` if `http.metrics_require_token`) need
//! `Authorization: Bearer <token>`, compared in constant time; the token is never logged.
//!
//! Every route of the JSON API is in one list ([`api_v1`]) served behind one authentication
//! layer ([`authenticate`]): the token is checked from the headers (a request without it is
//! answered 401 before a byte of its body is read); no handler checks it. Every request then
//! passes [`admit`]: a body larger than its route allows is refused from its `Content-Length`
//! (413), and the bodies held at once are bounded ([`BODY_BUDGET`], 429 beyond).
//!
//! The listener is our own accept loop over hyper's HTTP/1.1 connections ([`Limits`]): a
//! bounded number of connections, slow headers and idle keep-alive connections closed after
//! `http.header_timeout`, accept errors (out of file descriptors) survived. When every slot is
//! taken, a new connection takes the slot of the one that has waited longest without a
//! request in progress ([`Slots`]): idle and slow-header clients cannot hold `/healthz` and
//! `/readyz` out, whatever their number.
//!
//! # In detail
//!
//! **The only module that knows HTTP**: the axum listener (`/healthz`, `/readyz`, `/metrics`,
//! read-only `/api/v1/…`, `POST /api/v1/plan`, optional bearer token) in `mod.rs`, the API's
//! routes behind `authenticate` (the token from the headers before any body is read), every
//! request through `admit` (body sizes from `Content-Length`, a byte budget for the bodies held
//! at once), connections in `Slots` (at
//! capacity, a new connection takes the slot of the one idle for longest, so held connections
//! cannot keep probes out); `client.rs`: the small client the CLI uses to ask a running daemon when
//! the store is locked (hyper-util's legacy client on a per-call current-thread runtime; GET, and
//! POST of a JSON body for `plan`). Reads the store through the daemon's `Store` handle on blocking
//! threads; never writes (the plan previews on a dry run of the store: `Store::dry_run`). Explain
//! uses the profiles of the daemon's last good pass, so the API and the CLI answer alike. `ui/`
//! (issue 53): the read-only web view under `/ui/` — `mod.rs` (routes, the login form and session
//! cookie, the Content-Security-Policy and other headers of every answer, bounded query parsing;
//! each page handler calls the same `views/` builder as its `/api/v1/…` route, on a blocking
//! thread), `pages.rs` (pure functions from those JSON documents to HTML, so the page shows what
//! the API says), `html.rs` (escaping, the page frame, bars as `<meter>`, tables), `style.css` and
//! `icon.svg` (`include_str!`: nothing fetched, no script, no build step).

pub mod client;
pub mod ui;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::store::{Store, StoreError};
use crate::views::explain::{self, WorkloadRef};
use crate::views::placed::Source;
use crate::views::plan::{PlanFailure, PlanRequest};
use crate::views::report;
use crate::views::status::{Heartbeat, PassOutcome, StatusView};

/// Name of the file in the state directory that holds the address the daemon listens on
/// (`host:port`), for the CLI and for tests when the configured port is 0.
pub const ADDR_FILE: &str = "http.addr";

/// Errors of the API setup.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The token file cannot be read.
    #[error("http.token_file {}: cannot read: {source}", path.display())]
    TokenRead { path: PathBuf, source: std::io::Error },
    /// The token file holds no token.
    #[error("http.token_file {}: the file is empty", path.display())]
    TokenEmpty { path: PathBuf },
    /// The token cannot be sent in a header (no client could present it).
    #[error(
        "http.token_file {}: the token contains a character not allowed in an HTTP header (a control character \
         such as NUL, a newline inside it, or DEL); the token is not shown",
        path.display()
    )]
    TokenInvalid { path: PathBuf },
    /// The listener cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    /// Another process listens on the address already.
    #[error(
        "cannot listen on {addr}: the address is already in use (another fedsched or another program listens \
         there); set another [http] listen address, or stop that program"
    )]
    InUse { addr: SocketAddr },
}

/// A bearer token. Its `Debug` does not show it.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// Reads a token file: its contents without surrounding whitespace.
    pub fn from_file(path: &Path) -> Result<Token, ApiError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ApiError::TokenRead { path: path.to_path_buf(), source })?;
        let t = text.trim();
        if t.is_empty() {
            return Err(ApiError::TokenEmpty { path: path.to_path_buf() });
        }
        if HeaderValue::from_str(&format!("Bearer {t}")).is_err() {
            return Err(ApiError::TokenInvalid { path: path.to_path_buf() });
        }
        Ok(Token(Arc::from(t)))
    }

    /// The token text (for the client's `Authorization` header).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether an `Authorization` header value is `Bearer <this token>`, in time independent
    /// of where the values differ.
    pub fn matches_header(&self, value: Option<&HeaderValue>) -> bool {
        let Some(v) = value else { return false };
        let Some(given) = v.as_bytes().strip_prefix(b"Bearer ") else { return false };
        constant_time_eq(given, self.0.as_bytes())
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= std::hint::black_box(x ^ y);
    }
    diff == 0
}

/// What the handlers share.
#[derive(Clone)]
pub struct ApiState {
    /// The daemon's store handle.
    pub store: Store,
    /// The loop's published status.
    pub status: watch::Receiver<Arc<StatusView>>,
    /// The loop's heartbeat.
    pub heartbeat: Arc<Heartbeat>,
    /// `/healthz` turns 503 when the heartbeat is older than this.
    pub heartbeat_timeout: Duration,
    /// Bearer token for the JSON API, if configured.
    pub token: Option<Token>,
    /// Whether `/metrics` requires the token too.
    pub metrics_require_token: bool,
    /// The daemon's metrics (what `/metrics` encodes).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The daemon's clock (heartbeat age, snapshot ages).
    pub clock: Arc<dyn crate::util::clock::Clock>,
    /// The output directory the daemon publishes to (a plan compares with it).
    pub output_dir: PathBuf,
    /// One plan at a time (`Default` for a new listener).
    pub plans: PlanGate,
}

/// Lets one plan run at a time: a plan holds the reconciler's cache, so the daemon's next pass
/// waits for it, and plans queued behind one another would keep it waiting. Another plan
/// asked for meanwhile is refused with 429.
/// It also keeps the last plan answered, for the web view's Plan page.
#[derive(Clone, Default)]
pub struct PlanGate(Arc<std::sync::atomic::AtomicBool>, Arc<std::sync::Mutex<Option<Arc<Value>>>>);

impl PlanGate {
    /// Takes the gate; `None` while a plan runs. Released when the guard drops.
    fn enter(&self) -> Option<PlanTurn> {
        use std::sync::atomic::Ordering;
        let free = self.0.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_ok();
        free.then(|| PlanTurn(Arc::clone(&self.0)))
    }

    /// The last plan document answered, if any.
    pub fn last(&self) -> Option<Arc<Value>> {
        self.1.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Keeps `doc` as the last plan answered (the Plan page shows it).
    pub fn keep(&self, doc: &Value) {
        *self.1.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(doc.clone()));
    }
}

/// A plan's turn ([`PlanGate::enter`]).
struct PlanTurn(Arc<std::sync::atomic::AtomicBool>);

impl Drop for PlanTurn {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// The largest plan request accepted (the repositories' files as JSON): a repository of 10,000
/// workloads is ≈ 20 MiB.
pub const PLAN_BODY_LIMIT: usize = 256 << 20;

/// The largest body of a request to any other route (none reads one).
pub const SMALL_BODY_LIMIT: usize = 64 << 10;

/// The request bodies held at once, in bytes (each request counts its `Content-Length`, or its
/// route's limit when it does not say): one plan of the largest size.
pub const BODY_BUDGET: usize = PLAN_BODY_LIMIT;

/// A running listener; [`Server::shutdown`] stops it.
pub struct Server {
    /// The address actually bound (port 0 resolved).
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Stops accepting, lets requests in flight finish (bounded by `limit`).
    pub async fn shutdown(self, limit: Duration) {
        let _ = self.stop.send(());
        if tokio::time::timeout(limit, self.task).await.is_err() {
            tracing::warn!("HTTP listener did not stop in time");
        }
    }
}

/// Bounds of the listener (`[http] max_connections`, `[http] header_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; a connection accepted beyond it is closed at once.
    pub max_connections: usize,
    /// How long a connection may take to send a request's headers, and how long a kept-alive
    /// connection may stay idle between requests; it is closed then.
    pub header_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_connections: 256, header_timeout: Duration::from_secs(10) }
    }
}

impl Limits {
    /// The limits of the `[http]` section.
    pub fn from_config(http: &crate::config::HttpSection) -> Self {
        Limits { max_connections: http.max_connections.max(1), header_timeout: http.header_timeout }
    }
}

/// Binds `addr` and serves the API on the current runtime, with the default [`Limits`].
pub async fn start(addr: SocketAddr, state: ApiState) -> Result<Server, ApiError> {
    start_with(addr, state, Limits::default()).await
}

/// Binds `addr` and serves the API on the current runtime within `limits`: at most
/// `max_connections` connections (one over it is accepted and closed, so it holds no file
/// descriptor), each closed when its request headers take longer than `header_timeout` or
/// it idles that long between requests. An accept error (out of file descriptors) is logged
/// and retried after a pause, never ends the listener.
pub async fn start_with(addr: SocketAddr, state: ApiState, limits: Limits) -> Result<Server, ApiError> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| match source.kind() {
        std::io::ErrorKind::AddrInUse => ApiError::InUse { addr },
        _ => ApiError::Bind { addr, source },
    })?;
    let bound = listener.local_addr().map_err(|source| ApiError::Bind { addr, source })?;
    let (stop, stopped) = oneshot::channel::<()>();
    let preparing = tokio::spawn(ui::prepare_passes(state.status.clone()));
    let app = router(state);
    let task = tokio::spawn(async move {
        accept_loop(listener, app, limits, stopped).await;
        preparing.abort();
    });
    Ok(Server { addr: bound, stop, task })
}

/// The connection slots of a listener (`max_connections` of them). A connection is idle while
/// no request of it is in progress (waiting for its first request or the next one, or for
/// the rest of a request's headers); when every slot is taken, a new connection makes the one
/// idle for longest give its slot up. A client holding connections open therefore cannot keep
/// another out: a probe's connection sends its request at once and is answered, while the
/// held ones are the oldest idle ones. A connection with a request in progress is never
/// closed for another (when every one is busy, a new connection is closed at once).
struct Slots {
    permits: Arc<tokio::sync::Semaphore>,
    open: std::sync::Mutex<std::collections::HashMap<u64, Arc<Slot>>>,
    started: std::time::Instant,
    next: std::sync::atomic::AtomicU64,
}

/// One connection's slot: since when it is idle (µs since the listener started; `u64::MAX`
/// while a request is in progress) and how it is told to give the slot up.
struct Slot {
    idle_since: std::sync::atomic::AtomicU64,
    evict: tokio::sync::Notify,
}

impl Slots {
    fn new(max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            permits: Arc::new(tokio::sync::Semaphore::new(max)),
            open: Default::default(),
            started: std::time::Instant::now(),
            next: Default::default(),
        })
    }

    fn now(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// A slot for a new connection: a free one, or the one of the connection idle for longest
    /// (told to close, and waited for); `None` when every connection has a request in progress.
    async fn take(self: &Arc<Self>) -> Option<(u64, Arc<Slot>, tokio::sync::OwnedSemaphorePermit)> {
        use std::sync::atomic::Ordering;
        let permit = match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                let oldest = {
                    let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
                    open.values().min_by_key(|s| s.idle_since.load(Ordering::Acquire)).cloned()
                };
                let victim = oldest.filter(|s| s.idle_since.load(Ordering::Acquire) != u64::MAX)?;
                victim.evict.notify_one();
                tokio::time::timeout(Duration::from_secs(1), Arc::clone(&self.permits).acquire_owned())
                    .await
                    .ok()?
                    .ok()?
            }
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot { idle_since: self.now().into(), evict: tokio::sync::Notify::new() });
        self.open.lock().unwrap_or_else(|p| p.into_inner()).insert(id, Arc::clone(&slot));
        Some((id, slot, permit))
    }

    fn release(&self, id: u64) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }
}

/// Accepts until `stopped`, then lets the connections finish their request in flight.
async fn accept_loop(listener: tokio::net::TcpListener, app: Router, limits: Limits, stopped: oneshot::Receiver<()>) {
    let slots = Slots::new(limits.max_connections);
    let (closing, closing_rx) = watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(stopped);
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "HTTP listener: cannot accept a connection; pausing");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(slot) = slots.take().await else {
            tracing::debug!(max = limits.max_connections, "HTTP listener: every connection is busy; closing a new one");
            drop(stream);
            continue;
        };
        connections.spawn(serve_connection(stream, app.clone(), limits, closing_rx.clone(), Arc::clone(&slots), slot));
    }
    let _ = closing.send(true);
    while connections.join_next().await.is_some() {}
}

/// Serves one connection (HTTP/1.1) until the client closes it, a timeout closes it, the
/// listener stops (after the request in flight), or a new connection takes its slot while it
/// is idle.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    app: Router,
    limits: Limits,
    mut closing: watch::Receiver<bool>,
    slots: Arc<Slots>,
    (id, slot, _permit): (u64, Arc<Slot>, tokio::sync::OwnedSemaphorePermit),
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use std::sync::atomic::Ordering;
    use tower::ServiceExt;
    let (marks, clock) = (Arc::clone(&slot), Arc::clone(&slots));
    let service = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
        marks.idle_since.store(u64::MAX, Ordering::Release);
        let (marks, clock, answer) = (Arc::clone(&marks), Arc::clone(&clock), app.clone().oneshot(req));
        async move {
            let res = answer.await;
            marks.idle_since.store(clock.now(), Ordering::Release);
            res
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout).keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = async { drop(closing.wait_for(|c| *c).await) } => {
            conn.as_mut().graceful_shutdown();
            conn.as_mut().await
        }
        () = async {
            // Told to give the slot up: only while idle (a request that began since goes on).
            loop {
                slot.evict.notified().await;
                if slot.idle_since.load(Ordering::Acquire) != u64::MAX {
                    break;
                }
            }
        } => Ok(()),
    };
    slots.release(id);
    if let Err(error) = result {
        tracing::debug!(%error, "HTTP connection ended with an error");
    }
}

/// A route of the JSON API: its method, its path under `/api/v1` and its handler. Every one is
/// behind [`authenticate`] ([`router`]); [`api_v1`] lists them all.
struct ApiRoute {
    method: Method,
    path: &'static str,
    handler: MethodRouter<ApiState>,
    /// The largest body it takes ([`admit`]).
    body_limit: usize,
}

impl ApiRoute {
    fn get<H: axum::handler::Handler<T, ApiState>, T: 'static>(path: &'static str, handler: H) -> Self {
        ApiRoute { method: Method::GET, path, handler: get(handler), body_limit: SMALL_BODY_LIMIT }
    }
}

/// The routes of the JSON API (`/api/v1/…`), the one list [`router`] serves behind
/// [`authenticate`] and [`api_routes`] names.
fn api_v1() -> Vec<ApiRoute> {
    let plan = post(plan).layer(axum::extract::DefaultBodyLimit::max(PLAN_BODY_LIMIT));
    let plan = ApiRoute { method: Method::POST, path: "/plan", handler: plan, body_limit: PLAN_BODY_LIMIT };
    vec![
        ApiRoute::get("/status", status),
        ApiRoute::get("/clusters", clusters),
        ApiRoute::get("/clusters/{name}/snapshots", snapshots),
        ApiRoute::get("/clusters/{name}/workloads", cluster_workloads),
        ApiRoute::get("/resources", resources),
        ApiRoute::get("/workloads", workloads),
        ApiRoute::get("/workloads/{ns}/{kind}/{name}/explain", explain_workload),
        ApiRoute::get("/workloads/{ns}/{kind}/{name}/history", history),
        ApiRoute::get("/workloads/{ns}/{kind}/{name}/status", workload_status),
        ApiRoute::get("/workloads/status", unhealthy_workloads),
        ApiRoute::get("/workloads/{ns}/{name}/rollout", workload_rollout),
        ApiRoute::get("/placements", placements),
        plan,
    ]
}

/// Every route of the JSON API as (method, path), `{…}` for a path parameter: what
/// [`router`] serves behind [`authenticate`] (tests ask every one without and with the token).
pub fn api_routes() -> Vec<(Method, String)> {
    api_v1().into_iter().map(|r| (r.method, format!("{API_V1}{}", r.path))).collect()
}

/// Where the JSON API is served.
pub const API_V1: &str = "/api/v1";

/// The routes (public for tests that drive the router without a socket): `/healthz` and
/// `/readyz` open, `/metrics` behind the token with `metrics_require_token`, the web view
/// ([`ui`], its own login), and the JSON API ([`api_v1`], every path under `/api/v1`) behind
/// one authentication layer ([`authenticate`]), which answers before the body is read and
/// before [`admit`] counts it. Every request passes [`admit`] once.
pub fn router(state: ApiState) -> Router {
    let budget = Arc::new(tokio::sync::Semaphore::new(BODY_BUDGET));
    let admitting = |limit: usize| axum::middleware::from_fn_with_state((Arc::clone(&budget), limit), admit);
    let guarded = |guard: Guard| axum::middleware::from_fn_with_state((state.clone(), guard), authenticate);
    let api = api_v1()
        .into_iter()
        .fold(Router::new(), |r, route| r.route(route.path, route.handler.layer(admitting(route.body_limit))))
        .fallback(not_found)
        .layer(guarded(Guard::Always));
    let open = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics).layer(guarded(Guard::Metrics)));
    ui::routes(open).fallback(not_found).layer(admitting(SMALL_BODY_LIMIT)).nest(API_V1, api).with_state(state)
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "no such endpoint")
}

/// Which requests of a route [`authenticate`] asks for the token.
#[derive(Debug, Clone, Copy)]
enum Guard {
    /// Every request (the JSON API).
    Always,
    /// When `http.metrics_require_token` says so (`/metrics`).
    Metrics,
}

/// The authentication layer: the bearer token, from the headers alone (a request without it
/// is answered 401 before a byte of its body is read), when the token is configured.
async fn authenticate(
    State((s, guard)): State<(ApiState, Guard)>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let asked = match guard {
        Guard::Always => true,
        Guard::Metrics => s.metrics_require_token,
    };
    if asked && let Err(r) = authorize(&s, req.headers()) {
        return r.into_response();
    }
    next.run(req).await
}

/// Before any handler: a body its route does not allow (`Content-Length` over `limit`:
/// [`PLAN_BODY_LIMIT`] for the plan, [`SMALL_BODY_LIMIT`] elsewhere) refused before it is read;
/// and the bytes of the bodies held at once bounded by `budget` (a request holds what it says
/// it sends, or its route's limit, until it is answered).
async fn admit(
    State((budget, limit)): State<(Arc<tokio::sync::Semaphore>, usize)>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use hyper::body::Body as _;
    let size = req.body().size_hint();
    let held = size.exact().map_or(limit as u64, |n| n);
    if held > limit as u64 {
        return error(StatusCode::PAYLOAD_TOO_LARGE, &format!("the body is larger than this endpoint's {limit} bytes"));
    }
    let _permit = match u32::try_from(held).ok().filter(|n| *n > 0) {
        None => None,
        Some(n) => match Arc::clone(&budget).try_acquire_many_owned(n) {
            Ok(p) => Some(p),
            Err(_) => {
                return error(StatusCode::TOO_MANY_REQUESTS, "other request bodies fill the listener's budget; retry");
            }
        },
    };
    next.run(req).await
}

fn error(code: StatusCode, message: &str) -> Response {
    (code, axum::Json(json!({ "error": message }))).into_response()
}

/// A request that cannot be answered: its status and message (`{"error": message}`).
#[derive(Debug)]
struct Refusal {
    code: StatusCode,
    message: String,
}

impl Refusal {
    fn new(code: StatusCode, message: impl Into<String>) -> Refusal {
        Refusal { code, message: message.into() }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut r = error(self.code, &self.message);
        if self.code == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}

fn ok_json(v: Value) -> Response {
    (StatusCode::OK, axum::Json(v)).into_response()
}

fn authorize(state: &ApiState, headers: &HeaderMap) -> Result<(), Refusal> {
    match &state.token {
        None => Ok(()),
        Some(t) if t.matches_header(headers.get(header::AUTHORIZATION)) => Ok(()),
        Some(_) => Err(Refusal::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")),
    }
}

/// Runs blocking store work off the async threads; errors become JSON responses.
async fn blocking<F>(f: F) -> Response
where
    F: FnOnce() -> Result<Value, Refusal> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => ok_json(v),
        Ok(Err(r)) => r.into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("request task failed: {e}")),
    }
}

fn store_error(e: StoreError) -> Refusal {
    match e {
        StoreError::InvalidName { .. } => Refusal::new(StatusCode::BAD_REQUEST, e.to_string()),
        other => Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
    }
}

async fn healthz(State(s): State<ApiState>) -> Response {
    let now = s.clock.now_ms();
    let age = s.heartbeat.age_ms(now);
    let limit = s.heartbeat_timeout.as_millis() as u64;
    let stalled = s.heartbeat.stalled(now, s.heartbeat_timeout);
    let status = if stalled.is_none() { "ok" } else { "stalled" };
    let body = json!({"status": status, "heartbeatAgeMs": age, "limitMs": limit, "reason": stalled});
    let code = if stalled.is_none() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, axum::Json(body)).into_response()
}

async fn readyz(State(s): State<ApiState>) -> Response {
    let view = s.status.borrow().clone();
    let ready = view.is_ready();
    let body = json!({
        "ready": ready,
        "firstReconcileDone": view.ready,
        "lastPass": view.last_pass.as_ref().map(|p| p.outcome.label()),
    });
    let code = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, axum::Json(body)).into_response()
}

async fn metrics(State(s): State<ApiState>) -> Response {
    let view = s.status.borrow().clone();
    let now = s.clock.now_ms();
    let age = s.heartbeat.age_ms(now);
    let store = s.store.clone();
    let metrics = Arc::clone(&s.metrics);
    let encoded = tokio::task::spawn_blocking(move || {
        let size = store.size_on_disk().ok();
        metrics.refresh_and_encode(&view, now, age, size)
    })
    .await;
    match encoded {
        Ok(Ok(text)) => ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response(),
        Ok(Err(_)) => error(StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics"),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("metrics task failed: {e}")),
    }
}

/// `lastPass` of `/api/v1/status`: an invalid pass says how many errors and the first one, a
/// failed one its error; a good one has no message.
fn pass_json(p: &crate::views::status::PassStatus) -> Value {
    let (errors, message) = match &p.outcome {
        PassOutcome::Ok => (0, None),
        PassOutcome::Invalid { errors, first } => (
            *errors,
            Some(format!("{errors} error(s) in the policy repository; the last good output stays; first: {first}")),
        ),
        PassOutcome::Failed { message } | PassOutcome::Shadow { reason: message } => (0, Some(message.clone())),
    };
    json!({
        "trigger": p.trigger,
        "at": explain::format_ms(p.at_ms),
        "durationMs": p.duration_ms,
        "outcome": p.outcome.label(),
        "errors": errors,
        "message": message,
    })
}

/// `/api/v1/status` (and the web view's banner): readiness, the last pass, HA and failover.
fn status_json(view: &StatusView) -> Value {
    let pass = view.last_pass.as_ref().map(pass_json);
    json!({
        "ready": view.is_ready(),
        "startedAt": explain::format_ms(view.started_at_ms),
        "lastPass": pass,
        "lastSuccess": view.last_success_ms.map(explain::format_ms),
        "lastSummary": view.last_report.as_ref().map(|r| r.summary()),
        "policyErrors": view.policy_errors,
        "ha": view.ha.as_ref().map(|h| {
            let st = h.status();
            json!({"role": st.role.as_str(), "identity": st.identity, "holder": st.holder, "transitions": st.transitions})
        }),
        "failover": view.last_report.as_ref().map(|r| json!({
            "stormGuard": r.stability.storm,
            "pendingFailover": r.stability.pending_failover,
            "keptPastGrace": r.stability.kept_past_grace,
            "held": r.stability.held,
            "lastEvents": r.stability.events.iter().map(|e| json!({
                "workload": e.workload.as_ref().map(|w| w.to_string()),
                "cluster": e.cluster,
                "kind": e.kind,
                "text": e.text,
            })).collect::<Vec<_>>(),
        })),
    })
}

async fn status(State(s): State<ApiState>) -> Response {
    let view = s.status.borrow().clone();
    ok_json(status_json(&view))
}

async fn clusters(State(s): State<ApiState>) -> Response {
    let current = s.status.borrow().inputs.clone();
    let now = s.clock.now_ms();
    blocking(move || {
        let placed = placed(&s).map_err(store_error)?;
        let current = current.as_ref().map(|i| i.snapshots.as_slice());
        report::clusters_json(&s.store, current, placed.replicas_by_cluster(), now).map_err(store_error)
    })
    .await
}

/// The placements of the last good pass as the daemon holds them (indexed on first use, kept
/// with that pass: [`crate::views::placed`]); before the first good pass, the store's (read
/// whole, on this request's blocking thread). Never waits for a pass: the status holds an
/// `Arc` the pass swaps.
fn placed(s: &ApiState) -> Result<Arc<crate::views::placed::Placed>, StoreError> {
    let kept = s.status.borrow().placed.clone();
    match kept {
        Some(p) => Ok(p),
        None => Ok(Arc::new(crate::views::placed::Placed::from_store(&s.store)?)),
    }
}

async fn snapshots(State(s): State<ApiState>, UrlPath(name): UrlPath<String>) -> Response {
    let store = s.store.clone();
    blocking(move || {
        let versions = store.snapshot_versions(&name).map_err(store_error)?;
        Ok(report::snapshots_json(&name, &versions))
    })
    .await
}

/// `?by=` of `/api/v1/resources`.
#[derive(Debug, serde::Deserialize)]
struct ResourcesQuery {
    by: Option<String>,
}

async fn resources(
    State(s): State<ApiState>,
    axum::extract::Query(q): axum::extract::Query<ResourcesQuery>,
) -> Response {
    let by: crate::views::resources::GroupBy = match q.by.as_deref().unwrap_or("region").parse() {
        Ok(b) => b,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("by={e}")),
    };
    let Some((inputs, profiles)) = good_pass(&s) else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "no good reconcile yet: no cluster data");
    };
    let model = profiles.model();
    let views = crate::views::resources::views(&inputs.snapshots, model, s.clock.now_ms());
    axum::Json(crate::views::resources::document(&views, &by, model)).into_response()
}

/// `?namespace=&cluster=&selector=&state=` of `/api/v1/workloads` (as `fedsched get`'s flags).
#[derive(Debug, serde::Deserialize)]
struct WorkloadsQuery {
    namespace: Option<String>,
    cluster: Option<String>,
    selector: Option<String>,
    state: Option<String>,
}

impl WorkloadsQuery {
    fn filter(self) -> Result<crate::views::workloads::Filter, Refusal> {
        let bad = |e: String| Refusal::new(StatusCode::BAD_REQUEST, e);
        Ok(crate::views::workloads::Filter {
            namespace: self.namespace,
            cluster: self.cluster,
            selector: self.selector.map(|s| s.parse()).transpose().map_err(|e| bad(format!("selector: {e}")))?,
            state: self.state.map(|s| s.parse()).transpose().map_err(|e| bad(format!("state: {e}")))?,
        })
    }
}

async fn workloads(
    State(s): State<ApiState>,
    axum::extract::Query(q): axum::extract::Query<WorkloadsQuery>,
) -> Response {
    use crate::views::workloads::{GetError, document};
    let filter = match q.filter() {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let store = s.store.clone();
    blocking(move || {
        document(&store, &filter).map_err(|e| match e {
            GetError::UnknownCluster(_) => Refusal::new(StatusCode::NOT_FOUND, e.to_string()),
            GetError::Store(e) => store_error(e),
        })
    })
    .await
}

/// `/api/v1/placements` (and the web view's Placements page): one page of the filtered
/// workload × cluster matrix over the current placements and the last good pass's clusters.
fn matrix_document(s: &ApiState, q: &crate::views::placements::MatrixQuery) -> Result<Value, StoreError> {
    let clusters: Vec<(String, std::collections::BTreeMap<String, String>)> = match s.status.borrow().inputs.as_ref() {
        Some(i) => {
            let mut c: Vec<_> = i.snapshots.iter().map(|c| (c.name.clone(), c.labels.clone())).collect();
            c.sort_by(|a, b| a.0.cmp(&b.0));
            c
        }
        None => Vec::new(),
    };
    Ok(crate::views::placements::matrix(&*placed(s)?, &clusters, q))
}

async fn placements(State(s): State<ApiState>, uri: axum::http::Uri) -> Response {
    let q = match ui::matrix_query(&uri) {
        Ok(q) => q,
        Err((code, message)) => return error(code, &message),
    };
    blocking(move || matrix_document(&s, &q).map_err(store_error)).await
}

async fn cluster_workloads(State(s): State<ApiState>, UrlPath(name): UrlPath<String>) -> Response {
    blocking(move || {
        let placed = placed(&s).map_err(store_error)?;
        let doc = crate::views::placements::cluster_workloads(&s.store, &placed, &name).map_err(store_error)?;
        Ok(Value::clone(&doc))
    })
    .await
}

/// The inputs of the last good pass and the profiles it ran with (the configured ones, as the
/// CLI uses), if a pass succeeded.
fn good_pass(s: &ApiState) -> Option<(Arc<crate::reconcile::Inputs>, Arc<crate::schedule::profile::Profiles>)> {
    let view = s.status.borrow();
    Some((view.inputs.clone()?, view.profiles.clone()?))
}

/// `{ns}/{kind}/{name}` of a URL as a workload reference (`_` = cluster-scoped).
pub fn workload_ref(ns: &str, kind: &str, name: &str) -> WorkloadRef {
    WorkloadRef {
        kind: kind.to_string(),
        namespace: if ns == "_" || ns.is_empty() { None } else { Some(ns.to_string()) },
        name: name.to_string(),
    }
}

async fn explain_workload(
    State(s): State<ApiState>,
    UrlPath((ns, kind, name)): UrlPath<(String, String, String)>,
) -> Response {
    let Some((inputs, profiles)) = good_pass(&s) else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "no good reconcile yet: nothing to explain from");
    };
    let r = workload_ref(&ns, &kind, &name);
    let now = s.clock.now_ms();
    blocking(move || {
        let placed = placed(&s).map_err(store_error)?;
        if inputs.set.find_template(&r.kind, r.namespace.as_deref(), &r.name).is_none() {
            return Err(Refusal::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no resource template {}/{}/{} in the policy repository",
                    r.kind,
                    r.namespace.as_deref().unwrap_or(""),
                    r.name
                ),
            ));
        }
        explain::explain_from(&inputs, &s.store, Source::Pass(&placed), &profiles, &r, now)
            .map_err(|e| Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, e))
    })
    .await
}

async fn history(State(s): State<ApiState>, UrlPath((ns, kind, name)): UrlPath<(String, String, String)>) -> Response {
    let r = workload_ref(&ns, &kind, &name);
    blocking(move || {
        let placed = placed(&s).map_err(store_error)?;
        let records = report::history_from(&s.store, Source::Pass(&placed), &r).map_err(store_error)?;
        report::history_json(&s.store, &records).map_err(store_error)
    })
    .await
}

/// `?stuckAfter=` of the status routes (a duration: `90s`, `5m`).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusQuery {
    stuck_after: Option<String>,
}

impl StatusQuery {
    fn options(&self) -> Result<crate::views::workload_status::Options, Refusal> {
        let mut o = crate::views::workload_status::Options::default();
        if let Some(d) = &self.stuck_after {
            o.stuck_after = humantime::parse_duration(d)
                .map_err(|e| Refusal::new(StatusCode::BAD_REQUEST, format!("stuckAfter={d:?}: {e}")))?;
        }
        Ok(o)
    }
}

async fn workload_status(
    State(s): State<ApiState>,
    UrlPath((ns, kind, name)): UrlPath<(String, String, String)>,
    axum::extract::Query(q): axum::extract::Query<StatusQuery>,
) -> Response {
    use crate::views::workload_status::{StatusError, workload_document_from};
    let opts = match q.options() {
        Ok(o) => o,
        Err(r) => return r.into_response(),
    };
    let r = workload_ref(&ns, &kind, &name);
    let now = s.clock.now_ms();
    blocking(move || {
        let placed = placed(&s).map_err(store_error)?;
        workload_document_from(&s.store, Source::Pass(&placed), &r, now, &opts).map_err(|e| match e {
            StatusError::NotPlaced(_) => Refusal::new(StatusCode::NOT_FOUND, e.to_string()),
            StatusError::Store(e) => store_error(e),
        })
    })
    .await
}

/// `/api/v1/workloads/{ns}/{name}/rollout`: the progressive rollout of the workload(s) of
/// that namespace and name ([`crate::views::rollout`]); 404 when none is under a RolloutPolicy.
async fn workload_rollout(State(s): State<ApiState>, UrlPath((ns, name)): UrlPath<(String, String)>) -> Response {
    let (store, now) = (s.store.clone(), s.clock.now_ms());
    blocking(move || {
        let mut docs = crate::views::rollout::rollouts_named(&store, &ns, &name, now).map_err(store_error)?;
        match docs.len() {
            0 => Err(Refusal::new(StatusCode::NOT_FOUND, format!("{ns}/{name}: no RolloutPolicy selects it"))),
            1 => Ok(docs.remove(0)),
            _ => Ok(serde_json::json!({ "rollouts": docs })),
        }
    })
    .await
}

async fn unhealthy_workloads(
    State(s): State<ApiState>,
    axum::extract::Query(q): axum::extract::Query<StatusQuery>,
) -> Response {
    let opts = match q.options() {
        Ok(o) => o,
        Err(r) => return r.into_response(),
    };
    let (store, now) = (s.store.clone(), s.clock.now_ms());
    blocking(move || crate::views::workload_status::unhealthy_document(&store, now, &opts).map_err(store_error)).await
}

/// `POST /api/v1/plan`: [`crate::views::plan::on_daemon`] on the last good pass's reconciler.
async fn plan(State(s): State<ApiState>, body: axum::body::Bytes) -> Response {
    let request: PlanRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("the body is not a plan request: {e}")),
    };
    let Some(planner) = s.status.borrow().planner.clone() else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "no good pass yet: the daemon plans from its last good pass");
    };
    let Some(turn) = s.plans.enter() else {
        return error(StatusCode::TOO_MANY_REQUESTS, "another plan is running; ask again when it is done");
    };
    let (out, now_ms) = (s.output_dir.clone(), s.clock.now_ms());
    let started = std::time::Instant::now();
    let answer = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        crate::views::plan::on_daemon(&planner, &out, request, now_ms)
    });
    match answer.await {
        Ok(Ok(doc)) => {
            let summary = &doc["summary"];
            tracing::info!(
                workloads = summary["workloads"].as_u64().unwrap_or(0),
                changed = summary["changed"].as_u64().unwrap_or(0),
                clusters = summary["clusters"].as_u64().unwrap_or(0),
                duration_ms = started.elapsed().as_millis() as u64,
                "plan answered"
            );
            s.plans.keep(&doc);
            ok_json(doc)
        }
        Ok(Err(PlanFailure::Invalid { which, errors })) => {
            let message = format!("{} error(s) in {which}", errors.len());
            let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
            (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(json!({"error": message, "errors": errors}))).into_response()
        }
        Ok(Err(e @ PlanFailure::Gone)) => error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("request task failed: {e}")),
    }
}

/// Writes `<state_dir>/http.addr` (atomically) with the bound address.
pub fn write_addr_file(state_dir: &Path, addr: SocketAddr) -> std::io::Result<()> {
    let mut tmp = tempfile::NamedTempFile::new_in(state_dir)?;
    std::io::Write::write_all(&mut tmp, format!("{addr}\n").as_bytes())?;
    tmp.persist(state_dir.join(ADDR_FILE)).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An API over `store` before any pass (the status's sender is returned: keep it), with
    /// `token`, its output directory under `dir`.
    fn state_on(store: Store, dir: &Path, token: Option<Token>) -> (watch::Sender<Arc<StatusView>>, ApiState) {
        let (tx, status) = watch::channel(Arc::new(StatusView::default()));
        let state = ApiState {
            store,
            status,
            heartbeat: Arc::new(Heartbeat::new(0)),
            heartbeat_timeout: Duration::from_secs(3600),
            token,
            metrics_require_token: false,
            metrics: Arc::new(crate::metrics::Metrics::new()),
            clock: Arc::new(crate::util::clock::SystemClock),
            output_dir: dir.join("out"),
            plans: PlanGate::default(),
        };
        (tx, state)
    }

    /// `POST /api/v1/plan` refuses what it cannot plan: no token (401), a body that is not a
    /// plan request (400), a daemon without a good pass yet (503); and it is POST only.
    #[test]
    fn the_plan_endpoint_refuses_what_it_cannot_plan() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("state")).expect("store");
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, "s3cret\n").expect("token");
        let (_tx, state) = state_on(store, dir.path(), Some(Token::from_file(&token_file).expect("token")));
        let state_gate = state.plans.clone();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        let server = rt.block_on(start("127.0.0.1:0".parse().expect("addr"), state)).expect("listen");
        let url = client::ServerUrl::from_addr(server.addr).expect("url");
        let t = Duration::from_secs(10);
        let request = serde_json::to_vec(&PlanRequest::default()).expect("json");
        let post = |body: &[u8], token: Option<&str>| {
            client::post_json(&url, "/api/v1/plan", body.to_vec(), token, t).expect("answer").0
        };
        assert_eq!(post(&request, None), 401);
        assert_eq!(post(&request, Some("wrong")), 401);
        assert_eq!(post(b"{not json", Some("s3cret")), 400);
        assert_eq!(post(b"{\"after\": 3}", Some("s3cret")), 400);
        assert_eq!(post(&request, Some("s3cret")), 503, "no good pass yet");
        // One plan at a time.
        let turn = state_gate.enter().expect("free");
        assert!(state_gate.enter().is_none(), "taken while a plan runs");
        drop(turn);
        assert!(state_gate.enter().is_some(), "free again");
        let (code, _) = client::get(&url, "/api/v1/plan", Some("s3cret"), t).expect("answer");
        assert_eq!(code, 405, "GET is not a plan");
        rt.block_on(server.shutdown(Duration::from_secs(5)));
    }

    /// `GET /api/v1/workloads/{ns}/{name}/rollout`: the stored rollout's document; 404 for a
    /// workload no RolloutPolicy selects.
    #[test]
    fn the_rollout_endpoint_serves_the_stored_rollout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("state")).expect("store");
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let mut rollout = crate::schedule::rollout::RolloutState::settled("shop/web".into(), 1, "{}".into());
        rollout.phase = crate::schedule::rollout::Phase::Halted;
        rollout.released = 1;
        rollout.stages = vec![("canary".into(), vec!["m1".into()]), ("final".into(), vec!["m2".into()])];
        rollout.failed.insert("m1".into(), "CrashLoopBackOff on 2 pod(s)".into());
        store.put_rollout(&key, &rollout).expect("put");
        let (_tx, state) = state_on(store, dir.path(), None);
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        let server = rt.block_on(start("127.0.0.1:0".parse().expect("addr"), state)).expect("listen");
        let url = client::ServerUrl::from_addr(server.addr).expect("url");
        let t = Duration::from_secs(10);
        let (code, body) = client::get(&url, "/api/v1/workloads/shop/web/rollout", None, t).expect("answer");
        assert_eq!(code, 200, "{body}");
        let doc: Value = serde_json::from_str(&body).expect("json");
        assert_eq!((doc["state"].as_str(), doc["stage"].as_str()), (Some("Halted"), Some("canary")), "{doc:#}");
        assert_eq!(doc["failures"]["clusters"]["m1"], "CrashLoopBackOff on 2 pod(s)");
        assert_eq!(doc["stages"][1]["version"], "previous");
        let (code, _) = client::get(&url, "/api/v1/workloads/shop/db/rollout", None, t).expect("answer");
        assert_eq!(code, 404);
        rt.block_on(server.shutdown(Duration::from_secs(5)));
    }

    #[test]
    fn an_invalid_pass_says_what_is_wrong_in_the_status() {
        let pass = |outcome| crate::views::status::PassStatus {
            trigger: crate::publish::Trigger::PolicyChange,
            at_ms: 0,
            duration_ms: 3,
            outcome,
        };
        let first = "apps/broken.yaml: document 1: invalid YAML".to_string();
        let v = pass_json(&pass(PassOutcome::Invalid { errors: 2, first }));
        assert_eq!(v["outcome"], "invalid");
        assert_eq!(v["errors"], 2);
        let message = v["message"].as_str().unwrap_or_default();
        assert!(message.contains("2 error(s)") && message.contains("apps/broken.yaml: document 1"), "{v}");
        assert_eq!(pass_json(&pass(PassOutcome::Ok))["message"], Value::Null);
        let failed = pass_json(&pass(PassOutcome::Failed { message: "disk full".into() }));
        assert_eq!(failed["message"], "disk full");
    }

    #[test]
    fn constant_time_eq_compares_contents_and_lengths() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn a_token_file_whose_token_is_no_header_value_is_refused_without_showing_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        for bad in ["SECRET\u{1}def\n", "SECRET\0cd", "SECRET\ncd", "SECRET\u{7f}cd"] {
            std::fs::write(&path, bad).expect("token");
            let e = Token::from_file(&path).expect_err(bad).to_string();
            assert!(e.contains("not allowed in an HTTP header") && !e.contains("SECRET"), "{e}");
        }
        std::fs::write(&path, "  s3cret\n").expect("token");
        assert_eq!(Token::from_file(&path).expect("token").expose(), "s3cret");
    }

    #[test]
    fn token_checks_the_bearer_header_and_hides_itself() {
        let t = Token(Arc::from("s3cr3t"));
        assert!(t.matches_header(Some(&HeaderValue::from_static("Bearer s3cr3t"))));
        assert!(!t.matches_header(Some(&HeaderValue::from_static("Bearer s3cr3"))));
        assert!(!t.matches_header(Some(&HeaderValue::from_static("Basic s3cr3t"))));
        assert!(!t.matches_header(None));
        assert!(!format!("{t:?}").contains("s3cr3t"));
    }

    #[test]
    fn underscore_namespace_is_cluster_scoped() {
        assert_eq!(workload_ref("_", "Namespace", "shop").namespace, None);
        assert_eq!(workload_ref("shop", "Deployment", "web").namespace.as_deref(), Some("shop"));
    }
}
