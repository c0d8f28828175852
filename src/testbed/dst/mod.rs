//! Deterministic simulation of the whole daemon (issue 46): `fedsched dst`, and the seeds
//! `cargo test` runs (`tests/it/dst.rs`). Not part of the product.
//!
//! A seed gives one world ([`spec`]: members with nodes, a policy repository, the daemon's
//! settings) and one fault schedule ([`faults`]); [`World::run`](world::World::run) drives
//! the real pipeline — the policy watch's reading, the load, the poll's seam
//! (`LiveStatus::observe` of what each simulated member answers, through the poller's own
//! decoding), stability, schedule, decide, render, publish with its journal and its
//! mass-deletion guard, record — on a real store and a real output directory, with a clock
//! only the world moves: no sleep, no socket, no thread whose timing matters. Simulated
//! members ([`member`]) run pods that start and turn Ready after delays, stay Unschedulable
//! when nothing fits, crash; each member's GitOps agent applies its output directory after a
//! lag, with the HTTP simulator's own agent ([`crate::testbed::simulate::apply`]). The
//! daemon ([`daemon`]) restarts, is killed at any step of a publish (its kill switch) and
//! recovers, and under `[ha]` hands over to a standby.
//!
//! The invariants ([`check`]) are checked after every pass and at every instant; a run stops
//! at its first violation. One seed is one exact run: the trace's digest is the same on every
//! run of the seed. A failing seed is shrunk ([`shrink`]: delta debugging over the schedule's
//! faults) to the faults it needs, and printed with the command that runs exactly that.

pub mod check;
pub mod corpus;
pub mod daemon;
pub mod faults;
pub mod member;
pub mod spec;
pub mod world;

pub use check::Violation;
pub use faults::Scheduled;
pub use spec::{Size, WorldSpec};

/// How to run a seed.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The faults of the schedule to keep, by index (None: all).
    pub keep: Option<Vec<usize>>,
    /// Keep the trace's lines (else only their digest).
    pub trace: bool,
    /// Another size than the seed's.
    pub size: Option<Size>,
    /// Check warm = cold after every n-th pass (None: by size — every pass of a tiny or
    /// small world, every 4th of a medium one, every 16th of a large one).
    pub warm_cold_every: Option<u64>,
}

/// What a run of one seed gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub seed: u64,
    pub size: Size,
    pub members: usize,
    pub workloads: usize,
    pub ha: bool,
    /// The whole schedule of the seed.
    pub schedule: Vec<Scheduled>,
    /// The faults this run kept (indexes into `schedule`).
    pub kept: Vec<usize>,
    pub violation: Option<Violation>,
    /// Digest of the whole trace.
    pub digest: u64,
    pub passes: u64,
    pub trace: Option<Vec<String>>,
    /// Simulated time run.
    pub simulated_ms: u64,
}

/// Runs one seed, every step of its passes on this thread ([`crate::util::threads::on_this_thread`]):
/// seeds run in parallel, one per thread, and a world's pass is too short to share.
pub fn run(seed: u64, opts: &Options) -> Outcome {
    crate::util::threads::on_this_thread(|| run_here(seed, opts))
}

fn run_here(seed: u64, opts: &Options) -> Outcome {
    let spec = WorldSpec::generate(seed, opts.size);
    let schedule = faults::schedule(&spec);
    let kept: Vec<usize> = match &opts.keep {
        Some(k) => k.iter().copied().filter(|i| *i < schedule.len()).collect(),
        None => (0..schedule.len()).collect(),
    };
    let faults: Vec<Scheduled> = kept.iter().map(|i| schedule[*i].clone()).collect();
    let every = opts.warm_cold_every.unwrap_or(match spec.size {
        Size::Tiny | Size::Small => 1,
        Size::Medium => 4,
        Size::Large => 16,
    });
    let (size, members, workloads, ha, simulated_ms) =
        (spec.size, spec.members.len(), spec.workloads.len(), spec.settings.ha, spec.duration_ms);
    let ran = match world::World::new(spec, &faults, opts.trace, every) {
        Ok(w) => w.run(),
        Err(v) => world::Ran { violation: Some(v), digest: 0, passes: 0, trace: None },
    };
    Outcome {
        seed,
        size,
        members,
        workloads,
        ha,
        schedule,
        kept,
        violation: ran.violation,
        digest: ran.digest,
        passes: ran.passes,
        trace: ran.trace,
        simulated_ms,
    }
}

/// The command that runs exactly `outcome` again.
pub fn command(outcome: &Outcome) -> String {
    let mut c = format!("fedsched dst --seed {}", outcome.seed);
    if outcome.kept.len() != outcome.schedule.len() {
        let k: Vec<String> = outcome.kept.iter().map(ToString::to_string).collect();
        c.push_str(&format!(" --keep {}", if k.is_empty() { "none".to_string() } else { k.join(",") }));
    }
    c
}

/// Shrinks a failing run to the fewest faults that still violate the same invariant (delta
/// debugging, ddmin, over the kept faults). Returns the smallest failing run found.
pub fn shrink(failing: &Outcome, opts: &Options) -> Outcome {
    let Some(v) = &failing.violation else { return failing.clone() };
    let invariant = v.invariant;
    let fails = |keep: &[usize]| -> Option<Outcome> {
        let o = run(failing.seed, &Options { keep: Some(keep.to_vec()), trace: false, ..opts.clone() });
        o.violation.as_ref().is_some_and(|v| v.invariant == invariant).then_some(o)
    };
    let mut best = failing.clone();
    let mut current = failing.kept.clone();
    let mut n = 2usize;
    while current.len() >= 2 {
        let chunk = current.len().div_ceil(n);
        let parts: Vec<Vec<usize>> = current.chunks(chunk).map(<[usize]>::to_vec).collect();
        let mut reduced = false;
        for (k, part) in parts.iter().enumerate() {
            if let Some(o) = fails(part) {
                (current, best, n, reduced) = (part.clone(), o, 2, true);
                break;
            }
            let complement: Vec<usize> =
                parts.iter().enumerate().filter(|(j, _)| *j != k).flat_map(|(_, p)| p.iter().copied()).collect();
            if parts.len() > 2
                && let Some(o) = fails(&complement)
            {
                (current, best, n, reduced) = (complement, o, (n - 1).max(2), true);
                break;
            }
        }
        if !reduced {
            if n >= current.len() {
                break;
            }
            n = (n * 2).min(current.len());
        }
    }
    if current.len() == 1
        && let Some(o) = fails(&[])
    {
        best = o;
    }
    best
}

/// A report of a failing run: the violation, the command, the faults it needed.
pub fn report(o: &Outcome) -> String {
    let mut s = String::new();
    let what = format!(
        "seed {} ({:?}: {} members, {} workloads{}, {} passes)",
        o.seed,
        o.size,
        o.members,
        o.workloads,
        if o.ha { ", [ha]" } else { "" },
        o.passes
    );
    match &o.violation {
        Some(v) => s.push_str(&format!("{what}: {v}\n")),
        None => s.push_str(&format!("{what}: no violation\n")),
    }
    s.push_str(&format!("  reproduce: {}\n", command(o)));
    s.push_str(&format!("  faults ({} of {}):\n", o.kept.len(), o.schedule.len()));
    for i in &o.kept {
        s.push_str(&format!("    [{i}] {}\n", o.schedule[*i]));
    }
    s
}
