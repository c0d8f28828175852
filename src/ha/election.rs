//! client-go's leader election (`k8s.io/client-go/tools/leaderelection`,
//! `tryAcquireOrRenew`) over a [`LeaseApi`], with the clock passed in: the state machine the
//! election task ([`super::run`]) drives and the unit tests drive with a manual clock.
//!
//! One attempt: read the Lease; absent → create it holding it (a 409 means another created it
//! first). Present → if its record changed since the last look, remember it and *when we saw
//! it* (our own monotonic clock: no trust in the other host's clock); if another holds it and
//! that observation is younger than the record's `leaseDurationSeconds`, it is theirs. Else
//! replace it with our record, sending the `resourceVersion` read: a 409 means someone else
//! wrote in between, and we lost this round. Holding it already, we keep `acquireTime` and
//! `leaseTransitions`; taking it over, `leaseTransitions` + 1.
//!
//! Fencing: we are the leader until `renew_deadline` after the *start* of our last successful
//! attempt (before its request was sent, so before any other could have observed it). Another
//! instance can take over no sooner than `lease_duration` after it observed that renewal — the
//! observation is stamped when the read *returned* (client-go's `setObservedRecord`), never
//! earlier, so a slow read cannot age a record — and `lease_duration > renew_deadline`: the old
//! leader's authority ends first, by at least `lease_duration - renew_deadline` (clock *rates*
//! assumed equal, as client-go assumes).
//!
//! Scheduling ([`Elector::attempt_bound`], [`Elector::next_attempt`]), shared by the task and
//! the tests: an attempt is bounded by the time left before our renew deadline while we lead,
//! otherwise by `renew_deadline` (the host client's request timeout) — never by a deadline that
//! has passed, so an instance that was paused (SIGSTOP, a GC stall, a slow host API) is never
//! blind afterwards. The next attempt is due `retry_period` after the *start* of the last one
//! (jittered by up to 20 % while not leading, as client-go's `wait.JitterUntil`), at once when
//! that time passed during a pause or a slow attempt, at our renew deadline at the latest while
//! leading (so the role reported is exact), and at the expiry of another holder's record when
//! that comes first (a takeover is not late by a whole retry period).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

/// A failure of the host cluster's API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 409: another writer won (create of an existing lease, replace of a stale version).
    #[error("conflict: {0}")]
    Conflict(String),
    /// Anything else: transport, timeout, 5xx, 403…
    #[error("{0}")]
    Other(String),
}

/// The Lease operations leader election needs (one named Lease).
pub trait LeaseApi: Send + Sync {
    /// The Lease, `None` when it does not exist.
    fn get(&self) -> impl Future<Output = Result<Option<Lease>, ApiError>> + Send;
    /// Creates it (`Conflict` when it exists).
    fn create(&self, lease: &Lease) -> impl Future<Output = Result<Lease, ApiError>> + Send;
    /// Replaces it, conditional on `metadata.resourceVersion` (`Conflict` when stale).
    fn replace(&self, lease: &Lease) -> impl Future<Output = Result<Lease, ApiError>> + Send;
}

/// client-go's three durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// What one attempt found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// We hold the lease (acquired now or renewed).
    Held,
    /// Another holds it and its lease has not expired (by our observation).
    HeldBy(String),
    /// The API failed or another writer won the race.
    Failed(ApiError),
}

/// A lease record as last seen.
#[derive(Debug, Clone)]
struct Observed {
    spec: LeaseSpec,
    /// Its `resourceVersion`: any write changes it, so a renewal is seen even when its
    /// `renewTime` is the same as the last one's (a wall clock stuck or stepped back).
    version: Option<String>,
    /// When we first saw this record (monotonic; when the read returned).
    at: Duration,
}

/// One candidate's view of the election.
#[derive(Debug, Clone)]
pub struct Elector {
    identity: String,
    namespace: String,
    name: String,
    timing: Timing,
    /// The lease record last seen, and when we saw it change (monotonic).
    observed: Option<Observed>,
    /// Start (monotonic) of our last successful acquire or renew, while the record is ours.
    renewed_at: Option<Duration>,
}

impl Elector {
    pub fn new(identity: String, namespace: String, name: String, timing: Timing) -> Elector {
        Elector { identity, namespace, name, timing, observed: None, renewed_at: None }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether we may act as the leader at `now`: the last record seen is ours and the renew
    /// deadline since our last successful attempt has not passed.
    pub fn is_leader(&self, now: Duration) -> bool {
        self.valid_until().is_some_and(|until| now < until)
    }

    /// Until when (monotonic) our leadership holds, if the record is ours.
    pub fn valid_until(&self) -> Option<Duration> {
        let ours = self.holder() == Some(self.identity.as_str());
        self.renewed_at.filter(|_| ours).map(|t| t + self.timing.renew_deadline)
    }

    /// The holder of the last record seen (`None`: none seen, or nobody holds it).
    pub fn holder(&self) -> Option<&str> {
        self.observed.as_ref().and_then(|o| o.spec.holder_identity.as_deref()).filter(|h| !h.is_empty())
    }

    /// `leaseTransitions` of the last record seen.
    pub fn transitions(&self) -> i32 {
        self.observed.as_ref().and_then(|o| o.spec.lease_transitions).unwrap_or(0)
    }

    /// client-go's `tryAcquireOrRenew`; `clock` reads the monotonic clock (read at the start,
    /// when the read returned and when the write returned), `wall_ms` the wall clock written into
    /// the record (`acquireTime`, `renewTime`: for people, not for the decision).
    pub async fn try_acquire_or_renew(
        &mut self,
        api: &impl LeaseApi,
        clock: &(dyn Fn() -> Duration + Sync),
        wall_ms: u64,
    ) -> Attempt {
        let now = clock();
        let mut record = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(duration_seconds(self.timing.lease_duration)),
            acquire_time: Some(micro_time(wall_ms)),
            renew_time: Some(micro_time(wall_ms)),
            lease_transitions: Some(0),
            ..Default::default()
        };
        let old = match api.get().await {
            Err(e) => return Attempt::Failed(e),
            Ok(None) => {
                let lease = self.lease(record.clone(), None);
                return match api.create(&lease).await {
                    Ok(created) => {
                        self.observed =
                            Some(Observed { spec: record, version: created.metadata.resource_version, at: clock() });
                        self.renewed_at = Some(now);
                        Attempt::Held
                    }
                    Err(e) => Attempt::Failed(e),
                };
            }
            Ok(Some(lease)) => lease,
        };
        let old_spec = old.spec.clone().unwrap_or_default();
        let version = old.metadata.resource_version.clone();
        if self.observed.as_ref().is_none_or(|o| o.spec != old_spec || o.version != version) {
            // Stamped now that the read returned: the record is at least this fresh.
            self.observed = Some(Observed { spec: old_spec.clone(), version, at: clock() });
        }
        let old_holder = old_spec.holder_identity.as_deref().unwrap_or("");
        let ours = old_holder == self.identity;
        if !old_holder.is_empty() && !ours {
            let seen_at = self.observed.as_ref().map_or(now, |o| o.at);
            if seen_at + self.record_duration(&old_spec) > now {
                self.renewed_at = None;
                return Attempt::HeldBy(old_holder.to_string());
            }
        }
        if ours {
            record.acquire_time = old_spec.acquire_time.clone();
            record.lease_transitions = old_spec.lease_transitions;
        } else {
            record.lease_transitions = Some(old_spec.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        let lease = self.lease(record.clone(), old.metadata.resource_version.clone());
        match api.replace(&lease).await {
            Ok(written) => {
                self.observed =
                    Some(Observed { spec: record, version: written.metadata.resource_version, at: clock() });
                self.renewed_at = Some(now);
                Attempt::Held
            }
            Err(e) => Attempt::Failed(e),
        }
    }

    /// How long the attempt starting at `now` may take: while we lead, the time left before our
    /// renew deadline (past it we are no leader, whatever the answer); otherwise
    /// `renew_deadline`. Never a deadline that has passed: after a pause the next attempt has
    /// its full time.
    pub fn attempt_bound(&self, now: Duration) -> Duration {
        match self.valid_until() {
            Some(until) if until > now => until - now,
            _ => self.timing.renew_deadline,
        }
    }

    /// When (monotonic) the next attempt is due, the last one having started at `started`;
    /// `now` is when it ended, `jitter` a number in [0, 1) (spreads the standbys' attempts).
    pub fn next_attempt(&self, started: Duration, now: Duration, jitter: f64) -> Duration {
        let retry = self.timing.retry_period;
        let jitter = jitter.clamp(0.0, 1.0);
        let mut at = match self.valid_until() {
            Some(until) if until > now => (started + retry).min(until),
            _ => started + retry.mul_f64(1.0 + 0.2 * jitter),
        };
        // Another's record that expires (by our observation) before then: try at its expiry.
        // Only once per expiry: an attempt that started after it keeps the usual cadence.
        if let Some(expiry) = self.expires_at()
            && expiry >= started
        {
            at = at.min(expiry + retry.mul_f64(0.2 * jitter)).max(started + retry / 10);
        }
        at.max(now)
    }

    /// When (monotonic) another holder's record expires by our observation: seen at + its
    /// `leaseDurationSeconds`. `None` when we hold it, nobody does or none was seen.
    pub fn expires_at(&self) -> Option<Duration> {
        let Observed { spec, at: seen, .. } = self.observed.as_ref()?;
        let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty())?;
        if holder == self.identity {
            return None;
        }
        Some(*seen + self.record_duration(spec))
    }

    /// A record's `leaseDurationSeconds` (ours when it has none).
    fn record_duration(&self, spec: &LeaseSpec) -> Duration {
        spec.lease_duration_seconds
            .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
            .unwrap_or(self.timing.lease_duration)
    }

    /// client-go's `ReleaseOnCancel`: when we hold the lease, write it back with no holder and
    /// a duration of 1 s, so that a standby takes over at its next attempt instead of after
    /// `lease_duration`. Returns whether the lease was released.
    pub async fn release(&mut self, api: &impl LeaseApi, now: Duration, wall_ms: u64) -> bool {
        if !self.is_leader(now) {
            return false;
        }
        self.renewed_at = None;
        let Ok(Some(old)) = api.get().await else { return false };
        let spec = old.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return false;
        }
        let record = LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            acquire_time: Some(micro_time(wall_ms)),
            renew_time: Some(micro_time(wall_ms)),
            lease_transitions: spec.lease_transitions,
            ..Default::default()
        };
        match api.replace(&self.lease(record.clone(), old.metadata.resource_version.clone())).await {
            Ok(written) => {
                self.observed = Some(Observed { spec: record, version: written.metadata.resource_version, at: now });
                true
            }
            Err(_) => false,
        }
    }

    fn lease(&self, spec: LeaseSpec, resource_version: Option<String>) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                resource_version,
                ..Default::default()
            },
            spec: Some(spec),
        }
    }
}

/// Whole seconds of the lease, rounded up (the field is an integer; never shorter than ours).
fn duration_seconds(d: Duration) -> i32 {
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i32::try_from(s.max(1)).unwrap_or(i32::MAX)
}

fn micro_time(wall_ms: u64) -> MicroTime {
    let ts = k8s_openapi::jiff::Timestamp::from_millisecond(i64::try_from(wall_ms).unwrap_or(i64::MAX))
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    MicroTime(ts)
}

#[cfg(test)]
mod sim;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// An API server's Lease in memory: resource versions, 409s, and a switch to fail.
    #[derive(Default)]
    struct Memory {
        lease: Mutex<Option<Lease>>,
        rv: Mutex<u64>,
        down: Mutex<bool>,
    }

    impl Memory {
        fn check(&self) -> Result<(), ApiError> {
            if *self.down.lock().expect("lock") { Err(ApiError::Other("unreachable".into())) } else { Ok(()) }
        }
        fn stamp(&self, lease: &Lease) -> Lease {
            let mut rv = self.rv.lock().expect("lock");
            *rv += 1;
            let mut l = lease.clone();
            l.metadata.resource_version = Some(rv.to_string());
            l
        }
        fn holder(&self) -> Option<String> {
            self.lease.lock().expect("lock").as_ref().and_then(|l| l.spec.as_ref()?.holder_identity.clone())
        }
    }

    impl LeaseApi for Memory {
        async fn get(&self) -> Result<Option<Lease>, ApiError> {
            self.check()?;
            Ok(self.lease.lock().expect("lock").clone())
        }
        async fn create(&self, lease: &Lease) -> Result<Lease, ApiError> {
            self.check()?;
            let mut cur = self.lease.lock().expect("lock");
            if cur.is_some() {
                return Err(ApiError::Conflict("exists".into()));
            }
            *cur = Some(self.stamp(lease));
            Ok(cur.clone().expect("set"))
        }
        async fn replace(&self, lease: &Lease) -> Result<Lease, ApiError> {
            self.check()?;
            let mut cur = self.lease.lock().expect("lock");
            let current = cur.as_ref().and_then(|l| l.metadata.resource_version.clone());
            if lease.metadata.resource_version != current {
                return Err(ApiError::Conflict("modified".into()));
            }
            *cur = Some(self.stamp(lease));
            Ok(cur.clone().expect("set"))
        }
    }

    const T: Timing = Timing {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
    };

    fn elector(id: &str) -> Elector {
        Elector::new(id.into(), "ha".into(), "fedsched".into(), T)
    }

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn run<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().expect("rt").block_on(f)
    }

    #[test]
    fn the_first_candidate_acquires_and_the_second_waits_for_expiry() {
        run(async {
            let api = Memory::default();
            let (mut a, mut b) = (elector("a"), elector("b"));
            assert_eq!(a.try_acquire_or_renew(&api, &|| s(0), 0).await, Attempt::Held);
            assert!(a.is_leader(s(0)));
            assert_eq!(b.try_acquire_or_renew(&api, &|| s(1), 1000).await, Attempt::HeldBy("a".into()));
            // a renews every retry period: b keeps seeing a changed record, never expiry.
            for t in [2, 4, 6, 8, 10, 12, 14, 16, 18, 20] {
                assert_eq!(a.try_acquire_or_renew(&api, &|| s(t), t * 1000).await, Attempt::Held);
                assert_eq!(b.try_acquire_or_renew(&api, &|| s(t + 1), t * 1000).await, Attempt::HeldBy("a".into()));
            }
            // a stops (killed). b saw its last renewal at 21 s: it takes over at 21 + 15.
            assert_eq!(b.try_acquire_or_renew(&api, &|| s(35), 35000).await, Attempt::HeldBy("a".into()));
            assert_eq!(b.try_acquire_or_renew(&api, &|| s(36), 36000).await, Attempt::Held);
            assert_eq!(api.holder().as_deref(), Some("b"));
            assert_eq!(b.transitions(), 1);
            // a comes back: its own record is gone; it sees b's, fresh.
            assert!(!a.is_leader(s(36)), "a's renew deadline passed long ago");
            assert_eq!(a.try_acquire_or_renew(&api, &|| s(37), 37000).await, Attempt::HeldBy("b".into()));
            assert!(!a.is_leader(s(37)));
        });
    }

    #[test]
    fn renewals_keep_acquire_time_and_transitions() {
        run(async {
            let api = Memory::default();
            let mut a = elector("a");
            a.try_acquire_or_renew(&api, &|| s(0), 1000).await;
            a.try_acquire_or_renew(&api, &|| s(2), 3000).await;
            let spec = api.lease.lock().expect("lock").clone().and_then(|l| l.spec).expect("spec");
            assert_eq!(spec.acquire_time, Some(micro_time(1000)));
            assert_eq!(spec.renew_time, Some(micro_time(3000)));
            assert_eq!(spec.lease_transitions, Some(0));
            assert_eq!(spec.lease_duration_seconds, Some(15));
        });
    }

    #[test]
    fn a_leader_that_cannot_renew_steps_down_before_another_can_acquire() {
        run(async {
            let api = Memory::default();
            let (mut a, mut b) = (elector("a"), elector("b"));
            assert_eq!(a.try_acquire_or_renew(&api, &|| s(0), 0).await, Attempt::Held);
            assert_eq!(b.try_acquire_or_renew(&api, &|| s(0), 0).await, Attempt::HeldBy("a".into()));
            *api.down.lock().expect("lock") = true;
            for t in [2, 4, 6, 8] {
                assert!(matches!(a.try_acquire_or_renew(&api, &|| s(t), 0).await, Attempt::Failed(_)));
                assert!(a.is_leader(s(t)), "still within the renew deadline at {t} s");
            }
            let until = a.valid_until().expect("ours");
            assert_eq!(until, s(10));
            assert!(!a.is_leader(s(10)));
            *api.down.lock().expect("lock") = false;
            // b may not take over before 15 s: a stopped at 10 s.
            assert_eq!(b.try_acquire_or_renew(&api, &|| s(14), 0).await, Attempt::HeldBy("a".into()));
            assert_eq!(b.try_acquire_or_renew(&api, &|| s(15), 0).await, Attempt::Held);
            assert!(until < s(15));
        });
    }

    #[test]
    fn a_lost_race_is_a_conflict_and_no_leadership() {
        run(async {
            let api = Memory::default();
            let (mut a, mut b) = (elector("a"), elector("b"));
            a.try_acquire_or_renew(&api, &|| s(0), 0).await;
            // Both saw a's record at 0 and a is gone: at 15 s both try to take over.
            b.try_acquire_or_renew(&api, &|| s(0), 0).await;
            let mut c = elector("c");
            c.try_acquire_or_renew(&api, &|| s(0), 0).await;
            // b reads, then c wins between b's read and b's replace.
            let stale = api.get().await.expect("get").expect("lease");
            assert_eq!(c.try_acquire_or_renew(&api, &|| s(15), 0).await, Attempt::Held);
            let mut lease = stale.clone();
            lease.spec.as_mut().expect("spec").holder_identity = Some("b".into());
            assert!(matches!(api.replace(&lease).await, Err(ApiError::Conflict(_))));
            // b's own attempt now sees c's fresh record.
            assert_eq!(b.try_acquire_or_renew(&api, &|| s(15), 0).await, Attempt::HeldBy("c".into()));
            assert!(!b.is_leader(s(15)));
            assert_eq!(api.holder().as_deref(), Some("c"));
        });
    }

    #[test]
    fn create_races_are_conflicts() {
        run(async {
            let api = Memory::default();
            let mut a = elector("a");
            let b = elector("b");
            // b's view is that no lease exists; a creates it first.
            assert_eq!(a.try_acquire_or_renew(&api, &|| s(0), 0).await, Attempt::Held);
            let lease = b.lease(LeaseSpec { holder_identity: Some("b".into()), ..Default::default() }, None);
            assert!(matches!(api.create(&lease).await, Err(ApiError::Conflict(_))));
        });
    }

    #[test]
    fn release_hands_over_at_once() {
        run(async {
            let api = Memory::default();
            let (mut a, mut b) = (elector("a"), elector("b"));
            a.try_acquire_or_renew(&api, &|| s(0), 0).await;
            b.try_acquire_or_renew(&api, &|| s(1), 0).await;
            assert!(a.release(&api, s(2), 0).await);
            assert!(!a.is_leader(s(2)));
            assert_eq!(b.try_acquire_or_renew(&api, &|| s(3), 0).await, Attempt::Held);
            assert_eq!(b.transitions(), 1);
            assert!(!a.release(&api, s(4), 0).await, "not ours any more");
        });
    }

    #[test]
    fn durations_round_up_to_whole_seconds() {
        assert_eq!(duration_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(duration_seconds(Duration::from_secs(15)), 15);
        assert_eq!(duration_seconds(Duration::ZERO), 1);
    }
}
