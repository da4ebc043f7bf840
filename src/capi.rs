//! The C ABI (SPEC §14): how Godot, Unity, Unreal or any C program drive a game through the
//! `cdylib`/`staticlib` builds of this crate. `include/world_streaming.h` is generated from this
//! file by cbindgen (`WS_BLESS=1 cargo test --test capi_header` rewrites it; the test fails when
//! it drifts).
//!
//! The rules every function keeps:
//! - A game is a [`WsGame`] handle: a number, never a pointer. Handles live in a registry of the
//!   thread that created them and are never reused, so a freed, forged or foreign-thread handle is
//!   found missing and answered with [`WsStatus::InvalidHandle`], never dereferenced.
//! - Every function returns a [`WsStatus`]; on an error, when `out_error` is not null, it receives
//!   a message the caller frees with [`ws_string_free`] (on success it is set to null).
//! - Every text argument is a NUL-terminated UTF-8 string; null or invalid UTF-8 is an error.
//! - No panic crosses the boundary: every entry runs under `catch_unwind`. A game whose call
//!   panicked is marked poisoned and refuses every call but [`ws_game_free`].
//! - Strings handed out (JSON, messages) are freed with [`ws_string_free`]; it refuses (with
//!   [`WsStatus::UnknownString`]) a pointer it did not hand out or already freed.
//!
//! This is the only module of the crate besides the Lua VM's budget that holds `unsafe` code: the
//! reads of the caller's strings and the writes through its out-pointers.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ffi::{c_char, CStr, CString};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

use crate::files::inputs::{check_input, parse_line, Action, InputLine, MAX_TICK};
use crate::files::{FileError, MAX_FILE_BYTES};
use crate::game::{Game, GameError};
use crate::grid::{ChunkPos, Position};
use crate::host::{EntityId, Event};
use crate::kits::builtin_catalog;
use crate::kits::streaming::{StreamingService, CHUNK_LOADED, CHUNK_UNLOADED};
use crate::kits::terrain::{ChunkData, TerrainService, TERRAIN, TERRAIN_BUILT, TERRAIN_CHANGED};

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
    /// The scene does not enable the `world.terrain` kit (`ws_game_terrain`).
    NoTerrain = 19,
    /// No live entity has that id (`ws_game_entity_data`): never spawned, despawned, or stored
    /// with its chunk (SPEC §15).
    NoSuchEntity = 20,
}

/// One chunk: the `{x, z}` of SPEC §1.
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

/// `world.lod.loaded` (SPEC §17).
const LOD_LOADED: &str = "world.lod.loaded";
/// `world.lod.unloaded` (SPEC §17).
const LOD_UNLOADED: &str = "world.lod.unloaded";
/// `world.terrain.lod.built` (SPEC §17).
const LOD_BUILT: &str = "world.terrain.lod.built";

/// One chunk event (SPEC §19) as `ws_game_drain_chunk_events` hands it out: no JSON.
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
    /// FNV-1a 64 of the built bytes for `BUILT` and `LOD_BUILT` (SPEC §12), else 0.
    pub hash: u64,
}

/// The event as a [`WsChunkEvent`], when it is one of the seven chunk events and its payload
/// has their shape (`x`, `z` integers; `level` a u32 where given; `hash` 16 hex digits, or a
/// number, for the built events); `None` for every other event.
pub fn chunk_event(event: &Event) -> Option<WsChunkEvent> {
    let (kind, has_hash) = match &*event.event {
        CHUNK_LOADED => (WS_CHUNK_EVENT_LOADED, false),
        CHUNK_UNLOADED => (WS_CHUNK_EVENT_UNLOADED, false),
        TERRAIN_BUILT => (WS_CHUNK_EVENT_BUILT, true),
        TERRAIN_CHANGED => (WS_CHUNK_EVENT_CHANGED, false),
        LOD_LOADED => (WS_CHUNK_EVENT_LOD_LOADED, false),
        LOD_UNLOADED => (WS_CHUNK_EVENT_LOD_UNLOADED, false),
        LOD_BUILT => (WS_CHUNK_EVENT_LOD_BUILT, true),
        _ => return None,
    };
    let data = &event.data;
    let x = data.get("x")?.as_i64()?;
    let z = data.get("z")?.as_i64()?;
    let level = match data.get("level") {
        None => 0,
        Some(v) => u32::try_from(v.as_u64()?).ok()?,
    };
    let hash = if has_hash {
        match data.get("hash")? {
            Value::String(hex) if hex.len() == 16 => u64::from_str_radix(hex, 16).ok()?,
            v => v.as_u64()?,
        }
    } else {
        0
    };
    Some(WsChunkEvent {
        kind,
        level,
        x,
        z,
        hash,
    })
}

/// The events taken from the engine and not yet handed out, split so each drain costs what it
/// hands out: the chunk events (already in their C form, with the event they stand for) and
/// every other event, each with its emission sequence number so `ws_game_drain_events` can
/// merge them back in emission order.
#[derive(Debug, Default)]
struct EventQueue {
    chunks: VecDeque<(u64, WsChunkEvent, Event)>,
    others: VecDeque<(u64, Event)>,
    next: u64,
}

impl EventQueue {
    /// Moves the engine's delivered events into the queue.
    fn pull(&mut self, game: &mut Game) {
        for event in game.engine_mut().take_events() {
            let seq = self.next;
            self.next += 1;
            match chunk_event(&event) {
                Some(c) => self.chunks.push_back((seq, c, event)),
                None => self.others.push_back((seq, event)),
            }
        }
    }

    /// Every event not handed out yet, in emission order (the queue is left empty).
    fn take_all(&mut self, game: &mut Game) -> Vec<Event> {
        if self.chunks.is_empty() && self.others.is_empty() {
            return game.engine_mut().take_events(); // nothing held back: the engine's log as is
        }
        self.pull(game);
        let mut out = Vec::with_capacity(self.chunks.len() + self.others.len());
        loop {
            let chunk_first = match (self.chunks.front(), self.others.front()) {
                (Some(c), Some(o)) => c.0 < o.0,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if chunk_first {
                out.extend(self.chunks.pop_front().map(|c| c.2));
            } else {
                out.extend(self.others.pop_front().map(|o| o.1));
            }
        }
        out
    }
}

/// Why a C call failed: each variant is one [`WsStatus`] with its message.
#[derive(Debug, thiserror::Error)]
enum CapiError {
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
    #[error("{what} is {len} bytes; the limit is {MAX_FILE_BYTES}")]
    TooLong {
        /// The argument.
        what: &'static str,
        /// Its length.
        len: usize,
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
    fn status(&self) -> WsStatus {
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
            CapiError::Buffer { .. } | CapiError::Cells { .. } => WsStatus::BufferTooSmall,
            CapiError::NoTerrain => WsStatus::NoTerrain,
            CapiError::NotBuilt(_) => WsStatus::NotBuilt,
            CapiError::NoEntity(_) => WsStatus::NoSuchEntity,
            CapiError::Variable(_) => WsStatus::NoSuchVariable,
            CapiError::UnknownString(_) => WsStatus::UnknownString,
            CapiError::Panic(_) => WsStatus::Panic,
        }
    }
}

/// A game in the registry; `poisoned` is set for the length of every call and cleared when the
/// call returns, so a panic leaves it set.
struct Slot {
    game: Game,
    poisoned: bool,
    /// Events taken from the engine but not handed out yet (see [`ws_game_drain_chunk_events`]).
    queue: EventQueue,
}

/// Handles are never reused: a freed handle stays invalid for the life of the process.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The games of this thread (a game holds `Rc`s: it never leaves its thread).
    static GAMES: RefCell<BTreeMap<WsGame, Slot>> = const { RefCell::new(BTreeMap::new()) };
}

/// The strings handed out and not yet freed (any thread may free one), each kept as the bitwise
/// NOT of its address: a leak checker (valgrind in CI) sees no pointer to a string the caller
/// forgot to free, so a leak is reported as one instead of hiding in this set.
static STRINGS: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

fn live_strings<R>(f: impl FnOnce(&mut HashSet<usize>) -> R) -> R {
    // A poisoned lock only means a panic while it was held; the set itself is always whole.
    let mut guard = STRINGS.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashSet::new))
}

/// Hands `text` out as a C string the caller frees with [`ws_string_free`]. NUL bytes (which C
/// strings cannot hold) are written as `\0`.
fn hand_out(text: String) -> *mut c_char {
    let text = if text.contains('\0') {
        text.replace('\0', "\\0")
    } else {
        text
    };
    let raw = CString::new(text).expect("NULs replaced").into_raw();
    live_strings(|s| s.insert(!(raw as usize)));
    raw
}

/// Runs one entry: clears `*out_error`, catches panics, and turns an error into its status and
/// message.
///
/// # Safety
/// `out_error` is null or valid for one pointer write.
unsafe fn entry(
    out_error: *mut *mut c_char,
    f: impl FnOnce() -> Result<(), CapiError>,
) -> WsStatus {
    if !out_error.is_null() {
        // SAFETY: the caller passes a null or writable `char **` (the contract of every entry).
        unsafe { out_error.write(std::ptr::null_mut()) };
    }
    let result = panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Err(CapiError::Panic(message))
    });
    match result {
        Ok(()) => WsStatus::Ok,
        Err(e) => {
            if !out_error.is_null() {
                let message = hand_out(e.to_string());
                // SAFETY: as above.
                unsafe { out_error.write(message) };
            }
            e.status()
        }
    }
}

/// Reads a NUL-terminated UTF-8 argument.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string that stays valid for `'a`.
unsafe fn text<'a>(ptr: *const c_char, what: &'static str) -> Result<&'a str, CapiError> {
    if ptr.is_null() {
        return Err(CapiError::Null(what));
    }
    // SAFETY: not null, and the caller promises a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(CapiError::TooLong {
            what,
            len: bytes.len(),
        });
    }
    std::str::from_utf8(bytes).map_err(|e| CapiError::Utf8 {
        what,
        offset: e.valid_up_to(),
    })
}

/// Writes `value` through an out-pointer.
///
/// # Safety
/// `out` is null or valid for one write of a `T`.
unsafe fn put<T>(out: *mut T, what: &'static str, value: T) -> Result<(), CapiError> {
    if out.is_null() {
        return Err(CapiError::Null(what));
    }
    // SAFETY: not null, and the caller promises it is writable.
    unsafe { out.write(value) };
    Ok(())
}

/// Runs `f` on the game `handle` names, poisoning it if `f` panics.
fn with_game<R>(
    handle: WsGame,
    f: impl FnOnce(&mut Game) -> Result<R, CapiError>,
) -> Result<R, CapiError> {
    with_slot(handle, |slot| f(&mut slot.game))
}

/// [`with_game`] with the whole slot (the game and its event queue).
fn with_slot<R>(
    handle: WsGame,
    f: impl FnOnce(&mut Slot) -> Result<R, CapiError>,
) -> Result<R, CapiError> {
    GAMES.with(|games| {
        let mut games = games
            .try_borrow_mut()
            .map_err(|_| CapiError::Busy(handle))?;
        let slot = games.get_mut(&handle).ok_or(CapiError::Handle(handle))?;
        if slot.poisoned {
            return Err(CapiError::Poisoned(handle));
        }
        slot.poisoned = true;
        let result = f(slot);
        slot.poisoned = false;
        result
    })
}

fn streaming(game: &Game) -> Result<std::rc::Rc<dyn StreamingService>, CapiError> {
    game.streaming().ok_or(CapiError::NoStreaming)
}

/// Copies `chunks` to the caller's buffer (see [`ws_game_loaded`] for the contract).
///
/// # Safety
/// `out` is null or valid for `capacity` writes of a [`WsChunk`]; `out_count` null or writable.
unsafe fn put_chunks(
    chunks: &[ChunkPos],
    out: *mut WsChunk,
    capacity: usize,
    out_count: *mut usize,
) -> Result<(), CapiError> {
    // SAFETY: forwarded contract.
    unsafe { put(out_count, "out_count", chunks.len())? };
    if out.is_null() {
        return if capacity == 0 {
            Ok(())
        } else {
            Err(CapiError::Null("out (with a capacity above 0)"))
        };
    }
    if capacity < chunks.len() {
        return Err(CapiError::Buffer {
            capacity,
            count: chunks.len(),
        });
    }
    for (i, c) in chunks.iter().enumerate() {
        // SAFETY: i < chunks.len() <= capacity, and `out` holds `capacity` chunks.
        unsafe { out.add(i).write(WsChunk { x: c.x, z: c.z }) };
    }
    Ok(())
}

/// The version of the `world.streaming` kit this library runs (its `kit.json`, e.g. `1.7.0`): a
/// static string, never freed.
#[no_mangle]
pub extern "C" fn ws_version() -> *const c_char {
    static VERSION: OnceLock<CString> = OnceLock::new();
    // A panic cannot happen here (the manifest is compiled in and checked by the kit's tests),
    // but none may cross the boundary either: answer an empty string then.
    let version = panic::catch_unwind(|| {
        VERSION.get_or_init(|| {
            CString::new(crate::kits::streaming::manifest().version.to_string())
                .expect("a version has no NUL")
        })
    });
    match version {
        Ok(v) => v.as_ptr(),
        Err(_) => c"".as_ptr(),
    }
}

/// The name of a status (`WS_STATUS_BAD_INPUT`), or `WS_STATUS_UNKNOWN`: a static string, never
/// freed.
#[no_mangle]
pub extern "C" fn ws_status_name(status: i32) -> *const c_char {
    let name: &'static str = match status {
        0 => "WS_STATUS_OK\0",
        1 => "WS_STATUS_NULL_ARGUMENT\0",
        2 => "WS_STATUS_INVALID_UTF8\0",
        3 => "WS_STATUS_INVALID_HANDLE\0",
        4 => "WS_STATUS_POISONED\0",
        5 => "WS_STATUS_BAD_SCENE\0",
        6 => "WS_STATUS_BAD_INPUT\0",
        7 => "WS_STATUS_INPUT_FAILED\0",
        8 => "WS_STATUS_NO_STREAMING\0",
        9 => "WS_STATUS_SAVE_FAILED\0",
        10 => "WS_STATUS_LOAD_FAILED\0",
        11 => "WS_STATUS_OUT_OF_RANGE\0",
        12 => "WS_STATUS_BUFFER_TOO_SMALL\0",
        13 => "WS_STATUS_NO_SUCH_VARIABLE\0",
        14 => "WS_STATUS_UNKNOWN_STRING\0",
        15 => "WS_STATUS_PANIC\0",
        16 => "WS_STATUS_NOT_BUILT\0",
        17 => "WS_STATUS_WORLD_IN_USE\0",
        18 => "WS_STATUS_EDITS_LOST\0",
        19 => "WS_STATUS_NO_TERRAIN\0",
        20 => "WS_STATUS_NO_SUCH_ENTITY\0",
        _ => "WS_STATUS_UNKNOWN\0",
    };
    name.as_ptr().cast()
}

/// Frees a string this library handed out (a message, a JSON document). Null does nothing. A
/// pointer it did not hand out, or one already freed, is refused with `WS_STATUS_UNKNOWN_STRING`
/// and left alone.
///
/// # Safety
/// None beyond C's: the pointer is only compared with the strings handed out until it is known
/// to be one of them.
#[no_mangle]
pub unsafe extern "C" fn ws_string_free(s: *mut c_char) -> WsStatus {
    let result = panic::catch_unwind(|| {
        if s.is_null() {
            return Ok(());
        }
        if !live_strings(|set| set.remove(&!(s as usize))) {
            return Err(CapiError::UnknownString(s as usize));
        }
        // SAFETY: `s` came from `CString::into_raw` in `hand_out` and was still live (it was
        // in the set, which it has just left, so it is freed once).
        drop(unsafe { CString::from_raw(s) });
        Ok(())
    });
    match result {
        Ok(Ok(())) => WsStatus::Ok,
        Ok(Err(e)) => e.status(),
        Err(_) => WsStatus::Panic,
    }
}

/// Builds a game from scene JSON text (SPEC §9's scene file) with the built-in kits; mod paths
/// in the scene are relative to `base_dir` (`"."` for the current directory). The first scene is
/// entered; no tick has run.
///
/// # Safety
/// `scene_json` and `base_dir` are null or NUL-terminated strings; `out_game` and `out_error`
/// are null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_new(
    scene_json: *const c_char,
    base_dir: *const c_char,
    out_game: *mut WsGame,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: `out_error` per this function's contract; the closure's reads likewise.
    unsafe {
        entry(out_error, || {
            if out_game.is_null() {
                return Err(CapiError::Null("out_game"));
            }
            let scene = text(scene_json, "scene_json")?;
            let base = text(base_dir, "base_dir")?;
            let game = Game::from_scene_text(scene, "scene", Path::new(base), &builtin_catalog())
                .map_err(CapiError::Scene)?;
            let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
            GAMES.with(|games| {
                games.borrow_mut().insert(
                    handle,
                    Slot {
                        game,
                        poisoned: false,
                        queue: EventQueue::default(),
                    },
                )
            });
            put(out_game, "out_game", handle)
        })
    }
}

/// Frees a game, writing its edits back to the world directory first (and releasing the
/// directory). A handle already freed (or never created) is `WS_STATUS_INVALID_HANDLE`; edits
/// that could not be written are `WS_STATUS_EDITS_LOST`, the message naming each region file and
/// how many chunks (the game is freed all the same).
///
/// # Safety
/// `out_error` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_free(game: WsGame, out_error: *mut *mut c_char) -> WsStatus {
    // SAFETY: `out_error` per this function's contract.
    unsafe {
        entry(out_error, || {
            let slot = GAMES.with(|games| {
                let mut games = games.try_borrow_mut().map_err(|_| CapiError::Busy(game))?;
                games.remove(&game).ok_or(CapiError::Handle(game))
            })?;
            slot.game.close().map_err(CapiError::Close)
        })
    }
}

/// Applies one input line, in the inputs file's format (SPEC §9):
/// `{"tick": 1, "do": "move", "entity": "hero", "to": {"x": 40, "z": 8}}`. An input stamped `t`
/// belongs before tick `t`, so a line stamped later than the next tick to run is refused
/// (`WS_STATUS_BAD_INPUT`); apply it after ticking up to `t - 1`. `save`/`load` paths are
/// relative to the process's current directory.
///
/// # Safety
/// `line` is null or a NUL-terminated string; `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_apply(
    game: WsGame,
    line: *const c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: `out_error` and `line` per this function's contract.
    unsafe {
        entry(out_error, || {
            let line = text(line, "line")?;
            let input = parse_line(line).map_err(CapiError::BadInput)?;
            with_game(game, |g| {
                let next = g.engine().tick_count() + 1;
                if input.tick > next {
                    return Err(CapiError::BadInput(format!(
                        "tick: the line is stamped {} but the next tick to run is {next}; \
                         apply it after ticking to {}",
                        input.tick,
                        input.tick - 1
                    )));
                }
                g.apply(&input).map_err(|e| CapiError::Input(e.to_string()))
            })
        })
    }
}

/// Runs `n` ticks.
///
/// # Safety
/// `out_error` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_tick(
    game: WsGame,
    n: u64,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: `out_error` per this function's contract.
    unsafe {
        entry(out_error, || {
            with_game(game, |g| {
                let at = g.engine().tick_count();
                if n > MAX_TICK.saturating_sub(at) {
                    return Err(CapiError::Ticks { n, at });
                }
                for _ in 0..n {
                    g.tick();
                }
                Ok(())
            })
        })
    }
}

/// The tick counter: the last tick that ran (0 before the first).
///
/// # Safety
/// `out_tick` and `out_error` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_tick_count(
    game: WsGame,
    out_tick: *mut u64,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let tick = with_game(game, |g| Ok(g.engine().tick_count()))?;
            put(out_tick, "out_tick", tick)
        })
    }
}

/// Takes the events emitted since the last drain, as a JSON array of the event log's objects
/// (`[{"tick": 1, "event": "world.chunk.loaded", "data": {"x": 0, "z": 0}}, …]`, emission
/// order). The game keeps every event until it is drained: drain after every tick or few. The
/// chunk events already handed out by [`ws_game_drain_chunk_events`] are not in it; those it
/// has not handed out are, in their place.
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_game_drain_events(
    game: WsGame,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            if out_json.is_null() {
                return Err(CapiError::Null("out_json"));
            }
            let events = with_slot(game, |slot| Ok(slot.queue.take_all(&mut slot.game)))?;
            let json = serde_json::to_string(&events).expect("events are JSON");
            put(out_json, "out_json", hand_out(json))
        })
    }
}

/// Moves `entity` to `(x, y, z)` as a `move` input stamped with the next tick would
/// (`{"tick": next, "do": "move", "entity": …, "to": {"x": x, "y": y, "z": z}}`), without JSON:
/// the per-frame transform sync. A coordinate that is not finite or beyond ±1e15 m, or a
/// malformed id, is `WS_STATUS_BAD_INPUT`; an entity that does not exist is
/// `WS_STATUS_INPUT_FAILED` (the messages an input line gets).
///
/// # Safety
/// `entity` is null or a NUL-terminated string; `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_move(
    game: WsGame,
    entity: *const c_char,
    x: f64,
    y: f64,
    z: f64,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let entity = text(entity, "entity")?;
            let to = Position { x, y, z };
            // check_input's two checks of a move, without building its list of names (the hot
            // path); the messages are the same (a test compares them with the line's).
            crate::limits::check_name(entity).map_err(|m| {
                CapiError::BadInput(crate::json::Problem::new("entity", m).to_string())
            })?;
            to.check()
                .map_err(|p| CapiError::BadInput(p.under("to").to_string()))?;
            let action = Action::Move {
                entity: EntityId::new(entity),
                to,
            };
            with_game(game, |g| {
                let input = InputLine {
                    tick: g.engine().tick_count() + 1,
                    action,
                };
                g.apply(&input).map_err(|e| CapiError::Input(e.to_string()))
            })
        })
    }
}

/// Takes at most `capacity` of the chunk events emitted since the last drain (the
/// `WS_CHUNK_EVENT_*` kinds), in emission order, into `out`, and writes how many to
/// `*out_count`: call again while it equals `capacity`. The events it hands out are no longer
/// in what [`ws_game_drain_events`] hands out, which keeps every other event (and the chunk
/// events not taken yet) in emission order. `out` may be null with `capacity` 0.
///
/// # Safety
/// `out` is null or valid for `capacity` writes; `out_count` and `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_drain_chunk_events(
    game: WsGame,
    out: *mut WsChunkEvent,
    capacity: usize,
    out_count: *mut usize,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            if out_count.is_null() {
                return Err(CapiError::Null("out_count"));
            }
            if out.is_null() && capacity > 0 {
                return Err(CapiError::Null("out (with a capacity above 0)"));
            }
            let written = with_slot(game, |slot| {
                slot.queue.pull(&mut slot.game);
                let n = capacity.min(slot.queue.chunks.len());
                for (i, (_, event, _)) in slot.queue.chunks.drain(..n).enumerate() {
                    // SAFETY: i < n <= capacity, and `out` holds `capacity` events.
                    out.add(i).write(event);
                }
                Ok(n)
            })?;
            put(out_count, "out_count", written)
        })
    }
}

/// The built LOD block `(x, z)` of `level` (≥ 1, SPEC §17): the one place `ws_game_terrain`
/// asks for a block.
fn lod_block_data(
    terrain: &dyn TerrainService,
    level: u32,
    x: i64,
    z: i64,
) -> Option<std::sync::Arc<ChunkData>> {
    terrain.lod_block(level, x, z)
}

/// Copies the cells of built chunk `(x, z)` (`level` 0) or of the built LOD block `(x, z)` of
/// `level` (≥ 1, SPEC §17) in row order (cell `(i, j)`, `i` east, `j` north, at `j *
/// cellsPerChunk + i`): heights (0..=65535) to `heights`, materials to `materials`. The buffer
/// contract of [`ws_game_loaded`]: `*out_cells` always receives `cellsPerChunk²`; the cells are
/// written when `capacity` is enough (else `WS_STATUS_BUFFER_TOO_SMALL`, nothing written).
/// Either buffer may be null to skip it; both null with `capacity` 0 asks the count. A chunk
/// that is not built (not loaded yet, still generating, released) is `WS_STATUS_NOT_BUILT`; a
/// scene without `world.terrain` is `WS_STATUS_NO_TERRAIN`. The bytes FNV-1a 64 hashes (SPEC
/// §12, the `hash` of the built event) are the heights as little-endian `u16`, then the
/// materials.
///
/// # Safety
/// `heights` and `materials` are null or valid for `capacity` writes; `out_cells` and
/// `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_terrain(
    game: WsGame,
    x: i64,
    z: i64,
    level: u32,
    heights: *mut u16,
    materials: *mut u8,
    capacity: usize,
    out_cells: *mut usize,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            // 0 until the terrain's cellsPerChunk is known (no game, no terrain kit).
            put(out_cells, "out_cells", 0)?;
            if heights.is_null() && materials.is_null() && capacity > 0 {
                return Err(CapiError::Null(
                    "heights and materials (with a capacity above 0)",
                ));
            }
            let (cells, data) = with_game(game, |g| {
                let terrain = g
                    .engine()
                    .service::<dyn TerrainService>(TERRAIN)
                    .ok_or(CapiError::NoTerrain)?;
                let side = terrain.cells_per_chunk() as usize;
                let data = if level == 0 {
                    terrain.chunk(ChunkPos::new(x, z))
                } else {
                    lod_block_data(&*terrain, level, x, z)
                };
                Ok((side * side, data))
            })?;
            out_cells.write(cells);
            let data = data.ok_or_else(|| {
                CapiError::NotBuilt(if level == 0 {
                    format!("chunk ({x}, {z}) is not built")
                } else {
                    format!("LOD block ({x}, {z}) of level {level} is not built")
                })
            })?;
            if heights.is_null() && materials.is_null() {
                return Ok(()); // the count only
            }
            if capacity < cells {
                return Err(CapiError::Cells {
                    capacity,
                    count: cells,
                });
            }
            debug_assert_eq!(data.bytes.len(), 3 * cells);
            let (height_bytes, material_bytes) = data.bytes.split_at(2 * cells);
            if !heights.is_null() {
                for (i, pair) in height_bytes.chunks_exact(2).enumerate() {
                    // SAFETY: i < cells <= capacity, and `heights` holds `capacity` cells.
                    heights.add(i).write(u16::from_le_bytes([pair[0], pair[1]]));
                }
            }
            if !materials.is_null() {
                // SAFETY: `materials` holds `capacity` >= cells bytes; the source is ours.
                std::ptr::copy_nonoverlapping(material_bytes.as_ptr(), materials, cells);
            }
            Ok(())
        })
    }
}

/// Replaces the `data` of live entity `entity` (SPEC §15) with the JSON object `json`, as a
/// `set` input stamped with the next tick would (`{"tick": next, "do": "set", "entity": …,
/// "data": json}`); `null` clears it. Text that is not JSON, not an object (or `null`), or over
/// 4 KiB serialized is `WS_STATUS_BAD_INPUT`; an entity that is not live is
/// `WS_STATUS_INPUT_FAILED` (the messages a `set` line gets).
///
/// # Safety
/// `entity` and `json` are null or NUL-terminated strings; `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_set_data(
    game: WsGame,
    entity: *const c_char,
    json: *const c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let entity = text(entity, "entity")?;
            let json = text(json, "json")?;
            let data = match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(map)) => Some(map),
                Ok(Value::Null) => None,
                Ok(other) => {
                    return Err(CapiError::BadInput(format!(
                        "data: expected a JSON object (or null to clear it), got {}",
                        crate::json::describe(&other)
                    )))
                }
                Err(e) => {
                    return Err(CapiError::BadInput(format!(
                        "data: not JSON: line {} column {}: {e}",
                        e.line(),
                        e.column()
                    )))
                }
            };
            let id = EntityId::new(entity);
            let action = Action::Set {
                entity: id.clone(),
                data: data.clone().unwrap_or_default(),
            };
            check_input(&action).map_err(CapiError::BadInput)?;
            with_game(game, |g| {
                let tick = g.engine().tick_count() + 1;
                match data {
                    Some(_) => g.apply(&InputLine { tick, action }),
                    None => g.engine_mut().input(tick, |e| {
                        e.world_mut()
                            .set_data(&id, None)
                            .map_err(crate::game::GameError::from)
                    }),
                }
                .map_err(|e| CapiError::Input(e.to_string()))
            })
        })
    }
}

/// The `data` of live entity `entity` (SPEC §15) as compact JSON: an object, or `null` when it
/// has none. An entity that is not live (never spawned, despawned, or stored with its chunk)
/// is `WS_STATUS_NO_SUCH_ENTITY`.
///
/// # Safety
/// `entity` is null or a NUL-terminated string; `out_json` and `out_error` null or writable;
/// free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_game_entity_data(
    game: WsGame,
    entity: *const c_char,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let entity = text(entity, "entity")?;
            if out_json.is_null() {
                return Err(CapiError::Null("out_json"));
            }
            let json = with_game(game, |g| {
                let e = g
                    .engine()
                    .world()
                    .get(&EntityId::new(entity))
                    .ok_or_else(|| CapiError::NoEntity(entity.to_owned()))?;
                Ok(serde_json::to_string(&e.data).expect("data is JSON"))
            })?;
            put(out_json, "out_json", hand_out(json))
        })
    }
}

/// Takes what the game's Lua mods logged since the last drain, as a JSON array of
/// `{"mod": id, "message": text}` (the game keeps every line until drained).
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_game_drain_log(
    game: WsGame,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            if out_json.is_null() {
                return Err(CapiError::Null("out_json"));
            }
            let lines = with_game(game, |g| Ok(g.take_mod_log()))?;
            let lines: Vec<Value> = lines
                .into_iter()
                .map(|l| json!({ "mod": l.source, "message": l.message }))
                .collect();
            put(
                out_json,
                "out_json",
                hand_out(Value::Array(lines).to_string()),
            )
        })
    }
}

/// The state document of SPEC §9 as compact JSON (`{"tick": 5, "scene": …, "loaded": […], …}`).
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_game_state(
    game: WsGame,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            if out_json.is_null() {
                return Err(CapiError::Null("out_json"));
            }
            let state = with_game(game, |g| Ok(g.state()))?;
            let json = serde_json::to_string(&state).expect("the state is JSON");
            put(out_json, "out_json", hand_out(json))
        })
    }
}

/// Whether chunk `(x, z)` is loaded (`isLoaded(x, z)`).
///
/// # Safety
/// `out_loaded` and `out_error` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_is_loaded(
    game: WsGame,
    x: i64,
    z: i64,
    out_loaded: *mut bool,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let loaded = with_game(game, |g| Ok(streaming(g)?.is_loaded(ChunkPos::new(x, z))))?;
            put(out_loaded, "out_loaded", loaded)
        })
    }
}

/// Whether `entity` is an anchor whose focus is ready (SPEC §11: every chunk of its square
/// inside the ground loaded or held by a load refusal): the loading gate before play. An entity
/// that is not an anchor (not tagged `player`, not controlled) or does not exist is not ready.
///
/// # Safety
/// `entity` is null or a NUL-terminated string; `out_ready` and `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_ready(
    game: WsGame,
    entity: *const c_char,
    out_ready: *mut bool,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let entity = text(entity, "entity")?;
            let ready = with_game(game, |g| {
                streaming(g)?;
                Ok(g.ready(entity))
            })?;
            put(out_ready, "out_ready", ready)
        })
    }
}

/// Whether the ticket `id` (an input `{"do": "request", …}`, SPEC §11) is ready; an unknown id
/// is not.
///
/// # Safety
/// `id` is null or a NUL-terminated string; `out_ready` and `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_ticket_ready(
    game: WsGame,
    id: *const c_char,
    out_ready: *mut bool,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let id = text(id, "id")?;
            let ready = with_game(game, |g| Ok(streaming(g)?.ticket_ready(id)))?;
            put(out_ready, "out_ready", ready)
        })
    }
}

/// The loaded chunks in row order (`loaded()`). `*out_count` always receives how many there are;
/// they are written to `out` when `capacity` is enough (else `WS_STATUS_BUFFER_TOO_SMALL`, nothing
/// written). `out` may be null with `capacity` 0 to ask only the count.
///
/// # Safety
/// `out` is null or valid for `capacity` writes; `out_count` and `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_loaded(
    game: WsGame,
    out: *mut WsChunk,
    capacity: usize,
    out_count: *mut usize,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let chunks = with_game(game, |g| Ok(streaming(g)?.loaded()))?;
            put_chunks(&chunks, out, capacity, out_count)
        })
    }
}

/// The pending chunks, nearest-first (`pending()`); the buffer contract of [`ws_game_loaded`].
///
/// # Safety
/// `out` is null or valid for `capacity` writes; `out_count` and `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_pending(
    game: WsGame,
    out: *mut WsChunk,
    capacity: usize,
    out_count: *mut usize,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let chunks = with_game(game, |g| Ok(streaming(g)?.pending()))?;
            put_chunks(&chunks, out, capacity, out_count)
        })
    }
}

/// A numeric engine variable, e.g. `world.chunks.pending` (0 before tick 1).
///
/// # Safety
/// `name` is null or a NUL-terminated string; `out_value` and `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_variable(
    game: WsGame,
    name: *const c_char,
    out_value: *mut f64,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let name = text(name, "name")?;
            let value = with_game(game, |g| {
                g.engine()
                    .variables()
                    .get(name)
                    .and_then(Value::as_f64)
                    .ok_or_else(|| CapiError::Variable(name.to_owned()))
            })?;
            put(out_value, "out_value", value)
        })
    }
}

/// Saves the game atomically to `path` (relative to the current directory).
///
/// # Safety
/// `path` is null or a NUL-terminated string; `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_save(
    game: WsGame,
    path: *const c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let path = text(path, "path")?;
            with_game(game, |g| g.save(Path::new(path)).map_err(CapiError::Save))
        })
    }
}

/// Loads a save from `path` into the game (the tick counter included); on any problem the game
/// is unchanged.
///
/// # Safety
/// `path` is null or a NUL-terminated string; `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_load(
    game: WsGame,
    path: *const c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let path = text(path, "path")?;
            with_game(game, |g| g.load(Path::new(path)).map_err(CapiError::Load))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(s: WsStatus) -> i32 {
        s as i32
    }

    #[test]
    fn every_status_has_its_header_name() {
        for (status, name) in [
            (WsStatus::Ok, "WS_STATUS_OK"),
            (WsStatus::BadInput, "WS_STATUS_BAD_INPUT"),
            (WsStatus::Panic, "WS_STATUS_PANIC"),
            (WsStatus::NotBuilt, "WS_STATUS_NOT_BUILT"),
            (WsStatus::WorldInUse, "WS_STATUS_WORLD_IN_USE"),
            (WsStatus::EditsLost, "WS_STATUS_EDITS_LOST"),
        ] {
            // SAFETY: ws_status_name returns a static NUL-terminated string.
            let got = unsafe { CStr::from_ptr(ws_status_name(status_of(status))) };
            assert_eq!(got.to_str().unwrap(), name);
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(ws_status_name(99)) };
        assert_eq!(unknown.to_str().unwrap(), "WS_STATUS_UNKNOWN");
    }

    /// The numbers are the contract (SPEC §14, §19: `WS_STATUS_NOT_BUILT` is 16): C and C#
    /// callers compare against them, so none may move.
    #[test]
    fn every_status_keeps_its_number() {
        let all = [
            (WsStatus::Ok, 0, "WS_STATUS_OK"),
            (WsStatus::NullArgument, 1, "WS_STATUS_NULL_ARGUMENT"),
            (WsStatus::InvalidUtf8, 2, "WS_STATUS_INVALID_UTF8"),
            (WsStatus::InvalidHandle, 3, "WS_STATUS_INVALID_HANDLE"),
            (WsStatus::Poisoned, 4, "WS_STATUS_POISONED"),
            (WsStatus::BadScene, 5, "WS_STATUS_BAD_SCENE"),
            (WsStatus::BadInput, 6, "WS_STATUS_BAD_INPUT"),
            (WsStatus::InputFailed, 7, "WS_STATUS_INPUT_FAILED"),
            (WsStatus::NoStreaming, 8, "WS_STATUS_NO_STREAMING"),
            (WsStatus::SaveFailed, 9, "WS_STATUS_SAVE_FAILED"),
            (WsStatus::LoadFailed, 10, "WS_STATUS_LOAD_FAILED"),
            (WsStatus::OutOfRange, 11, "WS_STATUS_OUT_OF_RANGE"),
            (WsStatus::BufferTooSmall, 12, "WS_STATUS_BUFFER_TOO_SMALL"),
            (WsStatus::NoSuchVariable, 13, "WS_STATUS_NO_SUCH_VARIABLE"),
            (WsStatus::UnknownString, 14, "WS_STATUS_UNKNOWN_STRING"),
            (WsStatus::Panic, 15, "WS_STATUS_PANIC"),
            (WsStatus::NotBuilt, 16, "WS_STATUS_NOT_BUILT"),
            (WsStatus::WorldInUse, 17, "WS_STATUS_WORLD_IN_USE"),
            (WsStatus::EditsLost, 18, "WS_STATUS_EDITS_LOST"),
            (WsStatus::NoTerrain, 19, "WS_STATUS_NO_TERRAIN"),
            (WsStatus::NoSuchEntity, 20, "WS_STATUS_NO_SUCH_ENTITY"),
        ];
        for (status, number, name) in all {
            assert_eq!(status_of(status), number, "{name}");
            // SAFETY: ws_status_name returns a static NUL-terminated string.
            let got = unsafe { CStr::from_ptr(ws_status_name(number)) };
            assert_eq!(got.to_str().unwrap(), name);
        }
        // SAFETY: as above.
        let next = unsafe { CStr::from_ptr(ws_status_name(all.len() as i32)) };
        assert_eq!(next.to_str().unwrap(), "WS_STATUS_UNKNOWN");
    }

    #[test]
    fn the_version_is_the_kits() {
        // SAFETY: ws_version returns a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(ws_version()) }.to_str().unwrap();
        assert_eq!(v, crate::kits::streaming::manifest().version.to_string());
        assert!(v.starts_with("1."), "{v}");
    }

    #[test]
    fn a_panic_is_caught_and_reported_with_its_message() {
        let mut message: *mut c_char = std::ptr::null_mut();
        // SAFETY: `message` is a writable `char *`.
        let status = unsafe { entry(&mut message, || panic!("boom {}", 7)) };
        assert_eq!(status, WsStatus::Panic);
        // SAFETY: set by `entry` to a string handed out.
        let text = unsafe { CStr::from_ptr(message) }
            .to_str()
            .unwrap()
            .to_owned();
        assert!(text.contains("boom 7"), "{text}");
        // SAFETY: handed out by `entry`.
        assert_eq!(unsafe { ws_string_free(message) }, WsStatus::Ok);
    }

    #[test]
    fn a_game_whose_call_panicked_is_poisoned_until_freed() {
        let scene = CString::new(
            r#"{"kits":[{"id":"world.ground"},{"id":"world.streaming"}],"entities":[]}"#,
        )
        .unwrap();
        let dot = CString::new(".").unwrap();
        let mut game: WsGame = 0;
        // SAFETY: valid strings and out-pointers.
        let status = unsafe {
            ws_game_new(
                scene.as_ptr(),
                dot.as_ptr(),
                &mut game,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(status, WsStatus::Ok);
        // SAFETY: null out_error is allowed.
        let status = unsafe {
            entry(std::ptr::null_mut(), || {
                with_game(game, |_| -> Result<(), CapiError> {
                    panic!("inside a call")
                })
            })
        };
        assert_eq!(status, WsStatus::Panic);
        let mut tick = 0u64;
        // SAFETY: valid out-pointer.
        let status = unsafe { ws_game_tick_count(game, &mut tick, std::ptr::null_mut()) };
        assert_eq!(status, WsStatus::Poisoned);
        // SAFETY: no pointers.
        assert_eq!(
            unsafe { ws_game_free(game, std::ptr::null_mut()) },
            WsStatus::Ok
        );
        // SAFETY: no pointers.
        assert_eq!(
            unsafe { ws_game_free(game, std::ptr::null_mut()) },
            WsStatus::InvalidHandle
        );
    }

    /// `ws_game_new` on a world scene; the status and the message (if any).
    fn new_game(scene: &str) -> (WsStatus, WsGame, String) {
        let scene = CString::new(scene).unwrap();
        let dot = CString::new(".").unwrap();
        let mut game: WsGame = 0;
        let mut error: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid strings and out-pointers.
        let status = unsafe { ws_game_new(scene.as_ptr(), dot.as_ptr(), &mut game, &mut error) };
        (status, game, take_message(error))
    }

    fn take_message(error: *mut c_char) -> String {
        if error.is_null() {
            return String::new();
        }
        // SAFETY: a string handed out by the library.
        let text = unsafe { CStr::from_ptr(error) }
            .to_str()
            .unwrap()
            .to_owned();
        // SAFETY: handed out, freed once.
        assert_eq!(unsafe { ws_string_free(error) }, WsStatus::Ok);
        text
    }

    fn free_game(game: WsGame) -> (WsStatus, String) {
        let mut error: *mut c_char = std::ptr::null_mut();
        // SAFETY: a writable out-pointer.
        let status = unsafe { ws_game_free(game, &mut error) };
        (status, take_message(error))
    }

    fn world_scene(dir: &Path) -> String {
        serde_json::json!({
            "kits": [
                {"id": "world.ground"},
                {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1}},
                {"id": "world.terrain", "config": {"worldDir": dir.to_str().unwrap()}}
            ],
            "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}],
            "control": "hero"
        })
        .to_string()
    }

    #[test]
    fn a_second_game_on_a_world_directory_is_world_in_use_until_the_first_is_freed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("world");
        let (status, first, _) = new_game(&world_scene(&dir));
        assert_eq!(status, WsStatus::Ok);
        let (status, second, message) = new_game(&world_scene(&dir));
        assert_eq!((status, second), (WsStatus::WorldInUse, 0));
        assert_eq!(
            message,
            format!(
                "world directory {} is in use by another game (lock file {} held)",
                dir.display(),
                dir.join("session.lock").display()
            )
        );
        assert_eq!(free_game(first), (WsStatus::Ok, String::new()));
        let (status, third, _) = new_game(&world_scene(&dir));
        assert_eq!(status, WsStatus::Ok);
        assert_eq!(free_game(third).0, WsStatus::Ok);
    }

    #[test]
    fn freeing_a_game_whose_edits_cannot_be_written_is_edits_lost() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("world");
        // A directory squatting the temporary file's name: r.0.0.wsr cannot be written.
        std::fs::create_dir_all(dir.join("r.0.0.wsr.tmp").join("in")).unwrap();
        let (status, game, _) = new_game(&world_scene(&dir));
        assert_eq!(status, WsStatus::Ok);
        with_game(game, |g| -> Result<(), CapiError> {
            g.run_until_ready("hero", 100).unwrap();
            let line = crate::files::inputs::parse_line(&format!(
                r#"{{"tick": {}, "do": "edit", "at": {{"x": 5.5, "z": 5.5}}, "height": 9}}"#,
                g.engine().tick_count() + 1
            ));
            g.apply(&line.unwrap()).unwrap();
            Ok(())
        })
        .unwrap();
        let (status, message) = free_game(game);
        assert_eq!(status, WsStatus::EditsLost);
        assert!(
            message.contains(&format!(
                "1 modified chunk not written: {} (1 chunk: ",
                dir.join("r.0.0.wsr").display()
            )),
            "{message}"
        );
        // Freed all the same.
        assert_eq!(free_game(game).0, WsStatus::InvalidHandle);
    }

    /// A terrain scene with one player, on one worker.
    fn terrain_scene() -> String {
        serde_json::json!({
            "kits": [
                {"id": "world.ground"},
                {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 2, "budgetMs": 3}},
                {"id": "world.terrain", "config": {"seed": 7, "cellsPerChunk": 8, "workers": 1}}
            ],
            "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}]
        })
        .to_string()
    }

    fn tick(game: WsGame, n: u64) {
        let mut error = std::ptr::null_mut();
        // SAFETY: a writable out-pointer.
        let status = unsafe { ws_game_tick(game, n, &mut error) };
        assert_eq!(status, WsStatus::Ok, "{}", take_message(error));
    }

    fn apply(game: WsGame, line: &str) -> (WsStatus, String) {
        let line = CString::new(line).unwrap();
        let mut error = std::ptr::null_mut();
        // SAFETY: a valid string and out-pointer.
        let status = unsafe { ws_game_apply(game, line.as_ptr(), &mut error) };
        (status, take_message(error))
    }

    fn move_to(game: WsGame, entity: &str, x: f64, y: f64, z: f64) -> (WsStatus, String) {
        let entity = CString::new(entity).unwrap();
        let mut error = std::ptr::null_mut();
        // SAFETY: a valid string and out-pointer.
        let status = unsafe { ws_game_move(game, entity.as_ptr(), x, y, z, &mut error) };
        (status, take_message(error))
    }

    /// `ws_game_drain_events`, parsed.
    fn drain_json(game: WsGame) -> Vec<Value> {
        let mut json = std::ptr::null_mut();
        let mut error = std::ptr::null_mut();
        // SAFETY: writable out-pointers.
        let status = unsafe { ws_game_drain_events(game, &mut json, &mut error) };
        assert_eq!(status, WsStatus::Ok, "{}", take_message(error));
        let text = take_message(json);
        match serde_json::from_str(&text).unwrap() {
            Value::Array(events) => events,
            other => panic!("not an array: {other}"),
        }
    }

    /// One `ws_game_drain_chunk_events` call with room for `capacity`.
    fn drain_chunks_once(game: WsGame, capacity: usize) -> Vec<WsChunkEvent> {
        let blank = WsChunkEvent {
            kind: -1,
            level: 99,
            x: 0,
            z: 0,
            hash: 0,
        };
        let mut buffer = vec![blank; capacity];
        let mut count = usize::MAX;
        let mut error = std::ptr::null_mut();
        // SAFETY: `buffer` holds `capacity` events; writable out-pointers.
        let status = unsafe {
            ws_game_drain_chunk_events(game, buffer.as_mut_ptr(), capacity, &mut count, &mut error)
        };
        assert_eq!(status, WsStatus::Ok, "{}", take_message(error));
        assert!(count <= capacity);
        assert!(
            buffer[count..].iter().all(|e| *e == blank),
            "wrote past the count"
        );
        buffer.truncate(count);
        buffer
    }

    /// The chunk event a JSON event of the log stands for.
    fn chunk_event_of_json(v: &Value) -> Option<WsChunkEvent> {
        let event = Event {
            tick: v["tick"].as_u64().unwrap(),
            event: v["event"].as_str().unwrap().to_owned().into(),
            data: v["data"].clone().into(),
        };
        chunk_event(&event)
    }

    #[test]
    fn a_move_is_the_move_input_stamped_with_the_next_tick() {
        let (_, by_line, _) = new_game(&terrain_scene());
        let (_, by_move, _) = new_game(&terrain_scene());
        for t in 1..=30u64 {
            let x = 16.0 + 9.5 * t as f64;
            let (status, message) = apply(
                by_line,
                &format!(
                    r#"{{"tick": {t}, "do": "move", "entity": "hero", "to": {{"x": {x}, "y": 2, "z": -3}}}}"#
                ),
            );
            assert_eq!(status, WsStatus::Ok, "{message}");
            assert_eq!(
                move_to(by_move, "hero", x, 2.0, -3.0),
                (WsStatus::Ok, String::new())
            );
            tick(by_line, 1);
            tick(by_move, 1);
            assert_eq!(drain_json(by_line), drain_json(by_move), "tick {t}");
        }
        // Every byte of the state but the worker waits (thread timing, SPEC §12).
        let state = |g| {
            with_game(g, |g: &mut Game| {
                let mut v = serde_json::to_value(g.state()).unwrap();
                v["variables"]
                    .as_object_mut()
                    .unwrap()
                    .remove("world.terrain.waits");
                Ok(v)
            })
        };
        assert_eq!(state(by_line).unwrap(), state(by_move).unwrap());
        let hero = with_game(by_move, |g| {
            Ok(g.engine()
                .world()
                .get(&EntityId::new("hero"))
                .unwrap()
                .position)
        })
        .unwrap();
        assert_eq!(
            hero,
            Position {
                x: 16.0 + 9.5 * 30.0,
                y: 2.0,
                z: -3.0
            }
        );
        free_game(by_line);
        free_game(by_move);
    }

    #[test]
    fn a_bad_move_is_refused_like_the_input_line_and_changes_nothing() {
        let (_, game, _) = new_game(&terrain_scene());
        for (x, y, z, field) in [
            (f64::NAN, 0.0, 0.0, "x"),
            (0.0, f64::INFINITY, 0.0, "y"),
            (0.0, 0.0, f64::NEG_INFINITY, "z"),
            (2e15, 0.0, 0.0, "x"),
        ] {
            let (status, message) = move_to(game, "hero", x, y, z);
            assert_eq!(status, WsStatus::BadInput, "{message}");
            assert!(
                message.starts_with(&format!("input: to.{field}: expected a finite number")),
                "{message}"
            );
        }
        let (status, message) = move_to(game, "nobody", 1.0, 0.0, 1.0);
        let (line_status, line_message) = apply(
            game,
            r#"{"tick": 1, "do": "move", "entity": "nobody", "to": {"x": 1, "z": 1}}"#,
        );
        assert_eq!((status, &message), (line_status, &line_message));
        assert_eq!(status, WsStatus::InputFailed);
        assert!(message.contains("nobody"), "{message}");
        // The refusals a line can spell carry the line's very message.
        for (entity, x, spelled) in [
            ("", 1.0, "1"),
            ("hero", 2e15, "2e15"),
            ("hero", -1e16, "-1e16"),
        ] {
            let got = move_to(game, entity, x, 0.0, 1.0);
            let line = format!(
                r#"{{"tick": 1, "do": "move", "entity": "{entity}", "to": {{"x": {spelled}, "z": 1}}}}"#
            );
            assert_eq!(got, apply(game, &line), "{line}");
            assert_eq!(got.0, WsStatus::BadInput);
        }
        let hero = with_game(game, |g| {
            Ok(g.engine()
                .world()
                .get(&EntityId::new("hero"))
                .unwrap()
                .position)
        })
        .unwrap();
        assert_eq!(hero, Position::new(16.0, 16.0));
        // Null and freed handles.
        let mut error = std::ptr::null_mut();
        // SAFETY: a null entity is refused before it is read.
        let status = unsafe { ws_game_move(game, std::ptr::null(), 0.0, 0.0, 0.0, &mut error) };
        assert_eq!(status, WsStatus::NullArgument);
        assert_eq!(take_message(error), "entity is null");
        free_game(game);
        assert_eq!(
            move_to(game, "hero", 1.0, 0.0, 1.0).0,
            WsStatus::InvalidHandle
        );
    }

    #[test]
    fn drained_chunk_events_leave_the_json_drain_and_every_other_event_keeps_its_order() {
        // `all` drains JSON only; `split` drains a few chunk events every tick and JSON every
        // 4th tick, at the same ticks as `all`.
        let (_, all, _) = new_game(&terrain_scene());
        let (_, split, _) = new_game(&terrain_scene());
        let mut handed: Vec<WsChunkEvent> = Vec::new();
        let mut kinds = std::collections::BTreeSet::new();
        let mut others = 0;
        for t in 1..=48u64 {
            let x = 16.0 + 12.0 * t as f64;
            for g in [all, split] {
                assert_eq!(move_to(g, "hero", x, 0.0, 16.0).0, WsStatus::Ok);
                // An event of another kind between the ticks' chunk events.
                let line =
                    format!(r#"{{"tick": {t}, "do": "player.moved", "at": {{"x": {x}, "z": 1}}}}"#);
                assert_eq!(apply(g, &line).0, WsStatus::Ok);
                tick(g, 1);
            }
            handed.extend(drain_chunks_once(split, (t % 3) as usize * 2));
            if t % 4 == 0 {
                let segment = drain_json(all);
                let rest = drain_json(split);
                // The events handed out are the segment's first chunk events, in order...
                let chunk_events: Vec<WsChunkEvent> =
                    segment.iter().filter_map(chunk_event_of_json).collect();
                assert!(handed.len() <= chunk_events.len());
                assert_eq!(handed, chunk_events[..handed.len()], "tick {t}");
                // ... and the JSON drain holds the rest, every event in its place.
                let mut skip = handed.len();
                let expected: Vec<Value> = segment
                    .into_iter()
                    .filter(|e| {
                        if skip > 0 && chunk_event_of_json(e).is_some() {
                            skip -= 1;
                            return false;
                        }
                        true
                    })
                    .collect();
                assert_eq!(rest, expected, "tick {t}");
                others += rest.iter().filter(|e| e["event"] == "player.moved").count();
                kinds.extend(handed.iter().map(|e| e.kind));
                handed.clear();
            }
        }
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            [
                WS_CHUNK_EVENT_LOADED,
                WS_CHUNK_EVENT_UNLOADED,
                WS_CHUNK_EVENT_BUILT
            ]
        );
        assert!(others > 40, "{others}");
        free_game(all);
        free_game(split);
    }

    #[test]
    fn chunk_events_drained_until_short_are_every_chunk_event_with_the_built_hashes() {
        let (_, all, _) = new_game(&terrain_scene());
        let (_, chunks, _) = new_game(&terrain_scene());
        let mut built = 0;
        for t in 1..=20u64 {
            for g in [all, chunks] {
                assert_eq!(
                    move_to(g, "hero", 16.0 + 20.0 * t as f64, 0.0, 16.0).0,
                    WsStatus::Ok
                );
                tick(g, 1);
            }
            let mut got = Vec::new();
            for round in 0.. {
                assert!(round < 1000, "the drain never came up short");
                let batch = drain_chunks_once(chunks, 3);
                let full = batch.len() == 3;
                got.extend(batch);
                if !full {
                    break;
                }
            }
            let expected: Vec<WsChunkEvent> = drain_json(all)
                .iter()
                .filter_map(chunk_event_of_json)
                .collect();
            assert_eq!(got, expected, "tick {t}");
            for e in got.iter().filter(|e| e.kind == WS_CHUNK_EVENT_BUILT) {
                assert_eq!(e.level, 0);
                let hash = with_game(chunks, |g| {
                    let terrain = g
                        .engine()
                        .service::<dyn crate::kits::terrain::TerrainService>(
                            crate::kits::terrain::TERRAIN,
                        )
                        .unwrap();
                    Ok(terrain.chunk(ChunkPos::new(e.x, e.z)).map(|c| c.hash()))
                })
                .unwrap();
                if let Some(hash) = hash {
                    assert_eq!(e.hash, hash);
                    assert_ne!(hash, 0);
                    built += 1;
                }
            }
            // Nothing but the other events is left for the JSON drain.
            assert!(drain_json(chunks)
                .iter()
                .all(|e| chunk_event_of_json(e).is_none()));
        }
        assert!(built > 10, "{built}");
        free_game(all);
        free_game(chunks);
    }

    #[test]
    fn the_lod_events_and_a_changed_block_read_back_with_their_level() {
        let event = |name: &'static str, data: Value| Event {
            tick: 3,
            event: name.into(),
            data: data.into(),
        };
        let c = |kind, level, x, z, hash| WsChunkEvent {
            kind,
            level,
            x,
            z,
            hash,
        };
        for (e, want) in [
            (
                event(LOD_LOADED, json!({"level": 2, "x": -1, "z": 4})),
                Some(c(WS_CHUNK_EVENT_LOD_LOADED, 2, -1, 4, 0)),
            ),
            (
                event(LOD_UNLOADED, json!({"level": 1, "x": 3, "z": 0})),
                Some(c(WS_CHUNK_EVENT_LOD_UNLOADED, 1, 3, 0, 0)),
            ),
            (
                event(
                    LOD_BUILT,
                    json!({"level": 1, "x": 0, "z": -2, "hash": "9d01eaa547c9a46c"}),
                ),
                Some(c(WS_CHUNK_EVENT_LOD_BUILT, 1, 0, -2, 0x9d01_eaa5_47c9_a46c)),
            ),
            (
                event(TERRAIN_CHANGED, json!({"x": 5, "z": 6, "level": 3})),
                Some(c(WS_CHUNK_EVENT_CHANGED, 3, 5, 6, 0)),
            ),
            (
                event(TERRAIN_CHANGED, json!({"x": 5, "z": 6})),
                Some(c(WS_CHUNK_EVENT_CHANGED, 0, 5, 6, 0)),
            ),
            (
                event(
                    TERRAIN_BUILT,
                    crate::host::chunk_hash_data(ChunkPos::new(-7, 8), u64::MAX).to_value(),
                ),
                Some(c(WS_CHUNK_EVENT_BUILT, 0, -7, 8, u64::MAX)),
            ),
            (event(CHUNK_LOADED, json!({"x": 1})), None),
            (
                event(
                    LOD_BUILT,
                    json!({"level": 1, "x": 0, "z": 0, "hash": "xyz"}),
                ),
                None,
            ),
            (
                event("world.district.stored", json!({"x": 1, "z": 2, "count": 3})),
                None,
            ),
        ] {
            assert_eq!(chunk_event(&e), want, "{}", e.event);
        }
    }

    #[test]
    fn a_chunk_drain_with_null_pointers_or_a_freed_handle_is_refused_and_takes_nothing() {
        let (_, game, _) = new_game(&terrain_scene());
        tick(game, 3);
        let mut count = 7usize;
        let mut error = std::ptr::null_mut();
        // SAFETY: null pointers are refused before any write.
        let status = unsafe {
            ws_game_drain_chunk_events(game, std::ptr::null_mut(), 4, &mut count, &mut error)
        };
        assert_eq!(status, WsStatus::NullArgument);
        assert_eq!(take_message(error), "out (with a capacity above 0) is null");
        let mut one = [WsChunkEvent {
            kind: 0,
            level: 0,
            x: 0,
            z: 0,
            hash: 0,
        }];
        // SAFETY: as above.
        let status = unsafe {
            ws_game_drain_chunk_events(game, one.as_mut_ptr(), 1, std::ptr::null_mut(), &mut error)
        };
        assert_eq!(status, WsStatus::NullArgument);
        assert_eq!(take_message(error), "out_count is null");
        // Capacity 0: nothing taken, the count is 0.
        // SAFETY: null `out` with capacity 0 is allowed.
        let status = unsafe {
            ws_game_drain_chunk_events(game, std::ptr::null_mut(), 0, &mut count, &mut error)
        };
        assert_eq!((status, count), (WsStatus::Ok, 0));
        // Nothing was taken by the refused calls: the JSON drain still has every chunk event.
        let loaded = drain_json(game)
            .iter()
            .filter(|e| e["event"] == CHUNK_LOADED)
            .count();
        assert_eq!(loaded, 9);
        free_game(game);
        // SAFETY: valid pointers; the handle is freed.
        let status = unsafe {
            ws_game_drain_chunk_events(game, one.as_mut_ptr(), 1, &mut count, &mut error)
        };
        assert_eq!(status, WsStatus::InvalidHandle);
        assert!(take_message(error).contains(&format!("handle {game}")));
    }

    /// `ws_game_terrain` into buffers of `capacity` cells pre-filled with sentinels.
    fn terrain(
        game: WsGame,
        x: i64,
        z: i64,
        level: u32,
        capacity: usize,
    ) -> (WsStatus, usize, Vec<u16>, Vec<u8>, String) {
        let mut heights = vec![0xBEEF_u16; capacity];
        let mut materials = vec![0xA5_u8; capacity];
        let mut cells = usize::MAX;
        let mut error = std::ptr::null_mut();
        // SAFETY: both buffers hold `capacity` cells; writable out-pointers.
        let status = unsafe {
            ws_game_terrain(
                game,
                x,
                z,
                level,
                heights.as_mut_ptr(),
                materials.as_mut_ptr(),
                capacity,
                &mut cells,
                &mut error,
            )
        };
        (status, cells, heights, materials, take_message(error))
    }

    #[test]
    fn the_terrain_of_a_built_chunk_is_its_cells_and_hashes_to_its_built_event() {
        let (_, game, _) = new_game(&terrain_scene());
        let mut checked = 0;
        for t in 1..=12u64 {
            assert_eq!(
                move_to(game, "hero", 16.0 + 20.0 * t as f64, 0.0, 16.0).0,
                WsStatus::Ok
            );
            tick(game, 1);
            let mut released = std::collections::BTreeSet::new();
            let events = drain_chunks_once(game, 1000);
            for (i, e) in events.iter().enumerate() {
                if e.kind != WS_CHUNK_EVENT_BUILT {
                    continue;
                }
                let later_release = events[i + 1..]
                    .iter()
                    .any(|u| u.kind == WS_CHUNK_EVENT_UNLOADED && (u.x, u.z) == (e.x, e.z));
                let (status, cells, heights, materials, message) = terrain(game, e.x, e.z, 0, 64);
                assert_eq!(cells, 64);
                if later_release {
                    assert_eq!(status, WsStatus::NotBuilt, "{message}");
                    released.insert((e.x, e.z));
                    continue;
                }
                assert_eq!(status, WsStatus::Ok, "{message}");
                let mut bytes: Vec<u8> = heights.iter().flat_map(|h| h.to_le_bytes()).collect();
                bytes.extend(&materials);
                assert_eq!(crate::kits::terrain::generate::fnv1a64(&bytes), e.hash);
                let data = with_game(game, |g| {
                    let t = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
                    Ok(t.chunk(ChunkPos::new(e.x, e.z)).unwrap())
                })
                .unwrap();
                for j in 0..8u32 {
                    for i in 0..8u32 {
                        let k = (j * 8 + i) as usize;
                        assert_eq!(heights[k], data.height(i, j));
                        assert_eq!(materials[k], data.material(i, j));
                    }
                }
                checked += 1;
            }
        }
        assert!(checked > 10, "{checked}");
        free_game(game);
    }

    /// LOD blocks through the C ABI (SPEC §17, §19): their loaded and built events drained as
    /// `WsChunkEvent`s with their level, and a built block's cells read back with
    /// `ws_game_terrain(level)`, equal to the block the terrain holds and hashing to its event.
    #[test]
    fn lod_blocks_drain_as_chunk_events_and_their_cells_read_back_by_level() {
        let scene = serde_json::json!({
            "kits": [
                {"id": "world.ground"},
                {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1, "budgetMs": 9,
                    "lod": [{"step": 2, "radius": 3}], "lodBudget": 16}},
                {"id": "world.terrain", "config": {"seed": 7, "cellsPerChunk": 8, "workers": 1}}
            ],
            "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}]
        })
        .to_string();
        let (_, game, _) = new_game(&scene);
        tick(game, 6);
        let events = drain_chunks_once(game, 1000);
        let loaded: Vec<(i64, i64)> = events
            .iter()
            .filter(|e| e.kind == WS_CHUNK_EVENT_LOD_LOADED)
            .map(|e| {
                assert_eq!((e.level, e.hash), (1, 0));
                (e.x, e.z)
            })
            .collect();
        // Level 1 (step 2, radius 3) around chunk (0, 0): blocks -2..=1 each way but block
        // (0, 0), wholly inside the radius-1 square.
        assert_eq!(loaded.len(), 15, "{loaded:?}");
        assert!(!loaded.contains(&(0, 0)));
        let built: Vec<&WsChunkEvent> = events
            .iter()
            .filter(|e| e.kind == WS_CHUNK_EVENT_LOD_BUILT)
            .collect();
        assert_eq!(built.len(), 15);
        for e in built {
            assert_eq!(e.level, 1);
            let (status, cells, heights, materials, message) = terrain(game, e.x, e.z, 1, 64);
            assert_eq!((status, cells), (WsStatus::Ok, 64), "{message}");
            let mut bytes: Vec<u8> = heights.iter().flat_map(|h| h.to_le_bytes()).collect();
            bytes.extend(&materials);
            assert_eq!(crate::kits::terrain::generate::fnv1a64(&bytes), e.hash);
            let data = with_game(game, |g| {
                let t = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
                Ok(t.lod_block(1, e.x, e.z).unwrap())
            })
            .unwrap();
            assert_eq!(data.hash(), e.hash);
        }
        // The carved block, and a level not in force, are not built.
        assert_eq!(terrain(game, 0, 0, 1, 64).0, WsStatus::NotBuilt);
        assert_eq!(terrain(game, -1, -1, 2, 64).0, WsStatus::NotBuilt);
        free_game(game);
    }

    #[test]
    fn terrain_keeps_the_buffer_contract_and_says_what_is_not_built() {
        let (_, game, _) = new_game(&terrain_scene());
        tick(game, 4); // (0, 0) loaded at tick 1, committed at tick 3
                       // Too small: the count, nothing written.
        let (status, cells, heights, materials, message) = terrain(game, 0, 0, 0, 63);
        assert_eq!((status, cells), (WsStatus::BufferTooSmall, 64), "{message}");
        assert_eq!(
            message,
            "the buffers hold 63 cells; 64 are needed (cellsPerChunk²)"
        );
        assert!(heights.iter().all(|h| *h == 0xBEEF) && materials.iter().all(|m| *m == 0xA5));
        // Room for more: exactly 64 written.
        let (status, cells, heights, materials, _) = terrain(game, 0, 0, 0, 70);
        assert_eq!((status, cells), (WsStatus::Ok, 64));
        assert!(heights[64..].iter().all(|h| *h == 0xBEEF));
        assert!(materials[64..].iter().all(|m| *m == 0xA5));
        assert!(heights[..64].iter().any(|h| *h != 0xBEEF));
        // Not built: far away, and any LOD level (not built on this branch).
        let (status, cells, heights, _, message) = terrain(game, 40, 40, 0, 64);
        assert_eq!((status, cells), (WsStatus::NotBuilt, 64));
        assert_eq!(message, "chunk (40, 40) is not built");
        assert!(heights.iter().all(|h| *h == 0xBEEF));
        let (status, cells, _, _, message) = terrain(game, 0, 0, 1, 64);
        assert_eq!((status, cells), (WsStatus::NotBuilt, 64));
        assert_eq!(message, "LOD block (0, 0) of level 1 is not built");
        // The count only; one buffer only.
        let mut cells = 0usize;
        let mut only = vec![0u8; 64];
        // SAFETY: null buffers with capacity 0; then one buffer of 64 cells.
        unsafe {
            let none = std::ptr::null_mut();
            let status =
                ws_game_terrain(game, 0, 0, 0, none, none.cast(), 0, &mut cells, none.cast());
            assert_eq!((status, cells), (WsStatus::Ok, 64));
            let status = ws_game_terrain(
                game,
                0,
                0,
                0,
                std::ptr::null_mut(),
                only.as_mut_ptr(),
                64,
                &mut cells,
                std::ptr::null_mut(),
            );
            assert_eq!(status, WsStatus::Ok);
            let status = ws_game_terrain(
                game,
                0,
                0,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                64,
                &mut cells,
                std::ptr::null_mut(),
            );
            assert_eq!(status, WsStatus::NullArgument);
        }
        assert_eq!(only, terrain(game, 0, 0, 0, 64).3);
        free_game(game);
        let (status, cells, _, _, _) = terrain(game, 0, 0, 0, 64);
        assert_eq!((status, cells), (WsStatus::InvalidHandle, 0));
        // No world.terrain in the scene.
        let (_, plain, _) =
            new_game(r#"{"kits":[{"id":"world.ground"},{"id":"world.streaming"}],"entities":[]}"#);
        let (status, cells, _, _, message) = terrain(plain, 0, 0, 0, 64);
        assert_eq!((status, cells), (WsStatus::NoTerrain, 0));
        assert_eq!(message, "the scene does not enable the world.terrain kit");
        free_game(plain);
    }

    fn set_data(game: WsGame, entity: &str, json: &str) -> (WsStatus, String) {
        let entity = CString::new(entity).unwrap();
        let json = CString::new(json).unwrap();
        let mut error = std::ptr::null_mut();
        // SAFETY: valid strings and out-pointer.
        let status = unsafe { ws_game_set_data(game, entity.as_ptr(), json.as_ptr(), &mut error) };
        (status, take_message(error))
    }

    fn entity_data(game: WsGame, entity: &str) -> (WsStatus, String) {
        let entity = CString::new(entity).unwrap();
        let mut json = std::ptr::null_mut();
        let mut error = std::ptr::null_mut();
        // SAFETY: a valid string and out-pointers.
        let status = unsafe { ws_game_entity_data(game, entity.as_ptr(), &mut json, &mut error) };
        if status == WsStatus::Ok {
            (status, take_message(json))
        } else {
            assert!(json.is_null());
            (status, take_message(error))
        }
    }

    #[test]
    fn set_data_is_the_set_input_and_entity_data_reads_it_back() {
        let scene = terrain_scene();
        let (_, by_c, _) = new_game(&scene);
        let (_, by_line, _) = new_game(&scene);
        assert_eq!(entity_data(by_c, "hero"), (WsStatus::Ok, "null".to_owned()));
        let data = r#"{"hp": 7, "bag": ["rope", {"n": 2}]}"#;
        assert_eq!(set_data(by_c, "hero", data), (WsStatus::Ok, String::new()));
        let line = format!(r#"{{"tick": 1, "do": "set", "entity": "hero", "data": {data}}}"#);
        assert_eq!(apply(by_line, &line).0, WsStatus::Ok);
        assert_eq!(
            entity_data(by_c, "hero"),
            (
                WsStatus::Ok,
                r#"{"hp":7,"bag":["rope",{"n":2}]}"#.to_owned()
            )
        );
        assert_eq!(entity_data(by_c, "hero"), entity_data(by_line, "hero"));
        tick(by_c, 2);
        tick(by_line, 2);
        assert_eq!(drain_json(by_c), drain_json(by_line));
        // null clears.
        assert_eq!(set_data(by_c, "hero", "null").0, WsStatus::Ok);
        assert_eq!(entity_data(by_c, "hero"), (WsStatus::Ok, "null".to_owned()));
        // Refusals change nothing.
        assert_eq!(set_data(by_c, "hero", r#"{"keep": true}"#).0, WsStatus::Ok);
        let (status, message) = set_data(by_c, "hero", "[1, 2]");
        assert_eq!(status, WsStatus::BadInput);
        assert_eq!(
            message,
            "input: data: expected a JSON object (or null to clear it), got [1,2]"
        );
        let (status, message) = set_data(by_c, "hero", "{\"a\": ");
        assert_eq!(status, WsStatus::BadInput);
        assert!(
            message.starts_with("input: data: not JSON: line 1 column"),
            "{message}"
        );
        let big = format!(r#"{{"s": "{}"}}"#, "x".repeat(5000));
        let (status, message) = set_data(by_c, "hero", &big);
        let (line_status, line_message) = apply(
            by_c,
            &format!(r#"{{"tick": 3, "do": "set", "entity": "hero", "data": {big}}}"#),
        );
        assert_eq!((status, &message), (line_status, &line_message));
        assert_eq!(status, WsStatus::BadInput);
        assert!(message.contains("at most 4096 bytes"), "{message}");
        let (status, message) = set_data(by_c, "ghost", "{}");
        let (line_status, line_message) = apply(
            by_c,
            r#"{"tick": 3, "do": "set", "entity": "ghost", "data": {}}"#,
        );
        assert_eq!((status, &message), (line_status, &line_message));
        assert_eq!(status, WsStatus::InputFailed);
        assert_eq!(set_data(by_c, "ghost", "null").0, WsStatus::InputFailed);
        assert_eq!(
            entity_data(by_c, "hero"),
            (WsStatus::Ok, r#"{"keep":true}"#.to_owned())
        );
        let (status, message) = entity_data(by_c, "ghost");
        assert_eq!(status, WsStatus::NoSuchEntity);
        assert_eq!(
            message,
            "no live entity `ghost` (never spawned, despawned, or stored with its chunk)"
        );
        free_game(by_c);
        free_game(by_line);
        assert_eq!(entity_data(by_c, "hero").0, WsStatus::InvalidHandle);
        assert_eq!(set_data(by_c, "hero", "{}").0, WsStatus::InvalidHandle);
    }

    #[test]
    fn the_state_carries_the_district_counts_and_a_district_entitys_data_reads_back() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
        let scene = std::fs::read_to_string(dir.join("town.json")).unwrap();
        let scene = CString::new(scene).unwrap();
        let base = CString::new(dir.to_str().unwrap()).unwrap();
        let mut game: WsGame = 0;
        // SAFETY: valid strings and out-pointers.
        let status = unsafe {
            ws_game_new(
                scene.as_ptr(),
                base.as_ptr(),
                &mut game,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(status, WsStatus::Ok);
        tick(game, 3);
        let mut json = std::ptr::null_mut();
        // SAFETY: writable out-pointers.
        let status = unsafe { ws_game_state(game, &mut json, std::ptr::null_mut()) };
        assert_eq!(status, WsStatus::Ok);
        let state: Value = serde_json::from_str(&take_message(json)).unwrap();
        let (live, stored) = with_game(game, |g| {
            let d = g.state().district.unwrap();
            Ok((d.live, d.stored))
        })
        .unwrap();
        assert_eq!(state["district"], json!({"live": live, "stored": stored}));
        assert!(live > 0);
        // crate1 (40, 8) is in chunk (1, 0), loaded with radius 1.
        assert_eq!(
            entity_data(game, "crate1"),
            (
                WsStatus::Ok,
                r#"{"loot":["rope"],"opened":false}"#.to_owned()
            )
        );
        // baker (300, 10) is in chunk (9, 0): not materialised.
        assert_eq!(entity_data(game, "baker").0, WsStatus::NoSuchEntity);
        free_game(game);
    }

    /// A district file cut short under a running game: a C host's game used to be poisoned
    /// (the kit panicked reading the chunk's lines again, "already borrowed"). Now the lines
    /// past the cut are `world.district.error` events, the line before it spawns, and every
    /// later call works.
    #[test]
    fn a_district_file_cut_short_under_a_running_game_does_not_poison_it() {
        let tmp = tempfile::tempdir().unwrap();
        let lines = [
            r#"{"id":"f1","position":{"x":300,"z":5}}"#,
            r#"{"id":"f2","position":{"x":301,"z":5}}"#,
            r#"{"id":"f3","position":{"x":302,"z":5}}"#,
        ];
        let path = tmp.path().join("d.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let scene = serde_json::json!({
            "kits": [
                {"id": "game.engine"}, {"id": "world.ground"},
                {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1, "budgetMs": 9}},
                {"id": "world.district", "config": {"districts": ["d.jsonl"]}}
            ],
            "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}],
            "control": "hero"
        });
        let scene = CString::new(scene.to_string()).unwrap();
        let base = CString::new(tmp.path().to_str().unwrap()).unwrap();
        let mut game: WsGame = 0;
        // SAFETY: valid strings and out-pointers.
        let status = unsafe {
            ws_game_new(
                scene.as_ptr(),
                base.as_ptr(),
                &mut game,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(status, WsStatus::Ok);
        tick(game, 2);
        // Cut inside line 2.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len((lines[0].len() + 1 + 10) as u64).unwrap();
        drop(f);
        assert_eq!(move_to(game, "hero", 300.0, 0.0, 5.0).0, WsStatus::Ok);
        let mut error = std::ptr::null_mut();
        // SAFETY: a writable out-pointer.
        let status = unsafe { ws_game_tick(game, 3, &mut error) };
        assert_eq!(status, WsStatus::Ok, "{}", take_message(error));
        let errors: Vec<String> = drain_json(game)
            .into_iter()
            .filter(|e| e["event"] == "world.district.error")
            .map(|e| e["data"]["message"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].ends_with("d.jsonl: line 2: the file changed since it was indexed: it was cut short before this line's end; not spawned"), "{errors:?}");
        assert!(errors[1].contains("d.jsonl: line 3: "), "{errors:?}");
        assert_eq!(entity_data(game, "f1").0, WsStatus::Ok, "f1 spawned");
        // Not poisoned: the game keeps ticking and answering.
        tick(game, 5);
        let mut at = 0u64;
        // SAFETY: writable out-pointers.
        let status = unsafe { ws_game_tick_count(game, &mut at, std::ptr::null_mut()) };
        assert_eq!((status, at), (WsStatus::Ok, 10));
        assert_eq!(free_game(game).0, WsStatus::Ok);
    }
}
