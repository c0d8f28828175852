//! Classification: each document (`kind: List` expanded) sorted by `apiVersion` / `kind` into
//! the [`PolicySet`], decoded into [`crate::policy::types`] with field-path errors, its name,
//! namespace and uniqueness checked.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::LoadError;
use super::names::{check_api_version, check_dns1123_label, check_dns1123_subdomain, check_kind, check_template_name};
use super::scope::{crd_scope, group_of, is_namespaced, version_of};
use crate::policy::types::{ClusterSpec, ClusterStatus, ObjectMeta, WorkloadInterpreterSpec};
use crate::policy::{
    APPS_GROUP, CLUSTER_GROUP, CONFIG_GROUP, ClusterObject, FEDSCHED_GROUP, ObjectKey, POLICY_GROUP, Policy, PolicySet,
    RawObject, Source, Template,
};

/// A document (or an item of a `kind: List`) waiting to be classified.
pub(super) struct Item {
    pub(super) source: Source,
    /// Field-path prefix (`items[2]`) of list items; "" for whole documents.
    pub(super) prefix: String,
    pub(super) value: Value,
}

fn join_path(prefix: &str, field: &str) -> String {
    match (prefix.is_empty(), field.is_empty()) {
        (true, _) => field.to_string(),
        (_, true) => prefix.to_string(),
        _ if field.starts_with('[') => format!("{prefix}{field}"),
        _ => format!("{prefix}.{field}"),
    }
}

pub(super) fn expand_lists(
    source: Source,
    prefix: String,
    value: Value,
    out: &mut Vec<Item>,
    errors: &mut Vec<LoadError>,
) {
    let is_list = value.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && value.get("kind").and_then(Value::as_str) == Some("List");
    let Value::Object(mut map) = value else {
        out.push(Item { source, prefix, value });
        return;
    };
    if !is_list {
        out.push(Item { source, prefix, value: Value::Object(map) });
        return;
    }
    match map.remove("items") {
        Some(Value::Array(items)) => {
            for (i, item) in items.into_iter().enumerate() {
                let p = join_path(&prefix, &format!("items[{i}]"));
                expand_lists(source.clone(), p, item, out, errors);
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => {
            errors.push(LoadError::at(&source, join_path(&prefix, "items"), "items of a List must be a sequence"))
        }
    }
}

#[derive(Default)]
pub(super) struct Loader {
    pub(super) set: PolicySet,
    pub(super) errors: Vec<LoadError>,
    /// (group, kind, namespace, name) → where first seen.
    pub(super) seen:
        HashMap<(String, crate::policy::KeyPart, Option<crate::policy::KeyPart>, crate::policy::KeyPart), Source>,
}

/// How a classified document is stored.
enum Class {
    Template,
    PropagationPolicy,
    ClusterPropagationPolicy,
    OverridePolicy,
    ClusterOverridePolicy,
    ClusterTaintPolicy,
    WorkloadRebalancer,
    Cluster,
    Interpreter,
    WorkloadInterpreter,
    RolloutPolicy,
}

/// What every classified document has: its type and its metadata.
struct Head {
    api_version: String,
    kind: String,
    /// API group of `api_version`.
    group: String,
    meta: ObjectMeta,
}

impl Loader {
    fn err(&mut self, item: &Item, field: &str, message: impl Into<String>) {
        self.errors.push(LoadError::at(&item.source, join_path(&item.prefix, field), message));
    }

    /// Classifies one document (or list item) and stores it in the set, or records why not.
    pub(super) fn classify(&mut self, item: Item) {
        let Some((class, head)) = self.head(&item) else {
            return;
        };
        match class {
            Class::Template => self.template(item, head),
            Class::Interpreter => self.interpreter(item, head),
            Class::WorkloadInterpreter => self.workload_interpreter(item, head),
            Class::Cluster => self.cluster(item, head),
            Class::PropagationPolicy | Class::OverridePolicy | Class::RolloutPolicy => {
                self.namespaced_policy(item, class, head)
            }
            Class::ClusterPropagationPolicy
            | Class::ClusterOverridePolicy
            | Class::ClusterTaintPolicy
            | Class::WorkloadRebalancer => self.cluster_policy(item, class, head),
        }
    }

    /// The class and the head (type and metadata) of a document; None after recording an
    /// error.
    fn head(&mut self, item: &Item) -> Option<(Class, Head)> {
        let Some(obj) = item.value.as_object() else {
            let what = match &item.value {
                Value::Array(_) => "a sequence",
                _ => "a scalar",
            };
            self.err(item, "", format!("document must be a mapping (a Kubernetes object), found {what}"));
            return None;
        };
        let (Some(api_version), Some(kind)) =
            (self.required_str(item, obj, "apiVersion"), self.required_str(item, obj, "kind"))
        else {
            return None;
        };
        let group = group_of(&api_version).to_string();
        let class = self.class_of(item, &api_version, &kind, &group)?;
        let meta = self.metadata(item, obj)?;
        Some((class, Head { api_version, kind, group, meta }))
    }

    /// Which class a document of `api_version` / `kind` belongs to: Karmada's and fedsched's
    /// own groups by kind (unknown versions and kinds are errors), everything else a template.
    fn class_of(&mut self, item: &Item, api_version: &str, kind: &str, group: &str) -> Option<Class> {
        let version = version_of(api_version);
        let class = match group {
            POLICY_GROUP => {
                if version != "v1alpha1" {
                    self.err(
                        item,
                        "apiVersion",
                        format!("unknown version {version} of {POLICY_GROUP} (expected v1alpha1)"),
                    );
                    return None;
                }
                match kind {
                    "PropagationPolicy" => Class::PropagationPolicy,
                    "ClusterPropagationPolicy" => Class::ClusterPropagationPolicy,
                    "OverridePolicy" => Class::OverridePolicy,
                    "ClusterOverridePolicy" => Class::ClusterOverridePolicy,
                    "ClusterTaintPolicy" => Class::ClusterTaintPolicy,
                    "FederatedResourceQuota" => {
                        self.err(item, "kind", format!(
                            "kind FederatedResourceQuota of {POLICY_GROUP}/v1alpha1 is a Karmada control-plane object that fedsched does not support"
                        ));
                        return None;
                    }
                    other => {
                        self.err(item, "kind", format!("unknown kind {other} in {POLICY_GROUP}/v1alpha1"));
                        return None;
                    }
                }
            }
            CLUSTER_GROUP => {
                if version != "v1alpha1" {
                    self.err(
                        item,
                        "apiVersion",
                        format!("unknown version {version} of {CLUSTER_GROUP} (expected v1alpha1)"),
                    );
                    return None;
                }
                if kind != "Cluster" {
                    self.err(item, "kind", format!("unknown kind {kind} in {CLUSTER_GROUP}/v1alpha1"));
                    return None;
                }
                Class::Cluster
            }
            CONFIG_GROUP => {
                if version != "v1alpha1" {
                    self.err(
                        item,
                        "apiVersion",
                        format!("unknown version {version} of {CONFIG_GROUP} (expected v1alpha1)"),
                    );
                    return None;
                }
                match kind {
                    "ResourceInterpreterCustomization" | "ResourceInterpreterWebhookConfiguration" => {
                        Class::Interpreter
                    }
                    other => {
                        self.err(item, "kind", format!("unknown kind {other} in {CONFIG_GROUP}/v1alpha1"));
                        return None;
                    }
                }
            }
            APPS_GROUP if kind == "WorkloadRebalancer" => {
                if version != "v1alpha1" {
                    self.err(
                        item,
                        "apiVersion",
                        format!("unknown version {version} of {APPS_GROUP} (expected v1alpha1)"),
                    );
                    return None;
                }
                Class::WorkloadRebalancer
            }
            FEDSCHED_GROUP => match (version, kind) {
                ("v1alpha1", "WorkloadInterpreter") => Class::WorkloadInterpreter,
                ("v1alpha1", "RolloutPolicy") => Class::RolloutPolicy,
                _ => {
                    self.err(
                        item,
                        "kind",
                        format!(
                            "unknown kind {api_version} {kind} (expected {FEDSCHED_GROUP}/v1alpha1 WorkloadInterpreter \
                             or RolloutPolicy)"
                        ),
                    );
                    return None;
                }
            },
            _ => Class::Template,
        };
        Some(class)
    }

    /// The document's `metadata`, with a non-empty `name`; None after recording an error.
    fn metadata(&mut self, item: &Item, obj: &Map<String, Value>) -> Option<ObjectMeta> {
        let meta_value = match obj.get("metadata") {
            None | Some(Value::Null) => {
                self.err(item, "metadata.name", "required field is missing");
                return None;
            }
            Some(v @ Value::Object(_)) => strip_nulls(v.clone()),
            Some(_) => {
                self.err(item, "metadata", "must be a mapping");
                return None;
            }
        };
        match meta_value.get("name") {
            None => {
                self.err(item, "metadata.name", "required field is missing");
                return None;
            }
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(_) => {
                self.err(item, "metadata.name", "must be a non-empty string");
                return None;
            }
        }
        match decode::<ObjectMeta>(&meta_value) {
            Ok(mut m) => {
                m.unknown_fields = unknown_metadata_fields(&meta_value);
                Some(m)
            }
            Err(errors) => {
                self.errs(item, "metadata", errors);
                None
            }
        }
    }

    /// A resource template: namespaced by its kind's scope (`default` when absent).
    fn template(&mut self, item: Item, head: Head) {
        let Head { api_version, kind, group, mut meta } = head;
        // Both become part of the output file's path: refuse what could leave its directory.
        if let Err(msg) = check_api_version(&api_version) {
            return self.err(&item, "apiVersion", msg);
        }
        if let Err(msg) = check_kind(&kind) {
            return self.err(&item, "kind", msg);
        }
        if let Some(Err((field, msg))) = crd_scope(&item.value) {
            return self.err(&item, &field, msg);
        }
        if let Err(msg) = check_template_name(&meta.name) {
            return self.err(&item, "metadata.name", msg);
        }
        let namespace = if is_namespaced(&self.set.crd_scopes, &group, &kind) {
            let ns = meta.namespace.clone().unwrap_or_else(|| "default".to_string());
            if !self.check_namespace(&item, &ns) {
                return;
            }
            Some(ns)
        } else {
            None
        };
        meta.namespace = namespace.clone();
        let key = ObjectKey {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.map(Into::into),
            name: meta.name.as_str().into(),
        };
        if self.duplicate(&item, &group, &key) {
            return;
        }
        let unknown_fields = super::schema::unknown_fields(&key.api_version, &key.kind, &item.value);
        self.set.templates.push(std::sync::Arc::new(Template {
            key,
            meta,
            object: item.value,
            source: item.source,
            unknown_fields,
        }));
    }

    /// A resource interpreter object of `config.karmada.io`, kept raw.
    fn interpreter(&mut self, item: Item, head: Head) {
        let Head { api_version, kind, group, meta } = head;
        if !self.check_subdomain(&item, &meta.name) {
            return;
        }
        let key =
            ObjectKey { api_version: api_version.into(), kind: kind.into(), namespace: None, name: meta.name.into() };
        if self.duplicate(&item, &group, &key) {
            return;
        }
        self.set.interpreter_objects.push(RawObject { key, object: item.value, source: item.source });
    }

    /// fedsched's `WorkloadInterpreter`: JSON pointers checked, at most one per target kind.
    fn workload_interpreter(&mut self, item: Item, head: Head) {
        let Head { api_version, kind, group, mut meta } = head;
        if !self.check_subdomain(&item, &meta.name) {
            return;
        }
        meta.namespace = None;
        let spec: WorkloadInterpreterSpec = match decode(&spec_or_empty(&item.value)) {
            Ok(s) => s,
            Err(errors) => return self.errs(&item, "spec", errors),
        };
        for (field, path) in [
            ("spec.replicasPath", &spec.replicas_path),
            ("spec.podTemplatePath", &spec.pod_template_path),
            ("spec.requestsPath", &spec.requests_path),
        ] {
            if let Some(p) = path
                && !p.starts_with('/')
            {
                self.err(&item, field, format!("{p:?} is not a JSON pointer (write /spec/replicas)"));
                return;
            }
        }
        let key = key_of(&api_version, &kind, None, &meta.name);
        if self.duplicate(&item, &group, &key) {
            return;
        }
        let target = (spec.target.api_version.clone(), spec.target.kind.clone());
        if let Some(other) = self
            .set
            .workload_interpreters
            .iter()
            .find(|w| (w.spec.target.api_version.clone(), w.spec.target.kind.clone()) == target)
        {
            let msg = format!("{} {} already has a WorkloadInterpreter ({})", target.0, target.1, other.source);
            self.err(&item, "spec.target", msg);
            return;
        }
        self.set.workload_interpreters.push(Policy { meta, spec, source: item.source });
    }

    /// A member `Cluster` object: strict spec, status kept when present.
    fn cluster(&mut self, item: Item, head: Head) {
        let Head { api_version, kind, group, mut meta } = head;
        if !self.check_cluster_name(&item, &meta.name) {
            return;
        }
        meta.namespace = None;
        let spec_value = spec_or_empty(&item.value);
        let spec = decode::<ClusterSpec>(&spec_value);
        let status: Result<Option<ClusterStatus>, _> = match item.value.get("status") {
            None | Some(Value::Null) => Ok(None),
            Some(v) => decode(&strip_nulls(v.clone())).map(Some),
        };
        // Both parts' errors, not only the spec's.
        let (spec, status) = match (spec, status) {
            (Ok(spec), Ok(status)) => (spec, status),
            (spec, status) => {
                if let Err(errors) = spec {
                    self.errs(&item, "spec", errors);
                }
                if let Err(errors) = status {
                    self.errs(&item, "status", errors);
                }
                return;
            }
        };
        let key = key_of(&api_version, &kind, None, &meta.name);
        if self.duplicate(&item, &group, &key) {
            return;
        }
        std::sync::Arc::make_mut(&mut self.set.clusters).push(ClusterObject {
            meta,
            spec,
            status,
            source: item.source,
        });
    }

    /// A PropagationPolicy, OverridePolicy or RolloutPolicy: namespaced (`default` when absent).
    fn namespaced_policy(&mut self, item: Item, class: Class, head: Head) {
        let Head { api_version, kind, group, mut meta } = head;
        let ns = meta.namespace.clone().unwrap_or_else(|| "default".to_string());
        if !self.check_subdomain(&item, &meta.name) || !self.check_namespace(&item, &ns) {
            return;
        }
        meta.namespace = Some(ns);
        let spec_value = spec_or_empty(&item.value);
        let key = key_of(&api_version, &kind, meta.namespace.clone(), &meta.name);
        if matches!(class, Class::PropagationPolicy) {
            if let Some(p) = self.policy(item, &group, &key, meta, &spec_value) {
                self.set.propagation_policies.push(std::sync::Arc::new(p));
            }
        } else if matches!(class, Class::RolloutPolicy) {
            if let Some(p) = self.policy(item, &group, &key, meta, &spec_value) {
                self.set.rollout_policies.push(p);
            }
        } else if let Some(p) = self.policy(item, &group, &key, meta, &spec_value) {
            self.set.override_policies.push(std::sync::Arc::new(p));
        }
    }

    /// A ClusterPropagationPolicy, ClusterOverridePolicy or ClusterTaintPolicy: cluster-scoped,
    /// a namespace is ignored, as the API server does.
    fn cluster_policy(&mut self, item: Item, class: Class, head: Head) {
        let Head { api_version, kind, group, mut meta } = head;
        if !self.check_subdomain(&item, &meta.name) {
            return;
        }
        meta.namespace = None;
        let spec_value = spec_or_empty(&item.value);
        let key = key_of(&api_version, &kind, None, &meta.name);
        match class {
            Class::ClusterPropagationPolicy => {
                if let Some(p) = self.policy(item, &group, &key, meta, &spec_value) {
                    self.set.cluster_propagation_policies.push(std::sync::Arc::new(p));
                }
            }
            Class::ClusterOverridePolicy => {
                if let Some(p) = self.policy(item, &group, &key, meta, &spec_value) {
                    self.set.cluster_override_policies.push(std::sync::Arc::new(p));
                }
            }
            Class::WorkloadRebalancer => {
                if let Some(p) = self.policy(item, &group, &key, meta, &spec_value) {
                    self.set.workload_rebalancers.push(p);
                }
            }
            _ => {
                if let Some(p) = self.policy(item, &group, &key, meta, &spec_value) {
                    self.set.cluster_taint_policies.push(p);
                }
            }
        }
    }

    /// A policy with its spec decoded, unless the spec has an error or the object is a
    /// duplicate (both recorded).
    fn policy<T: DeserializeOwned>(
        &mut self,
        item: Item,
        group: &str,
        key: &ObjectKey,
        meta: ObjectMeta,
        spec: &Value,
    ) -> Option<Policy<T>> {
        let spec = self.decode_spec(&item, spec)?;
        if self.duplicate(&item, group, key) {
            return None;
        }
        Some(Policy { meta, spec, source: item.source })
    }

    fn decode_spec<T: DeserializeOwned>(&mut self, item: &Item, spec: &Value) -> Option<T> {
        match decode(spec) {
            Ok(s) => Some(s),
            Err(errors) => {
                self.errs(item, "spec", errors);
                None
            }
        }
    }

    /// Every error of a typed decode of the document's `part` (`spec`, `status`, `metadata`).
    fn errs(&mut self, item: &Item, part: &str, errors: Vec<super::decode::FieldError>) {
        for (field, message) in errors {
            self.err(item, &join_path(part, &field), message);
        }
    }

    fn required_str(&mut self, item: &Item, obj: &Map<String, Value>, field: &str) -> Option<String> {
        match obj.get(field) {
            None | Some(Value::Null) => {
                self.err(item, field, "required field is missing");
                None
            }
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(_) => {
                self.err(item, field, "must be a non-empty string");
                None
            }
        }
    }

    /// Records the object; if one with the same group/kind/namespace/name was seen before,
    /// reports an error naming both sources and returns true.
    fn duplicate(&mut self, item: &Item, group: &str, key: &ObjectKey) -> bool {
        let id = (group.to_string(), key.kind.clone(), key.namespace.clone(), key.name.clone());
        if let Some(first) = self.seen.get(&id) {
            let msg = format!("duplicate {} {}: already defined in {first}", key.kind, describe(key));
            self.err(item, "metadata.name", msg);
            return true;
        }
        self.seen.insert(id, item.source.clone());
        false
    }

    fn check_subdomain(&mut self, item: &Item, name: &str) -> bool {
        match check_dns1123_subdomain(name) {
            Ok(()) => true,
            Err(msg) => {
                self.err(item, "metadata.name", msg);
                false
            }
        }
    }

    fn check_cluster_name(&mut self, item: &Item, name: &str) -> bool {
        match check_dns1123_label(name, 48) {
            Ok(()) => true,
            Err(msg) => {
                self.err(item, "metadata.name", format!("{msg} (cluster names are limited to 48 characters)"));
                false
            }
        }
    }

    fn check_namespace(&mut self, item: &Item, ns: &str) -> bool {
        match check_dns1123_label(ns, 63) {
            Ok(()) => true,
            Err(msg) => {
                self.err(item, "metadata.namespace", msg);
                false
            }
        }
    }
}

fn describe(key: &ObjectKey) -> String {
    match &key.namespace {
        Some(ns) => format!("{ns}/{}", key.name),
        None => key.name.to_string(),
    }
}

fn key_of(api_version: &str, kind: &str, namespace: Option<String>, name: &str) -> ObjectKey {
    ObjectKey::new(api_version, kind, namespace.as_deref(), name)
}

/// The object's `spec` without nulls; an empty mapping when absent or null.
fn spec_or_empty(obj: &Value) -> Value {
    match obj.get("spec") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v) => strip_nulls(v.clone()),
    }
}

/// Removes map entries whose value is `null`, recursively: Kubernetes treats `field: null`
/// like an absent field, serde would not.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// Typed decode; on error every structural error found (field path relative to `value`,
/// message): [`super::decode::typed`].
fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, Vec<super::decode::FieldError>> {
    super::decode::typed(value)
}

/// The fields of Kubernetes' `ObjectMeta` (`metav1.ObjectMeta`): the keys a `metadata` may
/// have. fedsched reads a few of them ([`ObjectMeta`]) and accepts the others.
pub(crate) const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The keys of a `metadata` mapping that are no field of Kubernetes' `ObjectMeta` (`nmae:`):
/// accepted, as Karmada's API server without strict validation does, and warned about by
/// [`crate::policy::validate::warnings`].
pub(crate) fn unknown_metadata_fields(meta: &Value) -> Vec<String> {
    meta.as_object()
        .map(|m| m.keys().filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str())).cloned().collect())
        .unwrap_or_default()
}

pub(super) fn sort_set(set: &mut PolicySet) {
    set.templates.sort_by(|a, b| a.key.cmp(&b.key));
    let by_ns_name = |m: &ObjectMeta| (m.namespace.clone(), m.name.clone());
    set.propagation_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.cluster_propagation_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.override_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.cluster_override_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.cluster_taint_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.workload_rebalancers.sort_by_key(|p| by_ns_name(&p.meta));
    std::sync::Arc::make_mut(&mut set.clusters).sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
    set.interpreter_objects.sort_by(|a, b| a.key.cmp(&b.key));
    set.workload_interpreters.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
    set.rollout_policies.sort_by_key(|p| by_ns_name(&p.meta));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::load::load_sources;
    use std::path::PathBuf;

    fn load(files: &[(&str, &str)]) -> (PolicySet, Vec<LoadError>) {
        load_sources(files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())))
    }

    /// The set's Namespace objects are the `v1` `Namespace` templates, whatever the files'
    /// order: not a kind of that name in another group, nor the objects in those namespaces.
    #[test]
    fn the_namespace_objects_are_the_core_namespace_templates() {
        let text = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: z, namespace: team}
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: example.io/v1
kind: Namespace
metadata: {name: lookalike}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: apps}
"#;
        let (set, errors) = load(&[("a.yaml", text)]);
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<&str> = set.namespace_objects().iter().map(|t| t.key.name.as_str()).collect();
        assert_eq!(names, ["apps", "team"]);
        let (empty, _) = load(&[("b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\n")]);
        assert!(empty.namespace_objects().is_empty());
    }

    #[test]
    fn templates_get_namespaces_by_scope() {
        let text = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: v1
kind: Namespace
metadata: {name: team, namespace: ignored}
---
apiVersion: example.io/v1
kind: Widget
metadata: {name: w, namespace: team}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
spec: {group: example.io, names: {kind: Widget}, scope: Cluster}
"#;
        let (set, errors) = load(&[("a.yaml", text)]);
        assert!(errors.is_empty(), "{errors:?}");
        let ns: Vec<_> = set.templates.iter().map(|t| (t.key.kind.as_str(), t.key.namespace.as_deref())).collect();
        assert!(ns.contains(&("Deployment", Some("default"))));
        assert!(ns.contains(&("Namespace", None)));
        assert!(ns.contains(&("Widget", None)));
        assert!(ns.contains(&("CustomResourceDefinition", None)));
        assert_eq!(set.crd_scopes.get(&("example.io".into(), "Widget".into())), Some(&false));
    }

    #[test]
    fn classification_and_errors() {
        let text = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: pp}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement: {replicaScheduling: {replicaSchedulingType: Dividedd}}
---
apiVersion: policy.karmada.io/v1beta1
kind: PropagationPolicy
metadata: {name: pp2}
---
apiVersion: policy.karmada.io/v1alpha1
kind: Frobnicator
metadata: {name: f}
---
kind: ConfigMap
metadata: {name: c}
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: x}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: in-list}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: Bad_Name}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:foo"}
"#;
        let (set, errors) = load(&[("a.yaml", text)]);
        let shown: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 7, "{shown:#?}");
        assert_eq!(errors[0].field, "spec.placement.replicaScheduling.replicaSchedulingType");
        assert!(errors[0].message.contains("unknown variant `Dividedd`"));
        assert!(errors[1].message.contains("unknown version v1beta1"));
        assert!(errors[2].message.contains("unknown kind Frobnicator in policy.karmada.io/v1alpha1"));
        assert_eq!(errors[3].field, "apiVersion");
        assert_eq!(errors[4].field, "metadata.name");
        assert_eq!(errors[5].field, "items[1].metadata.name");
        assert_eq!(errors[5].document, Some(6));
        assert!(errors[6].message.contains("':'"));
        assert_eq!(set.templates.len(), 1);
        assert_eq!(set.templates[0].key.name, "in-list");
    }

    #[test]
    fn duplicates_name_both_sources() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
        let (set, errors) = load(&[("a.yaml", cm), ("b.yaml", cm)]);
        assert_eq!(set.templates.len(), 1);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, PathBuf::from("b.yaml"));
        assert!(errors[0].message.contains("a.yaml: document 1"), "{}", errors[0]);
    }

    #[test]
    fn cluster_scoped_policies_lose_namespace_and_pp_gets_default() {
        let text = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: cpp, namespace: x}
spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: op}
spec: {}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1, namespace: karmada-cluster}
spec: {syncMode: Pull}
status: {kubernetesVersion: v1.30.0, somethingNew: 1}
"#;
        let (set, errors) = load(&[("a.yaml", text)]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(set.cluster_propagation_policies[0].meta.namespace, None);
        assert_eq!(set.override_policies[0].meta.namespace.as_deref(), Some("default"));
        assert_eq!(set.clusters[0].meta.namespace, None);
        assert_eq!(set.clusters[0].status.as_ref().and_then(|s| s.kubernetes_version.as_deref()), Some("v1.30.0"));
    }

    #[test]
    fn cluster_spec_is_strict_and_name_limited() {
        let long = "c".repeat(49);
        let text = format!(
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: a}}\nspec: {{syncMode: Push, zonez: [a]}}\n---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: {long}}}\nspec: {{syncMode: Push}}\n"
        );
        let (set, errors) = load(&[("c.yaml", &text)]);
        assert!(set.clusters.is_empty());
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].message.contains("unknown field `zonez`"), "{}", errors[0]);
        assert!(errors[1].message.contains("48"));
    }
}
