//! The self-audit (issue 46): what a running reconciler kept between passes — its decisions,
//! keys, digests and deducted views ([`super::cache`]) — against what a reconciler started
//! empty decides on the same store and inputs. The warm side is [`Reconciler::preview_warm`]
//! (the pass's stages on a fork of the cache, as a warm `fedsched plan`); the cold side is a
//! new reconciler on a dry run of the same store ([`crate::store::Store::dry_run`]: it reads what the store
//! holds and writes nothing there), with the inputs loaded
//! again from the pass's repository files and the live view's memos dropped, previewing as a
//! cold `fedsched plan` does. [`compare`] is the one comparison: the daemon's periodic audit
//! (`[audit] interval`) and the deterministic simulation's "warm equals cold" invariant
//! (`testbed::dst`) both read it.
//!
//! Compared per workload: whether it is scheduled, its targets (replicas per cluster), the
//! files it renders (cluster, path, content hash: the bytes), the files it keeps, its
//! problems; then the workloads the pass would remove, what the publish would change, and the
//! stability engine's actions. Not compared: a kept decision's figures (verdicts, scores,
//! estimates: a decision whose outcome stands on changed capacity keeps the figures it was
//! made with, by design).
//!
//! Each difference names the memo involved, read from the two decisions: another decision
//! key (the key memo, the claim memo, the previous placements' digests, the fleet's static
//! facts), another state of the clusters that passed its filters (the per-cluster digests, the
//! deducted views), or the same key and state (the kept decision itself, or the check that its
//! outcome stands).
//!
//! # In detail
//!
//! The self-audit (`[audit] interval`, `Reconciler::audit`): the warm preview against a cold one on
//! a dry run of the same store, compared by `audit::compare` (also the simulation's "warm equals cold"), each
//! difference naming the memo involved; `forget` drops the cache so the fresh decision wins.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::members::live::LiveView;
use crate::policy::ObjectKey;

use super::preview::{PassPreview, PlannedDecision};
use super::{Inputs, ReconcileError, Reconciler, Repository, load_inputs};

/// One way the kept state and a fresh decision differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The workload (none for what concerns the pass as a whole: the publish, the stability
    /// engine).
    pub workload: Option<ObjectKey>,
    /// What differs (`targets`, `files`, `kept files`, `problems`, `scheduled`, `decided`,
    /// `removed`, `publish`, `stability`).
    pub what: &'static str,
    /// What the kept state gives.
    pub kept: String,
    /// What a fresh decision gives.
    pub fresh: String,
    /// The memo (or kept state) involved.
    pub memo: &'static str,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = self.workload.as_ref().map(|w| format!("{w}: ")).unwrap_or_default();
        write!(f, "{w}{} differ (memo: {}): kept {}, fresh {}", self.what, self.memo, self.kept, self.fresh)
    }
}

/// The memo named when the decision key differs.
pub const MEMO_KEY: &str = "decision key (KeyMemo, ClaimMemo, fleet static facts)";
/// The memo named when the clusters that passed the filters differ.
pub const MEMO_STATE: &str = "cluster state (ClusterDigests, deducted views: RecentPlacements)";
/// The memo named when key and filtered clusters are equal and the decisions still differ.
pub const MEMO_DECISION: &str = "kept decision (Kept decisions, outcome_stands)";

/// The memo a difference comes from. A kept decision's `state` is the state of the verdicts
/// its outcome holds on ([`super::cache::CachedDecision::state`]): one whose outcome stood on
/// the clusters' changed state keeps the older state by design, so a state unlike the fresh
/// decision's names no memo by itself — with the same key and the same filtered clusters, it
/// is the kept decision (its outcome judged to stand) that differs.
fn memo_of(kept: &PlannedDecision, fresh: &PlannedDecision) -> &'static str {
    let (k, f) = (kept.cached(), fresh.cached());
    if k.key != f.key {
        MEMO_KEY
    } else if k.clusters != f.clusters {
        MEMO_STATE
    } else {
        MEMO_DECISION
    }
}

fn targets(d: &PlannedDecision) -> String {
    let t: Vec<String> = d
        .record()
        .targets
        .iter()
        .map(|(c, r)| match r {
            Some(r) => format!("{c}={r}"),
            None => c.clone(),
        })
        .collect();
    format!("[{}]", t.join(", "))
}

fn files(d: &PlannedDecision) -> BTreeSet<(String, String, u64)> {
    d.files().map(|(c, p, h)| (c.to_string(), p.to_string(), h)).collect()
}

fn show<T: std::fmt::Debug>(set: &BTreeSet<T>) -> String {
    let items: Vec<String> = set.iter().map(|x| format!("{x:?}")).collect();
    format!("[{}]", items.join(", "))
}

/// What differs between the decisions of the kept state (`kept`) and of a reconciler started
/// empty (`fresh`), both previews of the same inputs at the same time on the same store.
pub fn compare(kept: &PassPreview, fresh: &PassPreview) -> Vec<Difference> {
    let mut out = Vec::new();
    let keys: BTreeSet<&ObjectKey> = kept.decisions.keys().chain(fresh.decisions.keys()).collect();
    for key in keys {
        let diff = |what, kept: String, fresh: String, memo| Difference {
            workload: Some(key.clone()),
            what,
            kept,
            fresh,
            memo,
        };
        let (k, f) = match (kept.decisions.get(key), fresh.decisions.get(key)) {
            (Some(k), Some(f)) => (k, f),
            (k, f) => {
                let says = |d: Option<&PlannedDecision>| d.map_or("not decided".to_string(), targets);
                out.push(diff("decided", says(k), says(f), MEMO_KEY));
                continue;
            }
        };
        let memo = memo_of(k, f);
        if k.scheduled() != f.scheduled() {
            out.push(diff("scheduled", k.scheduled().to_string(), f.scheduled().to_string(), memo));
        }
        if k.record().targets != f.record().targets {
            out.push(diff("targets", targets(k), targets(f), memo));
        }
        let (fk, ff) = (files(k), files(f));
        if fk != ff {
            let only = |a: &BTreeSet<_>, b: &BTreeSet<_>| show(&a.difference(b).cloned().collect());
            out.push(diff("files", only(&fk, &ff), only(&ff, &fk), memo));
        }
        let (kk, kf): (BTreeSet<_>, BTreeSet<_>) = (k.kept_files().collect(), f.kept_files().collect());
        if kk != kf {
            out.push(diff("kept files", show(&kk), show(&kf), memo));
        }
        let problems = |d: &PlannedDecision| -> BTreeSet<String> {
            d.problems().iter().map(|p| format!("{}{}", p.cluster.as_deref().unwrap_or(""), p.reason)).collect()
        };
        let (pk, pf) = (problems(k), problems(f));
        if pk != pf {
            out.push(diff("problems", show(&pk), show(&pf), memo));
        }
    }
    let pass = |what, kept: String, fresh: String, memo| Difference { workload: None, what, kept, fresh, memo };
    if kept.removed != fresh.removed {
        let shown = |r: &[ObjectKey]| format!("{:?}", r.iter().map(ToString::to_string).collect::<Vec<_>>());
        out.push(pass("removed", shown(&kept.removed), shown(&fresh.removed), "placements (RecentPlacements)"));
    }
    let (wk, wf): (BTreeSet<&String>, BTreeSet<&String>) =
        (kept.files.writes.keys().collect(), fresh.files.writes.keys().collect());
    let writes_differ = wk != wf || kept.files.writes.iter().any(|(p, b)| fresh.files.writes.get(p) != Some(b));
    if writes_differ || kept.files.deletions != fresh.files.deletions || kept.files.held != fresh.files.held {
        let summary = |p: &crate::publish::Preview| {
            format!("{} write(s), {} removal(s), {} held", p.writes.len(), p.deletions.len(), p.held.len())
        };
        out.push(pass(
            "publish",
            summary(&kept.files),
            summary(&fresh.files),
            "desired output (DesiredOutput, NamespaceFiles, summary Shards)",
        ));
    }
    let events = |p: &PassPreview| -> Vec<String> { p.stability.events.iter().map(|e| e.text.clone()).collect() };
    if events(kept) != events(fresh) {
        out.push(pass(
            "stability",
            format!("{:?}", events(kept)),
            format!("{:?}", events(fresh)),
            "stability inputs (Attention, TroubledOwners)",
        ));
    }
    out
}

/// What one audit found.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    /// Every difference, in workload order.
    pub differences: Vec<Difference>,
    /// Workloads decided by the fresh reconciler.
    pub workloads: usize,
    /// Wall time of the whole audit (both previews, comparison).
    pub took: Duration,
    /// Of which the cold load and the fresh preview.
    pub fresh: Duration,
}

/// A copy of `view` without its memos (each member's kept resource summary): the fresh side
/// computes every summary again.
fn without_memos(view: &LiveView) -> LiveView {
    let mut fresh = view.clone();
    for status in fresh.clusters.values_mut() {
        status.summary = Default::default();
    }
    fresh
}

/// The audit's cold side's inputs: the pass's repository files (`inputs.sources`) loaded
/// afresh with `settings`, by the load that keeps nothing between calls ([`load_inputs`] of
/// [`Repository::Files`]), before the live view is applied.
pub fn cold_inputs(inputs: &Inputs, settings: &Settings) -> Result<Inputs, ReconcileError> {
    let sources: Vec<(std::path::PathBuf, Arc<str>)> =
        inputs.sources.iter().map(|(p, _, text)| (p.clone(), Arc::clone(text))).collect();
    load_inputs(Repository::Files(&sources), settings).map_err(ReconcileError::Invalid)
}

impl Reconciler {
    /// The self-audit, on this (running) reconciler: the decisions it would keep for `inputs`
    /// (the inputs of its last pass, with `live` merged) against those of a reconciler started
    /// empty on a dry run of its store ([`crate::store::Store::dry_run`]: the same records, none of this
    /// reconciler's memos; a copy of the store on disk cost the simulation's warm = cold check
    /// a third of its time and gave the same records, the store being flushed by every record
    /// stage) with the same repository files and live view, configured by `settings` (built afresh by the
    /// caller, as at start: the profiles' compilers are memos too). Reads the store and the output directory,
    /// writes nothing of either; this reconciler's cache is left as it was. Call
    /// [`Reconciler::forget`] when it found differences: the next pass then decides afresh.
    pub fn audit(
        &self,
        settings: Settings,
        inputs: &Inputs,
        live: &LiveView,
        output_dir: &Path,
        now_ms: u64,
    ) -> Result<Audit, ReconcileError> {
        let load = Instant::now();
        let cold = cold_inputs(inputs, &settings)?;
        let loaded = load.elapsed();
        let mut audit = self.audit_loaded(settings, inputs, cold, live, output_dir, now_ms)?;
        audit.took += loaded;
        audit.fresh += loaded;
        Ok(audit)
    }

    /// [`Reconciler::audit`] with the cold side's inputs already loaded from the pass's
    /// repository files ([`cold_inputs`] of these `inputs`, or a load of the same files and
    /// settings: the load is a pure function of them). The deterministic simulation loads once
    /// per distinct repository content and audits every pass with it.
    pub fn audit_loaded(
        &self,
        settings: Settings,
        inputs: &Inputs,
        mut fresh_inputs: Inputs,
        live: &LiveView,
        output_dir: &Path,
        now_ms: u64,
    ) -> Result<Audit, ReconcileError> {
        let started = Instant::now();
        #[allow(unused_mut)]
        let mut kept = self.preview_warm(inputs, output_dir, now_ms)?;
        #[cfg(debug_assertions)]
        test_skew(&mut kept);
        let cold = Instant::now();
        let fresh_reconciler = Reconciler::new(self.store.dry_run(), settings).with_gate(Arc::clone(&self.gate));
        fresh_inputs.apply_live(&without_memos(live), &fresh_reconciler.store);
        let fresh = fresh_reconciler.preview(&fresh_inputs, output_dir, now_ms)?;
        let fresh_time = cold.elapsed();
        let differences = compare(&kept, &fresh);
        Ok(Audit { differences, workloads: fresh.decisions.len(), took: started.elapsed(), fresh: fresh_time })
    }

    /// Drops everything this reconciler kept between passes (decisions, keys, digests, views):
    /// its next pass decides every workload afresh, as a new reconciler's first pass would
    /// (a full check of the output directory).
    pub fn forget(&self) {
        let mut guard = self.lock_cache();
        *guard = super::cache::Kept::default();
    }
}

use super::Settings;

/// Test hook (debug builds only): with `FEDSCHED_TEST_AUDIT_SKEW` set, the kept side's first
/// decision targets one cluster more (`audit-test-skew`), as a memo that went stale would, so
/// that a test sees an audit find, log, count and correct a difference.
#[cfg(debug_assertions)]
fn test_skew(kept: &mut PassPreview) {
    if std::env::var_os("FEDSCHED_TEST_AUDIT_SKEW").is_none() {
        return;
    }
    if let Some(d) = kept.decisions.values_mut().next() {
        d.skew_for_test();
    }
}

/// Differences counted by kind of memo (for a log line).
pub fn by_memo(differences: &[Difference]) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for d in differences {
        *out.entry(d.memo).or_insert(0) += 1;
    }
    out
}
