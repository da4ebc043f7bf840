//! Drives from a standstill in the eight directions (docs/lod.md, "No hole in any direction"):
//! the shipped `examples/scenes/lod.json` levels (radius 8, `lod [{2,24},{8,96}]`,
//! `lookAheadTicks` 3, `world.terrain` with `commitLatency` 1, or streaming alone), the hero
//! standing 60 ticks on chunk (0, 0), (7, 7) or (3, 5), then driving 140 ticks. For each
//! `lodBudget` given, prints how many drives show a hole after the first ready tick other than
//! the one the contract makes inherent (with a builder, the last level's chunks the first step
//! newly needs, on that tick, when it crosses a chunk edge), and the first few of them. Run:
//!
//! ```sh
//! cargo run --release --example lod_compass -- 64,128,160 12,16,24,32 terrain
//! cargo run --release --example lod_compass -- 64,128,160 12,16,24,32 alone
//! ```
//!
//! `trace BUDGET SPEED DX,DZ CX,CZ terrain|alone` prints one drive's `world.lod.holes` tick by
//! tick from tick 59 (the hero on chunk (CX, CZ), towards (DX, DZ)), with what the contract makes
//! inherent on each tick:
//!
//! ```sh
//! cargo run --release --example lod_compass -- trace 64 24 -1,-1 0,0 terrain
//! ```
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Grid, Position};
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::streaming::lod::{block_of, block_ring};
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

/// The chunks within 96 of `to` that no level-2 block within 96 of `from` covers.
fn unwanted_before(from: ChunkPos, to: ChunkPos) -> u64 {
    let mut n = 0;
    for z in to.z - 96..=to.z + 96 {
        for x in to.x - 96..=to.x + 96 {
            if block_ring(block_of(ChunkPos::new(x, z), 8), 8, from) > 96 {
                n += 1;
            }
        }
    }
    n
}

/// One drive: `(tick, holes, inherent)` for every tick from the first ready one (the first with
/// no hole).
fn drive(
    budget: u64,
    dir: (f64, f64),
    speed: f64,
    start: (f64, f64),
    terrain: bool,
) -> Vec<(u64, u64, u64)> {
    let mut scene: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("examples/scenes/lod.json").unwrap())
            .unwrap();
    let kits = scene["kits"].as_array_mut().unwrap();
    kits.retain(|k| terrain || k["id"] != "world.terrain");
    for k in kits.iter_mut().filter(|k| k["id"] == "world.streaming") {
        k["config"]["lodBudget"] = budget.into();
    }
    scene["entities"][0]["position"] = serde_json::json!({ "x": start.0, "z": start.1 });
    let mut game = Game::from_scene_text(
        &scene.to_string(),
        "lod.json",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap();
    let pool = game.engine().service::<dyn TerrainService>(TERRAIN);
    let hero = EntityId::new("hero");
    let grid = Grid::new(32.0);
    let norm = (dir.0 * dir.0 + dir.1 * dir.1).sqrt();
    let (mut x, mut z) = start;
    let (mut ready, mut crossed, mut out) = (false, false, Vec::new());
    for tick in 1..=200u64 {
        let before = grid.chunk_of(Position::new(x, z));
        if tick > 60 {
            (x, z) = (x + speed * dir.0 / norm, z + speed * dir.1 / norm);
            let (h, to) = (hero.clone(), Position::new(x, z));
            game.engine_mut()
                .input(tick, |e| e.world_mut().move_to(&h, to).unwrap());
        }
        if let Some(t) = &pool {
            while t.generating() > 0 {
                std::thread::yield_now();
            }
        }
        game.tick();
        game.engine_mut().take_events();
        let now = grid.chunk_of(Position::new(x, z));
        let first_crossing = now != before && !crossed;
        crossed |= now != before;
        let holes = game.engine().variables().count("world.lod.holes");
        ready |= holes == 0;
        let inherent = match terrain && first_crossing && tick == 61 {
            true => unwanted_before(before, now),
            false => 0,
        };
        if ready {
            out.push((tick, holes, inherent));
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let list = |i: usize| -> Vec<f64> { args[i].split(',').map(|v| v.parse().unwrap()).collect() };
    if args[1] == "trace" {
        let (budget, speed) = (list(2)[0] as u64, list(3)[0]);
        let (d, c) = (list(4), list(5));
        let start = (c[0] * 32.0 + 16.0, c[1] * 32.0 + 16.0);
        for (tick, holes, inherent) in
            drive(budget, (d[0], d[1]), speed, start, args[6] == "terrain")
        {
            if tick >= 59 && (tick <= 80 || holes > 0) {
                println!("tick {tick}: holes {holes} (inherent {inherent})");
            }
        }
        return;
    }
    let (budgets, speeds, terrain) = (list(1), list(2), args[3] == "terrain");
    let dirs = [
        (1.0, 0.0),
        (-1.0, 0.0),
        (0.0, 1.0),
        (0.0, -1.0),
        (1.0, 1.0),
        (-1.0, -1.0),
        (1.0, -1.0),
        (-1.0, 1.0),
    ];
    let starts =
        [(0.0, 0.0), (7.0, 7.0), (3.0, 5.0)].map(|(x, z)| (x * 32.0 + 16.0, z * 32.0 + 16.0));
    for budget in budgets {
        let (mut n, mut bad) = (0, Vec::new());
        for &speed in &speeds {
            for dir in dirs {
                for start in starts {
                    n += 1;
                    let wrong: Vec<_> = drive(budget as u64, dir, speed, start, terrain)
                        .into_iter()
                        .filter(|&(_, holes, inherent)| holes != inherent)
                        .map(|(tick, holes, _)| (tick, holes))
                        .collect();
                    if !wrong.is_empty() {
                        bad.push((speed, dir, start, wrong));
                    }
                }
            }
        }
        println!(
            "lodBudget {budget}: {} of {n} drives with a hole beyond the first step's",
            bad.len()
        );
        for (speed, dir, start, wrong) in bad.iter().take(4) {
            let shown: Vec<_> = wrong.iter().take(6).collect();
            println!("  {speed} m/tick towards {dir:?} from {start:?}: (tick, holes) {shown:?}");
        }
    }
}
