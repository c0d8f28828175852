//! What the running daemon knows right now, for the HTTP API and the metrics: a [`StatusView`]
//! that the loop publishes after every pass (a `tokio::sync::watch` of an `Arc`), and the
//! loop's [`Heartbeat`].
//!
//! Owns: the in-memory status types. Knows nothing of HTTP or of how the loop runs; the
//! daemon writes, the API reads.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::reconcile::{Inputs, ReconcileReport};
use crate::schedule::profile::Profiles;

/// How the last pass ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassOutcome {
    /// Inputs valid, output published.
    Ok,
    /// The policy repository is invalid; the last good output stays. `first`: the first
    /// error as `check` prints it (file, document, field, message).
    Invalid { errors: usize, first: String },
    /// An operational failure (store, output directory) or a panic.
    Failed { message: String },
    /// `[ha]`: a standby's pass (or a leader's whose lease lapsed): decided in shadow, nothing
    /// published or recorded.
    Shadow { reason: String },
}

impl PassOutcome {
    /// Low-cardinality label: `ok`, `invalid`, `failed`, `shadow`.
    pub fn label(&self) -> &'static str {
        match self {
            PassOutcome::Ok => "ok",
            PassOutcome::Invalid { .. } => "invalid",
            PassOutcome::Failed { .. } => "failed",
            PassOutcome::Shadow { .. } => "shadow",
        }
    }
}

/// One pass as the loop saw it.
#[derive(Debug, Clone)]
pub struct PassStatus {
    /// What caused it.
    pub trigger: crate::publish::Trigger,
    /// Unix ms when it finished.
    pub at_ms: u64,
    /// Wall time from loading to the end, in ms.
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: PassOutcome,
}

/// What the daemon knows of one member cluster after the last good pass.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterStatus {
    /// Cluster name.
    pub name: String,
    /// Whether the snapshot says the cluster is Ready.
    pub ready: bool,
    /// Confidence of the last observation, in [0, 1].
    pub confidence: f64,
    /// Unix ms of the last observation (the snapshot's "last seen").
    pub last_seen_ms: u64,
    /// Stored snapshot version in force.
    pub snapshot_version: u64,
    /// Replicas placed on the cluster by the current placements.
    pub replicas: i64,
}

/// The daemon's state as published by the loop after each pass.
#[derive(Clone, Default)]
pub struct StatusView {
    /// Unix ms when the daemon started.
    pub started_at_ms: u64,
    /// At least one pass completed since start (READY=1 was sent).
    pub ready: bool,
    /// The last pass, good or not.
    pub last_pass: Option<PassStatus>,
    /// Report of the last good pass.
    pub last_report: Option<ReconcileReport>,
    /// Unix ms of the last good pass.
    pub last_success_ms: Option<u64>,
    /// Errors found by the last load of the policy repository (0 when valid).
    pub policy_errors: usize,
    /// Member clusters after the last good pass, by name.
    pub clusters: BTreeMap<String, ClusterStatus>,
    /// The inputs of the last good pass (explain answers from them).
    pub inputs: Option<Arc<Inputs>>,
    /// The scheduling profiles (with `[model]` and `[cost]`) the last good pass used, set
    /// together with `inputs`: the API's explain and resources answer with them, as the CLI
    /// does with the configured ones.
    pub profiles: Option<Arc<Profiles>>,
    /// The placements of the last good pass, as its reconciler holds them, with the indexes
    /// the views read them by (set together with `inputs`; `None` before the first good pass:
    /// the API reads the store then).
    pub placed: Option<Arc<crate::views::placed::Placed>>,
    /// What `fedsched plan` asks the daemon to plan with: the reconciler and live members of
    /// the last good pass (`POST /api/v1/plan`).
    pub planner: Option<Arc<crate::views::plan::Planner>>,
    /// Passes finished since start, good or not (tests wait on it).
    pub passes: u64,
    /// `[ha]`: the election, read live (`None` without `[ha]`).
    pub ha: Option<Arc<crate::ha::Handle>>,
}

impl StatusView {
    /// Whether the daemon should receive traffic: a good pass happened, and the last pass did
    /// not fail operationally (invalid input keeps serving the last good output: still ready).
    pub fn is_ready(&self) -> bool {
        self.ready && !matches!(self.last_pass.as_ref().map(|p| &p.outcome), Some(PassOutcome::Failed { .. }))
    }
}

/// The loop's heartbeat and its passes: whether the daemon is alive and getting work done.
/// `/healthz` and the systemd watchdog ask the same [`Heartbeat::stalled`].
#[derive(Debug, Default)]
pub struct Heartbeat {
    /// Unix ms of the last turn of the event loop.
    beat: AtomicU64,
    /// Unix ms when the running pass started; 0: none runs.
    pass_started: AtomicU64,
    /// Unix ms when the last pass finished (the daemon's start before the first).
    pass_done: AtomicU64,
    /// `reconcile.interval` in ms (0: passes are not expected).
    interval: AtomicU64,
}

impl Heartbeat {
    /// A heartbeat stamped at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Heartbeat {
            beat: AtomicU64::new(now_ms),
            pass_started: AtomicU64::new(0),
            pass_done: AtomicU64::new(now_ms),
            interval: AtomicU64::new(0),
        }
    }

    /// Stamps the heartbeat.
    pub fn beat(&self, now_ms: u64) {
        self.beat.store(now_ms, Ordering::Relaxed);
    }

    /// Milliseconds since the last beat.
    pub fn age_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.beat.load(Ordering::Relaxed))
    }

    /// The timer's interval: a pass is expected at least this often.
    pub fn expect_passes_every(&self, interval: std::time::Duration) {
        self.interval.store(u64::try_from(interval.as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// A pass starts.
    pub fn pass_started(&self, now_ms: u64) {
        self.pass_started.store(now_ms.max(1), Ordering::Relaxed);
    }

    /// The running pass finished (however it ended).
    pub fn pass_finished(&self, now_ms: u64) {
        self.pass_started.store(0, Ordering::Relaxed);
        self.pass_done.store(now_ms, Ordering::Relaxed);
    }

    /// Why the daemon is stalled, if it is, with `timeout` as `http.heartbeat_timeout`:
    /// the loop has not turned for `timeout`; a pass has run for longer than `timeout`; or no
    /// pass has finished for `2 × reconcile.interval + timeout` (the timer starts one every
    /// interval; a poll round may come first).
    pub fn stalled(&self, now_ms: u64, timeout: std::time::Duration) -> Option<String> {
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let seconds = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
        let age = self.age_ms(now_ms);
        if age > timeout_ms {
            return Some(format!("the event loop has not turned for {}", seconds(age)));
        }
        let started = self.pass_started.load(Ordering::Relaxed);
        let running = if started == 0 { 0 } else { now_ms.saturating_sub(started) };
        if running > timeout_ms {
            return Some(format!("a pass has been running for {}", seconds(running)));
        }
        let interval = self.interval.load(Ordering::Relaxed);
        let since = now_ms.saturating_sub(self.pass_done.load(Ordering::Relaxed));
        let bound = interval.saturating_mul(2).saturating_add(timeout_ms);
        if interval > 0 && since > bound {
            return Some(format!(
                "no pass has finished for {} (limit {}: twice reconcile.interval and http.heartbeat_timeout)",
                seconds(since),
                seconds(bound)
            ));
        }
        None
    }
}

/// The per-cluster status after a good pass: each member of `inputs`, with its stored
/// snapshot head and the replicas the current placements put on it.
/// The replicas come from `placed` (the pass's placements, in memory), the heads' metas from
/// the store (not the snapshots' contents).
pub fn cluster_statuses(
    store: &crate::store::Store,
    placed: &crate::views::placed::Placed,
    inputs: &Inputs,
) -> Result<BTreeMap<String, ClusterStatus>, crate::store::StoreError> {
    let replicas = placed.replicas_by_cluster();
    let mut out = BTreeMap::new();
    for snap in &inputs.snapshots {
        let Some(meta) = store.snapshot_head(&snap.name)? else { continue };
        out.insert(
            snap.name.clone(),
            ClusterStatus {
                name: snap.name.clone(),
                ready: snap.health.is_ready(),
                confidence: meta.confidence,
                last_seen_ms: snap.observed_at_ms(meta.last_seen_ms),
                snapshot_version: meta.version,
                replicas: replicas.get(&snap.name).copied().unwrap_or(0),
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The three rules `/healthz` and the watchdog share.
    #[test]
    fn stalled_when_the_loop_stops_a_pass_runs_long_or_none_finishes() {
        let timeout = Duration::from_secs(60);
        let h = Heartbeat::new(0);
        h.expect_passes_every(Duration::from_secs(30));
        assert_eq!(h.stalled(50_000, timeout), None);
        // The loop stopped turning.
        let stalled = h.stalled(61_000, timeout).expect("loop");
        assert!(stalled.contains("event loop"), "{stalled}");
        // A pass runs for longer than the timeout while the loop turns.
        h.pass_started(10_000);
        h.beat(70_001);
        let stalled = h.stalled(70_001, timeout).expect("pass");
        assert!(stalled.contains("a pass has been running for 60.0 s"), "{stalled}");
        h.pass_finished(70_001);
        assert_eq!(h.stalled(70_001, timeout), None);
        // No pass for 2 × 30 s + 60 s.
        h.beat(190_002);
        let stalled = h.stalled(190_002, timeout).expect("no pass");
        assert!(stalled.contains("no pass has finished for 120.0 s"), "{stalled}");
        // Without an interval (a bare heartbeat), only the loop counts.
        let bare = Heartbeat::new(0);
        bare.beat(1_000_000);
        assert_eq!(bare.stalled(1_000_000, timeout), None);
    }
}
