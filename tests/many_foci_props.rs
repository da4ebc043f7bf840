//! docs/reference/streaming.md as properties: random scenes with several anchors, tickets, a
//! resident cap and mods that refuse, checked after every tick, and saved at a random tick then
//! loaded into a fresh engine that must continue exactly. Also: a save written by world.streaming
//! 1.5.0 still loads and continues exactly as 1.5.0 ran it.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{game_in, inputs, inputs_after, Rng};
use serde_json::{json, Value};
use world_streaming::game::Game;

struct Case {
    scene: Value,
    lines: Vec<Value>,
    cap: Option<u64>,
}

fn scenario(seed: u64, ticks: u64, dir: &Path) -> Case {
    let mut r = Rng(seed ^ 0x5111);
    let mut mods = Vec::new();
    for i in 0..r.below(3) {
        let hook = if r.chance(50) {
            "world.chunk.load"
        } else {
            "world.chunk.unload"
        };
        let mut m = json!({ "id": format!("m{}", i % 2), "hook": hook, "cancel": true });
        if r.chance(60) {
            m["match"] = json!({ "x": r.coord(2) });
        }
        let name = format!("mod{i}.json");
        std::fs::write(dir.join(&name), m.to_string()).unwrap();
        mods.push(name);
    }
    let radius = r.below(3);
    let cap = r.chance(60).then(|| 1 + r.below(30));
    let mut config = json!({
        "chunkSize": 16,
        "radius": radius,
        "budgetMs": 1 + r.below(5),
        "focus": if r.chance(75) { "players" } else { "player" },
        "maxRefusalsPerMod": r.below(4),
    });
    if let Some(cap) = cap {
        config["maxLoaded"] = json!(cap);
    }
    let players = 1 + r.below(4);
    let mut entities: Vec<Value> = (0..players)
        .map(|i| json!({ "id": format!("p{i}"), "tags": ["player"], "position": { "x": r.coord(60), "z": r.coord(60) } }))
        .collect();
    entities.push(json!({ "id": "car", "tags": ["vehicle"], "position": { "x": 10, "z": 10 } }));
    entities
        .push(json!({ "id": "crate", "tags": ["streamable"], "position": { "x": 20, "z": -20 } }));
    let scene = json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": config } ],
        "mods": mods,
        "scenes": [ { "id": "a", "entry": { "x": 0, "z": 0 } }, { "id": "b" } ],
        "entities": entities,
        "control": if r.chance(30) { json!("car") } else { Value::Null },
    });
    let mut lines = Vec::new();
    for t in 1..=ticks {
        for _ in 0..r.below(3) {
            let who = format!("p{}", r.below(players));
            let step = if r.chance(15) { 200 } else { 30 };
            let line = match r.below(12) {
                0..=3 => {
                    json!({"do": "move", "entity": who, "to": {"x": r.coord(step), "z": r.coord(step)}})
                }
                4 => {
                    json!({"do": "move", "entity": "car", "to": {"x": r.coord(step), "z": r.coord(step)}})
                }
                5 => {
                    json!({"do": "request", "id": format!("t{}", r.below(3)), "at": {"x": r.coord(150), "z": r.coord(150)}, "radius": r.below(3), "ticks": 1 + r.below(8)})
                }
                6 => json!({"do": "drop", "ticket": format!("t{}", r.below(3))}),
                7 => {
                    json!({"do": if r.chance(50) { "tag" } else { "untag" }, "entity": who, "tag": "player"})
                }
                8 => json!({"do": "ride", "entity": who, "vehicle": "car"}),
                9 => json!({"do": "release", "x": r.coord(3), "z": r.coord(3)}),
                10 if r.chance(20) => {
                    json!({"do": "enter", "scene": if r.chance(50) { "a" } else { "b" }})
                }
                _ => json!({"do": "player.moved", "at": {"x": r.coord(100), "z": r.coord(100)}}),
            };
            let mut line = line;
            line["tick"] = json!(t);
            lines.push(line);
        }
    }
    Case { scene, lines, cap }
}

fn cases() -> u64 {
    common::proptest_cases().max(1000) as u64
}

type Chunk = (i64, i64);

fn chunk_of(x: f64, z: f64) -> Chunk {
    ((x / 16.0).floor() as i64, (z / 16.0).floor() as i64)
}

/// Checks the many-foci invariants (docs/reference/streaming.md#the-resident-cap) after a tick: the
/// loaded set lies within `r + 1` of a focus (or of a ticket that counted this tick) or holds an
/// unload refusal, never exceeds the cap, and nothing pending is loaded.
fn check_tick(
    g: &Game,
    case: &Case,
    tickets_before: &[Value],
    seen: &mut BTreeSet<Chunk>,
    id: u64,
) {
    let state = serde_json::to_value(g.state()).unwrap();
    let s = g.streaming().unwrap();
    let r_eff = i64::from(s.radius());
    let loaded: BTreeSet<Chunk> = s.loaded().iter().map(|c| (c.x, c.z)).collect();
    let refused: BTreeSet<Chunk> = s
        .refusals()
        .iter()
        .filter(|r| r.hook == "world.chunk.unload")
        .map(|r| (r.x, r.z))
        .collect();
    let mut keepers: Vec<(Chunk, i64)> = Vec::new();
    let max_ticket = state["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .chain(tickets_before)
        .map(|t| t["radius"].as_i64().unwrap())
        .max()
        .unwrap_or(0);
    for f in state["foci"].as_array().unwrap() {
        let c = chunk_of(f["x"].as_f64().unwrap(), f["z"].as_f64().unwrap());
        keepers.push((c, r_eff.max(max_ticket) + 1));
    }
    let tick = state["tick"].as_u64().unwrap();
    // Tickets held before the tick, and those requested for it (a one-tick ticket is gone by
    // the end of the tick, while the chunks it wanted stay until the next tick's releases).
    let requested = case
        .lines
        .iter()
        .filter(|l| l["do"] == "request" && l["tick"] == tick)
        .map(|l| json!({"x": l["at"]["x"], "z": l["at"]["z"], "radius": l["radius"]}))
        .collect::<Vec<_>>();
    for t in tickets_before.iter().chain(&requested) {
        let c = chunk_of(t["x"].as_f64().unwrap(), t["z"].as_f64().unwrap());
        keepers.push((c, t["radius"].as_i64().unwrap() + 1));
    }
    for c in &loaded {
        let kept = keepers
            .iter()
            .any(|(f, r)| (c.0 - f.0).abs().max((c.1 - f.1).abs()) <= *r);
        assert!(
            kept || refused.contains(c),
            "case {id} tick {}: loaded {c:?} is neither kept by a focus nor refused\nstate {state}\nscene {}\ninputs {:?}\nevents {:?}",
            state["tick"], case.scene, case.lines, g.engine().events().iter().filter(|e| e.tick + 3 > state["tick"].as_u64().unwrap()).map(|e| serde_json::to_string(e).unwrap()).collect::<Vec<_>>()
        );
    }
    if let Some(cap) = case.cap {
        assert!(
            loaded.len() as u64 <= cap,
            "case {id}: {} loaded > cap {cap}",
            loaded.len()
        );
    }
    for p in s.pending() {
        assert!(
            !loaded.contains(&(p.x, p.z)),
            "case {id}: pending {p} is loaded"
        );
    }
    // Nothing loaded twice: every load event names a chunk that was not loaded.
    for e in g.engine().events().iter().filter(|e| e.tick == tick) {
        let c = || (e.data["x"].as_i64().unwrap(), e.data["z"].as_i64().unwrap());
        match e.event.as_ref() {
            "world.chunk.loaded" => assert!(seen.insert(c()), "case {id}: {:?} loaded twice", c()),
            "world.chunk.unloaded" => assert!(seen.remove(&c()), "case {id}: {:?} not loaded", c()),
            _ => {}
        }
    }
    assert_eq!(
        seen.iter().copied().collect::<BTreeSet<_>>(),
        loaded,
        "case {id}"
    );
    assert_eq!(
        state["variables"]["world.chunks.loaded"],
        json!(loaded.len())
    );
}

#[test]
fn several_anchors_tickets_and_a_cap_keep_the_invariants_and_saves_continue_exactly() {
    let mut evictions_or_caps = 0;
    let mut tickets_seen = 0;
    for id in 0..cases() {
        let dir = tempfile::tempdir().unwrap();
        let ticks = 24;
        let case = scenario(id, ticks, dir.path());
        let all = inputs(&case.lines);
        let mut whole = game_in(&case.scene, dir.path());
        let mut seen = BTreeSet::new();
        let mut tickets_before = Vec::new();
        for t in 1..=ticks {
            for line in all.lines.iter().filter(|l| l.input.tick == t) {
                whole.apply(&line.input).unwrap();
            }
            whole.tick();
            check_tick(&whole, &case, &tickets_before, &mut seen, id);
            let state = serde_json::to_value(whole.state()).unwrap();
            tickets_before = state["tickets"].as_array().unwrap().clone();
            tickets_seen += tickets_before.len();
        }
        evictions_or_caps += whole
            .engine()
            .events()
            .iter()
            .filter(|e| e.event == "world.streaming.capacity" || e.event == "mod.error")
            .count();
        // Saved at a tick of the run, loaded into a fresh engine: the same events and state.
        let n = 1 + Rng(id).below(ticks - 1);
        let (second, actual) =
            common::resumed_from_save(&case.scene, dir.path(), &case.lines, n, ticks);
        let expected = common::events_after(&whole, n);
        assert_eq!(
            actual, expected,
            "case {id}: saved at {n}\nscene {}",
            case.scene
        );
        assert_eq!(second.state(), whole.state(), "case {id}");
        assert_eq!(
            second.engine().save_document(),
            whole.engine().save_document(),
            "case {id}"
        );
    }
    assert!(
        tickets_seen > 100,
        "the scenarios hold tickets: {tickets_seen}"
    );
    assert!(evictions_or_caps > 10, "the caps bite: {evictions_or_caps}");
}

#[test]
fn a_save_written_by_1_5_0_loads_and_continues_exactly_as_1_5_0_ran() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1");
    let scene: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("scene.json")).unwrap()).unwrap();
    let lines: Vec<Value> = std::fs::read_to_string(dir.join("inputs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &Value| l["do"] != "save")
        .collect();
    let save: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("save_v1.json")).unwrap()).unwrap();
    assert_eq!(save["version"], 1, "the fixture is a version-1 save");
    let n = save["tick"].as_u64().unwrap();
    let mut g = game_in(&scene, &dir);
    let skip = g.engine().events().len();
    g.load(&dir.join("save_v1.json")).unwrap();
    g.run(&inputs_after(&lines, n), 20).unwrap();
    let expected: Vec<Value> = std::fs::read_to_string(dir.join("events_1.5.0.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["tick"].as_u64().unwrap() > n)
        .collect();
    let actual: Vec<Value> = g.engine().events()[skip..]
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(actual, expected);
    let old_state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("state_1.5.0.json")).unwrap())
            .unwrap();
    let state = serde_json::to_value(g.state()).unwrap();
    for key in [
        "tick", "scene", "focus", "loaded", "pending", "refusals", "dormant",
    ] {
        assert_eq!(state[key], old_state[key], "{key}");
    }
}
