//! Takeover (`[ha]`): a new leader adopts what the previous leader published as its previous
//! placements and claims, so that its first pass decides exactly what the old leader's next
//! pass would have (steady division, the first claimer, the affinity term in force).
//!
//! The summary (`OUT/.fedsched/placements/*.json`, or the single `placements.json` of
//! earlier versions) carries, per workload, the claiming policy, the targets
//! with their replicas, the file of each cluster and the `clusterAffinities` term in force:
//! the inputs a decision reads of its previous placement. Each entry that differs from this
//! instance's store replaces its placement (its stored decision is dropped: it was made from
//! another previous placement); placements the output no longer lists are removed.
//!
//! The same shards carry each progressive rollout's course (issue 52,
//! [`crate::render::summary::rollout_item`]): the stage released, when, since when it is
//! healthy, the failures, the approvals given before it started, the previous and the new
//! version. Adoption puts each into the store in the same way (the standby's shadow passes
//! store no rollout state), so the new leader's first pass continues the rollout at its stage
//! and gate: it neither restarts at stage 1 nor settles it as complete (which would publish the
//! new version everywhere without the gates). Rollouts the output no longer lists are
//! forgotten. Each entry also lists the workload's graceful eviction tasks (the files kept on
//! a member it left until their purge, as a ResourceBinding's `spec.gracefulEvictionTasks`):
//! they replace the engine's tasks in the store ([`adopt_tasks`]). What the file does not
//! carry stays this instance's own: the history (the old leader's records are in the old
//! leader's store) and the rest of the stability engine's state (the members' timelines).
//!
//! Each placement adoption writes or removes gets a history record of its own (trigger
//! `takeover`, both input hashes [`ADOPTED`]; a removal's both 0, as `record_removed` writes
//! them) with a [`crate::store::ReplayRef`] of pass 0: not a decision of this instance, so
//! `fedsched replay` reports it as not replayable, but the placement it holds is what the new
//! leader's first pass started from, and the replay of that pass rebuilds it from there
//! (`RecordedHistory::placements_at`) — without it the replay would start
//! from this store's older placements (issue 46, invariant 6).

use std::collections::BTreeMap;
use std::path::Path;

use crate::render::summary::{Published, Summary, read_published};
use crate::schedule::{Outcome, ScheduleResult};
use crate::store::{DecisionInputs, HistoryRecord, PlacementRecord, ReplayRef, Store, StoreError};

/// The template and policy hash of an adoption's history record: not a blob (the summary
/// carries neither document), never 0 (both 0 is a removal's record).
pub const ADOPTED: u64 = u64::MAX;

/// The note of an adoption's history record of a placement written.
const ADOPTED_NOTE: &str = "adopted from the previous leader's published summary at the takeover";
/// The note of an adoption's history record of a placement removed.
const UNLISTED_NOTE: &str = "removed at the takeover: the previous leader's published summary no longer lists it";

/// What `fedsched replay` says of an adoption's record.
pub const ADOPTION_REASON: &str =
    "adopted at a takeover from the previous leader's published summary: no decision of this instance";

/// Whether a history record is an adoption's (not a decision: no pass of this instance made it).
pub fn is_adoption(h: &HistoryRecord) -> bool {
    h.notes.first().is_some_and(|n| n == ADOPTED_NOTE || n == UNLISTED_NOTE)
}

/// What an adoption changed in the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Adopted {
    /// Entries in the published summary.
    pub published: usize,
    /// Placements written because they differed from the store's.
    pub changed: usize,
    /// Placements removed because the output no longer lists them.
    pub removed: usize,
    /// Rollout states written because they differed from the store's (issue 52).
    pub rollouts: usize,
    /// Rollout states removed because the output no longer lists them.
    pub rollouts_removed: usize,
    /// Workloads whose graceful eviction tasks were replaced by the published ones.
    pub tasks: usize,
}

/// Why the published state could not be adopted.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The takeover of a new leader's term without git mode, before its first pass: a publish
/// the previous leader left half-done is finished ([`crate::publish::recover`]), so that the
/// placements adopted are the last ones it published, then [`adopt_published`]. The caller
/// holds the output directory ([`crate::publish::claim_output`]) and starts a new reconciler
/// on `store` afterwards. (Git mode syncs its work tree to the remote under the lease's fence
/// instead: `daemon`.)
pub fn take_over(store: &Store, output_dir: &Path, now_ms: u64) -> Result<Adopted, AdoptError> {
    super::recover(store, output_dir).map_err(|e| AdoptError::Read {
        path: output_dir.display().to_string(),
        message: format!("cannot finish the previous leader's publish: {e}"),
    })?;
    adopt_published(store, output_dir, now_ms)
}

/// Adopts the summary of `output_dir` (its shards under `.fedsched/placements/`, else the
/// `placements.json` of an earlier version) into `store` (neither: nothing published yet,
/// nothing to adopt). `now_ms` stamps the history record of each placement written or removed.
pub fn adopt_published(store: &Store, output_dir: &Path, now_ms: u64) -> Result<Adopted, AdoptError> {
    let Summary { placements: published, rollouts } = match read_published(&output_dir.join(crate::publish::STATE_DIR))
    {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(Adopted::default()),
        Err((path, message)) => return Err(AdoptError::Read { path: path.display().to_string(), message }),
    };
    let mut done = Adopted { published: published.len(), ..Default::default() };
    done.tasks = adopt_tasks(store, &published)?;
    let mut stale = Vec::new();
    let listed: std::collections::BTreeSet<_> = published.iter().map(|p| p.workload.clone()).collect();
    for p in published {
        let existing = store.placement(&p.workload)?;
        let record = record_of(p, now_ms);
        if existing.as_ref().is_some_and(|e| same_decision_inputs(e, &record)) {
            continue;
        }
        let seq = store.record_decision(adoption_record(&record, now_ms, false), &record)?;
        store.put_replay_refs(&[(seq, adoption_ref(&record, false))])?;
        stale.push(record.workload.clone());
        done.changed += 1;
    }
    for p in store.placements()? {
        if !listed.contains(&p.workload) {
            let seq = store.append_history(adoption_record(&p, now_ms, true))?;
            store.put_replay_refs(&[(seq, adoption_ref(&p, true))])?;
            store.remove_placement(&p.workload)?;
            stale.push(p.workload.clone());
            done.removed += 1;
        }
    }
    store.remove_stored_decisions(&stale)?;
    // The rollouts' courses, one path with the placements: a differing one replaces the
    // store's, one the summary does not list is forgotten.
    let listed: std::collections::BTreeSet<String> = rollouts.iter().map(|r| r.workload.store_key()).collect();
    for r in rollouts {
        if store.rollout(&r.workload)?.is_none_or(|own| !own.same_course(&r.state)) {
            store.put_rollout(&r.workload, &r.state)?;
            done.rollouts += 1;
        }
    }
    for (sk, _) in store.rollouts()? {
        if !listed.contains(&sk) {
            store.remove_rollout(&sk)?;
            done.rollouts_removed += 1;
        }
    }
    store.flush()?;
    Ok(done)
}

/// The graceful eviction tasks of the published entries replace the store's (the engine's
/// state): a workload's files kept on a member it left stay until the new leader purges them,
/// by the same rules, from the same eviction time and grace period — without them its first
/// pass removed every kept copy at once, a workload's last Ready replicas among them (issue
/// 46, `[ha]` invariant 1, simulation seeds 181 and 196). A workload the summary lists without
/// tasks, or does not list, has none. The summary lists the tasks whose files stay
/// ([`crate::schedule::stability::WorkloadStability::kept_tasks`]), never a `Directly` one
/// (its files went in the pass that started it): this instance's own of an earlier term go
/// too. The rest of the state (the members' timelines, the storm guard, failover's memory)
/// stays this instance's. Returns how many workloads' tasks changed.
fn adopt_tasks(store: &Store, published: &[Published]) -> Result<usize, StoreError> {
    let mut state = store.stability()?;
    let mut changed = 0;
    for p in published {
        let own = state.workloads.get(&p.workload).map_or(&[][..], |w| w.tasks.as_slice());
        if own != p.tasks.as_slice() {
            state.workloads.entry(p.workload.clone()).or_default().tasks = p.tasks.clone();
            changed += 1;
        }
    }
    let with_tasks: std::collections::BTreeSet<&crate::policy::ObjectKey> =
        published.iter().filter(|p| !p.tasks.is_empty()).map(|p| &p.workload).collect();
    for (key, w) in &mut state.workloads {
        if !w.tasks.is_empty() && !with_tasks.contains(key) {
            w.tasks.clear();
            changed += 1;
        }
    }
    if changed > 0 {
        state.workloads.retain(|_, w| !w.is_empty());
        store.put_stability(&state)?;
    }
    Ok(changed)
}

/// The history record of an adopted placement (`removed`: of one the summary no longer lists).
fn adoption_record(p: &PlacementRecord, now_ms: u64, removed: bool) -> HistoryRecord {
    let hash = if removed { 0 } else { ADOPTED };
    let note = if removed { UNLISTED_NOTE } else { ADOPTED_NOTE };
    HistoryRecord {
        seq: 0,
        at_ms: now_ms,
        trigger: crate::publish::Trigger::Takeover.as_str().to_string(),
        workload: p.workload.clone(),
        policy: p.policy.clone(),
        inputs: DecisionInputs {
            template_hash: hash,
            policy_hash: hash,
            snapshot_versions: 0,
            previous: BTreeMap::new(),
            previous_affinity: None,
            profile: String::new(),
            stability: 0,
        },
        result: if removed {
            ScheduleResult {
                outcome: Outcome::Scheduled { targets: BTreeMap::new() },
                ..ScheduleResult::unschedulable("")
            }
        } else {
            p.result.clone()
        },
        notes: vec![note.to_string()],
    }
}

/// The replay reference of an adoption's record: pass 0 (no pass of this instance made it),
/// the placement the replays of later passes start from (a removal: none).
fn adoption_ref(p: &PlacementRecord, removed: bool) -> ReplayRef {
    if removed {
        return ReplayRef { pass: 0, targets: BTreeMap::new(), affinity_name: None, files: Vec::new() };
    }
    ReplayRef {
        pass: 0,
        targets: p.targets.clone(),
        affinity_name: p.affinity_name.clone(),
        // The summary carries no content hash of the files (a replay reads only the paths).
        files: p.files.iter().map(|(c, f)| (c.clone(), f.clone(), 0)).collect(),
    }
}

/// The placement record of a published entry (its history sequence is set when its adoption
/// record is written).
fn record_of(p: Published, now_ms: u64) -> PlacementRecord {
    let outcome = match p.unschedulable {
        None => Outcome::Scheduled { targets: p.targets.clone() },
        Some(reason) => Outcome::Unschedulable { reason },
    };
    PlacementRecord {
        workload: p.workload,
        policy: p.policy,
        result: ScheduleResult {
            outcome,
            verdicts: Default::default(),
            rejected: Vec::new(),
            universe: 0,
            affinity_name: p.affinity.clone(),
        },
        targets: p.targets,
        affinity_name: p.affinity,
        files: p.files,
        history_seq: 0,
        decided_at_ms: now_ms,
    }
}

/// Whether two placements give a decision the same previous placement and claim.
fn same_decision_inputs(a: &PlacementRecord, b: &PlacementRecord) -> bool {
    a.policy == b.policy
        && a.targets == b.targets
        && a.affinity_name == b.affinity_name
        && a.files == b.files
        && std::mem::discriminant(&a.result.outcome) == std::mem::discriminant(&b.result.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{ObjectKey, PolicyKind, PolicyRef};
    use std::collections::BTreeMap;

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: name.into(),
        }
    }

    fn record(name: &str, targets: &[(&str, i32)], policy: &str, seq: u64) -> PlacementRecord {
        let targets: BTreeMap<String, Option<i32>> = targets.iter().map(|(c, r)| (c.to_string(), Some(*r))).collect();
        let files = targets.keys().map(|c| (c.clone(), format!("{c}/shop/{name}.yaml"))).collect();
        PlacementRecord {
            workload: key(name),
            policy: Some(PolicyRef {
                kind: PolicyKind::ClusterPropagationPolicy,
                namespace: None,
                name: policy.into(),
            }),
            result: ScheduleResult {
                outcome: Outcome::Scheduled { targets: targets.clone() },
                verdicts: Default::default(),
                rejected: Vec::new(),
                universe: 0,
                affinity_name: Some("primary".into()),
            },
            targets,
            affinity_name: Some("primary".into()),
            files,
            history_seq: seq,
            decided_at_ms: 7,
        }
    }

    #[test]
    fn the_published_placements_replace_the_stores_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tmp");
        let (state, out) = (dir.path().join("state"), dir.path().join("out"));
        let store = Store::open(&state).expect("store");
        // Nothing published yet: nothing to adopt.
        assert_eq!(adopt_published(&store, &out, 1_000).expect("adopt"), Adopted::default());
        // The old leader's output: web on a+b by `web`, api on c.
        let published = [record("web", &[("a", 4), ("b", 2)], "web", 0), record("api", &[("c", 1)], "api", 0)];
        std::fs::create_dir_all(out.join(".fedsched")).expect("mkdir");
        let text = crate::render::summary::summary_json(published.iter().map(PlacementRecord::summary));
        std::fs::write(out.join(".fedsched/placements.json"), text).expect("write");
        // This instance's store: web elsewhere by another claimer, api as published, old gone.
        store.put_placement(&record("web", &[("c", 6)], "rival", 3)).expect("put");
        store.put_placement(&record("api", &[("c", 1)], "api", 5)).expect("put");
        store.put_placement(&record("old", &[("a", 1)], "old", 9)).expect("put");
        let done = adopt_published(&store, &out, 1_000).expect("adopt");
        assert_eq!(done, Adopted { published: 2, changed: 1, removed: 1, ..Default::default() });
        let web = store.placement(&key("web")).expect("read").expect("web");
        assert_eq!(web.targets, published[0].targets);
        assert_eq!(web.policy, published[0].policy, "the first claimer is adopted");
        assert_eq!(web.affinity_name.as_deref(), Some("primary"));
        assert_eq!(web.files, published[0].files);
        let web_history = store.history(&key("web")).expect("history");
        assert_eq!(web.history_seq, web_history.last().expect("adoption record").seq, "its adoption's record");
        assert!(is_adoption(&web_history[0]) && web_history[0].trigger == "takeover", "{web_history:?}");
        assert_eq!(store.placement(&key("api")).expect("read").expect("api").history_seq, 5, "unchanged");
        assert!(store.placement(&key("old")).expect("read").is_none());
        // Adopting again changes nothing.
        assert_eq!(
            adopt_published(&store, &out, 1_000).expect("adopt"),
            Adopted { published: 2, changed: 0, removed: 0, ..Default::default() }
        );
        std::fs::write(out.join(".fedsched/placements.json"), "{\"placements\": 3}").expect("write");
        let e = adopt_published(&store, &out, 1_000).expect_err("bad file").to_string();
        assert!(e.contains("placements.json") && e.contains("not a list"), "{e}");
        // This version's shards: read instead of the single file of earlier versions (here
        // unreadable), every shard's entries together.
        let shards =
            crate::render::summary::Shards::of(published.iter().map(PlacementRecord::summary), std::iter::empty());
        std::fs::create_dir_all(out.join(".fedsched/placements")).expect("mkdir");
        for (i, text) in crate::render::summary::Shard::all().zip(&shards.0) {
            let name = crate::render::summary::shard_name(i);
            std::fs::write(out.join(".fedsched/placements").join(name), text.as_bytes()).expect("write");
        }
        assert_eq!(
            adopt_published(&store, &out, 1_000).expect("adopt"),
            Adopted { published: 2, changed: 0, removed: 0, ..Default::default() }
        );
        // A shard that lost web: web's placement is removed.
        let web = crate::render::summary::shard_name(crate::render::summary::shard_of(&key("web")));
        std::fs::write(out.join(".fedsched/placements").join(&web), "{\"placements\":[]}\n").expect("write");
        assert_eq!(
            adopt_published(&store, &out, 1_000).expect("adopt"),
            Adopted { published: 1, changed: 0, removed: 1, ..Default::default() }
        );
        // A bad shard is named.
        std::fs::write(out.join(".fedsched/placements").join(&web), "{\"placements\": [{}]}").expect("write");
        let e = adopt_published(&store, &out, 1_000).expect_err("bad shard").to_string();
        assert!(e.contains(&format!("placements/{web}")) && e.contains("placements[0]"), "{e}");
    }

    /// Issue 46, seed 74 / 127 (invariant 6): the placements a replay of the new leader's first
    /// pass starts from are the adopted ones, rebuilt from the history: each placement adopted
    /// or removed has a record (not replayable itself), the store's own older records no longer
    /// the last.
    #[test]
    fn a_replay_after_a_takeover_starts_from_the_adopted_placements() {
        use crate::reconcile::replay::RecordedHistory;
        let dir = tempfile::tempdir().expect("tmp");
        let (state, out) = (dir.path().join("state"), dir.path().join("out"));
        let store = Store::open(&state).expect("store");
        // This instance's own earlier term: web on c, old on a, each with its decision record.
        for own in [record("web", &[("c", 6)], "web", 0), record("old", &[("a", 1)], "old", 0)] {
            let mut h = adoption_record(&own, 5, false);
            (h.trigger, h.notes, h.inputs.template_hash, h.inputs.policy_hash) = ("timer".into(), vec![], 1, 2);
            let seq = store.record_decision(h, &own).expect("record");
            let rr = ReplayRef { pass: 9, ..adoption_ref(&own, false) };
            store.put_replay_refs(&[(seq, rr)]).expect("ref");
        }
        // The old leader published web on a+b only.
        let published = [record("web", &[("a", 4), ("b", 2)], "web", 0)];
        std::fs::create_dir_all(out.join(".fedsched")).expect("mkdir");
        let text = crate::render::summary::summary_json(published.iter().map(PlacementRecord::summary));
        std::fs::write(out.join(".fedsched/placements.json"), text).expect("write");
        let done = adopt_published(&store, &out, 1_000).expect("adopt");
        assert_eq!((done.changed, done.removed), (1, 1));
        let rebuilt = RecordedHistory::read(&store)
            .expect("history")
            .placements_at(&store, store.last_history_seq().expect("seq"))
            .expect("placements");
        let stored = store.placements().expect("placements");
        assert_eq!(rebuilt.len(), 1, "old's removal is recorded: {rebuilt:?}");
        assert_eq!((&rebuilt[0].workload, &rebuilt[0].targets), (&key("web"), &published[0].targets));
        assert_eq!((&rebuilt[0].files, rebuilt[0].history_seq), (&stored[0].files, stored[0].history_seq));
        // `fedsched replay` says the adoption's records are no decisions, never `different`.
        let records: Vec<_> =
            [key("old"), key("web")].iter().flat_map(|k| store.history(k).expect("history")).collect();
        let doc =
            crate::views::replay::document(&store, &records, &crate::reconcile::Settings::builtin).expect("replay");
        let adopted: Vec<_> =
            doc["decisions"].as_array().expect("list").iter().filter(|d| d["trigger"] == "takeover").collect();
        assert_eq!(adopted.len(), 2, "{doc}");
        assert!(adopted.iter().all(|d| d["status"] == "not-replayable" && d["reason"] == ADOPTION_REASON), "{doc}");
    }

    /// Issue 46, `[ha]` invariant 1 (simulation seed 181): the graceful eviction tasks the old
    /// leader published replace the store's, so that the new leader keeps the files they keep
    /// (here web's on m9, its only Ready replicas) instead of removing them in its first pass;
    /// a stale task of this instance's own earlier term goes.
    #[test]
    fn the_published_eviction_tasks_replace_the_stores() {
        use crate::schedule::stability::{EvictionTask, Purge, Reason, WorkloadStability};
        let dir = tempfile::tempdir().expect("tmp");
        let (state, out) = (dir.path().join("state"), dir.path().join("out"));
        let store = Store::open(&state).expect("store");
        let task = |cluster: &str, since_ms| EvictionTask {
            cluster: cluster.into(),
            replicas: 5,
            reason: Reason::ClusterUnreachable,
            since_ms,
            purge: Purge::Gracefully,
            grace_ms: 30_000,
            grace_expired_ms: Some(since_ms + 30_000),
        };
        let (web, api) = (record("web", &[("a", 5)], "web", 0), record("api", &[("c", 1)], "api", 0));
        let web_tasks = [task("m9", 300_000)];
        let placements = [crate::render::summary::Placement { tasks: &web_tasks, ..web.summary() }, api.summary()];
        std::fs::create_dir_all(out.join(".fedsched")).expect("mkdir");
        let text = crate::render::summary::summary_json(placements.into_iter());
        std::fs::write(out.join(".fedsched/placements.json"), text).expect("write");
        // This instance's own earlier term: a task for api that ended since.
        let mut own = store.stability().expect("state");
        own.workloads.insert(key("api"), WorkloadStability { tasks: vec![task("m1", 5_000)], ..Default::default() });
        store.put_stability(&own).expect("put");
        let done = adopt_published(&store, &out, 1_000).expect("adopt");
        assert_eq!(done.tasks, 2, "{done:?}");
        let adopted = store.stability().expect("state");
        assert_eq!(adopted.workloads.get(&key("web")).map(|w| w.tasks.clone()), Some(web_tasks.to_vec()));
        assert!(!adopted.workloads.contains_key(&key("api")), "{adopted:?}");
        assert_eq!(adopt_published(&store, &out, 1_000).expect("adopt").tasks, 0, "adopting again changes nothing");
    }

    /// Issue 52: the rollouts' courses the old leader published replace the store's (a
    /// standby's shadow passes store none), those the summary does not list are forgotten.
    #[test]
    fn the_published_rollouts_replace_the_stores() {
        use crate::render::summary::{Shard, Shards, rollout_item, shard_name, shard_of};
        use crate::schedule::rollout::{Phase, RolloutState};
        let dir = tempfile::tempdir().expect("tmp");
        let (state, out) = (dir.path().join("state"), dir.path().join("out"));
        let store = Store::open(&state).expect("store");
        let mut course = RolloutState::settled("shop/waves".into(), 1, "{}".into());
        (course.target_hash, course.target, course.phase, course.released) =
            (2, "{\"v\":2}".into(), Phase::Progressing, 2);
        course.released_at_ms = 1_000;
        course.approvals_at_start.insert("next".into());
        let item = rollout_item(&key("api"), &course);
        let publish = |items: &[(Shard, &str)]| {
            let shards = Shards::of(std::iter::empty(), items.iter().copied());
            std::fs::create_dir_all(out.join(".fedsched/placements")).expect("mkdir");
            for (i, text) in Shard::all().zip(&shards.0) {
                std::fs::write(out.join(".fedsched/placements").join(shard_name(i)), text.as_bytes()).expect("write");
            }
        };
        publish(&[(shard_of(&key("api")), &item)]);
        // The standby's own: api settled on the new version (what its shadow passes would
        // conclude), and a rollout the old leader no longer has.
        store
            .put_rollout(&key("api"), &RolloutState::settled("shop/waves".into(), 2, "{\"v\":2}".into()))
            .expect("put");
        store.put_rollout(&key("old"), &RolloutState::settled("shop/waves".into(), 7, "{}".into())).expect("put");
        let done = adopt_published(&store, &out, 1_000).expect("adopt");
        assert_eq!((done.rollouts, done.rollouts_removed), (1, 1));
        assert_eq!(store.rollout(&key("api")).expect("read"), Some(course.clone()), "the stage and its gate adopted");
        assert_eq!(store.rollout(&key("old")).expect("read"), None);
        // Adopting again changes nothing; a summary without the rollout forgets it.
        let again = adopt_published(&store, &out, 1_000).expect("adopt");
        assert_eq!((again.rollouts, again.rollouts_removed), (0, 0));
        publish(&[]);
        assert_eq!(adopt_published(&store, &out, 1_000).expect("adopt").rollouts_removed, 1);
        assert_eq!(store.rollouts().expect("read"), vec![]);
    }
}
