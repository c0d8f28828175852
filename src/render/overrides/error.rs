//! [`OverrideError`]: which policy, rule and overrider failed for a cluster, and why.

/// Why overrides could not be applied to an object for a cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{policy}: rule {rule}: {overrider}: {reason}")]
pub struct OverrideError {
    /// The policy (`OverridePolicy/NAMESPACE/NAME` or `ClusterOverridePolicy/NAME`).
    pub policy: String,
    /// Index of the rule in `overrideRules` (0 for the deprecated `overriders` form).
    pub rule: usize,
    /// The overrider, e.g. `plaintext[1]`, `fieldOverrider[0].yaml[2]`.
    pub overrider: String,
    /// What went wrong.
    pub reason: String,
}
