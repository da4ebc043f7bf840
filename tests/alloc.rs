//! A steady tick allocates nothing: a counting global allocator (test-only, the one `unsafe` in
//! the repository: it only forwards to the system allocator) counts the allocations made while
//! the focus stays in its chunk with everything loaded, with and without streamable entities and
//! a JSON mod. It also counts bytes: loading a big scene peaks under 5× the file's size and keeps
//! a bounded number of bytes per entity.

#[path = "common/big_scene.rs"]
mod big_scene;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated and not yet freed by this thread, and the most there were.
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn grow(n: usize) {
    LIVE.with(|l| {
        l.set(l.get() + n as i64);
        PEAK.with(|p| p.set(p.get().max(l.get())));
    });
}

fn shrink(n: usize) {
    LIVE.with(|l| l.set(l.get() - n as i64));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a plain
// thread-local cell that does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        grow(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        grow(new_size);
        shrink(layout.size());
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn a_steady_tick_allocates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("keep_home.json"),
        r#"{"id": "keep_home", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0}, "cancel": true}"#,
    )
    .unwrap();
    let mut entities = vec![
        serde_json::json!({ "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 }, "rides": "car" }),
        serde_json::json!({ "id": "car", "tags": ["vehicle"], "position": { "x": 16, "z": 16 } }),
    ];
    for i in 0..1000 {
        entities.push(serde_json::json!({ "id": format!("e{i}"), "tags": ["streamable"], "position": { "x": i * 7 - 3500, "z": i * 3 } }));
    }
    let scene = serde_json::json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": { "radius": 8, "budgetMs": 1000 } } ],
        "mods": ["keep_home.json"],
        "entities": entities,
        "control": "hero"
    });
    let mut game = world_streaming::game::Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        dir.path(),
        &world_streaming::kits::builtin_catalog(),
    )
    .unwrap();
    for _ in 0..3 {
        game.tick();
    }
    assert_eq!(game.engine().variables().count("world.chunks.pending"), 0);
    let before = allocations();
    for _ in 0..1000 {
        game.tick();
    }
    assert_eq!(
        allocations() - before,
        0,
        "allocations in 1000 steady ticks"
    );
    // Control: the counter does count (a tick that loads allocates for its events).
    let car = world_streaming::host::EntityId::new("car");
    game.engine_mut().input(1004, |e| {
        e.world_mut()
            .move_to(&car, world_streaming::grid::Position::new(100.0, 16.0))
            .unwrap()
    });
    let before = allocations();
    game.tick();
    assert!(allocations() > before);
}

#[test]
fn a_big_scene_loads_within_5x_its_size_and_keeps_a_few_hundred_bytes_per_entity() {
    // 20 000 streamable crates with two tags (as examples/big_scene.rs, which times 100 000).
    let n = 20_000;
    let text = big_scene::scene_text(n);
    let catalog = world_streaming::kits::builtin_catalog();
    // Interned tag names and lazily built statics are made once, before counting.
    drop(world_streaming::game::Game::from_scene_text(
        &text[..text.find(",\n").unwrap()]
            .replace("}}\"", "}}]}")
            .to_string(),
        "warm.json",
        ".".as_ref(),
        &catalog,
    ));
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let game =
        world_streaming::game::Game::from_scene_text(&text, "big.json", ".".as_ref(), &catalog)
            .unwrap();
    let peak = PEAK.with(Cell::get) - before;
    let kept = LIVE.with(Cell::get) - before;
    assert_eq!(game.engine().world().len(), n + 1);
    assert!(
        (peak as f64) <= 5.0 * text.len() as f64,
        "peak {peak} bytes for a {} byte scene",
        text.len()
    );
    eprintln!(
        "peak {peak} ({:.2}x), kept {kept}",
        peak as f64 / text.len() as f64
    );
    let per_entity = kept / (n as i64 + 1);
    assert!(per_entity <= 450, "{per_entity} bytes kept per entity");
}

#[test]
fn a_started_district_world_holds_under_64_bytes_per_unloaded_entity() {
    // docs/reference/district.md#district-scale-goals: 50 000 district entities over 500 chunks,
    // none loaded (the focus is elsewhere).
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for c in 0..500i64 {
        for k in 0..100i64 {
            let (x, z) = (
                1000.0 + (c % 25) as f64 * 32.0 + k as f64 * 0.3,
                (c / 25) as f64 * 32.0,
            );
            text.push_str(&format!(
                "{{\"id\":\"e{c}_{k}\",\"tags\":[\"crate\"],\"position\":{{\"x\":{x},\"z\":{z}}}}}\n"
            ));
        }
    }
    std::fs::write(dir.path().join("d.jsonl"), &text).unwrap();
    let scene = serde_json::json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 0 } },
            { "id": "world.district", "config": { "districts": ["d.jsonl"] } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ]
    })
    .to_string();
    let catalog = world_streaming::kits::builtin_catalog();
    let start = || {
        world_streaming::game::Game::from_scene_text(&scene, "s.json", dir.path(), &catalog)
            .unwrap()
    };
    drop(start()); // interned names and lazy statics, made once before counting
    let before = LIVE.with(Cell::get);
    let game = start();
    let kept = LIVE.with(Cell::get) - before;
    assert_eq!(game.state().district.unwrap().stored, 50_000);
    assert_eq!(game.engine().world().len(), 1, "nothing materialised");
    let per_entity = kept as f64 / 50_000.0;
    eprintln!("a started district world keeps {kept} bytes = {per_entity:.1} per entity");
    assert!(
        per_entity < 64.0,
        "{per_entity} bytes kept per unloaded entity"
    );
}

#[test]
fn a_steady_tick_with_levels_of_detail_allocates_nothing() {
    // docs/reference/lod.md#lod-levels: with `lod`, a tick in which nothing moved plans nothing and
    // the hole count is kept, not recounted: no allocation either, with one player and with two.
    for two in [false, true] {
        let mut entities = vec![
            serde_json::json!({ "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } }),
        ];
        if two {
            entities.push(serde_json::json!({ "id": "friend", "tags": ["player"], "position": { "x": 400, "z": -90 } }));
        }
        let scene = serde_json::json!({
            "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": {
                "focus": "players", "radius": 4, "budgetMs": 1000,
                "lod": [ { "step": 2, "radius": 10 }, { "step": 8, "radius": 40 } ], "lodBudget": 4096 } } ],
            "entities": entities,
        });
        let mut game = world_streaming::game::Game::from_scene_text(
            &scene.to_string(),
            "scene.json",
            std::path::Path::new("."),
            &world_streaming::kits::builtin_catalog(),
        )
        .unwrap();
        for _ in 0..3 {
            game.tick();
        }
        let vars = game.engine().variables();
        assert_eq!(vars.count("world.chunks.pending"), 0);
        assert_eq!(vars.count("world.lod.holes"), 0);
        assert!(vars.count("world.lod.loaded") > 100);
        let before = allocations();
        for _ in 0..1000 {
            game.tick();
        }
        assert_eq!(
            allocations() - before,
            0,
            "allocations in 1000 steady ticks with lod (two players: {two})"
        );
        // Control: a tick that moves the player (blocks load and go) allocates.
        let hero = world_streaming::host::EntityId::new("hero");
        let tick = game.engine().tick_count() + 1;
        game.engine_mut().input(tick, |e| {
            e.world_mut()
                .move_to(&hero, world_streaming::grid::Position::new(16.0, 900.0))
                .unwrap()
        });
        let before = allocations();
        game.tick();
        assert!(allocations() > before);
    }
}

/// The most bytes live at once while `f` runs, above those live when it starts.
fn peak_during(f: impl FnOnce()) -> i64 {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    f();
    PEAK.with(Cell::get) - start
}

/// Levels of detail of radius 1024 (the most a scene or a mod may ask for) cost what a tick
/// changed, not their area (see docs/lod.md, "What a tick costs"): six players far apart, each
/// with 2049² chunks within the last level's radius (25 M chunks, 6.3 M blocks of step 2 in
/// all). Nothing loading (`lodBudget` 0): the first tick, then ticks where every player
/// teleports. Then 4096 blocks a tick, while a mod replaces the levels and the radius every
/// tick. Counted in bytes live at each tick's peak (the planner held an entry per wanted block
/// and per hole chunk: 1.36 GB for the first tick); the hole count is exact all along (the
/// area minus the chunks and blocks ready there).
#[test]
fn levels_of_detail_of_radius_1024_cost_what_changed_not_their_area() {
    use serde_json::json;
    use world_streaming::kits::streaming::{StreamingService, STREAMING};
    let entities: Vec<serde_json::Value> = (0..6)
        .map(|i| json!({ "id": format!("p{i}"), "tags": ["player"], "position": { "x": i * 200_000 + 16, "z": 16 } }))
        .collect();
    let scene = json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming", "config": {
            "focus": "players", "radius": 2, "budgetMs": 4,
            "lod": [ { "step": 2, "radius": 1024 } ], "lodBudget": 0 } } ],
        "entities": entities,
    });
    let mut game = world_streaming::game::Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        std::path::Path::new("."),
        &world_streaming::kits::builtin_catalog(),
    )
    .unwrap();
    let area: u64 = 6 * 2049 * 2049;
    let mut peaks = Vec::new();
    let mut tick = |game: &mut world_streaming::game::Game, to: Option<f64>| {
        let t = game.engine().tick_count() + 1;
        if let Some(z) = to {
            game.engine_mut().input(t, |e| {
                for i in 0..6 {
                    let id = world_streaming::host::EntityId::new(&format!("p{i}"));
                    let at = world_streaming::grid::Position::new(i as f64 * 200_000.0 + 16.0, z);
                    e.world_mut().move_to(&id, at).unwrap();
                }
            });
        }
        peaks.push(peak_during(|| game.tick()));
        game.engine_mut().take_events();
    };
    let holes = |game: &world_streaming::game::Game| {
        let vars = game.engine().variables();
        (
            vars.count("world.lod.holes"),
            vars.count("world.chunks.loaded"),
            vars.count("world.lod.loaded"),
        )
    };
    tick(&mut game, None);
    let (h, chunks, blocks) = holes(&game);
    assert_eq!((h + chunks, blocks), (area, 0), "nothing but chunks ready");
    for i in 1..=4 {
        tick(&mut game, Some(i as f64 * 1_000_000.0));
        let (h, chunks, _) = holes(&game);
        assert_eq!(h + chunks, area, "teleport {i}");
    }
    // 4096 blocks a tick, the levels and the radius replaced every tick (as a mod's `set`).
    let service = game
        .engine()
        .service::<dyn StreamingService>(STREAMING)
        .unwrap();
    let by = world_streaming::host::ModId::new("toggler");
    for i in 0..6 {
        let set = if i % 2 == 0 {
            json!({ "lod": [ { "step": 2, "radius": 1024 } ], "lodBudget": 4096, "radius": 3 })
        } else {
            json!({ "lod": [ { "step": 4, "radius": 1000 } ], "lodBudget": 4096, "radius": 2 })
        };
        service.set(&by, serde_json::from_value(set).unwrap());
        tick(&mut game, None);
        let (h, _, blocks) = holes(&game);
        assert!(
            blocks > 0 && h < area,
            "blocks load ({blocks}), holes go ({h})"
        );
    }
    eprintln!("peaks (bytes): {peaks:?}");
    let most = *peaks.iter().max().unwrap();
    assert!(most < 16 << 20, "{peaks:?}");
}

/// A district scene (radius 0, the hero far from every home) over `dir`'s `d.jsonl`.
fn district_scene() -> String {
    serde_json::json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 0 } },
            { "id": "world.district", "config": { "districts": ["d.jsonl"] } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": -1000, "z": -1000 } } ]
    })
    .to_string()
}

/// Starts the district scene over `dir`: the result, and the most heap it held at once over
/// what it held before (this thread's, where the index is built).
fn district_start(dir: &std::path::Path) -> (Result<world_streaming::game::Game, String>, i64) {
    let catalog = world_streaming::kits::builtin_catalog();
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let game =
        world_streaming::game::Game::from_scene_text(&district_scene(), "s.json", dir, &catalog)
            .map_err(|e| e.to_string());
    (game, PEAK.with(Cell::get) - before)
}

/// Docs/district.md (a district line is read through its cap): a line is held only up to the
/// longest a district line may be (19 200 bytes). A line of 32 MiB without a newline, or with
/// a 32 MiB `data` string, used to be read whole before it was refused (a 1 GiB file without a
/// newline cost 1 GB of memory); now it is refused naming the file, the line and its length,
/// and starting costs under 1 MiB of heap.
#[test]
fn a_district_line_past_the_cap_is_refused_without_being_held() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.jsonl"), "").unwrap();
    drop(district_start(dir.path()).0.unwrap()); // lazy statics, made once before counting
    let first = r#"{"id":"a","position":{"x":1,"z":1}}"#;
    let long = 32 << 20;
    let data_line = format!(
        r#"{{"id":"b","position":{{"x":1,"z":1}},"data":{{"s":"{}"}}}}"#,
        "x".repeat(long)
    );
    for (text, len) in [
        (format!("{first}\n{}", "x".repeat(long)), long),
        (format!("{first}\n{data_line}\n"), data_line.len()),
    ] {
        std::fs::write(dir.path().join("d.jsonl"), &text).unwrap();
        drop(text);
        let (game, peak) = district_start(dir.path());
        let err = game.err().expect("refused");
        assert!(
            err.contains(&format!(
                "d.jsonl: line 2: a line of {len} bytes: a district line is at most 19200 bytes"
            )),
            "{err}"
        );
        assert!(peak < 1 << 20, "starting held {peak} bytes at its peak");
    }
}

/// Docs/district.md (Measured: start, peak memory): the index is built without the entities'
/// lines and with a few bytes per line; the peak of a start grows by under 64 bytes per
/// district entity (heap, counting allocator; 131 072 entities against 1 024, powers of two so
/// that no vector is counted with room it has not used). It used to be about 145 (each line
/// read kept as a 48-byte entry, then copied into a 56-byte one to be sorted).
#[test]
fn a_district_start_peaks_under_64_bytes_per_entity() {
    let dir = tempfile::tempdir().unwrap();
    let write = |n: usize| {
        let mut text = String::new();
        for k in 0..n {
            let (x, z) = ((k / 100 % 64) as f64 * 32.0 + 1.0, (k / 6400) as f64 * 32.0);
            text.push_str(&format!(
                "{{\"id\":\"e{k}\",\"tags\":[\"crate\"],\"position\":{{\"x\":{x},\"z\":{z}}}}}\n"
            ));
        }
        std::fs::write(dir.path().join("d.jsonl"), text).unwrap();
    };
    write(10);
    drop(district_start(dir.path()).0.unwrap()); // lazy statics, made once before counting
    let mut peaks = Vec::new();
    for n in [1024, 131_072] {
        write(n);
        let (game, peak) = district_start(dir.path());
        assert_eq!(game.unwrap().state().district.unwrap().stored, n as u64);
        peaks.push(peak);
    }
    let per_entity = (peaks[1] - peaks[0]) as f64 / (131_072.0 - 1024.0);
    eprintln!("district start peaks {peaks:?}: {per_entity:.1} bytes per entity");
    assert!(
        per_entity < 64.0,
        "{per_entity:.1} bytes per entity at the peak"
    );
}
