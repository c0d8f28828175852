//! A daemon instance in the world: the pass as `daemon::run`'s loop runs it — what the
//! policy watch saw ([`crate::daemon::reading`]), `Reconciler::load_inputs`, the
//! live view merged (`Inputs::apply_live`), `Reconciler::reconcile` — on its own store, with
//! the output directory claimed for its life (or, under `[ha]`, for its terms), the lease's
//! fence, and a kill switch in its publish. Start, stop, kill -9 and takeover are the
//! daemon's: the store opened and closed, `publish::claim_output`, `reconcile::take_over`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::Config;
use crate::members::live::{LiveData, LiveStatus, LiveView, PollError};
use crate::publish::{KillSwitch, OutputClaim};
use crate::reconcile::{Changed, Inputs, PhaseTimings, ReconcileError, ReconcileReport, Reconciler, Settings};
use crate::store::Store;

/// What one member answered a poll round.
pub type Answer = (String, Result<LiveData, PollError>);

/// One fedsched daemon of the world (two under `[ha]`).
pub struct Instance {
    pub name: &'static str,
    pub state_dir: PathBuf,
    /// Running: its reconciler (None while down).
    pub reconciler: Option<Arc<Reconciler>>,
    claim: Option<OutputClaim>,
    /// `[ha]`: whether it holds the lease (its fence); always true without `[ha]`.
    pub leader: Arc<AtomicBool>,
    ha: bool,
    pub kill: KillSwitch,
    /// What the policy watch saw since the last pass.
    pub changes: Changed,
    pub last_walk_ms: Option<u64>,
    /// What its poller knows.
    pub view: LiveView,
    /// A poll round in flight: when it returns, and what each member answered.
    pub round: Option<(u64, Vec<Answer>)>,
    /// When it starts again after a kill.
    pub restart_at: Option<u64>,
    /// How long after a kill it starts again (set when the kill switch is armed).
    pub restart_after_ms: u64,
    /// Passes completed.
    pub passes: u64,
    /// Passes completed since it started.
    pub passes_since_start: u64,
}

/// How a pass ended.
pub enum Passed {
    /// Published and recorded.
    Done(Box<ReconcileReport>, Arc<Inputs>),
    /// Fenced: a standby's shadow pass.
    Shadow,
    /// Held whole by the emptied-repository guard: nothing written or recorded.
    Held,
    /// The kill switch stopped it (the instance is down now).
    Killed,
    /// Not running.
    Down,
}

/// Adds what the watch saw to what it saw before.
pub fn merge(a: Changed, b: Changed) -> Changed {
    match (a, b) {
        (Changed::Unknown, _) | (_, Changed::Unknown) => Changed::Unknown,
        (Changed::Nothing, x) | (x, Changed::Nothing) => x,
        (Changed::Files(mut a), Changed::Files(b)) => {
            a.extend(b);
            a.sort();
            a.dedup();
            Changed::Files(a)
        }
    }
}

impl Instance {
    pub fn new(name: &'static str, state_dir: PathBuf, ha: bool, leader: bool) -> Instance {
        Instance {
            name,
            state_dir,
            reconciler: None,
            claim: None,
            leader: Arc::new(AtomicBool::new(leader)),
            ha,
            kill: KillSwitch::new(),
            changes: Changed::Unknown,
            last_walk_ms: None,
            view: LiveView::default(),
            round: None,
            restart_at: None,
            restart_after_ms: 0,
            passes: 0,
            passes_since_start: 0,
        }
    }

    /// Starts the daemon (store opened, output claimed unless under `[ha]` as a standby).
    pub fn start(&mut self, cfg: &Config, out: &Path) -> anyhow::Result<()> {
        let store = Store::open(&self.state_dir)?;
        if !self.ha || self.leader.load(Ordering::SeqCst) {
            self.claim = Some(crate::publish::claim_output(out, &self.state_dir, "run")?);
        }
        self.reconciler = Some(Arc::new(self.reconciler_on(store, cfg)?));
        self.changes = Changed::Unknown;
        self.last_walk_ms = None;
        self.view = LiveView::default();
        self.round = None;
        self.restart_at = None;
        self.passes_since_start = 0;
        Ok(())
    }

    fn reconciler_on(&self, store: Store, cfg: &Config) -> anyhow::Result<Reconciler> {
        let mut r = Reconciler::new(store, Settings::from_config(cfg, false)?).with_kill_switch(self.kill.clone());
        if self.ha {
            let leader = Arc::clone(&self.leader);
            r = r.with_fence(Arc::new(move || match leader.load(Ordering::SeqCst) {
                // The world has no wall clock to race: the write may take as long as it takes.
                true => Ok(std::time::Instant::now() + std::time::Duration::from_secs(86_400)),
                false => Err("standby: another instance holds the lease".to_string()),
            }));
        }
        Ok(r)
    }

    /// Stops it: a clean stop flushes the store; a kill drops everything where it is.
    pub fn stop(&mut self, clean: bool) {
        if let Some(r) = self.reconciler.take()
            && clean
        {
            let _ = r.store.flush();
        }
        self.claim = None;
        self.round = None;
        self.kill = KillSwitch::new();
    }

    /// `[ha]`: loses the lease (its fence closes; it lets go of the output directory).
    pub fn lose_lease(&mut self) {
        self.leader.store(false, Ordering::SeqCst);
        self.claim = None;
    }

    /// `[ha]`: wins the lease and takes over: claims the output, finishes and adopts what the
    /// previous leader published, starts a new reconciler on its store.
    pub fn take_over(&mut self, cfg: &Config, out: &Path, now_ms: u64) -> anyhow::Result<()> {
        let Some(old) = self.reconciler.take() else { return Ok(()) };
        let store = old.store.clone();
        drop(old);
        self.claim = Some(crate::publish::claim_output(out, &self.state_dir, "run")?);
        crate::reconcile::take_over(&store, out, now_ms)?;
        self.leader.store(true, Ordering::SeqCst);
        self.reconciler = Some(Arc::new(self.reconciler_on(store, cfg)?));
        self.changes = Changed::Unknown;
        Ok(())
    }

    /// A poll round returned: its answers go into the view.
    pub fn round_returned(&mut self) {
        let Some((_, results)) = self.round.take() else { return };
        for (name, result) in results {
            let status = self
                .view
                .clusters
                .entry(name.clone())
                .or_insert_with(|| LiveStatus { endpoint: format!("sim://{name}"), ..Default::default() });
            status.observe(result);
        }
    }

    /// One pass at `now_ms`, triggered by `trigger`.
    /// `now_ms` is the world's clock (Unix ms); `at` its time since the start (a killed
    /// instance starts again `restart_after_ms` after it).
    pub fn pass(
        &mut self,
        policy: &Path,
        out: &Path,
        trigger: crate::publish::Trigger,
        now_ms: u64,
        at: u64,
    ) -> Result<Passed, String> {
        let Some(r) = self.reconciler.clone() else { return Ok(Passed::Down) };
        let changes = std::mem::replace(&mut self.changes, Changed::Nothing);
        let changed = crate::daemon::reading(Some(changes), trigger, self.last_walk_ms, now_ms);
        if changed == Changed::Unknown {
            self.last_walk_ms = Some(now_ms);
        }
        let mut inputs = r
            .load_inputs(policy, &mut PhaseTimings::default(), &changed)
            .map_err(|errors| format!("the repository is invalid: {}", errors[0]))?;
        inputs.apply_live(&self.view, &r.store);
        let inputs = Arc::new(inputs);
        match r.reconcile(&inputs, out, trigger, now_ms) {
            Ok(report) => {
                self.passes += 1;
                self.passes_since_start += 1;
                Ok(Passed::Done(Box::new(report), inputs))
            }
            Err(ReconcileError::Fenced { .. }) => Ok(Passed::Shadow),
            // Every template deleted while the store has placements: the daemon's guard holds
            // the pass whole (nothing written or recorded) until the operator confirms.
            Err(ReconcileError::Emptied { .. }) => Ok(Passed::Held),
            Err(ReconcileError::Publish(crate::publish::PublishError::Killed { .. })) => {
                self.stop(false);
                self.restart_at = Some(at + self.restart_after_ms);
                Ok(Passed::Killed)
            }
            Err(e) => Err(format!("the pass failed: {e}")),
        }
    }
}
