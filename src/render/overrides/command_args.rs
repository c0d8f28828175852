//! The `commandOverrider` and `argsOverrider`: add or remove items of a container's
//! `command` / `args`.

use serde_json::Value;

use super::pod_spec_pointer;
use crate::policy::types::{CommandArgsOverrider, OverriderOperator};

pub(super) fn apply_command_args(
    obj: &mut Value,
    kind: &str,
    target: &str,
    o: &CommandArgsOverrider,
) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::super::test_fixtures::{deployment, run};
    use super::*;
    use crate::policy::types::Overriders;
    use serde_json::json;

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
}
