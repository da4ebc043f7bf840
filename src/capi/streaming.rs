//! The `world.streaming` kit's exports: what is loaded, complete and pending, readiness of
//! anchors and tickets.

use super::*;

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

/// Whether chunk `(x, z)` is complete (`isComplete(x, z)`,
/// docs/reference/engines.md#complete-chunks-in-c): it and every chunk within `neighbours` rings
/// of it that overlaps the ground are loaded and built by every builder. With `neighbours` 0 (the
/// default) that is the chunk alone, loaded and built.
///
/// # Safety
/// `out_complete` and `out_error` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_is_complete(
    game: WsGame,
    x: i64,
    z: i64,
    out_complete: *mut bool,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let complete = with_game(game, |g| Ok(streaming(g)?.is_complete(ChunkPos::new(x, z))))?;
            put(out_complete, "out_complete", complete)
        })
    }
}

/// Whether `entity` is an anchor whose focus is ready (docs/reference/streaming.md#readiness: every
/// chunk of its square inside the ground loaded or held by a load refusal): the loading gate before
/// play. An entity that is not an anchor (not tagged `player`, not controlled) or does not exist is
/// not ready.
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

/// Whether the ticket `id` (an input `{"do": "request", …}`, docs/reference/streaming.md#readiness)
/// is ready; an unknown id is not.
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
