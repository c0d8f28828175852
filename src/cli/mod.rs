//! The command line: parses arguments (clap), sets up logging, runs a command and maps the
//! result to an exit code. Exit codes: 0 success; 1 invalid input (policy repository or
//! arguments); 2 operational failure (store locked, I/O).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Config, LogFormat, Overrides};
use crate::explain::{self, WorkloadRef};
use crate::reconcile::{self, ReconcileError, Reconciler};
use crate::store::Store;

/// fedsched: Karmada-compatible multi-cluster scheduling that writes GitOps output.
#[derive(Debug, Parser)]
#[command(name = "fedsched", version, about, long_about = None)]
pub struct Cli {
    /// Configuration file (TOML).
    #[arg(long, short = 'c', global = true, env = "FEDSCHED_CONFIG")]
    pub config: Option<PathBuf>,
    /// Log format: auto (JSON under systemd), text or json.
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormatArg>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormatArg {
    Auto,
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}

/// Directory flags shared by the commands; they override the config file.
#[derive(Debug, Clone, Default, Args)]
pub struct DirArgs {
    /// Policy repository directory.
    #[arg(long = "policies", value_name = "DIR")]
    pub policy_dir: Option<PathBuf>,
    /// Output directory (one subdirectory per member cluster).
    #[arg(long = "out", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// State directory (the sled store).
    #[arg(long = "state", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl DirArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            policy_dir: self.policy_dir.clone(),
            output_dir: self.output_dir.clone(),
            state_dir: self.state_dir.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon: reconcile on policy changes, on a timer and on SIGHUP.
    Run {
        #[command(flatten)]
        dirs: DirArgs,
    },
    /// One reconcile pass, then exit.
    Render {
        #[command(flatten)]
        dirs: DirArgs,
    },
    /// Validate the policy repository; print every error.
    Check {
        /// Policy repository directory.
        #[arg(long = "policies", value_name = "DIR")]
        policy_dir: Option<PathBuf>,
    },
    /// Why a workload went where it went.
    Explain {
        #[command(flatten)]
        dirs: DirArgs,
        /// KIND/NAMESPACE/NAME (KIND//NAME for cluster-scoped objects).
        workload: WorkloadRef,
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// The scheduling history of a workload.
    History {
        #[command(flatten)]
        dirs: DirArgs,
        /// KIND/NAMESPACE/NAME.
        workload: WorkloadRef,
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// Serve simulated member clusters over the Kubernetes API (or generate a fleet).
    Simulate(SimulateArgs),
    /// The stored snapshot versions of a member cluster.
    Snapshots {
        #[command(flatten)]
        dirs: DirArgs,
        /// Cluster name.
        cluster: String,
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
}

/// `fedsched simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Fleet directory to serve: one subdirectory per cluster (Cluster object, nodes, pods).
    #[arg(long, value_name = "DIR", required_unless_present = "generate")]
    pub fleet: Option<PathBuf>,
    /// HTTPS address (loopback only); port 0 picks one (see FLEET/.simulator/endpoints.json).
    #[arg(long, default_value = "127.0.0.1:7443")]
    pub listen: std::net::SocketAddr,
    /// Also serve plain HTTP on this address (loopback only).
    #[arg(long, value_name = "ADDR")]
    pub listen_http: Option<std::net::SocketAddr>,
    /// Act as the GitOps agent for this output directory (OUT/<cluster>/…).
    #[arg(long, value_name = "OUT")]
    pub apply: Option<PathBuf>,
    /// How often the output directory is checked for changes.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub apply_interval: std::time::Duration,
    /// Generate a synthetic fleet of N clusters into --out instead of serving.
    #[arg(long, value_name = "N", requires = "out")]
    pub generate: Option<usize>,
    /// Nodes per generated cluster.
    #[arg(long, default_value_t = 10)]
    pub nodes: usize,
    /// Pods per generated cluster.
    #[arg(long, default_value_t = 100)]
    pub pods: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the generated fleet is written.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

fn simulate(a: &SimulateArgs) -> Result<ExitCode, Failure> {
    use crate::simulate::{self, fleet};
    if let Some(n) = a.generate {
        let out = a.out.clone().ok_or_else(|| missing("out", "--out"))?;
        let f = fleet::generate(&fleet::Generate { clusters: n, nodes: a.nodes, pods: a.pods, seed: a.seed });
        fleet::write(&out, &f)?;
        eprintln!("wrote {} clusters ({} nodes, {} pods each) to {}", n, a.nodes, a.pods, out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let fleet_dir = a.fleet.clone().ok_or_else(|| missing("fleet", "--fleet"))?;
    let opts = simulate::Options {
        fleet: fleet_dir,
        listen: a.listen,
        listen_http: a.listen_http,
        apply: a.apply.clone(),
        apply_interval: a.apply_interval,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("cannot install signal handlers")?;
        tokio::select! {
            r = simulate::serve(opts) => r.map_err(|e| match e {
                simulate::SimError::Fleet { .. } | simulate::SimError::NotLoopback(_) => invalid(e.into()),
                e => e.into(),
            }),
            _ = tokio::signal::ctrl_c() => Ok(()),
            _ = term.recv() => Ok(()),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A failure with the exit code it maps to.
struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure { code: 2, error: e.into() }
    }
}

fn invalid(error: anyhow::Error) -> Failure {
    Failure { code: 1, error }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("fedsched: {:#}", f.error);
            ExitCode::from(f.code)
        }
    }
}

fn load_config(cli: &Cli) -> Result<Config, Failure> {
    let cfg = match &cli.config {
        Some(p) => Config::load(p).map_err(|e| invalid(e.into()))?,
        None => Config::default(),
    };
    let format = match cli.log_format {
        Some(LogFormatArg::Auto) => LogFormat::Auto,
        Some(LogFormatArg::Text) => LogFormat::Text,
        Some(LogFormatArg::Json) => LogFormat::Json,
        None => cfg.log.format,
    };
    crate::telemetry::init(format, &cfg.log.level);
    Ok(cfg)
}

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let cfg = load_config(&cli)?;
    match &cli.command {
        Command::Run { dirs } => {
            let paths = cfg.paths(&dirs.overrides()).map_err(|e| invalid(e.into()))?;
            crate::daemon::run_blocking(cfg.clone(), cli.config.clone(), paths)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Render { dirs } => render(&cfg, dirs),
        Command::Simulate(args) => simulate(args),
        Command::Check { policy_dir } => {
            let dir = policy_dir
                .clone()
                .or_else(|| cfg.policy_dir.clone())
                .ok_or_else(|| missing("policy_dir", "--policies"))?;
            match reconcile::load_inputs(&dir) {
                Ok(inputs) => {
                    let s = &inputs.set;
                    println!(
                        "{}: ok: {} templates, {} PropagationPolicies, {} ClusterPropagationPolicies, {} OverridePolicies, {} ClusterOverridePolicies, {} clusters",
                        dir.display(),
                        s.templates.len(),
                        s.propagation_policies.len(),
                        s.cluster_propagation_policies.len(),
                        s.override_policies.len(),
                        s.cluster_override_policies.len(),
                        s.clusters.len()
                    );
                    for t in &s.templates {
                        if let Some(c) = crate::policy::matching::claim(s, t) {
                            for sh in &c.shadowed {
                                println!(
                                    "{}: {} is claimed by {}; {} is shadowed for it",
                                    t.source, t.key, c.policy, sh
                                );
                            }
                        }
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(errors) => {
                    for e in &errors {
                        println!("{e}");
                    }
                    eprintln!("fedsched: {} error(s) in {}", errors.len(), dir.display());
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Explain { dirs, workload, output } => {
            let policy_dir = dirs
                .policy_dir
                .clone()
                .or_else(|| cfg.policy_dir.clone())
                .ok_or_else(|| missing("policy_dir", "--policies"))?;
            let state = state_dir(&cfg, dirs)?;
            let inputs = reconcile::load_inputs(&policy_dir).map_err(|errs| invalid(invalid_inputs(&errs)))?;
            let store = Store::open(&state).context("cannot open the store")?;
            let doc = explain::explain(&inputs, &store, workload).map_err(|e| invalid(anyhow::anyhow!(e)))?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default()),
                OutputFormat::Text => print!("{}", explain::to_text(&doc)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::History { dirs, workload, output } => {
            let state = state_dir(&cfg, dirs)?;
            let store = Store::open(&state).context("cannot open the store")?;
            let mut records = Vec::new();
            for p in store.placements()? {
                if workload.matches(&p.workload) {
                    records = store.history(&p.workload)?;
                }
            }
            if records.is_empty() {
                // A removed workload has no placement any more: its history is still kept.
                for key in store.workloads_with_history()? {
                    if workload.matches(&key) {
                        records = store.history(&key)?;
                    }
                }
            }
            match output {
                OutputFormat::Json => {
                    println!("{}", serde_json::to_string_pretty(&history_json(&records)).unwrap_or_default())
                }
                OutputFormat::Text => {
                    if records.is_empty() {
                        println!(
                            "no history for {}/{}/{}",
                            workload.kind,
                            workload.namespace.as_deref().unwrap_or(""),
                            workload.name
                        );
                    }
                    for r in &records {
                        let outcome = match &r.result.outcome {
                            crate::schedule::Outcome::Scheduled { targets } => {
                                let t: Vec<String> = targets
                                    .iter()
                                    .map(|(c, n)| match n {
                                        Some(n) => format!("{c}={n}"),
                                        None => c.clone(),
                                    })
                                    .collect();
                                format!("scheduled [{}]", t.join(", "))
                            }
                            crate::schedule::Outcome::Unschedulable { reason } => format!("unschedulable: {reason}"),
                        };
                        println!("#{} {} trigger={} {}", r.seq, explain::format_ms(r.at_ms), r.trigger, outcome);
                        for n in &r.notes {
                            println!("    {n}");
                        }
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Snapshots { dirs, cluster, output } => {
            let state = state_dir(&cfg, dirs)?;
            let store = Store::open(&state).context("cannot open the store")?;
            let versions = store.snapshot_versions(cluster)?;
            match output {
                OutputFormat::Json => {
                    let v: Vec<serde_json::Value> = versions
                        .iter()
                        .map(|m| serde_json::json!({"version": m.version, "hash": format!("{:016x}", m.hash), "firstSeen": explain::format_ms(m.first_seen_ms), "lastSeen": explain::format_ms(m.last_seen_ms), "health": format!("{:?}", m.health), "confidence": m.confidence}))
                        .collect();
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&serde_json::json!({"cluster": cluster, "versions": v}))
                            .unwrap_or_default()
                    );
                }
                OutputFormat::Text => {
                    if versions.is_empty() {
                        println!("no snapshots of cluster {cluster}");
                    }
                    for m in &versions {
                        println!(
                            "v{} {:016x} first seen {} last seen {} {:?}",
                            m.version,
                            m.hash,
                            explain::format_ms(m.first_seen_ms),
                            explain::format_ms(m.last_seen_ms),
                            m.health
                        );
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn missing(key: &str, flag: &str) -> Failure {
    invalid(anyhow::anyhow!("{key} is not set: give {flag} DIR or a config file"))
}

fn state_dir(cfg: &Config, dirs: &DirArgs) -> Result<PathBuf, Failure> {
    dirs.state_dir.clone().or_else(|| cfg.state_dir.clone()).ok_or_else(|| missing("state_dir", "--state"))
}

fn history_json(records: &[crate::store::HistoryRecord]) -> serde_json::Value {
    serde_json::Value::Array(
        records
            .iter()
            .map(|r| {
                serde_json::json!({
                    "seq": r.seq,
                    "at": explain::format_ms(r.at_ms),
                    "trigger": r.trigger,
                    "policy": r.policy.as_ref().map(|p| p.to_string()),
                    "inputs": {
                        "templateHash": format!("{:016x}", r.inputs.template_hash),
                        "policyHash": format!("{:016x}", r.inputs.policy_hash),
                        "snapshotVersions": r.inputs.snapshot_versions,
                        "previous": r.inputs.previous,
                        "profile": r.inputs.profile,
                    },
                    "outcome": match &r.result.outcome {
                        crate::schedule::Outcome::Scheduled { targets } => serde_json::json!({"scheduled": targets}),
                        crate::schedule::Outcome::Unschedulable { reason } => serde_json::json!({"unschedulable": reason}),
                    },
                    "clusters": r.result.verdicts.iter().map(|v| serde_json::json!({"name": v.name, "feasible": v.feasible, "reasons": v.reasons, "score": v.score, "availableReplicas": v.available_replicas, "replicas": v.replicas})).collect::<Vec<_>>(),
                    "notes": r.notes,
                })
            })
            .collect(),
    )
}

fn invalid_inputs(errors: &[crate::policy::LoadError]) -> anyhow::Error {
    for e in errors {
        eprintln!("{e}");
    }
    anyhow::anyhow!("{} error(s) in the policy repository; nothing was changed", errors.len())
}

fn render(cfg: &Config, dirs: &DirArgs) -> Result<ExitCode, Failure> {
    let paths = cfg.paths(&dirs.overrides()).map_err(|e| invalid(e.into()))?;
    let mut inputs = reconcile::load_inputs(&paths.policy_dir).map_err(|errs| invalid(invalid_inputs(&errs)))?;
    let store = Store::open(&paths.state_dir).context("cannot open the store")?;
    let reconciler = Reconciler::new(store);
    // Live members: one poll round, then the pass.
    let (targets, unknown) = crate::members::live::targets(cfg, &inputs.set);
    for name in unknown {
        eprintln!("warning: [clusters.{name}] has no Cluster object in the policy repository; not polled");
    }
    if !targets.is_empty() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let mut poller = crate::members::live::Poller::new(cfg.poll.clone(), cfg.reconcile.interval);
        let report = rt.block_on(poller.round(&targets));
        for (cluster, error, _) in &report.failed {
            eprintln!("poll failed: {cluster}: {error}; using its last stored snapshot");
        }
        inputs.apply_live(poller.view(), &reconciler.store);
    }
    let report = match reconciler.reconcile(&inputs, &paths.output_dir, "render", crate::daemon::now_ms()) {
        Ok(r) => r,
        Err(ReconcileError::Invalid(errs)) => return Err(invalid(invalid_inputs(&errs))),
        Err(e) => return Err(e.into()),
    };
    for p in &report.unschedulable {
        eprintln!("unschedulable: {}: {}", p.workload, p.reason);
    }
    for p in &report.render_failures {
        eprintln!("render failed: {} on {}: {}", p.workload, p.cluster.as_deref().unwrap_or("?"), p.reason);
    }
    eprintln!("{}", report.summary());
    Ok(ExitCode::SUCCESS)
}
