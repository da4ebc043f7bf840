//! The library as a Rust game meets it: checked value types, the game's own settings, mods added
//! from code, typed input errors and chunk events, kits reaching their state back, and `onChunk`
//! callbacks acting on the world.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use serde_json::{json, Value};
use world_streaming::game::{Game, GameError};
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::host::{Entity, EntityError, EntityId};
use world_streaming::kits::streaming::{
    BudgetMs, ChunkEvent, ChunkSize, MaxLoaded, Radius, StreamingKit,
};

fn seed_scene() -> Value {
    json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 1, "budgetMs": 2 })),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    })
}

#[test]
fn value_types_are_checked_when_built_and_say_what_they_expect() {
    assert_eq!(Radius::new(64).unwrap().get(), 64);
    assert_eq!(
        Radius::new(65).unwrap_err().to_string(),
        "Radius: expected an integer 0..=64, got 65"
    );
    assert!(BudgetMs::new(f64::NAN).is_err());
    assert!(BudgetMs::new(-0.5).is_err());
    assert_eq!(BudgetMs::new(2.5).unwrap().loads_per_tick(), 2);
    assert!(ChunkSize::new(0.0).is_err());
    assert!(MaxLoaded::new(Some(0)).is_err());
    assert_eq!(MaxLoaded::new(None).unwrap().get(), None);
}

#[test]
fn the_games_own_settings_apply_from_the_next_tick_are_checked_and_can_be_cleared() {
    let mut g = game(&seed_scene());
    let s = g.streaming().unwrap();
    g.set_radius(3).unwrap();
    g.set_budget_ms(6.0).unwrap();
    assert_eq!((s.radius(), s.loads_per_tick()), (3, 6));
    assert!(matches!(g.set_radius(65), Err(GameError::Value(_))));
    assert!(matches!(
        g.set_budget_ms(f64::INFINITY),
        Err(GameError::Value(_))
    ));
    assert_eq!(
        (s.radius(), s.loads_per_tick()),
        (3, 6),
        "a refused value changes nothing"
    );
    run(&mut g, &[], 1);
    assert_eq!(s.loaded().len(), 6, "six loads in tick 1");
    // Saved like a mod's override.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    g.save(&path).unwrap();
    g.clear_overrides().unwrap();
    assert_eq!((s.radius(), s.loads_per_tick()), (1, 2), "the config again");
    g.load(&path).unwrap();
    assert_eq!((s.radius(), s.loads_per_tick()), (3, 6));
    let mut bare = game(&json!({ "kits": [ { "id": "world.ground" } ] }));
    assert!(matches!(bare.set_radius(1), Err(GameError::Streaming(_))));
}

#[test]
fn a_mod_added_from_code_acts_as_one_listed_in_the_scene_with_the_games_log_and_seed() {
    let dir = tempfile::tempdir().unwrap();
    let dice = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mods/dice.lua"),
    )
    .unwrap();
    std::fs::write(dir.path().join("dice.lua"), &dice).unwrap();
    let keep = r#"{"id": "keep", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0}, "cancel": true}"#;
    std::fs::write(dir.path().join("keep.json"), keep).unwrap();
    let drive: Vec<Value> = (1..30)
        .map(
            |t| json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": 8 + 20 * t, "z": 8}}),
        )
        .collect();
    let mut listed_scene = seed_scene();
    listed_scene["mods"] = json!(["keep.json", "dice.lua"]);
    listed_scene["seed"] = json!(11);
    let mut listed = game_in(&listed_scene, dir.path());
    run(&mut listed, &drive, 30);
    let mut added_scene = seed_scene();
    added_scene["seed"] = json!(11);
    let mut added = game(&added_scene);
    added.add_mod("keep.json", keep).unwrap();
    added.add_mod("dice.lua", &dice).unwrap();
    run(&mut added, &drive, 30);
    assert_eq!(event_lines(&added), event_lines(&listed));
    assert_eq!(added.take_mod_log(), listed.take_mod_log());
    assert!(!added.state().refusals.is_empty(), "keep holds (0, 0)");
    // A bad mod is an error naming it, and nothing is added.
    let e = added.add_mod(
        "bad.json",
        r#"{"id": "bad", "hook": "world.chunk.load", "cancel": 1}"#,
    );
    match e {
        Err(GameError::Files(list)) => {
            assert!(
                list[0].to_string().starts_with("bad.json: cancel: "),
                "{}",
                list[0]
            )
        }
        other => panic!("{:?}", other.err()),
    }
    assert!(added
        .add_mod("bad.lua", "on('world.chunk.loaded', print)")
        .is_err());
}

#[test]
fn a_refused_input_is_a_typed_error() {
    let mut g = game(&seed_scene());
    let line = |v: Value| world_streaming::files::inputs::parse_line(&v.to_string()).unwrap();
    match g.apply(&line(
        json!({"tick": 1, "do": "move", "entity": "ghost", "to": {"x": 0, "z": 0}}),
    )) {
        Err(GameError::Entity(EntityError::NoSuchEntity(id))) => assert_eq!(id.as_str(), "ghost"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        g.apply(&line(json!({"tick": 1, "do": "enter", "scene": "moon"}))),
        Err(GameError::Engine(_))
    ));
    assert!(matches!(
        g.apply(&line(
            json!({"tick": 1, "do": "load", "path": "/nonexistent/save.json"})
        )),
        Err(GameError::Files(_))
    ));
}

#[test]
fn chunk_events_are_typed() {
    let mut g = game(&seed_scene());
    run(
        &mut g,
        &[json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 200, "z": 8}})],
        3,
    );
    let chunks: Vec<(ChunkPos, bool)> = g
        .engine()
        .events()
        .iter()
        .filter_map(|e| e.chunk())
        .collect();
    assert_eq!(
        chunks[..2],
        [(ChunkPos::new(0, 0), true), (ChunkPos::new(0, -1), true)]
    );
    assert!(chunks.contains(&(ChunkPos::new(0, 0), false)));
    assert_eq!(
        chunks.len(),
        g.engine()
            .events()
            .iter()
            .filter(|e| e.event.starts_with("world.chunk."))
            .count()
    );
}

#[test]
fn a_kit_reaches_its_own_state_back_from_the_engine() {
    let g = game(&seed_scene());
    assert!(g.kit::<StreamingKit>().is_some());
    assert!(g
        .kit::<world_streaming::kits::ground::GroundKit>()
        .is_some());
}

/// A game whose subscriber plants a streamable tree in every chunk it hears loaded and fells it
/// when the chunk goes; the record of what it did.
fn forest() -> (Game, Rc<RefCell<Vec<String>>>) {
    let g = game(&seed_scene());
    let did = Rc::new(RefCell::new(Vec::new()));
    let log = did.clone();
    let _sub = g
        .streaming()
        .unwrap()
        .on_chunk_with(Box::new(move |ctx, c, loaded| {
            let id = format!("tree{}_{}", c.x, c.z);
            let result = if loaded {
                let e = Entity {
                    id: EntityId::new(&id),
                    tags: ["streamable"].into(),
                    position: Position::new((c.x * 32 + 16) as f64, (c.z * 32 + 16) as f64),
                    rides: None,
                    data: None,
                };
                ctx.world().spawn(e)
            } else {
                ctx.world().despawn(&EntityId::new(&id)).map(drop)
            };
            log.borrow_mut()
                .push(format!("{} {id} {loaded} {result:?}", ctx.tick()));
        }));
    (g, did)
}

#[test]
fn on_chunk_callbacks_act_on_the_world_deterministically() {
    let drive: Vec<Value> = (1..20)
        .map(
            |t| json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": 8 + 25 * t, "z": 8}}),
        )
        .collect();
    let (mut a, did_a) = forest();
    run(&mut a, &drive, 20);
    let trees: Vec<String> = a
        .engine()
        .world()
        .iter()
        .filter(|e| e.id.as_str().starts_with("tree"))
        .map(|e| e.id.as_str().to_owned())
        .collect();
    let mut expected: Vec<String> = a
        .streaming()
        .unwrap()
        .loaded()
        .iter()
        .map(|c| format!("tree{}_{}", c.x, c.z))
        .collect();
    let mut sorted = trees.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(
        sorted, expected,
        "a tree in every loaded chunk, none elsewhere"
    );
    assert!(
        a.state().dormant.is_empty(),
        "every tree stands in a loaded chunk"
    );
    assert!(
        did_a.borrow().iter().all(|l| l.ends_with("Ok(())")),
        "{:?}",
        did_a.borrow()
    );
    let (mut b, did_b) = forest();
    run(&mut b, &drive, 20);
    assert_eq!(*did_a.borrow(), *did_b.borrow());
    assert_eq!(event_lines(&a), event_lines(&b));
    assert_eq!(a.state(), b.state());
}
