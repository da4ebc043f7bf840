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
#[path = "common/pilot.rs"]
mod pilot;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use world_streaming::game::Game;

use counting::live;
use pilot::{at, fill, move_to};

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
    match world {
        World::Square => pilot::game(None, None, budget),
        World::Disc => pilot::game(Some("disc"), None, budget),
        World::Cylinder => pilot::game(Some("disc"), Some(4), budget),
    }
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
