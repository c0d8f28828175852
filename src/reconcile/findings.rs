//! What `check` finds per workload beyond loading (the templates a pass could not read, the
//! overrides that fail for some cluster), as [`LoadError`]s naming file, document and field.
//! Here, not in the CLI, so that the fuzzer (`testbed::fuzz`) runs exactly what `check` runs.

use super::Inputs;
use crate::model::workload::{WorkloadError, interpret};
use crate::policy::LoadError;

/// The templates whose workload cannot be read (replicas that are not a non-negative 32-bit
/// integer, unparsable quantities, bad model annotations), named by file, document and field.
/// A pass reports such a workload as unschedulable, keeps its previous output and goes on
/// with the others; `check` fails on them.
pub fn template_errors(inputs: &Inputs) -> Vec<LoadError> {
    let mut errors = Vec::new();
    for t in &inputs.set.templates {
        if let Err(e) = interpret(t.key.group(), &t.key.kind, &t.object, &inputs.interpreters) {
            let (field, message) = match e {
                WorkloadError::Quantity { field, source } => (field, format!("invalid quantity: {source}")),
                WorkloadError::Type { field, expected } => {
                    let found = t.object.pointer(&format!("/{}", field.replace('.', "/")));
                    let found = found.map(|v| format!(", found {v}")).unwrap_or_default();
                    (field, format!("expected {expected}{found}"))
                }
                WorkloadError::Annotation { field, reason } => (field, reason),
                WorkloadError::Interpreter(message) => (String::new(), message),
            };
            errors.push(LoadError::at(&t.source, field, message));
        }
    }
    errors.extend(override_errors(inputs));
    errors
}

/// The overrides that fail, or leave an invalid object, for a claimed template on one of the
/// clusters (as a pass would report them as render failures), named by the override policy's
/// file, document and overrider, with the template and the cluster. One error per overrider.
pub fn override_errors(inputs: &Inputs) -> Vec<LoadError> {
    use crate::render::overrides;
    let s = &inputs.set;
    let mut seen = std::collections::BTreeSet::new();
    let mut errors = Vec::new();
    for t in &s.templates {
        let applicable = overrides::applicable(s, t);
        if applicable.is_empty() || crate::policy::matching::claim(s, t).is_none() {
            continue;
        }
        for snapshot in &inputs.snapshots {
            let mut obj = t.object.clone();
            let Err(e) = overrides::apply(&mut obj, &t.key.kind, &applicable, &snapshot.facts()) else { continue };
            let Some(p) = applicable.iter().find(|a| a.display_ref() == e.policy) else { continue };
            let mut field = match p.policy.spec.override_rules.is_empty() {
                true => "spec.overriders".to_string(),
                false => format!("spec.overrideRules[{}].overriders", e.rule),
            };
            if e.overrider != overrides::RESULT {
                field = format!("{field}.{}", e.overrider);
            }
            if seen.insert((p.policy.source.clone(), field.clone())) {
                let message = format!("on {} for cluster {}: {}", t.key.display_ref(), snapshot.name, e.reason);
                errors.push(LoadError::at(&p.policy.source, field, message));
            }
        }
    }
    errors
}
