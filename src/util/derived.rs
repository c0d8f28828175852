//! [`Derived`]: a value computed from its owner's content and kept beside it, which is not
//! content itself.

use std::sync::{Arc, OnceLock};

/// A value derived from its owner's content, made on first use (from any thread) and kept
/// until the owner's content changes in place, which must [`Derived::reset`] it. Not content:
/// it compares equal, hashes to nothing, is not stored, and a clone starts empty (a changed
/// copy never sees a stale value). A snapshot's node index and its summary's free amounts are
/// kept this way.
pub struct Derived<T>(OnceLock<Arc<T>>);

impl<T> Derived<T> {
    /// The value, made by `make` on first use.
    pub fn get_or_make(&self, make: impl FnOnce() -> T) -> &Arc<T> {
        self.0.get_or_init(|| Arc::new(make()))
    }

    /// Forgets the value (after the owner changed in place).
    pub fn reset(&mut self) {
        self.0 = OnceLock::new();
    }

    /// The value if it was made.
    pub fn built(&self) -> Option<&Arc<T>> {
        self.0.get()
    }

    /// The value if it was made (and forgets it).
    pub fn take(&mut self) -> Option<Arc<T>> {
        self.0.take()
    }

    /// Sets the value (of the owner's current content), shared.
    pub fn set_shared(&mut self, value: Arc<T>) {
        self.0 = OnceLock::from(value);
    }
}

impl<T> Default for Derived<T> {
    fn default() -> Self {
        Derived(OnceLock::new())
    }
}

impl<T> Clone for Derived<T> {
    fn clone(&self) -> Self {
        Derived::default()
    }
}

impl<T> std::fmt::Debug for Derived<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = std::any::type_name::<T>().rsplit("::").next().unwrap_or("");
        write!(f, "Derived<{name}>({})", if self.0.get().is_some() { "made" } else { "empty" })
    }
}

impl<T> PartialEq for Derived<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Derived<T> {}

impl<T> std::hash::Hash for Derived<T> {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

#[cfg(test)]
mod tests {
    use super::Derived;

    #[test]
    fn a_derived_value_is_made_once_and_is_not_content() {
        let d: Derived<u32> = Derived::default();
        assert!(d.built().is_none());
        assert_eq!(**d.get_or_make(|| 7), 7);
        assert_eq!(**d.get_or_make(|| 8), 7, "made once");
        assert!(d.clone().built().is_none(), "a clone starts empty");
        assert_eq!(d, Derived::default());
        let mut d = d;
        d.reset();
        assert_eq!(**d.get_or_make(|| 9), 9);
        assert_eq!(d.take().map(|v| *v), Some(9));
        assert!(d.built().is_none());
        assert_eq!(format!("{d:?}"), "Derived<u32>(empty)");
    }
}
