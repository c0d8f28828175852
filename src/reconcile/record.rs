//! Stage "record", after the publish: every decision that changed (or whose notes changed)
//! is appended to the history and becomes the workload's placement, in batches of
//! [`RECORD_BATCH`] per store transaction ([`Store::record_decisions`]); workloads no
//! longer propagated get a last history record and lose their placement; the decisions a
//! restart can reuse are persisted ([`crate::store::StoredDecision`], with the placement's
//! `history_seq`); then the store is flushed. Hands over [`Recorded`].
//!
//! A note names each cluster the mass-deletion guard held among a workload's clusters (its
//! new and its previous files); each eviction, purge, reschedule and move-back of the pass is
//! a note of its workload's record (recorded once, in that pass). A workload whose change the
//! guard held whole ([`HeldMove`]) records nothing: its placement and history stay what was
//! published (its engine state too: [`StabilityPass::keep_published`]). The stability state
//! is stored before the flush.
//!
//! A record holds the inputs its decision was made on, so that it replays `identical`: a
//! decision made this pass stores this pass's (its replay inputs, snapshot versions, the
//! stability state it began with); a decision reused from an earlier pass and recorded again
//! for a note (a held cluster) stores those of the pass that made it
//! ([`cache::CachedDecision::origin`], stamped here on every decision made this pass; for one
//! restored from the store, its placement's history record's), since its figures are that
//! pass's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::policy::ObjectKey;
use crate::publish::{HeldCluster, HeldMove, HeldRemoval, Trigger};
use crate::schedule::stability::Action;
use crate::schedule::{Outcome, ScheduleResult};
use crate::store::{DecisionInputs, HistoryRecord, PlacementRecord, Store, StoreError};

use super::cache::{self, LastHistory, Placements};
use super::decide::{Decided, Decisions};
use super::stability::StabilityPass;
use crate::util::hash::KeyMap;

/// How many changed decisions one store transaction records (a sled transaction costs about
/// the same whatever its size).
const RECORD_BATCH: usize = 256;

/// What the record stage hands over (to the report).
pub(super) struct Recorded {
    /// History records appended: changed decisions and removed workloads.
    pub history_records: usize,
    /// Workloads no longer propagated, in store order.
    pub removed_workloads: Vec<ObjectKey>,
}

/// What every record of the pass shares.
pub(super) struct Recording<'a> {
    pub store: &'a Store,
    /// Clusters the mass-deletion guard held this pass.
    pub held: &'a [HeldCluster],
    /// Moves held whole with a held cluster this pass.
    pub held_moves: &'a [HeldMove],
    /// Removals of objects no workload owns held on every cluster with a held one this pass.
    pub held_removals: &'a [HeldRemoval],
    /// Blob hash of the pass's snapshot versions map.
    pub versions: u64,
    pub trigger: Trigger,
    pub now_ms: u64,
    /// The stability stage's result: its state is stored with the pass (without the workloads
    /// whose removal this pass recorded), its actions are history notes of their workloads.
    pub stability: &'a mut StabilityPass,
    /// Blob hash of the pass's replay inputs ([`crate::store::ReplayPass`]); 0: not stored.
    pub replay: u64,
    /// A full check: the output's stats may have proven files of any decision, and the first
    /// pass of a process restores decisions that may need writing again.
    pub full_check: bool,
}

/// The record stage's part of what the reconciler keeps: the workloads' placements as stored
/// (the placement each pass begins with, which the other stages read through
/// [`Kept::placements`] and the decide stage through [`Lent`]), their last history records,
/// the blobs known stored, the runs of the last replay inputs stored, and the workloads whose
/// placement changed since the snapshots stage last listed the recent placements. Only this
/// stage (with the replay inputs it stores, `replay.rs`) changes it.
#[derive(Default, Clone)]
pub(super) struct Kept {
    /// Placements (and the stored decisions that are still valid) were read from the store.
    loaded: bool,
    /// Current placement of every workload (as stored).
    placements: Placements,
    /// Newest history record per workload; `None` = known to have none.
    history: KeyMap<ObjectKey, Option<LastHistory>>,
    /// Blob hashes known to be stored.
    blobs: std::collections::HashSet<u64>,
    /// The runs of the file list the last replay inputs stored ([`super::replay::StoredRuns`]).
    replay_runs: super::replay::StoredRuns,
    /// The workloads whose placement this process set or removed since the recent placements
    /// were last listed (`None`: not followed; they are listed from scratch).
    placements_changed: Option<Vec<ObjectKey>>,
}

impl Kept {
    /// Every workload's placement as stored: the one the pass began with until the record
    /// stage sets it.
    pub(super) fn placements(&self) -> &Placements {
        &self.placements
    }

    /// Whether the placements were read from the store (a pass ran since the cold start).
    pub(super) fn loaded(&self) -> bool {
        self.loaded
    }

    /// Sets a workload's placement (noted for the recent placements' list).
    pub(super) fn set_placement(&mut self, p: Arc<PlacementRecord>) {
        if let Some(changed) = self.placements_changed.as_mut() {
            changed.push(p.workload.clone());
        }
        self.placements.insert(p.workload.clone(), p);
    }

    /// Removes a workload's placement (noted for the recent placements' list).
    pub(super) fn remove_placement(&mut self, workload: &ObjectKey) -> Option<Arc<PlacementRecord>> {
        if let Some(changed) = self.placements_changed.as_mut() {
            changed.push(workload.clone());
        }
        self.placements.remove(workload)
    }

    /// The workloads whose placement changed since the last call (`None`: not followed yet),
    /// followed from now on: what the snapshots stage patches its recent placements with.
    pub(super) fn take_placements_changed(&mut self) -> Option<Vec<ObjectKey>> {
        self.placements_changed.replace(Vec::new())
    }

    /// The placements, taken (a preview's, which drops the copy after).
    pub(super) fn take_placements(&mut self) -> Placements {
        std::mem::take(&mut self.placements)
    }

    /// On the first call: reads the placements from the store (`false`: read already).
    pub(super) fn load(&mut self, store: &Store) -> Result<bool, StoreError> {
        if self.loaded {
            return Ok(false);
        }
        for p in store.placements()? {
            self.placements.insert(p.workload.clone(), Arc::new(p));
        }
        self.loaded = true;
        Ok(true)
    }

    /// The newest history record of a restored decision's workload (stored with it).
    pub(super) fn restored_history(&mut self, workload: ObjectKey, last: Option<LastHistory>) {
        self.history.insert(workload, last);
    }

    /// The newest history record of `key`, as far as this process knows it.
    fn known_history(&self, key: &ObjectKey) -> Option<&Option<LastHistory>> {
        self.history.get(key)
    }

    /// Whether `hash` is known to be stored as a blob.
    pub(super) fn knows_blob(&self, hash: u64) -> bool {
        self.blobs.contains(&hash)
    }

    /// Notes `hash` as stored; whether it was not known before.
    pub(super) fn note_blob(&mut self, hash: u64) -> bool {
        self.blobs.insert(hash)
    }

    /// The runs of the last replay inputs stored.
    pub(super) fn replay_runs(&mut self) -> &mut super::replay::StoredRuns {
        &mut self.replay_runs
    }

    /// What this stage lends the decide stage for a pass.
    pub(super) fn lend(&mut self) -> Lent<'_> {
        Lent { placements: &self.placements, history: &mut self.history, blobs: &mut self.blobs }
    }
}

/// The newest history record of `key` in `history`, read from the store on first use.
fn last_history<'h>(
    history: &'h mut KeyMap<ObjectKey, Option<LastHistory>>,
    store: &Store,
    key: &ObjectKey,
) -> Result<Option<&'h LastHistory>, StoreError> {
    if !history.contains_key(key) {
        let last = store.last_history(key)?.map(|h| LastHistory {
            template_hash: h.inputs.template_hash,
            policy_hash: h.inputs.policy_hash,
            notes: own_notes(&h.notes),
        });
        history.insert(key.clone(), last);
    }
    Ok(history.get(key).and_then(Option::as_ref))
}

/// The decision's own notes of a history record's `notes`: those of its pass's events left out
/// (a record lists the decision's notes, then the events: [`Action::is_event_note`]). What the
/// next pass compares its notes with, whether the record is this process's or read from the
/// store (a restart, a cold pass: warm = cold).
fn own_notes(notes: &[String]) -> Vec<String> {
    notes.iter().filter(|n| !Action::is_event_note(n)).cloned().collect()
}

/// What the record stage lends the decide stage: the placements the pass began with (read),
/// the workloads' newest history records (read from the store on first use: a Lazy policy's
/// pin) and the blobs known stored (noted as the decisions name them).
pub(super) struct Lent<'k> {
    placements: &'k Placements,
    history: &'k mut KeyMap<ObjectKey, Option<LastHistory>>,
    blobs: &'k mut std::collections::HashSet<u64>,
}

impl<'k> Lent<'k> {
    /// Every workload's placement as the pass began.
    pub(super) fn placements(&self) -> &'k Placements {
        self.placements
    }

    /// The newest history record of `key`.
    pub(super) fn last_history(&mut self, store: &Store, key: &ObjectKey) -> Result<Option<&LastHistory>, StoreError> {
        last_history(self.history, store, key)
    }

    /// Notes `hash` as a blob to store; whether it was not known (stored or noted) before.
    pub(super) fn note_blob(&mut self, hash: u64) -> bool {
        self.blobs.insert(hash)
    }
}

/// Records the pass's decisions and removals, persists the reusable decisions, and flushes.
pub(super) fn record(
    r: &mut Recording<'_>,
    cache: &mut cache::Kept,
    decisions: &Decisions,
) -> Result<Recorded, StoreError> {
    let mut history_records = record_changed(r, cache, decisions)?;
    let removed_workloads = record_removed(r, cache, &decisions.removed)?;
    history_records += removed_workloads.len();
    // What a restart needs to reuse these decisions, with the placement's `history_seq`
    // (flushed with the placements; an entry whose seq is not its placement's is ignored).
    // Outside a full check (which proves files' stats and, as a process's first pass, follows
    // the restore) only a decision made this pass or one whose placement this pass set (the
    // placements noted since the pass listed its recent ones) can be persisted with another
    // seq than its placement's: those are looked at, not every one.
    let mut stored = Vec::new();
    let candidates: Vec<&ObjectKey> = match (r.full_check, &cache.record.placements_changed) {
        (false, Some(placed)) => {
            let mut c: Vec<&ObjectKey> = decisions.fresh.iter().chain(placed).collect();
            c.sort_unstable();
            c.dedup();
            c
        }
        _ => decisions.keys().collect(),
    };
    for key in candidates {
        let (Some(c), Some(p)) = (cache.decide.decisions.get_mut(key), cache.record.placements.get(key)) else {
            continue;
        };
        if c.persisted_seq != Some(p.history_seq) && !c.unpublished {
            stored.push(c.to_stored(key, p, cache.record.known_history(key)));
            Arc::make_mut(c).persisted_seq = Some(p.history_seq);
        }
    }
    #[cfg(debug_assertions)]
    for key in decisions.keys() {
        if let (Some(c), Some(p)) = (cache.decide.decisions.get(key), cache.record.placements.get(key))
            && !c.unpublished
        {
            debug_assert_eq!(c.persisted_seq, Some(p.history_seq), "{key}: persisted with another seq");
        }
    }
    r.store.put_stored_decisions(&stored)?;
    r.store.remove_stored_decisions(&removed_workloads)?;
    // A workload whose removal was published leaves nothing behind: the stability stage kept
    // its state as published while the removal could be held (`stability::run`'s frozen
    // workloads); its files are gone now, and so are its tasks (in the state stored and in the
    // one the pass reports).
    for k in &removed_workloads {
        r.stability.state.workloads.remove(k);
    }
    r.store.put_stability(&r.stability.state)?;
    r.store.flush()?;
    Ok(Recorded { history_records, removed_workloads })
}

/// The notes naming the held clusters among those of `files` (a workload's file maps).
fn held_notes(held: &[HeldCluster], files: &[&BTreeMap<String, String>]) -> Vec<String> {
    if held.is_empty() {
        return Vec::new();
    }
    let held: BTreeMap<&str, &HeldCluster> = held.iter().map(|h| (h.cluster.as_str(), h)).collect();
    let clusters: BTreeSet<&str> = files.iter().flat_map(|f| f.keys().map(String::as_str)).collect();
    clusters.into_iter().filter_map(|c| held.get(c)).map(|h| h.to_string()).collect()
}

/// Whether the mass-deletion guard held the removal of a workload no longer propagated (`old`:
/// its placement) on one of its clusters, and so on all of them.
fn removal_held(r: &Recording<'_>, old: &PlacementRecord) -> bool {
    (!r.held.is_empty() || !r.held_removals.is_empty())
        && old.files.iter().any(|(c, p)| {
            r.held.iter().any(|h| &h.cluster == c)
                || r.held_removals.iter().any(|h| &h.path == p && h.waiting.contains(c))
        })
}

/// Whether the guard held the workload's change whole ([`HeldMove`]; `moves` in owner order).
pub(super) fn held_whole(moves: &[HeldMove], key: &ObjectKey) -> bool {
    if moves.is_empty() {
        return false;
    }
    let owner = key.to_string();
    moves.binary_search_by(|m| m.owner.as_str().cmp(owner.as_str())).is_ok()
}

/// Writes the changed decisions in batches of [`RECORD_BATCH`], one transaction each
/// (sequence numbers and records as one-by-one writes in this order would give them); the
/// cache learns of a record once its batch is written. Each workload's entries are read only
/// by its own iteration, so deferring them changes nothing. Returns how many it recorded.
fn record_changed(r: &Recording<'_>, cache: &mut cache::Kept, decisions: &Decisions) -> Result<usize, StoreError> {
    let mut batch: Vec<(HistoryRecord, PlacementRecord)> = Vec::new();
    let mut pending: Vec<(ObjectKey, cache::LastHistory, u64)> = Vec::new();
    let mut recorded = 0;
    let mut stability_notes = r.stability.notes_by_workload();
    // A decision reused from an earlier pass, with a placement and a last record without
    // notes, records nothing when the pass gives it no note (no render failure, no held
    // cluster or move, no failover action): [`changed`] is false. Those are found by lookups,
    // not compared.
    let quiet =
        decisions.notes.is_empty() && r.held.is_empty() && r.held_moves.is_empty() && stability_notes.is_empty();
    // Whether a workload was decided afresh and had a placement are what the decide stage noted
    // with it: its placement is the one the pass began with until its own turn here, which is
    // the only one that changes it.
    for ordered in &decisions.order {
        let (key, is_fresh) = (&ordered.template.key, ordered.fresh);
        debug_assert_eq!(is_fresh, decisions.fresh.contains(key), "{key}: noted fresh");
        debug_assert_eq!(ordered.placed, cache.record.placements.contains_key(key), "{key}: noted placed");
        if quiet
            && !is_fresh
            && ordered.placed
            && cache.record.history.get(key).is_some_and(|last| last.as_ref().is_none_or(|h| h.notes.is_empty()))
        {
            continue;
        }
        if held_whole(r.held_moves, key) {
            // Not published: its placement and history stay as last published, its decision
            // is neither persisted nor reused (decided again next pass from that placement).
            if let Some(c) = cache.decide.decisions.get_mut(key) {
                Arc::make_mut(c).unpublished = true;
            }
            continue;
        }
        // A decision made this pass is made on this pass's inputs: a later pass that reuses it
        // and records it again (a new note) stores these with it.
        if is_fresh && let Some(c) = cache.decide.decisions.get_mut(key) {
            let versions = c.decided.inputs.snapshot_versions;
            Arc::make_mut(c).origin =
                Some(cache::Origin { pass: r.replay, versions, stability: r.stability.state_blob });
        }
        let Some((d, origin)) = cache.decide.decisions.get(key).map(|c| (&c.decided, c.origin)) else { continue };
        let prev = cache.record.placements.get(key).cloned();
        let mut notes = decisions.notes.get(key).cloned().unwrap_or_default();
        let mut with_files = vec![&d.record.files];
        with_files.extend(prev.as_ref().map(|p| &p.files));
        notes.extend(held_notes(r.held, &with_files));
        let last = last_history(&mut cache.record.history, r.store, key)?;
        // Failover's actions are recorded once, in the pass they happen; they are not
        // compared with the last record's notes (their absence next pass is no change).
        let events = stability_notes.remove(key).unwrap_or_default();
        if !changed(d, prev.as_deref(), is_fresh, last, &notes) && events.is_empty() {
            continue;
        }
        let mut record = d.record.clone();
        record.decided_at_ms = r.now_ms;
        record.history_seq = 0;
        // The inputs the decision was made on: this pass's for one made afresh; for one reused
        // (recorded again for a note) those of the pass that made it, whose replay gives it.
        let (inputs, pass) = match (is_fresh, origin) {
            (true, _) => (DecisionInputs { stability: r.stability.state_blob, ..d.inputs.clone() }, r.replay),
            (false, Some(o)) => {
                (DecisionInputs { snapshot_versions: o.versions, stability: o.stability, ..d.inputs.clone() }, o.pass)
            }
            (false, None) => match prev.as_deref() {
                Some(p) => recorded_origin(r.store, key, p)?,
                None => None,
            }
            .unwrap_or_else(|| (DecisionInputs { stability: r.stability.state_blob, ..d.inputs.clone() }, 0)),
        };
        let history = HistoryRecord {
            seq: 0,
            at_ms: r.now_ms,
            trigger: r.trigger.to_string(),
            workload: record.workload.clone(),
            policy: record.policy.clone(),
            inputs,
            result: record.result.clone(),
            notes: notes.iter().chain(&events).cloned().collect(),
        };
        let last = cache::LastHistory {
            template_hash: d.inputs.template_hash,
            policy_hash: d.inputs.policy_hash,
            notes: own_notes(&notes),
        };
        pending.push((key.clone(), last, pass));
        batch.push((history, record));
        if batch.len() >= RECORD_BATCH {
            recorded += record_batch(r, &mut batch, &mut pending, cache)?;
        }
    }
    recorded += record_batch(r, &mut batch, &mut pending, cache)?;
    Ok(recorded)
}

/// Whether a decision is recorded: a new workload, a fresh decision whose outcome (scheduled
/// or why not), targets, files, policy, affinity term or template and policy hashes differ
/// from its placement and last history, or notes that differ from the last history's. The
/// scores and available replicas behind an unchanged decision are not a change (data age,
/// a member's confidence, the previous placement's own replicas counted as available): the
/// record of the decision keeps the figures it was made with. A reused decision has the
/// inputs and result of the stored placement (its key covers them); only its notes can
/// differ.
fn changed(
    d: &Decided,
    prev: Option<&PlacementRecord>,
    fresh: bool,
    last: Option<&cache::LastHistory>,
    notes: &[String],
) -> bool {
    (match prev {
        None => true,
        Some(_) if !fresh => false,
        Some(p) => {
            p.result.outcome != d.record.result.outcome
                || p.targets != d.record.targets
                || p.files != d.record.files
                || p.policy != d.record.policy
                || p.affinity_name != d.record.affinity_name
                || last
                    .is_none_or(|h| h.template_hash != d.inputs.template_hash || h.policy_hash != d.inputs.policy_hash)
        }
    }) || match last {
        Some(h) => h.notes.iter().ne(notes.iter().filter(|n| !Action::is_event_note(n))),
        None => !notes.is_empty(),
    }
}

/// The inputs and replay pass of the history record of `placement` (a decision restored from
/// the store is the decision of that record: its result is the placement's), or None when the
/// record or its replay reference is not in the store.
fn recorded_origin(
    store: &Store,
    key: &ObjectKey,
    placement: &PlacementRecord,
) -> Result<Option<(DecisionInputs, u64)>, StoreError> {
    let seq = placement.history_seq;
    let record = match store.last_history(key)? {
        Some(h) if h.seq == seq => Some(h),
        _ => store.history(key)?.into_iter().rev().find(|h| h.seq == seq),
    };
    let Some(record) = record else { return Ok(None) };
    Ok(store.replay_ref(seq)?.map(|rr| (record.inputs, rr.pass)))
}

/// Writes the batched changed decisions of a pass in one transaction
/// ([`Store::record_decisions`]) and then tells the cache: each workload's placement (with
/// its assigned history sequence number) and its last history. Empties both vectors;
/// returns how many decisions it recorded.
fn record_batch(
    r: &Recording<'_>,
    batch: &mut Vec<(HistoryRecord, PlacementRecord)>,
    pending: &mut Vec<(ObjectKey, cache::LastHistory, u64)>,
    cache: &mut cache::Kept,
) -> Result<usize, StoreError> {
    if batch.is_empty() {
        return Ok(0);
    }
    let recorded = batch.len();
    let seqs = r.store.record_decisions(batch)?;
    // Every record's placement, for the passes replayed after it (the pass blob may be 0).
    let refs: Vec<(u64, crate::store::ReplayRef)> = pending
        .iter()
        .zip(batch.iter())
        .zip(&seqs)
        .map(|(((key, _, pass), (_, placement)), seq)| (*seq, super::replay::replay_ref(cache, key, *pass, placement)))
        .collect();
    r.store.put_replay_refs(&refs)?;
    for ((_, record), (key, last, _)) in batch.drain(..).zip(pending.drain(..)) {
        debug_assert_eq!(key, record.workload);
        cache.record.history.insert(key, Some(last));
        cache.record.set_placement(Arc::new(record));
    }
    Ok(recorded)
}

/// Workloads that are no longer propagated: their files were not planned, so the publisher
/// removed them; records why, and forgets their placements. Returns them.
fn record_removed(
    r: &Recording<'_>,
    cache: &mut cache::Kept,
    removed: &[ObjectKey],
) -> Result<Vec<ObjectKey>, StoreError> {
    let mut out = Vec::with_capacity(removed.len());
    for key in removed {
        let Some(old) = cache.record.placements.get(key).cloned() else { continue };
        if removal_held(r, &old) {
            // Not published: its placement stays, and the removal is recorded once it is.
            continue;
        }
        let notes: Vec<String> =
            std::iter::once("template removed from the policy repository or no longer claimed by a policy".into())
                .chain(held_notes(r.held, &[&old.files]))
                .collect();
        let history = HistoryRecord {
            seq: 0,
            at_ms: r.now_ms,
            trigger: r.trigger.to_string(),
            workload: old.workload.clone(),
            policy: old.policy.clone(),
            inputs: DecisionInputs {
                template_hash: 0,
                policy_hash: 0,
                snapshot_versions: r.versions,
                previous: old.targets.iter().map(|(k, v)| (k.clone(), v.unwrap_or(0))).collect(),
                previous_affinity: old.affinity_name.clone(),
                profile: "karmada-default".into(),
                stability: r.stability.state_blob,
            },
            result: ScheduleResult {
                outcome: Outcome::Scheduled { targets: BTreeMap::new() },
                ..ScheduleResult::unschedulable("")
            },
            notes: notes.clone(),
        };
        let seq = r.store.append_history(history)?;
        let removal = crate::store::ReplayRef {
            pass: r.replay,
            targets: BTreeMap::new(),
            affinity_name: None,
            files: Vec::new(),
        };
        r.store.put_replay_refs(&[(seq, removal)])?;
        r.store.remove_placement(&old.workload)?;
        cache.record.remove_placement(key);
        cache.record.history.insert(key.clone(), Some(LastHistory { template_hash: 0, policy_hash: 0, notes }));
        out.push(key.clone());
    }
    Ok(out)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A placement of `Deployment/default/web` with these targets (a file `web.yaml` on each).
    pub(in crate::reconcile) fn placement(targets: &[(&str, i32)]) -> PlacementRecord {
        PlacementRecord {
            workload: ObjectKey {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("default".into()),
                name: "web".into(),
            },
            policy: None,
            result: ScheduleResult::unschedulable(""),
            targets: targets.iter().map(|(c, r)| (c.to_string(), Some(*r))).collect(),
            affinity_name: None,
            files: targets.iter().map(|(c, _)| (c.to_string(), "web.yaml".to_string())).collect(),
            history_seq: 0,
            decided_at_ms: 0,
        }
    }

    /// A workload's notes name each held cluster among its new and its previous files, once.
    #[test]
    fn held_notes_name_the_held_clusters_of_the_new_and_previous_files() {
        let held = [HeldCluster { cluster: "a".into(), objects: 4, removals: 3 }];
        let (new, old) = (placement(&[("b", 1)]).files, placement(&[("a", 1), ("b", 1)]).files);
        assert_eq!(held_notes(&held, &[&new]), Vec::<String>::new());
        assert_eq!(held_notes(&held, &[&new, &old]), vec![held[0].to_string()]);
        assert_eq!(held_notes(&[], &[&new, &old]), Vec::<String>::new());
    }

    /// A new workload is always recorded; a reused decision only when its notes differ from
    /// its last history's; a fresh one also when its placement differs.
    #[test]
    fn a_reused_decision_is_recorded_only_when_its_notes_change() {
        let record = placement(&[("a", 2)]);
        let d = Decided::restored(&record, Vec::new(), Vec::new(), Vec::new(), Vec::new(), (true, None, true));
        let last = cache::LastHistory { template_hash: 0, policy_hash: 0, notes: Vec::new() };
        let moved = placement(&[("b", 2)]);
        assert!(changed(&d, None, false, None, &[]));
        assert!(!changed(&d, Some(&moved), false, Some(&last), &[]));
        assert!(changed(&d, Some(&moved), false, Some(&last), &["held".to_string()]));
        assert!(changed(&d, Some(&moved), true, Some(&last), &[]));
        assert!(!changed(&d, Some(&record), true, Some(&last), &[]));
    }
}
