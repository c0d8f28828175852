//! The JSON documents fedsched answers with, built in one place for every caller: the CLI
//! (`history`, `snapshots` with `-o json` or text) and the HTTP API (`/api/v1/…`). The
//! explain document lives in [`crate::views::explain`]; the output directory's
//! the summary's shards `.fedsched/placements/` in [`crate::render::summary`], whose
//! placements `/api/v1/workloads` answers with more columns ([`crate::views::workloads`]).
//!
//! Text renderings are made from the JSON documents, so that the CLI prints the same text
//! whether it read the store itself or asked a running daemon.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::model::quantity::format_milli;
use crate::model::resources::ResourceList;
use crate::model::{ClusterSnapshot, Health};
use crate::schedule::Outcome;
use crate::store::{HistoryRecord, PlacementRecord, SnapshotMeta, Store, StoreError};
use crate::views::explain::{WorkloadRef, format_ms};

/// The history of the workload a reference names: its current placement's history, or, for
/// a workload no longer placed, the history that is still kept. Empty when there is none.
pub fn history_for(store: &Store, r: &WorkloadRef) -> Result<Vec<HistoryRecord>, StoreError> {
    history_from(store, crate::views::placed::Source::Store(store), r)
}

/// [`history_for`] with the current placements read from `placed` (the daemon's pass).
pub fn history_from(
    store: &Store,
    placed: crate::views::placed::Source<'_>,
    r: &WorkloadRef,
) -> Result<Vec<HistoryRecord>, StoreError> {
    for p in placed.matching(r)? {
        let records = store.history(&p.workload)?;
        if !records.is_empty() {
            return Ok(records);
        }
    }
    // A removed workload has no placement any more: its history is still kept.
    let mut records = Vec::new();
    for key in store.workloads_with_history()? {
        if r.matches(&key) {
            records = store.history(&key)?;
        }
    }
    Ok(records)
}

/// `fedsched history -o json` and `/api/v1/workloads/{ns}/{kind}/{name}/history`: every
/// record with its snapshot versions and every cluster's verdict (read back from the blobs the
/// compact records reference).
pub fn history_json(store: &Store, records: &[HistoryRecord]) -> Result<Value, StoreError> {
    let mut out = Vec::with_capacity(records.len());
    let mut specs = crate::views::workloads::Specs::default();
    for r in records {
        let versions = store.versions(r.inputs.snapshot_versions)?.unwrap_or_default();
        let verdicts = store.expand(&r.result)?;
        let flags = crate::views::workloads::Flags::of(store, r, &mut specs)?;
        out.push(json!({
                    "seq": r.seq,
                    "at": format_ms(r.at_ms),
                    "trigger": r.trigger,
                    "policy": r.policy.as_ref().map(|p| p.to_string()),
                    "inputs": {
                        "templateHash": format!("{:016x}", r.inputs.template_hash),
                        "policyHash": format!("{:016x}", r.inputs.policy_hash),
                        "snapshotVersions": versions,
                        "previous": r.inputs.previous,
                        "profile": r.inputs.profile,
                    },
                    "outcome": match &r.result.outcome {
                        Outcome::Scheduled { targets } => json!({"scheduled": targets}),
                        Outcome::Unschedulable { reason } => json!({"unschedulable": reason}),
                    },
                    "clusters": verdicts.iter().map(|v| json!({"name": v.name, "feasible": v.feasible, "reasons": v.reasons, "score": v.score, "availableReplicas": v.available_replicas, "replicas": v.replicas, "estimates": v.estimates.iter().cloned().collect::<BTreeMap<_, _>>()})).collect::<Vec<_>>(),
                    "notes": r.notes,
                    "suspended": flags.suspended_json(),
                    "lazyHeld": flags.lazy_held,
        }));
    }
    Ok(Value::Array(out))
}

/// The text form of [`history_json`]: one line per decision, what its policy suspended and
/// its notes indented (a Lazy policy's hold is one).
pub fn history_text(doc: &Value, r: &WorkloadRef) -> String {
    let records = doc.as_array().map(Vec::as_slice).unwrap_or_default();
    if records.is_empty() {
        return format!("no history for {}/{}/{}\n", r.kind, r.namespace.as_deref().unwrap_or(""), r.name);
    }
    let mut out = String::new();
    for rec in records {
        let outcome = if let Some(targets) = rec["outcome"]["scheduled"].as_object() {
            let t: Vec<String> = targets
                .iter()
                .map(|(c, n)| match n.as_i64() {
                    Some(n) => format!("{c}={n}"),
                    None => c.clone(),
                })
                .collect();
            format!("scheduled [{}]", t.join(", "))
        } else {
            format!("unschedulable: {}", rec["outcome"]["unschedulable"].as_str().unwrap_or(""))
        };
        out.push_str(&format!(
            "#{} {} trigger={} {}\n",
            rec["seq"],
            rec["at"].as_str().unwrap_or(""),
            rec["trigger"].as_str().unwrap_or(""),
            outcome
        ));
        if let Some(on) = crate::views::workloads::suspended_text(&rec["suspended"]) {
            out.push_str(&format!("    suspended: dispatching to {on} (its files stay as they were)\n"));
        }
        for n in rec["notes"].as_array().into_iter().flatten() {
            out.push_str(&format!("    {}\n", n.as_str().unwrap_or("")));
        }
    }
    out
}

/// A member's health as a state (`Ready`, `NotReady`, `Unreachable`) and its reason.
fn health_parts(h: &Health) -> (&'static str, Option<String>) {
    match h {
        Health::Ready => ("Ready", None),
        Health::NotReady { reason } => ("NotReady", Some(reason.clone())),
        Health::Unreachable { reason } => ("Unreachable", Some(reason.clone())),
    }
}

/// `fedsched snapshots -o json` and `/api/v1/clusters/{name}/snapshots`: per version its
/// health as a state and a reason (`healthReason`, null when Ready).
pub fn snapshots_json(cluster: &str, versions: &[SnapshotMeta]) -> Value {
    let v: Vec<Value> = versions
        .iter()
        .map(|m| {
            json!({
                "version": m.version,
                "hash": format!("{:016x}", m.hash),
                "firstSeen": format_ms(m.first_seen_ms),
                "lastSeen": format_ms(m.last_seen_ms),
                "health": health_parts(&m.health).0,
                "healthReason": health_parts(&m.health).1,
                "confidence": m.confidence,
            })
        })
        .collect();
    json!({"cluster": cluster, "versions": v})
}

/// What stored version `version` of `cluster` contained (`fedsched snapshots CLUSTER --version
/// N`): health, source, the resource summary (allocatable, allocated, free per resource) and
/// each node (Ready, schedulable, allocatable, requested, pods), keyed by name so that two
/// versions compare field by field ([`snapshot_diff_json`]).
pub fn snapshot_version_json(cluster: &str, version: u64, snap: &crate::model::ClusterSnapshot) -> Value {
    use crate::model::quantity::format_milli;
    let list = |l: &crate::model::ResourceList| -> serde_json::Map<String, Value> {
        l.iter().map(|(k, v)| (k.to_string(), json!(format_milli(k, v)))).collect()
    };
    let summary = snap.summary.as_ref().map(|s| {
        let used = |k: &str| s.allocated.get(k).saturating_add(s.allocating.get(k));
        let free: serde_json::Map<String, Value> = s
            .allocatable
            .iter()
            .map(|(k, v)| (k.to_string(), json!(format_milli(k, v.saturating_sub(used(k)).max(0)))))
            .collect();
        json!({"allocatable": list(&s.allocatable), "allocated": list(&s.allocated), "free": free})
    });
    let nodes: serde_json::Map<String, Value> = snap
        .nodes
        .iter()
        .map(|n| {
            (
                n.name.clone(),
                json!({"ready": n.ready, "unschedulable": n.unschedulable, "allocatable": list(&n.allocatable),
                       "requested": list(&n.requested), "pods": n.pods}),
            )
        })
        .collect();
    json!({
        "cluster": cluster,
        "version": version,
        "health": health_parts(&snap.health).0,
        "healthReason": health_parts(&snap.health).1,
        "source": if snap.is_live() { "live" } else { "offline" },
        "summary": summary,
        "nodes": nodes,
    })
}

/// What changed from stored version `a` to `b` (`fedsched snapshots CLUSTER --diff A B`): every
/// field of [`snapshot_version_json`] that differs, as `{path, from, to}` (a node or resource
/// that is only in one of them: `from` or `to` null).
pub fn snapshot_diff_json(cluster: &str, a: &Value, b: &Value) -> Value {
    fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<Value>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    walk(&p, x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), out);
                }
            }
            _ if a != b => out.push(json!({"path": path, "from": a, "to": b})),
            _ => {}
        }
    }
    let mut changes = Vec::new();
    for field in ["health", "healthReason", "source", "summary", "nodes"] {
        walk(field, &a[field], &b[field], &mut changes);
    }
    json!({"cluster": cluster, "from": a["version"], "to": b["version"], "changes": changes})
}

/// The text form of [`snapshot_version_json`] (YAML) and [`snapshot_diff_json`] (a line per
/// change).
pub fn snapshot_detail_text(doc: &Value) -> String {
    let Some(changes) = doc["changes"].as_array() else { return crate::render::yaml::to_yaml(doc) };
    let mut out = format!(
        "cluster {}: version {} -> {}: {} change(s)\n",
        s_(&doc["cluster"]),
        doc["from"],
        doc["to"],
        changes.len()
    );
    for c in changes {
        out.push_str(&format!("  {}: {} -> {}\n", s_(&c["path"]), c["from"], c["to"]));
    }
    out
}

fn s_(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The text form of [`snapshots_json`].
pub fn snapshots_text(doc: &Value) -> String {
    let versions = doc["versions"].as_array().map(Vec::as_slice).unwrap_or_default();
    if versions.is_empty() {
        return format!("no snapshots of cluster {}\n", doc["cluster"].as_str().unwrap_or(""));
    }
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    versions
        .iter()
        .map(|m| {
            let health = match m["healthReason"].as_str() {
                Some(reason) => format!("{} ({reason})", s(&m["health"])),
                None => s(&m["health"]),
            };
            format!(
                "v{} {} first seen {} last seen {} {health}\n",
                m["version"],
                s(&m["hash"]),
                s(&m["firstSeen"]),
                s(&m["lastSeen"]),
            )
        })
        .collect()
}

/// Replicas placed per cluster by the current placements.
pub fn replicas_by_cluster<'a>(placements: impl IntoIterator<Item = &'a PlacementRecord>) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for p in placements {
        for (c, r) in &p.targets {
            *out.entry(c.clone()).or_insert(0) += i64::from(r.unwrap_or(0));
        }
    }
    out
}

fn resources_json(list: &ResourceList) -> Value {
    Value::Object(list.iter().map(|(k, v)| (k.to_string(), Value::String(format_milli(k, v)))).collect())
}

/// `/api/v1/clusters`: every member cluster with a stored snapshot (restricted to the
/// snapshots of the last good pass, `current`, when given): state, capacity, confidence,
/// snapshot age and the replicas placed on it. The age counts from the observation of the
/// pass's snapshot (a watched member: its last event or bookmark), not from the store's
/// `lastSeen`, which an unchanged snapshot refreshes only every minute.
/// `replicas`: per cluster, as [`replicas_by_cluster`] sums them.
pub fn clusters_json(
    store: &Store,
    current: Option<&[ClusterSnapshot]>,
    replicas: &BTreeMap<String, i64>,
    now_ms: u64,
) -> Result<Value, StoreError> {
    let mut items = Vec::new();
    for name in store.clusters()? {
        let r = replicas.get(&name).copied().unwrap_or(0);
        items.extend(cluster_json(store, current, now_ms, &name, r)?);
    }
    Ok(json!({ "clusters": items }))
}

/// One member of [`clusters_json`], with `replicas` placed on it (what `clusters_json` sums
/// from the placements); `None` when it has no stored snapshot or is not among `current`.
/// The Cluster page asks for its one cluster so, without the rest of the fleet.
pub fn cluster_json(
    store: &Store,
    current: Option<&[ClusterSnapshot]>,
    now_ms: u64,
    name: &str,
    replicas: i64,
) -> Result<Option<Value>, StoreError> {
    let observed = match current {
        Some(c) => match c.iter().find(|s| s.name == name) {
            Some(s) => s.freshness.map_or(0, |f| f.polled_at_ms),
            None => return Ok(None),
        },
        None => 0,
    };
    let Some(meta) = store.snapshot_head(name)? else { return Ok(None) };
    let Some(stored) = stored_entry(store, name, &meta)? else {
        return Err(StoreError::Inconsistent(format!(
            "head of cluster {name} names version {} which is not stored",
            meta.version
        )));
    };
    // The pass's observation, when it is of this content (the stored head's).
    let observed = if observed >= meta.first_seen_ms { observed } else { 0 };
    let observed_at = stored.polled_at_ms.max(meta.last_seen_ms.max(observed));
    let mut entry = stored.fields.clone();
    entry.insert("confidence".into(), json!(meta.confidence));
    entry.insert(
        "snapshot".into(),
        json!({
            "version": meta.version,
            "hash": format!("{:016x}", meta.hash),
            "firstSeen": format_ms(meta.first_seen_ms),
            "lastSeen": format_ms(meta.last_seen_ms),
            "observedAt": format_ms(observed_at),
            "ageSeconds": now_ms.saturating_sub(observed_at) as f64 / 1000.0,
        }),
    );
    entry.insert("replicas".into(), json!(replicas));
    Ok(Some(Value::Object(entry)))
}

/// What an entry of `/api/v1/clusters` takes from a stored snapshot's content (the rest is
/// its head's meta, the pass and the time).
struct StoredEntry {
    /// The snapshot's own observation time (its freshness), 0 without one.
    polled_at_ms: u64,
    fields: serde_json::Map<String, Value>,
}

/// The most stored entries [`stored_entry`] keeps.
const STORED_ENTRIES_KEPT: usize = 8192;

/// A stored version's [`StoredEntry`]: a version never changes once stored (a new content is
/// a new version), so it is decoded once per process and kept by store, cluster, version and
/// content hash (at most [`STORED_ENTRIES_KEPT`]; all forgotten when full). The Fleet page
/// reads a page of clusters per request without decoding their snapshots (nodes and pods)
/// again.
fn stored_entry(
    store: &Store,
    name: &str,
    meta: &SnapshotMeta,
) -> Result<Option<std::sync::Arc<StoredEntry>>, StoreError> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Kept = Mutex<HashMap<(std::path::PathBuf, String, u64, u64), Arc<StoredEntry>>>;
    static KEPT: OnceLock<Kept> = OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    let key = (store.db_path().to_path_buf(), name.to_string(), meta.version, meta.hash);
    if let Some(e) = kept.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(Some(Arc::clone(e)));
    }
    let Some(snap) = store.snapshot(name, meta.version)? else { return Ok(None) };
    let (state, reason) = health_parts(&snap.health);
    let capacity = snap.summary.as_ref().map(|s| {
        json!({
            "allocatable": resources_json(&s.allocatable),
            "allocated": resources_json(&s.allocated),
            "allocating": resources_json(&s.allocating),
            "available": resources_json(&s.allocatable.free_after(&s.allocated, &s.allocating)),
        })
    });
    let source = match &snap.source {
        crate::model::SnapshotSource::Offline { file } => json!({"offline": file}),
        crate::model::SnapshotSource::Live { endpoint } => json!({"live": endpoint}),
    };
    let fields = match json!({
        "name": name,
        "state": state,
        "reason": reason,
        "source": source,
        "region": snap.region,
        "provider": snap.provider,
        "zones": snap.zones,
        "labels": snap.labels,
        "taints": snap.taints.iter().map(|t| json!({"key": t.key, "value": t.value, "effect": format!("{:?}", t.effect)})).collect::<Vec<_>>(),
        "capacity": capacity,
    }) {
        Value::Object(fields) => fields,
        _ => serde_json::Map::new(),
    };
    let entry = Arc::new(StoredEntry { polled_at_ms: snap.observed_at_ms(0), fields });
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() >= STORED_ENTRIES_KEPT {
        kept.clear();
    }
    kept.insert(key, Arc::clone(&entry));
    Ok(Some(entry))
}

/// A stored version's capacity as `/api/v1/clusters` shows it (`allocatable`, `allocated`,
/// `allocating`, `available`; null without a summary), kept as [`stored_entry`] keeps it;
/// `None` when the version is not stored. The Cluster page's chart.
pub fn stored_capacity(store: &Store, name: &str, meta: &SnapshotMeta) -> Result<Option<Value>, StoreError> {
    Ok(stored_entry(store, name, meta)?.map(|e| e.fields.get("capacity").cloned().unwrap_or(Value::Null)))
}
