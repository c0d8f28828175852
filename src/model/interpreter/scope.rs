//! What the scripts of one pass, plan or command may spend together.
//!
//! One call is bounded ([`super::lua`]: instructions, time, memory), but a repository holds
//! many objects, and a hostile customization costs its whole budget on each one: 1,000 objects
//! of its kind would hold a pass for half an hour. A [`Scope`] bounds what the calls made in it
//! spend together:
//!
//! - a script (by content) that ran past its budget [`STRIKES`] times is not run again in the
//!   scope: its other objects fail at once ("not run: …");
//! - the calls together have [`ALLOWANCE`] of wall-clock time: a call gets what is left (at most
//!   its own budget), and once it is spent no script runs in the scope any more.
//!
//! Those failures depend on the scope, not on the object: the content cache does not keep them
//! ([`Refusal`]), so the next pass runs the script again (and keeps what failed on its own).
//!
//! A scope is entered on a thread ([`Scope::enter`]) and inherited by the threads a step of the
//! pass fans out to ([`crate::util::threads`] carries it: [`threads::Carried`]). The daemon gives each pass and each
//! plan a scope of its own (a plan's scripts cannot use up a pass's allowance, nor strike out a
//! script the pass runs); each CLI command runs in one. Without a scope a call has only its own
//! budget.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::util::threads;

/// Budget failures after which a script is not run again in a scope.
pub const STRIKES: u32 = 3;
/// Wall-clock time the calls of one scope may take together.
pub const ALLOWANCE: Duration = Duration::from_secs(20);

/// Why a scope refused to run a script (or cut it short).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The script ran past its budget [`STRIKES`] times in the scope.
    Struck { what: &'static str },
    /// The scope's [`ALLOWANCE`] is spent.
    Spent { what: &'static str },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Struck { what } => {
                write!(f, "script not run: it exceeded its budget {STRIKES} times in {what}")
            }
            Refusal::Spent { what } => write!(
                f,
                "script not run (or not to its end): the scripts of {what} used their {} s",
                ALLOWANCE.as_secs()
            ),
        }
    }
}

/// The scripts' shared budget of one pass, plan or command.
#[derive(Debug)]
pub struct Scope {
    /// "this pass", "this plan", "this command" (for messages).
    what: &'static str,
    allowance: Duration,
    spent_ns: AtomicU64,
    strikes: Mutex<HashMap<u64, u32>>,
}

impl Scope {
    /// A scope of [`ALLOWANCE`]; `what` names it in messages ("this pass").
    pub fn new(what: &'static str) -> Arc<Scope> {
        Scope::with_allowance(what, ALLOWANCE)
    }

    /// A scope of `allowance` (tests).
    pub fn with_allowance(what: &'static str, allowance: Duration) -> Arc<Scope> {
        Arc::new(Scope { what, allowance, spent_ns: AtomicU64::new(0), strikes: Mutex::new(HashMap::new()) })
    }

    /// The scope of this thread, if any.
    pub fn current() -> Option<Arc<Scope>> {
        threads::carried().and_then(|c| c.downcast::<Scope>().ok())
    }

    /// Runs `f` with `scope` as this thread's scope (`None`: none), then puts back the one
    /// before. It is what the thread carries ([`threads::carrying`]).
    pub fn enter<R>(scope: Option<Arc<Scope>>, f: impl FnOnce() -> R) -> R {
        threads::carrying(scope.map(|s| s as Arc<dyn std::any::Any + Send + Sync>), f)
    }

    /// Before a call of the script `script`: the time it may take, or why it may not run.
    pub fn admit(&self, script: u64) -> Result<Duration, Refusal> {
        if self.strikes.lock().map(|s| s.get(&script).copied().unwrap_or(0)).unwrap_or(0) >= STRIKES {
            return Err(Refusal::Struck { what: self.what });
        }
        let spent = Duration::from_nanos(self.spent_ns.load(Ordering::Relaxed));
        match self.allowance.checked_sub(spent) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(Refusal::Spent { what: self.what }),
        }
    }

    /// After a call: its time, and whether it ran past its own budget (a strike).
    pub fn record(&self, script: u64, took: Duration, over_budget: bool) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.spent_ns.fetch_add(ns, Ordering::Relaxed);
        if over_budget && let Ok(mut s) = self.strikes.lock() {
            *s.entry(script).or_insert(0) += 1;
        }
    }

    /// The refusal for a call the scope cut short (it was given less than its own budget and
    /// used all of it).
    pub fn cut_short(&self) -> Refusal {
        Refusal::Spent { what: self.what }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strikes_and_the_allowance_refuse_and_scopes_nest() {
        let scope = Scope::with_allowance("this test", Duration::from_secs(1));
        assert!(scope.admit(1).is_ok());
        for _ in 0..STRIKES {
            scope.record(1, Duration::from_millis(1), true);
        }
        assert_eq!(scope.admit(1), Err(Refusal::Struck { what: "this test" }));
        assert!(scope.admit(2).is_ok(), "another script still runs");
        scope.record(2, Duration::from_secs(1), false);
        assert_eq!(scope.admit(2), Err(Refusal::Spent { what: "this test" }));
        let inner = Scope::new("inner");
        assert!(Scope::current().is_none());
        Scope::enter(Some(Arc::clone(&scope)), || {
            Scope::enter(Some(Arc::clone(&inner)), || {
                assert!(Scope::current().is_some_and(|s| Arc::ptr_eq(&s, &inner)));
            });
            assert!(Scope::current().is_some_and(|s| Arc::ptr_eq(&s, &scope)));
        });
        assert!(Scope::current().is_none());
    }
}
