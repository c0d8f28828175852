//! The policy repository: a directory of YAML holding resource templates, Karmada policies and
//! member `Cluster` objects.
//!
//! Owns: the Karmada API types ([`types`]), loading and classifying documents ([`load`]),
//! Karmada's webhook defaults ([`defaults`]), validation ([`validate`]) and which policy claims
//! which template ([`matching`]). Knows nothing of sled, of the output directory or of HTTP.

pub mod defaults;
pub mod load;
pub mod matching;
pub mod references;
pub mod support;
pub mod types;
pub mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use load::{LoadError, load_dir};
use types::{
    ClusterSpec, ClusterStatus, ClusterTaintPolicySpec, ObjectMeta, OverrideSpec, PropagationSpec, RolloutSpec,
    WorkloadInterpreterSpec, WorkloadRebalancerSpec,
};

pub const POLICY_GROUP: &str = "policy.karmada.io";
pub const CLUSTER_GROUP: &str = "cluster.karmada.io";
pub const CONFIG_GROUP: &str = "config.karmada.io";
pub const APPS_GROUP: &str = "apps.karmada.io";
/// Group of fedsched's own repository kinds (`WorkloadInterpreter`, `RolloutPolicy`).
pub const FEDSCHED_GROUP: &str = "fedsched.io";

/// Where a document came from: a path relative to the policy directory and its 1-based
/// position among the documents of that file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Source {
    pub file: PathBuf,
    pub document: usize,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.file.display(), self.document)
    }
}

/// Identity of a Kubernetes object: group/version, kind, namespace (None = cluster-scoped), name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectKey {
    pub api_version: KeyPart,
    pub kind: KeyPart,
    pub namespace: Option<KeyPart>,
    pub name: KeyPart,
}

/// One part of an [`ObjectKey`]: a string kept inline up to 24 bytes (every apiVersion and
/// kind, most names), so that hashing, comparing and cloning a key reads no other memory.
/// Hashes, orders and serializes exactly as `String`.
pub type KeyPart = compact_str::CompactString;

impl ObjectKey {
    /// The key of `api_version`/`kind` `namespace`/`name` (`None`: cluster-scoped).
    pub fn new(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Self {
        ObjectKey {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.map(Into::into),
            name: name.into(),
        }
    }

    /// API group of the object ("" for the core group).
    pub fn group(&self) -> &str {
        match self.api_version.rsplit_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }

    /// `KIND/NAMESPACE/NAME`, the form the CLI takes; cluster-scoped objects have an empty
    /// namespace (`ClusterRole//admin`).
    pub fn display_ref(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace.as_deref().unwrap_or(""), self.name)
    }

    /// The store key: stable, unique and ordered.
    pub fn store_key(&self) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.group(),
            self.kind,
            self.namespace.as_deref().unwrap_or(""),
            self.name
        )
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_ref())
    }
}

/// A resource template: any Kubernetes object in the repository that is not a Karmada policy
/// or Cluster. Kept as JSON so that any kind, including custom resources, passes through.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub key: ObjectKey,
    pub meta: ObjectMeta,
    pub object: serde_json::Value,
    pub source: Source,
    /// Fields of the object that Kubernetes' schema for its kind does not have (built-in kinds
    /// only, `load::schema`), set by the loader: written as they are, warned about.
    pub unknown_fields: Vec<load::UnknownField>,
}

/// A policy object of one of Karmada's policy kinds.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy<S> {
    pub meta: ObjectMeta,
    pub spec: S,
    pub source: Source,
}

impl<S> Policy<S> {
    pub fn name(&self) -> &str {
        &self.meta.name
    }
    pub fn namespace(&self) -> Option<&str> {
        self.meta.namespace.as_deref()
    }
}

/// A member `Cluster` object as declared in the repository.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterObject {
    pub meta: ObjectMeta,
    pub spec: ClusterSpec,
    pub status: Option<ClusterStatus>,
    pub source: Source,
}

/// A Karmada object fedsched accepts and keeps for later stages but does not schedule
/// (ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration).
#[derive(Debug, Clone, PartialEq)]
pub struct RawObject {
    pub key: ObjectKey,
    pub object: serde_json::Value,
    pub source: Source,
}

/// Which kind of policy claimed a template; used in decisions, explain and provenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PolicyKind {
    PropagationPolicy,
    ClusterPropagationPolicy,
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyKind::PropagationPolicy => "PropagationPolicy",
            PolicyKind::ClusterPropagationPolicy => "ClusterPropagationPolicy",
        })
    }
}

/// Reference to the policy that claimed a template.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PolicyRef {
    pub kind: PolicyKind,
    pub namespace: Option<String>,
    pub name: String,
}

impl fmt::Display for PolicyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// Everything loaded from one policy directory, each list sorted by (namespace, name) so that
/// every later stage sees the same order whatever the file layout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicySet {
    /// Shared (`Arc`): an incremental load puts the templates of unchanged files into the new
    /// set without copying them, and the set's users borrow them.
    pub templates: Vec<std::sync::Arc<Template>>,
    /// Shared as the templates are.
    pub propagation_policies: Vec<std::sync::Arc<Policy<PropagationSpec>>>,
    pub cluster_propagation_policies: Vec<std::sync::Arc<Policy<PropagationSpec>>>,
    pub override_policies: Vec<std::sync::Arc<Policy<OverrideSpec>>>,
    pub cluster_override_policies: Vec<std::sync::Arc<Policy<OverrideSpec>>>,
    pub cluster_taint_policies: Vec<Policy<ClusterTaintPolicySpec>>,
    /// `apps.karmada.io/v1alpha1 WorkloadRebalancer` objects (cluster-scoped).
    pub workload_rebalancers: Vec<Policy<WorkloadRebalancerSpec>>,
    /// Shared: a splice of an edited file into the last set copies the list's handle, not the
    /// fleet's Cluster objects.
    pub clusters: std::sync::Arc<Vec<ClusterObject>>,
    pub interpreter_objects: Vec<RawObject>,
    /// fedsched's declarative interpreters (`fedsched.io/v1alpha1 WorkloadInterpreter`).
    pub workload_interpreters: Vec<Policy<WorkloadInterpreterSpec>>,
    /// fedsched's progressive rollouts (`fedsched.io/v1alpha1 RolloutPolicy`, namespaced).
    pub rollout_policies: Vec<Policy<RolloutSpec>>,
    /// Scope of custom resource kinds declared by CustomResourceDefinitions in the repository:
    /// (group, kind) → namespaced?
    pub crd_scopes: BTreeMap<(String, String), bool>,
    /// What the walk skipped and why (links not followed, loops, Helm charts, kustomizations):
    /// not errors; `check` and `render` print them.
    pub notes: Vec<LoadError>,
}

impl PolicySet {
    /// The Cluster object named `name`: a search of the list, sorted by name as every set is
    /// (a walk per member compared half a million names at 1,000 members).
    pub fn cluster(&self, name: &str) -> Option<&ClusterObject> {
        let found = self.clusters.binary_search_by(|c| c.meta.name.as_str().cmp(name)).ok();
        debug_assert!(found.is_some() || !self.clusters.iter().any(|c| c.meta.name == name), "clusters not sorted");
        found.and_then(|i| self.clusters.get(i))
    }

    /// The template of `key`.
    pub fn template(&self, key: &ObjectKey) -> Option<&Template> {
        self.template_at(key).map(|(_, t)| t)
    }

    /// The template of `key` with its position in the set's templates: a search of the list,
    /// sorted by key as every set is.
    pub fn template_at(&self, key: &ObjectKey) -> Option<(usize, &Template)> {
        let found = self.templates.binary_search_by(|t| t.key.cmp(key)).ok();
        debug_assert!(found.is_some() || !self.templates.iter().any(|t| &t.key == key), "templates not sorted");
        found.and_then(|i| self.templates.get(i).map(|t| (i, &**t)))
    }

    /// The set's Namespace objects (`v1` `Namespace`) in key order: a range of the templates,
    /// sorted by key as every set is, found by two searches (not a scan of every template).
    pub fn namespace_objects(&self) -> &[std::sync::Arc<Template>] {
        fn kind(t: &Template) -> (&str, &str) {
            (t.key.api_version.as_str(), t.key.kind.as_str())
        }
        let start = self.templates.partition_point(|t| kind(t) < ("v1", "Namespace"));
        let rest = self.templates.get(start..).unwrap_or_default();
        let found = &rest[..rest.partition_point(|t| kind(t) == ("v1", "Namespace"))];
        debug_assert_eq!(
            found.len(),
            self.templates.iter().filter(|t| kind(t) == ("v1", "Namespace")).count(),
            "templates not sorted"
        );
        found
    }

    /// Finds a template by the CLI's `KIND/NAMESPACE/NAME` (kind case-insensitive).
    pub fn find_template(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<&Template> {
        self.templates
            .iter()
            .find(|t| {
                t.key.kind.eq_ignore_ascii_case(kind) && t.key.namespace.as_deref() == namespace && t.key.name == name
            })
            .map(|t| &**t)
    }

    pub fn propagation_policy(&self, r: &PolicyRef) -> Option<&Policy<PropagationSpec>> {
        let list = match r.kind {
            PolicyKind::PropagationPolicy => &self.propagation_policies,
            PolicyKind::ClusterPropagationPolicy => &self.cluster_propagation_policies,
        };
        list.iter().find(|p| p.meta.name == r.name && p.meta.namespace == r.namespace).map(|p| &**p)
    }
}

#[cfg(test)]
mod rollout_tests;
