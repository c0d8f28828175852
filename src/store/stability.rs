//! The stability engine's state ([`StabilityState`]: member health timelines, graceful
//! eviction tasks, capacity marks, the rate limit window, the storm guard) in its own tree,
//! under one key, versioned like every record. The reconciler reads it before a pass and
//! writes the next one before the pass's flush; a missing entry is the empty state.

use std::collections::{BTreeMap, BTreeSet};

use super::codec::{Codec, Versioned, decode, decode_payload, encode};
use super::{Store, StoreError};
use crate::policy::ObjectKey;
use crate::schedule::stability::{
    AddedTaint, CapacityMark, ClusterTimeline, EvictionTask, MovedFrom, Pending, Purge, Reason, Rebalance,
    StabilityState, Storm, WorkloadStability,
};

/// The one key of the `stability` tree.
const STATE_KEY: &[u8] = b"state";

impl Versioned for StabilityState {
    const WHAT: &'static str = "stability state";
    /// 2: with the taints of ClusterTaintPolicies and the WorkloadRebalancers' generations.
    /// 3: eviction tasks say when their grace period passed with nothing Ready elsewhere.
    /// 4: workloads keep the actions the mass-deletion guard held until they are published.
    const SCHEMA: u16 = 4;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        match schema {
            1 => Some(decode_payload::<StabilityStateV1>(Self::WHAT, codec, payload).map(|v| StabilityState {
                clusters: v.clusters,
                workloads: upgrade_workloads(v.workloads, EvictionTaskV2::upgrade),
                recent_removals: v.recent_removals,
                storm: v.storm,
                taints: BTreeMap::new(),
                rebalances: BTreeMap::new(),
            })),
            2 => Some(
                decode_payload::<StabilityStateOld<EvictionTaskV2>>(Self::WHAT, codec, payload)
                    .map(|v| v.upgrade(EvictionTaskV2::upgrade)),
            ),
            3 => Some(
                decode_payload::<StabilityStateOld<EvictionTask>>(Self::WHAT, codec, payload)
                    .map(|v| v.upgrade(std::convert::identity)),
            ),
            _ => None,
        }
    }
}

/// Schema 1 of [`StabilityState`]: before ClusterTaintPolicy taints.
#[derive(serde::Deserialize)]
struct StabilityStateV1 {
    clusters: BTreeMap<String, ClusterTimeline>,
    workloads: BTreeMap<ObjectKey, WorkloadStabilityOld<EvictionTaskV2>>,
    recent_removals: Vec<u64>,
    storm: Option<Storm>,
}

/// Schemas 2 (eviction tasks `T` = [`EvictionTaskV2`], without `grace_expired_ms`) and 3
/// (`T` = [`EvictionTask`]) of [`StabilityState`]: workloads without held actions.
#[derive(serde::Deserialize)]
struct StabilityStateOld<T> {
    clusters: BTreeMap<String, ClusterTimeline>,
    workloads: BTreeMap<ObjectKey, WorkloadStabilityOld<T>>,
    recent_removals: Vec<u64>,
    storm: Option<Storm>,
    taints: BTreeMap<String, Vec<AddedTaint>>,
    rebalances: BTreeMap<String, Rebalance>,
}

impl<T> StabilityStateOld<T> {
    fn upgrade(self, task: impl Fn(T) -> EvictionTask) -> StabilityState {
        StabilityState {
            clusters: self.clusters,
            workloads: upgrade_workloads(self.workloads, task),
            recent_removals: self.recent_removals,
            storm: self.storm,
            taints: self.taints,
            rebalances: self.rebalances,
        }
    }
}

/// [`WorkloadStability`] of schemas 1 to 3: without `unpublished`, with eviction tasks `T`.
#[derive(serde::Deserialize)]
struct WorkloadStabilityOld<T> {
    tasks: Vec<T>,
    moved_from: BTreeMap<String, MovedFrom>,
    unschedulable: BTreeMap<String, Pending>,
    marks: Vec<CapacityMark>,
    not_ready_since: BTreeMap<String, u64>,
    stuck: BTreeSet<String>,
    moved_at_ms: u64,
}

/// [`EvictionTask`] of schemas 1 and 2.
#[derive(serde::Deserialize)]
struct EvictionTaskV2 {
    cluster: String,
    replicas: i32,
    reason: Reason,
    since_ms: u64,
    purge: Purge,
    grace_ms: u64,
}

impl EvictionTaskV2 {
    fn upgrade(self) -> EvictionTask {
        EvictionTask {
            cluster: self.cluster,
            replicas: self.replicas,
            reason: self.reason,
            since_ms: self.since_ms,
            purge: self.purge,
            grace_ms: self.grace_ms,
            grace_expired_ms: None,
        }
    }
}

fn upgrade_workloads<T>(
    old: BTreeMap<ObjectKey, WorkloadStabilityOld<T>>,
    task: impl Fn(T) -> EvictionTask,
) -> BTreeMap<ObjectKey, WorkloadStability> {
    old.into_iter()
        .map(|(key, w)| {
            let w = WorkloadStability {
                tasks: w.tasks.into_iter().map(&task).collect(),
                moved_from: w.moved_from,
                unschedulable: w.unschedulable,
                marks: w.marks,
                not_ready_since: w.not_ready_since,
                stuck: w.stuck,
                moved_at_ms: w.moved_at_ms,
                unpublished: Vec::new(),
            };
            (key, w)
        })
        .collect()
}

impl Store {
    /// The stored stability state (the empty state when none was written yet). A value that
    /// does not decode is an error, never a silent reset: evictions in progress depend on it.
    pub fn stability(&self) -> Result<StabilityState, StoreError> {
        match self.inner.stability.get(STATE_KEY).map_err(|e| self.err(e))? {
            Some(v) => decode(&v),
            None => Ok(StabilityState::default()),
        }
    }

    /// Replaces the stored stability state (durable with the next [`Store::flush`]).
    pub fn put_stability(&self, state: &StabilityState) -> Result<(), StoreError> {
        self.writable("stability state")?;
        self.note_old(&self.inner.stability, [STATE_KEY])?;
        self.inner.stability.insert(STATE_KEY, encode(state)?).map_err(|e| self.err(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::types::TaintEffect;
    use crate::schedule::stability::Condition;

    /// A state written before the taints (schema 1) reads as the same state without them.
    #[test]
    fn a_schema_1_state_reads_without_taints() {
        #[derive(serde::Serialize)]
        struct V1<'a> {
            clusters: &'a BTreeMap<String, ClusterTimeline>,
            workloads: &'a BTreeMap<ObjectKey, WorkloadStability>,
            recent_removals: &'a [u64],
            storm: &'a Option<Storm>,
        }
        let mut state = StabilityState { recent_removals: vec![7], ..StabilityState::default() };
        let payload = bincode::serde::encode_to_vec(
            V1 {
                clusters: &state.clusters,
                workloads: &state.workloads,
                recent_removals: &state.recent_removals,
                storm: &state.storm,
            },
            super::super::codec::bincode_config(),
        )
        .expect("encode");
        let mut bytes = vec![super::super::codec::MAGIC, Codec::Bincode as u8, 0, 1];
        bytes.extend_from_slice(&payload);
        assert_eq!(decode::<StabilityState>(&bytes).expect("decode"), state);
        state.taints.insert(
            "m1".into(),
            vec![AddedTaint {
                key: "k".into(),
                value: None,
                effect: TaintEffect::NoExecute,
                added_at_ms: 3,
                policy: "p".into(),
            }],
        );
        assert_eq!(decode::<StabilityState>(&encode(&state).expect("encode")).expect("decode"), state);
    }

    /// A state written before tasks knew when their grace period passed (schema 2) reads as the
    /// same state, its tasks with none.
    #[test]
    fn a_schema_2_state_reads_with_tasks_not_expired() {
        #[derive(serde::Serialize)]
        struct Task<'a> {
            cluster: &'a str,
            replicas: i32,
            reason: Reason,
            since_ms: u64,
            purge: Purge,
            grace_ms: u64,
        }
        #[derive(serde::Serialize)]
        struct Workload<'a> {
            tasks: Vec<Task<'a>>,
            moved_from: BTreeMap<String, MovedFrom>,
            unschedulable: BTreeMap<String, Pending>,
            marks: Vec<CapacityMark>,
            not_ready_since: BTreeMap<String, u64>,
            stuck: BTreeSet<String>,
            moved_at_ms: u64,
        }
        #[derive(serde::Serialize)]
        struct V2<'a> {
            clusters: BTreeMap<String, ClusterTimeline>,
            workloads: BTreeMap<ObjectKey, Workload<'a>>,
            recent_removals: Vec<u64>,
            storm: Option<Storm>,
            taints: BTreeMap<String, Vec<AddedTaint>>,
            rebalances: BTreeMap<String, Rebalance>,
        }
        let key = ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let task = Task {
            cluster: "m1",
            replicas: 2,
            reason: Reason::ClusterUnreachable,
            since_ms: 9,
            purge: Purge::Gracefully,
            grace_ms: 600_000,
        };
        let w = Workload {
            tasks: vec![task],
            moved_from: BTreeMap::new(),
            unschedulable: BTreeMap::new(),
            marks: Vec::new(),
            not_ready_since: BTreeMap::new(),
            stuck: BTreeSet::new(),
            moved_at_ms: 9,
        };
        let v2 = V2 {
            clusters: BTreeMap::new(),
            workloads: BTreeMap::from([(key.clone(), w)]),
            recent_removals: vec![9],
            storm: None,
            taints: BTreeMap::new(),
            rebalances: BTreeMap::new(),
        };
        let payload = bincode::serde::encode_to_vec(v2, super::super::codec::bincode_config()).expect("encode");
        let mut bytes = vec![super::super::codec::MAGIC, Codec::Bincode as u8, 0, 2];
        bytes.extend_from_slice(&payload);
        let state = decode::<StabilityState>(&bytes).expect("decode");
        let task = &state.workloads[&key].tasks[0];
        assert_eq!((task.cluster.as_str(), task.since_ms, task.grace_expired_ms), ("m1", 9, None));
        assert_eq!(state.recent_removals, [9]);
        assert_eq!(decode::<StabilityState>(&encode(&state).expect("encode")).expect("decode"), state);
    }

    /// A state written before workloads kept the actions the guard held (schema 3) reads as the
    /// same state with none; one with a held action round-trips.
    #[test]
    fn a_schema_3_state_reads_without_held_actions() {
        #[derive(serde::Serialize)]
        struct Workload {
            tasks: Vec<EvictionTask>,
            moved_from: BTreeMap<String, MovedFrom>,
            unschedulable: BTreeMap<String, Pending>,
            marks: Vec<CapacityMark>,
            not_ready_since: BTreeMap<String, u64>,
            stuck: BTreeSet<String>,
            moved_at_ms: u64,
        }
        #[derive(serde::Serialize)]
        struct V3 {
            clusters: BTreeMap<String, ClusterTimeline>,
            workloads: BTreeMap<ObjectKey, Workload>,
            recent_removals: Vec<u64>,
            storm: Option<Storm>,
            taints: BTreeMap<String, Vec<AddedTaint>>,
            rebalances: BTreeMap<String, Rebalance>,
        }
        let key = ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let task = EvictionTask {
            cluster: "m1".into(),
            replicas: 2,
            reason: Reason::ClusterUnreachable,
            since_ms: 9,
            purge: Purge::Directly,
            grace_ms: 600_000,
            grace_expired_ms: None,
        };
        let w = Workload {
            tasks: vec![task.clone()],
            moved_from: BTreeMap::new(),
            unschedulable: BTreeMap::new(),
            marks: Vec::new(),
            not_ready_since: BTreeMap::new(),
            stuck: BTreeSet::new(),
            moved_at_ms: 9,
        };
        let v3 = V3 {
            clusters: BTreeMap::new(),
            workloads: BTreeMap::from([(key.clone(), w)]),
            recent_removals: vec![9],
            storm: None,
            taints: BTreeMap::new(),
            rebalances: BTreeMap::new(),
        };
        let payload = bincode::serde::encode_to_vec(v3, super::super::codec::bincode_config()).expect("encode");
        let mut bytes = vec![super::super::codec::MAGIC, Codec::Bincode as u8, 0, 3];
        bytes.extend_from_slice(&payload);
        let mut state = decode::<StabilityState>(&bytes).expect("decode");
        assert_eq!(state.workloads[&key].tasks, [task]);
        assert!(state.workloads[&key].unpublished.is_empty());
        let held = crate::schedule::stability::Action {
            workload: Some(key.clone()),
            cluster: "m1".into(),
            kind: crate::schedule::stability::ActionKind::Evict {
                replicas: 2,
                reason: Reason::ClusterUnreachable,
                purge: Purge::Directly,
                grace_ms: 600_000,
            },
            cause: crate::schedule::stability::Cause {
                condition: "Unreachable".into(),
                since_ms: 9,
                for_ms: 300_000,
                rule: "toleration 5m".into(),
            },
        };
        state.workloads.get_mut(&key).expect("web").unpublished.push(held);
        assert_eq!(decode::<StabilityState>(&encode(&state).expect("encode")).expect("decode"), state);
    }

    #[test]
    fn stability_state_round_trips_and_survives_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut state = StabilityState::default();
        state.clusters.insert(
            "m1".into(),
            ClusterTimeline {
                condition: Condition::Unreachable,
                reason: "connection refused".into(),
                unhealthy_since_ms: Some(5),
                healthy_since_ms: None,
                live: true,
            },
        );
        state.recent_removals = vec![1, 2];
        {
            let store = Store::open(dir.path()).expect("open");
            assert_eq!(store.stability().expect("empty"), StabilityState::default());
            store.put_stability(&state).expect("put");
            store.flush().expect("flush");
        }
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(store.stability().expect("read"), state);
    }
}
