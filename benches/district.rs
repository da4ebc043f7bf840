//! `world.district` (SPEC §15): starting a world of 1 000 000 district entities over 10 000
//! chunks (the index only: nothing materialised) and the bytes its index holds per unloaded
//! entity; a tick that loads one chunk of 100 district entities (materialising them); a steady
//! tick with 1 000 and with 1 000 000 district entities. `cargo bench --bench district`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::district::DistrictKit;

/// Writes `per_chunk` entities in each chunk of a `side` × `side` square of 32 m chunks.
fn district(dir: &Path, side: i64, per_chunk: i64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("d.jsonl")).unwrap());
    for cz in 0..side {
        for cx in 0..side {
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

fn scene(radius: u32) -> String {
    serde_json::json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": radius, "budgetMs": 1 } },
            { "id": "world.district", "config": { "districts": ["d.jsonl"] } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    })
    .to_string()
}

fn start(dir: &Path, radius: u32) -> Game {
    Game::from_scene_text(&scene(radius), "scene.json", dir, &builtin_catalog()).unwrap()
}

fn million(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    district(dir.path(), 100, 100);
    let game = start(dir.path(), 0);
    let kit = game.kit::<DistrictKit>().unwrap();
    eprintln!(
        "district index: {} bytes for 1000000 entities = {:.1} bytes per unloaded entity",
        kit.index_bytes(),
        kit.index_bytes() as f64 / 1e6
    );
    drop(game);
    let mut g = c.benchmark_group("district");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("start 1000000 entities over 10000 chunks", |b| {
        b.iter(|| start(dir.path(), 0))
    });
    let mut steady = start(dir.path(), 1);
    for _ in 0..20 {
        steady.tick();
    }
    g.bench_function("steady tick, 1000000 entities", |b| {
        b.iter(|| steady.tick())
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

criterion_group!(benches, million, small);
criterion_main!(benches);
