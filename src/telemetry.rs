//! Logging: tracing with structured fields; human-readable text on a terminal, JSON lines
//! under systemd (journald keeps each line; `journalctl -o json` shows the fields).

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. `FEDSCHED_LOG` overrides `level`. Logs go to stderr so
/// that command output on stdout stays machine-readable. Safe to call once per process;
/// later calls are ignored.
pub fn init(format: LogFormat, level: &str) {
    let filter = filter(std::env::var("FEDSCHED_LOG").ok().as_deref(), level);
    let json = match format {
        LogFormat::Json => true,
        LogFormat::Text => false,
        LogFormat::Auto => std::env::var_os("JOURNAL_STREAM").is_some(),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false);
    let result = if json {
        builder.json().flatten_event(true).with_current_span(false).try_init()
    } else {
        builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init()
    };
    // A second init (tests, repeated CLI entry) keeps the first subscriber.
    let _ = result;
}

/// kube's client logs an ERROR of its own for every failed request (`failed with error client
/// error (SendRequest)`), naming no cluster; the poller logs each failed poll itself, with the
/// cluster and a readable reason. Off unless the filter names `kube_client` itself.
const KUBE_REQUEST_LOG: &str = "kube_client::client::builder=off";

/// The filter of `FEDSCHED_LOG` (when set and valid), else of `level`, else `info`; with
/// [`KUBE_REQUEST_LOG`] unless the chosen directives name `kube_client`.
fn filter(env: Option<&str>, level: &str) -> EnvFilter {
    let (filter, spec) = match env.map(|e| (EnvFilter::try_new(e), e)) {
        Some((Ok(f), e)) => (f, e),
        _ => match EnvFilter::try_new(level) {
            Ok(f) => (f, level),
            Err(_) => (EnvFilter::new("info"), "info"),
        },
    };
    match (spec.contains("kube_client"), KUBE_REQUEST_LOG.parse()) {
        (false, Ok(directive)) => filter.add_directive(directive),
        _ => filter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_request_errors_are_off_unless_asked_for() {
        assert!(filter(None, "info").to_string().contains(KUBE_REQUEST_LOG));
        assert!(filter(Some("debug"), "info").to_string().contains(KUBE_REQUEST_LOG));
        let asked = filter(Some("info,kube_client=debug"), "info").to_string();
        assert!(!asked.contains("=off"), "{asked}");
        // An invalid FEDSCHED_LOG falls back to the configured level.
        assert!(filter(Some("=="), "warn").to_string().contains("warn"));
    }
}
