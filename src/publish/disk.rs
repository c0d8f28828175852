//! File-system helpers of the publisher: what is at a path (without following symlinks), the
//! state directory's paths, directory creation, `fsync` / `syncfs`, and the publish lock.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::error::io_err;
use super::{JOURNAL_FILE, LOCK_FILE, PublishError, STAGING_DIR, STATE_DIR};

/// What on disk is at `path`, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Missing,
    File,
    Dir,
    Other,
}

pub(super) fn kind_of(path: &Path) -> Result<Kind, PublishError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => Ok(Kind::File),
        Ok(meta) if meta.file_type().is_dir() => Ok(Kind::Dir),
        Ok(_) => Ok(Kind::Other),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Kind::Missing),
        Err(e) => Err(io_err("inspect", path)(e)),
    }
}

pub(super) fn state_dir(out: &Path) -> PathBuf {
    out.join(STATE_DIR)
}

pub(super) fn staging_dir(out: &Path) -> PathBuf {
    state_dir(out).join(STAGING_DIR)
}

pub(super) fn journal_path(out: &Path) -> PathBuf {
    state_dir(out).join(JOURNAL_FILE)
}

/// Fsyncs a directory so that entries created, renamed or removed in it are durable.
pub(super) fn sync_dir(dir: &Path) -> Result<(), PublishError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_err("sync directory", dir))
}

/// Makes every written file of the file system holding `dir` durable (`syncfs(2)`): the
/// staged files of a publish are on the output directory's file system by construction.
pub(super) fn sync_filesystem(dir: &Path) -> Result<(), PublishError> {
    File::open(dir)
        .and_then(|d| rustix::fs::syncfs(&d).map_err(io::Error::from))
        .map_err(io_err("sync the file system of", dir))
}

/// Creates `dir` (and missing parents). Not made durable here: every caller is followed by a
/// `syncfs` of the file system ([`sync_filesystem`]) before anything depends on the entries.
pub(super) fn create_dirs(dir: &Path) -> Result<(), PublishError> {
    // The parent of a relative path's first component (`out` of `out/.fedsched`) is the
    // empty path: the current directory, which exists.
    if dir.as_os_str().is_empty() {
        return Ok(());
    }
    match kind_of(dir)? {
        Kind::Dir => Ok(()),
        Kind::Missing => {
            if let Some(parent) = dir.parent() {
                create_dirs(parent)?;
            }
            match fs::create_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_err("create directory", dir)(e)),
            }
            Ok(())
        }
        Kind::File | Kind::Other => Err(PublishError::InTheWay { path: dir.to_path_buf(), expected: "a directory" }),
    }
}

/// Takes the exclusive lock serialising publishers on one output root; released on drop.
pub(super) fn lock(out: &Path) -> Result<File, PublishError> {
    let dir = state_dir(out);
    create_dirs(&dir)?;
    let path = dir.join(LOCK_FILE);
    let file = File::options().create(true).truncate(false).write(true).open(&path).map_err(io_err("open", &path))?;
    file.lock().map_err(io_err("lock", &path))?;
    Ok(file)
}
