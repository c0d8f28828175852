//! How many threads a pass's parallel steps use (staged writes, the output diff, the check of
//! restored files, the render batch): the cores, at most 4, or `FEDSCHED_THREADS` (1–64)
//! when it is set — for a unit whose CPU quota is smaller than the machine, and for the tests
//! that show a pass gives the same bytes on one thread and on several.

/// The environment variable that sets the thread count.
pub const ENV: &str = "FEDSCHED_THREADS";

/// Threads for one parallel step (at least 1).
pub fn workers() -> usize {
    from(std::env::var(ENV).ok().as_deref(), std::thread::available_parallelism().map_or(1, usize::from))
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
    use super::from;

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
