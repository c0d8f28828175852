//! The daemon: one loop that owns all state and reconciles on policy changes, on a timer and
//! on [`Control::Reload`] (SIGHUP), and shuts down cleanly on [`Control::Shutdown`] (SIGTERM /
//! SIGINT).
//!
//! Owns: the event loop, the policy watch ([`watch`]), systemd notification ([`systemd`]), the
//! daemon's [`Metrics`], and the settings in force. The loop is driven from
//! outside by a stream of [`Control`]s and reads the wall clock through a [`Clock`]:
//! production ([`run_blocking`]) maps signals to controls and uses the system clock; tests
//! pass a channel ([`control_channel`]) and a [`crate::util::clock::ManualClock`] and run the
//! daemon in-process ([`Daemon::start`], [`Daemon::run`]). Timers (the reconcile interval,
//! the debounce, the heartbeat) are tokio timers; wall-clock stamps come from the clock.
//!
//! The loop is the single writer; each reconcile runs on a blocking thread and the loop waits
//! for it, so a stuck reconcile also stops the watchdog pings and the heartbeat that
//! `/healthz` reads. Invalid policy input keeps the last good output: nothing is written until
//! the repository is valid again. After each pass the loop records metrics from the pass's
//! report and publishes a [`StatusView`]; the HTTP listener ([`crate::api`]) reads those, the
//! metrics and the store handle, never writes.
//!
//! Reload: the configuration file is read again and [`reconcile::Settings::from_config`]
//! builds the settings, used by a new [`Reconciler`] (profiles, `[cost]`, `[model]`,
//! `[publish]`, `[git]`), as at start; `[clusters]`, `[poll]` and `reconcile.interval` apply
//! too. An invalid file keeps the previous settings. Directory and `[http]` changes need a
//! restart (a warning says so).
//!
//! Live members: every `reconcile.interval` (and at start) the loop hands the poller to a task
//! that polls the members ([`crate::members::live::Poller::round`]); the round comes back as
//! an event (its report is recorded in the metrics), and the reconcile that follows uses the
//! latest view of every cluster. A round in flight never blocks the loop (signals, watchdog,
//! policy changes go on).
//!
//! High availability (`[ha]`, [`crate::ha`]): an election task holds or waits for the Lease
//! and reports changes of role as events. Every pass runs; the reconciler asks the lease's
//! fence before publishing, so a standby's pass (and a leader's whose renew deadline passed)
//! ends in shadow ([`reconcile::ReconcileError::Fenced`]): polled, decided, nothing written or
//! recorded, still ready. On a new term of leadership the loop first takes over
//! (`take_over_if_due`: the output directory is claimed, git mode syncs its work tree to the
//! remote — otherwise a publish the previous leader left half-done is finished —,
//! the summary's shards are adopted as the previous placements and claims, a new reconciler), then
//! opens the fence and runs a pass. Losing the lease lets go of the output directory. At
//! shutdown the output directory, then the lease, are released so that a standby takes over at
//! once.
//!
//! One writer per output directory ([`crate::publish::claim_output`]): without `[ha]` the
//! daemon claims it at start and holds it for its life; a start on a directory another
//! fedsched owns fails (exit 2), naming the directory and the owner's pid and state directory.
//!
//! # In detail
//!
//! The event loop (single writer): `run(cfg, config_path, paths, control, clock)` over a stream of
//! `Control` (`Reload`, `PolicyChanged`, `Tick`, `Shutdown`); production (`run_blocking`) maps
//! SIGHUP / SIGTERM / SIGINT to controls and uses `SystemClock`; tests use `control_channel()`, a
//! `ManualClock` and `Daemon::start` in-process. A reload reads the config again and builds
//! `Settings::from_config` and a new `Reconciler` (profiles, `[cost]`, `[model]`, `[publish]`,
//! `[git]`, `[clusters]`, `[poll]`, `reconcile.interval`); directories and `[http]` need a restart.
//! An HTTP listener that cannot start fails the start, and so does an output directory another
//! fedsched owns (`publish::claim_output`; with `[ha]` the claim is made at the takeover, after
//! which a publish the previous leader left half-done is finished, and dropped on losing the
//! lease). Workload problems (unschedulable, render failures) and the repository's findings are
//! logged when they change, not every pass. Owns the daemon's `metrics::Metrics` and records them
//! from the reports; `watch.rs` (the policy watch: a debounced trigger, and what it saw — nothing,
//! the paths of the files that changed, or "walk" after a queue overflow, a watch error or more
//! than 256 paths — which `reading` turns into the pass's `reconcile::Changed` before the pass: a
//! timer or poll-round pass takes the last good inputs while the watch saw nothing, a pass reads
//! only the files the watch named while they are all files the last walk read
//! (`ParseCache::refresh_files`; anything else — a new or removed file, a directory, the ignore
//! file — walks), and a pass walks the directory after an overflow or an error, on start, SIGHUP
//! and a takeover, or when the last walk is 10 minutes old), `systemd.rs` (sd_notify). After each
//! pass it publishes a `views::status::StatusView` (with the inputs and profiles of the last good
//! pass). The loop keeps turning while a pass runs on a blocking thread (`Daemon::wait_for`): it
//! stamps the heartbeat and feeds WATCHDOG=1 unless `Heartbeat::stalled` (the loop silent, a pass
//! running longer than `http.heartbeat_timeout`, or no pass finished for 2 × interval + that
//! timeout — what `/healthz` answers), and a SIGTERM stops the pass's writing
//! (`reconcile::WriteGate`: a publish stops before its journal or right after it; `Daemon::start`
//! completes a journal left behind) and ends the process within `reconcile.shutdown_timeout`. With
//! `[ha]` it starts the election task (`ha::run`), hands the lease's fence to its reconciler, runs
//! the takeover on a new term (`take_over_if_due`) and releases the lease at shutdown; a fenced
//! pass is a shadow pass (status `shadow`, still ready).

pub mod systemd;
pub mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_util::{Stream, StreamExt};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook_tokio::Signals;
use tokio::sync::{mpsc, watch as status_watch};

use crate::config::{Config, Paths};
use crate::ha;
use crate::members::live::{LiveView, Poller, RoundReport, Target, targets};
use crate::metrics::Metrics;
use crate::model::interpreter::Scope;
use crate::publish::Trigger;
use crate::reconcile::{self, PhaseTimings, Reconciler};
use crate::schedule::profile::Profiles;
use crate::store::Store;
use crate::util::clock::{Clock, SystemClock};
use crate::views::status::{Heartbeat, PassOutcome, PassStatus, StatusView};

/// What steers the loop from outside: signals in production, a channel in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Re-read the configuration file, rebuild the settings, reconcile (SIGHUP).
    Reload,
    /// Something in the policy directory changed (as the directory watch reports it): debounce,
    /// then reconcile.
    PolicyChanged,
    /// Reconcile now as the timer would (poll the live members first).
    Tick,
    /// Stop cleanly (SIGTERM, SIGINT); the reason is logged.
    Shutdown(&'static str),
}

/// A channel of [`Control`]s and the stream [`Daemon::run`] takes. Dropping every sender ends
/// the stream, which stops the daemon.
pub fn control_channel() -> (mpsc::UnboundedSender<Control>, impl Stream<Item = Control> + Unpin + Send) {
    let (tx, rx) = mpsc::unbounded_channel();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    (tx, Box::pin(stream))
}

/// Runs the daemon on its own runtime until a shutdown signal: SIGHUP reloads, SIGTERM and
/// SIGINT stop; wall-clock stamps come from the system clock.
pub fn run_blocking(cfg: Config, config_path: Option<PathBuf>, paths: Paths) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let out = rt.block_on(async move {
        let signals = Signals::new([SIGTERM, SIGINT, SIGHUP]).context("cannot install signal handlers")?;
        let control = signals.map(|sig| match sig {
            SIGHUP => Control::Reload,
            SIGINT => Control::Shutdown("SIGINT"),
            _ => Control::Shutdown("SIGTERM"),
        });
        run(cfg, config_path, paths, control, Arc::new(SystemClock)).await
    });
    // A pass left computing at the shutdown (it writes nothing more) ends with the process.
    rt.shutdown_timeout(Duration::from_millis(100));
    out
}

/// Starts the daemon ([`Daemon::start`]) and runs its loop until `control` says stop or ends.
pub async fn run(
    cfg: Config,
    config_path: Option<PathBuf>,
    paths: Paths,
    mut control: impl Stream<Item = Control> + Unpin,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<()> {
    // A shutdown while the store opens or the election connects ends the start.
    let start = Daemon::start(cfg, config_path, paths, clock);
    tokio::pin!(start);
    let daemon = loop {
        tokio::select! {
            daemon = &mut start => break daemon?,
            c = control.next() => match c {
                Some(Control::Shutdown(reason)) => {
                    tracing::info!(signal = reason, "shutting down before the start completed");
                    return Ok(());
                }
                None => return Ok(()),
                // Nothing to reload or reconcile yet: the start reads everything afresh.
                Some(_) => {}
            },
        }
    };
    daemon.run(control).await
}

/// The settings in force: the reconciler built from them, and the profiles the read side
/// (explain, resources) answers with. Rebuilt as a whole on reload.
struct Current {
    /// The reconciler of this configuration.
    reconciler: Arc<Reconciler>,
    /// The same profiles as the reconciler's (`[profiles.*]`, `[cost]`, `[model]`).
    profiles: Arc<Profiles>,
}

impl Current {
    /// [`reconcile::Settings::from_config`] (the one way settings are built, at start and on
    /// reload) and a new [`Reconciler`] over `store`, fenced by the lease with `[ha]`.
    fn from_config(
        cfg: &Config,
        store: &Store,
        ha: Option<&Arc<ha::Handle>>,
        gate: &Arc<reconcile::WriteGate>,
    ) -> anyhow::Result<Current> {
        let settings = reconcile::Settings::from_config(cfg, false)?;
        let profiles = Arc::new(cfg.profiles()?);
        let mut reconciler = Reconciler::new(store.clone(), settings).with_gate(Arc::clone(gate));
        if let Some(h) = ha {
            let h = Arc::clone(h);
            reconciler = reconciler.with_fence(Arc::new(move || h.fence()));
        }
        Ok(Current { reconciler: Arc::new(reconciler), profiles })
    }
}

/// `[ha]` at run time: the election task and what the loop reads of it.
struct HaRuntime {
    handle: Arc<ha::Handle>,
    /// Changes of role, from the election task.
    roles: mpsc::UnboundedReceiver<ha::Role>,
    /// `true` stops the election (the lease is released if held).
    stop: status_watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl HaRuntime {
    /// Connects to the host cluster and starts the election task.
    async fn start(section: &crate::config::HaSection) -> anyhow::Result<HaRuntime> {
        let identity = section.identity();
        let timing = ha::timing(section);
        let api = ha::KubeLeases::connect(section, timing.renew_deadline).await.map_err(anyhow::Error::msg)?;
        let handle = ha::Handle::new(identity.clone(), timing);
        let (roles_tx, roles) = mpsc::unbounded_channel();
        let (stop, stop_rx) = status_watch::channel(false);
        let elector =
            ha::Elector::new(identity.clone(), section.lease_namespace.clone(), section.lease_name.clone(), timing);
        let task = tokio::spawn(ha::run(elector, api, Arc::clone(&handle), roles_tx, stop_rx));
        tracing::info!(
            identity = %identity,
            lease = %format!("{}/{}", section.lease_namespace, section.lease_name),
            lease_duration_ms = timing.lease_duration.as_millis() as u64,
            renew_deadline_ms = timing.renew_deadline.as_millis() as u64,
            retry_period_ms = timing.retry_period.as_millis() as u64,
            "leader election started; publishing only while this instance holds the lease"
        );
        Ok(HaRuntime { handle, roles, stop, task })
    }

    /// Stops the election; a held lease is released so that a standby takes over at once.
    async fn stop(self, limit: Duration) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(limit, self.task).await.is_err() {
            tracing::warn!("leader election did not stop in time; the lease expires by itself");
        }
    }
}

/// The next change of role, or never without `[ha]`.
async fn next_role(ha: &mut Option<HaRuntime>) -> Option<ha::Role> {
    match ha {
        Some(h) => h.roles.recv().await,
        None => std::future::pending().await,
    }
}

/// A started daemon: store open, settings built, HTTP listener up; [`Daemon::run`] runs the
/// loop.
pub struct Daemon {
    cfg: Config,
    config_path: Option<PathBuf>,
    paths: Paths,
    clock: Arc<dyn Clock>,
    store: Store,
    current: Current,
    metrics: Arc<Metrics>,
    heartbeat: Arc<Heartbeat>,
    status_tx: status_watch::Sender<Arc<StatusView>>,
    api: Option<crate::api::Server>,
    /// Whether the loop watches the policy directory (else only [`Control::PolicyChanged`]
    /// reports changes).
    watch_policy_dir: bool,
    /// The repository's notes and warnings last logged (logged again only when they change).
    findings: std::sync::Mutex<Vec<String>>,
    /// `[ha]`: the election (`None`: no election, this instance publishes).
    ha: Option<HaRuntime>,
    /// The workload problems last logged (workload, cluster → reason): an unschedulable
    /// workload or a render failure is logged when it appears or its reason changes, not
    /// every pass.
    problems: std::sync::Mutex<std::collections::BTreeMap<(String, Option<String>), String>>,
    /// The ownership of the output directory (`publish::claim_output`): held for the daemon's
    /// life, or with `[ha]` from a takeover until the lease is lost.
    output_claim: Option<crate::publish::OutputClaim>,
    /// `[ha]`: the last term whose takeover was refused the output directory (logged once).
    claim_refused_term: u64,
    /// When the last self-audit ran (`[audit] interval`; the first is due an interval after
    /// the first pass).
    last_audit_ms: Option<u64>,
    /// Where every reconciler of this daemon writes: stopped at shutdown.
    gate: Arc<reconcile::WriteGate>,
    /// Whether the last heartbeat found the daemon stalled (logged once per stall).
    stalled: std::sync::atomic::AtomicBool,
    /// The workload objects the last pass asked the poller to read (progressive rollouts).
    rollout_objects: std::sync::Mutex<std::collections::BTreeMap<String, Vec<crate::policy::ObjectKey>>>,
}

enum Event {
    Polled(Box<Poller>, RoundReport),
    PolicyChanged,
    Tick,
    Reload,
    Shutdown(&'static str),
    Heartbeat,
    Role(ha::Role),
    /// A member's watch stopped with an error: a round reports it now.
    WatchLost,
}

impl Daemon {
    /// Opens the store, builds the settings and starts the HTTP listener (when `[http]
    /// listen` is set).
    pub async fn start(
        cfg: Config,
        config_path: Option<PathBuf>,
        paths: Paths,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<Daemon> {
        let state_dir = paths.state_dir.clone();
        let store = tokio::task::spawn_blocking(move || Store::open(&state_dir))
            .await
            .context("store task failed")?
            .context("cannot open the store")?;
        // One writer per output directory: without [ha] the daemon owns it for its life; with
        // [ha] the leader claims it at its takeover (`take_over_if_due`).
        let output_claim = match &cfg.ha {
            Some(_) => None,
            None => Some(crate::publish::claim_output(&paths.output_dir, &paths.state_dir, "run")?),
        };
        if output_claim.is_some() {
            // A publish a shutdown (or a crash) stopped with its journal written is completed
            // now, whatever the first pass finds in the repository.
            // The record of that publish, left pending, takes its fate (`reconcile::recover`).
            let (out, store) = (paths.output_dir.clone(), store.clone());
            match tokio::task::spawn_blocking(move || reconcile::recover(&store, &out)).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => {
                    tracing::error!(%error, "cannot complete the interrupted publish; the next pass tries again")
                }
                Err(error) => tracing::error!(%error, "the recovery task failed"),
            }
        }
        let ha = match &cfg.ha {
            Some(section) => Some(HaRuntime::start(section).await?),
            None => None,
        };
        let gate = Arc::new(reconcile::WriteGate::default());
        let current = Current::from_config(&cfg, &store, ha.as_ref().map(|h| &h.handle), &gate)?;
        let heartbeat = Arc::new(Heartbeat::new(clock.now_ms()));
        let metrics = Arc::new(Metrics::new());
        let (status_tx, status_rx) = status_watch::channel(Arc::new(StatusView {
            started_at_ms: clock.now_ms(),
            ha: ha.as_ref().map(|h| Arc::clone(&h.handle)),
            ..Default::default()
        }));
        let api = start_api(&cfg, &paths, &store, status_rx, &heartbeat, &metrics, &clock).await?;
        Ok(Daemon {
            cfg,
            config_path,
            paths,
            clock,
            store,
            current,
            metrics,
            heartbeat,
            status_tx,
            api,
            watch_policy_dir: true,
            findings: Default::default(),
            ha,
            problems: Default::default(),
            output_claim,
            claim_refused_term: 0,
            last_audit_ms: None,
            gate,
            stalled: Default::default(),
            rollout_objects: Default::default(),
        })
    }

    /// Does not watch the policy directory: changes reach the loop only as
    /// [`Control::PolicyChanged`] (tests that want one pass per control).
    pub fn without_policy_watch(mut self) -> Daemon {
        self.watch_policy_dir = false;
        self
    }

    /// The status the loop publishes after every pass.
    pub fn status(&self) -> status_watch::Receiver<Arc<StatusView>> {
        self.status_tx.subscribe()
    }

    /// The daemon's metrics (what `/metrics` encodes).
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// The address the HTTP listener is bound to, if it runs.
    pub fn http_addr(&self) -> Option<std::net::SocketAddr> {
        self.api.as_ref().map(|s| s.addr)
    }

    /// The event loop, until `control` says stop (or ends); then the listener stops and the
    /// store is flushed. The loop keeps turning while a pass runs (the heartbeat, the
    /// watchdog, a shutdown); other controls wait for the pass to end.
    pub async fn run(mut self, mut control: impl Stream<Item = Control> + Unpin) -> anyhow::Result<()> {
        let paths = self.paths.clone();
        tracing::info!(
            policy_dir = %paths.policy_dir.display(),
            output_dir = %paths.output_dir.display(),
            state_dir = %paths.state_dir.display(),
            "fedsched started"
        );
        let (fs_tx, mut fs_rx) = mpsc::channel::<()>(1);
        let ignored = vec![paths.output_dir.clone(), paths.state_dir.clone()];
        let policy_watch = if self.watch_policy_dir { start_watch(&paths, ignored, fs_tx) } else { None };
        let mut ticker = interval(self.cfg.reconcile.interval).await;
        self.heartbeat.expect_passes_every(self.cfg.reconcile.interval);
        // One timer pets systemd's watchdog and stamps the heartbeat, during passes too; the
        // watchdog is fed only while the daemon is not stalled (`Heartbeat::stalled`).
        let mut beat_every = (self.cfg.http.heartbeat_timeout / 4).max(Duration::from_millis(10));
        if let Some(w) = systemd::watchdog_interval() {
            beat_every = beat_every.min(w / 2);
        }
        let mut beat = tokio::time::interval(beat_every);
        // Controls that came while a pass ran, in their order.
        let mut deferred: std::collections::VecDeque<Control> = Default::default();

        // Live members: the poller travels to a task for each round and comes back with it.
        let (poll_tx, mut poll_rx) = mpsc::channel::<(Box<Poller>, RoundReport)>(1);
        let mut poller: Option<Box<Poller>> = Some(Box::new(
            Poller::new(self.cfg.poll.clone(), self.cfg.reconcile.interval).with_clock(Arc::clone(&self.clock)),
        ));
        let watch_lost = poller.as_ref().map(|p| p.watch_lost()).unwrap_or_default();
        // A watch stopped while the poller was away: a round as soon as it is home.
        let mut round_again = false;
        let mut view = LiveView::default();
        let mut live_targets: Vec<Target> = Vec::new();
        let mut stopped: Option<Stopping> = None;
        if !self.cfg.clusters.is_empty() {
            let mut waits = Waits { control: &mut control, beat: &mut beat, deferred: &mut deferred };
            match self.initial_targets(&mut waits).await {
                Ok(t) => live_targets = t,
                Err(s) => stopped = Some(s),
            }
        }

        let mut ready = false;
        // When a pass last walked the policy directory ([`reading`]).
        let mut last_walk_ms: Option<u64> = None;
        let mut pending: Option<Trigger> = None;
        // After a round: the trigger of the reconcile that follows it.
        let mut after_round: Option<Trigger> = Some(Trigger::Startup);
        if !start_round(&mut poller, &live_targets, &poll_tx) {
            pending = after_round.take();
        }
        while stopped.is_none() {
            self.heartbeat.beat(self.clock.now_ms());
            let mut pending_now = pending.take();
            if self.take_over_if_due().await && pending_now.is_none() {
                pending_now = Some(Trigger::Takeover);
            }
            if let Some(trigger) = pending_now {
                let now_ms = self.clock.now_ms();
                let changes = policy_watch.as_ref().map(watch::PolicyWatch::take_changes);
                let changed = reading(changes, trigger, last_walk_ms, now_ms);
                if changed == reconcile::Changed::Unknown {
                    last_walk_ms = Some(now_ms);
                }
                let mut waits = Waits { control: &mut control, beat: &mut beat, deferred: &mut deferred };
                let (ok, new_targets) = match self.reconcile_once(trigger, &view, changed, &mut waits).await {
                    Ok(done) => done,
                    Err(s) => {
                        stopped = Some(s);
                        break;
                    }
                };
                self.heartbeat_tick();
                if ok && self.audit_if_due(&view).await {
                    pending = Some(Trigger::Audit);
                }
                if ok && !ready {
                    ready = true;
                    systemd::ready("first reconcile done");
                }
                // The objects a rollout reads changed (a first pass learnt its placement, a
                // stage was released): a round reads them now, and a pass follows it, so that
                // the members' objects and GitOps agents are known before a stage's release.
                let mut read_now = false;
                if let Some(p) = poller.as_mut() {
                    let wanted = self.rollout_objects.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    read_now = ok && p.want_objects(wanted);
                }
                if read_now && after_round.is_none() && start_round(&mut poller, &live_targets, &poll_tx) {
                    after_round = Some(Trigger::RolloutObjects);
                }
                if let Some(t) = new_targets
                    && t != live_targets
                {
                    live_targets = t;
                    if after_round.is_none() && start_round(&mut poller, &live_targets, &poll_tx) {
                        after_round = Some(Trigger::ClusterChange);
                    }
                }
            }
            let event = match deferred.pop_front() {
                Some(c) => Event::from(Some(c)),
                None => tokio::select! {
                    Some((p, report)) = poll_rx.recv() => Event::Polled(p, report),
                    Some(()) = fs_rx.recv() => Event::PolicyChanged,
                    _ = ticker.tick() => Event::Tick,
                    _ = beat.tick() => Event::Heartbeat,
                    Some(role) = next_role(&mut self.ha) => Event::Role(role),
                    _ = watch_lost.notified() => Event::WatchLost,
                    c = control.next() => Event::from(c),
                },
            };
            match event {
                Event::Polled(mut p, report) => {
                    log_round(&report);
                    self.metrics.record_round(&report);
                    p.reconfigure(self.cfg.poll.clone(), self.cfg.reconcile.interval);
                    // Objects asked for while this round ran: read by the next one.
                    let asked = p.want_objects(self.rollout_objects.lock().unwrap_or_else(|p| p.into_inner()).clone());
                    round_again |= asked;
                    view = p.view().clone();
                    poller = Some(p);
                    let trigger = match after_round.take() {
                        Some(trigger) => Some(trigger),
                        None if report.changed => Some(Trigger::ClusterChange),
                        None => None,
                    };
                    if std::mem::take(&mut round_again) && start_round(&mut poller, &live_targets, &poll_tx) {
                        if asked {
                            // The pass waits for the round that reads them: this one's data,
                            // polled before they were asked for, must not release a stage
                            // whose release waits for them (`reconcile::rollout`, held).
                            after_round = Some(trigger.unwrap_or(Trigger::RolloutObjects));
                        } else {
                            pending = trigger;
                            after_round = Some(Trigger::ClusterChange);
                        }
                    } else {
                        pending = trigger;
                    }
                }
                Event::WatchLost => {
                    if after_round.is_none() && start_round(&mut poller, &live_targets, &poll_tx) {
                        after_round = Some(Trigger::ClusterChange);
                    } else {
                        round_again = true;
                    }
                }
                Event::PolicyChanged => {
                    // Wait for quiet: a git checkout or a sync that swaps many files, even
                    // across several watcher batches, becomes one reconcile. Bounded, so that
                    // a directory that never stops changing still gets reconciled.
                    let debounce = self.cfg.reconcile.debounce;
                    let deadline = tokio::time::Instant::now() + debounce * 20;
                    while tokio::time::Instant::now() < deadline {
                        match tokio::time::timeout(debounce, fs_rx.recv()).await {
                            Ok(Some(())) => continue,
                            _ => break,
                        }
                    }
                    pending = Some(Trigger::PolicyChange);
                }
                Event::Tick => {
                    // With live members, poll first and reconcile on the round's return.
                    if after_round.is_some() || start_round(&mut poller, &live_targets, &poll_tx) {
                        after_round = Some(Trigger::Timer);
                    } else {
                        pending = Some(Trigger::Timer);
                    }
                }
                Event::Heartbeat => self.heartbeat_tick(),
                // Becoming the leader: the takeover (adoption, then a pass) runs at the top of
                // the loop. Losing it: the fence already stops the publish.
                Event::Role(ha::Role::Leader) => pending = pending.or(Some(Trigger::Takeover)),
                Event::Role(ha::Role::Standby) => {
                    if self.output_claim.take().is_some() {
                        tracing::info!(output_dir = %paths.output_dir.display(), "let go of the output directory");
                    }
                }
                Event::Reload => {
                    systemd::reloading();
                    if self.reload() == Some(true) {
                        ticker = interval(self.cfg.reconcile.interval).await;
                        self.heartbeat.expect_passes_every(self.cfg.reconcile.interval);
                    }
                    systemd::ready("reloaded");
                    pending = Some(Trigger::Sighup);
                }
                Event::Shutdown(reason) => {
                    tracing::info!(signal = reason, "shutting down");
                    stopped = Some(Stopping { at: tokio::time::Instant::now(), pass_running: false });
                }
            }
        }
        drop(policy_watch);
        let stopping = stopped.unwrap_or(Stopping { at: tokio::time::Instant::now(), pass_running: false });
        self.shut_down(stopping).await;
        Ok(())
    }

    /// After the loop: no pass writes any more (a publish under way stops at its next safe
    /// step, [`reconcile::WriteGate`]), then the output directory and the lease are let go, the
    /// listener stops and the store is flushed, all within `reconcile.shutdown_timeout` of the
    /// shutdown. A pass still computing is left to the process's exit; a publish that does not
    /// stop in time keeps the output directory and the lease (released when the process ends,
    /// the lease when it expires) and its journal completes it at the next start.
    async fn shut_down(mut self, stopping: Stopping) {
        systemd::stopping();
        let paths = self.paths.clone();
        let deadline = stopping.at + self.cfg.reconcile.shutdown_timeout;
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        self.gate.stop();
        let gate = Arc::clone(&self.gate);
        let within = left() / 2;
        let quiet = tokio::task::spawn_blocking(move || gate.quiet(within)).await.unwrap_or(false);
        if stopping.pass_running {
            tracing::warn!(
                "a pass was still running at the shutdown; it stops with the process (nothing more is written)"
            );
        }
        if quiet {
            // The output directory is let go before the lease, so that the next leader finds
            // it free.
            self.output_claim = None;
            if let Some(ha) = self.ha.take() {
                ha.stop(left()).await;
            }
        } else {
            tracing::error!(
                "a publish did not stop in time: the output directory and the lease are kept until the process ends; its journal completes it at the next start"
            );
            std::mem::forget(self.output_claim.take());
            if let Some(ha) = self.ha.take() {
                std::mem::forget(ha);
            }
        }
        if let Some(server) = self.api.take() {
            server.shutdown(left()).await;
            let _ = std::fs::remove_file(paths.state_dir.join(crate::api::ADDR_FILE));
        }
        let store = self.store.clone();
        drop(self);
        let flush = tokio::task::spawn_blocking(move || store.flush());
        match tokio::time::timeout(left(), flush).await {
            Ok(Ok(Ok(_))) => {}
            Ok(Ok(Err(error))) => tracing::error!(%error, "store flush failed at shutdown"),
            Ok(Err(error)) => tracing::error!(%error, "store flush task failed"),
            Err(_) => tracing::error!("store flush timed out at shutdown"),
        }
        tracing::info!("fedsched stopped");
    }

    /// Stamps the heartbeat; feeds systemd's watchdog unless the daemon is stalled
    /// ([`Heartbeat::stalled`], what `/healthz` answers), which is logged once per stall.
    fn heartbeat_tick(&self) {
        let now = self.clock.now_ms();
        self.heartbeat.beat(now);
        match self.heartbeat.stalled(now, self.cfg.http.heartbeat_timeout) {
            None => {
                systemd::watchdog();
                if self.stalled.swap(false, std::sync::atomic::Ordering::Relaxed) {
                    tracing::info!("no longer stalled; feeding systemd's watchdog again");
                }
            }
            Some(reason) => {
                if !self.stalled.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::error!(%reason, "stalled: /healthz answers 503 and systemd's watchdog is no longer fed");
                }
            }
        }
    }

    /// Waits for `task` while the loop keeps turning: the heartbeat and the watchdog go on, a
    /// shutdown stops the wait (the pass is asked to stop writing and given a quarter of
    /// `reconcile.shutdown_timeout` to end: what it did is still reported), other controls wait
    /// in `waits.deferred`.
    async fn wait_for<T>(
        &self,
        mut task: tokio::task::JoinHandle<T>,
        waits: &mut Waits<'_, impl Stream<Item = Control> + Unpin>,
    ) -> Waited<T> {
        let mut shutdown: Option<tokio::time::Instant> = None;
        let grace = self.cfg.reconcile.shutdown_timeout / 4;
        loop {
            let until =
                shutdown.map_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600), |at| at + grace);
            tokio::select! {
                joined = &mut task => {
                    return Waited::Done(joined, shutdown.map(|at| Stopping { at, pass_running: false }));
                }
                _ = waits.beat.tick() => self.heartbeat_tick(),
                c = waits.control.next(), if shutdown.is_none() => {
                    let reason = match c {
                        Some(Control::Shutdown(reason)) => reason,
                        None => "control stream ended",
                        Some(other) => {
                            waits.deferred.push_back(other);
                            continue;
                        }
                    };
                    tracing::info!(signal = reason, "shutting down; stopping the pass under way");
                    self.gate.stop();
                    shutdown = Some(tokio::time::Instant::now());
                }
                _ = tokio::time::sleep_until(until), if shutdown.is_some() => {
                    return Waited::Abandoned(Stopping { at: shutdown.unwrap_or(until), pass_running: true });
                }
            }
        }
    }

    /// The live targets from the policy repository as it is at start (empty if it is invalid:
    /// the startup reconcile reports why), loaded by the reconciler of the first pass — its
    /// settings (a policy naming a configured profile is valid) and its load cache (the first
    /// pass finds the files parsed). The load's offline snapshots count as polls.
    async fn initial_targets(
        &self,
        waits: &mut Waits<'_, impl Stream<Item = Control> + Unpin>,
    ) -> Result<Vec<Target>, Stopping> {
        let dir = self.paths.policy_dir.clone();
        let cfg = self.cfg.clone();
        let reconciler = Arc::clone(&self.current.reconciler);
        let load = move || {
            // The load types the repository's objects (their scripts run): a scope of its own.
            let load = || reconciler.load_inputs(&dir, &mut PhaseTimings::default(), &reconcile::Changed::Unknown);
            let inputs = Scope::enter(Some(Scope::new("the start")), load).ok()?;
            let targets = live_targets(&cfg, &inputs.set);
            let polls = offline_only(&inputs.offline_polls, &targets);
            Some((targets, polls))
        };
        Ok(match self.wait_for(tokio::task::spawn_blocking(load), waits).await {
            Waited::Done(_, Some(stopping)) | Waited::Abandoned(stopping) => return Err(stopping),
            Waited::Done(Ok(Some((targets, polls))), None) => {
                self.metrics.record_offline(polls.iter().map(|(c, took)| (c.as_str(), *took)));
                targets
            }
            Waited::Done(_, None) => Vec::new(),
        })
    }

    /// `[ha]`: when this instance holds the lease for a term whose takeover is not done, adopts
    /// the published state ([`reconcile::adopt_published`]: the summary's shards as the previous
    /// placements and claims) and starts a new reconciler on it, then opens the fence. Returns
    /// whether a takeover was done (a pass should follow). On failure the fence stays closed
    /// (nothing is published from placements that were not adopted) and the next turn of the
    /// loop tries again.
    async fn take_over_if_due(&mut self) -> bool {
        let Some(handle) = self.ha.as_ref().map(|h| Arc::clone(&h.handle)) else { return false };
        let Some(term) = handle.takeover_due() else { return false };
        if !self.claim_output_for(term).await {
            return false;
        }
        let store = self.store.clone();
        let out = self.paths.output_dir.clone();
        let git = self.current.reconciler.settings().publish.git.clone();
        let fence_handle = Arc::clone(&handle);
        let identity = handle.status().identity;
        let now_ms = self.clock.now_ms();
        let adopted = tokio::task::spawn_blocking(move || match &git {
            Some(git) => {
                let fence = move || fence_handle.takeover_fence();
                crate::publish::git::sync_from_remote(&out, git, &fence, &identity).map_err(|e| {
                    reconcile::AdoptError::Read { path: out.display().to_string(), message: format!("git mode: {e}") }
                })?;
                reconcile::adopt_published(&store, &out, now_ms)
            }
            // A publish the previous leader left half-done is finished first, so that the
            // placements adopted are the last ones it published.
            None => reconcile::take_over(&store, &out, now_ms),
        })
        .await;
        let adopted = match adopted {
            Ok(Ok(a)) => a,
            Ok(Err(error)) => {
                tracing::error!(%error, "takeover: cannot adopt the published state; not publishing");
                return false;
            }
            Err(error) => {
                tracing::error!(%error, "takeover: the adoption task failed; not publishing");
                return false;
            }
        };
        match Current::from_config(&self.cfg, &self.store, Some(&handle), &self.gate) {
            Ok(current) => self.current = current,
            Err(error) => {
                tracing::error!(%error, "takeover: cannot build the settings; not publishing");
                return false;
            }
        }
        handle.adopted(term);
        let st = handle.status();
        tracing::info!(
            identity = %st.identity,
            transitions = st.transitions,
            published = adopted.published,
            changed = adopted.changed,
            removed = adopted.removed,
            rollouts = adopted.rollouts,
            rollouts_removed = adopted.rollouts_removed,
            "takeover: adopted the published placements; publishing as the leader"
        );
        true
    }

    /// `[ha]`: claims the output directory for the leader's term, waiting up to one retry
    /// period for a previous leader that is letting go of it. Returns whether it is held;
    /// refused, the takeover waits (the fence stays closed) and the next turn of the loop
    /// tries again.
    async fn claim_output_for(&mut self, term: u64) -> bool {
        if self.output_claim.is_some() {
            return true;
        }
        let out = self.paths.output_dir.clone();
        let state = self.paths.state_dir.clone();
        let patience = self.cfg.ha.as_ref().map_or(Duration::ZERO, |h| h.retry_period);
        let claimed = tokio::task::spawn_blocking(move || {
            let start = std::time::Instant::now();
            loop {
                match crate::publish::claim_output(&out, &state, "run") {
                    Err(crate::publish::PublishError::OutputInUse { .. }) if start.elapsed() < patience => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    other => return other,
                }
            }
        })
        .await;
        match claimed {
            Ok(Ok(claim)) => {
                self.output_claim = Some(claim);
                true
            }
            Ok(Err(error)) => {
                if self.claim_refused_term != term {
                    self.claim_refused_term = term;
                    tracing::error!(%error, "takeover: the output directory is not ours; not publishing");
                }
                false
            }
            Err(error) => {
                tracing::error!(%error, "takeover: the claim task failed; not publishing");
                false
            }
        }
    }

    /// The self-audit, when `[audit] interval` (not 0) passed since the last one: what the
    /// reconciler kept against a fresh decision on a dry run of the store, with the inputs and
    /// the live view of the last pass ([`Reconciler::audit`], on a blocking thread; the loop
    /// waits as for a pass). Each difference is logged with its workload and the memo
    /// involved and counted (`fedsched_audit_differences_total`); then the reconciler forgets
    /// what it kept, so the fresh decision wins. Returns whether it found differences (a pass
    /// should follow).
    async fn audit_if_due(&mut self, view: &LiveView) -> bool {
        let every = u64::try_from(self.cfg.audit.interval.as_millis()).unwrap_or(u64::MAX);
        let now = self.clock.now_ms();
        if every == 0 || now < self.last_audit_ms.get_or_insert(now).saturating_add(every) {
            return false;
        }
        self.last_audit_ms = Some(now);
        let Some(inputs) = self.status_tx.borrow().inputs.clone() else { return false };
        let settings = match reconcile::Settings::from_config(&self.cfg, false) {
            Ok(s) => s,
            Err(error) => {
                tracing::warn!(%error, "audit: cannot build the settings; skipped");
                return false;
            }
        };
        let (r, out, view) = (Arc::clone(&self.current.reconciler), self.paths.output_dir.clone(), view.clone());
        let audited = tokio::task::spawn_blocking(move || {
            let audit = r.audit(settings, &inputs, &view, &out, now).map_err(|e| e.to_string())?;
            if !audit.differences.is_empty() {
                r.forget();
            }
            Ok::<_, String>(audit)
        })
        .await;
        let audit = match audited {
            Ok(Ok(a)) => a,
            Ok(Err(error)) => {
                tracing::warn!(%error, "audit failed; what the daemon kept stays in use");
                return false;
            }
            Err(error) => {
                tracing::warn!(%error, "audit task failed");
                return false;
            }
        };
        for d in &audit.differences {
            tracing::warn!(
                workload = %d.workload.as_ref().map(ToString::to_string).unwrap_or_default(),
                what = d.what,
                memo = d.memo,
                kept = %d.kept,
                fresh = %d.fresh,
                "audit: what the daemon kept differs from a fresh decision; the fresh decision wins at the next pass"
            );
        }
        tracing::info!(
            workloads = audit.workloads,
            differences = audit.differences.len(),
            duration_ms = audit.took.as_millis() as u64,
            fresh_ms = audit.fresh.as_millis() as u64,
            "audit done"
        );
        self.metrics.record_audit(audit.differences.len(), audit.took);
        !audit.differences.is_empty()
    }

    /// Reads the configuration file again and puts its settings in force (a new reconciler).
    /// Returns whether `reconcile.interval` changed, or `None` when nothing was reloaded (no
    /// file, or an invalid one: the previous settings stay).
    fn reload(&mut self) -> Option<bool> {
        let path = self.config_path.clone()?;
        let loaded = Config::load(&path).map_err(anyhow::Error::from).and_then(|new| {
            Current::from_config(&new, &self.store, self.ha.as_ref().map(|h| &h.handle), &self.gate)
                .map(|current| (new, current))
        });
        let (new, current) = match loaded {
            Ok(l) => l,
            Err(error) => {
                tracing::error!(%error, "configuration reload failed; keeping the previous configuration");
                return None;
            }
        };
        let cfg = &self.cfg;
        if new.policy_dir != cfg.policy_dir || new.output_dir != cfg.output_dir || new.state_dir != cfg.state_dir {
            tracing::warn!("directory settings changed; they take effect at the next restart");
        }
        if new.http != cfg.http {
            tracing::warn!("[http] settings changed; they take effect at the next restart");
        }
        if new.ha != cfg.ha {
            tracing::warn!("[ha] settings changed; they take effect at the next restart");
        }
        let interval_changed = new.reconcile.interval != cfg.reconcile.interval;
        self.cfg = Config {
            policy_dir: cfg.policy_dir.clone(),
            output_dir: cfg.output_dir.clone(),
            state_dir: cfg.state_dir.clone(),
            http: cfg.http.clone(),
            ha: cfg.ha.clone(),
            ..new
        };
        self.current = current;
        tracing::info!(config = %path.display(), "configuration reloaded");
        Some(interval_changed)
    }

    /// One pass on a blocking thread, then metrics, logs, STATUS= and the status view. Returns
    /// whether it completed (inputs valid, output written) and, when the repository was valid,
    /// the live targets it defines. Logs exactly one summary line.
    /// Logs the repository's notes (what the walk skipped) and warnings (what Karmada accepts
    /// but likely does not do what its author meant, `policy::validate::warnings`) when they
    /// differ from the last pass's: once per change, not every pass.
    fn log_findings(&self, findings: Vec<String>) {
        let mut last = self.findings.lock().unwrap_or_else(|p| p.into_inner());
        if *last == findings {
            return;
        }
        for f in &findings {
            tracing::warn!(finding = %f, "policy repository");
        }
        if findings.is_empty() && !last.is_empty() {
            tracing::info!("policy repository: no notes or warnings any more");
        }
        *last = findings;
    }

    /// Logs the pass's unschedulable workloads and render failures that are new or whose
    /// reason changed (WARN), and those that went away (INFO); nothing for the same problem
    /// pass after pass.
    fn log_problems(&self, report: &reconcile::ReconcileReport) {
        let mut last = self.problems.lock().unwrap_or_else(|p| p.into_inner());
        let mut now = std::collections::BTreeMap::new();
        for p in report.unschedulable.iter().chain(&report.render_failures) {
            let key = (p.workload.to_string(), p.cluster.clone());
            if last.get(&key) != Some(&p.reason) {
                match &p.cluster {
                    None => {
                        tracing::warn!(workload = %p.workload, reason = %p.reason, "workload unschedulable; keeping its previous output")
                    }
                    Some(c) => {
                        tracing::warn!(workload = %p.workload, cluster = %c, reason = %p.reason, "render failed; keeping the previous file")
                    }
                }
            }
            now.insert(key, p.reason.clone());
        }
        for (workload, cluster) in last.keys().filter(|k| !now.contains_key(*k)) {
            match cluster {
                None => tracing::info!(%workload, "workload no longer unschedulable"),
                Some(c) => tracing::info!(%workload, cluster = %c, "render no longer fails"),
            }
        }
        *last = now;
    }

    /// One pass; `changed`: what may have changed in the policy directory since the last load
    /// ([`reading`]).
    async fn reconcile_once(
        &self,
        trigger: Trigger,
        view: &LiveView,
        changed: reconcile::Changed,
        waits: &mut Waits<'_, impl Stream<Item = Control> + Unpin>,
    ) -> Result<(bool, Option<Vec<Target>>), Stopping> {
        let started = Instant::now();
        self.heartbeat.pass_started(self.clock.now_ms());
        let r = Arc::clone(&self.current.reconciler);
        let profiles = Arc::clone(&self.current.profiles);
        let job = PassJob {
            reconciler: Arc::clone(&r),
            policy_dir: self.paths.policy_dir.clone(),
            output_dir: self.paths.output_dir.clone(),
            cfg: self.cfg.clone(),
            view: view.clone(),
            clock: Arc::clone(&self.clock),
            trigger,
            changed,
        };
        let task = tokio::task::spawn_blocking(move || job.run());
        let waited = self.wait_for(task, waits).await;
        self.heartbeat.pass_finished(self.clock.now_ms());
        // A pass that ended after the shutdown was asked for is reported as any other, then
        // the daemon stops.
        let (joined, stopping) = match waited {
            Waited::Done(joined, stopping) => (joined, stopping),
            Waited::Abandoned(stopping) => return Err(stopping),
        };
        let (joined, targets) = match joined {
            Ok((r, t, offline)) => {
                if let Some((polls, findings)) = offline {
                    self.metrics.record_offline(polls.iter().map(|(c, took)| (c.as_str(), *took)));
                    self.log_findings(findings);
                }
                (Ok(r), t)
            }
            Err(e) => (Err(e), None),
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let at_ms = self.clock.now_ms();
        let pass = |outcome: PassOutcome| PassStatus { trigger, at_ms, duration_ms, outcome };
        let status = &self.status_tx;
        let metrics = &self.metrics;
        let ok = match joined {
            Ok(Ok(Done { report, inputs, clusters, planner, placed })) => {
                self.log_problems(&report);
                let ph = &report.phases;
                tracing::info!(
                    trigger = %trigger,
                    workloads = report.workloads,
                    scheduled = report.scheduled,
                    unschedulable = report.unschedulable.len(),
                    decided = report.decided,
                    full_check = report.full_check,
                    decided_new = report.redecided.new,
                    decided_inputs = report.redecided.inputs,
                    decided_capacity = report.redecided.capacity,
                    capacity_checked_kept = report.redecided.outcome_stood,
                    files_written = report.files_written,
                    files_removed = report.files_removed,
                    history_records = report.history_records,
                    duration_ms,
                    load_ms = ph.load.as_millis() as u64,
                    poll_ms = ph.poll.as_millis() as u64,
                    schedule_ms = ph.schedule.as_millis() as u64,
                    decide_ms = ph.decide.as_millis() as u64,
                    render_ms = ph.render.as_millis() as u64,
                    publish_ms = ph.publish.as_millis() as u64,
                    record_ms = ph.record.as_millis() as u64,
                    "reconcile done"
                );
                systemd::status(&report.summary());
                if let Some(storm) = &report.stability.storm {
                    tracing::warn!(%storm, "failover suppressed by the storm guard");
                }
                metrics.record_policy_errors(0);
                metrics.record_pass(&PassOutcome::Ok, Some(&report));
                *self.rollout_objects.lock().unwrap_or_else(|p| p.into_inner()) = report.rollout_objects.clone();
                let clusters = clusters.unwrap_or_else(|error| {
                    tracing::warn!(%error, "cannot read cluster status from the store");
                    Default::default()
                });
                status.send_modify(|v| {
                    let mut next = StatusView::clone(&**v);
                    next.ready = true;
                    next.last_pass = Some(pass(PassOutcome::Ok));
                    next.last_success_ms = Some(at_ms);
                    next.last_report = Some(report);
                    next.policy_errors = 0;
                    next.clusters = clusters;
                    next.inputs = Some(inputs);
                    next.profiles = Some(profiles);
                    next.planner = Some(planner);
                    next.placed = placed;
                    next.passes += 1;
                    *v = Arc::new(next);
                });
                true
            }
            // A file that cannot be read is the machine's failure, not the repository's.
            Ok(Err(reconcile::ReconcileError::Invalid(errors))) if errors.iter().any(|e| e.io) => {
                let io: Vec<&crate::policy::LoadError> = errors.iter().filter(|e| e.io).collect();
                for e in &io {
                    tracing::error!(error = %e, "cannot read the policy repository");
                }
                let message = format!("cannot read the policy repository: {}", io[0]);
                tracing::error!(
                    trigger = %trigger,
                    errors = io.len(),
                    duration_ms,
                    "policy repository unreadable (I/O); output left as it was"
                );
                systemd::status(&message);
                let outcome = PassOutcome::Failed { message };
                metrics.record_pass(&outcome, None);
                publish_failure(status, pass(outcome), None);
                false
            }
            Ok(Err(reconcile::ReconcileError::Invalid(errors))) => {
                for e in &errors {
                    tracing::error!(error = %e, "invalid policy input");
                }
                let msg = format!("{} invalid input(s); keeping the last good output", errors.len());
                tracing::error!(
                    trigger = %trigger,
                    errors = errors.len(),
                    duration_ms,
                    "policy repository invalid; output left as it was"
                );
                systemd::status(&msg);
                metrics.record_policy_errors(errors.len());
                let first = errors.first().map(ToString::to_string).unwrap_or_default();
                let outcome = PassOutcome::Invalid { errors: errors.len(), first };
                metrics.record_pass(&outcome, None);
                publish_failure(status, pass(outcome), Some(errors.len()));
                false
            }
            Ok(Err(reconcile::ReconcileError::Fenced { reason, workloads, scheduled })) => {
                tracing::info!(trigger = %trigger, workloads, scheduled, duration_ms, reason = %reason, "reconcile done in shadow; nothing published");
                systemd::status(&format!("standby: {reason}"));
                let outcome = PassOutcome::Shadow { reason };
                metrics.record_pass(&outcome, None);
                status.send_modify(|v| {
                    let mut next = StatusView::clone(&**v);
                    // A standby serves the read API from its own store: ready.
                    next.ready = true;
                    next.last_pass = Some(pass(outcome));
                    next.passes += 1;
                    *v = Arc::new(next);
                });
                true
            }
            Ok(Err(
                error @ (reconcile::ReconcileError::Stopped
                | reconcile::ReconcileError::Publish(crate::publish::PublishError::Stopped { .. })),
            )) => {
                tracing::info!(trigger = %trigger, %error, duration_ms, "pass stopped for the shutdown");
                false
            }
            Ok(Err(error)) => {
                tracing::error!(trigger = %trigger, %error, duration_ms, "reconcile failed; output left as it was");
                // Git mode: the remote moved under this leader. Fetch, adopt and decide again
                // (the takeover, once), rather than push the same rejected commit every pass.
                if let (reconcile::ReconcileError::Git(crate::publish::git::GitError::Rejected { .. }), Some(ha)) =
                    (&error, &self.ha)
                {
                    tracing::warn!("the remote moved: syncing from it and deciding again before the next publish");
                    ha.handle.readopt();
                }
                systemd::status(&format!("reconcile failed: {error}"));
                let outcome = PassOutcome::Failed { message: error.to_string() };
                metrics.record_pass(&outcome, None);
                publish_failure(status, pass(outcome), None);
                false
            }
            Err(error) => {
                tracing::error!(trigger = %trigger, %error, duration_ms, "reconcile task panicked");
                let outcome = PassOutcome::Failed { message: format!("reconcile task panicked: {error}") };
                metrics.record_pass(&outcome, None);
                publish_failure(status, pass(outcome), None);
                false
            }
        };
        match stopping {
            Some(stopping) => Err(stopping),
            None => Ok((ok, targets)),
        }
    }
}

/// How a wait for a pass ([`Daemon::wait_for`]) ended.
enum Waited<T> {
    /// The pass ended (and a shutdown was asked for meanwhile, when `Some`).
    Done(Result<T, tokio::task::JoinError>, Option<Stopping>),
    /// A shutdown came and the pass did not end within its grace: it is left running.
    Abandoned(Stopping),
}

/// What a wait during a pass ([`Daemon::wait_for`]) needs of the loop.
struct Waits<'a, S> {
    control: &'a mut S,
    beat: &'a mut tokio::time::Interval,
    /// Controls that came meanwhile (the loop takes them after the pass).
    deferred: &'a mut std::collections::VecDeque<Control>,
}

/// A shutdown: when it was asked for, and whether a pass was left running.
struct Stopping {
    at: tokio::time::Instant,
    pass_running: bool,
}

impl From<Option<Control>> for Event {
    fn from(c: Option<Control>) -> Event {
        match c {
            Some(Control::Reload) => Event::Reload,
            Some(Control::PolicyChanged) => Event::PolicyChanged,
            Some(Control::Tick) => Event::Tick,
            Some(Control::Shutdown(reason)) => Event::Shutdown(reason),
            None => Event::Shutdown("control stream ended"),
        }
    }
}

/// The reconcile timer; its first tick (immediate) is taken: the startup pass covers it.
async fn interval(every: Duration) -> tokio::time::Interval {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    ticker
}

/// Sends the poller off for a round if it is home and there is something to poll.
fn start_round(
    poller: &mut Option<Box<Poller>>,
    targets: &[Target],
    tx: &mpsc::Sender<(Box<Poller>, RoundReport)>,
) -> bool {
    if targets.is_empty() {
        return false;
    }
    let Some(mut p) = poller.take() else { return false };
    let targets = targets.to_vec();
    let tx = tx.clone();
    tokio::spawn(async move {
        let report = p.round(&targets).await;
        let _ = tx.send((p, report)).await;
    });
    true
}

fn log_round(report: &RoundReport) {
    for (cluster, failures) in &report.recovered {
        tracing::info!(cluster = %cluster, failed_polls = failures, "poll succeeded again; the cluster recovered");
    }
    for (cluster, error, retry) in &report.failed {
        tracing::warn!(
            cluster = %cluster,
            kind = error.kind(),
            error = %error,
            retry_in_ms = retry.as_millis() as u64,
            "poll failed; keeping the cluster's last snapshot"
        );
    }
    tracing::debug!(
        ok = report.ok.len(),
        failed = report.failed.len(),
        skipped = report.skipped.len(),
        changed = report.changed,
        "poll round done"
    );
}

/// The snapshot builds of a load's offline members: a live member's Cluster object is built
/// too, but the poll is its observation (`fedsched_polls_total{outcome="offline"}` counted
/// every live member on every pass).
fn offline_only(polls: &[(String, Duration)], live: &[Target]) -> Vec<(String, Duration)> {
    let live: std::collections::BTreeSet<&str> = live.iter().map(|t| t.name.as_str()).collect();
    polls.iter().filter(|(c, _)| !live.contains(c.as_str())).cloned().collect()
}

fn live_targets(cfg: &Config, set: &crate::policy::PolicySet) -> Vec<Target> {
    let (t, unknown) = targets(cfg, set);
    for name in unknown {
        tracing::warn!(cluster = %name, "[clusters.{name}] has no Cluster object in the policy repository; not polled");
    }
    t
}

/// How long a pass may go on trusting the policy watch before one walks the directory anyway
/// (a change the watch cannot see: a network file system, a directory it could not add).
pub const WALK_AT_LEAST_EVERY_MS: u64 = 10 * 60 * 1000;

/// What the pass of `trigger` takes as changed in the policy directory (how it reads it:
/// [`reconcile::Reconciler::load_inputs`]). `changes`: what the watch saw since the last
/// pass ([`watch::PolicyWatch::take_changes`], taken before the read); `None`: no watch.
/// Without a watch, for every trigger but a watch event (`policy-change`), the timer and a
/// poll round (`cluster-change`), and when the last walk is [`WALK_AT_LEAST_EVERY_MS`] old:
/// not known (a walk). Otherwise what the watch saw: nothing (the timer and a poll round take
/// the last good inputs again: a quiet daemon does not stat every file of the repository on
/// every pass; a watch event whose changes an earlier pass took walks, as before), the files
/// it named (read without a walk when they are all files the last walk read), or not known.
pub fn reading(
    changes: Option<reconcile::Changed>,
    trigger: Trigger,
    last_walk_ms: Option<u64>,
    now_ms: u64,
) -> reconcile::Changed {
    use reconcile::Changed;
    let Some(changes) = changes else { return Changed::Unknown };
    let stale = last_walk_ms.is_none_or(|at| now_ms.saturating_sub(at) >= WALK_AT_LEAST_EVERY_MS);
    match (trigger, changes) {
        _ if stale => Changed::Unknown,
        (Trigger::Timer | Trigger::ClusterChange, changes) => changes,
        (Trigger::PolicyChange, Changed::Files(files)) => Changed::Files(files),
        _ => Changed::Unknown,
    }
}

fn start_watch(paths: &Paths, ignored: Vec<PathBuf>, tx: mpsc::Sender<()>) -> Option<watch::PolicyWatch> {
    match watch::watch(&paths.policy_dir, ignored, tx) {
        Ok(w) => Some(w),
        Err(error) => {
            tracing::warn!(%error, policy_dir = %paths.policy_dir.display(), "cannot watch the policy directory; relying on the periodic reconcile");
            None
        }
    }
}

/// Starts the HTTP listener when `[http] listen` is set. A token file that cannot be read
/// stops the daemon (never serve unprotected what was meant to be protected); an address
/// that cannot be bound is logged and the daemon runs on without the listener.
async fn start_api(
    cfg: &Config,
    paths: &Paths,
    store: &Store,
    status: status_watch::Receiver<Arc<StatusView>>,
    heartbeat: &Arc<Heartbeat>,
    metrics: &Arc<Metrics>,
    clock: &Arc<dyn Clock>,
) -> anyhow::Result<Option<crate::api::Server>> {
    let addr = match cfg.http.listen_addr() {
        Ok(Some(addr)) => addr,
        Ok(None) => return Ok(None),
        Err(message) => anyhow::bail!("http.listen: {message}"),
    };
    let token = match &cfg.http.token_file {
        Some(path) => Some(crate::api::Token::from_file(path)?),
        None => None,
    };
    if token.is_none() && !addr.ip().is_loopback() {
        tracing::warn!(%addr, "the HTTP API listens beyond loopback without http.token_file");
    }
    let state = crate::api::ApiState {
        store: store.clone(),
        status,
        heartbeat: Arc::clone(heartbeat),
        heartbeat_timeout: cfg.http.heartbeat_timeout,
        token,
        metrics_require_token: cfg.http.metrics_require_token,
        metrics: Arc::clone(metrics),
        clock: Arc::clone(clock),
        output_dir: paths.output_dir.clone(),
        plans: Default::default(),
    };
    match crate::api::start_with(addr, state, crate::api::Limits::from_config(&cfg.http)).await {
        Ok(server) => {
            if let Err(error) = crate::api::write_addr_file(&paths.state_dir, server.addr) {
                tracing::warn!(%error, "cannot write the HTTP address file");
            }
            tracing::info!(addr = %server.addr, "HTTP listener started");
            Ok(Some(server))
        }
        // A daemon without its API would look healthy to nobody and hide from every probe:
        // the start fails, naming the address (a port in use says so).
        Err(error) => Err(anyhow::Error::new(error).context("the HTTP listener cannot start")),
    }
}

/// Test hook (debug builds only): `FEDSCHED_TEST_STALL_RECONCILE_MS` makes every pass but the
/// startup pass sleep that long, to show that a stuck pass stops the watchdog and heartbeat.
fn test_stall(trigger: Trigger) {
    #[cfg(debug_assertions)]
    if trigger != Trigger::Startup
        && let Some(ms) = std::env::var("FEDSCHED_TEST_STALL_RECONCILE_MS").ok().and_then(|v| v.parse::<u64>().ok())
    {
        tracing::warn!(ms, "test hook: stalling the reconcile");
        std::thread::sleep(Duration::from_millis(ms));
    }
    #[cfg(not(debug_assertions))]
    let _ = trigger;
}

/// A completed pass with what the status view needs.
/// One pass, as it runs on a blocking thread ([`Daemon::reconcile_once`]).
struct PassJob {
    reconciler: Arc<Reconciler>,
    policy_dir: PathBuf,
    output_dir: PathBuf,
    cfg: Config,
    view: LiveView,
    clock: Arc<dyn Clock>,
    trigger: Trigger,
    changed: reconcile::Changed,
}

/// What a pass gives back: its outcome, the live targets its repository names, and its
/// offline polls with the repository's findings (the last two when the repository loaded).
type PassOutput =
    (Result<Done, reconcile::ReconcileError>, Option<Vec<Target>>, Option<(Vec<(String, Duration)>, Vec<String>)>);

impl PassJob {
    fn run(self) -> PassOutput {
        let PassJob { reconciler: r, policy_dir, output_dir, cfg, view, clock, trigger, changed } = self;
        // The pass's scripts share one scope (their allowance; a script that keeps running
        // past its budget is not run again in it).
        Scope::enter(Some(Scope::new("this pass")), || {
            test_stall(trigger);
            let mut timings = PhaseTimings::default();
            let mut inputs = match r.load_inputs(&policy_dir, &mut timings, &changed) {
                Err(errors) => return (Err(reconcile::ReconcileError::Invalid(errors)), None, None),
                Ok(inputs) => inputs,
            };
            let findings = repository_findings(&inputs.set);
            let targets = live_targets(&cfg, &inputs.set);
            let offline = Some((offline_only(&inputs.offline_polls, &targets), findings));
            inputs.apply_live(&view, &r.store);
            let inputs = Arc::new(inputs);
            let result = r.reconcile(&inputs, &output_dir, trigger, clock.now_ms()).map(|mut report| {
                report.phases.load += timings.load;
                report.phases.poll += timings.poll;
                // The pass's own placements (shared `Arc`s, no store read) for the read side:
                // the web view and the API index them on their own threads, on first use.
                use crate::views::{placed::Placed, status::cluster_statuses};
                let placed = r.placements().map(|p| Arc::new(Placed::new(p)));
                let clusters = match &placed {
                    Some(p) => cluster_statuses(&r.store, p, &inputs),
                    None => Placed::from_store(&r.store).and_then(|p| cluster_statuses(&r.store, &p, &inputs)),
                };
                let planner = Arc::new(crate::views::plan::Planner { reconciler: Arc::downgrade(&r), live: view });
                Done { report, inputs, clusters, planner, placed }
            });
            (result, Some(targets), offline)
        })
    }
}

struct Done {
    report: reconcile::ReconcileReport,
    inputs: Arc<reconcile::Inputs>,
    clusters: Result<std::collections::BTreeMap<String, crate::views::status::ClusterStatus>, crate::store::StoreError>,
    planner: Arc<crate::views::plan::Planner>,
    placed: Option<Arc<crate::views::placed::Placed>>,
}

fn publish_failure(status: &status_watch::Sender<Arc<StatusView>>, pass: PassStatus, policy_errors: Option<usize>) {
    status.send_modify(|v| {
        let mut next = StatusView::clone(&**v);
        next.last_pass = Some(pass);
        if let Some(n) = policy_errors {
            next.policy_errors = n;
        }
        next.passes += 1;
        *v = Arc::new(next);
    });
}

/// The notes and warnings of a loaded repository, as `check` prints them.
fn repository_findings(set: &crate::policy::PolicySet) -> Vec<String> {
    let notes = set.notes.iter().map(|n| format!("note: {n}"));
    let warnings = crate::policy::validate::warnings(set).into_iter().map(|w| format!("warning: {w}"));
    notes.chain(warnings).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a watch every pass walks; with one, a timer pass or a poll round walks only after
    /// an overflow or an error the watch saw, or once the last walk is old, and reads the files
    /// the watch named; a watch event reads the files it named; every other trigger walks.
    #[test]
    fn a_quiet_watch_spares_timer_and_round_passes_the_walk() {
        use reconcile::Changed;
        let t = 1_000_000;
        let named = || Changed::Files(vec!["apps/a.yaml".into()]);
        for trigger in [
            Trigger::Timer,
            Trigger::ClusterChange,
            Trigger::Startup,
            Trigger::PolicyChange,
            Trigger::Sighup,
            Trigger::Takeover,
        ] {
            assert_eq!(reading(None, trigger, Some(t), t), Changed::Unknown, "{trigger} without a watch");
            assert_eq!(
                reading(Some(Changed::Unknown), trigger, Some(t), t),
                Changed::Unknown,
                "{trigger} after an overflow"
            );
            assert_eq!(
                reading(Some(Changed::Nothing), trigger, None, t),
                Changed::Unknown,
                "{trigger} before any walk"
            );
            let stale = t + WALK_AT_LEAST_EVERY_MS;
            assert_eq!(reading(Some(named()), trigger, Some(t), stale), Changed::Unknown, "{trigger} with an old walk");
        }
        for trigger in [Trigger::Timer, Trigger::ClusterChange] {
            assert_eq!(reading(Some(Changed::Nothing), trigger, Some(t), t + 1), Changed::Nothing, "{trigger}, quiet");
            let late = t + WALK_AT_LEAST_EVERY_MS - 1;
            assert_eq!(reading(Some(Changed::Nothing), trigger, Some(t), late), Changed::Nothing, "{trigger}, quiet");
            assert_eq!(reading(Some(named()), trigger, Some(t), t + 1), named(), "{trigger}, a file named");
        }
        assert_eq!(reading(Some(named()), Trigger::PolicyChange, Some(t), t + 1), named());
        assert_eq!(reading(Some(Changed::Nothing), Trigger::PolicyChange, Some(t), t + 1), Changed::Unknown);
        for trigger in [Trigger::Startup, Trigger::Sighup, Trigger::Takeover] {
            assert_eq!(reading(Some(Changed::Nothing), trigger, Some(t), t + 1), Changed::Unknown, "{trigger}, quiet");
            assert_eq!(reading(Some(named()), trigger, Some(t), t + 1), Changed::Unknown, "{trigger}, a file named");
        }
    }
}
