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

/// The loaded chunks whose terrain is built: where colliders belong.
fn built_live(g: &Game) -> Vec<ChunkPos> {
    let terrain = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
    g.streaming()
        .unwrap()
        .loaded()
        .into_iter()
        .filter(|c| terrain.is_built(*c))
        .collect()
}

#[test]
fn colliders_stay_in_step_after_a_load_in_the_same_engine_and_in_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.save.json");
    let mut g = game();
    g.run(&drive_to(40, 2, 8), 8).unwrap();
    let saved_set = built_live(&g);
    assert!(saved_set.len() >= 6, "{saved_set:?}");
    assert_eq!(colliders(&g), saved_set);
    g.save(&path).unwrap();
    // Far away: a different set, the colliders follow it tick by tick.
    g.run(&drive_to(2000, 9, 24), 24).unwrap();
    let far = built_live(&g);
    assert!(far.iter().all(|c| !saved_set.contains(c)), "{far:?}");
    assert_eq!(colliders(&g), far);
    // The same engine: the kit makes the colliders of what the load restored, no event is
    // emitted.
    let events = g.engine().events().len();
    g.load(&path).unwrap();
    assert_eq!(built_live(&g), saved_set);
    assert_eq!(colliders(&g), saved_set);
    assert_eq!(g.engine().events().len(), events, "a load emits nothing");
    // And it stays in step as the game goes on.
    g.run(&drive_to(300, 9, 16), 16).unwrap();
    assert_eq!(colliders(&g), built_live(&g));
    // A fresh engine: nothing was loaded, every restored built chunk gets its collider.
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

#[test]
fn an_edit_makes_the_collider_of_its_chunk_again() {
    let mut g = game();
    g.run_until_ready("hero", 100).unwrap();
    g.tick();
    let top = g.engine().variables().count("physics.colliders.top");
    assert!(top < 65535);
    g.edit(world_streaming::grid::Position::new(8.0, 8.0), 65535, None)
        .unwrap();
    // `world.terrain.changed` comes at the end of the tick; the kit publishes on the next.
    g.tick();
    g.tick();
    assert_eq!(g.engine().variables().count("physics.colliders.top"), 65535);
}
