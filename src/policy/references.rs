//! References that point at nothing in the repository: a cluster name no Cluster object has, a
//! resource selector no template matches, a WorkloadRebalancer entry naming no template, a
//! `metadata` key that is no field of Kubernetes' `ObjectMeta` (`nmae:`). Karmada accepts all of
//! them (a member can join later, a template can be added later), and so does fedsched; each is
//! a warning of [`super::validate::warnings`] naming the file, the document and the field, so a
//! typo is never silent. A close existing name is offered (`did you mean`).

use std::collections::BTreeSet;

use super::load::{OBJECT_META_FIELDS, nearest, unknown_metadata_fields};
use super::matching::selector_priority;
use super::types::{ClusterAffinity, ObjectMeta, OverrideSpec, PropagationSpec, ResourceSelector};
use super::{LoadError, ObjectKey, PolicySet, Source};

/// Every warning of this module for `set`.
pub fn warnings(set: &PolicySet) -> Vec<LoadError> {
    let mut out = Vec::new();
    let clusters: Vec<&str> = set.clusters.iter().map(|c| c.meta.name.as_str()).collect();
    let mut names = ClusterNames { known: &clusters, out: &mut out };
    for p in set.propagation_policies.iter().chain(&set.cluster_propagation_policies) {
        names.propagation(&p.source, &p.spec);
    }
    for p in set.override_policies.iter().chain(&set.cluster_override_policies) {
        names.overrides(&p.source, &p.spec);
    }
    for p in &set.cluster_taint_policies {
        if let Some(a) = &p.spec.target_clusters {
            names.affinity(&p.source, "spec.targetClusters", a);
        }
    }
    for p in &set.propagation_policies {
        unmatched(set, &p.source, p.namespace(), &p.spec.resource_selectors, "PropagationPolicy", &mut out);
    }
    for p in &set.cluster_propagation_policies {
        unmatched(set, &p.source, None, &p.spec.resource_selectors, "ClusterPropagationPolicy", &mut out);
    }
    for p in &set.override_policies {
        unmatched(set, &p.source, p.namespace(), &p.spec.resource_selectors, "OverridePolicy", &mut out);
    }
    for p in &set.cluster_override_policies {
        unmatched(set, &p.source, None, &p.spec.resource_selectors, "ClusterOverridePolicy", &mut out);
    }
    for p in &set.workload_rebalancers {
        for (i, w) in p.spec.workloads.iter().enumerate() {
            let ns = w.namespace.as_deref().filter(|n| !n.is_empty());
            let key = ObjectKey::new(&w.api_version, &w.kind, ns, &w.name);
            if set.template(&key).is_none() {
                out.push(LoadError::at(
                    &p.source,
                    format!("spec.workloads[{i}]"),
                    format!(
                        "{} {} names no template in the repository: accepted (as Karmada accepts it), it \
                         rebalances nothing and is reported NotFound",
                        w.api_version,
                        key.display_ref()
                    ),
                ));
            }
        }
    }
    metadata(set, &mut out);
    out
}

/// The cluster-name fields of the policies, against the Cluster objects of the repository.
struct ClusterNames<'a> {
    known: &'a [&'a str],
    out: &'a mut Vec<LoadError>,
}

impl ClusterNames<'_> {
    fn propagation(&mut self, source: &Source, spec: &PropagationSpec) {
        let placement = &spec.placement;
        if let Some(a) = &placement.cluster_affinity {
            self.affinity(source, "spec.placement.clusterAffinity", a);
        }
        for (i, t) in placement.cluster_affinities.iter().enumerate() {
            let at = format!("spec.placement.clusterAffinities[{i}]");
            self.names(source, &format!("{at}.clusterNames"), &t.cluster_names);
            self.names(source, &format!("{at}.exclude"), &t.exclude);
            for (j, o) in t.overflow_affinities.iter().enumerate() {
                self.names(source, &format!("{at}.overflowAffinities[{j}].clusterNames"), &o.cluster_names);
                self.names(source, &format!("{at}.overflowAffinities[{j}].exclude"), &o.exclude);
            }
        }
        let weights = placement.replica_scheduling.as_ref().and_then(|r| r.weight_preference.as_ref());
        for (i, w) in weights.map(|w| w.static_weight_list.as_slice()).unwrap_or_default().iter().enumerate() {
            let at = format!("spec.placement.replicaScheduling.weightPreference.staticWeightList[{i}].targetCluster");
            self.affinity(source, &at, &w.target_cluster);
        }
        if let Some(on) = spec.suspension.as_ref().and_then(|s| s.dispatching_on_clusters.as_ref()) {
            self.names(source, "spec.suspension.dispatchingOnClusters.clusterNames", &on.cluster_names);
        }
    }

    fn overrides(&mut self, source: &Source, spec: &OverrideSpec) {
        for (i, r) in spec.override_rules.iter().enumerate() {
            if let Some(a) = &r.target_cluster {
                self.affinity(source, &format!("spec.overrideRules[{i}].targetCluster"), a);
            }
        }
        if let Some(a) = &spec.target_cluster {
            self.affinity(source, "spec.targetCluster", a);
        }
    }

    fn affinity(&mut self, source: &Source, at: &str, a: &ClusterAffinity) {
        self.names(source, &format!("{at}.clusterNames"), &a.cluster_names);
        self.names(source, &format!("{at}.exclude"), &a.exclude);
    }

    fn names(&mut self, source: &Source, field: &str, names: &[String]) {
        for (i, n) in names.iter().enumerate() {
            if self.known.contains(&n.as_str()) {
                continue;
            }
            let hint =
                nearest(n, self.known.iter().copied()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
            self.out.push(LoadError::at(
                source,
                format!("{field}[{i}]"),
                format!(
                    "`{n}` names no Cluster in the repository{hint}: accepted (a member can join later, as Karmada \
                     allows), it matches no cluster until one of that name exists"
                ),
            ));
        }
    }
}

/// Resource selectors of a policy that match no template of the repository. A PropagationPolicy
/// or OverridePolicy (`namespace` Some) selects only the templates of its own namespace; a
/// selector naming another namespace is warned about by `validate::warnings` already.
fn unmatched(
    set: &PolicySet,
    source: &Source,
    namespace: Option<&str>,
    selectors: &[ResourceSelector],
    kind: &str,
    out: &mut Vec<LoadError>,
) {
    for (i, sel) in selectors.iter().enumerate() {
        if let (Some(ns), Some(sel_ns)) = (namespace, sel.namespace.as_deref().filter(|n| !n.is_empty()))
            && ns != sel_ns
        {
            continue;
        }
        let matches = set.templates.iter().any(|t| {
            namespace.is_none_or(|ns| t.key.namespace.as_deref() == Some(ns)) && selector_priority(sel, t).is_some()
        });
        if matches {
            continue;
        }
        let what = match sel.name.as_deref().filter(|n| !n.is_empty()) {
            Some(name) => {
                let same_kind = set.templates.iter().filter(|t| {
                    t.key.api_version == sel.api_version
                        && t.key.kind == sel.kind
                        && namespace.is_none_or(|ns| t.key.namespace.as_deref() == Some(ns))
                });
                let hint = nearest(name, same_kind.map(|t| t.key.name.as_str()))
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                format!("{} {} named `{name}`{hint}", sel.api_version, sel.kind)
            }
            None => format!("{} {}", sel.api_version, sel.kind),
        };
        let scope = namespace.map(|ns| format!(" in namespace {ns}")).unwrap_or_default();
        out.push(LoadError::at(
            source,
            format!("spec.resourceSelectors[{i}]"),
            format!(
                "matches no template of the repository ({what}{scope}): accepted (a template can be added \
                 later), this {kind} selects nothing with it"
            ),
        ));
    }
}

/// `metadata` keys that are no field of Kubernetes' `ObjectMeta`, on every object the set keeps.
fn metadata(set: &PolicySet, out: &mut Vec<LoadError>) {
    // A `kind: List` document's items share its source: one warning per document and key.
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut push = |source: &Source, unknown: &[String], out: &mut Vec<LoadError>| {
        for k in unknown {
            if !seen.insert((source.to_string(), k.clone())) {
                continue;
            }
            let hint = nearest(k, OBJECT_META_FIELDS.iter().copied())
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            out.push(LoadError::at(
                source,
                format!("metadata.{k}"),
                format!(
                    "unknown field of metadata{hint}: ignored (Kubernetes' strict field validation would refuse \
                     it)"
                ),
            ));
        }
    };
    let meta = |m: &ObjectMeta| m.unknown_fields.clone();
    for t in &set.templates {
        push(&t.source, &meta(&t.meta), out);
    }
    for p in &set.propagation_policies {
        push(&p.source, &meta(&p.meta), out);
    }
    for p in &set.cluster_propagation_policies {
        push(&p.source, &meta(&p.meta), out);
    }
    for p in set.override_policies.iter().chain(&set.cluster_override_policies) {
        push(&p.source, &meta(&p.meta), out);
    }
    for p in &set.cluster_taint_policies {
        push(&p.source, &meta(&p.meta), out);
    }
    for p in &set.workload_rebalancers {
        push(&p.source, &meta(&p.meta), out);
    }
    for p in &set.workload_interpreters {
        push(&p.source, &meta(&p.meta), out);
    }
    for c in set.clusters.iter() {
        push(&c.source, &meta(&c.meta), out);
    }
    for o in &set.interpreter_objects {
        let unknown = o.object.get("metadata").map(unknown_metadata_fields).unwrap_or_default();
        push(&o.source, &unknown, out);
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::policy::load::load_sources;

    fn warnings(text: &str) -> Vec<String> {
        let (set, errors) = load_sources([(PathBuf::from("p.yaml"), text.to_string())]);
        assert!(errors.is_empty(), "{errors:?}");
        super::warnings(&set).iter().map(ToString::to_string).collect()
    }

    const CLUSTERS: &str = "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: eu-west-a}\n\
spec: {syncMode: Push}\n---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: eu-west-b}\n\
spec: {syncMode: Push}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: shop}\n\
spec: {replicas: 1}\n---\n";

    #[test]
    fn dangling_references_are_warned_about_by_file_document_and_field() {
        let text = format!(
            "{CLUSTERS}apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: api, namespace: shop, nmae: typo}}
spec:
  resourceSelectors:
  - {{apiVersion: apps/v1, kind: Deployment, name: api}}
  - {{apiVersion: apps/v1, kind: Deployment, name: apj}}
  placement:
    clusterAffinity: {{clusterNames: [eu-west-a, eu-wset-b], exclude: [gone]}}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList: [{{targetCluster: {{clusterNames: [eu-west-z]}}, weight: 1}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {{name: api, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: api}}]
  overrideRules:
  - targetCluster: {{clusterNames: [us-east-gpu]}}
    overriders: {{labelsOverrider: [{{operator: add, value: {{a: b}}}}]}}
---
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {{name: rb}}
spec:
  workloads: [{{apiVersion: apps/v1, kind: Deployment, name: nope, namespace: shop}}]
"
        );
        let w = warnings(&text);
        let at = |prefix: &str| w.iter().find(|l| l.starts_with(prefix)).cloned().unwrap_or_default();
        assert!(at("p.yaml: document 4: metadata.nmae: ").contains("did you mean `name`"), "{w:#?}");
        assert!(
            at("p.yaml: document 4: spec.placement.clusterAffinity.clusterNames[1]: ")
                .contains("`eu-wset-b` names no Cluster in the repository (did you mean `eu-west-b`?)"),
            "{w:#?}"
        );
        assert!(at("p.yaml: document 4: spec.placement.clusterAffinity.exclude[0]: ").contains("`gone`"), "{w:#?}");
        let weights = "p.yaml: document 4: spec.placement.replicaScheduling.weightPreference.staticWeightList[0].\
                       targetCluster.clusterNames[0]: ";
        assert!(at(weights).contains("`eu-west-z`"), "{w:#?}");
        assert!(at("p.yaml: document 4: spec.resourceSelectors[1]: ").contains("did you mean `api`"), "{w:#?}");
        assert!(at("p.yaml: document 4: spec.resourceSelectors[0]").is_empty(), "{w:#?}");
        assert!(
            at("p.yaml: document 5: spec.overrideRules[0].targetCluster.clusterNames[0]: ").contains("`us-east-gpu`"),
            "{w:#?}"
        );
        assert!(at("p.yaml: document 6: spec.workloads[0]: ").contains("Deployment/shop/nope"), "{w:#?}");
        assert_eq!(w.len(), 7, "{w:#?}");
    }

    #[test]
    fn a_repository_whose_references_all_resolve_has_none() {
        let text = format!(
            "{CLUSTERS}apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {{name: all, labels: {{a: b}}, annotations: {{c: d}}, uid: x, resourceVersion: '1', finalizers: []}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment}}]
  placement: {{clusterAffinity: {{clusterNames: [eu-west-a, eu-west-b]}}}}
"
        );
        assert_eq!(warnings(&text), Vec::<String>::new());
    }
}
