use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::policy::types::{TaintEffect, TolerationOperator};

const MIN: u64 = 60_000;

fn key(name: &str) -> ObjectKey {
    ObjectKey {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: Some("ns".into()),
        name: name.into(),
    }
}

fn cluster(name: &str, condition: Condition) -> ClusterInput {
    let reason = if condition.is_ready() { String::new() } else { "connection refused".into() };
    ClusterInput { name: name.into(), condition, reason, live: true, no_execute: Vec::new() }
}

fn fleet(names: &[&str], down: &[&str]) -> Vec<ClusterInput> {
    names.iter().map(|n| cluster(n, if down.contains(n) { Condition::Unreachable } else { Condition::Ready })).collect()
}

fn placed(pairs: &[(&str, i32)]) -> BTreeMap<String, i32> {
    pairs.iter().map(|(c, r)| (c.to_string(), *r)).collect()
}

fn kinds(actions: &[Action]) -> Vec<(String, String)> {
    actions.iter().filter(|a| a.is_event()).map(|a| (a.cluster.clone(), a.reason_label())).collect()
}

fn evictions(actions: &[Action]) -> usize {
    actions.iter().filter(|a| matches!(a.kind, ActionKind::Evict { .. })).count()
}

/// Runs passes at `times`, with the inputs `at(t)` gives, and collects every action.
fn run(
    times: impl IntoIterator<Item = u64>,
    settings: &StabilitySettings,
    at: impl Fn(u64) -> Inputs,
) -> (StabilityState, Vec<(u64, Action)>) {
    let mut state = StabilityState::default();
    let mut all = Vec::new();
    for t in times {
        let s = step(&state, &at(t), t, settings);
        all.extend(s.actions.into_iter().map(|a| (t, a)));
        state = s.state;
    }
    (state, all)
}

#[test]
fn outage_evicts_after_the_toleration_and_purges_when_the_replacement_is_ready() {
    let settings = StabilitySettings::default();
    let t0 = 1_000_000;
    let mut state = StabilityState::default();
    let names = ["a", "b", "c"];
    let mut w = WorkloadInput::new(key("web"), placed(&[("a", 2), ("b", 2)]));
    w.ready = placed(&[("a", 2), ("b", 2)]);
    // Ready, then a is lost.
    let s = step(&state, &Inputs { clusters: fleet(&names, &[]), workloads: vec![w.clone()] }, t0, &settings);
    assert!(s.actions.is_empty());
    state = s.state;
    let lost = Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] };
    for dt in [10_000, 100_000, 299_000] {
        let s = step(&state, &lost, t0 + dt, &settings);
        assert_eq!(evictions(&s.actions), 0, "{dt}");
        state = s.state;
    }
    let s = step(&state, &lost, t0 + 10_000 + 300_000, &settings);
    assert_eq!(kinds(&s.actions), [("a".to_string(), "cluster-unreachable".to_string())]);
    let text = s.actions[0].to_string();
    assert!(text.contains("toleration 5m of cluster.karmada.io/unreachable:NoExecute"), "{text}");
    assert!(text.contains("for 5m") && text.contains("connection refused"), "{text}");
    assert!(s.pending_failover.contains(&key("web")));
    state = s.state;
    let ws = &state.workloads[&key("web")];
    assert_eq!(ws.evicted(), BTreeSet::from(["a"]));
    assert_eq!(ws.kept(), BTreeSet::from(["a"]));

    // The scheduler moved the replicas to b and c; not Ready yet: kept.
    w.placed = placed(&[("b", 2), ("c", 2)]);
    w.ready = placed(&[("b", 2)]);
    let moved = Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] };
    let s = step(&state, &moved, t0 + 320_000, &settings);
    assert!(kinds(&s.actions).is_empty());
    assert!(s.pending_failover.contains(&key("web")));
    state = s.state;
    // Ready on c too: purged, once.
    w.ready = placed(&[("b", 2), ("c", 2)]);
    let ready = Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] };
    let s = step(&state, &ready, t0 + 330_000, &settings);
    assert_eq!(kinds(&s.actions), [("a".to_string(), "purge".to_string())]);
    assert!(matches!(s.actions[0].kind, ActionKind::Purge { reason: PurgeReason::ReplacementReady, .. }));
    assert!(s.pending_failover.is_empty());
    state = s.state;
    let s = step(&state, &ready, t0 + 340_000, &settings);
    assert!(kinds(&s.actions).is_empty());
    assert!(s.state.workloads[&key("web")].kept().is_empty());
}

#[test]
fn grace_period_purges_but_never_leaves_a_workload_nowhere() {
    let settings = StabilitySettings { grace_period_ms: 10 * MIN, ..Default::default() };
    let names = ["a", "b"];
    let mut w = WorkloadInput::new(key("web"), placed(&[("a", 3)]));
    let (mut state, actions) =
        run([0, 6 * MIN], &settings, |_| Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] });
    assert_eq!(evictions(&actions.iter().map(|(_, a)| a.clone()).collect::<Vec<_>>()), 1);
    // Nothing else could take it: it stays on a, and its files are never purged; when the
    // grace period has passed, that is said (once).
    for t in [17 * MIN, 30 * MIN] {
        let s = step(&state, &Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] }, t, &settings);
        let expect: &[(String, String)] =
            if t == 17 * MIN { &[("a".to_string(), "grace-expired".to_string())] } else { &[] };
        assert_eq!(kinds(&s.actions), expect, "{:?}", s.actions);
        state = s.state;
    }
    assert_eq!(state.workloads[&key("web")].tasks[0].grace_expired_ms, Some(17 * MIN), "said when it passed");
    // Moved to b but never Ready there: the grace period passed, and still nothing is Ready
    // elsewhere — kept (issue 46: the purge fired here with 0 of 3 Ready), said once.
    w.placed = placed(&[("b", 3)]);
    w.ready = placed(&[("b", 0)]);
    for t in [31 * MIN, 40 * MIN] {
        let inputs = Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] };
        let s = step(&state, &inputs, t, &settings);
        assert!(kinds(&s.actions).is_empty(), "{t}: {:?}", s.actions);
        assert!(s.pending_failover.contains(&key("web")));
        assert_eq!(s.state.kept_past_grace(), 1);
        state = s.state;
    }
    // One replica Ready there: it runs elsewhere, the grace period has passed: purged.
    w.ready = placed(&[("b", 1)]);
    let inputs = Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] };
    let s = step(&state, &inputs, 41 * MIN, &settings);
    assert_eq!(kinds(&s.actions), [("a".to_string(), "purge".to_string())]);
    assert!(matches!(s.actions[0].kind, ActionKind::Purge { reason: PurgeReason::GraceElapsed, .. }));
    assert!(s.actions[0].to_string().contains("grace period 10m passed"));
    assert_eq!(s.state.kept_past_grace(), 0);
}

/// The grace period passes while the replacement runs nowhere (0 Ready elsewhere): the note
/// says so once, naming the members it waits for.
#[test]
fn a_grace_period_that_passes_with_nothing_ready_elsewhere_is_said_once() {
    let settings = StabilitySettings { grace_period_ms: 10 * MIN, ..Default::default() };
    let names = ["a", "b", "c"];
    let mut w = WorkloadInput::new(key("web"), placed(&[("a", 2)]));
    w.ready = placed(&[("a", 2)]);
    let mut state = StabilityState::default();
    let mut said = Vec::new();
    for t in [0, 5 * MIN, 6 * MIN, 15 * MIN, 16 * MIN, 30 * MIN] {
        if t == 6 * MIN {
            // The scheduler moved it to b and c; their pods never get Ready.
            w.placed = placed(&[("b", 1), ("c", 1)]);
            w.ready = placed(&[("b", 0), ("c", 0)]);
        }
        let s = step(&state, &Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] }, t, &settings);
        said.extend(s.actions.iter().filter(|a| a.is_event()).map(|a| (t, a.reason_label(), a.to_string())));
        state = s.state;
    }
    let labels: Vec<(u64, &str)> = said.iter().map(|(t, l, _)| (t / MIN, l.as_str())).collect();
    assert_eq!(labels, [(5, "cluster-unreachable"), (15, "grace-expired")], "{said:#?}");
    let note = &said[1].2;
    assert!(note.contains("grace period 10m passed with no replica Ready on b, c: the files left on a stay"), "{note}");
    assert_eq!(state.workloads[&key("web")].kept(), BTreeSet::from(["a"]));
}

#[test]
fn purge_modes_directly_and_never() {
    let settings = StabilitySettings::default();
    let names = ["a", "b"];
    for (purge, expect) in
        [(Purge::Directly, vec!["cluster-unreachable", "purge"]), (Purge::Never, vec!["cluster-unreachable"])]
    {
        let mut w = WorkloadInput::new(key("web"), placed(&[("a", 1), ("b", 1)]));
        w.cluster_rule.purge = purge;
        let (state, actions) =
            run([0, 5 * MIN], &settings, |_| Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] });
        let labels: Vec<String> = actions.iter().filter(|(_, a)| a.is_event()).map(|(_, a)| a.reason_label()).collect();
        assert_eq!(labels, expect, "{purge:?}");
        let ws = &state.workloads[&key("web")];
        assert_eq!(ws.evicted(), BTreeSet::from(["a"]), "{purge:?}: the member stays out");
        assert_eq!(ws.kept().is_empty(), purge == Purge::Directly, "{purge:?}");
        // Moved and Ready elsewhere: Never keeps the files, Directly forgets its task.
        w.placed = placed(&[("b", 2)]);
        w.ready = placed(&[("b", 2)]);
        let s =
            step(&state, &Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] }, 6 * MIN, &settings);
        assert!(kinds(&s.actions).is_empty(), "{purge:?}");
        assert_eq!(s.state.workloads[&key("web")].kept().len(), usize::from(purge == Purge::Never));
        assert!(s.pending_failover.is_empty());
    }
}

/// A `Directly` eviction whose workload could not leave (nothing else fit: it stays placed on
/// the member) ends when the member is Ready again: the eviction never took effect, and a
/// stale task moved the workload off the healthy member later, removing its Ready replicas at
/// once with none Ready elsewhere (issue 46, simulation seed 60). Until then it stays.
#[test]
fn a_directly_eviction_whose_workload_never_left_ends_when_its_member_is_ready_again() {
    let settings = StabilitySettings::default();
    let names = ["a", "b"];
    let mut w = WorkloadInput::new(key("web"), placed(&[("a", 2)]));
    w.cluster_rule.purge = Purge::Directly;
    w.ready = placed(&[("a", 2)]);
    let down = |_| Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] };
    let (state, actions) = run([0, 5 * MIN, 6 * MIN], &settings, down);
    assert_eq!(evictions(&actions.iter().map(|(_, a)| a.clone()).collect::<Vec<_>>()), 1);
    assert_eq!(state.workloads[&key("web")].evicted(), BTreeSet::from(["a"]), "a stays out while it is down");
    let up = Inputs { clusters: fleet(&names, &[]), workloads: vec![w.clone()] };
    let s = step(&state, &up, 7 * MIN, &settings);
    let ws = s.state.workloads.get(&key("web"));
    assert!(ws.is_none_or(|ws| ws.evicted().is_empty()), "the stale task stays: {ws:?}");
    assert!(kinds(&s.actions).is_empty(), "{:?}", s.actions);
}

/// An eviction the mass-deletion guard held (its note kept unpublished, as
/// `reconcile::stability` keeps it) whose workload never left ends when the member is Ready
/// again, and its note with it: noted once the hold ended, it named an outage long over
/// (issue 46, invariant 8, simulation seed 1000045). Another member's note stays.
#[test]
fn a_held_eviction_that_never_took_effect_leaves_no_note_once_its_member_is_ready_again() {
    let settings = StabilitySettings::default();
    let names = ["a", "b"];
    for purge in [Purge::Gracefully, Purge::Directly] {
        let mut w = WorkloadInput::new(key("web"), placed(&[("a", 2)]));
        w.cluster_rule.purge = purge;
        w.ready = placed(&[("a", 2)]);
        let down = |_| Inputs { clusters: fleet(&names, &["a"]), workloads: vec![w.clone()] };
        let (mut state, actions) = run([0, 5 * MIN, 6 * MIN], &settings, down);
        let held: Vec<Action> = actions.into_iter().map(|(_, a)| a).filter(|a| a.is_event()).collect();
        assert_eq!(evictions(&held), 1, "{purge:?}");
        let ws = state.workloads.get_mut(&key("web")).expect("its task");
        ws.unpublished = held.clone();
        let other = Action { cluster: "b".into(), ..held[0].clone() };
        ws.unpublished.push(other.clone());
        let up = Inputs { clusters: fleet(&names, &[]), workloads: vec![w.clone()] };
        let s = step(&state, &up, 7 * MIN, &settings);
        let ws = s.state.workloads.get(&key("web"));
        assert!(ws.is_some_and(|ws| ws.evicted().is_empty()), "{purge:?}: the task ends: {ws:?}");
        assert_eq!(ws.map(|ws| ws.unpublished.clone()), Some(vec![other]), "{purge:?}");
    }
}

fn tol(key: Option<&str>, op: TolerationOperator, effect: Option<TaintEffect>, seconds: Option<i64>) -> Toleration {
    Toleration { key: key.map(str::to_string), operator: Some(op), value: None, effect, toleration_seconds: seconds }
}

#[test]
fn tolerations_follow_karmadas_taint_manager() {
    let d = 300_000;
    assert_eq!(workload::toleration_ms(&[], TAINT_UNREACHABLE, d), Some(d));
    let t = tol(Some(TAINT_UNREACHABLE), TolerationOperator::Exists, Some(TaintEffect::NoExecute), Some(30));
    assert_eq!(workload::toleration_ms(std::slice::from_ref(&t), TAINT_UNREACHABLE, d), Some(30_000));
    assert_eq!(workload::toleration_ms(std::slice::from_ref(&t), TAINT_NOT_READY, d), Some(d), "other taint: default");
    let shorter = tol(None, TolerationOperator::Exists, None, Some(10));
    assert_eq!(workload::toleration_ms(&[t.clone(), shorter], TAINT_UNREACHABLE, d), Some(10_000), "minimum");
    let forever = tol(Some(TAINT_UNREACHABLE), TolerationOperator::Exists, Some(TaintEffect::NoExecute), None);
    assert_eq!(workload::toleration_ms(&[t, forever], TAINT_UNREACHABLE, d), None, "tolerated forever");
    let no_schedule = tol(Some(TAINT_UNREACHABLE), TolerationOperator::Exists, Some(TaintEffect::NoSchedule), None);
    assert_eq!(workload::toleration_ms(&[no_schedule], TAINT_UNREACHABLE, d), Some(d), "NoSchedule only");
}

#[test]
fn storm_guard_holds_everything_while_most_of_the_fleet_is_down() {
    let settings = StabilitySettings::default();
    let names = ["a", "b", "c", "d", "e"];
    let workloads: Vec<WorkloadInput> = names.iter().map(|n| WorkloadInput::new(key(n), placed(&[(n, 1)]))).collect();
    let down = |t: u64| -> Vec<&str> {
        if t < MIN {
            vec![]
        } else if t < 20 * MIN {
            vec!["a", "b", "c"]
        } else {
            vec!["a"]
        }
    };
    let (_, actions) = run((0..30).map(|m| m * MIN), &settings, |t| Inputs {
        clusters: fleet(&names, &down(t)),
        workloads: workloads.clone(),
    });
    let events: Vec<(u64, String, String)> = actions
        .iter()
        .filter(|(_, a)| a.is_event())
        .map(|(t, a)| (t / MIN, a.cluster.clone(), a.reason_label()))
        .collect();
    assert_eq!(
        events,
        [
            (1, String::new(), "storm".to_string()),
            (20, String::new(), "storm".to_string()),
            // The member still down when the guard releases starts its toleration (5 min)
            // again from the release: it is evicted at minute 25, not at once.
            (25, "a".to_string(), "cluster-unreachable".to_string()),
        ]
    );
    assert!(matches!(actions[0].1.kind, ActionKind::StormStarted { unhealthy: 3, live: 5 }));
    let held = actions.iter().filter(|(_, a)| matches!(a.kind, ActionKind::Held { by: Held::Storm, .. })).count();
    assert!(held >= 3 * 10, "evictions due during the storm are held and reported: {held}");
}

/// Members lost one at a time are failed over in turn while the share of the fleet down stays
/// at or below the threshold; the loss that takes it above starts the guard, however long ago
/// the others went (Kubernetes judges the share at each moment, not when each went).
#[test]
fn members_lost_one_by_one_are_failed_over_until_the_share_passes_the_threshold() {
    let settings = StabilitySettings::default();
    let names = ["a", "b", "c", "d", "e"];
    let workloads: Vec<WorkloadInput> = names.iter().map(|n| WorkloadInput::new(key(n), placed(&[(n, 1)]))).collect();
    // One more member lost every 10 minutes, up to 4 of 5.
    let (_, actions) = run((0..50).map(|m| m * MIN), &settings, |t| {
        let lost = ((t / (10 * MIN)) as usize).min(4);
        Inputs { clusters: fleet(&names, &names[..lost]), workloads: workloads.clone() }
    });
    // (Each workload runs nowhere else: its grace period passes with its files kept, said.)
    let events: Vec<(u64, String, String)> = actions
        .iter()
        .filter(|(_, a)| a.is_event() && !matches!(a.kind, ActionKind::GraceExpired { .. }))
        .map(|(t, a)| (t / MIN, a.cluster.clone(), a.reason_label()))
        .collect();
    let e = |m: u64, c: &str, l: &str| (m, c.to_string(), l.to_string());
    assert_eq!(events, [e(15, "a", "cluster-unreachable"), e(25, "b", "cluster-unreachable"), e(30, "", "storm")]);
}

/// Issue 46: three of five members lost 12 s apart — 24 s in all, more than the 20 s
/// toleration — are one storm from the pass the third goes: the first, lost alone for its
/// toleration, was failed over; the other two are held (and said so every pass) until the
/// share falls again. The old rule (went unhealthy within one toleration window) failed the
/// three over one by one.
#[test]
fn a_majority_lost_a_few_seconds_apart_is_a_storm_from_the_pass_it_is_a_majority() {
    let settings = StabilitySettings { default_toleration_ms: 20_000, ..Default::default() };
    let names = ["a", "b", "c", "d", "e"];
    let workloads: Vec<WorkloadInput> = names.iter().map(|n| WorkloadInput::new(key(n), placed(&[(n, 1)]))).collect();
    let down = |t: u64| -> Vec<&str> {
        let lost = [("a", 0), ("b", 12_000), ("c", 24_000)];
        lost.iter().filter(|(_, at)| t >= *at && t < 180_000).map(|(n, _)| *n).collect()
    };
    // A pass every 2 s for 4 minutes.
    let (_, actions) = run((0..120).map(|i| i * 2_000), &settings, |t| Inputs {
        clusters: fleet(&names, &down(t)),
        workloads: workloads.clone(),
    });
    let events: Vec<(u64, String, String)> = actions
        .iter()
        .filter(|(_, a)| a.is_event())
        .map(|(t, a)| (t / 1000, a.cluster.clone(), a.reason_label()))
        .collect();
    let e = |s: u64, c: &str, l: &str| (s, c.to_string(), l.to_string());
    assert_eq!(events, [e(20, "a", "cluster-unreachable"), e(24, "", "storm"), e(180, "", "storm")]);
    assert!(matches!(
        actions.iter().find(|(t, _)| *t == 24_000).map(|(_, a)| &a.kind),
        Some(ActionKind::StormStarted { unhealthy: 3, live: 5 })
    ));
    let held: BTreeSet<&str> = actions
        .iter()
        .filter(|(_, a)| matches!(a.kind, ActionKind::Held { by: Held::Storm, .. }))
        .map(|(_, a)| a.cluster.as_str())
        .collect();
    assert_eq!(held, BTreeSet::from(["b", "c"]), "b's and c's evictions are held");
}

#[test]
fn evictions_are_rate_limited_per_minute() {
    let settings = StabilitySettings { max_evictions_per_minute: 7, ..Default::default() };
    let names = ["a", "b", "c"];
    let workloads: Vec<WorkloadInput> =
        (0..20).map(|i| WorkloadInput::new(key(&format!("w{i:02}")), placed(&[("a", 1), ("b", 1)]))).collect();
    let times: Vec<u64> = (0..40).map(|i| i * 15_000).collect();
    let (state, actions) =
        run(times, &settings, |_| Inputs { clusters: fleet(&names, &["a"]), workloads: workloads.clone() });
    let at: Vec<u64> =
        actions.iter().filter(|(_, a)| matches!(a.kind, ActionKind::Evict { .. })).map(|(t, _)| *t).collect();
    assert_eq!(at.len(), 20, "all evicted in the end");
    for t in &at {
        assert!(at.iter().filter(|u| **u >= *t && **u < t + MIN).count() <= 7, "{at:?}");
    }
    // Key order: the first seven go first.
    let first: Vec<String> = actions
        .iter()
        .filter(|(t, a)| *t == at[0] && matches!(a.kind, ActionKind::Evict { .. }))
        .filter_map(|(_, a)| a.workload.as_ref().map(|k| k.name.to_string()))
        .collect();
    assert_eq!(first, (0..7).map(|i| format!("w{i:02}")).collect::<Vec<_>>());
    assert_eq!(state.workloads.len(), 20);
}

#[test]
fn move_back_waits_for_stable_for_and_is_limited_per_pass() {
    let settings = StabilitySettings { max_moves_per_pass: 2, ..Default::default() };
    let names = ["a", "b"];
    let mut workloads: Vec<WorkloadInput> = (0..5)
        .map(|i| {
            let mut w = WorkloadInput::new(key(&format!("w{i}")), placed(&[("a", 2)]));
            w.prefers = Some(BTreeSet::from(["a".to_string()]));
            w
        })
        .collect();
    let mut state = StabilityState::default();
    for t in [0, 6 * MIN] {
        state =
            step(&state, &Inputs { clusters: fleet(&names, &["a"]), workloads: workloads.clone() }, t, &settings).state;
    }
    assert_eq!(state.workloads.len(), 5);
    for w in &mut workloads {
        w.placed = placed(&[("b", 2)]);
        w.ready = placed(&[("b", 2)]);
    }
    // a recovers at 10 min.
    let mut backs = Vec::new();
    for m in 7..30 {
        let down: &[&str] = if m < 10 { &["a"] } else { &[] };
        let inputs = Inputs { clusters: fleet(&names, down), workloads: workloads.clone() };
        let s = step(&state, &inputs, m * MIN, &settings);
        for a in &s.actions {
            if let ActionKind::MoveBack { replicas } = a.kind {
                assert_eq!(replicas, 2);
                backs.push((m, a.workload.clone().map(|k| k.name.to_string()).unwrap_or_default()));
            }
        }
        state = s.state;
    }
    assert_eq!(
        backs,
        [(15, "w0".into()), (15, "w1".into()), (16, "w2".into()), (16, "w3".into()), (17, "w4".into())]
            .map(|(m, n): (u64, String)| (m, n))
    );
    // move_back = false: nobody returns.
    let off = StabilitySettings { move_back: false, ..settings };
    let (_, actions) = run((0..40).map(|m| m * MIN), &off, |t| {
        let down: &[&str] = if (1..10).contains(&(t / MIN)) { &["a"] } else { &[] };
        let mut w = workloads[0].clone();
        w.placed = if t < 7 * MIN { placed(&[("a", 2)]) } else { placed(&[("b", 2)]) };
        Inputs { clusters: fleet(&names, down), workloads: vec![w] }
    });
    assert!(actions.iter().all(|(_, a)| !matches!(a.kind, ActionKind::MoveBack { .. })));
    assert_eq!(evictions(&actions.iter().map(|(_, a)| a.clone()).collect::<Vec<_>>()), 1);
}

#[test]
fn unschedulable_replicas_move_and_distrust_the_capacity_figure() {
    let settings = StabilitySettings::default();
    let names = ["a", "b"];
    let mut w = WorkloadInput::new(key("web"), placed(&[("a", 5), ("b", 5)]));
    w.shape = 42;
    w.capacity = BTreeMap::from([("a".to_string(), 7), ("b".to_string(), 8)]);
    w.unschedulable = BTreeMap::from([("a".to_string(), Unschedulable { replicas: 3 })]);
    let mut state = StabilityState::default();
    for t in [0, MIN, 2 * MIN] {
        let s = step(&state, &Inputs { clusters: fleet(&names, &[]), workloads: vec![w.clone()] }, t, &settings);
        assert!(kinds(&s.actions).is_empty());
        state = s.state;
    }
    let s = step(&state, &Inputs { clusters: fleet(&names, &[]), workloads: vec![w.clone()] }, 3 * MIN, &settings);
    assert_eq!(kinds(&s.actions), [("a".to_string(), "unschedulable".to_string())]);
    assert!(matches!(s.actions[0].kind, ActionKind::Reschedule { replicas: 3, cap: 2 }));
    state = s.state;
    assert_eq!(state.workloads[&key("web")].cap("a", 42), Some(2));
    assert_eq!(state.workloads[&key("web")].cap("a", 41), None);
    // The figure is unchanged: the mark holds; it changes: the mark goes.
    w.placed = placed(&[("a", 2), ("b", 8)]);
    w.unschedulable.clear();
    state =
        step(&state, &Inputs { clusters: fleet(&names, &[]), workloads: vec![w.clone()] }, 4 * MIN, &settings).state;
    assert_eq!(state.workloads[&key("web")].cap("a", 42), Some(2));
    w.capacity.insert("a".into(), 9);
    let s = step(&state, &Inputs { clusters: fleet(&names, &[]), workloads: vec![w.clone()] }, 5 * MIN, &settings);
    assert!(!s.state.workloads.contains_key(&key("web")) || s.state.workloads[&key("web")].cap("a", 42).is_none());

    // Duplicated: reported once, nothing moves.
    let mut d = WorkloadInput::new(key("dup"), placed(&[("a", 5), ("b", 5)]));
    d.mobility = Mobility::Duplicated;
    d.unschedulable = BTreeMap::from([("a".to_string(), Unschedulable { replicas: 1 })]);
    let (_, actions) = run((0..10).map(|m| m * MIN), &settings, |_| Inputs {
        clusters: fleet(&names, &[]),
        workloads: vec![d.clone()],
    });
    let labels: Vec<(u64, String)> =
        actions.iter().filter(|(_, a)| a.is_event()).map(|(t, a)| (t / MIN, a.reason_label())).collect();
    assert_eq!(labels, [(3, "cannot-move".to_string())]);
}

#[test]
fn application_failover_after_its_toleration() {
    let settings = StabilitySettings::default();
    let names = ["a", "b"];
    let mut w = WorkloadInput::new(key("web"), placed(&[("a", 1), ("b", 1)]));
    w.application = Some(ApplicationRule {
        toleration_ms: 120_000,
        rule: FailoverRule { purge: Purge::Gracefully, grace_ms: Some(60_000) },
    });
    w.not_ready = BTreeSet::from(["a".to_string()]);
    w.ready = placed(&[("b", 1)]);
    let (state, actions) = run((0..5).map(|m| m * MIN), &settings, |_| Inputs {
        clusters: fleet(&names, &[]),
        workloads: vec![w.clone()],
    });
    let labels: Vec<(u64, String)> =
        actions.iter().filter(|(_, a)| a.is_event()).map(|(t, a)| (t / MIN, a.reason_label())).collect();
    assert_eq!(labels, [(2, "application-failover".to_string())]);
    assert_eq!(state.workloads[&key("web")].tasks[0].grace_ms, 60_000);
}

fn flapping_inputs(period_ms: u64, phase_ms: u64, t: u64, workloads: &[WorkloadInput]) -> Inputs {
    let down = ((t + phase_ms) / period_ms) % 2 == 1;
    let mut clusters = fleet(&["a", "b", "c"], &[]);
    if down {
        clusters[0].condition = if (t / period_ms) % 4 < 2 { Condition::NotReady } else { Condition::Unreachable };
    }
    Inputs { clusters, workloads: workloads.to_vec() }
}

proptest! {
    /// A member whose health flips faster than the toleration for 10 minutes (observed in
    /// each phase: passes at least twice per period) causes no eviction, no reschedule, no
    /// purge and no move-back.
    #[test]
    fn flapping_moves_nothing(
        period_s in 6u64..=120,
        phase_s in 0u64..120,
        pass_frac in 0.05f64..=0.5,
        n in 1usize..6,
    ) {
        let pass_s = ((period_s as f64 * pass_frac) as u64).max(1);
        let settings = StabilitySettings::default();
        let workloads: Vec<WorkloadInput> = (0..n)
            .map(|i| {
                let mut w = WorkloadInput::new(key(&format!("w{i}")), placed(&[("a", 2), ("b", 1)]));
                w.prefers = Some(BTreeSet::from(["a".to_string()]));
                w
            })
            .collect();
        let times = (0..).map(|i| i * pass_s * 1000).take_while(|t| *t <= 10 * MIN);
        let (state, actions) =
            run(times, &settings, |t| flapping_inputs(period_s * 1000, phase_s * 1000, t, &workloads));
        prop_assert!(actions.is_empty(), "{actions:?}");
        prop_assert!(state.workloads.is_empty());
    }

    /// The same state and inputs give the same step; a replay of a recorded sequence gives
    /// the same states and actions.
    #[test]
    fn deterministic(
        script in proptest::collection::vec((0u8..8, 1u64..120, 0u8..4, 0u32..4), 1..40),
        purge in 0u8..3,
    ) {
        let settings = StabilitySettings { max_evictions_per_minute: 3, min_stay_ms: MIN, ..Default::default() };
        let names = ["a", "b", "c"];
        let mut t = 0u64;
        let mut state = StabilityState::default();
        let mut trace = Vec::new();
        for (down_mask, dt, ready_mask, unsched) in script {
            t += dt * 1000;
            let down: Vec<&str> = names.iter().enumerate().filter(|(i, _)| down_mask & (1 << i) != 0).map(|(_, n)| *n).collect();
            let workloads: Vec<WorkloadInput> = (0..4).map(|i| {
                let on = names[i % 3];
                let mut w = WorkloadInput::new(key(&format!("w{i}")), placed(&[(on, 2), (names[(i + 1) % 3], 1)]));
                w.cluster_rule.purge = [Purge::Directly, Purge::Gracefully, Purge::Never][purge as usize];
                w.ready = if ready_mask & 1 != 0 { w.placed.clone() } else { BTreeMap::new() };
                w.unschedulable = BTreeMap::from([(on.to_string(), Unschedulable { replicas: unsched })]);
                w.mobility = if ready_mask & 2 != 0 { Mobility::Duplicated } else { Mobility::Divided };
                w.prefers = if unsched % 2 == 0 { None } else { Some(BTreeSet::from(["a".to_string()])) };
                w
            }).collect();
            let inputs = Inputs { clusters: fleet(&names, &down), workloads };
            let a = step(&state, &inputs, t, &settings);
            let b = step(&state, &inputs, t, &settings);
            prop_assert_eq!(&a, &b);
            // The state survives the store's encoding.
            let bytes = bincode::serde::encode_to_vec(&a.state, bincode::config::standard()).unwrap_or_default();
            let back: Option<(StabilityState, usize)> = bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).ok();
            prop_assert_eq!(back.map(|(s, _)| s), Some(a.state.clone()));
            // Never more removals in a minute than the limit.
            prop_assert!(a.state.recent_removals.len() <= settings.max_evictions_per_minute);
            trace.push((inputs, t, a.clone()));
            state = a.state;
        }
        let mut replayed = StabilityState::default();
        for (inputs, t, expected) in &trace {
            let s = step(&replayed, inputs, *t, &settings);
            prop_assert_eq!(&s, expected);
            replayed = s.state;
        }
    }

    /// Move-back never happens before the member has been healthy for `stable_for`.
    #[test]
    fn move_back_never_before_stable_for(
        down_from in 1u64..5,
        down_for in 6u64..20,
        blips in proptest::collection::vec(0u64..60, 0..4),
        stable_min in 1u64..10,
    ) {
        let settings = StabilitySettings { stable_for_ms: stable_min * MIN, min_stay_ms: 0, ..Default::default() };
        let names = ["a", "b"];
        let recovered = down_from + down_for;
        let is_down = |m: u64| (down_from..recovered).contains(&m) || blips.iter().any(|b| recovered + b == m);
        let mut w = WorkloadInput::new(key("w"), placed(&[("a", 1)]));
        w.prefers = Some(BTreeSet::from(["a".to_string()]));
        let mut state = StabilityState::default();
        let mut last_down = 0;
        let mut evicted = false;
        for m in 0..(recovered + 80) {
            let down = is_down(m);
            if down { last_down = m; }
            let inputs = Inputs { clusters: fleet(&names, if down { &["a"] } else { &[] }), workloads: vec![w.clone()] };
            let s = step(&state, &inputs, m * MIN, &settings);
            for a in &s.actions {
                match a.kind {
                    ActionKind::Evict { .. } => { evicted = true; w.placed = placed(&[("b", 1)]); }
                    ActionKind::MoveBack { .. } => {
                        prop_assert!(evicted);
                        prop_assert!(m >= last_down + 1 + stable_min, "moved back at {m}, down at {last_down}");
                        w.placed = placed(&[("a", 1)]);
                    }
                    _ => {}
                }
            }
            state = s.state;
        }
        prop_assert!(evicted);
        prop_assert_eq!(w.placed, placed(&[("a", 1)]), "it returns in the end");
    }
}

/// A ClusterTaintPolicy's `NoExecute` taint on a Ready member evicts the workloads that do not
/// tolerate it: at once without a matching toleration, after `tolerationSeconds` (counted from
/// the time the taint was added) with one, never with one without seconds; and no move-back
/// onto the member while the taint is there.
#[test]
fn a_policys_no_execute_taint_evicts_after_the_toleration_and_blocks_the_move_back() {
    let settings = StabilitySettings::default();
    let t0 = 1_000_000;
    let taint = AddedTaint {
        key: "example.com/degraded".into(),
        value: Some("net".into()),
        effect: TaintEffect::NoExecute,
        added_at_ms: t0,
        policy: "degraded".into(),
    };
    let inputs = |w: &WorkloadInput, tainted: bool| {
        let mut clusters = fleet(&["a", "b"], &[]);
        if tainted {
            clusters[0].no_execute = vec![taint.clone()];
        }
        Inputs { clusters, workloads: vec![w.clone()] }
    };
    let mut w = WorkloadInput::new(key("web"), placed(&[("a", 2), ("b", 2)]));
    w.ready = w.placed.clone();
    // No toleration: evicted in the first pass that sees the taint.
    let s = step(&StabilityState::default(), &inputs(&w, true), t0, &settings);
    assert_eq!(kinds(&s.actions), [("a".to_string(), "cluster-tainted".to_string())]);
    let text = s.actions[0].to_string();
    assert!(text.contains("tainted example.com/degraded=net:NoExecute by ClusterTaintPolicy degraded"), "{text}");
    // Moved to b; a is healthy the whole time, but no move-back while the taint holds.
    let mut moved = w.clone();
    moved.placed = placed(&[("b", 4)]);
    moved.ready = moved.placed.clone();
    let mut state = s.state;
    for dt in [MIN, 10 * MIN, 20 * MIN] {
        let s = step(&state, &inputs(&moved, true), t0 + dt, &settings);
        assert!(s.actions.iter().all(|a| !matches!(a.kind, ActionKind::MoveBack { .. })), "{:?}", s.actions);
        state = s.state;
    }
    // The taint goes: it moves back (a has been Ready for longer than stable_for).
    let s = step(&state, &inputs(&moved, false), t0 + 21 * MIN, &settings);
    assert_eq!(kinds(&s.actions), [("a".to_string(), "move-back".to_string())]);

    // Tolerated for 60 s: evicted 60 s after the taint was added, not before.
    let mut tolerant = w.clone();
    tolerant.tolerations =
        vec![tol(Some("example.com/degraded"), TolerationOperator::Exists, Some(TaintEffect::NoExecute), Some(60))];
    let s = step(&StabilityState::default(), &inputs(&tolerant, true), t0 + 59_000, &settings);
    assert_eq!(evictions(&s.actions), 0);
    let s = step(&s.state, &inputs(&tolerant, true), t0 + 60_000, &settings);
    assert_eq!(evictions(&s.actions), 1);
    assert!(s.actions[0].to_string().contains("toleration 1m of example.com/degraded:NoExecute"));
    // Tolerated without seconds: never.
    tolerant.tolerations =
        vec![tol(Some("example.com/degraded"), TolerationOperator::Exists, Some(TaintEffect::NoExecute), None)];
    let s = step(&StabilityState::default(), &inputs(&tolerant, true), t0 + 100 * MIN, &settings);
    assert_eq!(evictions(&s.actions), 0);
    // failover = false: never either.
    let off = StabilitySettings { cluster_failover: false, ..settings };
    let s = step(&StabilityState::default(), &inputs(&w, true), t0, &off);
    assert_eq!(evictions(&s.actions), 0);
}

/// Seed 49: a workload whose pods could not run on `a` (application failover, purge `Never`)
/// was moved back onto `a` as soon as `a` had been healthy for `stable_for` — which it had been
/// all along — and failed over again every few minutes. An application failover is not undone
/// by the member's health: `a` stays out while the eviction task lasts (`Never`: for good); a
/// graceful one lets `a` take part in later decisions once purged, without moving back.
#[test]
fn an_application_failover_never_moves_back_onto_the_member_its_pods_failed_on() {
    let settings = StabilitySettings::default();
    let names = ["a", "b"];
    for purge in [Purge::Never, Purge::Gracefully] {
        let rule = FailoverRule { purge, grace_ms: Some(30_000) };
        let t0 = 1_000_000;
        let at = |t: u64| {
            // On `a` until the failover at 2m, then on `b` (Ready there at once).
            let t = t - t0;
            let mut w = match t <= 2 * MIN {
                true => WorkloadInput::new(key("web"), placed(&[("a", 1)])),
                false => WorkloadInput::new(key("web"), placed(&[("b", 1)])),
            };
            w.application = Some(ApplicationRule { toleration_ms: 120_000, rule });
            if t <= 2 * MIN {
                w.not_ready = BTreeSet::from(["a".to_string()]);
            } else {
                w.ready = placed(&[("b", 1)]);
            }
            Inputs { clusters: fleet(&names, &[]), workloads: vec![w] }
        };
        let (state, actions) = run((0..=30).map(|i| t0 + i * MIN / 2), &settings, at);
        let labels: Vec<(u64, String)> =
            actions.iter().filter(|(_, a)| a.is_event()).map(|(t, a)| ((t - t0) / 1000, a.reason_label())).collect();
        let mut want = vec![(120, "application-failover".to_string())];
        if purge == Purge::Gracefully {
            want.push((150, "purge".to_string()));
        }
        assert_eq!(labels, want, "{purge:?}: no move-back onto a in 15 minutes");
        let evicted: BTreeSet<&str> = state.workloads.get(&key("web")).map(|ws| ws.evicted()).unwrap_or_default();
        let out: BTreeSet<&str> = if purge == Purge::Never { BTreeSet::from(["a"]) } else { BTreeSet::new() };
        assert_eq!(evicted, out, "{purge:?}: a stays out while the task lasts, not after");
    }
}

/// Every event's history note is known as one (the record stage leaves them out when it
/// compares a workload's notes with its last record's, read from the store or kept warm), and
/// no held action's nor a decision's own note is.
#[test]
fn every_events_note_and_only_those_is_known_as_an_events() {
    let cause =
        Cause { condition: "Unreachable: refused".into(), since_ms: 5_000, for_ms: 30_000, rule: "toleration".into() };
    let action =
        |kind: ActionKind| Action { workload: Some(key("web")), cluster: "m1".into(), kind, cause: cause.clone() };
    let events = [
        ActionKind::Evict {
            replicas: 2,
            reason: Reason::ClusterUnreachable,
            purge: Purge::Gracefully,
            grace_ms: 60_000,
        },
        ActionKind::Purge { reason: PurgeReason::ReplacementReady, of: Reason::ClusterUnreachable },
        ActionKind::Purge { reason: PurgeReason::GraceElapsed, of: Reason::Moved },
        ActionKind::Reschedule { replicas: 2, cap: 1 },
        ActionKind::CannotMove { replicas: 12 },
        ActionKind::MoveBack { replicas: 3 },
        ActionKind::StormStarted { unhealthy: 3, live: 5 },
        ActionKind::StormEnded { unhealthy: 1, live: 5 },
        ActionKind::Rebalance { rebalancer: "r".into(), generation: Some(2) },
        ActionKind::GraceExpired { grace_ms: 60_000 },
        ActionKind::Handover { replicas: 1, reason: Reason::Moved, grace_ms: 600_000 },
    ];
    for kind in events {
        let a = action(kind);
        assert!(a.is_event() && Action::is_event_note(&a.to_string()), "{a}");
    }
    let held = action(ActionKind::Held { action: "purge".into(), by: Held::MassDeletionGuard });
    assert!(!held.is_event() && !Action::is_event_note(&held.to_string()), "{held}");
    for note in [
        "m1: would remove 3 of 5 objects; held by the mass-deletion guard (confirm with --allow-mass-delete)",
        "render failed on m1, previous file kept: bad override",
        crate::reconcile::LAZY_HELD_NOTE,
        "rollout: stage 1 released: gate passed",
        "12 replicas Unschedulable",
    ] {
        assert!(!Action::is_event_note(note), "{note}");
    }
}
