//! Workloads: what a resource template asks of a cluster, read through built-in knowledge of
//! the Kubernetes workload kinds (Karmada's native interpreter). Kinds without replicas are
//! not workloads: they are propagated as they are.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::quantity::QuantityError;
use super::resources::ResourceList;

/// What one replica needs and where it may run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReplicaRequirements {
    /// Per-replica resource request (containers summed, init containers maxed, overhead added).
    pub request: ResourceList,
    pub node_selector: BTreeMap<String, String>,
    /// The pod's tolerations and required node affinity, kept as canonical JSON text (they only
    /// restrict nodes, which the node-level estimator reads).
    pub tolerations: String,
    pub node_affinity: String,
    pub priority_class_name: Option<String>,
}

/// How a template is scheduled.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Workload {
    /// Desired replicas; None when the kind has no replicas (ConfigMap, Service, CRDs without an
    /// interpreter…): such objects go to every selected cluster unchanged.
    pub replicas: Option<i32>,
    /// Job completions, divided with the same weights as parallelism.
    pub completions: Option<i32>,
    pub requirements: ReplicaRequirements,
    /// Where the replica count lives in the object (JSON pointer), for replica revision.
    pub replica_path: Option<String>,
}

impl Workload {
    /// A template that is propagated as is.
    pub fn non_workload() -> Self {
        Workload { replicas: None, completions: None, requirements: Default::default(), replica_path: None }
    }
}

/// Why a template's workload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("{field}: {source}")]
    Quantity { field: String, source: QuantityError },
    #[error("{field}: expected {expected}")]
    Type { field: String, expected: &'static str },
}

/// Reads the workload of a template by its group and kind.
pub fn interpret(group: &str, kind: &str, object: &Value) -> Result<Workload, WorkloadError> {
    match (group, kind) {
        ("apps", "Deployment") | ("apps", "StatefulSet") | ("apps", "ReplicaSet") => {
            let replicas = int_field(object, "/spec/replicas")?.unwrap_or(1);
            let requirements = pod_requirements(object.pointer("/spec/template/spec"), "spec.template.spec")?;
            Ok(Workload {
                replicas: Some(replicas),
                completions: None,
                requirements,
                replica_path: Some("/spec/replicas".into()),
            })
        }
        ("batch", "Job") => {
            let parallelism = int_field(object, "/spec/parallelism")?.unwrap_or(1);
            let completions = int_field(object, "/spec/completions")?;
            let replicas = match completions {
                Some(c) => parallelism.min(c),
                None => parallelism,
            };
            let requirements = pod_requirements(object.pointer("/spec/template/spec"), "spec.template.spec")?;
            Ok(Workload {
                replicas: Some(replicas),
                completions,
                requirements,
                replica_path: Some("/spec/parallelism".into()),
            })
        }
        ("", "Pod") => {
            let requirements = pod_requirements(object.pointer("/spec"), "spec")?;
            Ok(Workload { replicas: Some(1), completions: None, requirements, replica_path: None })
        }
        _ => Ok(Workload::non_workload()),
    }
}

fn int_field(object: &Value, pointer: &str) -> Result<Option<i32>, WorkloadError> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().and_then(|i| i32::try_from(i).ok()).filter(|i| *i >= 0).map(Some).ok_or_else(|| {
            WorkloadError::Type {
                field: pointer.trim_start_matches('/').replace('/', "."),
                expected: "a non-negative 32-bit integer",
            }
        }),
    }
}

/// A container's effective request: its requests, and its limits for resources it does not
/// request (the API server defaults requests to limits).
pub fn container_request(requests: ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = requests;
    for (k, v) in limits.iter() {
        if !out.contains(k) {
            out.set(k, v);
        }
    }
    out
}

/// The one implementation of Kubernetes' pod request (Karmada's `AddPodRequest`): Σ containers,
/// each init container maxed in (a sidecar init container, `restartPolicy: Always`, runs
/// alongside and adds up), plus the pod overhead. Used for templates and for live pods alike.
pub fn pod_request(
    containers: &[ResourceList],
    inits: &[(ResourceList, bool)],
    overhead: &ResourceList,
) -> ResourceList {
    let mut total = ResourceList::new();
    for c in containers {
        total.add(c);
    }
    for (r, sidecar) in inits {
        if *sidecar {
            total.add(r);
        } else {
            total.max_with(r);
        }
    }
    total.add(overhead);
    total
}

/// Kubernetes' pod request: Σ containers, max with each init container, plus overhead.
/// A container without requests falls back to its limits (the API server defaults requests to
/// limits).
pub fn pod_requirements(spec: Option<&Value>, at: &str) -> Result<ReplicaRequirements, WorkloadError> {
    let mut req = ReplicaRequirements::default();
    let Some(spec) = spec else {
        return Ok(req);
    };
    let container_request = |c: &Value, field: String| -> Result<ResourceList, WorkloadError> {
        let requests = ResourceList::from_json(c.pointer("/resources/requests")).map_err(|(name, source)| {
            WorkloadError::Quantity { field: format!("{field}.resources.requests.{name}"), source }
        })?;
        let limits = ResourceList::from_json(c.pointer("/resources/limits")).map_err(|(name, source)| {
            WorkloadError::Quantity { field: format!("{field}.resources.limits.{name}"), source }
        })?;
        Ok(container_request(requests, &limits))
    };
    let mut containers = Vec::new();
    if let Some(list) = spec.get("containers").and_then(Value::as_array) {
        for (i, c) in list.iter().enumerate() {
            containers.push(container_request(c, format!("{at}.containers[{i}]"))?);
        }
    }
    let mut inits = Vec::new();
    if let Some(list) = spec.get("initContainers").and_then(Value::as_array) {
        for (i, c) in list.iter().enumerate() {
            let r = container_request(c, format!("{at}.initContainers[{i}]"))?;
            inits.push((r, c.get("restartPolicy").and_then(Value::as_str) == Some("Always")));
        }
    }
    let overhead = ResourceList::from_json(spec.get("overhead"))
        .map_err(|(name, source)| WorkloadError::Quantity { field: format!("{at}.overhead.{name}"), source })?;
    let mut total = pod_request(&containers, &inits, &overhead);
    total.0.retain(|_, v| *v > 0);
    req.request = total;
    if let Some(sel) = spec.get("nodeSelector").and_then(Value::as_object) {
        for (k, v) in sel {
            if let Some(s) = v.as_str() {
                req.node_selector.insert(k.clone(), s.to_string());
            }
        }
    }
    if let Some(t) = spec.get("tolerations") {
        req.tolerations = t.to_string();
    }
    if let Some(a) = spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution") {
        req.node_affinity = a.to_string();
    }
    req.priority_class_name = spec.get("priorityClassName").and_then(Value::as_str).map(str::to_string);
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deployment_requests_sum_containers_max_init_add_overhead() {
        let d = json!({"spec": {"replicas": 3, "template": {"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": 1}}}
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "overhead": {"cpu": "100m"},
            "nodeSelector": {"gpu": "a100"}
        }}}});
        let w = interpret("apps", "Deployment", &d).expect("valid");
        assert_eq!(w.replicas, Some(3));
        assert_eq!(w.requirements.request.get("cpu"), 2100);
        assert_eq!(w.requirements.request.get("memory"), 64 * 1024 * 1024 * 1000);
        assert_eq!(w.requirements.request.get("nvidia.com/gpu"), 1000);
        assert_eq!(w.requirements.node_selector.get("gpu").map(String::as_str), Some("a100"));
    }

    #[test]
    fn defaults_and_jobs() {
        let w = interpret("apps", "Deployment", &json!({"spec": {}})).expect("valid");
        assert_eq!(w.replicas, Some(1));
        let j = interpret("batch", "Job", &json!({"spec": {"parallelism": 4, "completions": 3}})).expect("valid");
        assert_eq!((j.replicas, j.completions), (Some(3), Some(3)));
        let c = interpret("", "ConfigMap", &json!({"data": {}})).expect("valid");
        assert_eq!(c.replicas, None);
    }

    #[test]
    fn bad_quantity_names_the_field() {
        let d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "lots"}}}]}}}});
        let e = interpret("apps", "Deployment", &d).expect_err("invalid");
        assert!(e.to_string().contains("spec.template.spec.containers[0].resources.requests.cpu"), "{e}");
        let e = interpret("apps", "Deployment", &json!({"spec": {"replicas": "two"}})).expect_err("invalid");
        assert!(e.to_string().contains("spec.replicas"), "{e}");
    }
}
