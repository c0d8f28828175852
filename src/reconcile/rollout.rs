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
//! ([`RolloutPass::objects`] asks for the gated stage's and the next stage's members): not the
//! new version while its `metadata.generation` is not above the one read at the release
//! ([`RolloutState::generations`]), then rolled out as `kubectl rollout status` judges
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
use crate::render::summary::{rollout_item, shard_of};
use crate::schedule::rollout::{
    ClusterHealth, GITOPS_AGENT_ANNOTATION, MemberObserved, Phase, RolloutState, agent_object, partition, step,
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
    /// The clusters that run the new version (every other one runs `stable`).
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
    /// ([`crate::members::live::Poller::want_objects`]): per rollout, the clusters of the stage
    /// gated and of the next one to be released (the first one when no rollout is under way).
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
    pub items: Arc<BTreeMap<String, (usize, Arc<str>)>>,
    /// The shards whose rollout entries differ from the last recorded pass's.
    pub dirty: BTreeSet<usize>,
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
        for (key, state) in self.changed.iter().filter(|(key, _)| !super::record::held_whole(held_moves, key)) {
            store.put_rollout(key, state)?;
            map.insert(key.store_key(), state.clone());
        }
        for sk in &self.forgotten {
            store.remove_rollout(sk)?;
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
    items: Arc<BTreeMap<String, (usize, Arc<str>)>>,
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
    (views, positions): (&[ClusterSnapshot], &std::collections::HashMap<String, usize>),
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
    for (position, t) in set.templates.iter().enumerate() {
        out.examined += 1;
        let Some(policy) = rollout_policy_for(set, t) else { continue };
        let spec = &policy.spec;
        let sk = t.key.store_key();
        // The version is the content hash the load computed; the object is serialised only
        // for a version the state does not hold yet.
        let hash = match inputs.hashes.templates.get(position) {
            Some(h) => *h,
            None => fnv1a64(object_text(t).as_bytes()),
        };
        let name = format!("{}/{}", policy.namespace().unwrap_or(""), policy.name());
        let old = stored.get(&sk);
        let mut state = match old {
            Some(o) => o.clone(),
            None => RolloutState::settled(name.clone(), hash, object_text(t)),
        };
        state.policy = name;
        if hash != state.target_hash {
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
        let view_of = |c: &str| positions.get(c).and_then(|i| views.get(*i));
        let object = t.key.display_ref();
        // A gated stage with a member whose dispatching is suspended is paused: it got no new
        // file there, so nothing there is evidence; its release counts from when dispatching
        // resumes (so does its progressDeadline), its members' generations read again then.
        let paused = state.phase == Phase::Progressing
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
        let mut observed = BTreeMap::new();
        if state.phase == Phase::Progressing
            && !paused
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
        let fresh_transitions = || {
            state.transitions.iter().filter(|tr| tr.at_ms == now_ms && !old.is_some_and(|o| o.transitions.contains(tr)))
        };
        // A stage released this pass: its members' objects' generations now (this pass's poll
        // was before its publish), which the new version's apply raises. Only when the spec
        // changed: a change of metadata alone raises no generation.
        if state.phase == Phase::Progressing
            && let Some(current) = state.current()
            && (paused || fresh_transitions().any(|tr| tr.event == "released"))
        {
            state.generations.clear();
            state.agent_revisions.clear();
            // The agents' revisions now: the new version's commit is another one. Any change
            // of the template changes the files, so every release is compared.
            for c in stages.get(current).into_iter().flatten() {
                let seen = agents
                    .get(c)
                    .and_then(|(_, text)| view_of(c).and_then(|v| v.pods.as_deref()).and_then(|p| p.agents.get(text)));
                if let Some(a) = seen {
                    state.agent_revisions.insert(c.to_string(), a.revision.clone());
                }
            }
            let stable_spec = serde_json::from_str::<serde_json::Value>(&state.stable).ok();
            if stable_spec.as_ref().and_then(|o| o.get("spec")) != t.object.get("spec") {
                for c in stages.get(current).into_iter().flatten() {
                    let seen = view_of(c).and_then(|v| v.pods.as_deref()).and_then(|p| p.objects.get(&object));
                    if let Some(o) = seen {
                        state.generations.insert(c.to_string(), o.generation);
                    }
                }
            }
        }
        let fresh = fresh_transitions()
            .map(|tr| format!("rollout: stage {} {}: {}", tr.stage, tr.event, tr.cause))
            .collect::<Vec<_>>();
        let watched = match state.current().filter(|_| state.phase == Phase::Progressing) {
            Some(current) => current..current + 2,
            None => 0..1,
        };
        for c in stages.get(watched).into_iter().flatten().flatten() {
            let read = out.objects.entry(c.to_string()).or_default();
            read.push(t.key.clone());
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
            let new_on: BTreeSet<String> = stages
                .iter()
                .enumerate()
                .filter(|(i, _)| state.runs_new(*i))
                .flat_map(|(_, cs)| cs.iter().map(|c| c.to_string()))
                .collect();
            let object = serde_json::from_str(&state.stable).unwrap_or(serde_json::Value::Null);
            let stable = Arc::new(Template { object, ..(**t).clone() });
            let digest = fnv1a64(format!("{:x} {:x} {new_on:?}", state.stable_hash, state.target_hash).as_bytes());
            out.directives.insert(t.key.clone(), RolloutDirective { stable, new_on, digest });
        }
        items.insert(sk.clone(), summary_entry(&kept.items, (&t.key, &sk), (old, &state), &mut out.summary.dirty));
        if old != Some(&state) {
            out.changed.insert(t.key.clone(), state);
        }
        seen.insert(sk);
    }
    out.forgotten = stored.keys().filter(|sk| !seen.contains(*sk)).cloned().collect();
    out.summary.close(items, &kept.items);
    Ok(out)
}

/// A rollout's entry of the summary this pass: the last one again while its course is the
/// same, else built again; its shard is dirty when the entry differs from the last one.
fn summary_entry(
    last: &BTreeMap<String, (usize, Arc<str>)>,
    (key, sk): (&ObjectKey, &str),
    (old, state): (Option<&RolloutState>, &RolloutState),
    dirty: &mut BTreeSet<usize>,
) -> (usize, Arc<str>) {
    let item = match (last.get(sk), old) {
        (Some(last), Some(o)) if o.same_course(state) => last.clone(),
        _ => (shard_of(key), Arc::from(rollout_item(key, state))),
    };
    if last.get(sk).is_none_or(|last| last.1 != item.1) {
        dirty.insert(item.0);
    }
    item
}

impl RolloutSummary {
    /// Ends the pass's summary with its `items`: the shards of the entries the last
    /// recorded pass had and this one has not are dirty too.
    fn close(&mut self, items: BTreeMap<String, (usize, Arc<str>)>, last: &BTreeMap<String, (usize, Arc<str>)>) {
        for (sk, (shard, _)) in last {
            if !items.contains_key(sk) {
                self.dirty.insert(*shard);
            }
        }
        self.items = Arc::new(items);
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
        || (*seen.owner == Owner::Unknown && object.is_none() && agent.is_none())
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
    if let Some(o) = object
        && seen.generation_at_release.is_some_and(|g| o.generation <= g)
    {
        return ClusterHealth::Progressing;
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
        assert_eq!(report.rollout_objects.keys().collect::<Vec<_>>(), ["m1"], "no rollout: the first stage's");
        w.commit("web:2", "");
        let report = pass(T0 + 1_000, object(1, 2));
        assert_eq!(w.images(), ["web:2", "web:1", "web:1", "web:1", "web:1"]);
        let key = crate::policy::ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let state = rec.store.rollout(&key).expect("read").expect("state");
        assert_eq!(state.generations, BTreeMap::from([("m1".to_string(), 1)]), "{state:#?}");
        // The poller reads the gated stage's and the next one's objects, no other.
        let read: Vec<&str> = report.rollout_objects.keys().map(String::as_str).collect();
        assert_eq!(read, ["m1", "m2", "m3"]);
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
        assert!(!report.rollout_objects["m2"].contains(&flux_key), "m2 names no agent");
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
    /// template too. With one, it looks at every template and reads the first stage's object.
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
        // With the policy: every template looked at, the first stage's object read.
        w.commit("web:2", "");
        w.pass(&rec, T0 + 10 * MIN, &ready);
        let report = rec
            .reconcile(&w.inputs(T0 + 11 * MIN, &ready), &w.out(), crate::publish::Trigger::Timer, T0 + 11 * MIN)
            .expect("pass");
        assert_eq!((report.rollout_examined, report.rollout_objects.len()), (1, 1));
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
}
