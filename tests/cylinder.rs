//! The seed's cylinder, `examples/scenes/cylinder.json` with its drive
//! (docs/vertical.md#the-seeds-cylinder): a disc of radius 8 extruded to ±4 sections, filled while
//! the pilot hovers, then a flight east that climbs 8 sections and dives 12. Played through the
//! public API and the command line; every expectation is computed here from the rule (a column
//! `dx² + dz² <= 8²`, a row `|y − fy| <= 4`), not asked of the kit.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;

const SIZE: f64 = 32.0;
const R: i64 = 8;
const RV: i64 = 4;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pilot's position after the inputs of each tick: `(tick, (x, y, z))` from the inputs file,
/// starting where the scene puts it.
fn flight() -> BTreeMap<u64, (f64, f64, f64)> {
    let text =
        std::fs::read_to_string(repo().join("examples/scenes/cylinder.inputs.jsonl")).unwrap();
    let mut at = BTreeMap::from([(0, (16.0, 16.0, 16.0))]);
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["do"], "move", "{line}");
        let to = &v["to"];
        let p = (
            to["x"].as_f64().unwrap(),
            to["y"].as_f64().unwrap(),
            to["z"].as_f64().unwrap(),
        );
        at.insert(v["tick"].as_u64().unwrap(), p);
    }
    at
}

fn position_at(flight: &BTreeMap<u64, (f64, f64, f64)>, tick: u64) -> (f64, f64, f64) {
    *flight.range(..=tick).next_back().unwrap().1
}

/// The section of a position (height = chunk size: the scene leaves `vertical.height` out).
fn section_of((x, y, z): (f64, f64, f64)) -> (i64, i64, i64) {
    (
        (x / SIZE).floor() as i64,
        (y / SIZE).floor() as i64,
        (z / SIZE).floor() as i64,
    )
}

/// The seed's cylinder around a position, as `(y, z, x)` (row order).
fn cylinder(p: (f64, f64, f64)) -> BTreeSet<(i64, i64, i64)> {
    let (fx, fy, fz) = section_of(p);
    let mut set = BTreeSet::new();
    for dx in -R..=R {
        for dz in -R..=R {
            if dx * dx + dz * dz <= R * R {
                for dy in -RV..=RV {
                    set.insert((fy + dy, fz + dz, fx + dx));
                }
            }
        }
    }
    set
}

/// Kept by the focus at `p`: the disc of radius 9 and rows ±5.
fn kept(p: (f64, f64, f64), (y, z, x): (i64, i64, i64)) -> bool {
    let (fx, fy, fz) = section_of(p);
    let (dx, dz) = (x - fx, z - fz);
    dx * dx + dz * dz <= (R + 1) * (R + 1) && (y - fy).abs() <= RV + 1
}

/// The squared distance from `p` to the centre of a section, `dx·dx + dy·dy + dz·dz`.
fn dist2(p: (f64, f64, f64), (y, z, x): (i64, i64, i64)) -> f64 {
    let dx = (x as f64 + 0.5) * SIZE - p.0;
    let dy = (y as f64 + 0.5) * SIZE - p.1;
    let dz = (z as f64 + 0.5) * SIZE - p.2;
    dx * dx + dy * dy + dz * dz
}

/// A naive planner of one focus without mods: release what is not kept, then load the 64
/// nearest wanted sections (ties `z`, `x`, `y`).
fn plan(loaded: &mut BTreeSet<(i64, i64, i64)>, p: (f64, f64, f64)) {
    loaded.retain(|&c| kept(p, c));
    let mut pending: Vec<(i64, i64, i64)> = cylinder(p).difference(loaded).copied().collect();
    pending.sort_by(|&a, &b| {
        dist2(p, a)
            .partial_cmp(&dist2(p, b))
            .unwrap()
            .then((a.1, a.2, a.0).cmp(&(b.1, b.2, b.0)))
    });
    loaded.extend(pending.into_iter().take(64));
}

fn yzx(c: &ChunkPos) -> (i64, i64, i64) {
    (c.y, c.z, c.x)
}

#[test]
fn the_counts_of_the_seed_cylinder_are_197_columns_by_9_rows() {
    let set = cylinder((16.0, 16.0, 16.0));
    let columns: BTreeSet<(i64, i64)> = set.iter().map(|&(_, z, x)| (z, x)).collect();
    assert_eq!((columns.len(), set.len()), (197, 1773));
}

#[test]
fn the_cylinder_drive_fills_climbs_dives_and_settles_as_a_naive_planner_does() {
    let flight = flight();
    let scene = repo().join("examples/scenes/cylinder.json");
    let mut game = Game::from_scene_file(&scene).unwrap();
    let inputs = Inputs::read(&repo().join("examples/scenes/cylinder.inputs.jsonl")).unwrap();
    let end = inputs.last_tick();
    assert_eq!(end, 240);
    let s = game.streaming().unwrap();
    assert!(s.vertical().is_some(), "the scene is vertical");
    let (mut lowest, mut highest) = (i64::MAX, i64::MIN);
    let mut settled_at = None;
    let mut problems = Vec::new();
    let mut naive = BTreeSet::new();
    game.run_observing(&inputs, end, |game, _| {
        let tick = game.engine().tick_count();
        let s = game.streaming().unwrap();
        let focus = position_at(&flight, tick);
        let (fx, fy, fz) = section_of(focus);
        let loaded: Vec<(i64, i64, i64)> = s.loaded().iter().map(yzx).collect();
        plan(&mut naive, focus);
        if loaded.len() != naive.len() || !loaded.iter().eq(naive.iter()) {
            problems.push(format!(
                "tick {tick}: {} loaded, the naive planner has {}",
                loaded.len(),
                naive.len()
            ));
        }
        // Row order, and nothing beyond the release rule (r + 1 across, rv + 1 up and down).
        if !loaded.windows(2).all(|w| w[0] < w[1]) {
            problems.push(format!("tick {tick}: loaded() not in row order"));
        }
        for &(y, z, x) in &loaded {
            let (dx, dz) = (x - fx, z - fz);
            if dx * dx + dz * dz > (R + 1) * (R + 1) || (y - fy).abs() > RV + 1 {
                problems.push(format!("tick {tick}: ({x}, {y}, {z}) kept beyond the rule"));
            }
            lowest = lowest.min(y);
            highest = highest.max(y);
        }
        // The columns: every column with a loaded section, in row order (z, x).
        let columns: Vec<(i64, i64)> = s.columns().iter().map(|c| (c.z, c.x)).collect();
        let derived: Vec<(i64, i64)> = loaded
            .iter()
            .map(|&(_, z, x)| (z, x))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if columns != derived {
            problems.push(format!("tick {tick}: columns() {columns:?} vs {derived:?}"));
        }
        if settled_at.is_none() && loaded.len() == 1773 {
            settled_at = Some(tick);
        }
        let want = cylinder(focus);
        let got: BTreeSet<(i64, i64, i64)> = loaded.iter().copied().collect();
        if tick == 60 && (got != want || columns.len() != 197) {
            problems.push(format!(
                "tick 60: {} loaded in {} columns; not the cylinder at ({fx}, {fy}, {fz})",
                got.len(),
                columns.len()
            ));
        }
        if tick == 240 && (!got.is_superset(&want) || !s.pending().is_empty()) {
            problems.push(format!(
                "tick 240: {} loaded, {} pending; the cylinder at ({fx}, {fy}, {fz}) not whole",
                got.len(),
                s.pending().len()
            ));
        }
    })
    .unwrap();
    problems.sort_by_key(|p| p.contains("columns()"));
    problems.truncate(5);
    assert!(problems.is_empty(), "{problems:#?}");
    // 1 773 sections at 64 loads a tick: 28 ticks.
    assert_eq!(settled_at, Some(28));
    // The climb tops out at y 272 m (row 8, rows up to 12 wanted); the dive bottoms out at
    // −112 m (row −4, rows down to −8).
    assert_eq!((lowest, highest), (-8, 12));
    // At the end: the 1 773 sections of the cylinder and 283 more of the hysteresis band the
    // dive left (kept while within radius 9 and rows ±5), in 216 columns.
    let s = game.streaming().unwrap();
    assert_eq!(s.loaded().len(), 2056);
    assert_eq!(s.columns().len(), 216);
    // Every section event carries y; every column event is a column.
    let events = common::event_lines(&game);
    let mut counts = BTreeMap::<&str, usize>::new();
    for line in &events {
        let v: Value = serde_json::from_str(line).unwrap();
        let name = v["event"].as_str().unwrap();
        for kind in [
            "world.chunk.loaded",
            "world.chunk.unloaded",
            "world.column.loaded",
            "world.column.unloaded",
        ] {
            if name == kind {
                *counts.entry(kind).or_default() += 1;
                let keys: Vec<&String> = v["data"].as_object().unwrap().keys().collect();
                let want: &[&str] = if kind.contains("column") {
                    &["x", "z"]
                } else {
                    &["x", "y", "z"]
                };
                assert_eq!(keys, want, "{line}");
            }
        }
    }
    // What is loaded at the end is what loaded minus what was released.
    let count = |kind: &str| counts.get(kind).copied().unwrap_or(0);
    assert_eq!(
        count("world.chunk.loaded") - count("world.chunk.unloaded"),
        2056,
        "{counts:?}"
    );
    assert_eq!(
        count("world.column.loaded") - count("world.column.unloaded"),
        216,
        "{counts:?}"
    );
}

/// The drive as docs/vertical.md#the-drive runs it, from the command line.
#[test]
fn the_documented_command_runs_the_drive_to_its_documented_counts() {
    let out = common::bin()
        .current_dir(repo())
        .args([
            "run",
            "examples/scenes/cylinder.json",
            "--inputs",
            "examples/scenes/cylinder.inputs.jsonl",
            "--state",
            "-",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(state["tick"], 240);
    assert_eq!(state["variables"]["world.chunks.loaded"], 2056);
    assert_eq!(state["variables"]["world.chunks.pending"], 0);
    let loaded = state["loaded"].as_array().unwrap();
    assert!(loaded.iter().all(|c| c.get("y").is_some()), "y is written");
    let rows: BTreeSet<i64> = loaded.iter().map(|c| c["y"].as_i64().unwrap()).collect();
    assert_eq!(
        rows,
        (-8..=1).collect(),
        "rows −8 ..= 0 wanted around row −4, row 1 kept"
    );
}
