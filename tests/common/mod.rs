//! Helpers shared by the integration tests: build a game from JSON text, run inputs, read events.
#![allow(dead_code)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::builtin_catalog;

/// The `world-streaming` binary, ready for its arguments.
pub fn bin() -> Command {
    Command::cargo_bin("world-streaming").unwrap()
}

/// A game from scene JSON (mod paths relative to `dir`).
pub fn game_in(scene: &Value, dir: &Path) -> Game {
    Game::from_scene_text(&scene.to_string(), "scene.json", dir, &builtin_catalog())
        .unwrap_or_else(|e| panic!("scene refused: {e}"))
}

/// A game from scene JSON without mods.
pub fn game(scene: &Value) -> Game {
    game_in(scene, Path::new("."))
}

/// The error a scene is refused with (panics if it starts).
pub fn scene_error(scene: &Value) -> String {
    match Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        Path::new("."),
        &builtin_catalog(),
    ) {
        Ok(_) => panic!("the scene started: {scene}"),
        Err(e) => e.to_string(),
    }
}

/// Parses JSON Lines inputs.
pub fn inputs(lines: &[Value]) -> Inputs {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Inputs::parse(&text, "inputs.jsonl").unwrap_or_else(|e| panic!("inputs refused: {e:?}"))
}

/// Runs `inputs` up to tick `target`.
pub fn run(game: &mut Game, lines: &[Value], target: u64) {
    game.run(&inputs(lines), target)
        .unwrap_or_else(|e| panic!("run failed: {e}"));
}

/// The game's state as JSON without `world.terrain.waits`, which counts the commits that
/// waited for a worker thread (docs/reference/terrain.md#the-commit: timing, not state): what two
/// runs of the same game must agree on.
pub fn state_without_timing(game: &Game) -> Value {
    let mut v = serde_json::to_value(game.state()).unwrap();
    if let Some(vars) = v["variables"].as_object_mut() {
        vars.remove("world.terrain.waits");
    }
    v
}

/// The event log as `(tick, name, data)` JSON lines.
pub fn event_lines(game: &Game) -> Vec<String> {
    game.engine()
        .events()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

/// The events named `name`, each with its tick and its data as JSON.
pub fn events_named(game: &Game, name: &str) -> Vec<(u64, Value)> {
    game.engine()
        .events()
        .iter()
        .filter(|e| e.event == name)
        .map(|e| (e.tick, serde_json::to_value(&e.data).unwrap()))
        .collect()
}

/// Asserts that the game emitted one `world.ticket.refused`, whose reason says the held tickets
/// would want `wanted` chunks.
pub fn assert_one_ticket_refused(game: &Game, wanted: u64) {
    let refused = events_named(game, "world.ticket.refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let reason = refused[0].1["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&format!("would want {wanted} chunks")),
        "{refused:?}"
    );
}

/// `(x, z)` pairs of the chunk events named `name`, with their ticks.
pub fn chunk_events(game: &Game, name: &str) -> Vec<(u64, i64, i64)> {
    game.engine()
        .events()
        .iter()
        .filter(|e| e.event == name)
        .map(|e| {
            (
                e.tick,
                e.data["x"].as_i64().unwrap(),
                e.data["z"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Shorthand for a chunk.
pub fn c(x: i64, z: i64) -> ChunkPos {
    ChunkPos::new(x, z)
}

/// The standard kits with a streaming config.
pub fn kits(streaming: Value) -> Value {
    serde_json::json!([
        { "id": "game.engine" },
        { "id": "world.ground" },
        { "id": "world.streaming", "config": streaming }
    ])
}

/// Applies one input line now.
pub fn apply(game: &mut Game, line: Value) {
    let input = world_streaming::files::inputs::parse_line(&line.to_string()).unwrap();
    game.apply(&input)
        .unwrap_or_else(|e| panic!("input refused: {e}"));
}

/// Cases for a property test: `PROPTEST_CASES`, else 1 000 (what CI runs).
pub fn proptest_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// A small deterministic generator (SplitMix64) so the scenarios are the same on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn coord(&mut self, span: i64) -> i64 {
        self.below(2 * span as u64 + 1) as i64 - span
    }
}

/// The events of `game` from index `skip` on, as JSON lines (what a loaded game emitted).
pub fn events_from(game: &Game, skip: usize) -> Vec<String> {
    game.engine().events()[skip..]
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

/// The events of `game` stamped after tick `n`, as JSON lines (what an uninterrupted run
/// emitted after a save at `n`).
pub fn events_after(game: &Game, n: u64) -> Vec<String> {
    game.engine()
        .events()
        .iter()
        .filter(|e| e.tick > n)
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

/// The inputs stamped after tick `after` (what a game loaded from a save at `after` still has
/// to apply).
pub fn inputs_after(lines: &[Value], after: u64) -> Inputs {
    let all = inputs(lines);
    Inputs {
        lines: all
            .lines
            .into_iter()
            .filter(|l| l.input.tick > after)
            .collect(),
        ..all
    }
}

/// Runs `lines` to tick `n`, saves into `dir`, loads the save into a fresh game and runs the
/// rest to tick `end`. Returns that game and the events it emitted after the load, as JSON lines
/// (compare them with [`events_after`] of an uninterrupted run).
pub fn resumed_from_save(
    scene: &Value,
    dir: &Path,
    lines: &[Value],
    n: u64,
    end: u64,
) -> (Game, Vec<String>) {
    let mut first = game_in(scene, dir);
    first.run(&inputs(lines), n).unwrap();
    let save = dir.join("run.save.json");
    first.save(&save).unwrap();
    // One game at a time on a world directory (its lock).
    drop(first);
    let mut second = game_in(scene, dir);
    let skip = second.engine().events().len();
    second.load(&save).unwrap();
    second.run(&inputs_after(lines, n), end).unwrap();
    let events = events_from(&second, skip);
    (second, events)
}

/// How `check` of a save on its own (`world-streaming check SAVE`) answers a bad save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alone {
    /// It refuses it too, at the same JSON path: every game would.
    Refuses,
    /// It accepts it: only the game it is loaded into can tell (its scene and settings, its
    /// world directory and district files, the kits and mods it runs).
    NeedsTheGame,
}

/// `check` of the save at `path` on its own, as `world-streaming check SAVE` reads it.
pub fn check_alone(path: &Path) -> Result<(), world_streaming::files::FileError> {
    use world_streaming::files::{display_name, parse_json, read_text, FileError};
    let file = display_name(path);
    let text = read_text(path)?;
    let value = parse_json(&text, &file)?;
    world_streaming::files::save::check(&value).map_err(|p| FileError::invalid(&file, p))
}

/// Checks the bad save at `path` the three ways a save is checked and asserts they agree:
/// loading it into `game` refuses it and changes nothing (state, save document, events);
/// `game.check_save` — what `world-streaming check SCENE SAVE` runs — refuses it with the very
/// same message; and `check` on its own refuses it with that message too (a load checks what
/// it checks first), or, for a save only the game can tell ([`Alone::NeedsTheGame`]), accepts
/// it. Returns the load's message.
pub fn refused_alike(game: &mut Game, path: &Path, alone: Alone) -> String {
    let name = path.display();
    let (state, doc, events) = (
        game.state(),
        game.engine().save_document(),
        game.engine().events().len(),
    );
    let checked = match game.check_save(path) {
        Err(e) => e,
        Ok(()) => panic!("{name}: check_save accepted it"),
    };
    let loaded = match game.load(path) {
        Err(e) => e,
        Ok(()) => panic!("{name}: loaded, though check_save said {checked}"),
    };
    assert_eq!(
        checked.to_string(),
        loaded.to_string(),
        "{name}: check_save and load"
    );
    assert_eq!(game.state(), state, "{name}: state unchanged");
    assert_eq!(game.engine().save_document(), doc, "{name}: game unchanged");
    assert_eq!(
        game.engine().events().len(),
        events,
        "{name}: nothing emitted"
    );
    match (alone, check_alone(path)) {
        (Alone::Refuses, Err(e)) => assert_eq!(
            e.to_string(),
            loaded.to_string(),
            "{name}: check alone and load"
        ),
        (Alone::NeedsTheGame, Ok(())) => {}
        (Alone::Refuses, Ok(())) => panic!("{name}: check alone accepted it; load said {loaded}"),
        (Alone::NeedsTheGame, Err(e)) => {
            panic!("{name}: check alone refused it ({e}), though only the game can tell")
        }
    }
    loaded.to_string()
}

/// The save at `path` is accepted the three ways: on its own, by `game.check_save` and by
/// loading it into `game`.
pub fn accepted_alike(game: &mut Game, path: &Path) {
    let name = path.display();
    if let Err(e) = check_alone(path) {
        panic!("{name}: check alone refused it: {e}");
    }
    if let Err(e) = game.check_save(path) {
        panic!("{name}: check_save refused it: {e}");
    }
    if let Err(e) = game.load(path) {
        panic!("{name}: load refused it: {e}");
    }
}
