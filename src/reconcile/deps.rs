//! propagateDeps: which templates are dependencies of claimed workloads
//! ([`dependency_map`]), the "schedule" of a dependency no policy claims ([`attached`]), and
//! the union of a dependency's targets with its dependents' clusters ([`add_required`]).
//! The decide stage decides the workloads first, then the dependencies they pull.

use std::collections::{BTreeMap, BTreeSet};

use crate::policy::matching::PolicyIndex;
use crate::policy::{ObjectKey, PolicyRef, Template};
use crate::schedule::{ClusterVerdict, Fleet, Outcome, ScheduleResult};

use super::Inputs;

/// Reason recorded on a cluster that receives a dependency because a workload needs it.
pub const REQUIRED_BY_PREFIX: &str = "propagateDeps: required by ";

/// Dependencies (templates in the repository) → the workloads that pull them: templates
/// claimed by a policy with `propagateDeps: true` whose pod template references them. The
/// claim uses the stored previous claimer (`previous_policy`: the policy of the template's
/// placement) like the pass does.
pub fn dependency_map(
    inputs: &Inputs,
    previous_policy: impl Fn(&Template) -> Option<PolicyRef>,
) -> BTreeMap<ObjectKey, Vec<ObjectKey>> {
    dependency_map_indexed(inputs, &PolicyIndex::new(&inputs.set), previous_policy)
}

/// [`dependency_map`] over an index of the set, with the previous claimer of each template.
pub(super) fn dependency_map_indexed(
    inputs: &Inputs,
    index: &PolicyIndex<'_>,
    previous_policy: impl Fn(&Template) -> Option<PolicyRef>,
) -> BTreeMap<ObjectKey, Vec<ObjectKey>> {
    let set = &inputs.set;
    let any_deps =
        set.propagation_policies.iter().chain(&set.cluster_propagation_policies).any(|p| p.spec.propagate_deps);
    let mut out: BTreeMap<ObjectKey, Vec<ObjectKey>> = BTreeMap::new();
    if !any_deps {
        return out;
    }
    for t in &set.templates {
        let prev = previous_policy(t);
        let Some(claim) = index.claim_with_previous(t, prev.as_ref()) else {
            continue;
        };
        if !index.propagation_policy(&claim.policy).is_some_and(|p| p.spec.propagate_deps) {
            continue;
        }
        for dep in crate::model::deps::dependencies(&t.key, &t.object, &inputs.interpreters) {
            if dep != t.key && set.template(&dep).is_some() {
                out.entry(dep).or_default().push(t.key.clone());
            }
        }
    }
    out
}

/// The "schedule" of a dependency no policy claims: every cluster feasible, none selected yet.
pub(super) fn attached(fleet: &Fleet) -> ScheduleResult {
    ScheduleResult {
        outcome: Outcome::Scheduled { targets: BTreeMap::new() },
        verdicts: fleet
            .names()
            .iter()
            .map(|n| ClusterVerdict {
                feasible: true,
                reasons: vec!["not claimed by a policy: goes only where a workload needs it".into()],
                ..ClusterVerdict::rejected(n.clone(), Vec::new())
            })
            .collect::<Vec<_>>()
            .into(),
        rejected: Vec::new(),
        universe: fleet.universe(),
        affinity_name: None,
    }
}

/// Adds the clusters of the dependents to a dependency's targets (Karmada merges a binding's
/// `requiredBy` clusters into its own result), noting which workload pulled it. A cluster the
/// dependency's own filters rejected gets a full verdict (rejected, selected) of its own.
pub(super) fn add_required(
    result: &mut ScheduleResult,
    targets: &mut BTreeMap<String, Option<i32>>,
    required: &[(ObjectKey, BTreeSet<String>, PolicyRef)],
    fleet: &Fleet,
) {
    for (dependent, clusters, _) in required {
        for c in clusters {
            let Some(p) = fleet.position(c) else { continue };
            targets.entry(c.clone()).or_insert(None);
            let i = match result.verdicts.binary_search_by(|v| v.name.as_str().cmp(c)) {
                Ok(i) => i,
                Err(i) => {
                    let at = p.in_universe();
                    let Some(g) = result.rejected.iter_mut().find(|g| g.clusters.contains(at)) else { continue };
                    g.clusters.remove(at);
                    let verdict = ClusterVerdict::rejected(c.clone(), g.reasons.clone());
                    std::sync::Arc::make_mut(&mut result.verdicts).insert(i, verdict);
                    i
                }
            };
            let Some(v) = std::sync::Arc::make_mut(&mut result.verdicts).get_mut(i) else { continue };
            v.selected = true;
            v.reasons.push(format!("{REQUIRED_BY_PREFIX}{dependent}"));
        }
    }
    result.rejected.retain(|g| !g.clusters.is_empty());
    result.outcome = Outcome::Scheduled { targets: targets.clone() };
}
