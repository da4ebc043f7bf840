//! `world.terrain` (docs/reference/terrain.md#the-generator): generation cost, worker-pool
//! throughput with 1 and 2 workers, and the tick's own cost on a drive with terrain on and off (the
//! work is off the tick), timed in lockstep A/B (group "terrain drive") and in the old sequential
//! loop (group "terrain drive, sequential (old loop)"). `cargo bench --bench terrain`; the drives
//! alone: `cargo bench --bench terrain -- 'terrain drive'`; bordered snapshots (group
//! "terrain/snapshot"): `cargo bench --bench terrain -- snapshot`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::pool::{Job, Pool};
use world_streaming::kits::terrain::{snapshot, ChunkData, Generator, TerrainService, TERRAIN};

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
                    let mut jobs: Vec<Job> = (0..64)
                        .map(|i| {
                            version += 1;
                            Job {
                                chunk: ChunkPos::new(i, version as i64),
                                version,
                            }
                        })
                        .collect();
                    pool.submit(&mut jobs, &mut Vec::new());
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

/// One of the two drives: a game, its car's position, and its terrain service (if on).
struct Drive {
    game: Game,
    x: f64,
    /// Ticks driven (the car crosses a chunk border every 64).
    steps: usize,
    terrain: Option<std::rc::Rc<dyn TerrainService>>,
}

impl Drive {
    /// A drive at radius 8, budget 4, filled and built (289 chunks at 4 a tick).
    fn new(terrain: bool) -> Drive {
        let mut game = drive_game(terrain);
        for _ in 0..200 {
            game.tick();
        }
        let terrain = game.engine().service::<dyn TerrainService>(TERRAIN);
        Drive {
            game,
            x: 16.0,
            steps: 0,
            terrain,
        }
    }

    /// One tick 0.5 m further east (30 m/s at 60 ticks a second); returns the tick's time.
    fn tick(&mut self, car: &EntityId) -> Duration {
        self.x += 0.5;
        self.steps += 1;
        let tick = self.game.engine().tick_count() + 1;
        let to = Position::new(self.x, 16.0);
        let start = Instant::now();
        self.game
            .engine_mut()
            .input(tick, |e| e.world_mut().move_to(car, to).unwrap());
        self.game.tick();
        let spent = start.elapsed();
        self.game.engine_mut().take_events();
        spent
    }

    fn waits(&self) -> u64 {
        self.game.engine().variables().count("world.terrain.waits")
    }
}

/// Radius 8, budget 4, default latency (2) and workers; terrain on and off, timed A/B.
///
/// Only the tick is timed. Between ticks the workers get the time a game's frame would give
/// them (here: until they are idle), and that wait (a `sched_yield` loop of up to a
/// millisecond) slows whatever tick comes next, terrain or not: the terrain-off drive alone,
/// given the same waits before the same ticks, went from 580–740 to 875–965 ns a tick. So the
/// two drives run in lockstep and see the same waits: every step waits for idle workers, then
/// ticks both drives, alternating which goes first (A B, B A); each benchmark times its own
/// drive's ticks.
fn drive(c: &mut Criterion) {
    let mut g = c.benchmark_group("terrain drive");
    g.measurement_time(Duration::from_secs(6));
    let car = EntityId::new("car");
    let mut drives = [Drive::new(false), Drive::new(true)];
    // Paced like a game running 16 times faster than 60 ticks a second (1 ms a frame): 640
    // ticks of driving, 10 chunk borders, 170 chunks generated.
    let waits_before = drives[1].waits();
    for _ in 0..640 {
        drives[1].tick(&car);
        std::thread::sleep(Duration::from_millis(1));
    }
    println!(
        "terrain drive paced at 1 ms a tick: world.terrain.waits grew by {} over 640 ticks",
        drives[1].waits() - waits_before
    );
    let waits_before = drives[1].waits();
    let ticks_before = drives[1].game.engine().tick_count();
    let mut step = 0u64;
    for (timed, label) in [(0, "terrain off"), (1, "terrain on")] {
        g.bench_function(BenchmarkId::new("radius 8, budget 4", label), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    std::thread::yield_now();
                    if let Some(t) = &drives[1].terrain {
                        while t.generating() > 0 {
                            std::thread::yield_now();
                        }
                    }
                    step += 1;
                    let first = (step % 2) as usize;
                    for d in [first, 1 - first] {
                        let time = drives[d].tick(&car);
                        if d == timed {
                            spent += time;
                        }
                    }
                }
                spent
            })
        });
    }
    println!(
        "terrain drive: world.terrain.waits grew by {} over {} ticks of driving",
        drives[1].waits() - waits_before,
        drives[1].game.engine().tick_count() - ticks_before
    );
    g.finish();
}

/// The old loop (before issue 12 closed), kept beside the lockstep A/B so that one command
/// reports both: each drive ticks alone, and only the terrain-on drive waits for its idle
/// workers before a tick. That wait slows the tick after it, terrain or not (see [`drive`]);
/// the third benchmark shows it: the terrain-off drive given the terrain-on drive's waits
/// (the mean wait at each of the 64 ticks of a chunk crossing, measured just before), with no
/// terrain at all.
fn drive_sequential(c: &mut Criterion) {
    let mut g = c.benchmark_group("terrain drive, sequential (old loop)");
    g.measurement_time(Duration::from_secs(6));
    let car = EntityId::new("car");
    let mut off = Drive::new(false);
    let mut on = Drive::new(true);
    g.bench_function(BenchmarkId::new("radius 8, budget 4", "terrain off"), |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                std::thread::yield_now();
                spent += off.tick(&car);
            }
            spent
        })
    });
    // Waits by phase of the drive (its step count mod 64: a chunk border every 64 steps).
    let mut waited = [(Duration::ZERO, 0u32); 64];
    g.bench_function(BenchmarkId::new("radius 8, budget 4", "terrain on"), |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                std::thread::yield_now();
                let start = Instant::now();
                if let Some(t) = &on.terrain {
                    while t.generating() > 0 {
                        std::thread::yield_now();
                    }
                }
                let w = &mut waited[on.steps % 64];
                w.0 += start.elapsed();
                w.1 += 1;
                spent += on.tick(&car);
            }
            spent
        })
    });
    let mean: Vec<Duration> = waited
        .iter()
        .map(|(d, n)| d.checked_div(*n).unwrap_or_default())
        .collect();
    g.bench_function(
        BenchmarkId::new("radius 8, budget 4", "terrain off, given terrain's waits"),
        |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    std::thread::yield_now();
                    let until = Instant::now() + mean[off.steps % 64];
                    while Instant::now() < until {
                        std::thread::yield_now();
                    }
                    spent += off.tick(&car);
                }
                spent
            })
        },
    );
    let busy: Vec<String> = mean
        .iter()
        .enumerate()
        .filter(|(_, d)| **d >= Duration::from_micros(20))
        .map(|(i, d)| format!("{i}: {} us", d.as_micros()))
        .collect();
    println!("terrain drive, sequential: the mean waits of 20 us or more, by tick of 64: {busy:?}");
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

/// Bordered snapshots (docs/reference/terrain.md#bordered-snapshots): a 32² chunk with skin 2
/// (36² cells) through the service of a built world (its lookups and borrows included), and
/// the pure copy alone. `cargo bench --bench terrain -- snapshot`.
fn snapshot(c: &mut Criterion) {
    let mut g = c.benchmark_group("terrain/snapshot");
    g.throughput(Throughput::Elements(36 * 36));
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 2, "budgetMs": 25 } },
            { "id": "world.terrain", "config": { "seed": 7, "workers": "inline", "commitLatency": 1 } }
        ],
        "entities": [{ "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } }],
    });
    let mut game = Game::from_scene_text(
        &scene.to_string(),
        "bench",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap();
    game.run_until_ready("hero", 100).unwrap();
    let terrain = game
        .engine()
        .service::<dyn TerrainService>(TERRAIN)
        .unwrap();
    let chunk = ChunkPos::new(0, 0);
    assert_eq!(terrain.snapshot(chunk, 2).unwrap().side, 36);
    g.bench_function("service, 32x32 cells, skin 2", |b| {
        b.iter(|| terrain.snapshot(std::hint::black_box(chunk), 2).unwrap())
    });
    let around: Vec<_> = (0..9)
        .map(|k| terrain.chunk(ChunkPos::new(k % 3 - 1, k / 3 - 1)).unwrap())
        .collect();
    let refs: [Option<&ChunkData>; 9] = std::array::from_fn(|k| Some(&*around[k]));
    g.bench_function("copy, 32x32 cells, skin 2", |b| {
        b.iter(|| snapshot::copy(chunk, 2, 1, std::hint::black_box(&refs)))
    });
    g.finish();
}

criterion_group! { name = benches; config = config(); targets = generate, pool, drive, drive_sequential, snapshot }
criterion_main!(benches);
