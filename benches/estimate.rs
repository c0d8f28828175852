//! Node-level estimation cost per (workload × cluster) at 1,000 clusters × 100 nodes:
//! - naive: the per-node loop ([`fedsched::model::nodes::estimate_naive`]) with the request
//!   compiled once per workload (only grouping and caching differ from the fast path);
//! - grouped + cached: [`fedsched::model::estimate::NodeEstimator`] as the scheduler calls it,
//!   on fresh snapshot copies (as every reconcile pass gets), so the node indexes are built
//!   inside the measurement and the per-shape cache starts empty.
//!
//! Not a timed test: it prints medians of several runs and the ratio. Run:
//! `cargo bench --profile dev --bench estimate` (quick, unoptimised) or `cargo bench --bench
//! estimate` (release). Workloads: 200, drawn from 20 request shapes (cpu/memory, a third with
//! a zone node selector, some tolerating a taint some nodes carry); nodes: 4 sizes × 3 CPU
//! vendors, a unique hostname label, usage in steps (so free vectors repeat only partly).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedsched::model::dimensions::{Dimensions, ModelSettings};
use fedsched::model::estimate::{Estimator, NodeEstimator};
use fedsched::model::nodes::{CompiledRequest, estimate_naive};
use fedsched::model::snapshot::ResourceSummary;
use fedsched::model::{ClusterSnapshot, ClusterTaint, NodeView, ReplicaRequirements, ResourceList};
use fedsched::policy::types::TaintEffect;

const CLUSTERS: usize = 1000;
const NODES: usize = 100;
const WORKLOADS: usize = 200;
/// Workloads the naive loop is timed on (it is slow; the cost is per pair either way).
const NAIVE_WORKLOADS: usize = 10;
const RUNS: usize = 5;

fn list(items: &[(&str, i64)]) -> ResourceList {
    ResourceList::of(items)
}

fn fleet() -> Vec<ClusterSnapshot> {
    const SIZES: [(i64, i64); 4] = [(4, 16), (8, 32), (16, 64), (32, 128)];
    const VENDORS: [&str; 3] = ["GenuineIntel", "AuthenticAMD", "ARM"];
    let gi = 1000i64 << 30;
    (0..CLUSTERS)
        .map(|c| {
            let nodes: Vec<NodeView> = (0..NODES)
                .map(|n| {
                    let (cpu, mem) = SIZES[(c + n) % 4];
                    let step = ((c * 7 + n * 13) % 6) as i64;
                    let labels: BTreeMap<String, String> = [
                        ("kubernetes.io/hostname".to_string(), format!("c{c}-n{n}")),
                        ("topology.kubernetes.io/zone".to_string(), format!("z{}", n % 3)),
                        ("feature.node.kubernetes.io/cpu-model.vendor_id".to_string(), VENDORS[n % 3].to_string()),
                        ("node.kubernetes.io/instance-type".to_string(), format!("m.{cpu}x{mem}")),
                    ]
                    .into();
                    let taints = if n % 10 == 0 {
                        vec![ClusterTaint {
                            key: "dedicated".into(),
                            value: Some("batch".into()),
                            effect: TaintEffect::NoSchedule,
                        }]
                    } else {
                        vec![]
                    };
                    NodeView {
                        name: format!("c{c}-n{n}"),
                        labels: labels.into(),
                        taints: taints.into(),
                        allocatable: list(&[("cpu", cpu * 1000), ("memory", mem * gi), ("pods", 110_000)]).into(),
                        capacity: list(&[("cpu", cpu * 1000), ("memory", mem * gi), ("pods", 110_000)]).into(),
                        ready: n % 50 != 49,
                        unschedulable: false,
                        requested: list(&[("cpu", step * cpu * 100), ("memory", step * mem * gi / 10)]),
                        pods: step as u32 * 5,
                    }
                })
                .collect();
            ClusterSnapshot::live(format!("member-{c:04}"), format!("https://member-{c}"))
                .with_summary(ResourceSummary::from_nodes(&nodes, &ResourceList::new(), 0, &[]))
                .with_nodes(nodes)
        })
        .collect()
}

fn workloads() -> Vec<ReplicaRequirements> {
    let gi = 1000i64 << 30;
    (0..WORKLOADS)
        .map(|w| {
            let shape = w % 20;
            let mut r = ReplicaRequirements {
                request: list(&[("cpu", 250 * (1 + shape as i64 % 8)), ("memory", gi / 4 * (1 + shape as i64 % 5))]),
                ..Default::default()
            };
            if shape % 3 == 0 {
                r.node_selector.insert("topology.kubernetes.io/zone".into(), format!("z{}", shape % 3));
            }
            if shape % 4 == 0 {
                r.tolerations =
                    r#"[{"key":"dedicated","operator":"Equal","value":"batch","effect":"NoSchedule"}]"#.into();
            }
            r
        })
        .collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let settings = Arc::new(ModelSettings::default());
    let dims = Dimensions::new(&settings);
    let clusters = fleet();
    let reqs = workloads();
    let pairs_fast = (WORKLOADS * CLUSTERS) as f64;
    let pairs_naive = (NAIVE_WORKLOADS * CLUSTERS) as f64;

    let mut naive_runs = Vec::new();
    let mut naive_sum = 0i64;
    for _ in 0..RUNS {
        let compiled: Vec<CompiledRequest> = reqs
            .iter()
            .take(NAIVE_WORKLOADS)
            .enumerate()
            .map(|(i, r)| CompiledRequest::compile(i as u64, r, &dims))
            .collect();
        let t = Instant::now();
        let mut sum = 0i64;
        for c in &compiled {
            for cl in &clusters {
                sum += estimate_naive(black_box(&cl.nodes), c);
            }
        }
        naive_runs.push(t.elapsed());
        naive_sum = sum;
    }

    let mut fast_runs = Vec::new();
    let mut warm_runs = Vec::new();
    let mut fast_sum = 0i64;
    let mut groups = 0usize;
    for _ in 0..RUNS {
        // A pass works on fresh copies: empty node indexes, empty per-shape caches.
        let copies: Vec<ClusterSnapshot> = clusters.clone();
        let est = NodeEstimator::new(settings.clone());
        let t = Instant::now();
        let mut sum = 0i64;
        let mut first = 0i64;
        for (i, r) in reqs.iter().enumerate() {
            for cl in &copies {
                let v = est.max_replicas(black_box(cl), r).unwrap_or(0);
                sum += v;
                if i < NAIVE_WORKLOADS {
                    first += v;
                }
            }
        }
        fast_runs.push(t.elapsed());
        fast_sum = first;
        // The same pass again: every answer is a cache hit (the steady per-pair overhead).
        let t = Instant::now();
        let mut again = 0i64;
        for r in &reqs {
            for cl in &copies {
                again += est.max_replicas(black_box(cl), r).unwrap_or(0);
            }
        }
        warm_runs.push(t.elapsed());
        assert_eq!(again, sum);
        groups = copies.iter().map(|c| c.node_index(&dims, &settings).group_count()).sum();
    }
    assert_eq!(naive_sum, fast_sum, "the grouped, cached estimate must equal the per-node loop");

    let naive = median(naive_runs).as_secs_f64() * 1e9 / pairs_naive;
    let fast = median(fast_runs).as_secs_f64() * 1e9 / pairs_fast;
    let warm = median(warm_runs).as_secs_f64() * 1e9 / pairs_fast;
    println!(
        "node-level estimate, {CLUSTERS} clusters × {NODES} nodes, {WORKLOADS} workloads (20 shapes), median of {RUNS} runs"
    );
    println!(
        "  node groups: {groups} for {} nodes ({:.1} nodes per group)",
        CLUSTERS * NODES,
        (CLUSTERS * NODES) as f64 / groups.max(1) as f64
    );
    println!("  naive per-node loop:   {naive:>10.0} ns per (workload × cluster)");
    println!("  grouped + cached:      {fast:>10.0} ns per (workload × cluster) (index build included)");
    println!("  cache hit only:        {warm:>10.0} ns per (workload × cluster)");
    println!("  ratio naive / fast:    {:>10.1}×", naive / fast);
    println!(
        "  per pass of {WORKLOADS} workloads: naive {:.2} s, grouped + cached {:.2} s",
        naive * pairs_fast / 1e9,
        fast * pairs_fast / 1e9
    );
}
