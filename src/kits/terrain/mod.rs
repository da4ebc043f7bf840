//! `world.terrain` (docs/reference/terrain.md#off-the-tick): a world generated off the tick. Every
//! chunk `world.streaming` loads is dispatched to a worker pool; at the start of tick
//! `T + commitLatency` (T the tick it loaded) it is committed — waiting for its worker only if it
//! is not done yet — so the event log is the same whatever the threads did. The kit registers as a
//! builder, so readiness (docs/reference/streaming.md#readiness) waits for terrain. Inline
//! (`workers: "inline"`, or any scene on a build without threads;
//! docs/reference/terrain.md#inline) there is no pool and no save thread: each job runs on the
//! tick at its commit, with the same bytes.
//!
//! - [`config`]: the settings; [`service`]: the face other kits see; [`events`]: the names of
//!   the events it emits, their payloads, and reading them back ([`TerrainEvent`]);
//! - [`generate`]: the pure generator (heights and materials from the seed); [`snapshot`]: the
//!   bordered snapshot, a pure copy of a chunk and its neighbours' skin;
//! - [`pool`]: the worker threads and their queues; [`store`]: the save thread and its region
//!   files, [`region`] their format (pure);
//! - `state.rs` the state (the commit, edits), `handle.rs` the service over it, `save.rs` the
//!   save section;
//! - this file: the kit.

pub mod config;
pub mod events;
pub mod generate;
mod handle;
#[cfg(feature = "lua")]
mod lua;
pub mod pool;
pub mod region;
mod save;
pub mod service;
pub mod snapshot;
mod state;
pub mod store;
pub mod view;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::grid::ChunkPos;
use crate::host::{
    Ctx, Event, Install, Kit, KitError, KitManifest, KitSpec, PreparedSection, Problem, SceneDef,
    Services,
};
use crate::json::from_value;
use crate::kits::streaming::{StreamingService, STREAMING};

pub use config::{
    CellsPerChunk, CommitLatency, FlushEvery, Seed, TerrainConfig, WorkerCount, Workers, MAX_CELLS,
    MAX_COMMIT_LATENCY, MAX_FLUSH_EVERY, MAX_WORKERS,
};
pub use events::{
    column_change, TerrainEvent, EDIT_REFUSED, TERRAIN_BUILT, TERRAIN_CHANGED, TERRAIN_ERROR,
    TERRAIN_LOD_BUILT,
};
pub use generate::{ChunkData, Generator, GENERATOR_VERSION};
use handle::Handle;
use pool::Pool;
pub use save::{check_save_section, SaveSection, SavedChunk, SavedEdits};
pub use service::{hash_text, BuiltCallback, EditRefused, TerrainService, VAR_WAITS};
pub use snapshot::{Snapshot, SnapshotError, MAX_SKIN};
use state::State;
use store::Store;

/// The kit and service id.
pub const TERRAIN: &str = "world.terrain";

/// The kit's manifest, read from `kit.json` beside this file.
pub fn manifest() -> KitManifest {
    serde_json::from_str(include_str!("kit.json")).expect("kit.json is a valid manifest")
}

/// The kit's entry of the catalog: its manifest, factory, schemas, save check, Lua table and viewer layer.
pub fn entry() -> crate::host::CatalogEntry {
    let entry = crate::host::CatalogEntry::new(manifest(), Box::new(TerrainKit::from_spec))
        .config_schema("terrain-config.schema.json", || {
            schemars::schema_for!(TerrainConfig)
        })
        .save_schema("terrain-save.schema.json", || {
            schemars::schema_for!(SaveSection)
        })
        .save_check(check_save_section)
        .view(view::LAYER);
    #[cfg(feature = "lua")]
    let entry = entry.lua(lua::TABLE);
    entry
}

/// The kit.
pub struct TerrainKit {
    state: Rc<RefCell<State>>,
    published: Option<u64>,
}

impl TerrainKit {
    /// The catalog factory.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let mut config: TerrainConfig = match spec.config {
            None => TerrainConfig::default(),
            Some(v) => from_value(v, &spec.config_path).map_err(|p| vec![p])?,
        };
        if let Some(dir) = &config.world_dir {
            let key = crate::json::join_path(&spec.config_path, "worldDir");
            if let Some(p) = crate::worlddir::refuse_without_file_system(&key) {
                return Err(vec![p]);
            }
            if dir.is_empty() {
                return Err(vec![Problem::new(
                    key,
                    "expected a directory path, got an empty string",
                )]);
            }
            config.world_dir = Some(
                crate::worlddir::resolve(dir, spec.base_dir)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        Ok(Box::new(TerrainKit::new(config)))
    }

    /// A kit with `config` (the pool and the save thread start with the game).
    pub fn new(config: TerrainConfig) -> Self {
        TerrainKit {
            state: Rc::new(RefCell::new(State {
                config,
                chunk_size: 32.0,
                generator: None,
                pool: None,
                store: None,
                next_version: 0,
                in_flight: FxHashMap::default(),
                arrived: 0,
                commits: VecDeque::new(),
                jobs: Vec::new(),
                trash: Vec::new(),
                built: FxHashMap::default(),
                versions: FxHashMap::default(),
                diffs: BTreeMap::new(),
                unsaved: BTreeSet::new(),
                released: Vec::new(),
                dirty: BTreeSet::new(),
                errors: Vec::new(),
                outcome: None,
                failing: false,
                closed: false,
                waits: 0,
                builder: None,
                subscribers: Rc::default(),
                outbox: Rc::default(),
                blocks: state::Blocks::default(),
            })),
            published: None,
        }
    }

    /// Commits the chunks due at `tick`, in dispatch order: each is built, then streaming is
    /// told, then its `onBuilt` callbacks run (they see the chunks before it built, and the
    /// ones after it not yet).
    fn commit(&mut self, ctx: &mut Ctx<'_>) {
        let (builder, subscribers) = {
            let mut st = self.state.borrow_mut();
            match st.commits.front() {
                Some(&(at, _, _)) if at <= ctx.tick => {}
                _ => return,
            }
            st.drain();
            (st.builder.clone(), st.subscribers.clone())
        };
        loop {
            let (chunk, hash) = {
                let mut st = self.state.borrow_mut();
                let Some(&(at, version, chunk)) = st.commits.front() else {
                    break;
                };
                if at > ctx.tick {
                    break;
                }
                st.commits.pop_front();
                // None: released (or reloaded) since, nothing to commit.
                let Some((built, waited)) = st.land(chunk, version) else {
                    continue;
                };
                st.waits += u64::from(waited);
                let hash = built.data.hash();
                st.built.insert(chunk, built.data);
                st.versions.insert(chunk, 1);
                if let Some(diff) = built.diff {
                    st.diffs.insert(chunk, diff);
                }
                ctx.events.emit(TERRAIN_BUILT, built.event);
                (chunk, hash)
            };
            if let Some((streaming, id)) = &builder {
                streaming.set_built(*id, chunk, true);
            }
            if subscribers.borrow().is_empty() {
                continue;
            }
            // On a snapshot, with no borrow held: a callback may subscribe another one.
            let snapshot: Vec<Rc<RefCell<BuiltCallback>>> = subscribers.borrow().clone();
            for cb in snapshot {
                if let Ok(mut cb) = cb.try_borrow_mut() {
                    cb(chunk, hash);
                }
            }
        }
    }

    /// Commits the LOD blocks due at `tick`, in dispatch order, after the chunks: each is
    /// `world.terrain.lod.built {level, x, z, hash}`, then streaming is told (readiness).
    fn commit_blocks(&mut self, ctx: &mut Ctx<'_>) {
        let builder = {
            let mut st = self.state.borrow_mut();
            match st.blocks.commits.front() {
                Some(&(at, _, _)) if at <= ctx.tick => {}
                _ => return,
            }
            st.drain_blocks();
            st.builder.clone()
        };
        loop {
            let key = {
                let mut st = self.state.borrow_mut();
                let Some(&(at, version, key)) = st.blocks.commits.front() else {
                    break;
                };
                if at > ctx.tick {
                    break;
                }
                st.blocks.commits.pop_front();
                let Some((event, waited)) = st.land_block(key, version) else {
                    continue; // released or dispatched again since
                };
                st.waits += u64::from(waited);
                ctx.events.emit(TERRAIN_LOD_BUILT, event);
                key
            };
            if let Some((streaming, id)) = &builder {
                streaming.set_lod_built(*id, key.0, key.1, true);
            }
        }
    }

    /// Tells which blocks an edit changed this tick `{x, z, level}`, once each (level, then row
    /// order), and dispatches their rebuild.
    fn report_changed_blocks(&mut self, ctx: &mut Ctx<'_>) {
        if self.state.borrow().blocks.dirty.is_empty() {
            return;
        }
        let mut st = self.state.borrow_mut();
        let dirty = std::mem::take(&mut st.blocks.dirty);
        let at = ctx.tick + st.config.commit_latency.get();
        for key in dirty {
            let changed = TerrainEvent::Changed {
                level: key.0,
                at: key.1,
            };
            ctx.events.emit(TERRAIN_CHANGED, changed.data());
            let step = st.blocks.slots.get(&key).and_then(|s| {
                let built = s.built.as_ref().map(|(step, _)| *step);
                built.or(s.flight.as_ref().map(|f| f.step))
            });
            if let Some(step) = step {
                st.dispatch_block(key, step, at);
            }
        }
    }

    /// Reports damaged stored edits found when the world directory was opened or loaded.
    fn report_errors(&mut self, ctx: &mut Ctx<'_>) {
        let errors = std::mem::take(&mut self.state.borrow_mut().errors);
        for e in errors {
            let error = TerrainEvent::ReadError {
                chunk: e.chunk,
                message: e.message,
            };
            ctx.events.emit(TERRAIN_ERROR, error.data());
        }
    }

    /// Tells builders which chunks changed this tick, once each, row order.
    fn report_changed(&mut self, ctx: &mut Ctx<'_>) {
        if self.state.borrow().dirty.is_empty() {
            return;
        }
        let dirty = std::mem::take(&mut self.state.borrow_mut().dirty);
        for c in dirty {
            let changed = TerrainEvent::Changed { level: 0, at: c };
            ctx.events.emit(TERRAIN_CHANGED, changed.data());
        }
    }

    fn publish(&mut self, ctx: &mut Ctx<'_>) {
        let waits = self.state.borrow().waits;
        if self.published != Some(waits) {
            ctx.variables.set(VAR_WAITS, waits);
            self.published = Some(waits);
        }
    }

    /// The threads the kit runs: its workers and its save thread; 0 inline
    /// (docs/reference/terrain.md#inline) and before it starts.
    pub fn threads(&self) -> usize {
        let st = self.state.borrow();
        st.pool.as_ref().map_or(0, Pool::workers) + st.store.as_ref().map_or(0, Store::threads)
    }

    /// Writes back every modified chunk not stored yet and waits until it is (a game save and
    /// close do this). The error lists every region not written, this time or earlier.
    pub fn flush(&self) -> Result<(), store::StoreError> {
        self.state.borrow_mut().flush()
    }

    /// The last write back: [`TerrainKit::flush`], after which dropping the kit writes nothing
    /// (and prints nothing). The error lists the regions whose edits are lost, with how many
    /// chunks each.
    pub fn close(&self) -> Result<(), store::StoreError> {
        let mut st = self.state.borrow_mut();
        st.closed = true;
        st.flush()
    }

    /// At a periodic write back: hears the previous one's outcome (each region not written is a
    /// `world.terrain.error` event), then sends this one (with the regions to try again).
    fn write_back(&mut self, ctx: &mut Ctx<'_>) {
        let outcome = self.state.borrow_mut().outcome.take();
        if let Some(outcome) = outcome {
            let result = outcome.wait();
            self.state.borrow_mut().failing = result.is_err();
            if let Err(store::StoreError::Unsaved { failures, .. }) = result {
                for f in failures {
                    let origin = f.region.origin();
                    let error = TerrainEvent::WriteError {
                        origin,
                        message: format!(
                            "cannot write {}: {}; its edits are kept in memory and written at \
                             the next write back",
                            f.file, f.message
                        ),
                        region: f.file,
                        chunks: f.chunks as u64,
                    };
                    ctx.events.emit(TERRAIN_ERROR, error.data());
                }
            }
        }
        let mut st = self.state.borrow_mut();
        if st.unsaved.is_empty() && !st.failing {
            return;
        }
        let changes = st.take_unsaved();
        let outcome = st.store.as_ref().map(|store| store.write_then(changes));
        st.outcome = outcome;
    }
}

/// Registers the game's [`store::GameToken`] (the world directory's owner, shared by the kits
/// of one game) unless a kit installed before did.
pub fn register_game_token(services: &mut crate::host::Services) {
    if services
        .get::<store::GameToken>(store::GAME_TOKEN)
        .is_none()
    {
        services.provide(store::GAME_TOKEN, Rc::new(store::GameToken::new()));
    }
}

impl Drop for TerrainKit {
    fn drop(&mut self) {
        // Write back on close (unless closed already). Nobody is left to tell of a failure but
        // the terminal; `Game::close` and the CLI report it as an error instead.
        if let Ok(mut st) = self.state.try_borrow_mut() {
            if !st.closed {
                if let Err(e) = st.flush() {
                    eprintln!("world.terrain: edits not written back on close: {e}");
                }
            }
            // The directory is released with the kit, even when a service handle outlives it:
            // the pool first (its workers ask the store), then the store (its thread joined,
            // its lock released).
            drop(st.pool.take());
            drop(st.store.take());
        }
    }
}

impl Kit for TerrainKit {
    fn id(&self) -> &str {
        TERRAIN
    }

    fn install(&mut self, host: &mut Install<'_>) {
        let handle: Rc<dyn TerrainService> = Rc::new(Handle(self.state.clone()));
        host.services.provide(TERRAIN, handle);
        host.variables.set(VAR_WAITS, 0u64);
        self.state.borrow_mut().outbox = host.outbox.clone();
        register_game_token(host.services);
    }

    fn start(&mut self, services: &Services) -> Result<(), KitError> {
        let streaming = services
            .get::<dyn StreamingService>(STREAMING)
            .ok_or_else(|| KitError::MissingService {
                kit: TERRAIN.into(),
                service: STREAMING.into(),
            })?;
        let mut st = self.state.borrow_mut();
        st.chunk_size = streaming.chunk_size();
        let generator = Arc::new(Generator::new(
            st.config.seed.get(),
            st.config.cells_per_chunk.get(),
            st.chunk_size,
        ));
        st.generator = Some(generator.clone());
        let id = streaming
            .register_builder(TERRAIN)
            .expect("the first builders fit");
        streaming.register_lod_builder(id);
        // Blocks to build and to drop, told as the streaming kit decides them (typed, not read
        // back from the `world.lod.*` events). Weak: the streaming kit outlives no terrain.
        let state = Rc::downgrade(&self.state);
        streaming.on_lod_blocks(Box::new(move |tick, changes| {
            let Some(state) = state.upgrade() else {
                return;
            };
            let mut st = state.borrow_mut();
            let at = tick + st.config.commit_latency.get();
            for c in changes {
                let key = (c.level, c.block);
                if c.loaded {
                    st.dispatch_block(key, c.step, at);
                } else {
                    st.release_block(key);
                }
            }
        }));
        st.builder = Some((streaming, id));
        let fail = |message: String| KitError::Start {
            kit: TERRAIN.into(),
            message,
        };
        let dir = st.config.world_dir.clone().map(std::path::PathBuf::from);
        let game = services.get::<store::GameToken>(store::GAME_TOKEN);
        let fs: Arc<dyn store::Fs> = Arc::new(store::RealFs);
        // Inline (docs/reference/terrain.md#inline) terrain starts no thread: its store is
        // served on the tick too.
        let inline = st.config.runs_inline();
        let start = if inline {
            Store::start_here
        } else {
            Store::start_for
        };
        let started = start(dir, generator.stamp(), fs, game.as_deref());
        let (store, damage) = started.map_err(|e| match e {
            store::StoreError::Locked { dir, lock } => KitError::InUse {
                kit: TERRAIN.into(),
                what: "world directory".into(),
                dir,
                lock,
            },
            e => fail(e.to_string()),
        })?;
        let pool = if inline {
            None
        } else {
            let pool = Pool::new(st.config.worker_threads(), generator, store.reader())
                .map_err(|e| fail(format!("cannot start the worker threads: {e}")))?;
            Some(pool)
        };
        st.errors = damage;
        st.store = Some(store);
        st.pool = pool;
        Ok(())
    }

    fn on_event(&mut self, event: &Event, _ctx: &mut Ctx<'_>) {
        // Chunks (columns, with `vertical` on: docs/reference/terrain.md#columns) are read from
        // their events; LOD blocks come through `on_lod_blocks`.
        if let Some((chunk, loaded)) = events::column_change(event) {
            let mut st = self.state.borrow_mut();
            if loaded {
                let at = event.tick + st.config.commit_latency.get();
                st.dispatch(chunk, at);
            } else {
                st.release(chunk);
            }
        }
    }

    fn on_leave(&mut self, _ctx: &mut Ctx<'_>) {
        // The streaming kit releases every chunk (events follow); nothing else to forget.
    }

    fn on_enter(&mut self, _scene: &SceneDef, _ctx: &mut Ctx<'_>) {}

    fn begin_tick(&mut self, ctx: &mut Ctx<'_>) {
        self.report_errors(ctx);
        self.commit(ctx);
        self.commit_blocks(ctx);
    }

    fn end_tick(&mut self, ctx: &mut Ctx<'_>) {
        self.report_changed(ctx);
        self.report_changed_blocks(ctx);
        let every = self.state.borrow().config.flush_every_ticks.get();
        if every > 0 && ctx.tick.is_multiple_of(every) {
            self.write_back(ctx);
        }
        let mut st = self.state.borrow_mut();
        st.send_released();
        st.submit(); // the tick's jobs, blocks and released data: one lock, at most one wake
        drop(st);
        self.publish(ctx);
    }

    fn flush(&self) -> Result<(), String> {
        TerrainKit::flush(self).map_err(|e| e.to_string())
    }

    fn save(&self) -> Option<serde_json::Value> {
        let section = save::section(&self.state.borrow());
        Some(serde_json::to_value(section).expect("plain data"))
    }

    fn prepare_load(
        &self,
        section: Option<&serde_json::Value>,
        _scene: Option<&SceneDef>,
        save: &crate::host::SaveFacts<'_>,
    ) -> Result<Option<PreparedSection>, Problem> {
        let st = self.state.borrow();
        // The steps the save's blocks must have: the streaming kit's, once it has loaded its
        // own section of the save.
        let level_steps = st.builder.as_ref().and_then(|(streaming, _)| {
            streaming.lod_steps_after_load(
                save.kits.get(crate::kits::streaming::STREAMING)?,
                save.scene,
            )
        });
        let game = save::Game {
            st: &st,
            level_steps,
        };
        let prepared = save::check(section, save, Some(&game))?.expect("checked against a game");
        Ok(Some(Box::new(prepared)))
    }

    fn after_load(&mut self, ctx: &mut Ctx<'_>) {
        // The saved terrain must match the saved loaded set; a hand-edited save may not. Bring
        // it in step without events: a loaded chunk that is neither built nor in flight is
        // dispatched now, and terrain of a chunk that is not loaded is dropped.
        let mut st = self.state.borrow_mut();
        let Some((streaming, id)) = st.builder.clone() else {
            return;
        };
        // The columns (docs/reference/terrain.md#columns; in a flat world the loaded chunks).
        let loaded: BTreeSet<ChunkPos> = streaming.columns().into_iter().collect();
        let stale: BTreeSet<ChunkPos> = st
            .built
            .keys()
            .chain(st.in_flight.keys())
            .filter(|c| !loaded.contains(c))
            .copied()
            .collect();
        for c in stale {
            st.release(c);
        }
        let at = ctx.tick + st.config.commit_latency.get();
        for c in loaded {
            if !st.built.contains_key(&c) && !st.in_flight.contains_key(&c) {
                st.dispatch(c, at);
            }
            streaming.set_built(id, c, st.built.contains_key(&c));
        }
        // The same for the LOD blocks.
        let mut loaded_blocks = BTreeSet::new();
        for level in 1..=4u32 {
            loaded_blocks.extend(streaming.lod_loaded(level).into_iter().map(|b| (level, b)));
        }
        let mut stale: Vec<state::BlockKey> = st
            .blocks
            .slots
            .keys()
            .filter(|k| !loaded_blocks.contains(k))
            .copied()
            .collect();
        stale.sort_unstable(); // hashed
        for k in stale {
            st.release_block(k);
        }
        for k in loaded_blocks {
            if !st.blocks.slots.contains_key(&k) {
                if let Some(step) = streaming.lod_step(k.0) {
                    st.dispatch_block(k, step, at);
                }
            }
            streaming.set_lod_built(id, k.0, k.1, st.blocks.built(&k).is_some());
        }
        st.submit(); // outside a tick: the workers start now
    }

    fn commit_load(&mut self, prepared: Option<PreparedSection>, _ctx: &mut Ctx<'_>) {
        let p = prepared
            .and_then(|p| p.downcast::<save::Prepared>().ok())
            .expect("prepared by prepare_load");
        self.published = None;
        save::commit(&mut self.state.borrow_mut(), *p);
    }
}

#[cfg(test)]
mod tests {
    use super::pool::Job;
    use super::*;
    use serde_json::json;

    /// A kit with a running pool of one worker (no streaming kit, no store).
    fn kit_with_pool() -> TerrainKit {
        let kit = TerrainKit::new(TerrainConfig::default());
        {
            let mut st = kit.state.borrow_mut();
            let generator = Arc::new(Generator::new(0, 32, 32.0));
            st.generator = Some(generator.clone());
            st.pool = Some(Pool::new(1, generator, None).unwrap());
        }
        kit
    }

    #[test]
    fn a_chunk_released_before_its_job_leaves_the_tick_is_never_generated() {
        let kit = kit_with_pool();
        let mut st = kit.state.borrow_mut();
        let c = ChunkPos::new(3, -2);
        st.dispatch(c, 5);
        st.release(c);
        st.submit();
        assert!(st.jobs.is_empty() && st.in_flight.is_empty() && st.commits.len() == 1);
        // One worker takes jobs in order: had c been handed over, its result would come first.
        let d = ChunkPos::new(4, -2);
        st.dispatch(d, 6);
        st.submit();
        let done = st.pool.as_ref().unwrap().recv().unwrap();
        assert_eq!(done.job.chunk, d, "c was never generated");
    }

    #[test]
    fn results_of_released_or_superseded_dispatches_are_discarded_on_arrival() {
        let kit = kit_with_pool();
        let mut st = kit.state.borrow_mut();
        let c = ChunkPos::new(1, 1);
        st.dispatch(c, 5); // version 0
        st.submit();
        st.release(c); // the job is the pool's now: its result comes back
        let stale = st.pool.as_ref().unwrap().recv().unwrap();
        assert_eq!(stale.job.version, 0);
        st.take(stale);
        assert!(st.in_flight.is_empty());
        assert_eq!(st.arrived, 0, "discarded on arrival");
        // Loaded again: a result of the first dispatch is stale, the second one's is filed.
        st.dispatch(c, 9); // version 1
        st.submit();
        let fresh = st.pool.as_ref().unwrap().recv().unwrap();
        assert_eq!(fresh.job.version, 1);
        let again = pool::Done {
            job: Job {
                chunk: c,
                version: 0,
            },
            built: None,
        };
        st.take(again);
        assert_eq!(st.arrived, 0, "a stale version is dropped");
        st.take(fresh);
        assert_eq!(st.arrived, 1);
        // Its commit: the old queue entry (version 0) commits nothing, the new one lands.
        assert!(st.land(c, 0).is_none());
        let (built, waited) = st.land(c, 1).unwrap();
        assert!(!waited);
        assert_eq!(*built.data, st.generator().generate(c));
        assert_eq!((st.arrived, st.in_flight.len()), (0, 0));
    }

    /// `awaited` counts the flights without their result.
    fn check_awaited(st: &state::State) {
        let waiting = st.blocks.flights().filter(|(_, f)| f.done.is_none());
        assert_eq!(st.blocks.awaited, waiting.count());
    }

    #[test]
    fn a_block_released_before_its_job_leaves_the_tick_is_never_built() {
        let kit = kit_with_pool();
        let mut st = kit.state.borrow_mut();
        let b = (1, ChunkPos::new(2, 2));
        st.dispatch_block(b, 2, 5);
        check_awaited(&st);
        st.release_block(b);
        st.submit();
        assert!(st.blocks.jobs.is_empty() && st.blocks.slots.is_empty());
        check_awaited(&st);
        let other = (2, ChunkPos::new(-1, 0));
        st.dispatch_block(other, 4, 6);
        st.submit();
        let done = st.pool.as_ref().unwrap().recv_block().unwrap();
        assert_eq!((done.level, done.block), other, "b was never built");
        // Its commit lands the block; a released block's queue entry commits nothing.
        st.take_block(done);
        assert!(st.land_block(b, 0).is_none());
        let (event, _) = st.land_block(other, 1).unwrap();
        let (step, data) = st.blocks.built(&other).unwrap();
        assert_eq!(*step, 4);
        assert_eq!(**data, st.generator().generate_block(other.1, 4, |_| None));
        assert_eq!(event["hash"], hash_text(data.hash()));
        assert!(st.blocks.flight(&other).is_none(), "landed");
        check_awaited(&st);
    }

    #[test]
    fn block_results_of_released_or_superseded_dispatches_are_discarded() {
        let kit = kit_with_pool();
        let mut st = kit.state.borrow_mut();
        let b = (1, ChunkPos::new(0, 3));
        st.dispatch_block(b, 2, 5); // version 0
        st.submit();
        st.release_block(b); // handed over: its result comes back
        let stale = st.pool.as_ref().unwrap().recv_block().unwrap();
        st.take_block(stale);
        assert!(st.blocks.slots.is_empty(), "discarded on arrival");
        check_awaited(&st);
        st.dispatch_block(b, 2, 9); // version 1
        st.submit();
        let fresh = st.pool.as_ref().unwrap().recv_block().unwrap();
        assert_eq!(fresh.version, 1);
        let old = pool::BlockDone {
            level: 1,
            block: b.1,
            version: 0,
            built: None,
        };
        st.take_block(old);
        assert!(
            st.blocks.flight(&b).unwrap().done.is_none(),
            "a stale version is dropped"
        );
        check_awaited(&st);
        st.take_block(fresh);
        assert!(st.blocks.flight(&b).unwrap().done.is_some());
        check_awaited(&st);
        // Dispatched again over an answered flight, then landed by building it here.
        st.dispatch_block(b, 2, 12); // version 2, its job not handed over
        check_awaited(&st);
        st.pool = None;
        assert!(st.land_block(b, 2).is_some());
        check_awaited(&st);
        assert_eq!(st.blocks.awaited, 0);
    }

    #[test]
    fn config_values_are_checked_with_their_paths() {
        for (v, key) in [
            (json!({"cellsPerChunk": 257}), "cellsPerChunk"),
            (json!({"workers": 65}), "workers"),
            (json!({"commitLatency": 0}), "commitLatency"),
            (json!({"seed": -1}), "seed"),
        ] {
            let err = from_value::<TerrainConfig>(&v, "kits[3].config").unwrap_err();
            assert_eq!(err.path, format!("kits[3].config.{key}"), "{err}");
        }
        let err = from_value::<TerrainConfig>(&json!({"sed": 1}), "c").unwrap_err();
        assert!(err.message.contains("unknown field `sed`"), "{err}");
    }
}
