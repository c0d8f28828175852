//! Cluster selection among the feasible clusters: Karmada's spread constraints
//! (`pkg/scheduler/core/spreadconstraint`), extended.
//!
//! - Clusters are ordered score desc, available replicas desc, name asc.
//! - No constraint, or static weights (Karmada ignores constraints there): every feasible
//!   cluster.
//! - `cluster` only: at least `minGroups` clusters, the first `maxGroups`; for dynamic weights
//!   and aggregated division, when the selected clusters cannot hold the replicas, walk from the
//!   last selected backwards swapping in the unselected cluster with the most available
//!   replicas (more than the one it replaces) — Karmada's `selectClustersByAvailableResource`.
//! - A topology level (`region`, and — beyond Karmada, which only filters on them — `zone`,
//!   `provider` and `spreadByLabel`): groups scored as Karmada scores regions ([`groups`]),
//!   the best combination of `minGroups..=maxGroups` groups holding at least the cluster
//!   `minGroups` clusters, the best cluster of each chosen group, then the rest by order up to
//!   the cluster `maxGroups`. One level is selected on, in the order region, zone, provider,
//!   label; other levels only filter (the `spread-constraint` plugin).
//!
//! Deliberate deviations: an unset `maxGroups` (0) means "no limit" (Karmada would select zero
//! clusters, or one per region); when the chosen groups need more clusters (one each) than the
//! cluster `maxGroups` allows, the workload is unschedulable (Karmada exceeds the limit).

pub mod groups;

use crate::model::ClusterSnapshot;
use crate::policy::types::{Placement, SpreadByField, SpreadConstraint};

use super::{ClusterVerdict, FleetPos, Strategy};
use groups::{GroupInfo, group_score, select_groups};

/// Cluster snapshots by name: a slice (searched in order) or the pass's
/// [`super::FleetView`] (by position).
pub trait Clusters {
    fn get(&self, name: &str) -> Option<&ClusterSnapshot>;

    /// The groups at `level` of each cluster, by position ([`Clusters::position`]); `None`:
    /// not kept here (the selection reads each cluster's keys).
    fn level_index(&self, _level: Level<'_>) -> Option<std::sync::Arc<LevelIndex>> {
        None
    }

    /// The position of a cluster by name, where [`Clusters::level_index`] gives an index.
    fn position(&self, _name: &str) -> Option<FleetPos> {
        None
    }
}

/// The groups of every cluster of a fleet at one topology level: the group keys sorted, and
/// per position (the fleet's, by name) the ids (indices in the keys) of its groups.
#[derive(Debug, Default)]
pub struct LevelIndex {
    keys: Vec<String>,
    /// Per position, the range of `ids` holding its groups' ids.
    at: Vec<(u32, u32)>,
    ids: Vec<LevelGroupId>,
}

/// A group's id at a topology level: its key's index in [`LevelIndex::keys`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LevelGroupId(u32);

impl LevelGroupId {
    /// The group whose key is at this index of the keys.
    fn at(index: usize) -> Self {
        LevelGroupId(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// Its key's index in the keys.
    const fn index(self) -> usize {
        self.0 as usize
    }
}

impl LevelIndex {
    /// The index of `clusters` (`len` of them, by position) at `level`.
    pub fn build<'c>(level: Level<'_>, len: usize, cluster: impl Fn(FleetPos) -> &'c ClusterSnapshot) -> Self {
        let mut per: Vec<Vec<&'c str>> = Vec::with_capacity(len);
        let mut keys: Vec<&str> = Vec::new();
        for p in (0..len).map(FleetPos::at) {
            let mut mine = Vec::new();
            level.for_each_key(cluster(p), |k| mine.push(k));
            keys.extend(&mine);
            per.push(mine);
        }
        keys.sort_unstable();
        keys.dedup();
        let (mut at, mut ids) = (Vec::with_capacity(len), Vec::new());
        for mine in per {
            let start = ids.len() as u32;
            ids.extend(mine.iter().filter_map(|k| keys.binary_search(k).ok()).map(LevelGroupId::at));
            at.push((start, ids.len() as u32));
        }
        LevelIndex { keys: keys.into_iter().map(str::to_string).collect(), at, ids }
    }

    /// The ids of the groups of the cluster at `position`, in the order the level gives them.
    fn groups_at(&self, position: FleetPos) -> &[LevelGroupId] {
        let (start, end) = self.at.get(position.index()).copied().unwrap_or((0, 0));
        self.ids.get(start as usize..end as usize).unwrap_or_default()
    }
}

impl Clusters for [ClusterSnapshot] {
    fn get(&self, name: &str) -> Option<&ClusterSnapshot> {
        self.iter().find(|c| c.name == name)
    }
}

impl Clusters for Vec<ClusterSnapshot> {
    fn get(&self, name: &str) -> Option<&ClusterSnapshot> {
        self.iter().find(|c| c.name == name)
    }
}

/// Karmada's cluster order: score desc, available replicas desc, name asc.
pub fn order(feasible: &[&ClusterVerdict]) -> Vec<usize> {
    order_in(feasible, false)
}

/// [`order`]; `by_name`: the caller knows the verdicts come in name order (their fleet
/// positions ascend), so their names need not be compared to tell.
fn order_in(feasible: &[&ClusterVerdict], by_name: bool) -> Vec<usize> {
    debug_assert!(!by_name || feasible.windows(2).all(|w| w[0].name < w[1].name), "verdicts said to be in name order");
    // The verdicts come in the fleet's order, which is by name: the name tie-break is then
    // the position's (no name compared in the sort).
    if by_name || feasible.windows(2).all(|w| w[0].name < w[1].name) {
        // Scores in 0..2¹⁶, available replicas in 0..2³² and positions in 0..2¹⁶ (every
        // fleet in practice) pack into one word whose ascending order is this order: a sort
        // of words instead of tuples.
        let packed: Option<Vec<u64>> = (feasible.len() <= 1 << 16)
            .then(|| {
                feasible
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let score = u16::try_from(v.score).ok()?;
                        let avail = u32::try_from(avail(v)).ok()?;
                        Some((u64::from(u16::MAX - score) << 48) | (u64::from(u32::MAX - avail) << 16) | i as u64)
                    })
                    .collect()
            })
            .flatten();
        if let Some(mut keys) = packed {
            keys.sort_unstable();
            return keys.into_iter().map(|k| (k & 0xffff) as usize).collect();
        }
        let mut keys: Vec<(std::cmp::Reverse<(i64, i64)>, usize)> =
            feasible.iter().enumerate().map(|(i, v)| (std::cmp::Reverse((v.score, avail(v))), i)).collect();
        keys.sort_unstable();
        return keys.into_iter().map(|(_, i)| i).collect();
    }
    let mut idx: Vec<usize> = (0..feasible.len()).collect();
    idx.sort_by(|a, b| {
        let (a, b) = (feasible[*a], feasible[*b]);
        b.score.cmp(&a.score).then(avail(b).cmp(&avail(a))).then(a.name.cmp(&b.name))
    });
    idx
}

/// Available replicas of a verdict; objects without replicas fit anywhere.
fn avail(v: &ClusterVerdict) -> i64 {
    v.available_replicas.unwrap_or(i64::from(i32::MAX))
}

/// Selects clusters among the feasible ones. `replicas` is the workload's replica count (None
/// for objects without replicas). Returns the selected clusters (best first) or the reason
/// none can be.
pub fn select_clusters<'a, C: Clusters + ?Sized>(
    placement: &Placement,
    feasible: &[&'a ClusterVerdict],
    clusters: &C,
    strategy: Strategy,
    replicas: Option<i32>,
) -> Result<Vec<&'a ClusterVerdict>, String> {
    select_clusters_at(placement, (feasible, None), clusters, strategy, replicas)
}

/// [`select_clusters`] where the caller may know each feasible verdict's position in the
/// fleet ([`Clusters::position`]; ascending, so the verdicts are in name order): the order
/// then compares no names and the groups are read by position, not found by name.
pub fn select_clusters_at<'a, C: Clusters + ?Sized>(
    placement: &Placement,
    (feasible, positions): (&[&'a ClusterVerdict], Option<&[FleetPos]>),
    clusters: &C,
    strategy: Strategy,
    replicas: Option<i32>,
) -> Result<Vec<&'a ClusterVerdict>, String> {
    // (Positions that do not ascend one per verdict are not used: the verdicts are then
    // ordered by name as without them.)
    let positions = positions.filter(|p| p.len() == feasible.len() && p.windows(2).all(|w| w[0] < w[1]));
    let at = order_in(feasible, positions.is_some());
    let ordered: Vec<&ClusterVerdict> = at.iter().map(|&i| feasible[i]).collect();
    // Duplicated ignores available resources (Karmada's InvalidReplicas).
    let need = match strategy {
        Strategy::Duplicated => None,
        _ => replicas.map(i64::from),
    };
    match constraints_in_force(placement, strategy) {
        (Some((level, sc)), cluster_sc) => {
            let ordered_at: Option<Vec<FleetPos>> = positions.map(|p| at.iter().map(|&i| p[i]).collect());
            let ordered = (&ordered[..], ordered_at.as_deref());
            by_groups(level, sc, cluster_sc, ordered, clusters, strategy, replicas)
        }
        (None, Some(sc)) => by_cluster(sc, ordered, need),
        (None, None) => Ok(ordered),
    }
}

/// Whether [`select_clusters`] reads the clusters' scores and available replicas: only when
/// a spread constraint is in force. Otherwise it selects every feasible cluster, whatever
/// their capacity (its order does not change an outcome: targets are by name, and the
/// strategies that read the order read the capacity too).
pub fn reads_capacity(placement: &Placement, strategy: Strategy) -> bool {
    !matches!(constraints_in_force(placement, strategy), (None, None))
}

/// Whether the placement pins its workload to one cluster, as Karmada's multi-template
/// scheduling reads it (`isMultiTemplateSchedulingApplicable`): a `cluster` spread constraint
/// with `minGroups = maxGroups = 1`, in force ([`select_clusters`] applies it: static weights
/// ignore spread constraints, and select every cluster).
pub fn pins_one_cluster(placement: &Placement, strategy: Strategy) -> bool {
    constraints_in_force(placement, strategy).1.is_some_and(|sc| sc.min_groups == 1 && sc.max_groups == 1)
}

/// The spread constraints [`select_clusters`] applies: the topology level (region, zone,
/// provider, then a label) with its constraint, and the cluster constraint. None with static
/// weights (Karmada ignores spread constraints for them).
fn constraints_in_force(
    placement: &Placement,
    strategy: Strategy,
) -> (Option<(Level<'_>, &SpreadConstraint)>, Option<&SpreadConstraint>) {
    let constraints = &placement.spread_constraints;
    if constraints.is_empty() || strategy == Strategy::StaticWeight {
        return (None, None);
    }
    let by_field = |f: SpreadByField| constraints.iter().find(|s| s.spread_by_field == Some(f));
    let cluster_sc = by_field(SpreadByField::Cluster);
    let level = [SpreadByField::Region, SpreadByField::Zone, SpreadByField::Provider]
        .into_iter()
        .find_map(|f| by_field(f).map(|sc| (Level::Field(f), sc)))
        .or_else(|| {
            constraints
                .iter()
                .find_map(|sc| sc.spread_by_label.as_deref().filter(|l| !l.is_empty()).map(|l| (Level::Label(l), sc)))
        });
    (level, cluster_sc)
}

/// A topology level clusters are grouped by.
#[derive(Debug, Clone, Copy)]
pub enum Level<'a> {
    Field(SpreadByField),
    Label(&'a str),
}

impl Level<'_> {
    /// A key naming the level (a memo's).
    pub fn key(&self) -> String {
        match self {
            Level::Field(f) => format!("field {f:?}"),
            Level::Label(l) => format!("label {l}"),
        }
    }

    fn describe(&self) -> String {
        match self {
            Level::Field(f) => format!("{f:?}").to_lowercase(),
            Level::Label(l) => format!("label {l}"),
        }
    }

    /// The group keys of a cluster at this level (a cluster with several zones is in each),
    /// borrowed from the snapshot: `f` is called with each.
    fn for_each_key<'c>(&self, c: &'c ClusterSnapshot, mut f: impl FnMut(&'c str)) {
        let mut some = |v: Option<&'c String>| {
            if let Some(v) = v.filter(|s| !s.is_empty()) {
                f(v)
            }
        };
        match self {
            Level::Field(SpreadByField::Region) => some(c.region.as_ref()),
            Level::Field(SpreadByField::Provider) => some(c.provider.as_ref()),
            Level::Field(SpreadByField::Zone) => c.zones.iter().for_each(|z| some(Some(z))),
            Level::Field(SpreadByField::Cluster) => f(&c.name),
            Level::Label(l) => some(c.labels.get(*l)),
        }
    }
}

fn limit(max_groups: i32, n: usize) -> usize {
    if max_groups > 0 { (max_groups as usize).min(n) } else { n }
}

/// Karmada's `selectBestClustersByCluster` with the available-resource swap.
fn by_cluster<'a>(
    sc: &SpreadConstraint,
    ordered: Vec<&'a ClusterVerdict>,
    need: Option<i64>,
) -> Result<Vec<&'a ClusterVerdict>, String> {
    let n = ordered.len();
    if (n as i64) < i64::from(sc.min_groups) {
        return Err(format!(
            "spreadConstraints: {n} feasible clusters, fewer than the cluster minGroups {}",
            sc.min_groups
        ));
    }
    let count = limit(sc.max_groups, n);
    let mut selected: Vec<&ClusterVerdict> = ordered[..count].to_vec();
    let Some(need) = need else {
        return Ok(selected);
    };
    let mut rest: Vec<&ClusterVerdict> = ordered[count..].to_vec();
    let total = |s: &[&ClusterVerdict]| s.iter().map(|v| avail(v)).fold(0i64, i64::saturating_add);
    let mut i = count;
    while total(&selected) < need && i > 0 {
        i -= 1;
        // The first unselected cluster with the most available replicas, more than selected[i].
        let mut best: Option<usize> = None;
        let mut best_avail = avail(selected[i]);
        for (j, r) in rest.iter().enumerate() {
            if avail(r) > best_avail {
                best = Some(j);
                best_avail = avail(r);
            }
        }
        if let Some(j) = best {
            std::mem::swap(&mut selected[i], &mut rest[j]);
        }
    }
    if total(&selected) < need {
        return Err(format!("no enough resource when selecting {count} clusters"));
    }
    Ok(selected)
}

/// Each group's members at `level` (by their index in `ordered`), the groups sorted by key,
/// read from each verdict's cluster.
fn members_by_name<'k, C: Clusters + ?Sized>(
    level: Level<'_>,
    ordered: &[&ClusterVerdict],
    clusters: &'k C,
) -> Vec<(&'k str, Vec<usize>)> {
    let mut slots: crate::util::hash::KeyMap<&str, usize> = Default::default();
    let mut members: Vec<(&str, Vec<usize>)> = Vec::new();
    for (at, v) in ordered.iter().enumerate() {
        let Some(c) = clusters.get(&v.name) else { continue };
        level.for_each_key(c, |k| {
            let slot = *slots.entry(k).or_insert_with(|| {
                members.push((k, Vec::new()));
                members.len() - 1
            });
            if let Some((_, ats)) = members.get_mut(slot) {
                ats.push(at);
            }
        });
    }
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    members
}

/// Selection by a topology level, Karmada's `selectBestClustersByRegion` generalised.
/// `ordered_at`, where known, holds the fleet position of each of `ordered`.
fn by_groups<'a, C: Clusters + ?Sized>(
    level: Level<'_>,
    sc: &SpreadConstraint,
    cluster_sc: Option<&SpreadConstraint>,
    (ordered, ordered_at): (&[&'a ClusterVerdict], Option<&[FleetPos]>),
    clusters: &C,
    strategy: Strategy,
    replicas: Option<i32>,
) -> Result<Vec<&'a ClusterVerdict>, String> {
    // Each group's members by their index in `ordered` (so in the global order: score desc,
    // available desc, name asc; a cluster has one verdict, which every group it is in holds),
    // the groups sorted by key: from the fleet's level index where it keeps one, else read
    // from each verdict's cluster ([`members_by_name`]).
    let indexed = clusters.level_index(level);
    let members: Vec<(&str, Vec<usize>)> = match &indexed {
        // The fleet's groups by position: the group of each verdict's cluster is an index.
        Some(index) => {
            let mut by_id: Vec<Vec<usize>> = vec![Vec::new(); index.keys.len()];
            for (at, v) in ordered.iter().enumerate() {
                let p = match ordered_at {
                    Some(positions) => positions.get(at).copied(),
                    None => clusters.position(&v.name),
                };
                let Some(p) = p else { continue };
                debug_assert_eq!(Some(p), clusters.position(&v.name), "the position given for {}", v.name);
                for &id in index.groups_at(p) {
                    if let Some(ats) = by_id.get_mut(id.index()) {
                        ats.push(at);
                    }
                }
            }
            let members: Vec<(&str, Vec<usize>)> =
                index.keys.iter().map(String::as_str).zip(by_id).filter(|(_, ats)| !ats.is_empty()).collect();
            debug_assert_eq!(members, members_by_name(level, ordered, clusters), "the level index's groups");
            members
        }
        None => members_by_name(level, ordered, clusters),
    };
    let what = level.describe();
    if (members.len() as i64) < i64::from(sc.min_groups) {
        return Err(format!(
            "spreadConstraints: {} feasible {what} groups, fewer than minGroups {}",
            members.len(),
            sc.min_groups
        ));
    }
    let duplicated = strategy == Strategy::Duplicated;
    let infos: Vec<GroupInfo> = members
        .iter()
        .map(|(name, ats)| GroupInfo {
            name: name.to_string(),
            value: ats.len() as i64,
            weight: group_score(
                &ats.iter().map(|&at| ordered[at]).collect::<Vec<_>>(),
                replicas.unwrap_or(0),
                sc.min_groups,
                cluster_sc.map_or(0, |c| c.min_groups),
                duplicated,
            ),
        })
        .collect();
    let cluster_min = cluster_sc.map(|c| i64::from(c.min_groups.max(1))).unwrap_or(1);
    let chosen = select_groups(infos, sc.min_groups.max(1) as usize, limit(sc.max_groups, members.len()), cluster_min);
    if chosen.is_empty() {
        return Err(format!(
            "spreadConstraints: no combination of {what} groups holds the cluster minGroups {cluster_min} clusters"
        ));
    }
    // Verdicts are told apart by their index in `ordered`.
    let mut selected: Vec<&ClusterVerdict> = Vec::new();
    let mut is_selected = vec![false; ordered.len()];
    let mut candidates = vec![false; ordered.len()];
    for g in &chosen {
        let Ok(i) = members.binary_search_by(|(k, _)| (*k).cmp(g.name.as_str())) else { continue };
        let mut first = true;
        for &at in &members[i].1 {
            if is_selected[at] {
                continue;
            }
            if first {
                selected.push(ordered[at]);
                is_selected[at] = true;
                first = false;
            } else {
                candidates[at] = true;
            }
        }
    }
    let cluster_max = cluster_sc.map(|c| c.max_groups).unwrap_or(0);
    if cluster_max > 0 && selected.len() > cluster_max as usize {
        // Karmada would return one cluster per group anyway, breaking the cluster maxGroups.
        return Err(format!(
            "spreadConstraints: {} {what} groups need {} clusters, more than the cluster maxGroups {cluster_max}",
            chosen.len(),
            selected.len()
        ));
    }
    for (c, s) in candidates.iter_mut().zip(&is_selected) {
        *c &= !s;
    }
    // The candidates by score desc, available desc, name asc: in the global order, once each.
    let wanted = limit(cluster_max, selected.len() + candidates.iter().filter(|c| **c).count());
    let rest = wanted.saturating_sub(selected.len());
    let by_order = ordered.iter().zip(&candidates).filter(|(_, c)| **c).map(|(v, _)| *v);
    selected.extend(by_order.take(rest));
    Ok(selected)
}

#[cfg(test)]
mod tests;
