//! The scene file (docs/reference/files-and-cli.md#the-scene-file): kits and their config, mods,
//! scenes, entities and the controlled character. Parsed in full and checked before anything runs.

use std::collections::HashSet;

use rustc_hash::{FxHashMap, FxHashSet};

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grid::Position;
use crate::host::{Entity, EntityId, KitEntry, SceneDef};
use crate::json::{from_value, Problem};

pub use crate::limits::{MAX_ENTITIES, MAX_ID_LEN};
/// Most mods a scene file may list.
pub const MAX_MODS: usize = 1_000;
/// Most scenes and kits a scene file may list.
pub const MAX_SCENES: usize = 1_000;

/// A scene file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// The JSON Schema this file follows (ignored).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The kits to enable, each with its config. `game.engine` (the host) is always present.
    pub kits: Vec<KitRef>,
    /// Mod files (`.json` or `.lua`), relative to the scene file, in mod order.
    #[serde(default)]
    pub mods: Vec<String>,
    /// The scenes; absent means one scene `main` with no entry. The first is entered before tick 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenes: Option<Vec<SceneSpec>>,
    /// The entities, in spawn order.
    #[serde(default)]
    pub entities: Vec<Entity>,
    /// The `character.control` entity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<EntityId>,
    /// Seed of the random numbers Lua mods see (`math.random`); default 0.
    #[serde(default)]
    pub seed: u64,
}

/// One kit entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KitRef {
    /// The kit id, e.g. `world.streaming`.
    pub id: String,
    /// The kit's config (each kit checks its own keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
}

/// One scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SceneSpec {
    /// The scene id.
    pub id: String,
    /// Where the grid starts when there is nobody to focus on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<Position>,
    /// Per-kit settings by kit id, e.g. `{"world.streaming": {"radius": 2}}`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub layers: IndexMap<String, Value>,
}

impl SceneFile {
    /// Parses a scene document; the first shape error is returned with its JSON path.
    pub fn from_json(value: &Value) -> Result<SceneFile, Problem> {
        from_value(value, "")
    }

    /// Every problem the engine would not catch itself: limits, duplicate ids, positions, links
    /// to unknown entities, `rides` loops, the control link.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if self.kits.len() > MAX_SCENES {
            out.push(Problem::new(
                "kits",
                format!(
                    "expected at most {MAX_SCENES} kits, got {}",
                    self.kits.len()
                ),
            ));
        }
        if self.mods.len() > MAX_MODS {
            out.push(Problem::new(
                "mods",
                format!("expected at most {MAX_MODS} mods, got {}", self.mods.len()),
            ));
        }
        if self.entities.len() > MAX_ENTITIES {
            out.push(Problem::new(
                "entities",
                format!(
                    "expected at most {MAX_ENTITIES} entities, got {}",
                    self.entities.len()
                ),
            ));
            return out;
        }
        if let Some(scenes) = &self.scenes {
            if scenes.is_empty() {
                out.push(Problem::new(
                    "scenes",
                    "expected at least one scene (or no `scenes` key)",
                ));
            }
            if scenes.len() > MAX_SCENES {
                out.push(Problem::new(
                    "scenes",
                    format!("expected at most {MAX_SCENES} scenes"),
                ));
            }
            let mut seen = HashSet::new();
            for (i, s) in scenes.iter().enumerate() {
                check_id(&s.id, || format!("scenes[{i}].id"), &mut out);
                if !seen.insert(s.id.as_str()) {
                    out.push(Problem::new(
                        format!("scenes[{i}].id"),
                        format!("duplicate scene id {:?}", s.id),
                    ));
                }
                if let Some(e) = &s.entry {
                    if let Err(p) = e.check() {
                        out.push(p.under(&format!("scenes[{i}].entry")));
                    }
                }
            }
        }
        let mut ids: FxHashSet<&str> = FxHashSet::default();
        ids.reserve(self.entities.len());
        for (i, e) in self.entities.iter().enumerate() {
            check_id(e.id.as_str(), || format!("entities[{i}].id"), &mut out);
            if !ids.insert(e.id.as_str()) {
                out.push(Problem::new(
                    format!("entities[{i}].id"),
                    format!("duplicate entity id {:?}", e.id.as_str()),
                ));
            }
            if let Err(p) = e.position.check() {
                out.push(p.under(&format!("entities[{i}].position")));
            }
            for t in e.tags.iter() {
                check_id(t, || format!("entities[{i}].tags"), &mut out);
            }
            if let Some(d) = &e.data {
                if let Err(m) = crate::host::check_data(d) {
                    out.push(Problem::new(format!("entities[{i}].data"), m));
                }
            }
        }
        for (i, e) in self.entities.iter().enumerate() {
            if let Some(v) = &e.rides {
                if !ids.contains(v.as_str()) {
                    out.push(Problem::new(
                        format!("entities[{i}].rides"),
                        format!(
                            "expected the id of an entity in this file, got {:?}",
                            v.as_str()
                        ),
                    ));
                }
            }
        }
        if out.is_empty() {
            // Ids are unique and every link names an entity: now `rides` loops, linked in file
            // order as `World::restore` links them (without building a world).
            let mut linked: FxHashMap<&str, &str> = FxHashMap::default();
            for (i, e) in self.entities.iter().enumerate() {
                let Some(vehicle) = &e.rides else { continue };
                let rider = e.id.as_str();
                let mut at = Some(vehicle.as_str());
                let mut steps = 0;
                while let Some(v) = at {
                    if v == rider {
                        let err = crate::host::EntityError::RideLoop(e.id.clone(), vehicle.clone());
                        out.push(Problem::new(
                            format!("entities[{i}].rides"),
                            err.to_string(),
                        ));
                        break;
                    }
                    steps += 1;
                    if steps > linked.len() {
                        break; // cannot happen: no loop is ever linked
                    }
                    at = linked.get(v).copied();
                }
                if !out.is_empty() {
                    break;
                }
                linked.insert(rider, vehicle.as_str());
            }
        }
        if let Some(c) = &self.control {
            if !ids.contains(c.as_str()) {
                out.push(Problem::new(
                    "control",
                    format!(
                        "expected the id of an entity in this file, got {:?}",
                        c.as_str()
                    ),
                ));
            }
        }
        out
    }

    /// The kit entries, for [`crate::host::Engine::new`].
    pub fn kit_entries(&self) -> Vec<KitEntry> {
        self.kits
            .iter()
            .map(|k| KitEntry {
                id: k.id.clone(),
                config: k.config.clone(),
            })
            .collect()
    }

    /// The scenes, for [`crate::host::Engine::new`] (`main` when the file has none).
    pub fn scene_defs(&self) -> Vec<SceneDef> {
        match &self.scenes {
            None => vec![SceneDef::new("main")],
            Some(list) => list
                .iter()
                .map(|s| SceneDef {
                    id: s.id.clone(),
                    entry: s.entry,
                    layers: s.layers.clone(),
                })
                .collect(),
        }
    }
}

/// Checks a name; the path is only built for a problem.
fn check_id(id: &str, path: impl FnOnce() -> String, out: &mut Vec<Problem>) {
    if let Err(m) = super::check_name(id) {
        out.push(Problem::new(path(), m));
    }
}
