//! The simulator as GitOps agent: "applies" a cluster's output directory as kustomize would
//! read it (the files its `kustomization.yaml` lists; every YAML file when there is none) by
//! creating the pods of each workload (with a `creationTimestamp`) and binding them first-fit
//! to nodes by requests, node selector, required node affinity and taints; pods that fit
//! nowhere stay Pending with `PodScheduled=False, reason=Unschedulable` and the
//! `lastTransitionTime` of when they were first found unschedulable (kept while they stay so).
//! A workload's pods are those of its controller (a Deployment's ReplicaSet `<name>-sim`); a
//! pod template that changed replaces them; a scale-down deletes the pods a ReplicaSet
//! controller would delete first (unbound, then not running, then not Ready, then the
//! newest), and a scale-up creates pods under the lowest free indexes. A
//! HorizontalPodAutoscaler of the directory holds its target at its `maxReplicas` (a
//! sustained load) when the target's file leaves `spec.replicas` out; a file that sets it
//! wins, as a GitOps tool's sync resets what the HPA scaled.
//!
//! A bound pod starts ([`Agent::start_after`]: `Pending` until then) and is `Ready` at once,
//! or, with [`Agent::ready_after`], first `Ready=False, reason=ContainersNotReady` and Ready
//! once the delay has passed ([`promote`], called by the agent's loop). The member's own
//! troubles: [`set_node_ready`] (a node NotReady turns its pods `Ready=False,
//! reason=NodeNotReady`, and back), [`set_node_allocatable`] (a node shrinks: the agent's pods
//! that no longer fit are evicted and placed again, elsewhere or Unschedulable) and
//! [`set_crashing`] (a workload's pods crash in a loop: never Ready while it lasts).
//!
//! [`apply`] reads the directory; [`desired`] and [`apply_desired`] are its two halves, for a
//! caller that keeps what it read (the deterministic simulation, `testbed::dst`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

use super::SimError;
use super::fleet::{FleetCluster, sort_objects};
use crate::model::ResourceList;
use crate::model::workload::pod_requirements;
use crate::policy::load::{parse_document, split_documents};
use crate::util::clock::rfc3339_ms;

/// Annotation on pods the agent created.
pub const APPLIED: &str = "simulator.fedsched.io/applied";
/// Annotation with the hash of the pod template a pod was created from.
pub const TEMPLATE_HASH: &str = "simulator.fedsched.io/template-hash";
/// Annotation with the Unix ms at which a bound pod turns Ready ([`Agent::ready_after`]).
pub const READY_AT: &str = "simulator.fedsched.io/ready-at";
/// Annotation with the Unix ms at which a bound pod starts running ([`Agent::start_after`]).
pub const START_AT: &str = "simulator.fedsched.io/start-at";
/// Annotation on pods that crash in a loop ([`set_crashing`]): never Ready while it is there.
pub const CRASHING: &str = "simulator.fedsched.io/crashing";

/// How the agent behaves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Agent {
    /// A bound pod turns Ready this long after it started (0: at once).
    pub ready_after: std::time::Duration,
    /// A bound pod starts running this long after it was bound (0: at once).
    pub start_after: std::time::Duration,
}

fn annotation<'a>(p: &'a Value, key: &str) -> Option<&'a Value> {
    p.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

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
    /// Ready pods deleted because their workload is gone from the directory or asks for fewer
    /// replicas (not because its pod template changed), per pod owner (`namespace/name`).
    pub ready_removed: BTreeMap<String, usize>,
}

impl ApplyReport {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        self.created + self.deleted + self.bound > 0
    }
}

/// The pods one workload object asks for: its controller's, from one pod template.
#[derive(Debug, Clone, PartialEq)]
pub struct PodGroup {
    /// Pods wanted.
    pub count: i64,
    /// Hash of the pod template ([`TEMPLATE_HASH`]).
    pub hash: String,
    /// Pod names are `<prefix>-<index>`.
    pub prefix: String,
    /// A pod of the group (without name and creation time).
    pub pod: Value,
    /// The workload object: `Kind/namespace/name`.
    pub workload: String,
}

/// A workload object as the agent applied it: what its served status is made from
/// ([`workload_object`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// `metadata.generation`: 1 when first applied, one more for each change of its pod
    /// template or replicas.
    pub generation: i64,
    /// Its pods' owner (`namespace/name` of the controller).
    pub owner: String,
    /// The pod template's hash ([`TEMPLATE_HASH`]).
    pub hash: String,
    pub replicas: i64,
}

/// What a cluster directory asks for: per pod owner (`namespace/name` of the controller), its
/// pods.
pub type Desired = BTreeMap<String, PodGroup>;

/// The pods a cluster directory asks for, read as kustomize reads it: the files its
/// `kustomization.yaml` lists (every YAML file below it when there is none).
pub fn desired(dir: &Path) -> Result<Desired, SimError> {
    let io = |path: &Path, source: std::io::Error| SimError::Io { path: path.to_path_buf(), source };
    let kustomization = dir.join("kustomization.yaml");
    let mut files = Vec::new();
    match std::fs::read_to_string(&kustomization) {
        Ok(text) => {
            let listed = split_documents(&text).into_iter().filter_map(|d| parse_document(&d).ok()).next();
            for r in listed.iter().flat_map(|k| k.get("resources").and_then(Value::as_array)).flatten() {
                if let Some(r) = r.as_str() {
                    files.push(dir.join(r));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => collect(dir, &mut files)?,
        Err(e) => return Err(io(&kustomization, e)),
    }
    files.sort();
    let mut objects = Vec::new();
    for f in files {
        let text = match std::fs::read_to_string(&f) {
            Ok(t) => t,
            // Listed but not there: kustomize would fail the whole build; the agent applies
            // nothing of this directory (an invariant of the output says it never happens).
            Err(source) => return Err(io(&f, source)),
        };
        objects.extend(split_documents(&text).iter().filter_map(|doc| parse_document(doc).ok()));
    }
    let scaled = hpa_replicas(&objects);
    let mut out = Desired::new();
    for obj in &objects {
        if let Some((owner, mut group)) = pod_group(obj) {
            // A workload whose file leaves `spec.replicas` out, with an HPA of the directory:
            // the member's HPA sets it (the GitOps agent does not). One that sets it gets it
            // back on every sync: the GitOps tool and the HPA fight, and the file wins.
            if obj.pointer("/spec/replicas").is_none()
                && let Some(n) = scaled.get(&target_id(obj))
            {
                group.count = *n;
            }
            out.insert(owner, group);
        }
    }
    Ok(out)
}

/// The simulated members' HorizontalPodAutoscalers: each holds its target (`kind/namespace/
/// name`) at its `maxReplicas`, as under a sustained load (the simulator has no metrics).
fn hpa_replicas(objects: &[Value]) -> BTreeMap<String, i64> {
    objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("HorizontalPodAutoscaler"))
        .filter_map(|o| {
            let ns = o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
            let kind = o.pointer("/spec/scaleTargetRef/kind").and_then(Value::as_str)?;
            let name = o.pointer("/spec/scaleTargetRef/name").and_then(Value::as_str)?;
            let max = o.pointer("/spec/maxReplicas").and_then(Value::as_i64)?;
            Some((format!("{kind}/{ns}/{name}"), max.clamp(0, 10_000)))
        })
        .collect()
}

/// `kind/namespace/name` of an object, as [`hpa_replicas`] keys its targets.
fn target_id(obj: &Value) -> String {
    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    format!("{}/{ns}/{}", str_at(obj, "/kind"), str_at(obj, "/metadata/name"))
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

/// The pods of one workload object (Deployment, StatefulSet, ReplicaSet, Job), as the pod
/// owner (`namespace/name` of its controller) and its [`PodGroup`]; none for other kinds.
pub fn pod_group(obj: &Value) -> Option<(String, PodGroup)> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = str_at(obj, "/metadata/name");
    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let int = |p: &str| obj.pointer(p).and_then(Value::as_i64);
    let (count, owner_kind, owner_name) = match kind {
        "Deployment" => (int("/spec/replicas").unwrap_or(1), "ReplicaSet", format!("{name}-sim")),
        "ReplicaSet" => (int("/spec/replicas").unwrap_or(1), "ReplicaSet", name.to_string()),
        "StatefulSet" => (int("/spec/replicas").unwrap_or(1), "StatefulSet", name.to_string()),
        "Job" => {
            let p = int("/spec/parallelism").unwrap_or(1);
            let c = int("/spec/completions").unwrap_or(p);
            (p.min(c), "Job", name.to_string())
        }
        _ => return None,
    };
    if name.is_empty() {
        return None;
    }
    let template = obj.pointer("/spec/template").cloned().unwrap_or(Value::Null);
    let hash = format!("{:016x}", crate::util::hash::fnv1a64(template.to_string().as_bytes()));
    let labels = template.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({}));
    let spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": ns,
            "labels": labels,
            "annotations": {APPLIED: "true", TEMPLATE_HASH: hash},
            "ownerReferences": [{"apiVersion": if owner_kind == "Job" { "batch/v1" } else { "apps/v1" },
                "kind": owner_kind, "name": owner_name, "uid": format!("sim-{owner_kind}-{ns}-{owner_name}"),
                "controller": true}],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    });
    let workload = format!("{kind}/{ns}/{name}");
    let group = PodGroup { count: count.clamp(0, 10_000), hash, prefix: owner_name.clone(), pod, workload };
    Some((format!("{ns}/{owner_name}"), group))
}

/// The pods of one workload object, named (see [`pod_group`]); none for other kinds.
pub fn workload_pods(obj: &Value) -> Vec<Value> {
    let Some((_, g)) = pod_group(obj) else { return Vec::new() };
    (0..g.count).map(|i| named(&g, i)).collect()
}

fn named(g: &PodGroup, i: i64) -> Value {
    let mut pod = g.pod.clone();
    pod["metadata"]["name"] = json!(format!("{}-{i}", g.prefix));
    pod
}

/// The controller (`namespace/name`) of a pod the agent created.
fn owner_of(p: &Value) -> String {
    let ns = str_at(p, "/metadata/namespace");
    format!("{ns}/{}", str_at(p, "/metadata/ownerReferences/0/name"))
}

fn is_ready(p: &Value) -> bool {
    p.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Which pods a ReplicaSet controller deletes first (lower ranks first): unbound, then not
/// running, then not Ready, then the newest (highest index).
fn deletion_rank(p: &Value) -> (bool, bool, bool, std::cmp::Reverse<i64>) {
    let bound = !str_at(p, "/spec/nodeName").is_empty();
    let running = str_at(p, "/status/phase") == "Running";
    let index = str_at(p, "/metadata/name").rsplit('-').next().and_then(|i| i.parse().ok()).unwrap_or(0);
    (bound, running, is_ready(p), std::cmp::Reverse(index))
}

/// Brings a cluster's pods in line with its output directory, then binds pending pods;
/// `now_ms` dates what changes.
pub fn apply(c: &mut FleetCluster, dir: &Path, agent: &Agent, now_ms: u64) -> Result<ApplyReport, SimError> {
    Ok(apply_desired(c, &desired(dir)?, agent, now_ms))
}

/// [`apply`] of what a directory asks for ([`desired`]).
pub fn apply_desired(c: &mut FleetCluster, desired: &Desired, agent: &Agent, now_ms: u64) -> ApplyReport {
    let mut report = ApplyReport::default();
    let hash_ptr = format!("/metadata/annotations/{}", TEMPLATE_HASH.replace('/', "~1"));
    // Per owner, the agent's pods of the wanted template (the others go).
    let mut kept: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut others = Vec::with_capacity(c.pods.len());
    for p in std::mem::take(&mut c.pods) {
        if annotation(&p, APPLIED).is_none() {
            others.push(p);
            continue;
        }
        let owner = owner_of(&p);
        match desired.get(&owner) {
            Some(g) if p.pointer(&hash_ptr).and_then(Value::as_str) == Some(g.hash.as_str()) => {
                kept.entry(owner).or_default().push(p);
            }
            Some(_) => report.deleted += 1,
            None => {
                report.deleted += 1;
                if is_ready(&p) {
                    *report.ready_removed.entry(owner).or_insert(0) += 1;
                }
            }
        }
    }
    for (owner, g) in desired {
        let mut pods = kept.remove(owner).unwrap_or_default();
        let want = usize::try_from(g.count).unwrap_or(0);
        if pods.len() > want {
            pods.sort_by_key(deletion_rank);
            for p in pods.drain(..pods.len() - want) {
                report.deleted += 1;
                if is_ready(&p) {
                    *report.ready_removed.entry(owner.clone()).or_insert(0) += 1;
                }
            }
        }
        let taken: BTreeSet<String> = pods.iter().map(|p| str_at(p, "/metadata/name").to_string()).collect();
        let mut i = 0;
        while pods.len() < want {
            let mut pod = named(g, i);
            i += 1;
            if taken.contains(str_at(&pod, "/metadata/name")) {
                continue;
            }
            pod["metadata"]["creationTimestamp"] = json!(rfc3339_ms(now_ms));
            pods.push(pod);
            report.created += 1;
        }
        others.extend(pods);
    }
    c.pods = others;
    sort_objects(&mut c.pods);
    bind(c, &mut report, agent, now_ms);
    let before = std::mem::take(&mut c.workloads);
    for (owner, g) in desired {
        let mut a = Applied { generation: 1, owner: owner.clone(), hash: g.hash.clone(), replicas: g.count };
        if let Some(b) = before.get(&g.workload) {
            a.generation = b.generation + i64::from(b.hash != a.hash || b.replicas != a.replicas);
        }
        c.workloads.insert(g.workload.clone(), a);
    }
    report
}

/// A workload object the agent applied (`Kind/namespace/name`), as the member's API serves
/// it: its generation, observed at once (the simulated controller does not lag), and the
/// status its pods make — `replicas` (every pod of the owner), `updatedReplicas` (those of
/// the current template), `readyReplicas` and `availableReplicas` (those of them Ready).
pub fn workload_object(c: &FleetCluster, workload: &str) -> Option<Value> {
    let a = c.workloads.get(workload)?;
    let mut parts = workload.splitn(3, '/');
    let (kind, ns, name) = (parts.next()?, parts.next()?, parts.next()?);
    let hash_ptr = format!("/metadata/annotations/{}", TEMPLATE_HASH.replace('/', "~1"));
    let pods: Vec<&Value> = c.pods.iter().filter(|p| owner_of(p) == a.owner).collect();
    let updated: Vec<&&Value> =
        pods.iter().filter(|p| p.pointer(&hash_ptr).and_then(Value::as_str) == Some(a.hash.as_str())).collect();
    let ready = updated.iter().filter(|p| is_ready(p)).count();
    Some(json!({
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "generation": a.generation},
        "spec": {"replicas": a.replicas},
        "status": {
            "observedGeneration": a.generation,
            "replicas": pods.len(),
            "updatedReplicas": updated.len(),
            "readyReplicas": ready,
            "availableReplicas": ready,
        },
    }))
}

/// The GitOps agent's object the simulator serves for a member (`PUT
/// /admin/clusters/{name}/agent`): a Flux `Kustomization` or an Argo CD `Application` that
/// says which revision of the member's directory the agent applied and how healthy that is.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitOpsAgent {
    /// `Kustomization` or `Application`.
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The agent applies nothing new while paused (the member keeps what it runs).
    #[serde(default)]
    pub paused: bool,
}

/// The revision of a directory's content as the simulated agent names it (its fingerprint,
/// as 40 hex digits like a git commit).
pub fn revision(print: u64) -> String {
    format!("{print:016x}{:024x}", 0)
}

/// What the agent says of the workloads it applied: `Healthy` when every one has its
/// replicas updated and Ready, `Degraded` when a pod crash-loops, `Progressing` otherwise;
/// with a message.
pub fn applied_health(c: &FleetCluster) -> (&'static str, String) {
    let crashing = c.pods.iter().filter(|p| annotation(p, CRASHING).is_some()).count();
    if crashing > 0 {
        return ("Degraded", format!("{crashing} pod(s) in CrashLoopBackOff"));
    }
    for w in c.workloads.keys() {
        let Some(o) = workload_object(c, w) else { continue };
        let (want, updated, ready) =
            (&o["spec"]["replicas"], &o["status"]["updatedReplicas"], &o["status"]["readyReplicas"]);
        if updated != want || ready != want {
            return (
                "Progressing",
                format!("Waiting for rollout to finish: {w} {ready} of {want} updated replicas ready"),
            );
        }
    }
    ("Healthy", String::new())
}

/// The agent's object as its controller writes it, for a member whose agent applied
/// `applied` and last saw `latest` (equal unless paused on a newer one).
pub fn agent_object(c: &FleetCluster, agent: &GitOpsAgent, applied: &str, latest: &str) -> Value {
    let (health, message) = applied_health(c);
    let meta = json!({"name": agent.name, "namespace": agent.namespace, "generation": 1});
    match agent.kind.as_str() {
        "Application" => json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": meta,
            "status": {
                "sync": {"status": if applied == latest { "Synced" } else { "OutOfSync" }, "revision": applied},
                "health": {"status": health, "message": message},
                "operationState": {"phase": "Succeeded", "syncResult": {"revision": applied}},
            },
        }),
        _ => {
            let rev = format!("main@sha1:{applied}");
            let ready = match health {
                "Healthy" => json!({"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                    "message": format!("Applied revision: {rev}")}),
                "Degraded" => json!({"type": "Ready", "status": "False", "reason": "HealthCheckFailed",
                    "message": format!("health check failed after 30s: {message}")}),
                _ => json!({"type": "Ready", "status": "Unknown", "reason": "Progressing",
                    "message": format!("Reconciliation in progress: {message}")}),
            };
            json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": meta,
                "status": {
                    "observedGeneration": 1,
                    "lastAppliedRevision": rev,
                    "lastAttemptedRevision": rev,
                    "conditions": [ready],
                },
            })
        }
    }
}

/// The pods of owner `owner` (`namespace/name`) crash in a loop (`crashing`: `Ready=False,
/// reason=CrashLoopBackOff`, and never Ready while it lasts) or stop crashing (Ready again,
/// unless still starting). Returns how many pods changed.
pub fn set_crashing(c: &mut FleetCluster, owner: &str, crashing: bool, now_ms: u64) -> usize {
    let mut n = 0;
    for p in c.pods.iter_mut() {
        if owner_of(p) != owner || str_at(p, "/spec/nodeName").is_empty() {
            continue;
        }
        let marked = annotation(p, CRASHING).is_some();
        if crashing == marked {
            continue;
        }
        n += 1;
        if crashing {
            p["metadata"]["annotations"][CRASHING] = json!("true");
            set_ready(p, false, Some("CrashLoopBackOff"), now_ms);
        } else {
            if let Some(a) = p.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
                a.remove(CRASHING);
            }
            if annotation(p, READY_AT).is_none() && annotation(p, START_AT).is_none() {
                set_ready(p, true, None, now_ms);
            }
        }
    }
    n
}

/// Images that go bad on a member ([`mark_bad_images`]): by image, whether its pods crash in
/// a loop (`true`, `CrashLoopBackOff`) or never turn Ready (`false`, `ContainersNotReady`).
pub type BadImages = BTreeMap<String, bool>;

/// Marks the pods of `c` one of whose containers runs an image of `bad`: not Ready while the
/// mark lasts ([`CRASHING`]: [`promote`] and node recoveries leave them so), with the reason of
/// its kind; a pod already marked is left as it is. Returns how many were marked.
pub fn mark_bad_images(c: &mut FleetCluster, bad: &BadImages, now_ms: u64) -> usize {
    if bad.is_empty() {
        return 0;
    }
    let mut n = 0;
    for p in c.pods.iter_mut() {
        if annotation(p, CRASHING).is_some() {
            continue;
        }
        let images = p.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
        let Some(crash) = images.iter().find_map(|ct| bad.get(str_at(ct, "/image"))).copied() else { continue };
        p["metadata"]["annotations"][CRASHING] = json!("true");
        if !str_at(p, "/spec/nodeName").is_empty() {
            set_ready(p, false, Some(if crash { "CrashLoopBackOff" } else { "ContainersNotReady" }), now_ms);
        }
        n += 1;
    }
    n
}

/// Pods whose start delay has passed start running, and those whose Ready delay has passed
/// turn Ready (unless their node is not Ready or they crash). Returns how many changed.
pub fn promote(c: &mut FleetCluster, now_ms: u64) -> usize {
    let not_ready = not_ready_nodes(c);
    let at = |p: &Value, key: &str| annotation(p, key).and_then(Value::as_str).and_then(|t| t.parse::<u64>().ok());
    let mut n = 0;
    for p in c.pods.iter_mut() {
        if let Some(start) = at(p, START_AT)
            && start <= now_ms
        {
            if let Some(a) = p.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
                a.remove(START_AT);
            }
            p["status"]["phase"] = json!("Running");
            p["status"]["startTime"] = json!(rfc3339_ms(start));
            n += 1;
        }
        let Some(ready) = at(p, READY_AT) else { continue };
        let node = str_at(p, "/spec/nodeName");
        if ready > now_ms || annotation(p, START_AT).is_some() || not_ready.contains(node) {
            continue;
        }
        if let Some(a) = p.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
            a.remove(READY_AT);
        }
        if annotation(p, CRASHING).is_none() {
            set_ready(p, true, None, now_ms);
        }
        n += 1;
    }
    n
}

/// The earliest start or Ready time of a pod still waiting for one (Unix ms), if any.
pub fn next_promotion(c: &FleetCluster) -> Option<u64> {
    // The times `promote` would act on, and no other: a pod starts at its start time, turns
    // Ready only once started and while its node is Ready (a node turning Ready again is an
    // event of its own). Reporting a Ready time `promote` skips would be a promotion due now
    // forever: the simulation's clock would never move again.
    // The NotReady nodes are listed only when a started pod still waits for Ready (this runs
    // for every member at every step of the simulation).
    let mut not_ready: Option<BTreeSet<String>> = None;
    let at = |p: &Value, key: &str| annotation(p, key).and_then(Value::as_str).and_then(|t| t.parse::<u64>().ok());
    c.pods
        .iter()
        .filter_map(|p| match at(p, START_AT) {
            Some(start) => Some(start),
            None => {
                let ready = at(p, READY_AT)?;
                let waits = not_ready.get_or_insert_with(|| not_ready_nodes(c)).contains(str_at(p, "/spec/nodeName"));
                (!waits).then_some(ready)
            }
        })
        .min()
}

fn not_ready_nodes(c: &FleetCluster) -> BTreeSet<String> {
    c.nodes
        .iter()
        .filter(|n| !node_ready(n))
        .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn node_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Sets a pod's `Ready` condition (added when missing), with the transition time when the
/// status changes.
fn set_ready(p: &mut Value, ready: bool, reason: Option<&str>, now_ms: u64) {
    let status = if ready { "True" } else { "False" };
    let cond = json!({"type": "Ready", "status": status, "reason": reason, "lastTransitionTime": rfc3339_ms(now_ms)});
    if !p["status"]["conditions"].is_array() {
        p["status"]["conditions"] = json!([]);
    }
    let Some(cs) = p["status"]["conditions"].as_array_mut() else { return };
    match cs.iter_mut().find(|c| c["type"] == "Ready") {
        Some(c) if c["status"] == status => {}
        Some(c) => *c = cond,
        None => cs.push(cond),
    }
}

/// Marks a node Ready or NotReady (its `Ready` condition, with the transition time) and its
/// pods with it: NotReady turns them `Ready=False, reason=NodeNotReady`; Ready again turns
/// those Ready (the ones still waiting for their delay keep waiting). False when there is no
/// such node.
pub fn set_node_ready(c: &mut FleetCluster, node: &str, ready: bool, now_ms: u64) -> bool {
    let Some(n) = c.nodes.iter_mut().find(|n| n.pointer("/metadata/name").and_then(Value::as_str) == Some(node)) else {
        return false;
    };
    let (status, reason) = if ready { ("True", "KubeletReady") } else { ("Unknown", "NodeStatusUnknown") };
    let cond = json!({"type": "Ready", "status": status, "reason": reason, "lastTransitionTime": rfc3339_ms(now_ms)});
    if !n["status"]["conditions"].is_array() {
        n["status"]["conditions"] = json!([]);
    }
    if let Some(cs) = n["status"]["conditions"].as_array_mut() {
        cs.retain(|c| c["type"] != "Ready");
        cs.push(cond);
    }
    for p in c.pods.iter_mut() {
        if p.pointer("/spec/nodeName").and_then(Value::as_str) != Some(node) {
            continue;
        }
        if matches!(p.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed")) {
            continue;
        }
        if !ready {
            set_ready(p, false, Some("NodeNotReady"), now_ms);
        } else if annotation(p, READY_AT).is_none()
            && annotation(p, START_AT).is_none()
            && annotation(p, CRASHING).is_none()
        {
            set_ready(p, true, None, now_ms);
        }
    }
    true
}

/// Changes a node's allocatable (and capacity) amounts (`{"cpu": "1", "memory": "2Gi"}`; other
/// resources kept), then evicts the agent's pods on it that no longer fit (the last ones
/// first) and places them again ([`apply`]'s binding: elsewhere, or Unschedulable). `None`
/// when there is no such node; else what the new placement did.
pub fn set_node_allocatable(
    c: &mut FleetCluster,
    node: &str,
    amounts: &serde_json::Map<String, Value>,
    agent: &Agent,
    now_ms: u64,
) -> Option<ApplyReport> {
    let n = c.nodes.iter_mut().find(|n| n.pointer("/metadata/name").and_then(Value::as_str) == Some(node))?;
    for field in ["allocatable", "capacity"] {
        if !n["status"][field].is_object() {
            n["status"][field] = json!({});
        }
        for (k, v) in amounts {
            n["status"][field][k] = v.clone();
        }
    }
    let alloc = ResourceList::from_json(n.pointer("/status/allocatable")).unwrap_or_default();
    let mut used = ResourceList::new();
    let mut pods = 0i64;
    let mut evict = Vec::new();
    for (i, p) in c.pods.iter().enumerate() {
        let here = p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node);
        if !here || matches!(p.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed")) {
            continue;
        }
        let req = request(p);
        let mut after = used.clone();
        after.add(&req);
        let fits_pods = !alloc.contains("pods") || (pods + 1) * 1000 <= alloc.get("pods");
        let fits = fits_pods && req.iter().all(|(r, _)| after.get(r) <= alloc.get(r));
        if fits || annotation(p, APPLIED).is_none() {
            used = after;
            pods += 1;
        } else {
            evict.push(i);
        }
    }
    for i in evict {
        let Some(p) = c.pods.get_mut(i) else { continue };
        if let Some(spec) = p["spec"].as_object_mut() {
            spec.remove("nodeName");
        }
        if let Some(a) = p.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
            a.remove(READY_AT);
            a.remove(START_AT);
        }
        p["status"] = json!({"phase": "Pending"});
    }
    let mut report = ApplyReport::default();
    bind(c, &mut report, agent, now_ms);
    Some(report)
}

/// First-fit binding of the agent's unbound pods.
fn bind(c: &mut FleetCluster, report: &mut ApplyReport, agent: &Agent, now_ms: u64) {
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
        let applied = annotation(p, APPLIED).is_some();
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
                let t = rfc3339_ms(now_ms);
                let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                let started = now_ms.saturating_add(ms(agent.start_after));
                let ready_at = started.saturating_add(ms(agent.ready_after));
                let crashing = annotation(p, CRASHING).is_some();
                let ready = if ready_at == now_ms && !crashing {
                    json!({"type": "Ready", "status": "True", "lastTransitionTime": t})
                } else {
                    if ready_at > now_ms {
                        p["metadata"]["annotations"][READY_AT] = json!(ready_at.to_string());
                    }
                    let reason = if crashing { "CrashLoopBackOff" } else { "ContainersNotReady" };
                    json!({"type": "Ready", "status": "False", "reason": reason, "lastTransitionTime": t})
                };
                let phase = if started > now_ms {
                    p["metadata"]["annotations"][START_AT] = json!(started.to_string());
                    json!({"phase": "Pending", "conditions": [
                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": t}, ready]})
                } else {
                    json!({"phase": "Running", "startTime": t, "conditions": [
                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": t}, ready]})
                };
                p["status"] = phase;
                report.bound += 1;
            }
            None => {
                // Found unschedulable before: keep the condition (and its transition time).
                let already = p.pointer("/status/conditions/0/reason").and_then(Value::as_str) == Some("Unschedulable");
                if !already {
                    p["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                        "reason": "Unschedulable", "lastTransitionTime": rfc3339_ms(now_ms),
                        "message": format!("0/{node_count} nodes are available: no node fits the pod's requests, node selector, affinity and tolerations.")}]});
                }
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
    if !node_ready(node) || node.pointer("/spec/unschedulable").and_then(Value::as_bool).unwrap_or(false) {
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

    /// `next_promotion` names only times `promote` acts on: a pod whose Ready time has passed
    /// on a NotReady node, or whose Ready time comes before its start, is not due (seed 29 of
    /// the simulation looped at one instant forever on such a pod).
    #[test]
    fn a_promotion_reported_due_is_one_promote_makes() {
        let pod = |name: &str, node: &str, annotations: Value| {
            json!({"metadata": {"name": name, "namespace": "shop", "annotations": annotations},
                "spec": {"nodeName": node}, "status": {"phase": "Running"}})
        };
        let mut c = FleetCluster {
            nodes: vec![node("a", "4", false, json!({})), node("b", "4", false, json!({}))],
            pods: vec![
                pod("p", "b", json!({READY_AT: "100"})),
                pod("q", "a", json!({START_AT: "300", READY_AT: "200"})),
            ],
            ..FleetCluster::default()
        };
        set_node_ready(&mut c, "b", false, 50);
        // p waits for its node, q for its start.
        assert_eq!(next_promotion(&c), Some(300));
        assert_eq!(promote(&mut c, 250), 0);
        assert_eq!(promote(&mut c, 300), 2, "q starts and turns Ready");
        assert_eq!(next_promotion(&c), None, "p waits for its node to turn Ready, an event of its own");
        set_node_ready(&mut c, "b", true, 400);
        assert_eq!(next_promotion(&c), Some(100));
        assert_eq!(promote(&mut c, 400), 1);
        assert_eq!(next_promotion(&c), None);
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
            ..FleetCluster::default()
        };
        let r = apply(&mut c, dir.path(), &Agent::default(), T0).expect("apply");
        assert_eq!((r.created, r.bound, r.unschedulable), (3, 2, 1));
        let on = |n: &str| c.pods.iter().filter(|p| p["spec"]["nodeName"] == n).count();
        assert_eq!((on("a"), on("d"), on("b"), on("c")), (1, 1, 0, 0));
        let pending: Vec<&Value> = c.pods.iter().filter(|p| p["status"]["phase"] == "Pending").collect();
        assert_eq!(pending[0]["status"]["conditions"][0]["reason"], "Unschedulable");
        assert_eq!(pending[0]["status"]["conditions"][0]["lastTransitionTime"], "2026-11-01T10:00:00.000Z");
        // Bound pods are Ready at once (no delay), every pod has its creation time.
        let bound: Vec<&Value> = c.pods.iter().filter(|p| p["status"]["phase"] == "Running").collect();
        assert!(bound.iter().all(|p| p["status"]["conditions"][1]["status"] == "True"), "{bound:?}");
        assert!(c.pods.iter().all(|p| p["metadata"]["creationTimestamp"] == "2026-11-01T10:00:00.000Z"));
        // Unchanged directory: nothing to do, and the unschedulable pod keeps its time.
        assert!(!apply(&mut c, dir.path(), &Agent::default(), T0 + 60_000).expect("apply").changed());
        let pending: Vec<&Value> = c.pods.iter().filter(|p| p["status"]["phase"] == "Pending").collect();
        assert_eq!(pending[0]["status"]["conditions"][0]["lastTransitionTime"], "2026-11-01T10:00:00.000Z");
        // Removed: pods deleted.
        std::fs::remove_file(dir.path().join("d.yaml")).expect("rm");
        assert_eq!(apply(&mut c, dir.path(), &Agent::default(), T0).expect("apply").deleted, 3);
        assert!(c.pods.is_empty());
    }

    const T0: u64 = 1_793_527_200_000; // 2026-11-01T10:00:00Z

    fn web(dir: &Path, replicas: u32, cpu: &str) {
        std::fs::write(
            dir.join("d.yaml"),
            format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: shop}}\nspec:\n  replicas: {replicas}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: c, image: i, resources: {{requests: {{cpu: {cpu}}}}}}}]\n"),
        )
        .expect("write");
    }

    fn decoded(c: &FleetCluster) -> crate::model::OwnerState {
        let page = json!({"items": c.pods}).to_string();
        let mut f = crate::members::decode::Fold::default();
        f.pods(crate::members::decode::decode_page(page.as_bytes()).expect("pods").items);
        f.finish().pods.owners.get("ReplicaSet/shop/web-sim").cloned().unwrap_or_default()
    }

    /// The Deployment the agent applied is served with its generation (one more per change of
    /// the pod template or replicas) and a status its pods make, which the daemon's decoder
    /// reads as `kubectl rollout status` does.
    #[test]
    fn an_applied_deployment_is_served_with_its_generation_and_status() {
        let dir = tempfile::tempdir().expect("tmp");
        web(dir.path(), 2, "100m");
        let mut c = FleetCluster { nodes: vec![node("a", "4", false, json!({}))], ..FleetCluster::default() };
        let agent = Agent { ready_after: std::time::Duration::from_secs(2), ..Agent::default() };
        let status = |c: &FleetCluster| {
            let o = workload_object(c, "Deployment/shop/web").expect("served");
            crate::members::decode::decode_object_status(o.to_string().as_bytes()).expect("decode")
        };
        apply(&mut c, dir.path(), &agent, T0).expect("apply");
        let s = status(&c);
        assert_eq!((s.generation, s.desired, s.updated, s.available), (1, 2, 2, 0));
        assert!(matches!(s.rolled_out(), crate::model::RolledOut::Waiting(_)));
        promote(&mut c, T0 + 2_000);
        assert_eq!(status(&c).rolled_out(), crate::model::RolledOut::Done);
        // The same files again: the same generation. Another template: the next one.
        apply(&mut c, dir.path(), &agent, T0 + 3_000).expect("apply");
        assert_eq!(status(&c).generation, 1);
        web(dir.path(), 2, "200m");
        apply(&mut c, dir.path(), &agent, T0 + 4_000).expect("apply");
        let s = status(&c);
        assert_eq!((s.generation, s.observed_generation, s.updated, s.available), (2, 2, 2, 0));
        assert_eq!(workload_object(&c, "Deployment/shop/other"), None);
    }

    #[test]
    fn pods_turn_ready_after_the_delay() {
        let dir = tempfile::tempdir().expect("tmp");
        web(dir.path(), 2, "100m");
        let mut c = FleetCluster {
            name: "m".into(),
            cluster: Value::Null,
            nodes: vec![node("a", "4", false, json!({}))],
            pods: vec![],
            ..FleetCluster::default()
        };
        let agent = Agent { ready_after: std::time::Duration::from_secs(2), ..Agent::default() };
        apply(&mut c, dir.path(), &agent, T0).expect("apply");
        let s = decoded(&c);
        assert_eq!((s.pods, s.running, s.ready), (2, 2, 0));
        assert_eq!(s.pending_reasons.get("ContainersNotReady"), Some(&2));
        assert_eq!(s.not_ready_since, vec![T0, T0]);
        assert_eq!(promote(&mut c, T0 + 1999), 0, "not yet");
        assert_eq!(promote(&mut c, T0 + 2000), 2);
        assert_eq!(decoded(&c).ready, 2);
        assert_eq!(promote(&mut c, T0 + 5000), 0, "once");
    }

    #[test]
    fn a_node_not_ready_takes_its_pods_readiness_and_gives_it_back() {
        let dir = tempfile::tempdir().expect("tmp");
        web(dir.path(), 2, "100m");
        let mut c = FleetCluster {
            name: "m".into(),
            cluster: Value::Null,
            nodes: vec![node("a", "4", false, json!({}))],
            pods: vec![],
            ..FleetCluster::default()
        };
        apply(&mut c, dir.path(), &Agent::default(), T0).expect("apply");
        assert!(set_node_ready(&mut c, "a", false, T0 + 1000));
        assert_eq!(c.nodes[0]["status"]["conditions"][0]["status"], "Unknown");
        let s = decoded(&c);
        assert_eq!((s.ready, s.pending_reasons.get("NodeNotReady")), (0, Some(&2)));
        assert_eq!(s.not_ready_since, vec![T0 + 1000, T0 + 1000]);
        // Nothing new goes to a node that is not Ready.
        web(dir.path(), 3, "100m");
        apply(&mut c, dir.path(), &Agent::default(), T0 + 2000).expect("apply");
        assert_eq!(decoded(&c).unschedulable_since, vec![T0 + 2000], "the third pod finds no Ready node");
        assert!(set_node_ready(&mut c, "a", true, T0 + 3000));
        web(dir.path(), 2, "100m");
        apply(&mut c, dir.path(), &Agent::default(), T0 + 4000).expect("apply");
        let s = decoded(&c);
        assert_eq!((s.pods, s.ready), (2, 2));
        assert!(!set_node_ready(&mut c, "ghost", false, T0));
    }

    #[test]
    fn a_node_that_shrinks_evicts_what_no_longer_fits() {
        let dir = tempfile::tempdir().expect("tmp");
        web(dir.path(), 4, "1");
        let mut c = FleetCluster {
            name: "m".into(),
            cluster: Value::Null,
            nodes: vec![node("a", "4", false, json!({})), node("b", "1", false, json!({}))],
            pods: vec![],
            ..FleetCluster::default()
        };
        let r = apply(&mut c, dir.path(), &Agent::default(), T0).expect("apply");
        assert_eq!((r.bound, r.unschedulable), (4, 0));
        let on = |c: &FleetCluster, n: &str| c.pods.iter().filter(|p| p["spec"]["nodeName"] == n).count();
        assert_eq!((on(&c, "a"), on(&c, "b")), (4, 0));
        // a: 4 → 2 CPUs; two pods evicted: one fits on b, one fits nowhere.
        let amounts = json!({"cpu": "2"});
        let r = set_node_allocatable(&mut c, "a", amounts.as_object().expect("map"), &Agent::default(), T0 + 1000)
            .expect("node a");
        assert_eq!((r.bound, r.unschedulable), (1, 1));
        assert_eq!((on(&c, "a"), on(&c, "b")), (2, 1));
        assert_eq!(c.nodes[0]["status"]["capacity"]["cpu"], "2");
        let s = decoded(&c);
        assert_eq!((s.pods, s.ready, s.unschedulable_since.clone()), (4, 3, vec![T0 + 1000]));
        assert!(
            set_node_allocatable(&mut c, "ghost", amounts.as_object().expect("map"), &Agent::default(), T0).is_none()
        );
    }
}
