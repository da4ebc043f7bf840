//! What loading a save costs, counted in instructions (deterministic, unlike wall-clock time on
//! a shared machine): a save of `world.streaming` at radius 32 (4 225 loaded chunks, their
//! last-wanted ticks, the foci), loaded 5 times into a game of its scene. Every load first
//! checks the save on its own (what `check` of a save runs), then against the game. Run:
//!
//! ```sh
//! cargo build --release --example load_cost
//! valgrind --tool=callgrind --toggle-collect='world_streaming::game::Game::load' target/release/examples/load_cost
//! ```
use serde_json::json;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let scene = json!({
        "kits": [ { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 32, "budgetMs": 4096 } } ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    });
    let game = || {
        Game::from_scene_text(
            &scene.to_string(),
            "scene.json",
            dir.path(),
            &builtin_catalog(),
        )
        .unwrap()
    };
    let mut first = game();
    for _ in 0..3 {
        first.tick();
    }
    let path = dir.path().join("radius32.save.json");
    first.save(&path).unwrap();
    let mut second = game();
    for _ in 0..5 {
        second.load(&path).unwrap();
    }
    println!(
        "loaded {} chunks 5 times",
        second.streaming().unwrap().loaded().len()
    );
}
