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
//!
//! # In detail
//!
//! Not part of the product. `simulate/`: `fedsched simulate`, simulated members over the Kubernetes
//! API — `fleet.rs` (fleet directories = Cluster object + `kubectl get nodes,pods -A -o yaml`
//! captures; the generator, whose Cluster objects list the APIs served: `STANDARD_APIS`, and a CRD
//! group on every other cluster), `server.rs` (hyper 1 service: a router, authentication, injected
//! faults, the discovery documents of the APIs of each Cluster object's `status.apiEnablements`,
//! one function per resource and admin endpoint), `watch.rs` (resource versions, the event window,
//! watch streams with bookmarks and 410, churn), `apply.rs` (the GitOps agent: workloads → pods,
//! first-fit binding, Unschedulable and Ready conditions with transition times, `--ready-after`;
//! node NotReady, node shrink and cluster outage from admin endpoints), `lease.rs`
//! (`coordination.k8s.io/v1` Leases of one host API under every cluster's path, with
//! resourceVersion conflicts, a fault per path and a history of holders), `repo.rs` (generated
//! policy repositories), `mod.rs` (TLS with an rcgen CA, listeners, client files under
//! `FLEET/.simulator/`). `bench/`: `fedsched bench` (the scenarios S1–S7, S9–S11, one method each
//! over a shared `Bench`) and the timing helper the `benches/` share. Figures: BENCHMARKS.md.
//! `dst/`: `fedsched dst`, the deterministic simulation (issue 46) — `spec.rs` (a seed's world:
//! members from the fleet generator, a repository, settings), `faults.rs` (its fault schedule),
//! `member.rs` (members and GitOps agents on `simulate/apply.rs`), `daemon.rs` (an instance: the
//! daemon's pass — `daemon::reading`, `Reconciler::load_inputs`, `apply_live`, `reconcile` — on its own
//! store, with restart, kill switch, `[ha]` fence and takeover), `world.rs` (the event loop on an
//! injected clock), `check.rs` (the invariants: the project's definition of correct), `corpus.rs`
//! (every bug found, by seed), shrinking in `mod.rs`; `tests/it/dst.rs` runs the seeds. `fuzz/`:
//! `fedsched fuzz` (issue 47) — `mutate.rs` (structure-aware mutation of a parsed document — a
//! random walk to a node, then a field removed, misspelt, retyped, set at a limit, a subtree of
//! another document spliced in, a list made long, a nesting made deep — and byte mutation of the
//! written text: YAML fragments, aliases, truncation, indentation, invalid UTF-8), `repo.rs` (the
//! demo repository and `seeds.yaml` mutated, through `check`'s path — `reconcile::load_inputs`,
//! `reconcile::template_errors`, warnings, claims — and one case in eight a whole pass),
//! `kubeconfig.rs` (every authentication and cluster field, canary credentials, a poll round and
//! the `[ha]` host client; servers forced local, exec plugins harmless), `lua.rs` (scripts mutated
//! by token and spliced with attack fragments, every operation in a scope of its own), `mod.rs`
//! (case `i` of seed `s` from its own generator, threads, `catch_unwind`, the per-case bound, the
//! repro line). `tests/it/fuzz.rs` runs a fixed number of cases; the soak's figure is in
//! BENCHMARKS.md.

pub mod bench;
pub mod dst;
pub mod fuzz;
pub mod simulate;
