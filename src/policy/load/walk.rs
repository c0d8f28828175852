//! The directory walk: which files of the policy directory are read, in what order, and the
//! stat that lets [`super::ParseCache`] skip unchanged files.
//!
//! Rules, in order, for every entry (names sorted by bytes):
//! - hidden entries (`.git`, `..data`) and editor leftovers (`*~`, `*.swp`) are skipped;
//! - entries matching an ignore glob ([`WalkOptions::ignore`], `[policy] ignore`, and the lines
//!   of a `.fedschedignore` file at the repository's root) are skipped;
//! - known non-Kubernetes YAML is skipped with a note: a directory with a `Chart.yaml` (a Helm
//!   chart: templates are not manifests), a `Chart.yaml` at the root, `kustomization.yaml` /
//!   `kustomization.yml`, and Helm values files (`values.yaml`, `values-*.yaml`, `values.*.yaml`);
//! - symbolic links are followed only when they resolve inside the repository
//!   ([`Symlinks::Inside`], the default) or not at all ([`Symlinks::Never`]); a link not
//!   followed is a note, as is a link to a directory already walked (a loop or an alias).
//!
//! Notes are [`LoadError`]s that do not make the repository invalid: `check` prints them.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::LoadError;

/// Which symbolic links the walk follows (`[policy] follow_symlinks`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Symlinks {
    /// Links whose target is inside the repository (the default).
    #[default]
    Inside,
    /// No link at all.
    Never,
}

/// How the repository is walked (`[policy]` of the configuration).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkOptions {
    pub symlinks: Symlinks,
    /// Globs of paths relative to the repository (`/`-separated) that are not read: `*` and
    /// `?` within a segment, `**` across segments; a glob without `/` matches a name at any
    /// depth. A matching directory is not entered.
    pub ignore: Vec<String>,
}

/// The file at the repository's root with more ignore globs, one a line (`#` comments).
pub const IGNORE_FILE: &str = ".fedschedignore";

/// What a walk found.
#[derive(Debug, Default)]
pub(super) struct Walk {
    /// Every YAML file: relative path and stat.
    pub(super) files: Vec<(PathBuf, Option<FileStat>)>,
    pub(super) errors: Vec<LoadError>,
    /// What was skipped and why (not errors).
    pub(super) notes: Vec<LoadError>,
    /// Whether the repository was reached through a symbolic link: a link followed inside it
    /// (a ConfigMap volume's `..data`), or one on its own path (git-sync's worktree link).
    /// Swapping such a link changes what the walk reads without an event a watch of the
    /// directory would see.
    pub(super) links: bool,
}

pub(super) use crate::util::stat::FileStat;

/// The walk of `dir` with `options`.
pub(super) fn walk_dir(dir: &Path, options: &WalkOptions) -> Walk {
    let mut out = Walk::default();
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            out.errors.push(LoadError::file(dir, "policy directory is not a directory"));
            return out;
        }
        Err(e) => {
            out.errors.push(LoadError::io(dir, format!("cannot read policy directory: {e}")));
            return out;
        }
    }
    let root = match fs::canonicalize(dir) {
        Ok(r) => r,
        Err(e) => {
            out.errors.push(LoadError::io(dir, format!("cannot resolve policy directory: {e}")));
            return out;
        }
    };
    let mut ignore = options.ignore.clone();
    match fs::read_to_string(dir.join(IGNORE_FILE)) {
        Ok(text) => ignore
            .extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => out.errors.push(LoadError::io(IGNORE_FILE, format!("cannot read file: {e}"))),
    }
    // A path that is not its canonical form has a link on it (or `.`/`..`: counted alike).
    out.links = std::path::absolute(dir).map_or(true, |abs| abs != root);
    let mut walker = Walker { root, symlinks: options.symlinks, ignore, visited: HashSet::new(), out };
    walker.walk(dir, Path::new(""));
    walker.out
}

/// Reads one file as UTF-8.
pub(super) fn read_text(dir: &Path, rel: &Path) -> Result<String, LoadError> {
    match fs::read(dir.join(rel)) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| LoadError::file(rel, format!("file is not UTF-8: {e}"))),
        Err(e) => Err(LoadError::io(rel, format!("cannot read file: {e}"))),
    }
}

struct Walker {
    /// The repository's canonical path.
    root: PathBuf,
    symlinks: Symlinks,
    ignore: Vec<String>,
    /// Canonical paths of the directories entered.
    visited: HashSet<PathBuf>,
    out: Walk,
}

/// Why a file or directory of this name is not a Kubernetes manifest, if it is a known one.
fn known_non_manifest(name: &str) -> Option<&'static str> {
    match name {
        "Chart.yaml" => Some("Helm chart metadata, not a Kubernetes object"),
        "kustomization.yaml" | "kustomization.yml" => {
            Some("a kustomization, not a Kubernetes object (fedsched reads the manifests themselves)")
        }
        "values.yaml" | "values.yml" => Some("Helm values, not a Kubernetes object"),
        _ if (name.starts_with("values-") || name.starts_with("values.")) && is_yaml_name(name) => {
            Some("Helm values, not a Kubernetes object")
        }
        _ => None,
    }
}

impl Walker {
    fn note(&mut self, rel: &Path, message: impl Into<String>) {
        self.out.notes.push(LoadError::file(rel, message));
    }

    fn walk(&mut self, abs: &Path, rel: &Path) {
        match fs::canonicalize(abs) {
            Ok(canonical) => {
                if !self.visited.insert(canonical) {
                    self.note(
                        rel,
                        "not walked again: a symbolic link to a directory already walked (a loop or an alias)",
                    );
                    return;
                }
            }
            Err(e) => {
                self.out.errors.push(LoadError::io(rel, format!("cannot resolve directory: {e}")));
                return;
            }
        }
        let entries = match fs::read_dir(abs) {
            Ok(entries) => entries,
            Err(e) => {
                self.out.errors.push(LoadError::io(rel, format!("cannot read directory: {e}")));
                return;
            }
        };
        let mut names = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => names.push(entry.file_name()),
                Err(e) => self.out.errors.push(LoadError::io(rel, format!("cannot read directory: {e}"))),
            }
        }
        names.sort();
        if rel != Path::new("") && names.iter().any(|n| n == "Chart.yaml") {
            self.note(rel, "skipped: a Helm chart (Chart.yaml); its templates are not manifests");
            return;
        }
        for name in names {
            let Some(name_str) = name.to_str() else {
                self.out.errors.push(LoadError::file(rel.join(&name), "file name is not UTF-8"));
                continue;
            };
            if skipped_name(name_str) {
                continue;
            }
            let child_abs = abs.join(&name);
            let child_rel = rel.join(&name);
            let rel_str = child_rel.to_string_lossy().into_owned();
            if self.ignore.iter().any(|g| ignored(g, &rel_str)) {
                continue;
            }
            self.entry(name_str, &child_abs, child_rel);
        }
    }

    /// One entry of a directory: a file read, a directory walked, a link followed or not.
    fn entry(&mut self, name: &str, abs: &Path, rel: PathBuf) {
        let is_link = fs::symlink_metadata(abs).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && !self.link_allowed(abs, &rel) {
            return;
        }
        self.out.links |= is_link;
        // `metadata` follows symlinks.
        let meta = match fs::metadata(abs) {
            Ok(m) => m,
            Err(e) => {
                if is_yaml_name(name) {
                    self.out.errors.push(LoadError::io(rel, format!("cannot read file: {e}")));
                }
                return;
            }
        };
        if meta.is_dir() {
            self.walk(abs, &rel);
        } else if meta.is_file() && is_yaml_name(name) {
            match known_non_manifest(name) {
                Some(why) => self.note(&rel, format!("skipped: {why}")),
                None => self.out.files.push((rel, Some(FileStat::of(&meta)))),
            }
        }
    }

    /// Whether the link at `abs` may be followed; notes why not.
    fn link_allowed(&mut self, abs: &Path, rel: &Path) -> bool {
        match self.symlinks {
            Symlinks::Never => {
                self.note(rel, "not followed: a symbolic link ([policy] follow_symlinks = \"never\")");
                false
            }
            Symlinks::Inside => match fs::canonicalize(abs) {
                Ok(target) if target.starts_with(&self.root) => true,
                Ok(target) => {
                    let message =
                        format!("not followed: a symbolic link out of the policy repository (to {})", target.display());
                    self.note(rel, message);
                    false
                }
                // Dangling: reported (if YAML) when its metadata is read.
                Err(_) => true,
            },
        }
    }
}

fn skipped_name(name: &str) -> bool {
    name.starts_with('.') || name.ends_with('~') || name.ends_with(".swp")
}

fn is_yaml_name(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// Whether the glob `pattern` matches `path` (relative, `/`-separated): a pattern without `/`
/// matches the last segment; a leading `/` anchors at the root; a trailing `/` is dropped.
pub fn ignored(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim_end_matches('/');
    if pattern.is_empty() {
        return false;
    }
    if let Some(anchored) = pattern.strip_prefix('/') {
        return glob(anchored.as_bytes(), path.as_bytes());
    }
    if !pattern.contains('/') {
        let name = path.rsplit('/').next().unwrap_or(path);
        return glob(pattern.as_bytes(), name.as_bytes());
    }
    glob(pattern.as_bytes(), path.as_bytes())
}

/// `*` (any run without `/`), `?` (one character but `/`), `**` (any run, `/` included; `**/`
/// also matches nothing), other bytes literally.
fn glob(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) if rest.first() == Some(&b'*') => {
            let rest = &rest[1..];
            let after_slash = rest.strip_prefix(b"/").unwrap_or(rest);
            (0..=s.len()).any(|i| glob(rest, &s[i..]) || (rest.starts_with(b"/") && glob(after_slash, &s[i..])))
        }
        Some((b'*', rest)) => {
            let limit = s.iter().position(|&c| c == b'/').unwrap_or(s.len());
            (0..=limit).any(|i| glob(rest, &s[i..]))
        }
        Some((b'?', rest)) => s.first().is_some_and(|&c| c != b'/') && glob(rest, &s[1..]),
        Some((&c, rest)) => s.first() == Some(&c) && glob(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::load::load_dir;
    use std::fs;

    fn cm(n: &str) -> String {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\n")
    }

    #[test]
    fn walk_skips_hidden_and_survives_symlink_loops() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let root = dir.path();
        let _ = fs::create_dir_all(root.join("sub/deeper"));
        let _ = fs::create_dir_all(root.join(".git"));
        let _ = fs::write(root.join("sub/deeper/a.yaml"), cm("a"));
        let _ = fs::write(root.join("b.yml"), cm("b"));
        let _ = fs::write(root.join(".git/c.yaml"), cm("c"));
        let _ = fs::write(root.join("d.yaml~"), cm("d"));
        let _ = fs::write(root.join("e.txt"), cm("e"));
        let _ = std::os::unix::fs::symlink(root, root.join("sub/loop"));
        // ConfigMap-volume layout: `x.yaml -> ..data/x.yaml`, `..data -> ..2024_01`.
        let _ = fs::create_dir_all(root.join("cm/..2024_01"));
        let _ = fs::write(root.join("cm/..2024_01/x.yaml"), cm("x"));
        let _ = std::os::unix::fs::symlink("..2024_01", root.join("cm/..data"));
        let _ = std::os::unix::fs::symlink("..data/x.yaml", root.join("cm/x.yaml"));
        let (set, errors) = load_dir(root);
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<_> = set.templates.iter().map(|t| t.key.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "x"]);
        // The loop is a note, not an error.
        let notes: Vec<String> = set.notes.iter().map(|n| n.to_string()).collect();
        assert!(notes.iter().any(|n| n.starts_with("sub/loop: ") && n.contains("loop")), "{notes:?}");
        let (_, errors) = load_dir(&root.join("missing"));
        assert_eq!(errors.len(), 1);
    }

    /// A walk says whether it reached the repository through a link: none for a plain
    /// directory; a followed link inside (a ConfigMap volume); a link on the path (git-sync).
    #[test]
    fn a_walk_says_whether_it_went_through_a_link() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let plain = dir.path().join("plain");
        let _ = fs::create_dir_all(&plain);
        let _ = fs::write(plain.join("a.yaml"), cm("a"));
        let options = WalkOptions::default();
        assert!(!walk_dir(&plain, &options).links);
        let _ = std::os::unix::fs::symlink(&plain, dir.path().join("current"));
        assert!(walk_dir(&dir.path().join("current"), &options).links, "a link on the path");
        let volume = dir.path().join("volume");
        let _ = fs::create_dir_all(volume.join("..2024_01"));
        let _ = fs::write(volume.join("..2024_01/x.yaml"), cm("x"));
        let _ = std::os::unix::fs::symlink("..2024_01", volume.join("..data"));
        let _ = std::os::unix::fs::symlink("..data/x.yaml", volume.join("x.yaml"));
        assert!(walk_dir(&volume, &options).links, "a link followed inside");
    }

    #[test]
    fn links_out_of_the_repository_are_not_followed() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let (repo, outside) = (dir.path().join("repo"), dir.path().join("outside"));
        let _ = fs::create_dir_all(repo.join("apps"));
        let _ = fs::create_dir_all(outside.join("secrets"));
        let _ = fs::write(repo.join("apps/a.yaml"), cm("a"));
        let _ = fs::write(outside.join("secret.yaml"), cm("stolen"));
        let _ = fs::write(outside.join("secrets/s.yaml"), cm("stolen-too"));
        let link = |target: &Path, at: &str| {
            let _ = std::os::unix::fs::symlink(target, repo.join(at));
        };
        link(&outside.join("secret.yaml"), "apps/secret.yaml");
        link(&outside.join("secrets"), "secrets");
        link(Path::new("/"), "root");
        link(&repo.join("apps/a.yaml"), "inside.yaml");
        let walk = walk_dir(&repo, &WalkOptions::default());
        assert!(walk.errors.is_empty(), "{:?}", walk.errors);
        let files: Vec<String> = walk.files.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(files, ["apps/a.yaml", "inside.yaml"]);
        let notes: Vec<String> = walk.notes.iter().map(|n| n.to_string()).collect();
        for at in ["apps/secret.yaml", "root", "secrets"] {
            assert!(notes.iter().any(|n| n.starts_with(&format!("{at}: not followed"))), "{at}: {notes:?}");
        }
        // No link at all with `never`.
        let never = WalkOptions { symlinks: Symlinks::Never, ..Default::default() };
        let walk = walk_dir(&repo, &never);
        let files: Vec<String> = walk.files.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(files, ["apps/a.yaml"]);
        assert_eq!(walk.notes.len(), 4, "{:?}", walk.notes);
    }

    #[test]
    fn known_non_kubernetes_yaml_and_ignore_globs_are_skipped() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let root = dir.path();
        for d in ["chart/templates", "overlays/prod", "ci", "apps"] {
            let _ = fs::create_dir_all(root.join(d));
        }
        let _ = fs::write(root.join("chart/Chart.yaml"), "apiVersion: v2\nname: c\n");
        let _ = fs::write(root.join("chart/templates/d.yaml"), "{{ .Values.x }}: [\n");
        let _ = fs::write(root.join("overlays/prod/kustomization.yaml"), "resources: [../../apps]\n");
        let _ = fs::write(root.join("values.yaml"), "replicas: 3\n");
        let _ = fs::write(root.join("values-prod.yaml"), "replicas: 3\n");
        let _ = fs::write(root.join("ci/pipeline.yaml"), "stages: [build]\n");
        let _ = fs::write(root.join("apps/notes.yml"), "todo: []\n");
        let _ = fs::write(root.join("apps/a.yaml"), cm("a"));
        let _ = fs::write(root.join(IGNORE_FILE), "# CI files\nci/\n");
        let opts = WalkOptions { ignore: vec!["notes.yml".into()], ..Default::default() };
        let walk = walk_dir(root, &opts);
        assert!(walk.errors.is_empty(), "{:?}", walk.errors);
        let files: Vec<String> = walk.files.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(files, ["apps/a.yaml"]);
        let notes: Vec<String> = walk.notes.iter().map(|n| n.to_string()).collect();
        for at in ["chart: skipped: a Helm chart", "overlays/prod/kustomization.yaml: skipped", "values.yaml: skipped"]
        {
            assert!(notes.iter().any(|n| n.starts_with(at)), "{at}: {notes:?}");
        }
        assert!(notes.iter().any(|n| n.starts_with("values-prod.yaml: skipped")), "{notes:?}");
        // Without the globs, the CI file is read (and is not a Kubernetes object).
        let _ = fs::remove_file(root.join(IGNORE_FILE));
        let walk = walk_dir(root, &opts);
        assert!(walk.files.iter().any(|(p, _)| p == Path::new("ci/pipeline.yaml")));
    }

    #[test]
    fn globs() {
        for (p, s) in [
            ("*.yml", "a/b/c.yml"),
            ("ci/", "ci"),
            ("/ci", "ci"),
            ("charts/**", "charts/x/y.yaml"),
            ("**/tmp", "a/b/tmp"),
            ("**/tmp", "tmp"),
            ("a/*/c.yaml", "a/b/c.yaml"),
            ("values-?.yaml", "values-1.yaml"),
        ] {
            assert!(ignored(p, s), "{p} {s}");
        }
        for (p, s) in [("/ci", "x/ci"), ("a/*.yaml", "a/b/c.yaml"), ("*.yml", "a.yaml"), ("", "a"), ("?", "")] {
            assert!(!ignored(p, s), "{p} {s}");
        }
    }
}
