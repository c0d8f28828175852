//! A pass that changes nothing (`fedsched plan`): the stages of [`Reconciler::reconcile`] up to
//! "plan the publish" — the same functions, on the same inputs — then the publisher's diff
//! against the output directory ([`publish::preview`], mass-deletion guard included) instead
//! of the publish, and no record stage. Hands over a [`PassPreview`]: the placements the pass
//! started from, the decision of every workload, the workloads it would remove, the file
//! changes and the stability actions.
//!
//! The stages still write what they write on the way (new snapshot versions, the blobs of
//! templates and policies): a preview is meant for a private copy of the store
//! ([`crate::store::Store::open_copy`]), never the daemon's. The reconciler's cache is reset
//! afterwards, so a preview leaves nothing a later pass of the same reconciler could reuse:
//! its placements and decisions are moved into the [`PassPreview`], not copied.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::policy::ObjectKey;
use crate::publish;
use crate::store::PlacementRecord;

use super::{Inputs, Problem, ReconcileError, Reconciler, StabilityReport, cache};

/// What a pass would do.
#[derive(Debug, Clone)]
pub struct PassPreview {
    /// The stored placements the pass started from.
    pub before: BTreeMap<ObjectKey, PlacementRecord>,
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
}

/// One workload's decision in a [`PassPreview`].
#[derive(Debug, Clone)]
pub struct PlannedDecision {
    /// The placement it would record (an unschedulable workload keeps its previous targets).
    pub record: PlacementRecord,
    /// Whether it was scheduled (else its previous files stay).
    pub scheduled: bool,
    /// Why it is unschedulable, or the clusters it failed to render for.
    pub problems: Vec<Problem>,
    /// The files it rendered: (cluster, path, FNV-1a 64 of the bytes).
    pub files: Vec<(String, String, u64)>,
}

impl Reconciler {
    /// Runs the stages of a pass over `inputs` up to the plan of the publish and previews the
    /// publish in `output_dir`: nothing is published or recorded.
    pub fn preview(&self, inputs: &Inputs, output_dir: &Path, now_ms: u64) -> Result<PassPreview, ReconcileError> {
        let mut guard = self.cache.lock().unwrap_or_else(|poisoned| {
            let mut g = poisoned.into_inner();
            *g = cache::PassCache::default();
            self.cache.clear_poison();
            g
        });
        let result = self.preview_cached(&mut guard, inputs, output_dir, now_ms);
        *guard = cache::PassCache::default();
        result
    }

    fn preview_cached(
        &self,
        cache: &mut cache::PassCache,
        inputs: &Inputs,
        output_dir: &Path,
        now_ms: u64,
    ) -> Result<PassPreview, ReconcileError> {
        cache.load_once(&self.store)?;
        let mut tainted = self.taint(inputs, now_ms)?;
        let with_taints = tainted.inputs.take();
        let staged_inputs = with_taints.as_ref().unwrap_or(inputs);
        let staged = self.stages(cache, staged_inputs, tainted, output_dir, "plan", now_ms)?;
        let files = publish::preview(output_dir, &staged.planned.plan, &self.settings.publish.guard)?;
        // The cache is reset after a preview: its placements and decisions are moved into the
        // preview, not copied (the stages leave the placements as the pass started from them;
        // only the record stage changes them).
        let before: BTreeMap<ObjectKey, PlacementRecord> = std::mem::take(&mut cache.placements)
            .into_iter()
            .map(|(k, p)| (k, Arc::try_unwrap(p).unwrap_or_else(|shared| (*shared).clone())))
            .collect();
        let mut decisions = BTreeMap::new();
        for key in &staged.decisions.order {
            let Some(c) = cache.decisions.remove(key) else { continue };
            let d = c.decided;
            let files = d
                .files
                .into_iter()
                .zip(d.file_hashes)
                .map(|((cluster, (path, _)), hash)| (cluster, path, hash))
                .collect();
            let planned = PlannedDecision { record: d.record, scheduled: d.scheduled, problems: d.problems, files };
            decisions.insert(key.clone(), planned);
        }
        Ok(PassPreview {
            before,
            decisions,
            removed: staged.decisions.removed.clone(),
            files,
            stability: staged.stability.report(),
            full_check: staged.full_check,
        })
    }
}
