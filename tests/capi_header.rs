//! `include/world_streaming.h` is generated from `src/capi/` by cbindgen (with `cbindgen.toml`;
//! it reads `mod.rs`, then each file its `mod` lines name)
//! and committed, so C, C++, C#, Godot and Unreal users read it without a Rust toolchain. This
//! test generates it again and fails when the committed one drifts; `WS_BLESS=1 cargo test
//! --test capi_header` rewrites it.

use std::path::Path;

fn generate() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/capi/mod.rs"))
        .generate()
        .expect("cbindgen parses src/capi/");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn the_committed_header_is_what_cbindgen_generates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("include/world_streaming.h");
    let fresh = generate();
    if std::env::var_os("WS_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/world_streaming.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let first = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(fresh.lines().count()));
        panic!(
            "include/world_streaming.h drifted from src/capi/ (first difference at line {}):\n\
             committed: {:?}\n\
             generated: {:?}\n\
             regenerate it with: WS_BLESS=1 cargo test --test capi_header",
            first + 1,
            committed.lines().nth(first).unwrap_or("(end of file)"),
            fresh.lines().nth(first).unwrap_or("(end of file)"),
        );
    }
}

#[test]
fn the_header_declares_every_exported_function() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/capi");
    let mut source = String::new();
    for entry in std::fs::read_dir(&dir).expect("src/capi/") {
        let path = entry.expect("a file of src/capi/").path();
        if path.extension().is_some_and(|e| e == "rs") {
            source += &std::fs::read_to_string(&path).expect("a source file");
        }
    }
    let header = generate();
    let exported: Vec<&str> = source
        .split("extern \"C\" fn ")
        .skip(1)
        .map(|rest| rest.split('(').next().expect("a name"))
        .collect();
    assert!(exported.len() >= 15, "{exported:?}");
    for name in exported {
        assert!(
            header.contains(&format!("{name}(")),
            "{name} is missing from the header"
        );
    }
}
