//! Typed positions: one newtype per index space that the scheduler and the reconciler's kept
//! decisions share, so that an index of one space is not used in another without a conversion,
//! made in one place ([`crate::schedule::Fleet::positions_of`]: the pass's views to the fleet's
//! order).
//!
//! - [`FleetPos`]: a cluster's position in a [`crate::schedule::Fleet`], the index of its name
//!   among the fleet's names (name order).
//! - [`UniversePos`]: a cluster's position in a result's universe (the sorted names stored under
//!   [`crate::schedule::ScheduleResult::universe`]), as a [`crate::schedule::ClusterSet`] keeps
//!   its members. A result made on a fleet has the fleet's names as its universe: the one
//!   conversion is [`FleetPos::in_universe`]; a stored result's universe is read back by its
//!   names ([`UniversePos::at`] over them).
//! - [`GroupIx`]: the index of a group of rejected clusters (identical reasons) among a filter
//!   combination's groups, kept per position for the pass ([`crate::schedule::Fleet`]'s memo).
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

    /// Its position in the universe of a result the fleet decides, whose names are the
    /// fleet's (the one conversion between the two spaces).
    pub const fn in_universe(self) -> UniversePos {
        UniversePos(self.0)
    }
}

/// A cluster's position in a result's universe (its sorted names); see the module
/// documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UniversePos(u32);

impl UniversePos {
    /// The position with this number.
    pub const fn new(p: u32) -> Self {
        UniversePos(p)
    }

    /// The position at this index of the universe's names (`u32::MAX` past it: no universe's).
    pub fn at(index: usize) -> Self {
        UniversePos(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// Its number (as a [`crate::schedule::ClusterSet`] keeps it).
    pub const fn get(self) -> u32 {
        self.0
    }

    /// Its index in the universe's names.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The name at this position of `names` (the universe's).
    pub fn of(self, names: &[String]) -> Option<&String> {
        names.get(self.index())
    }
}

/// The index of a group of rejected clusters among a filter combination's groups; see the
/// module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupIx(u32);

impl GroupIx {
    /// The group at this index of the groups.
    pub fn at(index: usize) -> Self {
        GroupIx(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// Its index in the groups.
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

    /// Its number as a stored decision keeps it (`store::StoredDecision::clusters`).
    pub fn stored(self) -> u32 {
        u32::try_from(self.0).unwrap_or(u32::MAX)
    }

    /// The index a stored decision kept ([`ViewIx::stored`]).
    pub const fn from_stored(n: u32) -> Self {
        ViewIx(n as usize)
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
