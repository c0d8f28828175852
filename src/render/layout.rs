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
    /// A shard of the placement summary, outside every cluster directory (written last).
    Summary,
}

impl FileClass {
    /// Whether this is [`FileClass::Object`] (the default, left out of the journal).
    pub fn is_object(&self) -> bool {
        *self == FileClass::Object
    }
}

/// The format of the output directory's index files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// A `kustomization.yaml` per cluster directory listing its object files, which Argo CD
    /// and Flux both read.
    #[default]
    Kustomize,
}

/// The index file of [`Layout::Kustomize`].
const KUSTOMIZATION: &str = "kustomization.yaml";

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 1] = [Layout::Kustomize];

    /// The paths (relative to a cluster directory) of this layout's index files.
    pub fn index_paths(self) -> &'static [&'static str] {
        match self {
            Layout::Kustomize => &[KUSTOMIZATION],
        }
    }

    /// The index files (path relative to the cluster directory, text) of a cluster directory
    /// whose object files are `objects` (relative paths).
    pub fn index_files(self, objects: &BTreeSet<&str>) -> Vec<(&'static str, String)> {
        match self {
            Layout::Kustomize => vec![(KUSTOMIZATION, kustomization(objects))],
        }
    }

    /// What a commit whose only changes are this layout's index files says it changed.
    pub fn index_noun(self) -> &'static str {
        match self {
            Layout::Kustomize => "kustomizations",
        }
    }
}

/// The layout whose index file `rel` (relative to a cluster directory) is, if any: such a path
/// is reserved (no object file may take it) and never removed as an object's.
pub fn index_layout(rel: &str) -> Option<Layout> {
    Layout::ALL.into_iter().find(|l| l.index_paths().contains(&rel))
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
        assert_eq!(index_layout("kustomization.yaml"), Some(Layout::Kustomize));
        assert_eq!(index_layout("default/kustomization.yaml"), None);
    }

    /// Objects before indexes before the summary: the order the publisher applies them in.
    #[test]
    fn classes_are_ordered_objects_then_indexes_then_the_summary() {
        assert!(FileClass::Object < FileClass::Index && FileClass::Index < FileClass::Summary);
        assert_eq!(serde_json::to_string(&FileClass::Index).expect("json"), "\"index\"");
    }
}
