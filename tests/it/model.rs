//! Issue 54, the resource model finished: offline members are never promised the same room
//! twice in one pass; CPU performance in every decision that compares CPU across clusters;
//! autoscaled workloads that GitOps does not fight. The real binary (and the daemon in
//! process) on real files.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::daemon::InProcess;
use crate::support::*;
use fedsched::daemon::Control;

/// An offline Cluster object: `cpu` allocatable and `allocated` cores committed, `labels`
/// added.
pub(crate) fn offline_cluster(name: &str, cpu: u32, allocated: u32, labels: &str) -> String {
    format!(
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n  labels: {{env: prod{labels}}}\n\
         spec: {{syncMode: Push, region: r1}}\nstatus:\n  conditions: [{{type: Ready, status: \"True\"}}]\n  resourceSummary:\n    \
         allocatable: {{cpu: \"{cpu}\", memory: 512Gi, pods: \"1100\"}}\n    allocated: {{cpu: \"{allocated}\", memory: 0, pods: \"0\"}}\n"
    )
}

/// A Deployment of `replicas` × `cpu` and its PropagationPolicy with `placement`.
pub(crate) fn deployment(name: &str, replicas: u32, cpu: &str, placement: &str, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  replicas: {replicas}\n  \
         selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      \
         containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]\n---\n\
         apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: {name}, namespace: shop{annotations}}}\n\
         spec:\n  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: {name}}}]\n  placement:\n    {placement}\n"
    )
}

const AGGREGATED: &str = "replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}";

/// The published placements: workload name → cluster → replicas.
pub(crate) fn placed(s: &Scratch) -> BTreeMap<String, BTreeMap<String, i64>> {
    let doc: Value = serde_json::from_str(&placements_of(&s.out()).expect("summary")).expect("json");
    let mut out = BTreeMap::new();
    for p in doc["placements"].as_array().expect("placements") {
        if p["workload"]["kind"] != "Deployment" {
            continue;
        }
        let clusters = p["clusters"]
            .as_array()
            .expect("clusters")
            .iter()
            .map(|c| (c["name"].as_str().expect("name").to_string(), c["replicas"].as_i64().unwrap_or(-1)))
            .collect();
        out.insert(p["workload"]["name"].as_str().expect("name").to_string(), clusters);
    }
    out
}

fn explain(s: &Scratch, what: &str) -> Value {
    let out = s.cmd("explain", &[what, "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn cluster<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["clusters"].as_array().and_then(|a| a.iter().find(|c| c["name"] == name)).expect("cluster in explain")
}

fn two_offline_members(s: &Scratch) {
    // big: 14 cores free (20 − 6); small: 12 free.
    s.write(
        "clusters.yaml",
        &format!("{}---\n{}", offline_cluster("big", 20, 6, ""), offline_cluster("small", 12, 0, "")),
    );
    s.write(
        "shop.yaml",
        &format!(
            "{}---\n{}",
            deployment("first", 10, "1", AGGREGATED, ""),
            deployment("second", 10, "1", AGGREGATED, "")
        ),
    );
}

/// Two Aggregated Deployments of 10 × 1 CPU and an offline member with 14 CPU free: the
/// first takes 10 of them, the second sees the 4 left (explain says so) and goes to the other
/// member; the next pass starts from the Cluster status again and decides the same.
#[test]
fn offline_members_are_not_promised_the_same_room_twice_in_one_pass() {
    let s = Scratch::new();
    two_offline_members(&s);
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want: BTreeMap<String, BTreeMap<String, i64>> = [
        ("first".to_string(), [("big".to_string(), 10)].into()),
        ("second".to_string(), [("small".to_string(), 10)].into()),
    ]
    .into();
    assert_eq!(placed(&s), want);
    let first = explain(&s, "Deployment/shop/first");
    assert_eq!(cluster(&first, "big")["availableReplicas"], 14, "{first}");
    let second = explain(&s, "Deployment/shop/second");
    let big = cluster(&second, "big");
    assert_eq!(big["availableReplicas"], 4, "{big}");
    let reasons = big["reasons"].to_string();
    assert!(
        reasons.contains("assumed: 10 replicas of earlier decisions of this pass") && reasons.contains("cpu 10"),
        "{reasons}"
    );
    assert!(reasons.contains("cpu: 4 free"), "{reasons}");
    // Text form as a user reads it.
    let t = text(&s.cmd("explain", &["Deployment/shop/second"]).stdout);
    assert!(t.contains("assumed: 10 replicas"), "{t}");

    // The deduction ends with the pass: a second render decides the same.
    let again = s.render();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(placed(&s), want);

    // `[model] offline_deductions = false`: Karmada's general estimator, both on `big`.
    let karmada = Scratch::new();
    two_offline_members(&karmada);
    let config = karmada.dir.path().join("fedsched.toml");
    std::fs::write(&config, "[model]\noffline_deductions = false\n").expect("config");
    let out = karmada.render_with(&["--config", config.to_str().expect("utf8")], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let both = placed(&karmada);
    assert_eq!((both["first"].get("big"), both["second"].get("big")), (Some(&10), Some(&10)), "{both:?}");
}

/// The daemon keeps the rule pass after pass (its decisions reused from memory) and after an
/// edit that decides one of them again.
#[test]
fn the_daemon_deducts_offline_decisions_within_each_pass_only() {
    let s = Scratch::new();
    two_offline_members(&s);
    let mut d = InProcess::start(&s, "", false);
    d.passes(1);
    let want = placed(&s);
    assert_eq!(want["second"].keys().collect::<Vec<_>>(), ["small"], "{want:?}");
    d.send(Control::Tick);
    d.passes(2);
    assert_eq!(placed(&s), want, "a quiet pass decides the same");
    // The first one grows to 12: it still fits on big (14); the second still sees what is left.
    let path = s.policies().join("shop.yaml");
    let edited = std::fs::read_to_string(&path).expect("read").replacen("replicas: 10", "replicas: 12", 1);
    std::fs::write(&path, edited).expect("write");
    d.send(Control::PolicyChanged);
    d.passes(3);
    let now = placed(&s);
    assert_eq!((now["first"].get("big"), now["second"].get("small")), (Some(&12), Some(&10)), "{now:?}");
    d.send(Control::Tick);
    d.passes(4);
    assert_eq!(placed(&s), now);
    d.stop();
}

/// An offline Cluster object described by resource models: grade 0 CPU [0, 4), grade 1 CPU
/// [4, ∞) with `nodes` nodes of grade 1 and one of grade 0; its summary has 40 CPU free, more
/// than the models hold.
fn modelled_cluster(name: &str, nodes: u32) -> String {
    format!(
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n  labels: {{env: prod}}\n\
         spec:\n  syncMode: Push\n  region: r1\n  resourceModels:\n  - grade: 0\n    ranges: [{{name: cpu, min: \"0\", max: \"4\"}}]\n  \
         - grade: 1\n    ranges: [{{name: cpu, min: \"4\", max: \"1000\"}}]\n\
         status:\n  conditions: [{{type: Ready, status: \"True\"}}]\n  resourceSummary:\n    \
         allocatable: {{cpu: \"40\", memory: 512Gi, pods: \"1100\"}}\n    allocated: {{cpu: \"0\", memory: 0, pods: \"0\"}}\n    \
         allocatableModelings: [{{grade: 0, count: 1}}, {{grade: 1, count: {nodes}}}]\n"
    )
}

/// Offline members with resource models: the first Aggregated Deployment of 8 × 1 CPU takes
/// 8 of the 12 replicas the modelled member's three 4-CPU nodes hold (first fit: two nodes
/// full); the second sees the 4 left there — in the models' own terms, not only 8 fewer of
/// its 1,100 pod slots — and goes to the other member; explain shows what the first took per
/// modelled node.
#[test]
fn offline_members_with_resource_models_are_not_promised_the_same_nodes_twice() {
    let s = Scratch::new();
    s.write(
        "clusters.yaml",
        &format!("{}---\n{}", modelled_cluster("modelled", 3), offline_cluster("other", 10, 0, "")),
    );
    s.write(
        "shop.yaml",
        &format!(
            "{}---\n{}",
            deployment("first", 8, "1", AGGREGATED, ""),
            deployment("second", 8, "1", AGGREGATED, "")
        ),
    );
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want: BTreeMap<String, BTreeMap<String, i64>> = [
        ("first".to_string(), [("modelled".to_string(), 8)].into()),
        ("second".to_string(), [("other".to_string(), 8)].into()),
    ]
    .into();
    assert_eq!(placed(&s), want);
    let first = explain(&s, "Deployment/shop/first");
    assert_eq!(cluster(&first, "modelled")["availableReplicas"], 12, "{first}");
    let second = explain(&s, "Deployment/shop/second");
    let modelled = cluster(&second, "modelled");
    assert_eq!(modelled["availableReplicas"], 4, "{modelled}");
    let reasons = modelled["reasons"].to_string();
    assert!(reasons.contains("assumed: 8 replicas of earlier decisions of this pass"), "{reasons}");
    assert!(
        reasons.contains("grade 1: 2 nodes x 0 replicas")
            && reasons.contains("earlier decisions of this pass took cpu 4, 4 pods of each"),
        "{reasons}"
    );
    assert!(reasons.contains("grade 1: 1 nodes x 4 replicas"), "{reasons}");
    // The deduction ends with the pass: a second render decides the same.
    let again = s.render();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(placed(&s), want);
}

const DYNAMIC: &str = "replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted, weightPreference: {dynamicWeight: AvailableReplicas}}";

/// The founding example: two members each with 20 cores free, a Xeon (factor 1.0) and an EPYC
/// 20 % faster (1.2, `[model.cpu_performance]` on NFD's vendor label), and what each profile
/// does with a 1-CPU replica. Each decision on the declared status (`offline_deductions =
/// false`) so the profiles compare side by side.
#[test]
fn the_xeon_and_the_epyc_per_profile() {
    let s = Scratch::new();
    let config = s.dir.path().join("fedsched.toml");
    std::fs::write(&config, xeon_and_epyc(&s)).expect("config");
    let cfg = config.to_str().expect("utf8");
    let out = s.render_with(&["--config", cfg], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_xeon_and_epyc(&s);
    // Requests stay raw: every rendered replica asks for 1 CPU.
    let manifest =
        std::fs::read_to_string(s.out().join("z-epyc/shop/apps_deployment_dynamic-throughput.yaml")).expect("manifest");
    assert!(manifest.contains("replicas: 12") && manifest.contains("cpu: \"1\""), "{manifest}");
    // explain shows the effect.
    let e = explain_with(&s, "Deployment/shop/dynamic-throughput", cfg);
    let reasons = cluster(&e, "z-epyc")["reasons"].to_string();
    assert!(reasons.contains("CPU performance 1.20: its free replicas weigh 1.20x"), "{reasons}");
    let cheap = explain_with(&s, "Deployment/shop/aggregated-cheap", cfg);
    assert_eq!(
        (
            cluster(&cheap, "z-epyc")["scores"]["cost-first"].as_i64(),
            cluster(&cheap, "a-xeon")["scores"]["cost-first"].as_i64()
        ),
        (Some(100), Some(0)),
        "{cheap}"
    );
}

/// The same in the daemon, pass after pass (decisions reused from memory); after a reload that
/// makes the EPYC as fast as the Xeon, the placed replicas stay (steady division) and a new
/// workload is divided evenly.
#[test]
fn the_daemon_keeps_the_xeon_and_the_epyc_apart_and_follows_a_new_factor() {
    let s = Scratch::new();
    let config = xeon_and_epyc(&s);
    let mut d = InProcess::start(&s, &config, false);
    d.passes(1);
    assert_xeon_and_epyc(&s);
    d.send(Control::Tick);
    d.passes(2);
    assert_xeon_and_epyc(&s);
    let path = s.dir.path().join("fedsched.toml");
    let text = std::fs::read_to_string(&path).expect("config").replace("AuthenticAMD = 1.2", "AuthenticAMD = 1.0");
    std::fs::write(&path, text).expect("config");
    d.send(Control::Reload);
    d.passes(3);
    // Steady division (Karmada's): the placed replicas stay where they are...
    assert_xeon_and_epyc(&s);
    // ...and a new workload is divided evenly.
    let profile = ", annotations: {fedsched.io/profile: throughput}";
    s.write("more.yaml", &deployment("dynamic-throughput-new", 22, "1", DYNAMIC, profile));
    d.send(Control::PolicyChanged);
    d.passes(4);
    assert_eq!(placed(&s)["dynamic-throughput-new"], [("a-xeon".to_string(), 11), ("z-epyc".to_string(), 11)].into());
    d.stop();
}

/// The founding example with the built-in `azure-acu` table instead of hand-written factors:
/// the members' nodes are labelled with their Azure VM size (as AKS labels them), a Dv3 (1.0)
/// and an AMD Dasv4 (ACU 230–260 against 160–190: 1.40); an entry in `[model.cpu_performance]`
/// overrides the table for its size.
#[test]
fn the_azure_acu_table_tells_the_xeon_and_the_epyc_apart_and_an_entry_overrides_it() {
    let run = |model: &str| {
        let s = Scratch::new();
        let size = |v: &str| format!(", node.kubernetes.io/instance-type: {v}");
        s.write(
            "clusters.yaml",
            &format!(
                "{}---\n{}",
                offline_cluster("a-xeon", 20, 0, &size("Standard_D16s_v3")),
                offline_cluster("z-epyc", 20, 0, &size("Standard_D16as_v4"))
            ),
        );
        let profile = ", annotations: {fedsched.io/profile: throughput}";
        let apps = [
            deployment("dynamic", 22, "1", DYNAMIC, ""),
            deployment("dynamic-throughput", 24, "1", DYNAMIC, profile),
            deployment("aggregated-throughput", 15, "1", AGGREGATED, profile),
        ];
        s.write("shop.yaml", &apps.join("---\n"));
        let config = s.dir.path().join("fedsched.toml");
        let toml = format!(
            "[model]\noffline_deductions = false\ncpu_performance_table = \"azure-acu\"\n{model}\
             [profiles.throughput]\nscores = {{ cluster-locality = 1 }}\ncpu_division = \"normalised\"\n"
        );
        std::fs::write(&config, toml).expect("config");
        let cfg = config.to_str().expect("utf8").to_string();
        let out = s.render_with(&["--config", &cfg], &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let e = explain_with(&s, "Deployment/shop/dynamic-throughput", &cfg);
        (placed(&s), cluster(&e, "z-epyc")["reasons"].to_string())
    };
    let pair =
        |x: i64, e: i64| -> BTreeMap<String, i64> { [("a-xeon".to_string(), x), ("z-epyc".to_string(), e)].into() };
    let (got, reasons) = run("");
    // Karmada's division stays raw; the normalised one weighs 20 x 1.0 against 20 x 1.4.
    assert_eq!(got["dynamic"], pair(11, 11));
    assert_eq!(got["dynamic-throughput"], pair(10, 14));
    assert_eq!(got["aggregated-throughput"], BTreeMap::from([("z-epyc".to_string(), 15)]));
    assert!(reasons.contains("CPU performance 1.40"), "{reasons}");
    // An entry for the size wins over the table: 1.2 as in the founding example.
    let (got, reasons) = run("[model.cpu_performance]\n\"Standard_D16as_v4\" = 1.2\n");
    assert_eq!(got["dynamic-throughput"], pair(11, 13));
    assert!(reasons.contains("CPU performance 1.20"), "{reasons}");
}

/// Writes the founding example (two offline members with 20 cores free each, a Xeon and an
/// EPYC, and six Deployments of 1-CPU replicas under three profiles) and returns its config
/// (the EPYC's factor 1.2; each decision on the declared status so the profiles compare side
/// by side).
fn xeon_and_epyc(s: &Scratch) -> String {
    let vendor = |v: &str| format!(", feature.node.kubernetes.io/cpu-model.vendor_id: {v}");
    s.write(
        "clusters.yaml",
        &format!(
            "{}---\n{}",
            offline_cluster("a-xeon", 20, 0, &vendor("GenuineIntel")),
            offline_cluster("z-epyc", 20, 0, &vendor("AuthenticAMD"))
        ),
    );
    let profile = |p: &str| format!(", annotations: {{fedsched.io/profile: {p}}}");
    let apps = [
        deployment("dynamic", 22, "1", DYNAMIC, ""),
        deployment("dynamic-throughput", 22, "1", DYNAMIC, &profile("throughput")),
        deployment("dynamic-throughput-full", 38, "1", DYNAMIC, &profile("throughput")),
        deployment("aggregated", 15, "1", AGGREGATED, ""),
        deployment("aggregated-throughput", 15, "1", AGGREGATED, &profile("throughput")),
        deployment("aggregated-cheap", 15, "1", AGGREGATED, &profile("cheap")),
    ];
    s.write("shop.yaml", &apps.join("---\n"));
    "[model]\noffline_deductions = false\n[model.cpu_performance]\nAuthenticAMD = 1.2\nGenuineIntel = 1.0\n\
     [profiles.throughput]\nscores = { cluster-locality = 1 }\ncpu_division = \"normalised\"\n\
     [profiles.cheap]\nscores = { cost-first = 1 }\n[cost.regions.r1]\ncpu = 0.04\n"
        .to_string()
}

/// What each profile does with the founding example (the EPYC's factor 1.2).
fn assert_xeon_and_epyc(s: &Scratch) {
    let got = placed(s);
    let on = |w: &str| -> Vec<(String, i64)> { got[w].iter().map(|(c, r)| (c.clone(), *r)).collect() };
    let pair = |x: i64, e: i64| vec![("a-xeon".to_string(), x), ("z-epyc".to_string(), e)];
    let xeon = vec![("a-xeon".to_string(), 15)];
    let epyc_15 = vec![("z-epyc".to_string(), 15)];
    // Karmada's division: raw free replicas, 20 and 20.
    assert_eq!(on("dynamic"), pair(11, 11));
    assert_eq!(on("aggregated"), xeon);
    // Normalised: 20 × 1.0 against 20 × 1.2, within the 20 that fit in raw cores.
    assert_eq!(on("dynamic-throughput"), pair(10, 12));
    assert_eq!(on("dynamic-throughput-full"), pair(18, 20));
    assert_eq!(on("aggregated-throughput"), epyc_15);
    // cost-first: the same price per core, so the EPYC's normalised core is cheaper.
    assert_eq!(on("aggregated-cheap"), epyc_15);
}

/// A simulated member with two Ready nodes of 10 cores (no pods), labelled with NFD's CPU
/// vendor `vendor`.
fn live_member(fleet: &std::path::Path, name: &str, vendor: &str) {
    let dir = fleet.join(name);
    std::fs::create_dir_all(&dir).expect("member dir");
    let mut text = format!(
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: {name}, labels: {{env: prod}}}}\n\
         spec: {{syncMode: Push, region: r1}}\n"
    );
    for n in 0..2 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}-{n}\n  labels: {{kubernetes.io/hostname: {name}-{n}, \
             feature.node.kubernetes.io/cpu-model.vendor_id: {vendor}}}\nspec: {{}}\nstatus:\n  \
             allocatable: {{cpu: \"10\", memory: 64Gi, pods: \"110\"}}\n  capacity: {{cpu: \"10\", memory: 64Gi, pods: \"110\"}}\n  \
             conditions: [{{type: Ready, status: \"True\"}}]\n"
        ));
    }
    std::fs::write(dir.join("member.yaml"), text).expect("member");
}

/// The founding example on the simulator's live members (node data polled over HTTPS): two
/// members with 20 raw cores free each on two 10-core nodes, the Xeon's nodes labelled
/// GenuineIntel (factor 1.0), the EPYC's AuthenticAMD (1.2). Each workload is rendered on its
/// own (a repository, output and store of its own), so what each profile does is seen alone:
/// Karmada's division 11/11, the normalised division 10/12 (18/20 when the EPYC is full in raw
/// cores), Aggregated on the EPYC with the normalised division or `cost-first`; least- and
/// most-allocated compare utilisation, which one factor for a whole member does not change (the
/// two score alike); fitting stays raw (a 12-core replica fits no 10-core node, EPYC or not,
/// and explain shows both figures).
#[test]
fn the_xeon_and_the_epyc_on_live_members_per_profile() {
    let s = Scratch::new();
    let fleet = s.dir.path().join("fleet");
    live_member(&fleet, "a-xeon", "GenuineIntel");
    live_member(&fleet, "z-epyc", "AuthenticAMD");
    let sim = crate::live::Sim::start(&fleet, None, &[]);
    let access = std::fs::read_to_string(sim.meta().join("fedsched.toml")).expect("access");
    let profile = |p: &str| format!(", annotations: {{fedsched.io/profile: {p}}}");
    let cases: Vec<(&str, String)> = vec![
        ("dynamic", deployment("dynamic", 22, "1", DYNAMIC, "")),
        ("dynamic-throughput", deployment("dynamic-throughput", 22, "1", DYNAMIC, &profile("throughput"))),
        ("dynamic-throughput-full", deployment("dynamic-throughput-full", 38, "1", DYNAMIC, &profile("throughput"))),
        ("aggregated-throughput", deployment("aggregated-throughput", 15, "1", AGGREGATED, &profile("throughput"))),
        ("aggregated-cheap", deployment("aggregated-cheap", 15, "1", AGGREGATED, &profile("cheap"))),
        ("aggregated-least", deployment("aggregated-least", 15, "1", AGGREGATED, &profile("least"))),
        ("aggregated-most", deployment("aggregated-most", 15, "1", AGGREGATED, &profile("most"))),
        ("oversized", deployment("oversized", 1, "12", AGGREGATED, "")),
    ];
    let mut got: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    let mut explained: BTreeMap<String, Value> = BTreeMap::new();
    for (name, app) in &cases {
        let case = s.dir.path().join(name);
        let policies = case.join("policies");
        copy_dir(&sim.meta().join("clusters"), &policies.join("clusters"));
        std::fs::write(policies.join("app.yaml"), app).expect("app");
        let config = case.join("fedsched.toml");
        std::fs::write(
            &config,
            format!(
                "policy_dir = {:?}\noutput_dir = {:?}\nstate_dir = {:?}\n[model.cpu_performance]\nAuthenticAMD = 1.2\n\
                 GenuineIntel = 1.0\n[profiles.throughput]\nscores = {{ cluster-locality = 1 }}\ncpu_division = \"normalised\"\n\
                 [profiles.cheap]\nscores = {{ cost-first = 1 }}\n[profiles.least]\nscores = {{ least-allocated = 1 }}\n\
                 [profiles.most]\nscores = {{ most-allocated = 1 }}\n[cost.regions.r1]\ncpu = 0.04\n{access}",
                policies.display().to_string(),
                case.join("out").display().to_string(),
                case.join("state").display().to_string(),
            ),
        )
        .expect("config");
        let cfg = config.to_str().expect("utf8");
        let out = fedsched(&["render", "-c", cfg]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let doc: Value = serde_json::from_str(&placements_of(&case.join("out")).expect("summary")).expect("json");
        for p in doc["placements"].as_array().expect("placements") {
            let clusters = p["clusters"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| (c["name"].as_str().expect("name").to_string(), c["replicas"].as_i64().unwrap_or(-1)))
                .collect();
            got.insert(p["workload"]["name"].as_str().expect("name").to_string(), clusters);
        }
        let e = fedsched(&["explain", &format!("Deployment/shop/{name}"), "-o", "json", "-c", cfg]);
        assert!(e.status.success(), "{name}: {}", text(&e.stderr));
        explained.insert(name.to_string(), serde_json::from_slice(&e.stdout).expect("json"));
    }
    let pair =
        |x: i64, e: i64| -> BTreeMap<String, i64> { [("a-xeon".to_string(), x), ("z-epyc".to_string(), e)].into() };
    let epyc = |n: i64| -> BTreeMap<String, i64> { [("z-epyc".to_string(), n)].into() };
    // Karmada's division: raw free replicas, 20 and 20.
    assert_eq!(got["dynamic"], pair(11, 11), "{got:?}");
    // Normalised: 20 × 1.0 against 20 × 1.2, within the 20 that fit in raw cores.
    assert_eq!(got["dynamic-throughput"], pair(10, 12), "{got:?}");
    assert_eq!(got["dynamic-throughput-full"], pair(18, 20), "{got:?}");
    assert_eq!(got["aggregated-throughput"], epyc(15), "{got:?}");
    let reasons = cluster(&explained["dynamic-throughput"], "z-epyc")["reasons"].to_string();
    assert!(reasons.contains("CPU performance 1.20: its free replicas weigh 1.20x"), "{reasons}");
    // cost-first: the same price per core, so the EPYC's normalised core is cheaper.
    assert_eq!(got["aggregated-cheap"], epyc(15), "{got:?}");
    let cheap = &explained["aggregated-cheap"];
    assert_eq!(
        (
            cluster(cheap, "z-epyc")["scores"]["cost-first"].as_i64(),
            cluster(cheap, "a-xeon")["scores"]["cost-first"].as_i64()
        ),
        (Some(100), Some(0)),
        "{cheap}"
    );
    // Least- and most-allocated: one factor for all of a member's nodes changes no
    // utilisation ratio; the two members score alike, and 15 go whole to one of them.
    for (name, scorer) in [("aggregated-least", "least-allocated"), ("aggregated-most", "most-allocated")] {
        let e = &explained[name];
        let (x, z) = (&cluster(e, "a-xeon")["scores"][scorer], &cluster(e, "z-epyc")["scores"][scorer]);
        assert!(x.is_i64() && x == z, "{name}: {e}");
        assert_eq!(got[name].values().sum::<i64>(), 15, "{got:?}");
        assert_eq!(got[name].len(), 1, "{got:?}");
    }
    // Fitting stays raw: no 10-core node takes a 12-core replica, however fast.
    assert!(got.get("oversized").is_none_or(|c| c.values().all(|r| *r <= 0)), "{got:?}");
    let reasons = cluster(&explained["oversized"], "z-epyc")["reasons"].to_string();
    assert!(
        reasons.contains("normalised cores (12 raw) needed per replica")
            && reasons.contains("normalised (10 raw) free"),
        "{reasons}"
    );
}

fn explain_with(s: &Scratch, what: &str, config: &str) -> Value {
    let out = s.cmd("explain", &[what, "-o", "json", "--config", config]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

const STATIC_2_1: &str = "replicaScheduling:\n      replicaSchedulingType: Divided\n      replicaDivisionPreference: Weighted\n      weightPreference:\n        staticWeightList:\n        - {targetCluster: {clusterNames: [big]}, weight: 2}\n        - {targetCluster: {clusterNames: [small]}, weight: 1}";

/// An autoscaling/v2 HPA of `target` (a Deployment of namespace shop) with these bounds.
pub(crate) fn hpa(target: &str, min: u32, max: u32) -> String {
    format!(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {{name: {target}, namespace: shop}}\nspec:\n  \
         scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {target}}}\n  minReplicas: {min}\n  maxReplicas: {max}\n  \
         metrics: [{{type: Resource, resource: {{name: cpu, target: {{type: Utilization, averageUtilization: 70}}}}}}]\n"
    )
}

fn read(s: &Scratch, rel: &str) -> String {
    std::fs::read_to_string(s.out().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// An HPA in the repository that targets a propagated Deployment: the Deployment is rendered
/// without `spec.replicas` (the members' HPAs own it) while the scheduler still divides the
/// declared 6 (4 and 2); the HPA is rendered per member with its bounds divided by that
/// placement (min 3 → 2 + 1, max 30 → 20 + 10), and follows it when the placement changes.
#[test]
fn an_hpa_is_divided_over_its_targets_members_and_owns_their_replicas() {
    let s = Scratch::new();
    s.write(
        "clusters.yaml",
        &format!("{}---\n{}", offline_cluster("big", 64, 0, ""), offline_cluster("small", 64, 0, "")),
    );
    let web = deployment("web", 6, "100m", STATIC_2_1, "");
    // The same policy propagates the HPA (an object without replicas goes to every selected member).
    let web = web.replace(
        "resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]",
        "resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}, {apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, name: web}]",
    );
    s.write("shop.yaml", &web);
    s.write("hpa.yaml", &hpa("web", 3, 30));
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(placed(&s)["web"], [("big".to_string(), 4), ("small".to_string(), 2)].into());
    for c in ["big", "small"] {
        let d = read(&s, &format!("{c}/shop/apps_deployment_web.yaml"));
        assert!(!d.contains("replicas:"), "{c}: the member's HPA owns spec.replicas:\n{d}");
    }
    let bounds = |c: &str| {
        let h = read(&s, &format!("{c}/shop/autoscaling_horizontalpodautoscaler_web.yaml"));
        let v: Value = serde_saphyr::from_str(h.split_once('\n').map_or("", |x| x.1)).expect("yaml");
        (
            v["spec"]["minReplicas"].as_i64(),
            v["spec"]["maxReplicas"].as_i64(),
            v["spec"]["scaleTargetRef"]["name"].clone(),
        )
    };
    assert_eq!(bounds("big"), (Some(2), Some(20), Value::from("web")));
    assert_eq!(bounds("small"), (Some(1), Some(10), Value::from("web")));

    // The placement changes (1:1): the bounds follow on the next pass.
    s.write("shop.yaml", &web.replace("weight: 2}", "weight: 1}"));
    assert!(s.render().status.success());
    assert_eq!(placed(&s)["web"], [("big".to_string(), 3), ("small".to_string(), 3)].into());
    let (b, m) = (bounds("big"), bounds("small"));
    assert_eq!((b.1, m.1), (Some(15), Some(15)));
    assert_eq!(b.0.unwrap_or(0) + m.0.unwrap_or(0), 3, "{b:?} {m:?}");

    // Without the HPA the Deployment says how many again.
    std::fs::remove_file(s.policies().join("hpa.yaml")).expect("rm");
    assert!(s.render().status.success());
    assert!(read(&s, "big/shop/apps_deployment_web.yaml").contains("replicas: 3"));
}

/// Karmada's retain-replicas label keeps the member's replicas too; Karmada's FederatedHPA is
/// named in a warning and its target keeps its declared replicas.
#[test]
fn karmadas_retain_label_and_federated_hpa() {
    let s = Scratch::new();
    s.write("clusters.yaml", &offline_cluster("big", 64, 0, ""));
    let retained = deployment("kept", 3, "100m", "replicaScheduling: {replicaSchedulingType: Duplicated}", "")
        .replacen(
            "metadata: {name: kept, namespace: shop}",
            "metadata: {name: kept, namespace: shop, labels: {resourcetemplate.karmada.io/retain-replicas: \"true\"}}",
            1,
        );
    let plain = deployment("fed", 3, "100m", "replicaScheduling: {replicaSchedulingType: Duplicated}", "");
    let fhpa = "apiVersion: autoscaling.karmada.io/v1alpha1\nkind: FederatedHPA\nmetadata: {name: fed, namespace: shop}\nspec:\n  \
                scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: fed}\n  minReplicas: 1\n  maxReplicas: 10\n";
    s.write("shop.yaml", &format!("{retained}---\n{plain}---\n{fhpa}"));
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!read(&s, "big/shop/apps_deployment_kept.yaml").contains("\n  replicas:"));
    assert!(read(&s, "big/shop/apps_deployment_fed.yaml").contains("replicas: 3"));
    let check = fedsched(&["check", "--policies", s.policies().to_str().expect("utf8")]);
    let all = format!("{}{}", text(&check.stdout), text(&check.stderr));
    assert!(
        all.contains("FederatedHPA is not run by fedsched") && all.contains("`fed` keeps its declared replicas"),
        "{all}"
    );
}

/// A custom kind of `example.io/v1` whose replicas `customization` interprets: `size`
/// replicas of 100m, `shards: 7` beside them; its policy divides it 2:1 over big and small.
fn custom_workload(kind: &str, customization: &str) -> String {
    format!(
        "apiVersion: example.io/v1\nkind: {kind}\nmetadata: {{name: cache, namespace: shop}}\nspec:\n  size: 6\n  shards: 7\n  \
         template: {{spec: {{containers: [{{name: c, image: redis}}]}}}}\n---\n{customization}---\n\
         apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: cache, namespace: shop}}\nspec:\n  \
         resourceSelectors: [{{apiVersion: example.io/v1, kind: {kind}, name: cache}}]\n  placement:\n    {STATIC_2_1}\n---\n\
         apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {{name: cache, namespace: shop}}\nspec:\n  \
         scaleTargetRef: {{apiVersion: example.io/v1, kind: {kind}, name: cache}}\n  minReplicas: 3\n  maxReplicas: 30\n---\n\
         apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: cache-hpa, namespace: shop}}\nspec:\n  \
         resourceSelectors: [{{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, name: cache}}]\n  \
         placement: {{replicaScheduling: {{replicaSchedulingType: Duplicated}}}}\n"
    )
}

/// A ResourceInterpreterCustomization of `kind` with these Lua scripts (each a `field: script`
/// pair, the script's lines indented by the caller).
fn customization(kind: &str, scripts: &[(&str, &str)]) -> String {
    let mut out = format!(
        "apiVersion: config.karmada.io/v1alpha1\nkind: ResourceInterpreterCustomization\nmetadata: {{name: {}}}\nspec:\n  \
         target: {{apiVersion: example.io/v1, kind: {kind}}}\n  customizations:\n",
        kind.to_lowercase()
    );
    for (field, script) in scripts {
        out.push_str(&format!("    {field}:\n      luaScript: |\n"));
        for line in script.lines() {
            out.push_str(&format!("        {line}\n"));
        }
    }
    out
}

const GET_SIZE: &str = "function GetReplicas(obj)\n  return obj.spec.size, {resourceRequest = {cpu = '100m'}}\nend";

/// Kinds whose replicas Lua customizations read (`replicaResource`) and write
/// (`replicaRevision`), under an HPA: their rendered files leave out what the revision writes
/// (`spec.size`, and `spec.pods` it derives from the count) or, without a revision, the field
/// the script reads the count from — as `spec.replicas` is left out of a Deployment's — and
/// keep the rest; without the HPA the revision writes each member's share again.
#[test]
fn an_hpa_owns_the_replicas_of_kinds_a_script_reads_and_writes() {
    let s = Scratch::new();
    s.write(
        "clusters.yaml",
        &format!("{}---\n{}", offline_cluster("big", 64, 0, ""), offline_cluster("small", 64, 0, "")),
    );
    let revise = "function ReviseReplica(obj, desired)\n  obj.spec.size = desired\n  obj.spec.pods = desired * 2\n  return obj\nend";
    let revised = customization("Revised", &[("replicaResource", GET_SIZE), ("replicaRevision", revise)]);
    s.write("revised.yaml", &custom_workload("Revised", &revised));
    let read_only = customization("ReadOnly", &[("replicaResource", GET_SIZE)]);
    s.write("read-only.yaml", &custom_workload("ReadOnly", &read_only).replace("name: cache", "name: store"));
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = |rel: &str| -> Value {
        let t = read(&s, rel);
        serde_saphyr::from_str(t.split_once('\n').expect("header").1).expect("yaml")
    };
    for c in ["big", "small"] {
        let revised = doc(&format!("{c}/shop/example.io_revised_cache.yaml"));
        assert_eq!(revised["spec"].get("size"), None, "{c}: {revised}");
        assert_eq!(revised["spec"].get("pods"), None, "{c}: {revised}");
        assert_eq!(revised["spec"]["shards"], 7, "{c}: {revised}");
        let read_only = doc(&format!("{c}/shop/example.io_readonly_store.yaml"));
        assert_eq!(read_only["spec"].get("size"), None, "{c}: {read_only}");
        assert_eq!(read_only["spec"]["shards"], 7, "{c}: {read_only}");
    }
    // The scheduler still divides the declared 6, and the HPAs' bounds follow (3..30: 2..20, 1..10).
    let hpa = doc("big/shop/autoscaling_horizontalpodautoscaler_cache.yaml");
    assert_eq!((hpa["spec"]["minReplicas"].as_i64(), hpa["spec"]["maxReplicas"].as_i64()), (Some(2), Some(20)));

    // Without the HPAs the revision writes each member's share; the read-only kind keeps its
    // template's count (no revision to write it, as Karmada).
    for f in ["revised.yaml", "read-only.yaml"] {
        let path = s.policies().join(f);
        let text = std::fs::read_to_string(&path).expect("read");
        let without: Vec<&str> = text.split("---\n").filter(|d| !d.contains("HorizontalPodAutoscaler")).collect();
        std::fs::write(&path, without.join("---\n")).expect("write");
    }
    let out = s.render();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let big = doc("big/shop/example.io_revised_cache.yaml");
    assert_eq!((big["spec"]["size"].as_i64(), big["spec"]["pods"].as_i64()), (Some(4), Some(8)), "{big}");
    assert_eq!(doc("small/shop/example.io_readonly_store.yaml")["spec"]["size"], 6);
}

/// The daemon on the simulator: an HPA-managed Deployment whose members' HPAs scale it (the
/// simulated HPA holds its target at its share of `maxReplicas`, 8 in all against 6 declared),
/// and fedsched's next passes do not undo it: its files never set `spec.replicas`.
#[test]
fn the_members_hpas_scale_and_the_next_passes_do_not_undo_it() {
    let t = crate::live::setup_with(2, true, crate::live::WATCHED, &[]);
    let policy = "---\napiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\nmetadata: {name: web-hpa}\nspec:\n  \
                  resourceSelectors: [{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, name: web, namespace: shop}]\n  \
                  placement: {replicaScheduling: {replicaSchedulingType: Duplicated}}\n";
    t.s.write("apps/hpa.yaml", &format!("{}{policy}", hpa("web", 2, 8)));
    let (mut child, log) = crate::live::daemon(&t, "info");
    let config = t.config.to_str().expect("utf8");
    let pods = || -> BTreeMap<String, i64> {
        let o = fedsched(&["status", "-c", config, "Deployment/shop/web", "-o", "json"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        v["clusters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| Some((c["name"].as_str()?.to_string(), c["pods"].as_i64()?)))
            .collect()
    };
    let max_of = |c: &str| -> Option<i64> {
        let h = std::fs::read_to_string(t.s.out().join(c).join("shop/autoscaling_horizontalpodautoscaler_web.yaml"))
            .ok()?;
        let v: Value = serde_saphyr::from_str(h.split_once('\n')?.1).ok()?;
        v["spec"]["maxReplicas"].as_i64()
    };
    let members = ["member-000", "member-001"];
    let scaled = || {
        let p = pods();
        members.iter().all(|c| max_of(c).is_some_and(|m| p.get(*c) == Some(&m)))
    };
    let started = std::time::Instant::now();
    while !scaled() {
        let l = log.lock().expect("lock").clone();
        assert!(started.elapsed() < Duration::from_secs(90), "the members' HPAs did not scale web: {:?}\n{l}", pods());
        std::thread::sleep(Duration::from_millis(200));
    }
    let total: i64 = members.iter().filter_map(|c| max_of(c)).sum();
    assert_eq!(total, 8, "the HPA's maxReplicas divided over the members");
    let before = pods();
    // Passes go on (every second): nothing resets what the HPAs scaled.
    let passes = |s: &str| s.matches("reconcile done").count();
    let seen = passes(&log.lock().expect("lock"));
    let started = std::time::Instant::now();
    while passes(&log.lock().expect("lock")) < seen + 3 {
        assert!(started.elapsed() < Duration::from_secs(60), "no more passes");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(pods(), before, "a pass undid the HPAs' scaling");
    for c in members {
        let d = std::fs::read_to_string(t.s.out().join(c).join("shop/apps_deployment_web.yaml")).expect("web");
        assert!(!d.contains("replicas:"), "{c}:\n{d}");
    }
    let _ = child.kill();
    let _ = child.wait();
}
