//! The command line: parses arguments (clap), sets up logging, runs a command and maps the
//! result to an exit code ([`exit`]): 0 success; 1 invalid input (policy repository,
//! configuration, an unknown workload or cluster); 2 operational failure (store locked, I/O,
//! a member or daemon unreachable); 64 usage error (unknown flag or subcommand, bad value).
//! `fedsched completion SHELL` prints a shell completion script (clap_complete);
//! `--version` names the commit (`build.rs`).
//!
//! `explain`, `get`, `status`, `history` and `snapshots` read the store; while a daemon holds it (sled is
//! single-process) they ask the daemon's HTTP API instead (`--server URL`, or found through
//! `<state>/http.addr` / `[http] listen`). Both paths print the same documents
//! ([`crate::views::report`], [`crate::views::explain`]).
//!
//! # In detail
//!
//! Clap definitions and dispatch; exit codes (0 ok, 1 invalid input or unknown object, 2
//! operational failure, 64 usage). The only module that prints for people. `check.rs`: `fedsched
//! check` and the CLI's one way to load a repository (`check::load`: load errors, template errors a
//! pass could not read, overrides that fail or leave an invalid object for some cluster, notes and
//! warnings; `-o json|yaml`: every finding with its severity); `interpret.rs`: `fedsched interpret`
//! (one customization operation on objects from files, as `karmadactl interpret`); `progress.rs`:
//! the progress line of long work (`simulate --generate`, `render`, `bench`) on stderr, drawn by a
//! small thread only when stdout and stderr are terminals and not under systemd (no crate:
//! `std::io::IsTerminal`). Read-only commands (`explain`, `history`, `snapshots`, `resources`) read
//! the store, or a running daemon's API when the store is locked; every `-o json` document also
//! prints as `-o yaml` (`print_doc`, our YAML emitter). A repository file that cannot be read
//! (`LoadError::io`) is an operational failure (exit 2), never an invalid repository.

mod check;
mod dst;
mod fuzz;

use std::path::PathBuf;
use std::process::ExitCode;

mod interpret;
mod plan;
mod progress;
pub mod reference;
mod replay;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::api::client::{self, ServerUrl};
use crate::config::{Config, LogFormat, Overrides};
use crate::reconcile::{self, ReconcileError, Reconciler};
use crate::store::{Store, StoreError};
use crate::views::explain::{self, WorkloadRef};
use crate::views::report;

/// `fedsched --version`: the crate version and the commit it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("FEDSCHED_COMMIT"), ")");

/// The exit codes of every command.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Invalid input: the policy repository, the configuration, an unknown workload or cluster.
    pub const INVALID: u8 = 1;
    /// Operational failure: store locked or unreadable, I/O, the daemon unreachable.
    pub const FAILURE: u8 = 2;
    /// Usage error: unknown flag or subcommand, a bad or missing argument (sysexits' EX_USAGE).
    pub const USAGE: u8 = 64;
}

/// fedsched: Karmada-compatible multi-cluster scheduling that writes GitOps output.
#[derive(Debug, Parser)]
#[command(name = "fedsched", version = VERSION, about, long_about = None)]
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
    Yaml,
}

/// `-o` of the commands that list (`get`): a table, a wider table, JSON or YAML.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum ListFormat {
    #[default]
    Text,
    Wide,
    Json,
    Yaml,
}

/// Prints a document as `format` says: JSON or YAML as it is, text through `text`.
fn print_doc(format: OutputFormat, doc: &serde_json::Value, text: impl FnOnce(&serde_json::Value) -> String) {
    match format {
        OutputFormat::Json => crate::outln!("{}", serde_json::to_string_pretty(doc).unwrap_or_default()),
        OutputFormat::Yaml => crate::out!("{}", crate::render::yaml::to_yaml(doc)),
        OutputFormat::Text => crate::out!("{}", text(doc)),
    }
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

/// Where read-only commands get their answers when the store is in use.
#[derive(Debug, Clone, Default, Args)]
pub struct ServerArgs {
    /// Ask a running daemon's HTTP API (http://HOST:PORT) instead of opening the store.
    /// Without it, the API is used only when the store is locked by a running daemon.
    #[arg(long = "server", value_name = "URL")]
    pub server: Option<String>,
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
        /// Confirm removals the mass-deletion guard would hold (more than `publish.max_delete_ratio`
        /// of a cluster's objects).
        #[arg(long)]
        allow_mass_delete: bool,
    },
    /// Validate the policy repository; print every error.
    Check {
        /// Policy repository directory.
        #[arg(long = "policies", value_name = "DIR")]
        policy_dir: Option<PathBuf>,
        /// `json` / `yaml`: every finding as {file, document, field, message, severity} (for
        /// CI annotations).
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// Why a workload went where it went.
    Explain {
        #[command(flatten)]
        dirs: DirArgs,
        /// KIND/NAMESPACE/NAME (KIND//NAME for cluster-scoped objects).
        workload: WorkloadRef,
        #[command(flatten)]
        server: ServerArgs,
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// The scheduling history of a workload.
    History {
        #[command(flatten)]
        dirs: DirArgs,
        /// KIND/NAMESPACE/NAME.
        workload: WorkloadRef,
        #[command(flatten)]
        server: ServerArgs,
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// Every placed workload with its policy, clusters and replicas, state, and whether its
    /// dispatching is suspended or a Lazy policy holds it (`kubectl get` of the fleet), from the
    /// store (or a running daemon's API). Exit 0 (none found: said on stderr), 1 an unknown
    /// cluster, 2 the store or the daemon unreadable.
    Get {
        #[command(flatten)]
        dirs: DirArgs,
        /// Only the workloads of this namespace.
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// Only the workloads placed on this cluster.
        #[arg(long)]
        cluster: Option<String>,
        /// Only the workloads whose template's labels match (kubectl's syntax: `app=web`,
        /// `tier!=db`, `env in (prod,stage)`, `gpu`, `!legacy`, comma-separated).
        #[arg(short = 'l', long, value_name = "SELECTOR")]
        selector: Option<crate::views::workloads::Selector>,
        /// Only the workloads in this state: scheduled, unschedulable, suspended, lazy-held.
        #[arg(long, value_name = "STATE")]
        only: Option<crate::views::workloads::StateFilter>,
        #[command(flatten)]
        server: ServerArgs,
        /// `wide` adds the decision's time, the affinity term, the labels and the reason.
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: ListFormat,
    },
    /// Serve simulated member clusters over the Kubernetes API (or generate a fleet).
    Simulate(SimulateArgs),
    /// Capacity, allocated and free (raw and normalised) and confidence per group of clusters:
    /// offline clusters from the policy repository, live ones from their latest snapshot.
    Resources {
        #[command(flatten)]
        dirs: DirArgs,
        /// Group by region, zone, provider or label=KEY.
        #[arg(long, default_value = "region")]
        by: crate::views::resources::GroupBy,
        #[command(flatten)]
        server: ServerArgs,
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// Benchmarks at fleet scale (issue 8): generated fleet and policy repository, scenarios
    /// S1–S7, S9 (plan of a one-file edit) and S10 (failover), each phase's time and peak RSS.
    /// See BENCHMARKS.md.
    Bench(BenchArgs),
    /// Deterministic simulation (issue 46): the whole daemon on simulated members under a
    /// seeded fault schedule, every invariant checked at every step. Exit 0 none violated, 2
    /// a violation (printed with the command that reproduces it).
    Dst(dst::DstArgs),
    /// Structure-aware fuzzing (issue 47) of the policy repository, kubeconfigs and Lua
    /// customizations through the real entry points, deterministic by seed. Exit 0 no case
    /// panicked, hung or leaked a credential, 2 otherwise (each printed with its repro line).
    Fuzz(fuzz::FuzzArgs),
    /// Run one operation of a ResourceInterpreterCustomization (or of the built-in
    /// interpreters) on objects from files and print the result, like `karmadactl interpret`.
    Interpret(interpret::InterpretArgs),
    /// What the members run of a workload: per cluster desired, ready, pending (with reasons),
    /// missing, and its state (Healthy, Progressing, Degraded, Unknown). Without a workload:
    /// every workload that is not Healthy. Exit 0 Healthy, 3 Progressing, 4 Degraded, 5 Unknown
    /// (a list: its most severe state).
    Status {
        #[command(flatten)]
        dirs: DirArgs,
        /// KIND/NAMESPACE/NAME (KIND//NAME for cluster-scoped objects); none = every workload
        /// that is not Healthy.
        workload: Option<WorkloadRef>,
        /// Unschedulable or not Ready (or pods missing) longer than this ⇒ Degraded.
        #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
        stuck_after: std::time::Duration,
        /// Wait up to this long for Healthy (`kubectl rollout status --timeout`): asks again
        /// every 2 s; ends at once on Healthy (0) or Degraded (4), else at the timeout with the
        /// last state's code.
        #[arg(long, value_name = "TIMEOUT", value_parser = humantime::parse_duration)]
        wait: Option<std::time::Duration>,
        #[command(flatten)]
        server: ServerArgs,
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// The stored snapshot versions of a member cluster; `--version N` what one contained,
    /// `--diff N M` what changed between two.
    Snapshots {
        #[command(flatten)]
        dirs: DirArgs,
        /// Cluster name.
        cluster: String,
        /// Show what stored version N contained: health, the resource summary, the nodes.
        #[arg(long, value_name = "N", conflicts_with = "diff")]
        version: Option<u64>,
        /// Show what changed from stored version N to version M.
        #[arg(long, num_args = 2, value_names = ["N", "M"])]
        diff: Option<Vec<u64>>,
        #[command(flatten)]
        server: ServerArgs,
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// What a change of the policy repository would do (placements, claims, holds, files), with
    /// nothing written. Exit 0 no change, 2 changes, 1 invalid input or failure.
    Plan(plan::PlanArgs),
    /// Make recorded decisions again with this fedsched on their stored inputs; print
    /// `identical` or the differences. Exit 0 identical, 2 different, 1 invalid or failure.
    Replay(replay::ReplayArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
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
    /// Pods modified per cluster per second (watch events for benchmarks); 0 = none.
    #[arg(long, default_value_t = 0.0)]
    pub churn: f64,
    /// With --apply: a pod the agent binds turns Ready this long after it starts (first
    /// `Ready=False, reason=ContainersNotReady`); 0 = at once.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub ready_after: std::time::Duration,
    /// Watch events retained per cluster (a watch from an older version gets 410 Gone).
    #[arg(long, default_value_t = crate::testbed::simulate::watch::DEFAULT_WINDOW)]
    pub watch_window: usize,
    /// Speak HTTP/1.1 only over HTTPS (as an API server behind a proxy that does not offer
    /// HTTP/2); by default both are offered by ALPN, HTTP/2 first, as kube-apiserver does.
    #[arg(long)]
    pub http1_only: bool,
    /// HTTP/2 streams one connection may carry at once (`SETTINGS_MAX_CONCURRENT_STREAMS`);
    /// default: 200 (hyper's).
    #[arg(long, value_name = "N")]
    pub max_concurrent_streams: Option<u32>,
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

/// `fedsched bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Scenarios to run (S1..S7, S9, S10, S11; repeat or comma-separate); default: all but S5, S10 and S11.
    #[arg(long = "scenario", value_delimiter = ',', num_args = 1..)]
    pub scenarios: Vec<crate::testbed::bench::Scenario>,
    /// Member clusters.
    #[arg(long, default_value_t = 1000)]
    pub clusters: usize,
    /// Nodes per cluster.
    #[arg(long, default_value_t = 100)]
    pub nodes: usize,
    /// Pods per cluster (node-level data of S1–S4, S6, S7).
    #[arg(long, default_value_t = 300)]
    pub pods: usize,
    /// Workloads.
    #[arg(long, default_value_t = 10_000)]
    pub workloads: usize,
    /// Runs per figure (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// S5: simulated clusters polled.
    #[arg(long, default_value_t = 20)]
    pub poll_clusters: usize,
    /// S5: nodes per simulated cluster.
    #[arg(long, default_value_t = 100)]
    pub poll_nodes: usize,
    /// S5: pods per simulated cluster.
    #[arg(long, default_value_t = 1500)]
    pub poll_pods: usize,
    /// S6: no-change reconciles.
    #[arg(long, default_value_t = 1000)]
    pub passes: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Work directory (generated repositories and fleets are kept and reused).
    #[arg(long, value_name = "DIR", default_value = "target/fedsched-bench")]
    pub dir: PathBuf,
    /// For benchmarks only: memos switched off for the whole run (`all`, or names of the
    /// registry, `crate::util::memo::Name`), each computing every time.
    #[arg(long = "memo-off", value_name = "NAME[,NAME]|all", value_delimiter = ',')]
    pub memo_off: Vec<String>,
    /// The memo ablation (BENCHMARKS.md): S1, S3, S4 and S7 (those asked for) with each of these
    /// memos off against every memo on, alternating in one run (`all`: every memo).
    #[arg(long, value_name = "NAME[,NAME]|all", value_delimiter = ',')]
    pub ablate: Vec<String>,
}

/// Memo names as `--memo-off` and `--ablate` take them (`all`: every one).
fn memo_names(names: &[String]) -> Result<Vec<crate::util::memo::Name>, Failure> {
    use crate::util::memo::Name;
    let mut out: Vec<Name> = Vec::new();
    for n in names {
        let named = match n.as_str() {
            "all" => Name::ALL.to_vec(),
            _ => vec![n.parse::<Name>().map_err(|e| invalid(anyhow::anyhow!(e)))?],
        };
        out.extend(named.into_iter().filter(|n| !out.contains(n)).collect::<Vec<_>>());
    }
    Ok(out)
}

fn bench(a: &BenchArgs) -> Result<ExitCode, Failure> {
    use crate::testbed::bench::{self, Scenario};
    let scenarios = if a.scenarios.is_empty() {
        vec![Scenario::S1, Scenario::S2, Scenario::S3, Scenario::S4, Scenario::S6, Scenario::S7]
    } else {
        a.scenarios.clone()
    };
    let opts = bench::Options {
        scenarios,
        clusters: a.clusters,
        nodes: a.nodes,
        pods: a.pods,
        workloads: a.workloads,
        runs: a.runs,
        seed: a.seed,
        dir: a.dir.clone(),
        poll_clusters: a.poll_clusters,
        poll_nodes: a.poll_nodes,
        poll_pods: a.poll_pods,
        passes: a.passes,
        ablate: memo_names(&a.ablate)?,
    };
    crate::util::memo::switch_off(&memo_names(&a.memo_off)?);
    crate::outln!(
        "fedsched bench: build {}, {} CPUs; C={} N={} P={} W={} runs={}",
        if cfg!(debug_assertions) { "dev (unoptimised: figures are not representative)" } else { "release" },
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        a.clusters,
        a.nodes,
        a.pods,
        a.workloads,
        a.runs
    );
    let progress = progress::Progress::start("bench: generating the inputs");
    let mut figures = 0u64;
    bench::run(&opts, &mut |f| {
        figures += 1;
        progress.println(&f.line());
        progress.phase(format!("bench: running ({figures} figures so far)"));
    })?;
    drop(progress);
    Ok(ExitCode::SUCCESS)
}

fn simulate(a: &SimulateArgs) -> Result<ExitCode, Failure> {
    use crate::testbed::simulate::{self, fleet};
    if let Some(n) = a.generate {
        let out = a.out.clone().ok_or_else(|| missing("out", "--out"))?;
        let progress = progress::Progress::start("generating clusters");
        progress.set(0, Some(n as u64));
        // One cluster at a time (the same clusters as `fleet::generate`), with progress.
        for (i, c) in
            fleet::clusters(&fleet::Generate { clusters: n, nodes: a.nodes, pods: a.pods, seed: a.seed }).enumerate()
        {
            fleet::write(&out, std::slice::from_ref(&c))?;
            progress.set(i as u64 + 1, Some(n as u64));
        }
        drop(progress);
        crate::errln!("wrote {} clusters ({} nodes, {} pods each) to {}", n, a.nodes, a.pods, out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let fleet_dir = a.fleet.clone().ok_or_else(|| missing("fleet", "--fleet"))?;
    let opts = simulate::Options {
        fleet: fleet_dir,
        listen: a.listen,
        listen_http: a.listen_http,
        apply: a.apply.clone(),
        apply_interval: a.apply_interval,
        churn: a.churn,
        watch_window: a.watch_window,
        ready_after: a.ready_after,
        http1_only: a.http1_only,
        max_concurrent_streams: a.max_concurrent_streams,
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
        Failure { code: exit::FAILURE, error: e.into() }
    }
}

fn invalid(error: anyhow::Error) -> Failure {
    Failure { code: exit::INVALID, error }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with 0; usage errors to stderr with [`exit::USAGE`].
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::USAGE } else { exit::OK });
        }
    };
    if let Command::Completion { shell } = &cli.command {
        use clap::CommandFactory;
        // Into memory first: clap_complete panics when its writer fails (a closed pipe).
        let mut script = Vec::new();
        clap_complete::generate(*shell, &mut Cli::command(), "fedsched", &mut script);
        crate::util::stdio::out_bytes(&script);
        return ExitCode::SUCCESS;
    }
    // The scripts of one command share one scope (`interpreter::scope`); the daemon gives each
    // pass and plan its own, and the bench and simulator run no one's scripts.
    let scope = match &cli.command {
        Command::Run { .. } | Command::Bench(_) | Command::Simulate(_) => None,
        _ => Some(crate::model::interpreter::Scope::new("this command")),
    };
    match crate::model::interpreter::Scope::enter(scope, || run(cli)) {
        Ok(code) => code,
        Err(f) => {
            crate::errln!("fedsched: {:#}", f.error);
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
    // The simulation's thousands of passes log only what goes wrong (FEDSCHED_LOG says otherwise).
    let level = match (&cli.command, &cli.config) {
        (Command::Dst(_), None) => "warn",
        // Thousands of invalid inputs, each refused as it should be: only what breaks.
        (Command::Fuzz(_), None) => "error",
        _ => cfg.log.level.as_str(),
    };
    crate::telemetry::init(format, level);
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
        Command::Render { dirs, allow_mass_delete } => render(&cfg, dirs, *allow_mass_delete),
        Command::Completion { .. } => Ok(ExitCode::SUCCESS),
        Command::Simulate(args) => simulate(args),
        Command::Bench(args) => bench(args),
        Command::Dst(args) => dst::dst(args),
        Command::Fuzz(args) => fuzz::fuzz(args),
        Command::Interpret(args) => interpret::interpret(args),
        Command::Plan(args) => plan::plan(&cfg, args),
        Command::Replay(args) => replay::replay(&cfg, args),
        Command::Check { policy_dir, output } => {
            let dir = policy_dir
                .clone()
                .or_else(|| cfg.policy_dir.clone())
                .ok_or_else(|| missing("policy_dir", "--policies"))?;
            check::check(&cfg, &dir, *output)
        }
        Command::Explain { dirs, workload, output, server } => {
            // Explain decides afresh from the repository: without a store it explains with
            // nothing recorded (no previous placement, no history), as before the first render.
            let doc = match open_source_or_empty(&cfg, dirs, server)? {
                Source::Server(api) => api.get(&workload_path(workload, "explain"))?,
                Source::Store(store) => {
                    let (inputs, profiles) = read_inputs(&cfg, dirs)?;
                    explain::explain(&inputs, &store, &profiles, workload, crate::util::clock::now_ms())
                        .map_err(|e| invalid(anyhow::anyhow!(e)))?
                }
            };
            print_doc(*output, &doc, explain::to_text);
            Ok(ExitCode::SUCCESS)
        }
        Command::History { dirs, workload, output, server } => {
            let doc = match open_source(&cfg, dirs, server)? {
                Source::Server(api) => api.get(&workload_path(workload, "history"))?,
                Source::Store(store) => report::history_json(&store, &report::history_for(&store, workload)?)?,
            };
            if doc.as_array().is_some_and(Vec::is_empty) {
                let shown =
                    format!("{}/{}/{}", workload.kind, workload.namespace.as_deref().unwrap_or(""), workload.name);
                return Err(invalid(anyhow::anyhow!("unknown workload {shown}: no decision is recorded for it")));
            }
            print_doc(*output, &doc, |d| report::history_text(d, workload));
            Ok(ExitCode::SUCCESS)
        }
        Command::Get { dirs, namespace, cluster, selector, only, server, output } => {
            use crate::views::workloads::{self, GetError};
            let filter = workloads::Filter {
                namespace: namespace.clone(),
                cluster: cluster.clone(),
                selector: selector.clone(),
                state: *only,
            };
            let doc = match open_source(&cfg, dirs, server)? {
                Source::Server(api) => api.get(&format!("/api/v1/workloads{}", filter.to_query()))?,
                Source::Store(store) => workloads::document(&store, &filter).map_err(|e| match e {
                    GetError::UnknownCluster(_) => invalid(e.into()),
                    GetError::Store(e) => e.into(),
                })?,
            };
            match output {
                ListFormat::Json => print_doc(OutputFormat::Json, &doc, |_| String::new()),
                ListFormat::Yaml => print_doc(OutputFormat::Yaml, &doc, |_| String::new()),
                ListFormat::Text | ListFormat::Wide => {
                    let table = workloads::to_text(&doc, matches!(output, ListFormat::Wide));
                    match table.is_empty() {
                        true => crate::errln!("no workloads found"),
                        false => crate::out!("{table}"),
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Resources { dirs, by, server, output } => {
            let doc = match open_source(&cfg, dirs, server)? {
                Source::Server(api) => {
                    api.get(&format!("/api/v1/resources?by={}", crate::util::percent::encode(&by.as_query())))?
                }
                Source::Store(store) => {
                    let (mut inputs, profiles) = read_inputs(&cfg, dirs)?;
                    let live: std::collections::BTreeSet<String> = cfg.clusters.keys().cloned().collect();
                    crate::views::resources::with_stored_live(&mut inputs.snapshots, &live, &store)?;
                    let model = profiles.model();
                    let views = crate::views::resources::views(&inputs.snapshots, model, crate::util::clock::now_ms());
                    crate::views::resources::document(&views, by, model)
                }
            };
            print_doc(*output, &doc, crate::views::resources::to_text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Status { dirs, workload, stuck_after, wait, server, output } => {
            workload_status(&cfg, dirs, workload.as_ref(), *stuck_after, *wait, server, *output)
        }
        Command::Snapshots { dirs, cluster, version, diff, output, server } if version.is_some() || diff.is_some() => {
            let wanted: Vec<u64> = version.iter().copied().chain(diff.iter().flatten().copied()).collect();
            let Source::Store(store) = open_source(&cfg, dirs, server)? else {
                return Err(anyhow::anyhow!(
                    "--version and --diff read the store, which a running daemon holds: stop it, or read a copy"
                )
                .into());
            };
            let mut docs = Vec::new();
            for n in wanted {
                let snap = store.snapshot(cluster, n)?.ok_or_else(|| {
                    invalid(anyhow::anyhow!(
                        "cluster {cluster} has no stored snapshot version {n} (see fedsched snapshots {cluster})"
                    ))
                })?;
                docs.push(report::snapshot_version_json(cluster, n, &snap));
            }
            let doc = match docs.as_slice() {
                [a, b] => report::snapshot_diff_json(cluster, a, b),
                _ => docs.pop().unwrap_or_default(),
            };
            print_doc(*output, &doc, report::snapshot_detail_text);
            Ok(ExitCode::SUCCESS)
        }
        Command::Snapshots { dirs, cluster, output, server, .. } => {
            let doc = match open_source(&cfg, dirs, server)? {
                Source::Server(api) => {
                    api.get(&format!("/api/v1/clusters/{}/snapshots", crate::util::percent::encode(cluster)))?
                }
                Source::Store(store) => report::snapshots_json(cluster, &store.snapshot_versions(cluster)?),
            };
            if doc["versions"].as_array().is_none_or(Vec::is_empty) {
                return Err(invalid(anyhow::anyhow!("unknown cluster {cluster}: no snapshot of it is stored")));
            }
            print_doc(*output, &doc, report::snapshots_text);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `fedsched status [KIND/NS/NAME]`: from the store, or the daemon's API when it holds it. The
/// exit code is the state's ([`crate::views::workload_status::WorkloadState::exit_code`]);
/// `--wait` asks again until Healthy, Degraded or the timeout.
fn workload_status(
    cfg: &Config,
    dirs: &DirArgs,
    workload: Option<&WorkloadRef>,
    stuck_after: std::time::Duration,
    wait: Option<std::time::Duration>,
    server: &ServerArgs,
    output: OutputFormat,
) -> Result<ExitCode, Failure> {
    use crate::views::workload_status::{self as ws, WorkloadState};
    let deadline = wait.map(|w| std::time::Instant::now() + w);
    let (doc, state) = loop {
        let doc = status_document(cfg, dirs, workload, stuck_after, server)?;
        let state = WorkloadState::of_document(&doc);
        let done = matches!(state, WorkloadState::Healthy | WorkloadState::Degraded);
        match deadline {
            Some(d) if !done && std::time::Instant::now() < d => {
                std::thread::sleep(STATUS_WAIT_STEP.min(d.saturating_duration_since(std::time::Instant::now())));
            }
            Some(_) if !done => {
                let timeout = humantime::format_duration(wait.unwrap_or_default());
                crate::errln!("fedsched: timed out after {timeout} waiting for Healthy: {}", state.as_str());
                break (doc, state);
            }
            _ => break (doc, state),
        }
    };
    match workload {
        Some(_) => print_doc(output, &doc, ws::to_text),
        None => print_doc(output, &doc, ws::list_to_text),
    }
    Ok(ExitCode::from(state.exit_code()))
}

/// How often `status --wait` asks again.
const STATUS_WAIT_STEP: std::time::Duration = std::time::Duration::from_secs(2);

/// One status document: a workload's, or the list of those not Healthy.
fn status_document(
    cfg: &Config,
    dirs: &DirArgs,
    workload: Option<&WorkloadRef>,
    stuck_after: std::time::Duration,
    server: &ServerArgs,
) -> Result<serde_json::Value, Failure> {
    use crate::views::workload_status as ws;
    let opts = ws::Options { stuck_after };
    let query = format!("?stuckAfter={}s", stuck_after.as_secs());
    Ok(match (open_source(cfg, dirs, server)?, workload) {
        (Source::Server(api), Some(w)) => api.get(&format!("{}{query}", workload_path(w, "status")))?,
        (Source::Server(api), None) => api.get(&format!("/api/v1/workloads/status{query}"))?,
        (Source::Store(store), Some(w)) => ws::workload_document(&store, w, crate::util::clock::now_ms(), &opts)
            .map_err(|e| match e {
                ws::StatusError::NotPlaced(_) => invalid(e.into()),
                e => e.into(),
            })?,
        (Source::Store(store), None) => ws::unhealthy_document(&store, crate::util::clock::now_ms(), &opts)?,
    })
}

/// Where a read-only command reads: the store, or a running daemon's API.
enum Source {
    /// A private copy: a read-only command writes nothing under the state directory.
    Store(crate::store::StoreCopy),
    Server(Api),
}

/// A running daemon's API as the CLI uses it.
struct Api {
    url: ServerUrl,
    token: Option<crate::api::Token>,
}

impl Api {
    /// The daemon at `--server URL`, with `[http] token_file`'s token.
    fn at(cfg: &Config, url: &str) -> Result<Api, Failure> {
        Ok(Api { url: ServerUrl::parse(url).map_err(|e| invalid(e.into()))?, token: api_token(cfg)? })
    }

    /// The daemon that holds the store of `state`, when its address is known: `<state>/http.addr`
    /// (written by the daemon), else `[http] listen`.
    fn of_state(cfg: &Config, state: &std::path::Path) -> Result<Option<Api>, Failure> {
        let from_file = std::fs::read_to_string(state.join(crate::api::ADDR_FILE))
            .ok()
            .and_then(|s| s.trim().parse::<std::net::SocketAddr>().ok());
        let from_config = cfg.http.listen_addr().ok().flatten();
        match from_file.or(from_config).and_then(ServerUrl::from_addr) {
            Some(url) => Ok(Some(Api { url, token: api_token(cfg)? })),
            None => Ok(None),
        }
    }
}

/// `[http] token_file`'s bearer token, if one is configured.
fn api_token(cfg: &Config) -> Result<Option<crate::api::Token>, Failure> {
    match &cfg.http.token_file {
        Some(p) => Ok(Some(crate::api::Token::from_file(p)?)),
        None => Ok(None),
    }
}

impl Api {
    /// GETs a JSON document; maps HTTP errors to exit codes (404: 1, others: 2).
    fn get(&self, path: &str) -> Result<serde_json::Value, Failure> {
        let (code, body) =
            client::get(&self.url, path, self.token.as_ref().map(|t| t.expose()), std::time::Duration::from_secs(30))
                .with_context(|| format!("cannot ask the fedsched daemon at {}", self.url))?;
        let doc: serde_json::Value = serde_json::from_str(&body)
            .with_context(|| format!("{}{path}: answer is not JSON (HTTP {code})", self.url))?;
        match code {
            200 => Ok(doc),
            _ => {
                let message = doc["error"].as_str().unwrap_or("request failed").to_string();
                let error = anyhow::anyhow!("{}: HTTP {code}: {message}", self.url);
                Err(if code == 404 { invalid(error) } else { error.into() })
            }
        }
    }
}

fn workload_path(r: &WorkloadRef, what: &str) -> String {
    format!(
        "/api/v1/workloads/{}/{}/{}/{what}",
        crate::util::percent::encode(r.namespace.as_deref().unwrap_or("_")),
        crate::util::percent::encode(&r.kind),
        crate::util::percent::encode(&r.name)
    )
}

/// Opens the store, or, with `--server` or when a daemon holds the store, its API: the
/// address in `<state>/http.addr` (written by the daemon), else `[http] listen`.
fn open_source(cfg: &Config, dirs: &DirArgs, server: &ServerArgs) -> Result<Source, Failure> {
    if let Some(url) = &server.server {
        return Ok(Source::Server(Api::at(cfg, url)?));
    }
    let state = state_dir(cfg, dirs)?;
    if Store::in_use(&state) {
        return match Api::of_state(cfg, &state)? {
            Some(api) => {
                tracing::debug!(url = %api.url, "the store is in use; asking the running daemon");
                Ok(Source::Server(api))
            }
            None => Err(anyhow::Error::new(StoreError::Locked { path: state })
                .context("the store is in use and no daemon API is known (give --server URL)")
                .into()),
        };
    }
    match Store::open_read_only(&state) {
        Ok(store) => Ok(Source::Store(store)),
        Err(e) => Err(anyhow::Error::new(e).context("cannot open the store").into()),
    }
}

/// [`open_source`], or an empty private store when the state directory has none.
fn open_source_or_empty(cfg: &Config, dirs: &DirArgs, server: &ServerArgs) -> Result<Source, Failure> {
    if server.server.is_none() && !Store::exists(&state_dir(cfg, dirs)?) {
        return match crate::store::StoreCopy::empty() {
            Ok(store) => Ok(Source::Store(store)),
            Err(e) => Err(anyhow::Error::new(e).context("cannot open an empty store").into()),
        };
    }
    open_source(cfg, dirs, server)
}

/// The validated inputs and the profiles the read-only commands (`explain`, `resources`) use
/// when they read the store themselves: `--policies` or `policy_dir` from the config.
fn read_inputs(
    cfg: &Config,
    dirs: &DirArgs,
) -> Result<(reconcile::Inputs, crate::schedule::profile::Profiles), Failure> {
    let policy_dir = dirs
        .policy_dir
        .clone()
        .or_else(|| cfg.policy_dir.clone())
        .ok_or_else(|| missing("policy_dir", "--policies"))?;
    let settings = reconcile::Settings::from_config(cfg, false).map_err(|e| invalid(e.into()))?;
    let inputs = check::load(&policy_dir, &settings).map_err(|errs| invalid(invalid_inputs(&errs)))?;
    Ok((inputs, settings.profiles))
}

fn missing(key: &str, flag: &str) -> Failure {
    invalid(anyhow::anyhow!("{key} is not set: give {flag} DIR or a config file"))
}

fn state_dir(cfg: &Config, dirs: &DirArgs) -> Result<PathBuf, Failure> {
    dirs.state_dir.clone().or_else(|| cfg.state_dir.clone()).ok_or_else(|| missing("state_dir", "--state"))
}

/// A repository that did not load: an operational failure (exit 2) when a file could not be
/// read (an I/O error), else invalid input (exit 1), with every error on stderr.
fn load_failure(errors: &[crate::policy::LoadError]) -> Failure {
    match errors.iter().find(|e| e.io) {
        Some(e) => anyhow::anyhow!(
            "cannot read the policy repository: {e}; nothing was changed (an I/O error, not a policy error)"
        )
        .into(),
        None => invalid(invalid_inputs(errors)),
    }
}

fn invalid_inputs(errors: &[crate::policy::LoadError]) -> anyhow::Error {
    for e in errors {
        crate::errln!("{e}");
    }
    anyhow::anyhow!("{} error(s) in the policy repository; nothing was changed", errors.len())
}

fn render(cfg: &Config, dirs: &DirArgs, allow_mass_delete: bool) -> Result<ExitCode, Failure> {
    if cfg.ha.is_some() {
        // One writer: with [ha], only the elected leader (`fedsched run`) publishes.
        return Err(Failure {
            code: exit::USAGE,
            error: anyhow::anyhow!(
                "the configuration has [ha]: only the elected leader (`fedsched run`) publishes the output; \
                 `fedsched render` would write it outside the election (use a configuration without [ha] and \
                 another output directory for a one-off render)"
            ),
        });
    }
    let paths = cfg.paths(&dirs.overrides()).map_err(|e| invalid(e.into()))?;
    let settings = reconcile::Settings::from_config(cfg, allow_mass_delete).map_err(|e| invalid(e.into()))?;
    let progress = progress::Progress::start("render: loading the policy repository");
    let loaded = check::load(&paths.policy_dir, &settings);
    drop(progress);
    let mut inputs = loaded.map_err(|errs| load_failure(&errs))?;
    for n in &inputs.set.notes {
        crate::errln!("note: {n}");
    }
    for w in crate::policy::validate::warnings(&inputs.set) {
        crate::errln!("warning: {w}");
    }
    let store = Store::open(&paths.state_dir).context("cannot open the store")?;
    // Refused while a daemon (or another render) owns the output directory: exit 2.
    let _claim = crate::publish::claim_output(&paths.output_dir, &paths.state_dir, "render")?;
    let reconciler = Reconciler::new(store, settings);
    let progress = progress::Progress::start("render: polling the live members");
    // Live members: one poll round, then the pass.
    poll_once(cfg, &mut inputs, &reconciler.store)?;
    progress.phase("render: scheduling, rendering and publishing");
    let reconciled =
        reconciler.reconcile(&inputs, &paths.output_dir, crate::publish::Trigger::Render, crate::util::clock::now_ms());
    drop(progress);
    let report = match reconciled {
        Ok(r) => r,
        Err(ReconcileError::Invalid(errs)) => return Err(load_failure(&errs)),
        Err(e) => return Err(e.into()),
    };
    for p in &report.unschedulable {
        crate::errln!("unschedulable: {}: {}", p.workload, p.reason);
    }
    for p in &report.render_failures {
        crate::errln!("render failed: {} on {}: {}", p.workload, p.cluster.as_deref().unwrap_or("?"), p.reason);
    }
    for (w, clusters) in &report.suspended {
        crate::errln!(
            "suspended: {w}: dispatching to {} (its files stay as they were)",
            reconcile::suspended_on(clusters)
        );
    }
    for w in &report.lazy_held {
        crate::errln!("lazy-held: {w}: {}", reconcile::LAZY_HELD_NOTE);
    }
    for h in &report.held_clusters {
        crate::errln!("held: {h}");
    }
    for m in &report.held_moves {
        crate::errln!("held whole: {m}");
    }
    if let Some(c) = &report.commit {
        crate::errln!("committed {c}");
    }
    crate::errln!("{}", report.summary());
    Ok(ExitCode::SUCCESS)
}

/// Polls the live members of `inputs` once (a list, no watches) and puts their views into
/// `inputs`; a failed member keeps its last stored snapshot.
fn poll_once(cfg: &Config, inputs: &mut reconcile::Inputs, store: &Store) -> Result<(), Failure> {
    let (targets, unknown) = crate::members::live::targets(cfg, &inputs.set);
    for name in unknown {
        crate::errln!("warning: [clusters.{name}] has no Cluster object in the policy repository; not polled");
    }
    if targets.is_empty() {
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // One round: a list, no watches (they would end with the process).
    let poll = crate::config::PollSection { watch: false, ..cfg.poll.clone() };
    let mut poller = crate::members::live::Poller::new(poll, cfg.reconcile.interval);
    let report = rt.block_on(poller.round(&targets));
    for (cluster, error, _) in &report.failed {
        crate::errln!("poll failed: {cluster}: {error}; using its last stored snapshot");
    }
    inputs.apply_live(poller.view(), store);
    Ok(())
}
