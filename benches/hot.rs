//! Micro-benchmarks of the hot paths (issue 8): filter + score per (workload × cluster) pair,
//! replica estimation per pair, one workload scheduled over the fleet, Webster division, YAML
//! render per object, store writes.
//!
//! Not a timed test: it prints medians. Run: `cargo bench --bench hot` (release), or quickly
//! `cargo bench --profile dev --bench hot -- --test` (one iteration of each case: what CI runs).
//! The fixture is a generated policy repository (`fedsched::testbed::simulate::repo`) with node-level
//! data, as `fedsched bench` uses.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use fedsched::members::live::{LiveData, LiveStatus, LiveView};
use fedsched::model::Observed;
use fedsched::model::estimate::max_available;
use fedsched::model::workload::interpret;
use fedsched::policy::matching;
use fedsched::reconcile::{Repository, Settings, load_inputs};
use fedsched::render::{self, RenderInput};
use fedsched::schedule::assign::{TieBreak, webster};
use fedsched::schedule::framework::{Fit, PluginContext};
use fedsched::schedule::{Fleet, Framework, ScheduleRequest, ScheduleResult, schedule, schedule_in};
use fedsched::store::{DecisionInputs, HistoryRecord, PlacementRecord, Store};
use fedsched::testbed::bench::timing::{bench, quick_mode};
use fedsched::testbed::simulate::repo::{FleetSpec, RepoSpec, write_repo};

fn main() {
    let quick = quick_mode();
    let clusters = if quick {
        10
    } else {
        std::env::var("FEDSCHED_HOT_CLUSTERS").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let spec = RepoSpec { fleet: FleetSpec { clusters, nodes: 100, pods: 300, seed: 1 }, workloads: 40 };
    let mut live = LiveView::default();
    write_repo(dir.path(), &spec, |_, c, obs| {
        let data = LiveData::of(obs, Default::default());
        live.clusters.insert(
            c.name.clone(),
            LiveStatus { endpoint: "bench".into(), last_good: Some(Arc::new(data)), ..Default::default() },
        );
    })
    .unwrap_or_else(|e| panic!("generate: {e}"));
    let mut inputs =
        load_inputs(Repository::Dir(dir.path()), &Settings::builtin()).unwrap_or_else(|e| panic!("load: {e:?}"));
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let store = Store::open(state.path()).unwrap_or_else(|e| panic!("store: {e}"));
    inputs.apply_live(&live, &store);
    let set = &inputs.set;
    let fw = Framework::karmada_default();
    println!(
        "{} clusters × 100 nodes (300 pods), build: {}",
        clusters,
        if cfg!(debug_assertions) { "dev (unoptimised)" } else { "optimised" }
    );

    // Workload 8: Divided by available replicas over a region; workload 0: Duplicated.
    let pick = |i: usize| {
        let name = fedsched::testbed::simulate::repo::workload_name(i);
        let t = set.templates.iter().find(|t| t.key.name == name).unwrap_or_else(|| panic!("template {name}"));
        let claim = matching::claim(set, t).unwrap_or_else(|| panic!("claim {name}"));
        let policy = set.propagation_policy(&claim.policy).unwrap_or_else(|| panic!("policy {name}"));
        let w = interpret(t.key.group(), &t.key.kind, &t.object, &inputs.interpreters)
            .unwrap_or_else(|e| panic!("interpret {name}: {e}"));
        (t, policy, w)
    };
    let empty = BTreeMap::new();
    let no_eviction = std::collections::BTreeSet::new();
    let (t, policy, workload) = pick(8);
    let n = inputs.snapshots.len() as u64;
    let ctx = |cluster| PluginContext {
        key: &t.key,
        workload: &workload,
        placement: &policy.spec.placement,
        affinity: policy.spec.placement.cluster_affinity.as_ref(),
        cluster,
        previous: &empty,
        evicted: &no_eviction,
        settings: &fw.settings,
    };
    let per_pair = |s: fedsched::testbed::bench::timing::Sample| {
        println!("{:<44} {:>12}", "  per pair", fedsched::testbed::bench::timing::fmt(s.per_iter / n as u32));
    };
    per_pair(bench("filters, one workload × every cluster", 7, 20, || {
        let mut pass = 0;
        for c in &inputs.snapshots {
            let cx = ctx(c);
            if fw.filters.iter().all(|f| f.filter(&cx) == Fit::Pass) {
                pass += 1;
            }
        }
        pass
    }));
    per_pair(bench("scorers, one workload × every cluster", 7, 20, || {
        let mut total = 0i64;
        for c in &inputs.snapshots {
            let cx = ctx(c);
            for (s, w) in &fw.scorers {
                total += s.score(&cx) * w;
            }
        }
        total
    }));
    per_pair(bench("estimators, one workload × every cluster", 7, 20, || {
        let clusters: Vec<&_> = inputs.snapshots.iter().collect();
        max_available(&fw.estimators, &clusters, &workload.requirements)
            .iter()
            .map(|(m, _)| m.unwrap_or(0))
            .sum::<i64>()
    }));
    for (label, i) in [("divided (available replicas)", 8), ("duplicated (shard)", 0), ("static weights", 16)] {
        let (t, policy, workload) = pick(i);
        let req = ScheduleRequest {
            key: &t.key,
            uid: None,
            workload: &workload,
            placement: &policy.spec.placement,
            previous: &empty,
            previous_affinity: None,
            failover: &fedsched::schedule::NO_FAILOVER,
        };
        per_pair(bench(&format!("schedule one workload, {label}"), 7, 10, || schedule(&fw, &req, &inputs.snapshots)));
        // As in a pass: the fleet (clusters in name order, filter memo) is shared and warm.
        let fleet = Fleet::new(&inputs.snapshots);
        per_pair(bench(&format!("  in the pass's warm fleet, {label}"), 7, 10, || {
            schedule_in(&fleet, &fw, &req, &inputs.snapshots)
        }));
    }
    per_pair(bench("Fleet::new (once per pass)", 7, 10, || Fleet::new(&inputs.snapshots)));

    // Webster division.
    for (replicas, k) in [(10i64, 5usize), (100, 50), (10_000, 1000)] {
        let weights: BTreeMap<String, i64> =
            (0..k).map(|i| (format!("member-{i:04}"), 1 + (i as i64 * 7) % 13)).collect();
        bench(&format!("webster {replicas} replicas over {k} clusters"), 7, 50, || {
            webster(replicas, &weights, TieBreak::for_uid(Some("uid")))
        });
    }

    // Render per object (Deployment with an OverridePolicy: workload 0 has one).
    let (t, _, workload) = pick(0);
    let claim = matching::claim(set, t).unwrap_or_else(|| panic!("claim"));
    let overrides = render::overrides::applicable(set, t);
    let cluster = &inputs.snapshots[0];
    let input = RenderInput {
        template: t,
        workload: &workload,
        policy: &claim.policy,
        replicas: Some(3),
        completions: None,
        cluster,
        overrides: &overrides,
        preserve_on_deletion: false,
        replicas_owned_by_hpa: false,
        hpa_read_fields: &[],
        hpa_bounds: None,
    };
    let text = render::render(&input).unwrap_or_else(|e| panic!("render: {e}"));
    bench(&format!("render one Deployment ({} bytes of YAML)", text.len()), 7, 200, || render::render(&input));
    let manifest = render::manifest(&input).unwrap_or_else(|e| panic!("manifest: {e}"));
    bench("  YAML emitter only", 7, 200, || render::yaml::to_yaml(&manifest));
    bench("object_path", 7, 1000, || render::object_path(&t.key));
    // The unknown-field check every load runs on each template it types (issue 47 item 9).
    let (api, kind) = (t.key.api_version.to_string(), t.key.kind.to_string());
    bench("schema: unknown fields of one Deployment", 7, 500, || {
        fedsched::policy::load::schema_unknown_fields(&api, &kind, &t.object)
    });
    // The same with a wrong-typed value: the walk skips that field and walks again, and on that
    // walk every optional field looks its path up among the skipped ones.
    let mut wrong = t.object.clone();
    if let Some(spec) = wrong.get_mut("spec").and_then(serde_json::Value::as_object_mut) {
        spec.insert("paused".into(), serde_json::json!("yes"));
    }
    bench("  with a wrong-typed field (two walks, the second looks up every field)", 7, 500, || {
        fedsched::policy::load::schema_unknown_fields(&api, &kind, &wrong)
    });

    // Store writes.
    let snap = &inputs.snapshots[0];
    let mut now = 1u64;
    bench("store: record_snapshot, unchanged content", 7, 50, || {
        now += 1;
        store.record_snapshot(snap, Observed { at_ms: now, confidence: 1.0 })
    });
    let template_json = serde_json::to_vec(&t.object).unwrap_or_default();
    bench("store: put_blob, already stored (template)", 7, 200, || store.put_blob(&template_json));
    bench("  serde_json::to_vec of the template", 7, 200, || serde_json::to_vec(&t.object));
    let (t8, policy8, workload8) = pick(8);
    let req = ScheduleRequest {
        key: &t8.key,
        uid: None,
        workload: &workload8,
        placement: &policy8.spec.placement,
        previous: &empty,
        previous_affinity: None,
        failover: &fedsched::schedule::NO_FAILOVER,
    };
    let result = schedule(&fw, &req, &inputs.snapshots);
    let targets = result.targets().cloned().unwrap_or_default();
    let placement = PlacementRecord {
        workload: t8.key.clone(),
        policy: None,
        result: result.clone(),
        targets,
        affinity_name: None,
        files: BTreeMap::new(),
        history_seq: 0,
        decided_at_ms: 0,
    };
    let history = HistoryRecord {
        seq: 0,
        at_ms: 1,
        trigger: "bench".into(),
        workload: t8.key.clone(),
        policy: None,
        inputs: DecisionInputs {
            template_hash: 1,
            policy_hash: 2,
            snapshot_versions: store
                .put_versions(&inputs.snapshots.iter().map(|s| (s.name.clone(), 1)).collect())
                .unwrap_or_else(|e| panic!("versions: {e}")),
            previous: BTreeMap::new(),
            previous_affinity: None,
            profile: "karmada-default".into(),
            stability: 0,
        },
        result,
        notes: Vec::new(),
    };
    let encoded = fedsched::store::codec::encode(&history).map(|v| v.len()).unwrap_or(0);
    for (label, i) in [("divided (available replicas)", 8), ("duplicated (shard)", 0), ("static weights", 16)] {
        let (t, policy, workload) = pick(i);
        let req = ScheduleRequest {
            key: &t.key,
            uid: None,
            workload: &workload,
            placement: &policy.spec.placement,
            previous: &empty,
            previous_affinity: None,
            failover: &fedsched::schedule::NO_FAILOVER,
        };
        let r = schedule(&fw, &req, &inputs.snapshots);
        let p = PlacementRecord {
            result: r.clone(),
            targets: r.targets().cloned().unwrap_or_default(),
            ..placement.clone()
        };
        let now = fedsched::store::codec::encode(&p).map(|v| v.len()).unwrap_or(0);
        let before = legacy_placement_bytes(&p, &r, &inputs.snapshots);
        let h = legacy_history_bytes(&r, &inputs.snapshots) + history_overhead(&history);
        println!(
            "record size, {label}: placement {before} → {now} bytes; history {h} → {} bytes",
            fedsched::store::codec::encode(&HistoryRecord { result: r.clone(), ..history.clone() })
                .map(|v| v.len())
                .unwrap_or(0)
        );
    }
    bench(&format!("store: record_decision ({encoded} bytes of history, {clusters} verdicts)"), 5, 20, || {
        store.record_decision(history.clone(), &placement)
    });
    let mut batch: Vec<(HistoryRecord, PlacementRecord)> =
        (0..100).map(|_| (history.clone(), placement.clone())).collect();
    let per = bench("store: record_decisions, a batch of 100", 5, 5, || store.record_decisions(&mut batch));
    println!("{:<44} {:>12}", "  per decision", fedsched::testbed::bench::timing::fmt(per.per_iter / 100));
    bench("store: put_placement", 7, 50, || store.put_placement(&placement));
    bench("store: placement (read)", 7, 200, || store.placement(&t8.key));
    bench("store: last_history (read)", 7, 50, || store.last_history(&t8.key));
    black_box(store.flush().ok());
}

/// Bytes of the schema 1 placement record (a verdict per cluster, estimates as reason strings)
/// for the same decision: the "before" of the compact records.
fn legacy_placement_bytes(
    p: &PlacementRecord,
    r: &ScheduleResult,
    clusters: &[fedsched::model::ClusterSnapshot],
) -> usize {
    let legacy = legacy_result(r, clusters);
    let rec = (&p.workload, &p.policy, legacy, &p.targets, &p.affinity_name, &p.files, p.history_seq, p.decided_at_ms);
    4 + bincode::serde::encode_to_vec(rec, fedsched::store::codec::bincode_config()).map(|v| v.len()).unwrap_or(0)
}

fn legacy_history_bytes(r: &ScheduleResult, clusters: &[fedsched::model::ClusterSnapshot]) -> usize {
    let versions: BTreeMap<String, u64> = clusters.iter().map(|c| (c.name.clone(), 1)).collect();
    let both = (legacy_result(r, clusters), versions);
    bincode::serde::encode_to_vec(both, fedsched::store::codec::bincode_config()).map(|v| v.len()).unwrap_or(0)
}

/// The history record without its result and versions reference.
fn history_overhead(h: &HistoryRecord) -> usize {
    let rec = (
        h.seq,
        h.at_ms,
        &h.trigger,
        &h.workload,
        &h.policy,
        h.inputs.template_hash,
        h.inputs.policy_hash,
        &h.inputs.previous,
        &h.inputs.previous_affinity,
        &h.inputs.profile,
        &h.notes,
    );
    4 + bincode::serde::encode_to_vec(rec, fedsched::store::codec::bincode_config()).map(|v| v.len()).unwrap_or(0)
}

type LegacyVerdict = (String, bool, Vec<String>, i64, Vec<(String, i64)>, Option<i64>, Option<i32>, bool);

fn legacy_result(
    r: &ScheduleResult,
    clusters: &[fedsched::model::ClusterSnapshot],
) -> (fedsched::schedule::Outcome, Vec<LegacyVerdict>, Option<String>) {
    let verdicts = r
        .expand(Fleet::new(clusters).names())
        .into_iter()
        .map(|v| {
            let reasons = v
                .estimates
                .iter()
                .map(|(e, n)| format!("estimator {e}: {n} more replicas fit"))
                .chain(v.reasons)
                .collect();
            let scores = v.scores.into_iter().map(|(k, s)| (k.into_owned(), s)).collect();
            (v.name, v.feasible, reasons, v.score, scores, v.available_replicas, v.replicas, v.selected)
        })
        .collect();
    (r.outcome.clone(), verdicts, r.affinity_name.clone())
}
