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
//! previous tick, so a 10 000-tick run at radius 32 stays a few megabytes.
//!
//! What a frame holds is written by *layers*, one per kit ([`crate::host::view`]: each kit's
//! `view.rs` and `view.js` in its own folder, registered in its catalog entry): this room is the
//! page model and the loop over the game's catalog's layers. Its own part of a frame is what
//! belongs to no kit: the tick's events (`e`), the variables that changed (`v`), the active scene
//! (`s`) and the live entities (`n`, `m`, `nr`: a per-id delta, a move costing its index and
//! position), each of a kind the page draws — a player, a vehicle, a kind a layer gives (a
//! district entity), or any other. The page opens on [`ViewData::start`], the first frame
//! showing what a layer opens on (a loaded chunk). Terrain heights are asked of a
//! [`HeightProbe`] the caller passes ([`terrain_height`] for `world.terrain`).
//!
//! The page itself lives in `page.html`, `view.css` and `view.js` (the drawing core the layers'
//! drawings run in) beside this file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Map, Value};

use crate::files::FileError;
use crate::game::{Game, GameError};
use crate::grid::ChunkPos;
use crate::host::view::{
    block_payload, changed, chunk_payload, metres, put, EntityKinds, Fields, FrameCtx,
    LayerCapture, PageIds, Shows,
};
use crate::host::{Engine, Event, PLAYER_TAG};
use crate::replay::{compare, Divergence, Recording, Step, Verdict};

/// The `format` of the data embedded in a page.
pub const VIEW_FORMAT: &str = "world-streaming-view";

/// The tag the page draws as a vehicle (as does an entity someone rides).
const VEHICLE_TAG: &str = "vehicle";

/// The chunk side the page assumes when no layer gives one, in metres.
const DEFAULT_CHUNK_SIZE: f64 = 32.0;

const PAGE: &str = include_str!("page.html");
const CSS: &str = include_str!("view.css");
const JS: &str = include_str!("view.js");
/// Where `view.js` takes the layers' drawings.
const LAYERS: &str = "/*{{LAYERS}}*/";

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
    /// A layer wrote a field another part of the page writes, or one the page cannot read.
    #[error("the viewer layer {layer}: {message}")]
    Layer {
        /// The layer's name.
        layer: String,
        /// What is wrong.
        message: String,
    },
}

/// The height of a chunk (e.g. its terrain's mean height), asked once per chunk when it loads;
/// `None` while it has none (e.g. its terrain is not built yet). [`terrain_height`] is the one of
/// `world.terrain`.
pub type HeightProbe<'a> = dyn Fn(&Game, ChunkPos) -> Option<f64> + 'a;

/// The probe of `world.terrain`: a built chunk's mean cell height (0..=65535, rounded down), as
/// the demo's map shades it; `None` while the chunk is not built or without the kit
/// ([`crate::kits::terrain::view::chunk_height`]).
pub fn terrain_height(game: &Game, chunk: ChunkPos) -> Option<f64> {
    crate::kits::terrain::view::chunk_height(game.engine(), chunk)
}

/// The height of a LOD block (SPEC §17) of `level` (1 = the first `lod` entry): the mean of
/// its built cells, rounded down as [`terrain_height`]'s; `None` while the block is not built or
/// without `world.terrain` ([`crate::kits::terrain::view::block_height`]). [`capture`] asks it
/// of every loaded block when it is given a chunk probe.
pub fn terrain_block_height(game: &Game, level: u32, block: ChunkPos) -> Option<f64> {
    crate::kits::terrain::view::block_height(game.engine(), level, block)
}

/// Whether a recording's scene enables `world.terrain` (then [`terrain_height`] is worth asking).
pub fn has_terrain(recording: &Recording) -> bool {
    recording.scene["kits"].as_array().is_some_and(|kits| {
        kits.iter()
            .any(|k| k["id"] == crate::kits::terrain::TERRAIN)
    })
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
    /// `chunkSize` in metres (to place foci and entities inside their chunks): the streaming
    /// layer's, 32 without it.
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
    /// Header fields of layers this struct does not name (a kit of your own's).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// The drawings of the run's layers, in catalog order: the page runs each
    /// ([`crate::host::view::ViewLayer::script`]).
    #[serde(skip)]
    pub scripts: Vec<&'static str>,
}

/// What changed at one tick. Chunk lists are flat `[x0, z0, x1, z1, …]`; empty fields are left
/// out of the page.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
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
    #[serde(
        rename = "s",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
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
    /// The fields of layers this struct does not name (a kit of your own's), as they wrote them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A present field, even `null`, is `Some` (the scene left is `"s": null`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The page's own part of a frame, and what it remembers to diff against: the events' names,
/// the variables, the scene, the live entities.
#[derive(Default)]
struct Core {
    names: BTreeMap<String, usize>,
    variables: Map<String, Value>,
    scene: Option<Value>,
    /// The live entities as the page has them, by id: their index in `ids` and their record
    /// (`[kind, tags, data]`, and the position).
    entities: BTreeMap<String, (usize, Value, [f64; 2])>,
}

impl Core {
    fn name(&mut self, names: &mut Vec<String>, name: &str) -> usize {
        if let Some(&i) = self.names.get(name) {
            return i;
        }
        names.push(name.to_owned());
        self.names.insert(name.to_owned(), names.len() - 1);
        names.len() - 1
    }

    /// The events, `[name, x, z]` for chunk-shaped payloads, `[name, x, z, level]` for block-
    /// shaped ones, `[name, data]` otherwise; the variables that changed (but those a layer
    /// leaves out); the scene when it changed.
    fn frame(
        &mut self,
        engine: &Engine,
        events: &[Event],
        names: &mut Vec<String>,
        hidden: &[&str],
        out: &mut Fields,
    ) {
        let mut listed = Vec::with_capacity(events.len());
        for e in events {
            let name = self.name(names, &e.event);
            listed.push(if let Some((level, b)) = block_payload(&e.data) {
                json!([name, b.x, b.z, level])
            } else if let Some(c) = chunk_payload(&e.data) {
                json!([name, c.x, c.z])
            } else {
                json!([name, e.data.to_value()])
            });
        }
        if !listed.is_empty() {
            put(out, "e", listed);
        }
        let mut variables = Map::new();
        for (k, v) in engine.variables().iter() {
            if hidden.contains(&k) || self.variables.get(k) == Some(v) {
                continue;
            }
            variables.insert(k.to_owned(), v.clone());
            self.variables.insert(k.to_owned(), v.clone());
        }
        if !variables.is_empty() {
            put(out, "v", variables);
        }
        let scene = engine
            .active_scene()
            .map_or(Value::Null, |s| Value::String(s.id.clone()));
        if let Some(s) = changed(&mut self.scene, scene) {
            put(out, "s", s);
        }
    }

    /// The live entities that appeared or changed since the last frame, and those gone.
    fn entities(
        &mut self,
        engine: &Engine,
        kinds: &[EntityKinds<'_>],
        ids: &mut PageIds,
        out: &mut Fields,
    ) {
        let world = engine.world();
        let ridden: std::collections::BTreeSet<&str> = world
            .iter()
            .filter_map(|e| e.rides.as_ref().map(|r| r.as_str()))
            .collect();
        let control = world.control();
        let mut now = std::collections::BTreeSet::new();
        let (mut appeared, mut moved, mut removed) = (Vec::new(), Vec::new(), Vec::new());
        for e in world.iter() {
            let id = e.id.as_str();
            let kind = if e.has_tag(PLAYER_TAG) || control == Some(&e.id) {
                "p"
            } else if e.has_tag(VEHICLE_TAG) || ridden.contains(id) {
                "v"
            } else {
                kinds.iter().find_map(|k| k(e)).unwrap_or("e")
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
                    moved.extend([json!(*i), metres(at[0]), metres(at[1])]);
                }
                _ => {
                    let i = ids.index(id);
                    appeared.push(json!([
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
                removed.push(i);
            }
        }
        for (key, list) in [("n", appeared), ("m", moved)] {
            if !list.is_empty() {
                put(out, key, list);
            }
        }
        if !removed.is_empty() {
            put(out, "nr", removed);
        }
    }
}

/// One run's capture: the page's own part and each layer's, with the state they share (the
/// events' names, the entities' ids).
struct Capture {
    core: Core,
    /// Each layer's name and capture, in catalog order.
    layers: Vec<(&'static str, Box<dyn LayerCapture>)>,
    /// The variables the layers leave out.
    hidden: Vec<&'static str>,
    names: Vec<String>,
    ids: PageIds,
    /// Frames made so far.
    made: u64,
    /// The first frame with what a layer opens on, and the first showing anything.
    first: [Option<u64>; 2],
}

impl Capture {
    fn new(engine: &Engine) -> Self {
        let layers: Vec<(&'static str, Box<dyn LayerCapture>)> = engine
            .view_layers()
            .iter()
            .map(|l| (l.name, (l.capture)()))
            .collect();
        let hidden = layers
            .iter()
            .flat_map(|(_, c)| c.hidden_variables().iter().copied())
            .collect();
        Capture {
            core: Core::default(),
            layers,
            hidden,
            names: Vec::new(),
            ids: PageIds::default(),
            made: 0,
            first: [None, None],
        }
    }

    /// The layers' header fields.
    fn head(&mut self, engine: &Engine) -> Result<Fields, ViewError> {
        let mut fields = Fields::new();
        for (name, capture) in &mut self.layers {
            let mut own = Fields::new();
            capture.head(engine, &mut own);
            merge(&mut fields, own, name)?;
        }
        Ok(fields)
    }

    /// The frame that takes the page from the last step seen to `engine`'s state now.
    fn frame(
        &mut self,
        engine: &Engine,
        events: &[Event],
        heights: Option<&dyn Fn(ChunkPos) -> Option<f64>>,
    ) -> Result<Frame, ViewError> {
        let mut fields = Fields::new();
        self.core
            .frame(engine, events, &mut self.names, &self.hidden, &mut fields);
        let kinds: Vec<EntityKinds<'_>> = self
            .layers
            .iter()
            .filter_map(|(_, c)| c.entity_kinds(engine))
            .collect();
        self.core
            .entities(engine, &kinds, &mut self.ids, &mut fields);
        drop(kinds);
        let ctx = FrameCtx {
            engine,
            events,
            heights,
        };
        for (name, capture) in &mut self.layers {
            let mut own = Fields::new();
            capture.frame(&ctx, &mut self.ids, &mut own);
            merge(&mut fields, own, name)?;
        }
        let frame: Frame =
            serde_json::from_value(Value::Object(fields)).map_err(|e| ViewError::Layer {
                layer: self
                    .layers
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
                message: format!("a frame field does not read as the page's: {e}"),
            })?;
        let mut shows = Shows {
            opening: false,
            anything: !self.core.entities.is_empty(),
        };
        for (_, c) in &self.layers {
            let s = c.shows();
            shows.opening |= s.opening;
            shows.anything |= s.anything;
        }
        for (slot, yes) in self.first.iter_mut().zip([shows.opening, shows.anything]) {
            if yes && slot.is_none() {
                *slot = Some(self.made);
            }
        }
        self.made += 1;
        Ok(frame)
    }
}

/// Adds a layer's fields to the frame's: a field is written by one part of the page only.
fn merge(fields: &mut Fields, own: Fields, layer: &str) -> Result<(), ViewError> {
    for (key, value) in own {
        if fields.contains_key(&key) {
            return Err(ViewError::Layer {
                layer: layer.to_owned(),
                message: format!("writes the field `{key}`, which another part of the page writes"),
            });
        }
        fields.insert(key, value);
    }
    Ok(())
}

/// Re-runs `recording`, checks it reproduces, and captures one frame per tick, each layer of
/// the game's catalog adding its part. `heights`, when given, is asked the height of every chunk
/// as it loads (and the layers shade the blocks of the levels of detail too).
pub fn capture(
    recording: &Recording,
    title: &str,
    heights: Option<&HeightProbe<'_>>,
) -> Result<ViewData, ViewError> {
    let (_dir, mut game, inputs) = recording.game()?;
    let mut capture = Capture::new(game.engine());
    let scripts = game
        .engine()
        .view_layers()
        .iter()
        .map(|l| l.script)
        .filter(|s| !s.is_empty())
        .collect();
    let mut head = capture.head(game.engine())?;
    let first = {
        let g = &game;
        let bound = heights.map(|p| move |c| p(g, c));
        let heights = bound
            .as_ref()
            .map(|b| b as &dyn Fn(ChunkPos) -> Option<f64>);
        capture.frame(game.engine(), &[], heights)?
    };
    let mut frames = vec![first];
    let mut steps = Vec::new();
    let mut events_seen = 0;
    let mut last_tick = game.engine().tick_count();
    let mut failed = None;
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
        let bound = heights.map(|p| move |c| p(game, c));
        let heights = bound
            .as_ref()
            .map(|b| b as &dyn Fn(ChunkPos) -> Option<f64>);
        match capture.frame(game.engine(), events, heights) {
            Ok(mut frame) => {
                if tick != last_tick + 1 {
                    frame.tick = Some(tick);
                }
                frames.push(frame);
            }
            Err(e) => {
                failed = Some(e);
                return false;
            }
        }
        last_tick = tick;
        same
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if let Verdict::Differs(d) = compare(&recording.steps, &steps) {
        return Err(ViewError::Differs(Box::new(d)));
    }
    let chunk_size = head
        .remove("chunkSize")
        .and_then(|v| v.as_f64())
        .unwrap_or(DEFAULT_CHUNK_SIZE);
    let cells_per_chunk = head
        .remove("cellsPerChunk")
        .and_then(|v| v.as_u64())
        .and_then(|n| u32::try_from(n).ok());
    Ok(ViewData {
        format: VIEW_FORMAT,
        version: 1,
        title: title.to_owned(),
        start: capture.first[0].or(capture.first[1]).unwrap_or(0),
        chunk_size,
        ticks: frames.len() as u64 - 1,
        names: capture.names,
        ids: capture.ids.into_ids(),
        frames,
        cells_per_chunk,
        extra: head,
        scripts,
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
            ("/*{{JS}}*/", &script(&data.scripts)),
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

/// The page's script: the drawing core (`view.js`) with the layers' drawings where it takes
/// them, in order.
fn script(layers: &[&str]) -> String {
    let layers: String = layers.iter().map(|l| format!("{l}\n")).collect();
    fill(JS, &[(LAYERS, &layers)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_filled_in_order_and_text_is_never_searched() {
        let page = fill("a{{A}}b{{B}}c", &[("{{A}}", "{{B}}"), ("{{B}}", "x")]);
        assert_eq!(page, "a{{B}}bxc");
    }

    #[test]
    fn the_page_script_takes_every_layers_drawing_once_in_order() {
        assert_eq!(
            JS.matches(LAYERS).count(),
            1,
            "view.js names the marker once"
        );
        let page = script(&["/* first */", "/* second */"]);
        assert!(!page.contains(LAYERS));
        let (a, b) = (page.find("/* first */"), page.find("/* second */"));
        assert!(a.is_some() && a < b, "both, in order");
        // The layers run where the core's helpers exist and before its state is built.
        assert!(page.find("const layer = ").unwrap() < a.unwrap());
        assert!(b.unwrap() < page.find("function emptyState()").unwrap());
    }

    /// A kit of a test's own with a layer: a field each frame, a header field, a drawing.
    mod own_layer {
        use super::super::*;
        use crate::host::view::ViewLayer;
        use crate::host::{CatalogEntry, Kit, KitCatalog, KitManifest};

        struct Quiet;
        impl Kit for Quiet {
            fn id(&self) -> &str {
                "test.quiet"
            }
        }

        #[derive(Default)]
        struct Counting(u64, &'static str);
        impl LayerCapture for Counting {
            fn head(&mut self, _: &Engine, out: &mut Fields) {
                put(out, "quietHead", "hello");
            }
            fn frame(&mut self, ctx: &FrameCtx<'_>, _: &mut PageIds, out: &mut Fields) {
                self.0 += 1;
                put(out, self.1, [self.0, ctx.engine.tick_count()]);
            }
        }

        fn game(layer: ViewLayer) -> Game {
            let mut catalog: KitCatalog = crate::kits::builtin_catalog();
            catalog.register(
                CatalogEntry::new(
                    KitManifest::simple("test.quiet", "1.0.0"),
                    Box::new(|_| Ok(Box::new(Quiet))),
                )
                .view(layer),
            );
            let scene = r#"{"kits": [{"id": "world.ground"}, {"id": "test.quiet"}]}"#;
            Game::from_scene_text(scene, "scene.json", ".".as_ref(), &catalog).unwrap()
        }

        #[test]
        fn a_kits_own_layer_writes_its_fields_and_the_page_runs_its_drawing() {
            let layer = ViewLayer {
                name: "test.quiet",
                capture: || Box::new(Counting(0, "quiet")),
                script: "layer({ caption() { return ' · quiet'; } });",
            };
            let mut g = game(layer);
            let mut capture = Capture::new(g.engine());
            let head = capture.head(g.engine()).unwrap();
            assert_eq!(head["quietHead"], "hello");
            assert_eq!(head["chunkSize"], 32.0, "the streaming layer's default");
            let mut frames = vec![capture.frame(g.engine(), &[], None).unwrap()];
            for _ in 0..2 {
                g.tick();
                frames.push(capture.frame(g.engine(), &[], None).unwrap());
            }
            let quiet: Vec<&Value> = frames.iter().map(|f| &f.extra["quiet"]).collect();
            assert_eq!(quiet, [&json!([1, 0]), &json!([2, 1]), &json!([3, 2])]);
            // Written after the fields the page names, as the layer wrote it.
            let text = serde_json::to_string(&frames[1]).unwrap();
            assert!(text.ends_with(r#""quiet":[2,1]}"#), "{text}");
            assert!(g
                .engine()
                .view_layers()
                .iter()
                .any(|l| l.script == layer.script));
        }

        #[test]
        fn a_layer_writing_a_field_another_part_writes_is_refused() {
            let layer = ViewLayer {
                name: "test.quiet",
                capture: || Box::new(Counting(0, "r")),
                script: "",
            };
            let g = game(layer);
            let mut capture = Capture::new(g.engine());
            match capture.frame(g.engine(), &[], None) {
                Err(ViewError::Layer { layer, message }) => {
                    assert_eq!(layer, "test.quiet");
                    assert!(message.contains("`r`"), "{message}");
                }
                other => panic!("{:?}", other.map(|_| ())),
            }
        }
    }

    #[test]
    fn a_frame_reads_back_what_it_writes_and_keeps_fields_it_does_not_name() {
        let written = json!({"t": 9, "la": [1, 2], "s": null, "f": [8.0, -8.0], "zz": {"a": 1}});
        let frame: Frame = serde_json::from_value(written.clone()).unwrap();
        assert_eq!(frame.scene, Some(Value::Null), "a scene left is written");
        assert_eq!(frame.loaded_add, [1, 2]);
        assert_eq!(frame.extra["zz"], json!({"a": 1}));
        assert_eq!(serde_json::to_value(&frame).unwrap(), written);
        let none: Frame = serde_json::from_value(json!({})).unwrap();
        assert_eq!(none.scene, None);
        assert_eq!(serde_json::to_string(&none).unwrap(), "{}");
    }
}
