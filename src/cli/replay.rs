//! `fedsched replay KIND/NS/NAME[@SEQ]` and `fedsched replay --all [--since T]`: recorded
//! decisions made again by this fedsched on their stored inputs ([`crate::views::replay`]),
//! from a private copy of the store (so it works while the daemon runs). Exit 0 identical,
//! 2 different, 1 invalid input, a decision that cannot be replayed, or any failure.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::{DirArgs, Failure, OutputFormat, exit, invalid, state_dir};
use crate::config::Config;
use crate::reconcile::Settings;
use crate::store::Store;
use crate::views::explain::WorkloadRef;
use crate::views::{replay, report};

/// `fedsched replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The state directory (`--state`).
    #[command(flatten)]
    pub dirs: DirArgs,
    /// KIND/NAMESPACE/NAME, optionally @SEQ (a history sequence number; default: its last).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub workload: Option<String>,
    /// Replay every stored decision.
    #[arg(long)]
    pub all: bool,
    /// With --all: only decisions of the last DURATION (`7d`) or since a time (RFC 3339).
    #[arg(long, value_name = "T", requires = "all")]
    pub since: Option<String>,
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: OutputFormat,
}

/// Runs `fedsched replay`; every failure exits 1 (2 means "different").
pub(super) fn replay(cfg: &Config, a: &ReplayArgs) -> Result<ExitCode, Failure> {
    run(cfg, a).map_err(|f| Failure { code: exit::INVALID, error: f.error })
}

fn run(cfg: &Config, a: &ReplayArgs) -> Result<ExitCode, Failure> {
    Settings::from_config(cfg, false).map_err(|e| invalid(e.into()))?;
    let settings = || Settings::from_config(cfg, false).unwrap_or_default();
    let state = state_dir(cfg, &a.dirs)?;
    let store =
        Store::open_read_only(&state).with_context(|| format!("cannot read the store of {}", state.display()))?;
    let records = match &a.workload {
        Some(w) => {
            let (name, seq) = match w.rsplit_once('@') {
                Some((n, s)) => (n, Some(s.parse::<u64>().map_err(|_| invalid(anyhow::anyhow!("bad @SEQ in {w}")))?)),
                None => (w.as_str(), None),
            };
            let r: WorkloadRef = name.parse().map_err(|e: String| invalid(anyhow::anyhow!(e)))?;
            let history = report::history_for(&store, &r)?;
            let found = match seq {
                Some(s) => history.into_iter().find(|h| h.seq == s),
                None => history.into_iter().last(),
            };
            let record = found.ok_or_else(|| invalid(anyhow::anyhow!("no recorded decision {w}")))?;
            vec![record]
        }
        None => {
            let since = since_ms(a.since.as_deref())?;
            let mut all = Vec::new();
            for key in store.workloads_with_history()? {
                all.extend(store.history(&key)?.into_iter().filter(|h| h.at_ms >= since));
            }
            all.sort_by_key(|h| h.seq);
            all
        }
    };
    let doc = replay::document(&store, &records, &settings)?;
    super::print_doc(a.output, &doc, replay::to_text);
    if doc["different"].as_u64().unwrap_or(0) > 0 {
        return Ok(ExitCode::from(2));
    }
    if a.workload.is_some() && doc["notReplayable"].as_u64().unwrap_or(0) > 0 {
        return Err(invalid(anyhow::anyhow!("the decision cannot be replayed")));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--since`: a duration back from now (`7d`, `36h`) or a time (RFC 3339); none: everything.
fn since_ms(since: Option<&str>) -> Result<u64, Failure> {
    let Some(s) = since else { return Ok(0) };
    if let Ok(d) = humantime::parse_duration(s) {
        return Ok(crate::util::clock::now_ms().saturating_sub(d.as_millis() as u64));
    }
    let t = humantime::parse_rfc3339_weak(s)
        .map_err(|_| invalid(anyhow::anyhow!("--since {s:?}: neither a duration (7d) nor a time (RFC 3339)")))?;
    Ok(t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64))
}
