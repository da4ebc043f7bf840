//! `world.nav` (docs/reference/nav.md): paths over what is built, and `indeterminate` when the
//! answer needs a chunk that is not built yet. Queries come from Rust ([`NavService::path`]), Lua
//! (`nav.path`) and the input `path {id, from, to}`; agents (entities tagged `agent` with
//! `data.goal`) walk one cell a tick, waiting while their route is not built.
//!
//! - [`config`]: the settings; [`service`]: the face other kits see; [`events`]: the names of
//!   the events it emits, their payloads, and reading them back ([`NavEvent`]);
//! - [`search`]: the pure cell graph and A* (no host);
//! - `state.rs`: the agents' tick; `save.rs`: the save section;
//! - this file: the kit, which hears the terrain's changes (through [`TerrainEvent`]) and ticks
//!   the agents.

pub mod config;
pub mod events;
#[cfg(feature = "lua")]
mod lua;
mod save;
pub mod search;
pub mod service;
mod state;
mod view;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::grid::Position;
use crate::host::{
    Ctx, Event, Install, Kit, KitError, KitManifest, KitSpec, PreparedSection, Problem, SceneDef,
    Services,
};
use crate::json::from_value;
use crate::kits::streaming::{StreamingService, STREAMING};
use crate::kits::terrain::{TerrainEvent, TerrainService, TERRAIN, TERRAIN_BUILT, TERRAIN_CHANGED};

pub use config::{MaxNodes, MaxStep, NavConfig, MAX_NODES};
pub use events::{path_event, NavEvent, AGENT_ARRIVED, AGENT_STUCK, AGENT_WAITING, NAV_PATH};
pub use save::SaveSection;
pub use search::{Answer, Cell, CellGrid, Outcome, Rules, Stopped, DIAGONAL_COST};
pub use service::{answer_data, AgentView, NavService, AGENT_TAG};
use state::{State, TerrainGround};

/// The kit and service id.
pub const NAV: &str = "world.nav";
/// Variable: nodes the agents expanded on the last tick.
pub const VAR_NODES: &str = "world.nav.nodes";

/// The kit's manifest, read from `kit.json` beside this file.
pub fn manifest() -> KitManifest {
    serde_json::from_str(include_str!("kit.json")).expect("kit.json is a valid manifest")
}

/// The kit's entry of the catalog: its manifest, factory, schemas, save check, Lua table and viewer layer.
pub fn entry() -> crate::host::CatalogEntry {
    let entry = crate::host::CatalogEntry::new(manifest(), Box::new(NavKit::from_spec))
        .config_schema("nav-config.schema.json", || {
            schemars::schema_for!(NavConfig)
        })
        .save_schema("nav-save.schema.json", || {
            schemars::schema_for!(SaveSection)
        })
        .save_check(check_save_section)
        .view(view::LAYER);
    #[cfg(feature = "lua")]
    let entry = entry.lua(lua::TABLE);
    entry
}

/// Checks a `world.nav` save section on its own (the catalog's [`crate::host::SaveCheck`]):
/// [`NavKit`]'s `prepare_load` check, with the largest `maxNodes` a game may set (a load checks
/// against its own).
pub fn check_save_section(
    section: &serde_json::Value,
    save: &crate::host::SaveFacts<'_>,
) -> Result<(), Problem> {
    let path = format!("kits.{NAV}");
    let parsed: SaveSection = from_value(section, &path)?;
    save::check(parsed, save, MAX_NODES)
        .map(drop)
        .map_err(|p| p.under(&path))
}

/// The `world.nav` kit.
pub struct NavKit {
    state: Rc<RefCell<State>>,
    published: Option<u64>,
}

impl NavKit {
    /// The catalog factory.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let config: NavConfig = match spec.config {
            None => NavConfig::default(),
            Some(v) => from_value(v, &spec.config_path).map_err(|p| vec![p])?,
        };
        Ok(Box::new(NavKit::new(&config)))
    }

    /// A kit with `config`.
    pub fn new(config: &NavConfig) -> Self {
        NavKit {
            state: Rc::new(RefCell::new(State {
                rules: config.rules(),
                max_nodes: config.max_nodes.get(),
                grid: CellGrid {
                    chunk_size: 32.0,
                    cells: 32,
                },
                terrain: None,
                agents: BTreeMap::new(),
                turn: None,
                changed: Default::default(),
                moved: false,
                nodes: 0,
                input_nodes: 0,
            })),
            published: None,
        }
    }
}

impl Kit for NavKit {
    fn id(&self) -> &str {
        NAV
    }

    fn install(&mut self, host: &mut Install<'_>) {
        let handle: Rc<dyn NavService> = Rc::new(Handle(self.state.clone()));
        host.services.provide(NAV, handle);
        host.variables.set(VAR_NODES, 0u64);
    }

    fn start(&mut self, services: &Services) -> Result<(), KitError> {
        let missing = |service: &str| KitError::MissingService {
            kit: NAV.into(),
            service: service.into(),
        };
        let terrain = services
            .get::<dyn TerrainService>(TERRAIN)
            .ok_or_else(|| missing(TERRAIN))?;
        let streaming = services
            .get::<dyn StreamingService>(STREAMING)
            .ok_or_else(|| missing(STREAMING))?;
        let mut st = self.state.borrow_mut();
        st.grid = CellGrid {
            chunk_size: streaming.chunk_size(),
            cells: terrain.cells_per_chunk(),
        };
        st.terrain = Some(terrain);
        Ok(())
    }

    fn on_event(&mut self, event: &Event, _ctx: &mut Ctx<'_>) {
        let mut st = self.state.borrow_mut();
        // Columns, with `vertical` on (docs/reference/nav.md#columns): a section's release
        // changes no path while its column stays loaded.
        if let Some((chunk, loaded)) = crate::kits::terrain::column_change(event) {
            if !loaded {
                st.changed.insert(chunk);
                st.moved = true;
            }
            return;
        }
        if let Some((_, at)) = TerrainEvent::changed(event) {
            // A changed LOD block's `(x, z)` is taken as a chunk too, as the kit always did
            // (changing that would change which agents plan again, so the nodes they count).
            st.changed.insert(at);
            st.moved = true;
        } else if event.event == TERRAIN_BUILT || event.event == TERRAIN_CHANGED {
            st.moved = true;
        }
    }

    fn on_entities_changed(&mut self, changed: &[crate::host::EntityId], ctx: &mut Ctx<'_>) {
        // An agent despawned leaves with its state (and the turn, if it had it): one spawned
        // again under its id plans afresh, and a save holds no agent that is no entity.
        let mut st = self.state.borrow_mut();
        if st.agents.is_empty() {
            return;
        }
        for id in changed {
            if ctx.world.get(id).is_none()
                && st.agents.remove(id).is_some()
                && st.turn.as_ref() == Some(id)
            {
                st.turn = None;
            }
        }
    }

    fn on_leave(&mut self, _ctx: &mut Ctx<'_>) {
        // The chunks' releases follow as events; agents re-plan from them.
    }

    fn on_enter(&mut self, _scene: &SceneDef, _ctx: &mut Ctx<'_>) {}

    fn tick(&mut self, ctx: &mut Ctx<'_>) {
        let mut st = self.state.borrow_mut();
        st.tick(ctx.world, ctx.events);
        st.input_nodes = 0; // the next tick's `path` inputs start afresh
        let nodes = st.nodes;
        drop(st);
        if self.published != Some(nodes) {
            ctx.variables.set(VAR_NODES, nodes);
            self.published = Some(nodes);
        }
    }

    fn save_version(&self) -> u32 {
        crate::host::save::ROUND3_SAVE_VERSION
    }

    fn save(&self) -> Option<serde_json::Value> {
        Some(serde_json::to_value(self.state.borrow().save_section()).expect("plain data"))
    }

    fn prepare_load(
        &self,
        section: Option<&serde_json::Value>,
        _scene: Option<&SceneDef>,
        save: &crate::host::SaveFacts<'_>,
    ) -> Result<Option<PreparedSection>, Problem> {
        let path = format!("kits.{NAV}");
        let Some(section) = section else {
            return Ok(None); // an older save: no agent state
        };
        // check_save_section's check, against this game's maxNodes.
        let parsed: SaveSection = from_value(section, &path)?;
        let max_nodes = self.state.borrow().max_nodes;
        let prepared = save::check(parsed, save, max_nodes).map_err(|p| p.under(&path))?;
        Ok(Some(Box::new(prepared)))
    }

    fn commit_load(&mut self, prepared: Option<PreparedSection>, _ctx: &mut Ctx<'_>) {
        let p = prepared.and_then(|p| p.downcast::<save::Prepared>().ok());
        self.state.borrow_mut().restore(p.map(|p| *p));
        self.published = None;
    }
}

/// The service handle registered as `world.nav`.
struct Handle(Rc<RefCell<State>>);

impl NavService for Handle {
    fn path(&self, from: Position, to: Position) -> Outcome {
        self.path_metered(from, to, &mut || true)
            .expect("no meter stops it")
    }

    fn path_metered(
        &self,
        from: Position,
        to: Position,
        meter: &mut dyn FnMut() -> bool,
    ) -> Result<Outcome, Stopped> {
        let st = self.0.borrow();
        let (from, to) = (st.grid.cell_of(from), st.grid.cell_of(to));
        let Some(terrain) = st.terrain.clone() else {
            return Ok(Outcome {
                answer: Answer::Indeterminate(st.grid.chunk_of(from)),
                nodes: 0,
            });
        };
        let rules = st.rules.clone();
        let limit = u64::from(st.max_nodes);
        drop(st); // a meter may run Lua, which may ask the service again
        search::search(&TerrainGround(&*terrain), &rules, from, to, limit, meter)
    }

    fn path_input(&self, from: Position, to: Position) -> Outcome {
        let st = self.0.borrow();
        let (from, to) = (st.grid.cell_of(from), st.grid.cell_of(to));
        let Some(terrain) = st.terrain.clone() else {
            return Outcome {
                answer: Answer::Indeterminate(st.grid.chunk_of(from)),
                nodes: 0,
            };
        };
        let rules = st.rules.clone();
        let left = u64::from(st.max_nodes).saturating_sub(st.input_nodes);
        drop(st);
        let outcome = search::search_unmetered(&TerrainGround(&*terrain), &rules, from, to, left);
        self.0.borrow_mut().input_nodes += outcome.nodes;
        outcome
    }

    fn cell_of(&self, pos: Position) -> Cell {
        self.0.borrow().grid.cell_of(pos)
    }

    fn centre(&self, cell: Cell) -> Position {
        self.0.borrow().grid.centre(cell)
    }

    fn max_nodes(&self) -> u32 {
        self.0.borrow().max_nodes
    }

    fn agents(&self) -> Vec<AgentView> {
        let st = self.0.borrow();
        st.agents
            .iter()
            .map(|(id, a)| AgentView {
                id: id.clone(),
                goal: a.goal,
                path: a.path.iter().copied().collect(),
                waiting: a.waiting,
                stuck: a.stuck.map(|s| s.name()),
                arrived: a.arrived,
            })
            .collect()
    }

    fn cells_per_chunk(&self) -> u32 {
        self.0.borrow().grid.cells
    }
}
