//! The marks the figures are judged against (issue 17's table), and how: a mark is set for one
//! size ([`MARK_SIZE`]: W = 10,000 workloads × C = 1,000 clusters × 100 nodes), and a figure is
//! judged against it only at that size — or against the mark scaled explicitly (per
//! (workload × cluster) pair, per file written, per workload), or against a size-free mark (a
//! ratio to the first full reconcile, a count that must be 0). A line always says which, so
//! "met" at C = 200 × W = 2,000 can never be read as the 10k × 1k mark met.

use super::FleetSpec;

/// A fixture's size, as far as the marks care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub workloads: usize,
    pub clusters: usize,
    pub nodes: usize,
}

/// The size every absolute mark is set for.
pub const MARK_SIZE: Size = Size { workloads: 10_000, clusters: 1_000, nodes: 100 };

impl Size {
    pub fn of(fleet: &FleetSpec, workloads: usize) -> Size {
        Size { workloads, clusters: fleet.clusters, nodes: fleet.nodes }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "W={} × C={} × N={}", group(self.workloads), group(self.clusters), group(self.nodes))
    }
}

/// `12345` as `12,345`.
fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A mark attached to a figure: what it says and, when it was judged, whether it is met.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The mark with how it applies: "≤ 500 ms at W=10,000 × C=1,000 × N=100",
    /// "≤ 50 ns per pair (scaled from ≤ 500 ms at …)", "≤ 1 % of S2 (any size)".
    pub text: String,
    /// `None`: not judged (the fixture is not the size the mark is set for).
    pub met: Option<bool>,
}

impl Mark {
    /// An absolute mark (`limit` in the figure's unit), judged only when `size` is
    /// [`MARK_SIZE`].
    pub fn at_size(text: &str, value: f64, limit: f64, size: Size) -> Mark {
        match size == MARK_SIZE {
            true => Mark { text: format!("{text} at {MARK_SIZE}"), met: Some(value <= limit) },
            false => Mark { text: format!("{text} is set for {MARK_SIZE}, this is {size}"), met: None },
        }
    }

    /// The absolute mark `of` divided per unit of `per` (pair, file, workload): judged at any
    /// size, and says it is scaled.
    pub fn scaled(text: &str, per: &str, of: &str, value: f64, limit: f64) -> Mark {
        Mark { text: format!("{text} per {per} (scaled from {of} at {MARK_SIZE})"), met: Some(value <= limit) }
    }

    /// A mark that holds at every size (a ratio, a count).
    pub fn any_size(text: &str, met: bool) -> Mark {
        Mark { text: format!("{text} (any size)"), met: Some(met) }
    }

    /// The mark's part of a report line.
    pub fn suffix(&self) -> String {
        match self.met {
            Some(true) => format!("   mark {}: met", self.text),
            Some(false) => format!("   mark {}: NOT met", self.text),
            None => format!("   mark {}: not judged", self.text),
        }
    }
}

/// S1: the schedule phase ≤ 500 ms at the mark size, ≤ 50 ns per (workload × cluster) pair.
pub const S1_MS: f64 = 500.0;
pub const S1_NS_PER_PAIR: f64 = S1_MS * 1e6 / (MARK_SIZE.workloads * MARK_SIZE.clusters) as f64;
/// S2: the first full reconcile ≤ 10 s at the mark size, about 111,000 files there.
pub const S2_MS: f64 = 10_000.0;
pub const S2_FILES_AT_MARK: f64 = 111_000.0;
pub const S2_US_PER_FILE: f64 = S2_MS * 1e3 / S2_FILES_AT_MARK;
/// S3: a warm no-change pass ≤ 200 ms at the mark size; ≤ 1 % of S2 at any size.
pub const S3_MS: f64 = 200.0;
/// S4: one template edited ≤ 50 ms at the mark size; ≤ 1 % of S2 at any size.
pub const S4_MS: f64 = 50.0;
/// S3 and S4 as a share of S2's first full reconcile of the same repository.
pub const SHARE_OF_S2: f64 = 0.01;
/// S7: restart until ready ≤ 2 s at the mark size, ≤ 200 µs per workload.
pub const S7_MS: f64 = 2_000.0;
pub const S7_US_PER_WORKLOAD: f64 = S7_MS * 1e3 / MARK_SIZE.workloads as f64;
/// S5: the poller's peak RSS ≤ 1 GiB at 1,000 member clusters.
pub const S5_RSS_MIB: f64 = 1024.0;
pub const S5_RSS_CLUSTERS: usize = 1_000;

/// S5's peak RSS at [`S5_RSS_CLUSTERS`] clusters (MiB) from a poll of `clusters` clusters
/// whose process held `baseline` bytes (its current RSS, not its high-water mark: work done
/// before, such as generating the fleet, must not hide the poller's growth) before the first
/// round and peaked at `peak` bytes: the peak itself at that size or more (`true`: measured),
/// else the baseline plus the growth scaled linearly in clusters (`false`: projected; the
/// list round's buffers, bounded by `poll.concurrency`, are scaled too, so it errs high).
pub fn s5_rss_at_mark(baseline: u64, peak: u64, clusters: usize) -> (f64, bool) {
    let mib = |b: f64| b / (1024.0 * 1024.0);
    if clusters >= S5_RSS_CLUSTERS {
        return (mib(peak as f64), true);
    }
    let growth = peak.saturating_sub(baseline) as f64 / clusters.max(1) as f64;
    (mib(baseline as f64 + growth * S5_RSS_CLUSTERS as f64), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Size = Size { workloads: 2_000, clusters: 200, nodes: 20 };

    #[test]
    fn an_absolute_mark_is_judged_only_at_its_size() {
        // 300 ms at C=200 × W=2,000 says nothing about the 10k × 1k mark.
        let small = Mark::at_size("≤ 500 ms", 300.0, S1_MS, SMALL);
        assert_eq!(small.met, None);
        assert_eq!(
            small.suffix(),
            "   mark ≤ 500 ms is set for W=10,000 × C=1,000 × N=100, this is W=2,000 × C=200 × N=20: not judged"
        );
        let at = Mark::at_size("≤ 500 ms", 300.0, S1_MS, MARK_SIZE);
        assert_eq!(at.suffix(), "   mark ≤ 500 ms at W=10,000 × C=1,000 × N=100: met");
        assert_eq!(Mark::at_size("≤ 500 ms", 501.0, S1_MS, MARK_SIZE).met, Some(false));
    }

    #[test]
    fn s5_rss_is_measured_at_its_size_and_projected_from_the_current_rss_below_it() {
        const MIB: u64 = 1024 * 1024;
        // 100 clusters grew a 15 MiB process to 130 MiB: 1.15 MiB each, 1,165 MiB at 1,000.
        assert_eq!(s5_rss_at_mark(15 * MIB, 130 * MIB, 100), (1165.0, false));
        // A baseline taken as the high-water mark of earlier work (72 MiB) would have hidden
        // most of that growth: 72 + 58 × 10 = 652 MiB, "met". The caller passes the current RSS.
        assert_eq!(s5_rss_at_mark(72 * MIB, 130 * MIB, 100), (652.0, false));
        // At the mark's size the peak is the figure.
        assert_eq!(s5_rss_at_mark(15 * MIB, 900 * MIB, 1_000), (900.0, true));
        assert_eq!(s5_rss_at_mark(15 * MIB, 1100 * MIB, 2_000), (1100.0, true));
        // A peak below the baseline (it cannot be, but) projects no growth.
        assert_eq!(s5_rss_at_mark(20 * MIB, 10 * MIB, 10), (20.0, false));
    }

    #[test]
    fn scaled_marks_follow_from_the_absolute_ones() {
        assert_eq!(S1_NS_PER_PAIR, 50.0);
        assert_eq!(S7_US_PER_WORKLOAD, 200.0);
        assert!((S2_US_PER_FILE - 90.09).abs() < 0.01);
        let m = Mark::scaled("≤ 50 ns", "pair", "≤ 500 ms", 989.0, S1_NS_PER_PAIR);
        assert_eq!(
            m.suffix(),
            "   mark ≤ 50 ns per pair (scaled from ≤ 500 ms at W=10,000 × C=1,000 × N=100): NOT met"
        );
        assert_eq!(Mark::any_size("0", true).suffix(), "   mark 0 (any size): met");
    }
}
