//! The directory walk: which files of the policy directory are read, in what order, and the
//! stat that lets [`super::ParseCache`] skip unchanged files.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::LoadError;

/// A file's stat, what identifies its bytes without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileStat {
    pub(super) len: u64,
    pub(super) mtime_ns: i128,
    pub(super) ino: u64,
}

impl FileStat {
    fn of(m: &fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileStat {
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ino: m.ino(),
        }
    }
}

/// The walk of `dir`: every YAML file (relative path and stat) and the walk errors.
pub(super) fn walk_dir(dir: &Path) -> (Vec<(PathBuf, Option<FileStat>)>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {
            let mut visited = HashSet::new();
            walk(dir, Path::new(""), &mut visited, &mut files, &mut errors);
        }
        Ok(_) => errors.push(LoadError::file(dir, "policy directory is not a directory")),
        Err(e) => errors.push(LoadError::file(dir, format!("cannot read policy directory: {e}"))),
    }
    (files, errors)
}

/// Reads one file as UTF-8.
pub(super) fn read_text(dir: &Path, rel: &Path) -> Result<String, LoadError> {
    match fs::read(dir.join(rel)) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| LoadError::file(rel, format!("file is not UTF-8: {e}"))),
        Err(e) => Err(LoadError::file(rel, format!("cannot read file: {e}"))),
    }
}

fn walk(
    abs: &Path,
    rel: &Path,
    visited: &mut HashSet<PathBuf>,
    files: &mut Vec<(PathBuf, Option<FileStat>)>,
    errors: &mut Vec<LoadError>,
) {
    match fs::canonicalize(abs) {
        Ok(canonical) => {
            if !visited.insert(canonical) {
                return; // already walked (symlink loop or alias)
            }
        }
        Err(e) => {
            errors.push(LoadError::file(rel, format!("cannot resolve directory: {e}")));
            return;
        }
    }
    let entries = match fs::read_dir(abs) {
        Ok(entries) => entries,
        Err(e) => {
            errors.push(LoadError::file(rel, format!("cannot read directory: {e}")));
            return;
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => names.push(entry.file_name()),
            Err(e) => errors.push(LoadError::file(rel, format!("cannot read directory: {e}"))),
        }
    }
    names.sort();
    for name in names {
        let Some(name_str) = name.to_str() else {
            errors.push(LoadError::file(rel.join(&name), "file name is not UTF-8"));
            continue;
        };
        if skipped_name(name_str) {
            continue;
        }
        let child_abs = abs.join(&name);
        let child_rel = rel.join(&name);
        // `metadata` follows symlinks.
        let meta = match fs::metadata(&child_abs) {
            Ok(m) => m,
            Err(e) => {
                if is_yaml_name(name_str) {
                    errors.push(LoadError::file(child_rel, format!("cannot read file: {e}")));
                }
                continue;
            }
        };
        if meta.is_dir() {
            walk(&child_abs, &child_rel, visited, files, errors);
        } else if meta.is_file() && is_yaml_name(name_str) {
            files.push((child_rel, Some(FileStat::of(&meta))));
        }
    }
}

fn skipped_name(name: &str) -> bool {
    name.starts_with('.') || name.ends_with('~') || name.ends_with(".swp")
}

fn is_yaml_name(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

#[cfg(test)]
mod tests {
    use crate::policy::load::load_dir;
    use std::fs;

    #[test]
    fn walk_skips_hidden_and_survives_symlink_loops() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let root = dir.path();
        let cm = |n: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\n");
        let _ = fs::create_dir_all(root.join("sub/deeper"));
        let _ = fs::create_dir_all(root.join(".git"));
        let _ = fs::write(root.join("sub/deeper/a.yaml"), cm("a"));
        let _ = fs::write(root.join("b.yml"), cm("b"));
        let _ = fs::write(root.join(".git/c.yaml"), cm("c"));
        let _ = fs::write(root.join("d.yaml~"), cm("d"));
        let _ = fs::write(root.join("e.txt"), cm("e"));
        #[cfg(unix)]
        {
            let _ = std::os::unix::fs::symlink(root, root.join("sub/loop"));
            // ConfigMap-volume layout: `x.yaml -> ..data/x.yaml`, `..data -> ..2024_01`.
            let _ = fs::create_dir_all(root.join("cm/..2024_01"));
            let _ = fs::write(root.join("cm/..2024_01/x.yaml"), cm("x"));
            let _ = std::os::unix::fs::symlink("..2024_01", root.join("cm/..data"));
            let _ = std::os::unix::fs::symlink("..data/x.yaml", root.join("cm/x.yaml"));
        }
        let (set, errors) = load_dir(root);
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<_> = set.templates.iter().map(|t| t.key.name.as_str()).collect();
        let want: &[&str] = if cfg!(unix) { &["a", "b", "x"] } else { &["a", "b"] };
        assert_eq!(names, want);
        let (_, errors) = load_dir(&root.join("missing"));
        assert_eq!(errors.len(), 1);
    }
}
