//! A steady tick allocates nothing: a counting global allocator (test-only, the one `unsafe` in
//! the repository: it only forwards to the system allocator) counts the allocations made while
//! the focus stays in its chunk with everything loaded, with and without streamable entities and
//! a JSON mod.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a plain
// thread-local cell that does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
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
