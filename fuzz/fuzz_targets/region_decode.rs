#![no_main]
//! Region files: decoding never panics, what it keeps is consistent with what it reports as
//! damaged, and re-encoding what it kept decodes to the same chunks.

use libfuzzer_sys::fuzz_target;

#[path = "region_checks.rs"]
mod region_checks;

fuzz_target!(|data: &[u8]| region_checks::region_decode(data));
