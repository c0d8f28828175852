//! Synthetic policy repositories at fleet scale, for the benchmarks (`fedsched bench`,
//! `benches/`) and `fedsched simulate --generate … --workloads W`.
//!
//! The member clusters are the clusters of [`super::fleet::clusters`] (same names, regions,
//! providers, nodes, pods), described offline: each Cluster object carries the
//! `status.resourceSummary` the live poller would compute from its nodes and pods
//! ([`observe`]: list pages → narrow decoding → [`Fold`] → [`ResourceSummary::from_nodes`], the
//! production path). Extra cluster labels (`shard`, `tier`, `env`, `cpu-vendor`) give policies
//! something to select on; one cluster in 20 carries a `dedicated=batch:NoSchedule` taint.
//!
//! Workload `i` is a Deployment `team-<i mod 100>/app-<i>` with a PropagationPolicy of its own,
//! in the policy mix of issue 8, by `i mod 20`:
//! - 0–7 (40%): Duplicated to the 5 clusters of one `shard` label;
//! - 8–15 (40%): Divided by available replicas (`dynamicWeight: AvailableReplicas`) over a region;
//! - 16–18 (15%): Divided by static weights (per provider) over a region;
//! - 19 (5%): spread constraints (by region and cluster), or ordered `clusterAffinities` groups.
//!
//! One workload in four also has an OverridePolicy (image registry per provider, a label per
//! region); one in 33 requests a GPU; one in 10 tolerates the `dedicated` taint. Everything
//! is deterministic in the seed.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::SimError;
use super::fleet::{self, FleetCluster, Generate};
use crate::members::decode::{Fold, NodeItem, Observation, PodItem, decode_page};
use crate::model::ResourceList;
use crate::model::snapshot::ResourceSummary;

/// Parameters of a synthetic policy repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoSpec {
    /// The fleet: clusters, nodes and pods per cluster, seed.
    pub fleet: FleetSpec,
    /// Number of workloads (Deployments, each with its own PropagationPolicy).
    pub workloads: usize,
}

/// [`Generate`] without the derive baggage, comparable (for reuse of a generated directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetSpec {
    /// Number of clusters.
    pub clusters: usize,
    /// Nodes per cluster.
    pub nodes: usize,
    /// Pods per cluster.
    pub pods: usize,
    /// Seed.
    pub seed: u64,
}

impl FleetSpec {
    /// As the fleet generator's parameters.
    pub fn generate(&self) -> Generate {
        Generate { clusters: self.clusters, nodes: self.nodes, pods: self.pods, seed: self.seed }
    }
}

/// What [`write_repo`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoStats {
    /// Files written.
    pub files: usize,
    /// Documents written (templates, policies, clusters).
    pub documents: usize,
    /// Bytes written.
    pub bytes: usize,
}

/// Number of clusters that share one `shard` label value (the target of a Duplicated policy).
pub const SHARD_SIZE: usize = 5;

/// What the live poller would observe of a generated cluster: its nodes and pods served as
/// list pages, decoded narrowly and folded (the production path of `members::live`).
pub fn observe(c: &FleetCluster) -> Result<Observation, SimError> {
    let page = |kind: &str, items: &[Value]| {
        serde_json::to_vec(&json!({"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
            "items": items}))
        .unwrap_or_default()
    };
    let bad = |what: &str, e: crate::members::decode::DecodeError| SimError::Fleet {
        path: c.name.clone().into(),
        message: format!("generated {what} do not decode: {e}"),
    };
    let mut fold = Fold::default();
    for chunk in c.nodes.chunks(500) {
        fold.nodes(decode_page::<NodeItem>(&page("NodeList", chunk)).map_err(|e| bad("nodes", e))?.items);
    }
    for chunk in c.pods.chunks(500) {
        fold.pods(decode_page::<PodItem>(&page("PodList", chunk)).map_err(|e| bad("pods", e))?.items);
    }
    Ok(fold.finish())
}

/// The summary Karmada's status controller would report for an observation.
pub fn summary_of(obs: &Observation) -> ResourceSummary {
    ResourceSummary::from_nodes(&obs.nodes, &obs.unbound, obs.pods.unbound, &[]).with_unlisted(&obs.unlisted)
}

fn quantities(list: &ResourceList) -> Value {
    Value::Object(list.iter().map(|(k, v)| (k.to_string(), Value::String(format!("{v}m")))).collect())
}

/// The offline Cluster object of a generated cluster: the fleet's Cluster object with extra
/// labels, a taint on one cluster in 20, its API enablements and the status summary of `obs`.
pub fn cluster_object(ci: usize, c: &FleetCluster, obs: &Observation, clusters: usize) -> Value {
    let mut obj = c.cluster.clone();
    let shards = clusters.div_ceil(SHARD_SIZE).max(1);
    let vendor = c
        .nodes
        .first()
        .and_then(|n| n.pointer("/metadata/labels/feature.node.kubernetes.io~1cpu-model.vendor_id"))
        .and_then(Value::as_str)
        .unwrap_or("Intel")
        .to_string();
    if let Some(labels) = obj.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.insert("shard".into(), json!(format!("s{:03}", ci % shards)));
        labels.insert("tier".into(), json!(["general", "general", "batch", "edge"][ci % 4]));
        labels.insert("env".into(), json!(if ci.is_multiple_of(10) { "staging" } else { "prod" }));
        labels.insert("cpu-vendor".into(), json!(vendor.to_ascii_lowercase()));
    }
    if ci % 20 == 7 {
        obj["spec"]["taints"] = json!([{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]);
    }
    let s = summary_of(obs);
    let apis = c.cluster.pointer("/status/apiEnablements").cloned().unwrap_or_else(|| json!([]));
    obj["status"] = json!({
        "kubernetesVersion": "v1.33.0",
        "apiEnablements": apis,
        "conditions": [{"type": "Ready", "status": "True"}],
        "resourceSummary": {
            "allocatable": quantities(&s.allocatable),
            "allocated": quantities(&s.allocated),
            "allocating": quantities(&s.allocating),
        },
    });
    obj
}

/// Namespace of workload `i`.
pub fn namespace_of(i: usize) -> String {
    format!("team-{:02}", i % 100)
}

/// Name of workload `i` (its Deployment and its policies).
pub fn workload_name(i: usize) -> String {
    format!("app-{i:05}")
}

/// Relative path of the file holding workload `i` in a generated repository.
pub fn workload_file(i: usize) -> String {
    format!("apps/{}/{}.yaml", namespace_of(i), workload_name(i))
}

/// The Deployment of workload `i` (`replicas` may be changed to edit it).
pub fn deployment(i: usize, replicas: i64) -> Value {
    let name = workload_name(i);
    let ns = namespace_of(i);
    let cpu = [100, 250, 500, 1000, 2000][i % 5];
    let mem = [128, 256, 512, 1024, 4096][(i / 5) % 5];
    let mut requests = json!({"cpu": format!("{cpu}m"), "memory": format!("{mem}Mi")});
    let mut limits = json!({"memory": format!("{mem}Mi")});
    if i.is_multiple_of(33) {
        requests["nvidia.com/gpu"] = json!("1");
        limits["nvidia.com/gpu"] = json!("1");
    }
    let mut pod_spec = json!({
        "containers": [{
            "name": "main",
            "image": format!("registry.example/{ns}/{name}:1.{}.0", i % 17),
            "ports": [{"name": "http", "containerPort": 8080}],
            "env": (0..4).map(|k| json!({"name": format!("VAR_{k}"), "value": format!("v{k}-{i}")})).collect::<Vec<_>>(),
            "resources": {"requests": requests, "limits": limits},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 10},
        }],
    });
    if i.is_multiple_of(33) {
        pod_spec["tolerations"] = json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]);
        pod_spec["nodeSelector"] = json!({"nvidia.com/gpu.present": "true"});
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name, "team": ns}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    })
}

/// Initial replicas of workload `i`.
pub fn replicas_of(i: usize) -> i64 {
    match i % 20 {
        0..8 => 1 + (i % 5) as i64,
        _ => 2 + (i % 29) as i64,
    }
}

fn region_selector(region: &str) -> Value {
    json!({"labelSelector": {"matchLabels": {"region": region}}})
}

/// The PropagationPolicy of workload `i` in a fleet of `clusters`.
pub fn propagation_policy(i: usize, clusters: usize) -> Value {
    let name = workload_name(i);
    let ns = namespace_of(i);
    let shards = clusters.div_ceil(SHARD_SIZE).max(1);
    let region = fleet::region_of(i / 20);
    let dynamic = json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"}});
    let mut placement = match i % 20 {
        0..8 => json!({
            "clusterAffinity": {"labelSelector": {"matchLabels": {"shard": format!("s{:03}", (i * 7) % shards)}}},
            "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
        }),
        8..16 => json!({"clusterAffinity": region_selector(region), "replicaScheduling": dynamic}),
        16..19 => json!({
            "clusterAffinity": region_selector(region),
            "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                "weightPreference": {"staticWeightList": [
                    {"targetCluster": {"labelSelector": {"matchLabels": {"provider": "aws"}}}, "weight": 2},
                    {"targetCluster": {"labelSelector": {"matchLabels": {"provider": "gcp"}}}, "weight": 1},
                    {"targetCluster": {"labelSelector": {"matchLabels": {"provider": "onprem"}}}, "weight": 1},
                ]}},
        }),
        _ if i % 40 == 19 => json!({
            "clusterAffinity": {"labelSelector": {"matchLabels": {"tier": "general"}}},
            "spreadConstraints": [
                {"spreadByField": "region", "maxGroups": 2, "minGroups": 1},
                {"spreadByField": "cluster", "maxGroups": 4, "minGroups": 2},
            ],
            "replicaScheduling": dynamic,
        }),
        _ => json!({
            "clusterAffinities": [
                {"affinityName": "primary", "labelSelector": {"matchLabels": {"region": region, "env": "prod"}}},
                {"affinityName": "backup", "labelSelector": {"matchLabels": {"region": fleet::region_of(i / 20 + 1)}}},
            ],
            "replicaScheduling": dynamic,
        }),
    };
    if i % 10 == 3 {
        placement["clusterTolerations"] = json!([{"key": "dedicated", "operator": "Equal", "value": "batch",
            "effect": "NoSchedule"}]);
    }
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "placement": placement,
        },
    })
}

/// The OverridePolicy of workload `i`, for one workload in four.
pub fn override_policy(i: usize) -> Option<Value> {
    if !i.is_multiple_of(4) {
        return None;
    }
    let name = workload_name(i);
    Some(json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "OverridePolicy",
        "metadata": {"name": format!("{name}-overrides"), "namespace": namespace_of(i)},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "overrideRules": [
                {"targetCluster": {"labelSelector": {"matchLabels": {"provider": "aws"}}},
                 "overriders": {"imageOverrider": [{"component": "Registry", "operator": "replace",
                    "value": "mirror.aws.example"}]}},
                {"targetCluster": {"fieldSelector": {"matchExpressions": [
                    {"key": "region", "operator": "In", "values": ["eu-west", "eu-central"]}]}},
                 "overriders": {"labelsOverrider": [{"operator": "add", "value": {"gdpr": "true"}}]}},
            ],
        },
    }))
}

/// The YAML of workload `i`'s file: its Deployment (with `replicas`), its PropagationPolicy
/// and, for one in four, its OverridePolicy.
pub fn workload_yaml(i: usize, replicas: i64, clusters: usize) -> String {
    let mut docs = vec![deployment(i, replicas), propagation_policy(i, clusters)];
    docs.extend(override_policy(i));
    docs.iter().map(crate::render::yaml::to_yaml).collect::<Vec<_>>().join("---\n")
}

/// Writes a generated policy repository into `dir` (`clusters/<name>.yaml`,
/// `apps/<namespace>/<name>.yaml`). Calls `each_cluster` with every generated cluster and its
/// observation (so that callers can keep node-level data without generating the fleet twice).
pub fn write_repo(
    dir: &Path,
    spec: &RepoSpec,
    mut each_cluster: impl FnMut(usize, &FleetCluster, Observation),
) -> Result<RepoStats, SimError> {
    let io = |path: &Path, source: std::io::Error| SimError::Io { path: path.to_path_buf(), source };
    let mut stats = RepoStats::default();
    let mut write = |rel: &str, text: &str, docs: usize| -> Result<(), SimError> {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        std::fs::write(&path, text).map_err(|e| io(&path, e))?;
        stats.files += 1;
        stats.documents += docs;
        stats.bytes += text.len();
        Ok(())
    };
    for (ci, c) in fleet::clusters(&spec.fleet.generate()).enumerate() {
        let obs = observe(&c)?;
        let obj = cluster_object(ci, &c, &obs, spec.fleet.clusters);
        write(&format!("clusters/{}.yaml", c.name), &crate::render::yaml::to_yaml(&obj), 1)?;
        each_cluster(ci, &c, obs);
    }
    for i in 0..spec.workloads {
        let text = workload_yaml(i, replicas_of(i), spec.fleet.clusters);
        write(&workload_file(i), &text, 2 + usize::from(i % 4 == 0))?;
    }
    Ok(stats)
}

/// Counts of the policy mix of `workloads` workloads: (class, count), for reports.
pub fn mix(workloads: usize) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for i in 0..workloads {
        let class = match i % 20 {
            0..8 => "duplicated",
            8..16 => "divided-available",
            16..19 => "static-weights",
            _ if i % 40 == 19 => "spread-constraints",
            _ => "affinity-groups",
        };
        *out.entry(class).or_insert(0) += 1;
    }
    *out.entry("with-overrides").or_insert(0) += workloads.div_ceil(4);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_repository_loads_and_validates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spec = RepoSpec { fleet: FleetSpec { clusters: 12, nodes: 4, pods: 20, seed: 3 }, workloads: 80 };
        let mut seen = 0;
        let stats = write_repo(dir.path(), &spec, |_, _, obs| {
            assert_eq!(obs.nodes.len(), 4);
            seen += 1;
        })
        .expect("write");
        assert_eq!(seen, 12);
        assert_eq!(stats.files, 12 + 80);
        let inputs = crate::reconcile::load_inputs(
            crate::reconcile::Repository::Dir(dir.path()),
            &crate::reconcile::Settings::builtin(),
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(inputs.set.templates.len(), 80);
        assert_eq!(inputs.set.propagation_policies.len(), 80);
        assert_eq!(inputs.set.override_policies.len(), 20);
        assert_eq!(inputs.snapshots.len(), 12);
        let m = mix(80);
        assert_eq!((m["duplicated"], m["divided-available"], m["static-weights"]), (32, 32, 12));
        assert_eq!(m["spread-constraints"] + m["affinity-groups"], 4);
    }
}
