//! The resource model end to end: `fedsched resources` (raw and normalised capacity, groups,
//! confidence), the Cluster constraint annotations (validated by `check`, visible in
//! `explain`), heterogeneity and confidence in `explain` for live members.

use std::time::Duration;

use crate::support::*;

const CLUSTERS: &str = r#"apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: amd
  labels: {feature.node.kubernetes.io/cpu-model.vendor_id: AuthenticAMD, tier: gold}
  annotations: {fedsched.io/reserve: "cpu=25%", fedsched.io/max-replicas-per-workload: "3"}
spec: {syncMode: Push, region: eu}
status:
  resourceSummary:
    allocatable: {cpu: "10", memory: 64Gi, pods: "110"}
    allocated: {cpu: "2", memory: 8Gi, pods: "10"}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: intel
  labels: {feature.node.kubernetes.io/cpu-model.vendor_id: GenuineIntel, tier: silver}
spec: {syncMode: Push, region: us}
status:
  resourceSummary:
    allocatable: {cpu: "10", memory: 64Gi, pods: "110"}
"#;

const APP: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 8
  template:
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
"#;

const MODEL: &str = "[model]\n[model.cpu_performance]\nAuthenticAMD = 1.2\nGenuineIntel = 1.0\n";

fn json(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("json")
}

#[test]
fn offline_resources_constraints_and_heterogeneity() {
    let s = Scratch::new();
    s.write("clusters.yaml", CLUSTERS);
    s.write("apps/web.yaml", APP);
    let config = s.dir.path().join("fedsched.toml");
    std::fs::write(&config, MODEL).expect("config");
    let cfg = config.to_str().expect("utf8");
    assert!(s.render().status.success());

    // Grouped by region: the AMD cluster's 10 raw cores are 12 normalised.
    let doc = json(&s.cmd("resources", &["-c", cfg, "-o", "json"]));
    assert_eq!(doc["by"], "region");
    let groups = doc["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 2);
    let eu = &groups[0];
    assert_eq!(eu["group"], "eu");
    assert_eq!(eu["resources"]["cpu"]["capacity"], "10");
    assert_eq!(eu["resources"]["cpu"]["free"], "8");
    assert_eq!(eu["resources"]["cpu"]["normalised"]["capacity"], 12.0);
    assert_eq!(eu["resources"]["cpu"]["normalised"]["free"], 9.6);
    assert_eq!(eu["confidence"]["min"], 1.0, "offline clusters are trusted: {eu}");
    let by_label = json(&s.cmd("resources", &["-c", cfg, "--by", "label=tier", "-o", "json"]));
    let names: Vec<&str> =
        by_label["groups"].as_array().expect("groups").iter().filter_map(|g| g["group"].as_str()).collect();
    assert_eq!(names, ["gold", "silver"]);
    let t = s.cmd("resources", &["-c", cfg, "--by", "provider"]);
    assert!(text(&t.stdout).contains("provider (none): 2 cluster(s) (amd, intel)"), "{}", text(&t.stdout));
    assert!(text(&t.stdout).contains("capacity 20 (22.0 normalised)"), "{}", text(&t.stdout));
    assert_eq!(s.cmd("resources", &["--by", "rack"]).status.code(), Some(64), "clap rejects a bad --by: a usage error");

    // The reserve (25 % of 10 CPU ⇒ 8 − 2.5 = 5 replicas) and the per-workload cap (3) show.
    let v = json(&s.cmd("explain", &["Deployment/shop/web", "-o", "json"]));
    let amd = v["clusters"].as_array().and_then(|a| a.iter().find(|c| c["name"] == "amd")).expect("amd");
    assert_eq!(amd["estimators"]["cluster-reserve"], 5, "{amd}");
    assert_eq!(amd["availableReplicas"], 3, "{amd}");
    let reasons = amd["reasons"].to_string();
    assert!(reasons.contains("cluster allows at most 3 replicas per workload"), "{reasons}");
    assert!(amd["replicas"].as_i64().is_some_and(|r| r <= 3), "{amd}");

    // `check` validates the annotations and names them.
    s.write("clusters.yaml", &CLUSTERS.replace("cpu=25%", "cpu=lots"));
    let o = fedsched(&["check", "--policies", s.policies().to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout).contains("metadata.annotations.fedsched.io/reserve"), "{}", text(&o.stdout));
    s.write("clusters.yaml", &CLUSTERS.replace("\"3\"", "\"-1\""));
    let o = fedsched(&["check", "--policies", s.policies().to_str().expect("utf8")]);
    assert!(text(&o.stdout).contains("fedsched.io/max-replicas-per-workload"), "{}", text(&o.stdout));
}

const BIG: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: big, namespace: shop}
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: "100"}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: big, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: big}]
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
"#;

const WEB2: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web2, namespace: shop}
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web2, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web2}]
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
"#;

#[test]
fn live_heterogeneity_and_confidence_in_explain_and_resources() {
    let t = crate::live::setup(2, false, "timeout = \"5s\"\nread_timeout = \"2s\"\nmax_backoff = \"1s\"");
    let model = "\n[model]\nfresh_for = \"0s\"\nconfidence_half_life = \"2s\"\nmin_confidence = 0.3\n\
                 [model.cpu_performance]\nAMD = 1.25\nIntel = 1.0\nARM = 0.75\n";
    let mut cfg_text = std::fs::read_to_string(&t.config).expect("config");
    cfg_text.push_str(model);
    std::fs::write(&t.config, cfg_text).expect("config");
    let cfg = t.config.to_str().expect("utf8");
    t.s.write("apps/big.yaml", BIG);
    let o = fedsched(&["render", "-c", cfg]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // No agent applies the output: the 6 replicas of web are decided but not running, so the
    // next pass deducts them (assumed workloads) and still decides the same.
    let placements = || placements_of(&t.s.out()).expect("placements");
    let before = placements();
    let o = fedsched(&["render", "-c", cfg]);
    assert!(text(&o.stderr).contains("; 6 assumed replica(s) deducted from live members"), "{}", text(&o.stderr));
    assert_eq!(placements(), before);

    // Nothing fits 100 cores: explain says why, in raw and normalised cores.
    let v = json(&fedsched(&["explain", "-c", cfg, "Deployment/shop/big", "-o", "json"]));
    let reasons = v["clusters"].to_string();
    assert!(reasons.contains("estimator node-level: 0 more replicas fit"), "{reasons}");
    assert!(reasons.contains("normalised cores (100 raw) needed per replica, largest node has"), "{reasons}");
    assert!(v["clusters"][0]["data"]["confidence"].as_f64().is_some(), "{v}");

    // `resources` reads the live snapshots from the store: live, aged, confidence below 1.
    std::thread::sleep(Duration::from_millis(2500));
    let doc = json(&fedsched(&["resources", "-c", cfg, "--by", "provider", "-o", "json"]));
    let clusters: Vec<&serde_json::Value> = doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["clusters"].as_array().expect("c").iter())
        .collect();
    assert_eq!(clusters.len(), 2);
    for c in clusters {
        assert_eq!(c["source"], "live", "{c}");
        let conf = c["confidence"].as_f64().expect("confidence");
        assert!(conf < 0.5 && conf > 0.0, "2.5 s with a 2 s half-life: {c}");
        assert!(c["ageSeconds"].as_u64().is_some_and(|a| a >= 2), "{c}");
    }

    // The members stop answering: their views age below min_confidence, so a new workload
    // gets no replicas there while the stale data is shown with its confidence.
    drop(t.sim);
    std::thread::sleep(Duration::from_millis(1500));
    t.s.write("apps/web2.yaml", WEB2);
    let o = fedsched(&["render", "-c", cfg]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v = json(&fedsched(&["explain", "-c", cfg, "Deployment/shop/web2", "-o", "json"]));
    let reasons = v["clusters"].to_string();
    assert!(reasons.contains("confidence:") && reasons.contains("no new replicas"), "{reasons}");
    let text_out = fedsched(&["explain", "-c", cfg, "Deployment/shop/web2"]);
    assert!(text(&text_out.stdout).contains(", confidence 0."), "{}", text(&text_out.stdout));
}
