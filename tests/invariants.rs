//! Property tests: random scenes and input sequences (moves, teleports, rides, control changes,
//! spawns, tag changes, releases, leave/enter, saves/loads, JSON mods refusing at random), with
//! the kit's invariants checked after every tick. 1 000 cases by default; set `PROPTEST_CASES` for
//! longer local runs.

mod common;

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{json, Value};
use world_streaming::files::inputs::parse_line;
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Grid};
use world_streaming::kits::builtin_catalog;

#[derive(Debug, Clone)]
enum Op {
    Move { who: usize, x: i32, z: i32 },
    Teleport { who: usize, x: i32, z: i32 },
    Ride,
    Dismount,
    Control(Option<usize>),
    Spawn { x: i32, z: i32 },
    Despawn(usize),
    Tag { who: usize, on: bool },
    Release { x: i32, z: i32 },
    Moved { x: i32, z: i32 },
    Leave,
    Enter(usize),
    Save,
    Load,
}

const NAMES: [&str; 3] = ["hero", "car", "walker"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3usize, -60..60i32, -60..60i32).prop_map(|(who, x, z)| Op::Move { who, x, z }),
        1 => (0..3usize, -3000..3000i32, -3000..3000i32).prop_map(|(who, x, z)| Op::Teleport { who, x, z }),
        1 => Just(Op::Ride),
        1 => Just(Op::Dismount),
        1 => proptest::option::of(0..3usize).prop_map(Op::Control),
        1 => (-200..200i32, -200..200i32).prop_map(|(x, z)| Op::Spawn { x, z }),
        1 => (0..8usize).prop_map(Op::Despawn),
        1 => (0..8usize, any::<bool>()).prop_map(|(who, on)| Op::Tag { who, on }),
        1 => (-4..4i32, -4..4i32).prop_map(|(x, z)| Op::Release { x, z }),
        1 => (-100..100i32, -100..100i32).prop_map(|(x, z)| Op::Moved { x, z }),
        1 => Just(Op::Leave),
        1 => (0..2usize).prop_map(Op::Enter),
        1 => Just(Op::Save),
        1 => Just(Op::Load),
    ]
}

#[derive(Debug, Clone)]
struct Scenario {
    size: f64,
    radius: u32,
    budget: u32,
    bounded: bool,
    mods: Vec<(bool, Option<i32>, Option<i32>)>,
    ticks: Vec<Vec<Op>>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop_oneof![Just(8.0), Just(16.0), Just(32.0)],
        0..4u32,
        0..6u32,
        any::<bool>(),
        proptest::collection::vec(
            (
                any::<bool>(),
                proptest::option::of(-2..3i32),
                proptest::option::of(-2..3i32),
            ),
            0..3,
        ),
        proptest::collection::vec(proptest::collection::vec(op(), 0..3), 1..40),
    )
        .prop_map(|(size, radius, budget, bounded, mods, ticks)| Scenario {
            size,
            radius,
            budget,
            bounded,
            mods,
            ticks,
        })
}

struct Run {
    game: Game,
    dir: tempfile::TempDir,
    spawned: usize,
    saved: bool,
    lines: Vec<String>,
}

fn start(s: &Scenario) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut mods = Vec::new();
    for (i, (load, x, z)) in s.mods.iter().enumerate() {
        let hook = if *load {
            "world.chunk.load"
        } else {
            "world.chunk.unload"
        };
        let mut m = json!({"id": format!("m{i}"), "hook": hook, "cancel": true, "reason": "r"});
        if let Some(x) = x {
            m["match"]["x"] = json!(x);
        }
        if let Some(z) = z {
            m["match"]["z"] = json!(z);
        }
        std::fs::write(dir.path().join(format!("m{i}.json")), m.to_string()).unwrap();
        mods.push(format!("m{i}.json"));
    }
    let mut ground = json!({"id": "world.ground"});
    if s.bounded {
        ground["config"] = json!({"bounds": {"minX": -90, "minZ": -70, "maxX": 130, "maxZ": 100}});
    }
    let scene = json!({
        "kits": [ground, {"id": "world.streaming", "config": {"chunkSize": s.size, "radius": s.radius, "budgetMs": s.budget}}],
        "mods": mods,
        "scenes": [
            {"id": "a", "entry": {"x": 0, "z": 0}},
            {"id": "b", "entry": {"x": 40, "z": -40}, "layers": {"world.streaming": {"radius": (s.radius + 1) % 4, "budgetMs": s.budget + 1}}}
        ],
        "entities": [
            {"id": "hero", "tags": ["player"], "position": {"x": 1, "z": 1}},
            {"id": "car", "tags": ["vehicle", "streamable"], "position": {"x": 30, "z": 5}},
            {"id": "walker", "tags": ["streamable"], "position": {"x": -20, "z": 9}}
        ]
    });
    let game = Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        dir.path(),
        &builtin_catalog(),
    )
    .unwrap();
    Run {
        game,
        dir,
        spawned: 0,
        saved: false,
        lines: Vec::new(),
    }
}

fn entity(run: &Run, i: usize) -> String {
    if i < 3 {
        NAMES[i].to_owned()
    } else {
        format!("crate{}", (i - 3) % run.spawned.max(1))
    }
}

/// Applies one op as an input line; inputs that name a missing entity are allowed to fail.
fn apply(run: &mut Run, tick: u64, op: &Op) {
    let save = run.dir.path().join("state.save.json").display().to_string();
    let line = match op {
        Op::Move { who, x, z } | Op::Teleport { who, x, z } => {
            json!({"do": "move", "entity": NAMES[*who], "to": {"x": x, "z": z}})
        }
        Op::Ride => json!({"do": "ride", "entity": "hero", "vehicle": "car"}),
        Op::Dismount => json!({"do": "dismount", "entity": "hero"}),
        Op::Control(who) => json!({"do": "control", "entity": who.map(|w| NAMES[w])}),
        Op::Spawn { x, z } => {
            run.spawned += 1;
            json!({"do": "spawn", "entity": {"id": format!("crate{}", run.spawned - 1), "tags": ["streamable"], "position": {"x": x, "z": z}}})
        }
        Op::Despawn(i) => json!({"do": "despawn", "entity": entity(run, *i)}),
        Op::Tag { who, on } => {
            json!({"do": if *on { "tag" } else { "untag" }, "entity": entity(run, *who), "tag": "streamable"})
        }
        Op::Release { x, z } => json!({"do": "release", "x": x, "z": z}),
        Op::Moved { x, z } => json!({"do": "player.moved", "at": {"x": x, "z": z}}),
        Op::Leave => json!({"do": "leave"}),
        Op::Enter(i) => json!({"do": "enter", "scene": if *i == 0 { "a" } else { "b" }}),
        Op::Save => {
            run.saved = true;
            json!({"do": "save", "path": save})
        }
        Op::Load if run.saved => json!({"do": "load", "path": save}),
        Op::Load => return,
    };
    let mut line: Value = line;
    line["tick"] = json!(tick);
    let input = parse_line(&line.to_string()).unwrap();
    let ok = run.game.apply(&input).is_ok();
    run.lines.push(format!("{line} -> {ok}"));
}

/// Checks every invariant after a tick. `before` is the loaded set before the tick.
fn check(
    run: &Run,
    before: &BTreeSet<ChunkPos>,
    refused_before: &BTreeSet<(i64, i64)>,
    events_from: usize,
) -> Result<(), TestCaseError> {
    let g = &run.game;
    let s = g.streaming().unwrap();
    let grid = Grid::new(s.chunk_size());
    let loaded: BTreeSet<ChunkPos> = s.loaded().into_iter().collect();
    let list = s.loaded();
    prop_assert_eq!(list.len(), loaded.len(), "a chunk listed twice");
    prop_assert!(
        list.windows(2).all(|w| w[0] < w[1]),
        "loaded() in row order"
    );
    let refusals = s.refusals();
    let order: Vec<(i64, i64, &str)> = refusals
        .iter()
        .map(|r| (r.z, r.x, r.hook.as_str()))
        .collect();
    prop_assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "refusals() by z, x, hook: {:?}",
        order
    );
    let held = |c: ChunkPos, hook: &str| {
        refusals
            .iter()
            .any(|r| r.x == c.x && r.z == c.z && r.hook == hook)
    };
    let focus = s.focus().map(|f| grid.chunk_of(f));
    let r = u64::from(s.radius());
    // Loaded chunks are within radius + 1, or held by an unload refusal; inside the bounds.
    for c in &loaded {
        if let Some(f) = focus {
            prop_assert!(
                c.ring_distance(f) <= r + 1 || held(*c, "world.chunk.unload"),
                "{c} too far from {f}"
            );
        }
        prop_assert!(
            grid.overlaps(*c, s.bounds().as_ref()),
            "{c} outside the bounds"
        );
    }
    // The events of this tick move `before` to `loaded` exactly; loads within budget.
    let mut track = before.clone();
    let mut loads = 0;
    for e in &g.engine().events()[events_from..] {
        let c = || ChunkPos::new(e.data["x"].as_i64().unwrap(), e.data["z"].as_i64().unwrap());
        match e.event.as_ref() {
            "world.chunk.loaded" => {
                prop_assert!(track.insert(c()), "{} loaded twice", c());
                loads += 1;
            }
            "world.chunk.unloaded" => {
                prop_assert!(track.remove(&c()), "{} released without being loaded", c())
            }
            _ => {}
        }
    }
    prop_assert_eq!(&track, &loaded);
    // Every load ask ends as a loaded event or a newly held load refusal.
    let asks = loads + load_refusals(s.as_ref()).difference(refused_before).count();
    prop_assert!(
        asks <= s.loads_per_tick(),
        "{} load asks with a budget of {}",
        asks,
        s.loads_per_tick()
    );
    // pending() is exactly the wanted, unloaded, unrefused chunks, nearest-first.
    let expected: Vec<ChunkPos> = match (g.engine().active_scene(), s.focus()) {
        (Some(_), Some(f)) => grid
            .around(f, s.radius(), s.bounds().as_ref())
            .into_iter()
            .filter(|c| !loaded.contains(c) && !held(*c, "world.chunk.load"))
            .collect(),
        _ => Vec::new(),
    };
    prop_assert_eq!(s.pending(), expected);
    // Variables equal the lengths.
    let v = g.engine().variables();
    prop_assert_eq!(v.count("world.chunks.loaded") as usize, loaded.len());
    prop_assert_eq!(v.count("world.chunks.pending") as usize, s.pending().len());
    // Dormancy.
    for e in g.engine().world().iter() {
        if e.has_tag("streamable") {
            prop_assert_eq!(
                e.has_tag("dormant"),
                !loaded.contains(&grid.chunk_of(e.position)),
                "{}",
                e.id
            );
        }
    }
    Ok(())
}

fn load_refusals(
    s: &dyn world_streaming::kits::streaming::StreamingService,
) -> BTreeSet<(i64, i64)> {
    s.refusals()
        .iter()
        .filter(|r| r.hook == "world.chunk.load")
        .map(|r| (r.x, r.z))
        .collect()
}

fn play(s: &Scenario) -> Result<(Vec<String>, Vec<String>), TestCaseError> {
    let mut run = start(s);
    for ops in &s.ticks {
        let tick = run.game.engine().tick_count() + 1;
        for op in ops {
            apply(&mut run, tick, op);
        }
        let streaming = run.game.streaming().unwrap();
        let before: BTreeSet<ChunkPos> = streaming.loaded().into_iter().collect();
        let refused_before = load_refusals(streaming.as_ref());
        let from = run.game.engine().events().len();
        run.game.tick();
        check(&run, &before, &refused_before, from)
            .map_err(|e| TestCaseError::fail(format!("{e}\ninputs: {:#?}", run.lines)))?;
    }
    let events = run
        .game
        .engine()
        .events()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    Ok((events, run.lines))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(), ..ProptestConfig::default() })]

    #[test]
    fn the_kits_invariants_hold_after_every_tick(s in scenario()) {
        let (first, _) = play(&s)?;
        let (second, _) = play(&s)?;
        prop_assert_eq!(first, second, "the event log is the same when the run is repeated");
    }
}
