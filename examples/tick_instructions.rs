//! Ticks to count instructions in (docs/performance.md#counting-instructions): on a shared
//! machine a timing moves with the load, an instruction count does not. Each scenario builds a
//! game, fills it (ticks until nothing is pending), then runs `N` ticks of one kind; run it under
//! callgrind with `N` and with 0, and the difference over `N` is the instructions of one tick:
//!
//! ```text
//! cargo build --release --example tick_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.0 \
//!     target/release/examples/tick_instructions standing-square 0
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.2000 \
//!     target/release/examples/tick_instructions standing-square 2000
//! ```
//!
//! Scenarios (the scenes of `benches/vertical.rs`: one player, `chunkSize` 32, radius 8, budget
//! 4): `standing-square`, `standing-disc`, `standing-cylinder` (the seed's cylinder, `vertical`
//! radius 4), `driving-square` (east 0.5 m a tick), and `move-square-east`,
//! `move-cylinder-east`, `move-cylinder-up` (one section back and forth between two loaded
//! cylinders, nothing loading or releasing). The count is the same on every run (within a few
//! dozen instructions of the allocator's).

use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;

fn game(shape: Option<&str>, rows: Option<u32>, budget: f64) -> Game {
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
        "ticks",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn fill(game: &mut Game) {
    for _ in 0..100_000 {
        game.tick();
        game.engine_mut().take_events();
        if game.engine().variables().count("world.chunks.pending") == 0 {
            return;
        }
    }
    panic!("never settled");
}

fn move_to(game: &mut Game, to: Position) {
    let pilot = EntityId::new("pilot");
    let tick = game.engine().tick_count() + 1;
    game.engine_mut()
        .input(tick, |e| e.world_mut().move_to(&pilot, to).unwrap());
}

fn at(x: f64, y: f64) -> Position {
    Position { x, y, z: 16.0 }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(scenario), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: tick_instructions SCENARIO TICKS (see the file's first lines)");
        std::process::exit(2);
    };
    let cylinder = (Some("disc"), Some(4));
    let (world, moves) = match scenario.as_str() {
        "standing-square" | "driving-square" => ((None, None), None),
        "standing-disc" => ((Some("disc"), None), None),
        "standing-cylinder" => (cylinder, None),
        "move-square-east" => ((None, None), Some(at(48.0, 16.0))),
        "move-cylinder-east" => (cylinder, Some(at(48.0, 16.0))),
        "move-cylinder-up" => (cylinder, Some(at(16.0, 48.0))),
        other => {
            eprintln!("unknown scenario {other:?}");
            std::process::exit(2);
        }
    };
    let budget = if moves.is_some() { 1e9 } else { 4.0 };
    let mut g = game(world.0, world.1, budget);
    fill(&mut g);
    let home = at(16.0, 16.0);
    if let Some(there) = moves {
        move_to(&mut g, there);
        fill(&mut g);
    }
    let (mut x, mut away) = (16.0, true);
    for _ in 0..n {
        if scenario == "driving-square" {
            x += 0.5;
            move_to(&mut g, at(x, 16.0));
        } else if let Some(there) = moves {
            away = !away;
            move_to(&mut g, if away { there } else { home });
        }
        g.tick();
        g.engine_mut().take_events();
    }
    println!(
        "{scenario}: {n} ticks after filling; {} sections loaded",
        g.streaming().unwrap().loaded().len()
    );
}
