//! A mesher over complete chunks (docs/meshing.md#the-mesher-walkthrough): `example.mesher`
//! (`examples/kits/mesher.rs`) meshes every chunk `world.streaming` calls complete from its
//! bordered snapshot, on a worker thread, while a player drives east across a terrain world with
//! `neighbours: 1` and edits land on chunk edges and corners. After every tick the example
//! compares the shared edges of every pair of neighbouring meshes bit for bit.
//! Run with `cargo run --example mesher`.

#[path = "kits/mesher.rs"]
mod mesher;

use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::host::EntityId;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

fn main() {
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": {
                "chunkSize": 32, "radius": 3, "budgetMs": 4, "neighbours": 1, "lookAheadTicks": 2 } },
            { "id": "world.terrain", "config": { "seed": 2026, "cellsPerChunk": 32, "commitLatency": 2 } },
            { "id": mesher::ID }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    });
    let mut game = Game::from_scene_text(
        &scene.to_string(),
        "mesher",
        ".".as_ref(),
        &mesher::catalog(mesher::Gate::new()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let terrain = game
        .engine()
        .service::<dyn TerrainService>(TERRAIN)
        .expect("terrain");
    let hero = EntityId::new("hero");
    let (ticks, speed) = (400u64, 2.0);
    let (mut edits, mut pairs, mut most) = (0u64, 0usize, 0usize);
    for t in 1..=ticks {
        let x = 16.0 + speed * t as f64;
        game.engine_mut()
            .input(t, |e| e.world_mut().move_to(&hero, Position::new(x, 16.0)))
            .unwrap_or_else(|e| panic!("{e}"));
        // Every 7 ticks an edit on a corner or an edge of a chunk beside the road, once built.
        if t % 7 == 0 {
            let c = ChunkPos::new((x / 32.0).floor() as i64 + 1, (t / 7 % 3) as i64 - 1);
            let (ox, oz) = (c.x as f64 * 32.0, c.z as f64 * 32.0);
            let at = match t / 7 % 3 {
                0 => Position::new(ox + 0.5, oz + 0.5), // the south-west corner cell
                1 => Position::new(ox + 31.5, oz + 16.0), // on the east edge
                _ => Position::new(ox + 16.0, oz + 31.5), // on the north edge
            };
            if terrain.is_built(c) && game.edit(at, 40_000 + (t as u16 % 97) * 50, None).is_ok() {
                edits += 1;
            }
        }
        game.tick();
        game.engine_mut().take_events();
        let kit = game.kit::<mesher::MesherKit>().expect("enabled");
        let meshes = kit.meshes();
        most = most.max(meshes.len());
        match mesher::check_seams(&meshes) {
            Ok(n) => pairs += n,
            Err(seam) => panic!(
                "tick {t}: a seam between {} and {}: {seam:?}",
                seam.a, seam.b
            ),
        }
        for (c, m) in &meshes {
            assert_eq!(
                terrain.version(*c),
                Some(m.version),
                "tick {t}: {c} is stale"
            );
        }
        // A frame's time for the worker: the next tick installs what it built.
        kit.wait_idle();
    }
    let streaming = game.streaming().expect("streaming");
    let kit = game.kit::<mesher::MesherKit>().expect("enabled");
    let meshes = kit.meshes();
    let s = kit.stats();
    let complete = streaming.complete();
    let kept = meshes.keys().filter(|c| !complete.contains(c)).count();
    println!(
        "{ticks} ticks, {edits} edits on chunk edges and corners: {} chunks loaded, {} complete, {} meshes installed ({kept} of them kept by chunks no longer complete; {} triangles; at most {most} at once)",
        streaming.loaded().len(),
        complete.len(),
        meshes.len(),
        meshes.values().map(|m| m.triangles()).sum::<usize>(),
    );
    println!(
        "mesher: {} snapshots meshed, {} installed ({} re-meshes after a version moved), {} stale results discarded and asked again, {} withdrawn, {} dropped on release, {} orphaned results",
        s.jobs, s.installed, s.remeshed, s.stale, s.withdrawn, s.dropped, s.orphaned
    );
    println!(
        "seams: {pairs} neighbouring mesh pairs compared over the run, every shared vertex and normal bit-identical"
    );
}
