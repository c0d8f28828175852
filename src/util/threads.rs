//! How many threads a pass's parallel steps use (staged writes, the output diff, the check of
//! restored files, the render batch; on a load and a restart: reading, parsing and typing the
//! repository's files, decoding the store's placements and persisted decisions, restoring the
//! decisions, rebuilding the member views): the cores, at most 4, or `FEDSCHED_THREADS` (1–64)
//! when it is set — for a unit whose CPU quota is smaller than the machine, and for the tests
//! that show a pass gives the same bytes on one thread and on several.

/// The environment variable that sets the thread count.
pub const ENV: &str = "FEDSCHED_THREADS";

/// Threads for one parallel step (at least 1).
pub fn workers() -> usize {
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
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            items.chunks(chunk).map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>())).collect();
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
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            parts.into_iter().map(|part| scope.spawn(move || part.into_iter().map(f).collect::<Vec<R>>())).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
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
    use super::{from, map_into_ordered, map_ordered};

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
