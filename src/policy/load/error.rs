//! [`LoadError`]: one problem found in the policy repository, named by file, document and
//! field path.

use std::fmt;
use std::path::PathBuf;

use crate::policy::Source;

/// One problem found in the policy repository. Displays as
/// `<file>: document <n>: <field path>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub struct LoadError {
    /// Path relative to the policy directory.
    pub file: PathBuf,
    /// 1-based document number within the file; None for file-level problems.
    pub document: Option<usize>,
    /// Dotted field path (`spec.placement.replicaScheduling.replicaSchedulingType`), or "" .
    pub field: String,
    pub message: String,
    /// The file or directory could not be read: an I/O error of the machine (descriptors
    /// exhausted, a disk error, a dangling link), not a problem of its content. A pass that
    /// meets one is an operational failure, not an invalid repository.
    pub io: bool,
}

impl LoadError {
    /// An error about one field of one document.
    pub fn at(source: &Source, field: impl Into<String>, message: impl Into<String>) -> Self {
        LoadError {
            file: source.file.clone(),
            document: Some(source.document),
            field: field.into(),
            message: message.into(),
            io: false,
        }
    }

    /// An error about a whole file (unreadable, not UTF-8, ...).
    pub fn file(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        LoadError { file: file.into(), document: None, field: String::new(), message: message.into(), io: false }
    }

    /// A file or directory that could not be read ([`LoadError::io`]).
    pub fn io(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        LoadError { io: true, ..LoadError::file(file, message) }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(n) = self.document {
            write!(f, ": document {n}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}
