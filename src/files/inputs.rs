//! The inputs file (docs/reference/files-and-cli.md#the-inputs-file): JSON Lines, one
//! `{"tick": N, "do": ACTION, …}` a line, ticks non-decreasing. Every line is checked for shape
//! before tick 1; a bad line names its number.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grid::Position;
use crate::host::{Entity, EntityId};
use crate::json::{as_integer, describe, from_value, Problem};
use crate::kits::streaming::{Priority, Radius};

use super::FileError;

pub use crate::limits::MAX_TICK;
/// Most lines an inputs file may hold.
pub const MAX_INPUT_LINES: usize = 1_000_000;

/// `at` of `player.moved`: `y` is optional and echoed only when given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MovedAt {
    /// East-west, metres.
    pub x: f64,
    /// Height, metres (optional; echoed only when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<f64>,
    /// North-south, metres.
    pub z: f64,
}

impl MovedAt {
    /// As a position (`y` 0 when absent).
    pub fn position(&self) -> Position {
        Position {
            x: self.x,
            y: self.y.unwrap_or(0.0),
            z: self.z,
        }
    }
}

/// One action of an inputs line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "do", deny_unknown_fields)]
pub enum Action {
    /// Moves an entity.
    #[serde(rename = "move")]
    Move {
        /// The entity.
        entity: EntityId,
        /// Where to.
        to: Position,
    },
    /// Emits `player.moved {x, y?, z}`.
    #[serde(rename = "player.moved")]
    PlayerMoved {
        /// The position reported.
        at: MovedAt,
    },
    /// Spawns an entity at the end of the spawn order.
    #[serde(rename = "spawn")]
    Spawn {
        /// The new entity.
        entity: Entity,
    },
    /// Removes an entity.
    #[serde(rename = "despawn")]
    Despawn {
        /// The entity.
        entity: EntityId,
    },
    /// Adds a tag.
    #[serde(rename = "tag")]
    Tag {
        /// The entity.
        entity: EntityId,
        /// The tag.
        tag: String,
    },
    /// Removes a tag.
    #[serde(rename = "untag")]
    Untag {
        /// The entity.
        entity: EntityId,
        /// The tag.
        tag: String,
    },
    /// Makes an entity ride a vehicle.
    #[serde(rename = "ride")]
    Ride {
        /// The rider.
        entity: EntityId,
        /// The vehicle.
        vehicle: EntityId,
    },
    /// Replaces an entity's `data` (docs/reference/engine.md#entity-data): any JSON object of at
    /// most 4 KiB serialized.
    #[serde(rename = "set")]
    Set {
        /// The entity (live when the input is applied).
        entity: EntityId,
        /// Its new data.
        data: serde_json::Map<String, serde_json::Value>,
    },
    /// Clears an entity's `rides` link.
    #[serde(rename = "dismount")]
    Dismount {
        /// The rider.
        entity: EntityId,
    },
    /// Sets (or, with `null`, clears) the `character.control` entity.
    #[serde(rename = "control")]
    Control {
        /// The entity, or `null` (the key is required).
        entity: Option<EntityId>,
    },
    /// Leaves the active scene.
    #[serde(rename = "leave")]
    Leave {},
    /// Enters a scene (leaving the active one first).
    #[serde(rename = "enter")]
    Enter {
        /// The scene id.
        scene: String,
    },
    /// Drops the refusal held at chunk `(x, z)`, or with vertical sections at section
    /// `(x, y, z)` (`y` left out: row 0).
    #[serde(rename = "release")]
    Release {
        /// Chunk column.
        x: i64,
        /// With vertical sections, the section row (left out: 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        y: Option<i64>,
        /// Chunk row.
        z: i64,
    },
    /// Saves the game (a relative path is relative to the current directory,
    /// docs/reference/files-and-cli.md#save-and-load-paths).
    #[serde(rename = "save")]
    Save {
        /// Where.
        path: String,
    },
    /// Loads a save (a relative path is relative to the current directory); restores the
    /// tick counter.
    #[serde(rename = "load")]
    Load {
        /// From where.
        path: String,
    },
    /// Requests (or replaces) a preload ticket: a focus at `at` with its own radius, counting in
    /// ticks `tick ..= tick + ticks - 1` (docs/reference/streaming.md#ticket-ticks).
    #[serde(rename = "request")]
    Request {
        /// The ticket id, 1..=64 characters.
        id: String,
        /// Where (`y` is ignored).
        at: Position,
        /// Rings wanted around `at`'s chunk.
        radius: Radius,
        /// How many tick plans it counts in.
        ticks: TicketTicks,
        /// Its priority, 0..=255 (docs/reference/streaming.md#priorities; absent: 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priority: Option<Priority>,
    },
    /// Removes a preload ticket at once (an unknown id does nothing).
    #[serde(rename = "drop")]
    Drop {
        /// The ticket id.
        ticket: String,
    },
    /// Sets the cell of `world.terrain` containing `at` (docs/reference/terrain.md#edits); a chunk
    /// that is not built refuses with a `world.terrain.edit.refused` event.
    #[serde(rename = "edit")]
    Edit {
        /// Where (`y` is ignored).
        at: Position,
        /// The cell's new height, 0..=65535.
        height: u16,
        /// The cell's new material, 0..=255 (absent: kept).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        material: Option<u8>,
    },
    /// Asks `world.nav` for a path from the cell of `from` to the cell of `to`
    /// (docs/reference/nav.md#queries); the answer is a
    /// `world.nav.path {id, status, nodes, path | x, z}` event stamped with this input's tick.
    #[serde(rename = "path")]
    Path {
        /// The query's name, echoed by the answer (1..=256 bytes).
        id: String,
        /// Where the walker stands (`y` is ignored).
        from: Position,
        /// Where it goes (`y` is ignored).
        to: Position,
    },
}

crate::checked_number!(
    /// How many tick plans a ticket counts in: an integer 1..=2147483647.
    TicketTicks(u64),
    "an integer 1..=2147483647",
    |v| as_integer(v)
        .filter(|n| (1..=crate::kits::streaming::foci::MAX_TICKET_TICKS as i64).contains(n))
        .map(|n| n as u64),
    { "type": "integer", "minimum": 1, "maximum": 2147483647, "description": "tick plans the ticket counts in" }
);

/// One line of an inputs file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InputLine {
    /// Applied before this tick runs.
    pub tick: u64,
    /// What to do.
    #[serde(flatten)]
    pub action: Action,
}

/// An inputs line with its line number (1-based) in its file.
#[derive(Debug, Clone, PartialEq)]
pub struct NumberedInput {
    /// Line number in the file.
    pub line: usize,
    /// The input.
    pub input: InputLine,
}

/// A parsed inputs file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inputs {
    /// The file's name, for messages.
    pub file: String,
    /// The inputs in file order.
    pub lines: Vec<NumberedInput>,
    /// The directory relative `save`/`load` paths are resolved against; `None` (the default)
    /// means the current directory, as docs/reference/files-and-cli.md#save-and-load-paths says (a
    /// replay sets a temporary directory).
    pub dir: Option<std::path::PathBuf>,
}

impl Inputs {
    /// Parses JSON Lines text. Blank lines are skipped. Every line is checked; all problems are
    /// returned (each naming its line).
    pub fn parse(text: &str, file: &str) -> Result<Inputs, Vec<FileError>> {
        let mut lines = Vec::new();
        let mut errors = Vec::new();
        let mut last_tick = 0u64;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            if raw.trim().is_empty() {
                continue;
            }
            if lines.len() >= MAX_INPUT_LINES {
                errors.push(FileError::Line {
                    file: file.into(),
                    line,
                    message: format!("expected at most {MAX_INPUT_LINES} inputs"),
                });
                break;
            }
            match parse_line(raw) {
                Ok(input) => {
                    if input.tick < last_tick {
                        errors.push(FileError::Line {
                            file: file.into(),
                            line,
                            message: format!(
                                "tick: expected ticks in non-decreasing order, got {} after {last_tick}",
                                input.tick
                            ),
                        });
                    }
                    last_tick = last_tick.max(input.tick);
                    lines.push(NumberedInput { line, input });
                }
                Err(message) => errors.push(FileError::Line {
                    file: file.into(),
                    line,
                    message,
                }),
            }
        }
        if errors.is_empty() {
            Ok(Inputs {
                file: file.into(),
                lines,
                dir: None,
            })
        } else {
            Err(errors)
        }
    }

    /// Reads and parses the inputs file at `path`. Its relative `save`/`load` paths are relative
    /// to the current directory (docs/reference/files-and-cli.md#save-and-load-paths); set
    /// [`Inputs::dir`] to resolve them elsewhere.
    pub fn read(path: &std::path::Path) -> Result<Inputs, Vec<FileError>> {
        let file = super::display_name(path);
        let text = super::read_text(path).map_err(|e| vec![e])?;
        Inputs::parse(&text, &file)
    }

    /// `path` of a `save`/`load` input, resolved against [`Inputs::dir`].
    pub fn resolve(&self, path: &str) -> std::path::PathBuf {
        match &self.dir {
            Some(dir) => dir.join(path),
            None => std::path::PathBuf::from(path),
        }
    }

    /// Warnings for `save`/`load` inputs with a relative path when the current directory is not
    /// the inputs file's (`inputs_path`): docs/reference/files-and-cli.md#save-and-load-paths
    /// resolves them against the current directory, which surprises whoever expects them next to
    /// the file (as mod paths are next to the scene). One `warning: FILE: line N: path: …` line
    /// each.
    pub fn path_warnings(&self, inputs_path: &std::path::Path) -> Vec<String> {
        let here = std::env::current_dir().and_then(|d| d.canonicalize()).ok();
        let parent = inputs_path.parent().filter(|p| !p.as_os_str().is_empty());
        let beside = parent
            .unwrap_or(std::path::Path::new("."))
            .canonicalize()
            .ok();
        if self.dir.is_some() || here.is_none() || here == beside {
            return Vec::new();
        }
        let mut out = Vec::new();
        for l in &self.lines {
            let (Action::Save { path } | Action::Load { path }) = &l.input.action else {
                continue;
            };
            if std::path::Path::new(path).is_relative() {
                out.push(format!(
                    "warning: {}: line {}: path: {path:?} is relative to the current directory \
                     (docs/reference/files-and-cli.md#save-and-load-paths), {}, not to this file's \
                     directory",
                    self.file,
                    l.line,
                    here.as_deref()
                        .unwrap_or(std::path::Path::new("."))
                        .display()
                ));
            }
        }
        out
    }

    /// The last input's tick (0 without inputs).
    pub fn last_tick(&self) -> u64 {
        self.lines.last().map_or(0, |l| l.input.tick)
    }
}

/// Parses one line: JSON syntax, the `tick`, then the action's shape and values.
pub fn parse_line(raw: &str) -> Result<InputLine, String> {
    let mut value: Value = serde_json::from_str(raw).map_err(|e| {
        let m = e.to_string();
        let m = m
            .rfind(" at line ")
            .map_or(m.as_str(), |i| &m[..i])
            .to_owned();
        format!("column {}: {m}", e.column())
    })?;
    let obj = value.as_object_mut().ok_or_else(|| {
        format!(
            "expected an object {{\"tick\": N, \"do\": …}}, got {}",
            describe_kind(raw)
        )
    })?;
    let tick = obj
        .remove("tick")
        .ok_or("tick: missing; expected a tick number")?;
    let tick = as_integer(&tick)
        .filter(|t| (0..=MAX_TICK as i64).contains(t))
        .ok_or_else(|| {
            format!(
                "tick: expected an integer 0..={MAX_TICK}, got {}",
                describe(&tick)
            )
        })? as u64;
    if !obj.contains_key("do") {
        return Err("do: missing; expected the action's name, e.g. \"move\"".into());
    }
    if obj.get("do").and_then(Value::as_str) == Some("control") && !obj.contains_key("entity") {
        return Err("entity: missing; expected an entity id, or null to clear control".into());
    }
    let action = parse_action(value)?;
    check_action(&action).map_err(|p| p.to_string())?;
    Ok(InputLine { tick, action })
}

/// The value checks [`parse_line`] makes after the shape (positions finite and in range, ids
/// well formed, `data` within its limit), for an action built without JSON (the C ABI's
/// `ws_game_move`, `ws_game_set_data`): the same message a line would get.
pub fn check_input(action: &Action) -> Result<(), String> {
    check_action(action).map_err(|p| p.to_string())
}

/// The action of a line (`tick` removed) through its externally tagged twin, so a problem
/// inside it keeps its JSON path (`to.z: missing field`): serde loses the path inside an
/// internally tagged enum.
fn parse_action(mut value: Value) -> Result<Action, String> {
    let obj = value.as_object_mut().expect("checked by the caller");
    let tag = obj.remove("do").expect("checked by the caller");
    let Some(name) = tag.as_str().map(str::to_owned) else {
        return Err(format!(
            "do: expected the action's name (a string), got {}",
            describe(&tag)
        ));
    };
    let tagged = serde_json::json!({ name.clone(): value });
    let twin: Tagged = from_value(&tagged, "").map_err(|p| {
        // The twin's path starts with the action's name: the line has no such level.
        let path = p
            .path
            .strip_prefix(&name)
            .map(|rest| rest.trim_start_matches('.').to_owned());
        match path {
            Some(path) => Problem::new(path, p.message).to_string(),
            None => Problem::new("do", p.message).to_string(),
        }
    })?;
    Ok(twin.into())
}

/// [`Action`], externally tagged (`{"move": {"entity": …, "to": …}}`), for parsing only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
enum Tagged {
    #[serde(rename = "move")]
    Move { entity: EntityId, to: Position },
    #[serde(rename = "player.moved")]
    PlayerMoved { at: MovedAt },
    #[serde(rename = "spawn")]
    Spawn { entity: Entity },
    #[serde(rename = "despawn")]
    Despawn { entity: EntityId },
    #[serde(rename = "tag")]
    Tag { entity: EntityId, tag: String },
    #[serde(rename = "untag")]
    Untag { entity: EntityId, tag: String },
    #[serde(rename = "ride")]
    Ride { entity: EntityId, vehicle: EntityId },
    #[serde(rename = "dismount")]
    Dismount { entity: EntityId },
    #[serde(rename = "set")]
    Set {
        entity: EntityId,
        data: serde_json::Map<String, serde_json::Value>,
    },
    #[serde(rename = "control")]
    Control { entity: Option<EntityId> },
    #[serde(rename = "leave")]
    Leave {},
    #[serde(rename = "enter")]
    Enter { scene: String },
    #[serde(rename = "release")]
    Release {
        x: i64,
        #[serde(default)]
        y: Option<i64>,
        z: i64,
    },
    #[serde(rename = "save")]
    Save { path: String },
    #[serde(rename = "load")]
    Load { path: String },
    #[serde(rename = "request")]
    Request {
        id: String,
        at: Position,
        radius: Radius,
        ticks: TicketTicks,
        #[serde(default)]
        priority: Option<Priority>,
    },
    #[serde(rename = "drop")]
    Drop { ticket: String },
    #[serde(rename = "edit")]
    Edit {
        at: Position,
        height: u16,
        #[serde(default)]
        material: Option<u8>,
    },
    #[serde(rename = "path")]
    Path {
        id: String,
        from: Position,
        to: Position,
    },
}

impl From<Tagged> for Action {
    fn from(t: Tagged) -> Action {
        match t {
            Tagged::Move { entity, to } => Action::Move { entity, to },
            Tagged::PlayerMoved { at } => Action::PlayerMoved { at },
            Tagged::Spawn { entity } => Action::Spawn { entity },
            Tagged::Despawn { entity } => Action::Despawn { entity },
            Tagged::Tag { entity, tag } => Action::Tag { entity, tag },
            Tagged::Untag { entity, tag } => Action::Untag { entity, tag },
            Tagged::Ride { entity, vehicle } => Action::Ride { entity, vehicle },
            Tagged::Dismount { entity } => Action::Dismount { entity },
            Tagged::Set { entity, data } => Action::Set { entity, data },
            Tagged::Control { entity } => Action::Control { entity },
            Tagged::Leave {} => Action::Leave {},
            Tagged::Enter { scene } => Action::Enter { scene },
            Tagged::Release { x, y, z } => Action::Release { x, y, z },
            Tagged::Save { path } => Action::Save { path },
            Tagged::Load { path } => Action::Load { path },
            Tagged::Request {
                id,
                at,
                radius,
                ticks,
                priority,
            } => Action::Request {
                id,
                at,
                radius,
                ticks,
                priority,
            },
            Tagged::Drop { ticket } => Action::Drop { ticket },
            Tagged::Edit {
                at,
                height,
                material,
            } => Action::Edit {
                at,
                height,
                material,
            },
            Tagged::Path { id, from, to } => Action::Path { id, from, to },
        }
    }
}

fn describe_kind(raw: &str) -> String {
    let t = raw.trim_start();
    match t.chars().next() {
        Some('[') => "an array".into(),
        Some('"') => "a string".into(),
        Some('t' | 'f') => "a boolean".into(),
        Some('n') => "null".into(),
        _ => "a number".into(),
    }
}

/// Value checks serde cannot express: positions in range, ids not empty.
fn check_action(action: &Action) -> Result<(), Problem> {
    let names: Vec<(&str, &str)> = match action {
        Action::Spawn { entity } => {
            let mut v = vec![("entity.id", entity.id.as_str())];
            v.extend(entity.tags.iter().map(|t| ("entity.tags", t)));
            v.extend(entity.rides.iter().map(|r| ("entity.rides", r.as_str())));
            v
        }
        Action::Tag { entity, tag } | Action::Untag { entity, tag } => {
            vec![("entity", entity.as_str()), ("tag", tag.as_str())]
        }
        Action::Move { entity, .. }
        | Action::Despawn { entity }
        | Action::Dismount { entity }
        | Action::Set { entity, .. } => {
            vec![("entity", entity.as_str())]
        }
        Action::Ride { entity, vehicle } => {
            vec![("entity", entity.as_str()), ("vehicle", vehicle.as_str())]
        }
        Action::Control {
            entity: Some(entity),
        } => vec![("entity", entity.as_str())],
        Action::Enter { scene } => vec![("scene", scene.as_str())],
        _ => Vec::new(),
    };
    for (path, name) in names {
        super::check_name(name).map_err(|m| Problem::new(path, m))?;
    }
    match action {
        Action::Move { to, .. } => to.check().map_err(|p| p.under("to")),
        Action::PlayerMoved { at } => at.position().check().map_err(|p| p.under("at")),
        Action::Spawn { entity } => {
            if let Some(d) = &entity.data {
                crate::host::check_data(d).map_err(|m| Problem::new("entity.data", m))?;
            }
            entity
                .position
                .check()
                .map_err(|p| p.under("entity.position"))
        }
        Action::Set { data, .. } => {
            crate::host::check_data(data).map_err(|m| Problem::new("data", m))
        }
        Action::Request { id, at, .. } => {
            crate::kits::streaming::foci::check_id(id)
                .map_err(|e| Problem::new("id", e.to_string()))?;
            at.check().map_err(|p| p.under("at"))
        }
        Action::Drop { ticket } => crate::kits::streaming::foci::check_id(ticket)
            .map_err(|e| Problem::new("ticket", e.to_string())),
        Action::Edit { at, .. } => at.check().map_err(|p| p.under("at")),
        Action::Path { id, from, to } => {
            super::check_name(id).map_err(|m| Problem::new("id", m))?;
            from.check().map_err(|p| p.under("from"))?;
            to.check().map_err(|p| p.under("to"))
        }
        _ => Ok(()),
    }
}

impl Inputs {
    /// Checks the inputs against the scene file they will run with, before anything runs:
    /// every entity an input names must exist when it is applied (an entity of the scene or one
    /// spawned by an earlier input, and not despawned since), a spawned id must be free, an
    /// `enter` must name a scene of the file, and with a `target` tick, no `save` or `load` may
    /// be stamped past it (it would never run). After a `load` the world is the save's, which
    /// only the run knows: entity names are no longer checked from there on.
    pub fn check_against(
        &self,
        scene: &super::scene::SceneFile,
        target: Option<u64>,
    ) -> Vec<FileError> {
        use std::collections::BTreeMap;
        let mut alive: BTreeMap<&str, ()> =
            scene.entities.iter().map(|e| (e.id.as_str(), ())).collect();
        let mut despawned: BTreeMap<&str, usize> = BTreeMap::new();
        let scenes: Vec<String> = scene.scene_defs().into_iter().map(|s| s.id).collect();
        // District entities (docs/reference/district.md#materialising) come and go with their
        // chunks: only the run knows them.
        let mut known_world = !scene
            .kits
            .iter()
            .any(|k| k.id == crate::kits::district::DISTRICT);
        let mut errors = Vec::new();
        for l in &self.lines {
            let mut fail = |message: String| {
                errors.push(FileError::Line {
                    file: self.file.clone(),
                    line: l.line,
                    message,
                })
            };
            let action = &l.input.action;
            if let (Some(target), Action::Save { .. } | Action::Load { .. }) = (target, action) {
                if l.input.tick > target {
                    fail(format!(
                        "tick: a {} at tick {} is past the tick target {target}: it never runs",
                        if matches!(action, Action::Save { .. }) {
                            "save"
                        } else {
                            "load"
                        },
                        l.input.tick
                    ));
                }
            }
            if let Action::Enter { scene: name } = action {
                if !scenes.contains(name) {
                    fail(format!(
                        "scene: no scene {name:?} in the scene file; scenes: {}",
                        scenes.join(", ")
                    ));
                }
            }
            if matches!(action, Action::Load { .. }) {
                known_world = false;
            }
            if !known_world {
                continue;
            }
            let named: Vec<(&str, &EntityId)> = match action {
                Action::Move { entity, .. }
                | Action::Despawn { entity }
                | Action::Tag { entity, .. }
                | Action::Untag { entity, .. }
                | Action::Dismount { entity }
                | Action::Set { entity, .. } => vec![("entity", entity)],
                Action::Ride { entity, vehicle } => vec![("entity", entity), ("vehicle", vehicle)],
                Action::Control {
                    entity: Some(entity),
                } => vec![("entity", entity)],
                _ => Vec::new(),
            };
            for (key, id) in named {
                if alive.contains_key(id.as_str()) {
                    continue;
                }
                match despawned.get(id.as_str()) {
                    Some(at) => fail(format!(
                        "{key}: no entity {:?} at this point: line {at} despawned it",
                        id.as_str()
                    )),
                    None => fail(format!(
                        "{key}: no entity {:?} ever exists: the scene has none and no earlier input spawns it",
                        id.as_str()
                    )),
                }
            }
            match action {
                Action::Spawn { entity } => {
                    if alive.insert(entity.id.as_str(), ()).is_some() {
                        fail(format!(
                            "entity.id: an entity {:?} already exists at this point",
                            entity.id.as_str()
                        ));
                    }
                    despawned.remove(entity.id.as_str());
                }
                Action::Despawn { entity } if alive.remove(entity.as_str()).is_some() => {
                    despawned.insert(entity.as_str(), l.line);
                }
                _ => {}
            }
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_checked_against_the_scene_entities_scenes_and_target() {
        let scene = super::super::scene::SceneFile::from_json(&serde_json::json!({
            "kits": [],
            "scenes": [{"id": "town"}],
            "entities": [{"id": "hero", "position": {"x": 0, "z": 0}}]
        }))
        .unwrap();
        let text = [
            r#"{"tick": 1, "do": "move", "entity": "hero", "to": {"x": 1, "z": 0}}"#,
            r#"{"tick": 1, "do": "move", "entity": "ghost", "to": {"x": 1, "z": 0}}"#,
            r#"{"tick": 2, "do": "spawn", "entity": {"id": "cart", "position": {"x": 0, "z": 0}}}"#,
            r#"{"tick": 2, "do": "ride", "entity": "hero", "vehicle": "cart"}"#,
            r#"{"tick": 3, "do": "despawn", "entity": "cart"}"#,
            r#"{"tick": 3, "do": "tag", "entity": "cart", "tag": "x"}"#,
            r#"{"tick": 4, "do": "enter", "scene": "cave"}"#,
            r#"{"tick": 9, "do": "save", "path": "s.json"}"#,
            r#"{"tick": 9, "do": "load", "path": "s.json"}"#,
            r#"{"tick": 9, "do": "move", "entity": "anyone", "to": {"x": 1, "z": 0}}"#,
        ]
        .join("\n");
        let inputs = Inputs::parse(&text, "in.jsonl").unwrap();
        let errors: Vec<String> = inputs
            .check_against(&scene, Some(8))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "in.jsonl: line 2: entity: no entity \"ghost\" ever exists: the scene has none and no earlier input spawns it",
                "in.jsonl: line 6: entity: no entity \"cart\" at this point: line 5 despawned it",
                "in.jsonl: line 7: scene: no scene \"cave\" in the scene file; scenes: town",
                "in.jsonl: line 8: tick: a save at tick 9 is past the tick target 8: it never runs",
                "in.jsonl: line 9: tick: a load at tick 9 is past the tick target 8: it never runs",
            ]
        );
        assert_eq!(inputs.check_against(&scene, None).len(), 3);
    }

    #[test]
    fn a_line_parses_into_tick_and_action() {
        let l =
            parse_line(r#"{"tick": 3, "do": "move", "entity": "hero", "to": {"x": 1, "z": 2}}"#)
                .unwrap();
        assert_eq!(l.tick, 3);
        assert!(matches!(l.action, Action::Move { .. }));
        let l = parse_line(r#"{"tick": 1, "do": "control", "entity": null}"#).unwrap();
        assert_eq!(l.action, Action::Control { entity: None });
        let l = parse_line(r#"{"tick": 1, "do": "leave"}"#).unwrap();
        assert_eq!(l.action, Action::Leave {});
    }

    #[test]
    fn bad_lines_say_what_was_expected() {
        let e = parse_line(r#"{"tick": 1, "do": "jump"}"#).unwrap_err();
        assert!(
            e.starts_with("do: unknown value \"jump\"; expected one of: move, "),
            "{e}"
        );
        let e =
            parse_line(r#"{"tick": 1, "do": "move", "entity": "a", "to": {"x": 1}}"#).unwrap_err();
        assert_eq!(e, "to.z: missing field");
        let e =
            parse_line(r#"{"tick": 1, "do": "move", "entity": "a", "to": [1, 2]}"#).unwrap_err();
        assert_eq!(e, "to: expected an object, got [1,2]");
        let e = parse_line(r#"{"tick": -1, "do": "leave"}"#).unwrap_err();
        assert!(e.starts_with("tick: expected an integer"), "{e}");
        let e =
            parse_line(r#"{"tick": 1, "do": "move", "entity": "a", "to": {"x": 1e300, "z": 0}}"#)
                .unwrap_err();
        assert!(e.starts_with("to.x: expected a finite number"), "{e}");
        let e = parse_line(r#"{"tick": 1, "do": "leave", "extra": 1}"#).unwrap_err();
        assert!(e.contains("unknown field `extra`"), "{e}");
        let e = parse_line("[1]").unwrap_err();
        assert!(e.contains("expected an object"), "{e}");
    }

    #[test]
    fn decreasing_ticks_name_the_line() {
        let text = "{\"tick\": 2, \"do\": \"leave\"}\n\n{\"tick\": 1, \"do\": \"leave\"}\n";
        let errs = Inputs::parse(text, "in.jsonl").unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].to_string().starts_with("in.jsonl: line 3: tick:"),
            "{}",
            errs[0]
        );
    }
}
