#![no_main]
//! Lua mod sources through the sandbox: no panic, no hang (instruction budget), no unbounded
//! memory (per-state limit); a loaded mod answers every hook of a drive.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::mod_file(data, "m.lua"));
