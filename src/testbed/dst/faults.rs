//! The fault schedule of a seed: what happens to the world, and when. Each [`Fault`] is one
//! event of the schedule (with its own duration when it has one), so that shrinking removes
//! whole faults; the world expands each into the timed [`Act`]s it starts and ends with.

use std::fmt;

use super::spec::{self, Strategy, WorldSpec};
use crate::testbed::simulate::fleet::Rng;

/// How a member is cut off from fedsched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Connection refused (Unreachable).
    Refused,
    /// The API never answers (Unreachable after `[poll] timeout`).
    Hung,
    /// 403 (NotReady: the API answers but refuses).
    Forbidden,
    /// The member is down: refused, and every node NotReady (its pods are not Ready).
    Dead,
}

/// One event of a fault schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// A member cut off for `for_ms`; `agent`: its GitOps agent is cut off too.
    Outage { member: usize, cut: Cut, for_ms: u64, agent: bool },
    /// A member's health flips: down `down_ms`, up `up_ms`, `times` times.
    Flap { member: usize, down_ms: u64, up_ms: u64, times: u32 },
    /// A node NotReady for `for_ms`.
    NodeNotReady { member: usize, node: usize, for_ms: u64 },
    /// A node's allocatable CPU and memory become `percent` % of what they were (for good).
    Capacity { member: usize, node: usize, percent: u32 },
    /// A member gets one more node (a copy of its first).
    AddNode { member: usize },
    /// A workload's pods crash in a loop on a member for `for_ms`.
    Crash { member: usize, workload: usize, for_ms: u64 },
    /// A template edit whose pods never become Ready, reverted after `for_ms`.
    NeverReady { workload: usize, for_ms: u64 },
    /// A template edit (new image: a rollout).
    Image { workload: usize },
    /// A scale-up or -down.
    Scale { workload: usize, replicas: u32 },
    /// A policy edit: another strategy.
    Policy { workload: usize, strategy: Strategy },
    /// Templates deleted together (restored after `for_ms` when given).
    Delete { workloads: Vec<usize>, for_ms: Option<u64> },
    /// A WorkloadRebalancer (a new generation) naming these workloads.
    Rebalance { workloads: Vec<usize> },
    /// A ClusterTaintPolicy tainting members whose Ready condition is not True `NoExecute`,
    /// removed after `for_ms`.
    TaintPolicy { for_ms: u64 },
    /// Members lost `gap_ms` apart (0: together), each for `for_ms`.
    Storm { members: Vec<usize>, gap_ms: u64, for_ms: u64, cut: Cut },
    /// A member's agent lags `lag_ms` behind for `for_ms`.
    AgentLag { member: usize, lag_ms: u64, for_ms: u64 },
    /// The daemon stops and starts again (store and output reopened).
    Restart,
    /// The daemon is killed (SIGKILL) right after step `step` of its next publish, and
    /// restarted `restart_ms` later.
    Kill { step: u32, restart_ms: u64 },
    /// `[ha]`: the leader loses its lease; the standby takes over.
    LeaderChange,
}

/// A fault at its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    pub at_ms: u64,
    pub fault: Fault,
}

fn secs(ms: u64) -> String {
    if ms.is_multiple_of(1000) { format!("{}s", ms / 1000) } else { format!("{ms}ms") }
}

impl fmt::Display for Scheduled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={} ", secs(self.at_ms))?;
        match &self.fault {
            Fault::Outage { member, cut, for_ms, agent } => {
                let a = if *agent { " (agent cut off too)" } else { "" };
                write!(f, "outage m{member} {cut:?} for {}{a}", secs(*for_ms))
            }
            Fault::Flap { member, down_ms, up_ms, times } => {
                write!(f, "flap m{member} down {} up {} x{times}", secs(*down_ms), secs(*up_ms))
            }
            Fault::NodeNotReady { member, node, for_ms } => {
                write!(f, "node {node} of m{member} NotReady for {}", secs(*for_ms))
            }
            Fault::Capacity { member, node, percent } => write!(f, "node {node} of m{member} to {percent}%"),
            Fault::AddNode { member } => write!(f, "m{member} gets a node"),
            Fault::Crash { member, workload, for_ms } => {
                write!(f, "w{workload:03} crashes on m{member} for {}", secs(*for_ms))
            }
            Fault::NeverReady { workload, for_ms } => write!(f, "w{workload:03} never Ready for {}", secs(*for_ms)),
            Fault::Image { workload } => write!(f, "w{workload:03} new image"),
            Fault::Scale { workload, replicas } => write!(f, "w{workload:03} scaled to {replicas}"),
            Fault::Policy { workload, strategy } => write!(f, "w{workload:03} policy -> {strategy:?}"),
            Fault::Delete { workloads, for_ms } => {
                let back = for_ms.map(|ms| format!(", back after {}", secs(ms))).unwrap_or_default();
                write!(f, "delete {}{back}", list(workloads))
            }
            Fault::Rebalance { workloads } => write!(f, "WorkloadRebalancer {}", list(workloads)),
            Fault::TaintPolicy { for_ms } => write!(f, "ClusterTaintPolicy for {}", secs(*for_ms)),
            Fault::Storm { members, gap_ms, for_ms, cut } => {
                let m: Vec<String> = members.iter().map(|m| format!("m{m}")).collect();
                write!(f, "storm {} {cut:?} {} apart for {}", m.join(","), secs(*gap_ms), secs(*for_ms))
            }
            Fault::AgentLag { member, lag_ms, for_ms } => {
                write!(f, "agent of m{member} lags {} for {}", secs(*lag_ms), secs(*for_ms))
            }
            Fault::Restart => write!(f, "restart"),
            Fault::Kill { step, restart_ms } => {
                write!(f, "kill -9 after publish step {step}, restart {} later", secs(*restart_ms))
            }
            Fault::LeaderChange => write!(f, "leader change"),
        }
    }
}

fn list(w: &[usize]) -> String {
    let v: Vec<String> = w.iter().map(|w| format!("w{w:03}")).collect();
    v.join(",")
}

/// The fault schedule of `spec`'s seed, in time order.
pub fn schedule(spec: &WorldSpec) -> Vec<Scheduled> {
    let mut rng = Rng(spec.seed ^ 0xfa01_75ed);
    let n = spec.members.len();
    let w = spec.workloads.len();
    let tol = spec.settings.toleration_ms;
    let count = rng.range(4, 8 + spec.duration_ms / 60_000) as usize;
    let start = 2 * spec.settings.interval_ms + 5_000;
    let end = spec.duration_ms.saturating_sub(spec.settings.grace_ms + spec.settings.stable_for_ms).max(start + 1);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let at_ms = rng.range(start, end) / 1000 * 1000;
        let member = rng.below(n as u64) as usize;
        let workload = rng.below(w as u64) as usize;
        let long = |rng: &mut Rng| rng.range(tol + 5_000, tol * 3 + 60_000) / 1000 * 1000;
        let short = |rng: &mut Rng| rng.range(2_000, (tol / 2).max(3_000)) / 1000 * 1000;
        let cut = |rng: &mut Rng| *rng.pick(&[Cut::Refused, Cut::Refused, Cut::Hung, Cut::Forbidden, Cut::Dead]);
        let fault = match rng.below(100) {
            0..=13 => Fault::Outage { member, cut: cut(&mut rng), for_ms: long(&mut rng), agent: rng.chance(50) },
            14..=17 => Fault::Outage { member, cut: cut(&mut rng), for_ms: short(&mut rng), agent: rng.chance(50) },
            18..=22 => {
                Fault::Flap { member, down_ms: short(&mut rng), up_ms: short(&mut rng), times: rng.range(2, 8) as u32 }
            }
            23..=27 => Fault::NodeNotReady { member, node: rng.below(4) as usize, for_ms: long(&mut rng) },
            28..=32 => {
                Fault::Capacity { member, node: rng.below(4) as usize, percent: *rng.pick(&[10, 25, 50, 200, 400]) }
            }
            33..=34 => Fault::AddNode { member },
            35..=39 => Fault::Crash { member, workload, for_ms: long(&mut rng) },
            40..=41 => Fault::NeverReady { workload, for_ms: long(&mut rng) },
            42..=46 => Fault::Image { workload },
            47..=55 => Fault::Scale { workload, replicas: rng.range(0, 14) as u32 },
            56..=60 => Fault::Policy { workload, strategy: spec::strategy(&mut rng, n) },
            61..=65 => {
                let many = (rng.range(1, (w as u64).max(1)) as usize).min(w);
                let mut ws: Vec<usize> = (0..w).collect();
                for i in 0..ws.len() {
                    let j = i + rng.below((ws.len() - i) as u64) as usize;
                    ws.swap(i, j);
                }
                ws.truncate(many);
                ws.sort_unstable();
                Fault::Delete { workloads: ws, for_ms: rng.chance(50).then(|| long(&mut rng)) }
            }
            66..=69 => {
                let mut ws = spec::some_members(&mut rng, w, 3);
                ws.retain(|x| *x < w);
                Fault::Rebalance { workloads: ws }
            }
            70..=72 => Fault::TaintPolicy { for_ms: long(&mut rng) * 2 },
            73..=79 => {
                let k = (n / 2 + 1).min(n);
                let mut members: Vec<usize> = (0..n).collect();
                for i in 0..n {
                    let j = i + rng.below((n - i) as u64) as usize;
                    members.swap(i, j);
                }
                members.truncate(k.max(1));
                let gap_ms = if rng.chance(50) { 0 } else { rng.range(1, 15) * 1000 };
                Fault::Storm { members, gap_ms, for_ms: long(&mut rng), cut: cut(&mut rng) }
            }
            80..=85 => Fault::AgentLag { member, lag_ms: rng.range(5, 120) * 1000, for_ms: long(&mut rng) },
            86..=89 => Fault::Restart,
            90..=96 => Fault::Kill { step: rng.range(1, 12) as u32, restart_ms: rng.range(0, 10) * 1000 },
            _ if spec.settings.ha => Fault::LeaderChange,
            _ => Fault::Restart,
        };
        out.push(Scheduled { at_ms, fault });
    }
    // A world with a rollout (its own stream): template changes, each followed by a lease
    // move (or a restart without `[ha]`) within its canary's gate or its wave's.
    if let Some(r) = &spec.rollout {
        let mut rng = Rng(spec.seed ^ 0x2011_0a7e_fa17);
        for _ in 0..rng.range(1, 3) {
            let at_ms = rng.range(start, end) / 1000 * 1000;
            let workload = rng.below(w as u64) as usize;
            out.push(Scheduled { at_ms, fault: Fault::Image { workload } });
            let after = rng.range(DEBOUNCE_AND_A_PASS_MS, 2 * r.min_success_ms + 30_000) / 1000 * 1000;
            let fault = if spec.settings.ha { Fault::LeaderChange } else { Fault::Restart };
            out.push(Scheduled { at_ms: at_ms + after, fault });
        }
    }
    out.sort_by_key(|s| s.at_ms);
    out
}

/// Time from a template edit to its first publish, at most (the watch's debounce, a pass).
const DEBOUNCE_AND_A_PASS_MS: u64 = 2_000;
