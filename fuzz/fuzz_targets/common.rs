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
    Game::from_scene_text(&SCENE.replace("MODS", &list), "scene.json", dir, &builtin_catalog())
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
    inputs.lines.retain(|l| !matches!(l.input.action, Action::Save { .. } | Action::Load { .. }));
    inputs
}
