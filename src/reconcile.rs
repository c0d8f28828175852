//! One reconcile pass through the whole flow: load → snapshot → schedule → render → publish
//! → record. The `render` command runs one pass; the daemon runs one per trigger.
//!
//! Owns: the order of the stages and what happens to a workload when a stage fails for it
//! (it keeps its previous output). Inputs that are invalid stop the pass before anything is
//! written: the output and the store stay as they were.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::config::Config;
use crate::members::live::LiveView;
use crate::members::offline_snapshot;
use crate::model::dimensions::{Dimensions, ModelSettings};
use crate::model::workload::{InterpreterTable, interpret};
use crate::model::{ClusterSnapshot, Observed, ReplicaRequirements, Workload, assumed};
use crate::policy::load::load_repository;
use crate::policy::{LoadError, ObjectKey, PolicyRef, PolicySet, Template, matching};
use crate::publish::{self, ClusterFiles, PublishPlan};
use crate::render::{self, RenderInput};
use crate::schedule::profile::Profiles;
use crate::schedule::{self, ClusterVerdict, Framework, Outcome, ScheduleRequest, ScheduleResult, Strategy, assign};
use crate::store::{DecisionInputs, HistoryRecord, PlacementRecord, Store, StoreError};

/// Everything a pass reads from the policy repository, validated.
pub struct Inputs {
    pub set: PolicySet,
    pub snapshots: Vec<ClusterSnapshot>,
    /// The repository's declarative workload interpreters.
    pub interpreters: InterpreterTable,
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
    let started = Instant::now();
    let (set, mut errors) = load_repository(policy_dir);
    errors.extend(profiles.validate(&set));
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
    let interpreters = InterpreterTable::from_set(&set);
    if errors.is_empty() { Ok(Inputs { set, snapshots, interpreters }) } else { Err(errors) }
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

/// How a pass publishes: the mass-deletion guard and git mode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PublishSettings {
    pub guard: publish::DeleteGuard,
    /// `Some` = git mode: commit (and push) after publishing.
    pub git: Option<publish::git::GitOptions>,
}

impl PublishSettings {
    /// From the `[publish]` and `[git]` sections; `allow_mass_delete` is the command-line flag.
    pub fn from_config(cfg: &Config, allow_mass_delete: bool) -> Self {
        let g = &cfg.git;
        PublishSettings {
            guard: publish::DeleteGuard {
                max_delete_ratio: cfg.publish.max_delete_ratio,
                allow: allow_mass_delete || cfg.publish.allow_mass_delete,
            },
            git: g.enabled.then(|| publish::git::GitOptions {
                author_name: g.author_name.clone(),
                author_email: g.author_email.clone(),
                remote: g.remote.clone(),
                branch: g.branch.clone(),
                push: g.push,
                ..Default::default()
            }),
        }
    }
}

/// The parts of a pass that stay the same between passes.
pub struct Reconciler {
    pub store: Store,
    /// Scheduling profiles; a policy picks one by annotation.
    pub profiles: Profiles,
    /// Output safety settings (mass-deletion guard, git mode).
    pub publish: PublishSettings,
}

impl Reconciler {
    /// A reconciler with the built-in profile only.
    pub fn new(store: Store) -> Self {
        Reconciler { store, profiles: Profiles::builtin(), publish: PublishSettings::default() }
    }

    /// Uses the configured profiles.
    pub fn with_profiles(mut self, profiles: Profiles) -> Self {
        self.profiles = profiles;
        self
    }

    /// Runs one pass over validated inputs and publishes to `output_dir`.
    pub fn reconcile(
        &self,
        inputs: &Inputs,
        output_dir: &Path,
        trigger: &str,
        now_ms: u64,
    ) -> Result<ReconcileReport, ReconcileError> {
        let started = Instant::now();
        let mut report = ReconcileReport { trigger: trigger.to_string(), ..Default::default() };
        let set = &inputs.set;

        // Snapshot: version what we know of every member, with its age and confidence.
        let phase = Instant::now();
        let model = self.profiles.model().clone();
        let dims = Dimensions::new(&model);
        let mut snapshots = inputs.snapshots.clone();
        let mut snapshot_versions = BTreeMap::new();
        for snap in &mut snapshots {
            let at_ms = set_confidence(snap, now_ms, &model);
            let observed = Observed { at_ms, confidence: snap.confidence() };
            let (version, new) = self.store.record_snapshot(snap, observed)?;
            if new {
                report.new_snapshot_versions += 1;
            }
            snapshot_versions.insert(snap.name.clone(), version);
        }
        // Assumed workloads: recent decisions a live member does not run yet.
        let mut assumed = Assumed::default();
        for p in self.store.placements()? {
            if now_ms.saturating_sub(p.decided_at_ms) >= model.assumed_ttl_ms {
                continue;
            }
            let Some(t) = set.template(&p.workload) else { continue };
            let Ok(w) = interpret(t.key.group(), &t.key.kind, &t.object, &inputs.interpreters) else { continue };
            let targets: BTreeMap<String, Option<i32>> = p.targets.clone();
            assumed.update(&mut snapshots, &p.workload, &w.requirements, &targets, &dims);
        }
        report.assumed_replicas = assumed.total();
        report.phases.poll += phase.elapsed();

        // Schedule and render every claimed template.
        let mut plan = PublishPlan { clusters: BTreeMap::new(), summary: None };
        for c in &set.clusters {
            plan.clusters.insert(c.meta.name.clone(), ClusterFiles::default());
        }
        let mut placements = Vec::new();
        let mut seen = BTreeSet::new();
        let mut notes: BTreeMap<ObjectKey, Vec<String>> = BTreeMap::new();
        // propagateDeps: dependency → the claimed workloads that reference it.
        let required_by = dependency_map(inputs, |t| self.store.placement(&t.key).ok().flatten());
        // Workloads first, then their dependencies (which take the union of their
        // dependents' clusters); dependencies never have dependencies of their own.
        let (deps, workloads): (Vec<&Template>, Vec<&Template>) =
            set.templates.iter().partition(|t| required_by.contains_key(&t.key));
        let mut targets_of: BTreeMap<ObjectKey, (BTreeSet<String>, PolicyRef)> = BTreeMap::new();
        for t in workloads.into_iter().chain(deps) {
            let prev = self.store.placement(&t.key)?;
            let claim = matching::claim_with_previous(set, t, prev.as_ref().and_then(|p| p.policy.as_ref()));
            let policy = claim.as_ref().and_then(|c| set.propagation_policy(&c.policy).map(|p| (c, p)));
            let required: Vec<(ObjectKey, BTreeSet<String>, PolicyRef)> = required_by
                .get(&t.key)
                .into_iter()
                .flatten()
                .filter_map(|k| targets_of.get(k).map(|(c, p)| (k.clone(), c.clone(), p.clone())))
                .collect();
            let decided = match policy {
                Some((claim, policy)) => {
                    // Unknown profiles were rejected when loading.
                    let fw = self
                        .profiles
                        .for_policy(&policy.meta.annotations)
                        .unwrap_or_else(|| self.profiles.default_profile());
                    self.decide(
                        t,
                        Some(&claim.policy),
                        &policy.spec.placement,
                        fw,
                        prev.as_ref(),
                        (inputs, &snapshots),
                        &snapshot_versions,
                        &required,
                    )?
                }
                None if !required.is_empty() => {
                    let placement = crate::policy::types::Placement::default();
                    let fw = self.profiles.default_profile();
                    self.decide(
                        t,
                        None,
                        &placement,
                        fw,
                        prev.as_ref(),
                        (inputs, &snapshots),
                        &snapshot_versions,
                        &required,
                    )?
                }
                None => continue,
            };
            seen.insert(t.key.clone());
            report.workloads += 1;
            report.phases.schedule += decided.schedule_time;
            report.phases.render += decided.render_time;
            let Decided { mut record, inputs: dec_inputs, files, keep, problems, scheduled, requirements, .. } =
                decided;
            if scheduled {
                report.scheduled += 1;
                // Later workloads of this pass see this decision's replicas as assumed.
                if let Some(req) = &requirements {
                    assumed.update(&mut snapshots, &t.key, req, &record.targets, &dims);
                }
            }
            if let Some(p) = &record.policy {
                targets_of.insert(t.key.clone(), (record.targets.keys().cloned().collect(), p.clone()));
            }
            for p in problems {
                if let Some(cluster) = &p.cluster {
                    let note = format!("render failed on {cluster}, previous file kept: {}", p.reason);
                    notes.entry(t.key.clone()).or_default().push(note);
                    report.render_failures.push(p);
                } else {
                    report.unschedulable.push(p);
                }
            }
            for (cluster, (path, content)) in files {
                if let Some(cf) = plan.clusters.get_mut(&cluster) {
                    cf.files.insert(path, content);
                }
            }
            for (cluster, path) in keep {
                if let Some(cf) = plan.clusters.get_mut(&cluster) {
                    cf.keep.insert(path);
                }
            }
            record.decided_at_ms = now_ms;
            placements.push((record, dec_inputs, prev));
        }

        plan.summary = Some(summary_json(&placements));

        // Publish, then record: a crash in between re-derives the same output next time.
        let phase = Instant::now();
        let published = publish::publish_guarded(output_dir, &plan, &self.publish.guard)?;
        report.phases.publish += phase.elapsed();
        let phase = Instant::now();
        report.files_written = published.written.len();
        report.files_removed = published.removed.len();
        report.files_unchanged = published.unchanged;
        report.held_clusters = published.held;
        for h in &report.held_clusters {
            crate::metrics::record_hold(&h.cluster);
        }
        let held: BTreeMap<&str, &publish::HeldCluster> =
            report.held_clusters.iter().map(|h| (h.cluster.as_str(), h)).collect();
        let held_notes = |files: &[&BTreeMap<String, String>]| -> Vec<String> {
            let clusters: BTreeSet<&str> = files.iter().flat_map(|f| f.keys().map(String::as_str)).collect();
            clusters.into_iter().filter_map(|c| held.get(c)).map(|h| h.to_string()).collect()
        };

        for (mut record, dec_inputs, prev) in placements {
            let mut notes = notes.remove(&record.workload).unwrap_or_default();
            let mut with_files = vec![&record.files];
            with_files.extend(prev.as_ref().map(|p| &p.files));
            notes.extend(held_notes(&with_files));
            let changed = match &prev {
                None => true,
                Some(p) => {
                    p.result != record.result
                        || p.targets != record.targets
                        || p.files != record.files
                        || p.policy != record.policy
                        || p.affinity_name != record.affinity_name
                        || self.inputs_changed(p, &dec_inputs)?
                }
            } || self.notes_changed(&record.workload, &notes)?;
            if !changed {
                continue;
            }
            let history = HistoryRecord {
                seq: 0,
                at_ms: now_ms,
                trigger: trigger.to_string(),
                workload: record.workload.clone(),
                policy: record.policy.clone(),
                inputs: dec_inputs,
                result: record.result.clone(),
                notes,
            };
            record.history_seq = 0;
            let seq = self.store.record_decision(history, &record)?;
            let _ = seq;
            report.history_records += 1;
        }

        // Workloads that are no longer propagated: their files were not planned, so the
        // publisher removed them; record why.
        for old in self.store.placements()? {
            if seen.contains(&old.workload) {
                continue;
            }
            let history = HistoryRecord {
                seq: 0,
                at_ms: now_ms,
                trigger: trigger.to_string(),
                workload: old.workload.clone(),
                policy: old.policy.clone(),
                inputs: DecisionInputs {
                    template_hash: 0,
                    policy_hash: 0,
                    snapshot_versions: snapshot_versions.clone(),
                    previous: old.targets.iter().map(|(k, v)| (k.clone(), v.unwrap_or(0))).collect(),
                    previous_affinity: old.affinity_name.clone(),
                    profile: "karmada-default".into(),
                },
                result: ScheduleResult {
                    outcome: Outcome::Scheduled { targets: BTreeMap::new() },
                    verdicts: Vec::new(),
                    affinity_name: None,
                },
                notes: std::iter::once(
                    "template removed from the policy repository or no longer claimed by a policy".into(),
                )
                .chain(held_notes(&[&old.files]))
                .collect(),
            };
            self.store.append_history(history)?;
            self.store.remove_placement(&old.workload)?;
            report.removed_workloads.push(old.workload);
            report.history_records += 1;
        }
        self.store.flush()?;
        report.phases.record += phase.elapsed();
        if let Some(git) = &self.publish.git {
            report.commit = publish::git::commit_and_push(output_dir, git, trigger)?.commit;
        }
        report.duration_ms = started.elapsed().as_millis();
        Ok(report)
    }

    /// Whether a workload's notes (render failures) differ from its last history record, so a
    /// failure is recorded once, and so is its end.
    fn notes_changed(&self, workload: &ObjectKey, notes: &[String]) -> Result<bool, StoreError> {
        Ok(match self.store.last_history(workload)? {
            Some(h) => h.notes != notes,
            None => !notes.is_empty(),
        })
    }

    fn inputs_changed(&self, prev: &PlacementRecord, new: &DecisionInputs) -> Result<bool, StoreError> {
        Ok(match self.store.last_history(&prev.workload)? {
            Some(h) => h.inputs.template_hash != new.template_hash || h.inputs.policy_hash != new.policy_hash,
            None => true,
        })
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
        snapshot_versions: &BTreeMap<String, u64>,
        required: &[(ObjectKey, BTreeSet<String>, PolicyRef)],
    ) -> Result<Decided, StoreError> {
        let set = &inputs.set;
        let template_hash = self.store.put_blob(&serde_json::to_vec(&t.object).unwrap_or_default())?;
        let policy_json = policy_ref
            .and_then(|r| set.propagation_policy(r))
            .map(|p| serde_json::to_vec(&p.spec).unwrap_or_default())
            .unwrap_or_default();
        let policy_hash = self.store.put_blob(&policy_json)?;
        let previous: BTreeMap<String, i32> =
            prev.map(|p| p.targets.iter().map(|(k, v)| (k.clone(), v.unwrap_or(0))).collect()).unwrap_or_default();
        let previous_affinity = prev.and_then(|p| p.affinity_name.clone());
        let dec_inputs = DecisionInputs {
            template_hash,
            policy_hash,
            snapshot_versions: snapshot_versions.clone(),
            previous: previous.clone(),
            previous_affinity: previous_affinity.clone(),
            profile: fw.name.clone(),
        };
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
                let result = ScheduleResult {
                    outcome: Outcome::Unschedulable { reason: reason.clone() },
                    verdicts: Vec::new(),
                    affinity_name: None,
                };
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
            Some(_) => schedule::schedule(fw, &req, snapshots),
            None => attached(snapshots),
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
            add_required(&mut result, &mut targets, required, snapshots);
        }
        let Some(render_policy) = policy_ref.or_else(|| required.first().map(|(_, _, p)| p)) else {
            let result = ScheduleResult {
                outcome: Outcome::Unschedulable { reason: "not claimed by a policy".into() },
                verdicts: Vec::new(),
                affinity_name: None,
            };
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
        let overrides = render::overrides::applicable(set, t);
        let mut files = Vec::new();
        let mut keep = Vec::new();
        let mut file_map = BTreeMap::new();
        let mut problems = Vec::new();
        for (cluster, replicas) in &targets {
            let Some(snapshot) = snapshots.iter().find(|s| &s.name == cluster) else { continue };
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
                overrides: &overrides,
            };
            match render::render(&input) {
                Ok(content) => {
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
    let set = &inputs.set;
    let mut out: BTreeMap<ObjectKey, Vec<ObjectKey>> = BTreeMap::new();
    for t in &set.templates {
        let prev = previous(t);
        let Some(claim) = matching::claim_with_previous(set, t, prev.as_ref().and_then(|p| p.policy.as_ref())) else {
            continue;
        };
        if !set.propagation_policy(&claim.policy).is_some_and(|p| p.spec.propagate_deps) {
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
fn attached(snapshots: &[ClusterSnapshot]) -> ScheduleResult {
    let mut names: Vec<&String> = snapshots.iter().map(|s| &s.name).collect();
    names.sort();
    ScheduleResult {
        outcome: Outcome::Scheduled { targets: BTreeMap::new() },
        verdicts: names
            .into_iter()
            .map(|n| ClusterVerdict {
                name: n.clone(),
                feasible: true,
                reasons: vec!["not claimed by a policy: goes only where a workload needs it".into()],
                score: 0,
                scores: Vec::new(),
                available_replicas: None,
                replicas: None,
                selected: false,
            })
            .collect(),
        affinity_name: None,
    }
}

/// Adds the clusters of the dependents to a dependency's targets (Karmada merges a binding's
/// `requiredBy` clusters into its own result), noting which workload pulled it.
fn add_required(
    result: &mut ScheduleResult,
    targets: &mut BTreeMap<String, Option<i32>>,
    required: &[(ObjectKey, BTreeSet<String>, PolicyRef)],
    snapshots: &[ClusterSnapshot],
) {
    for (dependent, clusters, _) in required {
        for c in clusters {
            if !snapshots.iter().any(|s| &s.name == c) {
                continue;
            }
            targets.entry(c.clone()).or_insert(None);
            if let Some(v) = result.verdicts.iter_mut().find(|v| &v.name == c) {
                v.selected = true;
                v.reasons.push(format!("{REQUIRED_BY_PREFIX}{dependent}"));
            }
        }
    }
    result.outcome = Outcome::Scheduled { targets: targets.clone() };
}

struct Decided {
    record: PlacementRecord,
    inputs: DecisionInputs,
    files: Vec<(String, (String, String))>,
    keep: Vec<(String, String)>,
    problems: Vec<Problem>,
    scheduled: bool,
    /// Per-replica requirements of a scheduled workload (for assumed replicas).
    requirements: Option<ReplicaRequirements>,
    schedule_time: Duration,
    render_time: Duration,
}

/// Sets the age and confidence of a live snapshot (offline ones keep confidence 1); returns
/// the time of the observation (the last successful poll; `now_ms` for offline clusters).
pub fn set_confidence(snap: &mut ClusterSnapshot, now_ms: u64, model: &ModelSettings) -> u64 {
    let Some(f) = snap.freshness.as_mut() else { return now_ms };
    let age = if f.polled_at_ms == 0 { u64::MAX } else { now_ms.saturating_sub(f.polled_at_ms) };
    f.age_ms = age;
    f.confidence_ppm = (model.confidence(age, f.consecutive_failures) * 1e6).round() as u32;
    if f.polled_at_ms == 0 { now_ms } else { f.polled_at_ms.min(now_ms) }
}

/// Replicas deducted per (workload, live cluster) this pass.
#[derive(Debug, Default)]
pub struct Assumed {
    deducted: BTreeMap<(ObjectKey, String), i64>,
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
        for (cluster, replicas) in targets {
            let Some(r) = replicas else { continue };
            let Some(snap) = snapshots.iter_mut().find(|s| &s.name == cluster) else { continue };
            let Some(pods) = snap.pods.as_ref().filter(|_| snap.is_live()) else { continue };
            let want = assumed::pending(i64::from(*r), assumed::observed(pods, workload));
            let done = self.deducted.entry((workload.clone(), cluster.clone())).or_insert(0);
            if want > *done {
                assumed::deduct(snap, req, want - *done, dims);
                *done = want;
            }
        }
    }

    /// Replicas deducted in all.
    pub fn total(&self) -> i64 {
        self.deducted.values().sum()
    }
}

/// `OUT/.fedsched/placements.json`: the decisions in machine-readable form. Deterministic
/// (no times), so an unchanged fleet does not rewrite it.
fn summary_json(placements: &[(PlacementRecord, DecisionInputs, Option<PlacementRecord>)]) -> String {
    let items: Vec<serde_json::Value> = placements.iter().map(|(p, _, _)| crate::report::placement_json(p)).collect();
    let mut s = serde_json::to_string_pretty(&json!({ "placements": items })).unwrap_or_default();
    s.push('\n');
    s
}
