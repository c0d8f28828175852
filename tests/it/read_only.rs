//! The commands that only read the store (issue 47, item 9): they write nothing under the
//! state directory, say so when there is no store, and name the user's store — not a private
//! copy — when it is damaged.

use std::path::Path;

use crate::support::*;

/// Every file under `dir` with its bytes and modification time.
fn snapshot(
    dir: &Path,
) -> (std::collections::BTreeMap<String, Vec<u8>>, std::collections::BTreeMap<String, std::time::SystemTime>) {
    (tree(dir), mtimes(dir))
}

#[test]
fn reading_commands_do_not_rewrite_the_store() {
    let s = Scratch::with_demo();
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Let sled's background flush and the render's end settle, then take the state's picture.
    let before = snapshot(&s.state());
    assert!(!before.0.is_empty());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for args in [
        vec!["history", "Deployment/shop/web"],
        vec!["explain", "Deployment/shop/web"],
        vec!["snapshots", "eu-west-a"],
        vec!["status", "Deployment/shop/web"],
        vec!["replay", "--all"],
    ] {
        let out = s.cmd(args[0], &args[1..]);
        // `status` exits with its state's code (the demo's offline members: 5, Unknown).
        let ok = out.status.success() || (args[0] == "status" && out.status.code() == Some(5));
        assert!(ok, "{args:?}: {}", text(&out.stderr));
        let after = snapshot(&s.state());
        assert_eq!(after.1, before.1, "{args:?} changed the modification time of files of the store");
        assert!(after.0 == before.0, "{args:?} changed the bytes of the store");
    }
}

#[test]
fn replay_all_without_a_store_fails_saying_so() {
    let s = Scratch::with_demo();
    for args in [vec!["replay", "--all"], vec!["history", "Deployment/shop/web"]] {
        let out = s.cmd(args[0], &args[1..]);
        assert!(!out.status.success(), "{args:?} on a missing store succeeded: {}", text(&out.stdout));
        let e = text(&out.stderr);
        assert!(e.contains("no store at") && e.contains(&s.state().display().to_string()), "{args:?}: {e}");
        assert!(!s.state().exists(), "{args:?} created the state directory");
    }
}

#[test]
fn a_damaged_store_is_named_by_its_own_path() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    // Garbage over sled's files (same sizes).
    for (rel, bytes) in tree(&s.state().join("db")) {
        if rel == "conf" {
            continue;
        }
        let garbage: Vec<u8> = (0..bytes.len()).map(|i| (i * 7 + 13) as u8).collect();
        std::fs::write(s.state().join("db").join(&rel), garbage).expect("write");
    }
    for args in [vec!["replay", "--all"], vec!["history", "Deployment/shop/web"]] {
        let out = s.cmd(args[0], &args[1..]);
        assert!(!out.status.success(), "{args:?}: {}", text(&out.stdout));
        let e = text(&out.stderr);
        assert!(e.contains(&s.state().join("db").display().to_string()), "{args:?} does not name the store: {e}");
        let tmp = std::env::temp_dir().display().to_string();
        let named_elsewhere =
            e.split_whitespace().any(|w| w.contains(&tmp) && !w.contains(&s.dir.path().display().to_string()));
        assert!(!named_elsewhere, "{args:?} names a private copy: {e}");
    }
}
