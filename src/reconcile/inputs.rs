//! Stage "load inputs": the policy repository read, defaulted and validated, the profile
//! names checked, and the offline snapshots built — the [`Inputs`] of a pass.
//!
//! [`super::Reconciler::load_inputs`] keeps the parsed files between calls
//! ([`ParseCache`]: by stat, then by content hash) and hands out the previous inputs again
//! (shared `Arc`s) when no file was added, removed or changed; when some did, only those
//! files are typed, defaulted and validated again ([`load_repository_incremental`]).
//!
//! This stage records no metrics: [`Inputs::offline_polls`] tells the caller which offline
//! snapshots the load built, and how long each took.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::members::live::LiveView;
use crate::members::offline_snapshot;
use crate::model::ClusterSnapshot;
use crate::model::workload::InterpreterTable;
use crate::policy::load::{
    ParseCache, Spliced, load_repository_cached, load_repository_incremental, load_repository_spliced,
};
use crate::policy::{LoadError, ObjectKey, PolicyRef, PolicySet};
use crate::render;
use crate::store::Store;
use crate::util::hash::{KeyMap, fnv1a64};

use super::{PhaseTimings, Reconciler, cache};

/// Everything a pass reads from the policy repository, validated. Cloning is cheap: what does
/// not change between passes is shared ([`Reconciler::load_inputs`] hands out the previous
/// inputs again when no file changed).
#[derive(Clone)]
pub struct Inputs {
    pub set: Arc<PolicySet>,
    pub snapshots: Vec<ClusterSnapshot>,
    /// The repository's declarative workload interpreters.
    pub interpreters: Arc<InterpreterTable>,
    /// Content hashes of the set's objects, computed once per load.
    pub hashes: Arc<InputHashes>,
    /// The offline snapshot of every cluster of the set, in its order, as this load built
    /// it: (cluster, time it took; zero when the previous inputs were handed out again). For
    /// the caller's poll metrics (outcome "offline"); live clusters are listed too (their
    /// offline snapshot is what [`Inputs::apply_live`] replaces).
    pub offline_polls: Arc<Vec<(String, Duration)>>,
    /// The repository's files as loaded (path, content hash, text), when the load kept them
    /// (a load through a [`ParseCache`]); a pass stores them for replay. Empty: not kept.
    pub sources: Arc<Vec<(std::path::PathBuf, u64, Arc<str>)>>,
}

/// Content hashes (FNV-1a 64 of the JSON) of what decisions read from the set: computed once
/// when the set is loaded, not per pass.
#[derive(Debug, Default, Clone)]
pub struct InputHashes {
    /// Each template's object, in the order of `set.templates`.
    pub templates: Vec<u64>,
    /// Each (cluster) propagation policy's spec.
    pub policies: HashMap<PolicyRef, u64>,
    /// Each (cluster) override policy's spec, by (kind, namespace, name).
    pub overrides: HashMap<(render::overrides::OverrideKind, Option<String>, String), u64>,
    /// The interpreter objects and the declarative interpreters.
    pub interpreters: u64,
}

impl InputHashes {
    /// The hashes of `set`'s objects.
    pub fn of(set: &PolicySet) -> Self {
        Self::of_reusing(set, None)
    }

    /// [`InputHashes::of`], taking the hash of a template from `previous` (a set and its
    /// hashes) when the previous set has the same template with an equal object (comparing is
    /// much cheaper than serialising).
    pub fn of_reusing(set: &PolicySet, previous: Option<(&PolicySet, &InputHashes)>) -> Self {
        use crate::policy::PolicyKind;
        use render::overrides::OverrideKind;
        let json = json_hash;
        fn propagation(set: &PolicySet) -> Vec<(PolicyRef, &crate::policy::types::PropagationSpec)> {
            [
                (PolicyKind::PropagationPolicy, &set.propagation_policies),
                (PolicyKind::ClusterPropagationPolicy, &set.cluster_propagation_policies),
            ]
            .into_iter()
            .flat_map(|(kind, list)| {
                list.iter().map(move |p| {
                    (PolicyRef { kind, namespace: p.meta.namespace.clone(), name: p.meta.name.clone() }, &p.spec)
                })
            })
            .collect()
        }
        type OverrideId = (OverrideKind, Option<String>, String);
        fn overriding(set: &PolicySet) -> Vec<(OverrideId, &crate::policy::types::OverrideSpec)> {
            [
                (OverrideKind::OverridePolicy, &set.override_policies),
                (OverrideKind::ClusterOverridePolicy, &set.cluster_override_policies),
            ]
            .into_iter()
            .flat_map(|(kind, list)| {
                list.iter().map(move |p| ((kind, p.meta.namespace.clone(), p.meta.name.clone()), &p.spec))
            })
            .collect()
        }
        // Equal specs serialise equally: the previous hash is reused.
        let old_policies: HashMap<PolicyRef, (&crate::policy::types::PropagationSpec, u64)> = previous
            .map(|(set, hashes)| {
                propagation(set)
                    .into_iter()
                    .filter_map(|(r, spec)| hashes.policies.get(&r).map(|h| (r, (spec, *h))))
                    .collect()
            })
            .unwrap_or_default();
        let mut policies = HashMap::new();
        for (r, spec) in propagation(set) {
            // A policy of an unchanged file is the same object (an incremental load shares it).
            let hash = match old_policies.get(&r) {
                Some((old, h)) if std::ptr::eq(*old, spec) || *old == spec => *h,
                _ => json(spec),
            };
            policies.insert(r, hash);
        }
        let old_overrides: HashMap<OverrideId, (&crate::policy::types::OverrideSpec, u64)> = previous
            .map(|(set, hashes)| {
                overriding(set)
                    .into_iter()
                    .filter_map(|(id, spec)| hashes.overrides.get(&id).map(|h| (id, (spec, *h))))
                    .collect()
            })
            .unwrap_or_default();
        let mut overrides = HashMap::new();
        for (id, spec) in overriding(set) {
            let hash = match old_overrides.get(&id) {
                Some((old, h)) if std::ptr::eq(*old, spec) || *old == spec => *h,
                _ => json(spec),
            };
            overrides.insert(id, hash);
        }
        let interpreters = cache::key_of(&(
            serde_json::to_vec(&set.interpreter_objects.iter().map(|o| &o.object).collect::<Vec<_>>())
                .unwrap_or_default(),
            serde_json::to_vec(&set.workload_interpreters.iter().map(|w| (&w.meta.name, &w.spec)).collect::<Vec<_>>())
                .unwrap_or_default(),
        ));
        // A template of an unchanged file is the same object (an incremental load shares it).
        let before: KeyMap<&ObjectKey, (&Arc<crate::policy::Template>, u64)> = previous
            .map(|(set, hashes)| set.templates.iter().zip(&hashes.templates).map(|(t, h)| (&t.key, (t, *h))).collect())
            .unwrap_or_default();
        // On every core: a first load (a restart) serialises every template.
        let templates = crate::util::threads::map_ordered(&set.templates, crate::util::threads::workers(), |t| {
            match before.get(&t.key) {
                Some((old, hash)) if Arc::ptr_eq(old, t) || old.object == t.object => *hash,
                _ => json(&t.object),
            }
        });
        InputHashes { templates, policies, overrides, interpreters }
    }

    /// The hash of the template at `at` in the set's templates.
    pub fn template(&self, at: crate::policy::SetPos<crate::policy::Template>) -> Option<u64> {
        self.templates.get(at.index()).copied()
    }

    /// These hashes after a splice ([`load_repository_spliced`]): those of the replaced objects
    /// of `set` computed, the others kept.
    fn spliced(self, set: &PolicySet, spliced: &Spliced) -> Self {
        use crate::policy::PolicyKind;
        use render::overrides::OverrideKind;
        let mut out = self;
        for &i in &spliced.templates {
            if let (Some(h), Some(t)) = (out.templates.get_mut(i.index()), i.of(&set.templates)) {
                *h = json_hash(&t.object);
            }
        }
        let propagation = [
            (PolicyKind::PropagationPolicy, &set.propagation_policies, &spliced.propagation_policies),
            (
                PolicyKind::ClusterPropagationPolicy,
                &set.cluster_propagation_policies,
                &spliced.cluster_propagation_policies,
            ),
        ];
        for (kind, list, positions) in propagation {
            for p in positions.iter().filter_map(|i| i.of(list)) {
                let r = PolicyRef { kind, namespace: p.meta.namespace.clone(), name: p.meta.name.clone() };
                out.policies.insert(r, json_hash(&p.spec));
            }
        }
        let overriding = [
            (OverrideKind::OverridePolicy, &set.override_policies, &spliced.override_policies),
            (OverrideKind::ClusterOverridePolicy, &set.cluster_override_policies, &spliced.cluster_override_policies),
        ];
        for (kind, list, positions) in overriding {
            for p in positions.iter().filter_map(|i| i.of(list)) {
                out.overrides.insert((kind, p.meta.namespace.clone(), p.meta.name.clone()), json_hash(&p.spec));
            }
        }
        out
    }
}

/// The content hash of a value: FNV-1a 64 of its JSON.
fn json_hash(v: &dyn erased_json::Ser) -> u64 {
    fnv1a64(&v.to_vec())
}

/// Serializing through a trait object (the hashes of differently typed specs).
mod erased_json {
    pub trait Ser {
        fn to_vec(&self) -> Vec<u8>;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_vec(&self) -> Vec<u8> {
            serde_json::to_vec(self).unwrap_or_default()
        }
    }
}

/// Where [`load_inputs`] reads a policy repository.
#[derive(Debug, Clone, Copy)]
pub enum Repository<'a> {
    /// A directory, walked as the settings' `[policy]` says (every file read and parsed once).
    Dir(&'a Path),
    /// A repository given as its files (path relative to it, text, in walk order): what a
    /// replay rebuilds from the files a pass stored.
    Files(&'a [(std::path::PathBuf, Arc<str>)]),
}

/// Loads, defaults and validates a policy repository with `settings` — its profiles (a policy
/// naming a profile they do not have is an error), its `[interpreter]` customizations and its
/// walk — and builds the offline snapshots. Returns every problem found, or inputs that are
/// safe to act on, their files kept as the sources. The one load that keeps nothing between
/// calls (the CLI's one-shot commands, replay, the audit's cold side, tests);
/// [`Reconciler::load_inputs`] is the same load with the reconciler's settings, kept warm.
pub fn load_inputs(from: Repository<'_>, settings: &super::Settings) -> Result<Inputs, Vec<LoadError>> {
    let started = Instant::now();
    let mut timings = PhaseTimings::default();
    match from {
        Repository::Dir(policy_dir) => {
            let mut cache = ParseCache::one_shot(settings.walk.clone());
            let (set, errors) = load_repository_cached(policy_dir, Some(&mut cache));
            let mut inputs = build_inputs(set, errors, settings, &mut timings, started, None)?;
            inputs.sources = Arc::new(cache.sources());
            Ok(inputs)
        }
        Repository::Files(files) => {
            let texts = files.iter().map(|(p, t)| (p.clone(), t.to_string()));
            let (mut set, mut errors) = crate::policy::load::load_sources(texts);
            crate::policy::defaults::apply(&mut set);
            errors.extend(crate::policy::validate::validate(&set));
            let mut inputs = build_inputs(set, errors, settings, &mut timings, started, None)?;
            inputs.sources =
                Arc::new(files.iter().map(|(p, t)| (p.clone(), fnv1a64(t.as_bytes()), t.clone())).collect());
            Ok(inputs)
        }
    }
}

/// Validates the profiles `set` names and builds the offline snapshots and the hashes.
fn build_inputs(
    set: PolicySet,
    mut errors: Vec<LoadError>,
    settings: &super::Settings,
    timings: &mut PhaseTimings,
    started: Instant,
    previous: Option<&Inputs>,
) -> Result<Inputs, Vec<LoadError>> {
    let interpreter = &settings.interpreter;
    errors.extend(settings.profiles.validate(&set));
    let mut hashes = match errors.is_empty() {
        true => InputHashes::of_reusing(&set, previous.map(|p| (&*p.set, &*p.hashes))),
        false => InputHashes::default(),
    };
    timings.load += started.elapsed();
    let started = Instant::now();
    let mut snapshots = Vec::with_capacity(set.clusters.len());
    let mut offline_polls = Vec::with_capacity(set.clusters.len());
    // A cluster object equal to the previous load's at its position keeps that load's
    // snapshot (a snapshot is made from its object alone; comparing costs less than reading
    // its status's quantities again): an edited template does not rebuild the fleet's.
    let kept =
        previous.filter(|p| p.set.clusters.len() == set.clusters.len() && p.snapshots.len() == set.clusters.len());
    for (i, c) in set.clusters.iter().enumerate() {
        let same = kept.and_then(|p| p.snapshots.get(i).filter(|_| p.set.clusters.get(i) == Some(c)));
        if let Some(s) = same.filter(|s| s.name == c.meta.name) {
            debug_assert!(offline_snapshot(c).is_ok_and(|fresh| fresh == *s), "a kept offline snapshot differs");
            snapshots.push(s.clone());
            offline_polls.push((c.meta.name.clone(), Duration::ZERO));
            continue;
        }
        let polled = Instant::now();
        match offline_snapshot(c) {
            Ok(s) => snapshots.push(s),
            Err(e) => errors.push(e),
        }
        offline_polls.push((c.meta.name.clone(), polled.elapsed()));
    }
    timings.poll += started.elapsed();
    let (mut table, interpreter_errors) = InterpreterTable::build(&set, interpreter.directories.clone());
    table.customizations.builtins_off = !interpreter.builtins;
    errors.extend(interpreter_errors);
    // Decisions also depend on the directories' customizations and on the built-ins switch.
    let directories: Vec<u64> = interpreter.directories.iter().map(|c| c.digest()).collect();
    hashes.interpreters = cache::key_of(&(hashes.interpreters, directories, interpreter.builtins));
    let interpreters = Arc::new(table);
    if errors.is_empty() {
        let (set, hashes, offline_polls) = (Arc::new(set), Arc::new(hashes), Arc::new(offline_polls));
        Ok(Inputs { set, snapshots, interpreters, hashes, offline_polls, sources: Arc::new(Vec::new()) })
    } else {
        Err(errors)
    }
}

impl Inputs {
    /// Replaces the snapshots of live clusters by what the poller knows of them; a cluster
    /// that has not been polled successfully by this process falls back on its last live
    /// snapshot in the store ([`crate::members::apply_live`]).
    pub fn apply_live(&mut self, view: &LiveView, store: &Store) {
        crate::members::apply_live(&self.set, &mut self.snapshots, view, |name| match store.latest_snapshot(name) {
            Ok(found) => found.map(|(_, s)| s),
            Err(error) => {
                tracing::warn!(cluster = name, %error, "cannot read the last snapshot from the store");
                None
            }
        });
    }
}

/// Keeps a copy of `inputs` as the last good ones, counted in the load phase (the copy of the
/// offline snapshots is part of loading them).
fn keep_last(cache: &mut LoadCache, inputs: &Inputs, timings: &mut PhaseTimings) {
    let copying = Instant::now();
    cache.last = Some(inputs.clone());
    timings.load += copying.elapsed();
}

/// What [`Reconciler::load_inputs`] keeps between calls.
#[derive(Default)]
pub(super) struct LoadCache {
    parse: ParseCache,
    /// The inputs of the last successful load (offline snapshots), reused as they are while no
    /// file of the repository changes, with the directory they were loaded from.
    last: Option<Inputs>,
    last_dir: Option<std::path::PathBuf>,
}

/// What a watch of the policy directory saw since the reconciler last loaded it
/// ([`Reconciler::load_inputs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    /// No event: the last good inputs hold.
    Nothing,
    /// Events on these paths only (relative to the directory).
    Files(Vec<std::path::PathBuf>),
    /// Not known (no watch, a watch error or overflow, a trigger that reads everything).
    Unknown,
}

impl LoadCache {
    /// An empty load cache whose parsed documents are also kept in `store`, so that the first
    /// load of a restarted process parses only the files that changed since.
    pub(super) fn kept_in(store: &Store) -> Self {
        let mut cache = LoadCache::default();
        cache.parse.keep_in(Arc::new(store.clone()));
        cache
    }
}

impl Reconciler {
    /// Loads the repository at `policy_dir` as [`load_inputs`] does, with this reconciler's
    /// settings, reusing the parsed documents of files whose bytes did not change since the
    /// previous call and handing out the previous inputs again (shared, not rebuilt) when no
    /// file was added, removed or changed. `changed`: what the caller knows may have changed in
    /// the directory since its last load (the daemon's watch of it). With
    /// [`Changed::Nothing`], the last good inputs of the same directory are handed out again
    /// without walking it; with [`Changed::Files`], only those files are read again
    /// ([`ParseCache::refresh_files`]), without a walk. Without last good inputs (the first
    /// load, a failed one, another directory), for a repository the last walk reached through
    /// a symbolic link, when the files are not all files the last walk read, and with
    /// [`Changed::Unknown`], the directory is walked ([`ParseCache::refresh`]: unchanged stats
    /// are trusted, except for files modified within a second of being read).
    pub fn load_inputs(
        &self,
        policy_dir: &Path,
        timings: &mut PhaseTimings,
        changed: &Changed,
    ) -> Result<Inputs, Vec<LoadError>> {
        if !crate::util::memo::on(crate::util::memo::Name::ParsedInputs) {
            // Switched off for a benchmark: every file parsed, typed and validated again
            // (a load cache made from nothing, in memory only).
            *self.locked_load_cache() = LoadCache::default();
            return self.load_walked(policy_dir, timings);
        }
        if matches!(changed, Changed::Unknown) {
            return self.load_walked(policy_dir, timings);
        }
        let started = Instant::now();
        let mut cache = self.locked_load_cache();
        // A repository reached through a link (a ConfigMap volume, git-sync's worktree) is
        // read every time: a swapped link changes it with no event in the watched directory.
        let trusted = cache.last_dir.as_deref() == Some(policy_dir) && !cache.parse.through_links();
        if !trusted || cache.last.is_none() {
            drop(cache);
            return self.load_walked(policy_dir, timings);
        }
        let refreshed = match changed {
            Changed::Files(files) => {
                cache.parse.set_options(&self.settings.walk);
                cache.parse.refresh_files(policy_dir, files)
            }
            _ => Some((false, Vec::new())),
        };
        let refreshed = refreshed.unwrap_or_else(|| cache.parse.refresh(policy_dir));
        self.load_refreshed(&mut cache, policy_dir, refreshed, timings, started)
    }

    /// [`Reconciler::load_inputs`] of a directory walked: the set, its validation and the
    /// offline snapshots depend on nothing else (the profiles are this reconciler's).
    fn load_walked(&self, policy_dir: &Path, timings: &mut PhaseTimings) -> Result<Inputs, Vec<LoadError>> {
        let mut cache = self.locked_load_cache();
        let started = Instant::now();
        cache.parse.set_options(&self.settings.walk);
        let refreshed = cache.parse.refresh(policy_dir);
        self.load_refreshed(&mut cache, policy_dir, refreshed, timings, started)
    }

    /// The load cache (a load that panicked left it in no trusted state: started again).
    fn locked_load_cache(&self) -> std::sync::MutexGuard<'_, LoadCache> {
        self.load_cache.lock().unwrap_or_else(|poisoned| {
            let mut g = poisoned.into_inner();
            *g = LoadCache::kept_in(&self.store);
            self.load_cache.clear_poison();
            g
        })
    }

    /// The inputs after the parse cache was refreshed (`(changed, io_errors)`): the last good
    /// ones again when nothing changed, else the repository loaded again (incrementally).
    fn load_refreshed(
        &self,
        cache: &mut LoadCache,
        policy_dir: &Path,
        (changed, io_errors): (bool, Vec<LoadError>),
        timings: &mut PhaseTimings,
        started: Instant,
    ) -> Result<Inputs, Vec<LoadError>> {
        let same_dir = cache.last_dir.as_deref() == Some(policy_dir);
        if !changed
            && io_errors.is_empty()
            && same_dir
            && let Some(last) = &cache.last
        {
            let mut inputs = last.clone();
            timings.load += started.elapsed();
            let polls = inputs.set.clusters.iter().map(|c| (c.meta.name.clone(), Duration::ZERO)).collect();
            inputs.offline_polls = Arc::new(polls);
            return Ok(inputs);
        }
        let mut previous = cache.last.take();
        if io_errors.is_empty()
            && same_dir
            && let Some(prev) = &mut previous
            && let Some(inputs) = self.spliced(&mut cache.parse, prev, timings, started)
        {
            keep_last(cache, &inputs, timings);
            return Ok(inputs);
        }
        let loaded = load_repository_incremental(&mut cache.parse, io_errors);
        let inputs = self.inputs_of(loaded, &cache.parse, timings, started, previous.as_ref())?;
        keep_last(cache, &inputs, timings);
        cache.last_dir = Some(policy_dir.to_path_buf());
        Ok(inputs)
    }

    /// The previous inputs with the objects of the files changed since put in place of theirs
    /// ([`load_repository_spliced`]): the set, the hashes of the replaced objects and those
    /// files' sources are new, the rest (offline snapshots, interpreters) is the previous
    /// inputs'. An edit of a template or a policy costs its file, not the repository's merge.
    /// `None` (the caller merges the set) when the splice does not apply, or a replaced
    /// policy names an unknown profile (the merge reports every error, in order). The offline
    /// snapshots are moved out of `previous` once the splice stands (not copied).
    fn spliced(
        &self,
        parse: &mut ParseCache,
        previous: &mut Inputs,
        timings: &mut PhaseTimings,
        started: Instant,
    ) -> Option<Inputs> {
        let (set, spliced) = load_repository_spliced(parse, &previous.set)?;
        let profiles = &self.settings.profiles;
        type Propagation = crate::policy::Policy<crate::policy::types::PropagationSpec>;
        let named = |list: &[Arc<Propagation>], at: &[crate::policy::SetPos<Propagation>]| {
            at.iter().filter_map(|i| i.of(list)).all(|p| profiles.for_policy(&p.meta.annotations).is_some())
        };
        if !named(&set.propagation_policies, &spliced.propagation_policies)
            || !named(&set.cluster_propagation_policies, &spliced.cluster_propagation_policies)
        {
            return None;
        }
        // The spliced files' places among the sources, found before anything is taken from
        // `previous` (which the caller loads again from when this gives `None`).
        let mut replaced = Vec::with_capacity(spliced.files.len());
        for rel in &spliced.files {
            let (hash, text) = parse.source_of(rel)?;
            let at = previous.sources.iter().position(|(p, ..)| p == rel)?;
            replaced.push((at, hash, text));
        }
        // The previous inputs' hashes and sources, changed in place when the last pass let go
        // of them (copied otherwise): an edit does not copy 10,000 paths and hashes.
        let hashes = Arc::unwrap_or_clone(std::mem::take(&mut previous.hashes)).spliced(&set, &spliced);
        let mut sources = Arc::unwrap_or_clone(std::mem::take(&mut previous.sources));
        for (at, hash, text) in replaced {
            if let Some(entry) = sources.get_mut(at) {
                entry.1 = hash;
                entry.2 = text;
            }
        }
        #[cfg(debug_assertions)]
        {
            let (merged, errors) = load_repository_incremental(parse, Vec::new());
            debug_assert!(errors.is_empty() && merged == set, "a spliced set differs from the merge");
            let fresh = InputHashes::of(&set);
            debug_assert_eq!(fresh.templates, hashes.templates);
            debug_assert_eq!(fresh.policies, hashes.policies);
            debug_assert_eq!(fresh.overrides, hashes.overrides);
            debug_assert_eq!(sources, parse.sources());
        }
        let polls = set.clusters.iter().map(|c| (c.meta.name.clone(), Duration::ZERO)).collect();
        let inputs = Inputs {
            set: Arc::new(set),
            snapshots: std::mem::take(&mut previous.snapshots),
            interpreters: Arc::clone(&previous.interpreters),
            hashes: Arc::new(hashes),
            offline_polls: Arc::new(polls),
            sources: Arc::new(sources),
        };
        timings.load += started.elapsed();
        Some(inputs)
    }

    /// The inputs of a repository given as its files (`fedsched plan` through the daemon: a
    /// pull request's repository, read by the command), loaded as [`Reconciler::load_inputs`]
    /// would load a directory holding them: each file whose path and bytes this reconciler's
    /// last load had keeps what was parsed and typed of it ([`ParseCache::overlay`]), and the
    /// hashes of unchanged objects are taken from the last inputs. Nothing of this reconciler's
    /// load cache changes. The offline snapshots only: the caller merges live members.
    pub fn load_preview_inputs(
        &self,
        repository: crate::policy::load::RepositoryFiles,
        timings: &mut PhaseTimings,
    ) -> Result<Inputs, Vec<LoadError>> {
        let started = Instant::now();
        let (mut overlay, previous) = {
            let cache = self.load_cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            (cache.parse.overlay(repository.files, repository.notes), cache.last.clone())
        };
        let loaded = load_repository_incremental(&mut overlay, Vec::new());
        self.inputs_of(loaded, &overlay, timings, started, previous.as_ref())
    }

    /// [`build_inputs`] of a loaded set with this reconciler's profiles and interpreters, the
    /// files `parse` holds as the sources.
    fn inputs_of(
        &self,
        (set, errors): (PolicySet, Vec<LoadError>),
        parse: &ParseCache,
        timings: &mut PhaseTimings,
        started: Instant,
        previous: Option<&Inputs>,
    ) -> Result<Inputs, Vec<LoadError>> {
        let mut inputs = build_inputs(set, errors, &self.settings, timings, started, previous)?;
        inputs.sources = Arc::new(parse.sources());
        Ok(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::load::read_repository;
    use crate::reconcile::Settings;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn deploy(name: &str, replicas: i64) -> String {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n  replicas: {replicas}\n"
        )
    }

    /// A warm load after an edit keeps the offline snapshots of unchanged clusters and builds
    /// the changed one again: the snapshots equal a cold load's, through a changed status, an
    /// added cluster and a removed one.
    #[test]
    fn a_warm_load_keeps_unchanged_clusters_snapshots_and_rebuilds_the_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        let cluster = |name: &str, cpu: &str| {
            format!(
                "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\nspec:\n  syncMode: Push\nstatus:\n  resourceSummary:\n    allocatable:\n      cpu: \"{cpu}\"\n      pods: \"110\"\n"
            )
        };
        write(&repo, "clusters/a.yaml", &cluster("a", "8"));
        write(&repo, "clusters/b.yaml", &cluster("b", "16"));
        write(&repo, "apps/web.yaml", &deploy("web", 2));
        let rec = Reconciler::new(Store::open(&dir.path().join("state")).expect("store"), Settings::builtin());
        let first = rec.load_inputs(&repo, &mut PhaseTimings::default(), &Changed::Unknown).expect("first load");
        assert_eq!(first.snapshots.len(), 2);
        let steps: [&dyn Fn(); 3] = [
            &|| write(&repo, "apps/web.yaml", &deploy("web", 3)),
            &|| write(&repo, "clusters/b.yaml", &cluster("b", "32")),
            &|| {
                write(&repo, "clusters/c.yaml", &cluster("c", "4"));
                std::fs::remove_file(repo.join("clusters/a.yaml")).expect("remove");
            },
        ];
        for (i, step) in steps.iter().enumerate() {
            // Past the parse cache's one-second window for files modified as they are read.
            std::thread::sleep(std::time::Duration::from_millis(1100));
            step();
            let warm = rec.load_inputs(&repo, &mut PhaseTimings::default(), &Changed::Unknown).expect("warm load");
            let cold = load_inputs(Repository::Dir(&repo), &Settings::builtin()).expect("cold load");
            assert_eq!(warm.snapshots, cold.snapshots, "step {i}");
            // The first step's edit is spliced into the last set: the same set and hashes.
            assert!(*warm.set == *cold.set, "step {i}");
            assert_eq!(warm.hashes.templates, cold.hashes.templates, "step {i}");
            assert_eq!(warm.hashes.policies, cold.hashes.policies, "step {i}");
        }
        let last = rec.load_inputs(&repo, &mut PhaseTimings::default(), &Changed::Unknown).expect("last");
        let names: Vec<&str> = last.snapshots.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b", "c"]);
        let cpu = |s: &ClusterSnapshot| s.summary.as_ref().map(|r| r.allocatable.get("cpu"));
        assert_eq!(cpu(&last.snapshots[0]), Some(32_000), "the changed status is read again");
    }

    /// A repository sent as its files (`fedsched plan` through the daemon) loads on a warm
    /// reconciler as a cold load of the same directory does: same set, hashes, errors and
    /// notes; and the reconciler's own load is as it was.
    #[test]
    fn a_repository_sent_as_files_loads_as_its_directory_does() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (daemon_dir, pr) = (dir.path().join("daemon"), dir.path().join("pr"));
        let policy = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: p\n  namespace: shop\nspec:\n  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n  placement:\n    replicaScheduling:\n      replicaSchedulingType: Divided\n";
        for d in [&daemon_dir, &pr] {
            write(d, "apps/web.yaml", &deploy("web", 2));
            write(d, "apps/api.yaml", &deploy("api", 3));
            write(d, "policy.yaml", policy);
            write(d, "chart/Chart.yaml", "apiVersion: v2\nname: x\n");
        }
        let rec = Reconciler::new(Store::open(&dir.path().join("state")).expect("store"), Settings::builtin());
        let daemon_before =
            rec.load_inputs(&daemon_dir, &mut PhaseTimings::default(), &Changed::Unknown).expect("daemon load");
        // The pull request: one file edited, one added, one removed.
        write(&pr, "apps/web.yaml", &deploy("web", 5));
        write(&pr, "apps/new.yaml", &deploy("new", 1));
        std::fs::remove_file(pr.join("apps/api.yaml")).expect("remove");
        let settings = Settings::builtin();
        let (files, errors) = read_repository(&pr, &settings.walk);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!files.notes.is_empty(), "Chart.yaml is skipped with a note");
        let sent = rec.load_preview_inputs(files, &mut PhaseTimings::default()).expect("sent");
        let cold = load_inputs(Repository::Dir(&pr), &Settings::builtin()).expect("cold");
        assert!(*sent.set == *cold.set, "sets differ");
        assert_eq!(sent.set.notes, cold.set.notes);
        assert_eq!(sent.hashes.templates, cold.hashes.templates);
        assert_eq!(sent.hashes.policies, cold.hashes.policies);
        assert_eq!(sent.sources.len(), 3, "the files sent are the pass's sources");
        // An invalid file: the errors of a whole load.
        write(&pr, "apps/bad.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\n");
        let (files, _) = read_repository(&pr, &settings.walk);
        let sent = rec.load_preview_inputs(files, &mut PhaseTimings::default()).err();
        let cold = load_inputs(Repository::Dir(&pr), &Settings::builtin()).err();
        assert!(cold.as_ref().is_some_and(|e| !e.is_empty()), "the name is invalid");
        assert_eq!(sent, cold);
        // The reconciler's own repository loads as before.
        let daemon_after =
            rec.load_inputs(&daemon_dir, &mut PhaseTimings::default(), &Changed::Unknown).expect("daemon load");
        assert!(*daemon_after.set == *daemon_before.set);
        assert_eq!(daemon_after.sources.len(), 3);
    }
}
