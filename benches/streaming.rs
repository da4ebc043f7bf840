//! Criterion benchmarks of the kit, each over a scenario built in code, side by side with the
//! naive per-tick reconcile of `baseline.rs` fed the same scenario through the same engine.
//!
//! `cargo bench` runs them all; `cargo bench -- steady` one group. Groups: `steady` (radius 2 /
//! 16 / 64, everything loaded), `entities` (0 / 100 000 / 1 000 000 streamable entities), `drive`
//! (30 m/s at 60 ticks/s, chunkSize 32, radius 8 / 32, budget 4, with and without mods),
//! `teleport` (a 100-chunk jump at radius 32), `hooks` (one hook ask with 1 / 100 JSON mods and 1
//! Lua mod), `anchors` (docs/reference/streaming.md#anchors: 100 anchors standing still, 1 of 100
//! walking, against one player and against the baseline extended to the union; a drive under
//! `maxLoaded` 10 000 that evicts on every load).

#[path = "common/baseline.rs"]
mod baseline;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::{
    Entity, EntityId, EventBus, HookArgs, HookValue, Hooks, KitCatalog, ModId,
};
use world_streaming::kits::builtin_catalog;
use world_streaming::mods::json::{JsonRules, Match};

/// Which implementation of `world.streaming` runs.
#[derive(Clone, Copy)]
enum Impl {
    Kit,
    Baseline,
}

impl Impl {
    fn catalog(self) -> KitCatalog {
        match self {
            Impl::Kit => builtin_catalog(),
            Impl::Baseline => baseline::catalog(),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Impl::Kit => "kit",
            Impl::Baseline => "baseline",
        }
    }
}

/// Mods a scenario may carry.
#[derive(Clone, Copy, PartialEq)]
enum Mods {
    None,
    Json,
    Lua,
}

const LUA_EVERY_HOOK: &str = r#"
local function answer(c)
  if c.x == 123456 and c.z == 654321 then return cancel("never") end
end
on("world.chunk.load", answer)
on("world.chunk.unload", answer)
"#;

fn build(imp: Impl, radius: u32, budget: f64, mods: Mods) -> (Game, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut list = Vec::new();
    match mods {
        Mods::None => {}
        Mods::Json => {
            for hook in ["world.chunk.load", "world.chunk.unload"] {
                let name = format!("{hook}.json");
                let m = json!({"id": "json_every_hook", "hook": hook, "match": {"x": 123456, "z": 654321}, "cancel": true});
                std::fs::write(dir.path().join(&name), m.to_string()).unwrap();
                list.push(name);
            }
        }
        Mods::Lua => {
            std::fs::write(dir.path().join("every_hook.lua"), LUA_EVERY_HOOK).unwrap();
            list.push("every_hook.lua".to_owned());
        }
    }
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": radius, "budgetMs": budget } }
        ],
        "mods": list,
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "rides": "car" },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 16, "z": 16 } }
        ],
        "control": "hero"
    });
    let game =
        Game::from_scene_text(&scene.to_string(), "bench", dir.path(), &imp.catalog()).unwrap();
    (game, dir)
}

/// Ticks until nothing is pending.
fn fill(game: &mut Game) {
    for _ in 0..100_000 {
        game.tick();
        if game.engine().variables().count("world.chunks.pending") == 0 {
            return;
        }
    }
    panic!("never settled");
}

fn move_car(game: &mut Game, to: Position) {
    let car = EntityId::new("car");
    let tick = game.engine().tick_count() + 1;
    game.engine_mut()
        .input(tick, |e| e.world_mut().move_to(&car, to).unwrap());
}

fn steady(c: &mut Criterion) {
    let mut g = c.benchmark_group("steady");
    for radius in [2, 16, 32, 64] {
        for imp in [Impl::Kit, Impl::Baseline] {
            if matches!(imp, Impl::Baseline) && radius == 64 {
                continue; // ~17 000 chunks rebuilt per tick: too slow to sample usefully
            }
            let (mut game, _dir) = build(imp, radius, 1e9, Mods::None);
            fill(&mut game);
            g.bench_function(
                BenchmarkId::new(imp.name(), format!("radius {radius}")),
                |b| b.iter(|| game.tick()),
            );
        }
    }
    g.finish();
}

fn spawn_entities(game: &mut Game, n: usize) {
    game.engine_mut().input(0, |e| {
        let w = e.world_mut();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..n {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let x = (seed % 6400) as f64 - 3200.0;
            let z = ((seed >> 20) % 6400) as f64 - 3200.0;
            w.spawn(Entity {
                id: EntityId::new(&format!("e{i}")),
                tags: ["streamable".to_owned()].into(),
                position: Position::new(x, z),
                rides: None,
                data: None,
            })
            .unwrap();
        }
    });
}

fn entities(c: &mut Criterion) {
    let mut g = c.benchmark_group("entities");
    g.sample_size(20);
    for n in [0usize, 100_000, 1_000_000] {
        for imp in [Impl::Kit, Impl::Baseline] {
            if matches!(imp, Impl::Baseline) && n == 1_000_000 {
                continue; // a full rescan of a million entities per tick: see the 100 000 row
            }
            let (mut game, _dir) = build(imp, 2, 1e9, Mods::None);
            spawn_entities(&mut game, n);
            fill(&mut game);
            g.bench_function(BenchmarkId::new(imp.name(), format!("{n} entities")), |b| {
                b.iter(|| game.tick())
            });
        }
    }
    g.finish();
}

fn drive(c: &mut Criterion) {
    let mut g = c.benchmark_group("drive");
    g.measurement_time(Duration::from_secs(4));
    // 30 m/s at 60 ticks/s: 0.5 m per tick; a chunk border every 64 ticks.
    for radius in [8, 32] {
        for (imp, mods) in [
            (Impl::Kit, Mods::None),
            (Impl::Kit, Mods::Json),
            (Impl::Kit, Mods::Lua),
            (Impl::Baseline, Mods::None),
        ] {
            let (mut game, _dir) = build(imp, radius, 4.0, mods);
            fill(&mut game);
            let mut x = 16.0;
            let label = match mods {
                Mods::None => format!("radius {radius}"),
                Mods::Json => format!("radius {radius} + JSON mod"),
                Mods::Lua => format!("radius {radius} + Lua mod"),
            };
            g.bench_function(BenchmarkId::new(imp.name(), label), |b| {
                b.iter(|| {
                    x += 0.5;
                    move_car(&mut game, Position::new(x, 16.0));
                    game.tick();
                    game.engine_mut().take_events();
                })
            });
        }
    }
    g.finish();
}

fn teleport(c: &mut Criterion) {
    let mut g = c.benchmark_group("teleport");
    g.sample_size(20);
    for imp in [Impl::Kit, Impl::Baseline] {
        // Fill once (~1 060 ticks of 4 loads), save, and start every sample from the save.
        let (mut filled, _dir) = build(imp, 32, 4.0, Mods::None);
        fill(&mut filled);
        let save = serde_json::to_value(filled.engine().save_document()).unwrap();
        g.bench_function(BenchmarkId::new(imp.name(), "radius 32, 100 chunks"), |b| {
            b.iter_batched(
                || {
                    let (mut game, dir) = build(imp, 32, 4.0, Mods::None);
                    if matches!(imp, Impl::Kit) {
                        game.engine_mut().load_document(&save).unwrap();
                    } else {
                        fill(&mut game); // the baseline keeps no save section
                    }
                    move_car(&mut game, Position::new(16.0 + 3200.0, 16.0));
                    (game, dir)
                },
                |(mut game, dir)| {
                    game.tick();
                    (game, dir)
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn hooks(c: &mut Criterion) {
    let mut g = c.benchmark_group("hooks");
    let fields = [("x", HookValue::Int(7)), ("z", HookValue::Int(-3))];
    let args = HookArgs {
        hook: "world.chunk.load",
        fields: &fields,
    };
    for n in [1usize, 100] {
        let mut hooks = Hooks::default();
        hooks.declare("world.chunk.load");
        let mut rules = JsonRules::default();
        for i in 0..n as i64 {
            rules.push(
                ModId::new(&format!("m{i}")),
                &[Match::chunk(1000 + i, i)],
                "r".into(),
            );
        }
        hooks.register("world.chunk.load", Box::new(rules)).unwrap();
        let mut bus = EventBus::default();
        g.bench_function(BenchmarkId::new("json", format!("{n} mods")), |b| {
            b.iter(|| hooks.ask(&args, &mut bus))
        });
    }
    let (mut game, _dir) = build(Impl::Kit, 1, 4.0, Mods::Lua);
    let mut bus = EventBus::default();
    g.bench_function(BenchmarkId::new("lua", "1 mod"), |b| {
        // One ask a step, the tick before it untimed: asked again and again in one step, the
        // mod spends its tick budget (docs/lua-vm.md#the-tick-budget), is silenced for the rest
        // of the step, and the bench would time the skip (12 ns) instead of the call.
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                game.tick();
                game.engine_mut().take_events();
                let start = Instant::now();
                std::hint::black_box(game.engine().hooks().ask(&args, &mut bus));
                spent += start.elapsed();
            }
            spent
        })
    });
    g.finish();
}

/// `n` anchors (`focus: "players"`) on a 10-wide grid 20 chunks apart, so their radius-8
/// squares do not touch; the first one, `p0`, is the walker.
fn build_anchors(imp: Impl, n: usize, radius: u32, budget: f64, cap: Option<u64>) -> Game {
    build_anchors_with(imp, n, radius, budget, cap, json!({}))
}

/// [`build_anchors`] with more streaming config keys.
fn build_anchors_with(
    imp: Impl,
    n: usize,
    radius: u32,
    budget: f64,
    cap: Option<u64>,
    extra: serde_json::Value,
) -> Game {
    let entities: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let (x, z) = (
                (i % 10) as f64 * 640.0 + 16.0,
                (i / 10) as f64 * 640.0 + 16.0,
            );
            json!({ "id": format!("p{i}"), "tags": ["player"], "position": { "x": x, "z": z } })
        })
        .collect();
    let mut config =
        json!({ "chunkSize": 32, "radius": radius, "budgetMs": budget, "focus": "players" });
    if let Some(cap) = cap {
        config["maxLoaded"] = json!(cap);
    }
    for (k, v) in extra.as_object().into_iter().flatten() {
        config[k] = v.clone();
    }
    let scene = json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": config } ],
        "entities": entities,
    });
    Game::from_scene_text(
        &scene.to_string(),
        "bench",
        std::path::Path::new("."),
        &imp.catalog(),
    )
    .unwrap()
}

fn walk(game: &mut Game, who: &EntityId, x: &mut f64) {
    *x += 0.5;
    let tick = game.engine().tick_count() + 1;
    let to = Position::new(*x, 16.0);
    game.engine_mut()
        .input(tick, |e| e.world_mut().move_to(who, to).unwrap());
    game.tick();
    game.engine_mut().take_events();
}

fn anchors(c: &mut Criterion) {
    let mut g = c.benchmark_group("anchors");
    g.measurement_time(Duration::from_secs(4));
    let p0 = EntityId::new("p0");
    for (imp, n) in [(Impl::Kit, 1), (Impl::Kit, 100), (Impl::Baseline, 100)] {
        let mut game = build_anchors(imp, n, 8, 1e9, None);
        fill(&mut game);
        g.bench_function(
            BenchmarkId::new(imp.name(), format!("steady, {n} anchors, radius 8")),
            |b| b.iter(|| game.tick()),
        );
    }
    // An unlimited budget, so that filling 100 squares is one tick for the baseline too; a
    // chunk border every 64 ticks then loads its 17 new chunks in that tick.
    for (imp, n) in [(Impl::Kit, 1), (Impl::Kit, 100), (Impl::Baseline, 100)] {
        let mut game = build_anchors(imp, n, 8, 1e9, None);
        fill(&mut game);
        let mut x = 16.0;
        g.bench_function(
            BenchmarkId::new(imp.name(), format!("1 of {n} walking, radius 8")),
            |b| b.iter(|| walk(&mut game, &p0, &mut x)),
        );
    }
    // Radius 49 wants 99² = 9 801 chunks and a far ticket of radius 5 another 121: 9 922. A
    // drive east keeps the column it leaves (ring 50) until the next border: 10 021 without a
    // cap; under 10 000, the last 21 loads of every border evict from that column (least
    // recently wanted first), 21 evictions per 64 ticks.
    for cap in [None, Some(10_000)] {
        let mut game = build_anchors(Impl::Kit, 1, 49, 4.0, cap);
        game.request_around("far", Position::new(1e5, 1e5), 5, 1 << 30)
            .unwrap();
        fill(&mut game);
        let mut x = 16.0;
        for _ in 0..256 {
            walk(&mut game, &p0, &mut x); // past a few borders: the band is full
        }
        let label = match cap {
            None => "drive, radius 49, no cap".to_owned(),
            Some(c) => format!("drive, radius 49, maxLoaded {c}"),
        };
        g.bench_function(BenchmarkId::new("kit", label), |b| {
            b.iter(|| walk(&mut game, &p0, &mut x))
        });
    }
    g.finish();
}

/// The bar (docs/reference/streaming.md#scheduling-goals): a steady tick with 100 anchors under
/// `"fair"` and look-ahead against the same under `"nearest"` without, side by side in one run.
fn schedule(c: &mut Criterion) {
    let mut g = c.benchmark_group("schedule");
    g.measurement_time(Duration::from_secs(4));
    for (label, extra) in [
        ("nearest, no look-ahead", json!({})),
        (
            "fair, lookAheadTicks 2",
            json!({ "schedule": "fair", "lookAheadTicks": 2 }),
        ),
    ] {
        let mut game = build_anchors_with(Impl::Kit, 100, 8, 1e9, None, extra);
        fill(&mut game);
        g.bench_function(
            BenchmarkId::new("kit", format!("steady, 100 anchors, radius 8, {label}")),
            |b| b.iter(|| game.tick()),
        );
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! { name = benches; config = config(); targets = steady, entities, drive, teleport, hooks, anchors, schedule }
criterion_main!(benches);
