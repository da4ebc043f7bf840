//! `workers: "inline"` starts no thread (docs/reference/terrain.md#inline): neither a worker nor
//! the save thread, with LOD blocks, edits, a world directory and a save. Alone in its test
//! binary, so that the process's thread count is this test's.

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::TerrainKit;

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// The thread count once it has come down to `want`, or what it still is after 10 s. A joined
/// thread can still be listed for a moment: `join` returns when the thread has cleared its id,
/// and the kernel drops its entry in `/proc/self/task` just after (seen on a loaded machine: one
/// more thread than `want` right after the drop).
fn thread_count_settled(want: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let n = thread_count();
        if n == want || std::time::Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn scene(workers: Value, world: &std::path::Path) -> Value {
    json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": {
                "radius": 2, "budgetMs": 8, "lod": [ { "step": 2, "radius": 6 } ] } },
            { "id": "world.terrain", "config": {
                "workers": workers, "cellsPerChunk": 8, "commitLatency": 1,
                "worldDir": world, "flushEveryTicks": 5 } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    })
}

/// Runs a drive east with edits to tick 24, saving on the way, and returns the game with the
/// thread counts seen after the start, every tick and the save.
fn drive(workers: Value, world: &std::path::Path) -> (Game, Vec<usize>) {
    let mut g = Game::from_scene_text(
        &scene(workers, world).to_string(),
        "scene.json",
        ".".as_ref(),
        &builtin_catalog(),
    )
    .unwrap();
    let mut seen = vec![thread_count()];
    for t in 1..=24u64 {
        let x = 16 + 20 * t;
        let text = format!(
            "{{\"tick\": {t}, \"do\": \"move\", \"entity\": \"hero\", \"to\": {{\"x\": {x}, \"z\": 16}}}}\n\
             {{\"tick\": {t}, \"do\": \"edit\", \"at\": {{\"x\": {x}, \"z\": 16}}, \"height\": {}}}\n",
            1000 + t
        );
        // This tick's inputs only: `run` applies every line due from the first.
        g.run(&Inputs::parse(&text, "inputs.jsonl").unwrap(), t)
            .unwrap();
        seen.push(thread_count());
        if t == 12 {
            g.save(&world.with_extension("save.json")).unwrap();
            seen.push(thread_count());
        }
    }
    (g, seen)
}

#[test]
fn inline_terrain_starts_no_thread() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("world");
    let before = thread_count();
    assert!(before >= 1, "the count reads /proc/self/task");

    let (g, seen) = drive(json!("inline"), &world);
    assert_eq!(g.kit::<TerrainKit>().unwrap().threads(), 0);
    assert!(seen.iter().all(|n| *n == before), "{before}: {seen:?}");
    // It built terrain and blocks, and wrote edits into the world directory.
    let log: Vec<&str> = g.engine().events().iter().map(|e| &*e.event).collect();
    assert!(log.contains(&"world.terrain.built") && log.contains(&"world.terrain.lod.built"));
    g.close().unwrap();
    let regions = std::fs::read_dir(&world)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("wsr".as_ref()))
        .count();
    assert!(regions > 0, "edits written back");
    assert_eq!(thread_count_settled(before), before);

    // The count sees threads: one worker and the save thread.
    let (g, seen) = drive(json!(1), &dir.path().join("world1"));
    assert_eq!(g.kit::<TerrainKit>().unwrap().threads(), 2);
    assert!(seen.iter().all(|n| *n == before + 2), "{before}: {seen:?}");
    drop(g);
    assert_eq!(thread_count_settled(before), before, "every thread joined");
}
