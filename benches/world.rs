//! World files (docs/reference/world-dir.md#write-back): writing back 1 000 modified chunks (each
//! region rewritten whole, with its fsyncs), building a modified vs an unmodified chunk on a worker
//! (generation plus the save thread's answer), and the bytes a one-cell edit costs on disk.
//! `cargo bench --bench world`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::pool::Built;
use world_streaming::kits::terrain::region::{self, Diff, Region, RegionPos};
use world_streaming::kits::terrain::store::Store;
use world_streaming::kits::terrain::Generator;

/// A diff of `n` cells spread over the chunk.
fn diff(n: u32, salt: u32) -> Diff {
    Diff {
        cells: (0..n)
            .map(|k| ((k * 97 + salt) % 1024, (1000 + k as u16, (k % 5) as u8)))
            .collect(),
    }
}

/// 1 000 chunks, 5 edited cells each, over four regions (the square -16..16 × -16..15).
fn thousand(round: u32) -> Vec<(ChunkPos, Option<Diff>)> {
    (0..1000)
        .map(|k| {
            let c = ChunkPos::new(k % 32 - 16, k / 32 - 16);
            (c, Some(diff(5, k as u32 + round)))
        })
        .collect()
}

fn flush(c: &mut Criterion) {
    let mut g = c.benchmark_group("world flush");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    let stamp = Generator::new(7, 32, 32.0).stamp();
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = Store::start(Some(dir.path().to_owned()), stamp).unwrap();
    let mut round = 0;
    g.bench_function("1000 modified chunks, 4 regions", |b| {
        b.iter(|| {
            round += 1;
            store.flush(thousand(round)).unwrap();
        })
    });
    let bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    println!("world flush: 1000 chunks of 5 edited cells take {bytes} bytes in 4 region files");
    g.finish();
}

fn load(c: &mut Criterion) {
    let mut g = c.benchmark_group("world load");
    let gen = Generator::new(7, 32, 32.0);
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = Store::start(Some(dir.path().to_owned()), gen.stamp()).unwrap();
    store.flush(thousand(0)).unwrap();
    let reader = store.reader().unwrap();
    for (label, chunk) in [
        ("modified (5 cells)", ChunkPos::new(0, 0)),
        ("unmodified", ChunkPos::new(100, 100)),
    ] {
        g.bench_function(BenchmarkId::new("one chunk on a worker", label), |b| {
            b.iter(|| Built::make(&gen, Some(&reader), chunk))
        });
    }
    g.bench_function("save thread answer alone", |b| {
        b.iter(|| reader.read(ChunkPos::new(0, 0)))
    });
    g.finish();
    // Bytes on disk for one edited cell: the record, and the whole region file holding it.
    let one = diff(1, 517);
    let record = region::encode_record(ChunkPos::new(3, 4), gen.stamp(), &one);
    let file = region::encode(&Region {
        pos: RegionPos::of(ChunkPos::new(3, 4)),
        stamp: gen.stamp(),
        chunks: [(ChunkPos::new(3, 4), one)].into(),
    });
    println!(
        "world bytes: a one-cell edit is a {}-byte record ({} of header), a {}-byte region file",
        record.len(),
        region::RECORD_HEADER_LEN,
        file.len()
    );
}

/// A game on a world directory with 200 edited chunks around the player, who then leaves:
/// the release tick and the write back it causes, until it is on disk.
fn release(c: &mut Criterion) {
    use serde_json::json;
    use world_streaming::game::Game;
    use world_streaming::grid::Position;
    let mut g = c.benchmark_group("world release");
    g.sample_size(10);
    let dir = tempfile::tempdir().unwrap();
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 7, "budgetMs": 64 } },
            { "id": "world.terrain", "config": { "seed": 7, "worldDir": dir.path(), "flushEveryTicks": 0 } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    })
    .to_string();
    let catalog = world_streaming::kits::builtin_catalog();
    g.bench_function(
        "200 edited chunks released in one tick, written back",
        |b| {
            b.iter_batched(
                || {
                    let mut game =
                        Game::from_scene_text(&scene, "bench", ".".as_ref(), &catalog).unwrap();
                    game.run_until_ready("hero", 100).unwrap();
                    for k in 0..200i64 {
                        let at = Position::new(
                            (k % 15 - 7) as f64 * 32.0 + 5.5,
                            (k / 15 - 7) as f64 * 32.0 + 5.5,
                        );
                        game.edit(at, 1000 + k as u16, None).unwrap();
                    }
                    game.tick();
                    game
                },
                |mut game| {
                    let to = Position::new(100_000.0, 16.0);
                    let tick = game.engine().tick_count() + 1;
                    game.engine_mut().input(tick, |e| {
                        e.world_mut()
                            .move_to(&world_streaming::host::EntityId::new("hero"), to)
                            .unwrap()
                    });
                    game.tick();
                    game.engine().flush().unwrap();
                    game
                },
                criterion::BatchSize::PerIteration,
            )
        },
    );
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = benches; config = config(); targets = flush, load, release }
criterion_main!(benches);
