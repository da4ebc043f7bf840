//! The tick's own work with and without `lod`, counted in instructions (deterministic, unlike
//! wall-clock time on a shared machine): benches/lod.rs's drive on the shipped
//! `examples/scenes/lod.json`, streaming alone (terrain removed; `off` also removes `lod` and
//! `lodBudget`): 60 ticks standing, 100 driving east at 24 m a tick, then `N` (default 2 000)
//! more. The tick's cost is (run with N=2000 − run with N=0) / 2000. Run:
//!
//! ```sh
//! cargo build --release --example lod_cost
//! for m in off on; do for n in 0 2000; do N=$n valgrind --tool=callgrind \
//!   --toggle-collect='world_streaming::host::engine::Engine::tick' \
//!   target/release/examples/lod_cost $m; done; done
//! ```
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

fn main() {
    let lod = std::env::args().nth(1).as_deref() == Some("on");
    let terrain = std::env::args().nth(2).as_deref() == Some("terrain");
    let mut scene: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("examples/scenes/lod.json").unwrap())
            .unwrap();
    let kits = scene["kits"].as_array_mut().unwrap();
    kits.retain(|k| terrain || k["id"] != "world.terrain");
    for k in kits.iter_mut() {
        if k["id"] == "world.streaming" && !lod {
            let c = k["config"].as_object_mut().unwrap();
            c.remove("lod");
            c.remove("lodBudget");
        }
    }
    let mut game =
        Game::from_scene_text(&scene.to_string(), "t", ".".as_ref(), &builtin_catalog()).unwrap();
    let hero = EntityId::new("hero");
    let pool = game.engine().service::<dyn TerrainService>(TERRAIN);
    let idle = || {
        if let Some(t) = &pool {
            while t.generating() > 0 {
                std::thread::yield_now();
            }
        }
    };
    for _ in 0..60 {
        idle();
        game.tick();
    }
    let mut x = 16.0;
    let mut events = 0usize;
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    for _ in 0..(100 + n) {
        x += 24.0;
        idle();
        let tick = game.engine().tick_count() + 1;
        let h = hero.clone();
        game.engine_mut().input(tick, |e| {
            e.world_mut().move_to(&h, Position::new(x, 16.0)).unwrap()
        });
        game.tick();
        events += game.engine_mut().take_events().len();
    }
    println!("{} events over {} ticks", events, 100 + n);
}
