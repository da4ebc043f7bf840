//! `world.district`'s settings (SPEC §15): the district files, each for a scene, and the world
//! directory (not yet supported: a config naming one is refused at start).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The kit's `config` object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DistrictConfig {
    /// The district files: a path (relative to the scene file) for the first scene, or
    /// `{scene, file}`.
    #[serde(default)]
    pub districts: Vec<DistrictEntry>,
    /// Where differences would be kept in region files. This build keeps them in memory and in
    /// game saves only: a config naming a directory is an error at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_dir: Option<String>,
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
