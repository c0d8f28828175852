//! `fedsched dst`: runs seeds of the deterministic simulation (`testbed::dst`) — one seed
//! (optionally only some of its faults, `--keep`, as a shrunk failure prints it), or a range
//! of seeds on several threads (the soak). Exit 0 when no invariant was violated, 2 when one
//! was (each failure printed with its one-line reproduction and, with `--shrink`, its
//! shrunk fault schedule).

use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use clap::Args;

use super::Failure;
use crate::testbed::dst::{self, Options, Outcome, Size};

/// `fedsched dst`.
#[derive(Debug, Args)]
pub struct DstArgs {
    /// Run this seed.
    #[arg(long, conflicts_with = "seeds")]
    pub seed: Option<u64>,
    /// Run the seeds FROM..TO (TO excluded).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_range)]
    pub seeds: Option<(u64, u64)>,
    /// Only these faults of the seed's schedule (indexes, comma-separated; `none`: no fault).
    #[arg(long, value_name = "I,J,…", requires = "seed")]
    pub keep: Option<String>,
    /// Shrink each failure to the fewest faults that still fail.
    #[arg(long)]
    pub shrink: bool,
    /// Print the trace of the run (with --seed).
    #[arg(long, requires = "seed")]
    pub trace: bool,
    /// Another world size than the seed's (tiny, small, medium, large).
    #[arg(long, value_parser = parse_size)]
    pub size: Option<Size>,
    /// Threads running seeds at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Check "warm equals cold" after every N-th pass (default: by world size).
    #[arg(long, value_name = "N")]
    pub warm_cold_every: Option<u64>,
}

fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or("expected FROM..TO")?;
    let (a, b) = (a.parse::<u64>().map_err(|e| e.to_string())?, b.parse::<u64>().map_err(|e| e.to_string())?);
    if b <= a {
        return Err("TO must be above FROM".into());
    }
    Ok((a, b))
}

fn parse_keep(s: &str) -> Result<Vec<usize>, String> {
    if s == "none" {
        return Ok(Vec::new());
    }
    s.split(',').map(|i| i.trim().parse::<usize>().map_err(|e| format!("{i:?}: {e}"))).collect()
}

fn parse_size(s: &str) -> Result<Size, String> {
    match s {
        "tiny" => Ok(Size::Tiny),
        "small" => Ok(Size::Small),
        "medium" => Ok(Size::Medium),
        "large" => Ok(Size::Large),
        _ => Err("one of tiny, small, medium, large".into()),
    }
}

/// Runs `fedsched dst`.
pub(super) fn dst(a: &DstArgs) -> Result<ExitCode, Failure> {
    let keep = a.keep.as_deref().map(parse_keep).transpose().map_err(|e| anyhow::anyhow!("--keep: {e}"))?;
    let opts = Options { keep, trace: a.trace, size: a.size, warm_cold_every: a.warm_cold_every };
    let (from, to) = match (a.seed, a.seeds) {
        (Some(s), _) => (s, s + 1),
        (None, Some(r)) => r,
        (None, None) => return Err(anyhow::anyhow!("give --seed N or --seeds FROM..TO").into()),
    };
    let started = Instant::now();
    let next = AtomicU64::new(from);
    let (done, passes) = (AtomicUsize::new(0), AtomicU64::new(0));
    let failures: Mutex<Vec<Outcome>> = Mutex::new(Vec::new());
    let total = (to - from) as usize;
    let every = (total / 100).max(1);
    std::thread::scope(|scope| {
        for _ in 0..a.jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, Ordering::SeqCst);
                    if seed >= to {
                        return;
                    }
                    let o = dst::run(seed, &opts);
                    passes.fetch_add(o.passes, Ordering::SeqCst);
                    if let Some(t) = &o.trace {
                        crate::outln!("{}", t.join("\n"));
                    }
                    if o.violation.is_some() {
                        let shown = if a.shrink { dst::shrink(&o, &opts) } else { o };
                        crate::out!("{}", dst::report(&shown));
                        failures.lock().unwrap_or_else(|p| p.into_inner()).push(shown);
                    } else if total == 1 {
                        crate::out!("{}", dst::report(&o));
                        crate::outln!("  trace digest {:016x}", o.digest);
                    }
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    if total > 1 && n.is_multiple_of(every) {
                        let f = failures.lock().map(|f| f.len()).unwrap_or(0);
                        crate::errln!("{n}/{total} seeds, {f} failing, {:.0}s", started.elapsed().as_secs_f64());
                    }
                }
            });
        }
    });
    let failed = failures.into_inner().unwrap_or_default();
    let secs = started.elapsed().as_secs_f64();
    crate::outln!(
        "{total} seed(s) ({from}..{to}), {} with a violation, {} passes, {secs:.1} s ({:.1} ms per seed, {} thread(s))",
        failed.len(),
        passes.load(Ordering::SeqCst),
        secs * 1000.0 / total as f64,
        a.jobs.max(1)
    );
    Ok(ExitCode::from(if failed.is_empty() { 0 } else { 2 }))
}
