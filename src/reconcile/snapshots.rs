//! Stage "version snapshots": every member's snapshot versioned in the store (with its age
//! and confidence), and the member views the pass decides on — the inputs' snapshots after
//! the assumed-replica deductions of the recent placements ([`Assumed`]) — as
//! [`PassSnapshots`]; then the [`Pass`] every decision shares (cluster positions, the
//! scheduler's fleet, the versions blob, each cluster's state).
//!
//! An unchanged snapshot (same fingerprint and confidence) is not recorded again, except to
//! refresh its `last_seen_ms` every [`cache::LAST_SEEN_EVERY_MS`]. The deducted views depend
//! only on the snapshots' content and on the recent placements (and their templates' per-
//! replica requirements): while neither changes, the views the last pass deducted are reused
//! (keyed by [`views_key`]); they move into the pass and back into the cache as the pass
//! started from them: a view is copied before the pass's first deduction from it, and the
//! deductions' bookkeeping is undone ([`PassSnapshots::save`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::model::dimensions::{Dimensions, ModelSettings};
use crate::model::nodes::CompiledRequest;
use crate::model::workload::interpret;
use crate::model::{ClusterSnapshot, Freshness, Observed, ReplicaRequirements, assumed};
use crate::policy::{ObjectKey, Template};
use crate::schedule::{Fleet, ViewIx};
use crate::store::{PlacementRecord, PreparedSnapshot, Store, StoreError};
use crate::util::hash::KeyMap;
use crate::util::memo;

use super::{Inputs, cache};

/// What the snapshot stage hands to the decisions: the snapshot versions and the member
/// views, which the decisions of the pass deduct from in turn ([`PassSnapshots::deduct`]).
pub(super) struct PassSnapshots {
    /// Cluster → the stored version of its snapshot.
    pub versions: BTreeMap<String, u64>,
    /// Snapshots stored as a new version this pass.
    pub new_versions: usize,
    /// The member views, in the order of the inputs' snapshots, with this pass's freshness
    /// and poll facts: after the deductions of the recent placements, then of this pass's
    /// decisions so far.
    pub views: Vec<ClusterSnapshot>,
    /// The deductions made from `views` so far.
    pub assumed: Assumed,
    /// Replicas deducted for the recent placements (before this pass's own decisions).
    pub assumed_replicas: i64,
    dims: Dimensions,
    /// The key the views are put back into the cache under, until they are
    /// ([`PassSnapshots::save`]).
    unsaved: Option<u64>,
    /// Until then, each view as it was before the pass's first deduction from it (the views
    /// the pass changed, by position) and how to undo the pass's bookkeeping
    /// ([`PassSnapshots::deduct`]): the cache gets the views the pass started from.
    originals: HashMap<ViewIx, ClusterSnapshot>,
    undo: Vec<Undo>,
    /// The fingerprints of the snapshots the views were deducted from.
    pub(super) fingerprints: Vec<u64>,
    /// The pass's time and the assumed-replica TTL: which placements the pass started from
    /// are recent, so already deducted ([`PassSnapshots::already_deducted`]).
    now_ms: u64,
    assumed_ttl_ms: u64,
    /// `[model] offline_deductions`: the pass's decisions deduct from offline members' views
    /// too ([`Assumed::plan`]).
    offline: bool,
    /// Whether any member is offline.
    any_offline: bool,
}

/// What the snapshots stage keeps between passes (its part of [`cache::Kept`]).
#[derive(Default, Clone)]
pub(super) struct Kept {
    /// Per member, its snapshot as last recorded by this process.
    snapshots: HashMap<String, cache::SnapshotState>,
    /// The digest of each member's node list, for the snapshots' fingerprints.
    node_digests: cache::NodeDigests,
    /// The deducted views of the last pass ([`cache::DeductedViews`]).
    views: Option<cache::DeductedViews>,
    /// The last pass's recent placements, their requirements and their digest.
    recent: Option<cache::RecentPlacements>,
    /// The clusters' state digests the last pass started from, with the digest of their
    /// names ([`cache::ClusterDigests::start_digests`]).
    cluster_digests: Option<cache::DigestReference>,
    /// Those the last pass's decisions left ([`cache::ClusterDigests::end_digests`]).
    cluster_digests_end: Option<cache::DigestReference>,
}

impl Kept {
    /// The deducted views the last pass saved, if any.
    #[cfg(test)]
    pub fn views(&self) -> Option<&cache::DeductedViews> {
        self.views.as_ref()
    }
}

/// Versions every snapshot of `inputs` and builds (or reuses) the deducted member views.
/// `placements`: every workload's current placement; `changed`: the workloads whose placement
/// was set or removed since the last pass listed the recent ones (`None`: not known).
pub(super) fn version(
    store: &Store,
    (kept, placements, changed): (&mut Kept, &cache::Placements, Option<Vec<ObjectKey>>),
    inputs: &Inputs,
    model: &ModelSettings,
    now_ms: u64,
) -> Result<PassSnapshots, StoreError> {
    let dims = Dimensions::new(model);
    let recorded = record_snapshots(store, kept, inputs, model, now_ms)?;
    // Assumed workloads: recent decisions a live member does not run yet, deducted from the
    // views in store order.
    let mut last = kept.recent.take().filter(|_| memo::on(memo::Name::RecentPlacements));
    let (placements, keys) = recent_placements(placements, (last.as_mut(), changed), (now_ms, model.assumed_ttl_ms));
    // The last list's position of each placement that is the same object (for both below).
    let aligned = last.as_ref().map(|m| align(&m.placements, &placements));
    let last_aligned = last.as_ref().zip(aligned.as_deref());
    let requirements = recent_requirements(last_aligned, inputs, (&placements, &keys));
    let (entries, digest) = recent_digest(last_aligned, &placements, &requirements);
    let recent = kept.recent.insert(cache::RecentPlacements {
        oldest_ms: placements.iter().map(|p| p.decided_at_ms).min().unwrap_or(0),
        placements,
        keys,
        requirements,
        set: Arc::clone(&inputs.set),
        interpreters: inputs.hashes.interpreters,
        entries,
        digest,
    });
    let key = views_key(&recorded.fingerprints, recent.digest);
    let (mut views, assumed) = match kept.views.take() {
        Some(v)
            if v.key == key && v.snapshots.len() == inputs.snapshots.len() && memo::on(memo::Name::DeductedViews) =>
        {
            (v.snapshots, v.assumed)
        }
        _ => rebuild_views(inputs, (&recent.placements, &recent.requirements), &dims),
    };
    // What is not content comes from this pass's inputs.
    for ((snap, input), fresh) in views.iter_mut().zip(&inputs.snapshots).zip(recorded.freshness) {
        snap.freshness = fresh;
        snap.poll.clone_from(&input.poll);
    }
    Ok(PassSnapshots {
        versions: recorded.versions,
        new_versions: recorded.new_versions,
        assumed_replicas: assumed.total(),
        views,
        assumed,
        dims,
        unsaved: Some(key),
        originals: HashMap::new(),
        undo: Vec::new(),
        fingerprints: recorded.fingerprints,
        now_ms,
        assumed_ttl_ms: model.assumed_ttl_ms,
        offline: model.offline_deductions,
        any_offline: inputs.snapshots.iter().any(|s| !s.is_live()),
    })
}

/// The member views after the recent placements' deductions, in store order, when the cached
/// ones do not fit the pass as a whole. A deduction touches only its own cluster's view, and
/// what it deducts (pending = decided − observed) reads pods, which deductions do not change:
/// so every deduction is planned first (the [`Assumed`] bookkeeping, in store order), then
/// every view is copied and deducted on its own, on every core. (Keeping a view whose snapshot
/// and deduction sequence were unchanged, a memo of its own, earned nothing beyond the noise:
/// issue 51's ablation.)
fn rebuild_views(
    inputs: &Inputs,
    (recent, requirements): (&[Arc<PlacementRecord>], &[Option<Arc<ReplicaRequirements>>]),
    dims: &Dimensions,
) -> (Vec<ClusterSnapshot>, Assumed) {
    let work: Vec<(&PlacementRecord, &ReplicaRequirements)> =
        recent.iter().zip(requirements).filter_map(|(p, req)| Some((&**p, &**req.as_ref()?))).collect();
    let planned = plan_all(&inputs.snapshots, &work);
    let assumed = Assumed::of_plans(&inputs.snapshots, &planned);
    #[cfg(debug_assertions)]
    {
        let mut sequential = Assumed::default();
        for (p, req) in &work {
            let plan = sequential.plan(&inputs.snapshots, &p.workload, &p.targets, false);
            sequential.record(&p.workload, req, &plan);
        }
        debug_assert_eq!(sequential.deducted, assumed.deducted);
        debug_assert_eq!(sequential.per_cluster, assumed.per_cluster);
        for i in ViewIx::all(inputs.snapshots.len()) {
            debug_assert_eq!(sequential.of_position(i), assumed.of_position(i));
        }
    }
    // Each view's deductions, in store order.
    let mut deductions: Vec<Vec<(&ReplicaRequirements, i64)>> = vec![Vec::new(); inputs.snapshots.len()];
    for ((_, req), m) in work.iter().zip(&planned) {
        for (i, _, want) in &m.plan {
            if let Some(d) = deductions.get_mut(i.index()) {
                d.push((req, *want));
            }
        }
    }
    let positions: Vec<ViewIx> = ViewIx::all(inputs.snapshots.len()).collect();
    let views = crate::util::threads::map_ordered(&positions, crate::util::threads::workers(), |&i| {
        let mut view = inputs.snapshots[i.index()].clone();
        for (req, n) in deductions.get(i.index()).into_iter().flatten() {
            assumed::deduct(&mut view, req, &CompiledRequest::compile_labelled(u64::MAX, req, dims), *n, dims);
        }
        view
    });
    (views, assumed)
}

impl PassSnapshots {
    /// Whether deducting a decision with `targets` would change nothing because the views
    /// already hold it: `placement` (the workload's placement the pass started from) is one of
    /// the recent placements deducted before the decisions ([`version`]), with the same
    /// targets (`same_targets`: [`cache::SameTargets::equal`]). What a deduction takes is
    /// planned from the targets and the member's pods alone, so the plan would find every
    /// replica deducted. A quiet pass of a large fleet skips the plan of each of its decisions
    /// this way.
    ///
    /// Never for a placement with replicas on an offline member (with `[model]
    /// offline_deductions`): those are deducted by each pass's own decisions, not before them.
    pub fn already_deducted(
        &self,
        placement: Option<&Arc<PlacementRecord>>,
        same_targets: impl FnOnce(&Arc<PlacementRecord>) -> bool,
    ) -> bool {
        placement.is_some_and(|p| {
            memo::on(memo::Name::AlreadyDeducted)
                && self.now_ms.saturating_sub(p.decided_at_ms) < self.assumed_ttl_ms
                && same_targets(p)
                && !(self.offline && self.on_offline(&p.targets))
        })
    }

    /// Whether `targets` put replicas on an offline member (the pass has any: else no lookup).
    fn on_offline(&self, targets: &BTreeMap<String, Option<i32>>) -> bool {
        self.any_offline
            && targets.iter().any(|(c, r)| {
                r.is_some_and(|r| r > 0)
                    && position_of(&self.views, c).and_then(|i| i.of(&self.views)).is_some_and(|s| !s.is_live())
            })
    }

    /// Whether [`PassSnapshots::deduct`] would deduct nothing (checked in debug builds where
    /// [`PassSnapshots::already_deducted`] skips it).
    pub fn deducts_nothing(&self, workload: &ObjectKey, targets: &BTreeMap<String, Option<i32>>) -> bool {
        self.assumed.plan(&self.views, workload, targets, self.offline).is_empty()
    }

    /// Lets later workloads of the pass see a decision's replicas as assumed: deducts them
    /// from the live views ([`Assumed::update`]). Until the views are saved, a view keeps its
    /// state before the pass's first deduction from it, and the bookkeeping its undo
    /// ([`PassSnapshots::save`] puts them back): only the views the pass deducts from
    /// are copied, not every member's.
    pub fn deduct(&mut self, workload: &ObjectKey, req: &ReplicaRequirements, targets: &BTreeMap<String, Option<i32>>) {
        let plan = self.assumed.plan(&self.views, workload, targets, self.offline);
        if plan.is_empty() {
            return;
        }
        let undo = match self.unsaved {
            Some(_) => {
                for (i, ..) in &plan {
                    if let (std::collections::hash_map::Entry::Vacant(e), Some(view)) =
                        (self.originals.entry(*i), i.of(&self.views))
                    {
                        // The copy shares the view's node index (a clone starts without one):
                        // the next pass estimates on it without grouping its nodes again. A
                        // deduction from either side changes a shared index on a copy of its own.
                        let mut copy = view.clone();
                        if let Some(index) = view.index.built() {
                            copy.index.set_shared(index.clone());
                        }
                        e.insert(copy);
                    }
                }
                Some(&mut self.undo)
            }
            None => None,
        };
        self.assumed.apply_logged(&mut self.views, workload, req, plan, &self.dims, undo);
    }

    /// Saves what the stage keeps at the pass's end: the clusters' digests as the pass's
    /// decisions left them (`digests`: the pass's), and the views as the pass started from
    /// them, keyed by what they were deducted from: moved, with the views the pass deducted
    /// from replaced by their copies from before and the pass's bookkeeping undone (the pass
    /// does not read them after its decisions).
    pub fn save(&mut self, kept: &mut Kept, digests: &cache::ClusterDigests) {
        kept.cluster_digests_end = Some(digests.end_digests(&self.views, &self.assumed));
        if let Some(key) = self.unsaved.take() {
            let mut snapshots = std::mem::take(&mut self.views);
            for (i, original) in self.originals.drain() {
                if let Some(view) = snapshots.get_mut(i.index()) {
                    *view = original;
                }
            }
            let mut assumed = std::mem::take(&mut self.assumed);
            assumed.undo(std::mem::take(&mut self.undo));
            kept.views = Some(cache::DeductedViews { key, snapshots, assumed });
        }
    }
}

/// One recent placement's deductions as [`Assumed::plan`] gives them with nothing deducted
/// yet, and the digest of what it deducts (its workload and requirements; 0: nothing).
struct PlanMemo {
    workload: ObjectKey,
    what: u64,
    plan: Vec<(ViewIx, String, i64)>,
}

/// The plan of each of `work`'s placements (with nothing deducted yet) on `snapshots`, in
/// `work`'s order, made on every core (a workload has one placement, so the plans do not depend
/// on each other; the digests are chained in store order afterwards). (Keeping each plan per
/// placement object, a memo of its own, earned nothing beyond the noise: issue 51's ablation.)
fn plan_all(snapshots: &[ClusterSnapshot], work: &[(&PlacementRecord, &ReplicaRequirements)]) -> Vec<PlanMemo> {
    let fresh = Assumed::default();
    crate::util::threads::map_ordered(work, crate::util::threads::workers(), |&(p, req)| {
        let plan = fresh.plan(snapshots, &p.workload, &p.targets, false);
        let owned: Vec<(ViewIx, String, i64)> = plan.iter().map(|(i, c, want, _)| (*i, (*c).clone(), *want)).collect();
        let what = match owned.is_empty() {
            true => 0,
            false => cache::key_of(&(&p.workload, req)),
        };
        PlanMemo { workload: p.workload.clone(), what, plan: owned }
    })
}

/// What one deduction's bookkeeping changed for one cluster ([`Assumed::undo`]).
struct Undo {
    workload: ObjectKey,
    cluster: String,
    position: ViewIx,
    /// The workload's deduction from the cluster before (`None`: none).
    deducted: Option<i64>,
    /// The cluster's digest before (`None`: no deduction from it yet).
    digest: Option<u64>,
    /// The position's digest before.
    by_position: u64,
}

/// [`record_snapshots`]' answer.
struct Recorded {
    versions: BTreeMap<String, u64>,
    new_versions: usize,
    /// [`cache::fingerprint`] of each snapshot, in the inputs' order.
    fingerprints: Vec<u64>,
    /// Each snapshot's freshness at the pass's time ([`freshness_at`]).
    freshness: Vec<Option<Freshness>>,
}

/// Versions what we know of every member, with its age and confidence: a snapshot whose
/// fingerprint and confidence are the ones this process recorded (less than
/// [`cache::LAST_SEEN_EVERY_MS`] ago) keeps its version without a store write.
fn record_snapshots(
    store: &Store,
    kept: &mut Kept,
    inputs: &Inputs,
    model: &ModelSettings,
    now_ms: u64,
) -> Result<Recorded, StoreError> {
    let mut out = Recorded {
        versions: BTreeMap::new(),
        new_versions: 0,
        fingerprints: Vec::with_capacity(inputs.snapshots.len()),
        freshness: Vec::with_capacity(inputs.snapshots.len()),
    };
    // Members this process has not recorded yet (all of them after a restart): their node
    // digests, content hashes and store heads on every core first (hashing and decoding 1,000
    // members was most of a restart's snapshot stage).
    let cold: Vec<&ClusterSnapshot> =
        inputs.snapshots.iter().filter(|s| !kept.snapshots.contains_key(&s.name)).collect();
    // Each cold member's head with its snapshot's content hash now and, when that is a new
    // version (no head: a first reconcile; another hash), its encoded body: a first
    // reconcile of 1,000 members hashed and encoded each on the main thread.
    let mut heads: HashMap<&str, (Option<crate::store::SnapshotMeta>, PreparedSnapshot)> =
        HashMap::with_capacity(cold.len());
    let read = crate::util::threads::map_ordered(&cold, crate::util::threads::workers(), |s| {
        let shared = cache::SharedDigests::of(s);
        let head = store.snapshot_head(&s.name)?;
        let fresh = freshness_at(s.freshness, now_ms, model).1;
        let prepared = PreparedSnapshot::of(s, head.as_ref().map(|h| h.hash), fresh)?;
        Ok::<_, StoreError>((shared, head, prepared))
    });
    for (s, r) in cold.iter().zip(read) {
        let (shared, head, prepared) = r?;
        kept.node_digests.put(s, shared);
        heads.insert(s.name.as_str(), (head, prepared));
    }
    for snap in &inputs.snapshots {
        let (at_ms, fresh) = freshness_at(snap.freshness, now_ms, model);
        let observed = Observed { at_ms, confidence: fresh.map_or(1.0, |f| f.confidence()) };
        let fingerprint = cache::fingerprint(snap, kept.node_digests.of(snap));
        let ppm = fresh.map(|f| f.confidence_ppm);
        out.fingerprints.push(fingerprint);
        out.freshness.push(fresh);
        let (version, new) = match kept.snapshots.get(&snap.name) {
            Some(s)
                if s.fingerprint == fingerprint
                    && s.confidence_ppm == ppm
                    && now_ms.saturating_sub(s.recorded_ms) < cache::LAST_SEEN_EVERY_MS =>
            {
                (s.version, false)
            }
            cached => {
                // A process that has not recorded this member yet (a restart) finds the same
                // content and confidence in the store's head, seen less than
                // LAST_SEEN_EVERY_MS ago: it keeps that version without a write, as a warm
                // process would (a store transaction per member was most of a restart's poll).
                let (head, prepared) = match (cached, heads.remove(snap.name.as_str())) {
                    (None, Some((Some(h), prepared))) => (
                        (h.confidence == observed.confidence
                            && observed.at_ms.saturating_sub(h.last_seen_ms) < cache::LAST_SEEN_EVERY_MS
                            && h.hash == prepared.hash())
                        .then_some(h),
                        Some(prepared),
                    ),
                    (_, cold) => (None, cold.map(|(_, prepared)| prepared)),
                };
                let (version, new, recorded_ms) = match head {
                    Some(h) => (h.version, false, h.last_seen_ms),
                    None => {
                        let snap = ClusterSnapshot { freshness: fresh, ..snap.clone() };
                        let (version, new) = match prepared {
                            Some(prepared) => store.record_prepared_snapshot(&snap, observed, prepared)?,
                            None => store.record_snapshot(&snap, observed)?,
                        };
                        (version, new, now_ms)
                    }
                };
                let state = cache::SnapshotState { fingerprint, confidence_ppm: ppm, version, recorded_ms };
                kept.snapshots.insert(snap.name.clone(), state);
                (version, new)
            }
        };
        if new {
            out.new_versions += 1;
        }
        out.versions.insert(snap.name.clone(), version);
    }
    kept.node_digests.retain_of(&inputs.snapshots);
    Ok(out)
}

/// The per-replica requirements of each recent placement's template, in `recent`'s order
/// (`None`: the template is gone or cannot be interpreted). With the
/// last pass's ([`cache::RecentPlacements`]) for the same workloads in the same order, the same
/// interpreters and as many templates, only the entries whose placement or template is
/// another object are looked at again (`keys`: the recent placements' store keys).
fn recent_requirements(
    last: Option<(&cache::RecentPlacements, &[Option<StoreIx>])>,
    inputs: &Inputs,
    (recent, keys): (&[Arc<PlacementRecord>], &[String]),
) -> Vec<Option<Arc<ReplicaRequirements>>> {
    let templates = &inputs.set.templates;
    let patched = last.and_then(|(m, aligned)| {
        let same = m.interpreters == inputs.hashes.interpreters
            && m.set.templates.len() == templates.len()
            && m.requirements.len() == m.placements.len()
            && keys.len() == recent.len()
            && aligned.len() == recent.len();
        if !same {
            return None;
        }
        // Each placement that is the same object as in the last list takes its requirements
        // from there (a placement that became recent or stopped being one moves the others);
        // the others, and those whose template changed, are read again.
        let mut out: Vec<Option<Arc<ReplicaRequirements>>> = Vec::with_capacity(recent.len());
        let mut again = Vec::new();
        for (i, at) in aligned.iter().enumerate() {
            match at.and_then(|j| m.requirements.get(j.index())) {
                Some(req) => out.push(req.clone()),
                None => {
                    out.push(None);
                    again.push(i);
                }
            }
        }
        if !Arc::ptr_eq(&m.set, &inputs.set) {
            for (was, now) in m.set.templates.iter().zip(templates.iter()) {
                if !Arc::ptr_eq(was, now) {
                    for key in [&was.key, &now.key] {
                        if let Ok(i) = keys.binary_search(&key.store_key()) {
                            again.push(i);
                        }
                    }
                }
            }
        }
        for i in again {
            if let (Some(slot), Some(p)) = (out.get_mut(i), recent.get(i)) {
                *slot = requirement_of(inputs, inputs.set.template(&p.workload));
            }
        }
        Some(out)
    });
    match patched {
        Some(out) => {
            #[cfg(debug_assertions)]
            debug_assert!(out == all_requirements(inputs, recent), "patched requirements differ");
            out
        }
        None => all_requirements(inputs, recent),
    }
}

/// [`recent_requirements`] of every recent placement.
fn all_requirements(inputs: &Inputs, recent: &[Arc<PlacementRecord>]) -> Vec<Option<Arc<ReplicaRequirements>>> {
    recent.iter().map(|p| requirement_of(inputs, inputs.set.template(&p.workload))).collect()
}

/// The per-replica requirements of one template, as the interpreters read it (`None`: no
/// template, or it cannot be interpreted). Not kept by template between passes: the recent
/// placements' list keeps each placement's while it is the same object
/// ([`recent_requirements`]), and a memo by the template's hash earned nothing beyond that
/// (issue 51's ablation: off against on within the noise on S1, S3, S4 and S7).
fn requirement_of(inputs: &Inputs, template: Option<&Template>) -> Option<Arc<ReplicaRequirements>> {
    let t = template?;
    interpret(t.key.group(), &t.key.kind, &t.object, &inputs.interpreters).ok().map(|w| Arc::new(w.requirements))
}

/// The placements decided less than `ttl_ms` before `now_ms` (those whose replicas are
/// assumed), in store order, as the store lists them, with their store keys: the last pass's
/// list patched with the placements this process set or removed since (`changed`:
/// [`cache::Kept::placements_changed`]) while none of the listed ones expired, which a
/// pass of a large fleet finds without looking at every workload's placement or sorting their
/// keys; listed from scratch otherwise. The last list's keys are moved out, not copied.
fn recent_placements(
    placements: &KeyMap<ObjectKey, Arc<PlacementRecord>>,
    (last, changed): (Option<&mut cache::RecentPlacements>, Option<Vec<ObjectKey>>),
    (now_ms, ttl_ms): (u64, u64),
) -> (Vec<Arc<PlacementRecord>>, Vec<String>) {
    let is_recent = |p: &PlacementRecord| now_ms.saturating_sub(p.decided_at_ms) < ttl_ms;
    let (Some(last), Some(mut changed)) = (last, changed) else { return list_recent(placements, is_recent) };
    if !last.placements.is_empty() && now_ms.saturating_sub(last.oldest_ms) >= ttl_ms {
        return list_recent(placements, is_recent);
    }
    let mut list = last.placements.clone();
    let mut keys = std::mem::take(&mut last.keys);
    changed.sort_unstable();
    changed.dedup();
    for key in &changed {
        let store_key = key.store_key();
        let current = placements.get(key).filter(|p| is_recent(p));
        match (keys.binary_search(&store_key), current) {
            (Ok(i), Some(p)) => list[i] = Arc::clone(p),
            (Ok(i), None) => {
                list.remove(i);
                keys.remove(i);
            }
            (Err(i), Some(p)) => {
                list.insert(i, Arc::clone(p));
                keys.insert(i, store_key);
            }
            (Err(_), None) => {}
        }
    }
    #[cfg(debug_assertions)]
    {
        let (fresh, _) = list_recent(placements, is_recent);
        debug_assert!(
            fresh.len() == list.len() && fresh.iter().zip(&list).all(|(a, b)| Arc::ptr_eq(a, b)),
            "the patched recent placements are not those listed from scratch"
        );
    }
    (list, keys)
}

/// The placements `is_recent` takes, sorted by store key, with their store keys.
fn list_recent(
    placements: &KeyMap<ObjectKey, Arc<PlacementRecord>>,
    is_recent: impl Fn(&PlacementRecord) -> bool,
) -> (Vec<Arc<PlacementRecord>>, Vec<String>) {
    let mut keyed: Vec<(String, Arc<PlacementRecord>)> =
        placements.values().filter(|p| is_recent(p)).map(|p| (p.workload.store_key(), Arc::clone(p))).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(k, p)| (p, k)).unzip()
}

/// The digest of the recent placements (workload, targets, per-replica requirements) in store
/// order, with each placement's own digest: the last pass's again while they are the same
/// objects, each placement's kept while it and its requirements are the same objects at the
/// same place.
fn recent_digest(
    last: Option<(&cache::RecentPlacements, &[Option<StoreIx>])>,
    recent: &[Arc<PlacementRecord>],
    requirements: &[Option<Arc<ReplicaRequirements>>],
) -> (Vec<u64>, u64) {
    let same_requirement = |a: &Option<Arc<ReplicaRequirements>>, b: &Option<Arc<ReplicaRequirements>>| match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    };
    if let Some((m, aligned)) = last
        && m.placements.len() == recent.len()
        && aligned.iter().zip(StoreIx::all(recent.len())).all(|(at, i)| *at == Some(i))
        && m.requirements.len() == requirements.len()
        && m.requirements.iter().zip(requirements).all(|(a, b)| same_requirement(a, b))
    {
        return (m.entries.clone(), m.digest);
    }
    // Each placement that is the same object as in the last list, with the same
    // requirements, keeps its digest (wherever a placement that became recent or stopped
    // being one moved it).
    let entries: Vec<u64> = recent
        .iter()
        .zip(requirements)
        .enumerate()
        .map(|(i, (p, req))| {
            let same = last.and_then(|(m, aligned)| {
                let j = aligned.get(i).copied().flatten().filter(|_| m.entries.len() == m.placements.len())?;
                let r = m.requirements.get(j.index())?;
                same_requirement(req, r).then(|| m.entries.get(j.index()).copied()).flatten()
            });
            same.unwrap_or_else(|| cache::key_of(&(&p.workload, &p.targets, req.as_deref())))
        })
        .collect();
    let digest = cache::key_of(&entries);
    (entries, digest)
}

/// For each placement of `now`, the position in `was` of the same object, both lists in store
/// order (the recent placements of two passes): a merge that compares addresses, and store
/// keys only where they differ (a placement that became recent, stopped being one or was
/// replaced: a few per pass).
fn align(was: &[Arc<PlacementRecord>], now: &[Arc<PlacementRecord>]) -> Vec<Option<StoreIx>> {
    let mut out = Vec::with_capacity(now.len());
    let mut j = 0;
    for p in now {
        loop {
            let Some(w) = was.get(j) else {
                out.push(None);
                break;
            };
            if Arc::ptr_eq(w, p) {
                out.push(Some(StoreIx(j)));
                j += 1;
                break;
            }
            match w.workload.store_key().cmp(&p.workload.store_key()) {
                // Gone from the list: look further.
                std::cmp::Ordering::Less => j += 1,
                // Replaced by another placement of the same workload.
                std::cmp::Ordering::Equal => {
                    out.push(None);
                    j += 1;
                    break;
                }
                // New in the list.
                std::cmp::Ordering::Greater => {
                    out.push(None);
                    break;
                }
            }
        }
    }
    out
}

/// The position of a recent placement in a pass's list of them, in store order (the order
/// the store lists the placements by key: [`recent_placements`]), as a placement of the next
/// pass's list is matched to the last one's ([`align`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct StoreIx(usize);

impl StoreIx {
    /// Its index in the list.
    const fn index(self) -> usize {
        self.0
    }

    /// The positions of a list of `len`, in order.
    fn all(len: usize) -> impl Iterator<Item = StoreIx> {
        (0..len).map(StoreIx)
    }
}

/// The key of the deducted views: the snapshots' fingerprints and the digest of the recent
/// placements ([`recent_digest`]).
fn views_key(fingerprints: &[u64], recent: u64) -> u64 {
    cache::key_of(&(fingerprints, recent))
}

/// What the pass shares with every decision, built once the snapshots are versioned.
pub(super) struct Pass {
    /// Position of each cluster in the pass's snapshots (its views).
    pub positions: HashMap<String, ViewIx>,
    /// The scheduler's fleet context (clusters in name order, filter memo).
    pub fleet: Fleet,
    /// Blob hash of the pass's cluster → snapshot version map ([`Store::put_versions`]).
    pub versions: u64,
    /// Each cluster's state, by position: its snapshot version and what the scheduler reads
    /// of its freshness, combined with the deductions ([`cache::clusters_state`]).
    pub digests: cache::ClusterDigests,
}

impl Pass {
    /// Builds the fleet and stores the pass's versions map and cluster names as blobs (a no-op
    /// when a previous pass stored the same ones). `last`: the digests the previous pass
    /// started from ([`cache::ClusterDigests::start_digests`]) and `last_end` those its
    /// decisions left ([`cache::ClusterDigests::end_digests`]).
    pub fn new(snapshots: &PassSnapshots, store: &Store, kept: &mut Kept) -> Result<Self, StoreError> {
        let (last, last_end) = (kept.cluster_digests.take(), kept.cluster_digests_end.take());
        let (views, versions) = (&snapshots.views, &snapshots.versions);
        let cluster_states =
            views.iter().map(|s| cache::key_of(&(&s.name, versions.get(&s.name), cache::freshness_key(s)))).collect();
        let fleet = Fleet::new(views);
        let digests = cache::ClusterDigests::new(cluster_states, &snapshots.assumed, fleet.universe(), last, last_end);
        if !fleet.is_empty() {
            store.put_universe(fleet.names())?;
        }
        kept.cluster_digests = Some(digests.start_digests());
        Ok(Pass {
            positions: views.iter().enumerate().map(|(i, s)| (s.name.clone(), ViewIx::new(i))).collect(),
            versions: store.put_versions(versions)?,
            fleet,
            digests,
        })
    }
}

/// Sets the age and confidence of a live snapshot (offline ones keep confidence 1); returns
/// the time of the observation (the last successful poll; `now_ms` for offline clusters).
pub fn set_confidence(snap: &mut ClusterSnapshot, now_ms: u64, model: &ModelSettings) -> u64 {
    let (at_ms, fresh) = freshness_at(snap.freshness, now_ms, model);
    snap.freshness = fresh;
    at_ms
}

/// [`set_confidence`] of a snapshot's freshness: the time of the observation and the
/// freshness with its age and confidence at `now_ms`.
fn freshness_at(fresh: Option<Freshness>, now_ms: u64, model: &ModelSettings) -> (u64, Option<Freshness>) {
    let Some(mut f) = fresh else { return (now_ms, None) };
    let age = if f.polled_at_ms == 0 { u64::MAX } else { now_ms.saturating_sub(f.polled_at_ms) };
    f.age_ms = age;
    f.confidence_ppm = (model.confidence(age, f.consecutive_failures) * 1e6).round() as u32;
    (if f.polled_at_ms == 0 { now_ms } else { f.polled_at_ms.min(now_ms) }, Some(f))
}

/// The position of the snapshot of `cluster` in `snapshots` (the pass's, sorted by name as
/// the set's clusters are; searched in order if they are not): what a deduction's plan reads.
fn position_of(snapshots: &[ClusterSnapshot], cluster: &str) -> Option<ViewIx> {
    match snapshots.binary_search_by(|s| s.name.as_str().cmp(cluster)) {
        Ok(i) => Some(ViewIx::new(i)),
        Err(_) => snapshots.iter().position(|s| s.name == cluster).map(ViewIx::new),
    }
}

/// Replicas deducted per (workload, live cluster) this pass.
#[derive(Debug, Default, Clone)]
pub struct Assumed {
    deducted: KeyMap<ObjectKey, HashMap<String, i64>>,
    /// The sum of `deducted`, kept as it changes ([`Assumed::total`]).
    total: i64,
    /// Per cluster, a running digest of the deductions from its view: equal digests mean equal
    /// deductions, so the view a decision sees of it is covered by its cache key.
    pub per_cluster: HashMap<String, u64>,
    /// The same digests by the cluster's position in the views the deductions were planned on
    /// (the pass's views, in their order): what a decision's state reads, once per feasible
    /// cluster, without a lookup by name ([`Assumed::of_position`]).
    by_position: Vec<u64>,
}

impl Assumed {
    /// Deducts what a decision adds beyond what was already deducted for it: per target live
    /// cluster, decided − observed (pods of the workload) − already deducted. A decrease is
    /// not given back within the pass (conservative).
    pub fn update(
        &mut self,
        snapshots: &mut [ClusterSnapshot],
        workload: &ObjectKey,
        req: &ReplicaRequirements,
        targets: &BTreeMap<String, Option<i32>>,
        dims: &Dimensions,
    ) {
        let plan = self.plan(snapshots, workload, targets, false);
        self.apply_logged(snapshots, workload, req, plan, dims, None);
    }

    /// What [`Assumed::update`] would deduct, without changing anything: per target live
    /// cluster where more is pending than was deducted, (position, cluster, pending, deducted).
    ///
    /// `offline`: offline members too (a decision of this pass on one: its replicas, none of
    /// which a member's pods show; the views are built without them, so what a pass deducts
    /// from an offline member ends with the pass).
    pub fn plan<'t>(
        &self,
        snapshots: &[ClusterSnapshot],
        workload: &ObjectKey,
        targets: &'t BTreeMap<String, Option<i32>>,
        offline: bool,
    ) -> Vec<(ViewIx, &'t String, i64, i64)> {
        let mut owner = None;
        let mut plan = Vec::new();
        for (cluster, replicas) in targets {
            let Some(r) = replicas else { continue };
            let Some((i, snap)) = position_of(snapshots, cluster).and_then(|i| i.of(snapshots).map(|s| (i, s))) else {
                continue;
            };
            let want = match snap.pods.as_ref().filter(|_| snap.is_live()) {
                Some(pods) => {
                    let owner = owner.get_or_insert_with(|| assumed::Owner::of(workload));
                    assumed::pending(i64::from(*r), owner.observed(pods))
                }
                None if offline && !snap.is_live() => i64::from(*r),
                None => continue,
            };
            let done = self.deducted.get(workload).and_then(|m| m.get(cluster)).copied().unwrap_or(0);
            if want > done {
                plan.push((i, cluster, want, done));
            }
        }
        plan
    }

    /// Applies a [`Assumed::plan`], noting in `undo` (when given) how to undo its bookkeeping
    /// ([`Assumed::undo`]).
    fn apply_logged(
        &mut self,
        snapshots: &mut [ClusterSnapshot],
        workload: &ObjectKey,
        req: &ReplicaRequirements,
        plan: Vec<(ViewIx, &String, i64, i64)>,
        dims: &Dimensions,
        undo: Option<&mut Vec<Undo>>,
    ) {
        let compiled = CompiledRequest::compile_labelled(u64::MAX, req, dims);
        for (i, _, want, done) in &plan {
            if let Some(snap) = snapshots.get_mut(i.index()) {
                assumed::deduct(snap, req, &compiled, want - done, dims);
            }
        }
        if let Some(undo) = undo {
            for &(position, cluster, ..) in &plan {
                undo.push(Undo {
                    workload: workload.clone(),
                    cluster: cluster.clone(),
                    position,
                    deducted: self.deducted.get(workload).and_then(|d| d.get(cluster.as_str())).copied(),
                    digest: self.per_cluster.get(cluster.as_str()).copied(),
                    by_position: self.of_position(position),
                });
            }
        }
        self.record(workload, req, &plan);
    }

    /// The bookkeeping of deducting, from `views` as they are and in order, each workload's
    /// plan ((position, cluster, replicas) as [`Assumed::plan`] gives it with nothing deducted
    /// yet) with `what` the digest of its workload and requirements: what [`Assumed::record`]
    /// of each in turn gives, with the digests chained by position and named once at the end.
    fn of_plans(views: &[ClusterSnapshot], plans: &[PlanMemo]) -> Assumed {
        let mut assumed = Assumed::default();
        for m in plans {
            if m.plan.is_empty() {
                continue;
            }
            let mut deducted = HashMap::with_capacity(m.plan.len());
            for (i, cluster, want) in &m.plan {
                if assumed.by_position.len() <= i.index() {
                    assumed.by_position.resize(i.index() + 1, 0);
                }
                if let Some(own) = assumed.by_position.get_mut(i.index()) {
                    *own = cache::key_of(&(*own, m.what, *want));
                }
                deducted.insert(cluster.clone(), *want);
            }
            assumed.put_workload(m.workload.clone(), deducted);
        }
        for (view, digest) in views.iter().zip(&assumed.by_position) {
            if *digest != 0 {
                assumed.per_cluster.insert(view.name.clone(), *digest);
            }
        }
        assumed
    }

    /// Undoes the bookkeeping `log` noted ([`Assumed::apply_logged`]), newest first: the
    /// deductions and digests are those from before.
    fn undo(&mut self, log: Vec<Undo>) {
        for u in log.into_iter().rev() {
            match u.deducted {
                Some(n) => {
                    let was = self.deducted.entry(u.workload).or_default().insert(u.cluster.clone(), n);
                    self.total += n - was.unwrap_or(0);
                }
                None => {
                    if let Some(d) = self.deducted.get_mut(&u.workload) {
                        self.total -= d.remove(u.cluster.as_str()).unwrap_or(0);
                        if d.is_empty() {
                            self.deducted.remove(&u.workload);
                        }
                    }
                }
            }
            match u.digest {
                Some(digest) => {
                    self.per_cluster.insert(u.cluster, digest);
                }
                None => {
                    self.per_cluster.remove(u.cluster.as_str());
                }
            }
            if let Some(p) = self.by_position.get_mut(u.position.index()) {
                *p = u.by_position;
            }
        }
    }

    /// The bookkeeping of an applied [`Assumed::plan`] (what was deducted, the digests),
    /// without touching any view.
    fn record(&mut self, workload: &ObjectKey, req: &ReplicaRequirements, plan: &[(ViewIx, &String, i64, i64)]) {
        if plan.is_empty() {
            return;
        }
        // What is deducted, hashed once for all its clusters.
        let what = cache::key_of(&(workload, req));
        // The workload's key is copied once, and a cluster's name once per map it is new in
        // (a rebuild of the views records every recent placement).
        let deducted = match self.deducted.get_mut(workload) {
            Some(d) => d,
            None => self.deducted.entry(workload.clone()).or_default(),
        };
        for &(i, cluster, want, _) in plan {
            match deducted.get_mut(cluster.as_str()) {
                Some(n) => {
                    self.total += want - *n;
                    *n = want;
                }
                None => {
                    deducted.insert(cluster.clone(), want);
                    self.total += want;
                }
            }
            let own = match self.per_cluster.get_mut(cluster.as_str()) {
                Some(own) => own,
                None => self.per_cluster.entry(cluster.clone()).or_insert(0),
            };
            *own = cache::key_of(&(*own, what, want));
            if self.by_position.len() <= i.index() {
                self.by_position.resize(i.index() + 1, 0);
            }
            if let Some(p) = self.by_position.get_mut(i.index()) {
                *p = *own;
            }
        }
    }

    /// [`Assumed::of_cluster`] of the cluster at position `i` of the views its deductions were
    /// planned on (0: none).
    pub fn of_position(&self, i: ViewIx) -> u64 {
        self.by_position.get(i.index()).copied().unwrap_or(0)
    }

    /// The digest of the deductions from one cluster's view so far (0: none).
    pub fn of_cluster(&self, cluster: &str) -> u64 {
        self.per_cluster.get(cluster).copied().unwrap_or(0)
    }

    /// Sets one workload's deductions (replacing any), keeping the total.
    fn put_workload(&mut self, workload: ObjectKey, deducted: HashMap<String, i64>) {
        self.total += deducted.values().sum::<i64>();
        if let Some(old) = self.deducted.insert(workload, deducted) {
            self.total -= old.values().sum::<i64>();
        }
    }

    /// Replicas deducted in all.
    pub fn total(&self) -> i64 {
        debug_assert_eq!(self.total, self.deducted.values().flat_map(HashMap::values).sum::<i64>());
        self.total
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::schedule::ScheduleResult;

    fn placement(name: &str, replicas: i32, decided_at_ms: u64) -> Arc<PlacementRecord> {
        Arc::new(PlacementRecord {
            workload: ObjectKey {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("shop".into()),
                name: name.into(),
            },
            policy: None,
            result: ScheduleResult::unschedulable(""),
            targets: [("m1".to_string(), Some(replicas)), ("m2".to_string(), Some(1))].into(),
            affinity_name: None,
            files: BTreeMap::new(),
            history_seq: 0,
            decided_at_ms,
        })
    }

    /// Two passes' recent placements are matched by object, whatever became recent, stopped
    /// being one or was replaced between them.
    #[test]
    fn recent_placements_of_two_passes_are_matched_by_object() {
        let was: Vec<Arc<PlacementRecord>> = ["b", "d", "f", "h"].iter().map(|n| placement(n, 1, 0)).collect();
        // a new first, d replaced, e new, f gone, h kept, z new last.
        let now = vec![
            placement("a", 1, 0),
            Arc::clone(&was[0]),
            placement("d", 2, 0),
            placement("e", 1, 0),
            Arc::clone(&was[3]),
            placement("z", 1, 0),
        ];
        let at = |i: usize| Some(StoreIx(i));
        assert_eq!(align(&was, &now), vec![None, at(0), None, None, at(3), None]);
        assert_eq!(align(&was, &was), vec![at(0), at(1), at(2), at(3)]);
        assert_eq!(align(&[], &was), vec![None; 4]);
        assert!(align(&was, &[]).is_empty());
        // Everything gone but the last one.
        assert_eq!(align(&was, &was[3..]), vec![at(3)]);
    }

    /// Live views of `members`, each with the nodes `nodes` (64 CPUs, 110 pods each) and no
    /// pods.
    pub(in crate::reconcile) fn live_views(members: &[&str], nodes: &[&str]) -> Vec<ClusterSnapshot> {
        use crate::model::{NodeView, PodFacts, ResourceList};
        let node = |name: &str| NodeView::ready(name, ResourceList::of(&[("cpu", 64_000), ("pods", 110_000)]));
        let nodes: Vec<NodeView> = nodes.iter().map(|n| node(n)).collect();
        members
            .iter()
            .map(|m| {
                ClusterSnapshot::live(*m, "https://x")
                    .with_summary(crate::model::snapshot::ResourceSummary::from_nodes(
                        &nodes,
                        &ResourceList::new(),
                        0,
                        &[],
                    ))
                    .with_nodes(nodes.clone())
                    .with_pods(PodFacts::default())
            })
            .collect()
    }

    /// The bookkeeping a pass undoes before saving its views is the one it started from:
    /// whatever its deductions added (new workloads, a workload on a new cluster, more
    /// replicas of a deducted one), the undo gives the same deductions and digests back.
    #[test]
    fn undone_deductions_give_back_the_bookkeeping_the_pass_started_from() {
        use crate::model::ResourceList;
        let mut views = live_views(&["m1", "m2", "m3"], &["a", "b"]);
        let req = ReplicaRequirements { request: ResourceList::of(&[("cpu", 500)]), ..Default::default() };
        let dims = Dimensions::new(&ModelSettings::default());
        let key = |name: &str| placement(name, 1, 0).workload.clone();
        let targets = |t: &[(&str, i32)]| -> BTreeMap<String, Option<i32>> {
            t.iter().map(|(c, r)| (c.to_string(), Some(*r))).collect()
        };
        let mut assumed = Assumed::default();
        assumed.update(&mut views, &key("web"), &req, &targets(&[("m1", 2), ("m2", 1)]), &dims);
        assumed.update(&mut views, &key("api"), &req, &targets(&[("m2", 3)]), &dims);
        let before = assumed.clone();
        let mut log = Vec::new();
        for (name, t) in [
            ("web", targets(&[("m1", 4), ("m2", 1), ("m3", 2)])),
            ("db", targets(&[("m3", 1)])),
            ("api", targets(&[("m2", 5), ("m1", 1)])),
            ("db", targets(&[("m3", 2), ("m2", 1)])),
        ] {
            let plan = assumed.plan(&views, &key(name), &t, false);
            assert!(!plan.is_empty());
            assumed.apply_logged(&mut views, &key(name), &req, plan, &dims, Some(&mut log));
        }
        assert_ne!(assumed.per_cluster, before.per_cluster);
        assumed.undo(log);
        assert_eq!(assumed.deducted, before.deducted);
        assert_eq!(assumed.per_cluster, before.per_cluster);
        for (i, v) in views.iter().enumerate().map(|(i, v)| (ViewIx::new(i), v)) {
            assert_eq!(assumed.of_position(i), before.of_position(i), "{}", v.name);
            assert_eq!(assumed.of_position(i), assumed.of_cluster(&v.name));
        }
        assert_eq!(assumed.total(), 6);
    }

    /// After an edit replaced some placements, the recent list and its digest the last pass's
    /// memo gives are those a pass without any memo computes: the same workloads in store
    /// order with the current placements, and the same digest; a changed set of workloads is
    /// listed again from scratch.
    #[test]
    fn an_edit_updates_the_recent_list_and_digest_as_a_fresh_pass_computes_them() {
        let mut cache = cache::Kept::default();
        for name in ["web", "api", "db", "cache"] {
            cache.record.set_placement(placement(name, 2, 1_000));
        }
        let req = Some(Arc::new(ReplicaRequirements::default()));
        let fresh = |cache: &cache::Kept, now: u64| {
            let (recent, _) = recent_placements(cache.record.placements(), (None, None), (now, 10_000));
            let reqs = vec![req.clone(); recent.len()];
            let (_, digest) = recent_digest(None, &recent, &reqs);
            (recent, digest)
        };
        // As a pass lists them: patched from the last pass's list, which it then keeps.
        let memo = |cache: &mut cache::Kept, now: u64| {
            let mut last = cache.snapshots.recent.take();
            let changed = cache.record.take_placements_changed();
            let (recent, keys) = recent_placements(cache.record.placements(), (last.as_mut(), changed), (now, 10_000));
            let reqs = vec![req.clone(); recent.len()];
            let aligned = last.as_ref().map(|m| align(&m.placements, &recent));
            let (entries, digest) = recent_digest(last.as_ref().zip(aligned.as_deref()), &recent, &reqs);
            cache.snapshots.recent = Some(cache::RecentPlacements {
                oldest_ms: recent.iter().map(|p| p.decided_at_ms).min().unwrap_or(0),
                placements: recent.clone(),
                keys,
                requirements: reqs,
                set: Arc::default(),
                interpreters: 0,
                entries,
                digest,
            });
            (recent, digest)
        };
        let names = |r: &[Arc<PlacementRecord>]| r.iter().map(|p| p.workload.name.clone()).collect::<Vec<_>>();
        let (first, d1) = memo(&mut cache, 2_000);
        assert_eq!(names(&first), ["api", "cache", "db", "web"]);
        assert_eq!((names(&first), d1), (names(&fresh(&cache, 2_000).0), fresh(&cache, 2_000).1));
        // One edit: "db" decided again with other targets.
        let edited = placement("db", 3, 2_500);
        cache.record.set_placement(edited.clone());
        let (second, d2) = memo(&mut cache, 3_000);
        let (want, want_digest) = fresh(&cache, 3_000);
        assert_eq!(names(&second), names(&want));
        assert!(second.iter().zip(&want).all(|(a, b)| Arc::ptr_eq(a, b)), "the current placements");
        assert!(Arc::ptr_eq(&second[2], &edited));
        assert_eq!(d2, want_digest);
        assert_ne!(d1, d2, "the edit changes the digest");
        // A new workload and a removed one while none expired: the list patched, as listed
        // from scratch.
        cache.record.set_placement(placement("mq", 1, 3_500));
        cache.record.remove_placement(&placement("api", 1, 0).workload);
        let (patched, d4) = memo(&mut cache, 4_000);
        let (want, want_digest) = fresh(&cache, 4_000);
        assert_eq!(names(&patched), ["cache", "db", "mq", "web"]);
        assert!(patched.len() == want.len() && patched.iter().zip(&want).all(|(a, b)| Arc::ptr_eq(a, b)));
        assert_eq!(d4, want_digest);
        // A placement that is no longer recent, and a new workload: listed from scratch.
        let late = placement("queue", 1, 20_000);
        cache.record.set_placement(late);
        let (third, d3) = memo(&mut cache, 14_000);
        let (want, want_digest) = fresh(&cache, 14_000);
        assert_eq!(names(&third), names(&want));
        assert_eq!(names(&third), ["queue"]);
        assert_eq!(d3, want_digest);
    }
}
