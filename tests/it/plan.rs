//! `fedsched plan`: the daemon's next pass over a changed repository with nothing written —
//! compared with what was last published, or with a base repository (`--base`, `--base-ref`);
//! text, JSON and Markdown; exit 0 no change, 2 changes, 1 invalid input. Plan predicts exactly
//! what the following `render` does (a property test over generated repositories and edits),
//! and works while a daemon holds the store.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;

use super::support::{Daemon, Scratch, copy_dir, fedsched, placements_of, text, tree, wait_for};

fn plan(s: &Scratch, extra: &[&str]) -> (i32, String, String) {
    let out = s.dir.path().join("out").display().to_string();
    let mut args = vec!["--out", out.as_str()];
    args.extend_from_slice(extra);
    let o = s.cmd("plan", &args);
    (o.status.code().unwrap_or(-1), text(&o.stdout), text(&o.stderr))
}

fn plan_json(s: &Scratch, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["-o", "json"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = plan(s, &args);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("plan -o json: {e}\n{stdout}\n{stderr}"));
    (code, doc)
}

fn rendered(s: &Scratch) {
    let o = s.render();
    assert!(o.status.success(), "render: {}", text(&o.stderr));
}

fn workload<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["workloads"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["workload"] == name))
        .unwrap_or_else(|| panic!("{name} not in the plan: {doc:#}"))
}

fn edit(s: &Scratch, rel: &str, from: &str, to: &str) {
    let p = s.policies().join(rel);
    let body = std::fs::read_to_string(&p).expect("read");
    assert!(body.contains(from), "{rel} has no {from:?}");
    std::fs::write(&p, body.replacen(from, to, 1)).expect("write");
}

/// Unchanged repository: exit 0, "No changes"; the store and the output stay byte for byte.
#[test]
fn an_unchanged_repository_plans_no_change_and_writes_nothing() {
    let s = Scratch::with_demo();
    rendered(&s);
    let (state, out) = (tree(&s.state()), tree(&s.out()));
    let (code, stdout, stderr) = plan(&s, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("No changes: 10 workloads"), "{stdout}");
    assert_eq!(tree(&s.state()), state, "plan changed the store");
    assert_eq!(tree(&s.out()), out, "plan changed the output");
}

/// A weight edit: the placement diff, the changed files and their unified diff, in text, JSON
/// and Markdown; exit 2; nothing written; the next render changes exactly those files.
#[test]
fn an_edit_plans_the_placement_diff_and_the_files_the_render_then_writes() {
    let s = Scratch::with_demo();
    rendered(&s);
    edit(&s, "policies/shop.yaml", "weight: 2", "weight: 5");
    let (state, out) = (tree(&s.state()), tree(&s.out()));

    let (code, stdout, _) = plan(&s, &["--diff"]);
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.contains("Deployment/shop/web\n  eu-west-b: 3 → 4\n  us-east-gpu: 2 → 1\n"), "{stdout}");
    assert!(stdout.contains("  eu-west-b\n    ~ shop/apps_deployment_web.yaml\n"), "{stdout}");
    assert!(stdout.contains("-  replicas: 3\n+  replicas: 4\n"), "{stdout}");

    let (code, doc) = plan_json(&s, &[]);
    assert_eq!(code, 2);
    assert_eq!(doc["changes"], true);
    assert_eq!(doc["summary"]["changed"], 1, "{doc:#}");
    let web = workload(&doc, "Deployment/shop/web");
    assert_eq!(web["change"], "placement");
    let eu_b = web["placement"].as_array().and_then(|p| p.iter().find(|p| p["cluster"] == "eu-west-b")).expect("eu-b");
    assert_eq!((eu_b["before"]["replicas"].as_i64(), eu_b["after"]["replicas"].as_i64()), (Some(3), Some(4)));

    let (code, md, _) = plan(&s, &["-o", "markdown"]);
    assert_eq!(code, 2);
    assert!(md.starts_with("### fedsched plan\n\nPlan: 1 of 10 workloads change"), "{md}");
    assert!(md.contains("| files changed | 2 |") && md.contains("<details><summary>Workloads (1)</summary>"), "{md}");
    assert_eq!(tree(&s.state()), state, "plan changed the store");
    assert_eq!(tree(&s.out()), out, "plan changed the output");

    rendered(&s);
    let changed: BTreeSet<String> = diff_paths(&out, &tree(&s.out()));
    let expected: BTreeSet<String> =
        ["eu-west-b/shop/apps_deployment_web.yaml", "us-east-gpu/shop/apps_deployment_web.yaml"]
            .into_iter()
            .map(String::from)
            .chain(std::iter::once(SUMMARY.to_string()))
            .collect();
    assert_eq!(summary_as_one(changed), expected);
    let (code, _, _) = plan(&s, &[]);
    assert_eq!(code, 0, "after the render, nothing is left to plan");
}

fn diff_paths(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>) -> BTreeSet<String> {
    a.keys().chain(b.keys()).filter(|k| a.get(*k) != b.get(*k)).cloned().collect()
}

/// `--base DIR` compares two repositories on the same store: the same edit shows, an equal base
/// shows nothing; `--base-ref` takes the base from git history.
#[test]
fn a_base_repository_or_git_ref_isolates_the_change() {
    let s = Scratch::with_demo();
    rendered(&s);
    let base = s.dir.path().join("base");
    copy_dir(&s.policies(), &base);
    edit(&s, "policies/shop.yaml", "weight: 2", "weight: 5");
    let base_arg = base.display().to_string();
    let (code, doc) = plan_json(&s, &["--base", &base_arg]);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(doc["base"], true);
    assert_eq!(workload(&doc, "Deployment/shop/web")["change"], "placement");
    assert_eq!(doc["summary"]["changed"], 1, "{doc:#}");

    copy_dir(&s.policies(), &base);
    let (code, doc) = plan_json(&s, &["--base", &base_arg]);
    assert_eq!((code, &doc["changes"]), (0, &Value::Bool(false)), "{doc:#}");

    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .arg("-C")
            .arg(s.policies())
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .expect("git");
        assert!(o.status.success(), "git {args:?}: {}", text(&o.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    edit(&s, "policies/shop.yaml", "weight: 5", "weight: 1");
    let (code, doc) = plan_json(&s, &["--base-ref", "HEAD"]);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(workload(&doc, "Deployment/shop/web")["change"], "placement");
    let (code, _, stderr) = plan(&s, &["--base-ref", "no-such-ref"]);
    assert_eq!(code, 1, "{stderr}");
}

/// Invalid input exits 1 and names the file.
#[test]
fn an_invalid_repository_exits_1() {
    let s = Scratch::with_demo();
    rendered(&s);
    s.write(
        "apps/broken.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: shop}\nspec: [\n",
    );
    let (code, _, stderr) = plan(&s, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("broken.yaml"), "{stderr}");
}

/// A better policy takes a template (claim change with its reason), a workload made
/// unschedulable is reported with the reason, a removed one too.
#[test]
fn claim_changes_newly_unschedulable_and_removed_workloads() {
    let s = Scratch::with_demo();
    rendered(&s);
    // api moves to a policy that names it (more specific, same priority) … with an affinity
    // to a cluster that does not exist: newly unschedulable.
    s.write(
        "policies/api-pinned.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: a-pinned, namespace: shop}\n\
         spec:\n  priority: 100\n  preemption: Always\n  resourceSelectors:\n  - {apiVersion: apps/v1, kind: Deployment, name: web}\n\
         \x20 placement:\n    clusterAffinity: {clusterNames: [nowhere]}\n",
    );
    std::fs::remove_file(s.policies().join("apps/edge.yaml")).expect("rm");
    let (code, doc) = plan_json(&s, &[]);
    assert_eq!(code, 2, "{doc:#}");
    let web = workload(&doc, "Deployment/shop/web");
    assert_eq!(web["change"], "newly-unschedulable", "{web:#}");
    assert_eq!(web["claim"]["before"], "PropagationPolicy/shop/web", "{web:#}");
    assert_eq!(web["claim"]["after"], "PropagationPolicy/shop/a-pinned", "{web:#}");
    assert!(
        web["claim"]["reason"].as_str().is_some_and(|r| r.contains("preempted by PropagationPolicy/shop/a-pinned")),
        "{web:#}"
    );
    assert!(web["reason"].as_str().is_some_and(|r| !r.is_empty()), "{web:#}");
    let removed: Vec<&Value> =
        doc["workloads"].as_array().expect("workloads").iter().filter(|w| w["change"] == "removed").collect();
    assert!(!removed.is_empty(), "{doc:#}");
}

/// Removing every template of a cluster: the mass-deletion guard would hold it, and says so.
#[test]
fn the_mass_deletion_guard_holds_are_planned() {
    let s = Scratch::with_demo();
    rendered(&s);
    for f in ["api.yaml", "edge.yaml", "trainer.yaml", "web.yaml"] {
        std::fs::remove_file(s.policies().join("apps").join(f)).expect("rm");
    }
    let (code, doc) = plan_json(&s, &[]);
    assert_eq!(code, 2);
    let held = doc["held"].as_array().expect("held");
    assert!(!held.is_empty(), "{doc:#}");
    assert!(held[0]["message"].as_str().is_some_and(|m| m.contains("mass-deletion guard")), "{doc:#}");
    let o = s.render();
    for h in held {
        let cluster = h["cluster"].as_str().expect("cluster");
        assert!(text(&o.stderr).contains(&format!("held: {cluster}:")), "render did not hold {cluster}");
    }
}

/// A repository that places no workload any more: the render writes and records nothing
/// (the emptied-repository hold), and the plan says so beforehand, in each of its forms.
#[test]
fn an_emptied_repository_is_planned_as_held() {
    let s = Scratch::with_demo();
    rendered(&s);
    let apps = s.policies().join("apps");
    for e in std::fs::read_dir(&apps).expect("apps") {
        std::fs::remove_file(e.expect("entry").path()).expect("rm");
    }
    let (code, doc) = plan_json(&s, &[]);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(doc["changes"], true);
    let held = doc["emptied"].as_str().unwrap_or_else(|| panic!("no emptied hold planned: {doc:#}"));
    assert!(held.contains("places no workload any more"), "{held}");
    let (_, txt, _) = plan(&s, &[]);
    assert!(txt.contains(&format!("held: {held}")), "{txt}");
    let (_, md, _) = plan(&s, &["-o", "markdown"]);
    assert!(md.contains("**held**: the policy repository places no workload"), "{md}");
    let before = tree(&s.out());
    let o = s.render();
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains(held), "{}", text(&o.stderr));
    assert_eq!(tree(&s.out()), before, "the held render wrote the output");
}

/// While a daemon holds the store, plan reads a copy of it and answers.
#[test]
fn plan_works_while_the_daemon_holds_the_store() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[]);
    wait_for("the daemon's first pass", std::time::Duration::from_secs(60), || {
        s.out().join(".fedsched/placements/ff.json").exists()
    });
    let store_locked = fedsched(&[
        "render",
        "--policies",
        &s.policies().display().to_string(),
        "--out",
        &s.out().display().to_string(),
        "--state",
        &s.state().display().to_string(),
    ]);
    assert!(!store_locked.status.success(), "the daemon holds the store");
    let base = s.dir.path().join("base");
    copy_dir(&s.policies(), &base);
    edit(&s, "policies/shop.yaml", "weight: 2", "weight: 5");
    let (code, doc) = plan_json(&s, &["--base", &base.display().to_string()]);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(workload(&doc, "Deployment/shop/web")["change"], "placement");
    let _ = d.stop();
}

/// While a daemon runs, `plan` asks it (its address from the state directory): the same
/// document as a plan in this process (`--local`, on a copy of the store), nothing written to
/// the output; an invalid repository is exit 1 with its errors; an explicit `--server` that
/// does not answer is a failure, not a silent local plan.
#[test]
fn plan_through_the_daemon_equals_a_plan_in_process() {
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[]);
    // The first pass finished (its journal removed, then its record and the daemon's status,
    // which holds the planner: until then the daemon answers 503 and `plan` plans in its own
    // process): the output stays as it is from here.
    wait_for("the daemon's first pass", std::time::Duration::from_secs(60), || {
        s.out().join(".fedsched/placements/ff.json").exists()
            && !s.out().join(".fedsched/journal.json").exists()
            && d.stderr().contains("reconcile done")
    });
    // The pull request: a copy of the repository (the daemon does not watch it), edited.
    let pr = s.dir.path().join("pr");
    copy_dir(&s.policies(), &pr);
    let p = pr.join("policies/shop.yaml");
    let body = std::fs::read_to_string(&p).expect("read");
    std::fs::write(&p, body.replacen("weight: 2", "weight: 5", 1)).expect("write");
    let dirs = |pr: &Path| {
        vec![
            "plan".to_string(),
            "--policies".into(),
            pr.display().to_string(),
            "--state".into(),
            s.state().display().to_string(),
            "--out".into(),
            s.out().display().to_string(),
            "-o".into(),
            "json".into(),
        ]
    };
    let run = |extra: &[&str]| {
        let mut args = dirs(&pr);
        args.extend(extra.iter().map(|a| a.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = fedsched(&refs);
        let doc: Value = serde_json::from_str(&text(&o.stdout)).unwrap_or(Value::Null);
        (o.status.code().unwrap_or(-1), doc, text(&o.stderr))
    };
    let before = tree(&s.out());
    let (code, daemon, stderr) = run(&[]);
    assert_eq!(code, 2, "{daemon:#}\n{stderr}");
    assert!(!stderr.contains("planning in this process"), "the daemon did not answer: {stderr}");
    wait_for("the daemon's log of the plan", std::time::Duration::from_secs(10), || {
        d.stderr().contains("plan answered")
    });
    assert_eq!(workload(&daemon, "Deployment/shop/web")["change"], "placement");
    let (code, local, stderr) = run(&["--local"]);
    assert_eq!(code, 2, "{local:#}\n{stderr}");
    assert_eq!(daemon, local, "the daemon and the process plan differently");
    assert!(tree(&s.out()) == before, "a plan wrote to the output");
    // With a base: only the change shows, as in process.
    let base = s.dir.path().join("base");
    copy_dir(&s.policies(), &base);
    let (code, with_base, _) = run(&["--base", &base.display().to_string()]);
    let (_, with_base_local, _) = run(&["--base", &base.display().to_string(), "--local"]);
    assert_eq!(code, 2);
    assert_eq!(with_base, with_base_local);
    // An invalid repository: exit 1, the error named on stderr.
    std::fs::write(pr.join("bad.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\n")
        .expect("write");
    let (code, _, stderr) = run(&[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("bad.yaml"), "{stderr}");
    std::fs::remove_file(pr.join("bad.yaml")).expect("remove");
    // An explicit daemon that does not answer.
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let (code, _, stderr) = run(&["--server", &format!("http://{free}")]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("cannot reach the daemon"), "{stderr}");
    assert!(tree(&s.out()) == before, "a plan wrote to the output");
    let _ = d.stop();
}

// ---------------------------------------------------------------------------------------------
// Property: plan predicts exactly what the following render does.

/// A generated repository: `clusters` offline clusters and one Deployment per entry of
/// `replicas`, each with a policy of strategy `strategies[i]`.
fn write_repo(dir: &Path, clusters: usize, replicas: &[u32], strategies: &[u8], cpu: &[u32]) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("clusters")).expect("mkdir");
    std::fs::create_dir_all(dir.join("apps")).expect("mkdir");
    for c in 0..clusters {
        let body = format!(
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: m{c}\n  labels: {{tier: t{}}}\n\
             spec: {{syncMode: Push, region: r{}}}\nstatus:\n  conditions: [{{type: Ready, status: \"True\"}}]\n  resourceSummary:\n\
             \x20   allocatable: {{cpu: \"{}\", memory: 64Gi, pods: \"110\"}}\n    allocated: {{cpu: \"1\", memory: 1Gi, pods: \"5\"}}\n",
            c % 2,
            c % 3,
            cpu[c % cpu.len()]
        );
        std::fs::write(dir.join(format!("clusters/m{c}.yaml")), body).expect("write");
    }
    for (i, r) in replicas.iter().enumerate() {
        let strategy = match strategies[i % strategies.len()] % 3 {
            0 => "replicaScheduling: {replicaSchedulingType: Duplicated}".to_string(),
            1 => "replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}".to_string(),
            _ => "replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted, weightPreference: {dynamicWeight: AvailableReplicas}}".to_string(),
        };
        let affinity =
            if i % 2 == 0 { "clusterAffinity: {labelSelector: {matchLabels: {tier: t0}}}\n    " } else { "" };
        let body = format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: w{i}, namespace: default}}\nspec:\n  replicas: {r}\n\
             \x20 selector: {{matchLabels: {{app: w{i}}}}}\n  template:\n    metadata: {{labels: {{app: w{i}}}}}\n    spec:\n\
             \x20     containers:\n      - name: c\n        image: x:1\n        resources: {{requests: {{cpu: 500m, memory: 128Mi}}}}\n\
             ---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: w{i}, namespace: default}}\nspec:\n\
             \x20 resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: w{i}}}]\n  placement:\n    {affinity}{strategy}\n"
        );
        std::fs::write(dir.join(format!("apps/w{i}.yaml")), body).expect("write");
    }
}

/// Each file the plan names is added, changed or removed by the render as it says, no other
/// file changes (but `placements.json`, when the plan says so), and the render holds the
/// clusters the plan said it would.
/// The summary's shards, as one path in [`summary_as_one`].
const SUMMARY: &str = ".fedsched/placements/";

/// Changed paths with every shard of the summary as one path ([`SUMMARY`]): which shards an
/// edit touches depends on the workloads' hashes, the plan says whether the summary changes.
fn summary_as_one(paths: BTreeSet<String>) -> BTreeSet<String> {
    paths.into_iter().map(|p| if p.starts_with(SUMMARY) { SUMMARY.to_string() } else { p }).collect()
}

fn assert_predicted(
    doc: &Value,
    before: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
    render_err: &str,
) {
    let mut predicted = BTreeSet::new();
    for c in doc["clusters"].as_array().into_iter().flatten() {
        let cluster = c["cluster"].as_str().expect("cluster");
        for (kind, p) in ["added", "changed", "removed"]
            .iter()
            .flat_map(|k| c[*k].as_array().into_iter().flatten().map(move |p| (*k, p)))
        {
            let path = format!("{cluster}/{}", p.as_str().expect("path"));
            let (b, a) = (before.get(&path), after.get(&path));
            let ok = match kind {
                "added" => b.is_none() && a.is_some(),
                "changed" => b.is_some() && a.is_some() && a != b,
                _ => b.is_some() && a.is_none(),
            };
            assert!(ok, "plan said {kind} {path}, render did otherwise");
            predicted.insert(path);
        }
    }
    if doc["summary"]["placementsJsonChanged"] == true {
        predicted.insert(SUMMARY.into());
    }
    assert_eq!(
        summary_as_one(diff_paths(before, after)),
        predicted,
        "render changed other files than planned: {doc:#}"
    );
    let held: BTreeSet<String> =
        doc["held"].as_array().into_iter().flatten().map(|h| h["cluster"].as_str().unwrap_or("").to_string()).collect();
    let render_held: BTreeSet<String> = render_err
        .lines()
        .filter_map(|l| l.strip_prefix("held: ").and_then(|l| l.split(':').next()).map(String::from))
        .collect();
    assert_eq!(held, render_held, "holds");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    /// Generated repositories and random edits (replicas, strategies, capacity, removed and
    /// added workloads): plan's files, placements.json flag and holds are what render does.
    #[test]
    fn plan_predicts_the_next_render(
        clusters in 2usize..5,
        replicas in prop::collection::vec(1u32..12, 1..6),
        strategies in prop::collection::vec(0u8..3, 1..4),
        cpu in prop::collection::vec(2u32..16, 1..3),
        new_replicas in prop::collection::vec(1u32..12, 0..6),
        new_strategies in prop::collection::vec(0u8..3, 1..4),
        new_cpu in prop::collection::vec(2u32..16, 1..3),
    ) {
        let s = Scratch::new();
        write_repo(&s.policies(), clusters, &replicas, &strategies, &cpu);
        rendered(&s);
        write_repo(&s.policies(), clusters, &new_replicas, &new_strategies, &new_cpu);
        let before = tree(&s.out());
        let (code, doc) = plan_json(&s, &[]);
        prop_assert!(code == 0 || code == 2, "exit {code}");
        prop_assert_eq!(code == 2, doc["changes"] == true);
        prop_assert_eq!(&tree(&s.out()), &before, "plan wrote the output");
        let o = s.render();
        if let Some(held) = doc["emptied"].as_str() {
            // The plan said the pass writes nothing: the repository places no workload any more.
            prop_assert!(!o.status.success(), "render of an emptied repository succeeded");
            prop_assert!(text(&o.stderr).contains(held), "render: {}\nplan: {held}", text(&o.stderr));
            prop_assert_eq!(&tree(&s.out()), &before, "the held render wrote the output");
            return Ok(());
        }
        prop_assert!(o.status.success(), "render: {}", text(&o.stderr));
        assert_predicted(&doc, &before, &tree(&s.out()), &text(&o.stderr));
        // What the plan said of the placements is what the render recorded.
        let summary: Value = serde_json::from_str(&placements_of(&s.out()).expect("summary")).expect("json");
        // A change the guard holds whole keeps its published entry: the plan names it.
        let held_whole: BTreeSet<String> = doc["heldMoves"].as_array().into_iter().flatten()
            .filter_map(|m| m["workload"].as_str()?.rsplit('/').next().map(String::from)).collect();
        for w in doc["workloads"].as_array().into_iter().flatten().filter(|w| w["change"] == "placement" || w["change"] == "added") {
            let name = w["workload"].as_str().expect("name").rsplit('/').next().expect("name").to_string();
            // Held whole: the render recorded the placement as it was before, not the decision.
            let side = if held_whole.contains(&name) { "before" } else { "after" };
            let placed = summary["placements"].as_array().and_then(|p| p.iter().find(|p| p["workload"]["name"] == name.as_str())).expect("placed");
            for p in w["placement"].as_array().into_iter().flatten() {
                let cluster = placed["clusters"].as_array().and_then(|c| c.iter().find(|c| c["name"] == p["cluster"]));
                match cluster {
                    Some(c) => prop_assert_eq!(&c["replicas"], &p[side]["replicas"], "{} on {}", name, p["cluster"]),
                    None => prop_assert!(p[side].is_null(), "{} on {}: planned {}", name, p["cluster"], p[side]),
                }
            }
        }
    }
}

/// A template change under a RolloutPolicy: the plan says, per stage, which clusters get the
/// new version this pass (the canary) and which stay on the previous one until how many gates
/// pass — in text, JSON and Markdown, through the binary — and its files are the canary's only.
#[test]
fn a_change_under_a_rollout_policy_is_planned_stage_by_stage() {
    let s = Scratch::with_demo();
    s.write(
        "policies/web-rollout.yaml",
        "apiVersion: fedsched.io/v1alpha1\nkind: RolloutPolicy\nmetadata: {name: web, namespace: shop}\nspec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n  stages:\n  - {name: canary, clusterAffinity: {clusterNames: [eu-west-b]}}\n  minSuccessTime: 10m\n",
    );
    rendered(&s);
    rendered(&s);
    let (code, _, _) = plan(&s, &[]);
    assert_eq!(code, 0, "a RolloutPolicy with no change under way plans nothing");
    edit(&s, "apps/web.yaml", "shop/web:1.4.2", "shop/web:1.5.0");

    let (code, doc) = plan_json(&s, &[]);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(doc["summary"]["rollouts"], 1, "{doc:#}");
    let r = &doc["rollouts"][0];
    assert_eq!(
        (r["workload"].as_str(), r["state"].as_str(), r["stage"].as_str()),
        (Some("Deployment/shop/web"), Some("Progressing"), Some("canary")),
        "{r:#}"
    );
    assert_eq!(r["stages"][0]["clusters"], serde_json::json!(["eu-west-b"]));
    assert_eq!(
        (r["stages"][0]["version"].as_str(), r["stages"][1]["version"].as_str()),
        (Some("new"), Some("previous"))
    );
    assert_eq!((r["stages"][1]["gatesBefore"].as_u64(), r["stages"][1]["earliestIn"].as_str()), (Some(1), Some("10m")));
    let rest: Vec<&str> =
        r["stages"][1]["clusters"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(!rest.is_empty() && !rest.contains(&"eu-west-b"), "{r:#}");
    // The files: web's on the canary alone.
    let web_files: Vec<&str> = doc["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["changed"].as_array().into_iter().flatten().any(|p| p == "shop/apps_deployment_web.yaml"))
        .filter_map(|c| c["cluster"].as_str())
        .collect();
    assert_eq!(web_files, ["eu-west-b"], "{doc:#}");

    let (_, stdout, _) = plan(&s, &[]);
    assert!(stdout.contains("  stage canary (eu-west-b): the new version this pass\n"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "  stage final ({}): the previous version until 1 more gate(s) pass (at least 10m)\n",
            rest.join(", ")
        )),
        "{stdout}"
    );
    let (_, md, _) = plan(&s, &["-o", "markdown"]);
    assert!(md.contains("<summary>Rollouts (1)</summary>") && md.contains("| `Deployment/shop/web` | rollout (shop/web): Progressing at stage canary<br>stage canary (eu-west-b): the new version this pass<br>"), "{md}");
}
