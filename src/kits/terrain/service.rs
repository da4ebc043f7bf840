//! The `world.terrain` service: what other kits, mods and tests may ask of the kit (the names
//! of what it emits are in `events.rs`). Reach it through the service registry as `Rc<dyn TerrainService>`.

use std::sync::Arc;

use crate::grid::{ChunkPos, Position};

use super::{ChunkData, Snapshot, SnapshotError};

/// Variable: how many commits had to wait for their worker.
pub const VAR_WAITS: &str = "world.terrain.waits";

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
    /// Chunks and LOD blocks dispatched whose worker has not finished yet (work outstanding;
    /// 0: the pool is idle). A loading screen may show it; the simulation never waits on it.
    /// Inline (docs/reference/terrain.md#inline) it is always 0: no job runs before its commit.
    fn generating(&self) -> usize;
    /// Sets the cell containing `at` to `height` (and `material`, if given) in a built chunk
    /// (docs/reference/terrain.md#dirty-and-modified). The chunk becomes *modified* (saved) unless
    /// it is back to its generated baseline, and *dirty*: it and the built neighbours whose edge
    /// the cell lies on are told `world.terrain.changed` at the end of the tick. Setting a cell to
    /// what it already holds changes nothing. A chunk that is not built refuses:
    /// `world.terrain.edit.refused {x, z, reason}` is emitted and the reason returned.
    fn edit(&self, at: Position, height: u16, material: Option<u8>) -> Result<(), EditRefused>;
    /// The chunk's version (docs/reference/terrain.md#versions): 1 at its commit, +1 at each
    /// edit of a cell of it or of one of its 8 neighbours; `None` when not built.
    fn version(&self, chunk: ChunkPos) -> Option<u64>;
    /// A bordered snapshot (docs/reference/terrain.md#bordered-snapshots): the chunk's cells
    /// and `skin` cells of its 8 neighbours, with its version, copied in one call. `skin`
    /// 0..=8 and at most `cellsPerChunk`; a skin > 0 needs the chunk complete, a skin of 0 built.
    fn snapshot(&self, chunk: ChunkPos, skin: u32) -> Result<Snapshot, SnapshotError>;
    /// Whether a built chunk differs from its generated baseline.
    fn is_modified(&self, chunk: ChunkPos) -> bool;
    /// The built terrain of LOD block `(x, z)` of `level` (1 = the first `lod` entry;
    /// docs/reference/terrain.md#lod-blocks-built-by-terrain): `cellsPerChunk²` cells, cell
    /// `(i, j)` the full-resolution cell `(i·s, j·s)` of the block's area, edits included. `None`
    /// for level 0, a block not loaded or not built.
    fn lod_block(&self, level: u32, x: i64, z: i64) -> Option<Arc<ChunkData>> {
        let _ = (level, x, z);
        None
    }
}

/// The hash as events and saves write it.
pub fn hash_text(hash: u64) -> String {
    crate::host::hash_hex(hash)
}
