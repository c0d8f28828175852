//! Semantic validation of Karmada policies (the rules of Karmada's validating webhook).
