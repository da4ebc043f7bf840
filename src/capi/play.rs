//! The live page's exports (docs/web.md#the-live-page): web-only, built for wasm32 only and
//! guarded by `WS_WASM32` in `include/world_streaming.h` (the tests drive them in a real
//! browser, tests/play.rs; the session behind them, [`crate::view::Live`], natively too). They
//! keep the C ABI's rules: a `WsPlay` handle (a number,
//! never reused, of the thread that made it), a status per call, a message through `out_error`,
//! JSON strings handed out and freed with `ws_string_free`.
//!
//! A play session ([`crate::view::Live`]) is a game started from a recording (`run --record`'s
//! format: its scene, mods' sources and district files stand for the scene's directory, its
//! inputs play first, its steps, if any, are checked), run tick by tick with the replay viewer's
//! frame capture beside it, and saved as a recording again.

use super::*;
use crate::replay::Recording;
use crate::view::Live;

/// A play session handle. 0 is never a session.
pub type WsPlay = u64;

thread_local! {
    /// The play sessions of this thread; `None` while a call on one runs (re-entry is refused)
    /// or after a call on it panicked.
    static PLAYS: RefCell<BTreeMap<WsPlay, Option<Live>>> = const { RefCell::new(BTreeMap::new()) };
}

/// Runs `f` on the session `handle` names; a session whose call panicked stays taken (poisoned).
fn with_play<R>(
    handle: WsPlay,
    f: impl FnOnce(&mut Live) -> Result<R, CapiError>,
) -> Result<R, CapiError> {
    let mut live = PLAYS.with(|plays| {
        let mut plays = plays.borrow_mut();
        let slot = plays.get_mut(&handle).ok_or(CapiError::Handle(handle))?;
        slot.take().ok_or(CapiError::Poisoned(handle))
    })?;
    let result = f(&mut live);
    PLAYS.with(|plays| {
        if let Some(slot) = plays.borrow_mut().get_mut(&handle) {
            *slot = Some(live);
        }
    });
    result
}

/// Writes `json` (compact) through `out_json`.
///
/// # Safety
/// `out_json` is null or writable.
unsafe fn put_json(out_json: *mut *mut c_char, json: String) -> Result<(), CapiError> {
    // SAFETY: per this function's contract.
    unsafe { put(out_json, "out_json", hand_out(json)) }
}

/// Starts a play session from a recording's JSON text (the format `run --record` writes, checked
/// as `replay` checks a file: `steps` may be empty): its game is built from the recording's scene
/// with its mods and district files given as text (a recording that carries a world directory is
/// refused), its inputs are queued, and the page frame of tick 0 is captured. `title` names the
/// session in the page model's header.
///
/// # Safety
/// `recording_json` and `title` are null or NUL-terminated strings; `out_play` and `out_error`
/// null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_play_new(
    recording_json: *const c_char,
    title: *const c_char,
    out_play: *mut WsPlay,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            if out_play.is_null() {
                return Err(CapiError::Null("out_play"));
            }
            let text = text(recording_json, "recording_json")?;
            let title = text_arg(title, "title")?;
            let recording = Recording::parse(text, "recording")
                .map_err(|e| CapiError::Scene(GameError::Files(vec![e])))?;
            let live = Live::from_recording(&recording, title).map_err(play_error)?;
            let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
            PLAYS.with(|plays| plays.borrow_mut().insert(handle, Some(live)));
            put(out_play, "out_play", handle)
        })
    }
}

/// [`text`], for a second argument of the same call (the borrow checker sees one lifetime).
///
/// # Safety
/// As [`text`].
unsafe fn text_arg<'a>(ptr: *const c_char, what: &'static str) -> Result<&'a str, CapiError> {
    // SAFETY: forwarded.
    unsafe { text(ptr, what) }
}

/// The status of a session's error: a scene or recording refused is `WS_STATUS_BAD_SCENE`, an
/// input refused `WS_STATUS_INPUT_FAILED`.
fn play_error(e: crate::view::ViewError) -> CapiError {
    use crate::view::ViewError;
    match e {
        ViewError::Game(g) => CapiError::Scene(g),
        ViewError::Replay(f) => CapiError::Scene(GameError::Files(vec![f])),
        other => CapiError::Input(other.to_string()),
    }
}

/// Frees a play session (and its game).
///
/// # Safety
/// `out_error` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_play_free(play: WsPlay, out_error: *mut *mut c_char) -> WsStatus {
    // SAFETY: per this function's contract.
    unsafe {
        entry(out_error, || {
            PLAYS
                .with(|plays| plays.borrow_mut().remove(&play))
                .ok_or(CapiError::Handle(play))
                .map(drop)
        })
    }
}

/// Queues an input line (the inputs file's format), applied before the tick it is stamped with,
/// after the inputs already queued for that tick: a malformed line, or one stamped with a tick
/// that has run, is `WS_STATUS_BAD_INPUT`.
///
/// # Safety
/// `line` is null or a NUL-terminated string; `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_play_input(
    play: WsPlay,
    line: *const c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let line = text(line, "line")?;
            with_play(play, |live| live.input(line).map_err(CapiError::BadInput))
        })
    }
}

/// Runs `n` ticks, each after the inputs due before it, capturing each tick's page frame and
/// step. An input the game refuses is dropped (`WS_STATUS_INPUT_FAILED`, the ticks before it
/// stay run).
///
/// # Safety
/// `out_error` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_play_tick(
    play: WsPlay,
    n: u64,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: per this function's contract.
    unsafe {
        entry(out_error, || {
            with_play(play, |live| {
                let at = live.game().engine().tick_count();
                if n > MAX_TICK.saturating_sub(at) {
                    return Err(CapiError::Ticks { n, at });
                }
                live.tick(n).map(drop).map_err(play_error)
            })
        })
    }
}

/// The page model's header (the replay viewer's data with no frame yet:
/// `{"format": "world-streaming-view", "version": 1, "title": …, "chunkSize": …, "frames": [], …}`).
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_play_header(
    play: WsPlay,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let json = with_play(play, |live| {
                Ok(serde_json::to_string(live.header()).expect("plain data"))
            })?;
            put_json(out_json, json)
        })
    }
}

/// The page frames captured since the last call (tick 0's first), with the event names and
/// entity ids they introduce: `{"names": […], "ids": […], "frames": […]}`.
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_play_frames(
    play: WsPlay,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let json = with_play(play, |live| Ok(live.take().to_string()))?;
            put_json(out_json, json)
        })
    }
}

/// The session's status: `{"tick", "pending", "applied", "player": {"id", "x", "y", "z"} | null,
/// "check": {"recorded", "checked", "differs"}}` (the player the page moves, where it will be once
/// its queued moves apply; how the ticks run compare with the recording's steps).
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_play_status(
    play: WsPlay,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let json = with_play(play, |live| Ok(live.status().to_string()))?;
            put_json(out_json, json)
        })
    }
}

/// The session as a recording's JSON text (`run --record`'s format, ending with a newline): the
/// scene, mods and district files it started from, the inputs applied, the ticks run and each
/// tick's step (FNV-1a 64 of its canonical events).
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_play_recording(
    play: WsPlay,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let json = with_play(play, |live| {
                let mut text = serde_json::to_string(live.recording()).expect("plain data");
                text.push('\n');
                Ok(text)
            })?;
            put_json(out_json, json)
        })
    }
}
