//! The example kits of `examples/kits`: terrain regenerates byte-identical height fields, and the
//! collider kit's onChunk subscription tracks exactly the live chunks.

#[path = "../examples/kits/mod.rs"]
mod kits;

use serde_json::json;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;

fn game() -> Game {
    let catalog = kits::catalog();
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 3 } },
            { "id": "world.terrain", "config": { "seed": 42 } },
            { "id": "physics.colliders" }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    Game::from_scene_text(&scene.to_string(), "scene.json", ".".as_ref(), &catalog).unwrap()
}

#[test]
fn regenerating_a_chunk_gives_byte_identical_heights() {
    let a = kits::terrain::generate(42, ChunkPos::new(3, -7));
    let b = kits::terrain::generate(42, ChunkPos::new(3, -7));
    assert_eq!(a, b);
    assert_eq!(a.len(), kits::terrain::SAMPLES * kits::terrain::SAMPLES * 2);
    assert_ne!(
        a,
        kits::terrain::generate(43, ChunkPos::new(3, -7)),
        "the seed matters"
    );
    assert_ne!(
        a,
        kits::terrain::generate(42, ChunkPos::new(4, -7)),
        "the chunk matters"
    );
}

#[test]
fn terrain_and_colliders_follow_the_live_chunks_through_a_drive() {
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
    let mut checked = 0;
    g.run_with(&inputs, 45, |engine, _| {
        let v = engine.variables();
        let live = v.count("world.chunks.loaded");
        assert_eq!(
            v.count("world.terrain.chunks"),
            live,
            "tick {}",
            engine.tick_count()
        );
        assert_eq!(
            v.count("physics.colliders.live"),
            live,
            "tick {}",
            engine.tick_count()
        );
        checked += 1;
    })
    .unwrap();
    assert_eq!(checked, 45);
    let v = g.engine().variables();
    assert!(
        v.count("world.terrain.generated") > v.count("world.terrain.chunks"),
        "chunks were released and rebuilt"
    );
}

#[test]
fn a_kit_whose_requirement_is_missing_is_refused_with_who_needs_what() {
    let mut catalog = world_streaming::kits::builtin_catalog();
    catalog.add(
        kits::terrain::manifest(),
        Box::new(kits::terrain::TerrainKit::from_spec),
    );
    let scene = json!({ "kits": [ { "id": "world.terrain" } ] });
    let err = Game::from_scene_text(&scene.to_string(), "scene.json", ".".as_ref(), &catalog)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("kit world.terrain requires world.streaming@^1, no enabled kit provides it"),
        "{err}"
    );
}
