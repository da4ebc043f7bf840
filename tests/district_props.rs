//! docs/reference/district.md, `world.district`, as a property: random walks of the hero, moves
//! (into loaded and unloaded chunks), tags, `set`s, despawns, and saves loaded into a fresh game
//! keep every district entity exactly once, live or stored, with its last state. The expectation is
//! a model of its own (each entity's last position, tags and data, or gone), never the product's.

use std::collections::BTreeSet;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;

/// District entities: three in each of 6 × 2 chunks.
const ENTITIES: usize = 36;

/// One entity's last state in the model: position (whole metres), tags, data.
#[derive(Debug, Clone, PartialEq)]
struct Last {
    x: i64,
    z: i64,
    tags: BTreeSet<String>,
    data: Option<Value>,
}

fn initial() -> Vec<Option<Last>> {
    (0..ENTITIES)
        .map(|i| {
            let chunk = (i / 3) as i64;
            Some(Last {
                x: (chunk % 6) * 32 + 2 + (i % 3) as i64 * 9,
                z: (chunk / 6) * 32 + 5,
                tags: BTreeSet::from(["crate".to_string()]),
                data: (i % 4 == 0).then(|| json!({ "n": i })),
            })
        })
        .collect()
}

fn id(i: usize) -> String {
    format!("e{i}")
}

fn write_world(dir: &Path) -> String {
    let lines: Vec<String> = initial()
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let e = e.unwrap();
            let mut v = json!({ "id": id(i), "tags": e.tags, "position": { "x": e.x, "z": e.z } });
            if let Some(d) = e.data {
                v["data"] = d;
            }
            v.to_string()
        })
        .collect();
    std::fs::write(dir.join("d.jsonl"), lines.join("\n") + "\n").unwrap();
    json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 400 } },
            { "id": "world.district", "config": { "districts": ["d.jsonl"] } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ],
        "control": "hero"
    })
    .to_string()
}

fn start(dir: &Path, scene: &str) -> Game {
    Game::from_scene_text(scene, "scene.json", dir, &builtin_catalog()).unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    /// The hero to chunk column `c` (row 0).
    Walk(i64),
    /// Entity `k` to `(x, z)` (anywhere in 0..256 × 0..96: loaded or not).
    Move(usize, i64, i64),
    Tag(usize, u8),
    Untag(usize, u8),
    Set(usize, Option<u8>),
    Despawn(usize),
    /// Save, then go on in a fresh game that loads the save.
    SaveLoad,
    Tick,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..ENTITIES;
    prop_oneof![
        3 => (0i64..9).prop_map(Op::Walk),
        3 => (k.clone(), 0i64..256, 0i64..96).prop_map(|(k, x, z)| Op::Move(k, x, z)),
        2 => (k.clone(), 0u8..3).prop_map(|(k, t)| Op::Tag(k, t)),
        1 => (k.clone(), 0u8..3).prop_map(|(k, t)| Op::Untag(k, t)),
        2 => (k.clone(), proptest::option::of(0u8..5)).prop_map(|(k, v)| Op::Set(k, v)),
        1 => k.prop_map(Op::Despawn),
        1 => Just(Op::SaveLoad),
        2 => Just(Op::Tick),
    ]
}

fn apply(game: &mut Game, line: Value) {
    let input = world_streaming::files::inputs::parse_line(&line.to_string()).unwrap();
    game.apply(&input)
        .unwrap_or_else(|e| panic!("{line} refused: {e}"));
}

/// Every model entity exactly once: live with its last state, or stored (counted); the
/// despawned nowhere.
fn check(game: &Game, model: &[Option<Last>], all_live: bool) -> Result<(), TestCaseError> {
    let world = game.engine().world();
    let mut live = 0u64;
    for (i, m) in model.iter().enumerate() {
        let e = world.get(&EntityId::new(&id(i)));
        match (m, e) {
            (None, Some(_)) => return Err(TestCaseError::fail(format!("{} is back", id(i)))),
            (None, None) => {}
            (Some(_), None) => {
                prop_assert!(!all_live, "{} is not live with everything loaded", id(i));
            }
            (Some(m), Some(e)) => {
                live += 1;
                let tags: BTreeSet<String> = e
                    .tags
                    .iter()
                    .filter(|t| *t != "dormant")
                    .map(str::to_string)
                    .collect();
                let got = Last {
                    x: e.position.x as i64,
                    z: e.position.z as i64,
                    tags,
                    data: e.data.as_ref().map(|d| json!(d)),
                };
                prop_assert_eq!(&got, m, "{}", id(i));
            }
        }
    }
    let alive = model.iter().filter(|m| m.is_some()).count() as u64;
    let d = game.state().district.unwrap();
    prop_assert_eq!(d.live, live, "live count");
    prop_assert_eq!(
        d.stored,
        alive - live,
        "stored count: every other entity stored once"
    );
    prop_assert_eq!(world.len() as u64, live + 1, "only the hero besides");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_entity_stays_exactly_once_with_its_last_state(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let scene = write_world(dir.path());
        let mut game = start(dir.path(), &scene);
        let mut model = initial();
        let save = dir.path().join("save.json");
        game.tick();
        for op in ops {
            let tick = game.engine().tick_count();
            let live = |game: &Game, k: usize| game.engine().world().get(&EntityId::new(&id(k))).is_some();
            match op {
                Op::Walk(c) => apply(&mut game, json!({ "tick": tick, "do": "move", "entity": "hero", "to": { "x": c * 32 + 16, "z": 16 } })),
                Op::Move(k, x, z) if live(&game, k) => {
                    apply(&mut game, json!({ "tick": tick, "do": "move", "entity": id(k), "to": { "x": x, "z": z } }));
                    let m = model[k].as_mut().unwrap();
                    (m.x, m.z) = (x, z);
                }
                Op::Tag(k, t) if live(&game, k) => {
                    apply(&mut game, json!({ "tick": tick, "do": "tag", "entity": id(k), "tag": format!("t{t}") }));
                    model[k].as_mut().unwrap().tags.insert(format!("t{t}"));
                }
                Op::Untag(k, t) if live(&game, k) => {
                    apply(&mut game, json!({ "tick": tick, "do": "untag", "entity": id(k), "tag": format!("t{t}") }));
                    model[k].as_mut().unwrap().tags.remove(&format!("t{t}"));
                }
                Op::Set(k, v) if live(&game, k) => {
                    let data = v.map(|v| json!({ "v": v }));
                    game.set_data(&id(k), data.as_ref().and_then(|d| d.as_object().cloned())).unwrap();
                    model[k].as_mut().unwrap().data = data;
                }
                Op::Despawn(k) if live(&game, k) => {
                    apply(&mut game, json!({ "tick": tick, "do": "despawn", "entity": id(k) }));
                    model[k] = None;
                }
                Op::SaveLoad => {
                    game.save(&save).unwrap();
                    let mut fresh = start(dir.path(), &scene);
                    fresh.load(&save).unwrap();
                    game = fresh;
                    check(&game, &model, false)?;
                }
                Op::Tick => {}
                _ => continue, // an entity that is not live now: nothing to do to it
            }
            game.tick();
            check(&game, &model, false)?;
        }
        // Everything in reach: every entity the model keeps is live, as it was left.
        game.set_radius(10).unwrap();
        game.tick();
        game.tick();
        check(&game, &model, true)?;
    }
}
