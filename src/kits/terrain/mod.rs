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

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::checked_number;
use crate::grid::{ChunkPos, Position};
use crate::host::{
    Ctx, Event, Install, Kit, KitError, KitManifest, KitSpec, PreparedSection, Problem, SceneDef,
    Services, CHUNK_LOADED, CHUNK_UNLOADED,
};
use crate::json::{as_integer, from_value};
use crate::kits::streaming::{BuilderId, StreamingService, STREAMING};

pub use generate::{ChunkData, Generator, GENERATOR_VERSION};
use pool::{Job, Pool};

/// The kit and service id.
pub const TERRAIN: &str = "world.terrain";
/// Event: a chunk's terrain was committed `{x, z, hash}` (hash: 16 hex digits of FNV-1a 64).
pub const TERRAIN_BUILT: &str = "world.terrain.built";
/// Variable: how many commits had to wait for their worker.
pub const VAR_WAITS: &str = "world.terrain.waits";

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
    /// Where edits are kept (SPEC §13; not in this build: setting it is an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_dir: Option<String>,
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
}

/// A chunk dispatched and not committed yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flight {
    version: u64,
    commit_at: u64,
}

struct State {
    config: TerrainConfig,
    chunk_size: f64,
    generator: Arc<Generator>,
    pool: Option<Pool>,
    next_version: u64,
    in_flight: BTreeMap<ChunkPos, Flight>,
    /// Commits due, in order: (tick, dispatch order) → chunk and version.
    commits: BTreeMap<(u64, u64), (ChunkPos, u64)>,
    /// Results that came back before their commit, by chunk (the version tells a stale one;
    /// `None`: the worker failed and the commit generates the chunk itself).
    arrived: FxHashMap<ChunkPos, (u64, Option<ChunkData>)>,
    built: BTreeMap<ChunkPos, Arc<ChunkData>>,
    waits: u64,
    builder: Option<(Rc<dyn StreamingService>, BuilderId)>,
    subscribers: Rc<RefCell<Vec<Rc<RefCell<BuiltCallback>>>>>,
}

impl State {
    fn dispatch(&mut self, chunk: ChunkPos, commit_at: u64) {
        let version = self.next_version;
        self.next_version += 1;
        self.in_flight.insert(chunk, Flight { version, commit_at });
        self.commits.insert((commit_at, version), (chunk, version));
        if let Some(pool) = &self.pool {
            pool.dispatch(Job { chunk, version });
        }
    }

    fn release(&mut self, chunk: ChunkPos) {
        // A result still on its way is discarded when it arrives (its version is gone).
        self.in_flight.remove(&chunk);
        self.arrived.remove(&chunk);
        if let (Some(data), Some(pool)) = (self.built.remove(&chunk), &self.pool) {
            pool.discard(data); // freed by a worker, off the tick
        }
    }

    /// Files every finished result that is still wanted; drops stale ones.
    fn take(&mut self, done: pool::Done) {
        let current = self.in_flight.get(&done.job.chunk).map(|f| f.version);
        if current == Some(done.job.version) {
            self.arrived
                .insert(done.job.chunk, (done.job.version, done.data));
        }
    }

    /// The data of an in-flight chunk, waiting for its worker if needed; `true` if it waited.
    fn result(&mut self, chunk: ChunkPos, version: u64) -> (ChunkData, bool) {
        while let Some(done) = self.pool.as_ref().and_then(Pool::try_recv) {
            self.take(done);
        }
        let mut waited = false;
        loop {
            if let Some((v, _)) = self.arrived.get(&chunk) {
                if *v == version {
                    let (_, data) = self.arrived.remove(&chunk).expect("just found");
                    let data = data.unwrap_or_else(|| self.generator.generate(chunk));
                    return (data, waited);
                }
            }
            waited = true;
            match self.pool.as_ref().and_then(Pool::recv) {
                Some(done) => self.take(done),
                // No worker left (cannot happen while the pool lives): generate here.
                None => return (self.generator.generate(chunk), waited),
            }
        }
    }
}

/// The service handle.
struct Handle(Rc<RefCell<State>>);

impl TerrainService for Handle {
    fn height_at(&self, pos: Position) -> Option<u16> {
        let st = self.0.borrow();
        let size = st.chunk_size;
        let chunk = crate::grid::Grid::new(size).chunk_of(pos);
        let data = st.built.get(&chunk)?;
        let n = data.cells;
        let cell = size / f64::from(n);
        let local = |v: f64, c: i64| {
            let i = ((v - c as f64 * size) / cell).floor();
            (i.max(0.0) as u32).min(n - 1)
        };
        Some(data.height(local(pos.x, chunk.x), local(pos.z, chunk.z)))
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
        while let Some(done) = st.pool.as_ref().and_then(Pool::try_recv) {
            st.take(done);
        }
        st.in_flight.len() - st.arrived.len()
    }
}

/// The kit.
pub struct TerrainKit {
    state: Rc<RefCell<State>>,
    published: Option<u64>,
}

/// A saved chunk: `{x, z}` plus its commit tick (in flight) or its hash (built).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SavedChunk {
    /// Chunk column.
    pub x: i64,
    /// Chunk row.
    pub z: i64,
    /// In flight: the tick it commits at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_at: Option<u64>,
    /// Built: its hash (16 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// The kit's save section: the generator stamp, the chunks in flight (in commit order) and the
/// built ones (row order), the wait count. Data is never saved: it is regenerated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SaveSection {
    /// The generator version that built the chunks.
    pub generator: u32,
    /// The seed.
    pub seed: u64,
    /// Chunks dispatched and not committed, in commit order.
    pub in_flight: Vec<SavedChunk>,
    /// Built chunks, row order.
    pub built: Vec<SavedChunk>,
    /// `world.terrain.waits`.
    pub waits: u64,
}

struct Prepared {
    in_flight: Vec<(ChunkPos, u64)>,
    built: Vec<(ChunkPos, ChunkData)>,
    waits: u64,
}

/// The hash as events and saves write it.
pub fn hash_text(hash: u64) -> String {
    format!("{hash:016x}")
}

impl TerrainKit {
    /// The catalog factory.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let config: TerrainConfig = match spec.config {
            None => TerrainConfig::default(),
            Some(v) => from_value(v, &spec.config_path).map_err(|p| vec![p])?,
        };
        if config.world_dir.is_some() {
            return Err(vec![Problem::new(
                crate::json::join_path(&spec.config_path, "worldDir"),
                "world files (SPEC §13) are not supported by this build; remove worldDir",
            )]);
        }
        Ok(Box::new(TerrainKit::new(config)))
    }

    /// A kit with `config` (the pool starts with the game).
    pub fn new(config: TerrainConfig) -> Self {
        let generator = Arc::new(Generator::new(
            config.seed.0,
            config.cells_per_chunk.0,
            32.0,
        ));
        TerrainKit {
            state: Rc::new(RefCell::new(State {
                config,
                chunk_size: 32.0,
                generator,
                pool: None,
                next_version: 0,
                in_flight: BTreeMap::new(),
                commits: BTreeMap::new(),
                arrived: FxHashMap::default(),
                built: BTreeMap::new(),
                waits: 0,
                builder: None,
                subscribers: Rc::default(),
            })),
            published: None,
        }
    }

    /// Commits the chunks due at `tick`, in dispatch order.
    fn commit(&mut self, ctx: &mut Ctx<'_>) {
        loop {
            let next = {
                let mut st = self.state.borrow_mut();
                let Some((&(at, seq), &(chunk, version))) = st.commits.first_key_value() else {
                    break;
                };
                if at > ctx.tick {
                    break;
                }
                st.commits.remove(&(at, seq));
                if st.in_flight.get(&chunk).map(|f| f.version) != Some(version) {
                    continue; // released (or reloaded) since: nothing to commit
                }
                let (data, waited) = st.result(chunk, version);
                st.waits += u64::from(waited);
                st.in_flight.remove(&chunk);
                let hash = data.hash();
                st.built.insert(chunk, Arc::new(data));
                (chunk, hash, st.builder.clone(), st.subscribers.clone())
            };
            let (chunk, hash, builder, subscribers) = next;
            ctx.events.emit(
                TERRAIN_BUILT,
                crate::host::chunk_hash_data(chunk, hash), // {x, z, hash: hash_text(hash)}
            );
            if let Some((streaming, id)) = builder {
                streaming.set_built(id, chunk, true);
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

    fn publish(&mut self, ctx: &mut Ctx<'_>) {
        let waits = self.state.borrow().waits;
        if self.published != Some(waits) {
            ctx.variables.set(VAR_WAITS, waits);
            self.published = Some(waits);
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
        st.generator = Arc::new(Generator::new(
            st.config.seed.0,
            st.config.cells_per_chunk.0,
            st.chunk_size,
        ));
        let id = streaming
            .register_builder(TERRAIN)
            .expect("the first builders fit");
        st.builder = Some((streaming, id));
        let pool = Pool::new(st.config.worker_threads(), st.generator.clone()).map_err(|e| {
            KitError::Start {
                kit: TERRAIN.into(),
                message: format!("cannot start the worker threads: {e}"),
            }
        })?;
        st.pool = Some(pool);
        Ok(())
    }

    fn on_event(&mut self, event: &Event, _ctx: &mut Ctx<'_>) {
        let chunk = || {
            ChunkPos::new(
                event.data["x"].as_i64().unwrap_or(0),
                event.data["z"].as_i64().unwrap_or(0),
            )
        };
        if event.event == CHUNK_LOADED {
            let mut st = self.state.borrow_mut();
            let at = event.tick + st.config.commit_latency.0;
            st.dispatch(chunk(), at);
        } else if event.event == CHUNK_UNLOADED {
            self.state.borrow_mut().release(chunk());
        }
    }

    fn on_leave(&mut self, _ctx: &mut Ctx<'_>) {
        // The streaming kit releases every chunk (events follow); nothing else to forget.
    }

    fn on_enter(&mut self, _scene: &SceneDef, _ctx: &mut Ctx<'_>) {}

    fn begin_tick(&mut self, ctx: &mut Ctx<'_>) {
        self.commit(ctx);
    }

    fn end_tick(&mut self, ctx: &mut Ctx<'_>) {
        // The tick's dispatches only queued their jobs: one wake for all of them.
        if let Some(pool) = &self.state.borrow().pool {
            pool.wake();
        }
        self.publish(ctx);
    }

    fn save(&self) -> Option<serde_json::Value> {
        let st = self.state.borrow();
        let mut in_flight: Vec<(u64, u64, ChunkPos)> = st
            .in_flight
            .iter()
            .map(|(c, f)| (f.commit_at, f.version, *c))
            .collect();
        in_flight.sort();
        let section = SaveSection {
            generator: GENERATOR_VERSION,
            seed: st.config.seed.0,
            in_flight: in_flight
                .into_iter()
                .map(|(at, _, c)| SavedChunk {
                    x: c.x,
                    z: c.z,
                    commit_at: Some(at),
                    hash: None,
                })
                .collect(),
            built: st
                .built
                .iter()
                .map(|(c, d)| SavedChunk {
                    x: c.x,
                    z: c.z,
                    commit_at: None,
                    hash: Some(hash_text(d.hash())),
                })
                .collect(),
            waits: st.waits,
        };
        Some(serde_json::to_value(section).expect("plain data"))
    }

    fn prepare_load(
        &self,
        section: Option<&serde_json::Value>,
        _scene: Option<&SceneDef>,
    ) -> Result<Option<PreparedSection>, Problem> {
        let path = format!("kits.{TERRAIN}");
        let section = section.ok_or_else(|| Problem::new(&path, "missing section"))?;
        let s: SaveSection = from_value(section, &path)?;
        let st = self.state.borrow();
        if s.generator != GENERATOR_VERSION || s.seed != st.config.seed.0 {
            return Err(Problem::new(
                format!("{path}.generator"),
                format!(
                    "written by generator {} with seed {}; this scene has generator {} with seed {}: \
                     its chunks would differ",
                    s.generator, s.seed, GENERATOR_VERSION, st.config.seed.0
                ),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut in_flight = Vec::new();
        for (i, c) in s.in_flight.iter().enumerate() {
            let p = format!("{path}.inFlight[{i}]");
            let chunk = ChunkPos::new(c.x, c.z);
            let at = c
                .commit_at
                .ok_or_else(|| Problem::new(&p, "expected `commitAt`"))?;
            if c.hash.is_some() || !seen.insert(chunk) {
                return Err(Problem::new(
                    p,
                    format!("chunk {chunk} is listed twice or has a hash"),
                ));
            }
            in_flight.push((chunk, at));
        }
        let mut built = Vec::new();
        for (i, c) in s.built.iter().enumerate() {
            let p = format!("{path}.built[{i}]");
            let chunk = ChunkPos::new(c.x, c.z);
            if c.commit_at.is_some() || !seen.insert(chunk) {
                return Err(Problem::new(
                    p,
                    format!("chunk {chunk} is listed twice or has `commitAt`"),
                ));
            }
            let data = st.generator.generate(chunk);
            let hash = hash_text(data.hash());
            if c.hash.as_deref() != Some(hash.as_str()) {
                return Err(Problem::new(
                    format!("{p}.hash"),
                    format!(
                        "expected {hash} (the chunk as this generator builds it), got {:?}",
                        c.hash
                    ),
                ));
            }
            built.push((chunk, data));
        }
        Ok(Some(Box::new(Prepared {
            in_flight,
            built,
            waits: s.waits,
        })))
    }

    fn after_load(&mut self, ctx: &mut Ctx<'_>) {
        // The saved terrain must match the saved loaded set; a hand-edited save may not. Bring
        // it in step without events: a loaded chunk that is neither built nor in flight is
        // dispatched now, and terrain of a chunk that is not loaded is dropped.
        let mut st = self.state.borrow_mut();
        let Some((streaming, id)) = st.builder.clone() else {
            return;
        };
        let loaded: std::collections::BTreeSet<ChunkPos> = streaming.loaded().into_iter().collect();
        let stale: Vec<ChunkPos> = st
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
    }

    fn commit_load(&mut self, prepared: Option<PreparedSection>, _ctx: &mut Ctx<'_>) {
        let p = prepared
            .and_then(|p| p.downcast::<Prepared>().ok())
            .expect("prepared by prepare_load");
        self.published = None;
        let mut st = self.state.borrow_mut();
        // Results of the old run's jobs are stale from here on (their versions are gone).
        st.in_flight.clear();
        st.commits.clear();
        st.arrived.clear();
        st.built = p.built.into_iter().map(|(c, d)| (c, Arc::new(d))).collect();
        st.waits = p.waits;
        for (chunk, at) in p.in_flight {
            st.dispatch(chunk, at);
        }
        if let Some((streaming, id)) = st.builder.clone() {
            for c in st.built.keys() {
                streaming.set_built(id, *c, true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_manifest_documents_every_config_key_with_its_default() {
        let m = manifest();
        assert_eq!(
            (m.id.as_str(), m.version.to_string()),
            (TERRAIN, "1.0.0".to_owned())
        );
        let schema = serde_json::to_value(schemars::schema_for!(TerrainConfig)).unwrap();
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        let documented: Vec<&String> = m.config.keys().collect();
        assert_eq!(keys, documented);
        let defaults = serde_json::to_value(TerrainConfig::default()).unwrap();
        for (key, doc) in &m.config {
            assert_eq!(
                defaults.get(key).unwrap_or(&json!(null)),
                &doc["default"],
                "{key}"
            );
        }
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
