//! The output checked by tools nobody here wrote: `kubectl kustomize` must build every cluster
//! directory, and PyPI's `kubernetes-validate` must accept every object of a known kind. Both
//! run offline (under `unshare -n` when it works). A missing tool is a failure, never a skip:
//! `.ci/run` installs both into `.venv-ci`, and `cargo test` alone provisions them ([`crate::tools`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;

use crate::tools::{kubectl, kubernetes_validate};

/// Runs `tool args` without network when `unshare -n` works here (it needs root).
fn offline(tool: &Path, args: &[&str], dir: &Path) -> Output {
    let unshare_works =
        Command::new("unshare").args(["-n", "true"]).output().map(|o| o.status.success()).unwrap_or(false);
    let mut c = if unshare_works {
        let mut c = Command::new("unshare");
        c.arg("-n").arg(tool);
        c
    } else {
        Command::new(tool)
    };
    c.args(args).current_dir(dir).output().unwrap_or_else(|e| panic!("run {}: {e}", tool.display()))
}

/// Object files (not kustomizations) below `dir`, relative, sorted.
fn object_files(dir: &Path) -> Vec<String> {
    tree(dir)
        .into_keys()
        .filter(|k| k.ends_with(".yaml") && !k.ends_with("kustomization.yaml") && !k.starts_with(".fedsched/"))
        .collect()
}

/// Every directory holding a kustomization.yaml below `dir`.
fn cluster_dirs(dir: &Path) -> Vec<PathBuf> {
    tree(dir).into_keys().filter_map(|k| k.strip_suffix("/kustomization.yaml").map(|c| dir.join(c))).collect()
}

/// The outputs checked: the demo rendered now, and every golden output of the repository.
fn outputs() -> (Scratch, Vec<PathBuf>) {
    let s = Scratch::with_demo();
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut dirs = vec![s.out()];
    let golden = repo_root().join("tests/golden");
    let mut names: Vec<_> = std::fs::read_dir(&golden).expect("golden dir").map(|e| e.expect("entry").path()).collect();
    names.sort();
    dirs.extend(names.into_iter().filter(|p| p.is_dir()));
    (s, dirs)
}

#[test]
fn kubectl_kustomize_builds_every_cluster_directory() {
    let kubectl = kubectl();
    let (_s, dirs) = outputs();
    let mut built = 0;
    for out in &dirs {
        for cluster in cluster_dirs(out) {
            let r = offline(&kubectl, &["kustomize", "."], &cluster);
            assert!(r.status.success(), "kubectl kustomize {} failed:\n{}", cluster.display(), text(&r.stderr));
            // Every listed object comes out (an empty kustomization builds to nothing).
            let objects = object_files(&cluster).len();
            let docs = text(&r.stdout).lines().filter(|l| l.starts_with("kind: ")).count();
            assert_eq!(docs, objects, "{}: {}", cluster.display(), text(&r.stdout));
            built += 1;
        }
    }
    assert!(built >= 5, "only {built} cluster directories checked");
}

#[test]
fn kubernetes_validate_accepts_every_object() {
    let tool = kubernetes_validate();
    let (_s, dirs) = outputs();
    let mut checked = 0;
    for out in &dirs {
        let files = object_files(out);
        if files.is_empty() {
            continue;
        }
        let mut args = vec!["--strict", "--quiet", "-k", "1.33"];
        args.extend(files.iter().map(String::as_str));
        let r = offline(&tool, &args, out);
        assert!(
            r.status.success(),
            "kubernetes-validate rejected output in {}:\n{}{}",
            out.display(),
            text(&r.stdout),
            text(&r.stderr)
        );
        checked += files.len();
    }
    assert!(checked >= 30, "only {checked} objects checked");

    // Negative control: the validator is not a no-op.
    let bad = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        bad.path().join("bad.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: \"2\"\n  \
         selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      \
         containers: [{name: c, image: i}]\n",
    )
    .expect("write");
    let r = offline(&tool, &["--strict", "--quiet", "-k", "1.33", "bad.yaml"], bad.path());
    assert!(!r.status.success(), "a string replica count must be rejected: {}", text(&r.stdout));
}
