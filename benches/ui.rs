//! The web view's server time and size at scale (issue 53): the Placements page and the
//! Cluster page's workloads over a store of W placements across C clusters — what their
//! handlers do (read every placement from the store, filter, page, render), without a socket.
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
use fedsched::policy::{ObjectKey, PolicyKind, PolicyRef};
use fedsched::schedule::fleet::{ClusterSet, Rejection, universe_of};
use fedsched::schedule::{ClusterVerdict, Outcome, ScheduleResult};
use fedsched::store::{PlacementRecord, Store};
use fedsched::testbed::bench::timing::{bench, quick_mode};
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
                clusters: ClusterSet::from_sorted(rest),
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
    let page = |q: &MatrixQuery| {
        let placements = store.placements().unwrap_or_else(|e| panic!("placements: {e}"));
        let m = matrix(&placements, &clusters, q);
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
    bench("  of which: store.placements()", 5, 1, || store.placements().map(|p| p.len()));
    let on = |name: &str| {
        let doc = cluster_workloads(&store, name).unwrap_or_else(|e| panic!("cluster: {e}"));
        doc.to_string().len()
    };
    let bytes = on(&names[0]);
    bench(&format!("cluster page's workloads (runs, refused): {bytes} bytes of JSON"), 5, 1, || on(&names[0]));
}
