//! An emptied policy repository (issue 47, item 9): a bad checkout must not empty every
//! placement without a word.

use crate::support::*;

#[test]
fn an_emptied_repository_is_held_until_confirmed() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let before = tree(&s.out());
    // Every template gone (the policies and clusters stay).
    std::fs::remove_dir_all(s.policies().join("apps")).expect("rm");
    for _ in 0..2 {
        let out = s.render();
        assert!(!out.status.success(), "an emptied repository was published");
        let e = text(&out.stderr);
        assert!(e.contains("places no workload any more") && e.contains("--allow-mass-delete"), "{e}");
        assert_eq!(tree(&s.out()), before, "the output changed");
    }
    let h = s.cmd("history", &["Deployment/shop/web", "-o", "json"]);
    assert!(!text(&h.stdout).contains("removed"), "the placement was recorded as removed: {}", text(&h.stdout));
    // Confirmed: removed.
    let out = s.render_with(&["--allow-mass-delete"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!tree(&s.out()).keys().any(|k| k.ends_with("apps_deployment_web.yaml")));
}
