//! `world.district`'s settings (docs/reference/district.md#district-files): the district files,
//! each for a scene, the world directory and how often differences are written back to it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{checked_number, config_settings};

/// Most ticks between write-backs.
pub const MAX_FLUSH_EVERY: u64 = 2_147_483_647;

checked_number!(
    /// Ticks between write-backs: an integer 0..=[`MAX_FLUSH_EVERY`] (0: never periodically).
    FlushEvery(u64),
    integer 0..=MAX_FLUSH_EVERY,
    "ticks between write-backs; 0: only on release, save and close"
);

config_settings! {
    /// The kit's `config` object.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct DistrictConfig {
        /// The district files: a path (relative to the scene file) for the first scene, or
        /// `{scene, file}`.
        districts "districts": Vec<DistrictEntry> = Vec::new(),
        /// Where differences are kept in region files
        /// (docs/reference/district.md#district-persistence), relative to the scene file; the same
        /// directory `world.terrain` may use. Without it they live in memory and in game saves.
        #[serde(skip_serializing_if = "Option::is_none")]
        world_dir "worldDir": Option<String> = None,
        /// With `worldDir`: write back on every tick that is a multiple of it (0: only on release,
        /// game save and close). Default 600.
        flush_every_ticks "flushEveryTicks": FlushEvery = FlushEvery(600),
    }
}

/// One district file of a scene.
// Read by hand (below), not as an untagged enum: an object with a misspelt or missing key is
// told as such, not as "did not match any variant".
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
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

/// The `{scene, file}` form, read strictly.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SceneFile {
    scene: String,
    file: String,
}

impl<'de> Deserialize<'de> for DistrictEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DistrictEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a district file path, or {\"scene\": id, \"file\": path}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DistrictEntry, E> {
                Ok(DistrictEntry::File(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DistrictEntry, A::Error> {
                let SceneFile { scene, file } =
                    SceneFile::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(DistrictEntry::Scene { scene, file })
            }
        }
        d.deserialize_any(V)
    }
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
