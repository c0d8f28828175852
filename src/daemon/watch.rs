//! Watches the policy directory and reports "something changed".
//!
//! Events are a dirty flag only: the reconcile re-reads the whole directory; the daemon loop
//! waits for a quiet period (the debounce) before reconciling. Reads (access events, such as
//! the reconcile's own reads of the policy files) are not changes. Changes under
//! hidden directories (`.git`), editor leftovers, and the daemon's own output and state
//! directories are ignored, so a `git checkout` of hundreds of files is one reconcile and the
//! daemon never triggers itself.

use std::path::{Path, PathBuf};

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// A running watch; dropping it stops watching.
pub struct PolicyWatch {
    _watcher: RecommendedWatcher,
}

/// Whether a changed path should trigger a reconcile.
pub fn is_relevant(root: &Path, path: &Path, ignored: &[PathBuf]) -> bool {
    if ignored.iter().any(|i| path.starts_with(i)) {
        return false;
    }
    let rel = path.strip_prefix(root).unwrap_or(path);
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
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<Event>| match res {
        Ok(event) => {
            let change = !matches!(event.kind, EventKind::Access(_));
            // A queue overflow (Rescan) has no paths: reconcile to be safe.
            if change && (event.paths.is_empty() || event.paths.iter().any(|p| is_relevant(&root_owned, p, &ignored))) {
                let _ = tx.try_send(());
            }
        }
        Err(error) => {
            tracing::warn!(%error, "policy directory watch error; reconciling to be safe");
            let _ = tx.try_send(());
        }
    })?;
    watcher.watch(root, RecursiveMode::Recursive)?;
    Ok(PolicyWatch { _watcher: watcher })
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
    }
}
