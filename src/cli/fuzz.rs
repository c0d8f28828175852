//! `fedsched fuzz`: runs cases of the fuzzer (`testbed::fuzz`) — a fixed number in `cargo test`,
//! as many as asked here (the soak). Exit 0 when no case panicked, hung or broke a property;
//! 2 otherwise, each failure printed with the one line that reproduces it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::Failure;
use crate::testbed::fuzz::{self, Options, Target};

/// `fedsched fuzz`.
#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Cases to run (from --first).
    #[arg(long, default_value_t = 1_000)]
    pub cases: u64,
    /// The seed every case derives from.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// What to fuzz: repo, kubeconfig or lua (default: all three in turn).
    #[arg(long, value_parser = parse_target)]
    pub target: Option<Target>,
    /// Run this case alone (what a failure's repro line gives).
    #[arg(long, conflicts_with_all = ["cases", "first"])]
    pub case: Option<u64>,
    /// The first case.
    #[arg(long, default_value_t = 0)]
    pub first: u64,
    /// Print the case's input instead of running it (with --case).
    #[arg(long, requires = "case")]
    pub show: bool,
    /// A case still running after this many seconds is a hang.
    #[arg(long, default_value_t = 30)]
    pub bound: u64,
    /// Threads running cases at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Directory for the cases' files (default: a fresh one under the system's temporary
    /// directory, removed at the end).
    #[arg(long)]
    pub work: Option<PathBuf>,
    /// More seed files: every *.yaml / *.yml below these directories (e.g. Karmada's
    /// resourcecustomizations) joins the repository seeds and, for its customizations, the Lua ones.
    #[arg(long)]
    pub corpus: Vec<PathBuf>,
}

fn parse_target(s: &str) -> Result<Target, String> {
    Target::parse(s).ok_or_else(|| "one of repo, kubeconfig, lua".into())
}

fn corpus_files(dirs: &[PathBuf]) -> Result<Vec<(String, String)>, Failure> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = dirs.to_vec();
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| anyhow::anyhow!("--corpus {}: {e}", d.display()))?;
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml")
                && let Ok(text) = std::fs::read_to_string(&p)
            {
                out.push((format!("corpus/{}", out.len()), text));
            }
        }
    }
    Ok(out)
}

/// Runs `fedsched fuzz`.
pub(super) fn fuzz(a: &FuzzArgs) -> Result<ExitCode, Failure> {
    let corpus = corpus_files(&a.corpus)?;
    let targets = match a.target {
        Some(t) => vec![t],
        None => Target::ALL.to_vec(),
    };
    let (first, cases) = match a.case {
        Some(c) => (c, 1),
        None => (a.first, a.cases),
    };
    if a.show {
        let target = targets[(first % targets.len() as u64) as usize];
        let case = fuzz::generate(target, a.seed, first, &fuzz::repo::Corpus::new(&corpus));
        crate::out!("{}", fuzz::show(&case));
        return Ok(ExitCode::SUCCESS);
    }
    let temp = match &a.work {
        Some(_) => None,
        None => Some(tempfile::Builder::new().prefix("fedsched-fuzz-").tempdir().map_err(anyhow::Error::from)?),
    };
    let work = a.work.clone().or_else(|| temp.as_ref().map(|t| t.path().to_path_buf())).unwrap_or_default();
    let o = Options {
        targets,
        seed: a.seed,
        first,
        cases,
        bound: Duration::from_secs(a.bound.max(1)),
        jobs: a.jobs,
        work,
        corpus,
    };
    let report = fuzz::run(&o, &|done, elapsed| {
        if cases > 1 {
            let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
            crate::errln!("{done}/{cases} cases, {:.0} s, {rate:.0} cases/s", elapsed.as_secs_f64());
        }
    });
    for f in report.failures.iter().chain(&report.hung) {
        crate::outln!("{f}");
    }
    let secs = report.elapsed.as_secs_f64();
    crate::outln!(
        "{} case(s) of seed {} ({}..{}), {} panic(s) or broken propert(ies), {} hang(s), {secs:.1} s ({:.0} cases/s, {} thread(s))",
        report.ran,
        a.seed,
        first,
        first.saturating_add(cases),
        report.failures.len(),
        usize::from(report.hung.is_some()),
        report.ran as f64 / secs.max(1e-9),
        a.jobs.max(1)
    );
    if report.hung.is_some() {
        // The hung case's thread cannot be stopped: end the process (stdout is flushed), the
        // work directory removed first (`exit` runs no destructor).
        drop(temp);
        std::process::exit(2);
    }
    Ok(ExitCode::from(if report.failures.is_empty() { 0 } else { 2 }))
}
