//! The shipped systemd unit: valid, and hardened to an exposure score of at most 2.0.

use std::process::Command;

use crate::support::*;

#[test]
fn unit_is_hardened_to_at_most_2_0() {
    let unit = repo_root().join("systemd/fedsched.service");
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--threshold=20"])
        .arg(&unit)
        .output()
        .expect("systemd-analyze is required (apt-get install systemd)");
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("Overall exposure level"), "{report}");
}

#[test]
fn unit_declares_notify_watchdog_reload_and_dirs() {
    let unit = std::fs::read_to_string(repo_root().join("systemd/fedsched.service")).expect("unit");
    for line in [
        "Type=notify",
        "WatchdogSec=",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "StateDirectory=fedsched",
        "ConfigurationDirectory=fedsched",
        "User=fedsched",
    ] {
        assert!(unit.lines().any(|l| l.starts_with(line)), "missing {line}");
    }
}
