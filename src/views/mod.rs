//! The read side: the documents fedsched shows about its decisions and its members, one
//! implementation each, shared by the CLI, the HTTP API and the output summary.
//!
//! - [`explain`]: why a workload went where it went (from the store and the policies).
//! - [`placements`]: the workload × cluster matrix (filtered, paged) and one cluster's workloads.
//! - [`plan`]: `fedsched plan`, what a change of the policy repository would do.
//! - [`replay`]: `fedsched replay`, recorded decisions made again and compared.
//! - [`report`]: `history`, `snapshots`, workloads, clusters and their text forms.
//! - [`resources`]: capacity, allocated and free per group of clusters.
//! - [`status`]: the daemon's in-memory status (last pass, readiness, cluster health) and
//!   its loop heartbeat.
//! - [`workloads`]: `fedsched get` and `/api/v1/workloads`, every placed workload as a row
//!   (policy, clusters and replicas, state, suspended and Lazy-held), filtered.
//! - [`workload_status`]: what the members run of a placed workload (desired, ready, pending
//!   with reasons, missing per cluster) and its aggregated state (`fedsched status`).
//!
//! Views read; they never write the store or the output directory.

pub mod explain;
pub mod placements;
pub mod plan;
pub mod replay;
pub mod report;
pub mod resources;
pub mod rollout;
pub mod status;
pub mod workload_status;
pub mod workloads;
