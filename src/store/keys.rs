//! Key layout of the store's trees.
//!
//! Numbers are big-endian so that byte order is numeric order; names are followed by
//! [`SEP`] (0x00), which cannot appear in Kubernetes names nor in [`ObjectKey::store_key`], so
//! `web` never shares a prefix with `web2`.
//!
//! | tree             | key                                   | value                   |
//! |------------------|---------------------------------------|-------------------------|
//! | `meta`           | `schema_version`, `history_seq`       | u32 / u64 big-endian    |
//! | `snapshots`      | `cluster 0x00 0x01 version`           | [`SnapshotMeta`]        |
//! | `snapshots`      | `cluster 0x00 0x02 version`           | `ClusterSnapshot`       |
//! | `snapshot_heads` | `cluster`                             | [`SnapshotMeta`] (head) |
//! | `placements`     | `store_key`                           | [`PlacementRecord`]     |
//! | `history`        | `store_key 0x00 seq`                  | [`HistoryRecord`]       |
//! | `blobs`          | `fnv1a64`                             | blob envelope: template and policy JSON, a pass's versions map, a universe of cluster names |
//! | `rollouts`       | `store_key`                           | `RolloutState` (a progressive rollout) |
//!
//! [`SnapshotMeta`]: super::SnapshotMeta
//! [`PlacementRecord`]: super::PlacementRecord
//! [`HistoryRecord`]: super::HistoryRecord

use crate::policy::ObjectKey;

use super::StoreError;

/// Separator after a name.
pub const SEP: u8 = 0x00;
/// Kind byte of a per-version snapshot meta key.
pub const SNAP_META: u8 = 0x01;
/// Kind byte of a per-version snapshot body key.
pub const SNAP_BODY: u8 = 0x02;

/// `meta` key of the store layout version.
pub const SCHEMA_VERSION: &[u8] = b"schema_version";
/// `meta` key of the last history sequence number handed out.
pub const HISTORY_SEQ: &[u8] = b"history_seq";

/// Rejects names that would break the key layout.
pub fn check_name(what: &'static str, name: &str) -> Result<(), StoreError> {
    if name.is_empty() {
        return Err(StoreError::InvalidName { what, name: name.to_string(), reason: "empty" });
    }
    if name.as_bytes().contains(&SEP) {
        return Err(StoreError::InvalidName { what, name: name.to_string(), reason: "contains a NUL byte" });
    }
    Ok(())
}

/// Key of a workload in `placements`; checked like a name.
pub fn workload(key: &ObjectKey) -> Result<Vec<u8>, StoreError> {
    let k = key.store_key();
    if k.as_bytes().contains(&SEP) {
        return Err(StoreError::InvalidName { what: "workload", name: key.to_string(), reason: "contains a NUL byte" });
    }
    Ok(k.into_bytes())
}

/// Prefix of all snapshot entries of one kind for a cluster.
pub fn snapshot_prefix(cluster: &str, kind: u8) -> Vec<u8> {
    let mut k = Vec::with_capacity(cluster.len() + 2 + 8);
    k.extend_from_slice(cluster.as_bytes());
    k.push(SEP);
    k.push(kind);
    k
}

/// Key of one version's meta or body.
pub fn snapshot(cluster: &str, kind: u8, version: u64) -> Vec<u8> {
    let mut k = snapshot_prefix(cluster, kind);
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// Prefix of a workload's history.
pub fn history_prefix(key: &ObjectKey) -> Result<Vec<u8>, StoreError> {
    let mut k = workload(key)?;
    k.push(SEP);
    Ok(k)
}

/// Key of one history record, from the workload's [`history_prefix`].
pub fn history(prefix: &[u8], seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 8);
    k.extend_from_slice(prefix);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// Key of a blob.
pub fn blob(hash: u64) -> [u8; 8] {
    hash.to_be_bytes()
}

/// Reads a big-endian u64 (a counter value or the tail of a key).
pub fn be_u64(tree: &'static str, bytes: &[u8]) -> Result<u64, StoreError> {
    let tail: [u8; 8] = bytes
        .len()
        .checked_sub(8)
        .and_then(|start| bytes[start..].try_into().ok())
        .ok_or_else(|| StoreError::BadKey { tree, key: bytes.to_vec() })?;
    Ok(u64::from_be_bytes(tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_endian_orders_numerically() {
        let a = snapshot("c", SNAP_META, 255);
        let b = snapshot("c", SNAP_META, 256);
        let c = snapshot("c", SNAP_META, 1 << 40);
        assert!(a < b && b < c);
        assert_eq!(be_u64("t", &b).unwrap(), 256);
        assert!(be_u64("t", b"short").is_err());
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("cluster", "a\0b").is_err());
        assert!(check_name("cluster", "").is_err());
        assert!(check_name("cluster", "member-1").is_ok());
    }
}
