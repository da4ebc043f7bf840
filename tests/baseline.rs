//! The benchmarks' baseline (`benches/common/baseline.rs`, the naive per-tick reconcile) must stream
//! exactly like the kit, or the speed ratios in the README would compare different work.

#[path = "../benches/common/baseline.rs"]
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

/// Three players who split up and meet again, one riding the car: the union of
/// docs/reference/streaming.md#the-wanted-union.
fn party(catalog: &KitCatalog) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("home.json"),
        r#"{"id": "home", "hook": "world.chunk.unload", "match": {"x": 0}, "cancel": true}"#,
    )
    .unwrap();
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 2, "budgetMs": 3, "focus": "players" } }
        ],
        "mods": ["home.json"],
        "entities": [
            { "id": "a", "tags": ["player"], "position": { "x": 16, "z": 16 } },
            { "id": "b", "tags": ["player"], "position": { "x": 40, "z": 16 }, "rides": "car" },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 40, "z": 16 } },
            { "id": "c", "tags": ["player"], "position": { "x": -30, "z": 50 } }
        ]
    });
    let mut game =
        Game::from_scene_text(&scene.to_string(), "scene.json", dir.path(), catalog).unwrap();
    let mut lines = String::new();
    for t in 1..300u64 {
        let out = if t < 150 { t as f64 } else { 300.0 - t as f64 };
        for (who, dx, dz) in [("a", -3.0, 0.5), ("car", 4.0, 2.0), ("c", 0.5, -3.5)] {
            lines += &format!(
                "{}\n",
                json!({"tick": t, "do": "move", "entity": who, "to": {"x": 16.0 + dx * out, "z": 16.0 + dz * out}})
            );
        }
    }
    game.run(&Inputs::parse(&lines, "party").unwrap(), 320)
        .unwrap();
    game.engine()
        .events()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

#[test]
fn the_baseline_streams_the_union_of_several_players_exactly_like_the_kit() {
    let kit = party(&builtin_catalog());
    assert!(kit.len() > 300, "the party streams: {} events", kit.len());
    assert_eq!(party(&baseline::catalog()), kit);
}
