//! Loading and checking saves: what a save costs to load when every load first checks it on its
//! own (each kit's section check, the one `check` of a save runs) and then against the game.
//! `cargo bench --bench saves`.
//!
//! - `load/streaming radius 32`: a streaming section of 4 225 loaded chunks, into a game of its
//!   scene (the host's part and the section, checked and restored).
//! - `load/every kit`: streaming with LOD, terrain (its built chunks and blocks regenerated and
//!   their hashes compared) and nav, into a game of its scene.
//! - `check/…`: `check` of the same saves on their own (`files::save::check`).

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

fn game(scene: &Value, dir: &Path) -> Game {
    Game::from_scene_text(&scene.to_string(), "scene.json", dir, &builtin_catalog()).unwrap()
}

fn run(game: &mut Game, lines: &[Value], target: u64) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    game.run(&Inputs::parse(&text, "inputs.jsonl").unwrap(), target)
        .unwrap();
}

fn streaming_scene() -> Value {
    json!({
        "kits": [ { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 32, "budgetMs": 4096 } } ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    })
}

fn every_kit_scene() -> Value {
    json!({
        "kits": [ { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 4, "budgetMs": 24,
                "lod": [ { "step": 2, "radius": 8 }, { "step": 4, "radius": 16 } ],
                "lodBudget": 64, "lookAheadTicks": 2 } },
            { "id": "world.terrain", "config": { "seed": 3, "cellsPerChunk": 16, "commitLatency": 2, "workers": 1 } },
            { "id": "world.nav", "config": {} } ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } },
            { "id": "a1", "tags": ["agent"], "position": { "x": 2, "z": 2 },
              "data": { "goal": { "x": 100, "z": 60 } } } ]
    })
}

/// A save of `scene` after `ticks` ticks (the hero walking east), in `dir`.
fn saved(scene: &Value, ticks: u64, dir: &Path, name: &str) -> std::path::PathBuf {
    let mut g = game(scene, dir);
    let walk: Vec<Value> = (1..=ticks)
        .map(|t| json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": 16 + 4 * t, "z": 16}}))
        .collect();
    run(&mut g, &walk, ticks);
    let path = dir.join(name);
    g.save(&path).unwrap();
    path
}

fn saves(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "streaming radius 32",
            streaming_scene(),
            saved(&streaming_scene(), 3, dir.path(), "s.json"),
        ),
        (
            "every kit",
            every_kit_scene(),
            saved(&every_kit_scene(), 30, dir.path(), "e.json"),
        ),
    ];
    let mut g = c.benchmark_group("load");
    for (name, scene, path) in &cases {
        let mut target = game(scene, dir.path());
        g.bench_function(*name, |b| b.iter(|| target.load(path).unwrap()));
    }
    g.finish();
    let mut g = c.benchmark_group("check");
    for (name, _, path) in &cases {
        let value: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        g.bench_function(*name, |b| {
            b.iter(|| world_streaming::files::save::check(&value).unwrap())
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
}

criterion_group! { name = benches; config = config(); targets = saves }
criterion_main!(benches);
