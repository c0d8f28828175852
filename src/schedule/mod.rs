//! Scheduling: which clusters get a workload and how many replicas each.
//!
//! Owns: the plugin framework ([`framework`]), the built-in plugins ([`plugins`]), cluster
//! selection ([`select`]), replica assignment ([`assign`]) and the stability engine
//! ([`stability`]: failover, descheduling, move-back, rate limit, storm guard; a
//! [`ScheduleRequest::failover`] carries its directives into one decision). Pure and synchronous: no I/O,
//! no clock, no store. Same inputs ⇒ same decision. "Cannot schedule" is an outcome with
//! reasons, not an error.
//!
//! # Its stage of the pass
//!
//! **Schedule** (`schedule::schedule_in`, with the pass's `schedule::Fleet`): for each template
//! claimed by a policy (`policy::matching::claim`): filter plugins, score plugins, estimators
//! (`model::estimate`), cluster selection, replica assignment (Webster). Pure and deterministic.
//! The fleet is built once per pass (clusters in name order, positions by name) and memoises
//! filters: a filter with a memo key (`FilterPlugin::memo_key`: a hash of the projection of the
//! workload its answer depends on — affinity term, tolerations, GVK, spread constraints, duplicated
//! replicas, the confidence threshold) is evaluated once per (key, cluster); identical answers
//! share an id, and each distinct combination of answers is ANDed and its rejections grouped once.
//! Per workload: the combination's feasible list and groups are copied, clusters of the previous
//! placement are evaluated per pair, and estimators, scorers and selection run on the feasible
//! clusters only. The result is compact: verdicts of feasible clusters (with typed estimates),
//! rejected clusters grouped by identical reasons as position ranges in the result's universe (the
//! sorted cluster names, stored as a blob under `ScheduleResult::universe`). Webster costs
//! O(clusters · log replicas), not O(replicas) (`schedule::assign::webster`: a binary search on the
//! divisor, then at most one heap step per cluster; up to two seats per cluster, every seat from
//! the heap), over the selected clusters in any order (`assign::webster_of`: dynamic and aggregated
//! division weigh them in selection order, no map by name). Karmada's cluster order breaks ties by
//! fleet position, which is name order; the selected verdicts are marked in one walk of the
//! verdicts and the name-ordered targets (`mark_selected`; a lookup per verdict when they come in
//! another order). The fleet also memoises which clusters match a cluster affinity
//! (`Fleet::affinity_matches`, keyed like the filters): static weight lists read it per entry, not
//! per cluster; and the groups of each position at a topology level (`Fleet::level_index`,
//! `select::LevelIndex`): selection by groups finds a verdict's groups by its position, not in its
//! cluster's snapshot.
//!
//! # In detail
//!
//! `fleet.rs`: the per-pass `Fleet` (name order, filter memo, `Send + Sync`) and `ClusterSet`
//! (compact position ranges); the plugin framework (`framework.rs`: `FilterPlugin` with its
//! optional memo key, `ScorePlugin` with per-plugin normalisation, a context struct, **the one list
//! of plugins** `registry()`, `Framework::build` with its content `digest` — part of every decision
//! key, so a profile changed under the same name decides again), profiles (`profile.rs`:
//! `[profiles.*]` and `[cost]` built into `Framework`s, the `fedsched.io/profile` annotation), one
//! file per plugin in `plugins/`, cluster selection (`select/`: spread constraints; `groups.rs` has
//! Karmada's group score and group search), replica assignment (`assign.rs`: Webster — capped,
//! `webster_capped`, for a member that takes no new replicas: `schedule::health_taint`, an
//! untolerated not-ready / unreachable taint —, static, dynamic steady, aggregated — aggregated
//! takes the candidates in selection order and breaks ties with `util::gosort` as Karmada does).
//! `stability/`: the stability engine — `health.rs` (per-member timelines: NotReady and Unreachable
//! are one spell, one healthy observation resets it; the storm guard; Karmada's taint names),
//! `workload.rs` (purge, cluster and application failover, Unschedulable rescheduling, move-back,
//! Karmada's toleration rules), `mod.rs` (`StabilityState`, `Action` with its `Cause`, `step`).
//! Pure and synchronous; "cannot schedule" is an `Outcome`, not an error.

pub mod assign;
pub mod fleet;
pub mod framework;
pub mod plugins;
pub mod positions;
pub mod profile;
pub mod rollout;
pub mod select;
pub mod stability;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::estimate::push_estimates;
use crate::model::{ClusterSnapshot, Workload};
use crate::policy::ObjectKey;
use crate::policy::types::{
    ClusterAffinity, DynamicWeightFactor, Placement, ReplicaDivisionPreference, ReplicaSchedulingType,
};

pub use fleet::{ClusterSet, Fleet, Rejection};
pub use framework::Framework;
pub use positions::{FleetPos, GroupIx, HeldIx, UniversePos, ViewIx};

use assign::TieBreak;
use framework::{Fit, MemoContext, PluginContext};

/// Prefix of the reason line explain shows for an estimator's answer
/// (`estimator <name>: <n> more replicas fit`, from [`ClusterVerdict::estimates`]).
pub const ESTIMATOR_PREFIX: &str = "estimator ";

/// Prefix of the verdict reasons that explain an estimate (node fit, reserve, confidence,
/// per-workload limit).
pub const MODEL_PREFIX: &str = "model: ";

/// Applies a cluster's confidence to its free replicas: unchanged at 1, multiplied by the
/// confidence between `[model] min_confidence` and 1, zero below (existing replicas stay).
fn confidence_discount(fw: &Framework, cluster: &ClusterSnapshot, free: i64, reasons: &mut Vec<String>) -> i64 {
    let c = cluster.confidence();
    if c >= 1.0 {
        return free;
    }
    let min = fw.settings.model.min_confidence;
    let (age, failures) = cluster.freshness.map_or((0, 0), |f| (f.age_ms, f.consecutive_failures));
    let age = humantime::format_duration(std::time::Duration::from_secs(age / 1000));
    let out = if c < min { 0 } else { crate::model::estimate::discount(free, c) };
    let why = if c < min { format!(" (below {min:.2}: no new replicas)") } else { String::new() };
    reasons.push(format!(
        "{MODEL_PREFIX}confidence {c:.2} (data {age} old, {failures} failed polls){why}: {free} more replicas discounted to {out}"
    ));
    out
}

/// Everything a scheduling decision depends on, besides the cluster snapshots.
pub struct ScheduleRequest<'a> {
    pub key: &'a ObjectKey,
    pub uid: Option<&'a str>,
    pub workload: &'a Workload,
    pub placement: &'a Placement,
    /// Replicas per cluster of the previous decision (Karmada's `spec.clusters`).
    pub previous: &'a BTreeMap<String, i32>,
    /// The `clusterAffinities` term the previous decision used.
    pub previous_affinity: Option<&'a str>,
    /// What failover asks of this decision ([`NO_FAILOVER`] when nothing).
    pub failover: &'a Failover,
}

/// What the stability engine asks of one decision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Failover {
    /// Clusters the workload is evicted from: the `cluster-eviction` filter rejects them
    /// (Karmada's ClusterEviction filter over the graceful eviction tasks).
    pub evicted: std::collections::BTreeSet<String>,
    /// Per cluster, the most replicas it may hold while its capacity figure is distrusted
    /// (replicas stayed Unschedulable there).
    pub caps: BTreeMap<String, i32>,
}

/// No failover directive.
pub static NO_FAILOVER: Failover = Failover { evicted: std::collections::BTreeSet::new(), caps: BTreeMap::new() };

/// The verdict on one cluster that passed the filters (or that a dependency adds), for explain
/// and history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterVerdict {
    pub name: String,
    pub feasible: bool,
    /// Why the cluster was rejected, or notes on how it was treated (model lines, the
    /// dependents that pulled it).
    pub reasons: Vec<String>,
    /// Weighted sum of the score plugins.
    pub score: i64,
    /// Score per plugin (names borrowed, as the estimates').
    pub scores: Vec<(std::borrow::Cow<'static, str>, i64)>,
    /// Replicas the cluster can hold (free + already assigned), when known.
    pub available_replicas: Option<i64>,
    /// Replicas chosen for this cluster; None when not selected or not a workload.
    pub replicas: Option<i32>,
    pub selected: bool,
    /// Each estimator's answer (more replicas that fit), in estimator order (the built-in
    /// names are borrowed: no allocation per cluster and decision).
    pub estimates: Vec<(std::borrow::Cow<'static, str>, i64)>,
}

impl ClusterVerdict {
    /// The verdict on a cluster the filters rejected.
    pub fn rejected(name: String, reasons: Vec<String>) -> Self {
        ClusterVerdict {
            name,
            feasible: false,
            reasons,
            score: 0,
            scores: Vec::new(),
            available_replicas: None,
            replicas: None,
            selected: false,
            estimates: Vec::new(),
        }
    }
}

/// The outcome of scheduling one workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Selected clusters with their replicas (None = object without replicas).
    Scheduled {
        targets: BTreeMap<String, Option<i32>>,
    },
    Unschedulable {
        reason: String,
    },
}

/// A whole scheduling decision, compact: full verdicts only for the clusters that passed the
/// filters (and those a dependency adds); the rejected ones grouped by identical reasons, as
/// ranges of positions in the result's universe (every cluster considered, sorted by name;
/// [`fleet::names_blob`] under the id [`ScheduleResult::universe`]). [`ScheduleResult::expand`]
/// gives every cluster's verdict back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleResult {
    pub outcome: Outcome,
    /// Clusters that passed the filters, and clusters a dependency adds, by name. Shared: a
    /// placement, the decision that made it and its history record hold the same verdicts
    /// (hundreds per workload at 1,000 clusters), so copying a record does not copy them;
    /// stored as a plain list.
    pub verdicts: std::sync::Arc<Vec<ClusterVerdict>>,
    /// Clusters the filters rejected, grouped by identical reasons.
    pub rejected: Vec<Rejection>,
    /// Id of the sorted cluster names `rejected` indexes ([`fleet::universe_of`]); 0 when
    /// nothing was considered.
    pub universe: u64,
    /// The `clusterAffinities` term used, if the placement has terms.
    pub affinity_name: Option<String>,
}

impl ScheduleResult {
    /// A result without verdicts (the workload could not be read, no policy…).
    pub fn unschedulable(reason: impl Into<String>) -> Self {
        ScheduleResult {
            outcome: Outcome::Unschedulable { reason: reason.into() },
            verdicts: Default::default(),
            rejected: Vec::new(),
            universe: 0,
            affinity_name: None,
        }
    }

    pub fn targets(&self) -> Option<&BTreeMap<String, Option<i32>>> {
        match &self.outcome {
            Outcome::Scheduled { targets } => Some(targets),
            Outcome::Unschedulable { .. } => None,
        }
    }

    /// Names of the clusters that passed the filters, by name: the only clusters whose dynamic
    /// state (capacity, deductions, confidence) the decision read; the others it read only
    /// through the fleet's static facts (the reconciler keys cached decisions on this).
    pub fn feasible_clusters(&self) -> Vec<&str> {
        self.verdicts.iter().filter(|v| v.feasible).map(|v| v.name.as_str()).collect()
    }

    /// Every cluster's verdict, by name: the kept verdicts and the rejected groups expanded.
    /// `names` is the universe (the sorted names stored under [`ScheduleResult::universe`]);
    /// positions outside it are skipped.
    pub fn expand(&self, names: &[String]) -> Vec<ClusterVerdict> {
        let mut out: Vec<ClusterVerdict> = self.verdicts.to_vec();
        for g in &self.rejected {
            for p in g.clusters.iter() {
                if let Some(n) = p.of(names) {
                    out.push(ClusterVerdict::rejected(n.clone(), g.reasons.clone()));
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Number of clusters rejected by the filters.
    pub fn rejected_count(&self) -> usize {
        self.rejected.iter().map(|g| g.clusters.len()).sum()
    }
}

/// The pass's snapshots seen through its [`Fleet`]: clusters by name in O(1).
pub struct FleetView<'a> {
    pub fleet: &'a Fleet,
    pub clusters: &'a [ClusterSnapshot],
}

impl select::Clusters for FleetView<'_> {
    fn get(&self, name: &str) -> Option<&ClusterSnapshot> {
        self.fleet.get(self.clusters, name)
    }

    fn level_index(&self, level: select::Level<'_>) -> Option<std::sync::Arc<select::LevelIndex>> {
        // (The unmemoised fleet is the reference the memo must equal: it reads each cluster.)
        if !self.fleet.memoises() || self.clusters.len() != self.fleet.len() {
            return None;
        }
        let build = || select::LevelIndex::build(level, self.fleet.len(), |p| self.fleet.cluster(self.clusters, p));
        Some(self.fleet.level_index(&level.key(), build))
    }

    fn position(&self, name: &str) -> Option<FleetPos> {
        self.fleet.position(name)
    }
}

/// Schedules one workload over the given clusters (a fleet of its own; a pass shares one
/// [`Fleet`] through [`schedule_in`]).
pub fn schedule(fw: &Framework, req: &ScheduleRequest<'_>, clusters: &[ClusterSnapshot]) -> ScheduleResult {
    schedule_in(&Fleet::new(clusters), fw, req, clusters)
}

/// Schedules one workload over the pass's clusters with the pass's fleet context. `clusters`
/// must be the snapshot list `fleet` was built from (by names and order; their contents may
/// have changed in free capacity); otherwise a fleet of their own is used.
pub fn schedule_in(
    fleet: &Fleet,
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    clusters: &[ClusterSnapshot],
) -> ScheduleResult {
    schedule_reads(fleet, fw, req, clusters).0
}

/// [`schedule_in`], and whether its outcome read the feasible clusters' capacity.
///
/// `false` means the outcome (scheduled or not, and the targets) is a function of the
/// request, the previous placement and the fleet's static facts alone: it would be the same
/// with any free capacity, confidence or scores of the clusters. That holds when every
/// `clusterAffinities` term tried selected its clusters without reading scores or available
/// replicas (no spread constraints, or static weights, which ignore them) and divided the
/// replicas without them: Duplicated, static weights, or dynamic weights and Aggregated while
/// the previous placement on selected clusters covers the desired replicas (steady or scaling
/// down: Karmada keeps or shrinks it). The reconciler reuses such a decision when only
/// capacity changed; the verdicts it keeps carry the figures it was made with, as the history
/// does ([`crate::reconcile`]'s record stage).
pub fn schedule_reads(
    fleet: &Fleet,
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    clusters: &[ClusterSnapshot],
) -> (ScheduleResult, bool) {
    if clusters.len() != fleet.len() {
        let own = Fleet::new(clusters);
        return schedule_reads(&own, fw, req, clusters);
    }
    debug_assert!(fleet.fits(clusters), "a fleet used with snapshots it was not built from");
    let terms = &req.placement.cluster_affinities;
    if terms.is_empty() {
        return schedule_term(fleet, fw, req, req.placement.cluster_affinity.as_ref(), clusters, None);
    }
    // Ordered groups: start at the term in force, take the first that schedules.
    let start = req.previous_affinity.and_then(|n| terms.iter().position(|t| t.affinity_name == n)).unwrap_or(0);
    let mut last = None;
    let mut read = false;
    for term in &terms[start..] {
        let aff = term.affinity();
        let (r, reads) = schedule_term(fleet, fw, req, Some(&aff), clusters, Some(term.affinity_name.clone()));
        read |= reads;
        if matches!(r.outcome, Outcome::Scheduled { .. }) {
            return (r, read);
        }
        last = Some(r);
    }
    (last.unwrap_or_else(|| ScheduleResult::unschedulable("no clusterAffinities term")), read)
}

/// Whether a result `schedule_reads` gave for `req`, which read capacity, stands on these
/// clusters as they are now (its `held` verdicts, those of its feasible clusters as they were
/// when it was made or last stood, and its `outcome`), without filtering, rendering or
/// recording again: its feasible clusters' verdicts (available replicas, the model's notes,
/// scores) are computed again on their current views and, unless they are the ones it holds,
/// selection and division run on them and give its outcome again. The caller vouches that the
/// request and the fleet's static facts (which decide the filters, the topology groups and
/// static scores) are those the result was made from; the result then keeps the figures it
/// was made with, as a decision that did not read capacity does. `No` whenever that cannot be
/// told this way: ordered `clusterAffinities` terms, verdicts a dependency added, a fleet of
/// other clusters.
///
/// `at`, when known, are the held verdicts' clusters in the pass's views, ascending ([`ViewIx`]:
/// as the reconciler keeps them); they are found by their fleet positions then, not by name.
/// `changed`, when known, are the held verdicts ([`HeldIx`]) whose clusters' state changed
/// since the result was made or last stood: while every score reads only static facts
/// ([`Framework::scores_static`]) only those verdicts are computed again (not used when `at`
/// does not match the held verdicts one for one).
///
/// When the outcome stands on verdicts other than the held ones, they are returned
/// ([`Stands::On`]): a caller that keeps the result for the clusters' new state keeps them with
/// it, since `changed` next time is counted from that state, and a verdict it does not compute
/// again must be the one of that state (warm = cold, `reconcile::warm_cold`).
pub fn outcome_stands(
    fleet: &Fleet,
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    clusters: &[ClusterSnapshot],
    (held, outcome): (&[ClusterVerdict], &Outcome),
    (at, changed): (Option<&[ViewIx]>, Option<&[HeldIx]>),
) -> Stands {
    if clusters.len() != fleet.len() || !req.placement.cluster_affinities.is_empty() {
        return Stands::No;
    }
    // The held verdicts' positions: the indices given, in the fleet's order (by name) as the
    // verdicts are. `changed` indexes the held verdicts only when the indices line up.
    let positions = at.and_then(|at| fleet.positions_of(at)).filter(|p| p.len() == held.len());
    let changed = changed.filter(|_| at.is_none() || positions.is_some());
    debug_assert!(
        positions.as_ref().is_none_or(|p| p.iter().zip(held.iter()).all(|(&p, h)| fleet.names()[p.index()] == h.name)),
        "the held verdicts' positions"
    );
    let cluster_of = |k: HeldIx, h: &ClusterVerdict| match &positions {
        Some(p) => p.get(k.index()).map(|&p| fleet.cluster(clusters, p)),
        None => fleet.get(clusters, &h.name),
    };
    let affinity = req.placement.cluster_affinity.as_ref();
    let view = FleetView { fleet, clusters };
    let same = |n: &ClusterVerdict, h: &ClusterVerdict| {
        n.name == h.name
            && n.available_replicas == h.available_replicas
            && n.score == h.score
            && n.scores == h.scores
            && n.estimates == h.estimates
            && n.reasons == h.reasons
    };
    if let Some(changed) = changed.filter(|_| fw.scores_static()) {
        let mut at = Vec::with_capacity(changed.len());
        let mut sorted = Vec::with_capacity(changed.len());
        for &k in changed {
            let Some(h) = held.get(k.index()).filter(|h| h.feasible) else { return Stands::No };
            let Some(c) = cluster_of(k, h) else { return Stands::No };
            at.push(k);
            sorted.push(c);
        }
        let mut now = availability_verdicts(fw, req, &sorted);
        for (n, &k) in now.iter_mut().zip(&at) {
            if let Some(h) = held.get(k.index()) {
                n.score = h.score;
                n.scores.clone_from(&h.scores);
            }
        }
        if now.iter().zip(&at).all(|(n, &k)| held.get(k.index()).is_some_and(|h| same(n, h))) {
            return Stands::Held;
        }
        if held.iter().any(|v| !v.feasible) {
            return Stands::No;
        }
        let mut feasible: Vec<&ClusterVerdict> = held.iter().collect();
        for (n, &k) in now.iter().zip(&at) {
            if let Some(slot) = feasible.get_mut(k.index()) {
                *slot = n;
            }
        }
        if decide_on(fw, req, (feasible.clone(), positions.as_deref()), &view, fleet.len()).0 != *outcome {
            return Stands::No;
        }
        return Stands::On(feasible.into_iter().cloned().collect());
    }
    let mut sorted = Vec::with_capacity(held.len());
    for (k, v) in held.iter().enumerate() {
        let Some(c) = cluster_of(HeldIx::new(k), v) else { return Stands::No };
        if !v.feasible {
            return Stands::No;
        }
        sorted.push(c);
    }
    let now = feasible_verdicts(fw, req, affinity, &sorted);
    if now.len() != held.len() {
        return Stands::No;
    }
    if now.iter().zip(held.iter()).all(|(n, h)| same(n, h)) {
        return Stands::Held;
    }
    match decide_on(fw, req, (now.iter().collect(), positions.as_deref()), &view, fleet.len()).0 == *outcome {
        true => Stands::On(now),
        false => Stands::No,
    }
}

/// Whether a result stands on its clusters' changed state ([`outcome_stands`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Stands {
    /// It does not (or that cannot be told without scheduling again).
    No,
    /// It does, on the verdicts it holds (those computed again are the held ones).
    Held,
    /// It does, on these verdicts of its feasible clusters now (in the held order), which are
    /// not all the held ones.
    On(Vec<ClusterVerdict>),
}

impl Stands {
    /// Whether the outcome stands.
    pub fn stands(&self) -> bool {
        !matches!(self, Stands::No)
    }
}

/// Which clusters pass the filters: feasible positions (ascending) and the rejected groups.
fn filter_clusters(
    fleet: &Fleet,
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    affinity: Option<&ClusterAffinity>,
    clusters: &[ClusterSnapshot],
) -> (Vec<FleetPos>, Vec<Rejection>) {
    let no_previous = BTreeMap::new();
    let run = |f: &dyn framework::FilterPlugin, cluster: &ClusterSnapshot, previous: &BTreeMap<String, i32>| {
        f.filter(&PluginContext {
            key: req.key,
            workload: req.workload,
            placement: req.placement,
            affinity,
            cluster,
            previous,
            evicted: &req.failover.evicted,
            settings: &fw.settings,
        })
    };
    let per_pair = |cluster: &ClusterSnapshot| -> Vec<String> {
        fw.filters
            .iter()
            .filter_map(|f| match run(f.as_ref(), cluster, req.previous) {
                Fit::Pass => None,
                Fit::Reject(reason) => Some(format!("{}: {reason}", f.name())),
            })
            .collect()
    };
    let mut feasible: Vec<FleetPos>;
    let mut groups: Vec<Rejection>;
    if fleet.memoises() {
        let mctx = MemoContext {
            key: req.key,
            workload: req.workload,
            placement: req.placement,
            affinity,
            evicted: &req.failover.evicted,
            settings: &fw.settings,
        };
        let keys: Vec<Option<u64>> = fw.filters.iter().map(|f| f.memo_key(&mctx)).collect();
        let eval = |f: &dyn framework::FilterPlugin, cluster: &ClusterSnapshot| run(f, cluster, &no_previous);
        let combo = fleet.combo(&fw.filters, &keys, clusters, &eval);
        feasible = combo.feasible.clone();
        groups = combo.groups.clone();
        // The previous placement's clusters, per pair (several filters let them pass).
        for name in req.previous.keys() {
            let Some(p) = fleet.position(name) else { continue };
            match combo.group_of[p.index()] {
                None => {
                    if let Ok(i) = feasible.binary_search(&p) {
                        feasible.remove(i);
                    }
                }
                Some(g) => groups[g.index()].clusters.remove(p.in_universe()),
            }
            let reasons = per_pair(fleet.cluster(clusters, p));
            if reasons.is_empty() {
                if let Err(i) = feasible.binary_search(&p) {
                    feasible.insert(i, p);
                }
            } else {
                match groups.iter_mut().find(|g| g.reasons == reasons) {
                    Some(g) => g.clusters.insert(p.in_universe()),
                    None => {
                        groups.push(Rejection { reasons, clusters: fleet::ClusterSet::from_sorted([p.in_universe()]) })
                    }
                }
            }
        }
        groups.retain(|g| !g.clusters.is_empty());
        groups.sort_by_key(|g| g.clusters.iter().next());
    } else {
        // The reference: every filter for every pair.
        feasible = Vec::new();
        let mut members: Vec<(Vec<String>, Vec<UniversePos>)> = Vec::new();
        for p in (0..fleet.len()).map(FleetPos::at) {
            let reasons = per_pair(fleet.cluster(clusters, p));
            if reasons.is_empty() {
                feasible.push(p);
            } else {
                match members.iter_mut().find(|(r, _)| *r == reasons) {
                    Some((_, m)) => m.push(p.in_universe()),
                    None => members.push((reasons, vec![p.in_universe()])),
                }
            }
        }
        groups = members
            .into_iter()
            .map(|(reasons, m)| Rejection { reasons, clusters: fleet::ClusterSet::from_sorted(m) })
            .collect();
    }
    (feasible, groups)
}

fn schedule_term(
    fleet: &Fleet,
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    affinity: Option<&ClusterAffinity>,
    clusters: &[ClusterSnapshot],
    affinity_name: Option<String>,
) -> (ScheduleResult, bool) {
    let (feasible, rejected) = filter_clusters(fleet, fw, req, affinity, clusters);
    let sorted: Vec<&ClusterSnapshot> = feasible.iter().map(|p| fleet.cluster(clusters, *p)).collect();
    let mut verdicts = feasible_verdicts(fw, req, affinity, &sorted);
    let view = FleetView { fleet, clusters };
    let (outcome, reads) = decide(fw, req, (&verdicts, &feasible), &view, fleet.len());
    if let Outcome::Scheduled { targets } = &outcome {
        mark_selected(&mut verdicts, targets);
    }
    let verdicts = verdicts.into();
    (ScheduleResult { outcome, verdicts, rejected, universe: fleet.universe(), affinity_name }, reads)
}

/// The verdicts on the clusters that passed the filters (`sorted`, in the fleet's order):
/// available replicas (estimators, confidence, caps), the model's notes, the scores. What
/// selection and division read beside the request and the fleet's static facts.
fn feasible_verdicts(
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    affinity: Option<&ClusterAffinity>,
    sorted: &[&ClusterSnapshot],
) -> Vec<ClusterVerdict> {
    let ctx_for = |cluster| PluginContext {
        key: req.key,
        workload: req.workload,
        placement: req.placement,
        affinity,
        cluster,
        previous: req.previous,
        evicted: &req.failover.evicted,
        settings: &fw.settings,
    };
    let mut verdicts = availability_verdicts(fw, req, sorted);
    // Score: raw per feasible cluster, normalised per plugin across clusters, weighted sum.
    for (plugin, weight) in &fw.scorers {
        let mut raw: Vec<i64> = sorted.iter().map(|c| plugin.score(&ctx_for(c))).collect();
        plugin.normalize(&mut raw);
        for (v, s) in verdicts.iter_mut().zip(raw) {
            let s = s.clamp(0, framework::MAX_SCORE);
            v.scores.push((plugin.name().into(), s));
            v.score += s * weight;
        }
    }
    verdicts
}

/// [`feasible_verdicts`] without the scores: per cluster, the estimators' answers, the
/// available replicas after confidence, the cluster's limit and failover's caps, and the
/// model's notes.
fn availability_verdicts(
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    sorted: &[&ClusterSnapshot],
) -> Vec<ClusterVerdict> {
    // Karmada makes no estimate for zero replicas (`calAvailableReplicas`): every cluster is
    // taken to fit, so a spread constraint chooses among clusters of equal score by name.
    let desired = req.workload.replicas.filter(|r| *r > 0);
    let answers = match desired {
        Some(_) => fw.estimators.len(),
        None => 0,
    };
    let mut verdicts: Vec<ClusterVerdict> = sorted
        .iter()
        .map(|c| ClusterVerdict {
            name: c.name.clone(),
            feasible: true,
            reasons: Vec::new(),
            score: 0,
            scores: Vec::new(),
            available_replicas: None,
            replicas: None,
            selected: false,
            estimates: Vec::with_capacity(answers),
        })
        .collect();
    if let Some(desired) = desired {
        // Each cluster's verdict is its own: runs of clusters on the pool's threads give the
        // same verdicts as one run.
        crate::util::threads::split_zip(sorted, &mut verdicts, PARALLEL_VERDICTS, |run, verdicts| {
            availability_run(fw, req, desired, run, verdicts);
        });
    }
    verdicts
}

/// Feasible clusters a run of [`availability_verdicts`] has at least before a decision's
/// estimates are cut across threads (a run of fewer costs less than the hand-over).
const PARALLEL_VERDICTS: usize = 64;

/// [`availability_verdicts`] of a workload of `desired` replicas on one run of clusters, into
/// their verdicts.
fn availability_run(
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    desired: i32,
    sorted: &[&ClusterSnapshot],
    verdicts: &mut [ClusterVerdict],
) {
    push_estimates(&fw.estimators, sorted, &req.workload.requirements, |k, answer| {
        if let Some(v) = verdicts.get_mut(k) {
            v.estimates.push(answer);
        }
    });
    for (cluster, v) in sorted.iter().zip(verdicts.iter_mut()) {
        let reasons = &mut v.reasons;
        let est = v.estimates.iter().map(|a| a.1).min().map(|e| confidence_discount(fw, cluster, e, reasons));
        if est.is_some_and(|e| e < i64::from(desired)) {
            for e in &fw.estimators {
                e.explain(cluster, &req.workload.requirements, &mut |line| {
                    let mut reason = String::with_capacity(MODEL_PREFIX.len() + line.len());
                    reason.push_str(MODEL_PREFIX);
                    reason.push_str(line);
                    reasons.push(reason);
                });
            }
        }
        let already = i64::from(req.previous.get(&cluster.name).copied().unwrap_or(0));
        let mut avail = match est {
            Some(e) => e.saturating_add(already),
            // Karmada: when no estimator can tell, the cluster is taken to fit them all.
            None => i64::from(desired),
        };
        if let Some(max) = cluster.constraints.max_replicas_per_workload
            && avail > max
        {
            reasons.push(format!("{MODEL_PREFIX}cluster allows at most {max} replicas per workload"));
            avail = max;
        }
        if already > 0
            && avail > already
            && let Some(t) = health_taint(cluster, req.placement)
        {
            reasons.push(format!(
                "{MODEL_PREFIX}tainted {}:{:?} (member not Ready): keeps its {already} replicas, takes no new ones",
                t.key, t.effect
            ));
            avail = already;
        }
        if let Some(&cap) = req.failover.caps.get(&cluster.name)
            && avail > i64::from(cap)
        {
            reasons.push(format!(
                "{MODEL_PREFIX}capacity distrusted after replicas stayed Unschedulable: at most {cap} replicas until its figures change"
            ));
            avail = i64::from(cap);
        }
        if let Some(factor) = normalised_factor(fw, req, cluster) {
            reasons.push(format!(
                "{MODEL_PREFIX}CPU performance {factor:.2}: its free replicas weigh {factor:.2}x in the division (profile {}: cpu_division = \"normalised\"; fitting stays in raw cores)",
                fw.name
            ));
        }
        v.available_replicas = Some(avail);
    }
}

/// The CPU performance factor a normalised division weighs `cluster`'s free replicas by
/// (`[profiles.<name>] cpu_division = "normalised"`, a workload that requests CPU, divided by
/// dynamic weights or Aggregated, a performance table); None when the division is in raw
/// replicas.
fn normalised_factor(fw: &Framework, req: &ScheduleRequest<'_>, cluster: &ClusterSnapshot) -> Option<f64> {
    let model = &fw.settings.model;
    let applies = fw.settings.cpu_division == framework::CpuDivision::Normalised
        && model.has_cpu_performance()
        && req.workload.requirements.request.get("cpu") > 0
        && matches!(Strategy::of(req.placement), Strategy::DynamicWeight | Strategy::Aggregated);
    applies.then(|| cluster.cpu_factor(model))
}

/// Marks the verdicts of the clusters `targets` names as selected, with their replicas. The
/// verdicts come in the fleet's order, which is by name as the targets iterate: one walk of
/// both then answers (a verdict no target names is passed, every target must meet its verdict
/// on the way). Otherwise, a lookup per verdict.
fn mark_selected(verdicts: &mut [ClusterVerdict], targets: &BTreeMap<String, Option<i32>>) {
    let mut pending = targets.iter().peekable();
    for v in verdicts.iter_mut() {
        let Some((name, r)) = pending.peek() else { break };
        match name.as_str().cmp(v.name.as_str()) {
            std::cmp::Ordering::Equal => {
                v.selected = true;
                v.replicas = **r;
                pending.next();
            }
            std::cmp::Ordering::Greater => {}
            // A target before this verdict's name that met none: not in name order.
            std::cmp::Ordering::Less => break,
        }
    }
    if pending.peek().is_none() {
        return;
    }
    for v in verdicts.iter_mut() {
        let r = targets.get(&v.name);
        v.selected = r.is_some();
        v.replicas = r.copied().flatten();
    }
}

/// The not-ready / unreachable taint of `cluster` that `placement` does not tolerate, if it
/// carries one (Karmada's cluster controller puts it on a member, `NoSchedule`, the moment the
/// member is seen NotReady or Unreachable; fedsched's snapshots carry it likewise). Karmada's
/// taint filter lets a cluster that already runs the workload pass (its eviction is failover's
/// business, after the `NoExecute` toleration): such a member keeps the replicas it has, and
/// takes no new ones — no scale-up, no replicas moved from another member — until it is Ready.
pub fn health_taint<'a>(cluster: &'a ClusterSnapshot, placement: &Placement) -> Option<&'a crate::model::ClusterTaint> {
    use crate::policy::types::TaintEffect;
    cluster.taints.iter().find(|t| {
        (t.key == stability::TAINT_NOT_READY || t.key == stability::TAINT_UNREACHABLE)
            && matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
            && !placement.cluster_tolerations.iter().any(|tol| crate::model::nodes::tolerates(tol, t))
    })
}

/// Per selected cluster that keeps its replicas and takes no new ones ([`health_taint`]): the
/// replicas it has (the previous decision's).
fn health_caps(
    req: &ScheduleRequest<'_>,
    selected: &[&ClusterVerdict],
    clusters: &FleetView<'_>,
) -> BTreeMap<String, i64> {
    selected
        .iter()
        .filter_map(|v| {
            let already = req.previous.get(&v.name).copied().filter(|r| *r > 0)?;
            let snapshot = clusters.fleet.get(clusters.clusters, &v.name)?;
            health_taint(snapshot, req.placement).map(|_| (v.name.clone(), i64::from(already)))
        })
        .collect()
}

/// Selects clusters among the feasible ones and assigns replicas; and whether the outcome
/// read their capacity or scores ([`schedule_reads`]). `positions`: the fleet positions of
/// the verdicts, one each when all are feasible.
fn decide(
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    (verdicts, positions): (&[ClusterVerdict], &[FleetPos]),
    clusters: &FleetView<'_>,
    total: usize,
) -> (Outcome, bool) {
    let feasible: Vec<&ClusterVerdict> = verdicts.iter().filter(|v| v.feasible).collect();
    let positions = (feasible.len() == verdicts.len()).then_some(positions);
    decide_on(fw, req, (feasible, positions), clusters, total)
}

/// [`decide`] on the verdicts of the feasible clusters (in the fleet's order), with their
/// fleet positions where known.
fn decide_on(
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    (feasible, positions): (Vec<&ClusterVerdict>, Option<&[FleetPos]>),
    clusters: &FleetView<'_>,
    total: usize,
) -> (Outcome, bool) {
    if feasible.is_empty() {
        return (Outcome::Unschedulable { reason: format!("0/{total} clusters are available") }, false);
    }
    let strategy = Strategy::of(req.placement);
    let selecting_reads = select::reads_capacity(req.placement, strategy);
    let selecting = (&feasible[..], positions);
    let selected = match select::select_clusters_at(req.placement, selecting, clusters, strategy, req.workload.replicas)
    {
        Ok(s) => s,
        Err(reason) => return (Outcome::Unschedulable { reason }, selecting_reads),
    };
    // A multi-template workload not pinned to one cluster goes whole to every selected cluster
    // (Karmada's `AssignReplicas`: no replica division for several components); pinned, it is
    // one replica (one set of its components) in the one cluster selected.
    let whole = req.workload.multi_template && !select::pins_one_cluster(req.placement, strategy);
    let Some(replicas) = req.workload.replicas.filter(|_| !whole) else {
        return (
            Outcome::Scheduled { targets: selected.iter().map(|v| (v.name.clone(), None)).collect() },
            selecting_reads,
        );
    };
    if replicas == 0 {
        // Every selected cluster keeps the object at 0 replicas, whatever the division: Karmada's
        // path for a workload without requirements, and its `--enable-empty-workload-propagation`
        // for one with them (by default it drops the zero clusters, and the object disappears
        // from every member; a deliberate difference, see docs/guide/karmada.md).
        return (
            Outcome::Scheduled { targets: selected.iter().map(|v| (v.name.clone(), Some(0))).collect() },
            selecting_reads,
        );
    }
    // The divisions that start from the previous placement read it by name, in replicas.
    let previous: BTreeMap<String, i64> = match strategy {
        Strategy::Duplicated | Strategy::StaticWeight => BTreeMap::new(),
        Strategy::DynamicWeight | Strategy::Aggregated => {
            req.previous.iter().map(|(k, v)| (k.clone(), i64::from(*v))).collect()
        }
    };
    let dividing_reads = match strategy {
        Strategy::Duplicated | Strategy::StaticWeight => false,
        Strategy::DynamicWeight | Strategy::Aggregated => {
            let in_selection = |n: &str| selected.iter().any(|v| v.name == n);
            assign::reads_free(i64::from(replicas), &previous, in_selection)
        }
    };
    let outcome = divide(fw, req, strategy, (replicas, &previous), &selected, clusters);
    (outcome, selecting_reads || dividing_reads)
}

/// Divides `replicas` over the selected clusters by the placement's strategy; `previous` is
/// the previous placement for dynamic weights and Aggregated (empty for the others).
fn divide(
    fw: &Framework,
    req: &ScheduleRequest<'_>,
    strategy: Strategy,
    (replicas, previous): (i32, &BTreeMap<String, i64>),
    selected: &[&ClusterVerdict],
    clusters: &FleetView<'_>,
) -> Outcome {
    let tie = TieBreak::for_uid(req.uid);
    let to_targets = |m: BTreeMap<String, i64>| Outcome::Scheduled {
        targets: m.into_iter().map(|(k, v)| (k, Some(i32::try_from(v).unwrap_or(i32::MAX)))).collect(),
    };
    match strategy {
        Strategy::Duplicated => {
            // In the verdicts' order (the fleet's, by name) the map is built without sorting.
            let mut by_position = selected.to_vec();
            by_position.sort_unstable_by_key(|v| std::ptr::from_ref::<ClusterVerdict>(v));
            let held = health_caps(req, selected, clusters);
            let replicas_on = |name: &str| {
                let cap = held.get(name).map_or(replicas, |c| i32::try_from(*c).unwrap_or(i32::MAX));
                replicas.min(cap)
            };
            Outcome::Scheduled {
                targets: by_position.iter().map(|v| (v.name.clone(), Some(replicas_on(&v.name)))).collect(),
            }
        }
        Strategy::StaticWeight => {
            let weights = static_weights(req.placement, selected, clusters);
            let held = health_caps(req, selected, clusters);
            match assign::webster_capped(i64::from(replicas), &weights, &held, tie) {
                Some(m) => to_targets(m),
                None => Outcome::Unschedulable {
                    reason: format!(
                        "{replicas} replicas do not fit: members not Ready ({}) keep the replicas they have and take no new ones",
                        held.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
                    ),
                },
            }
        }
        Strategy::DynamicWeight | Strategy::Aggregated => {
            // Weights for new replicas are the free replicas (available − already assigned),
            // in the selection order (Aggregated breaks ties between equal clusters by it).
            let free: Vec<(&str, i64)> = selected
                .iter()
                .map(|v| {
                    let avail = v.available_replicas.unwrap_or(0);
                    let already = previous.get(&v.name).copied().unwrap_or(0);
                    (v.name.as_str(), (avail - already).max(0))
                })
                .collect();
            // A normalised division weighs each one by its CPU performance (in thousandths),
            // within its free replicas.
            let weights: Option<Vec<i64>> = selected
                .iter()
                .zip(&free)
                .map(|(v, (_, f))| {
                    let cluster = clusters.fleet.get(clusters.clusters, &v.name)?;
                    normalised_factor(fw, req, cluster).map(|x| (*f as f64 * x * 1000.0).round() as i64)
                })
                .collect();
            let r = if strategy == Strategy::Aggregated {
                assign::aggregated(i64::from(replicas), &free, weights.as_deref(), previous, tie)
            } else {
                assign::dynamic_steady(i64::from(replicas), &free, weights.as_deref(), previous, tie)
            };
            match r {
                Ok(m) => to_targets(m),
                Err(e) => Outcome::Unschedulable { reason: e.to_string() },
            }
        }
    }
}

/// How replicas are divided, from the placement (Karmada's mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Duplicated,
    StaticWeight,
    DynamicWeight,
    Aggregated,
}

impl Strategy {
    pub fn of(p: &Placement) -> Self {
        let Some(rs) = &p.replica_scheduling else {
            return Strategy::Duplicated;
        };
        match rs.replica_scheduling_type.unwrap_or(ReplicaSchedulingType::Divided) {
            ReplicaSchedulingType::Duplicated => Strategy::Duplicated,
            ReplicaSchedulingType::Divided => {
                match rs.replica_division_preference.unwrap_or(ReplicaDivisionPreference::Weighted) {
                    ReplicaDivisionPreference::Aggregated => Strategy::Aggregated,
                    ReplicaDivisionPreference::Weighted => match &rs.weight_preference {
                        Some(w) if w.dynamic_weight == Some(DynamicWeightFactor::AvailableReplicas) => {
                            Strategy::DynamicWeight
                        }
                        _ => Strategy::StaticWeight,
                    },
                }
            }
        }
    }
}

/// Karmada's static weights (`getStaticWeightInfoList`): a cluster's weight is the largest
/// weight of the entries whose `targetCluster` matches it; clusters matching no entry, or only
/// entries of weight 0, are left out; when that leaves none (no list, an entry matching no
/// selected cluster, every weight zero) each selected cluster weighs 1.
fn static_weights(
    placement: &Placement,
    selected: &[&ClusterVerdict],
    clusters: &FleetView<'_>,
) -> BTreeMap<String, i64> {
    let list = placement
        .replica_scheduling
        .as_ref()
        .and_then(|r| r.weight_preference.as_ref())
        .map(|w| w.static_weight_list.as_slice())
        .unwrap_or(&[]);
    if list.is_empty() {
        return selected.iter().map(|v| (v.name.clone(), 1)).collect();
    }
    let matches: Vec<std::sync::Arc<[bool]>> =
        list.iter().map(|e| clusters.fleet.affinity_matches(&e.target_cluster, clusters.clusters)).collect();
    let mut out = BTreeMap::new();
    for v in selected {
        let Some(p) = clusters.fleet.position(&v.name) else { continue };
        let matched = |m: &std::sync::Arc<[bool]>| m.get(p.index()).copied().unwrap_or(false);
        let w = list.iter().zip(&matches).filter(|(_, m)| matched(m)).map(|(e, _)| e.weight).max();
        if let Some(w) = w.filter(|w| *w > 0) {
            out.insert(v.name.clone(), w);
        }
    }
    if out.is_empty() {
        return selected.iter().map(|v| (v.name.clone(), 1)).collect();
    }
    out
}

#[cfg(test)]
mod tests;
