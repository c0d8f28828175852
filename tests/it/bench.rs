//! `fedsched bench` on a tiny fleet: every scenario runs, and a mark set for
//! W = 10,000 × C = 1,000 × N = 100 is never judged met at another size — only the explicitly
//! scaled and size-free marks are.

use crate::support::*;

#[test]
fn marks_are_judged_only_at_their_size_or_scaled_explicitly() {
    let s = Scratch::new();
    let dir = s.dir.path().join("bench");
    let o = fedsched(&[
        "bench",
        "--clusters",
        "3",
        "--workloads",
        "8",
        "--nodes",
        "2",
        "--pods",
        "4",
        "--runs",
        "1",
        "--passes",
        "2",
        "--scenario",
        "S1,S2,S3,S4,S6,S7",
        "--dir",
        dir.to_str().expect("utf8"),
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    let marked: Vec<&str> = out.lines().filter(|l| l.contains("   mark ")).collect();
    // The headline figure of each timed scenario carries its absolute mark, not judged here.
    for s in ["S1", "S2", "S3", "S4", "S7"] {
        let headline = marked.iter().find(|l| l.starts_with(&format!("{s} ")) && !l[3..].starts_with(' '));
        let headline = headline.unwrap_or_else(|| panic!("no marked headline for {s}:\n{out}"));
        assert!(
            headline.contains("is set for W=10,000 × C=1,000 × N=100, this is W=8 × C=3 × N=2: not judged"),
            "{headline}"
        );
    }
    // Every judged mark says how it applies at this size.
    for l in &marked {
        let judged = l.ends_with(": met") || l.ends_with(": NOT met");
        assert_eq!(judged, !l.ends_with(": not judged"), "{l}");
        if judged {
            assert!(l.contains("(scaled from") || l.contains("(any size)") || l.contains("(projected)"), "{l}");
        }
    }
    // The scaled marks: per pair (S1), per file (S2), per workload (S7); the shares of S2.
    for want in ["per pair (scaled from ≤ 500 ms", "per file (scaled from ≤ 10 s", "per workload (scaled from ≤ 2 s"]
    {
        assert!(marked.iter().any(|l| l.contains(want)), "no {want:?}:\n{out}");
    }
    assert_eq!(marked.iter().filter(|l| l.contains("≤ 1 % of S2 (any size)")).count(), 2, "{out}");
    // The store and output directories a run replaces are moved aside, then removed after its
    // last figure: a second run over the first's directories leaves nothing aside either.
    let retired = dir.join(".retired");
    assert!(!retired.exists(), "the first run left {}", retired.display());
    let stale = dir.join("out").join("stale-marker");
    std::fs::write(&stale, "from the first run").expect("marker");
    let args = ["bench", "--clusters", "3", "--workloads", "8", "--nodes", "2", "--pods", "4", "--runs", "2"];
    let again = fedsched(&[&args[..], &["--scenario", "S2", "--dir", dir.to_str().expect("utf8")]].concat());
    assert!(again.status.success(), "{}{}", text(&again.stdout), text(&again.stderr));
    assert!(!retired.exists(), "the second run left {}", retired.display());
    assert!(!stale.exists(), "the second run's output is a fresh directory");
    assert!(dir.join("out").join(".fedsched").join("placements").join("00.json").is_file());
}
