//! The JSON Schemas of the public files, generated from the Rust types. The checked-in copies live
//! in `schemas/`; `world-streaming schema --check` (and a test) fail when they drift.

use schemars::{schema_for, Schema};

use crate::files::inputs::InputLine;
use crate::files::save::SaveDoc;
use crate::files::scene::SceneFile;
use crate::files::state::StateDoc;
use crate::host::KitCatalog;
use crate::mods::json::JsonMod;

/// The command that regenerates the checked-in schemas.
pub const REGENERATE: &str = "cargo run -- schema --out schemas";

/// Every schema of the built-in kits' catalog as `(file name, pretty JSON text)`: see
/// [`all_with`].
pub fn all() -> Vec<(&'static str, String)> {
    all_with(&crate::kits::builtin_catalog())
}

/// Every schema as `(file name, pretty JSON text)`, in a fixed order: the scene file's, then
/// each kit's of `catalog` in catalog order (its config's, its save section's, the files it
/// reads: [`crate::host::CatalogEntry::schemas`]), then a JSON mod's, an inputs line's, the
/// state's and the save's.
pub fn all_with(catalog: &KitCatalog) -> Vec<(&'static str, String)> {
    let mut list: Vec<(&str, Schema)> = vec![("scene.schema.json", schema_for!(SceneFile))];
    for entry in catalog.entries() {
        list.extend(entry.schemas().map(|s| (s.file, (s.make)())));
    }
    list.extend([
        ("mod.schema.json", schema_for!(JsonMod)),
        ("inputs-line.schema.json", schema_for!(InputLine)),
        ("state.schema.json", schema_for!(StateDoc)),
        ("save.schema.json", schema_for!(SaveDoc)),
    ]);
    list.into_iter()
        .map(|(name, schema)| {
            let mut text = serde_json::to_string_pretty(&schema).expect("a schema is JSON");
            text.push('\n');
            (name, text)
        })
        .collect()
}
