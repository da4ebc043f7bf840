//! `world.district`'s settings (SPEC §15): the district files, each for a scene, the world
//! directory and how often differences are written back to it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::checked_number;

/// Most ticks between write-backs.
pub const MAX_FLUSH_EVERY: u64 = 2_147_483_647;

checked_number!(
    /// Ticks between write-backs: an integer 0..=[`MAX_FLUSH_EVERY`] (0: never periodically).
    FlushEvery(u64),
    integer 0..=MAX_FLUSH_EVERY,
    "ticks between write-backs; 0: only on release, save and close"
);

fn default_flush() -> FlushEvery {
    FlushEvery(600)
}

/// The kit's `config` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DistrictConfig {
    /// The district files: a path (relative to the scene file) for the first scene, or
    /// `{scene, file}`.
    #[serde(default)]
    pub districts: Vec<DistrictEntry>,
    /// Where differences are kept in region files (SPEC §15), relative to the scene file; the
    /// same directory `world.terrain` may use. Without it they live in memory and in game saves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_dir: Option<String>,
    /// With `worldDir`: write back on every tick that is a multiple of it (0: only on release,
    /// game save and close). Default 600.
    #[serde(default = "default_flush")]
    pub flush_every_ticks: FlushEvery,
}

impl Default for DistrictConfig {
    fn default() -> Self {
        DistrictConfig {
            districts: Vec::new(),
            world_dir: None,
            flush_every_ticks: default_flush(),
        }
    }
}

/// One district file of a scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DistrictEntry {
    /// A path, relative to the scene file, for the first scene.
    File(String),
    /// A path for scene `scene`.
    Scene {
        /// The scene id.
        scene: String,
        /// The path, relative to the scene file.
        file: String,
    },
}

impl DistrictEntry {
    /// The scene (`None`: the first) and the path.
    pub fn parts(&self) -> (Option<&str>, &str) {
        match self {
            DistrictEntry::File(f) => (None, f),
            DistrictEntry::Scene { scene, file } => (Some(scene), file),
        }
    }
}
