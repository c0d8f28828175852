//! `OUT/.fedsched/placements.json`: the decisions in machine-readable form, one
//! [`placement_json`] per workload in store order, each on a line of its own (compact JSON).
//! Deterministic (no times), so an unchanged fleet does not rewrite it. The pass builds it from per-workload fragments
//! ([`summary_item`], [`summary_into`]) so that only changed decisions are serialised
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
    /// The `clusterAffinities` term in force (shown only when the placement has one).
    pub affinity: Option<&'a str>,
}

/// One placement: what `.fedsched/placements.json` lists and `/api/v1/workloads` answers.
/// Deterministic (no times).
pub fn placement_json(p: &Placement<'_>) -> Value {
    let (state, reason) = match p.outcome {
        Outcome::Scheduled { .. } => ("Scheduled", None),
        Outcome::Unschedulable { reason } => ("Unschedulable", Some(reason.clone())),
    };
    let mut v = json!({
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
    });
    if let (Some(term), Some(o)) = (p.affinity, v.as_object_mut()) {
        o.insert("affinityTerm".into(), json!(term));
    }
    v
}

/// One placement as a new leader reads it back from `placements.json` ([`parse_summary`]):
/// what the next decision of the workload starts from (claimer, targets, affinity term,
/// files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub workload: ObjectKey,
    pub policy: Option<PolicyRef>,
    /// `Scheduled`, or the reason it is not.
    pub unschedulable: Option<String>,
    pub targets: BTreeMap<String, Option<i32>>,
    pub files: BTreeMap<String, String>,
    pub affinity: Option<String>,
}

/// Reads `placements.json` back ([`placement_json`]'s fields). An error names the entry and
/// the field.
pub fn parse_summary(text: &str) -> Result<Vec<Published>, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let items = doc.get("placements").and_then(Value::as_array).ok_or("placements: not a list")?;
    items.iter().enumerate().map(|(i, item)| parse_item(item).map_err(|e| format!("placements[{i}]: {e}"))).collect()
}

fn parse_item(item: &Value) -> Result<Published, String> {
    let text = |v: &Value, path: &str| -> Result<String, String> {
        v.pointer(path)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{}: missing", path.trim_start_matches('/')))
    };
    let optional = |v: &Value, path: &str| v.pointer(path).and_then(Value::as_str).map(str::to_string);
    let workload = ObjectKey {
        api_version: text(item, "/workload/apiVersion")?.into(),
        kind: text(item, "/workload/kind")?.into(),
        namespace: optional(item, "/workload/namespace").map(Into::into),
        name: text(item, "/workload/name")?.into(),
    };
    let policy = match item.get("policy").filter(|p| !p.is_null()) {
        None => None,
        Some(p) => Some(PolicyRef {
            kind: match text(p, "/kind")?.as_str() {
                "PropagationPolicy" => crate::policy::PolicyKind::PropagationPolicy,
                "ClusterPropagationPolicy" => crate::policy::PolicyKind::ClusterPropagationPolicy,
                other => return Err(format!("policy.kind: {other:?} is not a propagation policy kind")),
            },
            namespace: optional(p, "/namespace"),
            name: text(p, "/name")?,
        }),
    };
    let unschedulable = match text(item, "/state")?.as_str() {
        "Scheduled" => None,
        "Unschedulable" => Some(optional(item, "/reason").unwrap_or_default()),
        other => return Err(format!("state: {other:?}")),
    };
    let mut targets = BTreeMap::new();
    let mut files = BTreeMap::new();
    for (j, c) in item.get("clusters").and_then(Value::as_array).ok_or("clusters: not a list")?.iter().enumerate() {
        let name = text(c, "/name").map_err(|e| format!("clusters[{j}].{e}"))?;
        let replicas = match c.get("replicas") {
            None | Some(Value::Null) => None,
            Some(r) => Some(
                r.as_i64()
                    .and_then(|r| i32::try_from(r).ok())
                    .ok_or(format!("clusters[{j}].replicas: not an integer"))?,
            ),
        };
        if let Some(f) = optional(c, "/file") {
            files.insert(name.clone(), f);
        }
        targets.insert(name, replicas);
    }
    Ok(Published { workload, policy, unschedulable, targets, files, affinity: optional(item, "/affinityTerm") })
}

/// The whole `placements.json` document at once: the reference the pass's
/// [`summary_into`] must equal.
#[cfg(test)]
pub(crate) fn summary_json<'a>(placements: impl Iterator<Item = Placement<'a>>) -> String {
    let items: Vec<String> =
        placements.map(|p| serde_json::to_string(&placement_json(&p)).unwrap_or_default()).collect();
    match items.is_empty() {
        true => "{\"placements\":[]}\n".to_string(),
        false => format!("{{\"placements\":[\n{}\n]}}\n", items.join(",\n")),
    }
}

/// One placement of `placements.json` as it appears inside the list: compact JSON on one line
/// (the document has one placement per line, so that an edit changes the line of its
/// workload: a small diff for git mode, and a third fewer bytes than indented JSON).
pub fn summary_item(p: &Placement<'_>) -> String {
    serde_json::to_string(&placement_json(p)).unwrap_or_default()
}

/// `placements.json` from [`summary_item`]s (the bytes [`summary_json`] gives), written into
/// `out` (cleared first), in place: a caller that keeps the buffer of an earlier summary
/// reuses its memory (megabytes at 10,000 workloads, whose
/// fresh pages cost more to fault in than the bytes cost to copy).
pub fn summary_into(out: &mut String, items: &[&str]) {
    out.clear();
    if items.is_empty() {
        out.push_str("{\"placements\":[]}\n");
        return;
    }
    let len: usize = items.iter().map(|i| i.len() + 2).sum();
    out.reserve(len + 32);
    out.push_str("{\"placements\":[\n");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(item);
    }
    out.push_str("\n]}\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicyKind;

    #[test]
    fn placements_read_back_as_published() {
        let workload = ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        let policy =
            PolicyRef { kind: PolicyKind::PropagationPolicy, namespace: Some("shop".into()), name: "p".into() };
        let targets: BTreeMap<String, Option<i32>> = [("a".to_string(), Some(2)), ("b".to_string(), None)].into();
        let files: BTreeMap<String, String> = [("a".to_string(), "a/shop/web.yaml".to_string())].into();
        let scheduled = Outcome::Scheduled { targets: targets.clone() };
        let unschedulable = Outcome::Unschedulable { reason: "no fit".into() };
        let p = |outcome, affinity| Placement {
            workload: &workload,
            policy: Some(&policy),
            outcome,
            targets: &targets,
            files: &files,
            affinity,
        };
        let text = summary_json([p(&scheduled, Some("primary")), p(&unschedulable, None)].into_iter());
        let back = parse_summary(&text).expect("parses");
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].workload, workload);
        assert_eq!(back[0].policy.as_ref(), Some(&policy));
        assert_eq!((back[0].targets.clone(), back[0].files.clone()), (targets.clone(), files.clone()));
        assert_eq!(back[0].affinity.as_deref(), Some("primary"));
        assert_eq!(back[0].unschedulable, None);
        assert_eq!(back[1].unschedulable.as_deref(), Some("no fit"));
        assert_eq!(back[1].affinity, None);
        // One placement per line; the indented form earlier versions wrote reads the same.
        assert_eq!(text.lines().count(), 4, "{text}");
        let indented: Value = serde_json::from_str(&text).expect("json");
        let indented = serde_json::to_string_pretty(&indented).expect("pretty");
        assert_eq!(parse_summary(&indented).expect("parses"), back);
        // Without a term the entry has no affinityTerm key: documents without terms are unchanged.
        assert!(!text.split("\"state\": \"Unschedulable\"").nth(1).unwrap_or("").contains("affinityTerm"));
        let e = parse_summary("{\"placements\": [{\"workload\": {}}]}").expect_err("bad");
        assert!(e.contains("placements[0]: workload/apiVersion: missing"), "{e}");
        // From the fragments, into a buffer that held another summary: the same bytes.
        let items = [summary_item(&p(&scheduled, Some("primary"))), summary_item(&p(&unschedulable, None))];
        let items: Vec<&str> = items.iter().map(String::as_str).collect();
        let mut buffer = "stale bytes of an earlier, longer summary".repeat(100);
        summary_into(&mut buffer, &items);
        assert_eq!(buffer, text);
        summary_into(&mut buffer, &[]);
        assert_eq!(buffer, summary_json(std::iter::empty()));
    }
}
