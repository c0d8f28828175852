//! The diff of a plan against the output directory (read-only): files to write, generated
//! files to delete, files already right, and clusters the guard holds.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::disk::{Kind, kind_of};
use super::error::io_err;
use super::names::object_path_problem;
use super::{
    ClusterFiles, DeleteGuard, HeldCluster, HeldMove, HeldRemoval, PublishError, PublishPlan, legacy_summary_path,
    summary_shard_path,
};
use crate::render::layout::{FileClass, Layout, ROOT_DIR, root_file_cluster, root_file_path};
use crate::render::output::{GENERATED_HEADER, has_header};
use crate::util::stat::{EntryKind, FileStat, list_dir_untouched, open_untouched, read_file, wall_ns};

/// Whether the file at `path` begins with the generated header (reads only its first line).
fn file_has_header(path: &Path) -> Result<bool, PublishError> {
    let mut buf = Vec::with_capacity(GENERATED_HEADER.len() + 1);
    open_untouched(path, true)
        .and_then(|f| f.take(GENERATED_HEADER.len() as u64 + 1).read_to_end(&mut buf))
        .map_err(io_err("read", path))?;
    Ok(has_header(&buf))
}

/// Checks that every existing directory on the way from `out` to `rel` is a real directory
/// (not a symlink) and that `rel` itself is missing or a regular file. Returns whether it
/// exists.
fn check_target(out: &Path, rel: &str) -> Result<bool, PublishError> {
    let mut path = out.to_path_buf();
    let segments: Vec<&str> = rel.split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        path.push(segment);
        let last = i + 1 == segments.len();
        match (kind_of(&path)?, last) {
            (Kind::Missing, _) => return Ok(false),
            (Kind::Dir, false) => {}
            (Kind::File, true) => return Ok(true),
            (_, false) => {
                return Err(PublishError::InTheWay { path, expected: "a directory" });
            }
            (_, true) => {
                return Err(PublishError::InTheWay { path, expected: "a regular file" });
            }
        }
    }
    Ok(false)
}

/// A shared text as the bytes of a write.
struct SharedText(Arc<String>);

impl AsRef<[u8]> for SharedText {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// The changes one publish makes, with paths relative to the output root (`/`-separated).
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// New or changed files and their bytes, sorted by path.
    pub(super) writes: BTreeMap<String, Bytes>,
    /// The order class of each of `writes` that is not an object's file (an index file, a
    /// summary shard).
    pub(super) classes: HashMap<String, FileClass>,
    /// Generated files to delete, sorted.
    pub(super) deletions: BTreeSet<String>,
    /// Desired files already on disk with the right bytes.
    pub(super) unchanged: usize,
    /// The stat of each of those (path relative to the output root) that proves its bytes
    /// from now on ([`FileStat::settled_at`]).
    pub(super) stats: HashMap<String, FileStat>,
    /// Clusters left untouched by the mass-deletion guard.
    pub(super) held: Vec<HeldCluster>,
    /// Workloads whose changes were held with a held cluster's.
    pub(super) held_moves: Vec<HeldMove>,
    /// Removals of files no placed workload owns (a template or policy deleted) that a held
    /// cluster holds, and so every cluster holds.
    pub(super) held_removals: Vec<HeldRemoval>,
}

/// `rel` (`cluster/path`, relative to the output root) relative to its cluster directory.
fn relative<'a>(cluster: &str, rel: &'a str) -> &'a str {
    rel.strip_prefix(cluster).and_then(|r| r.strip_prefix('/')).unwrap_or(rel)
}

/// Whether the changes of `cluster` write or delete its `path`.
fn touched_path(changes: &Changes, cluster: &str, path: &str) -> bool {
    let rel = format!("{cluster}/{path}");
    changes.writes.contains_key(&rel) || changes.deletions.contains(&rel)
}

/// Compares the plan with the disk (read-only). Clusters the guard holds contribute nothing;
/// the guard counts only removals of files no placed workload owns ([`PublishPlan::owners`]),
/// and not the Namespace files that leave with those a placed workload owns
/// ([`following_namespaces`]).
/// A workload's change is published whole or not at all: one with a change in a held cluster,
/// or a file kept there (a graceful eviction's copy, whose purge the hold would keep), keeps
/// its files as they are in every other cluster too ([`HeldMove`], also for a change only on
/// held clusters: the record stage keeps such a workload's published placement); and an object no workload
/// owns any more (its template or policy deleted) whose removal a held cluster holds stays on
/// every cluster ([`HeldRemoval`]).
pub(super) fn compute_changes(out: &Path, plan: &PublishPlan, guard: &DeleteGuard) -> Result<Changes, PublishError> {
    // Path → owners, built when a cluster is held (rare).
    let owned_map: std::cell::OnceCell<HashMap<&str, Vec<&str>>> = std::cell::OnceCell::new();
    let owned = || -> &HashMap<&str, Vec<&str>> {
        owned_map.get_or_init(|| {
            let mut owned: HashMap<&str, Vec<&str>> = HashMap::new();
            for (owner, paths) in plan.owners.iter() {
                for p in paths {
                    owned.entry(p.as_str()).or_default().push(owner.as_str());
                }
            }
            owned
        })
    };
    let mut changes = Changes::default();
    let mut passed: Vec<(&str, Changes)> = Vec::new();
    // Per owner with a change (or a kept file) in a held cluster: the held clusters.
    let mut held_owners: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    // The owners with a write or a deletion in a held cluster (not only a kept file there).
    let mut changed_in_held: BTreeSet<&str> = BTreeSet::new();
    // Per object no placed workload owns, removed in a held cluster: the held clusters.
    let mut held_unowned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let results = every_cluster_changes(out, plan);
    // The removed paths (relative to their cluster directory) that a still-placed workload
    // owns: a decision's removals, which the guard does not count. Found in one scan of the
    // owners against the few removed paths, sorted and searched by comparing bytes: no map of
    // every owned path, and the ~30,000 owned paths are not hashed for the one or two an edit
    // removes.
    let mut removed: Vec<&str> = results
        .iter()
        .filter_map(|(cluster, r)| r.as_ref().ok().map(|(_, mine)| (*cluster, mine)))
        .flat_map(|(cluster, mine)| mine.deletions.iter().map(move |d| relative(cluster, d)))
        .collect();
    removed.sort_unstable();
    removed.dedup();
    let owned_removed: HashSet<&str> = match removed.is_empty() {
        true => HashSet::new(),
        false => {
            plan.owners.values().flatten().map(String::as_str).filter(|p| removed.binary_search(p).is_ok()).collect()
        }
    };
    for (cluster, result) in results {
        let (objects, mine) = result?;
        let follows = following_namespaces(cluster, &mine.deletions, &owned_removed);
        let decided = |d: &str| owned_removed.contains(d) || follows.contains(d);
        let counted = mine.deletions.iter().filter(|d| !decided(relative(cluster, d))).count();
        if guard.holds(objects, counted) {
            let held = HeldCluster { cluster: cluster.to_owned(), objects, removals: counted };
            tracing::warn!(cluster = %cluster, objects, removals = held.removals, "mass-deletion guard: cluster held");
            changes.held.push(held);
            let owned = owned();
            // Its kept files (not planned): a graceful eviction's copy stays until its purge,
            // a removal the hold would keep, so the workload's additions wait with it.
            let kept = plan
                .clusters
                .get(cluster)
                .into_iter()
                .flat_map(|f| f.keep.iter().filter(|k| !f.files.contains_key(*k)));
            for path in mine.writes.keys().chain(&mine.deletions).map(|rel| relative(cluster, rel)) {
                for owner in owned.get(path).into_iter().flatten() {
                    held_owners.entry(owner).or_default().insert(cluster.to_owned());
                    changed_in_held.insert(owner);
                }
            }
            for path in kept {
                for owner in owned.get(path.as_str()).into_iter().flatten() {
                    held_owners.entry(owner).or_default().insert(cluster.to_owned());
                }
            }
            for d in mine.deletions.iter().map(|d| relative(cluster, d)).filter(|d| !decided(d)) {
                held_unowned.entry(d.to_owned()).or_default().insert(cluster.to_owned());
            }
            continue;
        }
        passed.push((cluster, mine));
    }
    let held_paths: BTreeSet<&str> =
        held_owners.keys().flat_map(|o| plan.owners.get(*o).into_iter().flatten().map(String::as_str)).collect();
    let mut waiting: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut removal_waiting: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (cluster, mut mine) in passed {
        let unowned: Vec<String> = mine
            .deletions
            .iter()
            .map(|d| relative(cluster, d))
            .filter(|d| held_unowned.contains_key(*d))
            .map(str::to_owned)
            .collect();
        let touched = mine.writes.keys().chain(&mine.deletions).any(|rel| held_paths.contains(relative(cluster, rel)));
        if touched || !unowned.is_empty() {
            // Its files of held workloads, and the objects whose removal a held cluster holds,
            // stay exactly as they are on the disk.
            let mut files = plan.clusters.get(cluster).cloned().unwrap_or_default();
            for p in &held_paths {
                if files.files.remove(*p).is_some() || touched_path(&mine, cluster, p) {
                    files.keep.insert((*p).to_owned());
                }
            }
            for p in unowned {
                files.keep.insert(p.clone());
                removal_waiting.entry(p).or_default().insert(cluster.to_owned());
            }
            for (owner, paths) in plan.owners.iter() {
                if held_owners.contains_key(owner.as_str()) && paths.iter().any(|p| touched_path(&mine, cluster, p)) {
                    waiting.entry(owner.as_str()).or_default().insert(cluster.to_owned());
                }
            }
            mine = Changes::default();
            cluster_changes(out, cluster, &files, &plan.layout, &mut mine)?;
        }
        // `extend`, not `append`: `append` merges the whole accumulated map again for every
        // cluster (quadratic: 1,000 clusters of a first publish took seconds).
        changes.writes.extend(std::mem::take(&mut mine.writes));
        changes.classes.extend(std::mem::take(&mut mine.classes));
        changes.deletions.extend(std::mem::take(&mut mine.deletions));
        changes.unchanged += mine.unchanged;
        changes.stats.extend(std::mem::take(&mut mine.stats));
    }
    changes.held_moves = held_owners
        .into_iter()
        .filter_map(|(owner, held)| {
            // A change that waits elsewhere, or one only on held clusters: either is not
            // published, so the workload's change is held whole.
            let waiting = match waiting.remove(owner) {
                Some(w) => w,
                None if changed_in_held.contains(owner) => BTreeSet::new(),
                None => return None,
            };
            tracing::warn!(workload = owner, waiting = waiting.len(), "mass-deletion guard: move held whole");
            Some(HeldMove { owner: owner.to_owned(), held, waiting })
        })
        .collect();
    changes.held_removals = held_unowned
        .into_iter()
        .filter_map(|(path, held)| {
            let waiting = removal_waiting.remove(&path)?;
            tracing::warn!(path, waiting = waiting.len(), "mass-deletion guard: removal held on every cluster");
            Some(HeldRemoval { path, held, waiting })
        })
        .collect();
    root_changes(out, plan, &mut changes)?;
    summary_changes(out, plan, &mut changes)?;
    Ok(changes)
}

/// The published summary's shards ([`PublishPlan::summary`]): each shard written unless the
/// disk holds its bytes; the entries of removals the guard held, and of workloads whose change
/// it held whole, kept as published; the single file of earlier versions removed.
fn summary_changes(out: &Path, plan: &PublishPlan, changes: &mut Changes) -> Result<(), PublishError> {
    let Some(summary) = &plan.summary else { return Ok(()) };
    // No symlink on the way (`.fedsched/placements` pointing elsewhere is refused): the
    // directories checked with the first shard, then each shard itself.
    let mut dirs_checked = false;
    let held_owners: BTreeSet<&str> = changes.held_moves.iter().map(|m| m.owner.as_str()).collect();
    for (name, bytes) in &summary.shards {
        let rel = summary_shard_path(name);
        let full = out.join(&rel);
        let exists = match dirs_checked {
            false => check_target(out, &rel)?,
            true => match kind_of(&full)? {
                Kind::File => true,
                Kind::Missing => false,
                Kind::Dir | Kind::Other => {
                    return Err(PublishError::InTheWay { path: full, expected: "a regular file" });
                }
            },
        };
        dirs_checked = true;
        // The entries of removals the guard held: their files stay, so do they.
        let mut held: Vec<&str> = Vec::new();
        for (item, files) in summary.removals.get(name).into_iter().flatten() {
            for f in files.iter().filter(|f| !changes.deletions.contains(*f)) {
                if kind_of(&out.join(f))? == Kind::File {
                    held.push(item);
                    break;
                }
            }
        }
        let mut bytes = match held.is_empty() {
            true => Arc::clone(bytes),
            false => Arc::new(crate::render::summary::with_items(bytes, &held)),
        };
        // The entries of the workloads whose change the guard held whole: as published (the
        // shard on the disk), like their files (`reconcile::plan` then compares every shard
        // with the disk until the hold ends).
        let on_disk = match exists && !held_owners.is_empty() {
            true => Some(read_file(&full).map_err(io_err("read", &full))?.1),
            false => None,
        };
        if !held_owners.is_empty() {
            let published = on_disk.as_deref().map(String::from_utf8_lossy);
            if let Some(kept) =
                crate::render::summary::with_published_entries(&bytes, published.as_deref(), &held_owners)
            {
                bytes = Arc::new(kept);
            }
        }
        // A shard with removals is compared with the disk: it is planned every pass while
        // they are pending, and a held one's bytes are on the disk already.
        let compare = summary.compare || summary.removals.contains_key(name) || on_disk.is_some();
        let same = compare
            && exists
            && match &on_disk {
                Some(disk) => *disk == bytes.as_bytes(),
                None => read_file(&full).map_err(io_err("read", &full))?.1 == bytes.as_bytes(),
            };
        if same {
            changes.unchanged += 1;
        } else {
            // Shared with the plan, not copied.
            changes.classes.insert(rel.clone(), FileClass::Summary);
            changes.writes.insert(rel, Bytes::from_owner(SharedText(bytes)));
        }
    }
    // The single file of earlier versions goes once the shards replace it.
    let legacy = legacy_summary_path();
    if summary.compare && kind_of(&out.join(&legacy))? == Kind::File {
        changes.deletions.insert(legacy);
    }
    Ok(())
}

/// The layout's root files ([`PublishPlan::roots`]): each cluster of the pass whose directory
/// exists once published (on the disk, or written by `changes`: the clusters' changes are
/// known) gets its root files, written after every cluster's ([`FileClass::Root`]), so that a
/// root file never names a directory not yet there; a generated root file of any other cluster
/// (one that left, or every one when the layout has none) is removed.
fn root_changes(out: &Path, plan: &PublishPlan, changes: &mut Changes) -> Result<(), PublishError> {
    let Some(roots) = &plan.roots else { return Ok(()) };
    let mut present: BTreeSet<&str> = BTreeSet::new();
    if plan.layout.reserved_cluster().is_some() {
        for cluster in roots {
            let prefix = format!("{cluster}/");
            let written = changes.writes.range(prefix.clone()..).next().is_some_and(|(p, _)| p.starts_with(&prefix));
            if written || kind_of(&out.join(cluster))? == Kind::Dir {
                present.insert(cluster);
            }
        }
    }
    let desired = plan.layout.root_files(&present);
    for (rel, text) in &desired {
        let full = out.join(rel);
        if check_target(out, rel)? && read_file(&full).map_err(io_err("read", &full))?.1 == text.as_bytes() {
            changes.unchanged += 1;
            continue;
        }
        changes.classes.insert(rel.clone(), FileClass::Root);
        changes.writes.insert(rel.clone(), Bytes::from(text.clone().into_bytes()));
    }
    // Under a layout without root files, a cluster may be named as their directory.
    let root_dir = out.join(ROOT_DIR);
    if roots.contains(ROOT_DIR) || kind_of(&root_dir)? != Kind::Dir {
        return Ok(());
    }
    let wanted: HashSet<&str> = desired.iter().map(|(p, _)| p.as_str()).collect();
    for (name, kind) in list_dir_untouched(&root_dir).map_err(io_err("list", &root_dir))? {
        let rel = root_file_path(&name);
        if kind != EntryKind::Dir || wanted.contains(rel.as_str()) || root_file_cluster(&rel) != Some(name.as_str()) {
            continue;
        }
        let full = out.join(&rel);
        if kind_of(&full)? == Kind::File && file_has_header(&full)? {
            changes.deletions.insert(rel);
        }
    }
    Ok(())
}

/// The Namespace files (paths relative to `cluster`'s directory) among `deletions` that follow
/// a decision out of the cluster: a namespace's file goes when its last object leaves the
/// cluster, so when a still-placed workload's file in that namespace is removed in the same
/// publish (`owned_removed`), its Namespace file's removal is that decision's, not a removal
/// the guard counts. (It deletes nothing on the member either: the file carries the GitOps
/// tools' prune opt-outs, [`crate::render::namespace`].) Namespace files removed with objects
/// no placed workload owns still count, as those objects do.
fn following_namespaces<'d>(
    cluster: &str,
    deletions: &'d BTreeSet<String>,
    owned_removed: &HashSet<&str>,
) -> HashSet<&'d str> {
    let namespaces: BTreeSet<&str> = deletions
        .iter()
        .map(|d| relative(cluster, d))
        .filter(|d| owned_removed.contains(d))
        .filter_map(|d| d.split_once('/').map(|(ns, _)| ns))
        .collect();
    if namespaces.is_empty() {
        return HashSet::new();
    }
    let files: HashSet<String> = namespaces
        .into_iter()
        .map(|ns| {
            crate::render::object_path(&crate::policy::ObjectKey {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                namespace: None,
                name: ns.into(),
            })
        })
        .collect();
    deletions.iter().map(|d| relative(cluster, d)).filter(|d| files.contains(*d)).collect()
}

/// What [`cluster_changes`] gives for one cluster: its generated object files and changes.
type ClusterResult = Result<(usize, Changes), PublishError>;

/// [`cluster_changes`] of every cluster of the plan, in the plan's order, spread over the
/// cores: each cluster directory is read on its own (read-only, independent), and a cold
/// full check reads about 100,000 files.
fn every_cluster_changes<'p>(out: &Path, plan: &'p PublishPlan) -> Vec<(&'p str, ClusterResult)> {
    let clusters: Vec<(&String, &ClusterFiles)> = plan.clusters.iter().collect();
    let one = |(cluster, files): &(&'p String, &'p ClusterFiles)| {
        let mut mine = Changes::default();
        (cluster.as_str(), cluster_changes(out, cluster, files, &plan.layout, &mut mine).map(|objects| (objects, mine)))
    };
    crate::util::threads::map_ordered(&clusters, crate::util::threads::workers(), one)
}

/// The changes of one cluster directory: its object files, then the index files `layout`
/// renders from the object files it will hold (the planned ones and the kept ones on the
/// disk); returns how many generated object files it holds.
fn cluster_changes(
    out: &Path,
    cluster: &str,
    files: &ClusterFiles,
    layout: &Layout,
    changes: &mut Changes,
) -> Result<usize, PublishError> {
    let mut objects = 0;
    let cluster_dir = out.join(cluster);
    // The regular `*.yaml` files below the cluster directory (through real directories only),
    // listed once: a path found there is what `check_target` would find (a regular file on a
    // way of real directories), so only the paths not listed are checked one by one.
    let mut found = Vec::new();
    if kind_of(&cluster_dir)? == Kind::Dir {
        list_yaml_files(&cluster_dir, "", &mut found)?;
    }
    let listed: HashSet<&str> = found.iter().map(String::as_str).collect();
    let exists = |path: &str| match listed.contains(path) {
        true => Ok(true),
        false => check_target(out, &format!("{cluster}/{path}")),
    };
    let mut resources: BTreeSet<&str> = files.files.keys().map(String::as_str).collect();
    for kept in &files.keep {
        if !files.files.contains_key(kept) && exists(kept)? {
            resources.insert(kept);
        }
    }
    let mut desired: Vec<(&str, Vec<u8>, FileClass)> = files
        .files
        .iter()
        .map(|(path, content)| (path.as_str(), content.as_bytes().to_vec(), FileClass::Object))
        .collect();
    for (path, text) in layout.index_files(&resources) {
        desired.push((path, text.into_bytes(), FileClass::Index));
    }
    // Planned files found on disk, and whether they carry the header (read once, here).
    let mut on_disk: HashMap<&str, bool> = HashMap::new();
    for (path, bytes, class) in desired {
        let rel = format!("{cluster}/{path}");
        if exists(path)? {
            let full = out.join(&rel);
            let read_at = wall_ns();
            let (stat, existing) = read_file(&full).map_err(io_err("read", &full))?;
            on_disk.insert(path, has_header(&existing));
            if existing == bytes {
                changes.unchanged += 1;
                if stat.settled_at(read_at) {
                    changes.stats.insert(rel, stat);
                }
                continue;
            }
        }
        if !class.is_object() {
            changes.classes.insert(rel.clone(), class);
        }
        changes.writes.insert(rel, Bytes::from(bytes));
    }
    // Index files (reserved paths) are never an object's, never removed.
    for path in &found {
        if object_path_problem(path).is_some() {
            continue;
        }
        let generated = match on_disk.get(path.as_str()) {
            Some(header) => *header,
            None if files.generated.contains(path) => true,
            None => file_has_header(&cluster_dir.join(path))?,
        };
        if !generated {
            continue;
        }
        objects += 1;
        if !files.files.contains_key(path) && !files.keep.contains(path) {
            changes.deletions.insert(format!("{cluster}/{path}"));
        }
    }
    Ok(objects)
}

/// Collects the `/`-joined relative paths of regular `*.yaml` files below `dir`, recursively,
/// without following symlinks.
fn list_yaml_files(dir: &Path, prefix: &str, found: &mut Vec<String>) -> Result<(), PublishError> {
    // (Names that are not UTF-8 are left out: never a name fedsched writes.)
    for (name, kind) in list_dir_untouched(dir).map_err(io_err("list", dir))? {
        let rel = format!("{prefix}{name}");
        match kind {
            EntryKind::Dir => list_yaml_files(&dir.join(&name), &format!("{rel}/"), found)?,
            EntryKind::File if name.ends_with(".yaml") => found.push(rel),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_fixtures::sample_plan;
    use crate::publish::{PublishError, publish};
    use std::fs;
    use tempfile::TempDir;

    /// The cluster directory is listed once and only unlisted paths are checked one by one:
    /// a symlinked namespace directory or a symlink where a planned or kept file goes is still
    /// refused (nothing behind it touched), and a directory where a file goes too; a kept file
    /// on disk stays listed in the kustomization, a kept file that is missing does not.
    #[test]
    fn listed_and_unlisted_paths_are_checked_alike() {
        use super::super::test_fixtures::{cluster, plan};
        use crate::publish::{DeleteGuard, preview};
        let guard = DeleteGuard::default();
        let dir = TempDir::new().expect("tempdir");
        let (out, elsewhere) = (dir.path().join("out"), dir.path().join("elsewhere"));
        fs::create_dir_all(out.join("member1/default")).expect("mkdir");
        fs::create_dir_all(&elsewhere).expect("mkdir");
        let kept = crate::render::output::GENERATED_HEADER.to_owned() + "\nkind: Service\n";
        fs::write(out.join("member1/default/core_service_web.yaml"), &kept).expect("write");
        let keep = ["default/core_service_web.yaml", "default/core_service_gone.yaml"];
        let ok = plan(vec![("member1", cluster(&[("default/apps_deployment_web.yaml", "kind: D\n")], &keep))], None);
        let p = preview(&out, &ok, &guard).expect("preview");
        let kustomization = String::from_utf8(p.writes["member1/kustomization.yaml"].to_vec()).expect("utf-8");
        assert!(kustomization.contains("core_service_web.yaml"), "{kustomization}");
        assert!(!kustomization.contains("core_service_gone.yaml"), "{kustomization}");
        assert!(p.deletions.is_empty(), "{:?}", p.deletions);

        std::os::unix::fs::symlink(&elsewhere, out.join("member1/shop")).expect("symlink");
        let behind = plan(vec![("member1", cluster(&[("shop/apps_deployment_web.yaml", "kind: D\n")], &[]))], None);
        let err = preview(&out, &behind, &guard).expect_err("symlinked namespace directory");
        assert!(matches!(err, PublishError::InTheWay { .. }), "{err}");
        let err = publish(&out, &behind).expect_err("symlinked namespace directory");
        assert!(matches!(err, PublishError::InTheWay { .. }), "{err}");
        assert!(fs::read_dir(&elsewhere).expect("read_dir").next().is_none());
        fs::remove_file(out.join("member1/shop")).expect("unlink");

        std::os::unix::fs::symlink(elsewhere.join("x.yaml"), out.join("member1/default/apps_deployment_api.yaml"))
            .expect("symlink");
        let planned = plan(vec![("member1", cluster(&[("default/apps_deployment_api.yaml", "kind: D\n")], &[]))], None);
        let kept = plan(vec![("member1", cluster(&[], &["default/apps_deployment_api.yaml"]))], None);
        for p in [&planned, &kept] {
            let err = preview(&out, p, &guard).expect_err("symlink where a file goes");
            assert!(matches!(err, PublishError::InTheWay { .. }), "{err}");
        }
        fs::remove_file(out.join("member1/default/apps_deployment_api.yaml")).expect("unlink");
        fs::create_dir_all(out.join("member1/default/apps_deployment_api.yaml")).expect("mkdir");
        let err = preview(&out, &planned, &guard).expect_err("directory where a file goes");
        assert!(matches!(err, PublishError::InTheWay { .. }), "{err}");
    }

    #[test]
    fn symlinked_cluster_dir_is_refused() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path().join("out");
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir_all(&out).expect("mkdir");
        fs::create_dir_all(&elsewhere).expect("mkdir");
        std::os::unix::fs::symlink(&elsewhere, out.join("member1")).expect("symlink");
        let err = publish(&out, &sample_plan()).expect_err("symlink");
        assert!(matches!(err, PublishError::InTheWay { .. }), "{err}");
        assert!(fs::read_dir(&elsewhere).expect("read_dir").next().is_none());
    }
}
