//! Scenes: named places a game can be in, each with an optional `entry` position and per-kit
//! `layers` of settings. One scene is active at a time; entering one leaves the other.

use indexmap::IndexMap;
use serde_json::Value;

use crate::grid::Position;

/// A scene as the engine knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneDef {
    /// Its id, e.g. `overworld`.
    pub id: String,
    /// Where the grid starts when nobody is around to focus on.
    pub entry: Option<Position>,
    /// Per-kit settings, by kit id (validated by each kit when it is built).
    pub layers: IndexMap<String, Value>,
}

impl SceneDef {
    /// A scene with no entry and no layers.
    pub fn new(id: &str) -> Self {
        SceneDef {
            id: id.to_owned(),
            entry: None,
            layers: IndexMap::new(),
        }
    }
}
