//! Semantic validation of Karmada policies (the rules of Karmada's validating webhook,
//! `pkg/util/validation/validation.go`, and of the Cluster API, `pkg/apis/cluster/validation`).
//!
//! Run it after [`super::defaults::apply`]: some rules (a PropagationPolicy's selector
//! namespace must equal the policy namespace) are written for defaulted objects, as in
//! Karmada where the mutating webhook runs before the validating one. Enum values and
//! required fields are already enforced by the typed decode in [`super::load`].
//!
//! Every error names the file, the document and the field path, e.g.
//! `spec.placement.spreadConstraints[1].maxGroups`.

use std::collections::{BTreeMap, HashSet};

use super::types::{
    ClusterAffinity, ClusterSpec, ClusterTaintPolicySpec, FieldSelector, LabelSelector, OverrideSpec,
    OverriderOperator, Overriders, Placement, Preemption, PropagationSpec, PurgeMode, QuantityValue,
    ReplicaDivisionPreference, ReplicaSchedulingType, ResourceSelector, SelectorOperator, SpreadByField, TaintEffect,
    TolerationOperator, WorkloadRebalancerSpec,
};
use super::{LoadError, PolicySet, Source};

/// Maximum length of `clusterAffinities[].affinityName` (and overflow names).
pub const MAX_AFFINITY_NAME_LEN: usize = 32;

/// Validates every policy and Cluster of the set and returns all errors (empty = valid).
pub fn validate(set: &PolicySet) -> Vec<LoadError> {
    let mut errors = Vec::new();
    for p in &set.propagation_policies {
        let mut v = V::new(&p.source, &mut errors);
        propagation(&mut v, &p.spec);
    }
    for p in &set.cluster_propagation_policies {
        let mut v = V::new(&p.source, &mut errors);
        propagation(&mut v, &p.spec);
    }
    for p in set.override_policies.iter().chain(&set.cluster_override_policies) {
        let mut v = V::new(&p.source, &mut errors);
        override_spec(&mut v, &p.spec);
    }
    for p in &set.cluster_taint_policies {
        let mut v = V::new(&p.source, &mut errors);
        taint_policy(&mut v, &p.spec);
    }
    for p in &set.workload_rebalancers {
        let mut v = V::new(&p.source, &mut errors);
        rebalancer(&mut v, &p.spec);
    }
    for c in set.clusters.iter() {
        let mut v = V::new(&c.source, &mut errors);
        cluster(&mut v, &c.spec);
        let agent = super::types::GITOPS_AGENT_ANNOTATION;
        if let Some(value) = c.meta.annotations.get(agent)
            && let Err(why) = super::types::agent_object(value)
        {
            v.err(format!("metadata.annotations[{agent}]"), why);
        }
    }
    for p in &set.rollout_policies {
        let mut v = V::new(&p.source, &mut errors);
        rollout(&mut v, &p.spec);
    }
    errors
}

/// Findings that do not make the repository invalid but that a user must hear of (`check`
/// prints them, every pass logs them): what Karmada accepts and fedsched honours exactly,
/// where the YAML likely does not do what its author meant. Same form as errors (file,
/// document, field, message).
pub fn warnings(set: &PolicySet) -> Vec<LoadError> {
    let mut out = Vec::new();
    for p in &set.propagation_policies {
        let Some(ns) = p.namespace() else { continue };
        for (i, sel) in p.spec.resource_selectors.iter().enumerate() {
            if let Some(sel_ns) = sel.namespace.as_deref()
                && !sel_ns.is_empty()
                && sel_ns != ns
            {
                out.push(LoadError::at(
                    &p.source,
                    format!("spec.resourceSelectors[{i}].namespace"),
                    format!(
                        "`{sel_ns}` is not the policy's own namespace `{ns}`: a PropagationPolicy selects only \
                         templates of its namespace, so this selector matches nothing (as in Karmada); use a \
                         ClusterPropagationPolicy to select across namespaces"
                    ),
                ));
            }
        }
    }
    out.extend(super::support::unsupported(set));
    // A namespace on a cluster-scoped kind: the API server ignores it, and so does fedsched
    // (the file goes to `_cluster/`, without it), but its author likely meant something else.
    for t in set.templates.iter().filter(|t| t.key.namespace.is_none()) {
        if let Some(ns) = t.object.pointer("/metadata/namespace").and_then(serde_json::Value::as_str) {
            out.push(LoadError::at(
                &t.source,
                "metadata.namespace",
                format!(
                    "{} is cluster-scoped: the namespace `{ns}` is ignored (as the API server does); remove it, or \
                     check the kind (a CRD's scope comes from its CustomResourceDefinition)",
                    t.key.kind
                ),
            ));
        }
    }
    // A field Kubernetes' schema for the kind does not have: written as it is (the API server's
    // default drops it with a warning; strict validation — kubectl's and Argo CD's — refuses
    // the manifest). A warning, not an error: the schema is one Kubernetes version's, and a
    // field a newer member knows must not stop the workload (docs/guide/commands.md, `check`).
    for t in &set.templates {
        for u in &t.unknown_fields {
            let hint = u.nearest.map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
            out.push(LoadError::at(
                &t.source,
                u.path.clone(),
                format!(
                    "unknown field of {} in Kubernetes {}'s schema{hint}: written as it is — the API server drops \
                     it (or, with strict field validation as kubectl and Argo CD apply, refuses the manifest)",
                    t.key.kind,
                    super::load::SCHEMA_VERSION
                ),
            ));
        }
    }
    out.extend(super::references::warnings(set));
    // Karmada's FederatedHPA scales the template in Karmada's control plane from metrics
    // fedsched does not read (`model::autoscaling`: member HPAs instead).
    for t in set.templates.iter().filter(|t| t.key.kind == "FederatedHPA" && t.key.group() == "autoscaling.karmada.io")
    {
        let target = t.object.pointer("/spec/scaleTargetRef/name").and_then(serde_json::Value::as_str).unwrap_or("?");
        out.push(LoadError::at(
            &t.source,
            "kind",
            format!(
                "FederatedHPA is not run by fedsched (Karmada scales the template from its metrics adapter, which \
                 fedsched does not read): `{target}` keeps its declared replicas. Write an autoscaling/v2 \
                 HorizontalPodAutoscaler with the same scaleTargetRef, minReplicas and maxReplicas instead and \
                 propagate it: each member gets its share of the bounds and its own HPA scales the workload"
            ),
        ));
    }
    for p in &set.workload_rebalancers {
        // The same workload named again: acted on once (one line for any number of copies).
        let mut seen: HashSet<(&str, &str, Option<&str>, &str)> = HashSet::new();
        let mut duplicates = Vec::new();
        for (i, w) in p.spec.workloads.iter().enumerate() {
            let ns = w.namespace.as_deref().filter(|n| !n.is_empty());
            if !seen.insert((w.api_version.as_str(), w.kind.as_str(), ns, w.name.as_str())) {
                duplicates.push(i);
            }
        }
        if let Some(first) = duplicates.first() {
            out.push(LoadError::at(
                &p.source,
                format!("spec.workloads[{first}]"),
                format!(
                    "{} of {} entries name a workload listed before: each workload is rebalanced once",
                    duplicates.len(),
                    p.spec.workloads.len()
                ),
            ));
        }
        if p.spec.ttl_seconds_after_finished.is_some() {
            out.push(LoadError::at(
                &p.source,
                "spec.ttlSecondsAfterFinished",
                "has no effect: Karmada deletes a finished WorkloadRebalancer, but in a repository its \
                 lifetime is the repository's (fedsched acts on it once per generation)",
            ));
        }
    }
    out
}

/// What `check` says of each RolloutPolicy stage whose clusters cannot be observed (offline
/// members: no live access, `is_live` false): its gate passes only by approval (the stage's
/// name added to `spec.approvedStages`) or after `minSuccessTime`, never at once. A stage by
/// `clusterAffinity` names the offline Cluster objects it matches; a stage by
/// `maxConcurrency` and the final stage, whose clusters depend on the placement, are named
/// when any Cluster of the repository is offline.
pub fn rollout_offline_notes(set: &PolicySet, is_live: impl Fn(&str) -> bool) -> Vec<LoadError> {
    let mut out = Vec::new();
    let offline: Vec<&super::ClusterObject> = set.clusters.iter().filter(|c| !is_live(&c.meta.name)).collect();
    if offline.is_empty() {
        return out;
    }
    for p in &set.rollout_policies {
        let min = humantime::format_duration(p.spec.min_success_time());
        let rule = format!(
            "its gate passes only by approval (add the stage to spec.approvedStages) or after minSuccessTime \
             ({min}) without a failure observed, never at once"
        );
        let matches = |aff: &ClusterAffinity, c: &super::ClusterObject| {
            super::matching::cluster_matches(aff, &super::matching::ClusterFacts::of(c))
        };
        // The offline clusters no stage names by affinity: a maxConcurrency stage's or the
        // final stage's, depending on the placement.
        let unnamed: Vec<&str> = offline
            .iter()
            .filter(|c| !p.spec.stages.iter().any(|s| s.cluster_affinity.as_ref().is_some_and(|a| matches(a, c))))
            .map(|c| c.meta.name.as_str())
            .collect();
        for (i, stage) in p.spec.stages.iter().enumerate() {
            let names: Vec<&str> = match &stage.cluster_affinity {
                Some(aff) => offline.iter().filter(|c| matches(aff, c)).map(|c| c.meta.name.as_str()).collect(),
                None => unnamed.clone(),
            };
            if !names.is_empty() {
                out.push(LoadError::at(
                    &p.source,
                    format!("spec.stages[{i}]"),
                    format!("stage `{}` may hold offline clusters ({}): {rule}", stage.name, names.join(", ")),
                ));
            }
        }
        if !unnamed.is_empty() {
            out.push(LoadError::at(
                &p.source,
                "spec.stages",
                format!(
                    "the final stage (the clusters no stage names) may hold offline clusters ({}): {rule}",
                    unnamed.join(", ")
                ),
            ));
        }
    }
    out
}

/// Collects errors of one object.
struct V<'a> {
    source: &'a Source,
    errors: &'a mut Vec<LoadError>,
}

impl<'a> V<'a> {
    fn new(source: &'a Source, errors: &'a mut Vec<LoadError>) -> Self {
        V { source, errors }
    }
    fn err(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push(LoadError::at(self.source, field, message));
    }
}

// ---------------------------------------------------------------------------------------------
// PropagationPolicy / ClusterPropagationPolicy

fn propagation(v: &mut V, spec: &PropagationSpec) {
    if spec.resource_selectors.is_empty() {
        v.err("spec.resourceSelectors", "must not be empty (an empty list never means \"all resources\")");
    }
    for (i, sel) in spec.resource_selectors.iter().enumerate() {
        let path = format!("spec.resourceSelectors[{i}]");
        resource_selector(v, &path, sel);
        if spec.preemption == Preemption::Always && sel.name.as_deref().unwrap_or("").is_empty() {
            v.err(format!("{path}.name"), "is required on every resource selector when preemption is Always");
        }
    }
    placement(v, "spec.placement", &spec.placement);

    if let Some(failover) = &spec.failover {
        if let Some(app) = &failover.application {
            let base = "spec.failover.application";
            if !spec.propagate_deps {
                v.err(
                    "spec.propagateDeps",
                    "must be true when application failover (spec.failover.application) is set",
                );
            }
            if let Some(t) = app.decision_conditions.toleration_seconds
                && t < 0
            {
                v.err(format!("{base}.decisionConditions.tolerationSeconds"), format!("must be >= 0, got {t}"));
            }
            if let Some(g) = app.grace_period_seconds {
                let mode = app.purge_mode.unwrap_or(PurgeMode::Gracefully);
                if mode != PurgeMode::Gracefully {
                    v.err(
                        format!("{base}.gracePeriodSeconds"),
                        format!("is only allowed with purgeMode Gracefully, not {mode:?}"),
                    );
                } else if g <= 0 {
                    v.err(format!("{base}.gracePeriodSeconds"), format!("must be greater than 0, got {g}"));
                }
            }
            if let Some(sp) = &app.state_preservation {
                state_preservation(v, &format!("{base}.statePreservation"), sp);
            }
        }
        if let Some(cl) = &failover.cluster {
            if cl.purge_mode == Some(PurgeMode::Never) {
                v.err(
                    "spec.failover.cluster.purgeMode",
                    "must be Directly or Gracefully (Never is only for application failover)",
                );
            }
            if let Some(sp) = &cl.state_preservation {
                state_preservation(v, "spec.failover.cluster.statePreservation", sp);
            }
        }
    }

    if let Some(s) = &spec.suspension
        && s.dispatching == Some(true)
        && s.dispatching_on_clusters.is_some()
    {
        v.err("spec.suspension", "dispatching and dispatchingOnClusters cannot both be set");
    }
    if let Some(sp) = &spec.schedule_priority
        && sp.priority_class_source.as_deref() != Some("KubePriorityClass")
    {
        v.err("spec.schedulePriority.priorityClassSource", "must be KubePriorityClass");
    }
}

// ---------------------------------------------------------------------------------------------
// RolloutPolicy (fedsched.io/v1alpha1)

/// A RolloutPolicy: its selectors as a PropagationPolicy's, stages named (DNS-1123 labels,
/// unique) with exactly one of `clusterAffinity` and `maxConcurrency`, durations readable,
/// counts in range, approvals naming stages.
fn rollout(v: &mut V, spec: &super::types::RolloutSpec) {
    use super::types::rollout_duration;
    if spec.resource_selectors.is_empty() {
        v.err("spec.resourceSelectors", "must not be empty (an empty list never means \"all resources\")");
    }
    for (i, sel) in spec.resource_selectors.iter().enumerate() {
        resource_selector(v, &format!("spec.resourceSelectors[{i}]"), sel);
        // A rollout keeps the previous and the new version's object in the state store, and
        // no Secret data goes there (history blobs hold a Secret redacted).
        if sel.api_version == "v1" && sel.kind == "Secret" {
            v.err(
                format!("spec.resourceSelectors[{i}].kind"),
                "a Secret is not rolled out (its versions would be kept in the state store, which holds no Secret \
                 data): roll out the workload that mounts it",
            );
        }
    }
    if spec.stages.is_empty() {
        v.err("spec.stages", "must name at least one stage (the clusters no stage names form a final stage)");
    }
    let mut names = HashSet::new();
    for (i, stage) in spec.stages.iter().enumerate() {
        let path = format!("spec.stages[{i}]");
        if let Err(m) = super::load::check_dns1123_label(&stage.name, 63) {
            v.err(format!("{path}.name"), m);
        } else if !names.insert(stage.name.as_str()) {
            v.err(format!("{path}.name"), format!("duplicate stage name `{}`", stage.name));
        }
        match (&stage.cluster_affinity, &stage.max_concurrency) {
            (Some(aff), None) => affinity(v, &format!("{path}.clusterAffinity"), aff),
            (None, Some(n)) => count(v, &format!("{path}.maxConcurrency"), n, 1),
            (Some(_), Some(_)) => v.err(path, "clusterAffinity and maxConcurrency cannot both be set"),
            (None, None) => v.err(path, "one of clusterAffinity and maxConcurrency is required"),
        }
    }
    let mut durations = [None, None];
    for (slot, (field, text)) in durations
        .iter_mut()
        .zip([("minSuccessTime", &spec.min_success_time), ("progressDeadline", &spec.progress_deadline)])
    {
        if let Some(text) = text {
            match rollout_duration(text) {
                Ok(d) => *slot = Some(d),
                Err(m) => v.err(format!("spec.{field}"), m),
            }
        }
    }
    if let [min, Some(deadline)] = durations {
        let min = min.unwrap_or(super::types::DEFAULT_MIN_SUCCESS_TIME);
        if deadline <= min {
            v.err(
                "spec.progressDeadline",
                format!(
                    "must be longer than minSuccessTime ({}): a stage could never pass its gate in time",
                    humantime::format_duration(min)
                ),
            );
        }
    }
    if let Some(n) = &spec.max_failures {
        count(v, "spec.maxFailures", n, 0);
    }
    for (i, name) in spec.approved_stages.iter().enumerate() {
        if !spec.stages.iter().any(|s| &s.name == name) {
            let known: Vec<&str> = spec.stages.iter().map(|s| s.name.as_str()).collect();
            v.err(format!("spec.approvedStages[{i}]"), format!("`{name}` is no stage of this policy ({known:?})"));
        }
    }
}

/// A number of at least `min`, or a percentage from `min` to 100.
fn count(v: &mut V, path: &str, n: &super::types::IntOrPercent, min: i64) {
    match (n, n.percent()) {
        (super::types::IntOrPercent::Int(i), _) if *i < min => v.err(path, format!("must be at least {min}, got {i}")),
        (_, Some(Err(m))) => v.err(path, m),
        (_, Some(Ok(p))) if i64::from(p) < min || p > 100 => {
            v.err(path, format!("a percentage must be from {min}% to 100%, got {p}%"))
        }
        _ => {}
    }
}

fn state_preservation(v: &mut V, base: &str, sp: &super::types::StatePreservation) {
    if sp.rules.is_empty() {
        v.err(format!("{base}.rules"), "must not be empty");
    }
    for (i, r) in sp.rules.iter().enumerate() {
        if let Err(m) = check_qualified_name(&r.alias_label_name) {
            v.err(format!("{base}.rules[{i}].aliasLabelName"), m);
        }
        if r.json_path.trim().is_empty() {
            v.err(format!("{base}.rules[{i}].jsonPath"), "must not be empty");
        }
    }
}

fn resource_selector(v: &mut V, path: &str, sel: &ResourceSelector) {
    if sel.api_version.is_empty() {
        v.err(format!("{path}.apiVersion"), "must not be empty");
    }
    if sel.kind.is_empty() {
        v.err(format!("{path}.kind"), "must not be empty");
    }
    if let Some(ls) = &sel.label_selector {
        label_selector(v, &format!("{path}.labelSelector"), ls);
    }
}

fn placement(v: &mut V, base: &str, p: &Placement) {
    if let Some(aff) = &p.cluster_affinity {
        affinity(v, &format!("{base}.clusterAffinity"), aff);
        if !p.cluster_affinities.is_empty() {
            v.err(format!("{base}.clusterAffinities"), "clusterAffinities cannot co-exist with clusterAffinity");
        }
    }
    let overflow_allowed = p.replica_scheduling.as_ref().is_some_and(|rs| {
        rs.replica_scheduling_type != Some(ReplicaSchedulingType::Duplicated)
            && (rs.replica_division_preference == Some(ReplicaDivisionPreference::Aggregated)
                || rs.weight_preference.as_ref().is_some_and(|w| w.dynamic_weight.is_some()))
    });
    let mut names = HashSet::new();
    let mut check_name = |v: &mut V, path: String, name: &str| {
        if name.is_empty() || name.len() > MAX_AFFINITY_NAME_LEN {
            v.err(path, format!("must be 1 to {MAX_AFFINITY_NAME_LEN} characters long, got {}", name.len()));
        } else if let Err(m) = check_qualified_name(name) {
            v.err(path, m);
        } else if !names.insert(name.to_string()) {
            v.err(path, format!("duplicate affinity name `{name}`"));
        }
    };
    for (i, term) in p.cluster_affinities.iter().enumerate() {
        let tp = format!("{base}.clusterAffinities[{i}]");
        check_name(v, format!("{tp}.affinityName"), &term.affinity_name);
        affinity(v, &tp, &term.affinity());
        if !term.overflow_affinities.is_empty() && !overflow_allowed {
            v.err(
                format!("{tp}.overflowAffinities"),
                "only allowed with Divided scheduling that is Aggregated or uses dynamicWeight",
            );
        }
        for (j, o) in term.overflow_affinities.iter().enumerate() {
            let op = format!("{tp}.overflowAffinities[{j}]");
            check_name(v, format!("{op}.affinityName"), &o.affinity_name);
            let aff = ClusterAffinity {
                label_selector: o.label_selector.clone(),
                field_selector: o.field_selector.clone(),
                cluster_names: o.cluster_names.clone(),
                exclude: o.exclude.clone(),
            };
            if aff == ClusterAffinity::default() {
                v.err(op.clone(), "an overflow affinity must select clusters (it is empty)");
            }
            affinity(v, &op, &aff);
        }
    }
    for (i, t) in p.cluster_tolerations.iter().enumerate() {
        if matches!(t.operator, Some(TolerationOperator::Lt | TolerationOperator::Gt)) {
            v.err(
                format!("{base}.clusterTolerations[{i}].operator"),
                "operators Lt and Gt are not supported in cluster tolerations",
            );
        }
    }
    spread_constraints(v, base, p);
    if let Some(rs) = &p.replica_scheduling
        && let Some(wp) = &rs.weight_preference
    {
        for (i, w) in wp.static_weight_list.iter().enumerate() {
            let wpath = format!("{base}.replicaScheduling.weightPreference.staticWeightList[{i}]");
            if w.weight < 1 {
                v.err(format!("{wpath}.weight"), format!("must be >= 1, got {}", w.weight));
            }
            affinity(v, &format!("{wpath}.targetCluster"), &w.target_cluster);
        }
    }
    if let Some(wa) = &p.workload_affinity {
        for (name, term) in [("affinity", &wa.affinity), ("antiAffinity", &wa.anti_affinity)] {
            if let Some(t) = term
                && let Err(m) = check_qualified_name(&t.group_by_label_key)
            {
                v.err(format!("{base}.workloadAffinity.{name}.groupByLabelKey"), m);
            }
        }
        if let (Some(a), Some(b)) = (&wa.affinity, &wa.anti_affinity)
            && a.group_by_label_key == b.group_by_label_key
        {
            v.err(
                format!("{base}.workloadAffinity.antiAffinity.groupByLabelKey"),
                "must differ from affinity.groupByLabelKey",
            );
        }
    }
}

fn spread_constraints(v: &mut V, base: &str, p: &Placement) {
    let mut fields: HashSet<SpreadByField> = HashSet::new();
    for (i, c) in p.spread_constraints.iter().enumerate() {
        let cp = format!("{base}.spreadConstraints[{i}]");
        let has_label = !c.spread_by_label.as_deref().unwrap_or("").is_empty();
        if c.spread_by_field.is_some() && has_label {
            v.err(format!("{cp}.spreadByLabel"), "spreadByLabel cannot co-exist with spreadByField");
        }
        if c.min_groups < 0 {
            v.err(format!("{cp}.minGroups"), format!("must be >= 0, got {}", c.min_groups));
        }
        if c.max_groups < 0 {
            v.err(format!("{cp}.maxGroups"), format!("must be >= 0, got {}", c.max_groups));
        }
        if c.max_groups > 0 && c.max_groups < c.min_groups {
            v.err(
                format!("{cp}.maxGroups"),
                format!("maxGroups ({}) must not be lower than minGroups ({})", c.max_groups, c.min_groups),
            );
        }
        if let Some(f) = c.spread_by_field
            && !fields.insert(f)
        {
            v.err(format!("{cp}.spreadByField"), format!("duplicate spreadByField {f:?}"));
        }
    }
    if !fields.is_empty() && !fields.contains(&SpreadByField::Cluster) {
        v.err(
            format!("{base}.spreadConstraints"),
            "a spreadByField: cluster constraint is required when spreading by field",
        );
    }
}

/// Validates a `ClusterAffinity` at `path` (label selector and field selector rules).
fn affinity(v: &mut V, path: &str, aff: &ClusterAffinity) {
    if let Some(ls) = &aff.label_selector {
        label_selector(v, &format!("{path}.labelSelector"), ls);
    }
    if let Some(fs) = &aff.field_selector {
        field_selector(v, &format!("{path}.fieldSelector"), fs);
    }
}

fn field_selector(v: &mut V, path: &str, fs: &FieldSelector) {
    for (i, r) in fs.match_expressions.iter().enumerate() {
        let rp = format!("{path}.matchExpressions[{i}]");
        if !matches!(r.key.as_str(), "provider" | "region" | "zone") {
            v.err(format!("{rp}.key"), format!("unsupported key `{}`, expected provider, region or zone", r.key));
        }
        match r.operator {
            SelectorOperator::In | SelectorOperator::NotIn => {
                if r.values.is_empty() {
                    v.err(format!("{rp}.values"), "must not be empty for In and NotIn");
                }
            }
            other => v.err(format!("{rp}.operator"), format!("unsupported operator {other:?}, expected In or NotIn")),
        }
    }
}

/// Kubernetes label-selector rules (`metav1validation.ValidateLabelSelector`).
fn label_selector(v: &mut V, path: &str, ls: &LabelSelector) {
    for (k, val) in &ls.match_labels {
        if let Err(m) = check_qualified_name(k) {
            v.err(format!("{path}.matchLabels"), format!("key `{k}`: {m}"));
        }
        if let Err(m) = check_label_value(val) {
            v.err(format!("{path}.matchLabels.{k}"), m);
        }
    }
    for (i, r) in ls.match_expressions.iter().enumerate() {
        let rp = format!("{path}.matchExpressions[{i}]");
        if let Err(m) = check_qualified_name(&r.key) {
            v.err(format!("{rp}.key"), m);
        }
        if let Some(m) = selector_requirement_problem(r.operator, &r.values) {
            v.err(rp, m);
        }
    }
}

/// Why a label-selector requirement is invalid, if it is (shared with matching).
pub(crate) fn selector_requirement_problem(op: SelectorOperator, values: &[String]) -> Option<String> {
    match op {
        SelectorOperator::In | SelectorOperator::NotIn if values.is_empty() => {
            Some(format!("values must not be empty for operator {op:?}"))
        }
        SelectorOperator::Exists | SelectorOperator::DoesNotExist if !values.is_empty() => {
            Some(format!("values must be empty for operator {op:?}"))
        }
        SelectorOperator::Gt | SelectorOperator::Lt => {
            Some(format!("operator {op:?} is not valid in a label selector"))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// OverridePolicy / ClusterOverridePolicy

fn override_spec(v: &mut V, spec: &OverrideSpec) {
    for (i, sel) in spec.resource_selectors.iter().enumerate() {
        resource_selector(v, &format!("spec.resourceSelectors[{i}]"), sel);
    }
    let deprecated = spec.target_cluster.is_some() || spec.overriders.is_some();
    if !spec.override_rules.is_empty() && deprecated {
        v.err("spec.overrideRules", "overrideRules cannot co-exist with the deprecated targetCluster/overriders");
    }
    for (i, rule) in spec.override_rules.iter().enumerate() {
        let base = format!("spec.overrideRules[{i}]");
        if let Some(tc) = &rule.target_cluster {
            affinity(v, &format!("{base}.targetCluster"), tc);
        }
        overriders(v, &format!("{base}.overriders"), &rule.overriders);
    }
    if let Some(tc) = &spec.target_cluster {
        affinity(v, "spec.targetCluster", tc);
    }
    if let Some(o) = &spec.overriders {
        overriders(v, "spec.overriders", o);
    }
}

fn overriders(v: &mut V, base: &str, o: &Overriders) {
    use OverriderOperator::{Add, Remove, Replace};
    for (i, p) in o.plaintext.iter().enumerate() {
        let pp = format!("{base}.plaintext[{i}]");
        if let Err(m) = check_json_pointer(&p.path) {
            v.err(format!("{pp}.path"), m);
        }
        if matches!(p.operator, Add | Replace) && p.value.is_none() {
            v.err(format!("{pp}.value"), format!("is required for operator {}", op_name(p.operator)));
        }
    }
    for (i, img) in o.image_overrider.iter().enumerate() {
        if let Some(pred) = &img.predicate
            && let Err(m) = check_json_pointer(&pred.path)
        {
            v.err(format!("{base}.imageOverrider[{i}].predicate.path"), m);
        }
    }
    for (name, list) in [("commandOverrider", &o.command_overrider), ("argsOverrider", &o.args_overrider)] {
        for (i, c) in list.iter().enumerate() {
            if c.operator == Replace {
                v.err(format!("{base}.{name}[{i}].operator"), "must be add or remove");
            }
            if c.container_name.is_empty() {
                v.err(format!("{base}.{name}[{i}].containerName"), "must not be empty");
            }
        }
    }
    for (name, list, is_label) in
        [("labelsOverrider", &o.labels_overrider, true), ("annotationsOverrider", &o.annotations_overrider, false)]
    {
        for (i, l) in list.iter().enumerate() {
            map_keys_values(v, &format!("{base}.{name}[{i}].value"), &l.value, is_label);
        }
    }
    for (i, f) in o.field_overrider.iter().enumerate() {
        let fp = format!("{base}.fieldOverrider[{i}]");
        if let Err(m) = check_json_pointer(&f.field_path) {
            v.err(format!("{fp}.fieldPath"), m);
        }
        match (f.json.is_empty(), f.yaml.is_empty()) {
            (true, true) => v.err(fp.clone(), "exactly one of json or yaml must be set (neither is)"),
            (false, false) => v.err(fp.clone(), "exactly one of json or yaml must be set (both are)"),
            _ => {}
        }
        for (kind, patches) in [("json", &f.json), ("yaml", &f.yaml)] {
            for (j, p) in patches.iter().enumerate() {
                let pp = format!("{fp}.{kind}[{j}]");
                if let Err(m) = check_json_pointer(&p.sub_path) {
                    v.err(format!("{pp}.subPath"), m);
                }
                match (p.operator, p.value.is_some()) {
                    (Add | Replace, false) => {
                        v.err(format!("{pp}.value"), format!("is required for operator {}", op_name(p.operator)))
                    }
                    (Remove, true) => v.err(format!("{pp}.value"), "must not be set for operator remove"),
                    _ => {}
                }
            }
        }
    }
}

fn op_name(op: OverriderOperator) -> &'static str {
    match op {
        OverriderOperator::Add => "add",
        OverriderOperator::Remove => "remove",
        OverriderOperator::Replace => "replace",
    }
}

fn map_keys_values(v: &mut V, path: &str, map: &BTreeMap<String, String>, values_are_labels: bool) {
    for (k, val) in map {
        if let Err(m) = check_qualified_name(k) {
            v.err(path.to_string(), format!("key `{k}`: {m}"));
        }
        if values_are_labels && let Err(m) = check_label_value(val) {
            v.err(format!("{path}.{k}"), m);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// WorkloadRebalancer

fn rebalancer(v: &mut V, spec: &WorkloadRebalancerSpec) {
    if spec.workloads.is_empty() {
        v.err("spec.workloads", "must not be empty");
    }
    for (i, w) in spec.workloads.iter().enumerate() {
        for (field, value) in [("apiVersion", &w.api_version), ("kind", &w.kind), ("name", &w.name)] {
            if value.is_empty() {
                v.err(format!("spec.workloads[{i}].{field}"), "required field is missing");
            }
        }
        if let Some(ns) = w.namespace.as_deref().filter(|n| !n.is_empty())
            && let Err(m) = crate::policy::load::check_dns1123_label(ns, 63)
        {
            v.err(format!("spec.workloads[{i}].namespace"), m);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ClusterTaintPolicy

fn taint_policy(v: &mut V, spec: &ClusterTaintPolicySpec) {
    if let Some(tc) = &spec.target_clusters {
        affinity(v, "spec.targetClusters", tc);
    }
    if spec.taints.is_empty() {
        v.err("spec.taints", "must not be empty");
    }
    for (i, t) in spec.taints.iter().enumerate() {
        if let Err(m) = check_qualified_name(&t.key) {
            v.err(format!("spec.taints[{i}].key"), m);
        }
    }
    unique_taints(v, spec.taints.iter().map(|t| (t.key.as_str(), t.effect)));
    if spec.add_on_conditions.is_empty() && spec.remove_on_conditions.is_empty() {
        v.err("spec.addOnConditions", "at least one of addOnConditions and removeOnConditions must be set");
    }
    for (name, list) in
        [("addOnConditions", &spec.add_on_conditions), ("removeOnConditions", &spec.remove_on_conditions)]
    {
        for (i, c) in list.iter().enumerate() {
            let cp = format!("spec.{name}[{i}]");
            if !matches!(c.operator, SelectorOperator::In | SelectorOperator::NotIn) {
                v.err(format!("{cp}.operator"), "must be In or NotIn");
            }
            if c.status_values.is_empty() {
                v.err(format!("{cp}.statusValues"), "must not be empty");
            }
            if c.condition_type.is_empty() {
                v.err(format!("{cp}.conditionType"), "must not be empty");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cluster

fn cluster(v: &mut V, spec: &ClusterSpec) {
    if spec.zone.as_deref().is_some_and(|z| !z.is_empty()) && !spec.zones.is_empty() {
        v.err("spec.zone", "zone and zones cannot both be set (zone is deprecated, use zones)");
    }
    for (field, value) in [("provider", &spec.provider), ("region", &spec.region), ("zone", &spec.zone)] {
        if let Some(val) = value
            && let Err(m) = check_label_value(val)
        {
            v.err(format!("spec.{field}"), m);
        }
    }
    for (i, z) in spec.zones.iter().enumerate() {
        if let Err(m) = check_label_value(z) {
            v.err(format!("spec.zones[{i}]"), m);
        }
    }
    unique_taints(v, spec.taints.iter().map(|t| (t.key.as_str(), t.effect)));
    resource_models(v, spec);
}

/// Taints must be unique by key and effect, as Kubernetes requires of a Node's: one error for
/// the list, naming the first duplicate and how many there are (10,000 copies are one line).
fn unique_taints<'a>(v: &mut V, taints: impl Iterator<Item = (&'a str, TaintEffect)>) {
    let mut first: std::collections::HashMap<(&str, TaintEffect), usize> = std::collections::HashMap::new();
    let mut duplicates = Vec::new();
    for (i, t) in taints.enumerate() {
        if let Some(j) = first.get(&t) {
            duplicates.push((i, *j, t));
        } else {
            first.insert(t, i);
        }
    }
    if let Some((i, j, (key, effect))) = duplicates.first() {
        let more = match duplicates.len() {
            1 => String::new(),
            n => format!(" ({n} duplicates in all)"),
        };
        v.err(
            format!("spec.taints[{i}]"),
            format!(
                "duplicate of spec.taints[{j}] (key {key:?}, effect {effect:?}): taints must be unique by key and \
                 effect, as Kubernetes requires{more}"
            ),
        );
    }
}

fn resource_models(v: &mut V, spec: &ClusterSpec) {
    let models = &spec.resource_models;
    if models.is_empty() {
        return;
    }
    let mut grades = HashSet::new();
    for (i, m) in models.iter().enumerate() {
        if !grades.insert(m.grade) {
            v.err(format!("spec.resourceModels[{i}].grade"), format!("duplicate grade {}", m.grade));
        }
    }
    let names = |i: usize| models[i].ranges.iter().map(|r| r.name.as_str()).collect::<Vec<_>>();
    let first = names(0);
    let mut parsed: Vec<Vec<Option<(i128, i128)>>> = Vec::new();
    for (i, m) in models.iter().enumerate() {
        if m.ranges.is_empty() {
            v.err(format!("spec.resourceModels[{i}].ranges"), "must not be empty");
        }
        if i > 0 && names(i) != first {
            v.err(
                format!("spec.resourceModels[{i}].ranges"),
                format!("must list the same resources in the same order as the first model ({})", first.join(", ")),
            );
        }
        let mut row = Vec::new();
        for (j, r) in m.ranges.iter().enumerate() {
            let rp = format!("spec.resourceModels[{i}].ranges[{j}]");
            let min = parse_quantity(&r.min);
            let max = parse_quantity(&r.max);
            if min.is_none() {
                v.err(format!("{rp}.min"), format!("`{}` is not a valid quantity", r.min));
            }
            if max.is_none() {
                v.err(format!("{rp}.max"), format!("`{}` is not a valid quantity", r.max));
            }
            match (min, max) {
                (Some(a), Some(b)) => {
                    if a >= b {
                        v.err(format!("{rp}.max"), format!("max ({}) must be greater than min ({})", r.max, r.min));
                    }
                    row.push(Some((a, b)));
                }
                _ => row.push(None),
            }
        }
        parsed.push(row);
    }
    // Contiguity in grade order: the previous grade's max is this grade's min.
    let mut order: Vec<usize> = (0..models.len()).collect();
    order.sort_by_key(|&i| models[i].grade);
    for w in order.windows(2) {
        let (prev, cur) = (w[0], w[1]);
        if names(prev) != names(cur) {
            continue; // already reported
        }
        for (j, r) in models[cur].ranges.iter().enumerate() {
            if let (Some(Some((_, pmax))), Some(Some((cmin, _)))) = (parsed[prev].get(j), parsed[cur].get(j))
                && pmax != cmin
            {
                v.err(
                    format!("spec.resourceModels[{cur}].ranges[{j}].min"),
                    format!(
                        "{} of grade {} must start where grade {} ends ({}): grades must be contiguous",
                        r.name, models[cur].grade, models[prev].grade, models[prev].ranges[j].max
                    ),
                );
            }
        }
    }
}

/// Parses a Kubernetes quantity into nano-units (`1` → 10⁹, `500m` → 5·10⁸, `1Ki` →
/// 1024·10⁹). None when the text is not a quantity or does not fit.
pub(crate) fn parse_quantity(q: &QuantityValue) -> Option<i128> {
    let s = match q {
        QuantityValue::Int(i) => return i128::from(*i).checked_mul(1_000_000_000),
        QuantityValue::Text(s) => s.trim(),
    };
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let num_end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, suffix) = s.split_at(num_end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return None;
    }
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    let digits = format!("{int_part}{frac_part}");
    let mantissa: i128 = digits.parse().ok()?;
    // value = mantissa · 10^(exp10 - frac_len) · 2^exp2, in units; ×10⁹ for nano.
    let (mut exp10, exp2): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other => {
            let e = other.strip_prefix(['e', 'E'])?;
            (e.parse::<i32>().ok()?, 0)
        }
    };
    exp10 = exp10.checked_add(9)?.checked_sub(i32::try_from(frac_part.len()).ok()?)?;
    let mut value = mantissa.checked_mul(1i128.checked_shl(exp2)?)?;
    if exp10 >= 0 {
        value = value.checked_mul(10i128.checked_pow(u32::try_from(exp10).ok()?)?)?;
    } else {
        value /= 10i128.checked_pow(u32::try_from(-exp10).ok()?)?;
    }
    Some(if neg { -value } else { value })
}

// ---------------------------------------------------------------------------------------------
// Syntax helpers

/// Kubernetes qualified name (label and annotation keys): optional DNS-subdomain prefix and
/// `/`, then 1..63 chars of `[A-Za-z0-9_.-]` starting and ending alphanumeric.
pub fn check_qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && super::load::check_dns1123_subdomain(p).is_err()
    {
        return Err(format!("`{key}`: prefix `{p}` must be a DNS-1123 subdomain"));
    }
    if name.is_empty() || name.len() > 63 || !name_chars_ok(name) {
        return Err(format!(
            "`{key}` is not a qualified name (1-63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit, with an optional DNS prefix and '/')"
        ));
    }
    Ok(())
}

/// Kubernetes label value: empty, or up to 63 chars of `[A-Za-z0-9_.-]` starting and ending
/// alphanumeric.
pub fn check_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    if value.len() > 63 || !name_chars_ok(value) {
        return Err(format!(
            "`{value}` is not a valid label value (up to 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
        ));
    }
    Ok(())
}

fn name_chars_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    !b.is_empty()
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter().all(|&c| alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

/// RFC 6901 JSON pointer as Karmada accepts it: starts with `/`; `~` only as `~0` or `~1`.
pub fn check_json_pointer(p: &str) -> Result<(), String> {
    if !p.starts_with('/') {
        return Err(format!("`{p}` is not a JSON pointer (must start with '/')"));
    }
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!("`{p}` is not a valid JSON pointer ('~' must be followed by 0 or 1)"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::policy::{defaults, load::load_sources};

    /// Loads, defaults and validates; returns the field paths of the validation errors.
    fn fields(yaml: &str) -> Vec<String> {
        let (mut set, errors) = load_sources([(PathBuf::from("t.yaml"), yaml.to_string())]);
        assert!(errors.is_empty(), "load errors: {errors:?}");
        defaults::apply(&mut set);
        let errs = validate(&set);
        for e in &errs {
            assert_eq!(e.file, PathBuf::from("t.yaml"));
            assert_eq!(e.document, Some(1));
        }
        errs.into_iter().map(|e| e.field).collect()
    }

    fn pp(spec: &str) -> String {
        format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: p, namespace: ns}}\nspec:\n{}",
            indent(spec)
        )
    }
    fn op(spec: &str) -> String {
        format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata: {{name: o, namespace: ns}}\nspec:\n{}",
            indent(spec)
        )
    }
    fn cluster_doc(spec: &str) -> String {
        format!(
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: c}}\nspec:\n  syncMode: Push\n{}",
            indent(spec)
        )
    }
    fn indent(s: &str) -> String {
        s.lines().map(|l| format!("  {l}\n")).collect()
    }
    const SEL: &str = "resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n";

    #[test]
    fn propagation_rules() {
        let cases: &[(&str, &[&str])] = &[
            // valid
            (SEL, &[]),
            ("resourceSelectors: []", &["spec.resourceSelectors"]),
            // Valid in Karmada (the selector never matches): a warning, not an error.
            ("resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: other}]", &[]),
            (
                "resourceSelectors: [{apiVersion: v1, kind: ConfigMap, labelSelector: {matchExpressions: [{key: a, operator: In}]}}]",
                &["spec.resourceSelectors[0].labelSelector.matchExpressions[0]"],
            ),
            (&format!("{SEL}preemption: Always"), &["spec.resourceSelectors[0].name"]),
            (
                &format!(
                    "{SEL}placement:\n  clusterAffinity: {{clusterNames: [a]}}\n  clusterAffinities: [{{affinityName: x}}]"
                ),
                &["spec.placement.clusterAffinities"],
            ),
            (
                &format!(
                    "{SEL}placement:\n  clusterAffinities: [{{affinityName: x}}, {{affinityName: x}}, {{affinityName: ''}}, {{affinityName: {}}}]",
                    "a".repeat(33)
                ),
                &[
                    "spec.placement.clusterAffinities[1].affinityName",
                    "spec.placement.clusterAffinities[2].affinityName",
                    "spec.placement.clusterAffinities[3].affinityName",
                ],
            ),
            (
                &format!(
                    "{SEL}placement:\n  clusterAffinities:\n  - affinityName: x\n    overflowAffinities: [{{affinityName: x, clusterNames: [b]}}]"
                ),
                &[
                    "spec.placement.clusterAffinities[0].overflowAffinities",
                    "spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName",
                ],
            ),
            (
                &format!(
                    "{SEL}placement:\n  replicaScheduling: {{replicaDivisionPreference: Aggregated}}\n  clusterAffinities:\n  - affinityName: x\n    overflowAffinities: [{{affinityName: y, clusterNames: [b]}}]"
                ),
                &[],
            ),
            (
                &format!(
                    "{SEL}placement:\n  clusterAffinity:\n    fieldSelector:\n      matchExpressions:\n      - {{key: provider, operator: In, values: [aws]}}\n      - {{key: city, operator: In, values: [x]}}\n      - {{key: zone, operator: Exists}}"
                ),
                &[
                    "spec.placement.clusterAffinity.fieldSelector.matchExpressions[1].key",
                    "spec.placement.clusterAffinity.fieldSelector.matchExpressions[2].operator",
                ],
            ),
            (
                &format!(
                    "{SEL}placement:\n  clusterTolerations: [{{key: a, operator: Lt, value: '1'}}, {{effect: NoSchedule}}]"
                ),
                &["spec.placement.clusterTolerations[0].operator"],
            ),
            (
                &format!(
                    "{SEL}placement:\n  spreadConstraints:\n  - {{spreadByField: region, maxGroups: 2}}\n  - {{spreadByField: region, spreadByLabel: x, minGroups: 3, maxGroups: 2}}\n  - {{spreadByLabel: y, minGroups: -1, maxGroups: -1}}"
                ),
                &[
                    "spec.placement.spreadConstraints[1].spreadByLabel",
                    "spec.placement.spreadConstraints[1].maxGroups",
                    "spec.placement.spreadConstraints[1].spreadByField",
                    "spec.placement.spreadConstraints[2].minGroups",
                    "spec.placement.spreadConstraints[2].maxGroups",
                    "spec.placement.spreadConstraints",
                ],
            ),
            (
                &format!(
                    "{SEL}placement:\n  spreadConstraints:\n  - {{spreadByField: region, maxGroups: 2}}\n  - {{spreadByField: cluster, maxGroups: 3}}"
                ),
                &[],
            ),
            (
                &format!(
                    "{SEL}placement:\n  replicaScheduling:\n    weightPreference:\n      staticWeightList:\n      - {{targetCluster: {{clusterNames: [a]}}, weight: 0}}\n      - {{targetCluster: {{clusterNames: [b]}}, weight: 2}}"
                ),
                &["spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight"],
            ),
            (&format!("{SEL}failover: {{application: {{decisionConditions: {{}}}}}}"), &["spec.propagateDeps"]),
            (
                &format!(
                    "{SEL}propagateDeps: true\nfailover: {{application: {{decisionConditions: {{tolerationSeconds: -1}}, purgeMode: Directly, gracePeriodSeconds: 10}}}}"
                ),
                &[
                    "spec.failover.application.decisionConditions.tolerationSeconds",
                    "spec.failover.application.gracePeriodSeconds",
                ],
            ),
            (
                &format!(
                    "{SEL}propagateDeps: true\nfailover: {{application: {{decisionConditions: {{}}, gracePeriodSeconds: 0}}}}"
                ),
                &["spec.failover.application.gracePeriodSeconds"],
            ),
            (
                &format!("{SEL}suspension: {{dispatching: true, dispatchingOnClusters: {{clusterNames: [a]}}}}"),
                &["spec.suspension"],
            ),
        ];
        for (spec, want) in cases {
            let got = fields(&pp(spec));
            assert_eq!(&got, want, "spec:\n{spec}");
        }
    }

    #[test]
    fn a_selector_of_another_namespace_is_valid_matches_nothing_and_is_warned_about() {
        let docs = format!(
            "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm, namespace: other}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm, namespace: ns}}\n",
            pp("resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: other}]")
        );
        let (mut set, errors) = crate::policy::load::load_sources([(PathBuf::from("t.yaml"), docs)]);
        assert!(errors.is_empty(), "{errors:?}");
        crate::policy::defaults::apply(&mut set);
        assert!(validate(&set).is_empty(), "{:?}", validate(&set));
        let w = warnings(&set);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].field, "spec.resourceSelectors[0].namespace");
        assert_eq!(w[0].document, Some(1));
        assert!(w[0].message.contains("matches nothing"), "{}", w[0].message);
        // Neither ConfigMap is claimed: not the one in `other` (a PP selects only its own
        // namespace), not the one in `ns` (the selector names `other`).
        for t in &set.templates {
            assert!(crate::policy::matching::claim(&set, t).is_none(), "{} was claimed", t.key);
        }
        // A selector of its own namespace, or of none, is not warned about.
        let (mut set, _) = crate::policy::load::load_sources([(
            PathBuf::from("t.yaml"),
            pp("resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: ns}, {apiVersion: v1, kind: Secret}]"),
        )]);
        crate::policy::defaults::apply(&mut set);
        let w = warnings(&set);
        assert!(!w.iter().any(|e| e.field.ends_with(".namespace")), "{w:?}");
        // (They match no template of this repository, which `references` warns about.)
        assert!(w.iter().all(|e| e.message.starts_with("matches no template")), "{w:?}");
    }

    #[test]
    fn cpp_selectors_keep_any_namespace() {
        let doc = "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\nmetadata: {name: c}\nspec:\n  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: any}]\n";
        assert!(fields(doc).is_empty());
    }

    #[test]
    fn override_rules() {
        let rule = |ov: &str| format!("{SEL}overrideRules:\n- overriders:\n{}", indent(&indent(ov)));
        let cases: Vec<(String, &[&str])> = vec![
            (rule("plaintext: [{path: /spec/replicas, operator: replace, value: 1}]"), &[]),
            (format!("{}targetCluster: {{clusterNames: [a]}}\n", rule("plaintext: []")), &["spec.overrideRules"]),
            (
                rule("plaintext: [{path: spec/replicas, operator: add}, {path: /a~2, operator: remove}]"),
                &[
                    "spec.overrideRules[0].overriders.plaintext[0].path",
                    "spec.overrideRules[0].overriders.plaintext[0].value",
                    "spec.overrideRules[0].overriders.plaintext[1].path",
                ],
            ),
            (
                rule(
                    "fieldOverrider:\n- fieldPath: /data/a\n  json: [{subPath: /x, operator: remove, value: 1}, {subPath: /y, operator: add}]\n  yaml: [{subPath: /z, operator: remove}]\n- fieldPath: /data/b",
                ),
                &[
                    "spec.overrideRules[0].overriders.fieldOverrider[0]",
                    "spec.overrideRules[0].overriders.fieldOverrider[0].json[0].value",
                    "spec.overrideRules[0].overriders.fieldOverrider[0].json[1].value",
                    "spec.overrideRules[0].overriders.fieldOverrider[1]",
                ],
            ),
            (
                rule(
                    "commandOverrider: [{containerName: c, operator: replace, value: [x]}]\nlabelsOverrider: [{operator: add, value: {'bad key!': v, ok: 'bad value!'}}]",
                ),
                &[
                    "spec.overrideRules[0].overriders.commandOverrider[0].operator",
                    "spec.overrideRules[0].overriders.labelsOverrider[0].value",
                    "spec.overrideRules[0].overriders.labelsOverrider[0].value.ok",
                ],
            ),
            (
                format!(
                    "{SEL}targetCluster: {{fieldSelector: {{matchExpressions: [{{key: name, operator: In, values: [a]}}]}}}}\noverriders: {{plaintext: [{{path: /a, operator: remove}}]}}\n"
                ),
                &["spec.targetCluster.fieldSelector.matchExpressions[0].key"],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(fields(&op(&spec)), want, "spec:\n{spec}");
        }
    }

    #[test]
    fn cluster_rules() {
        let models = |r: &str| format!("resourceModels:\n{}", r);
        let cases: Vec<(String, &[&str])> = vec![
            (String::from("zones: [a]\nprovider: aws"), &[]),
            (String::from("zone: a\nzones: [b]"), &["spec.zone"]),
            (String::from("region: 'not valid!'"), &["spec.region"]),
            (
                models(
                    "- {grade: 0, ranges: [{name: cpu, min: 0, max: 1}, {name: memory, min: 0, max: 4Gi}]}\n- {grade: 1, ranges: [{name: cpu, min: 1, max: '2'}, {name: memory, min: '4294967296', max: 16Gi}]}",
                ),
                &[],
            ),
            (
                models(
                    "- {grade: 0, ranges: [{name: cpu, min: 0, max: 1}]}\n- {grade: 0, ranges: [{name: cpu, min: 1, max: 2}]}",
                ),
                &["spec.resourceModels[1].grade"],
            ),
            (
                models(
                    "- {grade: 0, ranges: [{name: cpu, min: 0, max: 1}, {name: memory, min: 0, max: 1Gi}]}\n- {grade: 1, ranges: [{name: memory, min: 1Gi, max: 2Gi}, {name: cpu, min: 1, max: 2}]}",
                ),
                &["spec.resourceModels[1].ranges"],
            ),
            (
                models(
                    "- {grade: 0, ranges: [{name: cpu, min: 0, max: 1}]}\n- {grade: 1, ranges: [{name: cpu, min: 1500m, max: 1}]}",
                ),
                &["spec.resourceModels[1].ranges[0].max", "spec.resourceModels[1].ranges[0].min"],
            ),
            (
                models("- {grade: 0, ranges: [{name: cpu, min: 0, max: lots}]}"),
                &["spec.resourceModels[0].ranges[0].max"],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(fields(&cluster_doc(&spec)), want, "spec:\n{spec}");
        }
    }

    #[test]
    fn taint_policy_rules() {
        let doc = "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata: {name: t}\nspec:\n  addOnConditions: [{conditionType: Ready, operator: Exists, statusValues: []}]\n  taints: []\n";
        assert_eq!(
            fields(doc),
            vec!["spec.taints", "spec.addOnConditions[0].operator", "spec.addOnConditions[0].statusValues"]
        );
    }

    /// Karmada's WorkloadRebalancer, verbatim (with the status Karmada writes): parsed into
    /// the set; a missing field of a reference is an error; `ttlSecondsAfterFinished` is named
    /// in a warning.
    #[test]
    fn workload_rebalancer_rules() {
        let doc = "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {name: demo, generation: 3}\n\
                   spec:\n  workloads:\n  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}\n\
                   \x20 - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: admin}\n\
                   \x20 ttlSecondsAfterFinished: 60\nstatus:\n  observedWorkloads:\n\
                   \x20 - workload: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}\n    result: Successful\n";
        assert_eq!(fields(doc), Vec::<String>::new());
        let (set, _) = load_sources([(PathBuf::from("t.yaml"), doc.to_string())]);
        assert!(set.templates.is_empty(), "a WorkloadRebalancer is not a template");
        let r = &set.workload_rebalancers[0];
        assert_eq!((r.meta.name.as_str(), r.meta.generation, r.spec.workloads.len()), ("demo", Some(3), 2));
        assert_eq!(r.spec.workloads[1].namespace, None);
        let w = warnings(&set);
        // Both workloads are absent from this repository (`references`), and the TTL.
        assert_eq!(
            w.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(),
            ["spec.workloads[0]", "spec.workloads[1]", "spec.ttlSecondsAfterFinished"]
        );
        let bad = "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {name: demo}\n\
                   spec:\n  workloads:\n  - {apiVersion: apps/v1, name: web, namespace: Shop_}\n";
        assert_eq!(fields(bad), vec!["spec.workloads[0].kind", "spec.workloads[0].namespace"]);
        let empty =
            "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {name: demo}\nspec: {}\n";
        assert_eq!(fields(empty), vec!["spec.workloads"]);
    }

    #[test]
    fn quantities() {
        let q = |s: &str| parse_quantity(&QuantityValue::Text(s.to_string()));
        assert_eq!(q("1"), Some(1_000_000_000));
        assert_eq!(q("500m"), Some(500_000_000));
        assert_eq!(q("1.5"), Some(1_500_000_000));
        assert_eq!(q("1Ki"), Some(1024 * 1_000_000_000));
        assert_eq!(q("4Gi"), q("4294967296"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("x"), None);
        assert_eq!(q("1.2.3"), None);
        assert_eq!(q("1e2147483647"), None);
        assert_eq!(q("1e-2147483648"), None);
        assert_eq!(parse_quantity(&QuantityValue::Int(2)), q("2000m"));
    }

    #[test]
    fn syntax_helpers() {
        assert!(check_qualified_name("failuredomain.kubernetes.io/zone").is_ok());
        assert!(check_qualified_name("a_b.c").is_ok());
        assert!(check_qualified_name("/x").is_err());
        assert!(check_qualified_name("x/").is_err());
        assert!(check_label_value("").is_ok());
        assert!(check_label_value("-a").is_err());
        assert!(check_json_pointer("/a~0b~1c").is_ok());
        assert!(check_json_pointer("").is_err());
    }
}
