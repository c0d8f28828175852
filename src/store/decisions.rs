//! Persisted decision keys: per workload, what lets a restarted reconciler reuse a decision
//! whose inputs did not change, without rendering it again (issue 8, S7). The reconciler
//! computes and compares the keys; the store only keeps them.
//!
//! An entry is valid only while the workload's placement has the `history_seq` it was
//! written with: a crash between writing a placement and its entry (or the reverse) leaves a
//! mismatch, and the entry is ignored (the workload is decided again). Every history record of
//! a placed workload is written with a new placement (so a new `history_seq`), so a valid
//! entry's [`StoredDecision::last`] is the workload's newest history record as change
//! detection reads it: a restart does not decode 10,000 history records (each with every
//! cluster's verdict) to learn their notes.

use serde::{Deserialize, Serialize};

use super::codec::{Codec, Versioned, decode_payload, encode};
use super::{Store, StoreError, keys};
use crate::model::ReplicaRequirements;
use crate::policy::ObjectKey;
use crate::util::stat::FileStat;

/// One workload's decision as a restart needs it: its cache key and what the decision
/// produced besides the placement (the rendered files by content hash, not their bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredDecision {
    pub workload: ObjectKey,
    /// `history_seq` of the placement this entry was written with.
    pub history_seq: u64,
    /// The key of the decision's static inputs.
    pub key: u64,
    /// Positions of the clusters that passed its filters, and their state.
    pub clusters: Vec<u32>,
    pub state: u64,
    /// Rendered files: cluster, path, FNV-1a 64 of the content.
    pub files: Vec<(String, String, u64)>,
    /// Files kept from the previous decision: cluster, path.
    pub keep: Vec<(String, String)>,
    /// Problems: cluster (None: unschedulable), reason.
    pub problems: Vec<(Option<String>, String)>,
    pub scheduled: bool,
    pub requirements: Option<ReplicaRequirements>,
    /// The workload's newest history record when the entry was written: `Some(None)` when it
    /// had none, `None` when the entry does not say (schema 1: read from the history).
    pub last: Option<Option<LastHistory>>,
    /// Per file of `files` (same order, or empty: none known): the file's stat when it was
    /// last read and found to hold its hash, if that proves its bytes ([`FileStat::settled_at`]):
    /// a full check after a restart stats such a file instead of reading it.
    pub stats: Vec<Option<FileStat>>,
    /// Whether the decision's outcome read its feasible clusters' capacity (when not, a
    /// restart reuses it whatever their state; schemas 1 and 2: taken to have read it).
    pub reads_capacity: bool,
}

/// A workload's newest history record, as far as change detection reads it: the hashes of the
/// template and policy it was decided with, and its notes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastHistory {
    pub template_hash: u64,
    pub policy_hash: u64,
    pub notes: Vec<String>,
}

impl Versioned for StoredDecision {
    const WHAT: &'static str = "stored decision";
    const SCHEMA: u16 = 3;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        match schema {
            1 => Some(decode_payload::<StoredDecisionV1>(Self::WHAT, codec, payload).map(StoredDecisionV1::upgrade)),
            2 => Some(decode_payload::<StoredDecisionV2>(Self::WHAT, codec, payload).map(StoredDecisionV2::upgrade)),
            _ => None,
        }
    }
}

/// Schema 1 of [`StoredDecision`] (before [`StoredDecision::last`]), upgraded in memory: the
/// last history record is read from the history when needed.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct StoredDecisionV1 {
    workload: ObjectKey,
    history_seq: u64,
    key: u64,
    clusters: Vec<u32>,
    state: u64,
    files: Vec<(String, String, u64)>,
    keep: Vec<(String, String)>,
    problems: Vec<(Option<String>, String)>,
    scheduled: bool,
    requirements: Option<ReplicaRequirements>,
}

impl StoredDecisionV1 {
    fn upgrade(self) -> StoredDecision {
        let StoredDecisionV1 {
            workload,
            history_seq,
            key,
            clusters,
            state,
            files,
            keep,
            problems,
            scheduled,
            requirements,
        } = self;
        StoredDecision {
            workload,
            history_seq,
            key,
            clusters,
            state,
            files,
            keep,
            problems,
            scheduled,
            requirements,
            last: None,
            stats: Vec::new(),
            reads_capacity: true,
        }
    }
}

/// Schema 2 of [`StoredDecision`] (before [`StoredDecision::stats`] and
/// [`StoredDecision::reads_capacity`]), upgraded in memory: no file stat known (a full check
/// reads the files, once), the capacity taken to have been read. Schema 1's fields then `last`
/// (bincode writes a nested struct's fields in place, with nothing around them).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct StoredDecisionV2 {
    v1: StoredDecisionV1,
    last: Option<Option<LastHistory>>,
}

impl StoredDecisionV2 {
    fn upgrade(self) -> StoredDecision {
        StoredDecision { last: self.last, ..self.v1.upgrade() }
    }
}

impl Store {
    /// Every stored decision (entries that do not decode are skipped: they only cost a
    /// re-decision).
    pub fn stored_decisions(&self) -> Result<Vec<StoredDecision>, StoreError> {
        let mut values = Vec::new();
        for kv in self.inner.decisions.iter() {
            values.push(kv.map_err(|e| self.err(e))?.1);
        }
        Ok(super::decode_all::<StoredDecision>(&values).into_iter().filter_map(Result::ok).collect())
    }

    /// Writes (replaces) stored decisions, in one atomic batch.
    pub fn put_stored_decisions(&self, decisions: &[StoredDecision]) -> Result<(), StoreError> {
        self.writable("stored decisions")?;
        let mut batch = sled::Batch::default();
        let mut written = Vec::with_capacity(decisions.len());
        for d in decisions {
            let key = keys::workload(&d.workload)?;
            batch.insert(key.as_slice(), encode(d)?);
            written.push(key);
        }
        self.note_old(&self.inner.decisions, &written)?;
        self.inner.decisions.apply_batch(batch).map_err(|e| self.err(e))
    }

    /// Forgets the stored decisions of workloads.
    pub fn remove_stored_decisions(&self, workloads: &[ObjectKey]) -> Result<(), StoreError> {
        self.writable("stored decisions")?;
        let mut batch = sled::Batch::default();
        let mut removed = Vec::with_capacity(workloads.len());
        for w in workloads {
            let key = keys::workload(w)?;
            batch.remove(key.as_slice());
            removed.push(key);
        }
        self.note_old(&self.inner.decisions, &removed)?;
        self.inner.decisions.apply_batch(batch).map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_decisions_round_trip_and_removal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let workload = ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("default".into()),
            name: "web".into(),
        };
        let d = StoredDecision {
            workload: workload.clone(),
            history_seq: 3,
            key: 7,
            clusters: vec![0, 2],
            state: 9,
            files: vec![("m1".into(), "default/web.yaml".into(), 11)],
            keep: vec![],
            problems: vec![(None, "why".into())],
            scheduled: true,
            requirements: None,
            last: Some(Some(LastHistory { template_hash: 1, policy_hash: 2, notes: vec!["held".into()] })),
            stats: vec![Some(FileStat { len: 3, mtime_ns: 4, ctime_ns: 5, ino: 6 })],
            reads_capacity: false,
        };
        store.put_stored_decisions(std::slice::from_ref(&d)).expect("put");
        assert_eq!(store.stored_decisions().expect("list"), vec![d.clone()]);
        store.remove_stored_decisions(std::slice::from_ref(&workload)).expect("remove");
        assert!(store.stored_decisions().expect("list").is_empty());

        // An entry an older version wrote (schema 1) still restores its decision; its last
        // history record is not known (read from the history when needed).
        let v1 = StoredDecisionV1 {
            workload: workload.clone(),
            history_seq: d.history_seq,
            key: d.key,
            clusters: d.clusters.clone(),
            state: d.state,
            files: d.files.clone(),
            keep: d.keep.clone(),
            problems: d.problems.clone(),
            scheduled: d.scheduled,
            requirements: None,
        };
        let older = |schema: u8, payload: Vec<u8>| {
            let mut bytes = vec![0xF5, 1, 0, schema];
            bytes.extend_from_slice(&payload);
            store.inner.decisions.insert(keys::workload(&workload).expect("key"), bytes).expect("insert");
            store.stored_decisions().expect("list")
        };
        let config = super::super::codec::bincode_config();
        let last = d.last.clone();
        let v2 = StoredDecisionV2 { v1, last: last.clone() };
        let payload = bincode::serde::encode_to_vec(&v2.v1, config).expect("encode");
        let upgraded = StoredDecision { stats: Vec::new(), reads_capacity: true, ..d.clone() };
        assert_eq!(older(1, payload), vec![StoredDecision { last: None, ..upgraded.clone() }]);
        // Schema 2: the last history record, no file stats.
        let payload = bincode::serde::encode_to_vec(&v2, config).expect("encode");
        assert_eq!(older(2, payload), vec![StoredDecision { last, ..upgraded }]);
    }
}
