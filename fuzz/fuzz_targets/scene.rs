#![no_main]
//! Scene files: parsing, checking and building a game must never panic, hang or blow the stack;
//! a scene that builds runs a few ticks.

use libfuzzer_sys::fuzz_target;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = std::path::Path::new("/nonexistent-ws-fuzz");
    if let Ok(mut game) = Game::from_scene_text(text, "scene.json", dir, &builtin_catalog()) {
        let _ = game.run(&Inputs::default(), 3);
        let _ = game.state();
    }
});
