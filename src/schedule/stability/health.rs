//! Per-member health timelines and the storm guard.
//!
//! A timeline says since when a member has been unhealthy (NotReady or Unreachable, in any
//! mix: the clock does not restart when one becomes the other) or healthy. One healthy
//! observation ends an unhealthy spell, so a member that flaps faster than the toleration is
//! never evicted, and one that flaps faster than `stable_for` never gets workloads back.
//!
//! The storm guard (Kubernetes' node lifecycle controller's rule, per fleet): the share of the
//! live members unhealthy is judged at each pass, whenever each went — as Kubernetes judges a
//! zone's share of NotReady nodes at each moment (`ComputeZoneState`). Above
//! `unhealthy_threshold` (Kubernetes' partial disruption; all of them: its full disruption) the
//! fleet is in a storm: fedsched's own view is more likely partitioned than the fleet lost, and a
//! fleet most of whose members are down could not take their workloads anyway. It holds every
//! eviction, reschedule, purge and move-back (Kubernetes stops evictions in a partial disruption
//! of a zone of at most `--large-cluster-size-threshold` nodes and slows them to
//! `--secondary-node-eviction-rate` in a larger one; fedsched stops at any fleet size), and
//! releases when the share is at or below the threshold again. Members lost a few seconds apart
//! are a storm from the pass the share passes the threshold, however long the losses took in
//! all; those failed over before it (while the share was below) stay where they went.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Action, ActionKind, Cause, ClusterInput, StabilitySettings};

/// Karmada's taint for members whose Ready condition is not True.
pub const TAINT_NOT_READY: &str = "cluster.karmada.io/not-ready";
/// Karmada's taint for members that cannot be reached.
pub const TAINT_UNREACHABLE: &str = "cluster.karmada.io/unreachable";

/// A member's condition as observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Condition {
    Ready,
    NotReady,
    Unreachable,
}

impl Condition {
    pub fn is_ready(self) -> bool {
        self == Condition::Ready
    }

    /// The NoExecute taint Karmada puts on a member in this condition.
    pub fn taint_key(self) -> Option<&'static str> {
        match self {
            Condition::Ready => None,
            Condition::NotReady => Some(TAINT_NOT_READY),
            Condition::Unreachable => Some(TAINT_UNREACHABLE),
        }
    }
}

/// One member's health over time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterTimeline {
    pub condition: Condition,
    /// Why, when not Ready.
    pub reason: String,
    /// Unix ms since it has been unhealthy (None while healthy).
    pub unhealthy_since_ms: Option<u64>,
    /// Unix ms since it has been healthy (None while unhealthy).
    pub healthy_since_ms: Option<u64>,
    pub live: bool,
}

impl ClusterTimeline {
    /// How long it has been unhealthy at `now_ms` (None while healthy).
    pub fn unhealthy_for(&self, now_ms: u64) -> Option<u64> {
        self.unhealthy_since_ms.map(|s| now_ms.saturating_sub(s))
    }

    /// How long it has been healthy at `now_ms` (None while unhealthy).
    pub fn healthy_for(&self, now_ms: u64) -> Option<u64> {
        self.healthy_since_ms.map(|s| now_ms.saturating_sub(s))
    }

    /// `Unreachable: connection refused`, or `Ready`.
    pub fn describe(&self) -> String {
        if self.reason.is_empty() {
            format!("{:?}", self.condition)
        } else {
            format!("{:?}: {}", self.condition, self.reason)
        }
    }
}

/// The storm guard while it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Storm {
    pub since_ms: u64,
    /// Live members unhealthy when it started, and live members then.
    pub unhealthy: usize,
    pub live: usize,
}

/// The timelines after this pass's observations. Members absent from `observed` are dropped.
pub fn advance(
    old: &BTreeMap<String, ClusterTimeline>,
    observed: &[ClusterInput],
    now_ms: u64,
) -> BTreeMap<String, ClusterTimeline> {
    let mut out = BTreeMap::new();
    for c in observed {
        let ready = c.condition.is_ready();
        let (unhealthy_since_ms, healthy_since_ms) = match old.get(&c.name) {
            Some(t) if ready => (None, Some(t.healthy_since_ms.unwrap_or(now_ms))),
            Some(t) => (Some(t.unhealthy_since_ms.unwrap_or(now_ms)), None),
            None if ready => (None, Some(now_ms)),
            None => (Some(now_ms), None),
        };
        let timeline = ClusterTimeline {
            condition: c.condition,
            reason: if ready { String::new() } else { c.reason.clone() },
            unhealthy_since_ms,
            healthy_since_ms,
            live: c.live,
        };
        out.entry(c.name.clone()).or_insert(timeline);
    }
    out
}

/// The storm guard after this pass: started, kept, or released (with an action when it
/// changes).
///
/// When the guard releases, the members still unhealthy start their toleration again from
/// the release: what fedsched saw during the storm is not trusted, and members that answer a
/// moment later (their next poll) are not evicted for a spell the guard held.
pub fn storm(
    old: Option<&Storm>,
    clusters: &mut BTreeMap<String, ClusterTimeline>,
    now_ms: u64,
    settings: &StabilitySettings,
    actions: &mut Vec<Action>,
) -> Option<Storm> {
    let live_n = clusters.values().filter(|t| t.live).count();
    let unhealthy = clusters.values().filter(|t| t.live && !t.condition.is_ready()).count();
    let share = if live_n == 0 { 0.0 } else { unhealthy as f64 / live_n as f64 };
    let threshold = settings.unhealthy_threshold;
    let rule = format!("unhealthy_threshold {threshold} of {live_n} live members");
    match old {
        Some(s) if share > threshold => Some(s.clone()),
        Some(s) => {
            for t in clusters.values_mut().filter(|t| t.live && !t.condition.is_ready()) {
                t.unhealthy_since_ms = Some(now_ms);
            }
            actions.push(Action {
                workload: None,
                cluster: String::new(),
                kind: ActionKind::StormEnded { unhealthy, live: live_n },
                cause: Cause {
                    condition: format!("{unhealthy} of {} live members unhealthy", live_n),
                    since_ms: s.since_ms,
                    for_ms: now_ms.saturating_sub(s.since_ms),
                    rule,
                },
            });
            None
        }
        None if share > threshold => {
            actions.push(Action {
                workload: None,
                cluster: String::new(),
                kind: ActionKind::StormStarted { unhealthy, live: live_n },
                cause: Cause {
                    condition: format!("{unhealthy} of {live_n} live members unhealthy"),
                    since_ms: now_ms,
                    for_ms: 0,
                    rule,
                },
            });
            Some(Storm { since_ms: now_ms, unhealthy, live: live_n })
        }
        None => None,
    }
}
