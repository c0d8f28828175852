//! Stage "plan the publish": which cluster directories this pass publishes and with what
//! files — all of them on a full check, else those whose desired files (paths and content
//! hashes, summed as a digest per cluster) differ from what this process last published —
//! and the summary's shards (`.fedsched/placements/`), joined from per-workload fragments
//! ([`crate::render::summary`]). Hands over a [`PlannedPublish`]: the
//! [`PublishPlan`] for [`publish::publish_guarded`], and what the cache learns once it is
//! published ([`PlannedPublish::published`]).
//!
//! Files of decisions restored from the store (known by hash, checked on the disk on a full
//! check) are published as "keep": neither written nor removed.
//!
//! Namespaces (`[publish] namespaces`, Karmada's namespace propagation): a cluster directory
//! gets the Namespace of every namespace its objects are in, unless a decision writes that
//! Namespace there itself ([`cache::DesiredOutput::namespace_files`], rendered by
//! [`crate::render::namespace`]). The per-cluster digests and Namespace files are kept between
//! passes and brought up to date from what a pass changed ([`desired`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::policy::ObjectKey;
use crate::policy::PolicySet;
use crate::publish::{self, ClusterFiles, PublishPlan, SummaryPlan};
use crate::render::summary::{Placement, SHARDS, Shard, Shards, shard_name, shard_of, summary_into, summary_item};
use crate::schedule::stability::{EvictionTask, StabilityState, WorkloadStability};

use super::cache;
use super::decide::Decisions;
use super::rollout::RolloutSummary;

/// What the plan stage keeps between passes (its part of [`cache::Kept`]).
#[derive(Default, Clone)]
pub(super) struct Kept {
    /// Digest of the files last published per cluster.
    published: HashMap<String, u64>,
    /// The summary's shards last published.
    published_summary: Option<Shards>,
    /// The clusters whose root files were last published ([`PublishPlan::roots`]).
    published_roots: Option<BTreeSet<String>>,
    /// The summary's shards of the last pass.
    summary: Option<Shards>,
    /// The graceful eviction tasks the summary entries of the pass list, per workload with
    /// any ([`crate::render::summary::Placement::tasks`]): those the engine's state leaves
    /// after the pass ([`WorkloadStability::kept_tasks`], brought up to date by [`retask`]).
    tasks: BTreeMap<ObjectKey, Vec<EvictionTask>>,
    /// The last pass's desired output, as the plan of the publish reads it.
    desired: Option<cache::DesiredOutput>,
    /// The paths each workload's decision owned in the last pass (the publish's guard).
    owners: Option<Arc<publish::Owners>>,
    /// When the whole plan was last published (None: never in this process).
    last_full_check_ms: Option<u64>,
}

impl Kept {
    /// Whether this pass publishes the whole plan: every [`cache::FULL_CHECK_EVERY_MS`], on
    /// the first pass of a process and on a `sighup` trigger.
    pub fn full_check_due(&self, now_ms: u64, trigger: crate::publish::Trigger) -> bool {
        trigger == cache::FULL_CHECK_TRIGGER
            || self.last_full_check_ms.is_none_or(|at| now_ms.saturating_sub(at) >= cache::FULL_CHECK_EVERY_MS)
    }
}

/// What the plan stage hands over.
pub(super) struct PlannedPublish<'a> {
    /// The cluster directories to publish, and the summary's changed shards.
    pub plan: PublishPlan,
    /// Files of the desired output that are not compared with the disk this pass: those of
    /// clusters not published (each with its `kustomization.yaml`), the kept files of
    /// restored decisions, and the unchanged shards of the summary.
    pub unchanged: usize,
    /// Per cluster of the set: the digest of its desired files and how many there are.
    digests: HashMap<&'a str, (u64, usize)>,
    summary: Shards,
}

/// Plans the publish of the decisions of the pass (in `decisions.order`, each in the cache).
pub(super) fn plan<'a>(
    kept: &mut Kept,
    cached: &mut cache::KeptDecisions,
    set: &'a Arc<PolicySet>,
    (decisions, rollouts, placements): (&Decisions, &RolloutSummary, &cache::Placements),
    state: &StabilityState,
    full_check: bool,
    settings: &super::settings::PublishSettings,
) -> PlannedPublish<'a> {
    let namespaces = settings.namespaces;
    let summary = summary(kept, cached, decisions, rollouts, state);
    let order = decisions.keys();
    let memo = desired(kept, cached, set, decisions, full_check, namespaces);
    let digests: HashMap<&str, (u64, usize)> =
        set.clusters.iter().map(|c| (c.meta.name.as_str(), memo.digest(&c.meta.name))).collect();
    let dirty: BTreeSet<&str> = digests
        .iter()
        .filter(|(c, (digest, _))| {
            full_check
                || !crate::util::memo::on(crate::util::memo::Name::PublishedDigests)
                || kept.published.get(**c) != Some(digest)
        })
        .map(|(c, _)| *c)
        .collect();
    let mut plan = PublishPlan {
        clusters: BTreeMap::new(),
        summary: None,
        owners: owners(kept, cached, decisions, full_check),
        layout: settings.layout.clone(),
        roots: None,
    };
    // The layout's root files name every cluster: planned on a full check and when the
    // clusters differ from those last published with them.
    let names: BTreeSet<String> = set.clusters.iter().map(|c| c.meta.name.clone()).collect();
    if full_check || kept.published_roots.as_ref() != Some(&names) {
        plan.roots = Some(names);
    }
    for c in &dirty {
        plan.clusters.insert((*c).to_string(), ClusterFiles::default());
    }
    // Files of restored decisions (known by hash, checked on the disk) are kept as they are.
    // With no cluster to publish there is nothing to fill; with some, the decisions that have
    // paths there (in decision order), not every decision.
    let mut restored_files = 0;
    let holders: Option<crate::util::hash::KeySet<&crate::policy::ObjectKey>> =
        (!full_check).then(|| dirty.iter().flat_map(|c| memo.holders_of(c)).collect());
    let holds = |k: &crate::policy::ObjectKey| holders.as_ref().is_none_or(|h| h.contains(k));
    for k in order.filter(|k| !dirty.is_empty() && holds(k)) {
        let Some(c) = cached.get(k) else { continue };
        let d = &c.decided;
        for (cluster, (path, content)) in &d.files {
            if let Some(cf) = plan.clusters.get_mut(cluster) {
                if c.rendered {
                    cf.files.insert(path.clone(), content.clone());
                } else {
                    cf.keep.insert(path.clone());
                    // On a full check, a restored decision still restored was read on the
                    // disk in this pass (else it was decided again).
                    if full_check {
                        cf.generated.insert(path.clone());
                    }
                    restored_files += 1;
                }
            }
        }
        for (cluster, path) in &d.keep {
            if let Some(cf) = plan.clusters.get_mut(cluster) {
                cf.keep.insert(path.clone());
            }
        }
    }
    for (cluster, namespaces) in &memo.namespace_files {
        if let Some(cf) = plan.clusters.get_mut(cluster) {
            cf.files.extend(namespaces.files.iter().map(|(path, (content, _))| (path.clone(), content.clone())));
        }
    }
    kept.desired = Some(memo);
    let skipped_files: usize =
        digests.iter().filter(|(c, _)| !dirty.contains(*c)).map(|(_, (_, files))| files + 1).sum();
    // The summary's shards: every one compared with the disk on a full check and on this
    // process's first publish, else those that differ from the shards last published.
    let compare = full_check || kept.published_summary.is_none();
    let mut changed: Vec<Shard> = match &kept.published_summary {
        Some(published) if !compare => summary.changed_from(published),
        _ => Shard::all().collect(),
    };
    // The workloads this pass removes keep their entries where the guard holds their
    // removal (the publish adds them back: `SummaryPlan::removals`): their shards are
    // published every pass until the removal is.
    let mut removals: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for (k, p) in decisions.removed.iter().filter_map(|k| Some((k, placements.get(k)?))) {
        if p.files.is_empty() {
            continue;
        }
        let files = p.files.iter().map(|(c, path)| format!("{c}/{path}")).collect();
        let shard = shard_of(k);
        let item = summary_item(&Placement { tasks: tasks_of(&kept.tasks, k), ..p.summary() });
        removals.entry(shard_name(shard)).or_default().push((item, files));
        if !changed.contains(&shard) {
            changed.push(shard);
        }
    }
    changed.sort_unstable();
    let shards_unchanged = SHARDS - changed.len();
    if !changed.is_empty() {
        plan.summary = Some(SummaryPlan {
            shards: changed.iter().map(|&i| (shard_name(i), Arc::clone(&summary.0[i.index()]))).collect(),
            compare,
            removals,
        });
    }
    let unchanged = skipped_files + restored_files + shards_unchanged;
    PlannedPublish { plan, unchanged, digests, summary }
}

/// The paths each workload's decision owns ([`PublishPlan::owners`]: files and kept files),
/// kept between passes: the entries of the workloads decided afresh or dropped are made again
/// and the others kept, so that an edit does not copy every decision's paths. Built from every
/// decision on a full check and on the first pass. Debug builds check it against one built
/// from scratch.
fn owners(
    kept: &mut Kept,
    cached: &cache::KeptDecisions,
    decisions: &Decisions,
    full_check: bool,
) -> Arc<publish::Owners> {
    let owners = match kept.owners.take() {
        Some(mut memo) if !full_check && crate::util::memo::on(crate::util::memo::Name::Owners) => {
            let m = Arc::make_mut(&mut memo);
            for k in decisions.fresh.iter().chain(&decisions.dropped) {
                match cached.get(k).map(|c| owned_paths(&c.decided)).filter(|o| !o.is_empty()) {
                    Some(owned) => m.insert(k.to_string(), owned),
                    None => m.remove(&k.to_string()),
                };
            }
            memo
        }
        _ => Arc::new(owners_of(cached, decisions.keys())),
    };
    debug_assert!(*owners == owners_of(cached, decisions.keys()), "owners kept between passes differ");
    kept.owners = Some(Arc::clone(&owners));
    owners
}

/// [`owners`] from scratch: every decision of `order` that owns a path.
fn owners_of<'k>(
    cached: &cache::KeptDecisions,
    order: impl Iterator<Item = &'k crate::policy::ObjectKey>,
) -> publish::Owners {
    order
        .filter_map(|k| {
            let owned = owned_paths(&cached.get(k)?.decided);
            (!owned.is_empty()).then(|| (k.to_string(), owned))
        })
        .collect()
}

/// The paths (relative to a cluster directory) of a decision's files and kept files.
fn owned_paths(d: &super::decide::Decided) -> BTreeSet<String> {
    d.files.iter().map(|(_, (p, _))| p).chain(d.keep.iter().map(|(_, p)| p)).cloned().collect()
}

/// The desired output of the pass as the plan reads it: per cluster the digest of its
/// decisions' files and their count, and the Namespace files each cluster needs. Kept between
/// passes and brought up to date from what the pass changed — the decisions it replaced or
/// dropped taken out, those it made afresh put in, the Namespace files of the clusters they
/// touch made again (of every cluster when the set is another: its Namespace objects may have
/// changed) — so that an edit does not walk every decision's files. Built from every decision
/// on a full check, on the first pass and when `[publish] namespaces` changes. Debug builds
/// check it against one built from scratch.
fn desired(
    kept: &mut Kept,
    cached: &cache::KeptDecisions,
    set: &Arc<PolicySet>,
    decisions: &Decisions,
    full_check: bool,
    namespaces: bool,
) -> cache::DesiredOutput {
    let memo = match kept.desired.take() {
        Some(mut memo)
            if !full_check
                && memo.namespaces == namespaces
                && crate::util::memo::on(crate::util::memo::Name::DesiredOutput) =>
        {
            // The clusters whose Namespace files may change.
            let mut touched: BTreeSet<String> = BTreeSet::new();
            for r in &decisions.replaced {
                memo.take_out(r);
                touched.extend(r.files.iter().map(|(c, _, _)| c).chain(r.keep.iter().map(|(c, _)| c)).cloned());
            }
            for d in decisions.fresh.iter().filter_map(|k| cached.get(k)).map(|c| &c.decided) {
                memo.put_in(d);
                touched.extend(d.files.iter().map(|(c, _)| c).chain(d.keep.iter().map(|(c, _)| c)).cloned());
            }
            // The Namespace files read the set's Namespace objects: when they are the same
            // objects (an edit of another file), only the touched clusters' are made again.
            let same_namespaces =
                Arc::ptr_eq(&memo.set, set) || namespace_objects(&memo.set).eq(namespace_objects(set));
            memo.set = Arc::clone(set);
            memo.namespace_files_of(if same_namespaces { Some(&touched) } else { None });
            memo
        }
        _ => from_scratch(cached, set, namespaces),
    };
    debug_assert!(
        memo.same_as(&from_scratch(cached, set, namespaces)),
        "the desired output kept between passes drifted"
    );
    memo
}

/// The set's Namespace objects (their identities), in order.
fn namespace_objects(set: &PolicySet) -> impl Iterator<Item = crate::util::memo::ArcKey<crate::policy::Template>> + '_ {
    set.namespace_objects().iter().map(crate::util::memo::ArcKey::of)
}

/// The desired output built from every decision of the cache ([`desired`]).
fn from_scratch(cached: &cache::KeptDecisions, set: &Arc<PolicySet>, namespaces: bool) -> cache::DesiredOutput {
    let mut memo = cache::DesiredOutput::new(Arc::clone(set), namespaces);
    for c in cached.values() {
        memo.put_in(&c.decided);
    }
    memo.namespace_files_of(None);
    memo
}

impl PlannedPublish<'_> {
    /// Tells the cache what was published: a cluster's digest unless the mass-deletion guard
    /// held it or changes of a held move or removal waited in it (`report`), the summary's bytes, and the
    /// time of a full check.
    pub fn published(
        self,
        plan: &PublishPlan,
        kept: &mut Kept,
        cached: &mut cache::KeptDecisions,
        report: &publish::PublishReport,
        full_check: bool,
        now_ms: u64,
    ) {
        let held: BTreeSet<&str> = report
            .held
            .iter()
            .map(|h| h.cluster.as_str())
            .chain(report.held_moves.iter().flat_map(|m| m.waiting.iter().map(String::as_str)))
            .chain(report.held_removals.iter().flat_map(|m| m.waiting.iter().map(String::as_str)))
            .collect();
        if full_check {
            kept.published.clear();
            kept.last_full_check_ms = Some(now_ms);
        }
        for c in plan.clusters.keys() {
            match (held.contains(c.as_str()), self.digests.get(c.as_str())) {
                (false, Some((digest, _))) => kept.published.insert(c.clone(), *digest),
                _ => kept.published.remove(c),
            };
        }
        // A change the guard held whole kept its published entry, not the planned one
        // (`publish::diff`): the next passes compare every shard with the disk until it is
        // published.
        if !report.held_moves.is_empty() {
            kept.published_summary = None;
        } else if plan.summary.is_some() {
            kept.published_summary = Some(self.summary);
        }
        // (A held cluster may not have its directory yet: its root files wait for it.)
        if plan.roots.is_some() {
            kept.published_roots = plan.roots.clone().filter(|_| report.held.is_empty());
        }
        if full_check {
            keep_stats(cached, &report.stats);
        }
    }
}

/// After a full check: each rendered decision keeps the stats that prove its files now (those
/// the publish found with their bytes, settled), so that a restarted process stats these files
/// instead of reading them ([`cache::CachedDecision::check_files`]); a decision whose stats
/// changed is written to the store again by the record stage.
fn keep_stats(cached: &mut cache::KeptDecisions, stats: &HashMap<String, crate::util::stat::FileStat>) {
    if stats.is_empty() {
        return;
    }
    for c in cached.values_mut().filter(|c| c.rendered) {
        let now = cache::proven(
            c.decided
                .files
                .iter()
                .map(|(cluster, (path, _))| stats.get(&format!("{cluster}/{path}")).copied())
                .collect(),
        );
        // Copied (`make_mut`) only when something changes.
        if now != c.stats {
            Arc::make_mut(c).keep_stats(now);
        }
    }
}

/// The summary's shards of the pass, every shard joined from the decisions' fragments (each
/// built once per decision and kept with it; an equal shard keeps the last one's `Arc`). Once a
/// summary was made, every decision then had its fragment: only the pass's fresh decisions and
/// those whose graceful eviction tasks changed ([`retask`]) can lack one. The rollouts' entries
/// follow each shard's placements. Debug builds compare the shards with ones made from scratch.
/// (Joining only the shards of changed decisions, a memo of its own, earned nothing beyond the
/// noise: issue 51's ablation.)
fn summary(
    kept: &mut Kept,
    cached: &mut cache::KeptDecisions,
    decisions: &Decisions,
    rollouts: &RolloutSummary,
    state: &StabilityState,
) -> Shards {
    let order = decisions.keys();
    // The workloads whose graceful eviction tasks are not those their entry lists: their
    // fragments are made again (a task starts, ends or changes without a fresh decision).
    if kept.summary.is_none() {
        kept.tasks.clear();
    }
    let retasked = retask(&mut kept.tasks, state);
    for k in &retasked {
        if let Some(c) = cached.get_mut(k) {
            Arc::make_mut(c).summary_item = None;
        }
    }
    let (made, tasks) = (&kept.summary, &kept.tasks);
    let shards = {
        // The missing fragments (every one after a restart) on every core.
        let lacking: Vec<&crate::policy::ObjectKey> = match made {
            Some(_) => decisions.fresh.iter().chain(retasked.difference(&decisions.fresh)).collect(),
            None => order.clone().collect(),
        };
        let missing: Vec<(&crate::policy::ObjectKey, &cache::CachedDecision)> = lacking
            .into_iter()
            .filter_map(|k| cached.get_key_value(k))
            .filter(|(_, c)| c.summary_item.is_none())
            .map(|(k, c)| (k, &**c))
            .collect();
        debug_assert!(
            order.clone().filter_map(|k| cached.get(k)).filter(|c| c.summary_item.is_none()).count() == missing.len(),
            "a decision that is not fresh lacks its summary fragment"
        );
        let items = crate::util::threads::map_ordered(&missing, crate::util::threads::workers(), |(k, c)| {
            summary_item(&Placement { tasks: tasks_of(tasks, k), ..c.decided.record.summary() })
        });
        let keys: Vec<crate::policy::ObjectKey> = missing.iter().map(|(k, _)| (*k).clone()).collect();
        for (k, item) in keys.iter().zip(items) {
            if let Some(c) = cached.get_mut(k).map(Arc::make_mut) {
                c.summary_item = Some(item);
            }
        }
        let mut courses: Vec<Vec<&str>> = vec![Vec::new(); SHARDS];
        for (shard, item) in rollouts.items.values() {
            courses[shard.index()].push(item);
        }
        let mut items: Vec<Vec<&str>> = vec![Vec::new(); SHARDS];
        for k in order.clone() {
            if let Some(item) = cached.get(k).and_then(|c| c.summary_item.as_deref()) {
                items[shard_of(k).index()].push(item);
            }
        }
        let mut shards = made.clone().unwrap_or_else(Shards::empty);
        for (i, list) in items.iter().enumerate() {
            let mut text = String::new();
            summary_into(&mut text, list, &courses[i]);
            // An equal shard keeps its `Arc`: the plan finds it unchanged by address.
            if *shards.0[i] != text {
                shards.0[i] = Arc::new(text);
            }
        }
        shards
    };
    #[cfg(debug_assertions)]
    {
        let scratch: BTreeMap<ObjectKey, Vec<EvictionTask>> =
            state.workloads.iter().map(|(k, w)| (k.clone(), w.kept_tasks().cloned().collect())).collect();
        debug_assert!(
            shards
                == Shards::of(
                    order
                        .clone()
                        .filter_map(|k| cached.get_key_value(k))
                        .map(|(k, c)| Placement { tasks: tasks_of(&scratch, k), ..c.decided.record.summary() }),
                    rollouts.items.values().map(|(shard, item)| (*shard, &**item)),
                ),
            "the summary's shards kept between passes differ from ones made from scratch"
        );
    }
    kept.summary = Some(shards.clone());
    shards
}

/// Brings `listed` (per workload with any, the graceful eviction tasks its summary entry
/// lists) to the tasks the engine's state leaves after the pass — what the render keeps
/// ([`WorkloadStability::kept_tasks`]: not a `Directly` task, whose files the pass that
/// started it removed) — and returns the workloads whose tasks changed. Walks the state
/// without copying what did not change.
fn retask(listed: &mut BTreeMap<ObjectKey, Vec<EvictionTask>>, state: &StabilityState) -> BTreeSet<ObjectKey> {
    let left = |k: &ObjectKey| state.workloads.get(k).map(WorkloadStability::kept_tasks);
    let mut changed: BTreeSet<ObjectKey> = state
        .workloads
        .iter()
        .filter(|(k, w)| !w.kept_tasks().eq(tasks_of(listed, k)))
        .map(|(k, _)| k.clone())
        .collect();
    changed.extend(listed.keys().filter(|k| !state.workloads.contains_key(*k)).cloned());
    for k in &changed {
        match left(k).map(|t| t.cloned().collect::<Vec<_>>()).filter(|t| !t.is_empty()) {
            Some(tasks) => listed.insert(k.clone(), tasks),
            None => listed.remove(k),
        };
    }
    changed
}

/// A workload's graceful eviction tasks as its summary entry lists them (none: `[]`).
fn tasks_of<'t>(listed: &'t BTreeMap<ObjectKey, Vec<EvictionTask>>, key: &ObjectKey) -> &'t [EvictionTask] {
    listed.get(key).map_or(&[], Vec::as_slice)
}
