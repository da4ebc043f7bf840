//! The JSON Schemas of the public files, generated from the Rust types. The checked-in copies live
//! in `schemas/`; `world-streaming schema --check` (and a test) fail when they drift.

use schemars::{schema_for, Schema};

use crate::files::inputs::InputLine;
use crate::files::save::SaveDoc;
use crate::files::scene::SceneFile;
use crate::files::state::StateDoc;
use crate::kits::district::{DistrictConfig, SaveSection as DistrictSave};
use crate::kits::ground::GroundConfig;
use crate::kits::nav::{NavConfig, SaveSection as NavSave};
use crate::kits::streaming::StreamingConfig;
use crate::kits::terrain::{SaveSection as TerrainSave, TerrainConfig};
use crate::mods::json::JsonMod;

/// The command that regenerates the checked-in schemas.
pub const REGENERATE: &str = "cargo run -- schema --out schemas";

/// Every schema as `(file name, pretty JSON text)`, in a fixed order.
pub fn all() -> Vec<(&'static str, String)> {
    let list: Vec<(&str, Schema)> = vec![
        ("scene.schema.json", schema_for!(SceneFile)),
        ("streaming-config.schema.json", schema_for!(StreamingConfig)),
        ("ground-config.schema.json", schema_for!(GroundConfig)),
        ("terrain-config.schema.json", schema_for!(TerrainConfig)),
        ("terrain-save.schema.json", schema_for!(TerrainSave)),
        ("district-config.schema.json", schema_for!(DistrictConfig)),
        ("district-save.schema.json", schema_for!(DistrictSave)),
        ("nav-config.schema.json", schema_for!(NavConfig)),
        ("nav-save.schema.json", schema_for!(NavSave)),
        (
            "district-line.schema.json",
            schema_for!(crate::host::Entity),
        ),
        ("mod.schema.json", schema_for!(JsonMod)),
        ("inputs-line.schema.json", schema_for!(InputLine)),
        ("state.schema.json", schema_for!(StateDoc)),
        ("save.schema.json", schema_for!(SaveDoc)),
    ];
    list.into_iter()
        .map(|(name, schema)| {
            let mut text = serde_json::to_string_pretty(&schema).expect("a schema is JSON");
            text.push('\n');
            (name, text)
        })
        .collect()
}
