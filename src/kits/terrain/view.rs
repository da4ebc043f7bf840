//! The terrain kit's layer of the replay viewer: the heights the page shades the grid's chunks
//! and LOD blocks with (the streaming layer's drawing), captured after every tick when the page
//! is to shade them (`FrameCtx::heights`, which [`chunk_height`] is the terrain's answer to).
//!
//! Fields: `h` the heights of loaded chunks that got one this tick `[x, z, height, …]` (asked of
//! each loaded chunk without one: as it loads, after its terrain is built, after an edit
//! changed it; forgotten when it is released), `bh` the heights of loaded LOD blocks that got
//! one or whose height changed `[level, x, z, height, …]` (the mean of the block's built cells,
//! asked of a block without one, just built, or edited). `world.terrain.waits` counts commits
//! that waited for a worker thread, which depends on thread timing: the page leaves it out.
//!
//! With `vertical` in force (docs/viewer.md#vertical-worlds) the terrain is per column: `h` holds
//! the heights of loaded columns (a column is loaded while one of its sections is), asked again
//! after a `world.column.loaded` / `unloaded` event, and the page forgets a height on the
//! column's `world.column.unloaded`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::grid::ChunkPos;
use crate::host::view::{metres, put, Fields, FrameCtx, LayerCapture, PageIds, ViewLayer};
use crate::host::Engine;
use crate::kits::streaming::{ChunkEvent, StreamingService, STREAMING};

use super::{ChunkData, TerrainEvent, TerrainService, TERRAIN, VAR_WAITS};

/// The layer, as the kit's catalog entry registers it.
pub const LAYER: ViewLayer = ViewLayer {
    name: TERRAIN,
    capture: || Box::<Capture>::default(),
    script: "",
};

/// A built chunk's mean cell height (0..=65535, rounded down), as the page shades it; `None`
/// while the chunk is not built or without the kit.
pub fn chunk_height(engine: &Engine, chunk: ChunkPos) -> Option<f64> {
    let terrain = engine.service::<dyn TerrainService>(TERRAIN)?;
    Some(mean_height(&*terrain.chunk(chunk)?))
}

/// The height of a LOD block of `level` (1 = the first `lod` entry): the mean of its built cells
/// ([`TerrainService::lod_block`]), rounded down as [`chunk_height`]'s; `None` while the block
/// is not built or without the kit.
pub fn block_height(engine: &Engine, level: u32, block: ChunkPos) -> Option<f64> {
    let terrain = engine.service::<dyn TerrainService>(TERRAIN)?;
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

/// What the page has: the loaded chunks with a height, and the loaded blocks (whether built,
/// their height).
#[derive(Default)]
struct Capture {
    heights: BTreeSet<ChunkPos>,
    blocks: BTreeMap<(u32, ChunkPos), (bool, Option<f64>)>,
}

impl LayerCapture for Capture {
    fn frame(&mut self, ctx: &FrameCtx<'_>, _: &mut PageIds, out: &mut Fields) {
        let Some(probe) = ctx.heights else {
            return; // the page shades nothing
        };
        let streaming = ctx.engine.service::<dyn StreamingService>(STREAMING);
        let vertical = streaming.as_ref().is_some_and(|s| s.vertical().is_some());
        // Chunks with a chunk event (loaded or released: a height is asked again), chunks an
        // edit changed, blocks an edit changed, and the blocks the events load and release.
        let mut evented = BTreeSet::new();
        let mut reshaped = BTreeSet::new();
        let mut reshaped_blocks = BTreeSet::new();
        let mut block_events = Vec::new();
        for e in ctx.events {
            if let Some((level, b, loaded)) = e.block() {
                block_events.push((loaded, level, b));
            } else if let Some((level, at)) = TerrainEvent::changed(e) {
                if level == 0 {
                    reshaped.insert(at);
                } else {
                    reshaped_blocks.insert((level, at));
                }
            } else if vertical {
                if let Some((c, _)) = e.column() {
                    evented.insert(c);
                }
            } else if let Some((c, _)) = e.chunk() {
                evented.insert(c);
            }
        }
        // The page forgets a height when its chunk leaves the loaded set, by an event or a
        // correction (so also when a chunk is released and loaded again within the tick); an
        // edited chunk's height is asked again.
        let loaded = match &streaming {
            Some(s) if vertical => s.columns(),
            Some(s) => s.loaded(),
            None => Vec::new(),
        };
        let now: BTreeSet<ChunkPos> = loaded.iter().copied().collect();
        self.heights
            .retain(|c| now.contains(c) && !evented.contains(c) && !reshaped.contains(c));
        let mut heights = Vec::new();
        for c in loaded {
            if self.heights.contains(&c) {
                continue;
            }
            if let Some(h) = probe(c).filter(|h| h.is_finite()) {
                heights.extend([c.x as f64, c.z as f64, h]);
                self.heights.insert(c);
            }
        }
        if !heights.is_empty() {
            put(out, "h", heights);
        }
        if let Some(s) = &streaming {
            if let Some(levels) = s.lod() {
                let block_heights =
                    self.blocks(ctx.engine, &**s, &levels, &block_events, &reshaped_blocks);
                if !block_heights.is_empty() {
                    put(out, "bh", block_heights);
                }
            }
        }
    }

    fn hidden_variables(&self) -> &'static [&'static str] {
        &[VAR_WAITS]
    }
}

impl Capture {
    /// The loaded blocks' heights that changed: `[level, x, z, height, …]`.
    fn blocks(
        &mut self,
        engine: &Engine,
        streaming: &dyn StreamingService,
        levels: &[Vec<ChunkPos>],
        events: &[(bool, u32, ChunkPos)],
        reshaped: &BTreeSet<(u32, ChunkPos)>,
    ) -> Vec<Value> {
        for &(loaded, level, b) in events {
            if loaded {
                self.blocks.insert((level, b), (false, None));
            } else {
                self.blocks.remove(&(level, b));
            }
        }
        let now: BTreeSet<(u32, ChunkPos)> = levels
            .iter()
            .zip(1u32..)
            .flat_map(|(blocks, level)| blocks.iter().map(move |&b| (level, b)))
            .collect();
        self.blocks.retain(|k, _| now.contains(k));
        let mut out = Vec::new();
        for &(level, b) in &now {
            let (built, height) = self.blocks.entry((level, b)).or_default();
            let ready = streaming.lod_ready(level, b);
            let mut ask = height.is_none() || reshaped.contains(&(level, b));
            if ready != *built {
                *built = ready;
                if !ready {
                    *height = None;
                }
                ask = true;
            }
            if ask {
                let h = block_height(engine, level, b).filter(|h| h.is_finite());
                if let Some(h) = h.filter(|h| *height != Some(*h)) {
                    *height = Some(h);
                    out.extend([json!(level), json!(b.x), json!(b.z), metres(h)]);
                }
            }
        }
        out
    }
}
