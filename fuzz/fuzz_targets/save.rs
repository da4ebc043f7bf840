#![no_main]
//! Save files: checking and loading never panic; a refused save leaves the game unchanged.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::save(data));
