//! Progressive rollouts' state ([`RolloutState`], issue 52) in its own tree, one entry per
//! workload (key: [`super::keys::workload`]), versioned like every record. The reconciler
//! reads a workload's entry before its gate is evaluated and writes it back with the pass, so
//! that a restart or a takeover continues the rollout where it was (never at stage 1, never
//! past a gate it did not pass).

use super::codec::{Versioned, decode, encode};
use super::{Store, StoreError, keys};
use crate::policy::ObjectKey;
use crate::schedule::rollout::RolloutState;

impl Versioned for RolloutState {
    const WHAT: &'static str = "rollout state";
    const SCHEMA: u16 = 1;
}

impl Store {
    /// The rollout state of a workload (`None`: never under a RolloutPolicy, or forgotten).
    pub fn rollout(&self, key: &ObjectKey) -> Result<Option<RolloutState>, StoreError> {
        match self.inner.rollouts.get(keys::workload(key)?).map_err(|e| self.err(e))? {
            Some(v) => Ok(Some(decode(&v)?)),
            None => Ok(None),
        }
    }

    /// Every workload's rollout state, by store key.
    pub fn rollouts(&self) -> Result<Vec<(String, RolloutState)>, StoreError> {
        let mut out = Vec::new();
        for kv in self.inner.rollouts.iter() {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            out.push((String::from_utf8_lossy(&k).into_owned(), decode(&v)?));
        }
        Ok(out)
    }

    /// Replaces a workload's rollout state (durable with the next [`Store::flush`]).
    pub fn put_rollout(&self, key: &ObjectKey, state: &RolloutState) -> Result<(), StoreError> {
        self.writable("rollout state")?;
        self.inner.rollouts.insert(keys::workload(key)?, encode(state)?).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Forgets a workload's rollout (its template left every RolloutPolicy), by its store key
    /// as [`Store::rollouts`] gives it.
    pub fn remove_rollout(&self, store_key: &str) -> Result<(), StoreError> {
        self.writable("rollout state")?;
        self.inner.rollouts.remove(store_key.as_bytes()).map_err(|e| self.err(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_state_survives_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        let mut state = RolloutState::settled("shop/web".into(), 7, "{\"kind\":\"Deployment\"}".into());
        state.released = 2;
        {
            let store = Store::open(dir.path()).expect("open");
            assert_eq!(store.rollout(&key).expect("read"), None);
            store.put_rollout(&key, &state).expect("put");
            store.flush().expect("flush");
        }
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(store.rollout(&key).expect("read"), Some(state.clone()));
        assert_eq!(store.rollouts().expect("all").len(), 1);
        store.remove_rollout(&key.store_key()).expect("remove");
        assert_eq!(store.rollout(&key).expect("read"), None);
    }
}
