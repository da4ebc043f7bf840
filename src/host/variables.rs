//! Engine variables: named values kits publish (e.g. `world.chunks.loaded`) for others to read.

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;
use serde_json::Value;

/// Variables by name, in first-set order (the order never depends on the hasher, so a fast
/// one does: kits set theirs on every tick something changed).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Variables {
    values: IndexMap<String, Value, FxBuildHasher>,
}

impl Variables {
    /// Sets `name` (no allocation when it already exists).
    pub fn set(&mut self, name: &str, value: impl Into<Value>) {
        let value = value.into();
        match self.values.get_mut(name) {
            Some(slot) => *slot = value,
            None => {
                self.values.insert(name.to_owned(), value);
            }
        }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// The value of `name` as an unsigned count (0 when unset).
    pub fn count(&self, name: &str) -> u64 {
        self.get(name).and_then(Value::as_u64).unwrap_or(0)
    }

    /// All variables in first-set order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Replaces every variable (used by save loading).
    pub(crate) fn replace(&mut self, values: impl IntoIterator<Item = (String, Value)>) {
        self.values = values.into_iter().collect();
    }
}
