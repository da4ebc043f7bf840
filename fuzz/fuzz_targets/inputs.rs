#![no_main]
//! Inputs lines: parsing never panics; parsed inputs (without save/load) run on a fixed game.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::inputs(data));
