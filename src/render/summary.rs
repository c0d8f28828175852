//! `OUT/.fedsched/placements.json`: the decisions in machine-readable form, one
//! [`placement_json`] per workload in store order. Deterministic (no times), so an unchanged
//! fleet does not rewrite it. The pass builds it from per-workload fragments
//! ([`summary_item`], [`summary_from_items`]) so that only changed decisions are serialised
//! again; the fragments give the bytes of the whole document ([`summary_json`]).
//! `/api/v1/workloads` answers the same placements ([`crate::views::report::workloads_json`]).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::policy::{ObjectKey, PolicyRef};
use crate::schedule::Outcome;

/// What the summary shows of one decision (borrowed from the stored placement:
/// `store::PlacementRecord::summary`).
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    pub workload: &'a ObjectKey,
    pub policy: Option<&'a PolicyRef>,
    pub outcome: &'a Outcome,
    /// Cluster → replicas (None: not divided, e.g. a Duplicated workload without replicas).
    pub targets: &'a BTreeMap<String, Option<i32>>,
    /// Cluster → the file written there.
    pub files: &'a BTreeMap<String, String>,
}

/// One placement: what `.fedsched/placements.json` lists and `/api/v1/workloads` answers.
/// Deterministic (no times).
pub fn placement_json(p: &Placement<'_>) -> Value {
    let (state, reason) = match p.outcome {
        Outcome::Scheduled { .. } => ("Scheduled", None),
        Outcome::Unschedulable { reason } => ("Unschedulable", Some(reason.clone())),
    };
    json!({
        "workload": {
            "apiVersion": p.workload.api_version,
            "kind": p.workload.kind,
            "namespace": p.workload.namespace,
            "name": p.workload.name,
        },
        "policy": p.policy.as_ref().map(|r| json!({"kind": r.kind.to_string(), "namespace": r.namespace, "name": r.name})),
        "state": state,
        "reason": reason,
        "clusters": p.targets.iter().map(|(c, r)| json!({"name": c, "replicas": r, "file": p.files.get(c)})).collect::<Vec<_>>(),
    })
}

/// The whole `placements.json` document at once: the reference the pass's
/// [`summary_from_items`] must equal.
#[cfg(test)]
pub(crate) fn summary_json<'a>(placements: impl Iterator<Item = Placement<'a>>) -> String {
    let items: Vec<Value> = placements.map(|p| placement_json(&p)).collect();
    let mut s = serde_json::to_string_pretty(&json!({ "placements": items })).unwrap_or_default();
    s.push('\n');
    s
}

/// One placement of `placements.json` as it appears inside the list (pretty, indented by 4).
pub fn summary_item(p: &Placement<'_>) -> String {
    let text = serde_json::to_string_pretty(&placement_json(p)).unwrap_or_default();
    let mut out = String::with_capacity(text.len() + 64);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("    ");
        out.push_str(line);
    }
    out
}

/// `placements.json` from [`summary_item`]s: the bytes [`summary_json`] gives.
pub fn summary_from_items(items: &[&str]) -> String {
    if items.is_empty() {
        return "{\n  \"placements\": []\n}\n".to_string();
    }
    let len: usize = items.iter().map(|i| i.len() + 2).sum();
    let mut s = String::with_capacity(len + 32);
    s.push_str("{\n  \"placements\": [\n");
    s.push_str(&items.join(",\n"));
    s.push_str("\n  ]\n}\n");
    s
}
