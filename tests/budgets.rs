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

// ---------------------------------------------------------------------------------------------
// The ticket cap

/// `n` ticket requests of radius `r` at tick 1, ids `t0000`…, 40 chunks apart.
fn ticket_requests(n: usize, r: u32) -> String {
    (0..n)
        .map(|i| {
            json!({"tick": 1, "do": "request", "id": format!("t{i:04}"),
                   "at": {"x": (i % 32) as f64 * 1280.0, "z": (i / 32) as f64 * 1280.0},
                   "radius": r, "ticks": 100})
            .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn refused(events: &[Event]) -> Vec<(u64, String, String)> {
    events
        .iter()
        .filter(|e| e.event == "world.ticket.refused")
        .map(|e| {
            let s = |k: &str| e.data[k].as_str().unwrap_or_default().to_owned();
            (e.tick, s("id"), s("reason"))
        })
        .collect()
}

/// An audit's case: 1 024 tickets of radius 64 from one inputs file made one tick take 48 s
/// and 2.9 GB. With the default cap (65 536 chunks) the first three are held (3 × 129² =
/// 49 923 chunks); each request past it is refused whole, with `world.ticket.refused` stamped
/// with its input's tick, and the run goes on: the game is the one the three alone make.
#[test]
fn tickets_past_the_cap_are_refused_at_the_request_that_passes_it_and_nothing_else_changes() {
    let dir = tempfile::tempdir().unwrap();
    let text = scene(1, 4, &[]);
    let all = Inputs::parse(&ticket_requests(1024, 64), "inputs.jsonl").unwrap();
    let mut g = game(dir.path(), &text);
    for line in &all.lines {
        g.apply(&line.input).unwrap();
    }
    let held: Vec<String> = g.tickets().into_iter().map(|t| t.id).collect();
    assert_eq!(held, ["t0000", "t0001", "t0002"]);
    let refusals = refused(g.engine().events());
    assert_eq!(refusals.len(), 1021);
    assert_eq!(
        refusals[0],
        (
            1,
            "t0003".to_owned(),
            "the held tickets would want 66564 chunks, more than maxTicketChunks 65536".to_owned()
        )
    );
    assert_eq!(refusals[1020].1, "t1023");
    g.run(&Inputs::default(), 2).unwrap();
    let mut three = game(dir.path(), &text);
    three
        .run(
            &Inputs::parse(&ticket_requests(3, 64), "inputs.jsonl").unwrap(),
            2,
        )
        .unwrap();
    let others = |g: &Game| -> Vec<Value> {
        g.engine()
            .events()
            .iter()
            .filter(|e| e.event != "world.ticket.refused")
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    };
    assert_eq!(others(&g), others(&three));
    assert_eq!(
        serde_json::to_value(g.state()).unwrap(),
        serde_json::to_value(three.state()).unwrap()
    );
}

/// A re-request of a held id is measured without its old ticket; refused, the old one stays.
/// The cap is the kit config's (`maxTicketChunks`), and every asker gets its answer: Rust an
/// `Err`, Lua `nil, message`; the event comes whoever asked.
#[test]
fn every_asker_gets_its_answer_and_the_event_and_a_re_request_is_measured_alone() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "ask.lua",
        r#"
local done = false
on("world.chunk.load", function(c)
  if done then return end
  done = true
  log(tostring(streaming.request("lua", {x = 0, z = 0}, 1, 50)))
  local ok, message = streaming.request("lua", {x = 0, z = 0}, 2, 50)
  log(tostring(ok), message)
end)
"#,
    );
    let text = json!({
        "kits": [
            {"id": "world.ground"},
            {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1, "maxTicketChunks": 10}}
        ],
        "mods": ["ask.lua"],
        "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 8, "z": 8}}]
    })
    .to_string();
    let mut g = game(dir.path(), &text);
    let at = world_streaming::grid::Position::new(0.0, 0.0);
    g.request_around("rust", at, 0, 50).unwrap();
    let err = g.request_around("rust", at, 2, 50).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the held tickets would want 25 chunks, more than maxTicketChunks 10"
    );
    let s = g.streaming().unwrap();
    assert_eq!(
        s.request_around("huge", at, 3, 50),
        Err(world_streaming::kits::streaming::TicketError::OverCap {
            wanted: 50,
            cap: 10
        })
    );
    assert_eq!(
        s.request_around("big", at, 1, 50),
        Ok(()),
        "1 + 9 chunks: exactly at the cap is held"
    );
    assert_eq!(g.tickets().len(), 2);
    // Now 10 held: the mod's 3 × 3 ticket passes the cap (`big` already wants 9).
    assert!(g.drop_ticket("big"));
    g.tick();
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert_eq!(
        log,
        [
            "true",
            "nil\tthe held tickets would want 26 chunks, more than maxTicketChunks 10"
        ]
    );
    let tickets: Vec<(String, u32)> = g.tickets().into_iter().map(|t| (t.id, t.radius)).collect();
    assert_eq!(
        tickets,
        [("lua".to_owned(), 1), ("rust".to_owned(), 0)],
        "the refused re-request left the old ticket"
    );
    let inputs = Inputs::parse(
        r#"{"tick": 2, "do": "request", "id": "rust", "at": {"x": 0, "z": 0}, "radius": 1, "ticks": 5}"#,
        "inputs.jsonl",
    )
    .unwrap();
    g.run(&inputs, 2).unwrap();
    assert_eq!(
        refused(g.engine().events()),
        [
            (
                1,
                "rust".to_owned(),
                "the held tickets would want 25 chunks, more than maxTicketChunks 10".to_owned()
            ),
            (
                1,
                "huge".to_owned(),
                "the held tickets would want 50 chunks, more than maxTicketChunks 10".to_owned()
            ),
            (
                1,
                "lua".to_owned(),
                "the held tickets would want 26 chunks, more than maxTicketChunks 10".to_owned()
            ),
            (
                2,
                "rust".to_owned(),
                "the held tickets would want 18 chunks, more than maxTicketChunks 10".to_owned()
            ),
        ],
        "the Rust call's event waits for the next step (tick 1); the mod's and the input's come \
         in their tick"
    );
}

/// `maxTicketChunks` is the kit config's alone: a scene layer or a mod's `set` cannot raise it.
#[test]
fn max_ticket_chunks_is_checked_and_only_the_config_sets_it() {
    let dir = tempfile::tempdir().unwrap();
    let with = |config: Value, layer: Option<Value>| {
        let mut scene = json!({
            "kits": [{"id": "world.ground"}, {"id": "world.streaming", "config": config}],
            "entities": []
        });
        if let Some(layer) = layer {
            scene["scenes"] = json!([{"id": "s", "layers": {"world.streaming": layer}}]);
        }
        Game::from_scene_text(
            &scene.to_string(),
            "scene.json",
            dir.path(),
            &builtin_catalog(),
        )
        .err()
        .map(|e| e.to_string())
    };
    assert_eq!(with(json!({"maxTicketChunks": 1}), None), None);
    assert_eq!(with(json!({"maxTicketChunks": 1_000_000}), None), None);
    assert_eq!(
        with(json!({"maxTicketChunks": 0}), None).unwrap(),
        "scene.json: kits[1].config.maxTicketChunks: expected an integer 1..=1000000, got 0"
    );
    let layer = with(json!({}), Some(json!({"maxTicketChunks": 5}))).unwrap();
    assert!(
        layer.contains("layers") && layer.contains("unknown field `maxTicketChunks`"),
        "{layer}"
    );
    write(
        dir.path(),
        "raise.json",
        r#"{"id": "raise", "set": {"maxTicketChunks": 1000000}}"#,
    );
    let scene = json!({
        "kits": [{"id": "world.ground"}, {"id": "world.streaming"}],
        "mods": ["raise.json"],
        "entities": []
    });
    let err = Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        dir.path(),
        &builtin_catalog(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("unknown field `maxTicketChunks`"), "{err}");
}

/// A save whose tickets want more than its scene's `maxTicketChunks` is refused on load, naming
/// the first ticket past it; the game is unchanged. Checked alone (`check`), the save is
/// measured against the loosest cap a scene may set.
#[test]
fn a_save_holding_tickets_over_the_cap_is_refused_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let scene_with = |cap: u32| {
        json!({
            "kits": [
                {"id": "world.ground"},
                {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1, "maxTicketChunks": cap}}
            ],
            "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 8, "z": 8}}]
        })
        .to_string()
    };
    let mut big = game(dir.path(), &scene_with(100_000));
    for line in &Inputs::parse(&ticket_requests(5, 64), "i.jsonl")
        .unwrap()
        .lines
    {
        big.apply(&line.input).unwrap();
    }
    assert_eq!(big.tickets().len(), 5);
    let save = dir.path().join("s.json");
    big.save(&save).unwrap();
    let mut small = game(dir.path(), &scene_with(65_536));
    let before = serde_json::to_value(small.state()).unwrap();
    let err = small.load(&save).unwrap_err().to_string();
    assert!(
        err.ends_with(
            "kits.world.streaming.tickets[3]: the tickets up to this one want 66564 chunks, \
             more than the scene's maxTicketChunks 65536"
        ),
        "{err}"
    );
    assert_eq!(serde_json::to_value(small.state()).unwrap(), before);
    let mut same = game(dir.path(), &scene_with(100_000));
    same.load(&save).unwrap();
    assert_eq!(same.tickets().len(), 5);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    world_streaming::files::save::check(&doc).unwrap();
}

/// Every service call costs its mod a fixed 64 units before it does anything, and a list 64
/// units an entry, charged before the list is gathered (docs/lua-vm.md#what-a-service-call-costs):
/// a loop of `isLoaded` makes between 1 000 000 / 100 and 1 000 000 / 64 calls before its call
/// budget runs out (the loop's own instructions are the rest), and a loop of `loaded()` far
/// fewer, as each costs 64 units per chunk loaded.
#[test]
fn service_calls_and_lists_are_charged_before_they_work() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "loop.lua",
        r#"calls, lists, k = 0, 0, 0
on("world.chunk.load", function(c)
  k = k + 1
  if k == 1 then
    while true do streaming.isLoaded(0, 0); calls = calls + 1 end
  end
  if k == 5 then
    while true do local l = streaming.loaded(); lists = lists + 1 end
  end
  if k == 9 then log(calls, lists, #streaming.loaded()) end
end)"#,
    );
    let mut g = game(dir.path(), &scene(4, 1, &["loop.lua"]));
    for _ in 0..40 {
        g.tick();
    }
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    let [line] = log.as_slice() else {
        panic!("{log:?}")
    };
    let n: Vec<u64> = line.split('\t').map(|v| v.parse().unwrap()).collect();
    let (calls, lists, loaded) = (n[0], n[1], n[2]);
    assert!(
        (1_000_000 / 100..=1_000_000 / 64).contains(&calls),
        "{calls} isLoaded calls in one call budget"
    );
    assert_eq!(loaded, 8, "one load a tick");
    // Four chunks loaded: 64 + 4 × 64 units a list, besides the loop's own.
    assert!(
        (1_000_000 / 400..=1_000_000 / 320).contains(&lists),
        "{lists} lists"
    );
}
