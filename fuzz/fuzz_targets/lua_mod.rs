#![no_main]
//! Lua mod sources through the sandbox: never a panic, a hang (instruction budget) or unbounded
//! memory (per-state limit); a loaded mod answers every hook of a drive.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = common::scratch();
    let path = dir.join("m.lua");
    if world_streaming::mods::parse_mod(text.to_owned(), &path).is_err() {
        return;
    }
    std::fs::write(&path, text).unwrap();
    if let Ok(mut game) = common::game(&dir, &["m.lua"]) {
        common::drive(&mut game);
    }
});
