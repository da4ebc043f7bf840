//! What the C ABI's tests share: making, ticking, driving and freeing a game through the C
//! functions, and reading what they hand out.

use super::*;

/// `ws_game_new` on a world scene; the status and the message (if any).
pub(super) fn new_game(scene: &str) -> (WsStatus, WsGame, String) {
    let scene = CString::new(scene).unwrap();
    let dot = CString::new(".").unwrap();
    let mut game: WsGame = 0;
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: valid strings and out-pointers.
    let status = unsafe { ws_game_new(scene.as_ptr(), dot.as_ptr(), &mut game, &mut error) };
    (status, game, take_message(error))
}

pub(super) fn take_message(error: *mut c_char) -> String {
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

pub(super) fn free_game(game: WsGame) -> (WsStatus, String) {
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: a writable out-pointer.
    let status = unsafe { ws_game_free(game, &mut error) };
    (status, take_message(error))
}

pub(super) fn world_scene(dir: &Path) -> String {
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

/// A terrain scene with one player, on one worker.
pub(super) fn terrain_scene() -> String {
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

pub(super) fn tick(game: WsGame, n: u64) {
    let mut error = std::ptr::null_mut();
    // SAFETY: a writable out-pointer.
    let status = unsafe { ws_game_tick(game, n, &mut error) };
    assert_eq!(status, WsStatus::Ok, "{}", take_message(error));
}

pub(super) fn apply(game: WsGame, line: &str) -> (WsStatus, String) {
    let line = CString::new(line).unwrap();
    let mut error = std::ptr::null_mut();
    // SAFETY: a valid string and out-pointer.
    let status = unsafe { ws_game_apply(game, line.as_ptr(), &mut error) };
    (status, take_message(error))
}

pub(super) fn move_to(game: WsGame, entity: &str, x: f64, y: f64, z: f64) -> (WsStatus, String) {
    let entity = CString::new(entity).unwrap();
    let mut error = std::ptr::null_mut();
    // SAFETY: a valid string and out-pointer.
    let status = unsafe { ws_game_move(game, entity.as_ptr(), x, y, z, &mut error) };
    (status, take_message(error))
}

/// `ws_game_drain_events`, parsed.
pub(super) fn drain_json(game: WsGame) -> Vec<Value> {
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
pub(super) fn drain_chunks_once(game: WsGame, capacity: usize) -> Vec<WsChunkEvent> {
    let blank = WsChunkEvent {
        kind: -1,
        level: 99,
        x: 0,
        z: 0,
        hash: 0,
        y: 77,
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

/// The chunk event a JSON event of the log stands for, read as a C host reading the JSON
/// would (the hash from its 16 hex digits): the oracle the typed drain is checked against.
pub(super) fn chunk_event_of_json(v: &Value) -> Option<WsChunkEvent> {
    let data = &v["data"];
    let mut event = Event {
        tick: v["tick"].as_u64().unwrap(),
        event: v["event"].as_str().unwrap().to_owned().into(),
        data: data.clone().into(),
    };
    if let Some(hex) = data["hash"].as_str() {
        // The typed payload the kit emitted, made again from the text.
        let hash = u64::from_str_radix(hex, 16).ok()?;
        let at = ChunkPos::new(data["x"].as_i64()?, data["z"].as_i64()?);
        event.data = match data["level"].as_u64() {
            None => crate::host::chunk_hash_data(at, hash),
            Some(level) => crate::host::EventData::LevelXzHash(crate::host::block_hash_values(
                u32::try_from(level).ok()?,
                at,
                hash,
            )),
        };
    }
    chunk_event(&event)
}
