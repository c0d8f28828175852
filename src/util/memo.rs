//! One memo shape (issue 51): a value kept under a typed key, given again while the key is the
//! same, with one compute function — the from-scratch computation is that function, not a
//! second implementation, and debug builds compare every value given again with it.
//!
//! Keys are typed: an object's identity is an [`ArcKey`], which holds the `Arc` (so the object
//! cannot be freed and its address taken by another while the key exists) and compares by
//! `Arc::ptr_eq`; never a pointer kept as an integer. Content is keyed by its digest, positions
//! by their newtype.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Every memo, digest and incremental path a warm pass has, by name: the one registry
/// (issue 51, "every memo earns its place"). Each has one switch ([`switch_off`]) that makes
/// it compute every time with its own compute function — never a second implementation — for
/// benchmarks only (`fedsched bench --ablate`), so that its figure can be measured with and
/// without it in the same run. Off, a memo still keeps what it computed (a memo switched on
/// again finds its entries as fresh as the last compute left them).
///
/// Not here, and why: the lazily built node index and free-capacity summary of a snapshot
/// (`model::nodes::IndexCache`, `model::estimate::SummaryCache`: derived structures that every
/// estimate of a pass reads; off, each of 10⁷ estimates would build its index); the snapshot
/// fingerprints that keep an unchanged snapshot from being recorded again, the stability
/// blob and the known blobs (writes avoided, which the S3 mark counts: not computations); the
/// full check's schedule (a rule of the output directory, not a memo).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Name {
    /// `policy::load::ParseCache`: the last validated inputs handed out again, and only the
    /// changed files typed and validated again. Not a [`MemoMap`]: its validity is each file's
    /// stat and bytes, found by a walk of the repository (a file's entry is also where the next
    /// load finds what an edit replaced); debug builds compare a splice of the changed files
    /// with a merge of every file (`reconcile::inputs`).
    ParsedInputs,
    /// `reconcile::cache::NodeDigests`: each member's node-list, pod-facts and API-list
    /// digests kept per object (three [`MemoMap`]s).
    NodeDigests,
    /// `reconcile::cache::StaticDigests`: each member's static digest kept per fingerprint (a
    /// [`MemoMap`]).
    StaticDigests,
    /// `reconcile::cache::RecentPlacements`: the recent placements patched from the last
    /// pass's list, their requirements and digests matched by object. Not a [`MemoMap`]: a list
    /// patched with the placements set or removed since, not a value per key; its from-scratch
    /// computation (`snapshots::list_recent`) is compared in debug builds.
    RecentPlacements,
    /// `reconcile::cache::DeductedViews`: the member views after the deductions, whole. Not a
    /// [`Memo`]: the views are moved into the pass, deducted from and put back with the pass's
    /// deductions undone (a copy of 1,000 views is what it saves); its key is compared whole.
    DeductedViews,
    /// `PassSnapshots::already_deducted`: a decision whose recent placement the views hold is
    /// not planned as a deduction again. Not a [`Memo`]: it keeps no value (a plan known to be
    /// empty is skipped); debug builds check that it is (`PassSnapshots::deducts_nothing`).
    AlreadyDeducted,
    /// `policy::matching::KeptIndex`: the policy index kept while the set holds the same
    /// policy objects (a [`MemoMap`] of one entry).
    PolicyIndex,
    /// `reconcile::cache::ClaimMemo`: each template's claim (a [`MemoMap`]).
    Claims,
    /// `reconcile::cache::KeyMemo`: each template's decision key (a [`MemoMap`]).
    DecisionKeys,
    /// The decisions kept by key and clusters' state (`reconcile::cache::CachedDecision`): no
    /// filter, score, estimate, assignment or render of a workload whose inputs are the same.
    /// Not a [`MemoMap`]: a decision is kept across a change of its clusters' state when its
    /// outcome stands (below), and carries what later stages note in it; a cold pass is its
    /// compute (the audit and `reconcile::warm_cold`).
    Decisions,
    /// A kept decision whose clusters' state changed, kept when its outcome stands on the
    /// changed verdicts (`schedule::outcome_stands`) instead of decided again. Not a [`Memo`]:
    /// a check of a kept decision, not a kept value.
    OutcomeStands,
    /// `schedule::Fleet`'s memo of filter answers within a pass (by filter key and affinity).
    /// Not a [`Memo`]: answers are interned (identical ones share an id) and combined; it lives
    /// one pass, and the registry's contract test checks every filter's key.
    FleetFilters,
    /// `model::nodes::NodeIndex`'s answers per compiled request within a pass. Not a [`Memo`]:
    /// a kept walk is brought up to date through the nodes pods moved since (debug builds
    /// compare it with a walk of every group).
    NodeWalks,
    /// `reconcile::cache::DesiredOutput`: the per-cluster digests and Namespace files brought
    /// up to date from the decisions a pass changed. Not a [`MemoMap`]: patched from the
    /// pass's changes (a fold over the decisions, not a value per key); debug builds compare
    /// it with one made from every decision.
    DesiredOutput,
    /// The paths each decision owns (the publish guard's `Owners`), patched per pass. Not a
    /// [`MemoMap`]: patched as the desired output is (debug builds compare it with every
    /// decision's).
    Owners,
    /// The digest of the files last published per cluster: only clusters whose digest changed
    /// are published. Not a [`MemoMap`]: a record of what was written, not a computed value.
    PublishedDigests,
}

impl Name {
    /// Every name, in the registry's order.
    pub const ALL: [Name; 16] = [
        Name::ParsedInputs,
        Name::NodeDigests,
        Name::StaticDigests,
        Name::RecentPlacements,
        Name::DeductedViews,
        Name::AlreadyDeducted,
        Name::PolicyIndex,
        Name::Claims,
        Name::DecisionKeys,
        Name::Decisions,
        Name::OutcomeStands,
        Name::FleetFilters,
        Name::NodeWalks,
        Name::DesiredOutput,
        Name::Owners,
        Name::PublishedDigests,
    ];

    /// The name as `--ablate` takes it (kebab case).
    pub fn as_str(self) -> &'static str {
        match self {
            Name::ParsedInputs => "parsed-inputs",
            Name::NodeDigests => "node-digests",
            Name::StaticDigests => "static-digests",
            Name::RecentPlacements => "recent-placements",
            Name::DeductedViews => "deducted-views",
            Name::AlreadyDeducted => "already-deducted",
            Name::PolicyIndex => "policy-index",
            Name::Claims => "claims",
            Name::DecisionKeys => "decision-keys",
            Name::Decisions => "decisions",
            Name::OutcomeStands => "outcome-stands",
            Name::FleetFilters => "fleet-filters",
            Name::NodeWalks => "node-walks",
            Name::DesiredOutput => "desired-output",
            Name::Owners => "owners",
            Name::PublishedDigests => "published-digests",
        }
    }

    fn bit(self) -> u64 {
        1 << (self as u32)
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Name {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Name::ALL.into_iter().find(|n| n.as_str() == s).ok_or_else(|| {
            let all: Vec<&str> = Name::ALL.iter().map(|n| n.as_str()).collect();
            format!("unknown memo {s:?} (one of: {})", all.join(", "))
        })
    }
}

/// The memos switched off (a bit per [`Name`]); none unless a benchmark says.
static OFF: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Whether memo `name` is on (it is unless a benchmark switched it off: [`switch_off`]).
#[inline]
pub fn on(name: Name) -> bool {
    OFF.load(std::sync::atomic::Ordering::Relaxed) & name.bit() == 0
}

/// For benchmarks only (`fedsched bench --ablate`, and the test that every memo off decides
/// and renders what every memo on does): switches exactly `names` off in this process, every
/// other memo on. Each memo switched off computes every time with its compute function.
pub fn switch_off(names: &[Name]) {
    let bits = names.iter().fold(0, |bits, n| bits | n.bit());
    OFF.store(bits, std::sync::atomic::Ordering::Relaxed);
}

/// The memos switched off now.
pub fn switched_off() -> Vec<Name> {
    Name::ALL.into_iter().filter(|n| !on(*n)).collect()
}

/// An object's identity as a key: the `Arc` itself, equal only to a key of the same allocation
/// (`Arc::ptr_eq`), hashed by its address. Holding the `Arc` is what makes the identity sound:
/// while the key is kept, no other object can be at that address.
pub struct ArcKey<T>(pub Arc<T>);

impl<T> ArcKey<T> {
    /// The key of `arc`'s object (a clone of the `Arc`).
    pub fn of(arc: &Arc<T>) -> Self {
        ArcKey(Arc::clone(arc))
    }

    /// Whether this is `arc`'s object.
    pub fn is(&self, arc: &Arc<T>) -> bool {
        Arc::ptr_eq(&self.0, arc)
    }
}

impl<T> Clone for ArcKey<T> {
    fn clone(&self) -> Self {
        ArcKey(Arc::clone(&self.0))
    }
}

impl<T> PartialEq for ArcKey<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> Eq for ArcKey<T> {}

impl<T> Hash for ArcKey<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.0), state);
    }
}

impl<T> std::fmt::Debug for ArcKey<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ArcKey({:p})", Arc::as_ptr(&self.0))
    }
}

/// A value kept per key, computed by one function ([`Memo::get_or_compute`]). Debug builds
/// compute again every value the memo gives again and compare: a key that does not cover
/// what its compute reads fails there, not in a later pass.
#[derive(Debug)]
pub struct Memo<K, V, S = std::collections::hash_map::RandomState> {
    entries: HashMap<K, V, S>,
}

impl<K, V, S: Default> Default for Memo<K, V, S> {
    fn default() -> Self {
        Memo { entries: HashMap::default() }
    }
}

impl<K: Clone, V: Clone, S: Clone> Clone for Memo<K, V, S> {
    fn clone(&self) -> Self {
        Memo { entries: self.entries.clone() }
    }
}

impl<K: Hash + Eq, V: PartialEq + std::fmt::Debug, S: std::hash::BuildHasher> Memo<K, V, S> {
    /// The value kept for `key`, else `compute()` kept for it. Debug builds compare a kept
    /// value with `compute()`. With memo `name` switched off ([`switch_off`]), `compute()`
    /// every time (and kept).
    pub fn get_or_compute(&mut self, name: Name, key: K, compute: impl Fn() -> V) -> &V {
        if !on(name) {
            let value = compute();
            return match self.entries.entry(key) {
                std::collections::hash_map::Entry::Occupied(kept) => {
                    let kept = kept.into_mut();
                    *kept = value;
                    kept
                }
                std::collections::hash_map::Entry::Vacant(slot) => slot.insert(value),
            };
        }
        match self.entries.entry(key) {
            std::collections::hash_map::Entry::Occupied(kept) => {
                let kept = kept.into_mut();
                debug_assert_eq!(*kept, compute(), "a memo gave a value its compute does not");
                kept
            }
            std::collections::hash_map::Entry::Vacant(slot) => slot.insert(compute()),
        }
    }

    /// How many values are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keeps only the values whose key `keep` says.
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.entries.retain(|k, _| keep(k));
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// A value kept per entity (`E`: an object's [`ArcKey`], a name) with the key (`K`) of
/// everything it was computed from, given again only for that key ([`MemoMap::get`]): its
/// validity is key equality, not a rule in prose. For a value whose compute needs what a miss
/// goes on to use anyway (a claim, a store read), so cannot run where the value is asked for:
/// the caller computes it on a miss and keeps it ([`MemoMap::keep`]), and debug builds compare
/// a value given again with that same compute where the caller can run it.
#[derive(Debug)]
pub struct MemoMap<E, K, V, S = std::collections::hash_map::RandomState> {
    entries: HashMap<E, (K, V), S>,
}

impl<E, K, V, S: Default> Default for MemoMap<E, K, V, S> {
    fn default() -> Self {
        MemoMap { entries: HashMap::default() }
    }
}

impl<E: Clone, K: Clone, V: Clone, S: Clone> Clone for MemoMap<E, K, V, S> {
    fn clone(&self) -> Self {
        MemoMap { entries: self.entries.clone() }
    }
}

impl<E: Hash + Eq, K: PartialEq, V, S: std::hash::BuildHasher> MemoMap<E, K, V, S> {
    /// The key the value kept for `entity` was computed from.
    pub fn key_of(&self, entity: &E) -> Option<&K> {
        self.entries.get(entity).map(|(k, _)| k)
    }

    /// The value kept for `entity` when it was computed from `key` (and memo `name` is on:
    /// [`switch_off`]).
    pub fn get(&self, name: Name, entity: &E, key: &K) -> Option<&V> {
        if !on(name) {
            return None;
        }
        self.entries.get(entity).filter(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value kept for `entity` when it was computed from `key` (and memo `name` is on),
    /// else `compute()`, kept for `entity` with `key`: the memo's one compute function, which
    /// debug builds also run for a value given again, to compare. The value is given as a
    /// copy (a digest, a reference to a policy, an `Arc`).
    pub fn get_or_compute(&mut self, name: Name, entity: &E, key: K, compute: impl FnOnce() -> V) -> V
    where
        E: Clone,
        V: Clone + PartialEq + std::fmt::Debug,
    {
        if on(name)
            && let Some((k, v)) = self.entries.get(entity)
            && *k == key
        {
            let v = v.clone();
            debug_assert_eq!(v, compute(), "a memo gave a value its compute does not");
            return v;
        }
        let value = compute();
        match self.entries.get_mut(entity) {
            Some(slot) => *slot = (key, value.clone()),
            None => {
                self.entries.insert(entity.clone(), (key, value.clone()));
            }
        }
        value
    }

    /// Keeps `value`, computed from `key`, for `entity` (replacing any).
    pub fn keep(&mut self, entity: E, key: K, value: V) {
        self.entries.insert(entity, (key, value));
    }

    /// Forgets the value of `entity`.
    pub fn forget(&mut self, entity: &E) {
        self.entries.remove(entity);
    }

    /// How many values are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keeps only the values whose entity `keep` says.
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.entries.retain(|e, _| keep(e));
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two objects with equal contents are two keys; the same object is one, and its value is
    /// computed once.
    #[test]
    fn an_arc_key_is_the_object_not_its_contents() {
        let (a, b) = (Arc::new(7), Arc::new(7));
        let mut memo: Memo<ArcKey<i32>, i32> = Memo::default();
        let calls = std::cell::Cell::new(0);
        let compute = |x: &Arc<i32>| {
            let x = Arc::clone(x);
            let calls = &calls;
            move || {
                calls.set(calls.get() + 1);
                *x * 2
            }
        };
        assert_eq!(*memo.get_or_compute(Name::DecisionKeys, ArcKey::of(&a), compute(&a)), 14);
        assert_eq!(*memo.get_or_compute(Name::DecisionKeys, ArcKey::of(&b), compute(&b)), 14);
        assert_eq!(memo.len(), 2, "equal contents, two objects");
        let before = calls.get();
        assert_eq!(*memo.get_or_compute(Name::DecisionKeys, ArcKey::of(&a), compute(&a)), 14);
        // Debug builds compute again to compare; release builds do not.
        assert_eq!(calls.get(), before + usize::from(cfg!(debug_assertions)));
        assert!(ArcKey::of(&a).is(&a) && !ArcKey::of(&a).is(&b));
        memo.retain(|k| k.is(&b));
        assert_eq!(memo.len(), 1);
    }

    /// A value kept per entity is given again only for the key it was computed from.
    #[test]
    fn a_memo_map_gives_a_value_for_its_key_only() {
        let mut memo: MemoMap<&str, (u64, u64), u64> = MemoMap::default();
        assert_eq!(memo.get(Name::DecisionKeys, &"t", &(1, 2)), None);
        memo.keep("t", (1, 2), 42);
        assert_eq!(memo.get(Name::DecisionKeys, &"t", &(1, 2)), Some(&42));
        assert_eq!(memo.get(Name::DecisionKeys, &"t", &(1, 3)), None, "another key");
        assert_eq!(memo.get(Name::DecisionKeys, &"u", &(1, 2)), None, "another entity");
        assert_eq!(memo.key_of(&"t"), Some(&(1, 2)));
        memo.keep("t", (1, 3), 43);
        assert_eq!(memo.get(Name::DecisionKeys, &"t", &(1, 2)), None, "replaced");
        assert_eq!(memo.get(Name::DecisionKeys, &"t", &(1, 3)), Some(&43));
        memo.forget(&"t");
        assert!(memo.is_empty());
    }

    /// A memo map's one compute runs for a new entity or another key, and (in debug builds
    /// only, to compare) for a value given again; switched off, it runs every time.
    #[test]
    fn a_memo_map_computes_with_its_one_function() {
        let mut memo: MemoMap<String, u64, u64> = MemoMap::default();
        let calls = std::cell::Cell::new(0);
        let ask = |memo: &mut MemoMap<String, u64, u64>, key: u64| {
            memo.get_or_compute(Name::Claims, &"t".to_string(), key, || {
                calls.set(calls.get() + 1);
                key * 10
            })
        };
        assert_eq!(ask(&mut memo, 1), 10);
        assert_eq!(calls.get(), 1);
        assert_eq!(ask(&mut memo, 1), 10);
        assert_eq!(calls.get(), 1 + usize::from(cfg!(debug_assertions)), "given again");
        assert_eq!(ask(&mut memo, 2), 20, "another key");
        assert_eq!(memo.len(), 1, "one value per entity");
        assert_eq!(memo.get(Name::Claims, &"t".to_string(), &2), Some(&20));
    }

    /// A key that does not cover what the compute reads is caught in debug builds.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a memo gave a value its compute does not")]
    fn a_key_that_misses_an_input_fails_in_debug_builds() {
        let mut memo: Memo<&str, u32> = Memo::default();
        memo.get_or_compute(Name::DecisionKeys, "k", || 1);
        memo.get_or_compute(Name::DecisionKeys, "k", || 2);
    }
}
