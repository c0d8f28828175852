//! The policy repository: a directory of YAML holding resource templates, Karmada policies and
//! member `Cluster` objects.
//!
//! Owns: the Karmada API types ([`types`]), loading and classifying documents ([`load`]),
//! Karmada's webhook defaults ([`defaults`]), validation ([`validate`]) and which policy claims
//! which template ([`matching`]). Knows nothing of sled, of the output directory or of HTTP.
//!
//! # Its stage of the pass
//!
//! **Load** (`policy::load` — `load_dir`, `defaults::apply`, `validate::validate`; then
//! `reconcile::inputs` checks profile names and builds the offline snapshots): every YAML document
//! of the repository, classified, typed, defaulted as Karmada's webhook would, validated. All
//! errors are collected (`file: document n: field: message`). Any error stops the pass before
//! anything is written. Findings that do not make the repository invalid
//! (`policy::validate::warnings`) are printed by `check`.
//!
//! # In detail
//!
//! **The one home of policy types.** `types.rs` mirrors Karmada's API field for field; `load/`
//! reads the repository, one file per concept: `walk.rs` (the walk and its skip rules: links that
//! leave the repository are not followed, Helm charts, `values*.yaml` and `kustomization.yaml` are
//! skipped with a note, `[policy] ignore` and `.fedschedignore`), `parse.rs` (documents,
//! `yaml_options`), `classify.rs` (a document → a kind: one function per class), `scope.rs`
//! (namespaced or not, CRDs), `names.rs` (DNS-1123 checks), `cache.rs` (`ParseCache`: stat cache
//! with git's racy rule; `ParseCache::one_shot` for a command's single load — `check`, `render` —,
//! whose documents move into the set instead of being copied), `schema.rs` (the fields of the
//! built-in kinds in Kubernetes 1.33's schema, from k8s-openapi's generated field lists, walked by
//! a probing deserializer: a template's unknown field is a warning naming it, with the nearest real
//! one), `persist.rs` (`ParseStore`: the parsed documents kept across restarts, keyed by SHA-256 of
//! the parser's version and the file's bytes, in a compact encoding that gives back exactly the
//! values parsed; the store implements it in `store/parsed.rs`, the `parsed` tree),
//! `incremental.rs` (only changed files typed again; the templates and the (cluster) propagation
//! and override policies of a `PolicySet` are `Arc`s, so those of unchanged files enter the new set
//! shared, not copied, and so is the list of Cluster objects; an edit that changes what a file's
//! objects say, not which objects there are, is spliced into the last merged set —
//! `load_repository_spliced`: the file typed again, each changed object put in place of its old
//! one, an equal one kept as the old object — and `reconcile/inputs.rs` hashes only the spliced
//! objects and keeps the rest of the last inputs, taking their hashes and file list over, not
//! copying them, once the last pass let go of them; a splice equals a merge, compared in debug
//! builds), `error.rs` (`LoadError`; `io` marks a file or directory that could not be read, which
//! the daemon and `render` report as an operational failure); `defaults.rs`, `validate.rs` (errors,
//! and `warnings` for what Karmada accepts but likely does not do what its author meant, and
//! `support.rs`'s warnings for every accepted Karmada field fedsched does not implement — its unit
//! test walks every field of `types.rs` and fails on one neither implemented with a named test nor
//! warned about, and `references.rs`'s warnings for names that point at nothing in the repository —
//! a cluster name no Cluster has, a selector no template matches, an unknown `metadata` key);
//! `load/decode.rs` is the one typed decode of a document part: every structural error, not serde's
//! first (the offending key taken out and the decode repeated, bounded), with `nearest`, the one
//! "did you mean" of the crate; `matching.rs` (selectors, cluster affinity, which policy claims a
//! template — from scratch, or with the previous claimer and `preemption` — and why the others are
//! shadowed). Knows nothing of the store, the output directory or the scheduler.

pub mod defaults;
pub mod load;
pub mod matching;
pub mod positions;
pub mod references;
pub mod support;
pub mod types;
pub mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use load::{LoadError, load_dir};
pub use positions::SetPos;
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
    pub fn template_at(&self, key: &ObjectKey) -> Option<(SetPos<Template>, &Template)> {
        let found = self.templates.binary_search_by(|t| t.key.cmp(key)).ok().map(SetPos::new);
        debug_assert!(found.is_some() || !self.templates.iter().any(|t| &t.key == key), "templates not sorted");
        found.and_then(|i| i.of(&self.templates).map(|t| (i, t)))
    }

    /// Each template with its position, in the set's order.
    pub fn templates_at(&self) -> impl Iterator<Item = (SetPos<Template>, &std::sync::Arc<Template>)> {
        SetPos::all(self.templates.len()).zip(&self.templates)
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
