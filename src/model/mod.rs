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
//!
//! # In detail
//!
//! **The one home of the resource model.** Quantities (milli-units), resource lists,
//! `ClusterSnapshot`, `Workload` and its per-replica requirements (`workload.rs`: the repository's
//! `WorkloadInterpreter` table first, then Karmada's native interpreter for Deployment,
//! StatefulSet, ReplicaSet, Job, Pod), the dependencies of a pod template (`deps.rs`, for
//! propagateDeps), and the replica estimators, registered in one list (`estimate::estimators_with`;
//! a cluster without `resourceSummary` allows 0, as Karmada; the summary estimator reads each
//! view's free amounts by resource id — `SummaryFree`, made once per view and reset by whatever
//! changes the summary (a deduction reads again only the requested resources' and the pod slots',
//! `SummaryCache::deducted`), ids from one process-wide table, `resources::resource_id`, bounded,
//! names past the bound read by name —; the node-level one builds the node indexes a request is the
//! first to need on every core when there are many). `ClusterSnapshot` carries live node views (an
//! `Arc<Vec<NodeView>>` shared with the poller's `LiveData` and between copies; `assumed::deduct`
//! copies on write), pod facts and poll facts; `ResourceSummary::from_nodes` is Karmada's
//! status-controller summary; `workload::pod_request` is the one pod-request rule, for templates
//! and live pods. `dimensions.rs`: the `Dimension` trait and **the one list of dimensions**
//! (`Dimensions::new`), `ModelSettings` (`[model]` in pure form). `nodes.rs`: node predicates
//! (selector, affinity, `tolerates` — Kubernetes' `ToleratesTaint`, the one rule for nodes and
//! clusters —, GPU model), `NodeIndex` (nodes grouped by free vector/taints/schedulability, a
//! per-request-shape cache of the walk — the estimate and the counts explain formats —, and per
//! label constraints the nodes they admit, kept across deductions: a cached walk follows the nodes
//! a deduction moved (their figures before and after, logged only while a walk is cached, at most
//! 64 followed, the log bounded) instead of walking every group again; the allocatable CPU is
//! summed at the build, so explain knows whether CPU is heterogeneous without the CPU figures a
//! deduction resets; the explain lines themselves are kept per request shape until pods are added,
//! `NodeIndex::explain_shared`; a deduction's first fit, `NodeIndex::first_fit`, walks the nodes
//! through a node-to-group map, computes each group's figure once and stops when its replicas are
//! placed, when the index was built with its dimensions, `Dimensions::id`; it then moves only the
//! nodes it changed to their new group — the groups have no order, no answer depends on one),
//! `CompiledRequest` (ids from one process-wide counter: every profile has its own `Compiler`, and
//! their requests meet in the same indexes; label-constraint ids from one process-wide table,
//! shared by the compilers and the deductions, `CompiledRequest::compile_labelled`),
//! `estimate_naive` (the per-node loop the fast path equals). `assumed.rs`: observed replicas by
//! owner and the deduction of assumed replicas (live members: pending = decided − observed, across
//! passes until observed or `assumed_ttl`; offline members: a pass's own decisions only, all
//! pending — the pass's views are built without them, `Assumed::plan(…, offline)`, and
//! `PassSnapshots::already_deducted` is never true for a placement on one — noted per view in
//! `ClusterSnapshot::taken`, which the summary estimator's explain prints). `autoscaling.rs`:
//! HPA-managed templates (an HPA's `scaleTargetRef`, Karmada's retain-replicas label: `Autoscaled`,
//! made once per pass into the decide stage's `Context`) and the division of an HPA's bounds over
//! its target's members (`divide_bounds`, given the scheduler's Webster); the decide stage decides
//! the HPAs after the other workloads (their bounds, `decide::Autoscale`, are in their keys; which
//! templates HPAs scale is in every kept key's digests), and `render` leaves an HPA-managed
//! workload's replica field out. `builders.rs`: `ClusterSnapshot::offline/live/new` + `with_*`,
//! `NodeView::ready`, `ResourceList::of` — fixtures for tests and benches instead of 18-field
//! literals. `interpreter/`: Karmada's resource interpreter — `mod.rs` (operations, customizations
//! and their precedence: the repository's, then `[interpreter] dirs`, then the built-ins, then
//! native kinds; a content cache), `lua.rs` (a sandboxed Lua 5.1 VM per thread: no `io`, no
//! `require` but `kube`, no `load`, `os` only `date`/`time`, gopher-lua's
//! `pcall`/`xpcall`/`tostring`/ `tonumber`/`string.format`/`math.huge` (`stdlib.rs`), fresh globals
//! per call, per-call budgets of 20 M instructions, 2 s and 64 MiB (counted from when the arguments
//! are in; converted outside the limit, where mlua need not protect each table slot; the
//! collector's pause is 400 % with a full collection every 16 MiB of garbage, since each call
//! leaves its arguments behind); JSON ↔ Lua with Karmada's number rule: a whole number comes back a
//! JSON integer), `kube.rs` (the `kube` helper library on our own pod-request and dependency code;
//! `accuratePodRequirements` converts only the template fields `workload::pod_requirements` reads,
//! a `lua::Shape` built once per VM), `stdlib.rs` (the library functions whose C code the
//! instruction hook cannot see, replaced: `string.find`, `match`, `gmatch`, `gsub` on `pattern.rs`
//! — Lua 5.1's matcher, step-metered, recursion bounded —, `string.rep` checked against the memory
//! left, `table.sort` as Lua, coroutine creation charged; the call's `Budget` they and the hook
//! spend), `scope.rs` (what the scripts of one pass, plan or command spend together: an allowance
//! of wall-clock time and three strikes per script; carried to the threads a stage fans out to by
//! `util::threads`), `results.rs` (operation results, Karmada's empty-table repair, the conformance
//! comparison with `{{EXCLUDE}}`), `builtin.rs` (fedsched's own Rust interpreters for Kruise
//! CloneSet and StatefulSet, Argo Workflow, Flux HelmRelease and Kustomization, FlinkDeployment,
//! Volcano Job). Pure (the clock for `os.date` is passed in).

pub mod assumed;
pub mod autoscaling;
mod builders;
pub mod cpu_table;
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
    AgentHealth, AgentStatus, AgentVerdict, ClusterConstraints, ClusterSnapshot, ClusterTaint, Freshness, Health,
    NodeView, ObjectStatus, Observed, OwnerState, PodFacts, PollFacts, RawObject, Reserve, RolledOut, SnapshotSource,
};
pub use workload::{ReplicaRequirements, Workload};
