//! The save file (SPEC §6): the document is the host's ([`crate::host::save`]); this room reads
//! and checks it as a file, with the Lua mods' storage rules and the streaming kit's section.

use serde_json::Value;

use crate::json::Problem;

pub use crate::host::save::{
    check_header, ModSave, SaveDoc, OLDEST_SAVE_VERSION, SAVE_FORMAT, SAVE_VERSION,
};

/// Parses and checks the host's part of a save, the Lua mods' `storage` included
/// ([`crate::host::save::parse`] with the sandbox's storage rules).
pub fn parse(value: &Value) -> Result<(SaveDoc, crate::host::World), Problem> {
    crate::host::save::parse(value, crate::mods::lua::check_storage)
}

/// Checks a save on its own (without its scene): everything [`parse`] checks, and the
/// `world.streaming` section's consistency (with the default chunk size and no bounds; loading
/// into a game checks against the game's own).
pub fn check(value: &Value) -> Result<(), Problem> {
    let (doc, _) = parse(value)?;
    let key = crate::kits::streaming::STREAMING;
    if let Some(section) = doc.kits.get(key) {
        crate::kits::streaming::check_save_section(
            section,
            &format!("kits.{key}"),
            doc.scene.is_some(),
        )?;
    }
    let key = crate::kits::district::DISTRICT;
    if let Some(section) = doc.kits.get(key) {
        // Its shape; its lines and stamps are checked against the district files on load.
        crate::json::from_value::<crate::kits::district::SaveSection>(
            section,
            &format!("kits.{key}"),
        )?;
    }
    let key = crate::kits::nav::NAV;
    if let Some(section) = doc.kits.get(key) {
        crate::kits::nav::check_save_section(section, &format!("kits.{key}"))?;
    }
    Ok(())
}
