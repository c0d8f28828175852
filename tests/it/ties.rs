//! Ties between clusters of exactly equal capacity go as in Karmada's scheduler (issue 16),
//! through `fedsched render` on a repository of Karmada YAML.

use crate::support::*;

/// An offline Cluster serving Deployments, with `cpu` CPUs free, in `region` when given.
fn cluster(name: &str, region: Option<&str>, cpu: u32) -> String {
    let region = region.map(|r| format!(", region: {r}")).unwrap_or_default();
    format!(
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: {name}}}\nspec: {{syncMode: Push{region}}}\n\
         status:\n  apiEnablements: [{{groupVersion: apps/v1, resources: [{{name: deployments, kind: Deployment}}]}}]\n  \
         resourceSummary: {{allocatable: {{cpu: '{cpu}', memory: 256Gi, pods: '1000'}}}}\n---\n"
    )
}

/// The Deployment `shop/web`, one CPU per replica, no UID (Webster ties by name ascending).
fn deployment(replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: shop}}\nspec:\n  replicas: {replicas}\n  \
         selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      \
         containers: [{{name: web, image: nginx, resources: {{requests: {{cpu: '1'}}}}}}]\n"
    )
}

fn policy(placement: &str) -> String {
    format!(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: web, namespace: shop}}\nspec:\n  \
         resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: web}}]\n  placement:\n{placement}"
    )
}

/// Replicas of `shop/web` per cluster directory of the output (clusters without it left out).
fn placed(s: &Scratch) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(s.out()).expect("out dir") {
        let dir = entry.expect("entry").path();
        let Ok(y) = std::fs::read_to_string(dir.join("shop/apps_deployment_web.yaml")) else { continue };
        let replicas = y
            .lines()
            .find_map(|l| l.trim().strip_prefix("replicas: "))
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("no replicas in {y}"));
        out.push((dir.file_name().expect("name").to_string_lossy().into_owned(), replicas));
    }
    out.sort();
    out
}

fn render(s: &Scratch, extra: &[&str]) {
    let dir = |p: std::path::PathBuf| p.display().to_string();
    let (p, o, st) = (dir(s.policies()), dir(s.out()), dir(s.state()));
    let mut args = vec!["render", "--policies", &p, "--out", &o, "--state", &st];
    args.extend_from_slice(extra);
    let out = fedsched(&args);
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
}

fn pairs(items: &[(&str, u32)]) -> Vec<(String, u32)> {
    items.iter().map(|(n, r)| (n.to_string(), *r)).collect()
}

#[test]
fn a_region_spread_first_schedule_breaks_ties_by_region_order() {
    // Regions east < north < west; cluster names the other way round. Karmada takes the best
    // cluster of each region in region order (z-east, m-north, a-west), sorts them by free
    // replicas with Go's sort.Sort (3 elements: insertion sort, nothing moves) and fills the
    // shortest prefix: z-east and m-north share the 15 replicas (Webster: 8 / 7, names
    // ascending). The derivation step by step is in schedule::tests.
    let s = Scratch::new();
    let clusters = [
        cluster("a-west", Some("west"), 10),
        cluster("m-north", Some("north"), 10),
        cluster("z-east", Some("east"), 10),
    ];
    s.write("clusters.yaml", &clusters.concat());
    s.write("web.yaml", &deployment(15));
    s.write(
        "policy.yaml",
        &policy(
            "    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}\n    \
             spreadConstraints:\n    - {spreadByField: region, minGroups: 3, maxGroups: 3}\n    \
             - {spreadByField: cluster, minGroups: 3, maxGroups: 3}\n",
        ),
    );
    render(&s, &[]);
    assert_eq!(placed(&s), pairs(&[("m-north", 8), ("z-east", 7)]));
}

#[test]
fn a_scale_down_over_13_previous_clusters_orders_them_as_go_sort_does() {
    // First: 21 replicas by static weights 2 and 1 over m00..m12 (Webster gives exactly the
    // weights). Then the policy turns Aggregated and the workload shrinks to 5: Karmada sorts
    // the 13 previous clusters by replicas with Go's sort.Sort (pdqsort above 12 elements):
    // m06, m01, m02, …; the prefix covering 5 is m06, m01, m02: 2 / 2 / 1 by Webster. Sorting
    // the tie by name would have kept m00, m01, m02.
    let s = Scratch::new();
    let reps = [2, 2, 2, 2, 2, 1, 2, 1, 2, 2, 1, 1, 1];
    let names: Vec<String> = (0..13).map(|i| format!("m{i:02}")).collect();
    s.write("clusters.yaml", &names.iter().map(|n| cluster(n, None, 100)).collect::<String>());
    let of_weight =
        |w: u32| names.iter().zip(reps).filter(|(_, r)| *r == w).map(|(n, _)| n.as_str()).collect::<Vec<_>>();
    let weights = format!(
        "    replicaScheduling:\n      replicaSchedulingType: Divided\n      replicaDivisionPreference: Weighted\n      \
         weightPreference:\n        staticWeightList:\n        - {{targetCluster: {{clusterNames: [{}]}}, weight: 2}}\n        \
         - {{targetCluster: {{clusterNames: [{}]}}, weight: 1}}\n",
        of_weight(2).join(", "),
        of_weight(1).join(", ")
    );
    s.write("policy.yaml", &policy(&weights));
    s.write("web.yaml", &deployment(21));
    render(&s, &[]);
    let want: Vec<(String, u32)> = names.iter().cloned().zip(reps).collect();
    assert_eq!(placed(&s), want, "the previous placement");
    s.write(
        "policy.yaml",
        &policy("    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}\n"),
    );
    s.write("web.yaml", &deployment(5));
    render(&s, &["--allow-mass-delete"]);
    assert_eq!(placed(&s), pairs(&[("m01", 2), ("m02", 2), ("m06", 1)]));
}
