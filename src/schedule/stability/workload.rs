//! One workload's step: purge the eviction tasks that are done, evict from members lost for
//! their toleration (cluster and application failover), reschedule Unschedulable replicas,
//! move back to recovered members. Each in its own function, in that order: a task created
//! this pass is never purged in the same pass (except `Directly`).

use std::collections::BTreeMap;

use super::health::{ClusterTimeline, TAINT_NOT_READY, TAINT_UNREACHABLE};
use super::{
    Action, ActionKind, AddedTaint, Budget, CapacityMark, Cause, EvictionTask, FailoverRule, Held, Mobility, MovedFrom,
    Pending, Purge, PurgeReason, Reason, StabilitySettings, WorkloadInput, WorkloadStability, secs,
};
use crate::model::ClusterTaint;
use crate::model::nodes::tolerates;
use crate::policy::types::{TaintEffect, Toleration};

/// What every workload's step shares.
pub(super) struct Ctx<'a> {
    pub clusters: &'a BTreeMap<String, ClusterTimeline>,
    /// Per member with any, the `NoExecute` taints ClusterTaintPolicies put on it.
    pub no_execute: &'a BTreeMap<&'a str, &'a [AddedTaint]>,
    pub settings: &'a StabilitySettings,
    pub now_ms: u64,
}

/// How long a workload tolerates the NoExecute taint `key`: the shortest `tolerationSeconds`
/// of its matching tolerations (Karmada's taint manager takes the minimum); `None` (never
/// evicted) when a matching toleration has no seconds; the default when none matches
/// (Karmada's webhook adds one with 300 s to every policy).
pub fn toleration_ms(tolerations: &[Toleration], key: &str, default_ms: u64) -> Option<u64> {
    let taint = ClusterTaint { key: key.to_string(), value: None, effect: TaintEffect::NoExecute };
    taint_toleration_ms(tolerations, &taint, default_ms)
}

/// [`toleration_ms`] of any `NoExecute` taint (its value counts).
pub fn taint_toleration_ms(tolerations: &[Toleration], taint: &ClusterTaint, default_ms: u64) -> Option<u64> {
    let taint = taint.clone();
    let matching: Vec<&Toleration> = tolerations.iter().filter(|t| tolerates(t, &taint)).collect();
    if matching.is_empty() {
        return Some(default_ms);
    }
    if matching.iter().any(|t| t.toleration_seconds.is_none()) {
        return None;
    }
    matching.iter().filter_map(|t| t.toleration_seconds).map(|s| u64::try_from(s).unwrap_or(0) * 1000).min()
}

/// The workload's next state; `true` when a failover of it is pending (an eviction held, or
/// a graceful eviction not purged yet).
pub(super) fn step(
    ctx: &Ctx<'_>,
    old: &WorkloadStability,
    input: &WorkloadInput,
    budget: &mut Budget,
    actions: &mut Vec<Action>,
) -> (WorkloadStability, bool) {
    let mut next = old.clone();
    let mut pending = purge(ctx, &mut next, input, budget, actions);
    pending |= cluster_failover(ctx, &mut next, input, budget, actions);
    pending |= application_failover(ctx, &mut next, input, budget, actions);
    unschedulable(ctx, &mut next, input, budget, actions);
    move_back(ctx, &mut next, input, budget, actions);
    (next, pending)
}

fn action(input: &WorkloadInput, cluster: &str, kind: ActionKind, cause: Cause) -> Action {
    Action { workload: Some(input.key.clone()), cluster: cluster.to_string(), kind, cause }
}

/// Purges the tasks that are done. A task is done when the workload left its cluster and
/// runs elsewhere, and either its replicas there are all Ready or the grace period passed;
/// a task of a member that left the fleet is dropped. `Never` tasks stay.
fn purge(
    ctx: &Ctx<'_>,
    next: &mut WorkloadStability,
    input: &WorkloadInput,
    budget: &mut Budget,
    actions: &mut Vec<Action>,
) -> bool {
    let now = ctx.now_ms;
    let mut pending = false;
    let evicted: Vec<String> = next.tasks.iter().filter(|t| !t.is_handover()).map(|t| t.cluster.clone()).collect();
    let others: Vec<(&String, &i32)> = input.placed.iter().filter(|(c, _)| !evicted.contains(c)).collect();
    let not_ready: Vec<&str> = others
        .iter()
        .filter(|(c, r)| input.ready.get(*c).copied().unwrap_or(0) < **r)
        .map(|(c, _)| c.as_str())
        .collect();
    // The availability floor: an old copy is never purged while no replica runs elsewhere.
    let runs_elsewhere = others.iter().any(|(c, _)| input.ready.get(*c).copied().unwrap_or(0) > 0);
    let mut kept = Vec::new();
    for mut task in std::mem::take(&mut next.tasks) {
        let since = task.since_ms;
        let cause = |condition: String, rule: String| Cause { condition, since_ms: since, for_ms: now - since, rule };
        let of = task.reason;
        if !ctx.clusters.contains_key(&task.cluster) {
            let c = cause("the member left the fleet".into(), "nothing to purge".into());
            actions.push(action(input, &task.cluster, ActionKind::Purge { reason: PurgeReason::ClusterGone, of }, c));
            continue;
        }
        // An eviction is done once the workload left the cluster for others; a hand-over once
        // the workload is placed (it may stay on the cluster with fewer replicas).
        let moved = (task.is_handover() || !input.placed.contains_key(&task.cluster)) && !others.is_empty();
        // A workload that never left (nothing else fit, it stayed placed there) forgets an
        // eviction for the member's health once the member is Ready again: the eviction never
        // took effect. Kept, a `Directly` one would move the workload off a healthy member
        // later, removing its Ready replicas at once with none Ready elsewhere; a `Gracefully`
        // one would keep the member out of the workload's decisions until a move-back — decided
        // afresh, its own pods filling the member — found room (a scale-down meanwhile never
        // published: simulation seed 199).
        let recovered = !moved
            && matches!(task.reason, Reason::ClusterNotReady | Reason::ClusterUnreachable)
            && input.placed.contains_key(&task.cluster)
            && ctx.clusters.get(&task.cluster).is_some_and(|c| c.condition.is_ready());
        if recovered && task.purge != Purge::Never {
            // The eviction never took effect and ends now: a note of it the mass-deletion guard
            // kept unpublished (its eviction, its `Directly` purge) will never be true; noted when
            // the hold ended, it named an outage long over (simulation seed 1000045: member-004
            // healthy for 9 minutes).
            next.unpublished.retain(|a| {
                a.cluster != task.cluster || !matches!(a.kind, ActionKind::Evict { .. } | ActionKind::Purge { .. })
            });
        }
        if task.purge == Purge::Directly {
            // Purged when it started; it only kept the member out until the workload left.
            if !moved && !recovered {
                kept.push(task);
            }
            continue;
        }
        if task.purge == Purge::Gracefully && recovered {
            continue;
        }
        let ready = moved && not_ready.is_empty();
        let expired = now >= since.saturating_add(task.grace_ms);
        let grace = moved && expired && runs_elsewhere;
        if task.purge != Purge::Gracefully || !(ready || grace) {
            if task.purge == Purge::Gracefully && expired && !ready && !runs_elsewhere {
                if task.grace_expired_ms.is_none() {
                    task.grace_expired_ms = Some(now);
                    let condition = match others.is_empty() {
                        true => "the workload placed on no other member".to_string(),
                        false => {
                            let on: Vec<&str> = others.iter().map(|(c, _)| c.as_str()).collect();
                            format!("no replica Ready on {}", on.join(", "))
                        }
                    };
                    let c = cause(condition, "never purged while the workload runs nowhere else".into());
                    actions.push(action(input, &task.cluster, ActionKind::GraceExpired { grace_ms: task.grace_ms }, c));
                }
            } else if runs_elsewhere {
                task.grace_expired_ms = None;
            }
            pending |= task.purge == Purge::Gracefully;
            kept.push(task);
            continue;
        }
        let (reason, c) = if ready {
            let on: Vec<&str> = others.iter().map(|(c, _)| c.as_str()).collect();
            let c = cause(format!("replacement Ready on {}", on.join(", ")), "purgeMode Gracefully".into());
            (PurgeReason::ReplacementReady, c)
        } else {
            let c = cause(
                format!("replacement not Ready on {}", not_ready.join(", ")),
                format!("grace period {} passed", secs(task.grace_ms)),
            );
            (PurgeReason::GraceElapsed, c)
        };
        match budget.take() {
            Ok(()) => actions.push(action(input, &task.cluster, ActionKind::Purge { reason, of }, c)),
            Err(by) => {
                let held = ActionKind::Held { action: "purge".into(), by };
                actions.push(action(input, &task.cluster, held, c));
                pending = true;
                kept.push(task);
            }
        }
    }
    next.tasks = kept;
    pending
}

/// Starts an eviction (or says what held it). `Directly` purges in the same pass.
fn evict(
    ctx: &Ctx<'_>,
    next: &mut WorkloadStability,
    input: &WorkloadInput,
    (cluster, replicas, reason, rule): (&str, i32, Reason, FailoverRule),
    cause: Cause,
    budget: &mut Budget,
    actions: &mut Vec<Action>,
) -> bool {
    let grace_ms = rule.grace_ms.unwrap_or(ctx.settings.grace_period_ms);
    if let Err(by) = budget.take() {
        let held = ActionKind::Held { action: format!("eviction ({reason})"), by };
        actions.push(action(input, cluster, held, cause));
        return true;
    }
    let kind = ActionKind::Evict { replicas, reason, purge: rule.purge, grace_ms };
    actions.push(action(input, cluster, kind, cause.clone()));
    let task = EvictionTask {
        cluster: cluster.to_string(),
        replicas,
        reason,
        since_ms: ctx.now_ms,
        purge: rule.purge,
        grace_ms,
        grace_expired_ms: None,
    };
    if rule.purge == Purge::Directly {
        let c = Cause { rule: "purgeMode Directly".into(), ..cause };
        actions.push(action(input, cluster, ActionKind::Purge { reason: PurgeReason::Directly, of: reason }, c));
    }
    // An eviction replaces a hand-over of the same cluster (its files are kept either way).
    next.tasks.retain(|t| t.cluster != cluster);
    next.tasks.push(task);
    next.tasks.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    next.moved_from.insert(cluster.to_string(), MovedFrom { replicas, at_ms: ctx.now_ms, reason });
    next.unschedulable.remove(cluster);
    next.not_ready_since.remove(cluster);
    next.moved_at_ms = ctx.now_ms;
    rule.purge == Purge::Gracefully
}

/// Evicts the workload from members unhealthy for its toleration.
fn cluster_failover(
    ctx: &Ctx<'_>,
    next: &mut WorkloadStability,
    input: &WorkloadInput,
    budget: &mut Budget,
    actions: &mut Vec<Action>,
) -> bool {
    if !ctx.settings.cluster_failover {
        return false;
    }
    let mut pending = false;
    for (cluster, &replicas) in &input.placed {
        if next.tasks.iter().any(|t| &t.cluster == cluster && !t.is_handover()) {
            continue;
        }
        let Some(t) = ctx.clusters.get(cluster) else { continue };
        let (Some(key), Some(down_for)) = (t.condition.taint_key(), t.unhealthy_for(ctx.now_ms)) else { continue };
        let Some(tolerated) = toleration_ms(&input.tolerations, key, ctx.settings.default_toleration_ms) else {
            continue;
        };
        if down_for < tolerated {
            continue;
        }
        let reason = match t.condition {
            super::Condition::NotReady => Reason::ClusterNotReady,
            _ => Reason::ClusterUnreachable,
        };
        let cause = Cause {
            condition: t.describe(),
            since_ms: t.unhealthy_since_ms.unwrap_or(ctx.now_ms),
            for_ms: down_for,
            rule: format!("toleration {} of {key}:NoExecute", secs(tolerated)),
        };
        pending |= evict(ctx, next, input, (cluster, replicas, reason, input.cluster_rule), cause, budget, actions);
    }
    pending | tainted(ctx, next, input, budget, actions)
}

/// How long the workload tolerates a policy's `NoExecute` taint: its matching tolerations; none
/// matching, Karmada's webhook default for the not-ready / unreachable keys, else not at all.
fn added_toleration_ms(ctx: &Ctx<'_>, input: &WorkloadInput, t: &AddedTaint) -> Option<u64> {
    let default_ms =
        if t.key == TAINT_NOT_READY || t.key == TAINT_UNREACHABLE { ctx.settings.default_toleration_ms } else { 0 };
    taint_toleration_ms(&input.tolerations, &t.taint(), default_ms)
}

/// Evicts the workload from members carrying a ClusterTaintPolicy's `NoExecute` taint it does
/// not tolerate, once the taint has been there for the toleration.
fn tainted(
    ctx: &Ctx<'_>,
    next: &mut WorkloadStability,
    input: &WorkloadInput,
    budget: &mut Budget,
    actions: &mut Vec<Action>,
) -> bool {
    let mut pending = false;
    for (cluster, &replicas) in &input.placed {
        let Some(taints) = ctx.no_execute.get(cluster.as_str()) else { continue };
        if next.tasks.iter().any(|t| &t.cluster == cluster && !t.is_handover()) {
            continue;
        }
        let due = taints
            .iter()
            .filter_map(|t| added_toleration_ms(ctx, input, t).map(|tol| (t, tol)))
            .filter(|(t, tol)| ctx.now_ms >= t.added_at_ms.saturating_add(*tol))
            .min_by_key(|(t, tol)| t.added_at_ms.saturating_add(*tol));
        let Some((t, tolerated)) = due else { continue };
        let value = t.value.as_deref().map(|v| format!("={v}")).unwrap_or_default();
        let cause = Cause {
            condition: format!("tainted {}{value}:NoExecute by ClusterTaintPolicy {}", t.key, t.policy),
            since_ms: t.added_at_ms,
            for_ms: ctx.now_ms.saturating_sub(t.added_at_ms),
            rule: format!("toleration {} of {}:NoExecute", secs(tolerated), t.key),
        };
        let what = (cluster.as_str(), replicas, Reason::ClusterTainted, input.cluster_rule);
        pending |= evict(ctx, next, input, what, cause, budget, actions);
    }
    pending
}

/// Evicts the workload from members where its pods were not Ready for
/// `decisionConditions.tolerationSeconds` (`failover.application`).
fn application_failover(
    ctx: &Ctx<'_>,
    next: &mut WorkloadStability,
    input: &WorkloadInput,
    budget: &mut Budget,
    actions: &mut Vec<Action>,
) -> bool {
    let now = ctx.now_ms;
    let Some(app) = input.application else {
        next.not_ready_since.clear();
        return false;
    };
    let mut pending = false;
    let old = std::mem::take(&mut next.not_ready_since);
    for (cluster, &replicas) in &input.placed {
        if !input.not_ready.contains(cluster) || next.tasks.iter().any(|t| &t.cluster == cluster && !t.is_handover()) {
            continue;
        }
        let since = old.get(cluster).copied().unwrap_or(now);
        if now.saturating_sub(since) < app.toleration_ms {
            next.not_ready_since.insert(cluster.clone(), since);
            continue;
        }
        let cause = Cause {
            condition: "pods not Ready".into(),
            since_ms: since,
            for_ms: now - since,
            rule: format!("failover.application tolerationSeconds {}", app.toleration_ms / 1000),
        };
        let reason = Reason::ApplicationFailover;
        pending |= evict(ctx, next, input, (cluster, replicas, reason, app.rule), cause, budget, actions);
        if next.tasks.iter().all(|t| &t.cluster != cluster || t.is_handover()) {
            next.not_ready_since.insert(cluster.clone(), since);
        }
    }
    pending
}

/// Times Unschedulable replicas; moves those of a movable workload after
/// `unschedulable_after` and distrusts the cluster's capacity figure for the request shape;
/// reports (once) those of a workload that cannot move. Marks whose figure changed go.
fn unschedulable(
    ctx: &Ctx<'_>,
    next: &mut WorkloadStability,
    input: &WorkloadInput,
    budget: &mut Budget,
    actions: &mut Vec<Action>,
) {
    let now = ctx.now_ms;
    next.marks.retain(|m| m.shape == input.shape && input.capacity.get(&m.cluster) == Some(&m.capacity));
    let old = std::mem::take(&mut next.unschedulable);
    next.stuck.retain(|c| input.unschedulable.get(c).is_some_and(|u| u.replicas > 0));
    for (cluster, u) in &input.unschedulable {
        let Some(&placed) = input.placed.get(cluster) else { continue };
        if u.replicas == 0 || next.tasks.iter().any(|t| &t.cluster == cluster && !t.is_handover()) {
            continue;
        }
        let since = old.get(cluster).map_or(now, |p| p.since_ms);
        let pending = Pending { since_ms: since, replicas: u.replicas };
        let cause = Cause {
            condition: format!("{} replicas Unschedulable", u.replicas),
            since_ms: since,
            for_ms: now - since,
            rule: format!("unschedulable_after {}", secs(ctx.settings.unschedulable_after_ms)),
        };
        if now - since < ctx.settings.unschedulable_after_ms {
            next.unschedulable.insert(cluster.clone(), pending);
            continue;
        }
        let movable = matches!(input.mobility, Mobility::Divided | Mobility::StaticWeights { allowed: true });
        if !movable {
            if next.stuck.insert(cluster.clone()) {
                actions.push(action(input, cluster, ActionKind::CannotMove { replicas: u.replicas }, cause));
            }
            next.unschedulable.insert(cluster.clone(), pending);
            continue;
        }
        let taken = if next.moved_recently(now, ctx.settings.min_stay_ms) { Err(Held::MinStay) } else { budget.take() };
        if let Err(by) = taken {
            let held = ActionKind::Held { action: "reschedule".into(), by };
            actions.push(action(input, cluster, held, cause));
            next.unschedulable.insert(cluster.clone(), pending);
            continue;
        }
        let replicas = i32::try_from(u.replicas).unwrap_or(i32::MAX).min(placed);
        let cap = placed - replicas;
        actions.push(action(input, cluster, ActionKind::Reschedule { replicas: u.replicas, cap }, cause));
        let capacity = input.capacity.get(cluster).copied().unwrap_or(0);
        next.marks.retain(|m| &m.cluster != cluster);
        next.marks.push(CapacityMark { cluster: cluster.clone(), shape: input.shape, capacity, cap, since_ms: now });
        next.marks.sort_by(|a, b| a.cluster.cmp(&b.cluster));
        next.moved_at_ms = now;
    }
}

/// Returns the workload to members it was moved away from once they have been healthy for
/// `stable_for`, when its policy prefers them and `move_back` is on. Members that left the
/// fleet, or that the workload is on again, are forgotten. An application failover is never
/// moved back: its member is forgotten once its eviction task ends.
fn move_back(
    ctx: &Ctx<'_>,
    next: &mut WorkloadStability,
    input: &WorkloadInput,
    budget: &mut Budget,
    actions: &mut Vec<Action>,
) {
    let now = ctx.now_ms;
    let tasks: Vec<String> = next.tasks.iter().filter(|t| !t.is_handover()).map(|t| t.cluster.clone()).collect();
    next.moved_from.retain(|c, _| ctx.clusters.contains_key(c) && (tasks.contains(c) || !input.placed.contains_key(c)));
    let candidates: Vec<(String, MovedFrom)> = next.moved_from.iter().map(|(c, m)| (c.clone(), m.clone())).collect();
    for (cluster, m) in candidates {
        if m.reason == Reason::ApplicationFailover {
            // The member stayed healthy while the workload's pods did not run there: its health
            // says nothing about whether they would run now, so nothing moves back on it (it would
            // flap: back onto the member, not Ready again, failed over again). As Karmada's
            // ClusterEviction filter, the member is left out of the workload's decisions while
            // the eviction task lasts (`Never`: until a WorkloadRebalancer decides afresh), then
            // takes part in them again.
            if !tasks.contains(&cluster) {
                next.moved_from.remove(&cluster);
            }
            continue;
        }
        let Some(t) = ctx.clusters.get(&cluster) else { continue };
        let Some(up_for) = t.healthy_for(now) else { continue };
        if up_for < ctx.settings.stable_for_ms {
            continue;
        }
        // Not back onto a NoExecute taint it does not tolerate.
        let repelled = ctx.no_execute.get(cluster.as_str()).is_some_and(|ts| {
            ts.iter()
                .any(|t| added_toleration_ms(ctx, input, t).is_some_and(|tol| now >= t.added_at_ms.saturating_add(tol)))
        });
        if repelled {
            continue;
        }
        let preferred = input.prefers.as_ref().is_none_or(|p| p.contains(&cluster));
        if !ctx.settings.move_back || !preferred {
            // Stable again, but the workload stays where failover put it: the member is only
            // no longer left out of its later decisions (a `Never` task keeps its files).
            next.moved_from.remove(&cluster);
            continue;
        }
        let cause = Cause {
            condition: "Ready".into(),
            since_ms: t.healthy_since_ms.unwrap_or(now),
            for_ms: up_for,
            rule: format!("stable_for {}", secs(ctx.settings.stable_for_ms)),
        };
        let taken =
            if next.moved_recently(now, ctx.settings.min_stay_ms) { Err(Held::MinStay) } else { budget.take_move() };
        if let Err(by) = taken {
            actions.push(action(input, &cluster, ActionKind::Held { action: "move-back".into(), by }, cause));
            continue;
        }
        actions.push(action(input, &cluster, ActionKind::MoveBack { replicas: m.replicas }, cause));
        next.moved_from.remove(&cluster);
        next.tasks.retain(|t| t.cluster != cluster);
        next.moved_at_ms = now;
    }
}
