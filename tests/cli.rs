//! The `world-streaming` binary: every subcommand's success and failure paths, exit codes, the
//! seed example's exact state, and a table of bad files each refused with a clear message.

mod common;
use common::bin;
use std::path::Path;

use serde_json::{json, Value};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_seed_example_through_the_binary_gives_the_exact_state_of_spec_8() {
    let out = bin()
        .current_dir(repo())
        .args([
            "run",
            "examples/scenes/seed.json",
            "--ticks",
            "5",
            "--state",
            "-",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state: Value = serde_json::from_slice(&out.stdout).unwrap();
    let loaded: Vec<Value> = [
        (-1, -1),
        (0, -1),
        (1, -1),
        (-1, 0),
        (0, 0),
        (1, 0),
        (-1, 1),
        (0, 1),
        (1, 1),
    ]
    .iter()
    .map(|(x, z)| json!({"x": x, "z": z}))
    .collect();
    assert_eq!(
        state,
        json!({
            "tick": 5, "scene": "main", "focus": {"x": 8, "z": 8},
            "loaded": loaded, "pending": [], "refusals": [],
            "variables": {"world.chunks.loaded": 9, "world.chunks.pending": 0,
                          "world.chunks.progress": 1.0, "world.chunks.overCapacity": 0},
            "dormant": [], "foci": [{"x": 8, "z": 8}], "tickets": []
        })
    );
    let keys: Vec<&str> = state
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "tick",
            "scene",
            "focus",
            "loaded",
            "pending",
            "refusals",
            "variables",
            "dormant",
            "foci",
            "tickets"
        ]
    );
}

#[test]
fn tick_1_of_the_seed_example_loads_two_chunks_and_leaves_seven_pending() {
    let out = bin()
        .current_dir(repo())
        .args([
            "run",
            "examples/scenes/seed.json",
            "--ticks",
            "1",
            "--state",
            "-",
            "--events",
            "ev.tmp",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let state: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        state["loaded"],
        json!([{"x": 0, "z": -1}, {"x": 0, "z": 0}])
    );
    assert_eq!(state["variables"]["world.chunks.pending"], 7);
    assert_eq!(state["pending"].as_array().unwrap().len(), 7);
    assert_eq!(
        state["pending"][0],
        json!({"x": -1, "z": 0}),
        "nearest-first"
    );
    let events = std::fs::read_to_string(repo().join("ev.tmp")).unwrap();
    std::fs::remove_file(repo().join("ev.tmp")).unwrap();
    assert_eq!(
        events,
        "{\"tick\":1,\"event\":\"world.chunk.loaded\",\"data\":{\"x\":0,\"z\":0}}\n\
         {\"tick\":1,\"event\":\"world.chunk.loaded\",\"data\":{\"x\":0,\"z\":-1}}\n"
    );
}

#[test]
fn ticks_default_to_the_last_input_tick() {
    let out = bin()
        .current_dir(repo())
        .args([
            "run",
            "examples/scenes/defaults.json",
            "--inputs",
            "examples/scenes/defaults.inputs.jsonl",
        ])
        .args(["--state", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let state: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(state["tick"], 7);
    assert_eq!(state["variables"]["world.chunks.loaded"], 25);
}

#[test]
fn every_example_scene_runs_and_every_example_file_checks() {
    for name in ["seed", "defaults", "drive", "two_scenes", "demo"] {
        let scene = format!("examples/scenes/{name}.json");
        let mut cmd = bin();
        cmd.current_dir(repo())
            .args(["run", &scene, "--events", "-"]);
        let inputs = format!("examples/scenes/{name}.inputs.jsonl");
        if repo().join(&inputs).exists() {
            cmd.args(["--inputs", &inputs]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "{name} emits events");
        bin()
            .current_dir(repo())
            .args(["check", &scene])
            .assert()
            .success();
    }
    let mut files: Vec<String> = std::fs::read_dir(repo().join("mods"))
        .unwrap()
        .map(|e| format!("mods/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    files.sort();
    bin()
        .current_dir(repo())
        .arg("check")
        .args(&files)
        .assert()
        .success();
}

#[test]
fn the_demo_runs_without_arguments_and_shows_maps() {
    let out = bin().output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("map at tick 1"), "{text}");
    assert!(text.contains("[ticket \"tp\" ready]"), "{text}");
    let map_rows: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.chars().all(|c| "0123456789#+.xHABCT".contains(c)))
        .collect();
    assert!(
        map_rows.iter().any(|l| l.contains('T')),
        "the ticket on a map: {text}"
    );
    assert!(
        map_rows.iter().any(|l| l.contains('C')),
        "a third focus on a map: {text}"
    );
    assert!(
        map_rows
            .iter()
            .any(|l| l.chars().any(|c| c.is_ascii_digit())),
        "terrain heights shaded on a map: {text}"
    );
    assert!(
        text.contains("held refusal: (0, 0) world.chunk.unload by keep_home (\"home\")"),
        "{text}"
    );
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    bin().arg("frobnicate").assert().code(2);
    bin().arg("run").assert().code(2);
    bin()
        .args(["run", "x.json", "--ticks", "many"])
        .assert()
        .code(2);
    bin().arg("check").assert().code(2);
    let help = bin().args(["run", "--help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Examples:"));
}

#[test]
fn schema_check_passes_on_the_repo_and_fails_with_a_diff_when_drifted() {
    bin()
        .current_dir(repo())
        .args(["schema", "--check"])
        .assert()
        .success();
    let dir = tempfile::tempdir().unwrap();
    bin()
        .args(["schema", "--out"])
        .arg(dir.path())
        .assert()
        .success();
    let path = dir.path().join("scene.schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"kits\"", "\"kitz\"");
    std::fs::write(&path, text).unwrap();
    let out = bin()
        .args(["schema", "--check"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("scene.schema.json"), "{err}");
    assert!(err.contains("- ") && err.contains("+ "), "{err}");
    assert!(err.contains("cargo run -- schema --out schemas"), "{err}");
}

/// A case: files to write (name, text), the command's arguments, and what stderr must contain.
struct Bad {
    name: &'static str,
    files: Vec<(&'static str, String)>,
    args: Vec<&'static str>,
    expect: &'static str,
}

fn scene_with(streaming_config: Value, extra: Value) -> String {
    let mut scene = json!({
        "kits": [
            { "id": "game.engine" },
            { "id": "world.ground" },
            { "id": "world.streaming", "config": streaming_config }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    for (k, v) in extra.as_object().unwrap() {
        scene[k] = v.clone();
    }
    scene.to_string()
}

fn good_scene() -> String {
    scene_with(json!({ "radius": 1 }), json!({}))
}

fn run_scene(name: &'static str, scene: String, expect: &'static str) -> Bad {
    Bad {
        name,
        files: vec![("scene.json", scene)],
        args: vec!["run", "scene.json"],
        expect,
    }
}

fn run_inputs(name: &'static str, inputs: &str, expect: &'static str) -> Bad {
    Bad {
        name,
        files: vec![
            ("scene.json", good_scene()),
            ("inputs.jsonl", inputs.to_owned()),
        ],
        args: vec!["run", "scene.json", "--inputs", "inputs.jsonl"],
        expect,
    }
}

fn with_mod(name: &'static str, m: &str, expect: &'static str) -> Bad {
    Bad {
        name,
        files: vec![
            (
                "scene.json",
                scene_with(json!({}), json!({ "mods": ["m.json"] })),
            ),
            ("m.json", m.to_owned()),
        ],
        args: vec!["run", "scene.json"],
        expect,
    }
}

fn bad_files() -> Vec<Bad> {
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    vec![
        run_scene("malformed json", "{\"kits\": [".into(), "scene.json: line 1 column 10"),
        run_scene("kits not a list", r#"{"kits": 3}"#.into(), "kits: expected an array, got 3"),
        run_scene("unknown top-level key", r#"{"kits": [], "kitz": []}"#.into(), "unknown field `kitz`"),
        run_scene("negative radius", scene_with(json!({"radius": -1}), json!({})), "scene.json: kits[2].config.radius: expected an integer 0..=64, got -1"),
        run_scene("radius too large", scene_with(json!({"radius": 65}), json!({})), "kits[2].config.radius: expected an integer 0..=64, got 65"),
        run_scene("fractional radius", scene_with(json!({"radius": 1.5}), json!({})), "kits[2].config.radius: expected an integer 0..=64, got 1.5"),
        run_scene("zero chunk size", scene_with(json!({"chunkSize": 0}), json!({})), "kits[2].config.chunkSize: expected a finite number > 0, got 0"),
        run_scene("negative budget", scene_with(json!({"budgetMs": -1}), json!({})), "kits[2].config.budgetMs: expected a finite number >= 0, got -1"),
        run_scene("budget as text", scene_with(json!({"budgetMs": "4"}), json!({})), "kits[2].config.budgetMs: expected a finite number >= 0, got \"4\""),
        run_scene("unknown config key", scene_with(json!({"radious": 1}), json!({})), "unknown field `radious`"),
        run_scene("number out of range", r#"{"kits": [], "seed": 1e999}"#.into(), "scene.json: line 1"),
        run_scene("streaming without ground", json!({"kits": [{"id": "world.streaming"}]}).to_string(), "kit world.streaming requires world.ground@^1, no enabled kit provides it"),
        run_scene("kit not installed", json!({"kits": [{"id": "world.weather"}]}).to_string(), "kits[0].id: kit \"world.weather\" is not installed"),
        run_scene("kit enabled twice", json!({"kits": [{"id": "world.ground"}, {"id": "world.ground"}]}).to_string(), "kits[1]: kit `world.ground` is enabled twice"),
        run_scene("duplicate entity ids", scene_with(json!({}), json!({"entities": [{"id": "a", "position": {"x": 0, "z": 0}}, {"id": "a", "position": {"x": 0, "z": 0}}]})), "entities[1].id: duplicate entity id \"a\""),
        run_scene("rides loop", scene_with(json!({}), json!({"entities": [{"id": "a", "position": {"x": 0, "z": 0}, "rides": "b"}, {"id": "b", "position": {"x": 0, "z": 0}, "rides": "a"}]})), "would close a loop of rides"),
        run_scene("riding itself", scene_with(json!({}), json!({"entities": [{"id": "a", "position": {"x": 0, "z": 0}, "rides": "a"}]})), "would close a loop of rides"),
        run_scene("rides unknown entity", scene_with(json!({}), json!({"entities": [{"id": "a", "position": {"x": 0, "z": 0}, "rides": "ghost"}]})), "entities[0].rides: expected the id of an entity in this file, got \"ghost\""),
        run_scene("control unknown", scene_with(json!({}), json!({"control": "ghost"})), "control: expected the id of an entity in this file"),
        run_scene("empty bounds", json!({"kits": [{"id": "world.ground", "config": {"bounds": {"minX": 5, "minZ": 0, "maxX": 5, "maxZ": 1}}}]}).to_string(), "kits[0].config.bounds.maxX: expected maxX > minX"),
        run_scene("absurd position", scene_with(json!({}), json!({"entities": [{"id": "a", "position": {"x": 1e300, "z": 0}}]})), "entities[0].position.x: expected a finite number of metres within ±1e15"),
        run_scene("missing position", scene_with(json!({}), json!({"entities": [{"id": "a"}]})), "entities[0].position: missing field"),
        run_scene("bad layer key", scene_with(json!({}), json!({"scenes": [{"id": "s", "layers": {"world.streaming": {"chunkSize": 8}}}]})), "scenes[0].layers.world.streaming"),
        run_scene("layer of a kit not enabled", scene_with(json!({}), json!({"scenes": [{"id": "s", "layers": {"world.weather": {}}}]})), "scenes[0].layers.world.weather"),
        run_scene("no scenes", scene_with(json!({}), json!({"scenes": []})), "scenes: expected at least one scene"),
        run_scene("duplicate scenes", scene_with(json!({}), json!({"scenes": [{"id": "s"}, {"id": "s"}]})), "scenes[1].id: duplicate scene id"),
        run_scene("missing mod file", scene_with(json!({}), json!({"mods": ["nope.json"]})), "mods[0]: expected a mod file"),
        run_scene("deeply nested", deep, "recursion limit exceeded"),
        run_scene("not utf-8", String::from_utf8_lossy(b"{\"kits\": \"\xff\"}").replace('\u{fffd}', "\u{1}"), "scene.json: line 1"),
        with_mod("mod with unknown key", r#"{"id": "m", "hook": "world.chunk.load", "cancle": true}"#, "m.json: cancle: unknown field `cancle`"),
        with_mod("mod without hook or set", r#"{"id": "m"}"#, "m.json: expected `hook`, `rules` or `set`"),
        with_mod("mod with unknown hook", r#"{"id": "m", "hook": "world.chunk.lod", "cancel": true}"#, "m.json: hook: unknown hook \"world.chunk.lod\""),
        with_mod("mod setting radius 100", r#"{"id": "m", "set": {"radius": 100}}"#, "m.json: set.radius: expected an integer 0..=64, got 100"),
        with_mod("mod match not integer", r#"{"id": "m", "hook": "world.chunk.load", "match": {"x": "0"}}"#, "m.json: match.x"),
        run_inputs("a bad line after a save", "{\"tick\": 1, \"do\": \"save\", \"path\": \"early.save.json\"}\n{\"tick\": 2, \"do\": \"jump\"}\n", "inputs.jsonl: line 2: do: unknown value \"jump\"; expected one of: move, "),
        run_inputs("malformed inputs line", "{\"tick\": 1, \"do\": \"leave\"}\n{\"tick\": 2,", "inputs.jsonl: line 2"),
        run_inputs("decreasing ticks", "{\"tick\": 2, \"do\": \"leave\"}\n{\"tick\": 3, \"do\": \"leave\"}\n{\"tick\": 1, \"do\": \"leave\"}\n", "inputs.jsonl: line 3: tick: expected ticks in non-decreasing order, got 1 after 3"),
        run_inputs("unknown action", "{\"tick\": 1, \"do\": \"jump\"}\n", "inputs.jsonl: line 1: do: unknown value \"jump\""),
        run_inputs("tick too large", "{\"tick\": 99999999999, \"do\": \"leave\"}\n", "inputs.jsonl: line 1: tick: expected an integer 0..=10000000"),
        run_inputs("missing tick", "{\"do\": \"leave\"}\n", "inputs.jsonl: line 1: tick: missing"),
        run_inputs("absurd move", "{\"tick\": 1, \"do\": \"move\", \"entity\": \"hero\", \"to\": {\"x\": 1e20, \"z\": 0}}\n", "line 1: to.x: expected a finite number"),
        run_inputs("unknown entity", "{\"tick\": 1, \"do\": \"move\", \"entity\": \"ghost\", \"to\": {\"x\": 1, \"z\": 0}}\n", "inputs.jsonl: line 1: no such entity `ghost`"),
        run_inputs("ride loop", "{\"tick\": 1, \"do\": \"spawn\", \"entity\": {\"id\": \"car\", \"tags\": [], \"position\": {\"x\": 0, \"z\": 0}}}\n{\"tick\": 1, \"do\": \"ride\", \"entity\": \"hero\", \"vehicle\": \"car\"}\n{\"tick\": 2, \"do\": \"ride\", \"entity\": \"car\", \"vehicle\": \"hero\"}\n", "inputs.jsonl: line 3: `car` riding `hero` would close a loop of rides"),
        run_inputs("riding a missing vehicle", "{\"tick\": 1, \"do\": \"ride\", \"entity\": \"hero\", \"vehicle\": \"ghost\"}\n", "line 1: no such vehicle `ghost`"),
        run_inputs("spawning an existing id", "{\"tick\": 1, \"do\": \"spawn\", \"entity\": {\"id\": \"hero\", \"tags\": [], \"position\": {\"x\": 0, \"z\": 0}}}\n", "line 1: an entity `hero` already exists"),
        run_inputs("entering an unknown scene", "{\"tick\": 1, \"do\": \"enter\", \"scene\": \"moon\"}\n", "line 1: no such scene `moon`"),
        run_inputs("loading a missing save", "{\"tick\": 1, \"do\": \"load\", \"path\": \"nope.save.json\"}\n", "line 1: nope.save.json:"),
        run_inputs("an inputs line that is not an object", "[1, 2]\n", "line 1: expected an object"),
        run_inputs("a position missing z", "{\"tick\": 1, \"do\": \"move\", \"entity\": \"hero\", \"to\": {\"x\": 1}}\n", "inputs.jsonl: line 1: to.z: missing field"),
        run_inputs("a position as an array", "{\"tick\": 1, \"do\": \"move\", \"entity\": \"hero\", \"to\": [1, 2]}\n", "inputs.jsonl: line 1: to: expected an object, got [1,2]"),
        run_inputs("a spawn without a position", "{\"tick\": 1, \"do\": \"spawn\", \"entity\": {\"id\": \"b\"}}\n", "inputs.jsonl: line 1: entity.position: missing field"),
        with_mod("a rule of rules without a hook", r#"{"id": "m", "rules": [{"cancel": true}]}"#, "m.json: rules[0].hook: missing field"),
        with_mod("a reversed range", r#"{"id": "m", "hook": "world.chunk.load", "cancel": true, "match": {"x": [3, 1]}}"#, "m.json: match.x: expected a range [min, max] with min <= max, got [3, 1]"),
        with_mod("an unknown hook among rules", r#"{"id": "m", "rules": [{"hook": "world.chunk.load", "cancel": true}, {"hook": "world.chunk.loaded", "cancel": true}]}"#, "m.json: rules[1].hook: unknown hook \"world.chunk.loaded\""),
        Bad {
            name: "a Lua mod registering an event name",
            files: vec![
                ("scene.json", scene_with(json!({}), json!({ "mods": ["m.lua"] }))),
                ("m.lua", "-- listens\non(\"world.chunk.loaded\", function(c) end)\n".to_owned()),
            ],
            args: vec!["run", "scene.json"],
            expect: "m.lua: line 2: on: \"world.chunk.loaded\" is not a hook; the hooks are: world.chunk.load, world.chunk.unload",
        },
        run_inputs("control without entity", "{\"tick\": 1, \"do\": \"control\"}\n", "line 1: entity: missing; expected an entity id, or null"),
        run_scene("game.engine with a config", json!({"kits": [{"id": "game.engine", "config": {"tickRate": "fast"}}]}).to_string(), "kits[0].config: game.engine takes no config"),
        run_scene("a layer for world.ground", scene_with(json!({}), json!({"scenes": [{"id": "s", "layers": {"world.ground": {"bounds": 7}}}]})), "scenes[0].layers.world.ground: world.ground takes no layer settings"),
    ]
}

#[test]
fn bad_files_are_refused_with_exit_1_and_a_message_naming_where() {
    let cases = bad_files();
    assert!(cases.len() >= 25);
    for case in cases {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in &case.files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let out = bin()
            .current_dir(dir.path())
            .args(&case.args)
            .args(["--state", "-"])
            .args(if case.args[0] == "run" {
                &["--events", "events.jsonl"][..]
            } else {
                &[]
            })
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}: exit {:?}, stderr {err}",
            case.name,
            out.status.code()
        );
        assert!(
            err.contains(case.expect),
            "{}: expected {:?} in:\n{err}",
            case.name,
            case.expect
        );
        assert!(
            out.stdout.is_empty(),
            "{}: nothing runs on a bad file",
            case.name
        );
        // Nothing is written either: no event log, no save made by an earlier input line.
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut written: Vec<String> = case.files.iter().map(|(n, _)| n.to_string()).collect();
        written.sort();
        assert_eq!(
            left, written,
            "{}: nothing written on a bad file",
            case.name
        );
        assert!(!err.contains("panicked"), "{}: {err}", case.name);
    }
}

#[test]
fn a_huge_file_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(dir.path().join("scene.json")).unwrap();
    f.set_len(17 * 1024 * 1024).unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["run", "scene.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the limit is 16777216"));
}

#[test]
fn check_reports_every_problem_of_every_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.json"),
        scene_with(
            json!({"radius": -1, "chunkSize": 0}),
            json!({"control": "ghost"}),
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("b.json"), r#"{"id": "m", "cancel": true}"#).unwrap();
    std::fs::write(
        dir.path().join("hook.json"),
        r#"{"id": "h", "hook": "x", "cancel": true}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("d.json"),
        scene_with(json!({"radius": -1}), json!({"mods": ["hook.json"]})),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c.jsonl"),
        "{\"tick\": 1, \"do\": \"jump\"}\n{\"tick\": 1, \"do\": \"leave\", \"x\": 1}\n",
    )
    .unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "a.json", "b.json", "c.jsonl", "d.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    for part in [
        "a.json: control: expected the id of an entity",
        "a.json: kits[2].config",
        "b.json: expected `hook`, `rules` or `set`",
        "b.json: cancel: only meaningful with a `hook`",
        "c.jsonl: line 1: do: unknown value \"jump\"",
        "c.jsonl: line 2: x: unknown field `x`; nothing may be given here",
        "d.json: kits[2].config.radius: expected an integer 0..=64, got -1",
        "hook.json: hook: unknown hook \"x\"",
    ] {
        assert!(err.contains(part), "expected {part:?} in:\n{err}");
    }
}

#[test]
fn check_accepts_good_files_and_says_what_they_are() {
    let out = bin()
        .current_dir(repo())
        .args([
            "check",
            "examples/scenes/seed.json",
            "examples/scenes/seed.inputs.jsonl",
            "mods/keep_home.json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("seed.json: ok (scene)")
            && text.contains("seed.inputs.jsonl: ok (inputs, checked against the scene before it)")
            && text.contains("ok (JSON mod)"),
        "{text}"
    );
}

#[test]
fn check_finds_inputs_that_cannot_run_against_the_scene_and_a_lua_mod_on_an_event_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scene.json"), good_scene()).unwrap();
    std::fs::write(
        dir.path().join("in.jsonl"),
        [
            json!({"tick": 1, "do": "move", "entity": "hero", "to": {"x": 1, "z": 0}}),
            json!({"tick": 2, "do": "tag", "entity": "heroo", "tag": "x"}),
            json!({"tick": 30, "do": "save", "path": "late.save.json"}),
        ]
        .map(|l| format!("{l}\n"))
        .concat(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("typo.lua"),
        "on('world.chunk.unloaded', print)\n",
    )
    .unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args([
            "check",
            "scene.json",
            "in.jsonl",
            "typo.lua",
            "--ticks",
            "20",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    for part in [
        "in.jsonl: line 2: entity: no entity \"heroo\" ever exists",
        "in.jsonl: line 3: tick: a save at tick 30 is past the tick target 20: it never runs",
        "typo.lua: line 1: on: \"world.chunk.unloaded\" is not a hook; the hooks are: world.chunk.load, world.chunk.unload",
    ] {
        assert!(err.contains(part), "expected {part:?} in:\n{err}");
    }
    // Without a scene before them, inputs are checked for shape only.
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "in.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn run_reports_mod_errors_on_stderr_with_a_summary_and_warns_of_inputs_past_ticks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("scene.json"),
        scene_with(json!({"radius": 1}), json!({ "mods": ["boom.lua"] })),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("boom.lua"),
        "on('world.chunk.load', function(c) if c.x == 0 and c.z == 0 then error('no column 0') end end)\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("in.jsonl"),
        "{\"tick\": 2, \"do\": \"leave\"}\n{\"tick\": 9, \"do\": \"leave\"}\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        bin()
            .current_dir(dir.path())
            .args(["run", "scene.json", "--inputs", "in.jsonl", "--ticks", "3"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.contains(&"warning: --ticks 3 stops before 1 input of in.jsonl (the first at line 2, tick 9); it never runs"),
        "{err}"
    );
    let errors: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("mod.error: "))
        .collect();
    assert_eq!(
        errors,
        [&"mod.error: tick 1: mod boom: world.chunk.load: boom.lua:1: no column 0"],
        "{err}"
    );
    assert_eq!(lines.last(), Some(&"mod errors: 1 (boom: 1)"), "{err}");
    let quiet = run(&["--quiet"]);
    assert_eq!(quiet.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
}

#[test]
fn profile_reports_tick_percentiles_and_each_mods_handler_time() {
    let out = bin()
        .current_dir(repo())
        .args([
            "run",
            "examples/scenes/drive.json",
            "--inputs",
            "examples/scenes/drive.inputs.jsonl",
            "--profile",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("profile: 130 ticks"), "{err}");
    assert!(
        err.contains("tick cost   p50") && err.contains("p99") && err.contains("max"),
        "{err}"
    );
    assert!(
        err.contains("world.chunk.unload: JSON mods keep_home"),
        "{err}"
    );
}

#[test]
fn save_and_load_paths_are_relative_to_the_current_directory() {
    // docs/reference/files-and-cli.md#save-and-load-paths: `save`/`load` paths are relative to the
    // current directory, wherever the inputs file is.
    let root = tempfile::tempdir().unwrap();
    let (cwd, scenes, inputs) = (
        root.path().join("cwd"),
        root.path().join("scenes"),
        root.path().join("inputs"),
    );
    for d in [&cwd, &scenes, &inputs, &cwd.join("saves")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(scenes.join("scene.json"), good_scene()).unwrap();
    let moves: String = (1..=6)
        .map(|t| {
            format!(
                "{}\n",
                json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": 8 + 40 * t, "z": 8}})
            )
        })
        .collect();
    let save = json!({"tick": 4, "do": "save", "path": "saves/at3.json"});
    let load = json!({"tick": 4, "do": "load", "path": "saves/at3.json"});
    let first: Vec<&str> = moves.lines().take(3).collect();
    let rest: Vec<&str> = moves.lines().skip(3).collect();
    std::fs::write(
        inputs.join("save.jsonl"),
        format!("{}\n{save}\n", first.join("\n")),
    )
    .unwrap();
    std::fs::write(
        inputs.join("load.jsonl"),
        format!("{load}\n{}\n", rest.join("\n")),
    )
    .unwrap();
    std::fs::write(inputs.join("all.jsonl"), &moves).unwrap();
    let run = |from: &Path, inputs_file: &str, ticks: &str| {
        let out = bin()
            .current_dir(from)
            .arg("run")
            .arg(scenes.join("scene.json"))
            .arg("--inputs")
            .arg(inputs.join(inputs_file))
            .args(["--ticks", ticks, "--state", "-"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    run(&cwd, "save.jsonl", "4");
    assert!(
        cwd.join("saves/at3.json").is_file(),
        "saved in the current directory"
    );
    assert!(!inputs.join("saves").exists() && !scenes.join("saves").exists());
    // A fresh run loading it from the same current directory continues exactly.
    assert_eq!(run(&cwd, "load.jsonl", "6"), run(&cwd, "all.jsonl", "6"));
}

#[test]
fn a_json_rule_with_a_hook_and_no_cancel_is_valid_but_check_and_run_warn_about_it() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, v: Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let silent = write(
        "silent.json",
        json!({"id": "silent", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0}, "reason": "home"}),
    );
    let rules = write(
        "rules.json",
        json!({"id": "rules", "rules": [
            {"hook": "world.chunk.unload", "cancel": false},
            {"hook": "world.chunk.load"}
        ]}),
    );
    let explicit = write(
        "explicit.json",
        json!({"id": "explicit", "hook": "world.chunk.unload", "cancel": false}),
    );
    let stderr = |out: std::process::Output| {
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    // docs/reference/hooks.md#json-mods: `cancel` defaults to false, so the file is valid (exit
    // 0) …
    let e = stderr(bin().arg("check").arg(&silent).output().unwrap());
    // … but the mistake is in sight.
    assert!(
        e.contains("warning: ")
            && e.contains(
                "silent.json: cancel: a rule with a `hook` and no `cancel` answers nothing"
            ),
        "{e}"
    );
    let e = stderr(bin().arg("check").arg(&rules).output().unwrap());
    assert!(
        e.contains("rules[1].cancel") && !e.contains("rules[0]"),
        "{e}"
    );
    assert_eq!(
        stderr(bin().arg("check").arg(&explicit).output().unwrap()),
        ""
    );
    // `run` says it too (not with --quiet), and the rule refuses nothing.
    let scene = write(
        "scene.json",
        json!({
            "kits": [{"id": "world.ground"}, {"id": "world.streaming", "config": {"radius": 0}}],
            "mods": ["silent.json"],
            "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 8, "z": 8}}]
        }),
    );
    let e = stderr(bin().arg("run").arg(&scene).output().unwrap());
    assert!(e.contains("silent.json: cancel"), "{e}");
    let e = stderr(
        bin()
            .arg("run")
            .arg(&scene)
            .arg("--quiet")
            .output()
            .unwrap(),
    );
    assert!(!e.contains("warning"), "{e}");
}

#[test]
fn relative_save_paths_follow_the_current_directory_and_run_says_so_when_it_is_not_the_inputs_files(
) {
    let dir = tempfile::tempdir().unwrap();
    let inputs_dir = dir.path().join("inputs");
    let elsewhere = dir.path().join("cwd");
    std::fs::create_dir(&inputs_dir).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    let inputs = inputs_dir.join("in.jsonl");
    let absolute = dir.path().join("abs.save.json");
    std::fs::write(
        &inputs,
        format!(
            "{}\n{}\n",
            json!({"tick": 2, "do": "save", "path": "rel.save.json"}),
            json!({"tick": 2, "do": "save", "path": absolute.to_str().unwrap()})
        ),
    )
    .unwrap();
    let scene = repo().join("examples/scenes/seed.json");
    let run = |cwd: &Path| {
        bin()
            .current_dir(cwd)
            .arg("run")
            .arg(&scene)
            .arg("--inputs")
            .arg(&inputs)
            .args(["--ticks", "3"])
            .output()
            .unwrap()
    };
    let out = run(&elsewhere);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(
        e.contains(
            "line 1: path: \"rel.save.json\" is relative to the current directory \
             (docs/reference/files-and-cli.md#save-and-load-paths)"
        ),
        "{e}"
    );
    assert!(
        !e.contains("line 2"),
        "an absolute path is not warned about: {e}"
    );
    // docs/reference/files-and-cli.md#save-and-load-paths: the save lands in the current directory.
    assert!(elsewhere.join("rel.save.json").is_file());
    assert!(!inputs_dir.join("rel.save.json").exists());
    // Run from the inputs file's directory, there is nothing to warn about.
    let out = run(&inputs_dir);
    assert!(!String::from_utf8(out.stderr).unwrap().contains("warning"));
}

/// Runs `command` to its end; a run still going after a minute is killed and fails the test (a
/// guard against a hang, not a measure of speed).
#[cfg(unix)]
fn output_or_hang(mut command: std::process::Command) -> std::process::Output {
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..600 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "still running after a minute (blocked on a FIFO?): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn a_fifo_as_scene_inputs_or_replay_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scene.json"), good_scene()).unwrap();
    mkfifo(&dir.path().join("fifo.json"));
    mkfifo(&dir.path().join("fifo.jsonl"));
    let cases: [&[&str]; 4] = [
        &["run", "fifo.json"],
        &["run", "scene.json", "--inputs", "fifo.jsonl"],
        &["check", "fifo.json", "fifo.jsonl"],
        &["replay", "fifo.json"],
    ];
    for args in cases {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_world-streaming"));
        command.current_dir(dir.path()).args(args);
        let out = output_or_hang(command);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(": expected a regular file, found a FIFO (a named or unnamed pipe)"),
            "{args:?}: {err}"
        );
    }
}

#[cfg(unix)]
#[test]
fn dev_zero_as_inputs_scene_or_mod_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scene.json"), good_scene()).unwrap();
    std::fs::write(
        dir.path().join("modded.json"),
        scene_with(json!({}), json!({ "mods": ["/dev/zero"] })),
    )
    .unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["run", "scene.json", "--inputs", "/dev/zero"],
            "/dev/zero: expected a regular file, found a character device",
        ),
        (
            &["run", "/dev/zero"],
            "/dev/zero: expected a regular file, found a character device",
        ),
        (
            &["run", "modded.json"],
            "/dev/zero: expected a regular file, found a character device",
        ),
    ];
    for (args, expect) in cases {
        let out = bin().current_dir(dir.path()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}

#[cfg(unix)]
#[test]
fn check_of_dev_stdin_fed_by_an_endless_pipe_is_refused_not_read() {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_world-streaming"))
        .args(["check", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // `yes`: writes until the reader goes away (a broken pipe), at most 64 MiB.
    let writer = std::thread::spawn(move || {
        let line = b"y\n".repeat(8192);
        let mut written = 0u64;
        while written < 64 << 20 && stdin.write_all(&line).is_ok() {
            written += line.len() as u64;
        }
        written
    });
    let out = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/dev/stdin: expected a regular file, found a FIFO"),
        "{err}"
    );
    assert!(
        written < 64 << 20,
        "the pipe was read to the end: {written} bytes"
    );
}

#[test]
fn a_file_over_the_cap_is_refused_after_reading_at_most_the_cap() {
    // A file that grows past what `stat` said, or a /proc-like file reporting 0 bytes, is
    // bounded by the read itself; a regular file reporting its size is refused before reading.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("{\"tick\": 1, \"do\": \"leave\"}\n");
    while text.len() as u64 <= 16 * 1024 * 1024 {
        text.push_str(&" ".repeat(1 << 20));
    }
    std::fs::write(dir.path().join("scene.json"), good_scene()).unwrap();
    std::fs::write(dir.path().join("in.jsonl"), text).unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["run", "scene.json", "--inputs", "in.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "in.jsonl: the file is larger than the 16 MiB limit (the limit is 16777216 bytes)\n"
    );
}

/// The control characters of `out` but line feeds (C0, DEL, C1), as `U+XXXX`.
fn control_chars(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .chars()
        .filter(|c| *c != '\n' && c.is_control())
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect()
}

#[test]
fn text_from_files_reaches_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "\u{1b}]0;pwned\u{7}\r\u{1b}[2J\u{9b}m\nOK: fake";
    // A kit id, an entity id in the inputs, a Lua mod's log and error, a file name.
    std::fs::write(
        dir.path().join("kit.json"),
        json!({"kits": [{"id": evil}], "entities": []}).to_string(),
    )
    .unwrap();
    std::fs::write(dir.path().join("scene.json"), good_scene()).unwrap();
    std::fs::write(
        dir.path().join("in.jsonl"),
        format!(
            "{}\n",
            json!({"tick": 1, "do": "move", "entity": evil, "to": {"x": 0, "z": 0}})
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("loud.lua"),
        "log('\\27]0;pwned\\7\\r\\27[2J\\n[loud] OK')\n\
         on('world.chunk.load', function(c) error('\\27[2J\\nOK: fake') end)\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("modded.json"),
        scene_with(json!({}), json!({ "mods": ["loud.lua"] })),
    )
    .unwrap();
    let odd_name = "a\u{1b}[2J\nOK.json";
    std::fs::write(dir.path().join(odd_name), good_scene()).unwrap();
    let cases: [(&[&str], i32, &str); 4] = [
        (
            &["run", "kit.json"],
            1,
            "kits[0].id: kit \"\\u001b]0;pwned\\u0007\\r\\u001b[2J\\u{9b}m\\nOK: … is not installed",
        ),
        (
            &["run", "scene.json", "--inputs", "in.jsonl"],
            1,
            "in.jsonl: line 1: no such entity `\\u{1b}]0;pwned\\u{7}\\u{d}\\u{1b}[2J\\u{9b}m\\u{a}OK: fake`",
        ),
        (&["run", "modded.json", "--ticks", "1"], 0, "[loud] \\u{1b}]0;pwned\\u{7}\\u{d}\\u{1b}[2J\\u{a}[loud] OK\nmod.error: tick 1: mod loud: world.chunk.load: loud.lua:2: \\u{1b}[2J\\u{a}OK: fake\n"),
        (&["check", odd_name], 0, "a\\u{1b}[2J\\u{a}OK.json: ok (scene)"),
    ];
    for (args, code, expect) in cases {
        let out = bin().current_dir(dir.path()).args(args).output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert_eq!(
            control_chars(&out.stdout),
            Vec::<String>::new(),
            "{args:?}: {stdout}"
        );
        assert_eq!(
            control_chars(&out.stderr),
            Vec::<String>::new(),
            "{args:?}: {stderr}"
        );
        assert!(
            stdout.contains(expect) || stderr.contains(expect),
            "{args:?}: {expect}\nstdout: {stdout}\nstderr: {stderr}"
        );
        assert!(
            !stdout
                .lines()
                .chain(stderr.lines())
                .any(|l| l.starts_with("OK")),
            "{args:?}: a fake line\nstdout: {stdout}\nstderr: {stderr}"
        );
    }
}

/// `--quiet` prints nothing on stderr but errors, `--until-ready`'s line included; an
/// out-of-range `--ticks` is a usage error (exit 2) however far out it is.
#[test]
fn quiet_until_ready_is_silent_and_ticks_out_of_range_is_usage() {
    let run = |extra: &[&str]| {
        bin()
            .current_dir(repo())
            .args(["run", "examples/scenes/seed.json"])
            .args(extra)
            .output()
            .unwrap()
    };
    let loud = run(&["--until-ready", "hero"]);
    assert_eq!(loud.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&loud.stderr).contains("hero ready after"));
    let quiet = run(&["--until-ready", "hero", "--quiet"]);
    assert_eq!(quiet.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
    for ticks in ["10000001", "99999999999999999999"] {
        let out = run(&["--ticks", ticks]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--ticks {ticks}: {err}");
        assert!(err.contains("--ticks"), "{err}");
    }
    // The bound itself is accepted, one past it is not (by `check`, which runs nothing).
    for (ticks, code) in [("10000000", 0), ("10000001", 2)] {
        let out = bin()
            .current_dir(repo())
            .args(["check", "examples/scenes/seed.json", "--ticks", ticks])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "check --ticks {ticks}");
    }
}

/// `check SAVE` refuses what every game refuses — the terrain section included, which it once
/// skipped ("ok (save)" for a block of step 3) — and `check SCENE SAVE` checks the save as
/// loading it into that scene would: a block of another step than its level's, which only the
/// scene tells, is refused there and not alone. Seen failing before: both said "ok (save)".
#[test]
fn check_of_a_save_alone_and_after_its_scene() {
    let dir = tempfile::tempdir().unwrap();
    let scene = json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9,
                "lod": [ { "step": 4, "radius": 4 } ], "lodBudget": 2 } },
            { "id": "world.terrain", "config": { "seed": 5, "cellsPerChunk": 4, "commitLatency": 2 } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    });
    std::fs::write(dir.path().join("scene.json"), scene.to_string()).unwrap();
    let mut g = common::game_in(&scene, dir.path());
    common::run(&mut g, &[], 4);
    g.save(&dir.path().join("good.json")).unwrap();
    let good: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("good.json")).unwrap())
            .unwrap();
    assert_eq!(good["kits"]["world.terrain"]["lodInFlight"][0]["step"], 4);
    let write = |name: &str, f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        std::fs::write(dir.path().join(name), v.to_string()).unwrap();
    };
    write("step3.json", &|v| {
        v["kits"]["world.terrain"]["lodInFlight"][0]["step"] = json!(3)
    });
    write("step64.json", &|v| {
        v["kits"]["world.terrain"]["lodInFlight"][0]["step"] = json!(64)
    });
    let check = |args: &[&str]| {
        let out = bin()
            .current_dir(dir.path())
            .arg("check")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, _) = check(&["good.json", "scene.json", "good.json"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        "good.json: ok (save)\nscene.json: ok (scene)\n\
         good.json: ok (save, checked against the scene before it)\n"
    );
    for args in [&["step3.json"][..], &["scene.json", "step3.json"]] {
        let (code, _, err) = check(args);
        assert_eq!(code, Some(1), "{args:?}");
        assert!(
            err.contains("step3.json: kits.world.terrain.lodInFlight[0].step: expected a power of two 2..=64, got 3"),
            "{args:?}: {err}"
        );
    }
    let (code, out, _) = check(&["step64.json"]);
    assert_eq!((code, out.as_str()), (Some(0), "step64.json: ok (save)\n"));
    let (code, _, err) = check(&["scene.json", "step64.json"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("step64.json: kits.world.terrain.lodInFlight[0].step: expected 4 (the step level 1's blocks are planned with), got 64"),
        "{err}"
    );
}
