//! Karmada's mutating-webhook defaults, applied after loading because there is no API server.
