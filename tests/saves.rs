//! Saves: the seed example's save and reload, continuation over generated scenarios (a run saved
//! at tick N and loaded into a fresh engine continues exactly as the uninterrupted run), every
//! kind of corruption refused with the game unchanged, and a crash while saving.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};
use world_streaming::game::Game;

fn seed_scene() -> Value {
    json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 1, "budgetMs": 2 })),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    })
}

#[test]
fn the_seed_example_saved_after_tick_5_reloads_its_9_chunks_and_emits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seed.save.json");
    let mut g = game(&seed_scene());
    run(&mut g, &[], 5);
    g.save(&path).unwrap();
    let mut fresh = game(&seed_scene());
    let before = fresh.engine().events().len();
    let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = calls.clone();
    let _sub = fresh
        .streaming()
        .unwrap()
        .on_chunk(Box::new(move |c, loaded| {
            seen.borrow_mut().push((c, loaded))
        }));
    fresh.load(&path).unwrap();
    assert_eq!(
        fresh.engine().events().len(),
        before,
        "a load emits nothing"
    );
    let restored: Vec<_> = g
        .streaming()
        .unwrap()
        .loaded()
        .into_iter()
        .map(|c| (c, true))
        .collect();
    assert_eq!(
        *calls.borrow(),
        restored,
        "onChunk hears of the 9 restored chunks, in row order"
    );
    let s = fresh.streaming().unwrap();
    assert_eq!(s.loaded().len(), 9);
    assert!(s.is_loaded(c(1, 1)) && !s.is_loaded(c(2, 0)));
    assert_eq!(fresh.engine().tick_count(), 5);
    assert_eq!(fresh.engine().variables().count("world.chunks.loaded"), 9);
    assert_eq!(fresh.state(), g.state());
}

/// A scene with JSON mods refusing at random and setting overrides, and random inputs.
fn scenario(seed: u64, ticks: u64, dir: &Path) -> (Value, Vec<Value>) {
    let mut r = Rng(seed);
    let size = [8, 16, 32][r.below(3) as usize];
    let mut mods = Vec::new();
    for i in 0..r.below(4) {
        let m = if r.chance(25) {
            json!({ "id": format!("set{i}"), "set": { "radius": r.below(4), "budgetMs": r.below(5) } })
        } else {
            let hook = if r.chance(50) {
                "world.chunk.load"
            } else {
                "world.chunk.unload"
            };
            let mut m = json!({ "id": format!("m{i}"), "hook": hook, "cancel": true, "reason": format!("r{i}") });
            if r.chance(80) {
                m["match"] = json!({ "x": r.coord(2) });
            }
            if r.chance(60) {
                m["match"]["z"] = json!(r.coord(2));
            }
            m
        };
        let name = format!("mod{i}.json");
        std::fs::write(dir.join(&name), m.to_string()).unwrap();
        mods.push(name);
    }
    let mut ground = json!({ "id": "world.ground" });
    if r.chance(50) {
        ground["config"] =
            json!({ "bounds": { "minX": -100, "minZ": -100, "maxX": 150, "maxZ": 120 } });
    }
    let scene = json!({
        "kits": [ ground, { "id": "world.streaming", "config": { "chunkSize": size, "radius": r.below(3), "budgetMs": 1 + r.below(4) } } ],
        "mods": mods,
        "scenes": [
            { "id": "a", "entry": { "x": 0, "z": 0 } },
            { "id": "b", "entry": { "x": 50, "z": -30 }, "layers": { "world.streaming": { "radius": r.below(3) } } }
        ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 1, "z": 1 } },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 20, "z": 5 } },
            { "id": "crate0", "tags": ["streamable"], "position": { "x": 40, "z": 40 } }
        ]
    });
    let mut inputs = Vec::new();
    let mut crates = 1;
    // The player comes and goes (despawned and spawned again, its `player` tag taken and given
    // back), so that the focus falls back on the last player.moved, also across a save.
    let mut hero = true;
    for t in 1..=ticks {
        for _ in 0..r.below(3) {
            if r.chance(8) {
                let line = if hero {
                    json!({"do": "despawn", "entity": "hero"})
                } else {
                    json!({"do": "spawn", "entity": {"id": "hero", "tags": ["player"], "position": {"x": r.coord(60), "z": r.coord(60)}}})
                };
                hero = !hero;
                let mut line = line;
                line["tick"] = json!(t);
                inputs.push(line);
                continue;
            }
            if hero && r.chance(6) {
                let tag = if r.chance(50) { "untag" } else { "tag" };
                inputs.push(json!({"tick": t, "do": tag, "entity": "hero", "tag": "player"}));
                continue;
            }
            let who = if hero && r.chance(60) { "hero" } else { "car" };
            let step = if r.chance(10) { 200 } else { 20 };
            let line = match r.below(14) {
                0..=4 => {
                    json!({"do": "move", "entity": who, "to": {"x": r.coord(step), "z": r.coord(step)}})
                }
                5 if hero => json!({"do": "ride", "entity": "hero", "vehicle": "car"}),
                6 if hero => json!({"do": "dismount", "entity": "hero"}),
                5 | 6 => {
                    json!({"do": "player.moved", "at": {"x": r.coord(300), "z": r.coord(300)}})
                }
                7 => json!({"do": "player.moved", "at": {"x": r.coord(100), "z": r.coord(100)}}),
                8 => {
                    crates += 1;
                    json!({"do": "spawn", "entity": {"id": format!("crate{crates}"), "tags": ["streamable"], "position": {"x": r.coord(80), "z": r.coord(80)}}})
                }
                9 => {
                    json!({"do": if r.chance(50) { "tag" } else { "untag" }, "entity": "crate0", "tag": "streamable"})
                }
                10 => json!({"do": "release", "x": r.coord(3), "z": r.coord(3)}),
                11 => {
                    json!({"do": "control", "entity": if r.chance(50) { json!("car") } else { Value::Null }})
                }
                12 if r.chance(30) => json!({"do": "leave"}),
                _ => json!({"do": "enter", "scene": if r.chance(50) { "a" } else { "b" }}),
            };
            let mut line = line;
            line["tick"] = json!(t);
            inputs.push(line);
        }
    }
    (scene, inputs)
}

fn cases() -> u64 {
    std::env::var("SAVE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[test]
fn a_run_saved_at_tick_n_and_loaded_into_a_fresh_engine_continues_exactly() {
    let mut streamed = 0;
    for case in 0..cases() {
        let dir = tempfile::tempdir().unwrap();
        let (n, m) = (1 + case % 17, 1 + (case * 7) % 23);
        let (scene, lines) = scenario(case, n + m, dir.path());
        // Uninterrupted.
        let mut whole = game_in(&scene, dir.path());
        whole.run(&inputs(&lines), n + m).unwrap();
        // Interrupted at n.
        let (second, actual) = resumed_from_save(&scene, dir.path(), &lines, n, n + m);
        let expected = common::events_after(&whole, n);
        assert_eq!(actual, expected, "case {case}: n={n} m={m}\nscene {scene}");
        assert_eq!(second.state(), whole.state(), "case {case}");
        assert_eq!(
            second.engine().save_document(),
            whole.engine().save_document(),
            "case {case}"
        );
        streamed += expected.len();
    }
    assert!(
        streamed > 1000,
        "the scenarios stream: {streamed} events compared"
    );
}

#[test]
fn refusals_and_mod_overrides_survive_a_save() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep_home.json"), r#"{"id": "keep_home", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0}, "cancel": true, "reason": "home"}"#).unwrap();
    std::fs::write(dir.path().join("no_east.json"), r#"{"id": "no_east", "hook": "world.chunk.load", "match": {"x": 1}, "cancel": true, "reason": "east"}"#).unwrap();
    std::fs::write(
        dir.path().join("wide.json"),
        r#"{"id": "wide", "set": {"radius": 1, "budgetMs": 9}}"#,
    )
    .unwrap();
    let scene = json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 0, "budgetMs": 1 })),
        "mods": ["keep_home.json", "no_east.json", "wide.json"],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    let mut g = game_in(&scene, dir.path());
    run(
        &mut g,
        &[json!({"tick": 3, "do": "move", "entity": "hero", "to": {"x": -200, "z": 8}})],
        3,
    );
    let refusals = g.streaming().unwrap().refusals();
    assert!(refusals
        .iter()
        .any(|r| r.by == "keep_home" && r.hook == "world.chunk.unload"));
    let path = dir.path().join("s.json");
    g.save(&path).unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        saved["kits"]["world.streaming"]["overrides"],
        json!({"radius": 1, "budgetMs": 9.0})
    );
    let mut fresh = game_in(&scene, dir.path());
    fresh.load(&path).unwrap();
    assert_eq!(fresh.streaming().unwrap().refusals(), refusals);
    assert_eq!(fresh.streaming().unwrap().radius(), 1);
}

fn saved_game() -> (tempfile::TempDir, Game, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep_home.json"), r#"{"id": "keep_home", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0}, "cancel": true, "reason": "home"}"#).unwrap();
    let scene = json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 1, "budgetMs": 4 })),
        "mods": ["keep_home.json"],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } },
            { "id": "crate", "tags": ["streamable"], "position": { "x": 9, "z": 9 } }
        ]
    });
    let mut g = game_in(&scene, dir.path());
    run(
        &mut g,
        &[json!({"tick": 4, "do": "move", "entity": "hero", "to": {"x": 300, "z": 8}})],
        6,
    );
    let path = dir.path().join("good.json");
    g.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    (dir, g, text)
}

/// Loads `text` into `g`; it must fail with `expect` in the message and leave the game as it was,
/// and `check` must agree ([`refused_alike`]): on its own at the same JSON path, except for the
/// cases only the game can tell (its scenes, the kits it enables, its ground's bounds).
fn refused(g: &mut Game, dir: &Path, name: &str, text: &str, expect: &str) {
    const NEEDS_THE_GAME: [&str; 3] = ["unknown_scene", "missing_section", "outside"];
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, text).unwrap();
    let alone = if NEEDS_THE_GAME.contains(&name) {
        Alone::NeedsTheGame
    } else {
        Alone::Refuses
    };
    let err = refused_alike(g, &path, alone);
    assert!(
        err.contains(expect),
        "{name}: expected {expect:?} in {err:?}"
    );
    assert!(
        err.starts_with(&path.display().to_string()),
        "{name}: names the file: {err}"
    );
}

/// `v` with every number as an `f64`, so that `8` and `8.0` compare equal.
fn numbers_as_f64(v: Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(a) => Value::Array(a.into_iter().map(numbers_as_f64).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, numbers_as_f64(v))).collect())
        }
        other => other,
    }
}

/// The `world.streaming` section of a save document.
fn section(v: &mut Value) -> &mut Value {
    &mut v["kits"]["world.streaming"]
}

fn edit(text: &str, f: impl FnOnce(&mut Value)) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    f(&mut v);
    v.to_string()
}

#[test]
fn every_corruption_is_refused_with_a_message_and_the_game_unchanged() {
    let (dir, mut g, good) = saved_game();
    let d = dir.path();
    // Reference: the good save loads.
    let mut probe = saved_game().1;
    probe.load(&d.join("good.json")).unwrap();
    for cut in [0, 1, 10, good.len() / 3, good.len() / 2, good.len() - 3] {
        refused(&mut g, d, &format!("truncated{cut}"), &good[..cut], "line");
    }
    let mut refused_flips = 0;
    let mut loaded_flips = 0;
    // The last offset is inside the refusal's reason ("home" becomes "2ome"): that one loads.
    let reason = good.find("\"home\"").unwrap() + 1;
    for (i, at) in [5usize, good.len() / 4, good.len() / 2, reason]
        .into_iter()
        .enumerate()
    {
        let mut bytes = good.clone().into_bytes();
        bytes[at] ^= 0x5a;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let path = d.join(format!("flipped{i}.json"));
        std::fs::write(&path, &text).unwrap();
        let (before, doc) = (g.state(), g.engine().save_document());
        // A flipped byte may still be valid JSON with valid values (e.g. inside a reason or an
        // id); it must never crash. On error nothing changes; when it loads, the game holds
        // exactly what the flipped file says (saving it again gives the same document).
        match g.load(&path) {
            Err(_) => {
                assert_eq!(g.state(), before, "flip at {at}: state unchanged");
                assert_eq!(
                    g.engine().save_document(),
                    doc,
                    "flip at {at}: game unchanged"
                );
                refused_flips += 1;
            }
            Ok(()) => {
                let file: Value = serde_json::from_str(&text).unwrap();
                let held = serde_json::to_value(g.engine().save_document()).unwrap();
                assert_eq!(numbers_as_f64(held), numbers_as_f64(file), "flip at {at}");
                assert_ne!(g.state(), before, "flip at {at}: the change is held");
                loaded_flips += 1;
                g.load(&d.join("good.json")).unwrap();
            }
        }
    }
    assert_eq!((refused_flips, loaded_flips), (3, 1));
    refused(
        &mut g,
        d,
        "not_a_save",
        r#"{"kits": []}"#,
        "format: expected \"world-streaming-save\"",
    );
    refused(
        &mut g,
        d,
        "future",
        &edit(&good, |v| v["version"] = json!(5)),
        "save version 5 is newer than this build reads",
    );
    refused(
        &mut g,
        d,
        "no_version",
        &edit(&good, |v| {
            v.as_object_mut().unwrap().remove("version");
        }),
        "version: expected 1",
    );
    refused(
        &mut g,
        d,
        "missing_tick",
        &edit(&good, |v| {
            v.as_object_mut().unwrap().remove("tick");
        }),
        "tick: missing field",
    );
    refused(
        &mut g,
        d,
        "tick_text",
        &edit(&good, |v| v["tick"] = json!("six")),
        "tick: expected an integer >= 0, got \"six\"",
    );
    refused(
        &mut g,
        d,
        "unknown_key",
        &edit(&good, |v| v["extra"] = json!(1)),
        "unknown field `extra`",
    );
    refused(
        &mut g,
        d,
        "unknown_scene",
        &edit(&good, |v| v["scene"] = json!("moon")),
        "scene: no such scene `moon`",
    );
    refused(
        &mut g,
        d,
        "duplicate_entity",
        &edit(&good, |v| {
            let e = v["entities"][0].clone();
            v["entities"].as_array_mut().unwrap().push(e);
        }),
        "entities[2]: an entity `hero` already exists",
    );
    refused(
        &mut g,
        d,
        "ride_loop",
        &edit(&good, |v| {
            v["entities"][0]["rides"] = json!("crate");
            v["entities"][1]["rides"] = json!("hero");
        }),
        "would close a loop",
    );
    refused(
        &mut g,
        d,
        "nan_position",
        &good.replacen("\"x\": 300", "\"x\": 1e999", 1),
        "line",
    );
    refused(
        &mut g,
        d,
        "absurd_position",
        &edit(&good, |v| v["entities"][0]["position"]["x"] = json!(1e300)),
        "entities[0]",
    );
    refused(
        &mut g,
        d,
        "loaded_text",
        &edit(&good, |v| {
            v["kits"]["world.streaming"]["loaded"] = json!("all")
        }),
        "kits.world.streaming.loaded: expected an array, got \"all\"",
    );
    refused(
        &mut g,
        d,
        "duplicate_chunk",
        &edit(&good, |v| {
            let c = v["kits"]["world.streaming"]["loaded"][0].clone();
            v["kits"]["world.streaming"]["loaded"]
                .as_array_mut()
                .unwrap()
                .push(c);
        }),
        "is listed twice",
    );
    refused(
        &mut g,
        d,
        "unload_refusal_of_unloaded",
        &edit(&good, |v| {
            v["kits"]["world.streaming"]["refusals"] =
                json!([{"x": 40, "z": 40, "hook": "world.chunk.unload", "mod": "m", "reason": ""}]);
        }),
        "an unload refusal of chunk (40, 40), which is not loaded",
    );
    refused(
        &mut g,
        d,
        "load_refusal_of_loaded",
        &edit(&good, |v| {
            let c = v["kits"]["world.streaming"]["loaded"][0].clone();
            v["kits"]["world.streaming"]["refusals"] = json!([{"x": c["x"], "z": c["z"], "hook": "world.chunk.load", "mod": "m", "reason": ""}]);
        }),
        "a load refusal of chunk",
    );
    refused(
        &mut g,
        d,
        "unknown_hook",
        &edit(&good, |v| {
            v["kits"]["world.streaming"]["refusals"][0]["hook"] = json!("world.chunk.lod")
        }),
        "refusals[0].hook: expected world.chunk.load or world.chunk.unload",
    );
    refused(
        &mut g,
        d,
        "missing_section",
        &edit(&good, |v| {
            v["kits"].as_object_mut().unwrap().remove("world.streaming");
        }),
        "kits.world.streaming: missing section",
    );
    refused(
        &mut g,
        d,
        "unknown_kit",
        &edit(&good, |v| v["kits"]["world.weather"] = json!({})),
        "kits.world.weather",
    );
    refused(
        &mut g,
        d,
        "bad_override",
        &edit(&good, |v| {
            v["kits"]["world.streaming"]["overrides"] = json!({"radius": 99})
        }),
        "overrides.radius: expected an integer 0..=64, got 99",
    );
    refused(&mut g, d, "array", "[1, 2, 3]", "expected a save document");
    refused(
        &mut g,
        d,
        "no_scene_but_chunks",
        &edit(&good, |v| v["scene"] = Value::Null),
        "kits.world.streaming.loaded: expected nothing here: the save has no active scene",
    );
    refused(
        &mut g,
        d,
        "no_focus_but_chunks",
        &edit(&good, |v| {
            v["kits"]["world.streaming"]["focus"] = Value::Null
        }),
        "kits.world.streaming.focus: expected a focus",
    );
    refused(
        &mut g,
        d,
        "tick_too_large",
        &edit(&good, |v| v["tick"] = json!(u64::MAX)),
        "tick: expected at most 10000000",
    );
    refused(
        &mut g,
        d,
        "variable_array",
        &edit(&good, |v| v["variables"]["junk"] = json!([1, 2])),
        "variables.junk: expected a number, string, boolean or null",
    );
    refused(
        &mut g,
        d,
        "empty_entity_id",
        &edit(&good, |v| v["entities"][1]["id"] = json!("")),
        "entities[1].id: expected a name of 1..=256 bytes",
    );
    refused(
        &mut g,
        d,
        "long_reason",
        &edit(&good, |v| {
            v["kits"]["world.streaming"]["refusals"][0]["reason"] = json!("x".repeat(5000))
        }),
        "refusals[0].reason: expected at most 1024 bytes",
    );
    // After all that, the game still runs as before and the good save still loads.
    g.load(&d.join("good.json")).unwrap();
}

#[test]
fn a_crash_between_write_and_rename_leaves_the_previous_save_intact() {
    let (dir, g, good) = saved_game();
    let path = dir.path().join("good.json");
    let doc = serde_json::to_vec(&g.engine().save_document()).unwrap();
    let err = world_streaming::files::write_atomic_with(&path, &doc, |_| {
        Err(std::io::Error::other("simulated crash"))
    })
    .unwrap_err();
    assert!(err.to_string().contains("simulated crash"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        good,
        "the previous save is intact"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".tmp")
        })
        .collect();
    assert!(leftovers.is_empty(), "no temporary file is left behind");
}

#[test]
fn a_save_into_a_missing_directory_fails_cleanly() {
    let (dir, g, _) = saved_game();
    let err = g
        .save(&dir.path().join("no/such/dir/s.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no/such/dir/s.json"), "{err}");
}

#[test]
fn save_and_load_inputs_continue_the_saved_run_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("at10.json");
    let save_s = save.display().to_string();
    let moves: Vec<Value> = (1..=20u64)
        .map(
            |t| json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": 8 + t * 20, "z": 8}}),
        )
        .collect();
    let mut whole = game(&seed_scene());
    run(&mut whole, &moves, 20);
    // Run 1: save before tick 11 runs (after tick 10).
    let mut with_save = moves.clone();
    with_save.insert(10, json!({"tick": 11, "do": "save", "path": save_s}));
    let mut first = game(&seed_scene());
    run(&mut first, &with_save, 11);
    // Run 2: a fresh run whose first input is a load at tick 11.
    let mut resumed_inputs = vec![json!({"tick": 11, "do": "load", "path": save_s})];
    resumed_inputs.extend(
        moves
            .iter()
            .filter(|m| m["tick"].as_u64().unwrap() >= 11)
            .cloned(),
    );
    let mut second = game(&seed_scene());
    run(&mut second, &resumed_inputs, 20);
    let tail = |g: &Game| -> Vec<String> {
        g.engine()
            .events()
            .iter()
            .filter(|e| e.tick > 10)
            .map(|e| serde_json::to_string(e).unwrap())
            .collect()
    };
    assert_eq!(tail(&second), tail(&whole));
    assert_eq!(second.state(), whole.state());
}

#[test]
fn a_saved_refusal_outside_the_ground_is_refused() {
    let scene = json!({
        "kits": [
            { "id": "world.ground", "config": { "bounds": { "minX": 0, "minZ": 0, "maxX": 64, "maxZ": 64 } } },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9 } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    let dir = tempfile::tempdir().unwrap();
    let mut g = game(&scene);
    run(&mut g, &[], 2);
    g.save(&dir.path().join("good.json")).unwrap();
    let good = std::fs::read_to_string(dir.path().join("good.json")).unwrap();
    let outside = edit(&good, |v| {
        v["kits"]["world.streaming"]["refusals"] =
            json!([{"x": -1, "z": 0, "hook": "world.chunk.load", "mod": "ghost", "reason": ""}]);
    });
    refused(
        &mut g,
        dir.path(),
        "outside",
        &outside,
        "refusals[0]: chunk (-1, 0) lies outside the world.ground bounds",
    );
}

#[test]
fn the_last_player_moved_survives_a_save_and_steers_once_the_player_is_gone() {
    // The player holds the focus at (8, 8); a player.moved to (200, 8) is remembered but not
    // used. Saved then, loaded into a fresh engine, and the player despawned: the focus must
    // move to the remembered (200, 8), exactly as in the run without the save.
    let scene = json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 0, "budgetMs": 1 })),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    let moved = json!({"tick": 2, "do": "player.moved", "at": {"x": 200, "z": 8}});
    let gone = json!({"tick": 3, "do": "despawn", "entity": "hero"});
    let mut whole = game(&scene);
    run(&mut whole, &[moved.clone(), gone.clone()], 3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("moved.save.json");
    let mut first = game(&scene);
    run(&mut first, &[moved], 2);
    assert_eq!(first.state().focus.map(|f| (f.x, f.z)), Some((8.0, 8.0)));
    first.save(&path).unwrap();
    let mut second = game(&scene);
    second.load(&path).unwrap();
    run(&mut second, &[gone], 3);
    let tick3 = |g: &Game| -> Vec<(String, i64, i64)> {
        g.engine()
            .events()
            .iter()
            .filter(|e| e.tick == 3)
            .map(|e| {
                let xz = |k: &str| e.data[k].as_i64().unwrap();
                (e.event.to_string(), xz("x"), xz("z"))
            })
            .collect()
    };
    let expected = [
        ("world.chunk.unloaded".to_owned(), 0, 0),
        ("world.chunk.loaded".to_owned(), 6, 0),
    ];
    assert_eq!(tick3(&whole), expected, "the uninterrupted run");
    assert_eq!(tick3(&second), expected, "the run through the save");
    assert_eq!(second.state(), whole.state());
}

#[test]
fn the_tick_limit_is_inclusive_and_a_version_0_save_is_refused_as_unknown() {
    let (dir, mut g, good) = saved_game();
    let d = dir.path();
    let at_limit = edit(&good, |v| v["tick"] = json!(10_000_000));
    std::fs::write(d.join("at_limit.json"), &at_limit).unwrap();
    g.load(&d.join("at_limit.json")).unwrap();
    assert_eq!(g.engine().tick_count(), 10_000_000);
    refused(
        &mut g,
        d,
        "past_limit",
        &edit(&good, |v| v["tick"] = json!(10_000_001)),
        "tick: expected at most 10000000, got 10000001",
    );
    refused(
        &mut g,
        d,
        "version_0",
        &edit(&good, |v| v["version"] = json!(0)),
        "version: expected 1..=4, got 0",
    );
}

/// Each held ticket is saved once under its id: a save listing an id twice is refused, naming
/// the second entry, and the running game is unchanged.
#[test]
fn a_save_listing_a_ticket_id_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut g = game(&seed_scene());
    run(
        &mut g,
        &[
            json!({"tick": 1, "do": "request", "id": "gate", "at": {"x": 200, "z": 0}, "radius": 1, "ticks": 50}),
        ],
        3,
    );
    g.save(&d.join("good.json")).unwrap();
    let good = std::fs::read_to_string(d.join("good.json")).unwrap();
    let mut fresh = game(&seed_scene());
    fresh.load(&d.join("good.json")).unwrap();
    assert_eq!(
        fresh.tickets(),
        g.tickets(),
        "one ticket, saved and restored"
    );
    refused(
        &mut g,
        d,
        "duplicate_ticket",
        &edit(&good, |v| {
            let t = v["kits"]["world.streaming"]["tickets"][0].clone();
            v["kits"]["world.streaming"]["tickets"]
                .as_array_mut()
                .unwrap()
                .push(t);
        }),
        "kits.world.streaming.tickets[1].id: ticket \"gate\" is listed twice",
    );
    // A bad value of any ticket field is told at its key (the fields were once flattened,
    // which told it at the ticket with the whole ticket as the value found).
    for (key, value, expected) in [
        (
            "priority",
            json!(256),
            "expected an integer 0..=255, got 256",
        ),
        (
            "priority",
            json!("x"),
            "expected an integer 0..=255, got \"x\"",
        ),
        (
            "priority",
            json!(null),
            "expected an integer 0..=255, got null",
        ),
        ("from", json!(-1), "expected an integer >= 0, got -1"),
        ("announced", json!(1), "expected a boolean, got 1"),
    ] {
        refused(
            &mut g,
            d,
            "bad_ticket_field",
            &edit(&good, |v| {
                v["kits"]["world.streaming"]["tickets"][0][key] = value.clone()
            }),
            &format!("kits.world.streaming.tickets[0].{key}: {expected}"),
        );
    }
}

#[test]
fn checking_a_save_alone_finds_what_loading_it_would() {
    use world_streaming::files::save::check;
    let (_dir, _g, good) = saved_game();
    let good: Value = serde_json::from_str(&good).unwrap();
    check(&good).unwrap();
    let bad = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        check(&v).unwrap_err().to_string()
    };
    assert_eq!(
        bad(&|v| v["version"] = json!(7)),
        "version: save version 7 is newer than this build reads (up to 4)"
    );
    assert!(bad(&|v| v["entities"][0]["id"] = json!("")).starts_with("entities[0].id"));
    let dup = bad(&|v| {
        let c = v["kits"]["world.streaming"]["loaded"][0].clone();
        v["kits"]["world.streaming"]["loaded"]
            .as_array_mut()
            .unwrap()
            .push(c);
    });
    assert!(
        dup.starts_with("kits.world.streaming.loaded[") && dup.ends_with("is listed twice"),
        "{dup}"
    );
}

#[test]
fn a_save_needs_a_focus_for_any_chunk_or_refusal_and_takes_reasons_up_to_1024_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut g = game(&seed_scene());
    run(&mut g, &[], 5);
    g.save(&d.join("seed.json")).unwrap();
    let good = std::fs::read_to_string(d.join("seed.json")).unwrap();
    refused(
        &mut g,
        d,
        "chunks_without_focus",
        &edit(&good, |v| section(v)["focus"] = Value::Null),
        "kits.world.streaming.focus: expected a focus",
    );
    let refusal = |reason: usize| json!([{"x": 5, "z": 5, "hook": "world.chunk.load", "mod": "m", "reason": "r".repeat(reason)}]);
    refused(
        &mut g,
        d,
        "refusal_without_focus",
        &edit(&good, |v| {
            let s = section(v);
            s["focus"] = Value::Null;
            s["loaded"] = json!([]);
            s["refusals"] = refusal(0);
        }),
        "kits.world.streaming.focus: expected a focus",
    );
    refused(
        &mut g,
        d,
        "reason_1025",
        &edit(&good, |v| section(v)["refusals"] = refusal(1025)),
        "refusals[0].reason: expected at most 1024 bytes, got 1025",
    );
    std::fs::write(
        d.join("reason_1024.json"),
        edit(&good, |v| section(v)["refusals"] = refusal(1024)),
    )
    .unwrap();
    g.load(&d.join("reason_1024.json")).unwrap();
    assert_eq!(g.streaming().unwrap().refusals()[0].reason.len(), 1024);
}

/// A Lua mod whose decisions depend on everything a mod may keep: a counter and the set of live
/// chunks in `storage`, and `math.random` draws.
const STATEFUL_MOD: &str = r#"
storage.asks = storage.asks or 0
storage.live = storage.live or {}
streaming.onChunk(function(c, loaded)
  storage.live[c.x .. "," .. c.z] = loaded or nil
end)
on("world.chunk.load", function(c)
  storage.asks = storage.asks + 1
  local live = 0
  for _ in pairs(storage.live) do live = live + 1 end
  local roll = math.random(1, 6)
  log("ask", storage.asks, live, roll, math.random())
  if roll == 1 or storage.asks % 7 == 0 or live % 5 == 4 then
    return cancel("roll " .. roll .. " ask " .. storage.asks .. " live " .. live)
  end
end)
"#;

fn stateful_game(dir: &Path) -> Game {
    std::fs::write(dir.join("stateful.lua"), STATEFUL_MOD).unwrap();
    let scene = json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 2, "budgetMs": 3 })),
        "mods": ["stateful.lua"],
        "seed": 7,
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    game_in(&scene, dir)
}

#[test]
fn a_lua_mod_that_counts_remembers_chunks_and_rolls_dice_continues_exactly_after_a_load() {
    let dir = tempfile::tempdir().unwrap();
    let drive: Vec<Value> = (1..60)
        .map(|t| json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": 8 + t * 11, "z": 8 - t * 3}}))
        .collect();
    let mut whole = stateful_game(dir.path());
    run(&mut whole, &drive, 60);
    let all = event_lines(&whole);
    let all_log: Vec<String> = whole
        .take_mod_log()
        .into_iter()
        .map(|l| l.message)
        .collect();
    let field = |line: &str, i: usize| line.split('\t').nth(i).unwrap().parse::<i64>().unwrap();
    assert!(
        all_log.iter().any(|l| field(l, 3) == 1) && all_log.iter().any(|l| field(l, 2) % 5 == 4),
        "the mod refuses on its dice and on its memory: {all_log:?}"
    );
    for n in [1, 4, 13, 29, 47] {
        let path = dir.path().join(format!("at{n}.save.json"));
        let mut first = stateful_game(dir.path());
        run(&mut first, &drive, n);
        first.save(&path).unwrap();
        let before = first.engine().events().len();
        let logged_before = first.take_mod_log().len();
        let mut fresh = stateful_game(dir.path());
        fresh.take_mod_log();
        fresh.load(&path).unwrap();
        fresh.engine_mut().take_events();
        fresh.run(&inputs_after(&drive, n), 60).unwrap();
        assert_eq!(
            event_lines(&fresh),
            all[before..],
            "events after a save at tick {n} and a load into a fresh game"
        );
        let log: Vec<String> = fresh
            .take_mod_log()
            .into_iter()
            .map(|l| l.message)
            .collect();
        assert_eq!(
            log,
            all_log[logged_before..],
            "the mod's log after tick {n}"
        );
    }
}

#[test]
fn storage_that_is_not_plain_data_is_a_save_error_naming_the_mod_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("storage.f = print", "storage.f: a function cannot be saved"),
        (
            "storage.t = {} storage.t.me = storage.t",
            "storage.t.me: a table that contains itself",
        ),
        (
            "storage.x = 0/0",
            "storage.x: the number NaN cannot be saved",
        ),
        (
            "storage[{}] = 1",
            "storage: a key of type table cannot be saved",
        ),
        (
            "storage.s = string.rep('x', 2 * 1024 * 1024)",
            "storage.s: storage is larger than 1048576 bytes",
        ),
        ("storage = 3", "storage: expected a table, got a number"),
    ];
    for (body, expected) in cases {
        std::fs::write(dir.path().join("bad.lua"), body).unwrap();
        let scene = json!({
            "kits": kits(json!({})),
            "mods": ["bad.lua"],
            "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
        });
        let g = game_in(&scene, dir.path());
        let path = dir.path().join("bad.save.json");
        let e = g.save(&path).unwrap_err().to_string();
        assert!(
            e.contains("cannot save Lua mod bad: ") && e.contains(expected),
            "{body}: {e}"
        );
        assert!(!path.exists(), "{body}: nothing written");
    }
}

#[test]
fn a_save_whose_mod_states_do_not_fit_the_game_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.save.json");
    let mut g = stateful_game(dir.path());
    run(&mut g, &[], 3);
    g.save(&path).unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved["mods"][0]["mod"], "stateful");
    type Mutation = (&'static str, fn(&mut Value), Alone);
    let mutations: [Mutation; 4] = [
        // Which mods a save holds the state of: only the game knows its mods.
        (
            "mods",
            |v| v["mods"][0]["mod"] = json!("other"),
            Alone::NeedsTheGame,
        ),
        (
            "mods[0].random[1]",
            |v| v["mods"][0]["random"][1] = json!("xyz"),
            Alone::Refuses,
        ),
        (
            "mods[0].storage[1][0]",
            |v| v["mods"][0]["storage"] = json!([["z", 1], ["a", 2]]),
            Alone::Refuses,
        ),
        (
            "mods[0].storage[0][1]",
            |v| v["mods"][0]["storage"] = json!([["a", null]]),
            Alone::Refuses,
        ),
    ];
    for (where_, mutate, alone) in mutations {
        let mut bad = saved.clone();
        mutate(&mut bad);
        let bad_path = dir.path().join("bad.save.json");
        std::fs::write(&bad_path, bad.to_string()).unwrap();
        let mut target = stateful_game(dir.path());
        run(&mut target, &[], 2);
        let e = refused_alike(&mut target, &bad_path, alone);
        assert!(
            e.contains(&format!("{where_}: ")) || e.contains(&format!("{where_}[")),
            "{where_}: {e}"
        );
    }
}

#[test]
fn a_lua_on_chunk_callback_hears_what_a_load_changed_with_restored_true() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("watch.lua"),
        "streaming.onChunk(function(c, loaded, restored) log(c.x, c.z, loaded, restored) end)",
    )
    .unwrap();
    let scene = json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 0, "budgetMs": 2 })),
        "mods": ["watch.lua"],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    let path = dir.path().join("w.save.json");
    let mut g = game_in(&scene, dir.path());
    run(&mut g, &[], 1);
    g.save(&path).unwrap();
    run(
        &mut g,
        &[json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 200, "z": 8}})],
        2,
    );
    g.take_mod_log();
    g.load(&path).unwrap();
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert_eq!(log, ["6\t0\tfalse\ttrue", "0\t0\ttrue\ttrue"]);
    run(
        &mut g,
        &[json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 40, "z": 8}})],
        2,
    );
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert_eq!(log, ["1\t0\ttrue\tfalse"], "a tick's load is not a restore");
}

/// A game of every kit that saves: streaming with two LOD levels and look-ahead, terrain
/// (commitLatency 3), nav (maxNodes 4096) with two agents, a ticket holding the agents' ground
/// while the hero drives away. Saved at tick 12 with chunks and blocks in flight and built, a
/// held path and look-ahead's history.
fn every_kit_scene() -> Value {
    json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 2, "budgetMs": 6,
                "lod": [ { "step": 2, "radius": 4 }, { "step": 4, "radius": 8 } ],
                "lodBudget": 6, "lookAheadTicks": 2 } },
            { "id": "world.terrain", "config": { "seed": 3, "cellsPerChunk": 8,
                "commitLatency": 3, "workers": 1 } },
            { "id": "world.nav", "config": { "maxNodes": 4096 } }
        ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } },
            { "id": "a1", "tags": ["agent"], "position": { "x": 2, "z": 2 },
              "data": { "goal": { "x": 50, "z": 10 } } },
            { "id": "a2", "tags": ["agent"], "position": { "x": 30, "z": 30 },
              "data": { "goal": { "x": -20, "z": 20 } } }
        ]
    })
}

fn every_kit_save(dir: &Path) -> Value {
    let mut g = game_in(&every_kit_scene(), dir);
    let mut lines = vec![json!({"tick": 1, "do": "request", "id": "home",
        "at": {"x": 16, "z": 16}, "radius": 2, "ticks": 100})];
    for t in 1..=12 {
        let x = if t <= 10 {
            16 + 2 * t
        } else {
            36 + 30 * (t - 10)
        };
        lines.push(json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": x, "z": 16}}));
    }
    run(&mut g, &lines, 12);
    let path = dir.join("good.json");
    g.save(&path).unwrap();
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A held path of `n` cells along the row z = 5 ending at the goal (-5, 5) of agent `a2`.
fn row_path(n: i64) -> Value {
    Value::Array((0..n).map(|i| json!({"x": -4 - n + i, "z": 5})).collect())
}

/// `check` and load agree on every save: one check per kit section, run by both. Every bad
/// save below is refused by a load (changing nothing), by `Game::check_save` (what `check
/// SCENE SAVE` runs) with the same message, and — unless only the game can tell — by `check`
/// of the save on its own at the same JSON path. Seen failing before the sections' checks were
/// shared: `check` alone accepted every terrain case, and load accepted the new ones.
#[test]
fn check_and_load_agree_on_every_bad_save() {
    use Alone::{NeedsTheGame, Refuses};
    let dir = tempfile::tempdir().unwrap();
    let good = every_kit_save(dir.path());
    // What the cases below rely on.
    let tick = good["tick"].as_u64().unwrap();
    assert_eq!(tick, 12);
    let terrain = &good["kits"]["world.terrain"];
    assert_eq!(terrain["inFlight"][0]["commitAt"], 14);
    assert_eq!(
        (
            &terrain["lodInFlight"][0]["level"],
            &terrain["lodInFlight"][0]["step"]
        ),
        (&json!(1), &json!(2))
    );
    assert_eq!(terrain["lodBuilt"][0]["level"], 1);
    assert_eq!(good["kits"]["world.streaming"]["history"][0]["id"], "hero");
    let nav = &good["kits"]["world.nav"];
    assert_eq!(
        (&nav["agents"][0]["id"], &nav["agents"][1]["id"]),
        (&json!("a1"), &json!("a2"))
    );
    assert_eq!(nav["agents"][1]["goal"], json!({"x": -5, "z": 5}));
    assert_eq!(nav["agents"][1]["path"].as_array().unwrap().len(), 8);

    let mut g = game_in(&every_kit_scene(), dir.path());
    let good_path = dir.path().join("good.json");
    accepted_alike(&mut g, &good_path);
    type Edit = Box<dyn Fn(&mut Value)>;
    fn t(v: &mut Value) -> &mut Value {
        &mut v["kits"]["world.terrain"]
    }
    fn s(v: &mut Value) -> &mut Value {
        &mut v["kits"]["world.streaming"]
    }
    fn n(v: &mut Value) -> &mut Value {
        &mut v["kits"]["world.nav"]
    }
    let cases: Vec<(&str, Edit, &str, Alone)> = vec![
        // world.terrain: what `check` alone answered "ok (save)" to.
        (
            "in_flight_commit_at_negative",
            Box::new(|v| t(v)["inFlight"][0]["commitAt"] = json!(-7)),
            "kits.world.terrain.inFlight[0].commitAt",
            Refuses,
        ),
        (
            "lod_built_step_3",
            Box::new(|v| t(v)["lodBuilt"][0]["step"] = json!(3)),
            "kits.world.terrain.lodBuilt[0].step",
            Refuses,
        ),
        (
            "lod_built_level_0",
            Box::new(|v| t(v)["lodBuilt"][0]["level"] = json!(0)),
            "kits.world.terrain.lodBuilt[0].level",
            Refuses,
        ),
        (
            "lod_built_level_99",
            Box::new(|v| t(v)["lodBuilt"][0]["level"] = json!(99)),
            "kits.world.terrain.lodBuilt[0].level",
            Refuses,
        ),
        (
            "lod_in_flight_step_3",
            Box::new(|v| t(v)["lodInFlight"][0]["step"] = json!(3)),
            "kits.world.terrain.lodInFlight[0].step",
            Refuses,
        ),
        // A block of another step than its level's: built from the wrong cells.
        (
            "lod_in_flight_step_64",
            Box::new(|v| t(v)["lodInFlight"][0]["step"] = json!(64)),
            "kits.world.terrain.lodInFlight[0].step",
            NeedsTheGame,
        ),
        (
            "lod_built_step_4_on_level_1",
            Box::new(|v| t(v)["lodBuilt"][0]["step"] = json!(4)),
            "kits.world.terrain.lodBuilt[0].step",
            NeedsTheGame,
        ),
        // Commit ticks: tick + 1 ..= tick + commitLatency (3 here; 64 at most).
        (
            "in_flight_commit_at_due",
            Box::new(|v| t(v)["inFlight"][0]["commitAt"] = json!(12)),
            "kits.world.terrain.inFlight[0].commitAt",
            Refuses,
        ),
        (
            "in_flight_commit_past_latency",
            Box::new(|v| t(v)["inFlight"][0]["commitAt"] = json!(16)),
            "kits.world.terrain.inFlight[0].commitAt",
            NeedsTheGame,
        ),
        (
            "in_flight_commit_past_any_latency",
            Box::new(|v| t(v)["inFlight"][0]["commitAt"] = json!(12 + 65)),
            "kits.world.terrain.inFlight[0].commitAt",
            Refuses,
        ),
        (
            "lod_in_flight_commit_at_0",
            Box::new(|v| t(v)["lodInFlight"][0]["commitAt"] = json!(0)),
            "kits.world.terrain.lodInFlight[0].commitAt",
            Refuses,
        ),
        (
            "lod_in_flight_commit_at_max",
            Box::new(|v| t(v)["lodInFlight"][0]["commitAt"] = json!(u64::MAX)),
            "kits.world.terrain.lodInFlight[0].commitAt",
            Refuses,
        ),
        (
            "lod_in_flight_commit_past_latency",
            Box::new(|v| t(v)["lodInFlight"][0]["commitAt"] = json!(16)),
            "kits.world.terrain.lodInFlight[0].commitAt",
            NeedsTheGame,
        ),
        // world.streaming: look-ahead's history, the steps of the listed blocks.
        (
            "history_of_no_entity",
            Box::new(|v| s(v)["history"][0]["id"] = json!("ghost")),
            "kits.world.streaming.history[0].id",
            Refuses,
        ),
        (
            "lod_steps_one_short",
            Box::new(|v| s(v)["lodSteps"] = json!([2])),
            "kits.world.streaming.lodSteps",
            Refuses,
        ),
        (
            "lod_steps_not_a_step",
            Box::new(|v| s(v)["lodSteps"] = json!([3, 4])),
            "kits.world.streaming.lodSteps[0]",
            Refuses,
        ),
        (
            "lod_steps_without_lod",
            Box::new(|v| {
                s(v).as_object_mut().unwrap().remove("lod");
                s(v)["lodSteps"] = json!([2, 4]);
            }),
            "kits.world.streaming.lodSteps",
            Refuses,
        ),
        // Steps the terrain's blocks were not built with.
        (
            "lod_steps_forged",
            Box::new(|v| s(v)["lodSteps"] = json!([8, 4])),
            "kits.world.terrain.lodInFlight[0].step",
            NeedsTheGame,
        ),
        // world.nav.
        (
            "nav_turn_of_no_entity",
            Box::new(|v| n(v)["turn"] = json!("ghost")),
            "kits.world.nav.turn",
            Refuses,
        ),
        (
            "nav_turn_of_no_agent",
            Box::new(|v| n(v)["turn"] = json!("hero")),
            "kits.world.nav.turn",
            Refuses,
        ),
        (
            "nav_changed_out_of_row_order",
            Box::new(|v| n(v)["changed"] = json!([{"x": 1, "z": 1}, {"x": 2, "z": 0}])),
            "kits.world.nav.changed[1]",
            Refuses,
        ),
        (
            "nav_agent_of_no_entity",
            Box::new(|v| {
                n(v)["agents"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"id": "ghost", "goal": {"x": 0, "z": 0}, "path": []}));
            }),
            "kits.world.nav.agents[2].id",
            Refuses,
        ),
        (
            "nav_path_not_ending_at_the_goal",
            Box::new(|v| n(v)["agents"][1]["goal"] = json!({"x": 0, "z": 0})),
            "kits.world.nav.agents[1].path[7]",
            Refuses,
        ),
        // A search of maxNodes 4096 holds at most 4095 cells (the default 65 536: 65 535); no
        // game's holds more than 262 143 (the most maxNodes, 262 144), which check alone tells.
        (
            "nav_path_of_200000_cells",
            Box::new(|v| n(v)["agents"][1]["path"] = row_path(200_000)),
            "kits.world.nav.agents[1].path",
            NeedsTheGame,
        ),
        (
            "nav_path_of_500000_cells",
            Box::new(|v| n(v)["agents"][1]["path"] = row_path(500_000)),
            "kits.world.nav.agents[1].path",
            Refuses,
        ),
        (
            "nav_path_one_past_max_nodes",
            Box::new(|v| n(v)["agents"][1]["path"] = row_path(4096)),
            "kits.world.nav.agents[1].path",
            NeedsTheGame,
        ),
        // The host's part: sections of no kit.
        (
            "engine_section",
            Box::new(|v| v["kits"]["game.engine"] = json!({})),
            "kits.game.engine",
            Refuses,
        ),
        (
            "unknown_kit",
            Box::new(|v| v["kits"]["world.weather"] = json!({})),
            "kits.world.weather",
            Refuses,
        ),
    ];
    for (name, edit, at, alone) in cases {
        let mut bad = good.clone();
        edit(&mut bad);
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, bad.to_string()).unwrap();
        let message = refused_alike(&mut g, &path, alone);
        assert!(
            message.contains(&format!("{name}.json: {at}: ")),
            "{name}: expected {at} in {message}"
        );
    }
    // The edges a legal game can reach are accepted all three ways.
    let edges: Vec<(&str, Edit)> = vec![
        (
            "commit_at_next_tick",
            Box::new(|v| t(v)["inFlight"][0]["commitAt"] = json!(13)),
        ),
        (
            "commit_at_latency",
            Box::new(|v| t(v)["lodInFlight"][0]["commitAt"] = json!(15)),
        ),
        (
            "nav_path_of_4095_cells",
            Box::new(|v| n(v)["agents"][1]["path"] = row_path(4095)),
        ),
        (
            "nav_changed_in_row_order",
            Box::new(|v| n(v)["changed"] = json!([{"x": 2, "z": 0}, {"x": 1, "z": 1}])),
        ),
        (
            "nav_turn_of_an_agent",
            Box::new(|v| n(v)["turn"] = json!("a2")),
        ),
        (
            "lod_steps_in_force",
            Box::new(|v| s(v)["lodSteps"] = json!([2, 4])),
        ),
    ];
    for (name, edit) in edges {
        let mut edge = good.clone();
        edit(&mut edge);
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, edge.to_string()).unwrap();
        accepted_alike(&mut g, &path);
    }
}

/// A level's step changed between two ticks (a mod's `setLod`; here the service a mod calls):
/// its loaded blocks, of the old step, stay until the next tick releases them. A save made then
/// records the step they were planned with (`lodSteps`: written only then), the terrain's
/// blocks are checked against it, and the loaded game continues exactly as the uninterrupted
/// one. Seen failing before `lodSteps`: the load took the blocks for blocks of the new step and
/// the runs parted at the first tick (a `world.lod.loaded` where a `world.lod.unloaded` was
/// due).
#[test]
fn a_save_made_while_blocks_of_an_old_step_are_loaded_continues_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let scene = json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 2, "budgetMs": 24,
                "lod": [ { "step": 2, "radius": 6 } ], "lodBudget": 4 } },
            { "id": "world.terrain", "config": { "seed": 1, "cellsPerChunk": 8, "commitLatency": 2 } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    });
    let mut g = game_in(&scene, dir.path());
    run(&mut g, &[], 6);
    let lod: world_streaming::kits::streaming::Overrides =
        serde_json::from_value(json!({ "lod": [ { "step": 4, "radius": 12 } ] })).unwrap();
    g.streaming()
        .unwrap()
        .set(&world_streaming::host::ModId::new("m"), lod);
    let path = dir.path().join("mid-change.json");
    g.save(&path).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["kits"]["world.streaming"]["lodSteps"], json!([2]));
    let terrain = &doc["kits"]["world.terrain"];
    assert!(terrain["lodInFlight"][0]["step"] == 2 && terrain["lodBuilt"][0]["step"] == 2);
    let skip = g.engine().events().len();
    run(&mut g, &[], 30);
    let whole = events_from(&g, skip);
    assert!(whole.iter().any(|e| e.contains("world.lod.unloaded")));
    let mut fresh = game_in(&scene, dir.path());
    accepted_alike(&mut fresh, &path);
    let skip = fresh.engine().events().len();
    run(&mut fresh, &[], 30);
    assert_eq!(events_from(&fresh, skip), whole);
    // The blocks are checked against the recorded step: the step in force is not theirs.
    let mut forged = doc.clone();
    forged["kits"]["world.streaming"]
        .as_object_mut()
        .unwrap()
        .remove("lodSteps");
    let bad = dir.path().join("no-lod-steps.json");
    std::fs::write(&bad, forged.to_string()).unwrap();
    let mut other = game_in(&scene, dir.path());
    let message = refused_alike(&mut other, &bad, Alone::NeedsTheGame);
    assert!(
        message.contains("kits.world.terrain.lodInFlight[0].step: expected 4 (the step level 1's blocks are planned with), got 2"),
        "{message}"
    );
}

/// Every leaf of `v` as a JSON pointer, in document order.
fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| {
            leaves(
                v,
                format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                out,
            )
        }),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| leaves(v, format!("{at}/{i}"), out)),
        _ => out.push(at),
    }
}

/// Random edits of a real save (every kit's section): wherever `check` on its own refuses one,
/// loading it refuses it with the same message; it never refuses one the load takes; and
/// `Game::check_save` answers exactly as the load does. 300 saves, each with one to three
/// leaves set to a value a forger would try. (Seen failing on a first version that checked a
/// section's hashes and steps between its other keys: one edit made two problems, and check
/// alone and the load named different ones.)
#[test]
fn check_alone_never_refuses_what_a_load_takes_and_check_save_is_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let good = every_kit_save(dir.path());
    let mut paths = Vec::new();
    leaves(&good, String::new(), &mut paths);
    let mut g = game_in(&every_kit_scene(), dir.path());
    let mut rng = Rng(41);
    let (mut refused_both, mut refused_by_load_only, mut taken) = (0, 0, 0);
    for case in 0..300 {
        let mut bad = good.clone();
        let mut what = format!("edit {case}:");
        for _ in 0..=rng.below(3) {
            let pointer = &paths[rng.below(paths.len() as u64) as usize];
            let leaf = bad.pointer_mut(pointer).unwrap();
            let n = leaf.as_i64();
            *leaf = match rng.below(9) {
                0 => json!(0),
                1 => json!(-1),
                2 => json!(u64::MAX),
                3 => json!(n.map_or(1, |n| n + 1)),
                4 => json!(n.map_or(-1, |n| n - 1)),
                5 => json!("ghost"),
                6 => Value::Null,
                7 => json!(true),
                _ => json!(n.map_or(64, |n| n.wrapping_mul(64))),
            };
            what += &format!(" {pointer} = {};", bad.pointer(pointer).unwrap());
        }
        let path = dir.path().join(format!("edit{case}.json"));
        std::fs::write(&path, bad.to_string()).unwrap();
        let alone = check_alone(&path);
        let checked = g.check_save(&path).map_err(|e| e.to_string());
        let loaded = g.load(&path);
        assert_eq!(
            checked,
            loaded.as_ref().map(|_| ()).map_err(|e| e.to_string()),
            "{what}"
        );
        match (alone, loaded) {
            (Err(a), Err(l)) => {
                assert_eq!(a.to_string(), l.to_string(), "{what}");
                refused_both += 1;
            }
            (Err(a), Ok(())) => panic!("{what}: check alone refused a save the load took: {a}"),
            (Ok(()), Err(_)) => refused_by_load_only += 1,
            (Ok(()), Ok(())) => {
                taken += 1;
                g.load(&dir.path().join("good.json")).unwrap();
            }
        }
    }
    // The edits reach all three outcomes.
    assert!(
        refused_both > 50 && refused_by_load_only > 0 && taken > 10,
        "{refused_both} refused by both, {refused_by_load_only} by the load only, {taken} taken"
    );
}
