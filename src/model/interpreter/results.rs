//! What an operation gives back, typed ([`Outcome`]), and how a script's Lua values become it.
//!
//! Empty tables: Lua cannot tell `{}` from `[]`, so the VM gives `[]`; [`fix_empty`] then does
//! what Karmada's `ConvertLuaResultInto` does with its references (the objects the script was
//! given): an empty field whose path (array indices left out) was an empty object in a
//! reference becomes `{}`, one that was an empty array stays `[]`, any other is removed (an
//! element of a list too). A whole result that is empty is `{}` where an object is expected.
//! `Retain` and `ReviseReplica` have references (their objects); `AggregateStatus` and
//! `ReflectStatus` have none, so every empty map and list they return is removed.
//!
//! [`compare`] is the conformance check of Karmada's test data: each result the test names is
//! compared (dependencies and components sorted, quantities by value, `{{EXCLUDE}}` fields of
//! objects left out, objects strictly: an empty map or list is not a missing one), and every
//! result the test names must be there.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::lua::LuaOut;
use super::{Args, Operation};
use crate::model::quantity::go_quantity_value;
use crate::model::resources::ResourceList;
use crate::model::workload::ReplicaRequirements;

/// An object a customization says another depends on (`DependentObjectReference`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct DependencyRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// A label selector instead of a name (kept as JSON text).
    pub label_selector: Option<String>,
}

/// One component of a multi-template workload (`Component`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Component {
    pub name: String,
    pub replicas: i32,
    pub requirements: Option<ReplicaRequirements>,
    /// Its `replicaRequirements` as Karmada writes them back ([`karmada_requirements`], JSON
    /// text): what `fedsched interpret` prints; `requirements` is what scheduling reads.
    pub requirements_json: Option<String>,
}

/// The result of one operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Outcome {
    /// InterpretReplica: replicas and per-replica requirements (also as the script gave them).
    Replica {
        replicas: i32,
        requires: Option<ReplicaRequirements>,
        requires_json: Option<Value>,
    },
    Revised(Value),
    Retained(Value),
    AggregatedStatus(Value),
    /// InterpretStatus: the status to report (None: the script returned nil).
    Status(Option<Value>),
    Healthy(bool),
    Dependencies(Vec<DependencyRef>),
    Components(Vec<Component>),
}

impl Outcome {
    /// The results by Karmada's names, as JSON (what `fedsched interpret` prints).
    pub fn results(&self) -> Vec<(&'static str, Value)> {
        match self {
            Outcome::Replica { replicas, requires_json, .. } => {
                let mut v = vec![("replica", json!(replicas))];
                if let Some(r) = requires_json {
                    v.push(("requires", r.clone()));
                }
                v
            }
            Outcome::Revised(o) => vec![("revised", o.clone())],
            Outcome::Retained(o) => vec![("retained", o.clone())],
            Outcome::AggregatedStatus(o) => vec![("aggregatedStatus", o.clone())],
            Outcome::Status(s) => vec![("status", s.clone().unwrap_or(Value::Null))],
            Outcome::Healthy(h) => vec![("healthy", json!(h))],
            Outcome::Dependencies(d) => vec![("dependencies", Value::Array(d.iter().map(dependency_json).collect()))],
            Outcome::Components(c) => vec![("components", Value::Array(c.iter().map(component_json).collect()))],
        }
    }

    /// The results as one JSON object.
    pub fn to_json(&self) -> Value {
        Value::Object(self.results().into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

fn dependency_json(d: &DependencyRef) -> Value {
    let mut m = Map::new();
    m.insert("apiVersion".into(), json!(d.api_version));
    m.insert("kind".into(), json!(d.kind));
    if !d.namespace.is_empty() {
        m.insert("namespace".into(), json!(d.namespace));
    }
    if !d.name.is_empty() {
        m.insert("name".into(), json!(d.name));
    }
    if let Some(s) = d.label_selector.as_ref().and_then(|s| serde_json::from_str::<Value>(s).ok()) {
        m.insert("labelSelector".into(), s);
    }
    Value::Object(m)
}

fn component_json(c: &Component) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(c.name));
    m.insert("replicas".into(), json!(c.replicas));
    let written = c.requirements_json.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok());
    if let Some(r) =
        written.or_else(|| c.requirements.as_ref().and_then(|r| super::kube::requirements_to_json(r, None)))
    {
        m.insert("replicaRequirements".into(), r);
    }
    Value::Object(m)
}

/// Turns a script's return values into the operation's outcome.
pub fn decode(op: Operation, out: Vec<LuaOut>, args: &Args<'_>) -> Result<Outcome, String> {
    let mut it = out.into_iter();
    let first = it.next().unwrap_or(LuaOut::Nil);
    let refs = |list: &[Option<&Value>]| list.iter().flatten().map(|v| (*v).clone()).collect::<Vec<Value>>();
    let object = |v: LuaOut, refs: Vec<Value>| -> Result<Value, String> {
        match v {
            LuaOut::Table(t) => {
                let t = fix_empty(t, &refs, true);
                if t.is_object() { Ok(t) } else { Err("expected an object (a table with string keys)".into()) }
            }
            other => Err(format!("expected a table, got {}", other.type_name())),
        }
    };
    match op {
        Operation::InterpretReplica => {
            // A count of replicas is a whole number: Karmada truncates 2.5 to 2 without a word;
            // fedsched refuses it, and says what a NaN or an infinity is.
            let replicas = match first {
                LuaOut::Number(n) if n.is_nan() => {
                    return Err("replicas: expected a whole number, got NaN (not a number, e.g. 0/0)".into());
                }
                LuaOut::Number(n) if n.is_infinite() => {
                    return Err(format!(
                        "replicas: expected a whole number, got {}infinity (e.g. 1/0)",
                        if n < 0.0 { "-" } else { "" }
                    ));
                }
                LuaOut::Number(n) if n.fract() != 0.0 => {
                    return Err(format!(
                        "replicas: expected a whole number, got {n} (not rounded: return math.floor(x) or math.ceil(x))"
                    ));
                }
                LuaOut::Number(n) => n,
                other => return Err(format!("replicas: expected a number, got {}", other.type_name())),
            };
            if !(0.0..=f64::from(i32::MAX)).contains(&replicas) {
                return Err(format!("replicas: {replicas} is not a non-negative 32-bit integer"));
            }
            let (requires, requires_json) = match it.next().unwrap_or(LuaOut::Nil) {
                LuaOut::Nil => (None, None),
                LuaOut::Table(t) => {
                    let t = karmada_requirements(t).map_err(|e| format!("requirements: {e}"))?;
                    (Some(requirements_from_json(&t).map_err(|e| format!("requirements: {e}"))?), Some(t))
                }
                other => return Err(format!("requirements: expected a table, got {}", other.type_name())),
            };
            Ok(Outcome::Replica { replicas: replicas as i32, requires, requires_json })
        }
        Operation::ReviseReplica => Ok(Outcome::Revised(object(first, refs(&[args.desired.or(args.observed)]))?)),
        Operation::Retain => Ok(Outcome::Retained(object(first, refs(&[args.desired, args.observed]))?)),
        // Karmada converts these two without references: every empty table the script
        // returns is removed (`convertEmptySliceToEmptyStructPartly` with none).
        Operation::AggregateStatus => Ok(Outcome::AggregatedStatus(object(first, Vec::new())?)),
        Operation::InterpretStatus => match first {
            LuaOut::Nil => Ok(Outcome::Status(None)),
            v => Ok(Outcome::Status(Some(object(v, Vec::new())?))),
        },
        Operation::InterpretHealth => match first {
            LuaOut::Bool(b) => Ok(Outcome::Healthy(b)),
            other => Err(format!("expected a boolean, got {}", other.type_name())),
        },
        Operation::InterpretDependency => match first {
            LuaOut::Nil => Ok(Outcome::Dependencies(Vec::new())),
            LuaOut::Table(t) => dependencies_from_json(&t).map(Outcome::Dependencies),
            other => Err(format!("expected a table, got {}", other.type_name())),
        },
        Operation::InterpretComponent => match first {
            LuaOut::Nil => Ok(Outcome::Components(Vec::new())),
            LuaOut::Table(t) => components_from_json(&t).map(Outcome::Components),
            other => Err(format!("expected a table, got {}", other.type_name())),
        },
    }
}

/// A `ReplicaRequirements` a script returned (`requires`, a component's
/// `replicaRequirements`) as Karmada's conversion into its Go type writes it back: every empty
/// table removed (an emptied one kept as `{}`), tolerations with Kubernetes' fields only, an
/// empty `namespace` or `priorityClassName` left out (`omitempty`), each quantity in
/// Kubernetes' text for it ([`crate::model::quantity::go_canonical`]: `1` → `"1"`, `1.5` →
/// `"1500m"`, `"2.048"` as it is).
pub fn karmada_requirements(t: Value) -> Result<Value, String> {
    let mut t = fix_empty(t, &[], true);
    if let Some(tol) = t.pointer_mut("/nodeClaim/tolerations") {
        *tol = super::kube::typed_tolerations(tol.take());
    }
    if let Some(o) = t.as_object_mut() {
        for k in ["namespace", "priorityClassName"] {
            if o.get(k).is_some_and(|v| v.as_str() == Some("")) {
                o.remove(k);
            }
        }
    }
    if let Some(Value::Object(request)) = t.get_mut("resourceRequest") {
        for (k, v) in request.iter_mut() {
            *v = Value::String(go_quantity_value(v).map_err(|e| format!("resourceRequest.{k}: {e}"))?);
        }
    }
    Ok(t)
}

fn empty_object_like(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.is_empty()) || matches!(v, Value::Object(m) if m.is_empty())
}

fn as_map(v: Option<&Value>) -> Option<std::borrow::Cow<'_, Map<String, Value>>> {
    use std::borrow::Cow;
    match v {
        Some(Value::Object(m)) => Some(Cow::Borrowed(m)),
        Some(v) if empty_object_like(v) => Some(Cow::Owned(Map::new())),
        _ => None,
    }
}

/// Karmada's `ReplicaRequirements` JSON into fedsched's.
pub fn requirements_from_json(v: &Value) -> Result<ReplicaRequirements, String> {
    let mut req = ReplicaRequirements::default();
    if empty_object_like(v) || v.is_null() {
        return Ok(req);
    }
    let m = v.as_object().ok_or("expected an object")?;
    if let Some(rr) = as_map(m.get("resourceRequest")) {
        let mut list = ResourceList::from_map(&rr).map_err(|(name, e)| format!("resourceRequest.{name}: {e}"))?;
        list.0.retain(|_, v| *v > 0);
        req.request = list;
    }
    if let Some(claim) = as_map(m.get("nodeClaim")) {
        if let Some(sel) = as_map(claim.get("nodeSelector")) {
            for (k, v) in sel.iter() {
                let s = v.as_str().ok_or_else(|| format!("nodeClaim.nodeSelector.{k}: expected a string"))?;
                req.node_selector.insert(k.clone(), s.to_string());
            }
        }
        if let Some(t) = claim.get("tolerations").filter(|t| !empty_object_like(t)) {
            req.tolerations = super::kube::typed_tolerations(t.clone()).to_string();
        }
        if let Some(a) = claim.get("hardNodeAffinity").filter(|a| !empty_object_like(a)) {
            req.node_affinity = a.to_string();
        }
    }
    req.priority_class_name =
        m.get("priorityClassName").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    Ok(req)
}

fn text(m: &Map<String, Value>, k: &str) -> Result<String, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{k}: expected a string")),
    }
}

/// A list of `DependentObjectReference`s, sorted, duplicates removed.
pub fn dependencies_from_json(v: &Value) -> Result<Vec<DependencyRef>, String> {
    let list = v.as_array().ok_or("dependencies: expected a list")?;
    let mut out = BTreeSet::new();
    for (i, d) in list.iter().enumerate() {
        let m = d.as_object().ok_or_else(|| format!("dependencies[{i}]: expected an object"))?;
        let at = |e: String| format!("dependencies[{i}].{e}");
        out.insert(DependencyRef {
            api_version: text(m, "apiVersion").map_err(at)?,
            kind: text(m, "kind").map_err(at)?,
            namespace: text(m, "namespace").map_err(at)?,
            name: text(m, "name").map_err(at)?,
            label_selector: m
                .get("labelSelector")
                .filter(|s| !s.is_null() && !empty_object_like(s))
                .map(|s| s.to_string()),
        });
    }
    Ok(out.into_iter().collect())
}

/// A list of `Component`s, sorted by name.
pub fn components_from_json(v: &Value) -> Result<Vec<Component>, String> {
    let list = v.as_array().ok_or("components: expected a list")?;
    let mut out = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let m = c.as_object().ok_or_else(|| format!("components[{i}]: expected an object"))?;
        let replicas = match m.get("replicas") {
            None | Some(Value::Null) => 0,
            Some(Value::Number(n)) => n
                .as_i64()
                .and_then(|r| i32::try_from(r).ok())
                .filter(|r| *r >= 0)
                .ok_or_else(|| format!("components[{i}].replicas: expected a non-negative 32-bit integer"))?,
            Some(_) => return Err(format!("components[{i}].replicas: expected a number")),
        };
        // An empty table is no requirements (Karmada removes it); one whose members are all
        // empty is requirements of nothing, written `{}` as Karmada writes it.
        let requirements = match m.get("replicaRequirements") {
            None | Some(Value::Null) => None,
            Some(r) if empty_object_like(r) => None,
            Some(r) => {
                Some(requirements_from_json(r).map_err(|e| format!("components[{i}].replicaRequirements: {e}"))?)
            }
        };
        let requirements_json = match (&requirements, m.get("replicaRequirements")) {
            (Some(_), Some(r)) => Some(
                karmada_requirements(r.clone())
                    .map_err(|e| format!("components[{i}].replicaRequirements.{e}"))?
                    .to_string(),
            ),
            _ => None,
        };
        out.push(Component {
            name: text(m, "name").map_err(|e| format!("components[{i}].{e}"))?,
            replicas,
            requirements,
            requirements_json,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Karmada's empty-table repair (see the module doc).
pub fn fix_empty(v: Value, refs: &[Value], root_is_object: bool) -> Value {
    if matches!(&v, Value::Array(a) if a.is_empty()) {
        return if root_is_object { Value::Object(Map::new()) } else { v };
    }
    // Only an empty table (`[]`) below the root is repaired: without one the value is as it is.
    if !has_empty_list(&v) {
        return v;
    }
    let mut empty_slices = BTreeSet::new();
    let mut empty_structs = BTreeSet::new();
    for r in refs {
        collect_empty(r, &mut Vec::new(), &mut empty_slices, &mut empty_structs);
    }
    repair(v, &mut Vec::new(), &empty_slices, &empty_structs)
}

fn has_empty_list(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().any(|c| matches!(c, Value::Array(a) if a.is_empty()) || has_empty_list(c)),
        Value::Array(a) => a.iter().any(|c| matches!(c, Value::Array(x) if x.is_empty()) || has_empty_list(c)),
        _ => false,
    }
}

fn collect_empty(v: &Value, path: &mut Vec<String>, slices: &mut BTreeSet<String>, structs: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                path.push(k.clone());
                visit_child(child, path, slices, structs);
                path.pop();
            }
        }
        Value::Array(a) => {
            for child in a {
                visit_child(child, path, slices, structs);
            }
        }
        _ => {}
    }
}

fn visit_child(child: &Value, path: &mut Vec<String>, slices: &mut BTreeSet<String>, structs: &mut BTreeSet<String>) {
    match child {
        Value::Array(a) if a.is_empty() => {
            slices.insert(path.join("."));
        }
        Value::Object(m) if m.is_empty() => {
            structs.insert(path.join("."));
        }
        Value::Array(_) | Value::Object(_) => collect_empty(child, path, slices, structs),
        _ => {}
    }
}

fn repair(v: Value, path: &mut Vec<String>, slices: &BTreeSet<String>, structs: &BTreeSet<String>) -> Value {
    // Returns None for a field to delete.
    fn child(c: Value, path: &mut Vec<String>, slices: &BTreeSet<String>, structs: &BTreeSet<String>) -> Option<Value> {
        match c {
            Value::Array(a) if a.is_empty() => {
                let p = path.join(".");
                if structs.contains(&p) {
                    Some(Value::Object(Map::new()))
                } else if slices.contains(&p) {
                    Some(Value::Array(a))
                } else {
                    None
                }
            }
            other @ (Value::Array(_) | Value::Object(_)) => Some(repair(other, path, slices, structs)),
            other => Some(other),
        }
    }
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, c) in m {
                path.push(k.clone());
                if let Some(c) = child(c, path, slices, structs) {
                    out.insert(k, c);
                }
                path.pop();
            }
            Value::Object(out)
        }
        // An empty element that cannot be placed is removed from its list, as Karmada's
        // `sjson.Delete` of its index does.
        Value::Array(a) => Value::Array(a.into_iter().filter_map(|c| child(c, path, slices, structs)).collect()),
        other => other,
    }
}

const EXCLUDE: &str = "{{EXCLUDE}}";

/// Compares an outcome with the `output` of a Karmada test case.
pub fn compare(outcome: &Outcome, expected: &Value) -> Result<(), String> {
    let expected = expected.as_object().ok_or("output: expected a mapping")?;
    let mut checked = BTreeSet::new();
    for (name, got) in outcome.results() {
        let Some(want) = expected.get(name) else { continue };
        checked.insert(name);
        let same = match (name, outcome) {
            ("dependencies", Outcome::Dependencies(d)) => match want {
                Value::Null => d.is_empty(),
                w => &dependencies_from_json(w)? == d,
            },
            // Quantities by value, as Karmada's test compares them (its data says `2048m` where
            // its conversion writes `2.048`).
            ("components", Outcome::Components(c)) => match want {
                Value::Null => c.is_empty(),
                w => {
                    let by_value = |list: &[Component]| -> Vec<Component> {
                        list.iter().map(|c| Component { requirements_json: None, ..c.clone() }).collect()
                    };
                    by_value(&components_from_json(w)?) == by_value(c)
                }
            },
            ("requires", Outcome::Replica { requires, .. }) => Some(requirements_from_json(want)?) == *requires,
            ("revised" | "retained" | "aggregatedStatus", _) => {
                let mut excluded = BTreeSet::new();
                let want = strip_excluded(want, &mut Vec::new(), &mut excluded, true);
                let got = strip_excluded(&got, &mut Vec::new(), &mut excluded, false);
                strict_eq(&want, &got)
            }
            ("status", _) => strict_eq(want, &got),
            _ => want == &got,
        };
        if !same {
            return Err(format!(
                "{name}: expected\n{}\ngot\n{}",
                serde_json::to_string_pretty(want).unwrap_or_default(),
                serde_json::to_string_pretty(&got).unwrap_or_default()
            ));
        }
    }
    for key in expected.keys() {
        if !checked.contains(key.as_str()) {
            return Err(format!("output {key} is expected but the operation gave no such result"));
        }
    }
    Ok(())
}

/// Removes `{{EXCLUDE}}` fields: collecting their paths from the expected object, then removing
/// the same paths from the actual one.
fn strip_excluded(v: &Value, path: &mut Vec<String>, excluded: &mut BTreeSet<String>, collect: bool) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, c) in m {
                path.push(k.clone());
                let p = path.join(".");
                let skip = if collect {
                    let ex = c.as_str() == Some(EXCLUDE);
                    if ex {
                        excluded.insert(p);
                    }
                    ex
                } else {
                    excluded.contains(&p)
                };
                if !skip {
                    out.insert(k.clone(), strip_excluded(c, path, excluded, collect));
                }
                path.pop();
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, c)| {
                    path.push(i.to_string());
                    let out = strip_excluded(c, path, excluded, collect);
                    path.pop();
                    out
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Strict JSON equality, as Karmada's test compares objects: an empty or null map or list is
/// not a missing one, and an integer is not a float (`3` ≠ `3.0`).
pub fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| strict_eq(p, q)))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| strict_eq(p, q)),
        (Value::Number(x), Value::Number(y)) => x == y || (x.as_f64() == y.as_f64() && x.is_f64() == y.is_f64()),
        (p, q) => p == q,
    }
}

/// Requirements by resource name, for display.
pub fn request_map(r: &ReplicaRequirements) -> BTreeMap<String, i64> {
    r.request.iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_tables_follow_the_references() {
        let reference = json!({"spec": {"a": {}, "b": [], "list": [{"c": {}}]}});
        let got = json!({"spec": {"a": [], "b": [], "x": [], "list": [{"c": []}]}});
        assert_eq!(fix_empty(got, &[reference], true), json!({"spec": {"a": {}, "b": [], "list": [{"c": {}}]}}));
        assert_eq!(fix_empty(json!([]), &[], true), json!({}));
        // An empty element of a list that no reference explains is removed from the list.
        assert_eq!(fix_empty(json!({"l": [1, [], 2]}), &[], true), json!({"l": [1, 2]}));
    }

    /// Issue 48 item 5: Karmada converts AggregateStatus and ReflectStatus results without
    /// references, so every empty map and list the script returns is removed, even where the
    /// object had one.
    #[test]
    fn status_results_lose_every_empty_table() {
        let object = json!({"apiVersion": "v1", "kind": "X", "spec": {}, "status": {"m": {}, "l": []}});
        let table = || LuaOut::Table(json!({"spec": [], "status": {"m": [], "l": [], "keep": {"inner": []}, "n": 0}}));
        let args = Args { desired: Some(&object), status_items: Some(&[]), ..Args::default() };
        let want = json!({"status": {"keep": {}, "n": 0}});
        match decode(Operation::AggregateStatus, vec![table()], &args) {
            Ok(Outcome::AggregatedStatus(v)) => assert_eq!(v, want),
            other => panic!("{other:?}"),
        }
        match decode(Operation::InterpretStatus, vec![LuaOut::Table(json!({"m": [], "l": [], "n": 1}))], &args) {
            Ok(Outcome::Status(Some(v))) => assert_eq!(v, json!({"n": 1})),
            other => panic!("{other:?}"),
        }
        // Retain keeps its references: the empty map of the object stays a map.
        let retained = decode(Operation::Retain, vec![table()], &Args { observed: Some(&object), ..args.clone() });
        match retained {
            Ok(Outcome::Retained(v)) => assert_eq!(v["status"], json!({"m": {}, "l": [], "keep": {}, "n": 0})),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn exclusions_and_strict_equality() {
        let want = json!({"output": {"aggregatedStatus": {"status": {"t": "{{EXCLUDE}}", "n": 1}}}});
        let got = Outcome::AggregatedStatus(json!({"status": {"t": "2024-01-01", "n": 1}}));
        assert_eq!(compare(&got, &want["output"]), Ok(()));
        let bad = Outcome::AggregatedStatus(json!({"status": {"t": "x", "n": 2}}));
        assert!(compare(&bad, &want["output"]).is_err());
        // An integer must stay an integer.
        assert!(!strict_eq(&json!(3), &json!(3.0)));
        // An empty map or list is not a missing one (issue 48 item 5).
        assert!(!strict_eq(&json!({"a": 1, "b": {}}), &json!({"a": 1})));
        assert!(!strict_eq(&json!({"a": 1, "b": []}), &json!({"a": 1})));
        assert!(!strict_eq(&json!({"a": null}), &json!({"a": {}})));
        let empty = Outcome::AggregatedStatus(json!({"status": {"n": 1, "list": []}}));
        assert!(compare(&empty, &json!({"aggregatedStatus": {"status": {"n": 1}}})).is_err());
        // A result the test names must be produced.
        assert!(compare(&Outcome::Healthy(true), &json!({"replica": 1})).is_err());
    }

    #[test]
    fn components_compare_quantities_by_value() {
        let got = components_from_json(&json!([
            {"name": "tm", "replicas": 2, "replicaRequirements": {"resourceRequest": {"memory": 2.048, "cpu": 1}}},
            {"name": "jm", "replicas": 1}
        ]))
        .expect("valid");
        let want = json!({"components": [{"name": "jm", "replicas": 1},
            {"name": "tm", "replicas": 2, "replicaRequirements": {"resourceRequest": {"cpu": "1", "memory": "2048m"}}}]});
        assert_eq!(compare(&Outcome::Components(got), &want), Ok(()));
    }
}
