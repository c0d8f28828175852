//! One reconcile pass through the whole flow. The `render` command runs one pass; the daemon
//! runs one per trigger. `Reconciler::reconcile` is one call per stage, each stage in its own
//! file and handing one type to the next:
//!
//! 1. load inputs (`inputs.rs`; before the pass, [`Reconciler::load_inputs`]) → [`Inputs`];
//! 2. version snapshots (`snapshots.rs`) → `PassSnapshots` (snapshot versions, the member
//!    views after the assumed-replica deductions), then the `Pass` every decision shares
//!    (positions, the scheduler's fleet, the versions blob, each cluster's state);
//! 3. stability (`stability.rs`: the stability engine over the stored state, the members'
//!    conditions and their pods — evictions, purges, reschedules, move-backs, the storm guard)
//!    → `StabilityPass` (the next state, the actions, a `Directive` per workload);
//! 4. decide (`decide.rs`: claim, decision key — which includes the workload's directive —,
//!    schedule + render or reuse; evicted clusters filtered and out of the previous placement,
//!    kept files of graceful evictions; the propagateDeps order and helpers in `deps.rs`) →
//!    `Decisions`;
//! 5. plan the publish (`plan.rs`: dirty clusters, kept files, the summary's changed shards) →
//!    `PlannedPublish`;
//! 6. publish ([`publish::publish_recorded`]) → [`publish::PublishReport`];
//! 7. record (run by the publish once it knows what it changes, before its journal commits,
//!    pending until the journal is applied: a crash leaves the record with the publish's fate,
//!    [`recover`]; `record.rs`: history and placements in batches — failover's actions as notes,
//!    once —, removed workloads, persisted decisions, the stability state, flush) → `Recorded`;
//!
//! then git mode's commit, and the [`ReconcileReport`] (`report.rs`) made of what the stages
//! handed over. What a reconciler keeps between passes is one `cache::Kept`, a part per
//! stage that only that stage takes (`<stage>::Kept`); what it is configured
//! by is [`Settings`] (`settings.rs`).
//!
//! Owns: the order of the stages and what happens to a workload when a stage fails for it
//! (it keeps its previous output). Inputs that are invalid stop the pass before anything is
//! written: the output and the store stay as they were. Records no metrics: the caller
//! records them from [`Inputs::offline_polls`] and [`ReconcileReport::held_clusters`].
//!
//! # In detail
//!
//! The pass, one file per stage (see the table above), and what happens to a workload when a stage
//! fails for it (it keeps its previous output). `decide.rs`: a `Context` (what the whole pass
//! shares: store, profiles, inputs, policy index, the `Pass`, the output directory, whether this is
//! a full check) and a `Claimed` workload (template, previous placement, policy, placement,
//! profile, dependents, hashes, overrides) instead of eleven parameters; `decision_key`,
//! `reuse_or_decide`. `settings.rs`: `Settings`, `PublishSettings`. `findings.rs`: what `check`
//! finds per workload beyond loading (`template_errors`, `override_errors`), here so that `check`
//! and the fuzzer run the same code.

mod adopt;
pub mod audit;
mod cache;
mod decide;
mod deps;
mod findings;
mod inputs;
mod plan;
mod preview;
mod record;
mod replay;
mod report;
mod rollout;
mod settings;
mod snapshots;
mod stability;
#[cfg(test)]
#[path = "warm_cold/tests.rs"]
mod warm_cold;

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::publish;
use crate::publish::Trigger;
use crate::store::Store;

pub use adopt::{ADOPTION_REASON, AdoptError, Adopted, adopt_published, is_adoption, take_over};
use decide::Decided;
pub use decide::LAZY_HELD_NOTE;
pub use deps::{REQUIRED_BY_PREFIX, dependency_map};
pub use findings::{override_errors, template_errors};
use inputs::LoadCache;
pub use inputs::{Changed, InputHashes, Inputs, Repository, load_inputs};
pub use preview::{PassPreview, PlannedDecision};
pub use replay::{LoadedRepositories, RecordedHistory, ReplayError, replay_pass};
pub use report::{
    PhaseTimings, Problem, ReconcileError, ReconcileReport, Redecided, StabilityEvent, StabilityReport, suspended_on,
};
pub use settings::{InterpreterSettings, PublishSettings, Settings};
pub use snapshots::{Assumed, set_confidence};

/// What the stages up to "plan the publish" hand over ([`Reconciler::stages`]).
struct Staged<'a> {
    snapshots: snapshots::PassSnapshots,
    pass: snapshots::Pass,
    stability: stability::StabilityPass,
    /// The rollout stage's result: its states are stored with the pass.
    rollout: rollout::RolloutPass,
    decisions: decide::Decisions,
    planned: plan::PlannedPublish<'a>,
    full_check: bool,
    /// Time spent versioning the snapshots.
    poll: Duration,
    /// Time spent in the stability stage (taints included).
    stability_time: Duration,
}

/// What goes before the stages: this pass's ClusterTaintPolicy taints ([`Reconciler::taint`]).
struct Tainted {
    /// The inputs with the taints on their snapshots (`None`: no taint, the inputs as they are).
    inputs: Option<Inputs>,
    taints: std::collections::BTreeMap<String, Vec<crate::schedule::stability::AddedTaint>>,
    /// The stored stability state the taints were computed from.
    old: crate::schedule::stability::StabilityState,
    time: Duration,
}

/// What the decide stage needs to write Secrets ([`crate::secrets`]): the recipients are
/// read (and parsed) only when the repository has a Secret and the mode encrypts.
fn secrets_for(settings: &crate::secrets::SecretsSettings, inputs: &Inputs, now_ms: u64) -> decide::Secrets {
    let has_secret = inputs.set.templates.iter().any(|t| crate::secrets::is_secret(&t.key));
    let recipients = match has_secret && settings.mode == Some(crate::secrets::Mode::Sops) {
        true => crate::secrets::Recipients::resolve(settings, &inputs.set),
        false => crate::secrets::Recipients::default(),
    };
    let digest = crate::util::hash::fnv1a64_more(recipients.digest, format!("{:?}", settings.mode).as_bytes());
    decide::Secrets { mode: settings.mode, recipients, digest, now_ms }
}

/// At every pass where Secrets are written in clear text (`[secrets] mode = "plain"`) or not
/// written because no mode is set: one warning naming them (the first 20), their clusters
/// and the choices.
fn warn_secrets(mode: Option<crate::secrets::Mode>, cache: &cache::Kept, decisions: &decide::Decisions) {
    use crate::secrets::{Mode, is_secret};
    if !matches!(mode, None | Some(Mode::Plain)) {
        return;
    }
    const NAMED: usize = 20;
    let mut count = 0usize;
    let mut named = Vec::new();
    for key in decisions.keys().filter(|k| is_secret(k)) {
        let Some(c) = cache.decide.decisions.get(key) else { continue };
        let clusters: Vec<&str> = match mode {
            Some(_) => c.decided.record.files.keys().map(String::as_str).collect(),
            None => c.decided.problems.iter().filter_map(|p| p.cluster.as_deref()).collect(),
        };
        if clusters.is_empty() {
            continue;
        }
        count += 1;
        if named.len() < NAMED {
            named.push(format!("{} on {}", key.display_ref(), clusters.join(", ")));
        }
    }
    if count == 0 {
        return;
    }
    let more = count.saturating_sub(NAMED);
    let list = named.join("; ") + &if more > 0 { format!("; and {more} more") } else { String::new() };
    match mode {
        Some(_) => tracing::warn!(
            secrets = count,
            "{count} Secret(s) written to the output in clear text ([secrets] mode = \"plain\"): {list}; \
             mode = \"sops\" encrypts them for each cluster's age recipient, mode = \"omit\" leaves them out"
        ),
        None => tracing::warn!(
            secrets = count,
            "{count} Secret(s) not written: {list}: {}",
            crate::secrets::unset_message()
        ),
    }
}

/// The parts of a pass that stay the same between passes.
pub struct Reconciler {
    pub store: Store,
    /// What the reconciler is configured by: profiles (with `[model]` and `[cost]`) and the
    /// publish settings (shared with the reconciler of a warm preview).
    settings: std::sync::Arc<Settings>,
    /// What this reconciler decided, recorded and published in earlier passes.
    cache: Mutex<cache::Kept>,
    /// The parsed files of the policy repository and the last inputs built from them
    /// ([`Reconciler::load_inputs`]).
    load_cache: Mutex<LoadCache>,
    /// `[ha]`: asked before the publish and before git mode's commit; `Err` (not the leader,
    /// or the lease's renew deadline passed) ends the pass there ([`ReconcileError::Fenced`]):
    /// decided in shadow, nothing written, nothing recorded.
    fence: Option<Fence>,
    /// Fault injection (the deterministic simulation): stops a pass's publish after a step,
    /// or right after the publish, before the record stage, as a SIGKILL there would
    /// ([`publish::KillSwitch`]). Off unless set by [`Reconciler::with_kill_switch`].
    kill: publish::KillSwitch,
    /// Where its passes write ([`WriteGate`]).
    gate: std::sync::Arc<WriteGate>,
}

/// Where a process's passes write the output directory, so that a shutdown stops them at a
/// safe step ([`WriteGate::stop`]) and knows when none writes ([`WriteGate::quiet`]), and a
/// preview knows whether a publish ran while it read the directory
/// ([`WriteGate::generation`]). The daemon gives one to every reconciler it builds.
#[derive(Debug, Default)]
pub struct WriteGate {
    stop: std::sync::atomic::AtomicBool,
    writing: Mutex<()>,
    /// Odd while a publish runs; moves on at each start and end.
    generation: std::sync::atomic::AtomicU64,
}

/// A pass's turn to write ([`WriteGate::enter`]).
struct Writing<'a>(&'a WriteGate, #[allow(dead_code)] std::sync::MutexGuard<'a, ()>);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl WriteGate {
    /// No pass starts writing from now on; a publish under way stops at its next safe step.
    pub fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether no pass writes, waiting up to `within` for one that does to stop (after
    /// [`WriteGate::stop`], none can start again).
    pub fn quiet(&self, within: Duration) -> bool {
        let until = Instant::now() + within;
        loop {
            match self.writing.try_lock() {
                Ok(_) | Err(std::sync::TryLockError::Poisoned(_)) => return true,
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(std::sync::TryLockError::WouldBlock) => return false,
            }
        }
    }

    /// Odd while a publish runs; different after one ran.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    fn enter(&self) -> Result<Writing<'_>, ReconcileError> {
        let guard = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        if self.stop.load(std::sync::atomic::Ordering::Acquire) {
            return Err(ReconcileError::Stopped);
        }
        self.generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(Writing(self, guard))
    }
}

/// A pass that ended in shadow at the fence.
fn fenced_error(decisions: &decide::Decisions, reason: String) -> ReconcileError {
    ReconcileError::Fenced { reason, workloads: decisions.order.len(), scheduled: decisions.scheduled }
}

/// `Ok(deadline)` when this instance may start a write that publishes now, which must be over
/// by `deadline`; `Err`: why not. See [`Reconciler::with_fence`].
pub type Fence = std::sync::Arc<dyn Fn() -> Result<std::time::Instant, String> + Send + Sync>;

impl Reconciler {
    /// A reconciler over `store`, configured by `settings` ([`Settings::builtin`]: the
    /// built-in profile only, default publish settings).
    pub fn new(store: Store, settings: Settings) -> Self {
        Reconciler {
            load_cache: Mutex::new(LoadCache::kept_in(&store)),
            store,
            settings: std::sync::Arc::new(settings),
            cache: Mutex::new(cache::Kept::default()),
            fence: None,
            kill: publish::KillSwitch::OFF,
            gate: Default::default(),
        }
    }

    /// Writes through `gate` (the daemon's: one for all its reconcilers).
    pub fn with_gate(mut self, gate: std::sync::Arc<WriteGate>) -> Self {
        self.gate = gate;
        self
    }

    /// Fault injection: every publish step of this reconciler's passes counts on `kill`, and
    /// so does the moment between the publish and the record stage; the step it stops at ends
    /// the pass there with [`publish::PublishError::Killed`], as a SIGKILL would (the
    /// caller then drops the reconciler and its store, and starts again on the same
    /// directories).
    pub fn with_kill_switch(mut self, kill: publish::KillSwitch) -> Self {
        self.kill = kill;
        self
    }

    /// Publishes (and records) only while `fence` says so (`[ha]`: the lease is held).
    pub fn with_fence(mut self, fence: Fence) -> Self {
        self.fence = Some(fence);
        self
    }

    /// The fence's answer before the publish.
    fn fenced(&self, decisions: &decide::Decisions) -> Result<(), ReconcileError> {
        match self.fence.as_ref().map(|f| f()) {
            Some(Err(reason)) => Err(fenced_error(decisions, reason)),
            _ => Ok(()),
        }
    }

    /// What this reconciler is configured by.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The placements this reconciler holds after its last pass (the store's, kept in step
    /// with what it wrote: [`cache`]), shared, not read again from the store; `None` when it
    /// holds none it can vouch for (before its first pass, after a failed one). The lock is
    /// the pass's: the daemon asks on the pass's thread, right after the pass.
    pub fn placements(&self) -> Option<Vec<std::sync::Arc<crate::store::PlacementRecord>>> {
        let kept = self.cache.lock().ok()?;
        kept.record.loaded().then(|| kept.record.placements().values().cloned().collect())
    }

    /// Runs one pass over validated inputs and publishes to `output_dir`.
    ///
    /// A reconciler remembers what it decided, recorded and published ([`cache`]); a pass
    /// where nothing changed reuses that instead of scheduling, rendering and comparing every
    /// output file again. Every [`cache::FULL_CHECK_EVERY_MS`], on the first pass, on a
    /// [`Trigger::Sighup`] and after a failed pass, the whole output directory is compared.
    pub fn reconcile(
        &self,
        inputs: &Inputs,
        output_dir: &Path,
        trigger: Trigger,
        now_ms: u64,
    ) -> Result<ReconcileReport, ReconcileError> {
        let mut guard = match self.cache.lock() {
            Ok(g) => g,
            Err(poisoned) => {
                // A pass panicked: what it left behind is not trusted.
                let mut g = poisoned.into_inner();
                *g = cache::Kept::default();
                self.cache.clear_poison();
                g
            }
        };
        let result = self.reconcile_cached(&mut guard, inputs, output_dir, trigger, now_ms);
        // A shadow pass (fenced before the publish) wrote nothing: its cache stays warm.
        if result.as_ref().is_err_and(|e| !matches!(e, ReconcileError::Fenced { .. })) {
            *guard = cache::Kept::default();
        }
        result
    }

    /// ClusterTaintPolicies' taints, which go on the snapshots before the stages: filters and
    /// versions see them.
    fn taint(&self, inputs: &Inputs, now_ms: u64) -> Result<Tainted, ReconcileError> {
        let started = Instant::now();
        let old = self.store.stability()?;
        let taints = stability::cluster_taints(&old, inputs, now_ms);
        let tainted = stability::with_taints(inputs, &taints);
        Ok(Tainted { inputs: tainted, taints, old, time: started.elapsed() })
    }

    /// The stages of a pass up to "plan the publish" (version snapshots, stability, decide,
    /// plan) on `inputs` with `tainted`'s taints on them, with this process's cache: what both
    /// a pass and a preview run.
    fn stages<'a>(
        &self,
        cache: &mut cache::Kept,
        inputs: &'a Inputs,
        tainted: Tainted,
        output_dir: &Path,
        trigger: Trigger,
        now_ms: u64,
    ) -> Result<Staged<'a>, ReconcileError> {
        let full_check = cache.plan.full_check_due(now_ms, trigger);
        cache.load_once(&self.store)?;
        let Tainted { taints, old: old_stability, time: mut stability_time, .. } = tainted;

        let phase = Instant::now();
        let changed = cache.record.take_placements_changed();
        let kept = (&mut cache.snapshots, cache.record.placements(), changed);
        let mut snapshots = snapshots::version(&self.store, kept, inputs, self.settings.model(), now_ms)?;
        let poll = phase.elapsed();
        let pass = snapshots::Pass::new(&snapshots, &self.store, &mut cache.snapshots)?;
        let index = cache.decide.policy_index(&inputs.set);
        let phase = Instant::now();
        let engine =
            stability::Engine { inputs, index: &index, settings: &self.settings.stability, old: old_stability, now_ms };
        let kept = (&mut cache.stability, cache.record.placements());
        let mut stability = stability::run(&self.store, kept, (&snapshots.views, taints), engine)?;
        stability_time += phase.elapsed();
        let kept = (&mut cache.rollout, cache.record.placements());
        let rollout = rollout::run(&self.store, kept, inputs, (&snapshots.views, &pass.positions), now_ms)?;
        let context = decide::Context {
            store: &self.store,
            profiles: &self.settings.profiles,
            inputs,
            index: &index,
            pass: &pass,
            output_dir,
            full_check,
            stability: &stability,
            secrets: secrets_for(&self.settings.secrets, inputs, now_ms),
            autoscaled: crate::model::autoscaling::Autoscaled::of(inputs.set.templates.iter().map(|t| &**t)),
            rollout: &rollout,
        };
        // On the pool: a decision's estimates split across its threads.
        let mut lent = decide::Lent { own: &mut cache.decide, record: cache.record.lend() };
        let mut decisions = crate::util::threads::on_pool(|| decide::decide_all(&context, &mut lent, &mut snapshots))?;
        // The decisions that hand over (moves decided afresh, failovers' decisions, those made
        // with a member that rejoins the workload's decisions, any other that would leave no
        // Ready replica: `stability::handing_over`, on the views the render read, before the
        // cache takes them) start their hand-overs.
        let moves: Vec<_> = decisions
            .fresh
            .iter()
            .filter_map(|k| {
                let d = stability.directives.get(k);
                let why = stability::HandOver::of_decision(d);
                let (prev, c) = (cache.record.placements().get(k)?, cache.decide.decisions.get(k)?);
                let scheduled = matches!(c.decided.record.result.outcome, crate::schedule::Outcome::Scheduled { .. });
                let ready = |cluster: &str| {
                    let snapshot = pass.positions.get(cluster).and_then(|i| i.of(&snapshots.views));
                    stability::observed_ready(k, snapshot)
                };
                let from = || stability::handing_over(d, &prev.targets, &c.decided.record.targets, ready);
                scheduled.then(|| (k.clone(), why, from()))
            })
            .collect();
        snapshots.save(&mut cache.snapshots, &pass.digests);
        for (key, notes) in &rollout.notes {
            decisions.notes.entry(key.clone()).or_default().extend(notes.iter().cloned());
        }
        // A move-back is one only if its decision puts replicas on the member: a decision that
        // failed keeps the previous placement, which may still name the member (a workload
        // evicted from its last member stays placed there), and decided nothing.
        stability.settle_move_backs(|k, cluster| {
            cache.decide.decisions.get(k).is_some_and(|c| {
                matches!(c.decided.record.result.outcome, crate::schedule::Outcome::Scheduled { .. })
                    && decide::places(&c.decided.record.targets, cluster)
            })
        });
        stability.hand_over(moves, now_ms, self.settings.stability.grace_period_ms);
        stability.drop_unremoved_purges(|key, cluster| {
            cache.decide.decisions.get(key).is_some_and(|c| {
                c.decided.record.files.contains_key(cluster) || c.decided.keep.iter().any(|(k, _)| k == cluster)
            })
        });

        let planned = plan::plan(
            &mut cache.plan,
            &mut cache.decide.decisions,
            &inputs.set,
            (&decisions, &rollout.summary, cache.record.placements()),
            &stability.state,
            full_check,
            &self.settings.publish,
        );
        Ok(Staged { snapshots, pass, stability, rollout, decisions, planned, full_check, poll, stability_time })
    }

    /// An emptied repository does not empty every placement without a word: a pass whose
    /// repository places no workload any more while the store has placements is held
    /// ([`ReconcileError::Emptied`]) unless the mass-deletion guard is off or overridden. The
    /// pass and the plan (which predicts the hold) ask here.
    fn emptied(&self, decisions: &decide::Decisions) -> Option<ReconcileError> {
        let guard = &self.settings.publish.guard;
        let emptied = decisions.order.is_empty() && !decisions.removed.is_empty();
        (emptied && !guard.allow && guard.max_delete_ratio < 1.0)
            .then(|| ReconcileError::Emptied { placed: decisions.removed.len() })
    }

    /// The record stage of a pass (its publish's [`publish::publish_recorded`] runs it once
    /// the changes are known, before the journal commits): what the guard held did not happen
    /// — a workload whose change it held whole keeps the engine state it was published with
    /// (the state this pass began from, still the stored one), a purge's task stays, an
    /// eviction waits to be noted until its change is published (history records what was
    /// published) —; then the replay inputs, the rollouts' states and the records.
    fn record_pass(
        &self,
        cache: &mut cache::Kept,
        inputs: &Inputs,
        published: &publish::PublishReport,
        (stability, rollout, decisions): (&mut stability::StabilityPass, &rollout::RolloutPass, &decide::Decisions),
        (planned, plan): (plan::PlannedPublish<'_>, &publish::PublishPlan),
        (versions, full_check, trigger, now_ms): (u64, bool, Trigger, u64),
    ) -> Result<record::Recorded, ReconcileError> {
        if !published.held_moves.is_empty() {
            stability.keep_published(&published.held_moves, &self.store.stability()?);
        }
        stability.hold_unpublished(published);
        planned.published(plan, &mut cache.plan, &mut cache.decide.decisions, published, full_check, now_ms);
        let replay =
            match decisions.fresh.is_empty() && decisions.removed.is_empty() && stability.report().events.is_empty() {
                true => 0,
                false => replay::store_pass(&self.store, cache, inputs, now_ms)?,
            };
        let mut recording = record::Recording {
            replay,
            full_check,
            store: &self.store,
            held: &published.held,
            held_moves: &published.held_moves,
            held_removals: &published.held_removals,
            versions,
            trigger,
            now_ms,
            stability,
        };
        // The rollouts' states, flushed with the record stage's (a held change's stays).
        rollout.record(&self.store, &mut cache.rollout, &published.held_moves)?;
        Ok(record::record(&mut recording, cache, decisions)?)
    }

    /// The stages of one pass, with this process's cache.
    fn reconcile_cached(
        &self,
        cache: &mut cache::Kept,
        inputs: &Inputs,
        output_dir: &Path,
        trigger: Trigger,
        now_ms: u64,
    ) -> Result<ReconcileReport, ReconcileError> {
        let started = Instant::now();
        // A record left pending by a crash takes its publish's fate before anything reads it.
        if self.store.pending_record()?.is_some() {
            recover_killable(&self.store, output_dir, &self.kill)?;
        }
        let mut tainted = self.taint(inputs, now_ms)?;
        let with_taints = tainted.inputs.take();
        let staged_inputs = with_taints.as_ref().unwrap_or(inputs);
        let Staged {
            snapshots,
            pass,
            mut stability,
            rollout,
            decisions,
            mut planned,
            full_check,
            poll,
            stability_time,
        } = self.stages(cache, staged_inputs, tainted, output_dir, trigger, now_ms)?;

        warn_secrets(self.settings.secrets.mode, cache, &decisions);
        if let Some(held) = self.emptied(&decisions) {
            return Err(held);
        }
        // Publish and record as one: the record is written once the publish knows what it
        // changes (what the guard held), before its journal commits, and stays pending (an undo
        // log under the journal's id) until the journal is applied; a crash in between leaves
        // the record with the publish's fate (`recover`): settled if the journal committed,
        // rolled back if it did not.
        self.fenced(&decisions)?;
        let files_unchanged = planned.unchanged;
        let writing = self.gate.enter()?;
        let phase = Instant::now();
        let mut record_time = Duration::ZERO;
        let plan = std::mem::take(&mut planned.plan);
        let (published, recorded) = publish::publish_recorded(
            output_dir,
            &plan,
            &self.settings.publish.guard,
            &self.kill,
            &self.gate.stop,
            |published: &publish::PublishReport, journal: Option<u64>| {
                let phase = Instant::now();
                if let Some(id) = journal {
                    self.store.begin_record(id)?;
                }
                let recorded = self.record_pass(
                    cache,
                    inputs,
                    published,
                    (&mut stability, &rollout, &decisions),
                    (planned, &plan),
                    (pass.versions, full_check, trigger, now_ms),
                );
                self.store.end_record();
                record_time = phase.elapsed();
                recorded
            },
            || {
                // Published, the record pending: the next start settles it.
                self.kill.step()?;
                Ok::<_, ReconcileError>(self.store.settle_record()?)
            },
        )?;
        let publish_time = phase.elapsed().saturating_sub(record_time);
        drop(writing);
        let files_unchanged = published.unchanged + files_unchanged;

        let commit = match &self.settings.publish.git {
            Some(git) => {
                // The commit and each push attempt ask the fence again, immediately before.
                let fence = self.fence.as_deref().map(|f| f as publish::git::Fence<'_>);
                match publish::git::commit_and_push(output_dir, git, trigger, fence) {
                    Ok(outcome) => outcome.commit,
                    Err(publish::git::GitError::Fenced(reason)) => {
                        return Err(fenced_error(
                            &decisions,
                            format!("{reason}: the files were written; the next leader commits them"),
                        ));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            None => None,
        };
        Ok(ReconcileReport {
            trigger,
            workloads: decisions.order.len(),
            scheduled: decisions.scheduled,
            decided: decisions.decided,
            full_check,
            redecided: decisions.redecided,
            unschedulable: decisions.unschedulable,
            render_failures: decisions.render_failures,
            suspended: decisions.suspended,
            lazy_held: decisions.lazy_held,
            removed_workloads: recorded.removed_workloads,
            files_written: published.written.len(),
            files_removed: published.removed.len(),
            files_unchanged,
            held_clusters: published.held,
            held_moves: published.held_moves,
            commit,
            new_snapshot_versions: snapshots.new_versions,
            assumed_replicas: snapshots.assumed_replicas,
            history_records: recorded.history_records,
            duration_ms: started.elapsed().as_millis(),
            phases: PhaseTimings {
                load: Duration::ZERO,
                poll,
                stability: stability_time,
                schedule: decisions.schedule_time,
                schedule_cpu: decisions.schedule_cpu,
                decide: decisions.decide_time,
                render: decisions.render_time,
                publish: publish_time,
                record: record_time,
            },
            stability: stability.report(),
            rollout_objects: rollout.objects.clone(),
            rollout_examined: rollout.examined,
            rollouts: cache
                .rollout
                .states()
                .map(|(sk, r)| (sk.replace('\u{1f}', "/"), r.phase.as_str(), r.current().unwrap_or(r.stages.len())))
                .collect(),
        })
    }
}

/// Finishes what a crash interrupted, before a process's first pass: the record of a publish
/// left pending ([`publish::publish_recorded`]) is settled if its journal committed (the
/// journal carries its id) and rolled back otherwise, then the journal is completed
/// ([`publish::recover`]). The store then holds what the output directory holds: neither
/// behind it (a kill after the journal, before the record) nor ahead of it (a record whose
/// publish never committed). Returns whether a journal was completed.
pub fn recover(store: &Store, output_dir: &Path) -> Result<bool, ReconcileError> {
    recover_killable(store, output_dir, &publish::KillSwitch::OFF)
}

fn recover_killable(store: &Store, output_dir: &Path, kill: &publish::KillSwitch) -> Result<bool, ReconcileError> {
    if let Some(id) = store.pending_record()? {
        match publish::committed_record(output_dir)? {
            Some(Some(journal)) if journal == id => {
                store.settle_record()?;
                tracing::warn!(publish = id, "settled the record of an interrupted publish");
            }
            _ => {
                let restored = store.roll_back_record()?;
                tracing::warn!(publish = id, restored, "rolled back the record of a publish that never committed");
            }
        }
    }
    Ok(publish::recover_killable(output_dir, kill)?)
}

#[cfg(test)]
mod gate_tests {
    use super::*;

    /// A stopped gate lets no pass start writing, and `quiet` waits for the one that writes.
    #[test]
    fn a_stopped_gate_lets_no_writer_in_and_waits_for_the_one_inside() {
        let gate = std::sync::Arc::new(WriteGate::default());
        assert_eq!(gate.generation(), 0);
        let writing = gate.enter().expect("open");
        assert_eq!(gate.generation() % 2, 1, "odd while a publish runs");
        gate.stop();
        assert!(!gate.quiet(Duration::from_millis(50)), "a writer is inside");
        let g = std::sync::Arc::clone(&gate);
        let waiter = std::thread::spawn(move || g.quiet(Duration::from_secs(60)));
        drop(writing);
        assert!(waiter.join().expect("waiter"), "quiet once the writer left");
        assert_eq!(gate.generation(), 2);
        assert!(matches!(gate.enter(), Err(ReconcileError::Stopped)));
    }
}

#[cfg(test)]
mod crash_tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use super::stability::fixture::{Fixture, cluster};
    use super::*;
    use crate::model::snapshot::Health;

    const REPO: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
  failover: {cluster: {purgeMode: Directly}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// Every file under `dir`, recursively (relative path → bytes).
    fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir.join(rel)) else { return };
        for entry in entries.map(|e| e.expect("entry")) {
            let name = format!("{rel}{}", entry.file_name().to_string_lossy());
            match entry.file_type().expect("type").is_dir() {
                true => walk(dir, &format!("{name}/"), out),
                false => {
                    out.insert(name, std::fs::read(entry.path()).expect("read"));
                }
            }
        }
    }

    /// The output's files (the publisher's lock and owner files aside).
    fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        walk(dir, "", &mut out);
        out.retain(|k, _| !k.ends_with("/lock") && !k.ends_with("/owner"));
        out
    }

    fn copy_dir(from: &Path, to: &Path) {
        let _ = std::fs::remove_dir_all(to);
        let mut all = BTreeMap::new();
        walk(from, "", &mut all);
        for (rel, bytes) in all {
            let target = to.join(rel);
            std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            std::fs::write(target, bytes).expect("write");
        }
    }

    /// What the record stage keeps: placements, every workload's history, the engine state.
    type Recorded = (Vec<crate::store::PlacementRecord>, Vec<crate::store::HistoryRecord>, String);

    fn recorded(store: &Store) -> Recorded {
        let mut history = Vec::new();
        for w in store.workloads_with_history().expect("workloads") {
            history.extend(store.history(&w).expect("history"));
        }
        let state = format!("{:?}", store.stability().expect("state"));
        (store.placements().expect("placements"), history, state)
    }

    /// Issue 46, invariant 4 (seed 5 of the simulation): a kill -9 at any step of the publish
    /// of a pass that evicts web from the lost m1 (purgeMode Directly: its file removed) leaves
    /// the store with the publish's fate once the next start recovers: the record of an
    /// uninterrupted run when the journal committed, the store before the pass when it did not,
    /// never the old placement beside the new files. The pass after the restart then publishes
    /// what an uninterrupted run publishes: no replica back on the still unreachable m1. Before
    /// the fix a kill after the journal left the store placing web on m1 while its file was
    /// gone, and the next pass wrote it back there ("keeps the replicas it has").
    #[test]
    fn a_kill_at_any_step_of_a_publish_leaves_the_store_with_the_publishs_fate() {
        let f = Fixture::new(REPO, &[cluster("m1", 20), cluster("m2", 20), cluster("m3", 20)]);
        let out = &f.out;
        let world = |down: bool| {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut().filter(|s| s.name == "m1" && down) {
                s.health = Health::Unreachable { reason: "connection refused".into() };
            }
            inputs
        };
        let t0 = 1_700_000_000_000;
        let (evict_at, after) = (t0 + 310_000, t0 + 320_000);
        {
            let rec = f.reconciler(Settings::builtin());
            rec.reconcile(&world(false), out, Trigger::Timer, t0).expect("pass");
            rec.reconcile(&world(true), out, Trigger::Timer, t0 + 10_000).expect("pass");
        }
        let base = f.state.with_file_name("base");
        copy_dir(&f.state, &base.join("state"));
        copy_dir(out, &base.join("out"));
        let restore = || {
            copy_dir(&base.join("state"), &f.state);
            copy_dir(&base.join("out"), out);
        };
        let before = (recorded(&Store::open(&f.state).expect("store")), files(out));
        // Uninterrupted: the eviction, then a restart and the next pass.
        let rec = f.reconciler(Settings::builtin());
        rec.reconcile(&world(true), out, Trigger::Timer, evict_at).expect("pass");
        let reference = (recorded(&rec.store), files(out));
        assert!(!reference.1.keys().any(|p| p.starts_with("m1/shop/")), "web evicted from m1 (Directly)");
        assert_ne!(reference.0, before.0);
        drop(rec);
        let rec = f.reconciler(Settings::builtin());
        rec.reconcile(&world(true), out, Trigger::Timer, after).expect("pass");
        let next = (rec.store.placements().expect("placements"), files(out));
        drop(rec);

        let (mut committed, mut rolled_back) = (0, 0);
        for step in 1.. {
            restore();
            let kill = publish::KillSwitch::new();
            kill.arm(step);
            let rec = f.reconciler(Settings::builtin()).with_kill_switch(kill);
            match rec.reconcile(&world(true), out, Trigger::Timer, evict_at) {
                Ok(_) => break,
                Err(ReconcileError::Publish(publish::PublishError::Killed { .. })) => {}
                Err(e) => panic!("step {step}: {e}"),
            }
            drop(rec);
            // The next start: the interrupted publish and its record take one fate.
            let store = Store::open(&f.state).expect("store");
            recover(&store, out).expect("recover");
            let now = (recorded(&store), files(out));
            if now.1 == reference.1 {
                assert_eq!(now.0, reference.0, "step {step}: published, the store must hold the pass's record");
                committed += 1;
            } else {
                assert_eq!(now, before, "step {step}: not published, the store must be as before the pass");
                rolled_back += 1;
            }
            drop(store);
            let rec = f.reconciler(Settings::builtin());
            rec.reconcile(&world(true), out, Trigger::Timer, after).expect("pass");
            let placements: Vec<_> =
                rec.store.placements().expect("placements").into_iter().map(|p| p.targets).collect();
            assert_eq!(placements, next.0.iter().map(|p| p.targets.clone()).collect::<Vec<_>>(), "step {step}");
            assert_eq!(files(out), next.1, "step {step}: the pass after the restart");
        }
        assert!(committed >= 3 && rolled_back >= 1, "kills after the journal {committed}, before it {rolled_back}");
    }
}
