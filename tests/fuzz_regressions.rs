//! Every input a fuzz target ever crashed on (and a few hostile seeds written by hand) lives in
//! `fuzz/regressions/<target>/` and is replayed here through the same code as the fuzz target
//! (`fuzz/fuzz_targets/common.rs`), so a fixed crash stays fixed without running the fuzzer.

#[path = "../fuzz/fuzz_targets/common.rs"]
mod common;

use std::path::Path;

fn each(target: &str, run: impl Fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has regression inputs", dir.display());
    for file in files {
        let data = std::fs::read(&file).unwrap();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&data)));
        assert!(outcome.is_ok(), "{} panicked", file.display());
    }
}

#[test]
fn scene_regressions() {
    each("scene", common::scene);
}

#[test]
fn inputs_regressions() {
    each("inputs", common::inputs);
}

#[test]
fn json_mod_regressions() {
    each("json_mod", |d| common::mod_file(d, "m.json"));
}

#[test]
fn lua_mod_regressions() {
    each("lua_mod", |d| common::mod_file(d, "m.lua"));
}

#[test]
fn save_regressions() {
    each("save", common::save);
}
