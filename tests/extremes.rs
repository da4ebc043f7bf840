//! No input the checks accept reaches a panic: random accepted configurations (any finite
//! positive `chunkSize`, every radius, every `cellsPerChunk`, with and without a world
//! directory) driven with positions at the documented limit (±1e15 m), chunk coordinates at the
//! clamp edge (±2^52, plus the largest radius), edits, tickets and `heightAt` queries at extreme
//! positions, through the Rust API; and the command line's exit codes for the same (0 or 1,
//! never 101).
//!
//! Every panic counts, on any thread (a terrain worker's too, though the pool catches it): a
//! hook installed once counts them, and each case asserts the count is still 0.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use assert_cmd::Command;
use proptest::prelude::*;
use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position, MAX_CHUNK_COORD, MAX_COORDINATE};
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Installs the counting hook (once) and returns the panics counted so far.
fn panics() -> usize {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
    PANICS.load(Ordering::SeqCst)
}

fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "ws-extremes-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Any finite positive `f64` (what `chunkSize` accepts), the extremes more often.
fn chunk_size() -> impl Strategy<Value = f64> {
    prop_oneof![
        (1u64..0x7ff0_0000_0000_0000).prop_map(f64::from_bits),
        prop::sample::select(vec![
            f64::MAX,
            1e300,
            1e21,
            2048.0,
            32.0,
            0.1,
            1e-300,
            f64::MIN_POSITIVE,
            5e-324,
        ]),
        0.001..1e6f64,
    ]
}

/// A coordinate the files accept (|v| <= 1e15), the edges more often.
fn coordinate() -> impl Strategy<Value = f64> {
    let below = f64::from_bits(MAX_COORDINATE.to_bits() - 1);
    prop_oneof![
        prop::sample::select(vec![
            MAX_COORDINATE,
            -MAX_COORDINATE,
            below,
            -below,
            0.0,
            -0.0,
            8.0
        ]),
        -MAX_COORDINATE..=MAX_COORDINATE,
        -1e3..1e3f64,
    ]
}

/// Any `f64` a Rust caller may pass to a query, the ones near ±2^63 more often.
fn any_metres() -> impl Strategy<Value = f64> {
    let two63 = 2f64.powi(63);
    prop_oneof![
        any::<f64>(),
        prop::sample::select(vec![
            two63,
            -two63,
            f64::from_bits(two63.to_bits() - 1),
            1e300,
            -f64::MAX,
            f64::INFINITY,
            f64::NAN,
            MAX_COORDINATE,
        ]),
        coordinate(),
    ]
}

fn position() -> impl Strategy<Value = (f64, f64)> {
    (coordinate(), coordinate())
}

#[derive(Debug, Clone)]
struct Case {
    chunk_size: f64,
    radius: u32,
    budget: u32,
    cells: u32,
    seed: u64,
    latency: u32,
    world_dir: bool,
    bounds: Option<(f64, f64)>,
    start: (f64, f64),
    moves: Vec<(f64, f64)>,
    edits: Vec<(f64, f64)>,
    tickets: Vec<((f64, f64), u32)>,
    queries: Vec<(f64, f64)>,
    chunks: Vec<(i64, i64)>,
}

fn chunk_coord() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        (-70..=70i64).prop_map(|d| MAX_CHUNK_COORD + d),
        (-70..=70i64).prop_map(|d| -MAX_CHUNK_COORD + d),
        -3..=3i64,
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            chunk_size(),
            prop_oneof![0..=2u32, Just(64), 0..=64u32],
            0..=6u32,
            // 256 cells with at most 6 loads a tick and 3 ticks: at most ~20 big chunks.
            prop_oneof![1..=4u32, Just(256), 1..=256u32],
            any::<u64>(),
            1..=2u32,
            any::<bool>(),
        ),
        (
            prop::option::of(position()),
            position(),
            prop::collection::vec(position(), 0..3),
            prop::collection::vec(position(), 0..4),
            prop::collection::vec((position(), prop_oneof![Just(64), 0..=64u32]), 0..3),
            prop::collection::vec((any_metres(), any_metres()), 0..6),
            prop::collection::vec((chunk_coord(), chunk_coord()), 0..4),
        ),
    )
        .prop_map(
            |(
                (chunk_size, radius, budget, cells, seed, latency, world_dir),
                (bounds, start, moves, edits, tickets, queries, chunks),
            )| Case {
                chunk_size,
                radius,
                budget,
                cells,
                seed,
                latency,
                world_dir,
                bounds,
                start,
                moves,
                edits,
                tickets,
                queries,
                chunks,
            },
        )
}

fn at((x, z): (f64, f64)) -> Value {
    json!({ "x": x, "z": z })
}

fn scene(c: &Case, dir: &Path) -> Value {
    let ground = match c.bounds {
        None => json!({ "id": "world.ground" }),
        Some((a, b)) => {
            // At least a metre wide (JSON text need not round-trip the last bit of a float).
            let (lo, hi) = (a.min(b), a.max(b));
            let (lo, hi) = if hi - lo >= 1.0 {
                (lo, hi)
            } else if lo + 1.0 <= MAX_COORDINATE {
                (lo, lo + 1.0)
            } else {
                (hi - 1.0, hi)
            };
            json!({ "id": "world.ground", "config": { "bounds": {
                "minX": lo, "minZ": lo, "maxX": hi, "maxZ": hi } } })
        }
    };
    let mut terrain = json!({
        "seed": c.seed, "cellsPerChunk": c.cells, "workers": 1,
        "commitLatency": c.latency, "flushEveryTicks": 1
    });
    if c.world_dir {
        terrain["worldDir"] = json!(dir.join("world").to_str().unwrap());
    }
    json!({
        "kits": [
            ground,
            { "id": "world.streaming", "config": {
                "chunkSize": c.chunk_size, "radius": c.radius, "budgetMs": c.budget } },
            { "id": "world.terrain", "config": terrain }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": at(c.start) } ]
    })
}

fn inputs(c: &Case) -> Vec<Value> {
    let mut lines = Vec::new();
    for (k, (p, radius)) in c.tickets.iter().enumerate() {
        lines.push(
            json!({"tick": 1, "do": "request", "id": format!("t{k}"), "at": at(*p),
            "radius": radius, "ticks": 3}),
        );
    }
    for p in &c.moves {
        lines.push(json!({"tick": 2, "do": "move", "entity": "hero", "to": at(*p)}));
    }
    // At the start position (a built chunk once the commit is through) and elsewhere.
    lines.push(json!({"tick": 3, "do": "edit", "at": at(c.start), "height": 7, "material": 3}));
    for p in &c.edits {
        lines.push(json!({"tick": 3, "do": "edit", "at": at(*p), "height": 65535}));
    }
    for (x, z) in &c.chunks {
        lines.push(json!({"tick": 3, "do": "release", "x": x, "z": z}));
    }
    lines
}

fn run_case(c: &Case) -> Result<(), TestCaseError> {
    let before = panics();
    let dir = scratch("case");
    let scene = scene(c, &dir);
    let mut game =
        Game::from_scene_text(&scene.to_string(), "scene.json", &dir, &builtin_catalog())
            .map_err(|e| TestCaseError::fail(format!("an accepted config was refused: {e}")))?;
    let lines = inputs(c);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let parsed = Inputs::parse(&text, "inputs.jsonl")
        .map_err(|e| TestCaseError::fail(format!("inputs refused: {e:?}")))?;
    game.run(&parsed, 4)
        .map_err(|e| TestCaseError::fail(format!("run failed: {e}")))?;
    let terrain = game
        .engine()
        .service::<dyn TerrainService>(TERRAIN)
        .unwrap();
    for (x, z) in &c.queries {
        let p = Position::new(*x, *z);
        let _ = terrain.height_at(p);
        // Positions the files refuse are errors here too, never a panic.
        let _ = game.edit(p, 1, None);
        let _ = game.request_around("q", p, 64, 1);
        let _ = game.streaming().unwrap().chunk_of(p);
    }
    for (x, z) in &c.chunks {
        let chunk = ChunkPos::new(*x, *z);
        let _ = terrain.chunk(chunk);
        let _ = terrain.is_built(chunk);
        let _ = game.streaming().unwrap().release(chunk);
    }
    game.tick();
    let _ = game.state();
    let save = dir.join("save.json");
    game.save(&save)
        .map_err(|e| TestCaseError::fail(format!("save failed: {e}")))?;
    drop(terrain);
    drop(game);
    // A fresh game loads the save (and, with a world directory, reads the region files back).
    let mut again =
        Game::from_scene_text(&scene.to_string(), "scene.json", &dir, &builtin_catalog())
            .map_err(|e| TestCaseError::fail(format!("reopening: {e}")))?;
    again
        .load(&save)
        .map_err(|e| TestCaseError::fail(format!("loading the save: {e}")))?;
    again.tick();
    drop(again);
    let _ = std::fs::remove_dir_all(&dir);
    prop_assert_eq!(panics(), before, "a panic on the way (see stderr)");
    Ok(())
}

proptest! {
    // 48 cases by default (a few seconds); `PROPTEST_CASES=2000` for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn accepted_configs_and_extreme_positions_never_panic(c in case()) {
        run_case(&c)?;
    }
}

#[test]
fn a_chunk_size_of_1e21_runs_with_terrain() {
    // The review's case: chunk 1 of a 1e21 m grid is 1.6e19 lattice units of the 64 m octave.
    let c = Case {
        chunk_size: 1e21,
        radius: 1,
        budget: 4,
        cells: 32,
        seed: 1,
        latency: 1,
        world_dir: false,
        bounds: None,
        start: (8.0, 8.0),
        moves: vec![],
        edits: vec![],
        tickets: vec![],
        queries: vec![(1.5e21, 8.0)],
        chunks: vec![],
    };
    run_case(&c).unwrap();
}

#[test]
fn edits_and_tickets_at_the_clamp_edge_with_a_tiny_chunk_size_run() {
    // 1e-300 m chunks: every position is a chunk index far past 2^52, clamped; a radius of 64
    // reaches 2^52 + 64 and its region file is past the grid's last region.
    let c = Case {
        chunk_size: 1e-300,
        radius: 64,
        budget: 3,
        cells: 256,
        seed: u64::MAX,
        latency: 1,
        world_dir: true,
        bounds: None,
        start: (MAX_COORDINATE, -MAX_COORDINATE),
        moves: vec![(-MAX_COORDINATE, MAX_COORDINATE)],
        edits: vec![(MAX_COORDINATE, MAX_COORDINATE)],
        tickets: vec![((MAX_COORDINATE, MAX_COORDINATE), 64)],
        queries: vec![(2f64.powi(63), -2f64.powi(63)), (f64::NAN, f64::INFINITY)],
        chunks: vec![(i64::MAX, i64::MIN), (MAX_CHUNK_COORD + 64, 0)],
    };
    run_case(&c).unwrap();
}

/// The command line on the review's scene and its neighbours: `check` accepts, `run` exits 0.
#[test]
fn the_cli_runs_huge_and_tiny_chunk_sizes_with_terrain() {
    let dir = scratch("cli");
    for (k, size) in [1e21, 1e300, f64::MAX, 1e-300, 5e-324]
        .into_iter()
        .enumerate()
    {
        let scene = json!({
            "kits": [
                { "id": "game.engine" }, { "id": "world.ground" },
                { "id": "world.streaming", "config": { "chunkSize": size, "radius": 1 } },
                { "id": "world.terrain", "config": { "seed": 1, "workers": 1 } }
            ],
            "entities": [ { "id": "hero", "tags": ["player"],
                            "position": { "x": MAX_COORDINATE, "z": 8 } } ]
        });
        let path = dir.join(format!("scene{k}.json"));
        std::fs::write(&path, scene.to_string()).unwrap();
        Command::cargo_bin("world-streaming")
            .unwrap()
            .arg("check")
            .arg(&path)
            .assert()
            .code(0);
        let out = Command::cargo_bin("world-streaming")
            .unwrap()
            .args([
                "run",
                path.to_str().unwrap(),
                "--ticks",
                "3",
                "--events",
                "-",
            ])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "chunkSize {size}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let built = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("\"world.terrain.built\""))
            .count();
        assert_eq!(
            built, 4,
            "chunkSize {size}: four chunks loaded at tick 1, built at 3"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Rust API took a ticket at any finite position; one beyond ±1e15 m went into the save,
/// which `load` (like every file) refused: a game wrote a save it could not load.
#[test]
fn a_ticket_the_rust_api_takes_is_one_its_save_loads() {
    let dir = scratch("ticket");
    let scene = json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": { "radius": 0 } } ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    })
    .to_string();
    let new_game =
        || Game::from_scene_text(&scene, "scene.json", &dir, &builtin_catalog()).unwrap();
    let mut game = new_game();
    let err = game
        .request_around("far", Position::new(1e300, 0.0), 64, 100)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("at.x: expected a finite number of metres within ±1e15"),
        "{err}"
    );
    assert!(game.tickets().is_empty());
    game.request_around(
        "edge",
        Position::new(-MAX_COORDINATE, MAX_COORDINATE),
        64,
        100,
    )
    .unwrap();
    game.tick();
    let save = dir.join("save.json");
    game.save(&save).unwrap();
    let mut again = new_game();
    again.load(&save).unwrap();
    assert_eq!(again.tickets().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
