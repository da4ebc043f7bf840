//! What one tick may cost, whatever a file or a mod legally asks (docs/performance.md#worst-tick):
//! a Lua mod's budget per tick over all its calls (docs/lua-vm.md#the-tick-budget), and the cap
//! on the chunks the held tickets want (docs/many-foci.md#the-ticket-cap). Counts only, never
//! times.

use std::path::Path;

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::host::Event;
use world_streaming::kits::builtin_catalog;

fn write(dir: &Path, name: &str, text: &str) {
    if let Some(parent) = dir.join(name).parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(dir.join(name), text).unwrap();
}

/// The seed's scene (chunkSize 32, a player at (8, 8)) with `radius`, `budgetMs` and `mods`.
fn scene(radius: u32, budget_ms: u32, mods: &[&str]) -> String {
    json!({
        "kits": [
            {"id": "world.ground"},
            {"id": "world.streaming", "config": {"chunkSize": 32, "radius": radius, "budgetMs": budget_ms}}
        ],
        "mods": mods,
        "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 8, "z": 8}}]
    })
    .to_string()
}

fn game(dir: &Path, scene: &str) -> Game {
    Game::from_scene_text(scene, "scene.json", dir, &builtin_catalog())
        .unwrap_or_else(|e| panic!("scene refused: {e}"))
}

/// `(mod, hook, message)` of the `mod.error` events of `tick`.
fn mod_errors(events: &[Event], tick: u64) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter(|e| e.tick == tick && e.event == "mod.error")
        .map(|e| {
            let s = |k: &str| e.data[k].as_str().unwrap_or_default().to_owned();
            (s("mod"), s("hook"), s("message"))
        })
        .collect()
}

fn count(events: &[Event], tick: u64, name: &str) -> usize {
    events
        .iter()
        .filter(|e| e.tick == tick && e.event == name)
        .count()
}

/// A Lua function body that spends about 900 000 of a call's 1 000 000 units and returns: not a
/// runaway, nearly a whole budget.
const NEARLY_A_BUDGET: &str = "local x = 0 for i = 1, 450000 do x = x + i end";

/// A handler that logs `name` (one log line a call made), then spends nearly its budget.
fn spender(hook: &str, name: &str) -> String {
    format!("on({hook:?}, function(c) log({name:?}) {NEARLY_A_BUDGET} end)\n")
}

/// Log lines per source, then clears the log.
fn calls(game: &Game) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for line in game.take_mod_log() {
        match out.iter_mut().find(|(s, _)| *s == line.message) {
            Some((_, n)) => *n += 1,
            None => out.push((line.message, 1)),
        }
    }
    out
}

/// 1 000 handlers that each spend nearly their budget (an audit's mod: 7.5–8.8 s a tick in a
/// debug build) cost their mod at most its tick budget: four calls run whole, the fifth is cut
/// short by the tick budget (one `mod.error` naming it), and the mod is not called again that
/// tick (the second load's ask skips it); the next tick starts afresh. Another mod is asked as
/// usual, and the hog cancels nothing.
#[test]
fn a_thousand_handlers_spending_nearly_their_budget_cost_one_tick_budget() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "hog.lua",
        &(0..1000)
            .map(|_| spender("world.chunk.load", "hog"))
            .collect::<String>(),
    );
    write(
        dir.path(),
        "count.lua",
        &spender("world.chunk.load", "count"),
    );
    let mut g = game(dir.path(), &scene(1, 2, &["hog.lua", "count.lua"]));
    for tick in 1..=4 {
        g.tick();
        assert_eq!(
            calls(&g),
            [("hog".to_owned(), 5), ("count".to_owned(), 2)],
            "tick {tick}: five calls of the hog (four whole, one cut), two asks of count"
        );
        let events = g.engine().events();
        assert_eq!(count(events, tick, "world.chunk.loaded"), 2, "tick {tick}");
        let errors = mod_errors(events, tick);
        assert_eq!(errors.len(), 1, "tick {tick}: one mod.error: {errors:?}");
        let (by, hook, message) = &errors[0];
        assert_eq!((by.as_str(), hook.as_str()), ("hog", "world.chunk.load"));
        assert_eq!(
            message,
            "tick budget exceeded (4000000 instructions a tick for the mod; its other calls \
             this tick are not made)"
        );
    }
}

/// Two mods may share an id (`a/m.lua`, `b/m.lua`): each loaded mod has its own tick budget.
/// Each spends 3.6 M units a tick (two handlers, two asks): together they would pass one budget.
#[test]
fn each_loaded_mod_has_its_own_tick_budget_even_when_two_share_an_id() {
    let dir = tempfile::tempdir().unwrap();
    for d in ["a", "b"] {
        write(
            dir.path(),
            &format!("{d}/m.lua"),
            &(0..2)
                .map(|_| spender("world.chunk.load", d))
                .collect::<String>(),
        );
    }
    let mut g = game(dir.path(), &scene(1, 2, &["a/m.lua", "b/m.lua"]));
    for tick in 1..=4 {
        g.tick();
        assert_eq!(
            calls(&g),
            [("a".to_owned(), 4), ("b".to_owned(), 4)],
            "tick {tick}"
        );
        assert_eq!(mod_errors(g.engine().events(), tick), []);
    }
}

/// `onChunk` callbacks count in the same budget as the handlers: with six loads a tick and a
/// callback spending nearly a budget, four run whole, the fifth is cut short (`mod.error` with
/// hook `onChunk`), the sixth is not made; the loads themselves all happen.
#[test]
fn on_chunk_callbacks_share_the_tick_budget() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "watch.lua",
        &format!("streaming.onChunk(function(c, loaded) log(\"cb\") {NEARLY_A_BUDGET} end)\n"),
    );
    let mut g = game(dir.path(), &scene(1, 6, &["watch.lua"]));
    g.tick();
    assert_eq!(calls(&g), [("cb".to_owned(), 5)]);
    let events = g.engine().events();
    assert_eq!(count(events, 1, "world.chunk.loaded"), 6);
    let errors = mod_errors(events, 1);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].1, "onChunk");
    assert!(
        errors[0].2.starts_with("tick budget exceeded"),
        "{errors:?}"
    );
    g.tick();
    assert_eq!(
        calls(&g),
        [("cb".to_owned(), 3)],
        "the last 3 loads, afresh"
    );
    assert_eq!(mod_errors(g.engine().events(), 2), []);
}

/// Where a tick's budget starts and ends: each tick is one step, and so is each input applied
/// between two ticks (here `leave`, whose releases call `onChunk` for the 9 chunks): the input's
/// calls have their own budget, stamped with the input's tick, and the tick after it starts
/// afresh.
#[test]
fn an_input_between_two_ticks_has_a_budget_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "watch.lua",
        &format!(
            "streaming.onChunk(function(c, loaded) log(loaded and \"in\" or \"out\") \
             {NEARLY_A_BUDGET} end)\n"
        ),
    );
    let scene_text = json!({
        "kits": [
            {"id": "world.ground"},
            {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1, "budgetMs": 3}}
        ],
        "mods": ["watch.lua"],
        "scenes": [{"id": "a", "entry": {"x": 8, "z": 8}}, {"id": "b", "entry": {"x": 8, "z": 8}}],
        "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 8, "z": 8}}]
    })
    .to_string();
    let mut g = game(dir.path(), &scene_text);
    let inputs = Inputs::parse(
        r#"{"tick": 4, "do": "enter", "scene": "b"}"#,
        "inputs.jsonl",
    )
    .unwrap();
    g.run(&inputs, 3).unwrap();
    assert_eq!(
        calls(&g),
        [("in".to_owned(), 9)],
        "three a tick, within budget"
    );
    g.run(&inputs, 4).unwrap();
    // `enter` leaves `a` (9 releases: 4 whole, 1 cut), then tick 4 loads 3 chunks afresh.
    assert_eq!(calls(&g), [("out".to_owned(), 5), ("in".to_owned(), 3)]);
    let events = g.engine().events();
    assert_eq!(count(events, 4, "world.chunk.unloaded"), 9);
    assert_eq!(count(events, 4, "world.chunk.loaded"), 3);
    let errors = mod_errors(events, 4);
    assert_eq!(errors.len(), 1, "the input's, not the tick's: {errors:?}");
    let first_load_of_tick_4 = events
        .iter()
        .position(|e| e.tick == 4 && e.event == "world.chunk.loaded")
        .unwrap();
    let error_at = events.iter().position(|e| e.event == "mod.error").unwrap();
    assert!(
        error_at < first_load_of_tick_4,
        "during the input, before the tick"
    );
}

/// A run saved at tick N and loaded into a fresh game continues exactly, tick budgets
/// included: the load is a step of its own (what the restore tells `onChunk` is budgeted
/// apart), and every tick starts afresh.
#[test]
fn the_tick_budget_continues_exactly_after_a_load() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "hog.lua",
        &format!(
            "{}streaming.onChunk(function(c, loaded) {NEARLY_A_BUDGET} end)\n",
            (0..10)
                .map(|_| spender("world.chunk.load", "hog"))
                .collect::<String>()
        ),
    );
    let text = scene(2, 3, &["hog.lua"]);
    let save = dir.path().join("s.json");
    let moves = r#"{"tick": 6, "do": "move", "entity": "hero", "to": {"x": 200, "z": 8}}"#;
    let with_save = format!(
        "{}\n{moves}",
        json!({"tick": 4, "do": "save", "path": save.to_str().unwrap()})
    );
    let from_tick_4 = |events: &[Event]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e.tick >= 4)
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    };
    let mut whole = game(dir.path(), &text);
    whole
        .run(&Inputs::parse(&with_save, "inputs.jsonl").unwrap(), 9)
        .unwrap();
    let expected = from_tick_4(whole.engine().events());
    assert!(
        (4..=9).all(|t| mod_errors(whole.engine().events(), t)
            .iter()
            .any(|e| e.2.starts_with("tick budget"))),
        "the tick budget is hit in every tick after the save"
    );
    let mut loaded = game(dir.path(), &text);
    loaded.load(&save).unwrap();
    loaded
        .run(&Inputs::parse(moves, "inputs.jsonl").unwrap(), 9)
        .unwrap();
    assert_eq!(from_tick_4(loaded.engine().events()), expected);
}

