//! Explain: why a workload went where it went, for every cluster, as JSON or text, and (for a
//! placed workload) what the members run of it (the `status` block, from
//! [`crate::views::workload_status`]). One implementation for the CLI and the HTTP API.

use std::time::Duration;

use serde_json::{Value, json};

use crate::policy::{ObjectKey, PolicySet, matching};
use crate::reconcile::{Inputs, REQUIRED_BY_PREFIX, dependency_map};
use crate::schedule::profile::{Profiles, profile_name};
use crate::schedule::{
    self, ClusterVerdict, ESTIMATOR_PREFIX, Fleet, Framework, Outcome, ScheduleRequest, ScheduleResult,
};
use crate::store::{PlacementRecord, Store};
use crate::views::placed::Source;

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
        key.kind.eq_ignore_ascii_case(&self.kind)
            && key.namespace.as_deref() == self.namespace.as_deref()
            && key.name == self.name
    }
}

/// Builds the explain document for one template. Uses the stored decision when there is one
/// (what the output holds); otherwise schedules now with the policy's profile, without writing
/// anything. With a stored placement, the document's `status` block is what the members run
/// of it at `now_ms` ([`crate::views::workload_status`], default threshold).
pub fn explain(
    inputs: &Inputs,
    store: &Store,
    profiles: &Profiles,
    r: &WorkloadRef,
    now_ms: u64,
) -> Result<Value, String> {
    explain_from(inputs, store, Source::Store(store), profiles, r, now_ms)
}

/// [`explain`] with the placements read from `placed`: the daemon's pass, whose inputs
/// `inputs` are (its `requiredBy` map is made once per pass and kept with it).
pub fn explain_from(
    inputs: &Inputs,
    store: &Store,
    placed: Source<'_>,
    profiles: &Profiles,
    r: &WorkloadRef,
    now_ms: u64,
) -> Result<Value, String> {
    let set = &inputs.set;
    let t = set.find_template(&r.kind, r.namespace.as_deref(), &r.name).ok_or_else(|| {
        format!(
            "no resource template {}/{}/{} in the policy repository",
            r.kind,
            r.namespace.as_deref().unwrap_or(""),
            r.name
        )
    })?;
    let stored = placed.placement(&t.key).map_err(|e| e.to_string())?;
    let stored = stored.as_deref();
    let claim = matching::claim_with_previous(set, t, stored.and_then(|p| p.policy.as_ref()));
    let required_by = match placed {
        Source::Store(_) => dependency_map(inputs, |t| store.placement(&t.key).ok().flatten()?.policy)
            .remove(&t.key)
            .unwrap_or_default(),
        Source::Pass(p) => {
            p.required_by(|| dependency_map(inputs, |t| p.policy_of(&t.key))).get(&t.key).cloned().unwrap_or_default()
        }
    };
    let last = store.last_history(&t.key).map_err(|e| e.to_string())?;
    let propagated = claim.is_some() || !required_by.is_empty();
    let profile = match (&last, &claim) {
        (Some(h), _) if stored.is_some() => h.inputs.profile.clone(),
        (_, Some(c)) => {
            set.propagation_policy(&c.policy).map(|p| profile_name(&p.meta.annotations).to_string()).unwrap_or_default()
        }
        _ => crate::schedule::framework::KARMADA_DEFAULT.to_string(),
    };
    let (result, source, decided_at) = match (&claim, &stored) {
        (_, Some(p)) if propagated => (Some(p.result.clone()), "store", Some(p.decided_at_ms)),
        (Some(c), None) => {
            let fw = profiles.get(&profile).unwrap_or_else(|| profiles.default_profile());
            (dry_run(inputs, &t.key, &c.policy, fw), "dry-run", None)
        }
        _ => (None, "none", None),
    };
    // Every cluster's verdict: the stored groups of rejected clusters expanded.
    let verdicts = match (&result, source) {
        (Some(r), "store") => store.expand(r).map_err(|e| e.to_string())?,
        (Some(r), _) => r.expand(Fleet::new(&inputs.snapshots).names()),
        (None, _) => Vec::new(),
    };
    // Data each decision used: the snapshot version recorded with the decision, else the latest.
    let used_versions = match &last {
        Some(h) if source == "store" => store.versions(h.inputs.snapshot_versions).map_err(|e| e.to_string())?,
        _ => None,
    }
    .unwrap_or_default();
    let mut data = serde_json::Map::new();
    for snap in &inputs.snapshots {
        let versions = store.snapshot_versions(&snap.name).map_err(|e| e.to_string())?;
        let used = used_versions.get(&snap.name).copied();
        let meta = match used {
            Some(v) if source == "store" => versions.iter().find(|m| m.version == v),
            _ => versions.last(),
        };
        if let Some(m) = meta {
            // The head version is current as of the live view's last observation.
            let head = versions.last().is_some_and(|h| h.version == m.version);
            let observed = if head { snap.observed_at_ms(m.last_seen_ms) } else { m.last_seen_ms };
            data.insert(
                snap.name.clone(),
                json!({
                    "snapshotVersion": m.version,
                    "observedAt": format_ms(observed),
                    "firstSeen": format_ms(m.first_seen_ms),
                    "confidence": m.confidence,
                    "ageAtDecisionMs": decided_at.map(|d| d.saturating_sub(m.last_seen_ms)),
                }),
            );
        }
    }
    let ctx = Context { set, claim: claim.as_ref(), profile: &profile, required_by: &required_by, data: &data };
    let mut doc = document(&ctx, &t.key, result.as_ref(), &verdicts, source, decided_at, stored);
    // Suspended and Lazy-held as the last recorded decision was (`fedsched get`); a workload
    // not decided yet: what its claiming policy suspends.
    let flags = match (&last, source) {
        (Some(h), "store") => {
            crate::views::workloads::Flags::of(store, h, &mut Default::default()).map_err(|e| e.to_string())?
        }
        _ => crate::views::workloads::Flags {
            suspended: claim
                .as_ref()
                .and_then(|c| set.propagation_policy(&c.policy))
                .and_then(|p| p.spec.suspension.as_ref()?.suspended()),
            lazy_held: false,
        },
    };
    doc["suspended"] = flags.suspended_json();
    doc["lazyHeld"] = json!(flags.lazy_held);
    let stability = store.stability().map_err(|e| e.to_string())?;
    doc["failover"] = failover_json(&stability, &t.key);
    doc["rollout"] = crate::views::rollout::rollout_of(store, &t.key, now_ms).map_err(|e| e.to_string())?;
    let status = match &stored {
        Some(p) => Some(
            crate::views::workload_status::placement_document(store, p, now_ms, &Default::default())
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("status".into(), status.unwrap_or(Value::Null));
    }
    Ok(doc)
}

/// The workload's eviction state (the stability engine's stored state): graceful eviction
/// tasks, the members it was moved away from, Unschedulable replicas being timed, distrusted
/// capacity, and whether the storm guard holds.
fn failover_json(state: &crate::schedule::stability::StabilityState, key: &ObjectKey) -> Value {
    let storm =
        state.storm.as_ref().map(|s| json!({"since": format_ms(s.since_ms), "unhealthy": s.unhealthy, "live": s.live}));
    let Some(w) = state.workloads.get(key) else {
        return json!({"stormGuard": storm, "evictions": [], "movedFrom": [], "unschedulable": [], "capacityMarks": []});
    };
    json!({
        "stormGuard": storm,
        "evictions": w.tasks.iter().map(task_json).collect::<Vec<_>>(),
        "movedFrom": w.moved_from.iter().map(|(c, m)| json!({
            "cluster": c, "replicas": m.replicas, "at": format_ms(m.at_ms), "reason": m.reason.to_string(),
        })).collect::<Vec<_>>(),
        "unschedulable": w.unschedulable.iter().map(|(c, p)| json!({
            "cluster": c, "replicas": p.replicas, "since": format_ms(p.since_ms),
        })).collect::<Vec<_>>(),
        "capacityMarks": w.marks.iter().map(|m| json!({
            "cluster": m.cluster, "cap": m.cap, "since": format_ms(m.since_ms),
        })).collect::<Vec<_>>(),
        "lastMoved": (w.moved_at_ms > 0).then(|| format_ms(w.moved_at_ms)),
    })
}

/// One graceful eviction task or hand-over of a workload (explain's `failover.evictions`,
/// status's `kept`).
pub fn task_json(t: &crate::schedule::stability::EvictionTask) -> Value {
    json!({
        "kind": if t.is_handover() { "handover" } else { "eviction" },
        "cluster": t.cluster,
        "replicas": t.replicas,
        "reason": t.reason.to_string(),
        "since": format_ms(t.since_ms),
        "purgeMode": format!("{:?}", t.purge),
        "gracePeriodSeconds": t.grace_ms / 1000,
        "graceExpired": t.grace_expired_ms.map(format_ms),
    })
}

/// The text line of one graceful eviction task ([`task_json`]).
pub fn task_text(e: &Value) -> String {
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let mut line = match e["kind"].as_str() {
        Some("handover") => format!(
            "previous files kept on {} for the {} ({} replicas, since {}; grace {}s) until the new placement is Ready",
            s(&e["cluster"]),
            s(&e["reason"]),
            s(&e["replicas"]),
            s(&e["since"]),
            s(&e["gracePeriodSeconds"])
        ),
        _ => format!(
            "evicted from {} ({} replicas, {}, since {}; purge {}, grace {}s)",
            s(&e["cluster"]),
            s(&e["replicas"]),
            s(&e["reason"]),
            s(&e["since"]),
            s(&e["purgeMode"]),
            s(&e["gracePeriodSeconds"])
        ),
    };
    if let Some(at) = e["graceExpired"].as_str() {
        line.push_str(&format!(
            "; grace period passed at {at} with no replica Ready elsewhere: its files stay until one is"
        ));
    }
    line
}

fn dry_run(
    inputs: &Inputs,
    key: &ObjectKey,
    policy: &crate::policy::PolicyRef,
    fw: &Framework,
) -> Option<ScheduleResult> {
    let set = &inputs.set;
    let t = set.template(key)?;
    let p = set.propagation_policy(policy)?;
    let workload = crate::model::workload::interpret(key.group(), &key.kind, &t.object, &inputs.interpreters).ok()?;
    let previous = Default::default();
    let req = ScheduleRequest {
        key,
        uid: t.meta.uid.as_deref(),
        workload: &workload,
        placement: &p.spec.placement,
        previous: &previous,
        previous_affinity: None,
        failover: &crate::schedule::NO_FAILOVER,
    };
    Some(schedule::schedule_in(&Fleet::new(&inputs.snapshots), fw, &req, &inputs.snapshots))
}

/// What the document says besides the decision.
struct Context<'a> {
    set: &'a PolicySet,
    claim: Option<&'a matching::Claim>,
    profile: &'a str,
    required_by: &'a [ObjectKey],
    data: &'a serde_json::Map<String, Value>,
}

fn document(
    ctx: &Context<'_>,
    key: &ObjectKey,
    result: Option<&ScheduleResult>,
    verdicts: &[ClusterVerdict],
    source: &str,
    decided_at_ms: Option<u64>,
    stored: Option<&PlacementRecord>,
) -> Value {
    let claim = ctx.claim;
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
    let template = ctx.set.template(key);
    let shadowed: Vec<Value> = claim
        .map(|c| {
            c.shadowed
                .iter()
                .map(|p| {
                    let mut v = policy_json(p);
                    if let (Some(t), Some(obj)) = (template, v.as_object_mut()) {
                        obj.insert("reason".into(), json!(matching::shadow_reason(ctx.set, t, c, p)));
                    }
                    v
                })
                .collect()
        })
        .unwrap_or_default();
    let clusters: Vec<Value> = verdicts
        .iter()
        .map(|v| {
            let estimators: serde_json::Map<String, Value> =
                v.estimates.iter().map(|(name, n)| (name.to_string(), json!(n))).collect();
            // The estimators' answers first, as explain has always listed them.
            let reasons: Vec<String> = v
                .estimates
                .iter()
                .map(|(name, n)| format!("{ESTIMATOR_PREFIX}{name}: {n} more replicas fit"))
                .chain(v.reasons.iter().cloned())
                .collect();
            json!({
                "name": v.name,
                "feasible": v.feasible,
                "reasons": reasons,
                "score": v.score,
                "scores": v.scores.iter().map(|(k, s)| (k.to_string(), json!(s))).collect::<serde_json::Map<_, _>>(),
                "estimators": estimators,
                "availableReplicas": v.available_replicas,
                "replicas": v.replicas,
                "selected": v.selected,
                "data": ctx.data.get(&v.name),
            })
        })
        .collect();
    let pulled_by: Vec<Value> = verdicts
        .iter()
        .flat_map(|v| v.reasons.iter().filter_map(|r| r.strip_prefix(REQUIRED_BY_PREFIX).map(|w| (v.name.clone(), w))))
        .map(|(c, w)| json!({"cluster": c, "workload": w}))
        .collect();
    json!({
        "workload": {"apiVersion": key.api_version, "kind": key.kind, "namespace": key.namespace, "name": key.name},
        "policy": claim.map(|c| policy_json(&c.policy)),
        "claim": claim.map(|c| json!({
            "reason": c.reason.as_str(),
            "preemptedFrom": match &c.reason { matching::ClaimReason::Preempted { from } => Some(policy_json(from)), _ => None },
        })),
        "shadowed": shadowed,
        "profile": ctx.profile,
        "requiredBy": ctx.required_by.iter().map(|k| k.display_ref()).collect::<Vec<_>>(),
        "pulledBy": pulled_by,
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
    crate::util::clock::rfc3339_ms(ms)
}

/// The failover lines of an explain document (storm guard, evictions, moves away, Unschedulable
/// replicas, distrusted capacity), for the text form and the web view.
pub fn failover_lines(doc: &Value) -> Vec<String> {
    let s = |v: &Value| match v {
        Value::String(t) => t.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let mut out = Vec::new();
    let f = &doc["failover"];
    if let Some(storm) = f["stormGuard"].as_object() {
        out.push(format!(
            "storm guard holds since {} ({} of {} live members unhealthy): nothing is evicted",
            s(&storm["since"]),
            s(&storm["unhealthy"]),
            s(&storm["live"])
        ));
    }
    for e in f["evictions"].as_array().into_iter().flatten() {
        out.push(task_text(e));
    }
    for m in f["movedFrom"].as_array().into_iter().flatten() {
        out.push(format!(
            "moved away from {} at {} ({}); returns after stable_for",
            s(&m["cluster"]),
            s(&m["at"]),
            s(&m["reason"])
        ));
    }
    for u in f["unschedulable"].as_array().into_iter().flatten() {
        out.push(format!(
            "{} replicas Unschedulable on {} since {}",
            s(&u["replicas"]),
            s(&u["cluster"]),
            s(&u["since"])
        ));
    }
    for m in f["capacityMarks"].as_array().into_iter().flatten() {
        out.push(format!(
            "capacity of {} distrusted since {}: at most {} replicas",
            s(&m["cluster"]),
            s(&m["since"]),
            s(&m["cap"])
        ));
    }
    out
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
    if let Some(reason) = doc["claim"]["reason"].as_str() {
        out.push_str(&format!("  claim: {reason}\n"));
    }
    for sh in doc["shadowed"].as_array().into_iter().flatten() {
        out.push_str(&format!("  shadows: {} {}", s(&sh["kind"]), s(&sh["name"])));
        if let Some(r) = sh["reason"].as_str() {
            out.push_str(&format!(" ({r})"));
        }
        out.push('\n');
    }
    for w in doc["requiredBy"].as_array().into_iter().flatten() {
        out.push_str(&format!("required by: {} (propagateDeps)\n", s(w)));
    }
    out.push_str(&format!("profile: {}\n", s(&doc["profile"])));
    if let Some(a) = doc["affinityName"].as_str() {
        out.push_str(&format!("affinity term: {a}\n"));
    }
    out.push_str(&format!("state: {}", s(&doc["state"])));
    if let Some(r) = doc["reason"].as_str() {
        out.push_str(&format!(" ({r})"));
    }
    out.push_str(&format!("  [decision from {}]\n", s(&doc["source"])));
    if let Some(on) = crate::views::workloads::suspended_text(&doc["suspended"]) {
        out.push_str(&format!("suspended: dispatching to {on} (suspension): its files stay as they were\n"));
    }
    if doc["lazyHeld"].as_bool() == Some(true) {
        out.push_str(&format!("{}\n", crate::reconcile::LAZY_HELD_NOTE));
    }
    for line in failover_lines(doc) {
        out.push_str(&format!("failover: {line}\n"));
    }
    if doc["clusters"].as_array().is_some_and(|c| !c.is_empty()) {
        out.push_str("clusters (+ selected, x filtered out, blank: feasible but not selected):\n");
    }
    for c in doc["clusters"].as_array().into_iter().flatten() {
        let mark = if c["selected"].as_bool() == Some(true) {
            "+"
        } else if c["feasible"].as_bool() == Some(true) {
            " "
        } else {
            "x"
        };
        let scores: Vec<String> =
            c["scores"].as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", s(v))).collect();
        out.push_str(&format!(
            "{mark} {:<20} replicas={:<6} available={:<8} score={}{}\n",
            s(&c["name"]),
            s(&c["replicas"]),
            s(&c["availableReplicas"]),
            s(&c["score"]),
            if scores.is_empty() { String::new() } else { format!(" ({})", scores.join(", ")) }
        ));
        if let Some(at) = c["data"]["observedAt"].as_str() {
            let age = c["data"]["ageAtDecisionMs"]
                .as_u64()
                .map(|ms| {
                    format!(", {} old at the decision", humantime::format_duration(Duration::from_secs(ms / 1000)))
                })
                .unwrap_or_default();
            let confidence =
                c["data"]["confidence"].as_f64().map(|v| format!(", confidence {v:.2}")).unwrap_or_default();
            out.push_str(&format!(
                "      data: snapshot v{} observed {at}{age}{confidence}\n",
                s(&c["data"]["snapshotVersion"])
            ));
        }
        for r in c["reasons"].as_array().into_iter().flatten() {
            out.push_str(&format!("      {}\n", s(r)));
        }
    }
    if !doc["rollout"].is_null() {
        out.push_str("rollout:\n");
        out.push_str(&crate::views::rollout::to_text(&doc["rollout"]));
    }
    if doc["status"].is_object() {
        out.push_str("status: ");
        out.push_str(&crate::views::workload_status::to_text(&doc["status"]));
    }
    out
}
