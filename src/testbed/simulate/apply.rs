//! The simulator as GitOps agent: "applies" a cluster's output directory by creating the pods
//! of each workload and binding them first-fit to nodes by requests, node selector, required
//! node affinity and taints; pods that fit nowhere stay Pending with
//! `PodScheduled=False, reason=Unschedulable`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

use super::SimError;
use super::fleet::{FleetCluster, sort_objects};
use crate::model::ResourceList;
use crate::model::workload::pod_requirements;
use crate::policy::load::{parse_document, split_documents};

/// Annotation on pods the agent created.
pub const APPLIED: &str = "simulator.fedsched.io/applied";
/// Annotation with the hash of the pod template a pod was created from.
pub const TEMPLATE_HASH: &str = "simulator.fedsched.io/template-hash";

/// What an apply pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Pods created.
    pub created: usize,
    /// Pods deleted (workload gone, scaled down or changed).
    pub deleted: usize,
    /// Pods bound to a node.
    pub bound: usize,
    /// Pods left Pending as unschedulable.
    pub unschedulable: usize,
}

impl ApplyReport {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        self.created + self.deleted + self.bound > 0
    }
}

/// The pods a cluster directory asks for: (namespace, name) → pod.
pub fn desired_pods(dir: &Path) -> Result<BTreeMap<(String, String), Value>, SimError> {
    let mut out = BTreeMap::new();
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|source| SimError::Io { path: f.clone(), source })?;
        for doc in split_documents(&text) {
            let Ok(obj) = parse_document(&doc) else { continue };
            for pod in workload_pods(&obj) {
                let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string();
                let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
                out.insert((ns, name), pod);
            }
        }
    }
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), SimError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(SimError::Io { path: dir.to_path_buf(), source }),
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            collect(&p, out)?;
        } else if (name.ends_with(".yaml") || name.ends_with(".yml")) && name != "kustomization.yaml" {
            out.push(p);
        }
    }
    Ok(())
}

/// The pods of one workload object (Deployment, StatefulSet, ReplicaSet, Job); none for other
/// kinds.
pub fn workload_pods(obj: &Value) -> Vec<Value> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let int = |p: &str| obj.pointer(p).and_then(Value::as_i64);
    let (count, owner_kind, owner_name, prefix) = match kind {
        "Deployment" => {
            (int("/spec/replicas").unwrap_or(1), "ReplicaSet", format!("{name}-sim"), format!("{name}-sim"))
        }
        "ReplicaSet" => (int("/spec/replicas").unwrap_or(1), "ReplicaSet", name.to_string(), name.to_string()),
        "StatefulSet" => (int("/spec/replicas").unwrap_or(1), "StatefulSet", name.to_string(), name.to_string()),
        "Job" => {
            let p = int("/spec/parallelism").unwrap_or(1);
            let c = int("/spec/completions").unwrap_or(p);
            (p.min(c), "Job", name.to_string(), name.to_string())
        }
        _ => return Vec::new(),
    };
    if name.is_empty() {
        return Vec::new();
    }
    let template = obj.pointer("/spec/template").cloned().unwrap_or(Value::Null);
    let hash = format!("{:016x}", crate::util::hash::fnv1a64(template.to_string().as_bytes()));
    let labels = template.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({}));
    let spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    (0..count.clamp(0, 10_000))
        .map(|i| {
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": format!("{prefix}-{i}"),
                    "namespace": ns,
                    "labels": labels,
                    "annotations": {APPLIED: "true", TEMPLATE_HASH: hash},
                    "ownerReferences": [{"apiVersion": if owner_kind == "Job" { "batch/v1" } else { "apps/v1" },
                        "kind": owner_kind, "name": owner_name, "uid": format!("sim-{owner_kind}-{ns}-{owner_name}"),
                        "controller": true}],
                },
                "spec": spec,
                "status": {"phase": "Pending"},
            })
        })
        .collect()
}

/// Brings a cluster's pods in line with its output directory, then binds pending pods.
pub fn apply(c: &mut FleetCluster, dir: &Path) -> Result<ApplyReport, SimError> {
    let desired = desired_pods(dir)?;
    let mut report = ApplyReport::default();
    let mut existing = BTreeSet::new();
    c.pods.retain(|p| {
        let applied = p.pointer(&format!("/metadata/annotations/{}", APPLIED.replace('/', "~1"))).is_some();
        if !applied {
            return true;
        }
        let key = (
            p.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string(),
            p.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string(),
        );
        let hash_ptr = format!("/metadata/annotations/{}", TEMPLATE_HASH.replace('/', "~1"));
        let keep = desired.get(&key).is_some_and(|d| d.pointer(&hash_ptr) == p.pointer(&hash_ptr));
        if keep {
            existing.insert(key);
        } else {
            report.deleted += 1;
        }
        keep
    });
    for (key, pod) in desired {
        if !existing.contains(&key) {
            c.pods.push(pod);
            report.created += 1;
        }
    }
    sort_objects(&mut c.pods);
    bind(c, &mut report);
    Ok(report)
}

/// First-fit binding of the agent's unbound pods.
fn bind(c: &mut FleetCluster, report: &mut ApplyReport) {
    let mut used: BTreeMap<String, (ResourceList, i64)> = BTreeMap::new();
    for p in &c.pods {
        let phase = p.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
        if matches!(phase, "Succeeded" | "Failed") {
            continue;
        }
        if let Some(n) = p.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            let e = used.entry(n.to_string()).or_default();
            e.0.add(&request(p));
            e.1 += 1;
        }
    }
    let node_count = c.nodes.len();
    for p in c.pods.iter_mut() {
        let applied = p.pointer(&format!("/metadata/annotations/{}", APPLIED.replace('/', "~1"))).is_some();
        let bound = p.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        if !applied || bound {
            continue;
        }
        let req = request(p);
        let chosen = c
            .nodes
            .iter()
            .find(|n| fits(n, p, &req, &used))
            .and_then(|n| n.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string));
        match chosen {
            Some(node) => {
                let e = used.entry(node.clone()).or_default();
                e.0.add(&req);
                e.1 += 1;
                p["spec"]["nodeName"] = json!(node);
                p["status"] = json!({"phase": "Running", "conditions": [
                    {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]});
                report.bound += 1;
            }
            None => {
                p["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                    "reason": "Unschedulable",
                    "message": format!("0/{node_count} nodes are available: no node fits the pod's requests, node selector, affinity and tolerations.")}]});
                report.unschedulable += 1;
            }
        }
    }
}

fn request(p: &Value) -> ResourceList {
    pod_requirements(p.get("spec"), "spec").map(|r| r.request).unwrap_or_default()
}

fn fits(node: &Value, pod: &Value, req: &ResourceList, used: &BTreeMap<String, (ResourceList, i64)>) -> bool {
    let name = node.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let ready = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
    if !ready || node.pointer("/spec/unschedulable").and_then(Value::as_bool).unwrap_or(false) {
        return false;
    }
    let empty = serde_json::Map::new();
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object).unwrap_or(&empty);
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    if let Some(sel) = pod.pointer("/spec/nodeSelector").and_then(Value::as_object)
        && sel.iter().any(|(k, v)| label(k) != v.as_str())
    {
        return false;
    }
    if let Some(terms) = pod
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        && !terms.iter().any(|t| term_matches(t, labels))
    {
        return false;
    }
    let tolerations = pod.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    for taint in node.pointer("/spec/taints").and_then(Value::as_array).into_iter().flatten() {
        let effect = taint["effect"].as_str().unwrap_or("");
        if effect == "PreferNoSchedule" {
            continue;
        }
        if !tolerations.iter().any(|t| tolerates(t, taint)) {
            return false;
        }
    }
    let alloc = ResourceList::from_json(node.pointer("/status/allocatable")).unwrap_or_default();
    let (used_res, used_pods) = used.get(name).cloned().unwrap_or_default();
    if alloc.contains("pods") && (used_pods + 1) * 1000 > alloc.get("pods") {
        return false;
    }
    req.iter().all(|(r, v)| alloc.get(r).saturating_sub(used_res.get(r)) >= v)
}

fn term_matches(term: &Value, labels: &serde_json::Map<String, Value>) -> bool {
    term.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().all(|e| {
        let key = e["key"].as_str().unwrap_or("");
        let values: Vec<&str> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let v = labels.get(key).and_then(Value::as_str);
        match e["operator"].as_str().unwrap_or("") {
            "In" => v.is_some_and(|v| values.contains(&v)),
            "NotIn" => !v.is_some_and(|v| values.contains(&v)),
            "Exists" => v.is_some(),
            "DoesNotExist" => v.is_none(),
            "Gt" | "Lt" => {
                let (Some(a), Some(b)) =
                    (v.and_then(|v| v.parse::<i64>().ok()), values.first().and_then(|b| b.parse::<i64>().ok()))
                else {
                    return false;
                };
                if e["operator"] == "Gt" { a > b } else { a < b }
            }
            _ => false,
        }
    })
}

fn tolerates(t: &Value, taint: &Value) -> bool {
    let key = t["key"].as_str().unwrap_or("");
    let op = t["operator"].as_str().unwrap_or("Equal");
    let effect = t["effect"].as_str().unwrap_or("");
    if !effect.is_empty() && Some(effect) != taint["effect"].as_str() {
        return false;
    }
    if key.is_empty() {
        return op == "Exists";
    }
    if Some(key) != taint["key"].as_str() {
        return false;
    }
    match op {
        "Exists" => true,
        _ => t["value"].as_str().unwrap_or("") == taint["value"].as_str().unwrap_or(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, cpu: &str, taint: bool, labels: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels},
            "spec": {"taints": if taint { json!([{"key": "gpu", "value": "x", "effect": "NoSchedule"}]) } else { json!([]) }},
            "status": {"allocatable": {"cpu": cpu, "pods": "10"}, "conditions": [{"type": "Ready", "status": "True"}]}})
    }

    #[test]
    fn first_fit_by_requests_selector_and_taints() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(
            dir.path().join("d.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 3\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      nodeSelector: {disk: ssd}\n      containers: [{name: c, image: i, resources: {requests: {cpu: 600m}}}]\n",
        )
        .expect("write");
        let mut c = FleetCluster {
            name: "m".into(),
            cluster: Value::Null,
            nodes: vec![
                node("a", "1", false, json!({"disk": "ssd"})),
                node("b", "4", true, json!({"disk": "ssd"})),
                node("c", "4", false, json!({"disk": "hdd"})),
                node("d", "1", false, json!({"disk": "ssd"})),
            ],
            pods: vec![],
        };
        let r = apply(&mut c, dir.path()).expect("apply");
        assert_eq!((r.created, r.bound, r.unschedulable), (3, 2, 1));
        let on = |n: &str| c.pods.iter().filter(|p| p["spec"]["nodeName"] == n).count();
        assert_eq!((on("a"), on("d"), on("b"), on("c")), (1, 1, 0, 0));
        let pending: Vec<&Value> = c.pods.iter().filter(|p| p["status"]["phase"] == "Pending").collect();
        assert_eq!(pending[0]["status"]["conditions"][0]["reason"], "Unschedulable");
        // Unchanged directory: nothing to do; removed: pods deleted.
        assert!(!apply(&mut c, dir.path()).expect("apply").changed());
        std::fs::remove_file(dir.path().join("d.yaml")).expect("rm");
        assert_eq!(apply(&mut c, dir.path()).expect("apply").deleted, 3);
        assert!(c.pods.is_empty());
    }
}
