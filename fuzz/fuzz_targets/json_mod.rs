#![no_main]
//! JSON mods: parsing and installing never panic; an installed mod answers a drive.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = common::scratch();
    let path = dir.join("m.json");
    if world_streaming::mods::parse_mod(text.to_owned(), &path).is_err() {
        return;
    }
    std::fs::write(&path, text).unwrap();
    if let Ok(mut game) = common::game(&dir, &["m.json"]) {
        common::drive(&mut game);
    }
});
