//! `fedsched plan`: the daemon's next pass over a changed policy repository, with nothing
//! written ([`Reconciler::preview`] on a private copy of the store, [`Store::open_copy`], so
//! it also works while the daemon holds the store), compared with what the daemon last
//! published or with a base repository (`--base DIR`, `--base-ref REF` of the repository's
//! git history) on the same store ([`crate::views::plan`]). Exit codes like
//! `terraform plan -detailed-exitcode`: 0 no change, 2 changes, 1 invalid input or any
//! failure. A one-shot process: each repository is loaded once without a parse cache
//! ([`reconcile::load_inputs_once`]), and what it built is left to the exit.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode, Stdio};

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{DirArgs, Failure, exit, invalid, invalid_inputs};
use crate::config::Config;
use crate::reconcile::{self, Inputs, Reconciler};
use crate::store::Store;
use crate::views::plan::{self, Before};

/// `fedsched plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The changed policy repository (`--policies`), the output directory the daemon publishes
    /// to (`--out`) and its state directory (`--state`).
    #[command(flatten)]
    pub dirs: DirArgs,
    /// Compare with this base repository (evaluated on the same store) instead of what the
    /// daemon last published.
    #[arg(long, value_name = "DIR", conflicts_with = "base_ref")]
    pub base: Option<PathBuf>,
    /// Compare with the policy directory as it is at this git ref of its repository.
    #[arg(long, value_name = "REF")]
    pub base_ref: Option<String>,
    /// Poll the live members once first (default: their latest stored snapshots).
    #[arg(long)]
    pub live: bool,
    /// Add a unified diff of every changed file.
    #[arg(long)]
    pub diff: bool,
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: PlanFormat,
}

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum PlanFormat {
    #[default]
    Text,
    Json,
    Markdown,
}

/// Runs `fedsched plan`; every failure exits 1 (2 means "changes").
pub(super) fn plan(cfg: &Config, a: &PlanArgs) -> Result<ExitCode, Failure> {
    run(cfg, a).map_err(|f| Failure { code: exit::INVALID, error: f.error })
}

fn run(cfg: &Config, a: &PlanArgs) -> Result<ExitCode, Failure> {
    let paths = cfg.paths(&a.dirs.overrides()).map_err(|e| invalid(e.into()))?;
    let settings = reconcile::Settings::from_config(cfg, false).map_err(|e| invalid(e.into()))?;
    let scratch = tempfile::tempdir().context("cannot create a temporary directory")?;
    let store = Store::open_copy(&paths.state_dir, &scratch.path().join("state"))
        .with_context(|| format!("cannot read the store of {}", paths.state_dir.display()))?;
    let base_dir = match (&a.base, &a.base_ref) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(r)) => Some(checkout(&paths.policy_dir, r, &scratch.path().join("base"))?),
        (None, None) => None,
    };
    let load = |dir: &Path| -> Result<Inputs, Failure> {
        let mut inputs = reconcile::load_inputs_once(dir, &settings).map_err(|errs| invalid(invalid_inputs(&errs)))?;
        if a.live {
            super::poll_once(cfg, &mut inputs, &store)?;
        } else {
            let live: std::collections::BTreeSet<String> = cfg.clusters.keys().cloned().collect();
            crate::views::resources::with_stored_live(&mut inputs.snapshots, &live, &store)?;
        }
        Ok(inputs)
    };
    let after_inputs = load(&paths.policy_dir)?;
    let base_inputs = base_dir.as_deref().map(load).transpose()?;
    let reconciler = Reconciler::new(store, settings);
    let now = crate::util::clock::now_ms();
    let base = match &base_inputs {
        Some(inputs) => Some(reconciler.preview(inputs, &paths.output_dir, now).context("the base repository")?),
        None => None,
    };
    let after = reconciler.preview(&after_inputs, &paths.output_dir, now)?;
    let before = match &base {
        Some(b) => Before::Base(b),
        None => Before::Published,
    };
    let doc = plan::document(&after, &before, &after_inputs.set, &paths.output_dir, a.diff);
    match a.output {
        PlanFormat::Json => println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default()),
        PlanFormat::Text => print!("{}", plan::to_text(&doc)),
        PlanFormat::Markdown => print!("{}", plan::to_markdown(&doc)),
    }
    let code = ExitCode::from(if doc["changes"] == true { 2 } else { exit::OK });
    // The process ends here: the previews and inputs (every workload's decision and template)
    // are left to the exit instead of being freed one allocation at a time.
    std::mem::forget((after, base, after_inputs, base_inputs, doc));
    Ok(code)
}

/// The policy directory `policies` as it is at `reference` of its git repository, extracted
/// under `into` (`git archive | tar -x`; the repository itself is not touched).
fn checkout(policies: &Path, reference: &str, into: &Path) -> Result<PathBuf, Failure> {
    let git = |args: &[&str]| -> Result<String, Failure> {
        let out = Process::new("git").arg("-C").arg(policies).args(args).output().context("cannot run git")?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(invalid(anyhow::anyhow!("git {}: {err}", args.join(" "))));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let prefix = git(&["rev-parse", "--show-prefix"])?;
    git(&["rev-parse", "--verify", &format!("{reference}^{{commit}}")])?;
    std::fs::create_dir_all(into).with_context(|| format!("cannot create {}", into.display()))?;
    let mut archive = Process::new("git");
    archive.arg("-C").arg(&top).args(["archive", "--format=tar", reference]);
    if !prefix.is_empty() {
        archive.arg(&prefix);
    }
    let mut archive = archive.stdout(Stdio::piped()).spawn().context("cannot run git archive")?;
    let stdout = archive.stdout.take().context("git archive has no output")?;
    let tar = Process::new("tar").arg("-x").arg("-C").arg(into).stdin(stdout).status().context("cannot run tar")?;
    let archived = archive.wait().context("git archive")?;
    if !archived.success() || !tar.success() {
        return Err(invalid(anyhow::anyhow!("cannot extract {reference}:{prefix} of {top}")));
    }
    Ok(into.join(prefix))
}
