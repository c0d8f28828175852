//! Recovery of an interrupted publish: a committed journal re-applied idempotently, staged
//! files of an uncommitted one discarded.

use std::fs;
use std::path::Path;

use super::disk::{Kind, journal_path, kind_of, lock, staging_dir, sync_dir};
use super::error::io_err;
use super::journal::{Journal, apply_journal, finish_journal};
use super::names::{cluster_problem, file_path_problem, object_path_problem};
use super::{JOURNAL_VERSION, PublishError, is_summary_path, legacy_summary_path};
use crate::render::layout::{FileClass, is_index_path, root_file_cluster};

/// The journal version whose renames carry no order class (before 2): each one's class is
/// read from its path, as that version ordered them (a summary shard; a layout's index file;
/// an object's file otherwise).
const UNCLASSED_JOURNAL_VERSION: u32 = 1;

/// Gives the renames of a journal of [`UNCLASSED_JOURNAL_VERSION`] their class.
fn classify_unclassed(journal: &mut Journal) {
    if journal.version != UNCLASSED_JOURNAL_VERSION {
        return;
    }
    for rename in &mut journal.renames {
        let in_cluster = rename.target.split_once('/').map(|(_, rest)| rest);
        rename.class = match (is_summary_path(&rename.target), in_cluster.is_some_and(is_index_path)) {
            (true, _) => FileClass::Summary,
            (false, true) => FileClass::Index,
            (false, false) => FileClass::Object,
        };
    }
    journal.version = JOURNAL_VERSION;
}

/// Checks that a journal only names places a publish could have written, each file where
/// its class goes: an object's file and an index file (a layout's) in a cluster directory, a
/// root file at its place ([`crate::render::layout::root_file_path`]), a summary shard under
/// `.fedsched/placements/`.
fn check_journal(path: &Path, journal: &Journal) -> Result<(), PublishError> {
    let invalid = |reason: String| PublishError::JournalInvalid { path: path.to_path_buf(), reason };
    if journal.version != JOURNAL_VERSION {
        return Err(invalid(format!("unsupported version {}", journal.version)));
    }
    let cluster_path_ok = |target: &str, class: FileClass| {
        target.split_once('/').is_some_and(|(cluster, rest)| {
            cluster_problem(cluster).is_none()
                && match class {
                    FileClass::Object => object_path_problem(rest).is_none(),
                    FileClass::Index => file_path_problem(rest).is_none() && is_index_path(rest),
                    FileClass::Root | FileClass::Summary => false,
                }
        })
    };
    // A layout's root file of a cluster that could have a directory.
    let root_path_ok = |target: &str| root_file_cluster(target).is_some_and(|c| cluster_problem(c).is_none());
    // A plain name, or a directory of the staging directory and a name (`s12/stage-….tmp`).
    let name_ok = |n: &str| !n.is_empty() && n != "." && n != ".." && !n.contains(['/', '\\', '\0']);
    // A whole new cluster directory: a plain name in the staging directory, moved to a
    // cluster directory.
    let mut new_dirs = std::collections::HashMap::new();
    for dir in &journal.new_dirs {
        if !name_ok(&dir.staged) || cluster_problem(&dir.target).is_some() {
            return Err(invalid(format!("new directory {:?} for {:?}", dir.staged, dir.target)));
        }
        new_dirs.insert(dir.staged.as_str(), dir.target.as_str());
    }
    for rename in &journal.renames {
        let staged_ok = match rename.staged.split_once('/') {
            // A file staged in a new cluster directory: at the place its target has in it.
            Some((dir, rest)) if new_dirs.contains_key(dir) => {
                rename.target.split_once('/') == new_dirs.get(dir).map(|cluster| (*cluster, rest))
            }
            Some((dir, name)) => name_ok(dir) && name_ok(name),
            None => name_ok(&rename.staged),
        };
        if !staged_ok {
            return Err(invalid(format!("staged name {:?}", rename.staged)));
        }
        let target_ok = match rename.class {
            FileClass::Summary => is_summary_path(&rename.target),
            FileClass::Root => root_path_ok(&rename.target),
            class => cluster_path_ok(&rename.target, class),
        };
        if !target_ok {
            return Err(invalid(format!("target {:?}", rename.target)));
        }
    }
    for deletion in &journal.deletions {
        // A publish deletes no shard of the summary, only the single file of earlier versions.
        if *deletion != legacy_summary_path()
            && !cluster_path_ok(deletion, FileClass::Object)
            && !root_path_ok(deletion)
        {
            return Err(invalid(format!("deletion {deletion:?}")));
        }
    }
    Ok(())
}

/// Removes everything left in the staging directory (contents of publishes that never
/// committed their journal).
fn clean_staging(out: &Path) -> Result<(), PublishError> {
    let staging = staging_dir(out);
    if kind_of(&staging)? != Kind::Dir {
        return Ok(());
    }
    let entries = fs::read_dir(&staging).map_err(io_err("list", &staging))?;
    let mut any = false;
    for entry in entries {
        let entry = entry.map_err(io_err("list", &staging))?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(io_err("inspect", &path))?;
        if file_type.is_dir() {
            fs::remove_dir_all(&path).map_err(io_err("remove", &path))?;
        } else {
            fs::remove_file(&path).map_err(io_err("remove", &path))?;
        }
        any = true;
    }
    if any {
        sync_dir(&staging)?;
    }
    Ok(())
}

/// Finishes an interrupted publish, if any: re-applies `OUT/.fedsched/journal.json`
/// idempotently, removes it, and discards stale staged files. Returns whether a journal was
/// found and applied. Does nothing (and creates nothing) when `out` does not exist.
pub fn recover(out: &Path) -> Result<bool, PublishError> {
    recover_killable(out, &super::KillSwitch::OFF)
}

/// [`recover`] under a [`super::KillSwitch`]: the recovery's renames and deletions are steps.
pub fn recover_killable(out: &Path, kill: &super::KillSwitch) -> Result<bool, PublishError> {
    if kind_of(out)? == Kind::Missing {
        return Ok(false);
    }
    let _lock = lock(out)?;
    recover_locked(out, kill)
}

/// The committed journal of an interrupted publish, checked, if there is one.
pub(super) fn read_journal(out: &Path) -> Result<Option<Journal>, PublishError> {
    let path = journal_path(out);
    match kind_of(&path)? {
        Kind::File => {
            let bytes = fs::read(&path).map_err(io_err("read", &path))?;
            let mut journal: Journal = serde_json::from_slice(&bytes)
                .map_err(|source| PublishError::JournalParse { path: path.clone(), source })?;
            classify_unclassed(&mut journal);
            check_journal(&path, &journal)?;
            Ok(Some(journal))
        }
        Kind::Missing => Ok(None),
        Kind::Dir | Kind::Other => Err(PublishError::InTheWay { path, expected: "a regular file" }),
    }
}

pub(super) fn recover_locked(out: &Path, kill: &super::KillSwitch) -> Result<bool, PublishError> {
    let path = journal_path(out);
    let applied = match read_journal(out)? {
        Some(journal) => {
            let (written, removed) = apply_journal(out, &journal, kill)?;
            tracing::warn!(
                journal = %path.display(),
                written = written.len(),
                removed = removed.len(),
                "completed an interrupted publish"
            );
            finish_journal(out)?;
            true
        }
        None => false,
    };
    clean_staging(out)?;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::super::test_fixtures::{object, read, sample_plan, snapshot, summary_plan};
    use super::*;
    use crate::publish::diff::compute_changes;
    use crate::publish::journal::{NewDir, Rename, stage, write_journal};
    use crate::publish::names::validate;
    use crate::publish::{DeleteGuard, PublishPlan, publish};
    use tempfile::TempDir;

    /// Runs a publish up to (and including) the journal commit, then "crashes".
    fn crash_after_journal(out: &Path, plan: &PublishPlan) -> Journal {
        validate(plan).expect("valid");
        let changes = compute_changes(out, plan, &DeleteGuard::OFF).expect("changes");
        let journal = stage(out, &changes).expect("stage");
        write_journal(out, &journal).expect("journal");
        journal
    }

    #[test]
    fn crash_after_journal_commit_converges_on_recover() {
        let reference = TempDir::new().expect("tempdir");
        publish(reference.path(), &sample_plan()).expect("publish");
        let mut next = sample_plan();
        next.clusters.remove("member2");
        if let Some(c) = next.clusters.get_mut("member1") {
            c.files.remove("default/core_configmap_cfg.yaml");
            c.files.insert("ns2/core_service_svc.yaml".to_owned(), object("kind: Service\n"));
        }
        publish(reference.path(), &next).expect("publish");
        let expected = snapshot(reference.path());

        for applied in [0, 1, 2, usize::MAX] {
            let dir = TempDir::new().expect("tempdir");
            let out = dir.path();
            publish(out, &sample_plan()).expect("publish");
            let journal = crash_after_journal(out, &next);
            assert!(!journal.renames.is_empty() && !journal.deletions.is_empty());
            // Part of the journal may have been applied before the crash.
            let partial = Journal {
                renames: journal.renames.iter().take(applied).cloned().collect(),
                deletions: journal.deletions.iter().take(applied).cloned().collect(),
                ..journal.clone()
            };
            apply_journal(out, &partial, &crate::publish::KillSwitch::OFF).expect("partial apply");
            // A stale staged file from an even earlier, uncommitted attempt.
            fs::write(out.join(".fedsched/staging/stage-stale.tmp"), "junk").expect("write");
            assert!(recover(out).expect("recover"), "journal applied");
            assert_eq!(snapshot(out), expected, "after {applied} steps");
            assert!(!recover(out).expect("second recover"), "nothing left to do");
            assert_eq!(snapshot(out), expected);
        }
    }

    /// A publish of more files than one staging directory holds: staged in several, applied
    /// cluster by cluster on every core, and after a crash part-way through the renames
    /// recovered to exactly the state of an uninterrupted publish, with no staging directory
    /// left.
    #[test]
    fn a_publish_staged_in_several_directories_recovers_after_a_crash() {
        use super::super::test_fixtures::{cluster, plan};
        let names: Vec<Vec<(String, String)>> = (0..3)
            .map(|c| {
                (0..1100).map(|i| (format!("ns{}/core_configmap_c{c}-{i}.yaml", i % 7), format!("n: {i}\n"))).collect()
            })
            .collect();
        let big = || {
            let clusters: Vec<(&str, crate::publish::ClusterFiles)> = ["member1", "member2", "member3"]
                .into_iter()
                .zip(&names)
                .map(|(name, files)| {
                    let files: Vec<(&str, &str)> = files.iter().map(|(p, b)| (p.as_str(), b.as_str())).collect();
                    (name, cluster(&files, &[]))
                })
                .collect();
            plan(clusters, Some("big"))
        };
        let reference = TempDir::new().expect("tempdir");
        publish(reference.path(), &big()).expect("publish");
        let expected = snapshot(reference.path());
        assert_eq!(
            expected.keys().filter(|k| k.ends_with(".yaml") && !k.ends_with("kustomization.yaml")).count(),
            3300
        );

        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        // The cluster directories exist (a first publish stages each whole instead).
        for c in ["member1", "member2", "member3"] {
            fs::create_dir_all(out.join(c)).expect("mkdir");
        }
        let journal = crash_after_journal(out, &big());
        assert!(journal.new_dirs.is_empty());
        let dirs: std::collections::BTreeSet<&str> =
            journal.renames.iter().filter_map(|r| r.staged.split_once('/').map(|(d, _)| d)).collect();
        assert!(dirs.len() >= 4, "3,304 files in directories of 1,024: {dirs:?}");
        // The first cluster's renames and part of the second's happened before the crash.
        let partial = Journal { renames: journal.renames[..1500].to_vec(), deletions: vec![], ..journal.clone() };
        apply_journal(out, &partial, &crate::publish::KillSwitch::OFF).expect("partial apply");
        assert!(recover(out).expect("recover"), "journal applied");
        assert_eq!(snapshot(out), expected);
        assert_eq!(fs::read_dir(out.join(".fedsched/staging")).expect("staging").count(), 0);
    }

    /// A first publish stages each cluster directory whole and moves it into place with one
    /// rename. After a crash between those renames, recovery moves the rest; a cluster
    /// directory someone created in between gets its files one by one (their own file kept);
    /// both give the output of an uninterrupted publish, with nothing left in staging.
    #[test]
    fn a_first_publish_moves_each_new_cluster_directory_whole_and_recovers() {
        let reference = TempDir::new().expect("tempdir");
        let report = publish(reference.path(), &sample_plan()).expect("publish");
        let mut expected = snapshot(reference.path());
        let files = expected.keys().filter(|k| !k.ends_with('/') && !k.starts_with(".fedsched/")).count();
        assert_eq!(report.written.len(), files + 1, "every file and the summary reported written");

        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        let journal = crash_after_journal(out, &sample_plan());
        let targets: Vec<&str> = journal.new_dirs.iter().map(|d| d.target.as_str()).collect();
        assert_eq!(targets, ["member1", "member2"]);
        assert!(journal.renames.iter().all(|r| r.target.starts_with(".fedsched/") || r.staged.starts_with("n-")));
        // The first directory was moved before the crash; someone made the second one.
        let first = Journal { new_dirs: journal.new_dirs[..1].to_vec(), renames: vec![], ..journal.clone() };
        apply_journal(out, &first, &crate::publish::KillSwitch::OFF).expect("partial apply");
        assert!(out.join("member1/kustomization.yaml").is_file());
        fs::create_dir_all(out.join("member2")).expect("mkdir");
        fs::write(out.join("member2/notes.txt"), "mine").expect("write");
        assert!(recover(out).expect("recover"), "journal applied");
        expected.insert("member2/notes.txt".to_owned(), b"mine".to_vec());
        assert_eq!(snapshot(out), expected);
        assert_eq!(fs::read_dir(out.join(".fedsched/staging")).expect("staging").count(), 0);
    }

    /// A journal of the version before order classes (its renames carry none) is recovered in
    /// that version's order: each rename's class read from its path.
    #[test]
    fn a_journal_without_classes_is_recovered_in_its_order() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("publish");
        let mut next = sample_plan();
        next.summary = Some(summary_plan("v2"));
        if let Some(c) = next.clusters.get_mut("member1") {
            c.files.insert("ns2/core_service_svc.yaml".to_owned(), object("kind: Service\n"));
        }
        let journal = crash_after_journal(out, &next);
        let classes = |j: &Journal| j.renames.iter().map(|r| (r.target.clone(), r.class)).collect::<Vec<_>>();
        let written = classes(&journal);
        assert!(written.contains(&("member1/kustomization.yaml".to_owned(), FileClass::Index)), "{written:?}");
        assert!(written.contains(&(".fedsched/placements/00.json".to_owned(), FileClass::Summary)), "{written:?}");
        // As the version before wrote it: no class anywhere.
        let mut old = serde_json::to_value(&journal).expect("json");
        old["version"] = UNCLASSED_JOURNAL_VERSION.into();
        for r in old["renames"].as_array_mut().expect("renames") {
            r.as_object_mut().expect("rename").remove("class");
        }
        fs::write(out.join(".fedsched/journal.json"), serde_json::to_vec(&old).expect("json")).expect("write");
        let read_back = read_journal(out).expect("read").expect("a journal");
        assert_eq!(classes(&read_back), written);
        assert!(recover(out).expect("recover"));
        assert!(publish(out, &next).expect("publish").written.is_empty(), "recovered to the plan");
        // A version nobody wrote is refused.
        old["version"] = (JOURNAL_VERSION + 1).into();
        fs::write(out.join(".fedsched/journal.json"), serde_json::to_vec(&old).expect("json")).expect("write");
        let err = recover(out).expect_err("unknown version");
        assert!(matches!(err, PublishError::JournalInvalid { .. }), "{err}");
    }

    #[test]
    fn crash_before_journal_commit_keeps_old_state() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("publish");
        let before = snapshot(out);
        let mut next = sample_plan();
        next.clusters.remove("member1");
        next.summary = Some(summary_plan("changed"));
        let changes = compute_changes(out, &next, &DeleteGuard::OFF).expect("changes");
        stage(out, &changes).expect("stage"); // crash before the journal is written
        assert!(!recover(out).expect("recover"));
        assert_eq!(snapshot(out), before);
        // The next publish then does the whole job.
        let report = publish(out, &next).expect("publish");
        assert_eq!(report.written, vec![out.join(".fedsched/placements/00.json")]);
    }

    #[test]
    fn publish_recovers_first_and_rejects_bad_journals() {
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path();
        publish(out, &sample_plan()).expect("publish");
        let mut next = sample_plan();
        next.summary = Some(summary_plan("v2"));
        crash_after_journal(out, &next);
        // The following publish of the same plan completes the journal and finds nothing to do.
        let report = publish(out, &next).expect("publish");
        assert!(report.written.is_empty());
        assert_eq!(read(out, ".fedsched/placements/00.json"), "v2");

        let evil = Journal {
            version: JOURNAL_VERSION,
            renames: vec![Rename {
                staged: "x".to_owned(),
                target: "../outside.yaml".to_owned(),
                class: FileClass::Object,
            }],
            deletions: vec![],
            new_dirs: vec![],
            record: None,
        };
        write_journal(out, &evil).expect("journal");
        let err = recover(out).expect_err("evil journal");
        assert!(matches!(err, PublishError::JournalInvalid { .. }), "{err}");
        for staged in ["../x", "s1/../x", "s1/x/y", "/x", "s1/", "./x", "s1\\x"] {
            let evil = Journal {
                version: JOURNAL_VERSION,
                renames: vec![Rename {
                    staged: staged.to_owned(),
                    target: "member1/kustomization.yaml".to_owned(),
                    class: FileClass::Index,
                }],
                deletions: vec![],
                new_dirs: vec![],
                record: None,
            };
            write_journal(out, &evil).expect("journal");
            let err = recover(out).expect_err(staged);
            assert!(matches!(err, PublishError::JournalInvalid { .. }), "{staged}: {err}");
        }
        // Under `.fedsched/`: renames to the summary's shards only, no deletion but the single
        // file of earlier versions.
        let summary_cases = [
            (vec![], vec![".fedsched/placements/3f.json"]),
            (vec![".fedsched/journal.json"], vec![]),
            (vec![".fedsched/placements/3F.json"], vec![]),
            (vec![".fedsched/placements/../owner"], vec![]),
        ];
        for (targets, deletions) in summary_cases {
            let what = format!("{targets:?} {deletions:?}");
            let evil = Journal {
                version: JOURNAL_VERSION,
                renames: targets
                    .iter()
                    .map(|t| Rename { staged: "x".to_owned(), target: (*t).to_owned(), class: FileClass::Summary })
                    .collect(),
                deletions: deletions.iter().map(|d| (*d).to_owned()).collect(),
                new_dirs: vec![],
                record: None,
            };
            let err = check_journal(Path::new("j"), &evil).expect_err(&what);
            assert!(matches!(err, PublishError::JournalInvalid { .. }), "{what}: {err}");
        }
        let upgrade = Journal {
            version: JOURNAL_VERSION,
            renames: vec![Rename {
                staged: "x".to_owned(),
                target: ".fedsched/placements/3f.json".to_owned(),
                class: FileClass::Summary,
            }],
            deletions: vec![".fedsched/placements.json".to_owned()],
            new_dirs: vec![],
            record: None,
        };
        assert!(check_journal(Path::new("j"), &upgrade).is_ok());
        // A new cluster directory: a plain staged name, a cluster name, and files staged at
        // their place in it.
        let new_dir = |staged: &str, target: &str| NewDir { staged: staged.to_owned(), target: target.to_owned() };
        let file = |staged: &str, target: &str| Rename {
            staged: staged.to_owned(),
            target: target.to_owned(),
            class: if target.ends_with("/kustomization.yaml") { FileClass::Index } else { FileClass::Object },
        };
        let cases = [
            (new_dir("../n", "member1"), file("s0/x", "member1/kustomization.yaml")),
            (new_dir("n-a/b", "member1"), file("s0/x", "member1/kustomization.yaml")),
            (new_dir("n-a", ".."), file("s0/x", "member1/kustomization.yaml")),
            (new_dir("n-a", "member1/x"), file("s0/x", "member1/kustomization.yaml")),
            (new_dir("n-a", "member1"), file("n-a/kustomization.yaml", "member2/kustomization.yaml")),
            (new_dir("n-a", "member1"), file("n-a/ns/x.yaml", "member1/ns/y.yaml")),
            (new_dir("n-a", "member1"), file("n-a/../../x.yaml", "member1/../../x.yaml")),
        ];
        for (dir, rename) in cases {
            let what = format!("{dir:?} {rename:?}");
            let evil = Journal {
                version: JOURNAL_VERSION,
                renames: vec![rename],
                deletions: vec![],
                new_dirs: vec![dir],
                record: None,
            };
            write_journal(out, &evil).expect("journal");
            let err = recover(out).expect_err(&what);
            assert!(matches!(err, PublishError::JournalInvalid { .. }), "{what}: {err}");
        }
        // Each file where its class goes: an index file is a layout's, an object's file is not one.
        let misplaced = [
            ("member1/kustomization.yaml", FileClass::Object),
            ("member1/default/apps_deployment_web.yaml", FileClass::Index),
            ("member1/default/apps_deployment_web.yaml", FileClass::Summary),
            (".fedsched/placements/3f.json", FileClass::Object),
            (".fedsched/placements/3f.json", FileClass::Index),
            (".fedsched/placements/3f.json", FileClass::Root),
            ("member1/kustomization.yaml", FileClass::Root),
            ("clusters/.fedsched/fedsched.yaml", FileClass::Root),
            ("clusters/../fedsched.yaml", FileClass::Root),
        ];
        let root = Journal {
            version: JOURNAL_VERSION,
            renames: vec![Rename {
                staged: "x".to_owned(),
                target: "clusters/member1/fedsched.yaml".to_owned(),
                class: FileClass::Root,
            }],
            deletions: vec!["clusters/member2/fedsched.yaml".to_owned()],
            ..Journal::default()
        };
        assert!(check_journal(Path::new("j"), &root).is_ok(), "a layout's root files written and removed");
        for (target, class) in misplaced {
            let evil = Journal {
                version: JOURNAL_VERSION,
                renames: vec![Rename { staged: "x".to_owned(), target: target.to_owned(), class }],
                ..Journal::default()
            };
            let err = check_journal(Path::new("j"), &evil).expect_err(target);
            assert!(matches!(err, PublishError::JournalInvalid { .. }), "{target} {class:?}: {err}");
        }
        fs::write(out.join(".fedsched/journal.json"), "{not json").expect("write");
        let err = recover(out).expect_err("corrupt journal");
        assert!(matches!(err, PublishError::JournalParse { .. }), "{err}");
    }
}
