//! The `fieldOverrider`: JSON patches applied to a JSON or YAML document held in a string
//! field.

use serde_json::Value;

use super::Failed;
use super::patch::{get_mut, parse_pointer, patch};
use crate::policy::types::{FieldOverrider, FieldPatch};

pub(super) fn apply_field(obj: &mut Value, f: &FieldOverrider) -> Result<(), Failed> {
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
        let mut doc: Value =
            serde_saphyr::from_str_with_options(text, crate::policy::load::yaml_options()).map_err(|e| {
                whole(format!(
                    "{} does not hold a YAML document: {}",
                    f.field_path,
                    crate::policy::load::yaml_error(&e)
                ))
            })?;
        patch_all(&mut doc, "yaml", &f.yaml)?;
        crate::render::yaml::to_yaml(&doc)
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

#[cfg(test)]
mod tests {
    use super::super::test_fixtures::with_rules;
    use super::*;
    use crate::policy::matching::ClusterFacts;
    use crate::policy::types::{OverriderOperator, Overriders, RuleWithCluster};
    use crate::render::overrides::{ApplicableOverride, OverrideKind, apply};
    use serde_json::json;
    use std::collections::BTreeMap;

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
}
