//! `world.district` (docs/reference/district.md#district-scale-goals): starting a world of
//! 1 000 000 district entities over 10 000 chunks (the index only: nothing materialised) and the
//! bytes it holds per unloaded entity, counted by a counting global allocator; materialising one
//! chunk of 100 district entities and storing it, each timed alone; a tick that loads one chunk of
//! 100 entities; a steady tick with 1 000 and with 1 000 000 district entities; a drive through the
//! million-entity world at radius 8, its live count printed against the loaded chunks.
//! `cargo bench --bench district`.

#[path = "common/counting.rs"]
mod counting;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::district::DistrictKit;

/// This thread's CPU time: what the timed steps are measured in (the machine these numbers come
/// from is shared, so wall-clock time would count other processes' turns too). Nothing timed
/// here starts a thread.
fn cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

use counting::live;

/// Writes `per_chunk` entities in each chunk of a `side` × `side` square of 32 m chunks starting
/// at chunk `(from, from)`.
fn district_at(dir: &Path, from: i64, side: i64, per_chunk: i64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("d.jsonl")).unwrap());
    for cz in from..from + side {
        for cx in from..from + side {
            for k in 0..per_chunk {
                let x = cx as f64 * 32.0 + (k % 10) as f64 * 3.0 + 1.0;
                let z = cz as f64 * 32.0 + (k / 10 % 10) as f64 * 3.0 + 1.0;
                writeln!(
                    f,
                    "{{\"id\":\"e{cx}_{cz}_{k}\",\"tags\":[\"crate\"],\"position\":{{\"x\":{x},\"z\":{z}}}}}"
                )
                .unwrap();
            }
        }
    }
}

fn district(dir: &Path, side: i64, per_chunk: i64) {
    district_at(dir, 0, side, per_chunk)
}

fn scene(radius: u32, budget: u32) -> String {
    serde_json::json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": radius, "budgetMs": budget } },
            { "id": "world.district", "config": { "districts": ["d.jsonl"] } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    })
    .to_string()
}

fn start(dir: &Path, radius: u32) -> Game {
    start_with(dir, radius, 1)
}

fn start_with(dir: &Path, radius: u32, budget: u32) -> Game {
    Game::from_scene_text(
        &scene(radius, budget),
        "scene.json",
        dir,
        &builtin_catalog(),
    )
    .unwrap()
}

fn million(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    district(dir.path(), 100, 100);
    let before = live();
    let game = start(dir.path(), 0);
    let held = live() - before;
    let kit = game.kit::<DistrictKit>().unwrap();
    eprintln!(
        "district: a started game of 1000000 unloaded entities holds {held} bytes (counting \
         allocator) = {:.1} bytes per unloaded entity; the index's vectors {} bytes",
        held as f64 / 1e6,
        kit.index_bytes(),
    );
    drop(game);
    let mut g = c.benchmark_group("district");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("start 1000000 entities over 10000 chunks (CPU time)", |b| {
        b.iter_custom(|n| {
            let mut spent = Duration::ZERO;
            for _ in 0..n {
                let t = cpu();
                let game = start(dir.path(), 0);
                spent += cpu() - t;
                drop(game);
            }
            spent
        })
    });
    let mut steady = start(dir.path(), 1);
    for _ in 0..20 {
        steady.tick();
    }
    g.bench_function("steady tick, 1000000 entities", |b| {
        b.iter(|| steady.tick())
    });
    g.bench_function("drive 40 chunks east at radius 8, 1000000 entities", |b| {
        b.iter_batched(
            || start_with(dir.path(), 8, 1000),
            |game| drive(game, 40),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// Drives the hero east through the million-entity world at radius 8, `steps` chunks, one chunk
/// a tick (every wanted chunk loaded at once), and prints the live entities per loaded chunk.
fn drive(mut game: Game, steps: u32) -> Game {
    let hero = EntityId::new("hero");
    let streaming = game.streaming().unwrap();
    let (mut min, mut max) = (u64::MAX, 0);
    for step in 0..steps {
        let at = Position::new(336.0 + 32.0 * f64::from(step), 1600.0);
        game.engine_mut().world_mut().move_to(&hero, at).unwrap();
        game.tick();
        let loaded = streaming.loaded().len() as u64;
        let live = game.state().district.unwrap().live;
        assert_eq!(live % loaded, 0);
        (min, max) = (min.min(live / loaded), max.max(live / loaded));
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        eprintln!(
            "district drive: live entities per loaded chunk between {min} and {max} \
             (the world has 100 in each chunk)"
        )
    });
    game
}

/// Materialising one chunk of 100 district entities into a running game, and storing them
/// again, each timed alone (the chunk is far from the focus, so nothing else streams it).
fn one_chunk_steps(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    district_at(dir.path(), 5, 1, 100);
    let mut game = start(dir.path(), 0);
    game.tick();
    let steps = game.kit::<DistrictKit>().unwrap().chunk_steps();
    let chunk = ChunkPos::new(5, 5);
    let mut g = c.benchmark_group("district");
    g.bench_function("materialise one chunk of 100 entities (CPU time)", |b| {
        b.iter_custom(|n| {
            let mut spent = Duration::ZERO;
            for _ in 0..n {
                let world = game.engine_mut().world_mut();
                let t = cpu();
                let k = steps.materialise(world, chunk);
                spent += cpu() - t;
                assert_eq!(k, 100);
                assert_eq!(steps.store(world, chunk), 100);
            }
            spent
        })
    });
    g.bench_function("store one chunk of 100 entities (CPU time)", |b| {
        b.iter_custom(|n| {
            let mut spent = Duration::ZERO;
            for _ in 0..n {
                let world = game.engine_mut().world_mut();
                assert_eq!(steps.materialise(world, chunk), 100);
                let t = cpu();
                let k = steps.store(world, chunk);
                spent += cpu() - t;
                assert_eq!(k, 100);
            }
            spent
        })
    });
    g.finish();
}

fn small(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    district(dir.path(), 1, 100);
    let mut g = c.benchmark_group("district");
    g.bench_function("tick loading one chunk of 100 entities", |b| {
        b.iter_batched(
            || start(dir.path(), 0),
            |mut game| {
                game.tick();
                game
            },
            BatchSize::SmallInput,
        )
    });
    let thousand = tempfile::tempdir().unwrap();
    district(thousand.path(), 10, 10);
    let mut steady = start(thousand.path(), 1);
    for _ in 0..20 {
        steady.tick();
    }
    g.bench_function("steady tick, 1000 entities", |b| b.iter(|| steady.tick()));
    g.finish();
}

criterion_group!(benches, million, one_chunk_steps, small);
criterion_main!(benches);
