//! One reconcile pass through the whole flow: load → snapshot → schedule → render → publish
//! → record. The `render` command runs one pass; the daemon runs one per trigger.
//!
//! Owns: the order of the stages and what happens to a workload when a stage fails for it
//! (it keeps its previous output). Inputs that are invalid stop the pass before anything is
//! written: the output and the store stay as they were.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use serde_json::json;

use crate::members::live::LiveView;
use crate::members::offline_snapshot;
use crate::model::workload::interpret;
use crate::model::{ClusterSnapshot, Observed, Workload};
use crate::policy::load::load_repository;
use crate::policy::{LoadError, ObjectKey, PolicyRef, PolicySet, Template, matching};
use crate::publish::{self, ClusterFiles, PublishPlan};
use crate::render::{self, RenderInput};
use crate::schedule::{self, Framework, Outcome, ScheduleRequest, ScheduleResult, Strategy, assign};
use crate::store::{DecisionInputs, HistoryRecord, PlacementRecord, Store, StoreError};

/// Everything a pass reads from the policy repository, validated.
pub struct Inputs {
    pub set: PolicySet,
    pub snapshots: Vec<ClusterSnapshot>,
}

/// Loads, defaults and validates the policy repository and builds the offline snapshots.
/// Returns every problem found, or inputs that are safe to act on.
pub fn load_inputs(policy_dir: &Path) -> Result<Inputs, Vec<LoadError>> {
    let (set, mut errors) = load_repository(policy_dir);
    let mut snapshots = Vec::with_capacity(set.clusters.len());
    for c in &set.clusters {
        match offline_snapshot(c) {
            Ok(s) => snapshots.push(s),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok(Inputs { set, snapshots }) } else { Err(errors) }
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
    pub new_snapshot_versions: usize,
    pub history_records: usize,
    pub duration_ms: u128,
}

impl ReconcileReport {
    /// One line for logs and systemd's STATUS=.
    pub fn summary(&self) -> String {
        format!(
            "{} workloads: {} scheduled, {} unschedulable, {} render failures; files: {} written, {} removed, {} unchanged; {} ms",
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
    pub framework: Framework,
}

impl Reconciler {
    pub fn new(store: Store) -> Self {
        Reconciler { store, framework: Framework::karmada_default() }
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

        // Snapshot: version what we know of every member.
        let mut snapshot_versions = BTreeMap::new();
        for snap in &inputs.snapshots {
            let (version, new) = self.store.record_snapshot(snap, Observed { at_ms: now_ms, confidence: 1.0 })?;
            if new {
                report.new_snapshot_versions += 1;
            }
            snapshot_versions.insert(snap.name.clone(), version);
        }

        // Schedule and render every claimed template.
        let mut plan = PublishPlan { clusters: BTreeMap::new(), summary: None };
        for c in &set.clusters {
            plan.clusters.insert(c.meta.name.clone(), ClusterFiles::default());
        }
        let mut placements = Vec::new();
        let mut seen = BTreeSet::new();
        for t in &set.templates {
            let Some(claim) = matching::claim(set, t) else { continue };
            let Some(policy) = set.propagation_policy(&claim.policy) else { continue };
            seen.insert(t.key.clone());
            report.workloads += 1;
            let prev = self.store.placement(&t.key)?;
            let decided =
                self.decide(t, &claim.policy, &policy.spec.placement, prev.as_ref(), inputs, &snapshot_versions, set)?;
            let Decided { mut record, inputs: dec_inputs, files, keep, problems, scheduled } = decided;
            if scheduled {
                report.scheduled += 1;
            }
            for p in problems {
                if p.cluster.is_some() {
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
        let published = publish::publish(output_dir, &plan)?;
        report.files_written = published.written.len();
        report.files_removed = published.removed.len();
        report.files_unchanged = published.unchanged;

        for (mut record, dec_inputs, prev) in placements {
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
            };
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
                notes: Vec::new(),
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
                notes: vec!["template removed from the policy repository or no longer claimed by a policy".into()],
            };
            self.store.append_history(history)?;
            self.store.remove_placement(&old.workload)?;
            report.removed_workloads.push(old.workload);
            report.history_records += 1;
        }
        self.store.flush()?;
        report.duration_ms = started.elapsed().as_millis();
        Ok(report)
    }

    fn inputs_changed(&self, prev: &PlacementRecord, new: &DecisionInputs) -> Result<bool, StoreError> {
        Ok(match self.store.last_history(&prev.workload)? {
            Some(h) => h.inputs.template_hash != new.template_hash || h.inputs.policy_hash != new.policy_hash,
            None => true,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn decide(
        &self,
        t: &Template,
        policy_ref: &PolicyRef,
        placement: &crate::policy::types::Placement,
        prev: Option<&PlacementRecord>,
        inputs: &Inputs,
        snapshot_versions: &BTreeMap<String, u64>,
        set: &PolicySet,
    ) -> Result<Decided, StoreError> {
        let template_hash = self.store.put_blob(&serde_json::to_vec(&t.object).unwrap_or_default())?;
        let policy_json = set
            .propagation_policy(policy_ref)
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
            profile: "karmada-default".into(),
        };
        let keep_previous = |reason: String, result: ScheduleResult| -> Decided {
            let keep: Vec<(String, String)> =
                prev.map(|p| p.files.iter().map(|(c, f)| (c.clone(), f.clone())).collect()).unwrap_or_default();
            Decided {
                record: PlacementRecord {
                    workload: t.key.clone(),
                    policy: Some(policy_ref.clone()),
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
            }
        };

        let workload: Workload = match interpret(t.key.group(), &t.key.kind, &t.object) {
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
        let result = schedule::schedule(&self.framework, &req, &inputs.snapshots);
        let targets = match &result.outcome {
            Outcome::Scheduled { targets } => targets.clone(),
            Outcome::Unschedulable { reason } => {
                let reason = reason.clone();
                return Ok(keep_previous(reason, result));
            }
        };

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
        let mut keep = Vec::new();
        let mut file_map = BTreeMap::new();
        let mut problems = Vec::new();
        for (cluster, replicas) in &targets {
            let input = RenderInput {
                template: t,
                workload: &workload,
                policy: policy_ref,
                replicas: *replicas,
                completions: match workload.completions {
                    Some(c) if completions.is_empty() => Some(c),
                    Some(_) => Some(completions.get(cluster).copied().unwrap_or(0)),
                    None => None,
                },
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
                policy: Some(policy_ref.clone()),
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
        })
    }
}

struct Decided {
    record: PlacementRecord,
    inputs: DecisionInputs,
    files: Vec<(String, (String, String))>,
    keep: Vec<(String, String)>,
    problems: Vec<Problem>,
    scheduled: bool,
}

/// `OUT/.fedsched/placements.json`: the decisions in machine-readable form. Deterministic
/// (no times), so an unchanged fleet does not rewrite it.
fn summary_json(placements: &[(PlacementRecord, DecisionInputs, Option<PlacementRecord>)]) -> String {
    let items: Vec<serde_json::Value> = placements
        .iter()
        .map(|(p, _, _)| {
            let (state, reason) = match &p.result.outcome {
                Outcome::Scheduled { .. } => ("Scheduled", None),
                Outcome::Unschedulable { reason } => ("Unschedulable", Some(reason.clone())),
            };
            json!({
                "workload": {
                    "apiVersion": p.workload.api_version,
                    "kind": p.workload.kind,
                    "namespace": p.workload.namespace,
                    "name": p.workload.name,
                },
                "policy": p.policy.as_ref().map(|r| json!({"kind": r.kind.to_string(), "namespace": r.namespace, "name": r.name})),
                "state": state,
                "reason": reason,
                "clusters": p.targets.iter().map(|(c, r)| json!({"name": c, "replicas": r, "file": p.files.get(c)})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&json!({ "placements": items })).unwrap_or_default();
    s.push('\n');
    s
}
