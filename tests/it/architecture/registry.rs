//! Contracts over the plugin registry (issue 51), checked on generated inputs instead of
//! trusted from each plugin's doc comment. Both are what the incremental engine leans on:
//!
//! - **A scorer's `static_only` claim holds.** Under settings where a scorer says it reads only
//!   static facts, its raw score of a cluster is the same whatever the cluster's dynamic facts
//!   (summary, nodes, pods, resource models, freshness, poll). A profile whose scorers are all
//!   static-only has its kept decisions checked by the verdicts of the changed clusters alone
//!   (`schedule::outcome_stands`); a wrong claim would keep a decision a cold pass would not
//!   make. (Raw scores equal ⇒ normalised scores equal: `normalize` sees only the raw scores.)
//! - **A filter's `memo_key` holds.** For a cluster outside the previous placement, two
//!   workloads with the same key get the same `Fit` — also when the cluster's capacity differs
//!   between them (`schedule::Fleet` evaluates a keyed filter once per key and cluster and
//!   shares the answer across a pass whose deductions change capacity).
//!
//! Each check runs over every plugin of `schedule::framework::registry()` on a fixed-seed
//! generator (deterministic: a failure prints the smallest case and reproduces), and once more
//! on a plugin that lies, to show that the check catches the lie.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::Arc;

use fedsched::model::dimensions::ModelSettings;
use fedsched::model::snapshot::{ModelGrade, ResourceSummary};
use fedsched::model::{
    ClusterConstraints, ClusterSnapshot, ClusterTaint, Freshness, Health, NodeView, PodFacts, PollFacts,
    ReplicaRequirements, ResourceList, Workload,
};
use fedsched::policy::ObjectKey;
use fedsched::policy::types::{ClusterAffinity, Placement, TaintEffect};
use fedsched::schedule::framework::{
    CpuDivision, FilterPlugin, Fit, MemoContext, Plugin, PluginContext, ScorePlugin, ScoreSettings, registry,
};
use fedsched::schedule::plugins::taint_toleration::TaintToleration;
use fedsched::schedule::profile::{CostTable, Price, PriceEntry};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Value, json};

/// Cases per check: each is a few microseconds.
const CASES: u32 = 3000;

const CLUSTERS: [&str; 3] = ["c1", "c2", "c3"];
const GIB: i64 = 1 << 30;

/// The workload side of a context (everything but the cluster), owned.
#[derive(Debug, Clone)]
struct Side {
    key: ObjectKey,
    workload: Workload,
    placement: Placement,
    affinity: Option<ClusterAffinity>,
    previous: BTreeMap<String, i32>,
    evicted: BTreeSet<String>,
    settings: ScoreSettings,
}

impl Side {
    fn on<'a>(&'a self, cluster: &'a ClusterSnapshot) -> PluginContext<'a> {
        PluginContext {
            key: &self.key,
            workload: &self.workload,
            placement: &self.placement,
            affinity: self.affinity.as_ref(),
            cluster,
            previous: &self.previous,
            evicted: &self.evicted,
            settings: &self.settings,
        }
    }

    fn memo(&self) -> MemoContext<'_> {
        MemoContext {
            key: &self.key,
            workload: &self.workload,
            placement: &self.placement,
            affinity: self.affinity.as_ref(),
            evicted: &self.evicted,
            settings: &self.settings,
        }
    }
}

/// A cluster's facts that change between passes or within one: capacity (summary, resource
/// models, nodes, pods — deductions change these within a pass), the poll and the freshness.
#[derive(Debug, Clone)]
struct Dynamic {
    summary: Option<ResourceSummary>,
    models: Vec<ModelGrade>,
    nodes: Vec<NodeView>,
    pods: Option<PodFacts>,
    poll: Option<PollFacts>,
    freshness: Option<Freshness>,
}

impl Dynamic {
    /// `statics` with these facts (`freshness`: also the freshness, else `statics`' stays).
    /// `statics` has no dynamic facts (nor a node index built from them).
    fn on(&self, statics: &ClusterSnapshot, freshness: bool) -> ClusterSnapshot {
        let mut c = statics.clone().with_resource_models(self.models.clone()).with_nodes(self.nodes.clone());
        c.summary = None;
        if let Some(s) = &self.summary {
            c = c.with_summary(s.clone());
        }
        c.pods = self.pods.clone().map(Arc::new);
        c.poll = self.poll.clone();
        if freshness {
            c.freshness = self.freshness;
        }
        c
    }
}

fn json_pick(items: Vec<Value>) -> impl Strategy<Value = Value> {
    select(items)
}

fn side() -> impl Strategy<Value = Side> {
    let key =
        (select(vec![("apps/v1", "Deployment"), ("v1", "ConfigMap"), ("batch/v1", "Job")]), select(vec!["a", "b"]))
            .prop_map(|((api_version, kind), name)| ObjectKey {
                api_version: api_version.into(),
                kind: kind.into(),
                namespace: Some("shop".into()),
                name: name.into(),
            });
    let request = select(vec![
        vec![],
        vec![("cpu", 500)],
        vec![("cpu", 2000), ("memory", GIB * 1000)],
        vec![("memory", GIB / 2 * 1000)],
        vec![("nvidia.com/gpu", 1000), ("cpu", 1000)],
        vec![("pods", 1000)],
    ]);
    let workload = (select(vec![None, Some(1), Some(3), Some(12)]), request).prop_map(|(replicas, request)| Workload {
        replicas,
        completions: None,
        requirements: ReplicaRequirements { request: ResourceList::of(&request), ..Default::default() },
        replica_path: None,
        revision: None,
        multi_template: false,
    });
    let tolerations = json_pick(vec![
        json!([]),
        json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]),
        json!([{"key": "dedicated", "operator": "Exists"}]),
        json!([{"key": "maintenance", "operator": "Exists", "effect": "NoExecute"}]),
        json!([{"operator": "Exists"}]),
    ]);
    let spread = json_pick(vec![
        json!([]),
        json!([{"spreadByField": "region", "maxGroups": 2, "minGroups": 1}]),
        json!([{"spreadByField": "zone", "maxGroups": 2, "minGroups": 1}]),
        json!([{"spreadByField": "provider", "maxGroups": 2, "minGroups": 1}]),
        json!([{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}]),
        json!([{"spreadByLabel": "tier", "maxGroups": 2, "minGroups": 1}]),
    ]);
    let scheduling = json_pick(vec![
        Value::Null,
        json!({"replicaSchedulingType": "Duplicated"}),
        json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}),
    ]);
    let placement = (tolerations, spread, scheduling).prop_map(|(t, s, r)| {
        let mut p = json!({"clusterTolerations": t, "spreadConstraints": s});
        if !r.is_null() {
            p["replicaScheduling"] = r;
        }
        serde_json::from_value::<Placement>(p).expect("a placement of the generator")
    });
    let affinity = json_pick(vec![
        Value::Null,
        json!({}),
        json!({"clusterNames": ["c1", "c2"]}),
        json!({"exclude": ["c2"]}),
        json!({"labelSelector": {"matchLabels": {"env": "prod"}}}),
        json!({"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}}),
    ])
    .prop_map(|a| (!a.is_null()).then(|| serde_json::from_value::<ClusterAffinity>(a).expect("an affinity")));
    let previous = select(vec![vec![], vec![("c1", 2)], vec![("c2", 1), ("c3", 1)], vec![("c1", 1), ("c2", 1)]])
        .prop_map(|p| p.into_iter().map(|(c, n)| (c.to_string(), n)).collect::<BTreeMap<_, _>>());
    let evicted = select(vec![vec![], vec!["c1"], vec!["c2"], vec!["c1", "c3"]])
        .prop_map(|e| e.into_iter().map(str::to_string).collect::<BTreeSet<_>>());
    (key, workload, placement, affinity, previous, evicted, settings()).prop_map(
        |(key, workload, placement, affinity, previous, evicted, settings)| Side {
            key,
            workload,
            placement,
            affinity,
            previous,
            evicted,
            settings,
        },
    )
}

fn prices(spot: bool, items: &[(&str, f64)]) -> PriceEntry {
    PriceEntry { spot, prices: items.iter().map(|(n, p)| (n.to_string(), Price(*p))).collect() }
}

fn settings() -> impl Strategy<Value = ScoreSettings> {
    let by_cluster = BTreeMap::from([("c1".to_string(), prices(false, &[("cpu", 10.0), ("memory", 2.0)]))]);
    let by_region = BTreeMap::from([("eu".to_string(), prices(true, &[("cpu", 5.0), ("nvidia.com/gpu", 300.0)]))]);
    let cost = select(vec![
        CostTable::default(),
        CostTable { spot_risk: Price(0.25), clusters: by_cluster.clone(), regions: BTreeMap::new() },
        CostTable { spot_risk: Price(0.25), clusters: BTreeMap::new(), regions: by_region.clone() },
        CostTable { spot_risk: Price(0.5), clusters: by_cluster, regions: by_region },
    ]);
    let weights = select(vec![vec![], vec![("c1", 3)], vec![("c2", 0), ("c3", 2)]])
        .prop_map(|w| w.into_iter().map(|(c, n)| (c.to_string(), n)).collect::<BTreeMap<_, _>>());
    let performance = ModelSettings {
        cpu_performance: BTreeMap::from([("fast".to_string(), 1.5), ("slow".to_string(), 0.5)]),
        cpu_performance_labels: vec!["perf".into()],
        ..ModelSettings::default()
    };
    let strict = ModelSettings { min_confidence: 0.5, ..ModelSettings::default() };
    let model = select(vec![Arc::new(ModelSettings::default()), Arc::new(performance), Arc::new(strict)]);
    let division = select(vec![CpuDivision::Raw, CpuDivision::Normalised]);
    (cost, weights, model, division).prop_map(|(cost, round_robin_weights, model, cpu_division)| ScoreSettings {
        cost,
        round_robin_weights,
        model,
        cpu_division,
    })
}

fn taint(key: &str, value: Option<&str>, effect: TaintEffect) -> ClusterTaint {
    ClusterTaint { key: key.into(), value: value.map(Into::into), effect }
}

/// A cluster's static facts (name, labels, provider, region, zones, taints, health, APIs,
/// constraints) with no dynamic facts.
fn statics() -> impl Strategy<Value = ClusterSnapshot> {
    let labels = select(vec![
        vec![],
        vec![("env", "prod")],
        vec![("env", "prod"), ("tier", "web"), ("perf", "fast")],
        vec![("perf", "slow"), ("nvidia.com/gpu.memory", "16384")],
    ]);
    let place = (
        select(vec![None, Some("aws")]),
        select(vec![None, Some("eu"), Some("us")]),
        select(vec![vec![], vec!["eu-1"], vec!["eu-1", "eu-2"]]),
    );
    let taints = select(vec![
        vec![],
        vec![taint("dedicated", Some("gpu"), TaintEffect::NoSchedule)],
        vec![taint("maintenance", None, TaintEffect::NoExecute)],
        vec![taint("soft", None, TaintEffect::PreferNoSchedule)],
    ]);
    let health = select(vec![Health::Ready, Health::NotReady { reason: "KubeletDown".into() }]);
    let apis =
        select(vec![vec![], vec!["apps/v1/Deployment"], vec!["apps/v1/Deployment", "v1/ConfigMap", "batch/v1/Job"]]);
    let limit = select(vec![None, Some(2), Some(10)]);
    (select(CLUSTERS.to_vec()), labels, place, taints, health, apis, limit).prop_map(
        |(name, labels, (provider, region, zones), taints, health, apis, limit)| {
            let mut c = ClusterSnapshot::offline(name, "clusters.yaml")
                .with_labels(labels)
                .with_zones(zones)
                .with_taints(taints)
                .with_health(health)
                .with_api_enablements(apis)
                .with_constraints(ClusterConstraints { reserve: Vec::new(), max_replicas_per_workload: limit });
            c.provider = provider.map(Into::into);
            c.region = region.map(Into::into);
            c
        },
    )
}

fn summary(cpu: i64, memory: i64, used: i64) -> ResourceSummary {
    ResourceSummary {
        allocatable: ResourceList::of(&[("cpu", cpu), ("memory", memory), ("pods", 110_000)]),
        allocated: ResourceList::of(&[("cpu", cpu * used / 100), ("memory", memory * used / 100)]),
        ..Default::default()
    }
}

fn dynamic() -> impl Strategy<Value = Dynamic> {
    let summaries =
        select(vec![None, Some(summary(4000, 8 * GIB * 1000, 50)), Some(summary(64_000, 256 * GIB * 1000, 10))]);
    let models = select(vec![vec![], vec![ModelGrade { grade: 0, ranges: vec![("cpu".into(), 0, 4000)] }]]);
    let gpu_node = NodeView::ready("g1", ResourceList::of(&[("cpu", 8000), ("nvidia.com/gpu", 2000)]))
        .with_labels([("perf", "fast"), ("nvidia.com/gpu.memory", "81920")]);
    let slow = NodeView::ready("n1", ResourceList::of(&[("cpu", 4000), ("memory", 16 * GIB * 1000)]))
        .with_labels([("perf", "slow")])
        .with_requested(ResourceList::of(&[("cpu", 3000)]), 5);
    let nodes = select(vec![vec![], vec![gpu_node.clone()], vec![slow.clone(), gpu_node]]);
    let pods = select(vec![None, Some(PodFacts { bound: 3, ..Default::default() })]);
    let poll = select(vec![None, Some(PollFacts { duration_ms: 40, pages: 1, nodes: 2, pods: 3, at_ms: 5000 })]);
    let stale = Freshness { polled_at_ms: 1000, consecutive_failures: 3, age_ms: 600_000, confidence_ppm: 100_000 };
    let freshness = select(vec![
        None,
        Some(Freshness { polled_at_ms: 5000, consecutive_failures: 0, age_ms: 0, confidence_ppm: 1_000_000 }),
        Some(stale),
    ]);
    (summaries, models, nodes, pods, poll, freshness).prop_map(|(summary, models, nodes, pods, poll, freshness)| {
        Dynamic { summary, models, nodes, pods, poll, freshness }
    })
}

/// A second workload side: each part either the first one's or drawn again, so that two sides
/// share a filter's projection often while differing elsewhere.
fn pair() -> impl Strategy<Value = (Side, Side)> {
    (side(), side(), any::<[bool; 7]>()).prop_map(|(a, b, keep)| {
        let mut c = b;
        if keep[0] {
            c.key = a.key.clone();
        }
        if keep[1] {
            c.workload = a.workload.clone();
        }
        if keep[2] {
            c.placement.cluster_tolerations = a.placement.cluster_tolerations.clone();
        }
        if keep[3] {
            c.placement.spread_constraints = a.placement.spread_constraints.clone();
            c.placement.replica_scheduling = a.placement.replica_scheduling.clone();
        }
        if keep[4] {
            c.affinity = a.affinity.clone();
        }
        if keep[5] {
            c.evicted = a.evicted.clone();
        }
        if keep[6] {
            c.settings = a.settings.clone();
        }
        (a, c)
    })
}

/// Runs `check` on `CASES` generated values of `strategy` from a fixed seed; the shrunk
/// failing case and its message on failure.
fn run<S: Strategy>(strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>) -> Result<(), String>
where
    S::Value: Debug,
{
    let config = Config { cases: CASES, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    runner.run(&strategy, check).map_err(|e| e.to_string())
}

/// The `static_only` contract of each of `scorers` (see the module doc).
fn static_claims_hold(scorers: &[&dyn ScorePlugin]) -> Result<(), String> {
    run((side(), statics(), dynamic(), dynamic()), |(side, statics, one, other)| {
        let (a, b) = (one.on(&statics, true), other.on(&statics, true));
        for scorer in scorers.iter().filter(|s| s.static_only(&side.settings)) {
            let (x, y) = (scorer.score(&side.on(&a)), scorer.score(&side.on(&b)));
            prop_assert_eq!(x, y, "{} claims static_only but its score moved with the dynamic facts", scorer.name());
        }
        Ok(())
    })
}

/// The `memo_key` contract of each of `filters` (see the module doc).
fn memo_keys_hold(filters: &[&dyn FilterPlugin]) -> Result<(), String> {
    run((pair(), statics(), dynamic(), dynamic()), |((one, two), statics, cap_one, cap_two)| {
        // The fleet memoises only clusters outside the previous placement.
        if one.previous.contains_key(&statics.name) || two.previous.contains_key(&statics.name) {
            return Ok(());
        }
        // The freshness stays (confidence is a fact of the pass); capacity may differ.
        let a = cap_one.on(&statics, true);
        let mut b = cap_two.on(&statics, false);
        b.freshness = a.freshness;
        for filter in filters {
            let (Some(k1), Some(k2)) = (filter.memo_key(&one.memo()), filter.memo_key(&two.memo())) else {
                continue;
            };
            if k1 == k2 {
                let (x, y) = (filter.filter(&one.on(&a)), filter.filter(&two.on(&b)));
                prop_assert_eq!(x, y, "{}: equal memo keys, different answers", filter.name());
            }
        }
        Ok(())
    })
}

fn scorers(registry: &[Plugin]) -> Vec<&dyn ScorePlugin> {
    registry.iter().filter_map(|p| if let Plugin::Score(s) = p { Some(s.as_ref()) } else { None }).collect()
}

fn filters(registry: &[Plugin]) -> Vec<&dyn FilterPlugin> {
    registry.iter().filter_map(|p| if let Plugin::Filter(f) = p { Some(f.as_ref()) } else { None }).collect()
}

#[test]
fn every_scorer_that_claims_static_only_ignores_the_dynamic_facts() {
    let registry = registry();
    let scorers = scorers(&registry);
    // The generator reaches a claim of each kind: under some settings and not under others.
    let settings = [
        ScoreSettings::default(),
        ScoreSettings {
            model: Arc::new(ModelSettings {
                cpu_performance: BTreeMap::from([("fast".into(), 1.5)]),
                ..Default::default()
            }),
            ..Default::default()
        },
    ];
    let claims: Vec<(&str, Vec<bool>)> =
        scorers.iter().map(|s| (s.name(), settings.iter().map(|st| s.static_only(st)).collect())).collect();
    assert!(claims.iter().any(|(_, c)| c.iter().any(|x| *x)), "no scorer claims static_only: {claims:?}");
    if let Err(e) = static_claims_hold(&scorers) {
        panic!("{e}");
    }
}

#[test]
fn every_filter_memo_key_decides_its_answer() {
    let registry = registry();
    let filters = filters(&registry);
    assert!(filters.iter().any(|f| f.memo_key(&side_of_default().memo()).is_some()), "no keyed filter");
    if let Err(e) = memo_keys_hold(&filters) {
        panic!("{e}");
    }
}

fn side_of_default() -> Side {
    Side {
        key: ObjectKey { api_version: "v1".into(), kind: "ConfigMap".into(), namespace: None, name: "a".into() },
        workload: Workload::non_workload(),
        placement: Placement::default(),
        affinity: None,
        previous: BTreeMap::new(),
        evicted: BTreeSet::new(),
        settings: ScoreSettings::default(),
    }
}

/// A scorer that claims static facts only but reads the cluster's allocatable CPU.
struct ReadsCapacity;

impl ScorePlugin for ReadsCapacity {
    fn name(&self) -> &'static str {
        "reads-capacity"
    }
    fn score(&self, ctx: &PluginContext<'_>) -> i64 {
        ctx.cluster.summary.as_ref().map_or(0, |s| s.allocatable.get("cpu"))
    }
    fn static_only(&self, _: &ScoreSettings) -> bool {
        true
    }
}

/// `taint-toleration` with a key that leaves out the tolerations it reads.
struct KeyWithoutTolerations;

impl FilterPlugin for KeyWithoutTolerations {
    fn name(&self) -> &'static str {
        "key-without-tolerations"
    }
    fn filter(&self, ctx: &PluginContext<'_>) -> Fit {
        TaintToleration.filter(ctx)
    }
    fn memo_key(&self, _: &MemoContext<'_>) -> Option<u64> {
        Some(0)
    }
}

#[test]
fn the_contract_checks_catch_a_wrong_claim() {
    let e = static_claims_hold(&[&ReadsCapacity]).expect_err("a static_only scorer reading capacity passed");
    assert!(e.contains("reads-capacity claims static_only"), "{e}");
    let e = memo_keys_hold(&[&KeyWithoutTolerations]).expect_err("a memo key missing the tolerations passed");
    assert!(e.contains("key-without-tolerations: equal memo keys"), "{e}");
}
