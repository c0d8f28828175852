//! Stage "stability", between the snapshots and the decisions: runs the stability engine
//! ([`crate::schedule::stability::step`]) over the stored state, the members' conditions and
//! what their pods are doing, and hands over [`StabilityPass`]: the next state (stored by the
//! record stage, before its flush), this pass's actions (history notes, metrics, logs), the
//! workloads with a failover pending, and per workload the [`Directive`] its decision follows
//! (clusters it is evicted from, kept files, distrusted capacity, a fresh decision to move
//! back).
//!
//! Which workloads the engine sees: those with stability state, and those placed with
//! replicas on a member that is unhealthy or where their pods are Unschedulable or not Ready
//! (any other workload has nothing to do, and skipping it keeps a quiet pass cheap: `Attention`
//! judges it before any input is built). The state blob replay references is stored only when
//! the state differs from the one the pass cache last stored. Objects
//! without replicas (ConfigMaps, Services…) do not fail over: their dependents pull them
//! where they go. What the engine reads of a workload's pods is `model::OwnerState` on live
//! members; an offline member (no pods observed) counts its placed replicas as Ready.
//!
//! # Its stage of the pass
//!
//! **Stability** (`reconcile/stability.rs`, `schedule/stability/`): the members' health timelines
//! (unhealthy since / healthy since), what their pods do (`model::OwnerState`: ready, Unschedulable
//! and not-Ready pods with the member's transition times) and the stored engine state go through
//! one pure `step(state, inputs, now_ms, settings)`: cluster failover after Karmada's toleration
//! (graceful eviction: the old files kept until the replacement is Ready elsewhere or the grace
//! period passes; purge modes), Unschedulable replicas taken off a member after `[reschedule]
//! unschedulable_after` (its capacity for that pod template distrusted until its figures change),
//! application failover, move-back after `stable_for`, rate limits and the storm guard. Its
//! directives enter the decision key and the decision (`cluster-eviction` filter, caps, kept
//! files); its actions are history notes and metrics; its state is stored with the pass and
//! referenced by every history record (replay; the blob is written only when the state changed). A
//! quiet pass stays cheap: `Attention` (one place) lets only workloads that may have something to
//! do — state of their own, replicas on an unhealthy or NoExecute-tainted member, their own
//! Unschedulable pods, not-Ready pods under `failover.application` — reach the engine; the others
//! are skipped before their engine input is built, with one lookup each in a fleet-wide map of
//! troubled pod owners (`assumed::Owner::claimants` inverts the attribution), kept between passes
//! and updated only for the members whose pod facts are another `Arc` (`stability::TroubledOwners`;
//! a quiet fleet costs a pointer comparison per member). ClusterTaintPolicy taints are computed
//! before the stages (`Reconciler::taint`) and put on the pass's snapshots, so filters, versions,
//! plan and replay all see them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::model::ClusterSnapshot;
use crate::model::assumed::Owner;
use crate::model::snapshot::{Health, PodFacts};
use crate::policy::ObjectKey;
use crate::policy::matching::PolicyIndex;
use crate::policy::types::{ClusterTaintPolicySpec, TaintEffect};
use crate::schedule::stability::{
    self, Action, ActionKind, AddedTaint, ApplicationRule, ClusterInput, Condition, FailoverRule, Mobility, Purge,
    StabilitySettings, StabilityState, Unschedulable, WorkloadInput,
};
use crate::schedule::{Failover, Strategy};
use crate::store::{PlacementRecord, Store, StoreError};
use crate::util::hash::{KeyMap, KeySet, fnv1a64};

use super::Inputs;
use super::cache::Placements;
use super::report::{StabilityEvent, StabilityReport};

/// A placement's targets (replicas per cluster; `None`: an object without replicas).
pub(crate) type PlacementTargets = BTreeMap<String, Option<i32>>;

/// A WorkloadRebalancer's result for a workload decided afresh whose change the mass-deletion
/// guard held ([`StabilityPass::keep_published`]): decided afresh again each pass until
/// published (then `Successful`).
pub(crate) const REBALANCE_PENDING: &str = "Pending";

/// What failover asks of one workload's decision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Directive {
    /// Clusters left out (the `cluster-eviction` filter) and distrusted capacity.
    pub failover: Failover,
    /// Clusters whose files of the workload stay although it left them (graceful eviction).
    pub kept: BTreeSet<String>,
    /// Decide afresh, without the previous placement (a move-back, a rebalance).
    pub fresh: bool,
    /// Clusters a move-back returns to whose eviction task kept files there: those files stay
    /// unless the decision places replicas on the cluster (then its own files replace them).
    /// The engine ended the task; [`StabilityPass::settle_move_backs`] gives it back when the
    /// decision did not return.
    pub returning: BTreeSet<String>,
    /// Whether, and why, this pass's decision hands over (make before break) from the
    /// members it leaves or shrinks on ([`handing_over`]).
    pub hand_over: Option<HandOver>,
    /// Clusters whose graceful task (an eviction's, a hand-over's) this pass's purge ended. A
    /// shrink hand-over kept the previous file on a member the workload still runs on, so the
    /// file there is not its placement's: a decision that keeps its previous placement
    /// (Unschedulable) writes the placement's file there (simulation seed 106: 3 replicas kept on
    /// disk under a placement of 2 once the hand-over ended).
    pub released: BTreeSet<String>,
}

/// Why a workload's decision this pass hands over, make before break, from the members it
/// leaves or shrinks on: each keeps its previous files, as they are, until the new placement
/// is Ready or the grace period passes with a replica Ready elsewhere ([`handing_over`] says
/// from which members; the render keeps their files, [`StabilityPass::hand_over`] starts their
/// tasks). A member with a task of its own (evicted, returned to) keeps that task instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum HandOver {
    /// Any other decision (a scale-down, a policy or template edit, the members' capacity):
    /// only when the members it keeps would run none of the workload's Ready replicas, from
    /// the members it leaves that run some, each keeping its copy until the new placement is
    /// Ready (a policy edit moved w010's 8 Ready replicas from member-017 to member-019, and a
    /// scale from 3 to 1 removed member-005's only Ready one, each in one publish: simulation
    /// seeds 112 and 106). A scale-down whose kept members run Ready replicas publishes at once.
    Moved,
    /// A member takes part in the workload's decisions again (its eviction ended, or failover
    /// stopped leaving it out without moving back): static weights put replicas back on it by
    /// the policy's division, which removed them from the member they ran on in the publish
    /// that added them there (simulation seed 5, `move_back = false`). Hands over from the
    /// members the decision leaves only: where it shrinks, Ready replicas stay (handing over
    /// there too kept a 4-replica file under a placement of 1 once a later pass was
    /// Unschedulable: seed 5 with faults 10, 11, 14).
    Rejoin,
    /// A failover's decision (an eviction this pass: the workload decided again without the
    /// member): from the healthy members it leaves or shrinks on, e.g. the next
    /// `clusterAffinities` term taking the whole workload off a member whose replicas were its
    /// only Ready ones (simulation seed 76).
    Failover,
    /// A move decided afresh ([`Directive::fresh`]: a move-back, a rebalance): from the
    /// members it leaves or shrinks on.
    Afresh(stability::Reason),
}

impl HandOver {
    /// How a decision under directive `d` hands over (none asked: [`HandOver::Moved`]).
    pub fn of_decision(d: Option<&Directive>) -> HandOver {
        d.and_then(|d| d.hand_over).unwrap_or(HandOver::Moved)
    }

    /// The hand-over an engine action of this pass asks of its workload's decision.
    fn of(kind: &ActionKind) -> Option<HandOver> {
        match kind {
            ActionKind::MoveBack { .. } => Some(HandOver::Afresh(stability::Reason::MoveBack)),
            ActionKind::Rebalance { .. } => Some(HandOver::Afresh(stability::Reason::Rebalance)),
            ActionKind::Evict { .. } => Some(HandOver::Failover),
            _ => None,
        }
    }

    /// The hand-over tasks' reason (history notes, explain, the metrics' label). A member that
    /// rejoins is noted as a move-back.
    pub fn reason(self) -> stability::Reason {
        match self {
            HandOver::Moved => stability::Reason::Moved,
            HandOver::Rejoin => stability::Reason::MoveBack,
            HandOver::Failover => stability::Reason::Failover,
            HandOver::Afresh(r) => r,
        }
    }

    /// The stronger of two causes of one pass: a move decided afresh (a rebalance over a
    /// move-back), then a failover's decision, then a member that rejoins.
    fn max(a: Option<HandOver>, b: HandOver) -> HandOver {
        let rank = |h: &HandOver| match h {
            HandOver::Moved => 0,
            HandOver::Rejoin => 0,
            HandOver::Failover => 1,
            HandOver::Afresh(stability::Reason::Rebalance) => 3,
            HandOver::Afresh(_) => 2,
        };
        a.into_iter().chain([b]).max_by_key(rank).unwrap_or(b)
    }
}

impl Directive {
    /// Its decision hands over for `h` too (the stronger cause stays: [`HandOver::max`]).
    fn hands_over(&mut self, h: HandOver) {
        self.hand_over = Some(HandOver::max(self.hand_over, h));
    }
}

/// A move-back of this pass as the engine took it, with what it ended (the cluster's task,
/// its move-back candidacy): given back when the decision places nothing on the cluster.
#[derive(Debug, Clone)]
pub(crate) struct MoveBack {
    pub key: ObjectKey,
    pub cluster: String,
    pub task: Option<stability::EvictionTask>,
    pub moved_from: stability::MovedFrom,
    /// When it was decided (the workload's last move, whether or not it returns).
    pub at_ms: u64,
}

/// What the stability stage hands over.
#[derive(Debug, Default)]
pub(crate) struct StabilityPass {
    /// The state after this pass (the record stage stores it).
    pub state: StabilityState,
    /// This pass's actions, in the engine's order.
    pub actions: Vec<Action>,
    pub pending_failover: BTreeSet<ObjectKey>,
    pub directives: BTreeMap<ObjectKey, Directive>,
    /// Blob hash of the state this pass's decisions used (the stored state before the step,
    /// as JSON), for replay ([`crate::store::DecisionInputs::stability`]).
    pub state_blob: u64,
    /// The graceful tasks (eviction, hand-over) this pass's purges ended, as they were: a
    /// purge the publish did not carry out is undone ([`StabilityPass::hold_unpublished`]).
    pub purged: Vec<(ObjectKey, stability::EvictionTask)>,
    /// This pass's move-backs, settled by their decisions ([`StabilityPass::settle_move_backs`]).
    pub move_backs: Vec<MoveBack>,
}

impl StabilityPass {
    /// The history notes of every workload with actions this pass (held ones excepted), in
    /// the engine's order: one walk over the actions, however many workloads ask.
    pub fn notes_by_workload(&self) -> HashMap<&ObjectKey, Vec<String>> {
        let mut notes: HashMap<&ObjectKey, Vec<String>> = HashMap::new();
        for a in self.actions.iter().filter(|a| a.is_event()) {
            if let Some(w) = &a.workload {
                notes.entry(w).or_default().push(a.to_string());
            }
        }
        notes
    }

    /// The workloads this pass's record will note an action of, as known before the decide
    /// stage: those with an event this pass, and those with actions kept unpublished (noted
    /// once their change is published). Their decisions are made afresh this pass, so that the
    /// record carrying the note holds the figures of the inputs it records (it replays).
    pub fn noted(&self) -> BTreeSet<&ObjectKey> {
        let events = self.actions.iter().filter(|a| a.is_event()).filter_map(|a| a.workload.as_ref());
        let unpublished = self.state.workloads.iter().filter(|(_, ws)| !ws.unpublished.is_empty()).map(|(k, _)| k);
        events.chain(unpublished).collect()
    }

    /// Settles this pass's move-backs by the decisions made for them: a move-back is one only
    /// when the decision puts replicas on its cluster (`placed_back`). One whose decision places
    /// nothing there (no room now, nothing schedulable, its policy preferring others) did not
    /// happen: the cluster's eviction task and the files it keeps there are given back (they
    /// were kept by the render: [`Directive::returning`]), the cluster stays a move-back
    /// candidate, and the action becomes a held one (no "moved back" note). The workload was
    /// decided afresh all the same (its last move: the next try waits `min_stay`).
    pub fn settle_move_backs(&mut self, placed_back: impl Fn(&ObjectKey, &str) -> bool) {
        for m in std::mem::take(&mut self.move_backs) {
            let back = placed_back(&m.key, &m.cluster);
            for a in self.actions.iter_mut().filter(|a| {
                a.workload.as_ref() == Some(&m.key)
                    && a.cluster == m.cluster
                    && matches!(a.kind, ActionKind::MoveBack { .. })
            }) {
                if back {
                    tracing::info!(workload = %m.key, cluster = %m.cluster, action = %a, "stability");
                } else {
                    tracing::info!(workload = %m.key, cluster = %m.cluster, action = %a, "stability: move-back not made (the decision places nothing there); the member keeps its files");
                    a.kind = ActionKind::Held { action: "move-back".into(), by: stability::Held::NotPlaced };
                }
            }
            if back {
                continue;
            }
            let ws = self.state.workloads.entry(m.key.clone()).or_default();
            if let Some(task) = m.task {
                if task.purge == Purge::Gracefully {
                    self.pending_failover.insert(m.key.clone());
                }
                ws.tasks.retain(|t| t.cluster != task.cluster);
                ws.tasks.push(task);
                ws.tasks.sort_by(|a, b| a.cluster.cmp(&b.cluster));
            }
            ws.moved_from.insert(m.cluster.clone(), m.moved_from);
            ws.moved_at_ms = ws.moved_at_ms.max(m.at_ms);
        }
    }

    /// Starts the hand-overs of this pass's decisions that hand over (`moves`: per workload,
    /// why — [`HandOver`] — and the members it hands over from, with the replicas they had:
    /// [`handing_over`]): per member a task that keeps its previous files until the new
    /// placement is Ready or the grace period passes with a replica Ready elsewhere (the
    /// engine's purge rules), and a history note.
    pub fn hand_over(&mut self, moves: Vec<(ObjectKey, HandOver, BTreeMap<String, i32>)>, now_ms: u64, grace_ms: u64) {
        for (key, why, handover) in moves {
            let reason = why.reason();
            if handover.is_empty() {
                continue;
            }
            let ws = self.state.workloads.entry(key.clone()).or_default();
            for (cluster, replicas) in handover {
                ws.tasks.retain(|t| t.cluster != cluster);
                ws.tasks.push(stability::EvictionTask {
                    cluster: cluster.clone(),
                    replicas,
                    reason,
                    since_ms: now_ms,
                    purge: Purge::Gracefully,
                    grace_ms,
                    grace_expired_ms: None,
                });
                let cause = stability::Cause {
                    condition: format!("{} decided afresh", key),
                    since_ms: 0,
                    for_ms: 0,
                    rule: "make before break".into(),
                };
                let kind = ActionKind::Handover { replicas, reason, grace_ms };
                let action = Action { workload: Some(key.clone()), cluster, kind, cause };
                tracing::info!(workload = %key, cluster = %action.cluster, action = %action, "stability");
                self.actions.push(action);
            }
            ws.tasks.sort_by(|a, b| a.cluster.cmp(&b.cluster));
            self.pending_failover.insert(key);
        }
    }

    /// A `Directly` purge removes the workload's files from its member at once; one whose
    /// workload still has its file there once decided (`keeps`: it could not leave — nothing
    /// else fit, its previous placement kept — so nothing was removed) is no purge: no history
    /// note, no report event (history records only what was published). Its task stays (it
    /// keeps the member out until the workload leaves or the member is Ready again).
    pub fn drop_unremoved_purges(&mut self, keeps: impl Fn(&ObjectKey, &str) -> bool) {
        self.actions.retain(|a| {
            let unremoved = matches!(a.kind, ActionKind::Purge { reason: stability::PurgeReason::Directly, .. })
                && a.workload.as_ref().is_some_and(|w| keeps(w, &a.cluster));
            if unremoved {
                tracing::info!(workload = ?a.workload, cluster = %a.cluster, "stability: nothing purged (Directly): the workload could not leave the member");
            }
            !unremoved
        });
    }

    /// A workload whose change the mass-deletion guard held whole (`moves`) keeps the engine
    /// state it was published with (`old`: the state the pass began from): its tasks, move-back
    /// candidates and timers as they were, none of this pass's hand-overs (their previous
    /// placement was never replaced on disk), its WorkloadRebalancers' request still to carry
    /// out (`Pending`: decided afresh again next pass). Its actions of this pass did not happen:
    /// they become held ones (no history note, no report event), and the engine decides them
    /// again on the next pass, from what was published, until one publishes them.
    pub fn keep_published(&mut self, moves: &[crate::publish::HeldMove], old: &StabilityState) {
        if moves.is_empty() {
            return;
        }
        let owners: BTreeSet<&str> = moves.iter().map(|m| m.owner.as_str()).collect();
        let held = |k: &ObjectKey| owners.contains(k.to_string().as_str());
        let keys: BTreeSet<ObjectKey> = self
            .state
            .workloads
            .keys()
            .chain(old.workloads.keys())
            .chain(self.actions.iter().filter_map(|a| a.workload.as_ref()))
            .filter(|k| held(k))
            .cloned()
            .collect();
        for key in keys {
            match old.workloads.get(&key) {
                Some(ws) => self.state.workloads.insert(key.clone(), ws.clone()),
                None => self.state.workloads.remove(&key),
            };
            self.purged.retain(|(k, _)| *k != key);
            for a in self.actions.iter_mut().filter(|a| a.workload.as_ref() == Some(&key) && a.is_event()) {
                if let ActionKind::Rebalance { rebalancer, .. } = &a.kind
                    && let Some(r) = self.state.rebalances.get_mut(rebalancer)
                {
                    let label = format!("{} {key}", key.api_version);
                    for (_, result) in r.workloads.iter_mut().filter(|(w, _)| *w == label) {
                        *result = REBALANCE_PENDING.to_string();
                    }
                }
                tracing::warn!(workload = %key, cluster = %a.cluster, action = %a, "stability: not published (mass-deletion guard held the workload's change whole); decided again next pass");
                a.kind = ActionKind::Held { action: a.reason_label(), by: stability::Held::MassDeletionGuard };
            }
            self.pending_failover.insert(key);
        }
    }

    /// Keeps out of the history what the publish's mass-deletion guard did not let through
    /// (`report`), and lets in what it now does. A graceful purge whose removal was held (the
    /// purge's cluster held, or the workload's changes there waiting for a held cluster) is
    /// undone: the task stays as it was, due again next pass, and the action becomes a held
    /// one. Any other action of a workload whose change was held (an eviction whose
    /// replacement waits, a `Directly` purge…) is kept in its state
    /// ([`stability::WorkloadStability::unpublished`]) instead of becoming a note now; the
    /// pass that publishes the workload's change makes those actions its notes, before its own.
    pub fn hold_unpublished(&mut self, report: &crate::publish::PublishReport) {
        let held: BTreeSet<&str> = report.held.iter().map(|h| h.cluster.as_str()).collect();
        let moves: BTreeMap<&str, &crate::publish::HeldMove> =
            report.held_moves.iter().map(|m| (m.owner.as_str(), m)).collect();
        // Whether the workload's change (or its change on `cluster`) waits for a held cluster.
        let waits = |owner: &str, cluster: &str| held.contains(cluster) || moves.contains_key(owner);
        for (key, task) in std::mem::take(&mut self.purged) {
            let owner = key.to_string();
            let kept = held.contains(task.cluster.as_str())
                || moves
                    .get(owner.as_str())
                    .is_some_and(|m| m.held.contains(&task.cluster) || m.waiting.contains(&task.cluster));
            if !kept {
                continue;
            }
            for a in self.actions.iter_mut().filter(|a| {
                a.workload.as_ref() == Some(&key)
                    && a.cluster == task.cluster
                    && matches!(a.kind, ActionKind::Purge { .. })
            }) {
                a.kind = ActionKind::Held { action: "purge".into(), by: stability::Held::MassDeletionGuard };
                tracing::warn!(workload = %key, cluster = %a.cluster, "stability: purge held by the mass-deletion guard");
            }
            let ws = self.state.workloads.entry(key.clone()).or_default();
            ws.tasks.retain(|t| t.cluster != task.cluster);
            ws.tasks.push(task);
            ws.tasks.sort_by(|a, b| a.cluster.cmp(&b.cluster));
            self.pending_failover.insert(key);
        }
        // Published now: the actions kept since the guard held them become this pass's notes,
        // each workload's before its own actions of this pass.
        let mut released: Vec<(ObjectKey, Vec<Action>)> = Vec::new();
        for (key, ws) in self.state.workloads.iter_mut().filter(|(_, ws)| !ws.unpublished.is_empty()) {
            let owner = key.to_string();
            if ws.unpublished.iter().any(|a| waits(&owner, &a.cluster)) {
                self.pending_failover.insert(key.clone());
                continue;
            }
            tracing::info!(workload = %key, actions = ws.unpublished.len(), "stability: held actions published");
            released.push((key.clone(), std::mem::take(&mut ws.unpublished)));
        }
        // Held now: the events of workloads whose change waits are kept, not noted.
        let mut kept: Vec<Action> = Vec::new();
        let mut i = 0;
        while i < self.actions.len() {
            let a = &self.actions[i];
            let owner = match (&a.workload, a.is_event()) {
                (Some(w), true) if !(held.is_empty() && moves.is_empty()) => w.to_string(),
                _ => {
                    i += 1;
                    continue;
                }
            };
            if waits(&owner, &a.cluster) {
                kept.push(self.actions.remove(i));
            } else {
                i += 1;
            }
        }
        for a in kept {
            let Some(key) = a.workload.clone() else { continue };
            tracing::warn!(workload = %key, cluster = %a.cluster, action = %a, "stability: not published (mass-deletion guard); noted once it is");
            self.state.workloads.entry(key.clone()).or_default().unpublished.push(a);
            self.pending_failover.insert(key);
        }
        for (key, actions) in released {
            let at = self.actions.iter().position(|a| a.workload.as_ref() == Some(&key)).unwrap_or(self.actions.len());
            self.actions.splice(at..at, actions);
            if self.state.workloads.get(&key).is_some_and(stability::WorkloadStability::is_empty) {
                self.state.workloads.remove(&key);
            }
        }
    }

    /// What the report says of this pass.
    pub fn report(&self) -> StabilityReport {
        let events = self
            .actions
            .iter()
            .filter_map(|a| {
                Some(StabilityEvent {
                    workload: a.workload.clone(),
                    cluster: a.cluster.clone(),
                    kind: a.event()?,
                    text: a.to_string(),
                })
            })
            .collect();
        let storm = self.state.storm.as_ref().map(|s| {
            format!(
                "storm guard: {} of {} live members went unhealthy at once; evicting nothing until the share falls",
                s.unhealthy, s.live
            )
        });
        StabilityReport {
            events,
            pending_failover: self.pending_failover.len(),
            kept_past_grace: self.state.kept_past_grace(),
            storm,
            held: self.actions.iter().filter(|a| !a.is_event()).count(),
        }
    }
}

/// The members a decision under directive `d` hands over from, with the replicas they had
/// ([`handover_clusters`]), by [`HandOver::of_decision`]: those a move decided afresh
/// (move-back, rebalance) or a failover's decision leaves or shrinks on; those a decision made
/// with a member that rejoins the workload's decisions leaves (where it shrinks, Ready
/// replicas stay). Any other decision (a scale-down, a policy or template edit, the members'
/// capacity: [`HandOver::Moved`]) keeps the availability floor only: it publishes at once when
/// the members it keeps go on running at least one Ready replica of the workload
/// ([`keeps_ready`]: per member the fewer of its Ready replicas and those the decision leaves
/// it), else it hands over from the members it leaves that run Ready replicas, each keeping its
/// files until the new placement is Ready (a scale from 3 to 1 that left member-005, the only
/// member with a Ready replica; a policy edit that moved 8 Ready replicas to a member with
/// none: simulation seeds 106 and 112). A workload with nothing Ready hands over nothing. A
/// member with a task of its own keeps it, not a hand-over: one the workload is evicted from
/// (its eviction task keeps what it keeps; a `Directly` one nothing), one a move-back returns
/// to. `ready` gives the workload's Ready replicas on a member as the pass observes them
/// ([`observed_ready`]; `None`: its pods are not observed, an offline member). An unobserved
/// member counts as Ready the replicas it had when the decision leaves it, and those the
/// decision gives it when it keeps it: no replacement can be seen Ready there, so waiting for
/// one would keep the old copy a pass longer and prove nothing (a one-shot `fedsched render`
/// moves a workload between offline members in one publish). The one rule for the render's
/// kept files ([`super::decide`]) and the engine's hand-over tasks
/// ([`StabilityPass::hand_over`]).
pub(crate) fn handing_over(
    d: Option<&Directive>,
    prev: &PlacementTargets,
    new: &PlacementTargets,
    ready: impl Fn(&str) -> Option<i32>,
) -> BTreeMap<String, i32> {
    let why = HandOver::of_decision(d);
    let mut handover = handover_clusters(prev, new);
    if handover.is_empty() || (why == HandOver::Moved && keeps_ready(new, &ready)) {
        return BTreeMap::new();
    }
    let left = |c: &str| new.get(c).copied().flatten().unwrap_or(0) == 0;
    let had = |c: &str| prev.get(c).copied().flatten().unwrap_or(0);
    handover.retain(|c, _| {
        let own_task = d.is_some_and(|d| d.failover.evicted.contains(c) || d.returning.contains(c));
        let hands_over = match why {
            HandOver::Moved => left(c) && ready(c).unwrap_or_else(|| had(c)) > 0,
            HandOver::Rejoin => left(c),
            HandOver::Failover | HandOver::Afresh(_) => true,
        };
        !own_task && hands_over
    });
    handover
}

/// Whether the members placement `new` keeps the workload on go on running at least one of
/// its Ready replicas (`ready`: per member, as the pass observes them): per member the fewer
/// of its Ready replicas and those `new` leaves it; a member whose pods are not observed, those
/// `new` gives it. The availability floor a decision that hands over for no other cause keeps
/// ([`handing_over`], invariant 1 of issue 46).
fn keeps_ready(new: &PlacementTargets, ready: &impl Fn(&str) -> Option<i32>) -> bool {
    new.iter().any(|(c, r)| r.is_some_and(|r| r > 0 && ready(c).is_none_or(|n| n > 0)))
}

/// The Ready replicas of workload `key` on a member as the pass's view `snapshot` observes
/// them (its owners' pods, [`Owner::state`]); `None` for a member whose pods are not observed
/// (offline: [`handing_over`] says what it counts as Ready).
pub(crate) fn observed_ready(key: &ObjectKey, snapshot: Option<&ClusterSnapshot>) -> Option<i32> {
    let pods = snapshot.and_then(|s| s.pods.as_ref())?;
    Some(i32::try_from(Owner::of(key).state(pods).ready).unwrap_or(i32::MAX))
}

/// The members a move decided afresh (move-back, rebalance) leaves or shrinks on, with the
/// replicas they had: from the previous placement's `prev` targets to `new`. Each hands over
/// (make before break): its previous files stay as they are until the new placement is Ready
/// (render: [`super::decide`]; the engine's hand-over task: [`StabilityPass::hand_over`]).
/// Objects without replicas hand over nothing.
pub(crate) fn handover_clusters(
    prev: &BTreeMap<String, Option<i32>>,
    new: &BTreeMap<String, Option<i32>>,
) -> BTreeMap<String, i32> {
    prev.iter()
        .filter_map(|(c, r)| {
            let had = r.filter(|r| *r > 0)?;
            let has = new.get(c).copied().flatten().unwrap_or(0);
            (has < had).then(|| (c.clone(), had))
        })
        .collect()
}

/// The taints the repository's ClusterTaintPolicies leave on each member this pass
/// ([`stability::taints::apply`]) from the members' conditions: `Ready` as fedsched observes it
/// (`True`, `False`, `Unknown` when unreachable), the others as the Cluster object's status
/// declares them. Members without any are absent; nothing is computed without policies or
/// taints to carry.
pub(super) fn cluster_taints(old: &StabilityState, inputs: &Inputs, now_ms: u64) -> BTreeMap<String, Vec<AddedTaint>> {
    let policies: Vec<(&str, &ClusterTaintPolicySpec)> =
        inputs.set.cluster_taint_policies.iter().map(|p| (p.meta.name.as_str(), &p.spec)).collect();
    let mut out = BTreeMap::new();
    if policies.is_empty() && old.taints.is_empty() {
        return out;
    }
    let objects: HashMap<&str, &crate::policy::ClusterObject> =
        inputs.set.clusters.iter().map(|c| (c.meta.name.as_str(), c)).collect();
    for snap in &inputs.snapshots {
        let ready = match snap.health {
            Health::Ready => "True",
            Health::NotReady { .. } => "False",
            Health::Unreachable { .. } => "Unknown",
        };
        let mut conditions = vec![("Ready".to_string(), ready.to_string())];
        let declared = objects.get(snap.name.as_str()).and_then(|c| c.status.as_ref());
        for c in declared.into_iter().flat_map(|s| &s.conditions).filter(|c| c.type_ != "Ready") {
            conditions.push((c.type_.clone(), c.status.clone()));
        }
        let member = stability::taints::Member { facts: snap.facts(), conditions: &conditions, taints: &snap.taints };
        let previous = old.taints.get(&snap.name).map(Vec::as_slice).unwrap_or_default();
        let next = stability::taints::apply(&policies, &member, previous, now_ms);
        if next != previous {
            tracing::info!(cluster = %snap.name, taints = ?next.iter().map(|t| format!("{}:{:?}", t.key, t.effect)).collect::<Vec<_>>(), "cluster taint policies");
        }
        if !next.is_empty() {
            out.insert(snap.name.clone(), next);
        }
    }
    out
}

/// The inputs with the policies' taints on their members' snapshots (so that filters,
/// estimators and the snapshot versions see them), when there are any.
pub(super) fn with_taints(inputs: &Inputs, taints: &BTreeMap<String, Vec<AddedTaint>>) -> Option<Inputs> {
    if taints.is_empty() {
        return None;
    }
    let mut tainted = inputs.clone();
    for snap in &mut tainted.snapshots {
        if let Some(ts) = taints.get(&snap.name) {
            snap.taints.extend(ts.iter().map(AddedTaint::taint));
        }
    }
    Some(tainted)
}

/// What the stability stage keeps between passes (its part of [`super::cache::Kept`]).
#[derive(Default, Clone)]
pub(super) struct Kept {
    /// The stability state last stored as a blob, with its hash: a pass that starts from an
    /// equal state references that blob without encoding and storing it again.
    stability_blob: Option<(StabilityState, u64)>,
    /// The members' pod owners in trouble, as the stage last read them (shared with a fork
    /// until either changes it).
    troubled: Arc<TroubledOwners>,
}

/// What the stability stage reads of a pass besides the member views: the policies (and
/// their index), the engine's settings, the stability state stored by the last pass and the
/// pass's time.
pub(super) struct Engine<'a, 'i> {
    pub inputs: &'a Inputs,
    pub index: &'a PolicyIndex<'i>,
    pub settings: &'a StabilitySettings,
    /// The state the pass starts from (as stored).
    pub old: StabilityState,
    pub now_ms: u64,
}

/// Runs the engine for this pass over the stored state (`engine.old`), the member views
/// (`views`, in the inputs' order) and this pass's ClusterTaintPolicy taints.
pub(super) fn run(
    store: &Store,
    (kept, placements): (&mut Kept, &Placements),
    (views, taints): (&[ClusterSnapshot], BTreeMap<String, Vec<AddedTaint>>),
    engine: Engine<'_, '_>,
) -> Result<StabilityPass, StoreError> {
    let Engine { inputs, index, settings, old, now_ms } = engine;
    let state_blob = state_blob(store, kept, &old)?;
    let mut clusters: Vec<ClusterInput> = views.iter().map(cluster_input).collect();
    for c in &mut clusters {
        if let Some(ts) = taints.get(&c.name) {
            c.no_execute = ts.iter().filter(|t| t.effect == TaintEffect::NoExecute).cloned().collect();
        }
    }
    let by_name: KeyMap<&str, &ClusterSnapshot> = views.iter().map(|s| (s.name.as_str(), s)).collect();
    // Copied (a preview's fork shares it) only when a member's pods changed.
    if !kept.troubled.current(views) {
        Arc::make_mut(&mut kept.troubled).update(views);
    }
    let attention = Attention::new(&clusters, &kept.troubled);
    let mut owner = String::new();
    let mut keys: Vec<&ObjectKey> = placements
        .iter()
        .filter(|(key, p)| attention.may_act(key, p, (&old, index), &mut owner))
        .map(|(key, _)| key)
        .collect();
    keys.sort();
    // Capacity figures and request shapes are computed only for the workloads the engine sees.
    let mut capacity: HashMap<&str, u64> = HashMap::new();
    let mut workloads = Vec::new();
    // A workload whose template left the repository while the mass-deletion guard holds its
    // removal is not placed by anything this pass: it neither fails over nor moves back, and
    // its state stays as published (its eviction tasks keep their files) until the removal is.
    let mut frozen: Vec<&ObjectKey> = Vec::new();
    for key in keys {
        let Some(p) = placements.get(key) else { continue };
        if inputs.set.template(key).is_none() {
            frozen.push(key);
            continue;
        }
        let placed: BTreeMap<String, i32> = p.targets.iter().filter_map(|(c, r)| r.map(|r| (c.clone(), r))).collect();
        if placed.is_empty() && !old.workloads.contains_key(key) {
            continue;
        }
        let policy = p.policy.as_ref().and_then(|r| index.propagation_policy(r));
        let mut w = WorkloadInput::new(key.clone(), placed);
        if let Some(policy) = policy {
            let spec = &policy.spec;
            w.mobility = match Strategy::of(&spec.placement) {
                Strategy::Duplicated => Mobility::Duplicated,
                // Static weights are the user's division: moved only with an explicit
                // `failover.application` (the policy asks for replicas to move when they
                // do not run).
                Strategy::StaticWeight => {
                    Mobility::StaticWeights { allowed: spec.failover.as_ref().is_some_and(|f| f.application.is_some()) }
                }
                Strategy::DynamicWeight | Strategy::Aggregated => Mobility::Divided,
            };
            w.tolerations = spec.placement.cluster_tolerations.clone();
            let failover = spec.failover.as_ref();
            if let Some(mode) = failover.and_then(|f| f.cluster.as_ref()).and_then(|c| c.purge_mode) {
                w.cluster_rule.purge = Purge::from(mode);
            }
            w.application = failover.and_then(|f| f.application.as_ref()).map(|a| ApplicationRule {
                toleration_ms: u64::try_from(a.decision_conditions.toleration_seconds.unwrap_or(300)).unwrap_or(0)
                    * 1000,
                rule: FailoverRule {
                    purge: a.purge_mode.map_or(Purge::Gracefully, Purge::from),
                    grace_ms: a.grace_period_seconds.map(|s| u64::try_from(s).unwrap_or(0) * 1000),
                },
            });
        }
        let owner = Owner::of(key);
        let mut observed_trouble = false;
        for (cluster, replicas) in &w.placed {
            match by_name.get(cluster.as_str()).and_then(|s| s.pods.as_ref()) {
                Some(pods) => {
                    let st = owner.state(pods);
                    w.ready.insert(cluster.clone(), i32::try_from(st.ready).unwrap_or(i32::MAX));
                    // Pods beyond the placed replicas are the ones the member's agent will
                    // remove (the output already asks for fewer): they do not count.
                    let excess = st.pods.saturating_sub(u32::try_from(*replicas).unwrap_or(0));
                    let unschedulable =
                        u32::try_from(st.unschedulable_since.len()).unwrap_or(u32::MAX).saturating_sub(excess);
                    if unschedulable > 0 {
                        w.unschedulable.insert(cluster.clone(), Unschedulable { replicas: unschedulable });
                        observed_trouble = true;
                    }
                    if st.pods > 0 && st.not_ready() > 0 && w.application.is_some() {
                        w.not_ready.insert(cluster.clone());
                        observed_trouble = true;
                    }
                }
                None => {
                    w.ready.insert(cluster.clone(), *replicas);
                }
            }
        }
        let on_unhealthy = w.placed.keys().any(|c| attention.unhealthy.contains(c.as_str()));
        if on_unhealthy || observed_trouble || old.workloads.contains_key(key) {
            w.shape = shape_of(inputs, key);
            for cluster in w.placed.keys() {
                let Some(s) = by_name.get(cluster.as_str()) else { continue };
                let f = *capacity.entry(s.name.as_str()).or_insert_with(|| capacity_figure(s));
                w.capacity.insert(cluster.clone(), f);
            }
            workloads.push(w);
        }
    }
    let mut step = stability::step(&old, &stability::Inputs { clusters, workloads }, now_ms, settings);
    for key in frozen {
        if let Some(ws) = old.workloads.get(key) {
            step.state.workloads.insert(key.clone(), ws.clone());
        }
    }
    hold_releases_onto_unready(&old, &mut step, placements, index, &by_name);
    step.state.taints = taints;
    step.state.rebalances = rebalance(&old, inputs, placements, now_ms, &mut step.actions);
    let mut directives = BTreeMap::new();
    for (key, ws) in &step.state.workloads {
        let shape = shape_of(inputs, key);
        let failover = Failover {
            evicted: ws.evicted().into_iter().map(str::to_string).collect(),
            caps: ws.marks.iter().filter(|m| m.shape == shape).map(|m| (m.cluster.clone(), m.cap)).collect(),
        };
        let kept = ws.kept().into_iter().map(str::to_string).collect();
        directives
            .insert(key.clone(), Directive { failover, kept, returning: BTreeSet::new(), ..Directive::default() });
    }
    // The members that rejoin a workload's decisions this pass.
    for (key, was) in &old.workloads {
        let now = step.state.workloads.get(key).map(|ws| ws.evicted()).unwrap_or_default();
        if was.evicted().iter().any(|c| !now.contains(c)) {
            directives.entry(key.clone()).or_default().hands_over(HandOver::Rejoin);
        }
    }
    let mut move_backs = Vec::new();
    for a in &step.actions {
        if let (Some(key), Some(why)) = (&a.workload, HandOver::of(&a.kind)) {
            let d = directives.entry(key.clone()).or_default();
            d.fresh |= matches!(why, HandOver::Afresh(_));
            d.hands_over(why);
        }
        // What a move-back ended, given back if its decision does not return.
        let (Some(key), ActionKind::MoveBack { .. }) = (&a.workload, &a.kind) else { continue };
        let Some(moved_from) = old.workloads.get(key).and_then(|ws| ws.moved_from.get(&a.cluster)) else { continue };
        // The task the move-back ended: not one this pass purged (its files go either way).
        let purged = step.actions.iter().any(|p| {
            p.workload.as_ref() == Some(key) && p.cluster == a.cluster && matches!(p.kind, ActionKind::Purge { .. })
        });
        let task = old.workloads.get(key).and_then(|ws| ws.tasks.iter().find(|t| t.cluster == a.cluster)).cloned();
        let task = task.filter(|_| !purged);
        if task.as_ref().is_some_and(|t| t.purge != Purge::Directly) {
            directives.entry(key.clone()).or_default().returning.insert(a.cluster.clone());
        }
        let (cluster, moved_from) = (a.cluster.clone(), moved_from.clone());
        move_backs.push(MoveBack { key: key.clone(), cluster, task, moved_from, at_ms: now_ms });
    }
    log_actions(&step.actions);
    // The graceful tasks the purges end (a `Directly` one was purged when it started).
    let purged = step
        .actions
        .iter()
        .filter(|a| matches!(a.kind, ActionKind::Purge { .. }))
        .filter_map(|a| {
            let key = a.workload.as_ref()?;
            let task = old.workloads.get(key)?.tasks.iter().find(|t| t.cluster == a.cluster)?;
            (task.purge != Purge::Directly).then(|| (key.clone(), task.clone()))
        })
        .collect::<Vec<(ObjectKey, stability::EvictionTask)>>();
    for (key, task) in &purged {
        directives.entry(key.clone()).or_default().released.insert(task.cluster.clone());
    }
    Ok(StabilityPass {
        state: step.state,
        actions: step.actions,
        pending_failover: step.pending_failover,
        directives,
        state_blob,
        purged,
        move_backs,
    })
}

/// A graceful task (a hand-over's) keeps an older file on a member that its workload's placement
/// gives more replicas than that file runs (a later decision placed the workload there again
/// while the task held): ending it writes the placement's file there, new replicas. On a member
/// that takes none now — not Ready or unreachable, as the scheduler judges it
/// ([`crate::schedule::health_taint`]: Karmada's `NoSchedule` taint from the moment the member
/// is seen so) — this pass's purge of such a task is held: the task and its file stay as they
/// are (a held action, no history note), and the purge is due again once the member is Ready
/// (issue 46 invariant 4, simulation seed 106: a hand-over kept member-005's 1-replica file
/// under a placement of 2, and its grace period passed after member-005 was lost).
fn hold_releases_onto_unready(
    old: &StabilityState,
    step: &mut stability::Step,
    placements: &Placements,
    index: &PolicyIndex<'_>,
    by_name: &KeyMap<&str, &ClusterSnapshot>,
) {
    let mut held: Vec<(ObjectKey, stability::EvictionTask)> = Vec::new();
    for a in step.actions.iter_mut() {
        let (Some(key), ActionKind::Purge { .. }) = (&a.workload, &a.kind) else { continue };
        let Some(task) = old.workloads.get(key).and_then(|ws| ws.tasks.iter().find(|t| t.cluster == a.cluster)) else {
            continue;
        };
        let Some(p) = placements.get(key) else { continue };
        let placed = p.targets.get(&a.cluster).copied().flatten().unwrap_or(0);
        // A task of this pass on the member (an eviction replaces a hand-over) keeps its file.
        let replaced = step.state.workloads.get(key).is_some_and(|ws| ws.tasks.iter().any(|t| t.cluster == a.cluster));
        if task.purge == Purge::Directly || placed <= task.replicas || replaced {
            continue;
        }
        let Some(snapshot) = by_name.get(a.cluster.as_str()) else { continue };
        let placement = p.policy.as_ref().and_then(|r| index.propagation_policy(r)).map(|p| &p.spec.placement);
        let unready = match placement {
            Some(placement) => crate::schedule::health_taint(snapshot, placement).is_some(),
            None => !matches!(snapshot.health, Health::Ready),
        };
        if !unready {
            continue;
        }
        tracing::info!(workload = %key, cluster = %a.cluster, action = %a, "stability: release held: the member is not Ready and its placement there has more replicas than the kept file ({} < {placed})", task.replicas);
        a.kind = ActionKind::Held { action: "purge".into(), by: stability::Held::MemberNotReady };
        held.push((key.clone(), task.clone()));
    }
    for (key, task) in held {
        let ws = step.state.workloads.entry(key.clone()).or_default();
        ws.tasks.retain(|t| t.cluster != task.cluster);
        ws.tasks.push(task);
        ws.tasks.sort_by(|a, b| a.cluster.cmp(&b.cluster));
        step.pending_failover.insert(key);
    }
}

/// Logs a pass's actions: one line per action up to a bound, then one line for the rest (a
/// rebalancer naming 10,000 workloads is not 10,000 log lines; each has its history note).
fn log_actions(actions: &[Action]) {
    const LOGGED: usize = 20;
    let events = actions.iter().filter(|a| a.is_event()).count();
    if events > LOGGED {
        tracing::info!(
            actions = events,
            "stability: {events} actions this pass; the first {LOGGED} follow, every one is in the history"
        );
    }
    let storm = |a: &Action| matches!(a.kind, ActionKind::StormStarted { .. });
    for (_, a) in actions.iter().filter(|a| a.is_event()).enumerate().filter(|(i, a)| *i < LOGGED || storm(a)) {
        match (&a.kind, &a.workload) {
            // Said once its decision is known (`StabilityPass::settle_move_backs`).
            (ActionKind::MoveBack { .. }, _) => {}
            (ActionKind::StormStarted { .. }, _) => {
                tracing::warn!(action = %a, "stability: storm guard holds every eviction")
            }
            (ActionKind::GraceExpired { .. }, Some(w)) => {
                tracing::warn!(workload = %w, cluster = %a.cluster, action = %a, "stability: old copy kept past its grace period")
            }
            (_, Some(w)) => tracing::info!(workload = %w, cluster = %a.cluster, action = %a, "stability"),
            (_, None) => tracing::info!(action = %a, "stability"),
        }
    }
}

/// The blob hash of the state a pass starts from (the store's codec: JSON cannot key a map
/// by workload; an older fedsched stored an empty blob for such states). A state equal to the
/// one the cache remembers storing is not encoded and stored again: its blob is the same
/// content, under the same hash.
fn state_blob(store: &Store, kept: &mut Kept, old: &StabilityState) -> Result<u64, StoreError> {
    if let Some((stored, hash)) = &kept.stability_blob
        && stored == old
    {
        return Ok(*hash);
    }
    let hash = store.put_blob(&crate::store::codec::encode(old)?)?;
    kept.stability_blob = Some((old.clone(), hash));
    Ok(hash)
}

/// Which workloads may have something to do this pass, judged before their engine input is
/// built (the one place these conditions live; the engine acts on nothing else): a workload
/// with stability state (eviction tasks, move-back candidates, timers, marks), or one placed
/// with replicas on a member that is unhealthy (NotReady, Unreachable, or carrying a
/// ClusterTaintPolicy `NoExecute` taint) or where pods of its own are Unschedulable, or not
/// Ready when its policy has `failover.application`. WorkloadRebalancers are handled apart
/// ([`rebalance`]). Any other workload is skipped without a look at its policy or pods.
struct Attention<'a> {
    unhealthy: BTreeSet<&'a str>,
    /// Per owner key ([`Owner::key`]) of workloads whose pods are in trouble on some live
    /// member: those members. A workload is judged with one lookup, not a scan per member it
    /// is placed on.
    troubled: &'a KeyMap<String, Troubled>,
}

/// The live members where a workload's pods are Unschedulable, and where they are not Ready.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Troubled {
    unschedulable: BTreeSet<String>,
    not_ready: BTreeSet<String>,
}

/// [`Attention`]'s view of the members' pods, kept between passes (in the pass cache): per
/// owner key, the members where its pods are in trouble ([`Troubled`]), and per member the pod
/// facts that part was read from. A member whose pod facts are the same `Arc` as last pass
/// (held here, so the address is not reused) is not read again; one whose facts changed or
/// that is gone has its part taken out (and put in again from the new facts). A quiet fleet
/// costs a pointer comparison per member, not a walk of every pod owner.
#[derive(Debug, Default, Clone)]
pub(crate) struct TroubledOwners {
    /// Per member, the pod facts read and the owner keys they put in `by_owner`.
    read: KeyMap<String, (Arc<PodFacts>, Vec<String>)>,
    by_owner: KeyMap<String, Troubled>,
}

impl TroubledOwners {
    /// Whether the view was read from `views`' pod facts (the same `Arc`s, no member gone).
    fn current(&self, views: &[ClusterSnapshot]) -> bool {
        let mut same = 0usize;
        for s in views {
            let Some(pods) = &s.pods else { continue };
            match self.read.get(s.name.as_str()) {
                Some((read, _)) if Arc::ptr_eq(read, pods) => same += 1,
                _ => return false,
            }
        }
        same == self.read.len()
    }

    /// Brings the view up to date with `views`' pod facts: the members whose facts are another
    /// `Arc` read again, those without facts now taken out.
    fn update(&mut self, views: &[ClusterSnapshot]) {
        let changed: Vec<(&str, &Arc<PodFacts>)> = views
            .iter()
            .filter_map(|s| Some((s.name.as_str(), s.pods.as_ref()?)))
            .filter(|(name, pods)| !self.read.get(*name).is_some_and(|(read, _)| Arc::ptr_eq(read, pods)))
            .collect();
        let live: KeySet<&str> = views.iter().filter(|s| s.pods.is_some()).map(|s| s.name.as_str()).collect();
        let gone: Vec<String> = self.read.keys().filter(|n| !live.contains(n.as_str())).cloned().collect();
        for name in gone.iter().map(String::as_str).chain(changed.iter().map(|(n, _)| *n)) {
            self.take_out(name);
        }
        for (name, pods) in changed {
            self.put_in(name, pods);
        }
        #[cfg(debug_assertions)]
        {
            let mut fresh = TroubledOwners::default();
            for s in views {
                if let Some(pods) = &s.pods {
                    fresh.put_in(&s.name, pods);
                }
            }
            debug_assert_eq!(fresh.by_owner, self.by_owner, "the troubled owners kept between passes drifted");
        }
    }

    /// Takes member `name`'s part out.
    fn take_out(&mut self, name: &str) {
        let Some((_, entries)) = self.read.remove(name) else { return };
        for owner in entries {
            let Some(t) = self.by_owner.get_mut(&owner) else { continue };
            t.unschedulable.remove(name);
            t.not_ready.remove(name);
            if t.unschedulable.is_empty() && t.not_ready.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }

    /// Puts member `name`'s part in, read from `pods`.
    fn put_in(&mut self, name: &str, pods: &Arc<PodFacts>) {
        let mut entries = Vec::new();
        for (owner, st) in &pods.owners {
            let (unschedulable, not_ready) = (!st.unschedulable_since.is_empty(), st.pods > 0 && st.not_ready() > 0);
            if !unschedulable && !not_ready {
                continue;
            }
            for claimant in Owner::claimants(owner) {
                let t = self.by_owner.entry(claimant.to_string()).or_default();
                if unschedulable {
                    t.unschedulable.insert(name.to_string());
                }
                if not_ready {
                    t.not_ready.insert(name.to_string());
                }
                entries.push(claimant.to_string());
            }
        }
        self.read.insert(name.to_string(), (Arc::clone(pods), entries));
    }
}

impl<'a> Attention<'a> {
    fn new(clusters: &'a [ClusterInput], troubled: &'a TroubledOwners) -> Self {
        let unhealthy = clusters
            .iter()
            .filter(|c| !c.condition.is_ready() || !c.no_execute.is_empty())
            .map(|c| c.name.as_str())
            .collect();
        Attention { unhealthy, troubled: &troubled.by_owner }
    }

    /// Whether `key` (placed as `p`) may have something to do: a necessary condition of the
    /// engine's, never a sufficient one (the input built then says exactly).
    /// (`owner`: a buffer for the workload's owner key.)
    fn may_act(
        &self,
        key: &ObjectKey,
        p: &PlacementRecord,
        (old, index): (&StabilityState, &PolicyIndex<'_>),
        owner: &mut String,
    ) -> bool {
        if old.workloads.contains_key(key) {
            return true;
        }
        let placed = || p.targets.iter().filter(|(_, r)| r.is_some()).map(|(c, _)| c.as_str());
        if !self.unhealthy.is_empty() && placed().any(|c| self.unhealthy.contains(c)) {
            return true;
        }
        if self.troubled.is_empty() {
            return false;
        }
        let t = match Owner::write_key(key, owner) {
            Some(_) => self.troubled.get(owner.as_str()),
            None => None,
        };
        let Some(t) = t else { return false };
        if placed().any(|c| t.unschedulable.contains(c)) {
            return true;
        }
        let application = || {
            p.policy
                .as_ref()
                .and_then(|r| index.propagation_policy(r))
                .is_some_and(|pp| pp.spec.failover.as_ref().is_some_and(|f| f.application.is_some()))
        };
        placed().any(|c| t.not_ready.contains(c)) && application()
    }
}

/// The WorkloadRebalancers of the repository: each one whose generation (its
/// `metadata.generation` and spec, hashed) was not acted on yet asks a fresh decision of every
/// placed workload it names (an action, so a history note; the decision ignores the previous
/// placement, as Karmada's `rescheduleTriggeredAt`), and records the outcome per workload.
/// Rebalancers gone from the repository are forgotten.
fn rebalance(
    old: &StabilityState,
    inputs: &Inputs,
    placements: &Placements,
    now_ms: u64,
    actions: &mut Vec<Action>,
) -> BTreeMap<String, stability::Rebalance> {
    let mut out = BTreeMap::new();
    for r in &inputs.set.workload_rebalancers {
        let name = r.meta.name.clone();
        let generation_hash = fnv1a64(&serde_json::to_vec(&(r.meta.generation, &r.spec)).unwrap_or_default());
        let done = old.rebalances.get(&name).filter(|d| d.generation_hash == generation_hash);
        if let Some(done) = done.filter(|d| d.workloads.iter().all(|(_, r)| r != REBALANCE_PENDING)) {
            out.insert(name, done.clone());
            continue;
        }
        let mut workloads = Vec::new();
        // A workload named twice is rebalanced once (`check` warns about the copies).
        let mut seen = std::collections::HashSet::new();
        for w in &r.spec.workloads {
            let ns = w.namespace.as_deref().filter(|n| !n.is_empty());
            let key = ObjectKey::new(&w.api_version, &w.kind, ns, &w.name);
            if !seen.insert((w.api_version.clone(), key.clone())) {
                continue;
            }
            let placed = placements.get(&key).is_some_and(|p| p.targets.values().any(Option::is_some));
            let label = format!("{} {key}", w.api_version);
            // This generation acted already: only the workloads whose change was held act again.
            if let Some(done) = done
                && let Some((_, result)) = done.workloads.iter().find(|(l, _)| *l == label)
                && result != REBALANCE_PENDING
            {
                workloads.push((label, result.clone()));
                continue;
            }
            if !placed {
                workloads.push((label, "NotFound".to_string()));
                continue;
            }
            let cause = stability::Cause {
                condition: format!("WorkloadRebalancer {name}"),
                since_ms: 0,
                for_ms: 0,
                rule: "once per generation".into(),
            };
            let kind = ActionKind::Rebalance { rebalancer: name.clone(), generation: r.meta.generation };
            actions.push(Action { workload: Some(key), cluster: String::new(), kind, cause });
            workloads.push((label, "Successful".to_string()));
        }
        tracing::info!(rebalancer = %name, workloads = workloads.len(), "WorkloadRebalancer acted");
        let at_ms = done.map_or(now_ms, |d| d.at_ms);
        out.insert(name, stability::Rebalance { generation_hash, generation: r.meta.generation, at_ms, workloads });
    }
    out
}

/// The request shape of a workload: a hash of its pod template (`spec.template`; the whole
/// object for kinds without one), so a change of `replicas` keeps a distrust mark.
fn shape_of(inputs: &Inputs, key: &ObjectKey) -> u64 {
    let Some(t) = inputs.set.template(key) else { return 0 };
    let part = t.object.pointer("/spec/template").unwrap_or(&t.object);
    fnv1a64(&serde_json::to_vec(part).unwrap_or_default())
}

/// A member's condition for the engine.
fn cluster_input(s: &ClusterSnapshot) -> ClusterInput {
    let (condition, reason) = match &s.health {
        Health::Ready => (Condition::Ready, String::new()),
        Health::NotReady { reason } => (Condition::NotReady, reason.clone()),
        Health::Unreachable { reason } => (Condition::Unreachable, reason.clone()),
    };
    ClusterInput { name: s.name.clone(), condition, reason, live: s.is_live(), no_execute: Vec::new() }
}

/// The figures a member's capacity for any request shape is judged by: allocatable of the
/// summary and of every node (with its readiness and cordon), not what is allocated, so a
/// distrust mark holds until the member's capacity itself changes.
fn capacity_figure(s: &ClusterSnapshot) -> u64 {
    let nodes: Vec<(&str, &crate::model::ResourceList, bool, bool)> =
        s.nodes.iter().map(|n| (n.name.as_str(), &*n.allocatable, n.ready, n.unschedulable)).collect();
    let summary = s.summary.as_ref().map(|x| &x.allocatable);
    fnv1a64(&serde_json::to_vec(&(summary, nodes)).unwrap_or_default())
}

/// What the reconciler tests of this stage share: a repository in a temporary directory, the
/// output and store directories a reconciler of it uses, and its members.
#[cfg(test)]
pub(crate) mod fixture {
    use std::path::PathBuf;

    use crate::reconcile::{Inputs, Reconciler, Repository, Settings, load_inputs};
    use crate::store::Store;

    /// A repository of `apps.yaml` and `clusters.yaml` (more files with [`Fixture::write`]),
    /// with `out` and `state` beside it; all removed when dropped.
    pub(crate) struct Fixture {
        _dir: tempfile::TempDir,
        pub repo: PathBuf,
        pub out: PathBuf,
        pub state: PathBuf,
    }

    impl Fixture {
        pub(crate) fn new(apps: &str, clusters: &[String]) -> Fixture {
            let dir = tempfile::tempdir().expect("tempdir");
            let repo = dir.path().join("repo");
            std::fs::create_dir_all(&repo).expect("mkdir");
            let f = Fixture { out: dir.path().join("out"), state: dir.path().join("state"), repo, _dir: dir };
            f.write("apps.yaml", apps);
            f.clusters(clusters);
            f
        }

        /// Writes (or replaces) a file of the repository.
        pub(crate) fn write(&self, file: &str, text: &str) {
            std::fs::write(self.repo.join(file), text).expect("write");
        }

        /// Replaces the repository's members.
        pub(crate) fn clusters(&self, clusters: &[String]) {
            self.write("clusters.yaml", &clusters.join("---\n"));
        }

        /// A reconciler on the store (opened again after a drop: a restart).
        pub(crate) fn reconciler(&self, settings: Settings) -> Reconciler {
            Reconciler::new(Store::open(&self.state).expect("store"), settings)
        }

        /// The repository as loaded now.
        pub(crate) fn inputs(&self) -> Inputs {
            load_inputs(Repository::Dir(&self.repo), &Settings::builtin()).expect("inputs")
        }
    }

    /// A Ready member with `cpu` cores, 80 GiB and 110 pods allocatable.
    pub(crate) fn cluster(name: &str, cpu: u32) -> String {
        format!(
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: {name}}}\nspec: {{syncMode: Push}}\n\
             status:\n  conditions: [{{type: Ready, status: \"True\"}}]\n  resourceSummary:\n\
             \x20   allocatable: {{cpu: \"{cpu}\", memory: 80Gi, pods: \"110\"}}\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::fixture::{Fixture, cluster};
    use crate::model::snapshot::{OwnerState, PodFacts};
    use crate::reconcile::{Reconciler, Settings};

    pub(super) const REPO: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// Replicas of a Divided workload Unschedulable on a member for `unschedulable_after`
    /// leave it (it keeps those that run) and go to the others; the member's capacity is
    /// distrusted, so the next decisions do not send them back.
    #[test]
    fn unschedulable_replicas_are_rescheduled_and_not_sent_back() {
        let f = Fixture::new(REPO, &["m1", "m2", "m3"].map(|n| cluster(n, 20)));
        let out = &f.out;
        let rec = f.reconciler(Settings::builtin());
        let mut inputs = f.inputs();
        let t0 = 1_700_000_000_000;
        let targets = |rec: &Reconciler| -> BTreeMap<String, i32> {
            let p = rec.store.placements().expect("placements");
            p[0].targets.iter().map(|(c, r)| (c.clone(), r.unwrap_or(0))).collect()
        };
        rec.reconcile(&inputs, out, crate::publish::Trigger::Timer, t0).expect("pass");
        let even = BTreeMap::from([("m1".into(), 2), ("m2".into(), 2), ("m3".into(), 2)]);
        assert_eq!(targets(&rec), even);

        // One of m1's two pods cannot be scheduled there.
        let state = OwnerState {
            pods: 2,
            bound: 1,
            running: 1,
            ready: 1,
            unschedulable_since: vec![t0],
            not_ready_since: vec![t0],
            pending_reasons: BTreeMap::from([("Unschedulable".to_string(), 1)]),
        };
        let owner = "ReplicaSet/shop/web-5d8f9".to_string();
        let pods = PodFacts {
            bound: 1,
            unbound: 1,
            unschedulable: BTreeMap::from([(owner.clone(), 1)]),
            by_owner: BTreeMap::from([(owner.clone(), 2)]),
            owners: BTreeMap::from([(owner, state)]),
            objects: BTreeMap::new(),
            agents: BTreeMap::new(),
            interpreted: BTreeMap::new(),
        };
        if let Some(m1) = inputs.snapshots.iter_mut().find(|s| s.name == "m1") {
            m1.pods = Some(std::sync::Arc::new(pods));
        }
        let r = rec.reconcile(&inputs, out, crate::publish::Trigger::Timer, t0 + 60_000).expect("pass");
        assert!(r.stability.events.is_empty(), "{:?}", r.stability.events);
        assert_eq!(targets(&rec), even);
        let r = rec.reconcile(&inputs, out, crate::publish::Trigger::Timer, t0 + 60_000 + 180_000).expect("pass");
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(kinds, [("reschedule", "m1")]);
        let after = targets(&rec);
        assert_eq!(after.get("m1"), Some(&1), "{after:?}");
        assert_eq!(after.values().sum::<i32>(), 6, "{after:?}");
        // Still Unschedulable (the agent has not applied yet), capacity unchanged: nothing
        // comes back, nothing moves again.
        for dt in [10_000, 20_000, 400_000] {
            let r = rec.reconcile(&inputs, out, crate::publish::Trigger::Timer, t0 + 240_000 + dt).expect("pass");
            assert!(r.stability.events.is_empty(), "{dt}: {:?}", r.stability.events);
            assert_eq!(targets(&rec), after, "{dt}");
        }
        // explain shows the eviction state.
        let r: crate::views::explain::WorkloadRef = "Deployment/shop/web".parse().expect("ref");
        let doc = crate::views::explain::explain(&inputs, &rec.store, &rec.settings().profiles, &r, t0 + 240_000)
            .expect("explain");
        assert_eq!(doc["failover"]["capacityMarks"][0]["cluster"], "m1", "{doc}");
        assert_eq!(doc["failover"]["capacityMarks"][0]["cap"], 1, "{doc}");
        let text = crate::views::explain::to_text(&doc);
        assert!(text.contains("failover: capacity of m1 distrusted since"), "{text}");
        // A scale-up decides again: the distrusted member gets none of the new replicas.
        f.write("apps.yaml", &REPO.replace("replicas: 6", "replicas: 9"));
        let pods = inputs.snapshots.iter().find(|s| s.name == "m1").and_then(|s| s.pods.clone());
        let mut inputs = f.inputs();
        if let Some(m1) = inputs.snapshots.iter_mut().find(|s| s.name == "m1") {
            m1.pods = pods;
        }
        rec.reconcile(&inputs, out, crate::publish::Trigger::Timer, t0 + 700_000).expect("pass");
        let scaled = targets(&rec);
        assert_eq!((scaled.get("m1"), scaled.values().sum::<i32>()), (Some(&1), 9), "{scaled:?}");
        let history = rec.store.history(&rec.store.placements().expect("p")[0].workload).expect("history");
        let notes: Vec<&String> = history.iter().flat_map(|h| &h.notes).collect();
        assert_eq!(
            notes.iter().filter(|n| n.contains("rescheduled 1 Unschedulable replicas off m1")).count(),
            1,
            "{notes:?}"
        );
    }

    /// Issue 46, invariant 6 (seed 16 of `fedsched dst`, no fault): a pass that notes an
    /// action of a workload whose decision it would reuse (here "cannot move": a Duplicated
    /// workload's replica Unschedulable for `unschedulable_after`) decides it afresh, so the
    /// history record holds the figures of the inputs it stores with the note and replays
    /// `identical`. Before, the record carried the figures of the pass that made the decision
    /// (m2's room before it shrank) with this pass's inputs: the replay gave another room.
    #[test]
    fn a_noted_action_records_a_decision_of_its_own_pass_that_replays() {
        let duplicated = REPO
            .replace(
                "      replicaSchedulingType: Divided\n      replicaDivisionPreference: Weighted\n      weightPreference: {dynamicWeight: AvailableReplicas}\n",
                "      replicaSchedulingType: Duplicated\n",
            )
            .replace("replicas: 6", "replicas: 2");
        assert!(duplicated.contains("Duplicated"));
        let fleet = |m2_cpu: u32| [cluster("m1", 20), cluster("m2", m2_cpu)];
        let f = Fixture::new(&duplicated, &fleet(20));
        let (repo, out) = (&f.repo, &f.out);
        let rec = f.reconciler(Settings::builtin());
        let t0 = 1_700_000_000_000;
        // One of m1's two pods cannot be scheduled there.
        let owner = "ReplicaSet/shop/web-5d8f9".to_string();
        let state = OwnerState {
            pods: 2,
            bound: 1,
            running: 1,
            ready: 1,
            unschedulable_since: vec![t0],
            not_ready_since: vec![t0],
            pending_reasons: BTreeMap::from([("Unschedulable".to_string(), 1)]),
        };
        let stuck = std::sync::Arc::new(PodFacts {
            bound: 1,
            unbound: 1,
            unschedulable: BTreeMap::from([(owner.clone(), 1)]),
            by_owner: BTreeMap::from([(owner.clone(), 2)]),
            owners: BTreeMap::from([(owner, state)]),
            objects: BTreeMap::new(),
            agents: BTreeMap::new(),
            interpreted: BTreeMap::new(),
        });
        let inputs = |stuck: Option<&std::sync::Arc<PodFacts>>| {
            // As the daemon loads (the repository's files kept for the replay).
            let mut inputs =
                rec.load_inputs(repo, &mut Default::default(), &crate::reconcile::Changed::Unknown).expect("inputs");
            if let (Some(m1), Some(p)) = (inputs.snapshots.iter_mut().find(|s| s.name == "m1"), stuck) {
                m1.pods = Some(std::sync::Arc::clone(p));
            }
            inputs
        };
        rec.reconcile(&inputs(None), out, crate::publish::Trigger::Timer, t0).expect("pass");
        let r = rec.reconcile(&inputs(Some(&stuck)), out, crate::publish::Trigger::Timer, t0 + 60_000).expect("pass");
        assert!(r.stability.events.is_empty(), "{:?}", r.stability.events);
        // m2 shrinks: the Duplicated decision stands (nothing recorded).
        f.clusters(&fleet(10));
        let r = rec.reconcile(&inputs(Some(&stuck)), out, crate::publish::Trigger::Timer, t0 + 120_000).expect("pass");
        assert_eq!(r.history_records, 0, "{r:?}");
        let r = rec.reconcile(&inputs(Some(&stuck)), out, crate::publish::Trigger::Timer, t0 + 240_000).expect("pass");
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(kinds, [("cannot-move", "m1")]);
        let key = rec.store.placements().expect("placements")[0].workload.clone();
        let history = rec.store.history(&key).expect("history");
        let last = history.last().expect("a record");
        assert!(last.notes.iter().any(|n| n.contains("cannot move")), "{:?}", last.notes);
        let doc = crate::views::replay::document(&rec.store, &history, &Settings::builtin).expect("replay");
        assert_eq!(
            (doc["replayed"].as_u64(), doc["different"].as_u64()),
            (Some(history.len() as u64), Some(0)),
            "{doc:#}"
        );
    }
}

#[cfg(test)]
mod attention_tests {
    use std::collections::BTreeMap;

    use super::fixture::{Fixture, cluster};
    use super::{Attention, TroubledOwners};
    use crate::model::snapshot::{Health, OwnerState, PodFacts};
    use crate::policy::matching::PolicyIndex;
    use crate::reconcile::Settings;
    use crate::schedule::stability::StabilityState;
    use crate::store::Store;

    fn pods(owner: &str, unschedulable: bool) -> PodFacts {
        let state = OwnerState {
            pods: 2,
            bound: 1,
            running: 1,
            ready: 1,
            unschedulable_since: if unschedulable { vec![1] } else { Vec::new() },
            not_ready_since: vec![1],
            pending_reasons: BTreeMap::from([("Unschedulable".to_string(), 1)]),
        };
        PodFacts {
            bound: 1,
            unbound: 1,
            unschedulable: BTreeMap::new(),
            by_owner: BTreeMap::from([(owner.to_string(), 2)]),
            owners: BTreeMap::from([(owner.to_string(), state)]),
            objects: BTreeMap::new(),
            agents: BTreeMap::new(),
            interpreted: BTreeMap::new(),
        }
    }

    /// A quiet pass gives the engine nothing: a workload placed on healthy members whose pods
    /// run is skipped before its input is built; its own Unschedulable pods, an unhealthy
    /// member it is placed on, or stability state of its own make it count; another
    /// workload's trouble, or not-Ready pods without `failover.application`, do not.
    #[test]
    fn only_workloads_with_something_to_do_reach_the_engine() {
        let f = Fixture::new(super::tests::REPO, &["m1", "m2", "m3"].map(|n| cluster(n, 20)));
        let rec = f.reconciler(Settings::builtin());
        let inputs = f.inputs();
        rec.reconcile(&inputs, &f.out, crate::publish::Trigger::Timer, 1_700_000_000_000).expect("pass");
        let placement = rec.store.placements().expect("placements").remove(0);
        let key = placement.workload.clone();
        let index = PolicyIndex::new(&inputs.set);
        let quiet = StabilityState::default();
        // One view of the pods kept across the calls, as between passes.
        let troubled = std::cell::RefCell::new(TroubledOwners::default());
        let may_act = |views: &[crate::model::ClusterSnapshot], old: &StabilityState| {
            let clusters: Vec<_> = views.iter().map(super::cluster_input).collect();
            let mut t = troubled.borrow_mut();
            t.update(views);
            Attention::new(&clusters, &t).may_act(&key, &placement, (old, &index), &mut String::new())
        };
        let with = |f: &dyn Fn(&mut crate::model::ClusterSnapshot)| {
            let mut views = inputs.snapshots.clone();
            if let Some(m1) = views.iter_mut().find(|s| s.name == "m1") {
                f(m1);
            }
            views
        };
        assert!(!may_act(&inputs.snapshots, &quiet), "a quiet workload is skipped");
        assert!(may_act(&with(&|s| s.pods = Some(pods("ReplicaSet/shop/web-5d8f9", true).into())), &quiet));
        assert!(!may_act(&with(&|s| s.pods = Some(pods("ReplicaSet/shop/other-5d8f9", true).into())), &quiet));
        assert!(!may_act(&with(&|s| s.pods = Some(pods("ReplicaSet/shop/web-5d8f9", false).into())), &quiet));
        assert!(may_act(&with(&|s| s.health = Health::NotReady { reason: "x".into() }), &quiet));
        let mut old = StabilityState::default();
        old.workloads.insert(key.clone(), Default::default());
        assert!(may_act(&inputs.snapshots, &old));
    }

    /// The pods' view kept between passes follows the members: a member whose pod facts are
    /// the same `Arc` is not read again, one whose facts changed is read again, one gone (or
    /// without pods now) is taken out; after each step the view is the one read from scratch.
    #[test]
    fn the_troubled_owners_follow_the_members_pods() {
        use crate::model::ClusterSnapshot;
        use crate::model::snapshot::SnapshotSource;
        let member = |name: &str, owner: &str, unschedulable: bool| {
            ClusterSnapshot::new(name, SnapshotSource::Live { endpoint: format!("https://{name}") })
                .with_pods(pods(owner, unschedulable))
        };
        let scratch = |views: &[ClusterSnapshot]| {
            let mut t = TroubledOwners::default();
            t.update(views);
            t.by_owner
        };
        let unschedulable_on = |t: &TroubledOwners, owner: &str| -> Vec<String> {
            t.by_owner.get(owner).map(|t| t.unschedulable.iter().cloned().collect()).unwrap_or_default()
        };
        let mut views =
            vec![member("m1", "ReplicaSet/shop/web-5d8f9", true), member("m2", "ReplicaSet/shop/web-77c4b", true)];
        let mut kept = TroubledOwners::default();
        kept.update(&views);
        assert_eq!(unschedulable_on(&kept, "ReplicaSet/shop/web-"), ["m1", "m2"]);
        // A mark in m1's part: it stays only if m1 is not read again.
        if let Some((_, entries)) = kept.read.get_mut("m1") {
            entries.push("mark".into());
        }
        assert!(kept.current(&views));
        // m2's pods run now: m2 is read again, m1 (the same facts) is not.
        views[1] = member("m2", "ReplicaSet/shop/web-77c4b", false);
        assert!(!kept.current(&views), "m2's facts are another Arc");
        kept.update(&views);
        assert_eq!(unschedulable_on(&kept, "ReplicaSet/shop/web-"), ["m1"]);
        assert!(kept.read.get("m1").is_some_and(|(_, e)| e.iter().any(|o| o == "mark")), "m1 was read again");
        assert_eq!(kept.by_owner, scratch(&views));
        // Another workload in trouble on m2; then m1 without pods, then gone.
        views[1] = member("m2", "StatefulSet/shop/db", true);
        kept.update(&views);
        assert_eq!(unschedulable_on(&kept, "StatefulSet/shop/db"), ["m2"]);
        assert_eq!(kept.by_owner, scratch(&views));
        views[0].pods = None;
        kept.update(&views);
        assert!(!kept.by_owner.contains_key("ReplicaSet/shop/web-"), "m1's part is taken out");
        assert_eq!(kept.by_owner, scratch(&views));
        views.remove(1);
        assert!(!kept.current(&views), "m2 is gone");
        kept.update(&views);
        assert!(kept.by_owner.is_empty() && kept.read.is_empty(), "{kept:?}");
    }

    /// Passes that start from the same stability state reference the same blob, stored once.
    #[test]
    fn an_unchanged_state_keeps_its_blob() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("state")).expect("store");
        let mut kept = super::Kept::default();
        let mut state = StabilityState { recent_removals: vec![7], ..StabilityState::default() };
        let first = super::state_blob(&store, &mut kept, &state).expect("blob");
        assert_eq!(super::state_blob(&store, &mut kept, &state).expect("blob"), first);
        let blob = store.blob(first).expect("read").expect("stored");
        assert_eq!(crate::store::codec::decode::<StabilityState>(&blob).expect("state"), state);
        state.recent_removals.push(8);
        let second = super::state_blob(&store, &mut kept, &state).expect("blob");
        assert_ne!(second, first);
        let blob = store.blob(second).expect("read").expect("stored");
        assert_eq!(crate::store::codec::decode::<StabilityState>(&blob).expect("state"), state);
    }
}

#[cfg(test)]
mod storm_tests {
    use super::fixture::{Fixture, cluster};
    use crate::model::snapshot::{Health, SnapshotSource};
    use crate::reconcile::Settings;

    /// 60 % of the live members unreachable at once: nothing is evicted, the report says so;
    /// when most come back, the guard releases and the one still lost is evicted.
    #[test]
    fn storm_guard_evicts_nothing_while_most_members_are_down() {
        let names = ["m1", "m2", "m3", "m4", "m5"];
        let f =
            Fixture::new(&super::tests::REPO.replace("replicas: 6", "replicas: 10"), &names.map(|n| cluster(n, 20)));
        let out = &f.out;
        let rec = f.reconciler(Settings::builtin());
        let t0 = 1_700_000_000_000;
        let with_down = |down: &[&str]| {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                s.source = SnapshotSource::Live { endpoint: format!("https://{}", s.name) };
                if down.contains(&s.name.as_str()) {
                    s.health = Health::Unreachable { reason: "connection refused".into() };
                }
            }
            inputs
        };
        rec.reconcile(&with_down(&[]), out, crate::publish::Trigger::Timer, t0).expect("pass");
        let before = rec.store.placements().expect("p")[0].targets.clone();
        assert_eq!(before.len(), 5);
        let down = with_down(&["m1", "m2", "m3"]);
        let r = rec.reconcile(&down, out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        assert!(r.stability.storm.is_some(), "{:?}", r.stability);
        assert!(r.summary().contains("storm guard"), "{}", r.summary());
        for m in 1..15 {
            let r = rec.reconcile(&down, out, crate::publish::Trigger::Timer, t0 + 10_000 + m * 60_000).expect("pass");
            assert!(r.stability.events.is_empty(), "{m}: {:?}", r.stability.events);
            // Past the toleration, the three evictions are due and held.
            assert!(r.stability.storm.is_some() && (m < 5 || r.stability.held == 3), "{m}: {:?}", r.stability);
        }
        assert_eq!(rec.store.placements().expect("p")[0].targets, before, "nothing moved");
        // m2 and m3 come back: 1 of 5 down, the guard releases; m1, still down, starts its
        // toleration again from the release (a member that answers a moment later is not
        // evicted for the spell the guard held) and is evicted once it has passed.
        let r =
            rec.reconcile(&with_down(&["m1"]), out, crate::publish::Trigger::Timer, t0 + 20 * 60_000).expect("pass");
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(kinds, [("storm-ended", "")]);
        assert_eq!(rec.store.placements().expect("p")[0].targets, before, "nothing moved at the release");
        let r =
            rec.reconcile(&with_down(&["m1"]), out, crate::publish::Trigger::Timer, t0 + 26 * 60_000).expect("pass");
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(kinds, [("eviction", "m1")]);
        let placement = &rec.store.placements().expect("p")[0];
        assert!(!placement.targets.contains_key("m1"));
        // The eviction's record names the stability state the pass started from (m1's
        // toleration restarted at the release): replay rebuilds the pass from it.
        let last = rec.store.last_history(&placement.workload).expect("history").expect("a record");
        assert!(last.notes.iter().any(|n| n.contains("evicted 2 replicas from m1")), "{:?}", last.notes);
        let blob = rec.store.blob(last.inputs.stability).expect("blob").expect("stored");
        let used: crate::schedule::stability::StabilityState = crate::store::codec::decode(&blob).expect("state");
        assert!(used.storm.is_none() && used.clusters["m1"].unhealthy_since_ms == Some(t0 + 20 * 60_000));
    }
}

#[cfg(test)]
pub(crate) mod grace_tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::fixture::Fixture;
    pub(crate) use super::fixture::cluster;
    use crate::model::snapshot::{Health, OwnerState, PodFacts};
    use crate::reconcile::{Inputs, Settings};

    /// One Aggregated Deployment of 2 replicas: it fits on one member and runs nowhere else.
    const REPO: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// The replicas of web's published Deployment on member `c` (none when no file is there).
    pub(super) fn replicas(out: &std::path::Path, c: &str) -> Option<i64> {
        let text = std::fs::read_to_string(out.join(c).join("shop/apps_deployment_web.yaml")).ok()?;
        text.lines().find_map(|l| l.trim().strip_prefix("replicas: ")).and_then(|v| v.parse().ok())
    }

    /// The workload's pods on a member: `pods` of them, `ready` Ready.
    pub(super) fn pods(pods: u32, ready: u32) -> Arc<PodFacts> {
        let owner = "ReplicaSet/shop/web-5d8f9".to_string();
        let state = OwnerState { pods, bound: pods, running: pods, ready, ..OwnerState::default() };
        Arc::new(PodFacts {
            bound: pods,
            by_owner: BTreeMap::from([(owner.clone(), pods)]),
            owners: BTreeMap::from([(owner, state)]),
            ..PodFacts::default()
        })
    }

    /// Issue 46, bug 2: a grace period that passes while no replica of the workload is Ready
    /// anywhere else purges nothing ("never while it runs nowhere else"): the old copy stays and
    /// the operator is told — a history note (once), explain and status, the report's count
    /// (`fedsched_workloads{state="kept_past_grace"}`). The first Ready replica elsewhere purges
    /// it. Before the fix the purge fired at the grace period with 0 of 2 Ready.
    #[test]
    fn a_grace_period_that_passes_with_nothing_ready_elsewhere_keeps_the_old_copy_and_says_so() {
        let f = Fixture::new(REPO, &[cluster("m1", 40), cluster("m2", 20), cluster("m3", 20)]);
        let out = &f.out;
        let rec = f.reconciler(Settings::builtin());
        let web = |c: &str| out.join(c).join("shop/apps_deployment_web.yaml").exists();
        // m1 lost; the others' pods of the workload `(pods, ready)`.
        let world = |lost: bool, others: (u32, u32)| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                match s.name.as_str() {
                    "m1" if lost => s.health = Health::Unreachable { reason: "connection refused".into() },
                    "m1" => {}
                    _ => s.pods = Some(pods(others.0, others.1)),
                }
            }
            inputs
        };
        let t0 = 1_700_000_000_000;
        rec.reconcile(&world(false, (0, 0)), out, crate::publish::Trigger::Timer, t0).expect("pass");
        assert!(web("m1") && !web("m2") && !web("m3"), "placed on m1 alone");
        // Lost for the toleration (5 min): evicted; the replacement's pods never get Ready.
        rec.reconcile(&world(true, (0, 0)), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        let r = rec.reconcile(&world(true, (0, 0)), out, crate::publish::Trigger::Timer, t0 + 310_000).expect("pass");
        assert_eq!(r.stability.events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["eviction"]);
        assert!(web("m1") && (web("m2") || web("m3")), "the replacement is published, the old copy kept");
        let grace_end = t0 + 310_000 + 600_000;
        let r =
            rec.reconcile(&world(true, (2, 0)), out, crate::publish::Trigger::Timer, grace_end - 1_000).expect("pass");
        assert!(r.stability.events.is_empty() && r.stability.kept_past_grace == 0, "{:?}", r.stability);
        // The grace period passes with 0 of 2 Ready: kept, and said so once.
        let r = rec.reconcile(&world(true, (2, 0)), out, crate::publish::Trigger::Timer, grace_end).expect("pass");
        assert_eq!(r.stability.events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["grace-expired"]);
        assert_eq!(r.stability.kept_past_grace, 1);
        assert!(web("m1"), "purged while nothing runs elsewhere");
        for dt in [10_000, 600_000] {
            let r =
                rec.reconcile(&world(true, (2, 0)), out, crate::publish::Trigger::Timer, grace_end + dt).expect("pass");
            assert!(r.stability.events.is_empty(), "{dt}: {:?}", r.stability.events);
            assert_eq!(r.stability.kept_past_grace, 1);
            assert!(web("m1"));
        }
        let key = rec.store.placements().expect("placements")[0].workload.clone();
        let notes: Vec<String> = rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect();
        let expired: Vec<&String> = notes.iter().filter(|n| n.contains("grace period 10m passed")).collect();
        assert_eq!(expired.len(), 1, "{notes:#?}");
        assert!(
            expired[0].contains("no replica Ready on m") && expired[0].contains("files left on m1 stay"),
            "{expired:?}"
        );
        assert!(notes.iter().all(|n| !n.starts_with("purged")), "{notes:#?}");
        // explain and status say so.
        let wr: crate::views::explain::WorkloadRef = "Deployment/shop/web".parse().expect("ref");
        let inputs = world(true, (2, 0));
        let doc = crate::views::explain::explain(&inputs, &rec.store, &rec.settings().profiles, &wr, grace_end)
            .expect("explain");
        assert!(doc["failover"]["evictions"][0]["graceExpired"].is_string(), "{doc}");
        let text = crate::views::explain::to_text(&doc);
        assert!(text.contains("grace period passed at") && text.contains("its files stay until one is"), "{text}");
        let opts = crate::views::workload_status::Options::default();
        let st = crate::views::workload_status::workload_document(&rec.store, &wr, grace_end, &opts).expect("status");
        assert_eq!(st["kept"][0]["cluster"], "m1", "{st}");
        assert!(crate::views::workload_status::to_text(&st).contains("kept: evicted from m1"), "{st}");
        // One replica Ready elsewhere: it runs there, the old copy goes.
        let r = rec
            .reconcile(&world(true, (2, 1)), out, crate::publish::Trigger::Timer, grace_end + 700_000)
            .expect("pass");
        assert_eq!(r.stability.events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["purge"]);
        assert_eq!(r.stability.kept_past_grace, 0);
        assert!(!web("m1"));
    }

    /// Issue 46, `[ha]` invariant 1 (simulation seeds 181 and 196): a new leader keeps the copy
    /// an eviction of the old leader keeps. The old leader evicts web from the lost m1
    /// (`purgeMode: Gracefully`, the default) and keeps m1's file while the replacement's pods
    /// are not Ready; its summary lists the task, the standby (a store of its own) adopts it at
    /// the takeover, and its passes keep m1's file until the replacement is Ready, then purge
    /// it by the same rule. Before the fix the summary listed no task, and the new leader's
    /// first pass removed m1's file — the workload's last copy that ran — at once.
    #[test]
    fn a_takeover_keeps_the_copy_an_eviction_of_the_old_leader_keeps() {
        use crate::publish::Trigger::Timer;
        let f = Fixture::new(REPO, &[cluster("m1", 40), cluster("m2", 20), cluster("m3", 20)]);
        let out = &f.out;
        let web = |c: &str| out.join(c).join("shop/apps_deployment_web.yaml").exists();
        // m1 lost; the others' pods of the workload `(pods, ready)`.
        let world = |lost: bool, others: (u32, u32)| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                match s.name.as_str() {
                    "m1" if lost => s.health = Health::Unreachable { reason: "connection refused".into() },
                    "m1" => {}
                    _ => s.pods = Some(pods(others.0, others.1)),
                }
            }
            inputs
        };
        let t0 = 1_700_000_000_000;
        {
            let old = f.reconciler(Settings::builtin());
            old.reconcile(&world(false, (0, 0)), out, Timer, t0).expect("pass");
            old.reconcile(&world(true, (0, 0)), out, Timer, t0 + 10_000).expect("pass");
            let r = old.reconcile(&world(true, (2, 0)), out, Timer, t0 + 310_000).expect("pass");
            assert_eq!(r.stability.events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["eviction"]);
            assert!(web("m1") && (web("m2") || web("m3")), "the replacement is published, the old copy kept");
        }
        let standby = crate::store::Store::open(&f.state.with_file_name("standby")).expect("store");
        let adopted = crate::reconcile::adopt::take_over(&standby, out, t0 + 315_000).expect("takeover");
        assert_eq!((adopted.published, adopted.tasks), (1, 1), "{adopted:?}");
        let state = standby.stability().expect("state");
        let kept: Vec<&str> = state.workloads.values().flat_map(|w| w.kept()).collect();
        assert_eq!(kept, ["m1"], "the old leader's task, adopted");
        let new = crate::reconcile::Reconciler::new(standby, Settings::builtin());
        for at in [t0 + 320_000, t0 + 330_000] {
            let r = new.reconcile(&world(true, (2, 0)), out, Timer, at).expect("pass");
            assert!(web("m1"), "{at}: the new leader removed the copy the old one kept");
            assert!(r.stability.events.is_empty() && r.files_removed == 0, "{at}: {r:?}");
        }
        // The replacement Ready: the new leader purges the copy, as the old one would have.
        let r = new.reconcile(&world(true, (2, 2)), out, Timer, t0 + 340_000).expect("pass");
        assert_eq!(r.stability.events.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["purge"]);
        assert!(!web("m1"));
    }

    /// A Deployment duplicated to m1 and m2; application failover after 60 s of pods not
    /// Ready, its old copies kept (`purgeMode: Never`).
    const NEVER: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  propagateDeps: true
  placement:
    clusterAffinity: {clusterNames: [m1, m2]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
  failover:
    application:
      decisionConditions: {tolerationSeconds: 60}
      purgeMode: Never
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// A workload evicted from its last member keeps its previous placement (nothing is left to
    /// schedule it on), and the files its earlier evictions keep stay with it: seen by the
    /// simulation (`fedsched dst --seed 2 --keep none`, w037: the store kept the `Never` tasks
    /// of three evictions, the disk had one of their files). Before the fix the unschedulable
    /// decision kept only its placement's files and the publish removed m1's.
    #[test]
    fn a_workload_evicted_from_its_last_member_keeps_the_files_of_its_earlier_evictions() {
        let f = Fixture::new(NEVER, &[cluster("m1", 40), cluster("m2", 40)]);
        let out = &f.out;
        let rec = f.reconciler(Settings::builtin());
        let web = |c: &str| out.join(c).join("shop/apps_deployment_web.yaml").exists();
        // The members where the workload's pods are not Ready.
        let world = |not_ready: &[&str]| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                let ready = if not_ready.contains(&s.name.as_str()) { 0 } else { 2 };
                s.pods = Some(pods(2, ready));
            }
            inputs
        };
        let evictions = |r: &crate::reconcile::ReconcileReport| -> Vec<String> {
            r.stability
                .events
                .iter()
                .filter(|e| matches!(e.kind, crate::schedule::stability::EventKind::Eviction(_)))
                .map(|e| e.cluster.clone())
                .collect()
        };
        let t0 = 1_700_000_000_000;
        rec.reconcile(&world(&["m1"]), out, crate::publish::Trigger::Timer, t0).expect("pass");
        assert!(web("m1") && web("m2"));
        rec.reconcile(&world(&["m1"]), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        let r = rec.reconcile(&world(&["m1"]), out, crate::publish::Trigger::Timer, t0 + 80_000).expect("pass");
        assert_eq!(evictions(&r), ["m1"]);
        assert!(web("m1") && web("m2"), "m1's copy kept (purgeMode Never)");
        rec.reconcile(&world(&["m1", "m2"]), out, crate::publish::Trigger::Timer, t0 + 90_000).expect("pass");
        let r = rec.reconcile(&world(&["m1", "m2"]), out, crate::publish::Trigger::Timer, t0 + 160_000).expect("pass");
        assert_eq!(evictions(&r), ["m2"]);
        let state = rec.store.stability().expect("state");
        let kept: Vec<&str> = state.workloads.values().flat_map(|w| w.kept()).collect();
        assert_eq!(kept, ["m1", "m2"]);
        assert!(web("m1") && web("m2"), "the files of both evictions stay");
        let r = rec.reconcile(&world(&["m1", "m2"]), out, crate::publish::Trigger::Timer, t0 + 170_000).expect("pass");
        assert_eq!(r.files_removed, 0);
        assert!(web("m1") && web("m2"));
    }
}

#[cfg(test)]
mod handover_tests {
    use std::collections::BTreeMap;

    use super::fixture::{Fixture, cluster};
    use super::grace_tests::{pods, replicas};
    use crate::model::snapshot::Health;
    use crate::reconcile::{Inputs, Settings};

    /// A Deployment of 6 replicas on a primary member, a backup for failover.
    const REPO: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    clusterAffinities:
    - {affinityName: primary, clusterNames: [m1]}
    - {affinityName: backup, clusterNames: [m2]}
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// Issue 46, invariant 3 (dst seed 6, t=930): a decision that places the workload again on
    /// a member a hand-over keeps its previous files on (the member it moved back from) keeps
    /// that file as it is. Here the move back to m1 hands over from m2 (m1's pods not Ready
    /// yet), then a policy edit makes m2 the primary: m2's file stays (the hand-over's) and the
    /// placement says so. Before the fix the decision's hold of m2 found no file in the previous
    /// placement (m1's) and kept none: the placement recorded no file on m2 (in seed 6 the
    /// publish removed the file there while the hand-over task still kept it).
    #[test]
    fn a_decision_back_onto_a_member_a_handover_keeps_keeps_its_file() {
        let f = Fixture::new(REPO, &[cluster("m1", 20), cluster("m2", 20), cluster("m3", 20)]);
        let out = &f.out;
        let rec = f.reconciler(Settings::builtin());
        let world = |lost: bool, m1: (u32, u32), m2: (u32, u32)| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                match s.name.as_str() {
                    "m1" if lost => s.health = Health::Unreachable { reason: "connection refused".into() },
                    "m1" => s.pods = Some(pods(m1.0, m1.1)),
                    "m2" => s.pods = Some(pods(m2.0, m2.1)),
                    _ => {}
                }
            }
            inputs
        };
        let at = |out: &std::path::Path| (replicas(out, "m1"), replicas(out, "m2"));
        let t0 = 1_700_000_000_000;
        rec.reconcile(&world(false, (6, 6), (0, 0)), out, crate::publish::Trigger::Timer, t0).expect("pass");
        rec.reconcile(&world(true, (0, 0), (0, 0)), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        rec.reconcile(&world(true, (0, 0), (0, 0)), out, crate::publish::Trigger::Timer, t0 + 310_000).expect("pass");
        rec.reconcile(&world(true, (0, 0), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 320_000).expect("pass");
        rec.reconcile(&world(false, (0, 0), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 400_000).expect("pass");
        rec.reconcile(&world(false, (0, 0), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 700_000).expect("pass");
        assert_eq!(at(out), (Some(6), Some(6)), "moved back to m1, m2 handing over");
        // m2 made the primary while its hand-over holds.
        let swapped = REPO.replace(
            "[m1]}\n    - {affinityName: backup, clusterNames: [m2]",
            "[m2]}\n    - {affinityName: backup, clusterNames: [m1]",
        );
        assert_ne!(swapped, REPO);
        f.write("apps.yaml", &swapped);
        rec.reconcile(&world(false, (6, 0), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 710_000).expect("pass");
        assert_eq!(at(out).1, Some(6), "m2's file went although the decision places the workload there");
        let placed = rec.store.placements().expect("placements")[0].clone();
        assert!(placed.files.contains_key("m2"), "{placed:?}");
    }

    /// Issue 46, invariant 1 (simulation seed 153): a move-back is one only when its decision
    /// places replicas on the member. The workload failed over from its primary m1 to the backup
    /// m2, whose pods never get Ready: m1's copy is kept past the grace period (its replicas the
    /// only Ready ones). m1 is Ready again but has no room for the workload any more: the
    /// move-back's fresh decision places nothing there (the backup term). m1 keeps its copy, its
    /// eviction task and its candidacy, and no "moved back" note is written; before the fix the
    /// move-back ended the task and the publish removed m1's copy, the last Ready replicas.
    #[test]
    fn a_move_back_whose_decision_places_nothing_on_the_member_keeps_its_copy_and_notes_nothing() {
        let f = Fixture::new(REPO, &[cluster("m1", 20), cluster("m2", 20), cluster("m3", 20)]);
        let out = &f.out;
        let rec = f.reconciler(Settings::builtin());
        let world = |lost: bool, m1: (u32, u32), m2: (u32, u32)| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                match s.name.as_str() {
                    "m1" if lost => s.health = Health::Unreachable { reason: "connection refused".into() },
                    "m1" => s.pods = Some(pods(m1.0, m1.1)),
                    "m2" => s.pods = Some(pods(m2.0, m2.1)),
                    _ => {}
                }
            }
            inputs
        };
        let at = |out: &std::path::Path| (replicas(out, "m1"), replicas(out, "m2"));
        let t0 = 1_700_000_000_000;
        let pass = |w: Inputs, t: u64| rec.reconcile(&w, out, crate::publish::Trigger::Timer, t0 + t).expect("pass");
        pass(world(false, (6, 6), (0, 0)), 0);
        pass(world(true, (0, 0), (0, 0)), 10_000);
        pass(world(true, (0, 0), (0, 0)), 310_000);
        assert_eq!(at(out), (Some(6), Some(6)), "failover keeps the primary until the backup is Ready");
        // m1 is back (its 6 replicas Ready), the backup's pods never get Ready.
        pass(world(false, (6, 6), (6, 0)), 400_000);
        // No room on m1 any more: the move-back, due after stable_for, places nothing there.
        f.clusters(&[cluster("m1", 3), cluster("m2", 20), cluster("m3", 20)]);
        let r = pass(world(false, (6, 6), (6, 0)), 710_000);
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(at(out), (Some(6), Some(6)), "m1's kept copy (the only Ready replicas) went: {kinds:?}");
        assert!(!kinds.contains(&("move-back", "m1")), "a move-back noted that placed nothing: {kinds:?}");
        let placed = rec.store.placements().expect("placements")[0].clone();
        assert_eq!(placed.targets, BTreeMap::from([("m2".to_string(), Some(6))]));
        // Still kept on the next passes (past the grace period: nothing Ready elsewhere).
        let r = pass(world(false, (6, 6), (6, 0)), 1_100_000);
        assert_eq!(at(out), (Some(6), Some(6)), "{:?}", r.stability.events);
        // The backup Ready at last: m1's copy is purged, never noted as a move-back.
        let r = pass(world(false, (6, 6), (6, 6)), 1_110_000);
        assert_eq!(at(out), (None, Some(6)), "{:?} {:?}", r.stability, rec.store.stability());
        let key = placed.workload.clone();
        let notes: Vec<String> = rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect();
        assert!(notes.iter().all(|n| !n.contains("moved back")), "{notes:#?}");
        assert_eq!(notes.iter().filter(|n| n.contains("purged the files left on m1")).count(), 1, "{notes:#?}");
    }

    /// Issue 46, bug 1: a move-back is make before break. The workload failed over from its
    /// primary to the backup; when the primary has been Ready for `stable_for` it moves back,
    /// and the backup's files stay as they are until the primary's replicas are Ready (not in
    /// the same publish: the workload had 0 Ready pods while the primary's started). The
    /// history, explain and status say what is kept and why; the release is a note too.
    #[test]
    fn a_move_back_keeps_the_backup_until_the_primary_is_ready() {
        let f = Fixture::new(REPO, &[cluster("m1", 20), cluster("m2", 20), cluster("m3", 20)]);
        let (repo, out) = (&f.repo, &f.out);
        let rec = f.reconciler(Settings::builtin());
        // m1 lost or not; the workload's pods `(pods, ready)` on m1 and m2.
        let world = |lost: bool, m1: (u32, u32), m2: (u32, u32)| -> Inputs {
            // With the repository's files, as a daemon loads it: the passes store replay inputs.
            let files: Vec<(std::path::PathBuf, std::sync::Arc<str>)> = ["apps.yaml", "clusters.yaml"]
                .map(|f| (f.into(), std::fs::read_to_string(repo.join(f)).expect("read").into()))
                .to_vec();
            let mut inputs =
                crate::reconcile::load_inputs(crate::reconcile::Repository::Files(&files), &Settings::builtin())
                    .expect("inputs");
            for s in inputs.snapshots.iter_mut() {
                match s.name.as_str() {
                    "m1" if lost => s.health = Health::Unreachable { reason: "connection refused".into() },
                    "m1" => s.pods = Some(pods(m1.0, m1.1)),
                    "m2" => s.pods = Some(pods(m2.0, m2.1)),
                    _ => {}
                }
            }
            inputs
        };
        let at = |out: &std::path::Path| (replicas(out, "m1"), replicas(out, "m2"));
        let t0 = 1_700_000_000_000;
        rec.reconcile(&world(false, (6, 6), (0, 0)), out, crate::publish::Trigger::Timer, t0).expect("pass");
        assert_eq!(at(out), (Some(6), None));
        // Failover: evicted after the toleration, purged once the backup runs.
        rec.reconcile(&world(true, (0, 0), (0, 0)), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        rec.reconcile(&world(true, (0, 0), (0, 0)), out, crate::publish::Trigger::Timer, t0 + 310_000).expect("pass");
        assert_eq!(at(out), (Some(6), Some(6)), "failover keeps the primary until the backup is Ready");
        rec.reconcile(&world(true, (0, 0), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 320_000).expect("pass");
        assert_eq!(at(out), (None, Some(6)));
        // The primary is back: after stable_for (5 min) the workload moves back, and the backup
        // keeps its 6 replicas while the primary's pods start.
        rec.reconcile(&world(false, (0, 0), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 400_000).expect("pass");
        let r = rec
            .reconcile(&world(false, (0, 0), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 700_000)
            .expect("pass");
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(kinds, [("move-back", "m1"), ("handover", "m2")]);
        assert_eq!(at(out), (Some(6), Some(6)), "the backup went in the publish that added the primary");
        for (dt, ready) in [(10_000, 0), (20_000, 5)] {
            let r = rec
                .reconcile(&world(false, (6, ready), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 700_000 + dt)
                .expect("pass");
            assert!(r.stability.events.is_empty(), "{dt}: {:?}", r.stability.events);
            assert_eq!(at(out), (Some(6), Some(6)), "{dt}: released before the primary is Ready");
        }
        // explain and status say what is kept, and why.
        let wr: crate::views::explain::WorkloadRef = "Deployment/shop/web".parse().expect("ref");
        let opts = crate::views::workload_status::Options::default();
        let st = crate::views::workload_status::workload_document(&rec.store, &wr, t0 + 730_000, &opts).expect("st");
        let text = crate::views::workload_status::to_text(&st);
        assert!(
            text.contains("kept: previous files kept on m2 for the move-back (6 replicas")
                && text.contains("until the new placement is Ready"),
            "{text}"
        );
        let inputs = world(false, (6, 5), (6, 6));
        let doc = crate::views::explain::explain(&inputs, &rec.store, &rec.settings().profiles, &wr, t0 + 730_000)
            .expect("explain");
        assert_eq!(doc["failover"]["evictions"][0]["kind"], "handover", "{doc}");
        // Ready on the primary: the backup's files go.
        let r = rec
            .reconcile(&world(false, (6, 6), (6, 6)), out, crate::publish::Trigger::Timer, t0 + 740_000)
            .expect("pass");
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(kinds, [("purge", "m2")]);
        assert_eq!(at(out), (Some(6), None));
        let r = rec
            .reconcile(&world(false, (6, 6), (0, 0)), out, crate::publish::Trigger::Timer, t0 + 750_000)
            .expect("pass");
        assert!(r.stability.events.is_empty() && r.stability.pending_failover == 0, "{:?}", r.stability);
        let key = rec.store.placements().expect("placements")[0].workload.clone();
        let notes: Vec<String> = rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect();
        let count = |needle: &str| notes.iter().filter(|n| n.contains(needle)).count();
        assert_eq!(count("moved back to m1"), 1, "{notes:#?}");
        assert_eq!(count("kept the previous files on m2 (6 replicas) until the new placement is Ready (move-back"), 1);
        assert_eq!(
            count("released the previous files kept on m2 for the move-back (ReplacementReady"),
            1,
            "{notes:#?}"
        );
        // The move-back's and the release's records replay identical (the failover's before them
        // cannot: this test sets m1's health on an offline snapshot, which no poll stored).
        let history: Vec<_> =
            rec.store.history(&key).expect("history").into_iter().filter(|h| h.at_ms >= t0 + 700_000).collect();
        let doc = crate::views::replay::document(&rec.store, &history, &Settings::builtin).expect("replay");
        assert!(history.len() >= 2 && doc["identical"] == history.len() && doc["different"] == 0, "{doc:#}");
    }

    /// One replica by static weights, m1 weighing 2 and m2 1 (m1 has it), failing over.
    const STATIC: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    clusterAffinity: {clusterNames: [m1, m2]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [m1]}, weight: 2}
        - {targetCluster: {clusterNames: [m2]}, weight: 1}
  failover: {cluster: {purgeMode: Gracefully}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// Issue 46, invariant 1 (simulation seed 5, t=630, `move_back = false`): a member that
    /// takes part in a workload's decisions again after its failover — here m1, Ready for
    /// `stable_for`, no move-back — gets its replica back by the static weights, and the
    /// member the replica ran on (m2) keeps its file until m1's replica is Ready: make before
    /// break, as a move-back. Before the fix m2's only Ready replica was removed in the publish
    /// that added m1's (no stability event: a plain decision), and the workload ran nowhere.
    #[test]
    fn a_member_that_rejoins_a_workloads_decisions_takes_its_replicas_make_before_break() {
        let f = Fixture::new(STATIC, &[cluster("m1", 20), cluster("m2", 20)]);
        let out = &f.out;
        let mut settings = Settings::builtin();
        settings.stability.move_back = false;
        let rec = f.reconciler(settings);
        let world = |lost: bool, m1: (u32, u32), m2: (u32, u32)| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                match s.name.as_str() {
                    "m1" if lost => s.health = Health::Unreachable { reason: "connection refused".into() },
                    "m1" => s.pods = Some(pods(m1.0, m1.1)),
                    "m2" => s.pods = Some(pods(m2.0, m2.1)),
                    _ => {}
                }
            }
            inputs
        };
        let at = |out: &std::path::Path| (replicas(out, "m1"), replicas(out, "m2"));
        let pass = |w: Inputs, t: u64| rec.reconcile(&w, out, crate::publish::Trigger::Timer, t).expect("pass");
        let t0 = 1_700_000_000_000;
        pass(world(false, (1, 1), (0, 0)), t0);
        assert_eq!(at(out), (Some(1), None), "weight 2 of 3: m1 has the replica");
        // Failover to m2, m1's file purged once m2's replica is Ready.
        pass(world(true, (0, 0), (0, 0)), t0 + 10_000);
        pass(world(true, (0, 0), (0, 0)), t0 + 310_000);
        pass(world(true, (0, 0), (1, 1)), t0 + 320_000);
        assert_eq!(at(out), (None, Some(1)));
        // m1 Ready again; after stable_for it takes part in the decision again.
        pass(world(false, (0, 0), (1, 1)), t0 + 400_000);
        assert_eq!(at(out), (None, Some(1)), "left out until stable_for");
        let r = pass(world(false, (0, 0), (1, 1)), t0 + 700_000);
        assert_eq!(at(out), (Some(1), Some(1)), "m2's Ready replica went in the publish that added m1's");
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(kinds, [("handover", "m2")]);
        pass(world(false, (1, 0), (1, 1)), t0 + 710_000);
        assert_eq!(at(out), (Some(1), Some(1)), "released before m1's replica is Ready");
        let r = pass(world(false, (1, 1), (1, 1)), t0 + 720_000);
        let kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        assert_eq!(kinds, [("purge", "m2")]);
        assert_eq!(at(out), (Some(1), None));
    }

    /// A Divided workload of 6 replicas on a primary pair of members, dynamic weights, a backup.
    const PAIR: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    clusterAffinities:
    - {affinityName: primary, clusterNames: [m1, m2]}
    - {affinityName: backup, clusterNames: [m3]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
  failover: {cluster: {purgeMode: Gracefully}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// Issue 46, invariant 1 (simulation seed 76): a failover's decision that leaves a healthy
    /// member hands over from it. web runs on m1 and m2 (the primary term); m1 is lost and
    /// evicted, and m2 alone cannot hold 6 replicas, so the decision made without m1 takes the
    /// backup term: all of web on m3. m2's replica (Ready) stays, its file as it was, until
    /// m3's replicas are Ready (a hand-over, noted `failover`), as m1's evicted copy does.
    /// Before the fix the eviction kept only m1's files: the publish that added m3's replicas
    /// removed m2's, the workload's only Ready one.
    #[test]
    fn a_failovers_decision_hands_over_from_the_healthy_member_it_leaves() {
        let f = Fixture::new(PAIR, &[cluster("m1", 20), cluster("m2", 3), cluster("m3", 20)]);
        let out = &f.out;
        let rec = f.reconciler(Settings::builtin());
        let world = |lost: bool, m2: (u32, u32), m3: (u32, u32)| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                match s.name.as_str() {
                    "m1" if lost => s.health = Health::Unreachable { reason: "connection refused".into() },
                    "m2" => s.pods = Some(pods(m2.0, m2.1)),
                    "m3" => s.pods = Some(pods(m3.0, m3.1)),
                    _ => {}
                }
            }
            inputs
        };
        let at = |out: &std::path::Path| (replicas(out, "m1"), replicas(out, "m2"), replicas(out, "m3"));
        let t0 = 1_700_000_000_000;
        let pass = |w: Inputs, t: u64| rec.reconcile(&w, out, crate::publish::Trigger::Timer, t0 + t).expect("pass");
        let kinds = |r: &crate::reconcile::ReconcileReport| -> Vec<(String, String)> {
            r.stability.events.iter().map(|e| (e.kind.as_str().to_string(), e.cluster.clone())).collect()
        };
        pass(world(false, (1, 1), (0, 0)), 0);
        assert_eq!(at(out), (Some(5), Some(1), None), "the primary pair, by available replicas");
        pass(world(true, (1, 1), (0, 0)), 10_000);
        let r = pass(world(true, (1, 1), (0, 0)), 310_000);
        assert_eq!(at(out), (Some(5), Some(1), Some(6)), "m2's Ready replica went in the publish that added m3's");
        let e = |k: &str, c: &str| (k.to_string(), c.to_string());
        assert_eq!(kinds(&r), [e("eviction", "m1"), e("handover", "m2")]);
        let key = rec.store.placements().expect("placements")[0].workload.clone();
        let notes: Vec<String> = rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect();
        assert!(
            notes.iter().any(|n| n.starts_with("kept the previous files on m2") && n.contains("(failover")),
            "{notes:#?}"
        );
        pass(world(true, (1, 1), (6, 3)), 320_000);
        assert_eq!(at(out), (Some(5), Some(1), Some(6)), "released before m3's replicas are Ready");
        let r = pass(world(true, (1, 1), (6, 6)), 330_000);
        assert_eq!(kinds(&r), [e("purge", "m1"), e("purge", "m2")]);
        assert_eq!(at(out), (None, None, Some(6)));
    }

    /// A Divided workload of 6 replicas on three members, dynamic weights.
    const DIVIDED: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// Issue 46, bug 1: a WorkloadRebalancer is make before break. 3 + 3 on m2 and m3,
    /// rebalanced to 2 + 2 + 2: m2 and m3 keep their 3 until m1's 2 are Ready (they were
    /// scaled down in the publish that added m1's: 4 of 6 Ready).
    #[test]
    fn a_rebalance_shrinks_the_members_it_leaves_only_once_the_new_ones_are_ready() {
        // m1 full at first: the workload goes to m2 and m3.
        let clusters = |m1: u32| [cluster("m1", m1), cluster("m2", 20), cluster("m3", 20)];
        let f = Fixture::new(DIVIDED, &clusters(0));
        let out = &f.out;
        let rec = f.reconciler(Settings::builtin());
        let world = |m1: (u32, u32)| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                s.pods = Some(if s.name == "m1" { pods(m1.0, m1.1) } else { pods(3, 3) });
            }
            inputs
        };
        let at = |out: &std::path::Path| -> Vec<Option<i64>> { ["m1", "m2", "m3"].map(|c| replicas(out, c)).to_vec() };
        let t0 = 1_700_000_000_000;
        rec.reconcile(&world((0, 0)), out, crate::publish::Trigger::Timer, t0).expect("pass");
        assert_eq!(at(out), [None, Some(3), Some(3)]);
        f.clusters(&clusters(20));
        rec.reconcile(&world((0, 0)), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        assert_eq!(at(out), [None, Some(3), Some(3)], "a steady Divided workload stays");
        f.write(
            "rebalance.yaml",
            "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {name: r, generation: 1}\n\
             spec:\n  workloads:\n  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}\n",
        );
        let r = rec.reconcile(&world((0, 0)), out, crate::publish::Trigger::Timer, t0 + 20_000).expect("pass");
        let mut kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        kinds.sort();
        assert_eq!(kinds, [("handover", "m2"), ("handover", "m3"), ("rebalance", "")]);
        assert_eq!(at(out), [Some(2), Some(3), Some(3)], "m2 and m3 shrank before m1 ran");
        let placed = rec.store.placements().expect("placements")[0].targets.clone();
        let placed: BTreeMap<String, i32> = placed.into_iter().map(|(c, r)| (c, r.unwrap_or(0))).collect();
        assert_eq!(placed, BTreeMap::from([("m1".into(), 2), ("m2".into(), 2), ("m3".into(), 2)]));
        for (dt, ready) in [(10_000, 0), (20_000, 1)] {
            rec.reconcile(&world((2, ready)), out, crate::publish::Trigger::Timer, t0 + 20_000 + dt).expect("pass");
            assert_eq!(at(out), [Some(2), Some(3), Some(3)], "{dt}");
        }
        let r = rec.reconcile(&world((2, 2)), out, crate::publish::Trigger::Timer, t0 + 50_000).expect("pass");
        assert_eq!(
            r.stability.events.iter().filter(|e| e.kind == crate::schedule::stability::EventKind::Purge).count(),
            2,
            "{:?}",
            r.stability.events
        );
        assert_eq!(at(out), [Some(2), Some(2), Some(2)]);
    }

    /// Issue 46, invariant 1, for a plain decision (no failover, no move decided afresh): a
    /// scale-down hands over only when the members it keeps would run none of the workload's
    /// Ready replicas (`handing_over`, `HandOver::Moved`). 6 replicas, 1 on m2 and 5 on m3,
    /// scaled to 1: the decision keeps m3 alone. With m3's replicas Ready it is published at
    /// once (m2's file goes in that publish, no hand-over); with m2's replica the only Ready
    /// one, m2 keeps its file until m3's replica is Ready (before the rule, m2's file went in
    /// the publish that shrank m3: nothing Ready, simulation seed 106).
    #[test]
    fn a_scale_down_waits_for_a_ready_replica_only_when_it_leaves_the_last_ones() {
        for m3_ready in [true, false] {
            let f = Fixture::new(DIVIDED, &[cluster("m1", 0), cluster("m2", 2), cluster("m3", 20)]);
            let out = &f.out;
            let rec = f.reconciler(Settings::builtin());
            let world = |m2: (u32, u32), m3: (u32, u32)| -> Inputs {
                let mut inputs = f.inputs();
                for s in inputs.snapshots.iter_mut() {
                    match s.name.as_str() {
                        "m2" => s.pods = Some(pods(m2.0, m2.1)),
                        "m3" => s.pods = Some(pods(m3.0, m3.1)),
                        _ => {}
                    }
                }
                inputs
            };
            let at =
                |out: &std::path::Path| -> Vec<Option<i64>> { ["m1", "m2", "m3"].map(|c| replicas(out, c)).to_vec() };
            let t0 = 1_700_000_000_000;
            let pass =
                |w: Inputs, t: u64| rec.reconcile(&w, out, crate::publish::Trigger::Timer, t0 + t).expect("pass");
            let kinds = |r: &crate::reconcile::ReconcileReport| -> Vec<(String, String)> {
                r.stability.events.iter().map(|e| (e.kind.as_str().to_string(), e.cluster.clone())).collect()
            };
            pass(world((0, 0), (0, 0)), 0);
            assert_eq!(at(out), [None, Some(1), Some(5)], "by available replicas");
            let m3 = if m3_ready { 5 } else { 0 };
            pass(world((1, 1), (5, m3)), 10_000);
            f.write("apps.yaml", &DIVIDED.replace("replicas: 6", "replicas: 1"));
            let r = pass(world((1, 1), (5, m3)), 20_000);
            let placed = rec.store.placements().expect("placements")[0].targets.clone();
            assert_eq!(placed, BTreeMap::from([("m3".to_string(), Some(1))]), "{m3_ready}");
            if m3_ready {
                assert_eq!(kinds(&r), [], "m3 keeps Ready replicas: no hand-over");
                assert_eq!(at(out), [None, None, Some(1)], "published at once");
                continue;
            }
            let e = |k: &str, c: &str| (k.to_string(), c.to_string());
            assert_eq!(at(out), [None, Some(1), Some(1)], "m2's Ready replica stays until m3's is Ready");
            assert_eq!(kinds(&r), [e("handover", "m2")]);
            let key = rec.store.placements().expect("placements")[0].workload.clone();
            let notes: Vec<String> =
                rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect();
            assert!(
                notes
                    .iter()
                    .any(|n| n.starts_with("kept the previous files on m2 (1 replicas)") && n.contains("(move;")),
                "{notes:#?}"
            );
            pass(world((1, 1), (1, 0)), 30_000);
            assert_eq!(at(out), [None, Some(1), Some(1)], "released before m3's replica is Ready");
            let r = pass(world((1, 1), (1, 1)), 40_000);
            assert_eq!(kinds(&r), [e("purge", "m2")]);
            assert_eq!(at(out), [None, None, Some(1)]);
        }
    }

    /// Issue 46, invariant 4 (simulation seed 106 at t=1260): a hand-over task keeps an older
    /// file on a member that a later decision placed more replicas on; its end writes the
    /// placement's file there. Ended while the member is unreachable, that put new replicas on
    /// it (Karmada's `NoSchedule` taint: none from the moment it is seen so). Here a policy edit
    /// moves the workload from m1 to m2 (m1 hands over, keeping its 6-replica file), the edit
    /// back with a scale to 8 places 8 on m1 while the task keeps 6 there, m1 is lost, and the
    /// grace period passes: the release is held (m1 keeps 6, the task stays, no history note)
    /// until m1 is Ready again, then m1 gets its 8. Before the fix m1 went from 6 to 8 replicas
    /// in the pass that saw it unreachable.
    #[test]
    fn a_handover_is_not_released_onto_a_member_that_is_not_ready() {
        use crate::model::snapshot::ClusterTaint;
        use crate::policy::types::TaintEffect;
        let f = Fixture::new(REPO, &[cluster("m1", 20), cluster("m2", 20), cluster("m3", 20)]);
        let out = &f.out;
        let mut settings = Settings::builtin();
        settings.stability.grace_period_ms = 60_000;
        let rec = f.reconciler(settings);
        let world = |lost: bool, m1: (u32, u32), m2: (u32, u32)| -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut() {
                match s.name.as_str() {
                    "m1" => {
                        // A lost member's view: its last pods, Unreachable and tainted as a
                        // failed poll leaves it (members::health_taint).
                        s.pods = Some(pods(m1.0, m1.1));
                        if lost {
                            s.health = Health::Unreachable { reason: "connection refused".into() };
                            s.taints.push(ClusterTaint {
                                key: crate::schedule::stability::TAINT_UNREACHABLE.into(),
                                value: None,
                                effect: TaintEffect::NoSchedule,
                            });
                        }
                    }
                    "m2" => s.pods = Some(pods(m2.0, m2.1)),
                    _ => {}
                }
            }
            inputs
        };
        let at = |out: &std::path::Path| (replicas(out, "m1"), replicas(out, "m2"));
        let t0 = 1_700_000_000_000;
        let pass = |w: Inputs, t: u64| rec.reconcile(&w, out, crate::publish::Trigger::Timer, t0 + t).expect("pass");
        let kinds = |r: &crate::reconcile::ReconcileReport| -> Vec<(String, String)> {
            r.stability.events.iter().map(|e| (e.kind.as_str().to_string(), e.cluster.clone())).collect()
        };
        pass(world(false, (6, 6), (0, 0)), 0);
        assert_eq!(at(out), (Some(6), None));
        let swap = |text: &str, a: &str, b: &str| {
            let swapped = text.replace(
                &format!("[{a}]}}\n    - {{affinityName: backup, clusterNames: [{b}]"),
                &format!("[{b}]}}\n    - {{affinityName: backup, clusterNames: [{a}]"),
            );
            assert_ne!(swapped, text);
            swapped
        };
        // m2 made the primary: m1's Ready replicas stay until m2's are Ready.
        f.write("apps.yaml", &swap(REPO, "m1", "m2"));
        let r = pass(world(false, (6, 6), (0, 0)), 10_000);
        assert_eq!(kinds(&r), [("handover".to_string(), "m1".to_string())]);
        assert_eq!(at(out), (Some(6), Some(6)));
        // Back to m1, scaled to 8: the placement puts 8 on m1, the task keeps its 6 there.
        f.write("apps.yaml", &REPO.replace("replicas: 6", "replicas: 8"));
        pass(world(false, (6, 6), (6, 0)), 20_000);
        assert_eq!(at(out).0, Some(6), "the hand-over keeps m1's file as it was");
        let placed = rec.store.placements().expect("placements")[0].targets.clone();
        assert_eq!(placed, BTreeMap::from([("m1".to_string(), Some(8))]));
        // m1 lost; the grace period passes while it is unreachable.
        pass(world(true, (6, 6), (0, 0)), 30_000);
        let r = pass(world(true, (6, 6), (0, 0)), 80_000);
        assert_eq!(at(out).0, Some(6), "m1 got new replicas in a pass that saw it unreachable");
        assert!(!kinds(&r).iter().any(|(k, _)| k == "purge"), "{:?}", kinds(&r));
        let state = rec.store.stability().expect("state");
        let tasks: Vec<&str> = state.workloads.values().flat_map(|ws| ws.kept()).collect();
        assert_eq!(tasks, ["m1"], "the task stays while its release is held");
        // Ready again: released, m1 gets the placement's 8.
        let r = pass(world(false, (6, 6), (0, 0)), 90_000);
        assert_eq!(kinds(&r), [("purge".to_string(), "m1".to_string())]);
        assert_eq!(at(out).0, Some(8));
    }
}

#[cfg(test)]
mod guard_tests {
    use super::fixture::{Fixture, cluster};
    use super::grace_tests::replicas;
    use crate::model::snapshot::Health;
    use crate::reconcile::{Inputs, Reconciler, Settings};
    use crate::store::Store;

    /// A Deployment of 6 replicas over three members (cluster failover's purge mode `{purge}`),
    /// and 6 ConfigMaps on m1 alone (their removal holds m1 under the mass-deletion guard).
    fn repo(purge: &str, configmaps: bool) -> String {
        let mut repo = format!(
            r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: web, namespace: shop}}
spec:
  resourceSelectors:
  - {{apiVersion: apps/v1, kind: Deployment, name: web}}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {{dynamicWeight: AvailableReplicas}}
  failover: {{cluster: {{purgeMode: {purge}}}}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: gone, namespace: shop}}
spec:
  resourceSelectors:
  - {{apiVersion: v1, kind: ConfigMap}}
  placement:
    clusterAffinity: {{clusterNames: [m1]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: shop}}
spec:
  replicas: 6
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - {{name: web, image: web:1, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
"#
        );
        if configmaps {
            for i in 0..6 {
                repo += &format!(
                    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: gone-{i}, namespace: shop}}\ndata: {{k: v}}\n"
                );
            }
        }
        repo
    }

    /// Issue 46, invariant 3 (seed 11 of the simulation): a workload evicted gracefully (its
    /// copy kept on the lost m1) whose template is then deleted leaves nothing behind once its
    /// removal is published: no file, no placement, and no eviction task in the stored engine
    /// state for a file that is gone. Before the fix the state the stability stage keeps for a
    /// template-less workload (while its removal could be held) was stored in the pass that
    /// published the removal: a task keeping files on m1 where none was.
    #[test]
    fn a_deleted_workload_leaves_no_task_once_its_removal_is_published() {
        let with_web = repo("Gracefully", false);
        let f = Fixture::new(&with_web, &[cluster("m1", 20), cluster("m2", 20), cluster("m3", 20)]);
        let out = &f.out;
        let world = || -> Inputs {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut().filter(|s| s.name == "m1") {
                s.health = Health::Unreachable { reason: "connection refused".into() };
            }
            inputs
        };
        let web = || ["m1", "m2", "m3"].map(|c| replicas(out, c));
        let t0 = 1_700_000_000_000;
        let mut settings = Settings::builtin();
        settings.publish.guard.allow = true;
        let rec = f.reconciler(settings);
        rec.reconcile(&f.inputs(), out, crate::publish::Trigger::Timer, t0).expect("pass");
        assert_eq!(web(), [Some(2), Some(2), Some(2)]);
        let key = rec.store.placements().expect("placements").into_iter().find(|p| p.workload.name == "web");
        let key = key.expect("web placed").workload;
        rec.reconcile(&world(), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        rec.reconcile(&world(), out, crate::publish::Trigger::Timer, t0 + 310_000).expect("pass");
        assert_eq!(web(), [Some(2), Some(3), Some(3)], "evicted from m1, its copy kept");
        let tasks = |rec: &Reconciler| rec.store.stability().expect("state").workloads.get(&key).map(|w| w.tasks.len());
        assert_eq!(tasks(&rec), Some(1));
        // The template deleted: its removal published everywhere, m1's kept copy with it.
        let without_web = &with_web[..with_web.find("---\napiVersion: apps/v1").expect("the Deployment")];
        f.write("apps.yaml", without_web);
        rec.reconcile(&world(), out, crate::publish::Trigger::Timer, t0 + 320_000).expect("pass");
        assert_eq!(web(), [None, None, None]);
        assert_eq!(rec.store.placement(&key).expect("placement"), None);
        assert_eq!(tasks(&rec), None, "the stored state keeps a task for files that are gone");
    }

    /// Issue 46, invariant 3 under `[ha]` (simulation seed 127): a template deletion the
    /// mass-deletion guard holds keeps the workload's entry in the published summary, as it
    /// keeps its files and its placement, until the removal is published; a new leader adopts
    /// the placement whose files stay. Here web and 5 of the 6 ConfigMaps on m1 are deleted
    /// together: m1 is held, so is web's removal everywhere. Before the fix the summary lost
    /// web's entry in the pass that held its removal, and the adoption dropped the placement.
    #[test]
    fn a_held_deletion_keeps_its_summary_entry_until_it_is_published() {
        let full = repo("Gracefully", true);
        let f = Fixture::new(&full, &[cluster("m1", 20), cluster("m2", 20), cluster("m3", 20)]);
        let out = &f.out;
        let web = || ["m1", "m2", "m3"].map(|c| replicas(out, c));
        let listed = || -> Vec<String> {
            let summary = crate::render::summary::read_published(&out.join(crate::publish::STATE_DIR));
            let summary = summary.expect("the summary reads").expect("a summary");
            summary.placements.iter().map(|p| p.workload.name.to_string()).filter(|n| n == "web").collect()
        };
        let t0 = 1_700_000_000_000;
        let rec = f.reconciler(Settings::builtin());
        let pass = |rec: &Reconciler, t: u64| {
            rec.reconcile(&f.inputs(), out, crate::publish::Trigger::Timer, t0 + t).expect("pass")
        };
        pass(&rec, 0);
        assert_eq!((web(), listed()), ([Some(2), Some(2), Some(2)], vec!["web".to_string()]));
        // web and 5 of the 6 ConfigMaps deleted (one left: the repository still places something).
        let deployment = full.find("---\napiVersion: apps/v1").expect("the Deployment");
        let last = full.find("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone-5").expect("gone-5");
        f.write("apps.yaml", &format!("{}{}", &full[..deployment], &full[last..]));
        for t in [10_000, 20_000] {
            let r = pass(&rec, t);
            assert!(!r.held_clusters.is_empty(), "m1 held");
            assert_eq!(web(), [Some(2), Some(2), Some(2)], "web's removal held whole");
            assert_eq!(listed(), ["web"], "the held removal's entry stays in the summary");
        }
        // A takeover on another store adopts the placement whose files stay.
        let standby = Store::open(&f.state.with_extension("standby")).expect("store");
        crate::reconcile::adopt::adopt_published(&standby, out, 30_000).expect("adopt");
        let adopted = standby.placements().expect("placements");
        assert!(adopted.iter().any(|p| p.workload.name == "web"), "{adopted:?}");
        drop(rec);
        let mut settings = Settings::builtin();
        settings.publish.guard.allow = true;
        let rec = f.reconciler(settings);
        pass(&rec, 30_000);
        assert_eq!((web(), listed()), ([None, None, None], Vec::<String>::new()), "removed, and its entry with it");
    }

    /// Issue 46, invariant 3 (seed 6 of the simulation): a WorkloadRebalancer whose change goes
    /// only to a member the mass-deletion guard holds (m1, whose 6 ConfigMaps are deleted at
    /// the same time) publishes nothing, so records nothing: web's placement stays the published
    /// 3 + 3, its history gets no record, its engine state no hand-over (the members it would
    /// shrink on were never replaced), and the rebalancer's result for it is `Pending`, not
    /// `Successful`. Confirmed, the next pass carries the rebalance out (make before break).
    /// Before the fix the store recorded the held 2 + 2 + 2 with hand-over tasks, and the next
    /// move decided from that placement handed over from a member nothing was published on.
    #[test]
    fn a_rebalance_held_by_the_guard_keeps_the_published_placement_and_state() {
        let clusters = |m1: u32| [cluster("m1", m1), cluster("m2", 20), cluster("m3", 20)];
        let f = Fixture::new(&repo("Gracefully", true), &clusters(0));
        let out = &f.out;
        let web = || ["m1", "m2", "m3"].map(|c| replicas(out, c));
        let inputs = || f.inputs();
        let t0 = 1_700_000_000_000;
        let rec = f.reconciler(Settings::builtin());
        rec.reconcile(&inputs(), out, crate::publish::Trigger::Timer, t0).expect("pass");
        assert_eq!(web(), [None, Some(3), Some(3)]);
        f.clusters(&clusters(20));
        rec.reconcile(&inputs(), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        assert_eq!(web(), [None, Some(3), Some(3)], "a steady Divided workload stays");
        let key = rec.store.placements().expect("placements").into_iter().find(|p| p.workload.name == "web");
        let key = key.expect("web placed").workload;
        let published = rec.store.placement(&key).expect("placement");
        let records = rec.store.history(&key).expect("history").len();
        // Rebalanced as m1's ConfigMaps go: m1 held, and web's change is all on m1.
        f.write("apps.yaml", &repo("Gracefully", false));
        f.write(
            "rebalance.yaml",
            "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {name: r, generation: 1}\n\
             spec:\n  workloads:\n  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}\n",
        );
        let result = |store: &Store| -> Vec<String> {
            let r = store.stability().expect("state").rebalances.get("r").cloned().unwrap_or_default();
            r.workloads.into_iter().map(|(_, result)| result).collect()
        };
        for t in [20_000, 30_000] {
            let r = rec.reconcile(&inputs(), out, crate::publish::Trigger::Timer, t0 + t).expect("pass");
            assert_eq!(r.held_clusters.iter().map(|h| h.cluster.as_str()).collect::<Vec<_>>(), ["m1"], "{t}");
            let moves: Vec<String> = r.held_moves.iter().map(ToString::to_string).collect();
            assert!(moves.iter().any(|m| m.contains("its change on held m1 waits")), "{t}: {moves:?}");
            assert_eq!(web(), [None, Some(3), Some(3)], "{t}");
            assert!(r.stability.events.is_empty(), "{t}: {:?}", r.stability.events);
            assert_eq!(
                rec.store.placement(&key).expect("placement"),
                published,
                "{t}: the store keeps what was published"
            );
            assert_eq!(rec.store.history(&key).expect("history").len(), records, "{t}: recorded while held");
            let ws = rec.store.stability().expect("state").workloads.get(&key).cloned().unwrap_or_default();
            assert!(ws.tasks.is_empty(), "{t}: hand-overs from a placement never replaced: {:?}", ws.tasks);
            assert_eq!(result(&rec.store), ["Pending"], "{t}");
        }
        drop(rec);
        let mut settings = Settings::builtin();
        settings.publish.guard.allow = true;
        let rec = f.reconciler(settings);
        let r = rec.reconcile(&inputs(), out, crate::publish::Trigger::Timer, t0 + 40_000).expect("pass");
        let mut kinds: Vec<(&str, &str)> =
            r.stability.events.iter().map(|e| (e.kind.as_str(), e.cluster.as_str())).collect();
        kinds.sort();
        assert_eq!(kinds, [("handover", "m2"), ("handover", "m3"), ("rebalance", "")]);
        assert_eq!(web(), [Some(2), Some(3), Some(3)], "m2 and m3 keep their 3 until m1 is Ready");
        let placed = rec.store.placement(&key).expect("placement").expect("placed").targets;
        let placed: Vec<(String, Option<i32>)> = placed.into_iter().collect();
        assert_eq!(placed, [("m1".into(), Some(2)), ("m2".into(), Some(2)), ("m3".into(), Some(2))]);
        assert_eq!(result(&rec.store), ["Successful"]);
        // Once per generation: carried out, it does not act again.
        let r = rec.reconcile(&inputs(), out, crate::publish::Trigger::Timer, t0 + 50_000).expect("pass");
        assert!(
            r.stability.events.iter().all(|e| e.kind != crate::schedule::stability::EventKind::Rebalance),
            "{:?}",
            r.stability.events
        );
    }

    /// Issue 46, invariant 3 ("history records only what was published"): m1 is lost as the 6
    /// ConfigMaps it alone holds are deleted, so the mass-deletion guard holds m1. After the
    /// toleration web is evicted from m1, and the eviction is held whole (its additions on m2
    /// and m3 wait for m1). While held nothing of it is recorded: its placement, its history and
    /// its engine state stay what was published (no eviction task for files never moved), the
    /// report says its changes wait, and neither that it was evicted nor (`purgeMode: Directly`)
    /// that m1's files were purged is noted. The pass that publishes the move (after a restart
    /// with the removals confirmed) records the eviction, then its purge. Before 06f0fb3
    /// "evicted 2 replicas from m1" (both modes) and "purged the files left on m1 (Directly"
    /// were recorded while m1 still ran the old copy and m2, m3 nothing new.
    #[test]
    fn an_eviction_held_by_the_guard_is_recorded_only_once_published() {
        for purge in ["Directly", "Gracefully"] {
            let f = Fixture::new(&repo(purge, true), &[cluster("m1", 20), cluster("m2", 20), cluster("m3", 20)]);
            let out = &f.out;
            let world = |lost: bool| -> Inputs {
                let mut inputs = f.inputs();
                for s in inputs.snapshots.iter_mut().filter(|s| lost && s.name == "m1") {
                    s.health = Health::Unreachable { reason: "connection refused".into() };
                }
                inputs
            };
            let web = || ["m1", "m2", "m3"].map(|c| replicas(out, c));
            let t0 = 1_700_000_000_000;
            let rec = f.reconciler(Settings::builtin());
            rec.reconcile(&world(false), out, crate::publish::Trigger::Timer, t0).expect("pass");
            assert_eq!(web(), [Some(2), Some(2), Some(2)], "{purge}");
            // m1 lost as its ConfigMaps are deleted: held.
            f.write("apps.yaml", &repo(purge, false));
            let r = rec.reconcile(&world(true), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
            assert_eq!(r.held_clusters.iter().map(|h| h.cluster.as_str()).collect::<Vec<_>>(), ["m1"], "{purge}");
            let key = rec.store.placements().expect("placements").into_iter().find(|p| p.workload.name == "web");
            let key = key.expect("web placed").workload;
            let published = rec.store.placement(&key).expect("placement");
            let records = rec.store.history(&key).expect("history").len();
            // Past the toleration: evicted, the move held whole, twice.
            for t in [310_000, 320_000] {
                let r = rec.reconcile(&world(true), out, crate::publish::Trigger::Timer, t0 + t).expect("pass");
                assert_eq!(web(), [Some(2), Some(2), Some(2)], "{purge} {t}: the move went out while m1 is held");
                assert!(r.stability.events.is_empty(), "{purge} {t}: {:?}", r.stability.events);
                let moves: Vec<String> = r.held_moves.iter().map(ToString::to_string).collect();
                assert!(moves.iter().any(|m| m.contains("its changes on m2, m3 wait for held m1")), "{moves:?}");
            }
            assert_eq!(
                rec.store.placement(&key).expect("placement"),
                published,
                "{purge}: the store keeps what was published"
            );
            assert_eq!(rec.store.history(&key).expect("history").len(), records, "{purge}: recorded while held");
            let ws = rec.store.stability().expect("state").workloads.get(&key).cloned().unwrap_or_default();
            assert!(
                ws.tasks.is_empty() && ws.unpublished.is_empty(),
                "{purge}: the engine state is the published one: {ws:?}"
            );
            drop(rec);

            // Restarted with the removals confirmed: the move goes out whole, and is recorded,
            // then (Gracefully: once the replacement is Ready) the purge.
            let mut settings = Settings::builtin();
            settings.publish.guard.allow = true;
            let rec = f.reconciler(settings);
            let mut kinds: Vec<&str> = Vec::new();
            for t in [330_000, 340_000] {
                let r = rec.reconcile(&world(true), out, crate::publish::Trigger::Timer, t0 + t).expect("pass");
                kinds.extend(r.stability.events.iter().map(|e| e.kind.as_str()));
            }
            assert_eq!(web(), [None, Some(3), Some(3)], "{purge}");
            assert_eq!(kinds, ["eviction", "purge"], "{purge}");
            let notes = |store: &Store| -> Vec<String> {
                store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect()
            };
            let notes = notes(&rec.store);
            let evicted: Vec<usize> =
                (0..notes.len()).filter(|&i| notes[i].starts_with("evicted 2 replicas from m1")).collect();
            let purged: Vec<usize> =
                (0..notes.len()).filter(|&i| notes[i].starts_with("purged the files left on m1")).collect();
            assert_eq!((evicted.len(), purged.len()), (1, 1), "{purge}: {notes:#?}");
            assert!(evicted[0] < purged[0], "{notes:#?}");
            if purge == "Directly" {
                assert!(notes[purged[0]].contains("(Directly"), "{notes:#?}");
            }
            let state = rec.store.stability().expect("state");
            assert!(state.workloads.get(&key).is_none_or(|w| w.unpublished.is_empty()), "{purge}");
            // Nothing is recorded twice.
            rec.reconcile(&world(true), out, crate::publish::Trigger::Timer, t0 + 350_000).expect("pass");
            let again = rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes);
            assert_eq!(again.filter(|n| n.starts_with("evicted")).count(), 1, "{purge}");
        }
    }
}

#[cfg(test)]
mod purge_note_tests {
    use super::fixture::{Fixture, cluster};
    use crate::model::snapshot::Health;
    use crate::reconcile::Settings;

    /// A Deployment of 6 replicas, `purgeMode: Directly`.
    const REPO: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
  failover: {cluster: {purgeMode: Directly}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: web:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
"#;

    /// Issue 46, invariants 3 and 8 (seed 60 of the simulation): a `Directly` eviction from
    /// the lost m1 whose workload cannot leave it (m2 has no room: it stays on m1, its file
    /// kept) removes nothing, so its history notes the eviction but no "purged … (Directly"
    /// and the report has no purge event; once m2 has room, the workload leaves m1 (the
    /// eviction's task kept it out). Before the fix the purge was noted though the file stayed.
    #[test]
    fn a_directly_eviction_that_removes_nothing_notes_no_purge() {
        let clusters = |m2: u32| [cluster("m1", 20), cluster("m2", m2)];
        let f = Fixture::new(REPO, &clusters(0));
        let out = &f.out;
        let world = || {
            let mut inputs = f.inputs();
            for s in inputs.snapshots.iter_mut().filter(|s| s.name == "m1") {
                s.health = Health::Unreachable { reason: "connection refused".into() };
            }
            inputs
        };
        let on = |c: &str| out.join(c).join("shop/apps_deployment_web.yaml").is_file();
        let t0 = 1_700_000_000_000;
        let rec = f.reconciler(Settings::builtin());
        rec.reconcile(&f.inputs(), out, crate::publish::Trigger::Timer, t0).expect("pass");
        assert!(on("m1") && !on("m2"));
        let key = rec.store.placements().expect("placements")[0].workload.clone();
        rec.reconcile(&world(), out, crate::publish::Trigger::Timer, t0 + 10_000).expect("pass");
        let report = rec.reconcile(&world(), out, crate::publish::Trigger::Timer, t0 + 310_000).expect("pass");
        assert!(on("m1"), "nothing else fits: web stays on m1");
        let notes: Vec<String> = rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect();
        assert!(notes.iter().any(|n| n.starts_with("evicted")), "{notes:?}");
        assert!(!notes.iter().any(|n| n.starts_with("purged")), "nothing was purged: {notes:?}");
        assert!(
            !report.stability.events.iter().any(|e| matches!(e.kind, crate::schedule::stability::EventKind::Purge)),
            "{:?}",
            report.stability.events
        );

        // Room on m2: the workload leaves m1.
        f.clusters(&clusters(20));
        rec.reconcile(&world(), out, crate::publish::Trigger::Timer, t0 + 320_000).expect("pass");
        assert!(!on("m1") && on("m2"));
    }
}
