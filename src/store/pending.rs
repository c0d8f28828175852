//! The record of a pass whose publish is not complete yet: an undo log, so that the store is
//! never ahead of nor behind the output directory after a crash.
//!
//! A pass records (history, placements, replay references, persisted decisions, the stability
//! and rollout states) before its publish commits its journal: [`Store::begin_record`] marks
//! the store with the journal's id and, from then until [`Store::end_record`], every write of
//! those trees first writes the value it replaces (once per key) into `meta` (`undo` keys),
//! ahead of the write itself in sled's log. Once the journal is applied, [`Store::settle_record`]
//! drops the log (flushed before the journal is removed). A process that starts and finds a log
//! ([`Store::pending_record`]) looks at the output directory: a journal with that id commits the
//! record (the recovery completes its files); none means the publish never committed, and
//! [`Store::roll_back_record`] puts every value back as it was (`reconcile::recover`).
//!
//! The log holds what the store held (no rendered file, no Secret data: the store keeps none),
//! one entry per key a pass's record changes.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::codec::{Versioned, decode, encode};
use super::{Store, StoreError};

/// `meta` key of the id of the publish whose record is pending (big-endian u64).
const PENDING_KEY: &[u8] = b"pending_record";
/// Prefix of the `meta` keys of the undo log (`undo 0x00 n`, n big-endian).
const UNDO_PREFIX: &[u8] = b"undo\x00";

/// One value a pending record replaced: its tree, key, and the value before (None: absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct UndoEntry {
    pub tree: Vec<u8>,
    pub key: Vec<u8>,
    pub old: Option<Vec<u8>>,
}

impl Versioned for UndoEntry {
    const WHAT: &'static str = "undo entry";
    const SCHEMA: u16 = 1;
}

/// The keys captured so far by the record being written ([`Store::begin_record`]).
#[derive(Default)]
pub(super) struct Capture {
    next: u64,
    seen: HashSet<(Vec<u8>, Vec<u8>)>,
}

fn undo_key(n: u64) -> Vec<u8> {
    let mut k = UNDO_PREFIX.to_vec();
    k.extend_from_slice(&n.to_be_bytes());
    k
}

impl Store {
    /// Starts the record of the publish whose journal has id `publish`: its writes are undone
    /// by [`Store::roll_back_record`] unless [`Store::settle_record`] comes first.
    pub fn begin_record(&self, publish: u64) -> Result<(), StoreError> {
        self.writable("pending record")?;
        self.inner.meta.insert(PENDING_KEY, &publish.to_be_bytes()).map_err(|e| self.err(e))?;
        *self.inner.capture.lock().unwrap_or_else(|p| p.into_inner()) = Some(Capture::default());
        Ok(())
    }

    /// Ends the capture (the log stays until settled or rolled back).
    pub fn end_record(&self) {
        *self.inner.capture.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The id of the publish whose record is pending, if any.
    pub fn pending_record(&self) -> Result<Option<u64>, StoreError> {
        match self.inner.meta.get(PENDING_KEY).map_err(|e| self.err(e))? {
            Some(v) => super::keys::be_u64("meta", &v).map(Some),
            None => Ok(None),
        }
    }

    /// Whether a record is being captured.
    pub(super) fn capturing(&self) -> bool {
        self.inner.capture.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Before writing `keys` of `tree`: while a record is captured, logs the value each holds
    /// now (the first time the record touches it).
    pub(super) fn note_old<K: AsRef<[u8]>>(
        &self,
        tree: &sled::Tree,
        keys: impl IntoIterator<Item = K>,
    ) -> Result<(), StoreError> {
        let mut capture = self.inner.capture.lock().unwrap_or_else(|p| p.into_inner());
        let Some(capture) = capture.as_mut() else { return Ok(()) };
        let name = tree.name().to_vec();
        let mut batch = sled::Batch::default();
        for key in keys {
            let key = key.as_ref().to_vec();
            if !capture.seen.insert((name.clone(), key.clone())) {
                continue;
            }
            let old = tree.get(&key).map_err(|e| self.err(e))?.map(|v| v.to_vec());
            batch.insert(undo_key(capture.next), encode(&UndoEntry { tree: name.clone(), key, old })?);
            capture.next += 1;
        }
        self.inner.meta.apply_batch(batch).map_err(|e| self.err(e))
    }

    /// The undo log, in the order written.
    fn undo_log(&self) -> Result<Vec<(sled::IVec, UndoEntry)>, StoreError> {
        let mut out = Vec::new();
        for kv in self.inner.meta.scan_prefix(UNDO_PREFIX) {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            out.push((k, decode::<UndoEntry>(&v)?));
        }
        Ok(out)
    }

    /// Removes the pending mark and the undo log (`entries`), then flushes.
    fn forget_record(&self, entries: impl IntoIterator<Item = sled::IVec>) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for k in entries {
            batch.remove(k);
        }
        batch.remove(PENDING_KEY);
        self.inner.meta.apply_batch(batch).map_err(|e| self.err(e))?;
        self.flush().map(|_| ())
    }

    /// The publish of the pending record is committed (its journal is written): the record
    /// stands; the log is dropped and the store flushed.
    pub fn settle_record(&self) -> Result<(), StoreError> {
        self.writable("pending record")?;
        self.end_record();
        if self.pending_record()?.is_none() {
            return Ok(());
        }
        let keys: Vec<sled::IVec> =
            self.inner.meta.scan_prefix(UNDO_PREFIX).keys().collect::<Result<_, _>>().map_err(|e| self.err(e))?;
        self.forget_record(keys)
    }

    /// The publish of the pending record never committed: every value the record replaced is
    /// put back (newest first), the log is dropped and the store flushed. Returns how many
    /// values were restored.
    pub fn roll_back_record(&self) -> Result<usize, StoreError> {
        self.writable("pending record")?;
        self.end_record();
        let log = self.undo_log()?;
        let restored = log.len();
        for (_, entry) in log.iter().rev() {
            let tree = self.inner.db.open_tree(&entry.tree).map_err(|e| self.err(e))?;
            match &entry.old {
                Some(v) => tree.insert(&entry.key, v.as_slice()),
                None => tree.remove(&entry.key),
            }
            .map_err(|e| self.err(e))?;
        }
        self.forget_record(log.into_iter().map(|(k, _)| k))?;
        Ok(restored)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::Store;
    use crate::store::tests::{decision, placement, workload};

    /// A record rolled back leaves the store as it was before it began (placements, history,
    /// the sequence counter, the stability state); a settled one stays; both drop the log.
    #[test]
    fn a_pending_record_rolls_back_to_the_store_before_it_and_settles_whole() {
        let dir = tempfile::TempDir::new().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (web, api) = (workload("web"), workload("api"));
        store.record_decision(decision(&web, 1, "first"), &placement(&web)).expect("first");
        store.flush().expect("flush");
        let state = |store: &Store| {
            (
                store.placements().expect("placements"),
                store.history(&web).expect("history"),
                store.history(&api).expect("history"),
                store.last_history_seq().expect("seq"),
                store.stability().expect("stability"),
            )
        };
        let before = state(&store);

        let write = |store: &Store| {
            let mut batch =
                vec![(decision(&web, 2, "second"), placement(&web)), (decision(&api, 2, "new"), placement(&api))];
            store.record_decisions(&mut batch).expect("record");
            store.remove_placement(&web).expect("remove");
            let mut state = crate::schedule::stability::StabilityState::default();
            state.recent_removals.push(2);
            store.put_stability(&state).expect("stability");
        };
        store.begin_record(7).expect("begin");
        write(&store);
        store.end_record();
        assert_eq!(store.pending_record().expect("pending"), Some(7));
        assert_ne!(state(&store), before);
        drop(store);
        // A restart finds the log: the publish never committed.
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(store.pending_record().expect("pending"), Some(7));
        // Two history records, two placements (web once), the counter, the stability state.
        assert_eq!(store.roll_back_record().expect("roll back"), 6);
        assert_eq!(state(&store), before);
        assert_eq!(store.pending_record().expect("pending"), None);

        store.begin_record(8).expect("begin");
        write(&store);
        store.settle_record().expect("settle");
        let settled = state(&store);
        assert_eq!(store.pending_record().expect("pending"), None);
        assert_eq!(store.roll_back_record().expect("nothing to undo"), 0);
        assert_eq!(state(&store), settled);
        assert_eq!(settled.3, 3);
    }
}
