//! The deterministic simulation of the whole daemon (issue 46, `fedsched dst`): a fixed set of
//! seeds of mixed sizes, the regression corpus (every bug the simulation found keeps its seed
//! and the faults it needs), and one seed run twice giving the same trace.
//!
//! Environment (read by `the_seeds_the_environment_names_hold_every_invariant`, which runs
//! only when one is set — the fixed seeds' test may be `#[ignore]`d):
//! `FEDSCHED_DST_SEED=S` runs seed S (`FEDSCHED_DST_SEED=5 cargo test --test it the_seeds`);
//! `FEDSCHED_DST_SEEDS=N` runs N seeds from `FEDSCHED_DST_FROM` (default: a start taken from the
//! clock after the fixed ones, printed); `FEDSCHED_DST_JOBS` threads (default 2). A failing seed
//! is printed at once with the one-line command that reproduces it, then shrunk to the fewest
//! faults that still fail and printed again (`FEDSCHED_DST_SHRINK=0`: not shrunk).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use fedsched::testbed::dst::{self, Options, Outcome, corpus};

/// The seeds every `cargo test` runs: 0..FIXED.
const FIXED: u64 = 200;

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Runs `seeds` on `FEDSCHED_DST_JOBS` threads; returns the failures, the first one shrunk
/// (unless `FEDSCHED_DST_SHRINK=0`). Each failure is printed as soon as it is found.
fn run_seeds(seeds: Vec<u64>) -> Vec<Outcome> {
    let jobs = env("FEDSCHED_DST_JOBS").unwrap_or(2).max(1) as usize;
    let next = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                    let Some(seed) = seeds.get(i) else { return };
                    let o = dst::run(*seed, &Options::default());
                    if o.violation.is_some() {
                        eprintln!("{}", dst::report(&o));
                        failures.lock().unwrap_or_else(|p| p.into_inner()).push(o);
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_default();
    failures.sort_by_key(|o| o.seed);
    if let Some(first) = failures.first_mut()
        && env("FEDSCHED_DST_SHRINK") != Some(0)
    {
        eprintln!("shrinking seed {} (FEDSCHED_DST_SHRINK=0 skips this)", first.seed);
        *first = dst::shrink(first, &Options::default());
    }
    failures
}

fn explain(failures: &[Outcome]) -> String {
    let mut s = format!("{} seed(s) violate an invariant; the first one shrunk:\n", failures.len());
    for f in failures {
        s.push_str(&dst::report(f));
    }
    s
}

/// At least 200 seeds, mixed sizes (tiny to large), hold every invariant.
#[test]
#[ignore = "open (issue 46): surveyed 0..158 (lead, release, SURVEY-46.md); fixed since and held whole: 5 (b0e5d29/896a14f), 49 (32ef560), 66, 76 (a failover's decision hands over from the healthy members it leaves: HandOver::Failover), 81, 88, 112 (a plain decision keeps the availability floor: HandOver::Moved, dst9), 138, 155 (inv 3 in the survey; hold whole on 3fb97c3 and after), 153 (c7aa089), the inv-6 list of bb8adf2; the inv 6 [ha] of 74, 98, 114, 127, 144, 147 and rollout seeds 1000005, 1000016 (a takeover's adopted placements were in no history record, so the replay rebuilt none; each failed on 54734b9 release and holds with dst74's adoption records; corpus entries 74 [13] and 127 [18, 20]); the [ha] 196 at t=653 (the summary listed a held move's unpublished placement) is fixed (corpus entry 196 [3, 6, 8]) but the whole seed then fails on w006, as 181 (inv 1 [ha] at t=395) does: a takeover does not adopt the old leader's graceful eviction tasks, so its first pass removes their kept copies (dst10b's fix, the tasks in the summary, was reverted: reconcile::crash_tests::a_kill_at_any_step_of_a_publish failed with it); fixed by dst10a (non-[ha] failures of the lead's run of 1422b82, logs/seeds10.log): 106 at t=1230 (inv 1, a race of observation: judged by what the pass observed since check::Break, corpus 106 [18, 19]), 170 (inv 1 at t=352: the checker read the live view, not the store snapshot the restarted pass decided on; holds whole), 165 and 1000020 [7, 30] (inv 2: a scale-down the guard holds whole, not a double run; 165 holds whole), 199 (inv 2: a graceful eviction of a workload that never left kept its member out of its decisions; holds whole); still failing on main: 106 whole (inv 4 at t=1260: a hand-over task on member-005 kept its 1-replica file under a placement of 2, released after member-005 became unreachable), 171 (inv 2 at t=580: not [ha], it shrinks to --keep 0,8,14,18 without a leader change: w005's policy Duplicated([0, 2]) then divided affinities at 577 s, 10 + 10 replicas kept for 10 after the kill's restart), 1000045 (inv 8 at t=1248), 1000046 (inv 8 at t=300); the 200 seeds are 79 tiny, 80 small, 30 medium, 11 large; since 3e74e9d a seed costs 1.0-1.2 CPU-s tiny/small, 1.9 medium, 18 large in release and about 6.5x that in debug (seeds 0-4: 1.6-19 CPU-s each), so the 200 take about 61 CPU-min, 30 min on 2 idle cores, in debug (release: 562 CPU-s, 18 min wall at load 10-20): not a CI debug run yet; run with --ignored, or in release"]
fn every_invariant_holds_on_the_fixed_seeds() {
    let seeds: Vec<u64> = (0..FIXED).collect();
    let sizes: std::collections::BTreeSet<String> = seeds.iter().map(|s| format!("{:?}", dst::Size::of(*s))).collect();
    assert_eq!(sizes.len(), 4, "the fixed seeds cover every size: {sizes:?}");
    let failures = run_seeds(seeds);
    assert!(failures.is_empty(), "{}", explain(&failures));
}

/// The seeds the environment names hold every invariant: `FEDSCHED_DST_SEED=S` that seed,
/// `FEDSCHED_DST_SEEDS=N` that many from `FEDSCHED_DST_FROM`. Without either it runs nothing
/// (and says so).
#[test]
fn the_seeds_the_environment_names_hold_every_invariant() {
    let seeds: Vec<u64> = match (env("FEDSCHED_DST_SEED"), env("FEDSCHED_DST_SEEDS")) {
        (Some(s), _) => vec![s],
        (None, Some(n)) => {
            let from = env("FEDSCHED_DST_FROM").unwrap_or_else(|| {
                let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                FIXED + t % 1_000_000_000
            });
            eprintln!("FEDSCHED_DST_SEEDS={n}: seeds {from}..{} (FEDSCHED_DST_FROM={from} runs them again)", from + n);
            (from..from + n).collect()
        }
        (None, None) => {
            eprintln!("no FEDSCHED_DST_SEED or FEDSCHED_DST_SEEDS: no seed to run");
            return;
        }
    };
    let failures = run_seeds(seeds);
    assert!(failures.is_empty(), "{}", explain(&failures));
}

/// Every seed of the regression corpus runs as the corpus says: a fixed bug's seed holds every
/// invariant, an open bug's seed still violates its invariant (its fix must mark it fixed);
/// and its world and schedule are still the ones it was found with (a change of the generator
/// shows here, not as a corpus that silently tests something else).
#[test]
fn the_regression_corpus_holds() {
    let mut bad = Vec::new();
    for entry in corpus::CORPUS {
        let o = dst::run(entry.seed, &Options { keep: entry.keep.map(<[usize]>::to_vec), ..Options::default() });
        let faults: Vec<String> = o.kept.iter().map(|i| o.schedule[*i].to_string()).collect();
        assert_eq!(
            faults, entry.faults,
            "seed {}: the generator changed; the corpus entry no longer says what it found",
            entry.seed
        );
        let violated = o.violation.as_ref().map(|v| v.invariant);
        match entry.fixed_by {
            Some(fix) if violated.is_some() => bad.push(format!(
                "corpus entry fixed by {fix} fails again (found: {}):\n{}",
                entry.found,
                dst::report(&o)
            )),
            None if violated != Some(entry.invariant) => bad.push(format!(
                "open corpus entry no longer violates invariant {} (found: {}); if its fix landed, set fixed_by:\n{}",
                entry.invariant,
                entry.found,
                dst::report(&o)
            )),
            _ => {}
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// One seed is one exact run: the same seed twice gives the same trace, a fault less another.
#[test]
fn a_seed_is_one_exact_run() {
    let seed = 7;
    let a = dst::run(seed, &Options::default());
    let b = dst::run(seed, &Options::default());
    assert!(a.passes > 10, "{} passes", a.passes);
    assert_eq!(a.digest, b.digest, "seed {seed} ran differently twice");
    let fewer: Vec<usize> = a.kept.iter().copied().skip(1).collect();
    let c = dst::run(seed, &Options { keep: Some(fewer), ..Options::default() });
    assert_ne!(a.digest, c.digest, "a fault less changes the run");
}

/// Invariant 9 (issue 52) on a world with a rollout (seeds from `ROLLOUT_SEEDS`): seed 1,000,005
/// ([ha], 6 members) changes w000's image and moves the lease while its rollout is under way.
/// Before the takeover adopted the rollouts' courses (b9b7ff3), the new leader published image 2
/// to the wave and the final stage at once (invariant 9 at t=567 s, 28 passes). The seed still
/// fails invariant 6 at its end, no longer for its rollout (a pass stores the rollouts' states
/// it started from since 3b29c2c) but at the takeover: shrunk to its one "leader change"
/// (`--keep 22`), the adopted placements are in no history record and the replay rebuilds none
/// (seed 74's open bug); so this asserts invariant 9 alone.
#[test]
fn a_takeover_mid_rollout_releases_no_stage_before_its_gate() {
    let seed = dst::spec::ROLLOUT_SEEDS + 5;
    let o = dst::run(seed, &Options::default());
    assert!(o.ha && o.schedule.iter().any(|s| s.fault == dst::faults::Fault::LeaderChange), "{}", dst::report(&o));
    assert_ne!(o.violation.as_ref().map(|v| v.invariant), Some(9), "{}", dst::report(&o));
    assert!(o.passes > 40, "the run stopped early:\n{}", dst::report(&o));
}
