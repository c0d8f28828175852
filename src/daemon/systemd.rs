//! systemd notification (`Type=notify`): READY, WATCHDOG, STATUS, RELOADING, STOPPING.
//! Every call is a no-op when `NOTIFY_SOCKET` is not set (tests, a terminal).

use sd_notify::NotifyState;

fn send(states: &[NotifyState<'_>]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(error) = sd_notify::notify(states) {
        tracing::warn!(%error, "cannot notify systemd");
    }
}

/// READY=1 with a status line.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// STATUS=…
pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

/// WATCHDOG=1: only from the reconcile loop itself, so a stuck loop stops the pings.
pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

/// RELOADING=1 (with the monotonic time systemd asks for).
pub fn reloading() {
    match NotifyState::monotonic_usec_now() {
        Ok(now) => send(&[NotifyState::Reloading, now]),
        Err(_) => send(&[NotifyState::Reloading]),
    }
}

/// STOPPING=1.
pub fn stopping() {
    send(&[NotifyState::Stopping]);
}

/// The watchdog interval systemd asks for, if any.
pub fn watchdog_interval() -> Option<std::time::Duration> {
    std::env::var_os("NOTIFY_SOCKET")?;
    sd_notify::watchdog_enabled()
}
