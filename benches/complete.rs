//! Complete chunks (docs/meshing.md#what-it-costs): the tick of a terrain drive with
//! `neighbours: 1` at radius 8 against the same drive with radius 9 and `neighbours` 0 — the
//! same chunks loaded (wanted within 9, released beyond 10) and built, so what differs is the
//! completeness the first keeps (its events, its variable, readiness and holes reading
//! complete). Timed in lockstep A/B as `benches/terrain.rs` times terrain on and off: before
//! every step the terrain workers of both drives are given the time to finish (a game's frame),
//! then both drives tick, alternating which goes first, and each benchmark times its own
//! drive's ticks. `nice cargo bench --bench complete -- 'complete drive'`.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

fn drive_game(radius: u32, neighbours: u32) -> Game {
    let mut streaming = json!({ "chunkSize": 32, "radius": radius, "budgetMs": 4 });
    if neighbours > 0 {
        streaming["neighbours"] = json!(neighbours);
    }
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": streaming },
            { "id": "world.terrain", "config": { "seed": 7, "cellsPerChunk": 32 } }
        ],
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

/// One of the two drives.
struct Drive {
    game: Game,
    x: f64,
    terrain: std::rc::Rc<dyn TerrainService>,
}

impl Drive {
    /// Filled and built (361 chunks at 4 a tick).
    fn new(radius: u32, neighbours: u32) -> Drive {
        let mut game = drive_game(radius, neighbours);
        for _ in 0..200 {
            game.tick();
        }
        let terrain = game
            .engine()
            .service::<dyn TerrainService>(TERRAIN)
            .unwrap();
        Drive {
            game,
            x: 16.0,
            terrain,
        }
    }

    /// One tick 0.5 m further east; returns the tick's time.
    fn tick(&mut self, car: &EntityId) -> Duration {
        self.x += 0.5;
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

    fn idle(&self) {
        while self.terrain.generating() > 0 {
            std::thread::yield_now();
        }
    }
}

fn complete_drive(c: &mut Criterion) {
    let mut g = c.benchmark_group("complete drive");
    g.measurement_time(Duration::from_secs(6));
    let car = EntityId::new("car");
    let mut drives = [Drive::new(9, 0), Drive::new(8, 1)];
    let loaded = |d: &Drive| d.game.streaming().unwrap().loaded().len();
    assert_eq!(loaded(&drives[0]), loaded(&drives[1]), "the same chunks");
    let mut step = 0u64;
    for (timed, label) in [(0, "radius 9, neighbours 0"), (1, "radius 8, neighbours 1")] {
        g.bench_function(BenchmarkId::new("budget 4, 0.5 m a tick", label), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    std::thread::yield_now();
                    for d in &drives {
                        d.idle();
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
        "complete drive: {} chunks loaded in each drive after {} steps, {} complete with neighbours 1",
        loaded(&drives[1]),
        step,
        drives[1].game.streaming().unwrap().complete().len()
    );
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = benches; config = config(); targets = complete_drive }
criterion_main!(benches);
