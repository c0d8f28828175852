//! What a publish would do, without doing it: the plan validated and compared with the
//! output directory by the publisher's own diff ([`super::diff`]), mass-deletion guard
//! included. Used by `fedsched plan`; reads the directory, writes nothing, takes no lock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::diff::compute_changes;
use super::names::validate;
use super::{DeleteGuard, HeldCluster, PublishError, PublishPlan, STATE_DIR};

/// The changes a publish of a plan would make, paths relative to the output root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preview {
    /// New or changed files and their bytes.
    pub writes: BTreeMap<String, bytes::Bytes>,
    /// Generated files that would be removed.
    pub deletions: BTreeSet<String>,
    /// Desired files already on disk with the right bytes.
    pub unchanged: usize,
    /// Clusters the mass-deletion guard would hold (nothing in them changes).
    pub held: Vec<HeldCluster>,
    /// Workloads whose change the guard would hold whole (their files and summary entry stay
    /// as published in every cluster).
    pub held_moves: Vec<super::HeldMove>,
    /// Whether an interrupted publish (a journal) waits in the directory: the next publish
    /// finishes it first, so the directory is not yet what this preview compared with.
    pub interrupted: bool,
}

/// What [`super::publish_guarded`] would do with `plan` in `out` (a missing `out` is an empty
/// directory).
pub fn preview(out: &Path, plan: &PublishPlan, guard: &DeleteGuard) -> Result<Preview, PublishError> {
    validate(plan)?;
    let interrupted = out.join(STATE_DIR).join(super::JOURNAL_FILE).exists();
    let changes = compute_changes(out, plan, guard)?;
    Ok(Preview {
        writes: changes.writes,
        deletions: changes.deletions,
        unchanged: changes.unchanged,
        held: changes.held,
        held_moves: changes.held_moves,
        interrupted,
    })
}
