//! docs/reference/district.md, `world.district`: one test per rule. Each builds a world in a
//! temporary directory (a scene file and its district files) and drives it through the `Game` API
//! or the CLI.

mod common;

use std::path::Path;

use common::{bin, event_lines, events_named, run};
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;

/// A district line: `id` at `(x, z)` with `tags` and optional `data`.
fn line(id: &str, x: f64, z: f64, tags: &[&str], data: Option<Value>) -> String {
    let mut v = json!({ "id": id, "tags": tags, "position": { "x": x, "z": z } });
    if let Some(d) = data {
        v["data"] = d;
    }
    v.to_string()
}

/// The crates of the standard district: two in chunk (0,0), one in (1,0), one far away in (9,0).
fn crates() -> Vec<String> {
    vec![
        line("c1", 5.0, 5.0, &["crate"], None),
        line("c2", 40.0, 5.0, &["crate"], Some(json!({ "hp": 3 }))),
        line("c3", 6.0, 6.0, &["crate"], None),
        line("far", 300.0, 5.0, &["crate"], None),
    ]
}

/// A scene with a hero at (16, 16), radius 1, 9 loads a tick, and `districts` (file → lines).
fn world(dir: &Path, files: &[(&str, Vec<String>)], extra: Value) -> Value {
    let mut entries = Vec::new();
    for (name, lines) in files {
        std::fs::write(dir.join(name), lines.join("\n") + "\n").unwrap();
        entries.push(json!(name));
    }
    let mut scene = json!({
        "kits": [
            { "id": "game.engine" },
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9 } },
            { "id": "world.district", "config": { "districts": entries } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ],
        "control": "hero"
    });
    if let Value::Object(m) = extra {
        for (k, v) in m {
            scene[k] = v;
        }
    }
    std::fs::write(
        dir.join("scene.json"),
        serde_json::to_string_pretty(&scene).unwrap(),
    )
    .unwrap();
    scene
}

fn start(dir: &Path, scene: &Value) -> Game {
    Game::from_scene_text(&scene.to_string(), "scene.json", dir, &builtin_catalog())
        .unwrap_or_else(|e| panic!("scene refused: {e}"))
}

fn standard() -> (tempfile::TempDir, Game) {
    let dir = tempfile::tempdir().unwrap();
    let scene = world(dir.path(), &[("d.jsonl", crates())], json!({}));
    let game = start(dir.path(), &scene);
    (dir, game)
}

fn has(game: &Game, id: &str) -> bool {
    game.engine().world().get(&EntityId::new(id)).is_some()
}

fn counts(game: &Game) -> (u64, u64) {
    let d = game.state().district.expect("the kit is enabled");
    (d.live, d.stored)
}

fn go(x: f64) -> Value {
    json!({ "tick": 0, "do": "move", "entity": "hero", "to": { "x": x, "z": 16 } })
}

fn at(tick: u64, mut v: Value) -> Value {
    v["tick"] = json!(tick);
    v
}

#[test]
fn nothing_is_resident_at_start() {
    let (_dir, game) = standard();
    assert_eq!(game.engine().world().len(), 1, "only the scene's hero");
    assert_eq!(counts(&game), (0, 4));
}

#[test]
fn a_chunk_s_entities_are_spawned_before_it_is_announced_in_file_order() {
    let (_dir, mut game) = standard();
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let s = seen.clone();
    let _sub = game
        .streaming()
        .unwrap()
        .on_chunk_with(Box::new(move |ctx, chunk, loaded| {
            if loaded && chunk.x == 0 && chunk.z == 0 {
                s.borrow_mut()
                    .push(ctx.world().get(&EntityId::new("c1")).is_some());
            }
        }));
    run(&mut game, &[], 1);
    assert_eq!(
        *seen.borrow(),
        vec![true],
        "onChunk sees the chunk's entities"
    );
    let log = event_lines(&game);
    let m = log
        .iter()
        .position(|l| l.contains("world.district.materialised") && l.contains("\"x\":0,\"z\":0"))
        .expect("materialised (0,0)");
    let loaded = log
        .iter()
        .position(|l| l.contains("world.chunk.loaded") && l.contains("\"x\":0,\"z\":0"))
        .unwrap();
    assert!(
        m < loaded,
        "materialised before world.chunk.loaded: {log:#?}"
    );
    assert!(log[m].contains("\"count\":2"));
    let order: Vec<&str> = game
        .engine()
        .world()
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    let c1 = order.iter().position(|i| *i == "c1").unwrap();
    let c3 = order.iter().position(|i| *i == "c3").unwrap();
    assert!(c1 < c3, "district file order: {order:?}");
    assert!(!has(&game, "far"));
    assert_eq!(counts(&game), (3, 1));
}

#[test]
fn a_released_chunk_s_entities_are_stored_after_it_is_announced() {
    let (_dir, mut game) = standard();
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let s = seen.clone();
    let _sub = game
        .streaming()
        .unwrap()
        .on_chunk_with(Box::new(move |ctx, chunk, loaded| {
            if !loaded && chunk.x == 0 && chunk.z == 0 {
                s.borrow_mut()
                    .push(ctx.world().get(&EntityId::new("c1")).is_some());
            }
        }));
    run(&mut game, &[at(2, go(200.0))], 3);
    assert_eq!(*seen.borrow(), vec![true], "onChunk(false) still sees them");
    assert!(!has(&game, "c1") && !has(&game, "c2"));
    let log = event_lines(&game);
    let u = log
        .iter()
        .position(|l| l.contains("world.chunk.unloaded") && l.contains("\"x\":0,\"z\":0"))
        .unwrap();
    let s = log
        .iter()
        .position(|l| l.contains("world.district.stored") && l.contains("\"x\":0,\"z\":0"))
        .expect("stored (0,0)");
    assert!(u < s, "stored after world.chunk.unloaded");
    assert!(log[s].contains("\"count\":2"));
}

#[test]
fn a_stored_entity_comes_back_as_it_was_left() {
    let (_dir, mut game) = standard();
    run(
        &mut game,
        &[
            json!({ "tick": 2, "do": "move", "entity": "c1", "to": { "x": 7, "z": 9 } }),
            json!({ "tick": 2, "do": "tag", "entity": "c1", "tag": "opened" }),
            json!({ "tick": 2, "do": "set", "entity": "c1", "data": { "loot": ["gold"] } }),
            at(3, go(200.0)),
            at(5, go(16.0)),
        ],
        6,
    );
    let e = game
        .engine()
        .world()
        .get(&EntityId::new("c1"))
        .expect("back");
    assert_eq!((e.position.x, e.position.z), (7.0, 9.0));
    assert!(e.has_tag("opened"));
    assert_eq!(json!(e.data), json!({ "loot": ["gold"] }));
    let c2 = game.engine().world().get(&EntityId::new("c2")).unwrap();
    assert_eq!(json!(c2.data), json!({ "hp": 3 }), "a district line's data");
}

#[test]
fn anchors_the_controlled_entity_its_vehicle_and_persistent_ones_are_never_stored() {
    let dir = tempfile::tempdir().unwrap();
    let lines = vec![
        line("boat", 20.0, 20.0, &["vehicle"], None),
        line("lamp", 8.0, 8.0, &["persistent"], None),
        line("buddy", 9.0, 9.0, &["player"], None),
        line("c1", 5.0, 5.0, &[], None),
    ];
    let scene = world(dir.path(), &[("d.jsonl", lines)], json!({}));
    let mut game = start(dir.path(), &scene);
    run(
        &mut game,
        &[
            json!({ "tick": 2, "do": "ride", "entity": "hero", "vehicle": "boat" }),
            json!({ "tick": 2, "do": "move", "entity": "boat", "to": { "x": 400, "z": 16 } }),
            json!({ "tick": 2, "do": "move", "entity": "hero", "to": { "x": 400, "z": 16 } }),
        ],
        4,
    );
    for id in ["hero", "boat", "lamp", "buddy"] {
        assert!(has(&game, id), "{id} stays live");
    }
    assert!(!has(&game, "c1"), "a plain district entity is stored");
}

#[test]
fn an_entity_tagged_streamed_is_stored_with_its_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let scene = world(
        dir.path(),
        &[("d.jsonl", crates())],
        json!({ "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } },
            { "id": "barrel", "tags": ["streamed"], "position": { "x": 10, "z": 10 } },
            { "id": "rock", "position": { "x": 11, "z": 10 } }
        ] }),
    );
    let mut game = start(dir.path(), &scene);
    run(&mut game, &[at(2, go(200.0))], 3);
    assert!(!has(&game, "barrel"), "stored");
    assert!(
        has(&game, "rock"),
        "an entity neither district nor streamed stays"
    );
    run(&mut game, &[at(4, go(16.0))], 5);
    assert!(has(&game, "barrel"), "materialised again");
}

#[test]
fn a_streamed_entity_moved_into_an_unloaded_chunk_is_stored_at_the_end_of_the_tick() {
    let (_dir, mut game) = standard();
    run(
        &mut game,
        &[json!({ "tick": 2, "do": "move", "entity": "c1", "to": { "x": 500, "z": 5 } })],
        2,
    );
    assert!(!has(&game, "c1"));
    let stored = events_named(&game, "world.district.stored");
    assert_eq!(stored, vec![(2, json!({ "x": 15, "z": 0, "count": 1 }))]);
    // It comes back where it was left, once that chunk loads.
    run(&mut game, &[at(3, go(490.0))], 4);
    let e = game
        .engine()
        .world()
        .get(&EntityId::new("c1"))
        .expect("back");
    assert_eq!(e.position.x, 500.0);
}

/// A stored entity of no district line (here a spawned `streamed` one) keeps its id: another
/// entity may not take it while it is stored (it would be lost when its chunk loads, and a save
/// would hold the id twice), and it may once the entity is live again and gone.
#[test]
fn the_id_of_a_stored_spawned_entity_may_not_be_spawned_while_it_is_stored() {
    let (_dir, mut game) = standard();
    let spawn = |x: f64| json!({ "tick": 0, "do": "spawn", "entity": { "id": "box", "tags": ["streamed"], "position": { "x": x, "z": 5 } } });
    run(&mut game, &[at(2, spawn(500.0))], 2);
    assert!(!has(&game, "box"), "stored at the end of its tick");
    let e = game
        .run(&common::inputs(&[at(3, spawn(5.0))]), 3)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 1") && e.contains("may not be spawned"),
        "{e}"
    );
    // Back live (its chunk loads), then despawned: the id is free again.
    run(&mut game, &[at(4, go(490.0))], 5);
    assert!(has(&game, "box"));
    run(
        &mut game,
        &[
            json!({ "tick": 6, "do": "despawn", "entity": "box" }),
            at(7, spawn(495.0)),
        ],
        7,
    );
    assert!(has(&game, "box"));
}

#[test]
fn a_despawned_district_entity_is_gone_for_good() {
    let (dir, mut game) = standard();
    run(
        &mut game,
        &[
            json!({ "tick": 2, "do": "despawn", "entity": "c1" }),
            at(3, go(200.0)),
            at(5, go(16.0)),
        ],
        6,
    );
    assert!(!has(&game, "c1"), "not materialised again");
    assert!(has(&game, "c3"));
    let inputs = world_streaming::files::inputs::Inputs::parse(
        "{\"tick\": 7, \"do\": \"spawn\", \"entity\": {\"id\": \"c1\", \"position\": {\"x\": 0, \"z\": 0}}}\n",
        "in.jsonl",
    )
    .unwrap();
    let e = game.run(&inputs, 7).unwrap_err().to_string();
    assert!(e.contains("line 1") && e.contains("district entity"), "{e}");
    // A district id not yet live may not be spawned either.
    let e = game
        .apply(&world_streaming::files::inputs::InputLine {
            tick: 7,
            action: world_streaming::files::inputs::Action::Spawn {
                entity: serde_json::from_value(
                    json!({ "id": "far", "position": { "x": 0, "z": 0 } }),
                )
                .unwrap(),
            },
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("district entity"), "{e}");
    drop(dir);
}

#[test]
fn only_differences_are_kept() {
    let (dir, mut game) = standard();
    // Out and back unchanged: nothing kept.
    run(
        &mut game,
        &[at(2, go(200.0)), at(4, go(16.0)), at(6, go(200.0))],
        7,
    );
    let save = dir.path().join("s.json");
    game.save(&save).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(doc["version"], 3);
    assert_eq!(
        doc["kits"]["world.district"]["records"],
        json!([]),
        "{doc:#}"
    );
    // One change: the chunk it lives in is kept, with the others as line references.
    run(
        &mut game,
        &[
            at(8, go(16.0)),
            json!({ "tick": 10, "do": "set", "entity": "c3", "data": { "x": 1 } }),
            at(11, go(200.0)),
        ],
        12,
    );
    game.save(&save).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let records = &doc["kits"]["world.district"]["records"];
    assert_eq!(records.as_array().unwrap().len(), 1, "{records:#}");
    assert_eq!(records[0]["x"], 0);
    let entities = records[0]["entities"].as_array().unwrap();
    assert!(entities[0].is_u64(), "c1 unchanged: a line reference");
    assert_eq!(entities[1]["entity"]["id"], "c3");
}

#[test]
fn a_district_file_changed_under_kept_differences_is_an_error_naming_it() {
    let (dir, mut game) = standard();
    run(
        &mut game,
        &[
            json!({ "tick": 2, "do": "set", "entity": "c1", "data": { "x": 1 } }),
            at(3, go(200.0)),
        ],
        4,
    );
    let save = dir.path().join("s.json");
    game.save(&save).unwrap();
    let mut lines = crates();
    lines.push(line("new", 1.0, 1.0, &[], None));
    let scene = world(dir.path(), &[("d.jsonl", lines)], json!({}));
    let mut fresh = start(dir.path(), &scene);
    let e = fresh.load(&save).unwrap_err().to_string();
    assert!(e.contains("d.jsonl") && e.contains("changed"), "{e}");
}

#[test]
fn the_state_and_the_variables_count_live_and_stored_entities() {
    let (_dir, mut game) = standard();
    run(&mut game, &[], 1);
    let state = serde_json::to_value(game.state()).unwrap();
    assert_eq!(state["district"], json!({ "live": 3, "stored": 1 }));
    assert_eq!(state["variables"]["world.district.live"], 3);
    assert_eq!(state["variables"]["world.district.stored"], 1);
}

#[test]
fn without_the_kit_the_state_has_no_district_key() {
    let scene = json!({
        "kits": common::kits(json!({})),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    });
    let game = common::game(&scene);
    let state = serde_json::to_value(game.state()).unwrap();
    assert!(state.get("district").is_none());
}

#[test]
fn each_scene_streams_its_own_districts_and_leaving_stores() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.jsonl"),
        line("a1", 5.0, 5.0, &[], None) + "\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.jsonl"),
        line("b1", 5.0, 5.0, &[], None) + "\n",
    )
    .unwrap();
    let scene = json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9 } },
            { "id": "world.district", "config": { "districts": ["a.jsonl", { "scene": "b", "file": "b.jsonl" }] } }
        ],
        "scenes": [ { "id": "a", "entry": { "x": 16, "z": 16 } }, { "id": "b", "entry": { "x": 16, "z": 16 } } ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    });
    let mut game = start(dir.path(), &scene);
    run(&mut game, &[], 1);
    assert!(has(&game, "a1") && !has(&game, "b1"));
    run(
        &mut game,
        &[json!({ "tick": 2, "do": "enter", "scene": "b" })],
        2,
    );
    assert!(!has(&game, "a1"), "leaving a stores its entities");
    assert!(has(&game, "b1"), "b streams its own");
    assert_eq!(events_named(&game, "world.district.stored")[0].0, 2);

    // A district entity kept live across a scene change (`persistent`), then stored unchanged
    // at its home under the other scene: stored as its line in that scene's record. A save of
    // that loads and goes on as the run did (an audit of the save check found it refused).
    let mut game = start(dir.path(), &scene);
    let save = dir.path().join("s.json");
    let script = [
        json!({ "tick": 2, "do": "tag", "entity": "a1", "tag": "persistent" }),
        json!({ "tick": 3, "do": "enter", "scene": "b" }),
        json!({ "tick": 4, "do": "untag", "entity": "a1", "tag": "persistent" }),
        json!({ "tick": 6, "do": "enter", "scene": "a" }),
        json!({ "tick": 8, "do": "save", "path": save.display().to_string() }),
        json!({ "tick": 9, "do": "enter", "scene": "b" }),
    ];
    run(&mut game, &script, 10);
    let mut fresh = start(dir.path(), &scene);
    fresh.load(&save).unwrap();
    run(&mut fresh, &script[5..], 10);
    assert_eq!(
        serde_json::to_value(fresh.state()).unwrap(),
        serde_json::to_value(game.state()).unwrap()
    );
    assert!(has(&game, "a1"), "a1 comes back in b, where it was stored");
}

#[test]
fn a_save_loaded_in_a_fresh_game_continues_exactly() {
    let script = |dir: &Path| {
        vec![
            json!({ "tick": 2, "do": "move", "entity": "c1", "to": { "x": 500, "z": 5 } }),
            json!({ "tick": 3, "do": "set", "entity": "c2", "data": { "hp": 1 } }),
            at(4, go(200.0)),
            json!({ "tick": 6, "do": "save", "path": dir.join("s.json").display().to_string() }),
            at(7, go(480.0)),
            at(10, go(16.0)),
        ]
    };
    let (dir, mut whole) = standard();
    run(&mut whole, &script(dir.path()), 12);
    let expected: Vec<String> = event_lines(&whole)
        .into_iter()
        .filter(|l| {
            !l.starts_with("{\"tick\":1,")
                && serde_json::from_str::<Value>(l).unwrap()["tick"].as_u64() > Some(6)
        })
        .collect();
    let scene: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("scene.json")).unwrap())
            .unwrap();
    let mut fresh = start(dir.path(), &scene);
    fresh.load(&dir.path().join("s.json")).unwrap();
    run(&mut fresh, &script(dir.path())[4..], 12);
    let got: Vec<String> = event_lines(&fresh)
        .into_iter()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["tick"].as_u64() > Some(6))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(got, expected);
    assert_eq!(
        serde_json::to_value(fresh.state()).unwrap(),
        serde_json::to_value(whole.state()).unwrap()
    );
    let c2 = fresh.engine().world().get(&EntityId::new("c2")).unwrap();
    assert_eq!(json!(c2.data), json!({ "hp": 1 }));
}

#[test]
fn the_same_run_twice_gives_the_same_event_log() {
    let script = [
        json!({ "tick": 2, "do": "move", "entity": "c1", "to": { "x": 500, "z": 5 } }),
        at(3, go(200.0)),
        at(5, go(480.0)),
        at(8, go(16.0)),
    ];
    let (_a, mut one) = standard();
    let (_b, mut two) = standard();
    run(&mut one, &script, 10);
    run(&mut two, &script, 10);
    assert!(event_lines(&one)
        .iter()
        .any(|l| l.contains("world.district.stored")));
    assert_eq!(event_lines(&one), event_lines(&two));
}

#[test]
fn a_set_naming_an_entity_that_is_not_live_stops_the_run_naming_the_line() {
    let (_dir, mut game) = standard();
    let inputs = world_streaming::files::inputs::Inputs::parse(
        "{\"tick\": 1, \"do\": \"set\", \"entity\": \"far\", \"data\": {}}\n",
        "in.jsonl",
    )
    .unwrap();
    let e = game.run(&inputs, 2).unwrap_err().to_string();
    assert!(e.contains("in.jsonl: line 1") && e.contains("far"), "{e}");
}

/// Runs the CLI on a scene in `dir`; returns (exit code, stderr).
fn cli_run(dir: &Path) -> (i32, String) {
    let out = bin()
        .current_dir(dir)
        .args(["run", "scene.json", "--ticks", "1", "--events", "-"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_district_files_are_errors_at_start_naming_file_and_line() {
    let cases: Vec<(Vec<String>, Value, &str)> = vec![
        (
            vec![line("ok", 1.0, 1.0, &[], None), "{\"id\": \"x\"}".into()],
            json!({}),
            "d.jsonl: line 2",
        ),
        (
            vec![line("ok", 1.0, 1.0, &[], None), "not json".into()],
            json!({}),
            "d.jsonl: line 2",
        ),
        (
            vec![line(
                "a",
                1.0,
                1.0,
                &[],
                Some(json!({ "s": "x".repeat(5000) })),
            )],
            json!({}),
            "d.jsonl: line 1: data",
        ),
        (
            vec![
                line("a", 1.0, 1.0, &[], None),
                line("a", 2.0, 1.0, &[], None),
            ],
            json!({}),
            "d.jsonl: line 2: duplicate entity id",
        ),
        (
            vec![line("hero", 1.0, 1.0, &[], None)],
            json!({}),
            "d.jsonl line 1",
        ),
        // docs/reference/engine.md#rides: `rides` never forms a loop; the line that closes one is
        // named.
        (
            vec![
                r#"{"id": "a", "position": {"x": 1, "z": 1}, "rides": "b"}"#.into(),
                r#"{"id": "c", "position": {"x": 1, "z": 1}, "rides": "hero"}"#.into(),
                r#"{"id": "b", "position": {"x": 1, "z": 1}, "rides": "a"}"#.into(),
            ],
            json!({}),
            "d.jsonl: line 3: `b` riding `a` would close a loop of rides",
        ),
        (
            vec![r#"{"id": "a", "position": {"x": 1, "z": 1}, "rides": "a"}"#.into()],
            json!({}),
            "d.jsonl: line 1: `a` riding `a` would close a loop of rides",
        ),
    ];
    for (lines, extra, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        world(dir.path(), &[("d.jsonl", lines)], extra);
        let (code, err) = cli_run(dir.path());
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(expected), "expected {expected:?} in {err}");
    }
    // Chains that end (on a scene entity, a line, or an id no one has) are not loops.
    let dir = tempfile::tempdir().unwrap();
    let chain = vec![
        r#"{"id": "a", "position": {"x": 1, "z": 1}, "rides": "b"}"#.to_owned(),
        r#"{"id": "b", "position": {"x": 1, "z": 1}, "rides": "hero"}"#.to_owned(),
        r#"{"id": "c", "position": {"x": 1, "z": 1}, "rides": "nobody"}"#.to_owned(),
    ];
    world(dir.path(), &[("d.jsonl", chain)], json!({}));
    let (code, err) = cli_run(dir.path());
    assert_eq!(code, 0, "{err}");
    // docs/reference/files-and-cli.md#check: every error found, in file and line order, each file
    // and line named.
    let dir = tempfile::tempdir().unwrap();
    let bad = vec![
        line("a", 1.0, 1.0, &[], None),
        line("a", 2.0, 1.0, &[], None),
        "not json".to_owned(),
    ];
    let mut scene = world(dir.path(), &[("bad.jsonl", bad)], json!({}));
    scene["kits"][3]["config"]["districts"] = json!(["bad.jsonl", "missing.jsonl"]);
    std::fs::write(dir.path().join("scene.json"), scene.to_string()).unwrap();
    for args in [
        &["check", "scene.json"][..],
        &["run", "scene.json", "--ticks", "1"],
    ] {
        let out = bin().current_dir(dir.path()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let told: Vec<&str> = err
            .split_once("3 errors in the district files: ")
            .map(|(_, list)| list.trim_end().split("; ").collect())
            .unwrap_or_default();
        assert_eq!(told.len(), 3, "{err}");
        assert!(
            told[0].starts_with("bad.jsonl: line 2: duplicate entity id \"a\""),
            "{err}"
        );
        assert!(told[1].starts_with("bad.jsonl: line 3: "), "{err}");
        assert!(told[2].contains("missing.jsonl"), "{err}");
    }
    // A `{scene, file}` entry is read strictly: a misspelt or missing key is named.
    for (entry, expected) in [
        (
            json!({ "scene": "main", "file": "d.jsonl", "worldDir": "w" }),
            "kits[3].config.districts[0].worldDir: unknown field `worldDir`",
        ),
        (
            json!({ "scene": "main" }),
            "kits[3].config.districts[0].file: missing field",
        ),
        (
            json!(5),
            "kits[3].config.districts[0]: expected a district file path, or {\"scene\": id, \"file\": path}, got 5",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut scene = world(dir.path(), &[("d.jsonl", crates())], json!({}));
        scene["kits"][3]["config"]["districts"] = json!([entry]);
        std::fs::write(dir.path().join("scene.json"), scene.to_string()).unwrap();
        let (code, err) = cli_run(dir.path());
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(expected), "expected {expected:?} in {err}");
    }
    // A missing file.
    let dir = tempfile::tempdir().unwrap();
    world(dir.path(), &[], json!({}));
    let mut scene: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("scene.json")).unwrap())
            .unwrap();
    scene["kits"][3]["config"]["districts"] = json!(["missing.jsonl"]);
    std::fs::write(dir.path().join("scene.json"), scene.to_string()).unwrap();
    let (code, err) = cli_run(dir.path());
    assert_eq!(code, 1);
    assert!(err.contains("missing.jsonl"), "{err}");
    // A directory where a file should be.
    std::fs::create_dir(dir.path().join("missing.jsonl")).unwrap();
    let (code, err) = cli_run(dir.path());
    assert_eq!(code, 1);
    assert!(err.contains("regular file"), "{err}");
    // A FIFO: refused at once, never opened for a read that would wait for a writer.
    std::fs::remove_dir(dir.path().join("missing.jsonl")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("missing.jsonl"))
        .status()
        .unwrap();
    assert!(made.success());
    let out = bin()
        .current_dir(dir.path())
        .args(["run", "scene.json", "--ticks", "1"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("expected a regular file, found a FIFO"),
        "{err}"
    );
}

#[test]
fn data_over_4_kib_is_refused_in_a_scene_and_in_a_set() {
    let dir = tempfile::tempdir().unwrap();
    world(
        dir.path(),
        &[("d.jsonl", crates())],
        json!({ "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "data": { "s": "x".repeat(5000) } } ] }),
    );
    let (code, err) = cli_run(dir.path());
    assert_eq!(code, 1);
    assert!(err.contains("entities[0].data"), "{err}");
    let e = world_streaming::files::inputs::Inputs::parse(
        &format!(
            "{{\"tick\": 1, \"do\": \"set\", \"entity\": \"c1\", \"data\": {{\"s\": \"{}\"}}}}\n",
            "x".repeat(5000)
        ),
        "in.jsonl",
    )
    .unwrap_err();
    let e = format!("{e:?}");
    assert!(e.contains("line: 1") || e.contains("line 1"), "{e}");
    assert!(e.contains("data"), "{e}");
}

#[test]
fn a_lua_mod_reads_and_sets_an_entity_s_data() {
    let (_dir, mut game) = standard();
    game.add_mod(
        "keeper.lua",
        r#"
streaming.onChunk(function(c, loaded)
  if loaded and c.x == 1 and c.z == 0 then
    local d = district.data("c2")
    district.set("c2", { hp = d.hp - 1, tags = {"a", "b"} })
    log("live " .. district.live())
  end
end)
"#,
    )
    .unwrap();
    run(&mut game, &[], 1);
    let c2 = game.engine().world().get(&EntityId::new("c2")).unwrap();
    assert_eq!(json!(c2.data), json!({ "hp": 2, "tags": ["a", "b"] }));
    let log: Vec<String> = game
        .take_mod_log()
        .iter()
        .map(|l| format!("{l:?}"))
        .collect();
    assert!(log.iter().any(|l| l.contains("live")), "{log:?}");
}

/// `run --record` of the town example (district files) in `dir`: the recording's JSON.
fn town_recording(dir: &Path) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let out = bin()
        .current_dir(dir)
        .args([
            "run",
            root.join("town.json").to_str().unwrap(),
            "--ticks",
            "8",
        ])
        .args(["--inputs", root.join("town.inputs.jsonl").to_str().unwrap()])
        .args(["--record", "t.replay.json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(dir.join("t.replay.json")).unwrap()).unwrap()
}

/// `world-streaming replay` of `recording` (written to `dir`): exit code and stderr + stdout.
fn replay(dir: &Path, recording: &Value) -> (Option<i32>, String) {
    let file = dir.join("r.replay.json");
    std::fs::write(&file, recording.to_string()).unwrap();
    let out = bin().arg("replay").arg(&file).output().unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ),
    )
}

/// Sets the embedded text of district 0 and its stamp (as a consistent forger would).
fn forge(recording: &mut Value, text: String) {
    let d = &mut recording["districts"][0];
    d["length"] = json!(text.len());
    d["hash"] = json!(format!(
        "{:016x}",
        world_streaming::replay::fnv1a64(text.as_bytes())
    ));
    d["text"] = json!(text);
}

/// A recording carries the district files (their text and stamp, in config order): a district
/// scene records and replays, from the embedded text alone.
#[test]
fn a_recording_carries_the_district_files_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let rec = town_recording(dir.path());
    let districts = rec["districts"].as_array().unwrap();
    assert_eq!(districts.len(), 1);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let text = std::fs::read_to_string(root.join("town.district.jsonl")).unwrap();
    assert_eq!(districts[0]["file"], "town.district.jsonl");
    assert_eq!(districts[0]["text"], json!(text));
    assert_eq!(districts[0]["length"], json!(text.len()));
    // The run materialised district entities, so the steps depend on the text.
    let steps = rec["steps"].to_string();
    assert!(steps.contains("world.district.materialised"), "{steps}");
    let (code, out) = replay(dir.path(), &rec);
    assert_eq!(code, Some(0), "{out}");
    // The paths the recording names are never opened: pointed at a file that does not exist
    // (or at another district file), the replay still runs on the embedded text.
    let mut moved = rec.clone();
    let other = dir.path().join("other.jsonl");
    std::fs::write(
        &other,
        "{\"id\": \"x\", \"position\": {\"x\": 1, \"z\": 1}}\n",
    )
    .unwrap();
    for path in [
        json!("/nonexistent/d.jsonl"),
        json!(other.to_str().unwrap()),
    ] {
        let kits = moved["scene"]["kits"].as_array_mut().unwrap();
        let district = kits
            .iter_mut()
            .find(|k| k["id"] == "world.district")
            .unwrap();
        district["config"]["districts"] = json!([path]);
        let (code, out) = replay(dir.path(), &moved);
        assert_eq!(code, Some(0), "{path}: {out}");
    }
}

/// An embedded district text that does not match its stamp is refused before anything runs,
/// naming it; a forged stamp with a changed text is caught at the first tick whose events
/// differ; a forged text that is not district lines is refused naming its line; a recording
/// that drops a district the scene names is refused.
#[test]
fn an_altered_district_text_in_a_recording_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let rec = town_recording(dir.path());
    let text = rec["districts"][0]["text"].as_str().unwrap().to_owned();

    // The text changed, the stamp not.
    let mut tampered = rec.clone();
    tampered["districts"][0]["text"] = json!(text.replace("\"well\"", "\"wall\""));
    let (code, out) = replay(dir.path(), &tampered);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("districts[0]: the text of district file \"town.district.jsonl\" does not match its stamp"),
        "{out}"
    );
    assert!(out.contains("nothing was run"), "{out}");

    // Text and stamp forged together: the well moved to a chunk that never loads. The replay
    // runs and reports the tick whose digest differs.
    let mut forged = rec.clone();
    forge(
        &mut forged,
        text.replace("\"x\": 10, \"z\": 12", "\"x\": 1000, \"z\": 12"),
    );
    assert_ne!(
        forged["districts"][0]["text"],
        json!(text),
        "the well moved"
    );
    let (code, out) = replay(dir.path(), &forged);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("tick 1: the events differ"), "{out}");

    // Forged into something that is not a district line.
    let mut broken = rec.clone();
    forge(&mut broken, text.clone() + "{\"id\": 5}\n");
    let (code, out) = replay(dir.path(), &broken);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "districts[0].text: district file \"town.district.jsonl\" line 4: expected an entity"
        ),
        "{out}"
    );

    // Forged with a line longer than a district line may be (the kit's own line check).
    let mut long = rec.clone();
    let line = format!(
        "{{\"id\": \"long\", \"position\": {{\"x\": 1, \"z\": 1}}}}{}",
        " ".repeat(19_200)
    );
    forge(&mut long, format!("{text}{line}\n"));
    let (code, out) = replay(dir.path(), &long);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "districts[0].text: district file \"town.district.jsonl\" line 4: a line of {} \
             bytes: a district line is at most 19200 bytes",
            line.len()
        )),
        "{out}"
    );

    // The district dropped from the recording.
    let mut dropped = rec.clone();
    dropped.as_object_mut().unwrap().remove("districts");
    let (code, out) = replay(dir.path(), &dropped);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("the scene names 1 district file(s) and the recording carries 0"),
        "{out}"
    );
}

/// What a recording cannot carry is refused at record time, before anything runs: district
/// files over 16 MiB together (the cap a recording is read with), and a district `worldDir`.
#[test]
fn run_record_refuses_district_files_a_recording_cannot_carry() {
    let dir = tempfile::tempdir().unwrap();
    // Two files of 9 MiB each (one entity line, then padding blank lines).
    let big = format!(
        "{}\n{}",
        line("a", 5.0, 5.0, &[], None),
        " \n".repeat(9 * 1024 * 1024 / 2)
    );
    std::fs::write(dir.path().join("a.jsonl"), &big).unwrap();
    std::fs::write(dir.path().join("b.jsonl"), big.replace("\"a\"", "\"b\"")).unwrap();
    world(dir.path(), &[], json!({}));
    let scene_path = dir.path().join("scene.json");
    let mut scene: Value =
        serde_json::from_str(&std::fs::read_to_string(&scene_path).unwrap()).unwrap();
    scene["kits"][3]["config"]["districts"] = json!(["a.jsonl", "b.jsonl"]);
    std::fs::write(&scene_path, scene.to_string()).unwrap();
    let record = || {
        bin()
            .current_dir(dir.path())
            .args([
                "run",
                "scene.json",
                "--ticks",
                "2",
                "--record",
                "r.replay.json",
            ])
            .output()
            .unwrap()
    };
    let out = record();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("b.jsonl")
            && err.contains("the district files come to more than 16777216 bytes"),
        "{err}"
    );
    assert!(!dir.path().join("r.replay.json").exists());
    // A district worldDir other than the terrain kit's (a recording carries one world
    // directory): the record step refuses it before building the game.
    scene["kits"][3]["config"] = json!({"districts": ["a.jsonl"], "worldDir": "w"});
    scene["kits"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "world.terrain", "config": {"workers": 1, "worldDir": "t"}}));
    std::fs::write(&scene_path, scene.to_string()).unwrap();
    let err = world_streaming::replay::Recording::record(
        &scene_path,
        &world_streaming::files::inputs::Inputs::default(),
        2,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("kits: world.district names a worldDir, which a recording does not carry"),
        "{err}"
    );
}

#[test]
fn a_drive_at_radius_8_keeps_the_live_count_proportional_to_the_loaded_chunks() {
    // Four district entities in each chunk of a 30 × 30 square; the hero drives east through
    // its middle and out at radius 8, one chunk a tick, every wanted chunk loaded at once.
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for cz in 0..30i64 {
        for cx in 0..30i64 {
            for k in 0..4i64 {
                let (x, z) = (cx as f64 * 32.0 + 3.0 + k as f64, cz as f64 * 32.0 + 7.0);
                lines.push(line(&format!("e{cx}_{cz}_{k}"), x, z, &["crate"], None));
            }
        }
    }
    let scene = world(
        dir.path(),
        &[("d.jsonl", lines)],
        json!({ "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 8, "budgetMs": 400 } },
            { "id": "world.district", "config": { "districts": ["d.jsonl"] } }
        ] }),
    );
    let mut game = start(dir.path(), &scene);
    let streaming = game.streaming().unwrap();
    let hero = EntityId::new("hero");
    let mut most = 0;
    for step in 0..45 {
        let to = world_streaming::grid::Position::new(16.0 + 32.0 * f64::from(step), 15.0 * 32.0);
        game.engine_mut().world_mut().move_to(&hero, to).unwrap();
        game.tick();
        let inside = streaming
            .loaded()
            .iter()
            .filter(|c| (0..30).contains(&c.x) && (0..30).contains(&c.z))
            .count() as u64;
        let (live, stored) = counts(&game);
        assert_eq!(
            live,
            4 * inside,
            "tick {step}: 4 live entities per loaded chunk"
        );
        assert_eq!(
            live + stored,
            3600,
            "tick {step}: every entity live or stored"
        );
        assert_eq!(game.engine().world().len() as u64, live + 1);
        most = most.max(live);
    }
    // The full 17 × 17 ring (and the column kept behind it until it is released) at some point.
    assert!(most >= 4 * 17 * 17, "{most}");
    assert_eq!(counts(&game), (0, 3600), "driven out: everything stored");
}

/// A district line that could not be read when its chunk loaded (its file edited under the
/// game) is counted out of `stored`; a save made after that (the file put back) still loads.
#[test]
fn a_save_after_a_district_line_could_not_be_read_loads() {
    let dir = tempfile::tempdir().unwrap();
    let scene = world(dir.path(), &[("d.jsonl", crates())], json!({}));
    let mut game = start(dir.path(), &scene);
    run(&mut game, &[], 2);
    let text = crates().join("\n") + "\n";
    let edited = text.replace("\"far\"", "\"xar\""); // same length, another id
    std::fs::write(dir.path().join("d.jsonl"), &edited).unwrap();
    run(&mut game, &[at(3, go(300.0))], 5);
    assert!(!has(&game, "far") && !has(&game, "xar"), "not spawned");
    assert!(!events_named(&game, "world.district.error").is_empty());
    std::fs::write(dir.path().join("d.jsonl"), &text).unwrap();
    let save = dir.path().join("s.json");
    game.save(&save).unwrap();
    let state = game.state();
    game.load(&save).unwrap();
    assert_eq!(game.state(), state);
}

/// docs/reference/district.md#district-files (every id once) and
/// docs/reference/saves.md#what-a-load-checks (a corrupt save is a clear error): a district section
/// that disagrees with itself, with the district files or with the save's own world is refused,
/// naming the JSON path, and the game is unchanged.
#[test]
fn a_district_section_that_disagrees_with_its_world_is_refused() {
    let (dir, mut game) = standard();
    let save = dir.path().join("s.json");
    run(
        &mut game,
        &[
            json!({ "tick": 2, "do": "move", "entity": "c1", "to": { "x": 500, "z": 5 } }),
            json!({ "tick": 3, "do": "set", "entity": "c2", "data": { "hp": 1 } }),
            json!({ "tick": 3, "do": "despawn", "entity": "c3" }),
            at(4, go(280.0)),
            json!({ "tick": 6, "do": "save", "path": save.display().to_string() }),
        ],
        6,
    );
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let d = &good["kits"]["world.district"];
    // What the cases below change: `far` (line 3) live, c2 (line 2) and c1 (line 0) stored
    // changed in records 1 and 2, c3 (line 1) despawned, record 0 emptied.
    assert_eq!(d["live"][0]["id"], "far");
    assert_eq!(
        (d["records"][1]["x"].clone(), d["records"][2]["x"].clone()),
        (json!(1), json!(15))
    );
    assert_eq!(d["gone"], json!(["c3"]));
    assert_eq!(d["stored"], 2);
    let scene: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("scene.json")).unwrap())
            .unwrap();
    let mut fresh = start(dir.path(), &scene);
    fresh.load(&save).unwrap();
    let hero =
        json!({ "entity": { "id": "hero", "tags": [], "position": { "x": 170, "z": 170 } } });
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|v| v["stored"] = json!(77)),
            "stored: expected 2..=2 (at least the entities the records hold, at most those and the untouched district lines), got 77",
        ),
        (
            Box::new(|v| v["live"][0]["id"] = json!("c2")),
            "live[0].id: district line index 3 is entity `far`, not `c2`",
        ),
        (
            Box::new(|v| v["live"][0]["base"] = json!("0000000000000000")),
            "live[0].base: expected the hash of the entity as its line describes it",
        ),
        (
            Box::new(|v| v["live"] = json!([])),
            "live: entity `far` of the save's world is district line index 3's, and is not listed live",
        ),
        (
            Box::new(move |v| {
                v["records"].as_array_mut().unwrap().push(json!({ "scene": "main", "x": 5, "z": 5, "entities": [hero.clone()] }))
            }),
            "records[3].entities[0]: entity `hero` is held here and at the save's entities",
        ),
        (
            Box::new(|v| v["gone"] = json!(["c3", "zzz"])),
            "gone[1]: `zzz` is no district entity",
        ),
        (
            Box::new(|v| v["gone"] = json!(["c3", "far"])),
            "gone[1]: district line index 3 is held here and at live[0]",
        ),
        (
            Box::new(|v| v["gone"] = json!(["c3", "c3"])),
            "gone[1]: district line index 1 is held here and at gone[0]",
        ),
        (
            Box::new(|v| v["records"][1]["entities"][0]["line"] = json!(0)),
            "records[1].entities[0]: the entry names entity `c2` as district line index 0, which is another entity's",
        ),
        (
            Box::new(|v| v["records"][0]["entities"] = json!([3])),
            "records[0].entities[0]: the entry names district line index 3 (of chunk (9, 0)) as standing in it",
        ),
        (
            Box::new(|v| {
                let e = v["records"][1]["entities"][0].as_object_mut().unwrap();
                e.remove("line");
                e.remove("base");
            }),
            "records[1].entities[0]: the entry holds entity `c2` as no district line's, which district line index 2 is",
        ),
        (
            Box::new(|v| {
                let c1 = v["records"][2]["entities"][0].clone();
                v["records"][1]["entities"].as_array_mut().unwrap().push(c1);
            }),
            "records[2].entities[0]: district line index 0 is held here and at records[1].entities[1]",
        ),
    ];
    for (edit, expected) in cases {
        let mut bad = good.clone();
        edit(&mut bad["kits"]["world.district"]);
        let path = dir.path().join("bad.json");
        std::fs::write(&path, bad.to_string()).unwrap();
        // Checked against the district files: `check` of the save alone cannot tell.
        let err = common::refused_alike(&mut fresh, &path, common::Alone::NeedsTheGame);
        assert!(
            err.contains(&format!("kits.world.district.{expected}")),
            "expected {expected:?} in {err}"
        );
    }
}

/// A district file cut short under a running game (an editor truncating it, a copy that failed
/// half way): the chunk whose lines were read in one span used to panic ("already borrowed")
/// when the span's read failed and each line was read again. Now each line past the new end is
/// a `world.district.error` naming the file and the line, the chunk's other lines spawn, and
/// the game goes on ticking.
#[test]
fn a_district_file_cut_short_under_a_running_game_is_an_error_and_the_game_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let lines = vec![
        line("c1", 5.0, 5.0, &["crate"], None),
        line("f1", 300.0, 5.0, &["crate"], None),
        line("f2", 301.0, 5.0, &["crate"], None),
        line("f3", 302.0, 5.0, &["crate"], None),
    ];
    let scene = world(dir.path(), &[("d.jsonl", lines.clone())], json!({}));
    let mut game = start(dir.path(), &scene);
    run(&mut game, &[], 2);
    assert_eq!(counts(&game), (1, 3));
    // Cut in the middle of line 3: lines 1 and 2 are whole, 3 and 4 are gone.
    let keep = lines[0].len() + lines[1].len() + 2 + lines[2].len() / 2;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("d.jsonl"))
        .unwrap();
    f.set_len(keep as u64).unwrap();
    drop(f);
    run(&mut game, &[at(3, go(300.0))], 5);
    assert!(has(&game, "f1"), "the chunk's line before the cut spawns");
    assert!(!has(&game, "f2") && !has(&game, "f3"));
    let errors = events_named(&game, "world.district.error");
    let messages: Vec<&str> = errors
        .iter()
        .map(|(_, d)| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].contains("d.jsonl: line 3: "), "{messages:?}");
    assert!(messages[1].contains("d.jsonl: line 4: "), "{messages:?}");
    assert!(messages[0].contains("cut short"), "{messages:?}");
    assert_eq!(
        (errors[0].1["x"].clone(), errors[0].1["z"].clone()),
        (json!(9), json!(0))
    );
    // The game goes on: f1 is stored and brought back, the lines lost are counted out.
    run(&mut game, &[at(6, go(16.0)), at(9, go(300.0))], 11);
    assert!(has(&game, "f1"));
    assert_eq!(counts(&game), (1, 1), "c1 stored; f2 and f3 counted out");
}

/// The bytes this thread has read so far (`rchar` of /proc/thread-self/io).
#[cfg(target_os = "linux")]
fn bytes_read_by_this_thread() -> u64 {
    thread_io("rchar")
}

/// A counter of /proc/thread-self/io (`rchar`: bytes read; `syscr`: read calls).
#[cfg(target_os = "linux")]
fn thread_io(counter: &str) -> u64 {
    std::fs::read_to_string("/proc/thread-self/io")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(counter)?.strip_prefix(": "))
        .unwrap()
        .parse()
        .unwrap()
}

/// A district file whose size is past the 1 GiB cap (a sparse file of 2 GiB: no disk used) is
/// refused from its size, unread; it used to be read up to the cap (a gigabyte, seconds) before
/// the same refusal.
#[cfg(target_os = "linux")]
#[test]
fn a_district_file_past_the_cap_is_refused_from_its_size_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let scene = world(dir.path(), &[("d.jsonl", crates())], json!({}));
    let f = std::fs::File::create(dir.path().join("d.jsonl")).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    let before = bytes_read_by_this_thread();
    let err = Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        dir.path(),
        &builtin_catalog(),
    )
    .err()
    .expect("refused")
    .to_string();
    let read = bytes_read_by_this_thread() - before;
    assert!(
        err.ends_with(
            "d.jsonl: the file is larger than the district file limit (1073741824 bytes)"
        ),
        "{err}"
    );
    assert!(read < 1 << 20, "{read} bytes read");
}

/// Docs/district.md (One chunk's cost): a chunk's district entities are all spawned in the tick
/// it loads, so one chunk (of one scene) is home to at most 10 000 of them, whose lines come to
/// at most 2 MiB: past either, `check` and `run` refuse the district files naming the first
/// line past it (a million entities homed in one chunk took a 7 s tick and most of a GiB).
#[test]
fn a_chunk_home_to_more_than_10_000_entities_is_an_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines: Vec<String> = (0..10_000)
        .map(|k| {
            line(
                &format!("e{k}"),
                1.0 + (k % 100) as f64 * 0.3,
                40.0,
                &[],
                None,
            )
        })
        .collect();
    world(dir.path(), &[("d.jsonl", lines.clone())], json!({}));
    let (code, err) = cli_run(dir.path());
    assert_eq!(code, 0, "the most is fine: {err}");
    lines.push(line("one_more", 31.0, 63.0, &[], None));
    world(dir.path(), &[("d.jsonl", lines)], json!({}));
    for args in [
        &["check", "scene.json"][..],
        &["run", "scene.json", "--ticks", "1"],
    ] {
        let out = bin().current_dir(dir.path()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(
                "d.jsonl: line 10001: chunk (0, 1) is home to 10000 district entities already, \
                 the most a chunk may be (a chunk's district entities are spawned in the tick \
                 it loads)"
            ),
            "{err}"
        );
    }
}

/// A chunk's lines are read back in one span only when they lie in one file, in order: a chunk
/// homed in two files reads each line from its own file (a span taken across the two files
/// would read the second file's line out of the first's bytes).
#[test]
fn a_chunk_homed_in_two_files_reads_each_line_from_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    // File a: its (0, 0) line first, then 50 lines far away; file b: 20 far lines, then its
    // (0, 0) line, which lies well inside file a's length.
    let mut a = vec![line(
        "a1",
        5.0,
        5.0,
        &["crate"],
        Some(json!({ "from": "a" })),
    )];
    a.extend((0..50).map(|i| line(&format!("fa{i}"), 300.0 + f64::from(i), 5.0, &[], None)));
    let mut b: Vec<String> = (0..20)
        .map(|i| line(&format!("fb{i}"), 300.0 + f64::from(i), 5.0, &[], None))
        .collect();
    b.push(line(
        "b1",
        6.0,
        6.0,
        &["crate"],
        Some(json!({ "from": "b" })),
    ));
    let scene = world(dir.path(), &[("a.jsonl", a), ("b.jsonl", b)], json!({}));
    let mut game = start(dir.path(), &scene);
    run(&mut game, &[], 1);
    assert!(
        events_named(&game, "world.district.error").is_empty(),
        "{:?}",
        event_lines(&game)
    );
    for (id, from) in [("a1", "a"), ("b1", "b")] {
        let e = game.engine().world().get(&EntityId::new(id));
        let data = e.and_then(|e| e.data.as_deref().cloned());
        assert_eq!(
            data.map(|d| d["from"].clone()),
            Some(json!(from)),
            "{id} spawned from its own file"
        );
    }
    assert_eq!(counts(&game), (2, 70));
}

/// A chunk's lines that lie in one file, in order, within 1 MiB are read back in one read of
/// their span, not one read a line (docs/district.md#one-chunks-cost): 200 lines of one chunk
/// cost a few read calls. The span starts past the file's first lines (homed far away) and
/// ends with the file, so a span measured too long cannot be read either.
#[cfg(target_os = "linux")]
#[test]
fn a_chunk_s_lines_in_one_file_are_read_in_one_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines: Vec<String> = (0..10)
        .map(|i| line(&format!("far{i}"), 300.0 + f64::from(i), 5.0, &[], None))
        .collect();
    lines.extend((0..200).map(|i| line(&format!("e{i}"), 1.0 + f64::from(i % 30), 5.0, &[], None)));
    let scene = world(dir.path(), &[("d.jsonl", lines)], json!({}));
    let mut game = start(dir.path(), &scene);
    let before = thread_io("syscr");
    run(&mut game, &[], 1);
    let reads = thread_io("syscr") - before;
    assert_eq!(counts(&game), (200, 10));
    assert!(reads < 10, "{reads} read calls for one chunk's 200 lines");
}

/// The span read of a chunk's lines is bounded at 1 MiB exactly: two lines whose span is
/// 1 MiB are read in one read, 1 MiB and a byte in two (one a line), and lines far apart
/// never read what lies between them. (The counters' own reads are the same in each case:
/// the cases are compared with each other.)
#[cfg(target_os = "linux")]
#[test]
fn a_chunk_s_span_is_read_whole_up_to_1_mib_and_no_further() {
    let mut seen = Vec::new();
    for extra in [0u64, 1, 3 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            line("a", 5.0, 5.0, &[], None),
            line("b", 6.0, 6.0, &[], None),
        );
        // Blank lines between them: the span (a's start to b's end) is 1 MiB + `extra`.
        let blank = (1u64 << 20) + extra - a.len() as u64 - b.len() as u64 - 1;
        let lines = vec![a, "\n".repeat(blank as usize - 1), b];
        let scene = world(dir.path(), &[("d.jsonl", lines)], json!({}));
        let mut game = start(dir.path(), &scene);
        let (calls, bytes) = (thread_io("syscr"), thread_io("rchar"));
        run(&mut game, &[], 1);
        let (calls, bytes) = (thread_io("syscr") - calls, thread_io("rchar") - bytes);
        assert_eq!(counts(&game), (2, 0));
        seen.push((calls, bytes));
    }
    let [(span_calls, span_bytes), (over_calls, over_bytes), (far_calls, far_bytes)] = seen[..]
    else {
        unreachable!()
    };
    assert_eq!(
        (over_calls, far_calls),
        (span_calls + 1, span_calls + 1),
        "one read for a 1 MiB span, one a line past it: {seen:?}"
    );
    assert!(span_bytes >= 1 << 20, "{seen:?}");
    assert!(over_bytes < 4096 && far_bytes < 4096, "{seen:?}");
}

/// A stored spawned entity's id stays reserved across a save: loaded into a fresh game (whose
/// records come from the save), spawning that id is refused as in the game that stored it.
#[test]
fn a_stored_spawned_entity_s_id_stays_reserved_after_a_save_is_loaded() {
    let (dir, mut game) = standard();
    let spawn = |x: f64| json!({ "tick": 0, "do": "spawn", "entity": { "id": "box", "tags": ["streamed"], "position": { "x": x, "z": 5 } } });
    let save = dir.path().join("s.json");
    run(
        &mut game,
        &[
            at(2, spawn(500.0)),
            json!({ "tick": 3, "do": "save", "path": save.display().to_string() }),
        ],
        3,
    );
    assert!(!has(&game, "box"), "stored at the end of its tick");
    let scene: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("scene.json")).unwrap())
            .unwrap();
    let mut fresh = start(dir.path(), &scene);
    fresh.load(&save).unwrap();
    let e = fresh
        .run(&common::inputs(&[at(4, spawn(5.0))]), 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("may not be spawned"), "{e}");
}
