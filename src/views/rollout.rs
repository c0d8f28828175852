//! A workload's progressive rollout (issue 52) as a document: its policy, state, the stage
//! gated (or stopped at) with the gate's figures and the time left, each stage's clusters and
//! the version they run, the failures, and the transitions with their causes. One
//! implementation for `fedsched status`, `explain`, and `/api/v1/workloads/{ns}/{name}/rollout`;
//! from the store alone ([`crate::store::Store::rollout`]), so it works on a stopped daemon's
//! state directory.

use std::time::Duration;

use serde_json::{Value, json};

use crate::policy::ObjectKey;
use crate::schedule::rollout::{Phase, RolloutState};
use crate::store::{Store, StoreError};
use crate::util::clock::rfc3339_ms;

pub(crate) fn dur(ms: u64) -> String {
    humantime::format_duration(Duration::from_secs(ms / 1000)).to_string()
}

/// Stage `i` of `state`: its name, clusters and the version they run (the rollout document's
/// and the plan's stage entry).
pub(crate) fn stage(state: &RolloutState, i: usize) -> Value {
    let (name, clusters) = &state.stages[i];
    let version = if state.runs_new(i) { "new" } else { "previous" };
    let mut doc = json!({"name": name, "clusters": clusters, "version": version});
    // Clusters that joined the stage after its release keep the previous version until it
    // passes its gate.
    let joined: Vec<&String> = clusters.iter().filter(|c| state.runs_new(i) && !state.runs_new_on(i, c)).collect();
    if !joined.is_empty() {
        doc["previousOn"] = json!(joined);
    }
    doc
}

/// The rollout document of `state` at `now_ms`.
pub fn document(state: &RolloutState, now_ms: u64) -> Value {
    let current = state.current();
    let stages: Vec<Value> = state.stages.iter().enumerate().map(|(i, _)| stage(state, i)).collect();
    let gate = match (current, &state.phase) {
        (Some(i), Phase::Progressing) => {
            let g = &state.gate;
            let since_release = now_ms.saturating_sub(state.released_at_ms);
            let left = match state.healthy_since_ms {
                Some(since) => json!(dur(g.min_success_ms.saturating_sub(now_ms.saturating_sub(since)))),
                None => Value::Null,
            };
            json!({
                "stage": state.stages.get(i).map(|s| s.0.clone()),
                "releasedAt": rfc3339_ms(state.released_at_ms),
                "minSuccessTime": dur(g.min_success_ms),
                "healthySince": state.healthy_since_ms.map(rfc3339_ms),
                "timeLeft": left,
                "deadlineLeft": g.deadline_ms.map(|d| dur(d.saturating_sub(since_release))),
                "approvalRequired": g.needs_approval,
                // Per member of the stage: what it showed at the last pass, and its GitOps
                // agent's stand ("not synced yet" apart from "synced, unhealthy").
                "clusters": state.observed.iter().map(|(c, o)| {
                    (c.clone(), json!({"state": o.state, "agent": o.agent}))
                }).collect::<serde_json::Map<String, Value>>(),
            })
        }
        _ => Value::Null,
    };
    json!({
        "policy": state.policy,
        "state": state.phase.as_str(),
        "stage": current.and_then(|i| state.stages.get(i)).map(|s| s.0.clone()),
        "stageIndex": current,
        "versions": {"previous": format!("{:016x}", state.stable_hash), "new": format!("{:016x}", state.target_hash)},
        "gate": gate,
        // A release that waits for its stage's members' objects to be read (one poll round).
        "releaseHeld": state.held.as_ref().map(|h| json!({
            "stage": h.release.stage, "since": rfc3339_ms(h.release.at_ms),
        })),
        "queued": state.queued.as_ref().map(|q| json!({
            "version": format!("{:016x}", q.hash), "since": rfc3339_ms(q.since_ms),
        })),
        "failures": {
            "count": state.failed.len(),
            "max": state.gate.max_failures,
            "clusters": state.failed,
        },
        "stages": stages,
        "history": state.transitions.iter().map(|t| json!({
            "at": rfc3339_ms(t.at_ms), "stage": t.stage, "event": t.event, "cause": t.cause,
        })).collect::<Vec<_>>(),
    })
}

/// The rollout document of a workload, `Null` when no RolloutPolicy selects it.
pub fn rollout_of(store: &Store, key: &ObjectKey, now_ms: u64) -> Result<Value, StoreError> {
    Ok(store.rollout(key)?.map_or(Value::Null, |s| document(&s, now_ms)))
}

/// The rollouts of the workloads named `name` in namespace `ns` (any kind), each with its
/// workload: what `/api/v1/workloads/{ns}/{name}/rollout` answers.
pub fn rollouts_named(store: &Store, ns: &str, name: &str, now_ms: u64) -> Result<Vec<Value>, StoreError> {
    let mut out = Vec::new();
    for (sk, state) in store.rollouts()? {
        let parts: Vec<&str> = sk.split('\u{1f}').collect();
        if let [group, kind, n, nm] = parts.as_slice()
            && *n == ns
            && *nm == name
        {
            let mut doc = document(&state, now_ms);
            doc["workload"] = json!({"group": group, "kind": kind, "namespace": ns, "name": name});
            out.push(doc);
        }
    }
    Ok(out)
}

/// The gate of a rollout document in words (`Healthy since …, 2s left of 3s, deadline in 2m,
/// approval required`); `None` when no stage is gated (complete, halted, rolled back). One
/// wording for `status`, `explain` and the web view.
pub fn gate_text(doc: &Value) -> Option<String> {
    let g = &doc["gate"];
    if g.is_null() {
        return None;
    }
    let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let mut out = match g["timeLeft"].as_str() {
        Some(left) => format!("Healthy since {}, {left} left of {}", s(&g["healthySince"]), s(&g["minSuccessTime"])),
        None => format!("waiting for Healthy ({} needed)", s(&g["minSuccessTime"])),
    };
    if let Some(d) = g["deadlineLeft"].as_str() {
        out.push_str(&format!(", deadline in {d}"));
    }
    if g["approvalRequired"] == true {
        out.push_str(", approval required");
    }
    Some(out)
}

/// The text lines of a rollout document (indented, for `status` and `explain`).
pub fn to_text(doc: &Value) -> String {
    if doc.is_null() {
        return String::new();
    }
    let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let mut out = format!("  rollout ({}): {}", s(&doc["policy"]), s(&doc["state"]));
    if let Some(stage) = doc["stage"].as_str() {
        out.push_str(&format!(" at stage {stage}"));
    }
    if let Some(gate) = gate_text(doc) {
        out.push_str(&format!(", {gate}"));
    }
    out.push_str(&format!(", failures {}/{}\n", s(&doc["failures"]["count"]), s(&doc["failures"]["max"])));
    for st in doc["stages"].as_array().into_iter().flatten() {
        let clusters: Vec<String> = st["clusters"].as_array().into_iter().flatten().map(s).collect();
        out.push_str(&format!("    stage {} ({}): {}\n", s(&st["name"]), s(&st["version"]), clusters.join(", ")));
        if let Some(joined) = st["previousOn"].as_array() {
            let joined: Vec<String> = joined.iter().map(s).collect();
            out.push_str(&format!(
                "      previous version until the stage passes (joined after its release): {}\n",
                joined.join(", ")
            ));
        }
    }
    for (c, o) in doc["gate"]["clusters"].as_object().into_iter().flatten() {
        let agent = o["agent"].as_str().map(|a| format!(", GitOps agent {a}")).unwrap_or_default();
        out.push_str(&format!("    {c}: {}{agent}\n", s(&o["state"])));
    }
    if !doc["releaseHeld"].is_null() {
        let h = &doc["releaseHeld"];
        out.push_str(&format!(
            "    release of stage {} held since {}: its members' objects are read first (one poll round)\n",
            s(&h["stage"]),
            s(&h["since"])
        ));
    }
    if !doc["queued"].is_null() {
        let q = &doc["queued"];
        out.push_str(&format!(
            "    queued: version {} since {} (onNewVersion: Queue)\n",
            s(&q["version"]),
            s(&q["since"])
        ));
    }
    for (c, why) in doc["failures"]["clusters"].as_object().into_iter().flatten() {
        out.push_str(&format!("    failed: {c}: {}\n", s(why)));
    }
    if let Some(last) = doc["history"].as_array().and_then(|h| h.last()) {
        out.push_str(&format!(
            "    last: {} stage {} {}: {}\n",
            s(&last["at"]),
            s(&last["stage"]),
            s(&last["event"]),
            s(&last["cause"])
        ));
    }
    out
}
