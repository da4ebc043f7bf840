//! Terrain's side of complete chunks: chunk versions (docs/reference/terrain.md#versions) and
//! bordered snapshots (docs/reference/terrain.md#bordered-snapshots) — versions at commit, on
//! edits of the chunk and its neighbours, forgotten on release, `world.terrain.changed` for every
//! chunk whose version moved with `neighbours` > 0 (and today's events with 0), saved and
//! identical whatever the workers; snapshots cell for cell against the chunks, clamped at the
//! ground's edge, refused before completeness and for a bad skin.

mod common;

use std::collections::BTreeMap;
use std::rc::Rc;

use common::{apply, c, game};
use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::kits::streaming::{StreamingService, STREAMING};
use world_streaming::kits::terrain::{Snapshot, SnapshotError, TerrainService, TERRAIN};

/// A scene: chunks of 32 m and `cells` cells, the hero at the centre of chunk (0, 0);
/// `neighbours` in the streaming config when given; ground `bounds` when given.
fn scene(radius: u32, neighbours: Option<u32>, terrain: Value, bounds: Option<Value>) -> Value {
    let mut streaming = json!({ "chunkSize": 32, "radius": radius, "budgetMs": 9 });
    if let Some(k) = neighbours {
        streaming["neighbours"] = json!(k);
    }
    let ground = match bounds {
        Some(b) => json!({ "id": "world.ground", "config": { "bounds": b } }),
        None => json!({ "id": "world.ground" }),
    };
    json!({
        "kits": [
            ground,
            { "id": "world.streaming", "config": streaming },
            { "id": "world.terrain", "config": terrain }
        ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } }
        ],
        "control": "hero"
    })
}

fn terrain(g: &Game) -> Rc<dyn TerrainService> {
    g.engine().service::<dyn TerrainService>(TERRAIN).unwrap()
}

fn streaming(g: &Game) -> Rc<dyn StreamingService> {
    g.engine()
        .service::<dyn StreamingService>(STREAMING)
        .unwrap()
}

fn ready(scene: &Value) -> Game {
    let mut g = game(scene);
    g.run_until_ready("hero", 100).unwrap();
    g
}

/// The world position of cell `(i, j)` of `chunk` (`cells` cells a side of 32 m).
fn cell_pos(chunk: ChunkPos, cells: u32, i: u32, j: u32) -> Position {
    let cell = 32.0 / f64::from(cells);
    Position::new(
        chunk.x as f64 * 32.0 + (f64::from(i) + 0.5) * cell,
        chunk.z as f64 * 32.0 + (f64::from(j) + 0.5) * cell,
    )
}

fn edit_line(tick: u64, at: Position, height: u16, material: Option<u8>) -> Value {
    let mut l = json!({"tick": tick, "do": "edit", "at": {"x": at.x, "z": at.z}, "height": height});
    if let Some(m) = material {
        l["material"] = json!(m);
    }
    l
}

/// Edits the cell now, stamped with the next tick.
fn edit(g: &mut Game, at: Position, height: u16, material: Option<u8>) {
    let tick = g.engine().tick_count() + 1;
    apply(g, edit_line(tick, at, height, material));
}

/// The chunks within ring 2 of (0, 0) and their versions.
fn versions(t: &dyn TerrainService) -> BTreeMap<ChunkPos, Option<u64>> {
    (-2..=2)
        .flat_map(|z| (-2..=2).map(move |x| c(x, z)))
        .map(|ch| (ch, t.version(ch)))
        .collect()
}

/// The `world.terrain.changed {x, z}` (level 0) chunks of tick `tick`, in emission order.
fn changed_at(g: &Game, tick: u64) -> Vec<ChunkPos> {
    common::events_named(g, "world.terrain.changed")
        .into_iter()
        .filter(|(t, d)| *t == tick && d.get("level").is_none())
        .map(|(_, d)| c(d["x"].as_i64().unwrap(), d["z"].as_i64().unwrap()))
        .collect()
}

/// Every cell of a snapshot equals the cell read one by one through `chunk()` of the 9 chunks
/// (`clamp`: the ground's chunk columns and rows, a cell outside them clamped into them).
fn assert_cells(t: &dyn TerrainService, s: &Snapshot, clamp: Option<(i64, i64, i64, i64)>) {
    let n = i64::from(t.cells_per_chunk());
    let skin = i64::from(s.skin);
    assert_eq!(s.side as i64, n + 2 * skin);
    assert_eq!(s.heights.len(), (s.side * s.side) as usize);
    assert_eq!(s.materials.len(), (s.side * s.side) as usize);
    for j in 0..s.side {
        for i in 0..s.side {
            // The cell in world cell coordinates.
            let mut gx = s.chunk.x * n + i64::from(i) - skin;
            let mut gz = s.chunk.z * n + i64::from(j) - skin;
            if let Some((x0, x1, z0, z1)) = clamp {
                gx = gx.clamp(x0 * n, (x1 + 1) * n - 1);
                gz = gz.clamp(z0 * n, (z1 + 1) * n - 1);
            }
            let ch = c(gx.div_euclid(n), gz.div_euclid(n));
            let data = t.chunk(ch).unwrap_or_else(|| panic!("{ch} built"));
            let (li, lj) = (gx.rem_euclid(n) as u32, gz.rem_euclid(n) as u32);
            assert_eq!(
                (s.height(i, j), s.material(i, j)),
                (data.height(li, lj), data.material(li, lj)),
                "cell ({i}, {j}) of the snapshot of {} with skin {}",
                s.chunk,
                s.skin
            );
        }
    }
}

#[test]
fn a_chunk_is_version_1_at_its_commit_and_forgets_its_version_on_release() {
    let mut g = game(&scene(1, None, json!({ "commitLatency": 2 }), None));
    g.tick(); // loaded at tick 1, committed at tick 3
    let t = terrain(&g);
    assert_eq!(t.version(c(0, 0)), None, "loaded, not built");
    g.tick();
    assert_eq!(t.version(c(0, 0)), None);
    g.tick();
    for z in -1..=1 {
        for x in -1..=1 {
            assert_eq!(t.version(c(x, z)), Some(1), "({x}, {z}) at its commit");
        }
    }
    assert_eq!(t.version(c(2, 0)), None, "never loaded");
    // Moved up by an edit, then released: forgotten; loaded again: 1.
    edit(&mut g, cell_pos(c(-1, 0), 32, 5, 5), 4321, None);
    g.tick();
    assert_eq!(t.version(c(-1, 0)), Some(2));
    let tick = g.engine().tick_count() + 1;
    apply(
        &mut g,
        json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": 16 + 5 * 32, "z": 16}}),
    );
    g.tick();
    assert!(!t.is_built(c(-1, 0)));
    assert_eq!(t.version(c(-1, 0)), None, "released: forgotten");
    let tick = g.engine().tick_count() + 1;
    apply(
        &mut g,
        json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": 16, "z": 16}}),
    );
    g.run_until_ready("hero", 100).unwrap();
    assert_eq!(t.version(c(-1, 0)), Some(1), "built again: 1");
    assert_eq!(t.version(c(0, 0)), Some(1));
}

#[test]
fn an_edit_moves_the_versions_of_its_chunk_and_all_8_neighbours_and_a_no_op_moves_none() {
    let mut g = ready(&scene(2, None, json!({ "commitLatency": 1 }), None));
    let t = terrain(&g);
    let before = versions(&*t);
    assert!(before.values().all(|v| *v == Some(1)), "{before:?}");
    // An interior cell of (1, 0): the 3 × 3 around (1, 0) move, nothing else.
    edit(&mut g, cell_pos(c(1, 0), 32, 16, 16), 9000, Some(3));
    g.tick();
    let after = versions(&*t);
    for (ch, v) in &after {
        let near = (ch.x - 1).abs() <= 1 && ch.z.abs() <= 1;
        assert_eq!(*v, Some(if near { 2 } else { 1 }), "{ch}");
    }
    // Its own edit: +1 for (0, 0), whose cell is interior too.
    edit(&mut g, cell_pos(c(0, 0), 32, 10, 20), 7, None);
    g.tick();
    assert_eq!(t.version(c(0, 0)), Some(3));
    assert_eq!(t.version(c(-1, -1)), Some(2));
    assert_eq!(
        t.version(c(2, 0)),
        Some(2),
        "(2, 0) is (1, 0)'s neighbour, not (0, 0)'s"
    );
    // Setting cells to what they hold (height, and the material kept or given again).
    let now = versions(&*t);
    edit(&mut g, cell_pos(c(1, 0), 32, 16, 16), 9000, Some(3));
    edit(&mut g, cell_pos(c(1, 0), 32, 16, 16), 9000, None);
    edit(&mut g, cell_pos(c(0, 0), 32, 10, 20), 7, None);
    g.tick();
    assert_eq!(versions(&*t), now, "no-op edits move no version");
}

#[test]
fn without_neighbours_the_changed_events_are_todays_while_versions_still_move() {
    for neighbours in [None, Some(0)] {
        let mut g = ready(&scene(2, neighbours, json!({ "commitLatency": 1 }), None));
        let t = terrain(&g);
        // Interior: only the edited chunk is told, but its 8 neighbours' versions move.
        edit(&mut g, cell_pos(c(0, 0), 32, 16, 16), 5000, None);
        g.tick();
        let tick = g.engine().tick_count();
        assert_eq!(changed_at(&g, tick), vec![c(0, 0)]);
        assert_eq!(t.version(c(1, 1)), Some(2));
        assert_eq!(t.version(c(-1, 0)), Some(2));
        // An east-edge cell: the chunk and its east neighbour, as ever.
        edit(&mut g, cell_pos(c(0, 0), 32, 31, 9), 5000, None);
        g.tick();
        let tick = g.engine().tick_count();
        assert_eq!(changed_at(&g, tick), vec![c(0, 0), c(1, 0)]);
        assert_eq!(t.version(c(-1, 1)), Some(3));
    }
}

#[test]
fn with_neighbours_every_chunk_whose_version_moved_is_told_once_a_tick_in_row_order() {
    let mut g = ready(&scene(2, Some(1), json!({ "commitLatency": 1 }), None));
    let t = terrain(&g);
    // Two interior edits in one tick, of (0, 0) and (1, 0): their 3 × 3s, once each, row order.
    edit(&mut g, cell_pos(c(0, 0), 32, 16, 16), 5000, None);
    edit(&mut g, cell_pos(c(1, 0), 32, 3, 28), 6000, Some(9));
    g.tick();
    let tick = g.engine().tick_count();
    let mut want: Vec<ChunkPos> = (-1..=1)
        .flat_map(|z| (-1..=2).map(move |x| c(x, z)))
        .collect();
    want.sort();
    assert_eq!(changed_at(&g, tick), want);
    assert_eq!(t.version(c(0, 0)), Some(3), "two edits in one tick: +2");
    assert_eq!(t.version(c(1, 1)), Some(3));
    assert_eq!(t.version(c(-1, 0)), Some(2));
    assert_eq!(t.version(c(2, 0)), Some(2));
    assert_eq!(t.version(c(-2, 0)), Some(1));
    // The next tick, nothing edited: nothing told.
    g.tick();
    assert_eq!(changed_at(&g, g.engine().tick_count()), vec![]);
    // A no-op edit: nothing told, no version moved.
    edit(&mut g, cell_pos(c(0, 0), 32, 16, 16), 5000, None);
    g.tick();
    assert_eq!(changed_at(&g, g.engine().tick_count()), vec![]);
    assert_eq!(t.version(c(0, 0)), Some(3));
}

#[test]
fn a_snapshot_is_the_chunk_and_its_neighbours_skin_cell_for_cell() {
    for (neighbours, cells) in [(None, 32), (Some(1), 32), (Some(1), 8), (None, 3)] {
        let mut g = ready(&scene(
            2,
            neighbours,
            json!({ "cellsPerChunk": cells }),
            None,
        ));
        let t = terrain(&g);
        // Edits at edges and corners of (0, 0)'s neighbours.
        edit(
            &mut g,
            cell_pos(c(-1, -1), cells, cells - 1, cells - 1),
            111,
            Some(1),
        );
        edit(&mut g, cell_pos(c(1, 0), cells, 0, 1), 222, Some(2));
        edit(&mut g, cell_pos(c(0, 1), cells, 2, 0), 333, None);
        g.tick();
        for skin in 0..=cells.min(8) {
            let s = t.snapshot(c(0, 0), skin).unwrap();
            assert_eq!((s.chunk, s.skin), (c(0, 0), skin));
            assert_eq!(s.version, t.version(c(0, 0)).unwrap());
            assert_cells(&*t, &s, None);
        }
        assert_eq!(
            t.snapshot(c(0, 0), 2).unwrap().version,
            4,
            "three edits next door"
        );
    }
}

#[test]
fn skin_beyond_the_ground_repeats_the_nearest_cell_of_the_ground() {
    // The ground: chunk columns 0..=2, rows 0..=1 (partly covered edges still count).
    let bounds = json!({ "minX": 0, "minZ": 0, "maxX": 70, "maxZ": 40 });
    for neighbours in [None, Some(1)] {
        let mut g = ready(&scene(3, neighbours, json!({}), Some(bounds.clone())));
        let t = terrain(&g);
        edit(&mut g, cell_pos(c(0, 0), 32, 0, 0), 1, Some(7)); // the ground's corner cell
        edit(&mut g, cell_pos(c(1, 1), 32, 31, 31), 2, Some(8));
        g.tick();
        for z in 0..=1 {
            for x in 0..=2 {
                for skin in [1, 2, 8] {
                    let s = t.snapshot(c(x, z), skin).unwrap();
                    assert_cells(&*t, &s, Some((0, 2, 0, 1)));
                }
            }
        }
        // The corner: the skin south-west of (0, 0) is its cell (0, 0), repeated.
        let s = t.snapshot(c(0, 0), 2).unwrap();
        assert_eq!((s.height(0, 0), s.material(1, 1)), (1, 7));
        assert_eq!(
            s.height(0, 3),
            s.height(2, 3),
            "west skin: the chunk's west column"
        );
    }
}

#[test]
fn a_snapshot_waits_for_completeness_and_refuses_a_bad_skin() {
    // Without neighbours: skin 0 once built; wider once the 8 neighbours are built.
    let mut g = game(&scene(1, None, json!({ "commitLatency": 2 }), None));
    let t = terrain(&g);
    assert_eq!(t.snapshot(c(0, 0), 0), Err(SnapshotError::NotComplete));
    g.run(&common::inputs(&[]), 3).unwrap();
    assert!(t.snapshot(c(0, 0), 0).is_ok());
    assert!(t.snapshot(c(0, 0), 1).is_ok());
    assert_eq!(
        t.snapshot(c(1, 0), 1),
        Err(SnapshotError::NotComplete),
        "(2, 0) is not loaded"
    );
    assert!(t.snapshot(c(1, 0), 0).is_ok());
    assert_eq!(t.snapshot(c(2, 0), 0), Err(SnapshotError::NotComplete));
    // The skin is checked first, against 8 and cellsPerChunk.
    assert_eq!(
        t.snapshot(c(0, 0), 9),
        Err(SnapshotError::Skin { skin: 9, max: 8 })
    );
    assert_eq!(
        t.snapshot(c(5, 5), 9).unwrap_err().to_string(),
        "skin 9 is out of range (0..=8)"
    );
    let g4 = ready(&scene(1, None, json!({ "cellsPerChunk": 4 }), None));
    let t4 = terrain(&g4);
    assert!(t4.snapshot(c(0, 0), 4).is_ok());
    assert_eq!(
        t4.snapshot(c(0, 0), 5),
        Err(SnapshotError::Skin { skin: 5, max: 4 })
    );
    // With neighbours: a skin needs the chunk complete as the streaming kit answers; skin 0
    // needs it built. Watched at every tick of a warm-up with one load a tick.
    let mut slow = scene(1, Some(1), json!({ "commitLatency": 2 }), None);
    slow["kits"][1]["config"]["budgetMs"] = json!(1);
    let mut g = game(&slow);
    let t = terrain(&g);
    let s = streaming(&g);
    let mut built_not_complete = 0;
    for _ in 0..40 {
        g.tick();
        for ch in s.loaded() {
            let complete = s.is_complete(ch);
            built_not_complete += usize::from(t.is_built(ch) && !complete);
            let want = if complete {
                Ok(())
            } else {
                Err(SnapshotError::NotComplete)
            };
            assert_eq!(t.snapshot(ch, 1).map(drop), want, "{ch}");
            assert_eq!(t.snapshot(ch, 0).is_ok(), t.is_built(ch), "{ch}");
        }
    }
    assert!(s.is_complete(c(0, 0)));
    assert!(built_not_complete > 10, "{built_not_complete}");
}

/// A drive east and back, 12 m a tick, with edits at chunk edges and corners near the hero.
fn drive_with_edits(ticks: u64) -> Vec<Value> {
    let mut lines = Vec::new();
    for t in 1..=ticks {
        let x = if t <= ticks / 2 {
            16 + 12 * t
        } else {
            16 + 12 * (ticks - t)
        };
        lines.push(json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": x, "z": 16}}));
        if t % 3 == 0 {
            let ch = c((x / 32) as i64, 0);
            let (i, j) = [(31, 5), (0, 0), (16, 31), (31, 31)][(t / 3 % 4) as usize];
            let h = (t * 97 % 60_000) as u16;
            lines.push(edit_line(t, cell_pos(ch, 32, i, j), h, Some((t % 7) as u8)));
            lines.push(edit_line(t, cell_pos(c(ch.x + 1, 1), 32, 20, 3), h, None));
        }
    }
    lines
}

/// The versions of the loaded chunks after every tick from `from` on: tick → chunk → version.
type Versions = BTreeMap<u64, BTreeMap<ChunkPos, Option<u64>>>;

fn run_recording(g: &mut Game, inputs: &Inputs, end: u64) -> Versions {
    let mut out = Versions::new();
    g.run_with(inputs, end, |engine, _| {
        let t = engine.service::<dyn TerrainService>(TERRAIN).unwrap();
        let s = engine.service::<dyn StreamingService>(STREAMING).unwrap();
        let v = s
            .loaded()
            .into_iter()
            .map(|ch| (ch, t.version(ch)))
            .collect();
        out.insert(engine.tick_count(), v);
    })
    .unwrap();
    out
}

#[test]
fn a_save_mid_drive_continues_with_the_same_versions() {
    let s = scene(
        2,
        Some(1),
        json!({ "commitLatency": 2, "workers": 2, "seed": 5 }),
        None,
    );
    let lines = drive_with_edits(60);
    let mut whole = game(&s);
    let all = run_recording(&mut whole, &common::inputs(&lines), 60);
    let moved = all
        .values()
        .flat_map(|v| v.values())
        .filter(|v| **v > Some(1))
        .count();
    assert!(moved > 100, "the drive moves versions: {moved}");
    for n in [7u64, 20, 31, 44] {
        let dir = tempfile::tempdir().unwrap();
        let mut first = common::game_in(&s, dir.path());
        first.run(&common::inputs(&lines), n).unwrap();
        let save = dir.path().join("run.save.json");
        first.save(&save).unwrap();
        let text = std::fs::read_to_string(&save).unwrap();
        let section = &serde_json::from_str::<Value>(&text).unwrap()["kits"][TERRAIN];
        assert!(
            section["built"]
                .as_array()
                .unwrap()
                .iter()
                .all(|b| b["version"].as_u64() >= Some(1)),
            "every built chunk saved with its version"
        );
        drop(first);
        let mut second = common::game_in(&s, dir.path());
        let skip = second.engine().events().len();
        second.load(&save).unwrap();
        let t = terrain(&second);
        let st = streaming(&second);
        let now: BTreeMap<ChunkPos, Option<u64>> = st
            .loaded()
            .into_iter()
            .map(|ch| (ch, t.version(ch)))
            .collect();
        assert_eq!(now, all[&n], "versions right after the load at {n}");
        let after = run_recording(&mut second, &common::inputs_after(&lines, n), 60);
        for (tick, v) in &after {
            assert_eq!(v, &all[tick], "tick {tick} after a save at {n}");
        }
        assert_eq!(
            common::events_from(&second, skip),
            common::events_after(&whole, n),
            "saved at {n}"
        );
    }
}

#[test]
fn without_neighbours_saves_keep_their_bytes_and_a_load_restarts_versions_at_1() {
    let s = scene(2, None, json!({ "commitLatency": 1 }), None);
    let mut g = ready(&s);
    edit(&mut g, cell_pos(c(0, 0), 32, 16, 16), 5000, None);
    g.tick();
    assert_eq!(terrain(&g).version(c(1, 1)), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("a.save.json");
    g.save(&save).unwrap();
    let text = std::fs::read_to_string(&save).unwrap();
    let section = &serde_json::from_str::<Value>(&text).unwrap()["kits"][TERRAIN];
    let built = section["built"].as_array().unwrap();
    assert_eq!(built.len(), 25);
    assert!(
        built.iter().all(|b| b.get("version").is_none()),
        "no version without neighbours: {section}"
    );
    let mut h = game(&s);
    h.load(&save).unwrap();
    let t = terrain(&h);
    assert_eq!(t.version(c(1, 1)), Some(1));
    assert_eq!(t.version(c(0, 0)), Some(1));
    assert_eq!(
        t.chunk(c(0, 0)).unwrap().height(16, 16),
        5000,
        "the edit is kept"
    );
}

#[test]
fn a_saved_version_is_checked_with_its_path() {
    let s = scene(1, Some(1), json!({ "commitLatency": 1 }), None);
    let mut g = ready(&s);
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("a.save.json");
    g.tick(); // a chunk or two may be in flight: none with the ring loaded at radius 1 + 1
    g.save(&save).unwrap();
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(good["kits"][TERRAIN]["built"][0]["version"], json!(1));
    let mut bad = |edit: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        edit(&mut v);
        let path = dir.path().join("bad.save.json");
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        common::refused_alike(&mut g, &path, common::Alone::Refuses)
    };
    let err = bad(&|v| v["kits"][TERRAIN]["built"][3]["version"] = json!(0));
    assert!(
        err.contains("kits.world.terrain.built[3].version: expected a version of 1 or more"),
        "{err}"
    );
    let err = bad(&|v| v["kits"][TERRAIN]["built"][1]["version"] = json!("two"));
    assert!(err.contains("kits.world.terrain"), "{err}");
    let err = bad(&|v| {
        v["kits"][TERRAIN]["inFlight"] =
            json!([{"x": 9, "z": 9, "commitAt": v["tick"].as_u64().unwrap() + 1, "version": 2}])
    });
    assert!(
        err.contains("kits.world.terrain.inFlight[0].version: expected no version"),
        "{err}"
    );
}

#[test]
fn versions_are_the_same_whatever_the_workers() {
    let lines = drive_with_edits(50);
    let mut runs = Vec::new();
    for workers in [json!(1), json!(4), json!("inline")] {
        let s = scene(
            2,
            Some(1),
            json!({ "commitLatency": 1, "workers": workers, "seed": 2 }),
            None,
        );
        let mut g = game(&s);
        let v = run_recording(&mut g, &common::inputs(&lines), 50);
        runs.push((workers, v, common::event_lines(&g)));
    }
    let moved = runs[0]
        .1
        .values()
        .flat_map(|v| v.values())
        .filter(|v| **v > Some(1))
        .count();
    assert!(moved > 100, "{moved}");
    for (w, v, log) in &runs[1..] {
        assert_eq!(v, &runs[0].1, "versions with workers {w}");
        assert_eq!(log, &runs[0].2, "events with workers {w}");
    }
}
