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
//!
//! `complete-drive-k0` and `complete-drive-k1` are the two drives of `benches/complete.rs` (east
//! at 0.5 m a tick over `world.terrain`, budget 4: radius 9 with `neighbours` 0, radius 8 with
//! `neighbours` 1; the same chunks loaded and built; the player moved directly, where the bench
//! moves the car it rides). Their terrain workers are threads, and
//! the probe waits for them before each tick as the bench does; count only the tick, on the
//! tick's thread, with `--toggle-collect='*Game::tick*'`.

#[path = "../benches/common/pilot.rs"]
mod pilot;

use pilot::{at, fill, game, move_to};
use world_streaming::grid::Position;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(scenario), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: tick_instructions SCENARIO TICKS (see the file's first lines)");
        std::process::exit(2);
    };
    if let Some(complete) = match scenario.as_str() {
        "complete-drive-k0" => Some(false),
        "complete-drive-k1" => Some(true),
        _ => None,
    } {
        complete_drive(complete, n);
        return;
    }
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

/// The drive of `benches/complete.rs` with `neighbours` 1 at radius 8 (`complete`) or 0 at
/// radius 9: filled and built, then `n` ticks east, the workers idle before each.
fn complete_drive(complete: bool, n: u64) {
    use world_streaming::kits::terrain::{TerrainService, TERRAIN};
    let mut streaming = serde_json::json!({ "chunkSize": 32, "budgetMs": 4 });
    streaming["radius"] = serde_json::json!(if complete { 8 } else { 9 });
    if complete {
        streaming["neighbours"] = serde_json::json!(1);
    }
    let scene = serde_json::json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": streaming },
            { "id": "world.terrain", "config": { "seed": 7, "cellsPerChunk": 32 } }
        ],
        "entities": [
            { "id": "pilot", "tags": ["player"], "position": { "x": 16, "z": 16 } }
        ],
        "control": "pilot",
    });
    let mut g = world_streaming::game::Game::from_scene_text(
        &scene.to_string(),
        "probe",
        ".".as_ref(),
        &world_streaming::kits::builtin_catalog(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let terrain = g
        .engine()
        .service::<dyn TerrainService>(TERRAIN)
        .expect("terrain");
    let idle = || {
        while terrain.generating() > 0 {
            std::thread::yield_now();
        }
    };
    for _ in 0..200 {
        idle();
        g.tick();
        g.engine_mut().take_events();
    }
    let mut x = 16.0;
    for _ in 0..n {
        x += 0.5;
        move_to(&mut g, Position { x, y: 0.0, z: 16.0 });
        idle();
        g.tick();
        g.engine_mut().take_events();
    }
    println!(
        "complete drive (neighbours {}): {n} ticks after filling; {} chunks loaded",
        u8::from(complete),
        g.streaming().unwrap().loaded().len()
    );
}
