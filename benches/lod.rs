//! SPEC §17's bar: the tick with levels of detail against the same tick without, side by side.
//! The scene is the shipped `examples/scenes/lod.json` (radius 8, `lod [{2,24},{8,96}]`,
//! lodBudget 64, lookAheadTicks 3, terrain with commitLatency 1), and the same scene without
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

criterion_group! { name = benches; config = config(); targets = drive, alone }
criterion_main!(benches);
