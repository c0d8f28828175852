//! A simulated member and its GitOps agent: the member's nodes and pods (a
//! [`FleetCluster`], changed only through the simulator's agent functions,
//! [`crate::testbed::simulate::apply`]), what fedsched's poll of it answers (its objects
//! through the poller's own decoding, or the error of an outage), and the agent that applies
//! the member's output directory after its lag.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::faults::Cut;
use super::spec::Member;
use crate::members::live::{LiveData, PollError, live_data};
use crate::testbed::simulate::apply::{self, Agent, ApplyReport, Desired};
use crate::testbed::simulate::fleet::FleetCluster;
use crate::testbed::simulate::repo::observe;

/// One member of the world.
pub struct Sim {
    pub fleet: FleetCluster,
    pub agent: Agent,
    /// The agent's lag when no fault changes it.
    pub base_lag_ms: u64,
    pub lag_ms: u64,
    /// Outages in force (nested faults), and the kind of the last one.
    pub cuts: u32,
    pub cut: Cut,
    /// Outages that also cut the agent off.
    pub agent_cuts: u32,
    /// Outages that took the member down (its nodes NotReady).
    pub dead: u32,
    /// Nodes made NotReady by faults (nested): node index → count.
    pub node_faults: BTreeMap<usize, u32>,
    /// When the agent next applies the directory (None: nothing new to apply).
    pub due: Option<u64>,
    /// Digest of the directory the agent last applied.
    pub applied: Option<u64>,
    /// What that directory asked for (kept: the directory is read again only when it changed).
    pub desired: Arc<Desired>,
    /// Pod owners (`namespace/name`) whose pods crash in a loop here.
    pub crashing: BTreeSet<String>,
    /// Ready pods per pod owner.
    pub ready: BTreeMap<String, usize>,
    /// Bumped whenever nodes or pods change.
    pub version: u64,
    /// The last observation and the version it was made of.
    observed: Option<(u64, LiveData)>,
}

impl Sim {
    /// A member with the spec's nodes and no pods.
    pub fn new(m: &Member) -> Sim {
        let ms = Duration::from_millis;
        Sim {
            fleet: FleetCluster {
                name: m.name.clone(),
                cluster: m.cluster.clone(),
                nodes: m.nodes.clone(),
                pods: Vec::new(),
                workloads: Default::default(),
            },
            agent: Agent { ready_after: ms(m.ready_ms), start_after: ms(m.start_ms) },
            base_lag_ms: m.lag_ms,
            lag_ms: m.lag_ms,
            cuts: 0,
            cut: Cut::Refused,
            agent_cuts: 0,
            dead: 0,
            node_faults: BTreeMap::new(),
            due: None,
            applied: None,
            desired: Arc::default(),
            crashing: BTreeSet::new(),
            ready: BTreeMap::new(),
            version: 0,
            observed: None,
        }
    }

    /// What a poll of the member at `now_ms` answers.
    pub fn poll(&mut self, now_ms: u64, timeout: Duration) -> Result<LiveData, PollError> {
        if self.cuts > 0 {
            return Err(match self.cut {
                Cut::Refused | Cut::Dead => {
                    PollError::Transport { what: "nodes", message: "connection refused".into() }
                }
                Cut::Hung => PollError::Deadline(timeout),
                Cut::Forbidden => PollError::Forbidden { status: 403, what: "nodes", message: "forbidden".into() },
            });
        }
        if let Some((version, data)) = &self.observed
            && *version == self.version
        {
            let mut data = data.clone();
            data.poll.at_ms = now_ms;
            return Ok(data);
        }
        let obs = observe(&self.fleet).map_err(|e| PollError::Decode { what: "pods", message: e.to_string() })?;
        let data = live_data(obs, Duration::ZERO, 1, now_ms);
        self.observed = Some((self.version, data.clone()));
        Ok(data)
    }

    /// Whether a poll now would hang until the poll's deadline.
    pub fn hangs(&self) -> bool {
        self.cuts > 0 && self.cut == Cut::Hung
    }

    /// Something changed in the member's objects.
    pub fn changed(&mut self) {
        self.version += 1;
        self.ready.clear();
        for p in &self.fleet.pods {
            let ready = p
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            if ready {
                let ns = p.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
                let owner = p.pointer("/metadata/ownerReferences/0/name").and_then(Value::as_str).unwrap_or("");
                *self.ready.entry(format!("{ns}/{owner}")).or_insert(0) += 1;
            }
        }
    }

    /// Marks the crashing owners' pods (new pods of a crashing owner crash too).
    fn crash(&mut self, now_ms: u64) {
        for owner in &self.crashing {
            apply::set_crashing(&mut self.fleet, owner, true, now_ms);
        }
    }

    /// The agent applies `desired` (what its directory asks for now).
    pub fn apply(&mut self, desired: Arc<Desired>, digest: u64, now_ms: u64) -> ApplyReport {
        let report = apply::apply_desired(&mut self.fleet, &desired, &self.agent, now_ms);
        self.desired = desired;
        self.applied = Some(digest);
        self.crash(now_ms);
        self.changed();
        report
    }

    /// Binds pending pods again (after the member gained room).
    pub fn rebind(&mut self, now_ms: u64) {
        let desired = Arc::clone(&self.desired);
        apply::apply_desired(&mut self.fleet, &desired, &self.agent, now_ms);
        self.crash(now_ms);
        self.changed();
    }

    /// Pods whose start or Ready time came.
    pub fn promote(&mut self, now_ms: u64) {
        if apply::promote(&mut self.fleet, now_ms) > 0 {
            self.crash(now_ms);
            self.changed();
        }
    }

    /// When a pod next starts or turns Ready.
    pub fn next_promotion(&self) -> Option<u64> {
        apply::next_promotion(&self.fleet)
    }

    /// A pod owner starts or stops crashing here.
    pub fn set_crashing(&mut self, owner: String, on: bool, now_ms: u64) {
        apply::set_crashing(&mut self.fleet, &owner, on, now_ms);
        if on {
            self.crashing.insert(owner);
        } else {
            self.crashing.remove(&owner);
        }
        self.changed();
    }

    /// The name of node `i` (modulo the node count).
    fn node_name(&self, i: usize) -> Option<String> {
        let n = self.fleet.nodes.len();
        (n > 0).then(|| self.fleet.nodes[i % n]["metadata"]["name"].as_str().unwrap_or("").to_string())
    }

    /// A fault makes node `i` NotReady (`on`) or ends (nested faults: Ready again when the
    /// last one ends).
    pub fn node_fault(&mut self, i: usize, on: bool, now_ms: u64) {
        let n = self.fleet.nodes.len().max(1);
        let count = self.node_faults.entry(i % n).or_insert(0);
        let was = *count > 0;
        *count = if on { *count + 1 } else { count.saturating_sub(1) };
        let now_faulty = *count > 0 || self.dead > 0;
        if was != now_faulty
            && let Some(name) = self.node_name(i)
        {
            apply::set_node_ready(&mut self.fleet, &name, !now_faulty, now_ms);
            if !now_faulty {
                self.rebind(now_ms);
            }
            self.changed();
        }
    }

    /// The member goes down (`on`: every node NotReady) or comes back.
    pub fn set_dead(&mut self, on: bool, now_ms: u64) {
        let was = self.dead > 0;
        self.dead = if on { self.dead + 1 } else { self.dead.saturating_sub(1) };
        if was == (self.dead > 0) {
            return;
        }
        let names: Vec<(usize, String)> =
            (0..self.fleet.nodes.len()).filter_map(|i| Some((i, self.node_name(i)?))).collect();
        for (i, name) in names {
            let faulty = self.dead > 0 || self.node_faults.get(&i).is_some_and(|c| *c > 0);
            apply::set_node_ready(&mut self.fleet, &name, !faulty, now_ms);
        }
        if self.dead == 0 {
            self.rebind(now_ms);
        }
        self.changed();
    }

    /// Node `i`'s allocatable CPU and memory become `percent` % of what they are.
    pub fn capacity(&mut self, i: usize, percent: u32, now_ms: u64) {
        let Some(name) = self.node_name(i) else { return };
        let Some(node) = self.fleet.nodes.iter().find(|n| n["metadata"]["name"] == name.as_str()) else { return };
        let alloc = crate::model::ResourceList::from_json(node.pointer("/status/allocatable")).unwrap_or_default();
        let scaled = |r: &str| alloc.get(r).saturating_mul(i64::from(percent)) / 100;
        let amounts = json!({"cpu": format!("{}m", scaled("cpu")), "memory": format!("{}", scaled("memory") / 1000)});
        let Some(amounts) = amounts.as_object() else { return };
        apply::set_node_allocatable(&mut self.fleet, &name, amounts, &self.agent, now_ms);
        self.crash(now_ms);
        self.changed();
    }

    /// The member gets one more node, a copy of its first.
    pub fn add_node(&mut self, now_ms: u64) {
        let Some(first) = self.fleet.nodes.first().cloned() else { return };
        let mut node = first;
        let name = format!("{}-node-x{:03}", self.fleet.name, self.fleet.nodes.len());
        node["metadata"]["name"] = json!(name);
        node["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
        if let Some(cs) = node.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
            cs.retain(|c| c["type"] != "Ready");
            cs.push(json!({"type": "Ready", "status": if self.dead > 0 { "Unknown" } else { "True" }, "reason": "KubeletReady"}));
        }
        self.fleet.nodes.push(node);
        crate::testbed::simulate::fleet::sort_objects(&mut self.fleet.nodes);
        self.rebind(now_ms);
    }
}
