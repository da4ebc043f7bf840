#![no_main]
//! Scene files: parsing, checking and building a game never panic, hang or blow the stack.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::scene(data));
