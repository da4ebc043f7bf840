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

/// The collider kit's chunks, reached back through the engine as its concrete type.
fn colliders(g: &Game) -> Vec<ChunkPos> {
    g.kit::<kits::collider::ColliderKit>()
        .expect("the collider kit is enabled")
        .live_chunks()
}

fn drive_to(x: i64, from: u64, to: u64) -> Inputs {
    let lines: String = (from..=to)
        .map(|t| {
            format!(
                "{}\n",
                json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": x, "z": 8}})
            )
        })
        .collect();
    Inputs::parse(&lines, "route").unwrap()
}

#[test]
fn colliders_stay_in_step_after_a_load_in_the_same_engine_and_in_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.save.json");
    let mut g = game();
    g.run(&drive_to(40, 2, 6), 6).unwrap();
    let saved_set = g.streaming().unwrap().loaded();
    assert_eq!(saved_set.len(), 10, "{saved_set:?}");
    g.save(&path).unwrap();
    // Far away: a different set, the colliders follow it tick by tick.
    g.run(&drive_to(2000, 7, 20), 20).unwrap();
    let far = g.streaming().unwrap().loaded();
    assert!(far.iter().all(|c| !saved_set.contains(c)), "{far:?}");
    assert_eq!(colliders(&g), far);
    // The same engine: the subscription is told the difference, and no event is emitted.
    let events = g.engine().events().len();
    g.load(&path).unwrap();
    assert_eq!(g.streaming().unwrap().loaded(), saved_set);
    assert_eq!(colliders(&g), saved_set);
    assert_eq!(g.engine().events().len(), events, "a load emits nothing");
    // And it stays in step as the game goes on.
    g.run(&drive_to(300, 7, 12), 12).unwrap();
    assert_eq!(colliders(&g), g.streaming().unwrap().loaded());
    // A fresh engine: nothing was loaded, every restored chunk gets its collider.
    let mut fresh = game();
    assert_eq!(colliders(&fresh), []);
    fresh.load(&path).unwrap();
    assert_eq!(colliders(&fresh), saved_set);
    assert_eq!(fresh.engine().events().len(), 0, "a load emits nothing");
}

#[test]
fn after_a_load_subscribers_hear_releases_first_then_loads_each_in_row_order_as_restored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.save.json");
    let mut g = game();
    g.run(&drive_to(8, 1, 3), 3).unwrap();
    g.save(&path).unwrap();
    g.run(&drive_to(72, 4, 9), 9).unwrap();
    let before = g.streaming().unwrap().loaded();
    let heard = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let sink = heard.clone();
    let service = g.streaming().unwrap();
    let probe = service.clone();
    let _sub = service.on_chunk(Box::new(move |c, loaded| {
        sink.borrow_mut().push((c, loaded, probe.restoring()))
    }));
    g.load(&path).unwrap();
    let after = g.streaming().unwrap().loaded();
    let mut expected: Vec<(ChunkPos, bool, bool)> = before
        .iter()
        .filter(|c| !after.contains(c))
        .map(|c| (*c, false, true))
        .collect();
    expected.extend(
        after
            .iter()
            .filter(|c| !before.contains(c))
            .map(|c| (*c, true, true)),
    );
    assert!(expected.iter().any(|e| !e.1) && expected.iter().any(|e| e.1));
    assert_eq!(*heard.borrow(), expected);
    assert!(!service.restoring(), "only while the load tells them");
}
