//! The `sealed` tree: per (cluster, path) of a Secret published SOPS-encrypted, the
//! fingerprint of what was encrypted (an HMAC-SHA256 of the recipient and the clear-text
//! manifest, never the manifest) and the content hash of the encrypted file; and the random
//! key of those HMACs (`sealed/\0key`, made once per store). With them a restarted process
//! keeps the published ciphertext of an unchanged Secret instead of encrypting it again
//! (sops's values carry random IVs: every encryption is new bytes in git). A dry-run handle
//! reads them and writes nothing.

use super::{Store, StoreError};

/// The key of the HMAC key (no (cluster, path) key starts with a NUL byte).
const KEY: &[u8] = b"\0key";

/// One encrypted file: (cluster, path) → (fingerprint, content hash).
pub type SealedEntry = ((String, String), ([u8; 32], u64));

fn entry_key(cluster: &str, path: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(cluster.len() + path.len() + 1);
    k.extend_from_slice(cluster.as_bytes());
    k.push(0);
    k.extend_from_slice(path.as_bytes());
    k
}

impl Store {
    /// The fingerprint key of this store, made (32 bytes from the system's random number
    /// generator) on first use. A dry-run handle of a store without one gets a fresh key of its
    /// own, so nothing it fingerprints matches a stored entry.
    pub fn sealing_key(&self) -> Result<[u8; 32], StoreError> {
        let err = |e| self.err(e);
        if let Some(v) = self.inner.sealed.get(KEY).map_err(err)? {
            return <[u8; 32]>::try_from(&v[..]).map_err(|_| StoreError::BadKey { tree: "sealed", key: KEY.to_vec() });
        }
        let mut key = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut key)
            .map_err(|_| StoreError::BadKey { tree: "sealed", key: b"random number generator failed".to_vec() })?;
        if self.writable("sealing key").is_err() {
            return Ok(key);
        }
        // Another handle of the same store may have made one meanwhile: the first one stays.
        match self.inner.sealed.compare_and_swap(KEY, None as Option<&[u8]>, Some(&key[..])).map_err(err)? {
            Ok(()) => Ok(key),
            Err(e) => e
                .current
                .and_then(|v| <[u8; 32]>::try_from(&v[..]).ok())
                .ok_or(StoreError::BadKey { tree: "sealed", key: KEY.to_vec() }),
        }
    }

    /// Every stored entry (malformed ones skipped: a cache, they cost an encryption).
    pub fn sealed_entries(&self) -> Result<Vec<SealedEntry>, StoreError> {
        let mut out = Vec::new();
        for kv in self.inner.sealed.iter() {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            if k.first() == Some(&0) || v.len() != 40 {
                continue;
            }
            let Some(at) = k.iter().position(|b| *b == 0) else { continue };
            let (Ok(cluster), Ok(path)) = (std::str::from_utf8(&k[..at]), std::str::from_utf8(&k[at + 1..])) else {
                continue;
            };
            let Ok(fingerprint) = <[u8; 32]>::try_from(&v[..32]) else { continue };
            let Ok(hash) = <[u8; 8]>::try_from(&v[32..]) else { continue };
            out.push(((cluster.to_string(), path.to_string()), (fingerprint, u64::from_be_bytes(hash))));
        }
        Ok(out)
    }

    /// Writes `set` and removes `removed` in one batch (nothing through a dry-run handle).
    pub fn put_sealed(&self, set: &[SealedEntry], removed: &[(String, String)]) -> Result<(), StoreError> {
        if self.writable("sealed").is_err() || (set.is_empty() && removed.is_empty()) {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for ((cluster, path), (fingerprint, hash)) in set {
            let mut v = Vec::with_capacity(40);
            v.extend_from_slice(fingerprint);
            v.extend_from_slice(&hash.to_be_bytes());
            batch.insert(entry_key(cluster, path), v);
        }
        for (cluster, path) in removed {
            batch.remove(entry_key(cluster, path));
        }
        self.inner.sealed.apply_batch(batch).map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_and_entries_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let key = store.sealing_key().expect("key");
        assert_eq!(store.sealing_key().expect("again"), key);
        let e = (("eu".to_string(), "shop/core_secret_db.yaml".to_string()), ([7u8; 32], 42u64));
        store.put_sealed(std::slice::from_ref(&e), &[]).expect("put");
        assert_eq!(store.sealed_entries().expect("read"), vec![e.clone()]);
        assert!(store.dry_run().put_sealed(&[], std::slice::from_ref(&e.0)).is_ok());
        assert_eq!(store.sealed_entries().expect("read").len(), 1, "a dry run writes nothing");
        store.put_sealed(&[], &[e.0]).expect("remove");
        assert!(store.sealed_entries().expect("read").is_empty());
        drop(store);
        let reopened = Store::open(dir.path()).expect("reopen");
        assert_eq!(reopened.sealing_key().expect("key"), key, "the key survives a restart");
    }
}
