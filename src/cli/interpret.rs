//! `fedsched interpret`: runs one operation of a `ResourceInterpreterCustomization` (or of
//! fedsched's built-in interpreters) on objects from files and prints the result, like
//! `karmadactl interpret`, so people can test their own scripts. It goes through the same
//! [`Interpreters::run`] the scheduler uses.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use clap::Args;
use serde_json::Value;

use super::{Failure, OutputFormat, invalid};
use crate::model::interpreter::{self, Interpreters, Operation};

/// `fedsched interpret`.
#[derive(Debug, Args)]
pub struct InterpretArgs {
    /// File with the ResourceInterpreterCustomization(s); without it, fedsched's built-in
    /// interpreters answer.
    #[arg(short = 'f', long = "customization", value_name = "FILE")]
    pub customization: Option<PathBuf>,
    /// Only check that the customization's scripts compile.
    #[arg(long)]
    pub check: bool,
    /// InterpretReplica, ReviseReplica, Retain, AggregateStatus, InterpretStatus,
    /// InterpretHealth, InterpretDependency or InterpretComponent (or the customization field
    /// name, `replicaResource`…).
    #[arg(long, value_name = "OP", required_unless_present = "check")]
    pub operation: Option<String>,
    /// The desired object (resource template).
    #[arg(long = "desired", alias = "desired-file", value_name = "FILE")]
    pub desired: Option<PathBuf>,
    /// The observed object (as a member cluster has it).
    #[arg(long = "observed", alias = "observed-file", value_name = "FILE")]
    pub observed: Option<PathBuf>,
    /// ReviseReplica's replicas.
    #[arg(long = "replicas", alias = "desired-replica", value_name = "N", default_value_t = 0)]
    pub replicas: i64,
    /// AggregateStatus's status items (YAML documents `{clusterName, status, applied, health}`).
    #[arg(long = "status", alias = "status-file", value_name = "FILE")]
    pub status: Option<PathBuf>,
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: OutputFormat,
}

fn read_documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let mut out = Vec::new();
    for doc in crate::policy::load::split_documents(&text) {
        let v = crate::policy::load::parse_document(&doc)
            .map_err(|e| anyhow!("{}: document {}: {e}", path.display(), doc.number))?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

fn read_object(path: &Path) -> anyhow::Result<Value> {
    let mut docs = read_documents(path)?;
    match docs.len() {
        1 => Ok(docs.remove(0)),
        n => Err(anyhow!("{}: expected one object, found {n} documents", path.display())),
    }
}

pub(super) fn interpret(args: &InterpretArgs) -> Result<ExitCode, Failure> {
    let customizations = match &args.customization {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
            let found =
                interpreter::parse_customizations(&text, &path.display().to_string()).map_err(|e| invalid(e.into()))?;
            if found.is_empty() {
                return Err(invalid(anyhow!("{}: no ResourceInterpreterCustomization", path.display())));
            }
            found
        }
        None if args.check => return Err(invalid(anyhow!("--check needs --customization"))),
        None => Vec::new(),
    };
    if args.check {
        for c in &customizations {
            let ops: Vec<&str> = c.scripts.keys().map(|o| o.name()).collect();
            crate::outln!("{} ({} {}): valid; {}", c.name, c.api_version, c.kind, ops.join(", "));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let op_text = args.operation.as_deref().unwrap_or("");
    let op = Operation::parse(op_text).ok_or_else(|| {
        let names: Vec<&str> = Operation::ALL.iter().map(|o| o.name()).collect();
        invalid(anyhow!("unknown operation {op_text:?} (expected one of {})", names.join(", ")))
    })?;
    let desired = args.desired.as_deref().map(read_object).transpose().map_err(invalid)?;
    let observed = args.observed.as_deref().map(read_object).transpose().map_err(invalid)?;
    let items = args.status.as_deref().map(read_documents).transpose().map_err(invalid)?;
    let object =
        desired.as_ref().or(observed.as_ref()).ok_or_else(|| invalid(anyhow!("give --desired or --observed")))?;
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let from_file = !customizations.is_empty();
    let mut interpreters = Interpreters::new(Vec::new(), customizations.into_iter().map(Arc::new).collect());
    interpreters.builtins_off = from_file;
    let run_args = interpreter::Args {
        desired: desired.as_ref(),
        observed: observed.as_ref(),
        replicas: args.replicas,
        status_items: items.as_deref(),
        now_ms: crate::util::clock::now_ms(),
    };
    let outcome = match interpreters.run(api_version, kind, op, &run_args) {
        Some(r) => r.map_err(|e| invalid(e.into()))?,
        None => {
            let by = if from_file { "the customization file" } else { "a built-in interpreter" };
            return Err(invalid(anyhow!("nothing in {by} answers {} for {api_version} {kind}", op.name())));
        }
    };
    match args.output {
        OutputFormat::Json => crate::outln!("{}", serde_json::to_string_pretty(&outcome.to_json()).unwrap_or_default()),
        OutputFormat::Yaml => crate::out!("{}", crate::render::yaml::to_yaml(&outcome.to_json())),
        OutputFormat::Text => {
            for (name, value) in outcome.results() {
                crate::outln!("---\n# [RESULT] {name}");
                crate::out!("{}", crate::render::yaml::to_yaml(&serde_json::json!({ name: value })));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
