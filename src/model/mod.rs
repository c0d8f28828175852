//! The resource model: how fedsched describes what a member cluster can take and what a
//! workload asks for.
//!
//! Owns: quantities ([`quantity`]), resource lists ([`resources`]), cluster snapshots
//! ([`snapshot`]), workloads and their per-replica requirements ([`workload`]), and the
//! replica estimators registered in one list ([`estimate::estimators`]), the resource
//! dimensions registered in one list ([`dimensions::Dimensions::new`]), node-level estimation
//! ([`nodes`]), assumed workloads ([`assumed`]) and autoscaled workloads ([`autoscaling`]). Pure: no I/O, no clock.
//!
//! `builders.rs` adds constructors and `with_*` methods to [`ClusterSnapshot`], [`NodeView`]
//! and [`ResourceList`] (`ResourceList::of`), so that tests, benches and the testbed build
//! fixtures without repeating every field.

pub mod assumed;
pub mod autoscaling;
mod builders;
pub mod deps;
pub mod dimensions;
pub mod estimate;
pub mod interpreter;
pub mod nodes;
pub mod quantity;
pub mod resources;
pub mod snapshot;
pub mod workload;

pub use resources::ResourceList;
pub use snapshot::{
    ClusterConstraints, ClusterSnapshot, ClusterTaint, Freshness, Health, NodeView, Observed, OwnerState, PodFacts,
    PollFacts, Reserve, SnapshotSource,
};
pub use workload::{ReplicaRequirements, Workload};
