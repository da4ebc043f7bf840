//! The world.streaming kit through the engine: the seed's worked example, defaults, focus sources,
//! hysteresis, bounds, dormancy, onChunk, leave/enter and determinism.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use serde_json::json;
use world_streaming::grid::Position;
use world_streaming::kits::streaming::{VAR_LOADED, VAR_PENDING};

fn seed_scene() -> serde_json::Value {
    json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 1, "budgetMs": 2 })),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    })
}

#[test]
fn chunks_load_around_the_player_nearest_first() {
    let mut g = game(&seed_scene());
    let s = g.streaming().unwrap();
    g.tick();
    assert_eq!(
        chunk_events(&g, "world.chunk.loaded"),
        [(1, 0, 0), (1, 0, -1)]
    );
    assert_eq!(s.loaded(), [c(0, -1), c(0, 0)]);
    assert_eq!(g.engine().variables().count(VAR_PENDING), 7);
    assert_eq!(g.engine().variables().count(VAR_LOADED), 2);
    for _ in 2..=5 {
        g.tick();
    }
    assert_eq!(g.engine().variables().count(VAR_LOADED), 9);
    assert_eq!(g.engine().variables().count(VAR_PENDING), 0);
    assert!(s.is_loaded(c(1, 1)));
    assert!(!s.is_loaded(c(2, 0)));
    // Tick 5 loads the ninth chunk: ticks 2-4 load two each, tick 5 the last.
    let per_tick: Vec<u64> = chunk_events(&g, "world.chunk.loaded")
        .iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(per_tick, [1, 1, 2, 2, 3, 3, 4, 4, 5]);
}

#[test]
fn defaults_load_all_25_chunks_after_tick_7_not_tick_6() {
    let mut g = game(&json!({
        "kits": kits(json!({})),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    }));
    for _ in 0..6 {
        g.tick();
    }
    assert_eq!(g.engine().variables().count(VAR_LOADED), 24);
    g.tick();
    assert_eq!(g.engine().variables().count(VAR_LOADED), 25);
    assert_eq!(g.engine().variables().count(VAR_PENDING), 0);
}

#[test]
fn variables_are_zero_before_tick_1() {
    let g = game(&seed_scene());
    assert_eq!(g.engine().variables().get(VAR_LOADED), Some(&json!(0)));
    assert_eq!(g.engine().variables().get(VAR_PENDING), Some(&json!(0)));
}

fn focus_scene() -> serde_json::Value {
    json!({
        "kits": kits(json!({ "chunkSize": 10, "radius": 0, "budgetMs": 1 })),
        "scenes": [ { "id": "s", "entry": { "x": 5, "z": 905 } } ],
        "entities": [
            { "id": "walker", "tags": [], "position": { "x": 105, "z": 5 } },
            { "id": "first", "tags": ["player"], "position": { "x": 205, "z": 5 } },
            { "id": "second", "tags": ["player"], "position": { "x": 305, "z": 5 } },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 405, "z": 5 } },
            { "id": "boat", "tags": ["vehicle"], "position": { "x": 505, "z": 5 }, "rides": "car" }
        ]
    })
}

fn focus_chunk(g: &world_streaming::game::Game) -> (i64, i64) {
    let f = g.streaming().unwrap().focus().expect("a focus");
    let c = g.streaming().unwrap().chunk_of(f);
    (c.x, c.z)
}

#[test]
fn focus_sources_take_priority_in_the_order_of_the_spec() {
    let mut g = game(&focus_scene());
    // The first entity tagged player.
    run(&mut g, &[], 1);
    assert_eq!(focus_chunk(&g), (20, 0));
    // The controlled character beats the tagged player.
    run(
        &mut g,
        &[json!({"tick": 2, "do": "control", "entity": "walker"})],
        2,
    );
    assert_eq!(focus_chunk(&g), (10, 0));
    // The vehicle the player rides beats the player; a vehicle's vehicle does not count.
    run(
        &mut g,
        &[json!({"tick": 3, "do": "ride", "entity": "walker", "vehicle": "boat"})],
        3,
    );
    assert_eq!(focus_chunk(&g), (50, 0));
    // A link to a vehicle that no longer exists counts as absent.
    run(
        &mut g,
        &[json!({"tick": 4, "do": "despawn", "entity": "boat"})],
        4,
    );
    assert_eq!(focus_chunk(&g), (10, 0));
    // Control cleared: back to the first tagged player; untagged: the next one.
    run(
        &mut g,
        &[json!({"tick": 5, "do": "control", "entity": null})],
        5,
    );
    assert_eq!(focus_chunk(&g), (20, 0));
    run(
        &mut g,
        &[json!({"tick": 6, "do": "untag", "entity": "first", "tag": "player"})],
        6,
    );
    assert_eq!(focus_chunk(&g), (30, 0));
    // No player at all: the last player.moved.
    run(
        &mut g,
        &[
            json!({"tick": 7, "do": "despawn", "entity": "second"}),
            json!({"tick": 7, "do": "player.moved", "at": {"x": 605, "z": 5}}),
        ],
        7,
    );
    assert_eq!(focus_chunk(&g), (60, 0));
}

#[test]
fn without_any_source_the_last_focus_stays_and_a_new_scene_starts_at_its_entry() {
    let mut g = game(&focus_scene());
    run(&mut g, &[], 1);
    assert_eq!(focus_chunk(&g), (20, 0));
    run(
        &mut g,
        &[
            json!({"tick": 2, "do": "despawn", "entity": "first"}),
            json!({"tick": 2, "do": "despawn", "entity": "second"}),
        ],
        2,
    );
    assert_eq!(focus_chunk(&g), (20, 0), "the last focus stays");
    run(
        &mut g,
        &[json!({"tick": 3, "do": "enter", "scene": "s"})],
        3,
    );
    assert_eq!(focus_chunk(&g), (0, 90), "entering starts at the entry");
    assert!(g.streaming().unwrap().is_loaded(c(0, 90)));
}

#[test]
fn player_moved_is_echoed_with_y_only_when_given() {
    let mut g = game(&focus_scene());
    run(
        &mut g,
        &[
            json!({"tick": 1, "do": "player.moved", "at": {"x": 1, "z": 2}}),
            json!({"tick": 2, "do": "player.moved", "at": {"x": 1, "y": 7, "z": 2}}),
        ],
        2,
    );
    let moved: Vec<String> = event_lines(&g)
        .into_iter()
        .filter(|l| l.contains("player.moved"))
        .collect();
    assert_eq!(
        moved,
        [
            r#"{"tick":1,"event":"player.moved","data":{"x":1,"z":2}}"#,
            r#"{"tick":2,"event":"player.moved","data":{"x":1,"y":7,"z":2}}"#
        ]
    );
}

fn drive_scene(radius: u64) -> serde_json::Value {
    json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": radius, "budgetMs": 100 })),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    })
}

#[test]
fn pacing_across_a_chunk_border_releases_nothing() {
    let mut g = game(&drive_scene(1));
    let mut lines = Vec::new();
    for t in 2..40u64 {
        let x = if t % 2 == 0 { 33.0 } else { 31.0 };
        lines.push(json!({"tick": t, "do": "move", "entity": "hero", "to": {"x": x, "z": 16}}));
    }
    run(&mut g, &lines, 40);
    assert!(chunk_events(&g, "world.chunk.unloaded").is_empty());
    assert_eq!(
        g.streaming().unwrap().loaded().len(),
        12,
        "3x4 chunks: both squares"
    );
}

#[test]
fn moving_far_releases_exactly_the_chunks_beyond_radius_plus_one_in_row_order() {
    let mut g = game(&drive_scene(1));
    run(&mut g, &[], 1);
    assert_eq!(g.streaming().unwrap().loaded().len(), 9);
    // Two chunks east: only the west column (ring 3) goes, all in one tick, row order.
    run(
        &mut g,
        &[json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 80, "z": 16}})],
        2,
    );
    assert_eq!(
        chunk_events(&g, "world.chunk.unloaded"),
        [(2, -1, -1), (2, -1, 0), (2, -1, 1)]
    );
    // Far away: everything left goes at once, in row order, without a budget.
    run(
        &mut g,
        &[json!({"tick": 3, "do": "move", "entity": "hero", "to": {"x": 5000, "z": 16}})],
        3,
    );
    let released: Vec<(i64, i64)> = chunk_events(&g, "world.chunk.unloaded")
        .into_iter()
        .filter(|e| e.0 == 3)
        .map(|e| (e.1, e.2))
        .collect();
    let mut sorted = released.clone();
    sorted.sort_by_key(|&(x, z)| (z, x));
    assert_eq!(released, sorted);
    assert_eq!(
        released.len(),
        12,
        "columns 0..=3 were loaded, column 0 kept as ring 2"
    );
}

#[test]
fn chunks_entirely_outside_the_ground_never_load_and_partly_inside_ones_do() {
    let mut g = game(&json!({
        "kits": [
            { "id": "world.ground", "config": { "bounds": { "minX": 0, "minZ": 0, "maxX": 40, "maxZ": 32 } } },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 2, "budgetMs": 50 } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    }));
    run(&mut g, &[], 3);
    assert_eq!(g.streaming().unwrap().loaded(), [c(0, 0), c(1, 0)]);
    assert!(g.streaming().unwrap().pending().is_empty());
}

fn dormancy_scene() -> serde_json::Value {
    json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 0, "budgetMs": 1 })),
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } },
            { "id": "crate", "tags": ["streamable"], "position": { "x": 10, "z": 10 } },
            { "id": "far", "tags": ["streamable"], "position": { "x": 500, "z": 10 } },
            { "id": "rock", "tags": [], "position": { "x": 500, "z": 10 } }
        ]
    })
}

fn dormant(g: &world_streaming::game::Game) -> Vec<String> {
    g.state().dormant
}

#[test]
fn dormancy_follows_loads_releases_moves_spawns_and_tags() {
    let mut g = game(&dormancy_scene());
    assert_eq!(
        dormant(&g),
        ["crate", "far"],
        "nothing loaded before tick 1"
    );
    run(&mut g, &[], 1);
    assert_eq!(dormant(&g), ["far"]);
    // A move into a loaded chunk wakes it; a spawn outside is dormant at once.
    apply(
        &mut g,
        json!({"tick": 2, "do": "move", "entity": "far", "to": {"x": 20, "z": 20}}),
    );
    apply(
        &mut g,
        json!({"tick": 2, "do": "spawn", "entity": {"id": "new", "tags": ["streamable"], "position": {"x": 900, "z": 0}}}),
    );
    assert_eq!(
        dormant(&g),
        ["new"],
        "after every input, not only after ticks"
    );
    // Tagging rock streamable in an unloaded chunk makes it dormant; untagging `streamable`
    // also removes `dormant`.
    apply(
        &mut g,
        json!({"tick": 2, "do": "tag", "entity": "rock", "tag": "streamable"}),
    );
    apply(
        &mut g,
        json!({"tick": 2, "do": "untag", "entity": "new", "tag": "streamable"}),
    );
    assert_eq!(dormant(&g), ["rock"]);
    // The player leaves: chunk (0,0) is released (radius 0: beyond ring 1) and its entities sleep.
    run(
        &mut g,
        &[json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 200, "z": 8}})],
        2,
    );
    assert_eq!(dormant(&g), ["crate", "far", "rock"]);
    // A user removing `dormant` by hand is corrected at once; despawned entities drop out.
    apply(
        &mut g,
        json!({"tick": 3, "do": "untag", "entity": "crate", "tag": "dormant"}),
    );
    assert_eq!(dormant(&g), ["crate", "far", "rock"]);
    apply(&mut g, json!({"tick": 3, "do": "despawn", "entity": "far"}));
    assert_eq!(dormant(&g), ["crate", "rock"]);
}

#[test]
fn on_chunk_callbacks_run_in_subscription_order_and_stop_after_unsubscribe() {
    let mut g = game(&seed_scene());
    let s = g.streaming().unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let a = seen.clone();
    let sub_a = s.on_chunk(Box::new(move |c, loaded| {
        a.borrow_mut().push(("a", c.x, c.z, loaded))
    }));
    let b = seen.clone();
    let _sub_b = s.on_chunk(Box::new(move |c, loaded| {
        b.borrow_mut().push(("b", c.x, c.z, loaded))
    }));
    g.tick();
    assert_eq!(
        *seen.borrow(),
        [
            ("a", 0, 0, true),
            ("b", 0, 0, true),
            ("a", 0, -1, true),
            ("b", 0, -1, true)
        ]
    );
    sub_a.unsubscribe();
    seen.borrow_mut().clear();
    g.tick();
    assert_eq!(seen.borrow().len(), 2);
    assert!(seen.borrow().iter().all(|e| e.0 == "b"));
}

#[test]
fn a_callback_may_read_the_service_while_it_runs() {
    let mut g = game(&seed_scene());
    let s = g.streaming().unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (s2, log) = (s.clone(), seen.clone());
    let _sub = s.on_chunk(Box::new(move |c, _| {
        log.borrow_mut().push((c, s2.is_loaded(c)))
    }));
    g.tick();
    assert_eq!(*seen.borrow(), [(c(0, 0), true), (c(0, -1), true)]);
}

fn two_scenes() -> serde_json::Value {
    json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 1, "budgetMs": 2 })),
        "scenes": [
            { "id": "town", "entry": { "x": 8, "z": 8 } },
            { "id": "cave", "entry": { "x": 1000, "z": 1000 }, "layers": { "world.streaming": { "radius": 0 } } }
        ]
    })
}

#[test]
fn leaving_releases_everything_in_row_order_without_budget_and_forgets_the_focus() {
    let mut g = game(&two_scenes());
    let s = g.streaming().unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    let _sub = s.on_chunk(Box::new(move |c, loaded| {
        log.borrow_mut().push((c, loaded))
    }));
    run(&mut g, &[], 5);
    assert_eq!(s.loaded().len(), 9);
    run(&mut g, &[json!({"tick": 6, "do": "leave"})], 6);
    let released: Vec<_> = chunk_events(&g, "world.chunk.unloaded");
    assert_eq!(released.len(), 9);
    assert!(
        released.iter().all(|e| e.0 == 6),
        "stamped with the input's tick"
    );
    let order: Vec<_> = released.iter().map(|e| c(e.1, e.2)).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "row order");
    assert_eq!(
        seen.borrow().iter().filter(|e| !e.1).count(),
        9,
        "onChunk(c, false) for each"
    );
    assert_eq!(s.focus(), None);
    assert!(s.pending().is_empty());
    assert_eq!(g.state().scene, None);
    assert_eq!(g.engine().variables().count(VAR_LOADED), 0);
    assert_eq!(g.state().focus, None);
    run(&mut g, &[], 7);
    assert_eq!(g.state().tick, 7, "ticks still count with no active scene");
    assert!(s.loaded().is_empty() && s.pending().is_empty());
    // Entering starts around the entry, within budget, with the scene's layer.
    run(
        &mut g,
        &[json!({"tick": 8, "do": "enter", "scene": "cave"})],
        8,
    );
    assert_eq!(s.loaded(), [c(31, 31)], "radius 0 from the cave's layer");
    assert_eq!(g.state().scene.as_deref(), Some("cave"));
}

#[test]
fn entering_while_a_scene_is_active_leaves_it_first() {
    let mut g = game(&two_scenes());
    run(&mut g, &[], 5);
    run(
        &mut g,
        &[json!({"tick": 6, "do": "enter", "scene": "cave"})],
        6,
    );
    assert_eq!(chunk_events(&g, "world.chunk.unloaded").len(), 9);
    assert_eq!(g.streaming().unwrap().loaded(), [c(31, 31)]);
}

#[test]
fn around_lists_the_wanted_square_nearest_first() {
    let g = game(&seed_scene());
    let s = g.streaming().unwrap();
    let a = s.around(Position::new(8.0, 8.0));
    assert_eq!(a.len(), 9);
    assert_eq!(a[..3], [c(0, 0), c(0, -1), c(-1, 0)]);
    assert_eq!(s.chunk_size(), 32.0);
}

fn drive_inputs() -> Vec<serde_json::Value> {
    let mut lines = vec![
        json!({"tick": 1, "do": "spawn", "entity": {"id": "car", "tags": ["vehicle"], "position": {"x": 0, "z": 0}}}),
        json!({"tick": 1, "do": "ride", "entity": "hero", "vehicle": "car"}),
    ];
    for t in 2..120u64 {
        let x = (t as f64) * 7.5;
        let z = ((t as f64) * 0.37).sin() * 90.0;
        lines.push(json!({"tick": t, "do": "move", "entity": "car", "to": {"x": x, "z": z}}));
    }
    lines
}

#[test]
fn the_same_scenario_run_twice_gives_identical_event_logs() {
    let once = || {
        let mut g = game(&dormancy_scene());
        run(&mut g, &drive_inputs(), 130);
        event_lines(&g)
    };
    let (a, b) = (once(), once());
    assert!(a.len() > 50, "the scenario streams: {} events", a.len());
    assert_eq!(a, b);
}

#[test]
fn radius_3_budget_1_loads_one_chunk_a_tick_in_the_hand_worked_nearest_first_order() {
    // 49 pending against 1 load a tick: the planner's linear-scan path. From (8, 8) with 32 m
    // chunks, chunk (x, z) is dx = 32x + 8, dz = 32z + 8 from the focus, so its squared distance
    // is f(x) + f(z) with f(-2) = 3136, f(-1) = 576, f(0) = 64, f(1) = 1600: 128; 640 twice;
    // 1152; 1664 twice; 2176 twice; 3200 three times ((0,-2), (-2,0), (1,1)); 3712 twice. Ties go
    // to the lower z, then the lower x.
    let mut g = game(&json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 3, "budgetMs": 1 })),
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    }));
    run(&mut g, &[], 13);
    let expected: Vec<(u64, i64, i64)> = [
        (0, 0),
        (0, -1),
        (-1, 0),
        (-1, -1),
        (1, 0),
        (0, 1),
        (1, -1),
        (-1, 1),
        (0, -2),
        (-2, 0),
        (1, 1),
        (-1, -2),
        (-2, -1),
    ]
    .into_iter()
    .zip(1..)
    .map(|((x, z), t)| (t, x, z))
    .collect();
    assert_eq!(chunk_events(&g, "world.chunk.loaded"), expected);
    assert_eq!(g.streaming().unwrap().pending().len(), 49 - 13);
}

#[test]
fn a_scene_entered_mid_run_loads_nothing_at_enter_and_then_its_budget_each_tick() {
    let mut g = game(&json!({
        "kits": kits(json!({ "chunkSize": 32, "radius": 0, "budgetMs": 1 })),
        "scenes": [
            { "id": "town", "entry": { "x": -200, "z": 8 } },
            { "id": "field", "entry": { "x": 8, "z": 8 }, "layers": { "world.streaming": { "radius": 2, "budgetMs": 3 } } }
        ]
    }));
    run(&mut g, &[], 2);
    assert_eq!(chunk_events(&g, "world.chunk.loaded"), [(1, -7, 0)]);
    apply(&mut g, json!({"tick": 3, "do": "enter", "scene": "field"}));
    let s = g.streaming().unwrap();
    assert!(s.loaded().is_empty(), "entering loads nothing by itself");
    assert_eq!(
        s.pending().len(),
        25,
        "the field's radius-2 square is pending"
    );
    assert_eq!(chunk_events(&g, "world.chunk.unloaded"), [(3, -7, 0)]);
    g.tick();
    g.tick();
    // Three loads a tick (the field's budget), nearest-first from its entry (8, 8).
    assert_eq!(
        chunk_events(&g, "world.chunk.loaded")[1..],
        [
            (3, 0, 0),
            (3, 0, -1),
            (3, -1, 0),
            (4, -1, -1),
            (4, 1, 0),
            (4, 0, 1)
        ]
    );
}

#[test]
fn the_service_reports_the_chunk_size_and_the_ground_bounds_of_the_scene() {
    let g = game(&json!({
        "kits": [
            { "id": "world.ground", "config": { "bounds": { "minX": -5, "minZ": 0, "maxX": 60, "maxZ": 7.5 } } },
            { "id": "world.streaming", "config": { "chunkSize": 12.5 } }
        ]
    }));
    let s = g.streaming().unwrap();
    assert_eq!(s.chunk_size(), 12.5);
    let b = s.bounds().unwrap();
    assert_eq!((b.min_x, b.min_z, b.max_x, b.max_z), (-5.0, 0.0, 60.0, 7.5));
    assert_eq!(s.chunk_of(Position::new(-0.1, 25.0)), c(-1, 2));
    let g = game(&json!({ "kits": kits(json!({})) }));
    assert_eq!(g.streaming().unwrap().bounds(), None);
    assert_eq!(g.streaming().unwrap().chunk_size(), 32.0);
}
