//! Built-in filter and score plugins, one file each; registered in
//! [`crate::schedule::framework::registry`].

pub mod api_enablement;
pub mod cluster_affinity;
pub mod cluster_locality;
pub mod spread_constraint;
pub mod taint_toleration;
