//! `world.nav`'s save section (save version 3, optional): every agent's goal cell, held path,
//! wait and stuck mark, the turn agent, and the chunks changed since the last agents' tick, so a
//! loaded game continues exactly like the uninterrupted run. A save without the section loads
//! with no agent state (every agent plans afresh). Everything is checked before anything
//! changes.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::ChunkPos;
use crate::host::{EntityId, Problem, SaveFacts};

use super::search::Cell;
use super::state::{Agent, State, Stuck};

/// Most cells an agent's held path may hold in a game whose searches expand at most
/// `max_nodes` nodes (`maxNodes`): every cell of a path found, the start's included, is a node
/// the search expanded, and the agent holds the path without its start.
pub fn max_held_path(max_nodes: u32) -> usize {
    max_nodes.saturating_sub(1) as usize
}

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
    /// Nodes the `path` inputs stamped with the coming tick expanded before the save (they
    /// share `maxNodes`); left out when 0.
    #[serde(default, rename = "inputNodes", skip_serializing_if = "is_zero")]
    pub input_nodes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A checked section.
pub(super) struct Prepared {
    agents: BTreeMap<EntityId, Agent>,
    turn: Option<EntityId>,
    changed: BTreeSet<ChunkPos>,
    moved: bool,
    input_nodes: u64,
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
            input_nodes: self.input_nodes,
        }
    }

    /// Restores a checked section (`None`: an older save, no agent state).
    pub(super) fn restore(&mut self, p: Option<Prepared>) {
        let p = p.unwrap_or(Prepared {
            agents: BTreeMap::new(),
            turn: None,
            changed: BTreeSet::new(),
            moved: false,
            input_nodes: 0,
        });
        self.agents = p.agents;
        self.turn = p.turn;
        self.changed = p.changed;
        self.moved = p.moved;
        self.input_nodes = p.input_nodes;
    }
}

/// Checks a section completely against the rest of the save: ids of the save's entities,
/// unique agents in id order, held paths a search can find (adjacent cells ending at the goal,
/// at most what the largest `maxNodes` finds), the stuck word, the turn one of the agents,
/// chunk coordinates, the changed chunks in row order; then the held paths against
/// `max_nodes`, this game's `maxNodes` (a save checked on its own: the largest). One check, for
/// `check` and for a load, which refuses what `check` alone refuses first, with the same
/// problem.
pub(super) fn check(
    s: SaveSection,
    save: &SaveFacts<'_>,
    max_nodes: u32,
) -> Result<Prepared, Problem> {
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
    let max_path = max_held_path(super::config::MAX_NODES);
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
        // An agent's state leaves with its entity (see NavKit::on_entities_changed).
        if save.world.get(&a.id).is_none() {
            return Err(Problem::new(
                format!("{at}.id"),
                format!("agent {:?} is no entity of the save", a.id.as_str()),
            ));
        }
        coord(a.goal.x, format!("{at}.goal.x"))?;
        coord(a.goal.z, format!("{at}.goal.z"))?;
        if a.path.len() > max_path {
            return Err(too_long(i, a.path.len(), super::config::MAX_NODES));
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
        if let Some(last) = a.path.last().filter(|c| **c != a.goal) {
            return Err(Problem::new(
                format!("{at}.path[{}]", a.path.len() - 1),
                format!(
                    "expected the path to end at the goal ({}, {}), got ({}, {})",
                    a.goal.x, a.goal.z, last.x, last.z
                ),
            ));
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
        // The agent a tick's node budget cut off: one whose state the section holds.
        if !agents.contains_key(t) {
            return Err(Problem::new(
                "turn",
                format!("expected one of the agents, got {:?}", t.as_str()),
            ));
        }
    }
    let mut changed = BTreeSet::new();
    for (i, c) in s.changed.iter().enumerate() {
        coord(c.x, format!("changed[{i}].x"))?;
        coord(c.z, format!("changed[{i}].z"))?;
        let chunk = ChunkPos::new(c.x, c.z);
        if changed.last().is_some_and(|last| *last >= chunk) {
            return Err(Problem::new(
                format!("changed[{i}]"),
                "expected the chunks in row order (z, then x), each once",
            ));
        }
        changed.insert(chunk);
    }
    if s.input_nodes > u64::from(super::config::MAX_NODES) {
        return Err(Problem::new(
            "inputNodes",
            format!(
                "expected at most {} (maxNodes at its largest), got {}",
                super::config::MAX_NODES,
                s.input_nodes
            ),
        ));
    }
    // What this game adds: its maxNodes.
    if s.input_nodes > u64::from(max_nodes) {
        return Err(Problem::new(
            "inputNodes",
            format!(
                "expected at most {max_nodes} (this game's maxNodes), got {}",
                s.input_nodes
            ),
        ));
    }
    let most = max_held_path(max_nodes);
    if let Some((i, a)) = agents
        .values()
        .enumerate()
        .find(|(_, a)| a.path.len() > most)
    {
        return Err(too_long(i, a.path.len(), max_nodes));
    }
    Ok(Prepared {
        agents,
        turn: s.turn,
        changed,
        moved: s.moved,
        input_nodes: s.input_nodes,
    })
}

/// Agent `i`'s held path of `len` cells is longer than a search of `max_nodes` finds.
fn too_long(i: usize, len: usize, max_nodes: u32) -> Problem {
    Problem::new(
        format!("agents[{i}].path"),
        format!(
            "expected at most {} cells (a path found within maxNodes {max_nodes}, without its \
             start), got {len}",
            max_held_path(max_nodes)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Position;
    use crate::host::{Entity, World};
    use crate::json::from_value;
    use serde_json::json;

    /// A save's world holding the entities `a` and `b`.
    fn world() -> World {
        let mut w = World::new();
        for id in ["a", "b"] {
            w.spawn(Entity {
                id: EntityId::new(id),
                tags: Default::default(),
                position: Position::new(0.0, 0.0),
                rides: None,
                data: None,
            })
            .unwrap();
        }
        w
    }

    /// `v` checked as a section of a save with [`world`]'s entities, with `max_nodes`.
    fn parse_with(v: serde_json::Value, max_nodes: u32) -> Result<Prepared, Problem> {
        let (world, kits) = (world(), Default::default());
        let save = SaveFacts {
            tick: 1,
            scene: Some("main"),
            world: &world,
            kits: &kits,
        };
        check(
            from_value::<SaveSection>(&v, "kits.world.nav")?,
            &save,
            max_nodes,
        )
    }

    fn parse(v: serde_json::Value) -> Result<Prepared, Problem> {
        parse_with(v, crate::kits::nav::MAX_NODES)
    }

    #[test]
    fn each_key_of_the_section_is_checked() {
        let ok = json!({"agents": [{"id": "a", "goal": {"x": 1, "z": 2},
            "path": [{"x": 0, "z": 1}, {"x": 1, "z": 2}], "waiting": {"x": 0, "z": 0}}],
            "turn": "a", "changed": [{"x": 1, "z": 1}, {"x": 0, "z": 2}], "moved": true});
        assert!(parse(ok).is_ok());
        for (v, path) in [
            (
                json!({"agents": [{"id": "a", "goal": {"x": 2, "z": 0},
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
            // An agent that is no entity of the save.
            (
                json!({"agents": [{"id": "ghost", "goal": {"x": 1, "z": 2}, "path": []}]}),
                "agents[0].id",
            ),
            // The turn of an agent the section does not hold.
            (
                json!({"agents": [{"id": "a", "goal": {"x": 1, "z": 2}, "path": []}],
                    "turn": "b"}),
                "turn",
            ),
            // Changed chunks out of row order (z, then x), or twice.
            (
                json!({"agents": [], "changed": [{"x": 0, "z": 2}, {"x": 1, "z": 1}]}),
                "changed[1]",
            ),
            (
                json!({"agents": [], "changed": [{"x": 1, "z": 1}, {"x": 1, "z": 1}]}),
                "changed[1]",
            ),
            // More nodes spent by a tick's `path` inputs than maxNodes allows.
            (json!({"agents": [], "inputNodes": 262145}), "inputNodes"),
            (
                json!({"agents": [], "inputNodes": -1}),
                "kits.world.nav.inputNodes",
            ),
            // A path that does not end at the goal.
            (
                json!({"agents": [{"id": "a", "goal": {"x": 5, "z": 5},
                    "path": [{"x": 0, "z": 1}, {"x": 1, "z": 2}]}]}),
                "agents[0].path[1]",
            ),
        ] {
            let err = match parse(v) {
                Err(e) => e,
                Ok(_) => panic!("{path} accepted"),
            };
            assert!(err.path.ends_with(path), "{path}: {err}");
        }
    }

    #[test]
    fn a_held_path_is_at_most_what_a_search_of_max_nodes_finds_without_its_start() {
        // A path of k cells after the start: k + 1 nodes expanded (the goal's pop counts).
        let line = |k: i64| {
            let path: Vec<_> = (1..=k).map(|x| json!({"x": x, "z": 0})).collect();
            json!({"agents": [{"id": "a", "goal": {"x": k, "z": 0}, "path": path}]})
        };
        assert!(parse_with(line(3), 4).is_ok());
        let err = parse_with(line(4), 4).err().expect("4 cells need 5 nodes");
        assert_eq!(err.path, "agents[0].path");
        assert!(
            err.message
                .contains("expected at most 3 cells (a path found within maxNodes 4"),
            "{err}"
        );
        assert_eq!(max_held_path(crate::kits::nav::MAX_NODES), 262_143);
        assert_eq!(max_held_path(65_536), 65_535);
    }

    #[test]
    fn the_nodes_a_ticks_path_inputs_spent_are_at_most_this_games_max_nodes() {
        let spent = |n: u64| json!({"agents": [], "inputNodes": n});
        assert_eq!(parse_with(spent(20), 20).unwrap().input_nodes, 20);
        let err = parse_with(spent(21), 20)
            .err()
            .expect("over this game's maxNodes");
        assert_eq!(err.path, "inputNodes");
        assert!(err.message.contains("this game's maxNodes"), "{err}");
        assert!(parse(spent(262_144)).is_ok());
    }
}
