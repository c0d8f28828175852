//! Workload status: what the members actually run of a placed workload, per target cluster
//! (desired, pods, ready, pending with reasons and age, missing) and aggregated into one
//! state. One implementation for `fedsched status`, `/api/v1/workloads/{ns}/{kind}/{name}/status`,
//! `/api/v1/workloads/status` (every workload that is not Healthy) and `explain`'s `status`
//! block.
//!
//! Inputs are the store's alone: the placement (its targets are the desired replicas, what the
//! output holds) and each target cluster's latest snapshot ([`PodFacts::owners`], attributed
//! to the workload by [`Owner::state`]). So it works on a stopped daemon's state directory,
//! and through the API while the daemon runs. Ages are computed at the caller's `now` from the
//! member's timestamps.
//!
//! Per cluster ([`ClusterState`]):
//! - `NotObserved`: an offline cluster (no pods are seen), no stored snapshot, or a kind whose
//!   pods fedsched cannot attribute (only Deployment, StatefulSet, ReplicaSet, Job and Pod).
//! - `Unknown`: a live cluster that is unreachable or refused the poll (health not Ready), or
//!   whose snapshot has no pods data.
//! - `Ready`: ready == desired and no other pod (none pending, none extra).
//! - `Degraded`: some pod has been `Unschedulable` or not Ready for longer than the threshold
//!   ([`Options::stuck_after`], default [`DEFAULT_STUCK_AFTER`] = 5 minutes, from the
//!   condition's `lastTransitionTime` or the pod's creation), or pods have been missing for
//!   longer than the threshold since the decision.
//! - `Progressing`: anything else (not yet ready, nothing stuck).
//!
//! The workload ([`WorkloadState`]): `Degraded` if a cluster is Degraded (or the workload is
//! unschedulable and placed nowhere), else `Unknown` if a cluster is Unknown or no target
//! cluster is observed at all, else `Progressing` if a cluster is Progressing, else `Healthy`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::model::assumed::Owner;
use crate::model::{ClusterSnapshot, Health, OwnerState, SnapshotSource};
use crate::policy::ObjectKey;
use crate::schedule::Outcome;
use crate::store::{PlacementRecord, SnapshotMeta, Store, StoreError};
use crate::views::explain::{WorkloadRef, format_ms};

/// How long a pod may stay Unschedulable or not Ready (and pods missing) before the workload
/// is Degraded, by default.
pub const DEFAULT_STUCK_AFTER: Duration = Duration::from_secs(300);

/// How the status is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Longer than this Unschedulable, not Ready or missing ⇒ Degraded.
    pub stuck_after: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { stuck_after: DEFAULT_STUCK_AFTER }
    }
}

/// The state of one target cluster for a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    Ready,
    Progressing,
    Degraded,
    Unknown,
    NotObserved,
}

impl ClusterState {
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterState::Ready => "Ready",
            ClusterState::Progressing => "Progressing",
            ClusterState::Degraded => "Degraded",
            ClusterState::Unknown => "Unknown",
            ClusterState::NotObserved => "NotObserved",
        }
    }
}

/// The aggregated state of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadState {
    Healthy,
    Progressing,
    Degraded,
    Unknown,
}

impl WorkloadState {
    /// Every state, in the order of [`WorkloadState::exit_code`]'s severity for a list.
    pub const ALL: [WorkloadState; 4] =
        [WorkloadState::Degraded, WorkloadState::Unknown, WorkloadState::Progressing, WorkloadState::Healthy];

    /// The state named `name` (`as_str`'s inverse).
    pub fn parse(name: &str) -> Option<WorkloadState> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// `fedsched status`'s exit code for this state, to gate CI as `kubectl rollout status`
    /// does: 0 Healthy; 3 Progressing, 4 Degraded, 5 Unknown (1, 2 and 64 are the codes of
    /// every command: invalid input, failure, usage).
    pub fn exit_code(self) -> u8 {
        match self {
            WorkloadState::Healthy => 0,
            WorkloadState::Progressing => 3,
            WorkloadState::Degraded => 4,
            WorkloadState::Unknown => 5,
        }
    }

    /// The state a status document stands for: one workload's (`workload_document`), or for a
    /// list (`unhealthy_document`) the most severe of its workloads — Degraded, then Unknown,
    /// then Progressing; Healthy when none is listed.
    pub fn of_document(doc: &Value) -> WorkloadState {
        if let Some(s) = doc["state"].as_str() {
            return Self::parse(s).unwrap_or(WorkloadState::Unknown);
        }
        let listed: Vec<WorkloadState> = doc["workloads"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| w["state"].as_str().and_then(Self::parse).unwrap_or(WorkloadState::Unknown))
            .collect();
        Self::ALL.into_iter().find(|s| listed.contains(s)).unwrap_or(WorkloadState::Healthy)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadState::Healthy => "Healthy",
            WorkloadState::Progressing => "Progressing",
            WorkloadState::Degraded => "Degraded",
            WorkloadState::Unknown => "Unknown",
        }
    }
}

/// What is known of the workload's pods on one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Member {
    /// Nothing can be seen there (why).
    NotObserved(String),
    /// It should be seen but is not (why); the last known state, if any.
    Unknown(String, Option<OwnerState>),
    /// Observed: the workload's pods.
    Observed(OwnerState),
}

/// One target cluster's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStatus {
    pub name: String,
    /// Replicas fedsched rendered for the cluster (None: the whole object, no replica count).
    pub desired: Option<i32>,
    /// The workload's pods there, when observed (or last known, when Unknown).
    pub pods: Option<OwnerState>,
    /// desired − pods (never negative), when observed.
    pub missing: Option<u32>,
    pub state: ClusterState,
    /// Why it is not Ready (one line), if it is not.
    pub reason: Option<String>,
    /// Age at `now` of the oldest pod that is not Ready.
    pub oldest_pending: Option<Duration>,
    /// Age at `now` of the oldest Unschedulable pod.
    pub oldest_unschedulable: Option<Duration>,
    /// Unix ms of the snapshot's last observation.
    pub observed_at_ms: Option<u64>,
}

/// Age at `now_ms` of a member's timestamp (0 = unknown counts as not old).
fn age(now_ms: u64, since_ms: u64) -> Duration {
    match since_ms {
        0 => Duration::ZERO,
        t => Duration::from_millis(now_ms.saturating_sub(t)),
    }
}

fn short(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// One cluster's status from what is known of the workload's pods there. `decided_at_ms`
/// (the placement's decision) dates missing pods.
pub fn cluster_status(
    name: &str,
    desired: Option<i32>,
    member: Member,
    decided_at_ms: u64,
    now_ms: u64,
    opts: &Options,
) -> ClusterStatus {
    let mut out = ClusterStatus {
        name: name.to_string(),
        desired,
        pods: None,
        missing: None,
        state: ClusterState::NotObserved,
        reason: None,
        oldest_pending: None,
        oldest_unschedulable: None,
        observed_at_ms: None,
    };
    let s = match member {
        Member::NotObserved(why) => {
            out.reason = Some(why);
            return out;
        }
        Member::Unknown(why, last) => {
            out.state = ClusterState::Unknown;
            out.reason = Some(why);
            out.pods = last;
            return out;
        }
        Member::Observed(s) => s,
    };
    let want = desired.map_or(s.pods, |d| u32::try_from(d).unwrap_or(0));
    let missing = want.saturating_sub(s.pods);
    out.missing = Some(missing);
    out.oldest_pending = s.not_ready_since.first().map(|t| age(now_ms, *t));
    out.oldest_unschedulable = s.unschedulable_since.first().map(|t| age(now_ms, *t));
    let stuck = opts.stuck_after;
    let mut problems = Vec::new();
    if let Some(a) = out.oldest_unschedulable.filter(|a| *a > stuck) {
        let n = s.unschedulable_since.iter().filter(|t| age(now_ms, **t) > stuck).count();
        problems.push(format!("{n} pod(s) Unschedulable for longer than {} (oldest {})", short(stuck), short(a)));
    }
    let not_ready_long = s.not_ready_since.iter().filter(|t| age(now_ms, **t) > stuck).count();
    let unschedulable_long = s.unschedulable_since.iter().filter(|t| age(now_ms, **t) > stuck).count();
    if not_ready_long > unschedulable_long {
        let a = out.oldest_pending.unwrap_or_default();
        problems.push(format!(
            "{} pod(s) not Ready for longer than {} (oldest {})",
            not_ready_long - unschedulable_long,
            short(stuck),
            short(a)
        ));
    }
    if missing > 0 && age(now_ms, decided_at_ms) > stuck {
        problems.push(format!("{missing} pod(s) missing for longer than {} after the decision", short(stuck)));
    }
    out.state = if !problems.is_empty() {
        ClusterState::Degraded
    } else if s.ready == want && s.pods == want {
        ClusterState::Ready
    } else {
        ClusterState::Progressing
    };
    out.reason = match out.state {
        ClusterState::Degraded => Some(problems.join("; ")),
        ClusterState::Progressing => {
            let mut parts = vec![format!("{}/{want} ready", s.ready)];
            if missing > 0 {
                parts.push(format!("{missing} missing"));
            }
            if s.pods > want {
                parts.push(format!("{} extra", s.pods - want));
            }
            Some(parts.join(", "))
        }
        _ => None,
    };
    out.pods = Some(s);
    out
}

/// The workload's state from its clusters' (see the module documentation).
pub fn aggregate(clusters: &[ClusterStatus], unschedulable_nowhere: bool) -> WorkloadState {
    let any = |st: ClusterState| clusters.iter().any(|c| c.state == st);
    if any(ClusterState::Degraded) || unschedulable_nowhere {
        WorkloadState::Degraded
    } else if any(ClusterState::Unknown) || clusters.iter().all(|c| c.state == ClusterState::NotObserved) {
        WorkloadState::Unknown
    } else if any(ClusterState::Progressing) {
        WorkloadState::Progressing
    } else {
        WorkloadState::Healthy
    }
}

/// What the workload's pods on one member are, from that member's latest stored snapshot.
pub fn member(owner: &Owner, snapshot: Option<&(SnapshotMeta, ClusterSnapshot)>) -> Member {
    let Some((_, snap)) = snapshot else { return Member::NotObserved("no snapshot stored yet".into()) };
    if let SnapshotSource::Offline { .. } = snap.source {
        return Member::NotObserved("not observed (offline cluster)".into());
    }
    if *owner == Owner::Unknown {
        return Member::NotObserved("not observed (pods of this kind are not attributed)".into());
    }
    let last = snap.pods.as_ref().map(|p| owner.state(p));
    match &snap.health {
        Health::Ready => match last {
            Some(s) => Member::Observed(s),
            None => Member::Unknown("no pods data in the last snapshot".into(), None),
        },
        Health::NotReady { reason } => Member::Unknown(format!("cluster not ready: {reason}"), last),
        Health::Unreachable { reason } => Member::Unknown(format!("cluster unreachable: {reason}"), last),
    }
}

/// The members' latest snapshots, read once each.
#[derive(Default)]
pub struct Members {
    latest: BTreeMap<String, Option<(SnapshotMeta, ClusterSnapshot)>>,
}

impl Members {
    fn get(&mut self, store: &Store, cluster: &str) -> Result<Option<&(SnapshotMeta, ClusterSnapshot)>, StoreError> {
        if !self.latest.contains_key(cluster) {
            let found = store.latest_snapshot(cluster)?;
            self.latest.insert(cluster.to_string(), found);
        }
        Ok(self.latest.get(cluster).and_then(Option::as_ref))
    }
}

/// The status of one placed workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadStatus {
    pub workload: ObjectKey,
    pub state: WorkloadState,
    /// Why (one line), when not Healthy.
    pub reason: Option<String>,
    pub decided_at_ms: u64,
    pub stuck_after: Duration,
    pub clusters: Vec<ClusterStatus>,
}

/// The status of a placement from the members' latest snapshots.
pub fn status_of(
    store: &Store,
    members: &mut Members,
    p: &PlacementRecord,
    now_ms: u64,
    opts: &Options,
) -> Result<WorkloadStatus, StoreError> {
    let owner = Owner::of(&p.workload);
    let mut clusters = Vec::new();
    for (name, desired) in &p.targets {
        let snap = members.get(store, name)?;
        let mut c = cluster_status(name, *desired, member(&owner, snap), p.decided_at_ms, now_ms, opts);
        c.observed_at_ms = snap.map(|(m, _)| m.last_seen_ms);
        clusters.push(c);
    }
    let unschedulable = match &p.result.outcome {
        Outcome::Unschedulable { reason } if p.targets.is_empty() => Some(reason.clone()),
        _ => None,
    };
    let state = aggregate(&clusters, unschedulable.is_some());
    let reason = match state {
        WorkloadState::Healthy => None,
        _ if clusters.is_empty() => {
            Some(unschedulable.map_or("placed on no cluster".to_string(), |r| format!("unschedulable: {r}")))
        }
        WorkloadState::Unknown if clusters.iter().all(|c| c.state == ClusterState::NotObserved) => {
            Some("no target cluster is observed".to_string())
        }
        st => {
            let worst = match st {
                WorkloadState::Degraded => ClusterState::Degraded,
                WorkloadState::Unknown => ClusterState::Unknown,
                _ => ClusterState::Progressing,
            };
            let parts: Vec<String> = clusters
                .iter()
                .filter(|c| c.state == worst)
                .map(|c| format!("{}: {}", c.name, c.reason.as_deref().unwrap_or(c.state.as_str())))
                .collect();
            Some(parts.join("; "))
        }
    };
    Ok(WorkloadStatus {
        workload: p.workload.clone(),
        state,
        reason,
        decided_at_ms: p.decided_at_ms,
        stuck_after: opts.stuck_after,
        clusters,
    })
}

/// Why a status cannot be given.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("{0} has no placement in the store (not decided yet, or not propagated)")]
    NotPlaced(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The status document of one workload (`fedsched status KIND/NS/NAME -o json`).
pub fn workload_document(store: &Store, r: &WorkloadRef, now_ms: u64, opts: &Options) -> Result<Value, StatusError> {
    workload_document_from(store, crate::views::placed::Source::Store(store), r, now_ms, opts)
}

/// [`workload_document`] with the placement read from `placed` (the daemon's pass).
pub fn workload_document_from(
    store: &Store,
    placed: crate::views::placed::Source<'_>,
    r: &WorkloadRef,
    now_ms: u64,
    opts: &Options,
) -> Result<Value, StatusError> {
    let p = placed.matching(r)?.into_iter().next().ok_or_else(|| {
        StatusError::NotPlaced(format!("{}/{}/{}", r.kind, r.namespace.as_deref().unwrap_or(""), r.name))
    })?;
    let mut doc = to_json(&status_of(store, &mut Members::default(), &p, now_ms, opts)?, now_ms);
    doc["rebalances"] = rebalances_of(store, &p.workload)?;
    doc["kept"] = kept_of(store, &p.workload)?;
    doc["rollout"] = crate::views::rollout::rollout_of(store, &p.workload, now_ms)?;
    Ok(doc)
}

/// The files a workload left on clusters it moved away from and that stay until its new
/// placement is Ready (graceful eviction tasks not purged; `Directly` ones are not kept), with
/// when the grace period passed while nothing was Ready elsewhere.
pub fn kept_of(store: &Store, key: &crate::policy::ObjectKey) -> Result<Value, StoreError> {
    let state = store.stability()?;
    let tasks = state.workloads.get(key).map(|w| w.tasks.as_slice()).unwrap_or_default();
    let kept = tasks.iter().filter(|t| t.purge != crate::schedule::stability::Purge::Directly);
    Ok(Value::Array(kept.map(crate::views::explain::task_json).collect()))
}

/// The WorkloadRebalancers whose last generation named the workload, with their result
/// (`Successful`: decided afresh; `NotFound`) and when they acted.
pub fn rebalances_of(store: &Store, key: &crate::policy::ObjectKey) -> Result<Value, StoreError> {
    let label = format!("{} {key}", key.api_version);
    let state = store.stability()?;
    let list: Vec<Value> = state
        .rebalances
        .iter()
        .flat_map(|(name, r)| {
            r.workloads.iter().filter(|(w, _)| *w == label).map(move |(_, result)| {
                serde_json::json!({
                    "rebalancer": name,
                    "generation": r.generation,
                    "result": result,
                    "at": format_ms(r.at_ms),
                })
            })
        })
        .collect();
    Ok(Value::Array(list))
}

/// The status block of a workload's placement, for explain.
pub fn placement_document(
    store: &Store,
    p: &PlacementRecord,
    now_ms: u64,
    opts: &Options,
) -> Result<Value, StoreError> {
    let mut doc = to_json(&status_of(store, &mut Members::default(), p, now_ms, opts)?, now_ms);
    doc["rebalances"] = rebalances_of(store, &p.workload)?;
    Ok(doc)
}

/// Every placed workload that is not Healthy (`fedsched status -o json`), with counts by
/// state. Workloads of kinds whose pods are not attributed are left out (nothing to report).
pub fn unhealthy_document(store: &Store, now_ms: u64, opts: &Options) -> Result<Value, StoreError> {
    let mut members = Members::default();
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut listed = Vec::new();
    for p in store.placements()? {
        if Owner::of(&p.workload) == Owner::Unknown {
            continue;
        }
        let s = status_of(store, &mut members, &p, now_ms, opts)?;
        *counts.entry(s.state.as_str()).or_insert(0) += 1;
        if s.state != WorkloadState::Healthy {
            listed.push(to_json(&s, now_ms));
        }
    }
    Ok(json!({"counts": counts, "workloads": listed}))
}

/// The JSON form of a status.
pub fn to_json(s: &WorkloadStatus, now_ms: u64) -> Value {
    let k = &s.workload;
    let clusters: Vec<Value> = s
        .clusters
        .iter()
        .map(|c| {
            let p = c.pods.as_ref();
            json!({
                "name": c.name,
                "state": c.state.as_str(),
                "reason": c.reason,
                "desired": c.desired,
                "pods": p.map(|p| p.pods),
                "bound": p.map(|p| p.bound),
                "running": p.map(|p| p.running),
                "ready": p.map(|p| p.ready),
                "pending": p.map(|p| json!({
                    "count": p.not_ready(),
                    "reasons": p.pending_reasons,
                    "oldestAgeSeconds": c.oldest_pending.map(|d| d.as_secs()),
                })),
                "unschedulable": p.map(|p| json!({
                    "count": p.unschedulable_since.len(),
                    "oldestAgeSeconds": c.oldest_unschedulable.map(|d| d.as_secs()),
                })),
                "missing": c.missing,
                "observedAt": c.observed_at_ms.map(format_ms),
                "observedAgeSeconds": c.observed_at_ms.map(|t| now_ms.saturating_sub(t) / 1000),
            })
        })
        .collect();
    json!({
        "workload": {"apiVersion": k.api_version, "kind": k.kind, "namespace": k.namespace, "name": k.name},
        "state": s.state.as_str(),
        "reason": s.reason,
        "decidedAt": format_ms(s.decided_at_ms),
        "stuckAfterSeconds": s.stuck_after.as_secs(),
        "clusters": clusters,
    })
}

/// The text form of one workload's status document.
pub fn to_text(doc: &Value) -> String {
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let w = &doc["workload"];
    let mut out = format!(
        "{} {}/{}/{}: {}",
        s(&w["apiVersion"]),
        s(&w["kind"]),
        w["namespace"].as_str().unwrap_or(""),
        s(&w["name"]),
        s(&doc["state"])
    );
    if let Some(r) = doc["reason"].as_str() {
        out.push_str(&format!(" ({r})"));
    }
    out.push('\n');
    out.push_str(&format!(
        "  {:<20} {:>7} {:>5} {:>7} {:>7}  {}\n",
        "CLUSTER", "DESIRED", "READY", "PENDING", "MISSING", "STATE"
    ));
    for c in doc["clusters"].as_array().into_iter().flatten() {
        let observed = c["state"] != "NotObserved" && c["state"] != "Unknown";
        let num = |v: &Value| if observed { s(v) } else { "-".into() };
        out.push_str(&format!(
            "  {:<20} {:>7} {:>5} {:>7} {:>7}  {}",
            s(&c["name"]),
            s(&c["desired"]),
            num(&c["ready"]),
            num(&c["pending"]["count"]),
            num(&c["missing"]),
            s(&c["state"])
        ));
        let reasons: Vec<String> =
            c["pending"]["reasons"].as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", s(v))).collect();
        if observed && !reasons.is_empty() {
            let oldest = c["pending"]["oldestAgeSeconds"]
                .as_u64()
                .map(|a| format!(", oldest {}", humantime::format_duration(Duration::from_secs(a))))
                .unwrap_or_default();
            out.push_str(&format!("  pending: {}{oldest}", reasons.join(" ")));
        }
        match c["reason"].as_str() {
            Some(r) if !observed || c["state"] == "Degraded" => out.push_str(&format!("  {r}")),
            _ => {}
        }
        out.push('\n');
    }
    for e in doc["kept"].as_array().into_iter().flatten() {
        out.push_str(&format!("  kept: {}\n", crate::views::explain::task_text(e)));
    }
    for r in doc["rebalances"].as_array().into_iter().flatten() {
        let g = r["generation"].as_i64().map(|g| format!(" generation {g}")).unwrap_or_default();
        out.push_str(&format!(
            "  rebalanced by WorkloadRebalancer {}{g}: {} at {}\n",
            s(&r["rebalancer"]),
            s(&r["result"]),
            s(&r["at"])
        ));
    }
    out.push_str(&crate::views::rollout::to_text(&doc["rollout"]));
    out
}

/// The text form of the list of workloads that are not Healthy.
pub fn list_to_text(doc: &Value) -> String {
    let counts: Vec<String> =
        doc["counts"].as_object().into_iter().flatten().map(|(k, v)| format!("{v} {k}")).collect();
    let listed = doc["workloads"].as_array().map_or(0, Vec::len);
    let mut out = match (counts.is_empty(), listed) {
        (true, _) => "no workload is placed on a cluster whose pods fedsched observes\n".to_string(),
        (false, 0) => format!("every workload is Healthy ({})\n", counts.join(", ")),
        (false, _) => format!("{listed} workload(s) not Healthy ({})\n", counts.join(", ")),
    };
    for w in doc["workloads"].as_array().into_iter().flatten() {
        out.push('\n');
        out.push_str(&to_text(w));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 49 item 11: the exit code of a status document, one workload or a list.
    #[test]
    fn a_document_states_its_exit_code() {
        let one = |s: &str| WorkloadState::of_document(&json!({"state": s})).exit_code();
        assert_eq!([one("Healthy"), one("Progressing"), one("Degraded"), one("Unknown")], [0, 3, 4, 5]);
        let list = |states: &[&str]| {
            let w: Vec<Value> = states.iter().map(|s| json!({"state": s})).collect();
            WorkloadState::of_document(&json!({"counts": {}, "workloads": w})).exit_code()
        };
        assert_eq!(list(&[]), 0);
        assert_eq!(list(&["Progressing", "Unknown"]), 5);
        assert_eq!(list(&["Unknown", "Degraded", "Progressing"]), 4);
    }

    const NOW: u64 = 1_800_000_000_000;
    const MIN: u64 = 60_000;

    fn state(pods: u32, ready: u32, not_ready_since: &[u64], unschedulable_since: &[u64]) -> OwnerState {
        let mut reasons = BTreeMap::new();
        if !unschedulable_since.is_empty() {
            reasons.insert("Unschedulable".to_string(), unschedulable_since.len() as u32);
        }
        let rest = not_ready_since.len() - unschedulable_since.len();
        if rest > 0 {
            reasons.insert("ContainersNotReady".to_string(), rest as u32);
        }
        OwnerState {
            pods,
            bound: pods - unschedulable_since.len() as u32,
            running: pods - unschedulable_since.len() as u32,
            ready,
            unschedulable_since: unschedulable_since.to_vec(),
            not_ready_since: not_ready_since.to_vec(),
            pending_reasons: reasons,
        }
    }

    fn cs(desired: i32, m: Member, decided_min_ago: u64) -> ClusterStatus {
        cluster_status("m", Some(desired), m, NOW - decided_min_ago * MIN, NOW, &Options::default())
    }

    #[test]
    fn a_cluster_is_ready_progressing_or_degraded_by_its_pods_and_their_ages() {
        let ready = cs(3, Member::Observed(state(3, 3, &[], &[])), 60);
        assert_eq!((ready.state, ready.missing, ready.reason.as_deref()), (ClusterState::Ready, Some(0), None));
        // Not ready for 2 minutes: progressing; for 6 minutes: degraded.
        let young = cs(3, Member::Observed(state(3, 2, &[NOW - 2 * MIN], &[])), 60);
        assert_eq!(young.state, ClusterState::Progressing);
        assert_eq!(young.oldest_pending, Some(Duration::from_secs(120)));
        assert_eq!(young.reason.as_deref(), Some("2/3 ready"));
        let old = cs(3, Member::Observed(state(3, 2, &[NOW - 6 * MIN], &[])), 60);
        assert_eq!(old.state, ClusterState::Degraded);
        assert!(old.reason.as_deref().is_some_and(|r| r.contains("1 pod(s) not Ready for longer than 5m")), "{old:?}");
        // Unschedulable for 10 minutes: degraded, said as unschedulable (not twice).
        let stuck = cs(2, Member::Observed(state(2, 0, &[NOW - 10 * MIN, NOW - MIN], &[NOW - 10 * MIN])), 60);
        assert_eq!(stuck.state, ClusterState::Degraded);
        let reason = stuck.reason.clone().unwrap_or_default();
        assert!(reason.contains("1 pod(s) Unschedulable for longer than 5m (oldest 10m)"), "{reason}");
        assert!(!reason.contains("not Ready"), "{reason}");
        // Pods missing: progressing just after the decision, degraded later.
        let soon = cs(4, Member::Observed(state(2, 2, &[], &[])), 1);
        assert_eq!((soon.state, soon.missing), (ClusterState::Progressing, Some(2)));
        assert_eq!(soon.reason.as_deref(), Some("2/4 ready, 2 missing"));
        let late = cs(4, Member::Observed(state(2, 2, &[], &[])), 30);
        assert_eq!(late.state, ClusterState::Degraded);
        // Extra pods (a rollout's surge) are progressing.
        assert_eq!(cs(2, Member::Observed(state(3, 2, &[NOW - MIN], &[])), 60).state, ClusterState::Progressing);
        // A lower threshold turns the young pod stuck.
        let strict = Options { stuck_after: Duration::from_secs(60) };
        let m = Member::Observed(state(3, 2, &[NOW - 2 * MIN], &[]));
        assert_eq!(cluster_status("m", Some(3), m, NOW, NOW, &strict).state, ClusterState::Degraded);
        // Unknown and not observed keep their reason.
        let u = cs(3, Member::Unknown("cluster unreachable: x".into(), Some(state(3, 3, &[], &[]))), 60);
        assert_eq!((u.state, u.missing), (ClusterState::Unknown, None));
        assert_eq!(cs(3, Member::NotObserved("offline".into()), 60).state, ClusterState::NotObserved);
    }

    #[test]
    fn the_workload_takes_the_worst_cluster() {
        let with = |states: &[ClusterState]| -> Vec<ClusterStatus> {
            states
                .iter()
                .map(|st| ClusterStatus { state: *st, ..cs(1, Member::NotObserved(String::new()), 0) })
                .collect()
        };
        use ClusterState::*;
        assert_eq!(aggregate(&with(&[Ready, Ready]), false), WorkloadState::Healthy);
        assert_eq!(aggregate(&with(&[Ready, NotObserved]), false), WorkloadState::Healthy);
        assert_eq!(aggregate(&with(&[Ready, Progressing]), false), WorkloadState::Progressing);
        assert_eq!(aggregate(&with(&[Progressing, Unknown]), false), WorkloadState::Unknown);
        assert_eq!(aggregate(&with(&[Unknown, Degraded]), false), WorkloadState::Degraded);
        assert_eq!(aggregate(&with(&[NotObserved, NotObserved]), false), WorkloadState::Unknown);
        assert_eq!(aggregate(&[], true), WorkloadState::Degraded);
    }

    #[test]
    fn members_are_read_from_their_latest_snapshot() {
        let key = ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        let owner = Owner::of(&key);
        let meta = SnapshotMeta {
            version: 1,
            hash: 0,
            first_seen_ms: 0,
            last_seen_ms: 0,
            health: Health::Ready,
            confidence: 1.0,
        };
        let pods = crate::model::PodFacts {
            owners: [("ReplicaSet/shop/web-5d8f".to_string(), state(2, 1, &[NOW], &[]))].into(),
            ..Default::default()
        };
        let live = ClusterSnapshot::live("m", "https://m").with_pods(pods);
        assert_eq!(member(&owner, Some(&(meta.clone(), live.clone()))), Member::Observed(state(2, 1, &[NOW], &[])));
        let mut down = live.clone();
        down.health = Health::Unreachable { reason: "transport: refused".into() };
        assert!(
            matches!(member(&owner, Some(&(meta.clone(), down))), Member::Unknown(r, Some(_)) if r.contains("unreachable"))
        );
        let mut blind = live.clone();
        blind.pods = None;
        assert!(matches!(member(&owner, Some(&(meta.clone(), blind))), Member::Unknown(_, None)));
        let offline = ClusterSnapshot::offline("m", "c.yaml");
        assert!(
            matches!(member(&owner, Some(&(meta.clone(), offline))), Member::NotObserved(r) if r.contains("offline"))
        );
        assert!(matches!(member(&owner, None), Member::NotObserved(_)));
        assert!(matches!(member(&Owner::Unknown, Some(&(meta, live))), Member::NotObserved(r) if r.contains("kind")));
    }
}
