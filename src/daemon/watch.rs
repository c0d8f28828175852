//! Watches the policy directory and reports "something changed" after a quiet period.
//!
//! Events are a dirty flag only: the reconcile re-reads the whole directory. Changes under
//! hidden directories (`.git`), editor leftovers, and the daemon's own output and state
//! directories are ignored, so a `git checkout` of hundreds of files is one reconcile and the
//! daemon never triggers itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use tokio::sync::mpsc;

/// A running watch; dropping it stops watching.
pub struct PolicyWatch {
    _debouncer: Debouncer<notify::RecommendedWatcher>,
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

/// Starts watching `root` recursively. Each debounced batch of relevant changes sends one
/// `()` on `tx` (a full channel already holds a pending signal, so a failed send is fine).
pub fn watch(
    root: &Path,
    debounce: Duration,
    ignored: Vec<PathBuf>,
    tx: mpsc::Sender<()>,
) -> Result<PolicyWatch, notify::Error> {
    let root_owned = root.to_path_buf();
    let mut debouncer = new_debouncer(debounce, move |res: DebounceEventResult| match res {
        Ok(events) => {
            if events.iter().any(|e| is_relevant(&root_owned, &e.path, &ignored)) {
                let _ = tx.try_send(());
            }
        }
        Err(error) => {
            tracing::warn!(%error, "policy directory watch error; reconciling to be safe");
            let _ = tx.try_send(());
        }
    })?;
    debouncer.watcher().watch(root, RecursiveMode::Recursive)?;
    Ok(PolicyWatch { _debouncer: debouncer })
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
