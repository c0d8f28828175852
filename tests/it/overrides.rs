//! Overrides, the mass-deletion guard, crash safety and git mode, driving the real binary on
//! temporary repositories. Golden files under `tests/golden/overrides-*`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

/// One of Karmada's example files ([`karmada_examples`]), or `None` where they are not
/// available (the caller returns: skipped, and said so).
fn karmada_example(rel: &str) -> Option<String> {
    let p = karmada_examples()?.join(rel);
    Some(std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("Karmada example {} is missing: {e}", p.display())))
}

/// Two Ready members with room, labelled as Karmada's image example expects.
const MEMBERS: &str = r#"apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member1
  labels: {location: us}
spec:
  syncMode: Push
status:
  conditions: [{type: Ready, status: "True"}]
  resourceSummary:
    allocatable: {cpu: "64", memory: 256Gi, pods: "1000"}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member2
  labels: {location: cn}
spec:
  syncMode: Push
status:
  conditions: [{type: Ready, status: "True"}]
  resourceSummary:
    allocatable: {cpu: "64", memory: 256Gi, pods: "1000"}
"#;

/// A Deployment `nginx` in `default` with an nginx and an alpine container.
const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: default
  labels: {app: nginx}
spec:
  replicas: 2
  selector:
    matchLabels: {app: nginx}
  template:
    metadata:
      labels: {app: nginx}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
      - name: alpine
        image: docker.io/library/alpine:3.20
        command: [sleep]
        args: ["3600"]
"#;

/// Duplicates every Deployment and ConfigMap of `default` to both members.
const DUPLICATE: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: everywhere
  namespace: default
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment}
  - {apiVersion: v1, kind: ConfigMap}
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
"#;

fn scratch(files: &[(&str, &str)]) -> Scratch {
    let s = Scratch::new();
    s.write("clusters.yaml", MEMBERS);
    for (rel, text) in files {
        s.write(rel, text);
    }
    s
}

fn render_ok(s: &Scratch) -> String {
    let out = s.render();
    let err = text(&out.stderr);
    assert!(out.status.success(), "render failed: {err}");
    err
}

fn read(s: &Scratch, rel: &str) -> String {
    std::fs::read_to_string(s.out().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn history(s: &Scratch, workload: &str) -> Vec<serde_json::Value> {
    let h = s.cmd("history", &[workload, "-o", "json"]);
    assert!(h.status.success(), "{}", text(&h.stderr));
    serde_json::from_slice::<serde_json::Value>(&h.stdout).expect("json").as_array().cloned().unwrap_or_default()
}

#[test]
fn karmada_nginx_sample_labels_and_annotations() {
    let Some(k0) = karmada_example("samples/nginx/deployment.yaml") else { return };
    let Some(k1) = karmada_example("samples/nginx/propagationpolicy.yaml") else { return };
    let Some(k2) = karmada_example("samples/nginx/overridepolicy.yaml") else { return };
    let s = scratch(&[("deployment.yaml", &k0), ("propagationpolicy.yaml", &k1), ("overridepolicy.yaml", &k2)]);
    render_ok(&s);
    let m1 = read(&s, "member1/default/apps_deployment_nginx.yaml");
    let m2 = read(&s, "member2/default/apps_deployment_nginx.yaml");
    assert!(m1.contains("    env: skoala-stage\n") && !m1.contains("skoala-dev"), "{m1}");
    assert!(m2.contains("    env: skoala-dev\n") && m2.contains("    env-stat: skoala-stage\n"), "{m2}");
    assert!(m1.contains("fedsched.io/applied-overrides: OverridePolicy/default/nginx-op\n"), "{m1}");
    assert_golden(&s.out(), "overrides-nginx");
}

#[test]
fn karmada_image_example_by_cluster_label() {
    let Some(k0) = karmada_example("artifacts-example/overridepolicy_image.yaml") else { return };
    let s = scratch(&[("deployment.yaml", DEPLOYMENT), ("pp.yaml", DUPLICATE), ("op.yaml", &k0)]);
    render_ok(&s);
    let m1 = read(&s, "member1/default/apps_deployment_nginx.yaml");
    let m2 = read(&s, "member2/default/apps_deployment_nginx.yaml");
    assert!(m1.contains("image: fictional.registry.us/nginx:1.25\n"), "{m1}");
    assert!(m1.contains("image: fictional.registry.us/library/alpine:3.20\n"), "{m1}");
    assert!(m2.contains("image: fictional.registry.cn/nginx:1.25\n"), "{m2}");
    assert_golden(&s.out(), "overrides-image");
}

#[test]
fn karmada_command_example_and_args() {
    let Some(k0) = karmada_example("artifacts-example/overridepolicy_command.yaml") else { return };
    let args_op = r#"apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: args, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      argsOverrider:
      - {containerName: alpine, operator: remove, value: ["3600"]}
      - {containerName: alpine, operator: add, value: ["60"]}
"#;
    let s =
        scratch(&[("deployment.yaml", DEPLOYMENT), ("pp.yaml", DUPLICATE), ("op.yaml", &k0), ("args.yaml", args_op)]);
    render_ok(&s);
    let m1 = read(&s, "member1/default/apps_deployment_nginx.yaml");
    let m2 = read(&s, "member2/default/apps_deployment_nginx.yaml");
    assert!(m1.contains("command:\n        - sleep\n        - test\n"), "{m1}");
    assert!(
        m2.contains("args:\n        - \"60\"\n") && m2.contains("command:\n        - sleep\n        image"),
        "{m2}"
    );
    assert_golden(&s.out(), "overrides-command");
}

#[test]
fn karmada_plaintext_and_cluster_override_examples() {
    let Some(k0) = karmada_example("artifacts-example/overridepolicy_simple.yaml") else { return };
    let Some(k1) = karmada_example("artifacts-example/clusteroverridepolicy.yaml") else { return };
    let s = scratch(&[("deployment.yaml", DEPLOYMENT), ("pp.yaml", DUPLICATE), ("op.yaml", &k0), ("cop.yaml", &k1)]);
    render_ok(&s);
    let m1 = read(&s, "member1/default/apps_deployment_nginx.yaml");
    let m2 = read(&s, "member2/default/apps_deployment_nginx.yaml");
    // The plaintext `add` on /metadata/annotations replaces the map; provenance is added after.
    assert!(m1.contains("    foo: bar\n") && m1.contains("  replicas: 1\n"), "{m1}");
    assert!(
        m1.contains(
            "fedsched.io/applied-overrides: ClusterOverridePolicy/example-cluster-override, OverridePolicy/default/example-override\n"
        ),
        "{m1}"
    );
    assert!(!m2.contains("foo: bar") && m2.contains("  replicas: 2\n"), "{m2}");
    assert!(!m2.contains("applied-overrides"), "nothing applied to member2: {m2}");
    assert_golden(&s.out(), "overrides-plaintext");
}

#[test]
fn field_overrider_rewrites_yaml_and_json_documents_in_a_configmap() {
    let cm = r#"apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: default}
data:
  app.yaml: |
    server:
      port: 80
      hosts: [a.example.com]
    debug: "no"
  app.json: '{"replicas": 1, "zone": "x"}'
"#;
    let cop = r#"apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: app-config}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: app, namespace: default}]
  overrideRules:
  - targetCluster: {labelSelector: {matchLabels: {location: us}}}
    overriders:
      fieldOverrider:
      - fieldPath: /data/app.yaml
        yaml:
        - {subPath: /server/port, operator: replace, value: 8080}
        - {subPath: /server/hosts/-, operator: add, value: us.example.com}
      - fieldPath: /data/app.json
        json:
        - {subPath: /zone, operator: replace, value: us-east-1}
"#;
    let s = scratch(&[("cm.yaml", cm), ("pp.yaml", DUPLICATE), ("cop.yaml", cop)]);
    render_ok(&s);
    let m1 = read(&s, "member1/default/core_configmap_app.yaml");
    assert!(m1.contains("port: 8080") && m1.contains("- us.example.com") && m1.contains("us-east-1"), "{m1}");
    assert!(m1.contains("debug: \\\"no\\\"") || m1.contains("debug: \"no\""), "YAML 1.1 hazard kept quoted: {m1}");
    assert!(read(&s, "member2/default/core_configmap_app.yaml").contains("port: 80\n"));
    assert_golden(&s.out(), "overrides-field");
}

#[test]
fn order_cop_first_then_op_by_specificity_then_name() {
    let policy = |kind: &str, name: &str, selector: &str, value: &str| {
        let ns = if kind == "OverridePolicy" { "\n  namespace: default" } else { "" };
        format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: {kind}\nmetadata:\n  name: {name}{ns}\nspec:\n{selector}  overrideRules:\n  - overriders:\n      labelsOverrider:\n      - {{operator: add, value: {{tier: {value}, {name}: seen}}}}\n"
        )
    };
    let by_name = "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]\n";
    let by_label =
        "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: nginx}}}]\n";
    let all = "";
    let docs = [
        // Written in an order unlike the application order on purpose.
        policy("OverridePolicy", "a-by-name", by_name, "op-name"),
        policy("OverridePolicy", "b-by-label", by_label, "op-label"),
        policy("OverridePolicy", "c-all", all, "op-all"),
        policy("OverridePolicy", "d-all", all, "op-all-d"),
        policy("ClusterOverridePolicy", "z-cop-name", by_name, "cop-name"),
        policy("ClusterOverridePolicy", "y-cop-all", all, "cop-all"),
    ]
    .join("---\n");
    let s = scratch(&[("deployment.yaml", DEPLOYMENT), ("pp.yaml", DUPLICATE), ("ops.yaml", &docs)]);
    render_ok(&s);
    let m1 = read(&s, "member1/default/apps_deployment_nginx.yaml");
    // The most specific OverridePolicy is applied last and wins, whatever the ClusterOverridePolicies say.
    assert!(m1.contains("    tier: op-name\n"), "{m1}");
    assert!(
        m1.contains(
            "fedsched.io/applied-overrides: ClusterOverridePolicy/y-cop-all, ClusterOverridePolicy/z-cop-name, \
             OverridePolicy/default/c-all, OverridePolicy/default/d-all, OverridePolicy/default/b-by-label, \
             OverridePolicy/default/a-by-name\n"
        ),
        "{m1}"
    );
    for n in ["a-by-name", "b-by-label", "c-all", "d-all", "z-cop-name", "y-cop-all"] {
        assert!(m1.contains(&format!("    {n}: seen\n")), "{n}: {m1}");
    }
}

#[test]
fn failing_override_keeps_previous_file_and_is_reported() {
    let s = scratch(&[("deployment.yaml", DEPLOYMENT), ("pp.yaml", DUPLICATE)]);
    render_ok(&s);
    let m1_path = s.out().join("member1/default/apps_deployment_nginx.yaml");
    let before = std::fs::read(&m1_path).expect("rendered");
    let broken = r#"apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: broken, namespace: default}
spec:
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      labelsOverrider: [{operator: add, value: {patched: "true"}}]
  - targetCluster: {clusterNames: [member1]}
    overriders:
      plaintext: [{path: /spec/template/spec/nodeSelector/disk, operator: replace, value: ssd}]
"#;
    s.write("broken.yaml", broken);
    let err = render_ok(&s);
    assert!(
        err.contains(
            "render failed: Deployment/default/nginx on member1: Deployment/default/nginx: override failed: \
             OverridePolicy/default/broken: rule 1: plaintext[0]: path /spec/template/spec/nodeSelector does not exist"
        ),
        "{err}"
    );
    assert_eq!(std::fs::read(&m1_path).expect("kept"), before, "member1 keeps its previous file");
    assert!(read(&s, "member1/kustomization.yaml").contains("default/apps_deployment_nginx.yaml"));
    assert!(read(&s, "member2/default/apps_deployment_nginx.yaml").contains("    patched: \"true\"\n"));
    let h = history(&s, "Deployment/default/nginx");
    let last = h.last().expect("history");
    let notes = last["notes"].to_string();
    assert!(notes.contains("render failed on member1, previous file kept") && notes.contains("rule 1"), "{last}");
    // The same failure again is not recorded twice; fixing it is recorded.
    render_ok(&s);
    assert_eq!(history(&s, "Deployment/default/nginx").len(), h.len());
    s.write(
        "broken.yaml",
        &broken
            .replace("operator: replace, value: ssd", "operator: add, value: {disk: ssd}")
            .replace("/nodeSelector/disk", "/nodeSelector"),
    );
    let err = render_ok(&s);
    assert!(!err.contains("render failed"), "{err}");
    assert!(read(&s, "member1/default/apps_deployment_nginx.yaml").contains("nodeSelector:\n        disk: ssd\n"));
    let h2 = history(&s, "Deployment/default/nginx");
    assert_eq!(h2.len(), h.len() + 1, "recovery recorded");
    assert_eq!(h2.last().map(|r| r["notes"].clone()), Some(serde_json::json!([])));
}

fn configmap(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default}}\ndata: {{k: v}}\n")
}

#[test]
fn mass_deletion_is_held_until_confirmed() {
    let s = scratch(&[
        ("pp.yaml", DUPLICATE),
        ("a.yaml", &configmap("a")),
        ("b.yaml", &configmap("b")),
        ("c.yaml", &configmap("c")),
    ]);
    render_ok(&s);
    let before = tree(&s.out());
    // Removing 2 of 3 objects from every cluster: more than half, so both clusters are held.
    std::fs::remove_file(s.policies().join("b.yaml")).expect("rm");
    std::fs::remove_file(s.policies().join("c.yaml")).expect("rm");
    s.write("d.yaml", &configmap("d"));
    let err = render_ok(&s);
    for c in ["member1", "member2"] {
        assert!(
            err.contains(&format!(
                "held: {c}: would remove 2 of 3 objects; held by the mass-deletion guard (confirm with --allow-mass-delete)"
            )),
            "{err}"
        );
    }
    assert!(err.contains("2 cluster(s) held by the mass-deletion guard"), "{err}");
    let after = tree(&s.out());
    for (k, v) in &before {
        if k.starts_with("member") {
            assert_eq!(after.get(k), Some(v), "{k} changed in a held cluster");
        }
    }
    assert!(!s.out().join("member1/default/core_configmap_d.yaml").exists(), "held means nothing changes");
    // The history records only what was published (issue 46): no removal while it is held.
    let removals = || {
        let h = history(&s, "ConfigMap/default/b");
        h.iter().filter(|r| r["notes"].to_string().contains("template removed")).count()
    };
    assert_eq!(removals(), 0);
    // Held again on the next pass (the guard reads the disk, not the store).
    assert!(render_ok(&s).contains("held: member1"));
    assert_eq!(removals(), 0);
    // Confirmed with the flag: published, and recorded once.
    let out = s.render_with(&["--allow-mass-delete"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("held"), "{}", text(&out.stderr));
    assert_eq!(removals(), 1);
    for c in ["member1", "member2"] {
        assert!(!s.out().join(c).join("default/core_configmap_b.yaml").exists());
        assert!(s.out().join(c).join("default/core_configmap_d.yaml").exists());
        assert!(s.out().join(c).join("default/core_configmap_a.yaml").exists());
    }
    // A config switch allows it too; a config ratio of 1.0 turns the guard off.
    std::fs::remove_file(s.policies().join("a.yaml")).expect("rm");
    std::fs::remove_file(s.policies().join("d.yaml")).expect("rm");
    let cfg = s.dir.path().join("fedsched.toml");
    std::fs::write(&cfg, "[publish]\nmax_delete_ratio = 1.0\n").expect("write");
    let out = s.render_with(&["--config", cfg.to_str().expect("utf8")], &[]);
    assert!(out.status.success() && !text(&out.stderr).contains("held"), "{}", text(&out.stderr));
    assert!(!s.out().join("member1/default/core_configmap_a.yaml").exists(), "a cluster may be emptied when allowed");
    assert!(s.out().join("member1/kustomization.yaml").exists());
}

#[test]
fn crash_after_journal_commit_then_restart_converges() {
    let s = Scratch::with_demo();
    render_ok(&s);
    let before = tree(&s.out());
    // A change touching several clusters: replicas, a removed template, a new ConfigMap.
    let web = std::fs::read_to_string(s.policies().join("apps/web.yaml")).expect("read");
    s.write("apps/web.yaml", &web.replace("replicas: 9", "replicas: 12"));
    std::fs::remove_file(s.policies().join("apps/edge.yaml")).expect("rm");
    s.write(
        "apps/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: shop}\ndata: {k: v}\n",
    );
    let crashed = s.render_with(&[], &[("FEDSCHED_TEST_CRASH_AFTER_STEP", "2")]);
    assert!(!crashed.status.success(), "the crash hook must abort the process");
    assert!(s.out().join(".fedsched/journal.json").exists(), "journal committed before the crash");
    // Nothing was renamed yet: every cluster directory is exactly as before.
    let mid = tree(&s.out());
    for (k, v) in &before {
        if !k.starts_with(".fedsched/") {
            assert_eq!(mid.get(k), Some(v), "{k} changed before the journal was applied");
        }
    }
    assert_eq!(
        mid.keys().filter(|k| !k.starts_with(".fedsched/")).collect::<Vec<_>>(),
        before.keys().filter(|k| !k.starts_with(".fedsched/")).collect::<Vec<_>>()
    );
    // Restart: the journal is completed and the pass converges to what a clean run produces.
    let err = render_ok(&s);
    assert!(!s.out().join(".fedsched/journal.json").exists());
    let reference = Scratch::new();
    copy_dir(&s.policies(), &reference.policies());
    render_ok(&reference);
    assert_eq!(tree(&s.out()), tree(&reference.out()), "after restart: {err}");
    let again = render_ok(&s);
    assert!(again.contains("0 written, 0 removed"), "{again}");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "safe.directory=*"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn git_mode_commits_changes_once_and_pushes_to_a_bare_remote() {
    let s = Scratch::with_demo();
    let bare: PathBuf = s.dir.path().join("remote.git");
    git(s.dir.path(), &["init", "-q", "--bare", "-b", "rendered", bare.to_str().expect("utf8")]);
    let cfg = s.dir.path().join("fedsched.toml");
    std::fs::write(
        &cfg,
        format!(
            "[git]\nenabled = true\nauthor_name = \"fedsched bot\"\nauthor_email = \"bot@example.com\"\n\
             remote = \"{}\"\nbranch = \"rendered\"\n",
            bare.display()
        ),
    )
    .expect("write config");
    let cfg_arg = ["--config", cfg.to_str().expect("utf8")];
    let out = s.render_with(&cfg_arg, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("committed "), "{}", text(&out.stderr));
    let log = git(&bare, &["log", "--format=%an <%ae>|%s", "rendered"]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].starts_with("fedsched bot <bot@example.com>|fedsched: 5 clusters: "), "{log}");
    assert!(lines[0].len() - "fedsched bot <bot@example.com>|".len() <= 72, "{log}");
    let body = git(&bare, &["log", "-1", "--format=%b", "rendered"]);
    assert!(
        body.contains("Trigger: render\n")
            && body.contains("\neu-west-a:\n  added _cluster/core_namespace_edge.yaml\n")
            && body.contains("  added shop/apps_deployment_web.yaml\n"),
        "{body}"
    );
    // fedsched's transient files are not committed.
    let files = git(&bare, &["ls-tree", "-r", "--name-only", "rendered"]);
    assert!(files.contains(".fedsched/placements/ff.json") && !files.contains(".fedsched/lock"), "{files}");

    // Nothing changed: no commit.
    let out = s.render_with(&cfg_arg, &[]);
    assert!(out.status.success() && !text(&out.stderr).contains("committed"), "{}", text(&out.stderr));
    assert_eq!(git(&bare, &["rev-list", "--count", "rendered"]).trim(), "1");

    // A change: exactly one more commit naming the clusters it touched (9 → 12 replicas, weights
    // 2:2:1: 4/3/2 becomes 5/5/2, so us-east-gpu is unchanged).
    let web = std::fs::read_to_string(s.policies().join("apps/web.yaml")).expect("read");
    s.write("apps/web.yaml", &web.replace("replicas: 9", "replicas: 12"));
    let out = s.render_with(&cfg_arg, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(git(&bare, &["rev-list", "--count", "rendered"]).trim(), "2");
    let subject = git(&bare, &["log", "-1", "--format=%s", "rendered"]);
    assert_eq!(subject.trim(), "fedsched: eu-west-a, eu-west-b: 2 changed objects");
    // Nothing left over either: not even fedsched's lock and owner claim show as untracked
    // (they are in the clone's info/exclude, issue 49).
    assert_eq!(git(&s.out(), &["status", "--porcelain", "--untracked-files=all", "--ignored=no"]), "");
    assert!(s.out().join(".fedsched/lock").exists(), "the lock file is still used");
}
