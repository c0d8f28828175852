//! `fedsched check`: the policy repository loaded, defaulted and validated as a pass loads it,
//! plus what a pass would find only per workload ([`template_errors`]: replicas and
//! quantities that the workload cannot be read with). Prints every error as
//! `file: document n: field: message` and exits 1 when there is one; prints the walk's notes
//! (what it skipped and why) as `note:` lines on stderr. [`load`] is the CLI's one way to load
//! a repository (with the `[policy]` walk options).

use std::path::Path;
use std::process::ExitCode;

use crate::config::Config;
use crate::policy::LoadError;
use crate::reconcile::{self, Inputs, template_errors};

/// Runs `fedsched check` on `dir`. Text: errors on stdout (`file: document n: field:
/// message`), notes and warnings on stderr. `-o json|yaml`: one document on stdout with every
/// finding ([`findings_document`]). Exit 1 when there is an error.
pub(super) fn check(cfg: &Config, dir: &Path, output: super::OutputFormat) -> Result<ExitCode, super::Failure> {
    let settings = reconcile::Settings::from_config(cfg, false).map_err(|e| super::invalid(e.into()))?;
    let loaded = load(dir, &settings);
    let (errors, inputs) = match &loaded {
        Ok(inputs) => (template_errors(inputs), Some(inputs)),
        Err(errors) => (errors.clone(), None),
    };
    let secrets = inputs.map(|i| secret_findings(i, &settings.secrets)).unwrap_or_default();
    let errors: Vec<LoadError> = errors.into_iter().chain(secrets.errors).collect();
    // RolloutPolicy stages with offline members: how their gates pass (approval or time).
    let rollout_notes = inputs
        .map(|i| {
            crate::policy::validate::rollout_offline_notes(&i.set, |n| cfg.clusters.get(n).is_some_and(|a| a.is_live()))
        })
        .unwrap_or_default();
    if !matches!(output, super::OutputFormat::Text) {
        let mut doc = findings_document(dir, inputs, &errors);
        if let Some(findings) = doc["findings"].as_array_mut() {
            for (list, severity) in [(&secrets.warnings, "warning"), (&secrets.notes, "note"), (&rollout_notes, "note")]
            {
                findings.extend(list.iter().map(|e| finding(e, severity)));
            }
        }
        super::print_doc(output, &doc, |_| String::new());
        return Ok(if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    for w in &secrets.warnings {
        crate::errln!("warning: {w}");
    }
    for n in secrets.notes.iter().chain(&rollout_notes) {
        crate::errln!("note: {n}");
    }
    if let Some(inputs) = inputs {
        for n in &inputs.set.notes {
            crate::errln!("note: {n}");
        }
        if errors.is_empty() {
            report_ok(dir, inputs);
            return Ok(ExitCode::SUCCESS);
        }
    }
    for e in &errors {
        crate::outln!("{e}");
    }
    crate::errln!("fedsched: {} error(s) in {}", errors.len(), dir.display());
    Ok(ExitCode::from(1))
}

/// `check -o json|yaml`: `{directory, ok, counts, findings: [{file, document, field, message,
/// severity}]}`, severity `error`, `warning` or `note` (what the walk skipped, and templates
/// a higher-ranked policy shadows); `counts` only when the repository loaded.
fn findings_document(dir: &Path, inputs: Option<&Inputs>, errors: &[LoadError]) -> serde_json::Value {
    use serde_json::json;
    let mut findings: Vec<serde_json::Value> = errors.iter().map(|e| finding(e, "error")).collect();
    let mut counts = serde_json::Value::Null;
    if let Some(inputs) = inputs {
        let s = &inputs.set;
        findings.extend(crate::policy::validate::warnings(s).iter().map(|w| finding(w, "warning")));
        findings.extend(s.notes.iter().map(|n| finding(n, "note")));
        for t in &s.templates {
            let Some(c) = crate::policy::matching::claim(s, t) else { continue };
            for sh in &c.shadowed {
                let reason = crate::policy::matching::shadow_reason(s, t, &c, sh);
                let message = format!("{} is claimed by {}; {} is shadowed for it: {reason}", t.key, c.policy, sh);
                findings.push(finding(&LoadError::at(&t.source, "", message), "note"));
            }
        }
        counts = json!({
            "templates": s.templates.len(),
            "propagationPolicies": s.propagation_policies.len(),
            "clusterPropagationPolicies": s.cluster_propagation_policies.len(),
            "overridePolicies": s.override_policies.len(),
            "clusterOverridePolicies": s.cluster_override_policies.len(),
            "clusters": s.clusters.len(),
            "rolloutPolicies": s.rollout_policies.len(),
        });
    }
    json!({
        "directory": dir.display().to_string(),
        "ok": errors.is_empty(),
        "counts": counts,
        "findings": findings,
    })
}

/// One finding of `check -o json|yaml`.
fn finding(e: &LoadError, severity: &str) -> serde_json::Value {
    serde_json::json!({
        "file": e.file.display().to_string(),
        "document": e.document,
        "field": e.field,
        "message": e.message,
        "severity": severity,
    })
}

/// What `check` says of the Secrets a pass would write ([`crate::secrets`]).
#[derive(Default)]
struct SecretFindings {
    errors: Vec<LoadError>,
    warnings: Vec<LoadError>,
    notes: Vec<LoadError>,
}

/// Each Secret a pass would propagate (claimed by a policy, or pulled in by `propagateDeps`)
/// named with what `[secrets]` makes of it and the choices: an error when no mode is set (a
/// pass does not write it), a warning for clear text, a note when it is left out or
/// encrypted; with `sops`, invalid recipients are errors and clusters without one a warning.
fn secret_findings(inputs: &Inputs, settings: &crate::secrets::SecretsSettings) -> SecretFindings {
    use crate::secrets::{Mode, is_secret};
    let s = &inputs.set;
    let mut out = SecretFindings::default();
    let deps = reconcile::dependency_map(inputs, |_| None);
    let propagated: Vec<(&crate::policy::Template, String)> = s
        .templates
        .iter()
        .filter(|t| is_secret(&t.key))
        .filter_map(|t| match crate::policy::matching::claim(s, t) {
            Some(c) => Some((&**t, format!("claimed by {}", c.policy))),
            None => {
                deps.get(&t.key).and_then(|by| by.first()).map(|w| (&**t, format!("pulled in by propagateDeps of {w}")))
            }
        })
        .collect();
    if propagated.is_empty() {
        return out;
    }
    let recipients = match settings.mode {
        Some(Mode::Sops) => Some(crate::secrets::Recipients::resolve(settings, s)),
        _ => None,
    };
    let without: Vec<&str> = match &recipients {
        Some(r) => s.clusters.iter().map(|c| c.meta.name.as_str()).filter(|c| r.of(c).is_err()).collect(),
        None => Vec::new(),
    };
    for (t, why) in propagated {
        let name = format!("{} ({why})", t.key.display_ref());
        let at = |message: String| LoadError::at(&t.source, "", message);
        match settings.mode {
            None => out.errors.push(at(format!("{name}: not written: {}", crate::secrets::unset_message()))),
            Some(Mode::Plain) => out.warnings.push(at(format!(
                "{name} is written to every cluster's directory in clear text ([secrets] mode = \"plain\"); mode = \"sops\" \
                 encrypts it for each cluster's age recipient, mode = \"omit\" leaves it out"
            ))),
            Some(Mode::Omit) => out.notes.push(at(format!(
                "{name} is left out of the output ([secrets] mode = \"omit\"): provision it another way (External \
                 Secrets, Sealed Secrets)"
            ))),
            Some(Mode::Sops) if without.is_empty() => {
                out.notes.push(at(format!("{name} is written SOPS-encrypted for each cluster's age recipient")))
            }
            Some(Mode::Sops) => out.warnings.push(at(format!(
                "{name} is written SOPS-encrypted; clusters without a valid age recipient do not get it (a render \
                 failure there): {}",
                without.join(", ")
            ))),
        }
    }
    if let Some(r) = &recipients {
        // The config's recipients were checked when it was read; the annotations here.
        for c in s.clusters.iter().filter(|c| !settings.recipients.contains_key(&c.meta.name)) {
            let Some(value) = c.meta.annotations.get(crate::secrets::ANNOTATION_AGE_RECIPIENT) else { continue };
            if let Err(e) = value.trim().parse::<age::x25519::Recipient>() {
                let field = format!("metadata.annotations[{}]", crate::secrets::ANNOTATION_AGE_RECIPIENT);
                out.errors.push(LoadError::at(&c.source, field, format!("not an age X25519 recipient (age1…): {e}")));
            }
        }
        out.warnings.extend(r.conflicts.iter().filter_map(|name| {
            let c = s.cluster(name)?;
            let field = format!("metadata.annotations[{}]", crate::secrets::ANNOTATION_AGE_RECIPIENT);
            let m = format!("differs from [clusters.{name}] age_recipient in the config, which is used");
            Some(LoadError::at(&c.source, field, m))
        }));
    }
    out
}

/// The inputs of `dir` walked as `[policy]` says, with the profiles and `[interpreter]`
/// customizations of `settings` (the CLI's one way to load a repository).
pub(super) fn load(dir: &Path, settings: &reconcile::Settings) -> Result<Inputs, Vec<LoadError>> {
    reconcile::load_inputs(reconcile::Repository::Dir(dir), settings)
}

fn report_ok(dir: &Path, inputs: &Inputs) {
    let s = &inputs.set;
    crate::outln!(
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
        crate::errln!("warning: {w}");
    }
    // Conflict report (from scratch: check reads no store, so it cannot know which policy
    // claimed a template first).
    for t in &s.templates {
        if let Some(c) = crate::policy::matching::claim(s, t) {
            for sh in &c.shadowed {
                crate::outln!(
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
