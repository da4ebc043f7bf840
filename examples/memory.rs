//! Memory per loaded chunk and per anchor (docs/reference/streaming.md#the-resident-cap), measured
//! with a counting allocator: `cargo run --release --example memory`. The README quotes its output.
//!
//! - per loaded chunk: one player at radius 32 (4 225 chunks loaded), minus the same game before
//!   its first tick, over the chunks loaded;
//! - per anchor: 1 000 standing anchors with `focus: "players"` and radius 0 (one chunk each),
//!   minus 1 000 plain entities in the same game, minus the chunks' share, over the anchors.

#[path = "../benches/common/counting.rs"]
mod counting;

use serde_json::json;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

use counting::live;

fn game(entities: Vec<serde_json::Value>, config: serde_json::Value) -> Game {
    let scene = json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": config } ],
        "entities": entities,
    });
    Game::from_scene_text(
        &scene.to_string(),
        "memory",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap()
}

fn main() {
    // Per loaded chunk.
    let player = json!({ "id": "p", "tags": ["player"], "position": { "x": 16, "z": 16 } });
    let mut g = game(vec![player], json!({ "radius": 32, "budgetMs": 1e9 }));
    let before = live();
    g.run(&Inputs::default(), 1).unwrap();
    g.engine_mut().take_events();
    let chunks = g.streaming().unwrap().loaded().len();
    let per_chunk = (live() - before) as f64 / chunks as f64;
    println!("{chunks} chunks loaded: {per_chunk:.0} bytes per loaded chunk");

    // Per anchor.
    let n = 1000;
    let spread = |tags: &[&str]| -> Vec<serde_json::Value> {
        (0..n)
            .map(|i| json!({ "id": format!("e{i}"), "tags": tags, "position": { "x": (i % 40) * 320 + 16, "z": (i / 40) * 320 + 16 } }))
            .collect()
    };
    let config = json!({ "radius": 0, "budgetMs": 1e9, "focus": "players" });
    let mut plain = game(spread(&[]), config.clone());
    let mut anchors = game(spread(&["player"]), config);
    let b0 = live();
    plain.run(&Inputs::default(), 1).unwrap();
    let plain_cost = live() - b0;
    let b2 = live();
    anchors.run(&Inputs::default(), 1).unwrap();
    anchors.engine_mut().take_events();
    let anchor_cost = live() - b2;
    let loaded = anchors.streaming().unwrap().loaded().len();
    let per_anchor =
        (anchor_cost - plain_cost) as f64 / n as f64 - per_chunk * loaded as f64 / n as f64;
    println!("{n} anchors ({loaded} chunks): {per_anchor:.0} bytes per anchor beyond its chunk");

    // Per built terrain chunk (32×32 cells): the same game with and without world.terrain, every
    // chunk built, over the chunks.
    let mut cost = Vec::new();
    for terrain in [false, true] {
        let mut kits = vec![
            json!({ "id": "world.ground" }),
            json!({ "id": "world.streaming", "config": { "radius": 8, "budgetMs": 1e9 } }),
        ];
        if terrain {
            kits.push(
                json!({ "id": "world.terrain", "config": { "workers": 1, "commitLatency": 1 } }),
            );
        }
        let scene = json!({ "kits": kits, "entities": [{ "id": "p", "tags": ["player"], "position": { "x": 16, "z": 16 } }] });
        let before = live();
        let mut g = Game::from_scene_text(
            &scene.to_string(),
            "memory",
            ".".as_ref(),
            &builtin_catalog(),
        )
        .unwrap();
        g.run(&Inputs::default(), 3).unwrap();
        g.engine_mut().take_events();
        cost.push((
            (live() - before) as f64,
            g.streaming().unwrap().loaded().len(),
        ));
        std::mem::forget(g); // measured alive
    }
    let per_built = (cost[1].0 - cost[0].0) / cost[1].1 as f64;
    println!(
        "{} chunks built: {per_built:.0} bytes per built chunk (3 072 of them terrain data)",
        cost[1].1
    );
}
