//! Prometheus metrics: a [`Metrics`] value owned by the daemon (shared with the HTTP API for
//! `/metrics` behind an `Arc`), recorded from the reports the stages return. There is no
//! process-wide registry: nothing in the core (`model`, `schedule`, `render`, `policy`,
//! `members`, `store`, `reconcile`, `views`) imports this module.
//!
//! Owns: metric names, help texts, label sets and the text encoding
//! (`prometheus-client`'s Prometheus text format 0.0.4). Knows nothing of HTTP: the API
//! calls [`Metrics::refresh_and_encode`]. Names are `fedsched_<name>_<unit>[_total]`; labels
//! are low-cardinality only (`cluster`, `phase`, `outcome`, `state`), never workload names.
//!
//! Recording, by the daemon after each step:
//! - [`Metrics::record_round`]: a poll round of the live members (its per-cluster
//!   [`PollRecord`]s: outcome and duration);
//! - [`Metrics::record_offline`]: the offline clusters of a load (snapshot builds);
//! - [`Metrics::record_pass`]: the loop finished a pass (outcome; for a completed pass its
//!   phase timings, files, workloads by state and the clusters whose mass deletion was held);
//! - [`Metrics::record_policy_errors`]: a load of the policy repository found errors;
//! - [`Metrics::record_audit`]: a self-audit (`[audit] interval`) finished.
//!
//! Gauges that describe the present (snapshot age, confidence, replicas per cluster, store
//! size, readiness) are set from the daemon's [`StatusView`] at scrape time.
//!
//! # Where the figures come from
//!
//! The daemon records metrics from what the stages return (the poller's `RoundReport`, the pass's
//! `ReconcileReport`, `Inputs::offline_polls`); nothing below it reaches a metrics registry.
//!
//! # In detail
//!
//! `Metrics`: the Prometheus registry as a value owned by the daemon and shared with the API
//! (`record_round`, `record_offline`, `record_pass`, `record_policy_errors`; present-tense gauges
//! are set from the status view at scrape time). No HTTP, no global.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry, Unit};

pub use crate::members::live::PollOutcome;
use crate::members::live::{PollRecord, RoundReport};
use crate::reconcile::ReconcileReport;
use crate::schedule::stability::EventKind;
use crate::views::status::{PassOutcome, StatusView};

/// `Content-Type` of [`encode`]'s output.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A phase of a pass (label `phase`).
pub const PHASES: [&str; 7] = ["load", "poll", "schedule", "decide", "render", "publish", "record"];

/// Workload states (label `state`).
pub const STATES: [&str; 4] = ["scheduled", "unschedulable", "pending_failover", "kept_past_grace"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HaLabels {
    identity: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabels {
    cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PollLabels {
    cluster: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EvictionLabels {
    cluster: String,
    /// [`EventKind::reason`].
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    /// [`EventKind::reason`].
    reason: &'static str,
}

/// A counter of the stability engine's events ([`event_counter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventCounter {
    /// `fedsched_evictions_total{cluster,reason}`.
    Evictions,
    /// `fedsched_reschedules_total{reason}`.
    Reschedules,
}

impl EventCounter {
    /// The family's name as scraped.
    pub fn name(self) -> &'static str {
        match self {
            EventCounter::Evictions => "fedsched_evictions_total",
            EventCounter::Reschedules => "fedsched_reschedules_total",
        }
    }

    /// Every `reason` label value the counter can carry, in [`EventKind::all`]'s order.
    pub fn reasons(self) -> Vec<&'static str> {
        EventKind::all().into_iter().filter(|k| event_counter(*k) == Some(self)).map(EventKind::reason).collect()
    }
}

/// The counter an event of the stability engine adds to (its `reason` label:
/// [`EventKind::reason`]); None for the events no counter counts (the storm guard has its
/// gauge, a grace expiry and a hand-over their workload states).
pub fn event_counter(kind: EventKind) -> Option<EventCounter> {
    match kind {
        EventKind::Eviction(_) => Some(EventCounter::Evictions),
        EventKind::Reschedule
        | EventKind::MoveBack
        | EventKind::Purge
        | EventKind::CannotMove
        | EventKind::Rebalance => Some(EventCounter::Reschedules),
        EventKind::GraceExpired | EventKind::Handover | EventKind::StormStarted | EventKind::StormEnded => None,
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkloadLabels {
    workload: String,
}

/// Rollout states (label `state` of `fedsched_rollouts`).
pub const ROLLOUT_STATES: [&str; 4] = ["Progressing", "Halted", "RolledBack", "Complete"];

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

fn poll_histogram() -> Histogram {
    Histogram::new([0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0])
}

fn phase_histogram() -> Histogram {
    Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0])
}

/// A registry that notes each family it registers: its name as scraped and its type (an
/// empty family is left out of an encoding, so the encoding cannot list them all).
struct Registering {
    registry: Registry,
    families: Vec<(String, String)>,
}

impl Registering {
    fn register<M: Metric>(&mut self, name: &str, help: &str, metric: M) {
        self.note(name, None, &metric);
        self.registry.register(name, help, metric);
    }

    fn register_with_unit<M: Metric>(&mut self, name: &str, help: &str, unit: Unit, metric: M) {
        self.note(name, Some(&unit), &metric);
        self.registry.register_with_unit(name, help, unit, metric);
    }

    fn note(&mut self, name: &str, unit: Option<&Unit>, metric: &impl Metric) {
        let kind = metric.metric_type();
        let mut full = format!("fedsched_{name}");
        if let Some(unit) = unit {
            full.push('_');
            full.push_str(unit.as_str());
        }
        if matches!(kind, MetricType::Counter) {
            full.push_str("_total");
        }
        self.families.push((full, kind.as_str().to_string()));
    }
}

/// The daemon's metrics: every family, registered once in its own registry.
pub struct Metrics {
    registry: Registry,
    /// Every family registered, as (name as scraped, type): see [`Metrics::families`].
    families: Vec<(String, String)>,
    polls: Family<PollLabels, Counter>,
    poll_duration: HistogramFamily<ClusterLabels>,
    reconciles: Family<OutcomeLabels, Counter>,
    reconcile_duration: Histogram,
    phase_duration: HistogramFamily<PhaseLabels>,
    files_written: Counter,
    files_removed: Counter,
    holds: Family<ClusterLabels, Counter>,
    policy_load_errors: Counter,
    policy_errors: Gauge,
    workloads: Family<StateLabels, Gauge>,
    rollouts: Family<StateLabels, Gauge>,
    rollout_stage: Family<WorkloadLabels, Gauge>,
    replicas: Family<ClusterLabels, Gauge>,
    snapshot_age: Family<ClusterLabels, FloatGauge>,
    confidence: Family<ClusterLabels, FloatGauge>,
    cluster_ready: Family<ClusterLabels, Gauge>,
    evictions: Family<EvictionLabels, Counter>,
    reschedules: Family<ReasonLabels, Counter>,
    failover_suppressed: Gauge,
    store_size: Gauge,
    ready: Gauge,
    last_success: FloatGauge,
    heartbeat_age: FloatGauge,
    ha_leader: Family<HaLabels, Gauge>,
    ha_transitions: Family<HaLabels, Gauge>,
    audits: Counter,
    audit_differences: Counter,
    audit_duration: FloatGauge,
    /// Serializes refresh + encode so that a scrape never sees a half-refreshed family.
    scrape: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Every family at zero.
    pub fn new() -> Metrics {
        let mut r = Registering { registry: Registry::with_prefix("fedsched"), families: Vec::new() };
        let m = Metrics {
            registry: Registry::default(),
            families: Vec::new(),
            polls: Family::default(),
            poll_duration: Family::new_with_constructor(poll_histogram),
            reconciles: Family::default(),
            reconcile_duration: phase_histogram(),
            phase_duration: Family::new_with_constructor(phase_histogram),
            files_written: Counter::default(),
            files_removed: Counter::default(),
            holds: Family::default(),
            policy_load_errors: Counter::default(),
            policy_errors: Gauge::default(),
            workloads: Family::default(),
            rollouts: Family::default(),
            rollout_stage: Family::default(),
            replicas: Family::default(),
            snapshot_age: Family::default(),
            confidence: Family::default(),
            cluster_ready: Family::default(),
            evictions: Family::default(),
            reschedules: Family::default(),
            failover_suppressed: Gauge::default(),
            store_size: Gauge::default(),
            ready: Gauge::default(),
            last_success: FloatGauge::default(),
            heartbeat_age: FloatGauge::default(),
            ha_leader: Family::default(),
            ha_transitions: Family::default(),
            audits: Counter::default(),
            audit_differences: Counter::default(),
            audit_duration: FloatGauge::default(),
            scrape: Mutex::new(()),
        };
        r.register(
            "polls",
            "Polls of member clusters (offline clusters: snapshot builds), by outcome",
            m.polls.clone(),
        );
        r.register_with_unit(
            "poll_duration",
            "Duration of one poll (or offline snapshot build) of one member cluster",
            Unit::Seconds,
            m.poll_duration.clone(),
        );
        r.register("reconciles", "Reconcile passes, by outcome (ok, invalid, failed, shadow)", m.reconciles.clone());
        r.register_with_unit(
            "reconcile_duration",
            "Wall time of a completed reconcile pass, load to flush",
            Unit::Seconds,
            m.reconcile_duration.clone(),
        );
        r.register_with_unit(
            "reconcile_phase_duration",
            "Wall time of each phase of a completed pass (load, poll, schedule, decide, render, publish, record)",
            Unit::Seconds,
            m.phase_duration.clone(),
        );
        r.register(
            "ha_leader",
            "[ha]: 1 while this instance holds the lease and may publish, 0 as a standby (absent without [ha])",
            m.ha_leader.clone(),
        );
        r.register(
            "ha_lease_transitions",
            "[ha]: leaseTransitions of the lease as last seen",
            m.ha_transitions.clone(),
        );
        r.register("files_written", "Files written to the output directory", m.files_written.clone());
        r.register("files_removed", "Files removed from the output directory", m.files_removed.clone());
        r.register(
            "mass_deletion_holds",
            "Times the publisher held back a mass deletion for a cluster",
            m.holds.clone(),
        );
        r.register(
            "policy_load_errors",
            "Errors found while loading the policy repository (each invalid pass adds its errors)",
            m.policy_load_errors.clone(),
        );
        r.register(
            "policy_errors",
            "Errors in the policy repository at the last load (0 = valid)",
            m.policy_errors.clone(),
        );
        r.register(
            "workloads",
            "Workloads by state after the last good pass (scheduled, unschedulable, pending_failover, kept_past_grace: an old copy kept past its grace period, nothing Ready elsewhere)",
            m.workloads.clone(),
        );
        r.register(
            "rollouts",
            "Workloads under a RolloutPolicy by rollout state after the last good pass (Progressing, Halted, RolledBack, Complete)",
            m.rollouts.clone(),
        );
        r.register(
            "rollout_stage",
            "Per workload under a RolloutPolicy: the index of the stage gated or stopped at (0 = the first), the number of stages when complete",
            m.rollout_stage.clone(),
        );
        r.register(
            "replicas_placed",
            "Replicas placed on each member cluster by the current placements",
            m.replicas.clone(),
        );
        r.register_with_unit(
            "snapshot_age",
            "Time since the cluster's state was last observed",
            Unit::Seconds,
            m.snapshot_age.clone(),
        );
        r.register(
            "snapshot_confidence_ratio",
            "Confidence in the cluster's last observation (1 = fresh or offline, 0 = none)",
            m.confidence.clone(),
        );
        r.register("cluster_ready", "1 when the cluster's last snapshot says Ready", m.cluster_ready.clone());
        r.register(
            "evictions",
            &format!(
                "Workloads evicted from a member by failover, by cluster and reason ({})",
                EventCounter::Evictions.reasons().join(", ")
            ),
            m.evictions.clone(),
        );
        r.register(
            "reschedules",
            &format!(
                "Replicas moved by the stability engine, by reason ({})",
                EventCounter::Reschedules.reasons().join(", ")
            ),
            m.reschedules.clone(),
        );
        r.register(
            "failover_suppressed",
            "1 while the storm guard holds every eviction (too many members unhealthy at once)",
            m.failover_suppressed.clone(),
        );
        r.register("audits", "Self-audits done ([audit] interval)", m.audits.clone());
        r.register(
            "audit_differences",
            "Differences a self-audit found between what the daemon kept and a fresh decision (each one: the fresh decision won at the next pass)",
            m.audit_differences.clone(),
        );
        r.register_with_unit(
            "audit_duration",
            "Wall time of the last self-audit (the fresh and the kept decisions, the comparison)",
            Unit::Seconds,
            m.audit_duration.clone(),
        );
        r.register_with_unit("store_size", "Bytes the sled store uses on disk", Unit::Bytes, m.store_size.clone());
        r.register("ready", "1 once a pass completed and the last pass did not fail", m.ready.clone());
        r.register_with_unit(
            "last_success_timestamp",
            "Unix time of the last completed pass",
            Unit::Seconds,
            m.last_success.clone(),
        );
        r.register_with_unit(
            "heartbeat_age",
            "Time since the event loop last turned",
            Unit::Seconds,
            m.heartbeat_age.clone(),
        );
        Metrics { registry: r.registry, families: r.families, ..m }
    }

    /// Records one poll of a member cluster: its duration and how it ended. Offline clusters
    /// record the snapshot build with [`PollOutcome::Offline`].
    pub fn record_poll(&self, cluster: &str, duration: Duration, outcome: PollOutcome) {
        self.polls.get_or_create(&PollLabels { cluster: cluster.to_string(), outcome: outcome.as_str() }).inc();
        self.poll_duration
            .get_or_create(&ClusterLabels { cluster: cluster.to_string() })
            .observe(duration.as_secs_f64());
    }

    /// Records the polls of a round of the live members.
    pub fn record_round(&self, round: &RoundReport) {
        for PollRecord { cluster, outcome, duration } in &round.polls {
            self.record_poll(cluster, *duration, *outcome);
        }
    }

    /// Records the snapshot builds of the offline clusters of one load (each a poll with
    /// [`PollOutcome::Offline`]).
    pub fn record_offline<'a>(&self, clusters: impl IntoIterator<Item = (&'a str, Duration)>) {
        for (cluster, duration) in clusters {
            self.record_poll(cluster, duration, PollOutcome::Offline);
        }
    }

    /// Records that the publisher held back a mass deletion in a cluster's directory.
    pub fn record_hold(&self, cluster: &str) {
        self.holds.get_or_create(&ClusterLabels { cluster: cluster.to_string() }).inc();
    }

    /// Records a load of the policy repository that found `errors` errors (0 = valid).
    pub fn record_policy_errors(&self, errors: usize) {
        self.policy_load_errors.inc_by(errors as u64);
        self.policy_errors.set(errors as i64);
    }

    /// Records a self-audit: the differences it found and how long it took.
    pub fn record_audit(&self, differences: usize, took: Duration) {
        self.audits.inc();
        self.audit_differences.inc_by(differences as u64);
        self.audit_duration.set(took.as_secs_f64());
    }

    /// Records the end of a pass: its outcome, and for a completed pass its report (phase
    /// timings, files written and removed, workloads by state, held clusters).
    pub fn record_pass(&self, outcome: &PassOutcome, report: Option<&ReconcileReport>) {
        self.reconciles.get_or_create(&OutcomeLabels { outcome: outcome.label() }).inc();
        let Some(report) = report else { return };
        let p = &report.phases;
        self.reconcile_duration.observe(p.total().as_secs_f64());
        for (phase, d) in PHASES.iter().zip([p.load, p.poll, p.schedule, p.decide, p.render, p.publish, p.record]) {
            self.phase_duration.get_or_create(&PhaseLabels { phase }).observe(d.as_secs_f64());
        }
        self.files_written.inc_by(report.files_written as u64);
        self.files_removed.inc_by(report.files_removed as u64);
        let st = &report.stability;
        for e in &st.events {
            let reason = e.kind.reason();
            match event_counter(e.kind) {
                Some(EventCounter::Evictions) => {
                    self.evictions.get_or_create(&EvictionLabels { cluster: e.cluster.clone(), reason }).inc();
                }
                Some(EventCounter::Reschedules) => {
                    self.reschedules.get_or_create(&ReasonLabels { reason }).inc();
                }
                None => {}
            }
        }
        self.failover_suppressed.set(i64::from(st.storm.is_some()));
        let states = [report.scheduled, report.unschedulable.len(), st.pending_failover, st.kept_past_grace];
        for (state, n) in STATES.iter().zip(states) {
            self.workloads.get_or_create(&StateLabels { state }).set(n as i64);
        }
        for h in &report.held_clusters {
            self.record_hold(&h.cluster);
        }
        self.rollout_stage.clear();
        for state in ROLLOUT_STATES {
            let n = report.rollouts.iter().filter(|(_, s, _)| *s == state).count();
            self.rollouts.get_or_create(&StateLabels { state }).set(n as i64);
        }
        for (workload, _, stage) in &report.rollouts {
            self.rollout_stage.get_or_create(&WorkloadLabels { workload: workload.clone() }).set(*stage as i64);
        }
    }

    /// Every metric family the registry exports, as (name as scraped, type): a counter by its
    /// `_total` name. The guide's metrics reference (`docs/guide/reference/metrics.md`) is
    /// checked against it.
    pub fn families(&self) -> Vec<(String, String)> {
        self.families.clone()
    }

    /// Sets the gauges that describe the present from the daemon's status and encodes every
    /// metric in the Prometheus text format.
    pub fn refresh_and_encode(
        &self,
        view: &StatusView,
        now_ms: u64,
        heartbeat_age_ms: u64,
        store_size_bytes: Option<u64>,
    ) -> Result<String, std::fmt::Error> {
        let _guard = self.scrape.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.refresh(view, now_ms, heartbeat_age_ms, store_size_bytes);
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)?;
        Ok(out)
    }

    fn refresh(&self, view: &StatusView, now_ms: u64, heartbeat_age_ms: u64, store_size_bytes: Option<u64>) {
        let m = self;
        // Clusters that left the repository disappear from the per-cluster gauges.
        m.snapshot_age.clear();
        m.confidence.clear();
        m.cluster_ready.clear();
        m.replicas.clear();
        for c in view.clusters.values() {
            let l = ClusterLabels { cluster: c.name.clone() };
            m.snapshot_age.get_or_create(&l).set(now_ms.saturating_sub(c.last_seen_ms) as f64 / 1000.0);
            m.confidence.get_or_create(&l).set(c.confidence);
            m.cluster_ready.get_or_create(&l).set(i64::from(c.ready));
            m.replicas.get_or_create(&l).set(c.replicas);
            // Counters start at 0 for every known cluster, so that `increase()` sees the first hold.
            drop(m.holds.get_or_create(&l));
        }
        if view.last_report.is_none() {
            for state in STATES {
                m.workloads.get_or_create(&StateLabels { state }).set(0);
            }
        }
        if let Some(size) = store_size_bytes {
            m.store_size.set(i64::try_from(size).unwrap_or(i64::MAX));
        }
        m.ready.set(i64::from(view.is_ready()));
        m.last_success.set(view.last_success_ms.map(|ms| ms as f64 / 1000.0).unwrap_or(0.0));
        m.heartbeat_age.set(heartbeat_age_ms as f64 / 1000.0);
        if let Some(ha) = view.ha.as_ref().map(|h| h.status()) {
            m.ha_leader.clear();
            let l = HaLabels { identity: ha.identity.clone() };
            m.ha_leader.get_or_create(&l).set(i64::from(ha.role == crate::ha::Role::Leader));
            m.ha_transitions.clear();
            m.ha_transitions.get_or_create(&l).set(i64::from(ha.transitions));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::stability::Reason;
    use crate::views::status::ClusterStatus;

    fn view(clusters: &[&str]) -> StatusView {
        let mut v = StatusView::default();
        for c in clusters {
            v.clusters.insert(
                c.to_string(),
                ClusterStatus {
                    name: c.to_string(),
                    ready: true,
                    confidence: 0.5,
                    last_seen_ms: 1_000,
                    snapshot_version: 1,
                    replicas: 3,
                },
            );
        }
        v
    }

    #[test]
    fn recorded_values_and_present_gauges_are_encoded() {
        let m = Metrics::new();
        m.record_poll("unit-a", Duration::from_millis(20), PollOutcome::Timeout);
        m.record_hold("unit-a");
        let text = m.refresh_and_encode(&view(&["unit-a", "unit-b"]), 3_500, 0, Some(42)).expect("encode");
        assert!(text.contains("fedsched_polls_total{cluster=\"unit-a\",outcome=\"timeout\"} 1\n"), "{text}");
        assert!(text.contains("fedsched_mass_deletion_holds_total{cluster=\"unit-a\"} 1\n"), "{text}");
        assert!(text.contains("fedsched_mass_deletion_holds_total{cluster=\"unit-b\"} 0\n"), "{text}");
        assert!(text.contains("fedsched_snapshot_age_seconds{cluster=\"unit-b\"} 2.5\n"), "{text}");
        assert!(text.contains("fedsched_snapshot_confidence_ratio{cluster=\"unit-a\"} 0.5\n"), "{text}");
        assert!(text.contains("fedsched_store_size_bytes 42\n"), "{text}");
        // A cluster that left the view leaves the present-tense gauges.
        let text = m.refresh_and_encode(&view(&["unit-a"]), 3_500, 0, None).expect("encode");
        assert!(!text.contains("fedsched_snapshot_age_seconds{cluster=\"unit-b\"}"), "{text}");
    }

    /// [`Metrics::families`] names each family as the registry encodes it (the prefix, a unit's
    /// suffix, a counter's `_total`): every `# TYPE` line of an encoding is one of them, with
    /// its type — what the guide's metrics reference is checked against.
    #[test]
    fn the_families_noted_at_registration_are_those_the_registry_encodes() {
        let m = Metrics::new();
        m.record_poll("unit-a", Duration::from_millis(20), PollOutcome::Timeout);
        m.record_hold("unit-a");
        let text = m.refresh_and_encode(&view(&["unit-a"]), 3_500, 0, Some(42)).expect("encode");
        let noted: std::collections::BTreeSet<(String, String)> = m.families().into_iter().collect();
        let mut encoded = 0;
        for line in text.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
            let (name, kind) = line.split_once(' ').expect("# TYPE name type");
            // The Prometheus text format names a counter's family by its `_total` name, as scraped.
            assert!(noted.contains(&(name.to_string(), kind.to_string())), "{name} ({kind}) not noted: {noted:?}");
            encoded += 1;
        }
        // Counters, gauges, histograms, with and without a unit.
        assert!(encoded >= 10, "{encoded} families encoded:\n{text}");
        for name in ["fedsched_polls_total", "fedsched_store_size_bytes", "fedsched_snapshot_age_seconds"] {
            assert!(text.contains(name) && noted.iter().any(|(n, _)| n == name), "{name}");
        }
    }

    #[test]
    fn rollouts_are_counted_by_state_and_their_stage_follows_the_last_pass() {
        let m = Metrics::new();
        let report = |rollouts: Vec<(String, &'static str, usize)>| ReconcileReport { rollouts, ..Default::default() };
        m.record_pass(
            &PassOutcome::Ok,
            Some(&report(vec![
                ("apps/Deployment/shop/web".into(), "Progressing", 1),
                ("apps/Deployment/shop/db".into(), "Halted", 0),
            ])),
        );
        let text = m.refresh_and_encode(&view(&[]), 0, 0, None).expect("encode");
        for line in [
            "fedsched_rollouts{state=\"Progressing\"} 1\n",
            "fedsched_rollouts{state=\"Halted\"} 1\n",
            "fedsched_rollouts{state=\"Complete\"} 0\n",
            "fedsched_rollout_stage{workload=\"apps/Deployment/shop/web\"} 1\n",
            "fedsched_rollout_stage{workload=\"apps/Deployment/shop/db\"} 0\n",
        ] {
            assert!(text.contains(line), "{line}{text}");
        }
        // db left its RolloutPolicy: its stage goes.
        m.record_pass(&PassOutcome::Ok, Some(&report(vec![("apps/Deployment/shop/web".into(), "Complete", 3)])));
        let text = m.refresh_and_encode(&view(&[]), 0, 0, None).expect("encode");
        assert!(text.contains("fedsched_rollouts{state=\"Complete\"} 1\n"), "{text}");
        assert!(text.contains("fedsched_rollout_stage{workload=\"apps/Deployment/shop/web\"} 3\n"), "{text}");
        assert!(!text.contains("shop/db"), "{text}");
    }

    #[test]
    fn rounds_passes_and_offline_loads_are_recorded_from_their_reports() {
        let m = Metrics::new();
        let round = RoundReport {
            polls: vec![
                PollRecord { cluster: "live-a".into(), outcome: PollOutcome::Ok, duration: Duration::from_millis(5) },
                PollRecord { cluster: "live-b".into(), outcome: PollOutcome::Error, duration: Duration::ZERO },
            ],
            ..Default::default()
        };
        m.record_round(&round);
        m.record_offline([("off-a", Duration::ZERO)]);
        let event = |kind, cluster: &str| crate::reconcile::StabilityEvent {
            workload: None,
            cluster: cluster.into(),
            kind,
            text: String::new(),
        };
        let report = ReconcileReport {
            held_clusters: vec![crate::publish::HeldCluster { cluster: "live-a".into(), objects: 4, removals: 4 }],
            files_written: 3,
            stability: crate::reconcile::StabilityReport {
                events: vec![
                    event(EventKind::Eviction(Reason::ClusterUnreachable), "live-b"),
                    event(EventKind::Eviction(Reason::ClusterUnreachable), "live-b"),
                    event(EventKind::Reschedule, "live-a"),
                    event(EventKind::StormStarted, ""),
                ],
                pending_failover: 2,
                kept_past_grace: 1,
                storm: Some("storm".into()),
                held: 0,
            },
            ..Default::default()
        };
        m.record_pass(&PassOutcome::Ok, Some(&report));
        let text = m.refresh_and_encode(&view(&[]), 0, 0, None).expect("encode");
        for line in [
            "fedsched_polls_total{cluster=\"live-a\",outcome=\"ok\"} 1\n",
            "fedsched_polls_total{cluster=\"live-b\",outcome=\"error\"} 1\n",
            "fedsched_polls_total{cluster=\"off-a\",outcome=\"offline\"} 1\n",
            "fedsched_mass_deletion_holds_total{cluster=\"live-a\"} 1\n",
            "fedsched_files_written_total 3\n",
            "fedsched_reconciles_total{outcome=\"ok\"} 1\n",
            "fedsched_evictions_total{cluster=\"live-b\",reason=\"cluster-unreachable\"} 2\n",
            "fedsched_reschedules_total{reason=\"unschedulable\"} 1\n",
            "fedsched_failover_suppressed 1\n",
        ] {
            assert!(text.contains(line), "{line}{text}");
        }
        // The workloads by state, once the view has the pass's report.
        let mut with_report = view(&[]);
        with_report.last_report = Some(report.clone());
        let m = Metrics::new();
        m.record_pass(&PassOutcome::Ok, Some(&report));
        let text = m.refresh_and_encode(&with_report, 0, 0, None).expect("encode");
        for line in
            ["fedsched_workloads{state=\"pending_failover\"} 2\n", "fedsched_workloads{state=\"kept_past_grace\"} 1\n"]
        {
            assert!(text.contains(line), "{line}{text}");
        }
        // Another value starts from zero: there is no shared registry.
        let other = Metrics::new().refresh_and_encode(&view(&[]), 0, 0, None).expect("encode");
        assert!(!other.contains("live-a"), "{other}");
    }
    #[test]
    fn every_event_kind_is_counted_by_its_reason_and_its_counters_help_names_the_reason() {
        for kind in EventKind::all() {
            let m = Metrics::new();
            let event =
                crate::reconcile::StabilityEvent { workload: None, cluster: "m1".into(), kind, text: String::new() };
            let stability = crate::reconcile::StabilityReport { events: vec![event], ..Default::default() };
            m.record_pass(&PassOutcome::Ok, Some(&ReconcileReport { stability, ..Default::default() }));
            let text = m.refresh_and_encode(&view(&[]), 0, 0, None).expect("encode");
            let label = format!("reason=\"{}\"", kind.reason());
            let counted: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && l.contains(&label)).collect();
            match event_counter(kind) {
                Some(counter) => {
                    assert!(
                        counted.len() == 1 && counted[0].starts_with(counter.name()) && counted[0].ends_with(" 1"),
                        "{kind:?}: {counted:?}"
                    );
                    let family = counter.name().trim_end_matches("_total");
                    let help = text.lines().find(|l| l.starts_with(&format!("# HELP {family}"))).unwrap_or_default();
                    assert!(help.contains(kind.reason()), "{kind:?}: the help does not name {}: {help}", kind.reason());
                }
                None => assert!(counted.is_empty(), "{kind:?} counted: {counted:?}"),
            }
        }
    }
}
