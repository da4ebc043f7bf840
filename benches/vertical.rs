//! Vertical worlds (docs/vertical.md#what-it-costs): what `shape` and `vertical` cost per tick.
//!
//! Groups, each a scene built in code with one player, `chunkSize` 32, filled before timing:
//! - `vertical absent`: radius 8 with neither key, standing still and driving east 0.5 m a tick at
//!   budget 4 (the tick must cost what it did before the keys existed: run the same group on the
//!   base commit to compare);
//! - `standing r8`: the 2-D square and the 2-D disc at radius 8 against the seed's cylinder
//!   (`shape: "disc"`, radius 8, `vertical.radius` 4: 1 773 sections), the player still;
//! - `one-section move r8`: every tick moves the focus one section, back and forth between two
//!   neighbouring sections whose cylinders are both loaded (the tick recounts the strips that
//!   enter and leave the wanted set; nothing is released or loaded): the 2-D square moving east,
//!   the cylinder moving east and moving up.
//!
//! Before the groups it prints the resident heap bytes per loaded section, from a counting
//! allocator (a count, the same on every run): the filled game minus the same game before its
//! first tick, over the sections loaded.
//!
//! `nice cargo bench --bench vertical -- --quick`; one group: `-- --quick 'standing r8'`.

#[path = "common/counting.rs"]
mod counting;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;

use counting::live;

/// The 2-D square (neither key), the 2-D disc, or the seed's cylinder, at radius 8.
#[derive(Clone, Copy)]
enum World {
    Square,
    Disc,
    Cylinder,
}

impl World {
    fn label(self) -> &'static str {
        match self {
            World::Square => "2-D square",
            World::Disc => "2-D disc",
            World::Cylinder => "cylinder rv 4",
        }
    }
}

fn game(world: World, budget: f64) -> Game {
    let mut config = json!({ "chunkSize": 32, "radius": 8, "budgetMs": budget });
    match world {
        World::Square => {}
        World::Disc => config["shape"] = json!("disc"),
        World::Cylinder => {
            config["shape"] = json!("disc");
            config["vertical"] = json!({ "radius": 4 });
        }
    }
    let scene: Value = json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": config } ],
        "entities": [
            { "id": "pilot", "tags": ["player"], "position": { "x": 16, "y": 16, "z": 16 } }
        ],
        "control": "pilot",
    });
    Game::from_scene_text(
        &scene.to_string(),
        "bench",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap()
}

/// Ticks until nothing is pending.
fn fill(game: &mut Game) {
    for _ in 0..100_000 {
        game.tick();
        game.engine_mut().take_events();
        if game.engine().variables().count("world.chunks.pending") == 0 {
            return;
        }
    }
    panic!("never settled");
}

fn move_to(game: &mut Game, to: Position) {
    let pilot = EntityId::new("pilot");
    let tick = game.engine().tick_count() + 1;
    game.engine_mut()
        .input(tick, |e| e.world_mut().move_to(&pilot, to).unwrap());
}

fn at(x: f64, y: f64) -> Position {
    Position { x, y, z: 16.0 }
}

/// Resident bytes per loaded section, printed once.
fn memory() {
    for world in [World::Square, World::Disc, World::Cylinder] {
        let before = live();
        let mut g = game(world, 1e9);
        let empty = live();
        fill(&mut g);
        let sections = g.streaming().unwrap().loaded().len();
        let per = (live() - empty) as f64 / sections as f64;
        println!(
            "memory: {}: {sections} loaded, {per:.0} bytes per loaded section ({} bytes the game \
             before its first tick)",
            world.label(),
            empty - before
        );
    }
}

fn vertical_absent(c: &mut Criterion) {
    let mut g = c.benchmark_group("vertical absent");
    let mut standing = game(World::Square, 4.0);
    fill(&mut standing);
    g.bench_function(BenchmarkId::new("standing", "radius 8"), |b| {
        b.iter(|| {
            standing.tick();
            standing.engine_mut().take_events();
        })
    });
    let mut driving = game(World::Square, 4.0);
    fill(&mut driving);
    let mut x = 16.0;
    g.bench_function(BenchmarkId::new("driving 0.5 m a tick", "radius 8"), |b| {
        b.iter(|| {
            x += 0.5;
            move_to(&mut driving, at(x, 16.0));
            driving.tick();
            driving.engine_mut().take_events();
        })
    });
    g.finish();
}

fn standing(c: &mut Criterion) {
    let mut g = c.benchmark_group("standing r8");
    for world in [World::Square, World::Disc, World::Cylinder] {
        let mut game = game(world, 4.0);
        fill(&mut game);
        g.bench_function(world.label(), |b| {
            b.iter(|| {
                game.tick();
                game.engine_mut().take_events();
            })
        });
    }
    g.finish();
}

fn one_section_move(c: &mut Criterion) {
    let mut g = c.benchmark_group("one-section move r8");
    for (world, label, a, b) in [
        (
            World::Square,
            "2-D square, east",
            at(16.0, 16.0),
            at(48.0, 16.0),
        ),
        (
            World::Cylinder,
            "cylinder rv 4, east",
            at(16.0, 16.0),
            at(48.0, 16.0),
        ),
        (
            World::Cylinder,
            "cylinder rv 4, up",
            at(16.0, 16.0),
            at(16.0, 48.0),
        ),
    ] {
        let mut game = game(world, 1e9);
        fill(&mut game);
        move_to(&mut game, b);
        fill(&mut game);
        let loaded = game.streaming().unwrap().loaded().len();
        let mut there = true;
        g.bench_function(label, |bench| {
            bench.iter(|| {
                there = !there;
                move_to(&mut game, if there { b } else { a });
                game.tick();
                game.engine_mut().take_events();
            })
        });
        assert_eq!(
            game.streaming().unwrap().loaded().len(),
            loaded,
            "{label}: nothing loads or releases while it moves back and forth"
        );
    }
    g.finish();
}

fn config() -> Criterion {
    memory();
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = benches; config = config(); targets = vertical_absent, standing, one_section_move }
criterion_main!(benches);
