//! The types C sees (the handle, the statuses, a chunk, a chunk event and its kinds) and the
//! errors behind each status.

use super::*;

/// A game handle. 0 is never a game; every other value names at most one game, ever.
pub type WsGame = u64;

/// What a call did. `WS_STATUS_OK` is 0; every other value is an error whose message the call
/// hands out through `out_error`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WsStatus {
    /// Done.
    Ok = 0,
    /// A required pointer argument is null.
    NullArgument = 1,
    /// A text argument is not valid UTF-8.
    InvalidUtf8 = 2,
    /// The handle names no live game of this thread (freed, never created, or another
    /// thread's).
    InvalidHandle = 3,
    /// A call on this game panicked earlier; only `ws_game_free` is accepted.
    Poisoned = 4,
    /// The scene (or one of its mods) is wrong; the message lists every problem.
    BadScene = 5,
    /// An input line is malformed, or stamped later than the next tick to run.
    BadInput = 6,
    /// A well-formed input could not be applied (e.g. it names an entity that does not exist).
    InputFailed = 7,
    /// The scene does not enable the `world.streaming` kit.
    NoStreaming = 8,
    /// The game could not be saved.
    SaveFailed = 9,
    /// The save could not be loaded; the game is unchanged.
    LoadFailed = 10,
    /// A count is out of range (too many ticks).
    OutOfRange = 11,
    /// The output buffer is too small; `out_count` holds the size needed.
    BufferTooSmall = 12,
    /// No engine variable has that name, or its value is not a number.
    NoSuchVariable = 13,
    /// `ws_string_free` got a pointer this library did not hand out, or one already freed.
    UnknownString = 14,
    /// A call panicked inside the library (a bug: please report the message).
    Panic = 15,
    /// `ws_game_terrain`: the chunk (or LOD block) is not built (not loaded yet, still
    /// generating, or released).
    NotBuilt = 16,
    /// The scene's world directory (`worldDir`) is held by another game, in this process or
    /// another (its `session.lock`); the message names both.
    WorldInUse = 17,
    /// `ws_game_free` could not write every edit back to the world directory: the message
    /// names each region file and how many chunks are lost (the game is freed all the same).
    EditsLost = 18,
    /// `ws_game_terrain_snapshot`: the chunk is not complete (docs/reference/engines.md#complete-chunks-in-c;
    /// with skin 0: not built). 19, as the contract numbers it (round 4 took it from
    /// `WS_STATUS_NO_TERRAIN`, which moved to 21).
    NotComplete = 19,
    /// No live entity has that id (`ws_game_entity_data`): never spawned, despawned, or stored
    /// with its chunk (docs/reference/engine.md#entity-data).
    NoSuchEntity = 20,
    /// The scene does not enable the `world.terrain` kit (`ws_game_terrain`). 21 since round 4
    /// (19 before: the contract gives 19 to `WS_STATUS_NOT_COMPLETE`).
    NoTerrain = 21,
}

/// One chunk: the `{x, z}` of docs/reference/grid.md#chunks-and-chunkof.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WsChunk {
    /// Column (east-west).
    pub x: i64,
    /// Row (north-south).
    pub z: i64,
}

/// `world.chunk.loaded {x, z}`.
pub const WS_CHUNK_EVENT_LOADED: i32 = 0;
/// `world.chunk.unloaded {x, z}`.
pub const WS_CHUNK_EVENT_UNLOADED: i32 = 1;
/// `world.terrain.built {x, z, hash}`.
pub const WS_CHUNK_EVENT_BUILT: i32 = 2;
/// `world.terrain.changed {x, z}` (with `level` for an LOD block).
pub const WS_CHUNK_EVENT_CHANGED: i32 = 3;
/// `world.lod.loaded {level, x, z}`.
pub const WS_CHUNK_EVENT_LOD_LOADED: i32 = 4;
/// `world.lod.unloaded {level, x, z}`.
pub const WS_CHUNK_EVENT_LOD_UNLOADED: i32 = 5;
/// `world.terrain.lod.built {level, x, z, hash}`.
pub const WS_CHUNK_EVENT_LOD_BUILT: i32 = 6;
/// `world.chunk.complete {x, z}`: the chunk and its neighbours within `neighbours` rings are
/// loaded and built (docs/reference/engines.md#complete-chunks-in-c).
pub const WS_CHUNK_EVENT_COMPLETE: i32 = 7;
/// `world.chunk.incomplete {x, z}`: a chunk complete at the end of the last tick is loaded but
/// not complete now.
pub const WS_CHUNK_EVENT_INCOMPLETE: i32 = 8;
/// `world.column.loaded {x, z}`: the first section of column `(x, z)` loaded (only with
/// `vertical` on, docs/reference/engines.md#vertical-sections-in-c); `y` is 0.
pub const WS_CHUNK_EVENT_COLUMN_LOADED: i32 = 9;
/// `world.column.unloaded {x, z}`: the last section of column `(x, z)` released (only with
/// `vertical` on); `y` is 0.
pub const WS_CHUNK_EVENT_COLUMN_UNLOADED: i32 = 10;

/// One chunk event (docs/reference/engines.md#the-hot-path) as `ws_game_drain_chunk_events` hands
/// it out: no JSON.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WsChunkEvent {
    /// One of the `WS_CHUNK_EVENT_*` kinds.
    pub kind: i32,
    /// 0 for a chunk; the LOD level (1 = the first `lod` entry) for a block.
    pub level: u32,
    /// Column of the chunk (or block).
    pub x: i64,
    /// Row of the chunk (or block).
    pub z: i64,
    /// FNV-1a 64 of the built bytes for `BUILT` and `LOD_BUILT`
    /// (docs/reference/terrain.md#chunk-content), else 0.
    pub hash: u64,
    /// Section row of the chunk (docs/reference/engines.md#vertical-sections-in-c): the event's
    /// `y` with `vertical` on, 0 without it and for the column kinds, the terrain kinds and LOD
    /// blocks (which are per column). The last field, so every earlier field keeps its offset.
    pub y: i64,
}

/// Why a C call failed: each variant is one [`WsStatus`] with its message.
#[derive(Debug, thiserror::Error)]
pub(super) enum CapiError {
    /// A required pointer is null.
    #[error("{0} is null")]
    Null(&'static str),
    /// A text argument is not UTF-8.
    #[error("{what} is not valid UTF-8 (the first bad byte is at offset {offset})")]
    Utf8 {
        /// The argument.
        what: &'static str,
        /// Where the valid prefix ends.
        offset: usize,
    },
    /// Too long a text.
    #[error("{what} is {len} bytes; the limit is {limit}")]
    TooLong {
        /// The argument.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The most it may be.
        limit: u64,
    },
    /// No such game.
    #[error(
        "no live game has handle {0} on this thread (it was freed, never created, or belongs to \
         another thread: a game is used on the thread that created it)"
    )]
    Handle(u64),
    /// A call on this game is already running (only possible through re-entry).
    #[error("game {0} is busy: a call on it is still running")]
    Busy(u64),
    /// A call panicked earlier.
    #[error("game {0} is poisoned: an earlier call on it panicked; free it")]
    Poisoned(u64),
    /// The scene is wrong.
    #[error("{0}")]
    Scene(GameError),
    /// The input line is malformed.
    #[error("input: {0}")]
    BadInput(String),
    /// The input could not be applied.
    #[error("input: {0}")]
    Input(String),
    /// No streaming kit.
    #[error("the scene does not enable the world.streaming kit")]
    NoStreaming,
    /// Saving failed.
    #[error("save: {0}")]
    Save(FileError),
    /// Loading failed.
    #[error("load: {0}")]
    Load(FileError),
    /// Too many ticks.
    #[error("ticks: {n} more ticks from tick {at} would pass tick {MAX_TICK}, the limit")]
    Ticks {
        /// Ticks asked for.
        n: u64,
        /// The current tick.
        at: u64,
    },
    /// The buffer is too small.
    #[error("the buffer holds {capacity} chunks; {count} are needed")]
    Buffer {
        /// Its capacity.
        capacity: usize,
        /// What is needed.
        count: usize,
    },
    /// A variable is missing or not a number.
    #[error("no numeric engine variable named `{0}`")]
    Variable(String),
    /// Not a string of ours.
    #[error(
        "ws_string_free: {0:#x} is not a string this library handed out (or it was already freed)"
    )]
    UnknownString(usize),
    /// No terrain kit.
    #[error("the scene does not enable the world.terrain kit")]
    NoTerrain,
    /// The chunk or block is not built.
    #[error("{0}")]
    NotBuilt(String),
    /// The cell buffers are too small.
    #[error("the buffers hold {capacity} cells; {count} are needed (cellsPerChunk²)")]
    Cells {
        /// Their capacity.
        capacity: usize,
        /// What is needed.
        count: usize,
    },
    /// The snapshot's buffers are too small.
    #[error("the buffers hold {capacity} cells; {count} are needed ((cellsPerChunk + 2·skin)²)")]
    SnapshotCells {
        /// Their capacity.
        capacity: usize,
        /// What is needed.
        count: usize,
    },
    /// A snapshot's skin out of range (the terrain kit's own words).
    #[error("{0}")]
    Skin(String),
    /// A snapshot of a chunk that is not complete (not built, with skin 0).
    #[error("{0}")]
    NotComplete(String),
    /// No live entity.
    #[error("no live entity `{0}` (never spawned, despawned, or stored with its chunk)")]
    NoEntity(String),
    /// The last write back failed (`ws_game_free`).
    #[error("{0}")]
    Close(GameError),
    /// A panic, caught.
    #[error("internal error (a panic, caught at the C boundary): {0}")]
    Panic(String),
}

impl CapiError {
    pub(super) fn status(&self) -> WsStatus {
        match self {
            CapiError::Null(_) => WsStatus::NullArgument,
            CapiError::Utf8 { .. } => WsStatus::InvalidUtf8,
            CapiError::TooLong { .. } | CapiError::Ticks { .. } => WsStatus::OutOfRange,
            CapiError::Handle(_) | CapiError::Busy(_) => WsStatus::InvalidHandle,
            CapiError::Poisoned(_) => WsStatus::Poisoned,
            CapiError::Scene(GameError::WorldInUse { .. }) => WsStatus::WorldInUse,
            CapiError::Scene(_) => WsStatus::BadScene,
            CapiError::Close(_) => WsStatus::EditsLost,
            CapiError::BadInput(_) => WsStatus::BadInput,
            CapiError::Input(_) => WsStatus::InputFailed,
            CapiError::NoStreaming => WsStatus::NoStreaming,
            CapiError::Save(_) => WsStatus::SaveFailed,
            CapiError::Load(_) => WsStatus::LoadFailed,
            CapiError::Buffer { .. }
            | CapiError::Cells { .. }
            | CapiError::SnapshotCells { .. } => WsStatus::BufferTooSmall,
            CapiError::Skin(_) => WsStatus::OutOfRange,
            CapiError::NotComplete(_) => WsStatus::NotComplete,
            CapiError::NoTerrain => WsStatus::NoTerrain,
            CapiError::NotBuilt(_) => WsStatus::NotBuilt,
            CapiError::NoEntity(_) => WsStatus::NoSuchEntity,
            CapiError::Variable(_) => WsStatus::NoSuchVariable,
            CapiError::UnknownString(_) => WsStatus::UnknownString,
            CapiError::Panic(_) => WsStatus::Panic,
        }
    }
}
