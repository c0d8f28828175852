//! Watches the policy directory and reports what changed.
//!
//! Each relevant event wakes the daemon loop, which waits for a quiet period (the debounce)
//! before reconciling. What the events named is kept until the pass takes it
//! ([`PolicyWatch::take_changes`]): nothing (a pass on a timer or a poll round does not walk
//! the directory again), the paths of the files that changed (the pass reads those, without
//! a walk, when they are all files the last walk read: an edit, a `git pull` of edits), or
//! "walk" (an event without paths — the kernel's queue overflowed —, a watch error, more than
//! [`PATHS_KEPT`] paths, and before the first pass). Reads (access events, such as the
//! reconcile's own reads of the policy files) are not changes. Changes under
//! hidden directories (`.git`), editor leftovers, and the daemon's own output and state
//! directories are ignored, so a `git checkout` of hundreds of files is one reconcile and the
//! daemon never triggers itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::reconcile::Changed;

/// Changed paths kept between passes; beyond, the next pass walks (a checkout of many files:
/// a walk costs no more than reading them one by one).
pub const PATHS_KEPT: usize = 256;

/// A running watch; dropping it stops watching.
pub struct PolicyWatch {
    _watcher: RecommendedWatcher,
    /// The directory as watched (the events' paths start with it).
    root: PathBuf,
    /// What the watch saw since the last [`PolicyWatch::take_changes`].
    seen: Arc<Mutex<Seen>>,
}

/// What a watch saw: the relevant paths that changed, or that a walk is needed.
#[derive(Debug, Default)]
struct Seen {
    walk: bool,
    paths: BTreeSet<PathBuf>,
}

impl Seen {
    fn note(&mut self, paths: &[PathBuf]) {
        if paths.is_empty() {
            self.walk = true;
        }
        if !self.walk {
            self.paths.extend(paths.iter().cloned());
            self.walk = self.paths.len() > PATHS_KEPT;
        }
        if self.walk {
            self.paths.clear();
        }
    }
}

impl PolicyWatch {
    /// What the watch saw since the last call (and forgets it): taken before the directory is
    /// read, so a change made during the read is seen by the next pass. Paths relative to the
    /// watched directory; one that is not below it asks for a walk.
    pub fn take_changes(&self) -> Changed {
        let seen = match self.seen.lock() {
            Ok(mut seen) => std::mem::take(&mut *seen),
            Err(_) => return Changed::Unknown,
        };
        if seen.walk {
            return Changed::Unknown;
        }
        if seen.paths.is_empty() {
            return Changed::Nothing;
        }
        let relative: Option<Vec<PathBuf>> =
            seen.paths.iter().map(|p| p.strip_prefix(&self.root).ok().map(Path::to_path_buf)).collect();
        relative.map_or(Changed::Unknown, Changed::Files)
    }
}

/// Whether a changed path should trigger a reconcile.
pub fn is_relevant(root: &Path, path: &Path, ignored: &[PathBuf]) -> bool {
    if ignored.iter().any(|i| path.starts_with(i)) {
        return false;
    }
    let rel = path.strip_prefix(root).unwrap_or(path);
    // The repository's own ignore file is read by the walk: a change to it is a change.
    if rel == Path::new(crate::policy::load::IGNORE_FILE) {
        return true;
    }
    for comp in rel.components() {
        let s = comp.as_os_str().to_string_lossy();
        if s.starts_with('.') {
            return false;
        }
    }
    let name = rel.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name.ends_with('~') || name.ends_with(".swp") || name.ends_with(".swx") || name.starts_with(".#") {
        return false;
    }
    true
}

/// Starts watching `root` recursively. Each relevant change sends `()` on `tx` (a full
/// channel already holds a pending signal, so a failed send is fine).
pub fn watch(root: &Path, ignored: Vec<PathBuf>, tx: mpsc::Sender<()>) -> Result<PolicyWatch, notify::Error> {
    let root_owned = root.to_path_buf();
    // Unknown before the first read.
    let seen = Arc::new(Mutex::new(Seen { walk: true, paths: BTreeSet::new() }));
    let noted = Arc::clone(&seen);
    let note = move |paths: &[PathBuf]| match noted.lock() {
        Ok(mut seen) => seen.note(paths),
        Err(poisoned) => poisoned.into_inner().walk = true,
    };
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<Event>| match res {
        Ok(event) => {
            if matches!(event.kind, EventKind::Access(_)) {
                return;
            }
            // A queue overflow (Rescan) has no paths: a walk, to be safe.
            let relevant: Vec<PathBuf> =
                event.paths.iter().filter(|p| is_relevant(&root_owned, p, &ignored)).cloned().collect();
            if event.paths.is_empty() || !relevant.is_empty() {
                note(&relevant);
                let _ = tx.try_send(());
            }
        }
        Err(error) => {
            tracing::warn!(%error, "policy directory watch error; reconciling to be safe");
            note(&[]);
            let _ = tx.try_send(());
        }
    })?;
    watcher.watch(root, RecursiveMode::Recursive)?;
    Ok(PolicyWatch { _watcher: watcher, root: root.to_path_buf(), seen })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignores_git_editor_files_and_own_dirs() {
        let root = Path::new("/repo");
        let ignored = vec![PathBuf::from("/repo/out")];
        assert!(is_relevant(root, Path::new("/repo/apps/web.yaml"), &ignored));
        assert!(!is_relevant(root, Path::new("/repo/.git/index.lock"), &ignored));
        assert!(!is_relevant(root, Path::new("/repo/apps/.web.yaml.swp"), &ignored));
        assert!(!is_relevant(root, Path::new("/repo/apps/web.yaml~"), &ignored));
        assert!(!is_relevant(root, Path::new("/repo/out/member1/x.yaml"), &ignored));
        // The ignore file at the root is read by the walk; one deeper is not.
        assert!(is_relevant(root, Path::new("/repo/.fedschedignore"), &ignored));
        assert!(!is_relevant(root, Path::new("/repo/apps/.fedschedignore"), &ignored));
    }

    /// What the daemon takes before a pass: unknown before the first, then nothing until a
    /// change; a write names its file, relative to the directory; reads (a pass's own) are not
    /// changes; taking it forgets it.
    #[test]
    fn the_changes_follow_the_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("apps")).expect("mkdir");
        std::fs::write(dir.path().join("apps/a.yaml"), "x: 1\n").expect("write");
        let (tx, mut rx) = mpsc::channel(1);
        let w = watch(dir.path(), Vec::new(), tx).expect("watch");
        assert_eq!(w.take_changes(), Changed::Unknown, "unknown before the first read");
        assert_eq!(w.take_changes(), Changed::Nothing, "forgotten once taken");
        let _ = std::fs::read(dir.path().join("apps/a.yaml")).expect("read");
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(w.take_changes(), Changed::Nothing, "a read is no change");
        std::fs::write(dir.path().join("apps/a.yaml"), "x: 2\n").expect("write");
        let waited = std::time::Instant::now();
        while rx.try_recv().is_err() && waited.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(w.take_changes(), Changed::Files(vec![PathBuf::from("apps/a.yaml")]), "a write names its file");
        assert_eq!(w.take_changes(), Changed::Nothing);
    }

    /// An event without paths (the kernel's queue overflowed) and more paths than are kept ask
    /// for a walk, and a walk stays asked for until taken.
    #[test]
    fn an_overflow_or_many_paths_ask_for_a_walk() {
        let mut seen = Seen::default();
        seen.note(&[PathBuf::from("/repo/a.yaml")]);
        assert!(!seen.walk && seen.paths.len() == 1);
        seen.note(&[]);
        assert!(seen.walk && seen.paths.is_empty());
        seen.note(&[PathBuf::from("/repo/b.yaml")]);
        assert!(seen.walk && seen.paths.is_empty(), "still a walk");
        let mut seen = Seen::default();
        for i in 0..=PATHS_KEPT {
            seen.note(&[PathBuf::from(format!("/repo/f{i}.yaml"))]);
        }
        assert!(seen.walk && seen.paths.is_empty());
    }
}
