//! `world.terrain` (docs/reference/terrain.md#the-generator): byte-identical generation, the
//! deterministic commit whatever the threads do, the eviction race, regeneration, convergence,
//! shutdown, save/load mid-generation.

mod common;

use common::{game, run, scene_error};
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::{Generator, TerrainService, TERRAIN};

fn scene(radius: u32, budget: f64, terrain: Value) -> Value {
    json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": radius, "budgetMs": budget } },
            { "id": "world.terrain", "config": terrain }
        ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "rides": "car" },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 16, "z": 16 } }
        ],
        "control": "hero"
    })
}

/// A drive east and back, 12 m a tick.
fn drive(ticks: u64) -> Vec<Value> {
    (1..=ticks)
        .map(|t| {
            let x = if t <= ticks / 2 {
                16 + 12 * t
            } else {
                16 + 12 * (ticks - t)
            };
            json!({"tick": t, "do": "move", "entity": "car", "to": {"x": x, "z": 16}})
        })
        .collect()
}

fn log(g: &Game) -> Vec<String> {
    common::event_lines(g)
}

fn terrain(g: &Game) -> std::rc::Rc<dyn TerrainService> {
    g.engine().service::<dyn TerrainService>(TERRAIN).unwrap()
}

#[test]
fn chunk_hashes_are_pinned() {
    // FNV-1a 64 of heights (u16 LE) then materials, 32×32 cells of a 32 m chunk. These values
    // are the contract of generator version 1: any change to them is a new generator version.
    let cases = [
        (0u64, ChunkPos::new(0, 0)),
        (0, ChunkPos::new(-3, 7)),
        (42, ChunkPos::new(0, 0)),
        (42, ChunkPos::new(1000, -1000)),
        (u64::MAX, ChunkPos::new(-1, -1)),
    ];
    let hashes: Vec<String> = cases
        .iter()
        .map(|(seed, c)| {
            format!(
                "{:016x}",
                Generator::new(*seed, 32, 32.0).generate(*c).hash()
            )
        })
        .collect();
    assert_eq!(hashes, PINNED);
}

const PINNED: [&str; 5] = [
    "9d01eaa547c9a46c",
    "2f2a4ef980e891be",
    "b253e6298c224bf4",
    "f245dc70fef5ff36",
    "86e5f35589a13dad",
];

#[test]
fn the_generator_is_a_pure_function_and_varies() {
    let g = Generator::new(7, 32, 32.0);
    let a = g.generate(ChunkPos::new(2, 3));
    assert_eq!(a, Generator::new(7, 32, 32.0).generate(ChunkPos::new(2, 3)));
    assert_eq!(
        a.bytes.len(),
        32 * 32 * 3,
        "a u16 height and a u8 material per cell"
    );
    assert_ne!(a, g.generate(ChunkPos::new(3, 3)));
    assert_ne!(a, Generator::new(8, 32, 32.0).generate(ChunkPos::new(2, 3)));
    let heights: std::collections::BTreeSet<u16> = (0..32)
        .flat_map(|j| (0..32).map(move |i| (i, j)))
        .map(|(i, j)| a.height(i, j))
        .collect();
    assert!(
        heights.len() > 100,
        "a height field, not a constant: {}",
        heights.len()
    );
}

#[test]
fn logs_are_byte_identical_whatever_the_workers_and_the_run() {
    let mut logs = Vec::new();
    for workers in [1, 2, 8] {
        for _ in 0..3 {
            let mut g = game(&scene(
                3,
                4.0,
                json!({ "seed": 9, "workers": workers, "commitLatency": 1 }),
            ));
            run(&mut g, &drive(80), 80);
            logs.push((workers, log(&g)));
        }
    }
    let built = logs[0]
        .1
        .iter()
        .filter(|l| l.contains("world.terrain.built"))
        .count();
    assert!(built > 60, "the drive builds terrain: {built}");
    for (workers, l) in &logs[1..] {
        assert_eq!(l, &logs[0].1, "workers {workers}");
    }
}

#[test]
fn a_chunk_is_committed_exactly_commit_latency_ticks_after_its_load() {
    let mut g = game(&scene(1, 9.0, json!({ "commitLatency": 3, "workers": 2 })));
    run(&mut g, &[], 4);
    let ev: Vec<(u64, String)> = g
        .engine()
        .events()
        .iter()
        .map(|e| (e.tick, e.event.to_string()))
        .collect();
    assert_eq!(
        ev.iter()
            .filter(|(t, e)| *t == 1 && e == "world.chunk.loaded")
            .count(),
        9
    );
    assert_eq!(
        ev.iter()
            .filter(|(_, e)| e == "world.terrain.built")
            .count(),
        9
    );
    assert!(ev
        .iter()
        .filter(|(_, e)| e == "world.terrain.built")
        .all(|(t, _)| *t == 4));
    // Built events come at the start of tick 4, in load order, and carry the chunk's hash.
    let first = g
        .engine()
        .events()
        .iter()
        .find(|e| e.event == "world.terrain.built")
        .unwrap();
    let hash = Generator::new(0, 32, 32.0)
        .generate(ChunkPos::new(0, 0))
        .hash();
    assert_eq!(first.data["hash"], json!(format!("{hash:016x}")));
    assert!(terrain(&g).is_built(ChunkPos::new(0, 0)));
    assert!(terrain(&g)
        .height_at(world_streaming::grid::Position::new(5.0, 5.0))
        .is_some());
}

#[test]
fn a_chunk_released_while_in_flight_is_never_built_nor_resident() {
    // Loaded at tick 1, due at tick 11; the car leaves at tick 2 so that it is released at tick
    // 2 — whatever the worker did meanwhile (the result is discarded on arrival or at commit).
    let mut g = game(&scene(0, 1.0, json!({ "commitLatency": 10, "workers": 1 })));
    run(
        &mut g,
        &[json!({"tick": 2, "do": "move", "entity": "car", "to": {"x": 5000, "z": 16}})],
        30,
    );
    let built: Vec<(i64, i64)> = g
        .engine()
        .events()
        .iter()
        .filter(|e| e.event == "world.terrain.built")
        .map(|e| (e.data["x"].as_i64().unwrap(), e.data["z"].as_i64().unwrap()))
        .collect();
    assert!(
        !built.contains(&(0, 0)),
        "(0,0) was released in flight: {built:?}"
    );
    assert!(!terrain(&g).is_built(ChunkPos::new(0, 0)));
    assert_eq!(
        built,
        [(156, 0)],
        "the far chunk is built, 10 ticks after its load"
    );
}

#[test]
fn build_release_build_again_gives_the_same_bytes() {
    let mut g = game(&scene(0, 1.0, json!({ "commitLatency": 1, "seed": 5 })));
    run(
        &mut g,
        &[
            json!({"tick": 5, "do": "move", "entity": "car", "to": {"x": 5000, "z": 16}}),
            json!({"tick": 10, "do": "move", "entity": "car", "to": {"x": 16, "z": 16}}),
        ],
        15,
    );
    let hashes: Vec<String> = g
        .engine()
        .events()
        .iter()
        .filter(|e| e.event == "world.terrain.built" && e.data["x"] == 0)
        .map(|e| e.data["hash"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(hashes.len(), 2, "built, released, built again");
    assert_eq!(hashes[0], hashes[1]);
    let data = terrain(&g).chunk(ChunkPos::new(0, 0)).unwrap();
    assert_eq!(
        *data,
        Generator::new(5, 32, 32.0).generate(ChunkPos::new(0, 0))
    );
}

#[test]
fn readiness_waits_for_terrain_and_run_until_ready_converges() {
    let mut g = game(&scene(2, 4.0, json!({ "commitLatency": 5 })));
    let ticks = g.run_until_ready("hero", 100).unwrap();
    // 25 chunks at 4 a tick: the last loads on tick 7 and is built on tick 12.
    assert_eq!(ticks, 12);
    assert_eq!(
        g.engine().variables().get("world.chunks.progress"),
        Some(&json!(1.0))
    );
}

#[test]
fn a_save_mid_generation_continues_exactly() {
    let s = scene(
        2,
        3.0,
        json!({ "commitLatency": 4, "workers": 2, "seed": 3 }),
    );
    let lines = drive(60);
    let mut whole = game(&s);
    run(&mut whole, &lines, 60);
    let mut in_flight_at_save = 0;
    for n in [3u64, 17, 33, 41] {
        let dir = tempfile::tempdir().unwrap();
        let (second, actual) = common::resumed_from_save(&s, dir.path(), &lines, n, 60);
        let save = std::fs::read_to_string(dir.path().join("run.save.json")).unwrap();
        let section = &serde_json::from_str::<Value>(&save).unwrap()["kits"][TERRAIN];
        in_flight_at_save += section["inFlight"].as_array().unwrap().len();
        assert_eq!(second.engine().tick_count(), 60);
        let expected = common::events_after(&whole, n);
        assert_eq!(actual, expected, "saved at {n}");
    }
    assert!(
        in_flight_at_save > 5,
        "saves were taken mid-generation: {in_flight_at_save}"
    );
}

#[test]
fn bad_config_and_another_seeds_save_are_clear_errors() {
    let err = scene_error(&scene(1, 1.0, json!({ "cellsPerChunk": 0 })));
    assert!(
        err.contains("kits[2].config.cellsPerChunk: expected an integer 1..=256, got 0"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut a = game(&scene(1, 9.0, json!({ "seed": 1, "commitLatency": 1 })));
    run(&mut a, &[], 3);
    let save = dir.path().join("a.json");
    a.save(&save).unwrap();
    let mut b = game(&scene(1, 9.0, json!({ "seed": 2, "commitLatency": 1 })));
    let err = common::refused_alike(&mut b, &save, common::Alone::NeedsTheGame);
    assert!(err.contains("seed 1") && err.contains("seed 2"), "{err}");
    assert_eq!(
        b.engine().tick_count(),
        0,
        "the failed load changed nothing"
    );
}

#[test]
fn lua_mods_reach_the_terrain_service() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("survey.lua"),
        r#"
log("cells", terrain.cellsPerChunk(), terrain.isBuilt(0, 0), terrain.heightAt({x = 5, z = 5}))
terrain.onBuilt(function(c, hash)
  local chunk = terrain.chunk(c.x, c.z)
  if c.x == 0 and c.z == 0 then
    log("built", c.x, c.z, hash == chunk.hash, chunk.cells, terrain.isBuilt(0, 0),
        math.type(terrain.heightAt({x = 5, z = 5})))
  end
end)
"#,
    )
    .unwrap();
    let mut s = scene(0, 1.0, json!({ "commitLatency": 2, "cellsPerChunk": 8 }));
    s["mods"] = json!(["survey.lua"]);
    let mut g = common::game_in(&s, dir.path());
    run(&mut g, &[], 3);
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert_eq!(
        log,
        [
            "cells\t8\tfalse\tnil",
            "built\t0\t0\ttrue\t8\ttrue\tinteger"
        ]
    );
}
