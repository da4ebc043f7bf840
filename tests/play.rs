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

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use world_streaming::files::inputs::Inputs;
use world_streaming::grid::ChunkPos;
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

// ---- In the browser ----

/// The kit's wasm module, built with scripts/build-web.sh when it is absent (once: the tests
/// of this file run in parallel).
fn wasm() -> PathBuf {
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _once = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let path = chromium::target_dir().join("wasm32-unknown-unknown/release/world_streaming.wasm");
    if !path.exists() {
        eprintln!(
            "no {}: building it with scripts/build-web.sh",
            path.display()
        );
        let status = std::process::Command::new("bash")
            .arg(repo().join("scripts/build-web.sh"))
            .status();
        assert!(
            status.is_ok_and(|s| s.success()) && path.exists(),
            "the live page's tests need the kit's wasm module {}; scripts/build-web.sh could not \
             build it (see its output above)",
            path.display()
        );
    }
    path
}

/// `world-streaming play ARGS --out <dir>/<name>.html`, with the wasm module.
fn write_play_page(dir: &Path, name: &str, args: &[&Path]) -> PathBuf {
    let out = dir.join(format!("{name}.html"));
    let mut cmd = common::bin();
    cmd.arg("play");
    for a in args {
        cmd.arg(a);
    }
    cmd.arg("--out").arg(&out).arg("--wasm").arg(wasm());
    let done = cmd.output().unwrap();
    assert!(
        done.status.success(),
        "play failed: {}",
        String::from_utf8_lossy(&done.stderr)
    );
    out
}

const READY: &str = "document.body && (document.body.dataset.playReady === '1' || \
                     document.body.dataset.failed === '1')";

/// Opens a live page and waits until its controller has started (failing with what it says
/// when the kit did not start).
fn open_play(page: &mut chromium::Page<'_>, file: &Path, fragment: &str) {
    page.open_at(file, fragment, READY);
    let failed = page.eval("document.body.dataset.failed === '1'");
    assert_eq!(
        failed,
        Value::Bool(false),
        "the page did not start: {}",
        page.eval("document.getElementById('play-status').textContent")
    );
}

/// The tick the page's game is at (`data-tick` of the body, from the module's status).
fn game_tick(page: &mut chromium::Page<'_>) -> u64 {
    page.eval("Number(document.body.dataset.tick)")
        .as_u64()
        .unwrap()
}

/// The recordings (`*.replay.json`) in `dir`.
fn recordings_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".replay.json"))
        .collect()
}

/// Clicks "Save recording" and waits for the download in `dir` (the only recording there: those
/// before are removed first), named `file` (the browser may replace characters a file name
/// should not hold); answers its path and the recording.
fn save_recording(page: &mut chromium::Page<'_>, dir: &Path, file: &str) -> (PathBuf, Recording) {
    for old in recordings_in(dir) {
        std::fs::remove_file(old).unwrap();
    }
    page.click("save");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let [path] = recordings_in(dir).as_slice() {
            if std::fs::read_to_string(path).is_ok_and(|t| t.ends_with('\n')) {
                return (path.clone(), Recording::read(path).unwrap());
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no download {file} in {} after 30 s",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads the canvas pixel at the centre of each chunk (with the page's own geometry).
fn pixels_at(page: &mut chromium::Page<'_>, cells: &[ChunkPos]) -> Vec<Vec<u64>> {
    let list: Vec<[i64; 2]> = cells.iter().map(|c| [c.x, c.z]).collect();
    let v = page.eval(&format!(
        "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
         const ctx = c.getContext('2d'); const cell = Number(d.cell); \
         return {list:?}.map(([x, z]) => {{ \
           const px = Number(d.ox) + (x - Number(d.originX) + 0.15) * cell; \
           const pz = Number(d.oz) + (z - Number(d.originZ) + 0.15) * cell; \
           return Array.from(ctx.getImageData(Math.floor(px), Math.floor(pz), 1, 1).data.slice(0, 3)); }}); }})()"
    ));
    serde_json::from_value(v).unwrap()
}

/// The page draws its first tick: it opens on tick 0; Step runs tick 1 in the module and the
/// grid shows the chunks the native run has loaded then (read back as pixels), with the tick's
/// events listed; Start runs on by itself and Pause stops it; Reset starts afresh; with
/// reduced motion Start is off. Then it runs to the example's end and matches the native state.
#[test]
fn the_page_draws_its_first_tick_and_step_start_pause_run_the_game() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    browser.allow_downloads(dir.path());
    let scene = repo().join("examples/scenes/seed.json");
    let inputs = repo().join("examples/scenes/seed.inputs.jsonl");
    let file = write_play_page(
        dir.path(),
        "seed",
        &[&scene, Path::new("--inputs"), &inputs],
    );
    let native = record_example("seed", 30);
    let mut page = browser.page(1280, 1000);
    let opened = std::time::Instant::now();
    open_play(&mut page, &file, "");
    // docs/web.md#the-live-page: the first drawn tick, in ms from the navigation's start.
    let first = page.eval("performance.getEntriesByName('ws-first-grid')[0].startTime");
    eprintln!(
        "the page started in {:?}; its first tick was drawn {first} ms after navigation started",
        opened.elapsed()
    );
    assert!(first.as_f64().is_some_and(|ms| ms > 0.0), "{first}");
    assert_eq!(
        page.eval("document.getElementById('tick').textContent"),
        "0"
    );
    assert_eq!(game_tick(&mut page), 0);
    page.click("step");
    assert_eq!(
        page.eval("document.getElementById('tick').textContent"),
        "1"
    );
    assert_eq!(game_tick(&mut page), 1);
    // Tick 1's state, as the native run has it.
    let mut live = session(&native);
    live.tick(1).unwrap();
    let loaded = live.game().streaming().unwrap().loaded();
    assert!(!loaded.is_empty());
    assert_eq!(
        page.eval("Number(document.getElementById('grid').dataset.loadedDrawn)"),
        serde_json::json!(loaded.len())
    );
    let loaded: Vec<ChunkPos> = loaded.into_iter().collect();
    for (c, p) in loaded.iter().zip(pixels_at(&mut page, &loaded)) {
        assert_eq!(p, [0x3f, 0xa3, 0x4d], "chunk {c:?} is drawn loaded");
    }
    let events = native.steps[0].events.len();
    assert_eq!(
        page.eval("document.getElementById('events').children.length"),
        serde_json::json!(events)
    );
    // Start, then Pause: the game ran on by itself, and stays where it paused.
    page.click("start");
    page.wait_for(
        "Number(document.body.dataset.tick) >= 6",
        Duration::from_secs(30),
    );
    page.click("pause");
    let paused = game_tick(&mut page);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(game_tick(&mut page), paused, "paused");
    assert_eq!(
        page.eval("document.getElementById('tick').textContent"),
        serde_json::json!(paused.to_string())
    );
    // Reset: a fresh run at tick 0.
    page.click("reset");
    assert_eq!(game_tick(&mut page), 0);
    assert_eq!(
        page.eval("document.getElementById('tick').textContent"),
        "0"
    );
    // Reduced motion: Step only (the page follows the setting as it changes).
    page.reduce_motion(true);
    page.wait_for(
        "document.getElementById('start').disabled && !document.getElementById('motion').hidden",
        Duration::from_secs(10),
    );
    page.click("start");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        game_tick(&mut page),
        0,
        "Start does nothing with reduced motion"
    );
    page.click("step");
    assert_eq!(game_tick(&mut page), 1, "Step still runs a tick");
    page.reduce_motion(false);
    page.wait_for(
        "!document.getElementById('start').disabled",
        Duration::from_secs(10),
    );
    page.click("reset");
    // To the example's end: the recording saved is the native one.
    for _ in 0..native.ticks {
        page.press(".");
    }
    assert_eq!(game_tick(&mut page), native.ticks);
    browser_save_check(&mut page, dir.path(), "seed.replay.json", &native);
    let png = page.screenshot();
    std::fs::write(chromium::target_dir().join("play-seed.png"), png).unwrap();
}

/// The recording the page saves has the native run's steps (every digest) and inputs, and the
/// native `replay` verifies it.
fn browser_save_check(page: &mut chromium::Page<'_>, dir: &Path, file: &str, native: &Recording) {
    let (path, saved) = save_recording(page, dir, file);
    assert_eq!(path, dir.join(file), "saved under the recording's name");
    assert_eq!(saved.steps.len(), native.steps.len());
    for (a, b) in saved.steps.iter().zip(&native.steps) {
        assert_eq!((a.tick, &a.digest), (b.tick, &b.digest), "tick {}", b.tick);
    }
    assert_eq!(saved.inputs, native.inputs);
    let ok = common::bin().arg("replay").arg(&path).output().unwrap();
    assert!(
        ok.status.success(),
        "replay: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// The strongest: a recording made natively (`run --record`) of every shipped example scene a
/// browser can run, opened with `play` and run in the page (`#replay` runs the recording's
/// ticks at once), replays in the kit's wasm module with identical step digests: the page
/// checks each against the recording as it runs, and the recording it saves holds the same
/// digests, which the native `replay` verifies again.
#[test]
fn native_recordings_of_every_web_example_replay_in_chromium_with_identical_digests() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    browser.allow_downloads(dir.path());
    let mut page = browser.page(1280, 1000);
    for name in web_examples() {
        let native = record_example(&name, 20);
        let file = dir.path().join(format!("{name}.replay.json"));
        native.write(&file).unwrap();
        let html = write_play_page(dir.path(), &name, &[&file]);
        open_play(&mut page, &html, "#replay");
        assert_eq!(
            game_tick(&mut page),
            native.ticks,
            "{name}: ran the recording's ticks"
        );
        assert_eq!(
            page.eval("document.body.dataset.differs"),
            "",
            "{name}: {}",
            page.eval("document.getElementById('play-status').textContent")
        );
        assert_eq!(
            page.eval("Number(document.body.dataset.checked)"),
            serde_json::json!(native.steps.len()),
            "{name}: every step checked"
        );
        // Saved under the recording's own name: moved aside first.
        let original = dir.path().join(format!("{name}.native.json"));
        std::fs::rename(&file, &original).unwrap();
        browser_save_check(
            &mut page,
            dir.path(),
            &format!("{name}.replay.json"),
            &native,
        );
        eprintln!(
            "{name}: {} ticks replayed in chromium, every digest the native one",
            native.ticks
        );
    }
}

/// A page driven by key presses (the arrows, WASD) and a click saves a recording that the native
/// `replay` verifies: each press is a `move` of the player stamped with the next tick.
#[test]
fn a_page_driven_by_keys_saves_a_recording_that_replay_verifies() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    browser.allow_downloads(dir.path());
    let scene = repo().join("examples/scenes/drive.json");
    let inputs = repo().join("examples/scenes/drive.inputs.jsonl");
    let file = write_play_page(
        dir.path(),
        "drive",
        &[&scene, Path::new("--inputs"), &inputs],
    );
    let mut page = browser.page(1280, 1000);
    open_play(&mut page, &file, "");
    let keys = [
        "ArrowRight",
        "d",
        "ArrowDown",
        "s",
        "ArrowLeft",
        "a",
        "ArrowUp",
        "w",
    ];
    for (i, key) in keys.iter().enumerate() {
        page.press(key);
        if i % 2 == 1 {
            page.press(".");
        }
    }
    // A click on the grid sends the player to the chunk clicked.
    page.click("grid");
    page.press(".");
    page.press(".");
    let ticks = game_tick(&mut page);
    assert_eq!(ticks, 6);
    let (path, saved) = save_recording(&mut page, dir.path(), "drive.replay.json");
    // The moves the keys and the click made, each stamped with the tick after the one shown.
    let native = Inputs::read(&inputs).unwrap();
    let player = session(&record_example("drive", 1))
        .player()
        .map(|(id, _)| id)
        .unwrap();
    let moves: Vec<u64> = saved
        .inputs
        .iter()
        .filter(|i| {
            let line = serde_json::to_value(i).unwrap();
            line["do"] == "move"
                && line["entity"] == player.as_str()
                && !native.lines.iter().any(|n| n.input == **i)
        })
        .map(|i| i.tick)
        .collect();
    assert_eq!(moves, [1, 1, 2, 2, 3, 3, 4, 4, 5], "{:?}", saved.inputs);
    assert_eq!(saved.steps.len() as u64, ticks);
    let ok = common::bin().arg("replay").arg(&path).output().unwrap();
    assert!(
        ok.status.success(),
        "replay: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// Hostile ids and data are shown as text, never markup: an entity whose id and data are HTML
/// that would run script if parsed, in a scene whose file name is HTML too. The page starts,
/// shows the id literally, moves it with a key, and no element of the id's markup exists.
#[test]
fn hostile_ids_and_data_stay_text_on_the_live_page() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    browser.allow_downloads(dir.path());
    let id = "<img src=x onerror=\"document.body.dataset.pwned='1'\">";
    let scene = serde_json::json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1 } }
        ],
        "entities": [{
            "id": id,
            "tags": ["player", "<script>document.body.dataset.pwned='2'</script>"],
            "position": { "x": 8, "z": 8 },
            "data": { "</script><b id=bold>": "<i id=it>x</i>" }
        }]
    });
    let file = dir.path().join("<b>hostile&.json");
    std::fs::write(&file, scene.to_string()).unwrap();
    let html = write_play_page(dir.path(), "hostile", &[&file]);
    let mut page = browser.page(1280, 1000);
    open_play(&mut page, &html, "");
    page.press("d");
    page.press(".");
    page.press(".");
    assert_eq!(game_tick(&mut page), 2);
    let status = page.eval("document.getElementById('play-status').textContent");
    assert!(
        status.as_str().unwrap().contains(&format!("player {id}")),
        "{status}"
    );
    // The entity under the pointer: its id, tags and data listed as text.
    page.eval(
        "(() => { const c = document.getElementById('grid'); const d = c.dataset; \
         const r = c.getBoundingClientRect(); \
         const x = r.left + Number(d.ox) + (24 / 32 - Number(d.originX)) * Number(d.cell); \
         const z = r.top + Number(d.oz) + (8 / 32 - Number(d.originZ)) * Number(d.cell); \
         c.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: z })); })()",
    );
    let detail = page.eval("document.getElementById('detail').textContent");
    assert!(detail.as_str().unwrap().contains(id), "{detail}");
    for probe in [
        "document.body.dataset.pwned === undefined",
        "document.querySelectorAll('img, b#bold, i#it').length === 0",
        "document.title.startsWith('<b>hostile&.json')",
    ] {
        assert_eq!(page.eval(probe), Value::Bool(true), "{probe}");
    }
    // Its move is in the recording, id and all, and replays natively.
    let (path, saved) = save_recording(&mut page, dir.path(), "<b>hostile&.replay.json");
    let line = serde_json::to_value(&saved.inputs[0]).unwrap();
    assert_eq!(line["entity"], id);
    assert_eq!(line["to"]["x"], 24.0);
    let ok = common::bin().arg("replay").arg(&path).output().unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// What the page could not run, `play` refuses before writing anything (and before looking for
/// the module), naming what: a Lua mod, a `worldDir`, a `save`/`load` input; `--inputs` with a
/// recording; a module it cannot read.
#[test]
fn play_refuses_what_a_browser_cannot_run_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let scene = |mods: Value| {
        serde_json::json!({
            "kits": [{ "id": "world.ground" }, { "id": "world.streaming" }],
            "mods": mods,
            "entities": [{ "id": "p", "tags": ["player"], "position": { "x": 0, "z": 0 } }]
        })
    };
    let lua = dir.path().join("lua.json");
    std::fs::write(
        &lua,
        scene(serde_json::json!([
            repo().join("mods/keep_home.json"),
            repo().join("mods/keep_home.lua")
        ]))
        .to_string(),
    )
    .unwrap();
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, scene(serde_json::json!([])).to_string()).unwrap();
    let saves = dir.path().join("saves.jsonl");
    std::fs::write(
        &saves,
        "{\"tick\": 3, \"do\": \"save\", \"path\": \"a.json\"}\n",
    )
    .unwrap();
    let recording = dir.path().join("plain.replay.json");
    Recording::record(&plain, &Inputs::default(), 2)
        .unwrap()
        .write(&recording)
        .unwrap();
    let out = dir.path().join("page.html");
    let missing = dir.path().join("missing.wasm");
    let world = repo().join("examples/scenes/world.json");
    let cases: [(Vec<&Path>, &str); 5] = [
        (vec![&lua], "mods[1]: Lua mods need the native build"),
        (
            vec![&world],
            ".config.worldDir: a world directory needs a file system",
        ),
        (
            vec![&plain, Path::new("--inputs"), &saves],
            "inputs[0] (tick 3): a save or load needs a file system",
        ),
        (
            vec![&recording, Path::new("--inputs"), &saves],
            "a recording carries its inputs",
        ),
        (
            vec![&plain],
            "cannot read the kit's wasm module (build it with scripts/build-web.sh",
        ),
    ];
    for (args, message) in cases {
        let done = common::bin()
            .arg("play")
            .args(&args)
            .arg("--out")
            .arg(&out)
            .arg("--wasm")
            .arg(&missing)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?}: no page written");
    }
}

/// The module `--wasm` names is read as a user's file: a directory, a device (which would never
/// end) or a file that is not WebAssembly is refused naming it, and no page is written.
#[test]
fn play_refuses_a_module_that_is_not_a_wasm_file() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("plain.json");
    std::fs::write(
        &scene,
        serde_json::json!({
            "kits": [{ "id": "world.ground" }, { "id": "world.streaming" }],
            "entities": [{ "id": "p", "tags": ["player"], "position": { "x": 0, "z": 0 } }]
        })
        .to_string(),
    )
    .unwrap();
    let text = dir.path().join("module.wasm");
    std::fs::write(&text, "<html>not a module</html>").unwrap();
    let out = dir.path().join("page.html");
    let cases: [(&Path, &str); 3] = [
        (dir.path(), "a regular file, got a directory"),
        (
            Path::new("/dev/zero"),
            "a regular file, got a character device",
        ),
        (&text, "got a file that is not WebAssembly"),
    ];
    for (module, message) in cases {
        let done = common::bin()
            .arg("play")
            .arg(&scene)
            .arg("--out")
            .arg(&out)
            .arg("--wasm")
            .arg(module)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{module:?}: {stderr}");
        assert!(stderr.contains(message), "{module:?}: {stderr}");
        assert!(!stderr.contains("<html>"), "{module:?}: {stderr}");
        assert!(!out.exists(), "{module:?}: no page written");
    }
}

/// A session's inputs: one stamped with a tick that has run is refused; those queued apply before
/// the tick they are stamped with, after those queued before them for that tick; the player is
/// the controlled entity else the first `player`, reported where its queued moves take it; an
/// input the game refuses is dropped, said, and left out of the recording, which replays.
#[test]
fn a_sessions_inputs_are_queued_by_tick_and_a_refused_one_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("s.json");
    std::fs::write(
        &scene,
        serde_json::json!({
            "kits": [{ "id": "world.ground" }, { "id": "world.streaming" }],
            "entities": [
                { "id": "a", "position": { "x": 0, "z": 0 } },
                { "id": "p", "tags": ["player"], "position": { "x": 1, "y": 2, "z": 3 } }
            ]
        })
        .to_string(),
    )
    .unwrap();
    let base = Recording::record(&scene, &Inputs::default(), 0).unwrap();
    let mut live = Live::from_recording(&base, "t").unwrap();
    let (id, at) = live.player().unwrap();
    assert_eq!((id.as_str(), at.x, at.y, at.z), ("p", 1.0, 2.0, 3.0));
    let mv = |tick: u64, x: f64| {
        format!(r#"{{"tick": {tick}, "do": "move", "entity": "p", "to": {{"x": {x}, "z": 0}}}}"#)
    };
    live.input(&mv(2, 20.0)).unwrap();
    live.input(&mv(1, 10.0)).unwrap();
    live.input(&mv(2, 30.0)).unwrap();
    assert_eq!(
        live.player().unwrap().1.x,
        30.0,
        "where the last queued move takes it"
    );
    assert_eq!(live.status()["pending"], 3);
    live.tick(1).unwrap();
    assert_eq!(live.recording().inputs.len(), 1);
    let e = live.input(&mv(1, 5.0)).unwrap_err();
    assert!(e.contains("tick 1 has run"), "{e}");
    live.tick(1).unwrap();
    let xs: Vec<f64> = live
        .recording()
        .inputs
        .iter()
        .map(|i| {
            serde_json::to_value(i).unwrap()["to"]["x"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(xs, [10.0, 20.0, 30.0], "by tick, then as given");
    // The controlled entity comes first.
    live.input(r#"{"tick": 3, "do": "control", "entity": "a"}"#)
        .unwrap();
    live.tick(1).unwrap();
    assert_eq!(live.player().unwrap().0, "a");
    // A move of an entity that does not exist is refused when due, and left out.
    live.input(r#"{"tick": 4, "do": "move", "entity": "ghost", "to": {"x": 1, "z": 1}}"#)
        .unwrap();
    let e = live.tick(1).unwrap_err().to_string();
    assert!(
        e.contains("ghost") && e.contains("not part of the recording"),
        "{e}"
    );
    live.tick(1).unwrap();
    let saved = live.recording().clone();
    assert_eq!(saved.inputs.len(), 4);
    assert_eq!(saved.ticks, 4);
    assert_eq!(saved.verify().unwrap(), Verdict::Same { ticks: 4 });
}

/// docs/viewer.md#vertical-worlds: a live session of a vertical scene (a disc with rows, terrain
/// inline, a player that climbs) captures the viewer's frames of the same run, `vt`, sections as
/// triples and heights per column included, so the live page draws it as `view` does, with the
/// slice, the row control and the side view.
#[test]
fn a_vertical_session_captures_the_viewers_frames() {
    let dir = tempfile::tempdir().unwrap();
    let scene = serde_json::json!({
        "kits": [
            {"id": "world.ground"},
            {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 2, "shape": "disc",
             "budgetMs": 6, "vertical": {"radius": 1, "height": 16}}},
            {"id": "world.terrain", "config": {"seed": 5, "workers": "inline"}}
        ],
        "entities": [{"id": "bird", "tags": ["player"], "position": {"x": 16, "y": 8, "z": 16}}]
    });
    let path = dir.path().join("vertical.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let lines: Vec<Value> = (1..=4)
        .map(|i| {
            serde_json::json!({"tick": 6 * i, "do": "move", "entity": "bird",
                               "to": {"x": 16 + 20 * i, "y": 8 + 16 * i, "z": 16}})
        })
        .collect();
    let recording = Recording::record(&path, &common::inputs(&lines), 30).unwrap();
    let data =
        serde_json::to_value(capture(&recording, "test", Some(&terrain_height)).unwrap()).unwrap();
    let mut live = session(&recording);
    let mut frames = live.take()["frames"].as_array().unwrap().clone();
    while live.game().engine().tick_count() < recording.ticks {
        let n = 7.min(recording.ticks - live.game().engine().tick_count());
        live.tick(n).unwrap();
        frames.extend(live.take()["frames"].as_array().unwrap().iter().cloned());
    }
    assert_eq!(Value::Array(frames.clone()), data["frames"]);
    assert_eq!(
        frames[0]["vt"],
        serde_json::json!({"radius": 1, "height": 16})
    );
    let sections = frames
        .iter()
        .filter_map(|f| f["e"].as_array())
        .flatten()
        .filter(|e| e[1].get("y").is_some())
        .count();
    assert!(sections >= 100, "{sections} section events");
    assert!(
        frames.iter().any(|f| f.get("h").is_some()),
        "heights per column"
    );
}

/// docs/viewer.md#vertical-worlds in the browser: the live page of a vertical scene (the kit's
/// wasm module running it) shows the row control and the side view, the slice at the player's
/// section row as it climbs, the counts the native run has at that row, and PageUp shows the row
/// above.
#[test]
fn a_vertical_scenes_live_page_shows_the_focus_row_and_the_side_view() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let scene = serde_json::json!({
        "kits": [
            {"id": "world.ground"},
            {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 2, "shape": "disc",
             "budgetMs": 8, "vertical": {"radius": 1, "height": 16}}}
        ],
        "entities": [{"id": "bird", "tags": ["player"], "position": {"x": 16, "y": 8, "z": 16}}]
    });
    let path = dir.path().join("vertical.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let lines: Vec<Value> = (1..=3)
        .map(|i| {
            serde_json::json!({"tick": 8 * i, "do": "move", "entity": "bird",
                               "to": {"x": 16, "y": 8 + 16 * i, "z": 16}})
        })
        .collect();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let inputs = dir.path().join("vertical.inputs.jsonl");
    std::fs::write(&inputs, text).unwrap();
    let file = write_play_page(
        dir.path(),
        "vertical",
        &[&path, Path::new("--inputs"), &inputs],
    );
    let recording = Recording::record(&path, &common::inputs(&lines), 30).unwrap();
    let mut live = session(&recording);
    let mut page = browser.page(1280, 1000);
    open_play(&mut page, &file, "");
    for id in ["row-label", "side-panel"] {
        assert_eq!(
            page.eval(&format!("document.getElementById('{id}').hidden")),
            Value::Bool(false),
            "{id}"
        );
    }
    let mut tick = 0;
    for target in [6u64, 14, 22, 30] {
        while tick < target {
            page.click("step");
            tick += 1;
        }
        assert_eq!(game_tick(&mut page), target);
        live.tick(target - live.game().engine().tick_count())
            .unwrap();
        let s = live.game().streaming().unwrap();
        let focus = s.foci()[0];
        let row = (focus.y / 16.0).floor() as i64;
        let in_row = s.loaded().iter().filter(|c| c.y == row).count();
        let d = page.eval("Object.assign({}, document.getElementById('grid').dataset)");
        let n = |k: &str| d[k].as_str().unwrap().parse::<i64>().unwrap();
        assert_eq!(
            (
                n("row"),
                n("focusRow"),
                n("loadedDrawn"),
                n("sectionsLoaded")
            ),
            (row, row, in_row as i64, s.loaded().len() as i64),
            "tick {target}"
        );
        let column = s.loaded().iter().filter(|c| (c.x, c.z) == (0, 0)).count();
        let side = page.eval("Object.assign({}, document.getElementById('side').dataset)");
        assert_eq!(
            side["loaded"],
            serde_json::json!(column.to_string()),
            "tick {target}"
        );
    }
    let row = page.eval("Number(document.getElementById('grid').dataset.row)");
    page.eval(
        "document.dispatchEvent(new KeyboardEvent('keydown', { key: 'PageUp', bubbles: true }))",
    );
    let above = page.eval("Number(document.getElementById('grid').dataset.row)");
    assert_eq!(above.as_i64(), row.as_i64().map(|r| r + 1));
}
