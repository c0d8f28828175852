//! High availability: several fedsched instances, one leader elected on a
//! `coordination.k8s.io/v1` Lease of a host cluster (`[ha]`), with client-go's semantics
//! ([`election`]). The leader publishes; the others poll and decide in shadow.
//!
//! - [`election`]: the state machine (`tryAcquireOrRenew`, release) over a [`LeaseApi`],
//!   with the clock passed in.
//! - [`KubeLeases`]: that API on `kube`'s `Api<Lease>` (the host client is built like a
//!   member's: [`crate::members::live::host_client`]).
//! - [`run`]: the election task: attempts scheduled and bounded by the elector
//!   ([`Elector::next_attempt`], [`Elector::attempt_bound`]: never blind after a pause); a
//!   change of role is sent to the daemon loop.
//! - [`Handle`]: what the daemon shares with the task: the role, the holder, the transitions,
//!   and the fence ([`Handle::fence`]): "is the lease ours, with its renewals on time?",
//!   read on the monotonic clock immediately before every write that publishes, and answering
//!   the renew deadline by which that write must be over (git mode kills a push at it).
//!
//! Imports `config`, `members` (the client) and `util` only.
//!
//! # In detail
//!
//! High availability (issue 18): `election.rs` is client-go's leader election (`tryAcquireOrRenew`,
//! release on shutdown) as a state machine over a `LeaseApi` trait with the monotonic clock passed
//! in, and the schedule of attempts (`attempt_bound`, `next_attempt`: never a deadline that passed,
//! so never blind after a pause); unit tests drive it with an in-memory API and a manual clock, and
//! `election/sim.rs` with three candidates, a host API with latencies and seeded kills, pauses and
//! outages (the invariants over 256 seeds); `mod.rs` has `KubeLeases` (that trait on `kube`'s
//! `Api<Lease>`), the election task `run` and the `Handle` the daemon shares with it: role, holder,
//! transitions, terms, and `fence()` — the renew deadline, only while the lease is ours with at
//! least a `retry_period` left and this term's takeover adopted the published state. The daemon
//! hands `fence` to its `Reconciler` (`Reconciler::with_fence`): the pass asks it before the
//! publish, git mode before the commit and each push attempt (each killed at the deadline; the
//! remote's fencing token `refs/fedsched/leader` moves with every push, so no former leader's push
//! lands after a takeover's claim; a push rejected because the remote moved reopens the takeover,
//! `Handle::readopt`), and a closed fence ends the pass there as `ReconcileError::Fenced` (a shadow
//! pass: decided, nothing written or recorded, the reconciler's cache kept). On a new term the loop
//! first runs the takeover (`Daemon::take_over_if_due`: git mode's
//! `publish::git::sync_from_remote`, then `reconcile::adopt_published`, which writes the summary's
//! claims, targets, files and affinity terms into the store as previous placements, each with a
//! history record of trigger `takeover` for the replays of later passes, then a new
//! `Reconciler`), then opens the fence and runs a pass.

pub mod election;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use tokio::sync::{mpsc, watch};

pub use election::{ApiError, Attempt, Elector, LeaseApi, Timing};

use crate::config::{ClusterAccess, HaSection};

/// What an instance is in the election.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Leader,
    Standby,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::Standby => "standby",
        }
    }
}

/// The election as the daemon, its status and its metrics see it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HaStatus {
    pub role: Role,
    /// This instance's identity.
    pub identity: String,
    /// The holder of the lease as last seen (`None`: not seen yet, or released).
    pub holder: Option<String>,
    /// `leaseTransitions` as last seen.
    pub transitions: i32,
}

/// Shared between the election task and the daemon.
#[derive(Debug)]
pub struct Handle {
    state: Mutex<Shared>,
    /// `[ha] retry_period`: the least time before the renew deadline for a write to start.
    retry_period: Duration,
}

#[derive(Debug)]
struct Shared {
    status: HaStatus,
    /// Until when our leadership holds (monotonic).
    valid_until: Option<Instant>,
    /// Terms of leadership begun (each standby → leader change starts one).
    term: u64,
    /// The term whose takeover the daemon finished (adopted the published state): the fence
    /// opens only then, so no pass publishes from placements that were not adopted.
    adopted: u64,
}

impl Handle {
    pub fn new(identity: String, timing: Timing) -> Arc<Handle> {
        Arc::new(Handle {
            retry_period: timing.retry_period,
            state: Mutex::new(Shared {
                status: HaStatus { role: Role::Standby, identity, holder: None, transitions: 0 },
                valid_until: None,
                term: 0,
                adopted: 0,
            }),
        })
    }

    /// The election's state now. The role is `leader` only while the fence holds.
    pub fn status(&self) -> HaStatus {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut status = s.status.clone();
        if s.valid_until.is_none_or(|until| Instant::now() >= until) {
            status.role = Role::Standby;
        }
        status
    }

    /// The current term of leadership (see [`Handle::adopted`]).
    pub fn term(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).term
    }

    /// The daemon adopted the published state for `term`: the fence may open.
    pub fn adopted(&self, term: u64) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.term == term {
            s.adopted = term;
        }
    }

    /// Whether the lease is held but the takeover of this term is not done yet.
    pub fn takeover_due(&self) -> Option<u64> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let leading = s.valid_until.is_some_and(|until| Instant::now() < until);
        (leading && s.adopted != s.term).then_some(s.term)
    }

    /// Ok when this instance may start a write that publishes now, with the instant by which
    /// that write must be over (its renew deadline): it holds the lease, the takeover of this
    /// term adopted the published state, and its renewals are on time — the renew deadline is
    /// at least one `retry_period` away (a leader renews every retry period, so less means its
    /// renewals are failing, and a write started now could outlive its authority). Otherwise
    /// why not.
    pub fn fence(&self) -> Result<Instant, String> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let until = self.deadline(&s)?;
        if s.adopted != s.term {
            return Err("leader, but the takeover has not adopted the published state yet".to_string());
        }
        Ok(until)
    }

    /// [`Handle::fence`] for the takeover's own writes (git mode's claim of the remote): the
    /// lease held with its renewals on time, before the adoption is done.
    pub fn takeover_fence(&self) -> Result<Instant, String> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.deadline(&s)
    }

    fn deadline(&self, s: &Shared) -> Result<Instant, String> {
        let now = Instant::now();
        match s.valid_until {
            Some(until) if now + self.retry_period <= until => Ok(until),
            Some(until) if now < until => Err(format!(
                "leader, but its renewals are late: {} ms left before the renew deadline, less than the retry period",
                until.duration_since(now).as_millis()
            )),
            Some(_) => Err(format!(
                "not the leader: the lease {} could not be renewed before its renew deadline",
                s.status.identity
            )),
            None => Err(match &s.status.holder {
                Some(h) => format!("standby: the lease is held by {h}"),
                None => "standby: the lease is not held by this instance".to_string(),
            }),
        }
    }

    /// The daemon could not publish on what it adopted (git mode: the remote moved under it):
    /// the fence closes until the takeover of this term is done again ([`Handle::takeover_due`]).
    pub fn readopt(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.term > 0 && s.adopted == s.term {
            s.adopted = s.term - 1;
        }
    }

    fn update(&self, elector: &Elector, base: Instant) -> Role {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let was_leading = s.valid_until.is_some_and(|until| Instant::now() < until);
        s.valid_until = elector.valid_until().map(|d| base + d);
        s.status.holder = elector.holder().map(str::to_string);
        s.status.transitions = elector.transitions();
        s.status.role = if elector.is_leader(base.elapsed()) { Role::Leader } else { Role::Standby };
        if s.status.role == Role::Leader && !was_leading {
            s.term += 1;
        }
        s.status.role
    }
}

/// [`LeaseApi`] on `kube`'s `Api<Lease>` for one named Lease.
pub struct KubeLeases {
    api: Api<Lease>,
    name: String,
}

impl KubeLeases {
    /// The host cluster's client (kubeconfig, or server + token file + CA, like a member's),
    /// every request bounded by `timeout`.
    pub async fn connect(ha: &HaSection, timeout: Duration) -> Result<KubeLeases, String> {
        let access = ClusterAccess {
            kubeconfig: ha.kubeconfig.clone(),
            context: ha.context.clone(),
            token_file: ha.token_file.clone(),
            ca_file: ha.ca_file.clone(),
            age_recipient: None,
        };
        let client = crate::members::live::host_client(&access, ha.server.as_deref(), timeout)
            .await
            .map_err(|e| format!("[ha] host cluster: {e}"))?;
        Ok(KubeLeases { api: Api::namespaced(client, &ha.lease_namespace), name: ha.lease_name.clone() })
    }
}

fn api_error(e: kube::Error) -> ApiError {
    match &e {
        kube::Error::Api(s) if s.code == 409 => ApiError::Conflict(s.message.clone()),
        _ => ApiError::Other(crate::members::live::chain(&e)),
    }
}

impl LeaseApi for KubeLeases {
    async fn get(&self) -> Result<Option<Lease>, ApiError> {
        self.api.get_opt(&self.name).await.map_err(api_error)
    }

    async fn create(&self, lease: &Lease) -> Result<Lease, ApiError> {
        self.api.create(&PostParams::default(), lease).await.map_err(api_error)
    }

    async fn replace(&self, lease: &Lease) -> Result<Lease, ApiError> {
        self.api.replace(&self.name, &PostParams::default(), lease).await.map_err(api_error)
    }
}

/// The timing of `[ha]`.
pub fn timing(ha: &HaSection) -> Timing {
    Timing { lease_duration: ha.lease_duration, renew_deadline: ha.renew_deadline, retry_period: ha.retry_period }
}

/// The election task: tries to acquire or renew every retry period until `stop` turns true,
/// then releases the lease if it holds it. Every change of role is sent on `roles`.
pub async fn run(
    mut elector: Elector,
    api: impl LeaseApi,
    handle: Arc<Handle>,
    roles: mpsc::UnboundedSender<Role>,
    mut stop: watch::Receiver<bool>,
) {
    let base = Instant::now();
    let clock = move || base.elapsed();
    let mut role = Role::Standby;
    let mut holder: Option<String> = None;
    let mut last_failure: Option<String> = None;
    loop {
        let started = clock();
        let bound = elector.attempt_bound(started);
        let attempt = tokio::select! {
            a = tokio::time::timeout(bound, elector.try_acquire_or_renew(&api, &clock, crate::util::clock::now_ms())) => {
                a.unwrap_or_else(|_| Attempt::Failed(ApiError::Other(format!("no answer within {bound:?}"))))
            }
            _ = stop.changed() => break,
        };
        match &attempt {
            Attempt::Failed(e) => {
                let text = e.to_string();
                if last_failure.as_deref() != Some(text.as_str()) {
                    tracing::warn!(error = %text, identity = elector.identity(), "lease: acquire or renew failed");
                }
                last_failure = Some(text);
            }
            _ => last_failure = None,
        }
        if elector.holder() != holder.as_deref() {
            holder = elector.holder().map(str::to_string);
            tracing::info!(
                identity = elector.identity(),
                holder = holder.as_deref().unwrap_or(""),
                "lease holder observed"
            );
        }
        report_role(&mut role, handle.update(&elector, base), &elector, &roles);
        // Due a retry period after this attempt's start (at once if that passed while the
        // process was paused or the attempt was slow), at the renew deadline at the latest.
        let due = base + elector.next_attempt(started, clock(), jitter());
        tokio::select! {
            _ = tokio::time::sleep_until(due.into()) => {}
            _ = stop.changed() => break,
        }
        // A leader woken at its deadline reports the loss before its next attempt.
        report_role(&mut role, handle.update(&elector, base), &elector, &roles);
    }
    let released = elector.release(&api, base.elapsed(), crate::util::clock::now_ms()).await;
    handle.update(&elector, base);
    if released {
        tracing::info!(identity = elector.identity(), "lease released");
    }
    if role == Role::Leader {
        let _ = roles.send(Role::Standby);
    }
}

/// Logs and sends a change of role.
fn report_role(role: &mut Role, next: Role, elector: &Elector, roles: &mpsc::UnboundedSender<Role>) {
    if next == *role {
        return;
    }
    match next {
        Role::Leader => tracing::info!(
            identity = elector.identity(),
            transitions = elector.transitions(),
            "lease acquired: this instance is the leader"
        ),
        Role::Standby => tracing::warn!(
            identity = elector.identity(),
            holder = elector.holder().unwrap_or(""),
            "leadership lost: publishing stops"
        ),
    }
    *role = next;
    let _ = roles.send(next);
}

/// A number in [0, 1) that differs between instances and attempts (spreads the candidates'
/// attempts as client-go's jitter does; not for anything that needs randomness).
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let x = crate::util::hash::fnv1a64(format!("{nanos}/{}", std::process::id()).as_bytes());
    (x % 1_000_000) as f64 / 1_000_000.0
}
