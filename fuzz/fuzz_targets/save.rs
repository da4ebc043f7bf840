#![no_main]
//! Save files: checking and loading never panic; a refused save leaves the game unchanged; an
//! accepted one runs on.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else { return };
    let _ = world_streaming::files::save::check(&value);
    let mut game = common::game(&common::scratch(), &[]).unwrap();
    common::drive(&mut game);
    let before = game.state();
    match game.engine_mut().load_document(&value) {
        Ok(()) => common::drive(&mut game),
        Err(_) => assert_eq!(game.state(), before, "a refused save changed the game"),
    }
});
