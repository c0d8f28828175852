//! The output layout: what a cluster directory holds besides its object files — its index,
//! the file a GitOps tool reads to learn which objects the directory holds — and the order
//! class of every file fedsched publishes ([`FileClass`]).
//!
//! The publisher knows files only by class: it writes a cluster's objects, then its index
//! files, then the summary's shards, and never removes an index file. Which index files a
//! cluster directory has, and their text, is the [`Layout`]'s: a second output format is a
//! variant here, not a change of the publisher. The index is rendered from the object files
//! the directory will hold once published (the planned ones and the kept ones found on the
//! disk), so the publisher asks for it after its diff ([`Layout::index_files`]).
//!
//! A layout may also have root files: files outside every cluster directory that name one
//! ([`FileClass::Root`]). [`Layout::Flux`] gives each cluster a Flux `Kustomization` at
//! `clusters/<cluster>/fedsched.yaml` (Flux's documented monorepo layout: `clusters/<name>/` is
//! the path `flux bootstrap --path` points a cluster's Flux at) whose `spec.path` is the
//! cluster's directory. The publisher writes them after every cluster's objects and index, so
//! a root file never names a directory not yet written, and removes a generated one whose
//! cluster left (any layout's: switching back to [`Layout::Kustomize`] removes them).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::output::GENERATED_HEADER;
use super::yaml::to_yaml;

/// When a published file is put in place, relative to the others: every cluster directory is
/// consistent at every instant (each file an index names exists) because a cluster's
/// [`FileClass::Object`] files come before its [`FileClass::Index`] files, and the
/// [`FileClass::Summary`] (outside every cluster directory) after every cluster. Ordered so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileClass {
    /// An object's file in a cluster directory (removed when no longer desired).
    #[default]
    Object,
    /// A file of a cluster directory that names its objects (written after them, never
    /// removed).
    Index,
    /// A file outside every cluster directory that names one ([`Layout::root_files`]):
    /// written after every cluster's objects and index files, removed when its cluster leaves.
    Root,
    /// A shard of the placement summary, outside every cluster directory (written last).
    Summary,
}

impl FileClass {
    /// Whether this is [`FileClass::Object`] (the default, left out of the journal).
    pub fn is_object(&self) -> bool {
        *self == FileClass::Object
    }
}

/// The format of the output directory's index and root files (`[output] layout`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Layout {
    /// A `kustomization.yaml` per cluster directory listing its object files, which Argo CD
    /// and Flux both read.
    #[default]
    Kustomize,
    /// [`Layout::Kustomize`]'s cluster directories, and a Flux `Kustomization` per cluster at
    /// [`root_file_path`] that syncs its directory.
    Flux(Flux),
}

/// What the Flux `Kustomization` of [`Layout::Flux`] says besides its cluster (`[output.flux]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flux {
    /// `metadata.namespace` (Flux's own namespace, `flux-system`).
    pub namespace: String,
    /// `spec.interval` (a Go duration, `10m`).
    pub interval: String,
    /// `spec.sourceRef.kind` (`GitRepository`, `OCIRepository`, `Bucket`).
    pub source_kind: String,
    /// `spec.sourceRef.name`: the source holding the output directory (`flux-system`, the
    /// one `flux bootstrap` makes).
    pub source_name: String,
    /// `spec.sourceRef.namespace`, when the source is in another namespace.
    pub source_namespace: Option<String>,
    /// The output directory's path in the source (`.`: its root); `spec.path` is
    /// `<base>/<cluster>`.
    pub base_path: String,
    /// `spec.decryption: {provider: sops}` (`[secrets] mode = "sops"`), with this Secret
    /// as its `secretRef` when given.
    pub sops: Option<Option<String>>,
    /// `spec.kubeConfig.secretRef.name`, `{cluster}` replaced by the cluster's name: one Flux
    /// (on a management cluster) applies every cluster's directory to its member.
    pub kubeconfig_secret: Option<String>,
}

impl Default for Flux {
    fn default() -> Self {
        Flux {
            namespace: "flux-system".to_owned(),
            interval: "10m".to_owned(),
            source_kind: "GitRepository".to_owned(),
            source_name: "flux-system".to_owned(),
            source_namespace: None,
            base_path: ".".to_owned(),
            sops: None,
            kubeconfig_secret: None,
        }
    }
}

/// The directory of the root files ([`FileClass::Root`]) under the output root: no cluster
/// may take its name under [`Layout::Flux`].
pub const ROOT_DIR: &str = "clusters";

/// The name of a cluster's root file in its directory under [`ROOT_DIR`].
const ROOT_FILE: &str = "fedsched.yaml";

/// The path (relative to the output root) of `cluster`'s root file.
pub fn root_file_path(cluster: &str) -> String {
    format!("{ROOT_DIR}/{cluster}/{ROOT_FILE}")
}

/// The cluster whose root file `rel` (relative to the output root) is, if it is one.
pub fn root_file_cluster(rel: &str) -> Option<&str> {
    let cluster = rel.strip_prefix(ROOT_DIR)?.strip_prefix('/')?.strip_suffix(ROOT_FILE)?.strip_suffix('/')?;
    (!cluster.is_empty() && !cluster.contains('/')).then_some(cluster)
}

/// The index file of [`Layout::Kustomize`].
const KUSTOMIZATION: &str = "kustomization.yaml";

impl Layout {
    /// The paths (relative to a cluster directory) of this layout's index files.
    pub fn index_paths(&self) -> &'static [&'static str] {
        match self {
            Layout::Kustomize | Layout::Flux(_) => &[KUSTOMIZATION],
        }
    }

    /// The index files (path relative to the cluster directory, text) of a cluster directory
    /// whose object files are `objects` (relative paths).
    pub fn index_files(&self, objects: &BTreeSet<&str>) -> Vec<(&'static str, String)> {
        match self {
            Layout::Kustomize | Layout::Flux(_) => vec![(KUSTOMIZATION, kustomization(objects))],
        }
    }

    /// The root files (path relative to the output root, text) naming `clusters`, whose
    /// directories exist once the publish's objects and index files are in place.
    pub fn root_files(&self, clusters: &BTreeSet<&str>) -> Vec<(String, String)> {
        match self {
            Layout::Kustomize => Vec::new(),
            Layout::Flux(flux) => clusters.iter().map(|c| (root_file_path(c), flux_kustomization(flux, c))).collect(),
        }
    }

    /// The cluster name this layout reserves for its root files, if any.
    pub fn reserved_cluster(&self) -> Option<&'static str> {
        match self {
            Layout::Kustomize => None,
            Layout::Flux(_) => Some(ROOT_DIR),
        }
    }

    /// What a commit whose only changes are index files says it changed.
    pub fn index_noun() -> &'static str {
        "kustomizations"
    }
}

/// Whether `rel` (relative to a cluster directory) is an index file of some layout: such a
/// path is reserved (no object file may take it) and never removed as an object's.
/// (Every layout's is `kustomization.yaml`, a test checks.)
pub fn is_index_path(rel: &str) -> bool {
    rel == KUSTOMIZATION
}

/// The generated Flux `Kustomization` (`kustomize.toolkit.fluxcd.io/v1`) that syncs
/// `cluster`'s directory, pruning what leaves it.
fn flux_kustomization(flux: &Flux, cluster: &str) -> String {
    let base = flux.base_path.trim_end_matches('/');
    let base = if base.is_empty() { "." } else { base };
    let mut source = json!({ "kind": flux.source_kind, "name": flux.source_name });
    if let Some(ns) = &flux.source_namespace {
        source["namespace"] = json!(ns);
    }
    let mut spec = json!({
        "interval": flux.interval,
        "path": format!("{base}/{cluster}"),
        "prune": true,
        "sourceRef": source,
    });
    if let Some(secret) = &flux.sops {
        let mut decryption = json!({ "provider": "sops" });
        if let Some(name) = secret {
            decryption["secretRef"] = json!({ "name": name });
        }
        spec["decryption"] = decryption;
    }
    if let Some(secret) = &flux.kubeconfig_secret {
        spec["kubeConfig"] = json!({ "secretRef": { "name": secret.replace("{cluster}", cluster) } });
    }
    let doc = json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": { "name": format!("fedsched-{cluster}"), "namespace": flux.namespace },
        "spec": spec,
    });
    format!("{GENERATED_HEADER}\n{}", to_yaml(&doc))
}

/// The generated `kustomization.yaml` listing `resources` (sorted).
fn kustomization(resources: &BTreeSet<&str>) -> String {
    let doc = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources.iter().collect::<Vec<_>>(),
    });
    format!("{GENERATED_HEADER}\n{}", to_yaml(&doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kustomization_lists_resources_after_the_header() {
        let resources: BTreeSet<&str> = ["b/x.yaml", "a/y.yaml"].into_iter().collect();
        assert_eq!(
            Layout::Kustomize.index_files(&resources),
            vec![(
                "kustomization.yaml",
                format!(
                    "{GENERATED_HEADER}\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- a/y.yaml\n- b/x.yaml\n"
                )
            )]
        );
        assert!(is_index_path("kustomization.yaml"));
        for layout in [Layout::Kustomize, Layout::Flux(Flux::default())] {
            assert!(layout.index_paths().iter().all(|p| is_index_path(p)), "{layout:?}");
        }
        assert!(!is_index_path("default/kustomization.yaml"));
    }

    #[test]
    fn flux_gives_each_cluster_a_kustomization_of_its_directory_at_the_root() {
        let clusters: BTreeSet<&str> = ["member1"].into_iter().collect();
        assert!(Layout::Kustomize.root_files(&clusters).is_empty());
        let flux = Flux {
            sops: Some(Some("sops-age".to_owned())),
            base_path: "out/".to_owned(),
            kubeconfig_secret: Some("{cluster}-kubeconfig".to_owned()),
            ..Flux::default()
        };
        let files = Layout::Flux(flux).root_files(&clusters);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, "clusters/member1/fedsched.yaml");
        assert_eq!(
            files[0].1,
            format!(
                "{GENERATED_HEADER}\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: fedsched-member1\n  namespace: flux-system\nspec:\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n  interval: 10m\n  kubeConfig:\n    secretRef:\n      name: member1-kubeconfig\n  path: out/member1\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
            )
        );
        assert_eq!(root_file_cluster("clusters/member1/fedsched.yaml"), Some("member1"));
        for not in
            ["clusters/fedsched.yaml", "clusters/a/b/fedsched.yaml", "member1/fedsched.yaml", "clusters/a/x.yaml"]
        {
            assert_eq!(root_file_cluster(not), None, "{not}");
        }
    }

    /// Objects before indexes before the summary: the order the publisher applies them in.
    #[test]
    fn classes_are_ordered_objects_then_indexes_then_the_summary() {
        assert!(FileClass::Object < FileClass::Index && FileClass::Index < FileClass::Root);
        assert!(FileClass::Root < FileClass::Summary);
        assert_eq!(serde_json::to_string(&FileClass::Index).expect("json"), "\"index\"");
    }
}
