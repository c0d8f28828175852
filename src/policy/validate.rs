//! Semantic validation of Karmada policies (the rules of Karmada's validating webhook).
use super::{LoadError, PolicySet};
/// stub
pub fn validate(_set: &PolicySet) -> Vec<LoadError> {
    Vec::new()
}
