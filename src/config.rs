//! The daemon's configuration file (TOML), documented in `config/fedsched.toml`.
//!
//! Parsed strictly: an unknown key or a bad duration is an error that names the key. Command
//! line flags override file values ([`Overrides`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// A configuration problem, naming the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {key}: {message}")]
    Invalid { path: PathBuf, key: String, message: String },
    #[error("{0} is not set: give it in the config file or on the command line")]
    Missing(&'static str),
}

/// Log output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// JSON when running under systemd (JOURNAL_STREAM set), text otherwise.
    #[default]
    Auto,
    Text,
    Json,
}

/// Access to one member cluster's Kubernetes API (used by the live poller): a kubeconfig
/// (client certificates, tokens, token files and exec credential plugins work as in kubectl),
/// or the Cluster object's `spec.apiEndpoint` with a bearer token file and a CA file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterAccess {
    /// Path of a kubeconfig file.
    pub kubeconfig: Option<PathBuf>,
    /// Context in that kubeconfig (default: its current context).
    pub context: Option<String>,
    /// Bearer token file, used with the Cluster object's `spec.apiEndpoint` (re-read when it
    /// changes; its content never appears in logs, the store or the output).
    pub token_file: Option<PathBuf>,
    /// CA bundle file for the API endpoint.
    pub ca_file: Option<PathBuf>,
    /// The age recipient (`age1…`) this cluster's Secrets are encrypted for with `[secrets]
    /// mode = "sops"` (wins over the Cluster object's `fedsched.io/age-recipient`). An entry
    /// with only this key configures no live access.
    pub age_recipient: Option<String>,
}

impl ClusterAccess {
    /// Whether the entry configures live access (not only an age recipient).
    pub fn is_live(&self) -> bool {
        let ClusterAccess { kubeconfig, context, token_file, ca_file, age_recipient } = self;
        age_recipient.is_none()
            || kubeconfig.is_some()
            || context.is_some()
            || token_file.is_some()
            || ca_file.is_some()
    }
}

/// `[secrets]`: how Secrets are written to the output (`crate::secrets`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretsSection {
    /// `"sops"`, `"omit"` or `"plain"`; unset, a Secret is not written (an error naming it).
    pub mode: Option<crate::secrets::Mode>,
}

/// `[output]`: the format of the output directory (`crate::render::layout`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// `"kustomize"` (default): a `kustomization.yaml` per cluster directory; `"flux"`: the
    /// same, and a Flux `Kustomization` per cluster at `clusters/<cluster>/fedsched.yaml`.
    pub layout: LayoutName,
    /// What the Flux `Kustomization`s say (`layout = "flux"`).
    pub flux: FluxSection,
}

/// `[output] layout`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LayoutName {
    #[default]
    Kustomize,
    Flux,
}

/// `[output.flux]`: the Flux `Kustomization` of each cluster.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FluxSection {
    /// `metadata.namespace` (default `flux-system`).
    pub namespace: String,
    /// `spec.interval` (default `10m`).
    pub interval: String,
    /// `spec.sourceRef.kind` (default `GitRepository`).
    pub source_kind: String,
    /// `spec.sourceRef.name`: the source that holds the output directory (default
    /// `flux-system`, the one `flux bootstrap` makes).
    pub source_name: String,
    /// `spec.sourceRef.namespace` (default: the Kustomization's own).
    pub source_namespace: Option<String>,
    /// The output directory's path in the source (default `.`, its root).
    pub path: String,
    /// `spec.decryption.secretRef.name` with `[secrets] mode = "sops"` (default: none).
    pub decryption_secret: Option<String>,
    /// `spec.kubeConfig.secretRef.name`, `{cluster}` replaced by the cluster's name (default:
    /// none, the Kustomization applies to the cluster its Flux runs on).
    pub kubeconfig_secret: Option<String>,
}

impl Default for FluxSection {
    fn default() -> Self {
        let d = crate::render::layout::Flux::default();
        FluxSection {
            namespace: d.namespace,
            interval: d.interval,
            source_kind: d.source_kind,
            source_name: d.source_name,
            source_namespace: d.source_namespace,
            path: d.base_path,
            decryption_secret: None,
            kubeconfig_secret: d.kubeconfig_secret,
        }
    }
}

impl OutputSection {
    /// The layout a pass publishes with; `secrets` is `[secrets] mode` (`sops`: each Flux
    /// `Kustomization` decrypts).
    pub fn layout(&self, secrets: Option<crate::secrets::Mode>) -> crate::render::layout::Layout {
        use crate::render::layout::{Flux, Layout};
        let f = &self.flux;
        match self.layout {
            LayoutName::Kustomize => Layout::Kustomize,
            LayoutName::Flux => Layout::Flux(Flux {
                namespace: f.namespace.clone(),
                interval: f.interval.clone(),
                source_kind: f.source_kind.clone(),
                source_name: f.source_name.clone(),
                source_namespace: f.source_namespace.clone(),
                base_path: f.path.clone(),
                sops: (secrets == Some(crate::secrets::Mode::Sops)).then(|| f.decryption_secret.clone()),
                kubeconfig_secret: f.kubeconfig_secret.clone(),
            }),
        }
    }
}

/// `[reconcile]`: when the loop runs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReconcileSection {
    /// Periodic reconcile even when nothing changed (also the poll interval).
    #[serde(deserialize_with = "duration")]
    pub interval: Duration,
    /// Quiet time after the last file event before reconciling (a git checkout is one event).
    #[serde(deserialize_with = "duration")]
    pub debounce: Duration,
    /// Longest time from SIGTERM to the end of the process: a pass under way is asked to stop
    /// (a quarter of it), a publish stops at its next safe step, then the listener and the store.
    #[serde(deserialize_with = "duration")]
    pub shutdown_timeout: Duration,
}

impl Default for ReconcileSection {
    fn default() -> Self {
        ReconcileSection {
            interval: Duration::from_secs(30),
            debounce: Duration::from_millis(500),
            shutdown_timeout: Duration::from_secs(10),
        }
    }
}

/// `[poll]`: member cluster polling (every `reconcile.interval`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PollSection {
    /// Deadline for one poll of one cluster (all its pages).
    #[serde(deserialize_with = "duration")]
    pub timeout: Duration,
    /// Longest wait for a connection or for the next bytes of a response.
    #[serde(deserialize_with = "duration")]
    pub read_timeout: Duration,
    /// How many clusters are polled at once.
    pub concurrency: usize,
    /// Items per list page (`limit`).
    pub page_size: u32,
    /// Longest backoff of a failing cluster (the backoff starts at the poll interval and
    /// doubles, with jitter).
    #[serde(deserialize_with = "duration")]
    pub max_backoff: Duration,
    /// List each cluster once, then keep it current with watches (`?watch=1`, from the list's
    /// resource version, relisting on 410 Gone) and serve the rounds from that cache. Off:
    /// every round lists every cluster.
    pub watch: bool,
    /// How often each member's API discovery documents (`/api`, `/apis`: the APIs it serves)
    /// are read again; they are also read at start and when a member recovers.
    #[serde(deserialize_with = "duration")]
    pub discovery_interval: Duration,
    /// How long a member's HTTP/2 watch connection may stay silent before it is pinged; a ping
    /// not answered within `read_timeout` closes the connection and fails both its watches:
    /// the member is Unreachable at once (a peer that hangs with the connection open). 0: no
    /// pings.
    #[serde(deserialize_with = "duration")]
    pub watch_ping_interval: Duration,
}

impl Default for PollSection {
    fn default() -> Self {
        PollSection {
            timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(5),
            concurrency: 32,
            page_size: 500,
            max_backoff: Duration::from_secs(300),
            watch: true,
            discovery_interval: Duration::from_secs(600),
            watch_ping_interval: Duration::from_secs(30),
        }
    }
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    pub format: LogFormat,
    /// A tracing filter (`info`, `fedsched=debug`); `FEDSCHED_LOG` overrides it.
    pub level: String,
}

impl Default for LogSection {
    fn default() -> Self {
        LogSection { format: LogFormat::Auto, level: "info".into() }
    }
}

/// `[publish]`: the mass-deletion guard of the output directory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PublishSection {
    /// Largest share (0.0–1.0) of a cluster's objects one pass may remove before that cluster
    /// is held; 1.0 turns the guard off.
    pub max_delete_ratio: f64,
    /// Remove whatever a pass decides, however much (the `--allow-mass-delete` flag, always on).
    pub allow_mass_delete: bool,
    /// Karmada's namespace propagation: every cluster directory gets the Namespace of each
    /// namespace its objects are in (default on).
    pub namespaces: bool,
}

// `max_delete_ratio` is checked to lie in 0.0..=1.0 when parsed, so it is never NaN.
impl Eq for PublishSection {}

impl Default for PublishSection {
    fn default() -> Self {
        PublishSection {
            max_delete_ratio: crate::publish::DEFAULT_MAX_DELETE_RATIO,
            allow_mass_delete: false,
            namespaces: true,
        }
    }
}

/// `[git]`: commit (and push) the output directory after every pass that changed it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GitSection {
    /// Git mode on or off.
    pub enabled: bool,
    /// Author and committer name of fedsched's commits.
    pub author_name: String,
    /// Author and committer e-mail.
    pub author_email: String,
    /// Remote name or URL to push to; none = commit only.
    pub remote: Option<String>,
    /// Branch pushed to (and created by `git init` when the output is not yet a repository).
    pub branch: String,
    /// Push after each commit (with retry) when a remote is set.
    pub push: bool,
    /// A fetch or push still running after this is killed (with `[ha]`, at the lease's renew
    /// deadline if that comes first).
    #[serde(deserialize_with = "duration")]
    pub push_timeout: Duration,
}

impl Default for GitSection {
    fn default() -> Self {
        let d = crate::publish::git::GitOptions::default();
        GitSection {
            enabled: false,
            author_name: d.author_name,
            author_email: d.author_email,
            remote: None,
            branch: d.branch,
            push: d.push,
            push_timeout: d.push_timeout,
        }
    }
}

/// `[http]`: the status API, metrics and health endpoints ([`crate::api`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSection {
    /// `host:port` to listen on; `""` disables the listener. Port 0 picks a free port (the
    /// bound address is written to `<state_dir>/http.addr`).
    pub listen: String,
    /// File holding a bearer token required by `/api/v1/…` (and by `/metrics` when
    /// `metrics_require_token`). Its contents are never logged.
    pub token_file: Option<PathBuf>,
    /// Whether `/metrics` also requires the token (health endpoints never do).
    pub metrics_require_token: bool,
    /// `/healthz` answers 503 (and systemd's watchdog is not fed) when the loop has not turned
    /// for this long, a pass has run for longer, or no pass has finished for twice
    /// `reconcile.interval` plus this (`views::status::Heartbeat::stalled`).
    #[serde(deserialize_with = "duration")]
    pub heartbeat_timeout: Duration,
    /// Connections served at once; one accepted beyond it is closed at once.
    pub max_connections: usize,
    /// A connection that takes longer to send a request's headers, or idles longer between
    /// requests, is closed.
    #[serde(deserialize_with = "duration")]
    pub header_timeout: Duration,
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection {
            listen: "127.0.0.1:9464".into(),
            token_file: None,
            metrics_require_token: false,
            heartbeat_timeout: Duration::from_secs(60),
            max_connections: 256,
            header_timeout: Duration::from_secs(10),
        }
    }
}

impl HttpSection {
    /// The address to listen on, or `None` when the listener is disabled.
    pub fn listen_addr(&self) -> Result<Option<std::net::SocketAddr>, String> {
        let s = self.listen.trim();
        if s.is_empty() {
            return Ok(None);
        }
        s.parse().map(Some).map_err(|e| format!("invalid address {s:?}: {e} (use e.g. \"127.0.0.1:9464\")"))
    }
}

/// `[ha]`: high availability. Several instances run; the one holding a `coordination.k8s.io/v1`
/// Lease on the host cluster publishes, the others poll and decide in shadow ([`crate::ha`]).
/// Without the section there is no election: the instance publishes (as before).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HaSection {
    /// Path of a kubeconfig for the host cluster (or `server` + `token_file`).
    pub kubeconfig: Option<PathBuf>,
    /// Context in that kubeconfig (default: its current context).
    pub context: Option<String>,
    /// The host cluster's API server URL (with `token_file`, optionally `ca_file`).
    pub server: Option<String>,
    /// Bearer token file for `server` (re-read when it rotates; never logged).
    pub token_file: Option<PathBuf>,
    /// CA bundle for `server`.
    pub ca_file: Option<PathBuf>,
    /// Namespace of the Lease.
    pub lease_namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// This instance's identity in the Lease (default: hostname + "_" + pid, as client-go
    /// users usually build it).
    pub identity: Option<String>,
    /// How long a lease is valid after its last renewal, for the others (client-go: 15 s).
    #[serde(deserialize_with = "duration")]
    pub lease_duration: Duration,
    /// The leader stops publishing when it could not renew for this long (client-go: 10 s).
    #[serde(deserialize_with = "duration")]
    pub renew_deadline: Duration,
    /// Time between attempts to acquire or renew (client-go: 2 s).
    #[serde(deserialize_with = "duration")]
    pub retry_period: Duration,
}

impl Default for HaSection {
    fn default() -> Self {
        HaSection {
            kubeconfig: None,
            context: None,
            server: None,
            token_file: None,
            ca_file: None,
            lease_namespace: "default".into(),
            lease_name: "fedsched".into(),
            identity: None,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl HaSection {
    /// client-go's rules: lease_duration > renew_deadline > 1.2 × retry_period > 0, a host
    /// cluster given (kubeconfig, or server + token_file), a lease name and namespace.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, m: String| Err((format!("ha.{k}"), m));
        if self.retry_period.is_zero() {
            return bad("retry_period", "must be greater than zero".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return bad(
                "lease_duration",
                format!(
                    "must be greater than renew_deadline ({} ≤ {})",
                    humantime::format_duration(self.lease_duration),
                    humantime::format_duration(self.renew_deadline)
                ),
            );
        }
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return bad("renew_deadline", "must be greater than 1.2 × retry_period (client-go's jitter factor)".into());
        }
        match (&self.kubeconfig, &self.server, &self.token_file) {
            (Some(_), None, None) | (None, Some(_), Some(_)) => {}
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return bad("kubeconfig", "give kubeconfig or server + token_file, not both".into());
            }
            (None, Some(_), None) => return bad("token_file", "is required with server".into()),
            (None, None, _) => return bad("server", "the host cluster: give kubeconfig or server + token_file".into()),
        }
        if self.context.is_some() && self.kubeconfig.is_none() {
            return bad("context", "is used only with kubeconfig".into());
        }
        for (k, v) in [("lease_namespace", &self.lease_namespace), ("lease_name", &self.lease_name)] {
            if v.is_empty()
                || v.len() > 253
                || !v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            {
                return bad(k, format!("{v:?} is not a Kubernetes object name"));
            }
        }
        if self.identity.as_deref().is_some_and(str::is_empty) {
            return bad("identity", "must not be empty".into());
        }
        Ok(())
    }

    /// The identity in force: `identity`, or hostname + "_" + pid.
    pub fn identity(&self) -> String {
        self.identity.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .or_else(|| std::env::var("HOSTNAME").ok())
                .unwrap_or_else(|| "localhost".into());
            format!("{host}_{}", std::process::id())
        })
    }
}

/// One label-backed dimension of `[model.label_resources]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelResource {
    /// Node label holding each node's amount (a quantity).
    pub label: String,
    /// Whether it bounds estimates (default true).
    #[serde(default = "yes")]
    pub hard: bool,
}

fn yes() -> bool {
    true
}

/// `[model]`: the resource model (dimensions, CPU performance, confidence, assumed workloads).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSection {
    /// Extended resources to model by name (`example.com/dpu`).
    pub extended: Vec<String>,
    /// Label-backed dimensions by resource name.
    pub label_resources: BTreeMap<String, LabelResource>,
    /// CPU performance factor by node (or Cluster) label value.
    pub cpu_performance: BTreeMap<String, f64>,
    /// Labels looked up in `cpu_performance`, first match wins.
    pub cpu_performance_labels: Vec<String>,
    /// A built-in table of CPU performance factors by instance type, below `cpu_performance`
    /// (`"azure-acu"`: Microsoft's Azure Compute Units; none by default).
    pub cpu_performance_table: Option<String>,
    /// Confidence halves every this long once a live snapshot is older than `fresh_for`.
    #[serde(deserialize_with = "duration")]
    pub confidence_half_life: Duration,
    /// A live snapshot this young has confidence 1.
    #[serde(deserialize_with = "duration")]
    pub fresh_for: Duration,
    /// Confidence factor per consecutive failed poll (0.0–1.0).
    pub failure_penalty: f64,
    /// Below this confidence (0.0–1.0) a cluster receives no new replicas.
    pub min_confidence: f64,
    /// How long decisions not yet running in a live member are deducted from it.
    #[serde(deserialize_with = "duration")]
    pub assumed_ttl: Duration,
    /// Whether replicas a pass places on an offline member are deducted from what the pass's
    /// later decisions see there (`false`: every decision reads the Cluster status as declared,
    /// as Karmada's general estimator does).
    pub offline_deductions: bool,
}

// Every float is checked finite when parsed, so equality is reflexive.
impl Eq for ModelSection {}

impl Default for ModelSection {
    fn default() -> Self {
        let d = crate::model::dimensions::ModelSettings::default();
        ModelSection {
            extended: d.extended,
            label_resources: BTreeMap::new(),
            cpu_performance: d.cpu_performance,
            cpu_performance_labels: d.cpu_performance_labels,
            cpu_performance_table: None,
            confidence_half_life: Duration::from_millis(d.confidence_half_life_ms),
            fresh_for: Duration::from_millis(d.fresh_for_ms),
            failure_penalty: d.failure_penalty,
            min_confidence: d.min_confidence,
            assumed_ttl: Duration::from_millis(d.assumed_ttl_ms),
            offline_deductions: d.offline_deductions,
        }
    }
}

impl ModelSection {
    /// Checks ranges; the error is (key, message).
    pub fn check(&self) -> Result<(), (String, String)> {
        for (k, v) in &self.cpu_performance {
            if !v.is_finite() || *v <= 0.0 {
                return Err((format!("model.cpu_performance.{k}"), format!("must be a finite number > 0, not {v}")));
            }
        }
        if let Some(name) = &self.cpu_performance_table
            && crate::model::cpu_table::CpuTable::named(name).is_none()
        {
            return Err((
                "model.cpu_performance_table".into(),
                format!("unknown table {name:?} (known: {})", crate::model::cpu_table::CpuTable::NAMES.join(", ")),
            ));
        }
        for (key, v) in [("model.failure_penalty", self.failure_penalty), ("model.min_confidence", self.min_confidence)]
        {
            if !(0.0..=1.0).contains(&v) {
                return Err((key.into(), format!("must be between 0.0 and 1.0, not {v}")));
            }
        }
        if self.confidence_half_life.is_zero() {
            return Err(("model.confidence_half_life".into(), "must be greater than zero".into()));
        }
        Ok(())
    }

    /// The settings the model reads.
    pub fn settings(&self) -> crate::model::dimensions::ModelSettings {
        crate::model::dimensions::ModelSettings {
            extended: self.extended.clone(),
            label_dimensions: self
                .label_resources
                .iter()
                .map(|(r, l)| crate::model::dimensions::LabelDimension {
                    resource: r.clone(),
                    label: l.label.clone(),
                    hard: l.hard,
                })
                .collect(),
            cpu_performance: self.cpu_performance.clone(),
            cpu_performance_labels: self.cpu_performance_labels.clone(),
            cpu_performance_table: self
                .cpu_performance_table
                .as_deref()
                .and_then(crate::model::cpu_table::CpuTable::named),
            confidence_half_life_ms: self.confidence_half_life.as_millis() as u64,
            fresh_for_ms: self.fresh_for.as_millis() as u64,
            failure_penalty: self.failure_penalty,
            min_confidence: self.min_confidence,
            assumed_ttl_ms: self.assumed_ttl.as_millis() as u64,
            offline_deductions: self.offline_deductions,
        }
    }
}

/// `[reschedule]`: failover, descheduling of Unschedulable replicas, move-back and the rules
/// that keep them from flapping (the stability engine, `schedule::stability`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RescheduleSection {
    /// Unschedulable replicas of a Divided workload are moved after this long.
    #[serde(deserialize_with = "duration")]
    pub unschedulable_after: Duration,
    /// A recovered member gets workloads back after being healthy this long.
    #[serde(deserialize_with = "duration")]
    pub stable_for: Duration,
    /// Most move-backs per pass.
    pub max_moves_per_pass: usize,
    /// Whether workloads return to the members their policy prefers (Karmada: never).
    pub move_back: bool,
    /// Most evictions, reschedules and purges in any minute.
    pub max_evictions_per_minute: usize,
    /// Share of live members unhealthy at once (0.0–1.0) above which nothing is evicted.
    pub unhealthy_threshold: f64,
    /// Toleration of `cluster.karmada.io/not-ready|unreachable:NoExecute` when a policy has
    /// none (Karmada's webhook default, 300 s).
    #[serde(deserialize_with = "duration")]
    pub toleration: Duration,
    /// Grace period of a cluster failover's graceful eviction.
    #[serde(deserialize_with = "duration")]
    pub grace_period: Duration,
    /// A workload that moved stays at least this long before it moves again.
    #[serde(deserialize_with = "duration")]
    pub min_stay: Duration,
    /// Whether members lost for the toleration have their workloads evicted.
    pub failover: bool,
}

// `unhealthy_threshold` is checked to lie in 0.0..=1.0 when parsed, so it is never NaN.
impl Eq for RescheduleSection {}

impl Default for RescheduleSection {
    fn default() -> Self {
        let d = crate::schedule::stability::StabilitySettings::default();
        let ms = Duration::from_millis;
        RescheduleSection {
            unschedulable_after: ms(d.unschedulable_after_ms),
            stable_for: ms(d.stable_for_ms),
            max_moves_per_pass: d.max_moves_per_pass,
            move_back: d.move_back,
            max_evictions_per_minute: d.max_evictions_per_minute,
            unhealthy_threshold: d.unhealthy_threshold,
            toleration: ms(d.default_toleration_ms),
            grace_period: ms(d.grace_period_ms),
            min_stay: ms(d.min_stay_ms),
            failover: d.cluster_failover,
        }
    }
}

impl RescheduleSection {
    /// The settings the stability engine reads.
    pub fn settings(&self) -> crate::schedule::stability::StabilitySettings {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        crate::schedule::stability::StabilitySettings {
            unschedulable_after_ms: ms(self.unschedulable_after),
            stable_for_ms: ms(self.stable_for),
            max_moves_per_pass: self.max_moves_per_pass,
            move_back: self.move_back,
            max_evictions_per_minute: self.max_evictions_per_minute,
            unhealthy_threshold: self.unhealthy_threshold,
            default_toleration_ms: ms(self.toleration),
            grace_period_ms: ms(self.grace_period),
            min_stay_ms: ms(self.min_stay),
            cluster_failover: self.failover,
        }
    }
}

/// `[policy]`: how the policy repository is walked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicySection {
    /// Symbolic links followed: `"inside"` (those that resolve inside the repository, the
    /// default) or `"never"`.
    pub follow_symlinks: crate::policy::load::Symlinks,
    /// Globs of repository paths not read (`*`, `?`, `**`; a glob without `/` matches a name at
    /// any depth); `.fedschedignore` at the repository's root adds more.
    pub ignore: Vec<String>,
}

impl PolicySection {
    /// The walk options of this section.
    pub fn walk_options(&self) -> crate::policy::load::WalkOptions {
        crate::policy::load::WalkOptions { symlinks: self.follow_symlinks, ignore: self.ignore.clone() }
    }
}

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The policy repository.
    pub policy_dir: Option<PathBuf>,
    /// Where rendered manifests are written (`<output_dir>/<cluster>/…`).
    pub output_dir: Option<PathBuf>,
    /// sled store and lock file.
    pub state_dir: Option<PathBuf>,
    #[serde(default)]
    pub reconcile: ReconcileSection,
    #[serde(default)]
    pub poll: PollSection,
    #[serde(default)]
    pub log: LogSection,
    #[serde(default)]
    pub http: HttpSection,
    /// Live access per member cluster, by Cluster name. Clusters not listed are offline.
    #[serde(default)]
    pub clusters: BTreeMap<String, ClusterAccess>,
    /// Scheduling profiles by name (`[profiles.<name>]`); `karmada-default` is built in.
    #[serde(default)]
    pub profiles: BTreeMap<String, crate::schedule::profile::ProfileConfig>,
    /// Price table for the `cost-first` scorer.
    #[serde(default)]
    pub cost: crate::schedule::profile::CostTable,
    #[serde(default)]
    pub publish: PublishSection,
    /// The format of the output directory.
    #[serde(default)]
    pub output: OutputSection,
    #[serde(default)]
    pub git: GitSection,
    /// The resource model.
    #[serde(default)]
    pub model: ModelSection,
    /// Karmada resource interpreter customizations beyond the repository's.
    #[serde(default)]
    pub interpreter: InterpreterSection,
    #[serde(default)]
    pub reschedule: RescheduleSection,
    /// How the policy repository is walked.
    #[serde(default)]
    pub policy: PolicySection,
    /// High availability: leader election on a Lease (absent: this instance always publishes).
    pub ha: Option<HaSection>,
    /// How Secrets are written.
    #[serde(default)]
    pub secrets: SecretsSection,
    /// The self-audit.
    #[serde(default)]
    pub audit: AuditSection,
}

/// `[audit]`: the daemon's self-audit (issue 46): every `interval` it decides afresh on its
/// store (read only), as `fedsched plan` does, and compares with what it kept between passes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSection {
    /// How often (`"0s"`: never).
    #[serde(deserialize_with = "duration")]
    pub interval: Duration,
}

impl Default for AuditSection {
    fn default() -> Self {
        AuditSection { interval: Duration::from_secs(3600) }
    }
}

/// `[interpreter]`: where else `ResourceInterpreterCustomization`s come from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InterpreterSection {
    /// Directories searched (recursively, `testdata/` skipped) for `*.yaml` / `*.yml` files
    /// holding customizations, for example a copy of Karmada's third-party customizations.
    /// They rank below the repository's customizations and above fedsched's built-ins.
    pub dirs: Vec<PathBuf>,
    /// Whether fedsched's built-in CRD interpreters are used (default true).
    pub builtins: bool,
}

impl Default for InterpreterSection {
    fn default() -> Self {
        InterpreterSection { dirs: Vec::new(), builtins: true }
    }
}

impl InterpreterSection {
    /// Reads every customization of `dirs`, in path order.
    pub fn load(&self) -> Result<Vec<std::sync::Arc<crate::model::interpreter::Customization>>, ConfigError> {
        let mut files = Vec::new();
        for dir in &self.dirs {
            collect_yaml(dir, &mut files).map_err(|source| ConfigError::Read { path: dir.clone(), source })?;
        }
        files.sort();
        let mut out = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|source| ConfigError::Read { path: f.clone(), source })?;
            let found =
                crate::model::interpreter::parse_customizations(&text, &f.display().to_string()).map_err(|e| {
                    ConfigError::Invalid { path: f.clone(), key: "interpreter.dirs".into(), message: e.to_string() }
                })?;
            out.extend(found.into_iter().map(std::sync::Arc::new));
        }
        Ok(out)
    }
}

fn collect_yaml(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "testdata") {
                collect_yaml(&path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
    Ok(())
}

/// Command-line values that win over the file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub policy_dir: Option<PathBuf>,
    pub output_dir: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
}

/// The three directories every pass needs, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub policy_dir: PathBuf,
    pub output_dir: PathBuf,
    pub state_dir: PathBuf,
}

impl Config {
    /// Parses configuration text; `path` is used in messages and to resolve relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let de = toml::Deserializer::parse(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: "(syntax)".into(),
            message: e.message().to_string(),
        })?;
        let mut cfg: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            ConfigError::Invalid {
                path: path.to_path_buf(),
                key: if key == "." { "(top level)".into() } else { key },
                message: inner.message().to_string(),
            }
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        for p in [&mut cfg.policy_dir, &mut cfg.output_dir, &mut cfg.state_dir].into_iter().flatten() {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        for access in cfg.clusters.values_mut() {
            for p in [&mut access.kubeconfig, &mut access.token_file, &mut access.ca_file].into_iter().flatten() {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            }
        }
        for (name, access) in &cfg.clusters {
            if let Some(r) = &access.age_recipient
                && let Err(e) = r.trim().parse::<age::x25519::Recipient>()
            {
                let (key, message) =
                    (format!("clusters.{name}.age_recipient"), format!("not an age recipient (age1…): {e}"));
                return Err(ConfigError::Invalid { path: path.to_path_buf(), key, message });
            }
        }
        if let Some(p) = cfg.http.token_file.as_mut()
            && p.is_relative()
        {
            *p = base.join(&*p);
        }
        if let Some(ha) = cfg.ha.as_mut() {
            for p in [&mut ha.kubeconfig, &mut ha.token_file, &mut ha.ca_file].into_iter().flatten() {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            }
            if let Err((key, message)) = ha.check() {
                return Err(ConfigError::Invalid { path: path.to_path_buf(), key, message });
            }
        }
        for p in &mut cfg.interpreter.dirs {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        if let Err(message) = cfg.http.listen_addr() {
            return Err(ConfigError::Invalid { path: path.to_path_buf(), key: "http.listen".into(), message });
        }
        if cfg.http.heartbeat_timeout.is_zero() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "http.heartbeat_timeout".into(),
                message: "must be greater than zero".into(),
            });
        }
        if cfg.reconcile.interval.is_zero() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "reconcile.interval".into(),
                message: "must be greater than zero".into(),
            });
        }
        if let Err((key, message)) = crate::schedule::profile::Profiles::from_config(&cfg.profiles, &cfg.cost) {
            return Err(ConfigError::Invalid { path: path.to_path_buf(), key, message });
        }
        if let Err((key, message)) = cfg.model.check() {
            return Err(ConfigError::Invalid { path: path.to_path_buf(), key, message });
        }
        if !(0.0..=1.0).contains(&cfg.publish.max_delete_ratio) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "publish.max_delete_ratio".into(),
                message: format!("must be between 0.0 and 1.0, not {}", cfg.publish.max_delete_ratio),
            });
        }
        if !(0.0..=1.0).contains(&cfg.reschedule.unhealthy_threshold) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "reschedule.unhealthy_threshold".into(),
                message: format!("must be between 0.0 and 1.0, not {}", cfg.reschedule.unhealthy_threshold),
            });
        }
        if cfg.git.enabled && (cfg.git.branch.is_empty() || cfg.git.author_name.is_empty()) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "git".into(),
                message: "branch and author_name must not be empty".into(),
            });
        }
        if cfg.poll.page_size == 0 || cfg.poll.timeout.is_zero() || cfg.poll.read_timeout.is_zero() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "poll".into(),
                message: "page_size, timeout and read_timeout must be greater than zero".into(),
            });
        }
        if cfg.poll.discovery_interval.is_zero() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "poll.discovery_interval".into(),
                message: "must be greater than zero".into(),
            });
        }
        let ping = cfg.poll.watch_ping_interval;
        if !ping.is_zero() && ping < Duration::from_secs(1) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "poll.watch_ping_interval".into(),
                message: "must be \"0s\" (no pings) or at least 1s".into(),
            });
        }
        if cfg.poll.concurrency == 0 {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "poll.concurrency".into(),
                message: "must be at least 1".into(),
            });
        }
        Ok(cfg)
    }

    /// The scheduling profiles: the configured ones beside `karmada-default`.
    pub fn profiles(&self) -> Result<crate::schedule::profile::Profiles, ConfigError> {
        crate::schedule::profile::Profiles::from_config(&self.profiles, &self.cost)
            .map(|p| p.with_model(std::sync::Arc::new(self.model.settings())))
            .map_err(|(key, message)| ConfigError::Invalid { path: PathBuf::from("(config)"), key, message })
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        Config::parse(&text, path)
    }

    /// Applies command-line overrides and checks the three directories are known.
    pub fn paths(&self, o: &Overrides) -> Result<Paths, ConfigError> {
        Ok(Paths {
            policy_dir: o
                .policy_dir
                .clone()
                .or_else(|| self.policy_dir.clone())
                .ok_or(ConfigError::Missing("policy_dir (--policies)"))?,
            output_dir: o
                .output_dir
                .clone()
                .or_else(|| self.output_dir.clone())
                .ok_or(ConfigError::Missing("output_dir (--out)"))?,
            state_dir: o
                .state_dir
                .clone()
                .or_else(|| self.state_dir.clone())
                .ok_or(ConfigError::Missing("state_dir (--state)"))?,
        })
    }
}

/// Deserializes a humantime duration (`"30s"`, `"5m"`, `"1h 30m"`).
fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s)
        .map_err(|e| serde::de::Error::custom(format!("invalid duration {s:?}: {e} (use e.g. \"30s\", \"5m\")")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/fedsched/fedsched.toml"))
    }

    #[test]
    fn ha_has_client_go_defaults_and_rules() {
        let c = parse("[ha]\nserver = \"https://host:6443\"\ntoken_file = \"token\"\n").expect("valid");
        let ha = c.ha.expect("[ha]");
        assert_eq!(
            (ha.lease_duration, ha.renew_deadline, ha.retry_period),
            (Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2))
        );
        assert_eq!(ha.token_file.as_deref(), Some(Path::new("/etc/fedsched/token")));
        assert!(ha.identity().ends_with(&format!("_{}", std::process::id())));
        assert!(parse("").expect("valid").ha.is_none(), "no [ha]: no election");
        let bad = |text: &str, key: &str| {
            let e = parse(text).expect_err(text).to_string();
            assert!(e.contains(key), "{text}: {e}");
        };
        bad("[ha]\nkubeconfig = \"k\"\nlease_duration = \"10s\"", "ha.lease_duration");
        bad("[ha]\nkubeconfig = \"k\"\nrenew_deadline = \"2s\"", "ha.renew_deadline");
        bad("[ha]\nserver = \"https://h\"", "ha.token_file");
        bad("[ha]\n", "ha.server");
        bad("[ha]\nkubeconfig = \"k\"\nserver = \"https://h\"", "ha.kubeconfig");
        bad("[ha]\nkubeconfig = \"k\"\nlease_name = \"Not_A_Name\"", "ha.lease_name");
        bad("[ha]\nkubeconfig = \"k\"\nleader = true", "ha.leader");
    }

    #[test]
    fn the_cpu_performance_table_is_opt_in_and_named() {
        let model = |text: &str| parse(text).expect(text).model.settings();
        assert!(!model("").has_cpu_performance(), "no table by default");
        let on = model("[model]\ncpu_performance_table = \"azure-acu\"");
        assert_eq!(on.cpu_performance_table, Some(crate::model::cpu_table::CpuTable::AzureAcu));
        let labels = |v: &str| BTreeMap::from([("node.kubernetes.io/instance-type".to_string(), v.to_string())]);
        assert_eq!((on.cpu_factor(&labels("Standard_D8as_v4")) * 100.0).round(), 140.0);
        assert_eq!(on.cpu_factor(&labels("m5.xlarge")), 1.0, "a size the table does not know");
        let e = parse("[model]\ncpu_performance_table = \"aws\"").expect_err("unknown").to_string();
        assert!(e.contains("model.cpu_performance_table") && e.contains("azure-acu"), "{e}");
    }

    #[test]
    fn watch_ping_interval_is_30s_off_at_zero_and_at_least_a_second() {
        assert_eq!(parse("").expect("empty").poll.watch_ping_interval, Duration::from_secs(30));
        assert_eq!(
            parse("[poll]\nwatch_ping_interval = \"0s\"").expect("off").poll.watch_ping_interval,
            Duration::ZERO
        );
        assert_eq!(
            parse("[poll]\nwatch_ping_interval = \"1s\"").expect("1s").poll.watch_ping_interval,
            Duration::from_secs(1)
        );
        let e = parse("[poll]\nwatch_ping_interval = \"500ms\"").expect_err("too often").to_string();
        assert!(e.contains("poll.watch_ping_interval"), "{e}");
    }

    #[test]
    fn reschedule_defaults_and_overrides() {
        let c = parse("").expect("empty");
        let d = c.reschedule.settings();
        assert_eq!(d, crate::schedule::stability::StabilitySettings::default());
        assert_eq!((d.unschedulable_after_ms, d.stable_for_ms, d.default_toleration_ms), (180_000, 300_000, 300_000));
        assert!(d.move_back && (d.unhealthy_threshold - 0.55).abs() < 1e-9);
        let c = parse(
            "[reschedule]\nunschedulable_after = \"1m\"\nstable_for = \"10m\"\nmax_moves_per_pass = 3\n\
             move_back = false\nmax_evictions_per_minute = 5\nunhealthy_threshold = 0.4\ntoleration = \"30s\"\n\
             grace_period = \"2m\"\nmin_stay = \"1m\"\nfailover = false\n",
        )
        .expect("reschedule");
        let s = c.reschedule.settings();
        assert_eq!((s.unschedulable_after_ms, s.stable_for_ms, s.max_moves_per_pass), (60_000, 600_000, 3));
        assert_eq!((s.move_back, s.max_evictions_per_minute, s.default_toleration_ms), (false, 5, 30_000));
        assert_eq!((s.grace_period_ms, s.min_stay_ms, s.cluster_failover), (120_000, 60_000, false));
        let e = parse("[reschedule]\nunhealthy_threshold = 1.5\n").expect_err("range").to_string();
        assert!(e.contains("reschedule.unhealthy_threshold"), "{e}");
        let e = parse("[reschedule]\nstable_fro = \"1m\"\n").expect_err("unknown").to_string();
        assert!(e.contains("stable_fro"), "{e}");
    }

    #[test]
    fn full_config_parses_and_resolves_relative_paths() {
        let c = parse(
            r#"
policy_dir = "policies"
output_dir = "/srv/out"
state_dir = "/var/lib/fedsched"
[reconcile]
interval = "5m"
debounce = "250ms"
[log]
format = "json"
[clusters.member1]
kubeconfig = "kube/member1.yaml"
context = "admin@member1"
"#,
        )
        .expect("valid");
        assert_eq!(c.policy_dir, Some(PathBuf::from("/etc/fedsched/policies")));
        assert_eq!(c.reconcile.interval, Duration::from_secs(300));
        assert_eq!(c.reconcile.debounce, Duration::from_millis(250));
        assert_eq!(c.log.format, LogFormat::Json);
        assert_eq!(c.clusters["member1"].kubeconfig, Some(PathBuf::from("/etc/fedsched/kube/member1.yaml")));
    }

    #[test]
    fn interpreter_section_resolves_dirs_and_loads_customizations() {
        let c = parse("[interpreter]\ndirs = [\"custom\"]\nbuiltins = false\n").expect("valid");
        assert_eq!(c.interpreter.dirs, vec![PathBuf::from("/etc/fedsched/custom")]);
        assert!(!c.interpreter.builtins);
        assert!(parse("").expect("valid").interpreter.builtins);
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("a/testdata")).expect("mkdir");
        let ric = "apiVersion: config.karmada.io/v1alpha1\nkind: ResourceInterpreterCustomization\nmetadata: {name: c}\nspec:\n  target: {apiVersion: x.io/v1, kind: X}\n  customizations:\n    replicaResource: {luaScript: 'function GetReplicas(o) return 1 end'}\n";
        std::fs::write(dir.path().join("a/customizations.yaml"), ric).expect("write");
        std::fs::write(dir.path().join("a/testdata/t.yaml"), "not: [a customization").expect("write");
        let section = InterpreterSection { dirs: vec![dir.path().to_path_buf()], builtins: true };
        let found = section.load().expect("loads, testdata skipped");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, "X");
        std::fs::write(dir.path().join("a/bad.yml"), ric.replace("return 1 end", "return end end")).expect("write");
        let e = section.load().expect_err("bad script").to_string();
        assert!(e.contains("bad.yml") && e.contains("luaScript"), "{e}");
    }

    #[test]
    fn unknown_key_is_named() {
        let e = parse("[reconcile]\nintervall = \"5m\"\n").expect_err("invalid").to_string();
        assert!(e.contains("intervall"), "{e}");
        let e = parse("polcy_dir = \"x\"\n").expect_err("invalid").to_string();
        assert!(e.contains("polcy_dir"), "{e}");
    }

    #[test]
    fn publish_and_git_sections() {
        let c = parse("").expect("valid");
        assert_eq!(c.publish, PublishSection { max_delete_ratio: 0.5, allow_mass_delete: false, namespaces: true });
        assert!(!c.git.enabled);
        let c = parse(
            "[publish]\nmax_delete_ratio = 0.25\nallow_mass_delete = true\n[git]\nenabled = true\n\
             author_name = \"bot\"\nauthor_email = \"bot@example.com\"\nremote = \"origin\"\nbranch = \"rendered\"\npush = false\n",
        )
        .expect("valid");
        assert_eq!(c.publish.max_delete_ratio, 0.25);
        assert!(c.publish.allow_mass_delete);
        assert_eq!(c.git.remote.as_deref(), Some("origin"));
        assert_eq!(c.git.branch, "rendered");
        assert!(!c.git.push);
        let e = parse("[publish]\nmax_delete_ratio = 1.5\n").expect_err("range").to_string();
        assert!(e.contains("publish.max_delete_ratio"), "{e}");
        let e = parse("[publish]\nmax_delete = 0.5\n").expect_err("unknown").to_string();
        assert!(e.contains("max_delete"), "{e}");
        let e = parse("[git]\nenable = true\n").expect_err("unknown").to_string();
        assert!(e.contains("enable"), "{e}");
    }

    #[test]
    fn bad_duration_is_named() {
        let e = parse("[reconcile]\ninterval = \"5 parsecs\"\n").expect_err("invalid").to_string();
        assert!(e.contains("reconcile.interval"), "{e}");
        assert!(e.contains("5 parsecs"), "{e}");
    }

    #[test]
    fn profiles_and_cost_parse_and_bad_ones_are_named() {
        let c = parse(
            "[profiles.binpack]\nscores = { most-allocated = 1 }\n[cost.regions.eu-west-1]\ncpu = 0.04\nmemory = 0.005\n",
        )
        .expect("valid");
        assert_eq!(c.profiles().expect("valid").names(), vec!["binpack", "karmada-default"]);
        let e = parse("[profiles.x]\nscores = { cheapest = 1 }\n").expect_err("invalid").to_string();
        assert!(e.contains("profiles.x") && e.contains("cheapest"), "{e}");
        let e = parse("[profiles.x]\nscore = { most-allocated = 1 }\n").expect_err("invalid").to_string();
        assert!(e.contains("score"), "{e}");
    }

    #[test]
    fn http_section_defaults_to_loopback_and_validates_the_address() {
        let c = parse("").expect("valid");
        assert_eq!(c.http.listen_addr().expect("ok"), Some("127.0.0.1:9464".parse().expect("addr")));
        let c = parse("[http]\nlisten = \"\"\ntoken_file = \"token\"\n").expect("valid");
        assert_eq!(c.http.listen_addr().expect("ok"), None);
        assert_eq!(c.http.token_file, Some(PathBuf::from("/etc/fedsched/token")));
        let e = parse("[http]\nlisten = \"localhost\"\n").expect_err("invalid").to_string();
        assert!(e.contains("http.listen"), "{e}");
    }

    #[test]
    fn overrides_win_and_missing_paths_are_reported() {
        let c = parse("policy_dir = \"/p\"\noutput_dir = \"/o\"\n").expect("valid");
        assert!(matches!(c.paths(&Overrides::default()), Err(ConfigError::Missing(_))));
        let p = c
            .paths(&Overrides { state_dir: Some("/s".into()), output_dir: Some("/o2".into()), ..Default::default() })
            .expect("complete");
        assert_eq!(p.output_dir, PathBuf::from("/o2"));
        assert_eq!(p.policy_dir, PathBuf::from("/p"));
    }
}
