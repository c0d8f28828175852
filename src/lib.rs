//! fedsched: a multi-cluster Kubernetes scheduler with Karmada's policy semantics that writes
//! rendered per-cluster manifests for GitOps tools.
//!
//! # Layout (the data flow, in order)
//!
//! - [`policy`]: the policy repository: Karmada API types, loading, validation, defaults,
//!   which policy claims which template.
//! - [`members`]: where cluster state comes from (poll): the offline form reads a Cluster
//!   object's own status; the live poller lists Nodes and Pods from the members' APIs.
//! - [`model`]: the resource model: quantities, resource lists, cluster snapshots, workloads
//!   and their requirements, replica estimators.
//! - [`schedule`]: filter and score plugins, cluster selection and replica assignment.
//! - [`render`]: per-cluster manifests: replica revision, pruning, provenance, safe YAML.
//! - [`publish`]: the output directory: atomic writes, kustomization files, pruning.
//! - [`store`]: sled: versioned snapshots, placements, history, content-addressed inputs.
//! - [`reconcile`]: one pass through the whole flow; used by `render` and by the daemon.
//! - [`daemon`]: the long-running loop: watches, timers, signals, systemd notification.
//! - [`explain`]: answers "why did this workload go there" from the store and the policies.
//! - [`report`]: the JSON documents shared by the CLI, the HTTP API and the output summary.
//! - [`resources`]: capacity, allocated and free per group of clusters (`fedsched resources`).
//! - [`status`], [`metrics`], [`api`]: what the running daemon shows: its in-memory status,
//!   Prometheus metrics, and the HTTP listener (health, readiness, metrics, JSON API).
//! - [`simulate`]: simulated member clusters that speak the Kubernetes API (and apply the
//!   output like a GitOps agent), for the demo, the tests and the benchmarks.
//! - [`bench`]: `fedsched bench` (issue 8's scenarios at fleet scale) and the timing helper of
//!   the micro-benchmarks.
//! - [`config`], [`telemetry`], [`cli`]: the edges.

pub mod api;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod members;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod publish;
pub mod reconcile;
pub mod render;
pub mod schedule;
pub mod store;
pub mod telemetry;
pub mod testbed;
pub mod util;
pub mod views;
