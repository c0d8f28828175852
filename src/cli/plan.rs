//! `fedsched plan`: the daemon's next pass over a changed policy repository, with nothing
//! written, compared with what the daemon last published or with a base repository (`--base
//! DIR`, `--base-ref REF` of the repository's git history) ([`crate::views::plan`]). Exit codes
//! like `terraform plan -detailed-exitcode`: 0 no change, 2 changes, 1 invalid input or any
//! failure.
//!
//! Two ways, the same document:
//! - **through the running daemon** (`--server URL`, or by itself when a daemon holds the
//!   store of `--state` and its API address is known): the repositories are read here and sent
//!   as their files (`POST /api/v1/plan`); the daemon previews them on its warm cache and a dry
//!   run of its store ([`crate::views::plan::on_daemon`]), so the plan costs what the change
//!   touches. Its members are the daemon's live view (`--live` changes nothing there).
//! - **in this process** (`--local`, no daemon, or a daemon that cannot be reached or has no
//!   good pass yet: said on stderr): [`Reconciler::preview`] on a private copy of the store
//!   ([`Store::open_copy`]), each repository loaded by that reconciler (through the parse
//!   cache the copy holds: what the daemon parsed is not parsed again); what it built is left
//!   to the exit.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode, Stdio};

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{Api, DirArgs, Failure, exit, invalid, invalid_inputs};
use crate::api::client;
use crate::config::Config;
use crate::policy::load::{RepositoryFiles, read_repository};
use crate::reconcile::{self, Inputs, Reconciler};
use crate::store::Store;
use crate::views::plan::{self, Before, PlanRequest};

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
    /// Plan through this daemon's API (http://HOST:PORT). Without it, a daemon that holds the
    /// store of `--state` is asked when its API address is known.
    #[arg(long, value_name = "URL", conflicts_with = "local")]
    pub server: Option<String>,
    /// Plan in this process on a copy of the store, even while a daemon runs.
    #[arg(long)]
    pub local: bool,
}

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum PlanFormat {
    #[default]
    Text,
    Json,
    Yaml,
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
    let base_dir = match (&a.base, &a.base_ref) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(r)) => Some(checkout(&paths.policy_dir, r, &scratch.path().join("base"))?),
        (None, None) => None,
    };
    if let Some(daemon) = daemon_of(cfg, a, &paths.state_dir)? {
        let explicit = a.server.is_some();
        match on_daemon(&daemon, a, &settings, &paths.policy_dir, base_dir.as_deref())? {
            Asked::Planned(doc) => return Ok(print(&doc, a.output)),
            Asked::Unavailable(why) if !explicit => {
                crate::errln!("fedsched plan: {why}; planning in this process on a copy of the store");
            }
            Asked::Unavailable(why) => return Err(anyhow::anyhow!("{why}").into()),
        }
    }
    let store = Store::open_copy(&paths.state_dir, &scratch.path().join("state"))
        .with_context(|| format!("cannot read the store of {}", paths.state_dir.display()))?;
    // Loaded through the reconciler: the copy holds the daemon's parse cache, so a file the
    // daemon (or a previous `render`) parsed is not parsed again.
    let reconciler = Reconciler::new(store, settings);
    let load = |dir: &Path| -> Result<Inputs, Failure> {
        let mut inputs = reconciler
            .load_inputs(dir, &mut reconcile::PhaseTimings::default(), &reconcile::Changed::Unknown)
            .map_err(|errs| invalid(invalid_inputs(&errs)))?;
        let store = &reconciler.store;
        if a.live {
            super::poll_once(cfg, &mut inputs, store)?;
        } else {
            let live: std::collections::BTreeSet<String> = cfg.clusters.keys().cloned().collect();
            crate::views::resources::with_stored_live(&mut inputs.snapshots, &live, store)?;
        }
        Ok(inputs)
    };
    let after_inputs = load(&paths.policy_dir)?;
    let base_inputs = base_dir.as_deref().map(load).transpose()?;
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
    let code = print(&doc, a.output);
    // The process ends here: the previews and inputs (every workload's decision and template)
    // are left to the exit instead of being freed one allocation at a time.
    std::mem::forget((after, base, after_inputs, base_inputs, doc));
    Ok(code)
}

/// Prints the plan document in `format`; the exit code it gives (0 no change, 2 changes).
fn print(doc: &serde_json::Value, format: PlanFormat) -> ExitCode {
    match format {
        PlanFormat::Json => crate::outln!("{}", serde_json::to_string_pretty(doc).unwrap_or_default()),
        PlanFormat::Text => crate::out!("{}", plan::to_text(doc)),
        PlanFormat::Yaml => crate::out!("{}", crate::render::yaml::to_yaml(doc)),
        PlanFormat::Markdown => crate::out!("{}", plan::to_markdown(doc)),
    }
    ExitCode::from(if doc["changes"] == true { 2 } else { exit::OK })
}

/// A daemon to plan through: `--server`, or the one holding the store of `state_dir` when its
/// API address is known (`<state>/http.addr`, else `[http] listen`). None with `--local`.
fn daemon_of(cfg: &Config, a: &PlanArgs, state_dir: &Path) -> Result<Option<Api>, Failure> {
    if a.local {
        return Ok(None);
    }
    if let Some(url) = &a.server {
        return Ok(Some(Api::at(cfg, url)?));
    }
    if !Store::in_use(state_dir) {
        return Ok(None);
    }
    match Api::of_state(cfg, state_dir)? {
        Some(api) => Ok(Some(api)),
        None => {
            crate::errln!(
                "fedsched plan: a daemon holds {} but its API address is not known; planning in this process",
                state_dir.display()
            );
            Ok(None)
        }
    }
}

/// What asking the daemon gave.
enum Asked {
    Planned(serde_json::Value),
    /// It cannot be reached, or has no good pass yet.
    Unavailable(String),
}

/// How long the daemon may take for each step of the exchange (connect, answer, each frame).
const DAEMON_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// While the daemon runs another plan: ask again after this pause, at most this many times
/// (two minutes), then plan in this process.
const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);
const BUSY_RETRIES: u32 = 240;

/// Sends the repositories to the daemon and returns its plan document. An invalid repository
/// is exit 1 with every error on stderr, as in this process.
fn on_daemon(
    api: &Api,
    a: &PlanArgs,
    settings: &reconcile::Settings,
    policy_dir: &Path,
    base_dir: Option<&Path>,
) -> Result<Asked, Failure> {
    let read = |dir: &Path| -> Result<RepositoryFiles, Failure> {
        let (files, errors) = read_repository(dir, &settings.walk);
        match errors.is_empty() {
            true => Ok(files),
            false => Err(invalid(invalid_inputs(&errors))),
        }
    };
    let request = PlanRequest { after: read(policy_dir)?, base: base_dir.map(read).transpose()?, diff: a.diff };
    let body = serde_json::to_vec(&request).context("cannot encode the plan request")?;
    let token = api.token.as_ref().map(|t| t.expose());
    // The daemon runs one plan at a time (429 while another runs): wait for a turn, bounded.
    let mut turns = 0;
    let (code, answer) = loop {
        match client::post_json(&api.url, "/api/v1/plan", body.clone(), token, DAEMON_TIMEOUT) {
            Ok((429, _)) if turns < BUSY_RETRIES => {
                turns += 1;
                std::thread::sleep(BUSY_PAUSE);
            }
            Ok(answer) => break answer,
            Err(e @ client::ClientError::Io { .. }) => {
                return Ok(Asked::Unavailable(format!("cannot reach the daemon: {e}")));
            }
            Err(e) => return Err(anyhow::Error::new(e).context("cannot ask the fedsched daemon").into()),
        }
    };
    let doc: serde_json::Value = serde_json::from_str(&answer)
        .with_context(|| format!("{}/api/v1/plan: the answer is not JSON (HTTP {code})", api.url))?;
    match code {
        200 => Ok(Asked::Planned(doc)),
        503 | 429 => Ok(Asked::Unavailable(format!(
            "the daemon at {}: {}",
            api.url,
            doc["error"].as_str().unwrap_or("unavailable")
        ))),
        422 => {
            for e in doc["errors"].as_array().into_iter().flatten() {
                crate::errln!("{}", e.as_str().unwrap_or_default());
            }
            let message = doc["error"].as_str().unwrap_or("invalid policy repository");
            Err(invalid(anyhow::anyhow!("{message}; nothing was changed")))
        }
        _ => {
            Err(anyhow::anyhow!("{}/api/v1/plan: HTTP {code}: {}", api.url, doc["error"].as_str().unwrap_or("failed"))
                .into())
        }
    }
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
