//! Columns for column kits (docs/reference/streaming.md#columns): with `vertical` on, a column
//! `(x, z)` is loaded while one of its sections is; `world.column.unloaded` follows the release
//! step's section events (and an eviction's own), `world.column.loaded` the load step's, each in
//! row order (z, x); `columns()` / `is_column_loaded` say the same. `world.terrain` builds once
//! per column (docs/reference/terrain.md#columns), `world.nav` re-plans on columns
//! (docs/reference/nav.md#columns), LOD counts a built column as ready
//! (docs/reference/lod.md#columns), and `world.district` homes are sections
//! (docs/reference/district.md#homes-in-a-vertical-world).

mod common;

use std::collections::BTreeSet;

use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::host::Event;
use world_streaming::kits::streaming::StreamingService;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

const LOADED: &str = "world.chunk.loaded";
const UNLOADED: &str = "world.chunk.unloaded";
const COL_LOADED: &str = "world.column.loaded";
const COL_UNLOADED: &str = "world.column.unloaded";

/// A scene of `streaming` config and `more` kits, the hero at `(x, y, z)`.
fn scene(streaming: Value, more: &[Value], hero: (f64, f64, f64)) -> Value {
    let mut kits = vec![
        json!({ "id": "world.ground" }),
        json!({ "id": "world.streaming", "config": streaming }),
    ];
    kits.extend(more.iter().cloned());
    json!({
        "kits": kits,
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": hero.0, "y": hero.1, "z": hero.2 } }
        ],
        "control": "hero"
    })
}

/// Moves the hero to `(x, y, z)` before the next tick.
fn move_to(g: &mut Game, x: f64, y: f64, z: f64) {
    let t = g.engine().tick_count() + 1;
    common::apply(
        g,
        json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": x, "y": y, "z": z}}),
    );
}

/// One tick, and its events.
fn tick(g: &mut Game) -> Vec<Event> {
    g.tick();
    g.engine_mut().take_events()
}

fn streaming(g: &Game) -> std::rc::Rc<dyn StreamingService> {
    g.streaming().expect("streaming")
}

fn pos(e: &Event) -> ChunkPos {
    let v = serde_json::to_value(&e.data).unwrap();
    let n = |k: &str| v.get(k).and_then(Value::as_i64);
    ChunkPos::section(n("x").unwrap(), n("y").unwrap_or(0), n("z").unwrap())
}

/// The events of `list` named one of the four chunk and column names, as (name, position).
fn moves(list: &[Event]) -> Vec<(&str, ChunkPos)> {
    list.iter()
        .filter(|e| [LOADED, UNLOADED, COL_LOADED, COL_UNLOADED].contains(&&*e.event))
        .map(|e| (&*e.event, pos(e)))
        .collect()
}

/// The columns of the loaded sections, computed from `loaded()`, against `columns()` and
/// `is_column_loaded`.
fn check_columns(g: &Game) {
    let s = streaming(g);
    let naive: BTreeSet<ChunkPos> = s.loaded().iter().map(|c| c.column()).collect();
    let columns = s.columns();
    assert_eq!(
        columns,
        naive.iter().copied().collect::<Vec<_>>(),
        "row order, y 0"
    );
    for c in &naive {
        assert!(s.is_column_loaded(*c));
    }
    for x in -6..=6 {
        for z in -6..=6 {
            let c = ChunkPos::new(x, z);
            assert_eq!(s.is_column_loaded(c), naive.contains(&c), "{c}");
        }
    }
}

/// Checks the order rule on one tick's events: the release step's section releases, then its
/// columns (row order z, x, each column whose last section went); then the load step's section
/// loads, then its columns (row order). Returns the (released, loaded) columns.
fn check_tick_order(events: &[Event]) -> (Vec<ChunkPos>, Vec<ChunkPos>) {
    let m = moves(events);
    let names: Vec<&str> = m.iter().map(|(n, _)| *n).collect();
    // The shape: UNLOADED* COL_UNLOADED* LOADED* COL_LOADED*.
    let rank = |n: &str| match n {
        UNLOADED => 0,
        COL_UNLOADED => 1,
        LOADED => 2,
        _ => 3,
    };
    assert!(
        names.windows(2).all(|w| rank(w[0]) <= rank(w[1])),
        "out of order: {names:?}"
    );
    let of = |name: &str| -> Vec<ChunkPos> {
        m.iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .collect()
    };
    let (released, loaded) = (of(COL_UNLOADED), of(COL_LOADED));
    for list in [&released, &loaded] {
        assert!(list.windows(2).all(|w| w[0] < w[1]), "row order: {list:?}");
        assert!(list.iter().all(|c| c.y == 0));
    }
    (released, loaded)
}

fn vertical(radius: u32, rv: u32, budget: u32) -> Value {
    json!({ "chunkSize": 32, "radius": radius, "budgetMs": budget,
            "vertical": { "radius": rv, "height": 32 } })
}

#[test]
fn column_events_follow_their_steps_in_row_order_and_match_columns() {
    let mut g = common::game(&scene(vertical(1, 1, 100), &[], (16.0, 16.0, 16.0)));
    check_columns(&g);
    let first = tick(&mut g);
    let (released, loaded) = check_tick_order(&first);
    assert!(released.is_empty());
    // 3 × 3 columns, each of 3 sections: one column event each, after the 27 section events.
    assert_eq!(moves(&first).len(), 27 + 9);
    let want: Vec<ChunkPos> = (-1..=1)
        .flat_map(|z| (-1..=1).map(move |x| ChunkPos::new(x, z)))
        .collect();
    assert_eq!(loaded, want);
    let payload = first.iter().find(|e| e.event == COL_LOADED).unwrap();
    assert_eq!(
        serde_json::to_value(&payload.data).unwrap(),
        json!({"x": -1, "z": -1}),
        "a column's payload is {{x, z}}, no y"
    );
    check_columns(&g);
    // Three chunks east: the west columns go whole (released, then their column), the east
    // ones come.
    move_to(&mut g, 112.0, 16.0, 16.0);
    let events = tick(&mut g);
    let (released, loaded) = check_tick_order(&events);
    // Kept within ring 2 of chunk 3: the columns x = -1 and x = 0 go, row order (z, x).
    let gone: Vec<ChunkPos> = (-1..=1)
        .flat_map(|z| (-1..=0).map(move |x| ChunkPos::new(x, z)))
        .collect();
    assert_eq!(released, gone);
    assert!(!loaded.is_empty());
    check_columns(&g);
    for _ in 0..4 {
        let events = tick(&mut g);
        check_tick_order(&events);
        check_columns(&g);
    }
}

/// A column is loaded while one of its sections is, at every moment: a callback run on a
/// section's load (before the step's column events) and on its release sees `columns()` and
/// `is_column_loaded` follow the sections, not the events.
#[test]
fn the_service_s_columns_follow_the_sections_at_once() {
    let mut g = common::game(&scene(vertical(0, 1, 100), &[], (16.0, 16.0, 16.0)));
    let s = streaming(&g);
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let (inner, log) = (s.clone(), seen.clone());
    let _sub = s.on_chunk(Box::new(move |c, loaded| {
        let col = c.column();
        let has = inner.loaded().iter().any(|d| d.column() == col);
        log.borrow_mut().push((
            c,
            loaded,
            has,
            inner.is_column_loaded(col),
            inner.columns().contains(&col),
        ));
    }));
    tick(&mut g);
    move_to(&mut g, 80.0, 16.0, 16.0);
    tick(&mut g);
    tick(&mut g);
    let seen = seen.borrow();
    assert!(
        seen.iter().any(|e| e.1) && seen.iter().any(|e| !e.1),
        "{seen:?}"
    );
    for (c, loaded, has, is_loaded, listed) in seen.iter() {
        assert_eq!((*is_loaded, *listed), (*has, *has), "{c} loaded {loaded}");
    }
    assert!(
        seen.iter().all(|e| !e.1 || e.2),
        "a load's column has its section"
    );
}

#[test]
fn a_column_stays_loaded_while_one_of_its_sections_is() {
    let mut g = common::game(&scene(vertical(0, 1, 100), &[], (16.0, 16.0, 16.0)));
    let first = tick(&mut g);
    assert_eq!(
        check_tick_order(&first),
        (vec![], vec![ChunkPos::new(0, 0)])
    );
    // Two rows up: row -1 is past rv + 1 and goes, rows 0 and 1 stay, rows 2 and 3 come; the
    // column never stops being loaded, so no column event at all.
    move_to(&mut g, 16.0, 80.0, 16.0);
    let events = tick(&mut g);
    let m = moves(&events);
    assert!(
        m.contains(&(UNLOADED, ChunkPos::section(0, -1, 0))),
        "{m:?}"
    );
    assert!(m.contains(&(LOADED, ChunkPos::section(0, 3, 0))), "{m:?}");
    assert!(
        m.iter().all(|(n, _)| *n == LOADED || *n == UNLOADED),
        "no column event: {m:?}"
    );
    check_columns(&g);
    // Far up: every section of the column goes in the release step, new ones load in the load
    // step: the column is released after the releases and loaded again after the loads.
    move_to(&mut g, 16.0, 16.0 + 32.0 * 20.0, 16.0);
    let events = tick(&mut g);
    let (released, loaded) = check_tick_order(&events);
    assert_eq!(released, [ChunkPos::new(0, 0)]);
    assert_eq!(loaded, [ChunkPos::new(0, 0)]);
    check_columns(&g);
}

#[test]
fn an_evictions_column_follows_its_sections_event_at_once() {
    // One section a column (rv 0), radius 0, one section under the cap: moving a chunk east,
    // the old section is kept (ring 1 = r + 1) but evicted for the new one.
    let mut config = vertical(0, 0, 1);
    config["maxLoaded"] = json!(1);
    let mut g = common::game(&scene(config, &[], (16.0, 16.0, 16.0)));
    tick(&mut g);
    move_to(&mut g, 48.0, 16.0, 16.0);
    let events = tick(&mut g);
    assert_eq!(
        moves(&events),
        [
            (UNLOADED, ChunkPos::new(0, 0)),
            (COL_UNLOADED, ChunkPos::new(0, 0)),
            (LOADED, ChunkPos::new(1, 0)),
            (COL_LOADED, ChunkPos::new(1, 0)),
        ]
    );
    check_columns(&g);
}

#[test]
fn without_vertical_there_is_no_column_event_and_columns_are_the_chunks() {
    let mut g = common::game(&scene(
        json!({ "chunkSize": 32, "radius": 1, "budgetMs": 100 }),
        &[],
        (16.0, 50.0, 16.0),
    ));
    let events = tick(&mut g);
    assert!(moves(&events).iter().all(|(n, _)| *n == LOADED));
    let s = streaming(&g);
    assert_eq!(s.columns(), s.loaded());
    assert!(s.is_column_loaded(ChunkPos::new(1, 1)));
}

fn terrain_scene(workers: Value) -> Value {
    scene(
        vertical(1, 1, 100),
        &[json!({ "id": "world.terrain",
                  "config": { "seed": 3, "cellsPerChunk": 8, "workers": workers, "commitLatency": 1 } })],
        (16.0, 16.0, 16.0),
    )
}

#[test]
fn terrain_builds_each_column_once_with_sections_above_and_below() {
    let mut g = common::game(&terrain_scene(json!(1)));
    let terrain = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
    let mut built = Vec::new();
    for _ in 0..3 {
        for e in tick(&mut g) {
            if e.event == "world.terrain.built" {
                let v = serde_json::to_value(&e.data).unwrap();
                assert!(v.get("y").is_none(), "terrain events are per column: {v}");
                built.push(pos(&e));
            }
        }
    }
    let columns = streaming(&g).columns();
    assert_eq!(columns.len(), 9);
    let unique: BTreeSet<ChunkPos> = built.iter().copied().collect();
    assert_eq!(
        built.len(),
        9,
        "once per column, not per section: {built:?}"
    );
    assert_eq!(unique.into_iter().collect::<Vec<_>>(), columns);
    assert!(columns.iter().all(|c| terrain.is_built(*c)));
    // Readiness waits for the column's build: every section is ready now.
    assert!(g.ready("hero"));
    // Two rows up: sections come and go, the columns stay loaded: nothing is built again and
    // nothing dropped.
    move_to(&mut g, 16.0, 80.0, 16.0);
    for _ in 0..3 {
        let events = tick(&mut g);
        assert!(
            !events.iter().any(|e| e.event.starts_with("world.terrain.")),
            "nothing rebuilt"
        );
    }
    assert!(columns.iter().all(|c| terrain.is_built(*c)));
    assert!(
        g.ready("hero"),
        "the new sections are built with their columns"
    );
    // A column released whole drops its terrain.
    move_to(&mut g, 16.0 + 32.0 * 5.0, 80.0, 16.0);
    tick(&mut g);
    assert!(!terrain.is_built(ChunkPos::new(-1, 0)));
}

#[test]
fn one_and_four_terrain_workers_give_the_same_bytes() {
    let run = |workers: u32| {
        let mut g = common::game(&terrain_scene(json!(workers)));
        let mut log = Vec::new();
        for t in 1..=12u32 {
            if t % 3 == 0 {
                let f = f64::from(t);
                move_to(&mut g, 16.0 + 20.0 * f, 16.0 + 9.0 * f, 16.0 - 5.0 * f);
            }
            g.tick();
            log.extend(common::event_lines(&g));
            g.engine_mut().take_events();
        }
        (log, common::state_without_timing(&g))
    };
    let one = run(1);
    assert!(one.0.iter().any(|l| l.contains(COL_LOADED)));
    assert_eq!(one, run(4));
}

#[test]
fn a_terrain_save_refuses_a_section_naming_the_path() {
    // Terrain is per column whatever the world: a flat game's save shows the rule alone.
    let flat = scene(
        json!({ "chunkSize": 32, "radius": 1, "budgetMs": 100 }),
        &[json!({ "id": "world.terrain",
                  "config": { "seed": 3, "cellsPerChunk": 8, "workers": "inline", "commitLatency": 1 } })],
        (16.0, 16.0, 16.0),
    );
    let mut g = common::game(&flat);
    for _ in 0..3 {
        g.tick();
    }
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("a.save.json");
    g.save(&save).unwrap();
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let built = &v["kits"][TERRAIN]["built"][0];
    let (x, z) = (built["x"].clone(), built["z"].clone());
    v["kits"][TERRAIN]["dirty"] = json!([{ "x": x, "y": 2, "z": z }]);
    let bad = dir.path().join("bad.save.json");
    std::fs::write(&bad, serde_json::to_string(&v).unwrap()).unwrap();
    let err = g.load(&bad).unwrap_err().to_string();
    assert!(
        err.contains("kits.world.terrain.dirty[0].y: expected a column"),
        "{err}"
    );
    // The same column without `y` loads.
    v["kits"][TERRAIN]["dirty"] = json!([{ "x": x, "z": z }]);
    std::fs::write(&bad, serde_json::to_string(&v).unwrap()).unwrap();
    g.load(&bad).unwrap();
}

fn variable(g: &Game, name: &str) -> u64 {
    g.engine()
        .variables()
        .get(name)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn nav_re_plans_on_columns_not_on_sections() {
    // The hero at row 1 (rows 0..=2 loaded); the agent's path crosses three columns.
    let mut s = scene(
        vertical(2, 1, 100),
        &[
            json!({ "id": "world.terrain", "config": { "seed": 5, "cellsPerChunk": 8, "workers": "inline", "commitLatency": 1 } }),
            json!({ "id": "world.nav", "config": { "maxStep": 65535 } }),
        ],
        (16.0, 48.0, 16.0),
    );
    s["entities"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "id": "walker", "tags": ["agent"], "position": { "x": 2, "z": 2 } }));
    let mut g = common::game(&s);
    for _ in 0..3 {
        g.tick();
    }
    let mut goal = serde_json::Map::new();
    goal.insert("goal".into(), json!({"x": 90, "z": 2}));
    g.set_data("walker", Some(goal)).unwrap();
    g.tick();
    assert!(variable(&g, "world.nav.nodes") > 0, "planned");
    g.tick();
    assert_eq!(
        variable(&g, "world.nav.nodes"),
        0,
        "a held path costs nothing"
    );
    // Two rows up: row 0 (sections (x, 0, z), the columns' own positions) is released, the
    // columns stay loaded: no path changed, no node spent.
    move_to(&mut g, 16.0, 112.0, 16.0);
    let events = tick(&mut g);
    assert!(moves(&events).contains(&(UNLOADED, ChunkPos::section(1, 0, 0))));
    assert!(!events.iter().any(|e| e.event == COL_UNLOADED));
    assert_eq!(
        variable(&g, "world.nav.nodes"),
        0,
        "no re-plan for a section"
    );
    // Far east: the walker's columns are released whole (`world.column.unloaded`): its path
    // changed, it re-plans and waits for them.
    move_to(&mut g, 16.0 + 32.0 * 12.0, 112.0, 16.0);
    let events = tick(&mut g);
    assert!(moves(&events).contains(&(COL_UNLOADED, ChunkPos::new(0, 0))));
    assert!(
        events.iter().any(|e| e.event == "world.agent.waiting"),
        "re-planned on the column's release"
    );
}

#[test]
fn lod_counts_a_built_column_as_ready() {
    // The hero five rows up with rv 0: the only sections are at row 5, none at row 0. LOD's
    // holes count the chunks seen by no ready column and no ready block: once the columns and
    // blocks are built, none.
    let mut config = vertical(2, 0, 100);
    config["lod"] = json!([{ "step": 2, "radius": 6 }]);
    config["lodBudget"] = json!(100);
    let s = scene(
        config,
        &[
            json!({ "id": "world.terrain", "config": { "seed": 9, "cellsPerChunk": 4, "workers": "inline", "commitLatency": 1 } }),
        ],
        (16.0, 16.0 + 32.0 * 5.0, 16.0),
    );
    let mut g = common::game(&s);
    for _ in 0..6 {
        g.tick();
    }
    assert_eq!(streaming(&g).columns().len(), 25);
    assert!(streaming(&g).loaded().iter().all(|c| c.y == 5));
    assert_eq!(
        variable(&g, "world.lod.holes"),
        0,
        "the 25 built columns are seen"
    );
    assert!(variable(&g, "world.lod.loaded") > 0);
    // A step east: the block replacing the west columns is released only once ready; no hole
    // on any tick of a walk.
    for t in 1..=8 {
        move_to(&mut g, 16.0 + 24.0 * f64::from(t), 176.0, 16.0);
        g.tick();
        g.tick();
        assert_eq!(variable(&g, "world.lod.holes"), 0, "step {t}");
    }
}

#[test]
fn district_homes_are_sections() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        json!({"id": "low", "tags": ["crate"], "position": {"x": 8, "y": 8, "z": 8}}),
        json!({"id": "high", "tags": ["crate"], "position": {"x": 8, "y": 176, "z": 8}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("d.jsonl"), text).unwrap();
    let district = json!({ "id": "world.district", "config": { "districts": ["d.jsonl"] } });
    let s = scene(
        vertical(1, 1, 100),
        std::slice::from_ref(&district),
        (16.0, 16.0, 16.0),
    );
    let mut g = common::game_in(&s, dir.path());
    let has = |g: &Game, id: &str| {
        g.engine()
            .world()
            .get(&world_streaming::host::EntityId::new(id))
            .is_some()
    };
    let events = tick(&mut g);
    let named = |list: &[Event], name: &str| -> Vec<Value> {
        list.iter()
            .filter(|e| e.event == name)
            .map(|e| serde_json::to_value(&e.data).unwrap())
            .collect()
    };
    // Column (0, 0) is loaded, but only rows -1..=1 of it: "high" (row 5) stays stored.
    assert!(has(&g, "low") && !has(&g, "high"));
    assert_eq!(
        named(&events, "world.district.materialised"),
        [json!({"x": 0, "y": 0, "z": 0, "count": 1})]
    );
    // Up to row 5: row 0 goes (storing "low"), row 5 comes ("high").
    move_to(&mut g, 16.0, 176.0, 16.0);
    let events = tick(&mut g);
    assert!(has(&g, "high") && !has(&g, "low"));
    assert_eq!(
        named(&events, "world.district.stored"),
        [json!({"x": 0, "y": 0, "z": 0, "count": 1})]
    );
    assert_eq!(
        named(&events, "world.district.materialised"),
        [json!({"x": 0, "y": 5, "z": 0, "count": 1})]
    );
    // Changed, then down again: "high" is stored under its section as a kept difference; a
    // save keeps its `y`.
    let mut data = serde_json::Map::new();
    data.insert("opened".into(), json!(true));
    g.set_data("high", Some(data)).unwrap();
    g.tick();
    move_to(&mut g, 16.0, 16.0, 16.0);
    tick(&mut g);
    assert!(!has(&g, "high"));
    let text = g.save_text().unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let records = &doc["kits"]["world.district"]["records"];
    assert!(
        records
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["y"] == json!(5)),
        "{records}"
    );
    // A flat game with the same district file refuses a record with `y`, naming it.
    let record = records
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["y"] == json!(5))
        .unwrap()
        .clone();
    let flat = scene(
        json!({ "chunkSize": 32, "radius": 1, "budgetMs": 100 }),
        &[district],
        (16.0, 16.0, 16.0),
    );
    let mut f = common::game_in(&flat, dir.path());
    f.tick();
    let mut own: Value = serde_json::from_str(&f.save_text().unwrap()).unwrap();
    own["kits"]["world.district"]["records"] = json!([record]);
    let err = f.load_text(&own.to_string()).unwrap_err().to_string();
    assert!(
        err.contains("kits.world.district.records[0].y: expected no `y`"),
        "{err}"
    );
}

#[test]
fn district_refuses_a_layer_vertical_and_world_dir_with_vertical() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.jsonl"), "").unwrap();
    let district = json!({ "id": "world.district", "config": { "districts": ["d.jsonl"] } });
    let mut s = scene(
        json!({ "chunkSize": 32, "radius": 1 }),
        &[district],
        (16.0, 16.0, 16.0),
    );
    s["scenes"] =
        json!([{ "id": "main", "layers": { "world.streaming": { "vertical": { "radius": 1 } } } }]);
    let err = common::scene_error(&s);
    assert!(
        err.contains("scenes[0].layers.world.streaming.vertical: expected no `vertical`"),
        "{err}"
    );
    let with_dir = json!({ "id": "world.district", "config": { "districts": [], "worldDir": dir.path().join("w") } });
    let s = scene(vertical(1, 1, 4), &[with_dir], (16.0, 16.0, 16.0));
    let err = common::scene_error(&s);
    assert!(
        err.contains(
            "kit world.district: config.worldDir: expected no worldDir with `vertical` on"
        ),
        "{err}"
    );
}
