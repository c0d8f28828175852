//! Karmada's mutating-webhook defaults, applied after loading because there is no API server.
//!
//! What is filled in (from `pkg/webhook/propagationpolicy/mutating.go`,
//! `pkg/util/helper/policy.go`, the CRD defaults and `pkg/apis/cluster/mutation`):
//!
//! - PropagationPolicy: an empty `resourceSelectors[].namespace` becomes the policy namespace
//!   (not for ClusterPropagationPolicy, whose selectors may span namespaces);
//! - PP and CPP: a present `replicaScheduling` with no type becomes `Divided` (the CRD
//!   default); `Divided` with no division preference becomes `Weighted`;
//! - spread constraints with neither `spreadByField` nor `spreadByLabel` spread by `cluster`;
//!   `minGroups: 0` becomes 1;
//! - `failover.application`: `purgeMode` defaults to `Gracefully`, `gracePeriodSeconds` to 600
//!   when the mode is `Gracefully`, `decisionConditions.tolerationSeconds` to 300;
//!   `failover.cluster.purgeMode` defaults to `Gracefully`;
//! - Cluster: the deprecated `spec.zone` is moved into `spec.zones` (only when `zones` is
//!   empty; both set is a validation error).
//!
//! Deliberately **not** filled in: an absent `replicaScheduling` stays `None`, which means
//! `Duplicated` (Karmada's `ReplicaSchedulingType()` helper); later stages must treat `None`
//! that way instead of expecting a filled-in block.

use super::PolicySet;
use super::types::{PropagationSpec, PurgeMode, ReplicaDivisionPreference, ReplicaSchedulingType, SpreadByField};

/// Grace period Karmada's webhook sets for `purgeMode: Gracefully` application failover.
pub const DEFAULT_GRACE_PERIOD_SECONDS: i32 = 600;
/// CRD default of `failover.application.decisionConditions.tolerationSeconds`.
pub const DEFAULT_TOLERATION_SECONDS: i32 = 300;

/// Applies every default to every object of the set, in place. Idempotent.
pub fn apply(set: &mut PolicySet) {
    for p in &mut set.propagation_policies {
        // Defaults run before the set is shared: no copy is made.
        let p = std::sync::Arc::make_mut(p);
        if let Some(ns) = p.meta.namespace.clone() {
            for sel in &mut p.spec.resource_selectors {
                if sel.namespace.as_deref().unwrap_or("").is_empty() {
                    sel.namespace = Some(ns.clone());
                }
            }
        }
        propagation_spec(&mut p.spec);
    }
    for p in &mut set.cluster_propagation_policies {
        propagation_spec(&mut std::sync::Arc::make_mut(p).spec);
    }
    for c in std::sync::Arc::make_mut(&mut set.clusters).iter_mut() {
        if c.spec.zones.is_empty()
            && let Some(zone) = c.spec.zone.take()
        {
            if zone.is_empty() {
                continue;
            }
            c.spec.zones = vec![zone];
        }
    }
}

/// The defaults shared by PropagationPolicy and ClusterPropagationPolicy.
pub fn propagation_spec(spec: &mut PropagationSpec) {
    let placement = &mut spec.placement;
    if let Some(rs) = &mut placement.replica_scheduling {
        let ty = *rs.replica_scheduling_type.get_or_insert(ReplicaSchedulingType::Divided);
        if ty == ReplicaSchedulingType::Divided && rs.replica_division_preference.is_none() {
            rs.replica_division_preference = Some(ReplicaDivisionPreference::Weighted);
        }
    }
    for sc in &mut placement.spread_constraints {
        let no_label = sc.spread_by_label.as_deref().unwrap_or("").is_empty();
        if sc.spread_by_field.is_none() && no_label {
            sc.spread_by_field = Some(SpreadByField::Cluster);
        }
        if sc.min_groups == 0 {
            sc.min_groups = 1;
        }
    }
    if let Some(failover) = &mut spec.failover {
        if let Some(app) = &mut failover.application {
            let mode = *app.purge_mode.get_or_insert(PurgeMode::Gracefully);
            if mode == PurgeMode::Gracefully && app.grace_period_seconds.is_none() {
                app.grace_period_seconds = Some(DEFAULT_GRACE_PERIOD_SECONDS);
            }
            if app.decision_conditions.toleration_seconds.is_none() {
                app.decision_conditions.toleration_seconds = Some(DEFAULT_TOLERATION_SECONDS);
            }
        }
        if let Some(cluster) = &mut failover.cluster
            && cluster.purge_mode.is_none()
        {
            cluster.purge_mode = Some(PurgeMode::Gracefully);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::policy::load::load_sources;

    fn set_of(yaml: &str) -> PolicySet {
        let (mut set, errors) = load_sources([(PathBuf::from("t.yaml"), yaml.to_string())]);
        assert!(errors.is_empty(), "{errors:?}");
        apply(&mut set);
        set
    }

    const PP: &str = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: p, namespace: team}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment}
  - {apiVersion: apps/v1, kind: Deployment, namespace: other}
  propagateDeps: true
  placement:
    replicaScheduling: {}
    spreadConstraints:
    - {maxGroups: 2}
    - {spreadByLabel: topology, minGroups: 3}
  failover:
    application: {decisionConditions: {}}
    cluster: {}
"#;

    #[test]
    fn propagation_defaults() {
        let set = set_of(PP);
        let spec = &set.propagation_policies[0].spec;
        let ns: Vec<_> = spec.resource_selectors.iter().map(|s| s.namespace.as_deref()).collect();
        assert_eq!(ns, vec![Some("team"), Some("other")]);
        let rs = spec.placement.replica_scheduling.as_ref();
        assert_eq!(rs.and_then(|r| r.replica_scheduling_type), Some(ReplicaSchedulingType::Divided));
        assert_eq!(rs.and_then(|r| r.replica_division_preference), Some(ReplicaDivisionPreference::Weighted));
        let sc = &spec.placement.spread_constraints;
        assert_eq!(sc[0].spread_by_field, Some(SpreadByField::Cluster));
        assert_eq!(sc[0].min_groups, 1);
        assert_eq!(sc[1].spread_by_field, None);
        assert_eq!(sc[1].min_groups, 3);
        let f = spec.failover.as_ref();
        let app = f.and_then(|f| f.application.as_ref());
        assert_eq!(app.and_then(|a| a.purge_mode), Some(PurgeMode::Gracefully));
        assert_eq!(app.and_then(|a| a.grace_period_seconds), Some(600));
        assert_eq!(app.and_then(|a| a.decision_conditions.toleration_seconds), Some(300));
        let cl = f.and_then(|f| f.cluster.as_ref());
        assert_eq!(cl.and_then(|c| c.purge_mode), Some(PurgeMode::Gracefully));
    }

    #[test]
    fn absent_replica_scheduling_stays_none_and_duplicated_stays() {
        let set = set_of(
            r#"
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: a}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: b}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
  placement: {replicaScheduling: {replicaSchedulingType: Duplicated}}
  failover: {application: {decisionConditions: {}, purgeMode: Directly}}
"#,
        );
        let a = &set.cluster_propagation_policies[0].spec;
        assert!(a.placement.replica_scheduling.is_none());
        assert_eq!(a.resource_selectors[0].namespace, None);
        let b = &set.cluster_propagation_policies[1].spec;
        let rs = b.placement.replica_scheduling.as_ref();
        assert_eq!(rs.and_then(|r| r.replica_division_preference), None);
        let app = b.failover.as_ref().and_then(|f| f.application.as_ref());
        assert_eq!(app.and_then(|a| a.grace_period_seconds), None);
    }

    #[test]
    fn cluster_zone_migrates_and_apply_is_idempotent() {
        let yaml = r#"
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: a}
spec: {syncMode: Push, zone: az-1}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: b}
spec: {syncMode: Push, zone: az-1, zones: [az-2]}
"#;
        let mut set = set_of(yaml);
        assert_eq!(set.clusters[0].spec.zones, vec!["az-1".to_string()]);
        assert_eq!(set.clusters[0].spec.zone, None);
        assert_eq!(set.clusters[1].spec.zone.as_deref(), Some("az-1"));
        let before = set.clone();
        apply(&mut set);
        assert_eq!(before, set);
        let mut pp = set_of(PP);
        let once = pp.clone();
        apply(&mut pp);
        assert_eq!(once, pp);
    }
}
