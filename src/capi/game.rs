//! A game's life through C: created from scene text, freed, driven by inputs and ticks, moved
//! without JSON, its state, variables and saves, and what its mods logged.

use super::*;

/// Builds a game from scene JSON text (the scene file,
/// docs/reference/files-and-cli.md#the-scene-file) with the built-in kits; mod paths in the scene
/// are relative to `base_dir` (`"."` for the current directory). The first scene is entered; no
/// tick has run.
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
            put(out_game, "out_game", register(game))
        })
    }
}

/// The most bytes `files_json` may hold (1 GiB): the largest file a scene names, a district file
/// (docs/reference/engines.md#scene-files-as-text). Each file in it is held to its own cap when
/// it is read, as a file on disk is.
pub const WS_MAX_FILES_JSON_BYTES: u64 = 1024 * 1024 * 1024;

/// Builds a game as `ws_game_new` does, from scene JSON text whose mods and district files are
/// read from `files_json` and nowhere else (docs/reference/engines.md#scene-files-as-text): a
/// JSON object `{"relative/path": "text", …}` standing for the scene's directory. A name the
/// scene uses that is missing from it is the error a missing file gets, naming the path; a key
/// (or a name) that is absolute, goes through `..`, holds a NUL or is empty, a value that is not
/// a string, or `files_json` that is not a JSON object is `WS_STATUS_BAD_SCENE`, naming the key.
/// Each file is held to the size cap of a file on disk. A `worldDir` is still a directory on
/// disk, relative to the current directory.
///
/// # Safety
/// `scene_json` and `files_json` are null or NUL-terminated strings; `out_game` and `out_error`
/// are null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_new_with_files(
    scene_json: *const c_char,
    files_json: *const c_char,
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
            let files = text_capped(files_json, "files_json", WS_MAX_FILES_JSON_BYTES)?;
            let files = SceneFiles::from_json(files, "files")
                .map_err(|e| CapiError::Scene(GameError::Files(e)))?;
            let game = Game::from_scene_text_with_files(scene, "scene", &files, &builtin_catalog())
                .map_err(CapiError::Scene)?;
            put(out_game, "out_game", register(game))
        })
    }
}

/// Puts `game` in this thread's registry under a new handle.
fn register(game: Game) -> WsGame {
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
    handle
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

/// Applies one input line, in the inputs file's format
/// (docs/reference/files-and-cli.md#the-inputs-file):
/// `{"tick": 1, "do": "move", "entity": "hero", "to": {"x": 40, "z": 8}}`. An input stamped `t`
/// belongs before tick `t`, so a line stamped later than the next tick to run is refused
/// (`WS_STATUS_BAD_INPUT`); apply it after ticking up to `t - 1`. `save`/`load` paths are relative
/// to the process's current directory.
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

/// The state document of docs/reference/files-and-cli.md#the-state-document as compact JSON
/// (`{"tick": 5, "scene": …, "loaded": […], …}`).
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

/// The save as text (docs/reference/engines.md#saves-as-text): byte for byte what `ws_game_save`
/// writes to a file, with the same checks (`WS_STATUS_SAVE_FAILED` when a file save would fail,
/// e.g. a Lua mod's storage that cannot be saved).
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_game_save_text(
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
            let json = with_game(game, |g| g.save_text().map_err(CapiError::Save))?;
            put(out_json, "out_json", hand_out(json))
        })
    }
}

/// Loads a save given as text (what `ws_game_save_text` hands out, or a save file's text) into
/// the game, with every check `ws_game_load` makes of a file; on any problem
/// (`WS_STATUS_LOAD_FAILED`) the game is unchanged.
///
/// # Safety
/// `json` is null or a NUL-terminated string; `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_load_text(
    game: WsGame,
    json: *const c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            // Held to a save file's cap by the load itself, refused as a file past it is.
            let json = text_capped(json, "json", u64::MAX)?;
            with_game(game, |g| g.load_text(json).map_err(CapiError::Load))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::testing::*;

    fn load_text(game: WsGame, json: &str) -> (WsStatus, String) {
        let json = CString::new(json).unwrap();
        let mut error = std::ptr::null_mut();
        // SAFETY: a valid string and out-pointer.
        let status = unsafe { ws_game_load_text(game, json.as_ptr(), &mut error) };
        (status, take_message(error))
    }

    #[test]
    fn a_save_text_past_a_save_files_cap_is_load_failed_with_a_files_words() {
        let (_, game, _) = new_game(&terrain_scene());
        let big = " ".repeat((16 << 20) + 1);
        let (status, message) = load_text(game, &big);
        assert_eq!(status, WsStatus::LoadFailed);
        assert_eq!(
            message,
            "load: save: the file is larger than the 16 MiB limit (the limit is 16777216 bytes)"
        );
        // Within the cap, the load's own checks.
        let (status, message) = load_text(game, "{");
        assert_eq!(status, WsStatus::LoadFailed);
        assert!(
            message.starts_with("load: save: line 1 column 1: "),
            "{message}"
        );
        free_game(game);
    }

    #[test]
    fn files_json_may_hold_the_largest_file_a_scene_names() {
        assert_eq!(WS_MAX_FILES_JSON_BYTES, crate::limits::MAX_DISTRICT_BYTES);
    }

    #[test]
    fn files_json_errors_are_bad_scene_and_every_one_is_told() {
        let scene = CString::new(terrain_scene()).unwrap();
        let files = CString::new(r#"{"../a": "", "b": 1}"#).unwrap();
        let mut game: WsGame = 0;
        let mut error = std::ptr::null_mut();
        // SAFETY: valid strings and out-pointers.
        let status = unsafe {
            ws_game_new_with_files(scene.as_ptr(), files.as_ptr(), &mut game, &mut error)
        };
        let message = take_message(error);
        assert_eq!((status, game), (WsStatus::BadScene, 0));
        assert!(
            message.contains(r#"files: "../a": expected a path inside"#),
            "{message}"
        );
        assert!(message.contains(r#"files: "b": expected the file's text (a string), got 1"#));
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
        // Every byte of the state but the worker waits (thread timing,
        // docs/reference/terrain.md#the-commit).
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
}
