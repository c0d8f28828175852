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
    /// value with `compute()`.
    pub fn get_or_compute(&mut self, key: K, compute: impl Fn() -> V) -> &V {
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
        assert_eq!(*memo.get_or_compute(ArcKey::of(&a), compute(&a)), 14);
        assert_eq!(*memo.get_or_compute(ArcKey::of(&b), compute(&b)), 14);
        assert_eq!(memo.len(), 2, "equal contents, two objects");
        let before = calls.get();
        assert_eq!(*memo.get_or_compute(ArcKey::of(&a), compute(&a)), 14);
        // Debug builds compute again to compare; release builds do not.
        assert_eq!(calls.get(), before + usize::from(cfg!(debug_assertions)));
        assert!(ArcKey::of(&a).is(&a) && !ArcKey::of(&a).is(&b));
        memo.retain(|k| k.is(&b));
        assert_eq!(memo.len(), 1);
    }

    /// A key that does not cover what the compute reads is caught in debug builds.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a memo gave a value its compute does not")]
    fn a_key_that_misses_an_input_fails_in_debug_builds() {
        let mut memo: Memo<&str, u32> = Memo::default();
        memo.get_or_compute("k", || 1);
        memo.get_or_compute("k", || 2);
    }
}
