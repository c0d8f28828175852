//! Applying a publish: changed files staged (on every core) and made durable by one `syncfs`,
//! the journal committed, the renames and deletions applied in an order that keeps every
//! cluster directory consistent at every instant ([`apply_order`]) and made durable by a
//! second `syncfs`, then the journal removed.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::diff::Changes;
use super::disk::{Kind, create_dirs, journal_path, kind_of, staging_dir, state_dir, sync_dir, sync_filesystem};
use super::error::io_err;
use super::{JOURNAL_VERSION, PublishError};
use crate::render::layout::FileClass;

/// The commit record of one publish: staged files to rename into place and files to delete.
/// Paths are relative to the output root; staged names are relative to the staging directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Journal {
    pub(super) version: u32,
    pub(super) renames: Vec<Rename>,
    pub(super) deletions: Vec<String>,
    /// Cluster directories staged whole: each moved into place by one rename when its
    /// directory is still missing there (the renames of its files, staged under it, are then
    /// done by that one); file by file otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) new_dirs: Vec<NewDir>,
    /// The id under which the caller's record of this publish is pending
    /// ([`super::publish_recorded`]): the hash of the rest of the journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) record: Option<u64>,
}

impl Journal {
    /// The journal's id: the hash of its renames, deletions and new directories.
    pub(super) fn id(&self) -> Result<u64, PublishError> {
        let bytes = serde_json::to_vec(&Journal { record: None, ..self.clone() })
            .map_err(|source| PublishError::JournalParse { path: PathBuf::from(super::JOURNAL_FILE), source })?;
        Ok(crate::util::hash::fnv1a64(&bytes))
    }
}

/// A cluster directory that did not exist, staged whole (`n-<cluster>` in the staging
/// directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct NewDir {
    pub(super) staged: String,
    /// The cluster directory (relative to the output root: one name).
    pub(super) target: String,
}

/// One staged file and where it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Rename {
    pub(super) staged: String,
    pub(super) target: String,
    /// The file's order class ([`apply_order`]); an object's (the default) is not written.
    #[serde(default, skip_serializing_if = "FileClass::is_object")]
    pub(super) class: FileClass,
}

/// A file to stage: its target, bytes and order class.
type Staged<'a> = (&'a String, &'a bytes::Bytes, FileClass);

/// Files staged in one directory under the staging directory. Creating a file locks its
/// directory: with every staged file in one directory the cores took turns (no faster on two
/// than on one), and each create searched a directory of 100,000 entries.
const STAGED_PER_DIR: usize = 1024;

/// Writes every changed file as a staged file (made durable by one `syncfs`) and returns the journal that moves them
/// into place. Nothing outside the staging directory changes.
pub(super) fn stage(out: &Path, changes: &Changes) -> Result<Journal, PublishError> {
    let staging = staging_dir(out);
    create_dirs(&staging)?;
    // The files of a cluster whose directory does not exist yet (every cluster of a first
    // publish) are staged as that directory, which one rename moves into place: no rename per
    // file, and the directory appears whole.
    let mut new_clusters: Vec<(&str, Vec<Staged<'_>>)> = Vec::new();
    let mut writes: Vec<Staged<'_>> = Vec::with_capacity(changes.writes.len());
    let mut checked: Option<(&str, bool)> = None;
    for (target, bytes) in &changes.writes {
        let class = changes.classes.get(target).copied().unwrap_or_default();
        // (A root file or a summary shard is no cluster's: staged on its own.)
        let in_cluster = matches!(class, FileClass::Object | FileClass::Index);
        let Some((cluster, _)) = target.split_once('/').filter(|(c, _)| in_cluster && *c != super::STATE_DIR) else {
            writes.push((target, bytes, class));
            continue;
        };
        // The writes are sorted by target: a cluster's are together, its directory looked at once.
        if checked.is_none_or(|(c, _)| c != cluster) {
            let missing = kind_of(&out.join(cluster))? == Kind::Missing;
            if missing {
                new_clusters.push((cluster, Vec::new()));
            }
            checked = Some((cluster, missing));
        }
        match (checked, new_clusters.last_mut()) {
            (Some((_, true)), Some((_, files))) => files.push((target, bytes, class)),
            _ => writes.push((target, bytes, class)),
        }
    }
    let new_staged =
        crate::util::threads::map_ordered(&new_clusters, crate::util::threads::workers(), |(cluster, files)| {
            stage_cluster(&staging, cluster, files)
        });
    let mut new_dirs = Vec::with_capacity(new_clusters.len());
    let mut renames = Vec::with_capacity(changes.writes.len());
    for staged in new_staged {
        let (dir, files) = staged?;
        new_dirs.push(dir);
        renames.extend(files);
    }
    // Staged writes are independent: spread them over the cores (the kernel work of creating
    // 100,000 files dominates a first publish), each run of `STAGED_PER_DIR` files in a
    // directory of its own (`s0`, `s1`…); the journal keeps the sorted order.
    let runs: Vec<(usize, &[Staged<'_>])> = writes.chunks(STAGED_PER_DIR).enumerate().collect();
    let staged = crate::util::threads::map_ordered(&runs, crate::util::threads::workers(), |(k, run)| {
        let dir = format!("s{k}");
        create_dirs(&staging.join(&dir))?;
        run.iter()
            .map(|(target, bytes, class)| stage_file(&staging, &dir, target, bytes, *class))
            .collect::<Result<Vec<_>, _>>()
    });
    for run in staged {
        renames.extend(run?);
    }
    // The journal lists the renames sorted by target, as the changes are.
    renames.sort_by(|a, b| a.target.cmp(&b.target));
    let deletions = changes.deletions.iter().cloned().collect();
    let journal = Journal { version: JOURNAL_VERSION, renames, deletions, new_dirs, record: None };
    // One syncfs for every staged file (one fsync per file costs ~0.5 ms each: 70,000 files
    // would take most of a first publish); then the staging directory's entries.
    sync_filesystem(&staging)?;
    sync_dir(&staging)?;
    Ok(journal)
}

/// Stages the files of a cluster whose directory is missing as the directory `n-<cluster>`
/// of the staging directory, laid out as the cluster directory will be; returns its journal
/// entries (the directory, and a rename per file from its place in it).
fn stage_cluster(staging: &Path, cluster: &str, files: &[Staged<'_>]) -> Result<(NewDir, Vec<Rename>), PublishError> {
    let dir = format!("n-{cluster}");
    let root = staging.join(&dir);
    let mut made = std::collections::HashSet::new();
    let mut renames = Vec::with_capacity(files.len());
    for (target, bytes, class) in files {
        let rel = target.strip_prefix(cluster).and_then(|r| r.strip_prefix('/')).unwrap_or(target.as_str());
        let path = root.join(rel);
        if let Some(parent) = path.parent()
            && made.insert(parent.to_path_buf())
        {
            create_dirs(parent)?;
        }
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_err("create staged file", &path))?;
        file.write_all(bytes).map_err(io_err("write", &path))?;
        renames.push(Rename { staged: format!("{dir}/{rel}"), target: target.to_string(), class: *class });
    }
    Ok((NewDir { staged: dir, target: cluster.to_string() }, renames))
}

/// Writes one staged file under `staging/dir` with a fresh name; returns its journal entry.
fn stage_file(staging: &Path, dir: &str, target: &str, bytes: &[u8], class: FileClass) -> Result<Rename, PublishError> {
    let in_dir = staging.join(dir);
    let mut tmp = tempfile::Builder::new()
        .prefix("stage-")
        .suffix(".tmp")
        .tempfile_in(&in_dir)
        .map_err(io_err("create staged file in", &in_dir))?;
    let tmp_path = tmp.path().to_path_buf();
    tmp.as_file_mut().write_all(bytes).map_err(io_err("write", &tmp_path))?;
    let (_file, path) = tmp.keep().map_err(|e| io_err("keep", &tmp_path)(e.error))?;
    let staged = path
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| PublishError::InTheWay { path: path.clone(), expected: "a UTF-8 staged file name" })?;
    Ok(Rename { staged: format!("{dir}/{staged}"), target: target.to_string(), class })
}

/// Commits the journal: written to a temporary file, fsynced, renamed to `journal.json`, and
/// the state directory fsynced. From here on the publish will complete, even after a crash.
pub(super) fn write_journal(out: &Path, journal: &Journal) -> Result<(), PublishError> {
    let staging = staging_dir(out);
    create_dirs(&staging)?;
    let path = journal_path(out);
    let bytes = serde_json::to_vec_pretty(journal)
        .map_err(|source| PublishError::JournalParse { path: path.clone(), source })?;
    let mut tmp = tempfile::NamedTempFile::new_in(&staging).map_err(io_err("create temporary file in", &staging))?;
    tmp.as_file_mut().write_all(&bytes).and_then(|()| tmp.as_file().sync_all()).map_err(io_err("write", &path))?;
    tmp.persist(&path).map_err(|e| io_err("rename into", &path)(e.error))?;
    sync_dir(&state_dir(out))
}

/// Applies a committed journal idempotently, in [`apply_order`] within each cluster directory
/// (the clusters on every core, the summary's shards after all of them): renames staged files that
/// still exist, deletes targets that still exist, prunes directories emptied by deletions
/// (never a cluster directory), then makes all of it durable with one `syncfs` of the
/// output's file system (one fsync per changed directory cost more than the renames at
/// 100,000 files). Returns the paths written and removed, in the journal's order (sorted, as
/// [`stage`] writes it). A recovery applies the same order, whatever order the journal lists
/// its entries in.
pub(super) fn apply_journal(
    out: &Path,
    journal: &Journal,
    kill: &super::KillSwitch,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), PublishError> {
    let staging = staging_dir(out);
    let mut removed = Vec::new();
    let mut done = vec![false; journal.renames.len()];
    // Whole new cluster directories first: each one rename when the directory is still
    // missing; its files' renames are then done.
    let mut moved_dirs = std::collections::HashSet::new();
    for dir in &journal.new_dirs {
        let (from, to) = (staging.join(&dir.staged), out.join(&dir.target));
        if kind_of(&from)? == Kind::Dir && kind_of(&to)? == Kind::Missing {
            fs::rename(&from, &to).map_err(io_err("rename into", &to))?;
            super::crash_point(kill)?;
            moved_dirs.insert(dir.staged.as_str());
        }
    }
    if !moved_dirs.is_empty() {
        for (rename, d) in journal.renames.iter().zip(done.iter_mut()) {
            *d = rename.staged.split_once('/').is_some_and(|(dir, _)| moved_dirs.contains(dir));
        }
    }
    // Cluster directories are independent: each one's renames run in order on one core, the
    // clusters on every core; the summary's shards only once every cluster is done.
    let (clusters, last) = cluster_runs(&journal.renames, &done);
    // Under an armed kill switch on one thread: the step it stops at is the same every run.
    let threads = if kill.armed() { 1 } else { crate::util::threads::workers() };
    let applied = crate::util::threads::map_ordered(&clusters, threads, |run| {
        let mut known_dirs = std::collections::HashSet::new();
        let mut moved = Vec::with_capacity(run.len());
        for &i in run {
            if apply_rename(out, &staging, &journal.renames[i], &mut known_dirs, kill)? {
                moved.push(i);
            }
        }
        Ok::<_, PublishError>(moved)
    });
    let mut known_dirs = std::collections::HashSet::new();
    for moved in applied {
        for i in moved? {
            done[i] = true;
        }
    }
    for i in last {
        if apply_rename(out, &staging, &journal.renames[i], &mut known_dirs, kill)? {
            done[i] = true;
        }
    }
    // The staging directories the renames emptied (a recovery's clean-up removes any left).
    let dirs: std::collections::BTreeSet<&str> =
        journal.renames.iter().filter_map(|r| r.staged.split_once('/').map(|(dir, _)| dir)).collect();
    for dir in dirs {
        let path = staging.join(dir);
        match fs::remove_dir(&path) {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::DirectoryNotEmpty | io::ErrorKind::NotFound) => {}
            Err(e) => return Err(io_err("remove directory", &path)(e)),
        }
    }
    for deletion in &journal.deletions {
        let path = out.join(deletion);
        match fs::remove_file(&path) {
            Ok(()) => {
                removed.push(path.clone());
                super::crash_point(kill)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove", &path)(e)),
        }
        let cluster_dir =
            deletion.split_once('/').map(|(cluster, _)| out.join(cluster)).unwrap_or_else(|| out.to_path_buf());
        let mut dir = path.parent().map(Path::to_path_buf);
        while let Some(current) = dir {
            if !current.starts_with(&cluster_dir) || current == cluster_dir {
                break;
            }
            match fs::remove_dir(&current) {
                Ok(()) => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::DirectoryNotEmpty | io::ErrorKind::NotFound) => break,
                Err(e) => return Err(io_err("remove directory", &current)(e)),
            }
            dir = current.parent().map(Path::to_path_buf);
        }
    }
    sync_filesystem(out)?;
    let written = journal.renames.iter().zip(&done).filter(|(_, d)| **d).map(|(r, _)| out.join(&r.target)).collect();
    Ok((written, removed))
}

/// Moves one staged file into place (creating its directory); `false` when it was moved
/// before an interruption. `known_dirs`: directories this run created or found.
fn apply_rename(
    out: &Path,
    staging: &Path,
    rename: &Rename,
    known_dirs: &mut std::collections::HashSet<PathBuf>,
    kill: &super::KillSwitch,
) -> Result<bool, PublishError> {
    let from = staging.join(&rename.staged);
    let to = out.join(&rename.target);
    if kind_of(&from)? != Kind::File {
        return Ok(false); // already moved into place before the interruption
    }
    if let Some(parent) = to.parent()
        && !known_dirs.contains(parent)
    {
        create_dirs(parent)?;
        known_dirs.insert(parent.to_path_buf());
    }
    if matches!(kind_of(&to)?, Kind::Dir | Kind::Other) {
        return Err(PublishError::InTheWay { path: to, expected: "a regular file" });
    }
    fs::rename(&from, &to).map_err(io_err("rename into", &to))?;
    super::crash_point(kill)?;
    Ok(true)
}

/// [`apply_order`] of the renames not `done` (a whole new directory moved them) cut into one
/// run per cluster directory (each in its order), and what comes after every cluster
/// (the summary's shards).
fn cluster_runs(renames: &[Rename], done: &[bool]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let mut last = Vec::new();
    let mut current: Option<&str> = None;
    for i in apply_order(renames).into_iter().filter(|i| !done.get(*i).copied().unwrap_or(false)) {
        let target = renames[i].target.as_str();
        if matches!(renames[i].class, FileClass::Root | FileClass::Summary) {
            last.push(i);
            continue;
        }
        let cluster = target.split_once('/').map_or(target, |(c, _)| c);
        match runs.last_mut() {
            Some(run) if current == Some(cluster) => run.push(i),
            _ => runs.push(vec![i]),
        }
        current = Some(cluster);
    }
    (runs, last)
}

/// The order renames are applied in, by their class ([`FileClass`]), so that every cluster
/// directory is consistent at every instant (each file its index files name exists, and no
/// generated file is there that is in neither the old nor the new state): cluster by cluster
/// (in name order), its new and changed object files first, then its index files; then the
/// layout's root files, which name cluster directories; then the summary's shards (`.fedsched/placements/`), once every file they list is in place. The
/// deletions come after all of it ([`apply_journal`]): a file is removed only once no index
/// and no summary names it any more. A GitOps agent that syncs a cluster directory at any
/// moment sees its old state, its new state, or the new state with some unnamed leftovers
/// still on disk (which it ignores).
pub(super) fn apply_order(renames: &[Rename]) -> Vec<usize> {
    fn key(r: &Rename) -> (bool, &str, FileClass) {
        if matches!(r.class, FileClass::Root | FileClass::Summary) {
            return (true, "", r.class);
        }
        let cluster = r.target.split_once('/').map_or("", |(cluster, _)| cluster);
        (false, cluster, r.class)
    }
    let mut order: Vec<usize> = (0..renames.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (&renames[a], &renames[b]);
        key(ra).cmp(&key(rb)).then_with(|| ra.target.cmp(&rb.target))
    });
    order
}

/// Removes the committed journal (the publish is complete) and fsyncs the state directory.
pub(super) fn finish_journal(out: &Path) -> Result<(), PublishError> {
    let path = journal_path(out);
    match fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("remove", &path)(e)),
    }
    sync_dir(&state_dir(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cluster_gets_its_objects_before_its_kustomization_and_the_summary_comes_last() {
        let r =
            |target: &str, class| Rename { staged: format!("s-{}", target.len()), target: target.to_owned(), class };
        let (o, i, s) = (FileClass::Object, FileClass::Index, FileClass::Summary);
        let renames = vec![
            r("clusters/member1/fedsched.yaml", FileClass::Root),
            r(".fedsched/placements/3f.json", s),
            r(".fedsched/placements/07.json", s),
            r("member1/_cluster/core_namespace_shop.yaml", o),
            r("member1/kustomization.yaml", i),
            r("member1/shop/apps_deployment_web.yaml", o),
            r("member2/kustomization.yaml", i),
            r("member2/monitoring/core_configmap_a.yaml", o),
        ];
        let order: Vec<&str> = apply_order(&renames).into_iter().map(|i| renames[i].target.as_str()).collect();
        assert_eq!(
            order,
            [
                "member1/_cluster/core_namespace_shop.yaml",
                "member1/shop/apps_deployment_web.yaml",
                "member1/kustomization.yaml",
                "member2/monitoring/core_configmap_a.yaml",
                "member2/kustomization.yaml",
                "clusters/member1/fedsched.yaml",
                ".fedsched/placements/07.json",
                ".fedsched/placements/3f.json",
            ]
        );
    }
}
