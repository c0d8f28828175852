//! Overrides: Karmada's OverridePolicy / ClusterOverridePolicy applied to a rendered manifest
//! for one member cluster (`pkg/util/overridemanager`). Pure: no I/O.
//!
//! Order (Karmada's): every matching ClusterOverridePolicy first, then the OverridePolicies of
//! the template's namespace (cluster-scoped templates get only ClusterOverridePolicies). Within
//! each kind, by ascending implicit priority (match-all, then label selector, then name: the
//! most specific policy is applied last and wins), then by name. Inside a policy its rules in
//! order, each when its `targetCluster` is absent or matches the cluster. Inside a rule: image
//! → command → args → labels → annotations → field → plaintext.
//!
//! A patch that cannot apply (for example `replace` on a missing path) fails the whole object
//! for that cluster with an [`OverrideError`] naming the policy, the rule and the overrider.
//!
//! Deviations from Karmada, all towards failing loudly or keeping data:
//! - label/annotation keys containing `/` work (Karmada builds an unescaped JSON pointer);
//! - an image reference with both a tag and a digest keeps both (Karmada keeps only the tag);
//! - non-string elements of `command`/`args` and non-map `labels`/`annotations` are errors.

use serde_json::{Map, Value};

use crate::policy::matching::{ClusterFacts, ImplicitPriority, cluster_matches, selector_priority};
use crate::policy::types::{
    CommandArgsOverrider, FieldOverrider, FieldPatch, ImageComponent, ImageOverrider, LabelAnnotationOverrider,
    OverrideSpec, OverriderOperator, Overriders, PlaintextOverrider,
};
use crate::policy::{Policy, PolicySet, Template};

/// Annotation listing the override policies applied to an object, in application order.
pub const ANNOTATION_APPLIED_OVERRIDES: &str = "fedsched.io/applied-overrides";

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

/// Why overrides could not be applied to an object for a cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{policy}: rule {rule}: {overrider}: {reason}")]
pub struct OverrideError {
    /// The policy (`OverridePolicy/NAMESPACE/NAME` or `ClusterOverridePolicy/NAME`).
    pub policy: String,
    /// Index of the rule in `overrideRules` (0 for the deprecated `overriders` form).
    pub rule: usize,
    /// The overrider, e.g. `plaintext[1]`, `fieldOverrider[0].yaml[2]`.
    pub overrider: String,
    /// What went wrong.
    pub reason: String,
}

/// The override policies that select `t`, in Karmada's application order (see the module
/// documentation). Empty resource selectors select every template; otherwise
/// [`selector_priority`] decides, the best selector of a policy giving its priority.
pub fn applicable<'a>(set: &'a PolicySet, t: &Template) -> Vec<ApplicableOverride<'a>> {
    let ns = t.key.namespace.as_deref();
    applicable_among(set, &mut set.override_policies.iter().filter(|p| ns.is_some() && p.namespace() == ns), t)
}

/// [`applicable`] with an index of the set (the template namespace's OverridePolicies are
/// looked up instead of scanned).
pub fn applicable_indexed<'a>(
    index: &crate::policy::matching::PolicyIndex<'a>,
    t: &Template,
) -> Vec<ApplicableOverride<'a>> {
    let ns: &[&'a Policy<OverrideSpec>] = match t.key.namespace.as_deref() {
        Some(ns) => index.override_policies(ns),
        None => &[],
    };
    applicable_among(index.set(), &mut ns.iter().copied(), t)
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
    let mut out = pick(OverrideKind::ClusterOverridePolicy, &mut set.cluster_override_policies.iter());
    if t.key.namespace.is_some() {
        out.extend(pick(OverrideKind::OverridePolicy, namespaced));
    }
    out
}

/// Applies `policies` (in the given order) to `obj`, the manifest of a `kind` object for the
/// cluster described by `cluster`. Returns the policies that had at least one rule for this
/// cluster, in order (each once), as [`ApplicableOverride::display_ref`]. On error `obj` may be
/// partly overridden and must be discarded.
pub fn apply(
    obj: &mut Value,
    kind: &str,
    policies: &[ApplicableOverride<'_>],
    cluster: &ClusterFacts<'_>,
) -> Result<Vec<String>, OverrideError> {
    let mut applied = Vec::new();
    for p in policies {
        let mut any = false;
        for (i, rule) in p.policy.spec.rules().iter().enumerate() {
            if let Some(tc) = &rule.target_cluster
                && !cluster_matches(tc, cluster)
            {
                continue;
            }
            any = true;
            apply_overriders(obj, kind, &rule.overriders).map_err(|(overrider, reason)| OverrideError {
                policy: p.display_ref(),
                rule: i,
                overrider,
                reason,
            })?;
        }
        if any {
            applied.push(p.display_ref());
        }
    }
    Ok(applied)
}

/// (overrider label, reason)
type Failed = (String, String);

fn apply_overriders(obj: &mut Value, kind: &str, o: &Overriders) -> Result<(), Failed> {
    fn at(name: &'static str, i: usize) -> impl FnOnce(String) -> Failed {
        move |reason| (format!("{name}[{i}]"), reason)
    }
    for (i, img) in o.image_overrider.iter().enumerate() {
        apply_image(obj, kind, img).map_err(at("imageOverrider", i))?;
    }
    for (i, c) in o.command_overrider.iter().enumerate() {
        apply_command_args(obj, kind, "command", c).map_err(at("commandOverrider", i))?;
    }
    for (i, c) in o.args_overrider.iter().enumerate() {
        apply_command_args(obj, kind, "args", c).map_err(at("argsOverrider", i))?;
    }
    for (i, l) in o.labels_overrider.iter().enumerate() {
        apply_label_annotation(obj, "labels", l).map_err(at("labelsOverrider", i))?;
    }
    for (i, a) in o.annotations_overrider.iter().enumerate() {
        apply_label_annotation(obj, "annotations", a).map_err(at("annotationsOverrider", i))?;
    }
    for (i, f) in o.field_overrider.iter().enumerate() {
        apply_field(obj, f).map_err(|(sub, reason)| (format!("fieldOverrider[{i}]{sub}"), reason))?;
    }
    for (i, p) in o.plaintext.iter().enumerate() {
        apply_plaintext(obj, p).map_err(at("plaintext", i))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// JSON pointer (RFC 6901) and JSON patch operations (RFC 6902: add, remove, replace)

/// Splits a JSON pointer into unescaped reference tokens (`~1` → `/`, then `~0` → `~`).
/// `""` is the whole document.
pub fn parse_pointer(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!("JSON pointer {pointer:?} must start with '/'"));
    };
    rest.split('/')
        .map(|t| {
            let mut out = String::with_capacity(t.len());
            let mut chars = t.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => return Err(format!("JSON pointer {pointer:?}: '~' must be followed by 0 or 1")),
                }
            }
            Ok(out)
        })
        .collect()
}

/// An array index token: digits without a leading zero.
fn array_index(token: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    if allow_end && token == "-" {
        return Ok(len);
    }
    let valid =
        !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) && (token == "0" || !token.starts_with('0'));
    let idx: usize = if valid {
        token.parse().map_err(|_| format!("array index {token:?} is too large"))?
    } else {
        return Err(format!("{token:?} is not an array index"));
    };
    let max = if allow_end { len } else { len.saturating_sub(1) };
    if idx > max || (!allow_end && len == 0) {
        return Err(format!("array index {idx} is out of bounds (length {len})"));
    }
    Ok(idx)
}

fn display_path(tokens: &[String]) -> String {
    if tokens.is_empty() {
        return "the document root".into();
    }
    tokens.iter().map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1"))).collect()
}

/// The value at `tokens`, mutable.
fn get_mut<'v>(doc: &'v mut Value, tokens: &[String]) -> Result<&'v mut Value, String> {
    let mut cur = doc;
    for (i, t) in tokens.iter().enumerate() {
        let here = || display_path(&tokens[..=i]);
        cur = match cur {
            Value::Object(m) => m.get_mut(t).ok_or_else(|| format!("path {} does not exist", here()))?,
            Value::Array(a) => {
                let len = a.len();
                let idx = array_index(t, len, false).map_err(|e| format!("path {}: {e}", here()))?;
                &mut a[idx]
            }
            _ => return Err(format!("path {}: parent is neither an object nor an array", here())),
        };
    }
    Ok(cur)
}

/// Applies one RFC 6902 operation (add, remove or replace) to `doc`.
pub fn patch(doc: &mut Value, op: OverriderOperator, pointer: &str, value: Option<&Value>) -> Result<(), String> {
    let tokens = parse_pointer(pointer)?;
    let need_value = || value.cloned().ok_or_else(|| format!("operator {} needs a value", op_name(op)));
    let Some((last, parent_tokens)) = tokens.split_last() else {
        // The whole document.
        return match op {
            OverriderOperator::Add | OverriderOperator::Replace => {
                *doc = need_value()?;
                Ok(())
            }
            OverriderOperator::Remove => Err("cannot remove the document root".into()),
        };
    };
    let parent = get_mut(doc, parent_tokens)?;
    let here = display_path(&tokens);
    match (op, parent) {
        (OverriderOperator::Add, Value::Object(m)) => {
            m.insert(last.clone(), need_value()?);
        }
        (OverriderOperator::Add, Value::Array(a)) => {
            let idx = array_index(last, a.len(), true).map_err(|e| format!("path {here}: {e}"))?;
            a.insert(idx, need_value()?);
        }
        (OverriderOperator::Remove, Value::Object(m)) => {
            m.remove(last).ok_or_else(|| format!("path {here} does not exist"))?;
        }
        (OverriderOperator::Remove, Value::Array(a)) => {
            let idx = array_index(last, a.len(), false).map_err(|e| format!("path {here}: {e}"))?;
            a.remove(idx);
        }
        (OverriderOperator::Replace, Value::Object(m)) => {
            let slot = m.get_mut(last).ok_or_else(|| format!("path {here} does not exist"))?;
            *slot = need_value()?;
        }
        (OverriderOperator::Replace, Value::Array(a)) => {
            let idx = array_index(last, a.len(), false).map_err(|e| format!("path {here}: {e}"))?;
            a[idx] = need_value()?;
        }
        (_, _) => return Err(format!("path {here}: parent is neither an object nor an array")),
    }
    Ok(())
}

fn op_name(op: OverriderOperator) -> &'static str {
    match op {
        OverriderOperator::Add => "add",
        OverriderOperator::Remove => "remove",
        OverriderOperator::Replace => "replace",
    }
}

fn apply_plaintext(obj: &mut Value, p: &PlaintextOverrider) -> Result<(), String> {
    patch(obj, p.operator, &p.path, p.value.as_ref())
}

// ---------------------------------------------------------------------------------------------
// Image references (Karmada's `pkg/util/imageparser`, after distribution's `reference.Parse`)

/// An image reference split as Karmada splits it: `[registry/]repository[:tag][@digest]`. The
/// registry is the first path segment only when it contains `.` or `:` or is `localhost`; no
/// `docker.io` / `library/` normalisation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageRef {
    /// Registry host (with port), may be empty.
    pub registry: String,
    /// Repository path without the registry.
    pub repository: String,
    /// Tag, may be empty.
    pub tag: String,
    /// Digest (`sha256:…`), may be empty.
    pub digest: String,
}

const MAX_NAME_LEN: usize = 255;

/// `[\w][\w.-]{0,127}`
fn is_tag(s: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = s.chars();
    s.len() <= 128 && chars.next().is_some_and(word) && chars.all(|c| word(c) || c == '.' || c == '-')
}

/// `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
fn is_digest(s: &str) -> bool {
    let Some((algo, hex)) = s.split_once(':') else { return false };
    let algo_ok = algo.split(['-', '_', '+', '.']).all(|part| {
        let mut c = part.chars();
        c.next().is_some_and(|c| c.is_ascii_alphabetic()) && c.all(|c| c.is_ascii_alphanumeric())
    });
    algo_ok && hex.len() >= 32 && hex.chars().all(|c| c.is_ascii_hexdigit())
}

/// A path component: `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`.
fn is_path_component(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut i = 0;
    loop {
        let start = i;
        while i < b.len() && alnum(b[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == b.len() {
            return true;
        }
        let sep_start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &s[sep_start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|c| c == b'-')) {
            return false;
        }
    }
}

/// A registry: `host(:port)?` with DNS-ish components, or a bracketed IPv6 address.
fn is_domain(s: &str) -> bool {
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && (h.starts_with('[') == h.ends_with(']')) && !p.contains(']') => {
            (h, Some(p))
        }
        _ => (s, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return !inner.is_empty() && inner.chars().all(|c| c.is_ascii_hexdigit() || c == ':');
    }
    !host.is_empty()
        && host.split('.').all(|c| {
            let b = c.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
        })
}

impl ImageRef {
    /// Parses an image reference; errors name what is wrong.
    pub fn parse(image: &str) -> Result<ImageRef, String> {
        if image.is_empty() {
            return Err("image reference is empty".into());
        }
        let (rest, digest) = match image.split_once('@') {
            Some((r, d)) if is_digest(d) => (r, d.to_string()),
            Some(_) => return Err(format!("image {image:?}: invalid digest")),
            None => (image, String::new()),
        };
        let (name, tag) = match rest.rsplit_once(':') {
            Some((n, t)) if !t.contains('/') => {
                if !is_tag(t) {
                    return Err(format!("image {image:?}: invalid tag {t:?}"));
                }
                (n, t.to_string())
            }
            _ => (rest, String::new()),
        };
        if name.len() > MAX_NAME_LEN {
            return Err(format!("image {image:?}: repository name longer than {MAX_NAME_LEN} characters"));
        }
        let parts: Vec<&str> = name.split('/').collect();
        let all_path = parts.iter().all(|p| is_path_component(p));
        let domain_then_path =
            parts.len() > 1 && is_domain(parts[0]) && parts[1..].iter().all(|p| is_path_component(p));
        if !all_path && !domain_then_path {
            let reason = if name.chars().any(|c| c.is_ascii_uppercase()) {
                "must be lower case"
            } else {
                "invalid reference format"
            };
            return Err(format!("image {image:?}: repository name {reason}"));
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
            _ => ("", name),
        };
        Ok(ImageRef { registry: registry.into(), repository: repository.into(), tag, digest })
    }

    /// Sets the tag or the digest, whichever `input` is; an input that is neither is ignored
    /// (Karmada's `SetTagOrDigest`).
    fn set_tag_or_digest(&mut self, input: &str) {
        if is_tag(input) {
            self.tag = input.into();
            self.digest.clear();
        } else if is_digest(input) {
            self.digest = input.into();
            self.tag.clear();
        }
    }

    /// Applies one image overrider operation.
    pub fn apply(&mut self, component: ImageComponent, op: OverriderOperator, value: &str) {
        match (component, op) {
            (ImageComponent::Registry, OverriderOperator::Add) => self.registry.push_str(value),
            (ImageComponent::Registry, OverriderOperator::Replace) => self.registry = value.into(),
            (ImageComponent::Registry, OverriderOperator::Remove) => self.registry.clear(),
            (ImageComponent::Repository, OverriderOperator::Add) => self.repository.push_str(value),
            (ImageComponent::Repository, OverriderOperator::Replace) => self.repository = value.into(),
            (ImageComponent::Repository, OverriderOperator::Remove) => self.repository.clear(),
            (ImageComponent::Tag, OverriderOperator::Add) => {
                let current = if self.tag.is_empty() { self.digest.clone() } else { self.tag.clone() };
                self.set_tag_or_digest(&format!("{current}{value}"));
            }
            (ImageComponent::Tag, OverriderOperator::Replace) => self.set_tag_or_digest(value),
            (ImageComponent::Tag, OverriderOperator::Remove) => {
                if !self.tag.is_empty() {
                    self.tag.clear();
                } else {
                    self.digest.clear();
                }
            }
        }
    }
}

impl std::fmt::Display for ImageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.registry.is_empty() {
            write!(f, "{}/", self.registry)?;
        }
        f.write_str(&self.repository)?;
        if !self.tag.is_empty() {
            write!(f, ":{}", self.tag)?;
        }
        if !self.digest.is_empty() {
            write!(f, "@{}", self.digest)?;
        }
        Ok(())
    }
}

/// Where the pod spec of a workload kind is (Karmada's list for image overriders).
fn pod_spec_pointer(kind: &str, with_job: bool) -> Option<&'static str> {
    match kind {
        "Pod" => Some("/spec"),
        "ReplicaSet" | "Deployment" | "DaemonSet" | "StatefulSet" => Some("/spec/template/spec"),
        "Job" if with_job => Some("/spec/template/spec"),
        _ => None,
    }
}

fn override_image(current: &str, img: &ImageOverrider) -> Result<String, String> {
    let mut r = ImageRef::parse(current)?;
    r.apply(img.component, img.operator, img.value.as_deref().unwrap_or(""));
    Ok(r.to_string())
}

fn apply_image(obj: &mut Value, kind: &str, img: &ImageOverrider) -> Result<(), String> {
    if let Some(pred) = &img.predicate {
        let tokens = parse_pointer(&pred.path)?;
        if tokens.is_empty() {
            return Err("predicate path must not be the document root".into());
        }
        let slot = get_mut(obj, &tokens)?;
        let Value::String(current) = slot else {
            return Err(format!("value at {} is not a string", pred.path));
        };
        *slot = Value::String(override_image(current, img)?);
        return Ok(());
    }
    let Some(spec) = pod_spec_pointer(kind, true) else { return Ok(()) };
    let Some(containers) = obj.pointer_mut(&format!("{spec}/containers")) else { return Ok(()) };
    let Value::Array(containers) = containers else {
        return Err(format!("{spec}/containers is not a list"));
    };
    for (i, c) in containers.iter_mut().enumerate() {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let new = override_image(image, img).map_err(|e| format!("{spec}/containers/{i}/image: {e}"))?;
        match c.as_object_mut() {
            Some(m) => m.insert("image".into(), Value::String(new)),
            None => return Err(format!("{spec}/containers/{i} is not an object")),
        };
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// command / args

fn apply_command_args(obj: &mut Value, kind: &str, target: &str, o: &CommandArgsOverrider) -> Result<(), String> {
    // Karmada's list for command/args has no Job.
    let Some(spec) = pod_spec_pointer(kind, false) else { return Ok(()) };
    let Some(Value::Array(containers)) = obj.pointer_mut(&format!("{spec}/containers")) else { return Ok(()) };
    for (i, c) in containers.iter_mut().enumerate() {
        let Some(m) = c.as_object_mut() else { continue };
        if m.get("name").and_then(Value::as_str) != Some(o.container_name.as_str()) {
            continue;
        }
        let current: Vec<String> = match m.get(target) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(format!("{spec}/containers/{i}/{target} holds a non-string {other}")),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(format!("{spec}/containers/{i}/{target} is not a list")),
        };
        let new: Vec<String> = match o.operator {
            OverriderOperator::Add => current.into_iter().chain(o.value.iter().cloned()).collect(),
            OverriderOperator::Remove => current.into_iter().filter(|v| !o.value.contains(v)).collect(),
            OverriderOperator::Replace => current, // rejected by validation; Karmada ignores it
        };
        m.insert(target.into(), Value::Array(new.into_iter().map(Value::String).collect()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// labels / annotations

fn apply_label_annotation(obj: &mut Value, field: &str, o: &LabelAnnotationOverrider) -> Result<(), String> {
    if o.value.is_empty() {
        return Ok(());
    }
    let Some(root) = obj.as_object_mut() else { return Err("the object is not a mapping".into()) };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else { return Err("/metadata is not a mapping".into()) };
    if o.operator != OverriderOperator::Add && !meta.contains_key(field) {
        return Ok(());
    }
    let map = meta.entry(field).or_insert_with(|| Value::Object(Map::new()));
    if map.is_null() {
        *map = Value::Object(Map::new());
    }
    let Some(map) = map.as_object_mut() else { return Err(format!("/metadata/{field} is not a mapping")) };
    for (k, v) in &o.value {
        match o.operator {
            OverriderOperator::Add => {
                map.insert(k.clone(), Value::String(v.clone()));
            }
            OverriderOperator::Replace => {
                if let Some(slot) = map.get_mut(k) {
                    *slot = Value::String(v.clone());
                }
            }
            OverriderOperator::Remove => {
                map.remove(k);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// fieldOverrider: JSON or YAML documents inside string fields

fn apply_field(obj: &mut Value, f: &FieldOverrider) -> Result<(), Failed> {
    let whole = |reason: String| (String::new(), reason);
    let tokens = parse_pointer(&f.field_path).map_err(whole)?;
    let slot = get_mut(obj, &tokens).map_err(whole)?;
    let Value::String(text) = slot else {
        return Err(whole(format!("value at {} is not a string", f.field_path)));
    };
    let patch_all = |doc: &mut Value, kind: &str, patches: &[FieldPatch]| -> Result<(), Failed> {
        for (j, p) in patches.iter().enumerate() {
            patch(doc, p.operator, &p.sub_path, p.value.as_ref()).map_err(|e| (format!(".{kind}[{j}]"), e))?;
        }
        Ok(())
    };
    let new = if !f.yaml.is_empty() {
        let mut doc: Value = serde_saphyr::from_str_with_options(text, crate::policy::load::yaml_options())
            .map_err(|e| whole(format!("{} does not hold a YAML document: {e}", f.field_path)))?;
        patch_all(&mut doc, "yaml", &f.yaml)?;
        super::yaml::to_yaml(&doc)
    } else if !f.json.is_empty() {
        let mut doc: Value = serde_json::from_str(text)
            .map_err(|e| whole(format!("{} does not hold a JSON document: {e}", f.field_path)))?;
        patch_all(&mut doc, "json", &f.json)?;
        serde_json::to_string(&doc).map_err(|e| whole(e.to_string()))?
    } else {
        return Ok(());
    };
    *slot = Value::String(new);
    Ok(())
}

/// Labels of every applied policy, for the annotation value: joined with `, `.
pub fn applied_annotation(applied: &[String]) -> Option<String> {
    (!applied.is_empty()).then(|| applied.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::types::{ClusterAffinity, ImagePredicate, ResourceSelector, RuleWithCluster};
    use crate::policy::{ObjectKey, Source, types::ObjectMeta};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx", "for": "x", "bar": "y"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.25"},
                {"name": "sidecar", "image": "fictional.registry.example:10443/sub/side@sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c", "command": ["run"], "args": ["-a", "-b", "-a"]}
            ]}}}
        })
    }

    fn facts_labels() -> BTreeMap<String, String> {
        [("location".to_string(), "us".to_string())].into()
    }

    fn with_rules(rules: Vec<RuleWithCluster>) -> Policy<OverrideSpec> {
        Policy {
            meta: ObjectMeta { name: "op".into(), namespace: Some("default".into()), ..Default::default() },
            spec: OverrideSpec { override_rules: rules, ..Default::default() },
            source: Source { file: "op.yaml".into(), document: 1 },
        }
    }

    fn run(obj: &mut Value, o: Overriders) -> Result<Vec<String>, OverrideError> {
        let labels = facts_labels();
        let facts = ClusterFacts { name: "member1", labels: &labels, provider: None, region: None, zones: &[] };
        let p = with_rules(vec![RuleWithCluster { target_cluster: None, overriders: o }]);
        apply(obj, "Deployment", &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &p }], &facts)
    }

    #[test]
    fn pointer_escapes() {
        assert_eq!(parse_pointer("").expect("ok"), Vec::<String>::new());
        assert_eq!(parse_pointer("/a~1b/c~0d/~01").expect("ok"), vec!["a/b", "c~d", "~1"]);
        assert!(parse_pointer("a").is_err());
        assert!(parse_pointer("/a~2").is_err());
        assert!(parse_pointer("/a~").is_err());
    }

    #[test]
    fn json_patch_table() {
        use OverriderOperator::*;
        let base = json!({"a": {"b": [1, 2]}, "x/y": 1, "m~n": 2});
        type Case<'a> = (OverriderOperator, &'a str, Option<Value>, Result<Value, &'a str>);
        let cases: Vec<Case> = vec![
            (Add, "/a/c", Some(json!(3)), Ok(json!({"a": {"b": [1, 2], "c": 3}, "x/y": 1, "m~n": 2}))),
            (Add, "/a/b/-", Some(json!(9)), Ok(json!({"a": {"b": [1, 2, 9]}, "x/y": 1, "m~n": 2}))),
            (Add, "/a/b/0", Some(json!(0)), Ok(json!({"a": {"b": [0, 1, 2]}, "x/y": 1, "m~n": 2}))),
            (Add, "/a/b/2", Some(json!(3)), Ok(json!({"a": {"b": [1, 2, 3]}, "x/y": 1, "m~n": 2}))),
            (Add, "/a/b/3", Some(json!(3)), Err("out of bounds")),
            (Add, "/a/b/01", Some(json!(3)), Err("not an array index")),
            (Add, "/q/r", Some(json!(1)), Err("/q does not exist")),
            (Add, "/a", Some(json!("s")), Ok(json!({"a": "s", "x/y": 1, "m~n": 2}))),
            (Add, "", Some(json!([])), Ok(json!([]))),
            (Remove, "/x~1y", None, Ok(json!({"a": {"b": [1, 2]}, "m~n": 2}))),
            (Remove, "/m~0n", None, Ok(json!({"a": {"b": [1, 2]}, "x/y": 1}))),
            (Remove, "/a/b/1", None, Ok(json!({"a": {"b": [1]}, "x/y": 1, "m~n": 2}))),
            (Remove, "/a/b/-", None, Err("not an array index")),
            (Remove, "/nope", None, Err("/nope does not exist")),
            (Replace, "/a/b/0", Some(json!(7)), Ok(json!({"a": {"b": [7, 2]}, "x/y": 1, "m~n": 2}))),
            (Replace, "/a/missing", Some(json!(7)), Err("/a/missing does not exist")),
            (Replace, "/a/b/5", Some(json!(7)), Err("out of bounds")),
            (Replace, "/x~1y/z", Some(json!(7)), Err("neither an object nor an array")),
            (Replace, "/a", None, Err("needs a value")),
        ];
        for (op, path, value, want) in cases {
            let mut doc = base.clone();
            let got = patch(&mut doc, op, path, value.as_ref());
            match want {
                Ok(v) => {
                    assert!(got.is_ok(), "{op:?} {path}: {got:?}");
                    assert_eq!(doc, v, "{op:?} {path}");
                }
                Err(m) => {
                    let e = got.expect_err(path);
                    assert!(e.contains(m), "{op:?} {path}: {e}");
                }
            }
        }
    }

    #[test]
    fn image_parsing_table() {
        let d = "sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c";
        type Parts<'a> = (&'a str, &'a str, &'a str, &'a str);
        let cases: Vec<(&str, Parts)> = vec![
            ("pause", ("", "pause", "", "")),
            ("subpath/imagename:v1.0.0", ("", "subpath/imagename", "v1.0.0", "")),
            ("library/nginx", ("", "library/nginx", "", "")),
            ("fictional.registry.example/imagename:v1.0.0", ("fictional.registry.example", "imagename", "v1.0.0", "")),
            (
                "fictional.registry.example:10443/subpath/imagename:v1.0.0",
                ("fictional.registry.example:10443", "subpath/imagename", "v1.0.0", ""),
            ),
            ("localhost/img", ("localhost", "img", "", "")),
            ("localhost:5000/a/b:t", ("localhost:5000", "a/b", "t", "")),
            ("10.10.10.10:10443/subpath/imagename", ("10.10.10.10:10443", "subpath/imagename", "", "")),
            ("[::1]:5000/img:1", ("[::1]:5000", "img", "1", "")),
            (
                "reg.io/a@sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c",
                ("reg.io", "a", "", d),
            ),
            ("a:t@sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c", ("", "a", "t", d)),
            ("my-reg/a__b.c-d---e:1", ("", "my-reg/a__b.c-d---e", "1", "")),
        ];
        for (image, (reg, repo, tag, digest)) in cases {
            let r = ImageRef::parse(image).unwrap_or_else(|e| panic!("{image}: {e}"));
            assert_eq!(
                (r.registry.as_str(), r.repository.as_str(), r.tag.as_str(), r.digest.as_str()),
                (reg, repo, tag, digest),
                "{image}"
            );
            assert_eq!(r.to_string(), image, "round trip");
        }
        for bad in [
            "",
            "Nginx",
            "nginx:",
            "nginx:-x",
            "a//b",
            "a/",
            "/a",
            "nginx@sha256:abc",
            "a___b",
            "a:b:c",
            "UPPER.io:x/y",
        ] {
            assert!(ImageRef::parse(bad).is_err(), "{bad:?} must not parse");
        }
        assert!(ImageRef::parse("Reg.IO/app:1").is_ok(), "a domain may have upper case");
    }

    #[test]
    fn image_operations_table() {
        use ImageComponent::*;
        use OverriderOperator::*;
        let d = "sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c";
        let digested = format!("nginx@{d}");
        let cases: Vec<(&str, ImageComponent, OverriderOperator, &str, String)> = vec![
            ("nginx:1.25", Registry, Add, "fictional.registry.us", "fictional.registry.us/nginx:1.25".into()),
            ("reg.io/nginx", Registry, Add, "-mirror", "reg.io-mirror/nginx".into()),
            ("reg.io/nginx", Registry, Replace, "fictional.registry.cn", "fictional.registry.cn/nginx".into()),
            ("reg.io/nginx:1", Registry, Remove, "", "nginx:1".into()),
            ("reg.io/nginx:1", Repository, Replace, "team/web", "reg.io/team/web:1".into()),
            ("nginx:1", Repository, Add, "-debug", "nginx-debug:1".into()),
            ("reg.io/nginx:1", Repository, Remove, "", "reg.io/:1".into()),
            ("nginx:1", Tag, Replace, "2", "nginx:2".into()),
            ("nginx", Tag, Replace, "latest", "nginx:latest".into()),
            ("nginx:1", Tag, Add, "-alpine", "nginx:1-alpine".into()),
            ("nginx:1", Tag, Replace, "not a tag!", "nginx:1".into()),
            ("nginx:1", Tag, Replace, d, format!("nginx@{d}")),
            ("nginx:1", Tag, Remove, "", "nginx".into()),
            (&digested, Tag, Remove, "", "nginx".into()),
            (&digested, Tag, Replace, "v2", "nginx:v2".into()),
        ];
        for (image, c, op, value, want) in cases {
            let mut r = ImageRef::parse(image).expect("parse");
            r.apply(c, op, value);
            assert_eq!(r.to_string(), want, "{image} {c:?} {op:?} {value}");
        }
    }

    #[test]
    fn image_overrider_all_containers_and_predicate() {
        let mut obj = deployment();
        let o = Overriders {
            image_overrider: vec![ImageOverrider {
                predicate: None,
                component: ImageComponent::Registry,
                operator: OverriderOperator::Replace,
                value: Some("fictional.registry.us".into()),
            }],
            ..Default::default()
        };
        run(&mut obj, o).expect("apply");
        assert_eq!(
            obj.pointer("/spec/template/spec/containers/0/image"),
            Some(&json!("fictional.registry.us/nginx:1.25"))
        );
        let side = obj.pointer("/spec/template/spec/containers/1/image").and_then(Value::as_str).unwrap_or("");
        assert!(side.starts_with("fictional.registry.us/sub/side@sha256:"), "{side}");

        let mut obj = deployment();
        let o = Overriders {
            image_overrider: vec![ImageOverrider {
                predicate: Some(ImagePredicate { path: "/spec/template/spec/containers/0/image".into() }),
                component: ImageComponent::Tag,
                operator: OverriderOperator::Replace,
                value: Some("1.26".into()),
            }],
            ..Default::default()
        };
        run(&mut obj, o).expect("apply");
        assert_eq!(obj.pointer("/spec/template/spec/containers/0/image"), Some(&json!("nginx:1.26")));
        assert!(
            obj.pointer("/spec/template/spec/containers/1/image")
                .and_then(Value::as_str)
                .is_some_and(|s| s.contains("@sha256"))
        );

        // A predicate that points nowhere fails, naming the overrider.
        let mut obj = deployment();
        let o = Overriders {
            image_overrider: vec![ImageOverrider {
                predicate: Some(ImagePredicate { path: "/spec/template/spec/containers/5/image".into() }),
                component: ImageComponent::Tag,
                operator: OverriderOperator::Remove,
                value: None,
            }],
            ..Default::default()
        };
        let e = run(&mut obj, o).expect_err("missing");
        assert_eq!(
            (e.policy.as_str(), e.rule, e.overrider.as_str()),
            ("OverridePolicy/default/op", 0, "imageOverrider[0]")
        );
        assert!(e.reason.contains("out of bounds"), "{e}");
        // Kinds without a pod template are untouched.
        let mut cm = json!({"kind": "ConfigMap", "data": {"a": "b"}});
        let before = cm.clone();
        let labels = BTreeMap::new();
        let facts = ClusterFacts { name: "m", labels: &labels, provider: None, region: None, zones: &[] };
        let p = with_rules(vec![RuleWithCluster {
            target_cluster: None,
            overriders: Overriders {
                image_overrider: vec![ImageOverrider {
                    predicate: None,
                    component: ImageComponent::Tag,
                    operator: OverriderOperator::Replace,
                    value: Some("x".into()),
                }],
                ..Default::default()
            },
        }]);
        apply(&mut cm, "ConfigMap", &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &p }], &facts)
            .expect("no-op");
        assert_eq!(cm, before);
    }

    #[test]
    fn command_and_args_table() {
        use OverriderOperator::*;
        let cases: Vec<(&str, &str, OverriderOperator, Vec<&str>, Value)> = vec![
            ("command", "nginx", Add, vec!["test"], json!(["test"])),
            ("command", "sidecar", Add, vec!["--x"], json!(["run", "--x"])),
            ("args", "sidecar", Remove, vec!["-a"], json!(["-b"])),
            ("args", "nginx", Remove, vec!["-a"], json!([])),
            ("command", "absent", Add, vec!["x"], Value::Null),
        ];
        for (target, container, op, value, want) in cases {
            let mut obj = deployment();
            let co = CommandArgsOverrider {
                container_name: container.into(),
                operator: op,
                value: value.iter().map(|s| s.to_string()).collect(),
            };
            let o = if target == "command" {
                Overriders { command_overrider: vec![co], ..Default::default() }
            } else {
                Overriders { args_overrider: vec![co], ..Default::default() }
            };
            run(&mut obj, o).expect("apply");
            let idx = if container == "sidecar" { 1 } else { 0 };
            let got =
                obj.pointer(&format!("/spec/template/spec/containers/{idx}/{target}")).cloned().unwrap_or(Value::Null);
            assert_eq!(got, want, "{target} {container} {op:?}");
        }
    }

    #[test]
    fn labels_and_annotations_table() {
        use OverriderOperator::*;
        let kv = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut obj = deployment();
        let o = Overriders {
            labels_overrider: vec![
                LabelAnnotationOverrider {
                    operator: Add,
                    value: kv(&[("env", "skoala-dev"), ("app.kubernetes.io/part-of", "shop")]),
                },
                LabelAnnotationOverrider { operator: Remove, value: kv(&[("for", "for"), ("missing", "")]) },
                LabelAnnotationOverrider { operator: Replace, value: kv(&[("bar", "test"), ("nope", "x")]) },
            ],
            annotations_overrider: vec![
                LabelAnnotationOverrider { operator: Replace, value: kv(&[("emma", "sophia")]) },
                LabelAnnotationOverrider { operator: Remove, value: kv(&[("bom", "bom")]) },
                LabelAnnotationOverrider { operator: Add, value: kv(&[("env", "skoala-stage")]) },
            ],
            ..Default::default()
        };
        run(&mut obj, o).expect("apply");
        assert_eq!(
            obj["metadata"]["labels"],
            json!({"app": "nginx", "bar": "test", "env": "skoala-dev", "app.kubernetes.io/part-of": "shop"})
        );
        // replace/remove on a missing map do nothing; add creates it.
        assert_eq!(obj["metadata"]["annotations"], json!({"env": "skoala-stage"}));
    }

    #[test]
    fn field_overrider_json_and_yaml() {
        use OverriderOperator::*;
        let mut obj = json!({"kind": "ConfigMap", "data": {
            "app.yaml": "server:\n  port: 80\n  flags: [a]\nmode: \"yes\"\n",
            "app.json": "{\"b\": 1, \"list\": [1]}",
            "n": 5
        }});
        let fp = |sub: &str, op, value: Option<Value>| FieldPatch { sub_path: sub.into(), operator: op, value };
        let o = Overriders {
            field_overrider: vec![
                FieldOverrider {
                    field_path: "/data/app.yaml".into(),
                    json: vec![],
                    yaml: vec![
                        fp("/server/port", Replace, Some(json!(8080))),
                        fp("/server/flags/-", Add, Some(json!("b"))),
                        fp("/mode", Remove, None),
                    ],
                },
                FieldOverrider {
                    field_path: "/data/app.json".into(),
                    json: vec![fp("/list/0", Replace, Some(json!("x"))), fp("/c", Add, Some(json!({"d": true})))],
                    yaml: vec![],
                },
            ],
            ..Default::default()
        };
        let labels = BTreeMap::new();
        let facts = ClusterFacts { name: "m", labels: &labels, provider: None, region: None, zones: &[] };
        let p = with_rules(vec![RuleWithCluster { target_cluster: None, overriders: o }]);
        let pol = [ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &p }];
        apply(&mut obj, "ConfigMap", &pol, &facts).expect("apply");
        assert_eq!(obj["data"]["app.yaml"], json!("server:\n  flags:\n  - a\n  - b\n  port: 8080\n"));
        assert_eq!(obj["data"]["app.json"], json!("{\"b\":1,\"c\":{\"d\":true},\"list\":[\"x\"]}"));

        // Not a string, missing path, broken document, failing sub-patch: all named.
        for (path, yaml, want_overrider, want) in [
            ("/data/n", true, "fieldOverrider[0]", "not a string"),
            ("/data/zz", true, "fieldOverrider[0]", "does not exist"),
            ("/data/app.json", false, "fieldOverrider[0].json[0]", "does not exist"),
        ] {
            let sub = vec![fp("/missing/x", Replace, Some(json!(1)))];
            let o = Overriders {
                field_overrider: vec![FieldOverrider {
                    field_path: path.into(),
                    json: if yaml { vec![] } else { sub.clone() },
                    yaml: if yaml { sub } else { vec![] },
                }],
                ..Default::default()
            };
            let p = with_rules(vec![RuleWithCluster { target_cluster: None, overriders: o }]);
            let pol = [ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &p }];
            let e = apply(&mut obj.clone(), "ConfigMap", &pol, &facts).expect_err(path);
            assert_eq!(e.overrider, want_overrider, "{e}");
            assert!(e.reason.contains(want), "{e}");
        }
    }

    #[test]
    fn plaintext_and_rule_order_and_target_cluster() {
        use OverriderOperator::*;
        let labels = facts_labels();
        let facts = ClusterFacts { name: "member1", labels: &labels, provider: None, region: None, zones: &[] };
        let pt = |path: &str, op, value: Option<Value>| PlaintextOverrider { path: path.into(), operator: op, value };
        let names = |n: &[&str]| ClusterAffinity {
            cluster_names: n.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let p = with_rules(vec![
            RuleWithCluster {
                target_cluster: Some(names(&["member2"])),
                overriders: Overriders {
                    plaintext: vec![pt("/spec/replicas", Replace, Some(json!(99)))],
                    ..Default::default()
                },
            },
            RuleWithCluster {
                target_cluster: Some(names(&["member1"])),
                overriders: Overriders {
                    plaintext: vec![
                        pt("/metadata/annotations", Add, Some(json!({"foo": "bar"}))),
                        pt("/spec/replicas", Replace, Some(json!(1))),
                    ],
                    // Labels run before plaintext inside a rule, so plaintext sees (and wins over) them.
                    labels_overrider: vec![LabelAnnotationOverrider {
                        operator: Add,
                        value: [("tier".to_string(), "a".to_string())].into(),
                    }],
                    ..Default::default()
                },
            },
            RuleWithCluster {
                target_cluster: None,
                overriders: Overriders {
                    plaintext: vec![pt("/metadata/labels/tier", Replace, Some(json!("b")))],
                    ..Default::default()
                },
            },
        ]);
        let mut obj = deployment();
        let applied = apply(
            &mut obj,
            "Deployment",
            &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &p }],
            &facts,
        )
        .expect("apply");
        assert_eq!(applied, vec!["OverridePolicy/default/op"]);
        assert_eq!(obj["spec"]["replicas"], json!(1));
        assert_eq!(obj["metadata"]["annotations"], json!({"foo": "bar"}));
        assert_eq!(obj["metadata"]["labels"]["tier"], json!("b"));

        // A rule for another cluster only: nothing applied, nothing recorded.
        let only2 = with_rules(vec![RuleWithCluster {
            target_cluster: Some(names(&["member2"])),
            overriders: Overriders {
                plaintext: vec![pt("/spec/replicas", Replace, Some(json!(99)))],
                ..Default::default()
            },
        }]);
        let mut obj = deployment();
        let applied = apply(
            &mut obj,
            "Deployment",
            &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &only2 }],
            &facts,
        )
        .expect("apply");
        assert!(applied.is_empty());
        assert_eq!(obj, deployment());

        // The failing rule is named by index.
        let bad = with_rules(vec![
            RuleWithCluster { target_cluster: None, overriders: Overriders::default() },
            RuleWithCluster {
                target_cluster: None,
                overriders: Overriders {
                    plaintext: vec![
                        pt("/spec/replicas", Replace, Some(json!(3))),
                        pt("/spec/nothing", Replace, Some(json!(1))),
                    ],
                    ..Default::default()
                },
            },
        ]);
        let e = apply(
            &mut deployment(),
            "Deployment",
            &[ApplicableOverride { kind: OverrideKind::OverridePolicy, policy: &bad }],
            &facts,
        )
        .expect_err("fails");
        assert_eq!(e.to_string(), "OverridePolicy/default/op: rule 1: plaintext[1]: path /spec/nothing does not exist");
    }

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
        let pol = |name: &str, ns: Option<&str>, selectors: Vec<ResourceSelector>| Policy {
            meta: ObjectMeta { name: name.into(), namespace: ns.map(str::to_string), ..Default::default() },
            spec: OverrideSpec { resource_selectors: selectors, ..Default::default() },
            source: Source { file: "p.yaml".into(), document: 1 },
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
