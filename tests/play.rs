//! The live page (docs/web.md#the-live-page): `world-streaming play SCENE --out play.html`.
//!
//! Natively: a play session ([`Live`]) captures the SAME frames as the replay viewer's capture of
//! the same run, and the recording it saves is the one `run --record` writes (so `replay`
//! verifies it). In a real headless Chromium (as tests/view.rs drives it): the page built with
//! the kit's wasm module draws its first tick, Step / Start / Pause run the game, a page driven by
//! key presses saves a recording that the native `replay` verifies, and a recording made natively
//! of every shipped example scene a browser can run replays in the page with identical digests.

#[path = "common/chromium.rs"]
mod chromium;

use std::path::Path;

use serde_json::Value;
use world_streaming::files::inputs::Inputs;
use world_streaming::replay::{Recording, Verdict};
use world_streaming::view::{capture, terrain_height, Live};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The example scenes a browser can run (no Lua mod, no `worldDir`), by name.
fn web_examples() -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(repo().join("examples/scenes")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let scene: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let lua = scene["mods"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m.as_str().unwrap().ends_with(".lua"));
        let world_dir = scene["kits"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|k| k["config"].get("worldDir").is_some());
        if !lua && !world_dir {
            names.push(stem.to_owned());
        }
    }
    names.sort();
    names
}

/// A native recording of example `name`, run to its last input's tick (at least `min` ticks).
fn record_example(name: &str, min: u64) -> Recording {
    let scene = repo().join(format!("examples/scenes/{name}.json"));
    let inputs_file = repo().join(format!("examples/scenes/{name}.inputs.jsonl"));
    let inputs = if inputs_file.exists() {
        Inputs::read(&inputs_file).unwrap()
    } else {
        Inputs::default()
    };
    Recording::record(&scene, &inputs, inputs.last_tick().max(min)).unwrap()
}

/// A session of `recording`'s scene and inputs (its steps dropped: none to check against).
fn session(recording: &Recording) -> Live {
    let fresh = Recording {
        steps: Vec::new(),
        ticks: 0,
        ..recording.clone()
    };
    Live::from_recording(&fresh, "test").unwrap()
}

/// Every example a browser can run: the session's frames, taken in batches as a page takes them
/// and put together, are the viewer's frames of the same run; its names and ids likewise; its
/// recording is the native one, step for step, and `replay` verifies it.
#[test]
fn a_session_captures_the_viewers_frames_and_records_the_native_run() {
    let names = web_examples();
    assert!(names.len() >= 8, "{names:?}");
    for name in names {
        let recording = record_example(&name, 20);
        let data = capture(&recording, "test", Some(&terrain_height)).unwrap();
        let mut live = session(&recording);
        let mut got = live.take();
        let mut frames = got["frames"].as_array().unwrap().clone();
        let mut names_seen: Vec<Value> = got["names"].as_array().unwrap().clone();
        let mut ids: Vec<Value> = got["ids"].as_array().unwrap().clone();
        // In uneven batches: 1, 2, 3, … ticks at a time.
        let mut batch = 1;
        while live.game().engine().tick_count() < recording.ticks {
            let n = batch.min(recording.ticks - live.game().engine().tick_count());
            live.tick(n).unwrap();
            got = live.take();
            frames.extend(got["frames"].as_array().unwrap().iter().cloned());
            names_seen.extend(got["names"].as_array().unwrap().iter().cloned());
            ids.extend(got["ids"].as_array().unwrap().iter().cloned());
            batch += 1;
        }
        let want = serde_json::to_value(&data).unwrap();
        assert_eq!(Value::Array(frames), want["frames"], "{name}: the frames");
        assert_eq!(Value::Array(names_seen), want["names"], "{name}: the names");
        assert_eq!(Value::Array(ids), want["ids"], "{name}: the ids");
        let header = serde_json::to_value(live.header()).unwrap();
        for key in ["format", "version", "chunkSize"] {
            assert_eq!(header[key], want[key], "{name}: {key}");
        }
        let saved = live.recording();
        assert_eq!(saved.steps, recording.steps, "{name}: the steps");
        assert_eq!(saved.inputs, recording.inputs, "{name}: the inputs applied");
        assert_eq!(saved, &recording, "{name}: the recording");
        assert_eq!(
            saved.verify().unwrap(),
            Verdict::Same {
                ticks: recording.steps.len()
            }
        );
    }
}
