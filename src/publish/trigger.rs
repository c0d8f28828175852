//! [`Trigger`]: what caused a pass — named in its log lines, the status's last pass, each history
//! record it writes and the commit message of its publish (git mode).

use std::fmt;

/// What caused a pass. One type from the daemon's loop (or a command) to every place that names
/// it; [`Trigger::as_str`] is the one spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Trigger {
    /// The daemon's first pass.
    Startup,
    /// The reconcile interval elapsed (with live members: after the round of polls it started).
    /// The default (a report built by hand).
    #[default]
    Timer,
    /// A round of polls saw a live member change.
    ClusterChange,
    /// The policy watch saw the repository change.
    PolicyChange,
    /// A round read the members' objects a progressive rollout newly wants (a stage's
    /// workloads and GitOps agents), so that they are known before its release.
    RolloutObjects,
    /// SIGHUP (or `systemctl reload`): the config read again and the whole output compared.
    Sighup,
    /// With `[ha]`: this daemon became the leader (adoption, then a pass).
    Takeover,
    /// The pass after a self-audit found a difference: it starts from the store.
    Audit,
    /// `fedsched render`: one pass of the command.
    Render,
    /// A preview (`fedsched plan`, the API's plan): decided, nothing published or recorded.
    Plan,
}

impl Trigger {
    /// Every trigger.
    pub const ALL: [Trigger; 10] = [
        Trigger::Startup,
        Trigger::Timer,
        Trigger::ClusterChange,
        Trigger::PolicyChange,
        Trigger::RolloutObjects,
        Trigger::Sighup,
        Trigger::Takeover,
        Trigger::Audit,
        Trigger::Render,
        Trigger::Plan,
    ];

    /// Kebab-case name: logs (`trigger`), the status, the history, the commit message.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Startup => "startup",
            Trigger::Timer => "timer",
            Trigger::ClusterChange => "cluster-change",
            Trigger::PolicyChange => "policy-change",
            Trigger::RolloutObjects => "rollout-objects",
            Trigger::Sighup => "sighup",
            Trigger::Takeover => "takeover",
            Trigger::Audit => "audit",
            Trigger::Render => "render",
            Trigger::Plan => "plan",
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Trigger {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
