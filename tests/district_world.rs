//! docs/reference/district.md#district-persistence with a world directory: `world.district`'s kept
//! differences (and the live entities standing in each chunk) written as district records in region
//! files of their own (`d.<x>.<z>.wsd`), with the write-back policy
//! (docs/reference/world-dir.md#write-back), failures, damage, locks and crash safety. Each test
//! builds a world in a temporary directory and drives it through the `Game` API or the CLI.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{bin, event_lines, events_named, run};
use serde_json::{json, Value};
use world_streaming::game::{Game, GameError};
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::district::{self, DistrictKit, DistrictStoreError};
use world_streaming::worlddir::store::{FaultyFs, FsOp as Op};

fn line(id: &str, x: f64, z: f64) -> String {
    json!({ "id": id, "tags": ["crate"], "position": { "x": x, "z": z } }).to_string()
}

/// Two crates in chunk (0,0), one in (1,0), one in (-1,0) (region -1), one far away in (9,0).
fn crates() -> Vec<String> {
    vec![
        line("c1", 5.0, 5.0),
        line("c2", 40.0, 5.0),
        line("c3", 6.0, 6.0),
        line("w1", -20.0, 5.0),
        line("far", 300.0, 5.0),
    ]
}

/// A scene in `dir` (written as `scene.json`, districts in `d.jsonl`) with the hero at (16, 16),
/// radius 1, and `world.district` on `worldDir` `world` (relative to the scene) with `flush`.
fn world(dir: &Path, world: &str, flush: u64) -> Value {
    std::fs::write(dir.join("d.jsonl"), crates().join("\n") + "\n").unwrap();
    let scene = json!({
        "kits": [
            { "id": "game.engine" },
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9 } },
            { "id": "world.district", "config": {
                "districts": ["d.jsonl"], "worldDir": world, "flushEveryTicks": flush
            } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ],
        "control": "hero"
    });
    std::fs::write(dir.join("scene.json"), scene.to_string()).unwrap();
    scene
}

fn start(dir: &Path, scene: &Value) -> Game {
    Game::from_scene_text(&scene.to_string(), "scene.json", dir, &builtin_catalog())
        .unwrap_or_else(|e| panic!("scene refused: {e}"))
}

fn data(game: &Game, id: &str) -> Option<Value> {
    let e = game.engine().world().get(&EntityId::new(id))?;
    Some(json!(e.data))
}

fn position(game: &Game, id: &str) -> Option<(f64, f64)> {
    let e = game.engine().world().get(&EntityId::new(id))?;
    Some((e.position.x, e.position.z))
}

fn counts(game: &Game) -> (u64, u64) {
    let d = game.state().district.expect("the kit is enabled");
    (d.live, d.stored)
}

fn go(tick: u64, x: f64) -> Value {
    json!({ "tick": tick, "do": "move", "entity": "hero", "to": { "x": x, "z": 16 } })
}

fn set(tick: u64, id: &str, hp: u64) -> Value {
    json!({ "tick": tick, "do": "set", "entity": id, "data": { "hp": hp } })
}

/// The district region files of `dir`, sorted.
fn district_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("d.") && n.ends_with(".wsd"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The stored district entity `id` is exactly once in the world when its chunk loads: the
/// hero goes to `x` and the entity is live.
fn digest(game: &Game) -> String {
    game.kit::<DistrictKit>()
        .and_then(DistrictKit::image_digest)
        .expect("a world directory")
}

#[test]
fn differences_and_live_changes_survive_a_restart_on_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(
        &mut g,
        &[
            // c1 carried into chunk (15, 0), unloaded: stored there at the end of the tick.
            json!({ "tick": 2, "do": "move", "entity": "c1", "to": { "x": 500, "z": 5 } }),
            set(3, "c2", 1),
            set(3, "c3", 7),
            // Away: (0,0) and (1,0) are released and store c2 and c3 (changed).
            go(4, 200.0),
            // Back: (0,0) loads again; c3 is live when the game closes, with a new change.
            go(6, 16.0),
            set(8, "c3", 9),
        ],
        9,
    );
    assert_eq!(data(&g, "c3"), Some(json!({ "hp": 9 })));
    g.close().unwrap();
    let dir = tmp.path().join("w");
    assert_eq!(district_files(&dir), ["d.0.0.wsd"]);
    // A fresh game on the directory: nothing resident, every entity stored once.
    let mut g = start(tmp.path(), &scene);
    assert_eq!(counts(&g), (0, 5));
    run(&mut g, &[], 2);
    assert_eq!(data(&g, "c3"), Some(json!({ "hp": 9 })), "live at close");
    assert_eq!(data(&g, "c2"), Some(json!({ "hp": 1 })), "stored at close");
    assert_eq!(
        position(&g, "c1"),
        None,
        "c1 is stored where it was carried"
    );
    run(&mut g, &[go(3, 490.0)], 5);
    assert_eq!(position(&g, "c1"), Some((500.0, 5.0)));
    assert_eq!(counts(&g).0 + counts(&g).1, 5);
    g.close().unwrap();
}

#[test]
fn write_backs_follow_the_policy_every_n_ticks_and_on_release() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    // Periodic: flushEveryTicks 5, no release; nothing is written before tick 5.
    let scene = world(tmp.path(), "w", 5);
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[set(2, "c3", 4)], 4);
    assert_eq!(district_files(&dir), Vec::<String>::new());
    run(&mut g, &[], 5);
    wait_for(|| district_files(&dir) == ["d.0.0.wsd"]);
    drop(g);
    std::fs::remove_dir_all(&dir).unwrap();
    // On release: flushEveryTicks 0 (never periodically); a release writes at once.
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[set(2, "c3", 4)], 6);
    assert_eq!(district_files(&dir), Vec::<String>::new());
    run(&mut g, &[go(7, 200.0)], 7);
    wait_for(|| district_files(&dir) == ["d.0.0.wsd"]);
    // Before a game save: the save's directory holds every change when the save returns (a
    // copy taken then, opened by another game, is the image the save names).
    let save = tmp.path().join("s.json");
    run(&mut g, &[go(8, 16.0), set(10, "c1", 2)], 10);
    g.save(&save).unwrap();
    let copy = tmp.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for (name, bytes) in files(&dir) {
        std::fs::write(copy.join(name), bytes).unwrap();
    }
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let section = &saved["kits"]["world.district"];
    assert_eq!(section["worldDir"], json!(dir.to_string_lossy()));
    assert_eq!(section["image"], json!(digest(&g)));
    assert_eq!(section["records"], json!([]));
    g.close().unwrap();
    let other = start(tmp.path(), &world(tmp.path(), "copy", 0));
    assert_eq!(json!(digest(&other)), section["image"]);
}

/// Waits (at most 20 s) for a write the save thread does on its own.
fn wait_for(ok: impl Fn() -> bool) {
    for _ in 0..2000 {
        if ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the write never came");
}

fn start_with_fs(dir: &Path, scene: &Value, fs: Arc<FaultyFs>) -> Game {
    let mut catalog = builtin_catalog();
    catalog.add(
        district::manifest(),
        Box::new(move |spec| DistrictKit::from_spec_with_fs(spec, fs.clone())),
    );
    Game::from_scene_text(&scene.to_string(), "scene.json", dir, &catalog)
        .unwrap_or_else(|e| panic!("scene refused: {e}"))
}

#[test]
fn each_failed_write_step_is_an_event_is_retried_and_loses_nothing() {
    for op in [Op::Write, Op::Fsync, Op::Rename, Op::SyncDir] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("w");
        let scene = world(tmp.path(), "w", 2);
        let fs = Arc::new(FaultyFs::default());
        let mut g = start_with_fs(tmp.path(), &scene, fs.clone());
        fs.fail(Some(op));
        // Tick 4 writes (and fails), tick 6 hears it and tries again (and fails).
        run(&mut g, &[set(3, "c3", 5)], 7);
        let errors = events_named(&g, "world.district.error");
        assert_eq!(errors.len(), 1, "{op:?}: {errors:?}");
        let (tick, e) = &errors[0];
        assert_eq!(*tick, 6);
        assert_eq!(
            (&e["x"], &e["z"], &e["region"], &e["chunks"]),
            (&json!(0), &json!(0), &json!("d.0.0.wsd"), &json!(1)),
            "{op:?}: {e}"
        );
        let m = e["message"].as_str().unwrap();
        assert!(m.starts_with("cannot write d.0.0.wsd: "), "{m}");
        assert!(m.contains("injected"), "{m}");
        // A save fails too (its write fails), and says which file.
        let err = g.save(&tmp.path().join("s.json")).unwrap_err().to_string();
        assert!(err.contains("d.0.0.wsd (1 chunk: "), "{op:?}: {err}");
        // The fault gone, the next periodic write writes it, and a restart finds it.
        fs.fail(None);
        run(&mut g, &[], 10);
        assert_eq!(events_named(&g, "world.district.error").len(), 2, "{op:?}");
        g.close().unwrap();
        assert_eq!(district_files(&dir), ["d.0.0.wsd"], "{op:?}");
        let mut again = start(tmp.path(), &scene);
        run(&mut again, &[], 2);
        assert_eq!(data(&again, "c3"), Some(json!({ "hp": 5 })), "{op:?}");
        // Still failing at close: the error names the file and the count.
        fs.fail(Some(op));
        drop(again);
        let mut g = start_with_fs(tmp.path(), &scene, fs.clone());
        run(&mut g, &[set(3, "c3", 6)], 3);
        let err = g.close().unwrap_err();
        assert!(
            matches!(&err, GameError::DistrictUnsaved(DistrictStoreError::Unsaved { failures, .. })
                if failures.len() == 1 && failures[0].file == "d.0.0.wsd" && failures[0].chunks == 1),
            "{op:?}: {err:?}"
        );
        assert!(
            err.to_string().starts_with(&format!(
                "district differences lost: world directory {}: 1 modified chunk not written: {} (1 chunk: ",
                dir.display(),
                dir.join("d.0.0.wsd").display()
            )),
            "{err}"
        );
    }
}

#[test]
fn a_run_whose_differences_cannot_be_written_exits_1_naming_the_file_and_the_count() {
    let tmp = tempfile::tempdir().unwrap();
    world(tmp.path(), "w", 0);
    // A directory squatting the temporary file: d.0.0.wsd cannot be written.
    std::fs::create_dir_all(tmp.path().join("w/d.0.0.wsd.tmp/in")).unwrap();
    std::fs::write(
        tmp.path().join("in.jsonl"),
        format!("{}\n", set(3, "c3", 5)),
    )
    .unwrap();
    let out = bin()
        .current_dir(tmp.path())
        .args([
            "run",
            "scene.json",
            "--ticks",
            "5",
            "-q",
            "--inputs",
            "in.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("district differences lost")
            && stderr.contains("1 modified chunk not written: w/d.0.0.wsd (1 chunk: "),
        "{stderr}"
    );
    std::fs::remove_dir_all(tmp.path().join("w")).unwrap();
    bin()
        .current_dir(tmp.path())
        .args([
            "run",
            "scene.json",
            "--ticks",
            "5",
            "-q",
            "--inputs",
            "in.jsonl",
        ])
        .assert()
        .success();
}

/// A world in `dir` whose `w/d.0.0.wsd` holds two records, closed: (0,0) with c1 changed and c3
/// moved within it, (1,0) with c2 changed. Returns the scene.
fn two_records(dir: &Path) -> Value {
    let scene = world(dir, "w", 0);
    let mut g = start(dir, &scene);
    run(
        &mut g,
        &[
            set(2, "c1", 3),
            json!({ "tick": 2, "do": "move", "entity": "c3", "to": { "x": 20, "z": 20 } }),
            set(2, "c2", 8),
        ],
        3,
    );
    g.close().unwrap();
    scene
}

/// Flips a payload byte of the first record of a district region file (a bad CRC-32); returns
/// the file's new bytes.
fn damage_the_first_record(file: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(file).unwrap();
    // The region holds chunks (0,0) and (1,0) in row order: the first record is (0,0)'s.
    // Its table entry: after the 56-byte header; its offset at bytes 4..8 of the entry.
    let offset = u32::from_le_bytes(bytes[60..64].try_into().unwrap()) as usize;
    bytes[offset + 20 + 3] ^= 0x55;
    std::fs::write(file, &bytes).unwrap();
    bytes
}

#[test]
fn a_damaged_record_falls_back_to_the_chunk_s_originals_and_is_kept_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = two_records(tmp.path());
    let bytes = damage_the_first_record(&tmp.path().join("w/d.0.0.wsd"));
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    let errors = events_named(&g, "world.district.error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (tick, e) = &errors[0];
    assert_eq!((*tick, &e["x"], &e["z"]), (1, &json!(0), &json!(0)));
    let m = e["message"].as_str().unwrap();
    assert!(
        m.starts_with("d.0.0.wsd: chunk ")
            && m.contains("bad record at byte ")
            && m.contains("CRC-32")
            && m.contains("the chunk's entities load as their district files describe them")
            && m.contains("kept aside as d.0.0.wsd.damaged"),
        "{m}"
    );
    // (0,0)'s originals: c1 without its data, c3 where its line puts it; (1,0) kept its record.
    assert_eq!(data(&g, "c1"), Some(json!(null)));
    assert_eq!(position(&g, "c3"), Some((6.0, 6.0)));
    assert_eq!(data(&g, "c2"), Some(json!({ "hp": 8 })));
    // The next write keeps the damaged file aside, byte for byte, before rewriting it.
    g.close().unwrap();
    assert_eq!(
        std::fs::read(tmp.path().join("w/d.0.0.wsd.damaged")).unwrap(),
        bytes
    );
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    assert_eq!(events_named(&g, "world.district.error"), vec![]);
    assert_eq!(data(&g, "c2"), Some(json!({ "hp": 8 })));
}

#[cfg(unix)]
#[test]
fn a_region_name_that_is_a_link_is_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    std::fs::create_dir_all(tmp.path().join("w")).unwrap();
    let outside = tmp.path().join("outside");
    std::fs::write(&outside, b"not a region").unwrap();
    std::os::unix::fs::symlink(&outside, tmp.path().join("w/d.0.0.wsd")).unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[set(2, "c1", 3)], 2);
    let errors = events_named(&g, "world.district.error");
    assert!(
        errors[0].1["message"]
            .as_str()
            .unwrap()
            .contains("a symbolic link, not a regular file: not read"),
        "{errors:?}"
    );
    g.close().unwrap();
    // Renamed aside unread; the target untouched; the region written anew.
    assert_eq!(std::fs::read(&outside).unwrap(), b"not a region");
    assert!(
        std::fs::symlink_metadata(tmp.path().join("w/d.0.0.wsd.damaged"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::symlink_metadata(tmp.path().join("w/d.0.0.wsd"))
        .unwrap()
        .file_type()
        .is_file());
}

#[test]
fn two_games_cannot_share_the_directory_but_one_game_s_terrain_and_district_do() {
    let tmp = tempfile::tempdir().unwrap();
    let mut scene = world(tmp.path(), "w", 0);
    scene["kits"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "id": "world.terrain", "config": { "workers": 1, "worldDir": "w" } }));
    let first = start(tmp.path(), &scene);
    let dir = tmp.path().join("w");
    for other in [scene.clone(), world(tmp.path(), "w", 0)] {
        let err = Game::from_scene_text(
            &other.to_string(),
            "scene.json",
            tmp.path(),
            &builtin_catalog(),
        )
        .err()
        .expect("a second game started");
        assert!(
            matches!(&err, GameError::WorldInUse { dir: d, .. } if *d == dir),
            "{err:?}"
        );
    }
    first.close().unwrap();
    // Released by both kits: a game opens it again.
    drop(start(tmp.path(), &world(tmp.path(), "w", 0)));
    // And another process is refused while a game holds it.
    let holder = start(tmp.path(), &scene);
    let out = bin()
        .current_dir(tmp.path())
        .args(["run", "scene.json", "--ticks", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is in use by another game"));
    drop(holder);
}

/// The scene of the determinism and crash tests: terrain and district on one directory,
/// `workers` terrain workers, a write back every tick.
fn shared_scene(dir: &Path, workers: u64, flush: u64) -> Value {
    let mut scene = world(dir, "w", flush);
    scene["kits"].as_array_mut().unwrap().push(json!({
        "id": "world.terrain",
        "config": { "seed": 3, "workers": workers, "worldDir": "w", "flushEveryTicks": flush }
    }));
    std::fs::write(dir.join("scene.json"), scene.to_string()).unwrap();
    scene
}

/// Inputs that change entities on both sides of region 0's edge and then walk the hero back
/// and forth, so every cycle stores and brings back changed entities in two regions.
fn walk(ticks: u64) -> Vec<Value> {
    let mut v = vec![set(3, "c1", 1), set(3, "w1", 2), set(3, "c2", 3)];
    for t in 4..ticks {
        let x = if (t / 4) % 2 == 0 { 200.0 } else { 16.0 };
        v.push(go(t, x));
        if t == 6 {
            // Chunk (0, 0) is built by now (at tick 3 an edit is refused: "not built").
            v.push(json!({ "tick": 6, "do": "edit", "at": { "x": 5.5, "z": 5.5 }, "height": 900 }));
        }
        if t % 8 == 7 {
            v.push(set(t, "c1", t));
        }
    }
    v
}

fn write_inputs(dir: &Path, lines: &[Value]) -> PathBuf {
    let path = dir.join("in.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Every file of `dir` but the lock, name → bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "session.lock")
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The shared scene (terrain and district on `w`, flushes every 3 ticks) with `workers` terrain
/// workers driven 40 ticks of [`walk`] through the CLI; its events in `events.jsonl`.
fn run_shared_walk(dir: &Path, workers: u64) {
    shared_scene(dir, workers, 3);
    write_inputs(dir, &walk(40));
    bin()
        .current_dir(dir)
        .args([
            "run",
            "scene.json",
            "--ticks",
            "40",
            "-q",
            "--inputs",
            "in.jsonl",
        ])
        .args(["--events", "events.jsonl"])
        .assert()
        .success();
}

#[test]
fn the_same_inputs_give_the_same_events_and_bytes_with_1_and_4_terrain_workers() {
    let mut outcomes = Vec::new();
    for workers in [1, 4] {
        let tmp = tempfile::tempdir().unwrap();
        run_shared_walk(tmp.path(), workers);
        let events = std::fs::read_to_string(tmp.path().join("events.jsonl")).unwrap();
        let written = files(&tmp.path().join("w"));
        outcomes.push((events, written));
    }
    let names: Vec<&str> = outcomes[0].1.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"d.-1.0.wsd") && names.contains(&"d.0.0.wsd"),
        "{names:?}"
    );
    assert!(!names.contains(&"district.journal"), "{names:?}");
    assert!(outcomes[0].0.contains("world.district.stored"));
    assert_eq!(outcomes[0], outcomes[1]);
}

#[test]
fn a_save_loaded_in_a_fresh_game_continues_exactly_like_the_uninterrupted_run() {
    // The save is the last input of tick 14: applied before tick 14 runs.
    let inputs = |save: &Path| {
        let mut v = walk(30);
        v.push(json!({ "tick": 14, "do": "save", "path": save.display().to_string() }));
        v.sort_by_key(|l| l["tick"].as_u64());
        v
    };
    // The uninterrupted run, to tick 30, on its own directory.
    let whole_dir = tempfile::tempdir().unwrap();
    let scene = shared_scene(whole_dir.path(), 1, 4);
    let mut whole = start(whole_dir.path(), &scene);
    run(&mut whole, &inputs(&whole_dir.path().join("s.json")), 30);
    let expected: Vec<String> = event_lines(&whole)
        .into_iter()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["tick"].as_u64() > Some(14))
        .collect();
    let state = common::state_without_timing;
    let expected_state = state(&whole);
    whole.close().unwrap();
    // The interrupted one: saves at tick 14 and ends there; a fresh game loads the save.
    let tmp = tempfile::tempdir().unwrap();
    let scene = shared_scene(tmp.path(), 1, 4);
    let save = tmp.path().join("s.json");
    let mut first = start(tmp.path(), &scene);
    let before: Vec<Value> = inputs(&save)
        .into_iter()
        .filter(|l| l["tick"].as_u64() < Some(14))
        .collect();
    run(&mut first, &before, 13);
    for l in inputs(&save)
        .into_iter()
        .filter(|l| l["tick"].as_u64() == Some(14))
    {
        common::apply(&mut first, l);
    }
    first.close().unwrap();
    let mut fresh = start(tmp.path(), &scene);
    fresh.load(&save).unwrap();
    let after: Vec<Value> = inputs(&save)
        .into_iter()
        .filter(|l| l["tick"].as_u64() > Some(14))
        .collect();
    run(&mut fresh, &after, 30);
    let got: Vec<String> = event_lines(&fresh)
        .into_iter()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["tick"].as_u64() > Some(14))
        .collect();
    assert!(got
        .iter()
        .any(|l| l.contains("world.district.materialised")));
    assert_eq!(got, expected);
    assert_eq!(state(&fresh), expected_state);
    fresh.close().unwrap();
    assert_eq!(
        files(&tmp.path().join("w")),
        files(&whole_dir.path().join("w"))
    );
    // A directory written after the save no longer matches it: the load is refused.
    let mut late = start(tmp.path(), &scene);
    let err = common::refused_alike(&mut late, &save, common::Alone::NeedsTheGame);
    assert!(err.contains("changed since this save was made"), "{err}");
}

#[test]
fn a_run_killed_during_flushes_reopens_with_every_entity_once_as_a_flush_wrote_it() {
    const TICKS: u64 = 160;
    // The reference: the same run in this process, each tick's image (what its write holds).
    let reference = tempfile::tempdir().unwrap();
    let scene = world(reference.path(), "w", 1);
    let mut g = start(reference.path(), &scene);
    let lines = walk(TICKS);
    let mut images = std::collections::BTreeSet::new();
    images.insert(digest(&g));
    for t in 1..=TICKS {
        let now: Vec<Value> = lines
            .iter()
            .filter(|l| l["tick"].as_u64() == Some(t) && l["do"] != "edit")
            .cloned()
            .collect();
        run(&mut g, &now, t);
        images.insert(digest(&g));
    }
    g.close().unwrap();
    assert!(images.len() > 20, "the run changes the directory often");
    let district_lines = crates().len() as u64;
    for (k, delay_ms) in [15u64, 40, 70, 110, 160, 230, 320, 450, 650, 900]
        .into_iter()
        .enumerate()
    {
        let tmp = tempfile::tempdir().unwrap();
        let scene = world(tmp.path(), "w", 1);
        let no_edits: Vec<Value> = lines
            .iter()
            .filter(|l| l["do"] != "edit")
            .cloned()
            .collect();
        write_inputs(tmp.path(), &no_edits);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_world-streaming"))
            .current_dir(tmp.path())
            .args(["run", "scene.json", "-q", "--inputs", "in.jsonl", "--ticks"])
            .arg(TICKS.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let mut g = start(tmp.path(), &scene);
        let got = digest(&g);
        assert!(
            images.contains(&got),
            "kill {k} after {delay_ms} ms: the directory holds no image a write back wrote"
        );
        assert_eq!(
            counts(&g),
            (0, district_lines),
            "kill {k}: every entity once"
        );
        run(&mut g, &[], 1);
        assert_eq!(events_named(&g, "world.district.error"), vec![], "kill {k}");
    }
}

#[test]
fn a_run_on_a_district_world_directory_records_and_replays_on_a_copy() {
    let tmp = tempfile::tempdir().unwrap();
    shared_scene(tmp.path(), 1, 3);
    // A first run leaves a difference in the directory: c3 carried far away, stored there.
    write_inputs(
        tmp.path(),
        &[
            set(3, "c3", 1),
            json!({ "tick": 3, "do": "move", "entity": "c3", "to": { "x": 500, "z": 5 } }),
        ],
    );
    bin()
        .current_dir(tmp.path())
        .args([
            "run",
            "scene.json",
            "--ticks",
            "6",
            "-q",
            "--inputs",
            "in.jsonl",
        ])
        .assert()
        .success();
    assert!(files(&tmp.path().join("w"))
        .iter()
        .any(|(n, _)| n == "d.0.0.wsd"));
    write_inputs(tmp.path(), &[go(4, 200.0)]);
    bin()
        .current_dir(tmp.path())
        .args([
            "run",
            "scene.json",
            "--ticks",
            "8",
            "-q",
            "--inputs",
            "in.jsonl",
        ])
        .args(["--record", "r.replay.json"])
        .assert()
        .success();
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("r.replay.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = rec["world"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"d.0.0.wsd"), "{names:?}");
    let replay = |rec: &Value| {
        let path = tmp.path().join("x.replay.json");
        std::fs::write(&path, rec.to_string()).unwrap();
        bin().arg("replay").arg(&path).output().unwrap()
    };
    let out = replay(&rec);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Without the district files the recording carries, chunk (0, 0) brings c3 back at its
    // line: the replay differs, and says so.
    let mut cut = rec.clone();
    cut["world"] = json!(rec["world"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["name"].as_str().unwrap().starts_with("d."))
        .cloned()
        .collect::<Vec<_>>());
    let out = replay(&cut);
    assert_ne!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn a_streamed_scene_entity_the_directory_holds_stays_once_on_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut scene = world(tmp.path(), "w", 0);
    scene["entities"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "id": "box", "tags": ["streamed"], "position": { "x": 8, "z": 8 } }));
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[set(2, "box", 4)], 3);
    g.close().unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    // The scene spawned it again; the directory's copy is not spawned, and that is said.
    assert_eq!(data(&g, "box"), Some(json!(null)));
    let errors = events_named(&g, "world.district.error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    // The copy is dropped when the directory is taken (not refused at the chunk's load): the
    // scene's copy wins, and the directory's differing state is said to be dropped.
    let m = errors[0].1["message"].as_str().unwrap();
    assert!(m.contains("`box`") && m.contains("dropped"), "{errors:?}");
    assert_eq!(
        g.engine()
            .world()
            .iter()
            .filter(|e| e.id.as_str() == "box")
            .count(),
        1
    );
}

/// Dropping the directory's copy of a scene entity leaves the rest of its chunk's record as
/// it was: a record is forgotten (the chunk back to its lines) only when what is left is
/// exactly the chunk's lines, in order. Chunk (0, 0) holds `c1` and `c3` and the scene's
/// streamed `box`; in one run both lines are changed (as many entries as lines, none a line),
/// in another the last line is despawned (every entry left a line, one fewer).
#[test]
fn dropping_a_scene_copy_keeps_the_chunk_s_other_differences() {
    let scene_with_box = |dir: &Path| {
        let mut scene = world(dir, "w", 0);
        scene["entities"]
            .as_array_mut()
            .unwrap()
            .push(json!({ "id": "box", "tags": ["streamed"], "position": { "x": 8, "z": 8 } }));
        scene
    };
    // Both lines changed.
    let tmp = tempfile::tempdir().unwrap();
    let scene = scene_with_box(tmp.path());
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[set(2, "c1", 7), set(2, "c3", 9)], 3);
    g.close().unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    assert_eq!(data(&g, "c1"), Some(json!({ "hp": 7 })));
    assert_eq!(data(&g, "c3"), Some(json!({ "hp": 9 })));
    assert_eq!(events_named(&g, "world.district.error"), vec![]);
    g.close().unwrap();
    // The chunk's last line despawned.
    let tmp = tempfile::tempdir().unwrap();
    let scene = scene_with_box(tmp.path());
    let mut g = start(tmp.path(), &scene);
    run(
        &mut g,
        &[json!({ "tick": 2, "do": "despawn", "entity": "c3" })],
        3,
    );
    g.close().unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    assert_eq!(position(&g, "c1"), Some((5.0, 5.0)));
    assert_eq!(position(&g, "c3"), None, "despawned: stays gone");
    assert_eq!(events_named(&g, "world.district.error"), vec![]);
    g.close().unwrap();
}

/// Review: a scene entity tagged `streamed` standing in a chunk that is not loaded at start
/// is stored by the first tick's end; the directory already holds the copy the last run
/// stored there, so every restart adds one more copy of it to that chunk's record.
#[test]
fn review_a_streamed_scene_entity_in_an_unloaded_chunk_is_not_duplicated_by_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let mut scene = world(tmp.path(), "w", 0);
    scene["entities"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "id": "box", "tags": ["streamed"], "position": { "x": 300, "z": 8 } }));
    let mut seen = Vec::new();
    for _ in 0..3 {
        let mut g = start(tmp.path(), &scene);
        run(&mut g, &[], 3);
        seen.push(counts(&g));
        g.close().unwrap();
    }
    // 5 district lines + box: (live, stored) = (4, 2) each time (c1, c2, c3, w1 live near the
    // hero; far and box stored).
    assert_eq!(
        seen,
        vec![(4, 2), (4, 2), (4, 2)],
        "live+stored must stay 6"
    );
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[go(4, 300.0)], 6);
    let boxes = g
        .engine()
        .world()
        .iter()
        .filter(|e| e.id.as_str() == "box")
        .count();
    assert_eq!(boxes, 1);
    assert_eq!(events_named(&g, "world.district.error"), vec![]);
}

mod hostile {
    //! A district record as `region.rs` writes it (postcard), mirrored for a hostile file.
    #[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug)]
    pub struct Stamp {
        pub format: u32,
        pub files: u32,
        pub hash: u64,
        pub chunk_size: f64,
    }
    #[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
    pub struct PEntry {
        pub flags: u8,
        pub line: u32,
        pub base: u64,
        pub entity: String,
    }
    #[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
    pub struct PScene {
        pub scene: String,
        pub loaded: bool,
        pub entries: Vec<PEntry>,
    }
    #[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
    pub struct Payload {
        pub x: i64,
        pub z: i64,
        pub stamp: Stamp,
        pub scenes: Vec<PScene>,
    }

    /// The first record of a region file, decoded.
    pub fn first_record(bytes: &[u8]) -> Payload {
        let at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()) as usize;
        let off = at(60);
        let r = &bytes[off..];
        let flags = u16::from_le_bytes([r[6], r[7]]);
        let (stored, raw) = (at(off + 8), at(off + 12));
        let payload = &r[20..20 + stored];
        let raw = if flags & 1 != 0 {
            lz4_flex::block::decompress(payload, raw).unwrap()
        } else {
            payload.to_vec()
        };
        postcard::from_bytes(&raw).unwrap()
    }

    /// A region file (0, 0) holding `p` as chunk (p.x, p.z)'s only record, header from `like`.
    pub fn region(like: &[u8], p: &Payload) -> Vec<u8> {
        regions(like, std::slice::from_ref(p))
    }

    /// A region file (0, 0) holding one record for each of `ps` (chunks of region (0, 0)), in
    /// that order, header from `like`.
    pub fn regions(like: &[u8], ps: &[Payload]) -> Vec<u8> {
        let records: Vec<Vec<u8>> = ps.iter().map(record).collect();
        let mut out = like[..48].to_vec();
        out.extend_from_slice(&(ps.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        let mut at = 56 + 12 * ps.len() + 4;
        for (p, rec) in ps.iter().zip(&records) {
            out.push(p.x as u8);
            out.push(p.z as u8);
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(&(at as u32).to_le_bytes());
            out.extend_from_slice(&(rec.len() as u32).to_le_bytes());
            at += rec.len();
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        for rec in records {
            out.extend_from_slice(&rec);
        }
        out
    }

    fn record(p: &Payload) -> Vec<u8> {
        let raw = postcard::to_allocvec(p).unwrap();
        let c = lz4_flex::block::compress(&raw);
        let (flags, stored) = if c.len() < raw.len() {
            (1u16, c)
        } else {
            (0, raw.clone())
        };
        let mut rec = Vec::new();
        rec.extend_from_slice(b"WSDC");
        rec.extend_from_slice(&1u16.to_le_bytes());
        rec.extend_from_slice(&flags.to_le_bytes());
        rec.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        rec.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        rec.extend_from_slice(&crc32fast::hash(&stored).to_le_bytes());
        rec.extend_from_slice(&stored);
        rec
    }
}

/// Review: a district record is trusted entry by entry. A small, well-formed (checksummed)
/// record naming one district line many times is taken whole: the stored count becomes that
/// many, and the chunk's load reads the line that many times and emits one error per copy.
#[test]
fn review_a_record_naming_one_line_many_times_is_refused_not_materialised_n_times() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[set(2, "c3", 4)], 3);
    g.close().unwrap();
    let file = tmp.path().join("w/d.0.0.wsd");
    let good = std::fs::read(&file).unwrap();
    let mut p = hostile::first_record(&good);
    assert_eq!((p.x, p.z), (0, 0));
    let line = p.scenes[0].entries[0].clone();
    assert_eq!(line.flags & 2, 0, "a line entry: {line:?}");
    const N: usize = 100_000;
    p.scenes[0].loaded = false;
    p.scenes[0].entries = vec![hostile::PEntry { flags: 0, ..line }; N];
    let bad = hostile::region(&good, &p);
    eprintln!("hostile d.0.0.wsd: {} bytes for {N} entries", bad.len());
    std::fs::write(&file, &bad).unwrap();
    let t = std::time::Instant::now();
    let mut g = start(tmp.path(), &scene);
    let stored_at_start = counts(&g).1;
    run(&mut g, &[], 1);
    let errors = events_named(&g, "world.district.error").len();
    eprintln!(
        "stored at start {stored_at_start}, errors on tick 1: {errors}, {:?}",
        t.elapsed()
    );
    assert!(
        stored_at_start <= 5 && errors <= 1,
        "stored at start {stored_at_start}, {errors} error events"
    );
}

/// A record whose line entry stands outside its line's home chunk, whose entity entry claims
/// another entity's line, or holds a district entity as no line's, is damaged: one
/// `world.district.error` for the chunk, which loads as its district lines describe it; every
/// entity once.
#[test]
fn a_record_misplacing_a_line_or_giving_an_entity_another_s_line_is_damaged() {
    for case in [
        "line outside its home",
        "entity of another line",
        "district entity of no line",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let scene = world(tmp.path(), "w", 0);
        let mut g = start(tmp.path(), &scene);
        run(&mut g, &[set(2, "c3", 4)], 3);
        g.close().unwrap();
        let file = tmp.path().join("w/d.0.0.wsd");
        let good = std::fs::read(&file).unwrap();
        let mut p = hostile::first_record(&good);
        assert_eq!((p.x, p.z), (0, 0));
        let entries = &mut p.scenes[0].entries;
        let c3 = entries
            .iter()
            .position(|e| e.flags & 2 != 0)
            .expect("c3 changed");
        match case {
            // (0,0)'s record moved to chunk (2,0): its line entry (c1) is not homed there.
            "line outside its home" => p.x = 2,
            // c3's entity entry says it is of no line (flags: entity only).
            "district entity of no line" => {
                entries[c3].flags &= !4;
                entries[c3].line = 0;
                entries[c3].base = 0;
            }
            // c3's entity entry names c1's line (c1's own entry dropped: not twice).
            _ => {
                let c1 = entries.iter().position(|e| e.flags & 2 == 0).unwrap();
                entries[c3].line = entries[c1].line;
                entries.remove(c1);
            }
        }
        std::fs::write(&file, hostile::region(&good, &p)).unwrap();
        let mut g = start(tmp.path(), &scene);
        run(&mut g, &[], 2);
        let errors = events_named(&g, "world.district.error");
        assert_eq!(errors.len(), 1, "{case}: {errors:?}");
        assert!(
            errors[0].1["message"]
                .as_str()
                .unwrap()
                .contains("damaged district record"),
            "{case}: {errors:?}"
        );
        for id in ["c1", "c3"] {
            let n = g
                .engine()
                .world()
                .iter()
                .filter(|e| e.id.as_str() == id)
                .count();
            assert_eq!(n, 1, "{case}: {id}");
        }
        assert_eq!(
            data(&g, "c3"),
            Some(json!(null)),
            "{case}: the district line's c3"
        );
        assert_eq!(counts(&g).0 + counts(&g).1, 5, "{case}");
    }
}

/// Two sound records, each well-formed on its own, holding the same entity (c3 changed in its
/// home chunk (0, 0), and a copy of that entry in chunk (1, 0)'s record): the second is
/// damaged, one `world.district.error`, and c3 exists once, as the first holds it.
#[test]
fn the_same_entity_in_two_records_is_damage_and_exists_once() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[set(2, "c3", 4)], 3);
    g.close().unwrap();
    let file = tmp.path().join("w/d.0.0.wsd");
    let good = std::fs::read(&file).unwrap();
    let p = hostile::first_record(&good);
    assert_eq!((p.x, p.z), (0, 0));
    let c3 = p.scenes[0]
        .entries
        .iter()
        .find(|e| e.flags & 2 != 0)
        .expect("c3 changed")
        .clone();
    let mut other = p.clone();
    other.x = 1;
    other.scenes[0].entries = vec![c3];
    std::fs::write(&file, hostile::regions(&good, &[p, other])).unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    let n = |id: &str| {
        g.engine()
            .world()
            .iter()
            .filter(|e| e.id.as_str() == id)
            .count()
    };
    assert_eq!(n("c3"), 1);
    assert_eq!(
        data(&g, "c3"),
        Some(json!({ "hp": 4 })),
        "the first record's c3"
    );
    let errors = events_named(&g, "world.district.error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let m = errors[0].1["message"].as_str().unwrap();
    assert!(m.contains("chunk (1, 0)") && m.contains("c3"), "{m}");
    // Every entity once in the counts too, and the directory written back holds it once.
    assert_eq!(counts(&g).0 + counts(&g).1, 5, "{:?}", counts(&g));
    g.close().unwrap();
    let g = start(tmp.path(), &scene);
    assert_eq!(counts(&g).1, 5, "stored at a restart");
}

/// Review: the directory's stamp hashes the district files' content in config order, not
/// which scene each belongs to; the line indices its records name are over (scene, chunk,
/// file) order. Moving the same files to other scenes keeps the stamp and re-points every
/// line index: the directory is taken for the new configuration, a silent mix.
#[test]
fn review_moving_district_files_between_scenes_is_refused_not_mixed() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.jsonl"), line("a1", 5.0, 5.0) + "\n").unwrap();
    std::fs::write(tmp.path().join("b.jsonl"), line("b1", 6.0, 6.0) + "\n").unwrap();
    let scene = |first: &str, second: &str| {
        json!({
            "kits": [
                { "id": "game.engine" }, { "id": "world.ground" },
                { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9 } },
                { "id": "world.district", "config": { "worldDir": "w", "flushEveryTicks": 0, "districts": [
                    { "scene": first, "file": "a.jsonl" }, { "scene": second, "file": "b.jsonl" } ] } }
            ],
            "scenes": [ { "id": "a", "entry": { "x": 16, "z": 16 } }, { "id": "b", "entry": { "x": 16, "z": 16 } } ],
            "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ],
            "control": "hero"
        })
    };
    let mut g = start(tmp.path(), &scene("a", "b"));
    run(&mut g, &[set(2, "a1", 1), go(3, 200.0)], 5);
    g.close().unwrap();
    // The same files, a.jsonl now scene b's and b.jsonl scene a's.
    let swapped = scene("b", "a");
    let started = Game::from_scene_text(
        &swapped.to_string(),
        "scene.json",
        tmp.path(),
        &builtin_catalog(),
    );
    // Refused at start (the stamp covers each file's scene), naming the files and scenes.
    let err = match started {
        Ok(_) => panic!("a directory of other district assignments was taken"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("a.jsonl (scene \"b\")")
            && err.contains("b.jsonl (scene \"a\")")
            && err.contains("moved to another scene"),
        "{err}"
    );
    // The files back in their scenes, the directory is theirs again.
    let mut g = start(tmp.path(), &scene("a", "b"));
    run(&mut g, &[], 2);
    assert_eq!(data(&g, "a1"), Some(json!({ "hp": 1 })));
    assert_eq!(events_named(&g, "world.district.error"), vec![]);
    drop(g);
    let mut g = start(tmp.path(), &scene("a", "b"));
    run(
        &mut g,
        &[json!({ "tick": 1, "do": "enter", "scene": "b" })],
        2,
    );
    let live: Vec<String> = g
        .engine()
        .world()
        .iter()
        .map(|e| e.id.as_str().to_owned())
        .filter(|id| id != "hero")
        .collect();
    assert_eq!(live, ["b1"], "scene b holds its own b.jsonl's b1");
}

/// Review: a district file edited in place while the game runs (same length) is read again
/// when a chunk loads; a line that still parses is spawned as whatever it now says, under the
/// old line's index: the "file changed since it was indexed" check only catches a line that
/// no longer parses.
#[test]
fn review_a_district_line_changed_under_a_running_game_is_an_error_not_another_entity() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    let path = tmp.path().join("d.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"far\"", "\"fax\"");
    // In place (same inode, same length), as an editor saving over the file may do.
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    drop(f);
    run(&mut g, &[go(3, 300.0)], 6);
    let ids: Vec<String> = g
        .engine()
        .world()
        .iter()
        .map(|e| e.id.as_str().to_owned())
        .collect();
    let errors = events_named(&g, "world.district.error");
    assert!(
        !ids.contains(&"fax".to_owned()) && !errors.is_empty(),
        "live: {ids:?}; errors: {errors:?}"
    );
}

/// The same through a chunk of several lines (read in one span): the edited line is an
/// error naming what it now holds, the chunk's other line spawns.
#[test]
fn a_line_of_a_chunk_changed_under_a_running_game_is_an_error_and_the_others_spawn() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[go(2, 200.0)], 3);
    assert_eq!(position(&g, "c1"), None, "(0,0) released");
    let path = tmp.path().join("d.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"c1\"", "\"cx\"");
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    drop(f);
    run(&mut g, &[go(4, 16.0)], 6);
    assert!(position(&g, "cx").is_none() && position(&g, "c1").is_none());
    assert_eq!(position(&g, "c3"), Some((6.0, 6.0)));
    let errors = events_named(&g, "world.district.error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let m = errors[0].1["message"].as_str().unwrap();
    assert!(m.contains("line 1") && m.contains("`cx`"), "{m}");
}

/// Review: district.md says a failed write is heard by the next periodic write back (one
/// `world.district.error` per region file). A write on release that fails, with nothing
/// changing afterwards, is never heard while the game runs: the periodic write back returns
/// early when it has no changes and the last periodic outcome was good.
#[test]
fn review_a_failed_write_on_release_is_heard_by_the_next_periodic_write_back() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 5);
    let fs = Arc::new(FaultyFs::default());
    let mut g = start_with_fs(tmp.path(), &scene, fs.clone());
    // c3 changed at tick 2, written by the periodic write back of tick 5.
    run(&mut g, &[set(2, "c3", 5)], 5);
    wait_for(|| district_files(&tmp.path().join("w")) == ["d.0.0.wsd"]);
    // Then the disk fails, and c3's chunk is released at tick 7 (a write on release).
    fs.fail(Some(Op::Rename));
    run(&mut g, &[set(6, "c3", 6), go(7, 200.0)], 30);
    let errors = events_named(&g, "world.district.error");
    let err = g.close().unwrap_err().to_string();
    assert!(err.contains("d.0.0.wsd"), "{err}");
    assert!(
        !errors.is_empty(),
        "ticks 10..30 had four periodic write backs; none reported the failed write"
    );
    // Heard by the very next one (tick 10), naming the region.
    assert_eq!(errors[0].0, 10, "{errors:?}");
    assert_eq!(errors[0].1["region"], json!("d.0.0.wsd"), "{errors:?}");
}

/// Review: `run` stops at an input that is an error (a `set` naming an entity that is not
/// live) and returns before `Game::close`: the game is dropped, and dropping writes only what
/// was already sent. The differences of the ticks before the bad input are lost, and nothing
/// says so (the exit status is 1 for the input, the message names only the input).
#[test]
fn review_a_run_stopped_by_a_bad_input_still_writes_back_or_says_what_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    world(tmp.path(), "w", 0);
    write_inputs(
        tmp.path(),
        &[
            set(2, "c3", 5),
            json!({ "tick": 4, "do": "set", "entity": "nobody", "data": { "hp": 1 } }),
        ],
    );
    let out = bin()
        .current_dir(tmp.path())
        .args([
            "run",
            "scene.json",
            "--ticks",
            "6",
            "-q",
            "--inputs",
            "in.jsonl",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nobody"),
        "the input's error is still said: {stderr}"
    );
    let written = district_files(&tmp.path().join("w")) == ["d.0.0.wsd"];
    assert!(
        written || stderr.contains("district differences lost"),
        "c3's change of tick 2 is neither in the directory nor reported: {stderr}"
    );
}

/// Review: the same as `review_moving_district_files_between_scenes_is_refused_not_mixed`,
/// without a world directory: a save's stamps are compared file by file (name, length,
/// hash), not by scene, so the save loads into the swapped configuration.
#[test]
fn review_a_save_is_refused_when_its_district_files_moved_between_scenes() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.jsonl"), line("a1", 5.0, 5.0) + "\n").unwrap();
    std::fs::write(tmp.path().join("b.jsonl"), line("b1", 6.0, 6.0) + "\n").unwrap();
    let scene = |first: &str, second: &str| {
        json!({
            "kits": [
                { "id": "game.engine" }, { "id": "world.ground" },
                { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9 } },
                { "id": "world.district", "config": { "districts": [
                    { "scene": first, "file": "a.jsonl" }, { "scene": second, "file": "b.jsonl" } ] } }
            ],
            "scenes": [ { "id": "a", "entry": { "x": 16, "z": 16 } }, { "id": "b", "entry": { "x": 16, "z": 16 } } ],
            "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ],
            "control": "hero"
        })
    };
    let mut g = start(tmp.path(), &scene("a", "b"));
    run(&mut g, &[set(2, "a1", 1), go(3, 200.0)], 5);
    let save = tmp.path().join("s.json");
    g.save(&save).unwrap();
    drop(g);
    let mut g = start(tmp.path(), &scene("b", "a"));
    // Refused: the save belongs to other district assignments, and says which file; the game
    // goes on unchanged (scene a holds b.jsonl's b1 now).
    let err = common::refused_alike(&mut g, &save, common::Alone::NeedsTheGame);
    assert!(
        err.contains("stamps[0].scene") && err.contains("a.jsonl") && err.contains("\"b\""),
        "{err}"
    );
    run(&mut g, &[go(6, 16.0)], 8);
    let live: Vec<String> = g
        .engine()
        .world()
        .iter()
        .map(|e| e.id.as_str().to_owned())
        .filter(|id| id != "hero")
        .collect();
    assert_eq!(
        live,
        ["b1"],
        "scene a now holds b.jsonl's b1, not a.jsonl's a1"
    );
}

/// Review probe: two scenes on one directory; changes in each survive a restart in their
/// own scene, every entity once.
#[test]
fn review_probe_two_scenes_on_one_directory_survive_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.jsonl"), line("a1", 5.0, 5.0) + "\n").unwrap();
    std::fs::write(tmp.path().join("b.jsonl"), line("b1", 6.0, 6.0) + "\n").unwrap();
    let scene = json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9 } },
            { "id": "world.district", "config": { "worldDir": "w", "flushEveryTicks": 0, "districts": [
                "a.jsonl", { "scene": "b", "file": "b.jsonl" } ] } }
        ],
        "scenes": [ { "id": "a", "entry": { "x": 16, "z": 16 } }, { "id": "b", "entry": { "x": 16, "z": 16 } } ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ],
        "control": "hero"
    });
    let mut g = start(tmp.path(), &scene);
    run(
        &mut g,
        &[
            set(2, "a1", 1),
            json!({ "tick": 3, "do": "enter", "scene": "b" }),
            set(5, "b1", 2),
        ],
        6,
    );
    g.close().unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    assert_eq!(data(&g, "a1"), Some(json!({ "hp": 1 })));
    assert_eq!(data(&g, "b1"), None);
    run(
        &mut g,
        &[json!({ "tick": 3, "do": "enter", "scene": "b" })],
        5,
    );
    assert_eq!(data(&g, "a1"), None);
    assert_eq!(data(&g, "b1"), Some(json!({ "hp": 2 })));
    let (live, stored) = counts(&g);
    assert_eq!(live + stored, 2);
    assert_eq!(events_named(&g, "world.district.error"), vec![]);
}

/// Review probe: a damaged record's fallback leaves out a line a sound record holds (c1
/// carried from (0,0) into (1,0)): every entity once.
#[test]
fn review_probe_a_damaged_home_record_does_not_bring_back_an_entity_held_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(
        &mut g,
        &[
            json!({ "tick": 2, "do": "move", "entity": "c1", "to": { "x": 50, "z": 5 } }),
            set(2, "c3", 3),
        ],
        3,
    );
    g.close().unwrap();
    let file = tmp.path().join("w/d.0.0.wsd");
    let mut bytes = std::fs::read(&file).unwrap();
    let offset = u32::from_le_bytes(bytes[60..64].try_into().unwrap()) as usize;
    assert_eq!(bytes[56..58], [0, 0], "the first record is (0,0)'s");
    bytes[offset + 20 + 3] ^= 0x55;
    std::fs::write(&file, &bytes).unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    let c1 = g
        .engine()
        .world()
        .iter()
        .filter(|e| e.id.as_str() == "c1")
        .count();
    assert_eq!(c1, 1);
    assert_eq!(position(&g, "c1"), Some((50.0, 5.0)));
    assert_eq!(data(&g, "c3"), Some(json!(null)));
    let (live, stored) = counts(&g);
    assert_eq!(live + stored, 5);
    g.close().unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[], 2);
    assert_eq!(counts(&g).0 + counts(&g).1, 5);
    assert_eq!(position(&g, "c1"), Some((50.0, 5.0)));
}

/// `world-streaming world ARGS… DIR`: its exit code, stdout and stderr.
fn world_cli(args: &[&str], dir: &Path) -> (Option<i32>, String, String) {
    let out = bin().arg("world").args(args).arg(dir).output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

/// `world verify` and `world inspect` read the district region files beside the terrain's: each
/// record with its entities, the stamp, a damaged record named by file and chunk (exit 1), and
/// nothing written.
#[test]
fn world_verify_and_inspect_read_the_district_files_and_name_a_damaged_record() {
    let tmp = tempfile::tempdir().unwrap();
    two_records(tmp.path());
    let dir = tmp.path().join("w");
    let shown = dir.display().to_string();
    let cli = |args: &[&str]| {
        let (code, out, _) = world_cli(args, &dir);
        (code, out)
    };
    assert_eq!(
        cli(&["verify"]),
        (
            Some(0),
            format!(
                "{shown}: 0 region files, 0 chunk records, 1 district region file, \
                 2 district records, all sound\n"
            )
        )
    );
    let (code, text) = cli(&["inspect"]);
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..2],
        [
            format!("{shown}: 0 region files"),
            format!("{shown}: 1 district region file")
        ]
    );
    assert!(
        lines[2].starts_with("d.0.0.wsd  region 0 0  ")
            && lines[2].contains("header ok  format 2  district files 1  hash ")
            && lines[2].ends_with("chunk size 32  2 records"),
        "{text}"
    );
    // (0,0) holds c1 (changed) and c3 (moved within it); (1,0) holds c2.
    assert!(
        lines[3].starts_with("  chunk 0 0  offset ") && lines[3].ends_with("  entities 2  ok"),
        "{text}"
    );
    assert!(
        lines[4].starts_with("  chunk 1 0  offset ") && lines[4].ends_with("  entities 1  ok"),
        "{text}"
    );
    assert_eq!(lines.len(), 5, "{text}");
    let (_, doc) = cli(&["inspect", "--json"]);
    let doc: Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(doc["regions"], json!([]));
    let d = &doc["districtRegions"][0];
    assert_eq!(
        (&d["file"], &d["header"]),
        (&json!("d.0.0.wsd"), &json!("ok"))
    );
    assert_eq!(d["stamp"]["format"], json!(2));
    let entities: Vec<&Value> = d["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["entities"])
        .collect();
    assert_eq!(entities, [&json!(2), &json!(1)]);

    // A damaged record: named by file and chunk, exit 1, nothing written.
    damage_the_first_record(&dir.join("d.0.0.wsd"));
    let before = files(&dir);
    let (code, text) = cli(&["verify"]);
    assert_eq!(code, Some(1), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].starts_with("d.0.0.wsd: chunk 0 0: ") && lines[0].contains("CRC-32"),
        "{text}"
    );
    let (_, _, err) = world_cli(&["verify"], &dir);
    assert!(
        err.contains(&format!(
            "{shown}: 1 problem in 0 region files, 1 district region file"
        )),
        "{err}"
    );
    // inspect lists both records: (0,0) damaged (no count), (1,0) sound with its entity.
    let (code, text) = cli(&["inspect"]);
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[3].starts_with("  chunk 0 0  offset ")
            && !lines[3].contains("entities")
            && lines[3].contains("  damaged: ")
            && lines[3].contains("CRC-32"),
        "{text}"
    );
    assert!(
        lines[4].starts_with("  chunk 1 0  offset ") && lines[4].ends_with("  entities 1  ok"),
        "{text}"
    );
    assert_eq!(
        files(&dir),
        before,
        "nothing written, removed or copied aside"
    );
}

/// A directory holding both kinds: verify counts each, inspect lists the terrain's regions first
/// and then the district's, each kind checked against its own stamp (they differ, and that is
/// sound).
#[test]
fn world_verify_and_inspect_list_terrain_and_district_files_of_one_directory() {
    let tmp = tempfile::tempdir().unwrap();
    run_shared_walk(tmp.path(), 1);
    let dir = tmp.path().join("w");
    let shown = dir.display().to_string();
    let (code, text, _) = world_cli(&["verify"], &dir);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.starts_with(&format!(
            "{shown}: 1 region file, 1 chunk record, 2 district region files, "
        )) && text.ends_with(" district records, all sound\n"),
        "{text}"
    );
    let (_, text, _) = world_cli(&["inspect"], &dir);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("{shown}: 1 region file"), "{text}");
    assert!(
        lines[1].starts_with("r.0.0.wsr  region 0 0  ")
            && lines[1].contains("header ok  generator "),
        "{text}"
    );
    assert!(
        lines[2].starts_with("  chunk 0 0  ") && lines[2].ends_with("  edits 1  ok"),
        "{text}"
    );
    assert_eq!(
        lines[3],
        format!("{shown}: 2 district region files"),
        "{text}"
    );
    assert!(
        lines[4].starts_with("d.-1.0.wsd  region -1 0  ")
            && lines[4].contains("header ok  format 2  "),
        "{text}"
    );
    assert!(text.contains("\nd.0.0.wsd  region 0 0  "), "{text}");
}

/// Untrusted district region names: `world verify` never follows a link named like a region nor
/// opens a FIFO (it would block); each is a damaged header naming what it is, exit 1, and the
/// link's target is untouched.
#[cfg(unix)]
#[test]
fn world_verify_reads_no_district_region_that_is_a_link_or_a_fifo() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    std::fs::create_dir_all(&dir).unwrap();
    let outside = tmp.path().join("outside");
    std::fs::write(&outside, b"not a region").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("d.0.0.wsd")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("d.1.0.wsd"))
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo");
    let (code, text, _) = world_cli(&["verify"], &dir);
    assert_eq!(code, Some(1), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("d.0.0.wsd: header: ")
            && lines[0].contains("a symbolic link, not a regular file: not read"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("d.1.0.wsd: header: ") && lines[1].contains("not a regular file"),
        "{text}"
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"not a region");
}

/// A chunk released unchanged leaves its district lines as they are in the directory: written
/// back after the release and opened by a fresh game, its entities come back from their lines.
#[test]
fn a_chunk_released_unchanged_comes_back_from_its_lines_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[go(2, 200.0)], 4);
    assert_eq!(position(&g, "c1"), None, "stored with its chunk");
    g.close().unwrap();
    let mut g = start(tmp.path(), &scene);
    assert_eq!(counts(&g), (0, 5));
    run(&mut g, &[], 1);
    assert_eq!(position(&g, "c1"), Some((5.0, 5.0)));
    assert_eq!(position(&g, "c3"), Some((6.0, 6.0)));
    assert_eq!(counts(&g), (4, 1), "c1, c2, c3 and w1 live; far stored");
    g.close().unwrap();
}

/// A persistent district entity carried into a chunk that is not loaded stays live there; the
/// chunk's image written back holds that entity and the chunk's own district lines both, so a
/// restart brings back both.
#[test]
fn a_live_entity_in_an_unloaded_chunk_keeps_that_chunk_s_lines_in_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let scene = world(tmp.path(), "w", 0);
    let mut g = start(tmp.path(), &scene);
    run(
        &mut g,
        &[
            json!({ "tick": 2, "do": "tag", "entity": "c1", "tag": "persistent" }),
            json!({ "tick": 3, "do": "move", "entity": "c1", "to": { "x": 310, "z": 5 } }),
        ],
        4,
    );
    assert_eq!(position(&g, "c1"), Some((310.0, 5.0)), "persistent: live");
    assert_eq!(position(&g, "far"), None, "its chunk (9, 0) is not loaded");
    g.close().unwrap();
    let mut g = start(tmp.path(), &scene);
    run(&mut g, &[go(1, 300.0)], 3);
    assert_eq!(
        position(&g, "far"),
        Some((300.0, 5.0)),
        "the chunk's own line"
    );
    assert_eq!(position(&g, "c1"), Some((310.0, 5.0)));
    g.close().unwrap();
}
