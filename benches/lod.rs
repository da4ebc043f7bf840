//! SPEC §17's bar: the tick with levels of detail against the same tick without, side by side
//! in one run: a player driving east at 24 m a tick (the §16 example's speed), radius 8, with
//! `lod [{2, 24}, {8, 96}]` (lodBudget 32) and without; streaming alone, and with
//! `world.terrain` building chunks (and blocks) on its pool. `cargo bench --bench lod`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;

fn scene(lod: bool, terrain: bool) -> Value {
    let mut streaming = json!({ "chunkSize": 32, "radius": 8, "budgetMs": 24 });
    if lod {
        streaming["lod"] = json!([{ "step": 2, "radius": 24 }, { "step": 8, "radius": 96 }]);
        streaming["lodBudget"] = json!(32);
    }
    let mut kits = vec![
        json!({ "id": "game.engine" }),
        json!({ "id": "world.ground" }),
        json!({ "id": "world.streaming", "config": streaming }),
    ];
    if terrain {
        kits.push(json!({ "id": "world.terrain", "config": {
            "seed": 2026, "cellsPerChunk": 16, "workers": 0, "commitLatency": 2 } }));
    }
    json!({
        "kits": kits,
        "scenes": [{ "id": "main" }],
        "entities": [{ "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } }],
    })
}

struct Drive {
    game: Game,
    hero: EntityId,
    x: f64,
}

impl Drive {
    fn new(lod: bool, terrain: bool) -> Drive {
        let text = scene(lod, terrain).to_string();
        let mut game = Game::from_scene_text(
            &text,
            "lod.json",
            std::path::Path::new("."),
            &builtin_catalog(),
        )
        .unwrap();
        // Fill the rings standing still, then drive 100 ticks so the steady drive is measured.
        for _ in 0..60 {
            game.tick();
        }
        let mut d = Drive {
            game,
            hero: EntityId::new("hero"),
            x: 16.0,
        };
        for _ in 0..100 {
            d.step();
        }
        d
    }

    fn step(&mut self) {
        self.x += 24.0;
        let to = Position::new(self.x, 16.0);
        let tick = self.game.engine().tick_count() + 1;
        let hero = self.hero.clone();
        self.game
            .engine_mut()
            .input(tick, |e| e.world_mut().move_to(&hero, to).unwrap());
        self.game.tick();
        self.game.engine_mut().take_events();
    }
}

fn drive(c: &mut Criterion) {
    let mut g = c.benchmark_group("lod");
    g.measurement_time(Duration::from_secs(4));
    for terrain in [false, true] {
        for lod in [false, true] {
            let mut d = Drive::new(lod, terrain);
            let label = format!(
                "drive 24 m/tick, radius 8{}{}",
                if terrain { ", terrain" } else { "" },
                if lod { ", lod [{2,24},{8,96}]" } else { "" }
            );
            g.bench_function(BenchmarkId::new("tick", label), |b| b.iter(|| d.step()));
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! { name = benches; config = config(); targets = drive }
criterion_main!(benches);
