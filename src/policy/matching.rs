//! Which PropagationPolicy claims which template, and selector matching.
//!
//! Pure functions over the loaded [`PolicySet`], following Karmada's detector
//! (`pkg/detector/policy.go`, `compare.go`) and `pkg/util/selector.go`:
//!
//! - [`label_selector_matches`]: Kubernetes label-selector semantics;
//! - [`cluster_matches`]: Karmada's `ClusterMatches` (exclude, label selector, field selector
//!   with the special multi-zone rules, cluster names);
//! - [`selector_priority`] / [`policy_priority`]: the implicit priority of a match;
//! - [`claim`]: the policy that claims a template from scratch and the policies it shadows;
//! - [`claim_with_previous`]: Karmada's "already claimed" stickiness and `preemption: Always`,
//!   given the policy recorded in the template's previous placement (from the store);
//! - [`shadow_reason`]: why a matching policy lost, for `check`'s conflict report.

use crate::util::hash::KeyMap;
use crate::util::memo::ArcKey;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::types::{
    ClusterAffinity, LabelSelector, LabelSelectorRequirement, OverrideSpec, Preemption, PropagationSpec,
    ResourceSelector, RolloutSpec, SelectorOperator,
};
use super::validate::selector_requirement_problem;
use super::{ClusterObject, Policy, PolicyKind, PolicyRef, PolicySet, SetPos, Template};

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

/// A label selector in `kubectl`'s string form (`-l`, `--selector`): requirements separated
/// by commas, each `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`,
/// `key` (exists) or `!key` (does not exist). The error names the requirement it cannot read.
pub fn parse_label_selector(text: &str) -> Result<LabelSelector, String> {
    let mut sel = LabelSelector::default();
    let mut rest = text.trim();
    let requirement = |key: &str, operator, values: Vec<String>| -> Result<LabelSelectorRequirement, String> {
        let key = key.trim();
        if key.is_empty() || key.contains(|c: char| c.is_whitespace() || "=!(),".contains(c)) {
            return Err(format!("{text:?}: {key:?} is not a label key"));
        }
        Ok(LabelSelectorRequirement { key: key.to_string(), operator, values })
    };
    while !rest.is_empty() {
        // One requirement: up to the next comma outside parentheses.
        let end = rest
            .char_indices()
            .scan(0i32, |depth, (i, c)| {
                *depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                Some((i, c, *depth))
            })
            .find(|(_, c, depth)| *c == ',' && *depth == 0)
            .map_or(rest.len(), |(i, _, _)| i);
        let part = rest[..end].trim();
        rest = rest.get(end + 1..).unwrap_or("").trim_start();
        let set_of = |list: &str| -> Result<Vec<String>, String> {
            let inner = list.trim().strip_prefix('(').and_then(|l| l.strip_suffix(')'));
            let inner = inner.ok_or_else(|| format!("{text:?}: {part:?}: the values go in parentheses: (a,b)"))?;
            Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
        };
        let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
        let r = if let Some((k, v)) = part.split_once("!=") {
            requirement(k, SelectorOperator::NotIn, vec![v.trim().to_string()])?
        } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
            requirement(k, SelectorOperator::In, vec![v.trim().to_string()])?
        } else if let [key, tail] = words.as_slice()
            && let Some(list) = tail.trim_start().strip_prefix("notin")
        {
            requirement(key, SelectorOperator::NotIn, set_of(list)?)?
        } else if let [key, tail] = words.as_slice()
            && let Some(list) = tail.trim_start().strip_prefix("in")
        {
            requirement(key, SelectorOperator::In, set_of(list)?)?
        } else if let Some(key) = part.strip_prefix('!') {
            requirement(key, SelectorOperator::DoesNotExist, Vec::new())?
        } else {
            requirement(part, SelectorOperator::Exists, Vec::new())?
        };
        if matches!(r.operator, SelectorOperator::In | SelectorOperator::NotIn) && r.values.is_empty() {
            return Err(format!("{text:?}: {part:?} has no value"));
        }
        sel.match_expressions.push(r);
    }
    Ok(sel)
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

/// The RolloutPolicy that rolls out `t`: of its namespace's RolloutPolicies (a namespaced
/// template only, as a PropagationPolicy selects), the one whose selectors match it most
/// specifically ([`policy_priority`]), the first by name on a tie. `None`: none selects it,
/// and its changes reach every cluster at once, as without rollouts.
pub fn rollout_policy_for<'a>(set: &'a PolicySet, t: &Template) -> Option<&'a Policy<RolloutSpec>> {
    if set.rollout_policies.is_empty() {
        return None;
    }
    let ns = t.key.namespace.as_deref()?;
    let mut best: Option<(ImplicitPriority, &Policy<RolloutSpec>)> = None;
    // Sorted by (namespace, name): the first of the best priority is the first by name.
    for p in set.rollout_policies.iter().filter(|p| p.namespace() == Some(ns)) {
        if let Some(prio) = policy_priority(&p.spec.resource_selectors, t)
            && best.is_none_or(|(b, _)| prio > b)
        {
            best = Some((prio, p));
        }
    }
    best.map(|(_, p)| p)
}

/// The policy that claims a template, and every other policy that matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub policy: PolicyRef,
    /// Other matching policies in claim order: PropagationPolicies first, then
    /// ClusterPropagationPolicies, each best first.
    pub shadowed: Vec<PolicyRef>,
    /// Why this policy holds the template.
    pub reason: ClaimReason,
}

/// How the claiming policy was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimReason {
    /// The best matching policy (a first claim, or the previous claimer is also the best).
    Best,
    /// Karmada's stickiness: the policy recorded in the previous placement still matches and
    /// keeps the template although a better policy matches now.
    AlreadyClaimed,
    /// A policy with `preemption: Always` took the template from its previous claimer.
    Preempted { from: PolicyRef },
}

impl ClaimReason {
    /// Short machine-readable form for explain (`best`, `already-claimed`, `preempted`).
    pub fn as_str(&self) -> &'static str {
        match self {
            ClaimReason::Best => "best",
            ClaimReason::AlreadyClaimed => "already-claimed",
            ClaimReason::Preempted { .. } => "preempted",
        }
    }
}

/// Karmada's claim with history (`pkg/detector/policy.go`, `preemption.go`): a template keeps
/// the policy of its previous placement while that policy still exists and matches it, unless
/// a policy with `preemption: Always` outranks it — a PropagationPolicy preempts any
/// ClusterPropagationPolicy and PropagationPolicies of strictly lower `priority`; a
/// ClusterPropagationPolicy preempts only ClusterPropagationPolicies of strictly lower
/// `priority`. The best such preemptor (claim order) wins. Without a previous claimer, or when
/// it no longer matches, this is [`claim`].
pub fn claim_with_previous(set: &PolicySet, t: &Template, previous: Option<&PolicyRef>) -> Option<Claim> {
    with_previous(set, claim(set, t)?, previous)
}

fn with_previous(set: &PolicySet, fresh: Claim, previous: Option<&PolicyRef>) -> Option<Claim> {
    let Some(prev) = previous.filter(|p| **p != fresh.policy && fresh.shadowed.contains(p)) else {
        return Some(fresh);
    };
    let all: Vec<PolicyRef> = std::iter::once(fresh.policy.clone()).chain(fresh.shadowed.iter().cloned()).collect();
    let pick = |winner: &PolicyRef, reason: ClaimReason| Claim {
        policy: winner.clone(),
        shadowed: all.iter().filter(|p| *p != winner).cloned().collect(),
        reason,
    };
    for cand in all.iter().take_while(|p| *p != prev) {
        if can_preempt(set, cand, prev) {
            return Some(pick(cand, ClaimReason::Preempted { from: prev.clone() }));
        }
    }
    Some(pick(prev, ClaimReason::AlreadyClaimed))
}

/// Whether `by` (with `preemption: Always`) may take a template claimed by `from`.
pub fn can_preempt(set: &PolicySet, by: &PolicyRef, from: &PolicyRef) -> bool {
    let (Some(b), Some(f)) = (set.propagation_policy(by), set.propagation_policy(from)) else {
        return false;
    };
    if b.spec.preemption != Preemption::Always {
        return false;
    }
    match (by.kind, from.kind) {
        (PolicyKind::PropagationPolicy, PolicyKind::ClusterPropagationPolicy) => true,
        (PolicyKind::ClusterPropagationPolicy, PolicyKind::PropagationPolicy) => false,
        _ => b.spec.priority > f.spec.priority,
    }
}

/// Why `loser` does not claim `t` although it matches, given the [`Claim`] in force: one
/// sentence for `check` and explain.
pub fn shadow_reason(set: &PolicySet, t: &Template, claim: &Claim, loser: &PolicyRef) -> String {
    let winner = &claim.policy;
    match &claim.reason {
        ClaimReason::AlreadyClaimed => {
            return format!("{winner} claimed the template first and keeps it (Karmada does not re-select)");
        }
        ClaimReason::Preempted { from } if from == loser => {
            return format!("preempted by {winner} (preemption: Always)");
        }
        _ => {}
    }
    let (Some(w), Some(l)) = (set.propagation_policy(winner), set.propagation_policy(loser)) else {
        return "shadowed".into();
    };
    if winner.kind == PolicyKind::PropagationPolicy && loser.kind == PolicyKind::ClusterPropagationPolicy {
        return "a PropagationPolicy in the template's namespace beats every ClusterPropagationPolicy".into();
    }
    if w.spec.priority != l.spec.priority {
        return format!("lower priority ({} < {})", l.spec.priority, w.spec.priority);
    }
    let wi = policy_priority(&w.spec.resource_selectors, t);
    let li = policy_priority(&l.spec.resource_selectors, t);
    if wi != li {
        let show = |i: Option<ImplicitPriority>| match i {
            Some(ImplicitPriority::Name) => "name",
            Some(ImplicitPriority::LabelSelector) => "label selector",
            _ => "apiVersion/kind only",
        };
        return format!("same priority, less specific selector ({} < {})", show(li), show(wi));
    }
    format!("same priority and selector specificity: the smaller name {:?} wins", winner.name)
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
    let pps = set
        .propagation_policies
        .iter()
        .map(|p| &**p)
        .filter(|p| t.key.namespace.is_some() && p.namespace() == t.key.namespace.as_deref());
    claim_among(set, pps, t)
}

/// [`claim`] with the template namespace's PropagationPolicies given (`pps`).
fn claim_among<'a>(
    set: &'a PolicySet,
    pps: impl Iterator<Item = &'a Policy<PropagationSpec>>,
    t: &Template,
) -> Option<Claim> {
    let mut pps = candidates(pps, PolicyKind::PropagationPolicy, t);
    let cpp_allowed = !t.key.namespace.as_deref().is_some_and(is_reserved_namespace);
    let mut cpps = if cpp_allowed {
        candidates(set.cluster_propagation_policies.iter().map(|p| &**p), PolicyKind::ClusterPropagationPolicy, t)
    } else {
        Vec::new()
    };
    pps.sort_by(compare_candidates);
    cpps.sort_by(compare_candidates);
    let mut all = pps.into_iter().chain(cpps).map(|c| c.policy);
    let policy = all.next()?;
    Some(Claim { policy, shadowed: all.collect(), reason: ClaimReason::Best })
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

/// The position of a PropagationPolicy or ClusterPropagationPolicy in its list of the set.
type PropagationAt = SetPos<Policy<PropagationSpec>>;

/// Lookups of one [`PolicySet`] by namespace and by reference, built once per pass so that
/// claiming and overriding every template is not quadratic in the number of policies. Gives
/// exactly the answers of [`claim_with_previous`], [`PolicySet::propagation_policy`] and
/// [`crate::render::overrides::applicable`] (which scan every policy).
pub struct PolicyIndex<'a> {
    set: &'a PolicySet,
    positions: std::sync::Arc<IndexPositions>,
}

/// What a [`PolicyIndex`] looks up, by position in the set's lists: kept between passes
/// ([`PolicyIndex::kept`], a [`KeptIndex`]) and used again while the set holds the same policy
/// objects in the same order (an edit of a template leaves them so).
#[derive(Debug, Default, PartialEq)]
pub struct IndexPositions {
    /// Per namespace, its PropagationPolicies' positions in the set's order.
    pps: KeyMap<String, Vec<PropagationAt>>,
    /// Per policy name, the (kind, namespace, position in its kind's list) of the policies of
    /// that name, the first of each reference only.
    by_name: KeyMap<String, Vec<(PolicyKind, Option<String>, PropagationAt)>>,
    /// Per namespace, its OverridePolicies' positions in the set's order.
    overrides: KeyMap<String, Vec<SetPos<Policy<OverrideSpec>>>>,
}

/// The policy index kept between passes: a [`crate::util::memo::MemoMap`] of one entry keyed by
/// the policies it indexes ([`IndexedPolicies`]), computed by [`IndexPositions::of`].
pub type KeptIndex = crate::util::memo::MemoMap<(), IndexedPolicies, Arc<IndexPositions>>;

/// The policies an index is built from — the PropagationPolicies, ClusterPropagationPolicies
/// and OverridePolicies of a set, in its order — by identity (each [`ArcKey`] holds its policy,
/// so its address stays its own while the key is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedPolicies {
    propagation: Vec<ArcKey<Policy<PropagationSpec>>>,
    cluster_propagation: Vec<ArcKey<Policy<PropagationSpec>>>,
    override_policies: Vec<ArcKey<Policy<OverrideSpec>>>,
}

impl IndexedPolicies {
    fn of(set: &PolicySet) -> Self {
        IndexedPolicies {
            propagation: set.propagation_policies.iter().map(ArcKey::of).collect(),
            cluster_propagation: set.cluster_propagation_policies.iter().map(ArcKey::of).collect(),
            override_policies: set.override_policies.iter().map(ArcKey::of).collect(),
        }
    }
}

impl IndexPositions {
    /// The index of `set` (the one compute of [`KeptIndex`]).
    fn of(set: &PolicySet) -> Self {
        let mut pps: KeyMap<String, Vec<PropagationAt>> = KeyMap::default();
        let mut by_name: KeyMap<String, Vec<(PolicyKind, Option<String>, PropagationAt)>> =
            KeyMap::with_capacity_and_hasher(set.propagation_policies.len(), Default::default());
        let mut name = |kind: PolicyKind, p: &Policy<PropagationSpec>, i: PropagationAt| {
            let same = by_name.entry(p.name().to_string()).or_default();
            if !same.iter().any(|(k, ns, _)| *k == kind && ns.as_deref() == p.namespace()) {
                same.push((kind, p.namespace().map(str::to_string), i));
            }
        };
        for (i, p) in SetPos::all(set.propagation_policies.len()).zip(&set.propagation_policies) {
            if let Some(ns) = p.namespace() {
                match pps.get_mut(ns) {
                    Some(list) => list.push(i),
                    None => {
                        pps.insert(ns.to_string(), vec![i]);
                    }
                }
            }
            name(PolicyKind::PropagationPolicy, p, i);
        }
        for (i, p) in SetPos::all(set.cluster_propagation_policies.len()).zip(&set.cluster_propagation_policies) {
            name(PolicyKind::ClusterPropagationPolicy, p, i);
        }
        let mut overrides: KeyMap<String, Vec<SetPos<Policy<OverrideSpec>>>> = KeyMap::default();
        for (i, p) in SetPos::all(set.override_policies.len()).zip(&set.override_policies) {
            if let Some(ns) = p.namespace() {
                overrides.entry(ns.to_string()).or_default().push(i);
            }
        }
        IndexPositions { pps, by_name, overrides }
    }
}

impl<'a> PolicyIndex<'a> {
    /// Indexes `set` (the order of each list is kept within a namespace).
    pub fn new(set: &'a PolicySet) -> Self {
        PolicyIndex { set, positions: Arc::new(IndexPositions::of(set)) }
    }

    /// Indexes `set` with the positions `kept` from an earlier pass when they index the same
    /// policies (else indexes it afresh and keeps that).
    pub fn kept(set: &'a PolicySet, kept: &mut KeptIndex) -> Self {
        let name = crate::util::memo::Name::PolicyIndex;
        let positions = kept.get_or_compute(name, &(), IndexedPolicies::of(set), || Arc::new(IndexPositions::of(set)));
        PolicyIndex { set, positions }
    }

    /// The set indexed.
    pub fn set(&self) -> &'a PolicySet {
        self.set
    }

    /// [`claim_with_previous`].
    pub fn claim_with_previous(&self, t: &Template, previous: Option<&PolicyRef>) -> Option<Claim> {
        let at = t.key.namespace.as_deref().and_then(|ns| self.positions.pps.get(ns));
        let pps = at.into_iter().flatten().filter_map(|i| i.of(&self.set.propagation_policies));
        with_previous(self.set, claim_among(self.set, pps, t)?, previous)
    }

    /// [`PolicySet::propagation_policy`].
    pub fn propagation_policy(&self, r: &PolicyRef) -> Option<&'a Policy<PropagationSpec>> {
        let same = self.positions.by_name.get(r.name.as_str())?;
        let (kind, _, i) = same.iter().find(|(k, ns, _)| *k == r.kind && ns.as_deref() == r.namespace.as_deref())?;
        let list = match kind {
            PolicyKind::ClusterPropagationPolicy => &self.set.cluster_propagation_policies,
            _ => &self.set.propagation_policies,
        };
        i.of(list)
    }

    /// Every namespace with PropagationPolicies, with them in the set's order (the namespaces
    /// in no particular order).
    pub fn propagation_policies_by_namespace(
        &self,
    ) -> impl Iterator<Item = (&str, impl Iterator<Item = &'a Policy<PropagationSpec>> + '_)> {
        let set = self.set;
        self.positions
            .pps
            .iter()
            .map(move |(ns, at)| (ns.as_str(), at.iter().filter_map(move |i| i.of(&set.propagation_policies))))
    }

    /// The OverridePolicies of a namespace, in the set's order (none for a cluster-scoped
    /// template's `None`).
    pub fn override_policies(&self, namespace: Option<&str>) -> impl Iterator<Item = &'a Policy<OverrideSpec>> + '_ {
        let set = self.set;
        let at = namespace.and_then(|ns| self.positions.overrides.get(ns));
        at.into_iter().flatten().filter_map(move |i| i.of(&set.override_policies))
    }
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
    fn kubectl_label_selectors_parse_as_kubectl_reads_them() {
        let parsed = parse_label_selector("app=web, tier!=back,env in (prod, stage),zone notin (a),gpu,!legacy,x==y")
            .expect("parses");
        assert_eq!(
            parsed.match_expressions,
            vec![
                req("app", In, &["web"]),
                req("tier", NotIn, &["back"]),
                req("env", In, &["prod", "stage"]),
                req("zone", NotIn, &["a"]),
                req("gpu", Exists, &[]),
                req("legacy", DoesNotExist, &[]),
                req("x", In, &["y"]),
            ]
        );
        let l = labels(&[("app", "web"), ("env", "prod"), ("gpu", "")]);
        assert!(label_selector_matches(&parsed, &{
            let mut l = l.clone();
            l.insert("x".into(), "y".into());
            l
        }));
        assert!(!label_selector_matches(&parsed, &l), "x==y does not hold");
        assert_eq!(parse_label_selector("").expect("empty").match_expressions, vec![]);
        for bad in ["=web", "app in prod", "env in ()", "a b=c"] {
            let e = parse_label_selector(bad).expect_err(bad);
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

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
                namespace: ns.map(Into::into),
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
            unknown_fields: Vec::new(),
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

    fn pref(kind: PolicyKind, ns: Option<&str>, name: &str) -> PolicyRef {
        PolicyRef { kind, namespace: ns.map(str::to_string), name: name.into() }
    }

    fn preempting(kind: &str, name: &str, ns: Option<&str>, priority: i32) -> String {
        policy(kind, name, ns, priority, BY_NAME) + "  preemption: Always\n"
    }

    #[test]
    fn already_claimed_sticks_unless_preempted() {
        use PolicyKind::{ClusterPropagationPolicy as Cpp, PropagationPolicy as Pp};
        let t = template("apps/v1", "Deployment", Some("ns"), "web", &[("app", "web")]);
        let old = pref(Pp, Some("ns"), "old");
        // (policies, previous claimer, expected claimer, expected reason)
        let cases: Vec<(String, Option<PolicyRef>, PolicyRef, &str)> = vec![
            // no history: the best wins
            (
                [
                    policy("PropagationPolicy", "old", Some("ns"), 0, ALL),
                    policy("PropagationPolicy", "new", Some("ns"), 5, BY_NAME),
                ]
                .concat(),
                None,
                pref(Pp, Some("ns"), "new"),
                "best",
            ),
            // a better policy without preemption does not take a claimed template
            (
                [
                    policy("PropagationPolicy", "old", Some("ns"), 0, ALL),
                    policy("PropagationPolicy", "new", Some("ns"), 5, BY_NAME),
                ]
                .concat(),
                Some(old.clone()),
                old.clone(),
                "already-claimed",
            ),
            // preemption with a higher priority takes it
            (
                [
                    policy("PropagationPolicy", "old", Some("ns"), 0, ALL),
                    preempting("PropagationPolicy", "new", Some("ns"), 5),
                ]
                .concat(),
                Some(old.clone()),
                pref(Pp, Some("ns"), "new"),
                "preempted",
            ),
            // preemption needs a strictly higher priority between PropagationPolicies
            (
                [
                    policy("PropagationPolicy", "old", Some("ns"), 5, ALL),
                    preempting("PropagationPolicy", "new", Some("ns"), 5),
                ]
                .concat(),
                Some(old.clone()),
                old.clone(),
                "already-claimed",
            ),
            // a PP preempts any CPP, whatever the priorities
            (
                [
                    policy("ClusterPropagationPolicy", "cpp", None, 100, ALL),
                    preempting("PropagationPolicy", "new", Some("ns"), 0),
                ]
                .concat(),
                Some(pref(Cpp, None, "cpp")),
                pref(Pp, Some("ns"), "new"),
                "preempted",
            ),
            // a PP without preemption does not take a template from a CPP
            (
                [
                    policy("ClusterPropagationPolicy", "cpp", None, 0, ALL),
                    policy("PropagationPolicy", "new", Some("ns"), 0, BY_NAME),
                ]
                .concat(),
                Some(pref(Cpp, None, "cpp")),
                pref(Cpp, None, "cpp"),
                "already-claimed",
            ),
            // a CPP never preempts a PP
            (
                [
                    policy("PropagationPolicy", "old", Some("ns"), 0, ALL),
                    preempting("ClusterPropagationPolicy", "cpp", None, 100),
                ]
                .concat(),
                Some(old.clone()),
                old.clone(),
                "best",
            ),
            // a CPP preempts a lower-priority CPP
            (
                [
                    policy("ClusterPropagationPolicy", "a-low", None, 1, ALL),
                    preempting("ClusterPropagationPolicy", "b-high", None, 2),
                ]
                .concat(),
                Some(pref(Cpp, None, "a-low")),
                pref(Cpp, None, "b-high"),
                "preempted",
            ),
            // the previous claimer no longer matches (or is gone): fresh claim
            (
                policy("PropagationPolicy", "new", Some("ns"), 0, BY_NAME),
                Some(old.clone()),
                pref(Pp, Some("ns"), "new"),
                "best",
            ),
        ];
        for (i, (yaml, prev, want, reason)) in cases.into_iter().enumerate() {
            let set = policies(&yaml);
            let c = claim_with_previous(&set, &t, prev.as_ref()).expect("claimed");
            assert_eq!((&c.policy, c.reason.as_str()), (&want, reason), "case {i}");
            assert!(!c.shadowed.contains(&c.policy), "case {i}");
            for sh in &c.shadowed {
                assert!(!shadow_reason(&set, &t, &c, sh).is_empty());
            }
        }
    }

    #[test]
    fn shadow_reasons_explain_the_rule() {
        let t = template("apps/v1", "Deployment", Some("ns"), "web", &[("app", "web")]);
        let yaml = [
            policy("PropagationPolicy", "win", Some("ns"), 1, BY_NAME),
            policy("PropagationPolicy", "low", Some("ns"), 0, BY_NAME),
            policy("PropagationPolicy", "label", Some("ns"), 1, BY_LABEL),
            policy("PropagationPolicy", "zz", Some("ns"), 1, BY_NAME),
            policy("ClusterPropagationPolicy", "cpp", None, 9, ALL),
        ]
        .concat();
        let set = policies(&yaml);
        let c = claim(&set, &t).expect("claimed");
        let reason = |n: &str, k| {
            shadow_reason(&set, &t, &c, &pref(k, if k == PolicyKind::PropagationPolicy { Some("ns") } else { None }, n))
        };
        assert!(reason("low", PolicyKind::PropagationPolicy).contains("lower priority (0 < 1)"));
        assert!(reason("label", PolicyKind::PropagationPolicy).contains("label selector < name"));
        assert!(reason("zz", PolicyKind::PropagationPolicy).contains("smaller name"));
        assert!(reason("cpp", PolicyKind::ClusterPropagationPolicy).contains("beats every ClusterPropagationPolicy"));
    }
}
