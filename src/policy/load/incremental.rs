//! [`load_repository_incremental`]: a reload that types, defaults and validates only the files
//! that changed, and equals a whole load.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::classify::{Loader, expand_lists, sort_set};
use super::parse::Parsed;
use super::scope::crd_scope;
use super::{LoadError, ParseCache, load_repository_refreshed};
use crate::policy::{PolicySet, Source};

/// the whole repository they were typed with.
#[derive(Debug, Clone)]
pub(super) struct Typed {
    /// [`crd_digest`] of the scopes used.
    crd: u64,
    set: PolicySet,
    errors: Vec<LoadError>,
    /// Every object recorded for the duplicate check: the digest of its (group, kind,
    /// namespace, name).
    seen: Vec<u64>,
}

/// [`load_repository_refreshed`], reusing what each unchanged file gave when loaded on its own.
///
/// Loading, defaulting and validating are per object except for three things: the CRD scopes
/// (collected from every file first, so each file is typed with the repository's scopes and
/// typed again when they change), the duplicate check and the one-interpreter-per-kind check
/// across files (checked when merging). The per-file results are merged in walk order and
/// sorted as a whole load sorts. When any file has an error, or the merge finds a duplicate,
/// the whole repository is loaded again instead ([`load_repository_refreshed`]), so the errors
/// and their order are exactly a whole load's. The result equals a whole load (tested).
pub fn load_repository_incremental(cache: &mut ParseCache, io_errors: Vec<LoadError>) -> (PolicySet, Vec<LoadError>) {
    if !io_errors.is_empty() {
        return load_repository_refreshed(cache, io_errors);
    }
    // The repository's CRD scopes, first definition wins (as a whole load); each file's CRDs
    // listed once per content.
    let mut crd_scopes: BTreeMap<(String, String), bool> = BTreeMap::new();
    for rel in &cache.order {
        let Some(file) = cache.files.get_mut(rel) else { continue };
        let crds = file.crds.get_or_insert_with(|| {
            let mut crds = Vec::new();
            for (_, doc) in file.docs.iter() {
                let Ok(value) = doc else { continue };
                for_each_crd(value, &mut |group, kind, namespaced| crds.push((group, kind, namespaced)));
            }
            crds
        });
        for (group, kind, namespaced) in crds.iter() {
            crd_scopes.entry((group.clone(), kind.clone())).or_insert(*namespaced);
        }
    }
    let crd = crd_digest(&crd_scopes);
    let mut out = PolicySet { crd_scopes: crd_scopes.clone(), ..Default::default() };
    // The duplicate check by each object's digest: two equal digests (a duplicate, or in
    // theory two objects whose digests collide) take the whole load, which names the duplicate.
    let mut seen: HashSet<u64> = HashSet::new();
    let order = cache.order.clone();
    // Files typed with other CRD scopes, or never: typed on every core (a first load types
    // every file), each on its own.
    let untyped: Vec<(&std::path::PathBuf, &std::sync::Arc<super::parse::Parsed>)> = order
        .iter()
        .filter_map(|rel| cache.files.get(rel).map(|f| (rel, f)))
        .filter(|(_, f)| f.typed.as_ref().is_none_or(|t| t.crd != crd))
        .map(|(rel, f)| (rel, &f.docs))
        .collect();
    let typed = crate::util::threads::map_ordered(&untyped, crate::util::threads::workers(), |(rel, docs)| {
        type_file(rel, docs, &crd_scopes, crd)
    });
    let typed: Vec<(std::path::PathBuf, Typed)> = untyped.iter().map(|(rel, _)| (*rel).clone()).zip(typed).collect();
    for (rel, t) in typed {
        if let Some(file) = cache.files.get_mut(&rel) {
            file.typed = Some(t);
        }
    }
    for rel in &order {
        let Some(typed) = cache.files.get(rel).and_then(|f| f.typed.as_ref()) else { continue };
        if !typed.errors.is_empty() || !typed.seen.iter().all(|id| seen.insert(*id)) {
            return load_repository_refreshed(cache, Vec::new());
        }
        extend_set(&mut out, &typed.set);
    }
    let mut targets = HashSet::new();
    if !out.workload_interpreters.iter().all(|w| targets.insert((&w.spec.target.api_version, &w.spec.target.kind))) {
        return load_repository_refreshed(cache, Vec::new());
    }
    sort_set(&mut out);
    out.notes = cache.notes.clone();
    (out, Vec::new())
}

/// Calls `f` with the (group, kind, namespaced) of every CRD in a document (lists expanded).
fn for_each_crd(value: &Value, f: &mut dyn FnMut(String, String, bool)) {
    let is_list = value.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && value.get("kind").and_then(Value::as_str) == Some("List");
    if is_list {
        if let Some(Value::Array(items)) = value.get("items") {
            for item in items {
                for_each_crd(item, f);
            }
        }
        return;
    }
    if let Some(Ok((group, kind, namespaced))) = crd_scope(value) {
        f(group, kind, namespaced);
    }
}

fn crd_digest(scopes: &BTreeMap<(String, String), bool>) -> u64 {
    let mut bytes = Vec::new();
    for ((group, kind), namespaced) in scopes {
        bytes.extend_from_slice(group.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(kind.as_bytes());
        bytes.push(0);
        bytes.push(u8::from(*namespaced));
    }
    crate::util::hash::fnv1a64(&bytes)
}

/// One file loaded, defaulted and validated on its own with the repository's CRD scopes.
fn type_file(rel: &Path, docs: &Parsed, crd_scopes: &BTreeMap<(String, String), bool>, crd: u64) -> Typed {
    let mut errors = Vec::new();
    let mut items = Vec::new();
    for (number, result) in docs {
        let source = Source { file: rel.to_path_buf(), document: *number };
        match result {
            Ok(Value::Null) => {}
            Ok(value) => expand_lists(source, String::new(), value.clone(), &mut items, &mut errors),
            Err(message) => errors.push(LoadError::at(&source, "", message.clone())),
        }
    }
    let mut loader = Loader::default();
    loader.set.crd_scopes = crd_scopes.clone();
    for item in items {
        loader.classify(item);
    }
    let Loader { mut set, errors: mut more, seen } = loader;
    errors.append(&mut more);
    set.crd_scopes = BTreeMap::new();
    crate::policy::defaults::apply(&mut set);
    errors.extend(crate::policy::validate::validate(&set));
    let seen = seen.into_keys().map(|id| crate::util::hash::fnv1a64(format!("{id:?}").as_bytes())).collect();
    Typed { crd, set, errors, seen }
}

/// Appends a copy of every object of `part` to `out`.
fn extend_set(out: &mut PolicySet, part: &PolicySet) {
    out.templates.extend(part.templates.iter().cloned());
    out.propagation_policies.extend(part.propagation_policies.iter().cloned());
    out.cluster_propagation_policies.extend(part.cluster_propagation_policies.iter().cloned());
    out.override_policies.extend(part.override_policies.iter().cloned());
    out.cluster_override_policies.extend(part.cluster_override_policies.iter().cloned());
    out.cluster_taint_policies.extend(part.cluster_taint_policies.iter().cloned());
    out.workload_rebalancers.extend(part.workload_rebalancers.iter().cloned());
    out.clusters.extend(part.clusters.iter().cloned());
    out.interpreter_objects.extend(part.interpreter_objects.iter().cloned());
    out.workload_interpreters.extend(part.workload_interpreters.iter().cloned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::load::load_repository;
    use std::fs;

    /// A first load of many files (every file typed on its own): the same set and errors as a
    /// whole load, in the same order, also after an edit that changes a CRD's scope.
    #[test]
    fn a_first_load_of_many_files_equals_a_whole_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let crd = |scope: &str| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.io\nspec:\n  group: example.io\n  names:\n    kind: Widget\n  scope: {scope}\n"
            )
        };
        fs::write(dir.path().join("000-crd.yaml"), crd("Namespaced")).expect("write");
        for i in 0..600 {
            let text = match i % 3 {
                0 => format!(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-{i}\n  namespace: shop\nspec:\n  replicas: {i}\n"
                ),
                1 => format!("apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: w-{i}\n  namespace: shop\n"),
                _ => format!(
                    "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: p-{i}\n  namespace: shop\nspec:\n  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n      name: web-{}\n",
                    i - 2
                ),
            };
            fs::write(dir.path().join(format!("f-{i:04}.yaml")), text).expect("write");
        }
        let mut cache = ParseCache::default();
        for what in ["first", "a scope change"] {
            let (_, io) = cache.refresh(dir.path());
            let incremental = load_repository_incremental(&mut cache, io);
            let whole = load_repository(dir.path());
            assert!(incremental.0 == whole.0, "{what}: sets differ");
            assert_eq!(incremental.1, whole.1, "{what}");
            assert_eq!(incremental.0.templates.len(), 401, "{what}: 200 Deployments, 200 Widgets, the CRD");
            fs::write(dir.path().join("000-crd.yaml"), crd("Cluster")).expect("write");
        }
    }

    #[test]
    fn incremental_load_equals_a_whole_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let put = |name: &str, text: &str| fs::write(dir.path().join(name), text).expect("write");
        let crd = |scope: &str| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.io\nspec:\n  group: example.io\n  names:\n    kind: Widget\n  scope: {scope}\n"
            )
        };
        let widget = "apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: shop\n";
        let deploy = |name: &str, replicas: i64| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n  replicas: {replicas}\n"
            )
        };
        let policy = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: p\n  namespace: shop\nspec:\n  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n  placement:\n    replicaScheduling:\n      replicaSchedulingType: Divided\n";
        put("a-widget.yaml", widget);
        put("b-crd.yaml", &crd("Cluster"));
        put("c-deploy.yaml", &format!("{}---\n{}", deploy("web", 2), deploy("api", 3)));
        put("d-policy.yaml", policy);
        let mut cache = ParseCache::default();
        let check = |cache: &mut ParseCache, what: &str| {
            let (_, io) = cache.refresh(dir.path());
            let incremental = load_repository_incremental(cache, io);
            let whole = load_repository(dir.path());
            assert!(incremental.0 == whole.0, "{what}: sets differ");
            assert_eq!(incremental.1, whole.1, "{what}");
            incremental.1.len()
        };
        assert_eq!(check(&mut cache, "first"), 0);
        put("c-deploy.yaml", &format!("{}---\n{}", deploy("web", 5), deploy("api", 3)));
        assert_eq!(check(&mut cache, "an edit"), 0);
        // A CRD's scope changes how an earlier file's custom resource is typed.
        put("b-crd.yaml", &crd("Namespaced"));
        assert_eq!(check(&mut cache, "a scope change"), 0);
        // A duplicate across files, then an error in one file: a whole load's errors.
        put("e-dup.yaml", &deploy("web", 1));
        assert_eq!(check(&mut cache, "a duplicate"), 1);
        put("e-dup.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\n");
        assert!(check(&mut cache, "an invalid name") > 0);
        fs::remove_file(dir.path().join("e-dup.yaml")).expect("remove");
        assert_eq!(check(&mut cache, "fixed"), 0);
    }
}
