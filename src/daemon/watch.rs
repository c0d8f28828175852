//! Watches the policy directory and reports "something changed".
//!
//! Events are a dirty flag only: the reconcile re-reads the whole directory; the daemon loop
//! waits for a quiet period (the debounce) before reconciling. The flag is also kept
//! ([`PolicyWatch::take_changed`]): a pass on a timer or a poll round does not walk the
//! directory again while the watch saw nothing. Reads (access events, such as
//! the reconcile's own reads of the policy files) are not changes. Changes under
//! hidden directories (`.git`), editor leftovers, and the daemon's own output and state
//! directories are ignored, so a `git checkout` of hundreds of files is one reconcile and the
//! daemon never triggers itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// A running watch; dropping it stops watching.
pub struct PolicyWatch {
    _watcher: RecommendedWatcher,
    /// Set by every relevant change and every watch error since the last
    /// [`PolicyWatch::take_changed`].
    changed: Arc<AtomicBool>,
}

impl PolicyWatch {
    /// Whether the watch saw a change (or an error) since the last call; clears the flag. Taken
    /// before the directory is read, so a change made during the read sets it again.
    pub fn take_changed(&self) -> bool {
        self.changed.swap(false, Ordering::SeqCst)
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
    let changed = Arc::new(AtomicBool::new(true));
    let flag = Arc::clone(&changed);
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<Event>| match res {
        Ok(event) => {
            let change = !matches!(event.kind, EventKind::Access(_));
            // A queue overflow (Rescan) has no paths: reconcile to be safe.
            if change && (event.paths.is_empty() || event.paths.iter().any(|p| is_relevant(&root_owned, p, &ignored))) {
                flag.store(true, Ordering::SeqCst);
                let _ = tx.try_send(());
            }
        }
        Err(error) => {
            tracing::warn!(%error, "policy directory watch error; reconciling to be safe");
            flag.store(true, Ordering::SeqCst);
            let _ = tx.try_send(());
        }
    })?;
    watcher.watch(root, RecursiveMode::Recursive)?;
    Ok(PolicyWatch { _watcher: watcher, changed })
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

    /// The flag the daemon reads before a pass: set by a change made after the watch started,
    /// cleared by reading it, set again by the next change; reads (a pass's own) leave it.
    #[test]
    fn the_changed_flag_follows_the_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.yaml"), "x: 1\n").expect("write");
        let (tx, mut rx) = mpsc::channel(1);
        let w = watch(dir.path(), Vec::new(), tx).expect("watch");
        assert!(w.take_changed(), "unknown before the first read: taken as changed");
        assert!(!w.take_changed(), "cleared by reading it");
        let _ = std::fs::read(dir.path().join("a.yaml")).expect("read");
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!w.take_changed(), "a read is no change");
        std::fs::write(dir.path().join("a.yaml"), "x: 2\n").expect("write");
        let waited = std::time::Instant::now();
        while rx.try_recv().is_err() && waited.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(w.take_changed(), "a write is a change");
        assert!(!w.take_changed());
    }
}
