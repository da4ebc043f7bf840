//! The kit's state, shared between the kit (which ticks the agents) and the service handle:
//! the rules, the cell grid, the terrain it reads, and each agent's held path and wait.
//!
//! **Agents** (SPEC §18). Each tick, the entities tagged `agent` whose `data.goal` is
//! `{x, z}` (two finite numbers, metres) are visited in entity (spawn) order, starting at the
//! one whose turn it is (below). For each, with `here` the cell of its position and `goal` the
//! cell of its goal:
//! 1. A new goal (another cell than the one it held) drops its path, wait and stuck mark.
//! 2. `here == goal`: `world.agent.arrived {id}` once per goal; nothing else.
//! 3. It re-plans when it holds no path, when a cell of its path lies in a chunk that changed
//!    since the last tick (`world.terrain.changed`, or released: `world.chunk.unloaded`), or
//!    when its next step is no longer an edge of the graph (an edit this tick, not yet
//!    reported). An agent marked *stuck* holds no path and re-plans only on a tick after some
//!    chunk was built, changed or released (a proven answer does not change otherwise).
//! 4. A plan is one search of at most `min(maxNodes, nodes left this tick)` nodes; the tick
//!    starts with `maxNodes` nodes for all its agents. `found`: the path is held (its cells
//!    after `here`); `indeterminate`: it waits (`world.agent.waiting {id, x, z}` when a wait
//!    starts, none while it goes on) and retries each tick; `none`, or `budget` with the full
//!    `maxNodes`: `world.agent.stuck {id, status}` and it is marked stuck. `budget` because the
//!    tick's nodes ran short: it was cut off — it is the *turn* agent, and no agent plans again
//!    this tick (the rest wait their turn). The next tick starts at the turn agent (then the
//!    later ones in entity order, then the earlier ones), so the agent cut off gets the full
//!    `maxNodes` first and every agent is planned in turn. A tick with no cut clears the turn.
//! 5. It steps: when it holds a path whose next cell is an edge from `here` (both chunks built),
//!    it moves to that cell's centre (`y` 0) and the cell is dropped from the path; reaching
//!    the goal's cell emits `world.agent.arrived {id}`. It never moves into a chunk that is not
//!    built (such a step is no edge).
//!
//! An agent whose `goal` is missing or not two finite numbers, or that lost its tag, is not
//! planned and its state is dropped.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::grid::{ChunkPos, Position};
use crate::host::{EntityId, EventBus, World};
use crate::kits::terrain::{ChunkData, TerrainService};

use super::search::{self, Answer, Cell, CellGrid, Ground, Rules};
use super::service::{AGENT_ARRIVED, AGENT_STUCK, AGENT_TAG, AGENT_WAITING};

/// Why an agent stopped planning until terrain moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stuck {
    /// Proven unreachable.
    None,
    /// More than `maxNodes` nodes away.
    Budget,
}

impl Stuck {
    pub(super) fn name(self) -> &'static str {
        match self {
            Stuck::None => "none",
            Stuck::Budget => "budget",
        }
    }
}

/// One agent's state.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Agent {
    /// The goal cell its state is for.
    pub(super) goal: Cell,
    /// The cells still to step into, next first.
    pub(super) path: VecDeque<Cell>,
    /// The chunk its wait began on, while it waits on `indeterminate`.
    pub(super) waiting: Option<ChunkPos>,
    pub(super) stuck: Option<Stuck>,
    /// Whether `world.agent.arrived` was emitted for this goal.
    pub(super) arrived: bool,
}

impl Agent {
    fn new(goal: Cell) -> Self {
        Agent {
            goal,
            path: VecDeque::new(),
            waiting: None,
            stuck: None,
            arrived: false,
        }
    }
}

pub(super) struct State {
    pub(super) rules: Rules,
    pub(super) max_nodes: u32,
    /// Known once the kit started (the terrain's cells, the streaming chunk size).
    pub(super) grid: CellGrid,
    pub(super) terrain: Option<Rc<dyn TerrainService>>,
    /// Agents by id (their visiting order is the world's entity order).
    pub(super) agents: BTreeMap<EntityId, Agent>,
    /// The agent cut off by the tick's node budget, first to plan next tick.
    pub(super) turn: Option<EntityId>,
    /// Chunks changed or released since the last agents' tick.
    pub(super) changed: BTreeSet<ChunkPos>,
    /// Whether any chunk was built, changed or released since the last agents' tick.
    pub(super) moved: bool,
    /// Nodes the agents expanded last tick (the variable `world.nav.nodes`).
    pub(super) nodes: u64,
}

/// The built terrain as the search reads it.
pub(super) struct TerrainGround<'a>(pub(super) &'a dyn TerrainService);

impl Ground for TerrainGround<'_> {
    fn cells(&self) -> u32 {
        self.0.cells_per_chunk()
    }
    fn chunk(&self, chunk: ChunkPos) -> Option<Arc<ChunkData>> {
        self.0.chunk(chunk)
    }
}

/// The goal of an agent's `data`, if it is `{x, z}` of finite numbers.
pub(super) fn goal_of(data: Option<&serde_json::Map<String, Value>>) -> Option<Position> {
    let goal = data?.get("goal")?.as_object()?;
    let (x, z) = (goal.get("x")?.as_f64()?, goal.get("z")?.as_f64()?);
    (x.is_finite() && z.is_finite()).then(|| Position::new(x, z))
}

impl State {
    /// Runs the agents' tick (see the module docs) on `world`, emitting on `events`.
    pub(super) fn tick(&mut self, world: &mut World, events: &mut EventBus) {
        let Some(terrain) = self.terrain.clone() else {
            return;
        };
        let ground = TerrainGround(&*terrain);
        let grid = self.grid;
        let changed = std::mem::take(&mut self.changed);
        let moved = std::mem::take(&mut self.moved);
        // Agents in entity order, with their cell and goal.
        let mut list: Vec<(EntityId, Cell, Option<Cell>)> = Vec::new();
        for e in world.iter().filter(|e| e.tags.contains(AGENT_TAG)) {
            let goal = goal_of(e.data.as_deref()).map(|g| grid.cell_of(g));
            list.push((e.id.clone(), grid.cell_of(e.position), goal));
        }
        let keep: BTreeSet<&EntityId> = list
            .iter()
            .filter(|(_, _, g)| g.is_some())
            .map(|(id, _, _)| id)
            .collect();
        self.agents.retain(|id, _| keep.contains(id));
        let first = self
            .turn
            .take()
            .and_then(|t| list.iter().position(|(id, _, _)| *id == t))
            .unwrap_or(0);
        let max = u64::from(self.max_nodes);
        let mut left = max;
        let mut cut = false;
        self.nodes = 0;
        for k in 0..list.len() {
            let (id, here, goal) = &list[(first + k) % list.len()];
            let Some(goal) = *goal else { continue };
            let agent = self
                .agents
                .entry(id.clone())
                .or_insert_with(|| Agent::new(goal));
            if agent.goal != goal {
                *agent = Agent::new(goal);
            }
            if *here == goal {
                agent.path.clear();
                if !agent.arrived {
                    agent.arrived = true;
                    events.emit(AGENT_ARRIVED, json!({ "id": id.as_str() }));
                }
                continue;
            }
            agent.arrived = false;
            let stale = match agent.path.front() {
                None => true,
                Some(&next) => {
                    agent
                        .path
                        .iter()
                        .any(|c| changed.contains(&grid.chunk_of(*c)))
                        || !search::is_edge(&ground, &self.rules, *here, next)
                }
            };
            let retry = agent.stuck.is_none() || moved;
            if stale && retry && !cut {
                let limit = left.min(max);
                let outcome = search::search_unmetered(&ground, &self.rules, *here, goal, limit);
                left -= outcome.nodes;
                self.nodes += outcome.nodes;
                agent.path.clear();
                match outcome.answer {
                    Answer::Found(p) => {
                        agent.path.extend(p.into_iter().skip(1));
                        agent.waiting = None;
                        agent.stuck = None;
                    }
                    Answer::Indeterminate(c) => {
                        agent.stuck = None;
                        if agent.waiting.is_none() {
                            events.emit(
                                AGENT_WAITING,
                                json!({ "id": id.as_str(), "x": c.x, "z": c.z }),
                            );
                            agent.waiting = Some(c);
                        }
                    }
                    Answer::Budget if limit < max => {
                        cut = true;
                        self.turn = Some(id.clone());
                    }
                    Answer::None | Answer::Budget => {
                        let why = if outcome.answer == Answer::None {
                            Stuck::None
                        } else {
                            Stuck::Budget
                        };
                        agent.waiting = None;
                        if agent.stuck != Some(why) {
                            events.emit(
                                AGENT_STUCK,
                                json!({ "id": id.as_str(), "status": why.name() }),
                            );
                        }
                        agent.stuck = Some(why);
                    }
                }
            } else if stale {
                agent.path.clear(); // waits its turn (or for terrain to move)
            }
            // Step.
            let Some(&next) = agent.path.front() else {
                continue;
            };
            if !search::is_edge(&ground, &self.rules, *here, next) {
                agent.path.clear();
                continue;
            }
            agent.path.pop_front();
            world
                .move_to(id, grid.centre(next))
                .expect("the agent was listed from the world");
            if next == goal {
                agent.arrived = true;
                agent.path.clear();
                events.emit(AGENT_ARRIVED, json!({ "id": id.as_str() }));
            }
        }
    }
}
