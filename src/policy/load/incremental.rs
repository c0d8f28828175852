//! [`load_repository_incremental`]: a reload that types, defaults and validates only the files
//! that changed, and equals a whole load.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::classify::{Loader, expand_lists, sort_set};
use super::parse::Parsed;
use super::scope::crd_scope;
use super::{LoadError, ParseCache, load_repository_refreshed};
use crate::policy::types::{OverrideSpec, PropagationSpec};
use crate::policy::{Policy, PolicySet, SetPos, Source, Template};

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
    // The set merged here is what later refreshes' changes are spliced into.
    cache.replaced = Some(Vec::new());
    if !io_errors.is_empty() {
        return load_repository_refreshed(cache, io_errors);
    }
    // The repository's CRD scopes, first definition wins (as a whole load); each file's CRDs
    // listed once per content.
    let mut crd_scopes: BTreeMap<(String, String), bool> = BTreeMap::new();
    for rel in &cache.order {
        let Some(file) = cache.files.get_mut(rel) else { continue };
        let docs = &file.docs;
        let crds = file.crds.get_or_insert_with(|| crds_of(docs));
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

/// A file whose bytes a refresh found changed, with what it gave before ([`ParseCache::replaced`]).
#[derive(Debug)]
pub(super) struct ReplacedFile {
    rel: PathBuf,
    /// The file typed before (`None`: never typed, as when it changed twice between loads).
    typed: Option<Typed>,
    /// The CRDs it defined before (`None`: not listed).
    crds: Option<Vec<(String, String, bool)>>,
}

impl ReplacedFile {
    /// What `old` (the cache's entry before the refresh) gave, for the file at `rel`.
    pub(super) fn of(rel: &Path, old: super::cache::CachedFile) -> Self {
        ReplacedFile { rel: rel.to_path_buf(), typed: old.typed, crds: old.crds }
    }
}

/// The positions in each shared list of a spliced set whose object was replaced
/// ([`load_repository_spliced`]): what the caller hashes again.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Spliced {
    pub templates: Vec<SetPos<Template>>,
    pub propagation_policies: Vec<SetPos<Policy<PropagationSpec>>>,
    pub cluster_propagation_policies: Vec<SetPos<Policy<PropagationSpec>>>,
    pub override_policies: Vec<SetPos<Policy<OverrideSpec>>>,
    pub cluster_override_policies: Vec<SetPos<Policy<OverrideSpec>>>,
    /// The files whose bytes changed.
    pub files: Vec<PathBuf>,
}

/// The set `previous` (what [`load_repository_incremental`] last merged from this cache) with
/// the objects of the files changed since ([`ParseCache::replaced`]) put in place of theirs,
/// instead of merging every file again: an edit that changes what objects say, not which
/// objects there are. `None` (the caller merges) unless every changed file was typed before
/// with `previous`'s CRD scopes, defines no CRD before or after, types again without an error,
/// holds the same objects (kind, namespace, name) in the same order, and the same clusters,
/// interpreters, taint policies, rebalancers and rollout policies; and each object it held before is the one in
/// `previous` (the same `Arc`). The result equals a merge (checked in debug builds; tested).
pub fn load_repository_spliced(cache: &mut ParseCache, previous: &PolicySet) -> Option<(PolicySet, Spliced)> {
    let replaced = cache.replaced.as_mut().map(std::mem::take)?;
    if replaced.is_empty() {
        return None;
    }
    let crd = crd_digest(&previous.crd_scopes);
    let mut set = previous.clone();
    let mut spliced = Spliced::default();
    let mut typed = Vec::with_capacity(replaced.len());
    for r in &replaced {
        let old = r.typed.as_ref().filter(|t| t.crd == crd && t.errors.is_empty())?;
        if r.crds.as_ref().is_none_or(|c| !c.is_empty()) {
            return None;
        }
        let file = cache.files.get_mut(&r.rel)?;
        let docs = &file.docs;
        let crds = file.crds.get_or_insert_with(|| crds_of(docs));
        if !crds.is_empty() {
            return None;
        }
        let mut new = type_file(&r.rel, docs, &previous.crd_scopes, crd);
        if !new.errors.is_empty() || !same_ids(&old.seen, &new.seen) {
            return None;
        }
        splice(&mut set, &old.set, &mut new.set, &mut spliced)?;
        spliced.files.push(r.rel.clone());
        typed.push((r.rel.clone(), new));
    }
    for (rel, t) in typed {
        if let Some(file) = cache.files.get_mut(&rel) {
            file.typed = Some(t);
        }
    }
    Some((set, spliced))
}

/// Whether two files' objects are the same ones (their duplicate-check digests, in any order).
fn same_ids(a: &[u64], b: &[u64]) -> bool {
    let sorted = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    };
    a.len() == b.len() && sorted(a) == sorted(b)
}

/// Puts `new`'s objects (one file typed again) in place of `old`'s (the same file typed before)
/// in `set`, noting their positions; an object equal to the old one stays the old object (in
/// `set` and in `new`: later passes see it unchanged). `None` when the two do not hold the
/// same objects in the same order, or an old object is not the one in `set`.
fn splice(set: &mut PolicySet, old: &PolicySet, new: &mut PolicySet, out: &mut Spliced) -> Option<()> {
    let same_rest = old.cluster_taint_policies == new.cluster_taint_policies
        && old.workload_rebalancers == new.workload_rebalancers
        && old.clusters == new.clusters
        && old.interpreter_objects == new.interpreter_objects
        && old.workload_interpreters == new.workload_interpreters
        && old.rollout_policies == new.rollout_policies;
    if !same_rest {
        return None;
    }
    replace_in(&mut set.templates, &old.templates, &mut new.templates, |a, b| a.key.cmp(&b.key), &mut out.templates)?;
    let by_ns_name =
        |a: &Policy<_>, b: &Policy<_>| (&a.meta.namespace, &a.meta.name).cmp(&(&b.meta.namespace, &b.meta.name));
    replace_in(
        &mut set.propagation_policies,
        &old.propagation_policies,
        &mut new.propagation_policies,
        by_ns_name,
        &mut out.propagation_policies,
    )?;
    replace_in(
        &mut set.cluster_propagation_policies,
        &old.cluster_propagation_policies,
        &mut new.cluster_propagation_policies,
        by_ns_name,
        &mut out.cluster_propagation_policies,
    )?;
    let by_ns_name =
        |a: &Policy<_>, b: &Policy<_>| (&a.meta.namespace, &a.meta.name).cmp(&(&b.meta.namespace, &b.meta.name));
    replace_in(
        &mut set.override_policies,
        &old.override_policies,
        &mut new.override_policies,
        by_ns_name,
        &mut out.override_policies,
    )?;
    replace_in(
        &mut set.cluster_override_policies,
        &old.cluster_override_policies,
        &mut new.cluster_override_policies,
        by_ns_name,
        &mut out.cluster_override_policies,
    )
}

/// In `list` (sorted by `cmp`, keys unique: a merged set's list), each of `old`'s objects
/// replaced by the object at the same index of `new`, which must have the same key; the
/// positions go to `positions`. An equal object is not replaced: `new` takes the old one.
fn replace_in<T: PartialEq>(
    list: &mut [Arc<T>],
    old: &[Arc<T>],
    new: &mut [Arc<T>],
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
    positions: &mut Vec<SetPos<T>>,
) -> Option<()> {
    if old.len() != new.len() {
        return None;
    }
    for (o, n) in old.iter().zip(new.iter_mut()) {
        if cmp(o, n) != std::cmp::Ordering::Equal {
            return None;
        }
        let at = list.binary_search_by(|x| cmp(x, o)).ok()?;
        let slot = list.get_mut(at)?;
        if !Arc::ptr_eq(slot, o) {
            return None;
        }
        if **o == **n {
            *n = Arc::clone(o);
            continue;
        }
        *slot = Arc::clone(n);
        positions.push(SetPos::new(at));
    }
    Some(())
}

/// The CRDs a file's documents define (group, kind, namespaced), in order.
fn crds_of(docs: &Parsed) -> Vec<(String, String, bool)> {
    let mut crds = Vec::new();
    for (_, doc) in docs.iter() {
        let Ok(value) = doc else { continue };
        for_each_crd(value, &mut |group, kind, namespaced| crds.push((group, kind, namespaced)));
    }
    crds
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
    Arc::make_mut(&mut out.clusters).extend(part.clusters.iter().cloned());
    out.interpreter_objects.extend(part.interpreter_objects.iter().cloned());
    out.workload_interpreters.extend(part.workload_interpreters.iter().cloned());
    out.rollout_policies.extend(part.rollout_policies.iter().cloned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::load::load_repository;
    use std::fs;

    /// A CustomResourceDefinition of `example.io` Widgets with `scope`.
    fn crd(scope: &str) -> String {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.io\nspec:\n  group: example.io\n  names:\n    kind: Widget\n  scope: {scope}\n"
        )
    }

    /// A first load of many files (every file typed on its own): the same set and errors as a
    /// whole load, in the same order, also after an edit that changes a CRD's scope.
    #[test]
    fn a_first_load_of_many_files_equals_a_whole_load() {
        let dir = tempfile::tempdir().expect("tempdir");
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

    /// An edit that changes what objects say is put into the last merged set (the objects of
    /// the other files stay the same `Arc`s) and equals a merge and a whole load; an edit that
    /// changes which objects there are, a CRD, a new file, an error, or a file changed twice
    /// between loads is merged instead.
    #[test]
    fn a_spliced_edit_equals_a_merge_and_other_edits_are_merged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let put = |name: &str, text: &str| fs::write(dir.path().join(name), text).expect("write");
        let widget = |size: u32| {
            format!(
                "apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: shop\nspec:\n  size: {size}\n"
            )
        };
        let deploy = |name: &str, replicas: i64| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n  replicas: {replicas}\n"
            )
        };
        let deploys = |web: &str, replicas: i64| format!("{}---\n{}", deploy(web, replicas), deploy("api", 3));
        let policies = |kind: &str, value: &str| {
            format!(
                "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: p\n  namespace: shop\nspec:\n  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n  placement:\n    replicaScheduling:\n      replicaSchedulingType: {kind}\n---\napiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata:\n  name: o\n  namespace: shop\nspec:\n  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n  overrideRules:\n    - overriders:\n        labelsOverrider:\n          - operator: add\n            value:\n              tier: {value}\n"
            )
        };
        let cluster_policy = |name: &str| {
            format!(
                "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\nmetadata:\n  name: cp\nspec:\n  resourceSelectors:\n    - apiVersion: v1\n      kind: Namespace\n      name: {name}\n"
            )
        };
        put("a-crd.yaml", &crd("Namespaced"));
        put("b-widget.yaml", &widget(1));
        put("c-deploy.yaml", &deploys("web", 2));
        put("d-policy.yaml", &policies("Divided", "a"));
        put("e-cpp.yaml", &cluster_policy("shop"));
        let mut cache = ParseCache::default();
        let (_, io) = cache.refresh(dir.path());
        let (mut last, errors) = load_repository_incremental(&mut cache, io);
        assert!(errors.is_empty(), "{errors:?}");
        let step = |cache: &mut ParseCache, last: &mut PolicySet, spliceable: bool, what: &str| -> Option<Spliced> {
            let (changed, io) = cache.refresh(dir.path());
            assert!(changed && io.is_empty(), "{what}");
            let spliced = load_repository_spliced(cache, last);
            assert_eq!(spliced.is_some(), spliceable, "{what}");
            let whole = load_repository(dir.path());
            let (set, positions) = match spliced {
                Some((set, positions)) => (set, Some(positions)),
                None => {
                    let (merged, errors) = load_repository_incremental(cache, Vec::new());
                    assert_eq!(errors, whole.1, "{what}");
                    (merged, None)
                }
            };
            assert!(set == whole.0, "{what}: sets differ");
            if whole.1.is_empty() {
                if let Some(p) = &positions {
                    // The objects of unchanged files are the last set's.
                    let kept = set.templates_at().filter(|(i, _)| !p.templates.contains(i));
                    assert!(kept.into_iter().all(|(i, t)| Arc::ptr_eq(t, &last.templates[i.index()])), "{what}");
                }
                *last = set;
            }
            positions
        };
        let web_at = |set: &PolicySet| set.templates.iter().position(|t| t.key.name == "web").map(SetPos::new);
        put("c-deploy.yaml", &deploys("web", 5));
        let spliced = step(&mut cache, &mut last, true, "replicas edited").expect("spliced");
        assert_eq!(spliced.files, [PathBuf::from("c-deploy.yaml")]);
        assert_eq!(spliced.templates, web_at(&last).into_iter().collect::<Vec<_>>(), "only the edited Deployment");
        put("d-policy.yaml", &policies("Duplicated", "b"));
        let spliced = step(&mut cache, &mut last, true, "a policy and an override edited").expect("spliced");
        assert_eq!((spliced.propagation_policies.len(), spliced.override_policies.len()), (1, 1));
        put("b-widget.yaml", &widget(2));
        put("e-cpp.yaml", &cluster_policy("shop-2"));
        let spliced =
            step(&mut cache, &mut last, true, "a custom resource and a cluster policy edited").expect("spliced");
        assert_eq!(spliced.cluster_propagation_policies.len(), 1);
        assert_eq!(spliced.files.len(), 2);
        put("c-deploy.yaml", &deploys("web-2", 5));
        step(&mut cache, &mut last, false, "a Deployment renamed");
        put("c-deploy.yaml", &format!("{}---\n{}", deploys("web-2", 5), deploy("extra", 1)));
        step(&mut cache, &mut last, false, "a Deployment added");
        put("a-crd.yaml", &crd("Cluster"));
        step(&mut cache, &mut last, false, "a CRD's scope changed");
        put("f-new.yaml", &deploy("new", 1));
        step(&mut cache, &mut last, false, "a file added");
        put("c-deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\n  namespace: shop\n");
        step(&mut cache, &mut last, false, "an invalid name");
        put("c-deploy.yaml", &format!("{}---\n{}", deploys("web-2", 6), deploy("extra", 1)));
        step(&mut cache, &mut last, false, "fixed: the file was typed with an error before");
        put("c-deploy.yaml", &format!("{}---\n{}", deploys("web-2", 7), deploy("extra", 1)));
        step(&mut cache, &mut last, true, "edited again");
        // Two refreshes before the next load: the file's middle version was never typed.
        put("c-deploy.yaml", &format!("{}---\n{}", deploys("web-2", 8), deploy("extra", 1)));
        let _ = cache.refresh(dir.path());
        put("c-deploy.yaml", &format!("{}---\n{}", deploys("web-2", 9), deploy("extra", 1)));
        step(&mut cache, &mut last, false, "changed twice between loads");
    }
}
