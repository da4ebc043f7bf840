//! How long a scene of 100 000 streamable entities (~10.5 MB of JSON) takes to load, and how much
//! memory it takes at its peak: `cargo run --release --example big_scene [ENTITIES]`.
//!
//! A timed example rather than a test (no timing assertions in tests): it writes the scene to a
//! temporary directory, then times `Game::from_scene_file` (read, parse, check, build the engine,
//! enter the first scene) and counts the heap with a counting global allocator: the peak during
//! the load over the heap before it, and what stays allocated afterwards, per entity.

#[path = "../benches/common/counting.rs"]
mod counting;

use std::time::Instant;

use world_streaming::game::Game;

use counting::{live, peak, start_peak};

#[path = "../tests/common/big_scene.rs"]
mod big_scene;
use big_scene::scene_text;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("big.json");
    let text = scene_text(n);
    std::fs::write(&path, &text).expect("written");
    let size = text.len();
    drop(text);
    let mut best = f64::MAX;
    let mut report = (0, 0);
    for _ in 0..5 {
        let before = live();
        start_peak();
        let start = Instant::now();
        let game = Game::from_scene_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let took = start.elapsed().as_secs_f64();
        let peak = peak() - before;
        let kept = live() - before;
        assert_eq!(game.engine().world().iter().count(), n + 1);
        drop(game);
        if took < best {
            best = took;
            report = (peak, kept);
        }
    }
    let (peak, kept) = report;
    if std::env::var_os("BIG_SCENE_STEPS").is_some() {
        let text = std::fs::read_to_string(&path).unwrap();
        let t = Instant::now();
        let scene: world_streaming::files::scene::SceneFile =
            world_streaming::files::parse_typed(&text, "big.json").unwrap();
        println!("parse_typed: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let problems = scene.problems();
        println!(
            "problems: {:.0} ms ({})",
            t.elapsed().as_secs_f64() * 1e3,
            problems.len()
        );
        let t = Instant::now();
        let world = world_streaming::host::World::restore(scene.entities.clone(), None).unwrap();
        println!(
            "clone + World::restore: {:.0} ms ({})",
            t.elapsed().as_secs_f64() * 1e3,
            world.len()
        );
    }
    println!(
        "{n} entities, {:.1} MB of JSON: loaded in {:.0} ms (best of 5); peak heap {:.1} MB ({:.2}x the file), {:.1} MB kept = {} bytes per entity",
        size as f64 / 1e6,
        best * 1e3,
        peak as f64 / 1e6,
        peak as f64 / size as f64,
        kept as f64 / 1e6,
        kept / (n as isize + 1),
    );
}
