//! Name checks: which cluster names and object paths a plan may use ([`check_segment`]), and
//! the validation of a whole plan before anything touches the disk.

use std::collections::BTreeSet;

use super::{MAX_SEGMENT_LEN, PublishError, PublishPlan};
use crate::render::output::has_header;

/// Returns why `s` is not a safe path segment, if it is not.
fn segment_problem(s: &str) -> Option<&'static str> {
    if s.is_empty() {
        Some("empty")
    } else if s.len() > MAX_SEGMENT_LEN {
        Some("longer than 253 characters")
    } else if s == "." || s == ".." {
        Some("is a relative directory reference")
    } else if !s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')) {
        Some("only a-z, 0-9, '.', '_' and '-' are allowed")
    } else {
        None
    }
}

/// Checks that `s` is a safe path segment: non-empty, at most 253 characters, only
/// `[a-z0-9._-]`, and not `.` or `..` (so no `/`, no NUL, no upper case, no spaces).
pub fn check_segment(s: &str) -> Result<(), PublishError> {
    match segment_problem(s) {
        None => Ok(()),
        Some(reason) => Err(PublishError::UnsafeSegment { segment: s.to_owned(), reason }),
    }
}

/// Why `name` cannot be a cluster directory: a safe segment that does not start with `.`
/// (which keeps `.fedsched`, `.git` and other hidden directories out of reach).
pub(super) fn cluster_problem(name: &str) -> Option<String> {
    if let Some(reason) = segment_problem(name) {
        Some(reason.to_owned())
    } else if name.starts_with('.') {
        Some("must not start with '.'".to_owned())
    } else {
        None
    }
}

/// Why `path` cannot be a file inside a cluster directory (an object's or an index's).
pub(super) fn file_path_problem(path: &str) -> Option<String> {
    for segment in path.split('/') {
        if let Some(reason) = segment_problem(segment) {
            return Some(format!("segment {segment:?}: {reason}"));
        }
    }
    match path.ends_with(".yaml") {
        false => Some("must end in .yaml".to_owned()),
        true => None,
    }
}

/// Why `path` cannot be an object path inside a cluster directory: a file path that is no
/// layout's index file ([`crate::render::layout::is_index_path`]).
pub(super) fn object_path_problem(path: &str) -> Option<String> {
    file_path_problem(path).or_else(|| {
        crate::render::layout::is_index_path(path).then(|| "reserved for a generated index file".to_owned())
    })
}

/// Validates the whole plan without touching the disk.
pub(super) fn validate(plan: &PublishPlan) -> Result<(), PublishError> {
    let reserved = plan.layout.reserved_cluster();
    for cluster in plan.roots.iter().flatten() {
        if let Some(reason) = cluster_problem(cluster) {
            return Err(PublishError::UnsafeCluster { cluster: cluster.clone(), reason });
        }
    }
    for cluster in plan.clusters.keys().chain(plan.roots.iter().flatten()) {
        if reserved == Some(cluster.as_str()) {
            let reason = "reserved under [output] layout = \"flux\" for the directory of its root files".to_owned();
            return Err(PublishError::UnsafeCluster { cluster: cluster.clone(), reason });
        }
    }
    for (cluster, files) in &plan.clusters {
        if let Some(reason) = cluster_problem(cluster) {
            return Err(PublishError::UnsafeCluster { cluster: cluster.clone(), reason });
        }
        for path in files.files.keys().chain(&files.keep) {
            if let Some(reason) = object_path_problem(path) {
                return Err(PublishError::UnsafePath { cluster: cluster.clone(), path: path.clone(), reason });
            }
        }
        for (path, content) in &files.files {
            if !has_header(content.as_bytes()) {
                return Err(PublishError::MissingHeader { cluster: cluster.clone(), path: path.clone() });
            }
        }
        // A file may not double as a directory of another file (or of an index file).
        let all: BTreeSet<&str> =
            files.files.keys().map(String::as_str).chain(plan.layout.index_paths().iter().copied()).collect();
        for file in &all {
            let prefix = format!("{file}/");
            if let Some(other) = all.range(prefix.as_str()..).next()
                && other.starts_with(&prefix)
            {
                return Err(PublishError::PathConflict {
                    cluster: cluster.clone(),
                    file: (*file).to_owned(),
                    other: (*other).to_owned(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_fixtures::{cluster, plan, summary_plan};
    use super::*;
    use crate::publish::{ClusterFiles, publish};
    use std::fs;
    use tempfile::TempDir;

    #[test]
    fn check_segment_rules() {
        for ok in ["a", "default", "apps_deployment_web.yaml", "a-b.c_d", "_cluster", "0"] {
            assert!(check_segment(ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(254);
        for bad in ["", ".", "..", "a/b", "A", "a b", "a\0b", "ü", "a:b", long.as_str()] {
            let err = check_segment(bad).expect_err(bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "error names the value: {err}");
        }
        assert!(check_segment(&"a".repeat(253)).is_ok());
    }

    #[test]
    fn unsafe_plans_are_rejected_with_nothing_written() {
        let bad_plans = vec![
            plan(vec![("../escape", cluster(&[], &[]))], None),
            plan(vec![(".fedsched", cluster(&[], &[]))], None),
            plan(vec![(".git", cluster(&[], &[]))], None),
            plan(vec![("Member", cluster(&[], &[]))], None),
            plan(vec![("", cluster(&[], &[]))], None),
            plan(vec![("m", cluster(&[("../x.yaml", "")], &[]))], None),
            plan(vec![("m", cluster(&[("/abs.yaml", "")], &[]))], None),
            plan(vec![("m", cluster(&[("a//b.yaml", "")], &[]))], None),
            plan(vec![("m", cluster(&[("a/./b.yaml", "")], &[]))], None),
            plan(vec![("m", cluster(&[("x.json", "")], &[]))], None),
            plan(vec![("m", cluster(&[("Web.yaml", "")], &[]))], None),
            plan(vec![("m", cluster(&[("kustomization.yaml", "")], &[]))], None),
            plan(vec![("m", cluster(&[("a.yaml", ""), ("a.yaml/b.yaml", "")], &[]))], None),
            plan(vec![("m", cluster(&[("kustomization.yaml/b.yaml", "")], &[]))], None),
            plan(vec![("m", cluster(&[], &["../../etc/passwd.yaml"]))], None),
        ];
        for (i, bad) in bad_plans.iter().enumerate() {
            // A good cluster first, so a partial write would show.
            let mut bad = bad.clone();
            bad.clusters.insert("aaa-good".to_owned(), cluster(&[("x.yaml", "")], &[]));
            bad.summary = Some(summary_plan("{}"));
            let dir = TempDir::new().expect("tempdir");
            let out = dir.path().join("out");
            let err = publish(&out, &bad).expect_err(&format!("plan {i} must be rejected"));
            assert!(!err.to_string().is_empty());
            assert!(!out.exists(), "plan {i} ({err}) wrote something");
            assert!(fs::read_dir(dir.path()).expect("read_dir").next().is_none());
        }
        // Content without the header is rejected too.
        let mut no_header = plan(vec![("m", ClusterFiles::default())], None);
        if let Some(c) = no_header.clusters.get_mut("m") {
            c.files.insert("a.yaml".to_owned(), "kind: X\n".to_owned());
        }
        let dir = TempDir::new().expect("tempdir");
        let out = dir.path().join("out");
        let err = publish(&out, &no_header).expect_err("missing header");
        assert!(matches!(err, PublishError::MissingHeader { .. }), "{err}");
        assert!(!out.exists());
        // The offending value is named.
        let err = publish(&out, &plan(vec![("m", cluster(&[("Bad.yaml", "")], &[]))], None)).expect_err("bad path");
        assert!(err.to_string().contains("\"Bad.yaml\""), "{err}");
    }
}
