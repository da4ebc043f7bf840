//! The inputs file (SPEC §9): JSON Lines, one `{"tick": N, "do": ACTION, …}` a line, ticks
//! non-decreasing. Every line is checked for shape before tick 1; a bad line names its number.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grid::Position;
use crate::host::{Entity, EntityId};
use crate::json::{as_integer, describe, from_value, Problem};
use crate::kits::streaming::Radius;

use super::FileError;

/// Largest tick an input may carry, and the largest `--ticks`: a run is bounded.
pub const MAX_TICK: u64 = 10_000_000;
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
    /// Drops the refusal held at chunk `(x, z)`.
    #[serde(rename = "release")]
    Release {
        /// Chunk column.
        x: i64,
        /// Chunk row.
        z: i64,
    },
    /// Saves the game (path relative to the current directory).
    #[serde(rename = "save")]
    Save {
        /// Where.
        path: String,
    },
    /// Loads a save (path relative to the current directory); restores the tick counter.
    #[serde(rename = "load")]
    Load {
        /// From where.
        path: String,
    },
    /// Requests (or replaces) a preload ticket: a focus at `at` with its own radius, counting in
    /// ticks `tick ..= tick + ticks - 1` (SPEC §11).
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
    },
    /// Removes a preload ticket at once (an unknown id does nothing).
    #[serde(rename = "drop")]
    Drop {
        /// The ticket id.
        ticket: String,
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
            })
        } else {
            Err(errors)
        }
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
    let action: Action = from_value(&value, "").map_err(|p| p.to_string())?;
    check_action(&action).map_err(|p| p.to_string())?;
    Ok(InputLine { tick, action })
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
            v.extend(entity.tags.iter().map(|t| ("entity.tags", t.as_str())));
            v.extend(entity.rides.iter().map(|r| ("entity.rides", r.as_str())));
            v
        }
        Action::Tag { entity, tag } | Action::Untag { entity, tag } => {
            vec![("entity", entity.as_str()), ("tag", tag.as_str())]
        }
        Action::Move { entity, .. } | Action::Despawn { entity } | Action::Dismount { entity } => {
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
        Action::Spawn { entity } => entity
            .position
            .check()
            .map_err(|p| p.under("entity.position")),
        Action::Request { id, at, .. } => {
            crate::kits::streaming::foci::check_id(id)
                .map_err(|e| Problem::new("id", e.to_string()))?;
            at.check().map_err(|p| p.under("at"))
        }
        Action::Drop { ticket } => crate::kits::streaming::foci::check_id(ticket)
            .map_err(|e| Problem::new("ticket", e.to_string())),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(e.contains("unknown variant `jump`"), "{e}");
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
