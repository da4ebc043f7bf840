//! The tick's own work with `world.terrain` on and off, counted in instructions (deterministic,
//! unlike wall-clock time on a shared machine): a radius-8, budget-4 drive of 640 ticks at
//! 0.5 m a tick after 200 ticks of filling, the workers left idle between ticks as a game's
//! frame time would. Run:
//!
//! ```sh
//! cargo build --release --example tick_cost
//! valgrind --tool=callgrind --toggle-collect='world_streaming::host::engine::Engine::tick' target/release/examples/tick_cost off
//! valgrind --tool=callgrind --toggle-collect='world_streaming::host::engine::Engine::tick' target/release/examples/tick_cost on
//! ```
use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

fn main() {
    let terrain = std::env::args().nth(1).as_deref() == Some("on");
    let mut kits = vec![
        json!({ "id": "world.ground" }),
        json!({ "id": "world.streaming", "config": { "chunkSize": 32, "radius": 8, "budgetMs": 4 } }),
    ];
    if terrain {
        kits.push(json!({ "id": "world.terrain", "config": { "seed": 7, "workers": 1 } }));
    }
    let scene = json!({ "kits": kits, "entities": [
        { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "rides": "car" },
        { "id": "car", "tags": ["vehicle"], "position": { "x": 16, "z": 16 } } ] });
    let mut game =
        Game::from_scene_text(&scene.to_string(), "t", ".".as_ref(), &builtin_catalog()).unwrap();
    let service = game.engine().service::<dyn TerrainService>(TERRAIN);
    let car = EntityId::new("car");
    let mut x = 16.0;
    for i in 0..(200 + 640) {
        if let Some(t) = &service {
            while t.generating() > 0 {
                std::thread::yield_now();
            }
        }
        if i >= 200 {
            x += 0.5;
        }
        let tick = game.engine().tick_count() + 1;
        let to = Position::new(x, 16.0);
        game.engine_mut()
            .input(tick, |e| e.world_mut().move_to(&car, to).unwrap());
        game.tick();
        game.engine_mut().take_events();
    }
}
