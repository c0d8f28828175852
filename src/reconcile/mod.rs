//! One reconcile pass through the whole flow: load → snapshot → schedule → render → publish
//! → record. The `render` command runs one pass; the daemon runs one per trigger.
//!
//! Owns: the order of the stages and what happens to a workload when a stage fails for it
//! (it keeps its previous output). Inputs that are invalid stop the pass before anything is
//! written: the output and the store stay as they were.

mod cache;
mod settings;

pub use settings::{PublishSettings, Settings};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::members::live::LiveView;
use crate::members::offline_snapshot;
use crate::model::dimensions::{Dimensions, ModelSettings};
use crate::model::workload::{InterpreterTable, interpret};
use crate::model::{ClusterSnapshot, Freshness, Observed, ReplicaRequirements, Workload, assumed};
use crate::policy::load::{ParseCache, load_repository_cached, load_repository_incremental};
use crate::policy::matching::PolicyIndex;
use crate::policy::{LoadError, ObjectKey, PolicyRef, PolicySet, Template};
use crate::publish::{self, ClusterFiles, PublishPlan};
use crate::render::{self, RenderInput};
use crate::schedule::profile::Profiles;
use crate::schedule::{
    self, ClusterVerdict, Fleet, Framework, Outcome, ScheduleRequest, ScheduleResult, Strategy, assign,
};
use crate::store::{DecisionInputs, HistoryRecord, PlacementRecord, Store, StoreError};
use crate::util::hash::fnv1a64;

/// How many changed decisions one store transaction records (a sled transaction costs about
/// the same whatever its size).
const RECORD_BATCH: usize = 256;

/// Everything a pass reads from the policy repository, validated. Cloning is cheap: what does
/// not change between passes is shared ([`Reconciler::load_inputs`] hands out the previous
/// inputs again when no file changed).
#[derive(Clone)]
pub struct Inputs {
    pub set: Arc<PolicySet>,
    pub snapshots: Vec<ClusterSnapshot>,
    /// The repository's declarative workload interpreters.
    pub interpreters: Arc<InterpreterTable>,
    /// Content hashes of the set's objects, computed once per load.
    pub hashes: Arc<InputHashes>,
}

/// Content hashes (FNV-1a 64 of the JSON) of what decisions read from the set: computed once
/// when the set is loaded, not per pass.
#[derive(Debug, Default)]
pub struct InputHashes {
    /// Each template's object, in the order of `set.templates`.
    pub templates: Vec<u64>,
    /// Each (cluster) propagation policy's spec.
    pub policies: HashMap<PolicyRef, u64>,
    /// Each (cluster) override policy's spec, by (kind, namespace, name).
    pub overrides: HashMap<(render::overrides::OverrideKind, Option<String>, String), u64>,
    /// The interpreter objects and the declarative interpreters.
    pub interpreters: u64,
}

impl InputHashes {
    /// The hashes of `set`'s objects.
    pub fn of(set: &PolicySet) -> Self {
        Self::of_reusing(set, None)
    }

    /// [`InputHashes::of`], taking the hash of a template from `previous` (a set and its
    /// hashes) when the previous set has the same template with an equal object (comparing is
    /// much cheaper than serialising).
    pub fn of_reusing(set: &PolicySet, previous: Option<(&PolicySet, &InputHashes)>) -> Self {
        use crate::policy::PolicyKind;
        use render::overrides::OverrideKind;
        let json = |v: &dyn erased_json::Ser| fnv1a64(&v.to_vec());
        fn propagation(set: &PolicySet) -> Vec<(PolicyRef, &crate::policy::types::PropagationSpec)> {
            [
                (PolicyKind::PropagationPolicy, &set.propagation_policies),
                (PolicyKind::ClusterPropagationPolicy, &set.cluster_propagation_policies),
            ]
            .into_iter()
            .flat_map(|(kind, list)| {
                list.iter().map(move |p| {
                    (PolicyRef { kind, namespace: p.meta.namespace.clone(), name: p.meta.name.clone() }, &p.spec)
                })
            })
            .collect()
        }
        type OverrideId = (OverrideKind, Option<String>, String);
        fn overriding(set: &PolicySet) -> Vec<(OverrideId, &crate::policy::types::OverrideSpec)> {
            [
                (OverrideKind::OverridePolicy, &set.override_policies),
                (OverrideKind::ClusterOverridePolicy, &set.cluster_override_policies),
            ]
            .into_iter()
            .flat_map(|(kind, list)| {
                list.iter().map(move |p| ((kind, p.meta.namespace.clone(), p.meta.name.clone()), &p.spec))
            })
            .collect()
        }
        // Equal specs serialise equally: the previous hash is reused.
        let old_policies: HashMap<PolicyRef, (&crate::policy::types::PropagationSpec, u64)> = previous
            .map(|(set, hashes)| {
                propagation(set)
                    .into_iter()
                    .filter_map(|(r, spec)| hashes.policies.get(&r).map(|h| (r, (spec, *h))))
                    .collect()
            })
            .unwrap_or_default();
        let mut policies = HashMap::new();
        for (r, spec) in propagation(set) {
            let hash = match old_policies.get(&r) {
                Some((old, h)) if *old == spec => *h,
                _ => json(spec),
            };
            policies.insert(r, hash);
        }
        let old_overrides: HashMap<OverrideId, (&crate::policy::types::OverrideSpec, u64)> = previous
            .map(|(set, hashes)| {
                overriding(set)
                    .into_iter()
                    .filter_map(|(id, spec)| hashes.overrides.get(&id).map(|h| (id, (spec, *h))))
                    .collect()
            })
            .unwrap_or_default();
        let mut overrides = HashMap::new();
        for (id, spec) in overriding(set) {
            let hash = match old_overrides.get(&id) {
                Some((old, h)) if *old == spec => *h,
                _ => json(spec),
            };
            overrides.insert(id, hash);
        }
        let interpreters = cache::key_of(&(
            serde_json::to_vec(&set.interpreter_objects.iter().map(|o| &o.object).collect::<Vec<_>>())
                .unwrap_or_default(),
            serde_json::to_vec(&set.workload_interpreters.iter().map(|w| (&w.meta.name, &w.spec)).collect::<Vec<_>>())
                .unwrap_or_default(),
        ));
        let before: HashMap<&ObjectKey, (&serde_json::Value, u64)> = previous
            .map(|(set, hashes)| {
                set.templates.iter().zip(&hashes.templates).map(|(t, h)| (&t.key, (&t.object, *h))).collect()
            })
            .unwrap_or_default();
        InputHashes {
            templates: set
                .templates
                .iter()
                .map(|t| match before.get(&t.key) {
                    Some((object, hash)) if **object == t.object => *hash,
                    _ => json(&t.object),
                })
                .collect(),
            policies,
            overrides,
            interpreters,
        }
    }
}

/// Serializing through a trait object (the hashes of differently typed specs).
mod erased_json {
    pub trait Ser {
        fn to_vec(&self) -> Vec<u8>;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_vec(&self) -> Vec<u8> {
            serde_json::to_vec(self).unwrap_or_default()
        }
    }
}

/// [`load_inputs_with`] the built-in profile only (no config).
pub fn load_inputs(policy_dir: &Path) -> Result<Inputs, Vec<LoadError>> {
    load_inputs_with(policy_dir, &Profiles::builtin())
}

/// Loads, defaults and validates the policy repository and builds the offline snapshots; a
/// policy naming a profile that `profiles` does not have is an error. Returns every problem
/// found, or inputs that are safe to act on.
pub fn load_inputs_with(policy_dir: &Path, profiles: &Profiles) -> Result<Inputs, Vec<LoadError>> {
    load_inputs_timed(policy_dir, profiles, &mut PhaseTimings::default())
}

/// [`load_inputs_with`], adding the time spent loading and building snapshots to `timings`.
pub fn load_inputs_timed(
    policy_dir: &Path,
    profiles: &Profiles,
    timings: &mut PhaseTimings,
) -> Result<Inputs, Vec<LoadError>> {
    load_inputs_cached(policy_dir, profiles, timings, None)
}

/// [`load_inputs_timed`], reusing (and updating) a parse cache of the repository's files.
pub fn load_inputs_cached(
    policy_dir: &Path,
    profiles: &Profiles,
    timings: &mut PhaseTimings,
    cache: Option<&mut ParseCache>,
) -> Result<Inputs, Vec<LoadError>> {
    let started = Instant::now();
    let (set, errors) = load_repository_cached(policy_dir, cache);
    build_inputs(set, errors, profiles, timings, started, None)
}

/// Validates the profiles `set` names and builds the offline snapshots and the hashes.
fn build_inputs(
    set: PolicySet,
    mut errors: Vec<LoadError>,
    profiles: &Profiles,
    timings: &mut PhaseTimings,
    started: Instant,
    previous: Option<&Inputs>,
) -> Result<Inputs, Vec<LoadError>> {
    errors.extend(profiles.validate(&set));
    let hashes = match errors.is_empty() {
        true => InputHashes::of_reusing(&set, previous.map(|p| (&*p.set, &*p.hashes))),
        false => InputHashes::default(),
    };
    timings.load += started.elapsed();
    let started = Instant::now();
    let mut snapshots = Vec::with_capacity(set.clusters.len());
    for c in &set.clusters {
        let polled = Instant::now();
        match offline_snapshot(c) {
            Ok(s) => snapshots.push(s),
            Err(e) => errors.push(e),
        }
        crate::metrics::record_poll(&c.meta.name, polled.elapsed(), crate::metrics::PollOutcome::Offline);
    }
    timings.poll += started.elapsed();
    let interpreters = Arc::new(InterpreterTable::from_set(&set));
    if errors.is_empty() {
        Ok(Inputs { set: Arc::new(set), snapshots, interpreters, hashes: Arc::new(hashes) })
    } else {
        Err(errors)
    }
}

/// Wall time of each phase of a pass. `load` and `poll` (snapshot building) are measured by
/// [`load_inputs_timed`]; `poll` also covers recording the snapshots; `record` is the store
/// writes after publishing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhaseTimings {
    /// Reading, defaulting and validating the policy repository.
    pub load: Duration,
    /// Building member snapshots and recording them in the store.
    pub poll: Duration,
    /// Filter, score, select, assign for every workload.
    pub schedule: Duration,
    /// Rendering manifests.
    pub render: Duration,
    /// Writing the output directory.
    pub publish: Duration,
    /// Recording decisions and history, and the store flush.
    pub record: Duration,
}

impl Inputs {
    /// Replaces the snapshots of live clusters by what the poller knows of them; a cluster
    /// that has not been polled successfully by this process falls back on its last live
    /// snapshot in the store ([`crate::members::apply_live`]).
    pub fn apply_live(&mut self, view: &LiveView, store: &Store) {
        crate::members::apply_live(&self.set, &mut self.snapshots, view, |name| match store.latest_snapshot(name) {
            Ok(found) => found.map(|(_, s)| s),
            Err(error) => {
                tracing::warn!(cluster = name, %error, "cannot read the last snapshot from the store");
                None
            }
        });
    }
}

/// Why a pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{} invalid input(s) in the policy repository", .0.len())]
    Invalid(Vec<LoadError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Publish(#[from] publish::PublishError),
    #[error("git mode: {0}")]
    Git(#[from] publish::git::GitError),
}

/// A workload that could not be (fully) placed this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub workload: ObjectKey,
    pub cluster: Option<String>,
    pub reason: String,
}

/// What one pass did.
#[derive(Debug, Clone, Default)]
pub struct ReconcileReport {
    pub trigger: String,
    pub workloads: usize,
    pub scheduled: usize,
    /// Workloads scheduled and rendered this pass (the others reused a cached decision).
    pub decided: usize,
    pub unschedulable: Vec<Problem>,
    pub render_failures: Vec<Problem>,
    pub removed_workloads: Vec<ObjectKey>,
    pub files_written: usize,
    pub files_removed: usize,
    pub files_unchanged: usize,
    /// Clusters the mass-deletion guard held this pass (their directories did not change).
    pub held_clusters: Vec<publish::HeldCluster>,
    /// The commit git mode made, if any.
    pub commit: Option<String>,
    pub new_snapshot_versions: usize,
    /// Replicas decided for live members but not running there yet, deducted this pass.
    pub assumed_replicas: i64,
    pub history_records: usize,
    pub duration_ms: u128,
    /// Time per phase (the caller adds `load` and `poll` from [`load_inputs_timed`]).
    pub phases: PhaseTimings,
}

impl ReconcileReport {
    /// One line for logs and systemd's STATUS=.
    pub fn summary(&self) -> String {
        let held = match self.held_clusters.len() {
            0 => String::new(),
            n => format!("; {n} cluster(s) held by the mass-deletion guard"),
        };
        let assumed = match self.assumed_replicas {
            0 => String::new(),
            n => format!("; {n} assumed replica(s) deducted from live members"),
        };
        format!(
            "{} workloads: {} scheduled, {} unschedulable, {} render failures; files: {} written, {} removed, {} unchanged{held}{assumed}; {} ms",
            self.workloads,
            self.scheduled,
            self.unschedulable.len(),
            self.render_failures.len(),
            self.files_written,
            self.files_removed,
            self.files_unchanged,
            self.duration_ms
        )
    }
}

/// The parts of a pass that stay the same between passes.
pub struct Reconciler {
    pub store: Store,
    /// What the reconciler is configured by: profiles (with `[model]` and `[cost]`) and the
    /// publish settings.
    settings: Settings,
    /// What this reconciler decided, recorded and published in earlier passes.
    cache: Mutex<cache::PassCache>,
    /// The parsed files of the policy repository and the last inputs built from them
    /// ([`Reconciler::load_inputs`]).
    load_cache: Mutex<LoadCache>,
}

/// What [`Reconciler::load_inputs`] keeps between calls.
#[derive(Default)]
struct LoadCache {
    parse: ParseCache,
    /// The inputs of the last successful load (offline snapshots), reused as they are while no
    /// file of the repository changes.
    last: Option<Inputs>,
}

impl Reconciler {
    /// A reconciler over `store`, configured by `settings` ([`Settings::builtin`]: the
    /// built-in profile only, default publish settings).
    pub fn new(store: Store, settings: Settings) -> Self {
        Reconciler {
            store,
            settings,
            cache: Mutex::new(cache::PassCache::default()),
            load_cache: Mutex::new(LoadCache::default()),
        }
    }

    /// What this reconciler is configured by.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// [`load_inputs_timed`] with this reconciler's profiles, reusing the parsed documents of
    /// files whose bytes did not change since the previous call. When no file was added,
    /// removed or changed ([`ParseCache::refresh`]: unchanged stats are trusted, except for
    /// files modified within a second of being read), the previous inputs are returned again
    /// (shared, not rebuilt): the set, its validation and the offline snapshots depend on
    /// nothing else (the profiles are this reconciler's).
    pub fn load_inputs(&self, policy_dir: &Path, timings: &mut PhaseTimings) -> Result<Inputs, Vec<LoadError>> {
        let mut cache = self.load_cache.lock().unwrap_or_else(|poisoned| {
            let mut g = poisoned.into_inner();
            *g = LoadCache::default();
            self.load_cache.clear_poison();
            g
        });
        let started = Instant::now();
        let (changed, io_errors) = cache.parse.refresh(policy_dir);
        if !changed
            && io_errors.is_empty()
            && let Some(last) = &cache.last
        {
            let inputs = last.clone();
            timings.load += started.elapsed();
            for c in &inputs.set.clusters {
                crate::metrics::record_poll(&c.meta.name, Duration::ZERO, crate::metrics::PollOutcome::Offline);
            }
            return Ok(inputs);
        }
        let previous = cache.last.take();
        let (set, errors) = load_repository_incremental(&mut cache.parse, io_errors);
        let inputs = build_inputs(set, errors, &self.settings.profiles, timings, started, previous.as_ref())?;
        cache.last = Some(inputs.clone());
        Ok(inputs)
    }

    /// Runs one pass over validated inputs and publishes to `output_dir`.
    ///
    /// A reconciler remembers what it decided, recorded and published ([`cache`]); a pass
    /// where nothing changed reuses that instead of scheduling, rendering and comparing every
    /// output file again. Every [`cache::FULL_CHECK_EVERY_MS`], on the first pass, on a
    /// `sighup` trigger and after a failed pass, the whole output directory is compared.
    pub fn reconcile(
        &self,
        inputs: &Inputs,
        output_dir: &Path,
        trigger: &str,
        now_ms: u64,
    ) -> Result<ReconcileReport, ReconcileError> {
        let mut guard = match self.cache.lock() {
            Ok(g) => g,
            Err(poisoned) => {
                // A pass panicked: what it left behind is not trusted.
                let mut g = poisoned.into_inner();
                *g = cache::PassCache::default();
                self.cache.clear_poison();
                g
            }
        };
        let result = self.reconcile_cached(&mut guard, inputs, output_dir, trigger, now_ms);
        if result.is_err() {
            *guard = cache::PassCache::default();
        }
        result
    }

    fn reconcile_cached(
        &self,
        cache: &mut cache::PassCache,
        inputs: &Inputs,
        output_dir: &Path,
        trigger: &str,
        now_ms: u64,
    ) -> Result<ReconcileReport, ReconcileError> {
        let started = Instant::now();
        let mut report = ReconcileReport { trigger: trigger.to_string(), ..Default::default() };
        let set = &inputs.set;
        let index = PolicyIndex::new(set);
        let full_check = cache.full_check_due(now_ms, trigger);
        if !cache.loaded {
            for p in self.store.placements()? {
                cache.placements.insert(p.workload.clone(), Arc::new(p));
            }
            // Decisions a previous process persisted, valid while their placement is the one
            // they were written with (their files are compared with the disk below).
            for stored in self.store.stored_decisions()? {
                if let Some(p) = cache.placements.get(&stored.workload)
                    && p.history_seq == stored.history_seq
                {
                    let workload = stored.workload.clone();
                    let restored = cache::CachedDecision::restored(stored, p);
                    cache.decisions.insert(workload, restored);
                }
            }
            cache.loaded = true;
        }

        // Snapshot: version what we know of every member, with its age and confidence.
        let phase = Instant::now();
        let model = self.settings.profiles.model().clone();
        let dims = Dimensions::new(&model);
        let mut snapshot_versions = BTreeMap::new();
        let mut fingerprints = Vec::with_capacity(inputs.snapshots.len());
        let mut freshness = Vec::with_capacity(inputs.snapshots.len());
        for snap in &inputs.snapshots {
            let (at_ms, fresh) = freshness_at(snap.freshness, now_ms, &model);
            let observed = Observed { at_ms, confidence: fresh.map_or(1.0, |f| f.confidence()) };
            let fingerprint = cache::fingerprint(snap);
            let ppm = fresh.map(|f| f.confidence_ppm);
            fingerprints.push(fingerprint);
            freshness.push(fresh);
            let (version, new) = match cache.snapshots.get(&snap.name) {
                Some(s)
                    if s.fingerprint == fingerprint
                        && s.confidence_ppm == ppm
                        && now_ms.saturating_sub(s.recorded_ms) < cache::LAST_SEEN_EVERY_MS =>
                {
                    (s.version, false)
                }
                _ => {
                    let mut snap = snap.clone();
                    snap.freshness = fresh;
                    let (version, new) = self.store.record_snapshot(&snap, observed)?;
                    let state = cache::SnapshotState { fingerprint, confidence_ppm: ppm, version, recorded_ms: now_ms };
                    cache.snapshots.insert(snap.name.clone(), state);
                    (version, new)
                }
            };
            if new {
                report.new_snapshot_versions += 1;
            }
            snapshot_versions.insert(snap.name.clone(), version);
        }
        // Assumed workloads: recent decisions a live member does not run yet, deducted from
        // the views in store order. The deducted views depend only on the snapshots' content
        // and on the recent placements (and their templates): when neither changed since the
        // last pass, the views it deducted are reused instead of replaying every deduction.
        let templates: HashMap<&ObjectKey, (usize, &Template)> =
            set.templates.iter().enumerate().map(|(i, t)| (&t.key, (i, t))).collect();
        let mut recent: Vec<&PlacementRecord> = cache
            .placements
            .values()
            .map(|p| &**p)
            .filter(|p| now_ms.saturating_sub(p.decided_at_ms) < model.assumed_ttl_ms)
            .collect();
        // In store order, as the store lists them.
        recent.sort_by_cached_key(|p| p.workload.store_key());
        // The per-replica requirements of each recent placement's template (interpreted again
        // only when the template or the interpreters changed).
        if cache.requirements.len() > templates.len() {
            cache.requirements.retain(|k, _| templates.contains_key(k));
        }
        let mut recent_requirements: Vec<Option<Arc<ReplicaRequirements>>> = Vec::with_capacity(recent.len());
        for p in &recent {
            let Some((i, t)) = templates.get(&p.workload).copied() else {
                recent_requirements.push(None);
                continue;
            };
            let source = cache::key_of(&(inputs.hashes.templates.get(i), inputs.hashes.interpreters));
            let req = match cache.requirements.get(&p.workload) {
                Some((k, req)) if *k == source => req.clone(),
                _ => {
                    let req = interpret(t.key.group(), &t.key.kind, &t.object, &inputs.interpreters)
                        .ok()
                        .map(|w| Arc::new(w.requirements));
                    cache.requirements.insert(p.workload.clone(), (source, req.clone()));
                    req
                }
            };
            recent_requirements.push(req);
        }
        let views_key = {
            let mut h = cache::KeyHasher::default();
            std::hash::Hash::hash(&fingerprints, &mut h);
            for (p, req) in recent.iter().zip(&recent_requirements) {
                std::hash::Hash::hash(&(&p.workload, &p.targets, req.as_deref()), &mut h);
            }
            std::hash::Hasher::finish(&h)
        };
        // The views move into the pass; they are put back (cloned just before this pass's
        // first deduction changes them, or moved at the end of the loop) under `views_key`.
        let mut unsaved_views = Some(views_key);
        let (mut snapshots, mut assumed) = match cache.views.take() {
            Some(v) if v.key == views_key && v.snapshots.len() == inputs.snapshots.len() => (v.snapshots, v.assumed),
            _ => {
                let mut snapshots = inputs.snapshots.clone();
                let mut assumed = Assumed::default();
                for (p, req) in recent.iter().zip(&recent_requirements) {
                    let Some(req) = req else { continue };
                    assumed.update(&mut snapshots, &p.workload, req, &p.targets, &dims);
                }
                (snapshots, assumed)
            }
        };
        // What is not content comes from this pass's inputs.
        for ((snap, input), fresh) in snapshots.iter_mut().zip(&inputs.snapshots).zip(freshness) {
            snap.freshness = fresh;
            snap.poll.clone_from(&input.poll);
        }
        report.assumed_replicas = assumed.total();
        report.phases.poll += phase.elapsed();

        // What every decision of this pass shares: the fleet's static facts (per confidence
        // threshold, computed on first use) and each cluster's state (snapshot version, what
        // the scheduler reads of its freshness).
        let mut fleet_statics: Vec<(u64, u64)> = Vec::new();
        let cluster_states: Vec<u64> = snapshots
            .iter()
            .map(|s| cache::key_of(&(&s.name, snapshot_versions.get(&s.name), cache::freshness_key(s))))
            .collect();
        let interpreters_key = inputs.hashes.interpreters;
        let pass = Pass::new(&snapshots, &snapshot_versions, &self.store)?;

        // Schedule and render every claimed template (or reuse the decision).
        let mut order: Vec<ObjectKey> = Vec::new();
        let mut fresh: BTreeSet<ObjectKey> = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut notes: BTreeMap<ObjectKey, Vec<String>> = BTreeMap::new();
        // propagateDeps: dependency → the claimed workloads that reference it.
        let required_by =
            dependency_map_indexed(inputs, &index, |t| cache.placements.get(&t.key).and_then(|p| p.policy.clone()));
        // Workloads first, then their dependencies (which take the union of their
        // dependents' clusters); dependencies never have dependencies of their own.
        type Indexed<'a> = Vec<(usize, &'a Template)>;
        let (deps, workloads): (Indexed<'_>, Indexed<'_>) =
            set.templates.iter().enumerate().partition(|(_, t)| required_by.contains_key(&t.key));
        let mut targets_of: BTreeMap<ObjectKey, (BTreeSet<String>, PolicyRef)> = BTreeMap::new();
        let empty_hash = fnv1a64(&[]);
        for (position, t) in workloads.into_iter().chain(deps) {
            let prev = cache.placements.get(&t.key).cloned();
            let claim = index.claim_with_previous(t, prev.as_ref().and_then(|p| p.policy.as_ref()));
            let policy = claim.as_ref().and_then(|c| index.propagation_policy(&c.policy).map(|p| (c, p)));
            let required: Vec<(ObjectKey, BTreeSet<String>, PolicyRef)> = required_by
                .get(&t.key)
                .into_iter()
                .flatten()
                .filter_map(|k| targets_of.get(k).map(|(c, p)| (k.clone(), c.clone(), p.clone())))
                .collect();
            let default_placement = crate::policy::types::Placement::default();
            let (policy_ref, placement, fw) = match policy {
                // Unknown profiles were rejected when loading.
                Some((claim, policy)) => (
                    Some(&claim.policy),
                    &policy.spec.placement,
                    self.settings
                        .profiles
                        .for_policy(&policy.meta.annotations)
                        .unwrap_or_else(|| self.settings.profiles.default_profile()),
                ),
                None if !required.is_empty() => (None, &default_placement, self.settings.profiles.default_profile()),
                None => continue,
            };
            let hashes = (
                inputs.hashes.templates.get(position).copied().unwrap_or(empty_hash),
                policy_ref.and_then(|r| inputs.hashes.policies.get(r)).copied().unwrap_or(empty_hash),
            );
            let overrides = render::overrides::applicable_indexed(&index, t);
            let overrides_key: Vec<u64> = overrides
                .iter()
                .map(|o| {
                    let id = (o.kind, o.policy.meta.namespace.clone(), o.policy.meta.name.clone());
                    inputs.hashes.overrides.get(&id).copied().unwrap_or(empty_hash)
                })
                .collect();
            let min_confidence = fw.settings.model.min_confidence;
            let fleet_static = match fleet_statics.iter().find(|(bits, _)| *bits == min_confidence.to_bits()) {
                Some((_, k)) => *k,
                None => {
                    let k = cache::fleet_static_key(&snapshots, min_confidence);
                    fleet_statics.push((min_confidence.to_bits(), k));
                    k
                }
            };
            let key = cache::key_of(&(
                (hashes, &t.source.file, t.source.document, policy_ref, fleet_static, interpreters_key),
                (prev.as_ref().map(|p| (&p.targets, &p.affinity_name, &p.files, &p.policy)), &fw.name, &required),
                overrides_key,
            ));
            let state_of = |clusters: &[usize]| cache::clusters_state(clusters, &cluster_states, &snapshots, &assumed);
            let mut hit = cache.decisions.get(&t.key).is_some_and(|c| c.key == key && state_of(&c.clusters) == c.state);
            // A decision restored from the store holds its files by hash only: a full check
            // reads them from the disk, and decides again when one is missing or differs.
            if hit
                && full_check
                && let Some(c) = cache.decisions.get_mut(&t.key)
                && !c.rendered
            {
                match c.decided.files_on_disk(output_dir) {
                    true => c.decided.inputs = decision_inputs(prev.as_deref(), hashes, pass.versions, &fw.name),
                    false => hit = false,
                }
            }
            if !hit {
                if !cache.blobs.contains(&hashes.0) {
                    self.store.put_blob(&serde_json::to_vec(&t.object).unwrap_or_default())?;
                    cache.blobs.insert(hashes.0);
                }
                if !cache.blobs.contains(&hashes.1) {
                    let policy_json = policy_ref
                        .and_then(|r| index.propagation_policy(r))
                        .map(|p| serde_json::to_vec(&p.spec).unwrap_or_default())
                        .unwrap_or_default();
                    self.store.put_blob(&policy_json)?;
                    cache.blobs.insert(hashes.1);
                }
                let decided = self.decide(
                    t,
                    policy_ref,
                    placement,
                    fw,
                    prev.as_deref(),
                    (inputs, &snapshots),
                    &pass,
                    &required,
                    hashes,
                    &overrides,
                )?;
                report.phases.schedule += decided.schedule_time;
                report.phases.render += decided.render_time;
                report.decided += 1;
                // The clusters whose state the decision read: those that passed the filters
                // (all of them when ordered affinity terms may have been tried in turn).
                let clusters: Vec<usize> = if placement.cluster_affinities.is_empty() {
                    let mut c: Vec<usize> = decided
                        .record
                        .result
                        .feasible_clusters()
                        .into_iter()
                        .filter_map(|n| pass.positions.get(n).copied())
                        .collect();
                    c.sort_unstable();
                    c
                } else {
                    (0..snapshots.len()).collect()
                };
                let state = state_of(&clusters);
                let entry = cache::CachedDecision {
                    key,
                    clusters,
                    state,
                    decided,
                    summary_item: None,
                    rendered: true,
                    persisted_seq: None,
                };
                cache.decisions.insert(t.key.clone(), entry);
                fresh.insert(t.key.clone());
            }
            let Some(decided) = cache.decisions.get(&t.key).map(|c| &c.decided) else { continue };
            seen.insert(t.key.clone());
            order.push(t.key.clone());
            report.workloads += 1;
            if decided.scheduled {
                report.scheduled += 1;
                // Later workloads of this pass see this decision's replicas as assumed.
                if let Some(req) = &decided.requirements {
                    let plan = assumed.plan(&snapshots, &t.key, &decided.record.targets);
                    if !plan.is_empty() {
                        if let Some(key) = unsaved_views.take() {
                            let views = (snapshots.clone(), assumed.clone());
                            cache.views = Some(cache::DeductedViews { key, snapshots: views.0, assumed: views.1 });
                        }
                        assumed.apply(&mut snapshots, &t.key, req, plan, &dims);
                    }
                }
            }
            if let Some(p) = &decided.record.policy {
                targets_of.insert(t.key.clone(), (decided.record.targets.keys().cloned().collect(), p.clone()));
            }
            for p in &decided.problems {
                if let Some(cluster) = &p.cluster {
                    let note = format!("render failed on {cluster}, previous file kept: {}", p.reason);
                    notes.entry(t.key.clone()).or_default().push(note);
                    report.render_failures.push(p.clone());
                } else {
                    report.unschedulable.push(p.clone());
                }
            }
        }
        if let Some(key) = unsaved_views.take() {
            let (snapshots, assumed) = (std::mem::take(&mut snapshots), std::mem::take(&mut assumed));
            cache.views = Some(cache::DeductedViews { key, snapshots, assumed });
        }
        let removed: Vec<ObjectKey> = {
            let mut r: Vec<&ObjectKey> = cache.placements.keys().filter(|k| !seen.contains(*k)).collect();
            r.sort_by_cached_key(|k| k.store_key());
            r.into_iter().cloned().collect()
        };
        cache.decisions.retain(|k, _| seen.contains(k));

        // The summary, rebuilt only when a decision changed, from per-workload fragments.
        let summary = match &cache.summary {
            Some(s) if fresh.is_empty() && removed.is_empty() => s.clone(),
            _ => {
                for k in &order {
                    if let Some(c) = cache.decisions.get_mut(k)
                        && c.summary_item.is_none()
                    {
                        c.summary_item = Some(summary_item(&c.decided.record));
                    }
                }
                let items: Vec<&str> = order
                    .iter()
                    .filter_map(|k| cache.decisions.get(k).and_then(|c| c.summary_item.as_deref()))
                    .collect();
                summary_from_items(&items)
            }
        };
        cache.summary = Some(summary.clone());

        // Which cluster directories need publishing: all on a full check, else those whose
        // desired files (paths and content hashes) differ from what this process published.
        let mut digests: HashMap<&str, (u64, usize)> =
            set.clusters.iter().map(|c| (c.meta.name.as_str(), (0u64, 0usize))).collect();
        for k in &order {
            let Some(d) = cache.decisions.get(k).map(|c| &c.decided) else { continue };
            for ((cluster, (path, _)), hash) in d.files.iter().zip(&d.file_hashes) {
                if let Some(e) = digests.get_mut(cluster.as_str()) {
                    e.0 = e.0.wrapping_add(cache::file_digest(path, *hash));
                    e.1 += 1;
                }
            }
            for (cluster, path) in &d.keep {
                if let Some(e) = digests.get_mut(cluster.as_str()) {
                    e.0 = e.0.wrapping_add(cache::keep_digest(path));
                }
            }
        }
        let dirty: BTreeSet<&str> = digests
            .iter()
            .filter(|(c, (digest, _))| full_check || cache.published.get(**c) != Some(digest))
            .map(|(c, _)| *c)
            .collect();
        let mut plan = PublishPlan { clusters: BTreeMap::new(), summary: None };
        for c in &dirty {
            plan.clusters.insert((*c).to_string(), ClusterFiles::default());
        }
        // Files of restored decisions (known by hash, checked on the disk) are kept as they are.
        let mut restored_files = 0;
        for k in &order {
            let Some(c) = cache.decisions.get(k) else { continue };
            let d = &c.decided;
            for (cluster, (path, content)) in &d.files {
                if let Some(cf) = plan.clusters.get_mut(cluster) {
                    if c.rendered {
                        cf.files.insert(path.clone(), content.clone());
                    } else {
                        cf.keep.insert(path.clone());
                        restored_files += 1;
                    }
                }
            }
            for (cluster, path) in &d.keep {
                if let Some(cf) = plan.clusters.get_mut(cluster) {
                    cf.keep.insert(path.clone());
                }
            }
        }
        let skipped_files: usize =
            digests.iter().filter(|(c, _)| !dirty.contains(*c)).map(|(_, (_, files))| files + 1).sum();
        let summary_unchanged = !full_check && cache.published_summary.as_deref() == Some(summary.as_str());
        if !summary_unchanged {
            plan.summary = Some(summary.clone());
        }

        // Publish, then record: a crash in between re-derives the same output next time.
        let phase = Instant::now();
        let published = publish::publish_guarded(output_dir, &plan, &self.settings.publish.guard)?;
        report.phases.publish += phase.elapsed();
        let phase = Instant::now();
        report.files_written = published.written.len();
        report.files_removed = published.removed.len();
        report.files_unchanged = published.unchanged + skipped_files + restored_files + usize::from(summary_unchanged);
        report.held_clusters = published.held;
        if full_check {
            cache.published.clear();
            cache.last_full_check_ms = Some(now_ms);
        }
        for c in plan.clusters.keys() {
            match (report.held_clusters.iter().any(|h| &h.cluster == c), digests.get(c.as_str())) {
                (false, Some((digest, _))) => cache.published.insert(c.clone(), *digest),
                _ => cache.published.remove(c),
            };
        }
        if plan.summary.is_some() {
            cache.published_summary = Some(summary);
        }
        for h in &report.held_clusters {
            crate::metrics::record_hold(&h.cluster);
        }
        let held: BTreeMap<&str, &publish::HeldCluster> =
            report.held_clusters.iter().map(|h| (h.cluster.as_str(), h)).collect();
        let held_notes = |files: &[&BTreeMap<String, String>]| -> Vec<String> {
            let clusters: BTreeSet<&str> = files.iter().flat_map(|f| f.keys().map(String::as_str)).collect();
            clusters.into_iter().filter_map(|c| held.get(c)).map(|h| h.to_string()).collect()
        };

        // Changed decisions are written in batches of `RECORD_BATCH`, one transaction each
        // (sequence numbers and records as one-by-one writes in this order would give them);
        // the cache learns of a record once its batch is written. Each workload's entries are
        // read only by its own iteration, so deferring them changes nothing.
        let mut batch: Vec<(HistoryRecord, PlacementRecord)> = Vec::new();
        let mut pending: Vec<(ObjectKey, cache::LastHistory)> = Vec::new();
        let mut recorded = 0;
        for key in &order {
            let Some(d) = cache.decisions.get(key).map(|c| &c.decided) else { continue };
            let prev = cache.placements.get(key).cloned();
            let mut notes = notes.remove(key).unwrap_or_default();
            let mut with_files = vec![&d.record.files];
            with_files.extend(prev.as_ref().map(|p| &p.files));
            notes.extend(held_notes(&with_files));
            if !cache.history.contains_key(key) {
                let last = self.store.last_history(key)?.map(|h| cache::LastHistory {
                    template_hash: h.inputs.template_hash,
                    policy_hash: h.inputs.policy_hash,
                    notes: h.notes,
                });
                cache.history.insert(key.clone(), last);
            }
            let last = cache.history.get(key).and_then(Option::as_ref);
            // A reused decision has the inputs and result of the stored placement (its key
            // covers them); only its notes can differ.
            let changed = match &prev {
                None => true,
                Some(_) if !fresh.contains(key) => false,
                Some(p) => {
                    p.result != d.record.result
                        || p.targets != d.record.targets
                        || p.files != d.record.files
                        || p.policy != d.record.policy
                        || p.affinity_name != d.record.affinity_name
                        || last.is_none_or(|h| {
                            h.template_hash != d.inputs.template_hash || h.policy_hash != d.inputs.policy_hash
                        })
                }
            } || match last {
                Some(h) => h.notes != notes,
                None => !notes.is_empty(),
            };
            if !changed {
                continue;
            }
            let mut record = d.record.clone();
            record.decided_at_ms = now_ms;
            record.history_seq = 0;
            let history = HistoryRecord {
                seq: 0,
                at_ms: now_ms,
                trigger: trigger.to_string(),
                workload: record.workload.clone(),
                policy: record.policy.clone(),
                inputs: d.inputs.clone(),
                result: record.result.clone(),
                notes: notes.clone(),
            };
            let last =
                cache::LastHistory { template_hash: d.inputs.template_hash, policy_hash: d.inputs.policy_hash, notes };
            pending.push((key.clone(), last));
            batch.push((history, record));
            if batch.len() >= RECORD_BATCH {
                recorded += self.record_batch(&mut batch, &mut pending, cache)?;
            }
        }
        recorded += self.record_batch(&mut batch, &mut pending, cache)?;
        report.history_records += recorded;

        // Workloads that are no longer propagated: their files were not planned, so the
        // publisher removed them; record why.
        for key in removed {
            let Some(old) = cache.placements.get(&key).cloned() else { continue };
            let notes: Vec<String> =
                std::iter::once("template removed from the policy repository or no longer claimed by a policy".into())
                    .chain(held_notes(&[&old.files]))
                    .collect();
            let history = HistoryRecord {
                seq: 0,
                at_ms: now_ms,
                trigger: trigger.to_string(),
                workload: old.workload.clone(),
                policy: old.policy.clone(),
                inputs: DecisionInputs {
                    template_hash: 0,
                    policy_hash: 0,
                    snapshot_versions: pass.versions,
                    previous: old.targets.iter().map(|(k, v)| (k.clone(), v.unwrap_or(0))).collect(),
                    previous_affinity: old.affinity_name.clone(),
                    profile: "karmada-default".into(),
                },
                result: ScheduleResult {
                    outcome: Outcome::Scheduled { targets: BTreeMap::new() },
                    ..ScheduleResult::unschedulable("")
                },
                notes: notes.clone(),
            };
            self.store.append_history(history)?;
            self.store.remove_placement(&old.workload)?;
            cache.placements.remove(&key);
            cache.history.insert(key.clone(), Some(cache::LastHistory { template_hash: 0, policy_hash: 0, notes }));
            report.removed_workloads.push(key);
            report.history_records += 1;
        }
        // What a restart needs to reuse these decisions, with the placement's `history_seq`
        // (flushed with the placements; an entry whose seq is not its placement's is ignored).
        let mut stored = Vec::new();
        for key in &order {
            let (Some(c), Some(p)) = (cache.decisions.get_mut(key), cache.placements.get(key)) else { continue };
            if c.persisted_seq != Some(p.history_seq) {
                stored.push(c.to_stored(key, p.history_seq));
                c.persisted_seq = Some(p.history_seq);
            }
        }
        self.store.put_stored_decisions(&stored)?;
        self.store.remove_stored_decisions(&report.removed_workloads)?;
        self.store.flush()?;
        report.phases.record += phase.elapsed();
        if let Some(git) = &self.settings.publish.git {
            report.commit = publish::git::commit_and_push(output_dir, git, trigger)?.commit;
        }
        report.duration_ms = started.elapsed().as_millis();
        Ok(report)
    }

    /// Writes the batched changed decisions of a pass in one transaction
    /// ([`Store::record_decisions`]) and then tells the cache: each workload's placement (with
    /// its assigned history sequence number) and its last history. Empties both vectors;
    /// returns how many decisions it recorded.
    fn record_batch(
        &self,
        batch: &mut Vec<(HistoryRecord, PlacementRecord)>,
        pending: &mut Vec<(ObjectKey, cache::LastHistory)>,
        cache: &mut cache::PassCache,
    ) -> Result<usize, ReconcileError> {
        if batch.is_empty() {
            return Ok(0);
        }
        let recorded = batch.len();
        let seqs = self.store.record_decisions(batch)?;
        for (((_, mut record), (key, last)), seq) in batch.drain(..).zip(pending.drain(..)).zip(seqs) {
            record.history_seq = seq;
            cache.history.insert(key.clone(), Some(last));
            cache.placements.insert(key, Arc::new(record));
        }
        Ok(recorded)
    }

    /// Schedules and renders one template. `policy_ref` is None for a dependency no policy
    /// claims (it goes where `required` — its dependents and their clusters — sends it).
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &self,
        t: &Template,
        policy_ref: Option<&PolicyRef>,
        placement: &crate::policy::types::Placement,
        fw: &Framework,
        prev: Option<&PlacementRecord>,
        (inputs, snapshots): (&Inputs, &[ClusterSnapshot]),
        pass: &Pass,
        required: &[(ObjectKey, BTreeSet<String>, PolicyRef)],
        (template_hash, policy_hash): (u64, u64),
        overrides: &[render::ApplicableOverride<'_>],
    ) -> Result<Decided, StoreError> {
        let previous: BTreeMap<String, i32> =
            prev.map(|p| p.targets.iter().map(|(k, v)| (k.clone(), v.unwrap_or(0))).collect()).unwrap_or_default();
        let previous_affinity = prev.and_then(|p| p.affinity_name.clone());
        let dec_inputs = decision_inputs(prev, (template_hash, policy_hash), pass.versions, &fw.name);
        let keep_previous = |reason: String, result: ScheduleResult| -> Decided {
            let keep: Vec<(String, String)> =
                prev.map(|p| p.files.iter().map(|(c, f)| (c.clone(), f.clone())).collect()).unwrap_or_default();
            Decided {
                record: PlacementRecord {
                    workload: t.key.clone(),
                    policy: policy_ref.cloned(),
                    result,
                    targets: prev.map(|p| p.targets.clone()).unwrap_or_default(),
                    affinity_name: previous_affinity.clone(),
                    files: prev.map(|p| p.files.clone()).unwrap_or_default(),
                    history_seq: 0,
                    decided_at_ms: 0,
                },
                inputs: dec_inputs.clone(),
                files: Vec::new(),
                file_hashes: Vec::new(),
                keep,
                problems: vec![Problem { workload: t.key.clone(), cluster: None, reason }],
                scheduled: false,
                requirements: None,
                schedule_time: Duration::ZERO,
                render_time: Duration::ZERO,
            }
        };

        let workload: Workload = match interpret(t.key.group(), &t.key.kind, &t.object, &inputs.interpreters) {
            Ok(w) => w,
            Err(e) => {
                let reason = format!("cannot read the workload: {e}");
                let result = ScheduleResult::unschedulable(reason.clone());
                return Ok(keep_previous(reason, result));
            }
        };
        let req = ScheduleRequest {
            key: &t.key,
            uid: t.meta.uid.as_deref(),
            workload: &workload,
            placement,
            previous: &previous,
            previous_affinity: previous_affinity.as_deref(),
        };
        let scheduling = Instant::now();
        let mut result = match policy_ref {
            Some(_) => schedule::schedule_in(&pass.fleet, fw, &req, snapshots),
            None => attached(&pass.fleet),
        };
        let schedule_time = scheduling.elapsed();
        let mut targets = match &result.outcome {
            Outcome::Scheduled { targets } => targets.clone(),
            Outcome::Unschedulable { reason } => {
                let reason = reason.clone();
                return Ok(Decided { schedule_time, ..keep_previous(reason, result) });
            }
        };
        // propagateDeps: the union with the clusters of the workloads that need this object.
        if !required.is_empty() {
            add_required(&mut result, &mut targets, required, &pass.fleet);
        }
        let Some(render_policy) = policy_ref.or_else(|| required.first().map(|(_, _, p)| p)) else {
            let result = ScheduleResult::unschedulable("not claimed by a policy");
            return Ok(keep_previous("not claimed by a policy".into(), result));
        };
        let rendering = Instant::now();

        // Job completions follow the division of parallelism.
        let completions: BTreeMap<String, i32> = match workload.completions {
            Some(c) if Strategy::of(placement) != Strategy::Duplicated => {
                let par: BTreeMap<String, i32> =
                    targets.iter().filter_map(|(k, v)| v.map(|v| (k.clone(), v))).collect();
                assign::split_completions(c, &par, assign::TieBreak::for_uid(t.meta.uid.as_deref()))
            }
            _ => BTreeMap::new(),
        };

        let path = render::object_path(&t.key);
        let mut files = Vec::new();
        let mut file_hashes = Vec::new();
        let mut keep = Vec::new();
        let mut file_map = BTreeMap::new();
        let mut problems = Vec::new();
        for (cluster, replicas) in &targets {
            let Some(snapshot) = pass.positions.get(cluster).and_then(|i| snapshots.get(*i)) else { continue };
            let input = RenderInput {
                template: t,
                workload: &workload,
                policy: render_policy,
                replicas: *replicas,
                completions: match workload.completions {
                    Some(c) if completions.is_empty() => Some(c),
                    Some(_) => Some(completions.get(cluster).copied().unwrap_or(0)),
                    None => None,
                },
                cluster: snapshot,
                overrides,
            };
            match render::render(&input) {
                Ok(content) => {
                    file_hashes.push(fnv1a64(content.as_bytes()));
                    files.push((cluster.clone(), (path.clone(), content)));
                    file_map.insert(cluster.clone(), path.clone());
                }
                Err(e) => {
                    if let Some(old) = prev.and_then(|p| p.files.get(cluster)) {
                        keep.push((cluster.clone(), old.clone()));
                        file_map.insert(cluster.clone(), old.clone());
                    }
                    problems.push(Problem {
                        workload: t.key.clone(),
                        cluster: Some(cluster.clone()),
                        reason: e.to_string(),
                    });
                }
            }
        }
        Ok(Decided {
            record: PlacementRecord {
                workload: t.key.clone(),
                policy: policy_ref.cloned(),
                affinity_name: result.affinity_name.clone(),
                result,
                targets,
                files: file_map,
                history_seq: 0,
                decided_at_ms: 0,
            },
            inputs: dec_inputs,
            files,
            file_hashes,
            keep,
            problems,
            scheduled: true,
            requirements: workload.replicas.is_some().then(|| workload.requirements.clone()),
            schedule_time,
            render_time: rendering.elapsed(),
        })
    }
}

/// Reason recorded on a cluster that receives a dependency because a workload needs it.
pub const REQUIRED_BY_PREFIX: &str = "propagateDeps: required by ";

/// Dependencies (templates in the repository) → the workloads that pull them: templates
/// claimed by a policy with `propagateDeps: true` whose pod template references them. The
/// claim uses the stored previous claimer (`previous`) like the pass does.
pub fn dependency_map(
    inputs: &Inputs,
    previous: impl Fn(&Template) -> Option<PlacementRecord>,
) -> BTreeMap<ObjectKey, Vec<ObjectKey>> {
    dependency_map_indexed(inputs, &PolicyIndex::new(&inputs.set), |t| previous(t).and_then(|p| p.policy))
}

/// [`dependency_map`] over an index of the set, with the previous claimer of each template.
fn dependency_map_indexed(
    inputs: &Inputs,
    index: &PolicyIndex<'_>,
    previous_policy: impl Fn(&Template) -> Option<PolicyRef>,
) -> BTreeMap<ObjectKey, Vec<ObjectKey>> {
    let set = &inputs.set;
    let any_deps =
        set.propagation_policies.iter().chain(&set.cluster_propagation_policies).any(|p| p.spec.propagate_deps);
    let mut out: BTreeMap<ObjectKey, Vec<ObjectKey>> = BTreeMap::new();
    if !any_deps {
        return out;
    }
    for t in &set.templates {
        let prev = previous_policy(t);
        let Some(claim) = index.claim_with_previous(t, prev.as_ref()) else {
            continue;
        };
        if !index.propagation_policy(&claim.policy).is_some_and(|p| p.spec.propagate_deps) {
            continue;
        }
        for dep in crate::model::deps::dependencies(&t.key, &t.object, &inputs.interpreters) {
            if dep != t.key && set.template(&dep).is_some() {
                out.entry(dep).or_default().push(t.key.clone());
            }
        }
    }
    out
}

/// The "schedule" of a dependency no policy claims: every cluster feasible, none selected yet.
fn attached(fleet: &Fleet) -> ScheduleResult {
    ScheduleResult {
        outcome: Outcome::Scheduled { targets: BTreeMap::new() },
        verdicts: fleet
            .names()
            .iter()
            .map(|n| ClusterVerdict {
                feasible: true,
                reasons: vec!["not claimed by a policy: goes only where a workload needs it".into()],
                ..ClusterVerdict::rejected(n.clone(), Vec::new())
            })
            .collect(),
        rejected: Vec::new(),
        universe: fleet.universe(),
        affinity_name: None,
    }
}

/// Adds the clusters of the dependents to a dependency's targets (Karmada merges a binding's
/// `requiredBy` clusters into its own result), noting which workload pulled it. A cluster the
/// dependency's own filters rejected gets a full verdict (rejected, selected) of its own.
fn add_required(
    result: &mut ScheduleResult,
    targets: &mut BTreeMap<String, Option<i32>>,
    required: &[(ObjectKey, BTreeSet<String>, PolicyRef)],
    fleet: &Fleet,
) {
    for (dependent, clusters, _) in required {
        for c in clusters {
            let Some(p) = fleet.position(c) else { continue };
            targets.entry(c.clone()).or_insert(None);
            let i = match result.verdicts.binary_search_by(|v| v.name.as_str().cmp(c)) {
                Ok(i) => i,
                Err(i) => {
                    let Some(g) = result.rejected.iter_mut().find(|g| g.clusters.contains(p)) else { continue };
                    g.clusters.remove(p);
                    let verdict = ClusterVerdict::rejected(c.clone(), g.reasons.clone());
                    result.verdicts.insert(i, verdict);
                    i
                }
            };
            let v = &mut result.verdicts[i];
            v.selected = true;
            v.reasons.push(format!("{REQUIRED_BY_PREFIX}{dependent}"));
        }
    }
    result.rejected.retain(|g| !g.clusters.is_empty());
    result.outcome = Outcome::Scheduled { targets: targets.clone() };
}

/// What the pass shares with every decision.
struct Pass {
    /// Position of each cluster in the pass's snapshots.
    positions: HashMap<String, usize>,
    /// The scheduler's fleet context (clusters in name order, filter memo).
    fleet: Fleet,
    /// Blob hash of the pass's cluster → snapshot version map ([`Store::put_versions`]).
    versions: u64,
}

impl Pass {
    /// Builds the fleet and stores the pass's versions map and cluster names as blobs (a no-op
    /// when a previous pass stored the same ones).
    fn new(snapshots: &[ClusterSnapshot], versions: &BTreeMap<String, u64>, store: &Store) -> Result<Self, StoreError> {
        let fleet = Fleet::new(snapshots);
        if !fleet.is_empty() {
            store.put_universe(fleet.names())?;
        }
        Ok(Pass {
            positions: snapshots.iter().enumerate().map(|(i, s)| (s.name.clone(), i)).collect(),
            versions: store.put_versions(versions)?,
            fleet,
        })
    }
}

/// One workload's decision and rendered files (kept by the [`cache`] between passes).
pub(crate) struct Decided {
    record: PlacementRecord,
    inputs: DecisionInputs,
    files: Vec<(String, (String, String))>,
    /// FNV-1a 64 of each file's content, in the order of `files`.
    file_hashes: Vec<u64>,
    keep: Vec<(String, String)>,
    problems: Vec<Problem>,
    scheduled: bool,
    /// Per-replica requirements of a scheduled workload (for assumed replicas).
    requirements: Option<ReplicaRequirements>,
    schedule_time: Duration,
    render_time: Duration,
}

impl Decided {
    /// A decision restored from the store ([`cache::CachedDecision::restored`]): the record is
    /// the stored placement as a fresh decision gives it (no history seq, no time); the
    /// inputs are set when it is reused.
    pub(crate) fn restored(
        placement: &PlacementRecord,
        files: Vec<(String, (String, String))>,
        file_hashes: Vec<u64>,
        keep: Vec<(String, String)>,
        problems: Vec<Problem>,
        (scheduled, requirements): (bool, Option<ReplicaRequirements>),
    ) -> Self {
        let record = PlacementRecord { history_seq: 0, decided_at_ms: 0, ..placement.clone() };
        let inputs = decision_inputs(None, (0, 0), 0, "");
        Decided {
            record,
            inputs,
            files,
            file_hashes,
            keep,
            problems,
            scheduled,
            requirements,
            schedule_time: Duration::ZERO,
            render_time: Duration::ZERO,
        }
    }

    /// Whether every rendered file is on the disk under `output_dir` with its content hash.
    fn files_on_disk(&self, output_dir: &Path) -> bool {
        self.files.iter().zip(&self.file_hashes).all(|((cluster, (path, _)), hash)| {
            std::fs::read(output_dir.join(cluster).join(path)).is_ok_and(|bytes| fnv1a64(&bytes) == *hash)
        })
    }
}

/// The inputs a decision records: template and policy blob hashes, the pass's versions map,
/// the previous targets and affinity term, the profile.
fn decision_inputs(
    prev: Option<&PlacementRecord>,
    (template_hash, policy_hash): (u64, u64),
    snapshot_versions: u64,
    profile: &str,
) -> DecisionInputs {
    DecisionInputs {
        template_hash,
        policy_hash,
        snapshot_versions,
        previous: prev
            .map(|p| p.targets.iter().map(|(k, v)| (k.clone(), v.unwrap_or(0))).collect())
            .unwrap_or_default(),
        previous_affinity: prev.and_then(|p| p.affinity_name.clone()),
        profile: profile.to_string(),
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

/// Replicas deducted per (workload, live cluster) this pass.
#[derive(Debug, Default, Clone)]
pub struct Assumed {
    deducted: HashMap<ObjectKey, HashMap<String, i64>>,
    /// A running digest of every deduction so far: equal digests mean equal deductions.
    pub key: u64,
    /// The same per cluster: equal digests mean equal deductions from that cluster's view, so
    /// the view a decision sees of it is covered by its cache key.
    pub per_cluster: HashMap<String, u64>,
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
        let plan = self.plan(snapshots, workload, targets);
        self.apply(snapshots, workload, req, plan, dims);
    }

    /// What [`Assumed::update`] would deduct, without changing anything: per target live
    /// cluster where more is pending than was deducted, (position, cluster, pending, deducted).
    pub fn plan<'t>(
        &self,
        snapshots: &[ClusterSnapshot],
        workload: &ObjectKey,
        targets: &'t BTreeMap<String, Option<i32>>,
    ) -> Vec<(usize, &'t String, i64, i64)> {
        let mut owner = None;
        let mut plan = Vec::new();
        for (cluster, replicas) in targets {
            let Some(r) = replicas else { continue };
            // The pass's snapshots are sorted by name (as the set's clusters).
            let found = match snapshots.binary_search_by(|s| s.name.as_str().cmp(cluster)) {
                Ok(i) => Some(i),
                Err(_) => snapshots.iter().position(|s| &s.name == cluster),
            };
            let Some((i, snap)) = found.and_then(|i| snapshots.get(i).map(|s| (i, s))) else { continue };
            let Some(pods) = snap.pods.as_ref().filter(|_| snap.is_live()) else { continue };
            let owner = owner.get_or_insert_with(|| assumed::Owner::of(workload));
            let want = assumed::pending(i64::from(*r), owner.observed(pods));
            let done = self.deducted.get(workload).and_then(|m| m.get(cluster)).copied().unwrap_or(0);
            if want > done {
                plan.push((i, cluster, want, done));
            }
        }
        plan
    }

    /// Applies a [`Assumed::plan`].
    pub fn apply(
        &mut self,
        snapshots: &mut [ClusterSnapshot],
        workload: &ObjectKey,
        req: &ReplicaRequirements,
        plan: Vec<(usize, &String, i64, i64)>,
        dims: &Dimensions,
    ) {
        for (i, cluster, want, done) in plan {
            let Some(snap) = snapshots.get_mut(i) else { continue };
            assumed::deduct(snap, req, want - done, dims);
            self.deducted.entry(workload.clone()).or_default().insert(cluster.clone(), want);
            self.key = cache::key_of(&(self.key, workload, cluster, want, req));
            let own = self.per_cluster.entry(cluster.clone()).or_insert(0);
            *own = cache::key_of(&(*own, workload, want, req));
        }
    }

    /// The digest of the deductions from one cluster's view so far (0: none).
    pub fn of_cluster(&self, cluster: &str) -> u64 {
        self.per_cluster.get(cluster).copied().unwrap_or(0)
    }

    /// Replicas deducted in all.
    pub fn total(&self) -> i64 {
        self.deducted.values().flat_map(HashMap::values).sum()
    }
}

/// `OUT/.fedsched/placements.json`: the decisions in machine-readable form. Deterministic
/// (no times), so an unchanged fleet does not rewrite it. The reference the pass's
/// [`summary_from_items`] must equal.
#[cfg(test)]
fn summary_json<'a>(placements: impl Iterator<Item = &'a PlacementRecord>) -> String {
    let items: Vec<serde_json::Value> = placements.map(crate::views::report::placement_json).collect();
    let mut s = serde_json::to_string_pretty(&serde_json::json!({ "placements": items })).unwrap_or_default();
    s.push('\n');
    s
}

/// One placement of `placements.json` as it appears inside the list (pretty, indented by 4).
fn summary_item(p: &PlacementRecord) -> String {
    let text = serde_json::to_string_pretty(&crate::views::report::placement_json(p)).unwrap_or_default();
    let mut out = String::with_capacity(text.len() + 64);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("    ");
        out.push_str(line);
    }
    out
}

/// [`summary_json`] from [`summary_item`]s: the same bytes.
fn summary_from_items(items: &[&str]) -> String {
    if items.is_empty() {
        return "{\n  \"placements\": []\n}\n".to_string();
    }
    let len: usize = items.iter().map(|i| i.len() + 2).sum();
    let mut s = String::with_capacity(len + 32);
    s.push_str("{\n  \"placements\": [\n");
    s.push_str(&items.join(",\n"));
    s.push_str("\n  ]\n}\n");
    s
}
