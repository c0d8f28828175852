//! Resource lists: resource name → amount in milli-units.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::quantity::{QuantityError, parse_milli};
use crate::policy::types::QuantityValue;

/// Resource names given a [`resource_id`] at most (a hostile member may list any number of
/// extended resources; past this, names get none and their readers take the by-name path).
const RESOURCE_IDS: usize = 4096;

/// A small id of a resource name, the same for the whole process and never reused (the
/// summary estimator's free amounts are kept by id per view: [`super::estimate::SummaryFree`]).
/// `None` once [`RESOURCE_IDS`] names have one.
pub fn resource_id(name: &str) -> Option<u32> {
    static IDS: std::sync::OnceLock<std::sync::RwLock<std::collections::HashMap<String, u32>>> =
        std::sync::OnceLock::new();
    let ids = IDS.get_or_init(Default::default);
    if let Ok(read) = ids.read()
        && let Some(id) = read.get(name)
    {
        return Some(*id);
    }
    let mut write = ids.write().ok()?;
    let next = u32::try_from(write.len()).ok()?;
    match write.get(name) {
        Some(id) => Some(*id),
        None if write.len() < RESOURCE_IDS => {
            write.insert(name.to_owned(), next);
            Some(next)
        }
        None => None,
    }
}

/// Amounts per resource name (`cpu`, `memory`, `pods`, `nvidia.com/gpu`…) in milli-units.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourceList(pub BTreeMap<String, i64>);

impl ResourceList {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, name: &str) -> i64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    pub fn set(&mut self, name: impl Into<String>, milli: i64) {
        self.0.insert(name.into(), milli);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Adds every amount of `other` (saturating).
    pub fn add(&mut self, other: &ResourceList) {
        for (k, v) in &other.0 {
            self.add_amount(k, *v);
        }
    }

    /// Adds `milli` to `name` (saturating; a name not listed yet starts at 0), copying the
    /// name only when it is new (a deduction adds to every node it touches).
    pub fn add_amount(&mut self, name: &str, milli: i64) {
        match self.0.get_mut(name) {
            Some(e) => *e = e.saturating_add(milli),
            None => {
                self.0.insert(name.to_string(), milli);
            }
        }
    }

    /// Keeps the larger amount per resource (Kubernetes' rule for init containers).
    pub fn max_with(&mut self, other: &ResourceList) {
        for (k, v) in &other.0 {
            let e = self.0.entry(k.clone()).or_insert(0);
            *e = (*e).max(*v);
        }
    }

    /// `self − a − b` per resource of `self`, floored at zero.
    pub fn free_after(&self, a: &ResourceList, b: &ResourceList) -> ResourceList {
        ResourceList(
            self.0
                .iter()
                .map(|(k, v)| (k.clone(), v.saturating_sub(a.get(k)).saturating_sub(b.get(k)).max(0)))
                .collect(),
        )
    }

    /// Reads a Kubernetes resource map; returns the resource name of the first bad quantity.
    pub fn from_quantities<'a>(
        map: impl IntoIterator<Item = (&'a String, &'a QuantityValue)>,
    ) -> Result<ResourceList, (String, QuantityError)> {
        let mut out = ResourceList::new();
        for (name, q) in map {
            let milli = match q {
                QuantityValue::Int(i) => i.saturating_mul(1000),
                QuantityValue::Text(t) => parse_milli(t).map_err(|e| (name.clone(), e))?,
            };
            out.set(name.clone(), milli);
        }
        Ok(out)
    }

    /// The first resource with a negative amount (`(name, milli-units)`): Kubernetes refuses
    /// a negative quantity in a container's requests, limits or overhead and in a node's
    /// allocatable, and so do the readers of such lists here.
    pub fn first_negative(&self) -> Option<(&str, i64)> {
        self.0.iter().find(|(_, v)| **v < 0).map(|(k, v)| (k.as_str(), *v))
    }

    /// Reads a resource map from untyped JSON (a pod's `resources.requests`).
    pub fn from_json(value: Option<&serde_json::Value>) -> Result<ResourceList, (String, QuantityError)> {
        match value.and_then(|v| v.as_object()) {
            Some(map) => ResourceList::from_map(map),
            None => Ok(ResourceList::new()),
        }
    }

    /// [`ResourceList::from_json`] of an object's fields.
    pub fn from_map(map: &serde_json::Map<String, serde_json::Value>) -> Result<ResourceList, (String, QuantityError)> {
        let mut out = ResourceList::new();
        for (name, q) in map {
            let milli = match q {
                serde_json::Value::Number(n) => {
                    let f = n.as_f64().unwrap_or(0.0);
                    (f * 1000.0).ceil() as i64
                }
                serde_json::Value::String(s) => parse_milli(s).map_err(|e| (name.clone(), e))?,
                _ => {
                    return Err((name.clone(), QuantityError { text: q.to_string(), reason: "not a quantity" }));
                }
            };
            out.set(name.clone(), milli);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::ResourceList;

    #[test]
    fn amounts_add_to_listed_and_new_names_saturating() {
        let mut l = ResourceList::new();
        l.set("cpu", 500);
        l.add_amount("cpu", 250);
        l.add_amount("memory", 0);
        l.add_amount("pods", i64::MAX);
        l.add_amount("pods", 1);
        assert_eq!((l.get("cpu"), l.get("pods")), (750, i64::MAX));
        // A zero amount still lists the name, as an entry with 0 (deductions rely on it).
        assert!(l.contains("memory"));
        let mut sum = ResourceList::new();
        sum.add(&l);
        sum.add(&l);
        assert_eq!((sum.get("cpu"), sum.get("memory"), sum.get("pods")), (1500, 0, i64::MAX));
    }
}
