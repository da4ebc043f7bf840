//! `world.nav`'s save section (save version 3, optional): every agent's goal cell, held path,
//! wait and stuck mark, the turn agent, and the chunks changed since the last agents' tick, so a
//! loaded game continues exactly like the uninterrupted run. A save without the section loads
//! with no agent state (every agent plans afresh). Everything is checked before anything
//! changes.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::ChunkPos;
use crate::host::{EntityId, Problem};

use super::search::Cell;
use super::state::{Agent, State, Stuck};

/// Most cells a saved path may hold (a path expands at least one node per cell).
pub const MAX_SAVED_PATH: usize = super::config::MAX_NODES as usize;

/// A chunk `{x, z}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedChunk {
    /// Chunk column.
    pub x: i64,
    /// Chunk row.
    pub z: i64,
}

/// One agent's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedAgent {
    /// The entity.
    pub id: EntityId,
    /// The goal cell the state is for.
    pub goal: Cell,
    /// The cells still to step into, next first.
    pub path: Vec<Cell>,
    /// The chunk its wait began on, while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<SavedChunk>,
    /// `none` or `budget` while it is stuck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck: Option<String>,
    /// Whether it arrived at this goal.
    #[serde(default)]
    pub arrived: bool,
}

/// The section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveSection {
    /// Agents by id.
    pub agents: Vec<SavedAgent>,
    /// The agent cut off by the last tick's node budget.
    #[serde(default)]
    pub turn: Option<EntityId>,
    /// Chunks changed or released since the last agents' tick, row order.
    #[serde(default)]
    pub changed: Vec<SavedChunk>,
    /// Whether any chunk was built, changed or released since the last agents' tick.
    #[serde(default)]
    pub moved: bool,
}

/// A checked section.
pub(super) struct Prepared {
    agents: BTreeMap<EntityId, Agent>,
    turn: Option<EntityId>,
    changed: BTreeSet<ChunkPos>,
    moved: bool,
}

impl State {
    /// The section of the current state.
    pub(super) fn save_section(&self) -> SaveSection {
        let chunk = |c: ChunkPos| SavedChunk { x: c.x, z: c.z };
        SaveSection {
            agents: self
                .agents
                .iter()
                .map(|(id, a)| SavedAgent {
                    id: id.clone(),
                    goal: a.goal,
                    path: a.path.iter().copied().collect(),
                    waiting: a.waiting.map(chunk),
                    stuck: a.stuck.map(|s| s.name().to_owned()),
                    arrived: a.arrived,
                })
                .collect(),
            turn: self.turn.clone(),
            changed: self.changed.iter().copied().map(chunk).collect(),
            moved: self.moved,
        }
    }

    /// Restores a checked section (`None`: an older save, no agent state).
    pub(super) fn restore(&mut self, p: Option<Prepared>) {
        let p = p.unwrap_or(Prepared {
            agents: BTreeMap::new(),
            turn: None,
            changed: BTreeSet::new(),
            moved: false,
        });
        self.agents = p.agents;
        self.turn = p.turn;
        self.changed = p.changed;
        self.moved = p.moved;
    }
}

/// Checks a section completely: ids, unique agents in id order, adjacent path cells, the stuck
/// word, chunk coordinates.
pub(super) fn check(s: SaveSection) -> Result<Prepared, Problem> {
    let coord = |v: i64, path: String| -> Result<(), Problem> {
        let max = crate::grid::MAX_CHUNK_COORD * i64::from(crate::kits::terrain::MAX_CELLS);
        if v.abs() > max {
            return Err(Problem::new(
                path,
                format!("expected -{max}..={max}, got {v}"),
            ));
        }
        Ok(())
    };
    let mut agents = BTreeMap::new();
    for (i, a) in s.agents.into_iter().enumerate() {
        let at = format!("agents[{i}]");
        crate::limits::check_name(a.id.as_str())
            .map_err(|m| Problem::new(format!("{at}.id"), m))?;
        if agents.keys().next_back().is_some_and(|last| *last >= a.id) {
            return Err(Problem::new(
                format!("{at}.id"),
                "expected agents in ascending id order, each once",
            ));
        }
        coord(a.goal.x, format!("{at}.goal.x"))?;
        coord(a.goal.z, format!("{at}.goal.z"))?;
        if a.path.len() > MAX_SAVED_PATH {
            return Err(Problem::new(
                format!("{at}.path"),
                format!("expected at most {MAX_SAVED_PATH} cells"),
            ));
        }
        for (k, c) in a.path.iter().enumerate() {
            coord(c.x, format!("{at}.path[{k}].x"))?;
            coord(c.z, format!("{at}.path[{k}].z"))?;
            if let Some(prev) = k.checked_sub(1).map(|p| a.path[p]) {
                if (c.x - prev.x).abs() > 1 || (c.z - prev.z).abs() > 1 || *c == prev {
                    return Err(Problem::new(
                        format!("{at}.path[{k}]"),
                        "expected a cell next to the one before it",
                    ));
                }
            }
        }
        let stuck = match a.stuck.as_deref() {
            None => None,
            Some("none") => Some(Stuck::None),
            Some("budget") => Some(Stuck::Budget),
            Some(other) => {
                return Err(Problem::new(
                    format!("{at}.stuck"),
                    format!("expected \"none\" or \"budget\", got {other:?}"),
                ))
            }
        };
        let waiting = a.waiting.map(|c| ChunkPos::new(c.x, c.z));
        agents.insert(
            a.id,
            Agent {
                goal: a.goal,
                path: a.path.into(),
                waiting,
                stuck,
                arrived: a.arrived,
            },
        );
    }
    if let Some(t) = &s.turn {
        crate::limits::check_name(t.as_str()).map_err(|m| Problem::new("turn", m))?;
    }
    let mut changed = BTreeSet::new();
    for (i, c) in s.changed.iter().enumerate() {
        coord(c.x, format!("changed[{i}].x"))?;
        coord(c.z, format!("changed[{i}].z"))?;
        changed.insert(ChunkPos::new(c.x, c.z));
    }
    Ok(Prepared {
        agents,
        turn: s.turn,
        changed,
        moved: s.moved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<Prepared, Problem> {
        check(from_value::<SaveSection>(&v, "kits.world.nav")?)
    }

    #[test]
    fn each_key_of_the_section_is_checked() {
        let ok = json!({"agents": [{"id": "a", "goal": {"x": 1, "z": 2},
            "path": [{"x": 0, "z": 0}, {"x": 1, "z": 0}], "waiting": {"x": 0, "z": 0}}],
            "turn": "a", "changed": [{"x": 1, "z": 1}], "moved": true});
        assert!(parse(ok).is_ok());
        for (v, path) in [
            (
                json!({"agents": [{"id": "a", "goal": {"x": 1, "z": 2},
                    "path": [{"x": 0, "z": 0}, {"x": 2, "z": 0}]}]}),
                "agents[0].path[1]",
            ),
            (
                json!({"agents": [{"id": "b", "goal": {"x": 1, "z": 2}, "path": []},
                    {"id": "a", "goal": {"x": 1, "z": 2}, "path": []}]}),
                "agents[1].id",
            ),
            (
                json!({"agents": [{"id": "a", "goal": {"x": 1, "z": 2}, "path": [],
                    "stuck": "tired"}]}),
                "agents[0].stuck",
            ),
            (
                json!({"agents": [{"id": "a", "goal": {"x": 1e15, "z": 2}, "path": []}]}),
                "kits.world.nav.agents[0].goal.x",
            ),
            (
                json!({"agents": [], "changed": [{"x": 1}]}),
                "kits.world.nav.changed[0].z",
            ),
            (json!({"agents": [], "extra": 1}), "kits.world.nav.extra"),
        ] {
            let err = match parse(v) {
                Err(e) => e,
                Ok(_) => panic!("{path} accepted"),
            };
            assert!(err.path.ends_with(path), "{path}: {err}");
        }
    }
}
