use serde_json::json;

use super::pages;
use crate::views::placements::MatrixQuery;

/// What a name could smuggle in if it were not escaped.
const HOSTILE: &str = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>'";

/// No tag or attribute of the hostile text survives in a page: every `<` of it is `&lt;`.
fn assert_inert(html: &str, what: &str) {
    for bad in ["<script", "<img", "onerror=alert(2)>", "alert(2)>'"] {
        assert!(!html.contains(bad), "{what}: {bad:?} reached the page:\n{html}");
    }
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{what}: the hostile text is shown, escaped:\n{html}"
    );
}

fn hostile_workload() -> serde_json::Value {
    json!({"namespace": HOSTILE, "kind": "Deployment", "name": HOSTILE, "apiVersion": "apps/v1"})
}

#[test]
fn hostile_names_and_labels_are_text_on_every_page() {
    let matrix = json!({
        "workloads": {"total": 1, "page": 1, "pages": 1, "perPage": 50},
        "clusters": {"total": 1, "page": 1, "pages": 1, "perPage": 20, "names": [HOSTILE]},
        "rows": [{"workload": hostile_workload(), "state": HOSTILE, "cells": [{"replicas": 3}]}],
    });
    let q = MatrixQuery { label: Some(HOSTILE.into()), namespace: Some(HOSTILE.into()), ..MatrixQuery::default() };
    assert_inert(&pages::placements(&matrix, &q), "placements");

    let clusters = json!({"clusters": [{"name": HOSTILE, "zones": [HOSTILE], "labels": {HOSTILE: HOSTILE}, "taints": [{"key": HOSTILE, "value": HOSTILE, "effect": "NoSchedule"}], "replicas": 1, "snapshot": {"ageSeconds": 1.0}}]});
    let resources = json!({"dimensions": [HOSTILE, "cpu"], "groups": [{"group": HOSTILE, "clusters": [{"name": HOSTILE, "health": HOSTILE, "reason": HOSTILE, "confidence": 1.0, "source": HOSTILE,
        "resources": {HOSTILE: {"allocated": HOSTILE, "capacity": "1", "free": "1"}, "cpu": {"allocated": "1", "capacity": "2", "free": "1", "normalised": {"allocated": 1.0, "capacity": 2.0, "free": 1.0}}}}]}]});
    assert_inert(
        &pages::fleet(&clusters, Some(&resources), &Default::default(), pages::FleetWindow::default()),
        "fleet",
    );

    let explain = json!({
        "policy": {"kind": "PropagationPolicy", "namespace": HOSTILE, "name": HOSTILE},
        "claim": {"reason": HOSTILE}, "state": "Scheduled", "reason": HOSTILE, "decidedAt": HOSTILE, "profile": HOSTILE,
        "clusters": [{"name": HOSTILE, "selected": true, "feasible": true, "replicas": 2, "availableReplicas": 3, "reasons": [HOSTILE], "data": {"confidence": 1.0}}],
        "status": {"state": "Healthy", "reason": HOSTILE, "clusters": [{"name": HOSTILE, "state": HOSTILE, "desired": 1, "reason": HOSTILE, "pending": {"count": 1, "reasons": {HOSTILE: 1}, "oldestAgeSeconds": 3.0}}]},
        "failover": {"movedFrom": [{"cluster": HOSTILE, "at": HOSTILE, "reason": HOSTILE}]},
        "rollout": {"policy": HOSTILE, "state": HOSTILE, "stage": HOSTILE, "stageIndex": 0, "versions": {"previous": HOSTILE, "new": HOSTILE},
            "gate": {"minSuccessTime": HOSTILE, "timeLeft": HOSTILE, "healthySince": HOSTILE, "deadlineLeft": HOSTILE},
            "failures": {"count": 1, "max": 0, "clusters": {HOSTILE: HOSTILE}},
            "stages": [{"name": HOSTILE, "version": HOSTILE, "clusters": [HOSTILE]}],
            "history": [{"at": HOSTILE, "stage": HOSTILE, "event": HOSTILE, "cause": HOSTILE}]},
    });
    let history = json!([{"at": HOSTILE, "trigger": HOSTILE, "seq": 1, "outcome": {"scheduled": {HOSTILE: 2}}, "notes": [HOSTILE]}]);
    let files = vec![(HOSTILE.to_string(), HOSTILE.to_string(), Some(HOSTILE.to_string()))];
    assert_inert(&pages::workload(&explain, &history, &files), "workload");

    let listed = json!({"name": HOSTILE, "labels": {"tier": HOSTILE}, "state": HOSTILE, "reason": HOSTILE, "region": HOSTILE, "zones": [HOSTILE], "provider": HOSTILE, "taints": [{"key": HOSTILE, "value": HOSTILE, "effect": HOSTILE}]});
    let snapshots = json!({"versions": [{"version": 1, "firstSeen": HOSTILE, "lastSeen": HOSTILE, "confidence": 1.0}]});
    let workloads = json!({"runs": {"total": 1, "replicas": 2, "items": [{"workload": hostile_workload(), "replicas": 2, "file": HOSTILE}]},
        "refused": {"total": 1, "items": [{"workload": hostile_workload(), "reasons": [HOSTILE]}]}});
    let points = vec![pages::Point { version: 1, at: HOSTILE.into(), capacity: 4.0, free: 2.0 }];
    assert_inert(&pages::cluster(Some(&listed), &snapshots, &points, &workloads), "cluster");

    let plan = json!({"changes": true, "summary": {"changed": 1}, "workloads": [{"workload": HOSTILE, "change": HOSTILE, "reason": HOSTILE}],
        "emptied": HOSTILE, "clusters": [{"cluster": HOSTILE, "added": [HOSTILE]}], "diffs": [{"diff": HOSTILE}]});
    assert_inert(&pages::plan(Some(&plan)), "plan");

    let status = json!({"lastPass": {"outcome": "ok", "at": HOSTILE, "durationMs": 1, "trigger": HOSTILE, "message": HOSTILE},
        "failover": {"stormGuard": HOSTILE}, "ha": {"role": HOSTILE, "holder": HOSTILE}, "lastSummary": HOSTILE});
    assert_inert(&pages::banner(&status), "banner");
}

#[test]
fn the_matrix_pages_link_to_the_next_and_previous_windows() {
    let matrix = json!({
        "workloads": {"total": 120, "page": 2, "pages": 3, "perPage": 50},
        "clusters": {"total": 30, "page": 1, "pages": 2, "perPage": 20, "names": ["a"]},
        "rows": [],
    });
    let q = MatrixQuery { namespace: Some("shop".into()), ..MatrixQuery::default() };
    let html = pages::placements(&matrix, &q);
    assert!(html.contains("workloads page 2 of 3"), "{html}");
    assert!(html.contains("href=\"/ui/placements?namespace=shop&amp;page=1&amp;perPage=50&amp;clusterPage=1&amp;clustersPerPage=20\" rel=\"prev\""), "{html}");
    assert!(html.contains("href=\"/ui/placements?namespace=shop&amp;page=3&amp;perPage=50&amp;clusterPage=1&amp;clustersPerPage=20\" rel=\"next\""), "{html}");
    assert!(html.contains("href=\"/ui/placements?namespace=shop&amp;page=2&amp;perPage=50&amp;clusterPage=2&amp;clustersPerPage=20\" rel=\"next\""), "{html}");
}

/// WCAG 2 relative luminance of `#rrggbb`.
fn luminance(hex: &str) -> f64 {
    let h = hex.trim().trim_start_matches('#');
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&h[i..i + 2], 16).expect("hex colour")) / 255.0;
        if c <= 0.03928 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
    };
    0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4)
}

fn contrast(a: &str, b: &str) -> f64 {
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

/// The stylesheet's palette, read from the stylesheet the daemon serves: every text colour on
/// every background it is used on reaches WCAG 2's AA ratio for normal text (4.5:1).
#[test]
fn the_palette_has_enough_contrast() {
    let css = super::STYLE;
    let var = |name: &str| -> String {
        let at = css.find(&format!("--{name}:")).unwrap_or_else(|| panic!("--{name} in style.css"));
        let rest = &css[at + name.len() + 3..];
        rest[..rest.find(';').expect("semicolon")].trim().to_string()
    };
    let texts = ["fg", "muted", "link", "good", "bad", "neutral", "banner-fg"];
    for bg in ["bg", "card-bg", "banner-bg"] {
        for fg in texts {
            let r = contrast(&var(fg), &var(bg));
            assert!(r >= 4.5, "--{fg} on --{bg}: {r:.2}:1 is below 4.5:1");
        }
    }
    // The focus ring and the chart's lines against the page and the cards (WCAG 2's 3:1 for
    // non-text contrast).
    for bg in ["bg", "card-bg"] {
        for (what, colour) in [
            ("--focus", var("focus")),
            ("CHART_CAPACITY", pages::CHART_CAPACITY.into()),
            ("CHART_FREE", pages::CHART_FREE.into()),
        ] {
            let r = contrast(&colour, &var(bg));
            assert!(r >= 3.0, "{what} on --{bg}: {r:.2}:1 is below 3:1");
        }
    }
    // The skip link is drawn on the page's own background in the link colour.
    assert!(css.contains(".skip { position: absolute; left: -10000px; top: 0; padding: .4rem .8rem; background: var(--bg); color: var(--link); }"));
    assert!((contrast("#000000", "#ffffff") - 21.0).abs() < 1e-9, "the formula itself");
}

#[test]
fn the_limiting_dimension_is_drawn_from_the_estimators_lines() {
    let explain = json!({"clusters": [{"name": "a", "feasible": true, "selected": true, "replicas": 2, "availableReplicas": 2,
        "reasons": ["model: resource summary: cpu: 14 free, 1 per replica: 14 replicas",
                    "model: resource summary: memory: 4Gi free, 2Gi per replica: 2 replicas (limiting)",
                    "model: resource summary: pods: 110 free slots: 110 replicas",
                    "estimator resource-summary: 2 more replicas fit"]}]});
    let html = pages::workload(&explain, &json!([]), &[]);
    assert!(html.contains("<dt class=\"bad\">memory (limiting)</dt>"), "{html}");
    assert!(html.contains("<dt>cpu</dt>"), "{html}");
    assert!(
        html.contains("value=\"2\"") && html.contains("max=\"110\""),
        "bars scaled to the dimension that lets most fit: {html}"
    );
    assert!(html.contains("memory: 4Gi free, 2Gi per replica: 2 replicas"), "the figures beside the bar: {html}");
}

/// The Workload page's rollout section is the rollout document of `/api/v1/…/rollout`
/// (`views::rollout::document`): state and stage, both versions, the gate in `status`'s words,
/// each stage's clusters with the version they run and their observed state, failures and
/// transitions; a workload no RolloutPolicy selects says so.
#[test]
fn the_workload_page_shows_the_rollout_document() {
    use crate::schedule::rollout::{GateFigures, Phase, RolloutState, Transition};
    let mut r = RolloutState::settled("shop/api".into(), 0xa1, "{}".into());
    r.target_hash = 0xb2;
    r.phase = Phase::Progressing;
    r.released = 1;
    r.released_at_ms = 1_000;
    r.healthy_since_ms = Some(2_000);
    r.stages = vec![
        ("canary".into(), vec!["m0".into()]),
        ("next".into(), vec!["m1".into()]),
        ("final".into(), vec!["m2".into()]),
    ];
    r.gate = GateFigures { min_success_ms: 3_000, deadline_ms: Some(120_000), max_failures: 0, needs_approval: true };
    r.transitions.push(Transition {
        at_ms: 1_000,
        stage: "canary".into(),
        event: "released".into(),
        cause: "a new version".into(),
    });
    let doc = crate::views::rollout::document(&r, 3_000);
    let explain = json!({"rollout": doc, "status": {"clusters": [
        {"name": "m0", "state": "Healthy"}, {"name": "m1", "state": "Healthy"}, {"name": "m2", "state": "Progressing"}]}});
    let html = pages::workload(&explain, &json!([]), &[]);
    let section = &html[html.find("<section id=\"rollout\"").expect("a rollout section")..];
    let section = &section[..section.find("</section>").expect("end")];
    assert!(section.contains("Progressing</span> at stage <strong>canary</strong>"), "{section}");
    assert!(
        section.contains("previous version <code>00000000000000a1</code>, new version <code>00000000000000b2</code>"),
        "{section}"
    );
    let gate = crate::views::rollout::gate_text(&doc).expect("a gate");
    assert!(gate.contains("approval required") && section.contains(&esc_text(&gate)), "{gate} in {section}");
    assert!(
        section.contains("<td><strong>canary</strong> (current)</td><td>new</td><td><a href=\"/ui/clusters/m0\">m0</a> (<span class=\"state good\">Healthy</span>)</td>"),
        "{section}"
    );
    assert!(section.contains("<td>next</td><td>previous</td>"), "{section}");
    assert!(section.contains("<td>released</td><td>a new version</td>"), "{section}");
    let none = pages::workload(&json!({"rollout": null}), &json!([]), &[]);
    assert!(none.contains("No RolloutPolicy selects it."), "{none}");
}

fn esc_text(s: &str) -> String {
    super::html::esc(s)
}

/// The Fleet page has a card for every cluster of `/api/v1/clusters`, each with a bar and its
/// figures for every dimension of the resources document, normalised CPU and GPUs by model; a
/// cluster the document does not have (not in the last good pass) still has its card, saying
/// it reports no capacity.
#[test]
fn the_fleet_page_has_bars_for_every_cluster_and_dimension() {
    let clusters = json!({"clusters": [
        {"name": "a", "region": "eu", "zones": ["eu-1"], "state": "Ready", "replicas": 3},
        {"name": "b", "region": "us", "state": "Unreachable", "reason": "no answer", "replicas": 0},
    ]});
    let resources = json!({"dimensions": ["cpu", "memory", "example.com/fpga"], "groups": [{"group": "eu", "clusters": [{
        "name": "a", "health": "Ready", "confidence": 1.0, "source": "live",
        "resources": {
            "cpu": {"allocated": "6", "capacity": "8", "free": "2", "normalised": {"allocated": 7.2, "capacity": 9.6, "free": 2.4}},
            "memory": {"allocated": "8Gi", "capacity": "32Gi", "free": "24Gi"},
            "example.com/fpga": {"allocated": "1", "capacity": "2", "free": "1"}},
        "gpuModels": [{"model": "A100", "resource": "nvidia.com/gpu", "allocated": "1", "capacity": "4", "free": "3"}]}]}]});
    let html = pages::fleet(&clusters, Some(&resources), &Default::default(), pages::FleetWindow::default());
    let card = |name: &str| {
        let at = html
            .find(&format!("<h5><a href=\"/ui/clusters/{name}\">"))
            .unwrap_or_else(|| panic!("a card for {name}: {html}"));
        html[at..at + html[at..].find("</article>").expect("end")].to_string()
    };
    let a = card("a");
    for (dt, text, value, max) in [
        ("cpu", "6 allocated of 8, 2 free", "6", "8"),
        ("cpu (normalised)", "7.2 allocated of 9.6, 2.4 free", "7.2", "9.6"),
        ("memory", "8Gi allocated of 32Gi, 24Gi free", "8589934592", "34359738368"),
        ("example.com/fpga", "1 allocated of 2, 1 free", "1", "2"),
        ("nvidia.com/gpu A100", "1 allocated of 4, 3 free", "1", "4"),
    ] {
        let row = format!("<dt>{dt}</dt><dd><span class=\"bar\"><meter min=\"0\" max=\"{max}\" value=\"{value}\"");
        assert!(a.contains(&row), "{row} in {a}");
        assert!(a.contains(&format!("<span class=\"fig\">{text}</span>")), "{text} in {a}");
    }
    let b = card("b");
    assert!(b.contains("Unreachable") && b.contains("No capacity reported"), "{b}");
    assert!(html.contains("<h3>Region us</h3>"), "{html}");
}

/// A plan of the whole fleet is still a light page: at most `PLAN_ROWS` workloads,
/// `PLAN_CLUSTERS` clusters' file lists and `PLAN_DIFF_BYTES` of diff, and it says how many
/// it left out (and where they all are).
#[test]
fn the_plan_page_is_bounded_and_counts_what_it_leaves_out() {
    let n = pages::PLAN_ROWS + 50;
    let workloads: Vec<_> =
        (0..n).map(|i| json!({"workload": format!("Deployment/ns/w{i}"), "change": "changed"})).collect();
    let clusters: Vec<_> = (0..pages::PLAN_CLUSTERS + 7)
        .map(|i| json!({"cluster": format!("c{i}"), "changed": (0..pages::PLAN_FILES_PER_CLUSTER + 3).map(|f| format!("f{f}.yaml")).collect::<Vec<_>>()}))
        .collect();
    let diff = "x".repeat(100 << 10);
    let diffs: Vec<_> = (0..5).map(|_| json!({"diff": diff})).collect();
    let doc = json!({"changes": true, "summary": {"changed": n, "workloads": n}, "workloads": workloads, "clusters": clusters, "diffs": diffs});
    let html = pages::plan(Some(&doc));
    assert_eq!(html.matches("<td>changed</td>").count(), pages::PLAN_ROWS);
    assert!(html.contains("… and 50 more workloads, not shown here"), "{}", &html[..2000]);
    assert!(html.contains("… and 7 more clusters' files"));
    assert_eq!(html.matches("<summary>files in").count(), pages::PLAN_CLUSTERS);
    assert!(html.contains("… and 3 more files"));
    assert_eq!(html.matches(&diff).count(), 2, "two diffs of 100 KiB within 256 KiB");
    assert!(html.contains("… and 3 more files' diffs"));
    assert!(html.len() < 400 << 10, "{} bytes", html.len());
}

/// The Fleet page shows a window of clusters (in region, zone, name order) with links to the
/// others, and every region's totals on every page.
#[test]
fn the_fleet_page_is_paged() {
    let names: Vec<String> = (0..5).map(|i| format!("c{i}")).collect();
    let clusters = json!({"clusters": names.iter().map(|n| json!({"name": n, "region": "r", "state": "Ready"})).collect::<Vec<_>>()});
    let cpu = json!({"cpu": {"allocated": "1", "capacity": "2", "free": "1"}});
    let resources = json!({"dimensions": ["cpu"], "groups": [{"group": "r", "resources": cpu, "confidence": {"min": 1.0, "mean": 1.0},
        "clusters": names.iter().map(|n| json!({"name": n, "health": "Ready", "resources": cpu})).collect::<Vec<_>>()}]});
    let window = pages::FleetWindow { page: 2, per_page: 2 };
    let html = pages::fleet(&clusters, Some(&resources), &Default::default(), window);
    let cards: Vec<&str> =
        html.match_indices("<h5><a href=\"/ui/clusters/").map(|(i, _)| &html[i + 26..i + 28]).collect();
    assert_eq!(cards, ["c2", "c3"], "{html}");
    // The handler reads the stored snapshots of these only (from the members' regions and
    // names, before the figures).
    let members = || names.iter().rev().map(|n| ("r".to_string(), n));
    assert_eq!(pages::fleet_names(members(), &Default::default(), window), ["c2", "c3"]);
    // Zones order clusters within a region: c0 and c4 in zone a come first.
    let zones = names.iter().map(|c| (c.clone(), if c == "c0" || c == "c4" { "a" } else { "b" }.to_string())).collect();
    assert_eq!(pages::fleet_names(members(), &zones, pages::FleetWindow { page: 1, per_page: 3 }), ["c0", "c4", "c1"]);
    let zoned = pages::fleet(&clusters, Some(&resources), &zones, pages::FleetWindow { page: 1, per_page: 3 });
    let cards: Vec<&str> =
        zoned.match_indices("<h5><a href=\"/ui/clusters/").map(|(i, _)| &zoned[i + 26..i + 28]).collect();
    assert_eq!(cards, ["c0", "c4", "c1"], "the page and the names agree: {zoned}");
    assert!(html.contains("clusters page 2 of 3"), "{html}");
    assert!(html.contains("href=\"/ui/?page=1&amp;perPage=2\" rel=\"prev\""), "{html}");
    assert!(html.contains("href=\"/ui/?page=3&amp;perPage=2\" rel=\"next\""), "{html}");
    assert!(html.contains("<td>r</td><td>5</td>"), "the region's totals: {html}");
    let pairs = |q: &[(&str, &str)]| q.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    assert_eq!(
        pages::FleetWindow::from_pairs(&pairs(&[("perPage", "100000")])).map(|w| w.per_page),
        Ok(pages::FLEET_MAX_PER_PAGE)
    );
    assert!(pages::FleetWindow::from_pairs(&pairs(&[("page", "0")])).is_err());
    assert!(pages::FleetWindow::from_pairs(&pairs(&[("what", "1")])).is_err());
}

/// A reconciled fleet of `w` generated workloads on 6 clusters and the daemon's router over
/// it, its status published as the daemon's loop does after a good pass (the reconciler's own
/// placements in [`crate::views::placed::Placed`]).
struct Served {
    _dir: tempfile::TempDir,
    status: tokio::sync::watch::Sender<std::sync::Arc<crate::views::status::StatusView>>,
    store: crate::store::Store,
    placed: std::sync::Arc<crate::views::placed::Placed>,
    router: axum::Router,
    rt: tokio::runtime::Runtime,
    workload: String,
    cluster: String,
}

fn served(w: usize) -> Served {
    use std::sync::Arc;

    use crate::reconcile::{Changed, PhaseTimings, Reconciler, Settings};
    use crate::testbed::simulate::repo::{self, FleetSpec, RepoSpec};
    let dir = tempfile::tempdir().expect("tempdir");
    let (policies, out) = (dir.path().join("repo"), dir.path().join("out"));
    let spec = RepoSpec { fleet: FleetSpec { clusters: 6, nodes: 2, pods: 4, seed: 1 }, workloads: w };
    repo::write_repo(&policies, &spec, |_, _, _| {}).expect("generate");
    let store = crate::store::Store::open(&dir.path().join("state")).expect("store");
    let rec = Arc::new(Reconciler::new(store.clone(), Settings::builtin()));
    let inputs = rec.load_inputs(&policies, &mut PhaseTimings::default(), &Changed::Unknown).expect("inputs");
    let now = crate::util::clock::now_ms();
    rec.reconcile(&inputs, &out, crate::publish::Trigger::Timer, now).expect("pass");
    let placed = Arc::new(crate::views::placed::Placed::new(rec.placements().expect("held after a pass")));
    assert_eq!(placed.len(), store.placements().expect("placements").len(), "the pass holds what the store has");
    let target = placed.positions().map(|i| Arc::clone(placed.at(i))).find(|p| !p.targets.is_empty());
    let target = target.expect("a placed workload");
    let k = &target.workload;
    let workload = format!("/ui/workloads/{}/{}/{}", k.namespace.as_deref().unwrap_or("_"), k.kind, k.name);
    let cluster = format!("/ui/clusters/{}", target.targets.keys().next().expect("a target"));
    let view = crate::views::status::StatusView {
        ready: true,
        last_success_ms: Some(now),
        inputs: Some(Arc::new(inputs)),
        profiles: Some(Arc::new(crate::schedule::profile::Profiles::builtin())),
        placed: Some(Arc::clone(&placed)),
        ..Default::default()
    };
    let (tx, status) = tokio::sync::watch::channel(Arc::new(view));
    let state = crate::api::ApiState {
        store: store.clone(),
        status,
        heartbeat: Arc::new(crate::views::status::Heartbeat::new(now)),
        heartbeat_timeout: std::time::Duration::from_secs(3600),
        token: None,
        metrics_require_token: false,
        metrics: Arc::new(crate::metrics::Metrics::new()),
        clock: Arc::new(crate::util::clock::SystemClock),
        output_dir: out,
        plans: crate::api::PlanGate::default(),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    // As the listener: each pass's members' figures made when it is published (this one's
    // by it or by the first Fleet request, whichever asks first).
    rt.spawn(super::prepare_passes(tx.subscribe()));
    Served { _dir: dir, status: tx, store, placed, router: crate::api::router(state), rt, workload, cluster }
}

impl Served {
    /// Asks for `path`; answers with the placements the store decoded and those the views read
    /// from the pass's placements for it.
    fn work_of(&self, path: &str) -> (u64, u64) {
        self.work_on(&self.placed, path)
    }

    /// [`Served::work_of`], counting what the views read from `placed` (the status's).
    fn work_on(&self, placed: &crate::views::placed::Placed, path: &str) -> (u64, u64) {
        use tower::ServiceExt as _;
        let (decoded, examined) = (self.store.placements_decoded(), placed.examined());
        let request = axum::http::Request::get(path).body(axum::body::Body::empty()).expect("request");
        let code = self.rt.block_on(async {
            let answer = self.router.clone().oneshot(request).await.unwrap_or_else(|e| match e {});
            answer.status()
        });
        assert_eq!(code, 200, "{path}");
        (self.store.placements_decoded() - decoded, placed.examined() - examined)
    }

    /// Publishes the next pass as the daemon's loop does: the same placements (a new
    /// [`crate::views::placed::Placed`], nothing derived yet) and the same members, but
    /// `polled` of them polled again (their summaries new, equal).
    fn next_pass(&self, polled: usize) -> std::sync::Arc<crate::views::placed::Placed> {
        use std::sync::Arc;
        let placed = Arc::new(crate::views::placed::Placed::new(
            self.placed.positions().map(|i| Arc::clone(self.placed.at(i))).collect(),
        ));
        self.status.send_modify(|v| {
            let mut next = crate::views::status::StatusView::clone(v);
            let mut inputs = crate::reconcile::Inputs::clone(next.inputs.as_deref().expect("inputs"));
            for snap in inputs.snapshots.iter_mut().take(polled) {
                snap.summary = snap.summary.as_deref().map(|s| Arc::new(s.clone()));
            }
            next.inputs = Some(Arc::new(inputs));
            next.placed = Some(Arc::clone(&placed));
            *v = Arc::new(next);
        });
        placed
    }

    /// Runs the runtime until `placed`'s figures are made (by the listener's
    /// [`super::prepare_passes`]; a minute at most).
    fn figures_made(&self, placed: &crate::views::placed::Placed) -> std::sync::Arc<crate::views::resources::Figures> {
        self.rt.block_on(async {
            for _ in 0..12_000 {
                if let Some(f) = placed.figures_made() {
                    return f;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            panic!("the members' figures of a published pass were not made")
        })
    }
}

/// The pages and the API read the pass's placements, never the store's (no placement is
/// decoded for any of them), and how many of those a page reads does not grow with the number
/// of workloads: the Placements page its page of rows, the Workload page its own placement;
/// the Fleet page none; the Cluster page asks every placement once per pass whether it was
/// refused there, and then reads none (the document is kept with the pass). The indexes are
/// built once per pass, not per request. The members' figures of the Fleet page are made when
/// a pass is published, by the listener ([`super::prepare_passes`]), from the last pass's:
/// the Fleet page's first request after a pass finds them made and figures no member, and
/// only the members polled again are figured again.
#[test]
fn a_pages_work_is_bounded_by_the_page_not_by_the_workloads() {
    let mut seen = Vec::new();
    for w in [60, 240] {
        let s = served(w);
        let fleet = s.work_of("/ui/");
        let matrix = s.work_of("/ui/placements");
        let api_matrix = s.work_of("/api/v1/placements");
        let filtered = s.work_of("/ui/placements?namespace=team-07");
        let workload = s.work_of(&s.workload);
        let cluster_first = s.work_of(&s.cluster);
        let cluster_again = s.work_of(&s.cluster);
        for (what, (decoded, _)) in [
            ("fleet", fleet),
            ("placements", matrix),
            ("api placements", api_matrix),
            ("filtered", filtered),
            ("workload", workload),
            ("cluster", cluster_first),
            ("cluster again", cluster_again),
        ] {
            assert_eq!(decoded, 0, "{what} (W={w}): no placement decoded from the store");
        }
        assert_eq!(fleet.1, 0, "W={w}");
        assert_eq!(matrix.1, 50, "W={w}: the default page's 50 rows");
        assert_eq!(api_matrix.1, 50, "W={w}");
        let in_namespace = s.placed.in_namespace(Some("team-07")).len();
        assert_eq!(filtered.1 as usize, 2 * in_namespace, "W={w}: its namespace's rows, checked then shown");
        assert!(cluster_first.1 >= w as u64, "W={w}: every placement asked once per pass: {cluster_first:?}");
        assert_eq!(cluster_again.1, 0, "W={w}: kept with the pass");
        assert_eq!(s.placed.builds(), 4, "W={w}: the index, the replicas, requiredBy and the figures, once each");
        assert_eq!(s.figures_made(&s.placed).figured(), 6, "W={w}: the first pass's, every member");
        for polled in [1, 0, 6] {
            let next = s.next_pass(polled);
            let figures = s.figures_made(&next);
            assert_eq!(figures.figured(), polled, "W={w}: made when published, of the members polled again only");
            let (decoded, examined) = s.work_on(&next, "/ui/");
            assert_eq!((decoded, examined), (0, 0), "W={w}");
            let after = next.figures_made().expect("made");
            assert!(std::sync::Arc::ptr_eq(&after, &figures), "W={w}: the first request after the pass made none");
            assert_eq!(
                next.builds(),
                2,
                "W={w}: the figures (the listener's) and the replicas (the page's), once each"
            );
        }
        let before = s.store.placements_decoded();
        s.store.placements().expect("placements");
        assert_eq!(s.store.placements_decoded() - before, w as u64, "the counter counts what the store decodes");
        seen.push((matrix.1, workload.1));
    }
    assert_eq!(seen[0], seen[1], "the Placements and Workload pages read as much at W=60 as at W=240");
}

/// The Cluster page's chart has a text equivalent: an accessible name and title on the SVG,
/// and a table below it with a row per snapshot version holding the same figures.
#[test]
fn the_cluster_chart_has_a_table_of_its_figures() {
    let points: Vec<pages::Point> = (1..=3)
        .map(|v| pages::Point { version: v, at: format!("t{v}"), capacity: 8.0, free: 8.0 - v as f64 })
        .collect();
    let html = pages::cluster(None, &json!({"versions": []}), &points, &json!({}));
    let label = "cpu capacity and free over 3 snapshot versions (table below)";
    assert!(html.contains(&format!("role=\"img\" aria-label=\"{label}\"><title>{label}</title>")), "{html}");
    for p in &points {
        let row = format!("<td>{}</td><td>t{}</td><td>8</td><td>{}</td>", p.version, p.version, p.free);
        assert!(html.contains(&row), "{row} in {html}");
    }
}
