//! Stage "decide": per claimed template, in the propagateDeps order (workloads first, then
//! the dependencies they pull, [`super::deps`]): the claim (with the stored previous
//! claimer), the decision key, then the cached decision reused or the workload scheduled
//! again ([`decide`]); after the last, the files of every decision made afresh are rendered
//! in one batch on every core ([`render_all`]: a render reads only the clusters' facts, which
//! the deductions between decisions do not change, and each answer goes back to its decision
//! by position, so the bytes are the same on any thread count) — handing over [`Decisions`]:
//! the order, what was decided afresh, the notes for the history, the removed workloads and
//! the counts. Each workload's decided outcome ([`Decided`]) lives in the cache's decisions.
//!
//! A decision is reused when its key (everything static it read: template, policy, claim,
//! previous placement, profile, overrides, interpreters, dependents, the fleet's
//! filter-relevant facts) and the state of the clusters that passed its filters are
//! unchanged — never that of a workload whose history record notes a failover action this
//! pass ([`StabilityPass::noted`]): a record holds a decision of its own pass, made on the
//! inputs it stores, so that it replays. A decision restored from the store holds its files by hash only: on a full
//! check it is reused only if every file is on the disk with its hash. A workload that fails
//! to schedule (or to render for a cluster) keeps its previous files. The replicas of each
//! scheduled decision are deducted from the live views before the next workload
//! ([`PassSnapshots::deduct`]).
//!
//! Failover's [`Directive`] for a workload (from the stability stage) is part of its key: the
//! clusters it is evicted from are rejected by the `cluster-eviction` filter and taken out of
//! the previous placement, distrusted capacity caps a cluster's replicas, a move-back decides
//! without the previous placement, and the files on clusters a graceful eviction left are
//! kept until purged.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::model::workload::interpret;
use crate::model::{ClusterSnapshot, ReplicaRequirements, Workload};
use crate::policy::matching::PolicyIndex;
use crate::policy::types::{ActivationPreference, Placement, PropagationSpec};
use crate::policy::{ObjectKey, PolicyRef, SetPos, Template};
use crate::render::{self, RenderInput};
use crate::schedule::profile::Profiles;
use crate::schedule::{
    self, Framework, HeldIx, Outcome, ScheduleRequest, ScheduleResult, Stands, Strategy, ViewIx, assign,
};
use crate::store::{DecisionInputs, PlacementRecord, Store, StoreError};
use crate::util::hash::{KeySet, fnv1a64};
use crate::util::memo;

use super::deps::{add_required, attached, dependency_map_indexed};
use super::snapshots::{Pass, PassSnapshots};
use super::stability::{Directive, StabilityPass};
use super::{Inputs, Problem, cache};

/// The history note of a workload whose `activationPreference: Lazy` policy changed while its
/// template did not ([`lazy_pin`]): recorded with the decision while the hold lasts, and what
/// the views read to show the hold (`fedsched get`, `explain`, `history`).
pub const LAZY_HELD_NOTE: &str = "held by activationPreference: Lazy: the policy changed, the template did not; \
                                  the policy of the last decision stays in force until the template changes";

/// What every decision of a pass shares.
pub(super) struct Context<'a> {
    pub store: &'a Store,
    pub profiles: &'a Profiles,
    pub inputs: &'a Inputs,
    pub index: &'a PolicyIndex<'a>,
    pub pass: &'a Pass,
    /// Where the files of restored decisions are checked on a full check.
    pub output_dir: &'a Path,
    /// Whether this pass compares the whole output directory ([`super::plan::Kept::full_check_due`]).
    pub full_check: bool,
    /// What failover asks of each workload ([`super::stability`]).
    pub stability: &'a StabilityPass,
    /// How Secrets are written ([`crate::secrets`]).
    pub secrets: Secrets,
    /// The templates an HPA of the repository scales ([`crate::model::autoscaling`]).
    pub autoscaled: crate::model::autoscaling::Autoscaled,
    /// What progressive rollouts ask of each workload ([`super::rollout`]).
    pub rollout: &'a super::rollout::RolloutPass,
}

/// Who owns a decision's replicas in the members (part of its key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Autoscale {
    /// The rendered files say how many (the scheduler's division).
    Declared,
    /// A member HPA: the rendered workload leaves `spec.replicas` out.
    OwnedByHpa,
    /// This is the HPA of a workload decided in this pass: its bounds per member, divided by
    /// that placement ([`crate::model::autoscaling::divide_bounds`]); rendered only there.
    Bounds(BTreeMap<String, (i64, i64)>),
}

/// How a pass writes Secrets: the mode, the recipients (resolved only when the repository has
/// a Secret and the mode encrypts), their digest (part of a Secret's decision key: a new mode
/// or recipient renders it again) and the pass's time (sops's `lastmodified`).
pub(super) struct Secrets {
    pub mode: Option<crate::secrets::Mode>,
    pub recipients: crate::secrets::Recipients,
    pub digest: u64,
    pub now_ms: u64,
}

/// What the decide stage hands over.
#[derive(Default)]
pub(super) struct Decisions {
    /// This pass's workloads, in decision order; each has its entry in the cache's decisions
    /// ([`Decisions::keys`]).
    pub order: Vec<Ordered>,
    /// Those decided (scheduled and rendered) this pass; the others reused a decision.
    pub fresh: BTreeSet<ObjectKey>,
    /// Per workload, the notes of its history record: a Lazy policy's hold
    /// ([`LAZY_HELD_NOTE`]) and its render failures.
    pub notes: BTreeMap<ObjectKey, Vec<String>>,
    /// The workloads whose policy in force suspends dispatching, with what it suspends
    /// ([`crate::policy::types::Suspension::suspended`]: empty = every cluster), in decision
    /// order.
    pub suspended: Vec<(ObjectKey, Vec<String>)>,
    /// The workloads a Lazy policy holds on the spec of their last decision, in decision order.
    pub lazy_held: Vec<ObjectKey>,
    /// Workloads with a placement that this pass did not decide, in store order.
    pub removed: Vec<ObjectKey>,
    /// The output of the earlier decisions this pass replaced (decided again) or dropped (no
    /// longer decided): what the plan of the publish takes out of the desired output.
    pub replaced: Vec<Replaced>,
    /// The workloads whose decision this pass dropped (no longer decided).
    pub dropped: Vec<ObjectKey>,
    pub scheduled: usize,
    /// Workloads scheduled and rendered this pass.
    pub decided: usize,
    /// Why they were decided again.
    pub redecided: super::report::Redecided,
    pub unschedulable: Vec<Problem>,
    pub render_failures: Vec<Problem>,
    /// Time spent scheduling and rendering the fresh decisions.
    pub schedule_time: Duration,
    /// CPU time of the deciding thread in the schedule phase, with its split runs' on other
    /// threads (figures only).
    pub schedule_cpu: Duration,
    pub render_time: Duration,
    /// The stage's own work besides that: claims, decision keys, checks that kept decisions
    /// still stand, deductions.
    pub decide_time: Duration,
}

/// One workload of the pass's order, with what the record stage's quiet path reads of it
/// instead of looking its key up.
pub(super) struct Ordered {
    /// Its template (shared with the inputs: no key copied per workload).
    pub template: Arc<Template>,
    /// Decided afresh this pass (in [`Decisions::fresh`]).
    pub fresh: bool,
    /// It had a placement as the pass began.
    pub placed: bool,
}

/// A workload's position in the pass's decision order ([`Decisions::order`]), by which the
/// stage notes the decisions to look at again after the pass's renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct OrderIx(usize);

impl OrderIx {
    /// The workload at this position of `order` (the pass's, [`Decisions::order`]).
    fn of(self, order: &[Ordered]) -> Option<&Ordered> {
        order.get(self.0)
    }
}

impl Decisions {
    /// The position the next workload of the order takes.
    fn next_position(&self) -> OrderIx {
        OrderIx(self.order.len())
    }

    /// The keys of the pass's workloads, in decision order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &ObjectKey> + Clone {
        self.order.iter().map(|o| &o.template.key)
    }
}

/// The files (cluster, path, content hash) and kept files (cluster, path) of a decision an
/// earlier pass made, which this pass replaced or dropped.
pub(super) struct Replaced {
    pub workload: ObjectKey,
    pub files: Vec<(String, String, u64)>,
    pub keep: Vec<(String, String)>,
}

impl Replaced {
    fn of(d: &Decided) -> Self {
        let files = d
            .files
            .iter()
            .zip(&d.file_hashes)
            .map(|((cluster, (path, _)), hash)| (cluster.clone(), path.clone(), *hash));
        Replaced { workload: d.record.workload.clone(), files: files.collect(), keep: d.keep.clone() }
    }
}

/// One claimed template and what its decision reads beyond the pass's context. `'s`: the
/// policy spec in force, which a Lazy policy's pin holds only for the template's turn.
struct Claimed<'a, 's> {
    template: &'a Template,
    /// The placement the template had before this pass.
    previous: Option<Arc<PlacementRecord>>,
    /// The claiming policy; `None` for a dependency no policy claims.
    policy: Option<PolicyRef>,
    placement: &'s Placement,
    /// The claiming policy's spec (the one in force: see [`lazy_pin`]); `None` for a
    /// dependency no policy claims.
    spec: Option<&'s PropagationSpec>,
    /// The profile the policy names.
    framework: &'a Framework,
    /// propagateDeps: the workloads decided so far that need this object, with their clusters
    /// and policy.
    required: Vec<(ObjectKey, BTreeSet<String>, PolicyRef)>,
    /// Content hashes of the template and the policy spec (their blobs).
    hashes: (u64, u64),
    /// The override policies that apply, in application order.
    overrides: Vec<render::ApplicableOverride<'a>>,
    /// What failover asks of this decision.
    directive: Option<&'a Directive>,
    /// Who owns its replicas in the members.
    autoscale: Autoscale,
}

/// What the decide stage keeps between passes (its part of [`cache::Kept`]).
#[derive(Default, Clone)]
pub(super) struct Kept {
    /// The kept decision of every workload. Lent to the plan stage (summary fragments, file
    /// stats) and the record stage (persisted sequence, origin), which note what they learn in
    /// it, until those notes move into their own parts (issue 51).
    pub(super) decisions: cache::KeptDecisions,
    /// The Secret files published SOPS-encrypted ([`crate::secrets::SealedFiles`]; read from
    /// the store when a pass first encrypts).
    sealed: crate::secrets::SealedFiles,
    /// Per template, the policy that claimed it ([`cache::ClaimMemo`]).
    claims: cache::ClaimMemo,
    /// Per template, the key of its decision ([`cache::KeyMemo`]).
    keys: cache::KeyMemo,
    /// Each cluster's static digest, kept while its snapshot's fingerprint is the same.
    static_digests: cache::StaticDigests,
    /// The policy index's positions, kept while the set holds the same policies
    /// ([`PolicyIndex::kept`]).
    policy_index: crate::policy::matching::KeptIndex,
}

impl Kept {
    /// The pass's policy index over `set`, from the positions kept while it holds the same
    /// policies.
    pub fn policy_index<'s>(&mut self, set: &'s crate::policy::PolicySet) -> PolicyIndex<'s> {
        PolicyIndex::kept(set, &mut self.policy_index)
    }
}

/// What the decide stage works on: its own part of what the reconciler keeps, and what the
/// record stage lends it ([`super::record::Lent`]): the placements the pass began with (read),
/// the workloads' last history records (a Lazy policy's pin) and the blobs known stored.
pub(super) struct Lent<'k> {
    pub own: &'k mut Kept,
    pub record: super::record::Lent<'k>,
}

/// Decides (or reuses the decision of) every claimed template, deducting the replicas of
/// each from the live views before the next (the snapshots stage saves them after:
/// [`PassSnapshots::save`]); then forgets the decisions of templates no longer claimed.
pub(super) fn decide_all(
    ctx: &Context<'_>,
    cache: &mut Lent<'_>,
    snapshots: &mut PassSnapshots,
) -> Result<Decisions, StoreError> {
    let started = Instant::now();
    let set = &ctx.inputs.set;
    let mut out = Decisions::default();
    // The pass's workloads are `out.order`; how many of them have a placement (when all
    // placements do, none was removed: no set of the workloads is needed).
    let mut seen_placed = 0usize;
    // propagateDeps: dependency → the claimed workloads that reference it.
    let required_by = dependency_map_indexed(ctx.inputs, ctx.index, |t| {
        cache.record.placements().get(&t.key).and_then(|p| p.policy.clone())
    });
    // Workloads first, then their dependencies (which take the union of their dependents'
    // clusters); dependencies never have dependencies of their own.
    type Indexed<'a> = Vec<(SetPos<Template>, &'a Arc<Template>)>;
    let (deps, workloads): (Indexed<'_>, Indexed<'_>) =
        set.templates_at().partition(|(_, t)| required_by.contains_key(&t.key));
    // The HPAs after the workloads they scale: their bounds follow those placements.
    let (hpas, workloads): (Indexed<'_>, Indexed<'_>) =
        workloads.into_iter().partition(|(_, t)| crate::model::autoscaling::scale_target(t).is_some());
    // The placement (per member its replicas, whether duplicated) of each HPA target decided.
    let mut scaled: BTreeMap<ObjectKey, (BTreeMap<String, i64>, bool)> = BTreeMap::new();
    if ctx.full_check {
        cache::verify_restored(&mut cache.own.decisions, ctx.output_dir);
    }
    // The clusters and policy of each workload a dependency follows (only those).
    let dependents: KeySet<&ObjectKey> = required_by.values().flatten().collect();
    let mut targets_of: BTreeMap<ObjectKey, (BTreeSet<String>, PolicyRef)> = BTreeMap::new();
    let mut fleet_statics = FleetStatics::new(cache.own.static_digests.of(&snapshots.views, &snapshots.fingerprints));
    let mut batch = Batch::default();
    // The positions in `out.order` of the decisions that may hold problems.
    let mut with_problems: Vec<OrderIx> = Vec::new();
    let default_placement = Placement::default();
    // Whether any policy suspends dispatching (else a kept decision looks up no policy for it).
    let any_suspension = set
        .propagation_policies
        .iter()
        .chain(&set.cluster_propagation_policies)
        .any(|p| p.spec.suspension.as_ref().is_some_and(|s| s.suspended().is_some()));
    // (Moved out for the loop; an error ends the pass, and the cache with it.)
    let mut claims = std::mem::take(&mut cache.own.claims);
    claims.begin(set, ctx.index);
    // Which templates HPAs scale is in their keys: a change re-keys every template.
    let digests =
        (ctx.inputs.hashes.interpreters, cache::key_of(&(ctx.profiles.digest(), ctx.secrets.digest, &ctx.autoscaled)));
    cache.own.keys.begin(set, digests, claims.unchanged(), ctx.full_check);
    // The workloads whose record this pass notes an action of: decided afresh, never reused
    // (a kept decision's figures are those of the pass that made it, not of the inputs the
    // record stores with the note: the record would not replay).
    let noted = ctx.stability.noted();
    for (position, shared) in workloads.into_iter().chain(hpas).chain(deps) {
        let t: &Template = shared;
        let renote = !noted.is_empty() && noted.contains(&t.key);
        let required: Vec<(ObjectKey, BTreeSet<String>, PolicyRef)> = required_by
            .get(&t.key)
            .into_iter()
            .flatten()
            .filter_map(|k| targets_of.get(k).map(|(c, p)| (k.clone(), c.clone(), p.clone())))
            .collect();
        let previous = cache.record.placements().get(&t.key).cloned();
        let placed = previous.clone();
        // The decision key kept from an earlier pass (nothing it read changed), and the
        // decision it keys still standing: reused without claiming the template again.
        let directed = (!ctx.stability.directives.is_empty() && ctx.stability.directives.contains_key(&t.key))
            || ctx.rollout.touches(&t.key);
        let bounds = hpa_bounds(t, &scaled);
        let kept = match required.is_empty() && !directed && !renote && bounds.is_none() {
            true => cache
                .own
                .keys
                .kept(shared, previous.as_ref(), |bits| fleet_statics.key(&snapshots.views, f64::from_bits(bits))),
            false => None,
        };
        let decided_before = out.decided;
        let reused = kept.and_then(|key| reuse_kept(ctx, cache, snapshots, (t, key), &mut out.redecided));
        // What the policy in force suspends, and whether a Lazy policy holds its last spec.
        let (entry, suspended, held) = match reused {
            Some(entry) => {
                #[cfg(debug_assertions)]
                let check =
                    KeyCheck { claims: &mut claims, fleet_statics: &mut fleet_statics, views: &snapshots.views };
                #[cfg(debug_assertions)]
                debug_check_kept_key(ctx, cache, check, (shared, position, &default_placement), entry.key)?;
                // A kept key is never a Lazy policy's (those are forgotten): the claimer's
                // current spec is the one in force.
                let suspended = match any_suspension {
                    true => entry
                        .decided
                        .record
                        .policy
                        .as_ref()
                        .and_then(|r| ctx.index.propagation_policy(r))
                        .and_then(|p| p.spec.suspension.as_ref()?.suspended()),
                    false => None,
                };
                (entry, suspended, false)
            }
            None => {
                let Some(mut claimed) =
                    claim(ctx, (shared, position), &mut claims, previous, required, &default_placement)
                else {
                    cache.own.keys.forget(shared);
                    continue;
                };
                if let Some(b) = bounds {
                    claimed.autoscale = Autoscale::Bounds(b);
                }
                let lazy = claimed.spec.is_some_and(|s| s.activation_preference == Some(ActivationPreference::Lazy));
                let pinned = lazy_pin(ctx, cache, &claimed)?;
                if let Some((policy_hash, spec)) = &pinned {
                    claimed.spec = Some(spec);
                    claimed.placement = &spec.placement;
                    claimed.hashes.1 = *policy_hash;
                }
                let (key, fleet) = claimed_key(ctx, &mut fleet_statics, &snapshots.views, &claimed);
                let rolled = ctx.rollout.touches(&t.key);
                match lazy || !claimed.required.is_empty() || claimed.directive.is_some() || rolled {
                    true => cache.own.keys.forget(shared),
                    false => cache.own.keys.keep(shared, claimed.previous.as_ref(), fleet, key),
                }
                let suspended = claimed.spec.and_then(|s| s.suspension.as_ref()?.suspended());
                let held = pinned.is_some();
                let Some(entry) =
                    reuse_or_decide(ctx, cache, snapshots, &claimed, (key, renote), &mut out, &mut batch)?
                else {
                    continue;
                };
                (entry, suspended, held)
            }
        };
        if held {
            out.notes.entry(t.key.clone()).or_default().push(LAZY_HELD_NOTE.to_string());
            out.lazy_held.push(t.key.clone());
        }
        if let Some(clusters) = suspended {
            out.suspended.push((t.key.clone(), clusters));
        }
        let decided = &entry.decided;
        seen_placed += usize::from(placed.is_some());
        // Problems come with a decision, or from rendering this pass's.
        if out.decided != decided_before || !decided.problems.is_empty() {
            with_problems.push(out.next_position());
        }
        out.order.push(Ordered {
            template: Arc::clone(shared),
            fresh: out.decided != decided_before,
            placed: placed.is_some(),
        });
        if decided.scheduled {
            out.scheduled += 1;
            // Later workloads of this pass see this decision's replicas as assumed (those of
            // an unchanged recent placement are in the views already).
            if let Some(req) = decided.requirements() {
                let targets = &decided.record.targets;
                if snapshots.already_deducted(placed.as_ref(), |p| entry.same_targets.equal(p, targets)) {
                    debug_assert!(snapshots.deducts_nothing(&t.key, &decided.record.targets));
                } else {
                    snapshots.deduct(&t.key, req, &decided.record.targets);
                }
            }
        }
        if decided.scheduled && ctx.autoscaled.is_target(&t.key) {
            let replicas = decided.record.targets.iter().map(|(c, r)| (c.clone(), i64::from(r.unwrap_or(0)))).collect();
            let duplicated = decided
                .record
                .policy
                .as_ref()
                .and_then(|p| ctx.index.propagation_policy(p))
                .is_some_and(|p| Strategy::of(&p.spec.placement) == Strategy::Duplicated);
            scaled.insert(t.key.clone(), (replicas, duplicated));
        }
        if let Some(p) = &decided.record.policy
            && dependents.contains(&t.key)
        {
            targets_of.insert(t.key.clone(), (decided.record.targets.keys().cloned().collect(), p.clone()));
        }
    }
    cache.own.claims = claims;
    put_blobs(ctx.store, &batch.blobs)?;
    render_decided(ctx, cache, &snapshots.views, batch, &with_problems, &mut out)?;
    forget_unclaimed(cache, seen_placed, &mut out);
    out.decide_time = started.elapsed().saturating_sub(out.schedule_time).saturating_sub(out.render_time);
    Ok(out)
}

/// Renders the files of this pass's decisions, in one batch on every core (a render reads the
/// clusters' facts, which deductions do not change), then collects, in decision order, the
/// problems of the decisions at `with_problems` (positions in `out.order`).
fn render_decided(
    ctx: &Context<'_>,
    cache: &mut Lent<'_>,
    views: &[ClusterSnapshot],
    batch: Batch,
    with_problems: &[OrderIx],
    out: &mut Decisions,
) -> Result<(), StoreError> {
    let rendering = Instant::now();
    let renders = batch.renders;
    let rendered = render_batch(ctx, &mut cache.own.sealed, &renders, views)?;
    out.render_time += rendering.elapsed();
    for (job, files) in renders.iter().zip(rendered) {
        if let Some(c) = cache.own.decisions.get_mut(&job.template.key) {
            files.into_decided(&mut Arc::make_mut(c).decided);
        }
    }
    for key in with_problems.iter().filter_map(|i| i.of(&out.order).map(|o| &o.template.key)) {
        let Some(decided) = cache.own.decisions.get(key).map(|c| &c.decided) else { continue };
        for p in &decided.problems {
            if let Some(cluster) = &p.cluster {
                let note = format!("render failed on {cluster}, previous file kept: {}", p.reason);
                out.notes.entry(key.clone()).or_default().push(note);
                out.render_failures.push(p.clone());
            } else {
                out.unschedulable.push(p.clone());
            }
        }
    }
    Ok(())
}

/// The placements of workloads no longer in the pass (`out.removed`) and the decisions of
/// templates no longer claimed (forgotten: `out.replaced`, `out.dropped`). `seen_placed` is how
/// many of the pass's workloads have a placement.
fn forget_unclaimed(cache: &mut Lent<'_>, seen_placed: usize, out: &mut Decisions) {
    // Every workload of the pass has a decision: with as many decisions, none is gone; with
    // as many placements of the pass's workloads as placements, none was removed.
    let placements = cache.record.placements();
    let quiet = seen_placed == placements.len() && out.order.len() == cache.own.decisions.len();
    let seen: KeySet<&ObjectKey> =
        if quiet { KeySet::default() } else { out.order.iter().map(|o| &o.template.key).collect() };
    out.removed = match seen_placed == placements.len() {
        true => Vec::new(),
        false => {
            let mut r: Vec<&ObjectKey> = placements.keys().filter(|k| !seen.contains(*k)).collect();
            r.sort_by_cached_key(|k| k.store_key());
            r.into_iter().cloned().collect()
        }
    };
    let gone: Vec<ObjectKey> = match out.order.len() == cache.own.decisions.len() {
        true => Vec::new(),
        false => cache.own.decisions.keys().filter(|k| !seen.contains(*k)).cloned().collect(),
    };
    for k in gone {
        if let Some(old) = cache.own.decisions.remove(&k) {
            out.replaced.push(Replaced::of(&old.decided));
        }
        out.dropped.push(k);
    }
}

/// The claim of a template (with the stored previous claimer) and what its decision reads:
/// the policy's placement and profile, the hashes, the overrides. `None` when no policy
/// claims it and no workload needs it.
fn claim<'a>(
    ctx: &Context<'a>,
    (shared, position): (&'a Arc<Template>, SetPos<Template>),
    claims: &mut cache::ClaimMemo,
    previous: Option<Arc<PlacementRecord>>,
    required: Vec<(ObjectKey, BTreeSet<String>, PolicyRef)>,
    default_placement: &'a Placement,
) -> Option<Claimed<'a, 'a>> {
    let index = ctx.index;
    let t: &'a Template = shared;
    let claimer = previous.as_ref().and_then(|p| p.policy.as_ref());
    let claim = claims.claim(index, shared, claimer);
    let policy = claim.and_then(|c| index.propagation_policy(&c).map(|p| (c, p)));
    let (policy, spec, placement, framework) = match policy {
        // Unknown profiles were rejected when loading.
        Some((claim, policy)) => (
            Some(claim),
            Some(&policy.spec),
            &policy.spec.placement,
            ctx.profiles.for_policy(&policy.meta.annotations).unwrap_or_else(|| ctx.profiles.default_profile()),
        ),
        None if !required.is_empty() => (None, None, default_placement, ctx.profiles.default_profile()),
        None => return None,
    };
    let empty_hash = fnv1a64(&[]);
    let hashes = (
        ctx.inputs.hashes.template(position).unwrap_or(empty_hash),
        policy.as_ref().and_then(|r| ctx.inputs.hashes.policies.get(r)).copied().unwrap_or(empty_hash),
    );
    let overrides = render::overrides::applicable_indexed(index, t);
    let directive = ctx.stability.directives.get(&t.key);
    let autoscale = match ctx.autoscaled.owns_replicas(t) {
        true => Autoscale::OwnedByHpa,
        false => Autoscale::Declared,
    };
    Some(Claimed {
        template: t,
        previous,
        policy,
        placement,
        spec,
        framework,
        required,
        hashes,
        overrides,
        directive,
        autoscale,
    })
}

/// `activationPreference: Lazy` (Karmada's lazy activation): a change of the policy takes
/// effect for a template only when the template itself changes. When the claiming policy is
/// Lazy, claimed the template before, and the template is the one of the workload's last
/// decision while the policy is not, the spec of that decision (its stored blob) stays in
/// force: returns its hash and the spec. A new template, a changed template, or a policy that
/// is no longer Lazy uses the current spec.
fn lazy_pin(
    ctx: &Context<'_>,
    cache: &mut Lent<'_>,
    w: &Claimed<'_, '_>,
) -> Result<Option<(u64, PropagationSpec)>, StoreError> {
    let lazy = w.spec.is_some_and(|s| s.activation_preference == Some(ActivationPreference::Lazy));
    let same_claimer = w.previous.as_ref().is_some_and(|p| p.policy.is_some() && p.policy == w.policy);
    if !lazy || !same_claimer {
        return Ok(None);
    }
    let key = &w.template.key;
    let Some(last) = cache.record.last_history(ctx.store, key)? else { return Ok(None) };
    let (template_hash, policy_hash) = w.hashes;
    if last.template_hash != template_hash || last.policy_hash == policy_hash {
        return Ok(None);
    }
    let Some(bytes) = ctx.store.blob(last.policy_hash)? else { return Ok(None) };
    // A blob that no longer reads as a spec (an older schema) leaves the current one in force.
    Ok(serde_json::from_slice::<PropagationSpec>(&bytes).ok().map(|spec| (last.policy_hash, spec)))
}

/// The fleet's static facts per confidence threshold ([`cache::fleet_static_key`]), computed
/// on first use in a pass from the clusters' static digests.
struct FleetStatics {
    statics: Vec<u64>,
    keys: Vec<(u64, u64)>,
}

impl FleetStatics {
    fn new(statics: Vec<u64>) -> Self {
        FleetStatics { statics, keys: Vec::new() }
    }

    fn key(&mut self, snapshots: &[ClusterSnapshot], min_confidence: f64) -> u64 {
        match self.keys.iter().find(|(bits, _)| *bits == min_confidence.to_bits()) {
            Some((_, k)) => *k,
            None => {
                let k = cache::fleet_static_key(snapshots, &self.statics, min_confidence);
                self.keys.push((min_confidence.to_bits(), k));
                k
            }
        }
    }
}

/// An HPA's bounds per member when its target was decided in this pass (`scaled`): divided
/// by the target's replicas per member (Webster, ties by the HPA's uid), or the declared ones
/// on every member of a duplicated target. None for any other template.
fn hpa_bounds(
    t: &Template,
    scaled: &BTreeMap<ObjectKey, (BTreeMap<String, i64>, bool)>,
) -> Option<BTreeMap<String, (i64, i64)>> {
    use crate::model::autoscaling;
    let target = autoscaling::scale_target(t)?;
    let (replicas, duplicated) = scaled.iter().find(|(k, _)| autoscaling::names(&target, k)).map(|(_, v)| v)?;
    let (min, max) = autoscaling::bounds(t)?;
    if *duplicated {
        return Some(replicas.iter().filter(|(_, r)| **r > 0).map(|(c, _)| (c.clone(), (min, max))).collect());
    }
    let tie = assign::TieBreak::for_uid(t.meta.uid.as_deref());
    Some(autoscaling::divide_bounds((min, max), replicas, |total, w| assign::webster(total, w, tie)))
}

/// The key of everything static a decision reads: the template and policy hashes, the
/// template's source, the claim, the fleet's static facts, the interpreters, the previous
/// placement, the profile, the dependents and the overrides.
fn decision_key(ctx: &Context<'_>, w: &Claimed<'_, '_>, (fleet_static, previous): (u64, u64)) -> u64 {
    let t = w.template;
    let empty_hash = fnv1a64(&[]);
    let overrides_key: Vec<u64> = w
        .overrides
        .iter()
        .map(|o| {
            let id = (o.kind, o.policy.meta.namespace.clone(), o.policy.meta.name.clone());
            ctx.inputs.hashes.overrides.get(&id).copied().unwrap_or(empty_hash)
        })
        .collect();
    cache::key_of(&(
        (w.hashes, &t.source.file, t.source.document, w.policy.as_ref(), fleet_static, ctx.inputs.hashes.interpreters),
        (previous, &w.framework.name, w.framework.digest, &w.required, &w.autoscale),
        overrides_key,
        (w.directive, ctx.rollout.digest(&t.key)),
        crate::secrets::is_secret(&t.key).then_some(ctx.secrets.digest),
    ))
}

/// [`cache::KeyMemo`]'s compute: the key of a claimed template's decision, with the fleet's
/// static facts it read (its profile's confidence threshold, by its bits, and the facts for it).
fn claimed_key(
    ctx: &Context<'_>,
    fleet_statics: &mut FleetStatics,
    views: &[ClusterSnapshot],
    claimed: &Claimed<'_, '_>,
) -> (u64, (u64, u64)) {
    let confidence = claimed.framework.settings.model.min_confidence;
    let fleet_static = fleet_statics.key(views, confidence);
    let previous = cache::previous_digest(claimed.previous.as_deref());
    (decision_key(ctx, claimed, (fleet_static, previous)), (confidence.to_bits(), fleet_static))
}

/// The cached decision of `template` when its key is `key` (kept: [`cache::KeyMemo`]) and the
/// state of its clusters is the one it read (when it read capacity), or its outcome stands on
/// their changed state ([`outcome_stands_on`], with the placement and profile of the policy it
/// was claimed by, which a kept key vouches for): what [`reuse_or_decide`] reuses, found
/// without the template's claim. `None`: the caller claims the template and decides as usual.
fn reuse_kept(
    ctx: &Context<'_>,
    cache: &mut Lent<'_>,
    snapshots: &PassSnapshots,
    (template, key): (&Template, u64),
    why: &mut super::Redecided,
) -> Option<Arc<cache::CachedDecision>> {
    let workload = &template.key;
    let c = cache.own.decisions.get(workload)?;
    if c.key != key || c.unpublished || !memo::on(memo::Name::Decisions) {
        return None;
    }
    if !c.decided.reads_capacity {
        return Some(Arc::clone(c));
    }
    let (state, changed) = ctx.pass.digests.state_since(&c.clusters, &snapshots.views, &snapshots.assumed, c.state);
    if state == c.state {
        return Some(Arc::clone(c));
    }
    if !memo::on(memo::Name::OutcomeStands) {
        return None;
    }
    let policy = c.decided.record.policy.as_ref().and_then(|r| ctx.index.propagation_policy(r))?;
    let framework = ctx.profiles.for_policy(&policy.meta.annotations).unwrap_or_else(|| ctx.profiles.default_profile());
    let claim = (template, &policy.spec.placement, framework);
    let previous = cache.record.placements().get(workload).map(|p| &**p);
    let stands = outcome_stands_on(ctx, claim, (previous, None), c, (&snapshots.views, changed.as_deref()));
    if !stands.stands() {
        return None;
    }
    why.outcome_stood += 1;
    let c = cache.own.decisions.get_mut(workload)?;
    Arc::make_mut(c).stood(state, stands);
    Some(Arc::clone(c))
}

/// What a kept key is checked with in debug builds ([`debug_check_kept_key`]): the pass's
/// claim memo and fleet statics, and the member views.
#[cfg(debug_assertions)]
struct KeyCheck<'p> {
    claims: &'p mut cache::ClaimMemo,
    fleet_statics: &'p mut FleetStatics,
    views: &'p [ClusterSnapshot],
}

/// Debug builds: the key a kept key stands for, computed as a template without one computes
/// it (the template, its position, the placement of a template no policy claims), is the kept
/// one.
#[cfg(debug_assertions)]
fn debug_check_kept_key<'a>(
    ctx: &Context<'a>,
    cache: &mut Lent<'_>,
    check: KeyCheck<'_>,
    (shared, position, default_placement): (&'a Arc<Template>, SetPos<Template>, &'a Placement),
    kept: u64,
) -> Result<(), StoreError> {
    let KeyCheck { claims, fleet_statics, views } = check;
    let previous = cache.record.placements().get(&shared.key).cloned();
    let claimed = claim(ctx, (shared, position), claims, previous, Vec::new(), default_placement);
    debug_assert!(claimed.is_some(), "a kept key of {}, which no policy claims", shared.key);
    let Some(claimed) = claimed else { return Ok(()) };
    debug_assert!(lazy_pin(ctx, cache, &claimed)?.is_none(), "a kept key of {}, pinned", shared.key);
    debug_assert_eq!(claimed_key(ctx, fleet_statics, views, &claimed).0, kept, "the kept key of {}", shared.key);
    Ok(())
}

/// Reuses the cached decision of a claimed template when its key and the state of its
/// clusters match (a restored one, on a full check, only if its files are on the disk), or
/// decides it again and caches that. `renote`: decided again whatever it kept (its record
/// notes an action this pass). The decision is in the cache's decisions afterwards (returned).
fn reuse_or_decide<'a>(
    ctx: &Context<'a>,
    cache: &mut Lent<'_>,
    snapshots: &PassSnapshots,
    w: &Claimed<'a, '_>,
    (key, renote): (u64, bool),
    out: &mut Decisions,
    batch: &mut Batch<'a>,
) -> Result<Option<Arc<cache::CachedDecision>>, StoreError> {
    let t = w.template;
    let state_of =
        |clusters: &[ViewIx]| cache::clusters_state(clusters, &ctx.pass.digests, &snapshots.views, &snapshots.assumed);
    let why = &mut out.redecided;
    let mut cached = cache.own.decisions.get(&t.key).cloned();
    // The state of its clusters, and the verdicts, when a decision that read it stands on a
    // changed state.
    let mut restate = None;
    let mut hit = match cached.as_deref() {
        None => {
            why.new += 1;
            false
        }
        Some(_) if renote => {
            why.noted += 1;
            false
        }
        Some(_) if !memo::on(memo::Name::Decisions) => {
            why.memo_off += 1;
            false
        }
        Some(c) if c.key != key || c.unpublished => {
            why.inputs += 1;
            false
        }
        // Capacity is all the state of the feasible clusters a decision reads beyond the
        // static facts its key covers: when its outcome did not read it, it stands; when it
        // did, it stands while what it read of them is the same.
        Some(c) if c.decided.reads_capacity => {
            match ctx.pass.digests.state_since(&c.clusters, &snapshots.views, &snapshots.assumed, c.state) {
                (state, _) if state == c.state => true,
                _ if !memo::on(memo::Name::OutcomeStands) => {
                    why.memo_off += 1;
                    false
                }
                (state, changed) => match capacity_stands(ctx, w, c, &snapshots.views, changed.as_deref()) {
                    stands @ (Stands::Held | Stands::On(_)) => {
                        why.outcome_stood += 1;
                        restate = Some((state, stands));
                        true
                    }
                    Stands::No => {
                        why.capacity += 1;
                        false
                    }
                },
            }
        }
        Some(_) => true,
    };
    if let Some((state, stands)) = restate
        && let Some(c) = cache.own.decisions.get_mut(&t.key)
    {
        drop(cached);
        Arc::make_mut(c).stood(state, stands);
        cached = Some(Arc::clone(c));
    }
    if hit && !ctx.full_check {
        return Ok(cached);
    }
    // (No second reference while the full check may change the decision in place.)
    drop(cached);
    // A decision restored from the store holds its files by hash only: a full check reads
    // them from the disk, and decides again when one is missing or differs.
    if hit
        && ctx.full_check
        && let Some(c) = cache.own.decisions.get_mut(&t.key).filter(|c| !c.rendered).map(Arc::make_mut)
    {
        if c.on_disk.is_none() {
            let check = c.check_files(ctx.output_dir);
            c.checked(check);
        }
        match c.on_disk.take().unwrap_or(false) {
            true => {
                c.decided.inputs =
                    decision_inputs(w.previous.as_deref(), w.hashes, ctx.pass.versions, &w.framework.name)
            }
            false => {
                out.redecided.files += 1;
                hit = false
            }
        }
    }
    if hit {
        return Ok(cache.own.decisions.get(&t.key).cloned());
    }
    note_blobs(ctx, cache, w, &mut batch.blobs);
    let (decided, render) = decide(ctx, w, &snapshots.views);
    batch.renders.extend(render);
    out.decided += 1;
    out.schedule_time += decided.schedule_time;
    out.schedule_cpu += decided.schedule_cpu;
    // The clusters whose state the decision read: those that passed the filters (all of
    // them when ordered affinity terms may have been tried in turn).
    let clusters: Vec<ViewIx> = if w.placement.cluster_affinities.is_empty() {
        let mut c: Vec<ViewIx> = decided
            .record
            .result
            .feasible_clusters()
            .into_iter()
            .filter_map(|n| ctx.pass.positions.get(n).copied())
            .collect();
        c.sort_unstable();
        c
    } else {
        ViewIx::all(snapshots.views.len()).collect()
    };
    let state = state_of(&clusters);
    let entry = cache::CachedDecision {
        key,
        clusters,
        state,
        decided,
        stood_on: None,
        summary_item: None,
        rendered: true,
        persisted_seq: None,
        unpublished: false,
        on_disk: None,
        stats: Vec::new(),
        same_targets: cache::SameTargets::default(),
        origin: None,
    };
    let entry = Arc::new(entry);
    if let Some(old) = cache.own.decisions.insert(t.key.clone(), Arc::clone(&entry)) {
        out.replaced.push(Replaced::of(&old.decided));
    }
    out.fresh.insert(t.key.clone());
    Ok(Some(entry))
}

/// Whether the cached decision `c` of `w`, which read its feasible clusters' capacity, stands
/// although their state changed (this pass's deductions, new figures): its key is `w`'s (the
/// request, previous placement, directive and the fleet's static facts, hence its filters, are
/// the same), and its feasible clusters' verdicts computed again on the current views give its
/// outcome again ([`schedule::outcome_stands`]). A replica more or less deducted from a cluster
/// then decides again, renders and records only the workloads whose placement it moves; the
/// others keep the figures they were made with. Debug builds schedule it again and compare.
fn capacity_stands(
    ctx: &Context<'_>,
    w: &Claimed<'_, '_>,
    c: &cache::CachedDecision,
    views: &[ClusterSnapshot],
    changed: Option<&[HeldIx]>,
) -> Stands {
    if !w.required.is_empty() || w.policy.is_none() {
        return Stands::No;
    }
    let claim = (w.template, w.placement, w.framework);
    outcome_stands_on(ctx, claim, (w.previous.as_deref(), w.directive), c, (views, changed))
}

/// [`capacity_stands`] of a template claimed with `placement` and `framework` and placed as
/// `previous`, under `directive`.
fn outcome_stands_on(
    ctx: &Context<'_>,
    (t, placement, framework): (&Template, &Placement, &Framework),
    (previous, directive): (Option<&PlacementRecord>, Option<&Directive>),
    c: &cache::CachedDecision,
    (views, changed): (&[ClusterSnapshot], Option<&[HeldIx]>),
) -> Stands {
    if !c.decided.scheduled {
        return Stands::No;
    }
    // As this process read the template when it decided it, else read again.
    let workload = match &c.decided.workload {
        Some(w) => Arc::clone(w),
        None => match interpret(t.key.group(), &t.key.kind, &t.object, &ctx.inputs.interpreters) {
            Ok(w) => Arc::new(w),
            Err(_) => return Stands::No,
        },
    };
    debug_assert!(
        interpret(t.key.group(), &t.key.kind, &t.object, &ctx.inputs.interpreters).ok().as_ref() == Some(&*workload),
        "{}: the kept reading of the template differs from a fresh one",
        t.key
    );
    let (previous, previous_affinity) = previous_for(previous, directive);
    let req = schedule_request(t, &workload, placement, (&previous, previous_affinity.as_deref()), directive);
    let stands = schedule::outcome_stands(
        &ctx.pass.fleet,
        framework,
        &req,
        views,
        (c.held(), &c.decided.record.result.outcome),
        (Some(&c.clusters), changed),
    );
    #[cfg(debug_assertions)]
    if stands.stands() {
        let (again, _) = schedule::schedule_reads(&ctx.pass.fleet, framework, &req, views);
        debug_assert_eq!(
            again.outcome, c.decided.record.result.outcome,
            "{}: the outcome stood on the verdicts, not when scheduled again",
            t.key
        );
    }
    stands
}

/// The scheduler's request for template `t` read as `workload`, claimed with `placement`, from
/// its previous placement (as [`previous_for`] gives it) under `directive`.
fn schedule_request<'r>(
    t: &'r Template,
    workload: &'r Workload,
    placement: &'r Placement,
    (previous, previous_affinity): (&'r BTreeMap<String, i32>, Option<&'r str>),
    directive: Option<&'r Directive>,
) -> ScheduleRequest<'r> {
    ScheduleRequest {
        key: &t.key,
        uid: t.meta.uid.as_deref(),
        workload,
        placement,
        previous,
        previous_affinity,
        failover: directive.map_or(&schedule::NO_FAILOVER, |d| &d.failover),
    }
}

/// What the pass's fresh decisions leave to do in one batch after the last of them: render
/// their files ([`render_all`]) and store the blobs their records will name ([`put_blobs`]).
#[derive(Default)]
struct Batch<'a> {
    renders: Vec<RenderJob<'a>>,
    blobs: Vec<Blob<'a>>,
}

/// A blob a decision's history record names by hash: the template's object or the policy's
/// spec (`None`: no policy, the empty blob).
enum Blob<'a> {
    Template(&'a serde_json::Value),
    Policy(Option<&'a crate::policy::types::PropagationSpec>),
}

/// Notes the template's and the policy's JSON as blobs to store, once per content in this
/// process (the set of stored hashes is the cache's, dropped with it when a pass fails).
fn note_blobs<'a>(ctx: &Context<'a>, cache: &mut Lent<'_>, w: &Claimed<'a, '_>, blobs: &mut Vec<Blob<'a>>) {
    let (template_hash, policy_hash) = w.hashes;
    if cache.record.note_blob(template_hash) {
        blobs.push(Blob::Template(&w.template.object));
    }
    if cache.record.note_blob(policy_hash) {
        let spec = w.policy.as_ref().and_then(|r| ctx.index.propagation_policy(r)).map(|p| &p.spec);
        blobs.push(Blob::Policy(spec));
    }
}

/// Stores the noted blobs, serialised and written on every core (a first pass stores 10,000
/// templates), before any record that names them is written (the record stage).
fn put_blobs(store: &Store, blobs: &[Blob<'_>]) -> Result<(), StoreError> {
    let stored = crate::util::threads::map_ordered(blobs, crate::util::threads::workers(), |b| {
        let json = match b {
            // A Secret's data is not stored: its object redacted, under the hash of the whole.
            Blob::Template(object) if crate::secrets::is_secret_document(object) => {
                let hash = fnv1a64(&serde_json::to_vec(object).unwrap_or_default());
                let redacted = serde_json::to_vec(&crate::secrets::redact(object)).unwrap_or_default();
                return store.put_blob_at(hash, &redacted);
            }
            Blob::Template(object) => serde_json::to_vec(object).unwrap_or_default(),
            Blob::Policy(spec) => spec.map(|s| serde_json::to_vec(s).unwrap_or_default()).unwrap_or_default(),
        };
        store.put_blob(&json)
    });
    stored.into_iter().try_for_each(|r| r.map(|_| ()))
}

/// Schedules one claimed template over the pass's member views, and says what rendering its
/// files takes (the pass renders every decision's files in one batch: [`render_all`]). A
/// workload with no policy ([`Claimed::policy`] `None`) is a dependency no policy claims: it
/// goes where [`Claimed::required`] — its dependents and their clusters — sends it.
fn decide<'a>(
    ctx: &Context<'a>,
    w: &Claimed<'a, '_>,
    snapshots: &[ClusterSnapshot],
) -> (Decided, Option<RenderJob<'a>>) {
    let (t, policy_ref, placement, fw) = (w.template, w.policy.as_ref(), w.placement, w.framework);
    let (prev, required) = (w.previous.as_deref(), &w.required[..]);
    let (template_hash, policy_hash) = w.hashes;
    let (inputs, pass) = (ctx.inputs, ctx.pass);
    let (previous, previous_affinity) = previous_for(prev, w.directive);
    let dec_inputs = decision_inputs(prev, (template_hash, policy_hash), pass.versions, &fw.name);
    let keep_previous = |reason: String, result: ScheduleResult| -> Decided {
        let mut keep: Vec<(String, String)> =
            prev.map(|p| p.files.iter().map(|(c, f)| (c.clone(), f.clone())).collect()).unwrap_or_default();
        // The files graceful eviction keeps on the clusters the workload left stay too (a
        // workload evicted from its last member keeps its previous placement and those).
        if let Some(d) = w.directive {
            let path = render::object_path(&t.key);
            for c in d.kept.iter().chain(&d.returning) {
                if !keep.iter().any(|(k, _)| k == c) {
                    keep.push((c.clone(), path.clone()));
                }
            }
        }
        Decided {
            record: PlacementRecord {
                workload: t.key.clone(),
                policy: policy_ref.cloned(),
                result,
                targets: prev.map(|p| p.targets.clone()).unwrap_or_default(),
                affinity_name: previous_affinity.clone(),
                files: prev.map(|p| p.files.clone()).unwrap_or_default(),
                history_seq: 0,
                decided_at_ms: 0,
            },
            inputs: dec_inputs.clone(),
            files: Vec::new(),
            file_hashes: Vec::new(),
            keep,
            problems: vec![Problem { workload: t.key.clone(), cluster: None, reason }],
            scheduled: false,
            stored_requirements: None,
            workload: None,
            reads_capacity: false,
            schedule_time: Duration::ZERO,
            schedule_cpu: Duration::ZERO,
        }
    };

    let workload: Arc<Workload> = match interpret(t.key.group(), &t.key.kind, &t.object, &inputs.interpreters) {
        Ok(w) => Arc::new(w),
        Err(e) => {
            let reason = format!("cannot read the workload: {e}");
            let result = ScheduleResult::unschedulable(reason.clone());
            return (keep_previous(reason, result), None);
        }
    };
    let req = schedule_request(t, &workload, placement, (&previous, previous_affinity.as_deref()), w.directive);
    let scheduling = Instant::now();
    // The CPU of the split estimates' runs on other threads counted too.
    let scheduling_cpu = crate::util::threads::cpu_with_helpers();
    let (mut result, reads_capacity) = match policy_ref {
        Some(_) => schedule::schedule_reads(&pass.fleet, fw, &req, snapshots),
        None => (attached(&pass.fleet), false),
    };
    let schedule_time = scheduling.elapsed();
    let schedule_cpu = crate::util::threads::cpu_with_helpers().saturating_sub(scheduling_cpu);
    let mut targets = match &result.outcome {
        Outcome::Scheduled { targets } => targets.clone(),
        Outcome::Unschedulable { reason } => {
            let reason = reason.clone();
            let kept = Decided { schedule_time, schedule_cpu, reads_capacity, ..keep_previous(reason, result) };
            // Its files stay as they are, but on a member whose task ended this pass (a shrink
            // hand-over kept a file that is not the placement's there) the placement's file.
            let released = prev.zip(w.directive).map(|(p, d)| released_on(p, d)).filter(|r| !r.is_empty());
            let job = prev
                .zip(released)
                .zip(policy_ref)
                .map(|((p, only), policy)| render_job(ctx, w, workload, (p.targets.clone(), Some(only)), policy));
            return (kept, job);
        }
    };
    // propagateDeps: the union with the clusters of the workloads that need this object.
    if !required.is_empty() {
        add_required(&mut result, &mut targets, required, &pass.fleet);
    }
    let Some(render_policy) = policy_ref.or_else(|| required.first().map(|(_, _, p)| p)) else {
        let result = ScheduleResult::unschedulable("not claimed by a policy");
        return (keep_previous("not claimed by a policy".into(), result), None);
    };
    let job = render_job(ctx, w, workload, (targets.clone(), None), render_policy);
    let decided = Decided {
        record: PlacementRecord {
            workload: t.key.clone(),
            policy: policy_ref.cloned(),
            affinity_name: result.affinity_name.clone(),
            result,
            targets,
            // The files come from the render batch ([`RenderedFiles::into_decided`]).
            files: BTreeMap::new(),
            history_seq: 0,
            decided_at_ms: 0,
        },
        inputs: dec_inputs,
        files: Vec::new(),
        file_hashes: Vec::new(),
        keep: Vec::new(),
        problems: Vec::new(),
        scheduled: true,
        stored_requirements: None,
        workload: Some(Arc::clone(&job.workload)),
        reads_capacity,
        schedule_time,
        schedule_cpu,
    };
    (decided, Some(job))
}

/// The members of `prev` whose task ended this pass ([`Directive::released`]) and that it
/// places replicas on: a decision that keeps its previous placement writes the placement's
/// file there (a shrink hand-over kept an older one), and keeps the others as they are.
fn released_on(prev: &PlacementRecord, d: &Directive) -> BTreeSet<String> {
    d.released.iter().filter(|c| places(&prev.targets, c)).cloned().collect()
}

/// The render of `w`'s files on `targets` (`only`: of those clusters alone, the others' files
/// kept as they are: a decision that keeps its previous placement, [`released_on`]), by
/// `render_policy`.
fn render_job<'a>(
    ctx: &Context<'a>,
    w: &Claimed<'a, '_>,
    workload: Arc<Workload>,
    (targets, only): (BTreeMap<String, Option<i32>>, Option<BTreeSet<String>>),
    render_policy: &PolicyRef,
) -> RenderJob<'a> {
    let t = w.template;
    let render_spec = w.spec.or_else(|| ctx.index.propagation_policy(render_policy).map(|p| &p.spec));
    // Job completions follow the division of parallelism.
    let completions: BTreeMap<String, i32> = match workload.completions {
        Some(c) if Strategy::of(w.placement) != Strategy::Duplicated => {
            let par: BTreeMap<String, i32> = targets.iter().filter_map(|(k, v)| v.map(|v| (k.clone(), v))).collect();
            assign::split_completions(c, &par, assign::TieBreak::for_uid(t.meta.uid.as_deref()))
        }
        _ => BTreeMap::new(),
    };
    RenderJob {
        template: t,
        targets,
        only,
        completions,
        policy: render_policy.clone(),
        overrides: w.overrides.clone(),
        preserve_on_deletion: render_spec.and_then(|s| s.preserve_resources_on_deletion) == Some(true),
        suspension: render_spec.and_then(|s| s.suspension.clone()),
        previous: w.previous.clone(),
        directive: w.directive,
        hpa_read_fields: match (&w.autoscale, &*workload) {
            (
                Autoscale::OwnedByHpa,
                Workload { replicas: Some(r), replica_path: None, revision: None, multi_template: false, .. },
            ) => crate::model::autoscaling::read_fields(&ctx.inputs.interpreters, &t.object, *r),
            _ => Vec::new(),
        },
        autoscale: w.autoscale.clone(),
        rollout: ctx.rollout.directives.get(&t.key),
        workload,
    }
}

/// Renders the batch ([`render_all`]) with what Secrets need: the encrypted files kept so far
/// (read from the store when a pass first encrypts), and the new ones noted in memory and in
/// the store.
fn render_batch(
    ctx: &Context<'_>,
    sealed: &mut crate::secrets::SealedFiles,
    renders: &[RenderJob<'_>],
    views: &[ClusterSnapshot],
) -> Result<Vec<RenderedFiles>, StoreError> {
    let sealing = ctx.secrets.mode == Some(crate::secrets::Mode::Sops)
        && renders.iter().any(|j| crate::secrets::is_secret(&j.template.key));
    if sealing && !sealed.is_loaded() {
        *sealed = crate::secrets::SealedFiles::new(ctx.store.sealing_key()?, ctx.store.sealed_entries()?);
    }
    let secrets = crate::secrets::SecretsPass {
        mode: ctx.secrets.mode,
        recipients: &ctx.secrets.recipients,
        sealed,
        output_dir: ctx.output_dir,
        lastmodified: crate::secrets::SecretsPass::lastmodified(ctx.secrets.now_ms),
    };
    let mut rendered = render_all(renders, views, &ctx.pass.positions, &secrets);
    let new: Vec<(String, String, crate::secrets::Sealed)> =
        rendered.iter_mut().flat_map(|files| std::mem::take(&mut files.sealed)).collect();
    let stored: Vec<crate::store::SealedEntry> =
        new.iter().map(|(c, p, s)| ((c.clone(), p.clone()), (s.fingerprint, s.hash))).collect();
    ctx.store.put_sealed(&stored, &[])?;
    for (cluster, path, s) in new {
        sealed.insert(cluster, path, s);
    }
    Ok(rendered)
}

/// What rendering one decision's files takes, handed from [`decide`] to [`render_all`].
struct RenderJob<'a> {
    template: &'a Template,
    workload: Arc<Workload>,
    targets: BTreeMap<String, Option<i32>>,
    /// A decision that keeps its previous placement (`targets`): only these clusters' files
    /// are rendered, the others stay as they are ([`released_on`]).
    only: Option<BTreeSet<String>>,
    /// Job completions per cluster (empty: not divided).
    completions: BTreeMap<String, i32>,
    /// The policy the files name (the claimer, or a dependent's for an unclaimed dependency).
    policy: PolicyRef,
    overrides: Vec<render::ApplicableOverride<'a>>,
    preserve_on_deletion: bool,
    suspension: Option<crate::policy::types::Suspension>,
    previous: Option<Arc<PlacementRecord>>,
    directive: Option<&'a Directive>,
    autoscale: Autoscale,
    /// Owned by a member HPA, a kind whose replicas only a `replicaResource` script reads:
    /// the fields it reads them from ([`crate::model::autoscaling::read_fields`]).
    hpa_read_fields: Vec<String>,
    /// A rollout under way: the clusters not in `new_on` get the previous version.
    rollout: Option<&'a super::rollout::RolloutDirective>,
}

/// Renders every job's files, on [`crate::util::threads::workers`] threads when there are
/// enough files to share; the answers are in the jobs' order whatever the thread count (each
/// job is rendered by one thread, alone, from shared read-only inputs).
fn render_all(
    jobs: &[RenderJob<'_>],
    views: &[ClusterSnapshot],
    positions: &std::collections::HashMap<String, ViewIx>,
    secrets: &crate::secrets::SecretsPass<'_>,
) -> Vec<RenderedFiles> {
    /// Files per thread below which another thread costs more than it saves.
    const FILES_PER_THREAD: usize = 64;
    let files: usize = jobs.iter().map(|j| j.targets.len()).sum();
    let threads = crate::util::threads::workers().min(files / FILES_PER_THREAD);
    crate::util::threads::map_ordered(jobs, threads, |job| job.render(views, positions, secrets))
}

/// One decision's rendered files, before they go into its [`Decided`].
#[derive(Default)]
struct RenderedFiles {
    files: Vec<(String, (String, String))>,
    hashes: Vec<u64>,
    keep: Vec<(String, String)>,
    map: BTreeMap<String, String>,
    problems: Vec<Problem>,
    /// The Secret files encrypted (or whose encryption was kept) for each cluster.
    sealed: Vec<(String, String, crate::secrets::Sealed)>,
}

impl RenderedFiles {
    /// Karmada's `suspension.dispatching` / `dispatchingOnClusters`: on every suspended
    /// cluster the workload's files stay exactly as the previous decision left them (none
    /// written, changed or removed; a cluster it had no file on gets none) until the policy
    /// resumes it. The decision itself (targets, replicas) is still made and recorded.
    fn suspend(&mut self, suspension: &crate::policy::types::Suspension, prev: Option<&PlacementRecord>) {
        let mut clusters: BTreeSet<String> = self.map.keys().cloned().collect();
        clusters.extend(prev.into_iter().flat_map(|p| p.files.keys().cloned()));
        for cluster in clusters.into_iter().filter(|c| suspension.suspends(c)) {
            self.hold(&cluster, prev);
        }
    }

    /// The workload's file on `cluster` stays exactly as the previous decision left it (none
    /// written, changed or removed; none where it had none): suspension, and a member a move
    /// shrinks on while it hands over.
    fn hold(&mut self, cluster: &str, prev: Option<&PlacementRecord>) {
        let mut i = 0;
        while i < self.files.len() {
            if self.files[i].0 == cluster {
                self.files.remove(i);
                self.hashes.remove(i);
            } else {
                i += 1;
            }
        }
        self.keep.retain(|(c, _)| c != cluster);
        self.map.remove(cluster);
        if let Some(old) = prev.and_then(|p| p.files.get(cluster)) {
            self.keep.push((cluster.to_string(), old.clone()));
            self.map.insert(cluster.to_string(), old.clone());
        }
    }

    fn into_decided(self, d: &mut Decided) {
        d.record.files = self.map;
        d.files = self.files;
        d.file_hashes = self.hashes;
        d.keep = self.keep;
        // After the decision's own (an Unschedulable one's reason).
        d.problems.extend(self.problems);
    }
}

impl RenderJob<'_> {
    /// The files on every target cluster (a cluster that fails keeps its previous file), then
    /// suspension and graceful eviction's kept files.
    fn render(
        &self,
        views: &[ClusterSnapshot],
        positions: &std::collections::HashMap<String, ViewIx>,
        secrets: &crate::secrets::SecretsPass<'_>,
    ) -> RenderedFiles {
        use crate::secrets::SecretFile;
        let t = self.template;
        let secret = crate::secrets::is_secret(&t.key);
        let prev = self.previous.as_deref();
        let path = render::object_path(&t.key);
        let mut out = RenderedFiles::default();
        for (cluster, replicas) in &self.targets {
            let Some(snapshot) = positions.get(cluster).and_then(|i| i.of(views)) else { continue };
            let hpa_bounds = match &self.autoscale {
                // An HPA goes only where its target has replicas.
                Autoscale::Bounds(b) => match b.get(cluster) {
                    Some(b) => Some(*b),
                    None => continue,
                },
                _ => None,
            };
            // A rollout under way: the version this cluster's stage has reached.
            let template = match self.rollout {
                Some(r) if !r.new_on.contains(cluster) => match &r.kept {
                    Some((kept, on)) if on.contains(cluster) => &**kept,
                    _ => &*r.stable,
                },
                Some(r) => r.target.as_deref().unwrap_or(t),
                _ => t,
            };
            let input = RenderInput {
                replicas_owned_by_hpa: self.autoscale == Autoscale::OwnedByHpa,
                hpa_read_fields: &self.hpa_read_fields,
                hpa_bounds,
                template,
                workload: &self.workload,
                policy: &self.policy,
                replicas: *replicas,
                completions: match self.workload.completions {
                    Some(c) if self.completions.is_empty() => Some(c),
                    Some(_) => Some(self.completions.get(cluster).copied().unwrap_or(0)),
                    None => None,
                },
                cluster: snapshot,
                overrides: &self.overrides,
                preserve_on_deletion: self.preserve_on_deletion,
            };
            let file = match secret {
                // A Secret as `[secrets]` says: encrypted, left out, clear text or refused.
                true => render::manifest(&input).map_err(|e| e.to_string()).and_then(|m| {
                    let plain = format!("{}\n{}", render::GENERATED_HEADER, render::yaml::to_yaml(&m));
                    secrets.file(cluster, &path, &m, plain)
                }),
                false => render::render(&input)
                    .map(|content| SecretFile::Write { content, sealed: None })
                    .map_err(|e| e.to_string()),
            };
            match file {
                Ok(SecretFile::Omit) => {}
                Ok(SecretFile::Write { content, sealed }) => {
                    if let Some(s) = sealed {
                        out.sealed.push((cluster.clone(), path.clone(), s));
                    }
                    out.hashes.push(fnv1a64(content.as_bytes()));
                    out.files.push((cluster.clone(), (path.clone(), content)));
                    out.map.insert(cluster.clone(), path.clone());
                }
                Err(reason) => {
                    if let Some(old) = prev.and_then(|p| p.files.get(cluster)) {
                        out.keep.push((cluster.clone(), old.clone()));
                        out.map.insert(cluster.clone(), old.clone());
                    }
                    out.problems.push(Problem { workload: t.key.clone(), cluster: Some(cluster.clone()), reason });
                }
            }
        }
        if let Some(suspension) = &self.suspension {
            out.suspend(suspension, prev);
        }
        if let Some(only) = &self.only {
            let clusters = self.targets.keys().chain(prev.into_iter().flat_map(|p| p.files.keys()));
            let held: BTreeSet<&String> = clusters.filter(|c| !only.contains(*c)).collect();
            for c in held {
                out.hold(c, prev);
            }
        }
        // Make before break: the files on the clusters it left stay until purged (graceful
        // eviction, a hand-over), and those on the clusters it shrinks on stay as they are
        // until the hand-over ends; a decision that hands over (a move decided afresh, a
        // failover's, one with a member that rejoins, any that would leave nothing Ready)
        // does from this pass on (`stability::handing_over`).
        let handover = match prev {
            Some(p) => {
                let ready = |c: &str| {
                    let snapshot = positions.get(c).and_then(|i| i.of(views));
                    super::stability::observed_ready(&t.key, snapshot)
                };
                super::stability::handing_over(self.directive, &p.targets, &self.targets, ready)
            }
            None => BTreeMap::new(),
        };
        let none = BTreeSet::new();
        let (tasks, returns) = self.directive.map_or((&none, &none), |d| (&d.kept, &d.returning));
        // A move-back that places nothing on the member it returns to keeps the files its
        // eviction kept there (the engine gives the task back: `settle_move_backs`).
        let returning = returns.iter().filter(|c| !places(&self.targets, c));
        let kept: BTreeSet<&String> = tasks.iter().chain(handover.keys()).chain(returning).collect();
        for c in kept {
            match self.targets.contains_key(c) {
                true => {
                    out.hold(c, prev);
                    // A file an earlier task keeps there (not the previous placement's: it
                    // had left the member) stays as it is too.
                    if (tasks.contains(c) || returns.contains(c)) && !out.map.contains_key(c) {
                        out.keep.push((c.clone(), path.clone()));
                        out.map.insert(c.clone(), path.clone());
                    }
                }
                false => out.keep.push((c.clone(), path.clone())),
            }
        }
        out
    }
}

/// Whether `targets` puts replicas on `cluster` (a move-back to it is one).
pub(crate) fn places(targets: &BTreeMap<String, Option<i32>>, cluster: &str) -> bool {
    matches!(targets.get(cluster), Some(Some(r)) if *r > 0)
}

/// The previous placement a decision starts from and its affinity term: without the clusters
/// failover evicted the workload from (Karmada takes them out of `spec.clusters`), capped where
/// a cluster's capacity is distrusted (the descheduler lowers them), and nothing at all for a
/// fresh decision (a move-back decides as a first schedule, so the policy's preference rules).
fn previous_for(
    prev: Option<&PlacementRecord>,
    directive: Option<&Directive>,
) -> (BTreeMap<String, i32>, Option<String>) {
    let mut previous: BTreeMap<String, i32> =
        prev.map(|p| p.targets.iter().map(|(k, v)| (k.clone(), v.unwrap_or(0))).collect()).unwrap_or_default();
    let affinity = prev.and_then(|p| p.affinity_name.clone());
    if let Some(d) = directive {
        if d.fresh {
            return (BTreeMap::new(), None);
        }
        previous.retain(|c, _| !d.failover.evicted.contains(c));
        for (c, cap) in &d.failover.caps {
            if let Some(r) = previous.get_mut(c) {
                *r = (*r).min(*cap);
            }
        }
    }
    (previous, affinity)
}

/// One workload's decision and rendered files (kept by the [`cache`] between passes).
#[derive(Clone)]
pub(crate) struct Decided {
    pub(super) record: PlacementRecord,
    pub(super) inputs: DecisionInputs,
    pub(super) files: Vec<(String, (String, String))>,
    /// FNV-1a 64 of each file's content, in the order of `files`.
    pub(super) file_hashes: Vec<u64>,
    pub(super) keep: Vec<(String, String)>,
    pub(super) problems: Vec<Problem>,
    pub(super) scheduled: bool,
    /// Per-replica requirements of a scheduled workload restored from the store (a decision
    /// of this process has them in `workload`): [`Decided::requirements`].
    stored_requirements: Option<ReplicaRequirements>,
    /// The template as the interpreters read it when this process decided it (`None`:
    /// restored from the store, or not read): its per-replica requirements, and what a check
    /// whether its outcome stands on changed capacity schedules again, instead of
    /// interpreting the template again (the decision's key covers the template and the
    /// interpreters).
    pub(super) workload: Option<Arc<Workload>>,
    /// Whether its outcome read the feasible clusters' capacity ([`schedule::schedule_reads`]):
    /// when not, a change of their capacity alone does not decide it again. A decision
    /// restored from the store has it as it was decided (one stored by an older version counts
    /// as reading it).
    pub(super) reads_capacity: bool,
    pub(super) schedule_time: Duration,
    pub(super) schedule_cpu: Duration,
}

impl Decided {
    /// Per-replica requirements of a scheduled workload with replicas (for assumed replicas).
    pub(super) fn requirements(&self) -> Option<&ReplicaRequirements> {
        match &self.workload {
            Some(w) => w.replicas.is_some().then_some(&w.requirements),
            None => self.stored_requirements.as_ref(),
        }
    }

    /// A decision restored from the store ([`cache::CachedDecision::restored`]): the record is
    /// the stored placement as a fresh decision gives it (no history seq, no time); the
    /// inputs are set when it is reused.
    pub(crate) fn restored(
        placement: &PlacementRecord,
        files: Vec<(String, (String, String))>,
        file_hashes: Vec<u64>,
        keep: Vec<(String, String)>,
        problems: Vec<Problem>,
        (scheduled, requirements, reads_capacity): (bool, Option<ReplicaRequirements>, bool),
    ) -> Self {
        let record = PlacementRecord { history_seq: 0, decided_at_ms: 0, ..placement.clone() };
        let inputs = decision_inputs(None, (0, 0), 0, "");
        Decided {
            record,
            inputs,
            files,
            file_hashes,
            keep,
            problems,
            scheduled,
            stored_requirements: requirements,
            workload: None,
            reads_capacity,
            schedule_time: Duration::ZERO,
            schedule_cpu: Duration::ZERO,
        }
    }
}

/// The inputs a decision records: template and policy blob hashes, the pass's versions map,
/// the previous targets and affinity term, the profile.
pub(super) fn decision_inputs(
    prev: Option<&PlacementRecord>,
    (template_hash, policy_hash): (u64, u64),
    snapshot_versions: u64,
    profile: &str,
) -> DecisionInputs {
    DecisionInputs {
        template_hash,
        policy_hash,
        snapshot_versions,
        previous: prev
            .map(|p| p.targets.iter().map(|(k, v)| (k.clone(), v.unwrap_or(0))).collect())
            .unwrap_or_default(),
        previous_affinity: prev.and_then(|p| p.affinity_name.clone()),
        profile: profile.to_string(),
        // Set by the record stage (the pass's stability state).
        stability: 0,
    }
}
