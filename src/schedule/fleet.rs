//! The per-pass fleet context of the scheduler ([`Fleet`]) and the compact cluster lists of a
//! result ([`ClusterSet`]).
//!
//! A [`Fleet`] is built once per pass from the pass's snapshots: the clusters in name order
//! (sorted once, not per workload), their positions by name, the universe id of a result (the
//! hash of the sorted names, [`Fleet::universe`]) and the filter memo. A filter that declares a
//! memo key ([`super::framework::FilterPlugin::memo_key`]) is evaluated once per (key, cluster)
//! and its answer (a pass bitset and an interned reason per rejected cluster) is shared by every
//! workload with the same key; identical answers share one id, and the rejections of each
//! distinct combination of answers are grouped by identical reasons once. Per workload, the
//! scheduler then does word-level bitset ANDs (when the combination is new), copies the list
//! of feasible clusters and a handful of groups, and runs the remaining work (estimators,
//! scorers, selection) on the feasible clusters only. Clusters of the previous placement are
//! evaluated per pair, as several filters let them pass.
//!
//! The snapshots may change within a pass (assumed replicas change free capacity), but not in
//! what filters read, and never in number or order: every call with a fleet passes the same
//! snapshot list the fleet was built from.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::framework::{FilterPlugin, Fit};
use super::positions::{FleetPos, GroupIx, UniversePos, ViewIx};
use crate::model::ClusterSnapshot;
use crate::util::hash::fnv1a64;

/// Sorted, disjoint, non-adjacent ranges `[start, end)` of positions in a sorted list of
/// cluster names (a result's universe: [`UniversePos`]). The ranges keep the positions' numbers
/// (the stored form); every member given or taken is a [`UniversePos`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClusterSet(Vec<(u32, u32)>);

impl ClusterSet {
    /// From positions in ascending order.
    pub fn from_sorted(positions: impl IntoIterator<Item = UniversePos>) -> Self {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for p in positions.into_iter().map(UniversePos::get) {
            match out.last_mut() {
                Some((_, end)) if *end == p => *end = p + 1,
                _ => out.push((p, p + 1)),
            }
        }
        ClusterSet(out)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of clusters.
    pub fn len(&self) -> usize {
        self.0.iter().map(|(a, b)| (b - a) as usize).sum()
    }

    /// Positions in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = UniversePos> + '_ {
        self.0.iter().flat_map(|(a, b)| *a..*b).map(UniversePos::new)
    }

    pub fn contains(&self, p: UniversePos) -> bool {
        let p = p.get();
        let i = self.0.partition_point(|(_, end)| *end <= p);
        self.0.get(i).is_some_and(|(start, _)| *start <= p)
    }

    pub fn insert(&mut self, at: UniversePos) {
        if self.contains(at) {
            return;
        }
        let p = at.get();
        let i = self.0.partition_point(|(_, end)| *end < p);
        // Ranges before i end before p; the one at i (if any) ends at p or starts after p.
        let joins_left = self.0.get(i).is_some_and(|(_, end)| *end == p);
        let right = if joins_left { i + 1 } else { i };
        let joins_right = self.0.get(right).is_some_and(|(start, _)| *start == p + 1);
        match (joins_left, joins_right) {
            (true, true) => {
                self.0[i].1 = self.0[right].1;
                self.0.remove(right);
            }
            (true, false) => self.0[i].1 = p + 1,
            (false, true) => self.0[right].0 = p,
            (false, false) => self.0.insert(i, (p, p + 1)),
        }
    }

    pub fn remove(&mut self, at: UniversePos) {
        let p = at.get();
        let i = self.0.partition_point(|(_, end)| *end <= p);
        let Some(&(start, end)) = self.0.get(i) else { return };
        if start > p {
            return;
        }
        match (start == p, end == p + 1) {
            (true, true) => {
                self.0.remove(i);
            }
            (true, false) => self.0[i].0 = p + 1,
            (false, true) => self.0[i].1 = p,
            (false, false) => {
                self.0[i].1 = p;
                self.0.insert(i + 1, (p + 1, end));
            }
        }
    }
}

/// Clusters the filters rejected for the same reasons (`"<filter>: <reason>"`, in filter order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub reasons: Vec<String>,
    /// Positions in the result's universe (its clusters sorted by name).
    pub clusters: ClusterSet,
}

/// The universe id of a sorted list of cluster names: FNV-1a 64 of [`names_blob`], so the
/// store keeps the names as a content-addressed blob under that id.
pub fn universe_of(names: &[String]) -> u64 {
    if names.is_empty() { 0 } else { fnv1a64(&names_blob(names)) }
}

/// The names as stored: a JSON array of the sorted names.
pub fn names_blob(names: &[String]) -> Vec<u8> {
    serde_json::to_vec(names).unwrap_or_default()
}

/// One filter's answer over the fleet.
struct Answer {
    /// Bit per position: passed.
    pass: Vec<u64>,
    /// `"<filter>: <reason>"` per position, None where passed.
    reasons: Vec<Option<Arc<str>>>,
}

/// The filters' combined answer for one combination of answers.
pub(crate) struct Combo {
    /// Positions that pass every filter, ascending.
    pub(crate) feasible: Vec<FleetPos>,
    /// Group of each position in `groups`; `None` for feasible positions.
    pub(crate) group_of: Vec<Option<GroupIx>>,
    /// Rejected positions grouped by identical reasons, by first position.
    pub(crate) groups: Vec<Rejection>,
}

/// The id of a distinct answer of a filter over the fleet: its index in [`Memo::answers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct AnswerId(u32);

#[derive(Default)]
struct Memo {
    /// (filter, memo key) → answer id.
    keyed: HashMap<(&'static str, u64), AnswerId>,
    answers: Vec<Arc<Answer>>,
    /// Content hash of an answer → ids with that hash.
    by_content: HashMap<u64, Vec<AnswerId>>,
    combos: HashMap<Vec<AnswerId>, Arc<Combo>>,
    /// Memo key of a cluster affinity ([`crate::schedule::framework::memo_hash`]) → whether
    /// each position matches it ([`Fleet::affinity_matches`]).
    affinities: HashMap<u64, Arc<[bool]>>,
    /// A topology level's key → its groups by position ([`Fleet::level_index`]).
    levels: HashMap<String, Arc<crate::schedule::select::LevelIndex>>,
}

/// The scheduler's per-pass view of the fleet (see the module documentation). `Send + Sync`:
/// the memo is behind a mutex.
pub struct Fleet {
    /// Index in the pass's snapshots of each cluster, in name order.
    order: Vec<ViewIx>,
    /// Position of each snapshot (by its index in the pass's snapshots): `order` inverted.
    rank: Vec<FleetPos>,
    /// Cluster names in order.
    names: Vec<String>,
    positions: crate::util::hash::KeyMap<String, FleetPos>,
    universe: u64,
    /// Whether keyed filters are memoised (false: every filter per pair, the reference path).
    memoise: bool,
    memo: Mutex<Memo>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet").field("clusters", &self.names.len()).field("universe", &self.universe).finish()
    }
}

impl Fleet {
    /// The fleet of a pass's snapshots.
    pub fn new(clusters: &[ClusterSnapshot]) -> Self {
        let mut order: Vec<ViewIx> = ViewIx::all(clusters.len()).collect();
        order.sort_by(|a, b| clusters[a.index()].name.cmp(&clusters[b.index()].name));
        let names: Vec<String> = order.iter().map(|i| clusters[i.index()].name.clone()).collect();
        let positions = names.iter().enumerate().map(|(p, n)| (n.clone(), FleetPos::at(p))).collect();
        let universe = universe_of(&names);
        let mut rank = vec![FleetPos::new(0); order.len()];
        for (p, &i) in order.iter().enumerate() {
            rank[i.index()] = FleetPos::at(p);
        }
        let memoise = crate::util::memo::on(crate::util::memo::Name::FleetFilters);
        Fleet { order, rank, names, positions, universe, memoise, memo: Mutex::new(Memo::default()) }
    }

    /// A fleet that evaluates every filter for every pair (the reference the memo must equal).
    pub fn unmemoised(clusters: &[ClusterSnapshot]) -> Self {
        Fleet { memoise: false, ..Fleet::new(clusters) }
    }

    /// Number of clusters.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Cluster names in order (the universe of this fleet's results).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The universe id of this fleet's results ([`universe_of`] its names).
    pub fn universe(&self) -> u64 {
        self.universe
    }

    /// The positions of the clusters at these indices of the pass's snapshots (the pass's
    /// views), when they ascend as the indices do (so in name order; the snapshots of a pass
    /// are sorted by name, so they always do there): `None` if one is not a snapshot's or they
    /// do not ascend. The one conversion from the views' index space to the fleet's.
    pub fn positions_of(&self, indices: &[ViewIx]) -> Option<Vec<FleetPos>> {
        let mut out = Vec::with_capacity(indices.len());
        for &i in indices {
            let p = *self.rank.get(i.index())?;
            if out.last().is_some_and(|&last| last >= p) {
                return None;
            }
            out.push(p);
        }
        Some(out)
    }

    /// Position of a cluster in name order.
    pub fn position(&self, name: &str) -> Option<FleetPos> {
        self.positions.get(name).copied()
    }

    /// The snapshot at a position.
    pub fn cluster<'c>(&self, clusters: &'c [ClusterSnapshot], p: FleetPos) -> &'c ClusterSnapshot {
        &clusters[self.order[p.index()].index()]
    }

    /// The snapshot of a cluster by name.
    pub fn get<'c>(&self, clusters: &'c [ClusterSnapshot], name: &str) -> Option<&'c ClusterSnapshot> {
        self.position(name).map(|p| self.cluster(clusters, p))
    }

    /// Whether `clusters` is (by names and order) the list this fleet was built from.
    pub fn fits(&self, clusters: &[ClusterSnapshot]) -> bool {
        clusters.len() == self.order.len()
            && self.order.iter().zip(&self.names).all(|(i, n)| i.of(clusters).is_some_and(|c| &c.name == n))
    }

    pub(crate) fn memoises(&self) -> bool {
        self.memoise
    }

    /// The pass's memo, taken back when a thread panicked while holding it (as the filters'
    /// memo always was: at worst an answer is interned and not yet keyed, and made again).
    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        match self.memo.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The groups of each position at a topology level (`key` names the level; `build` makes
    /// the index from the clusters), memoised for the pass: the level's keys are static facts,
    /// so the selection by groups of every decision and outcome check of the pass reads them
    /// by position instead of from each cluster's snapshot.
    pub(crate) fn level_index(
        &self,
        key: &str,
        build: impl FnOnce() -> crate::schedule::select::LevelIndex,
    ) -> Arc<crate::schedule::select::LevelIndex> {
        if let Some(known) = self.memo().levels.get(key) {
            return known.clone();
        }
        let index = Arc::new(build());
        self.memo().levels.insert(key.to_string(), index.clone());
        index
    }

    /// Whether the cluster at each position matches `affinity` (static facts: names, labels,
    /// fields), memoised for the pass by the affinity's memo key like the filters' answers:
    /// the static weight lists of thousands of policies name the same few selectors.
    pub(crate) fn affinity_matches(
        &self,
        affinity: &crate::policy::types::ClusterAffinity,
        clusters: &[ClusterSnapshot],
    ) -> Arc<[bool]> {
        let evaluate = || -> Arc<[bool]> {
            (0..self.len())
                .map(|p| {
                    crate::policy::matching::cluster_matches(affinity, &self.cluster(clusters, FleetPos::at(p)).facts())
                })
                .collect()
        };
        if !self.memoise {
            return evaluate();
        }
        let key = crate::schedule::framework::memo_hash(affinity);
        if let Some(known) = self.memo().affinities.get(&key) {
            return known.clone();
        }
        let answer = evaluate();
        self.memo().affinities.insert(key, answer.clone());
        answer
    }

    /// The combined answer of `filters` for a workload: each keyed filter's memoised answer
    /// (evaluated now over every cluster if new), unkeyed ones evaluated over every cluster.
    /// `eval` runs a filter on a cluster with an empty previous placement.
    pub(crate) fn combo(
        &self,
        filters: &[Box<dyn FilterPlugin>],
        keys: &[Option<u64>],
        clusters: &[ClusterSnapshot],
        eval: &dyn Fn(&dyn FilterPlugin, &ClusterSnapshot) -> Fit,
    ) -> Arc<Combo> {
        let mut memo = self.memo();
        let mut ids = Vec::with_capacity(filters.len());
        for (f, key) in filters.iter().zip(keys) {
            let known = key.and_then(|k| memo.keyed.get(&(f.name(), k)).copied());
            let id = match known {
                Some(id) => id,
                None => {
                    let answer = self.evaluate(f.as_ref(), clusters, eval);
                    let id = memo.intern(answer);
                    if let Some(k) = key {
                        memo.keyed.insert((f.name(), *k), id);
                    }
                    id
                }
            };
            ids.push(id);
        }
        if let Some(c) = memo.combos.get(&ids) {
            return c.clone();
        }
        let answers: Vec<Arc<Answer>> = ids.iter().map(|i| memo.answers[i.0 as usize].clone()).collect();
        let combo = Arc::new(self.combine(&answers));
        memo.combos.insert(ids, combo.clone());
        combo
    }

    fn evaluate(
        &self,
        f: &dyn FilterPlugin,
        clusters: &[ClusterSnapshot],
        eval: &dyn Fn(&dyn FilterPlugin, &ClusterSnapshot) -> Fit,
    ) -> Answer {
        let n = self.len();
        let mut pass = vec![0u64; n.div_ceil(64)];
        let mut reasons = Vec::with_capacity(n);
        let mut interned: HashMap<String, Arc<str>> = HashMap::new();
        for p in 0..n {
            match eval(f, self.cluster(clusters, FleetPos::at(p))) {
                Fit::Pass => {
                    pass[p / 64] |= 1 << (p % 64);
                    reasons.push(None);
                }
                Fit::Reject(r) => {
                    let text = format!("{}: {r}", f.name());
                    let shared = interned.entry(text).or_insert_with_key(|t| Arc::from(t.as_str())).clone();
                    reasons.push(Some(shared));
                }
            }
        }
        Answer { pass, reasons }
    }

    fn combine(&self, answers: &[Arc<Answer>]) -> Combo {
        let n = self.len();
        let mut all = vec![u64::MAX; n.div_ceil(64)];
        for a in answers {
            for (w, x) in all.iter_mut().zip(&a.pass) {
                *w &= x;
            }
        }
        let mut feasible = Vec::new();
        let mut group_of = vec![None; n];
        let mut groups: Vec<(Vec<Arc<str>>, Vec<UniversePos>)> = Vec::new();
        let mut index: HashMap<Vec<Arc<str>>, GroupIx> = HashMap::new();
        for (p, g) in group_of.iter_mut().enumerate() {
            if all[p / 64] & (1 << (p % 64)) != 0 {
                feasible.push(FleetPos::at(p));
                continue;
            }
            let reasons: Vec<Arc<str>> = answers.iter().filter_map(|a| a.reasons[p].clone()).collect();
            let id = *index.entry(reasons).or_insert_with_key(|r| {
                groups.push((r.clone(), Vec::new()));
                GroupIx::at(groups.len() - 1)
            });
            groups[id.index()].1.push(FleetPos::at(p).in_universe());
            *g = Some(id);
        }
        let groups = groups
            .into_iter()
            .map(|(reasons, members)| Rejection {
                reasons: reasons.iter().map(|r| r.to_string()).collect(),
                clusters: ClusterSet::from_sorted(members),
            })
            .collect();
        Combo { feasible, group_of, groups }
    }
}

impl Memo {
    /// The id of an answer, shared with an identical earlier one.
    fn intern(&mut self, a: Answer) -> AnswerId {
        let h = {
            let reasons: Vec<Option<&str>> = a.reasons.iter().map(|r| r.as_deref()).collect();
            super::framework::memo_hash(&(&a.pass, reasons))
        };
        if let Some(ids) = self.by_content.get(&h) {
            for id in ids {
                let b = &self.answers[id.0 as usize];
                if b.pass == a.pass && b.reasons == a.reasons {
                    return *id;
                }
            }
        }
        let id = AnswerId(u32::try_from(self.answers.len()).unwrap_or(u32::MAX));
        self.answers.push(Arc::new(a));
        self.by_content.entry(h).or_default().push(id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fleet_is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<Fleet>();
    }

    proptest! {
        #[test]
        fn cluster_set_is_a_set(ops in proptest::collection::vec((any::<bool>(), 0u32..40), 0..80)) {
            let mut set = ClusterSet::default();
            let mut model = std::collections::BTreeSet::new();
            for (insert, p) in ops {
                let at = UniversePos::new(p);
                if insert { set.insert(at); model.insert(p); } else { set.remove(at); model.remove(&p); }
                prop_assert_eq!(set.iter().map(UniversePos::get).collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
                prop_assert_eq!(&set, &ClusterSet::from_sorted(model.iter().copied().map(UniversePos::new)), "canonical form");
                prop_assert_eq!(set.len(), model.len());
                for q in 0..40 {
                    prop_assert_eq!(set.contains(UniversePos::new(q)), model.contains(&q));
                }
            }
        }
    }
}
