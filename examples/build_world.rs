//! A kit building on world.streaming and world.terrain: colliders made once terrain is built
//! (`onBuilt`) and dropped on release (`onChunk`). Run with `cargo run --example build_world`.

#[path = "kits/mod.rs"]
mod kits;

use serde_json::json;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;

fn main() {
    let catalog = kits::catalog();
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 2, "budgetMs": 4 } },
            { "id": "world.terrain", "config": { "seed": 7 } },
            { "id": "physics.colliders" }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    let mut game = Game::from_scene_text(&scene.to_string(), "build_world", ".".as_ref(), &catalog)
        .unwrap_or_else(|e| panic!("{e}"));
    let lines: String = (2..60)
        .map(|t| {
            format!(
                "{}\n",
                json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": 8 + t * 6, "z": 8}})
            )
        })
        .collect();
    game.run(&Inputs::parse(&lines, "route").unwrap(), 60)
        .unwrap_or_else(|e| panic!("{e}"));
    let v = game.engine().variables();
    println!(
        "after tick 60: {} chunks live, {} colliders (highest cell {}), {} terrain waits",
        v.count("world.chunks.loaded"),
        v.count("physics.colliders.live"),
        v.count("physics.colliders.top"),
        v.count("world.terrain.waits"),
    );
    // A kit reached back as its own type.
    let colliders = game
        .kit::<kits::collider::ColliderKit>()
        .expect("enabled")
        .live_chunks();
    println!(
        "colliders from {} to {}",
        colliders.first().map_or("-".into(), ToString::to_string),
        colliders.last().map_or("-".into(), ToString::to_string)
    );
}
