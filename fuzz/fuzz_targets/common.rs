//! Shared by the fuzz targets: a small game to feed inputs, mods and saves to.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use world_streaming::files::inputs::{Action, Inputs};
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

pub const SCENE: &str = r#"{
  "kits": [
    { "id": "world.ground", "config": { "bounds": { "minX": -300, "minZ": -300, "maxX": 300, "maxZ": 300 } } },
    { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 2, "budgetMs": 3 } }
  ],
  "mods": MODS,
  "scenes": [ { "id": "a", "entry": { "x": 0, "z": 0 } }, { "id": "b" } ],
  "entities": [
    { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } },
    { "id": "car", "tags": ["vehicle", "streamable"], "position": { "x": 40, "z": 8 } },
    { "id": "crate", "tags": ["streamable"], "position": { "x": -100, "z": 50 } }
  ]
}"#;

/// A per-process scratch directory for mod files.
pub fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ws-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A game with the mod files `mods` (names in `dir`).
pub fn game(dir: &Path, mods: &[&str]) -> Result<Game, String> {
    let list = serde_json::to_string(mods).unwrap();
    Game::from_scene_text(
        &SCENE.replace("MODS", &list),
        "scene.json",
        dir,
        &builtin_catalog(),
    )
    .map_err(|e| e.to_string())
}

/// Drives a game through a short route, with a leave and an enter.
pub fn drive(game: &mut Game) {
    let text = r#"{"tick": 2, "do": "move", "entity": "hero", "to": {"x": 100, "z": 8}}
{"tick": 3, "do": "ride", "entity": "hero", "vehicle": "car"}
{"tick": 4, "do": "move", "entity": "car", "to": {"x": -250, "z": 40}}
{"tick": 6, "do": "leave"}
{"tick": 7, "do": "enter", "scene": "a"}
{"tick": 8, "do": "release", "x": 0, "z": 0}
"#;
    let inputs = Inputs::parse(text, "route").unwrap();
    let _ = game.run(&inputs, 10);
}

/// Inputs with `save`/`load` removed, so a fuzzer never writes or reads files it names.
pub fn without_files(mut inputs: Inputs) -> Inputs {
    inputs
        .lines
        .retain(|l| !matches!(l.input.action, Action::Save { .. } | Action::Load { .. }));
    inputs
}

/// The `scene` target: parse, check, build and run a scene.
pub fn scene(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = Path::new("/nonexistent-ws-fuzz");
    if let Ok(mut game) = Game::from_scene_text(text, "scene.json", dir, &builtin_catalog()) {
        let _ = game.run(&Inputs::default(), 3);
        let _ = game.state();
    }
}

/// The `inputs` target: parse inputs; run them (without save/load) for at most 64 ticks.
pub fn inputs(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(inputs) = Inputs::parse(text, "inputs.jsonl") else {
        return;
    };
    let inputs = without_files(inputs);
    let mut game = game(&scratch(), &[]).unwrap();
    let target = inputs.last_tick().clamp(1, 64);
    let _ = game.run(&inputs, target);
    let _ = game.state();
}

/// The `json_mod` and `lua_mod` targets: parse a mod; install it and drive.
pub fn mod_file(data: &[u8], name: &str) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = scratch();
    let path = dir.join(name);
    if world_streaming::mods::parse_mod(text.to_owned(), &path).is_err() {
        return;
    }
    std::fs::write(&path, text).unwrap();
    if let Ok(mut game) = game(&dir, &[name]) {
        drive(&mut game);
    }
}

/// The `save` target: check and load a save; a refused one leaves the game unchanged, the
/// load's own check (`check_document`) answers as the load does, and a save the load accepts
/// passes `check` on its own (which refuses only what every game refuses), but for the Lua mods'
/// storage, which the engine alone does not read.
pub fn save(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let alone = world_streaming::files::save::check(&value);
    let mut game = game(&scratch(), &[]).unwrap();
    drive(&mut game);
    let before = game.state();
    let checked = game.engine().check_document(&value);
    match game.engine_mut().load_document(&value) {
        Ok(()) => {
            assert_eq!(
                checked,
                Ok(()),
                "check_document refused a save the load took"
            );
            if let Err(p) = alone {
                assert!(
                    p.path.starts_with("mods"),
                    "check alone refused a save the load took: {p}"
                );
            }
            drive(&mut game)
        }
        Err(e) => {
            assert_eq!(checked, Err(e), "check_document and the load");
            assert_eq!(game.state(), before, "a refused save changed the game");
        }
    }
}
