//! Built-in filter and score plugins, one file each; registered in
//! [`crate::schedule::framework::registry`].

pub mod allocation;
pub mod api_enablement;
pub mod cluster_affinity;
pub mod cluster_eviction;
pub mod cluster_locality;
pub mod confidence;
pub mod cost_first;
pub mod gpu_model;
pub mod replica_limit;
pub mod round_robin;
pub mod spread_constraint;
pub mod taint_toleration;
