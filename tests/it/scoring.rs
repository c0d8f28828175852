//! Scorers change placements as documented, on the demo fleet: a Duplicated workload limited
//! to one cluster (`maxGroups: 1`) lands on a different cluster under each profile.

use crate::support::*;

const CONFIG: &str = r#"
[profiles.spread]
scores = { least-allocated = 1 }

[profiles.binpack]
scores = { most-allocated = 1 }

[profiles.cheapest]
scores = { cost-first = 1 }

[cost.regions.eu-west-1]
cpu = 0.048
memory = 0.006

[cost.regions.us-east-1]
cpu = 0.031
memory = 0.004
"#;

/// Renders the demo plus the probe under a profile; returns the probe's clusters and the
/// explain document.
fn placed_under(profile: Option<&str>) -> (Vec<String>, serde_json::Value) {
    let s = Scratch::with_demo();
    s.write("probe.yaml", &probe(profile));
    let cfg = s.dir.path().join("fedsched.toml");
    std::fs::write(&cfg, CONFIG).expect("config");
    let cfg = cfg.display().to_string();
    let (p, o, st) =
        (s.policies().display().to_string(), s.out().display().to_string(), s.state().display().to_string());
    let out = fedsched(&["-c", &cfg, "render", "--policies", &p, "--out", &o, "--state", &st]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out =
        fedsched(&["-c", &cfg, "explain", "Deployment/shop/probe", "-o", "json", "--policies", &p, "--state", &st]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let clusters = doc["output"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    (clusters, doc)
}

#[test]
fn profiles_pick_different_clusters_on_the_demo_fleet() {
    // karmada-default: no score difference on a first schedule, so the cluster with the most
    // available replicas wins (us-east-gpu: 56 free cores).
    let (karmada, doc) = placed_under(None);
    assert_eq!(karmada, ["us-east-gpu"], "{doc}");
    assert_eq!(doc["profile"], "karmada-default");
    // least-allocated: the emptiest cluster (eu-west-a, ~35 % used).
    let (spread, doc) = placed_under(Some("spread"));
    assert_eq!(spread, ["eu-west-a"], "{doc}");
    assert_eq!(doc["profile"], "spread");
    let a = doc["clusters"].as_array().and_then(|c| c.iter().find(|c| c["name"] == "eu-west-a")).expect("eu-west-a");
    assert_eq!(a["scores"]["least-allocated"], 100, "{a}");
    // most-allocated: bin-pack onto the fullest cluster that fits (eu-west-b, ~80 % used).
    let (binpack, doc) = placed_under(Some("binpack"));
    assert_eq!(binpack, ["eu-west-b"], "{doc}");
    // cost-first: us-east-1 is cheaper per core and GiB.
    let (cheapest, doc) = placed_under(Some("cheapest"));
    assert_eq!(cheapest, ["us-east-gpu"], "{doc}");
    let gpu = doc["clusters"].as_array().and_then(|c| c.iter().find(|c| c["name"] == "us-east-gpu")).expect("gpu");
    assert_eq!(gpu["scores"]["cost-first"], 100, "{gpu}");
    // Explain carries the estimators' answers and the data each cluster was seen with.
    assert!(gpu["estimators"]["resource-summary"].as_i64().is_some_and(|n| n > 0), "{gpu}");
    assert!(gpu["data"]["observedAt"].is_string(), "{gpu}");
}

#[test]
fn unknown_profile_is_reported_by_check() {
    let s = Scratch::with_demo();
    s.write("probe.yaml", &probe(Some("turbo")));
    let out = fedsched(&["check", "--policies", &s.policies().display().to_string()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("fedsched.io/profile") && stdout.contains("turbo"), "{stdout}");
}
