#![no_main]
//! JSON mods: parsing and installing never panic; an installed mod answers a drive.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::mod_file(data, "m.json"));
