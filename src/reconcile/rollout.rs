//! Stage "rollout", before decide (issue 52): for each template a `RolloutPolicy` selects
//! ([`crate::policy::matching::rollout_policy_for`]), its stored [`RolloutState`] is brought up
//! to date — a new content starts (or supersedes) a rollout, the gated stage's clusters are
//! observed and the pure engine ([`crate::schedule::rollout::step`]) passes, halts or rolls
//! back — and, while a rollout is under way, the decide stage gets a [`RolloutDirective`]: the
//! previous version's template and the clusters that run the new one. Every other cluster's
//! file is rendered from the previous version (with this pass's placement: scheduling goes on,
//! and a cluster a failover adds gets the version its stage has reached — the previous one
//! unless its stage passed). The directive's digest is part of the decision key, so a stage
//! that passes decides the workload again.
//!
//! What a member shows ([`ClusterHealth`], [`observe`]), from its latest snapshot, polled
//! after the stage's release: the workload's object on the member, when the poller read it
//! ([`RolloutPass::objects`] asks for the gated stage's members, nothing while no rollout is
//! under way): not the new version while its `metadata.generation` is not above the one read
//! at the release ([`RolloutState::generations`]) — a release whose members were last polled
//! before it was due is held one poll round for that read ([`Reads`],
//! [`RolloutState::held`]) —, then rolled out as `kubectl rollout status` judges
//! ([`crate::model::ObjectStatus::rolled_out`]); and the workload's pods (its owner's,
//! [`Owner::state`], as `fedsched status` reads them): Healthy when every desired replica is
//! Ready and no other pod is left; Failed when a pod crash-loops or cannot pull or run its
//! image. An offline or unreachable member, or a kind whose pods are not attributed and whose
//! object was not read, is not observed.
//!
//! The states are stored by the record stage ([`RolloutPass::changed`]), so a preview stores
//! nothing; a restart reads them back and continues. Each state's course is also published
//! with the placements, in the summary's shards ([`RolloutSummary`],
//! [`crate::render::summary::rollout_item`]): a standby stores no state, and a takeover adopts
//! the courses from there ([`super::adopt_published`]) and continues. Templates that no
//! RolloutPolicy selects cost one check of an empty list per pass.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::model::AgentVerdict;
use crate::model::assumed::Owner;
use crate::model::{ClusterSnapshot, Health, RolledOut, SnapshotSource};
use crate::policy::matching::{ClusterFacts, rollout_policy_for};
use crate::policy::{ObjectKey, Template};
use crate::render::summary::{Shard, rollout_item, shard_of};
use crate::schedule::rollout::{
    ClusterHealth, GITOPS_AGENT_ANNOTATION, KeptVersion, MemberObserved, Phase, RolloutState, Transition, agent_object,
    partition, step,
};
use crate::store::{Store, StoreError};
use crate::util::hash::fnv1a64;

use super::{Inputs, cache};

/// Pod reasons that mean the new version does not run (the container crash-loops, its image
/// cannot be pulled, or it cannot be created).
pub const FAILING_REASONS: [&str; 6] = [
    "CrashLoopBackOff",
    "Error",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "RunContainerError",
];

/// What the decide stage renders differently for one workload while its rollout is under way.
#[derive(Debug, Clone)]
pub(crate) struct RolloutDirective {
    /// The previous version: the template with the stored object of the last completed version.
    pub stable: Arc<Template>,
    /// The new version, when it is not the template's content (another version waits for
    /// this rollout, `onNewVersion: Queue`); `None`: the template.
    pub target: Option<Arc<Template>>,
    /// The version the members of a stage whose release is held keep, where it is not
    /// `stable` (a superseded rollout's), and those members ([`RolloutState::held`]).
    pub kept: Option<(Arc<Template>, BTreeSet<String>)>,
    /// The clusters that run the new version (every other one runs `stable`, or `kept`).
    pub new_on: BTreeSet<String>,
    /// Part of the decision key.
    pub digest: u64,
}

/// What the rollout stage hands over.
#[derive(Default)]
pub(crate) struct RolloutPass {
    pub directives: BTreeMap<ObjectKey, RolloutDirective>,
    /// States that changed this pass (stored by the record stage), by workload.
    pub changed: BTreeMap<ObjectKey, RolloutState>,
    /// Workloads no RolloutPolicy selects any more, by store key: their states are forgotten.
    pub forgotten: Vec<String>,
    /// This pass's transitions, as history notes of their workloads.
    pub notes: BTreeMap<ObjectKey, Vec<String>>,
    /// The workload objects the poller reads on each member for the next pass
    /// ([`crate::members::live::Poller::want_objects`]): per rollout under way, the clusters of
    /// the stage gated, or of the stage whose release is held until they are read; none else.
    pub objects: BTreeMap<String, Vec<ObjectKey>>,
    /// Templates the stage looked at this pass (0 when no RolloutPolicy exists and no
    /// rollout is stored: the stage's whole cost is then one check of two empty lists).
    pub examined: usize,
    /// The summary's rollout entries of this pass.
    pub summary: RolloutSummary,
}

/// The rollouts' entries of the summary's shards ([`crate::render::summary::rollout_item`]):
/// what a takeover adopts. Each is built again only when its course changed.
#[derive(Default, Clone)]
pub(crate) struct RolloutSummary {
    /// Every rollout's entry, with its shard, by workload store key.
    pub items: Arc<BTreeMap<String, (Shard, Arc<str>)>>,
}

impl RolloutPass {
    /// Whether the stage has something for a workload this pass (a rollout under way, or a
    /// state that changed): its decision key is computed, never kept from a pass before.
    pub fn touches(&self, key: &ObjectKey) -> bool {
        self.directives.contains_key(key) || self.changed.contains_key(key)
    }

    /// The directive's digest for a workload's decision key (0: none).
    pub fn digest(&self, key: &ObjectKey) -> u64 {
        self.directives.get(key).map_or(0, |d| d.digest)
    }

    /// Stores the changed states and forgets the others; the cache learns them. The state of
    /// a workload whose change the mass-deletion guard held whole (`held_moves`) stays the
    /// stored one: nothing of its change was published, so no stage was released (or passed)
    /// on the members, and the next pass evaluates again from what was published.
    pub fn record(
        &self,
        store: &Store,
        kept: &mut Kept,
        held_moves: &[crate::publish::HeldMove],
    ) -> Result<(), StoreError> {
        // The summary's entries as published; a held change's entry is built again next pass
        // (from the state that stays).
        kept.items = Arc::clone(&self.summary.items);
        let held: Vec<&ObjectKey> =
            self.changed.keys().filter(|key| super::record::held_whole(held_moves, key)).collect();
        if !held.is_empty() {
            let items = Arc::make_mut(&mut kept.items);
            for key in held {
                items.remove(&key.store_key());
            }
        }
        if self.changed.is_empty() && self.forgotten.is_empty() {
            return Ok(());
        }
        let map = Arc::make_mut(kept.rollouts.get_or_insert_with(Default::default));
        kept.replay.list = None;
        for (key, state) in self.changed.iter().filter(|(key, _)| !super::record::held_whole(held_moves, key)) {
            store.put_rollout(key, state)?;
            let sk = key.store_key();
            kept.replay.states.remove(&sk);
            map.insert(sk, state.clone());
        }
        for sk in &self.forgotten {
            store.remove_rollout(sk)?;
            kept.replay.states.remove(sk);
            map.remove(sk);
        }
        Ok(())
    }
}

/// What the rollout stage keeps between passes (its part of [`cache::Kept`]): the rollouts'
/// states by workload store key, read from the store on the first pass that has a
/// RolloutPolicy (or a stored rollout) and kept as the passes record them; `None`: not read yet.
#[derive(Default, Clone)]
pub(super) struct Kept {
    rollouts: Option<Arc<BTreeMap<String, RolloutState>>>,
    /// The summary's rollout entries of the last recorded pass ([`RolloutSummary::items`]).
    items: Arc<BTreeMap<String, (Shard, Arc<str>)>>,
    /// The states' blobs for a pass's replay ([`store_states`]), as stored.
    replay: ReplayBlobs,
}

/// The rollouts' states as a pass's replay reads them ([`store_states`]): each state's blob
/// hash, and the list's while no state changed.
#[derive(Default, Clone)]
struct ReplayBlobs {
    states: BTreeMap<String, u64>,
    list: Option<u64>,
}

/// Stores the rollouts' states this pass started from (the ones [`run`] read, before
/// [`RolloutPass::record`] stores this pass's), for its replay (`reconcile/replay.rs`):
/// returns the list's blob hash ([`Store::put_rollout_list`]), 0 when there is no state. A
/// state is stored again only after it changed, the list only after one did.
pub(super) fn store_states(store: &Store, kept: &mut Kept) -> Result<u64, StoreError> {
    let Some(states) = kept.rollouts.as_ref().filter(|m| !m.is_empty()) else { return Ok(0) };
    if let Some(hash) = kept.replay.list {
        return Ok(hash);
    }
    let mut list = Vec::with_capacity(states.len());
    for (sk, state) in states.iter() {
        let hash = match kept.replay.states.get(sk) {
            Some(h) => *h,
            None => {
                let h = store.put_rollout_blob(state)?;
                kept.replay.states.insert(sk.clone(), h);
                h
            }
        };
        list.push((sk.clone(), hash));
    }
    let hash = store.put_rollout_list(&list)?;
    kept.replay.list = Some(hash);
    Ok(hash)
}

impl Kept {
    /// The rollouts' states known, by workload store key (none before the stage first ran).
    pub fn states(&self) -> impl Iterator<Item = (&String, &RolloutState)> {
        self.rollouts.iter().flat_map(|m| m.iter())
    }

    /// The state of the workload whose store key is `sk`, if known.
    pub fn state(&self, sk: &str) -> Option<&RolloutState> {
        self.rollouts.as_ref()?.get(sk)
    }
}

/// A template's object as JSON text: what a rollout keeps of a version, to render it after a
/// restart. Its hash is the template's content hash ([`super::inputs::InputHashes`]).
fn object_text(t: &Template) -> String {
    serde_json::to_string(&t.object).unwrap_or_default()
}

/// Runs the stage (see the module): `views` are the pass's member views by `positions`.
pub(crate) fn run(
    store: &Store,
    (kept, placements): (&mut Kept, &cache::Placements),
    inputs: &Inputs,
    (views, positions): (&[ClusterSnapshot], &std::collections::HashMap<String, crate::schedule::ViewIx>),
    now_ms: u64,
) -> Result<RolloutPass, StoreError> {
    let set = &inputs.set;
    let stored = match &kept.rollouts {
        Some(map) => Arc::clone(map),
        None => {
            let map = Arc::new(store.rollouts()?.into_iter().collect());
            kept.rollouts = Some(Arc::clone(&map));
            map
        }
    };
    if set.rollout_policies.is_empty() && stored.is_empty() {
        return Ok(RolloutPass::default());
    }
    let mut out = RolloutPass::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut items = BTreeMap::new();
    for (position, t) in set.templates_at() {
        out.examined += 1;
        let Some(policy) = rollout_policy_for(set, t) else { continue };
        let spec = &policy.spec;
        let sk = t.key.store_key();
        // The version is the content hash the load computed; the object is serialised only
        // for a version the state does not hold yet.
        let hash = match inputs.hashes.template(position) {
            Some(h) => h,
            None => fnv1a64(object_text(t).as_bytes()),
        };
        let name = format!("{}/{}", policy.namespace().unwrap_or(""), policy.name());
        let old = stored.get(&sk);
        let mut state = match old {
            Some(o) => o.clone(),
            None => RolloutState::settled(name.clone(), hash, object_text(t)),
        };
        state.policy = name;
        // Another version than the one under way (and than the one waiting, under Queue), or
        // the one under way again while another waits.
        let waiting = state.queued.as_ref().map(|q| q.hash);
        if (hash != state.target_hash && waiting != Some(hash)) || (hash == state.target_hash && waiting.is_some()) {
            state.change(spec, (hash, &object_text(t)), now_ms);
        }
        let placement = placements.get(&t.key);
        let targets: BTreeMap<String, Option<i32>> = placement.map(|p| p.targets.clone()).unwrap_or_default();
        // Dispatching suspended by the PropagationPolicy in force (Karmada's `suspension`).
        let suspension = placement
            .and_then(|p| p.policy.as_ref())
            .and_then(|r| set.propagation_policy(r))
            .and_then(|p| p.spec.suspension.as_ref());
        let clusters: Vec<&str> = targets.keys().map(String::as_str).collect();
        let facts = |c: &str| set.cluster(c).map(ClusterFacts::of);
        let stages = partition(spec, &clusters, facts);
        let view_of = |c: &str| positions.get(c).and_then(|i| i.of(views));
        let object = t.key.display_ref();
        // A gated stage with a member whose dispatching is suspended is paused: it got no new
        // file there, so nothing there is evidence; its release counts from when dispatching
        // resumes (so does its progressDeadline), its members' generations read again then.
        let paused = state.phase == Phase::Progressing
            && state.held.is_none()
            && state.current().is_some_and(|current| {
                stages.get(current).into_iter().flatten().any(|c| suspension.is_some_and(|s| s.suspends(c)))
            });
        if paused {
            state.released_at_ms = now_ms;
            state.healthy_since_ms = None;
        }
        // The GitOps agent object each member's Cluster names (read only for the members
        // watched below).
        let agents: BTreeMap<&str, (ObjectKey, String)> = clusters
            .iter()
            .filter_map(|c| {
                let value = set.cluster(c)?.meta.annotations.get(GITOPS_AGENT_ANNOTATION)?;
                let key = agent_object(value).ok()?;
                let text = key.display_ref();
                Some((*c, (key, text)))
            })
            .collect();
        let read_object = reads_object(inputs, &t.key);
        let reads = Reads { read_object, agents: &agents, view_of: &view_of };
        // A held release goes ahead once its members' objects were read after it was due.
        let unheld = reads.release_if_read(&mut state, &stages, now_ms);
        let mut observed = BTreeMap::new();
        if state.phase == Phase::Progressing
            && !paused
            && state.held.is_none()
            && let Some(current) = state.current()
        {
            let owner = Owner::of(&t.key);
            let health: BTreeMap<String, ClusterHealth> = stages
                .get(current)
                .into_iter()
                .flatten()
                .map(|c| {
                    let seen = Seen {
                        owner: &owner,
                        object: &object,
                        desired: targets.get(*c).copied().flatten(),
                        released_at_ms: state.released_at_ms,
                        generation_at_release: state.generations.get(*c).copied(),
                        agent: agents
                            .get(c)
                            .map(|(_, text)| (text.as_str(), state.agent_revisions.get(*c).map(String::as_str))),
                        interpreted: (!judged_natively(&t.key))
                            .then(|| interpreted(inputs, &t.key, view_of(c), &object, now_ms))
                            .flatten(),
                    };
                    let health = observe(view_of(c), &seen);
                    observed.insert(
                        c.to_string(),
                        MemberObserved { state: health.label().to_string(), agent: agent_words(view_of(c), &seen) },
                    );
                    (c.to_string(), health)
                })
                .collect();
            step(&mut state, spec, &stages, &health, now_ms);
        }
        // A release this pass (a new version's first stage, a stage after its gate) whose
        // members' objects were read before it was due: held one poll round.
        reads.hold_if_unread(&mut state, (old, unheld.as_ref().map(|u| &u.noted)), &stages, now_ms);
        let fresh_transitions = |state: &RolloutState| -> Vec<crate::schedule::rollout::Transition> {
            let fresh = |tr: &&crate::schedule::rollout::Transition| {
                tr.at_ms == now_ms && !old.is_some_and(|o| o.transitions.contains(tr))
            };
            state.transitions.iter().filter(fresh).cloned().collect()
        };
        // A stage released this pass: its members' objects' generations now (this pass's poll
        // was before its publish), which the new version's apply raises. Only when the spec
        // changed: a change of metadata alone raises no generation.
        if state.phase == Phase::Progressing
            && state.held.is_none()
            && let Some(current) = state.current()
            && (paused || fresh_transitions(&state).iter().any(|tr| tr.event == "released"))
        {
            let members: &[&str] = stages.get(current).map_or(&[], Vec::as_slice);
            let keep = unheld.as_ref().and_then(|u| u.keep.as_ref());
            read_at_release(&mut state, (members, keep), &agents, &view_of, &object);
        }
        let fresh = fresh_transitions(&state)
            .iter()
            .map(|tr| format!("rollout: stage {} {}: {}", tr.stage, tr.event, tr.cause))
            .collect::<Vec<_>>();
        // Read: the gated stage's members (its health), or those of the stage whose release is
        // held; nothing while no rollout is under way.
        let watched = match state.current().filter(|_| state.phase == Phase::Progressing) {
            Some(current) => current..current + 1,
            None => 0..0,
        };
        for c in stages.get(watched).into_iter().flatten().flatten() {
            let read = out.objects.entry(c.to_string()).or_default();
            if read_object {
                read.push(t.key.clone());
            }
            if let Some((key, _)) = agents.get(c)
                && !read.contains(key)
            {
                read.push(key.clone());
            }
        }
        // What the gated stage's members showed this pass (none once no stage is gated; a
        // paused stage keeps what it showed before).
        if state.phase != Phase::Progressing {
            state.observed.clear();
        } else if !paused {
            state.observed = observed;
        }
        if !fresh.is_empty() {
            out.notes.entry(t.key.clone()).or_default().extend(fresh);
        }
        state.stages = stages
            .iter()
            .enumerate()
            .map(|(i, cs)| {
                (crate::schedule::rollout::stage_name(spec, i).to_string(), cs.iter().map(|c| c.to_string()).collect())
            })
            .collect();
        state.gate = crate::schedule::rollout::GateFigures::of(spec, &stages, state.current());
        if state.phase != Phase::Complete {
            out.directives.insert(t.key.clone(), directive(&state, &stages, t));
        }
        items.insert(sk.clone(), summary_entry(&kept.items, (&t.key, &sk), (old, &state)));
        if old != Some(&state) {
            out.changed.insert(t.key.clone(), state);
        }
        seen.insert(sk);
    }
    out.forgotten = stored.keys().filter(|sk| !seen.contains(*sk)).cloned().collect();
    out.summary.items = Arc::new(items);
    Ok(out)
}

/// The directive of a rollout under way: the clusters that run the new version, the previous
/// version's template and, while another version waits (`onNewVersion: Queue`), the new
/// version's (the template is the one that waits).
fn directive(state: &RolloutState, stages: &[Vec<&str>], t: &Arc<Template>) -> RolloutDirective {
    let new_on: BTreeSet<String> = stages
        .iter()
        .enumerate()
        .flat_map(|(i, cs)| cs.iter().filter(move |c| state.runs_new_on(i, c)).map(|c| c.to_string()))
        .collect();
    let version = |text: &str| {
        let object = serde_json::from_str(text).unwrap_or(serde_json::Value::Null);
        Arc::new(Template { object, ..(**t).clone() })
    };
    let stable = version(&state.stable);
    let target = state.queued.as_ref().map(|_| version(&state.target));
    let keep = state.held.as_ref().and_then(|h| h.keep.as_ref());
    let kept = keep.map(|k| (version(&k.object), k.on.clone()));
    let kept_digest = keep.map(|k| (k.hash, &k.on));
    let digest =
        fnv1a64(format!("{:x} {:x} {new_on:?} {kept_digest:?}", state.stable_hash, state.target_hash).as_bytes());
    RolloutDirective { stable, target, kept, new_on, digest }
}

/// A stage released this pass (`members`): what its members showed before the new version
/// was published (this pass's poll was before its publish) — each GitOps agent's revision
/// (the new version's commit is another one: every release is compared) and, when the spec
/// changed (a change of metadata alone raises no generation), each workload object's
/// generation, which the new version's apply raises.
fn read_at_release<'v>(
    state: &mut RolloutState,
    (members, keep): (&[&str], Option<&KeptVersion>),
    agents: &BTreeMap<&str, (ObjectKey, String)>,
    view_of: &dyn Fn(&str) -> Option<&'v ClusterSnapshot>,
    object: &str,
) {
    state.generations.clear();
    state.agent_revisions.clear();
    for c in members {
        let pods = view_of(c).and_then(|v| v.pods.as_deref());
        let seen = agents.get(c).and_then(|(_, text)| pods.and_then(|p| p.agents.get(text)));
        if let Some(a) = seen {
            state.agent_revisions.insert(c.to_string(), a.revision.clone());
        }
    }
    let spec_of =
        |text: &str| serde_json::from_str::<serde_json::Value>(text).ok().and_then(|o| o.get("spec").cloned());
    // Each member's version until now: the previous one, or the one a held release kept.
    let target = spec_of(&state.target);
    let stable_changed = spec_of(&state.stable) != target;
    let kept_changed = keep.map(|k| spec_of(&k.object) != target);
    for c in members {
        let changed = match keep.filter(|k| k.on.contains(*c)) {
            Some(_) => kept_changed.unwrap_or(stable_changed),
            None => stable_changed,
        };
        if !changed {
            continue;
        }
        let pods = view_of(c).and_then(|v| v.pods.as_deref());
        let generation = pods.and_then(|p| {
            p.objects.get(object).map(|o| o.generation).or_else(|| p.interpreted.get(object).map(|o| o.generation))
        });
        if let Some(g) = generation {
            state.generations.insert(c.to_string(), g);
        }
    }
}

/// What a stage's members need read before its release (the workload's object, each member's
/// GitOps agent object), and whether this pass's views read it: a release is held until a
/// poll not older than it was due has read them ([`RolloutState::held`]), so that the
/// generations and revisions the gate compares with are never older than the version change.
struct Reads<'a, 'v> {
    /// The workload's own object is read on every member (its kind's status, or a health
    /// interpretation).
    read_object: bool,
    agents: &'a BTreeMap<&'a str, (ObjectKey, String)>,
    view_of: &'a dyn Fn(&str) -> Option<&'v ClusterSnapshot>,
}

/// A held release that went ahead this pass: the version its members had kept, and the
/// `released` transition noted now.
struct Unheld {
    keep: Option<KeptVersion>,
    noted: Transition,
}

/// The members of stage `i` its gate judges: those it was released to (all before that is fixed).
fn stage_members<'s>(state: &RolloutState, stages: &[Vec<&'s str>], i: usize) -> Vec<&'s str> {
    let stage = stages.get(i).map_or(&[][..], Vec::as_slice);
    stage.iter().copied().filter(|c| state.released_to.as_ref().is_none_or(|to| to.contains(*c))).collect()
}

impl Reads<'_, '_> {
    /// Whether member `c`'s objects, if it has any to read, were read by a poll at or after
    /// `since_ms`; a member that cannot be read (offline, unreachable) is not waited for.
    fn read_since(&self, c: &str, since_ms: u64) -> bool {
        if !self.read_object && !self.agents.contains_key(c) {
            return true;
        }
        let Some(v) = (self.view_of)(c) else { return true };
        if matches!(v.source, SnapshotSource::Offline { .. }) || v.health != Health::Ready {
            return true;
        }
        v.freshness.as_ref().is_none_or(|f| f.polled_at_ms >= since_ms)
    }

    /// A held release goes ahead at `now_ms` once every member of its stage was read since
    /// it was due.
    fn release_if_read(&self, state: &mut RolloutState, stages: &[Vec<&str>], now_ms: u64) -> Option<Unheld> {
        let i = state.held_stage()?;
        let since = state.held.as_ref()?.release.at_ms;
        if !stage_members(state, stages, i).iter().all(|c| self.read_since(c, since)) {
            return None;
        }
        let held = state.release_held(now_ms)?;
        let noted = state.transitions.last()?.clone();
        Some(Unheld { keep: held.keep, noted })
    }

    /// Holds the release this pass made (its last transition, unless that is the held one
    /// that went ahead, `unheld`) when a member of the stage was not read since: its members
    /// keep what they ran ([`kept_version`], from `old`, the state the pass started from).
    fn hold_if_unread(
        &self,
        state: &mut RolloutState,
        (old, unheld): (Option<&RolloutState>, Option<&Transition>),
        stages: &[Vec<&str>],
        now_ms: u64,
    ) {
        let Some(last) = state.transitions.last() else { return };
        let made_now = last.event == "released"
            && last.at_ms == now_ms
            && unheld != Some(last)
            && !old.is_some_and(|o| o.transitions.contains(last));
        if !made_now || state.phase != Phase::Progressing || state.held.is_some() {
            return;
        }
        let Some(i) = state.current() else { return };
        let members = stage_members(state, stages, i);
        if members.iter().all(|c| self.read_since(c, now_ms)) {
            return;
        }
        let keep = kept_version(old, state, i, &members);
        state.hold_release(keep);
    }
}

/// What the members of stage `i` ran before this pass (`old`), where it is not the previous
/// version: a superseded rollout's version on its stage, which they keep while the new
/// version's release is held. Of two such versions (never in practice), the second one's
/// members get the previous version.
fn kept_version(old: Option<&RolloutState>, state: &RolloutState, i: usize, members: &[&str]) -> Option<KeptVersion> {
    let old = old?;
    let mut keep: Option<KeptVersion> = None;
    for c in members {
        let (hash, object) = old.version_on(i, c);
        if hash == state.stable_hash {
            continue;
        }
        match &mut keep {
            None => keep = Some(KeptVersion { hash, object: object.to_string(), on: BTreeSet::from([c.to_string()]) }),
            Some(k) if k.hash == hash => {
                k.on.insert(c.to_string());
            }
            Some(_) => {}
        }
    }
    keep
}

/// Whether the poller reads the workload's own object on a member for its rollout: its kind's
/// status ([`crate::model::ObjectStatus::of_kind`]), or a kind something interprets the health of.
fn reads_object(inputs: &Inputs, key: &ObjectKey) -> bool {
    crate::model::ObjectStatus::of_kind(key)
        || (!judged_natively(key) && inputs.interpreters.customizations.judges_health(&key.api_version, &key.kind))
}

/// Whether the rollout judges `key`'s kind by its own object status and pods (those of
/// [`crate::model::ObjectStatus::of_kind`], and a Job by its pods); every other kind by Karmada's health
/// interpretation ([`interpreted`]), where something interprets it.
fn judged_natively(key: &ObjectKey) -> bool {
    crate::model::ObjectStatus::of_kind(key) || (key.group() == "batch" && key.kind == "Job")
}

/// Karmada's health interpretation of the workload's object on a member, as the poller read
/// it ([`crate::model::PodFacts::interpreted`]): the `healthInterpretation` script of a
/// customization for its kind, else Karmada's default for a native kind
/// ([`crate::model::interpreter::Interpreters::health`]); with the object's generation.
/// `None`: not read, or nothing interprets the kind.
fn interpreted(
    inputs: &Inputs,
    key: &ObjectKey,
    view: Option<&ClusterSnapshot>,
    object: &str,
    now_ms: u64,
) -> Option<(i64, Result<bool, String>)> {
    let raw = view?.pods.as_deref()?.interpreted.get(object)?;
    let value: serde_json::Value = serde_json::from_str(&raw.text).ok()?;
    let verdict = inputs.interpreters.customizations.health(&key.api_version, &key.kind, &value, now_ms)?;
    Some((raw.generation, verdict.map_err(|e| e.to_string())))
}

/// A rollout's entry of the summary this pass: the last one again while its course is the
/// same, else built again.
fn summary_entry(
    last: &BTreeMap<String, (Shard, Arc<str>)>,
    (key, sk): (&ObjectKey, &str),
    (old, state): (Option<&RolloutState>, &RolloutState),
) -> (Shard, Arc<str>) {
    match (last.get(sk), old) {
        (Some(last), Some(o)) if o.same_course(state) => last.clone(),
        _ => (shard_of(key), Arc::from(rollout_item(key, state))),
    }
}

/// What the rollout looks for on one member.
pub(crate) struct Seen<'a> {
    /// The workload's pods.
    pub owner: &'a Owner,
    /// The workload's object on the member (`Kind/namespace/name`, [`crate::model::PodFacts::objects`]).
    pub object: &'a str,
    /// Its replicas there (None: as many as it runs).
    pub desired: Option<i32>,
    pub released_at_ms: u64,
    /// The object's `metadata.generation` on the member when the stage was released (before
    /// the new version was published), if it was read.
    pub generation_at_release: Option<i64>,
    /// The member's GitOps agent object (`Kind/namespace/name`, [`crate::model::PodFacts::agents`])
    /// and the revision it had applied at the release, if read then.
    pub agent: Option<(&'a str, Option<&'a str>)>,
    /// Karmada's health interpretation of the workload's object there (a kind the rollout
    /// does not judge by its own status and pods), with the object's generation: healthy or
    /// not, or why the script failed. `None`: not read, or nothing interprets the kind.
    pub interpreted: Option<(i64, Result<bool, String>)>,
}

/// The GitOps agent's stand on the new version on one member (its object read this round).
fn agent_verdict(view: Option<&ClusterSnapshot>, seen: &Seen<'_>) -> Option<AgentVerdict> {
    let (object, at_release) = seen.agent?;
    let status = view?.pods.as_deref()?.agents.get(object)?;
    Some(status.verdict(at_release))
}

/// [`agent_verdict`] in words, naming the agent object.
fn agent_words(view: Option<&ClusterSnapshot>, seen: &Seen<'_>) -> Option<String> {
    let (object, _) = seen.agent?;
    let (kind, why) = match agent_verdict(view, seen)? {
        AgentVerdict::NotSynced(w) => ("not synced yet", w),
        AgentVerdict::SyncedProgressing(w) => ("synced, not healthy yet", w),
        AgentVerdict::SyncedDegraded(w) => ("synced, unhealthy", w),
        AgentVerdict::SyncedHealthy(w) => ("synced, healthy", w),
    };
    Some(format!("{kind} ({object}: {why})"))
}

/// What one member shows of the workload's new version (see the module).
pub(crate) fn observe(view: Option<&ClusterSnapshot>, seen: &Seen<'_>) -> ClusterHealth {
    let agent = agent_verdict(view, seen);
    let Some(view) = view else { return ClusterHealth::NotObserved };
    let object = view.pods.as_deref().and_then(|p| p.objects.get(seen.object));
    if matches!(view.source, SnapshotSource::Offline { .. })
        || (*seen.owner == Owner::Unknown && object.is_none() && agent.is_none() && seen.interpreted.is_none())
        || view.health != Health::Ready
    {
        return ClusterHealth::NotObserved;
    }
    let Some(pods) = view.pods.as_deref() else { return ClusterHealth::NotObserved };
    let polled = view.freshness.as_ref().map_or(0, |f| f.polled_at_ms);
    if polled <= seen.released_at_ms {
        return ClusterHealth::Progressing;
    }
    // The GitOps agent first: while it has not synced the new version, what runs there (the
    // previous version, healthy or crashing) says nothing of the new one; synced and judged
    // failed by the agent, the member failed.
    let (object_ref, _) = seen.agent.unwrap_or_default();
    let agent_healthy = match agent {
        Some(AgentVerdict::NotSynced(why)) => return ClusterHealth::NotSynced(format!("{object_ref}: {why}")),
        Some(AgentVerdict::SyncedDegraded(why)) => {
            return ClusterHealth::Failed(format!("GitOps agent {object_ref}: {why}"));
        }
        Some(AgentVerdict::SyncedProgressing(_)) => false,
        Some(AgentVerdict::SyncedHealthy(_)) | None => true,
    };
    // Not the new version yet: its apply raises the generation the object had at the release.
    let generation = object.map(|o| o.generation).or(seen.interpreted.as_ref().map(|(g, _)| *g));
    if let Some(g) = generation
        && seen.generation_at_release.is_some_and(|at| g <= at)
    {
        return ClusterHealth::Progressing;
    }
    // Karmada's health interpretation: healthy, or not yet (it does not tell failing from
    // starting: progressDeadline fails it); a script that fails leaves the member unobserved.
    match &seen.interpreted {
        Some((_, Ok(false))) => return ClusterHealth::Progressing,
        Some((_, Err(_))) if *seen.owner == Owner::Unknown && object.is_none() => return ClusterHealth::NotObserved,
        _ => {}
    }
    let state = (*seen.owner != Owner::Unknown).then(|| seen.owner.state(pods));
    if let Some((reason, n)) = state
        .iter()
        .flat_map(|s| s.pending_reasons.iter())
        .find(|(r, n)| **n > 0 && FAILING_REASONS.contains(&r.as_str()))
    {
        return ClusterHealth::Failed(format!("{reason} on {n} pod(s)"));
    }
    if let Some(o) = object {
        match o.rolled_out() {
            RolledOut::Done => {}
            RolledOut::Waiting(_) => return ClusterHealth::Progressing,
            RolledOut::Failed(why) => return ClusterHealth::Failed(why),
        }
    }
    if !agent_healthy {
        return ClusterHealth::Progressing;
    }
    let Some(state) = state else { return ClusterHealth::Healthy };
    let desired = seen.desired.map_or(i64::from(state.pods.max(1)), i64::from);
    match i64::from(state.ready) == desired && i64::from(state.pods) == desired {
        true => ClusterHealth::Healthy,
        false => ClusterHealth::Progressing,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::Arc;

    use crate::model::snapshot::{Freshness, OwnerState, PodFacts, SnapshotSource};
    use crate::reconcile::stability::grace_tests::cluster;
    use crate::reconcile::{Inputs, Reconciler, Repository, Settings, load_inputs};
    use crate::schedule::rollout::Phase;
    use crate::store::Store;

    const FLEET: [&str; 5] = ["m1", "m2", "m3", "m4", "m5"];

    /// web, duplicated to the five members, and its RolloutPolicy: canary m1, then two, then
    /// the rest; a minute of health each.
    fn repo(image: &str, policy_extra: &str) -> String {
        format!(
            r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: web, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: web}}]
  placement:
    replicaScheduling: {{replicaSchedulingType: Duplicated}}
---
apiVersion: fedsched.io/v1alpha1
kind: RolloutPolicy
metadata: {{name: web, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: web}}]
  stages:
  - {{name: canary, clusterAffinity: {{clusterNames: [m1]}}}}
  - {{name: wave, maxConcurrency: 2}}
  minSuccessTime: 1m
  progressDeadline: 10m
{policy_extra}---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: shop}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - {{name: web, image: "{image}", resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}
"#
        )
    }

    /// What a member's pods of web do.
    #[derive(Clone, Copy)]
    enum Pods {
        Ready,
        Crashing,
    }

    fn facts(p: Pods) -> Arc<PodFacts> {
        let owner = "ReplicaSet/shop/web-5d8f9".to_string();
        let state = match p {
            Pods::Ready => OwnerState { pods: 2, bound: 2, running: 2, ready: 2, ..OwnerState::default() },
            Pods::Crashing => OwnerState {
                pods: 2,
                bound: 2,
                running: 2,
                ready: 0,
                not_ready_since: vec![1, 1],
                pending_reasons: BTreeMap::from([("CrashLoopBackOff".to_string(), 2)]),
                ..OwnerState::default()
            },
        };
        Arc::new(PodFacts {
            bound: 2,
            by_owner: BTreeMap::from([(owner.clone(), 2)]),
            owners: BTreeMap::from([(owner, state)]),
            ..PodFacts::default()
        })
    }

    struct World {
        dir: tempfile::TempDir,
    }

    impl World {
        fn new(image: &str, extra: &str) -> World {
            let dir = tempfile::tempdir().expect("tempdir");
            let repo = dir.path().join("repo");
            std::fs::create_dir_all(&repo).expect("mkdir");
            let clusters: Vec<String> = FLEET.iter().map(|c| cluster(c, 40)).collect();
            std::fs::write(repo.join("clusters.yaml"), clusters.join("---\n")).expect("write");
            let w = World { dir };
            w.commit(image, extra);
            w
        }
        fn repo(&self) -> std::path::PathBuf {
            self.dir.path().join("repo")
        }
        fn out(&self) -> std::path::PathBuf {
            self.dir.path().join("out")
        }
        fn commit(&self, image: &str, extra: &str) {
            std::fs::write(self.repo().join("apps.yaml"), repo(image, extra)).expect("write");
        }
        fn reconciler(&self) -> Reconciler {
            Reconciler::new(Store::open(&self.dir.path().join("state")).expect("store"), Settings::builtin())
        }
        /// The members as polled at `now`, every one's pods as `pods` says (default Ready).
        fn inputs(&self, now: u64, pods: &dyn Fn(&str) -> Pods) -> Inputs {
            let mut inputs = load_inputs(Repository::Dir(&self.repo()), &Settings::builtin()).expect("inputs");
            for s in inputs.snapshots.iter_mut() {
                s.source = SnapshotSource::Live { endpoint: format!("https://{}", s.name) };
                s.freshness = Some(Freshness {
                    polled_at_ms: now,
                    consecutive_failures: 0,
                    age_ms: 0,
                    confidence_ppm: 1_000_000,
                });
                s.pods = Some(facts(pods(&s.name)));
            }
            inputs
        }
        fn pass(&self, rec: &Reconciler, now: u64, pods: &dyn Fn(&str) -> Pods) {
            rec.reconcile(&self.inputs(now, pods), &self.out(), crate::publish::Trigger::Timer, now).expect("pass");
        }
        /// Each member's image of web.
        fn images(&self) -> Vec<String> {
            FLEET.iter().map(|c| image(&self.out(), c)).collect()
        }
    }

    fn image(out: &Path, c: &str) -> String {
        let text = std::fs::read_to_string(out.join(c).join("shop/apps_deployment_web.yaml")).unwrap_or_default();
        text.lines().find_map(|l| l.split("image: ").nth(1)).unwrap_or("-").trim_matches('"').to_string()
    }

    const T0: u64 = 1_700_000_000_000;
    const MIN: u64 = 60_000;
    fn ready(_: &str) -> Pods {
        Pods::Ready
    }

    #[test]
    fn a_good_change_goes_through_three_stages_and_a_restart_continues_where_it_was() {
        let w = World::new("web:1", "");
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        assert_eq!(w.images(), ["web:1"; 5], "a first deploy goes everywhere");
        w.commit("web:2", "");
        w.pass(&rec, T0 + 1_000, &ready);
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"], "the canary alone");
        w.pass(&rec, T0 + 2_000, &ready);
        w.pass(&rec, T0 + 2_000 + MIN - 1, &ready);
        assert_eq!(w.images()[1], "web:1", "the gate passed before a minute of health");
        w.pass(&rec, T0 + 2_000 + MIN, &ready);
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"], "the wave");
        // Visible: status (text and JSON) and the API's document say the stage, gate and time left.
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let wr: crate::views::explain::WorkloadRef = "Deployment/shop/web".parse().expect("ref");
        let now = T0 + 2_000 + MIN + 20_000;
        let opts = crate::views::workload_status::Options::default();
        let st = crate::views::workload_status::workload_document(&rec.store, &wr, now, &opts).expect("status");
        let r = &st["rollout"];
        assert_eq!(
            (r["state"].as_str(), r["stage"].as_str(), r["stageIndex"].as_u64()),
            (Some("Progressing"), Some("wave"), Some(1)),
            "{r:#}"
        );
        assert_eq!(r["stages"][1]["clusters"], serde_json::json!(["m2", "m3"]), "{r:#}");
        assert_eq!(
            (r["stages"][1]["version"].as_str(), r["stages"][2]["version"].as_str()),
            (Some("new"), Some("previous"))
        );
        assert_eq!(r["gate"]["deadlineLeft"], "9m 40s", "{r:#}");
        assert_eq!(r["failures"], serde_json::json!({"count": 0, "max": 0, "clusters": {}}));
        let text = crate::views::workload_status::to_text(&st);
        assert!(
            text.contains("rollout (shop/web): Progressing at stage wave")
                && text.contains("stage final (previous): m4, m5"),
            "{text}"
        );
        let named = crate::views::rollout::rollouts_named(&rec.store, "shop", "web", now).expect("named");
        assert_eq!(named.len(), 1);
        assert_eq!(named[0]["workload"]["kind"], "Deployment");
        let doc =
            crate::views::explain::explain(&w.inputs(now, &ready), &rec.store, &rec.settings().profiles, &wr, now)
                .expect("explain");
        assert_eq!(doc["rollout"]["stage"], "wave", "{doc:#}");
        assert!(crate::views::explain::to_text(&doc).contains("rollout:\n  rollout (shop/web): Progressing"));
        let _ = key;
        // A restart (the store reopened, as a takeover does) continues with the wave.
        drop(rec);
        let rec = w.reconciler();
        let t1 = T0 + 2_000 + MIN;
        w.pass(&rec, t1 + 1_000, &ready);
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"], "restarted at another stage");
        w.pass(&rec, t1 + 1_000 + MIN, &ready);
        assert_eq!(w.images(), ["web:2"; 5], "the final stage");
        w.pass(&rec, t1 + 2_000 + MIN, &ready);
        w.pass(&rec, t1 + 2_000 + 2 * MIN, &ready);
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.phase, crate::schedule::rollout::Phase::Complete, "{state:#?}");
        // Each transition is a history note of the workload, with its cause.
        let notes: Vec<String> = rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect();
        // The next change starts from the completed version, not the one before it.
        w.commit("web:3", "");
        w.pass(&rec, t1 + 3_000 + 2 * MIN, &ready);
        assert_eq!(w.images(), ["web:3", "web:2", "web:2", "web:2", "web:2"], "the previous version is web:2");
        for n in [
            "stage canary released",
            "stage canary passed: Healthy for minSuccessTime",
            "stage wave released",
            "stage final passed",
            "stage final complete",
        ] {
            assert!(notes.iter().any(|x| x.contains(n)), "{n}: {notes:#?}");
        }
    }

    /// Every decision of a rollout replays identical (`fedsched replay`, the simulation's
    /// invariant 6): a pass stores the rollouts' states it started from, and the replay renders
    /// each cluster's stage version from them — without them it rendered the new version
    /// everywhere (the canary's pass, the wave's, a halt's and the next change's differed).
    #[test]
    fn every_decision_of_a_rollout_replays_identical() {
        let w = World::new("web:1", "");
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        w.commit("web:2", "");
        w.pass(&rec, T0 + 1_000, &ready);
        w.pass(&rec, T0 + 2_000, &ready);
        w.pass(&rec, T0 + 2_000 + MIN, &ready);
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"], "the wave");
        // A bad image supersedes: the canary crash-loops and the rollout halts there.
        w.commit("web:bad", "");
        w.pass(&rec, T0 + 3_000 + MIN, &ready);
        let crash = |c: &str| if c == "m1" { Pods::Crashing } else { Pods::Ready };
        w.pass(&rec, T0 + 4_000 + MIN, &crash);
        // (Superseded: the previous version is the last completed one, web:1.)
        assert_eq!(w.images(), ["web:bad", "web:1", "web:1", "web:1", "web:1"], "halted at the canary");
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let history = rec.store.history(&key).expect("history");
        assert!(history.len() >= 4, "{} records", history.len());
        let doc = crate::views::replay::document(&rec.store, &history, &Settings::builtin).expect("replay");
        assert_eq!(
            (doc["identical"].as_u64(), doc["different"].as_u64()),
            (Some(history.len() as u64), Some(0)),
            "{doc:#}"
        );
    }

    #[test]
    fn a_bad_image_halts_after_the_canary_and_rollback_restores_it() {
        let w = World::new("web:1", "");
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        w.commit("web:bad", "");
        let before: Vec<Vec<u8>> = FLEET[1..]
            .iter()
            .map(|c| std::fs::read(w.out().join(c).join("shop/apps_deployment_web.yaml")).expect("file"))
            .collect();
        w.pass(&rec, T0 + 1_000, &ready);
        let crash = |c: &str| if c == "m1" { Pods::Crashing } else { Pods::Ready };
        for dt in [2_000, 2_000 + MIN, 2_000 + 20 * MIN] {
            w.pass(&rec, T0 + dt, &crash);
        }
        assert_eq!(w.images(), ["web:bad", "web:1", "web:1", "web:1", "web:1"], "halted after the canary");
        let after: Vec<Vec<u8>> = FLEET[1..]
            .iter()
            .map(|c| std::fs::read(w.out().join(c).join("shop/apps_deployment_web.yaml")).expect("file"))
            .collect();
        assert_eq!(before, after, "a later stage's file changed");
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.phase, crate::schedule::rollout::Phase::Halted);
        assert!(state.failed["m1"].contains("CrashLoopBackOff"), "{state:#?}");

        // Rollback: the canary goes back to the previous version.
        let w = World::new("web:1", "  onFailure: Rollback\n");
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        w.commit("web:bad", "  onFailure: Rollback\n");
        w.pass(&rec, T0 + 1_000, &ready);
        assert_eq!(w.images()[0], "web:bad");
        w.pass(&rec, T0 + 2_000, &crash);
        assert_eq!(w.images(), ["web:1"; 5], "rolled back");
        // A fix supersedes: the canary first again.
        w.commit("web:3", "  onFailure: Rollback\n");
        w.pass(&rec, T0 + 3_000, &ready);
        assert_eq!(w.images(), ["web:3", "web:1", "web:1", "web:1", "web:1"]);
    }

    /// A workload whose RolloutPolicy is deleted: its state is forgotten, and the version
    /// held back from the later stages reaches them at once.
    #[test]
    fn a_workload_no_rollout_policy_selects_any_more_forgets_its_rollout() {
        let w = World::new("web:1", "");
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        w.commit("web:2", "");
        w.pass(&rec, T0 + 1_000, &ready);
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"]);
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        assert!(rec.store.rollout(&key).expect("read").is_some());
        let without: Vec<String> =
            repo("web:2", "").split("---\n").filter(|d| !d.contains("RolloutPolicy")).map(String::from).collect();
        std::fs::write(w.repo().join("apps.yaml"), without.join("---\n")).expect("write");
        w.pass(&rec, T0 + 2_000, &ready);
        assert_eq!(w.images(), ["web:2"; 5]);
        assert_eq!(rec.store.rollout(&key).expect("read"), None, "the state stays");
        assert!(rec.store.rollouts().expect("all").is_empty());
        w.pass(&rec, T0 + 3_000, &ready);
        assert_eq!(w.images(), ["web:2"; 5]);
    }

    /// The mass-deletion guard holds web's change whole (its canary m1 is held: the
    /// ConfigMaps there are going): no stage was released on the members, so the rollout does
    /// not advance. Before the fix the state released the canary, observed the old version's
    /// Ready pods as Healthy, passed its gate and released the wave, all while held — and the
    /// publish that followed the hold put web:2 on m1, m2 and m3 at once.
    #[test]
    fn a_change_the_mass_deletion_guard_holds_does_not_advance_the_rollout() {
        let w = World::new("web:1", "");
        let configmaps = w.repo().join("configmaps.yaml");
        let mut text = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n\
                        metadata: {name: cms, namespace: shop}\nspec:\n  \
                        resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]\n  \
                        placement: {clusterAffinity: {clusterNames: [m1]}}\n"
            .to_string();
        for i in 0..6 {
            text += &format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: shop}}\n");
        }
        std::fs::write(&configmaps, &text).expect("write");
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        assert_eq!(w.images(), ["web:1"; 5]);
        // web:2, and the ConfigMaps deleted: m1 would lose most of its objects, held.
        std::fs::remove_file(&configmaps).expect("remove");
        w.commit("web:2", "");
        for dt in [1_000, 2_000, 2_000 + MIN, 3_000 + 2 * MIN] {
            let report = rec
                .reconcile(&w.inputs(T0 + dt, &ready), &w.out(), crate::publish::Trigger::Timer, T0 + dt)
                .expect("pass");
            assert!(report.held_moves.iter().any(|m| m.owner == "Deployment/shop/web"), "{:?}", report.held_moves);
        }
        assert_eq!(w.images(), ["web:1"; 5], "the guard held web's change");
        // The ConfigMaps back: the hold ends, and web:2 reaches the canary alone.
        std::fs::write(&configmaps, &text).expect("write");
        w.pass(&rec, T0 + 4_000 + 2 * MIN, &ready);
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"], "a gate passed while held");
        w.pass(&rec, T0 + 5_000 + 2 * MIN, &ready);
        w.pass(&rec, T0 + 5_000 + 3 * MIN, &ready);
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"], "the wave after its gate");
    }

    /// The member's object says whether the new version runs there: m1's pods stay Ready,
    /// but its Deployment keeps the generation it had at the release (the GitOps agent has not
    /// applied web:2 yet), then has one replica of two updated. Judged on the pods alone, the
    /// canary passed its gate on the previous version's health a minute after the release.
    #[test]
    fn the_members_object_status_tells_whether_the_new_version_runs_there() {
        use crate::model::ObjectStatus;
        let w = World::new("web:1", "");
        let rec = w.reconciler();
        let object = |generation: i64, updated: i64| ObjectStatus {
            generation,
            observed_generation: generation,
            desired: 2,
            current: 2,
            updated,
            ready: 2,
            available: updated,
            stalled: None,
        };
        let pass = |now: u64, o: ObjectStatus| {
            let mut inputs = w.inputs(now, &ready);
            for s in inputs.snapshots.iter_mut() {
                if let Some(p) = s.pods.as_mut() {
                    Arc::make_mut(p).objects = BTreeMap::from([("Deployment/shop/web".to_string(), o.clone())]);
                }
            }
            rec.reconcile(&inputs, &w.out(), crate::publish::Trigger::Timer, now).expect("pass")
        };
        pass(T0, object(1, 2));
        let report = pass(T0 + 500, object(1, 2));
        assert!(report.rollout_objects.is_empty(), "no rollout under way, nothing read: {:?}", report.rollout_objects);
        w.commit("web:2", "");
        let report = pass(T0 + 1_000, object(1, 2));
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"]);
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.generations, BTreeMap::from([("m1".to_string(), 1)]), "{state:#?}");
        // The poller reads the gated stage's objects, no other.
        let read: Vec<&str> = report.rollout_objects.keys().map(String::as_str).collect();
        assert_eq!(read, ["m1"]);
        // Not applied: the previous version's pods are Ready, the object is as it was.
        for dt in [2_000, 2_000 + MIN, 2_000 + 2 * MIN] {
            pass(T0 + dt, object(1, 2));
        }
        assert_eq!(w.images()[1], "web:1", "the gate passed on the previous version's health");
        // Applied, one replica of two updated: not yet.
        pass(T0 + 3 * MIN, object(2, 1));
        pass(T0 + 4 * MIN + 1_000, object(2, 1));
        assert_eq!(w.images()[1], "web:1", "the gate passed before the member's rollout was done");
        // Rolled out: a minute of health, and the wave.
        pass(T0 + 5 * MIN, object(2, 2));
        pass(T0 + 6 * MIN, object(2, 2));
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"]);
    }

    /// A release needs its members' objects read by a poll not older than it (issue 52, "poll
    /// only what is needed"): the poller reads nothing while no rollout is under way, so the
    /// canary's release is held while the members' last poll is older than the change — web:1
    /// stays everywhere, the poller is asked for the canary's object alone — and the pass after
    /// a poll that read it publishes the canary, with the generation read then. The wave's
    /// release after the canary's gate is held the same way (its members were not read while
    /// the canary was gated). A version that supersedes the rollout while the wave runs web:2
    /// is held at the canary, which keeps web:2 meanwhile (not web:1: two applies, and a
    /// generation read between them would be stale). Every decision replays identical. Without
    /// the hold, the canary got web:2 at once with no generation read (the first assertion).
    #[test]
    fn a_release_waits_one_poll_round_for_its_members_objects_and_replays_identical() {
        use crate::model::ObjectStatus;
        let w = World::new("web:1", "");
        let rec = w.reconciler();
        let object = |generation: i64| ObjectStatus {
            generation,
            observed_generation: generation,
            desired: 2,
            current: 2,
            updated: 2,
            ready: 2,
            available: 2,
            stalled: None,
        };
        // A pass at `now` whose members were last polled at `polled`, each object at `generation`.
        let pass = |now: u64, polled: u64, generation: i64| {
            let mut inputs = w.inputs(now, &ready);
            for s in inputs.snapshots.iter_mut() {
                if let Some(f) = s.freshness.as_mut() {
                    f.polled_at_ms = polled;
                }
                if let Some(p) = s.pods.as_mut() {
                    Arc::make_mut(p).objects =
                        BTreeMap::from([("Deployment/shop/web".to_string(), object(generation))]);
                }
            }
            rec.reconcile(&inputs, &w.out(), crate::publish::Trigger::Timer, now).expect("pass")
        };
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let state = || rec.store.rollout(&key).expect("read").expect("state");
        pass(T0, T0, 1);
        w.commit("web:2", "");
        let r = pass(T0 + 1_000, T0 + 500, 1);
        assert_eq!(w.images(), ["web:1"; 5], "released on a poll older than the change");
        assert_eq!(r.rollout_objects.keys().collect::<Vec<_>>(), ["m1"], "{:?}", r.rollout_objects);
        let held = state();
        assert!(held.held.is_some() && held.transitions.is_empty(), "{held:#?}");
        let doc = crate::views::rollout::document(&held, T0 + 1_000);
        assert_eq!(doc["releaseHeld"]["stage"], "canary", "{doc:#}");
        // A round that began before the change read nothing new: still held.
        pass(T0 + 2_000, T0 + 900, 1);
        assert_eq!(w.images(), ["web:1"; 5]);
        // Read after the change: the canary now, its gate from now.
        pass(T0 + 3_000, T0 + 2_500, 1);
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"]);
        let s = state();
        assert_eq!((s.held.clone(), s.released_at_ms), (None, T0 + 3_000), "{s:#?}");
        assert_eq!(s.generations, BTreeMap::from([("m1".to_string(), 1)]), "{s:#?}");
        let released: Vec<u64> = s.transitions.iter().filter(|t| t.event == "released").map(|t| t.at_ms).collect();
        assert_eq!(released, [T0 + 3_000], "{s:#?}");
        // web:2 applied on the canary; a minute of health: the canary passes, the wave is held.
        pass(T0 + 4_000, T0 + 4_000, 2);
        let r = pass(T0 + 4_000 + MIN, T0 + 3_900 + MIN, 2);
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"], "the wave released on old reads");
        assert_eq!(r.rollout_objects.keys().collect::<Vec<_>>(), ["m2", "m3"], "{:?}", r.rollout_objects);
        pass(T0 + 5_000 + MIN, T0 + 5_000 + MIN, 2);
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"]);
        assert_eq!(state().generations, BTreeMap::from([("m2".to_string(), 2), ("m3".to_string(), 2)]));
        // web:3 supersedes: the canary keeps web:2 while its release is held, the wave goes back.
        w.commit("web:3", "");
        pass(T0 + 6_000 + MIN, T0 + 5_500 + MIN, 2);
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"], "the held canary lost web:2");
        pass(T0 + 7_000 + MIN, T0 + 7_000 + MIN, 3);
        assert_eq!(w.images(), ["web:3", "web:1", "web:1", "web:1", "web:1"]);
        assert_eq!(state().generations, BTreeMap::from([("m1".to_string(), 3)]));
        let history = rec.store.history(&key).expect("history");
        let doc = crate::views::replay::document(&rec.store, &history, &Settings::builtin).expect("replay");
        assert_eq!(
            (doc["identical"].as_u64(), doc["different"].as_u64()),
            (Some(history.len() as u64), Some(0)),
            "{doc:#}"
        );
    }

    /// The canary's Cluster names its Flux Kustomization (`rollout.fedsched.io/gitops-agent`):
    /// while the agent has not applied a revision after the one it had at the release, m1's
    /// Ready pods (web:1's) are no evidence of web:2 — the gate waits and the rollout document
    /// says "not synced yet"; synced but not healthy it says so, apart; synced and healthy, the
    /// gate passes a minute later. A Kustomization synced and failing its health check fails
    /// the canary. Without the agent's state, the canary passed on web:1's pods a minute after
    /// the release (the Deployment's own object not read here).
    #[test]
    fn the_gitops_agents_sync_state_tells_not_synced_from_synced_unhealthy() {
        use crate::model::{AgentHealth, AgentStatus};
        let setup = |extra: &str| {
            let w = World::new("web:1", extra);
            let clusters: Vec<String> = FLEET
                .iter()
                .map(|c| {
                    let text = cluster(c, 40);
                    match *c {
                        "m1" => text.replace(
                            "metadata: {name: m1}",
                            "metadata: {name: m1, annotations: {rollout.fedsched.io/gitops-agent: Kustomization/flux-system/apps}}",
                        ),
                        _ => text,
                    }
                })
                .collect();
            std::fs::write(w.repo().join("clusters.yaml"), clusters.join("---\n")).expect("write");
            w
        };
        let flux = |rev: &str, attempted: &str, health: AgentHealth| AgentStatus {
            kind: "Kustomization".into(),
            revision: rev.into(),
            synced: rev == attempted,
            health,
            message: "Ready=Unknown Progressing: Reconciliation in progress".into(),
        };
        let w = setup("");
        let rec = w.reconciler();
        let pass = |w: &World, rec: &Reconciler, now: u64, agent: &AgentStatus| {
            let mut inputs = w.inputs(now, &ready);
            for s in inputs.snapshots.iter_mut().filter(|s| s.name == "m1") {
                if let Some(p) = s.pods.as_mut() {
                    Arc::make_mut(p).agents =
                        BTreeMap::from([("Kustomization/flux-system/apps".to_string(), agent.clone())]);
                }
            }
            rec.reconcile(&inputs, &w.out(), crate::publish::Trigger::Timer, now).expect("pass")
        };
        let at = |rev: &str| flux(rev, rev, AgentHealth::Healthy);
        pass(&w, &rec, T0, &at("main@sha1:r1"));
        w.commit("web:2", "");
        let report = pass(&w, &rec, T0 + 1_000, &at("main@sha1:r1"));
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        // The poller reads the agent's object of the gated stage's member, beside the workload's.
        let flux_key = crate::policy::ObjectKey::new(
            "kustomize.toolkit.fluxcd.io/v1",
            "Kustomization",
            Some("flux-system"),
            "apps",
        );
        assert!(report.rollout_objects["m1"].contains(&flux_key), "{:?}", report.rollout_objects);
        assert!(!report.rollout_objects.contains_key("m2"), "m2 is not gated, and names no agent");
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.agent_revisions, BTreeMap::from([("m1".to_string(), "main@sha1:r1".to_string())]));
        // Not synced: the agent is still at the release's revision (then trying the next one).
        for (dt, agent) in [
            (2_000, at("main@sha1:r1")),
            (2_000 + MIN, flux("main@sha1:r1", "main@sha1:r2", AgentHealth::Healthy)),
            (3_000 + MIN, at("main@sha1:r1")),
        ] {
            pass(&w, &rec, T0 + dt, &agent);
        }
        assert_eq!(w.images()[1], "web:1", "the gate passed on the previous version's pods");
        let now = T0 + 3_000 + MIN;
        let doc = crate::views::rollout::rollout_of(&rec.store, &key, now).expect("doc");
        let m1 = &doc["gate"]["clusters"]["m1"];
        assert_eq!(m1["state"], "NotSynced", "{doc:#}");
        assert!(m1["agent"].as_str().is_some_and(|a| a.starts_with("not synced yet (Kustomization/flux-system/apps: still at main@sha1:r1")), "{doc:#}");
        assert!(
            crate::views::rollout::to_text(&doc).contains("m1: NotSynced, GitOps agent not synced yet"),
            "{}",
            crate::views::rollout::to_text(&doc)
        );
        // Synced, not healthy yet: told apart, and still no gate.
        pass(&w, &rec, T0 + 4_000 + MIN, &flux("main@sha1:r2", "main@sha1:r2", AgentHealth::Progressing));
        pass(&w, &rec, T0 + 5_000 + 2 * MIN, &flux("main@sha1:r2", "main@sha1:r2", AgentHealth::Progressing));
        assert_eq!(w.images()[1], "web:1", "the gate passed while the agent said not healthy");
        let doc = crate::views::rollout::rollout_of(&rec.store, &key, T0 + 5_000 + 2 * MIN).expect("doc");
        assert_eq!(doc["gate"]["clusters"]["m1"]["state"], "Progressing", "{doc:#}");
        assert!(
            doc["gate"]["clusters"]["m1"]["agent"].as_str().is_some_and(|a| a.starts_with("synced, not healthy yet")),
            "{doc:#}"
        );
        // Synced and healthy: a minute of it, and the wave.
        pass(&w, &rec, T0 + 6_000 + 2 * MIN, &at("main@sha1:r2"));
        pass(&w, &rec, T0 + 6_000 + 3 * MIN, &at("main@sha1:r2"));
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"]);

        // Synced, and the agent's health check failed: the canary failed, halted.
        let w = setup("");
        let rec = w.reconciler();
        pass(&w, &rec, T0, &at("main@sha1:r1"));
        w.commit("web:bad", "");
        pass(&w, &rec, T0 + 1_000, &at("main@sha1:r1"));
        let mut failed = flux("main@sha1:r2", "main@sha1:r2", AgentHealth::Degraded);
        failed.message = "Ready=False HealthCheckFailed: timeout waiting for: [Deployment/shop/web]".into();
        pass(&w, &rec, T0 + 2_000, &failed);
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.phase, crate::schedule::rollout::Phase::Halted, "{state:#?}");
        assert!(state.failed["m1"].contains("HealthCheckFailed"), "{state:#?}");
    }

    /// The cost without a RolloutPolicy: the stage looks at no template and asks the poller
    /// for no object (workload or GitOps agent) — pass after pass, with a change of the
    /// template too. With one and no rollout under way, it looks at every template and reads
    /// nothing either (before, the first stage's objects were read every round).
    #[test]
    fn without_a_rollout_policy_the_stage_does_no_per_workload_work_and_reads_nothing() {
        let w = World::new("web:1", "");
        let without: Vec<String> =
            repo("web:1", "").split("---\n").filter(|d| !d.contains("RolloutPolicy")).map(String::from).collect();
        std::fs::write(w.repo().join("apps.yaml"), without.join("---\n")).expect("write");
        let rec = w.reconciler();
        for (i, image) in ["web:1", "web:1", "web:2", "web:2"].into_iter().enumerate() {
            let text = without.join("---\n").replace("web:1", image);
            std::fs::write(w.repo().join("apps.yaml"), text).expect("write");
            let now = T0 + i as u64 * MIN;
            let report =
                rec.reconcile(&w.inputs(now, &ready), &w.out(), crate::publish::Trigger::Timer, now).expect("pass");
            assert_eq!((report.rollout_examined, report.rollout_objects.len()), (0, 0), "pass {i}");
        }
        assert_eq!(w.images(), ["web:2"; 5], "one publish for every cluster");
        // With the policy, no rollout under way: every template looked at, nothing read.
        w.commit("web:2", "");
        w.pass(&rec, T0 + 10 * MIN, &ready);
        let report = rec
            .reconcile(&w.inputs(T0 + 11 * MIN, &ready), &w.out(), crate::publish::Trigger::Timer, T0 + 11 * MIN)
            .expect("pass");
        assert_eq!((report.rollout_examined, report.rollout_objects.len()), (1, 0));
    }

    /// Dispatching to the canary suspended (the PropagationPolicy's `suspension`): m1 keeps
    /// web:1, whose Ready pods are no evidence of web:2; the rollout waits at the canary, its
    /// deadline paused too, and goes on once dispatching resumes. Before, the canary passed on
    /// the previous version's pods a minute after its release and the wave got web:2 first.
    #[test]
    fn a_suspended_canary_pauses_the_rollout_until_dispatching_resumes() {
        let w = World::new("web:1", "");
        let rec = w.reconciler();
        let write = |image: &str, suspended: bool| {
            let mut text = repo(image, "");
            if suspended {
                text = text.replace(
                    "replicaScheduling: {replicaSchedulingType: Duplicated}\n",
                    "replicaScheduling: {replicaSchedulingType: Duplicated}\n  suspension: {dispatchingOnClusters: {clusterNames: [m1]}}\n",
                );
                assert!(text.contains("suspension"), "{text}");
            }
            std::fs::write(w.repo().join("apps.yaml"), text).expect("write");
        };
        w.pass(&rec, T0, &ready);
        write("web:2", true);
        for dt in [1_000, 2_000, 2_000 + MIN, 2_000 + 2 * MIN, 2_000 + 20 * MIN] {
            w.pass(&rec, T0 + dt, &ready);
        }
        assert_eq!(w.images(), ["web:1"; 5], "the rollout went on while the canary was suspended");
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(
            (state.phase.clone(), state.released),
            (crate::schedule::rollout::Phase::Progressing, 1),
            "{state:#?}"
        );
        // Dispatching resumes: the canary gets web:2, the wave a minute of health later.
        write("web:2", false);
        let t = T0 + 3_000 + 20 * MIN;
        w.pass(&rec, t, &ready);
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"]);
        w.pass(&rec, t + 1_000, &ready);
        w.pass(&rec, t + 1_000 + MIN, &ready);
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"]);
    }

    #[test]
    fn an_approval_commit_releases_the_next_stage() {
        let w = World::new("web:1", "");
        // The canary needs an approval: written into its stage; `approved`: the list's names.
        let with_approval = |image: &str, approved: &str| {
            let text = repo(image, &format!("  approvedStages: [{approved}]\n"))
                .replace("clusterNames: [m1]}}", "clusterNames: [m1]}, requireApproval: true}");
            std::fs::write(w.repo().join("apps.yaml"), text).expect("write");
        };
        with_approval("web:1", "");
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        with_approval("web:2", "");
        w.pass(&rec, T0 + 1_000, &ready);
        for dt in [2_000, 2_000 + MIN, 2_000 + 30 * MIN] {
            w.pass(&rec, T0 + dt, &ready);
        }
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"], "released without approval");
        with_approval("web:2", "canary");
        w.pass(&rec, T0 + 31 * MIN, &ready);
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"], "the approval released the wave");
    }

    /// `onNewVersion: Queue` through the reconciler: web:3 committed while web:2 is at the
    /// canary waits — the canary keeps web:2 (not the template's web:3), web:2 goes on through
    /// the wave and the final stage, and the pass that completes it releases web:3 to the
    /// canary with web:2 as its previous version. Without the queue's target, the canary and
    /// every released stage would render the template (web:3) at once.
    #[test]
    fn a_queued_version_waits_for_the_rollout_under_way_and_then_starts_at_the_canary() {
        let queue = "  onNewVersion: Queue\n";
        let w = World::new("web:1", queue);
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        w.commit("web:2", queue);
        w.pass(&rec, T0 + 1_000, &ready);
        w.commit("web:3", queue);
        w.pass(&rec, T0 + 2_000, &ready);
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"], "web:3 did not wait");
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let doc = crate::views::rollout::rollout_of(&rec.store, &key, T0 + 2_000).expect("doc");
        assert!(doc["queued"]["version"].is_string(), "{doc:#}");
        assert!(crate::views::rollout::to_text(&doc).contains("queued: version"), "{doc:#}");
        w.pass(&rec, T0 + 2_000 + MIN, &ready);
        assert_eq!(w.images(), ["web:2", "web:2", "web:2", "web:1", "web:1"], "web:2's wave");
        w.pass(&rec, T0 + 3_000 + MIN, &ready);
        w.pass(&rec, T0 + 3_000 + 2 * MIN, &ready);
        assert_eq!(w.images(), ["web:2"; 5]);
        w.pass(&rec, T0 + 4_000 + 2 * MIN, &ready);
        w.pass(&rec, T0 + 4_000 + 3 * MIN, &ready);
        assert_eq!(w.images(), ["web:3", "web:2", "web:2", "web:2", "web:2"], "web:3 after web:2 completed");
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!((state.phase.clone(), state.released, state.queued.clone()), (Phase::Progressing, 1, None));
        let notes: Vec<String> = rec.store.history(&key).expect("history").into_iter().flat_map(|h| h.notes).collect();
        assert!(notes.iter().any(|n| n.contains("stage canary queued: a new version")), "{notes:#?}");
    }

    /// A failover during a halted rollout: web is on three of the five members (spread to
    /// three clusters), the canary is its first by name (`maxConcurrency: 1`), web:bad
    /// crash-loops there and the rollout halts. The canary member is lost; after the
    /// toleration its replicas move to a member new to the workload, and the canary stage by
    /// `maxConcurrency` now names another member. Every member the workload runs on gets
    /// web:1, the version of the clusters it moved from: never web:bad, which failed its gate.
    /// Before the stage's clusters were fixed at its release, the member that moved into the
    /// halted canary stage got web:bad.
    #[test]
    fn a_failover_during_a_halted_rollout_moves_the_previous_version_never_the_failed_one() {
        let spread = |image: &str| {
            repo(image, "")
                .replace(
                    "    replicaScheduling: {replicaSchedulingType: Duplicated}\n",
                    "    replicaScheduling: {replicaSchedulingType: Duplicated}\n    \
                     spreadConstraints: [{spreadByField: cluster, minGroups: 3, maxGroups: 3}]\n",
                )
                .replace("{name: canary, clusterAffinity: {clusterNames: [m1]}}", "{name: canary, maxConcurrency: 1}")
        };
        let w = World::new("web:1", "");
        let write = |image: &str| std::fs::write(w.repo().join("apps.yaml"), spread(image)).expect("write");
        write("web:1");
        let rec = w.reconciler();
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let placed = || -> Vec<String> {
            let p = rec.store.placements().expect("placements").into_iter().find(|p| p.workload == key);
            p.map(|p| p.targets.keys().cloned().collect()).unwrap_or_default()
        };
        w.pass(&rec, T0, &ready);
        let before = placed();
        assert_eq!(before.len(), 3, "{before:?}");
        let canary = before[0].clone();
        write("web:bad");
        w.pass(&rec, T0 + 1_000, &ready);
        let crash = |c: &str| if c == canary { Pods::Crashing } else { Pods::Ready };
        w.pass(&rec, T0 + 2_000, &crash);
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.phase, Phase::Halted, "{state:#?}");
        assert_eq!(image(&w.out(), &canary), "web:bad");
        // The canary member is lost; its replicas leave after the toleration.
        let lost = |now: u64| {
            let mut inputs = w.inputs(now, &crash);
            for s in inputs.snapshots.iter_mut().filter(|s| s.name == canary) {
                s.health = crate::model::Health::Unreachable { reason: "connection refused".into() };
            }
            rec.reconcile(&inputs, &w.out(), crate::publish::Trigger::Timer, now).expect("pass");
        };
        for dt in [10_000, 310_000, 320_000, 320_000 + 2 * MIN] {
            lost(T0 + dt);
        }
        let after = placed();
        let moved: Vec<&String> = after.iter().filter(|c| !before.contains(c)).collect();
        assert!(!after.contains(&canary) && moved.len() == 1, "{before:?} -> {after:?}");
        for c in &after {
            assert_eq!(image(&w.out(), c), "web:1", "{c} ({before:?} -> {after:?})");
        }
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.phase, Phase::Halted, "{state:#?}");
        let doc = crate::views::rollout::document(&state, T0 + 320_000 + 2 * MIN);
        assert_eq!(doc["stages"][0]["previousOn"], serde_json::json!([after[0]]), "{doc:#}");
    }

    /// What a member's Widget (a custom kind) shows: `(generation, observedGeneration, phase)`.
    type WidgetState = (i64, i64, &'static str);

    /// "What the new version runs means" for a custom kind: a Widget (`example.io/v1`), whose
    /// pods fedsched does not attribute, is judged by its `ResourceInterpreterCustomization`'s
    /// `healthInterpretation` (Lua: Running at its observed generation) on the object the
    /// member shows: not the new version while its generation is the one read at the release,
    /// then not Healthy while the script says no, Healthy when it says yes. Before, a Widget
    /// was not observed and its canary passed `minSuccessTime` after the release whatever it
    /// did; the rollout also asks the poller for the Widget object on the gated stage only.
    #[test]
    fn a_custom_kinds_health_interpretation_decides_its_stage() {
        let widget = |image: &str| {
            format!(
                r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: web, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: example.io/v1, kind: Widget, name: web}}]
  placement:
    replicaScheduling: {{replicaSchedulingType: Duplicated}}
---
apiVersion: fedsched.io/v1alpha1
kind: RolloutPolicy
metadata: {{name: web, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: example.io/v1, kind: Widget, name: web}}]
  stages:
  - {{name: canary, clusterAffinity: {{clusterNames: [m1]}}}}
  - {{name: wave, maxConcurrency: 2}}
  minSuccessTime: 1m
  progressDeadline: 10m
---
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {{name: widget}}
spec:
  target: {{apiVersion: example.io/v1, kind: Widget}}
  customizations:
    healthInterpretation:
      luaScript: |
        function InterpretHealth(observedObj)
          return observedObj.status ~= nil and observedObj.status.phase == 'Running'
            and observedObj.status.observedGeneration == observedObj.metadata.generation
        end
---
apiVersion: example.io/v1
kind: Widget
metadata: {{name: web, namespace: shop}}
spec:
  image: "{image}"
"#
            )
        };
        let w = World::new("web:1", "");
        let write = |image: &str| std::fs::write(w.repo().join("apps.yaml"), widget(image)).expect("write");
        write("web:1");
        let rec = w.reconciler();
        let file = |c: &str| {
            let text =
                std::fs::read_to_string(w.out().join(c).join("shop/example.io_widget_web.yaml")).unwrap_or_default();
            text.lines().find_map(|l| l.split("image: ").nth(1)).unwrap_or("-").trim_matches('"').to_string()
        };
        let images = || FLEET.iter().map(|c| file(c)).collect::<Vec<_>>();
        // A pass where the canary's Widget shows `canary` and every other one generation 1, Running.
        let pass = |now: u64, canary: WidgetState| {
            let mut inputs = w.inputs(now, &ready);
            for s in inputs.snapshots.iter_mut() {
                let (generation, observed, phase) = if s.name == "m1" { canary } else { (1, 1, "Running") };
                let text = serde_json::json!({
                    "apiVersion": "example.io/v1", "kind": "Widget",
                    "metadata": {"name": "web", "namespace": "shop", "generation": generation},
                    "status": {"observedGeneration": observed, "phase": phase},
                });
                let mut pods = (**s.pods.as_ref().expect("pods")).clone();
                pods.interpreted.insert(
                    "Widget/shop/web".into(),
                    crate::model::RawObject { generation, text: Arc::from(text.to_string()) },
                );
                s.pods = Some(Arc::new(pods));
            }
            rec.reconcile(&inputs, &w.out(), crate::publish::Trigger::Timer, now).expect("pass")
        };
        pass(T0, (1, 1, "Running"));
        assert_eq!(images(), ["web:1"; 5], "a first deploy goes everywhere");
        write("web:2");
        let r = pass(T0 + 1_000, (1, 1, "Running"));
        assert_eq!(images(), ["web:2", "web:1", "web:1", "web:1", "web:1"], "the canary alone");
        // The poller is asked for the Widget on the gated stage only.
        let key = crate::policy::ObjectKey::new("example.io/v1", "Widget", Some("shop"), "web");
        let asked: Vec<&String> =
            r.rollout_objects.iter().filter(|(_, keys)| keys.contains(&key)).map(|(c, _)| c).collect();
        assert_eq!(asked, ["m1"], "{:?}", r.rollout_objects);
        // The Widget still at the generation read at the release: the previous version.
        pass(T0 + 2_000, (1, 1, "Running"));
        pass(T0 + 2_000 + MIN, (1, 1, "Running"));
        assert_eq!(images()[1], "web:1", "passed on the previous version's Widget");
        // The new version applied, not Running yet: the script says no.
        pass(T0 + 3_000 + MIN, (2, 2, "Pending"));
        pass(T0 + 3_000 + 3 * MIN, (2, 2, "Pending"));
        assert_eq!(images()[1], "web:1", "passed while its healthInterpretation says unhealthy");
        let wr: crate::views::explain::WorkloadRef = "Widget/shop/web".parse().expect("ref");
        let opts = crate::views::workload_status::Options::default();
        let now = T0 + 3_000 + 3 * MIN;
        let st = crate::views::workload_status::workload_document(&rec.store, &wr, now, &opts).expect("status");
        assert_eq!(st["rollout"]["gate"]["clusters"]["m1"]["state"], "Progressing", "{st:#}");
        // Running at its observed generation: Healthy, the wave a minute later.
        pass(T0 + 4_000 + 3 * MIN, (2, 2, "Running"));
        pass(T0 + 4_000 + 4 * MIN, (2, 2, "Running"));
        assert_eq!(images(), ["web:2", "web:2", "web:2", "web:1", "web:1"], "the wave");
        // A version whose Widget never runs fails at the deadline.
        write("web:3");
        let t = T0 + 5_000 + 4 * MIN;
        pass(t, (2, 2, "Running"));
        for dt in [1_000, 5 * MIN, 10 * MIN] {
            pass(t + dt, (3, 3, "Failed"));
        }
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.phase, Phase::Halted, "{state:#?}");
        assert!(state.failed["m1"].contains("progressDeadline"), "{state:#?}");
    }

    /// Visible everywhere: each transition of the rollout (released, passed, complete, halted,
    /// superseded, with its cause) is exactly one history record of the workload — passes in
    /// between that change nothing add none — and the stage, the gate with its time left, and
    /// the failures are in `fedsched status` (JSON and text), `explain` and the document the
    /// API answers (`/api/v1/workloads/{ns}/{name}/rollout`, [`crate::views::rollout::rollouts_named`]).
    #[test]
    fn each_stage_transition_is_one_history_record_and_every_view_shows_stage_gate_and_failures() {
        let w = World::new("web:1", "");
        let rec = w.reconciler();
        w.pass(&rec, T0, &ready);
        w.commit("web:2", "");
        let mut t = T0 + 1_000;
        w.pass(&rec, t, &ready);
        // Passes every 20 s until web:2 completes (a minute of health per stage, three stages),
        // and two more that change nothing.
        for _ in 0..14 {
            t += 20_000;
            w.pass(&rec, t, &ready);
        }
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.phase, Phase::Complete, "{state:#?}");
        // A bad image halts at the canary; a view at 30 s after its release, then the halt.
        w.commit("web:bad", "");
        t += 1_000;
        w.pass(&rec, t, &ready);
        let wr: crate::views::explain::WorkloadRef = "Deployment/shop/web".parse().expect("ref");
        let opts = crate::views::workload_status::Options::default();
        w.pass(&rec, t + 1_000, &ready);
        let st = crate::views::workload_status::workload_document(&rec.store, &wr, t + 31_000, &opts).expect("status");
        let r = &st["rollout"];
        assert_eq!((r["state"].as_str(), r["stage"].as_str()), (Some("Progressing"), Some("canary")), "{r:#}");
        assert_eq!((r["gate"]["timeLeft"].as_str(), r["gate"]["deadlineLeft"].as_str()), (Some("30s"), Some("9m 29s")));
        let gate = crate::views::rollout::gate_text(r).expect("gate");
        assert!(gate.contains("30s left of 1m") && gate.contains("deadline in 9m 29s"), "{gate}");
        let crash = |c: &str| if c == "m1" { Pods::Crashing } else { Pods::Ready };
        w.pass(&rec, t + 40_000, &crash);
        for _ in 0..3 {
            w.pass(&rec, t + 60_000, &crash);
        }
        let now = t + 61_000;
        let st = crate::views::workload_status::workload_document(&rec.store, &wr, now, &opts).expect("status");
        let api = crate::views::rollout::rollouts_named(&rec.store, "shop", "web", now).expect("api");
        let doc =
            crate::views::explain::explain(&w.inputs(now, &crash), &rec.store, &rec.settings().profiles, &wr, now)
                .expect("explain");
        for r in [&st["rollout"], &api[0], &doc["rollout"]] {
            assert_eq!((r["state"].as_str(), r["stage"].as_str()), (Some("Halted"), Some("canary")), "{r:#}");
            assert_eq!((r["failures"]["count"].as_u64(), r["failures"]["max"].as_u64()), (Some(1), Some(0)), "{r:#}");
            assert!(r["failures"]["clusters"]["m1"].as_str().is_some_and(|w| w.contains("CrashLoopBackOff")), "{r:#}");
        }
        for text in [crate::views::workload_status::to_text(&st), crate::views::explain::to_text(&doc)] {
            assert!(
                text.contains("rollout (shop/web): Halted at stage canary, failures 1/0")
                    && text.contains("failed: m1: CrashLoopBackOff on 2 pod(s)"),
                "{text}"
            );
        }
        // One history record per transition, each with its cause.
        let state = rec.store.rollout(&key).expect("read").expect("state");
        let notes: Vec<String> = rec
            .store
            .history(&key)
            .expect("history")
            .into_iter()
            .flat_map(|h| h.notes)
            .filter(|n| n.starts_with("rollout: "))
            .collect();
        let events: Vec<&str> = state.transitions.iter().map(|tr| tr.event.as_str()).collect();
        assert_eq!(
            events,
            ["released", "passed", "released", "passed", "released", "passed", "complete", "released", "halted"],
            "{state:#?}"
        );
        assert_eq!(notes.len(), state.transitions.len(), "{notes:#?}");
        for tr in &state.transitions {
            assert!(!tr.cause.is_empty(), "{tr:?}");
            let note = format!("rollout: stage {} {}: {}", tr.stage, tr.event, tr.cause);
            assert_eq!(notes.iter().filter(|n| **n == note).count(), 1, "{note}: {notes:#?}");
        }
    }
}
