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
    /// What caused it (`startup`, `timer`, `policy-change`, `sighup`).
    pub trigger: String,
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

/// The loop's heartbeat: unix ms of the last turn of the event loop.
#[derive(Debug, Default)]
pub struct Heartbeat(AtomicU64);

impl Heartbeat {
    /// A heartbeat stamped at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Heartbeat(AtomicU64::new(now_ms))
    }

    /// Stamps the heartbeat.
    pub fn beat(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::Relaxed);
    }

    /// Milliseconds since the last beat.
    pub fn age_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.0.load(Ordering::Relaxed))
    }
}

/// The per-cluster status after a good pass: each member of `inputs`, with its stored
/// snapshot head and the replicas the current placements put on it.
pub fn cluster_statuses(
    store: &crate::store::Store,
    inputs: &Inputs,
) -> Result<BTreeMap<String, ClusterStatus>, crate::store::StoreError> {
    let replicas = crate::views::report::replicas_by_cluster(&store.placements()?);
    let mut out = BTreeMap::new();
    for snap in &inputs.snapshots {
        let Some((meta, _)) = store.latest_snapshot(&snap.name)? else { continue };
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
