//! Fleets: a directory of member clusters as YAML, loaded for serving, and the generator of
//! synthetic fleets.
//!
//! Layout: one subdirectory per cluster holding any number of YAML files: its Cluster object
//! (`cluster.karmada.io/v1alpha1`), and Nodes and Pods, alone or in `kind: List` documents, as
//! `kubectl get nodes,pods -A -o yaml` prints them (so a capture of a real cluster is a
//! fleet member as is). Directories whose name starts with `.` are skipped. A cluster without
//! a Cluster object is named after its directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::SimError;
use crate::policy::load::{parse_document, split_documents};

/// One simulated member cluster's objects.
#[derive(Debug, Clone, Default)]
pub struct FleetCluster {
    /// Cluster name.
    pub name: String,
    /// Its Cluster object (`spec.apiEndpoint` is rewritten when served).
    pub cluster: Value,
    /// Nodes, sorted by name.
    pub nodes: Vec<Value>,
    /// Pods, sorted by namespace and name.
    pub pods: Vec<Value>,
    /// The workload objects the GitOps agent applied (`--apply`), by `Kind/namespace/name`:
    /// served with a status made from their pods ([`super::apply::workload_object`]).
    pub workloads: std::collections::BTreeMap<String, super::apply::Applied>,
}

/// Loads every cluster of a fleet directory.
pub fn load(dir: &Path) -> Result<Vec<FleetCluster>, SimError> {
    let io = |path: &Path, source: std::io::Error| SimError::Io { path: path.to_path_buf(), source };
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(|e| io(dir, e))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for sub in entries {
        let hidden = sub.file_name().and_then(|n| n.to_str()).is_none_or(|n| n.starts_with('.'));
        if hidden || !sub.is_dir() {
            continue;
        }
        let mut c = FleetCluster {
            name: sub.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string(),
            cluster: Value::Null,
            nodes: Vec::new(),
            pods: Vec::new(),
            workloads: Default::default(),
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(&sub)
            .map_err(|e| io(&sub, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|e| io(&f, e))?;
            for doc in split_documents(&text) {
                let v = parse_document(&doc).map_err(|message| SimError::Fleet {
                    path: f.clone(),
                    message: format!("document {}: {message}", doc.number),
                })?;
                add_object(&mut c, v, &f)?;
            }
        }
        if c.cluster.is_null() {
            c.cluster = json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": c.name}, "spec": {"syncMode": "Push"}});
        } else if let Some(n) = c.cluster.pointer("/metadata/name").and_then(Value::as_str) {
            c.name = n.to_string();
        }
        sort_objects(&mut c.nodes);
        sort_objects(&mut c.pods);
        out.push(c);
    }
    if out.is_empty() {
        return Err(SimError::Fleet { path: dir.to_path_buf(), message: "no cluster directories in the fleet".into() });
    }
    Ok(out)
}

fn add_object(c: &mut FleetCluster, v: Value, file: &Path) -> Result<(), SimError> {
    match v.get("kind").and_then(Value::as_str) {
        Some("List") | Some("NodeList") | Some("PodList") => {
            if let Some(items) = v.get("items").and_then(Value::as_array) {
                for item in items {
                    add_object(c, item.clone(), file)?;
                }
            }
            Ok(())
        }
        Some("Cluster") => {
            c.cluster = v;
            Ok(())
        }
        Some("Node") => {
            check_named(&v, file)?;
            c.nodes.push(v);
            Ok(())
        }
        Some("Pod") => {
            check_named(&v, file)?;
            c.pods.push(v);
            Ok(())
        }
        // Anything else a capture may hold is ignored.
        _ => Ok(()),
    }
}

fn check_named(v: &Value, file: &Path) -> Result<(), SimError> {
    match v.pointer("/metadata/name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => Ok(()),
        _ => Err(SimError::Fleet { path: file.to_path_buf(), message: "an object without metadata.name".into() }),
    }
}

/// Sorts objects by namespace and name (the order of list responses).
pub fn sort_objects(items: &mut [Value]) {
    items.sort_by(|a, b| key(a).cmp(&key(b)));
}

fn key(v: &Value) -> (&str, &str) {
    (
        v.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or(""),
        v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(""),
    )
}

/// Parameters of a synthetic fleet.
#[derive(Debug, Clone)]
pub struct Generate {
    /// Number of clusters.
    pub clusters: usize,
    /// Nodes per cluster.
    pub nodes: usize,
    /// Pods per cluster.
    pub pods: usize,
    /// Seed of the deterministic generator.
    pub seed: u64,
}

/// The test bed's deterministic generator (SplitMix64): same seed, same sequence.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        // SplitMix64.
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    /// A number in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }
    /// True with probability `percent` / 100.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const REGIONS: &[&str] = &["eu-west", "eu-central", "us-east", "us-west", "ap-south"];
const PROVIDERS: &[&str] = &["aws", "gcp", "onprem"];
const GPUS: &[&str] = &["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-L4"];
const CPU_VENDORS: &[&str] = &["Intel", "AMD", "ARM"];
const SIZES: &[(u32, u32)] = &[(4, 16), (8, 32), (16, 64), (32, 128)];

/// The APIs a simulated member serves when its Cluster object lists none: the built-in APIs
/// of a Kubernetes 1.33 API server that workloads use, as `(groupVersion, [(resource, Kind)])`.
pub const STANDARD_APIS: &[(&str, &[(&str, &str)])] = &[
    (
        "v1",
        &[
            ("configmaps", "ConfigMap"),
            ("endpoints", "Endpoints"),
            ("events", "Event"),
            ("limitranges", "LimitRange"),
            ("namespaces", "Namespace"),
            ("nodes", "Node"),
            ("persistentvolumeclaims", "PersistentVolumeClaim"),
            ("persistentvolumes", "PersistentVolume"),
            ("pods", "Pod"),
            ("replicationcontrollers", "ReplicationController"),
            ("resourcequotas", "ResourceQuota"),
            ("secrets", "Secret"),
            ("serviceaccounts", "ServiceAccount"),
            ("services", "Service"),
        ],
    ),
    ("apiextensions.k8s.io/v1", &[("customresourcedefinitions", "CustomResourceDefinition")]),
    (
        "apps/v1",
        &[
            ("controllerrevisions", "ControllerRevision"),
            ("daemonsets", "DaemonSet"),
            ("deployments", "Deployment"),
            ("replicasets", "ReplicaSet"),
            ("statefulsets", "StatefulSet"),
        ],
    ),
    ("autoscaling/v2", &[("horizontalpodautoscalers", "HorizontalPodAutoscaler")]),
    ("batch/v1", &[("cronjobs", "CronJob"), ("jobs", "Job")]),
    ("coordination.k8s.io/v1", &[("leases", "Lease")]),
    (
        "networking.k8s.io/v1",
        &[("ingressclasses", "IngressClass"), ("ingresses", "Ingress"), ("networkpolicies", "NetworkPolicy")],
    ),
    ("policy/v1", &[("poddisruptionbudgets", "PodDisruptionBudget")]),
    (
        "rbac.authorization.k8s.io/v1",
        &[
            ("clusterrolebindings", "ClusterRoleBinding"),
            ("clusterroles", "ClusterRole"),
            ("rolebindings", "RoleBinding"),
            ("roles", "Role"),
        ],
    ),
    ("storage.k8s.io/v1", &[("storageclasses", "StorageClass")]),
];

/// The CRD group of generated clusters with an even index (OpenKruise's CloneSet); the others
/// do not serve it, so a workload of that kind must stay off them.
pub const CRD_APIS: (&str, &[(&str, &str)]) = ("apps.kruise.io/v1alpha1", &[("clonesets", "CloneSet")]);

/// Whether generated cluster `ci` serves [`CRD_APIS`].
pub fn serves_crd(ci: usize) -> bool {
    ci.is_multiple_of(2)
}

/// `status.apiEnablements` (Karmada's form) of a list of group versions.
pub fn api_enablements_value<'a>(apis: impl IntoIterator<Item = &'a (&'a str, &'a [(&'a str, &'a str)])>) -> Value {
    Value::Array(
        apis.into_iter()
            .map(|(gv, resources)| {
                let resources: Vec<Value> = resources.iter().map(|(n, k)| json!({"name": n, "kind": k})).collect();
                json!({"groupVersion": gv, "resources": resources})
            })
            .collect(),
    )
}

/// The APIs a fleet cluster serves: its Cluster object's `status.apiEnablements` (entries
/// without a group version or with subresource names left out), or [`STANDARD_APIS`]; Nodes
/// and Pods are always served. By group version, resources as `(name, Kind)`, sorted.
pub fn served_apis(cluster: &Value) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    match cluster.pointer("/status/apiEnablements").and_then(Value::as_array).filter(|a| !a.is_empty()) {
        Some(list) => {
            for e in list {
                let Some(gv) = e.get("groupVersion").and_then(Value::as_str).filter(|g| !g.is_empty()) else {
                    continue;
                };
                let entry = out.entry(gv.to_string()).or_default();
                for r in e.get("resources").and_then(Value::as_array).into_iter().flatten() {
                    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    entry.push((s("name"), s("kind")));
                }
            }
        }
        None => {
            for (gv, resources) in STANDARD_APIS {
                out.insert(gv.to_string(), resources.iter().map(|(n, k)| (n.to_string(), k.to_string())).collect());
            }
        }
    }
    let core = out.entry("v1".into()).or_default();
    for (n, k) in [("nodes", "Node"), ("pods", "Pod")] {
        if !core.iter().any(|(name, _)| name == n) {
            core.push((n.into(), k.into()));
        }
    }
    for resources in out.values_mut() {
        resources.retain(|(n, k)| !n.is_empty() && !k.is_empty());
        resources.sort();
        resources.dedup();
    }
    out
}

/// Generates a synthetic fleet in memory: clusters in regions and zones, nodes of several
/// sizes with CPU vendors and (on some clusters) GPU models, pods spread over the nodes. Each
/// Cluster object's `status.apiEnablements` lists the APIs the simulator serves for it:
/// [`STANDARD_APIS`], and [`CRD_APIS`] on every other cluster ([`serves_crd`]).
pub fn generate(g: &Generate) -> Vec<FleetCluster> {
    clusters(g).collect()
}

/// The clusters of [`generate`] one at a time (same clusters, same order), so that a large
/// fleet can be folded cluster by cluster without holding every node and pod in memory.
pub fn clusters(g: &Generate) -> impl Iterator<Item = FleetCluster> + use<> {
    let g = g.clone();
    let mut rng = Rng(g.seed);
    (0..g.clusters).map(move |ci| generate_cluster(&g, ci, &mut rng))
}

/// Region of generated cluster `ci`.
pub fn region_of(ci: usize) -> &'static str {
    REGIONS[ci % REGIONS.len()]
}

/// Name of generated cluster `ci`.
pub fn cluster_name(ci: usize) -> String {
    format!("member-{ci:03}")
}

fn generate_cluster(g: &Generate, ci: usize, rng: &mut Rng) -> FleetCluster {
    {
        let name = cluster_name(ci);
        let region = region_of(ci);
        let provider = *rng.pick(PROVIDERS);
        let zones: Vec<String> = ["a", "b", "c"].iter().map(|z| format!("{region}-{z}")).collect();
        let has_gpu = ci.is_multiple_of(3);
        let cluster = json!({
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name, "labels": {"region": region, "provider": provider,
                "gpu": if has_gpu { "true" } else { "false" }}},
            "spec": {"syncMode": "Push", "provider": provider, "region": region, "zones": zones},
            "status": {"apiEnablements": api_enablements_value(
                STANDARD_APIS.iter().chain(serves_crd(ci).then_some(&CRD_APIS)))},
        });
        let mut nodes = Vec::with_capacity(g.nodes);
        for ni in 0..g.nodes {
            let node_name = format!("{name}-node-{ni:04}");
            let zone = &zones[ni % zones.len()];
            let (cpu, mem) = *rng.pick(SIZES);
            let vendor = *rng.pick(CPU_VENDORS);
            let mut labels = json!({
                "kubernetes.io/hostname": node_name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": if vendor == "ARM" { "arm64" } else { "amd64" },
                "topology.kubernetes.io/region": region,
                "topology.kubernetes.io/zone": zone,
                "node.kubernetes.io/instance-type": format!("sim.{cpu}x{mem}"),
                "feature.node.kubernetes.io/cpu-model.vendor_id": vendor,
            });
            let mut alloc = json!({"cpu": format!("{}m", cpu * 1000 - 100), "memory": format!("{}Mi", mem * 1024 - 512),
                "pods": "110", "ephemeral-storage": "100Gi"});
            let mut capacity = json!({"cpu": cpu.to_string(), "memory": format!("{mem}Gi"), "pods": "110",
                "ephemeral-storage": "100Gi"});
            let mut taints = json!([]);
            if has_gpu && ni % 4 == 0 {
                let gpu = *rng.pick(GPUS);
                labels["nvidia.com/gpu.product"] = json!(gpu);
                labels["nvidia.com/gpu.present"] = json!("true");
                alloc["nvidia.com/gpu"] = json!("4");
                capacity["nvidia.com/gpu"] = json!("4");
                taints = json!([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]);
            }
            nodes.push(json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": node_name, "labels": labels, "resourceVersion": "1"},
                "spec": {"taints": taints},
                "status": {"allocatable": alloc, "capacity": capacity,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                    "nodeInfo": {
                        "architecture": if vendor == "ARM" { "arm64" } else { "amd64" },
                        "bootID": format!("{:032x}", rng.next()),
                        "containerRuntimeVersion": "containerd://2.0.0",
                        "kernelVersion": "6.12.0",
                        "kubeProxyVersion": "",
                        "kubeletVersion": "v1.33.0",
                        "machineID": format!("{:032x}", rng.next()),
                        "operatingSystem": "linux",
                        "osImage": "Debian GNU/Linux 13 (trixie)",
                        "systemUUID": format!("{:032x}", rng.next()),
                    }},
            }));
        }
        // What each node has left, as a scheduler sees it: the pods are bound only where they
        // fit (requests within allocatable, at most 110 pods, no untolerated taint), so the
        // fleet is physically possible; a pod that fits nowhere stays Pending, Unschedulable.
        let mut room: Vec<Option<(u64, u64, u32)>> = nodes
            .iter()
            .map(|n| {
                let tainted = n["spec"]["taints"].as_array().is_some_and(|t| !t.is_empty());
                let a = &n["status"]["allocatable"];
                let cpu = a["cpu"].as_str().and_then(|c| c.strip_suffix('m')).and_then(|c| c.parse().ok());
                let mem = a["memory"].as_str().and_then(|m| m.strip_suffix("Mi")).and_then(|m| m.parse().ok());
                cpu.zip(mem).filter(|_| !tainted).map(|(c, m)| (c, m, 110))
            })
            .collect();
        // Requests sized to the member: on average at most 60 % of what its untainted nodes
        // allocate is requested (a member's pods as a cluster runs them), the rest free.
        let total = |i: usize| room.iter().flatten().map(|r| if i == 0 { r.0 } else { r.1 }).sum::<u64>() as f64;
        let expected = g.pods.max(1) as f64;
        let cpu_scale = (0.6 * total(0) / (expected * 450.0)).min(1.0);
        let mem_scale = (0.6 * total(1) / (expected * 576.0)).min(1.0);
        let mut pods = Vec::with_capacity(g.pods);
        for pi in 0..g.pods {
            let app = format!("app-{}", pi % 7);
            let cpu_m = ((100 * (1 + rng.next() % 8)) as f64 * cpu_scale).round().max(1.0) as u64;
            let mem_mi = ((128 * (1 + rng.next() % 8)) as f64 * mem_scale).round().max(1.0) as u64;
            let wanted = !nodes.is_empty() && pi % 20 != 19;
            // First fit from a random node, as the generator picked one before.
            let start = if wanted { (rng.next() % nodes.len() as u64) as usize } else { 0 };
            let fits = |r: &Option<(u64, u64, u32)>| r.is_some_and(|(c, m, p)| c >= cpu_m && m >= mem_mi && p > 0);
            let at =
                wanted.then(|| (0..nodes.len()).map(|k| (start + k) % nodes.len()).find(|&k| fits(&room[k]))).flatten();
            if let Some(Some((c, m, p))) = at.map(|k| &mut room[k]) {
                (*c, *m, *p) = (*c - cpu_m, *m - mem_mi, *p - 1);
            }
            let bound = at.is_some();
            let node = at.map_or(Value::Null, |k| nodes[k]["metadata"]["name"].clone());
            let phase = if !bound {
                "Pending"
            } else if pi % 50 == 7 {
                "Succeeded"
            } else {
                "Running"
            };
            let mut spec = json!({
                "containers": [{"name": "main", "image": format!("registry.example/{app}:1"),
                    "resources": {"requests": {"cpu": format!("{cpu_m}m"), "memory": format!("{mem_mi}Mi")},
                                  "limits": {"memory": format!("{mem_mi}Mi")}}}],
                "restartPolicy": "Always",
            });
            let conditions = if bound {
                json!([{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}])
            } else if wanted {
                json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": format!("0/{} nodes are available: Insufficient cpu, Insufficient memory or too many pods.", nodes.len())}])
            } else {
                spec["nodeSelector"] = json!({"disktype": "nvme"});
                json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/1 nodes are available: node(s) didn't match Pod's node affinity/selector."}])
            };
            if let Some(n) = node.as_str() {
                spec["nodeName"] = json!(n);
            }
            pods.push(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{app}-{pi:05}"), "namespace": format!("team-{}", pi % 3),
                    "labels": {"app": app}, "resourceVersion": "1",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-5d8f"),
                        "uid": format!("00000000-0000-0000-0000-{pi:012}"), "controller": true}]},
                "spec": spec,
                "status": {"phase": phase, "conditions": conditions},
            }));
        }
        sort_objects(&mut nodes);
        sort_objects(&mut pods);
        FleetCluster { name, cluster, nodes, pods, workloads: Default::default() }
    }
}

/// Writes a fleet as a fleet directory: `<dir>/<cluster>/cluster.yaml` and `state.yaml` (a
/// `kind: List` of nodes and pods).
pub fn write(dir: &Path, fleet: &[FleetCluster]) -> Result<(), SimError> {
    let io = |path: &Path, source: std::io::Error| SimError::Io { path: path.to_path_buf(), source };
    for c in fleet {
        let sub = dir.join(&c.name);
        std::fs::create_dir_all(&sub).map_err(|e| io(&sub, e))?;
        let cluster = crate::render::yaml::to_yaml(&c.cluster);
        std::fs::write(sub.join("cluster.yaml"), cluster).map_err(|e| io(&sub, e))?;
        let items: Vec<Value> = c.nodes.iter().chain(c.pods.iter()).cloned().collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
        std::fs::write(sub.join("state.yaml"), crate::render::yaml::to_yaml(&list)).map_err(|e| io(&sub, e))?;
    }
    Ok(())
}

/// Counts per cluster, for messages.
pub fn summary(fleet: &[FleetCluster]) -> BTreeMap<String, (usize, usize)> {
    fleet.iter().map(|c| (c.name.clone(), (c.nodes.len(), c.pods.len()))).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn number(v: &Value, suffix: &str) -> u64 {
        v.as_str().and_then(|s| s.strip_suffix(suffix)).and_then(|s| s.parse().ok()).unwrap_or(u64::MAX)
    }

    /// Issue 49 item 7: the guide's (then the README's) `simulate --generate 20 --nodes 50 --pods 2000` bound 852
    /// CPU of requests on 695 CPU of nodes in one member. Every node holds what fits on it
    /// (requests within allocatable, at most 110 pods, none on a tainted GPU node without a
    /// toleration), so every member keeps free capacity.
    #[test]
    fn the_generated_fleet_is_physically_possible() {
        let fleet = generate(&Generate { clusters: 20, nodes: 50, pods: 2000, seed: 1 });
        for c in &fleet {
            let mut used: HashMap<&str, (u64, u64, u64)> = HashMap::new();
            for p in &c.pods {
                let Some(node) = p["spec"]["nodeName"].as_str() else { continue };
                let r = &p["spec"]["containers"][0]["resources"]["requests"];
                let u = used.entry(node).or_default();
                *u = (u.0 + number(&r["cpu"], "m"), u.1 + number(&r["memory"], "Mi"), u.2 + 1);
            }
            let (mut free_cpu, mut bound) = (0, 0);
            for n in &c.nodes {
                let name = n["metadata"]["name"].as_str().unwrap_or_default();
                let a = &n["status"]["allocatable"];
                let (cpu, mem) = (number(&a["cpu"], "m"), number(&a["memory"], "Mi"));
                let u = used.get(name).copied().unwrap_or_default();
                assert!(u.0 <= cpu && u.1 <= mem && u.2 <= 110, "{}/{name}: {u:?} on {cpu}m {mem}Mi", c.name);
                if n["spec"]["taints"].as_array().is_some_and(|t| !t.is_empty()) {
                    assert_eq!(u.2, 0, "{}/{name}: pods on a tainted node", c.name);
                } else {
                    free_cpu += cpu - u.0;
                }
                bound += u.2;
            }
            // Most pods still run (the generator's load), and a 9 × 1 CPU Deployment fits.
            assert!(bound > 1000, "{}: only {bound} pods bound", c.name);
            assert!(free_cpu >= 9_000, "{}: {free_cpu}m free", c.name);
        }
    }
}
