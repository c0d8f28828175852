//! `fedsched render` on real repositories: output bytes, determinism, what is kept and removed.

use crate::support::*;

#[test]
fn demo_output_matches_golden_files() {
    let s = Scratch::with_demo();
    let out = s.render();
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    // The oversized workload is reported, not silently dropped.
    let err = text(&out.stderr);
    assert!(err.contains("unschedulable: Deployment/ml/reindex"), "{err}");
    assert_golden(&s.out(), "demo");
}

/// The README's first command, as a user types it: relative `--out` and `--state` that do not
/// exist yet, from the directory that holds the policies.
#[test]
fn the_readmes_render_command_works_with_relative_paths() {
    let s = Scratch::with_demo();
    let out = std::process::Command::new(bin())
        .current_dir(s.dir.path())
        .args(["render", "--policies", "policies", "--out", "out", "--state", "state"])
        .env_remove("FEDSCHED_CONFIG")
        .env_remove("NOTIFY_SOCKET")
        .env("FEDSCHED_LOG", "warn")
        .output()
        .expect("run fedsched");
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    assert_golden(&s.dir.path().join("out"), "demo");
}

#[test]
fn demo_places_replicas_as_documented() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let read = |rel: &str| std::fs::read_to_string(s.out().join(rel)).unwrap_or_default();
    // web: 9 replicas, static weights 2 per eu-west-1 cluster, 1 per us-east-1 cluster;
    // us-east-legacy is not Ready (tainted) and gets nothing: Webster gives 4 / 3 / 2.
    assert!(read("eu-west-a/shop/apps_deployment_web.yaml").contains("replicas: 4\n"));
    assert!(read("eu-west-b/shop/apps_deployment_web.yaml").contains("replicas: 3\n"));
    assert!(read("us-east-gpu/shop/apps_deployment_web.yaml").contains("replicas: 2\n"));
    assert!(!s.out().join("us-east-legacy/shop/apps_deployment_web.yaml").exists());
    // The Job lands only where GPUs are, with parallelism and completions.
    let job = read("us-east-gpu/ml/batch_job_trainer.yaml");
    assert!(job.contains("parallelism: 4\n") && job.contains("completions: 8\n"), "{job}");
    assert!(!s.out().join("eu-west-a/ml/batch_job_trainer.yaml").exists());
    // The edge cache goes to the tainted edge cluster only, because it tolerates the taint.
    assert!(s.out().join("us-east-edge/edge/apps_deployment_edge-cache.yaml").exists());
    // Every known cluster has a directory with a kustomization, even when it runs nothing new.
    for c in ["eu-west-a", "eu-west-b", "us-east-gpu", "us-east-edge", "us-east-legacy"] {
        assert!(s.out().join(c).join("kustomization.yaml").exists(), "{c}");
    }
    // Strings that YAML 1.1 would misread stay quoted strings.
    let cm = read("eu-west-a/shop/core_configmap_web-config.yaml");
    for q in ["\"yes\"", "\"on\"", "\"0755\"", "\"12:30\""] {
        assert!(cm.contains(q), "{q} not quoted in\n{cm}");
    }
}

#[test]
fn second_render_writes_nothing_and_output_is_deterministic() {
    let a = Scratch::with_demo();
    assert!(a.render().status.success());
    let before = mtimes(&a.out());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let again = a.render();
    assert!(again.status.success());
    assert!(text(&again.stderr).contains("0 written, 0 removed"), "{}", text(&again.stderr));
    assert_eq!(before, mtimes(&a.out()), "unchanged files were rewritten");
    // A fresh state and output dir give the same bytes.
    let b = Scratch::with_demo();
    assert!(b.render().status.success());
    assert_eq!(tree(&a.out()), tree(&b.out()));
}

#[test]
fn removed_template_loses_its_files_but_cluster_dirs_stay() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let edge_file = s.out().join("us-east-edge/edge/apps_deployment_edge-cache.yaml");
    assert!(edge_file.exists());
    std::fs::remove_file(s.policies().join("apps/edge.yaml")).expect("rm");
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!edge_file.exists(), "file of a removed template was kept");
    assert!(s.out().join("us-east-edge").is_dir());
    assert!(s.out().join("us-east-edge/kustomization.yaml").exists());
    let k = std::fs::read_to_string(s.out().join("us-east-edge/kustomization.yaml")).expect("read");
    assert!(!k.contains("edge-cache"), "{k}");
    // A file fedsched did not write is never removed.
    std::fs::write(s.out().join("us-east-edge/handmade.yaml"), "kind: ConfigMap\n").expect("write");
    assert!(s.render().status.success());
    assert!(s.out().join("us-east-edge/handmade.yaml").exists());
}

#[test]
fn unschedulable_workload_keeps_its_previous_output() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let api = s.out().join("eu-west-a/shop/apps_deployment_api.yaml");
    let before = std::fs::read(&api).expect("api rendered");
    // Ask for far more than the fleet can take: the dynamic division cannot place it.
    let text_before = std::fs::read_to_string(s.policies().join("apps/api.yaml")).expect("read");
    s.write("apps/api.yaml", &text_before.replace("replicas: 12", "replicas: 5000"));
    let out = s.render();
    assert!(out.status.success(), "unschedulable is not a failure: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("unschedulable: Deployment/shop/api"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&api).expect("kept"), before, "previous output must be kept");
    // The history records the failed decision with its reason.
    let h = s.cmd("history", &["Deployment/shop/api", "-o", "json"]);
    assert!(h.status.success(), "{}", text(&h.stderr));
    let v: serde_json::Value = serde_json::from_slice(&h.stdout).expect("json");
    let last = v.as_array().and_then(|a| a.last()).expect("history");
    assert!(last["outcome"]["unschedulable"].as_str().unwrap_or("").contains("not enough"), "{last}");
}

/// The files of a pass are rendered in one batch on several threads; the bytes are the same on
/// one thread and on four (`FEDSCHED_THREADS`), placements, overrides and `placements.json`
/// included, on a first render and after an edit.
#[test]
fn the_output_is_the_same_bytes_on_one_thread_and_on_four() {
    let repo = Scratch::new();
    for c in 0..24 {
        repo.write(
            &format!("clusters/m{c}.yaml"),
            &format!(
                "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: m{c}\n  labels: {{tier: t{}}}\n\
                 spec: {{syncMode: Push, region: r{}}}\nstatus:\n  conditions: [{{type: Ready, status: \"True\"}}]\n  resourceSummary:\n\
                 \x20   allocatable: {{cpu: \"{}\", memory: 64Gi, pods: \"110\"}}\n    allocated: {{cpu: \"1\", memory: 1Gi, pods: \"5\"}}\n",
                c % 2,
                c % 3,
                8 + c % 5
            ),
        );
    }
    repo.write(
        "overrides.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterOverridePolicy\nmetadata: {name: regional}\nspec:\n\
         \x20 resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  overrideRules:\n\
         \x20 - targetCluster: {labelSelector: {matchLabels: {tier: t1}}}\n\
         \x20   overriders: {imageOverrider: [{component: Registry, operator: replace, value: mirror.example}]}\n",
    );
    let app = |i: usize, replicas: usize| {
        let strategy = match i % 3 {
            0 => "{replicaSchedulingType: Duplicated}",
            1 => "{replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}",
            _ => {
                "{replicaSchedulingType: Divided, replicaDivisionPreference: Weighted, weightPreference: {dynamicWeight: AvailableReplicas}}"
            }
        };
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: w{i}, namespace: default}}\nspec:\n  replicas: {replicas}\n\
             \x20 selector: {{matchLabels: {{app: w{i}}}}}\n  template:\n    metadata: {{labels: {{app: w{i}}}}}\n    spec:\n\
             \x20     containers:\n      - name: c\n        image: registry.example/x:{i}\n        resources: {{requests: {{cpu: 500m, memory: 128Mi}}}}\n\
             ---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: w{i}, namespace: default}}\nspec:\n\
             \x20 resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: w{i}}}]\n  placement:\n    replicaScheduling: {strategy}\n"
        )
    };
    for i in 0..30 {
        repo.write(&format!("apps/w{i}.yaml"), &app(i, 3 + i % 17));
    }
    let render = |s: &Scratch, threads: &str| {
        let o = std::process::Command::new(bin())
            .args(["render", "--policies"])
            .arg(repo.policies())
            .arg("--out")
            .arg(s.out())
            .arg("--state")
            .arg(s.state())
            .env_remove("FEDSCHED_CONFIG")
            .env_remove("NOTIFY_SOCKET")
            .env("FEDSCHED_LOG", "warn")
            .env("FEDSCHED_THREADS", threads)
            .output()
            .expect("run fedsched");
        assert!(o.status.success(), "{}", text(&o.stderr));
    };
    let (one, four) = (Scratch::new(), Scratch::new());
    render(&one, "1");
    render(&four, "4");
    let first = tree(&one.out());
    assert!(first.len() > 300, "enough files for several threads: {}", first.len());
    assert_eq!(first, tree(&four.out()));
    // An edit: one workload scales, another changes strategy; each output follows it alike.
    repo.write("apps/w4.yaml", &app(4, 40));
    repo.write("apps/w5.yaml", &app(6, 9).replace("w6", "w5"));
    render(&one, "1");
    render(&four, "4");
    let second = tree(&one.out());
    assert_ne!(first, second, "the edit changed the output");
    assert_eq!(second, tree(&four.out()));
}
