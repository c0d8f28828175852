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
}
