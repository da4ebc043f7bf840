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

/// Whether chunk `(x, z)` is loaded (`isLoaded(x, z)`). With `vertical` on that is the section
/// of row 0 of the column, as `isLoaded(x, z)` without `y`; [`ws_game_is_loaded_section`] names
/// the row.
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
    // SAFETY: the same contract: row 0 of the column.
    unsafe { ws_game_is_loaded_section(game, x, 0, z, out_loaded, out_error) }
}

/// Whether section `(x, y, z)` is loaded (`isLoaded(x, z, y)`,
/// docs/reference/engines.md#vertical-sections-in-c): with `vertical` on, the section of row `y`
/// of column `(x, z)`; without it only row 0 exists, so `y` 0 is [`ws_game_is_loaded`] and any
/// other `y` is not loaded.
///
/// # Safety
/// `out_loaded` and `out_error` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_is_loaded_section(
    game: WsGame,
    x: i64,
    y: i64,
    z: i64,
    out_loaded: *mut bool,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            let loaded = with_game(game, |g| {
                Ok(streaming(g)?.is_loaded(ChunkPos::section(x, y, z)))
            })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::testing::*;

    /// `ws_game_is_loaded_section` through the C entry point: `(status, loaded, message)`.
    fn section(game: WsGame, x: i64, y: i64, z: i64) -> (WsStatus, bool, String) {
        let mut loaded = false;
        let mut error = std::ptr::null_mut();
        // SAFETY: writable out-pointers.
        let status = unsafe { ws_game_is_loaded_section(game, x, y, z, &mut loaded, &mut error) };
        (status, loaded, take_message(error))
    }

    fn column(game: WsGame, x: i64, z: i64) -> bool {
        let mut loaded = false;
        let mut error = std::ptr::null_mut();
        // SAFETY: writable out-pointers.
        let status = unsafe { ws_game_is_loaded(game, x, z, &mut loaded, &mut error) };
        assert_eq!(status, WsStatus::Ok, "{}", take_message(error));
        loaded
    }

    /// Without `vertical` only row 0 exists (docs/reference/engines.md#vertical-sections-in-c):
    /// row 0 answers as `ws_game_is_loaded` does, every other row is not loaded.
    #[test]
    fn a_flat_world_has_its_chunks_in_row_0_and_no_other_row() {
        let (_, game, _) = new_game(&terrain_scene());
        tick(game, 4);
        let mut loaded = 0;
        for z in -4..=4 {
            for x in -4..=4 {
                let flat = column(game, x, z);
                loaded += usize::from(flat);
                assert_eq!(section(game, x, 0, z), (WsStatus::Ok, flat, String::new()));
                for y in [-1, 1, i64::MIN, i64::MAX] {
                    assert_eq!(section(game, x, y, z), (WsStatus::Ok, false, String::new()));
                }
            }
        }
        assert!(loaded >= 9, "{loaded}");
        free_game(game);
    }

    #[test]
    fn a_section_query_with_a_null_out_pointer_no_streaming_or_a_freed_handle_is_refused() {
        let (_, game, _) = new_game(&terrain_scene());
        tick(game, 1);
        let mut error = std::ptr::null_mut();
        // SAFETY: a null out-pointer is refused before any write.
        let status =
            unsafe { ws_game_is_loaded_section(game, 0, 0, 0, std::ptr::null_mut(), &mut error) };
        assert_eq!(status, WsStatus::NullArgument);
        assert_eq!(take_message(error), "out_loaded is null");
        free_game(game);
        let (status, loaded, message) = section(game, 0, 0, 0);
        assert_eq!((status, loaded), (WsStatus::InvalidHandle, false));
        assert!(message.contains(&format!("handle {game}")), "{message}");
        let (_, ground, _) = new_game(r#"{"kits": [{"id": "world.ground"}]}"#);
        let (status, _, message) = section(ground, 0, 0, 0);
        assert_eq!(status, WsStatus::NoStreaming);
        assert_eq!(message, "the scene does not enable the world.streaming kit");
        free_game(ground);
    }
}
