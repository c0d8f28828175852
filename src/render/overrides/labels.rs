//! The `labelsOverrider` and `annotationsOverrider`: add, replace or remove metadata keys.

use serde_json::{Map, Value};

use crate::policy::types::{LabelAnnotationOverrider, OverriderOperator};

pub(super) fn apply_label_annotation(obj: &mut Value, field: &str, o: &LabelAnnotationOverrider) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::super::test_fixtures::{deployment, run};
    use super::*;
    use crate::policy::types::Overriders;
    use serde_json::json;

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
}
