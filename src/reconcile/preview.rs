//! A pass that changes nothing (`fedsched plan`): the stages of [`Reconciler::reconcile`] up to
//! "plan the publish" — the same functions, on the same inputs — then the publisher's diff
//! against the output directory ([`publish::preview`], mass-deletion guard included) instead
//! of the publish, and no record stage. Hands over a [`PassPreview`]: the placements the pass
//! started from, the decision of every workload, the workloads it would remove, the file
//! changes and the stability actions.
//!
//! Two ways: [`Reconciler::preview`] for a reconciler of its own on a private copy of the store
//! ([`crate::store::Store::open_copy`]; the stages write snapshot versions and blobs there, and
//! its cache is reset afterwards), and [`Reconciler::preview_warm`] for a running reconciler
//! (the daemon's): the stages run on a copy of its cache and a dry run of its store, so the
//! daemon's next pass and its store are exactly as without the preview.
//!
//! # In detail
//!
//! `Reconciler::preview` (`reconcile/preview.rs`): `Reconciler::stages` — the same function
//! `reconcile` calls: version snapshots, stability, decide, plan the publish — then
//! `publish::preview` (`publish/preview.rs`: the publisher's `compute_changes`, guard included, no
//! lock, no write) instead of the publish, and no record stage. The stages write what they write on
//! the way (snapshot versions, template and policy blobs), so this preview runs on a private copy
//! of the store: `Store::open_copy` (`store/copy.rs`: the sled directory copied, then opened;
//! retried when caught mid-write). Its cache is reset afterwards. The `PassPreview` holds the
//! placements the pass started from and every decision (`PlannedDecision`: the cache's decision,
//! shared by `Arc`), removed workloads, the file changes, the stability actions. A preview on a new
//! reconciler is a full check: the files of the restored decisions are verified
//! (`cache::verify_restored`) and the cluster directories compared (`publish::diff`, each directory
//! listed once) on every core.
//!
//! `Reconciler::preview_warm`: the same stages on a running reconciler (the daemon's), which it
//! leaves exactly as it was — on `Kept::fork` (a copy whose decisions are shared by `Arc` and
//! copied by `Arc::make_mut` only when the preview changes them) and on a reconciler sharing the
//! settings over `Store::dry_run` (`store/mod.rs`: reads the store; blobs and snapshot versions are
//! answered in memory; every other write is `StoreError::DryRun`, so a preview that tried to record
//! would fail rather than change the daemon's store). It holds the cache's lock throughout: a pass
//! and a preview never overlap. The repository comes as its files (`policy::load::RepositoryFiles`,
//! read by the command) and is loaded by `Reconciler::load_preview_inputs` through
//! `ParseCache::overlay` (a file with the path and bytes of the daemon's last load keeps its parsed
//! and typed documents, shared; the daemon's load cache does not change).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::policy::ObjectKey;
use crate::publish;
use crate::store::PlacementRecord;

use super::{Inputs, Problem, ReconcileError, Reconciler, StabilityReport, cache};

/// What a pass would do.
#[derive(Debug, Clone)]
pub struct PassPreview {
    /// The stored placements the pass started from.
    pub before: BTreeMap<ObjectKey, Arc<PlacementRecord>>,
    /// The decision of every workload of the pass.
    pub decisions: BTreeMap<ObjectKey, PlannedDecision>,
    /// Workloads with a placement that the pass would no longer propagate.
    pub removed: Vec<ObjectKey>,
    /// What the publish would change in the output directory.
    pub files: publish::Preview,
    /// Evictions, purges, reschedules, move-backs and the storm guard.
    pub stability: StabilityReport,
    /// Whether the pass compared the whole output directory (always on a new reconciler).
    pub full_check: bool,
    /// Why the pass would write and record nothing at all: the repository places no workload
    /// any more ([`ReconcileError::Emptied`], the message the pass would fail with).
    pub emptied: Option<String>,
    /// The progressive rollouts the pass would start, move or keep under way: each workload's
    /// state after the pass, and whether the pass changes it.
    pub rollouts: Vec<(ObjectKey, crate::schedule::rollout::RolloutState, bool)>,
}

/// One workload's decision in a [`PassPreview`]: the reconciler's own decision, shared with
/// its cache (a warm preview copies none of the decisions it did not change).
#[derive(Clone)]
pub struct PlannedDecision(Arc<cache::CachedDecision>);

impl PlannedDecision {
    /// The placement it would record (an unschedulable workload keeps its previous targets).
    pub fn record(&self) -> &PlacementRecord {
        &self.0.decided.record
    }

    /// The cached decision (its key, the filtered clusters' state: the self-audit names the
    /// memo a difference comes from).
    pub(super) fn cached(&self) -> &cache::CachedDecision {
        &self.0
    }

    /// The files of clusters it left that it keeps (graceful eviction): (cluster, path).
    pub fn kept_files(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.decided.keep.iter().map(|(c, p)| (c.as_str(), p.as_str()))
    }

    /// Test hook of the self-audit (debug builds): one cluster more in its targets.
    #[cfg(debug_assertions)]
    pub(super) fn skew_for_test(&mut self) {
        Arc::make_mut(&mut self.0).decided.record.targets.insert("audit-test-skew".into(), Some(1));
    }

    /// Whether it was scheduled (else its previous files stay).
    pub fn scheduled(&self) -> bool {
        self.0.decided.scheduled
    }

    /// Why it is unschedulable, or the clusters it failed to render for.
    pub fn problems(&self) -> &[Problem] {
        &self.0.decided.problems
    }

    /// The files it rendered: (cluster, path, FNV-1a 64 of the bytes).
    pub fn files(&self) -> impl Iterator<Item = (&str, &str, u64)> {
        let d = &self.0.decided;
        d.files.iter().zip(&d.file_hashes).map(|((cluster, (path, _)), hash)| (cluster.as_str(), path.as_str(), *hash))
    }
}

impl std::fmt::Debug for PlannedDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedDecision")
            .field("workload", &self.record().workload)
            .field("targets", &self.record().targets)
            .field("scheduled", &self.scheduled())
            .field("problems", &self.problems())
            .finish_non_exhaustive()
    }
}

impl Reconciler {
    /// Runs the stages of a pass over `inputs` up to the plan of the publish and previews the
    /// publish in `output_dir`: nothing is published or recorded. For a reconciler of its own
    /// on a private copy of the store: the stages write what they write on the way, and the
    /// cache is reset afterwards ([`Reconciler::preview_warm`] is the one for a running one).
    pub fn preview(&self, inputs: &Inputs, output_dir: &Path, now_ms: u64) -> Result<PassPreview, ReconcileError> {
        let mut guard = self.lock_cache();
        let result = self.preview_cached(&mut guard, inputs, output_dir, now_ms);
        *guard = cache::Kept::default();
        result
    }

    /// [`Reconciler::preview`] on a running reconciler (the daemon's, `fedsched plan` through
    /// its API), which it leaves exactly as it was: the stages run on a copy of its cache
    /// ([`cache::Kept::fork`]: what the last pass decided is reused, so a one-file edit
    /// costs what the edit touches) and on a dry run of its store ([`crate::store::Store::dry_run`]: snapshot
    /// versions and blobs answered in memory, any other write an error). Takes the cache's
    /// lock only to copy it: a pass never waits for a preview (nor for a hostile script a
    /// preview runs). The output directory is compared again when a publish ran meanwhile
    /// ([`super::WriteGate::generation`]).
    pub fn preview_warm(&self, inputs: &Inputs, output_dir: &Path, now_ms: u64) -> Result<PassPreview, ReconcileError> {
        let mut fork = self.lock_cache().fork();
        let dry = Reconciler {
            store: self.store.dry_run(),
            settings: Arc::clone(&self.settings),
            cache: Mutex::new(cache::Kept::default()),
            load_cache: Mutex::new(Default::default()),
            fence: None,
            kill: publish::KillSwitch::OFF,
            gate: Arc::clone(&self.gate),
        };
        dry.preview_cached(&mut fork, inputs, output_dir, now_ms)
    }

    /// [`publish::preview`] while no publish runs: read again when one ran meanwhile (a few
    /// times; then [`ReconcileError::Busy`]).
    fn compare(&self, output_dir: &Path, plan: &publish::PublishPlan) -> Result<publish::Preview, ReconcileError> {
        for _ in 0..10 {
            let before = self.gate.generation();
            if before % 2 == 1 {
                std::thread::sleep(std::time::Duration::from_millis(50));
                continue;
            }
            let files = publish::preview(output_dir, plan, &self.settings.publish.guard)?;
            if self.gate.generation() == before {
                return Ok(files);
            }
        }
        Err(ReconcileError::Busy)
    }

    /// The cache, reset when a pass panicked while holding it (what it left is not trusted).
    pub(super) fn lock_cache(&self) -> std::sync::MutexGuard<'_, cache::Kept> {
        self.cache.lock().unwrap_or_else(|poisoned| {
            let mut g = poisoned.into_inner();
            *g = cache::Kept::default();
            self.cache.clear_poison();
            g
        })
    }

    fn preview_cached(
        &self,
        cache: &mut cache::Kept,
        inputs: &Inputs,
        output_dir: &Path,
        now_ms: u64,
    ) -> Result<PassPreview, ReconcileError> {
        cache.load_once(&self.store)?;
        let mut tainted = self.taint(inputs, now_ms)?;
        let with_taints = tainted.inputs.take();
        let staged_inputs = with_taints.as_ref().unwrap_or(inputs);
        let staged = self.stages(cache, staged_inputs, tainted, output_dir, crate::publish::Trigger::Plan, now_ms)?;
        let emptied = self.emptied(&staged.decisions).map(|e| e.to_string());
        let files = self.compare(output_dir, &staged.planned.plan)?;
        // The placements and decisions are moved into the preview, not copied (the stages
        // leave the placements as the pass started from them; only the record stage changes
        // them): the cache is a fork, or is reset after the preview.
        let before: BTreeMap<ObjectKey, Arc<PlacementRecord>> = cache.record.take_placements().into_iter().collect();
        let rollout = &staged.rollout;
        let rollouts = rollout
            .changed
            .keys()
            .chain(rollout.directives.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter_map(|k| {
                let (state, changed) = match rollout.changed.get(k) {
                    Some(s) => (s.clone(), true),
                    None => (cache.rollout.state(&k.store_key())?.clone(), false),
                };
                Some((k.clone(), state, changed))
            })
            .collect();
        let mut decisions = BTreeMap::new();
        for key in staged.decisions.keys() {
            if let Some(c) = cache.decide.decisions.remove(key) {
                decisions.insert(key.clone(), PlannedDecision(c));
            }
        }
        Ok(PassPreview {
            before,
            decisions,
            removed: staged.decisions.removed.clone(),
            files,
            stability: staged.stability.report(),
            full_check: staged.full_check,
            emptied,
            rollouts,
        })
    }
}
