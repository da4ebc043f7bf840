//! The big scene of `examples/big_scene.rs` and `tests/alloc.rs`, written once.

/// The scene: a player, and `n` streamable crates on a 1 km grid of rows, each with two tags.
pub fn scene_text(n: usize) -> String {
    let mut s = String::with_capacity(n * 110);
    s.push_str(
        r#"{"kits": [{"id": "world.ground"}, {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 2}}],
"entities": [{"id": "hero", "tags": ["player"], "position": {"x": 8, "z": 8}}"#,
    );
    for i in 0..n {
        let (x, z) = (
            (i % 1000) as f64 * 3.25 - 1500.0,
            (i / 1000) as f64 * 7.5 - 400.0,
        );
        s.push_str(&format!(
            ",\n{{\"id\": \"crate-{i:06}\", \"tags\": [\"streamable\", \"loot\"], \"position\": {{\"x\": {x}, \"y\": 1.5, \"z\": {z}}}}}"
        ));
    }
    s.push_str("]}\n");
    s
}
