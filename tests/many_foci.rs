//! docs/reference/streaming.md, rule by rule, with hand-computed expectations: several players,
//! preload tickets, readiness, the resident cap and the per-mod refusal cap.

mod common;

use std::path::PathBuf;

use common::{apply, c, chunk_events, game, game_in, run};
use serde_json::{json, Value};
use world_streaming::game::Game;

/// A scene: bounded-free ground, `config` for the streaming kit, these entities.
fn scene(config: Value, entities: Value) -> Value {
    json!({
        "kits": common::kits(config),
        "scenes": [{ "id": "main" }],
        "entities": entities,
    })
}

fn player(id: &str, x: f64, z: f64) -> Value {
    json!({ "id": id, "tags": ["player"], "position": { "x": x, "z": z } })
}

fn loaded(g: &Game) -> Vec<(i64, i64)> {
    g.streaming()
        .unwrap()
        .loaded()
        .iter()
        .map(|c| (c.x, c.z))
        .collect()
}

fn var(g: &Game, name: &str) -> Value {
    g.engine().variables().get(name).cloned().unwrap()
}

/// A directory with these mod files, for scenes that list them.
fn mods_dir(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ws-many-foci-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

#[test]
fn two_players_apart_each_get_their_square_and_the_first_is_the_focus() {
    let mut g = game(&scene(
        json!({ "focus": "players", "radius": 0, "budgetMs": 10 }),
        json!([player("a", 16.0, 16.0), player("b", 176.0, 16.0)]),
    ));
    run(&mut g, &[], 1);
    // Both chunk centres are at distance 0 from their focus: ties go by z, then x.
    assert_eq!(
        chunk_events(&g, "world.chunk.loaded"),
        [(1, 0, 0), (1, 5, 0)]
    );
    let state = serde_json::to_value(g.state()).unwrap();
    assert_eq!(
        state["foci"],
        json!([{ "x": 16, "z": 16 }, { "x": 176, "z": 16 }])
    );
    assert_eq!(state["focus"], json!({ "x": 16, "z": 16 }));
}

#[test]
fn with_focus_player_only_the_first_player_counts() {
    let mut g = game(&scene(
        json!({ "radius": 0, "budgetMs": 10 }),
        json!([player("a", 16.0, 16.0), player("b", 176.0, 16.0)]),
    ));
    run(&mut g, &[], 1);
    assert_eq!(loaded(&g), [(0, 0)]);
}

#[test]
fn two_players_together_want_the_union_nearest_first_by_the_closer_focus() {
    // a at chunk (0,0), b at chunk (1,0), radius 1: the union is x -1..=2, z -1..=1 (12 chunks).
    let mut g = game(&scene(
        json!({ "focus": "players", "radius": 1, "budgetMs": 3 }),
        json!([player("a", 8.0, 8.0), player("b", 60.0, 8.0)]),
    ));
    run(&mut g, &[], 1);
    // Keys (the closer focus that wants the chunk): (0,0) from a: 8²+8² = 128; (1,0) from b:
    // 12²+8² = 208 (from a it would be 40²+8² = 1664); (2,0) from b: 20²+8² = 464; (0,-1) from
    // a: 8²+24² = 640; (1,-1) from b: 12²+24² = 720.
    assert_eq!(
        chunk_events(&g, "world.chunk.loaded"),
        [(1, 0, 0), (1, 1, 0), (1, 2, 0)]
    );
    assert_eq!(var(&g, "world.chunks.pending"), json!(9));
    run(&mut g, &[], 4);
    assert_eq!(loaded(&g).len(), 12);
    // b walks away east: the chunks only a keeps stay, those b alone kept go.
    run(
        &mut g,
        &[json!({"tick": 5, "do": "move", "entity": "b", "to": {"x": 200, "z": 8}})],
        5,
    );
    // b's chunk is (6,0); a keeps x -2..=2 (ring <= 2): nothing of the old union is due.
    assert!(chunk_events(&g, "world.chunk.unloaded").is_empty());
    run(
        &mut g,
        &[json!({"tick": 6, "do": "move", "entity": "a", "to": {"x": -200, "z": 8}})],
        6,
    );
    // a at chunk (-7,0): x -1..=2 are > 2 rings from both a and b (b keeps x 4..=8).
    let unloaded: Vec<(i64, i64)> = chunk_events(&g, "world.chunk.unloaded")
        .into_iter()
        .map(|(_, x, z)| (x, z))
        .collect();
    assert_eq!(
        unloaded,
        [
            (-1, -1),
            (0, -1),
            (1, -1),
            (2, -1),
            (-1, 0),
            (0, 0),
            (1, 0),
            (2, 0),
            (-1, 1),
            (0, 1),
            (1, 1),
            (2, 1)
        ]
    );
}

#[test]
fn anchors_are_players_in_spawn_order_then_the_controlled_character_once() {
    let mut g = game(&json!({
        "kits": common::kits(json!({ "focus": "players", "radius": 0 })),
        "scenes": [{ "id": "main" }],
        "entities": [
            { "id": "pilot", "position": { "x": 400, "z": 0 } },
            player("b", 100.0, 0.0),
            { "id": "car", "tags": ["vehicle"], "position": { "x": 300, "z": 0 } },
            { "id": "a", "tags": ["player"], "position": { "x": 0, "z": 0 }, "rides": "car" }
        ],
        "control": "pilot",
    }));
    run(&mut g, &[], 1);
    let foci = serde_json::to_value(g.state()).unwrap()["foci"].clone();
    assert_eq!(
        foci,
        json!([{ "x": 100, "z": 0 }, { "x": 300, "z": 0 }, { "x": 400, "z": 0 }]),
        "b, then a (riding the car), then the controlled pilot"
    );
    // A controlled entity tagged player keeps its spawn-order place and is listed once.
    apply(&mut g, json!({"tick": 2, "do": "control", "entity": "b"}));
    run(&mut g, &[], 2);
    let foci = serde_json::to_value(g.state()).unwrap()["foci"].clone();
    assert_eq!(foci, json!([{ "x": 100, "z": 0 }, { "x": 300, "z": 0 }]));
    // No anchor: the last player.moved is the one focus.
    for id in ["a", "b"] {
        apply(
            &mut g,
            json!({"tick": 3, "do": "untag", "entity": id, "tag": "player"}),
        );
    }
    apply(&mut g, json!({"tick": 3, "do": "control", "entity": null}));
    apply(
        &mut g,
        json!({"tick": 3, "do": "player.moved", "at": {"x": -50, "z": 0}}),
    );
    run(&mut g, &[], 3);
    let foci = serde_json::to_value(g.state()).unwrap()["foci"].clone();
    assert_eq!(foci, json!([{ "x": -50, "z": 0 }]));
}

fn ticket_scene() -> Value {
    scene(
        json!({ "radius": 0, "budgetMs": 10 }),
        json!([player("hero", 16.0, 16.0)]),
    )
}

#[test]
fn a_ticket_counts_in_exactly_its_ticks_and_is_ready_once() {
    let mut g = game(&ticket_scene());
    run(
        &mut g,
        &[
            json!({"tick": 2, "do": "request", "id": "tp", "at": {"x": 1000, "z": 16}, "radius": 0, "ticks": 2}),
        ],
        1,
    );
    assert_eq!(loaded(&g), [(0, 0)]);
    run(
        &mut g,
        &[
            json!({"tick": 2, "do": "request", "id": "tp", "at": {"x": 1000, "z": 16}, "radius": 0, "ticks": 2}),
        ],
        2,
    );
    // Counts in ticks 2 and 3: loaded on tick 2, ready at the end of tick 2.
    assert_eq!(loaded(&g), [(0, 0), (31, 0)]);
    assert_eq!(
        common::events_named(&g, "world.ticket.ready"),
        [(2, json!({"id": "tp"}))]
    );
    let state = serde_json::to_value(g.state()).unwrap();
    assert_eq!(
        state["tickets"],
        json!([{ "id": "tp", "x": 1000, "z": 16, "radius": 0, "ticksLeft": 1 }])
    );
    assert_eq!(
        state["foci"],
        json!([{ "x": 16, "z": 16 }, { "x": 1000, "z": 16 }])
    );
    run(&mut g, &[], 3);
    assert!(
        g.tickets().is_empty(),
        "removed at the end of its last tick (3)"
    );
    assert_eq!(
        loaded(&g),
        [(0, 0), (31, 0)],
        "still loaded: released on tick 4"
    );
    run(&mut g, &[], 4);
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(4, 31, 0)]);
    assert_eq!(
        common::events_named(&g, "world.ticket.ready").len(),
        1,
        "announced once"
    );
}

#[test]
fn the_ready_event_comes_after_the_ticks_other_events_and_a_replacement_is_new() {
    let mut g = game(&ticket_scene());
    run(
        &mut g,
        &[
            json!({"tick": 1, "do": "request", "id": "tp", "at": {"x": 1000, "z": 16}, "radius": 0, "ticks": 100}),
            json!({"tick": 3, "do": "request", "id": "tp", "at": {"x": -1000, "z": 16}, "radius": 0, "ticks": 100}),
        ],
        3,
    );
    let names: Vec<(u64, String)> = g
        .engine()
        .events()
        .iter()
        .map(|e| (e.tick, e.event.to_string()))
        .collect();
    assert_eq!(
        names,
        [
            (1, "world.chunk.loaded".to_owned()),
            (1, "world.chunk.loaded".to_owned()),
            (1, "world.ticket.ready".to_owned()),
            (3, "world.chunk.unloaded".to_owned()),
            (3, "world.chunk.loaded".to_owned()),
            (3, "world.ticket.ready".to_owned()),
        ],
        "the replaced ticket's chunk goes, the new one's comes, and it is announced anew"
    );
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(3, 31, 0)]);
    assert_eq!(chunk_events(&g, "world.chunk.loaded")[2], (3, -32, 0));
}

#[test]
fn drop_removes_a_ticket_at_once_and_an_unknown_id_does_nothing() {
    let mut g = game(&ticket_scene());
    run(
        &mut g,
        &[
            json!({"tick": 1, "do": "request", "id": "tp", "at": {"x": 1000, "z": 16}, "radius": 0, "ticks": 100}),
            json!({"tick": 2, "do": "drop", "ticket": "tp"}),
            json!({"tick": 2, "do": "drop", "ticket": "nobody"}),
        ],
        2,
    );
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(2, 31, 0)]);
    assert!(g.tickets().is_empty());
}

#[test]
fn a_ticket_outside_the_ground_is_ready_at_the_end_of_its_first_tick() {
    let mut g = game(&json!({
        "kits": [
            { "id": "game.engine" },
            { "id": "world.ground", "config": { "bounds": { "minX": 0, "minZ": 0, "maxX": 64, "maxZ": 64 } } },
            { "id": "world.streaming", "config": { "radius": 0 } }
        ],
        "scenes": [{ "id": "main" }],
        "entities": [player("hero", 16.0, 16.0)],
    }));
    run(
        &mut g,
        &[
            json!({"tick": 1, "do": "request", "id": "far", "at": {"x": 5000, "z": 16}, "radius": 1, "ticks": 5}),
        ],
        1,
    );
    assert_eq!(
        common::events_named(&g, "world.ticket.ready"),
        [(1, json!({"id": "far"}))]
    );
}

#[test]
fn a_mod_ticket_counts_from_the_next_tick() {
    let dir = mods_dir(
        "mod-ticket",
        &[(
            "tp.lua",
            r#"on("world.chunk.load", function(c)
                 if c.x == 0 and c.z == 0 then streaming.request("tp", {x = 1000, z = 16}, 0, 1) end
               end)"#,
        )],
    );
    let mut s = ticket_scene();
    s["mods"] = json!(["tp.lua"]);
    let mut g = game_in(&s, &dir);
    run(&mut g, &[], 1);
    assert_eq!(
        loaded(&g),
        [(0, 0)],
        "requested during tick 1: not in tick 1's plan"
    );
    assert_eq!(g.tickets().len(), 1);
    assert_eq!(g.tickets()[0].ticks_left, 1);
    run(&mut g, &[], 2);
    assert_eq!(loaded(&g), [(0, 0), (31, 0)]);
    assert!(
        g.tickets().is_empty(),
        "one tick: removed at the end of tick 2"
    );
}

#[test]
fn progress_is_ready_over_wanted_and_run_until_ready_gates_on_the_anchor() {
    let mut g = game(&scene(
        json!({ "radius": 1, "budgetMs": 2 }),
        json!([player("hero", 8.0, 8.0)]),
    ));
    assert_eq!(
        var(&g, "world.chunks.progress"),
        json!(0.0),
        "0 before tick 1"
    );
    run(&mut g, &[], 1);
    assert_eq!(var(&g, "world.chunks.progress"), json!(2.0 / 9.0));
    assert!(!g.ready("hero"));
    let ticks = g.run_until_ready("hero", 100).unwrap();
    assert_eq!(ticks, 4, "9 chunks at 2 a tick: ready after tick 5");
    assert!(g.ready("hero"));
    assert_eq!(var(&g, "world.chunks.progress"), json!(1.0));
    assert!(!g.ready("nobody"));
    let err = game(&scene(
        json!({ "radius": 1 }),
        json!([player("hero", 8.0, 8.0)]),
    ))
    .run_until_ready("ghost", 3)
    .unwrap_err();
    assert_eq!(err.to_string(), "ghost was not ready after 3 ticks");
}

#[test]
fn over_capacity_fails_before_mutation_with_one_event() {
    let mut g = game(&scene(
        json!({ "radius": 1, "maxLoaded": 8 }),
        json!([player("hero", 8.0, 8.0)]),
    ));
    run(&mut g, &[], 3);
    assert!(loaded(&g).is_empty(), "9 wanted > 8: nothing loads");
    assert_eq!(
        common::events_named(&g, "world.streaming.capacity"),
        [(1, json!({"wanted": 9, "cap": 8}))],
        "once, when the state starts"
    );
    assert_eq!(var(&g, "world.chunks.overCapacity"), json!(1));
    assert_eq!(var(&g, "world.chunks.pending"), json!(9));
}

#[test]
fn load_refusals_do_not_count_against_the_cap() {
    let dir = mods_dir(
        "cap-refused",
        &[(
            "no.json",
            r#"{"id": "no", "hook": "world.chunk.load", "match": {"x": 1, "z": 1}, "cancel": true}"#,
        )],
    );
    let mut s = scene(
        json!({ "radius": 1, "maxLoaded": 8, "budgetMs": 9 }),
        json!([player("hero", 8.0, 8.0)]),
    );
    s["scenes"] = json!([{ "id": "main", "layers": { "world.streaming": { "maxLoaded": null } } }]);
    s["mods"] = json!(["no.json"]);
    let mut g = game_in(&s, &dir);
    run(&mut g, &[], 1);
    assert_eq!(loaded(&g).len(), 8, "the layer's null lifts the cap");
    // With the cap of 8: 9 wanted, one held by a load refusal: 8 fit.
    let mut s2 = s.clone();
    s2["scenes"] = json!([{ "id": "main" }]);
    let mut g = game_in(&s2, &dir);
    run(&mut g, &[], 1);
    // Tick 1 has no refusal yet: 9 > 8, over capacity; nothing is asked, so it stays so.
    assert!(loaded(&g).is_empty());
}

/// Radius 0 (keeps ring 1), cap 2: the player goes (1,0) → (0,0) → (0,1).
fn lru_scene(mods: &[&str]) -> Value {
    let mut s = scene(
        json!({ "radius": 0, "maxLoaded": 2 }),
        json!([player("hero", 48.0, 16.0)]),
    );
    s["mods"] = json!(mods);
    s
}

fn lru_inputs() -> Vec<Value> {
    vec![
        json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 16, "z": 16}}),
        json!({"tick": 3, "do": "move", "entity": "hero", "to": {"x": 16, "z": 48}}),
    ]
}

#[test]
fn eviction_takes_the_least_recently_wanted_chunk_not_the_first_in_row_order() {
    let mut g = game(&lru_scene(&[]));
    run(&mut g, &lru_inputs(), 3);
    // Tick 3: (1,0) was last wanted on tick 1, (0,0) on tick 2; both are in the keep band of
    // (0,1). Row order would pick (0,0); least recently wanted picks (1,0).
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(3, 1, 0)]);
    assert_eq!(loaded(&g), [(0, 0), (0, 1)]);
    let evicted_before_load: Vec<String> = g
        .engine()
        .events()
        .iter()
        .filter(|e| e.tick == 3)
        .map(|e| e.event.to_string())
        .collect();
    assert_eq!(
        evicted_before_load,
        ["world.chunk.unloaded", "world.chunk.loaded"]
    );
}

#[test]
fn a_cancelled_eviction_holds_its_refusal_and_the_next_candidate_is_tried() {
    let dir = mods_dir(
        "lru-cancel",
        &[(
            "keep.json",
            r#"{"id": "keep", "hook": "world.chunk.unload", "match": {"x": 1, "z": 0}, "cancel": true, "reason": "mine"}"#,
        )],
    );
    let mut g = game_in(&lru_scene(&["keep.json"]), &dir);
    run(&mut g, &lru_inputs(), 3);
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(3, 0, 0)]);
    assert_eq!(loaded(&g), [(1, 0), (0, 1)]);
    let refusals = g.streaming().unwrap().refusals();
    assert_eq!(
        (refusals.len(), refusals[0].x, refusals[0].reason.as_str()),
        (1, 1, "mine")
    );
    // (1,0) is within ring 1 of nothing at (0,1)? ring((1,0),(0,1)) = 1: in the band, so the
    // refusal drops on tick 4 and (1,0) is an eviction candidate again.
    run(&mut g, &[], 4);
    assert!(g.streaming().unwrap().refusals().is_empty());
}

#[test]
fn with_no_candidate_left_the_tick_stops_loading() {
    let dir = mods_dir(
        "lru-none",
        &[(
            "keep.json",
            r#"{"id": "keep", "hook": "world.chunk.unload", "cancel": true}"#,
        )],
    );
    let mut g = game_in(&lru_scene(&["keep.json"]), &dir);
    run(&mut g, &lru_inputs(), 3);
    assert!(chunk_events(&g, "world.chunk.unloaded").is_empty());
    assert_eq!(
        loaded(&g),
        [(0, 0), (1, 0)],
        "(0,1) could not fit: not asked"
    );
    assert_eq!(g.streaming().unwrap().pending(), [c(0, 1)]);
}

#[test]
fn a_mod_over_its_refusal_cap_is_reported_and_the_chunk_released() {
    let dir = mods_dir(
        "refusal-cap",
        &[(
            "keep.json",
            r#"{"id": "keep", "hook": "world.chunk.unload", "cancel": true}"#,
        )],
    );
    let mut s = scene(
        json!({ "radius": 0, "maxRefusalsPerMod": 1 }),
        json!([player("hero", 16.0, 16.0)]),
    );
    s["mods"] = json!(["keep.json"]);
    let mut g = game_in(&s, &dir);
    run(
        &mut g,
        &[
            json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 16, "z": 80}}),
            json!({"tick": 3, "do": "move", "entity": "hero", "to": {"x": 16, "z": 1000}}),
        ],
        3,
    );
    // Tick 3: (0,0) and (0,2) are due in row order: the first refusal is held, the second
    // is over the cap: mod.error, then released.
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(3, 0, 2)]);
    let errors = common::events_named(&g, "mod.error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].1["mod"], "keep");
    assert_eq!(errors[0].1["hook"], "world.chunk.unload");
    assert!(errors[0].1["message"]
        .as_str()
        .unwrap()
        .contains("refusal cap"));
    let order: Vec<String> = g
        .engine()
        .events()
        .iter()
        .filter(|e| e.tick == 3)
        .map(|e| e.event.to_string())
        .collect();
    assert_eq!(order[..2], ["mod.error", "world.chunk.unloaded"]);
}

#[test]
fn bad_new_keys_and_input_lines_are_clear_errors() {
    let err = Game::from_scene_text(
        &scene(json!({ "maxLoaded": 0 }), json!([])).to_string(),
        "scene.json",
        std::path::Path::new("."),
        &world_streaming::kits::builtin_catalog(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains(
            "scene.json: kits[2].config.maxLoaded: expected null or an integer 1..=1000000, got 0"
        ),
        "{err}"
    );
    for (line, expected) in [
        (
            json!({"tick": 1, "do": "request", "id": "t", "at": {"x": 0, "z": 0}, "radius": 65, "ticks": 1}),
            "line 1: radius: expected an integer 0..=64, got 65",
        ),
        (
            json!({"tick": 1, "do": "request", "id": "t", "at": {"x": 0, "z": 0}, "radius": 1, "ticks": 0}),
            "line 1: ticks: expected an integer 1..=2147483647, got 0",
        ),
        (
            json!({"tick": 1, "do": "request", "id": "", "at": {"x": 0, "z": 0}, "radius": 1, "ticks": 1}),
            "line 1: id: expected a ticket id of 1..=64 characters, got 0 characters",
        ),
        (json!({"tick": 1, "do": "drop"}), "ticket"),
    ] {
        let err = world_streaming::files::inputs::Inputs::parse(&format!("{line}\n"), "in.jsonl")
            .unwrap_err();
        let text = err
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            text.contains("in.jsonl: line 1") && text.contains(expected),
            "{text}"
        );
    }
}

#[test]
fn the_1025th_ticket_from_an_input_stops_the_run_naming_the_line() {
    let mut g = game(&ticket_scene());
    let lines: Vec<Value> = (0..1025)
        .map(|i| json!({"tick": 1, "do": "request", "id": format!("t{i}"), "at": {"x": 0, "z": 0}, "radius": 0, "ticks": 5}))
        .collect();
    let err = g.run(&common::inputs(&lines), 1).unwrap_err().to_string();
    assert_eq!(
        err,
        "inputs.jsonl: line 1025: too many tickets: at most 1024 are held at once"
    );
}

#[test]
fn lua_mods_reach_the_round_2_api() {
    let dir = mods_dir(
        "lua-api",
        &[(
            "party.lua",
            r#"
streaming.setFocus("players")
streaming.setMaxLoaded(nil)
streaming.setMaxRefusalsPerMod(3)
local ok, err = pcall(streaming.setFocus, "everyone")
log("setFocus", ok, err)
local ok2, err2 = pcall(streaming.setMaxLoaded, 0)
log("setMaxLoaded", ok2, err2)
streaming.request("tp", {x = 1000, z = 16}, 0, 5)
on("world.chunk.load", function(c)
  if c.x == 31 then
    local t = streaming.tickets()[1]
    log("ticket", t.id, t.x, t.z, t.radius, t.ticksLeft, #streaming.foci(), streaming.ready("b"))
  end
end)
"#,
        )],
    );
    let mut s = scene(
        json!({ "radius": 0, "maxLoaded": 1 }),
        json!([player("a", 16.0, 16.0), player("b", 80.0, 16.0)]),
    );
    s["mods"] = json!(["party.lua"]);
    let mut g = game_in(&s, &dir);
    run(&mut g, &[], 1);
    let settings = g.streaming().unwrap().settings();
    assert_eq!(
        (
            settings.focus,
            settings.max_loaded,
            settings.max_refusals_per_mod
        ),
        (
            world_streaming::kits::streaming::FocusMode::Players,
            None,
            3
        )
    );
    // b's chunk (2,0) loads before (31,0) (equal keys, row order): b is ready by then.
    assert_eq!(
        loaded(&g),
        [(0, 0), (2, 0), (31, 0)],
        "two anchors and the ticket, no cap"
    );
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert_eq!(
        log,
        [
            "setFocus\tfalse\tstreaming.setFocus: expected \"player\" or \"players\", got \"everyone\"",
            "setMaxLoaded\tfalse\tstreaming.setMaxLoaded: expected null or an integer 1..=1000000, got 0",
            "ticket\ttp\t1000\t16\t0\t4\t3\ttrue",
        ]
    );
}

#[test]
fn a_one_tick_ticket_is_ready_and_gone_at_the_end_of_its_tick() {
    let mut g = game(&ticket_scene());
    run(&mut g, &[], 2);
    run(
        &mut g,
        &[
            json!({"tick": 3, "do": "request", "id": "here", "at": {"x": 20, "z": 20}, "radius": 0, "ticks": 1}),
        ],
        3,
    );
    // Its square is the hero's loaded chunk: ready at the end of tick 3, after the ready
    // check removed (ticks 3..=3), and no chunk changed.
    assert_eq!(
        common::events_named(&g, "world.ticket.ready"),
        [(3, json!({"id": "here"}))]
    );
    assert!(g.tickets().is_empty());
    assert_eq!(loaded(&g), [(0, 0)]);
}

#[test]
fn an_eviction_comes_before_the_load_hook_so_a_refused_load_has_still_evicted() {
    let dir = mods_dir(
        "evict-then-refuse",
        &[(
            "no.json",
            r#"{"id": "no", "hook": "world.chunk.load", "match": {"x": 0, "z": 1}, "cancel": true}"#,
        )],
    );
    let mut g = game_in(&lru_scene(&["no.json"]), &dir);
    run(&mut g, &lru_inputs(), 3);
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(3, 1, 0)]);
    assert_eq!(
        loaded(&g),
        [(0, 0)],
        "(0,1) refused after (1,0) was evicted for it"
    );
    let r = g.streaming().unwrap().refusals();
    assert_eq!((r.len(), r[0].hook.as_str()), (1, "world.chunk.load"));
}

#[test]
fn the_refusal_cap_holds_for_evictions_too() {
    let dir = mods_dir(
        "evict-cap",
        &[(
            "keep.json",
            r#"{"id": "keep", "hook": "world.chunk.unload", "cancel": true}"#,
        )],
    );
    let mut s = lru_scene(&["keep.json"]);
    s["kits"][2]["config"]["maxRefusalsPerMod"] = json!(0);
    let mut g = game_in(&s, &dir);
    run(&mut g, &lru_inputs(), 3);
    // The eviction of (1,0) is cancelled by a mod that may hold none: reported, then evicted.
    let errors = common::events_named(&g, "mod.error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, 3);
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(3, 1, 0)]);
    assert_eq!(loaded(&g), [(0, 0), (0, 1)]);
    assert!(g.streaming().unwrap().refusals().is_empty());
}
