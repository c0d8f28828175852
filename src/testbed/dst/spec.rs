//! The world a seed gives before any fault: its size, the `[reschedule]` and `[publish]`
//! settings, the members (the fleet generator's nodes, each member's GitOps agent: how long
//! its pods take to start and to turn Ready, how far it lags), and the policy repository (one
//! Deployment per workload, some with a ConfigMap they depend on, each with a
//! PropagationPolicy of one of the strategies below and a failover rule).

use serde_json::Value;

use crate::testbed::simulate::fleet::{self, Generate, Rng};

/// How big a world is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// 3–5 members, 2–6 workloads.
    Tiny,
    /// 4–8 members, 4–12 workloads.
    Small,
    /// 10–30 members, 15–50 workloads.
    Medium,
    /// 60–200 members, 60–250 workloads.
    Large,
}

impl Size {
    /// The size of `seed`'s world: 40 % tiny, 40 % small, 15 % medium, 5 % large.
    pub fn of(seed: u64) -> Size {
        match crate::util::hash::fnv1a64(&seed.to_le_bytes()) % 20 {
            0 => Size::Large,
            1..=3 => Size::Medium,
            4..=11 => Size::Small,
            _ => Size::Tiny,
        }
    }
}

/// How a workload's policy places it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    /// Divided by available replicas over these members (all when empty).
    Dynamic(Vec<usize>),
    /// Divided by static weights.
    Static(Vec<(usize, u32)>),
    /// Divided, Aggregated (as few members as fit).
    Aggregated,
    /// Duplicated to these members.
    Duplicated(Vec<usize>),
    /// `clusterAffinities`: the primary members first, the backup members when none of those
    /// fits; Divided by available replicas, or Duplicated.
    Affinities { primary: Vec<usize>, backup: Vec<usize>, duplicated: bool },
}

/// A policy's failover rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failover {
    /// `failover.cluster.purgeMode` (None: no `failover` section).
    pub purge: Option<&'static str>,
    /// `clusterTolerations` of the not-ready and unreachable taints, `tolerationSeconds`.
    pub toleration_s: Option<u64>,
    /// `failover.application`: `decisionConditions.tolerationSeconds` and `purgeMode`.
    pub application_s: Option<u64>,
    pub application_purge: &'static str,
}

/// One workload of the repository (a Deployment and its PropagationPolicy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub name: String,
    pub namespace: &'static str,
    pub replicas: u32,
    pub cpu_m: u32,
    pub memory_mi: u32,
    /// Image tag (a template edit bumps it: a rollout).
    pub image: u32,
    pub strategy: Strategy,
    pub failover: Failover,
    /// Its pods reference a ConfigMap (`<name>-config`), propagated with it (propagateDeps).
    pub config: bool,
}

/// One member: the fleet generator's Cluster object and nodes, and its GitOps agent.
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub cluster: Value,
    pub nodes: Vec<Value>,
    /// Pods start this long after they are bound.
    pub start_ms: u64,
    /// Then turn Ready this long after.
    pub ready_ms: u64,
    /// The agent applies a changed directory this long after it changed.
    pub lag_ms: u64,
}

/// The daemon's settings in this world.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub interval_ms: u64,
    pub poll_timeout_ms: u64,
    pub toleration_ms: u64,
    pub grace_ms: u64,
    pub stable_for_ms: u64,
    pub min_stay_ms: u64,
    pub unschedulable_after_ms: u64,
    pub max_evictions_per_minute: u32,
    pub max_moves_per_pass: u32,
    pub move_back: bool,
    pub max_delete_ratio: f64,
    /// Two instances under `[ha]` (a leader and a standby).
    pub ha: bool,
}

impl Settings {
    /// The configuration file of the daemon in this world.
    pub fn config_toml(&self) -> String {
        let s = |ms: u64| format!("\"{}ms\"", ms);
        format!(
            "[reconcile]\ninterval = {}\n\n[poll]\ntimeout = {}\n\n[publish]\nmax_delete_ratio = {}\n\n\
             [reschedule]\ntoleration = {}\ngrace_period = {}\nstable_for = {}\nmin_stay = {}\n\
             unschedulable_after = {}\nmax_evictions_per_minute = {}\nmax_moves_per_pass = {}\nmove_back = {}\n",
            s(self.interval_ms),
            s(self.poll_timeout_ms),
            self.max_delete_ratio,
            s(self.toleration_ms),
            s(self.grace_ms),
            s(self.stable_for_ms),
            s(self.min_stay_ms),
            s(self.unschedulable_after_ms),
            self.max_evictions_per_minute,
            self.max_moves_per_pass,
            self.move_back,
        )
    }
}

/// Seeds from here on have a progressive rollout (issue 52): a RolloutPolicy in each
/// namespace, drawn from a stream of their own (the seeds below keep their worlds and
/// schedules exactly), `[ha]` one world in two, and pairs of faults that change a template and
/// move the lease while its rollout is under way.
pub const ROLLOUT_SEEDS: u64 = 1_000_000;

/// The RolloutPolicy of a world in [`ROLLOUT_SEEDS`]: three stages by member — `canary`
/// (one member), `wave` (some others), and the final stage (the rest) — over every Deployment
/// of its namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rollout {
    pub canary: usize,
    pub wave: Vec<usize>,
    pub min_success_ms: u64,
    pub max_failures: u32,
    pub on_failure: &'static str,
}

impl Rollout {
    fn generate(seed: u64, n: usize) -> Rollout {
        let mut rng = Rng(seed ^ 0x2011_0a7e_5ea1);
        let canary = rng.below(n as u64) as usize;
        let mut wave = some_members(&mut rng, n, (n / 2).max(1));
        wave.retain(|m| *m != canary);
        Rollout {
            canary,
            wave,
            min_success_ms: *rng.pick(&[20, 60, 120, 300]) * S,
            max_failures: *rng.pick(&[0, 0, 1]),
            on_failure: if rng.chance(50) { "Halt" } else { "Rollback" },
        }
    }

    /// The stage of member `m` (0 canary, 1 wave, 2 the final stage). A wave that names no
    /// member (its only pick was the canary) is `clusterNames: []`: a ClusterAffinity with no
    /// constraint, which matches every cluster (Karmada's), so it takes all but the canary.
    pub fn stage_of(&self, m: usize) -> usize {
        if m == self.canary {
            0
        } else if self.wave.contains(&m) || self.wave.is_empty() {
            1
        } else {
            2
        }
    }

    /// The RolloutPolicy of namespace `ns` as YAML.
    pub fn policy_yaml(&self, ns: &str, members: &[Member]) -> String {
        format!(
            "apiVersion: fedsched.io/v1alpha1\nkind: RolloutPolicy\nmetadata: {{name: waves, namespace: {ns}}}\nspec:\n\
             \x20 resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment}}]\n\
             \x20 minSuccessTime: {}s\n  maxFailures: {}\n  onFailure: {}\n  stages:\n\
             \x20 - {{name: canary, clusterAffinity: {{clusterNames: {}}}}}\n\
             \x20 - {{name: wave, clusterAffinity: {{clusterNames: {}}}}}\n",
            self.min_success_ms / S,
            self.max_failures,
            self.on_failure,
            names(members, &[self.canary]),
            names(members, &self.wave),
        )
    }
}

/// Everything a seed decides before the first fault.
#[derive(Debug, Clone)]
pub struct WorldSpec {
    pub seed: u64,
    pub size: Size,
    pub settings: Settings,
    pub members: Vec<Member>,
    pub workloads: Vec<Workload>,
    /// A seed of [`ROLLOUT_SEEDS`]: its RolloutPolicy.
    pub rollout: Option<Rollout>,
    /// Simulated time the run lasts.
    pub duration_ms: u64,
}

const S: u64 = 1000;

impl WorldSpec {
    /// The world of `seed` (its size from [`Size::of`] unless `size` says otherwise).
    pub fn generate(seed: u64, size: Option<Size>) -> WorldSpec {
        let size = size.unwrap_or_else(|| Size::of(seed));
        let mut rng = Rng(seed ^ 0x005e_ed0f_a04d);
        let (members, nodes, workloads) = match size {
            Size::Tiny => (rng.range(3, 5), rng.range(1, 2), rng.range(2, 6)),
            Size::Small => (rng.range(4, 8), rng.range(1, 3), rng.range(4, 12)),
            Size::Medium => (rng.range(10, 30), rng.range(1, 2), rng.range(15, 50)),
            Size::Large => (rng.range(60, 200), 1, rng.range(60, 250)),
        };
        let ms = |rng: &mut Rng, choices: &[u64]| *rng.pick(choices) * S;
        let mut settings = Settings {
            interval_ms: ms(&mut rng, &[5, 10, 15, 30]),
            poll_timeout_ms: ms(&mut rng, &[2, 5]),
            toleration_ms: ms(&mut rng, &[20, 30, 60, 120]),
            grace_ms: ms(&mut rng, &[30, 60, 120, 300]),
            stable_for_ms: ms(&mut rng, &[30, 60, 120]),
            min_stay_ms: ms(&mut rng, &[0, 10, 60]),
            unschedulable_after_ms: ms(&mut rng, &[30, 60, 120]),
            max_evictions_per_minute: *rng.pick(&[5, 20, 60]),
            max_moves_per_pass: *rng.pick(&[3, 10]),
            move_back: rng.chance(80),
            max_delete_ratio: *rng.pick(&[0.3, 0.5, 0.8]),
            ha: rng.chance(15),
        };
        let fleet =
            fleet::generate(&Generate { clusters: members as usize, nodes: nodes as usize, pods: 0, seed: rng.next() });
        let members: Vec<Member> = fleet
            .into_iter()
            .map(|c| Member {
                name: c.name,
                cluster: c.cluster,
                nodes: c.nodes,
                start_ms: ms(&mut rng, &[0, 0, 1, 3]),
                ready_ms: ms(&mut rng, &[0, 2, 5, 10, 30, 90]),
                lag_ms: ms(&mut rng, &[0, 1, 3, 10, 30]),
            })
            .collect();
        let n = members.len();
        let workloads = (0..workloads as usize).map(|i| workload(&mut rng, i, n)).collect();
        let duration_ms = rng.range(10, 30) * 60 * S;
        let rollout = (seed >= ROLLOUT_SEEDS).then(|| Rollout::generate(seed, n));
        if rollout.is_some() {
            settings.ha = Rng(seed ^ 0x2011_0a7e_00a0).chance(50);
        }
        WorldSpec { seed, size, settings, members, workloads, rollout, duration_ms }
    }
}

/// A few distinct members (at least one, at most `k`).
pub(crate) fn some_members(rng: &mut Rng, n: usize, k: usize) -> Vec<usize> {
    let want = (1 + rng.below(k.min(n) as u64) as usize).min(n);
    let mut out: Vec<usize> = Vec::new();
    while out.len() < want {
        let m = rng.below(n as u64) as usize;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out.sort_unstable();
    out
}

/// A strategy for a workload over `n` members.
pub(crate) fn strategy(rng: &mut Rng, n: usize) -> Strategy {
    match rng.below(20) {
        0..=6 => Strategy::Dynamic(if rng.chance(50) { Vec::new() } else { some_members(rng, n, 4) }),
        7..=9 => {
            let members = some_members(rng, n, 3);
            Strategy::Static(members.into_iter().map(|m| (m, 1 + rng.below(3) as u32)).collect())
        }
        10..=11 => Strategy::Aggregated,
        12..=14 => Strategy::Duplicated(some_members(rng, n, 3)),
        _ => {
            let all = some_members(rng, n, 4);
            let cut = 1.max(all.len() / 2);
            let (primary, backup) = all.split_at(cut.min(all.len()));
            let backup = if backup.is_empty() {
                (0..n).filter(|m| !primary.contains(m)).take(2).collect()
            } else {
                backup.to_vec()
            };
            Strategy::Affinities { primary: primary.to_vec(), backup, duplicated: rng.chance(25) }
        }
    }
}

fn workload(rng: &mut Rng, i: usize, n: usize) -> Workload {
    let purge = match rng.below(20) {
        0..=13 => Some("Gracefully"),
        14..=16 => Some("Directly"),
        _ => None,
    };
    Workload {
        name: format!("w{i:03}"),
        namespace: if i % 3 == 2 { "team-a" } else { "shop" },
        replicas: rng.range(1, 10) as u32,
        cpu_m: 100 * rng.range(1, 15) as u32,
        memory_mi: 128 * rng.range(1, 8) as u32,
        image: 1,
        strategy: strategy(rng, n),
        failover: Failover {
            purge,
            toleration_s: rng.chance(40).then(|| rng.range(10, 120)),
            application_s: rng.chance(15).then(|| rng.range(30, 120)),
            application_purge: {
                const MODES: [&str; 4] = ["Gracefully", "Gracefully", "Directly", "Never"];
                MODES[rng.below(4) as usize]
            },
        },
        config: rng.chance(30),
    }
}

fn names(members: &[Member], idx: &[usize]) -> String {
    let v: Vec<&str> = idx.iter().filter_map(|i| members.get(*i)).map(|m| m.name.as_str()).collect();
    format!("[{}]", v.join(", "))
}

impl Workload {
    /// The Deployment (and its ConfigMap) as YAML.
    pub fn template_yaml(&self) -> String {
        let (name, ns) = (&self.name, self.namespace);
        let volumes = if self.config {
            format!(
                "      volumes:\n      - name: config\n        configMap: {{name: {name}-config}}\n\
                 ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}-config, namespace: {ns}}}\n\
                 data: {{mode: \"{}\"}}\n",
                self.image
            )
        } else {
            String::new()
        };
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: {}\n\
             \x20 selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n\
             \x20   spec:\n      containers:\n      - name: main\n        image: registry.example/{name}:{}\n\
             \x20       resources: {{requests: {{cpu: {}m, memory: {}Mi}}}}\n{volumes}",
            self.replicas, self.image, self.cpu_m, self.memory_mi
        )
    }

    /// The PropagationPolicy as YAML.
    pub fn policy_yaml(&self, members: &[Member]) -> String {
        let (name, ns) = (&self.name, self.namespace);
        let mut placement = String::new();
        let dynamic = "    replicaScheduling:\n      replicaSchedulingType: Divided\n      replicaDivisionPreference: Weighted\n      weightPreference: {dynamicWeight: AvailableReplicas}\n";
        let duplicated = "    replicaScheduling: {replicaSchedulingType: Duplicated}\n";
        match &self.strategy {
            Strategy::Dynamic(on) => {
                if !on.is_empty() {
                    placement.push_str(&format!("    clusterAffinity: {{clusterNames: {}}}\n", names(members, on)));
                }
                placement.push_str(dynamic);
            }
            Strategy::Static(weights) => {
                let idx: Vec<usize> = weights.iter().map(|w| w.0).collect();
                placement.push_str(&format!("    clusterAffinity: {{clusterNames: {}}}\n", names(members, &idx)));
                placement.push_str("    replicaScheduling:\n      replicaSchedulingType: Divided\n      replicaDivisionPreference: Weighted\n      weightPreference:\n        staticWeightList:\n");
                for (m, w) in weights {
                    placement.push_str(&format!(
                        "        - {{targetCluster: {{clusterNames: {}}}, weight: {w}}}\n",
                        names(members, &[*m])
                    ));
                }
            }
            Strategy::Aggregated => placement.push_str(
                "    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}\n",
            ),
            Strategy::Duplicated(on) => {
                placement.push_str(&format!("    clusterAffinity: {{clusterNames: {}}}\n", names(members, on)));
                placement.push_str(duplicated);
            }
            Strategy::Affinities { primary, backup, duplicated: dup } => {
                placement.push_str(&format!(
                    "    clusterAffinities:\n    - {{affinityName: primary, clusterNames: {}}}\n    - {{affinityName: backup, clusterNames: {}}}\n",
                    names(members, primary),
                    names(members, backup)
                ));
                placement.push_str(if *dup { duplicated } else { dynamic });
            }
        }
        if let Some(t) = self.failover.toleration_s {
            placement.push_str("    clusterTolerations:\n");
            for key in ["cluster.karmada.io/not-ready", "cluster.karmada.io/unreachable"] {
                placement.push_str(&format!(
                    "    - {{key: {key}, operator: Exists, effect: NoExecute, tolerationSeconds: {t}}}\n"
                ));
            }
        }
        let mut failover = String::new();
        if self.failover.purge.is_some() || self.failover.application_s.is_some() {
            failover.push_str("  failover:\n");
            if let Some(p) = self.failover.purge {
                failover.push_str(&format!("    cluster: {{purgeMode: {p}}}\n"));
            }
            if let Some(t) = self.failover.application_s {
                let p = self.failover.application_purge;
                let grace = if p == "Gracefully" { "      gracePeriodSeconds: 30\n" } else { "" };
                failover.push_str(&format!(
                    "    application:\n      decisionConditions: {{tolerationSeconds: {t}}}\n      purgeMode: {p}\n{grace}"
                ));
            }
        }
        format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n\
             \x20 resourceSelectors:\n  - {{apiVersion: apps/v1, kind: Deployment, name: {name}}}\n\
             \x20 propagateDeps: {}\n  placement:\n{placement}{failover}",
            // Application failover requires propagateDeps (the policy's validation says so).
            self.config || self.failover.application_s.is_some()
        )
    }

    /// Whether its replicas are divided (the total is its replicas), not duplicated.
    pub fn divided(&self) -> bool {
        !matches!(self.strategy, Strategy::Duplicated(_) | Strategy::Affinities { duplicated: true, .. })
    }

    /// The toleration of a lost member before eviction (its policy's, else the default).
    pub fn toleration_ms(&self, default_ms: u64) -> u64 {
        self.failover.toleration_s.map_or(default_ms, |s| s * S)
    }

    /// The workload's key.
    pub fn key(&self) -> crate::policy::ObjectKey {
        crate::policy::ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some(self.namespace.into()),
            name: self.name.as_str().into(),
        }
    }

    /// The pod owner of its pods in a member (the simulated ReplicaSet, `namespace/name`).
    pub fn pod_owner(&self) -> String {
        format!("{}/{}-sim", self.namespace, self.name)
    }
}
