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

/// The demo's clusters.
const DEMO_CLUSTERS: [&str; 5] = ["eu-west-a", "eu-west-b", "us-east-edge", "us-east-gpu", "us-east-legacy"];

/// A config choosing `[output] layout = "flux"` (and `extra`), written in the scratch area.
pub(crate) fn flux_config(s: &Scratch, extra: &str) -> String {
    let path = s.dir.path().join("flux.toml");
    std::fs::write(&path, format!("[output]\nlayout = \"flux\"\n{extra}")).expect("write config");
    path.display().to_string()
}

/// The demo's repository without the Cluster object of `us-east-legacy` (the last document of
/// `clusters/us-east.yaml`).
pub(crate) fn drop_legacy_cluster(s: &Scratch) {
    let path = s.policies().join("clusters/us-east.yaml");
    let text = std::fs::read_to_string(&path).expect("read");
    let (kept, legacy) = text.rsplit_once("\n---\n").expect("documents");
    assert!(legacy.contains("  name: us-east-legacy\n"), "{legacy}");
    std::fs::write(&path, format!("{kept}\n")).expect("write");
}

/// The Flux `Kustomization` the flux layout gives `cluster` with the default `[output.flux]`.
fn flux_kustomization(cluster: &str) -> String {
    format!(
        "# Generated by fedsched. Do not edit: changes are overwritten.\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n\
         metadata:\n  name: fedsched-{cluster}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./{cluster}\n  \
         prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
    )
}

/// `tree(out)` without the root files of the flux layout (`clusters/`).
fn without_root_files(out: &std::path::Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("tempdir");
    for (rel, bytes) in tree(out).into_iter().filter(|(rel, _)| !rel.starts_with("clusters/")) {
        let p = copy.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, bytes).expect("write");
    }
    copy
}

/// `[output] layout = "flux"` (issue 51, "Open output layout"): the cluster directories are the
/// kustomize layout's to the byte (the demo's golden files), and the root gains one Flux
/// `Kustomization` per cluster at `clusters/<cluster>/fedsched.yaml`, syncing and pruning its
/// directory; a cluster that leaves loses its root file (its directory stays, as always), and
/// going back to the default layout removes every root file, leaving the golden output.
#[test]
fn the_flux_layout_gives_each_cluster_a_flux_kustomization_at_the_root() {
    let s = Scratch::with_demo();
    let config = flux_config(&s, "");
    let out = s.render_with(&["--config", &config], &[]);
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    assert_golden(without_root_files(&s.out()).path(), "demo");
    let roots = |out: &std::path::Path| -> Vec<(String, String)> {
        tree(out)
            .into_iter()
            .filter(|(rel, _)| rel.starts_with("clusters/"))
            .map(|(rel, bytes)| (rel, text(&bytes)))
            .collect()
    };
    let expected: Vec<(String, String)> =
        DEMO_CLUSTERS.iter().map(|c| (format!("clusters/{c}/fedsched.yaml"), flux_kustomization(c))).collect();
    assert_eq!(roots(&s.out()), expected);
    for c in DEMO_CLUSTERS {
        assert!(
            s.out().join(c).join("kustomization.yaml").is_file(),
            "{c}: spec.path names a directory with its index"
        );
    }
    let again = s.render_with(&["--config", &config], &[]);
    assert!(text(&again.stderr).contains("0 written, 0 removed"), "{}", text(&again.stderr));

    drop_legacy_cluster(&s);
    let out = s.render_with(&["--config", &config], &[]);
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    assert_eq!(roots(&s.out()), expected[..4].to_vec(), "the leaving cluster's root file is removed");
    assert!(!s.out().join("clusters/us-east-legacy").exists(), "its emptied directory is pruned");
    assert!(s.out().join("us-east-legacy/kustomization.yaml").is_file(), "cluster directories are never removed");

    let out = s.render_with(&[], &[]);
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    assert!(roots(&s.out()).is_empty(), "the default layout has no root files");
}

/// `[output.flux]` sets the source and the path of the output in it; with `[secrets] mode =
/// "sops"` each Kustomization decrypts. A cluster named as the root files' directory is
/// refused under the flux layout, naming it.
#[test]
fn the_flux_kustomization_takes_its_source_from_the_config() {
    let s = Scratch::with_demo();
    let config = flux_config(
        &s,
        "[output.flux]\nsource_kind = \"OCIRepository\"\nsource_name = \"fleet\"\nsource_namespace = \"gitops\"\n\
         path = \"./fleet/out\"\ninterval = \"1m\"\ndecryption_secret = \"sops-age\"\n[secrets]\nmode = \"sops\"\n",
    );
    let out = s.render_with(&["--config", &config], &[]);
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    let k = std::fs::read_to_string(s.out().join("clusters/eu-west-a/fedsched.yaml")).expect("root file");
    let spec = "spec:\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n  interval: 1m\n  \
                path: ./fleet/out/eu-west-a\n  prune: true\n  sourceRef:\n    kind: OCIRepository\n    name: fleet\n    \
                namespace: gitops\n";
    assert!(k.ends_with(spec), "{k}");

    let clash = Scratch::with_demo();
    let cluster = std::fs::read_to_string(clash.policies().join("clusters/eu-west.yaml")).expect("read");
    clash.write("clusters/eu-west.yaml", &cluster.replace("name: eu-west-a\n", "name: clusters\n"));
    let config = flux_config(&clash, "");
    let out = clash.render_with(&["--config", &config], &[]);
    assert!(!out.status.success(), "a cluster named clusters under the flux layout");
    let err = text(&out.stderr);
    assert!(err.contains("\"clusters\"") && err.contains("root files"), "{err}");
}
