//! Edge cases an independent review of docs/reference/streaming.md, docs/reference/terrain.md
//! found, each a test that failed before its fix: a mod that releases refusals from its unload
//! handler cannot make evictions trade places forever; a ticket requested from an `onBuilt`
//! callback counts from the next tick; a ticket stamped ahead starts counting with
//! `focus: "players"` too; leaving and entering between two ticks over the cap is no new capacity
//! event.

mod common;
use common::{apply, game_in, run};
use serde_json::json;
use std::path::PathBuf;

fn dir(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ws-review-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    for (n, t) in files {
        std::fs::write(d.join(n), t).unwrap();
    }
    d
}

#[test]
fn eviction_ping_pong_terminates() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let d = dir(
            "pingpong",
            &[(
                "pp.lua",
                r#"
on("world.chunk.unload", function(c)
  for _, r in ipairs(streaming.refusals()) do streaming.release(r.x, r.z) end
  return cancel("ping")
end)"#,
            )],
        );
        let s = json!({
            "kits": common::kits(json!({"radius": 1, "budgetMs": 10, "maxLoaded": 9})),
            "scenes": [{"id": "main"}],
            "mods": ["pp.lua"],
            "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}],
        });
        let mut g = game_in(&s, &d);
        run(&mut g, &[], 1);
        run(
            &mut g,
            &[json!({"tick": 2, "do": "move", "entity": "hero", "to": {"x": 48, "z": 16}})],
            2,
        );
        tx.send(()).unwrap();
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_secs(20)).is_ok(),
        "tick 2 never ended"
    );
}

#[test]
fn on_built_request_counts_from_next_tick() {
    let d = dir(
        "onbuilt",
        &[(
            "ob.lua",
            r#"
local done = false
terrain.onBuilt(function(c)
  if not done then done = true; streaming.request("t", {x = 1000, z = 1000}, 0, 1) end
end)"#,
        )],
    );
    let s = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 0, "budgetMs": 1 } },
            { "id": "world.terrain", "config": { "commitLatency": 1, "workers": 1 } }
        ],
        "scenes": [{"id": "main"}],
        "mods": ["ob.lua"],
        "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}],
    });
    let mut g = game_in(&s, &d);
    run(&mut g, &[], 4);
    let l = common::events_named(&g, "world.chunk.loaded");
    // built at start of tick 2 -> request during tick 2 -> should count in tick 3 only
    assert!(
        l.iter()
            .any(|(t, v)| *t == 3 && v == &json!({"x": 31, "z": 31})),
        "{l:?}"
    );
}

#[test]
fn future_ticket_with_players_quick_path() {
    let s = json!({
        "kits": common::kits(json!({"focus": "players", "radius": 0, "budgetMs": 1})),
        "scenes": [{"id": "main"}],
        "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}],
    });
    let mut g = game_in(&s, std::path::Path::new("."));
    run(&mut g, &[], 1);
    // A request stamped 5 applied now (Game::apply is public).
    apply(
        &mut g,
        json!({"tick": 5, "do": "request", "id": "t", "at": {"x": 1000, "z": 1000}, "radius": 0, "ticks": 3}),
    );
    run(&mut g, &[], 8);
    let l = common::events_named(&g, "world.chunk.loaded");
    assert!(
        l.iter().any(|(_, v)| v == &json!({"x": 31, "z": 31})),
        "{l:?} tickets {:?}",
        g.tickets().len()
    );
}

#[test]
fn leave_enter_between_over_capacity_ticks() {
    let s = json!({
        "kits": common::kits(json!({"radius": 1, "budgetMs": 1, "maxLoaded": 4})),
        "scenes": [{"id": "main", "entry": {"x": 16, "z": 16}}],
        "entities": [],
    });
    let mut g = game_in(&s, std::path::Path::new("."));
    run(
        &mut g,
        &[json!({"tick": 2, "do": "enter", "scene": "main"})],
        2,
    );
    assert_eq!(
        common::events_named(&g, "world.streaming.capacity").len(),
        1
    );
}

/// Found by tests/reference_foci.rs: a ticket that expired outside a scene put the tickets left
/// back into the plan, so `pending()` (and `world.chunks.pending`) listed chunks with no scene
/// active, against docs/reference/tick.md#no-active-scene.
#[test]
fn outside_a_scene_nothing_is_pending_even_when_a_ticket_expires() {
    let s = json!({
        "kits": common::kits(json!({"radius": 0, "chunkSize": 16})),
        "scenes": [{"id": "a", "entry": {"x": 0, "z": 0}}],
    });
    let mut g = common::game(&s);
    let lines = [
        json!({"tick": 1, "do": "leave"}),
        json!({"tick": 2, "do": "request", "id": "short", "at": {"x": 0, "z": 0}, "radius": 0, "ticks": 1}),
        json!({"tick": 2, "do": "request", "id": "long", "at": {"x": 40, "z": 0}, "radius": 1, "ticks": 5}),
    ];
    run(&mut g, &lines, 2);
    assert_eq!(g.tickets().len(), 1, "`short` expired at the end of tick 2");
    let state = g.state();
    assert_eq!(state.scene, None);
    assert!(state.pending.is_empty(), "pending {:?}", state.pending);
    assert_eq!(g.engine().variables().count("world.chunks.pending"), 0);
    // Entering a scene brings the ticket left into the plan.
    run(
        &mut g,
        &[json!({"tick": 3, "do": "enter", "scene": "a"})],
        3,
    );
    assert_eq!(g.state().foci.len(), 2, "the entry, then the ticket");
}

/// Found by tests/reference_foci.rs: a ticket requested outside a scene is kept
/// (docs/reference/streaming.md#tickets), but a save holding one was refused ("leaving a scene
/// drops the tickets"): the game could not be loaded back.
#[test]
fn a_save_made_outside_a_scene_with_a_ticket_loads_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let s = json!({
        "kits": common::kits(json!({"radius": 0, "chunkSize": 16})),
        "scenes": [{"id": "a", "entry": {"x": 0, "z": 0}}],
    });
    let lines = [
        json!({"tick": 1, "do": "leave"}),
        json!({"tick": 2, "do": "request", "id": "t", "at": {"x": 40, "z": 0}, "radius": 0, "ticks": 6}),
        json!({"tick": 4, "do": "enter", "scene": "a"}),
    ];
    let mut whole = common::game(&s);
    run(&mut whole, &lines, 8);
    let (resumed, events) = common::resumed_from_save(&s, dir.path(), &lines, 3, 8);
    assert_eq!(events, common::events_after(&whole, 3));
    assert_eq!(resumed.state(), whole.state());
    assert!(
        common::chunk_events(&whole, "world.chunk.loaded").contains(&(4, 2, 0)),
        "the ticket's chunk is loaded once the scene is entered"
    );
}
