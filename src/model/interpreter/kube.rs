//! The `kube` library scripts get from `require("kube")`, with Karmada's semantics:
//!
//! - `accuratePodRequirements(podTemplate)`: what one replica of the pod template needs,
//!   `{nodeClaim = {nodeSelector, tolerations, hardNodeAffinity}, resourceRequest = {...},
//!   namespace}` (nil when the template asks for nothing; no `priorityClassName`, as Karmada's
//!   feature gate `ResourceQuotaEstimate` is off by default) — computed by the
//!   same [`crate::model::workload::pod_requirements`] the built-in kinds use;
//! - `getPodDependencies(podTemplate, namespace)`: the ConfigMaps, Secrets, ServiceAccount and
//!   PVCs the template references, `{apiVersion, kind, namespace, name}` each (namespace
//!   `default` when nil) — [`crate::model::deps::pod_dependencies`];
//! - `resourceAdd(q1, q2, ...)`: the sum of quantities, as a canonical quantity string in the
//!   format (decimal or binary suffixes) of the first non-zero operand;
//! - `getResourceQuantity(q)`: a quantity as a number (`"500m"` → 0.5).

use mlua::{Lua, MultiValue, Table, Value as LuaValue};
use serde_json::{Map, Value, json};

use super::lua::{Shape, lua_to_json, lua_to_json_shaped, to_lua, unlimited};
use crate::model::quantity::parse_milli;
use crate::model::workload::{ReplicaRequirements, pod_requirements};

/// The `kube` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let template_shape = pod_template_shape(lua)?;
    t.set(
        "accuratePodRequirements",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::runtime("accuratePodRequirements only accepts one argument"));
            }
            unlimited(lua, || {
                let template = match &args[0] {
                    LuaValue::Table(_) => lua_to_json_shaped(&args[0], &template_shape)
                        .map_err(|e| mlua::Error::runtime(format!("accuratePodRequirements: {e}")))?,
                    other => json_arg(other, "accuratePodRequirements")?,
                };
                match requirements_json(&template).map_err(mlua::Error::runtime)? {
                    Some(v) => to_lua(lua, &v, 0),
                    None => Ok(LuaValue::Nil),
                }
            })
        })?,
    )?;
    t.set(
        "getPodDependencies",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 2 {
                return Err(mlua::Error::runtime("getPodDependencies only accepts two arguments"));
            }
            unlimited(lua, || {
                let template = json_arg(&args[0], "getPodDependencies")?;
                let namespace = match &args[1] {
                    LuaValue::Nil => "default".to_string(),
                    LuaValue::String(s) => s.to_string_lossy(),
                    LuaValue::Integer(i) => i.to_string(),
                    LuaValue::Number(n) => n.to_string(),
                    other => {
                        return Err(mlua::Error::runtime(format!(
                            "getPodDependencies: namespace must be a string, got {}",
                            other.type_name()
                        )));
                    }
                };
                to_lua(lua, &dependencies_json(&template, &namespace), 0)
            })
        })?,
    )?;
    t.set(
        "resourceAdd",
        lua.create_function(|_, args: MultiValue| {
            let mut total: i64 = 0;
            let mut binary: Option<bool> = None;
            for (i, a) in args.iter().enumerate() {
                let Some((milli, is_binary)) = quantity_arg(a, i + 1, "resourceAdd")? else { continue };
                if binary.is_none() && milli != 0 {
                    binary = Some(is_binary);
                }
                total = total.saturating_add(milli);
            }
            Ok(format_quantity(total, binary.unwrap_or(false)))
        })?,
    )?;
    t.set(
        "getResourceQuantity",
        lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::runtime("getResourceQuantity only accepts one argument"));
            }
            let milli = quantity_arg(&args[0], 1, "getResourceQuantity")?.map(|(m, _)| m).unwrap_or(0);
            if milli < 0 {
                return Err(mlua::Error::runtime("getResourceQuantity: negative quantity"));
            }
            Ok(milli as f64 / 1000.0)
        })?,
    )?;
    Ok(t)
}

/// The parts of a pod template [`pod_requirements`] reads (its doc lists them): only these
/// cross from Lua to JSON, so a template's labels, images, environment, probes and volumes
/// cost nothing. A value elsewhere in the template that JSON cannot hold (a function, a sparse
/// list) is therefore not an error here, where Karmada's full conversion would fail.
fn pod_template_shape(lua: &Lua) -> mlua::Result<Shape> {
    let field =
        |name: &str, shape: Shape| -> mlua::Result<(mlua::LuaString, Shape)> { Ok((lua.create_string(name)?, shape)) };
    let container = || -> mlua::Result<Shape> {
        Ok(Shape::Fields(vec![field("resources", Shape::All)?, field("restartPolicy", Shape::All)?]))
    };
    let node_affinity = Shape::Fields(vec![field("requiredDuringSchedulingIgnoredDuringExecution", Shape::All)?]);
    let spec = Shape::Fields(vec![
        field("containers", Shape::Items(Box::new(container()?)))?,
        field("initContainers", Shape::Items(Box::new(container()?)))?,
        field("overhead", Shape::All)?,
        field("nodeSelector", Shape::All)?,
        field("tolerations", Shape::All)?,
        field("affinity", Shape::Fields(vec![field("nodeAffinity", node_affinity)?]))?,
    ]);
    Ok(Shape::Fields(vec![
        field("metadata", Shape::Fields(vec![field("namespace", Shape::All)?]))?,
        field("spec", spec)?,
    ]))
}

fn json_arg(v: &LuaValue, function: &str) -> mlua::Result<Value> {
    match v {
        LuaValue::Table(_) => lua_to_json(v).map_err(|e| mlua::Error::runtime(format!("{function}: {e}"))),
        other => Err(mlua::Error::runtime(format!("{function}: expected a table, got {}", other.type_name()))),
    }
}

/// A quantity argument: (milli-units, written with a binary suffix?); nil is none.
fn quantity_arg(v: &LuaValue, n: usize, function: &str) -> mlua::Result<Option<(i64, bool)>> {
    match v {
        LuaValue::Nil => Ok(None),
        LuaValue::String(s) => {
            let text = s.to_string_lossy();
            let milli =
                parse_milli(&text).map_err(|e| mlua::Error::runtime(format!("{function}: argument #{n}: {e}")))?;
            Ok(Some((milli, text.trim_end().ends_with('i'))))
        }
        LuaValue::Integer(i) => Ok(Some((i.saturating_mul(1000), false))),
        LuaValue::Number(f) => Ok(Some(((f * 1000.0).ceil() as i64, false))),
        other => Err(mlua::Error::runtime(format!(
            "{function}: bad argument #{n} (string expected, got {})",
            other.type_name()
        ))),
    }
}

/// A quantity in Kubernetes' canonical form: `1500m`, `2`, `3k`, `16Gi`.
pub fn format_quantity(milli: i64, binary: bool) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let n = milli / 1000;
    if n == 0 {
        return "0".into();
    }
    if binary && n.abs() >= 1024 {
        for (suffix, shift) in [("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
            let unit = 1i64 << shift;
            if n % unit == 0 {
                return format!("{}{suffix}", n / unit);
            }
        }
        return format!("{n}");
    }
    for (suffix, exp) in [("E", 18u32), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3)] {
        let unit = 10i64.pow(exp);
        if n % unit == 0 {
            return format!("{}{suffix}", n / unit);
        }
    }
    format!("{n}")
}

fn is_byte_resource(name: &str) -> bool {
    name == "memory" || name.contains("storage") || name.starts_with("hugepages-")
}

/// Tolerations as Karmada's typed `[]corev1.Toleration` keeps them (issue 48 item 7): only
/// `key`, `operator`, `value`, `effect` and `tolerationSeconds` of each; an unknown field
/// (`operation:` in Karmada's own Workflow test data) is dropped.
pub fn typed_tolerations(v: Value) -> Value {
    const FIELDS: [&str; 5] = ["key", "operator", "value", "effect", "tolerationSeconds"];
    match v {
        Value::Array(list) => Value::Array(
            list.into_iter()
                .map(|t| match t {
                    Value::Object(m) => {
                        Value::Object(m.into_iter().filter(|(k, _)| FIELDS.contains(&k.as_str())).collect())
                    }
                    other => other,
                })
                .collect(),
        ),
        other => other,
    }
}

/// Requirements in Karmada's `ReplicaRequirements` JSON shape.
pub fn requirements_to_json(req: &ReplicaRequirements, namespace: Option<&str>) -> Option<Value> {
    let mut claim = Map::new();
    if !req.node_selector.is_empty() {
        claim.insert("nodeSelector".into(), json!(req.node_selector));
    }
    if !req.tolerations.is_empty()
        && let Ok(v) = serde_json::from_str::<Value>(&req.tolerations)
        && v.as_array().is_some_and(|a| !a.is_empty())
    {
        claim.insert("tolerations".into(), typed_tolerations(v));
    }
    if !req.node_affinity.is_empty()
        && let Ok(v) = serde_json::from_str::<Value>(&req.node_affinity)
        && !v.is_null()
    {
        claim.insert("hardNodeAffinity".into(), v);
    }
    let request: Map<String, Value> = req
        .request
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(format_quantity(v, is_byte_resource(k) && v % (1024 * 1000) == 0))))
        .collect();
    if claim.is_empty() && request.is_empty() {
        return None;
    }
    let mut out = Map::new();
    if !claim.is_empty() {
        out.insert("nodeClaim".into(), Value::Object(claim));
    }
    if !request.is_empty() {
        out.insert("resourceRequest".into(), Value::Object(request));
    }
    if let Some(ns) = namespace.filter(|n| !n.is_empty()) {
        out.insert("namespace".into(), Value::String(ns.into()));
    }
    if let Some(p) = req.priority_class_name.as_ref().filter(|p| !p.is_empty()) {
        out.insert("priorityClassName".into(), Value::String(p.clone()));
    }
    Some(Value::Object(out))
}

/// `accuratePodRequirements` of a pod template (JSON). No `priorityClassName`: Karmada adds it
/// only under its `ResourceQuotaEstimate` feature gate, alpha and off by default (issue 48
/// item 6); a script that wants it sets it, as Karmada's Flink and Spark scripts do.
pub fn requirements_json(template: &Value) -> Result<Option<Value>, String> {
    let mut req = pod_requirements(template.get("spec"), "spec").map_err(|e| e.to_string())?;
    req.priority_class_name = None;
    let namespace = template.get("metadata").and_then(|m| m.get("namespace")).and_then(Value::as_str);
    Ok(requirements_to_json(&req, namespace))
}

/// `getPodDependencies` of a pod template (JSON list).
pub fn dependencies_json(template: &Value, namespace: &str) -> Value {
    let Some(spec) = template.get("spec") else {
        return Value::Array(Vec::new());
    };
    Value::Array(
        crate::model::deps::pod_dependencies(spec)
            .into_iter()
            .map(|(kind, name)| json!({"apiVersion": "v1", "kind": kind, "namespace": namespace, "name": name}))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_quantities() {
        assert_eq!(format_quantity(1500, false), "1500m");
        assert_eq!(format_quantity(3000, false), "3");
        assert_eq!(format_quantity(3_000_000, false), "3k");
        assert_eq!(format_quantity(1_500_000, false), "1500");
        assert_eq!(format_quantity(3 * (1 << 30) * 1000, true), "3Gi");
        assert_eq!(format_quantity(1_000_000, true), "1k");
        assert_eq!(format_quantity(0, true), "0");
    }

    #[test]
    fn accurate_pod_requirements_reads_only_the_fields_it_needs_with_the_same_answer() {
        use super::super::lua::{LuaArg, LuaOut, call};
        // Every field `pod_requirements` reads, among many it does not.
        let template = serde_json::json!({
            "metadata": {"namespace": "team", "labels": {"app": "a"}, "annotations": {"x": "y"}},
            "spec": {
                "nodeSelector": {"zone": "a", "disk": "ssd"},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["arm64"]}]}]}},
                    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
                "priorityClassName": "high",
                "overhead": {"cpu": "50m"},
                "volumes": [{"name": "v", "configMap": {"name": "cm"}}],
                "initContainers": [
                    {"name": "i", "image": "busybox", "resources": {"requests": {"cpu": "2"}}},
                    {"name": "s", "restartPolicy": "Always", "resources": {"limits": {"memory": "1Gi"}}}],
                "containers": [
                    {"name": "c", "image": "nginx", "env": [{"name": "A", "value": "1"}],
                     "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
                    {"name": "d", "ports": [{"containerPort": 80}], "resources": {"limits": {"nvidia.com/gpu": 1}}}]}});
        let script = "local kube = require('kube') function F(t) return kube.accuratePodRequirements(t) end";
        let out = call(script, "t", "F", &[LuaArg::Json(&template)], 0).expect("runs");
        let want = requirements_json(&template).expect("valid").expect("asks for something");
        assert_eq!(out, vec![LuaOut::Table(want.clone())]);
        // Issue 48 item 7: a toleration's unknown field is dropped, as Karmada's typed struct does.
        let mut odd = template.clone();
        odd["spec"]["tolerations"][0]["operation"] = serde_json::json!("x");
        let got = requirements_json(&odd).expect("valid").expect("asks for something");
        assert_eq!(got["nodeClaim"]["tolerations"], want["nodeClaim"]["tolerations"]);
        // Issue 48 item 6: no priorityClassName (Karmada's ResourceQuotaEstimate gate is off).
        assert!(want.get("priorityClassName").is_none(), "{want}");
        assert_eq!(want["namespace"], "team");
        // What it does not read is not converted: a value JSON cannot hold elsewhere in the
        // template is no error (a function in the environment), one in what it reads is.
        let script = "local kube = require('kube') function F(t, where) \
            if where == 1 then t.spec.containers[1].env = print else t.spec.containers[1].resources.requests.cpu = print end \
            return kube.accuratePodRequirements(t) end";
        let out = call(script, "t", "F", &[LuaArg::Json(&template), LuaArg::Number(1.0)], 0).expect("runs");
        assert!(matches!(&out[0], LuaOut::Table(t) if t["resourceRequest"]["cpu"] == "2050m"), "{out:?}");
        let e = call(script, "t", "F", &[LuaArg::Json(&template), LuaArg::Number(2.0)], 0).expect_err("a function");
        assert!(e.to_string().contains("function"), "{e}");
    }

    #[test]
    fn helpers_from_lua() {
        let script = r#"
            local kube = require("kube")
            function F(t)
              local r = kube.accuratePodRequirements(t)
              return r.resourceRequest.cpu, kube.resourceAdd("1Gi", "1Gi"), kube.resourceAdd(nil, "500m", "1"),
                kube.getResourceQuantity("2048m"), #kube.getPodDependencies(t, nil), r.namespace
            end"#;
        let t = serde_json::json!({"metadata": {"namespace": "ns"}, "spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m"}}, "envFrom": [{"secretRef": {"name": "s"}}]}]}});
        let out = super::super::lua::call(script, "t", "F", &[super::super::lua::LuaArg::Json(&t)], 0).expect("runs");
        use super::super::lua::LuaOut::*;
        assert_eq!(
            out,
            vec![
                String("250m".into()),
                String("2Gi".into()),
                String("1500m".into()),
                Number(2.048),
                Number(1.0),
                String("ns".into())
            ]
        );
    }
}
