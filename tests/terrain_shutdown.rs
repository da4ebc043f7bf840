//! Dropping a game joins every terrain worker, even with a thousand jobs queued. Alone in its
//! test binary, so that the process's thread count is this test's.

use serde_json::json;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::config::worker_threads_for;

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

#[test]
fn dropping_a_game_with_a_thousand_jobs_queued_joins_every_worker() {
    let before = thread_count();
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "radius": 16, "budgetMs": 1e9 } },
            { "id": "world.terrain", "config": { "workers": 4, "cellsPerChunk": 256 } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    });
    let mut g = Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap();
    g.tick();
    assert_eq!(
        g.streaming().unwrap().loaded().len(),
        33 * 33,
        "1 089 jobs dispatched"
    );
    // `workers` 4 starts at most one a core.
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    assert!(thread_count() >= before + worker_threads_for(4, cores));
    drop(g);
    assert_eq!(thread_count(), before, "every worker joined");
}
