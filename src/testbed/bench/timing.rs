//! The tiny timing helper shared by `benches/*.rs` and `fedsched bench`: medians of several
//! runs, process CPU time and peak RSS from `/proc`, and the quick (test) mode CI uses.
//!
//! Benches are `harness = false` binaries. `cargo bench` passes `--bench`; CI passes `--test`
//! (or `--quick`): every case then runs once, so CI checks that the benches compile and run
//! without timing anything.

use std::time::{Duration, Instant};

/// Whether the command line asks for the quick mode (`--test` or `--quick`): one iteration of
/// each case, no warm-up, for CI.
pub fn quick_mode() -> bool {
    std::env::args().any(|a| a == "--test" || a == "--quick")
}

/// The median of `samples` (the mean of the two middle ones for an even count); zero if empty.
pub fn median(samples: &[Duration]) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    match s.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2,
    }
}

/// One measured case: the median time of one iteration over `runs` runs.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Case name.
    pub name: String,
    /// Median time per iteration.
    pub per_iter: Duration,
    /// Runs measured.
    pub runs: usize,
    /// Iterations per run.
    pub iters: u64,
}

impl Sample {
    /// One line for a table: name, median per iteration, runs × iterations.
    pub fn line(&self) -> String {
        format!(
            "{:<44} {:>12}   (median of {} runs × {} iterations)",
            self.name,
            fmt(self.per_iter),
            self.runs,
            self.iters
        )
    }
}

/// A duration with a unit that keeps three significant digits.
pub fn fmt(d: Duration) -> String {
    let ns = d.as_secs_f64() * 1e9;
    if ns < 1e3 {
        format!("{ns:.1} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Runs `f` `iters` times per run, `runs` times (after one warm-up run), and prints and returns
/// the median time per iteration. In quick mode: one run of one iteration, no warm-up.
pub fn bench<T>(name: &str, runs: usize, iters: u64, mut f: impl FnMut() -> T) -> Sample {
    let (runs, iters) = if quick_mode() { (1, 1) } else { (runs.max(1), iters.max(1)) };
    if !quick_mode() {
        for _ in 0..iters {
            std::hint::black_box(f());
        }
    }
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        for _ in 0..iters {
            std::hint::black_box(f());
        }
        samples.push(start.elapsed() / u32::try_from(iters).unwrap_or(u32::MAX));
    }
    let s = Sample { name: name.to_string(), per_iter: median(&samples), runs, iters };
    crate::outln!("{}", s.line());
    s
}

/// CPU time (user + system) of this process so far, from `/proc/self/stat` (clock ticks,
/// assumed 100 Hz as on every Linux distribution's kernel config); None elsewhere.
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU time of the calling thread (`/proc/thread-self/schedstat`, nanoseconds); None elsewhere.
pub fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse::<u64>().ok().map(Duration::from_nanos)
}

/// A `kB` field of `/proc/self/status` in bytes (`VmHWM` = peak RSS, `VmRSS` = current).
pub fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: u64 = line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Peak resident set size of this process (`VmHWM`).
pub fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM")
}

/// Bytes in MiB, for reports.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let ms = Duration::from_millis;
        assert_eq!(median(&[ms(5), ms(1), ms(3)]), ms(3));
        assert_eq!(median(&[ms(4), ms(1), ms(2), ms(3)]), Duration::from_micros(2500));
        assert_eq!(median(&[]), Duration::ZERO);
    }

    #[test]
    fn proc_readers_answer_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss().is_some_and(|b| b > 0));
            assert!(process_cpu().is_some());
            assert!(thread_cpu().is_some());
        }
        assert_eq!(fmt(Duration::from_micros(1500)), "1.50 ms");
    }
}
