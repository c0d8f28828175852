//! Logging: tracing with structured fields; human-readable text on a terminal, JSON lines
//! under systemd (journald keeps each line; `journalctl -o json` shows the fields).

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. `FEDSCHED_LOG` overrides `level`. Logs go to stderr so
/// that command output on stdout stays machine-readable. Safe to call once per process;
/// later calls are ignored.
pub fn init(format: LogFormat, level: &str) {
    let filter = EnvFilter::try_from_env("FEDSCHED_LOG")
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
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
