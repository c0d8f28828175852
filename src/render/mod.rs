//! Rendering: the manifest one member cluster should run for one template.
//!
//! Owns: replica revision (a JSON pointer, or the workload's `replicaRevision` interpreter),
//! pruning of server-populated fields, provenance labels and
//! annotations, output file naming, and the YAML emitter ([`yaml`]). Pure: no I/O. Overrides
//! (OverridePolicy / ClusterOverridePolicy, [`overrides`]) apply between revision and pruning.
//! [`output`] holds the generated-file header; [`layout`] the output layout: each cluster
//! directory's index files (`kustomization.yaml`) and the order class of every published file
//! (object, index, summary); [`summary`] the text of the summary's shards
//! (`.fedsched/placements/`). The publisher imports them and only decides where the bytes go
//! and when, by class (render never imports the publisher).
//!
//! # Its stage of the pass
//!
//! **Render** (`render::render`): the template with replicas revised, server fields pruned,
//! provenance added, as YAML from our own emitter (`render::yaml`). The text of every file fedsched
//! writes lives here: manifests, the generated-by header (`render::output`), each cluster
//! directory's index files (`render::layout`: a second output format is a `Layout`), the summary's shards `.fedsched/placements/<xx>.json` (`render::summary`).
//! The decide stage renders the files of a pass's fresh decisions in one batch after the last
//! decision, on `util::threads::workers()` threads (`FEDSCHED_THREADS`; a render reads only the
//! cluster's facts, and each answer returns to its decision by position: same bytes on any count).
//!
//! # In detail
//!
//! The text of every file fedsched writes. `mod.rs`: the manifest for one (template, cluster):
//! replica revision, pruning, provenance, file naming (`object_path`); `overrides/` (OverridePolicy
//! / ClusterOverridePolicy): `order.rs` (which policies apply, in Karmada's order), `patch.rs` (RFC
//! 6902 and the plaintext overrider), `image.rs`, `command_args.rs`, `labels.rs`, `field.rs` (one
//! overrider family each), `error.rs`; `output.rs` (the generated-by header, `has_header`);
//! `layout.rs` (`FileClass`, `Layout`: the index files' paths and text, `kustomization.yaml`); `summary.rs` (the summary's 256 shards from a borrowed
//! `summary::Placement` view, a workload's shard a stable hash of its key (`shard_of`), its
//! per-workload fragments: one compact line each; `read_published` reads the shards, or an earlier
//! version's single file); `yaml.rs` (the emitter). Pure.

pub mod layout;
pub mod output;
pub mod overrides;
pub mod summary;
pub mod yaml;

use serde_json::{Map, Value};

use crate::model::{ClusterSnapshot, Workload};
use crate::policy::{ObjectKey, PolicyRef, Template};

pub use overrides::{ANNOTATION_APPLIED_OVERRIDES, ApplicableOverride, OverrideError};

pub use output::GENERATED_HEADER;

/// Annotation naming the policy that propagated an object.
pub const ANNOTATION_POLICY: &str = "fedsched.io/policy";
/// Annotation naming the template an object was rendered from.
pub const ANNOTATION_TEMPLATE: &str = "fedsched.io/template";
/// Annotation naming the source file of the template in the policy repository: the file
/// only (`apps/nginx.yaml`), not the document's position in it, which changes when another
/// document of the file is removed or reordered and would rewrite this object in every
/// cluster; [`ANNOTATION_TEMPLATE`] names the object.
pub const ANNOTATION_SOURCE: &str = "fedsched.io/source";

/// The value of [`ANNOTATION_SOURCE`] for an object from `source`.
fn provenance(source: &crate::policy::Source) -> Value {
    Value::String(source.file.to_string_lossy().into_owned())
}
/// Argo CD's per-object sync options; `Prune=false` keeps the object in the member when its
/// file is removed (`preserveResourcesOnDeletion`).
pub const ANNOTATION_ARGOCD_SYNC_OPTIONS: &str = "argocd.argoproj.io/sync-options";
/// Flux's per-object prune opt-out (`disabled`).
pub const ANNOTATION_FLUX_PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";
/// Karmada's label that keeps a Namespace from being propagated automatically.
pub const LABEL_SKIP_AUTO_PROPAGATION: &str = "namespace.karmada.io/skip-auto-propagation";
/// Label on every object fedsched renders.
pub const LABEL_MANAGED_BY: &str = "fedsched.io/managed-by";

/// Why an object could not be rendered for a cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("{object}: replica field {path} cannot be set: {reason}")]
    Replicas { object: String, path: String, reason: String },
    #[error("{object}: the object is not a mapping")]
    NotAnObject { object: String },
    /// An override could not be applied for this cluster.
    #[error("{object}: override failed: {source}")]
    Override {
        object: String,
        #[source]
        source: OverrideError,
    },
    /// Overrides changed what identifies the object (apiVersion, kind or name).
    #[error("{object}: overrides must not change {field}")]
    IdentityChanged { object: String, field: &'static str },
}

/// What to render for one cluster.
pub struct RenderInput<'a> {
    pub template: &'a Template,
    pub workload: &'a Workload,
    pub policy: &'a PolicyRef,
    pub replicas: Option<i32>,
    pub completions: Option<i32>,
    /// The member cluster rendered for (matched against each override rule's `targetCluster`).
    pub cluster: &'a ClusterSnapshot,
    /// Override policies selecting the template, in application order
    /// ([`overrides::applicable`]).
    pub overrides: &'a [ApplicableOverride<'a>],
    /// The policy's `preserveResourcesOnDeletion`: the object carries the GitOps tools' prune
    /// opt-outs ([`ANNOTATION_ARGOCD_SYNC_OPTIONS`] `Prune=false`, [`ANNOTATION_FLUX_PRUNE`]
    /// `disabled`), so that when its file is removed the member keeps it.
    pub preserve_on_deletion: bool,
    /// A member HPA owns the workload's replicas: the replica fields are left out (the
    /// workload's `replicaPath`, `spec.replicas` for the native kinds; what its
    /// `replicaRevision` writes; [`RenderInput::hpa_read_fields`]), so the GitOps tool neither
    /// sets nor resets them ([`crate::model::autoscaling::replica_fields`]).
    pub replicas_owned_by_hpa: bool,
    /// For a kind whose replicas a `replicaResource` script reads and no revision writes: the
    /// fields it reads them from ([`crate::model::autoscaling::read_fields`]), left out too
    /// when a member HPA owns the replicas.
    pub hpa_read_fields: &'a [String],
    /// An HPA's bounds on this member (`minReplicas`, `maxReplicas`): its share of the
    /// declared ones.
    pub hpa_bounds: Option<(i64, i64)>,
}

/// Path of an object's file inside its cluster directory:
/// `<namespace>/<group>_<kind>_<name>.yaml`, `_cluster/` for cluster-scoped objects, `core`
/// for the core group. Names are validated by the policy loader and again by the publisher.
pub fn object_path(key: &ObjectKey) -> String {
    let group = match key.group() {
        "" => "core",
        g => g,
    };
    let dir = key.namespace.as_deref().unwrap_or("_cluster");
    format!("{dir}/{group}_{}_{}.yaml", key.kind.to_ascii_lowercase(), key.name)
}

/// Renders the manifest for one cluster: the template with replicas revised, server-populated
/// fields pruned and provenance added, as YAML text with the generated-by header.
pub fn render(input: &RenderInput<'_>) -> Result<String, RenderError> {
    let obj = manifest(input)?;
    Ok(format!("{GENERATED_HEADER}\n{}", yaml::to_yaml(&obj)))
}

/// The manifest as JSON (before YAML encoding).
pub fn manifest(input: &RenderInput<'_>) -> Result<Value, RenderError> {
    let t = input.template;
    let object_name = t.key.display_ref();
    let mut obj = t.object.clone();
    if !obj.is_object() {
        return Err(RenderError::NotAnObject { object: object_name });
    }
    if input.replicas_owned_by_hpa && input.workload.replicas.is_some() {
        let fields =
            crate::model::autoscaling::replica_fields(input.workload, &obj, input.hpa_read_fields).map_err(|e| {
                RenderError::Replicas {
                    object: object_name.clone(),
                    path: "replicaRevision".into(),
                    reason: e.to_string(),
                }
            })?;
        for path in &fields {
            remove_pointer(&mut obj, path);
        }
    } else if let (Some(revision), Some(r)) = (&input.workload.revision, input.replicas) {
        // A customization's replicaRevision (or a built-in CRD interpreter) writes the replicas.
        obj = revision.apply(&obj, r).map_err(|e| RenderError::Replicas {
            object: object_name.clone(),
            path: "replicaRevision".into(),
            reason: e.to_string(),
        })?;
    } else if let (Some(path), Some(r)) = (&input.workload.replica_path, input.replicas) {
        set_pointer(&mut obj, path, Value::from(r)).map_err(|reason| RenderError::Replicas {
            object: object_name.clone(),
            path: path.clone(),
            reason,
        })?;
    }
    if let Some((min, max)) = input.hpa_bounds {
        for (path, v) in [("/spec/minReplicas", min), ("/spec/maxReplicas", max)] {
            set_pointer(&mut obj, path, Value::from(v)).map_err(|reason| RenderError::Replicas {
                object: object_name.clone(),
                path: path.into(),
                reason,
            })?;
        }
    }
    if let Some(c) = input.completions {
        set_pointer(&mut obj, "/spec/completions", Value::from(c)).map_err(|reason| RenderError::Replicas {
            object: object_name.clone(),
            path: "/spec/completions".into(),
            reason,
        })?;
    }
    let applied = overrides::apply(&mut obj, &t.key.kind, input.overrides, &input.cluster.facts())
        .map_err(|source| RenderError::Override { object: object_name.clone(), source })?;
    for (field, pointer, want) in [
        ("apiVersion", "/apiVersion", t.key.api_version.as_str()),
        ("kind", "/kind", t.key.kind.as_str()),
        ("metadata.name", "/metadata/name", t.key.name.as_str()),
    ] {
        if obj.pointer(pointer).and_then(Value::as_str) != Some(want) {
            return Err(RenderError::IdentityChanged { object: object_name, field });
        }
    }
    prune(&mut obj, &t.key);
    add_provenance(&mut obj, input);
    if let Some(list) = overrides::applied_annotation(&applied)
        && let Some(ann) = obj.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut)
    {
        ann.insert(ANNOTATION_APPLIED_OVERRIDES.into(), Value::String(list));
    }
    Ok(obj)
}

/// The Namespace file a cluster directory gets for a namespace its objects are in (Karmada's
/// namespace propagation): its path and content, from the repository's Namespace object when
/// there is one (labels and annotations, pruned as any template) or minimal. It always carries
/// the GitOps tools' prune opt-outs: removing the file (its last object left the cluster) must
/// never delete a namespace, and what else lives in it, from a member. `None` for namespaces
/// Karmada never propagates (`default`, `kube-*`, `karmada-system`, `karmada-cluster`,
/// `karmada-es-*`) and for a Namespace object labelled
/// `namespace.karmada.io/skip-auto-propagation: "true"`.
pub fn namespace(name: &str, object: Option<&Template>) -> Option<(String, String)> {
    let reserved = name == "default"
        || name.starts_with("kube-")
        || name == "karmada-system"
        || name == "karmada-cluster"
        || name.starts_with("karmada-es-");
    let skip = object
        .and_then(|t| t.meta.labels.get(LABEL_SKIP_AUTO_PROPAGATION))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if reserved || skip {
        return None;
    }
    let key = ObjectKey { api_version: "v1".into(), kind: "Namespace".into(), namespace: None, name: name.into() };
    let mut meta = Map::new();
    meta.insert("name".into(), Value::String(name.into()));
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), Value::String("v1".into()));
    obj.insert("kind".into(), Value::String("Namespace".into()));
    if let Some(t) = object {
        for field in ["labels", "annotations"] {
            if let Some(v) = t.object.pointer(&format!("/metadata/{field}")) {
                meta.insert(field.into(), v.clone());
            }
        }
    }
    obj.insert("metadata".into(), Value::Object(meta));
    let mut obj = Value::Object(obj);
    prune(&mut obj, &key);
    let m = obj.pointer_mut("/metadata").and_then(Value::as_object_mut)?;
    let labels = m.entry("labels").or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(LABEL_MANAGED_BY.into(), Value::String("fedsched".into()));
    }
    let ann = m.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    if let Some(ann) = ann.as_object_mut() {
        if let Some(t) = object {
            ann.insert(ANNOTATION_SOURCE.into(), provenance(&t.source));
        }
        prune_opt_outs(ann);
    }
    Some((object_path(&key), format!("{GENERATED_HEADER}\n{}", yaml::to_yaml(&obj))))
}

/// Sets a JSON pointer, creating intermediate objects.
fn set_pointer(obj: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    let mut cur = obj;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let map = cur.as_object_mut().ok_or_else(|| format!("{} is not an object", parts[..i].join(".")))?;
        if i + 1 == parts.len() {
            map.insert((*part).to_string(), value);
            return Ok(());
        }
        cur = map.entry((*part).to_string()).or_insert_with(|| Value::Object(Map::new()));
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
    }
    Ok(())
}

/// Removes the field at `pointer` (`/a/b`), if there is one.
fn remove_pointer(obj: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else { return };
    let parent = if parent.is_empty() { Some(obj) } else { obj.pointer_mut(parent) };
    if let Some(map) = parent.and_then(Value::as_object_mut) {
        map.remove(&last.replace("~1", "/").replace("~0", "~"));
    }
}

const PRUNED_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generateName",
];

const PRUNED_ANNOTATIONS: &[&str] =
    &["deployment.kubernetes.io/revision", "kubectl.kubernetes.io/last-applied-configuration"];

/// Removes what the API server populates (Karmada's prune list), so the member's own values
/// are not fought over.
fn prune(obj: &mut Value, key: &ObjectKey) {
    let Some(root) = obj.as_object_mut() else { return };
    root.remove("status");
    if let Some(meta) = root.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in PRUNED_METADATA {
            meta.remove(*f);
        }
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            for a in PRUNED_ANNOTATIONS {
                ann.remove(*a);
            }
            ann.retain(|k, _| {
                !k.starts_with("propagationpolicy.karmada.io/")
                    && !k.starts_with("clusterpropagationpolicy.karmada.io/")
            });
        }
        match &key.namespace {
            Some(ns) => {
                meta.insert("namespace".into(), Value::String(ns.to_string()));
            }
            None => {
                meta.remove("namespace");
            }
        }
    }
    match (key.group(), key.kind.as_str()) {
        ("", "Service") => {
            if let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) {
                // Headless services keep clusterIP: None; allocated addresses are the member's.
                if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
                    spec.remove("clusterIP");
                    spec.remove("clusterIPs");
                }
            }
        }
        ("batch", "Job") => {
            // The Job controller's generated selector and labels belong to the member.
            let Some(spec) = root.get_mut("spec") else { return };
            let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
            if !manual {
                if let Some(spec) = spec.as_object_mut() {
                    spec.remove("selector");
                }
                if let Some(labels) = spec.pointer_mut("/template/metadata/labels").and_then(Value::as_object_mut) {
                    for l in [
                        "controller-uid",
                        "batch.kubernetes.io/controller-uid",
                        "job-name",
                        "batch.kubernetes.io/job-name",
                    ] {
                        labels.remove(l);
                    }
                }
            }
        }
        _ => {}
    }
}

fn add_provenance(obj: &mut Value, input: &RenderInput<'_>) {
    let Some(root) = obj.as_object_mut() else { return };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else { return };
    let labels = meta.entry("labels").or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(LABEL_MANAGED_BY.into(), Value::String("fedsched".into()));
    }
    let ann = meta.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    if let Some(ann) = ann.as_object_mut() {
        ann.insert(ANNOTATION_POLICY.into(), Value::String(input.policy.to_string()));
        let k = &input.template.key;
        ann.insert(
            ANNOTATION_TEMPLATE.into(),
            Value::String(format!(
                "{}/{}/{}",
                k.api_version,
                k.kind,
                match &k.namespace {
                    Some(ns) => format!("{ns}/{}", k.name),
                    None => k.name.to_string(),
                }
            )),
        );
        ann.insert(ANNOTATION_SOURCE.into(), provenance(&input.template.source));
        if input.preserve_on_deletion {
            prune_opt_outs(ann);
        }
    }
}

/// The GitOps tools' prune opt-outs: Argo CD's `Prune=false` merged into the object's own
/// sync options (replacing a `Prune=` one), Flux's `prune: disabled`.
fn prune_opt_outs(ann: &mut Map<String, Value>) {
    let options = ann.get(ANNOTATION_ARGOCD_SYNC_OPTIONS).and_then(Value::as_str).unwrap_or("");
    let mut options: Vec<&str> =
        options.split(',').map(str::trim).filter(|o| !o.is_empty() && !o.starts_with("Prune=")).collect();
    options.push("Prune=false");
    let options = options.join(",");
    ann.insert(ANNOTATION_ARGOCD_SYNC_OPTIONS.into(), Value::String(options));
    ann.insert(ANNOTATION_FLUX_PRUNE.into(), Value::String("disabled".into()));
}
