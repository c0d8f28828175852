//! The read-only web view under `/ui/`: server-rendered HTML from the same `views/` builders
//! as the JSON API (each page calls what its `/api/v1/…` route calls and renders that
//! document), one stylesheet and one icon compiled into the binary, and no script.
//!
//! | page | made from |
//! |---|---|
//! | `/ui/?page=&perPage=` (Fleet) | `/api/v1/status`, `/api/v1/clusters`, `/api/v1/resources?by=region` |
//! | `/ui/placements?namespace=&policy=&label=&state=&page=&perPage=&clusterPage=&clustersPerPage=` | `/api/v1/placements` (same query) |
//! | `/ui/workloads/{ns}/{kind}/{name}` | `…/explain` (with its `status`), `…/history`, the placement's files in the output directory |
//! | `/ui/clusters/{name}` | `/api/v1/clusters`, `…/snapshots`, `…/workloads` |
//! | `/ui/plan` | the last plan `POST /api/v1/plan` answered |
//!
//! The placements a page shows are the last good pass's as its reconciler holds them
//! ([`crate::views::placed::Placed`] in the status, an `Arc` the next pass replaces), indexed
//! on a page's blocking thread the first time one asks: no page decodes every placement from
//! the store or takes a lock a pass takes (before the first good pass, the store's). The
//! Fleet page's per-member figures are made as soon as a pass is published, by the listener
//! ([`prepare_passes`]), from the last pass's.
//!
//! Every answer carries a Content-Security-Policy that allows only the daemon's own stylesheet
//! and icon (no script, no inline style, no frame, forms only to the daemon), `nosniff`,
//! `no-referrer` and `no-store`.
//!
//! With `[http] token_file`, a page needs the token: `Authorization: Bearer` as the API, or the
//! session cookie the login form sets (`POST /ui/login` with the token in the form body:
//! never in a URL). The cookie holds an HMAC-SHA-256 of the token under a key drawn at the
//! daemon's start, not the token: it opens the web view only (not `/api/`), ends with the
//! daemon, and is `HttpOnly; SameSite=Strict; Path=/ui`. Without a token file the pages are
//! open, as the API is.

mod html;
pub mod pages;

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;

use super::{ApiState, authorize, good_pass, placed, status_json, workload_ref};
use crate::views::placements::MatrixQuery;

/// The Content-Security-Policy of every `/ui/` answer.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                       frame-ancestors 'none'; base-uri 'none'";

/// The session cookie's name.
pub const COOKIE: &str = "fedsched_ui";

/// The longest query string a page accepts (longer: 414).
pub const MAX_QUERY: usize = 2048;

/// The largest rendered file a workload page shows (the rest is cut, and says so).
pub const MAX_FILE_SHOWN: usize = 64 << 10;

const STYLE: &str = include_str!("style.css");
const ICON: &str = include_str!("icon.svg");

/// The routes of the web view, added to the API's router.
pub fn routes(r: Router<ApiState>) -> Router<ApiState> {
    r.route("/ui", get(|| async { see_other("/ui/") }))
        .route("/ui/", get(fleet))
        .route("/ui/placements", get(placements))
        .route("/ui/workloads/{ns}/{kind}/{name}", get(workload))
        .route("/ui/clusters/{name}", get(cluster))
        .route("/ui/plan", get(plan))
        .route("/ui/login", get(login_page).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/style.css", get(|| async { asset("text/css; charset=utf-8", STYLE) }))
        .route("/ui/icon.svg", get(|| async { asset("image/svg+xml", ICON) }))
        .route("/favicon.ico", get(|| async { see_other("/ui/icon.svg") }))
}

/// The headers every `/ui/` answer carries.
pub fn secure(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    secure(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

fn see_other(to: &'static str) -> Response {
    secure((StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response())
}

fn html(code: StatusCode, body: String) -> Response {
    secure((code, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response())
}

/// An error page (the message is escaped).
fn refuse(s: &ApiState, code: StatusCode, message: &str) -> Response {
    let status = status_json(&s.status.borrow());
    let body = format!("<p class=\"bad\">{}</p>", html::esc(message));
    html(
        code,
        html::page(code.canonical_reason().unwrap_or("Error"), "", s.token.is_some(), &pages::banner(&status), &body),
    )
}

/// The key the session cookie is made with: random, drawn once per process.
fn session_key() -> &'static ring::hmac::Key {
    static KEY: OnceLock<ring::hmac::Key> = OnceLock::new();
    KEY.get_or_init(|| {
        let rng = ring::rand::SystemRandom::new();
        // The system's random source failing is not something a web view can recover from;
        // a fixed key would make every cookie forgeable, so fall back to a key no cookie can
        // match (a fresh one per attempt would do the same): `matches` then refuses all.
        ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &rng)
            .unwrap_or_else(|_| ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &[0; 32]))
    })
}

/// The session cookie's value for a token: hex HMAC-SHA-256 under [`session_key`].
fn session_value(token: &str) -> String {
    let tag = ring::hmac::sign(session_key(), token.as_bytes());
    tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a request may see the pages: no token configured, the bearer token, or the
/// session cookie.
fn admitted(s: &ApiState, headers: &HeaderMap) -> bool {
    let Some(token) = &s.token else { return true };
    if authorize(s, headers).is_ok() {
        return true;
    }
    let want = session_value(token.expose());
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .any(|(k, v)| k == COOKIE && super::constant_time_eq(v.as_bytes(), want.as_bytes()))
}

/// The login form (401 after a wrong token).
fn login_form(s: &ApiState, code: StatusCode, message: Option<&str>) -> Response {
    let note = message.map(|m| format!("<p class=\"bad\" role=\"alert\">{}</p>", html::esc(m))).unwrap_or_default();
    let body = format!(
        "{note}<form method=\"post\" action=\"/ui/login\" class=\"login\"><p><label for=\"token\">API token (the contents of <code>[http] token_file</code>)</label></p>\
         <p><input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required maxlength=\"4096\" autofocus></p>\
         <p><button type=\"submit\">Log in</button></p></form><p>The token is sent in the form's body, never in an address; the daemon answers with a cookie for this view only.</p>"
    );
    let mut r = html(code, html::page("Log in", "", false, "", &body));
    if code == StatusCode::UNAUTHORIZED && s.token.is_some() {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

async fn login_page(State(s): State<ApiState>) -> Response {
    if s.token.is_none() {
        return see_other("/ui/");
    }
    login_form(&s, StatusCode::OK, None)
}

/// `POST /ui/login`: the token from a form body (`token=…`, at most the listener's small
/// body limit); right: the session cookie and back to the Fleet page; wrong: the form again, 401.
async fn login(State(s): State<ApiState>, body: axum::body::Bytes) -> Response {
    let Some(token) = &s.token else { return see_other("/ui/") };
    let text = String::from_utf8_lossy(&body);
    let given = text
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| crate::util::percent::decode(v))
        .unwrap_or_default();
    if !super::constant_time_eq(given.trim().as_bytes(), token.expose().as_bytes()) {
        tracing::info!("web view: a login with a wrong token");
        return login_form(&s, StatusCode::UNAUTHORIZED, Some("wrong token"));
    }
    let cookie = format!("{COOKIE}={}; Path=/ui; HttpOnly; SameSite=Strict", session_value(token.expose()));
    let mut r = see_other("/ui/");
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn logout() -> Response {
    let mut r = see_other("/ui/login");
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("fedsched_ui=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    r
}

/// The decoded pairs of a query string: at most [`MAX_QUERY`] bytes and 32 pairs.
fn query_pairs(uri: &Uri) -> Result<Vec<(String, String)>, (StatusCode, String)> {
    let q = uri.query().unwrap_or("");
    if q.len() > MAX_QUERY {
        return Err((StatusCode::URI_TOO_LONG, format!("the query is longer than {MAX_QUERY} bytes")));
    }
    let pairs: Vec<(String, String)> = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (crate::util::percent::decode(k), crate::util::percent::decode(v))
        })
        .collect();
    if pairs.len() > 32 {
        return Err((StatusCode::BAD_REQUEST, "more than 32 query parameters".into()));
    }
    Ok(pairs)
}

/// The parsed matrix query of a request (shared with `/api/v1/placements`).
pub fn matrix_query(uri: &Uri) -> Result<MatrixQuery, (StatusCode, String)> {
    let pairs = query_pairs(uri)?;
    MatrixQuery::from_pairs(&pairs).map_err(|e| (StatusCode::BAD_REQUEST, e))
}

/// Renders a page for an admitted request (another is sent to the login form, with nothing
/// of the page): `make` runs on a blocking thread (it reads the
/// store) and returns the title and body; the banner comes from the loop's status.
async fn render<F>(s: ApiState, headers: &HeaderMap, active: &'static str, make: F) -> Response
where
    F: FnOnce(&ApiState) -> Result<(String, String), (StatusCode, String)> + Send + 'static,
{
    if !admitted(&s, headers) {
        return see_other("/ui/login");
    }
    let status = status_json(&s.status.borrow());
    let logout = s.token.is_some();
    let state = s.clone();
    match tokio::task::spawn_blocking(move || make(&state)).await {
        Ok(Ok((title, body))) => {
            html(StatusCode::OK, html::page(&title, active, logout, &pages::banner(&status), &body))
        }
        Ok(Err((code, message))) => refuse(&s, code, &message),
        Err(e) => refuse(&s, StatusCode::INTERNAL_SERVER_ERROR, &format!("request task failed: {e}")),
    }
}

fn store_failed(e: crate::store::StoreError) -> (StatusCode, String) {
    let r = super::store_error(e);
    (r.code, r.message)
}

/// Makes what the Fleet page needs of each pass the loop publishes and no page could make
/// in its time, as soon as it is published, on a blocking thread of the listener's runtime
/// (never the pass's: it has published): every member's figures
/// ([`crate::views::placed::Placed::figures`]), from the last pass's (only the members whose
/// data changed are figured again). The page's first request after a pass finds them made, or
/// waits for these being made (never makes them again). Runs until the status's sender is
/// gone (the listener ends it when it stops).
pub async fn prepare_passes(mut status: tokio::sync::watch::Receiver<Arc<crate::views::status::StatusView>>) {
    use crate::views::resources::Figures;
    let mut last: Option<Arc<Figures>> = None;
    let mut seen = std::sync::Weak::new();
    loop {
        let view = Arc::clone(&status.borrow_and_update());
        if let (Some(placed), Some(inputs), Some(profiles)) = (&view.placed, &view.inputs, &view.profiles)
            && !std::ptr::eq(seen.as_ptr(), Arc::as_ptr(placed))
        {
            seen = Arc::downgrade(placed);
            let (placed, inputs, profiles, since) =
                (Arc::clone(placed), Arc::clone(inputs), Arc::clone(profiles), last.clone());
            let made = tokio::task::spawn_blocking(move || {
                placed.figures(|| Figures::since(inputs.snapshots.iter(), profiles.model(), since.as_deref()));
                placed.figures_made()
            })
            .await;
            match made {
                Ok(figures) => last = figures,
                Err(error) => tracing::warn!(%error, "web view: making the members' figures of a pass failed"),
            }
        }
        drop(view);
        if status.changed().await.is_err() {
            return;
        }
    }
}

async fn fleet(State(s): State<ApiState>, headers: HeaderMap, uri: Uri) -> Response {
    let window = match query_pairs(&uri)
        .and_then(|p| pages::FleetWindow::from_pairs(&p).map_err(|e| (StatusCode::BAD_REQUEST, e)))
    {
        Ok(w) => w,
        Err((code, m)) if admitted(&s, &headers) => return refuse(&s, code, &m),
        Err(_) => return see_other("/ui/login"),
    };
    render(s, &headers, "Fleet", move |s| {
        let now = s.clock.now_ms();
        let Some((inputs, profiles)) = good_pass(s) else {
            return Ok(("Fleet".into(), pages::fleet(&Value::Null, None, &Default::default(), window)));
        };
        use crate::views::resources::{Figures, GroupBy, document_with, views};
        let model = profiles.model();
        // What needs no figures first: the confidences now, and the page's clusters (in region,
        // zone, name order, from the snapshots alone) with their entries of `/api/v1/clusters`
        // (one stored snapshot each, not the fleet's); then the members' figures (their nodes
        // summed) once per pass, made when the pass was published ([`prepare_passes`]: asked
        // while they are being made, this waits for them; it makes them only when nothing has).
        let members = views(&inputs.snapshots, model, now);
        let zones: std::collections::BTreeMap<String, String> =
            inputs.snapshots.iter().map(|c| (c.name.clone(), c.zones.join(", "))).collect();
        let placed = placed(s).map_err(store_failed)?;
        let regions = inputs.snapshots.iter().map(|c| (GroupBy::Region.key(c), c.name.as_str()));
        let mut items = Vec::new();
        for name in pages::fleet_names(regions, &zones, window) {
            let replicas = placed.replicas_by_cluster().get(&name).copied().unwrap_or(0);
            let entry = crate::views::report::cluster_json(&s.store, Some(&inputs.snapshots), now, &name, replicas)
                .map_err(store_failed)?;
            items.extend(entry);
        }
        let figures = placed.figures(|| Figures::of(inputs.snapshots.iter(), model));
        let resources = document_with(&members, &GroupBy::Region, figures, model);
        let clusters = serde_json::json!({ "clusters": items });
        Ok(("Fleet".into(), pages::fleet(&clusters, Some(&resources), &zones, window)))
    })
    .await
}

async fn placements(State(s): State<ApiState>, headers: HeaderMap, uri: Uri) -> Response {
    let q = match matrix_query(&uri) {
        Ok(q) => q,
        Err((code, m)) if admitted(&s, &headers) => return refuse(&s, code, &m),
        Err(_) => return see_other("/ui/login"),
    };
    render(s, &headers, "Placements", move |s| {
        let m = super::matrix_document(s, &q).map_err(store_failed)?;
        Ok(("Placements".into(), pages::placements(&m, &q)))
    })
    .await
}

async fn workload(
    State(s): State<ApiState>,
    headers: HeaderMap,
    UrlPath((ns, kind, name)): UrlPath<(String, String, String)>,
) -> Response {
    render(s, &headers, "", move |s| {
        let r = workload_ref(&ns, &kind, &name);
        let title =
            format!("{}/{}{}", r.kind, r.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default(), r.name);
        let Some((inputs, profiles)) = good_pass(s) else {
            return Err((StatusCode::SERVICE_UNAVAILABLE, "no good reconcile yet: nothing to explain from".into()));
        };
        let Some(template) = inputs.set.find_template(&r.kind, r.namespace.as_deref(), &r.name) else {
            return Err((StatusCode::NOT_FOUND, format!("no resource template {title} in the policy repository")));
        };
        let key = template.key.clone();
        let placed = placed(s).map_err(store_failed)?;
        let source = crate::views::placed::Source::Pass(&placed);
        let explain = crate::views::explain::explain_from(&inputs, &s.store, source, &profiles, &r, s.clock.now_ms())
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let records = crate::views::report::history_from(&s.store, source, &r).map_err(store_failed)?;
        let history = crate::views::report::history_json(&s.store, &records).map_err(store_failed)?;
        let files = match placed.get(&key) {
            Some(p) => p.files.iter().map(|(c, f)| (c.clone(), f.clone(), read_output(&s.output_dir, c, f))).collect(),
            None => Vec::new(),
        };
        Ok((title, pages::workload(&explain, &history, &files)))
    })
    .await
}

/// A published file's text (`OUT/<cluster>/<file>`), cut at [`MAX_FILE_SHOWN`]; `None` when
/// it cannot be read or the stored path would leave the output directory.
fn read_output(out: &std::path::Path, cluster: &str, file: &str) -> Option<String> {
    use std::path::Component;
    let rel = std::path::Path::new(cluster).join(file);
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    let mut f = std::fs::File::open(out.join(rel)).ok()?;
    let mut buf = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut f, MAX_FILE_SHOWN as u64 + 1), &mut buf).ok()?;
    let cut = buf.len() > MAX_FILE_SHOWN;
    buf.truncate(MAX_FILE_SHOWN);
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if cut {
        text.push_str("\n… (cut: the file is larger than 64 KiB)\n");
    }
    Some(text)
}

async fn cluster(State(s): State<ApiState>, headers: HeaderMap, UrlPath(name): UrlPath<String>) -> Response {
    render(s, &headers, "", move |s| {
        let known = match s.store.snapshot_head(&name) {
            Ok(head) => head.is_some(),
            Err(crate::store::StoreError::InvalidName { .. }) => false,
            Err(e) => return Err(store_failed(e)),
        };
        if !known {
            return Err((StatusCode::NOT_FOUND, format!("no cluster {name:?} is known")));
        }
        let current = s.status.borrow().inputs.clone();
        // What runs here (and so the replicas `/api/v1/clusters` sums for it), then this one
        // cluster's entry of `/api/v1/clusters`: not the whole fleet's.
        let placed = placed(s).map_err(store_failed)?;
        let workloads = crate::views::placements::cluster_workloads(&s.store, &placed, &name).map_err(store_failed)?;
        let replicas = workloads["runs"]["replicas"].as_i64().unwrap_or(0);
        let listed = crate::views::report::cluster_json(
            &s.store,
            current.as_ref().map(|i| i.snapshots.as_slice()),
            s.clock.now_ms(),
            &name,
            replicas,
        )
        .map_err(store_failed)?;
        let versions = s.store.snapshot_versions(&name).map_err(store_failed)?;
        let snapshots = crate::views::report::snapshots_json(&name, &versions);
        let mut points = Vec::new();
        // The chart reads the last 48 versions (each decoded once per process: a stored
        // version never changes).
        for meta in versions.iter().rev().take(48).rev() {
            let Some(sum) = crate::views::report::stored_capacity(&s.store, &name, meta).map_err(store_failed)? else {
                continue;
            };
            points.push(pages::Point {
                version: meta.version,
                at: crate::views::explain::format_ms(meta.first_seen_ms),
                capacity: html::quantity(&sum["allocatable"]["cpu"]),
                free: html::quantity(&sum["available"]["cpu"]),
            });
        }
        Ok((format!("Cluster {name}"), pages::cluster(listed.as_ref(), &snapshots, &points, &workloads)))
    })
    .await
}

async fn plan(State(s): State<ApiState>, headers: HeaderMap) -> Response {
    render(s, &headers, "Plan", |s| {
        let last: Option<Arc<Value>> = s.plans.last();
        Ok(("Plan".into(), pages::plan(last.as_deref())))
    })
    .await
}

#[cfg(test)]
mod tests;
