//! The `world.nav` service: what mods, the game and other kits may ask of the kit (the names of
//! what it emits are in `events.rs`). Reach it through the service registry as `Rc<dyn NavService>`.

use serde_json::{json, Value};

use crate::grid::{ChunkPos, Position};
use crate::host::EntityId;

use super::search::{Answer, Cell, Outcome, Stopped};

/// The tag that makes an entity an agent.
pub const AGENT_TAG: &str = "agent";

/// One agent's state as the kit holds it after a tick (what its save section holds; the
/// replay viewer draws it).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentView {
    /// The entity.
    pub id: EntityId,
    /// The goal cell its state is for.
    pub goal: Cell,
    /// The cells still to step into, next first (empty while it waits, is stuck or arrived).
    pub path: Vec<Cell>,
    /// The chunk not built its wait is on, while it waits on `indeterminate`.
    pub waiting: Option<ChunkPos>,
    /// `"none"` or `"budget"` while it is stuck.
    pub stuck: Option<&'static str>,
    /// Whether it arrived at this goal.
    pub arrived: bool,
}

/// What `world.nav` offers.
pub trait NavService {
    /// Searches a path from the cell of `from` to the cell of `to` over the built terrain,
    /// expanding at most `maxNodes` nodes (docs/reference/nav.md#queries).
    fn path(&self, from: Position, to: Position) -> Outcome;
    /// [`NavService::path`], asking `meter` once per node expanded; it stops the search when it
    /// answers false (a mod's budget is spent).
    fn path_metered(
        &self,
        from: Position,
        to: Position,
        meter: &mut dyn FnMut() -> bool,
    ) -> Result<Outcome, Stopped>;
    /// [`NavService::path`] as the `path` input asks it: the `path` inputs stamped with one
    /// tick share `maxNodes` nodes in all, so a query searches with what the tick's earlier
    /// ones left (`budget` with 0 nodes once they spent it all; an answer found before any
    /// node, such as an unbuilt start, is given as ever). The next tick starts afresh.
    fn path_input(&self, from: Position, to: Position) -> Outcome;
    /// The cell containing `pos` (the one `world.terrain`'s `heightAt` reads).
    fn cell_of(&self, pos: Position) -> Cell;
    /// The centre of `cell`, in metres.
    fn centre(&self, cell: Cell) -> Position;
    /// Nodes one query may expand.
    fn max_nodes(&self) -> u32;
    /// Every agent's state, in id order.
    fn agents(&self) -> Vec<AgentView>;
    /// Cells per chunk side (the terrain's).
    fn cells_per_chunk(&self) -> u32;
}

/// An answer as events carry it: `{status, nodes}` plus `path` or `x`, `z`.
pub fn answer_data(outcome: &Outcome) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("status".into(), json!(outcome.answer.status()));
    m.insert("nodes".into(), json!(outcome.nodes));
    match &outcome.answer {
        Answer::Found(path) => {
            let cells: Vec<Value> = path.iter().map(|c| json!({"x": c.x, "z": c.z})).collect();
            m.insert("path".into(), Value::Array(cells));
        }
        Answer::Indeterminate(c) => {
            m.insert("x".into(), json!(c.x));
            m.insert("z".into(), json!(c.z));
        }
        Answer::None | Answer::Budget => {}
    }
    m
}
