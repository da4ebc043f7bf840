//! The kit's state, shared between the kit (which ticks the agents) and the service handle:
//! the rules, the cell grid, the terrain it reads, and each agent's held path and wait.
//!
//! **Agents** (docs/reference/nav.md#agents). Each tick, the entities tagged `agent` whose
//! `data.goal` is `{x, z}` (two finite numbers, metres) are visited in entity (spawn) order,
//! starting at the one whose turn it is (below). For each, with `here` the cell of its position and
//! `goal` the cell of its goal:
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
//!    starts or the chunk it waits for changes, none while it goes on) and retries each tick; `none`, or `budget` with the full
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

use super::events::{AGENT_ARRIVED, AGENT_STUCK, AGENT_WAITING};
use super::search::{self, Answer, Cell, CellGrid, Ground, Rules};
use super::service::AGENT_TAG;

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

/// The cells an agent still has to step into, next first, and how many of them lie in each
/// chunk (counted when first asked), so that a tick asks whether a path crosses a changed
/// chunk in proportion to the chunks it crosses, not to its length.
#[derive(Debug, Clone, Default)]
pub(super) struct Held {
    cells: VecDeque<Cell>,
    /// Cells per chunk, with the cells per chunk side they were counted with; `None` until
    /// asked (a restored path, or one just found).
    chunks: Option<(u32, BTreeMap<ChunkPos, u32>)>,
}

impl From<Vec<Cell>> for Held {
    fn from(cells: Vec<Cell>) -> Self {
        Held {
            cells: cells.into(),
            chunks: None,
        }
    }
}

impl Held {
    pub(super) fn front(&self) -> Option<&Cell> {
        self.cells.front()
    }

    pub(super) fn len(&self) -> usize {
        self.cells.len()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Cell> + '_ {
        self.cells.iter()
    }

    pub(super) fn clear(&mut self) {
        self.cells.clear();
        self.chunks = None;
    }

    /// Holds `cells` instead.
    fn set(&mut self, cells: impl IntoIterator<Item = Cell>) {
        self.cells.clear();
        self.cells.extend(cells);
        self.chunks = None;
    }

    /// Drops the next cell (stepped into).
    fn pop_front(&mut self) -> Option<Cell> {
        let c = self.cells.pop_front()?;
        if let Some((n, counts)) = &mut self.chunks {
            let chunk = CellGrid::chunk_of_cells(*n, c);
            if let Some(k) = counts.get_mut(&chunk) {
                *k -= 1;
                if *k == 0 {
                    counts.remove(&chunk);
                }
            }
        }
        Some(c)
    }

    /// Whether a cell of the path lies in one of `changed` (chunks of `n` cells a side).
    fn crosses(&mut self, changed: &BTreeSet<ChunkPos>, n: u32) -> bool {
        if changed.is_empty() || self.cells.is_empty() {
            return false;
        }
        if self.chunks.as_ref().is_none_or(|(m, _)| *m != n) {
            let mut counts = BTreeMap::new();
            for c in &self.cells {
                *counts.entry(CellGrid::chunk_of_cells(n, *c)).or_insert(0) += 1;
            }
            self.chunks = Some((n, counts));
        }
        let (_, counts) = self.chunks.as_ref().expect("counted above");
        if changed.len() <= counts.len() {
            changed.iter().any(|c| counts.contains_key(c))
        } else {
            counts.keys().any(|c| changed.contains(c))
        }
    }
}

/// One agent's state.
#[derive(Debug, Clone)]
pub(super) struct Agent {
    /// The goal cell its state is for.
    pub(super) goal: Cell,
    /// The cells still to step into, next first.
    pub(super) path: Held,
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
            path: Held::default(),
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
    /// Nodes the `path` inputs stamped with the coming tick expanded so far: they share
    /// `maxNodes` (reset when the tick runs).
    pub(super) input_nodes: u64,
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

/// The goal of an agent's `data`, if it is `{x, z}` of numbers (a JSON number is always
/// finite: `serde_json` holds no NaN or infinity).
pub(super) fn goal_of(data: Option<&serde_json::Map<String, Value>>) -> Option<Position> {
    let goal = data?.get("goal")?.as_object()?;
    Some(Position::new(
        goal.get("x")?.as_f64()?,
        goal.get("z")?.as_f64()?,
    ))
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
                    agent.path.crosses(&changed, grid.cells)
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
                        agent.path.set(p.into_iter().skip(1));
                        agent.waiting = None;
                        agent.stuck = None;
                    }
                    Answer::Indeterminate(c) => {
                        agent.stuck = None;
                        if agent.waiting != Some(c) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Entity, Tags};
    use crate::kits::nav::search::tests::{rock_blocked, Drawn};
    use crate::kits::terrain::{BuiltCallback, EditRefused, Snapshot, SnapshotError};

    /// Terrain drawn by hand, as the service other kits see.
    struct Fake(Drawn);

    impl TerrainService for Fake {
        fn height_at(&self, _: Position) -> Option<u16> {
            None
        }
        fn chunk(&self, c: ChunkPos) -> Option<Arc<ChunkData>> {
            Ground::chunk(&self.0, c)
        }
        fn is_built(&self, c: ChunkPos) -> bool {
            Ground::chunk(&self.0, c).is_some()
        }
        fn on_built(&self, _: BuiltCallback) {}
        fn cells_per_chunk(&self) -> u32 {
            self.0.n
        }
        fn generating(&self) -> usize {
            0
        }
        fn edit(&self, _: Position, _: u16, _: Option<u8>) -> Result<(), EditRefused> {
            Err(EditRefused::NotBuilt)
        }
        fn is_modified(&self, _: ChunkPos) -> bool {
            false
        }
        fn version(&self, c: ChunkPos) -> Option<u64> {
            self.is_built(c).then_some(1)
        }
        fn snapshot(&self, _: ChunkPos, _: u32) -> Result<Snapshot, SnapshotError> {
            Err(SnapshotError::NotComplete) // nav never takes one
        }
    }

    #[test]
    fn a_held_path_crosses_the_changed_chunks_its_cells_still_lie_in() {
        // Chunks of 4 cells: the path steps east from (1, 0) through chunks (0, 0), (1, 0)
        // and (2, 0).
        let mut held = Held::from((1..10).map(|x| Cell::new(x, 0)).collect::<Vec<_>>());
        let set = |c: &[(i64, i64)]| -> BTreeSet<ChunkPos> {
            c.iter().map(|&(x, z)| ChunkPos::new(x, z)).collect()
        };
        assert!(!held.crosses(&set(&[]), 4));
        assert!(!held.crosses(&set(&[(0, 1), (3, 0), (-1, 0)]), 4));
        assert!(held.crosses(&set(&[(2, 0)]), 4));
        assert!(held.crosses(&set(&[(0, 0)]), 4));
        // One step into chunk (0, 0)'s three cells: two are still ahead, so it still matters.
        held.pop_front();
        assert!(held.crosses(&set(&[(0, 0)]), 4));
        // Stepped past chunk (0, 0): its change no longer matters; (1, 0)'s still does.
        for _ in 0..2 {
            held.pop_front();
        }
        assert_eq!(held.front(), Some(&Cell::new(4, 0)));
        assert!(!held.crosses(&set(&[(0, 0)]), 4));
        assert!(held.crosses(&set(&[(1, 0)]), 4));
        // Many changed chunks, few on the path (the counts are walked instead).
        let many: BTreeSet<ChunkPos> = (3..100).map(|x| ChunkPos::new(x, 0)).collect();
        assert!(!held.crosses(&many, 4));
        let mut many = many;
        many.insert(ChunkPos::new(2, 0));
        assert!(held.crosses(&many, 4));
        // Counted again for chunks of another size: 2 cells a side, the path now (4..10, 0)
        // in chunks (2, 0) to (4, 0).
        assert!(held.crosses(&set(&[(4, 0)]), 2));
        assert!(!held.crosses(&set(&[(1, 0)]), 2));
        held.clear();
        assert!(!held.crosses(&many, 4));
    }

    fn state(ground: Drawn, max_nodes: u32) -> State {
        State {
            rules: rock_blocked(),
            max_nodes,
            grid: CellGrid {
                chunk_size: f64::from(ground.n),
                cells: ground.n,
            },
            terrain: Some(Rc::new(Fake(ground))),
            agents: BTreeMap::new(),
            turn: None,
            changed: BTreeSet::new(),
            moved: false,
            nodes: 0,
            input_nodes: 0,
        }
    }

    fn agent(world: &mut World, id: &str, at: (f64, f64), goal: (f64, f64)) {
        let mut tags = Tags::new();
        tags.insert(AGENT_TAG);
        let mut data = serde_json::Map::new();
        data.insert("goal".into(), json!({"x": goal.0, "z": goal.1}));
        world
            .spawn(Entity {
                id: EntityId::new(id),
                tags,
                position: Position::new(at.0, at.1),
                rides: None,
                data: Some(Box::new(data)),
            })
            .unwrap();
    }

    fn names(events: &mut EventBus) -> Vec<String> {
        while events.deliver_next().is_some() {}
        events
            .take_log()
            .into_iter()
            .map(|e| format!("{} {}", e.event, e.data.to_value()))
            .collect()
    }

    #[test]
    fn the_agent_cut_off_by_the_ticks_nodes_plans_first_next_tick() {
        // Agent `a` (first in entity order) sits in a pocket of four cells whose only way out
        // is chunk (1, 0), not built: each tick it retries, expanding 4 nodes, and waits. Agent
        // `b` needs a 16-node search down the corridor of row 5. With 18 nodes a tick, `b` is
        // cut off on tick 1 after `a`'s 4; on tick 2 it plans first and walks (and `a` is cut
        // off then: it goes first on tick 3). Planning from the first agent every tick, `b`
        // would never get its 16 nodes.
        let ground = Drawn::world(
            4,
            &[
                "....????????????",
                "####????????????",
                "####????????????",
                "####????????????",
                "################",
                "................",
                "################",
                "################",
            ],
        );
        let mut st = state(ground, 18);
        let mut world = World::new();
        agent(&mut world, "a", (0.5, 0.5), (15.5, 5.5));
        agent(&mut world, "b", (0.5, 5.5), (15.5, 5.5));
        let mut events = EventBus::default();
        st.tick(&mut world, &mut events);
        assert_eq!(
            names(&mut events),
            [r#"world.agent.waiting {"id":"a","x":1,"z":0}"#]
        );
        assert_eq!(st.turn, Some(EntityId::new("b")));
        assert_eq!(
            st.nodes,
            4 + 14,
            "a's 4, then b's search cut at the 14 left"
        );
        let b = |w: &World| w.get(&EntityId::new("b")).unwrap().position;
        assert_eq!(b(&world), Position::new(0.5, 5.5), "b waits its turn");
        st.tick(&mut world, &mut events);
        assert_eq!(
            st.agents[&EntityId::new("b")].path.len(),
            14,
            "b planned, stepped"
        );
        assert_eq!(b(&world), Position::new(1.5, 5.5));
        assert!(
            names(&mut events).is_empty(),
            "a's wait goes on without a new event"
        );
        for _ in 0..14 {
            st.tick(&mut world, &mut events);
        }
        assert_eq!(b(&world), Position::new(15.5, 5.5));
        assert_eq!(names(&mut events), [r#"world.agent.arrived {"id":"b"}"#]);
        assert!(st.nodes <= 18, "never more than maxNodes a tick");
    }

    #[test]
    fn an_agent_never_steps_into_a_chunk_not_built() {
        // b holds a path into chunk (1, 0); the chunk is released (not built) under it.
        let ground = Drawn::world(4, &["........", "........", "........", "........"]);
        let mut st = state(ground, 1000);
        let mut world = World::new();
        agent(&mut world, "b", (2.5, 0.5), (6.5, 0.5));
        let mut events = EventBus::default();
        st.tick(&mut world, &mut events);
        assert_eq!(
            world.get(&EntityId::new("b")).unwrap().position,
            Position::new(3.5, 0.5)
        );
        let mut drawn = Drawn::world(4, &["........", "........", "........", "........"]);
        drawn.unbuilt.insert(ChunkPos::new(1, 0));
        st.terrain = Some(Rc::new(Fake(drawn)));
        st.changed.insert(ChunkPos::new(1, 0));
        st.moved = true;
        for _ in 0..3 {
            st.tick(&mut world, &mut events);
            assert_eq!(
                world.get(&EntityId::new("b")).unwrap().position,
                Position::new(3.5, 0.5),
                "it waits at the edge"
            );
        }
        assert_eq!(
            names(&mut events),
            [r#"world.agent.waiting {"id":"b","x":1,"z":0}"#],
            "one event per wait"
        );
    }

    #[test]
    fn an_agent_checks_its_next_step_before_taking_it() {
        // The cell ahead turns to rock with no event yet (an edit this tick): the agent does
        // not step onto it but re-plans round it.
        let rows = ["........", "........", "####....", "####...."];
        let mut st = state(Drawn::world(4, &rows), 1000);
        let mut world = World::new();
        agent(&mut world, "b", (2.5, 0.5), (6.5, 0.5));
        let mut events = EventBus::default();
        st.tick(&mut world, &mut events);
        let at = |w: &World| w.get(&EntityId::new("b")).unwrap().position;
        assert_eq!(at(&world), Position::new(3.5, 0.5));
        let walled = ["....#...", "........", "####....", "####...."];
        st.terrain = Some(Rc::new(Fake(Drawn::world(4, &walled))));
        st.tick(&mut world, &mut events);
        assert_eq!(at(&world), Position::new(3.5, 1.5), "round the rock");
    }

    #[test]
    fn a_stuck_agent_says_so_once_and_retries_only_after_terrain_moved() {
        // The goal (6, 0) lies behind a rock wall down x = 4, every chunk built: none.
        let rows = ["....#...", "....#...", "....#...", "....#..."];
        let mut st = state(Drawn::world(4, &rows), 1000);
        let mut world = World::new();
        agent(&mut world, "s", (0.5, 0.5), (6.5, 0.5));
        let mut events = EventBus::default();
        st.tick(&mut world, &mut events);
        assert_eq!(
            names(&mut events),
            [r#"world.agent.stuck {"id":"s","status":"none"}"#]
        );
        assert_eq!(st.nodes, 16, "the 16 cells west of the wall");
        st.tick(&mut world, &mut events);
        assert_eq!(st.nodes, 0, "a proven answer is not searched again");
        st.moved = true; // some chunk was built, changed or released
        st.tick(&mut world, &mut events);
        assert_eq!(st.nodes, 16, "searched again");
        assert!(
            names(&mut events).is_empty(),
            "still stuck: no second event"
        );
        // Out of one query's budget: stuck with "budget".
        let mut st = state(Drawn::world(4, &rows), 5);
        st.tick(&mut world, &mut events);
        assert_eq!(
            names(&mut events),
            [r#"world.agent.stuck {"id":"s","status":"budget"}"#]
        );
    }
}
