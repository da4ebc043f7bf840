//! The `shape` and `vertical` keys where files and mods meet them
//! (docs/reference/config.md#shape, docs/reference/config.md#vertical): their messages, mods
//! setting them, saves of a vertical game (docs/reference/saves.md#sections-in-saves), and every
//! output unchanged when they are left out or `shape` is `"square"`.

mod common;

use common::{game, game_in, kits, run, scene_error};
use serde_json::{json, Value};

fn hero() -> Value {
    json!([{ "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } }])
}

fn drive() -> Vec<Value> {
    vec![
        json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 100, "z": 8}}),
        json!({"tick": 4, "do": "move", "entity": "hero", "to": {"x": 100, "z": -70}}),
    ]
}

/// The event log, the state and the save text of the drive with `config`.
fn outputs(config: Value) -> (Vec<String>, String, String) {
    let mut g = game(&json!({ "kits": kits(config), "entities": hero() }));
    run(&mut g, &drive(), 6);
    (
        common::event_lines(&g),
        serde_json::to_string(&g.state()).unwrap(),
        g.save_text().unwrap(),
    )
}

#[test]
fn square_written_out_is_byte_for_byte_the_shape_left_out() {
    let absent = outputs(json!({ "radius": 2 }));
    let square = outputs(json!({ "radius": 2, "shape": "square" }));
    assert_eq!(absent, square);
    assert!(absent.2.contains("\"version\": 2"), "{}", absent.2);
}

#[test]
fn bad_shape_and_vertical_values_name_their_json_path() {
    let with = |config: Value| scene_error(&json!({ "kits": kits(config), "entities": hero() }));
    assert_eq!(
        with(json!({"shape": "round"})),
        "scene.json: kits[2].config.shape: expected \"square\" or \"disc\", got \"round\""
    );
    assert_eq!(
        with(json!({"vertical": {"radius": -1}})),
        "scene.json: kits[2].config.vertical.radius: expected an integer 0..=32, got -1"
    );
    assert_eq!(
        with(json!({"vertical": {"radius": 2, "height": -4}})),
        "scene.json: kits[2].config.vertical.height: expected a finite number > 0, got -4"
    );
    let err = with(json!({"vertical": {"height": 4}}));
    assert!(
        err.starts_with("scene.json: kits[2].config.vertical.radius: missing field"),
        "{err}"
    );
    let err = with(json!({"vertical": {"radius": 1, "depth": 4}}));
    assert!(err.contains("kits[2].config.vertical"), "{err}");
    assert!(err.contains("unknown field `depth`"), "{err}");
    let err = scene_error(&json!({
        "kits": kits(json!({})),
        "entities": hero(),
        "scenes": [{ "id": "cave", "entry": {"x": 0, "z": 0},
                     "layers": { "world.streaming": { "vertical": {"radius": 40} } } }]
    }));
    assert!(
        err.contains(
            "scenes[0].layers.world.streaming.vertical.radius: expected an integer 0..=32, got 40"
        ),
        "{err}"
    );
}

#[test]
fn a_mod_setting_the_height_is_refused_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tall.json"),
        r#"{"id": "tall", "set": {"vertical": {"radius": 2, "height": 8}}}"#,
    )
    .unwrap();
    let scene = json!({
        "kits": kits(json!({"vertical": {"radius": 1}})),
        "mods": ["tall.json"],
        "entities": hero()
    });
    let err = world_streaming::game::Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        dir.path(),
        &world_streaming::kits::builtin_catalog(),
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(
        err.contains("tall.json: set.vertical.height: a mod may set only vertical.radius"),
        "{err}"
    );
}

#[test]
fn the_layer_replaces_the_config_s_vertical_and_a_mod_sets_only_its_radius() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("deep.json"),
        r#"{"id": "deep", "set": {"vertical": {"radius": 5}, "shape": "disc"}}"#,
    )
    .unwrap();
    let scene = json!({
        "kits": kits(json!({"chunkSize": 16, "vertical": {"radius": 1, "height": 4}})),
        "mods": ["deep.json"],
        "entities": hero(),
        "scenes": [
            { "id": "cave", "entry": {"x": 0, "z": 0},
              "layers": { "world.streaming": { "vertical": {"radius": 2} } } }
        ]
    });
    let g = game_in(&scene, dir.path());
    let s = g.streaming().unwrap().settings();
    assert_eq!(s.shape, world_streaming::kits::streaming::Shape::Disc);
    let v = s.vertical.unwrap();
    // The mod's radius; the layer's height left out is the chunk size, not the config's 4.
    assert_eq!((v.radius, v.height), (5, 16.0));
}

#[test]
fn a_mod_s_vertical_radius_in_a_flat_scene_changes_no_event_and_no_state() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rows.json"),
        r#"{"id": "rows", "set": {"vertical": {"radius": 3}}}"#,
    )
    .unwrap();
    let flat = |mods: Value| {
        let scene = json!({ "kits": kits(json!({"radius": 1})), "mods": mods, "entities": hero() });
        let mut g = game_in(&scene, dir.path());
        run(&mut g, &drive(), 6);
        assert_eq!(g.streaming().unwrap().settings().vertical, None);
        (
            common::event_lines(&g),
            serde_json::to_value(g.state()).unwrap(),
        )
    };
    assert_eq!(flat(json!(["rows.json"])), flat(json!([])));
}

fn vertical_scene() -> Value {
    json!({
        "kits": kits(json!({"radius": 1, "vertical": {"radius": 1, "height": 16}})),
        "entities": hero()
    })
}

#[test]
fn a_vertical_game_saves_version_4_with_every_section_s_row_and_loads_it_back() {
    let mut g = game(&vertical_scene());
    run(&mut g, &drive(), 3);
    let text = g.save_text().unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], 4);
    let s = &v["kits"]["world.streaming"];
    let loaded = s["loaded"].as_array().unwrap();
    assert!(!loaded.is_empty());
    for c in loaded.iter().chain(s["lastWanted"].as_array().unwrap()) {
        let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(&keys[..3], ["x", "y", "z"], "{c}");
    }
    let before = serde_json::to_value(g.state()).unwrap();
    let mut h = game(&vertical_scene());
    h.load_text(&text).unwrap();
    assert_eq!(serde_json::to_value(h.state()).unwrap(), before);
    assert_eq!(h.save_text().unwrap(), text, "saved again, the same bytes");
}

#[test]
fn a_save_with_section_rows_is_refused_by_a_flat_game_at_its_path_and_check_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = game(&json!({ "kits": kits(json!({"radius": 1})), "entities": hero() }));
    run(&mut g, &drive(), 3);
    let good = g.save_text().unwrap();
    let mut v: Value = serde_json::from_str(&good).unwrap();
    v["kits"]["world.streaming"]["loaded"][1]["y"] = json!(2);
    v["kits"]["world.streaming"]["lastWanted"] = json!([]);
    let bad = v.to_string();
    let before = serde_json::to_value(g.state()).unwrap();
    let err = g.load_text(&bad).unwrap_err().to_string();
    assert!(
        err.contains("kits.world.streaming.loaded[1].y: expected no section row: the game is flat"),
        "{err}"
    );
    assert_eq!(
        serde_json::to_value(g.state()).unwrap(),
        before,
        "unchanged"
    );
    let path = dir.path().join("rows.save.json");
    std::fs::write(&path, &bad).unwrap();
    let checked = g.check_save(&path).unwrap_err().to_string();
    assert!(
        checked.contains("kits.world.streaming.loaded[1].y"),
        "{checked}"
    );
    // Alone, the save may be a vertical game's.
    world_streaming::files::save::check(&v).unwrap();
    // A lastWanted row too, even 0.
    let mut v: Value = serde_json::from_str(&good).unwrap();
    v["kits"]["world.streaming"]["lastWanted"][0]["y"] = json!(0);
    let err = g.load_text(&v.to_string()).unwrap_err().to_string();
    assert!(
        err.contains("kits.world.streaming.lastWanted[0].y"),
        "{err}"
    );
    // The vertical game takes its rows.
    let mut h = game(&vertical_scene());
    run(&mut h, &drive(), 3);
    let text = h.save_text().unwrap();
    assert!(text.contains("\"y\": -1"), "rows below: {text}");
    h.load_text(&text).unwrap();
}

#[test]
fn lua_sets_the_shape_and_the_vertical_radius_and_reads_sections_with_their_row() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rows.lua"),
        r#"
streaming.setShape("disc")
streaming.setVerticalRadius(2)
local ok, err = pcall(streaming.setVerticalRadius, 33)
log(tostring(ok), err)
ok, err = pcall(streaming.isLoaded, 0, 0, 0.5)
log(tostring(ok), err)
streaming.onChunk(function(c, loaded)
  if c.x == 0 and c.z == 0 then log("on", c.x, c.y, c.z, loaded) end
end)
"#,
    )
    .unwrap();
    let mut g = game_in(
        &json!({ "kits": kits(json!({"radius": 1, "vertical": {"radius": 0}})),
                 "mods": ["rows.lua"], "entities": hero() }),
        dir.path(),
    );
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert!(
        log[0].starts_with("false\t") && log[0].contains("expected an integer 0..=32, got 33"),
        "{log:?}"
    );
    assert!(
        log[1].contains("y: expected an integer section row or nil, got a number"),
        "{log:?}"
    );
    let s = g.streaming().unwrap().settings();
    assert_eq!(s.shape, world_streaming::kits::streaming::Shape::Disc);
    assert_eq!(s.vertical.map(|v| v.radius), Some(2));
    run(&mut g, &[], 3);
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert!(
        log.iter().any(|l| l == "on\t0\t0\t0\ttrue"),
        "a section's table carries its row, 0 too: {log:?}"
    );
    g.add_mod(
        "ask.lua",
        r#"
local l = streaming.loaded()[1]
log(l.x, l.y, l.z, tostring(streaming.isLoaded(l.x, l.z, l.y)), tostring(streaming.isLoaded(l.x, l.z, 99)))
"#,
    )
    .unwrap();
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    let cols: Vec<&str> = log[0].split('\t').collect();
    assert_eq!(cols.len(), 5, "{log:?}");
    assert_eq!(&cols[3..], ["true", "false"], "{log:?}");
}

#[test]
fn lua_tables_of_a_flat_world_have_no_row() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("flat.lua"),
        r#"streaming.onChunk(function(c) if c.y ~= nil then log("row", c.y) end end)
function count() local n = 0 for _, c in ipairs(streaming.loaded()) do if c.y ~= nil then n = n + 1 end end return n end"#,
    )
    .unwrap();
    let mut g = game_in(
        &json!({ "kits": kits(json!({"radius": 1})), "mods": ["flat.lua"], "entities": hero() }),
        dir.path(),
    );
    run(&mut g, &drive(), 4);
    g.add_mod(
        "ask.lua",
        "local n = 0 for _, c in ipairs(streaming.loaded()) do if c.y ~= nil then n = n + 1 end end log(n, tostring(streaming.isLoaded(0, 0, 0)))",
    )
    .unwrap();
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert_eq!(log, ["0\tfalse"]);
}

#[test]
fn lua_columns_and_section_rows_in_a_streaming_vertical_world() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("keep.lua"),
        r#"on("world.chunk.unload", function(c) if c.y == 1 then return cancel("roof") end end)"#,
    )
    .unwrap();
    let scene = json!({
        "kits": kits(json!({"radius": 0, "budgetMs": 9, "vertical": {"radius": 1, "height": 16}})),
        "mods": ["keep.lua"], "entities": hero()
    });
    let mut g = game_in(&scene, dir.path());
    run(&mut g, &[], 2);
    let ask = r#"local c = streaming.columns()
log(#c, c[1].x, c[1].z, tostring(c[1].y), tostring(streaming.isColumnLoaded(0, 0)),
    tostring(streaming.isColumnLoaded(5, 5)), #streaming.loaded(),
    tostring(streaming.isLoaded(0, 0, 1)), tostring(streaming.isLoaded(0, 0, 2)))"#;
    g.add_mod("ask.lua", ask).unwrap();
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert_eq!(log, ["1\t0\t0\tnil\ttrue\tfalse\t3\ttrue\tfalse"]);
    // The hook saw y: the roof row is held when the hero leaves.
    run(
        &mut g,
        &[json!({"tick": 3, "do": "move", "entity": "hero", "to": {"x": 300, "z": 8}})],
        3,
    );
    let refusals = g.streaming().unwrap().refusals();
    assert_eq!(refusals.len(), 1);
    assert_eq!(
        (refusals[0].x, refusals[0].y, refusals[0].z),
        (0, Some(1), 0)
    );
    // Saved and loaded again, the same bytes; a flat game refuses the refusal's row.
    let text = g.save_text().unwrap();
    let mut h = game_in(&scene, dir.path());
    h.add_mod("ask.lua", ask).unwrap();
    h.load_text(&text).unwrap();
    assert_eq!(h.save_text().unwrap(), text);
    let mut flat = game_in(
        &json!({ "kits": kits(json!({"radius": 0, "budgetMs": 9})), "mods": ["keep.lua"],
                 "entities": hero() }),
        dir.path(),
    );
    flat.add_mod("ask.lua", ask).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let s = &mut v["kits"]["world.streaming"];
    for key in ["loaded", "lastWanted"] {
        for c in s[key].as_array_mut().unwrap() {
            c.as_object_mut().unwrap().remove("y");
        }
    }
    // A load refusal of an unloaded section: only its row is wrong for the flat game.
    s["loaded"] = json!([]);
    s["lastWanted"] = json!([]);
    s["refusals"][0]["hook"] = json!("world.chunk.load");
    let err = flat.load_text(&v.to_string()).unwrap_err().to_string();
    assert!(err.contains("kits.world.streaming.refusals[0].y"), "{err}");
}

/// The state document of a vertical game writes every section of `loaded` and `pending` with
/// its `y`, row 0 too, and every ticket with its height; a flat game's writes none
/// (docs/reference/files-and-cli.md#the-state-document).
#[test]
fn the_state_of_a_vertical_game_writes_every_row_and_every_ticket_s_height() {
    let ticket = json!({"tick": 1, "do": "request", "id": "cave", "at": {"x": 200, "y": -40, "z": 8},
                        "radius": 1, "ticks": 50});
    let mut g = game(&vertical_scene());
    run(&mut g, std::slice::from_ref(&ticket), 1);
    let state = serde_json::to_value(g.state()).unwrap();
    for key in ["loaded", "pending"] {
        let list = state[key].as_array().unwrap();
        assert!(list.iter().any(|c| c["y"] == 0), "{key}: row 0 is there");
        for c in list {
            let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(keys, ["x", "y", "z"], "{key}: {c}");
        }
    }
    let t = &state["tickets"][0];
    let keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys[..4], ["id", "x", "y", "z"], "{t}");
    assert_eq!(t["y"], -40);
    // The section the ticket wants around: row -3 of height 16.
    assert!(
        g.streaming().unwrap().pending().iter().any(|c| c.y == -3),
        "its rows are wanted"
    );
    // A flat game: no `y` anywhere in the state.
    let mut f = game(&json!({ "kits": kits(json!({"radius": 1})), "entities": hero() }));
    run(&mut f, &[ticket], 1);
    let text = serde_json::to_string(&f.state()).unwrap();
    assert!(!text.contains("\"y\""), "{text}");
}

/// A save's chunk coordinates are bounded at twice the clamp of every position's chunk (±2^53):
/// a forged far row or column is refused at its path, by a load and by `check` alike
/// (docs/reference/saves.md#sections-in-saves).
#[test]
fn a_save_s_chunk_beyond_twice_the_clamp_is_refused_at_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = game(&vertical_scene());
    run(&mut g, &drive(), 3);
    let good: Value = serde_json::from_str(&g.save_text().unwrap()).unwrap();
    let far = i64::MAX - 3;
    let cases: [(&str, Value, &str); 4] = [
        (
            "/kits/world.streaming/loaded/0/y",
            json!(far),
            "loaded[0].y",
        ),
        (
            "/kits/world.streaming/loaded/1/x",
            json!(-far),
            "loaded[1].x",
        ),
        (
            "/kits/world.streaming/loaded/2/z",
            json!((1i64 << 53) + 1),
            "loaded[2].z",
        ),
        (
            "/kits/world.streaming/refusals",
            json!([{"x": 0, "y": far, "z": 0, "hook": "world.chunk.load", "mod": "m", "reason": "r"}]),
            "refusals[0].y",
        ),
    ];
    for (pointer, value, path) in cases {
        let mut v = good.clone();
        *v.pointer_mut(pointer).unwrap() = value;
        v["kits"]["world.streaming"]["lastWanted"] = json!([]);
        v["kits"]["world.streaming"]["complete"] = Value::Null;
        let file = dir.path().join("far.save.json");
        std::fs::write(&file, v.to_string()).unwrap();
        let err = common::refused_alike(&mut g, &file, common::Alone::Refuses);
        assert!(
            err.contains(&format!(
                "kits.world.streaming.{path}: expected a chunk coordinate"
            )),
            "{path}: {err}"
        );
    }
    // The edge itself is taken: a focus clamped at 2^52 wants chunks a radius beyond it.
    let mut v = good.clone();
    v["kits"]["world.streaming"]["loaded"][0]["y"] = json!(1i64 << 53);
    v["kits"]["world.streaming"]["lastWanted"] = json!([]);
    world_streaming::files::save::check(&v).unwrap();
}

/// A LOD block is a column: a save's block with a row is refused at its path.
#[test]
fn a_save_s_lod_block_with_a_row_is_refused_at_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let scene = json!({
        "kits": kits(json!({"radius": 1, "vertical": {"radius": 1, "height": 16},
                            "lod": [{"step": 2, "radius": 4}]})),
        "entities": hero()
    });
    let mut g = game(&scene);
    run(&mut g, &drive(), 3);
    let mut v: Value = serde_json::from_str(&g.save_text().unwrap()).unwrap();
    let blocks = v["kits"]["world.streaming"]["lod"][0]
        .as_array_mut()
        .unwrap();
    assert!(!blocks.is_empty(), "{v}");
    blocks[0]["y"] = json!(1);
    let file = dir.path().join("lod.save.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let err = common::refused_alike(&mut g, &file, common::Alone::Refuses);
    assert!(
        err.contains("kits.world.streaming.lod[0][0].y: expected no section row"),
        "{err}"
    );
}

/// A save's tickets are capped as a request is: in the save's world, every row of a ticket's
/// footprint counts (docs/reference/streaming.md#tickets-in-3-d).
#[test]
fn a_save_s_tickets_count_their_rows_against_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        json!({"radius": 1, "maxTicketChunks": 100, "vertical": {"radius": 1, "height": 16}});
    let scene = json!({ "kits": kits(config), "entities": hero() });
    let mut g = game(&scene);
    // Radius 3: 49 columns × 3 rows = 147 sections, over the cap of 100; radius 2: 75.
    let asks = |radius: u32| {
        json!({"tick": 1, "do": "request", "id": "big", "at": {"x": 0, "z": 0},
               "radius": radius, "ticks": 50})
    };
    let refused = world_streaming::files::inputs::parse_line(&asks(3).to_string()).unwrap();
    let _ = g.apply(&refused);
    assert!(
        g.streaming().unwrap().tickets().is_empty(),
        "the request is refused: 147 sections"
    );
    run(&mut g, &[asks(2)], 2);
    let mut v: Value = serde_json::from_str(&g.save_text().unwrap()).unwrap();
    assert_eq!(v["kits"]["world.streaming"]["tickets"][0]["radius"], 2);
    v["kits"]["world.streaming"]["tickets"][0]["radius"] = json!(3);
    let file = dir.path().join("tickets.save.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let err = common::refused_alike(&mut g, &file, common::Alone::NeedsTheGame);
    assert!(
        err.contains("kits.world.streaming.tickets[0]: the tickets up to this one want 147 chunks"),
        "{err}"
    );
}

/// A save of a game whose scene's layer turns sections on, with unload refusals held on a row
/// below, loads into a fresh game and continues exactly: the refusals keep their row and the
/// layer's rows are in force (docs/reference/saves.md#sections-in-saves).
#[test]
fn a_layer_s_sections_and_a_row_s_held_refusals_continue_exactly_after_a_load() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("keep.json"),
        r#"{"id": "keep", "hook": "world.chunk.unload", "match": {"y": -1}, "cancel": true}"#,
    )
    .unwrap();
    let scene = json!({
        "kits": kits(json!({"radius": 1, "budgetMs": 100})),
        "mods": ["keep.json"],
        "entities": hero(),
        "scenes": [
            { "id": "cave", "entry": {"x": 8, "z": 8},
              "layers": { "world.streaming": { "vertical": {"radius": 1, "height": 16} } } }
        ]
    });
    let lines = [
        json!({"tick": 1, "do": "enter", "scene": "cave"}),
        json!({"tick": 3, "do": "move", "entity": "hero", "to": {"x": 100, "z": 8}}),
        json!({"tick": 6, "do": "move", "entity": "hero", "to": {"x": 100, "y": 40, "z": -70}}),
    ];
    let mut whole = game_in(&scene, dir.path());
    run(&mut whole, &lines, 9);
    let held = whole.streaming().unwrap().refusals();
    assert!(
        !held.is_empty() && held.iter().all(|r| r.y == Some(-1)),
        "{held:?}"
    );
    let all = common::event_lines(&whole);
    let state = serde_json::to_value(whole.state()).unwrap();
    drop(whole);
    for n in [4, 7] {
        let (resumed, events) = common::resumed_from_save(&scene, dir.path(), &lines, n, 9);
        let before = all
            .iter()
            .filter(|l| serde_json::from_str::<Value>(l).unwrap()["tick"].as_u64() > Some(n))
            .cloned()
            .collect::<Vec<_>>();
        assert_eq!(events, before, "saved after tick {n}");
        assert_eq!(serde_json::to_value(resumed.state()).unwrap(), state);
        assert_eq!(resumed.streaming().unwrap().vertical().unwrap().radius, 1);
    }
}

/// A flat game whose mod sets `shape` writes a round-4 key in the save's overrides, so the save
/// is version 4 (an older reader refuses it by its version, not by an unknown key); it loads
/// back into a fresh game and continues with the same events.
#[test]
fn a_save_holding_a_mod_s_shape_is_version_4_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("round.json"),
        r#"{"id": "round", "set": {"shape": "disc"}}"#,
    )
    .unwrap();
    let scene =
        json!({ "kits": kits(json!({"radius": 2})), "mods": ["round.json"], "entities": hero() });
    let mut g = game_in(&scene, dir.path());
    run(&mut g, &drive()[..1], 3);
    let text = g.save_text().unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], 4, "{text}");
    assert_eq!(v["kits"]["world.streaming"]["overrides"]["shape"], "disc");
    let file = dir.path().join("s.save.json");
    std::fs::write(&file, &text).unwrap();
    run(&mut g, &drive()[1..], 6);
    let mut h = game_in(&scene, dir.path());
    h.load(&file).unwrap();
    run(&mut h, &drive()[1..], 6);
    let after = |g: &world_streaming::game::Game| -> Vec<String> {
        g.engine()
            .events()
            .iter()
            .filter(|e| e.tick > 3)
            .map(|e| format!("{} {} {:?}", e.tick, e.event, e.data))
            .collect()
    };
    assert!(after(&g).len() > 10);
    assert_eq!(after(&h), after(&g));
    // Without the mod the same game writes what it always wrote.
    let plain = json!({ "kits": kits(json!({"radius": 2})), "entities": hero() });
    let mut p = game_in(&plain, dir.path());
    run(&mut p, &drive()[..1], 3);
    let v: Value = serde_json::from_str(&p.save_text().unwrap()).unwrap();
    assert_eq!(v["version"], 2);
}

/// The `release` input names a section's row with `y` (left out: row 0): it drops the refusal
/// held at that section and no other (docs/reference/files-and-cli.md#actions).
#[test]
fn the_release_input_drops_a_row_s_refusal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("keep.json"),
        r#"{"id": "keep", "hook": "world.chunk.unload", "cancel": true}"#,
    )
    .unwrap();
    let config = json!({"radius": 0, "budgetMs": 100, "vertical": {"radius": 1, "height": 16}});
    let scene = json!({ "kits": kits(config), "mods": ["keep.json"], "entities": hero() });
    let mut g = game_in(&scene, dir.path());
    let away = json!({"tick": 3, "do": "move", "entity": "hero", "to": {"x": 200, "z": 8}});
    run(&mut g, &[away], 4);
    let held = |g: &world_streaming::game::Game| -> Vec<(i64, Option<i64>, i64)> {
        g.streaming()
            .unwrap()
            .refusals()
            .iter()
            .map(|r| (r.x, r.y, r.z))
            .collect()
    };
    assert_eq!(
        held(&g),
        [(0, Some(-1), 0), (0, Some(0), 0), (0, Some(1), 0)]
    );
    let line = r#"{"tick": 5, "do": "release", "x": 0, "y": -1, "z": 0}"#;
    let release = world_streaming::files::inputs::parse_line(line).unwrap();
    g.apply(&release).unwrap();
    assert_eq!(held(&g), [(0, Some(0), 0), (0, Some(1), 0)]);
    let row0 = r#"{"tick": 5, "do": "release", "x": 0, "z": 0}"#;
    g.apply(&world_streaming::files::inputs::parse_line(row0).unwrap())
        .unwrap();
    assert_eq!(held(&g), [(0, Some(1), 0)], "y left out: row 0");
}
