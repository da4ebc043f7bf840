//! The soak test (ignored by default; run it with
//! `cargo test --release --test soak -- --ignored --nocapture`): 1 000 000 ticks of random
//! driving with JSON and Lua mods and a save/load every 50 000 ticks. Memory must stay flat
//! (the peak RSS is reported) and the final digest must match a rerun.

use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::replay::fnv1a64;

const TICKS: u64 = 1_000_000;

/// A memory figure of this process in KiB (`VmRSS:`, `VmHWM:`), read from `/proc/self/status`.
/// Without it the memory check could not fail, so its absence fails the test.
fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .expect("the memory check reads /proc/self/status (Linux)");
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .filter(|kib| *kib > 0)
        .unwrap_or_else(|| panic!("no {field} figure in /proc/self/status"))
}

/// Runs the soak; returns the digest of every event and the RSS (KiB) at 10% and at the end.
fn soak() -> (u64, u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep_home.json"), r#"{"id": "keep_home", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0}, "cancel": true, "reason": "home"}"#).unwrap();
    std::fs::write(
        dir.path().join("stripes.lua"),
        "on('world.chunk.load', function(c) if c.x % 7 == 3 and c.z % 5 == 0 then return cancel('stripe') end end)\n",
    )
    .unwrap();
    let scene = json!({
        "kits": [
            { "id": "world.ground", "config": { "bounds": { "minX": -20000, "minZ": -20000, "maxX": 20000, "maxZ": 20000 } } },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 6, "budgetMs": 4 } }
        ],
        "mods": ["keep_home.json", "stripes.lua"],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "rides": "car" },
            { "id": "car", "tags": ["vehicle"], "position": { "x": 16, "z": 16 } }
        ],
        "control": "hero"
    });
    let mut game = Game::from_scene_text(
        &scene.to_string(),
        "soak.json",
        dir.path(),
        &builtin_catalog(),
    )
    .unwrap();
    let car = EntityId::new("car");
    let (mut x, mut z, mut heading) = (16.0f64, 16.0f64, 0u64);
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    let mut early = 0;
    let save = dir.path().join("soak.save.json");
    for t in 1..=TICKS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if rng.is_multiple_of(600) {
            heading = (heading + 1 + rng % 3) % 4;
        }
        let step = 0.5 + (rng % 8) as f64 * 0.5;
        match heading {
            0 => x += step,
            1 => z += step,
            2 => x -= step,
            _ => z -= step,
        }
        (x, z) = (x.clamp(-19000.0, 19000.0), z.clamp(-19000.0, 19000.0));
        game.engine_mut().input(t, |e| {
            e.world_mut().move_to(&car, Position::new(x, z)).unwrap()
        });
        game.tick();
        for e in game.engine_mut().take_events() {
            digest ^= fnv1a64(serde_json::to_string(&e).unwrap().as_bytes());
            digest = digest.wrapping_mul(0x0000_0100_0000_01b3);
        }
        if t.is_multiple_of(50_000) {
            game.save(&save).unwrap();
            game.load(&save).unwrap();
        }
        if t == TICKS / 10 {
            early = rss_kib("VmRSS:");
        }
    }
    (digest, early, rss_kib("VmRSS:"))
}

#[test]
#[ignore = "a million ticks twice: run with --release --ignored"]
fn a_million_ticks_keep_memory_flat_and_replay_identically() {
    let (first, early, late) = soak();
    let (second, _, _) = soak();
    println!(
        "digest {first:016x}; RSS {early} KiB at 10%, {late} KiB at the end; peak {} KiB",
        rss_kib("VmHWM:")
    );
    assert_eq!(first, second, "the rerun's digest differs");
    assert!(
        late <= early + early / 4 + 4096,
        "memory grew from {early} KiB to {late} KiB"
    );
}
