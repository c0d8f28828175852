//! The daemon: one loop that owns all state and reconciles on policy changes, on a timer and
//! on SIGHUP, and shuts down cleanly on SIGTERM / SIGINT.
//!
//! Owns: the event loop, the policy watch ([`watch`]), signals, and systemd notification
//! ([`systemd`]). The loop is the single writer; each reconcile runs on a blocking thread and
//! the loop waits for it, so a stuck reconcile also stops the watchdog pings and the
//! heartbeat that `/healthz` reads. Invalid policy input keeps the last good output: nothing
//! is written until the repository is valid again. After each pass the loop publishes a
//! [`StatusView`] and records metrics; the HTTP listener ([`crate::api`]) reads those and the
//! store handle, never writes.
//!
//! Live members: every `reconcile.interval` (and at start) the loop hands the poller to a task
//! that polls the members ([`crate::members::live::Poller::round`]); the round comes back as
//! an event, and the reconcile that follows uses the latest view of every cluster. A round in
//! flight never blocks the loop (signals, watchdog, policy changes go on).

pub mod systemd;
pub mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::util::clock::now_ms;

use anyhow::Context;
use futures_util::StreamExt;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook_tokio::Signals;
use tokio::sync::{mpsc, watch as status_watch};

use crate::config::{Config, Paths};
use crate::members::live::{LiveView, Poller, RoundReport, Target, targets};
use crate::reconcile::{self, PhaseTimings, Reconciler};
use crate::store::Store;
use crate::views::status::{Heartbeat, PassOutcome, PassStatus, StatusView};

/// Runs the daemon on its own runtime until a shutdown signal.
pub fn run_blocking(cfg: Config, config_path: Option<PathBuf>, paths: Paths) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(run(cfg, config_path, paths))
}

enum Event {
    Polled(Box<Poller>, RoundReport),
    PolicyChanged,
    Tick,
    Reload,
    Shutdown(&'static str),
    Heartbeat,
}

/// The event loop.
pub async fn run(mut cfg: Config, config_path: Option<PathBuf>, paths: Paths) -> anyhow::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP]).context("cannot install signal handlers")?;
    let state_dir = paths.state_dir.clone();
    let store = tokio::task::spawn_blocking(move || Store::open(&state_dir))
        .await
        .context("store task failed")?
        .context("cannot open the store")?;
    let settings = reconcile::Settings::from_config(&cfg, false)?;
    let reconciler = Arc::new(Reconciler::new(store.clone(), settings));
    let heartbeat = Arc::new(Heartbeat::new(now_ms()));
    let (status_tx, status_rx) =
        status_watch::channel(Arc::new(StatusView { started_at_ms: now_ms(), ..Default::default() }));
    let api = start_api(&cfg, &paths, &store, status_rx, &heartbeat).await?;
    tracing::info!(
        policy_dir = %paths.policy_dir.display(),
        output_dir = %paths.output_dir.display(),
        state_dir = %paths.state_dir.display(),
        "fedsched started"
    );

    let (fs_tx, mut fs_rx) = mpsc::channel::<()>(1);
    let ignored = vec![paths.output_dir.clone(), paths.state_dir.clone()];
    let policy_watch = start_watch(&paths, ignored.clone(), fs_tx.clone());
    let mut ticker = tokio::time::interval(cfg.reconcile.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await; // the first tick is immediate; the startup pass covers it
    // One timer pets systemd's watchdog and stamps the heartbeat; both stop while a pass is
    // stuck, because the loop is waiting for it.
    let mut beat_every = (cfg.http.heartbeat_timeout / 4).max(Duration::from_millis(10));
    if let Some(w) = systemd::watchdog_interval() {
        beat_every = beat_every.min(w / 2);
    }
    let mut beat = tokio::time::interval(beat_every);

    // Live members: the poller travels to a task for each round and comes back with it.
    let (poll_tx, mut poll_rx) = mpsc::channel::<(Box<Poller>, RoundReport)>(1);
    let mut poller: Option<Box<Poller>> = Some(Box::new(Poller::new(cfg.poll.clone(), cfg.reconcile.interval)));
    let mut view = LiveView::default();
    let mut live_targets: Vec<Target> =
        if cfg.clusters.is_empty() { Vec::new() } else { initial_targets(&cfg, &paths).await };

    let mut ready = false;
    let mut pending: Option<&'static str> = None;
    // After a round: the trigger of the reconcile that follows it.
    let mut after_round: Option<&'static str> = Some("startup");
    if !start_round(&mut poller, &live_targets, &poll_tx) {
        pending = after_round.take();
    }
    loop {
        heartbeat.beat(now_ms());
        if let Some(trigger) = pending.take() {
            let (ok, new_targets) = reconcile_once(&reconciler, &paths, trigger, &status_tx, &cfg, &view).await;
            heartbeat.beat(now_ms());
            systemd::watchdog();
            if ok && !ready {
                ready = true;
                systemd::ready("first reconcile done");
            }
            if let Some(t) = new_targets
                && t != live_targets
            {
                live_targets = t;
                if after_round.is_none() && start_round(&mut poller, &live_targets, &poll_tx) {
                    after_round = Some("cluster-change");
                }
            }
        }
        let event = tokio::select! {
            Some((p, report)) = poll_rx.recv() => Event::Polled(p, report),
            Some(()) = fs_rx.recv() => Event::PolicyChanged,
            _ = ticker.tick() => Event::Tick,
            _ = beat.tick() => Event::Heartbeat,
            sig = signals.next() => match sig {
                Some(SIGHUP) => Event::Reload,
                Some(SIGINT) => Event::Shutdown("SIGINT"),
                _ => Event::Shutdown("SIGTERM"),
            },
        };
        match event {
            Event::Polled(mut p, report) => {
                log_round(&report);
                p.reconfigure(cfg.poll.clone(), cfg.reconcile.interval);
                view = p.view().clone();
                poller = Some(p);
                match after_round.take() {
                    Some(trigger) => pending = Some(trigger),
                    None if report.changed => pending = Some("cluster-change"),
                    None => {}
                }
            }
            Event::PolicyChanged => {
                // Wait for quiet: a git checkout or a sync that swaps many files, even across
                // several watcher batches, becomes one reconcile.
                // Bounded, so that a directory that never stops changing still gets reconciled.
                let deadline = tokio::time::Instant::now() + cfg.reconcile.debounce * 20;
                while tokio::time::Instant::now() < deadline {
                    match tokio::time::timeout(cfg.reconcile.debounce, fs_rx.recv()).await {
                        Ok(Some(())) => continue,
                        _ => break,
                    }
                }
                pending = Some("policy-change");
            }
            Event::Tick => {
                // With live members, poll first and reconcile on the round's return.
                if after_round.is_some() || start_round(&mut poller, &live_targets, &poll_tx) {
                    after_round = Some("timer");
                } else {
                    pending = Some("timer");
                }
            }
            Event::Heartbeat => systemd::watchdog(),
            Event::Reload => {
                systemd::reloading();
                if let Some(path) = &config_path {
                    match Config::load(path) {
                        Ok(new) => {
                            if new.policy_dir != cfg.policy_dir
                                || new.output_dir != cfg.output_dir
                                || new.state_dir != cfg.state_dir
                            {
                                tracing::warn!("directory settings changed; they take effect at the next restart");
                            }
                            if new.http != cfg.http {
                                tracing::warn!("[http] settings changed; they take effect at the next restart");
                            }
                            if new.reconcile.interval != cfg.reconcile.interval {
                                ticker = tokio::time::interval(new.reconcile.interval);
                                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                                ticker.tick().await;
                            }
                            cfg = Config {
                                policy_dir: cfg.policy_dir.clone(),
                                output_dir: cfg.output_dir.clone(),
                                state_dir: cfg.state_dir.clone(),
                                http: cfg.http.clone(),
                                ..new
                            };
                            tracing::info!(config = %path.display(), "configuration reloaded");
                        }
                        Err(error) => {
                            tracing::error!(%error, "configuration reload failed; keeping the previous configuration")
                        }
                    }
                }
                systemd::ready("reloaded");
                pending = Some("sighup");
            }
            Event::Shutdown(signal) => {
                tracing::info!(signal, "shutting down");
                break;
            }
        }
    }
    systemd::stopping();
    drop(policy_watch);
    if let Some(server) = api {
        server.shutdown(cfg.reconcile.shutdown_timeout).await;
        let _ = std::fs::remove_file(paths.state_dir.join(crate::api::ADDR_FILE));
    }
    let flush = tokio::task::spawn_blocking(move || store.flush());
    match tokio::time::timeout(cfg.reconcile.shutdown_timeout, flush).await {
        Ok(Ok(Ok(_))) => {}
        Ok(Ok(Err(error))) => tracing::error!(%error, "store flush failed at shutdown"),
        Ok(Err(error)) => tracing::error!(%error, "store flush task failed"),
        Err(_) => tracing::error!("store flush timed out at shutdown"),
    }
    tracing::info!("fedsched stopped");
    Ok(())
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

/// The live targets from the policy repository as it is at start (empty if it is invalid:
/// the startup reconcile reports why).
async fn initial_targets(cfg: &Config, paths: &Paths) -> Vec<Target> {
    let dir = paths.policy_dir.clone();
    let cfg = cfg.clone();
    let load = move || {
        let inputs = reconcile::load_inputs(&dir).ok()?;
        record_offline_polls(&inputs);
        Some(live_targets(&cfg, &inputs.set))
    };
    match tokio::task::spawn_blocking(load).await {
        Ok(Some(t)) => t,
        _ => Vec::new(),
    }
}

/// Counts the offline snapshots a load built as polls (outcome "offline").
fn record_offline_polls(inputs: &reconcile::Inputs) {
    for (cluster, took) in inputs.offline_polls.iter() {
        crate::metrics::record_poll(cluster, *took, crate::metrics::PollOutcome::Offline);
    }
}

fn live_targets(cfg: &Config, set: &crate::policy::PolicySet) -> Vec<Target> {
    let (t, unknown) = targets(cfg, set);
    for name in unknown {
        tracing::warn!(cluster = %name, "[clusters.{name}] has no Cluster object in the policy repository; not polled");
    }
    t
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
        model: Arc::new(cfg.model.settings()),
    };
    match crate::api::start(addr, state).await {
        Ok(server) => {
            if let Err(error) = crate::api::write_addr_file(&paths.state_dir, server.addr) {
                tracing::warn!(%error, "cannot write the HTTP address file");
            }
            tracing::info!(addr = %server.addr, "HTTP listener started");
            Ok(Some(server))
        }
        Err(error) => {
            tracing::error!(%error, "HTTP listener not started; status API and metrics are unavailable");
            Ok(None)
        }
    }
}

/// Test hook (debug builds only): `FEDSCHED_TEST_STALL_RECONCILE_MS` makes every pass but the
/// startup pass sleep that long, to show that a stuck pass stops the watchdog and heartbeat.
fn test_stall(trigger: &str) {
    #[cfg(debug_assertions)]
    if trigger != "startup"
        && let Some(ms) = std::env::var("FEDSCHED_TEST_STALL_RECONCILE_MS").ok().and_then(|v| v.parse::<u64>().ok())
    {
        tracing::warn!(ms, "test hook: stalling the reconcile");
        std::thread::sleep(Duration::from_millis(ms));
    }
    #[cfg(not(debug_assertions))]
    let _ = trigger;
}

/// A completed pass with what the status view needs.
struct Done {
    report: reconcile::ReconcileReport,
    inputs: Arc<reconcile::Inputs>,
    clusters: Result<std::collections::BTreeMap<String, crate::views::status::ClusterStatus>, crate::store::StoreError>,
}

/// One pass on a blocking thread, then metrics, logs, STATUS= and the status view. Returns
/// whether it completed (inputs valid, output written) and, when the repository was valid, the
/// live targets it defines. Logs exactly one summary line.
async fn reconcile_once(
    reconciler: &Arc<Reconciler>,
    paths: &Paths,
    trigger: &'static str,
    status: &status_watch::Sender<Arc<StatusView>>,
    cfg: &Config,
    view: &LiveView,
) -> (bool, Option<Vec<Target>>) {
    let started = Instant::now();
    let r = Arc::clone(reconciler);
    let policy_dir = paths.policy_dir.clone();
    let output_dir = paths.output_dir.clone();
    let cfg = cfg.clone();
    let view = view.clone();
    let joined = tokio::task::spawn_blocking(move || {
        test_stall(trigger);
        let mut timings = PhaseTimings::default();
        let mut inputs = match r.load_inputs(&policy_dir, &mut timings) {
            Err(errors) => return (Err(reconcile::ReconcileError::Invalid(errors)), None),
            Ok(inputs) => inputs,
        };
        record_offline_polls(&inputs);
        let targets = live_targets(&cfg, &inputs.set);
        inputs.apply_live(&view, &r.store);
        let inputs = Arc::new(inputs);
        let result = r.reconcile(&inputs, &output_dir, trigger, now_ms()).map(|mut report| {
            report.phases.load += timings.load;
            report.phases.poll += timings.poll;
            let clusters = crate::views::status::cluster_statuses(&r.store, &inputs);
            Done { report, inputs, clusters }
        });
        (result, Some(targets))
    })
    .await;
    let (joined, targets) = match joined {
        Ok((r, t)) => (Ok(r), t),
        Err(e) => (Err(e), None),
    };
    let duration_ms = started.elapsed().as_millis() as u64;
    let at_ms = now_ms();
    let pass = |outcome: PassOutcome| PassStatus { trigger: trigger.to_string(), at_ms, duration_ms, outcome };
    let ok = match joined {
        Ok(Ok(Done { report, inputs, clusters })) => {
            for p in &report.unschedulable {
                tracing::warn!(workload = %p.workload, reason = %p.reason, "workload unschedulable; keeping its previous output");
            }
            for p in &report.render_failures {
                tracing::warn!(workload = %p.workload, cluster = p.cluster.as_deref().unwrap_or(""), reason = %p.reason, "render failed; keeping the previous file");
            }
            let ph = &report.phases;
            tracing::info!(
                trigger,
                workloads = report.workloads,
                scheduled = report.scheduled,
                unschedulable = report.unschedulable.len(),
                files_written = report.files_written,
                files_removed = report.files_removed,
                history_records = report.history_records,
                duration_ms,
                load_ms = ph.load.as_millis() as u64,
                poll_ms = ph.poll.as_millis() as u64,
                schedule_ms = ph.schedule.as_millis() as u64,
                render_ms = ph.render.as_millis() as u64,
                publish_ms = ph.publish.as_millis() as u64,
                record_ms = ph.record.as_millis() as u64,
                "reconcile done"
            );
            systemd::status(&report.summary());
            crate::metrics::record_policy_errors(0);
            for h in &report.held_clusters {
                crate::metrics::record_hold(&h.cluster);
            }
            crate::metrics::record_pass("ok", Some(&report));
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
                *v = Arc::new(next);
            });
            true
        }
        Ok(Err(reconcile::ReconcileError::Invalid(errors))) => {
            for e in &errors {
                tracing::error!(error = %e, "invalid policy input");
            }
            let msg = format!("{} invalid input(s); keeping the last good output", errors.len());
            tracing::error!(
                trigger,
                errors = errors.len(),
                duration_ms,
                "policy repository invalid; output left as it was"
            );
            systemd::status(&msg);
            crate::metrics::record_policy_errors(errors.len());
            crate::metrics::record_pass("invalid", None);
            publish_failure(status, pass(PassOutcome::Invalid { errors: errors.len() }), Some(errors.len()));
            false
        }
        Ok(Err(error)) => {
            tracing::error!(trigger, %error, duration_ms, "reconcile failed; output left as it was");
            systemd::status(&format!("reconcile failed: {error}"));
            crate::metrics::record_pass("failed", None);
            publish_failure(status, pass(PassOutcome::Failed { message: error.to_string() }), None);
            false
        }
        Err(error) => {
            tracing::error!(trigger, %error, duration_ms, "reconcile task panicked");
            crate::metrics::record_pass("failed", None);
            publish_failure(
                status,
                pass(PassOutcome::Failed { message: format!("reconcile task panicked: {error}") }),
                None,
            );
            false
        }
    };
    (ok, targets)
}

fn publish_failure(status: &status_watch::Sender<Arc<StatusView>>, pass: PassStatus, policy_errors: Option<usize>) {
    status.send_modify(|v| {
        let mut next = StatusView::clone(&**v);
        next.last_pass = Some(pass);
        if let Some(n) = policy_errors {
            next.policy_errors = n;
        }
        *v = Arc::new(next);
    });
}
