//! The save document: a versioned JSON file holding the tick, the active scene, the entities, the
//! variables and each kit's own section. The host writes and reads the common part; each kit its
//! section, through the [`crate::host::Kit`] trait.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::host::{Entity, EntityId};

/// The `format` value every save carries.
pub const SAVE_FORMAT: &str = "world-streaming-save";
/// The save version this build writes and reads.
pub const SAVE_VERSION: u32 = 1;

/// A save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveDoc {
    /// The JSON Schema this file follows (ignored).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `world-streaming-save`.
    pub format: String,
    /// The save version (1).
    pub version: u32,
    /// The tick counter when saved.
    pub tick: u64,
    /// The active scene, `null` outside a scene.
    pub scene: Option<String>,
    /// The `character.control` link.
    pub control: Option<EntityId>,
    /// Entities in spawn order.
    pub entities: Vec<Entity>,
    /// Engine variables.
    pub variables: IndexMap<String, Value>,
    /// Each kit's section, by kit id.
    pub kits: IndexMap<String, Value>,
}
