//! Vertical sections and the disc shape in the streaming residency
//! (docs/reference/streaming.md#shapes-and-sections): the seed's cylinder loaded nearest-first in
//! 3-D and released by rows and by the disc, hooks and refusals per section, `chunkOf` with `y`,
//! dormancy and look-ahead in 3-D, tickets counted as footprints of sections, and `shape:
//! "square"` identical to no key at all.

mod common;

use std::collections::BTreeSet;

use common::{game, game_in, run};
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::kits::streaming::config::Shape;
use world_streaming::kits::streaming::{StreamingService, STREAMING};

fn scene(streaming: Value) -> Value {
    json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": streaming }
        ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "y": 16, "z": 16 } },
            { "id": "bird", "tags": ["streamable"], "position": { "x": 16, "y": 400, "z": 16 } },
            { "id": "mole", "tags": ["streamable"], "position": { "x": 16, "y": -200, "z": 16 } }
        ],
        "control": "hero"
    })
}

/// The seed's cylinder: a disc of radius 8, 4 rows each side.
fn cylinder(budget: u32) -> Value {
    json!({
        "chunkSize": 32, "radius": 8, "budgetMs": budget,
        "shape": "disc", "vertical": { "radius": 4 }
    })
}

fn service(g: &Game) -> std::rc::Rc<dyn StreamingService> {
    g.engine()
        .service::<dyn StreamingService>(STREAMING)
        .unwrap()
}

fn move_hero(tick: u64, x: f64, y: f64, z: f64) -> Value {
    json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": x, "y": y, "z": z}})
}

/// `(x, y, z)` of the chunk events named `name` of `tick`, in emission order; every payload is
/// exactly `{x, y, z}`.
fn sections(g: &Game, name: &str, tick: u64) -> Vec<ChunkPos> {
    g.engine()
        .events()
        .iter()
        .filter(|e| e.event == name && e.tick == tick)
        .map(|e| {
            let v = serde_json::to_value(&e.data).unwrap();
            let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["x", "y", "z"], "{v}");
            ChunkPos::section(
                v["x"].as_i64().unwrap(),
                v["y"].as_i64().unwrap(),
                v["z"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The sections a focus at section `c` wants (disc of `r`, `rv` rows each side), row order.
fn footprint(c: ChunkPos, r: i64, rv: i64) -> Vec<ChunkPos> {
    let mut v = Vec::new();
    for y in c.y - rv..=c.y + rv {
        for z in c.z - r..=c.z + r {
            for x in c.x - r..=c.x + r {
                let (dx, dz) = (x - c.x, z - c.z);
                if dx * dx + dz * dz <= r * r {
                    v.push(ChunkPos::section(x, y, z));
                }
            }
        }
    }
    v
}

/// The 3-D nearest-first order from `at`, worked out plainly: squared distance to the section
/// centre, then z, x, y.
fn nearest_first(mut v: Vec<ChunkPos>, at: Position, s: f64) -> Vec<ChunkPos> {
    let d = |c: &ChunkPos| {
        let dx = (c.x as f64 + 0.5) * s - at.x;
        let dy = (c.y as f64 + 0.5) * s - at.y;
        let dz = (c.z as f64 + 0.5) * s - at.z;
        dx * dx + dy * dy + dz * dz
    };
    v.sort_by(|a, b| {
        d(a).total_cmp(&d(b))
            .then((a.z, a.x, a.y).cmp(&(b.z, b.x, b.y)))
    });
    v
}

/// The seed's cylinder loads its 197 columns × 9 rows = 1 773 sections, 100 a tick, in the 3-D
/// nearest-first order, each announced `{x, y, z}`; `loaded()` lists them in row order.
#[test]
fn the_seed_cylinder_loads_1773_sections_nearest_first() {
    let mut g = game(&scene(cylinder(100)));
    run(&mut g, &[], 18);
    let s = service(&g);
    let want = footprint(ChunkPos::section(0, 0, 0), 8, 4);
    let columns: BTreeSet<ChunkPos> = want.iter().map(|c| c.column()).collect();
    assert_eq!((want.len(), columns.len()), (1773, 197));
    let mut events = Vec::new();
    for tick in 1..=18 {
        let loaded = sections(&g, "world.chunk.loaded", tick);
        assert_eq!(
            loaded.len(),
            if tick < 18 { 100 } else { 73 },
            "tick {tick}"
        );
        events.extend(loaded);
    }
    let at = Position {
        x: 16.0,
        y: 16.0,
        z: 16.0,
    };
    assert_eq!(events, nearest_first(want.clone(), at, 32.0));
    assert_eq!(s.loaded(), want, "row order: y, z, x");
    assert_eq!(s.pending(), []);
    assert_eq!(s.progress(), 1.0);
    assert!(s.is_loaded(ChunkPos::section(0, -4, 8)));
    assert!(!s.is_loaded(ChunkPos::section(0, -5, 0)));
    assert!(!s.is_loaded(ChunkPos::section(6, 0, 6)), "outside the disc");
}

/// Climbing two rows releases the row now beyond `rv + 1` below, in row order, before the new
/// rows load nearest-first; one row more is the hysteresis row (kept). A move east releases the
/// sections whose columns leave the kept disc (`dx² + dz² > (r + 1)²`), on every row.
#[test]
fn climbing_and_driving_release_rows_and_the_disc_rim() {
    let mut g = game(&scene(cylinder(5000)));
    run(&mut g, &[], 1);
    let s = service(&g);
    assert_eq!(s.loaded().len(), 1773);
    // Two rows up: the focus's row is 2.
    run(&mut g, &[move_hero(2, 16.0, 80.0, 16.0)], 2);
    let released = sections(&g, "world.chunk.unloaded", 2);
    let row: Vec<ChunkPos> = footprint(ChunkPos::section(0, -4, 0), 8, 0);
    assert_eq!(released, row, "row -4 (6 rows down), row order");
    let loaded = sections(&g, "world.chunk.loaded", 2);
    let new_rows: Vec<ChunkPos> = footprint(ChunkPos::section(0, 5, 0), 8, 0)
        .into_iter()
        .chain(footprint(ChunkPos::section(0, 6, 0), 8, 0))
        .collect();
    let at = Position {
        x: 16.0,
        y: 80.0,
        z: 16.0,
    };
    assert_eq!(loaded, nearest_first(new_rows, at, 32.0));
    let was: BTreeSet<ChunkPos> = s.loaded().into_iter().collect();
    assert_eq!(was.len(), 1773 + 197, "row -3 kept");
    // Three sections east.
    run(&mut g, &[move_hero(3, 112.0, 80.0, 16.0)], 3);
    let centre = ChunkPos::section(3, 2, 0);
    let kept = |c: &ChunkPos| {
        let (dx, dz) = (c.x - centre.x, c.z - centre.z);
        dx * dx + dz * dz <= 81 && (c.y - centre.y).abs() <= 5
    };
    let mut expect: BTreeSet<ChunkPos> = was.iter().copied().filter(kept).collect();
    let gone: Vec<ChunkPos> = was.iter().copied().filter(|c| !kept(c)).collect();
    assert_eq!(sections(&g, "world.chunk.unloaded", 3), gone, "row order");
    expect.extend(footprint(centre, 8, 4));
    assert_eq!(s.loaded(), expect.into_iter().collect::<Vec<_>>());
}

/// Hooks are asked per section, with `y`; a refusal is held per section and listed with `y`
/// (a mod matching a column refuses each of its sections).
#[test]
fn refusals_are_held_per_section() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gap.json"),
        r#"{"id": "gap", "hook": "world.chunk.load", "match": {"x": 1, "z": 1}, "cancel": true}"#,
    )
    .unwrap();
    let mut sc = scene(json!({
        "chunkSize": 32, "radius": 1, "budgetMs": 100, "vertical": { "radius": 1 }
    }));
    sc["mods"] = json!(["gap.json"]);
    let mut g = game_in(&sc, dir.path());
    run(&mut g, &[], 1);
    let s = service(&g);
    assert_eq!(s.loaded().len(), 27 - 3);
    let refused: Vec<(i64, Option<i64>, i64)> =
        s.refusals().iter().map(|r| (r.x, r.y, r.z)).collect();
    assert_eq!(
        refused,
        [(1, Some(-1), 1), (1, Some(0), 1), (1, Some(1), 1)],
        "row order, with y"
    );
    assert_eq!(s.progress(), 1.0, "a load-refused section is ready");
    // A Lua handler reads the section's `y` and refuses one row.
    std::fs::write(
        dir.path().join("high.lua"),
        "on('world.chunk.load', function(c) if c.y == 1 then return cancel('high') end end)",
    )
    .unwrap();
    sc["mods"] = json!(["high.lua"]);
    let mut g = game_in(&sc, dir.path());
    run(&mut g, &[], 1);
    let s = service(&g);
    assert_eq!(s.loaded().len(), 18);
    assert!(s.loaded().iter().all(|c| c.y < 1));
    let refused: Vec<Option<i64>> = s.refusals().iter().map(|r| r.y).collect();
    assert_eq!(refused, [Some(1); 9]);
}

/// `chunkOf` reads `y` with sections (floor(y / height)), the service tells the shape and the
/// rows in force, `around` lists the footprint nearest-first; a flat scene answers as before.
#[test]
fn chunk_of_shape_vertical_and_around() {
    let mut g = game(&scene(json!({
        "chunkSize": 32, "radius": 2, "shape": "disc", "vertical": { "radius": 1, "height": 16 }
    })));
    run(&mut g, &[], 1);
    let s = service(&g);
    let p = Position {
        x: -1.0,
        y: 40.0,
        z: 70.0,
    };
    assert_eq!(s.chunk_of(p), ChunkPos::section(-1, 2, 2));
    assert_eq!(s.shape(), Shape::Disc);
    let v = s.vertical().unwrap();
    assert_eq!((v.radius, v.height), (1, 16.0));
    let around = s.around(p);
    assert_eq!(around.len(), 13 * 3);
    assert_eq!(around[0], ChunkPos::section(-1, 2, 2));
    let mut flat = game(&scene(json!({ "chunkSize": 32, "radius": 2 })));
    run(&mut flat, &[], 1);
    let f = service(&flat);
    assert_eq!(f.chunk_of(p), ChunkPos::new(-1, 2));
    assert_eq!((f.shape(), f.vertical()), (Shape::Square, None));
}

/// Dormancy reads the section of an entity's position: the bird high above and the mole deep
/// below stay dormant while the hero's rows are loaded; the hero flying up wakes the bird.
#[test]
fn dormancy_follows_the_section_of_the_position() {
    let mut g = game(&scene(cylinder(5000)));
    run(&mut g, &[], 1);
    let dormant = |g: &Game, id: &str| {
        g.engine()
            .world()
            .get(&id.into())
            .unwrap()
            .has_tag("dormant")
    };
    assert!(dormant(&g, "bird") && dormant(&g, "mole"));
    run(&mut g, &[move_hero(2, 16.0, 300.0, 16.0)], 2);
    assert!(!dormant(&g, "bird"), "row 12 within rows 5 ..= 13");
    assert!(
        !service(&g).is_loaded(ChunkPos::section(0, -7, 0)),
        "the mole's row"
    );
    assert!(dormant(&g, "mole"));
}

/// Radius 0 never predicts, in 3-D too: a climb has no horizontal part, so the jump rule alone
/// (`0 <= 0`) would let it (docs/reference/streaming.md#look-ahead-in-3-d).
#[test]
fn radius_0_never_predicts_a_climb() {
    let mut g = game(&look_ahead_scene(0));
    run(&mut g, &climb(60.0), 3);
    assert_eq!(service(&g).predicted().unwrap(), []);
}

/// One player, `lookAheadTicks` 2, rows 1 each side, at `radius`.
fn look_ahead_scene(radius: u32) -> Value {
    scene(json!({
        "chunkSize": 32, "radius": radius, "budgetMs": 100, "lookAheadTicks": 2,
        "vertical": { "radius": 1 }
    }))
}

/// The hero at y 26 on tick 2, at `y` on tick 3.
fn climb(y: f64) -> [Value; 2] {
    [move_hero(2, 16.0, 26.0, 16.0), move_hero(3, 16.0, y, 16.0)]
}

/// Look-ahead in 3-D: a climbing anchor predicts a focus above it (the displacement is 3-D, a
/// climb alone predicts); the jump rule reads the horizontal part only.
#[test]
fn look_ahead_predicts_in_3d() {
    let mut g = game(&look_ahead_scene(2));
    run(&mut g, &climb(500.0), 2);
    let s = service(&g);
    assert_eq!(
        s.predicted().unwrap(),
        [Position {
            x: 16.0,
            y: 46.0,
            z: 16.0
        }]
    );
    assert!(s.is_loaded(ChunkPos::section(0, 2, 0)), "row 1 + rv");
    // A climb of 474 m in a tick: far more than radius × chunkSize, but all vertical.
    run(&mut g, &[move_hero(3, 16.0, 500.0, 16.0)], 3);
    assert_eq!(
        s.predicted().unwrap(),
        [Position {
            x: 16.0,
            y: 1448.0,
            z: 16.0
        }]
    );
}

/// A ticket wants its footprint around the section of `at` (its radius in x, z; the config's
/// rows); the ticket cap counts the square of its radius times the rows, for a disc too.
#[test]
fn tickets_want_sections_and_the_cap_counts_them() {
    let streaming = |cap: u32| {
        json!({
            "chunkSize": 32, "radius": 0, "budgetMs": 5000, "shape": "disc",
            "vertical": { "radius": 1 }, "maxTicketChunks": cap
        })
    };
    let request = json!({
        "tick": 1, "do": "request", "id": "t", "at": { "x": 1000, "y": 100, "z": 16 },
        "radius": 2, "ticks": 100
    });
    // The disc of 2 holds 13 columns (39 sections); the cap counts the square: 25 × 3 = 75.
    let mut g = game(&scene(streaming(75)));
    run(&mut g, std::slice::from_ref(&request), 2);
    let s = service(&g);
    let ticket: Vec<ChunkPos> = s.loaded().into_iter().filter(|c| c.x > 20).collect();
    assert_eq!(ticket, footprint(ChunkPos::section(31, 3, 0), 2, 1));
    let ready = common::events_named(&g, "world.ticket.ready");
    assert_eq!(ready.len(), 1, "its 39 sections loaded: {ready:?}");
    let mut g = game(&scene(streaming(74)));
    run(&mut g, &[request], 2);
    common::assert_one_ticket_refused(&g, 75);
}

/// `shape: "square"` set explicitly is no key at all: every event, the state and the save are
/// the same bytes on a drive with a refusal and a ticket.
#[test]
fn an_explicit_square_changes_nothing() {
    let outputs = |streaming: Value| {
        let dir = tempfile::tempdir().unwrap();
        let mut g = game_in(&scene(streaming), dir.path());
        let lines: Vec<Value> = (1..=20u64)
            .map(|t| move_hero(t, 16.0 + 20.0 * t as f64, 16.0 + 30.0 * t as f64, 16.0))
            .collect();
        run(&mut g, &lines, 20);
        let save = dir.path().join("s.json");
        g.save(&save).unwrap();
        (
            common::event_lines(&g),
            serde_json::to_string(&common::state_without_timing(&g)).unwrap(),
            std::fs::read_to_string(&save).unwrap(),
        )
    };
    let absent = outputs(json!({ "radius": 2, "budgetMs": 3 }));
    let square = outputs(json!({ "radius": 2, "budgetMs": 3, "shape": "square" }));
    assert_eq!(absent, square);
    assert!(
        !absent.0.iter().any(|l| l.contains("\"y\"")),
        "no y anywhere"
    );
}

/// With `neighbours` 1 the radius and the rows gain a ring: 25 columns × 5 rows are wanted, and
/// the 27 sections whose 26 neighbours are loaded are announced complete `{x, y, z}`, in row
/// order, after the tick's section events.
#[test]
fn complete_sections_read_their_26_neighbours() {
    let mut g = game(&scene(json!({
        "chunkSize": 32, "radius": 1, "budgetMs": 1000, "neighbours": 1,
        "vertical": { "radius": 1 }
    })));
    run(&mut g, &[], 1);
    let s = service(&g);
    let square = |r: i64, rows: i64| {
        let mut v = Vec::new();
        for y in -rows..=rows {
            for z in -r..=r {
                for x in -r..=r {
                    v.push(ChunkPos::section(x, y, z));
                }
            }
        }
        v
    };
    assert_eq!(s.loaded(), square(2, 2));
    assert_eq!(s.complete(), square(1, 1));
    assert_eq!(sections(&g, "world.chunk.complete", 1), square(1, 1));
    let names: Vec<String> = g
        .engine()
        .events()
        .iter()
        .filter(|e| e.tick == 1 && e.event.starts_with("world.chunk."))
        .map(|e| e.event.to_string())
        .collect();
    assert!(names[..125].iter().all(|n| *n == "world.chunk.loaded"));
    assert!(names[125..].iter().all(|n| *n == "world.chunk.complete"));
}

/// The resident cap counts sections, and eviction takes the least recently wanted sections in
/// row order: one row up, the row left in the hysteresis band is evicted as the new row loads.
#[test]
fn the_cap_and_eviction_count_sections() {
    let mut config = cylinder(5000);
    config["maxLoaded"] = json!(1800);
    let mut g = game(&scene(config));
    run(&mut g, &[], 1);
    let s = service(&g);
    assert_eq!(s.loaded().len(), 1773);
    run(&mut g, &[move_hero(2, 16.0, 48.0, 16.0)], 2);
    assert_eq!(s.loaded().len(), 1800);
    let row = footprint(ChunkPos::section(0, -4, 0), 8, 0);
    assert_eq!(
        sections(&g, "world.chunk.unloaded", 2),
        row[..197 - 27],
        "27 loads fit, then each load evicts one section of row -4, row order"
    );
    assert_eq!(sections(&g, "world.chunk.loaded", 2).len(), 197);
    let capacity = common::events_named(&g, "world.streaming.capacity");
    assert_eq!(capacity, [], "the wanted sections (1 773) fit the cap");
}
