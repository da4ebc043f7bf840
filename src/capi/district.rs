//! The `world.district` kit's exports: a live entity's `data`, written and read.

use super::*;

/// Replaces the `data` of live entity `entity` (docs/reference/engine.md#entity-data) with the JSON
/// object `json`, as a `set` input stamped with the next tick would
/// (`{"tick": next, "do": "set", "entity": …, "data": json}`); `null` clears it. Text that is not
/// JSON, not an object (or `null`), or over 4 KiB serialized is `WS_STATUS_BAD_INPUT`; an entity
/// that is not live is `WS_STATUS_INPUT_FAILED` (the messages a `set` line gets).
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

/// The `data` of live entity `entity` (docs/reference/engine.md#entity-data) as compact JSON: an
/// object, or `null` when it has none. An entity that is not live (never spawned, despawned, or
/// stored with its chunk) is `WS_STATUS_NO_SUCH_ENTITY`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::testing::*;

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
