//! Stable content hashes. These values are stored (snapshot versions, decision keys, blob
//! names) and some are Karmada's (the Webster tie-break), so they never change between builds,
//! platforms or releases: no `std::hash::Hasher` with a random seed here.

/// FNV-1a, 64 bit: the content hash used for versioning snapshots and inputs.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// FNV-1a, 64 bit, fed in pieces through [`std::io::Write`]: the same value as [`fnv1a64`] of
/// everything written, without building it (`serde_json::to_writer(&mut h, v)`).
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a64(u64);

impl Fnv1a64 {
    pub fn new() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }

    pub fn finish(&self) -> u64 {
        self.0
    }

    /// Feeds `bytes`.
    pub fn bytes(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }

    /// Feeds a JSON value, unambiguously (a type tag, lengths before contents), walking it
    /// directly: several times cheaper than hashing its serialized text.
    pub fn json(&mut self, v: &serde_json::Value) {
        use serde_json::Value;
        match v {
            Value::Null => self.bytes(b"n"),
            Value::Bool(b) => self.bytes(if *b { b"t" } else { b"f" }),
            Value::Number(n) => {
                self.bytes(b"#");
                if let Some(i) = n.as_i64() {
                    self.bytes(&i.to_le_bytes());
                } else if let Some(u) = n.as_u64() {
                    self.bytes(b"u");
                    self.bytes(&u.to_le_bytes());
                } else {
                    self.bytes(b"f");
                    self.bytes(&n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes());
                }
            }
            Value::String(s) => self.str(s),
            Value::Array(items) => {
                self.bytes(b"[");
                self.bytes(&(items.len() as u64).to_le_bytes());
                for item in items {
                    self.json(item);
                }
            }
            Value::Object(map) => {
                self.bytes(b"{");
                self.bytes(&(map.len() as u64).to_le_bytes());
                for (k, item) in map {
                    self.str(k);
                    self.json(item);
                }
            }
        }
    }

    fn str(&mut self, s: &str) {
        self.bytes(b"s");
        self.bytes(&(s.len() as u64).to_le_bytes());
        self.bytes(s.as_bytes());
    }
}

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64::new()
    }
}

impl std::io::Write for Fnv1a64 {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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
    fn streamed_fnv_is_fnv_of_the_whole() {
        use std::io::Write;
        let mut h = super::Fnv1a64::new();
        h.write_all(b"hello, ").and_then(|()| h.write_all(b"world")).expect("write");
        assert_eq!(h.finish(), super::fnv1a64(b"hello, world"));
    }

    #[test]
    fn json_hashes_tell_values_apart() {
        use serde_json::json;
        let hash = |v: &serde_json::Value| {
            let mut h = super::Fnv1a64::new();
            h.json(v);
            h.finish()
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
