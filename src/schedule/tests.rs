//! Property tests of the scheduling invariants (replicas add up, filtered clusters get nothing,
//! identical inputs give identical decisions, spread constraints hold) and table-driven tests
//! of Karmada's worked examples through the whole pipeline.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::Strategy as Division;
use super::*;
use crate::model::snapshot::{ResourceSummary, SnapshotSource};
use crate::model::{ClusterTaint, ResourceList};
use crate::policy::types::{
    ClusterAffinityTerm, ClusterPreferences, ReplicaSchedulingStrategy, SpreadByField, SpreadConstraint,
    StaticClusterWeight, TaintEffect, Toleration, TolerationOperator,
};

fn cluster(i: usize, cpu_free: i64, tainted: bool, region: bool) -> ClusterSnapshot {
    let taints = if tainted {
        vec![ClusterTaint { key: "t".into(), value: None, effect: TaintEffect::NoSchedule }]
    } else {
        vec![]
    };
    ClusterSnapshot::offline(format!("m{i:02}"), "c.yaml")
        .with_labels([("idx", (i % 3).to_string())])
        .with_region(if region { "r1" } else { "r2" })
        .with_taints(taints)
        .with_summary(ResourceSummary {
            allocatable: ResourceList::of(&[("cpu", cpu_free * 1000), ("pods", 1_000_000)]),
            ..Default::default()
        })
}

fn strategy_placement(kind: u8, tolerate: bool, weights: &[i64]) -> Placement {
    let replica_scheduling = match kind % 4 {
        0 => Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Duplicated),
            ..Default::default()
        }),
        1 => Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: Some(ReplicaDivisionPreference::Weighted),
            weight_preference: Some(ClusterPreferences {
                static_weight_list: weights
                    .iter()
                    .enumerate()
                    .map(|(i, w)| StaticClusterWeight {
                        target_cluster: ClusterAffinity {
                            label_selector: Some(crate::policy::types::LabelSelector {
                                match_labels: [("idx".to_string(), i.to_string())].into(),
                                match_expressions: vec![],
                            }),
                            ..Default::default()
                        },
                        weight: *w,
                    })
                    .collect(),
                dynamic_weight: None,
            }),
        }),
        2 => Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: Some(ReplicaDivisionPreference::Weighted),
            weight_preference: Some(ClusterPreferences {
                static_weight_list: vec![],
                dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
            }),
        }),
        _ => Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: Some(ReplicaDivisionPreference::Aggregated),
            weight_preference: None,
        }),
    };
    Placement {
        cluster_tolerations: if tolerate {
            vec![Toleration { key: Some("t".into()), operator: Some(TolerationOperator::Exists), ..Default::default() }]
        } else {
            vec![]
        },
        replica_scheduling,
        ..Default::default()
    }
}

proptest! {
    #[test]
    fn scheduling_invariants(
        caps in proptest::collection::vec((0i64..40, any::<bool>(), any::<bool>()), 1..8),
        kind in 0u8..4,
        tolerate in any::<bool>(),
        weights in proptest::collection::vec(1i64..5, 3),
        replicas in 0i32..60,
        previous in proptest::collection::btree_map(0usize..8, 0i32..10, 0..4),
        uid in proptest::option::of("[a-z0-9-]{1,12}"),
        spread in proptest::option::of((any::<bool>(), 1i32..3, 0i32..3, 1i32..4, 0i32..5)),
    ) {
        let clusters: Vec<ClusterSnapshot> =
            caps.iter().enumerate().map(|(i, (c, t, r))| cluster(i, *c, *t, *r)).collect();
        let mut placement = strategy_placement(kind, tolerate, &weights);
        if let Some((by_region, rmin, rextra, cmin, cextra)) = spread {
            let c = SpreadConstraint { spread_by_field: Some(SpreadByField::Cluster), spread_by_label: None, min_groups: cmin, max_groups: if cextra == 0 { 0 } else { cmin + cextra - 1 } };
            placement.spread_constraints.push(c);
            if by_region {
                placement.spread_constraints.push(SpreadConstraint { spread_by_field: Some(SpreadByField::Region), spread_by_label: None, min_groups: rmin, max_groups: if rextra == 0 { 0 } else { rmin + rextra - 1 } });
            }
        }
        let key = ObjectKey { api_version: "apps/v1".into(), kind: "Deployment".into(), namespace: Some("d".into()), name: "w".into() };
        let mut workload = Workload::non_workload();
        workload.replicas = Some(replicas);
        workload.requirements.request = ResourceList([("cpu".to_string(), 1000)].into());
        let previous: BTreeMap<String, i32> = previous.into_iter().map(|(i, r)| (format!("m{i:02}"), r)).collect();
        let req = ScheduleRequest { key: &key, uid: uid.as_deref(), workload: &workload, placement: &placement, previous: &previous, previous_affinity: None, failover: &NO_FAILOVER };
        let fw = Framework::karmada_default();
        let a = schedule(&fw, &req, &clusters);
        let b = schedule(&fw, &req, &clusters);
        prop_assert_eq!(&a, &b, "identical inputs must give identical decisions");
        let all = full(&a, &clusters);
        prop_assert_eq!(all.len(), clusters.len());
        prop_assert!(a.verdicts.iter().all(|v| v.feasible), "only feasible clusters keep a verdict");
        if let Outcome::Scheduled { targets } = &a.outcome {
            for name in targets.keys() {
                let v = all.iter().find(|v| &v.name == name).expect("verdict");
                prop_assert!(v.feasible, "{} was filtered but received replicas", name);
            }
            let sum: i64 = targets.values().map(|r| i64::from(r.unwrap_or(0))).sum();
            match Division::of(&placement) {
                Division::Duplicated => {
                    for r in targets.values() {
                        prop_assert_eq!(*r, Some(replicas));
                    }
                }
                _ => prop_assert_eq!(sum, i64::from(replicas), "divided replicas must add up"),
            }
            // Spread constraints hold (static weights ignore them, as in Karmada): the selection
            // has between minGroups and maxGroups groups per constraint, and replicas land only
            // on selected clusters (division may leave a selected cluster with none).
            if Division::of(&placement) != Division::StaticWeight && !placement.spread_constraints.is_empty() {
                let feasible: Vec<&ClusterVerdict> = a.verdicts.iter().filter(|v| v.feasible).collect();
                let selection = select::select_clusters(&placement, &feasible, &clusters, Division::of(&placement), Some(replicas));
                prop_assert!(selection.is_ok(), "scheduled but the selection fails: {:?}", selection.err());
                let selection: Vec<String> = selection.map(|s| s.iter().map(|v| v.name.clone()).collect()).unwrap_or_default();
                for name in targets.keys() {
                    prop_assert!(selection.contains(name), "{} received replicas without being selected", name);
                }
                for sc in &placement.spread_constraints {
                    let groups: BTreeSet<String> = selection
                        .iter()
                        .filter_map(|n| clusters.iter().find(|c| &c.name == n))
                        .map(|c| match sc.spread_by_field {
                            Some(SpreadByField::Region) => c.region.clone().unwrap_or_default(),
                            _ => c.name.clone(),
                        })
                        .collect();
                    let n = groups.len() as i32;
                    prop_assert!(n >= sc.min_groups, "{} groups < minGroups {}", n, sc.min_groups);
                    prop_assert!(sc.max_groups == 0 || n <= sc.max_groups, "{} groups > maxGroups {}", n, sc.max_groups);
                }
            }
            if Division::of(&placement) == Division::DynamicWeight || Division::of(&placement) == Division::Aggregated {
                // Never more than a cluster can hold (free + what it already runs).
                for (name, r) in targets {
                    let v = a.verdicts.iter().find(|v| &v.name == name).expect("verdict");
                    let prev = i64::from(previous.get(name).copied().unwrap_or(0));
                    prop_assert!(i64::from(r.unwrap_or(0)) <= v.available_replicas.unwrap_or(0).max(prev));
                }
            }
        }
    }

    /// The memoised path (one fleet shared by several workloads, filters evaluated once per
    /// memo key) gives the outcome and per-cluster verdicts of evaluating every filter per pair.
    #[test]
    fn memoised_filters_equal_every_filter_per_pair(
        caps in proptest::collection::vec((0i64..40, any::<bool>(), any::<bool>()), 1..10),
        workloads in proptest::collection::vec(
            (0u8..4, any::<bool>(), 0i32..20, proptest::option::of(0usize..3), proptest::collection::btree_map(0usize..10, 0i32..5, 0..3), proptest::option::of(1i64..8)),
            1..6,
        ),
        limits in proptest::collection::vec(proptest::option::of(1i64..6), 10),
        apis in any::<bool>(),
    ) {
        let mut clusters: Vec<ClusterSnapshot> =
            caps.iter().enumerate().map(|(i, (c, t, r))| cluster(i, *c, *t, *r)).collect();
        for (c, l) in clusters.iter_mut().zip(&limits) {
            c.constraints.max_replicas_per_workload = *l;
            if apis && c.name.ends_with('1') {
                c.api_enablements = std::sync::Arc::new(["v1/ConfigMap".to_string()].into());
            }
        }
        // Shuffled order: the fleet sorts by name.
        clusters.reverse();
        let fw = Framework::karmada_default();
        let shared = Fleet::new(&clusters);
        let reference = Fleet::unmemoised(&clusters);
        let key = ObjectKey { api_version: "apps/v1".into(), kind: "Deployment".into(), namespace: Some("d".into()), name: "w".into() };
        for (kind, tolerate, replicas, idx, previous, weight) in workloads {
            let mut placement = strategy_placement(kind, tolerate, &[weight.unwrap_or(1), 2, 3]);
            if let Some(i) = idx {
                placement.cluster_affinity = Some(ClusterAffinity {
                    label_selector: Some(crate::policy::types::LabelSelector {
                        match_labels: [("idx".to_string(), i.to_string())].into(),
                        match_expressions: vec![],
                    }),
                    ..Default::default()
                });
            }
            let mut workload = Workload::non_workload();
            workload.replicas = Some(replicas);
            workload.requirements.request = ResourceList([("cpu".to_string(), 1000)].into());
            let previous: BTreeMap<String, i32> = previous.into_iter().map(|(i, r)| (format!("m{i:02}"), r)).collect();
            let req = ScheduleRequest { key: &key, uid: None, workload: &workload, placement: &placement, previous: &previous, previous_affinity: None, failover: &NO_FAILOVER };
            let memo = schedule_in(&shared, &fw, &req, &clusters);
            let each = schedule_in(&reference, &fw, &req, &clusters);
            prop_assert_eq!(&memo.outcome, &each.outcome);
            prop_assert_eq!(memo.expand(shared.names()), each.expand(reference.names()));
            prop_assert_eq!(memo.feasible_clusters(), each.feasible_clusters());
        }
    }

    /// A decision that says its outcome did not read capacity ([`schedule_reads`]) gets the
    /// same outcome with any other free capacity of the same clusters (the
    /// reconciler reuses it when only those change); and one that says it did is found among
    /// the strategies and placements that can read it.
    #[test]
    fn outcomes_that_read_no_capacity_ignore_it(
        caps in proptest::collection::vec((0i64..40, 0i64..40, any::<bool>(), any::<bool>()), 1..8),
        kind in 0u8..4,
        tolerate in any::<bool>(),
        replicas in 0i32..60,
        previous in proptest::collection::btree_map(0usize..8, 0i32..20, 0..5),
        spread in proptest::option::of((1i32..3, 0i32..3)),
        affinities in any::<bool>(),
    ) {
        let before: Vec<ClusterSnapshot> =
            caps.iter().enumerate().map(|(i, (c, _, t, r))| cluster(i, *c, *t, *r)).collect();
        let after: Vec<ClusterSnapshot> = caps
            .iter()
            .enumerate()
            .map(|(i, (_, c, t, r))| cluster(i, *c, *t, *r))
            .collect();
        let mut placement = strategy_placement(kind, tolerate, &[2, 1, 1]);
        if let Some((min, extra)) = spread {
            placement.spread_constraints.push(SpreadConstraint { spread_by_field: Some(SpreadByField::Cluster), spread_by_label: None, min_groups: min, max_groups: if extra == 0 { 0 } else { min + extra - 1 } });
        }
        if affinities {
            let term = |name: &str, idx: &str| ClusterAffinityTerm {
                affinity_name: name.into(),
                label_selector: Some(crate::policy::types::LabelSelector {
                    match_labels: [("idx".to_string(), idx.to_string())].into(),
                    match_expressions: vec![],
                }),
                ..Default::default()
            };
            placement.cluster_affinities = vec![term("first", "0"), term("second", "1")];
        }
        let key = key();
        let workload = workload(replicas);
        let previous: BTreeMap<String, i32> = previous.into_iter().map(|(i, r)| (format!("m{i:02}"), r)).collect();
        let req = ScheduleRequest { key: &key, uid: None, workload: &workload, placement: &placement, previous: &previous, previous_affinity: None, failover: &NO_FAILOVER };
        let fw = Framework::karmada_default();
        let (a, reads) = schedule_reads(&Fleet::new(&before), &fw, &req, &before);
        let (b, _) = schedule_reads(&Fleet::new(&after), &fw, &req, &after);
        if !reads {
            prop_assert_eq!(&a.outcome, &b.outcome, "an outcome that read no capacity changed with it");
            prop_assert_eq!(&a.affinity_name, &b.affinity_name);
        }
        let fixed = matches!(Division::of(&placement), Division::Duplicated | Division::StaticWeight);
        if fixed && (placement.spread_constraints.is_empty() || Division::of(&placement) == Division::StaticWeight) {
            prop_assert!(!reads, "Duplicated and static weights without spread constraints read no capacity");
        }
        let divided = matches!(Division::of(&placement), Division::DynamicWeight | Division::Aggregated);
        let covered: i32 = previous.values().filter(|r| **r > 0).sum();
        if divided && placement.spread_constraints.is_empty() && !affinities && covered < replicas
            && !a.verdicts.is_empty()
        {
            prop_assert!(reads, "a scale-up of a Divided workload reads the free replicas");
        }
    }

    #[test]
    fn webster_gives_every_seat_and_respects_quota(
        weights in proptest::collection::btree_map("[a-z]{1,4}", 1i64..20, 1..10),
        total in 0i64..500,
    ) {
        let seats = assign::webster(total, &weights, assign::TieBreak::Ascending);
        prop_assert_eq!(seats.values().sum::<i64>(), total);
        // Webster satisfies quota within one seat: |seats − total·w/W| < 1 + 1 for every party
        // (Sainte-Laguë can violate quota, but never by more than a seat at these sizes).
        let w_total: i64 = weights.values().sum();
        for (name, w) in &weights {
            let quota = total as f64 * *w as f64 / w_total as f64;
            let got = seats.get(name).copied().unwrap_or(0) as f64;
            prop_assert!((got - quota).abs() < 2.0, "{}: {} seats for quota {}", name, got, quota);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Karmada's worked examples through the whole pipeline (karmada-semantics.md §2)

fn key() -> ObjectKey {
    ObjectKey {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: Some("d".into()),
        name: "w".into(),
    }
}

fn workload(replicas: i32) -> Workload {
    let mut w = Workload::non_workload();
    w.replicas = Some(replicas);
    w.requirements.request = ResourceList([("cpu".to_string(), 1000)].into());
    w
}

fn run(placement: &Placement, clusters: &[ClusterSnapshot], replicas: i32, previous: &[(&str, i32)]) -> ScheduleResult {
    run_with(&Framework::karmada_default(), placement, clusters, replicas, previous, None)
}

fn run_with(
    fw: &Framework,
    placement: &Placement,
    clusters: &[ClusterSnapshot],
    replicas: i32,
    previous: &[(&str, i32)],
    previous_affinity: Option<&str>,
) -> ScheduleResult {
    let key = key();
    let w = workload(replicas);
    let previous: BTreeMap<String, i32> = previous.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let req = ScheduleRequest {
        key: &key,
        uid: None,
        workload: &w,
        placement,
        previous: &previous,
        previous_affinity,
        failover: &NO_FAILOVER,
    };
    schedule(fw, &req, clusters)
}

/// Every cluster's verdict of a result over `clusters`.
fn full(r: &ScheduleResult, clusters: &[ClusterSnapshot]) -> Vec<ClusterVerdict> {
    r.expand(Fleet::new(clusters).names())
}

fn placed(r: &ScheduleResult) -> Vec<(String, i32)> {
    r.targets().map(|t| t.iter().map(|(k, v)| (k.clone(), v.unwrap_or(-1))).collect()).unwrap_or_default()
}

fn pairs(items: &[(&str, i32)]) -> Vec<(String, i32)> {
    items.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn karmada_examples() {
    let three: Vec<ClusterSnapshot> = (0..3).map(|i| cluster(i, 100, false, true)).collect();
    // (what, placement, replicas, previous, free cpu per cluster, expected)
    type Case = (&'static str, Placement, i32, Vec<(&'static str, i32)>, Vec<i64>, Vec<(&'static str, i32)>);
    let cases: Vec<Case> = vec![
        (
            "static 12 over 3:2:1",
            strategy_placement(1, false, &[3, 2, 1]),
            12,
            vec![],
            vec![100; 3],
            vec![("m00", 6), ("m01", 4), ("m02", 2)],
        ),
        (
            "static 13 over 3:2:1",
            strategy_placement(1, false, &[3, 2, 1]),
            13,
            vec![],
            vec![100; 3],
            vec![("m00", 7), ("m01", 4), ("m02", 2)],
        ),
        (
            "static 2 over 2:1 (#6424)",
            strategy_placement(1, false, &[2, 1, 0]),
            2,
            vec![],
            vec![100; 3],
            vec![("m00", 1), ("m01", 1)],
        ),
        (
            "duplicated",
            strategy_placement(0, false, &[]),
            3,
            vec![],
            vec![100; 3],
            vec![("m00", 3), ("m01", 3), ("m02", 3)],
        ),
        // Dynamic, steady: scale down proportionally, scale up by free capacity, equal keeps.
        (
            "dynamic scale down 12→6",
            strategy_placement(2, false, &[]),
            6,
            vec![("m00", 2), ("m01", 4), ("m02", 6)],
            vec![10; 3],
            vec![("m00", 1), ("m01", 2), ("m02", 3)],
        ),
        (
            "dynamic scale up 12→24",
            strategy_placement(2, false, &[]),
            24,
            vec![("m00", 2), ("m01", 4), ("m02", 6)],
            vec![10; 3],
            vec![("m00", 6), ("m01", 8), ("m02", 10)],
        ),
        (
            "dynamic equal keeps",
            strategy_placement(2, false, &[]),
            12,
            vec![("m00", 2), ("m01", 4), ("m02", 6)],
            vec![10; 3],
            vec![("m00", 2), ("m01", 4), ("m02", 6)],
        ),
        (
            "dynamic first schedule",
            strategy_placement(2, false, &[]),
            12,
            vec![],
            vec![6, 8, 10],
            vec![("m00", 3), ("m01", 4), ("m02", 5)],
        ),
        // Aggregated: fewest clusters, largest first; a scale-up stays on the used clusters.
        (
            "aggregated first 12 over 6/8/10",
            strategy_placement(3, false, &[]),
            12,
            vec![],
            vec![6, 8, 10],
            vec![("m01", 5), ("m02", 7)],
        ),
        (
            "aggregated 12→24 stays",
            strategy_placement(3, false, &[]),
            24,
            vec![("m00", 4), ("m01", 8)],
            vec![6, 6, 20],
            vec![("m00", 10), ("m01", 14)],
        ),
    ];
    for (what, placement, replicas, previous, free, want) in cases {
        // Free capacity excludes what the workload already runs (available = free + assigned).
        let clusters: Vec<ClusterSnapshot> = three
            .iter()
            .zip(&free)
            .map(|(c, f)| {
                let mut c = c.clone();
                let already = previous.iter().find(|(n, _)| *n == c.name).map(|(_, r)| i64::from(*r)).unwrap_or(0);
                c.summary = Some(std::sync::Arc::new(ResourceSummary {
                    allocatable: ResourceList(
                        [("cpu".to_string(), (f + already) * 1000), ("pods".to_string(), 1_000_000)].into(),
                    ),
                    allocated: ResourceList([("cpu".to_string(), already * 1000)].into()),
                    ..Default::default()
                }));
                c
            })
            .collect();
        let r = run(&placement, &clusters, replicas, &previous);
        assert_eq!(placed(&r), pairs(&want), "{what}: {:?}", r.outcome);
    }
}

#[test]
fn taints_filter_unless_tolerated_or_already_there() {
    let clusters = vec![cluster(0, 10, true, true), cluster(1, 10, false, true)];
    let p = strategy_placement(0, false, &[]);
    let r = run(&p, &clusters, 1, &[]);
    assert_eq!(placed(&r), pairs(&[("m01", 1)]));
    let all = full(&r, &clusters);
    assert!(all[0].reasons[0].contains("untolerated taint {t:NoSchedule}"), "{:?}", all[0].reasons);
    let r = run(&strategy_placement(0, true, &[]), &clusters, 1, &[]);
    assert_eq!(placed(&r), pairs(&[("m00", 1), ("m01", 1)]));
    // Already scheduled there: eviction is failover's business, not the filter's.
    let r = run(&p, &clusters, 1, &[("m00", 1)]);
    assert_eq!(placed(&r), pairs(&[("m00", 1), ("m01", 1)]));
}

/// Issue 46, invariant 4: a member seen NotReady or Unreachable (Karmada's cluster controller
/// taints it `NoSchedule` at once) keeps the replicas it has and gets no new ones, whatever
/// the division: a scale-up 6 → 12 puts every new replica on the Ready members. A policy that
/// tolerates the taint gets Karmada's division (the member is schedulable for it).
#[test]
fn a_member_not_ready_keeps_its_replicas_and_takes_no_new_ones() {
    use crate::schedule::stability::{TAINT_NOT_READY, TAINT_UNREACHABLE};
    for key in [TAINT_UNREACHABLE, TAINT_NOT_READY] {
        let mut clusters: Vec<ClusterSnapshot> = (0..3).map(|i| cluster(i, 100, false, true)).collect();
        clusters[0].taints.push(ClusterTaint { key: key.into(), value: None, effect: TaintEffect::NoSchedule });
        // (strategy, previous replicas per member, the lost member's replicas after 6 → 12)
        for (kind, previous, expect) in [(0u8, 6, 6), (1, 2, 2), (2, 2, 2), (3, 2, 2)] {
            let p = strategy_placement(kind, false, &[1, 1, 1]);
            let prev = [("m00", previous), ("m01", previous), ("m02", previous)];
            let r = run(&p, &clusters, 12, &prev);
            let got: BTreeMap<String, i32> = placed(&r).into_iter().collect();
            assert_eq!(got.get("m00"), Some(&expect), "{key} strategy {kind}: {got:?}");
            if kind != 0 {
                assert_eq!(got.values().sum::<i32>(), 12, "{key} strategy {kind}: {got:?}");
            } else {
                assert_eq!((got.get("m01"), got.get("m02")), (Some(&12), Some(&12)), "{got:?}");
            }
            // Fewer replicas: it may lose some (a scale-down is no new replica).
            let r = run(&p, &clusters, 3, &prev);
            let got: BTreeMap<String, i32> = placed(&r).into_iter().collect();
            assert!(got.get("m00").is_none_or(|r| *r <= previous.min(3)), "{key} strategy {kind}: {got:?}");
            // Not placed there before: the filter keeps it out.
            let r = run(&p, &clusters, 12, &[]);
            assert!(placed(&r).iter().all(|(c, _)| c != "m00"), "{key} strategy {kind}: {:?}", placed(&r));
            // Tolerated: Karmada's division, the member takes its share.
            let mut tolerant = p.clone();
            tolerant.cluster_tolerations.push(Toleration {
                key: Some(key.into()),
                operator: Some(TolerationOperator::Exists),
                effect: Some(TaintEffect::NoSchedule),
                ..Default::default()
            });
            let r = run(&tolerant, &clusters, 12, &prev);
            let got: BTreeMap<String, i32> = placed(&r).into_iter().collect();
            assert!(got.get("m00").is_some_and(|r| *r > previous.min(expect) || kind == 3), "{key} {kind}: {got:?}");
        }
        // Dynamic weights say why in the verdict.
        let r = run(&strategy_placement(2, false, &[]), &clusters, 12, &[("m00", 2), ("m01", 2), ("m02", 2)]);
        let all = full(&r, &clusters);
        assert!(
            all[0].reasons.iter().any(|r| r.contains("member not Ready") && r.contains("keeps its 2 replicas")),
            "{:?}",
            all[0].reasons
        );
    }
}

/// Static weights with a member that takes no new replicas: the others share the rest by their
/// weights; when nobody can take them, the decision says why.
#[test]
fn static_weights_around_a_member_that_takes_no_new_replicas() {
    let tie = assign::TieBreak::Ascending;
    let w: BTreeMap<String, i64> = [("a", 1), ("b", 1), ("c", 2)].iter().map(|(n, w)| (n.to_string(), *w)).collect();
    let caps: BTreeMap<String, i64> = [("a".to_string(), 1)].into();
    let got = assign::webster_capped(12, &w, &caps, tie).expect("fits");
    assert_eq!(got.get("a"), Some(&1), "{got:?}");
    assert_eq!(got.values().sum::<i64>(), 12);
    assert!(got["c"] >= got["b"], "{got:?}");
    assert_eq!(assign::webster_capped(12, &w, &BTreeMap::new(), tie), Some(assign::webster(12, &w, tie)));
    let only: BTreeMap<String, i64> = [("a".to_string(), 1)].into();
    assert_eq!(assign::webster_capped(4, &only, &caps, tie), None);
    assert_eq!(assign::webster_capped(1, &only, &caps, tie), Some(only.clone()));
}

#[test]
fn affinity_groups_first_fitting_term_and_stickiness() {
    let clusters = vec![cluster(0, 2, false, true), cluster(1, 20, false, false)];
    let term = |name: &str, cluster: &str| ClusterAffinityTerm {
        affinity_name: name.into(),
        cluster_names: vec![cluster.into()],
        ..Default::default()
    };
    let mut p = strategy_placement(2, false, &[]);
    p.cluster_affinities = vec![term("primary", "m00"), term("backup", "m01")];
    // 2 replicas fit the primary term.
    let r = run(&p, &clusters, 2, &[]);
    assert_eq!((placed(&r), r.affinity_name.as_deref()), (pairs(&[("m00", 2)]), Some("primary")));
    // 5 do not: the backup term takes them.
    let r = run(&p, &clusters, 5, &[]);
    assert_eq!((placed(&r), r.affinity_name.as_deref()), (pairs(&[("m01", 5)]), Some("backup")));
    // Once on the backup term it stays there, even when the primary could hold them again.
    let fw = Framework::karmada_default();
    let r = run_with(&fw, &p, &clusters, 2, &[("m01", 5)], Some("backup"));
    assert_eq!((placed(&r), r.affinity_name.as_deref()), (pairs(&[("m01", 2)]), Some("backup")));
    // Nothing fits anywhere: unschedulable, with the reason.
    let r = run(&p, &clusters, 50, &[]);
    assert!(matches!(r.outcome, Outcome::Unschedulable { .. }), "{:?}", r.outcome);
}

#[test]
fn spread_by_region_through_the_pipeline() {
    // m00, m02 in r1 (region = true for even), m01, m03 in r2; plus an r3 cluster.
    let mut clusters: Vec<ClusterSnapshot> = (0..4).map(|i| cluster(i, 10 + i as i64, false, i % 2 == 0)).collect();
    let mut r3 = cluster(4, 50, false, true);
    r3.region = Some("r3".into());
    clusters.push(r3);
    let mut p = strategy_placement(2, false, &[]);
    p.spread_constraints = vec![
        SpreadConstraint {
            spread_by_field: Some(SpreadByField::Region),
            spread_by_label: None,
            min_groups: 2,
            max_groups: 2,
        },
        SpreadConstraint {
            spread_by_field: Some(SpreadByField::Cluster),
            spread_by_label: None,
            min_groups: 2,
            max_groups: 2,
        },
    ];
    let r = run(&p, &clusters, 20, &[]);
    let regions: BTreeSet<String> = placed(&r)
        .iter()
        .filter_map(|(n, _)| clusters.iter().find(|c| &c.name == n).and_then(|c| c.region.clone()))
        .collect();
    assert_eq!(regions.len(), 2, "{:?}", r.outcome);
    // Karmada caps a group's score at the target (⌈20/2⌉ = 10 replicas): every region
    // reaches it, so the scores tie and the regions holding more clusters (r1, r2) win over
    // r3 despite its 50 free replicas; the best cluster of each is taken.
    assert_eq!(placed(&r).iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), vec!["m02", "m03"]);
    assert_eq!(placed(&r).iter().map(|(_, r)| r).sum::<i32>(), 20);
}

/// One cluster with `free` CPUs (1 CPU per replica) in `region`.
fn regional(name: &str, region: &str, free: i64) -> ClusterSnapshot {
    ClusterSnapshot::offline(name, "c.yaml").with_region(region).with_summary(ResourceSummary {
        allocatable: ResourceList::of(&[("cpu", free * 1000), ("pods", 1_000_000)]),
        ..Default::default()
    })
}

fn spread(field: SpreadByField, min: i32, max: i32) -> SpreadConstraint {
    SpreadConstraint { spread_by_field: Some(field), spread_by_label: None, min_groups: min, max_groups: max }
}

/// Issue 16: a tie between clusters of exactly equal capacity under Aggregated division, on a
/// first schedule with a region spread constraint, goes as in Karmada: by the region-selection
/// order, not by cluster name.
#[test]
fn aggregated_ties_follow_karmadas_region_selection_order() {
    // Three regions of one cluster each, 10 free replicas everywhere; the names run against
    // the regions' order (east < north < west, but z-east > m-north > a-west).
    let clusters =
        vec![regional("a-west", "west", 10), regional("m-north", "north", 10), regional("z-east", "east", 10)];
    let mut p = strategy_placement(3, false, &[]);
    p.spread_constraints = vec![spread(SpreadByField::Region, 3, 3), spread(SpreadByField::Cluster, 3, 3)];
    let r = run(&p, &clusters, 15, &[]);
    // Karmada, by hand (pkg/scheduler/core):
    // - every cluster is feasible, score 0 (nothing placed yet), 10 available replicas;
    // - region scores (calcGroupScore, Divided): target ⌈15/3⌉ = 5, each region's one cluster
    //   holds 10 ≥ 5: 5·1000 + 0 = 5000 for all three (fedsched's formula gives 6000 for all:
    //   a tie either way);
    // - selectGroups(min 3, max 3, target = cluster minGroups 3): groups sorted value asc,
    //   weight desc, name asc = east, north, west; the only feasible path takes all three,
    //   its groups sorted weight desc, name asc: east, north, west;
    // - selectBestClustersByRegion: the best cluster of each region in that order, z-east,
    //   m-north, a-west; needCnt = min(3, cluster maxGroups 3) = 3, nothing more to add;
    // - dynamicScaleUp: target 15 − 0; the candidates with their 10 allocatable replicas,
    //   sort.Sort by replicas (3 elements: insertion sort, nothing moves): z-east, m-north,
    //   a-west; Aggregated: nothing placed before, no reordering; the shortest prefix with
    //   ≥ 15 replicas: z-east, m-north (20);
    // - Webster, 15 seats over 10:10, empty UID (name ascending on ties): m-north 8, z-east 7.
    // Sorting the tie by name instead (fedsched before) gave a-west 8, m-north 7.
    assert_eq!(placed(&r), pairs(&[("m-north", 8), ("z-east", 7)]), "{:?}", r.outcome);
}

/// Issue 16: Karmada caps a region's score at ⌈replicas / minGroups⌉, so a region that can
/// just hold the replicas ties with a bigger one and the region order decides.
#[test]
fn region_scores_tie_at_karmadas_target() {
    let clusters = vec![regional("e1", "east", 10), regional("w1", "west", 30)];
    let mut p = strategy_placement(3, false, &[]);
    p.spread_constraints = vec![spread(SpreadByField::Region, 1, 1), spread(SpreadByField::Cluster, 1, 1)];
    let r = run(&p, &clusters, 10, &[]);
    // Karmada: target ⌈10/1⌉ = 10; east holds 10, west 30: both score 10·1000 + 0. selectGroups
    // (1 group, target 1): groups by value asc, weight desc, name asc = east, west; paths
    // [east] (id 0) and [west] (id 1) tie on weight and value: the first found, east. Its
    // best cluster e1 takes the 10 replicas. (A target of ⌊10/1⌋+1 = 11 made west win.)
    assert_eq!(placed(&r), pairs(&[("e1", 10)]), "{:?}", r.outcome);
}

/// Issue 16: scaling an Aggregated workload down over more than 12 previous clusters orders
/// them as Karmada's `sort.Sort` (Go's pdqsort, not stable) does, not by name.
#[test]
fn aggregated_scale_down_over_13_previous_clusters_follows_go_sort() {
    let clusters: Vec<ClusterSnapshot> = (0..13).map(|i| cluster(i, 100, false, true)).collect();
    let reps = [2, 2, 2, 2, 2, 1, 2, 1, 2, 2, 1, 1, 1];
    let names: Vec<String> = (0..13).map(|i| format!("m{i:02}")).collect();
    let previous: Vec<(&str, i32)> = names.iter().map(String::as_str).zip(reps).collect();
    let r = run(&strategy_placement(3, false, &[]), &clusters, 5, &previous);
    // Karmada: 21 replicas placed, 5 wanted: dynamicScaleDown sorts spec.clusters (by name)
    // by replicas with Go's sort.Sort: m06, m01, m02, m03, m04, m00, m08, m09, then the 1s
    // (derivation in schedule::assign's aggregated_scale_down test, checked against Go in
    // util::gosort); the shortest prefix covering 5 is m06, m01, m02 (6); Webster, 5 seats
    // over 2:2:2, names ascending on ties: m01 2, m02 2, m06 1.
    // By name (fedsched before): m00 2, m01 2, m02 1.
    assert_eq!(placed(&r), pairs(&[("m01", 2), ("m02", 2), ("m06", 1)]), "{:?}", r.outcome);
}

#[test]
fn profiles_change_the_choice_as_documented() {
    use crate::schedule::profile::{CostTable, Price, PriceEntry, ProfileConfig, Profiles};
    // m00 is nearly empty, m01 half full; both can hold the replica.
    let mut clusters = vec![cluster(0, 100, false, true), cluster(1, 100, false, false)];
    if let Some(s) = clusters[1].summary.as_mut().map(std::sync::Arc::make_mut) {
        s.allocated = ResourceList([("cpu".to_string(), 50_000)].into());
    }
    let mut p = strategy_placement(0, false, &[]);
    p.spread_constraints = vec![SpreadConstraint {
        spread_by_field: Some(SpreadByField::Cluster),
        spread_by_label: None,
        min_groups: 1,
        max_groups: 1,
    }];
    let prof = |scores: &[(&str, i64)]| ProfileConfig {
        scores: scores.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..Default::default()
    };
    let cost = CostTable {
        regions: [
            ("r1".to_string(), PriceEntry { spot: false, prices: [("cpu".to_string(), Price(0.05))].into() }),
            ("r2".to_string(), PriceEntry { spot: true, prices: [("cpu".to_string(), Price(0.02))].into() }),
        ]
        .into(),
        ..Default::default()
    };
    let profiles = Profiles::from_config(
        &[
            ("spread".to_string(), prof(&[("least-allocated", 1)])),
            ("binpack".to_string(), prof(&[("most-allocated", 1)])),
            ("cheap".to_string(), prof(&[("cost-first", 1)])),
        ]
        .into(),
        &cost,
    )
    .expect("valid");
    let pick = |name: &str| {
        let fw = profiles.get(name).expect("profile");
        placed(&run_with(fw, &p, &clusters, 1, &[], None)).into_iter().map(|(n, _)| n).collect::<Vec<_>>()
    };
    // Karmada: no score difference, more available replicas wins (m00 has 100 free vs 50).
    assert_eq!(pick("karmada-default"), vec!["m00"]);
    assert_eq!(pick("spread"), vec!["m00"]);
    assert_eq!(pick("binpack"), vec!["m01"]);
    assert_eq!(pick("cheap"), vec!["m01"]);
    let fw = profiles.get("binpack").expect("profile");
    let r = run_with(fw, &p, &clusters, 1, &[], None);
    assert_eq!(r.verdicts[1].scores, vec![("most-allocated".into(), 100)]);
    assert_eq!(r.verdicts[0].scores, vec![("most-allocated".into(), 0)], "normalised per plugin");
}

// ---------------------------------------------------------------------------------------------
// The resource model in the scheduler: confidence, reserve, per-workload limit.

fn dynamic_placement() -> Placement {
    strategy_placement(2, false, &[])
}

fn web(replicas: i32) -> (ObjectKey, Workload) {
    let key = ObjectKey {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: Some("d".into()),
        name: "w".into(),
    };
    let mut w = Workload::non_workload();
    w.replicas = Some(replicas);
    w.requirements.request = ResourceList([("cpu".to_string(), 1000)].into());
    (key, w)
}

fn run_model(clusters: &[ClusterSnapshot], replicas: i32, previous: &BTreeMap<String, i32>) -> ScheduleResult {
    let (key, workload) = web(replicas);
    let placement = dynamic_placement();
    let req = ScheduleRequest {
        key: &key,
        uid: None,
        workload: &workload,
        placement: &placement,
        previous,
        previous_affinity: None,
        failover: &NO_FAILOVER,
    };
    schedule(&Framework::karmada_default(), &req, clusters)
}

fn with_confidence(mut c: ClusterSnapshot, confidence: f64) -> ClusterSnapshot {
    c.source = SnapshotSource::Live { endpoint: "https://m".into() };
    c.freshness = Some(crate::model::Freshness {
        polled_at_ms: 1,
        consecutive_failures: 1,
        age_ms: 900_000,
        confidence_ppm: (confidence * 1e6) as u32,
    });
    c
}

#[test]
fn confidence_discounts_and_below_the_threshold_admits_no_new_replicas() {
    // (confidence, previous replicas on m00, available replicas of m00, m00 feasible)
    let cases = [(1.0, 0, 10, true), (0.5, 0, 5, true), (0.1, 0, 0, false), (0.1, 3, 3, true)];
    for (confidence, prev, available, feasible) in cases {
        let clusters = vec![with_confidence(cluster(0, 10, false, true), confidence), cluster(1, 10, false, true)];
        let previous: BTreeMap<String, i32> =
            if prev > 0 { [("m00".to_string(), prev)].into() } else { BTreeMap::new() };
        let r = run_model(&clusters, 6, &previous);
        let all = full(&r, &clusters);
        let v = &all[0];
        assert_eq!(v.feasible, feasible, "{confidence}: {v:?}");
        if feasible {
            assert_eq!(v.available_replicas, Some(available), "{confidence}: {v:?}");
        } else {
            assert!(v.reasons.iter().any(|r| r.contains("confidence is below 0.20")), "{v:?}");
        }
        if confidence < 1.0 && feasible {
            assert!(v.reasons.iter().any(|r| r.starts_with(MODEL_PREFIX) && r.contains("confidence")), "{v:?}");
        }
    }
}

#[test]
fn fresh_data_gives_karmadas_result() {
    // Confidence 1 (fresh poll) is exactly the offline (Karmada) decision.
    let offline = vec![cluster(0, 7, false, true), cluster(1, 3, false, true)];
    let fresh =
        vec![with_confidence(cluster(0, 7, false, true), 1.0), with_confidence(cluster(1, 3, false, true), 1.0)];
    let (a, b) = (run_model(&offline, 8, &BTreeMap::new()), run_model(&fresh, 8, &BTreeMap::new()));
    assert_eq!(a.outcome, b.outcome);
    assert_eq!(a.targets().map(|t| t.get("m00").copied()), Some(Some(Some(6))));
}

#[test]
fn reserve_and_per_workload_limit() {
    let mut reserved = cluster(0, 10, false, true);
    reserved.constraints.reserve = vec![("cpu".into(), crate::model::Reserve::Basis(2000))];
    let mut limited = cluster(1, 10, false, true);
    limited.constraints.max_replicas_per_workload = Some(3);
    let r = run_model(&[reserved, limited], 20, &BTreeMap::new());
    // 10 CPU with 20 % kept free ⇒ 8; the other is capped at 3 per workload.
    assert_eq!(r.verdicts[0].available_replicas, Some(8), "{:?}", r.verdicts[0]);
    assert!(r.verdicts[0].estimates.iter().any(|(e, n)| e == "cluster-reserve" && *n == 8), "{:?}", r.verdicts[0]);
    assert!(r.verdicts[0].reasons.iter().any(|x| x == "model: reserve: 2 of cpu kept free"), "{:?}", r.verdicts[0]);
    assert_eq!(r.verdicts[1].available_replicas, Some(3));
    // Duplicated: a cluster that allows fewer replicas than asked is filtered.
    let mut limited = cluster(0, 100, false, true);
    limited.constraints.max_replicas_per_workload = Some(3);
    let (key, workload) = web(5);
    let placement = strategy_placement(0, false, &[]);
    let previous = BTreeMap::new();
    let req = ScheduleRequest {
        key: &key,
        uid: None,
        workload: &workload,
        placement: &placement,
        previous: &previous,
        previous_affinity: None,
        failover: &NO_FAILOVER,
    };
    let clusters = [limited, cluster(1, 100, false, true)];
    let r = schedule(&Framework::karmada_default(), &req, &clusters);
    let all = full(&r, &clusters);
    assert!(!all[0].feasible && all[0].reasons[0].starts_with("replica-limit:"), "{:?}", all[0]);
}

/// Strategies kept apart from `super::*`, whose `Strategy` (the division) shadows proptest's.
mod drawn {
    use proptest::prelude::*;

    /// Up to 12 distinct names in name order, and the same names shuffled.
    pub fn names_and_a_shuffle() -> impl Strategy<Value = (Vec<String>, Vec<String>)> {
        proptest::collection::btree_set("[a-e]{1,3}", 0..12)
            .prop_map(|s| s.into_iter().collect::<Vec<String>>())
            .prop_flat_map(|names| (Just(names.clone()), Just(names).prop_shuffle()))
    }
}

proptest! {
    /// Marking the selected verdicts gives what a lookup per verdict gives, whatever the
    /// verdicts' order (the one walk of both serves the name order only).
    #[test]
    fn selected_verdicts_are_marked_in_any_order(
        (names, shuffled) in drawn::names_and_a_shuffle(),
        picks in proptest::collection::vec((any::<bool>(), proptest::option::of(0i32..5)), 12),
    ) {
        let targets: BTreeMap<String, Option<i32>> = names
            .iter()
            .zip(&picks)
            .filter(|(_, (pick, _))| *pick)
            .map(|(n, (_, r))| (n.clone(), *r))
            .collect();
        let orders = [names.clone(), shuffled, names.iter().rev().cloned().collect()];
        for order in orders {
            let mut verdicts: Vec<ClusterVerdict> =
                order.iter().map(|n| ClusterVerdict::rejected(n.clone(), Vec::new())).collect();
            mark_selected(&mut verdicts, &targets);
            for v in &verdicts {
                prop_assert_eq!(v.selected, targets.contains_key(&v.name), "{:?} in {:?}", v.name, order);
                prop_assert_eq!(v.replicas, targets.get(&v.name).copied().flatten());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A result checked against changed capacity (`outcome_stands`) without scheduling again.

proptest! {
    /// Whatever the clusters' capacity becomes, a result stands exactly when scheduling again
    /// gives its outcome: through every verdict computed again (`changed` unknown), and through
    /// only the changed clusters' verdicts while the scores read static facts (Karmada's
    /// default profile); a profile whose scores read capacity takes the first way.
    #[test]
    fn a_result_stands_exactly_when_scheduling_again_gives_its_outcome(
        caps in proptest::collection::vec((1i64..40, any::<bool>()), 2..9),
        changes in proptest::collection::btree_map(0usize..9, -20i64..20, 1..3),
        kind in 0u8..4,
        replicas in 1i32..30,
        previous in proptest::collection::btree_map(0usize..9, 1i32..6, 0..3),
        (by_region, cmin, cextra) in (any::<bool>(), 1i32..3, 0i32..3),
        least_allocated in any::<bool>(),
    ) {
        use crate::schedule::profile::{CostTable, ProfileConfig, Profiles};
        let before: Vec<ClusterSnapshot> = caps.iter().enumerate().map(|(i, (c, r))| cluster(i, *c, false, *r)).collect();
        let mut after = before.clone();
        for (i, delta) in &changes {
            if let Some(c) = after.get_mut(*i) {
                *c = cluster(*i, (caps[*i].0 + delta).max(0), false, caps[*i].1);
            }
        }
        let mut placement = strategy_placement(kind, false, &[1, 2, 3]);
        placement.spread_constraints.push(SpreadConstraint { spread_by_field: Some(SpreadByField::Cluster), spread_by_label: None, min_groups: cmin, max_groups: if cextra == 0 { 0 } else { cmin + cextra } });
        if by_region {
            placement.spread_constraints.push(SpreadConstraint { spread_by_field: Some(SpreadByField::Region), spread_by_label: None, min_groups: 1, max_groups: 2 });
        }
        let profiles = Profiles::from_config(
            &[("spread".to_string(), ProfileConfig { scores: [("least-allocated".to_string(), 1)].into(), ..Default::default() })].into(),
            &CostTable::default(),
        ).expect("valid");
        let fw = match least_allocated {
            true => profiles.get("spread").expect("profile"),
            false => profiles.get("karmada-default").expect("profile"),
        };
        prop_assert_eq!(fw.scores_static(), !least_allocated);
        let key = key();
        let w = workload(replicas);
        let previous: BTreeMap<String, i32> = previous.into_iter().map(|(i, r)| (format!("m{i:02}"), r)).collect();
        let req = ScheduleRequest { key: &key, uid: None, workload: &w, placement: &placement, previous: &previous, previous_affinity: None, failover: &NO_FAILOVER };
        let made = schedule(fw, &req, &before);
        prop_assume!(matches!(made.outcome, Outcome::Scheduled { .. }));
        let scheduled_again = schedule(fw, &req, &after);
        let again = scheduled_again.outcome == made.outcome;
        // The verdicts it stands on are those scheduling again computes: what a caller keeps
        // for the clusters' new state (warm = cold).
        let figures = |v: &[ClusterVerdict]| -> Vec<_> {
            v.iter()
                .filter(|v| v.feasible)
                .map(|v| (v.name.clone(), v.available_replicas, v.score, v.scores.clone(), v.estimates.clone(), v.reasons.clone()))
                .collect()
        };
        let on = |stands: &Stands| match stands {
            Stands::No => None,
            Stands::Held => Some(figures(&made.verdicts)),
            Stands::On(v) => Some(figures(v)),
        };
        let fleet = Fleet::new(&after);
        let stands = outcome_stands(&fleet, fw, &req, &after, (&made.verdicts, &made.outcome), (None, None));
        prop_assert_eq!(stands.stands(), again);
        if let Some(on) = on(&stands) {
            prop_assert_eq!(on, figures(&scheduled_again.verdicts));
        }
        let changed: Vec<HeldIx> = made
            .verdicts
            .iter()
            .enumerate()
            .filter(|(_, v)| changes.keys().any(|i| format!("m{i:02}") == v.name))
            .map(|(k, _)| HeldIx::new(k))
            .collect();
        let stands = outcome_stands(&fleet, fw, &req, &after, (&made.verdicts, &made.outcome), (None, Some(&changed)));
        prop_assert_eq!(stands.stands(), again);
        if let Some(on) = on(&stands) {
            prop_assert_eq!(on, figures(&scheduled_again.verdicts));
        }
        // The held verdicts' clusters given by index (as the reconciler's cache keeps them).
        let at = |list: &[ClusterSnapshot]| -> Vec<ViewIx> {
            let mut at: Vec<ViewIx> =
                made.verdicts.iter().filter_map(|v| list.iter().position(|c| c.name == v.name)).map(ViewIx::new).collect();
            at.sort_unstable();
            at
        };
        prop_assert_eq!(outcome_stands(&fleet, fw, &req, &after, (&made.verdicts, &made.outcome), (Some(&at(&after)), Some(&changed))).stands(), again);
        prop_assert_eq!(outcome_stands(&fleet, fw, &req, &after, (&made.verdicts, &made.outcome), (Some(&at(&after)), None)).stands(), again);
        // Snapshots not in name order: the indices (and the changed ones, which index them as
        // the cache's state does) do not line up with the verdicts one for one.
        let reversed: Vec<ClusterSnapshot> = after.iter().rev().cloned().collect();
        let reversed_at = at(&reversed);
        let reversed_changed: Vec<HeldIx> = reversed_at
            .iter()
            .enumerate()
            .filter(|(_, i)| changes.keys().any(|c| format!("m{c:02}") == reversed[i.index()].name))
            .map(|(k, _)| HeldIx::new(k))
            .collect();
        let given = (Some(&reversed_at[..]), Some(&reversed_changed[..]));
        prop_assert_eq!(outcome_stands(&Fleet::new(&reversed), fw, &req, &reversed, (&made.verdicts, &made.outcome), given).stands(), again);
        // Nothing changed: it stands.
        prop_assert!(outcome_stands(&Fleet::new(&before), fw, &req, &before, (&made.verdicts, &made.outcome), (None, Some(&[]))).stands());
        prop_assert!(outcome_stands(&Fleet::new(&before), fw, &req, &before, (&made.verdicts, &made.outcome), (Some(&at(&before)), Some(&[]))).stands());
    }
}

#[test]
fn a_result_with_ordered_affinity_terms_is_scheduled_again() {
    let clusters: Vec<ClusterSnapshot> = (0..3).map(|i| cluster(i, 10, false, true)).collect();
    let mut placement = strategy_placement(2, false, &[]);
    placement.cluster_affinities = vec![ClusterAffinityTerm { affinity_name: "a".into(), ..Default::default() }];
    let (key, w, previous) = (key(), workload(3), BTreeMap::new());
    let req = ScheduleRequest {
        key: &key,
        uid: None,
        workload: &w,
        placement: &placement,
        previous: &previous,
        previous_affinity: None,
        failover: &NO_FAILOVER,
    };
    let fw = Framework::karmada_default();
    let made = schedule(&fw, &req, &clusters);
    assert!(matches!(made.outcome, Outcome::Scheduled { .. }));
    assert!(
        !outcome_stands(&Fleet::new(&clusters), &fw, &req, &clusters, (&made.verdicts, &made.outcome), (None, None))
            .stands(),
        "terms are tried in turn"
    );
}

// ---------------------------------------------------------------------------------------------
// A decision's estimates split across the pool's threads (`util::threads::split_zip`).

/// A live member of two nodes with `i % 7` free cores between them, its summary saying the
/// same; every fifth is heard from less (a confidence discount), every eleventh allows two
/// replicas per workload: every kind of note a verdict can carry.
fn live_member(i: usize) -> ClusterSnapshot {
    use crate::model::NodeView;
    let cpu = (i % 7) as i64 * 1000;
    let node = |n: &str, cpu: i64| {
        NodeView::ready(
            format!("m{i:03}-{n}"),
            ResourceList::of(&[("cpu", cpu), ("memory", 8 << 30), ("pods", 110_000)]),
        )
    };
    let mut c = ClusterSnapshot::live(format!("m{i:03}"), "https://m")
        .with_nodes(vec![node("a", cpu / 2), node("b", cpu - cpu / 2)])
        .with_summary(ResourceSummary {
            allocatable: ResourceList::of(&[("cpu", cpu), ("memory", 16 << 30), ("pods", 220_000)]),
            ..Default::default()
        });
    if i.is_multiple_of(5) {
        c = with_confidence(c, 0.6);
    }
    if i.is_multiple_of(11) {
        c = c.with_constraints(crate::model::snapshot::ClusterConstraints {
            max_replicas_per_workload: Some(2),
            ..Default::default()
        });
    }
    c
}

#[test]
fn a_decision_split_across_threads_is_the_decision_made_on_one() {
    // 300 feasible clusters: runs of at least `PARALLEL_VERDICTS` on every thread of a
    // machine with up to four cores.
    let clusters: Vec<ClusterSnapshot> = (0..300).map(live_member).collect();
    assert!(clusters.len() >= 4 * PARALLEL_VERDICTS);
    let previous: BTreeMap<String, i32> = [("m007".to_string(), 3), ("m250".to_string(), 1)].into();
    for replicas in [1, 40, 900] {
        let one = run_model(&clusters, replicas, &previous);
        let split = crate::util::threads::on_pool(|| run_model(&clusters, replicas, &previous));
        assert_eq!(split, one, "{replicas} replicas");
        let verdicts = full(&one, &clusters);
        let notes: BTreeSet<&str> = verdicts
            .iter()
            .flat_map(|v| &v.reasons)
            .filter_map(|r| r.strip_prefix(MODEL_PREFIX))
            .map(|r| r.split_whitespace().next().unwrap_or(""))
            .collect();
        // The confidence discount, the cluster's limit, the node-level estimator's lines.
        for note in ["confidence", "cluster", "cpu:"] {
            if replicas > 1 {
                assert!(notes.iter().any(|n| n.starts_with(note)), "{replicas} replicas: notes {notes:?}");
            }
        }
        assert!(verdicts.iter().all(|v| !v.estimates.is_empty()), "every cluster estimated");
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 48: static weights that match nobody, zero replicas.

/// A static weight list with one entry, `weight` for the clusters `names`.
fn weighted_to(names: &[&str], weight: i64) -> StaticClusterWeight {
    StaticClusterWeight {
        target_cluster: ClusterAffinity {
            cluster_names: names.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        },
        weight,
    }
}

fn static_placement(list: Vec<StaticClusterWeight>) -> Placement {
    let mut p = strategy_placement(1, false, &[]);
    if let Some(w) = p.replica_scheduling.as_mut().and_then(|r| r.weight_preference.as_mut()) {
        w.static_weight_list = list;
    }
    p
}

/// Karmada's `getStaticWeightInfoList`: when no candidate has a positive weight (an entry for
/// clusters the affinity left out, or only weights 0), every candidate weighs 1.
#[test]
fn a_static_weight_list_that_matches_no_candidate_divides_equally() {
    let clusters: Vec<ClusterSnapshot> = (0..4).map(|i| cluster(i, 100, false, i < 3)).collect();
    let affinity =
        ClusterAffinity { cluster_names: vec!["m00".into(), "m01".into(), "m02".into()], ..Default::default() };
    // The affinity keeps m00..m02 (region r1); the one entry weighs m03 (region r2).
    let mut p = static_placement(vec![weighted_to(&["m03"], 2)]);
    p.cluster_affinity = Some(affinity.clone());
    let r = run(&p, &clusters, 3, &[]);
    assert_eq!(placed(&r), pairs(&[("m00", 1), ("m01", 1), ("m02", 1)]), "{:?}", r.outcome);
    // An entry of weight 0 gives its cluster no weight: none positive, every candidate 1.
    let mut p = static_placement(vec![weighted_to(&["m00"], 0)]);
    p.cluster_affinity = Some(affinity.clone());
    let r = run(&p, &clusters, 3, &[]);
    assert_eq!(placed(&r), pairs(&[("m00", 1), ("m01", 1), ("m02", 1)]), "{:?}", r.outcome);
    // A positive weight somewhere: only the clusters with one take part.
    let mut p = static_placement(vec![weighted_to(&["m00"], 0), weighted_to(&["m01"], 2)]);
    p.cluster_affinity = Some(affinity);
    let r = run(&p, &clusters, 3, &[]);
    assert_eq!(placed(&r), pairs(&[("m01", 3)]), "{:?}", r.outcome);
}

/// The placement kinds of [`strategy_placement`] with their names.
fn every_division() -> Vec<(&'static str, Placement)> {
    vec![
        ("duplicated", strategy_placement(0, false, &[])),
        ("static weights", strategy_placement(1, false, &[2, 1, 0])),
        ("dynamic weights", strategy_placement(2, false, &[])),
        ("aggregated", strategy_placement(3, false, &[])),
    ]
}

/// A workload of `replicas` replicas, requesting 1 CPU each or nothing.
fn zero_run(
    placement: &Placement,
    clusters: &[ClusterSnapshot],
    requests: bool,
    previous: &[(&str, i32)],
) -> ScheduleResult {
    let key = key();
    let mut w = workload(0);
    if !requests {
        w.requirements = Default::default();
    }
    let previous: BTreeMap<String, i32> = previous.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let req = ScheduleRequest {
        key: &key,
        uid: None,
        workload: &w,
        placement,
        previous: &previous,
        previous_affinity: None,
        failover: &NO_FAILOVER,
    };
    schedule(&Framework::karmada_default(), &req, clusters)
}

/// `replicas: 0` without resource requests: Karmada's non-workload path (`AssignReplicas`),
/// every selected candidate keeps the object at 0 replicas, whatever the division. The same
/// here.
#[test]
fn zero_replicas_without_requests_stay_at_zero_on_every_candidate() {
    let clusters: Vec<ClusterSnapshot> = (0..3).map(|i| cluster(i, 10 + i as i64, false, true)).collect();
    for (what, p) in every_division() {
        for previous in [&[][..], &[("m01", 4), ("m02", 2)][..]] {
            let r = zero_run(&p, &clusters, false, previous);
            assert_eq!(
                placed(&r),
                pairs(&[("m00", 0), ("m01", 0), ("m02", 0)]),
                "{what} {previous:?}: {:?}",
                r.outcome
            );
        }
    }
}

/// `replicas: 0` with resource requests: Karmada assigns (every candidate 0) and by default
/// drops the zero clusters, so the object disappears from every member; fedsched keeps it at 0
/// on every selected candidate, as Karmada does with `--enable-empty-workload-propagation`
/// (deliberate difference, docs/guide/karmada.md).
#[test]
fn zero_replicas_with_requests_stay_at_zero_on_every_candidate() {
    let clusters: Vec<ClusterSnapshot> = (0..3).map(|i| cluster(i, 10 + i as i64, false, true)).collect();
    for (what, p) in every_division() {
        for previous in [&[][..], &[("m01", 4), ("m02", 2)][..]] {
            let r = zero_run(&p, &clusters, true, previous);
            assert_eq!(
                placed(&r),
                pairs(&[("m00", 0), ("m01", 0), ("m02", 0)]),
                "{what} {previous:?}: {:?}",
                r.outcome
            );
        }
    }
}

/// With 0 replicas Karmada makes no estimate (`calAvailableReplicas`): every cluster is taken
/// to fit, so a cluster spread constraint picks among clusters of equal score by name, not by
/// free capacity.
#[test]
fn zero_replicas_make_no_estimate_so_a_cluster_spread_picks_by_name() {
    // m02 has the most free CPU, m00 the least.
    let clusters: Vec<ClusterSnapshot> = (0..3).map(|i| cluster(i, 10 + 10 * i as i64, false, true)).collect();
    for (what, mut p) in every_division() {
        p.spread_constraints = vec![spread(SpreadByField::Cluster, 1, 1)];
        let r = zero_run(&p, &clusters, true, &[]);
        let want: &[(&str, i32)] =
            if what == "static weights" { &[("m00", 0), ("m01", 0), ("m02", 0)] } else { &[("m00", 0)] };
        assert_eq!(placed(&r), pairs(want), "{what}: {:?}", r.outcome);
        let verdicts = full(&r, &clusters);
        assert!(
            verdicts.iter().all(|v| v.estimates.is_empty() && v.available_replicas.is_none()),
            "{what}: {verdicts:?}"
        );
        // One replica is estimated, and the spread takes the cluster with the most room.
        if what != "static weights" && what != "duplicated" {
            let one = run(&p, &clusters, 1, &[]);
            assert_eq!(placed(&one), pairs(&[("m02", 1)]), "{what}: {:?}", one.outcome);
        }
    }
}

/// Issue 48: Karmada's multi-template scheduling (`AssignReplicas`, f8fdd02): a workload of
/// several components goes whole to every selected cluster, whatever the division, unless a
/// `cluster` spread constraint in force pins minGroups = maxGroups = 1: then to the one
/// cluster that best fits one set of its components.
#[test]
fn a_multi_template_workload_goes_whole_to_every_cluster_unless_pinned_to_one() {
    // m02 has the most room.
    let clusters: Vec<ClusterSnapshot> = (0..3).map(|i| cluster(i, 10 + 10 * i as i64, false, true)).collect();
    let key = key();
    let mut w = workload(1);
    w.multi_template = true;
    w.requirements.request = ResourceList([("cpu".to_string(), 12_000)].into());
    let none = BTreeMap::new();
    let decide = |p: &Placement| {
        let req = ScheduleRequest {
            key: &key,
            uid: None,
            workload: &w,
            placement: p,
            previous: &none,
            previous_affinity: None,
            failover: &NO_FAILOVER,
        };
        schedule(&Framework::karmada_default(), &req, &clusters)
    };
    let every = pairs(&[("m00", -1), ("m01", -1), ("m02", -1)]);
    for (what, mut p) in every_division() {
        let r = decide(&p);
        assert_eq!(placed(&r), every, "{what}: {:?}", r.outcome);
        p.spread_constraints = vec![spread(SpreadByField::Cluster, 1, 1)];
        let r = decide(&p);
        let want = match what {
            // Static weights ignore spread constraints: every cluster still.
            "static weights" => every.clone(),
            _ => pairs(&[("m02", 1)]),
        };
        assert_eq!(placed(&r), want, "{what}, pinned: {:?}", r.outcome);
    }
}
