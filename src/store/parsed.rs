//! The repository's parsed documents kept across restarts ([`ParseStore`] for the store): per
//! file, keyed by [`crate::policy::load::parse_digest`] (SHA-256 of the parser's version and
//! the file's bytes), the documents in the loader's compact form. A cache: a read or a write
//! that fails costs a parse, never a pass (it is logged at debug level); a dry-run handle
//! writes nothing.

use std::collections::HashSet;

use super::Store;
use crate::policy::load::ParseStore;

impl ParseStore for Store {
    fn get(&self, key: &[u8; 32]) -> Option<Vec<u8>> {
        match self.inner.parsed.get(key) {
            Ok(v) => v.map(|v| v.to_vec()),
            Err(e) => {
                tracing::debug!(error = %e, "parse cache: read failed");
                None
            }
        }
    }

    fn put(&self, entries: Vec<([u8; 32], Vec<u8>)>) {
        if self.writable("parse cache").is_err() {
            return;
        }
        let mut batch = sled::Batch::default();
        for (key, value) in entries {
            batch.insert(&key[..], value);
        }
        if let Err(e) = self.inner.parsed.apply_batch(batch) {
            tracing::debug!(error = %e, "parse cache: write failed");
        }
    }

    fn retain(&self, keep: &HashSet<[u8; 32]>) {
        let mut batch = sled::Batch::default();
        for key in self.inner.parsed.iter().keys().flatten() {
            if <[u8; 32]>::try_from(&key[..]).map_or(true, |k| !keep.contains(&k)) {
                batch.remove(key);
            }
        }
        self.prune(batch);
    }

    fn remove(&self, keys: Vec<[u8; 32]>) {
        let mut batch = sled::Batch::default();
        for key in keys {
            batch.remove(&key[..]);
        }
        self.prune(batch);
    }
}

impl Store {
    /// Applies the removals of `batch` to the parse cache (not through a dry-run handle).
    fn prune(&self, batch: sled::Batch) {
        if self.writable("parse cache").is_err() {
            return;
        }
        if let Err(e) = self.inner.parsed.apply_batch(batch) {
            tracing::debug!(error = %e, "parse cache: prune failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::policy::load::ParseCache;

    fn write(dir: &std::path::Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).expect("write");
    }

    /// A restarted process (a new cache over the same store) loads what a first one parsed,
    /// the same documents; the store keeps the files of the repository now, not those gone.
    #[test]
    fn a_new_cache_takes_what_a_previous_process_parsed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (repo, state) = (dir.path().join("repo"), dir.path().join("state"));
        std::fs::create_dir_all(&repo).expect("mkdir");
        write(&repo, "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x\n");
        write(
            &repo,
            "b.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: x\ndata: {n: \"1\"}\n",
        );
        let store = Store::open(&state).expect("open");
        let mut first = ParseCache::default();
        first.keep_in(Arc::new(store.clone()));
        first.refresh(&repo);
        assert_eq!(store.inner.parsed.len(), 2);
        let whole = crate::policy::load::load_repository(&repo);

        // A second process: every file's documents come from the store (a corrupted entry
        // is parsed again), and the load is the same.
        let key_b = crate::policy::load::parse_digest(&std::fs::read_to_string(repo.join("b.yaml")).expect("read"));
        store.inner.parsed.insert(key_b, &b"\xff\xff"[..]).expect("corrupt");
        let mut second = ParseCache::default();
        second.keep_in(Arc::new(store.clone()));
        let (changed, errors) = second.refresh(&repo);
        assert!(changed && errors.is_empty());
        let loaded = crate::policy::load::load_repository_incremental(&mut second, Vec::new());
        assert!(loaded.0 == whole.0 && loaded.1 == whole.1);
        let repaired = store.inner.parsed.get(key_b).expect("read").expect("kept");
        assert_ne!(&repaired[..], &b"\xff\xff"[..], "the corrupted entry is replaced by the parse");

        // An edit and a removal: the store holds the two files there are now.
        write(&repo, "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a2\n  namespace: x\n");
        std::fs::remove_file(repo.join("b.yaml")).expect("remove");
        write(&repo, "c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: x\n");
        second.refresh(&repo);
        assert_eq!(store.inner.parsed.len(), 2);

        // Two files with the same bytes share an entry: removing one keeps it.
        let same = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: x\n";
        write(&repo, "c-copy.yaml", same);
        second.refresh(&repo);
        assert_eq!(store.inner.parsed.len(), 2);
        std::fs::remove_file(repo.join("c-copy.yaml")).expect("remove");
        second.refresh(&repo);
        let key_c = crate::policy::load::parse_digest(same);
        assert!(store.inner.parsed.get(key_c).expect("read").is_some(), "c.yaml still uses it");

        // A file changed while no process ran: the next process's first load forgets the
        // entry of its old bytes.
        write(&repo, "c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c2\n  namespace: x\n");
        let mut third = ParseCache::default();
        third.keep_in(Arc::new(store.clone()));
        third.refresh(&repo);
        assert_eq!(store.inner.parsed.len(), 2);
        assert!(store.inner.parsed.get(key_c).expect("read").is_none());

        // A dry run writes nothing.
        write(&repo, "d.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n  namespace: x\n");
        let mut dry = ParseCache::default();
        dry.keep_in(Arc::new(store.dry_run()));
        dry.refresh(&repo);
        assert_eq!(store.inner.parsed.len(), 2);
    }
}
