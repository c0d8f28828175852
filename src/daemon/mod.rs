//! The daemon: one loop that owns all state and reconciles on policy changes, on a timer and
//! on SIGHUP, and shuts down cleanly on SIGTERM / SIGINT.
//!
//! Owns: the event loop, the policy watch ([`watch`]), signals, and systemd notification
//! ([`systemd`]). The loop is the single writer; each reconcile runs on a blocking thread and
//! the loop waits for it, so a stuck reconcile also stops the watchdog pings. Invalid policy
//! input keeps the last good output: nothing is written until the repository is valid again.

pub mod systemd;
pub mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use futures_util::StreamExt;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook_tokio::Signals;
use tokio::sync::mpsc;

use crate::config::{Config, Paths};
use crate::reconcile::{self, Reconciler};
use crate::store::Store;

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

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
    PolicyChanged,
    Tick,
    Reload,
    Shutdown(&'static str),
    Watchdog,
}

/// The event loop.
pub async fn run(mut cfg: Config, config_path: Option<PathBuf>, paths: Paths) -> anyhow::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP]).context("cannot install signal handlers")?;
    let state_dir = paths.state_dir.clone();
    let store = tokio::task::spawn_blocking(move || Store::open(&state_dir))
        .await
        .context("store task failed")?
        .context("cannot open the store")?;
    let profiles = cfg.profiles()?;
    let mut reconciler = Reconciler::new(store.clone()).with_profiles(profiles);
    reconciler.publish = crate::reconcile::PublishSettings::from_config(&cfg, false);
    let reconciler = Arc::new(reconciler);
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
    let watchdog_every = systemd::watchdog_interval().map(|d| d / 2).unwrap_or(Duration::from_secs(3600));
    let mut watchdog = tokio::time::interval(watchdog_every);

    let mut ready = false;
    let mut pending: Option<&'static str> = Some("startup");
    loop {
        if let Some(trigger) = pending.take() {
            let ok = reconcile_once(&reconciler, &paths, trigger).await;
            systemd::watchdog();
            if ok && !ready {
                ready = true;
                systemd::ready("first reconcile done");
            }
        }
        let event = tokio::select! {
            Some(()) = fs_rx.recv() => Event::PolicyChanged,
            _ = ticker.tick() => Event::Tick,
            _ = watchdog.tick() => Event::Watchdog,
            sig = signals.next() => match sig {
                Some(SIGHUP) => Event::Reload,
                Some(SIGINT) => Event::Shutdown("SIGINT"),
                _ => Event::Shutdown("SIGTERM"),
            },
        };
        match event {
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
            Event::Tick => pending = Some("timer"),
            Event::Watchdog => systemd::watchdog(),
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
                            if new.reconcile.interval != cfg.reconcile.interval {
                                ticker = tokio::time::interval(new.reconcile.interval);
                                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                                ticker.tick().await;
                            }
                            cfg = Config {
                                policy_dir: cfg.policy_dir.clone(),
                                output_dir: cfg.output_dir.clone(),
                                state_dir: cfg.state_dir.clone(),
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

fn start_watch(paths: &Paths, ignored: Vec<PathBuf>, tx: mpsc::Sender<()>) -> Option<watch::PolicyWatch> {
    match watch::watch(&paths.policy_dir, ignored, tx) {
        Ok(w) => Some(w),
        Err(error) => {
            tracing::warn!(%error, policy_dir = %paths.policy_dir.display(), "cannot watch the policy directory; relying on the periodic reconcile");
            None
        }
    }
}

/// One pass on a blocking thread. Returns whether it completed (inputs valid, output written).
async fn reconcile_once(reconciler: &Arc<Reconciler>, paths: &Paths, trigger: &'static str) -> bool {
    let r = Arc::clone(reconciler);
    let policy_dir = paths.policy_dir.clone();
    let output_dir = paths.output_dir.clone();
    let joined = tokio::task::spawn_blocking(move || match reconcile::load_inputs_with(&policy_dir, &r.profiles) {
        Err(errors) => Err(reconcile::ReconcileError::Invalid(errors)),
        Ok(inputs) => r.reconcile(&inputs, &output_dir, trigger, now_ms()),
    })
    .await;
    match joined {
        Ok(Ok(report)) => {
            for p in &report.unschedulable {
                tracing::warn!(workload = %p.workload, reason = %p.reason, "workload unschedulable; keeping its previous output");
            }
            for p in &report.render_failures {
                tracing::warn!(workload = %p.workload, cluster = p.cluster.as_deref().unwrap_or(""), reason = %p.reason, "render failed; keeping the previous file");
            }
            tracing::info!(
                trigger,
                workloads = report.workloads,
                scheduled = report.scheduled,
                unschedulable = report.unschedulable.len(),
                files_written = report.files_written,
                files_removed = report.files_removed,
                history_records = report.history_records,
                duration_ms = report.duration_ms as u64,
                "reconcile done"
            );
            systemd::status(&report.summary());
            true
        }
        Ok(Err(reconcile::ReconcileError::Invalid(errors))) => {
            for e in &errors {
                tracing::error!(error = %e, "invalid policy input");
            }
            let msg = format!("{} invalid input(s); keeping the last good output", errors.len());
            tracing::error!(trigger, errors = errors.len(), "policy repository invalid; output left as it was");
            systemd::status(&msg);
            false
        }
        Ok(Err(error)) => {
            tracing::error!(trigger, %error, "reconcile failed; output left as it was");
            systemd::status(&format!("reconcile failed: {error}"));
            false
        }
        Err(error) => {
            tracing::error!(trigger, %error, "reconcile task panicked");
            false
        }
    }
}
