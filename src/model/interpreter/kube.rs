//! The `kube` library scripts get from `require("kube")`, with Karmada's semantics:
//!
//! - `accuratePodRequirements(podTemplate)`: what one replica of the pod template needs,
//!   `{nodeClaim = {nodeSelector, tolerations, hardNodeAffinity}, resourceRequest = {...},
//!   namespace, priorityClassName}` (nil when the template asks for nothing) — computed by the
//!   same [`crate::model::workload::pod_requirements`] the built-in kinds use;
//! - `getPodDependencies(podTemplate, namespace)`: the ConfigMaps, Secrets, ServiceAccount and
//!   PVCs the template references, `{apiVersion, kind, namespace, name}` each (namespace
//!   `default` when nil) — [`crate::model::deps::pod_dependencies`];
//! - `resourceAdd(q1, q2, ...)`: the sum of quantities, as a canonical quantity string in the
//!   format (decimal or binary suffixes) of the first non-zero operand;
//! - `getResourceQuantity(q)`: a quantity as a number (`"500m"` → 0.5).

use mlua::{Lua, MultiValue, Table, Value as LuaValue};
use serde_json::{Map, Value, json};

use super::lua::{lua_to_json, to_lua, unlimited};
use crate::model::quantity::parse_milli;
use crate::model::workload::{ReplicaRequirements, pod_requirements};

/// The `kube` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "accuratePodRequirements",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::runtime("accuratePodRequirements only accepts one argument"));
            }
            unlimited(lua, || {
                let template = json_arg(&args[0], "accuratePodRequirements")?;
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

/// Requirements in Karmada's `ReplicaRequirements` JSON shape.
pub fn requirements_to_json(req: &ReplicaRequirements, namespace: Option<&str>) -> Option<Value> {
    let mut claim = Map::new();
    if !req.node_selector.is_empty() {
        claim.insert("nodeSelector".into(), json!(req.node_selector));
    }
    if let Ok(v) = serde_json::from_str::<Value>(&req.tolerations)
        && v.as_array().is_some_and(|a| !a.is_empty())
    {
        claim.insert("tolerations".into(), v);
    }
    if let Ok(v) = serde_json::from_str::<Value>(&req.node_affinity)
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

/// `accuratePodRequirements` of a pod template (JSON).
pub fn requirements_json(template: &Value) -> Result<Option<Value>, String> {
    let req = pod_requirements(template.get("spec"), "spec").map_err(|e| e.to_string())?;
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
