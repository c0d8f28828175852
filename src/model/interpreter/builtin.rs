//! fedsched's own interpreters for the CRDs users reach for first, in Rust, so that they work
//! with nothing configured. Each is written from the kind's documented fields (not from
//! Karmada's scripts) and is checked against Karmada's test data for the operations it answers
//! (`tests/it/interpreter.rs`). They rank below every customization script: a repository or
//! `[interpreter] dirs` script for the same kind and operation wins.
//!
//! | kind | operations |
//! |---|---|
//! | `apps.kruise.io/v1alpha1 CloneSet`, `apps.kruise.io/v1beta1 StatefulSet` | InterpretReplica, ReviseReplica, InterpretDependency |
//! | `argoproj.io/v1alpha1 Workflow` | InterpretReplica, ReviseReplica, InterpretDependency |
//! | `helm.toolkit.fluxcd.io/v2beta1 HelmRelease` | InterpretDependency |
//! | `kustomize.toolkit.fluxcd.io/v1 Kustomization` | InterpretDependency |
//! | `flink.apache.org/v1beta1 FlinkDeployment` | InterpretComponent |
//! | `batch.volcano.sh/v1alpha1 Job` | InterpretComponent |
//!
//! Status and retention are not built in (a customization script for them still runs in
//! `fedsched interpret`). Health is built in for the native kinds Karmada's default
//! interpreter judges ([`native_health`]); a progressive rollout asks it (or a
//! `healthInterpretation` script, which wins) for the kinds whose pods and status it does not
//! read itself.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::results::{DependencyRef, Outcome, components_from_json, requirements_from_json};
use super::{Args, InterpreterError, Operation, kube};

/// One built-in interpreter.
#[derive(Debug)]
pub struct Builtin {
    pub name: &'static str,
    pub api_version: &'static str,
    pub kind: &'static str,
    pub operations: &'static [Operation],
    pub run: fn(Operation, &Args<'_>) -> Option<Result<Outcome, InterpreterError>>,
}

impl PartialEq for Builtin {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

use Operation::*;

/// Every built-in interpreter.
pub static BUILTINS: &[Builtin] = &[
    Builtin {
        name: "kruise-cloneset",
        api_version: "apps.kruise.io/v1alpha1",
        kind: "CloneSet",
        operations: &[InterpretReplica, ReviseReplica, InterpretDependency],
        run: pod_template_workload,
    },
    Builtin {
        name: "kruise-statefulset",
        api_version: "apps.kruise.io/v1beta1",
        kind: "StatefulSet",
        operations: &[InterpretReplica, ReviseReplica, InterpretDependency],
        run: pod_template_workload,
    },
    Builtin {
        name: "argo-workflow",
        api_version: "argoproj.io/v1alpha1",
        kind: "Workflow",
        operations: &[InterpretReplica, ReviseReplica, InterpretDependency],
        run: argo_workflow,
    },
    Builtin {
        name: "flux-helmrelease",
        api_version: "helm.toolkit.fluxcd.io/v2beta1",
        kind: "HelmRelease",
        operations: &[InterpretDependency],
        run: flux_helmrelease,
    },
    Builtin {
        name: "flux-kustomization",
        api_version: "kustomize.toolkit.fluxcd.io/v1",
        kind: "Kustomization",
        operations: &[InterpretDependency],
        run: flux_kustomization,
    },
    Builtin {
        name: "flink-deployment",
        api_version: "flink.apache.org/v1beta1",
        kind: "FlinkDeployment",
        operations: &[InterpretComponent],
        run: flink_deployment,
    },
    Builtin {
        name: "volcano-job",
        api_version: "batch.volcano.sh/v1alpha1",
        kind: "Job",
        operations: &[InterpretComponent],
        run: volcano_job,
    },
];

/// The built-in interpreter answering `op` for a kind.
pub fn find(api_version: &str, kind: &str, op: Operation) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.api_version == api_version && b.kind == kind && b.operations.contains(&op))
}

/// A built-in interpreter by name.
pub fn by_name(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

fn arg_error(op: Operation, reason: impl Into<String>) -> InterpreterError {
    InterpreterError::Arguments { operation: op.name(), reason: reason.into() }
}

fn desired<'a>(op: Operation, args: &Args<'a>) -> Result<&'a Value, InterpreterError> {
    args.desired.ok_or_else(|| arg_error(op, "needs the desired object"))
}

fn namespace(obj: &Value) -> String {
    obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string()
}

/// Replicas at `pointer` (default when absent), as the Lua interpreters read them.
fn replicas_at(op: Operation, obj: &Value, pointer: &str, default: i64) -> Result<i32, InterpreterError> {
    let v = match obj.pointer(pointer) {
        None | Some(Value::Null) => default as f64,
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0).trunc(),
        Some(_) => {
            return Err(arg_error(
                op,
                format!("{}: expected a number", pointer.trim_start_matches('/').replace('/', ".")),
            ));
        }
    };
    if !(0.0..=f64::from(i32::MAX)).contains(&v) {
        return Err(arg_error(op, format!("{v} is not a non-negative 32-bit integer")));
    }
    Ok(v as i32)
}

fn set_at(obj: &Value, parent: &str, field: &str, replicas: i64) -> Result<Value, String> {
    let mut out = obj.clone();
    let slot =
        out.pointer_mut(parent).and_then(Value::as_object_mut).ok_or_else(|| format!("{parent} is not an object"))?;
    slot.insert(field.to_string(), json!(replicas));
    Ok(out)
}

fn replica_outcome(op: Operation, replicas: i32, template: &Value) -> Result<Outcome, InterpreterError> {
    let requires_json = kube::requirements_json(template).map_err(|e| arg_error(op, e))?;
    let requires = match &requires_json {
        Some(r) => Some(requirements_from_json(r).map_err(|e| arg_error(op, e))?),
        None => None,
    };
    Ok(Outcome::Replica { replicas, requires, requires_json })
}

fn deps(list: impl IntoIterator<Item = (&'static str, String)>, ns: &str) -> Outcome {
    let set: BTreeSet<DependencyRef> = list
        .into_iter()
        .filter(|(_, n)| !n.is_empty())
        .map(|(kind, name)| DependencyRef {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: ns.to_string(),
            name,
            label_selector: None,
        })
        .collect();
    Outcome::Dependencies(set.into_iter().collect())
}

/// Kinds with `spec.replicas` and a pod template at `spec.template` (Kruise CloneSet and
/// Advanced StatefulSet).
fn pod_template_workload(op: Operation, args: &Args<'_>) -> Option<Result<Outcome, InterpreterError>> {
    let run = || -> Result<Outcome, InterpreterError> {
        let obj = desired(op, args)?;
        // Without a pod template the object is malformed (its CRD requires one): an error, as
        // Karmada's scripts for these kinds give (`accuratePodRequirements` and
        // `getPodDependencies` of nil), not an answer without requirements.
        let template = match obj.pointer("/spec/template") {
            Some(t @ Value::Object(_)) => t,
            _ if op == ReviseReplica => &Value::Null,
            other => {
                let got = match other {
                    None | Some(Value::Null) => "nil",
                    Some(Value::Array(_)) => "a list",
                    Some(_) => "a scalar",
                };
                return Err(arg_error(op, format!("spec.template: expected a pod template, got {got}")));
            }
        };
        match op {
            InterpretReplica => {
                let Some(r) = obj.pointer("/spec/replicas").filter(|v| !v.is_null()) else {
                    return Err(arg_error(op, "spec.replicas: expected a number, got nil"));
                };
                let _ = r;
                replica_outcome(op, replicas_at(op, obj, "/spec/replicas", 0)?, template)
            }
            ReviseReplica => {
                set_at(obj, "/spec", "replicas", args.replicas).map(Outcome::Revised).map_err(|e| arg_error(op, e))
            }
            InterpretDependency => {
                let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
                let list = template.get("spec").map(crate::model::deps::pod_dependencies).unwrap_or_default();
                Ok(deps(list, ns))
            }
            _ => Err(arg_error(op, "not answered")),
        }
    };
    Some(run())
}

/// Argo Workflow: `spec.parallelism` replicas (default 1); the workflow-level affinity, node
/// selector and tolerations as requirements; volumes, image pull secrets, service accounts and
/// volume claim templates as dependencies.
fn argo_workflow(op: Operation, args: &Args<'_>) -> Option<Result<Outcome, InterpreterError>> {
    let run = || -> Result<Outcome, InterpreterError> {
        let obj = desired(op, args)?;
        let spec = obj.get("spec").cloned().unwrap_or(json!({}));
        match op {
            InterpretReplica => {
                let mut pod = serde_json::Map::new();
                for f in ["affinity", "nodeSelector", "tolerations"] {
                    if let Some(v) = spec.get(f).filter(|v| !v.is_null()) {
                        pod.insert(f.into(), v.clone());
                    }
                }
                let template = json!({"spec": Value::Object(pod)});
                replica_outcome(op, replicas_at(op, obj, "/spec/parallelism", 1)?, &template)
            }
            ReviseReplica => {
                set_at(obj, "/spec", "parallelism", args.replicas).map(Outcome::Revised).map_err(|e| arg_error(op, e))
            }
            InterpretDependency => {
                // Only the workflow-level pod fields (templates are not read).
                let mut pod = serde_json::Map::new();
                for f in ["volumes", "imagePullSecrets", "serviceAccountName"] {
                    if let Some(v) = spec.get(f) {
                        pod.insert(f.into(), v.clone());
                    }
                }
                let mut list: Vec<(&'static str, String)> =
                    crate::model::deps::pod_dependencies(&Value::Object(pod)).into_iter().collect();
                if let Some(sa) = spec.pointer("/executor/serviceAccountName").and_then(Value::as_str) {
                    list.push(("ServiceAccount", sa.to_string()));
                }
                for c in spec.get("volumeClaimTemplates").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(n) = c.pointer("/metadata/name").and_then(Value::as_str) {
                        list.push(("PersistentVolumeClaim", n.to_string()));
                    }
                }
                Ok(deps(list, &namespace(obj)))
            }
            _ => Err(arg_error(op, "not answered")),
        }
    };
    Some(run())
}

fn str_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

/// Flux HelmRelease: `valuesFrom` Secrets and ConfigMaps, the chart verification and
/// kubeconfig Secrets, the service account.
fn flux_helmrelease(op: Operation, args: &Args<'_>) -> Option<Result<Outcome, InterpreterError>> {
    let run = || -> Result<Outcome, InterpreterError> {
        let obj = desired(op, args)?;
        let mut list = Vec::new();
        for v in obj.pointer("/spec/valuesFrom").and_then(Value::as_array).into_iter().flatten() {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            match v.get("kind").and_then(Value::as_str) {
                Some("Secret") => list.push(("Secret", name)),
                Some("ConfigMap") => list.push(("ConfigMap", name)),
                _ => {}
            }
        }
        for p in ["/spec/chart/spec/verify/secretRef/name", "/spec/kubeConfig/secretRef/name"] {
            if let Some(n) = str_at(obj, p) {
                list.push(("Secret", n));
            }
        }
        if let Some(n) = str_at(obj, "/spec/serviceAccountName") {
            list.push(("ServiceAccount", n));
        }
        Ok(deps(list, &namespace(obj)))
    };
    (op == InterpretDependency).then(run)
}

/// Flux Kustomization: the decryption and kubeconfig Secrets, the service account.
fn flux_kustomization(op: Operation, args: &Args<'_>) -> Option<Result<Outcome, InterpreterError>> {
    let run = || -> Result<Outcome, InterpreterError> {
        let obj = desired(op, args)?;
        let mut list = Vec::new();
        for p in ["/spec/decryption/secretRef/name", "/spec/kubeConfig/secretRef/name"] {
            if let Some(n) = str_at(obj, p) {
                list.push(("Secret", n));
            }
        }
        if let Some(n) = str_at(obj, "/spec/serviceAccountName") {
            list.push(("ServiceAccount", n));
        }
        Ok(deps(list, &namespace(obj)))
    };
    (op == InterpretDependency).then(run)
}

/// A number, or a string holding one (Lua's `tonumber`); None otherwise.
fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

fn components(op: Operation, list: Vec<Value>) -> Result<Outcome, InterpreterError> {
    components_from_json(&Value::Array(list)).map(Outcome::Components).map_err(|e| arg_error(op, e))
}

/// FlinkDeployment: a `jobmanager` (`spec.jobManager.replicas`, default 1) and a `taskmanager`
/// (`spec.taskManager.replicas`, else ⌈`job.parallelism` / `taskmanager.numberOfTaskSlots`⌉,
/// else 1), each requesting its `resource.cpu` / `resource.memory`, with the node selector,
/// tolerations and priority class of `spec.podTemplate`. The memory is handed on as a number
/// of its base units, as Karmada's customization does (`kube.getResourceQuantity`), so it is
/// written as Karmada writes it (`2048m` → `2.048`, `2Gi` → `2147483648`: the same amounts).
fn flink_deployment(op: Operation, args: &Args<'_>) -> Option<Result<Outcome, InterpreterError>> {
    let run = || -> Result<Outcome, InterpreterError> {
        let obj = args.desired.or(args.observed).ok_or_else(|| arg_error(op, "needs an object"))?;
        let pod = obj.pointer("/spec/podTemplate/spec");
        let as_number = |field: &str, q: &Value| -> Result<Value, InterpreterError> {
            let milli = match q {
                Value::String(s) => {
                    crate::model::quantity::parse_milli(s).map_err(|e| arg_error(op, format!("{field}: {e}")))?
                }
                Value::Number(n) => (n.as_f64().unwrap_or(0.0) * 1000.0) as i64,
                _ => return Err(arg_error(op, format!("{field}: expected a quantity"))),
            };
            super::lua::number_to_json(milli as f64 / 1000.0).map_err(|e| arg_error(op, format!("{field}: {e}")))
        };
        let requires = |manager: &str| -> Result<Value, InterpreterError> {
            let mut request = serde_json::Map::new();
            for r in ["cpu", "memory"] {
                let field = format!("spec.{manager}.resource.{r}");
                if let Some(q) = obj.pointer(&format!("/spec/{manager}/resource/{r}")).filter(|q| !q.is_null()) {
                    let q = if r == "memory" { as_number(&field, q)? } else { q.clone() };
                    request.insert(r.into(), q);
                }
            }
            let mut out = serde_json::Map::new();
            out.insert("resourceRequest".into(), Value::Object(request));
            if let Some(pod) = pod {
                let mut claim = serde_json::Map::new();
                for f in ["nodeSelector", "tolerations"] {
                    if let Some(v) = pod.get(f).filter(|v| !v.is_null()) {
                        claim.insert(f.into(), v.clone());
                    }
                }
                if !claim.is_empty() {
                    out.insert("nodeClaim".into(), Value::Object(claim));
                }
                if let Some(p) = pod.get("priorityClassName").and_then(Value::as_str).filter(|p| !p.is_empty()) {
                    out.insert("priorityClassName".into(), json!(p));
                }
            }
            Ok(Value::Object(out))
        };
        let jm = number(obj.pointer("/spec/jobManager/replicas")).unwrap_or(1.0);
        let tm = match number(obj.pointer("/spec/taskManager/replicas")) {
            Some(n) => n,
            None => {
                let parallelism = number(obj.pointer("/spec/job/parallelism"));
                let slots = number(
                    obj.pointer("/spec/flinkConfiguration").and_then(|c| c.get("taskmanager.numberOfTaskSlots")),
                );
                match (parallelism, slots) {
                    (Some(p), Some(s)) if s != 0.0 => (p / s).ceil(),
                    _ => 1.0,
                }
            }
        };
        components(
            op,
            vec![
                json!({"name": "jobmanager", "replicas": super::lua::number_to_json(jm).map_err(|e| arg_error(op, e.to_string()))?, "replicaRequirements": requires("jobManager")?}),
                json!({"name": "taskmanager", "replicas": super::lua::number_to_json(tm).map_err(|e| arg_error(op, e.to_string()))?, "replicaRequirements": requires("taskManager")?}),
            ],
        )
    };
    (op == InterpretComponent).then(run)
}

/// Volcano Job: one component per `spec.tasks[]` (named by the task, else `task-<index>`),
/// `minAvailable` replicas (default 1), each requesting what its pod template does.
fn volcano_job(op: Operation, args: &Args<'_>) -> Option<Result<Outcome, InterpreterError>> {
    let run = || -> Result<Outcome, InterpreterError> {
        let obj = args.desired.or(args.observed).ok_or_else(|| arg_error(op, "needs an object"))?;
        let mut list = Vec::new();
        for (i, task) in obj.pointer("/spec/tasks").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let replicas = number(task.get("minAvailable")).unwrap_or(1.0);
            let template = task.get("template").cloned().unwrap_or(Value::Null);
            let requires = kube::requirements_json(&template).map_err(|e| arg_error(op, e))?;
            let name = task.get("name").and_then(Value::as_str).filter(|n| !n.is_empty());
            let mut c = json!({
                "name": name.map(str::to_string).unwrap_or_else(|| format!("task-{i}")),
                "replicas": super::lua::number_to_json(replicas).map_err(|e| arg_error(op, e.to_string()))?,
            });
            if let Some(r) = requires {
                c["replicaRequirements"] = r;
            }
            list.push(c);
        }
        components(op, list)
    };
    (op == InterpretComponent).then(run)
}

/// The native kinds whose health Karmada's default interpreter judges
/// (`pkg/resourceinterpreter/default/native`): `(apiVersion, kind)`.
pub const NATIVE_HEALTH_KINDS: [(&str, &str); 9] = [
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "DaemonSet"),
    ("v1", "Service"),
    ("networking.k8s.io/v1", "Ingress"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Pod"),
    ("policy/v1", "PodDisruptionBudget"),
];

/// Karmada's default health of a native object observed in a member, written from the kinds'
/// documented fields with Karmada's rules: a workload controller has observed its latest
/// generation and every wanted replica is updated and available; a `LoadBalancer` Service and
/// an Ingress have an address; a claim is `Bound`; a Pod has succeeded or runs Ready; a
/// disruption budget has its desired healthy pods. `None`: a kind it does not judge.
pub fn native_health(api_version: &str, kind: &str, o: &Value) -> Option<bool> {
    if !NATIVE_HEALTH_KINDS.contains(&(api_version, kind)) {
        return None;
    }
    let int = |p: &str| o.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let text = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("");
    let observed = int("/status/observedGeneration") == int("/metadata/generation");
    let wanted = o.pointer("/spec/replicas").and_then(Value::as_i64);
    let addressed = || {
        o.pointer("/status/loadBalancer/ingress").and_then(Value::as_array).is_some_and(|list| {
            list.iter().any(|i| {
                [i.get("hostname"), i.get("ip")]
                    .into_iter()
                    .flatten()
                    .any(|v| v.as_str().is_some_and(|s| !s.is_empty()))
            })
        })
    };
    Some(match kind {
        "Deployment" | "StatefulSet" => {
            let updated = int("/status/updatedReplicas");
            observed && wanted.is_none_or(|w| updated >= w) && int("/status/availableReplicas") >= updated
        }
        "ReplicaSet" => observed && wanted.is_none_or(|w| int("/status/availableReplicas") >= w),
        "DaemonSet" => {
            let updated = int("/status/updatedNumberScheduled");
            observed && updated >= int("/status/desiredNumberScheduled") && int("/status/numberAvailable") >= updated
        }
        "Service" => text("/spec/type") != "LoadBalancer" || addressed(),
        "Ingress" => addressed(),
        "PersistentVolumeClaim" => text("/status/phase") == "Bound",
        "Pod" => {
            let ready = o.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|cs| {
                cs.iter().any(|c| c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True")))
            });
            text("/status/phase") == "Succeeded" || (text("/status/phase") == "Running" && ready)
        }
        _ => int("/status/currentHealthy") >= int("/status/desiredHealthy"),
    })
}

#[cfg(test)]
mod health_tests {
    use super::native_health;
    use serde_json::json;

    /// Karmada's default health rules, one healthy and one not per kind.
    #[test]
    fn native_kinds_are_judged_healthy_as_karmadas_default_interpreter_does() {
        let cases = [
            (
                "apps/v1",
                "ReplicaSet",
                json!({"metadata": {"generation": 2}, "spec": {"replicas": 2},
                "status": {"observedGeneration": 2, "availableReplicas": 2}}),
                true,
            ),
            (
                "apps/v1",
                "ReplicaSet",
                json!({"metadata": {"generation": 2}, "spec": {"replicas": 2},
                "status": {"observedGeneration": 1, "availableReplicas": 2}}),
                false,
            ),
            (
                "apps/v1",
                "Deployment",
                json!({"metadata": {"generation": 1}, "spec": {"replicas": 3},
                "status": {"observedGeneration": 1, "updatedReplicas": 3, "availableReplicas": 2}}),
                false,
            ),
            (
                "apps/v1",
                "DaemonSet",
                json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1,
                "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberAvailable": 2}}),
                true,
            ),
            ("v1", "Service", json!({"spec": {"type": "ClusterIP"}}), true),
            ("v1", "Service", json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}}), false),
            (
                "networking.k8s.io/v1",
                "Ingress",
                json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}}),
                true,
            ),
            ("v1", "PersistentVolumeClaim", json!({"status": {"phase": "Pending"}}), false),
            (
                "v1",
                "Pod",
                json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}),
                true,
            ),
            (
                "v1",
                "Pod",
                json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}),
                false,
            ),
            ("v1", "Pod", json!({"status": {"phase": "Succeeded"}}), true),
            ("policy/v1", "PodDisruptionBudget", json!({"status": {"currentHealthy": 1, "desiredHealthy": 2}}), false),
        ];
        for (api, kind, o, want) in cases {
            assert_eq!(native_health(api, kind, &o), Some(want), "{kind} {o}");
        }
        assert_eq!(native_health("example.io/v1", "Widget", &json!({})), None);
        assert_eq!(native_health("v1", "ConfigMap", &json!({})), None);
    }
}
