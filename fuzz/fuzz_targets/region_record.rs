#![no_main]
//! One chunk record (`region::decode_record`): never panics, never reads past the length it is
//! given, and a record it accepts re-encodes to one that decodes the same.

use libfuzzer_sys::fuzz_target;

#[path = "region_checks.rs"]
mod region_checks;

fuzz_target!(|data: &[u8]| region_checks::region_record(data));
