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

#[path = "../fuzz/fuzz_targets/region_checks.rs"]
mod region_checks;

/// Every file of `fuzz/seeds/<target>` and `fuzz/regressions/<target>` (either may be absent).
fn region_inputs(target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for dir in [
        root.join("seeds").join(target),
        root.join("regressions").join(target),
    ] {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            files.extend(entries.map(|e| e.unwrap().path()));
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let data = std::fs::read(&f).unwrap();
            (f, data)
        })
        .collect()
}

/// The region seeds are the regions `region_checks::seeds` encodes with this build's format;
/// `WS_BLESS=1` rewrites them.
#[test]
fn region_seeds_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (name, bytes) in region_checks::seeds() {
        let path = root.join(&name);
        if std::env::var_os("WS_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let found = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (WS_BLESS=1 writes it)", path.display()));
        assert!(found == bytes, "{} is stale (WS_BLESS=1)", path.display());
    }
}

#[test]
fn region_decode_regressions() {
    let inputs = region_inputs("region_decode");
    assert!(inputs.len() >= 4);
    for (file, data) in inputs {
        let outcome = std::panic::catch_unwind(|| region_checks::region_decode(&data));
        assert!(outcome.is_ok(), "{} panicked", file.display());
    }
}

#[test]
fn region_record_regressions() {
    let inputs = region_inputs("region_record");
    assert!(inputs.len() >= 3);
    for (file, data) in inputs {
        let outcome = std::panic::catch_unwind(|| region_checks::region_record(&data));
        assert!(outcome.is_ok(), "{} panicked", file.display());
    }
}
