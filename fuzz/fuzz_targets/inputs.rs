#![no_main]
//! Inputs lines: parsing must never panic; parsed inputs (without save/load) run on a fixed game
//! for at most 64 ticks.

use libfuzzer_sys::fuzz_target;
use world_streaming::files::inputs::Inputs;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(inputs) = Inputs::parse(text, "inputs.jsonl") else { return };
    let inputs = common::without_files(inputs);
    let mut game = common::game(&common::scratch(), &[]).unwrap();
    let target = inputs.last_tick().clamp(1, 64);
    let _ = game.run(&inputs, target);
    let _ = game.state();
});
