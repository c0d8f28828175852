//! Property tests of the scheduling invariants: replicas add up, filtered clusters get
//! nothing, identical inputs give identical decisions.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::Strategy as Division;
use super::*;
use crate::model::snapshot::{ResourceSummary, SnapshotSource};
use crate::model::{ClusterTaint, Health, ResourceList};
use crate::policy::types::{
    ClusterPreferences, ReplicaSchedulingStrategy, StaticClusterWeight, TaintEffect, Toleration, TolerationOperator,
};

fn cluster(i: usize, cpu_free: i64, tainted: bool, region: bool) -> ClusterSnapshot {
    ClusterSnapshot {
        name: format!("m{i:02}"),
        labels: [("idx".to_string(), (i % 3).to_string())].into_iter().collect(),
        provider: None,
        region: Some(if region { "r1" } else { "r2" }.to_string()),
        zones: vec![],
        taints: if tainted {
            vec![ClusterTaint { key: "t".into(), value: None, effect: TaintEffect::NoSchedule }]
        } else {
            vec![]
        },
        health: Health::Ready,
        source: SnapshotSource::Offline { file: "c.yaml".into() },
        api_enablements: BTreeSet::new(),
        summary: Some(ResourceSummary {
            allocatable: ResourceList([("cpu".to_string(), cpu_free * 1000), ("pods".to_string(), 1_000_000)].into()),
            ..Default::default()
        }),
        resource_models: vec![],
        nodes: Vec::new(),
        pods: None,
        poll: None,
    }
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
    ) {
        let clusters: Vec<ClusterSnapshot> =
            caps.iter().enumerate().map(|(i, (c, t, r))| cluster(i, *c, *t, *r)).collect();
        let placement = strategy_placement(kind, tolerate, &weights);
        let key = ObjectKey { api_version: "apps/v1".into(), kind: "Deployment".into(), namespace: Some("d".into()), name: "w".into() };
        let mut workload = Workload::non_workload();
        workload.replicas = Some(replicas);
        workload.requirements.request = ResourceList([("cpu".to_string(), 1000)].into());
        let previous: BTreeMap<String, i32> = previous.into_iter().map(|(i, r)| (format!("m{i:02}"), r)).collect();
        let req = ScheduleRequest { key: &key, uid: uid.as_deref(), workload: &workload, placement: &placement, previous: &previous, previous_affinity: None };
        let fw = Framework::karmada_default();
        let a = schedule(&fw, &req, &clusters);
        let b = schedule(&fw, &req, &clusters);
        prop_assert_eq!(&a, &b, "identical inputs must give identical decisions");
        prop_assert_eq!(a.verdicts.len(), clusters.len());
        if let Outcome::Scheduled { targets } = &a.outcome {
            for name in targets.keys() {
                let v = a.verdicts.iter().find(|v| &v.name == name).expect("verdict");
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
