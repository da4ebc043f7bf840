//! The C ABI (docs/reference/engines.md#c-abi-rules): how Godot, Unity, Unreal or any C program
//! drive a game through the `cdylib`/`staticlib` builds of this crate. `include/world_streaming.h`
//! is generated from this folder by cbindgen (`WS_BLESS=1 cargo test --test capi_header` rewrites
//! it; the test fails when it drifts).
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
//! The files, by topic: this one the boundary (the handle and string registries, running an
//! entry, reading text and writing out-pointers; the version, status names and `ws_string_free`);
//! `types.rs` the types C sees and the errors behind each status; `game.rs` a game's life
//! (create, free, inputs, ticks, state, variables, saves); `events.rs` the event drains, which
//! read each kit's events through that kit's typed reader; `streaming.rs`, `terrain.rs` and
//! `district.rs` each kit's exports; `wasm.rs` what only the wasm build exports (an allocator
//! pair for what JavaScript passes in, and a live-allocation count; guarded by `WS_WASM32` in the
//! header). cbindgen reads this file first, then the others in the order of the `mod` lines
//! below, and writes the functions in that order.
//!
//! This is the only module of the crate besides the Lua VM's budget that holds `unsafe` code: the
//! reads of the caller's strings and the writes through its out-pointers (and, on the wasm
//! build, its counting allocator).
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
use crate::kits::streaming::StreamingService;
use crate::kits::terrain::{ChunkData, TerrainService, TERRAIN};
use crate::scene_files::SceneFiles;

// In the order cbindgen writes their functions (a blank line keeps rustfmt from sorting them).
mod game;

mod events;

mod streaming;

mod terrain;

mod district;

mod types;

#[cfg(target_arch = "wasm32")]
mod wasm;

// The live page's exports (web-only: guarded by `WS_WASM32` in the header).
#[cfg(target_arch = "wasm32")]
mod play;

#[cfg(test)]
mod testing;

pub use district::*;
pub use events::*;
pub use game::*;
#[cfg(target_arch = "wasm32")]
pub use play::*;
pub use streaming::*;
pub use terrain::*;
pub use types::*;
#[cfg(target_arch = "wasm32")]
pub use wasm::*;

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
    // SAFETY: the caller's promise, passed on.
    unsafe { text_capped(ptr, what, MAX_FILE_BYTES) }
}

/// [`text`] with a cap of its own (`files_json`, which holds a scene's every file).
///
/// # Safety
/// As [`text`].
unsafe fn text_capped<'a>(
    ptr: *const c_char,
    what: &'static str,
    limit: u64,
) -> Result<&'a str, CapiError> {
    if ptr.is_null() {
        return Err(CapiError::Null(what));
    }
    // SAFETY: not null, and the caller promises a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    if bytes.len() as u64 > limit {
        return Err(CapiError::TooLong {
            what,
            len: bytes.len(),
            limit,
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
        19 => "WS_STATUS_NOT_COMPLETE\0",
        20 => "WS_STATUS_NO_SUCH_ENTITY\0",
        21 => "WS_STATUS_NO_TERRAIN\0",
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

    /// The numbers are the contract (docs/reference/engines.md#status-codes: `WS_STATUS_NOT_BUILT`
    /// is 16): C and C# callers compare against them, so none may move.
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
            (WsStatus::NotComplete, 19, "WS_STATUS_NOT_COMPLETE"),
            (WsStatus::NoSuchEntity, 20, "WS_STATUS_NO_SUCH_ENTITY"),
            (WsStatus::NoTerrain, 21, "WS_STATUS_NO_TERRAIN"),
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
}
