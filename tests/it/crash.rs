//! The output directory under crashes and competition: `render` killed with SIGKILL after every
//! step of its publish (the test hook `FEDSCHED_TEST_CRASH_AFTER_STEP`), every cluster directory
//! consistent at each of those instants and the next run recovering to exactly the new state;
//! one owner of an output directory at a time (a second daemon, a render); no progress line
//! when the output is not a terminal.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::*;

type Tree = BTreeMap<String, Vec<u8>>;

/// What a GitOps tool reads: the cluster directories and `placements.json`, not fedsched's
/// transient files (lock, owner, journal, staging).
fn published(out: &Path) -> Tree {
    let mut t = tree(out);
    t.retain(|k, _| !k.starts_with(".fedsched/") || k.starts_with(".fedsched/placements/"));
    t
}

/// The paths a `kustomization.yaml` lists.
fn listed(kustomization: &str) -> Vec<String> {
    kustomization.lines().filter_map(|l| l.strip_prefix("- ")).map(str::to_owned).collect()
}

/// Every cluster directory consistent with `old` → `new`: every file its kustomization lists
/// exists, and every file there (kustomization and summary included) has its bytes of the old
/// or of the new state.
fn check_consistent(now: &Tree, old: &Tree, new: &Tree) -> Result<(), String> {
    for (path, bytes) in now {
        if old.get(path) != Some(bytes) && new.get(path) != Some(bytes) {
            return Err(format!("{path} is in neither the old nor the new state"));
        }
        let Some(cluster) = path.strip_suffix("/kustomization.yaml") else { continue };
        for file in listed(&String::from_utf8_lossy(bytes)) {
            if !now.contains_key(&format!("{cluster}/{file}")) {
                return Err(format!("{path} lists {file}, which is not there"));
            }
        }
    }
    Ok(())
}

/// The demo rendered, then a change touching several clusters: more replicas, a removed
/// template, a new ConfigMap in `shop` (a namespace that sorts after `kustomization.yaml`) that
/// the shop policy propagates.
fn rendered_then_changed() -> Scratch {
    let s = Scratch::with_demo();
    let first = s.render_with(&[], &[]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let web = std::fs::read_to_string(s.policies().join("apps/web.yaml")).expect("read");
    s.write("apps/web.yaml", &web.replace("replicas: 9", "replicas: 12"));
    std::fs::remove_file(s.policies().join("apps/edge.yaml")).expect("rm");
    let shop = std::fs::read_to_string(s.policies().join("policies/shop.yaml")).expect("read");
    let selected = "    name: web-config\n";
    assert!(shop.contains(selected), "{shop}");
    s.write(
        "policies/shop.yaml",
        &shop.replacen(selected, "    name: web-config\n  - apiVersion: v1\n    kind: ConfigMap\n    name: extra\n", 1),
    );
    s.write(
        "apps/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: shop}\ndata: {k: v}\n",
    );
    s
}

#[test]
fn sigkill_at_every_publish_step_leaves_every_cluster_directory_consistent() {
    // The reference: the same two renders, no crash.
    let reference = rendered_then_changed();
    let old = published(&reference.out());
    let done = reference.render_with(&[], &[]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let new = published(&reference.out());
    assert_ne!(old, new);
    let added = new.keys().filter(|k| !old.contains_key(*k)).count();
    let removed = old.keys().filter(|k| !new.contains_key(*k)).count();
    assert!(added > 0 && removed > 0, "the change adds and removes files");

    let mut steps = 0;
    for step in 1.. {
        assert!(step < 500, "the publish never finished");
        let s = rendered_then_changed();
        assert_eq!(published(&s.out()), old);
        let crashed = s.render_with(&[], &[("FEDSCHED_TEST_CRASH_AFTER_STEP", &step.to_string())]);
        if crashed.status.success() {
            break; // past the last step: the publish completed
        }
        assert_eq!(crashed.status.signal(), Some(9), "step {step}: killed by SIGKILL: {}", text(&crashed.stderr));
        steps = step;
        if let Err(e) = check_consistent(&published(&s.out()), &old, &new) {
            panic!("killed after step {step}: {e}");
        }
        let next = s.render_with(&[], &[]);
        assert!(next.status.success(), "step {step}: {}", text(&next.stderr));
        assert_eq!(published(&s.out()), new, "the run after a kill at step {step} converges");
        assert!(!s.out().join(".fedsched/journal.json").exists());
    }
    eprintln!("{steps} publish steps ({added} files added, {removed} removed), each killed and recovered");
    // Staged, journal, one step per rename and removal, the last syncfs.
    assert!(steps >= 2 + added + removed, "{steps} steps for {added} added and {removed} removed files");
}

#[test]
fn a_second_daemon_or_a_render_on_an_owned_output_directory_is_refused() {
    let s = Scratch::with_demo();
    let first = Daemon::start(&s, "", &[]);
    wait_for("the first daemon's first pass", Duration::from_secs(60), || first.stderr().contains("reconcile done"));
    let before = published(&s.out());

    // Another state directory, the same output directory.
    let other = s.dir.path().join("state-other");
    let config = s.dir.path().join("second.toml");
    std::fs::write(&config, "[http]\nlisten = \"127.0.0.1:0\"\n").expect("config");
    let second = Command::new(bin())
        .args(["run", "--config"])
        .arg(&config)
        .arg("--policies")
        .arg(s.policies())
        .arg("--out")
        .arg(s.out())
        .arg("--state")
        .arg(&other)
        .env_remove("NOTIFY_SOCKET")
        .env("FEDSCHED_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let refused = output_within(second, Duration::from_secs(30));
    let err = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    let pid = first.child.id().to_string();
    let out = s.out().display().to_string();
    let state = s.state().canonicalize().expect("state").display().to_string();
    for needle in [out.as_str(), pid.as_str(), state.as_str(), "is in use by fedsched run"] {
        assert!(err.contains(needle), "the refusal names {needle}: {err}");
    }

    // A render with its own state directory is refused alike; a plan still works.
    let render_elsewhere = || {
        fedsched(&[
            "render",
            "--policies",
            &s.policies().display().to_string(),
            "--out",
            &out,
            "--state",
            &other.display().to_string(),
        ])
    };
    let o = render_elsewhere();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains(&format!("the output directory {out} is in use")), "{}", text(&o.stderr));
    let plan = s.cmd("plan", &["--out", &out]);
    assert_eq!(plan.status.code(), Some(0), "plan while the daemon runs: {}", text(&plan.stderr));
    assert_eq!(published(&s.out()), before, "nothing was written by the refused ones");

    // Once the daemon is gone, the directory is free again.
    let (code, log) = first.stop();
    assert_eq!(code, Some(0), "{log}");
    let o = render_elsewhere();
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn no_progress_when_the_output_is_not_a_terminal() {
    let s = Scratch::new();
    let fleet = s.dir.path().join("fleet");
    let o = fedsched(&[
        "simulate",
        "--generate",
        "20",
        "--nodes",
        "50",
        "--pods",
        "500",
        "--out",
        &fleet.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "");
    assert_eq!(
        text(&o.stderr),
        format!("wrote 20 clusters (50 nodes, 500 pods each) to {}\n", fleet.display()),
        "only the summary, no progress line"
    );
    assert_eq!(std::fs::read_dir(&fleet).expect("fleet").count(), 20);
}

/// Under `[output] layout = "flux"`, SIGKILL after every step of a publish that brings a
/// cluster back (its directory staged whole, its root file new) and changes the others: at
/// each instant every root file names a cluster directory whose index is in place (a Flux
/// `Kustomization` never points at a directory not yet written), the cluster directories are
/// consistent, and the next run converges.
#[test]
fn sigkill_at_every_publish_step_never_leaves_a_root_file_naming_a_missing_directory() {
    let prepared = || {
        let s = rendered_then_changed();
        let config = crate::render::flux_config(&s, "");
        // The first render without us-east-legacy (after the change: the files of the
        // first render stay the demo's), the second with it.
        std::fs::copy(s.policies().join("clusters/us-east.yaml"), s.dir.path().join("us-east.yaml")).expect("copy");
        let _ = std::fs::remove_dir_all(s.out());
        let _ = std::fs::remove_dir_all(s.state());
        crate::render::drop_legacy_cluster(&s);
        let first = s.render_with(&["--config", &config], &[]);
        assert!(first.status.success(), "{}", text(&first.stderr));
        std::fs::copy(s.dir.path().join("us-east.yaml"), s.policies().join("clusters/us-east.yaml")).expect("copy");
        std::fs::write(
            s.policies().join("apps/more.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: more, namespace: shop}\ndata: {k: v}\n",
        )
        .expect("write");
        (s, config)
    };
    let (reference, config) = prepared();
    let old = published(&reference.out());
    assert!(!old.contains_key("clusters/us-east-legacy/fedsched.yaml"));
    let done = reference.render_with(&["--config", &config], &[]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let new = published(&reference.out());
    assert!(new.contains_key("clusters/us-east-legacy/fedsched.yaml"), "the cluster is back");
    let roots_name_written_directories = |now: &Tree| -> Result<(), String> {
        for path in now.keys() {
            let Some(cluster) = path.strip_prefix("clusters/").and_then(|p| p.strip_suffix("/fedsched.yaml")) else {
                continue;
            };
            if !now.contains_key(&format!("{cluster}/kustomization.yaml")) {
                return Err(format!("{path} names {cluster}, which has no kustomization.yaml yet"));
            }
        }
        Ok(())
    };
    roots_name_written_directories(&new).expect("the new state");
    for step in 1.. {
        assert!(step < 500, "the publish never finished");
        let (s, config) = prepared();
        let crashed = s.render_with(&["--config", &config], &[("FEDSCHED_TEST_CRASH_AFTER_STEP", &step.to_string())]);
        if crashed.status.success() {
            assert!(step > 3, "the publish has steps to kill");
            break;
        }
        assert_eq!(crashed.status.signal(), Some(9), "step {step}: killed by SIGKILL: {}", text(&crashed.stderr));
        let now = published(&s.out());
        if let Err(e) = check_consistent(&now, &old, &new).and_then(|()| roots_name_written_directories(&now)) {
            panic!("killed after step {step}: {e}");
        }
        let next = s.render_with(&["--config", &config], &[]);
        assert!(next.status.success(), "step {step}: {}", text(&next.stderr));
        assert_eq!(published(&s.out()), new, "the run after a kill at step {step} converges");
    }
}
