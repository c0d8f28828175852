//! Stable content hashes. These values are stored (snapshot versions, decision keys, blob
//! names) and some are Karmada's (the Webster tie-break), so they never change between builds,
//! platforms or releases: no `std::hash::Hasher` with a random seed here — except the
//! in-memory maps' ([`KeyMap`]), which are never stored.

/// FNV-1a, 64 bit: the content hash used for versioning snapshots and inputs.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_more(FNV1A64_START, bytes)
}

/// FNV-1a 64's starting value (its offset basis): [`fnv1a64_more`] from it hashes bytes that
/// come in several pieces as [`fnv1a64`] hashes them joined.
pub const FNV1A64_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64 of `bytes` continued from the hash `h` of the bytes before them.
pub fn fnv1a64_more(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A hasher for in-memory maps keyed by process-local integer ids (compiled requests, label
/// constraints): a multiplication per word instead of SipHash's rounds. Ids are made by the
/// process, never read from outside, so no seed is needed against chosen collisions.
#[derive(Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by process-local ids, hashed with [`IdHasher`].
pub type IdMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// A set of process-local ids, hashed with [`IdHasher`].
pub type IdSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<IdHasher>>;

/// A map in memory keyed by names read from outside (object keys, cluster names): foldhash,
/// seeded per process (a repository cannot pick colliding names ahead of time), a few times
/// cheaper than SipHash over an object key's four strings. Never for stored values (the seed
/// changes every run; iteration order is arbitrary, as a `HashMap`'s always is).
pub type KeyMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A set of [`KeyMap`]'s kind.
pub type KeySet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// Appends an unambiguous byte encoding of a JSON value to `out` (a type tag, lengths before
/// contents), for hashing it in one piece: several times cheaper than serializing it (no
/// escaping) or than feeding a hasher value by value. For in-memory keys (the interpreter's
/// content cache); a stored digest takes [`fnv1a64`] of a stable text instead.
pub fn encode_json(out: &mut Vec<u8>, v: &serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Null => out.push(0),
        Value::Bool(b) => out.push(if *b { 1 } else { 2 }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push(3);
                out.extend_from_slice(&i.to_le_bytes());
            } else if let Some(u) = n.as_u64() {
                out.push(4);
                out.extend_from_slice(&u.to_le_bytes());
            } else {
                out.push(5);
                out.extend_from_slice(&n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes());
            }
        }
        Value::String(s) => {
            out.push(6);
            encode_str(out, s);
        }
        Value::Array(items) => {
            out.push(7);
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                encode_json(out, item);
            }
        }
        Value::Object(map) => {
            out.push(8);
            out.extend_from_slice(&(map.len() as u64).to_le_bytes());
            for (k, item) in map {
                encode_str(out, k);
                encode_json(out, item);
            }
        }
    }
}

fn encode_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// FNV-1a, 32 bit: Karmada's hash of a template UID for Webster tie-breaks.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn fnv_reference_values() {
        // Reference vectors of the FNV specification.
        assert_eq!(super::fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(super::fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(super::fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn json_hashes_tell_values_apart() {
        use serde_json::json;
        let hash = |v: &serde_json::Value| {
            let mut out = Vec::new();
            super::encode_json(&mut out, v);
            super::fnv1a64(&out)
        };
        let values = [
            json!(null),
            json!(1),
            json!(1.0),
            json!("1"),
            json!([1]),
            json!({"a": 1}),
            json!({"a": "1"}),
            json!([["a"], "b"]),
            json!([["a", "b"]]),
            json!({"ab": "c"}),
            json!({"a": "bc"}),
            json!(u64::MAX),
        ];
        for (i, a) in values.iter().enumerate() {
            assert_eq!(hash(a), hash(&a.clone()));
            for b in &values[i + 1..] {
                assert_ne!(hash(a), hash(b), "{a} and {b}");
            }
        }
    }
}
