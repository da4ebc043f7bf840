//! The example kit of `examples/kits`: colliders made on `world.terrain`'s `onBuilt` and dropped
//! on `world.streaming`'s `onChunk`, always one per built, live chunk.

#[path = "../examples/kits/mod.rs"]
mod kits;

use serde_json::json;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

fn game() -> Game {
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 2 } },
            { "id": "world.terrain", "config": { "seed": 42, "commitLatency": 2 } },
            { "id": "physics.colliders" }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        ".".as_ref(),
        &kits::catalog(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn colliders_follow_the_built_live_chunks_through_a_drive() {
    let mut g = game();
    let lines: String = (2..40)
        .map(|t| {
            format!(
                "{}\n",
                json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": 8 + t * 9, "z": 8}})
            )
        })
        .collect();
    let inputs = Inputs::parse(&lines, "route").unwrap();
    let terrain = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
    let streaming = g.streaming().unwrap();
    let mut checked = 0;
    g.run_with(&inputs, 45, |engine, _| {
        let built_live = streaming
            .loaded()
            .iter()
            .filter(|c| terrain.is_built(**c))
            .count() as u64;
        let v = engine.variables();
        assert_eq!(
            v.count("physics.colliders.live"),
            built_live,
            "tick {}",
            engine.tick_count()
        );
        checked += 1;
    })
    .unwrap();
    assert_eq!(checked, 45);
    let built = g
        .engine()
        .events()
        .iter()
        .filter(|e| e.event == "world.terrain.built")
        .count();
    assert!(
        built > g.streaming().unwrap().loaded().len(),
        "chunks were released and rebuilt"
    );
    assert!(g.engine().variables().count("physics.colliders.top") > 0);
    assert!(!terrain.is_built(ChunkPos::new(-1, 0)), "released long ago");
}

#[test]
fn a_kit_whose_requirement_is_missing_is_refused_with_who_needs_what() {
    let scene = json!({ "kits": [ { "id": "world.streaming" }, { "id": "world.ground" }, { "id": "physics.colliders" } ] });
    let err = Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        ".".as_ref(),
        &kits::catalog(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("kit physics.colliders requires world.terrain@^1, no enabled kit provides it"),
        "{err}"
    );
}
