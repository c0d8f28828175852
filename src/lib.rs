//! fedsched: a multi-cluster Kubernetes scheduler with Karmada's policy semantics that writes
//! rendered per-cluster manifests for GitOps tools.
//!
//! # Layout (the floor plan; ARCHITECTURE.md has the rules `tests/it/architecture.rs` checks)
//!
//! - [`util`]: the ground floor: stable hashes, the clock, percent-encoding. Imports nothing.
//! - [`policy`]: the policy repository: Karmada API types, loading, validation, defaults,
//!   which policy claims which template.
//! - [`model`]: the resource model: quantities, resource lists, cluster snapshots, workloads
//!   and their requirements, replica estimators.
//! - [`schedule`]: filter and score plugins, cluster selection and replica assignment.
//! - [`render`]: the text of every output file: manifests (replica revision, overrides,
//!   pruning, provenance, safe YAML), the header, `kustomization.yaml`, the summary's shards.
//! - [`members`]: where cluster state comes from (poll): the offline form reads a Cluster
//!   object's own status; the live poller lists and watches Nodes and Pods.
//! - [`store`]: sled: versioned snapshots, placements, history, content-addressed inputs.
//! - [`secrets`]: what a Secret becomes in the output: SOPS-encrypted for each cluster's age
//!   recipient, left out, or (opted in) clear text; never its data in the store.
//! - [`publish`]: the output directory: atomic writes, pruning, the mass-deletion guard, git.
//! - [`reconcile`]: one pass through the whole flow, one module per stage; used by `render`
//!   and by the daemon.
//! - [`ha`]: high availability: leader election on a Kubernetes Lease (client-go's rules); the
//!   daemon publishes only while the fence of its lease holds.
//! - [`daemon`]: the long-running loop, driven by a stream of controls and a clock.
//! - [`views`]: the read side (explain, history, snapshots, resources, status), one
//!   implementation for the CLI and the API.
//! - [`metrics`], [`api`]: what the running daemon shows: Prometheus metrics and the HTTP
//!   listener (health, readiness, metrics, JSON API).
//! - [`testbed`]: simulated member clusters and `fedsched bench`; not part of the product.
//! - [`config`], [`telemetry`], [`cli`]: the edges.

// Every print goes through `util::stdio` (no panic on a closed pipe); tests may print.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

/// Every program that links fedsched (the daemon, the CLI, the tests and benches) allocates
/// through mimalloc: parsing, scheduling, rendering and the Lua VM are allocation-heavy, and
/// glibc's malloc was a fifth of a cold interpreter call (docs/design.md, "Crate choices").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod api;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod ha;
pub mod members;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod publish;
pub mod reconcile;
pub mod render;
pub mod schedule;
pub mod secrets;
pub mod store;
pub mod telemetry;
pub mod testbed;
pub mod util;
pub mod views;
