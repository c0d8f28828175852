//! Typed positions: one newtype per index space that the scheduler and the reconciler's kept
//! decisions share, so that an index of one space is not used in another without a conversion,
//! made in one place ([`crate::schedule::Fleet::positions_of`]: the pass's views to the fleet's
//! order).
//!
//! - [`FleetPos`]: a cluster's position in a [`crate::schedule::Fleet`], the index of its name
//!   among the fleet's names (name order). A result's universe ([`crate::schedule::ClusterSet`])
//!   is indexed the same way when it is the fleet's universe.
//! - [`ViewIx`]: the index of a cluster's view in the pass's views (its snapshots as the pass
//!   deducts from them, in their order), by which the reconciler keeps a decision's feasible
//!   clusters, their state digests and the assumed deductions.
//! - [`HeldIx`]: the index of a verdict among the verdicts a kept result holds (its feasible
//!   clusters', in name order): which of them changed since it was made.

/// A cluster's position in a fleet (name order); see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FleetPos(u32);

impl FleetPos {
    /// The position with this number.
    pub const fn new(p: u32) -> Self {
        FleetPos(p)
    }

    /// The position at this index of the fleet's names (`u32::MAX` past it: no fleet's).
    pub fn at(index: usize) -> Self {
        FleetPos(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// Its number (as a result's universe keeps positions).
    pub const fn get(self) -> u32 {
        self.0
    }

    /// Its index in the fleet's names.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The index of a cluster's view in the pass's views; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ViewIx(usize);

impl ViewIx {
    /// The view at this index.
    pub const fn new(i: usize) -> Self {
        ViewIx(i)
    }

    /// Its index in the views.
    pub const fn index(self) -> usize {
        self.0
    }

    /// The view at this index of `views`.
    pub fn of(self, views: &[crate::model::ClusterSnapshot]) -> Option<&crate::model::ClusterSnapshot> {
        views.get(self.0)
    }

    /// The views' indices, in order.
    pub fn all(len: usize) -> impl Iterator<Item = ViewIx> {
        (0..len).map(ViewIx)
    }
}

/// The index of a verdict among those a kept result holds; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HeldIx(usize);

impl HeldIx {
    /// The held verdict at this index.
    pub const fn new(k: usize) -> Self {
        HeldIx(k)
    }

    /// Its index in the held verdicts.
    pub const fn index(self) -> usize {
        self.0
    }
}
