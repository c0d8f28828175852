//! A private copy of a store, for commands that must read a store another process may hold
//! and must never change it (`fedsched plan`): the sled directory is copied file by file into
//! a directory of the caller's and opened there. sled is crash-consistent, so a copy taken
//! while the daemon writes opens as the store would after a crash at that moment (the last
//! flushed state); a copy caught between two writes of the same file fails to open and is
//! taken again.

use std::path::Path;

use super::{DB_DIR, Store, StoreError};

/// How many times a copy is taken before its opening error is returned.
const ATTEMPTS: usize = 3;

impl Store {
    /// Opens a copy of the store of `state_dir`, made under `into` (which must be empty or
    /// missing; it holds the copy and its lock). Never writes to `state_dir` and takes no lock
    /// there. A `state_dir` without a store gives an empty store.
    pub fn open_copy(state_dir: &Path, into: &Path) -> Result<Store, StoreError> {
        let source = state_dir.join(DB_DIR);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let target = into.join(DB_DIR);
            if target.exists() {
                std::fs::remove_dir_all(&target).map_err(|source| StoreError::Io { path: target.clone(), source })?;
            }
            if source.is_dir() {
                copy_dir(&source, &target)?;
            }
            match Store::open(into) {
                Ok(store) => return Ok(store),
                Err(e @ (StoreError::Corrupt { .. } | StoreError::Unversioned { .. } | StoreError::Sled { .. }))
                    if attempt < ATTEMPTS =>
                {
                    tracing::debug!(error = %e, attempt, "the copy of the store does not open; copying again");
                }
                // The user's store is what is damaged, not the private copy: name it.
                Err(e) => return Err(e.relocated(into, state_dir)),
            }
        }
    }

    /// Whether `state_dir` holds a store (sled's `conf`, written when it is created).
    pub fn exists(state_dir: &Path) -> bool {
        state_dir.join(DB_DIR).join("conf").is_file()
    }

    /// For a command that only reads: a copy of the store of `state_dir` in a temporary
    /// directory of its own ([`Store::open_copy`]), so that nothing under `state_dir` is
    /// written — opening sled in place recovers, snapshots and flushes its files. A
    /// `state_dir` without a store is [`StoreError::Missing`].
    pub fn open_read_only(state_dir: &Path) -> Result<StoreCopy, StoreError> {
        if !Store::exists(state_dir) {
            return Err(StoreError::Missing { path: state_dir.to_path_buf() });
        }
        let dir = tempfile::tempdir().map_err(|source| StoreError::Io { path: std::env::temp_dir(), source })?;
        let store = Store::open_copy(state_dir, dir.path())?;
        Ok(StoreCopy { store, _dir: dir })
    }
}

impl StoreCopy {
    /// An empty store in a temporary directory of its own: for a command that only reads and
    /// can answer without anything recorded (`explain` before the first render), when the
    /// state directory has no store. Nothing is created under the state directory.
    pub fn empty() -> Result<StoreCopy, StoreError> {
        let dir = tempfile::tempdir().map_err(|source| StoreError::Io { path: std::env::temp_dir(), source })?;
        let store = Store::open(dir.path())?;
        Ok(StoreCopy { store, _dir: dir })
    }
}

/// A private copy of a store ([`Store::open_read_only`]), removed when dropped (the store
/// first: fields drop in order).
pub struct StoreCopy {
    store: Store,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for StoreCopy {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.store
    }
}

impl StoreError {
    /// The same error with the paths under `from` (a private copy) named under `to` (the
    /// store it copies).
    fn relocated(self, from: &Path, to: &Path) -> StoreError {
        let moved = |p: std::path::PathBuf| match p.strip_prefix(from) {
            Ok(rest) => to.join(rest),
            Err(_) => p,
        };
        match self {
            StoreError::Corrupt { path, detail } => StoreError::Corrupt { path: moved(path), detail },
            StoreError::Unversioned { path, detail } => StoreError::Unversioned { path: moved(path), detail },
            StoreError::Sled { path, source } => StoreError::Sled { path: moved(path), source },
            StoreError::NewerStore { path, found, supported } => {
                StoreError::NewerStore { path: moved(path), found, supported }
            }
            StoreError::Io { path, source } => StoreError::Io { path: moved(path), source },
            StoreError::Locked { path } => StoreError::Locked { path: moved(path) },
            other => other,
        }
    }
}

/// Copies the regular files below `from` into `to`, recursively (symlinks are not followed).
fn copy_dir(from: &Path, to: &Path) -> Result<(), StoreError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let kind = entry.file_type().map_err(io(&entry.path()))?;
        let dest = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &dest)?;
        } else if kind.is_file() {
            match std::fs::copy(entry.path(), &dest) {
                Ok(_) => {}
                // sled removed a segment file while we listed the directory.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&entry.path())(e)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ObjectKey;
    use crate::store::PlacementRecord;

    fn placement(name: &str) -> PlacementRecord {
        PlacementRecord {
            workload: ObjectKey {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("default".into()),
                name: name.into(),
            },
            policy: None,
            result: crate::schedule::ScheduleResult::unschedulable("x"),
            targets: Default::default(),
            affinity_name: None,
            files: Default::default(),
            history_seq: 1,
            decided_at_ms: 1,
        }
    }

    /// While another handle holds the store (its lock), a copy opens with what was flushed;
    /// writes to the copy never reach the original; a state directory without a store gives
    /// an empty one.
    #[test]
    fn a_copy_opens_beside_the_holder_and_stays_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (state, copy) = (dir.path().join("state"), dir.path().join("copy"));
        let held = Store::open(&state).expect("open");
        held.put_placement(&placement("web")).expect("put");
        held.flush().expect("flush");
        assert!(matches!(Store::open(&state), Err(StoreError::Locked { .. })));
        let c = Store::open_copy(&state, &copy).expect("copy");
        assert_eq!(c.placements().expect("placements"), vec![placement("web")]);
        c.put_placement(&placement("api")).expect("put");
        c.flush().expect("flush");
        assert_eq!(held.placements().expect("placements").len(), 1);
        drop(c);
        let empty = Store::open_copy(&dir.path().join("none"), &dir.path().join("copy2")).expect("empty");
        assert!(empty.placements().expect("placements").is_empty());
        assert!(!dir.path().join("none").exists(), "the source is not created");
    }
}
