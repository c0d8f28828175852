//! Which override policies apply to a template, and in what order (Karmada's: every
//! ClusterOverridePolicy first, then the OverridePolicies of the template's namespace; within
//! each kind by implicit priority, then by name).

use crate::policy::matching::{ImplicitPriority, selector_priority};
use crate::policy::types::OverrideSpec;
use crate::policy::{Policy, PolicySet, Template};

/// The two kinds of override policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OverrideKind {
    /// Cluster-scoped; applied first.
    ClusterOverridePolicy,
    /// Namespaced; applies to templates of its own namespace, after every ClusterOverridePolicy.
    OverridePolicy,
}

impl std::fmt::Display for OverrideKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OverrideKind::ClusterOverridePolicy => "ClusterOverridePolicy",
            OverrideKind::OverridePolicy => "OverridePolicy",
        })
    }
}

/// An override policy that selects a template, in the order it is applied.
#[derive(Debug, Clone, Copy)]
pub struct ApplicableOverride<'a> {
    /// Which kind of policy.
    pub kind: OverrideKind,
    /// The policy itself.
    pub policy: &'a Policy<OverrideSpec>,
}

impl ApplicableOverride<'_> {
    /// `ClusterOverridePolicy/NAME` or `OverridePolicy/NAMESPACE/NAME` (the form of
    /// `fedsched.io/policy`).
    pub fn display_ref(&self) -> String {
        match self.policy.namespace() {
            Some(ns) if self.kind == OverrideKind::OverridePolicy => {
                format!("{}/{ns}/{}", self.kind, self.policy.name())
            }
            _ => format!("{}/{}", self.kind, self.policy.name()),
        }
    }
}

/// The override policies that select `t`, in Karmada's application order (see the [`super`] module
/// documentation). Empty resource selectors select every template; otherwise
/// [`selector_priority`] decides, the best selector of a policy giving its priority.
pub fn applicable<'a>(set: &'a PolicySet, t: &Template) -> Vec<ApplicableOverride<'a>> {
    let ns = t.key.namespace.as_deref();
    applicable_among(
        set,
        &mut set.override_policies.iter().map(|p| &**p).filter(|p| ns.is_some() && p.namespace() == ns),
        t,
    )
}

/// [`applicable`] with an index of the set (the template namespace's OverridePolicies are
/// looked up instead of scanned).
pub fn applicable_indexed<'a>(
    index: &crate::policy::matching::PolicyIndex<'a>,
    t: &Template,
) -> Vec<ApplicableOverride<'a>> {
    applicable_among(index.set(), &mut index.override_policies(t.key.namespace.as_deref()), t)
}

fn applicable_among<'a>(
    set: &'a PolicySet,
    namespaced: &mut dyn Iterator<Item = &'a Policy<OverrideSpec>>,
    t: &Template,
) -> Vec<ApplicableOverride<'a>> {
    let pick = |kind: OverrideKind, policies: &mut dyn Iterator<Item = &'a Policy<OverrideSpec>>| {
        let mut found: Vec<(ImplicitPriority, &'a str, &'a Policy<OverrideSpec>)> = policies
            .filter_map(|p| {
                let prio = if p.spec.resource_selectors.is_empty() {
                    Some(ImplicitPriority::MatchAll)
                } else {
                    p.spec.resource_selectors.iter().filter_map(|s| selector_priority(s, t)).max()
                }?;
                Some((prio, p.name(), p))
            })
            .collect();
        found.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        found.into_iter().map(move |(_, _, policy)| ApplicableOverride { kind, policy }).collect::<Vec<_>>()
    };
    let mut out = pick(OverrideKind::ClusterOverridePolicy, &mut set.cluster_override_policies.iter().map(|p| &**p));
    if t.key.namespace.is_some() {
        out.extend(pick(OverrideKind::OverridePolicy, namespaced));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_fixtures::deployment;
    use super::*;
    use crate::policy::types::{ObjectMeta, ResourceSelector};
    use crate::policy::{ObjectKey, Source};

    #[test]
    fn applicable_order_cop_first_then_op_by_priority_then_name() {
        let t = Template {
            key: ObjectKey {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("default".into()),
                name: "nginx".into(),
            },
            meta: ObjectMeta {
                name: "nginx".into(),
                namespace: Some("default".into()),
                labels: [("app".to_string(), "nginx".to_string())].into(),
                ..Default::default()
            },
            object: deployment(),
            source: Source { file: "d.yaml".into(), document: 1 },
            unknown_fields: Vec::new(),
        };
        let sel = |name: Option<&str>, labels: bool| ResourceSelector {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: name.map(str::to_string),
            label_selector: labels.then(|| crate::policy::types::LabelSelector {
                match_labels: [("app".to_string(), "nginx".to_string())].into(),
                ..Default::default()
            }),
            namespace: None,
        };
        let pol = |name: &str, ns: Option<&str>, selectors: Vec<ResourceSelector>| {
            std::sync::Arc::new(Policy {
                meta: ObjectMeta { name: name.into(), namespace: ns.map(str::to_string), ..Default::default() },
                spec: OverrideSpec { resource_selectors: selectors, ..Default::default() },
                source: Source { file: "p.yaml".into(), document: 1 },
            })
        };
        let set = PolicySet {
            override_policies: vec![
                pol("a-by-name", Some("default"), vec![sel(Some("nginx"), false)]),
                pol("b-all", Some("default"), vec![]),
                pol("c-labels", Some("default"), vec![sel(None, true)]),
                pol("d-kind", Some("default"), vec![sel(None, false)]),
                pol("e-other-ns", Some("other"), vec![]),
                pol("f-other-name", Some("default"), vec![sel(Some("web"), false)]),
            ],
            cluster_override_policies: vec![
                pol("z-cop", None, vec![sel(Some("nginx"), false)]),
                pol("y-cop", None, vec![]),
            ],
            ..Default::default()
        };
        let got: Vec<String> = applicable(&set, &t).iter().map(ApplicableOverride::display_ref).collect();
        assert_eq!(
            got,
            vec![
                "ClusterOverridePolicy/y-cop",
                "ClusterOverridePolicy/z-cop",
                "OverridePolicy/default/b-all",
                "OverridePolicy/default/d-kind",
                "OverridePolicy/default/c-labels",
                "OverridePolicy/default/a-by-name",
            ]
        );
    }
}
