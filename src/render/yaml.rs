//! Placeholder until the emitter lands.
pub fn to_yaml(value: &serde_json::Value) -> String {
    serde_saphyr::to_string(value).unwrap_or_default()
}
