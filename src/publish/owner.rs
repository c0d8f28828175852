//! Ownership of the output directory: one fedsched writes it at a time. A daemon claims it at
//! start and holds it for its life (with `[ha]`: the leader, from its takeover until it loses
//! the lease), `render` for its pass. The claim is an exclusive, non-blocking `flock` of
//! `OUT/.fedsched/owner`, a file that names the owner while it holds it (pid, state
//! directory, command) and is removed when it lets go; the kernel releases the lock when the
//! process dies, `kill -9` included. The per-publish lock ([`super::disk::lock`], another file)
//! still serialises publishes inside one owner.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::disk::{create_dirs, state_dir};
use super::error::io_err;
use super::{OWNER_FILE, PublishError};

/// Who owns an output directory, as written in its owner file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Process id of the owner.
    pub pid: u32,
    /// Its state directory.
    pub state_dir: String,
    /// What it runs (`run`, `render`).
    pub command: String,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fedsched {} (pid {}, state directory {})", self.command, self.pid, self.state_dir)
    }
}

/// The claim on an output directory; let go (owner file removed, lock released) on drop.
#[derive(Debug)]
pub struct OutputClaim {
    file: File,
    path: PathBuf,
}

impl OutputClaim {
    /// The owner file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OutputClaim {
    fn drop(&mut self) {
        // Removed while still locked, so that an idle directory has no owner file (nothing
        // stale, and the output of a finished render is only what it published); the lock
        // goes with the file descriptor, just after.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.set_len(0);
    }
}

/// Claims `out` (created if missing) for this process, without waiting: refused with
/// [`PublishError::OutputInUse`] when another process holds it.
pub fn claim_output(out: &Path, state: &Path, command: &str) -> Result<OutputClaim, PublishError> {
    let dir = state_dir(out);
    create_dirs(&dir)?;
    let path = dir.join(OWNER_FILE);
    // The owner file is removed when its owner lets go: a lock taken on a file that was just
    // removed (opened before the removal) is retried on the new one.
    for _ in 0..16 {
        let mut file = File::options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_err("open", &path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let owner = file.read_to_string(&mut text).ok().and_then(|_| serde_json::from_str::<Owner>(&text).ok());
                return Err(PublishError::OutputInUse { dir: out.to_path_buf(), owner });
            }
            Err(TryLockError::Error(e)) => return Err(io_err("lock", &path)(e)),
        }
        let locked = file.metadata().map_err(io_err("inspect", &path))?;
        match std::fs::metadata(&path) {
            Ok(now) if now.dev() == locked.dev() && now.ino() == locked.ino() => {}
            _ => continue,
        }
        let me = Owner {
            pid: std::process::id(),
            state_dir: state.canonicalize().unwrap_or_else(|_| state.to_path_buf()).display().to_string(),
            command: command.to_owned(),
        };
        let bytes = serde_json::to_vec(&me).unwrap_or_default();
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(&bytes))
            .and_then(|()| file.flush())
            .map_err(io_err("write", &path))?;
        return Ok(OutputClaim { file, path });
    }
    Err(PublishError::OutputInUse { dir: out.to_path_buf(), owner: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn a_second_claim_is_refused_with_the_owner_until_the_first_lets_go() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path().join("out");
        let first = claim_output(&out, Path::new("/var/lib/a"), "run").expect("first claim");
        let err = claim_output(&out, Path::new("/var/lib/b"), "render").expect_err("second claim");
        match &err {
            PublishError::OutputInUse { dir, owner: Some(owner) } => {
                assert_eq!(dir, &out);
                assert_eq!(owner.pid, std::process::id());
                assert_eq!(owner.state_dir, "/var/lib/a");
                assert_eq!(owner.command, "run");
            }
            other => panic!("{other:?}"),
        }
        let text = err.to_string();
        assert!(text.contains(&out.display().to_string()) && text.contains("/var/lib/a"), "{text}");
        drop(first);
        assert!(!out.join(".fedsched/owner").exists(), "no owner file once let go");
        let again = claim_output(&out, Path::new("/var/lib/b"), "render").expect("claim after release");
        assert!(std::fs::read_to_string(again.path()).expect("owner file").contains("/var/lib/b"));
    }
}
