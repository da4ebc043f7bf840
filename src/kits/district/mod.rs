//! `world.district` (SPEC §15): entities that stream with their chunks. District files (JSON
//! Lines) are indexed at start by home chunk, as file offsets; a chunk's entities are spawned when
//! it loads (before `world.chunk.loaded` and the `onChunk` callbacks) and stored when it is
//! released (after them); only differences from the district files are kept, in memory and in
//! game saves.
//!
//! - [`config`]: the district files and the world directory;
//! - [`index`]: the pure JSON Lines reader and the index by home chunk;
//! - `state.rs`: live entities by chunk, kept differences, materialise and store;
//! - `save.rs`: the save section;
//! - [`service`]: what mods and the game ask of the kit;
//! - this file: the kit, which subscribes to the streaming kit's load and release stages.

pub mod config;
pub mod index;
mod save;
pub mod service;
mod state;

use std::cell::RefCell;
use std::io::BufReader;
use std::path::PathBuf;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};

use crate::grid::{ChunkPos, Grid};
use crate::host::{
    Ctx, EntityId, Event, Install, Kit, KitError, KitManifest, KitSpec, PreparedSection, Problem,
    SceneDef, Services,
};
use crate::json::from_value;
use crate::kits::streaming::{ChunkStage, ChunkSubscription, StreamingService, STREAMING};

pub use config::{DistrictConfig, DistrictEntry};
pub use save::SaveSection;
pub use service::DistrictService;
use state::State;
pub use state::{PERSISTENT, STREAMED};

/// The kit and service id.
pub const DISTRICT: &str = "world.district";
/// Event: a chunk's stored entities were spawned `{x, z, count}` (count > 0).
pub const MATERIALISED: &str = "world.district.materialised";
/// Event: a chunk's streamed entities were stored `{x, z, count}` (count > 0).
pub const STORED: &str = "world.district.stored";
/// Event: a district line could not be brought back `{x, z, message}`.
pub const ERROR: &str = "world.district.error";
/// Variable: live streamed entities.
pub const VAR_LIVE: &str = "world.district.live";
/// Variable: stored entities.
pub const VAR_STORED: &str = "world.district.stored";

/// The kit's manifest, read from `kit.json` beside this file.
pub fn manifest() -> KitManifest {
    serde_json::from_str(include_str!("kit.json")).expect("kit.json is a valid manifest")
}

/// The `world.district` kit.
pub struct DistrictKit {
    files: Vec<(u16, PathBuf)>,
    state: Rc<RefCell<State>>,
    subscriptions: Vec<ChunkSubscription>,
    streaming: Option<Rc<dyn StreamingService>>,
    published: Option<(usize, u64)>,
}

impl DistrictKit {
    /// The catalog factory: the config checked, each district's scene resolved.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let config: DistrictConfig = match spec.config {
            None => DistrictConfig::default(),
            Some(v) => from_value(v, &spec.config_path).map_err(|p| vec![p])?,
        };
        let mut problems = Vec::new();
        if config.world_dir.is_some() {
            problems.push(Problem::new(
                format!("{}.worldDir", spec.config_path),
                "this build keeps district differences in memory and in game saves only; \
                 remove worldDir",
            ));
        }
        let scenes: Vec<String> = spec.scenes.iter().map(|s| s.id.clone()).collect();
        let mut files = Vec::new();
        for (i, d) in config.districts.iter().enumerate() {
            let (scene, file) = d.parts();
            let index = match scene {
                None => 0,
                Some(name) => match scenes.iter().position(|s| s == name) {
                    Some(i) => i,
                    None => {
                        problems.push(Problem::new(
                            format!("{}.districts[{i}].scene", spec.config_path),
                            format!(
                                "no scene {name:?} in this scene file; scenes: {}",
                                scenes.join(", ")
                            ),
                        ));
                        continue;
                    }
                },
            };
            files.push((index as u16, spec.base_dir.join(file)));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let state = State {
            grid: Grid::new(32.0),
            index: index::Index::default(),
            files: Vec::new(),
            scenes,
            active: None,
            last: None,
            live: FxHashMap::default(),
            by_chunk: Default::default(),
            records: Default::default(),
            gone: Default::default(),
            stored: 0,
            check: Default::default(),
            data: FxHashMap::default(),
            pending: Vec::new(),
            errors: Vec::new(),
        };
        Ok(Box::new(DistrictKit {
            files,
            state: Rc::new(RefCell::new(state)),
            subscriptions: Vec::new(),
            streaming: None,
            published: None,
        }))
    }

    /// The bytes the district index holds (the benchmarks' bytes per unloaded entity).
    pub fn index_bytes(&self) -> usize {
        self.state.borrow().index.heap_bytes()
    }

    /// The kit's two chunk steps on their own (the benchmarks time each alone).
    pub fn chunk_steps(&self) -> ChunkSteps {
        ChunkSteps(self.state.clone())
    }

    fn start_error(message: String) -> KitError {
        KitError::Start {
            kit: DISTRICT.into(),
            message,
        }
    }

    fn publish(&mut self, ctx: &mut Ctx<'_>) {
        let st = self.state.borrow();
        let now = (st.live.len(), st.stored);
        if self.published != Some(now) {
            ctx.variables.set(VAR_LIVE, now.0 as u64);
            ctx.variables.set(VAR_STORED, now.1);
            self.published = Some(now);
        }
    }

    fn emit_errors(state: &RefCell<State>, emit: &mut dyn FnMut(&'static str, Value)) {
        let errors = std::mem::take(&mut state.borrow_mut().errors);
        for (c, message) in errors {
            emit(ERROR, json!({ "x": c.x, "z": c.z, "message": message }));
        }
    }
}

fn count_data(c: ChunkPos, n: usize) -> Value {
    json!({ "x": c.x, "z": c.z, "count": n })
}

impl Kit for DistrictKit {
    fn id(&self) -> &str {
        DISTRICT
    }

    fn install(&mut self, host: &mut Install<'_>) {
        let handle: Rc<dyn DistrictService> = Rc::new(Handle(self.state.clone()));
        host.services.provide(DISTRICT, handle);
        host.variables.set(VAR_LIVE, 0u64);
        host.variables.set(VAR_STORED, 0u64);
    }

    fn start(&mut self, services: &Services) -> Result<(), KitError> {
        let streaming = services
            .get::<dyn StreamingService>(STREAMING)
            .ok_or_else(|| KitError::MissingService {
                kit: DISTRICT.into(),
                service: STREAMING.into(),
            })?;
        let grid = Grid::new(streaming.chunk_size());
        let mut builder = index::Builder::new(grid);
        let mut handles = Vec::new();
        for (scene, path) in &self.files {
            let name = crate::user_file::name(path);
            // A regular file, checked before and after opening (a FIFO swapped in between
            // never blocks the start); the index reads it through its own cap.
            let (file, _) = crate::user_file::open_regular(path)
                .map_err(|e| Self::start_error(format!("{e} (a district file)")))?;
            let reader = file
                .try_clone()
                .map_err(|e| Self::start_error(format!("{name}: {e}")))?;
            builder
                .add(
                    *scene,
                    &name,
                    BufReader::with_capacity(1 << 16, reader),
                    crate::limits::MAX_DISTRICT_BYTES,
                )
                .map_err(|e| Self::start_error(e.to_string()))?;
            handles.push(RefCell::new(file));
        }
        let index = builder
            .finish()
            .map_err(|e| Self::start_error(e.to_string()))?;
        {
            let mut st = self.state.borrow_mut();
            st.grid = grid;
            st.stored = index.len() as u64;
            st.index = index;
            st.files = handles;
        }
        let st = self.state.clone();
        self.subscriptions.push(streaming.on_chunk_stage(
            ChunkStage::BeforeLoaded,
            Box::new(move |ctx, chunk, _| {
                let (c, n) = st.borrow_mut().materialise(ctx.world(), chunk);
                DistrictKit::emit_errors(&st, &mut |e, d| ctx.emit(e, d));
                if n > 0 {
                    ctx.emit(MATERIALISED, count_data(c, n));
                }
            }),
        ));
        let st = self.state.clone();
        self.subscriptions.push(streaming.on_chunk_stage(
            ChunkStage::AfterUnloaded,
            Box::new(move |ctx, chunk, _| {
                let (c, n) = st.borrow_mut().release(ctx.world(), chunk);
                if n > 0 {
                    ctx.emit(STORED, count_data(c, n));
                }
            }),
        ));
        self.streaming = Some(streaming);
        Ok(())
    }

    fn on_enter(&mut self, scene: &SceneDef, _ctx: &mut Ctx<'_>) {
        let mut st = self.state.borrow_mut();
        let i = st
            .scenes
            .iter()
            .position(|s| *s == scene.id)
            .map(|i| i as u16);
        st.active = i;
        st.last = i;
    }

    fn on_leave(&mut self, _ctx: &mut Ctx<'_>) {
        self.state.borrow_mut().active = None;
    }

    fn on_event(&mut self, _event: &Event, ctx: &mut Ctx<'_>) {
        State::apply_pending(&self.state, ctx.world);
    }

    fn on_entities_changed(&mut self, changed: &[EntityId], ctx: &mut Ctx<'_>) {
        self.state.borrow_mut().changed(changed, ctx.world);
        State::apply_pending(&self.state, ctx.world);
    }

    fn begin_tick(&mut self, ctx: &mut Ctx<'_>) {
        State::apply_pending(&self.state, ctx.world);
    }

    fn end_tick(&mut self, ctx: &mut Ctx<'_>) {
        State::apply_pending(&self.state, ctx.world);
        let streaming = self.streaming.clone();
        let loaded = |c: ChunkPos| streaming.as_ref().is_some_and(|s| s.is_loaded(c));
        let stored = self.state.borrow_mut().end_tick(ctx.world, loaded);
        for (c, n) in stored {
            ctx.events.emit(STORED, count_data(c, n));
        }
        self.publish(ctx);
    }

    fn save_version(&self) -> u32 {
        crate::host::save::SAVE_VERSION
    }

    fn save(&self) -> Option<Value> {
        Some(serde_json::to_value(self.state.borrow().save_section()).expect("plain data"))
    }

    fn prepare_load(
        &self,
        section: Option<&Value>,
        _scene: Option<&SceneDef>,
    ) -> Result<Option<PreparedSection>, Problem> {
        let path = format!("kits.{DISTRICT}");
        let Some(section) = section else {
            return Ok(None); // an older save: the district files as they are
        };
        let parsed: SaveSection = from_value(section, &path)?;
        let prepared = self
            .state
            .borrow()
            .check_section(parsed)
            .map_err(|p| p.under(&path))?;
        Ok(Some(Box::new(prepared)))
    }

    fn commit_load(&mut self, prepared: Option<PreparedSection>, ctx: &mut Ctx<'_>) {
        let mut st = self.state.borrow_mut();
        let active = ctx
            .scene
            .and_then(|s| st.scenes.iter().position(|x| *x == s.id))
            .map(|i| i as u16);
        let prepared = match prepared.and_then(|p| p.downcast::<save::Prepared>().ok()) {
            Some(p) => *p,
            None => save::Prepared::baseline(st.index.len() as u64, active),
        };
        st.restore(prepared, active, ctx.world);
        self.published = None;
    }
}

/// The kit's materialise and store steps, called directly: what a chunk load and a chunk release
/// do to the world, without the streaming kit around them and without their events (the
/// benchmarks time each alone).
#[derive(Clone)]
pub struct ChunkSteps(Rc<RefCell<State>>);

impl ChunkSteps {
    /// Spawns `chunk`'s stored entities of the active scene into `world`, as a chunk load does;
    /// how many.
    pub fn materialise(&self, world: &mut crate::host::World, chunk: ChunkPos) -> usize {
        self.0.borrow_mut().materialise(world, chunk).1
    }

    /// Stores `chunk`'s live streamed entities, as a chunk release does; how many.
    pub fn store(&self, world: &mut crate::host::World, chunk: ChunkPos) -> usize {
        self.0.borrow_mut().release(world, chunk).1
    }
}

/// The service handle registered as `world.district`.
struct Handle(Rc<RefCell<State>>);

impl DistrictService for Handle {
    fn live(&self) -> usize {
        self.0.borrow().live.len()
    }

    fn stored(&self) -> usize {
        self.0.borrow().stored as usize
    }

    fn data(&self, id: &EntityId) -> Option<Option<Map<String, Value>>> {
        let st = self.0.borrow();
        if let Some((_, d)) = st.pending.iter().rev().find(|(p, _)| p == id) {
            return Some(d.clone());
        }
        st.data.get(id).cloned()
    }

    fn set(&self, id: &EntityId, data: Option<Map<String, Value>>) -> Result<(), String> {
        if let Some(d) = &data {
            crate::host::check_data(d)?;
        }
        let mut st = self.0.borrow_mut();
        if !st.data.contains_key(id) {
            return Err(format!(
                "no entity `{}` is live",
                crate::escape::escape(id.as_str())
            ));
        }
        st.pending.push((id.clone(), data));
        Ok(())
    }

    fn district_line(&self, id: &EntityId) -> Option<(String, u32)> {
        let st = self.0.borrow();
        let i = st.line_of(id.as_str())?;
        let (file, r) = st.index.line(i);
        Some((st.index.stamps[file as usize].file.clone(), r.line))
    }

    fn reserved(&self, id: &EntityId) -> bool {
        self.0.borrow().line_of(id.as_str()).is_some()
    }
}
