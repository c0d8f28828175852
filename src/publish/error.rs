//! [`PublishError`]: why a publish or a recovery failed.

use std::io;
use std::path::{Path, PathBuf};

/// Why a publish or a recovery failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// A path segment is not a safe file name.
    #[error("unsafe path segment {segment:?}: {reason}")]
    UnsafeSegment {
        /// The offending segment.
        segment: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A cluster name cannot be used as a directory name.
    #[error("unsafe cluster name {cluster:?}: {reason}")]
    UnsafeCluster {
        /// The offending cluster name.
        cluster: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An object path (or `keep` entry) of a cluster is unsafe or malformed.
    #[error("cluster {cluster:?}: unsafe object path {path:?}: {reason}")]
    UnsafePath {
        /// The cluster the path belongs to.
        cluster: String,
        /// The offending relative path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An object file's content does not start with [`crate::render::GENERATED_HEADER`].
    #[error("cluster {cluster:?}: object {path:?} does not begin with the generated header")]
    MissingHeader {
        /// The cluster the file belongs to.
        cluster: String,
        /// The relative path of the file.
        path: String,
    },
    /// One object path would need another object path to be a directory.
    #[error("cluster {cluster:?}: object path {file:?} is also used as a directory by {other:?}")]
    PathConflict {
        /// The cluster both paths belong to.
        cluster: String,
        /// The path that is a file.
        file: String,
        /// The path that needs it to be a directory.
        other: String,
    },
    /// Something on disk is in the way: a directory or symlink where a file goes, or a file
    /// or symlink where a directory goes.
    #[error("{path} is in the way: expected {expected}")]
    InTheWay {
        /// The path on disk.
        path: PathBuf,
        /// What was expected there.
        expected: &'static str,
    },
    /// The journal of an interrupted publish cannot be read or parsed.
    #[error("cannot parse journal {path}")]
    JournalParse {
        /// The journal file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The journal of an interrupted publish names something it must not.
    #[error("invalid journal {path}: {reason}")]
    JournalInvalid {
        /// The journal file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Another fedsched owns the output directory (a daemon for its life, or a `render`).
    #[error("the output directory {} is in use by {}; one fedsched writes an output directory at a time (give this one another output directory, or stop the other)", dir.display(), owner_text(owner))]
    OutputInUse {
        /// The output directory.
        dir: PathBuf,
        /// Its owner, when its owner file names it.
        owner: Option<super::Owner>,
    },
    /// Fault injection ([`super::KillSwitch`]): the publish stopped right after its step
    /// `step`, as a SIGKILL there would stop it (nothing after that step ran).
    #[error("killed by fault injection after publish step {step}")]
    Killed {
        /// The step it stopped after (counted from 1 over the switch's life).
        step: usize,
    },
    /// The process is shutting down: the publish stopped at a safe step (before its journal,
    /// or with its journal written: the next publish or start completes it).
    #[error("the publish stopped for a shutdown{}", if *.journaled { "; its journal completes it at the next start" } else { "" })]
    Stopped {
        /// Whether the journal was written (the publish is due, not abandoned).
        journaled: bool,
    },
    /// An I/O operation failed.
    #[error("cannot {action} {path}")]
    Io {
        /// What was being done (`read`, `write`, `rename`, …).
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// Builds a closure that wraps an `io::Error` with the action and the path.
pub(super) fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PublishError + use<> {
    let path = path.to_path_buf();
    move |source| PublishError::Io { action, path, source }
}

fn owner_text(owner: &Option<super::Owner>) -> String {
    match owner {
        Some(o) => o.to_string(),
        None => "another fedsched (its owner file names no process yet)".to_owned(),
    }
}
