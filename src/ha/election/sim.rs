//! A deterministic world for the election: three candidates driven exactly as the election
//! task drives them ([`Elector::attempt_bound`], [`Elector::next_attempt`], a write fenced as
//! [`crate::ha::Handle::fence`] fences it), one host API with latencies, a manual clock, and a
//! seeded schedule of kills, pauses (SIGSTOP: nothing of the process runs, the requests it sent
//! are still served) and host-API outages (errors, hung until the outage ends, never answered,
//! or answered seconds late), for all candidates or for one's path.
//!
//! Invariants, checked against the recorded timeline of every seed:
//! - every write of a candidate falls where the API's lease is that candidate's, from its start
//!   to its end (so never two publishers, and never a write after the lease was lost);
//! - after a fault ends, some candidate leads within `lease_duration + 2 × retry_period`;
//! - a candidate resumed after a pause reads the lease within one `retry_period`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;

use super::{ApiError, Attempt, Elector, LeaseApi, Timing};

const T: Timing = Timing {
    lease_duration: Duration::from_secs(15),
    renew_deadline: Duration::from_secs(10),
    retry_period: Duration::from_secs(2),
};
/// Longest one-way latency of a request (ms).
const MAX_LATENCY: u64 = 150;
const NODES: usize = 3;

/// xorshift64*: the same schedule for the same seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outage {
    /// Every request fails at once (connection refused, 5xx).
    Errors,
    /// Requests wait and are served when the outage ends (the API server SIGSTOPped).
    Hung,
    /// Requests are never answered (a connection that went dead).
    Blackhole,
    /// Requests sent now are served 2–9 s later (a slow host API).
    Slow,
}

#[derive(Debug, Clone, Copy)]
enum Fault {
    Kill(usize),
    Pause(usize),
    /// On every path (`None`) or one candidate's.
    Outage(Option<usize>, Outage),
}

#[derive(Debug, Clone, Copy)]
struct Scheduled {
    fault: Fault,
    start: u64,
    end: u64,
}

enum Op {
    Get,
    Create(Lease),
    Replace(Lease),
}

type Reply = Result<Option<Lease>, ApiError>;

struct Request {
    node: usize,
    op: Op,
    serve_at: u64,
    /// Waiting for a hung outage to end.
    held: bool,
    reply: Option<(u64, Reply)>,
    /// Never answered.
    lost: bool,
}

struct World {
    now: u64,
    lease: Option<Lease>,
    rv: u64,
    /// (served at, holder) of every write.
    writes: Vec<(u64, String)>,
    requests: BTreeMap<u64, Request>,
    next_id: u64,
    latency: Rng,
    /// Outages in force: (scope, mode, end).
    outages: Vec<(Option<usize>, Outage, u64)>,
    /// (node, at) of every read answered to a running candidate.
    reads: Vec<(usize, u64)>,
}

impl World {
    fn outage_for(&self, node: usize) -> Option<(Outage, u64)> {
        self.outages.iter().find(|(scope, _, _)| scope.is_none_or(|n| n == node)).map(|(_, m, end)| (*m, *end))
    }

    fn serve(&mut self, id: u64) {
        let now = self.now;
        let Some(req) = self.requests.get(&id) else { return };
        let node = req.node;
        match self.outage_for(node) {
            Some((Outage::Errors, _)) => {
                let back = now + self.latency.range(1, MAX_LATENCY);
                let r = self.requests.get_mut(&id).expect("request");
                r.reply = Some((back, Err(ApiError::Other("connection refused".into()))));
                return;
            }
            Some((Outage::Hung, end)) => {
                let r = self.requests.get_mut(&id).expect("request");
                r.held = true;
                r.serve_at = end;
                return;
            }
            Some((Outage::Blackhole, _)) => {
                self.requests.get_mut(&id).expect("request").lost = true;
                return;
            }
            Some((Outage::Slow, _)) | None => {}
        }
        let op = std::mem::replace(&mut self.requests.get_mut(&id).expect("request").op, Op::Get);
        let reply = match op {
            Op::Get => Ok(self.lease.clone()),
            Op::Create(lease) => match self.lease {
                Some(_) => Err(ApiError::Conflict("exists".into())),
                None => Ok(Some(self.store(lease))),
            },
            Op::Replace(lease) => {
                let current = self.lease.as_ref().and_then(|l| l.metadata.resource_version.clone());
                if lease.metadata.resource_version != current {
                    Err(ApiError::Conflict("modified".into()))
                } else {
                    Ok(Some(self.store(lease)))
                }
            }
        };
        let back = now + self.latency.range(1, MAX_LATENCY);
        let r = self.requests.get_mut(&id).expect("request");
        r.held = false;
        r.reply = Some((back, reply));
    }

    fn store(&mut self, lease: Lease) -> Lease {
        self.rv += 1;
        let mut l = lease;
        l.metadata.resource_version = Some(self.rv.to_string());
        let holder = l.spec.as_ref().and_then(|s| s.holder_identity.clone()).unwrap_or_default();
        self.writes.push((self.now, holder));
        self.lease = Some(l.clone());
        l
    }

    /// The holder of the lease at `at` (after the writes served then).
    fn holder_at(&self, at: u64) -> Option<&str> {
        self.writes.iter().take_while(|(t, _)| *t <= at).last().map(|(_, h)| h.as_str())
    }
}

/// One candidate's path to the API.
struct Path {
    world: Arc<Mutex<World>>,
    node: usize,
}

/// A request in flight: sent on its first poll, ready once its answer arrived.
struct Call {
    world: Arc<Mutex<World>>,
    node: usize,
    op: Option<Op>,
    id: Option<u64>,
}

impl Future for Call {
    type Output = Reply;
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Reply> {
        let this = &mut *self;
        let mut w = this.world.lock().expect("world");
        let Some(id) = this.id else {
            let slow = matches!(w.outage_for(this.node), Some((Outage::Slow, _)));
            let serve_at = w.now + if slow { w.latency.range(2_000, 9_000) } else { w.latency.range(1, MAX_LATENCY) };
            let id = w.next_id;
            w.next_id += 1;
            let op = this.op.take().expect("op");
            w.requests.insert(id, Request { node: this.node, op, serve_at, held: false, reply: None, lost: false });
            this.id = Some(id);
            return Poll::Pending;
        };
        let now = w.now;
        let ready = w.requests.get(&id).is_some_and(|r| r.reply.as_ref().is_some_and(|(at, _)| *at <= now));
        if !ready {
            return Poll::Pending;
        }
        let r = w.requests.remove(&id).expect("request");
        let reply = r.reply.expect("reply").1;
        if matches!(r.op, Op::Get) && reply.is_ok() {
            w.reads.push((this.node, now));
        }
        Poll::Ready(reply)
    }
}

impl Path {
    fn call(&self, op: Op) -> Call {
        Call { world: Arc::clone(&self.world), node: self.node, op: Some(op), id: None }
    }
}

impl LeaseApi for Path {
    fn get(&self) -> impl Future<Output = Result<Option<Lease>, ApiError>> + Send {
        self.call(Op::Get)
    }
    async fn create(&self, lease: &Lease) -> Result<Lease, ApiError> {
        self.call(Op::Create(lease.clone())).await.map(|l| l.unwrap_or_default())
    }
    async fn replace(&self, lease: &Lease) -> Result<Lease, ApiError> {
        self.call(Op::Replace(lease.clone())).await.map(|l| l.unwrap_or_default())
    }
}

type AttemptFuture = Pin<Box<dyn Future<Output = Attempt>>>;

enum Phase {
    Sleeping { until: u64 },
    Attempting { fut: AttemptFuture, started: Duration, deadline: u64 },
}

struct Node {
    elector: Rc<RefCell<Elector>>,
    /// World time at which this process's monotonic clock reads zero.
    base: u64,
    phase: Phase,
    alive: bool,
    paused: bool,
    next_write: u64,
    /// The elector's `valid_until` as of its last attempt (what the fence reads).
    valid_until: Option<Duration>,
}

impl Node {
    fn start(name: &str, now: u64, rng: &mut Rng) -> Node {
        let elector = Elector::new(name.into(), "ha".into(), "fedsched".into(), T);
        Node {
            elector: Rc::new(RefCell::new(elector)),
            base: now.saturating_sub(rng.below(1_000_000)),
            phase: Phase::Sleeping { until: now },
            alive: true,
            paused: false,
            next_write: now,
            valid_until: None,
        }
    }
    fn mono(&self, now: u64) -> Duration {
        Duration::from_millis(now - self.base)
    }
}

/// A write: (candidate, start, end).
type Write = (usize, u64, u64);

struct Run {
    world: Arc<Mutex<World>>,
    writes: Vec<Write>,
    /// (candidate, at) whenever a candidate is the leader after an attempt.
    leading: Vec<(usize, u64)>,
    faults: Vec<Scheduled>,
    end: u64,
}

fn noop_context() -> Context<'static> {
    Context::from_waker(std::task::Waker::noop())
}

/// Runs one seeded schedule over `nodes` candidates for `end` ms of world time.
fn simulate(seed: u64, nodes: usize, end: u64) -> Run {
    let mut rng = Rng::new(seed);
    let world = Arc::new(Mutex::new(World {
        now: 0,
        lease: None,
        rv: 0,
        writes: Vec::new(),
        requests: BTreeMap::new(),
        next_id: 0,
        latency: Rng::new(seed ^ 0xA5A5),
        outages: Vec::new(),
        reads: Vec::new(),
    }));
    let faults = schedule(&mut rng, nodes, end);
    let names: Vec<String> = (0..nodes).map(|i| format!("n{i}")).collect();
    let mut all: Vec<Node> = names.iter().map(|n| Node::start(n, 0, &mut rng)).collect();
    let mut writes = Vec::new();
    let mut leading = Vec::new();
    let mut now = 0;
    let mut cx = noop_context();
    loop {
        world.lock().expect("world").now = now;
        // Faults that start or end now.
        for f in &faults {
            if f.start == now {
                match f.fault {
                    Fault::Kill(n) => {
                        all[n].alive = false;
                        all[n].phase = Phase::Sleeping { until: u64::MAX };
                    }
                    Fault::Pause(n) => all[n].paused = true,
                    Fault::Outage(scope, mode) => world.lock().expect("world").outages.push((scope, mode, f.end)),
                }
            }
            if f.end == now {
                match f.fault {
                    Fault::Kill(n) => all[n] = Node::start(&names[n], now, &mut rng),
                    Fault::Pause(n) => all[n].paused = false,
                    Fault::Outage(scope, mode) => {
                        let mut w = world.lock().expect("world");
                        w.outages.retain(|o| !(o.0 == scope && o.1 == mode && o.2 == f.end));
                        // A hung API answers what waited, in order.
                        for r in w.requests.values_mut().filter(|r| r.held) {
                            r.serve_at = now;
                        }
                    }
                }
            }
        }
        // The API serves what is due, in the order it arrived (a request dropped by its
        // sender, timed out or killed, is served all the same). A hung one waits for its
        // outage's end.
        {
            let mut w = world.lock().expect("world");
            let due: Vec<u64> = w
                .requests
                .iter()
                .filter(|(_, r)| r.reply.is_none() && !r.lost && r.serve_at <= now)
                .map(|(id, _)| *id)
                .collect();
            for id in due {
                w.serve(id);
            }
        }
        // Every running candidate does what is due, as the election task would.
        for (i, node) in all.iter_mut().enumerate() {
            if !node.alive || node.paused {
                continue;
            }
            let mono = node.mono(now);
            if let Phase::Attempting { fut, started, deadline } = &mut node.phase {
                // As tokio's timeout: the attempt is polled first, then its deadline.
                let done = fut.as_mut().poll(&mut cx).is_ready() || now >= *deadline;
                if done {
                    let started = *started;
                    // Dropping the attempt ends its hold on the elector.
                    node.phase = Phase::Sleeping { until: u64::MAX };
                    let e = node.elector.borrow();
                    // What the task hands the fence (Handle::update).
                    node.valid_until = e.valid_until();
                    if e.is_leader(mono) {
                        leading.push((i, now));
                    }
                    let next = e.next_attempt(started, mono, rng.unit());
                    drop(e);
                    node.phase = Phase::Sleeping { until: node.base + next.as_millis() as u64 };
                }
            }
            if let Phase::Sleeping { until } = node.phase
                && until <= now
            {
                let started = node.mono(now);
                let bound = node.elector.borrow().attempt_bound(started);
                let elector = Rc::clone(&node.elector);
                let path = Path { world: Arc::clone(&world), node: i };
                let w = Arc::clone(&world);
                let base = node.base;
                // The attempt holds the elector as the task's `&mut` does; nothing else borrows
                // it while the attempt is in flight (the fence reads `valid_until` kept aside).
                #[allow(clippy::await_holding_refcell_ref)]
                let mut fut: AttemptFuture = Box::pin(async move {
                    let clock = move || Duration::from_millis(w.lock().expect("world").now - base);
                    let mut e = elector.borrow_mut();
                    e.try_acquire_or_renew(&path, &clock, 0).await
                });
                let first = fut.as_mut().poll(&mut cx);
                assert!(first.is_pending(), "an attempt answers no sooner than its request's latency");
                node.phase = Phase::Attempting { fut, started, deadline: now + bound.as_millis() as u64 };
            }
            // A write (publish, commit, push), fenced as Handle::fence fences it: only with a
            // retry period left before the renew deadline, and over by that deadline.
            if node.next_write <= now {
                node.next_write = now + rng.range(50, 700);
                if let Some(until) = node.valid_until
                    && mono + T.retry_period <= until
                {
                    let deadline = node.base + until.as_millis() as u64;
                    let end = (now + rng.range(0, 12_000)).min(deadline);
                    writes.push((i, now, end));
                }
            }
        }
        // The next instant something is due.
        let mut next = u64::MAX;
        {
            let w = world.lock().expect("world");
            for r in w.requests.values() {
                if r.lost || (r.held && r.reply.is_none()) {
                    continue;
                }
                match &r.reply {
                    Some((at, _)) if *at > now => next = next.min(*at),
                    None if r.serve_at > now => next = next.min(r.serve_at),
                    _ => {}
                }
            }
        }
        for f in &faults {
            for t in [f.start, f.end] {
                if t > now {
                    next = next.min(t);
                }
            }
        }
        for node in &all {
            if !node.alive {
                continue;
            }
            match &node.phase {
                Phase::Sleeping { until } if *until > now => next = next.min(*until),
                Phase::Attempting { deadline, .. } if *deadline > now => next = next.min(*deadline),
                _ => {}
            }
            if node.next_write > now {
                next = next.min(node.next_write);
            }
        }
        if next >= end || next == u64::MAX {
            break;
        }
        now = next;
    }
    Run { world, writes, leading, faults, end }
}

const OUTAGES: [Outage; 4] = [Outage::Errors, Outage::Hung, Outage::Blackhole, Outage::Slow];

/// Faults one after another, each starting 0–25 s after the previous one ended, lasting
/// 0.2–40 s (so some shorter than the renew deadline, some longer than the lease).
fn schedule(rng: &mut Rng, nodes: usize, end: u64) -> Vec<Scheduled> {
    let mut out = Vec::new();
    let mut t = rng.range(20_000, 30_000);
    while t < end.saturating_sub(60_000) {
        let n = rng.below(nodes as u64) as usize;
        let fault = match rng.below(6) {
            0 | 1 => Fault::Kill(n),
            2 | 3 => Fault::Pause(n),
            4 => Fault::Outage(None, OUTAGES[rng.below(4) as usize]),
            _ => Fault::Outage(Some(n), OUTAGES[rng.below(4) as usize]),
        };
        let len = match rng.below(3) {
            0 => rng.range(200, 9_000),
            1 => rng.range(9_000, 16_000),
            _ => rng.range(16_000, 40_000),
        };
        out.push(Scheduled { fault, start: t, end: t + len });
        t += len + rng.range(0, 25_000);
    }
    out
}

/// The invariants of one run; `Err` names the first broken one.
fn check(run: &Run) -> Result<(), String> {
    let w = run.world.lock().expect("world");
    let name = |i: usize| format!("n{i}");
    // Writes: the lease is the writer's from start to end.
    for &(i, start, end) in &run.writes {
        if w.holder_at(start) != Some(name(i).as_str()) {
            return Err(format!("n{i} wrote at {start} while the lease was {:?}'s", w.holder_at(start)));
        }
        if let Some((at, h)) = w.writes.iter().find(|(at, h)| *at > start && *at <= end && *h != name(i)) {
            return Err(format!("n{i}'s write [{start}, {end}] outlived its lease: {h:?} took it at {at}"));
        }
    }
    let bound = (T.lease_duration + 2 * T.retry_period).as_millis() as u64;
    let retry = T.retry_period.as_millis() as u64;
    for (k, f) in run.faults.iter().enumerate() {
        let next_start = run.faults.get(k + 1).map_or(run.end, |n| n.start);
        // A leader again within lease + 2 × retry after the fault ends.
        if f.end + bound <= next_start {
            let led = run.leading.iter().any(|(_, at)| *at >= f.end && *at <= f.end + bound);
            if !led {
                return Err(format!("no leader within {bound} ms after {f:?} ended"));
            }
        }
        // A paused candidate reads the lease within one retry period of its resumption (when
        // no request of an earlier outage is still waiting for its answer: a request on a dead
        // connection is given up at its bound, `renew_deadline`).
        let quiet_before =
            k == 0 || run.faults[k - 1].end + (T.renew_deadline.as_millis() as u64) + 2 * MAX_LATENCY <= f.start;
        if let Fault::Pause(n) = f.fault
            && quiet_before
            && f.end + retry + 2 * MAX_LATENCY <= next_start
        {
            let read =
                w.reads.iter().any(|(who, at)| *who == n && *at >= f.end && *at <= f.end + retry + 2 * MAX_LATENCY);
            if !read {
                return Err(format!("n{n} did not read the lease within one retry period after {f:?}"));
            }
        }
    }
    Ok(())
}

#[test]
fn seeded_schedules_of_kills_pauses_and_outages_keep_the_invariants() {
    let seeds: u64 = std::env::var("FEDSCHED_HA_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(256);
    let mut takeovers = 0;
    let mut faults = 0;
    for seed in 0..seeds {
        let run = simulate(seed, NODES, 600_000);
        if let Err(e) = check(&run) {
            panic!("seed {seed}: {e}\nfaults: {:?}", run.faults);
        }
        let w = run.world.lock().expect("world");
        takeovers += w.writes.windows(2).filter(|p| p[0].1 != p[1].1).count();
        faults += run.faults.len();
        assert!(!run.writes.is_empty(), "seed {seed}: nobody ever wrote");
    }
    eprintln!("{seeds} seeds: {faults} faults, {takeovers} changes of holder");
    assert!(takeovers > seeds as usize, "the faults never moved the lease");
}

#[test]
fn a_sole_candidate_paused_past_its_lease_takes_it_back() {
    for seed in 0..100 {
        let run = simulate(seed, 1, 300_000);
        if let Err(e) = check(&run) {
            panic!("seed {seed}: {e}\nfaults: {:?}", run.faults);
        }
    }
}
