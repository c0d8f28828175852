//! Test and demo peers, not part of the product: nothing in the daemon's path imports them
//! (the architecture test checks it); the CLI only dispatches their subcommands.
//!
//! - [`simulate`]: simulated member clusters that speak the Kubernetes API (and apply the
//!   output like a GitOps agent), for the demo, the tests and the benchmarks.
//! - [`bench`]: `fedsched bench` (the scenarios at fleet scale) and the timing helper of the
//!   micro-benchmarks.
//! - [`dst`]: `fedsched dst`, the deterministic simulation of the whole daemon under a
//!   seeded fault schedule, with the invariants checked at every step.
//! - [`fuzz`]: `fedsched fuzz`, structure-aware fuzzing of the policy repository, kubeconfigs
//!   and Lua customizations through the real entry points.

pub mod bench;
pub mod dst;
pub mod fuzz;
pub mod simulate;
