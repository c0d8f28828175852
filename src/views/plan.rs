//! `fedsched plan`: what a change of the policy repository would do, as one document (JSON)
//! and its text and Markdown forms. Built from the [`PassPreview`] of the changed repository
//! (the daemon's pass up to the plan of the publish, nothing written) compared with either the
//! state the daemon last published (the stored placements and the output directory) or, with
//! a base repository, the preview of the base on the same store and snapshots (so only what
//! the change itself does shows).
//!
//! Per workload: the placement diff (`cluster: 4 → 6`, `+ cluster: 3`, `- cluster`), newly
//! scheduled or unschedulable with the reason, claim changes (which policy now wins and why,
//! [`matching::shadow_reason`]), removed workloads; the clusters the mass-deletion guard would
//! hold; per cluster the files added, changed and removed; with `diff`, the unified diff of
//! each changed file ([`crate::util::diff::unified`]).
//!
//! # In detail
//!
//! `views/plan.rs`: the plan document from a `PassPreview` against the published state or a base
//! preview on the same store; text, JSON, Markdown; `util/diff.rs` the unified diff; and
//! `on_daemon`, what `POST /api/v1/plan` runs (`PlanRequest` in, the document out) with the
//! `Planner` the daemon publishes in its `StatusView` after every good pass (its reconciler and the
//! live view that pass merged). `cli/plan.rs`: the command (`--base-ref` by `git archive | tar
//! -x`). It asks the daemon holding `--state` (`Store::in_use` probes the lock without creating
//! anything; the address from `<state>/http.addr`) or `--server`; otherwise, with `--local`, or
//! when the daemon cannot answer, it plans in process: each repository loaded by the reconciler of
//! a copy of the store (through the parse cache the copy holds), a cold `preview` on that copy, the
//! previews left to the process exit. Why the daemon and not only the persisted parse cache (which
//! a restart uses): measured (BENCHMARKS.md, S9), YAML parsing is about a tenth of a cold plan; a
//! cold plan is a cold restart (full check of the output, cold deducted views, every decision
//! restored), a warm one costs what the change touches.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde_json::{Value, json};

use crate::members::live::LiveView;
use crate::model::interpreter::Scope;
use crate::policy::LoadError;
use crate::policy::load::RepositoryFiles;
use crate::policy::matching;
use crate::policy::{ObjectKey, PolicyRef, PolicySet};
use crate::publish::{Preview, STATE_DIR};
use crate::reconcile::{Inputs, PassPreview, ReconcileError, Reconciler};
use crate::schedule::Outcome;
use crate::store::PlacementRecord;

/// What `fedsched plan` sends to a running daemon (`POST /api/v1/plan`): the changed
/// repository and, with `--base`/`--base-ref`, the base one, each as its files.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PlanRequest {
    pub after: RepositoryFiles,
    #[serde(default)]
    pub base: Option<RepositoryFiles>,
    /// Add the unified diff of every changed file.
    #[serde(default)]
    pub diff: bool,
}

/// What a running daemon plans with, as its last good pass left it: the reconciler (its
/// cache warm) and the live members that pass merged. The reconciler is held weakly: the
/// daemon owns it (and through it the store and its lock), and a status view kept by a reader
/// must not keep the store open after the daemon stopped or replaced it on a reload.
pub struct Planner {
    pub reconciler: std::sync::Weak<Reconciler>,
    pub live: LiveView,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner").field("live", &self.live.clusters.len()).finish_non_exhaustive()
    }
}

/// Why a plan has no document.
#[derive(Debug, thiserror::Error)]
pub enum PlanFailure {
    /// A repository of the request is invalid (`which`: "the changed repository", "the base
    /// repository").
    #[error("{} error(s) in {which}", errors.len())]
    Invalid { which: &'static str, errors: Vec<LoadError> },
    /// The preview failed (the store, the output directory).
    #[error("{0}")]
    Failed(#[from] ReconcileError),
    /// The reconciler of the last good pass is gone (the daemon stops, or reloaded its
    /// configuration and has not finished a pass with the new one).
    #[error("the daemon is stopping or reloading; ask again after its next pass")]
    Gone,
}

/// The plan document of `request` on a running daemon ([`Planner`]): each repository loaded
/// through the reconciler's parse cache ([`Reconciler::load_preview_inputs`]), the live members
/// merged as the daemon's pass merges them, previewed on the reconciler's warm cache
/// ([`Reconciler::preview_warm`]: nothing written, the reconciler left as it was), compared
/// with what the daemon published (or the base's preview). Costs what the change touches.
///
/// Never in a pass's way (a pull request's repository is anyone's): the plan's scripts have a
/// scope of their own ([`Scope`]: they cannot spend the pass's allowance nor strike out a
/// script the pass runs), its stages run on this thread, not on the pool the passes use
/// ([`crate::util::threads::off_pool`]), and it holds the reconciler's cache only to copy it.
pub fn on_daemon(
    planner: &Planner,
    output_dir: &Path,
    request: PlanRequest,
    now_ms: u64,
) -> Result<Value, PlanFailure> {
    let Some(reconciler) = planner.reconciler.upgrade() else { return Err(PlanFailure::Gone) };
    Scope::enter(Some(Scope::new("this plan")), || {
        crate::util::threads::off_pool(|| on_reconciler(&reconciler, &planner.live, output_dir, request, now_ms))
    })
}

/// [`on_daemon`] with the reconciler and the live members given apart.
pub fn on_reconciler(
    r: &Reconciler,
    live: &LiveView,
    output_dir: &Path,
    request: PlanRequest,
    now_ms: u64,
) -> Result<Value, PlanFailure> {
    let load = |files: RepositoryFiles, which: &'static str| -> Result<Inputs, PlanFailure> {
        let mut inputs = r
            .load_preview_inputs(files, &mut Default::default())
            .map_err(|errors| PlanFailure::Invalid { which, errors })?;
        inputs.apply_live(live, &r.store);
        Ok(inputs)
    };
    let after_inputs = load(request.after, "the changed repository")?;
    let base_inputs = request.base.map(|b| load(b, "the base repository")).transpose()?;
    let base = base_inputs.as_ref().map(|i| r.preview_warm(i, output_dir, now_ms)).transpose()?;
    let after = r.preview_warm(&after_inputs, output_dir, now_ms)?;
    let before = match &base {
        Some(b) => Before::Base(b),
        None => Before::Published,
    };
    Ok(document(&after, &before, &after_inputs.set, output_dir, request.diff))
}

/// What one side of the comparison says of a workload.
struct Side<'a> {
    policy: Option<&'a PolicyRef>,
    targets: &'a BTreeMap<String, Option<i32>>,
    scheduled: bool,
    reason: Option<String>,
}

fn stored_side(p: &PlacementRecord) -> Side<'_> {
    let (scheduled, reason) = match &p.result.outcome {
        Outcome::Scheduled { .. } => (true, None),
        Outcome::Unschedulable { reason } => (false, Some(reason.clone())),
    };
    Side { policy: p.policy.as_ref(), targets: &p.targets, scheduled, reason }
}

fn planned_side(d: &crate::reconcile::PlannedDecision) -> Side<'_> {
    let reason = d.problems().iter().find(|p| p.cluster.is_none()).map(|p| p.reason.clone());
    Side { policy: d.record().policy.as_ref(), targets: &d.record().targets, scheduled: d.scheduled(), reason }
}

/// What the comparison starts from.
pub enum Before<'a> {
    /// The stored placements and the output directory as they are.
    Published,
    /// The preview of a base repository on the same store.
    Base(&'a PassPreview),
}

/// The plan document of `after` (the preview of the changed repository, whose set is `set`)
/// against `before`; `out` is the output directory both previews compared with. `diff` adds
/// the unified diff of every changed file.
pub fn document(after: &PassPreview, before: &Before<'_>, set: &PolicySet, out: &Path, diff: bool) -> Value {
    let workloads = workloads(after, before, set);
    let (clusters, diffs, summary_changed) = files(after, before, out, diff);
    let held: Vec<Value> = after
        .files
        .held
        .iter()
        .filter(|h| match before {
            Before::Published => true,
            Before::Base(b) => !b.files.held.contains(h),
        })
        .map(|h| json!({"cluster": h.cluster, "objects": h.objects, "removals": h.removals, "message": h.to_string()}))
        .collect();
    // Workloads whose change the guard would hold whole: not published, their placement stays.
    let held_moves: Vec<Value> = after
        .files
        .held_moves
        .iter()
        .filter(|m| match before {
            Before::Published => true,
            Before::Base(b) => !b.files.held_moves.iter().any(|o| o.owner == m.owner),
        })
        .map(|m| json!({"workload": m.owner, "held": m.held, "waiting": m.waiting}))
        .collect();
    let stability: Vec<Value> = after
        .stability
        .events
        .iter()
        .map(|e| json!({"workload": e.workload.as_ref().map(|w| w.display_ref()), "cluster": e.cluster, "kind": e.kind, "text": e.text}))
        .collect();
    let rollouts = rollouts(after, before);
    let count = |what: &str| workloads.iter().filter(|w| w["change"] == what).count();
    let files_count = |what: &str| clusters.iter().map(|c| c[what].as_array().map_or(0, Vec::len)).sum::<usize>();
    let claim_changes = workloads.iter().filter(|w| !w["claim"].is_null()).count();
    // A repository that places nothing any more: the pass would write nothing at all.
    let emptied = after.emptied.as_ref().filter(|_| match before {
        Before::Published => true,
        Before::Base(b) => b.emptied.is_none(),
    });
    let changes = !workloads.is_empty()
        || !clusters.is_empty()
        || !held.is_empty()
        || !held_moves.is_empty()
        || emptied.is_some()
        || summary_changed
        || !rollouts.is_empty();
    let mut doc = json!({
        "changes": changes,
        "base": matches!(before, Before::Base(_)),
        "summary": {
            "workloads": after.decisions.len(),
            "changed": workloads.len(),
            "placementChanged": count("placement"),
            "newlyScheduled": count("newly-scheduled"),
            "newlyUnschedulable": count("newly-unschedulable"),
            "added": count("added"),
            "removed": count("removed"),
            "claimChanges": claim_changes,
            "heldClusters": held.len(),
            "clusters": clusters.len(),
            "filesAdded": files_count("added"),
            "filesChanged": files_count("changed"),
            "filesRemoved": files_count("removed"),
            "placementsJsonChanged": summary_changed,
            "rollouts": rollouts.len(),
        },
        "workloads": workloads,
        "rollouts": rollouts,
        "held": held,
        "heldMoves": held_moves,
        "emptied": emptied,
        "clusters": clusters,
        "stability": stability,
        "interruptedPublish": after.files.interrupted,
    });
    if diff {
        doc["diffs"] = Value::Array(diffs);
    }
    doc
}

/// The progressive rollouts this plan starts or moves (against the stored states, or the base
/// preview's): per workload its state after the pass and, per stage, its clusters and the
/// version they get this pass — the new one, or the previous one until the gates before the
/// stage pass (`gatesBefore`, each at least `minSuccessTime`: `earliestIn`).
fn rollouts(after: &PassPreview, before: &Before<'_>) -> Vec<Value> {
    use super::rollout::{dur, stage};
    use crate::schedule::rollout::Phase;
    after
        .rollouts
        .iter()
        .filter(|(key, state, changed)| match before {
            Before::Published => *changed,
            Before::Base(b) => !b.rollouts.iter().any(|(k, s, _)| k == key && s == state),
        })
        .map(|(key, state, _)| {
            let current = state.current();
            let stages: Vec<Value> = state
                .stages
                .iter()
                .enumerate()
                .map(|(i, _)| {
                    let gates = match (state.runs_new(i), &state.phase, current) {
                        (false, Phase::Progressing, Some(c)) => Some(i.saturating_sub(c)),
                        _ => None,
                    };
                    let mut entry = stage(state, i);
                    entry["gatesBefore"] = json!(gates);
                    entry["earliestIn"] = json!(gates.map(|g| dur(g as u64 * state.gate.min_success_ms)));
                    entry
                })
                .collect();
            json!({
                "workload": key.display_ref(),
                "policy": state.policy,
                "state": state.phase.as_str(),
                "stage": current.and_then(|i| state.stages.get(i)).map(|s| s.0.clone()),
                "minSuccessTime": dur(state.gate.min_success_ms),
                "stages": stages,
            })
        })
        .collect()
}

/// The lines of one rollout of a plan: its state, then per stage the version its clusters get.
pub fn rollout_lines(r: &Value) -> Vec<String> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut lines = vec![format!(
        "rollout ({}): {}{}",
        s(&r["policy"]),
        s(&r["state"]),
        r["stage"].as_str().map(|st| format!(" at stage {st}")).unwrap_or_default()
    )];
    for st in r["stages"].as_array().into_iter().flatten() {
        let clusters: Vec<String> = st["clusters"].as_array().into_iter().flatten().map(s).collect();
        let when = match (st["version"].as_str(), st["gatesBefore"].as_u64()) {
            (Some("new"), _) => "the new version this pass".to_string(),
            (_, Some(g)) => {
                format!("the previous version until {g} more gate(s) pass (at least {})", s(&st["earliestIn"]))
            }
            _ => "the previous version".to_string(),
        };
        lines.push(format!("stage {} ({}): {when}", s(&st["name"]), clusters.join(", ")));
    }
    lines
}

/// The workloads whose placement, schedulability or claim differ between the two sides.
fn workloads(after: &PassPreview, before: &Before<'_>, set: &PolicySet) -> Vec<Value> {
    let templates: HashMap<&ObjectKey, &crate::policy::Template> =
        set.templates.iter().map(|t| (&t.key, &**t)).collect();
    let old: BTreeMap<&ObjectKey, Side<'_>> = match before {
        Before::Published => after.before.iter().map(|(k, p)| (k, stored_side(p))).collect(),
        Before::Base(b) => b.decisions.iter().map(|(k, d)| (k, planned_side(d))).collect(),
    };
    let new: BTreeMap<&ObjectKey, Side<'_>> = after.decisions.iter().map(|(k, d)| (k, planned_side(d))).collect();
    let keys: BTreeSet<&ObjectKey> = old.keys().chain(new.keys()).copied().collect();
    let mut out = Vec::new();
    for key in keys {
        let (o, n) = (old.get(key), new.get(key));
        let change = match (o, n) {
            (None, Some(n)) if n.scheduled => "added",
            (None, Some(_)) => "newly-unschedulable",
            (Some(_), None) => "removed",
            (Some(o), Some(n)) if o.scheduled && !n.scheduled => "newly-unschedulable",
            (Some(o), Some(n)) if !o.scheduled && n.scheduled => "newly-scheduled",
            (Some(o), Some(n)) if o.targets != n.targets => "placement",
            (Some(o), Some(n)) if o.policy != n.policy => "claim",
            _ => continue,
        };
        let empty = BTreeMap::new();
        let placement = placement_diff(o.map_or(&empty, |s| s.targets), n.map_or(&empty, |s| s.targets));
        let claim = match (o.and_then(|s| s.policy), n.and_then(|s| s.policy)) {
            (a, b) if a == b => Value::Null,
            (a, b) => {
                let reason = claim_reason(set, templates.get(key).copied(), a, b);
                json!({"before": a.map(ToString::to_string), "after": b.map(ToString::to_string), "reason": reason})
            }
        };
        let reason = match change {
            "newly-unschedulable" => n.and_then(|s| s.reason.clone()),
            "newly-scheduled" => o.and_then(|s| s.reason.clone()).map(|r| format!("was unschedulable: {r}")),
            "removed" => Some("no longer in the repository or no longer claimed by a policy".into()),
            _ => None,
        };
        out.push(json!({
            "workload": key.display_ref(),
            "change": change,
            "placement": placement,
            "claim": claim,
            "reason": reason,
        }));
    }
    out
}

/// Per cluster of either side: before and after replicas (`null` for a duplicated workload
/// without a count, or a cluster the side does not have), only where they differ.
fn placement_diff(old: &BTreeMap<String, Option<i32>>, new: &BTreeMap<String, Option<i32>>) -> Vec<Value> {
    let clusters: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    clusters
        .into_iter()
        .filter(|c| old.get(*c) != new.get(*c))
        .map(|c| {
            json!({
                "cluster": c,
                "before": old.get(c).map(|r| json!({"replicas": r})),
                "after": new.get(c).map(|r| json!({"replicas": r})),
            })
        })
        .collect()
}

/// Why the claim moved from `old` to `new` (in the changed set).
fn claim_reason(
    set: &PolicySet,
    template: Option<&crate::policy::Template>,
    old: Option<&PolicyRef>,
    new: Option<&PolicyRef>,
) -> String {
    match (old, new, template) {
        (_, None, _) => "no policy claims the template any more".into(),
        (None, Some(p), _) => format!("{p} claims the template"),
        (Some(o), Some(n), Some(t)) => match matching::claim_with_previous(set, t, Some(o)) {
            Some(c) if c.shadowed.contains(o) => format!("{n} wins; {o}: {}", matching::shadow_reason(set, t, &c, o)),
            _ if set.propagation_policy(o).is_none() => format!("{o} is no longer in the repository"),
            _ => format!("{o} no longer matches the template"),
        },
        (Some(o), Some(n), None) => format!("{n} replaces {o}"),
    }
}

/// Per cluster the files added, changed and removed (sorted by cluster, then path), the
/// unified diffs when asked, and whether the summary (any of its shards) changes.
fn files(after: &PassPreview, before: &Before<'_>, out: &Path, diff: bool) -> (Vec<Value>, Vec<Value>, bool) {
    let disk = |path: &str| std::fs::read(out.join(path)).ok();
    let final_of = |p: &Preview, path: &str| -> Option<Vec<u8>> {
        match p.writes.get(path) {
            Some(b) => Some(b.to_vec()),
            None if p.deletions.contains(path) => None,
            None => disk(path),
        }
    };
    let mut paths: BTreeSet<&str> =
        after.files.writes.keys().map(String::as_str).chain(after.files.deletions.iter().map(String::as_str)).collect();
    if let Before::Base(b) = before {
        paths.extend(b.files.writes.keys().map(String::as_str).chain(b.files.deletions.iter().map(String::as_str)));
    }
    let mut per_cluster: BTreeMap<&str, [Vec<&str>; 3]> = BTreeMap::new();
    let mut diffs = Vec::new();
    let mut summary_changed = false;
    for path in paths {
        let old = match before {
            Before::Published => disk(path),
            Before::Base(b) => final_of(&b.files, path),
        };
        let new = final_of(&after.files, path);
        if old == new {
            continue;
        }
        if path.starts_with(&format!("{STATE_DIR}/")) {
            summary_changed = true;
            continue;
        }
        let Some((cluster, rel)) = path.split_once('/') else { continue };
        let slot = match (&old, &new) {
            (None, _) => 0,
            (Some(_), Some(_)) => 1,
            (Some(_), None) => 2,
        };
        per_cluster.entry(cluster).or_default()[slot].push(rel);
        if diff {
            let text = |b: &Option<Vec<u8>>| b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
            let d = match crate::secrets::is_secret_path(rel) {
                // A plan is a pull request's comment: a Secret's content never goes there.
                true => format!("--- {path}\n+++ {path}\n(a Secret: its content is not shown)\n"),
                false => crate::util::diff::unified(path, text(&old).as_deref(), text(&new).as_deref()),
            };
            diffs.push(json!({"path": path, "diff": d}));
        }
    }
    let clusters = per_cluster
        .into_iter()
        .map(|(c, [added, changed, removed])| json!({"cluster": c, "added": added, "changed": changed, "removed": removed}))
        .collect();
    (clusters, diffs, summary_changed)
}

/// `cluster: 4 → 6`, `+ cluster: 3`, `- cluster` (no count for a duplicated workload).
fn placement_lines(w: &Value) -> Vec<String> {
    let count = |v: &Value| v["replicas"].as_i64().map(|r| r.to_string());
    w["placement"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let c = p["cluster"].as_str().unwrap_or("");
            match (p["before"].is_null(), p["after"].is_null()) {
                (true, _) => match count(&p["after"]) {
                    Some(r) => format!("+ {c}: {r}"),
                    None => format!("+ {c}"),
                },
                (false, true) => format!("- {c}"),
                (false, false) => format!(
                    "{c}: {} → {}",
                    count(&p["before"]).unwrap_or_else(|| "-".into()),
                    count(&p["after"]).unwrap_or_else(|| "-".into())
                ),
            }
        })
        .collect()
}

/// The lines that say how one workload of a plan changes (placement, claim, state).
pub fn workload_lines(w: &Value) -> Vec<String> {
    let mut lines = placement_lines(w);
    if let Some(c) = w["claim"].as_object() {
        let show = |v: &Value| v.as_str().unwrap_or("none").to_string();
        lines.push(format!(
            "policy: {} → {} ({})",
            show(&c["before"]),
            show(&c["after"]),
            c["reason"].as_str().unwrap_or("")
        ));
    }
    match (w["change"].as_str(), w["reason"].as_str()) {
        (Some("newly-unschedulable"), r) => {
            lines.push(format!("newly unschedulable: {} (previous files kept)", r.unwrap_or("")))
        }
        (Some("newly-scheduled"), r) => lines.push(format!("newly scheduled ({})", r.unwrap_or(""))),
        (Some("removed"), r) => lines.push(format!("removed: {}", r.unwrap_or(""))),
        (Some("added"), _) => lines.push("new workload".into()),
        _ => {}
    }
    lines
}

/// The one-line summary of a plan document.
pub fn summary_line(doc: &Value) -> String {
    let s = &doc["summary"];
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    if doc["changes"] != true {
        return format!("No changes: {} workloads, placements and files as they are.", n("workloads"));
    }
    format!(
        "Plan: {} of {} workloads change ({} placement, {} newly scheduled, {} newly unschedulable, {} added, {} removed, {} claim changes); files in {} clusters: {} added, {} changed, {} removed; {} clusters held.",
        n("changed"),
        n("workloads"),
        n("placementChanged"),
        n("newlyScheduled"),
        n("newlyUnschedulable"),
        n("added"),
        n("removed"),
        n("claimChanges"),
        n("clusters"),
        n("filesAdded"),
        n("filesChanged"),
        n("filesRemoved"),
        n("heldClusters"),
    )
}

/// The file changes of one cluster of a plan (`+ added`, `~ changed`, `- removed`).
pub fn file_lines(c: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for (key, mark) in [("added", "+"), ("changed", "~"), ("removed", "-")] {
        for p in c[key].as_array().into_iter().flatten() {
            lines.push(format!("{mark} {}", p.as_str().unwrap_or("")));
        }
    }
    lines
}

/// The text form of a plan document.
pub fn to_text(doc: &Value) -> String {
    let mut out = format!("{}\n", summary_line(doc));
    if doc["interruptedPublish"] == true {
        out.push_str("note: an interrupted publish waits in the output directory; the next pass finishes it first\n");
    }
    for w in doc["workloads"].as_array().into_iter().flatten() {
        out.push_str(&format!("\n{}\n", w["workload"].as_str().unwrap_or("")));
        for l in workload_lines(w) {
            out.push_str(&format!("  {l}\n"));
        }
    }
    for r in doc["rollouts"].as_array().into_iter().flatten() {
        out.push_str(&format!("\n{}\n", r["workload"].as_str().unwrap_or("")));
        for l in rollout_lines(r) {
            out.push_str(&format!("  {l}\n"));
        }
    }
    if let Some(m) = doc["emptied"].as_str() {
        out.push_str(&format!("\nheld: {m}\n"));
    }
    for h in doc["held"].as_array().into_iter().flatten() {
        out.push_str(&format!("\nheld: {}\n", h["message"].as_str().unwrap_or("")));
    }
    for m in doc["heldMoves"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "\nheld whole: {} (its placement stays as published)\n",
            m["workload"].as_str().unwrap_or("")
        ));
    }
    for e in doc["stability"].as_array().into_iter().flatten() {
        out.push_str(&format!("\nstability: {}\n", e["text"].as_str().unwrap_or("")));
    }
    let clusters = doc["clusters"].as_array().into_iter().flatten().collect::<Vec<_>>();
    if !clusters.is_empty() {
        out.push_str("\nfiles:\n");
        for c in clusters {
            out.push_str(&format!("  {}\n", c["cluster"].as_str().unwrap_or("")));
            for l in file_lines(c) {
                out.push_str(&format!("    {l}\n"));
            }
        }
    }
    for d in doc["diffs"].as_array().into_iter().flatten() {
        out.push('\n');
        out.push_str(d["diff"].as_str().unwrap_or(""));
    }
    out
}

/// The counts of a plan's summary, as the Markdown table and the web view show them: (label,
/// key in `summary`).
pub const COUNTS: [(&str, &str); 11] = [
    ("workloads changed", "changed"),
    ("placement changes", "placementChanged"),
    ("newly scheduled", "newlyScheduled"),
    ("newly unschedulable", "newlyUnschedulable"),
    ("added", "added"),
    ("removed", "removed"),
    ("claim changes", "claimChanges"),
    ("clusters held by the mass-deletion guard", "heldClusters"),
    ("files added", "filesAdded"),
    ("files changed", "filesChanged"),
    ("files removed", "filesRemoved"),
];

/// The Markdown form, for a pull-request comment: the summary and a table first, the details
/// folded (`<details>`).
pub fn to_markdown(doc: &Value) -> String {
    let s = &doc["summary"];
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    let mut out = String::from("### fedsched plan\n\n");
    out.push_str(&format!("{}\n\n", summary_line(doc)));
    if doc["changes"] != true {
        return out;
    }
    out.push_str("| | count |\n|---|---:|\n");
    for (label, key) in COUNTS {
        out.push_str(&format!("| {label} | {} |\n", n(key)));
    }
    let md = |s: &str| s.replace('|', "\\|");
    let workloads = doc["workloads"].as_array().into_iter().flatten().collect::<Vec<_>>();
    if !workloads.is_empty() {
        out.push_str(&format!("\n<details><summary>Workloads ({})</summary>\n\n", workloads.len()));
        out.push_str("| workload | change | details |\n|---|---|---|\n");
        for w in workloads {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                w["workload"].as_str().unwrap_or(""),
                w["change"].as_str().unwrap_or(""),
                md(&workload_lines(w).join("<br>"))
            ));
        }
        out.push_str("\n</details>\n");
    }
    let rollouts = doc["rollouts"].as_array().into_iter().flatten().collect::<Vec<_>>();
    if !rollouts.is_empty() {
        out.push_str(&format!("\n<details open><summary>Rollouts ({})</summary>\n\n", rollouts.len()));
        out.push_str("| workload | rollout |\n|---|---|\n");
        for r in rollouts {
            out.push_str(&format!(
                "| `{}` | {} |\n",
                r["workload"].as_str().unwrap_or(""),
                md(&rollout_lines(r).join("<br>"))
            ));
        }
        out.push_str("\n</details>\n");
    }
    if let Some(m) = doc["emptied"].as_str() {
        out.push_str(&format!("\n> **held**: {}\n", md(m)));
    }
    for h in doc["held"].as_array().into_iter().flatten() {
        out.push_str(&format!("\n> **held**: {}\n", md(h["message"].as_str().unwrap_or(""))));
    }
    for m in doc["heldMoves"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "\n> **held whole**: {} (its placement stays as published)\n",
            md(m["workload"].as_str().unwrap_or(""))
        ));
    }
    let clusters = doc["clusters"].as_array().into_iter().flatten().collect::<Vec<_>>();
    if !clusters.is_empty() {
        out.push_str(&format!("\n<details><summary>Files in {} clusters</summary>\n\n", clusters.len()));
        for c in clusters {
            out.push_str(&format!("- **{}**\n", c["cluster"].as_str().unwrap_or("")));
            for l in file_lines(c) {
                out.push_str(&format!("  - `{l}`\n"));
            }
        }
        out.push_str("\n</details>\n");
    }
    let diffs = doc["diffs"].as_array().into_iter().flatten().collect::<Vec<_>>();
    if !diffs.is_empty() {
        out.push_str("\n<details><summary>Diff</summary>\n\n```diff\n");
        for d in diffs {
            out.push_str(d["diff"].as_str().unwrap_or(""));
        }
        out.push_str("```\n\n</details>\n");
    }
    out
}
