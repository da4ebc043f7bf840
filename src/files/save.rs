//! The save file (docs/reference/saves.md#the-save-document): the document is the host's
//! ([`crate::host::save`]); this room reads and checks it as a file, with the Lua mods' storage
//! rules and each kit's section check.

use serde_json::Value;

use crate::host::KitCatalog;
use crate::json::Problem;

pub use crate::host::save::{
    check_header, ModSave, SaveDoc, OLDEST_SAVE_VERSION, SAVE_FORMAT, SAVE_VERSION,
};

/// Parses and checks the host's part of a save, the Lua mods' `storage` included
/// ([`crate::host::save::parse`] with the sandbox's storage rules).
pub fn parse(value: &Value) -> Result<(SaveDoc, crate::host::World), Problem> {
    crate::host::save::parse(value, crate::mods::lua::check_storage)
}

/// Checks a save on its own (without its scene) against the built-in kits: see [`check_with`].
pub fn check(value: &Value) -> Result<(), Problem> {
    check_with(value, &crate::kits::builtin_catalog())
}

/// Checks a save on its own (without its scene): everything [`parse`] checks, a section only
/// for a kit of `catalog`, and each section by its kit's [`crate::host::SaveCheck`]
/// ([`crate::host::save::check_alone`]). Every load runs this first, so a save this refuses,
/// every game refuses, with the same problem; what depends on the game (its scene and settings,
/// its world directory, which kits and mods it runs) only loading tells, or
/// [`crate::game::Game::check_save`] (`world-streaming check SCENE SAVE`).
pub fn check_with(value: &Value, catalog: &KitCatalog) -> Result<(), Problem> {
    crate::host::save::check_alone(
        value,
        crate::mods::lua::check_storage,
        &catalog.save_checks(),
    )
    .map(drop)
}
