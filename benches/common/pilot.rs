//! The one-player scenes that `benches/vertical.rs` times and `examples/tick_instructions.rs`
//! counts: a pilot at (16, 16, 16), `chunkSize` 32, radius 8, the `shape` and `vertical.radius`
//! given; filled (ticked until nothing is pending) and moved by inputs.

#![allow(dead_code)] // each includer uses what it needs

use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;

/// The scene with `shape` (`None`: left out) and `rows` (`vertical.radius`; `None`: flat) at
/// `budgetMs` `budget`.
pub fn game(shape: Option<&str>, rows: Option<u32>, budget: f64) -> Game {
    let mut config = json!({ "chunkSize": 32, "radius": 8, "budgetMs": budget });
    if let Some(shape) = shape {
        config["shape"] = json!(shape);
    }
    if let Some(rows) = rows {
        config["vertical"] = json!({ "radius": rows });
    }
    let scene: Value = json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": config } ],
        "entities": [
            { "id": "pilot", "tags": ["player"], "position": { "x": 16, "y": 16, "z": 16 } }
        ],
        "control": "pilot",
    });
    Game::from_scene_text(
        &scene.to_string(),
        "bench",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Ticks until nothing is pending.
pub fn fill(game: &mut Game) {
    for _ in 0..100_000 {
        game.tick();
        game.engine_mut().take_events();
        if game.engine().variables().count("world.chunks.pending") == 0 {
            return;
        }
    }
    panic!("never settled");
}

/// The pilot moves to `to` at the next tick.
pub fn move_to(game: &mut Game, to: Position) {
    let pilot = EntityId::new("pilot");
    let tick = game.engine().tick_count() + 1;
    game.engine_mut()
        .input(tick, |e| e.world_mut().move_to(&pilot, to).unwrap());
}

/// `(x, y, 16)`.
pub fn at(x: f64, y: f64) -> Position {
    Position { x, y, z: 16.0 }
}
