//! The output directory that Argo CD / Flux sync: one directory per member cluster holding one
//! file per object plus the index files that name them, written atomically and crash-safely.
//!
//! The publisher knows a file by its order class ([`crate::render::layout::FileClass`]): an
//! object's file, an index file of a cluster directory, a shard of the summary. What the index
//! files are called and hold is the plan's [`crate::render::layout::Layout`]'s: the publisher
//! asks it for a cluster's index files once its diff knows which object files the directory
//! will hold, writes them after those objects, and never removes one; no name of an index file
//! appears here (`it::architecture` checks it).
//!
//! Layout under the output root `OUT`:
//!
//! ```text
//! OUT/<cluster>/<index files>                 the layout's, naming every object file below
//! OUT/<cluster>/<namespace>/<file>.yaml       namespaced objects (paths chosen by the caller)
//! OUT/<cluster>/_cluster/<file>.yaml          cluster-scoped objects
//! OUT/.fedsched/placements/<xx>.json         the summary's 256 shards, outside every cluster dir
//! OUT/.fedsched/journal.json                  only while a publish is being applied
//! OUT/.fedsched/staging/s<k>/                 staged file contents (1,024 a directory)
//! OUT/.fedsched/staging/n-<cluster>/          a cluster directory that did not exist, staged whole
//! ```
//!
//! A publish is all-or-nothing across the whole plan: every new or changed file is first staged
//! (on every core) and made durable (one `syncfs`) under `.fedsched/staging/`, then a journal of
//! renames and deletions is committed atomically (fsync), then applied and made durable by a
//! second `syncfs` before the journal is removed (no fsync per file or per directory). The
//! journal is applied by class: cluster by cluster, object files first, then the cluster's
//! index files, then the summary's shards, then every removal, so that each cluster
//! directory is consistent at every instant, not only once recovered: whatever moment an Argo CD
//! or Flux sync reads it, every file its index names exists. [`recover`] re-applies an
//! interrupted journal idempotently, in the same order; [`publish`] always recovers first.
//!
//! The output directory has one owner at a time ([`claim_output`]): a daemon holds it for its
//! life (with `[ha]`, the leader for its term), `render` for its pass; another fedsched that
//! asks for it is refused ([`PublishError::OutputInUse`]) with the owner's pid and state
//! directory. Unchanged files are never rewritten (their mtime stays),
//! only files carrying [`crate::render::GENERATED_HEADER`] are ever deleted, and cluster directories are never
//! removed (removing one makes Argo CD ApplicationSets cascade-delete the cluster's workloads).
//!
//! The mass-deletion guard ([`publish_guarded`], [`DeleteGuard`]) takes a whole cluster out of
//! a publish when the plan would remove too large a share of its objects: that cluster stays
//! exactly as it was, the others proceed. Git mode ([`git`]) turns a publish into a commit.
//!
//! Files, one concept each: this file holds [`publish`] and [`publish_guarded`] and the
//! names of fedsched's own state (`.fedsched/`: the summary's shards, the journal, staging); `plan.rs` the plan and report types; `names.rs` the name checks and the
//! validation of a plan; `diff.rs` the diff against the directory; `guard.rs` the mass-deletion
//! guard; `journal.rs` staging, the journal, the renames and `syncfs`; `recovery.rs` the recovery
//! of an interrupted journal; `disk.rs` file-system helpers; `error.rs` [`PublishError`]. The
//! bytes written (object files, index files, the header, the summary) come from [`crate::render`].
//!
//! # Its stage of the pass
//!
//! **Publish** (`publish::publish`): diff against the output directory, write only what changed,
//! atomically (journal + staged files + rename), remove only files fedsched wrote. The journal is
//! applied in an order that keeps every cluster directory consistent at every instant
//! (`publish::journal::apply_order`, by each file's class, which the journal records): a cluster
//! directory that did not exist appears whole (staged as a directory, one rename); per existing
//! cluster its object files, then its index files; then the summary's shards (an index of every
//! cluster: written once every file they list is in place); then all removals. Recovery applies the same order, so it
//! stays idempotent. The caller's record of a publish (`publish_recorded`: the reconciler's
//! store) is written before the journal commits, and the journal carries its id, so that after a
//! crash the record is settled when the journal is there and rolled back when it is not
//! (`reconcile::recover`). The output directory has one owner (`publish::claim_output`, a `flock` of
//! `.fedsched/owner`): the daemon for its life — with `[ha]` the leader from its takeover until it
//! loses the lease — and `render` for its pass; `plan` takes none.
//!
//! # In detail
//!
//! The only module that writes the output directory: `plan.rs` (`PublishPlan`, `ClusterFiles`,
//! `PublishReport`), `names.rs` (path segment checks, a whole plan validated before the disk is
//! touched), `diff.rs` (the plan against the directory), `journal.rs` (staged files written on
//! every core, 1,024 to a staging directory so the cores do not queue on one directory's lock —
//! except a cluster directory that does not exist yet, every cluster of a first publish, staged
//! whole as `n-<cluster>` and moved into place by one rename, file by file if the directory
//! appeared in between —, and made durable by one `syncfs`, then a journal, the renames and
//! removals in `apply_order` — per cluster objects, then its index files, the clusters on every
//! core; then the summary; then the removals —, a second `syncfs` before the journal goes: no fsync
//! per file or directory; each step a crash point: a `KillSwitch` stops a publish after step N in
//! process, as SIGKILL would — the simulation's kill -9), `recovery.rs` (an interrupted journal
//! finished at the next start), `owner.rs` (the ownership of the output directory: `claim_output`,
//! refused with `OutputInUse` naming the owner's pid and state directory), `guard.rs` (the
//! mass-deletion guard: a cluster whose removals exceed the ratio is held whole; only removals of
//! paths no placed workload owns — `PublishPlan::owners`, filled by `reconcile/plan.rs` — count
//! (not the Namespace file leaving with a placed workload's last object in its namespace, `diff.rs`
//! `following_namespaces`), and a workload with a change in a held cluster keeps its files everywhere, `HeldMove`),
//! `disk.rs`, `error.rs`; `git.rs`: git mode (commit and push by shelling out to `git`, each fetch
//! or push bounded by `timeout(1)` around its own process group; `[ha]`'s fencing token on the
//! remote). File names live here, file content in `render`.

mod diff;
mod disk;
mod error;
pub mod git;
mod guard;
mod journal;
mod names;
mod owner;
mod plan;
mod preview;
mod recovery;
mod trigger;

use std::fs;
use std::path::Path;

pub use error::PublishError;
pub use guard::{DEFAULT_MAX_DELETE_RATIO, DeleteGuard, HeldCluster};
pub use names::check_segment;
pub use owner::{OutputClaim, Owner, claim_output};
pub use plan::{ClusterFiles, HeldMove, HeldRemoval, Owners, PublishPlan, PublishReport, SummaryPlan};
pub use preview::{Preview, preview};
pub use recovery::{recover, recover_killable};
pub use trigger::Trigger;

use diff::compute_changes;
use disk::{Kind, kind_of, lock};
use error::io_err;
use journal::{apply_journal, finish_journal, stage, write_journal};
use names::validate;
use recovery::recover_locked;

/// Directory under the output root holding fedsched's own state (never a cluster name).
pub const STATE_DIR: &str = ".fedsched";

/// The relative path of summary shard `name` (`.fedsched/placements/00.json`).
pub(crate) fn summary_shard_path(name: &str) -> String {
    format!("{STATE_DIR}/{}/{name}", crate::render::summary::SHARD_DIR)
}

/// The relative path of the single summary file of earlier versions.
pub(crate) fn legacy_summary_path() -> String {
    format!("{STATE_DIR}/{}", crate::render::summary::LEGACY_FILE)
}

/// Whether `rel` (relative to the output root) is a file of the placement summary: a shard
/// (`.fedsched/placements/<xx>.json`) or the single file of earlier versions.
pub(crate) fn is_summary_path(rel: &str) -> bool {
    rel == legacy_summary_path() || is_shard_path(rel)
}

/// Whether `rel` is a shard of the summary (`.fedsched/placements/<xx>.json`).
pub(crate) fn is_shard_path(rel: &str) -> bool {
    rel.strip_prefix(STATE_DIR)
        .and_then(|r| r.strip_prefix('/'))
        .and_then(|r| r.strip_prefix(crate::render::summary::SHARD_DIR))
        .and_then(|r| r.strip_prefix('/'))
        .is_some_and(crate::render::summary::is_shard_name)
}

/// Longest accepted path segment (a DNS-1123 subdomain).
pub const MAX_SEGMENT_LEN: usize = 253;

const STAGING_DIR: &str = "staging";
const JOURNAL_FILE: &str = "journal.json";
const LOCK_FILE: &str = "lock";
/// File under [`STATE_DIR`] whose lock is the ownership of the output directory.
pub const OWNER_FILE: &str = "owner";
/// The journal's format: 2 gives every rename its order class (1 left it to the path).
const JOURNAL_VERSION: u32 = 2;

/// Makes the output directory match `plan`.
///
/// Validates the whole plan first (a bad plan changes nothing), finishes any interrupted
/// publish ([`recover`]), then writes new and changed files, each cluster's index files
/// (the plan's layout's), the summary if given, and deletes generated files (first line
/// [`crate::render::GENERATED_HEADER`]) that are neither planned nor kept, all through one journal so a crash
/// leaves either the old or the new state once recovered. Unchanged files are not touched.
/// Cluster directories are created as needed and never removed; clusters absent from the plan
/// are left alone. `out` is created if missing.
///
/// No mass-deletion guard: see [`publish_guarded`].
pub fn publish(out: &Path, plan: &PublishPlan) -> Result<PublishReport, PublishError> {
    publish_guarded(out, plan, &DeleteGuard::OFF)
}

/// [`publish`] with the mass-deletion guard: a cluster whose removals `guard` holds is left
/// exactly as it is (no file written or removed, its index untouched) and listed in
/// [`PublishReport::held`]; every other cluster and the summary are published as usual.
pub fn publish_guarded(out: &Path, plan: &PublishPlan, guard: &DeleteGuard) -> Result<PublishReport, PublishError> {
    publish_killable(out, plan, guard, &KillSwitch::OFF)
}

/// [`publish_guarded`] under a [`KillSwitch`] (fault injection): each step of the publish —
/// the recovery of an interrupted one included — counts, and the step the switch stops at
/// returns [`PublishError::Killed`] with nothing after it done, as a SIGKILL there would
/// leave the directory. While the switch is armed, the clusters' renames run on one thread,
/// so that the N-th step is the same step on every run.
pub fn publish_killable(
    out: &Path,
    plan: &PublishPlan,
    guard: &DeleteGuard,
    kill: &KillSwitch,
) -> Result<PublishReport, PublishError> {
    publish_until(out, plan, guard, kill, &std::sync::atomic::AtomicBool::new(false))
}

/// [`publish_killable`] that stops at its next safe step once `stop` is set (a daemon's
/// shutdown): before writing its journal (the staged files are cleaned up by the next
/// publish), or with the journal written and not yet applied (the next publish or start
/// completes it: [`recover`]); [`PublishError::Stopped`] either way.
pub fn publish_until(
    out: &Path,
    plan: &PublishPlan,
    guard: &DeleteGuard,
    kill: &KillSwitch,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<PublishReport, PublishError> {
    let (report, ()) = publish_recorded(out, plan, guard, kill, stop, |_, _| Ok::<_, PublishError>(()), || Ok(()))?;
    Ok(report)
}

/// [`publish_until`] with the caller's record of the publish made part of it, so that a crash
/// leaves the record neither behind nor ahead of the directory: `record` runs once the changes
/// are known and staged, before the journal commits, with the report so far (what the guard
/// held, the stats) and the id the journal will carry (`None`: nothing to write, no journal);
/// the caller marks its record pending under that id (`store::Store::begin_record`). Once the
/// journal is applied, `settle` runs (the caller drops its undo log) before the journal is
/// removed. After a crash, a journal found with the id settles the record
/// ([`committed_record`]); none means the publish never committed and the record is rolled back
/// (`reconcile::recover`).
pub fn publish_recorded<R, E: From<PublishError>>(
    out: &Path,
    plan: &PublishPlan,
    guard: &DeleteGuard,
    kill: &KillSwitch,
    stop: &std::sync::atomic::AtomicBool,
    record: impl FnOnce(&PublishReport, Option<u64>) -> Result<R, E>,
    settle: impl FnOnce() -> Result<(), E>,
) -> Result<(PublishReport, R), E> {
    let stopped = |journaled| match stop.load(std::sync::atomic::Ordering::Acquire) {
        true => Err(PublishError::Stopped { journaled }),
        false => Ok(()),
    };
    validate(plan)?;
    if kind_of(out)? == Kind::Missing {
        fs::create_dir_all(out).map_err(io_err("create directory", out))?;
    }
    let _lock = lock(out)?;
    recover_locked(out, kill)?;
    let mut changes = compute_changes(out, plan, guard)?;
    let mut report = PublishReport {
        unchanged: changes.unchanged,
        stats: std::mem::take(&mut changes.stats),
        held: std::mem::take(&mut changes.held),
        held_moves: std::mem::take(&mut changes.held_moves),
        held_removals: std::mem::take(&mut changes.held_removals),
        ..PublishReport::default()
    };
    if changes.writes.is_empty() && changes.deletions.is_empty() {
        let recorded = record(&report, None)?;
        return Ok((report, recorded));
    }
    stopped(false)?;
    let mut journal = stage(out, &changes)?;
    crash_point(kill)?;
    stopped(false)?;
    journal.record = Some(journal.id()?);
    let recorded = record(&report, journal.record)?;
    write_journal(out, &journal)?;
    crash_point(kill)?;
    test_pause_after_journal();
    stopped(true)?;
    let (written, removed) = apply_journal(out, &journal, kill)?;
    crash_point(kill)?;
    settle()?;
    finish_journal(out)?;
    report.written = written;
    report.removed = removed;
    tracing::debug!(
        written = report.written.len(),
        removed = report.removed.len(),
        unchanged = report.unchanged,
        "published"
    );
    Ok((report, recorded))
}

/// The record id of the committed journal of an interrupted publish (`Some(None)`: a journal
/// without one; `None`: no journal). Reads only.
pub fn committed_record(out: &Path) -> Result<Option<Option<u64>>, PublishError> {
    recovery::read_journal(out).map(|j| j.map(|j| j.record))
}

/// Fault injection for the deterministic simulation (`testbed::dst`): once armed, stops the
/// publishes of its holders right after their N-th step from then (see [`crash_point`] for
/// the steps), shared by its clones. [`KillSwitch::OFF`] is never armed.
#[derive(Debug, Clone, Default)]
pub struct KillSwitch(Option<std::sync::Arc<KillCount>>);

#[derive(Debug, Default)]
struct KillCount {
    /// The step to stop after (0: not armed).
    at: std::sync::atomic::AtomicUsize,
    /// Steps since it was armed.
    steps: std::sync::atomic::AtomicUsize,
}

impl KillSwitch {
    /// Never stops a publish.
    pub const OFF: KillSwitch = KillSwitch(None);

    /// A switch not armed yet ([`KillSwitch::arm`]).
    pub fn new() -> KillSwitch {
        KillSwitch(Some(std::sync::Arc::default()))
    }

    /// Stops right after the `after`-th step from now (1 = the next one; 0 disarms).
    pub fn arm(&self, after: usize) {
        if let Some(k) = &self.0 {
            k.steps.store(0, std::sync::atomic::Ordering::SeqCst);
            k.at.store(after, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Whether it will stop a publish (then the renames run on one thread).
    pub fn armed(&self) -> bool {
        self.0.as_ref().is_some_and(|k| k.at.load(std::sync::atomic::Ordering::SeqCst) > 0)
    }

    /// Counts one step; [`PublishError::Killed`] when it is the one to stop after (and every
    /// step after it: a killed process does nothing more).
    pub fn step(&self) -> Result<(), PublishError> {
        let Some(k) = &self.0 else { return Ok(()) };
        let at = k.at.load(std::sync::atomic::Ordering::SeqCst);
        if at == 0 {
            return Ok(());
        }
        let step = k.steps.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if step >= at { Err(PublishError::Killed { step: at }) } else { Ok(()) }
    }
}

/// A step of a publish is done: the staged files written, the journal committed, each rename,
/// each deletion (in the order [`journal::apply_order`] applies them, recovery included), the
/// final `syncfs` before the journal is removed. Two ways to stop there: a [`KillSwitch`]
/// (in process: [`PublishError::Killed`]), and the test hook of debug builds
/// `FEDSCHED_TEST_CRASH_AFTER_STEP=N`, with which the process kills itself with SIGKILL right
/// after the N-th step of its publishes (counted from 1 across the process's life;
/// `tests/it/crash.rs` kills a render at every step in turn).
fn crash_point(kill: &KillSwitch) -> Result<(), PublishError> {
    #[cfg(debug_assertions)]
    {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static STEPS: AtomicUsize = AtomicUsize::new(0);
        if let Some(at) = std::env::var("FEDSCHED_TEST_CRASH_AFTER_STEP").ok().and_then(|v| v.parse::<usize>().ok())
            && STEPS.fetch_add(1, Ordering::SeqCst) + 1 == at
        {
            let _ = signal_hook::low_level::raise(signal_hook::consts::signal::SIGKILL);
            std::process::abort();
        }
    }
    kill.step()
}

/// Test hook (debug builds only): `FEDSCHED_TEST_PAUSE_AFTER_JOURNAL_MS` makes a publish wait
/// that long with its journal written, to show that a shutdown then stops it there and the
/// next start completes it.
fn test_pause_after_journal() {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("FEDSCHED_TEST_PAUSE_AFTER_JOURNAL_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
        tracing::warn!(ms, "test hook: pausing the publish with its journal written");
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Fixtures shared by the tests of the publisher.
#[cfg(test)]
mod test_fixtures {
    use super::*;
    pub(super) use crate::render::GENERATED_HEADER;
    use std::collections::BTreeMap;

    pub(super) fn object(body: &str) -> String {
        format!("{GENERATED_HEADER}\n{body}")
    }

    pub(super) fn cluster(files: &[(&str, &str)], keep: &[&str]) -> ClusterFiles {
        ClusterFiles {
            files: files.iter().map(|(p, body)| ((*p).to_owned(), object(body))).collect(),
            keep: keep.iter().map(|k| (*k).to_owned()).collect(),
            generated: Default::default(),
        }
    }

    /// A summary of one shard (`00.json`), compared with the disk.
    pub(super) fn summary_plan(text: &str) -> super::SummaryPlan {
        super::SummaryPlan {
            shards: [("00.json".to_owned(), std::sync::Arc::new(text.to_owned()))].into(),
            compare: true,
            removals: Default::default(),
        }
    }

    pub(super) fn plan(clusters: Vec<(&str, ClusterFiles)>, summary: Option<&str>) -> PublishPlan {
        PublishPlan {
            clusters: clusters.into_iter().map(|(name, files)| (name.to_owned(), files)).collect(),
            summary: summary.map(summary_plan),
            owners: Default::default(),
            layout: Default::default(),
            roots: None,
        }
    }

    pub(super) fn read(out: &Path, rel: &str) -> String {
        fs::read_to_string(out.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Every file below `dir` (relative, sorted) with its bytes.
    pub(super) fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        fn walk(dir: &Path, prefix: &str, acc: &mut BTreeMap<String, Vec<u8>>) {
            for entry in fs::read_dir(dir).expect("read_dir") {
                let entry = entry.expect("entry");
                let name = entry.file_name().into_string().expect("utf-8");
                let rel = format!("{prefix}{name}");
                if entry.file_type().expect("type").is_dir() {
                    acc.insert(format!("{rel}/"), Vec::new());
                    walk(&entry.path(), &format!("{rel}/"), acc);
                } else if name != LOCK_FILE && name != OWNER_FILE {
                    acc.insert(rel, fs::read(entry.path()).expect("read"));
                }
            }
        }
        let mut acc = BTreeMap::new();
        walk(dir, "", &mut acc);
        acc
    }

    pub(super) fn sample_plan() -> PublishPlan {
        plan(
            vec![
                (
                    "member1",
                    cluster(
                        &[
                            ("default/apps_deployment_web.yaml", "kind: Deployment\n"),
                            ("_cluster/rbac.authorization.k8s.io_clusterrole_admin.yaml", "kind: ClusterRole\n"),
                            ("default/core_configmap_cfg.yaml", "kind: ConfigMap\n"),
                        ],
                        &[],
                    ),
                ),
                ("member2", cluster(&[], &[])),
            ],
            Some("{\"placements\":[]}\n"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::test_fixtures::{GENERATED_HEADER, cluster, object, plan, read, sample_plan, snapshot, summary_plan};
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn writes_objects_kustomization_and_summary() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        let report = publish(out, &sample_plan()).expect("publish");
        assert_eq!(
            read(out, "member1/kustomization.yaml"),
            "# Generated by fedsched. Do not edit: changes are overwritten.\n\
             apiVersion: kustomize.config.k8s.io/v1beta1\n\
             kind: Kustomization\n\
             resources:\n\
             - _cluster/rbac.authorization.k8s.io_clusterrole_admin.yaml\n\
             - default/apps_deployment_web.yaml\n\
             - default/core_configmap_cfg.yaml\n"
        );
        assert_eq!(
            read(out, "member2/kustomization.yaml"),
            "# Generated by fedsched. Do not edit: changes are overwritten.\n\
             apiVersion: kustomize.config.k8s.io/v1beta1\n\
             kind: Kustomization\n\
             resources: []\n"
        );
        assert_eq!(read(out, "member1/default/apps_deployment_web.yaml"), object("kind: Deployment\n"));
        assert_eq!(read(out, ".fedsched/placements/00.json"), "{\"placements\":[]}\n");
        assert_eq!(report.written.len(), 6);
        assert!(report.written.windows(2).all(|w| w[0] < w[1]), "sorted");
        assert!(report.removed.is_empty());
        assert_eq!(report.unchanged, 0);
        // No journal and no staged files are left behind.
        assert!(!out.join(".fedsched/journal.json").exists());
        assert_eq!(fs::read_dir(out.join(".fedsched/staging")).expect("staging").count(), 0);
    }

    /// A publish told to stop writes nothing of its plan (the staged files are cleaned up by
    /// the next one), and the next publish does all of it.
    #[test]
    fn a_stopped_publish_writes_nothing_and_the_next_one_does_it_all() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        let stop = std::sync::atomic::AtomicBool::new(true);
        let e = publish_until(out, &sample_plan(), &DeleteGuard::OFF, &KillSwitch::OFF, &stop).expect_err("stopped");
        assert!(matches!(e, PublishError::Stopped { journaled: false }), "{e}");
        assert!(!out.join("member1/kustomization.yaml").exists());
        assert!(!out.join(".fedsched/journal.json").exists());
        let report = publish(out, &sample_plan()).expect("publish");
        assert_eq!(report.written.len(), 6);
    }

    #[test]
    fn second_publish_writes_nothing_and_keeps_mtimes() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("first publish");
        let files = [
            "member1/default/apps_deployment_web.yaml",
            "member1/kustomization.yaml",
            "member2/kustomization.yaml",
            ".fedsched/placements/00.json",
        ];
        let mtime = |rel: &str| fs::metadata(out.join(rel)).and_then(|m| m.modified()).expect("mtime");
        let before: Vec<_> = files.iter().map(|f| mtime(f)).collect();
        let bytes_before = snapshot(out);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let report = publish(out, &sample_plan()).expect("second publish");
        assert!(report.written.is_empty(), "{report:?}");
        assert!(report.removed.is_empty());
        assert_eq!(report.unchanged, 6);
        let after: Vec<_> = files.iter().map(|f| mtime(f)).collect();
        assert_eq!(before, after);
        assert_eq!(bytes_before, snapshot(out));
    }

    /// A summary the caller knows to be new (it published another) is written without the
    /// disk's copy read; otherwise an equal copy on the disk is left alone.
    #[test]
    fn a_summary_known_to_be_new_is_written_without_reading_the_disk() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("first publish");
        let rel = ".fedsched/placements/00.json";
        let mut next = sample_plan();
        next.summary = Some(summary_plan("{\"placements\":[1]}\n"));
        if let Some(s) = next.summary.as_mut() {
            s.compare = false;
        }
        let report = publish(out, &next).expect("new summary");
        assert_eq!(report.written, vec![out.join(rel)], "{report:?}");
        assert_eq!(read(out, rel), "{\"placements\":[1]}\n");
        // Equal on the disk: left alone unless said to be new.
        if let Some(s) = next.summary.as_mut() {
            s.compare = true;
        }
        assert!(publish(out, &next).expect("same summary").written.is_empty());
        if let Some(s) = next.summary.as_mut() {
            s.compare = false;
        }
        assert_eq!(publish(out, &next).expect("said new").written, vec![out.join(rel)]);
        assert_eq!(read(out, rel), "{\"placements\":[1]}\n");
    }

    /// The single `placements.json` of earlier versions goes with the first publish that
    /// compares the shards with the disk; a shard directory that is a symlink (to `/`) is
    /// refused before anything is written.
    #[test]
    fn the_shards_replace_the_single_file_of_earlier_versions_and_a_symlink_is_refused() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path().join("out");
        fs::create_dir_all(out.join(".fedsched")).expect("mkdir");
        fs::write(out.join(".fedsched/placements.json"), "{\"placements\":[]}\n").expect("write");
        let report = publish(&out, &sample_plan()).expect("publish");
        assert_eq!(report.removed, vec![out.join(".fedsched/placements.json")]);
        assert_eq!(read(&out, ".fedsched/placements/00.json"), "{\"placements\":[]}\n");
        // Written again without comparing: the single file is not looked for.
        let mut next = sample_plan();
        if let Some(s) = next.summary.as_mut() {
            s.compare = false;
        }
        fs::write(out.join(".fedsched/placements.json"), "stale").expect("write");
        assert!(publish(&out, &next).expect("publish").removed.is_empty());

        let bad = dir.path().join("bad");
        fs::create_dir_all(bad.join(".fedsched")).expect("mkdir");
        std::os::unix::fs::symlink(dir.path(), bad.join(".fedsched/placements")).expect("symlink");
        let err = publish(&bad, &sample_plan()).expect_err("a symlinked shard directory");
        assert!(matches!(err, PublishError::InTheWay { .. }), "{err}");
        assert!(!dir.path().join("00.json").exists(), "written through the symlink");
        assert!(!bad.join("member1").exists(), "a cluster written before the refusal");
    }

    #[test]
    fn changed_file_is_rewritten_alone() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("first publish");
        let mut next = sample_plan();
        if let Some(c) = next.clusters.get_mut("member1") {
            c.files.insert("default/apps_deployment_web.yaml".to_owned(), object("kind: Deployment\nspec: {}\n"));
        }
        let report = publish(out, &next).expect("publish");
        assert_eq!(report.written, vec![out.join("member1/default/apps_deployment_web.yaml")]);
        assert_eq!(report.unchanged, 5);
    }

    #[test]
    fn removes_only_generated_files_no_longer_planned() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("first publish");
        // Files fedsched did not write: no header, header not on the first line, not YAML.
        fs::write(out.join("member1/default/manual.yaml"), "kind: Manual\n").expect("write");
        fs::write(out.join("member1/default/late_header.yaml"), format!("kind: X\n{GENERATED_HEADER}\n"))
            .expect("write");
        fs::write(out.join("member1/README.md"), GENERATED_HEADER).expect("write");
        // A generated file in a directory that becomes empty.
        fs::create_dir_all(out.join("member1/old-ns")).expect("mkdir");
        fs::write(out.join("member1/old-ns/core_secret_s.yaml"), object("kind: Secret\n")).expect("write");
        let next =
            plan(vec![("member1", cluster(&[("default/apps_deployment_web.yaml", "kind: Deployment\n")], &[]))], None);
        let report = publish(out, &next).expect("publish");
        assert_eq!(
            report.removed,
            vec![
                out.join("member1/_cluster/rbac.authorization.k8s.io_clusterrole_admin.yaml"),
                out.join("member1/default/core_configmap_cfg.yaml"),
                out.join("member1/old-ns/core_secret_s.yaml"),
            ]
        );
        assert!(out.join("member1/default/manual.yaml").exists());
        assert!(out.join("member1/default/late_header.yaml").exists());
        assert!(out.join("member1/README.md").exists());
        assert!(!out.join("member1/old-ns").exists(), "emptied directory pruned");
        assert!(!out.join("member1/_cluster").exists(), "emptied directory pruned");
        // member2 is absent from the plan: untouched; the summary is kept when not given.
        assert!(out.join("member2/kustomization.yaml").exists());
        assert!(out.join(".fedsched/placements/00.json").exists());
        assert_eq!(
            read(out, "member1/kustomization.yaml"),
            object(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
                 resources:\n- default/apps_deployment_web.yaml\n"
            )
        );
    }

    #[test]
    fn keep_is_honoured_and_listed() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("first publish");
        let next = plan(
            vec![("member1", cluster(&[], &["default/apps_deployment_web.yaml", "default/never_written.yaml"]))],
            None,
        );
        let report = publish(out, &next).expect("publish");
        assert!(out.join("member1/default/apps_deployment_web.yaml").exists());
        assert_eq!(report.removed.len(), 2);
        // The kept file stays in the kustomization; a kept file that does not exist does not.
        assert_eq!(
            read(out, "member1/kustomization.yaml"),
            object(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
                 resources:\n- default/apps_deployment_web.yaml\n"
            )
        );
    }

    #[test]
    fn cluster_dir_is_never_removed() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("first publish");
        let empty = plan(vec![("member1", ClusterFiles::default())], None);
        let report = publish(out, &empty).expect("publish");
        assert_eq!(report.removed.len(), 3);
        assert!(out.join("member1").is_dir());
        assert_eq!(
            read(out, "member1/kustomization.yaml"),
            object(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
                 resources: []\n"
            )
        );
        let entries: Vec<_> =
            fs::read_dir(out.join("member1")).expect("read_dir").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(entries, vec![std::ffi::OsString::from("kustomization.yaml")]);
    }
}
