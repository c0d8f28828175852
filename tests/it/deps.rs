//! propagateDeps, the declarative workload interpreter and claim stickiness, end to end.

use crate::support::*;

const APP: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: app, namespace: shop}
spec:
  propagateDeps: true
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: app}
  placement:
    clusterAffinity: {clusterNames: [eu-west-a]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      serviceAccountName: app-runner
      containers:
      - name: app
        image: registry.example.com/app:1
        envFrom: [{secretRef: {name: app-secret}}]
        volumeMounts: [{name: cfg, mountPath: /cfg}]
      volumes:
      - {name: cfg, configMap: {name: web-config}}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret, namespace: shop}
stringData: {token: x}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: app-runner, namespace: shop}
"#;

#[test]
fn dependencies_follow_their_workload() {
    let s = Scratch::with_demo();
    s.write("app.yaml", APP);
    // The Secret in clear text (an explicit opt-in; tests/it/secrets.rs has the other modes).
    let config = s.dir.path().join("fedsched.toml");
    std::fs::write(&config, "[secrets]\nmode = \"plain\"\n").expect("config");
    let out = s.render_with(&["--config", config.to_str().expect("utf-8")], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let files = tree(&s.out());
    // Unclaimed dependencies go only where the workload goes.
    for f in ["eu-west-a/shop/core_secret_app-secret.yaml", "eu-west-a/shop/core_serviceaccount_app-runner.yaml"] {
        assert!(files.contains_key(f), "{f} missing: {:?}", files.keys().collect::<Vec<_>>());
    }
    assert!(!files.keys().any(|k| k.contains("app-secret") && !k.starts_with("eu-west-a/")));
    // A dependency claimed by its own policy (web-config, by `web`) keeps its own clusters too.
    assert!(files.contains_key("eu-west-b/shop/core_configmap_web-config.yaml"));
    let out = s.cmd("explain", &["Secret/shop/app-secret", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["state"], "Scheduled", "{v}");
    assert_eq!(v["requiredBy"], serde_json::json!(["Deployment/shop/app"]), "{v}");
    assert_eq!(v["pulledBy"][0]["cluster"], "eu-west-a", "{v}");
}

#[test]
fn workload_interpreter_divides_a_custom_kind() {
    let s = Scratch::with_demo_serving("apps.kruise.io/v1alpha1", "CloneSet");
    s.write(
        "cloneset.yaml",
        r#"apiVersion: fedsched.io/v1alpha1
kind: WorkloadInterpreter
metadata: {name: cloneset}
spec:
  target: {apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet}
  replicasPath: /spec/replicas
  podTemplatePath: /spec/template
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: clones, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet, name: clones}
  placement:
    clusterAffinity: {clusterNames: [eu-west-a, eu-west-b]}
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}
---
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: clones, namespace: shop}
spec:
  replicas: 5
  template:
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"#,
    );
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = s.cmd("explain", &["CloneSet/shop/clones", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // 5 over 1:1 ⇒ 3/2 (ties by name ascending without a uid).
    assert_eq!(v["output"], serde_json::json!({"eu-west-a": 3, "eu-west-b": 2}), "{v}");
    let files = tree(&s.out());
    let f = files.get("eu-west-b/shop/apps.kruise.io_cloneset_clones.yaml").expect("rendered");
    assert!(text(f).contains("replicas: 2"), "{}", text(f));
}

#[test]
fn a_claimed_template_keeps_its_policy_until_preempted() {
    let s = Scratch::with_demo();
    let out = s.render();
    assert!(out.status.success());
    // A better policy without preemption appears: web stays with `web`.
    let better = |preemption: &str| {
        format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: web-new, namespace: shop}}\nspec:\n  priority: 10\n{preemption}  resourceSelectors:\n  - {{apiVersion: apps/v1, kind: Deployment, name: web}}\n  placement:\n    clusterAffinity: {{clusterNames: [eu-west-b]}}\n"
        )
    };
    s.write("policies/web-new.yaml", &better(""));
    assert!(s.render().status.success());
    let doc = |s: &Scratch| -> serde_json::Value {
        serde_json::from_slice(&s.cmd("explain", &["Deployment/shop/web", "-o", "json"]).stdout).expect("json")
    };
    let v = doc(&s);
    assert_eq!(
        (v["policy"]["name"].as_str(), v["claim"]["reason"].as_str()),
        (Some("web"), Some("already-claimed")),
        "{v}"
    );
    assert_eq!(v["shadowed"][0]["name"], "web-new", "{v}");
    // With preemption: Always it takes the template (and, being the best, keeps it).
    s.write("policies/web-new.yaml", &better("  preemption: Always\n"));
    assert!(s.render().status.success());
    let v = doc(&s);
    assert_eq!(v["policy"]["name"], "web-new", "{v}");
    assert_eq!(v["shadowed"][0]["name"], "web", "{v}");
    assert_eq!(v["output"], serde_json::json!({"eu-west-b": 9}), "{v}");
}
