//! The diff of a plan against the output directory (read-only): files to write, generated
//! files to delete, files already right, and clusters the guard holds.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Read;
use std::path::Path;

use super::disk::{Kind, kind_of};
use super::error::io_err;
use super::names::object_path_problem;
use super::{
    ClusterFiles, DeleteGuard, HeldCluster, KUSTOMIZATION_FILE, PublishError, PublishPlan, STATE_DIR, SUMMARY_FILE,
};
use crate::render::output::{GENERATED_HEADER, has_header, kustomization};

/// Whether the file at `path` begins with the generated header (reads only its first line).
fn file_has_header(path: &Path) -> Result<bool, PublishError> {
    let mut buf = Vec::with_capacity(GENERATED_HEADER.len() + 1);
    File::open(path)
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

/// The changes one publish makes, with paths relative to the output root (`/`-separated).
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// New or changed files and their bytes, sorted by path.
    pub(super) writes: BTreeMap<String, Vec<u8>>,
    /// Generated files to delete, sorted.
    pub(super) deletions: BTreeSet<String>,
    /// Desired files already on disk with the right bytes.
    pub(super) unchanged: usize,
    /// Clusters left untouched by the mass-deletion guard.
    pub(super) held: Vec<HeldCluster>,
}

/// Compares the plan with the disk (read-only). Clusters the guard holds contribute nothing.
pub(super) fn compute_changes(out: &Path, plan: &PublishPlan, guard: &DeleteGuard) -> Result<Changes, PublishError> {
    let mut changes = Changes::default();
    for (cluster, files) in &plan.clusters {
        let mut mine = Changes::default();
        let objects = cluster_changes(out, cluster, files, &mut mine)?;
        if guard.holds(objects, mine.deletions.len()) {
            let held = HeldCluster { cluster: cluster.clone(), objects, removals: mine.deletions.len() };
            tracing::warn!(cluster = %cluster, objects, removals = held.removals, "mass-deletion guard: cluster held");
            changes.held.push(held);
            continue;
        }
        changes.writes.append(&mut mine.writes);
        changes.deletions.append(&mut mine.deletions);
        changes.unchanged += mine.unchanged;
    }
    if let Some(summary) = &plan.summary {
        let rel = format!("{STATE_DIR}/{SUMMARY_FILE}");
        let full = out.join(&rel);
        let same = match kind_of(&full)? {
            Kind::File => fs::read(&full).map_err(io_err("read", &full))? == summary.as_bytes(),
            _ => false,
        };
        if same {
            changes.unchanged += 1;
        } else {
            changes.writes.insert(rel, summary.as_bytes().to_vec());
        }
    }
    Ok(changes)
}

/// The changes of one cluster directory; returns how many generated object files it holds.
fn cluster_changes(
    out: &Path,
    cluster: &str,
    files: &ClusterFiles,
    changes: &mut Changes,
) -> Result<usize, PublishError> {
    let mut objects = 0;
    let cluster_dir = out.join(cluster);
    let mut resources: BTreeSet<&str> = files.files.keys().map(String::as_str).collect();
    for kept in &files.keep {
        if !files.files.contains_key(kept) && check_target(out, &format!("{cluster}/{kept}"))? {
            resources.insert(kept);
        }
    }
    let mut desired: Vec<(&str, Vec<u8>)> =
        files.files.iter().map(|(path, content)| (path.as_str(), content.as_bytes().to_vec())).collect();
    desired.push((KUSTOMIZATION_FILE, kustomization(&resources).into_bytes()));
    // Planned files found on disk, and whether they carry the header (read once, here).
    let mut on_disk: std::collections::HashMap<&str, bool> = std::collections::HashMap::new();
    for (path, bytes) in desired {
        let rel = format!("{cluster}/{path}");
        if check_target(out, &rel)? {
            let full = out.join(&rel);
            let existing = fs::read(&full).map_err(io_err("read", &full))?;
            on_disk.insert(path, has_header(&existing));
            if existing == bytes {
                changes.unchanged += 1;
                continue;
            }
        }
        changes.writes.insert(rel, bytes);
    }
    if kind_of(&cluster_dir)? == Kind::Dir {
        let mut found = Vec::new();
        list_yaml_files(&cluster_dir, "", &mut found)?;
        for path in found {
            if path == KUSTOMIZATION_FILE || object_path_problem(&path).is_some() {
                continue;
            }
            let generated = match on_disk.get(path.as_str()) {
                Some(header) => *header,
                None => file_has_header(&cluster_dir.join(&path))?,
            };
            if !generated {
                continue;
            }
            objects += 1;
            if !files.files.contains_key(&path) && !files.keep.contains(&path) {
                changes.deletions.insert(format!("{cluster}/{path}"));
            }
        }
    }
    Ok(objects)
}

/// Collects the `/`-joined relative paths of regular `*.yaml` files below `dir`, recursively,
/// without following symlinks.
fn list_yaml_files(dir: &Path, prefix: &str, found: &mut Vec<String>) -> Result<(), PublishError> {
    let entries = fs::read_dir(dir).map_err(io_err("list", dir))?;
    for entry in entries {
        let entry = entry.map_err(io_err("list", dir))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue; // not UTF-8: never a name fedsched writes
        };
        let file_type = entry.file_type().map_err(io_err("inspect", &entry.path()))?;
        let rel = format!("{prefix}{name}");
        if file_type.is_dir() {
            list_yaml_files(&entry.path(), &format!("{rel}/"), found)?;
        } else if file_type.is_file() && name.ends_with(".yaml") {
            found.push(rel);
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
