//! The benchmarks' baseline (`benches/baseline.rs`, the naive per-tick reconcile) must stream
//! exactly like the kit, or the speed ratios in the README would compare different work.

#[path = "../benches/baseline.rs"]
mod baseline;

use serde_json::json;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::host::KitCatalog;
use world_streaming::kits::builtin_catalog;

fn drive(catalog: &KitCatalog) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("home.json"), r#"{"id": "home", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0}, "cancel": true}"#).unwrap();
    std::fs::write(
        dir.path().join("gap.json"),
        r#"{"id": "gap", "hook": "world.chunk.load", "match": {"z": 2}, "cancel": true}"#,
    )
    .unwrap();
    let scene = json!({
        "kits": [
            { "id": "world.ground", "config": { "bounds": { "minX": -200, "minZ": -300, "maxX": 3000, "maxZ": 300 } } },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 3, "budgetMs": 4 } }
        ],
        "mods": ["home.json", "gap.json"],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "rides": "car" },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 16, "z": 16 } },
            { "id": "crate", "tags": ["streamable"], "position": { "x": 500, "z": 10 } }
        ]
    });
    let mut game =
        Game::from_scene_text(&scene.to_string(), "scene.json", dir.path(), catalog).unwrap();
    let mut lines = String::new();
    for t in 1..400u64 {
        let x = 16.0 + t as f64 * 5.5;
        let z = ((t as f64) / 20.0).sin() * 120.0;
        lines += &format!(
            "{}\n",
            json!({"tick": t, "do": "move", "entity": "car", "to": {"x": x, "z": z}})
        );
    }
    lines += &format!(
        "{}\n",
        json!({"tick": 400, "do": "player.moved", "at": {"x": 0, "z": 0}})
    );
    game.run(&Inputs::parse(&lines, "drive").unwrap(), 420)
        .unwrap();
    let events = game
        .engine()
        .events()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    (events, game.state().dormant)
}

#[test]
fn the_baseline_streams_exactly_like_the_kit() {
    let (kit, kit_dormant) = drive(&builtin_catalog());
    let (naive, naive_dormant) = drive(&baseline::catalog());
    assert!(kit.len() > 300, "the drive streams: {} events", kit.len());
    assert_eq!(naive, kit);
    assert_eq!(naive_dormant, kit_dormant);
}
