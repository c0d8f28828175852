//! How many threads a pass's parallel steps use (staged writes, the output diff, the check of
//! restored files, the render batch; on a load and a restart: reading, parsing and typing the
//! repository's files, decoding the store's placements and persisted decisions, restoring the
//! decisions, rebuilding the member views): the cores, at most 4, or `FEDSCHED_THREADS` (1–64)
//! when it is set — for a unit whose CPU quota is smaller than the machine, and for the tests
//! that show a pass gives the same bytes on one thread and on several.
//!
//! Steps of milliseconds spawn scoped threads ([`map_ordered`]). Steps of microseconds — one
//! decision's per-cluster estimates, asked 10,000 times a pass — can pay neither a thread's
//! start nor a sleeping thread's wake-up (on a virtual machine, waking another core costs
//! about as much as the step). They split on the process's pool ([`split_zip`]), which a
//! stage enters once ([`on_pool`]): for the stage's length the pool's other threads stay
//! awake looking for runs to take, so a split is a hand-over between awake threads.

use std::sync::atomic::{AtomicBool, Ordering};

/// What the work on a thread hands to the threads it fans out to ([`map_ordered`],
/// [`map_into_ordered`], [`on_pool`] and its splits): the interpreter's scope
/// (`model::interpreter::Scope`, which reads and sets it), typed away so that `util` knows
/// nothing of it.
pub type Carried = Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>;

std::thread_local! {
    static CARRIED: std::cell::RefCell<Carried> = const { std::cell::RefCell::new(None) };
}

/// What this thread carries ([`Carried`]).
pub fn carried() -> Carried {
    CARRIED.with(|c| c.borrow().clone())
}

/// Runs `f` with this thread carrying `value`, then puts back what it carried before.
pub fn carrying<R>(value: Carried, f: impl FnOnce() -> R) -> R {
    struct Restore(Carried);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CARRIED.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CARRIED.with(|c| std::mem::replace(&mut *c.borrow_mut(), value));
    let _restore = Restore(previous);
    f()
}

/// The environment variable that sets the thread count.
pub const ENV: &str = "FEDSCHED_THREADS";

/// Threads for one parallel step (at least 1; 1 within [`on_this_thread`]).
pub fn workers() -> usize {
    if ONE_THREAD.with(std::cell::Cell::get) {
        return 1;
    }
    from(std::env::var(ENV).ok().as_deref(), cores())
}

/// The cores this process may use, asked once: `available_parallelism` reads the cgroup's CPU
/// quota files on every call (a pass asked it a dozen times).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// `f` of every item, in the items' order whatever the thread count: the items are cut into
/// `threads` runs (at most one per item, at least one), each mapped on a thread of its own.
/// A panic in a thread goes on in the caller.
pub fn map_ordered<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads.min(items.len()).max(1);
    if threads == 1 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    let inherited = &carried();
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || carrying(inherited.clone(), || part.iter().map(f).collect::<Vec<R>>())))
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
}

/// [`map_ordered`] of items it takes (no copy of an item a thread needs to own).
pub fn map_into_ordered<T: Send, R: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = threads.min(items.len()).max(1);
    if threads == 1 {
        return items.into_iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let mut parts: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut rest = items.into_iter();
    loop {
        let part: Vec<T> = rest.by_ref().take(chunk).collect();
        if part.is_empty() {
            break;
        }
        parts.push(part);
    }
    let f = &f;
    let inherited = &carried();
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| {
                scope.spawn(move || carrying(inherited.clone(), || part.into_iter().map(f).collect::<Vec<R>>()))
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
}

/// The process's pool for fine-grained splits: [`workers`] threads as they were when first
/// asked; `None` when that is one, or when the pool cannot start (everything then runs on the
/// caller's thread, as with one).
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let n = workers();
        if n < 2 {
            return None;
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("fedsched-pool-{i}"))
            .build()
            .map_err(|error| tracing::warn!(%error, "the thread pool did not start: splits run on one thread"))
            .ok()
    })
    .as_ref()
}

/// How long a kept-awake thread looks for runs without finding one before it naps: a stage
/// between its splits (reading, claiming, deducting) costs no more than a core's spin.
const IDLE_BEFORE_NAP: std::time::Duration = std::time::Duration::from_millis(2);
/// A nap's length (a split meanwhile runs on its caller's thread).
const NAP: std::time::Duration = std::time::Duration::from_micros(200);

/// Runs `f` on one of the pool's threads while the others stay awake for its splits
/// ([`split_zip`]); here when there is no pool or this thread is one of its threads. Two
/// stages that enter at once share the threads (a keeper of one may run the other: both end,
/// the first no sooner than the second; the reconciler's passes, plans included, hold its
/// cache's lock and do not overlap).
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let Some(p) = pool().filter(|p| p.current_thread_index().is_none() && !OFF_POOL.with(std::cell::Cell::get)) else {
        return f();
    };
    let inherited = carried();
    p.install(|| {
        let owner = rayon::current_thread_index();
        let done = AtomicBool::new(false);
        /// Ends the keepers when `f` returns or unwinds.
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        rayon::scope(|scope| {
            for _ in 1..p.current_num_threads() {
                scope.spawn(|_| keep_awake(&done, owner));
            }
            let _done = Done(&done);
            carrying(inherited, f)
        })
    })
}

std::thread_local! {
    /// Set by [`off_pool`] and [`on_this_thread`].
    static OFF_POOL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set by [`on_this_thread`].
    static ONE_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets `flag` for the length of `f`, then puts back what it was.
fn with_flag<R>(flag: &'static std::thread::LocalKey<std::cell::Cell<bool>>, f: impl FnOnce() -> R) -> R {
    struct Restore(&'static std::thread::LocalKey<std::cell::Cell<bool>>, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.with(|c| c.set(self.1));
        }
    }
    let _restore = Restore(flag, flag.with(|c| c.replace(true)));
    f()
}

/// Runs `f` with every parallel step on this thread: [`on_pool`]'s stages and their splits
/// (as [`off_pool`]), and [`workers`] 1 (so [`map_ordered`] starts no thread). For a caller
/// that runs many small reconcilers at once, one per thread (the deterministic simulation's
/// seeds, `testbed::dst`): a tiny world's pass is shorter than a pool thread's wake-up, and
/// the pool's kept-awake threads spun for a sixth of a seed's time.
pub fn on_this_thread<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&OFF_POOL, || with_flag(&ONE_THREAD, f))
}

/// Runs `f` with [`on_pool`] running its stages here, on this thread (their splits too): a
/// plan on the daemon, which must never hold the pool's threads while a pass waits for them
/// (a pass's stage that met a plan's keeper thread would end no sooner than the plan).
pub fn off_pool<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&OFF_POOL, f)
}

/// A pool thread's loop while a stage runs on the pool ([`on_pool`]): takes the runs its
/// splits offer until the stage ends; naps when none came for a while. Returns at once on the
/// stage's own thread (which may meet this job while it waits for a run: it must not stay).
fn keep_awake(done: &AtomicBool, owner: Option<usize>) {
    if rayon::current_thread_index() == owner {
        return;
    }
    let mut last = std::time::Instant::now();
    let mut idle = 0u32;
    while !done.load(Ordering::Acquire) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            last = std::time::Instant::now();
            continue;
        }
        std::hint::spin_loop();
        idle = idle.wrapping_add(1);
        if idle.is_multiple_of(64) && last.elapsed() > IDLE_BEFORE_NAP {
            std::thread::sleep(NAP);
        }
    }
}

/// `f` over `items` and `outs` (the answer slot of each item, as many) cut into consecutive
/// runs of at least `min_len` items, one per pool thread at most: the same slots filled as by
/// `f(items, outs)` whenever `f` fills each item's slot from that item alone, whatever the
/// thread count. The slots are made by the caller, on its thread: a run on another thread
/// allocates nothing the caller frees (with mimalloc, a block freed by another thread than
/// its allocator's costs that allocator a slower path). Cut only within [`on_pool`];
/// elsewhere, and for fewer than `2 × min_len` items, `f(items, outs)`.
pub fn split_zip<T: Sync, U: Send>(items: &[T], outs: &mut [U], min_len: usize, f: impl Fn(&[T], &mut [U]) + Sync) {
    debug_assert_eq!(items.len(), outs.len(), "one slot per item");
    let n = items.len().min(outs.len());
    let (items, outs) = (&items[..n], &mut outs[..n]);
    let threads = match pool() {
        Some(p) if p.current_thread_index().is_some() => p.current_num_threads(),
        _ => 1,
    };
    let runs = threads.min(n / min_len.max(1)).max(1);
    zip_in(items, outs, runs, &f);
}

/// `f` over `items` and `outs` in `runs` runs: the right half of the runs on another pool
/// thread when one takes it, the left half here.
fn zip_in<T: Sync, U: Send>(items: &[T], outs: &mut [U], runs: usize, f: &(impl Fn(&[T], &mut [U]) + Sync)) {
    if runs <= 1 {
        return f(items, outs);
    }
    let left_runs = runs / 2;
    let mid = items.len() * left_runs / runs;
    let (left, right) = items.split_at(mid);
    let (left_outs, right_outs) = outs.split_at_mut(mid);
    // Rayon's join waits for a run another thread took by sleeping, and a sleeping thread
    // takes as long to wake as the run: the caller waits here instead, awake, for a run it
    // saw taken (a run not taken yet, the join runs here after the left one).
    let (taken, finished) = (AtomicBool::new(false), AtomicBool::new(false));
    let caller = std::thread::current().id();
    let inherited = carried();
    let ((), helped) = rayon::join(
        || {
            zip_in(left, left_outs, left_runs, f);
            let mut spins = 0u32;
            while taken.load(Ordering::Acquire) && !finished.load(Ordering::Acquire) {
                spins = spins.saturating_add(1);
                match spins < 1 << 14 {
                    true => std::hint::spin_loop(),
                    false => std::thread::yield_now(),
                }
            }
        },
        || {
            taken.store(true, Ordering::Release);
            /// Marks the run finished, also when it unwinds.
            struct Finished<'a>(&'a AtomicBool);
            impl Drop for Finished<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Release);
                }
            }
            let _finished = Finished(&finished);
            // The CPU a run took on another thread, for the caller's figures.
            let started = (std::thread::current().id() != caller).then(cpu_with_helpers);
            carrying(inherited, || zip_in(right, right_outs, runs - left_runs, f));
            started.map(|s| cpu_with_helpers().saturating_sub(s))
        },
    );
    if let Some(cpu) = helped {
        HELPED.with(|h| h.set(h.get().saturating_add(cpu)));
    }
}

std::thread_local! {
    /// CPU time other threads spent on the runs of this thread's splits.
    static HELPED: std::cell::Cell<std::time::Duration> = const { std::cell::Cell::new(std::time::Duration::ZERO) };
}

/// This thread's CPU time ([`super::clock::thread_cpu`]) with the CPU time other threads spent
/// on the runs of its splits ([`split_zip`]): what a step the thread times cost in work,
/// wherever its runs ran.
pub fn cpu_with_helpers() -> std::time::Duration {
    super::clock::thread_cpu().saturating_add(HELPED.with(std::cell::Cell::get))
}

/// [`workers`] from the variable's value and the core count: a value that is not a number
/// in 1–64 is ignored.
fn from(var: Option<&str>, cores: usize) -> usize {
    match var.and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(n @ 1..=64) => n,
        _ => cores.clamp(1, 4),
    }
}

#[cfg(test)]
mod tests {
    use super::{Ordering, carried, carrying, from, map_into_ordered, map_ordered, on_pool, split_zip, zip_in};

    /// What a thread carries (the interpreter's scope) is carried by every thread its work
    /// fans out to, and is put back after.
    #[test]
    fn what_a_thread_carries_reaches_every_thread_it_fans_out_to() {
        fn seen() -> Option<u32> {
            carried().and_then(|c| c.downcast::<u32>().ok()).map(|v| *v)
        }
        let items: Vec<u32> = (0..64).collect();
        carrying(Some(std::sync::Arc::new(7u32)), || {
            assert!(map_ordered(&items, 4, |_| seen()).iter().all(|s| *s == Some(7)));
            assert!(map_into_ordered(items.clone(), 4, |_| seen()).iter().all(|s| *s == Some(7)));
            assert_eq!(on_pool(seen), Some(7));
            let mut outs = vec![None; items.len()];
            on_pool(|| {
                split_zip(&items, &mut outs, 1, |_, outs: &mut [Option<u32>]| outs.iter_mut().for_each(|o| *o = seen()))
            });
            assert!(outs.iter().all(|s| *s == Some(7)), "{outs:?}");
            carrying(None, || assert_eq!(seen(), None));
            assert_eq!(seen(), Some(7));
        });
        assert_eq!(seen(), None);
    }

    #[test]
    fn mapped_items_keep_their_order_on_any_thread_count() {
        let items: Vec<u32> = (0..103).collect();
        let want: Vec<u64> = items.iter().map(|i| u64::from(*i) * 3).collect();
        for threads in [0, 1, 2, 3, 4, 64, 200] {
            assert_eq!(map_ordered(&items, threads, |i| u64::from(*i) * 3), want, "{threads} threads");
        }
        assert!(map_ordered(&[] as &[u32], 4, |i| *i).is_empty());
        for threads in [0, 1, 2, 3, 4, 64, 200] {
            let owned: Vec<String> = items.iter().map(u32::to_string).collect();
            let got = map_into_ordered(owned, threads, |s| s.parse::<u64>().map_or(0, |n| n * 3));
            assert_eq!(got, want, "{threads} threads, owned items");
        }
        assert!(map_into_ordered(Vec::<u32>::new(), 4, |i| i).is_empty());
    }

    /// `split_zip` of `items` into slots of their triples, cut into `min_len` runs (on the
    /// pool when `pooled`); and how many runs `f` saw.
    fn tripled(items: &[u32], min_len: usize, pooled: bool) -> (Vec<u64>, usize) {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let mut outs = vec![0u64; items.len()];
        let f = |part: &[u32], outs: &mut [u64]| {
            calls.fetch_add(1, Ordering::Relaxed);
            for (o, i) in outs.iter_mut().zip(part) {
                *o = u64::from(*i) * 3;
            }
        };
        match pooled {
            true => on_pool(|| split_zip(items, &mut outs, min_len, f)),
            false => split_zip(items, &mut outs, min_len, f),
        }
        (outs, calls.load(Ordering::Relaxed))
    }

    #[test]
    fn split_runs_fill_every_slot_on_any_cut() {
        let items: Vec<u32> = (0..103).collect();
        let want: Vec<u64> = items.iter().map(|i| u64::from(*i) * 3).collect();
        for runs in [0, 1, 2, 3, 4, 7, 103] {
            let mut outs = vec![0u64; items.len()];
            zip_in(&items, &mut outs, runs, &|part: &[u32], outs: &mut [u64]| {
                for (o, i) in outs.iter_mut().zip(part) {
                    *o = u64::from(*i) * 3;
                }
            });
            assert_eq!(outs, want, "{runs} runs");
        }
        let threads = super::pool().map_or(1, |p| p.current_num_threads());
        for min_len in [1, 10, 52, 200] {
            assert_eq!(tripled(&items, min_len, false), (want.clone(), 1), "off the pool: one run of {min_len}");
            let runs = threads.min(items.len() / min_len).max(1);
            assert_eq!(tripled(&items, min_len, true), (want.clone(), runs), "on the pool, runs of {min_len}");
        }
        assert_eq!(tripled(&[], 1, true), (Vec::new(), 1));
    }

    #[test]
    fn the_cpu_of_runs_on_other_threads_counts_for_the_caller() {
        // Runs that burn about 20 ms of CPU each, on the pool: whichever thread ran them,
        // the caller's count grows by about their sum.
        let items: Vec<u32> = (0..4).collect();
        let burn = |part: &[u32], outs: &mut [u64]| {
            for (o, _) in outs.iter_mut().zip(part) {
                let start = super::super::clock::thread_cpu();
                let mut x = 1u64;
                while super::super::clock::thread_cpu().saturating_sub(start) < std::time::Duration::from_millis(20) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                *o = x;
            }
        };
        let counted = on_pool(|| {
            let before = super::cpu_with_helpers();
            let mut outs = vec![0u64; items.len()];
            split_zip(&items, &mut outs, 1, burn);
            super::cpu_with_helpers().saturating_sub(before)
        });
        assert!(counted >= std::time::Duration::from_millis(75), "{counted:?} counted for 80 ms of runs");
    }

    #[test]
    fn a_panic_on_the_pool_reaches_the_caller_and_the_pool_goes_on() {
        let items: Vec<u32> = (0..64).collect();
        let caught = std::panic::catch_unwind(|| {
            on_pool(|| {
                let mut outs = vec![0u32; items.len()];
                split_zip(&items, &mut outs, 1, |part, outs| {
                    assert!(!part.contains(&63), "the last run panics");
                    outs.copy_from_slice(part);
                });
            })
        });
        assert!(caught.is_err());
        let (got, _) = tripled(&items, 1, true);
        assert_eq!(got, items.iter().map(|i| u64::from(*i) * 3).collect::<Vec<_>>(), "the pool still answers");
    }

    #[test]
    fn the_variable_wins_when_it_is_a_sane_count() {
        assert_eq!(from(None, 2), 2);
        assert_eq!(from(None, 32), 4, "at most 4 by default");
        assert_eq!(from(None, 0), 1);
        assert_eq!(from(Some("1"), 8), 1);
        assert_eq!(from(Some(" 8\n"), 2), 8, "more than the cores when asked");
        for bad in ["0", "65", "-1", "two", ""] {
            assert_eq!(from(Some(bad), 2), 2, "{bad:?} is ignored");
        }
    }
}
