//! The wall clock. The pure core never reads it: the edges (the daemon, the CLI, the poller)
//! read it here and pass milliseconds down. The daemon takes a [`Clock`] so that tests can
//! drive it with a [`ManualClock`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time in milliseconds from the system clock (0 before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Unix time in milliseconds as RFC 3339 UTC with milliseconds (`2026-12-02T07:10:00.000Z`).
pub fn rfc3339_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + std::time::Duration::from_millis(ms)).to_string()
}

/// An RFC 3339 time (`2026-12-02T07:10:00Z`, fractions allowed, `Z` or a `±hh:mm` offset);
/// `None` when it is not one.
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    if !s.is_ascii() {
        return None;
    }
    let (base, offset) = match s.len().checked_sub(6).map(|i| s.split_at(i)) {
        Some((base, off))
            if (off.starts_with('+') || off.starts_with('-'))
                && off.as_bytes()[3] == b':'
                && base.len() > 10
                && base.as_bytes()[10].eq_ignore_ascii_case(&b'T') =>
        {
            let hours: u64 = off[1..3].parse().ok()?;
            let minutes: u64 = off[4..6].parse().ok()?;
            let secs = std::time::Duration::from_secs(hours * 3600 + minutes * 60);
            (base, Some((off.starts_with('+'), secs)))
        }
        _ => (s, None),
    };
    let t = humantime::parse_rfc3339_weak(base.strip_suffix(['Z', 'z']).unwrap_or(base)).ok()?;
    match offset {
        // Local time ahead of UTC: UTC is earlier.
        Some((true, d)) => t.checked_sub(d),
        Some((false, d)) => t.checked_add(d),
        None => Some(t),
    }
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`, one system call, no file):
/// what a phase costs in work, whatever else the machine runs. Figures only, never decisions.
pub fn thread_cpu() -> std::time::Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    std::time::Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0))
}

/// A source of Unix time in milliseconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        now_ms()
    }
}

/// A clock that moves only when told to; clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new(start_ms: u64) -> Self {
        ManualClock(Arc::new(AtomicU64::new(start_ms)))
    }
    pub fn set_ms(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }
    pub fn advance_ms(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told_and_clones_share_it() {
        let c = ManualClock::new(1_000);
        let d = c.clone();
        assert_eq!(c.now_ms(), 1_000);
        d.advance_ms(250);
        assert_eq!(c.now_ms(), 1_250);
        c.set_ms(5);
        assert_eq!(d.now_ms(), 5);
    }

    #[test]
    fn rfc3339_times_parse_with_zone_offsets() {
        let ms = |s: &str| parse_rfc3339(s).and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_millis());
        assert_eq!(ms("2026-12-02T07:10:00Z"), Some(1_796_195_400_000));
        assert_eq!(ms("2026-12-02T07:10:00.5Z"), Some(1_796_195_400_500));
        assert_eq!(ms("2026-12-02T08:10:00+01:00"), Some(1_796_195_400_000));
        assert_eq!(ms("2026-12-02T05:40:00-01:30"), Some(1_796_195_400_000));
        for bad in ["", "tomorrow", "2026-12-02T07:10:00Zé", "é2026-12-02T07:10:00+01:00", "2026-13-02T07:10:00Z"] {
            assert_eq!(ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
