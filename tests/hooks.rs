//! Cancellable hooks answered by JSON and Lua mods, and held refusals
//! (docs/reference/hooks.md#held-refusals).

mod common;

use common::*;
use serde_json::{json, Value};
use world_streaming::game::Game;

fn repo_mod(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("mods")
            .join(name),
    )
    .unwrap()
}

/// A game whose mods are the given (file name, text) pairs, in mod order.
fn with_mods(config: Value, mods: &[(&str, String)]) -> (Game, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in mods {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let scene = json!({
        "kits": kits(config),
        "mods": mods.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    });
    (game_in(&scene, dir.path()), dir)
}

fn to(t: u64, x: f64) -> Value {
    json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": x, "z": 16}})
}

fn keep_home_drive(mod_file: (&str, String)) -> Game {
    let (mut g, _dir) = with_mods(
        json!({ "chunkSize": 32, "radius": 1, "budgetMs": 9 }),
        &[mod_file],
    );
    run(
        &mut g,
        &[
            to(3, 500.0),
            to(6, 900.0),
            to(9, 48.0),
            to(12, 700.0),
            json!({"tick": 15, "do": "leave"}),
        ],
        16,
    );
    g
}

fn home_asks(g: &Game) -> Vec<(u64, String)> {
    g.engine()
        .events()
        .iter()
        .filter(|e| e.data["x"] == 0 && e.data["z"] == 0)
        .map(|e| (e.tick, e.event.to_string()))
        .collect()
}

#[test]
fn keep_home_keeps_chunk_0_0_and_is_asked_again_only_after_coming_back() {
    let g = keep_home_drive(("keep_home.json", repo_mod("keep_home.json")));
    // Loaded at tick 1; refused at tick 3 (held, not asked again while far at tick 6);
    // the refusal lapses at tick 9 (back within radius + 1); asked and refused again at 12;
    // leaving the scene releases it without asking.
    assert_eq!(
        home_asks(&g),
        [
            (1, "world.chunk.loaded".to_owned()),
            (15, "world.chunk.unloaded".to_owned())
        ]
    );
    let s = g.streaming().unwrap();
    assert!(s.refusals().is_empty(), "leaving drops every refusal");
}

#[test]
fn the_unload_hook_is_asked_exactly_at_the_moments_of_the_spec() {
    // A Rust handler that records every ask and cancels chunk (0,0), registered as a mod would be.
    use std::cell::RefCell;
    use std::rc::Rc;
    use world_streaming::host::{Cancel, HookAnswer, HookArgs, HookHandler, ModId};
    struct Spy(Rc<RefCell<Vec<(i64, i64)>>>);
    impl HookHandler for Spy {
        fn ask(&self, a: &HookArgs<'_>) -> HookAnswer {
            let c = (a.int("x").unwrap(), a.int("z").unwrap());
            self.0.borrow_mut().push(c);
            Ok((c == (0, 0)).then(|| Cancel {
                by: ModId::new("spy"),
                reason: "home".into(),
            }))
        }
    }
    let mut g = game(&json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 1, "budgetMs": 9 })),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    }));
    let asks = Rc::new(RefCell::new(Vec::new()));
    g.engine_mut()
        .hooks_mut()
        .register("world.chunk.unload", Box::new(Spy(asks.clone())))
        .unwrap();
    let home = |asks: &Rc<RefCell<Vec<(i64, i64)>>>| {
        asks.borrow().iter().filter(|c| **c == (0, 0)).count()
    };
    run(&mut g, &[to(3, 500.0)], 3);
    assert_eq!(home(&asks), 1, "asked when it fell out of range");
    run(&mut g, &[to(6, 900.0)], 8);
    assert_eq!(home(&asks), 1, "not asked again while out of range");
    run(&mut g, &[to(9, 48.0)], 10);
    assert_eq!(
        home(&asks),
        1,
        "coming back within radius + 1 drops the refusal"
    );
    assert!(g.streaming().unwrap().refusals().is_empty());
    run(&mut g, &[to(11, 700.0)], 11);
    assert_eq!(home(&asks), 2, "asked again when it falls out again");
    run(&mut g, &[json!({"tick": 12, "do": "leave"})], 12);
    assert_eq!(home(&asks), 2, "leaving releases it without asking");
    assert!(g.streaming().unwrap().loaded().is_empty());
}

#[test]
fn a_load_refusal_spends_the_load_is_not_pending_and_is_asked_again_only_when_wanted_anew() {
    let no_origin = r#"{"id": "no_origin", "hook": "world.chunk.load", "match": {"x": 0, "z": 0}, "cancel": true, "reason": "mine"}"#;
    let (mut g, _dir) = with_mods(
        json!({ "chunkSize": 32, "radius": 1, "budgetMs": 2 }),
        &[("no_origin.json", no_origin.into())],
    );
    run(&mut g, &[], 1);
    let s = g.streaming().unwrap();
    // Tick 1: (0,0) refused (its load spent), only (0,-1) loaded.
    assert_eq!(s.loaded(), [c(0, -1)]);
    assert!(!s.pending().contains(&c(0, 0)));
    assert_eq!(s.pending().len(), 7);
    let r = &s.refusals()[0];
    assert_eq!(
        (r.x, r.z, r.hook.as_str(), r.by.as_str(), r.reason.as_str()),
        (0, 0, "world.chunk.load", "no_origin", "mine")
    );
    run(&mut g, &[], 6);
    assert!(!s.is_loaded(c(0, 0)), "not asked again while wanted");
    assert_eq!(s.loaded().len(), 8);
    // Leaving the wanted square drops the refusal; wanted anew, it is asked (and refused) again.
    run(&mut g, &[to(7, 80.0)], 7);
    assert!(s.refusals().is_empty());
    run(&mut g, &[to(8, 16.0)], 9);
    assert_eq!(s.refusals().len(), 1);
    // release makes it asked on the next tick (and refused again, spending a load).
    apply(&mut g, json!({"tick": 10, "do": "release", "x": 0, "z": 0}));
    assert!(s.refusals().is_empty());
    assert!(s.pending().contains(&c(0, 0)), "pending again at once");
    run(&mut g, &[], 10);
    assert_eq!(s.refusals().len(), 1);
}

#[test]
fn the_first_cancel_wins_in_mod_order() {
    let a = r#"{"id": "a", "hook": "world.chunk.load", "match": {"x": 0}, "cancel": true, "reason": "first"}"#;
    let b = r#"{"id": "b", "hook": "world.chunk.load", "cancel": true, "reason": "second"}"#;
    let (mut g, _dir) = with_mods(
        json!({ "chunkSize": 32, "radius": 0, "budgetMs": 1 }),
        &[("a.json", a.into()), ("b.json", b.into())],
    );
    run(&mut g, &[], 1);
    assert_eq!(g.streaming().unwrap().refusals()[0].by, "a");
    let (mut g, _dir) = with_mods(
        json!({ "chunkSize": 32, "radius": 0, "budgetMs": 1 }),
        &[("b.json", b.into()), ("a.json", a.into())],
    );
    run(&mut g, &[], 1);
    assert_eq!(g.streaming().unwrap().refusals()[0].by, "b");
}

#[test]
fn mods_setting_radius_and_budget_win_over_the_layer_and_the_config_and_the_last_wins() {
    let wide = r#"{"id": "wide", "set": {"radius": 3}}"#;
    let wider = r#"{"id": "wider", "set": {"radius": 2, "budgetMs": 100}}"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wide.json"), wide).unwrap();
    std::fs::write(dir.path().join("wider.json"), wider).unwrap();
    let scene = |mods: Vec<&str>| {
        json!({
            "kits": kits(json!({ "chunkSize": 32, "radius": 0, "budgetMs": 1 })),
            "mods": mods,
            "scenes": [ { "id": "s", "layers": { "world.streaming": { "radius": 1, "budgetMs": 50 } } } ],
            "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
        })
    };
    let mut g = game_in(&scene(vec![]), dir.path());
    run(&mut g, &[], 1);
    assert_eq!(
        g.streaming().unwrap().loaded().len(),
        9,
        "the layer beats the config"
    );
    let mut g = game_in(&scene(vec!["wide.json"]), dir.path());
    run(&mut g, &[], 1);
    assert_eq!(
        g.streaming().unwrap().loaded().len(),
        49,
        "a mod beats the layer (budget from the layer)"
    );
    let mut g = game_in(&scene(vec!["wide.json", "wider.json"]), dir.path());
    run(&mut g, &[], 1);
    assert_eq!(
        g.streaming().unwrap().loaded().len(),
        25,
        "the last mod in mod order wins"
    );
    assert_eq!(g.streaming().unwrap().loads_per_tick(), 100);
}

#[test]
fn keep_home_json_and_keep_home_lua_give_byte_identical_event_logs() {
    let json_run = keep_home_drive(("keep_home.json", repo_mod("keep_home.json")));
    let lua_run = keep_home_drive(("keep_home.lua", repo_mod("keep_home.lua")));
    let log = |g: &Game| -> Vec<String> {
        g.engine()
            .events()
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect()
    };
    assert!(log(&json_run).len() > 20);
    assert_eq!(log(&lua_run), log(&json_run));
    // And the refusal they hold mid-drive is the same.
    let mid = |file: (&str, String)| {
        let (mut g, _dir) = with_mods(
            json!({ "chunkSize": 32, "radius": 1, "budgetMs": 9 }),
            &[file],
        );
        run(&mut g, &[to(3, 500.0)], 4);
        g.streaming().unwrap().refusals()
    };
    let a = mid(("keep_home.json", repo_mod("keep_home.json")));
    assert_eq!(a, mid(("keep_home.lua", repo_mod("keep_home.lua"))));
    assert_eq!(
        (a[0].by.as_str(), a[0].reason.as_str()),
        ("keep_home", "home")
    );
}

#[test]
fn the_first_cancel_wins_across_a_json_and_a_lua_mod() {
    let json_mod = r#"{"id": "json_first", "hook": "world.chunk.load", "match": {"x": 0, "z": 0}, "cancel": true, "reason": "json"}"#;
    let lua_mod =
        "on('world.chunk.load', function(c) if c.x == 0 then return cancel('lua') end end)";
    let config = json!({ "chunkSize": 32, "radius": 1, "budgetMs": 9 });
    let (mut g, _dir) = with_mods(
        config.clone(),
        &[("a.json", json_mod.into()), ("b.lua", lua_mod.into())],
    );
    run(&mut g, &[], 1);
    let by: Vec<(i64, i64, String)> = g
        .streaming()
        .unwrap()
        .refusals()
        .into_iter()
        .map(|r| (r.x, r.z, r.by))
        .collect();
    assert_eq!(
        by,
        [
            (0, -1, "b".into()),
            (0, 0, "json_first".into()),
            (0, 1, "b".into())
        ]
    );
    let (mut g, _dir) = with_mods(
        config,
        &[("b.lua", lua_mod.into()), ("a.json", json_mod.into())],
    );
    run(&mut g, &[], 1);
    let by: Vec<String> = g
        .streaming()
        .unwrap()
        .refusals()
        .into_iter()
        .map(|r| r.by)
        .collect();
    assert_eq!(
        by,
        ["b", "b", "b"],
        "the Lua mod comes first now and wins (0,0) too"
    );
}

#[test]
fn a_lua_mod_setting_the_radius_obeys_the_precedence_and_the_next_tick_rule() {
    let lua = "on('world.chunk.load', function(c) if c.x == 0 and c.z == 0 then streaming.setRadius(2) end end)";
    let layer_scene = |dir: &std::path::Path| {
        std::fs::write(dir.join("grow.lua"), lua).unwrap();
        json!({
            "kits": kits(json!({ "chunkSize": 32, "radius": 0, "budgetMs": 100 })),
            "mods": ["grow.lua"],
            "scenes": [ { "id": "s", "layers": { "world.streaming": { "radius": 1 } } } ],
            "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let mut g = game_in(&layer_scene(dir.path()), dir.path());
    run(&mut g, &[], 1);
    assert_eq!(
        g.streaming().unwrap().loaded().len(),
        9,
        "tick 1 runs with the layer's radius 1"
    );
    run(&mut g, &[], 2);
    assert_eq!(
        g.streaming().unwrap().loaded().len(),
        25,
        "the mod's radius 2 from the next tick"
    );
}

#[test]
fn after_the_first_cancel_later_handlers_are_not_asked() {
    // A JSON mod refuses (0,0); the Lua mod after it fails on every ask it gets, naming the
    // chunk. It must be asked about the 8 other chunks and never about (0,0).
    let json_mod = r#"{"id": "home", "hook": "world.chunk.load", "match": {"x": 0, "z": 0}, "cancel": true, "reason": "mine"}"#;
    let lua_mod = "on('world.chunk.load', function(c) error('asked ' .. c.x .. ' ' .. c.z) end)";
    let asked = |g: &Game| -> Vec<String> {
        g.engine()
            .events()
            .iter()
            .filter(|e| e.event == "mod.error")
            .map(|e| {
                let m = e.data["message"].as_str().unwrap();
                m[m.find("asked ").expect(m)..].to_owned()
            })
            .collect()
    };
    let config = json!({ "chunkSize": 32, "radius": 1, "budgetMs": 9 });
    let (mut g, _dir) = with_mods(
        config.clone(),
        &[("a.json", json_mod.into()), ("b.lua", lua_mod.into())],
    );
    run(&mut g, &[], 1);
    // Nearest-first from (16, 16), the centre of (0,0): the four sides, then the four corners.
    assert_eq!(
        asked(&g),
        [
            "asked 0 -1",
            "asked -1 0",
            "asked 1 0",
            "asked 0 1",
            "asked -1 -1",
            "asked 1 -1",
            "asked -1 1",
            "asked 1 1"
        ]
    );
    assert_eq!(g.streaming().unwrap().loaded().len(), 8);
    // The other way round, the Lua mod is asked first about every chunk, (0,0) included.
    let (mut g, _dir) = with_mods(
        config,
        &[("b.lua", lua_mod.into()), ("a.json", json_mod.into())],
    );
    run(&mut g, &[], 1);
    assert_eq!(asked(&g).len(), 9);
    assert_eq!(asked(&g)[0], "asked 0 0");
}
