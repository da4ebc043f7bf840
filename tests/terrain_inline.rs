//! `workers: "inline"` (docs/reference/terrain.md#inline): every chunk and LOD block job runs on
//! the tick at its commit tick, and everything the game tells is byte-identical to any worker
//! count: the event log, the state document (but `world.terrain.waits`, 0 inline), the saves (but
//! their `waits`) and the region files of a world directory. Each shipped example scene with
//! terrain is driven by its own inputs plus edits along the way, inline and with 1 and 4 workers.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{events_named, game_in, inputs, scene_error, state_without_timing};
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::kits::terrain::{
    TerrainConfig, TerrainService, WorkerCount, Workers, TERRAIN,
};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes")
}

/// The most ticks a drive runs (a debug build drives the LOD scene's 300 slowly).
const MAX_TICKS: u64 = 90;

/// A shipped scene with terrain: its name, its JSON, the index of its terrain kit and its inputs.
struct Shipped {
    name: String,
    scene: Value,
    terrain: usize,
    lines: Vec<Value>,
}

/// Every shipped example scene that enables `world.terrain`, with its inputs file if it has one.
fn shipped() -> Vec<Shipped> {
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(examples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension() == Some("json".as_ref()))
        .collect();
    paths.sort();
    for path in paths {
        let scene: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Some(terrain) = scene["kits"]
            .as_array()
            .and_then(|k| k.iter().position(|k| k["id"] == TERRAIN))
        else {
            continue;
        };
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut scene = scene;
        let player = |e: &Value| {
            e["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("player")))
        };
        if !scene["entities"]
            .as_array()
            .is_some_and(|e| e.iter().any(player))
        {
            // A scene made for an engine's own anchors (the Bevy walk): a player to stream around.
            scene["entities"] =
                json!([{ "id": "walker", "tags": ["player"], "position": { "x": 16, "z": 16 } }]);
        }
        let lines = std::fs::read_to_string(examples().join(format!("{name}.inputs.jsonl")))
            .map(|t| {
                t.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        out.push(Shipped {
            name,
            scene,
            terrain,
            lines,
        });
    }
    out
}

/// The ticks a drive runs: past its last input by a few commits, at most [`MAX_TICKS`].
fn ticks(lines: &[Value]) -> u64 {
    let last = lines.iter().filter_map(|l| l["tick"].as_u64()).max();
    (last.unwrap_or(0) + 8).clamp(24, MAX_TICKS)
}

/// The scene's inputs up to `end`, with edits added: at the spawn and across a chunk corner
/// early on, then two ticks after every fourth move, where it went (some land on built
/// chunks, some are refused: both are part of the log), plus one on tick `end - 1`.
fn with_edits(lines: &[Value], end: u64) -> Vec<Value> {
    let edit = |tick: u64, x: f64, z: f64, height: u64| json!({"tick": tick, "do": "edit", "at": {"x": x, "z": z}, "height": height, "material": tick % 5});
    let mut out: Vec<Value> = lines
        .iter()
        .filter(|l| l["tick"].as_u64().unwrap_or(0) <= end)
        .cloned()
        .collect();
    out.push(edit(4, 16.0, 16.0, 60_000));
    out.push(edit(5, 31.9, 31.9, 100));
    out.push(edit(9, 0.1, 16.0, 7));
    let moves = lines
        .iter()
        .filter(|l| l["do"] == "move" && l["to"].is_object());
    for (i, m) in moves.step_by(4).enumerate() {
        let tick = m["tick"].as_u64().unwrap() + 2;
        if tick < end {
            let to = &m["to"];
            let (x, z) = (to["x"].as_f64().unwrap(), to["z"].as_f64().unwrap());
            out.push(edit(tick, x, z, 30_000 + i as u64));
        }
    }
    out.push(edit(end - 1, 16.0, 16.0, 5));
    // Inputs are applied in file order: stable by tick.
    out.sort_by_key(|l| l["tick"].as_u64().unwrap());
    out
}

/// What one drive gave.
#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<String>,
    state: Value,
    /// The saves at mid-drive and at the end, `waits` taken out.
    saves: Vec<String>,
    /// Every file of the world directory after the game closed (the lock file aside).
    world: BTreeMap<String, Vec<u8>>,
}

/// A save's text without `world.terrain`'s `waits` (timing, not state), anywhere it is kept.
fn save_without_timing(path: &Path) -> String {
    let mut save: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if let Some(t) = m.get_mut(TERRAIN).and_then(Value::as_object_mut) {
                    t.remove("waits");
                }
                m.remove("world.terrain.waits");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut save);
    save.to_string()
}

/// `world.terrain.waits` as the game holds it.
fn waits(g: &Game) -> u64 {
    g.engine()
        .variables()
        .get("world.terrain.waits")
        .and_then(Value::as_u64)
        .expect("the kit publishes its waits")
}

/// Drives `shipped` with `workers` and a world directory at `dir/world` (emptied first; the
/// same path for every run, since saves name it), saving at the middle and at the end.
fn drive(shipped: &Shipped, workers: &Value, dir: &Path) -> (Outcome, u64) {
    let world = dir.join("world");
    let _ = std::fs::remove_dir_all(&world);
    let mut scene = shipped.scene.clone();
    let config = &mut scene["kits"][shipped.terrain]["config"];
    if !config.is_object() {
        *config = json!({});
    }
    config["workers"] = workers.clone();
    config["worldDir"] = json!(world);
    config["flushEveryTicks"] = json!(7);
    let end = ticks(&shipped.lines);
    let lines = with_edits(&shipped.lines, end);
    let mut g = game_in(&scene, &examples());
    let mid = end / 2;
    g.run(&inputs(&lines), mid).unwrap();
    let save = dir.join("drive.save.json");
    g.save(&save).unwrap();
    let mut saves = vec![save_without_timing(&save)];
    g.run(&common::inputs_after(&lines, mid), end).unwrap();
    g.save(&save).unwrap();
    saves.push(save_without_timing(&save));
    let (events, state, waits) = (common::event_lines(&g), state_without_timing(&g), waits(&g));
    g.close().unwrap();
    let world = std::fs::read_dir(&world)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name() != Some("session.lock".as_ref()))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    let outcome = Outcome {
        events,
        state,
        saves,
        world,
    };
    (outcome, waits)
}

#[test]
fn every_shipped_terrain_scene_is_byte_identical_inline_and_with_one_and_four_workers() {
    let scenes = shipped();
    let names: Vec<&str> = scenes.iter().map(|s| s.name.as_str()).collect();
    for expected in ["lod", "terrain", "world"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    for s in &scenes {
        let (inline, inline_waits) = drive(s, &json!("inline"), dir.path());
        assert_eq!(inline_waits, 0, "{}: no commit waits inline", s.name);
        // The drive did what it is here to compare.
        let has = |name: &str| inline.events.iter().any(|e| e.contains(name));
        assert!(has("world.terrain.built"), "{}", s.name);
        assert!(
            inline.world.keys().any(|f| f.ends_with(".wsr")),
            "{}: edits reached region files",
            s.name
        );
        if s.scene.to_string().contains("\"lod\"") {
            assert!(has("world.terrain.lod.built"), "{}", s.name);
        }
        let count = |name: &str| inline.events.iter().filter(|e| e.contains(name)).count();
        eprintln!(
            "{}: {} events, {} chunks and {} blocks built, {} edits refused, {} changed, files {:?}",
            s.name,
            inline.events.len(),
            count("\"world.terrain.built\""),
            count("world.terrain.lod.built"),
            count("world.terrain.edit.refused"),
            count("world.terrain.changed"),
            inline.world.keys().collect::<Vec<_>>()
        );
        for workers in [1, 4] {
            let (threaded, _) = drive(s, &json!(workers), dir.path());
            let what = format!("{}: inline and {workers} workers", s.name);
            assert_eq!(inline.events, threaded.events, "{what}: events");
            assert_eq!(inline.state, threaded.state, "{what}: state");
            assert_eq!(inline.saves, threaded.saves, "{what}: saves");
            assert_eq!(inline.world, threaded.world, "{what}: region files");
        }
    }
}

/// LOD blocks in flight while the chunks they sample are edited: each edit dispatches the block
/// again, and inline the block's job runs with the edits of its own dispatch.
#[test]
fn blocks_edited_in_flight_are_the_same_inline() {
    let scene = |workers: Value| {
        json!({
            "kits": [
                { "id": "world.ground" },
                { "id": "world.streaming", "config": {
                    "radius": 1, "budgetMs": 3, "lod": [ { "step": 2, "radius": 4 }, { "step": 4, "radius": 8 } ] } },
                { "id": "world.terrain", "config": { "seed": 5, "cellsPerChunk": 4, "workers": workers, "commitLatency": 3 } }
            ],
            "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
        })
    };
    // Every tick an edit somewhere in the built area and a step east: blocks are dispatched,
    // edited in flight, dispatched again and released.
    let mut lines = Vec::new();
    for t in 1..=40u64 {
        let x = 16 + 9 * t;
        lines.push(json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": x, "z": 16}}));
        for (dx, dz) in [(-40, 0), (0, 0), (-20, 30)] {
            let (ex, ez) = (x as i64 + dx, 16 + dz);
            lines.push(json!({"tick": t, "do": "edit", "at": {"x": ex, "z": ez}, "height": 100 * t + 7, "material": t % 5}));
        }
    }
    let run = |workers: Value| {
        let mut g = common::game(&scene(workers));
        common::run(&mut g, &lines, 44);
        g
    };
    let inline = run(json!("inline"));
    assert_eq!(waits(&inline), 0);
    let rebuilt = events_named(&inline, "world.terrain.changed")
        .iter()
        .filter(|(_, d)| d.get("level").is_some())
        .count();
    assert!(rebuilt > 10, "blocks were changed and rebuilt: {rebuilt}");
    let blocks = events_named(&inline, "world.terrain.lod.built").len();
    assert!(blocks > 20, "{blocks}");
    for workers in [1, 4] {
        let g = run(json!(workers));
        assert_eq!(
            common::event_lines(&inline),
            common::event_lines(&g),
            "{workers} workers"
        );
        assert_eq!(state_without_timing(&inline), state_without_timing(&g));
        let t = |g: &Game| g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
        for level in 1..=2 {
            for x in -4..=12 {
                for z in -4..=4 {
                    assert_eq!(
                        t(&inline).lod_block(level, x, z),
                        t(&g).lod_block(level, x, z),
                        "block {level} ({x}, {z})"
                    );
                }
            }
        }
    }
}

/// Inline nothing is built before its commit: no chunk is built until the tick it commits,
/// and `generating()` is 0 all along.
#[test]
fn inline_chunks_are_built_at_their_commit_and_nothing_is_outstanding() {
    let mut g = common::game(&json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "radius": 1, "budgetMs": 100 } },
            { "id": "world.terrain", "config": { "workers": "inline", "commitLatency": 3 } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    }));
    let t = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
    for tick in 1..=4 {
        g.tick();
        assert_eq!(t.generating(), 0, "tick {tick}");
        let built = events_named(&g, "world.terrain.built").len();
        assert_eq!(built, if tick < 4 { 0 } else { 9 }, "tick {tick}");
    }
    assert_eq!(waits(&g), 0);
}

#[test]
fn workers_takes_an_integer_or_inline_and_says_so_otherwise() {
    let scene = |workers: Value| {
        json!({
            "kits": [
                { "id": "world.ground" },
                { "id": "world.streaming" },
                { "id": "world.terrain", "config": { "workers": workers } }
            ]
        })
    };
    for bad in [
        json!("fast"),
        json!("Inline"),
        json!(""),
        json!(65),
        json!(-1),
        json!(1.5),
        json!(null),
        json!(true),
    ] {
        let err = scene_error(&scene(bad.clone()));
        let expected = format!(
            "kits[2].config.workers: expected an integer 0..=64 or \"inline\", got {}",
            match &bad {
                Value::String(s) => format!("\"{s}\""),
                other => other.to_string(),
            }
        );
        assert!(err.contains(&expected), "{bad}: {err}");
        assert!(
            err.starts_with("scene.json"),
            "{bad}: names the file: {err}"
        );
    }
    for good in [json!("inline"), json!(0), json!(64), json!(2.0)] {
        common::game(&scene(good));
    }
    let parse =
        |v: Value| serde_json::from_value::<TerrainConfig>(json!({ "workers": v })).unwrap();
    assert_eq!(parse(json!("inline")).workers, Workers::INLINE);
    assert!(parse(json!("inline")).runs_inline());
    assert_eq!(parse(json!("inline")).worker_threads(), 0);
    assert_eq!(parse(json!(3)).workers.get(), WorkerCount::Threads(3));
    assert!(!parse(json!(3)).runs_inline(), "a build with threads");
    assert_eq!(
        serde_json::to_value(parse(json!("inline"))).unwrap()["workers"],
        "inline",
        "written back as read"
    );
}

/// A save made inline loads into a game with workers and goes on as the inline run did, and the
/// other way round: chunks and blocks in flight at the save are dispatched again and commit on
/// the same ticks.
#[test]
fn a_save_moves_between_inline_and_workers() {
    let scene = |workers: Value| {
        json!({
            "kits": [
                { "id": "world.ground" },
                { "id": "world.streaming", "config": {
                    "radius": 2, "budgetMs": 3, "lod": [ { "step": 2, "radius": 6 } ] } },
                { "id": "world.terrain", "config": { "seed": 11, "cellsPerChunk": 4, "workers": workers, "commitLatency": 3 } }
            ],
            "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
        })
    };
    let mut lines = Vec::new();
    for t in 1..=30u64 {
        let x = 16 + 14 * t;
        lines.push(json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": x, "z": 16}}));
        lines
            .push(json!({"tick": t, "do": "edit", "at": {"x": x - 30, "z": 16}, "height": 40 * t}));
    }
    let whole = |workers: Value| {
        let mut g = common::game(&scene(workers));
        common::run(&mut g, &lines, 34);
        g
    };
    let reference = whole(json!("inline"));
    assert_eq!(
        common::event_lines(&reference),
        common::event_lines(&whole(json!(2)))
    );
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("mid.save.json");
    for (first, second) in [(json!("inline"), json!(4)), (json!(4), json!("inline"))] {
        let mut a = common::game(&scene(first.clone()));
        common::run(&mut a, &lines, 14);
        a.save(&save).unwrap();
        let mut b = common::game(&scene(second.clone()));
        let skip = b.engine().events().len();
        b.load(&save).unwrap();
        b.run(&common::inputs_after(&lines, 14), 34).unwrap();
        assert_eq!(
            common::events_from(&b, skip),
            common::events_after(&reference, 14),
            "saved with {first}, loaded with {second}"
        );
        assert_eq!(state_without_timing(&b), state_without_timing(&reference));
    }
}
