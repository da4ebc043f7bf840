//! Dropping a game joins every terrain worker, even with a thousand jobs queued. Alone in its
//! test binary, so that the process's thread count is this test's.

use serde_json::json;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

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
    assert!(thread_count() >= before + 4);
    drop(g);
    assert_eq!(thread_count(), before, "every worker joined");
}
