//! Karmada's mutating-webhook defaults, applied after loading because there is no API server.
use super::PolicySet;
/// stub
pub fn apply(_set: &mut PolicySet) {}
