//! Group scoring and group selection (Karmada's `calcGroupScore` and `selectGroups`).

use super::avail;
use crate::schedule::ClusterVerdict;

/// Weight of one unit of replicas in a group score: replicas dominate, cluster scores
/// (0..=100 per plugin) break ties.
pub const WEIGHT_UNIT: i64 = 1000;

/// A candidate group: `value` = its number of clusters, `weight` = its score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    pub name: String,
    pub value: i64,
    pub weight: i64,
}

/// Karmada's group score (`calcGroupScore`). `clusters` are in the global order (score desc,
/// available desc); `min_groups` is the group level's minGroups, `cluster_min_groups` the
/// cluster constraint's (0 without one).
///
/// - Duplicated: `1000 · #clusters that can hold all replicas + their mean score`.
/// - Divided: target = `⌈replicas / minGroups⌉`; walk the clusters summing available replicas
///   until at least `max(cluster minGroups, minGroups)` clusters are walked and the target is
///   reached; `1000 · min(sum, target) + mean score of the clusters walked` (all clusters when
///   the target is not reached). Groups that reach the target tie on the replica part, and
///   the search then keeps Karmada's order of groups (value, then name).
pub fn group_score(
    clusters: &[&ClusterVerdict],
    replicas: i32,
    min_groups: i32,
    cluster_min_groups: i32,
    duplicated: bool,
) -> i64 {
    if clusters.is_empty() {
        return 0;
    }
    let replicas = i64::from(replicas.max(0));
    if duplicated {
        let valid: Vec<&&ClusterVerdict> = clusters.iter().filter(|c| avail(c) >= replicas).collect();
        if valid.is_empty() {
            return 0;
        }
        let sum: i64 = valid.iter().map(|c| c.score).sum();
        return valid.len() as i64 * WEIGHT_UNIT + sum / valid.len() as i64;
    }
    let min = i64::from(min_groups.max(1));
    let target = (replicas + min - 1) / min;
    let walk_at_least = i64::from(cluster_min_groups).max(min);
    let (mut sum_avail, mut sum_score, mut walked) = (0i64, 0i64, 0i64);
    for c in clusters {
        sum_avail = sum_avail.saturating_add(avail(c));
        sum_score += c.score;
        walked += 1;
        if walked >= walk_at_least && sum_avail >= target {
            break;
        }
    }
    if sum_avail < target {
        return sum_avail.saturating_mul(WEIGHT_UNIT) + sum_score / clusters.len() as i64;
    }
    target.saturating_mul(WEIGHT_UNIT) + sum_score / walked
}

/// A feasible combination found by the search.
#[derive(Debug, Clone)]
struct Path {
    id: usize,
    groups: Vec<GroupInfo>,
    weight: i64,
    value: i64,
}

/// Upper bound on recorded combinations, so a pathological label spread cannot stall a pass.
const MAX_PATHS: usize = 100_000;

/// Karmada's `selectGroups`: every combination of `min..=max` groups whose values sum to at
/// least `target` (depth first over the groups sorted by value asc, weight desc, name asc,
/// stopping a path as soon as it is feasible); the best has the highest total weight, then
/// value, then was found first; a strict prefix of the best that is also feasible wins over it.
/// The chosen groups come back by weight desc, name asc. Empty when nothing is feasible.
pub fn select_groups(mut groups: Vec<GroupInfo>, min: usize, max: usize, target: i64) -> Vec<GroupInfo> {
    if groups.is_empty() {
        return Vec::new();
    }
    groups.sort_by(|a, b| a.value.cmp(&b.value).then(b.weight.cmp(&a.weight)).then(a.name.cmp(&b.name)));
    let mut search = Search { groups: &groups, min, max, target, stack: Vec::new(), paths: Vec::new() };
    search.dfs(0, 0);
    let mut paths = search.paths;
    if paths.is_empty() {
        return Vec::new();
    }
    paths.sort_by(|a, b| b.weight.cmp(&a.weight).then(b.value.cmp(&a.value)).then(a.id.cmp(&b.id)));
    let mut best = 0;
    for i in 1..paths.len() {
        let (p, sub) = (&paths[best], &paths[i]);
        if sub.groups.len() < p.groups.len() && sub.groups.iter().zip(&p.groups).all(|(a, b)| a.name == b.name) {
            best = i;
        }
    }
    paths.swap_remove(best).groups
}

/// The depth-first search of [`select_groups`]: what every step shares (the groups sorted,
/// the bounds and the target), the groups on the current path and the feasible paths found.
struct Search<'a> {
    groups: &'a [GroupInfo],
    min: usize,
    max: usize,
    target: i64,
    /// Positions in `groups` of the current path.
    stack: Vec<usize>,
    paths: Vec<Path>,
}

impl Search<'_> {
    /// Extends the current path (whose values sum to `sum`) by each group from `begin` on.
    fn dfs(&mut self, sum: i64, begin: usize) {
        let (groups, stack) = (self.groups, &self.stack);
        if self.paths.len() >= MAX_PATHS {
            return;
        }
        if sum >= self.target && stack.len() >= self.min && stack.len() <= self.max {
            let mut chosen: Vec<GroupInfo> = stack.iter().map(|i| groups[*i].clone()).collect();
            chosen.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.name.cmp(&b.name)));
            self.paths.push(Path {
                id: self.paths.len(),
                weight: chosen.iter().map(|g| g.weight).sum(),
                value: chosen.iter().map(|g| g.value).sum(),
                groups: chosen,
            });
            return;
        }
        if stack.len() >= self.max {
            return;
        }
        for (i, group) in groups.iter().enumerate().skip(begin) {
            self.stack.push(i);
            self.dfs(sum + group.value, i + 1);
            self.stack.pop();
        }
    }
}
