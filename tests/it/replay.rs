//! `fedsched replay`: recorded decisions made again on their stored inputs. Every decision of
//! offline and live scenarios (the simulator, members filling up, a workload added while the
//! daemon runs) replays `identical`; a profile that scores differently makes replay report
//! the differences and exit 2; one decision by `KIND/NS/NAME[@SEQ]`; `--since`.

use std::time::Duration;

use serde_json::Value;

use super::live::{APP, WATCHED, daemon, setup, wait_until_watching};
use super::support::*;

fn replay(s: &Scratch, config: Option<&std::path::Path>, extra: &[&str]) -> (i32, String, String) {
    let state = s.state().display().to_string();
    let mut args: Vec<String> = Vec::new();
    if let Some(c) = config {
        args.extend(["-c".into(), c.display().to_string()]);
    }
    args.extend(["replay".into(), "--state".into(), state]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = fedsched(&refs);
    (o.status.code().unwrap_or(-1), text(&o.stdout), text(&o.stderr))
}

fn replay_json(s: &Scratch, config: Option<&std::path::Path>, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["-o", "json"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = replay(s, config, &args);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("replay -o json: {e}\n{stdout}\n{stderr}"));
    (code, doc)
}

/// Every decision replays identical, with its differences list empty, and none is unreplayable.
fn assert_all_identical(doc: &Value) {
    assert!(doc["replayed"].as_u64().unwrap_or(0) > 0, "{doc:#}");
    assert_eq!(doc["identical"], doc["replayed"], "{doc:#}");
    assert_eq!((doc["different"].as_u64(), doc["notReplayable"].as_u64()), (Some(0), Some(0)), "{doc:#}");
}

/// The demo rendered, edited (weights, a removed workload) and rendered again: every decision
/// replays identical; one by name, by @SEQ; `--since` in the future replays nothing.
#[test]
fn every_decision_of_offline_passes_replays_identical() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let p = s.policies().join("policies/shop.yaml");
    let body = std::fs::read_to_string(&p).expect("read");
    std::fs::write(&p, body.replacen("weight: 2", "weight: 5", 1)).expect("write");
    std::fs::remove_file(s.policies().join("apps/edge.yaml")).expect("rm");
    let o = s.render();
    assert!(o.status.success(), "{}", text(&o.stderr));

    let (code, doc) = replay_json(&s, None, &["--all"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_all_identical(&doc);
    assert!(doc["passes"].as_u64().unwrap_or(0) >= 2, "{doc:#}");

    let (code, stdout, _) = replay(&s, None, &["Deployment/shop/web"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.ends_with(": identical\n") && stdout.starts_with("Deployment/shop/web@"), "{stdout}");
    let first = doc["decisions"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["workload"] == "Deployment/shop/web"))
        .and_then(|d| d["seq"].as_u64())
        .expect("a record of web");
    let (code, stdout, _) = replay(&s, None, &[&format!("Deployment/shop/web@{first}")]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout, format!("Deployment/shop/web@{first}: identical\n"));

    let (code, _, stderr) = replay(&s, None, &["Deployment/shop/nope"]);
    assert_eq!(code, 1, "{stderr}");
    let (code, doc) = replay_json(&s, None, &["--all", "--since", "2999-01-01T00:00:00Z"]);
    assert_eq!((code, doc["replayed"].as_u64()), (0, Some(0)), "{doc:#}");
}

/// A test-only profile that scores differently at replay time (bin-pack instead of spread):
/// the probe's decision comes out different, named with its clusters, and replay exits 2;
/// the decisions of the other profile stay identical.
#[test]
fn a_profile_that_scores_differently_makes_replay_report_differences() {
    let s = Scratch::with_demo();
    s.write("probe.yaml", &probe(Some("probe-score")));
    // Each decision on the declared status of the demo's offline members (`offline_deductions =
    // false`): the probe's new placement does not change what the pass's later decisions see
    // there, so they stay identical (with the deductions, they would read other free amounts).
    let model = "[model]\noffline_deductions = false\n";
    let recorded = s.dir.path().join("recorded.toml");
    std::fs::write(&recorded, format!("{model}[profiles.probe-score]\nscores = {{ least-allocated = 1 }}\n"))
        .expect("config");
    let changed = s.dir.path().join("changed.toml");
    std::fs::write(&changed, format!("{model}[profiles.probe-score]\nscores = {{ most-allocated = 1 }}\n"))
        .expect("config");
    let (p, o, st) =
        (s.policies().display().to_string(), s.out().display().to_string(), s.state().display().to_string());
    let r = fedsched(&["-c", &recorded.display().to_string(), "render", "--policies", &p, "--out", &o, "--state", &st]);
    assert!(r.status.success(), "{}", text(&r.stderr));

    let (code, doc) = replay_json(&s, Some(&recorded), &["--all"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_all_identical(&doc);

    let (code, stdout, _) = replay(&s, Some(&changed), &["Deployment/shop/probe"]);
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.contains(": different\n"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("  + ") || l.starts_with("  - ")), "{stdout}");
    let (code, doc) = replay_json(&s, Some(&changed), &["--all"]);
    assert_eq!(code, 2);
    assert_eq!(doc["different"], 1, "{doc:#}");
    let (code, text_all, _) = replay(&s, Some(&changed), &["--all"]);
    assert_eq!(code, 2);
    assert!(text_all.contains("1 different") && text_all.contains("Deployment/shop/probe@"), "{text_all}");
}

/// Live members on the simulator: the daemon places web, a member fills up, a workload is
/// added and placed elsewhere (its replicas assumed, the full member's pods seen through the
/// watch); replay works while the daemon holds the store, and after it stops every decision
/// of the store replays identical.
#[test]
fn every_decision_of_a_live_scenario_replays_identical() {
    let t = setup(3, true, WATCHED);
    let (mut child, log) = daemon(&t, "info");
    let clusters = ["member-000", "member-001", "member-002"];
    wait_until_watching(&t, &clusters);
    t.sim.fill("member-000");
    let api_yaml = APP.split_once("---\n").map(|(_, rest)| rest).expect("documents");
    let api_yaml = api_yaml
        .replace("{name: web", "{name: api")
        .replace("name: web,", "name: api,")
        .replace("replicas: 6", "replicas: 4")
        .replace("  - {apiVersion: v1, kind: Namespace, name: shop}\n", "");
    std::thread::sleep(Duration::from_secs(3));
    t.s.write("apps/api.yaml", &api_yaml);
    wait_for("api to be placed", Duration::from_secs(60), || {
        placements_of(&t.s.out()).unwrap_or_default().contains("\"api\"")
    });
    std::thread::sleep(Duration::from_secs(2));
    let (code, doc) = replay_json(&t.s, Some(&t.config), &["--all"]);
    assert_eq!(code, 0, "while the daemon runs: {doc:#}");
    assert_all_identical(&doc);

    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().expect("lock").clone();
    assert!(!l.contains("panicked"), "{l}");
    let (code, doc) = replay_json(&t.s, Some(&t.config), &["--all"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_all_identical(&doc);
}
