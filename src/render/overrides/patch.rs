//! JSON pointers (RFC 6901) and JSON patch operations (RFC 6902: add, remove, replace), and
//! the `plaintext` overrider built on them.

use serde_json::Value;

use crate::policy::types::{OverriderOperator, PlaintextOverrider};

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
pub(super) fn get_mut<'v>(doc: &'v mut Value, tokens: &[String]) -> Result<&'v mut Value, String> {
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

pub(super) fn apply_plaintext(obj: &mut Value, p: &PlaintextOverrider) -> Result<(), String> {
    patch(obj, p.operator, &p.path, p.value.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
