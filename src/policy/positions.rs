//! Typed positions in a [`super::PolicySet`]'s shared lists (issue 51): a [`SetPos<T>`] is an
//! index into a list of `T` (the templates, the PropagationPolicies or ClusterPropagationPolicies,
//! the OverridePolicies or ClusterOverridePolicies, each sorted as every set is), so that a
//! template's position is not taken for a policy's. What the set's users keep by position —
//! the policy index ([`super::matching::IndexPositions`], kept between passes), the content
//! hashes of the templates in their order (`reconcile::InputHashes`), the objects a splice
//! replaced ([`super::load::Spliced`]) — keep a `SetPos` of the list's element type. (The two
//! lists of one element type, namespaced and cluster-wide, are told apart by the policy's kind
//! beside the position, as [`super::matching::PolicyIndex`] keeps it.)

use std::marker::PhantomData;
use std::sync::Arc;

/// The position of an object in a set's list of `T`; see the module documentation.
pub struct SetPos<T: ?Sized>(usize, PhantomData<fn() -> T>);

impl<T: ?Sized> SetPos<T> {
    /// The position at this index of the list.
    pub const fn new(i: usize) -> Self {
        SetPos(i, PhantomData)
    }

    /// Its index in the list.
    pub const fn index(self) -> usize {
        self.0
    }

    /// The positions of a list of `len`, in order.
    pub fn all(len: usize) -> impl Iterator<Item = SetPos<T>> {
        (0..len).map(SetPos::new)
    }
}

impl<T> SetPos<T> {
    /// The object at this position of `list`.
    pub fn of(self, list: &[Arc<T>]) -> Option<&T> {
        list.get(self.0).map(|t| &**t)
    }
}

impl<T: ?Sized> Clone for SetPos<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for SetPos<T> {}

impl<T: ?Sized> PartialEq for SetPos<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<T: ?Sized> Eq for SetPos<T> {}

impl<T: ?Sized> PartialOrd for SetPos<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: ?Sized> Ord for SetPos<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<T: ?Sized> std::hash::Hash for SetPos<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl<T: ?Sized> std::fmt::Debug for SetPos<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SetPos({})", self.0)
    }
}
