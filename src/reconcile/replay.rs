//! Replay (`fedsched replay`): what a pass stores so that its decisions can be made again
//! ([`store_pass`], [`replay_ref`]), and the pass made again from it ([`replay_pass`]).
//!
//! A pass that records decisions stores its [`ReplayPass`]: the clock it read, the
//! repository's files (as blobs, each content once), the last history record before it, each
//! member's freshness; each history record gets a [`ReplayRef`] (that pass, the placement it
//! made beyond the record, the hashes of the files it rendered), so the placements a pass
//! started from are rebuilt from the records before it ([`RecordedHistory`]). With the history record's own inputs (snapshot versions, the stability
//! state) that is every input of the pass: the repository gives the templates, policies,
//! overrides, interpreters and dependencies; the stored snapshots at those versions and the
//! placements give the member views and the assumed-replica deductions.
//!
//! A replay rebuilds those inputs, seeds a scratch store with the placements and the
//! stability state, and runs the stages of a pass ([`super::Reconciler::preview`]) with the
//! current scheduler, renderer and profiles at the recorded time. Nothing is guessed: an input
//! that is not in the store makes the replay fail with [`ReplayError::NotRecorded`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::policy::{LoadError, ObjectKey};
use crate::schedule::stability::StabilityState;
use crate::store::{HistoryRecord, PlacementRecord, ReplayPass, ReplayRef, Store, StoreError};

use super::{Inputs, PassPreview, ReconcileError, Reconciler, Settings, cache};

/// Why a pass cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// An input of the decision is not in the store (an older store, or a record written
    /// without it): never replayed from guesses.
    #[error("not replayable: {0} was not recorded")]
    NotRecorded(String),
    /// The stored repository no longer loads with this fedsched.
    #[error("the recorded repository does not load: {}", .0.first().map(ToString::to_string).unwrap_or_default())]
    Invalid(Vec<LoadError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    #[error("scratch directory: {0}")]
    Io(#[from] std::io::Error),
}

/// Stores the replay inputs of a pass that records decisions; returns the blob hash (0 when
/// the inputs do not carry the repository's files: a load without a parse cache).
pub(super) fn store_pass(
    store: &Store,
    cache: &mut cache::PassCache,
    inputs: &Inputs,
    now_ms: u64,
) -> Result<u64, StoreError> {
    if inputs.sources.is_empty() {
        return Ok(0);
    }
    let mut sources = Vec::with_capacity(inputs.sources.len());
    for (path, hash, text) in inputs.sources.iter() {
        if !cache.blobs.contains(hash) {
            store.put_blob(text.as_bytes())?;
            cache.blobs.insert(*hash);
        }
        sources.push((path.to_string_lossy().into_owned(), *hash));
    }
    let after_seq = store.last_history_seq()?;
    let freshness = inputs.snapshots.iter().map(|s| (s.name.clone(), s.freshness)).collect();
    store.put_replay_pass(&ReplayPass { now_ms, sources, after_seq, freshness })
}

/// The replay reference of a workload's decision in the cache.
pub(super) fn replay_ref(
    cache: &cache::PassCache,
    key: &ObjectKey,
    pass: u64,
    placement: &PlacementRecord,
) -> ReplayRef {
    let files = cache
        .decisions
        .get(key)
        .map(|c| {
            c.decided
                .files
                .iter()
                .zip(&c.decided.file_hashes)
                .map(|((cluster, (path, _)), hash)| (cluster.clone(), path.clone(), *hash))
                .collect()
        })
        .unwrap_or_default();
    ReplayRef { pass, targets: placement.targets.clone(), affinity_name: placement.affinity_name.clone(), files }
}

/// Every workload's recorded history, for the placements a recorded pass started from.
pub struct RecordedHistory {
    records: Vec<Vec<HistoryRecord>>,
}

impl RecordedHistory {
    /// Reads every workload's history.
    pub fn read(store: &Store) -> Result<Self, StoreError> {
        let mut records = Vec::new();
        for key in store.workloads_with_history()? {
            records.push(store.history(&key)?);
        }
        Ok(RecordedHistory { records })
    }

    /// The placements after history record `after_seq`: each workload's last record up to it
    /// with its [`ReplayRef`], removals excepted, in store order.
    pub fn placements_at(&self, store: &Store, after_seq: u64) -> Result<Vec<PlacementRecord>, ReplayError> {
        let mut out = Vec::new();
        for history in &self.records {
            let Some(h) = history.iter().rev().find(|h| h.seq <= after_seq) else { continue };
            if h.inputs.template_hash == 0 && h.inputs.policy_hash == 0 {
                continue; // a removal: no placement
            }
            let r = store.replay_ref(h.seq)?.ok_or_else(|| {
                ReplayError::NotRecorded(format!(
                    "the placement of {} (record {}) the pass started from",
                    h.workload, h.seq
                ))
            })?;
            out.push(PlacementRecord {
                workload: h.workload.clone(),
                policy: h.policy.clone(),
                result: h.result.clone(),
                targets: r.targets,
                affinity_name: r.affinity_name,
                files: r.files.into_iter().map(|(c, f, _)| (c, f)).collect(),
                history_seq: h.seq,
                decided_at_ms: h.at_ms,
            });
        }
        out.sort_by_cached_key(|p| p.workload.store_key());
        Ok(out)
    }
}

/// Runs a recorded pass again: its stored inputs (the [`ReplayPass`], the snapshot versions
/// map `versions` and the stability state blob `stability` of its history records) with the
/// current code and `settings`. Reads `store`, writes only a scratch store of its own.
pub fn replay_pass(
    store: &Store,
    history: &RecordedHistory,
    settings: Settings,
    pass: &ReplayPass,
    versions: u64,
    stability: u64,
) -> Result<PassPreview, ReplayError> {
    let mut files = Vec::with_capacity(pass.sources.len());
    for (path, hash) in &pass.sources {
        let bytes = store.blob(*hash)?.ok_or_else(|| ReplayError::NotRecorded(format!("the file {path}")))?;
        let text = String::from_utf8(bytes).map_err(|_| ReplayError::NotRecorded(format!("the text of {path}")))?;
        files.push((PathBuf::from(path), Arc::<str>::from(text)));
    }
    let mut inputs = super::load_inputs_from_sources(&files, &settings).map_err(ReplayError::Invalid)?;
    let versions: BTreeMap<String, u64> = match versions {
        0 => return Err(ReplayError::NotRecorded("the snapshot versions".into())),
        v => store.versions(v)?.ok_or_else(|| ReplayError::NotRecorded("the snapshot versions".into()))?,
    };
    let freshness: BTreeMap<&str, _> = pass.freshness.iter().map(|(c, f)| (c.as_str(), *f)).collect();
    for snap in inputs.snapshots.iter_mut() {
        let version =
            versions.get(&snap.name).ok_or_else(|| ReplayError::NotRecorded(format!("a snapshot of {}", snap.name)))?;
        let stored = store
            .snapshot(&snap.name, *version)?
            .ok_or_else(|| ReplayError::NotRecorded(format!("snapshot {version} of {}", snap.name)))?;
        if stored.is_live() {
            let offline = std::mem::replace(snap, stored);
            // The repository owns identity and constraints (as when the pass merged its poll).
            snap.labels = offline.labels;
            snap.constraints = offline.constraints;
        }
        snap.freshness = freshness.get(snap.name.as_str()).copied().flatten();
    }
    let scratch = tempfile::tempdir()?;
    let seeded = Store::open(&scratch.path().join("state"))?;
    for p in history.placements_at(store, pass.after_seq)? {
        seeded.put_placement(&p)?;
    }
    let state: StabilityState = match stability {
        0 => StabilityState::default(),
        h => {
            let bytes = store.blob(h)?.ok_or_else(|| ReplayError::NotRecorded("the stability state".into()))?;
            // The store's codec; a JSON blob from before (empty when it failed to serialize).
            crate::store::codec::decode(&bytes).or_else(|_| serde_json::from_slice(&bytes)).map_err(|_| {
                ReplayError::NotRecorded("the stability state (an older fedsched stored it empty)".into())
            })?
        }
    };
    seeded.put_stability(&state)?;
    let reconciler = Reconciler::new(seeded, settings);
    Ok(reconciler.preview(&inputs, &scratch.path().join("out"), pass.now_ms)?)
}
