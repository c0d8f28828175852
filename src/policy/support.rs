//! What fedsched does with each Karmada field it accepts: the fields it does not implement are
//! named here, as warnings that start with [`UNSUPPORTED`] (file, document, field), so that
//! `check` prints them and every pass logs them ([`super::validate::warnings`] includes them).
//! A field that is implemented has a behaviour test; the unit test of this module walks every
//! field of the policy types and fails on one that is neither (see `FIELDS` in the tests).
//!
//! Implemented elsewhere and therefore not warned about: `activationPreference: Lazy` (the
//! decide stage keeps the spec of the last decision in force until the template changes),
//! `suspension` (the publish keeps the
//! workload's files), `preserveResourcesOnDeletion` (the GitOps tools' prune opt-outs on the
//! rendered objects), `dependentOverrides` whose OverridePolicies are in the repository (a pass
//! reads the whole repository at once, so they are always present), `conflictResolution:
//! Overwrite` (what Argo CD and Flux do with an object that already exists in a member).

use serde_json::Value;

use super::types::{ConflictResolution, PropagationSpec};
use super::{LoadError, Policy, PolicySet};

/// How every warning of this module begins.
pub const UNSUPPORTED: &str = "accepted, not supported:";

/// Karmada's default scheduler name (`schedulerName` may name only that one here).
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// The warnings for fields fedsched accepts and does not implement.
pub fn unsupported(set: &PolicySet) -> Vec<LoadError> {
    let mut out = Vec::new();
    for p in &set.propagation_policies {
        propagation(&mut out, set, p, false);
    }
    for p in &set.cluster_propagation_policies {
        propagation(&mut out, set, p, true);
    }
    clusters(&mut out, set);
    interpreters(&mut out, set);
    out
}

fn propagation(out: &mut Vec<LoadError>, set: &PolicySet, p: &Policy<PropagationSpec>, cluster_scoped: bool) {
    let s = &p.spec;
    let mut warn = |field: &str, message: String| out.push(LoadError::at(&p.source, field, message));
    if s.association {
        warn(
            "spec.association",
            format!(
                "{UNSUPPORTED} deprecated by Karmada in favour of propagateDeps and without effect; use propagateDeps"
            ),
        );
    }
    for (i, name) in s.dependent_overrides.iter().enumerate() {
        let present = if cluster_scoped {
            set.cluster_override_policies.iter().any(|o| &o.meta.name == name)
        } else {
            set.override_policies.iter().any(|o| &o.meta.name == name && o.meta.namespace == p.meta.namespace)
        };
        if !present {
            warn(
                &format!("spec.dependentOverrides[{i}]"),
                format!(
                    "{UNSUPPORTED} `{name}` is not in the repository: Karmada waits for it before propagating, \
                     fedsched propagates without it"
                ),
            );
        }
    }
    if let Some(name) = s.scheduler_name.as_deref().filter(|n| !n.is_empty() && *n != DEFAULT_SCHEDULER) {
        warn(
            "spec.schedulerName",
            format!(
                "{UNSUPPORTED} `{name}`: fedsched schedules every policy itself, as Karmada's `{DEFAULT_SCHEDULER}`; \
                 Karmada would leave these templates to the scheduler named"
            ),
        );
    }
    if let Some(f) = &s.failover {
        let app = f.application.as_ref().and_then(|a| a.state_preservation.as_ref()).map(|_| "application");
        let cl = f.cluster.as_ref().and_then(|c| c.state_preservation.as_ref()).map(|_| "cluster");
        for kind in app.into_iter().chain(cl) {
            warn(
                &format!("spec.failover.{kind}.statePreservation"),
                format!(
                    "{UNSUPPORTED} the labels would come from the workload's status on the cluster it leaves, \
                     which fedsched does not read; the workload moves without them"
                ),
            );
        }
    }
    if s.conflict_resolution == Some(ConflictResolution::Abort) {
        warn(
            "spec.conflictResolution",
            format!(
                "{UNSUPPORTED} Abort: fedsched cannot see objects that already exist in a member, and Argo CD and \
                 Flux take such an object over when they apply the file (Overwrite)"
            ),
        );
    }
    if s.schedule_priority.is_some() {
        warn(
            "spec.schedulePriority",
            format!(
                "{UNSUPPORTED} a pass decides workloads in repository order (file, then document), not by \
                 priority class"
            ),
        );
    }
    if s.placement.workload_affinity.is_some() {
        warn(
            "spec.placement.workloadAffinity",
            format!("{UNSUPPORTED} workloads are placed without regard to the groups of other workloads"),
        );
    }
}

fn clusters(out: &mut Vec<LoadError>, set: &PolicySet) {
    for c in set.clusters.iter() {
        let mut warn = |field: &str, message: String| out.push(LoadError::at(&c.source, field, message));
        for (field, set) in [
            ("spec.secretRef", c.spec.secret_ref.is_some()),
            ("spec.impersonatorSecretRef", c.spec.impersonator_secret_ref.is_some()),
        ] {
            if set {
                warn(
                    field,
                    format!(
                        "{UNSUPPORTED} fedsched reads no Secret of a control plane; the credentials of a live \
                         member come from [clusters.{}] in the configuration",
                        c.meta.name
                    ),
                );
            }
        }
        if !c.spec.proxy_header.is_empty() {
            warn("spec.proxyHeader", format!("{UNSUPPORTED} live polls send no extra proxy headers"));
        }
        if c.status.as_ref().is_none_or(|s| s.api_enablements.is_empty()) {
            warn(
                "status.apiEnablements",
                "absent: fedsched treats this cluster as serving every API (Karmada's APIEnablement filter \
                 would send it nothing) unless it is polled live, when its API server's discovery gives the \
                 list; list the cluster's APIs to have workloads of other kinds kept away"
                    .into(),
            );
        }
    }
}

/// Customization operations that need the status of the workload in its members (which the
/// passes do not read; `healthInterpretation` is read by a progressive rollout's gates) or
/// that concern objects the members changed (which fedsched never sees).
const UNUSED_OPERATIONS: &[(&str, &str)] = &[
    ("statusAggregation", "fedsched writes no status back into the templates"),
    ("statusReflection", "fedsched writes no status back into the templates"),
    (
        "retention",
        "fedsched never reads the objects in the members; the GitOps tool decides which of their fields it keeps \
         (Argo CD ignoreDifferences, Flux's server-side apply field managers)",
    ),
];

fn interpreters(out: &mut Vec<LoadError>, set: &PolicySet) {
    for o in &set.interpreter_objects {
        if o.key.kind == "ResourceInterpreterWebhookConfiguration" {
            out.push(LoadError::at(
                &o.source,
                "webhooks",
                format!("{UNSUPPORTED} fedsched calls no interpreter webhook; use a ResourceInterpreterCustomization"),
            ));
            continue;
        }
        let Some(ops) = o.object.pointer("/spec/customizations").and_then(Value::as_object) else { continue };
        for (op, why) in UNUSED_OPERATIONS {
            if ops.contains_key(*op) {
                out.push(LoadError::at(&o.source, format!("spec.customizations.{op}"), format!("{UNSUPPORTED} {why}")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use super::*;
    use crate::policy::load::load_sources;

    /// What fedsched does with a field (and everything under it).
    enum Support {
        /// Implemented; the named test (in `src/` or `tests/`) fails without it.
        Tested(&'static str),
        /// Accepted and named in a warning by [`unsupported`] when set.
        Warned,
        /// Accepted and meaningless for a writer of GitOps files; docs/guide/karmada.md says why.
        NotApplicable(&'static str),
    }
    use Support::*;

    /// Every field of the policy types, by path (a path covers the fields under it).
    const FIELDS: &[(&str, Support)] = &[
        // PropagationPolicy / ClusterPropagationPolicy
        ("pp.spec.resourceSelectors", Tested("claim_pp_beats_cpp_and_namespaces")),
        ("pp.spec.association", Warned),
        ("pp.spec.propagateDeps", Tested("dependencies_follow_their_workload")),
        ("pp.spec.placement.clusterAffinity", Tested("cluster_affinity")),
        ("pp.spec.placement.clusterAffinities", Tested("affinity_groups_first_fitting_term_and_stickiness")),
        ("pp.spec.placement.clusterTolerations", Tested("taints_filter_unless_tolerated_or_already_there")),
        ("pp.spec.placement.spreadConstraints", Tested("spread_by_region_zone_provider_and_label")),
        ("pp.spec.placement.replicaScheduling", Tested("nginx_sample_is_divided_weighted_one_to_one")),
        ("pp.spec.placement.workloadAffinity", Warned),
        ("pp.spec.priority", Tested("selector_priorities")),
        ("pp.spec.preemption", Tested("a_claimed_template_keeps_its_policy_until_preempted")),
        ("pp.spec.dependentOverrides", Warned),
        ("pp.spec.schedulerName", Warned),
        ("pp.spec.failover.application.decisionConditions", Tested("application_failover_after_its_toleration")),
        ("pp.spec.failover.application.purgeMode", Tested("purge_modes_directly_and_never")),
        (
            "pp.spec.failover.application.gracePeriodSeconds",
            Tested("grace_period_purges_but_never_leaves_a_workload_nowhere"),
        ),
        ("pp.spec.failover.application.statePreservation", Warned),
        ("pp.spec.failover.cluster.purgeMode", Tested("purge_modes_directly_and_never")),
        ("pp.spec.failover.cluster.statePreservation", Warned),
        ("pp.spec.conflictResolution", Warned),
        ("pp.spec.activationPreference", Tested("lazy_activation_applies_a_policy_change_when_the_template_changes")),
        ("pp.spec.suspension", Tested("suspended_dispatching_keeps_every_file_as_it_was_until_resumed")),
        (
            "pp.spec.preserveResourcesOnDeletion",
            Tested("preserve_resources_on_deletion_marks_objects_for_argo_cd_and_flux_before_their_removal"),
        ),
        ("pp.spec.schedulePriority", Warned),
        // OverridePolicy / ClusterOverridePolicy
        ("op.spec.resourceSelectors", Tested("order_cop_first_then_op_by_specificity_then_name")),
        ("op.spec.overrideRules.targetCluster", Tested("plaintext_and_rule_order_and_target_cluster")),
        ("op.spec.overrideRules.overriders.plaintext", Tested("karmada_plaintext_and_cluster_override_examples")),
        ("op.spec.overrideRules.overriders.imageOverrider", Tested("image_overrider_all_containers_and_predicate")),
        ("op.spec.overrideRules.overriders.commandOverrider", Tested("command_and_args_table")),
        ("op.spec.overrideRules.overriders.argsOverrider", Tested("command_and_args_table")),
        ("op.spec.overrideRules.overriders.labelsOverrider", Tested("labels_and_annotations_table")),
        ("op.spec.overrideRules.overriders.annotationsOverrider", Tested("labels_and_annotations_table")),
        ("op.spec.overrideRules.overriders.fieldOverrider", Tested("field_overrider_json_and_yaml")),
        ("op.spec.targetCluster", Tested("deprecated_override_pair_and_api_enablements_apply")),
        ("op.spec.overriders", Tested("deprecated_override_pair_and_api_enablements_apply")),
        // ClusterTaintPolicy
        ("ctp.spec", Tested("a_cluster_taint_policy_taints_from_conditions_evicts_and_lets_back")),
        // Cluster
        ("cluster.spec.id", NotApplicable("an identity; no decision reads it")),
        ("cluster.spec.syncMode", NotApplicable("members pull fedsched's files through their GitOps tool either way")),
        ("cluster.spec.apiEndpoint", Tested("render_polls_the_fleet_over_https_and_never_writes_tokens")),
        ("cluster.spec.secretRef", Warned),
        ("cluster.spec.impersonatorSecretRef", Warned),
        ("cluster.spec.insecureSkipTLSVerification", Tested("endpoint_config_applies_tls_and_proxy_fields")),
        ("cluster.spec.proxyURL", Tested("endpoint_config_applies_tls_and_proxy_fields")),
        ("cluster.spec.proxyHeader", Warned),
        ("cluster.spec.provider", Tested("spread_by_region_zone_provider_and_label")),
        ("cluster.spec.region", Tested("spread_by_region_zone_provider_and_label")),
        ("cluster.spec.zone", Tested("cluster_zone_migrates_and_apply_is_idempotent")),
        ("cluster.spec.zones", Tested("spread_by_region_zone_provider_and_label")),
        ("cluster.spec.taints", Tested("taints_filter_unless_tolerated_or_already_there")),
        ("cluster.spec.resourceModels", Tested("modelings_grade_each_node_by_its_scarcest_resource")),
        (
            "cluster.status.kubernetesVersion",
            NotApplicable("informational; Karmada's scheduler does not read it either"),
        ),
        ("cluster.status.apiEnablements", Tested("deprecated_override_pair_and_api_enablements_apply")),
        ("cluster.status.conditions", Tested("demo_places_replicas_as_documented")),
        ("cluster.status.nodeSummary", NotApplicable("informational; Karmada's scheduler does not read it either")),
        ("cluster.status.resourceSummary", Tested("a_cluster_without_a_resource_summary_takes_no_replica")),
    ];

    /// Documents that set every field of the policy types (a field left out serialises as
    /// null or empty and fails the test).
    const MAXIMAL: &str = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: p, namespace: ns}
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    namespace: ns
    name: web
    labelSelector: &ls {matchLabels: {a: b}, matchExpressions: [{key: k, operator: In, values: [v]}]}
  association: true
  propagateDeps: true
  placement:
    clusterAffinity: &aff {labelSelector: *ls, fieldSelector: {matchExpressions: [{key: region, operator: In, values: [r]}]}, clusterNames: [a], exclude: [b]}
    clusterAffinities: [{affinityName: x, labelSelector: *ls, fieldSelector: {matchExpressions: [{key: region, operator: In, values: [r]}]}, clusterNames: [a], exclude: [b], overflowAffinities: [{affinityName: y, labelSelector: *ls, fieldSelector: {matchExpressions: [{key: region, operator: In, values: [r]}]}, clusterNames: [a], exclude: [b]}]}]
    clusterTolerations: [{key: k, operator: Equal, value: v, effect: NoExecute, tolerationSeconds: 30}]
    spreadConstraints: [{spreadByField: region, spreadByLabel: l, maxGroups: 2, minGroups: 1}]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {staticWeightList: [{targetCluster: *aff, weight: 1}], dynamicWeight: AvailableReplicas}
    workloadAffinity: {affinity: {groupByLabelKey: g}, antiAffinity: {groupByLabelKey: h}}
  priority: 1
  preemption: Always
  dependentOverrides: [missing]
  schedulerName: other
  failover:
    application:
      decisionConditions: {tolerationSeconds: 30}
      purgeMode: Gracefully
      gracePeriodSeconds: 60
      statePreservation: {rules: [{aliasLabelName: a, jsonPath: "{.x}"}]}
    cluster:
      purgeMode: Directly
      statePreservation: {rules: [{aliasLabelName: a, jsonPath: "{.x}"}]}
  conflictResolution: Abort
  activationPreference: Lazy
  suspension: {dispatching: true, dispatchingOnClusters: {clusterNames: [a]}}
  preserveResourcesOnDeletion: true
  schedulePriority: {priorityClassSource: KubePriorityClass, priorityClassName: high}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: o, namespace: ns}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: ns, name: web, labelSelector: {matchLabels: {a: b}, matchExpressions: [{key: k, operator: In, values: [v]}]}}]
  overrideRules:
  - targetCluster: &aff {labelSelector: {matchLabels: {a: b}, matchExpressions: [{key: k, operator: In, values: [v]}]}, fieldSelector: {matchExpressions: [{key: region, operator: In, values: [r]}]}, clusterNames: [a], exclude: [b]}
    overriders: &o
      plaintext: [{path: /a, operator: add, value: 1}]
      imageOverrider: [{predicate: {path: /a}, component: Tag, operator: replace, value: v}]
      commandOverrider: [{containerName: c, operator: add, value: [x]}]
      argsOverrider: [{containerName: c, operator: add, value: [x]}]
      labelsOverrider: [{operator: add, value: {a: b}}]
      annotationsOverrider: [{operator: add, value: {a: b}}]
      fieldOverrider: [{fieldPath: /a, json: [{subPath: /b, operator: add, value: 1}], yaml: [{subPath: /b, operator: add, value: 1}]}]
  targetCluster: *aff
  overriders: *o
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: t}
spec:
  targetClusters: {labelSelector: {matchLabels: {a: b}, matchExpressions: [{key: k, operator: In, values: [v]}]}, fieldSelector: {matchExpressions: [{key: region, operator: In, values: [r]}]}, clusterNames: [a], exclude: [b]}
  addOnConditions: [{conditionType: Ready, operator: In, statusValues: ["False"]}]
  removeOnConditions: [{conditionType: Ready, operator: In, statusValues: ["True"]}]
  taints: [{key: k, effect: NoSchedule, value: v}]
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: a}
spec:
  id: x
  syncMode: Push
  apiEndpoint: https://a
  secretRef: {namespace: n, name: s}
  impersonatorSecretRef: {namespace: n, name: s}
  insecureSkipTLSVerification: true
  proxyURL: http://proxy
  proxyHeader: {a: b}
  provider: p
  region: r
  zone: z
  zones: [z]
  taints: [{key: k, value: v, effect: NoSchedule, timeAdded: "2024-01-01T00:00:00Z"}]
  resourceModels: [{grade: 0, ranges: [{name: cpu, min: 0, max: "1"}]}]
status:
  kubernetesVersion: v1.33.0
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  conditions: [{type: Ready, status: "True", reason: r, message: m, lastTransitionTime: "2024-01-01T00:00:00Z"}]
  nodeSummary: {totalNum: 1, readyNum: 1}
  resourceSummary: {allocatable: {cpu: "1"}, allocating: {cpu: "1"}, allocated: {cpu: "1"}, allocatableModelings: [{grade: 0, count: 1}]}
"#;

    /// Every key path of a serialised value (array elements share their array's path), and
    /// those whose value is null or empty.
    fn paths(prefix: &str, v: &Value, all: &mut BTreeSet<String>, empty: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let p = format!("{prefix}.{k}");
                    all.insert(p.clone());
                    paths(&p, v, all, empty);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| paths(prefix, v, all, empty)),
            Value::Null => {
                empty.insert(prefix.to_string());
            }
            _ => {}
        }
        if matches!(v, Value::Array(a) if a.is_empty()) || matches!(v, Value::Object(m) if m.is_empty()) {
            empty.insert(prefix.to_string());
        }
    }

    fn entry(path: &str) -> Option<&'static (&'static str, Support)> {
        FIELDS.iter().filter(|(f, _)| path == *f || path.starts_with(&format!("{f}."))).max_by_key(|(f, _)| f.len())
    }

    /// Every `fn NAME(` of the crate's sources and tests.
    fn test_names() -> String {
        fn walk(dir: &Path, out: &mut String) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut out = String::new();
        walk(&root.join("src"), &mut out);
        walk(&root.join("tests"), &mut out);
        out
    }

    #[test]
    fn every_field_is_implemented_with_a_test_or_warned_about() {
        let (set, errors) = load_sources([(PathBuf::from("max.yaml"), MAXIMAL.to_string())]);
        assert!(errors.is_empty(), "{errors:?}");
        let c = &set.clusters[0];
        let docs = [
            ("pp", serde_json::json!({"spec": set.propagation_policies[0].spec})),
            ("op", serde_json::json!({"spec": set.override_policies[0].spec})),
            ("ctp", serde_json::json!({"spec": set.cluster_taint_policies[0].spec})),
            ("cluster", serde_json::json!({"spec": c.spec, "status": c.status})),
        ];
        let (mut all, mut empty) = (BTreeSet::new(), BTreeSet::new());
        for (kind, doc) in &docs {
            paths(kind, doc, &mut all, &mut empty);
        }
        assert!(empty.is_empty(), "set these fields in MAXIMAL (and classify them in FIELDS): {empty:?}");
        // A path that holds classified fields is a container, not a field of its own.
        let container = |p: &str| FIELDS.iter().any(|(f, _)| f.starts_with(&format!("{p}.")));
        let unclassified: Vec<&String> = all.iter().filter(|p| entry(p).is_none() && !container(p)).collect();
        assert!(unclassified.is_empty(), "fields neither implemented nor warned about: {unclassified:?}");
        for (f, _) in FIELDS {
            assert!(all.contains(*f), "FIELDS names {f}, which is no field");
        }
        // Warned fields: a warning names each of them (file, document, field).
        let warnings = unsupported(&set);
        let source_of = |kind: &str| match kind {
            "pp" => &set.propagation_policies[0].source,
            "op" => &set.override_policies[0].source,
            "ctp" => &set.cluster_taint_policies[0].source,
            _ => &c.source,
        };
        let names = test_names();
        for (f, support) in FIELDS {
            let (kind, field) = f.split_once('.').unwrap_or((f, ""));
            match support {
                Warned => {
                    let src = source_of(kind);
                    let hit = warnings.iter().any(|w| {
                        let plain: String = w.field.split('[').next().unwrap_or("").to_string()
                            + w.field.split_once(']').map_or("", |(_, rest)| rest);
                        w.file == src.file && w.document == Some(src.document) && plain == field
                    });
                    assert!(hit, "{f} is not warned about: {warnings:#?}");
                }
                Tested(name) => {
                    assert!(names.contains(&format!("fn {name}(")), "{f}: no test named {name}");
                    assert!(
                        !warnings.iter().any(|w| w.field == field && w.message.starts_with(UNSUPPORTED)),
                        "{f} is implemented but warned about"
                    );
                }
                NotApplicable(why) => assert!(!why.is_empty()),
            }
        }
        // Every warning of this module says what it is.
        for w in &warnings {
            assert!(w.message.starts_with(UNSUPPORTED) || w.field == "status.apiEnablements", "{w}");
        }
    }

    #[test]
    fn defaults_and_implemented_values_are_not_warned_about() {
        let doc = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p, namespace: ns}\n\
                   spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  \
                   conflictResolution: Overwrite\n  schedulerName: default-scheduler\n  dependentOverrides: [o]\n---\n\
                   apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata: {name: o, namespace: ns}\nspec: {}\n";
        let (set, errors) = load_sources([(PathBuf::from("t.yaml"), doc.to_string())]);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(unsupported(&set).is_empty(), "{:?}", unsupported(&set));
    }
}
