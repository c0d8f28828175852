//! Progressive rollouts (issue 52) on the simulator with `--apply`: the daemon, a fleet of three
//! members whose GitOps agent applies the output, and a bad image made to crash-loop on the
//! canary member (`PUT /admin/clusters/{name}/images`). A good change goes through three stages,
//! each after `minSuccessTime` of health; a bad one halts after the canary with no file of a
//! later stage changed.

use std::time::Duration;

use crate::live::{WATCHED, daemon, setup_with};
use crate::support::*;

const MEMBERS: [&str; 3] = ["member-000", "member-001", "member-002"];

/// `api` duplicated to the three members, and its RolloutPolicy: canary member-000, then one
/// more, then the last; 3 s of health each.
fn app(image: &str) -> String {
    app_with(image, "", "")
}

/// [`app`] with more for the canary stage (`, requireApproval: true`) and the spec.
pub(crate) fn app_with(image: &str, canary: &str, spec: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: api, namespace: shop}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}}}
    spec:
      containers: [{{name: c, image: "{image}", resources: {{requests: {{cpu: 50m, memory: 32Mi}}}}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {{name: api}}
spec:
  resourceSelectors:
  - {{apiVersion: apps/v1, kind: Deployment, name: api, namespace: shop}}
  placement:
    clusterAffinity: {{clusterNames: [member-000, member-001, member-002]}}
    replicaScheduling: {{replicaSchedulingType: Duplicated}}
---
apiVersion: fedsched.io/v1alpha1
kind: RolloutPolicy
metadata: {{name: api, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: api}}]
  stages:
  - {{name: canary, clusterAffinity: {{clusterNames: [member-000]}}{canary}}}
  - {{name: next, maxConcurrency: 1}}
  minSuccessTime: 3s
  progressDeadline: 2m
{spec}"#
    )
}

/// The image of api's file on a member ("-": none).
pub(crate) fn image(t: &crate::live::Setup, member: &str) -> String {
    let text =
        std::fs::read_to_string(t.s.out().join(member).join("shop/apps_deployment_api.yaml")).unwrap_or_default();
    text.lines().find_map(|l| l.split("image: ").nth(1)).unwrap_or("-").trim_matches('"').to_string()
}

pub(crate) fn images(t: &crate::live::Setup) -> Vec<String> {
    MEMBERS.iter().map(|m| image(t, m)).collect()
}

/// The rollout block of `fedsched status Deployment/shop/api -o json` (answered by the daemon).
fn rollout(t: &crate::live::Setup) -> serde_json::Value {
    let o = fedsched(&["status", "-c", t.config.to_str().expect("utf8"), "Deployment/shop/api", "-o", "json"]);
    serde_json::from_slice::<serde_json::Value>(&o.stdout).map(|d| d["rollout"].clone()).unwrap_or_default()
}

#[test]
fn a_good_change_goes_through_three_stages_and_a_bad_image_halts_after_the_canary() {
    let t = setup_with(3, true, WATCHED, &[]);
    t.s.write("apps/api.yaml", &app("api:1"));
    let (mut child, log) = daemon(&t, "info");
    let l = || log.lock().expect("lock").clone();
    wait_for("api:1 everywhere", Duration::from_secs(90), || images(&t) == ["api:1"; 3]);
    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-000/images", r#"{"crash": ["api:bad"]}"#);
    assert_eq!(code, 200, "{body}");

    // A good change: the canary first, the others on the previous version meanwhile.
    t.s.write("apps/api.yaml", &app("api:2"));
    wait_for("the canary", Duration::from_secs(60), || image(&t, "member-000") == "api:2");
    assert_eq!(images(&t)[2], "api:1", "the last stage before two gates:\n{}", l());
    let mut seen = Vec::new();
    wait_for("api:2 everywhere", Duration::from_secs(120), || {
        let now = images(&t);
        if seen.last() != Some(&now) {
            seen.push(now.clone());
        }
        now == ["api:2"; 3]
    });
    // Stage by stage: never the last member before the middle one.
    assert!(seen.iter().all(|s| s[2] != "api:2" || s[1] == "api:2"), "{seen:?}");
    wait_for("the rollout to complete", Duration::from_secs(60), || rollout(&t)["state"] == "Complete");
    // The gates read the members' Deployment (its generation and status), not only the pods.
    let (code, stats) = t.sim.http("GET", "/admin/stats", "");
    assert_eq!(code, 200, "{stats}");
    let stats: serde_json::Value = serde_json::from_str(&stats).expect("stats");
    for m in MEMBERS {
        assert!(stats["objectReads"][m].as_u64().is_some_and(|n| n > 0), "{m}: {stats:#}");
    }
    // No Cluster names a GitOps agent: no agent object is ever read.
    assert!(stats["agentReads"].as_object().is_some_and(|m| m.is_empty()), "{stats:#}");

    // A bad image: the canary's pods crash-loop; halted, the later stages' files untouched.
    let file = |m: &str| std::fs::read(t.s.out().join(m).join("shop/apps_deployment_api.yaml")).expect("file");
    let before: Vec<Vec<u8>> = MEMBERS[1..].iter().map(|m| file(m)).collect();
    t.s.write("apps/api.yaml", &app("api:bad"));
    wait_for("the halt", Duration::from_secs(90), || rollout(&t)["state"] == "Halted");
    let r = rollout(&t);
    assert_eq!(r["stage"], "canary", "{r:#}");
    assert!(r["failures"]["clusters"]["member-000"].as_str().is_some_and(|w| w.contains("CrashLoopBackOff")), "{r:#}");
    // Longer than a gate: nothing moves.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(images(&t), ["api:bad", "api:2", "api:2"]);
    let after: Vec<Vec<u8>> = MEMBERS[1..].iter().map(|m| file(m)).collect();
    assert_eq!(before, after, "a later stage's file changed");
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(!l().contains("panicked"), "{}", l());
}

#[test]
fn rollback_restores_the_canary_and_an_approval_commit_releases_the_next_stage() {
    let t = setup_with(3, true, WATCHED, &[]);
    let approval = ", requireApproval: true";
    let write = |image: &str, spec: &str| t.s.write("apps/api.yaml", &app_with(image, approval, spec));
    write("api:1", "  onFailure: Rollback\n");
    let (mut child, log) = daemon(&t, "info");
    let l = || log.lock().expect("lock").clone();
    wait_for("api:1 everywhere", Duration::from_secs(90), || images(&t) == ["api:1"; 3]);
    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-000/images", r#"{"crash": ["api:bad"]}"#);
    assert_eq!(code, 200, "{body}");

    // A bad image rolls back: the canary runs the previous version again.
    write("api:bad", "  onFailure: Rollback\n");
    wait_for("the roll-back", Duration::from_secs(90), || rollout(&t)["state"] == "RolledBack");
    wait_for("api:1 on the canary again", Duration::from_secs(30), || images(&t) == ["api:1"; 3]);

    // A good one waits at the canary for its approval, Healthy or not.
    write("api:2", "  onFailure: Rollback\n");
    wait_for("the canary", Duration::from_secs(60), || image(&t, "member-000") == "api:2");
    wait_for("the gate to ask for approval", Duration::from_secs(30), || {
        let r = rollout(&t);
        r["gate"]["approvalRequired"] == true && r["gate"]["healthySince"].is_string()
    });
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(images(&t), ["api:2", "api:1", "api:1"], "released without approval:\n{}", l());
    // The approval is a commit to the policy repository.
    write("api:2", "  onFailure: Rollback\n  approvedStages: [canary]\n");
    wait_for("the next stage", Duration::from_secs(60), || image(&t, "member-001") == "api:2");
    // The pass publishes, then records: the member can run the file before the document
    // shows the transition that released it.
    let approved = |history: &serde_json::Value| {
        history
            .as_array()
            .into_iter()
            .flatten()
            .any(|h| h["event"] == "passed" && h["cause"].as_str().is_some_and(|c| c.contains("approved")))
    };
    wait_for("the approval's transition in the rollout's history", Duration::from_secs(10), || {
        approved(&rollout(&t)["history"])
    });
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(!l().contains("panicked"), "{}", l());
}

/// member-000's Cluster names its GitOps agent (`rollout.fedsched.io/gitops-agent`: a Flux
/// `Kustomization` the simulator serves with the revision of the directory it applied and the
/// health of what it applied). Paused, the agent has not synced the canary's new version: the
/// gate waits and `status` says "not synced yet"; resumed, the rollout goes on. A bad image,
/// synced and crash-looping, is "synced, unhealthy": halted. Only the member that names an
/// agent has its agent object read.
#[test]
fn the_canarys_gitops_agent_tells_not_synced_from_synced_unhealthy() {
    let t = setup_with(3, true, WATCHED, &[]);
    let cluster = t.s.policies().join("clusters/member-000.yaml");
    let yaml = std::fs::read_to_string(&cluster).expect("cluster");
    assert!(!yaml.contains("annotations:"), "{yaml}");
    let yaml = yaml.replacen(
        "metadata:\n",
        "metadata:\n  annotations:\n    rollout.fedsched.io/gitops-agent: Kustomization/flux-system/apps\n",
        1,
    );
    std::fs::write(&cluster, yaml).expect("write");
    let agent = |paused: bool| {
        let body =
            format!(r#"{{"kind": "Kustomization", "namespace": "flux-system", "name": "apps", "paused": {paused}}}"#);
        let (code, body) = t.sim.http("PUT", "/admin/clusters/member-000/agent", &body);
        assert_eq!(code, 200, "{body}");
    };
    agent(false);
    t.s.write("apps/api.yaml", &app("api:1"));
    let (mut child, log) = daemon(&t, "info");
    let l = || log.lock().expect("lock").clone();
    wait_for("api:1 everywhere", Duration::from_secs(90), || images(&t) == ["api:1"; 3]);
    // The agent applied it on the canary.
    let token = t.sim.token("member-000");
    wait_for("api:1 applied on the canary", Duration::from_secs(30), || {
        t.sim.http_as("GET", "/clusters/member-000/apis/apps/v1/namespaces/shop/deployments/api", "", &token).0 == 200
    });
    // No rollout under way (api:1 is the first version): the agent's object is not read.
    let agent_reads = || {
        let stats: serde_json::Value = serde_json::from_str(&t.sim.http("GET", "/admin/stats", "").1).expect("stats");
        stats["agentReads"]["member-000"].as_u64().unwrap_or(0)
    };
    assert_eq!(agent_reads(), 0, "read with no rollout under way");

    // The canary's agent paused: api:2 is in its directory, not synced.
    agent(true);
    t.s.write("apps/api.yaml", &app("api:2"));
    wait_for("the canary's file", Duration::from_secs(60), || image(&t, "member-000") == "api:2");
    wait_for("not synced yet", Duration::from_secs(30), || {
        let r = rollout(&t);
        let m = &r["gate"]["clusters"]["member-000"];
        m["state"] == "NotSynced"
            && m["agent"]
                .as_str()
                .is_some_and(|a| a.starts_with("not synced yet (Kustomization/flux-system/apps: still at main@sha1:"))
    });
    let o = fedsched(&["status", "-c", t.config.to_str().expect("utf8"), "Deployment/shop/api"]);
    assert!(text(&o.stdout).contains("member-000: NotSynced, GitOps agent not synced yet"), "{}", text(&o.stdout));
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(images(&t), ["api:2", "api:1", "api:1"], "released while not synced:\n{}", l());

    // Resumed: synced and healthy, the next stage after its gate.
    agent(false);
    wait_for("the next stage", Duration::from_secs(60), || image(&t, "member-001") == "api:2");

    // A bad image: synced, crash-looping — "synced, unhealthy", halted.
    wait_for("the rollout to complete", Duration::from_secs(60), || rollout(&t)["state"] == "Complete");
    let (code, body) = t.sim.http("PUT", "/admin/clusters/member-000/images", r#"{"crash": ["api:bad"]}"#);
    assert_eq!(code, 200, "{body}");
    t.s.write("apps/api.yaml", &app("api:bad"));
    wait_for("the halt", Duration::from_secs(90), || rollout(&t)["state"] == "Halted");
    let r = rollout(&t);
    let why = r["failures"]["clusters"]["member-000"].as_str().unwrap_or_default().to_string();
    assert!(why.contains("CrashLoopBackOff"), "{r:#}");
    let (_, stats) = t.sim.http("GET", "/admin/stats", "");
    let stats: serde_json::Value = serde_json::from_str(&stats).expect("stats");
    assert!(stats["agentReads"]["member-000"].as_u64().is_some_and(|n| n > 0), "{stats:#}");
    for m in &MEMBERS[1..] {
        assert!(stats["agentReads"][m].is_null(), "{m} names no agent: {stats:#}");
    }
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(!l().contains("panicked"), "{}", l());
}

/// Issue 52, "document it with a CRD-style schema so editors and `kubectl apply --dry-run` can
/// validate it": `config/crds/rolloutpolicies.fedsched.io.yaml` is a CustomResourceDefinition
/// the real `kubernetes-validate --strict` accepts (Kubernetes 1.33's apiextensions schema),
/// and RolloutPolicies are checked against its openAPIV3Schema offline by `jsonschema`
/// (`tests/tools/crd_instances.py`, as the API server reads the schema with strict field
/// validation): the guide's example and this suite's policy are valid; each of six broken
/// policies is rejected at the field `fedsched check` also names. kubectl cannot do this
/// without an API server (`--dry-run=client` asks the server for the kind's mapping and, with
/// `--validate`, for its OpenAPI document; `--dry-run=server` needs the CRD installed).
#[test]
fn the_crd_schema_validates_rollout_policies_as_fedsched_check_does() {
    let crd = repo_root().join("config/crds/rolloutpolicies.fedsched.io.yaml");
    let validate = crate::tools::kubernetes_validate();
    let r = std::process::Command::new(&validate)
        .args(["--strict", "--quiet", "-k", "1.33"])
        .arg(&crd)
        .output()
        .expect("run kubernetes-validate");
    assert!(r.status.success(), "kubernetes-validate rejected the CRD:\n{}{}", text(&r.stdout), text(&r.stderr));
    // Negative control: a field a CustomResourceDefinition has not.
    let dir = tempfile::tempdir().expect("tempdir");
    let bad_crd = dir.path().join("bad-crd.yaml");
    let crd_text = std::fs::read_to_string(&crd).expect("crd");
    std::fs::write(&bad_crd, crd_text.replace("  scope: Namespaced\n", "  scope: Namespaced\n  strictness: high\n"))
        .expect("write");
    let r = std::process::Command::new(&validate)
        .args(["--strict", "--quiet", "-k", "1.33"])
        .arg(&bad_crd)
        .output()
        .expect("run kubernetes-validate");
    assert!(!r.status.success() && text(&r.stdout).contains("strictness"), "{}", text(&r.stdout));

    let python = crate::tools::python_with_kubernetes();
    let script = repo_root().join("tests/tools/crd_instances.py");
    let schema_check = |file: &std::path::Path| {
        let o = std::process::Command::new(&python).arg(&script).arg(&crd).arg(file).output().expect("run python");
        assert!(o.status.code().is_some_and(|c| c < 2), "{}", text(&o.stderr));
        (o.status.success(), text(&o.stdout))
    };
    let fedsched_check = |dir: &std::path::Path| {
        let o = fedsched(&["check", "--policies", dir.to_str().expect("utf8")]);
        (o.status.success() && !text(&o.stderr).contains("error"), text(&o.stdout) + &text(&o.stderr))
    };
    let guide = std::fs::read_to_string(repo_root().join("docs/guide/rollouts.md")).expect("guide");
    let example = guide.split("```yaml\n").nth(1).and_then(|b| b.split("```").next()).expect("the guide's example");
    assert!(example.contains("kind: RolloutPolicy"), "{example}");
    let suite = app_with("api:1", ", requireApproval: true", "  approvedStages: [canary]\n  onNewVersion: Queue\n");
    let suite = suite.split("---\n").find(|d| d.contains("kind: RolloutPolicy")).expect("policy").to_string();
    for (i, valid) in [example.to_string(), suite].iter().enumerate() {
        let d = dir.path().join(format!("valid-{i}"));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("rollout.yaml"), valid).expect("write");
        let (ok, out) = schema_check(&d.join("rollout.yaml"));
        assert!(ok, "the schema rejects a valid RolloutPolicy:\n{out}\n{valid}");
        let (ok, out) = fedsched_check(&d);
        assert!(ok, "fedsched check rejects it:\n{out}\n{valid}");
    }

    let base = "apiVersion: fedsched.io/v1alpha1\nkind: RolloutPolicy\nmetadata: {name: web, namespace: shop}\nspec:\n  \
                resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n  stages:\n  \
                - {name: canary, clusterAffinity: {clusterNames: [a]}}\n  - {name: wave, maxConcurrency: 25%}\n  \
                minSuccessTime: 2m\n  maxFailures: 1\n  onFailure: Halt\n";
    // (edit, the field the schema names, the field fedsched check names)
    let broken = [
        (("onFailure: Halt", "onFailure: Explode"), "spec.onFailure", "spec.onFailure"),
        (("{name: wave, maxConcurrency: 25%}", "{name: wave}"), "spec.stages.1", "spec.stages[1]"),
        (("minSuccessTime: 2m", "minSucessTime: 2m"), "'minSucessTime' was unexpected", "spec.minSucessTime"),
        (("name: canary,", "name: Canary_1,"), "spec.stages.0.name", "spec.stages[0].name"),
        (
            ("maxConcurrency: 25%", "maxConcurrency: [2]"),
            "spec.stages.1.maxConcurrency",
            "spec.stages[1].maxConcurrency",
        ),
        (
            ("clusterNames: [a]", "clusterNames: a"),
            "spec.stages.0.clusterAffinity.clusterNames",
            "spec.stages[0].clusterAffinity.clusterNames",
        ),
    ];
    for (i, ((from, to), schema_field, check_field)) in broken.into_iter().enumerate() {
        assert!(base.contains(from), "{from}");
        let d = dir.path().join(format!("broken-{i}"));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("rollout.yaml"), base.replace(from, to)).expect("write");
        let (ok, out) = schema_check(&d.join("rollout.yaml"));
        assert!(!ok && out.contains(schema_field), "the schema accepts `{to}` (or names another field):\n{out}");
        let (ok, out) = fedsched_check(&d);
        assert!(!ok && out.contains(check_field), "fedsched check accepts `{to}`:\n{out}");
    }
}

/// A Cactus (`example.io/v1`, plural `cacti`: a CRD that names an irregular plural) under a
/// RolloutPolicy, judged by its `healthInterpretation`.
const CACTUS: &str = r#"apiVersion: example.io/v1
kind: Cactus
metadata: {name: prickly, namespace: shop}
spec: {image: "cactus:1"}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: prickly, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: example.io/v1, kind: Cactus, name: prickly}]
  placement:
    clusterAffinity: {clusterNames: [member-000, member-001, member-002]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
---
apiVersion: fedsched.io/v1alpha1
kind: RolloutPolicy
metadata: {name: prickly, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: example.io/v1, kind: Cactus, name: prickly}]
  stages:
  - {name: canary, clusterAffinity: {clusterNames: [member-000]}}
  minSuccessTime: 3s
---
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: cactus}
spec:
  target: {apiVersion: example.io/v1, kind: Cactus}
  customizations:
    healthInterpretation:
      luaScript: |
        function InterpretHealth(observedObj)
          return observedObj.status ~= nil and observedObj.status.phase == 'Running'
        end
"#;

/// Issue 52: the poll of a custom kind's object for its `healthInterpretation` asks for the
/// resource the member's discovery names — `cacti`, not `cactuses` as Kubernetes would guess
/// from the kind — and only on the members of the stage the rollout watches (the canary),
/// never while no rollout is under way.
#[test]
fn a_custom_kinds_object_is_polled_at_the_resource_name_discovery_gives() {
    let t = setup_with(3, false, WATCHED, &[]);
    let apis = r#"[{"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"},
            {"name": "namespaces", "kind": "Namespace"}, {"name": "configmaps", "kind": "ConfigMap"}]},
        {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
        {"groupVersion": "example.io/v1", "resources": [{"name": "cacti", "kind": "Cactus"}]}]"#;
    for m in MEMBERS {
        let (code, body) = t.sim.http("PUT", &format!("/admin/clusters/{m}/apis"), apis);
        assert_eq!(code, 200, "{body}");
    }
    t.s.write("apps/cactus.yaml", CACTUS);
    let (mut child, log) = daemon(&t, "info");
    let other_reads = || {
        let (_, stats) = t.sim.http("GET", "/admin/stats", "");
        let stats: serde_json::Value = serde_json::from_str(&stats).expect("stats");
        stats["otherReads"].clone()
    };
    let file = t.s.out().join("member-000/shop/example.io_cactus_prickly.yaml");
    wait_for("the first version published", Duration::from_secs(60), || file.exists());
    assert!(
        other_reads().as_object().is_none_or(|m| m.is_empty()),
        "read with no rollout under way: {:#}",
        other_reads()
    );
    t.s.write("apps/cactus.yaml", &CACTUS.replace("cactus:1", "cactus:2"));
    let path = "/apis/example.io/v1/namespaces/shop/cacti/prickly";
    wait_for("the canary's Cactus to be read", Duration::from_secs(60), || {
        other_reads()["member-000"][path].as_u64().is_some_and(|n| n >= 2)
    });
    let reads = other_reads();
    let paths: Vec<&String> =
        reads.as_object().into_iter().flatten().flat_map(|(_, p)| p.as_object()).flat_map(|p| p.keys()).collect();
    assert_eq!(paths, [path], "only the canary's Cactus, at its discovered resource name: {reads:#}");
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(!log.lock().expect("lock").contains("panicked"));
}
