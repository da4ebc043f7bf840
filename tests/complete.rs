//! Complete chunks (docs/reference/streaming.md#complete-chunks): the `neighbours` key, the
//! wanted and released radii, completeness and its events at the end of the tick, readiness and
//! holes reading completeness, saves continuing exactly, and `neighbours: 0` changing nothing.

mod common;

use common::{c, game, game_in, run};
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::host::EntityId;
use world_streaming::kits::streaming::{StreamingService, STREAMING};

fn scene(streaming: Value, terrain: Option<Value>) -> Value {
    let mut kits = vec![
        json!({ "id": "world.ground" }),
        json!({ "id": "world.streaming", "config": streaming }),
    ];
    if let Some(t) = terrain {
        kits.push(json!({ "id": "world.terrain", "config": t }));
    }
    json!({
        "kits": kits,
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "rides": "car" },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 16, "z": 16 } }
        ],
        "control": "hero"
    })
}

fn service(g: &Game) -> std::rc::Rc<dyn StreamingService> {
    g.engine()
        .service::<dyn StreamingService>(STREAMING)
        .unwrap()
}

/// A drive east and back, 12 m a tick, then a stop.
fn drive(ticks: u64) -> Vec<Value> {
    (1..=ticks)
        .map(|t| {
            let x = if t <= ticks / 2 {
                16 + 12 * t
            } else {
                16 + 12 * (ticks - t)
            };
            json!({"tick": t, "do": "move", "entity": "car", "to": {"x": x, "z": 16 + 5 * (t % 7)}})
        })
        .collect()
}

/// The tick's events as `name x z` (chunk events) or `name` (others), in emission order.
fn tick_events(g: &Game, tick: u64) -> Vec<String> {
    g.engine()
        .events()
        .iter()
        .filter(|e| e.tick == tick)
        .map(|e| match (e.data.get("x"), e.data.get("z")) {
            (Some(x), Some(z)) if e.event.starts_with("world.chunk.") => {
                format!("{} {x} {z}", &e.event["world.chunk.".len()..])
            }
            _ => e.event.to_string(),
        })
        .collect()
}

fn square(cx: i64, cz: i64, r: i64) -> Vec<ChunkPos> {
    let mut v = Vec::new();
    for z in cz - r..=cz + r {
        for x in cx - r..=cx + r {
            v.push(c(x, z));
        }
    }
    v
}

fn variable(g: &Game, name: &str) -> Option<Value> {
    serde_json::to_value(g.state()).unwrap()["variables"]
        .get(name)
        .cloned()
}

/// With `neighbours` absent or 0, every output is what it was: events, state and the save,
/// byte for byte, on a terrain drive.
#[test]
fn neighbours_zero_changes_nothing() {
    let outputs = |streaming: Value| {
        let dir = tempfile::tempdir().unwrap();
        // Inline: the save's `waits` is then 0 whatever the threads did.
        let t = json!({ "seed": 4, "workers": "inline", "commitLatency": 2 });
        let mut g = game_in(&scene(streaming, Some(t)), dir.path());
        run(&mut g, &drive(30), 30);
        let save = dir.path().join("s.json");
        g.save(&save).unwrap();
        let text = std::fs::read_to_string(&save).unwrap();
        (
            common::event_lines(&g),
            serde_json::to_string(&common::state_without_timing(&g)).unwrap(),
            text,
        )
    };
    let absent = outputs(json!({ "radius": 2, "budgetMs": 3 }));
    let zero = outputs(json!({ "radius": 2, "budgetMs": 3, "neighbours": 0 }));
    assert_eq!(absent.0, zero.0);
    assert_eq!(absent.1, zero.1);
    assert_eq!(absent.2, zero.2);
    assert!(absent.2.contains("\"version\": 2"), "{}", &absent.2[..200]);
    assert!(!absent.0.iter().any(|l| l.contains("complete")));
    assert!(!absent.1.contains("world.chunks.complete"));
}

/// Chunks are wanted within radius + k and released beyond radius + k + 1; the complete and
/// incomplete events come after the tick's chunk events, one sequence in row order.
#[test]
fn radii_and_events_in_row_order_after_the_chunk_events() {
    let mut g = game(&scene(
        json!({ "radius": 1, "budgetMs": 100, "neighbours": 1 }),
        None,
    ));
    run(&mut g, &[], 1);
    let s = service(&g);
    assert_eq!(s.loaded(), square(0, 0, 2), "radius + k");
    assert_eq!(s.complete(), square(0, 0, 1));
    assert!(s.is_complete(c(0, 0)) && !s.is_complete(c(2, 0)));
    assert_eq!(s.neighbours(), 1);
    let events = tick_events(&g, 1);
    let first_complete = events
        .iter()
        .position(|e| e.starts_with("complete"))
        .unwrap();
    assert_eq!(first_complete, 25, "after the 25 loads: {events:?}");
    let completes: Vec<String> = square(0, 0, 1)
        .iter()
        .map(|p| format!("complete {} {}", p.x, p.z))
        .collect();
    assert_eq!(events[25..], completes[..]);
    assert_eq!(variable(&g, "world.chunks.complete"), Some(json!(9)));
    // Two chunks east: ring 4 (> radius + k + 1 = 3) is released, ring 3 kept.
    run(
        &mut g,
        &[json!({"tick": 2, "do": "move", "entity": "car", "to": {"x": 80, "z": 16}})],
        2,
    );
    // Wanted x 0..=4; x = -1 is ring 3 (kept), x = -2 ring 4 (released).
    let mut loaded = square(1, 0, 2);
    loaded.extend(square(2, 0, 2).into_iter().filter(|p| p.x >= 4));
    loaded.sort();
    assert_eq!(s.loaded(), loaded);
    let events = tick_events(&g, 2);
    let tail: Vec<&str> = events
        .iter()
        .filter(|e| e.starts_with("complete") || e.starts_with("incomplete"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "incomplete -1 -1",
            "complete 2 -1",
            "complete 3 -1",
            "incomplete -1 0",
            "complete 2 0",
            "complete 3 0",
            "incomplete -1 1",
            "complete 2 1",
            "complete 3 1",
        ]
    );
    let last_chunk = events
        .iter()
        .rposition(|e| e.starts_with("loaded") || e.starts_with("unloaded"))
        .unwrap();
    let first = events
        .iter()
        .position(|e| e.starts_with("complete") || e.starts_with("incomplete"))
        .unwrap();
    assert!(last_chunk < first, "{events:?}");
    // A complete chunk released gets only its unloaded event.
    run(
        &mut g,
        &[json!({"tick": 3, "do": "move", "entity": "car", "to": {"x": 400, "z": 16}})],
        3,
    );
    let events = tick_events(&g, 3);
    assert!(events.contains(&"unloaded 2 0".to_owned()), "{events:?}");
    assert!(
        !events.iter().any(|e| e.starts_with("incomplete")),
        "{events:?}"
    );
}

/// A neighbour held by a load refusal is missing: the chunks around it stay incomplete, and
/// the player's square (which holds it) is not ready, whereas with k = 0 it is.
#[test]
fn a_refused_neighbour_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gap.json"),
        r#"{"id": "gap", "hook": "world.chunk.load", "match": {"x": 1, "z": 1}, "cancel": true}"#,
    )
    .unwrap();
    let with = |k: u32| {
        let mut s = scene(
            json!({ "radius": 1, "budgetMs": 100, "neighbours": k }),
            None,
        );
        s["mods"] = json!(["gap.json"]);
        let mut g = game_in(&s, dir.path());
        run(&mut g, &[], 3);
        g
    };
    let g = with(1);
    let s = service(&g);
    assert!(s.is_loaded(c(0, 0)) && !s.is_loaded(c(1, 1)));
    for p in [c(0, 0), c(1, 0), c(0, 1), c(2, 2)] {
        assert!(!s.is_complete(p), "{p}");
    }
    assert!(s.is_complete(c(-1, -1)) && s.is_complete(c(0, -1)));
    assert!(!s.ready(&EntityId::new("hero")));
    let g0 = with(0);
    assert!(service(&g0).ready(&EntityId::new("hero")));
}

/// At the edge of the ground, neighbours outside it are not needed.
#[test]
fn neighbours_outside_the_ground_are_not_needed() {
    let mut s = scene(
        json!({ "radius": 0, "budgetMs": 100, "neighbours": 1 }),
        None,
    );
    s["kits"][0]["config"] = json!({ "bounds": { "minX": 0, "minZ": 0, "maxX": 96, "maxZ": 96 } });
    let mut g = game(&s);
    run(&mut g, &[], 1);
    let sv = service(&g);
    assert_eq!(sv.loaded(), [c(0, 0), c(1, 0), c(0, 1), c(1, 1)]);
    assert_eq!(sv.complete(), [c(0, 0)]);
    assert!(sv.ready(&EntityId::new("hero")));
    assert_eq!(tick_events(&g, 1).last().unwrap(), "complete 0 0");
}

/// k = 2 wants two rings more; a ticket uses its own radius + k, is ready when its own
/// square is complete, and the ticket cap counts its square with the rings, `(2·(r + k) + 1)²`
/// (25 at radius 0: refused under a cap of 24).
#[test]
fn two_rings_and_a_ticket() {
    let streaming =
        |cap: u32| json!({ "radius": 0, "budgetMs": 5, "neighbours": 2, "maxTicketChunks": cap });
    let mut g = game(&scene(streaming(24), None));
    let request = json!({"tick": 1, "do": "request", "id": "far", "at": {"x": 3216, "z": 16}, "radius": 0, "ticks": 100});
    run(&mut g, std::slice::from_ref(&request), 2);
    common::assert_one_ticket_refused(&g, 25);
    let mut g = game(&scene(streaming(25), None));
    run(&mut g, &[request], 12);
    let s = service(&g);
    assert_eq!(
        s.tickets().len(),
        1,
        "the cap counts the ticket's square with its rings: 25"
    );
    for p in square(100, 0, 2) {
        assert!(s.is_loaded(p), "{p}");
    }
    assert!(!s.is_loaded(c(103, 0)));
    assert_eq!(s.loaded().len(), 50);
    assert!(s.is_complete(c(100, 0)) && !s.is_complete(c(101, 0)));
    let ready = common::events_named(&g, "world.ticket.ready");
    let complete = common::chunk_events(&g, "world.chunk.complete");
    let centre = complete.iter().find(|e| (e.1, e.2) == (100, 0)).unwrap().0;
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].0, centre, "ready on the tick its square completes");
    let events = tick_events(&g, centre);
    assert!(
        events.iter().position(|e| e == "complete 100 0")
            < events.iter().position(|e| e == "world.ticket.ready"),
        "{events:?}"
    );
}

/// Leaving the scene releases every chunk: no incomplete event, the count goes to 0.
#[test]
fn leaving_the_scene_announces_releases_only() {
    let mut s = scene(
        json!({ "radius": 1, "budgetMs": 100, "neighbours": 1 }),
        None,
    );
    s["scenes"] = json!([{ "id": "a", "entry": { "x": 16, "z": 16 } }, { "id": "b", "entry": { "x": 5000, "z": 16 } }]);
    let mut g = game(&s);
    run(&mut g, &[], 2);
    assert_eq!(service(&g).complete().len(), 9);
    run(
        &mut g,
        &[json!({"tick": 3, "do": "enter", "scene": "b"})],
        3,
    );
    let events = tick_events(&g, 3);
    assert!(
        !events.iter().any(|e| e.starts_with("incomplete")),
        "{events:?}"
    );
}

/// A terrain drive with k = 1: every event with 1 and with 4 workers is identical, every
/// tick's complete set equals a naive recount, and a save at any tick continues exactly.
#[test]
fn a_terrain_drive_is_the_same_with_any_workers_and_across_saves() {
    let s = |workers: u32| {
        scene(
            json!({ "radius": 2, "budgetMs": 3, "neighbours": 1 }),
            Some(json!({ "seed": 7, "workers": workers, "commitLatency": 2 })),
        )
    };
    let lines = drive(50);
    let mut one = game(&s(1));
    let naive = |g: &Game| {
        let sv = service(g);
        let loaded = sv.loaded();
        let built = |p: ChunkPos| {
            let t = g
                .engine()
                .service::<dyn world_streaming::kits::terrain::TerrainService>(
                    world_streaming::kits::terrain::TERRAIN,
                )
                .unwrap();
            t.is_built(p)
        };
        loaded
            .iter()
            .copied()
            .filter(|p| {
                square(p.x, p.z, 1)
                    .into_iter()
                    .all(|n| sv.is_loaded(n) && built(n))
            })
            .collect::<Vec<_>>()
    };
    let mut saw = 0;
    for t in 1..=50 {
        run(&mut one, &lines, t);
        assert_eq!(service(&one).complete(), naive(&one), "tick {t}");
        saw += service(&one).complete().len();
    }
    assert!(saw > 100, "the drive completes chunks: {saw}");
    let mut four = game(&s(4));
    run(&mut four, &lines, 50);
    assert_eq!(common::event_lines(&one), common::event_lines(&four));
    let completes = common::chunk_events(&one, "world.chunk.complete").len();
    let incompletes = common::chunk_events(&one, "world.chunk.incomplete").len();
    assert!(
        completes > 20 && incompletes > 0,
        "{completes} {incompletes}"
    );
    for n in [3u64, 11, 26, 37] {
        let dir = tempfile::tempdir().unwrap();
        let (_second, actual) = common::resumed_from_save(&s(2), dir.path(), &lines, n, 50);
        let save = std::fs::read_to_string(dir.path().join("run.save.json")).unwrap();
        assert!(save.contains("\"version\": 4"), "saved at {n}");
        assert_eq!(actual, common::events_after(&one, n), "saved at {n}");
    }
}

/// The key is checked like every other, in the config, a layer and a mod's set, naming the
/// path.
#[test]
fn a_bad_neighbours_names_its_path() {
    let err = common::scene_error(&scene(json!({ "neighbours": 3 }), None));
    assert!(
        err.contains("kits[1].config.neighbours: expected an integer 0..=2, got 3"),
        "{err}"
    );
    let mut s = scene(json!({}), None);
    s["scenes"] = json!([{ "id": "a", "layers": { "world.streaming": { "neighbours": -1 } } }]);
    let err = common::scene_error(&s);
    assert!(
        err.contains("layers.world.streaming.neighbours: expected an integer 0..=2, got -1"),
        "{err}"
    );
}

/// Lua `streaming.isComplete(x, z)` reads the service; a Rust `on_complete` callback hears
/// exactly the events, in their order, right after each is emitted.
#[test]
fn lua_and_rust_read_completeness() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("probe.lua"),
        r#"local n = 0
on("world.chunk.load", function(c)
  n = n + 1
  if n == 10 then log("probe", streaming.isComplete(0, 0), streaming.isComplete(1, 1)) end
end)
streaming.onComplete(function(c, complete)
  log("heard", c.x, c.z, complete, #streaming.complete())
end)"#,
    )
    .unwrap();
    let mut s = scene(json!({ "radius": 1, "budgetMs": 9, "neighbours": 1 }), None);
    s["mods"] = json!(["probe.lua"]);
    let mut g = game_in(&s, dir.path());
    let heard = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let h = heard.clone();
    let sv = service(&g);
    let sv2 = sv.clone();
    sv.on_complete(Box::new(move |chunk, complete| {
        // Called after the event: the service already answers for it.
        assert_eq!(sv2.is_complete(chunk), complete);
        h.borrow_mut()
            .push((chunk.x, chunk.z, complete, sv2.complete().len()));
    }));
    run(
        &mut g,
        &[json!({"tick": 5, "do": "move", "entity": "car", "to": {"x": 80, "z": 16}})],
        8,
    );
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert!(log.contains(&"probe\ttrue\tfalse".to_owned()), "{log:?}");
    // Lua's onComplete hears what Rust's does, in the same order, and complete() agrees.
    let lua_heard: Vec<String> = log.into_iter().filter(|l| l.starts_with("heard")).collect();
    let rust_heard: Vec<String> = heard
        .borrow()
        .iter()
        .map(|(x, z, c, n)| format!("heard\t{x}\t{z}\t{c}\t{n}"))
        .collect();
    assert_eq!(lua_heard, rust_heard);
    let from_events: Vec<(i64, i64, bool)> = g
        .engine()
        .events()
        .iter()
        .filter_map(|e| match &*e.event {
            "world.chunk.complete" => Some((e.data.xz()?.x, e.data.xz()?.z, true)),
            "world.chunk.incomplete" => Some((e.data.xz()?.x, e.data.xz()?.z, false)),
            _ => None,
        })
        .collect();
    assert!(from_events.iter().any(|e| !e.2), "{from_events:?}");
    let rust: Vec<(i64, i64, bool)> = heard.borrow().iter().map(|e| (e.0, e.1, e.2)).collect();
    assert_eq!(rust, from_events);
}

/// A save's `complete` is what the next tick compares with: a chunk left out of it is
/// announced complete again; a chunk listed that is not loaded is refused, naming the path.
#[test]
fn a_saves_complete_list_is_used_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let s = scene(
        json!({ "radius": 1, "budgetMs": 100, "neighbours": 1 }),
        None,
    );
    let mut g = game_in(&s, dir.path());
    run(&mut g, &[], 2);
    let path = dir.path().join("s.json");
    g.save(&path).unwrap();
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["version"], json!(4));
    let section = &mut v["kits"]["world.streaming"];
    assert_eq!(section["complete"].as_array().unwrap().len(), 9);
    section["complete"].as_array_mut().unwrap().remove(4); // (0, 0)
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, v.to_string()).unwrap();
    let mut h = game_in(&s, dir.path());
    h.load(&edited).unwrap();
    let skip = h.engine().events().len();
    run(&mut h, &[], 3);
    let after = common::events_from(&h, skip);
    assert_eq!(after.len(), 1, "{after:?}");
    assert!(after[0].contains("world.chunk.complete") && after[0].contains("\"x\":0"));
    v["kits"]["world.streaming"]["complete"] = json!([{ "x": 0, "z": 0 }, { "x": 9, "z": 9 }]);
    std::fs::write(&edited, v.to_string()).unwrap();
    let err = h.load(&edited).unwrap_err().to_string();
    assert!(
        err.contains("kits.world.streaming.complete[1]: chunk (9, 9) is not loaded"),
        "{err}"
    );
    v["kits"]["world.streaming"]["complete"] = json!([{ "x": 1, "z": 0 }, { "x": 0, "z": 0 }]);
    std::fs::write(&edited, v.to_string()).unwrap();
    let err = h.load(&edited).unwrap_err().to_string();
    assert!(
        err.contains("kits.world.streaming.complete[1]: expected the chunks in row order"),
        "{err}"
    );
}

/// With k > 0 a hole is a chunk within `min(holeRing, radius)` of a player's focus that is
/// not complete; with k = 0, one that is not ready.
#[test]
fn holes_read_completeness_within_the_mesh_radius() {
    let holes = |k: u32| {
        let mut g = game(&scene(
            json!({ "radius": 1, "budgetMs": 5, "neighbours": k, "holeRing": 1 }),
            None,
        ));
        run(&mut g, &[], 1);
        variable(&g, "world.chunks.holes").unwrap()
    };
    // Tick 1 loads the 5 nearest chunks: 4 of the 9 within ring 1 are missing; none of them is
    // complete yet.
    assert_eq!(holes(0), json!(4));
    assert_eq!(holes(1), json!(9));
}

/// With k > 0 `world.chunks.progress` reads the mesh square: complete chunks over the chunks
/// within the radius, so it reaches 1 on the tick the player is ready, not when every loaded
/// chunk is in.
#[test]
fn progress_reads_completeness_within_the_mesh_radius() {
    let mut g = game(&scene(
        json!({ "radius": 1, "budgetMs": 5, "neighbours": 1 }),
        None,
    ));
    let s = service(&g);
    let mesh = square(0, 0, 1);
    let hero = EntityId::new("hero");
    let mut seen = Vec::new();
    for t in 1..=6 {
        run(&mut g, &[], t);
        let complete = mesh.iter().filter(|p| s.is_complete(**p)).count();
        let want = complete as f64 / 9.0;
        assert_eq!(s.progress(), want, "tick {t}");
        assert_eq!(
            variable(&g, "world.chunks.progress"),
            Some(json!(want)),
            "tick {t}"
        );
        assert_eq!(s.progress() == 1.0, s.ready(&hero), "tick {t}");
        seen.push(complete);
    }
    // Tick 1: the centre and its 4 sides; tick 2: the corners and (0, -2): the 9 loaded, only
    // the centre has all its neighbours. Then the outer ring comes in, 5 a tick.
    assert_eq!(seen[..2], [0, 1]);
    assert_eq!(*seen.last().unwrap(), 9);
}

/// A disc with `neighbours` wants the chunks within ring `k` of the disc of `r` (its edge
/// chunks' neighbours are the square around them), so every chunk of the disc of `r` becomes
/// complete and the player ready; it keeps the disc of `r + 1` with the same rings, and a
/// vertical disc does the same on every row (docs/reference/streaming.md#shapes-and-sections).
#[test]
fn a_disc_with_rings_is_complete_to_its_edge_and_ready() {
    let within = |dx: i64, dz: i64, r: i64, k: i64| {
        (-k..=k).any(|ox| (-k..=k).any(|oz| (dx + ox).pow(2) + (dz + oz).pow(2) <= r * r))
    };
    for vertical in [false, true] {
        let mut streaming =
            json!({ "radius": 2, "budgetMs": 1000, "neighbours": 1, "shape": "disc" });
        if vertical {
            streaming["vertical"] = json!({ "radius": 0 });
        }
        let mut g = game(&scene(streaming, None));
        run(&mut g, &[], 3);
        let s = service(&g);
        assert!(s.ready(&EntityId::new("hero")), "vertical {vertical}");
        let rows: &[i64] = if vertical { &[-1, 0, 1] } else { &[0] };
        let mut want = Vec::new();
        for &y in rows {
            for z in -4..=4 {
                for x in -4..=4 {
                    if within(x, z, 2, 1) {
                        want.push(ChunkPos::section(x, if vertical { y } else { 0 }, z));
                    }
                }
            }
        }
        assert_eq!(s.loaded(), want, "vertical {vertical}");
        // 13 chunks and their ring: 37 (the disc of 3, as before, held 29).
        assert_eq!(want.len() / rows.len(), 37);
        for z in -2i64..=2 {
            for x in -2i64..=2 {
                if x * x + z * z <= 4 {
                    assert!(s.is_complete(ChunkPos::section(x, 0, z)), "{x} {z}");
                }
            }
        }
        // One chunk east: what is beyond the disc of 3 with its ring goes, nothing else.
        let mut east =
            vec![json!({"tick": 4, "do": "move", "entity": "car", "to": {"x": 48, "z": 16}})];
        east.push(json!({"tick": 5, "do": "move", "entity": "car", "to": {"x": 48, "z": 16}}));
        run(&mut g, &east, 6);
        let kept: Vec<ChunkPos> = want
            .iter()
            .copied()
            .filter(|c| within(c.x - 1, c.z, 3, 1))
            .collect();
        assert!(kept.iter().all(|c| s.is_loaded(*c)));
        assert!(want
            .iter()
            .filter(|c| !within(c.x - 1, c.z, 3, 1))
            .all(|c| !s.is_loaded(*c)));
        assert!(s.ready(&EntityId::new("hero")));
    }
}

/// An `onComplete` callback counts in its mod's tick budget like a hook: one that runs away is a
/// `mod.error` with hook `onComplete`, four of them spend the tick's budget, the fifth is not run
/// (the one error naming the tick budget) and no later callback of that tick is made; the game
/// goes on and the events are the same as without the mod.
#[test]
fn on_complete_callbacks_share_the_tick_budget() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spin.lua"),
        "streaming.onComplete(function(c, complete) while true do end end)",
    )
    .unwrap();
    let streaming = json!({ "radius": 1, "budgetMs": 100, "neighbours": 1 });
    let mut s = scene(streaming.clone(), None);
    s["mods"] = json!(["spin.lua"]);
    let mut g = game_in(&s, dir.path());
    run(&mut g, &[], 2);
    let errors: Vec<(u64, String)> = common::events_named(&g, "mod.error")
        .into_iter()
        .map(|(t, d)| {
            assert_eq!(d["hook"], "onComplete", "{d}");
            (t, d["message"].as_str().unwrap().to_owned())
        })
        .collect();
    let complete = common::chunk_events(&g, "world.chunk.complete");
    let tick = complete[0].0;
    assert!(
        complete.len() > 5,
        "more callbacks due than the budget runs"
    );
    let of_tick: Vec<&String> = errors
        .iter()
        .filter(|e| e.0 == tick)
        .map(|e| &e.1)
        .collect();
    assert_eq!(of_tick.len(), 5, "{of_tick:?}");
    assert!(of_tick[..4]
        .iter()
        .all(|m| m.contains("instruction budget exceeded")));
    assert!(of_tick[4].contains("tick budget exceeded"), "{of_tick:?}");
    let plain = {
        let mut g = game_in(&scene(streaming, None), dir.path());
        run(&mut g, &[], 2);
        common::chunk_events(&g, "world.chunk.complete")
    };
    assert_eq!(complete, plain);
}
