//! `fedsched check`: the policy repository loaded, defaulted and validated as a pass loads it,
//! plus what a pass would find only per workload ([`template_errors`]: replicas and
//! quantities that the workload cannot be read with). Prints every error as
//! `file: document n: field: message` and exits 1 when there is one; prints the walk's notes
//! (what it skipped and why) as `note:` lines on stderr. [`load`] is the CLI's one way to load
//! a repository (with the `[policy]` walk options).

use std::path::Path;
use std::process::ExitCode;

use crate::config::Config;
use crate::model::workload::{WorkloadError, interpret};
use crate::policy::LoadError;
use crate::policy::load::ParseCache;
use crate::reconcile::{self, Inputs};

/// Runs `fedsched check` on `dir`.
pub(super) fn check(cfg: &Config, dir: &Path) -> Result<ExitCode, super::Failure> {
    let settings = reconcile::Settings::from_config(cfg, false).map_err(|e| super::invalid(e.into()))?;
    let errors = match load(cfg, dir, &settings) {
        Ok(inputs) => {
            for n in &inputs.set.notes {
                eprintln!("note: {n}");
            }
            let errors = template_errors(&inputs);
            if errors.is_empty() {
                report_ok(dir, &inputs);
                return Ok(ExitCode::SUCCESS);
            }
            errors
        }
        Err(errors) => errors,
    };
    for e in &errors {
        println!("{e}");
    }
    eprintln!("fedsched: {} error(s) in {}", errors.len(), dir.display());
    Ok(ExitCode::from(1))
}

/// The inputs of `dir` walked as `[policy]` says, with the profiles and `[interpreter]`
/// customizations of `settings` (the CLI's one way to load a repository).
pub(super) fn load(cfg: &Config, dir: &Path, settings: &reconcile::Settings) -> Result<Inputs, Vec<LoadError>> {
    let mut cache = ParseCache::with_options(cfg.policy.walk_options());
    reconcile::load_inputs_for(dir, settings, Some(&mut cache))
}

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

fn report_ok(dir: &Path, inputs: &Inputs) {
    let s = &inputs.set;
    println!(
        "{}: ok: {} templates, {} PropagationPolicies, {} ClusterPropagationPolicies, {} OverridePolicies, {} ClusterOverridePolicies, {} clusters",
        dir.display(),
        s.templates.len(),
        s.propagation_policies.len(),
        s.cluster_propagation_policies.len(),
        s.override_policies.len(),
        s.cluster_override_policies.len(),
        s.clusters.len()
    );
    for w in crate::policy::validate::warnings(s) {
        eprintln!("warning: {w}");
    }
    // Conflict report (from scratch: check reads no store, so it cannot know which policy
    // claimed a template first).
    for t in &s.templates {
        if let Some(c) = crate::policy::matching::claim(s, t) {
            for sh in &c.shadowed {
                println!(
                    "{}: {} is claimed by {}; {} is shadowed for it: {}",
                    t.source,
                    t.key,
                    c.policy,
                    sh,
                    crate::policy::matching::shadow_reason(s, t, &c, sh)
                );
            }
        }
    }
}
