//! render
//! Per-cluster manifests; [`yaml`] is the deterministic, consumer-safe YAML emitter.

pub mod yaml;
