//! `fedsched get` and `/api/v1/workloads`: every placed workload as one row — its policy, its
//! clusters and replicas, its state, whether dispatching is suspended and whether a Lazy
//! policy holds it — filtered by namespace, cluster, label and state. One document for the
//! CLI and the API, read from the store alone (no policy repository, no running daemon):
//!
//! - the placement (what the summary's shards list, [`placement_json`]'s fields);
//! - the workload's last history record: the policy spec in force (its blob, whose
//!   `suspension` says what is suspended) and its notes ([`LAZY_HELD_NOTE`] while a Lazy
//!   policy holds it);
//! - the template of that record (its blob): the labels `--selector` matches.
//!
//! [`Flags::of`] is what `explain` and `history` show of the same two facts.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::policy::matching::{label_selector_matches, parse_label_selector};
use crate::policy::types::{LabelSelector, PropagationSpec};
use crate::reconcile::LAZY_HELD_NOTE;
use crate::render::summary::placement_json;
use crate::schedule::Outcome;
use crate::store::{HistoryRecord, PlacementRecord, Store, StoreError};
use crate::views::explain::format_ms;

/// Why the list cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    /// `--cluster` names a cluster the store knows nothing of (no snapshot, no placement).
    #[error("unknown cluster {0}: no snapshot of it is stored and no workload is placed on it")]
    UnknownCluster(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The states `--state` selects: a placement's outcome, or one of its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFilter {
    Scheduled,
    Unschedulable,
    /// Dispatching suspended on some cluster or all.
    Suspended,
    /// Held by a Lazy policy on the spec of its last decision.
    LazyHeld,
}

impl std::str::FromStr for StateFilter {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "scheduled" => Ok(StateFilter::Scheduled),
            "unschedulable" => Ok(StateFilter::Unschedulable),
            "suspended" => Ok(StateFilter::Suspended),
            "lazy-held" | "lazyheld" => Ok(StateFilter::LazyHeld),
            _ => Err(format!("{s:?}: use scheduled, unschedulable, suspended or lazy-held")),
        }
    }
}

impl StateFilter {
    /// The query form (`scheduled`, `lazy-held`).
    pub fn as_query(self) -> &'static str {
        match self {
            StateFilter::Scheduled => "scheduled",
            StateFilter::Unschedulable => "unschedulable",
            StateFilter::Suspended => "suspended",
            StateFilter::LazyHeld => "lazy-held",
        }
    }
}

/// A `kubectl`-style label selector (`app=web,tier!=db`), parsed, with its text (the query form).
#[derive(Debug, Clone)]
pub struct Selector {
    pub text: String,
    selector: LabelSelector,
}

impl std::str::FromStr for Selector {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Selector { text: s.to_string(), selector: parse_label_selector(s)? })
    }
}

/// Which workloads the list shows: every one that matches every filter given.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// The workload's namespace.
    pub namespace: Option<String>,
    /// A cluster among its targets.
    pub cluster: Option<String>,
    /// Its template's labels.
    pub selector: Option<Selector>,
    pub state: Option<StateFilter>,
}

impl Filter {
    /// The filter as the API's query string (`?namespace=…&cluster=…&selector=…&state=…`; empty
    /// without filters).
    pub fn to_query(&self) -> String {
        let enc = crate::util::percent::encode;
        let pairs: Vec<String> = [
            self.namespace.as_deref().map(|v| format!("namespace={}", enc(v))),
            self.cluster.as_deref().map(|v| format!("cluster={}", enc(v))),
            self.selector.as_ref().map(|v| format!("selector={}", enc(&v.text))),
            self.state.map(|v| format!("state={}", v.as_query())),
        ]
        .into_iter()
        .flatten()
        .collect();
        match pairs.is_empty() {
            true => String::new(),
            false => format!("?{}", pairs.join("&")),
        }
    }
}

/// What a workload's last recorded decision says beyond its placement: what the policy in
/// force suspends, and whether a Lazy policy holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// `None`: nothing suspended; an empty list: every cluster; else the clusters named.
    pub suspended: Option<Vec<String>>,
    pub lazy_held: bool,
}

/// The suspension of each policy spec read so far, by blob hash (the workloads of one policy
/// share its spec).
#[derive(Debug, Default)]
pub struct Specs(HashMap<u64, Option<Vec<String>>>);

impl Flags {
    /// The flags of a history record: the suspension of the spec it was decided with (its
    /// stored blob; none for a workload no policy claims) and its Lazy hold note.
    pub fn of(store: &Store, record: &HistoryRecord, specs: &mut Specs) -> Result<Flags, StoreError> {
        let suspended = match record.policy {
            None => None,
            Some(_) => match specs.0.get(&record.inputs.policy_hash) {
                Some(s) => s.clone(),
                None => {
                    let s = store
                        .blob(record.inputs.policy_hash)?
                        .and_then(|b| serde_json::from_slice::<PropagationSpec>(&b).ok())
                        .and_then(|spec| spec.suspension?.suspended());
                    specs.0.insert(record.inputs.policy_hash, s.clone());
                    s
                }
            },
        };
        Ok(Flags { suspended, lazy_held: record.notes.iter().any(|n| n == LAZY_HELD_NOTE) })
    }

    /// `suspended`: null, or `{"everyCluster": bool, "clusters": [...]}`.
    pub fn suspended_json(&self) -> Value {
        match &self.suspended {
            None => Value::Null,
            Some(c) => json!({"everyCluster": c.is_empty(), "clusters": c}),
        }
    }
}

/// The text of a `suspended` value ([`Flags::suspended_json`]): `every cluster` or the names.
pub fn suspended_text(v: &Value) -> Option<String> {
    let clusters: Vec<&str> = v["clusters"].as_array()?.iter().filter_map(Value::as_str).collect();
    Some(match v["everyCluster"].as_bool() {
        Some(true) => "every cluster".to_string(),
        _ => clusters.join(", "),
    })
}

/// The labels of a stored template (its blob; none when it cannot be read).
fn template_labels(store: &Store, hash: u64) -> Result<BTreeMap<String, String>, StoreError> {
    #[derive(serde::Deserialize, Default)]
    struct Object {
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        labels: BTreeMap<String, String>,
    }
    Ok(store
        .blob(hash)?
        .and_then(|b| serde_json::from_slice::<Object>(&b).ok())
        .map(|o| o.metadata.labels)
        .unwrap_or_default())
}

/// The list: `{"placements": [row…]}` in store order, each row [`placement_json`]'s fields
/// (what the summary's shards list) with `replicas` (their sum; null when none is divided),
/// `suspended`, `lazyHeld`, `labels` and `decidedAt`.
pub fn document(store: &Store, filter: &Filter) -> Result<Value, GetError> {
    let placements = store.placements()?;
    if let Some(c) = &filter.cluster
        && !placements.iter().any(|p| p.targets.contains_key(c))
        && !store.clusters()?.contains(c)
    {
        return Err(GetError::UnknownCluster(c.clone()));
    }
    let mut specs = Specs::default();
    let mut rows = Vec::new();
    for p in &placements {
        if filter.namespace.as_ref().is_some_and(|ns| p.workload.namespace.as_deref() != Some(ns.as_str()))
            || filter.cluster.as_ref().is_some_and(|c| !p.targets.contains_key(c))
            || match filter.state {
                Some(StateFilter::Scheduled) => !matches!(p.result.outcome, Outcome::Scheduled { .. }),
                Some(StateFilter::Unschedulable) => !matches!(p.result.outcome, Outcome::Unschedulable { .. }),
                _ => false,
            }
        {
            continue;
        }
        let last = store.last_history(&p.workload)?;
        let flags = match &last {
            Some(h) => Flags::of(store, h, &mut specs)?,
            None => Flags::default(),
        };
        if (filter.state == Some(StateFilter::Suspended) && flags.suspended.is_none())
            || (filter.state == Some(StateFilter::LazyHeld) && !flags.lazy_held)
        {
            continue;
        }
        let labels = match &last {
            Some(h) => template_labels(store, h.inputs.template_hash)?,
            None => BTreeMap::new(),
        };
        if filter.selector.as_ref().is_some_and(|s| !label_selector_matches(&s.selector, &labels)) {
            continue;
        }
        rows.push(row(p, &flags, &labels));
    }
    Ok(json!({ "placements": rows }))
}

fn row(p: &PlacementRecord, flags: &Flags, labels: &BTreeMap<String, String>) -> Value {
    let mut v = placement_json(&p.summary());
    let divided: Vec<i64> = p.targets.values().flatten().map(|r| i64::from(*r)).collect();
    if let Some(o) = v.as_object_mut() {
        o.insert("replicas".into(), if divided.is_empty() { Value::Null } else { json!(divided.iter().sum::<i64>()) });
        o.insert("suspended".into(), flags.suspended_json());
        o.insert("lazyHeld".into(), json!(flags.lazy_held));
        o.insert("labels".into(), json!(labels));
        o.insert("decidedAt".into(), json!(format_ms(p.decided_at_ms)));
    }
    v
}

/// The table of [`document`] (`fedsched get`); `wide` adds the decision's time, the affinity
/// term, the labels and why a workload is unschedulable. Empty without rows.
pub fn to_text(doc: &Value, wide: bool) -> String {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut header = vec!["NAMESPACE", "KIND", "NAME", "POLICY", "STATE", "CLUSTERS", "REPLICAS", "FLAGS"];
    if wide {
        header.extend(["DECIDED", "AFFINITY", "LABELS", "REASON"]);
    }
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for r in doc["placements"].as_array().into_iter().flatten() {
        let w = &r["workload"];
        let policy = match r["policy"].as_object() {
            Some(p) => {
                let short = if p["kind"] == "ClusterPropagationPolicy" { "cpp" } else { "pp" };
                format!("{short}/{}", s(&p["name"]))
            }
            None => "-".into(),
        };
        let clusters: Vec<String> = r["clusters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| match c["replicas"].as_i64() {
                Some(n) => format!("{}={n}", s(&c["name"])),
                None => s(&c["name"]),
            })
            .collect();
        let mut flags = Vec::new();
        if let Some(on) = suspended_text(&r["suspended"]) {
            flags.push(match (wide, r["suspended"]["everyCluster"].as_bool()) {
                (true, Some(false)) => format!("Suspended({on})"),
                _ => "Suspended".into(),
            });
        }
        if r["lazyHeld"].as_bool() == Some(true) {
            flags.push("LazyHeld".into());
        }
        let dash = |v: String| if v.is_empty() { "-".to_string() } else { v };
        let mut line = vec![
            dash(w["namespace"].as_str().unwrap_or("").to_string()),
            s(&w["kind"]),
            s(&w["name"]),
            policy,
            s(&r["state"]),
            dash(clusters.join(",")),
            r["replicas"].as_i64().map_or_else(|| "-".to_string(), |n| n.to_string()),
            dash(flags.join(",")),
        ];
        if wide {
            let labels: Vec<String> =
                r["labels"].as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", s(v))).collect();
            line.extend([
                s(&r["decidedAt"]),
                dash(s(&r["affinityTerm"])),
                dash(labels.join(",")),
                dash(s(&r["reason"])),
            ]);
        }
        lines.push(line);
    }
    if lines.len() == 1 {
        return String::new();
    }
    let widths: Vec<usize> =
        (0..lines[0].len()).map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    out
}
