//! What a replay needs beyond the history record (`fedsched replay`): per pass that recorded
//! decisions, a [`ReplayPass`] blob (the time the pass used, the repository's files as blobs,
//! the last history sequence number before it, each member's freshness), and per history
//! record a [`ReplayRef`] in the `replay` tree (the pass blob, the placement the record made
//! beyond the record itself, the hashes of the files it rendered). The placements a pass
//! started from are the records before it with their references: not stored again per pass.
//! A record without a `ReplayRef` (written by an older fedsched, or a crash between the two
//! writes) is not replayable, and says so.
//!
//! The repository's file list is stored in runs ([`SourceRun`], each a blob): a run ends after
//! a file whose content hash is a multiple of [`RUN_CUT`] (or at [`RUN_MAX`] files), so the
//! runs are cut by content, and an edit, an added or a removed file changes the run it is in,
//! not the others. A pass stores its runs' hashes ([`StoredPass`], schema 2), and a pass that
//! changed one file of 10,000 stores one run of ~64 entries, not the whole list again. A pass
//! of schema 1 (the whole list in the pass) is still read.

use serde::{Deserialize, Serialize};

use super::codec::{Codec, Versioned, decode, decode_payload, encode, open_envelope};
use super::{Store, StoreError, counter, keys};
use crate::model::Freshness;

/// A run of the file list ends after a file whose content hash is a multiple of this: runs of
/// ~64 files on average.
pub const RUN_CUT: u64 = 64;

/// A run of the file list holds at most this many files.
pub const RUN_MAX: usize = 1024;

/// Whether a run of the file list ends after a file with content hash `hash`, the run holding
/// `len` files with it.
pub fn run_ends_after(hash: u64, len: usize) -> bool {
    hash.is_multiple_of(RUN_CUT) || len >= RUN_MAX
}

/// The runs of a file list (path, content hash) as [`run_ends_after`] cuts them, as index
/// ranges.
pub fn source_runs<T>(sources: &[T], hash_of: impl Fn(&T) -> u64) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    for (i, s) in sources.iter().enumerate() {
        if run_ends_after(hash_of(s), i + 1 - start) {
            runs.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < sources.len() {
        runs.push(start..sources.len());
    }
    runs
}

/// One run of a pass's file list: path relative to the repository, blob hash of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRun {
    pub sources: Vec<(String, u64)>,
}

impl Versioned for SourceRun {
    const WHAT: &'static str = "replay source run";
    const SCHEMA: u16 = 1;
}

/// A [`ReplayPass`] as stored (schema 3): its file list as the blob hashes of its runs, in
/// order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredPass {
    pub now_ms: u64,
    pub runs: Vec<u64>,
    pub after_seq: u64,
    pub freshness: Vec<(String, Option<Freshness>)>,
    /// [`ReplayPass::rollouts`].
    pub rollouts: Option<u64>,
}

impl Versioned for StoredPass {
    const WHAT: &'static str = "replay pass";
    /// 2: the file list in runs; 3: the rollouts' states the pass started from
    /// ([`ReplayPass::rollouts`]).
    const SCHEMA: u16 = 3;

    fn decode_older(schema: u16, codec: Codec, payload: &[u8]) -> Option<Result<Self, StoreError>> {
        (schema == 2).then(|| {
            decode_payload::<StoredPassV2>(Self::WHAT, codec, payload).map(|p| StoredPass {
                now_ms: p.now_ms,
                runs: p.runs,
                after_seq: p.after_seq,
                freshness: p.freshness,
                rollouts: None,
            })
        })
    }
}

/// Schema 2 of [`StoredPass`] (before the rollouts' states): its replay has none.
#[derive(Serialize, Deserialize)]
struct StoredPassV2 {
    now_ms: u64,
    runs: Vec<u64>,
    after_seq: u64,
    freshness: Vec<(String, Option<Freshness>)>,
}

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
    /// Blob hash of the rollouts' states the pass started from
    /// ([`Store::put_rollout_list`]; 0: no rollout state); `None`: not recorded (a pass
    /// stored by an earlier fedsched).
    pub rollouts: Option<u64>,
}

/// The schema of a [`ReplayPass`] stored whole (by earlier versions).
const WHOLE_PASS_SCHEMA: u16 = 1;

/// A [`ReplayPass`] stored whole (schema 1).
#[derive(Serialize, Deserialize)]
struct WholePass {
    now_ms: u64,
    sources: Vec<(String, u64)>,
    after_seq: u64,
    freshness: Vec<(String, Option<Freshness>)>,
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
    /// Stores a pass's replay inputs: its file list's runs ([`source_runs`]), then the pass
    /// ([`StoredPass`]); returns the pass's blob hash.
    pub fn put_replay_pass(&self, pass: &ReplayPass) -> Result<u64, StoreError> {
        let runs = source_runs(&pass.sources, |(_, hash)| *hash)
            .into_iter()
            .map(|r| self.put_source_run(&pass.sources[r]))
            .collect::<Result<Vec<u64>, StoreError>>()?;
        let stored = StoredPass {
            now_ms: pass.now_ms,
            runs,
            after_seq: pass.after_seq,
            freshness: pass.freshness.clone(),
            rollouts: pass.rollouts,
        };
        self.put_stored_pass(&stored)
    }

    /// Stores one run of a pass's file list as a blob; returns its hash.
    pub fn put_source_run(&self, sources: &[(String, u64)]) -> Result<u64, StoreError> {
        self.put_blob(&encode(&SourceRun { sources: sources.to_vec() })?)
    }

    /// Stores a pass whose runs are stored ([`Store::put_source_run`]); returns its blob hash.
    pub fn put_stored_pass(&self, pass: &StoredPass) -> Result<u64, StoreError> {
        self.put_blob(&encode(pass)?)
    }

    /// The replay inputs stored under `hash`, with the file list joined from its runs; `None`
    /// when the pass or one of its runs is not in the store.
    pub fn replay_pass(&self, hash: u64) -> Result<Option<ReplayPass>, StoreError> {
        let Some(bytes) = self.blob(hash)? else { return Ok(None) };
        let (header, payload) = open_envelope(StoredPass::WHAT, &bytes)?;
        let stored: StoredPass = match header.schema {
            WHOLE_PASS_SCHEMA => {
                let p: WholePass = decode_payload(StoredPass::WHAT, header.codec, payload)?;
                let WholePass { now_ms, sources, after_seq, freshness } = p;
                return Ok(Some(ReplayPass { now_ms, sources, after_seq, freshness, rollouts: None }));
            }
            _ => decode(&bytes)?,
        };
        let mut sources = Vec::new();
        for run in &stored.runs {
            let Some(bytes) = self.blob(*run)? else { return Ok(None) };
            sources.extend(decode::<SourceRun>(&bytes)?.sources);
        }
        Ok(Some(ReplayPass {
            now_ms: stored.now_ms,
            sources,
            after_seq: stored.after_seq,
            freshness: stored.freshness,
            rollouts: stored.rollouts,
        }))
    }

    /// Records where the replay inputs of these history records are.
    pub fn put_replay_refs(&self, refs: &[(u64, ReplayRef)]) -> Result<(), StoreError> {
        self.writable("replay references")?;
        let tree = self.inner.db.open_tree(TREE).map_err(|e| self.err(e))?;
        self.note_old(&tree, refs.iter().map(|(seq, _)| seq.to_be_bytes()))?;
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
