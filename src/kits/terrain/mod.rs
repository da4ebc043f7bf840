//! `world.terrain` (SPEC §12): a world generated off the tick. Every chunk `world.streaming`
//! loads is dispatched to a worker pool; at the start of tick `T + commitLatency` (T the tick it
//! loaded) it is committed — waiting for its worker only if it is not done yet — so the event log
//! is the same whatever the threads did. The kit registers as a builder, so readiness (§11)
//! waits for terrain.
//!
//! - [`generate`]: the pure generator (heights and materials from the seed);
//! - [`pool`]: the worker threads and their queues;
//! - this file: config, the service, the commit, saves.

pub mod generate;
pub mod pool;
pub mod region;
mod save;
pub mod store;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::checked_number;
use crate::grid::{ChunkPos, Position};
use crate::host::{
    Ctx, Event, Install, Kit, KitError, KitManifest, KitSpec, PreparedSection, Problem, SceneDef,
    Services,
};
use crate::json::{as_integer, from_value};
use crate::kits::streaming::{BuilderId, ChunkEvent, StreamingService, STREAMING};

pub use generate::{ChunkData, Generator, GENERATOR_VERSION};
use pool::{Built, Job, Pool};
use region::Diff;
pub use save::{SaveSection, SavedChunk, SavedEdits};
use store::{Reported, Store};

/// The kit and service id.
pub const TERRAIN: &str = "world.terrain";
/// Event: a chunk's terrain was committed `{x, z, hash}` (hash: 16 hex digits of FNV-1a 64).
pub const TERRAIN_BUILT: &str = "world.terrain.built";
/// Variable: how many commits had to wait for their worker.
pub const VAR_WAITS: &str = "world.terrain.waits";
/// Event: an edit was refused `{x, z, reason}` (SPEC §13).
pub const EDIT_REFUSED: &str = "world.terrain.edit.refused";
/// Event: a built chunk must be rebuilt `{x, z}` (an edit in it or on its edge), once per tick.
pub const TERRAIN_CHANGED: &str = "world.terrain.changed";
/// Event: stored edits could not be read `{x, z, message}` (the chunk loads as generated), or a
/// region could not be written back `{x, z, region, chunks, message}` (`x`, `z`: the region's
/// first chunk; `region`: its file; `chunks`: how many of its chunks are not on disk; the edits
/// are kept in memory and written by the next write back that succeeds).
pub const TERRAIN_ERROR: &str = "world.terrain.error";

checked_number!(
    /// Cells per chunk side: an integer 1..=256.
    CellsPerChunk(u32),
    "an integer 1..=256",
    |v| as_integer(v).filter(|n| (1..=256).contains(n)).map(|n| n as u32),
    { "type": "integer", "minimum": 1, "maximum": 256, "description": "cells per chunk side" }
);

checked_number!(
    /// Worker threads: an integer 0..=64 (0: the available cores minus one, at least 1).
    Workers(u32),
    "an integer 0..=64",
    |v| as_integer(v).filter(|n| (0..=64).contains(n)).map(|n| n as u32),
    { "type": "integer", "minimum": 0, "maximum": 64, "description": "worker threads; 0: cores - 1, at least 1" }
);

checked_number!(
    /// Ticks from a load to its commit: an integer 1..=64.
    CommitLatency(u64),
    "an integer 1..=64",
    |v| as_integer(v).filter(|n| (1..=64).contains(n)).map(|n| n as u64),
    { "type": "integer", "minimum": 1, "maximum": 64, "description": "ticks from a chunk's load to its commit" }
);

checked_number!(
    /// The world seed: an integer 0..=2^64-1.
    Seed(u64),
    "an integer 0..=18446744073709551615",
    |v| v.as_u64(),
    { "type": "integer", "minimum": 0, "description": "the world seed" }
);

/// `{ "seed": 7, "cellsPerChunk": 32, "workers": 0, "commitLatency": 2 }`, every key optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TerrainConfig {
    /// The world seed (default 0).
    #[serde(default = "default_seed")]
    pub seed: Seed,
    /// Cells per chunk side (default 32).
    #[serde(default = "default_cells")]
    pub cells_per_chunk: CellsPerChunk,
    /// Worker threads (default 0: the available cores minus one, at least 1).
    #[serde(default = "default_workers")]
    pub workers: Workers,
    /// Ticks from a chunk's load to its commit (default 2).
    #[serde(default = "default_latency")]
    pub commit_latency: CommitLatency,
    /// Where modified chunks are kept (SPEC §13), relative to the scene file; without it they
    /// live in memory and in game saves.
    #[serde(default)]
    pub world_dir: Option<String>,
    /// Write back modified chunks on every tick that is a multiple of it (0: only on release,
    /// game save and close). Default 600.
    #[serde(default = "default_flush")]
    pub flush_every_ticks: FlushEvery,
}

checked_number!(
    /// Ticks between write-backs: an integer 0..=2147483647 (0: never periodically).
    FlushEvery(u64),
    "an integer 0..=2147483647",
    |v| as_integer(v).filter(|n| (0..=2_147_483_647).contains(n)).map(|n| n as u64),
    { "type": "integer", "minimum": 0, "maximum": 2147483647, "description": "ticks between write-backs; 0: only on release, save and close" }
);

fn default_flush() -> FlushEvery {
    FlushEvery(600)
}

fn default_seed() -> Seed {
    Seed(0)
}
fn default_cells() -> CellsPerChunk {
    CellsPerChunk(32)
}
fn default_workers() -> Workers {
    Workers(0)
}
fn default_latency() -> CommitLatency {
    CommitLatency(2)
}

impl Default for TerrainConfig {
    fn default() -> Self {
        TerrainConfig {
            seed: default_seed(),
            cells_per_chunk: default_cells(),
            workers: default_workers(),
            commit_latency: default_latency(),
            world_dir: None,
            flush_every_ticks: default_flush(),
        }
    }
}

impl TerrainConfig {
    /// The worker threads to start.
    pub fn worker_threads(&self) -> usize {
        match self.workers.0 {
            0 => std::thread::available_parallelism()
                .map_or(1, |n| n.get().saturating_sub(1))
                .max(1),
            n => n as usize,
        }
    }
}

/// The kit's manifest, read from `kit.json` beside this file.
pub fn manifest() -> KitManifest {
    serde_json::from_str(include_str!("kit.json")).expect("kit.json is a valid manifest")
}

/// A callback told of each committed chunk: `(chunk, hash)`.
pub type BuiltCallback = Box<dyn FnMut(ChunkPos, u64)>;

/// Why an edit was refused (the `reason` of `world.terrain.edit.refused`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EditRefused {
    /// The chunk is not loaded.
    #[error("not loaded")]
    NotLoaded,
    /// The chunk is loaded but its terrain is not committed yet.
    #[error("not built")]
    NotBuilt,
}

/// What `world.terrain` offers other kits, mods and tests.
pub trait TerrainService {
    /// The height (0..=65535) of the cell containing `pos`, if its chunk is built.
    fn height_at(&self, pos: Position) -> Option<u16>;
    /// The built terrain of a chunk.
    fn chunk(&self, chunk: ChunkPos) -> Option<Arc<ChunkData>>;
    /// Whether a chunk is built.
    fn is_built(&self, chunk: ChunkPos) -> bool;
    /// Calls `callback(chunk, hash)` on every commit, in subscription order.
    fn on_built(&self, callback: BuiltCallback);
    /// Cells per chunk side.
    fn cells_per_chunk(&self) -> u32;
    /// Chunks dispatched whose worker has not finished yet (work outstanding; 0: the pool is
    /// idle). A loading screen may show it; the simulation never waits on it.
    fn generating(&self) -> usize;
    /// Sets the cell containing `at` to `height` (and `material`, if given) in a built chunk
    /// (SPEC §13). The chunk becomes *modified* (saved) unless it is back to its generated
    /// baseline, and *dirty*: it and the built neighbours whose edge the cell lies on are told
    /// `world.terrain.changed` at the end of the tick. Setting a cell to what it already holds
    /// changes nothing. A chunk that is not built refuses: `world.terrain.edit.refused
    /// {x, z, reason}` is emitted and the reason returned.
    fn edit(&self, at: Position, height: u16, material: Option<u8>) -> Result<(), EditRefused>;
    /// Whether a built chunk differs from its generated baseline.
    fn is_modified(&self, chunk: ChunkPos) -> bool;
}

/// A chunk dispatched and not committed yet.
#[derive(Debug)]
struct Flight {
    version: u64,
    commit_at: u64,
    /// What its worker sent back, once it has (`Some(None)`: the worker failed, and the
    /// commit builds the chunk itself).
    done: Option<Option<Built>>,
}

struct State {
    config: TerrainConfig,
    chunk_size: f64,
    /// Built once, in [`Kit::start`], when the chunk size is known (see [`State::generator`]).
    generator: Option<Arc<Generator>>,
    /// The save thread (dropped after the pool, whose workers ask it).
    pool: Option<Pool>,
    store: Option<Store>,
    next_version: u64,
    /// Chunks dispatched and not committed, with their results once back (hashed: looked up
    /// on every result, commit and release; saves sort them).
    in_flight: FxHashMap<ChunkPos, Flight>,
    /// How many of `in_flight` have their result.
    arrived: usize,
    /// Commits due, in (tick, dispatch order): a queue, since dispatches come in that order
    /// (a commit tick is the dispatch tick plus a fixed latency).
    commits: VecDeque<(u64, u64, ChunkPos)>,
    /// Jobs dispatched this tick and released chunks' data, handed to the pool together at
    /// the end of the tick (one lock, at most one wake) or before waiting for a result.
    jobs: Vec<Job>,
    trash: Vec<Arc<ChunkData>>,
    /// Built chunks (hashed; saves list them in row order).
    built: FxHashMap<ChunkPos, Arc<ChunkData>>,
    /// Built chunks that differ from their baseline: the cells that differ (*modified*).
    diffs: BTreeMap<ChunkPos, Diff>,
    /// Built chunks whose stored form is behind (`diffs` changed since the last write back).
    unsaved: BTreeSet<ChunkPos>,
    /// Chunks released unsaved this tick, with their diffs (`None`: back to the baseline),
    /// written back together.
    released: Vec<(ChunkPos, Option<Diff>)>,
    /// Built chunks to rebuild (*dirty*): told `world.terrain.changed` at the end of the tick.
    dirty: BTreeSet<ChunkPos>,
    /// Stored edits found damaged, reported at the start of the next tick.
    errors: Vec<Reported>,
    /// The outcome of the last periodic write back, heard at the next one (its failures become
    /// `world.terrain.error` events then: the same tick whatever the threads' timing).
    outcome: Option<store::Outcome>,
    /// Whether the last outcome heard had regions not written (retried even with no new edit).
    failing: bool,
    /// Closed ([`TerrainKit::close`]): dropping the kit writes nothing more.
    closed: bool,
    waits: u64,
    builder: Option<(Rc<dyn StreamingService>, BuilderId)>,
    subscribers: Rc<RefCell<Vec<Rc<RefCell<BuiltCallback>>>>>,
    outbox: crate::host::Outbox,
}

impl State {
    fn dispatch(&mut self, chunk: ChunkPos, commit_at: u64) {
        self.send_released(); // before the job: its worker may ask for this chunk
        let version = self.next_version;
        self.next_version += 1;
        let flight = Flight {
            version,
            commit_at,
            done: None,
        };
        if let Some(old) = self.in_flight.insert(chunk, flight) {
            self.arrived -= usize::from(old.done.is_some());
        }
        // In order at the back, except after a load whose saved commits come later.
        let entry = (commit_at, version, chunk);
        if self
            .commits
            .back()
            .is_none_or(|&(t, v, _)| (t, v) < (commit_at, version))
        {
            self.commits.push_back(entry);
        } else {
            let at = self
                .commits
                .partition_point(|&(t, v, _)| (t, v) < (commit_at, version));
            self.commits.insert(at, entry);
        }
        self.jobs.push(Job { chunk, version });
    }

    fn release(&mut self, chunk: ChunkPos) {
        // A result still on its way is discarded when it arrives (its version is gone).
        if let Some(flight) = self.in_flight.remove(&chunk) {
            self.arrived -= usize::from(flight.done.is_some());
            // Not handed to the pool yet (dispatched this tick): never generated at all.
            self.jobs.retain(|j| j.chunk != chunk);
        }
        if let Some(data) = self.built.remove(&chunk) {
            self.trash.push(data); // freed by a worker, off the tick
        }
        self.dirty.remove(&chunk);
        let diff = self.diffs.remove(&chunk);
        // Written back on release (SPEC §13): gathered, and sent as one write at the end of
        // the tick — or before any dispatch, so that a reload asks the save thread after it
        // has the chunk (the thread answers in the order it is asked).
        if self.unsaved.remove(&chunk) {
            self.released.push((chunk, diff));
        }
    }

    /// Hands the tick's jobs and released data to the pool.
    fn submit(&mut self) {
        if let Some(pool) = &self.pool {
            pool.submit(&mut self.jobs, &mut self.trash);
        }
    }

    /// Sends the released chunks' write back, if any (one message, one rewrite a region).
    fn send_released(&mut self) {
        if !self.released.is_empty() {
            let changes = std::mem::take(&mut self.released);
            if let Some(store) = &self.store {
                store.write(changes);
            }
        }
    }

    /// The write back of every released and every unsaved chunk.
    fn take_unsaved(&mut self) -> Vec<(ChunkPos, Option<Diff>)> {
        let mut changes = std::mem::take(&mut self.released);
        changes.extend(
            std::mem::take(&mut self.unsaved)
                .into_iter()
                .map(|c| (c, self.diffs.get(&c).cloned())),
        );
        changes
    }

    /// Writes back every released and unsaved chunk and waits until it is stored. On failure
    /// the resident chunks stay unsaved (and the save thread, which has them all, retries
    /// their regions with every later write).
    fn flush(&mut self) -> Result<(), store::StoreError> {
        if self.store.is_none() {
            return Ok(());
        }
        let unsaved = self.unsaved.clone();
        let changes = self.take_unsaved();
        let store = self.store.as_ref().expect("checked above");
        let result = store.flush(changes);
        if result.is_err() {
            self.unsaved = unsaved;
        }
        result
    }

    /// The generator: built once, when the kit starts (the chunk size is the streaming kit's);
    /// nothing builds, edits or loads a save before that.
    fn generator(&self) -> &Arc<Generator> {
        self.generator
            .as_ref()
            .expect("the terrain kit is started before it builds, edits or loads")
    }

    /// Builds a chunk on this thread (a worker failed): the baseline and its stored diff.
    fn build_here(&self, chunk: ChunkPos) -> Built {
        Built::make(
            self.generator(),
            self.store.as_ref().and_then(Store::reader).as_ref(),
            chunk,
        )
    }

    /// Files a finished result with its flight if it is still wanted; drops a stale one.
    fn take(&mut self, done: pool::Done) {
        if let Some(flight) = self.in_flight.get_mut(&done.job.chunk) {
            if flight.version == done.job.version && flight.done.is_none() {
                flight.done = Some(done.built);
                self.arrived += 1;
            }
        }
    }

    /// Files every result the workers have sent back.
    fn drain(&mut self) {
        while let Some(done) = self.pool.as_ref().and_then(Pool::try_recv) {
            self.take(done);
        }
    }

    /// Commits the in-flight `chunk` if it is still the dispatch `version`, waiting for its
    /// worker if needed: its terrain and whether it waited.
    fn land(&mut self, chunk: ChunkPos, version: u64) -> Option<(Built, bool)> {
        let mut waited = false;
        loop {
            let flight = self
                .in_flight
                .get(&chunk)
                .filter(|f| f.version == version)?;
            if flight.done.is_some() {
                let flight = self.in_flight.remove(&chunk).expect("just found");
                self.arrived -= 1;
                let built = flight.done.flatten();
                return Some((built.unwrap_or_else(|| self.build_here(chunk)), waited));
            }
            waited = true;
            self.submit(); // the job may still be here
            match self.pool.as_ref().and_then(Pool::recv) {
                Some(done) => self.take(done),
                // No worker left (cannot happen while the pool lives): build here.
                None => {
                    self.in_flight.remove(&chunk);
                    return Some((self.build_here(chunk), waited));
                }
            }
        }
    }

    /// The chunk and cell `(i, j)` containing `pos`.
    fn cell_of(&self, pos: Position) -> (ChunkPos, u32, u32) {
        let size = self.chunk_size;
        let chunk = crate::grid::Grid::new(size).chunk_of(pos);
        let n = self.config.cells_per_chunk.0;
        let cell = size / f64::from(n);
        let local = |v: f64, c: i64| {
            let i = ((v - c as f64 * size) / cell).floor();
            (i.max(0.0) as u32).min(n - 1)
        };
        (chunk, local(pos.x, chunk.x), local(pos.z, chunk.z))
    }

    fn edit(&mut self, at: Position, height: u16, material: Option<u8>) -> Result<(), EditRefused> {
        let (chunk, i, j) = self.cell_of(at);
        let Some(data) = self.built.get_mut(&chunk) else {
            let loaded = self
                .builder
                .as_ref()
                .is_some_and(|(s, _)| s.is_loaded(chunk));
            return Err(if loaded {
                EditRefused::NotBuilt
            } else {
                EditRefused::NotLoaded
            });
        };
        let now = (data.height(i, j), data.material(i, j));
        let new = (height, material.unwrap_or(now.1));
        if new == now {
            return Ok(());
        }
        Arc::make_mut(data).set(i, j, new.0, new.1);
        let n = data.cells;
        let index = j * n + i;
        let baseline = self.generator().cell(chunk, i, j);
        let diff = self.diffs.entry(chunk).or_default();
        if new == baseline {
            diff.cells.remove(&index);
        } else {
            diff.cells.insert(index, new);
        }
        if diff.is_empty() {
            self.diffs.remove(&chunk);
        }
        self.unsaved.insert(chunk);
        // The chunk, and the neighbours across the edges (and corner) the cell lies on.
        let side = |k: u32| match (k == 0, k == n - 1) {
            (true, true) => vec![0, -1, 1],
            (true, false) => vec![0, -1],
            (false, true) => vec![0, 1],
            (false, false) => vec![0],
        };
        for dz in side(j) {
            for dx in side(i) {
                let c = ChunkPos::new(chunk.x + dx, chunk.z + dz);
                if self.built.contains_key(&c) {
                    self.dirty.insert(c);
                }
            }
        }
        Ok(())
    }
}

/// The service handle.
struct Handle(Rc<RefCell<State>>);

impl TerrainService for Handle {
    fn height_at(&self, pos: Position) -> Option<u16> {
        let st = self.0.borrow();
        let (chunk, i, j) = st.cell_of(pos);
        Some(st.built.get(&chunk)?.height(i, j))
    }

    fn chunk(&self, chunk: ChunkPos) -> Option<Arc<ChunkData>> {
        self.0.borrow().built.get(&chunk).cloned()
    }

    fn is_built(&self, chunk: ChunkPos) -> bool {
        self.0.borrow().built.contains_key(&chunk)
    }

    fn on_built(&self, callback: BuiltCallback) {
        let list = self.0.borrow().subscribers.clone();
        list.borrow_mut().push(Rc::new(RefCell::new(callback)));
    }

    fn cells_per_chunk(&self) -> u32 {
        self.0.borrow().config.cells_per_chunk.0
    }

    fn generating(&self) -> usize {
        let mut st = self.0.borrow_mut();
        st.submit(); // work dispatched outside a tick (a load) is outstanding too
        st.drain();
        st.in_flight.len() - st.arrived
    }

    fn edit(&self, at: Position, height: u16, material: Option<u8>) -> Result<(), EditRefused> {
        let mut st = self.0.borrow_mut();
        let result = st.edit(at, height, material);
        if let Err(reason) = result {
            let (chunk, _, _) = st.cell_of(at);
            st.outbox.borrow_mut().push((
                EDIT_REFUSED.into(),
                serde_json::json!({ "x": chunk.x, "z": chunk.z, "reason": reason.to_string() })
                    .into(),
            ));
        }
        result
    }

    fn is_modified(&self, chunk: ChunkPos) -> bool {
        self.0.borrow().diffs.contains_key(&chunk)
    }
}

/// The kit.
pub struct TerrainKit {
    state: Rc<RefCell<State>>,
    published: Option<u64>,
}

/// The hash as events and saves write it.
pub fn hash_text(hash: u64) -> String {
    format!("{hash:016x}")
}

impl TerrainKit {
    /// The catalog factory.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let mut config: TerrainConfig = match spec.config {
            None => TerrainConfig::default(),
            Some(v) => from_value(v, &spec.config_path).map_err(|p| vec![p])?,
        };
        if let Some(dir) = &config.world_dir {
            if dir.is_empty() {
                return Err(vec![Problem::new(
                    crate::json::join_path(&spec.config_path, "worldDir"),
                    "expected a directory path, got an empty string",
                )]);
            }
            // Relative to the scene file, as mod paths are.
            let base = spec.base_dir;
            if std::path::Path::new(dir).is_relative() && !matches!(base.to_str(), Some("" | ".")) {
                config.world_dir = Some(base.join(dir).to_string_lossy().into_owned());
            }
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

    /// Reports damaged stored edits found when the world directory was opened or loaded.
    fn report_errors(&mut self, ctx: &mut Ctx<'_>) {
        let errors = std::mem::take(&mut self.state.borrow_mut().errors);
        for e in errors {
            ctx.events.emit(
                TERRAIN_ERROR,
                serde_json::json!({ "x": e.chunk.x, "z": e.chunk.z, "message": e.message }),
            );
        }
    }

    /// Tells builders which chunks changed this tick, once each, row order.
    fn report_changed(&mut self, ctx: &mut Ctx<'_>) {
        if self.state.borrow().dirty.is_empty() {
            return;
        }
        let dirty = std::mem::take(&mut self.state.borrow_mut().dirty);
        for c in dirty {
            ctx.events.emit(TERRAIN_CHANGED, crate::host::chunk_data(c));
        }
    }

    fn publish(&mut self, ctx: &mut Ctx<'_>) {
        let waits = self.state.borrow().waits;
        if self.published != Some(waits) {
            ctx.variables.set(VAR_WAITS, waits);
            self.published = Some(waits);
        }
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
                    ctx.events.emit(
                        TERRAIN_ERROR,
                        serde_json::json!({
                            "x": origin.x,
                            "z": origin.z,
                            "region": f.file,
                            "chunks": f.chunks,
                            "message": format!(
                                "cannot write {}: {}; its edits are kept in memory and written \
                                 at the next write back",
                                f.file, f.message
                            ),
                        }),
                    );
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
            st.config.seed.0,
            st.config.cells_per_chunk.0,
            st.chunk_size,
        ));
        st.generator = Some(generator.clone());
        let id = streaming
            .register_builder(TERRAIN)
            .expect("the first builders fit");
        st.builder = Some((streaming, id));
        let fail = |message: String| KitError::Start {
            kit: TERRAIN.into(),
            message,
        };
        let dir = st.config.world_dir.clone().map(std::path::PathBuf::from);
        let (store, damage) = Store::start(dir, generator.stamp()).map_err(|e| match e {
            store::StoreError::Locked { dir, lock } => KitError::InUse {
                kit: TERRAIN.into(),
                what: "world directory".into(),
                dir,
                lock,
            },
            e => fail(e.to_string()),
        })?;
        let pool = Pool::new(st.config.worker_threads(), generator, store.reader())
            .map_err(|e| fail(format!("cannot start the worker threads: {e}")))?;
        st.errors = damage;
        st.store = Some(store);
        st.pool = Some(pool);
        Ok(())
    }

    fn on_event(&mut self, event: &Event, _ctx: &mut Ctx<'_>) {
        let Some((chunk, loaded)) = event.chunk() else {
            return;
        };
        let mut st = self.state.borrow_mut();
        if loaded {
            let at = event.tick + st.config.commit_latency.0;
            st.dispatch(chunk, at);
        } else {
            st.release(chunk);
        }
    }

    fn on_leave(&mut self, _ctx: &mut Ctx<'_>) {
        // The streaming kit releases every chunk (events follow); nothing else to forget.
    }

    fn on_enter(&mut self, _scene: &SceneDef, _ctx: &mut Ctx<'_>) {}

    fn begin_tick(&mut self, ctx: &mut Ctx<'_>) {
        self.report_errors(ctx);
        self.commit(ctx);
    }

    fn end_tick(&mut self, ctx: &mut Ctx<'_>) {
        self.report_changed(ctx);
        let every = self.state.borrow().config.flush_every_ticks.0;
        if every > 0 && ctx.tick.is_multiple_of(every) {
            self.write_back(ctx);
        }
        let mut st = self.state.borrow_mut();
        st.send_released();
        st.submit(); // the tick's jobs and released data: one lock, at most one wake
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
    ) -> Result<Option<PreparedSection>, Problem> {
        let prepared = save::prepare(&self.state.borrow(), section)?;
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
        let loaded: BTreeSet<ChunkPos> = streaming.loaded().into_iter().collect();
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
        let at = ctx.tick + st.config.commit_latency.0;
        for c in loaded {
            if !st.built.contains_key(&c) && !st.in_flight.contains_key(&c) {
                st.dispatch(c, at);
            }
            streaming.set_built(id, c, st.built.contains_key(&c));
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
