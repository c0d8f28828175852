//! `fedsched fuzz`: structure-aware fuzzing of what fedsched reads from outside — the policy
//! repository ([`repo`]), kubeconfigs ([`kubeconfig`]) and Lua customizations ([`lua`]) —
//! through the real entry points, deterministic by seed.
//!
//! Case `i` of seed `s` is generated from its own generator (`s` and `i` mixed), so any case
//! can be run alone: a failure prints the one line that reproduces it
//! (`fedsched fuzz --target T --seed S --case I`, `--show` prints its input). Cases run on
//! `jobs` threads, each under [`Options::bound`]: a panic (caught, with its message) or a case
//! still running after the bound is a failure, as is a property a target checks (a credential
//! in an error message). The seed inputs are mutated as documents — fields removed, misspelt,
//! retyped, set at limits, subtrees of other documents spliced in, lists made long and
//! nestings deep — and as bytes (`mutate`), not only random bytes.

pub mod kubeconfig;
pub mod lua;
pub mod mutate;
pub mod repo;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mutate::Rng;

/// What a case feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Repo,
    Kubeconfig,
    Lua,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Repo, Target::Kubeconfig, Target::Lua];

    pub fn name(self) -> &'static str {
        match self {
            Target::Repo => "repo",
            Target::Kubeconfig => "kubeconfig",
            Target::Lua => "lua",
        }
    }

    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// A run of cases.
#[derive(Debug, Clone)]
pub struct Options {
    /// The targets, taken in turn (case `i` feeds `targets[i % len]`).
    pub targets: Vec<Target>,
    pub seed: u64,
    /// Cases `first..first + cases`.
    pub first: u64,
    pub cases: u64,
    /// A case still running after this is a hang.
    pub bound: Duration,
    pub jobs: usize,
    /// Where the cases write their files (a directory per thread below it).
    pub work: PathBuf,
    /// Extra seed files (`--corpus`): (name, text).
    pub corpus: Vec<(String, String)>,
}

/// One failed case.
#[derive(Debug, Clone)]
pub struct Failure {
    pub target: Target,
    pub case: u64,
    pub what: String,
    /// The command that runs this case alone.
    pub repro: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fuzz {} case {}: {}; repro: {}", self.target.name(), self.case, self.what, self.repro)
    }
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Report {
    /// Cases that ended (passed or failed).
    pub ran: u64,
    pub failures: Vec<Failure>,
    /// A case that did not end within the bound (the run stops at the first).
    pub hung: Option<Failure>,
    pub elapsed: Duration,
}

/// The generator of case `case` of `seed`.
fn case_rng(seed: u64, case: u64) -> Rng {
    let mut r = Rng(seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    r.next();
    r
}

/// A generated case.
#[derive(Debug)]
pub enum Case {
    Repo(repo::RepoCase),
    Kubeconfig(kubeconfig::KubeconfigCase),
    Lua(lua::LuaCase),
}

/// The case `case` of `seed` for `target` (the same on every run of the same binary and corpus).
pub fn generate(target: Target, seed: u64, case: u64, corpus: &repo::Corpus) -> Case {
    let mut rng = case_rng(seed, case);
    match target {
        Target::Repo => Case::Repo(repo::generate(&mut rng, corpus)),
        Target::Kubeconfig => Case::Kubeconfig(kubeconfig::generate(&mut rng)),
        Target::Lua => Case::Lua(lua::generate(&mut rng, corpus.docs())),
    }
}

/// The case as text (`--show`).
pub fn show(case: &Case) -> String {
    match case {
        Case::Repo(c) => repo::show(c),
        Case::Kubeconfig(c) => kubeconfig::show(c),
        Case::Lua(c) => lua::show(c),
    }
}

/// Runs one generated case in `work`. `Err`: a property the target checks does not hold.
pub fn run_case(case: &Case, work: &Path, runtime: &tokio::runtime::Runtime) -> Result<(), String> {
    match case {
        Case::Repo(c) => repo::run(c, work),
        Case::Kubeconfig(c) => kubeconfig::run(c, work, runtime),
        Case::Lua(c) => lua::run(c),
    }
}

fn repro(o: &Options, target: Target, case: u64) -> String {
    let corpus = if o.corpus.is_empty() { "" } else { " --corpus …(as given)" };
    format!("fedsched fuzz --target {} --seed {} --case {case}{corpus}", target.name(), o.seed)
}

/// A thread's case under way: (case, target, when it started).
type Current = Mutex<Option<(u64, Target, Instant)>>;

/// Runs the cases of `o` on `o.jobs` threads. `progress` is called about every second with the
/// cases done. Returns at the end, or at the first hang (whose thread is left running: the
/// caller exits, as `fedsched fuzz` does).
pub fn run(o: &Options, progress: &(dyn Fn(u64, Duration) + Sync)) -> Report {
    let corpus = Arc::new(repo::Corpus::new(&o.corpus));
    let seed = o.seed;
    run_with(o, progress, move |target, case, work, runtime| {
        let generated = generate(target, seed, case, &corpus);
        run_case(&generated, work, runtime)
    })
}

/// What a thread does with one case.
type CaseFn = dyn Fn(Target, u64, &Path, &tokio::runtime::Runtime) -> Result<(), String> + Send + Sync;

/// [`run`] with `each` for running a case (the harness is tested with cases that panic and hang).
fn run_with(
    o: &Options,
    progress: &(dyn Fn(u64, Duration) + Sync),
    each: impl Fn(Target, u64, &Path, &tokio::runtime::Runtime) -> Result<(), String> + Send + Sync + 'static,
) -> Report {
    let started = Instant::now();
    let each: Arc<CaseFn> = Arc::new(each);
    let next = Arc::new(AtomicU64::new(o.first));
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let failures: Arc<Mutex<Vec<Failure>>> = Arc::default();
    let end = o.first.saturating_add(o.cases);
    let jobs = o.jobs.max(1);
    let currents: Vec<Arc<Current>> = (0..jobs).map(|_| Arc::default()).collect();
    let mut handles = Vec::new();
    for (j, current) in currents.iter().enumerate() {
        let (o2, each, next, done, stop, fails, current) =
            (o.clone(), each.clone(), next.clone(), done.clone(), stop.clone(), failures.clone(), current.clone());
        let work = o.work.join(format!("w{j}"));
        let spawned = std::thread::Builder::new().name(format!("fuzz-{j}")).stack_size(8 << 20).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    let f = Failure {
                        target: Target::Kubeconfig,
                        case: 0,
                        what: format!("no runtime: {e}"),
                        repro: String::new(),
                    };
                    fails.lock().unwrap_or_else(|p| p.into_inner()).push(f);
                    return;
                }
            };
            while !stop.load(Ordering::Relaxed) {
                let case = next.fetch_add(1, Ordering::Relaxed);
                if case >= end {
                    break;
                }
                let target = o2.targets[(case % o2.targets.len() as u64) as usize];
                *current.lock().unwrap_or_else(|p| p.into_inner()) = Some((case, target, Instant::now()));
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| each(target, case, &work, &runtime)));
                *current.lock().unwrap_or_else(|p| p.into_inner()) = None;
                let what = match outcome {
                    Ok(Ok(())) => None,
                    Ok(Err(property)) => Some(property),
                    Err(panic) => Some(format!("panic: {}", panic_message(&panic))),
                };
                if let Some(what) = what {
                    let f = Failure { target, case, what, repro: repro(&o2, target, case) };
                    fails.lock().unwrap_or_else(|p| p.into_inner()).push(f);
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
        });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                let f = Failure {
                    target: o.targets[0],
                    case: 0,
                    what: format!("cannot start a thread: {e}"),
                    repro: String::new(),
                };
                failures.lock().unwrap_or_else(|p| p.into_inner()).push(f);
            }
        }
    }
    let mut hung = None;
    let mut last = Instant::now();
    while handles.iter().any(|h| !h.is_finished()) {
        std::thread::sleep(Duration::from_millis(20));
        for c in &currents {
            if let Some((case, target, since)) = *c.lock().unwrap_or_else(|p| p.into_inner())
                && since.elapsed() > o.bound
            {
                let what = format!("hang: still running after {} s", o.bound.as_secs_f64());
                hung = Some(Failure { target, case, what, repro: repro(o, target, case) });
            }
        }
        if hung.is_some() {
            stop.store(true, Ordering::Relaxed);
            break;
        }
        if last.elapsed() >= Duration::from_secs(1) {
            progress(done.load(Ordering::Relaxed), started.elapsed());
            last = Instant::now();
        }
    }
    if hung.is_none() {
        for h in handles {
            let _ = h.join();
        }
    }
    let failures = std::mem::take(&mut *failures.lock().unwrap_or_else(|p| p.into_inner()));
    Report { ran: done.load(Ordering::Relaxed), failures, hung, elapsed: started.elapsed() }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    let text = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(not a string)".into());
    text.chars().take(500).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(cases: u64, bound: Duration) -> Options {
        Options {
            targets: Target::ALL.to_vec(),
            seed: 5,
            first: 0,
            cases,
            bound,
            jobs: 2,
            work: std::env::temp_dir().join(format!("fedsched-fuzz-harness-{}", std::process::id())),
            corpus: Vec::new(),
        }
    }

    #[test]
    fn a_panic_and_a_broken_property_are_failures_with_their_repro_and_the_run_goes_on() {
        let o = options(20, Duration::from_secs(60));
        let report = run_with(&o, &|_, _| {}, |_, case, _, _| match case {
            3 => panic!("boom at three"),
            11 => Err("a property".into()),
            _ => Ok(()),
        });
        assert_eq!(report.ran, 20);
        assert!(report.hung.is_none());
        let mut failed: Vec<String> = report.failures.iter().map(ToString::to_string).collect();
        failed.sort();
        assert_eq!(failed.len(), 2, "{failed:?}");
        assert!(
            failed
                .iter()
                .any(|f| f.contains("case 11: a property; repro: fedsched fuzz --target lua --seed 5 --case 11"))
        );
        assert!(
            failed
                .iter()
                .any(|f| f
                    .contains("case 3: panic: boom at three; repro: fedsched fuzz --target repo --seed 5 --case 3"))
        );
    }

    #[test]
    fn a_case_past_the_bound_is_a_hang_and_ends_the_run() {
        let o = options(1_000, Duration::from_millis(300));
        let report = run_with(&o, &|_, _| {}, |_, case, _, _| {
            if case == 4 {
                std::thread::sleep(Duration::from_secs(3));
            }
            Ok(())
        });
        let hung = report.hung.expect("a hang");
        assert_eq!(hung.case, 4);
        assert!(hung.to_string().contains("hang") && hung.repro.ends_with("--case 4"), "{hung}");
        assert!(report.ran < 1_000);
    }
}
