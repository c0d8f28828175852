//! What fedsched does with each Karmada field it accepts: the fields it does not implement are
//! named here, as warnings that start with [`UNSUPPORTED`] (file, document, field), so that
//! `check` prints them and every pass logs them ([`super::validate::warnings`] includes them).
//! A field that is implemented has a behaviour test; the unit test of this module walks every
//! field of the policy types and fails on one that is neither (see `FIELDS` in the tests).
//!
//! Implemented elsewhere and therefore not warned about: `suspension` (the publish keeps the
//! workload's files), `preserveResourcesOnDeletion` (the GitOps tools' prune opt-outs on the
//! rendered objects), `dependentOverrides` whose OverridePolicies are in the repository (a pass
//! reads the whole repository at once, so they are always present), `conflictResolution:
//! Overwrite` (what Argo CD and Flux do with an object that already exists in a member).

use serde_json::Value;

use super::types::{ActivationPreference, ConflictResolution, PropagationSpec};
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
    for p in &set.cluster_taint_policies {
        out.push(LoadError::at(
            &p.source,
            "spec",
            format!(
                "{UNSUPPORTED} ClusterTaintPolicy `{}` adds no taint: fedsched does not evaluate cluster \
                 conditions against taint policies; put the taints in the Cluster object's spec.taints",
                p.meta.name
            ),
        ));
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
            format!("{UNSUPPORTED} deprecated by Karmada in favour of propagateDeps and without effect; use propagateDeps"),
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
    if s.activation_preference == Some(ActivationPreference::Lazy) {
        warn(
            "spec.activationPreference",
            format!("{UNSUPPORTED} Lazy: a change of this policy applies to its templates at the next pass"),
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
    for c in &set.clusters {
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
                 would send it nothing); list the cluster's APIs to have workloads of other kinds kept away"
                    .into(),
            );
        }
    }
}

/// Customization operations that need the status of the workload in its members (which the
/// passes do not read) or that concern objects the members changed (which fedsched never sees).
const UNUSED_OPERATIONS: &[(&str, &str)] = &[
    ("healthInterpretation", "the passes do not judge the health of workloads with scripts"),
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
                out.push(LoadError::at(
                    &o.source,
                    format!("spec.customizations.{op}"),
                    format!("{UNSUPPORTED} {why}"),
                ));
            }
        }
    }
}
