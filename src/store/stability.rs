//! The stability engine's state ([`StabilityState`]: member health timelines, graceful
//! eviction tasks, capacity marks, the rate limit window, the storm guard) in its own tree,
//! under one key, versioned like every record. The reconciler reads it before a pass and
//! writes the next one before the pass's flush; a missing entry is the empty state.

use super::codec::{Versioned, decode, encode};
use super::{Store, StoreError};
use crate::schedule::stability::StabilityState;

/// The one key of the `stability` tree.
const STATE_KEY: &[u8] = b"state";

impl Versioned for StabilityState {
    const WHAT: &'static str = "stability state";
    const SCHEMA: u16 = 1;
}

impl Store {
    /// The stored stability state (the empty state when none was written yet). A value that
    /// does not decode is an error, never a silent reset: evictions in progress depend on it.
    pub fn stability(&self) -> Result<StabilityState, StoreError> {
        match self.inner.stability.get(STATE_KEY).map_err(|e| self.err(e))? {
            Some(v) => decode(&v),
            None => Ok(StabilityState::default()),
        }
    }

    /// Replaces the stored stability state (durable with the next [`Store::flush`]).
    pub fn put_stability(&self, state: &StabilityState) -> Result<(), StoreError> {
        self.inner.stability.insert(STATE_KEY, encode(state)?).map_err(|e| self.err(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::stability::{ClusterTimeline, Condition};

    #[test]
    fn stability_state_round_trips_and_survives_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut state = StabilityState::default();
        state.clusters.insert(
            "m1".into(),
            ClusterTimeline {
                condition: Condition::Unreachable,
                reason: "connection refused".into(),
                unhealthy_since_ms: Some(5),
                healthy_since_ms: None,
                live: true,
            },
        );
        state.recent_removals = vec![1, 2];
        {
            let store = Store::open(dir.path()).expect("open");
            assert_eq!(store.stability().expect("empty"), StabilityState::default());
            store.put_stability(&state).expect("put");
            store.flush().expect("flush");
        }
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(store.stability().expect("read"), state);
    }
}
