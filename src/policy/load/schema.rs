//! The fields Kubernetes' schema knows, for the built-in kinds: a template's field that is no
//! field of its kind (`spec.replica`, `containers[0].imagePulPolicy`) is found here and warned
//! about by [`crate::policy::validate::warnings`] (issue 47 item 9).
//!
//! The schema is k8s-openapi's (the crate's Kubernetes version feature, 1.33): its generated
//! `Deserialize` impls name every field of each struct (`deserialize_struct`'s field list), so
//! a probing deserializer over the template's JSON ([`Probe`]) walks the object as the typed
//! decode would and notes, at each struct, the keys that are none of its fields. Free-form parts
//! (`serde_json::Value` fields, `IntOrString`) are not walked. A value of the wrong type stops
//! the typed walk where it is: that field is skipped and the walk repeated (at most
//! [`MAX_WALKS`] times), so a wrong type early does not hide an unknown field later. `metadata`
//! is not walked here: its unknown keys have their own warning (`unknown_metadata_fields`).
//! Custom resources and kinds not listed in [`unknown_fields`] are not checked.
//!
//! Cost: every load types each changed file's templates, and a restart every file's, so the
//! walk runs once per template then (10,000 at the benchmarks' size, S7). A walk costs about a
//! typed decode of the object: a field's path is rendered only for an unknown field and, once
//! a wrong-typed value made the walk skip a field, for the skip check of each optional field —
//! not for every optional field of every walk, as it first was (`benches/hot.rs` has the walk
//! of one generated Deployment, with and without a wrong-typed field).

use std::cell::RefCell;
use std::collections::BTreeSet;

use k8s_openapi::Resource;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The Kubernetes version whose schema this is (k8s-openapi's version feature in Cargo.toml).
pub const SCHEMA_VERSION: &str = "1.33";

/// Walks of one object at most (each after a value of the wrong type).
const MAX_WALKS: usize = 8;
/// Unknown fields reported per object at most (a generated or fuzzed document can have
/// thousands; the first ones make the point).
const MAX_REPORTED: usize = 20;

/// One unknown field: its path from the object's root (`spec.template.spec.containers[0].imagePulPolicy`)
/// and the nearest field its struct has, if one is close.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnknownField {
    pub path: String,
    pub nearest: Option<&'static str>,
}

macro_rules! kinds {
    ($($t:ty),* $(,)?) => {
        /// The unknown fields of `object`, a template of `api_version`/`kind`; empty for a kind
        /// this module has no schema for.
        pub fn unknown_fields(api_version: &str, kind: &str, object: &Value) -> Vec<UnknownField> {
            $(
                if api_version == <$t as Resource>::API_VERSION && kind == <$t as Resource>::KIND {
                    return walk::<$t>(object);
                }
            )*
            Vec::new()
        }

        /// The kinds with a schema here, as `apiVersion/Kind` (documentation and tests).
        pub fn known_kinds() -> Vec<String> {
            vec![$(format!("{}/{}", <$t as Resource>::API_VERSION, <$t as Resource>::KIND)),*]
        }
    };
}

use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, autoscaling::v2 as autoscaling, batch::v1 as batch,
    core::v1 as core, networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac,
    scheduling::v1 as scheduling, storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;

kinds!(
    apps::Deployment,
    apps::StatefulSet,
    apps::DaemonSet,
    apps::ReplicaSet,
    batch::Job,
    batch::CronJob,
    core::Pod,
    core::ReplicationController,
    core::Service,
    core::ConfigMap,
    core::Secret,
    core::ServiceAccount,
    core::Namespace,
    core::PersistentVolumeClaim,
    core::PersistentVolume,
    core::ResourceQuota,
    core::LimitRange,
    core::Endpoints,
    rbac::Role,
    rbac::RoleBinding,
    rbac::ClusterRole,
    rbac::ClusterRoleBinding,
    networking::Ingress,
    networking::IngressClass,
    networking::NetworkPolicy,
    autoscaling::HorizontalPodAutoscaler,
    policy::PodDisruptionBudget,
    storage::StorageClass,
    scheduling::PriorityClass,
    admission::ValidatingWebhookConfiguration,
    admission::MutatingWebhookConfiguration,
    apiextensions::CustomResourceDefinition,
);

fn walk<T: DeserializeOwned>(object: &Value) -> Vec<UnknownField> {
    let notes = Notes::default();
    for _ in 0..MAX_WALKS {
        notes.failed.borrow_mut().take();
        let probe = Probe { value: object, path: &Path::Root, notes: &notes };
        if T::deserialize(probe).is_ok() {
            break;
        }
        // Skip the field whose value had the wrong type (the nearest struct field at or above
        // where the walk failed) and walk again.
        let Some(failed) = notes.failed.borrow_mut().take() else { break };
        if !notes.skip.borrow_mut().insert(failed) {
            break;
        }
    }
    notes.unknown.into_inner().into_iter().take(MAX_REPORTED).collect()
}

#[derive(Default)]
struct Notes {
    unknown: RefCell<BTreeSet<UnknownField>>,
    /// Struct-field paths the walk treats as absent (their value had the wrong type).
    skip: RefCell<BTreeSet<String>>,
    /// Where this walk failed: the path of the nearest struct field.
    failed: RefCell<Option<String>>,
}

/// Where a value is, from the object's root.
enum Path<'a> {
    Root,
    Field(&'a Path<'a>, &'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn render(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Field(p, k) | Path::Key(p, k) => match p.render() {
                s if s.is_empty() => k.to_string(),
                s => format!("{s}.{k}"),
            },
            Path::Index(p, i) => format!("{}[{i}]", p.render()),
        }
    }

    /// The nearest struct field at or above this path.
    fn field(&self) -> Option<String> {
        match self {
            Path::Root => None,
            Path::Field(..) => Some(self.render()),
            Path::Key(p, _) | Path::Index(p, _) => p.field(),
        }
    }
}

/// A deserializer over a JSON value that notes the keys of each struct that are none of its
/// fields and hides them from the typed decode.
#[derive(Clone, Copy)]
struct Probe<'v, 'p> {
    value: &'v Value,
    path: &'p Path<'p>,
    notes: &'p Notes,
}

impl<'v> Probe<'v, '_> {
    fn fail(&self, e: serde_json::Error) -> serde_json::Error {
        let mut failed = self.notes.failed.borrow_mut();
        if failed.is_none() {
            *failed = self.path.field();
        }
        e
    }

    /// Whether this field is one a wrong-typed value made the walk skip. The path is rendered
    /// only when some field is skipped: most walks skip none, and nearly every field of a
    /// Kubernetes object is optional (each render allocates a string per level of the path).
    fn skipped(&self) -> bool {
        if !matches!(self.path, Path::Field(..)) {
            return false;
        }
        let skip = self.notes.skip.borrow();
        !skip.is_empty() && skip.contains(&self.path.render())
    }
}

macro_rules! delegate {
    ($($name:ident),* $(,)?) => {
        $(
            fn $name<V: Visitor<'v>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.value.$name(visitor).map_err(|e| self.fail(e))
            }
        )*
    };
}

impl<'v> de::Deserializer<'v> for Probe<'v, '_> {
    type Error = serde_json::Error;

    delegate!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_unit,
        deserialize_identifier,
        deserialize_ignored_any,
    );

    fn deserialize_option<V: Visitor<'v>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        if self.value.is_null() || self.skipped() { visitor.visit_none() } else { visitor.visit_some(self) }
    }

    fn deserialize_unit_struct<V: Visitor<'v>>(self, name: &'static str, visitor: V) -> Result<V::Value, Self::Error> {
        self.value.deserialize_unit_struct(name, visitor).map_err(|e| self.fail(e))
    }

    fn deserialize_newtype_struct<V: Visitor<'v>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'v>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Array(items) => visitor.visit_seq(Items { items: items.iter().enumerate(), probe: self }),
            other => other.deserialize_seq(visitor).map_err(|e| self.fail(e)),
        }
    }

    fn deserialize_tuple<V: Visitor<'v>>(self, len: usize, visitor: V) -> Result<V::Value, Self::Error> {
        self.value.deserialize_tuple(len, visitor).map_err(|e| self.fail(e))
    }

    fn deserialize_tuple_struct<V: Visitor<'v>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.value.deserialize_tuple_struct(name, len, visitor).map_err(|e| self.fail(e))
    }

    fn deserialize_map<V: Visitor<'v>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Object(map) => visitor.visit_map(Entries::new(map, None, self)),
            other => other.deserialize_map(visitor).map_err(|e| self.fail(e)),
        }
    }

    fn deserialize_struct<V: Visitor<'v>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Object(map) => visitor.visit_map(Entries::new(map, Some(fields), self)),
            other => other.deserialize_struct(name, fields, visitor).map_err(|e| self.fail(e)),
        }
    }

    fn deserialize_enum<V: Visitor<'v>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.value.deserialize_enum(name, variants, visitor).map_err(|e| self.fail(e))
    }
}

struct Items<'v, 'p, I: Iterator<Item = (usize, &'v Value)>> {
    items: I,
    probe: Probe<'v, 'p>,
}

impl<'v, I: Iterator<Item = (usize, &'v Value)>> SeqAccess<'v> for Items<'v, '_, I> {
    type Error = serde_json::Error;

    fn next_element_seed<S: DeserializeSeed<'v>>(&mut self, seed: S) -> Result<Option<S::Value>, Self::Error> {
        let Some((i, value)) = self.items.next() else { return Ok(None) };
        let path = Path::Index(self.probe.path, i);
        seed.deserialize(Probe { value, path: &path, notes: self.probe.notes }).map(Some)
    }
}

/// A struct's fields (`fields` given: the other keys are noted and skipped, null values and
/// `metadata` too) or a map's entries.
struct Entries<'v, 'p> {
    entries: serde_json::map::Iter<'v>,
    fields: Option<&'static [&'static str]>,
    probe: Probe<'v, 'p>,
    value: Option<(&'v str, &'v Value)>,
}

impl<'v, 'p> Entries<'v, 'p> {
    fn new(map: &'v Map<String, Value>, fields: Option<&'static [&'static str]>, probe: Probe<'v, 'p>) -> Self {
        Entries { entries: map.iter(), fields, probe, value: None }
    }
}

impl<'v> MapAccess<'v> for Entries<'v, '_> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'v>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        for (k, v) in self.entries.by_ref() {
            if let Some(fields) = self.fields {
                if v.is_null() || (matches!(self.probe.path, Path::Root) && k == "metadata") {
                    continue;
                }
                if !fields.contains(&k.as_str()) {
                    let path = Path::Field(self.probe.path, k);
                    let nearest = super::nearest(k, fields.iter().copied());
                    self.probe.notes.unknown.borrow_mut().insert(UnknownField { path: path.render(), nearest });
                    continue;
                }
            }
            self.value = Some((k, v));
            return seed.deserialize(k.as_str().into_deserializer()).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'v>>(&mut self, seed: S) -> Result<S::Value, Self::Error> {
        let Some((k, value)) = self.value.take() else {
            return Err(de::Error::custom("a value without its key"));
        };
        let path = match self.fields {
            Some(_) => Path::Field(self.probe.path, k),
            None => Path::Key(self.probe.path, k),
        };
        seed.deserialize(Probe { value, path: &path, notes: self.probe.notes })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn paths(api: &str, kind: &str, v: Value) -> Vec<(String, Option<&'static str>)> {
        unknown_fields(api, kind, &v).into_iter().map(|u| (u.path, u.nearest)).collect()
    }

    #[test]
    fn a_misspelt_field_is_found_at_any_depth_with_its_nearest_field() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a", "nmae": "x"},
            "spec": {"replica": 3, "template": {"spec": {"containers": [
                {"name": "c", "image": "nginx"},
                {"name": "d", "imagePulPolicy": "Always", "resources": {"requests": {"cpu": 1, "custom.io/x": "1"}}}]}}}});
        assert_eq!(
            paths("apps/v1", "Deployment", d),
            vec![
                ("spec.replica".into(), Some("replicas")),
                ("spec.template.spec.containers[1].imagePulPolicy".into(), Some("imagePullPolicy")),
            ]
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_does_not_hide_a_later_unknown_field() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"},
            "spec": {"replicas": "two", "paused": "yes", "template": {"spec": {"containers": [{"name": "c", "argz": []}]}}}});
        assert_eq!(
            paths("apps/v1", "Deployment", d),
            vec![("spec.template.spec.containers[0].argz".into(), Some("args"))]
        );
    }

    #[test]
    fn free_form_maps_nulls_and_unknown_kinds_are_not_fields() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
            "data": {"anything": "x"}, "binaryData": null});
        assert_eq!(paths("v1", "ConfigMap", cm), vec![]);
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"whatever": 1}});
        assert_eq!(paths("example.com/v1", "Thing", cr), vec![]);
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "things", "kind": "Thing"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"spec": {"type": "object", "default": {"a": 1}}}}}}]}});
        assert_eq!(paths("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd), vec![]);
    }

    #[test]
    fn a_field_outside_the_struct_list_is_unknown_even_where_the_kind_is_right() {
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"},
            "spec": {"ports": [{"port": 80, "targetPort": "http", "protocl": "TCP"}], "type": "ClusterIP"},
            "extra": {"a": 1}});
        assert_eq!(
            paths("v1", "Service", svc),
            vec![("extra".into(), None), ("spec.ports[0].protocl".into(), Some("protocol"))]
        );
        assert!(known_kinds().contains(&"apps/v1/Deployment".to_string()));
    }
}
