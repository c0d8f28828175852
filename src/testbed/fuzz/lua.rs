//! The Lua target: the customizations of the seed documents (and of `--corpus` files), their
//! scripts mutated as text (tokens replaced, lines doubled or removed, fragments of hostile
//! scripts spliced in) and the objects they run on mutated as documents; then every
//! operation through the interpreter as `fedsched interpret` runs it, in a scope of its own
//! (a script that spends its budget ends as it would in a pass).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::mutate::{Rng, mutate_value, string};
use crate::model::interpreter::{Args, Interpreters, Operation, Scope, parse_customization};
use crate::model::workload::InterpreterTable;

/// What the scripts of one case may spend together (a pass has 20 s; a case is one object).
const CASE_ALLOWANCE: Duration = Duration::from_millis(2_500);

/// Lua fragments spliced into scripts: the attack corpus' shapes, small.
const FRAGMENTS: &[&str] = &[
    " while true do end ",
    " for i = 1, 1e9 do end ",
    " local s = string.rep('a', 30) ; string.find(s, string.rep('a*', 30) .. 'b') ",
    " local co = coroutine.create(function() while true do end end) coroutine.resume(co) ",
    " local t = {} for i = 1, 1e7 do t[i] = i end ",
    " local s = 'x' for i = 1, 40 do s = s .. s end ",
    " string.rep('x', 2^31) ",
    " local function f() return f() + 1 end f() ",
    " local function g() return g() end g() ",
    " setmetatable({}, {__index = function(t, k) return t[k] end}).x ",
    " error({}) ",
    " error(nil) ",
    " return ",
    " return nil ",
    " return 0/0 ",
    " return 1/0 ",
    " return 2.5 ",
    " return -1 ",
    " return {} ",
    " return {1, nil, 3} ",
    " return {[1.5] = 1} ",
    " return 'x' ",
    " os.exit() ",
    " io.write('x') ",
    " require('os') ",
    " load('return 1')() ",
    " string.gsub('aaaa', '(a)', function(x) return string.gsub(x, 'a', 'b') end) ",
    " table.sort({3, 1, 2}, function(a, b) return true end) ",
    " string.format('%99999d', 1) ",
    " ('x'):rep(1e6):upper() ",
    " tostring(nil) .. 1 ",
    " #nil ",
    " obj = nil ",
    " _G.GetReplicas = nil ",
    " string.find('x', '[') ",
    " string.find('x', '%') ",
    " string.match(string.rep('a', 1e5), '(.-)b') ",
    " string.gmatch('abc', '()')() ",
];

/// A case: one customization document (its scripts mutated) and the objects it runs on.
#[derive(Debug)]
pub struct LuaCase {
    pub customization: Value,
    pub desired: Value,
    pub observed: Value,
    pub status_items: Vec<Value>,
    pub replicas: i64,
}

/// The customizations and objects of the seed documents.
pub(super) fn seeds(docs: &[Value]) -> (Vec<&Value>, Vec<&Value>) {
    let customizations: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "ResourceInterpreterCustomization").collect();
    let objects: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"].is_string() && d["apiVersion"].as_str().is_some_and(|a| !a.contains("karmada.io")))
        .collect();
    (customizations, objects)
}

pub(crate) fn generate(rng: &mut Rng, docs: &[Value]) -> LuaCase {
    let (customizations, objects) = seeds(docs);
    let mut customization = (*rng.pick(&customizations)).clone();
    if let Some(scripts) = customization.pointer_mut("/spec/customizations").and_then(Value::as_object_mut) {
        for (_, c) in scripts.iter_mut() {
            if let Some(Value::String(script)) = c.get_mut("luaScript")
                && rng.chance(60)
            {
                mutate_script(rng, script);
            }
        }
    }
    if rng.chance(10) {
        mutate_value(rng, &mut customization, &[], 2);
    }
    // The object is of the customization's kind (a script reads its own kind's fields).
    let mut desired = (*rng.pick(&objects)).clone();
    if let (Some(api), Some(kind), Some(d)) = (
        customization.pointer("/spec/target/apiVersion").cloned(),
        customization.pointer("/spec/target/kind").cloned(),
        desired.as_object_mut(),
    ) {
        d.insert("apiVersion".into(), api);
        d.insert("kind".into(), kind);
    }
    if rng.chance(70) {
        mutate_value(rng, &mut desired, docs, 3);
    }
    let mut observed = desired.clone();
    let status =
        json!({"replicas": 3, "readyReplicas": rng.below(5), "conditions": [{"type": "Ready", "status": "True"}]});
    if let Some(o) = observed.as_object_mut() {
        o.insert("status".into(), status);
    }
    if rng.chance(50) {
        mutate_value(rng, &mut observed, docs, 2);
    }
    let mut status_items: Vec<Value> = (0..rng.below(4))
        .map(|i| json!({"clusterName": format!("c{i}"), "status": {"readyReplicas": i, "replicas": 3}, "applied": true, "health": "Healthy"}))
        .collect();
    if let Some(item) = status_items.first_mut()
        && rng.chance(40)
    {
        mutate_value(rng, item, docs, 2);
    }
    let replicas = match rng.below(6) {
        0 => -1,
        1 => i64::from(i32::MAX),
        2 => i64::MAX,
        _ => rng.below(10) as i64,
    };
    LuaCase { customization, desired, observed, status_items, replicas }
}

/// Token-level mutations of a script.
fn mutate_script(rng: &mut Rng, script: &mut String) {
    for _ in 0..rng.range(1, 3) {
        let tokens: Vec<(usize, usize)> = token_spans(script);
        match rng.below(6) {
            0 | 1 => {
                let at = char_boundary(script, rng.below(script.len() as u64 + 1) as usize);
                let fragment: &str = rng.pick::<&str>(FRAGMENTS);
                script.insert_str(at, fragment);
            }
            2 if !tokens.is_empty() => {
                let (a, b) = *rng.pick(&tokens);
                let with = match rng.below(6) {
                    0 => "nil".to_string(),
                    1 => "0".to_string(),
                    2 => "-1e308".to_string(),
                    3 => format!("{:?}", string(rng).chars().take(64).collect::<String>()),
                    4 => "{}".to_string(),
                    _ => "obj".to_string(),
                };
                script.replace_range(a..b, &with);
            }
            3 if !tokens.is_empty() => {
                let (a, b) = *rng.pick(&tokens);
                script.replace_range(a..b, "");
            }
            4 => {
                let mut lines: Vec<&str> = script.lines().collect();
                if !lines.is_empty() {
                    let l = rng.below(lines.len() as u64) as usize;
                    if rng.chance(50) {
                        lines.remove(l);
                    } else {
                        lines.insert(l, lines[l]);
                    }
                }
                *script = lines.join("\n");
            }
            _ => {
                let at = char_boundary(script, rng.below(script.len() as u64 + 1) as usize);
                script.insert(at, char::from(rng.below(128) as u8));
            }
        }
    }
}

fn char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Byte spans of the script's words and numbers.
fn token_spans(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        let word = c.is_ascii_alphanumeric() || c == '_' || c == '.';
        match (word, start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                out.push((a, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(a) = start {
        out.push((a, s.len()));
    }
    out
}

/// Runs every operation the customization has, as `fedsched interpret` does.
pub fn run(case: &LuaCase) -> Result<(), String> {
    let Ok(c) = parse_customization(&case.customization, "fuzz.yaml") else { return Ok(()) };
    let (api, kind) = (c.api_version.clone(), c.kind.clone());
    let mut table = InterpreterTable::default();
    table.customizations = Interpreters::new(vec![c], Vec::<Arc<_>>::new());
    let interpreters = &table.customizations;
    Scope::enter(Some(Scope::with_allowance("a fuzz case", CASE_ALLOWANCE)), || {
        for op in Operation::ALL {
            let args = Args {
                desired: Some(&case.desired),
                observed: Some(&case.observed),
                replicas: case.replicas,
                status_items: Some(&case.status_items),
                now_ms: 1_767_225_600_000,
            };
            let _ = interpreters.run(&api, &kind, op, &args);
        }
        // And as a pass reads a workload of the kind.
        let group = api.split_once('/').map(|(g, _)| g).unwrap_or("");
        let _ = crate::model::workload::interpret(group, &kind, &case.desired, &table);
        let name = case.desired.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("x");
        let key = crate::policy::ObjectKey::new(&api, &kind, Some("default"), name);
        let _ = crate::model::deps::dependencies(&key, &case.desired, &table);
    });
    Ok(())
}

/// The case as text, for a person.
pub fn show(case: &LuaCase) -> String {
    format!(
        "==> customization\n{}\n==> desired\n{}\n==> observed\n{}\n==> statusItems\n{}\n==> replicas {}\n",
        crate::render::yaml::to_yaml(&case.customization),
        crate::render::yaml::to_yaml(&case.desired),
        crate::render::yaml::to_yaml(&case.observed),
        serde_json::to_string(&case.status_items).unwrap_or_default(),
        case.replicas
    )
}
