//! `world.nav` (docs/reference/nav.md#nav-goals): a 256 × 256-cell search over 64 built chunks of
//! 32 cells (the goal: under 5 ms), on open ground and through a serpentine of walls that makes it
//! visit nearly every cell; and one tick of 100 agents all re-planning. `cargo bench --bench nav`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::nav::search::{search_unmetered, Answer, Cell, Ground, Rules};
use world_streaming::kits::terrain::generate::material;
use world_streaming::kits::terrain::{ChunkData, Generator};

/// 8 × 8 built chunks of 32 × 32 cells.
struct Built(BTreeMap<ChunkPos, Arc<ChunkData>>);

impl Ground for Built {
    fn cells(&self) -> u32 {
        32
    }
    fn chunk(&self, c: ChunkPos) -> Option<Arc<ChunkData>> {
        self.0.get(&c).cloned()
    }
}

/// Generated terrain (seed 7), every cell walkable.
fn generated() -> Built {
    let gen = Generator::new(7, 32, 32.0);
    let mut m = BTreeMap::new();
    for z in 0..8 {
        for x in 0..8 {
            let c = ChunkPos::new(x, z);
            m.insert(c, Arc::new(gen.generate(c)));
        }
    }
    Built(m)
}

/// Flat ground with a rock wall along every 8th row (z = 7, 15, …, 247), open at alternate ends:
/// the route from (0, 0) to (255, 255) zigzags and the search floods nearly every cell.
fn serpentine() -> Built {
    let mut m = BTreeMap::new();
    for cz in 0..8i64 {
        for cx in 0..8i64 {
            let mut heights = vec![0u16; 1024];
            let mut materials = vec![material::GRASS; 1024];
            for j in 0..32i64 {
                let z = cz * 32 + j;
                if z % 8 != 7 || z == 255 {
                    continue;
                }
                for i in 0..32i64 {
                    let x = cx * 32 + i;
                    let gap = if (z / 8) % 2 == 0 { x == 255 } else { x == 0 };
                    if !gap {
                        materials[(j * 32 + i) as usize] = material::ROCK;
                        heights[(j * 32 + i) as usize] = 0;
                    }
                }
            }
            m.insert(
                ChunkPos::new(cx, cz),
                Arc::new(ChunkData::from_cells(32, &heights, &materials)),
            );
        }
    }
    Built(m)
}

fn search(c: &mut Criterion) {
    let mut g = c.benchmark_group("nav search 256x256 cells, 64 chunks");
    g.measurement_time(Duration::from_secs(5));
    let open = generated();
    let walkable = Rules {
        max_step: u16::MAX,
        ..Rules::default()
    };
    let (from, to) = (Cell::new(0, 0), Cell::new(255, 255));
    for (name, ground, rules) in [
        ("generated terrain, 4 neighbours", &open, walkable.clone()),
        (
            "generated terrain, diagonals",
            &open,
            Rules {
                diagonal: true,
                ..walkable.clone()
            },
        ),
    ] {
        let o = search_unmetered(ground, &rules, from, to, 1 << 22);
        assert!(matches!(o.answer, Answer::Found(_)));
        g.throughput(Throughput::Elements(o.nodes));
        g.bench_function(format!("{name} ({} nodes)", o.nodes), |b| {
            b.iter(|| search_unmetered(ground, &rules, from, to, 1 << 22))
        });
    }
    let walls = serpentine();
    let mut rules = walkable.clone();
    rules.blocked[usize::from(material::ROCK)] = true;
    let o = search_unmetered(&walls, &rules, from, to, 1 << 22);
    assert!(matches!(o.answer, Answer::Found(_)));
    g.throughput(Throughput::Elements(o.nodes));
    g.bench_function(format!("serpentine walls ({} nodes)", o.nodes), |b| {
        b.iter(|| search_unmetered(&walls, &rules, from, to, 1 << 22))
    });
    g.finish();
}

/// 100 agents on 7 × 7 built chunks, every one given a new goal before the tick: one tick
/// re-plans them all (and steps them).
fn agents(c: &mut Criterion) {
    let mut entities =
        vec![json!({"id": "hero", "tags": ["player"], "position": {"x": 112, "z": 112}})];
    for i in 0..100 {
        let (x, z) = (8 + (i % 10) * 20, 8 + (i / 10) * 20);
        entities.push(json!({"id": format!("agent{i:03}"), "tags": ["agent"],
            "position": {"x": x, "z": z}}));
    }
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 3, "budgetMs": 64 } },
            { "id": "world.terrain", "config": { "seed": 7, "cellsPerChunk": 32, "workers": 1, "commitLatency": 1 } },
            { "id": "world.nav", "config": { "maxStep": 65535 } }
        ],
        "entities": entities
    });
    let mut game = Game::from_scene_text(
        &scene.to_string(),
        "nav.json",
        std::path::Path::new("."),
        &builtin_catalog(),
    )
    .unwrap();
    for _ in 0..3 {
        game.tick();
    }
    let mut flip = false;
    let mut g = c.benchmark_group("nav agents");
    g.throughput(Throughput::Elements(100));
    g.bench_function("one tick, 100 agents re-planning", |b| {
        b.iter(|| {
            flip = !flip;
            for i in 0..100 {
                let (x, z) = if flip { (200.0, 200.0) } else { (8.0, 8.0) };
                let goal = json!({"goal": {"x": x + f64::from(i % 3), "z": z}});
                game.set_data(&format!("agent{i:03}"), goal.as_object().cloned())
                    .unwrap();
            }
            game.tick();
            game.engine().variables().get("world.nav.nodes").cloned()
        })
    });
    g.finish();
    let nodes = game.engine().variables().get("world.nav.nodes").cloned();
    eprintln!("nodes expanded on the last agents' tick: {nodes:?}");
}

criterion_group!(benches, search, agents);
criterion_main!(benches);
