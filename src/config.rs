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
    /// Longest time a shutdown waits for the reconcile in progress.
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
}

impl Default for PollSection {
    fn default() -> Self {
        PollSection {
            timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(5),
            concurrency: 32,
            page_size: 500,
            max_backoff: Duration::from_secs(300),
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
    /// Live access per member cluster, by Cluster name. Clusters not listed are offline.
    #[serde(default)]
    pub clusters: BTreeMap<String, ClusterAccess>,
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
        if cfg.reconcile.interval.is_zero() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "reconcile.interval".into(),
                message: "must be greater than zero".into(),
            });
        }
        if cfg.poll.page_size == 0 || cfg.poll.timeout.is_zero() || cfg.poll.read_timeout.is_zero() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "poll".into(),
                message: "page_size, timeout and read_timeout must be greater than zero".into(),
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
    fn unknown_key_is_named() {
        let e = parse("[reconcile]\nintervall = \"5m\"\n").expect_err("invalid").to_string();
        assert!(e.contains("intervall"), "{e}");
        let e = parse("polcy_dir = \"x\"\n").expect_err("invalid").to_string();
        assert!(e.contains("polcy_dir"), "{e}");
    }

    #[test]
    fn bad_duration_is_named() {
        let e = parse("[reconcile]\ninterval = \"5 parsecs\"\n").expect_err("invalid").to_string();
        assert!(e.contains("reconcile.interval"), "{e}");
        assert!(e.contains("5 parsecs"), "{e}");
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
