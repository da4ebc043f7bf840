//! `world.streaming`: decides every tick which chunks of the XZ grid are live around the focus,
//! loads them nearest-first within a fixed per-tick budget, releases those beyond `radius + 1`,
//! keeps `dormant` tags, asks the cancellable hooks and tells the kits that build.
//!
//! - [`config`]: settings and their precedence;
//! - [`plan`]: the pure planner (what is due, what is pending);
//! - [`dormancy`]: streamable entities indexed by chunk;
//! - [`service`]: the service other kits reach it through;
//! - this file: the kit, which resolves the focus and applies the plan.

pub mod config;
pub mod dormancy;
pub mod plan;
pub mod service;
mod state;

use std::cell::RefCell;
use std::rc::Rc;

use indexmap::IndexMap;

use crate::grid::{ChunkPos, Grid, Position};
use crate::host::{
    chunk_data, Ctx, EntityId, Event, HookArgs, HookValue, Install, Kit, KitError, KitManifest,
    KitSpec, PreparedSection, Problem, SceneDef, World, CHUNK_LOADED, CHUNK_UNLOADED,
    HOOK_CHUNK_LOAD, HOOK_CHUNK_UNLOAD, PLAYER_MOVED,
};
use crate::json::from_value;
use crate::kits::ground::{GroundService, GROUND};

pub use config::{BudgetMs, ChunkSize, Overrides, Radius, Settings, StreamingConfig};
pub use plan::{Held, RefusalKind, Residency};
pub use service::{ChunkCallback, ChunkSubscription, Refusal, StreamingService};
pub use state::SaveSection;
use state::{Handle, State};

/// The kit and service id.
pub const STREAMING: &str = "world.streaming";
/// Variable: how many chunks are loaded.
pub const VAR_LOADED: &str = "world.chunks.loaded";
/// Variable: how many chunks are pending.
pub const VAR_PENDING: &str = "world.chunks.pending";

/// The kit's manifest, read from `kit.json`.
pub fn manifest() -> KitManifest {
    serde_json::from_str(include_str!("../../../kit.json")).expect("kit.json is a valid manifest")
}

/// Checks a saved `world.streaming` section on its own (default chunk size, no bounds).
pub fn check_save_section(
    section: &serde_json::Value,
    path: &str,
    active: bool,
) -> Result<(), Problem> {
    let parsed: SaveSection = from_value(section, path)?;
    State::new(StreamingConfig::default(), IndexMap::new())
        .check_section(parsed, active)
        .map(drop)
        .map_err(|p| p.under(path))
}

/// The `world.streaming` kit.
pub struct StreamingKit {
    state: Rc<RefCell<State>>,
    /// The counts last written to the variables (`None` after a load): unchanged counts are not
    /// written again, which keeps a steady tick to a few comparisons.
    published: Option<(usize, usize)>,
    /// Scratch for the chunks due for release, reused every tick (no allocation when steady).
    due: Vec<ChunkPos>,
    /// Scratch for this tick's loads.
    batch: Vec<ChunkPos>,
    /// What a load changed, for the subscribers (see [`Kit::after_load`] below).
    restored: Vec<(ChunkPos, bool)>,
}

impl StreamingKit {
    /// A kit with `config` and the layers of each scene (by scene id).
    pub fn new(config: StreamingConfig, layers: IndexMap<String, Overrides>) -> Self {
        StreamingKit {
            state: Rc::new(RefCell::new(State::new(config, layers))),
            published: None,
            due: Vec::new(),
            batch: Vec::new(),
            restored: Vec::new(),
        }
    }

    /// The catalog factory: parses the config and every scene's `layers["world.streaming"]`.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let mut problems = Vec::new();
        let config = match spec.config {
            None => StreamingConfig::default(),
            Some(v) => from_value(v, &spec.config_path).unwrap_or_else(|p| {
                problems.push(p);
                StreamingConfig::default()
            }),
        };
        let mut layers = IndexMap::new();
        for (i, scene) in spec.scenes.iter().enumerate() {
            if let Some(v) = scene.layers.get(STREAMING) {
                match from_value(v, &KitSpec::layer_path(i, STREAMING)) {
                    Ok(layer) => {
                        layers.insert(scene.id.clone(), layer);
                    }
                    Err(p) => problems.push(p),
                }
            }
        }
        if problems.is_empty() {
            Ok(Box::new(StreamingKit::new(config, layers)))
        } else {
            Err(problems)
        }
    }

    /// Step 1 of the tick: the focus, in the exact order of SPEC §3.
    fn resolve_focus(world: &World, state: &State) -> Option<Position> {
        if !state.active {
            return None;
        }
        if let Some(player) = world.player() {
            return Some(world.vehicle_of(player).unwrap_or(player).position);
        }
        state.last_moved.or(state.residency.focus())
    }

    fn ask(ctx: &mut Ctx<'_>, hook: &'static str, chunk: ChunkPos) -> Option<crate::host::Cancel> {
        if !ctx.hooks.has_handlers(hook) {
            return None;
        }
        let fields = [
            ("x", HookValue::Int(chunk.x)),
            ("z", HookValue::Int(chunk.z)),
        ];
        ctx.hooks.ask(
            &HookArgs {
                hook,
                fields: &fields,
            },
            ctx.events,
        )
    }

    /// Applies a load or a release: residency, dormancy, callbacks, then the event.
    fn announce(&self, ctx: &mut Ctx<'_>, chunk: ChunkPos, loaded: bool) {
        {
            let mut st = self.state.borrow_mut();
            if loaded {
                st.residency.mark_loaded(chunk);
            } else {
                st.residency.mark_released(chunk);
            }
            st.dormancy.chunk_changed(chunk, loaded, ctx.world);
        }
        state::notify(&self.state, chunk, loaded);
        ctx.events.emit(
            if loaded { CHUNK_LOADED } else { CHUNK_UNLOADED },
            chunk_data(chunk),
        );
    }

    fn hold(&self, chunk: ChunkPos, kind: RefusalKind, cancel: crate::host::Cancel) {
        let held = Held {
            kind,
            by: cancel.by.as_str().to_owned(),
            reason: cancel.reason,
        };
        self.state.borrow_mut().residency.hold(chunk, held);
    }

    fn publish(&mut self, ctx: &mut Ctx<'_>) {
        let st = self.state.borrow();
        let counts = (st.residency.loaded().len(), st.residency.pending_len());
        if self.published != Some(counts) {
            ctx.variables.set(VAR_LOADED, counts.0 as u64);
            ctx.variables.set(VAR_PENDING, counts.1 as u64);
            self.published = Some(counts);
        }
    }
}

impl Kit for StreamingKit {
    fn id(&self) -> &str {
        STREAMING
    }

    fn install(&mut self, host: &mut Install<'_>) {
        host.hooks.declare(HOOK_CHUNK_LOAD);
        host.hooks.declare(HOOK_CHUNK_UNLOAD);
        let handle: Rc<dyn StreamingService> = Rc::new(Handle(self.state.clone()));
        host.services.provide(STREAMING, handle);
        host.variables.set(VAR_LOADED, 0u64);
        host.variables.set(VAR_PENDING, 0u64);
    }

    fn start(&mut self, services: &crate::host::Services) -> Result<(), KitError> {
        let ground =
            services
                .get::<dyn GroundService>(GROUND)
                .ok_or_else(|| KitError::MissingService {
                    kit: STREAMING.into(),
                    service: GROUND.into(),
                })?;
        let mut st = self.state.borrow_mut();
        let grid = Grid::new(st.config.chunk_size.0);
        st.residency = Residency::new(grid, ground.bounds());
        Ok(())
    }

    fn on_enter(&mut self, scene: &SceneDef, _ctx: &mut Ctx<'_>) {
        let mut st = self.state.borrow_mut();
        st.active = true;
        st.layer = st.layers.get(&scene.id).copied().unwrap_or_default();
        let radius = st.settings().radius;
        // Nothing is loaded when a scene is entered (leaving released everything, and a save
        // without an active scene holds no chunks), so this only sets the focus and the pending
        // set: loads begin on the next tick.
        let mut due = std::mem::take(&mut self.due);
        st.residency.update_view(scene.entry, radius, &mut due);
        due.clear();
        self.due = due;
    }

    fn on_leave(&mut self, ctx: &mut Ctx<'_>) {
        // Released one by one in row order, without asking hooks, exactly as a tick's releases
        // are announced; then the focus, the last player.moved and the refusals are forgotten.
        let loaded: Vec<ChunkPos> = self.state.borrow().residency.loaded().collect();
        for chunk in loaded {
            self.announce(ctx, chunk, false);
        }
        let mut st = self.state.borrow_mut();
        st.active = false;
        st.last_moved = None;
        st.layer = Overrides::default();
        st.residency.clear();
    }

    fn on_event(&mut self, event: &Event, _ctx: &mut Ctx<'_>) {
        if event.event != PLAYER_MOVED {
            return;
        }
        let mut st = self.state.borrow_mut();
        if !st.active {
            return; // no scene: nothing streams, and entering starts at the entry
        }
        let coord = |k: &str| event.data.get(k).and_then(serde_json::Value::as_f64);
        if let (Some(x), Some(z)) = (coord("x"), coord("z")) {
            st.last_moved = Some(Position {
                x,
                y: coord("y").unwrap_or(0.0),
                z,
            });
        }
    }

    fn on_entities_changed(&mut self, changed: &[EntityId], ctx: &mut Ctx<'_>) {
        let st = &mut *self.state.borrow_mut();
        let grid = *st.residency.grid();
        for id in changed {
            let residency = &st.residency;
            st.dormancy
                .entity_changed(id, ctx.world, &grid, |c| residency.is_loaded(c));
        }
    }

    fn tick(&mut self, ctx: &mut Ctx<'_>) {
        let mut due = std::mem::take(&mut self.due);
        let settings = {
            let mut st = self.state.borrow_mut();
            let focus = Self::resolve_focus(ctx.world, &st);
            let settings = st.settings();
            st.residency.update_view(focus, settings.radius, &mut due);
            settings
        };
        // 2. Release, in row order, no budget.
        for chunk in due.drain(..) {
            match Self::ask(ctx, HOOK_CHUNK_UNLOAD, chunk) {
                None => self.announce(ctx, chunk, false),
                Some(cancel) => self.hold(chunk, RefusalKind::Unload, cancel),
            }
        }
        self.due = due;
        // 3. Load, nearest-first, within budget; a refused load spends its slot. The batch is
        //    chosen before any hook is asked: a refusal released meanwhile waits for next tick.
        let mut batch = std::mem::take(&mut self.batch);
        self.state
            .borrow_mut()
            .residency
            .take_nearest(settings.loads_per_tick, &mut batch);
        for chunk in batch.drain(..) {
            match Self::ask(ctx, HOOK_CHUNK_LOAD, chunk) {
                None => self.announce(ctx, chunk, true),
                Some(cancel) => self.hold(chunk, RefusalKind::Load, cancel),
            }
        }
        self.batch = batch;
        // 4. Dormancy was kept up to date chunk by chunk; publish the variables.
        self.publish(ctx);
    }

    fn save(&self) -> Option<serde_json::Value> {
        Some(serde_json::to_value(self.state.borrow().save_section()).expect("plain data"))
    }

    fn prepare_load(
        &self,
        section: Option<&serde_json::Value>,
        scene: Option<&SceneDef>,
    ) -> Result<Option<PreparedSection>, Problem> {
        let path = format!("kits.{STREAMING}");
        let section = section.ok_or_else(|| Problem::new(&path, "missing section"))?;
        let parsed: SaveSection = from_value(section, &path)?;
        let prepared = self
            .state
            .borrow()
            .check_section(parsed, scene.is_some())
            .map_err(|p| p.under(&path))?;
        Ok(Some(Box::new(prepared)))
    }

    fn commit_load(&mut self, prepared: Option<PreparedSection>, ctx: &mut Ctx<'_>) {
        let prepared = prepared
            .and_then(|p| p.downcast::<state::Prepared>().ok())
            .expect("prepared by prepare_load");
        self.published = None;
        let mut st = self.state.borrow_mut();
        let before: Vec<ChunkPos> = st.residency.loaded().collect();
        st.restore(*prepared, ctx.scene.map(|s| s.id.as_str()));
        // The subscribers' difference: releases first, then loads, each in row order.
        self.restored = before
            .iter()
            .filter(|c| !st.residency.is_loaded(**c))
            .map(|c| (*c, false))
            .collect();
        let residency = &st.residency;
        let gained = residency
            .loaded()
            .filter(|c| before.binary_search(c).is_err())
            .map(|c| (c, true));
        self.restored.extend(gained);
        let st = &mut *st;
        let grid = *st.residency.grid();
        let residency = &st.residency;
        st.dormancy
            .rebuild(ctx.world, &grid, |c| residency.is_loaded(c));
    }

    /// Brings the `onChunk` subscribers in step with the restored set: each is called for the
    /// difference between the loaded set before and after the load, releases first, then loads,
    /// each in row order, with [`StreamingService::restoring`] true (Lua: a third argument
    /// `restored`). No event is emitted and no hook is asked.
    fn after_load(&mut self, _ctx: &mut Ctx<'_>) {
        let changes = std::mem::take(&mut self.restored);
        self.state.borrow().restoring.set(true);
        for (chunk, loaded) in changes {
            state::notify(&self.state, chunk, loaded);
        }
        self.state.borrow().restoring.set(false);
    }
}
