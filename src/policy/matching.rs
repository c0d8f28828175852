//! Which PropagationPolicy claims which template, and selector matching.
//!
//! Pure functions over the loaded [`PolicySet`], following Karmada's detector
//! (`pkg/detector/policy.go`, `compare.go`) and `pkg/util/selector.go`:
//!
//! - [`label_selector_matches`]: Kubernetes label-selector semantics;
//! - [`cluster_matches`]: Karmada's `ClusterMatches` (exclude, label selector, field selector
//!   with the special multi-zone rules, cluster names);
//! - [`selector_priority`] / [`policy_priority`]: the implicit priority of a match;
//! - [`claim`]: the policy that claims a template and the policies it shadows.
//!
//! Not modelled here: Karmada keeps a template with the policy that first claimed it (even if
//! a better policy appears later) unless preemption is enabled. That stickiness needs the
//! previous decision, which comes from the store; [`claim`] answers "who would claim this
//! template from scratch".

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::types::{
    ClusterAffinity, LabelSelector, LabelSelectorRequirement, PropagationSpec, ResourceSelector, SelectorOperator,
};
use super::validate::selector_requirement_problem;
use super::{ClusterObject, Policy, PolicyKind, PolicyRef, PolicySet, Template};

/// Namespaces whose templates no ClusterPropagationPolicy may claim.
pub const RESERVED_NAMESPACES: &[&str] = &["karmada-system", "karmada-cluster"];
/// Prefix of Karmada's per-cluster execution namespaces, also reserved.
pub const EXECUTION_NAMESPACE_PREFIX: &str = "karmada-es-";

/// Whether a namespace is reserved for Karmada (`karmada-system`, `karmada-cluster`,
/// `karmada-es-*`).
pub fn is_reserved_namespace(ns: &str) -> bool {
    RESERVED_NAMESPACES.contains(&ns) || ns.starts_with(EXECUTION_NAMESPACE_PREFIX)
}

/// What cluster matching looks at.
#[derive(Debug, Clone, Copy)]
pub struct ClusterFacts<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub provider: Option<&'a str>,
    pub region: Option<&'a str>,
    pub zones: &'a [String],
}

impl<'a> ClusterFacts<'a> {
    /// The facts of a declared Cluster object (use after [`super::defaults::apply`], which
    /// moves the deprecated `zone` into `zones`).
    pub fn of(c: &'a ClusterObject) -> Self {
        ClusterFacts {
            name: &c.meta.name,
            labels: &c.meta.labels,
            provider: c.spec.provider.as_deref(),
            region: c.spec.region.as_deref(),
            zones: &c.spec.zones,
        }
    }
}

/// Kubernetes label-selector semantics: every `matchLabels` pair and every expression must
/// hold; an empty selector matches everything; an invalid selector (In/NotIn without values,
/// Exists/DoesNotExist with values, Gt/Lt) never matches.
pub fn label_selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if sel.match_expressions.iter().any(|r| selector_requirement_problem(r.operator, &r.values).is_some()) {
        return false;
    }
    sel.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        && sel.match_expressions.iter().all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
}

/// One requirement against the value of its key (None = key absent), with node-selector
/// semantics for `Gt`/`Lt` (integer comparison; absent or non-integer values do not match).
fn requirement_matches(r: &LabelSelectorRequirement, value: Option<&str>) -> bool {
    let contains = |v: &str| r.values.iter().any(|x| x == v);
    match r.operator {
        SelectorOperator::In => value.is_some_and(contains),
        SelectorOperator::NotIn => !value.is_some_and(contains),
        SelectorOperator::Exists => value.is_some(),
        SelectorOperator::DoesNotExist => value.is_none(),
        SelectorOperator::Gt | SelectorOperator::Lt => {
            let (Some(v), [bound]) = (value, r.values.as_slice()) else {
                return false;
            };
            match (v.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(v), Ok(b)) if r.operator == SelectorOperator::Gt => v > b,
                (Ok(v), Ok(b)) => v < b,
                _ => false,
            }
        }
    }
}

/// Karmada's `ClusterMatches`: a cluster in `exclude` never matches; otherwise the label
/// selector, the field selector and `clusterNames` (empty = any) must all match. The field
/// selector's `provider` / `region` keys behave like node-selector requirements on a label
/// that is absent when the cluster has no value; `zone` compares against the cluster's zone
/// list: `In` = the lists overlap, `NotIn` = they do not, `Exists` = the cluster has zones,
/// `DoesNotExist` = it has none. An invalid requirement never matches. An empty affinity
/// matches every cluster.
pub fn cluster_matches(aff: &ClusterAffinity, c: &ClusterFacts) -> bool {
    if aff.exclude.iter().any(|n| n == c.name) {
        return false;
    }
    if let Some(ls) = &aff.label_selector
        && !label_selector_matches(ls, c.labels)
    {
        return false;
    }
    if let Some(fs) = &aff.field_selector {
        for r in &fs.match_expressions {
            let ok = match r.key.as_str() {
                "zone" => zones_match(r, c.zones),
                key => {
                    let value = match key {
                        "provider" => c.provider,
                        "region" => c.region,
                        _ => None,
                    }
                    .filter(|v| !v.is_empty());
                    node_requirement_valid(r) && requirement_matches(r, value)
                }
            };
            if !ok {
                return false;
            }
        }
    }
    aff.cluster_names.is_empty() || aff.cluster_names.iter().any(|n| n == c.name)
}

fn node_requirement_valid(r: &LabelSelectorRequirement) -> bool {
    match r.operator {
        SelectorOperator::In | SelectorOperator::NotIn => !r.values.is_empty(),
        SelectorOperator::Exists | SelectorOperator::DoesNotExist => r.values.is_empty(),
        SelectorOperator::Gt | SelectorOperator::Lt => r.values.len() == 1,
    }
}

fn zones_match(r: &LabelSelectorRequirement, zones: &[String]) -> bool {
    if !node_requirement_valid(r) {
        return false;
    }
    let overlap = || zones.iter().any(|z| r.values.contains(z));
    match r.operator {
        SelectorOperator::In => overlap(),
        SelectorOperator::NotIn => !overlap(),
        SelectorOperator::Exists => !zones.is_empty(),
        SelectorOperator::DoesNotExist => zones.is_empty(),
        SelectorOperator::Gt | SelectorOperator::Lt => false,
    }
}

/// How specifically a resource selector matched a template. Higher is more specific.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ImplicitPriority {
    /// apiVersion and kind (and namespace, if set) only.
    MatchAll = 1,
    /// A label selector matched.
    LabelSelector = 2,
    /// The name matched.
    Name = 3,
}

/// Karmada's `ResourceSelectorPriority`: None when the selector does not match. apiVersion
/// and kind must be equal and the namespace too if the selector sets one (a cluster-scoped
/// template has no namespace); a `name` decides alone (the label selector is then ignored);
/// else a label selector (even an empty one) gives [`ImplicitPriority::LabelSelector`]; else
/// [`ImplicitPriority::MatchAll`].
pub fn selector_priority(sel: &ResourceSelector, t: &Template) -> Option<ImplicitPriority> {
    if sel.api_version != t.key.api_version || sel.kind != t.key.kind {
        return None;
    }
    if let Some(ns) = sel.namespace.as_deref().filter(|ns| !ns.is_empty())
        && t.key.namespace.as_deref() != Some(ns)
    {
        return None;
    }
    if let Some(name) = sel.name.as_deref().filter(|n| !n.is_empty()) {
        return (name == t.key.name).then_some(ImplicitPriority::Name);
    }
    match &sel.label_selector {
        None => Some(ImplicitPriority::MatchAll),
        Some(ls) => label_selector_matches(ls, &t.meta.labels).then_some(ImplicitPriority::LabelSelector),
    }
}

/// The best implicit priority over all selectors; None when none matches.
pub fn policy_priority(selectors: &[ResourceSelector], t: &Template) -> Option<ImplicitPriority> {
    selectors.iter().filter_map(|s| selector_priority(s, t)).max()
}

/// The policy that claims a template, and every other policy that matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub policy: PolicyRef,
    /// Other matching policies in claim order: PropagationPolicies first, then
    /// ClusterPropagationPolicies, each best first.
    pub shadowed: Vec<PolicyRef>,
}

/// Which policy claims `t` (Karmada's detector, without the "already claimed" stickiness):
///
/// 1. the best PropagationPolicy of the template's namespace (a PP only matches templates of
///    its own namespace; cluster-scoped templates are never claimed by a PP);
/// 2. only if no PP matches, the best ClusterPropagationPolicy — except for templates in
///    reserved namespaces (`karmada-system`, `karmada-cluster`, `karmada-es-*`).
///
/// "Best" = highest explicit `priority`, then highest [`ImplicitPriority`], then the
/// lexicographically smaller name (byte order). A PP beats every CPP whatever the priorities.
pub fn claim(set: &PolicySet, t: &Template) -> Option<Claim> {
    let mut pps = candidates(
        set.propagation_policies
            .iter()
            .filter(|p| t.key.namespace.is_some() && p.namespace() == t.key.namespace.as_deref()),
        PolicyKind::PropagationPolicy,
        t,
    );
    let cpp_allowed = !t.key.namespace.as_deref().is_some_and(is_reserved_namespace);
    let mut cpps = if cpp_allowed {
        candidates(set.cluster_propagation_policies.iter(), PolicyKind::ClusterPropagationPolicy, t)
    } else {
        Vec::new()
    };
    pps.sort_by(compare_candidates);
    cpps.sort_by(compare_candidates);
    let mut all = pps.into_iter().chain(cpps).map(|c| c.policy);
    let policy = all.next()?;
    Some(Claim { policy, shadowed: all.collect() })
}

struct Candidate {
    priority: i32,
    implicit: ImplicitPriority,
    policy: PolicyRef,
}

fn candidates<'a>(
    policies: impl Iterator<Item = &'a Policy<PropagationSpec>>,
    kind: PolicyKind,
    t: &Template,
) -> Vec<Candidate> {
    policies
        .filter_map(|p| {
            let implicit = policy_priority(&p.spec.resource_selectors, t)?;
            Some(Candidate {
                priority: p.spec.priority,
                implicit,
                policy: PolicyRef { kind, namespace: p.meta.namespace.clone(), name: p.meta.name.clone() },
            })
        })
        .collect()
}

/// Best first: explicit priority desc, implicit priority desc, name asc.
fn compare_candidates(a: &Candidate, b: &Candidate) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then(b.implicit.cmp(&a.implicit))
        .then_with(|| a.policy.name.as_bytes().cmp(b.policy.name.as_bytes()))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::policy::types::{FieldSelector, ObjectMeta};
    use crate::policy::{ObjectKey, Source, defaults};

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn req(key: &str, op: SelectorOperator, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op,
            values: values.iter().map(|s| s.to_string()).collect(),
        }
    }

    use SelectorOperator::{DoesNotExist, Exists, Gt, In, Lt, NotIn};

    #[test]
    fn label_selectors() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        let sel = |ml: &[(&str, &str)], me: Vec<LabelSelectorRequirement>| LabelSelector {
            match_labels: labels(ml),
            match_expressions: me,
        };
        let cases = [
            (sel(&[], vec![]), true),
            (sel(&[("app", "web")], vec![]), true),
            (sel(&[("app", "db")], vec![]), false),
            (sel(&[("app", "web"), ("x", "y")], vec![]), false),
            (sel(&[], vec![req("app", In, &["web", "db"])]), true),
            (sel(&[], vec![req("app", In, &["db"])]), false),
            (sel(&[], vec![req("missing", In, &["a"])]), false),
            (sel(&[], vec![req("app", NotIn, &["db"])]), true),
            (sel(&[], vec![req("missing", NotIn, &["a"])]), true),
            (sel(&[], vec![req("app", NotIn, &["web"])]), false),
            (sel(&[], vec![req("tier", Exists, &[])]), true),
            (sel(&[], vec![req("missing", Exists, &[])]), false),
            (sel(&[], vec![req("missing", DoesNotExist, &[])]), true),
            (sel(&[], vec![req("app", DoesNotExist, &[])]), false),
            // invalid selectors never match
            (sel(&[], vec![req("app", In, &[])]), false),
            (sel(&[], vec![req("app", Exists, &["web"])]), false),
            (sel(&[], vec![req("n", Gt, &["1"])]), false),
            (sel(&[], vec![req("tier", Exists, &[]), req("app", NotIn, &[])]), false),
        ];
        for (i, (s, want)) in cases.iter().enumerate() {
            assert_eq!(label_selector_matches(s, &l), *want, "case {i}: {s:?}");
        }
    }

    fn facts<'a>(
        name: &'a str,
        labels: &'a BTreeMap<String, String>,
        provider: Option<&'a str>,
        region: Option<&'a str>,
        zones: &'a [String],
    ) -> ClusterFacts<'a> {
        ClusterFacts { name, labels, provider, region, zones }
    }

    fn fields(reqs: Vec<LabelSelectorRequirement>) -> ClusterAffinity {
        ClusterAffinity { field_selector: Some(FieldSelector { match_expressions: reqs }), ..Default::default() }
    }

    #[test]
    fn cluster_affinity() {
        let l = labels(&[("env", "prod")]);
        let zones = vec!["az-1".to_string(), "az-2".to_string()];
        let none: Vec<String> = Vec::new();
        let c = facts("m1", &l, Some("aws"), Some("eu"), &zones);
        let bare = facts("m2", &l, None, None, &none);
        let names = |n: &[&str]| ClusterAffinity {
            cluster_names: n.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let cases: Vec<(&str, ClusterAffinity, ClusterFacts, bool)> = vec![
            ("empty matches all", ClusterAffinity::default(), c, true),
            ("names", names(&["m1", "m3"]), c, true),
            ("names miss", names(&["m3"]), c, false),
            ("exclude wins over names", ClusterAffinity { exclude: vec!["m1".into()], ..names(&["m1"]) }, c, false),
            (
                "labels and names",
                ClusterAffinity {
                    label_selector: Some(LabelSelector {
                        match_labels: labels(&[("env", "dev")]),
                        match_expressions: vec![],
                    }),
                    ..names(&["m1"])
                },
                c,
                false,
            ),
            ("provider In", fields(vec![req("provider", In, &["aws"])]), c, true),
            ("provider In, none set", fields(vec![req("provider", In, &["aws"])]), bare, false),
            ("region NotIn", fields(vec![req("region", NotIn, &["us"])]), c, true),
            ("region NotIn, none set", fields(vec![req("region", NotIn, &["eu"])]), bare, true),
            ("provider Exists", fields(vec![req("provider", Exists, &[])]), bare, false),
            (
                "all expressions must hold",
                fields(vec![req("provider", In, &["aws"]), req("region", In, &["us"])]),
                c,
                false,
            ),
            ("zone In = overlap", fields(vec![req("zone", In, &["az-2", "az-9"])]), c, true),
            ("zone In, no overlap", fields(vec![req("zone", In, &["az-9"])]), c, false),
            ("zone NotIn = no overlap", fields(vec![req("zone", NotIn, &["az-9"])]), c, true),
            ("zone NotIn, overlap", fields(vec![req("zone", NotIn, &["az-1"])]), c, false),
            ("zone NotIn, no zones", fields(vec![req("zone", NotIn, &["az-1"])]), bare, true),
            ("zone Exists", fields(vec![req("zone", Exists, &[])]), c, true),
            ("zone Exists, no zones", fields(vec![req("zone", Exists, &[])]), bare, false),
            ("zone DoesNotExist", fields(vec![req("zone", DoesNotExist, &[])]), bare, true),
            ("invalid: In without values", fields(vec![req("zone", In, &[])]), c, false),
            ("invalid: Lt on zone", fields(vec![req("zone", Lt, &["1"])]), c, false),
        ];
        for (what, aff, f, want) in cases {
            assert_eq!(cluster_matches(&aff, &f), want, "{what}");
        }
    }

    fn template(api: &str, kind: &str, ns: Option<&str>, name: &str, l: &[(&str, &str)]) -> Template {
        Template {
            key: ObjectKey {
                api_version: api.into(),
                kind: kind.into(),
                namespace: ns.map(str::to_string),
                name: name.into(),
            },
            meta: ObjectMeta {
                name: name.into(),
                namespace: ns.map(str::to_string),
                labels: labels(l),
                ..Default::default()
            },
            object: serde_json::Value::Null,
            source: Source { file: PathBuf::from("t.yaml"), document: 1 },
        }
    }

    fn rs(api: &str, kind: &str, ns: Option<&str>, name: Option<&str>, ls: Option<LabelSelector>) -> ResourceSelector {
        ResourceSelector {
            api_version: api.into(),
            kind: kind.into(),
            namespace: ns.map(str::to_string),
            name: name.map(str::to_string),
            label_selector: ls,
        }
    }

    #[test]
    fn selector_priorities() {
        let t = template("apps/v1", "Deployment", Some("ns"), "web", &[("app", "web")]);
        let cluster_scoped = template("v1", "Namespace", None, "ns", &[]);
        let app = |v: &str| Some(LabelSelector { match_labels: labels(&[("app", v)]), match_expressions: vec![] });
        let cases = [
            (rs("apps/v1", "Deployment", None, None, None), &t, Some(ImplicitPriority::MatchAll)),
            (rs("apps/v1", "Deployment", Some("ns"), None, None), &t, Some(ImplicitPriority::MatchAll)),
            (rs("apps/v1", "Deployment", Some("other"), None, None), &t, None),
            (rs("apps/v1beta1", "Deployment", None, None, None), &t, None),
            (rs("apps/v1", "StatefulSet", None, None, None), &t, None),
            (rs("apps/v1", "Deployment", None, None, app("web")), &t, Some(ImplicitPriority::LabelSelector)),
            (
                rs("apps/v1", "Deployment", None, None, Some(LabelSelector::default())),
                &t,
                Some(ImplicitPriority::LabelSelector),
            ),
            (rs("apps/v1", "Deployment", None, None, app("db")), &t, None),
            // a name decides alone: the label selector is ignored
            (rs("apps/v1", "Deployment", None, Some("web"), app("db")), &t, Some(ImplicitPriority::Name)),
            (rs("apps/v1", "Deployment", None, Some("api"), app("web")), &t, None),
            (rs("v1", "Namespace", None, Some("ns"), None), &cluster_scoped, Some(ImplicitPriority::Name)),
            (rs("v1", "Namespace", Some("ns"), None, None), &cluster_scoped, None),
        ];
        for (i, (sel, t, want)) in cases.iter().enumerate() {
            assert_eq!(selector_priority(sel, t), *want, "case {i}");
        }
        let both =
            [rs("apps/v1", "Deployment", None, None, None), rs("apps/v1", "Deployment", None, Some("web"), None)];
        assert_eq!(policy_priority(&both, &t), Some(ImplicitPriority::Name));
        assert_eq!(policy_priority(&[], &t), None);
        assert!(ImplicitPriority::Name > ImplicitPriority::LabelSelector);
        assert!(ImplicitPriority::LabelSelector > ImplicitPriority::MatchAll);
    }

    fn policies(yaml: &str) -> PolicySet {
        let (mut set, errors) = crate::policy::load::load_sources([(PathBuf::from("p.yaml"), yaml.to_string())]);
        assert!(errors.is_empty(), "{errors:?}");
        defaults::apply(&mut set);
        set
    }

    fn policy(kind: &str, name: &str, ns: Option<&str>, priority: i32, selector: &str) -> String {
        let ns = ns.map(|n| format!(", namespace: {n}")).unwrap_or_default();
        format!(
            "---\napiVersion: policy.karmada.io/v1alpha1\nkind: {kind}\nmetadata: {{name: {name}{ns}}}\nspec:\n  priority: {priority}\n  resourceSelectors: [{selector}]\n"
        )
    }

    fn names(c: &Option<Claim>) -> (String, Vec<String>) {
        match c {
            Some(c) => (c.policy.to_string(), c.shadowed.iter().map(|p| p.to_string()).collect()),
            None => (String::new(), vec![]),
        }
    }

    const ALL: &str = "{apiVersion: apps/v1, kind: Deployment}";
    const BY_NAME: &str = "{apiVersion: apps/v1, kind: Deployment, name: web}";
    const BY_LABEL: &str = "{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: web}}}";

    #[test]
    fn claim_tie_breaks() {
        let t = template("apps/v1", "Deployment", Some("ns"), "web", &[("app", "web")]);
        // explicit priority beats implicit priority
        let yaml = [
            policy("PropagationPolicy", "by-name", Some("ns"), 0, BY_NAME),
            policy("PropagationPolicy", "all-high", Some("ns"), 5, ALL),
        ]
        .concat();
        let c = claim(&policies(&yaml), &t);
        assert_eq!(names(&c), ("PropagationPolicy/ns/all-high".into(), vec!["PropagationPolicy/ns/by-name".into()]));

        // same explicit priority: name > label selector > match all
        let yaml = [
            policy("PropagationPolicy", "a-all", Some("ns"), 1, ALL),
            policy("PropagationPolicy", "b-label", Some("ns"), 1, BY_LABEL),
            policy("PropagationPolicy", "c-name", Some("ns"), 1, BY_NAME),
        ]
        .concat();
        let c = claim(&policies(&yaml), &t);
        assert_eq!(
            names(&c),
            (
                "PropagationPolicy/ns/c-name".into(),
                vec!["PropagationPolicy/ns/b-label".into(), "PropagationPolicy/ns/a-all".into()]
            )
        );

        // full tie: the smaller name wins (byte order: "ab" < "abc" < "b")
        let yaml = [
            policy("PropagationPolicy", "b", Some("ns"), 0, ALL),
            policy("PropagationPolicy", "abc", Some("ns"), 0, ALL),
            policy("PropagationPolicy", "ab", Some("ns"), 0, ALL),
        ]
        .concat();
        let c = claim(&policies(&yaml), &t);
        assert_eq!(
            names(&c),
            (
                "PropagationPolicy/ns/ab".into(),
                vec!["PropagationPolicy/ns/abc".into(), "PropagationPolicy/ns/b".into()]
            )
        );
    }

    #[test]
    fn claim_pp_beats_cpp_and_namespaces() {
        let yaml = [
            policy("ClusterPropagationPolicy", "cpp-high", None, 100, BY_NAME),
            policy("ClusterPropagationPolicy", "cpp-low", None, 0, ALL),
            policy("PropagationPolicy", "pp", Some("ns"), 0, ALL),
            policy("PropagationPolicy", "pp-other-ns", Some("other"), 50, ALL),
            policy("ClusterPropagationPolicy", "cpp-ns", None, 0, "{apiVersion: v1, kind: Namespace}"),
            policy("PropagationPolicy", "pp-ns", Some("ns"), 0, "{apiVersion: v1, kind: Namespace}"),
        ]
        .concat();
        let set = policies(&yaml);
        let t = template("apps/v1", "Deployment", Some("ns"), "web", &[]);
        assert_eq!(
            names(&claim(&set, &t)),
            (
                "PropagationPolicy/ns/pp".into(),
                vec!["ClusterPropagationPolicy/cpp-high".into(), "ClusterPropagationPolicy/cpp-low".into()]
            )
        );
        // no PP in this namespace matches: best CPP
        let t = template("apps/v1", "Deployment", Some("third"), "web", &[]);
        assert_eq!(
            names(&claim(&set, &t)),
            ("ClusterPropagationPolicy/cpp-high".into(), vec!["ClusterPropagationPolicy/cpp-low".into()])
        );
        // reserved namespaces: no CPP
        for ns in ["karmada-system", "karmada-cluster", "karmada-es-member1"] {
            let t = template("apps/v1", "Deployment", Some(ns), "web", &[]);
            assert_eq!(claim(&set, &t), None, "{ns}");
        }
        // cluster-scoped templates: only CPPs (pp-ns selects Namespace but is namespaced)
        let t = template("v1", "Namespace", None, "ns", &[]);
        assert_eq!(names(&claim(&set, &t)), ("ClusterPropagationPolicy/cpp-ns".into(), vec![]));
        // nothing matches
        let t = template("v1", "ConfigMap", Some("ns"), "c", &[]);
        assert_eq!(claim(&set, &t), None);
    }
}
