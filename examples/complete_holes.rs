//! `world.chunks.holeTicks` with `neighbours: 1` against `neighbours` 0 at the same mesh radius
//! (docs/meshing.md#holes-at-the-same-mesh-radius): the terrain drive of
//! `examples/scenes/lookahead.json` (radius 4, `commitLatency` 2, `holeRing` 1, 180 ticks east)
//! at several speeds and budgets, with and without look-ahead (`lookAheadTicks` 2). With
//! `neighbours` 0 a hole is a chunk near the player not yet built; with `neighbours: 1` it is a
//! chunk not yet *complete* (it and its 8 neighbours built), what a mesher can draw. Counts,
//! the same on every machine and with any number of workers.
//! `cargo run --release --example complete_holes`.

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

/// `holeTicks` after 180 ticks of the drive at `speed` m a tick with `budget`, `neighbours`
/// and `look_ahead` (`hole_ring` the ring holes are counted in).
fn hole_ticks(speed: u32, budget: u32, neighbours: u32, look_ahead: u32, hole_ring: u32) -> u64 {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let text = std::fs::read_to_string(root.join("lookahead.json")).expect("the scene");
    let mut scene: Value = serde_json::from_str(&text).expect("JSON");
    let config = &mut scene["kits"][1]["config"];
    config["budgetMs"] = json!(budget);
    config["holeRing"] = json!(hole_ring);
    config["lookAheadTicks"] = json!(look_ahead);
    if neighbours > 0 {
        config["neighbours"] = json!(neighbours);
    }
    let mut game = Game::from_scene_text(
        &scene.to_string(),
        "lookahead.json",
        &root,
        &builtin_catalog(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let lines: String = (1..=180u32)
        .map(|t| {
            let to = json!({ "x": 16 + speed * t, "z": 16 });
            format!(
                "{}\n",
                json!({ "tick": t, "do": "move", "entity": "hero", "to": to })
            )
        })
        .collect();
    let inputs = Inputs::parse(&lines, "drive").expect("inputs");
    game.run(&inputs, 180).unwrap_or_else(|e| panic!("{e}"));
    game.engine()
        .variables()
        .get("world.chunks.holeTicks")
        .and_then(Value::as_u64)
        .expect("holeTicks")
}

fn main() {
    for hole_ring in [1, 4] {
        println!("holeRing {hole_ring}: holeTicks after 180 ticks, radius 4 (the mesh radius)");
        println!(
            "| m/tick | budget | k 0, N 0 | k 0, N 2 | k 1, N 0 | k 1, N 2 | k 1, N 3 | k 1, N 2, budget × 11/9 |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for (speed, budget) in [(8, 3), (16, 3), (16, 6), (24, 4), (24, 6), (32, 6)] {
            let mut counts: Vec<String> = [(0, 0), (0, 2), (1, 0), (1, 2), (1, 3)]
                .iter()
                .map(|&(k, n)| hole_ticks(speed, budget, k, n, hole_ring).to_string())
                .collect();
            // The loads a border crossing needs grow with the loaded square's side: 11 / 9 at
            // radius 4 with k = 1.
            let scaled = (budget * 11).div_ceil(9);
            let count = hole_ticks(speed, scaled, 1, 2, hole_ring);
            counts.push(format!("{count} (budget {scaled})"));
            println!("| {speed} | {budget} | {} |", counts.join(" | "));
        }
        println!();
    }
}
