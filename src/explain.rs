//! Explain: why a workload went where it went, for every cluster, as JSON or text. One
//! implementation for the CLI (and later the HTTP API).

use serde_json::{Value, json};

use crate::policy::{ObjectKey, PolicySet, matching};
use crate::reconcile::Inputs;
use crate::schedule::{self, Framework, Outcome, ScheduleRequest, ScheduleResult};
use crate::store::{PlacementRecord, Store};

/// A parsed `KIND/NAMESPACE/NAME` argument (empty namespace = cluster-scoped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadRef {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl std::str::FromStr for WorkloadRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [kind, ns, name] if !kind.is_empty() && !name.is_empty() => Ok(WorkloadRef {
                kind: (*kind).to_string(),
                namespace: if ns.is_empty() { None } else { Some((*ns).to_string()) },
                name: (*name).to_string(),
            }),
            _ => Err(format!("{s:?} is not KIND/NAMESPACE/NAME (use KIND//NAME for cluster-scoped objects)")),
        }
    }
}

impl WorkloadRef {
    /// Whether a stored key is this reference (kind case-insensitive).
    pub fn matches(&self, key: &ObjectKey) -> bool {
        key.kind.eq_ignore_ascii_case(&self.kind) && key.namespace == self.namespace && key.name == self.name
    }
}

/// Builds the explain document for one template. Uses the stored decision when there is one
/// (what the output holds); otherwise schedules now, without writing anything.
pub fn explain(inputs: &Inputs, store: &Store, r: &WorkloadRef) -> Result<Value, String> {
    let set = &inputs.set;
    let t = set.find_template(&r.kind, r.namespace.as_deref(), &r.name).ok_or_else(|| {
        format!(
            "no resource template {}/{}/{} in the policy repository",
            r.kind,
            r.namespace.as_deref().unwrap_or(""),
            r.name
        )
    })?;
    let claim = matching::claim(set, t);
    let stored = store.placement(&t.key).map_err(|e| e.to_string())?;
    let (result, source, decided_at) = match (&claim, &stored) {
        (None, _) => (None, "none", None),
        (Some(_), Some(p)) => (Some(p.result.clone()), "store", Some(p.decided_at_ms)),
        (Some(c), None) => (dry_run(set, inputs, &t.key, &c.policy), "dry-run", None),
    };
    Ok(document(set, &t.key, claim.as_ref(), result.as_ref(), source, decided_at, stored.as_ref()))
}

fn dry_run(
    set: &PolicySet,
    inputs: &Inputs,
    key: &ObjectKey,
    policy: &crate::policy::PolicyRef,
) -> Option<ScheduleResult> {
    let t = set.template(key)?;
    let p = set.propagation_policy(policy)?;
    let workload = crate::model::workload::interpret(key.group(), &key.kind, &t.object).ok()?;
    let previous = Default::default();
    let req = ScheduleRequest {
        key,
        uid: t.meta.uid.as_deref(),
        workload: &workload,
        placement: &p.spec.placement,
        previous: &previous,
        previous_affinity: None,
    };
    Some(schedule::schedule(&Framework::karmada_default(), &req, &inputs.snapshots))
}

fn document(
    _set: &PolicySet,
    key: &ObjectKey,
    claim: Option<&matching::Claim>,
    result: Option<&ScheduleResult>,
    source: &str,
    decided_at_ms: Option<u64>,
    stored: Option<&PlacementRecord>,
) -> Value {
    let policy_json =
        |p: &crate::policy::PolicyRef| json!({"kind": p.kind.to_string(), "namespace": p.namespace, "name": p.name});
    let (state, reason) = match result.map(|r| &r.outcome) {
        None => (
            "NotPropagated",
            Some("no PropagationPolicy or ClusterPropagationPolicy selects this template".to_string()),
        ),
        Some(Outcome::Scheduled { .. }) => ("Scheduled", None),
        Some(Outcome::Unschedulable { reason }) => ("Unschedulable", Some(reason.clone())),
    };
    let clusters: Vec<Value> = result
        .map(|r| {
            r.verdicts
                .iter()
                .map(|v| {
                    json!({
                        "name": v.name,
                        "feasible": v.feasible,
                        "reasons": v.reasons,
                        "score": v.score,
                        "scores": v.scores.iter().map(|(k, s)| (k.clone(), json!(s))).collect::<serde_json::Map<_, _>>(),
                        "availableReplicas": v.available_replicas,
                        "replicas": v.replicas,
                        "selected": v.selected,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "workload": {"apiVersion": key.api_version, "kind": key.kind, "namespace": key.namespace, "name": key.name},
        "policy": claim.map(|c| policy_json(&c.policy)),
        "shadowed": claim.map(|c| c.shadowed.iter().map(policy_json).collect::<Vec<_>>()).unwrap_or_default(),
        "state": state,
        "reason": reason,
        "source": source,
        "decidedAt": decided_at_ms.map(format_ms),
        "affinityName": result.and_then(|r| r.affinity_name.clone()),
        "output": stored.map(|s| s.targets.iter().map(|(c, r)| (c.clone(), json!(r))).collect::<serde_json::Map<_, _>>()),
        "clusters": clusters,
    })
}

/// RFC 3339 time of a unix-milliseconds stamp.
pub fn format_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms)).to_string()
}

/// Renders the explain document for people.
pub fn to_text(doc: &Value) -> String {
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let w = &doc["workload"];
    let mut out = format!(
        "{} {}/{}/{}\n",
        s(&w["apiVersion"]),
        s(&w["kind"]),
        w["namespace"].as_str().unwrap_or(""),
        s(&w["name"])
    );
    match doc["policy"].as_object() {
        Some(p) => out.push_str(&format!(
            "policy: {} {}{}\n",
            s(&p["kind"]),
            p["namespace"].as_str().map(|n| format!("{n}/")).unwrap_or_default(),
            s(&p["name"])
        )),
        None => out.push_str("policy: none\n"),
    }
    for sh in doc["shadowed"].as_array().into_iter().flatten() {
        out.push_str(&format!("  shadows: {} {}\n", s(&sh["kind"]), s(&sh["name"])));
    }
    out.push_str(&format!("state: {}", s(&doc["state"])));
    if let Some(r) = doc["reason"].as_str() {
        out.push_str(&format!(" ({r})"));
    }
    out.push_str(&format!("  [decision from {}]\n", s(&doc["source"])));
    for c in doc["clusters"].as_array().into_iter().flatten() {
        let mark = if c["selected"].as_bool() == Some(true) {
            "+"
        } else if c["feasible"].as_bool() == Some(true) {
            " "
        } else {
            "x"
        };
        out.push_str(&format!(
            "{mark} {:<20} replicas={:<6} available={:<8} score={}\n",
            s(&c["name"]),
            s(&c["replicas"]),
            s(&c["availableReplicas"]),
            s(&c["score"])
        ));
        for r in c["reasons"].as_array().into_iter().flatten() {
            out.push_str(&format!("      {}\n", s(r)));
        }
    }
    out
}
