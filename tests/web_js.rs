//! What the JavaScript module's tests (`node --test web/`, docs/web.md#the-javascript-api) take
//! from the native build, checked here so they cannot drift from it:
//! - `web/test/native-events.json`: for each shipped example scene a browser can run (no mods,
//!   no `worldDir`), the line count and FNV-1a 64 of the native `run --events` log, which the JS
//!   test compares the wasm build's `drainEvents()` against. `WS_BLESS=1 cargo test --test web_js`
//!   rewrites the counts and hashes.
//! - `web/package.json`'s version is the crate's.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;
use world_streaming::hash::fnv1a64;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const MANIFEST: &str = "web/test/native-events.json";

fn manifest() -> Value {
    let text = std::fs::read_to_string(repo().join(MANIFEST)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{MANIFEST}: {e}"))
}

/// The native `--events` log of one run of the manifest.
fn native_events(run: &Value) -> Vec<u8> {
    let scene = run["scene"].as_str().expect("scene");
    let mut cmd = Command::cargo_bin("world-streaming").unwrap();
    cmd.current_dir(repo())
        .args(["run", scene, "-q", "--events", "-"]);
    if let Some(inputs) = run.get("inputs").and_then(Value::as_str) {
        cmd.args(["--inputs", inputs]);
    }
    if let Some(ticks) = run.get("ticks").and_then(Value::as_u64) {
        cmd.args(["--ticks", &ticks.to_string()]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{scene}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn the_event_logs_the_js_tests_expect_are_the_native_clis() {
    let mut doc = manifest();
    let bless = std::env::var_os("WS_BLESS").is_some();
    let mut stale = Vec::new();
    for run in doc["runs"].as_array_mut().unwrap() {
        let log = native_events(run);
        let lines = log.iter().filter(|&&b| b == b'\n').count() as u64;
        let hash = format!("{:016x}", fnv1a64(&log));
        if bless {
            run["lines"] = lines.into();
            run["fnv1a64"] = hash.into();
        } else if run["lines"] != lines || run["fnv1a64"] != hash.as_str() {
            stale.push(format!(
                "{}: the native log has {lines} lines, FNV-1a 64 {hash}; {MANIFEST} says {} lines, {}",
                run["scene"], run["lines"], run["fnv1a64"]
            ));
        }
    }
    if bless {
        let mut text = serde_json::to_string_pretty(&doc).unwrap();
        text.push('\n');
        std::fs::write(repo().join(MANIFEST), text).unwrap();
    }
    assert!(
        stale.is_empty(),
        "{MANIFEST} is stale (regenerate: WS_BLESS=1 cargo test --test web_js):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_js_tests_replay_every_shipped_example_scene_without_mods_or_a_world_directory() {
    let doc = manifest();
    let listed: Vec<&str> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["scene"].as_str().unwrap())
        .collect();
    let mut expected = Vec::new();
    for entry in std::fs::read_dir(repo().join("examples/scenes")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !name.ends_with(".json") {
            continue;
        }
        let scene: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let has_mods = scene
            .get("mods")
            .and_then(Value::as_array)
            .is_some_and(|m| !m.is_empty());
        let has_world_dir = scene["kits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["config"].get("worldDir").is_some());
        if !has_mods && !has_world_dir {
            expected.push(format!("examples/scenes/{name}"));
        }
    }
    expected.sort();
    let mut got: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    got.sort();
    assert_eq!(
        got, expected,
        "{MANIFEST} lists other scenes than the runnable ones"
    );
    // Each run names files that exist beside its scene.
    for run in doc["runs"].as_array().unwrap() {
        let dir = repo()
            .join(run["scene"].as_str().unwrap())
            .parent()
            .unwrap()
            .to_owned();
        for f in run["files"].as_array().unwrap() {
            let f = f.as_str().unwrap();
            assert!(dir.join(f).is_file(), "{}: {f} is missing", run["scene"]);
        }
    }
}

#[test]
fn the_npm_package_has_the_crates_version_and_no_dependency() {
    let text = std::fs::read_to_string(repo().join("web/package.json")).unwrap();
    let package: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(package["name"], "world-streaming");
    assert_eq!(
        package["version"],
        env!("CARGO_PKG_VERSION"),
        "web/package.json's version must be Cargo.toml's"
    );
    assert_eq!(package["type"], "module");
    for key in ["dependencies", "peerDependencies", "optionalDependencies"] {
        assert!(package.get(key).is_none(), "web/package.json has {key}");
    }
    let files: Vec<&str> = package["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in [
        "world-streaming.js",
        "world-streaming.d.ts",
        "world_streaming.wasm",
    ] {
        assert!(files.contains(&f), "web/package.json's files lack {f}");
    }
}
