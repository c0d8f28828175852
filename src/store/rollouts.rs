//! Progressive rollouts' state ([`RolloutState`], issue 52) in its own tree, one entry per
//! workload (key: [`super::keys::workload`]), versioned like every record. The reconciler
//! reads a workload's entry before its gate is evaluated and writes it back with the pass, so
//! that a restart or a takeover continues the rollout where it was (never at stage 1, never
//! past a gate it did not pass).

use std::collections::{BTreeMap, BTreeSet};

use super::codec::{Codec, Versioned, decode, decode_payload, encode};
use super::{Store, StoreError, keys};
use crate::policy::ObjectKey;
use crate::schedule::rollout::{GateFigures, MemberObserved, Phase, Queued, RolloutState, Transition};

impl Versioned for RolloutState {
    const WHAT: &'static str = "rollout state";
    /// 2: the members' object generations at the gated stage's release
    /// ([`RolloutState::generations`]); 3: their GitOps agents' revisions then
    /// ([`RolloutState::agent_revisions`]) and what the gated stage's members showed
    /// ([`RolloutState::observed`]); 4: the version that waits ([`RolloutState::queued`]) and
    /// the gated stage's clusters at its release ([`RolloutState::released_to`]); 5: a stage
    /// release held until its members' objects are read ([`RolloutState::held`]).
    const SCHEMA: u16 = 5;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        match schema {
            1 => Some(decode_payload::<RolloutStateV1>(Self::WHAT, codec, payload).map(RolloutStateV1::upgrade)),
            2 => Some(decode_payload::<RolloutStateV2>(Self::WHAT, codec, payload).map(RolloutStateV2::upgrade)),
            3 => Some(decode_payload::<RolloutStateV3>(Self::WHAT, codec, payload).map(RolloutStateV3::upgrade)),
            4 => Some(decode_payload::<RolloutStateV4>(Self::WHAT, codec, payload).map(RolloutStateV4::upgrade)),
            _ => None,
        }
    }
}

/// Schema 4 of [`RolloutState`] (before the held release): no release is held.
#[derive(serde::Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
struct RolloutStateV4 {
    v3: RolloutStateV3,
    queued: Option<Queued>,
    released_to: Option<BTreeSet<String>>,
}

impl RolloutStateV4 {
    fn upgrade(self) -> RolloutState {
        RolloutState { queued: self.queued, released_to: self.released_to, ..self.v3.upgrade() }
    }
}

/// Schema 3 of [`RolloutState`] (before the version that waits and the gated stage's clusters
/// at its release): nothing waits, and the stage gated then counts whole (its clusters are
/// fixed at the next [`crate::schedule::rollout::step`]).
#[derive(serde::Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
struct RolloutStateV3 {
    v2: RolloutStateV2,
    agent_revisions: BTreeMap<String, String>,
    observed: BTreeMap<String, MemberObserved>,
}

impl RolloutStateV3 {
    fn upgrade(self) -> RolloutState {
        RolloutState { agent_revisions: self.agent_revisions, observed: self.observed, ..self.v2.upgrade() }
    }
}

/// Schema 2 of [`RolloutState`] (before the agents' revisions): a stage released then is
/// judged without its agents' sync state until the next release.
#[derive(serde::Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
struct RolloutStateV2 {
    v1: RolloutStateV1,
    generations: BTreeMap<String, i64>,
}

impl RolloutStateV2 {
    fn upgrade(self) -> RolloutState {
        RolloutState { generations: self.generations, ..self.v1.upgrade() }
    }
}

/// Schema 1 of [`RolloutState`] (before its generations): a stage released then is judged
/// without them, from its members' object status and pods.
#[derive(serde::Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
struct RolloutStateV1 {
    policy: String,
    stable_hash: u64,
    stable: String,
    target_hash: u64,
    target: String,
    phase: Phase,
    released: usize,
    released_at_ms: u64,
    healthy_since_ms: Option<u64>,
    failed: BTreeMap<String, String>,
    approvals_at_start: BTreeSet<String>,
    transitions: Vec<Transition>,
    stages: Vec<(String, Vec<String>)>,
    gate: GateFigures,
}

impl RolloutStateV1 {
    fn upgrade(self) -> RolloutState {
        let RolloutStateV1 {
            policy,
            stable_hash,
            stable,
            target_hash,
            target,
            phase,
            released,
            released_at_ms,
            healthy_since_ms,
            failed,
            approvals_at_start,
            transitions,
            stages,
            gate,
        } = self;
        RolloutState {
            policy,
            stable_hash,
            stable,
            target_hash,
            target,
            phase,
            released,
            released_at_ms,
            healthy_since_ms,
            failed,
            approvals_at_start,
            transitions,
            stages,
            gate,
            generations: BTreeMap::new(),
            agent_revisions: BTreeMap::new(),
            observed: BTreeMap::new(),
            queued: None,
            released_to: None,
            held: None,
        }
    }
}

/// The rollouts' states a pass started from, for its replay ([`super::ReplayPass::rollouts`]):
/// each workload's store key and the blob hash of its state (each state a blob of its own, so
/// a pass after a change of one state stores that state and this list, not every state again).
#[derive(serde::Serialize, serde::Deserialize)]
struct RolloutList {
    states: Vec<(String, u64)>,
}

impl Versioned for RolloutList {
    const WHAT: &'static str = "rollout states of a pass";
    const SCHEMA: u16 = 1;
}

impl Store {
    /// Stores a rollout state as a blob (for a pass's replay); returns its hash.
    pub fn put_rollout_blob(&self, state: &RolloutState) -> Result<u64, StoreError> {
        self.put_blob(&encode(state)?)
    }

    /// Stores the list of a pass's rollout states (store key, [`Store::put_rollout_blob`]'s
    /// hash); returns its blob hash.
    pub fn put_rollout_list(&self, states: &[(String, u64)]) -> Result<u64, StoreError> {
        self.put_blob(&encode(&RolloutList { states: states.to_vec() })?)
    }

    /// The rollout states a [`Store::put_rollout_list`] blob lists, by store key; `None` when
    /// the list or one of its states is not in the store.
    pub fn rollout_list(&self, hash: u64) -> Result<Option<Vec<(String, RolloutState)>>, StoreError> {
        let Some(bytes) = self.blob(hash)? else { return Ok(None) };
        let list: RolloutList = decode(&bytes)?;
        let mut out = Vec::with_capacity(list.states.len());
        for (sk, h) in list.states {
            let Some(bytes) = self.blob(h)? else { return Ok(None) };
            out.push((sk, decode(&bytes)?));
        }
        Ok(Some(out))
    }

    /// Replaces the rollout state stored under a workload's store key (as [`Store::rollouts`]
    /// gives it): a replay's scratch store seeded with a pass's states.
    pub fn put_rollout_keyed(&self, store_key: &str, state: &RolloutState) -> Result<(), StoreError> {
        self.writable("rollout state")?;
        self.note_old(&self.inner.rollouts, [store_key.as_bytes()])?;
        self.inner.rollouts.insert(store_key.as_bytes(), encode(state)?).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The rollout state of a workload (`None`: never under a RolloutPolicy, or forgotten).
    pub fn rollout(&self, key: &ObjectKey) -> Result<Option<RolloutState>, StoreError> {
        match self.inner.rollouts.get(keys::workload(key)?).map_err(|e| self.err(e))? {
            Some(v) => Ok(Some(decode(&v)?)),
            None => Ok(None),
        }
    }

    /// Every workload's rollout state, by store key.
    pub fn rollouts(&self) -> Result<Vec<(String, RolloutState)>, StoreError> {
        let mut out = Vec::new();
        for kv in self.inner.rollouts.iter() {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            out.push((String::from_utf8_lossy(&k).into_owned(), decode(&v)?));
        }
        Ok(out)
    }

    /// Replaces a workload's rollout state (durable with the next [`Store::flush`]).
    pub fn put_rollout(&self, key: &ObjectKey, state: &RolloutState) -> Result<(), StoreError> {
        self.writable("rollout state")?;
        let key = keys::workload(key)?;
        self.note_old(&self.inner.rollouts, [&key])?;
        self.inner.rollouts.insert(key, encode(state)?).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Forgets a workload's rollout (its template left every RolloutPolicy), by its store key
    /// as [`Store::rollouts`] gives it.
    pub fn remove_rollout(&self, store_key: &str) -> Result<(), StoreError> {
        self.writable("rollout state")?;
        self.note_old(&self.inner.rollouts, [store_key.as_bytes()])?;
        self.inner.rollouts.remove(store_key.as_bytes()).map_err(|e| self.err(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_state_survives_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let mut state = RolloutState::settled("shop/web".into(), 7, "{\"kind\":\"Deployment\"}".into());
        state.released = 2;
        {
            let store = Store::open(dir.path()).expect("open");
            assert_eq!(store.rollout(&key).expect("read"), None);
            store.put_rollout(&key, &state).expect("put");
            store.flush().expect("flush");
        }
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(store.rollout(&key).expect("read"), Some(state.clone()));
        assert_eq!(store.rollouts().expect("all").len(), 1);
        store.remove_rollout(&key.store_key()).expect("remove");
        assert_eq!(store.rollout(&key).expect("read"), None);
    }

    /// A state written by schema 1 (before the generations) reads back with none.
    #[test]
    fn a_schema_1_rollout_state_reads_back_without_generations() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let key = ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let mut state = RolloutState::settled("shop/web".into(), 7, "{}".into());
        state.released = 2;
        state.failed.insert("m1".into(), "CrashLoopBackOff".into());
        let s = state.clone();
        let v1 = RolloutStateV1 {
            policy: s.policy,
            stable_hash: s.stable_hash,
            stable: s.stable,
            target_hash: s.target_hash,
            target: s.target,
            phase: s.phase,
            released: s.released,
            released_at_ms: s.released_at_ms,
            healthy_since_ms: s.healthy_since_ms,
            failed: s.failed,
            approvals_at_start: s.approvals_at_start,
            transitions: s.transitions,
            stages: s.stages,
            gate: s.gate,
        };
        let v1_again = |v: &RolloutStateV1| -> RolloutStateV1 {
            bincode::serde::decode_from_slice(
                &bincode::serde::encode_to_vec(v, super::super::codec::bincode_config()).expect("encode"),
                super::super::codec::bincode_config(),
            )
            .expect("decode")
            .0
        };
        let v1_copy = v1_again(&v1);
        let mut bytes = vec![0xF5, 1, 0, 1];
        bytes.extend(bincode::serde::encode_to_vec(&v1, super::super::codec::bincode_config()).expect("encode"));
        store.inner.rollouts.insert(keys::workload(&key).expect("key"), bytes).expect("insert");
        assert_eq!(store.rollout(&key).expect("read"), Some(state.clone()));
        // Schema 2 (with the generations, before the agents' revisions).
        let mut with = state.clone();
        with.generations.insert("m1".into(), 3);
        let v1_copy_again = v1_again(&v1_copy);
        let v1_copy_third = v1_again(&v1_copy);
        let v2 = RolloutStateV2 { v1: v1_copy, generations: with.generations.clone() };
        let mut bytes = vec![0xF5, 1, 0, 2];
        bytes.extend(bincode::serde::encode_to_vec(&v2, super::super::codec::bincode_config()).expect("encode"));
        store.inner.rollouts.insert(keys::workload(&key).expect("key"), bytes).expect("insert");
        assert_eq!(store.rollout(&key).expect("read"), Some(with.clone()));
        // Schema 3 (with the agents' revisions and what the members showed, before the version
        // that waits and the stage's clusters at its release).
        with.agent_revisions.insert("m1".into(), "main@sha1:abc".into());
        with.observed.insert("m1".into(), MemberObserved { state: "Healthy".into(), agent: None });
        let v2 = RolloutStateV2 { v1: v1_copy_again, generations: with.generations.clone() };
        let v3 = RolloutStateV3 { v2, agent_revisions: with.agent_revisions.clone(), observed: with.observed.clone() };
        let mut bytes = vec![0xF5, 1, 0, 3];
        bytes.extend(bincode::serde::encode_to_vec(&v3, super::super::codec::bincode_config()).expect("encode"));
        store.inner.rollouts.insert(keys::workload(&key).expect("key"), bytes).expect("insert");
        assert_eq!(store.rollout(&key).expect("read"), Some(with.clone()));
        // Schema 4 (with the version that waits and the stage's clusters at its release, before
        // the held release): no release held.
        with.released_to = Some(["m1".to_string()].into());
        let v2 = RolloutStateV2 { v1: v1_copy_third, generations: with.generations.clone() };
        let v3 = RolloutStateV3 { v2, agent_revisions: with.agent_revisions.clone(), observed: with.observed.clone() };
        let v4 = RolloutStateV4 { v3, queued: None, released_to: with.released_to.clone() };
        let mut bytes = vec![0xF5, 1, 0, 4];
        bytes.extend(bincode::serde::encode_to_vec(&v4, super::super::codec::bincode_config()).expect("encode"));
        store.inner.rollouts.insert(keys::workload(&key).expect("key"), bytes).expect("insert");
        assert_eq!(store.rollout(&key).expect("read"), Some(with));
    }
}
