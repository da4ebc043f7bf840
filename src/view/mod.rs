//! The replay viewer (SPEC §14): `world-streaming view REPLAY --out view.html` writes one
//! self-contained page (inline JS and CSS, the data embedded, no network) that shows a recorded
//! run tick by tick — the grid with loaded, pending, load-refused and unload-refused chunks, the
//! foci, tickets, dormant entities and terrain heights when the run has them, and each tick's
//! events — with Start / Pause / Reset / Step, a tick slider and keys.
//!
//! A recording holds the scene, mods and inputs, not the states, so the viewer re-runs it in the
//! engine (as `replay` does), checks every tick's digest against the recording (a page of a run
//! that does not reproduce would show something else than what happened), and captures what
//! changed after every tick. The page gets one *frame* per tick, each the difference from the
//! previous tick, so a 10 000-tick run at radius 32 stays a few megabytes:
//! - the loaded set changes by the tick's `world.chunk.loaded`/`unloaded` events (which the frame
//!   carries anyway for the side list) plus a correction for the rest (a `load` of a save
//!   restores chunks without events);
//! - the pending set changes by the chunks those events loaded plus a delta;
//! - the small lists (refusals, foci, tickets, dormant entities, variables, scene) are written
//!   whole on the ticks they change.
//!
//! The state fields of SPEC §11 (`foci`, `tickets`) are read from the state document when it
//! has them, so a run with many foci shows them without a change here; terrain heights come
//! from a [`HeightProbe`] the caller passes ([`terrain_height`] for `world.terrain`).
//!
//! Round 3 adds, each read from the engine after every tick: SPEC §16's predicted foci (the
//! state's `predicted`) and hole cells ([`crate::kits::streaming::StreamingService::hole_chunks`],
//! the chunks `world.chunks.holes` counts), and SPEC §15's live entities by kind (player,
//! vehicle, district entity, other; a per-id delta, a move costing its index and position) with
//! the state's `district` counts. The page opens on [`ViewData::start`], the first tick with a
//! loaded chunk.
//!
//! With `world.nav` (SPEC §18), each frame also carries the agents' state as the kit holds it
//! ([`crate::kits::nav::NavService::agents`]): goal cell, the cells still to step into, the chunk
//! a wait is on, the stuck mark, arrival — whole when it changes, a count of cells when an
//! agent only stepped along its path — and the page gets the terrain's `cellsPerChunk` to place
//! the cells. A run without the kit carries none of it (its data is as before).
//!
//! The page itself lives in `page.html`, `view.css` and `view.js` beside this file.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::files::FileError;
use crate::game::{Game, GameError};
use crate::grid::ChunkPos;
use crate::host::PLAYER_TAG;
use crate::host::{Event, EventData};
use crate::kits::district::{DistrictService, DISTRICT};
use crate::kits::nav::{AgentView, NavService, NAV};
use crate::kits::streaming::dormancy::DORMANT;
use crate::kits::streaming::{CHUNK_LOADED, CHUNK_UNLOADED, LOD_LOADED, LOD_UNLOADED};
use crate::kits::terrain::{ChunkData, TerrainService, TERRAIN, TERRAIN_CHANGED, VAR_WAITS};
use crate::replay::{compare, Divergence, Recording, Step, Verdict};

/// The `format` of the data embedded in a page.
pub const VIEW_FORMAT: &str = "world-streaming-view";

/// The tag the page draws as a vehicle (as does an entity someone rides).
const VEHICLE_TAG: &str = "vehicle";

const PAGE: &str = include_str!("page.html");
const CSS: &str = include_str!("view.css");
const JS: &str = include_str!("view.js");

/// Why a page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The replay file could not be read.
    #[error(transparent)]
    Replay(#[from] FileError),
    /// The recorded game could not be built or run.
    #[error(transparent)]
    Game(#[from] GameError),
    /// The recording does not reproduce on this build: the page would show another run.
    #[error("the replay does not reproduce on this build, so a page would not show the recorded run:\n{0}")]
    Differs(Box<Divergence>),
}

/// The height of a chunk (e.g. its terrain's mean height), asked once per chunk when it loads;
/// `None` while it has none (e.g. its terrain is not built yet). [`terrain_height`] is the one of
/// `world.terrain`.
pub type HeightProbe<'a> = dyn Fn(&Game, ChunkPos) -> Option<f64> + 'a;

/// The probe of `world.terrain`: a built chunk's mean cell height (0..=65535, rounded down), as
/// the demo's map shades it; `None` while the chunk is not built or without the kit.
pub fn terrain_height(game: &Game, chunk: ChunkPos) -> Option<f64> {
    let terrain = game.engine().service::<dyn TerrainService>(TERRAIN)?;
    Some(mean_height(&*terrain.chunk(chunk)?))
}

/// The height of a LOD block (SPEC §17) of `level` (1 = the first `lod` entry): the mean of
/// its built cells ([`TerrainService::lod_block`], cell `(i, j)` = the full-resolution cell
/// `(i·s, j·s)`), rounded down as [`terrain_height`]'s; `None` while the block is not built or
/// without `world.terrain`. [`capture`] asks it of every loaded block when it is given a
/// chunk probe.
pub fn terrain_block_height(game: &Game, level: u32, block: ChunkPos) -> Option<f64> {
    let terrain = game.engine().service::<dyn TerrainService>(TERRAIN)?;
    Some(mean_height(&*terrain.lod_block(level, block.x, block.z)?))
}

/// The mean cell height of a built field, rounded down.
fn mean_height(data: &ChunkData) -> f64 {
    let n = data.cells;
    let sum: u64 = (0..n)
        .flat_map(|j| (0..n).map(move |i| (i, j)))
        .map(|(i, j)| u64::from(data.height(i, j)))
        .sum();
    (sum / u64::from(n * n).max(1)) as f64
}

/// Whether a recording's scene enables `world.terrain` (then [`terrain_height`] is worth asking).
pub fn has_terrain(recording: &Recording) -> bool {
    recording.scene["kits"]
        .as_array()
        .is_some_and(|kits| kits.iter().any(|k| k["id"] == TERRAIN))
}

/// Everything the page shows, as embedded in it.
#[derive(Debug, Clone, Serialize)]
pub struct ViewData {
    /// Always [`VIEW_FORMAT`].
    pub format: &'static str,
    /// Version 1.
    pub version: u32,
    /// What the page is titled (the replay's file name).
    pub title: String,
    /// `chunkSize` in metres (to place foci and entities inside their chunks).
    #[serde(rename = "chunkSize")]
    pub chunk_size: f64,
    /// The frame the page opens on: the first that shows a loaded chunk, else the first that
    /// shows anything (pending chunks, refusals, foci, tickets, entities), else 0.
    pub start: u64,
    /// How many ticks ran (the frames after the first). Ticks usually count 1, 2, 3, …; a `load`
    /// input sets the counter to the save's tick, and the frame after says so in `t`.
    pub ticks: u64,
    /// Event names, indexed by the frames.
    pub names: Vec<String>,
    /// Entity ids, indexed by the frames' entity records, in the order they first appear.
    pub ids: Vec<String>,
    /// One frame per tick run, after the frame of the state before tick 1.
    pub frames: Vec<Frame>,
    /// With `world.nav` (SPEC §18): the terrain's cells per chunk side, to place the agents'
    /// path cells (cell `(x, z)`'s centre is `((x + 0.5)·s, (z + 0.5)·s)`, `s = chunkSize /
    /// cellsPerChunk`). Absent without the kit.
    #[serde(rename = "cellsPerChunk", skip_serializing_if = "Option::is_none")]
    pub cells_per_chunk: Option<u32>,
}

/// What changed at one tick. Chunk lists are flat `[x0, z0, x1, z1, …]`; empty fields are left
/// out of the page.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Frame {
    /// The tick, when it is not the previous frame's plus one (after a `load`).
    #[serde(rename = "t", skip_serializing_if = "Option::is_none")]
    pub tick: Option<u64>,
    /// The tick's events: `[name, x, z]` for chunk-shaped payloads, `[name, data]` otherwise.
    #[serde(rename = "e", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    /// Chunks loaded that the events do not account for.
    #[serde(rename = "la", skip_serializing_if = "Vec::is_empty")]
    pub loaded_add: Vec<i64>,
    /// Chunks released that the events do not account for.
    #[serde(rename = "lr", skip_serializing_if = "Vec::is_empty")]
    pub loaded_remove: Vec<i64>,
    /// Chunks that became pending.
    #[serde(rename = "pa", skip_serializing_if = "Vec::is_empty")]
    pub pending_add: Vec<i64>,
    /// Chunks no longer pending, other than those the events loaded.
    #[serde(rename = "pr", skip_serializing_if = "Vec::is_empty")]
    pub pending_remove: Vec<i64>,
    /// The held refusals, when they changed: `[x, z, "load" | "unload", mod, reason]`.
    #[serde(rename = "r", skip_serializing_if = "Option::is_none")]
    pub refusals: Option<Vec<Value>>,
    /// The foci, when they changed: `[x0, z0, x1, z1, …]` in metres.
    #[serde(rename = "f", skip_serializing_if = "Option::is_none")]
    pub foci: Option<Vec<f64>>,
    /// The tickets, when they changed: `[id, x, z, radius, ticksLeft]`.
    #[serde(rename = "k", skip_serializing_if = "Option::is_none")]
    pub tickets: Option<Vec<Value>>,
    /// The dormant entities, when they changed: `[id, x, z]` (their position in metres).
    #[serde(rename = "d", skip_serializing_if = "Option::is_none")]
    pub dormant: Option<Vec<Value>>,
    /// Heights of loaded chunks that got one this tick (their terrain was built): `[x, z,
    /// height, …]`. A chunk's height is forgotten when it is released.
    #[serde(rename = "h", skip_serializing_if = "Vec::is_empty")]
    pub heights: Vec<f64>,
    /// Variables whose value changed.
    #[serde(rename = "v", skip_serializing_if = "Map::is_empty")]
    pub variables: Map<String, Value>,
    /// The active scene, when it changed (`null` outside a scene).
    #[serde(rename = "s", skip_serializing_if = "Option::is_none")]
    pub scene: Option<Value>,
    /// The predicted foci of SPEC §16 (the state's `predicted`), when they changed: `[x0, z0,
    /// …]` in metres, anchor order.
    #[serde(rename = "p", skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Vec<f64>>,
    /// The hole cells of SPEC §16 (the chunks `world.chunks.holes` counts), when they changed:
    /// flat, row order. Never set when the scene does not use §16.
    #[serde(rename = "o", skip_serializing_if = "Option::is_none")]
    pub holes: Option<Vec<i64>>,
    /// Live entities that appeared or changed other than by moving: `[id, kind, x, z, tags,
    /// data]`, `id` an index into [`ViewData::ids`], kind `"p"` (a player: tagged `player` or
    /// controlled), `"v"` (a vehicle: tagged `vehicle` or ridden), `"d"` (a district entity) or
    /// `"e"` (any other), `data` `null` when it has none.
    #[serde(rename = "n", skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<Value>,
    /// Live entities that only moved: `[id0, x0, z0, id1, …]` (ids as in `n`).
    #[serde(rename = "m", skip_serializing_if = "Vec::is_empty")]
    pub entities_moved: Vec<Value>,
    /// The entities no longer live (ids as in `n`).
    #[serde(rename = "nr", skip_serializing_if = "Vec::is_empty")]
    pub entities_removed: Vec<usize>,
    /// The state's `district` counts `[live, stored]` (SPEC §15), when they changed.
    #[serde(rename = "c", skip_serializing_if = "Option::is_none")]
    pub district: Option<[u64; 2]>,
    /// `world.nav`'s agents (SPEC §18) whose state appeared or changed other than by stepping:
    /// `[id, goalX, goalZ, path, wait, stuck, arrived]`, `id` an index into [`ViewData::ids`],
    /// the goal a cell, `path` the cells still to step into (flat `[x0, z0, …]`, next first),
    /// `wait` the chunk `[x, z]` its wait is on or `null`, `stuck` `"none"` / `"budget"` or
    /// `null`, `arrived` a boolean.
    #[serde(rename = "a", skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<Value>,
    /// Agents whose only change is that their path lost its first cells (they stepped):
    /// `[id0, cells0, id1, …]`.
    #[serde(rename = "as", skip_serializing_if = "Vec::is_empty")]
    pub agents_stepped: Vec<u64>,
    /// Agents whose state the kit dropped (no goal any more, or gone).
    #[serde(rename = "ar", skip_serializing_if = "Vec::is_empty")]
    pub agents_removed: Vec<usize>,
    /// SPEC §17, only in a run that uses `lod`: the step (block side in chunks) of each level
    /// (level 1 first) when they changed, `null` for a level that still holds blocks but is no
    /// longer in force. The blocks follow the tick's `world.lod.loaded` / `unloaded` events
    /// (written `[name, x, z, level]`), which load a block not built and without a height, and
    /// the fields below.
    #[serde(rename = "ls", skip_serializing_if = "Option::is_none")]
    pub lod_steps: Option<Vec<Option<u32>>>,
    /// LOD blocks loaded that the events do not account for (a `load` of a save): flat
    /// `[level, x, z, …]`, not built, no height.
    #[serde(rename = "ba", skip_serializing_if = "Vec::is_empty")]
    pub blocks_add: Vec<i64>,
    /// LOD blocks released that the events do not account for: `[level, x, z, …]`.
    #[serde(rename = "br", skip_serializing_if = "Vec::is_empty")]
    pub blocks_remove: Vec<i64>,
    /// Loaded blocks that became ready (built by every builder): `[level, x, z, …]`.
    #[serde(rename = "bb", skip_serializing_if = "Vec::is_empty")]
    pub blocks_built: Vec<i64>,
    /// Loaded blocks no longer ready: `[level, x, z, …]`; their height is forgotten.
    #[serde(rename = "bu", skip_serializing_if = "Vec::is_empty")]
    pub blocks_unbuilt: Vec<i64>,
    /// Loaded blocks that got a height or whose height changed (built, or rebuilt after an
    /// edit): `[level, x, z, height, …]`, the mean of the block's cells.
    #[serde(rename = "bh", skip_serializing_if = "Vec::is_empty")]
    pub block_heights: Vec<Value>,
}

/// A loaded LOD block as the page has it.
#[derive(Clone, Copy, Default)]
struct BlockSeen {
    built: bool,
    height: Option<f64>,
}

/// What the previous tick looked like, to diff against.
#[derive(Default)]
struct Seen {
    /// Sorted (row order), as are the chunk lists below.
    loaded: Vec<ChunkPos>,
    pending: Vec<ChunkPos>,
    refusals: Option<Vec<Value>>,
    foci: Option<Vec<f64>>,
    tickets: Option<Vec<Value>>,
    dormant: Option<Vec<Value>>,
    variables: Map<String, Value>,
    scene: Option<Value>,
    names: BTreeMap<String, usize>,
    /// The loaded chunks whose height the page has.
    heights: BTreeSet<ChunkPos>,
    predicted: Option<Vec<f64>>,
    holes: Option<Vec<i64>>,
    /// The live entities as the page has them, by id: their index in `ids` and their record
    /// (`[kind, tags, data]`, and the position).
    entities: BTreeMap<String, (usize, Value, [f64; 2])>,
    /// Every entity id seen, indexed.
    ids: Vec<String>,
    /// The index of each id in `ids`.
    id_index: BTreeMap<String, usize>,
    district: Option<[u64; 2]>,
    /// `world.nav`'s agents as the page has them, by id: their index in `ids` and state.
    agents: BTreeMap<String, (usize, AgentView)>,
    /// SPEC §17: the levels' steps as the page has them (`None`: the run shows no `lod`).
    lod_steps: Option<Vec<Option<u32>>>,
    /// The loaded LOD blocks as the page has them, by (level, block).
    blocks: BTreeMap<(u32, ChunkPos), BlockSeen>,
}

/// The chunks in `a` and not in `b`, both sorted.
fn minus(a: &[ChunkPos], b: &[ChunkPos]) -> Vec<ChunkPos> {
    let mut out = Vec::new();
    let mut j = 0;
    for &c in a {
        while j < b.len() && b[j] < c {
            j += 1;
        }
        if b.get(j) != Some(&c) {
            out.push(c);
        }
    }
    out
}

fn flat(chunks: impl IntoIterator<Item = ChunkPos>) -> Vec<i64> {
    chunks.into_iter().flat_map(|c| [c.x, c.z]).collect()
}

/// A position coordinate for the page: an integer when it is one (`18`, not `18.0`: most
/// positions are, and a moving entity writes two every tick).
fn metres(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// The chunk of a `{x, z}` payload with integer coordinates (the chunk events'), else `None`.
fn chunk_payload(data: &EventData) -> Option<ChunkPos> {
    match data {
        EventData::Xz { x, z } => Some(ChunkPos::new(x.as_i64()?, z.as_i64()?)),
        _ => None,
    }
}

/// The level and block of a `{level, x, z}` payload with integer values (the LOD block
/// events', SPEC §17), else `None`.
fn block_payload(data: &EventData) -> Option<(u32, ChunkPos)> {
    match data {
        EventData::LevelXz { level, x, z } => Some((
            u32::try_from(level.as_u64()?).ok()?,
            ChunkPos::new(x.as_i64()?, z.as_i64()?),
        )),
        _ => None,
    }
}

/// `new` when it differs from `old` (and becomes the new `old`).
fn changed<T: PartialEq + Clone>(old: &mut Option<T>, new: T) -> Option<T> {
    if old.as_ref() == Some(&new) {
        return None;
    }
    *old = Some(new.clone());
    Some(new)
}

impl Seen {
    fn name(&mut self, names: &mut Vec<String>, name: &str) -> usize {
        if let Some(&i) = self.names.get(name) {
            return i;
        }
        names.push(name.to_owned());
        self.names.insert(name.to_owned(), names.len() - 1);
        names.len() - 1
    }

    /// The frame that takes the page from the last tick seen to `game`'s state now.
    fn frame(
        &mut self,
        game: &Game,
        events: &[Event],
        names: &mut Vec<String>,
        heights: Option<&HeightProbe<'_>>,
    ) -> Frame {
        let mut doc = game.state();
        // The chunk lists are taken as they are (sorted); the rest of the state, small, is read
        // as JSON so that fields this module does not know yet (§11's foci and tickets) show.
        let now_loaded = std::mem::take(&mut doc.loaded);
        let mut now_pending = std::mem::take(&mut doc.pending);
        let now_lod = doc.lod.take();
        now_pending.sort_unstable();
        let state = serde_json::to_value(&doc).expect("the state is JSON");
        let mut frame = Frame::default();
        // The events, and the last chunk event of each chunk (a release or a load).
        let mut last_event: BTreeMap<ChunkPos, bool> = BTreeMap::new();
        let mut loaded_by_events: BTreeSet<ChunkPos> = BTreeSet::new();
        let mut reshaped: BTreeSet<ChunkPos> = BTreeSet::new();
        // SPEC §17: the blocks the events load and release, in order, and those an edit changed.
        let mut block_events: Vec<(bool, u32, ChunkPos)> = Vec::new();
        let mut reshaped_blocks: BTreeSet<(u32, ChunkPos)> = BTreeSet::new();
        for e in events {
            let name = self.name(names, &e.event);
            if let Some((level, b)) = block_payload(&e.data) {
                frame.events.push(json!([name, b.x, b.z, level]));
                if e.event == LOD_LOADED || e.event == LOD_UNLOADED {
                    block_events.push((e.event == LOD_LOADED, level, b));
                }
                continue;
            }
            if e.event == TERRAIN_CHANGED {
                if let (Some(level), Some(x), Some(z)) = (
                    e.data["level"].as_u64(),
                    e.data["x"].as_i64(),
                    e.data["z"].as_i64(),
                ) {
                    if let Ok(level) = u32::try_from(level) {
                        reshaped_blocks.insert((level, ChunkPos::new(x, z)));
                    }
                }
            }
            match chunk_payload(&e.data) {
                Some(c) => {
                    frame.events.push(json!([name, c.x, c.z]));
                    if e.event == crate::kits::terrain::TERRAIN_CHANGED {
                        reshaped.insert(c);
                    }
                    if e.event == CHUNK_LOADED {
                        last_event.insert(c, true);
                        loaded_by_events.insert(c);
                    } else if e.event == CHUNK_UNLOADED {
                        last_event.insert(c, false);
                    }
                }
                None => frame.events.push(json!([name, e.data.to_value()])),
            }
        }
        // The page applies the events, then these corrections: what differs between the
        // loaded set the events imply and the real one.
        let added = minus(&now_loaded, &self.loaded);
        let removed = minus(&self.loaded, &now_loaded);
        let is_now = |c: &ChunkPos| now_loaded.binary_search(c).is_ok();
        let mut loaded_add = BTreeSet::new();
        let mut loaded_remove = BTreeSet::new();
        for c in &added {
            if last_event.get(c) != Some(&true) {
                loaded_add.insert(*c);
            }
        }
        for c in &removed {
            if last_event.get(c) != Some(&false) {
                loaded_remove.insert(*c);
            }
        }
        for (c, &implied) in &last_event {
            match (implied, is_now(c)) {
                (false, true) => loaded_add.insert(*c),
                (true, false) => loaded_remove.insert(*c),
                _ => false,
            };
        }
        frame.loaded_add = flat(loaded_add);
        frame.loaded_remove = flat(loaded_remove.iter().copied());
        // Pending: the page drops every chunk an event loaded, then applies this delta.
        let loaded_by_events: Vec<ChunkPos> = loaded_by_events.into_iter().collect();
        let pending = minus(&self.pending, &loaded_by_events);
        frame.pending_add = flat(minus(&now_pending, &pending));
        frame.pending_remove = flat(minus(&pending, &now_pending));
        if let Some(probe) = heights {
            // The page forgets a height when its chunk leaves the loaded set, by an event or a
            // correction (so also when a chunk is released and loaded again within the tick).
            let released: Vec<ChunkPos> = last_event
                .keys()
                .chain(&loaded_remove)
                .copied()
                .chain(removed.iter().copied())
                .collect();
            // An edited chunk's height is asked again.
            for c in released.into_iter().chain(reshaped) {
                self.heights.remove(&c);
            }
            for c in minus(
                &now_loaded,
                &self.heights.iter().copied().collect::<Vec<_>>(),
            ) {
                if let Some(h) = probe(game, c).filter(|h| h.is_finite()) {
                    frame.heights.extend([c.x as f64, c.z as f64, h]);
                    self.heights.insert(c);
                }
            }
        }
        self.loaded = now_loaded;
        self.pending = now_pending;

        let lists = Lists::of(&state);
        frame.refusals = changed(&mut self.refusals, lists.refusals);
        frame.foci = changed(&mut self.foci, lists.foci);
        frame.tickets = changed(&mut self.tickets, lists.tickets);
        let mut dormant: Vec<Value> = game
            .engine()
            .world()
            .iter()
            .filter(|e| e.has_tag(DORMANT))
            .map(|e| json!([e.id.as_str(), e.position.x, e.position.z]))
            .collect();
        dormant.sort_by(|a, b| a[0].as_str().cmp(&b[0].as_str()));
        frame.dormant = changed(&mut self.dormant, dormant);
        if let Some(vars) = state["variables"].as_object() {
            // `world.terrain.waits` counts the commits that waited for a worker thread, which
            // depends on thread timing (SPEC §12): the page leaves it out so that the same
            // replay always gives the same page.
            for (k, v) in vars.iter().filter(|(k, _)| *k != VAR_WAITS) {
                if self.variables.get(k) != Some(v) {
                    frame.variables.insert(k.clone(), v.clone());
                    self.variables.insert(k.clone(), v.clone());
                }
            }
        }
        frame.scene = changed(&mut self.scene, state["scene"].clone());
        if let Some(predicted) = state.get("predicted").and_then(Value::as_array) {
            let flat = predicted
                .iter()
                .filter_map(|f| Some([f["x"].as_f64()?, f["z"].as_f64()?]))
                .flatten()
                .collect();
            frame.predicted = changed(&mut self.predicted, flat);
        }
        if let Some(holes) = game.streaming().and_then(|s| s.hole_chunks()) {
            frame.holes = changed(&mut self.holes, flat(holes));
        }
        if let Some(d) = &doc.district {
            frame.district = changed(&mut self.district, [d.live, d.stored]);
        }
        self.entities(game, &mut frame);
        self.agents(game, &mut frame);
        if let Some(levels) = now_lod {
            self.blocks(
                game,
                levels,
                &block_events,
                &reshaped_blocks,
                heights.is_some(),
                &mut frame,
            );
        }
        frame
    }

    /// SPEC §17's blocks: the page applies the tick's block events (a load: not built, no
    /// height; a release), then these corrections, the ready changes and the heights (asked of
    /// the terrain when `heights`, for a block without one, just built, or edited).
    fn blocks(
        &mut self,
        game: &Game,
        levels: Vec<Vec<ChunkPos>>,
        events: &[(bool, u32, ChunkPos)],
        reshaped: &BTreeSet<(u32, ChunkPos)>,
        heights: bool,
        frame: &mut Frame,
    ) {
        let Some(streaming) = game.streaming() else {
            return;
        };
        let steps = (1..=levels.len() as u32)
            .map(|level| streaming.lod_step(level))
            .collect();
        frame.lod_steps = changed(&mut self.lod_steps, steps);
        for &(loaded, level, b) in events {
            if loaded {
                self.blocks.insert((level, b), BlockSeen::default());
            } else {
                self.blocks.remove(&(level, b));
            }
        }
        let now: BTreeSet<(u32, ChunkPos)> = levels
            .iter()
            .zip(1u32..)
            .flat_map(|(blocks, level)| blocks.iter().map(move |&b| (level, b)))
            .collect();
        let gone: Vec<(u32, ChunkPos)> = self
            .blocks
            .keys()
            .filter(|k| !now.contains(k))
            .copied()
            .collect();
        for (level, b) in gone {
            self.blocks.remove(&(level, b));
            frame.blocks_remove.extend([i64::from(level), b.x, b.z]);
        }
        for &(level, b) in &now {
            let seen = self.blocks.entry((level, b)).or_insert_with(|| {
                frame.blocks_add.extend([i64::from(level), b.x, b.z]);
                BlockSeen::default()
            });
            let ready = streaming.lod_ready(level, b);
            let mut ask = seen.height.is_none() || reshaped.contains(&(level, b));
            if ready != seen.built {
                seen.built = ready;
                let list = if ready {
                    &mut frame.blocks_built
                } else {
                    seen.height = None;
                    &mut frame.blocks_unbuilt
                };
                list.extend([i64::from(level), b.x, b.z]);
                ask = true;
            }
            if heights && ask {
                let h = terrain_block_height(game, level, b).filter(|h| h.is_finite());
                if let Some(h) = h.filter(|h| seen.height != Some(*h)) {
                    seen.height = Some(h);
                    frame
                        .block_heights
                        .extend([json!(level), json!(b.x), json!(b.z), metres(h)]);
                }
            }
        }
    }

    /// The index of `id` in `ids`, added when new.
    fn index(&mut self, id: &str) -> usize {
        if let Some(&i) = self.id_index.get(id) {
            return i;
        }
        self.ids.push(id.to_owned());
        self.id_index.insert(id.to_owned(), self.ids.len() - 1);
        self.ids.len() - 1
    }

    /// `world.nav`'s agents that appeared, changed or stepped since the last frame, and those
    /// whose state was dropped. Nothing without the kit.
    fn agents(&mut self, game: &Game, frame: &mut Frame) {
        let Some(nav) = game.engine().service::<dyn NavService>(NAV) else {
            return;
        };
        let now = nav.agents();
        let live: BTreeSet<&str> = now.iter().map(|a| a.id.as_str()).collect();
        let gone: Vec<String> = self
            .agents
            .keys()
            .filter(|id| !live.contains(id.as_str()))
            .cloned()
            .collect();
        for id in gone {
            if let Some((i, _)) = self.agents.remove(&id) {
                frame.agents_removed.push(i);
            }
        }
        for a in now {
            let id = a.id.as_str().to_owned();
            if let Some((i, old)) = self.agents.get_mut(&id) {
                if *old == a {
                    continue;
                }
                let k = old.path.len().saturating_sub(a.path.len());
                let stepped = k > 0
                    && old.path[k..] == a.path[..]
                    && AgentView {
                        path: a.path.clone(),
                        ..old.clone()
                    } == a;
                if stepped {
                    frame.agents_stepped.extend([*i as u64, k as u64]);
                    *old = a;
                    continue;
                }
            }
            let i = self.index(&id);
            let path: Vec<i64> = a.path.iter().flat_map(|c| [c.x, c.z]).collect();
            frame.agents.push(json!([
                i,
                a.goal.x,
                a.goal.z,
                path,
                a.waiting.map(|c| [c.x, c.z]),
                a.stuck,
                a.arrived
            ]));
            self.agents.insert(id, (i, a));
        }
    }

    /// The live entities that appeared or changed since the last frame, and those gone.
    fn entities(&mut self, game: &Game, frame: &mut Frame) {
        let world = game.engine().world();
        let district = game.engine().service::<dyn DistrictService>(DISTRICT);
        let ridden: BTreeSet<&str> = world
            .iter()
            .filter_map(|e| e.rides.as_ref().map(|r| r.as_str()))
            .collect();
        let control = world.control();
        let mut now = BTreeSet::new();
        for e in world.iter() {
            let id = e.id.as_str();
            let kind = if e.has_tag(PLAYER_TAG) || control == Some(&e.id) {
                "p"
            } else if e.has_tag(VEHICLE_TAG) || ridden.contains(id) {
                "v"
            } else if district
                .as_ref()
                .is_some_and(|d| d.district_line(&e.id).is_some())
            {
                "d"
            } else {
                "e"
            };
            let tags: Vec<&str> = e.tags.iter().collect();
            let data = e
                .data
                .as_deref()
                .map_or(Value::Null, |d| Value::Object(d.clone()));
            let record = json!([kind, tags, data]);
            let at = [e.position.x, e.position.z];
            now.insert(id);
            match self.entities.get_mut(id) {
                Some((_, r, p)) if *r == record && *p == at => {}
                Some((i, r, p)) if *r == record => {
                    *p = at;
                    frame
                        .entities_moved
                        .extend([json!(*i), metres(at[0]), metres(at[1])]);
                }
                _ => {
                    let i = match self.id_index.get(id) {
                        Some(&i) => i,
                        None => {
                            self.ids.push(id.to_owned());
                            self.id_index.insert(id.to_owned(), self.ids.len() - 1);
                            self.ids.len() - 1
                        }
                    };
                    frame.entities.push(json!([
                        i,
                        record[0],
                        metres(at[0]),
                        metres(at[1]),
                        record[1],
                        record[2]
                    ]));
                    self.entities.insert(id.to_owned(), (i, record, at));
                }
            }
        }
        let gone: Vec<String> = self
            .entities
            .keys()
            .filter(|id| !now.contains(id.as_str()))
            .cloned()
            .collect();
        for id in gone {
            if let Some((i, ..)) = self.entities.remove(&id) {
                frame.entities_removed.push(i);
            }
        }
    }

    /// Whether the page draws a loaded chunk at this state, and whether it draws anything.
    fn shows(&self) -> (bool, bool) {
        let anything = !self.loaded.is_empty()
            || !self.pending.is_empty()
            || self.refusals.as_ref().is_some_and(|r| !r.is_empty())
            || self.foci.as_ref().is_some_and(|f| !f.is_empty())
            || self.tickets.as_ref().is_some_and(|t| !t.is_empty())
            || !self.entities.is_empty();
        (!self.loaded.is_empty(), anything)
    }
}

/// The small lists of a state document, as the page gets them.
#[derive(Debug, PartialEq)]
struct Lists {
    /// `[x, z, "load" | "unload", mod, reason]`.
    refusals: Vec<Value>,
    /// `[x0, z0, x1, z1, …]`.
    foci: Vec<f64>,
    /// `[id, x, z, radius, ticksLeft]`.
    tickets: Vec<Value>,
}

impl Lists {
    /// Reads them from a state document: §11's `foci` and `tickets` when it has them, else the
    /// one `focus` (none when `null`) and no tickets.
    fn of(state: &Value) -> Lists {
        let list = |key: &str| {
            state
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        };
        let refusals = list("refusals")
            .map(|r| {
                let kind = if r["hook"] == "world.chunk.load" {
                    "load"
                } else {
                    "unload"
                };
                json!([r["x"], r["z"], kind, r["mod"], r["reason"]])
            })
            .collect();
        let foci: Vec<&Value> = match state.get("foci").and_then(Value::as_array) {
            Some(foci) => foci.iter().collect(),
            None => state
                .get("focus")
                .into_iter()
                .filter(|f| !f.is_null())
                .collect(),
        };
        let foci = foci
            .into_iter()
            .filter_map(|f| Some([f["x"].as_f64()?, f["z"].as_f64()?]))
            .flatten()
            .collect();
        let tickets = list("tickets")
            .map(|t| json!([t["id"], t["x"], t["z"], t["radius"], t["ticksLeft"]]))
            .collect();
        Lists {
            refusals,
            foci,
            tickets,
        }
    }
}

/// Re-runs `recording`, checks it reproduces, and captures one frame per tick. `heights`, when
/// given, is asked the height of every chunk as it loads.
pub fn capture(
    recording: &Recording,
    title: &str,
    heights: Option<&HeightProbe<'_>>,
) -> Result<ViewData, ViewError> {
    let (_dir, mut game, inputs) = recording.game()?;
    let chunk_size = game.streaming().map_or(32.0, |s| s.chunk_size());
    let cells_per_chunk = game
        .engine()
        .service::<dyn NavService>(NAV)
        .map(|n| n.cells_per_chunk());
    let mut names = Vec::new();
    let mut seen = Seen::default();
    let mut frames = vec![seen.frame(&game, &[], &mut names, heights)];
    // The first frame with a loaded chunk, and the first showing anything.
    let mut first = [None, None];
    let mut note = |seen: &Seen, i: usize| {
        let (loaded, anything) = seen.shows();
        for (slot, yes) in first.iter_mut().zip([loaded, anything]) {
            if yes && slot.is_none() {
                *slot = Some(i as u64);
            }
        }
    };
    note(&seen, 0);
    let mut steps = Vec::new();
    let mut events_seen = 0;
    let mut last_tick = game.engine().tick_count();
    // Stopped at the first step that differs from the recording's, as `replay` does (a
    // recording claiming more ticks than it holds is not run to its end first).
    game.run_while(&inputs, recording.ticks, |game, _| {
        let events = &game.engine().events()[events_seen..];
        events_seen += events.len();
        let tick = game.engine().tick_count();
        let step = Step::new(tick, events);
        let same = recording
            .steps
            .get(steps.len())
            .is_some_and(|e| (e.tick, &e.digest) == (step.tick, &step.digest));
        steps.push(step);
        let mut frame = seen.frame(game, events, &mut names, heights);
        if tick != last_tick + 1 {
            frame.tick = Some(tick);
        }
        last_tick = tick;
        frames.push(frame);
        note(&seen, frames.len() - 1);
        same
    })?;
    if let Verdict::Differs(d) = compare(&recording.steps, &steps) {
        return Err(ViewError::Differs(Box::new(d)));
    }
    Ok(ViewData {
        format: VIEW_FORMAT,
        version: 1,
        title: title.to_owned(),
        start: first[0].or(first[1]).unwrap_or(0),
        chunk_size,
        ticks: frames.len() as u64 - 1,
        names,
        ids: std::mem::take(&mut seen.ids),
        frames,
        cells_per_chunk,
    })
}

/// The page: `page.html` with the CSS, the JS and the data inlined. The data is JSON inside a
/// `<script type="application/json">`, with `<`, `>` and `&` escaped so that no text from the run
/// (a mod's reason, an entity id) can close the element.
pub fn render(data: &ViewData) -> String {
    let json = serde_json::to_string(data).expect("plain data");
    let mut safe = String::with_capacity(json.len());
    for ch in json.chars() {
        match ch {
            '<' => safe.push_str("\\u003c"),
            '>' => safe.push_str("\\u003e"),
            '&' => safe.push_str("\\u0026"),
            c => safe.push(c),
        }
    }
    let mut title = String::new();
    for ch in data.title.chars() {
        match ch {
            '<' => title.push_str("&lt;"),
            '>' => title.push_str("&gt;"),
            '&' => title.push_str("&amp;"),
            '"' => title.push_str("&quot;"),
            c => {
                let _ = title.write_char(c);
            }
        }
    }
    fill(
        PAGE,
        &[
            ("{{TITLE}}", &title),
            ("/*{{CSS}}*/", CSS),
            ("{{TITLE}}", &title),
            ("{{DATA}}", &safe),
            ("/*{{JS}}*/", JS),
        ],
    )
}

/// Replaces the markers of `template` in the order given (their order in it), each once: text already put in is never
/// searched again (a title holding a marker stays as it is).
fn fill(template: &str, parts: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + parts.iter().map(|p| p.1.len()).sum::<usize>());
    let mut rest = template;
    for (marker, value) in parts {
        let (before, after) = rest
            .split_once(marker)
            .unwrap_or_else(|| panic!("page.html has no {marker} after the previous marker"));
        out.push_str(before);
        out.push_str(value);
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_with_one_focus_gives_one_focus_and_no_tickets() {
        let state = json!({"focus": {"x": 8, "z": -8}, "refusals": [
            {"x": 0, "z": 0, "hook": "world.chunk.unload", "mod": "keep_home", "reason": "home"}]});
        let lists = Lists::of(&state);
        assert_eq!(lists.foci, [8.0, -8.0]);
        assert_eq!(lists.tickets, Vec::<Value>::new());
        assert_eq!(
            lists.refusals,
            [json!([0, 0, "unload", "keep_home", "home"])]
        );
        assert_eq!(Lists::of(&json!({"focus": null})).foci, Vec::<f64>::new());
    }

    #[test]
    fn a_section_11_state_gives_every_focus_and_ticket() {
        let state = json!({
            "focus": {"x": 1, "z": 2},
            "foci": [{"x": 1, "z": 2}, {"x": 300, "z": -40}, {"x": 64, "z": 64}],
            "tickets": [{"id": "cutscene", "x": 64, "z": 64, "radius": 2, "ticksLeft": 9}],
            "refusals": [{"x": 3, "z": 4, "hook": "world.chunk.load", "mod": "m", "reason": ""}]
        });
        let lists = Lists::of(&state);
        assert_eq!(lists.foci, [1.0, 2.0, 300.0, -40.0, 64.0, 64.0]);
        assert_eq!(lists.tickets, [json!(["cutscene", 64, 64, 2, 9])]);
        assert_eq!(lists.refusals, [json!([3, 4, "load", "m", ""])]);
    }

    #[test]
    fn markers_are_filled_in_order_and_text_is_never_searched() {
        let page = fill("a{{A}}b{{B}}c", &[("{{A}}", "{{B}}"), ("{{B}}", "x")]);
        assert_eq!(page, "a{{B}}bxc");
    }

    #[test]
    fn the_set_difference_of_sorted_chunks() {
        let c = |x, z| ChunkPos::new(x, z);
        let a = [c(0, -1), c(1, -1), c(0, 0), c(5, 3)];
        let b = [c(1, -1), c(0, 0), c(9, 9)];
        assert_eq!(minus(&a, &b), [c(0, -1), c(5, 3)]);
        assert_eq!(minus(&b, &a), [c(9, 9)]);
        assert_eq!(minus(&[], &a), []);
    }
}
