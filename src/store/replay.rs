//! What a replay needs beyond the history record (`fedsched replay`): per pass that recorded
//! decisions, a [`ReplayPass`] blob (the time the pass used, the repository's files as blobs,
//! the last history sequence number before it, each member's freshness), and per history
//! record a [`ReplayRef`] in the `replay` tree (the pass blob, the placement the record made
//! beyond the record itself, the hashes of the files it rendered). The placements a pass
//! started from are the records before it with their references: not stored again per pass.
//! A record without a `ReplayRef` (written by an older fedsched, or a crash between the two
//! writes) is not replayable, and says so.

use serde::{Deserialize, Serialize};

use super::codec::{Versioned, decode, encode};
use super::{Store, StoreError, counter, keys};
use crate::model::Freshness;

/// The tree of [`ReplayRef`]s, keyed by history sequence number (big-endian).
const TREE: &str = "replay";

/// The inputs of one pass that the history records do not carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayPass {
    /// The clock the pass read (Unix ms): freshness, confidence, assumed replicas, stability.
    pub now_ms: u64,
    /// The repository's files in walk order: path relative to the repository and the blob
    /// hash of its bytes.
    pub sources: Vec<(String, u64)>,
    /// The last history sequence number before the pass: the placements it started from are
    /// each workload's last record up to it (with its [`ReplayRef`]), removals excepted.
    pub after_seq: u64,
    /// Each member's freshness as the pass's inputs had it (before its age at `now_ms`).
    pub freshness: Vec<(String, Option<Freshness>)>,
}

impl Versioned for ReplayPass {
    const WHAT: &'static str = "replay pass";
    const SCHEMA: u16 = 1;
}

/// Where a history record's replay inputs are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayRef {
    /// Blob hash of the pass's [`ReplayPass`]; 0: the pass stored none (it recorded notes only).
    pub pass: u64,
    /// The placement's targets (an unschedulable decision keeps the previous ones).
    pub targets: std::collections::BTreeMap<String, Option<i32>>,
    /// The placement's `clusterAffinities` term.
    pub affinity_name: Option<String>,
    /// The files the decision rendered: (cluster, path, FNV-1a 64 of the bytes).
    pub files: Vec<(String, String, u64)>,
}

impl Versioned for ReplayRef {
    const WHAT: &'static str = "replay reference";
    const SCHEMA: u16 = 1;
}

impl Store {
    /// Stores a pass's replay inputs as a blob; returns its hash.
    pub fn put_replay_pass(&self, pass: &ReplayPass) -> Result<u64, StoreError> {
        self.put_blob(&encode(pass)?)
    }

    /// The replay inputs stored under `hash`.
    pub fn replay_pass(&self, hash: u64) -> Result<Option<ReplayPass>, StoreError> {
        self.blob(hash)?.map(|b| decode(&b)).transpose()
    }

    /// Records where the replay inputs of these history records are.
    pub fn put_replay_refs(&self, refs: &[(u64, ReplayRef)]) -> Result<(), StoreError> {
        self.writable("replay references")?;
        let tree = self.inner.db.open_tree(TREE).map_err(|e| self.err(e))?;
        let mut batch = sled::Batch::default();
        for (seq, r) in refs {
            batch.insert(&seq.to_be_bytes(), encode(r)?);
        }
        tree.apply_batch(batch).map_err(|e| self.err(e))
    }

    /// The last history sequence number handed out (0: none yet).
    pub fn last_history_seq(&self) -> Result<u64, StoreError> {
        counter("meta", self.inner.meta.get(keys::HISTORY_SEQ).map_err(|e| self.err(e))?.as_deref())
    }

    /// The replay reference of history record `seq`, if one was stored.
    pub fn replay_ref(&self, seq: u64) -> Result<Option<ReplayRef>, StoreError> {
        let tree = self.inner.db.open_tree(TREE).map_err(|e| self.err(e))?;
        tree.get(seq.to_be_bytes()).map_err(|e| self.err(e))?.map(|v| decode(&v)).transpose()
    }
}
