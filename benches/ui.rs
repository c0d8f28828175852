//! The web view's server time and size at scale (issue 53), two ways:
//! - the Placements page and the Cluster page's workloads over W synthetic placements across
//!   C clusters held as a pass holds them ([`Placed`]: the daemon publishes its reconciler's
//!   placements after every good pass; the index is built once per pass, on the first request
//!   that needs it, and timed apart) — what their handlers do (index, filter, page, render),
//!   without a socket;
//! - every page (Fleet, Placements, Workload, Cluster, Plan) answered by the daemon's own
//!   router (`api::router`, the handler, its blocking task, the page and its headers; no
//!   socket) over a real reconciled fleet: a generated repository of W workloads and C
//!   clusters with node data (`testbed::simulate::repo`, 100 nodes and 300 pods a cluster as
//!   the marks' fleet, `FEDSCHED_UI_NODES` to change; 10 in test mode),
//!   one pass of the reconciler into a store and an output directory, 48 more snapshot
//!   versions of the cluster whose page is asked for (its chart's whole window), and a plan of
//!   one edited template and one of every template edited (the Plan page's largest). Each page
//!   has its "of which" lines (the views it is made of), and the pages that read the pass's
//!   placements are also timed as the first request after a pass (its indexes built then):
//!   one figure, the publishing of the pass and the whole request. The listener's
//!   `api::ui::prepare_passes` runs as in the daemon (each pass's members' figures made when
//!   it is published), and the Fleet page's first request is asked the moment a pass is
//!   published in which every member was polled again (none of the last pass's figures can
//!   be taken, and the request waits for those being made): its worst case.
//!
//! Not a timed test: it prints medians and bytes. Run: `cargo bench --bench ui` (release,
//! W = 10,000, C = 1,000; `FEDSCHED_UI_WORKLOADS`, `FEDSCHED_UI_CLUSTERS` to change), or quickly
//! `cargo bench --profile dev --bench ui -- --test` (W = 200, C = 50, one iteration: what CI runs).
//!
//! The placements are synthetic but shaped as a pass leaves them: each workload targets 3
//! clusters with replicas, its result holds 100 feasible verdicts with estimates and scores and
//! one group of rejected clusters (the rest of the fleet) as position ranges in the universe.

use std::collections::BTreeMap;
use std::sync::Arc;

use fedsched::api::ui::pages;
use fedsched::members::live::{LiveData, LiveStatus, LiveView};
use fedsched::policy::{ObjectKey, PolicyKind, PolicyRef};
use fedsched::schedule::fleet::{ClusterSet, Rejection, universe_of};
use fedsched::schedule::{ClusterVerdict, Outcome, ScheduleResult};
use fedsched::store::{PlacementRecord, Store};
use fedsched::testbed::bench::timing::{bench, quick_mode};
use fedsched::views::placed::Placed;
use fedsched::views::placements::{MatrixQuery, cluster_workloads, matrix};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn placement(i: usize, names: &[String], universe: u64) -> PlacementRecord {
    let c = names.len();
    let feasible: Vec<usize> = (0..100.min(c)).map(|k| (i + k) % c).collect();
    let targets: BTreeMap<String, Option<i32>> =
        feasible.iter().take(3).map(|&k| (names[k].clone(), Some(2))).collect();
    let mut verdicts: Vec<ClusterVerdict> = feasible
        .iter()
        .map(|&k| {
            let mut v = ClusterVerdict::rejected(names[k].clone(), Vec::new());
            v.feasible = true;
            v.available_replicas = Some(40);
            v.estimates = vec![("resource-summary".into(), 40)];
            v.scores = vec![("cluster-locality".into(), 0)];
            v.replicas = targets.get(&names[k]).copied().flatten();
            v.selected = v.replicas.is_some();
            v
        })
        .collect();
    verdicts.sort_by(|a, b| a.name.cmp(&b.name));
    let mut rest: Vec<u32> = (0..c as u32).filter(|p| !feasible.contains(&(*p as usize))).collect();
    rest.sort_unstable();
    PlacementRecord {
        workload: ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some(format!("ns-{:03}", i % 100).into()),
            name: format!("app-{i:05}").into(),
        },
        policy: Some(PolicyRef {
            kind: PolicyKind::PropagationPolicy,
            namespace: Some(format!("ns-{:03}", i % 100)),
            name: "spread".into(),
        }),
        result: ScheduleResult {
            outcome: Outcome::Scheduled { targets: targets.clone() },
            verdicts: Arc::new(verdicts),
            rejected: vec![Rejection {
                reasons: vec![
                    "cluster-affinity: cluster does not match the clusterAffinity label or field selector".into(),
                ],
                clusters: ClusterSet::from_sorted(rest.into_iter().map(fedsched::schedule::UniversePos::new)),
            }],
            universe,
            affinity_name: None,
        },
        files: targets
            .keys()
            .map(|c| (c.clone(), format!("ns-{:03}/apps_deployment_app-{i:05}.yaml", i % 100)))
            .collect(),
        targets,
        affinity_name: None,
        history_seq: i as u64,
        decided_at_ms: 0,
    }
}

fn main() {
    let quick = quick_mode();
    let (w, c) =
        if quick { (200, 50) } else { (env("FEDSCHED_UI_WORKLOADS", 10_000), env("FEDSCHED_UI_CLUSTERS", 1_000)) };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let store = Store::open(dir.path()).unwrap_or_else(|e| panic!("store: {e}"));
    let names: Vec<String> = (0..c).map(|k| format!("member-{k:04}")).collect();
    let universe = store.put_universe(&names).unwrap_or_else(|e| panic!("universe: {e}"));
    assert_eq!(universe, universe_of(&names));
    for i in 0..w {
        store.put_placement(&placement(i, &names, universe)).unwrap_or_else(|e| panic!("placement: {e}"));
    }
    let clusters: Vec<(String, BTreeMap<String, String>)> = names
        .iter()
        .enumerate()
        .map(|(k, n)| {
            (n.clone(), BTreeMap::from([("tier".to_string(), if k % 10 == 0 { "gpu" } else { "general" }.to_string())]))
        })
        .collect();
    println!(
        "{w} workloads × {c} clusters, build: {}",
        if cfg!(debug_assertions) { "dev (unoptimised)" } else { "optimised" }
    );
    let held: Vec<Arc<PlacementRecord>> =
        store.placements().unwrap_or_else(|e| panic!("placements: {e}")).into_iter().map(Arc::new).collect();
    let placed = Placed::new(held.clone());
    let page = |q: &MatrixQuery| {
        let m = matrix(&placed, &clusters, q);
        pages::placements(&m, q)
    };
    let default = MatrixQuery::default();
    let widest = MatrixQuery { per_page: 200, clusters_per_page: 60, ..MatrixQuery::default() };
    let filtered = MatrixQuery { namespace: Some("ns-042".into()), label: Some("tier=gpu".into()), ..widest.clone() };
    for (label, q) in
        [("default page", &default), ("widest page (200 × 60)", &widest), ("filtered (namespace, label)", &filtered)]
    {
        let bytes = page(q).len();
        bench(&format!("placements page, {label}: {bytes} bytes"), 5, 1, || page(q));
    }
    bench("the index of a pass's placements (once per pass, first request)", 5, 1, || {
        let fresh = Placed::new(held.clone());
        fresh.positions().len()
    });
    bench("  (before: store.placements(), every request)", 5, 1, || store.placements().map(|p| p.len()));
    let on = |placed: &Placed, name: &str| {
        let doc = cluster_workloads(&store, placed, name).unwrap_or_else(|e| panic!("cluster: {e}"));
        doc.to_string().len()
    };
    let bytes = on(&placed, &names[0]);
    bench(&format!("cluster page's workloads (runs, refused), kept: {bytes} bytes of JSON"), 5, 1, || {
        on(&placed, &names[0])
    });
    bench("cluster page's workloads, first ask this pass (made: every placement asked)", 5, 1, || {
        let fresh = Placed::new(held.clone());
        fresh.positions().len();
        on(&fresh, &names[0])
    });
    drop(store);
    drop(dir);
    every_page(w, c, if quick { 10 } else { env("FEDSCHED_UI_NODES", 100) });
}

/// Every page through the daemon's router over a reconciled fleet of `w` workloads and `c`
/// clusters of `nodes` nodes (3 pods each): server time (median of 5) and bytes of each answer.
fn every_page(w: usize, c: usize, nodes: usize) {
    use fedsched::reconcile::{PhaseTimings, Reconciler, Settings};
    use fedsched::testbed::simulate::repo::{self, FleetSpec, RepoSpec};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let (policies, state, out) = (dir.path().join("repo"), dir.path().join("state"), dir.path().join("out"));
    let now = fedsched::util::clock::now_ms();
    let spec = RepoSpec { fleet: FleetSpec { clusters: c, nodes, pods: 3 * nodes, seed: 1 }, workloads: w };
    let mut live = LiveView::default();
    repo::write_repo(&policies, &spec, |_, cl, obs| {
        let mut data = LiveData::of(obs, Default::default());
        data.poll.at_ms = now;
        live.clusters.insert(
            cl.name.clone(),
            LiveStatus { endpoint: "bench".into(), last_good: Some(Arc::new(data)), ..Default::default() },
        );
    })
    .unwrap_or_else(|e| panic!("generate: {e}"));
    let rec =
        Arc::new(Reconciler::new(Store::open(&state).unwrap_or_else(|e| panic!("store: {e}")), Settings::builtin()));
    let mut inputs = rec
        .load_inputs(&policies, &mut PhaseTimings::default(), &fedsched::reconcile::Changed::Unknown)
        .unwrap_or_else(|e| panic!("load: {} error(s), first {:?}", e.len(), e.first().map(ToString::to_string)));
    inputs.apply_live(&live, &rec.store);
    let report = rec
        .reconcile(&inputs, &out, fedsched::publish::Trigger::Timer, now)
        .unwrap_or_else(|e| panic!("reconcile: {e}"));
    println!("every page through the router ({nodes} nodes a cluster): {}", report.summary());

    // The page of a cluster with a chart's whole window: 48 more versions of its snapshot.
    let cluster = inputs.snapshots.iter().find(|s| s.summary.is_some()).expect("a cluster with a summary").clone();
    for v in 0..48i64 {
        let mut snap = cluster.clone();
        if let Some(sum) = snap.summary.as_mut() {
            let sum = Arc::make_mut(sum);
            let cpu = sum.allocated.get("cpu");
            sum.allocated.set("cpu", (cpu + v * 100).max(0));
        }
        rec.store
            .record_snapshot(&snap, fedsched::model::Observed { at_ms: now + v as u64 * 1000, confidence: 1.0 })
            .unwrap_or_else(|e| panic!("snapshot: {e}"));
    }
    // The workload whose page is asked for: the first placed on the most clusters.
    let placements = rec.store.placements().unwrap_or_else(|e| panic!("placements: {e}"));
    let widest = placements.iter().max_by_key(|p| p.targets.len()).expect("a placement");
    let k = &widest.workload;
    let workload_page = format!(
        "/ui/workloads/{}/{}/{}",
        k.namespace.as_deref().unwrap_or("_"),
        k.kind,
        fedsched::util::percent::encode(&k.name)
    );
    println!("  the workload page's: {} on {} clusters", k.name, widest.targets.len());
    let wr = fedsched::views::explain::WorkloadRef {
        kind: k.kind.to_string(),
        namespace: k.namespace.as_deref().map(str::to_string),
        name: k.name.to_string(),
    };
    drop(placements);

    let (tx, status) = tokio::sync::watch::channel(Arc::new(fedsched::views::status::StatusView::default()));
    let inputs = Arc::new(inputs);
    let profiles = Arc::new(fedsched::schedule::profile::Profiles::builtin());
    // As the daemon after a pass: the reconciler's own placements, indexed on first use.
    let held = rec.placements().expect("the reconciler holds its placements after a pass");
    let view = fedsched::views::status::StatusView {
        ready: true,
        last_success_ms: Some(now),
        inputs: Some(inputs.clone()),
        profiles: Some(profiles.clone()),
        placed: Some(Arc::new(Placed::new(held.clone()))),
        ..Default::default()
    };
    tx.send_replace(Arc::new(view));
    // The same members, every one polled again since: the same figures in new summaries and
    // nodes (nothing of the last pass's can be taken), made once here.
    let polled_again = {
        let mut next = fedsched::reconcile::Inputs::clone(&inputs);
        for snap in &mut next.snapshots {
            snap.nodes = Arc::new(Vec::clone(&snap.nodes));
            snap.summary = snap.summary.as_deref().map(|s| Arc::new(s.clone()));
        }
        Arc::new(next)
    };
    // A new pass published: the same placements, nothing derived from them yet; with
    // `every_member`, every member polled again since the last pass (the published inputs
    // alternate between two sets of equal members that share no summary or nodes).
    let polled = std::cell::Cell::new(false);
    let new_pass = |every_member: bool| {
        tx.send_modify(|v| {
            let mut next = fedsched::views::status::StatusView::clone(v);
            next.placed = Some(Arc::new(Placed::new(held.clone())));
            if every_member {
                polled.set(!polled.get());
                next.inputs = Some(Arc::clone(if polled.get() { &polled_again } else { &inputs }));
            }
            *v = Arc::new(next);
        })
    };
    let plans = fedsched::api::PlanGate::default();
    let state = fedsched::api::ApiState {
        store: rec.store.clone(),
        status,
        heartbeat: Arc::new(fedsched::views::status::Heartbeat::new(now)),
        heartbeat_timeout: std::time::Duration::from_secs(3600),
        token: None,
        metrics_require_token: false,
        metrics: Arc::new(fedsched::metrics::Metrics::new()),
        clock: Arc::new(fedsched::util::clock::SystemClock),
        output_dir: out.clone(),
        plans: plans.clone(),
    };
    let router = fedsched::api::router(state);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    // As the listener (`api::start_with`): each pass's members' figures made when it is published.
    rt.spawn(fedsched::api::ui::prepare_passes(tx.subscribe()));
    let get = |path: &str| -> usize {
        use tower::ServiceExt as _;
        let request = axum::http::Request::get(path).body(axum::body::Body::empty()).expect("request");
        rt.block_on(async {
            let answer = router.clone().oneshot(request).await.unwrap_or_else(|e| match e {});
            assert_eq!(answer.status(), 200, "{path}");
            let body = axum::body::to_bytes(answer.into_body(), 64 << 20).await.expect("body");
            body.len()
        })
    };
    let cluster_page = format!("/ui/clusters/{}", fedsched::util::percent::encode(&cluster.name));
    let plan = |edit_all: bool| {
        let (mut files, errors) = fedsched::policy::load::read_repository(&policies, &Default::default());
        assert!(errors.is_empty(), "{errors:?}");
        let edited: Vec<String> =
            if edit_all { (0..w).map(repo::workload_file).collect() } else { vec![repo::workload_file(w / 2)] };
        let mut n = 0;
        for (path, text) in files.files.iter_mut() {
            if edited.iter().any(|e| path.as_path() == std::path::Path::new(e)) {
                let before = text.clone();
                *text = text.replacen("replicas: ", "replicas: 1", 1);
                n += usize::from(*text != before);
            }
        }
        assert_eq!(n, edited.len(), "every edited file has replicas");
        let request = fedsched::views::plan::PlanRequest { after: files, base: None, diff: true };
        let doc = fedsched::views::plan::on_reconciler(&rec, &live, &out, request, now)
            .unwrap_or_else(|e| panic!("plan: {e}"));
        plans.keep(&doc);
        doc["summary"]["changed"].as_u64().unwrap_or(0)
    };
    let placed = || tx.borrow().placed.clone().expect("placed");
    let model = profiles.model();
    let fleet_of_which = || {
        use fedsched::views::resources::{Figures, GroupBy, document_with, views};
        bench(
            "  the members' figures, every member polled again (every node; made when a pass is published)",
            5,
            1,
            || Figures::of(inputs.snapshots.iter(), model),
        );
        let figures = Figures::of(inputs.snapshots.iter(), model);
        bench("  the members' figures, no member polled again (taken from the last pass's)", 5, 1, || {
            Figures::since(inputs.snapshots.iter(), model, Some(&figures))
        });
        bench("  of which: the resources document (every cluster, by region, with the figures)", 5, 1, || {
            document_with(&views(&inputs.snapshots, model, now), &GroupBy::Region, &figures, model)
        });
        let zones: BTreeMap<String, String> =
            inputs.snapshots.iter().map(|c| (c.name.clone(), c.zones.join(", "))).collect();
        bench("  of which: the page's clusters and their entries (stored snapshots, kept per version)", 5, 1, || {
            let regions = inputs.snapshots.iter().map(|c| (GroupBy::Region.key(c), c.name.as_str()));
            let names = pages::fleet_names(regions, &zones, pages::FleetWindow::default());
            let p = placed();
            names
                .iter()
                .map(|n| {
                    let r = p.replicas_by_cluster().get(n).copied().unwrap_or(0);
                    fedsched::views::report::cluster_json(&rec.store, Some(&inputs.snapshots), now, n, r)
                })
                .count()
        });
    };
    let matrix_of_which = || {
        let clusters: Vec<(String, BTreeMap<String, String>)> =
            inputs.snapshots.iter().map(|c| (c.name.clone(), c.labels.clone())).collect();
        bench("  of which: the matrix (default window)", 5, 1, || {
            matrix(&placed(), &clusters, &MatrixQuery::default())
        });
    };
    let workload_of_which = || {
        bench("  of which: explain", 5, 1, || {
            let p = placed();
            let source = fedsched::views::placed::Source::Pass(&p);
            fedsched::views::explain::explain_from(&inputs, &rec.store, source, &profiles, &wr, now)
        });
        bench("  of which: history", 5, 1, || {
            let p = placed();
            let source = fedsched::views::placed::Source::Pass(&p);
            let records = fedsched::views::report::history_from(&rec.store, source, &wr).expect("history");
            fedsched::views::report::history_json(&rec.store, &records).map(|h| h.to_string().len())
        });
    };
    let cluster_name = cluster.name.clone();
    let cluster_of_which = || {
        bench("  of which: its workloads (kept)", 5, 1, || cluster_workloads(&rec.store, &placed(), &cluster_name));
        bench("  of which: its chart (48 stored versions, kept per version)", 5, 1, || {
            let versions = rec.store.snapshot_versions(&cluster_name).expect("versions");
            let store = &rec.store;
            versions
                .iter()
                .rev()
                .take(48)
                .filter_map(|m| fedsched::views::report::stored_capacity(store, &cluster_name, m).ok())
                .count()
        });
        bench("  (a stored version decoded: what each was before)", 5, 1, || {
            let versions = rec.store.snapshot_versions(&cluster_name).expect("versions");
            versions.last().and_then(|m| rec.store.snapshot(&cluster_name, m.version).ok()).is_some()
        });
    };
    let nothing = || {};
    // Per page: its label, path, whether it is timed as the first request after a pass (and
    // whether every member was polled again in that pass), and its "of which" lines.
    type Case<'a> = (&'a str, String, Option<bool>, &'a dyn Fn());
    let pages_list: [Case; 6] = [
        ("Fleet /ui/", "/ui/".to_string(), Some(true), &fleet_of_which),
        ("Placements /ui/placements (default window)", "/ui/placements".to_string(), Some(false), &matrix_of_which),
        (
            "Placements, widest window (200 × 60)",
            "/ui/placements?perPage=200&clustersPerPage=60".to_string(),
            None,
            &nothing,
        ),
        (
            "Placements, filtered (namespace, label)",
            "/ui/placements?namespace=team-42&label=tier%3Dbatch&perPage=200&clustersPerPage=60".to_string(),
            Some(false),
            &nothing,
        ),
        ("Workload (the widest placement)", workload_page, Some(false), &workload_of_which),
        ("Cluster (49 snapshot versions, its workloads)", cluster_page, Some(false), &cluster_of_which),
    ];
    for (label, path, first, of_which) in pages_list {
        let bytes = get(&path);
        bench(&format!("page {label}: {bytes} bytes"), 5, 1, || get(&path));
        of_which();
        match first {
            Some(true) => bench(
                "  the first request after a pass of every member polled again (asked as it is published: \
                 its figures being made meanwhile)",
                5,
                1,
                || {
                    new_pass(true);
                    get(&path)
                },
            ),
            Some(false) => bench("  the first request after a pass (its indexes built)", 5, 1, || {
                new_pass(false);
                get(&path)
            }),
            None => continue,
        };
    }
    for (label, all) in [("one template edited", false), ("every template edited", true)] {
        let changed = plan(all);
        let bytes = get("/ui/plan");
        bench(&format!("page Plan /ui/plan, {label} ({changed} workloads change): {bytes} bytes"), 5, 1, || {
            get("/ui/plan")
        });
    }
    drop(rt);
}
