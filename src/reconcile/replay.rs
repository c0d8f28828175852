//! Replay (`fedsched replay`): what a pass stores so that its decisions can be made again
//! ([`store_pass`], [`replay_ref`]), and the pass made again from it ([`replay_pass`]).
//!
//! A pass that records decisions stores its [`ReplayPass`]: the clock it read, the
//! repository's files (as blobs, each content once), the last history record before it, each
//! member's freshness; each history record gets a [`ReplayRef`] (that pass, the placement it
//! made beyond the record, the hashes of the files it rendered), so the placements a pass
//! started from are rebuilt from the records before it ([`RecordedHistory`]). With the history record's own inputs (snapshot versions, the stability
//! state) that is every input of the pass: the repository gives the templates, policies,
//! overrides, interpreters and dependencies; the stored snapshots at those versions and the
//! placements give the member views and the assumed-replica deductions.
//!
//! A replay rebuilds those inputs, seeds a scratch store with the placements and the
//! stability state, and runs the stages of a pass ([`super::Reconciler::preview`]) with the
//! current scheduler, renderer and profiles at the recorded time. Nothing is guessed: an input
//! that is not in the store makes the replay fail with [`ReplayError::NotRecorded`].
//!
//! # In detail
//!
//! What a replay needs is stored by the pass (`reconcile/replay.rs`, `store/replay.rs`): a
//! `ReplayPass` blob per pass that records decisions (the clock, the repository's files as blobs —
//! `Inputs::sources`, kept by the `ParseCache` —, the last history seq before the pass, each
//! member's input freshness) — the file list in runs cut by content (a run ends after a file whose
//! content hash is a multiple of 64), each run a blob, so a pass that changed one file stores one
//! run and the pass (`StoredPass`, schema 2; `StoredRuns` in the cache finds the runs equal to the
//! last pass's by their first path; a schema 1 pass, the list inline, is still read) — and a
//! `ReplayRef` per history record in the `replay` tree (keyed by sequence number: the pass blob,
//! the placement's targets, affinity term and files with content hashes; no history schema change,
//! and a record without one is "not replayable"). The placements a pass started from are rebuilt
//! from the records before it (`RecordedHistory::placements_at`), not stored per pass (10,000
//! placements of 17 KB would be 170 MB a pass). The stability state blob of each record is in the
//! store's codec. `reconcile::replay_pass` rebuilds the inputs (`load_inputs` of `Repository::Files`, the
//! stored snapshots at the recorded versions for live members), seeds a scratch store with those
//! placements and the stability state and runs `preview` at the recorded time; `views/replay.rs`
//! compares each record with it (result, policy, file hashes), one replay per pass.
//! `cli/replay.rs`: the command.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use crate::policy::types::TaintEffect;
use crate::policy::{LoadError, ObjectKey};
use crate::schedule::stability::StabilityState;
use crate::store::{HistoryRecord, PlacementRecord, ReplayPass, ReplayRef, Store, StoreError, StoredPass};

use super::{Inputs, PassPreview, ReconcileError, Reconciler, Settings, cache};

/// Why a pass cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// An input of the decision is not in the store (an older store, or a record written
    /// without it): never replayed from guesses.
    #[error("not replayable: {0} was not recorded")]
    NotRecorded(String),
    /// The stored repository no longer loads with this fedsched.
    #[error("the recorded repository does not load: {}", .0.first().map(ToString::to_string).unwrap_or_default())]
    Invalid(Vec<LoadError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    #[error("scratch directory: {0}")]
    Io(#[from] std::io::Error),
}

/// The runs of the file list ([`crate::store::source_runs`]) the last stored replay inputs
/// had, each with its blob hash: a run of this pass equal to one of them (the same paths and
/// content hashes, found by its first path) is that blob, neither encoded nor stored again.
#[derive(Default, Clone)]
pub struct StoredRuns(Vec<(Vec<(PathBuf, u64)>, u64)>);

/// Stores the replay inputs of a pass that records decisions; returns the blob hash (0 when
/// the inputs do not carry the repository's files: a load without a parse cache). The file
/// list is stored in runs: only the runs that differ from the last stored pass's are written
/// (with the files they list), as [`Store::put_replay_pass`] would write them.
pub(super) fn store_pass(
    store: &Store,
    cache: &mut cache::Kept,
    inputs: &Inputs,
    now_ms: u64,
) -> Result<u64, StoreError> {
    if inputs.sources.is_empty() {
        return Ok(0);
    }
    let sources = &inputs.sources;
    let ranges = crate::store::source_runs(sources, |(_, hash, _)| *hash);
    // (Taken for the pass: an error leaves none, and the next pass stores every run.)
    let mut last = std::mem::take(&mut cache.record.replay_runs().0);
    let same: Vec<Option<usize>> = {
        let by_first: HashMap<&std::path::Path, usize> =
            last.iter().enumerate().filter_map(|(i, (run, _))| Some((run.first()?.0.as_path(), i))).collect();
        ranges
            .iter()
            .map(|r| {
                let entries = &sources[r.clone()];
                let i = *by_first.get(entries.first()?.0.as_path())?;
                let (run, _) = &last[i];
                let equal =
                    run.len() == entries.len() && run.iter().zip(entries).all(|((p, h), (q, g, _))| h == g && p == q);
                equal.then_some(i)
            })
            .collect()
    };
    let mut runs = Vec::with_capacity(ranges.len());
    let mut kept = Vec::with_capacity(ranges.len());
    for (r, same) in ranges.into_iter().zip(same) {
        if let Some((run, blob)) = same.and_then(|i| last.get_mut(i)).filter(|(run, _)| !run.is_empty()) {
            runs.push(*blob);
            kept.push((std::mem::take(run), *blob));
            continue;
        }
        let entries = &sources[r];
        let mut listed = Vec::with_capacity(entries.len());
        for (path, hash, text) in entries {
            if !cache.record.knows_blob(*hash) {
                // A file with a Secret is stored with the Secret's data redacted.
                match text.contains("Secret").then(|| crate::secrets::redact_source(text)).flatten() {
                    Some(redacted) => store.put_blob_at(*hash, redacted.as_bytes())?,
                    None => store.put_blob(text.as_bytes())?,
                };
                cache.record.note_blob(*hash);
            }
            listed.push((path.to_string_lossy().into_owned(), *hash));
        }
        let blob = store.put_source_run(&listed)?;
        runs.push(blob);
        kept.push((entries.iter().map(|(p, h, _)| (p.clone(), *h)).collect(), blob));
    }
    let after_seq = store.last_history_seq()?;
    let freshness = inputs.snapshots.iter().map(|s| (s.name.clone(), s.freshness)).collect();
    let rollouts = Some(super::rollout::store_states(store, &mut cache.rollout)?);
    let hash = store.put_stored_pass(&StoredPass { now_ms, runs, after_seq, freshness, rollouts })?;
    cache.record.replay_runs().0 = kept;
    Ok(hash)
}

/// The replay reference of a workload's decision in the cache.
pub(super) fn replay_ref(cache: &cache::Kept, key: &ObjectKey, pass: u64, placement: &PlacementRecord) -> ReplayRef {
    let files = cache
        .decide
        .decisions
        .get(key)
        .map(|c| {
            c.decided
                .files
                .iter()
                .zip(&c.decided.file_hashes)
                .map(|((cluster, (path, _)), hash)| (cluster.clone(), path.clone(), *hash))
                .collect()
        })
        .unwrap_or_default();
    ReplayRef { pass, targets: placement.targets.clone(), affinity_name: placement.affinity_name.clone(), files }
}

/// Every workload's recorded history, for the placements a recorded pass started from.
pub struct RecordedHistory {
    records: Vec<Vec<HistoryRecord>>,
}

impl RecordedHistory {
    /// Reads every workload's history.
    pub fn read(store: &Store) -> Result<Self, StoreError> {
        let mut records = Vec::new();
        for key in store.workloads_with_history()? {
            records.push(store.history(&key)?);
        }
        Ok(RecordedHistory { records })
    }

    /// The placements after history record `after_seq`: each workload's last record up to it
    /// with its [`ReplayRef`], removals excepted, in store order.
    pub fn placements_at(&self, store: &Store, after_seq: u64) -> Result<Vec<PlacementRecord>, ReplayError> {
        let mut out = Vec::new();
        for history in &self.records {
            let Some(h) = history.iter().rev().find(|h| h.seq <= after_seq) else { continue };
            if h.inputs.template_hash == 0 && h.inputs.policy_hash == 0 {
                continue; // a removal: no placement
            }
            let r = store.replay_ref(h.seq)?.ok_or_else(|| {
                ReplayError::NotRecorded(format!(
                    "the placement of {} (record {}) the pass started from",
                    h.workload, h.seq
                ))
            })?;
            out.push(PlacementRecord {
                workload: h.workload.clone(),
                policy: h.policy.clone(),
                result: h.result.clone(),
                targets: r.targets,
                affinity_name: r.affinity_name,
                files: r.files.into_iter().map(|(c, f, _)| (c, f)).collect(),
                history_seq: h.seq,
                decided_at_ms: h.at_ms,
            });
        }
        out.sort_by_cached_key(|p| p.workload.store_key());
        Ok(out)
    }
}

/// The repositories one replay has loaded, by their file list (each file's path and content
/// hash, as the pass stored it): a pass whose files are those of a pass replayed before
/// starts from that load instead of reading and parsing every file again (a repository
/// changes in few of a daemon's passes). The load is a pure function of the files and the
/// settings ([`super::load_inputs`] of [`super::Repository::Files`] keeps nothing between
/// calls), so each pass gets the inputs a load of its own would give; only the inputs as
/// loaded are shared, each pass applies its own snapshots to a copy. Keep one per replay
/// (one `settings`).
#[derive(Default)]
pub struct LoadedRepositories {
    loaded: HashMap<Vec<(String, u64)>, Inputs>,
    /// Loads made (the others were shared).
    pub loads: usize,
}

impl LoadedRepositories {
    /// The inputs of the repository `pass` stored: loaded once per distinct file list.
    fn inputs(&mut self, store: &Store, settings: &Settings, pass: &ReplayPass) -> Result<Inputs, ReplayError> {
        if let Some(inputs) = self.loaded.get(&pass.sources) {
            return Ok(inputs.clone());
        }
        let mut files = Vec::with_capacity(pass.sources.len());
        for (path, hash) in &pass.sources {
            let bytes = store.blob(*hash)?.ok_or_else(|| ReplayError::NotRecorded(format!("the file {path}")))?;
            let text = String::from_utf8(bytes).map_err(|_| ReplayError::NotRecorded(format!("the text of {path}")))?;
            files.push((PathBuf::from(path), Arc::<str>::from(text)));
        }
        let inputs = super::load_inputs(super::Repository::Files(&files), settings).map_err(ReplayError::Invalid)?;
        self.loads += 1;
        self.loaded.insert(pass.sources.clone(), inputs.clone());
        Ok(inputs)
    }
}

/// Runs a recorded pass again: its stored inputs (the [`ReplayPass`], the snapshot versions
/// map `versions` and the stability state blob `stability` of its history records) with the
/// current code and `settings`. Reads `store`, writes only a scratch store of its own. The
/// repository is loaded once per distinct file list of the passes replayed with `loaded`.
pub fn replay_pass(
    store: &Store,
    history: &RecordedHistory,
    settings: Settings,
    loaded: &mut LoadedRepositories,
    pass: &ReplayPass,
    versions: u64,
    stability: u64,
) -> Result<PassPreview, ReplayError> {
    let mut inputs = loaded.inputs(store, &settings, pass)?;
    let versions: BTreeMap<String, u64> = match versions {
        0 => return Err(ReplayError::NotRecorded("the snapshot versions".into())),
        v => store.versions(v)?.ok_or_else(|| ReplayError::NotRecorded("the snapshot versions".into()))?,
    };
    let freshness: BTreeMap<&str, _> = pass.freshness.iter().map(|(c, f)| (c.as_str(), *f)).collect();
    for snap in inputs.snapshots.iter_mut() {
        let version =
            versions.get(&snap.name).ok_or_else(|| ReplayError::NotRecorded(format!("a snapshot of {}", snap.name)))?;
        let stored = store
            .snapshot(&snap.name, *version)?
            .ok_or_else(|| ReplayError::NotRecorded(format!("snapshot {version} of {}", snap.name)))?;
        if stored.is_live() {
            let offline = std::mem::replace(snap, stored);
            // The repository owns identity and constraints (as when the pass merged its poll).
            snap.labels = offline.labels;
            snap.constraints = offline.constraints;
            // The stored view is the pass's tainted one (its ClusterTaintPolicy taints are in
            // its version); the replay's own pass puts them on again from the stored state, as
            // the pass did, but a taint a member has already is not the policy's (not added,
            // so no NoExecute eviction). The view the pass started from had the member's own
            // taints (the Cluster object's and its health's) without the policies'.
            let own = inputs.set.cluster(&snap.name).map(|c| c.spec.taints.as_slice()).unwrap_or_default();
            let health = crate::members::health_taint(&snap.health);
            let policies = &inputs.set.cluster_taint_policies;
            snap.taints.retain(|t| {
                let listed =
                    policies.iter().any(|p| p.spec.taints.iter().any(|s| s.key == t.key && s.effect == t.effect));
                let own = own.iter().any(|s| s.key == t.key && s.effect == t.effect);
                !listed || own || (health == Some(t.key.as_str()) && t.effect == TaintEffect::NoSchedule)
            });
        }
        snap.freshness = freshness.get(snap.name.as_str()).copied().flatten();
    }
    let scratch = tempfile::tempdir()?;
    let seeded = Store::open(&scratch.path().join("state"))?;
    for p in history.placements_at(store, pass.after_seq)? {
        seeded.put_placement(&p)?;
    }
    let state: StabilityState = match stability {
        0 => StabilityState::default(),
        h => {
            let bytes = store.blob(h)?.ok_or_else(|| ReplayError::NotRecorded("the stability state".into()))?;
            // The store's codec; a JSON blob from before (empty when it failed to serialize).
            crate::store::codec::decode(&bytes).or_else(|_| serde_json::from_slice(&bytes)).map_err(|_| {
                ReplayError::NotRecorded("the stability state (an older fedsched stored it empty)".into())
            })?
        }
    };
    seeded.put_stability(&state)?;
    // The rollouts' states the pass started from: the stage of each cluster's version.
    match pass.rollouts {
        Some(0) => {}
        Some(hash) => {
            let states =
                store.rollout_list(hash)?.ok_or_else(|| ReplayError::NotRecorded("the rollouts' states".into()))?;
            for (sk, state) in &states {
                seeded.put_rollout_keyed(sk, state)?;
            }
        }
        None if !inputs.set.rollout_policies.is_empty() => {
            return Err(ReplayError::NotRecorded("the rollouts' states (an older fedsched did not store them)".into()));
        }
        None => {}
    }
    let reconciler = Reconciler::new(seeded, settings);
    Ok(reconciler.preview(&inputs, &scratch.path().join("out"), pass.now_ms)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec::decode;

    fn file(i: usize, v: usize) -> (PathBuf, Arc<str>) {
        let text =
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n  namespace: a\ndata:\n  v: \"{v}\"\n");
        (PathBuf::from(format!("cm/{i:04}.yaml")), Arc::from(text))
    }

    fn runs_of(store: &Store, pass: u64) -> Vec<u64> {
        let bytes = store.blob(pass).expect("read").expect("stored");
        decode::<StoredPass>(&bytes).expect("a pass of runs").runs
    }

    /// The file list is stored in runs cut by content: an edit of one file of 600 stores the
    /// run it is in (or the two a moved cut touches), the pass reads back whole and equal to
    /// the pass's files, and it is the pass [`Store::put_replay_pass`] stores for that list,
    /// as a restarted process (no runs kept) stores it.
    #[test]
    fn an_edit_stores_the_run_of_its_file_and_the_pass_reads_back_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("state")).expect("open");
        let settings = || Settings::builtin();
        let mut files: Vec<(PathBuf, Arc<str>)> = (0..600).map(|i| file(i, 0)).collect();
        let inputs = super::super::load_inputs(super::super::Repository::Files(&files), &settings()).expect("inputs");
        let mut cache = cache::Kept::default();
        let first = store_pass(&store, &mut cache, &inputs, 1_000).expect("store");
        files[300] = file(300, 1);
        let edited = super::super::load_inputs(super::super::Repository::Files(&files), &settings()).expect("inputs");
        let second = store_pass(&store, &mut cache, &edited, 2_000).expect("store");

        let (before, after) = (runs_of(&store, first), runs_of(&store, second));
        assert!(before.len() >= 4, "600 files in several runs: {}", before.len());
        let new: Vec<&u64> = after.iter().filter(|r| !before.contains(r)).collect();
        assert!((1..=2).contains(&new.len()), "runs stored again: {} of {}", new.len(), after.len());

        let listed = |i: &Inputs| -> Vec<(String, u64)> {
            i.sources.iter().map(|(p, h, _)| (p.to_string_lossy().into_owned(), *h)).collect()
        };
        let read = store.replay_pass(second).expect("read").expect("stored");
        assert_eq!(read.sources, listed(&edited));
        assert_eq!(read.now_ms, 2_000);
        assert_eq!(store.replay_pass(first).expect("read").expect("stored").sources, listed(&inputs));
        assert_eq!(store.put_replay_pass(&read).expect("whole"), second, "the bytes of a pass stored whole");
        let mut restarted = cache::Kept::default();
        assert_eq!(store_pass(&store, &mut restarted, &edited, 2_000).expect("store"), second);
        // Each file's bytes are stored for the replay.
        for (path, hash) in &read.sources {
            assert!(store.blob(*hash).expect("read").is_some(), "{path}");
        }
    }

    /// A ClusterTaintPolicy taints a live member the moment it is unreachable (NoExecute,
    /// tolerated by nobody: the workload leaves at once). The pass stores its views with the
    /// policy's taint on (their versions see it); the replay puts the policy's taints on again
    /// from the stored state, so it must start from the view without them: with the taint
    /// already on, the policy would not add it and the replay would keep the workload there.
    /// Every record replays identical, the eviction's included.
    #[test]
    fn an_eviction_by_a_cluster_taint_policy_replays_identical() {
        use crate::model::snapshot::{Health, SnapshotSource};
        use crate::reconcile::stability::fixture::{Fixture, cluster};

        let apps = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: web, namespace: shop}\n\
                    spec:\n  resourceSelectors:\n  - {apiVersion: apps/v1, kind: Deployment, name: web}\n  placement:\n\
                    \x20   replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}\n---\n\
                    apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata: {name: lost}\nspec:\n\
                    \x20 addOnConditions: [{conditionType: Ready, operator: In, statusValues: [\"Unknown\", \"False\"]}]\n\
                    \x20 removeOnConditions: [{conditionType: Ready, operator: In, statusValues: [\"True\"]}]\n\
                    \x20 taints: [{key: example.com/lost, effect: NoExecute}]\n---\n\
                    apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 4\n\
                    \x20 selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n\
                    \x20   spec: {containers: [{name: web, image: web:1}]}\n";
        let f = Fixture::new(apps, &["m1", "m2"].map(|n| cluster(n, 20)));
        let rec = f.reconciler(Settings::builtin());
        let inputs = |lost: bool| {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                s.source = SnapshotSource::Live { endpoint: format!("https://{}", s.name) };
                if lost && s.name == "m1" {
                    s.health = Health::Unreachable { reason: "connection refused".into() };
                }
            }
            inputs
        };
        let t0 = 1_700_000_000_000;
        rec.reconcile(&inputs(false), &f.out, crate::publish::Trigger::Timer, t0).expect("pass");
        let r = rec.reconcile(&inputs(true), &f.out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert!(kinds.contains(&("eviction", "m1")), "{kinds:?}");
        let key = rec.store.placements().expect("placements")[0].workload.clone();
        let history = rec.store.history(&key).expect("history");
        assert!(
            history.len() >= 2
                && history.last().and_then(|h| h.result.targets()).is_some_and(|t| !t.contains_key("m1"))
        );
        let doc = crate::views::replay::document(&rec.store, &history, &Settings::builtin).expect("replay");
        assert_eq!(
            (doc["identical"].as_u64(), doc["different"].as_u64()),
            (Some(history.len() as u64), Some(0)),
            "{doc:#}"
        );
    }

    /// A replay loads each distinct repository once: passes stored with the same files (path
    /// and content hash) share one load, and each replays as it does with a load of its own
    /// (the load is a pure function of the files): no difference between the two previews,
    /// and every record replays identical.
    #[test]
    fn passes_with_the_same_files_share_one_load_and_replay_as_with_a_load_of_their_own() {
        use crate::model::snapshot::{Health, SnapshotSource};
        use crate::reconcile::stability::fixture::{Fixture, cluster};

        let apps = |replicas: u32| {
            format!(
                "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: web, namespace: shop}}\n\
                 spec:\n  resourceSelectors:\n  - {{apiVersion: apps/v1, kind: Deployment, name: web}}\n  placement:\n\
                 \x20   replicaScheduling: {{replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}}\n---\n\
                 apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata: {{name: lost}}\nspec:\n\
                 \x20 addOnConditions: [{{conditionType: Ready, operator: In, statusValues: [\"Unknown\", \"False\"]}}]\n\
                 \x20 removeOnConditions: [{{conditionType: Ready, operator: In, statusValues: [\"True\"]}}]\n\
                 \x20 taints: [{{key: example.com/lost, effect: NoExecute}}]\n---\n\
                 apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: shop}}\nspec:\n  replicas: {replicas}\n\
                 \x20 selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n\
                 \x20   spec: {{containers: [{{name: web, image: web:1}}]}}\n"
            )
        };
        let f = Fixture::new(&apps(4), &["m1", "m2", "m3"].map(|n| cluster(n, 20)));
        let rec = f.reconciler(Settings::builtin());
        let inputs = |lost: bool| {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                s.source = SnapshotSource::Live { endpoint: format!("https://{}", s.name) };
                if lost && s.name == "m1" {
                    s.health = Health::Unreachable { reason: "connection refused".into() };
                }
            }
            inputs
        };
        let t0 = 1_700_000_000_000;
        rec.reconcile(&inputs(false), &f.out, crate::publish::Trigger::Timer, t0).expect("pass");
        // The same files, another view: m1 lost (the policy's NoExecute taint evicts at once).
        rec.reconcile(&inputs(true), &f.out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        // Other files: a scale-up.
        f.write("apps.yaml", &apps(8));
        rec.reconcile(&inputs(true), &f.out, crate::publish::Trigger::Timer, t0 + 20_000).expect("pass");

        let key = rec.store.placements().expect("placements")[0].workload.clone();
        let history = rec.store.history(&key).expect("history");
        let recorded = RecordedHistory::read(&rec.store).expect("history");
        let mut shared = LoadedRepositories::default();
        let mut passes = std::collections::BTreeSet::new();
        for h in &history {
            let rr = rec.store.replay_ref(h.seq).expect("read").expect("a replay reference");
            if !passes.insert(rr.pass) {
                continue;
            }
            let pass = rec.store.replay_pass(rr.pass).expect("read").expect("stored");
            let (versions, stability) = (h.inputs.snapshot_versions, h.inputs.stability);
            let replay = |loaded: &mut LoadedRepositories| {
                replay_pass(&rec.store, &recorded, Settings::builtin(), loaded, &pass, versions, stability)
                    .expect("replay")
            };
            let with_shared = replay(&mut shared);
            let with_own = replay(&mut LoadedRepositories::default());
            let differences = crate::reconcile::audit::compare(&with_shared, &with_own);
            assert!(differences.is_empty(), "record {}: {differences:?}", h.seq);
        }
        assert_eq!(passes.len(), 3, "three passes recorded a decision: {history:?}");
        assert_eq!(shared.loads, 2, "two distinct repositories, each loaded once");
        let doc = crate::views::replay::document(&rec.store, &history, &Settings::builtin).expect("replay");
        assert_eq!(
            (doc["identical"].as_u64(), doc["different"].as_u64()),
            (Some(history.len() as u64), Some(0)),
            "{doc:#}"
        );
    }

    /// A pass stored whole by an earlier version (schema 1) reads as it was; a pass one of
    /// whose runs is missing reads as not stored.
    #[test]
    fn a_pass_stored_whole_is_read_and_a_missing_run_is_no_pass() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Whole {
            now_ms: u64,
            sources: Vec<(String, u64)>,
            after_seq: u64,
            freshness: Vec<(String, Option<crate::model::Freshness>)>,
        }
        impl crate::store::codec::Versioned for Whole {
            const WHAT: &'static str = "replay pass";
            const SCHEMA: u16 = 1;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("state")).expect("open");
        let whole = Whole { now_ms: 7, sources: vec![("a.yaml".into(), 42)], after_seq: 3, freshness: Vec::new() };
        let hash = store.put_blob(&crate::store::codec::encode(&whole).expect("encode")).expect("put");
        let read = store.replay_pass(hash).expect("read").expect("stored");
        assert_eq!((read.now_ms, read.sources, read.after_seq), (7, vec![("a.yaml".to_string(), 42)], 3));

        let broken =
            StoredPass { now_ms: 1, runs: vec![0xdead_beef], after_seq: 0, freshness: Vec::new(), rollouts: Some(0) };
        let hash = store.put_stored_pass(&broken).expect("put");
        assert!(store.replay_pass(hash).expect("read").is_none());
    }
}
