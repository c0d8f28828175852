//! The read side: the documents fedsched shows about its decisions and its members, one
//! implementation each, shared by the CLI, the HTTP API and the output summary.
//!
//! - [`explain`]: why a workload went where it went (from the store and the policies).
//! - [`placed`]: the current placements as a pass holds them, indexed for the views (the
//!   daemon's), or read from the store (the CLI's).
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
//!
//! # In detail
//!
//! The read side, one implementation per document for the CLI, the API and the output: `explain.rs`
//! (why a workload went where it went: the result's rejected groups expanded into every cluster's
//! verdict, the typed estimates; with the caller's profiles), `report.rs` (`history`, `snapshots`,
//! `/api/v1/clusters` and their text forms), `workloads.rs` (`fedsched get` and
//! `/api/v1/workloads`: a row per placement with its filters; `Flags::of` reads a workload's
//! suspended and Lazy-held state from its last history record — the stored spec it was decided
//! with, the `LAZY_HELD_NOTE` the decide stage notes while a Lazy policy holds it — for `get`,
//! `explain` and `history` alike, from the store alone), `resources.rs` (capacity/allocated/free
//! per group, raw and normalised CPU, confidence), `workload_status.rs` (`fedsched status`,
//! `/api/v1/workloads/…/status`, explain's status block: per target cluster desired / ready /
//! pending with reasons / missing from the latest stored snapshots, and the workload's state
//! `Healthy`, `Progressing`, `Degraded`, `Unknown`), `placements.rs` (the workload × cluster
//! matrix, filtered and paged: `/api/v1/placements` and the Placements page; one cluster's
//! workloads, what runs there and what was refused there: `/api/v1/clusters/{name}/workloads` and
//! the Cluster page), `status.rs` (the daemon's in-memory status and loop heartbeat), `plan.rs` and
//! `replay.rs` (`fedsched plan`, `fedsched replay`: see "Plan and replay"). Views never write.

pub mod explain;
pub mod placed;
pub mod placements;
pub mod plan;
pub mod replay;
pub mod report;
pub mod resources;
pub mod rollout;
pub mod status;
pub mod workload_status;
pub mod workloads;
