//! What a replay needs beyond the history record (`fedsched replay`): per pass that recorded
//! decisions, a [`ReplayPass`] blob (the time the pass used, the repository's files as blobs,
//! the placements the pass started from, each member's freshness), and per history record a
//! [`ReplayRef`] in the `replay` tree (the pass blob and the hashes of the files the decision
//! rendered). A record without a `ReplayRef` (written by an older fedsched, or a crash between
//! the two writes) is not replayable, and says so.

use serde::{Deserialize, Serialize};

use super::codec::{Versioned, decode, encode};
use super::{PlacementRecord, Store, StoreError};
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
    /// The stored placements the pass started from (previous placements, claims, the recent
    /// placements whose replicas it assumed), in store order.
    pub placements: Vec<PlacementRecord>,
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
    /// Blob hash of the pass's [`ReplayPass`].
    pub pass: u64,
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
        let tree = self.inner.db.open_tree(TREE).map_err(|e| self.err(e))?;
        let mut batch = sled::Batch::default();
        for (seq, r) in refs {
            batch.insert(&seq.to_be_bytes(), encode(r)?);
        }
        tree.apply_batch(batch).map_err(|e| self.err(e))
    }

    /// The replay reference of history record `seq`, if one was stored.
    pub fn replay_ref(&self, seq: u64) -> Result<Option<ReplayRef>, StoreError> {
        let tree = self.inner.db.open_tree(TREE).map_err(|e| self.err(e))?;
        tree.get(seq.to_be_bytes()).map_err(|e| self.err(e))?.map(|v| decode(&v)).transpose()
    }
}
