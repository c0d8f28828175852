//! Table-driven tests of cluster selection against Karmada's behaviour.

use std::collections::BTreeMap;

use super::groups::{GroupInfo, group_score, select_groups};
use super::*;
use crate::policy::types::{
    ClusterPreferences, DynamicWeightFactor, ReplicaDivisionPreference, ReplicaSchedulingStrategy,
    ReplicaSchedulingType,
};

fn verdict(name: &str, score: i64, avail: i64) -> ClusterVerdict {
    ClusterVerdict {
        name: name.into(),
        feasible: true,
        reasons: vec![],
        score,
        scores: vec![],
        available_replicas: Some(avail),
        replicas: None,
        selected: false,
        estimates: vec![],
    }
}

fn snap(name: &str, region: &str, zones: &[&str], provider: &str) -> ClusterSnapshot {
    ClusterSnapshot::offline(name, "c.yaml")
        .with_labels([("team", provider)])
        .with_provider(provider)
        .with_region(region)
        .with_zones(zones.iter().copied())
}

fn sc(field: Option<SpreadByField>, label: Option<&str>, min: i32, max: i32) -> SpreadConstraint {
    SpreadConstraint {
        spread_by_field: field,
        spread_by_label: label.map(Into::into),
        min_groups: min,
        max_groups: max,
    }
}

fn dynamic(constraints: Vec<SpreadConstraint>) -> Placement {
    Placement {
        spread_constraints: constraints,
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: Some(ReplicaDivisionPreference::Weighted),
            weight_preference: Some(ClusterPreferences {
                static_weight_list: vec![],
                dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
            }),
        }),
        ..Default::default()
    }
}

fn names(v: Result<Vec<&ClusterVerdict>, String>) -> Result<Vec<String>, String> {
    v.map(|s| {
        let mut n: Vec<String> = s.iter().map(|v| v.name.clone()).collect();
        n.sort();
        n
    })
}

#[test]
fn by_cluster_swaps_in_capacity_when_short() {
    // Karmada's selectClustersByAvailableResource example: maxGroups 2, 80 replicas.
    let vs = [verdict("member1", 60, 40), verdict("member2", 50, 30), verdict("member3", 40, 60)];
    let refs: Vec<&ClusterVerdict> = vs.iter().collect();
    type Case = (Strategy, i32, i32, Result<Vec<&'static str>, &'static str>);
    let cases: Vec<Case> = vec![
        (Strategy::DynamicWeight, 2, 80, Ok(vec!["member1", "member3"])),
        (Strategy::Aggregated, 2, 80, Ok(vec!["member1", "member3"])),
        (Strategy::DynamicWeight, 2, 60, Ok(vec!["member1", "member2"])),
        // Duplicated ignores capacity: the two best scores.
        (Strategy::Duplicated, 2, 80, Ok(vec!["member1", "member2"])),
        (Strategy::DynamicWeight, 2, 101, Err("no enough resource when selecting 2 clusters")),
        (Strategy::DynamicWeight, 1, 50, Ok(vec!["member3"])),
        // maxGroups unset = no limit (deliberate deviation).
        (Strategy::DynamicWeight, 0, 120, Ok(vec!["member1", "member2", "member3"])),
    ];
    for (i, (strategy, max, replicas, want)) in cases.into_iter().enumerate() {
        let p = dynamic(vec![sc(Some(SpreadByField::Cluster), None, 1, max)]);
        let got = names(select_clusters(&p, &refs, &[] as &[ClusterSnapshot], strategy, Some(replicas)));
        let want = want.map(|v| v.iter().map(|s| s.to_string()).collect::<Vec<_>>()).map_err(str::to_string);
        match (&got, &want) {
            (Err(g), Err(w)) => assert!(g.contains(w.as_str()), "case {i}: {g}"),
            _ => assert_eq!(got, want, "case {i}"),
        }
    }
    let p = dynamic(vec![sc(Some(SpreadByField::Cluster), None, 4, 4)]);
    assert!(
        select_clusters(&p, &refs, &[] as &[ClusterSnapshot], Strategy::DynamicWeight, Some(1)).is_err(),
        "minGroups 4 of 3"
    );
}

#[test]
fn select_groups_follows_karmada_dfs() {
    let g = |name: &str, value: i64, weight: i64| GroupInfo { name: name.into(), value, weight };
    // The tree of Karmada's comment: target 7, values [2, 3, 6, 7], min = max = 2 ⇒ feasible
    // [2,6] [2,7] [3,6] [3,7] [6,7]; with equal weights the largest value wins: [6,7].
    let groups = vec![g("a", 2, 10), g("b", 3, 10), g("c", 6, 10), g("d", 7, 10)];
    let pick = |v: Vec<GroupInfo>| v.into_iter().map(|g| g.name).collect::<Vec<_>>();
    assert_eq!(pick(select_groups(groups.clone(), 2, 2, 7)), vec!["c", "d"]);
    // Weight first ([a,c] and [a,d] weigh 60), then value ([a,d] holds 9).
    let weighted = vec![g("a", 2, 50), g("b", 3, 40), g("c", 6, 10), g("d", 7, 10)];
    assert_eq!(pick(select_groups(weighted, 2, 2, 7)), vec!["a", "d"]);
    // Nothing reaches the target.
    assert!(select_groups(groups.clone(), 1, 1, 8).is_empty());
    // A feasible strict prefix of the best path wins: [x] ⊂ [x, y].
    let prefix = vec![g("x", 5, 100), g("y", 1, 50)];
    assert_eq!(pick(select_groups(prefix, 1, 2, 1)), vec!["x"]);
}

#[test]
fn group_scores_follow_karmada() {
    let vs = [verdict("a", 100, 4), verdict("b", 0, 10)];
    let refs: Vec<&ClusterVerdict> = vs.iter().collect();
    // Divided, 12 replicas, minGroups 2 ⇒ target ⌈12/2⌉ = 6: a (4) + b (10) reach it.
    assert_eq!(group_score(&refs, 12, 2, 1, false), 6 * 1000 + 100 / 2);
    // Target 2: a alone reaches it, but at least minGroups (2) clusters are walked.
    assert_eq!(group_score(&refs, 4, 2, 1, false), 2 * 1000 + 100 / 2);
    // minGroups 1, cluster minGroups 1: a alone (target 4).
    assert_eq!(group_score(&refs, 4, 1, 1, false), 4 * 1000 + 100);
    // Short: 14 available < target 20.
    assert_eq!(group_score(&refs, 40, 2, 1, false), 14 * 1000 + 100 / 2);
    // Duplicated: clusters holding all 5 replicas: b only.
    assert_eq!(group_score(&refs, 5, 1, 1, true), 1000);
    assert_eq!(group_score(&refs, 50, 1, 1, true), 0);
    // Karmada's own worked examples (calcGroupScore's comments): 100 replicas, group
    // minGroups 2, cluster minGroups 1 ⇒ target 50, at least 2 clusters walked.
    let group = |score: i64, avail: &[i64]| -> Vec<ClusterVerdict> {
        avail.iter().enumerate().map(|(i, a)| verdict(&format!("m{i}"), score, *a)).collect()
    };
    let score = |g: &[ClusterVerdict]| group_score(&g.iter().collect::<Vec<_>>(), 100, 2, 1, false);
    assert_eq!(score(&group(100, &[10, 10, 10, 10, 5])), 45_100);
    assert_eq!(score(&group(0, &[40, 30, 10, 10])), 50_000);
    assert_eq!(score(&group(100, &[40, 40, 10, 10, 5])), 50_100);
    assert_eq!(score(&group(0, &[100, 100, 10, 10])), 50_000);
}

#[test]
fn spread_by_region_zone_provider_and_label() {
    let clusters = vec![
        snap("eu-a", "eu", &["eu-1"], "aws"),
        snap("eu-b", "eu", &["eu-2"], "aws"),
        snap("us-a", "us", &["us-1"], "gcp"),
        snap("us-b", "us", &["us-1"], "gcp"),
        snap("ap-a", "ap", &["ap-1"], "onprem"),
    ];
    let vs = [
        verdict("eu-a", 0, 10),
        verdict("eu-b", 0, 8),
        verdict("us-a", 0, 6),
        verdict("us-b", 0, 5),
        verdict("ap-a", 0, 1),
    ];
    let refs: Vec<&ClusterVerdict> = vs.iter().collect();
    let cluster = |min, max| sc(Some(SpreadByField::Cluster), None, min, max);
    type Case<'a> = (&'a str, Vec<SpreadConstraint>, Strategy, Result<Vec<&'a str>, ()>);
    let cases: Vec<Case> = vec![
        // Two regions, one cluster each: the two regions with the most capacity (eu, us).
        (
            "region 2/2",
            vec![sc(Some(SpreadByField::Region), None, 2, 2), cluster(1, 2)],
            Strategy::DynamicWeight,
            Ok(vec!["eu-a", "us-a"]),
        ),
        // Up to 3 clusters: the best of each region, then the rest by order.
        (
            "region 2/2, 3 clusters",
            vec![sc(Some(SpreadByField::Region), None, 2, 2), cluster(1, 3)],
            Strategy::DynamicWeight,
            Ok(vec!["eu-a", "eu-b", "us-a"]),
        ),
        (
            "region min 4 of 3",
            vec![sc(Some(SpreadByField::Region), None, 4, 4), cluster(1, 4)],
            Strategy::DynamicWeight,
            Err(()),
        ),
        // Zones: us-1 holds two clusters.
        (
            "zone 3/3",
            vec![sc(Some(SpreadByField::Zone), None, 3, 3), cluster(1, 3)],
            Strategy::DynamicWeight,
            Ok(vec!["eu-a", "eu-b", "us-a"]),
        ),
        (
            "provider 1/1",
            vec![sc(Some(SpreadByField::Provider), None, 1, 1), cluster(1, 5)],
            Strategy::Aggregated,
            Ok(vec!["eu-a", "eu-b"]),
        ),
        // The cluster minGroups needs a provider holding two clusters.
        (
            "provider 1/1, at least 2 clusters",
            vec![sc(Some(SpreadByField::Provider), None, 1, 1), cluster(2, 2)],
            Strategy::Duplicated,
            Ok(vec!["eu-a", "eu-b"]),
        ),
        (
            "label 3/3",
            vec![sc(None, Some("team"), 3, 3), cluster(1, 3)],
            Strategy::DynamicWeight,
            Ok(vec!["ap-a", "eu-a", "us-a"]),
        ),
        // Static weights ignore spread constraints (Karmada).
        (
            "static ignores",
            vec![sc(Some(SpreadByField::Region), None, 1, 1), cluster(1, 1)],
            Strategy::StaticWeight,
            Ok(vec!["ap-a", "eu-a", "eu-b", "us-a", "us-b"]),
        ),
    ];
    // The verdicts in name order (a fleet's), selected through the fleet's view (which keeps
    // each level's groups by position) with their positions given: the right ones, and ones
    // that do not ascend, which must not be used (they would put verdicts in other groups).
    let mut by_name = refs.clone();
    by_name.sort_by(|a, b| a.name.cmp(&b.name));
    let fleet = crate::schedule::Fleet::new(&clusters);
    let view = crate::schedule::FleetView { fleet: &fleet, clusters: &clusters };
    let ascending: Vec<crate::schedule::FleetPos> = (0..by_name.len()).map(crate::schedule::FleetPos::at).collect();
    let descending: Vec<crate::schedule::FleetPos> = ascending.iter().rev().copied().collect();
    for (what, constraints, strategy, want) in cases {
        let p = dynamic(constraints.clone());
        let got = names(select_clusters(&p, &refs, &clusters, strategy, Some(10)));
        let plain = names(select_clusters(&p, &by_name, &clusters, strategy, Some(10)));
        for positions in [&ascending, &descending] {
            let given = names(select_clusters_at(&p, (&by_name, Some(positions)), &view, strategy, Some(10)));
            assert_eq!(given, plain, "{what}: positions {positions:?} given");
        }
        match want {
            Ok(w) => assert_eq!(got, Ok(w.iter().map(|s| s.to_string()).collect()), "{what}"),
            Err(()) => assert!(got.is_err(), "{what}: {got:?}"),
        }
        // Invariant: the number of groups selected is within [min, max].
        if let (Ok(sel), Some(level)) =
            (&got, constraints.iter().find(|c| c.spread_by_field != Some(SpreadByField::Cluster)))
        {
            if strategy == Strategy::StaticWeight {
                continue;
            }
            let groups: BTreeMap<String, ()> = sel
                .iter()
                .filter_map(|n| clusters.iter().find(|c| &c.name == n))
                .flat_map(|c| match (level.spread_by_field, &level.spread_by_label) {
                    (Some(SpreadByField::Region), _) => c.region.clone().into_iter().collect::<Vec<_>>(),
                    (Some(SpreadByField::Provider), _) => c.provider.clone().into_iter().collect(),
                    (Some(SpreadByField::Zone), _) => c.zones.clone(),
                    (_, Some(l)) => c.labels.get(l).cloned().into_iter().collect(),
                    _ => vec![],
                })
                .map(|g| (g, ()))
                .collect();
            assert!(groups.len() as i32 >= level.min_groups, "{what}: {groups:?}");
            assert!(
                level.max_groups == 0
                    || groups.len() as i32 <= level.max_groups
                    || level.spread_by_field == Some(SpreadByField::Zone),
                "{what}: {groups:?}"
            );
        }
    }
}

/// Karmada's order (score desc, available desc, name asc) whether the verdicts come by name
/// (the fleet's order: ties broken by position) or not (ties broken by name).
#[test]
fn the_order_breaks_ties_by_name_whatever_order_the_verdicts_come_in() {
    let by_name: Vec<ClusterVerdict> =
        (0..40).map(|i| verdict(&format!("m{i:02}"), (i * 7 % 3) as i64, (i * 11 % 5) as i64)).collect();
    let want = |vs: &[&ClusterVerdict]| {
        let mut names: Vec<&ClusterVerdict> = vs.to_vec();
        names.sort_by(|a, b| b.score.cmp(&a.score).then(avail(b).cmp(&avail(a))).then(a.name.cmp(&b.name)));
        names.into_iter().map(|v| v.name.clone()).collect::<Vec<_>>()
    };
    let mut unordered: Vec<&ClusterVerdict> = by_name.iter().collect();
    for list in [by_name.iter().collect::<Vec<_>>(), {
        unordered.reverse();
        unordered.clone()
    }] {
        let got: Vec<String> = order(&list).into_iter().map(|i| list[i].name.clone()).collect();
        assert_eq!(got, want(&list));
    }
    // Values at the packed word's edges (and past them: the general sort), objects without
    // replicas (available = i32::MAX): the same order.
    let edges = [0, 1, 65_534, 65_535, 65_536, -1, i64::from(u32::MAX), i64::from(u32::MAX) + 1, i64::MAX, i64::MIN];
    for (a, b) in [(0usize, 4usize), (0, 10), (4, 10)] {
        let vs: Vec<ClusterVerdict> = (0..60)
            .map(|i| {
                let mut v = verdict(&format!("m{i:02}"), edges[a + i % (b - a)], edges[a + i * 7 % (b - a)]);
                if i % 13 == 0 {
                    v.available_replicas = None;
                }
                v
            })
            .collect();
        let list: Vec<&ClusterVerdict> = vs.iter().collect();
        let got: Vec<String> = order(&list).into_iter().map(|i| list[i].name.clone()).collect();
        assert_eq!(got, want(&list), "values {:?}", &edges[a..b]);
    }
    // Equal score and capacity everywhere: the names alone decide.
    let ties: Vec<ClusterVerdict> = ["a", "b", "c"].iter().map(|n| verdict(n, 1, 1)).collect();
    let list: Vec<&ClusterVerdict> = ties.iter().rev().collect();
    assert_eq!(order(&list), vec![2, 1, 0]);
}
