//! The bar of docs/lod.md: the tick with levels of detail against the same tick without, side by side;
//! and (group "lod area") the worst cases of the area rule: radius 1024 with many players, a
//! teleport every tick, a mod replacing the levels every tick.
//! The scene is the shipped `examples/scenes/lod.json` (radius 8, `lod [{2,24},{8,96}]`,
//! lodBudget 160, lookAheadTicks 3, terrain with commitLatency 1), and the same scene without
//! `lod` and `lodBudget`; streaming alone (terrain removed), and with `world.terrain` building
//! chunks and blocks on its pool. The drive: 60 ticks standing, then east at 24 m a tick (the
//! shipped inputs' speed), 100 ticks before anything is timed. `cargo bench --bench lod`.
//!
//! Only the tick is timed, and the two drives of a pair run in lockstep: every step ticks both,
//! alternating which goes first, and each benchmark times its own drive's ticks, so both see the
//! same machine (group "lod"; group "lod, one drive at a time" times each drive alone, streaming
//! only). After the group, the medians of both drives over the same steps (every step of both
//! benchmarks) are printed with their ratio ("same steps"): the machine drifting between the two
//! benchmarks cannot move that ratio, as it moves the two benchmarks' own. With terrain, every step first waits until both pools are idle (the time a
//! game's frame gives the workers; benches/terrain.rs explains why that wait must be given to
//! both drives): the tick's own cost is measured, not the workers' throughput.

use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::Value;
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

/// The shipped scene, with or without its `lod` and with or without `world.terrain`.
fn scene(lod: bool, terrain: bool) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/lod.json");
    let mut scene: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let kits = scene["kits"].as_array_mut().unwrap();
    if !terrain {
        kits.retain(|k| k["id"] != "world.terrain");
    }
    for k in kits.iter_mut().filter(|k| k["id"] == "world.streaming") {
        let config = k["config"].as_object_mut().unwrap();
        assert!(config.contains_key("lod"), "the shipped scene has levels");
        if !lod {
            config.remove("lod");
            config.remove("lodBudget");
        }
    }
    scene
}

struct Drive {
    game: Game,
    hero: EntityId,
    x: f64,
    terrain: Option<Rc<dyn TerrainService>>,
}

impl Drive {
    fn new(lod: bool, terrain: bool) -> Drive {
        let text = scene(lod, terrain).to_string();
        let mut game =
            Game::from_scene_text(&text, "lod.json", Path::new("."), &builtin_catalog()).unwrap();
        // Fill the rings standing still, then drive 100 ticks so the steady drive is measured.
        for _ in 0..60 {
            game.tick();
        }
        let terrain = game.engine().service::<dyn TerrainService>(TERRAIN);
        let mut d = Drive {
            game,
            hero: EntityId::new("hero"),
            x: 16.0,
            terrain,
        };
        for _ in 0..100 {
            d.idle();
            d.step();
        }
        d
    }

    /// Waits until the pool (if any) has nothing left to generate.
    fn idle(&self) {
        if let Some(t) = &self.terrain {
            while t.generating() > 0 {
                std::thread::yield_now();
            }
        }
    }

    /// One tick 24 m further east; returns the tick's time.
    fn step(&mut self) -> Duration {
        self.x += 24.0;
        let to = Position::new(self.x, 16.0);
        let tick = self.game.engine().tick_count() + 1;
        let hero = self.hero.clone();
        let start = Instant::now();
        self.game
            .engine_mut()
            .input(tick, |e| e.world_mut().move_to(&hero, to).unwrap());
        self.game.tick();
        let spent = start.elapsed();
        self.game.engine_mut().take_events();
        spent
    }

    fn waits(&self) -> u64 {
        self.game.engine().variables().count("world.terrain.waits")
    }
}

fn drive(c: &mut Criterion) {
    let mut g = c.benchmark_group("lod");
    g.measurement_time(Duration::from_secs(4));
    for terrain in [false, true] {
        let mut drives = [Drive::new(false, terrain), Drive::new(true, terrain)];
        let waits = [drives[0].waits(), drives[1].waits()];
        let mut step = 0u64;
        // Every step's time of both drives, over both benchmarks: the two medians are taken
        // over the same steps, so drift of the machine between the benchmarks cancels out.
        let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
        for (timed, lod) in [(0, ""), (1, ", lod [{2,24},{8,96}]")] {
            let label = format!(
                "drive 24 m/tick, radius 8{}{lod}",
                if terrain { ", terrain" } else { "" }
            );
            g.bench_function(BenchmarkId::new("tick", label), |b| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        for d in &drives {
                            d.idle();
                        }
                        step += 1;
                        let first = (step % 2) as usize;
                        for d in [first, 1 - first] {
                            let time = drives[d].step();
                            times[d].push(time);
                            if d == timed {
                                spent += time;
                            }
                        }
                    }
                    spent
                })
            });
        }
        let median = |v: &mut Vec<Duration>| {
            v.sort_unstable();
            v[v.len() / 2]
        };
        if times[0].is_empty() {
            continue; // filtered out
        }
        let (without, with) = (median(&mut times[0]), median(&mut times[1]));
        println!(
            "same steps, {}: median tick {:.2?} without lod, {:.2?} with: {:.2}x over {} steps",
            if terrain {
                "terrain"
            } else {
                "streaming alone"
            },
            without,
            with,
            with.as_secs_f64() / without.as_secs_f64(),
            times[0].len()
        );
        if terrain {
            println!(
                "world.terrain.waits grew by {} (without lod) and {} (with) over {} ticks",
                drives[0].waits() - waits[0],
                drives[1].waits() - waits[1],
                step
            );
        }
    }
    g.finish();
}

/// The same drives streaming alone, one at a time (no other game ticking between two ticks:
/// the tick runs with a warm cache, unlike in a game, where a frame comes between two ticks).
fn alone(c: &mut Criterion) {
    let mut g = c.benchmark_group("lod, one drive at a time");
    g.measurement_time(Duration::from_secs(4));
    for (lod, label) in [(false, ""), (true, ", lod [{2,24},{8,96}]")] {
        let mut d = Drive::new(lod, false);
        let label = format!("drive 24 m/tick, radius 8{label}");
        g.bench_function(BenchmarkId::new("tick", label), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| d.step()).sum())
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

// ---- The worst cases of the area rule (docs/lod.md, "What a tick costs") ----

/// `players` players 200 km apart, `lod [{step 2, radius 1024}]` (the largest radius), radius 2,
/// the given `lodBudget` and look-ahead 3.
fn far_apart(players: usize, budget: u32) -> Game {
    let entities: Vec<Value> = (0..players)
        .map(|i| serde_json::json!({ "id": format!("p{i}"), "tags": ["player"], "position": { "x": i as f64 * 200_000.0 + 16.0, "z": 16.0 } }))
        .collect();
    let scene = serde_json::json!({
        "kits": [ { "id": "game.engine" }, { "id": "world.ground" }, { "id": "world.streaming", "config": {
            "focus": "players", "radius": 2, "budgetMs": 4, "lookAheadTicks": 3,
            "lod": [ { "step": 2, "radius": 1024 } ], "lodBudget": budget } } ],
        "scenes": [ { "id": "main" } ],
        "entities": entities,
    });
    Game::from_scene_text(
        &scene.to_string(),
        "far.json",
        Path::new("."),
        &builtin_catalog(),
    )
    .unwrap()
}

/// One tick in which every player moves to `at(i)`.
fn move_all(game: &mut Game, players: usize, at: impl Fn(usize) -> Position) -> Duration {
    let tick = game.engine().tick_count() + 1;
    let start = Instant::now();
    game.engine_mut().input(tick, |e| {
        for i in 0..players {
            let id = EntityId::new(&format!("p{i}"));
            e.world_mut().move_to(&id, at(i)).unwrap();
        }
    });
    game.tick();
    let spent = start.elapsed();
    game.engine_mut().take_events();
    spent
}

/// Radius 1024 and many players: the first tick, a walk (24 m a tick), a teleport of every
/// player every tick, and a mod replacing the levels and the radius every tick with 4096 blocks
/// loading a tick. Each tick's work is what it changed; none grows with players × radius².
fn area(c: &mut Criterion) {
    let mut g = c.benchmark_group("lod area");
    g.measurement_time(Duration::from_secs(4));
    for players in [6, 16] {
        g.bench_function(
            BenchmarkId::new("first tick, radius 1024, lodBudget 0", players),
            |b| {
                b.iter_batched(
                    || far_apart(players, 0),
                    |mut game| {
                        game.tick();
                        game
                    },
                    criterion::BatchSize::LargeInput,
                )
            },
        );
        let mut game = far_apart(players, 0);
        game.tick();
        let mut t = 0.0;
        g.bench_function(
            BenchmarkId::new("walk 24 m/tick, radius 1024, lodBudget 0", players),
            |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| {
                            t += 24.0;
                            move_all(&mut game, players, |i| {
                                Position::new(i as f64 * 200_000.0 + 16.0 + t, 16.0 + t / 2.0)
                            })
                        })
                        .sum()
                })
            },
        );
    }
    for budget in [0, 4096] {
        let mut game = far_apart(1, budget);
        game.tick();
        let mut n = 0u64;
        g.bench_function(
            BenchmarkId::new("a teleport every tick, radius 1024, lodBudget", budget),
            |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| {
                            n += 1;
                            move_all(&mut game, 1, |_| {
                                Position::new((n % 2) as f64 * 500_000.0 + 16.0, 16.0)
                            })
                        })
                        .sum()
                })
            },
        );
    }
    let players = 6;
    let mut game = far_apart(players, 4096);
    game.tick();
    let service = game
        .engine()
        .service::<dyn world_streaming::kits::streaming::StreamingService>(
            world_streaming::kits::streaming::STREAMING,
        )
        .unwrap();
    let by = world_streaming::host::ModId::new("toggler");
    let sets: Vec<world_streaming::kits::streaming::Overrides> = [
        serde_json::json!({ "lod": [ { "step": 2, "radius": 1024 } ], "radius": 3 }),
        serde_json::json!({ "lod": [ { "step": 4, "radius": 1000 } ], "radius": 2 }),
    ]
    .into_iter()
    .map(|v| serde_json::from_value(v).unwrap())
    .collect();
    let mut n = 0usize;
    let mut t = 0.0;
    g.bench_function(
        BenchmarkId::new(
            "a mod setting lod and radius every tick, radius 1024, lodBudget 4096",
            players,
        ),
        |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        n += 1;
                        t += 24.0;
                        service.set(&by, sets[n % 2]);
                        move_all(&mut game, players, |i| {
                            Position::new(i as f64 * 200_000.0 + 16.0 + t, 16.0)
                        })
                    })
                    .sum()
            })
        },
    );
    g.finish();
}

criterion_group! { name = benches; config = config(); targets = drive, alone, area }
criterion_main!(benches);
