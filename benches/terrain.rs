//! `world.terrain` (SPEC §12): generation cost, worker-pool throughput with 1 and 2 workers, and
//! the tick's own cost on a drive with terrain on and off (the work is off the tick).
//! `cargo bench --bench terrain`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::pool::{Job, Pool};
use world_streaming::kits::terrain::{Generator, TerrainService, TERRAIN};

fn generate(c: &mut Criterion) {
    let mut g = c.benchmark_group("terrain generate");
    g.throughput(Throughput::Elements(1));
    let gen = Generator::new(7, 32, 32.0);
    let mut x = 0;
    g.bench_function("one chunk, 32x32 cells", |b| {
        b.iter(|| {
            x += 1;
            gen.generate(ChunkPos::new(x, 3))
        })
    });
    g.finish();
}

/// 64 chunks through the pool, waiting for all of them.
fn pool(c: &mut Criterion) {
    let mut g = c.benchmark_group("terrain pool");
    g.throughput(Throughput::Elements(64));
    g.measurement_time(Duration::from_secs(6));
    let gen = Arc::new(Generator::new(7, 32, 32.0));
    for workers in [1, 2] {
        let pool = Pool::new(workers, gen.clone(), None).unwrap();
        let mut version = 0;
        g.bench_function(
            BenchmarkId::new("64 chunks", format!("{workers} workers")),
            |b| {
                b.iter(|| {
                    for i in 0..64 {
                        version += 1;
                        pool.dispatch(Job {
                            chunk: ChunkPos::new(i, version as i64),
                            version,
                        });
                    }
                    for _ in 0..64 {
                        pool.recv().unwrap();
                    }
                })
            },
        );
    }
    g.finish();
}

fn drive_game(terrain: bool) -> Game {
    let mut kits = vec![
        json!({ "id": "world.ground" }),
        json!({ "id": "world.streaming", "config": { "chunkSize": 32, "radius": 8, "budgetMs": 4 } }),
    ];
    if terrain {
        kits.push(json!({ "id": "world.terrain", "config": { "seed": 7 } }));
    }
    let scene = json!({
        "kits": kits,
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "rides": "car" },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 16, "z": 16 } }
        ],
    });
    Game::from_scene_text(
        &scene.to_string(),
        "bench",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap()
}

/// 30 m/s at 60 ticks/s, radius 8, budget 4, default latency (2), default workers.
fn drive(c: &mut Criterion) {
    let mut g = c.benchmark_group("terrain drive");
    g.measurement_time(Duration::from_secs(6));
    let car = EntityId::new("car");
    for terrain in [false, true] {
        let mut game = drive_game(terrain);
        for _ in 0..200 {
            game.tick(); // 289 chunks at 4 a tick: filled, and built
        }
        let waits_before = game.engine().variables().count("world.terrain.waits");
        if terrain {
            // Paced like a game running 16 times faster than 60 ticks a second (1 ms a frame):
            // 640 ticks of driving, 10 chunk borders, 170 chunks generated.
            let mut x = 16.0;
            for _ in 0..640 {
                x += 0.5;
                let tick = game.engine().tick_count() + 1;
                let to = Position::new(x, 16.0);
                game.engine_mut()
                    .input(tick, |e| e.world_mut().move_to(&car, to).unwrap());
                game.tick();
                game.engine_mut().take_events();
                std::thread::sleep(Duration::from_millis(1));
            }
            let waits = game.engine().variables().count("world.terrain.waits") - waits_before;
            println!("terrain drive paced at 1 ms a tick: world.terrain.waits grew by {waits} over 640 ticks");
        }
        let waits_before = game.engine().variables().count("world.terrain.waits");
        let mut x = 16.0;
        let label = if terrain { "terrain on" } else { "terrain off" };
        let service = game.engine().service::<dyn TerrainService>(TERRAIN);
        // Only the tick is timed. Between ticks the workers get the time a game's frame would
        // give them (here: until they are idle), as they would at 60 ticks a second.
        g.bench_function(BenchmarkId::new("radius 8, budget 4", label), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    // The same pause before every timed tick, terrain on or off (a frame's other
                    // work happens there in a game), then, with terrain, until the workers idle.
                    std::thread::yield_now();
                    if let Some(t) = &service {
                        while t.generating() > 0 {
                            std::thread::yield_now();
                        }
                    }
                    x += 0.5;
                    let tick = game.engine().tick_count() + 1;
                    let to = Position::new(x, 16.0);
                    let start = Instant::now();
                    game.engine_mut()
                        .input(tick, |e| e.world_mut().move_to(&car, to).unwrap());
                    game.tick();
                    spent += start.elapsed();
                    game.engine_mut().take_events();
                }
                spent
            })
        });
        if terrain {
            let waits = game.engine().variables().count("world.terrain.waits") - waits_before;
            println!(
                "terrain drive: world.terrain.waits grew by {waits} over {} ticks of driving",
                game.engine().tick_count() - 200
            );
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = benches; config = config(); targets = generate, pool, drive }
criterion_main!(benches);
