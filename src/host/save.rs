//! The save document: a versioned JSON document holding the tick, the active scene, the entities,
//! the variables, each kit's own section and each Lua mod's state. The host writes and reads the
//! common part; each kit its section, through the [`crate::host::Kit`] trait; the mods' `storage`
//! is checked by whoever owns the mods (a [`StorageCheck`]), so the host knows no mod.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json::{from_value, Problem};
use crate::limits::{check_name, MAX_ENTITIES, MAX_TICK};

use super::{Entity, EntityId, World};

/// Checks a Lua mod's saved `storage` (`mods::lua::check_storage`); `path` locates it.
pub type StorageCheck = fn(&Value, &str) -> Result<(), Problem>;

/// A [`StorageCheck`] that accepts any storage: for a reader that restores no mod (the engine
/// alone; `Game::load` checks the storage of its own mods before the engine reads the file).
pub fn any_storage(_: &Value, _: &str) -> Result<(), Problem> {
    Ok(())
}

/// What a kit's save check sees of the save besides its own section: the host's part, already
/// checked ([`parse`]), and every kit's section (a kit that builds on another reads that kit's
/// through its service, never its JSON). Both `check` of a save on its own and loading it into a
/// game hand a kit the same facts, so both run the same check.
#[derive(Clone, Copy)]
pub struct SaveFacts<'a> {
    /// The tick the save was made at (the last tick that ran).
    pub tick: u64,
    /// The save's active scene, `None` outside a scene.
    pub scene: Option<&'a str>,
    /// The save's entities: the world it restores.
    pub world: &'a World,
    /// Every kit's section, by kit id.
    pub kits: &'a IndexMap<String, Value>,
}

impl<'a> SaveFacts<'a> {
    /// The facts of a document [`parse`] returned.
    pub fn new(doc: &'a SaveDoc, world: &'a World) -> Self {
        SaveFacts {
            tick: doc.tick,
            scene: doc.scene.as_deref(),
            world,
            kits: &doc.kits,
        }
    }
}

/// A kit's check of its save section on its own: everything that does not depend on the game it
/// is loaded into (its config, its world directory), against the widest settings any game of the
/// kit accepts. Registered in the [`crate::host::KitCatalog`] beside the kit; [`check_alone`]
/// runs it, and so does every load, first (and the kit's [`crate::host::Kit::prepare_load`]
/// again, before what needs the game).
pub type SaveCheck = fn(section: &Value, save: &SaveFacts<'_>) -> Result<(), Problem>;

/// The kits a catalog can build, each with its [`SaveCheck`] if it registered one: which
/// sections a save may hold, and how each is checked on its own.
#[derive(Clone, Default)]
pub struct SaveChecks(IndexMap<String, Option<SaveCheck>>);

impl SaveChecks {
    /// Kit `id` (one a catalog can build) with its check.
    pub fn add(&mut self, id: &str, check: Option<SaveCheck>) {
        self.0.insert(id.to_owned(), check);
    }
}

/// Checks a save on its own, without the game it is for: the host's part ([`parse`], the mods'
/// `storage` with `storage`), a section only for a kit of `kits` (never the host's own), and
/// each section by its kit's [`SaveCheck`], in the save's order. What this refuses, every game
/// refuses: a load runs it first (`Engine::load_document`, `Game::load`), so it refuses with the
/// very same problem, then checks what only the game can tell. Returns the document and its
/// world.
pub fn check_alone(
    value: &Value,
    storage: StorageCheck,
    kits: &SaveChecks,
) -> Result<(SaveDoc, World), Problem> {
    let (doc, world) = parse(value, storage)?;
    for id in doc.kits.keys() {
        if id == super::ENGINE_KIT || !kits.0.contains_key(id) {
            return Err(Problem::new(
                format!("kits.{id}"),
                format!(
                    "a section for kit `{}`, which no installed kit keeps",
                    crate::escape::escape(id)
                ),
            ));
        }
    }
    let facts = SaveFacts::new(&doc, &world);
    for (id, section) in &doc.kits {
        if let Some(check) = kits.0.get(id).copied().flatten() {
            check(section, &facts)?;
        }
    }
    Ok((doc, world))
}

/// The `format` value every save carries.
pub const SAVE_FORMAT: &str = "world-streaming-save";
/// The newest save version this build reads and writes. Version 2
/// (docs/reference/saves.md#the-streaming-section) adds the streaming kit's foci, tickets,
/// last-wanted ticks and capacity state; version 3 (round 3) adds optional kit sections and fields
/// (`world.district`; docs/reference/streaming.md#look-ahead: ticket priorities, predicted foci,
/// the `"fair"` turn, look-ahead's history, `holeTicks`); version 4 (round 4) the streaming kit's
/// complete chunks (docs/reference/streaming.md#complete-chunks). Versions 1 to 3 still load.
pub const SAVE_VERSION: u32 = 4;
/// The version a kit writes when it needs round 3's sections or fields and nothing newer.
pub const ROUND3_SAVE_VERSION: u32 = 3;
/// The version a save is written with when no enabled kit needs a newer one
/// ([`crate::host::Kit::save_version`]): a game without round-3 kits writes what it always wrote.
pub const BASE_SAVE_VERSION: u32 = 2;
/// The oldest save version this build reads.
pub const OLDEST_SAVE_VERSION: u32 = 1;

/// A save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveDoc {
    /// The JSON Schema this file follows (ignored).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `world-streaming-save`.
    pub format: String,
    /// The save version (2; 1 is read too).
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
    /// The state of each Lua mod, in mod order (absent: the mods keep theirs on load).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mods: Vec<ModSave>,
}

/// What a save holds of one Lua mod: its `storage` table and its `math.random` state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModSave {
    /// The mod's id.
    #[serde(rename = "mod")]
    pub id: String,
    /// Its `storage` table: an array of `[key, value]` pairs in `pairs` order, a nested table
    /// again such an array (see `mods::lua` for the rules).
    pub storage: Value,
    /// The state of its `math.random` generator: four 64-bit words, 16 hex digits each.
    pub random: [String; 4],
}

impl ModSave {
    /// Checks the id, the storage (with `storage`) and the generator state; returns the
    /// generator's words.
    pub fn check(&self, path: &str, storage: StorageCheck) -> Result<[u64; 4], Problem> {
        check_name(&self.id).map_err(|m| Problem::new(format!("{path}.mod"), m))?;
        storage(&self.storage, &format!("{path}.storage"))?;
        let mut words = [0u64; 4];
        for (i, (w, text)) in words.iter_mut().zip(&self.random).enumerate() {
            let ok = text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit());
            *w = u64::from_str_radix(text, 16)
                .ok()
                .filter(|_| ok)
                .ok_or_else(|| {
                    Problem::new(
                        format!("{path}.random[{i}]"),
                        format!("expected 16 hex digits, got {text:?}"),
                    )
                })?;
        }
        if words == [0; 4] {
            return Err(Problem::new(
                format!("{path}.random"),
                "expected a generator state that is not all zero",
            ));
        }
        Ok(words)
    }
}

/// Checks `format` and `version` before anything else, so a file that is not a save (or a save
/// from a newer build) gets that message rather than a list of field errors.
pub fn check_header(value: &Value) -> Result<(), Problem> {
    if !value.is_object() {
        return Err(Problem::new("", "expected a save document (a JSON object)"));
    }
    let format = value.get("format").and_then(Value::as_str);
    if format != Some(SAVE_FORMAT) {
        return Err(Problem::new(
            "format",
            format!("expected \"{SAVE_FORMAT}\"; this is not a save of this tool"),
        ));
    }
    match value.get("version").and_then(Value::as_u64) {
        Some(v) if (u64::from(OLDEST_SAVE_VERSION)..=u64::from(SAVE_VERSION)).contains(&v) => {
            Ok(())
        }
        Some(v) if v > u64::from(SAVE_VERSION) => Err(Problem::new(
            "version",
            format!("save version {v} is newer than this build reads (up to {SAVE_VERSION})"),
        )),
        _ => Err(Problem::new(
            "version",
            format!(
                "expected {OLDEST_SAVE_VERSION}..={SAVE_VERSION}, got {}",
                value
                    .get("version")
                    .map_or("nothing".into(), crate::json::describe)
            ),
        )),
    }
}

/// Parses and checks the host's part of a save: header, every field, the tick, entity names,
/// positions and `rides` links, variables, the mods' states (their `storage` with `storage`).
/// Returns the document and the world it describes.
pub fn parse(value: &Value, storage: StorageCheck) -> Result<(SaveDoc, World), Problem> {
    check_header(value)?;
    let doc: SaveDoc = from_value(value, "")?;
    if doc.tick > MAX_TICK {
        return Err(Problem::new(
            "tick",
            format!("expected at most {MAX_TICK}, got {}", doc.tick),
        ));
    }
    if too_many_entities(doc.entities.len()) {
        return Err(Problem::new(
            "entities",
            format!(
                "expected at most {MAX_ENTITIES} entities, got {}",
                doc.entities.len()
            ),
        ));
    }
    for (i, e) in doc.entities.iter().enumerate() {
        let names = std::iter::once(("id", e.id.as_str()))
            .chain(e.tags.iter().map(|t| ("tags", t)))
            .chain(e.rides.iter().map(|r| ("rides", r.as_str())));
        for (key, name) in names {
            check_name(name).map_err(|m| Problem::new(format!("entities[{i}].{key}"), m))?;
        }
    }
    for (k, v) in &doc.variables {
        if v.is_array() || v.is_object() {
            return Err(Problem::new(
                format!("variables.{k}"),
                format!(
                    "expected a number, string, boolean or null, got {}",
                    crate::json::describe(v)
                ),
            ));
        }
    }
    for (i, m) in doc.mods.iter().enumerate() {
        m.check(&format!("mods[{i}]"), storage)?;
    }
    let world = World::restore(doc.entities.clone(), doc.control.clone())
        .map_err(|(i, e)| Problem::new(format!("entities[{i}]"), e.to_string()))?;
    Ok((doc, world))
}

/// Whether `n` entities are more than a save may hold (as many as a scene: [`MAX_ENTITIES`]). Apart
/// so the boundary is tested without building a million entities.
fn too_many_entities(n: usize) -> bool {
    n > MAX_ENTITIES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_save_may_hold_as_many_entities_as_a_scene_and_no_more() {
        assert!(!too_many_entities(0));
        assert!(!too_many_entities(MAX_ENTITIES));
        assert!(too_many_entities(MAX_ENTITIES + 1));
    }
}
