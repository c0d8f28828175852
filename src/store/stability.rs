//! The stability engine's state ([`StabilityState`]: member health timelines, graceful
//! eviction tasks, capacity marks, the rate limit window, the storm guard) in its own tree,
//! under one key, versioned like every record. The reconciler reads it before a pass and
//! writes the next one before the pass's flush; a missing entry is the empty state.

use std::collections::BTreeMap;

use super::codec::{Codec, Versioned, decode, decode_payload, encode};
use super::{Store, StoreError};
use crate::policy::ObjectKey;
use crate::schedule::stability::{ClusterTimeline, StabilityState, Storm, WorkloadStability};

/// The one key of the `stability` tree.
const STATE_KEY: &[u8] = b"state";

impl Versioned for StabilityState {
    const WHAT: &'static str = "stability state";
    /// 2: with the taints of ClusterTaintPolicies and the WorkloadRebalancers' generations.
    const SCHEMA: u16 = 2;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        (schema == 1).then(|| {
            decode_payload::<StabilityStateV1>(Self::WHAT, codec, payload).map(|v| StabilityState {
                clusters: v.clusters,
                workloads: v.workloads,
                recent_removals: v.recent_removals,
                storm: v.storm,
                taints: BTreeMap::new(),
                rebalances: BTreeMap::new(),
            })
        })
    }
}

/// Schema 1 of [`StabilityState`]: before ClusterTaintPolicy taints.
#[derive(serde::Deserialize)]
struct StabilityStateV1 {
    clusters: BTreeMap<String, ClusterTimeline>,
    workloads: BTreeMap<ObjectKey, WorkloadStability>,
    recent_removals: Vec<u64>,
    storm: Option<Storm>,
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
        self.inner.stability.insert(STATE_KEY, encode(state)?).map_err(|e| self.err(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::types::TaintEffect;
    use crate::schedule::stability::{AddedTaint, Condition};

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
