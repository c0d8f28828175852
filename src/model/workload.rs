//! Workloads: what a resource template asks of a cluster. [`interpret`] asks, in Karmada's
//! order of precedence: the repository's `ResourceInterpreterCustomization` scripts, the
//! repository's declarative interpreters (`fedsched.io/v1alpha1 WorkloadInterpreter`), the
//! customizations of the `[interpreter] dirs` directories, fedsched's built-in CRD
//! interpreters ([`crate::model::interpreter::builtin`]), then built-in knowledge of the
//! Kubernetes workload kinds (Karmada's native interpreter). All of them are held by
//! [`InterpreterTable`]. Kinds without replicas are not workloads: they are propagated as they
//! are. Where a customization (or built-in) answers `replicaRevision`, the workload carries it
//! ([`Workload::revision`]) and rendering revises replicas through it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use std::sync::Arc;

use super::interpreter::{self, Args, Customization, Interpreters, Operation, Outcome, Revision};
use super::quantity::QuantityError;
use super::resources::ResourceList;
use crate::policy::LoadError;
use crate::policy::types::WorkloadInterpreterSpec;

/// What one replica needs and where it may run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReplicaRequirements {
    /// Per-replica resource request (Kubernetes' formula, [`pod_request`]).
    pub request: ResourceList,
    pub node_selector: BTreeMap<String, String>,
    /// The pod's tolerations and required node affinity, kept as canonical JSON text (they only
    /// restrict nodes, which the node-level estimator reads).
    pub tolerations: String,
    pub node_affinity: String,
    pub priority_class_name: Option<String>,
    /// Per-replica amounts of label-backed dimensions (template annotation
    /// `fedsched.io/requests`); not part of the pod's requests.
    pub extra: ResourceList,
    /// GPU model constraint (template annotations `fedsched.io/gpu-product`,
    /// `fedsched.io/gpu-memory`).
    pub gpu: super::dimensions::GpuConstraint,
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
    /// A `replicaRevision` script (or built-in) that writes per-cluster replicas; takes the
    /// place of `replica_path`.
    #[serde(default)]
    pub revision: Option<Revision>,
    /// A multi-template workload (`componentResource`: FlinkDeployment, Volcano Job…): one
    /// replica stands for one whole set of its components. Karmada's multi-template scheduling
    /// places it whole: into one cluster that fits a set when a `cluster` spread constraint
    /// pins `minGroups = maxGroups = 1`, otherwise into every selected cluster
    /// ([`crate::schedule`]).
    #[serde(default)]
    pub multi_template: bool,
}

impl Workload {
    /// A template that is propagated as is.
    pub fn non_workload() -> Self {
        Workload {
            replicas: None,
            completions: None,
            requirements: Default::default(),
            replica_path: None,
            revision: None,
            multi_template: false,
        }
    }
}

/// Why a template's workload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("{field}: {source}")]
    Quantity { field: String, source: QuantityError },
    #[error("{field}: expected {expected}")]
    Type { field: String, expected: &'static str },
    #[error("{field}: {reason}")]
    Annotation { field: String, reason: String },
    /// A customization script failed (or gave something unusable).
    #[error("{0}")]
    Interpreter(String),
}

/// The interpreters in force: the repository's declarative interpreters by (API group, kind)
/// (a `WorkloadInterpreter` targets every version of its group and kind), and the
/// `ResourceInterpreterCustomization`s of the repository and of `[interpreter] dirs`
/// ([`Interpreters`], which also reaches the built-in CRD interpreters).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterpreterTable {
    entries: BTreeMap<(String, String), WorkloadInterpreterSpec>,
    pub customizations: Interpreters,
}

impl InterpreterTable {
    /// The table of a loaded repository (no `[interpreter] dirs`; invalid customizations are
    /// left out).
    pub fn from_set(set: &crate::policy::PolicySet) -> Self {
        Self::build(set, Vec::new()).0
    }

    /// The table of a loaded repository and the customizations of `[interpreter] dirs`, with
    /// the problems of the repository's customizations (a script that does not compile…).
    pub fn build(set: &crate::policy::PolicySet, directories: Vec<Arc<Customization>>) -> (Self, Vec<LoadError>) {
        let mut t = InterpreterTable::default();
        for w in &set.workload_interpreters {
            t.insert(w.spec.clone());
        }
        let mut errors = Vec::new();
        let mut repository = Vec::new();
        for raw in &set.interpreter_objects {
            if raw.key.kind != "ResourceInterpreterCustomization" {
                continue;
            }
            match interpreter::parse_customization(&raw.object, &raw.source.to_string()) {
                Ok(c) => repository.push(c),
                Err(interpreter::InterpreterError::Invalid { field, reason, .. }) => {
                    errors.push(LoadError::at(&raw.source, field, reason));
                }
                Err(e) => errors.push(LoadError::at(&raw.source, "", e.to_string())),
            }
        }
        t.customizations = Interpreters::new(repository, directories);
        (t, errors)
    }

    /// Adds (or replaces) the interpreter of a kind.
    pub fn insert(&mut self, spec: WorkloadInterpreterSpec) {
        let group = spec.target.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("").to_string();
        self.entries.insert((group, spec.target.kind.clone()), spec);
    }

    /// The interpreter of a group and kind.
    pub fn get(&self, group: &str, kind: &str) -> Option<&WorkloadInterpreterSpec> {
        self.entries.get(&(group.to_string(), kind.to_string()))
    }
}

/// Where a kind keeps its pod spec (JSON pointer), for requirements and dependencies.
pub fn pod_spec_pointer(group: &str, kind: &str, table: &InterpreterTable) -> Option<String> {
    if let Some(spec) = table.get(group, kind) {
        return spec.pod_template_path.as_ref().map(|p| format!("{}/spec", p.trim_end_matches('/')));
    }
    match (group, kind) {
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet") | ("batch", "Job") => {
            Some("/spec/template/spec".into())
        }
        ("batch", "CronJob") => Some("/spec/jobTemplate/spec/template/spec".into()),
        ("", "Pod") => Some("/spec".into()),
        _ => None,
    }
}

/// Reads a workload through a declarative interpreter.
fn interpret_declared(spec: &WorkloadInterpreterSpec, object: &Value) -> Result<Workload, WorkloadError> {
    let Some(replica_path) = &spec.replicas_path else {
        return Ok(Workload::non_workload());
    };
    let replicas = int_field(object, replica_path)?.unwrap_or(1);
    let mut requirements = match &spec.pod_template_path {
        Some(p) => {
            let pointer = format!("{}/spec", p.trim_end_matches('/'));
            let at = pointer.trim_start_matches('/').replace('/', ".");
            pod_requirements(object.pointer(&pointer), &at)?
        }
        None => ReplicaRequirements::default(),
    };
    if let Some(rp) = &spec.requests_path {
        let field = rp.trim_start_matches('/').replace('/', ".");
        let mut r = ResourceList::from_json(object.pointer(rp))
            .map_err(|(name, source)| WorkloadError::Quantity { field: format!("{field}.{name}"), source })?;
        r.0.retain(|_, v| *v > 0);
        requirements.request = r;
    }
    Ok(Workload {
        replicas: Some(replicas),
        completions: None,
        requirements,
        replica_path: Some(replica_path.clone()),
        revision: None,
        multi_template: false,
    })
}

/// Reads the workload of a template by its group and kind: a declarative interpreter from
/// `table` first, then the built-in kinds.
pub fn interpret(group: &str, kind: &str, object: &Value, table: &InterpreterTable) -> Result<Workload, WorkloadError> {
    let mut w = interpret_kind(group, kind, object, table)?;
    if w.replicas.is_some() {
        model_annotations(object, &mut w.requirements)?;
        if w.revision.is_none() && w.replica_path.is_some() {
            // A script's replicaRevision also applies to kinds whose replicas are read natively.
            let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            if table.customizations.script(api_version, kind, Operation::ReviseReplica).is_some() {
                w.revision = revision_for(api_version, kind, table);
            }
        }
    }
    Ok(w)
}

/// Reads the resource-model annotations of a template (`fedsched.io/requests`,
/// `fedsched.io/gpu-product`, `fedsched.io/gpu-memory`) into its requirements.
fn model_annotations(object: &Value, req: &mut ReplicaRequirements) -> Result<(), WorkloadError> {
    use super::dimensions::{GpuConstraint, REQUESTS_ANNOTATION, parse_requests_annotation};
    let Some(map) = object.pointer("/metadata/annotations").and_then(Value::as_object) else {
        return Ok(());
    };
    let annotations: BTreeMap<String, String> =
        map.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))).collect();
    if let Some(text) = annotations.get(REQUESTS_ANNOTATION) {
        req.extra = parse_requests_annotation(text).map_err(|reason| WorkloadError::Annotation {
            field: format!("metadata.annotations.{REQUESTS_ANNOTATION}"),
            reason,
        })?;
    }
    req.gpu = GpuConstraint::from_annotations(&annotations).map_err(|(name, reason)| WorkloadError::Annotation {
        field: format!("metadata.annotations.{name}"),
        reason,
    })?;
    Ok(())
}

/// The `replicaRevision` in force for a kind, by precedence (none for native kinds, which
/// use [`Workload::replica_path`]).
pub fn revision_for(api_version: &str, kind: &str, table: &InterpreterTable) -> Option<Revision> {
    match table.customizations.source(api_version, kind, Operation::ReviseReplica)? {
        interpreter::Source::Script(_, c) => Some(Revision::Script {
            customization: c.name.clone(),
            source: c.source.clone(),
            script: c.script(Operation::ReviseReplica)?.clone(),
        }),
        interpreter::Source::Builtin(b) => Some(Revision::Builtin(b.name.to_string())),
    }
}

/// Reads a workload through a customization's (or built-in's) `replicaResource`.
fn interpret_customized(
    api_version: &str,
    kind: &str,
    object: &Value,
    table: &InterpreterTable,
) -> Option<Result<Workload, WorkloadError>> {
    let args = Args { desired: Some(object), ..Args::default() };
    let out = table.customizations.run(api_version, kind, Operation::InterpretReplica, &args)?;
    Some(match out {
        Ok(Outcome::Replica { replicas, requires, .. }) => {
            let revision = revision_for(api_version, kind, table);
            Ok(Workload {
                replicas: Some(replicas),
                completions: None,
                requirements: requires.unwrap_or_default(),
                replica_path: None,
                revision,
                multi_template: false,
            })
        }
        Ok(_) => Err(WorkloadError::Interpreter(format!("{kind}: InterpretReplica gave no replicas"))),
        Err(e) => Err(WorkloadError::Interpreter(e.to_string())),
    })
}

/// A multi-template workload (`componentResource`: FlinkDeployment, Volcano Job…) is
/// scheduled whole, as Karmada's multi-template scheduling does ([`Workload::multi_template`]):
/// one "replica" that needs every component's replicas × requests together. Node constraints
/// are the first constrained component's. The object is rendered unchanged (no replica
/// revision).
fn interpret_components(
    api_version: &str,
    kind: &str,
    object: &Value,
    table: &InterpreterTable,
) -> Option<Result<Workload, WorkloadError>> {
    let args = Args { desired: Some(object), ..Args::default() };
    let out = table.customizations.run(api_version, kind, Operation::InterpretComponent, &args)?;
    Some(match out {
        Ok(Outcome::Components(list)) if list.is_empty() => Ok(Workload::non_workload()),
        Ok(Outcome::Components(list)) => {
            let mut requirements = ReplicaRequirements::default();
            let mut constrained = false;
            for c in &list {
                let Some(r) = &c.requirements else { continue };
                for (name, milli) in r.request.iter() {
                    let total =
                        requirements.request.get(name).saturating_add(milli.saturating_mul(i64::from(c.replicas)));
                    requirements.request.set(name, total);
                }
                if !constrained
                    && (!r.node_selector.is_empty() || !r.tolerations.is_empty() || !r.node_affinity.is_empty())
                {
                    requirements.node_selector = r.node_selector.clone();
                    requirements.tolerations = r.tolerations.clone();
                    requirements.node_affinity = r.node_affinity.clone();
                    constrained = true;
                }
                if requirements.priority_class_name.is_none() {
                    requirements.priority_class_name = r.priority_class_name.clone();
                }
            }
            Ok(Workload {
                replicas: Some(1),
                completions: None,
                requirements,
                replica_path: None,
                revision: None,
                multi_template: true,
            })
        }
        Ok(_) => Err(WorkloadError::Interpreter(format!("{kind}: InterpretComponent gave no components"))),
        Err(e) => Err(WorkloadError::Interpreter(e.to_string())),
    })
}

fn interpret_kind(
    group: &str,
    kind: &str,
    object: &Value,
    table: &InterpreterTable,
) -> Result<Workload, WorkloadError> {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let c = &table.customizations;
    let in_repository =
        |op| c.script(api_version, kind, op).is_some_and(|(layer, _)| layer == interpreter::Layer::Repository);
    // The repository's scripts rank above its WorkloadInterpreters; components (multi-template
    // kinds) above replicas, as Karmada's multi-template scheduling does.
    if in_repository(Operation::InterpretComponent)
        && let Some(w) = interpret_components(api_version, kind, object, table)
    {
        return w;
    }
    if in_repository(Operation::InterpretReplica)
        && let Some(w) = interpret_customized(api_version, kind, object, table)
    {
        return w;
    }
    if let Some(spec) = table.get(group, kind) {
        return interpret_declared(spec, object);
    }
    if let Some(w) = interpret_components(api_version, kind, object, table) {
        return w;
    }
    if let Some(w) = interpret_customized(api_version, kind, object, table) {
        return w;
    }
    match (group, kind) {
        ("apps", "Deployment") | ("apps", "StatefulSet") | ("apps", "ReplicaSet") => {
            let replicas = int_field(object, "/spec/replicas")?.unwrap_or(1);
            let requirements = pod_requirements(object.pointer("/spec/template/spec"), "spec.template.spec")?;
            Ok(Workload {
                replicas: Some(replicas),
                completions: None,
                requirements,
                replica_path: Some("/spec/replicas".into()),
                revision: None,
                multi_template: false,
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
                revision: None,
                multi_template: false,
            })
        }
        ("", "Pod") => {
            let requirements = pod_requirements(object.pointer("/spec"), "spec")?;
            Ok(Workload {
                replicas: Some(1),
                completions: None,
                requirements,
                replica_path: None,
                revision: None,
                multi_template: false,
            })
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

/// The one implementation of Kubernetes' pod request (`k8s.io/component-helpers`
/// `resource.PodRequests`, KEP-753), what a member's scheduler requires of a node: Σ containers
/// plus every sidecar init container (`restartPolicy: Always`, it runs alongside them), maxed
/// with each init container's start-up need — a regular init container's request plus the
/// sidecars started before it (list order), a sidecar's the sidecars up to itself — then the pod
/// overhead added. Used for templates and for live pods alike. Karmada's `AddPodRequest` differs
/// when sidecars are listed: it maxes every init container alone (sidecars neither add up nor
/// count before a later init container).
pub fn pod_request(
    containers: &[ResourceList],
    inits: &[(ResourceList, bool)],
    overhead: &ResourceList,
) -> ResourceList {
    let mut total = ResourceList::new();
    for c in containers {
        total.add(c);
    }
    let mut sidecars = ResourceList::new();
    let mut starting = ResourceList::new();
    for (r, sidecar) in inits {
        if *sidecar {
            sidecars.add(r);
            starting.max_with(&sidecars);
        } else {
            let mut with = r.clone();
            with.add(&sidecars);
            starting.max_with(&with);
        }
    }
    total.add(&sidecars);
    total.max_with(&starting);
    total.add(overhead);
    total
}

/// Why a negative quantity is refused (the API server's own message).
const NEGATIVE: &str = "must be greater than or equal to 0 (Kubernetes refuses a negative quantity)";

/// Kubernetes' pod request ([`pod_request`]): Σ containers and sidecars, max with each init
/// container's start-up need, plus overhead.
/// A container without requests falls back to its limits (the API server defaults requests to
/// limits). Reads only `containers[].resources`, `initContainers[].{resources, restartPolicy}`,
/// `overhead`, `nodeSelector`, `tolerations`,
/// `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution` and
/// `priorityClassName` (the Lua helper converts only these: `interpreter::kube`'s
/// `pod_template_shape`; a field read here must be added there).
pub fn pod_requirements(spec: Option<&Value>, at: &str) -> Result<ReplicaRequirements, WorkloadError> {
    let mut req = ReplicaRequirements::default();
    let Some(spec) = spec else {
        return Ok(req);
    };
    // The field names are built only for an error (this runs for every object interpreted).
    let container_request = |c: &Value, field: &dyn Fn() -> String| -> Result<ResourceList, WorkloadError> {
        let resources = c.get("resources");
        let requests =
            ResourceList::from_json(resources.and_then(|r| r.get("requests"))).map_err(|(name, source)| {
                WorkloadError::Quantity { field: format!("{}.resources.requests.{name}", field()), source }
            })?;
        let limits = ResourceList::from_json(resources.and_then(|r| r.get("limits"))).map_err(|(name, source)| {
            WorkloadError::Quantity { field: format!("{}.resources.limits.{name}", field()), source }
        })?;
        for (which, list) in [("requests", &requests), ("limits", &limits)] {
            if let Some((name, _)) = list.first_negative() {
                let text = resources.and_then(|r| r.pointer(&format!("/{which}/{name}"))).map(ToString::to_string);
                let source = QuantityError { text: text.unwrap_or_default(), reason: NEGATIVE };
                return Err(WorkloadError::Quantity { field: format!("{}.resources.{which}.{name}", field()), source });
            }
        }
        Ok(container_request(requests, &limits))
    };
    let mut containers = Vec::new();
    if let Some(list) = spec.get("containers").and_then(Value::as_array) {
        for (i, c) in list.iter().enumerate() {
            containers.push(container_request(c, &|| format!("{at}.containers[{i}]"))?);
        }
    }
    let mut inits = Vec::new();
    if let Some(list) = spec.get("initContainers").and_then(Value::as_array) {
        for (i, c) in list.iter().enumerate() {
            let r = container_request(c, &|| format!("{at}.initContainers[{i}]"))?;
            inits.push((r, c.get("restartPolicy").and_then(Value::as_str) == Some("Always")));
        }
    }
    let overhead = ResourceList::from_json(spec.get("overhead"))
        .map_err(|(name, source)| WorkloadError::Quantity { field: format!("{at}.overhead.{name}"), source })?;
    if let Some((name, _)) = overhead.first_negative() {
        let text = spec.pointer(&format!("/overhead/{name}")).map(ToString::to_string).unwrap_or_default();
        let source = QuantityError { text, reason: NEGATIVE };
        return Err(WorkloadError::Quantity { field: format!("{at}.overhead.{name}"), source });
    }
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
    if let Some(a) = spec
        .get("affinity")
        .and_then(|a| a.get("nodeAffinity"))
        .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
    {
        req.node_affinity = a.to_string();
    }
    req.priority_class_name = spec.get("priorityClassName").and_then(Value::as_str).map(str::to_string);
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::types::InterpreterTarget;
    use serde_json::json;

    fn none() -> InterpreterTable {
        InterpreterTable::default()
    }

    #[test]
    fn declarative_interpreter_reads_a_custom_kind() {
        let mut table = InterpreterTable::default();
        table.insert(WorkloadInterpreterSpec {
            target: InterpreterTarget { api_version: "apps.kruise.io/v1alpha1".into(), kind: "CloneSet".into() },
            replicas_path: Some("/spec/replicas".into()),
            pod_template_path: Some("/spec/template".into()),
            requests_path: None,
        });
        table.insert(WorkloadInterpreterSpec {
            target: InterpreterTarget { api_version: "example.com/v1".into(), kind: "Model".into() },
            replicas_path: Some("/spec/shards".into()),
            pod_template_path: None,
            requests_path: Some("/spec/perShard".into()),
        });
        let c = json!({"spec": {"replicas": 5, "template": {"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "2"}}}]}}}});
        // Any version of the group matches.
        let w = interpret("apps.kruise.io", "CloneSet", &c, &table).expect("valid");
        assert_eq!((w.replicas, w.requirements.request.get("cpu")), (Some(5), 2000));
        assert_eq!(w.replica_path.as_deref(), Some("/spec/replicas"));
        assert_eq!(pod_spec_pointer("apps.kruise.io", "CloneSet", &table).as_deref(), Some("/spec/template/spec"));
        let m = json!({"spec": {"shards": 3, "perShard": {"memory": "1Gi", "nvidia.com/gpu": 1}}});
        let w = interpret("example.com", "Model", &m, &table).expect("valid");
        assert_eq!(w.replicas, Some(3));
        assert_eq!(w.requirements.request.get("nvidia.com/gpu"), 1000);
        let e = interpret("example.com", "Model", &json!({"spec": {"shards": "x"}}), &table).expect_err("bad");
        assert!(e.to_string().contains("spec.shards"), "{e}");
        // Without an interpreter the kind is not a workload.
        assert_eq!(interpret("example.com", "Other", &m, &table).map(|w| w.replicas), Ok(None));
    }

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
        let w = interpret("apps", "Deployment", &d, &none()).expect("valid");
        assert_eq!(w.replicas, Some(3));
        assert_eq!(w.requirements.request.get("cpu"), 2100);
        assert_eq!(w.requirements.request.get("memory"), 64 * 1024 * 1024 * 1000);
        assert_eq!(w.requirements.request.get("nvidia.com/gpu"), 1000);
        assert_eq!(w.requirements.node_selector.get("gpu").map(String::as_str), Some("a100"));
    }

    /// Issue 48: sidecar init containers (`restartPolicy: Always`) under Kubernetes' formula,
    /// both orders, the overhead added once. Karmada's `AddPodRequest` (the max of every init
    /// container alone) gives 3 CPU + overhead in both orders.
    #[test]
    fn sidecar_init_containers_follow_kubernetes_formula_in_either_order() {
        let pod = |inits: serde_json::Value| {
            json!({"spec": {"replicas": 1, "template": {"spec": {
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
                "initContainers": inits,
                "overhead": {"cpu": "100m", "memory": "64Mi"}
            }}}})
        };
        let init = json!({"name": "migrate", "resources": {"requests": {"cpu": "3", "memory": "512Mi"}}});
        let sidecar = json!({"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}});
        let mib = 1024 * 1024 * 1000;
        let request = |inits| {
            let w = interpret("apps", "Deployment", &pod(inits), &none()).expect("valid");
            (w.requirements.request.get("cpu"), w.requirements.request.get("memory"))
        };
        // Init first: it starts alone (3 CPU, 512Mi); then the app runs beside the sidecar
        // (1.5 CPU, 3Gi). Kubernetes: max per resource, plus the overhead.
        assert_eq!(request(json!([init.clone(), sidecar.clone()])), (3100, (3072 + 64) * mib));
        // Sidecar first: the init container starts beside it (4 CPU, 2.5Gi).
        assert_eq!(request(json!([sidecar.clone(), init.clone()])), (4100, (3072 + 64) * mib));
        // Two sidecars and an init container between them: only the first counts for it.
        let second = json!({"name": "log", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}});
        assert_eq!(request(json!([sidecar.clone(), init.clone(), second])).0, 4100);
        // The same formula for a live pod (the node-level estimator's usage).
        let live: crate::members::decode::PodItem = serde_json::from_value(json!({"spec": {
            "containers": [{"resources": {"requests": {"cpu": "500m"}}}],
            "initContainers": [
                {"restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                {"resources": {"requests": {"cpu": "3"}}}],
            "overhead": {"cpu": "100m"}}}))
        .expect("a pod");
        assert_eq!(live.request().get("cpu"), 4100);
    }

    #[test]
    fn defaults_and_jobs() {
        let w = interpret("apps", "Deployment", &json!({"spec": {}}), &none()).expect("valid");
        assert_eq!(w.replicas, Some(1));
        let j =
            interpret("batch", "Job", &json!({"spec": {"parallelism": 4, "completions": 3}}), &none()).expect("valid");
        assert_eq!((j.replicas, j.completions), (Some(3), Some(3)));
        let c = interpret("", "ConfigMap", &json!({"data": {}}), &none()).expect("valid");
        assert_eq!(c.replicas, None);
    }

    #[test]
    fn bad_quantity_names_the_field() {
        let d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "lots"}}}]}}}});
        let e = interpret("apps", "Deployment", &d, &none()).expect_err("invalid");
        assert!(e.to_string().contains("spec.template.spec.containers[0].resources.requests.cpu"), "{e}");
        let e = interpret("apps", "Deployment", &json!({"spec": {"replicas": "two"}}), &none()).expect_err("invalid");
        assert!(e.to_string().contains("spec.replicas"), "{e}");
    }
}
