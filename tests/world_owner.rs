//! One owner per world directory, and no silent loss (docs/reference/world-dir.md#what-is-stored,
//! issue 22): a game holds its `worldDir`'s lock (`session.lock`) as long as it lives, a second
//! game — in this process or another — is refused with a clear error, `world verify|inspect` read
//! without it; a write back that fails is a `world.terrain.error` event, retried, and edits still
//! not written when the game ends fail the run (exit 1) naming every region file and how many
//! chunks.

mod common;

use std::path::Path;

use assert_cmd::Command;
use common::{apply, events_named};
use serde_json::{json, Value};
use world_streaming::game::{Game, GameError};
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::terrain::store::{self, StoreError};

fn bin() -> Command {
    Command::cargo_bin("world-streaming").unwrap()
}

fn scene(dir: &Path, flush: u64) -> Value {
    json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 64 } },
            { "id": "world.terrain", "config": {
                "seed": 7, "workers": 1, "flushEveryTicks": flush,
                "worldDir": dir.to_str().unwrap()
            } }
        ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } }
        ],
        "control": "hero"
    })
}

fn new_game(scene: &Value) -> Result<Game, GameError> {
    Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        Path::new("."),
        &builtin_catalog(),
    )
}

fn in_use(dir: &Path) -> String {
    format!(
        "world directory {} is in use by another game (lock file {} held)",
        dir.display(),
        dir.join("session.lock").display()
    )
}

/// A game on `dir`, ready, with one edit in each of chunks (0, 0) and (-1, 0) (regions
/// r.0.0 and r.-1.0).
fn edited(dir: &Path, flush: u64) -> Game {
    let mut g = new_game(&scene(dir, flush)).unwrap();
    g.run_until_ready("hero", 100).unwrap();
    let tick = g.engine().tick_count() + 1;
    for x in [5.5, -5.5] {
        apply(
            &mut g,
            json!({"tick": tick, "do": "edit", "at": {"x": x, "z": 5.5}, "height": 999}),
        );
    }
    assert_eq!(events_named(&g, "world.terrain.edit.refused"), vec![]);
    g
}

#[test]
fn two_games_in_one_process_cannot_share_a_world_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    let first = edited(&dir, 0);
    let err = new_game(&scene(&dir, 0))
        .err()
        .expect("the second game started");
    assert!(
        matches!(&err, GameError::WorldInUse { dir: d, lock } if *d == dir && *lock == dir.join("session.lock")),
        "{err:?}"
    );
    assert_eq!(err.to_string(), in_use(&dir));
    // The first game is unharmed and writes its edits back.
    first.close().unwrap();
    // Released: a third game opens it and finds the edits.
    let third = new_game(&scene(&dir, 0)).unwrap();
    drop(third);
    let regions = store::read_dir(&dir).unwrap();
    let files: Vec<&str> = regions.iter().map(|r| r.file.as_str()).collect();
    assert_eq!(files, ["r.-1.0.wsr", "r.0.0.wsr"]);
}

/// A child process forked while a game holds the directory shares the game's open files until
/// it execs (or exits): a program spawned by another thread, say. With `flock` the lock went
/// with the open file, so such a child kept the directory locked after the game was gone, and
/// the next game was refused ("in use by another game") though nothing held it: a flaky
/// failure of this suite under load. The record lock belongs to the game's process alone.
#[test]
fn a_forked_child_does_not_keep_the_directory_locked_once_its_game_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    let first = new_game(&scene(&dir, 0)).unwrap();
    // SAFETY: the child only sleeps and exits (both async-signal-safe), holding a copy of
    // every open descriptor meanwhile, as a child between fork and exec does.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork failed");
    if child == 0 {
        unsafe {
            libc::sleep(3);
            libc::_exit(0);
        }
    }
    first.close().unwrap();
    let second = new_game(&scene(&dir, 0));
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(child, &mut status, 0) };
    let second = second.expect("the directory is free once its game is gone");
    // And it is held again: a third game is refused while the second lives.
    let err = new_game(&scene(&dir, 0))
        .err()
        .expect("a third game started");
    assert_eq!(err.to_string(), in_use(&dir));
    drop(second);
}

#[test]
fn a_second_run_process_is_refused_while_a_game_holds_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    let holder = new_game(&scene(&dir, 0)).unwrap();
    let scene_file = tmp.path().join("scene.json");
    std::fs::write(&scene_file, scene(&dir, 0).to_string()).unwrap();
    let out = bin()
        .args(["run", "--ticks", "3"])
        .arg(&scene_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&in_use(&dir)), "{stderr}");
    // `world verify` and `world inspect` read it all the same.
    for cmd in ["verify", "inspect"] {
        let out = bin().args(["world", cmd]).arg(&dir).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "world {cmd}: {out:?}");
    }
    drop(holder);
    let out = bin()
        .args(["run", "--ticks", "3", "-q"])
        .arg(&scene_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn world_verify_and_inspect_create_no_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    edited(&dir, 0).close().unwrap();
    let copy = tmp.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for f in ["r.0.0.wsr", "r.-1.0.wsr"] {
        std::fs::copy(dir.join(f), copy.join(f)).unwrap();
    }
    for cmd in ["verify", "inspect"] {
        bin().args(["world", cmd]).arg(&copy).assert().success();
    }
    assert!(!copy.join("session.lock").exists());
}

/// A directory squatting `r.0.0.wsr.tmp` (as a full disk or a read-only directory would):
/// region r.0.0 cannot be written, r.-1.0 can.
fn squat(dir: &Path) -> std::path::PathBuf {
    let tmp = dir.join("r.0.0.wsr.tmp");
    std::fs::create_dir_all(tmp.join("in")).unwrap();
    tmp
}

#[test]
fn a_failed_write_back_is_an_event_is_retried_and_ends_well_once_the_fault_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    let squatter = squat(&dir);
    let mut g = edited(&dir, 2);
    // Ticks 2, 4, … write back; each hears the outcome of the one before.
    for _ in 0..6 {
        g.tick();
    }
    let errors = events_named(&g, "world.terrain.error");
    assert!(!errors.is_empty());
    for (_, e) in &errors {
        assert_eq!(
            (&e["x"], &e["z"], &e["region"], &e["chunks"]),
            (&json!(0), &json!(0), &json!("r.0.0.wsr"), &json!(1)),
            "{e}"
        );
        let m = e["message"].as_str().unwrap();
        assert!(m.starts_with("cannot write r.0.0.wsr: remove "), "{m}");
        assert!(m.ends_with("its edits are kept in memory and written at the next write back"));
    }
    // The other region was written; this one not.
    let files: Vec<String> = store::read_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|r| r.file)
        .collect();
    assert_eq!(files, ["r.-1.0.wsr"]);
    // The fault gone (once the write in flight is done: it still fails), the next write back
    // writes it, with no new edit.
    let terrain = g
        .kit::<world_streaming::kits::terrain::TerrainKit>()
        .unwrap();
    assert!(terrain.flush().is_err());
    std::fs::remove_dir_all(&squatter).unwrap();
    let seen = errors.len();
    for _ in 0..4 {
        g.tick();
    }
    // One more event: the outcome of the last write that failed, heard at the write that
    // succeeds; none after.
    assert_eq!(events_named(&g, "world.terrain.error").len(), seen + 1);
    let files: Vec<String> = store::read_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|r| r.file)
        .collect();
    assert_eq!(files, ["r.-1.0.wsr", "r.0.0.wsr"]);
    g.close().unwrap();
}

#[test]
fn close_reports_the_edits_it_could_not_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    squat(&dir);
    let g = edited(&dir, 0);
    let err = g.close().unwrap_err();
    let GameError::Unsaved(StoreError::Unsaved { failures, .. }) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(failures.len(), 1);
    assert_eq!(
        (failures[0].file.as_str(), failures[0].chunks),
        ("r.0.0.wsr", 1)
    );
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "edits lost: world directory {}: 1 modified chunk not written: {} (1 chunk: remove ",
            dir.display(),
            dir.join("r.0.0.wsr").display()
        )),
        "{text}"
    );
    // Nothing else was lost; the lock is released.
    let files: Vec<String> = store::read_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|r| r.file)
        .collect();
    assert_eq!(files, ["r.-1.0.wsr"]);
    drop(new_game(&scene(&dir, 0)).unwrap());
}

#[test]
fn a_run_that_ends_with_unsaved_edits_exits_1_naming_the_files_and_the_count() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    squat(&dir);
    let scene_file = tmp.path().join("scene.json");
    std::fs::write(&scene_file, scene(&dir, 4).to_string()).unwrap();
    let inputs = tmp.path().join("inputs.jsonl");
    let edits: String = [5.5, -5.5]
        .iter()
        .map(|x| {
            format!(
                "{}\n",
                json!({"tick": 6, "do": "edit", "at": {"x": x, "z": 5.5}, "height": 999})
            )
        })
        .collect();
    std::fs::write(&inputs, edits).unwrap();
    let events = tmp.path().join("events.jsonl");
    let out = bin()
        .args(["run", "--ticks", "20", "-q", "--inputs"])
        .arg(&inputs)
        .arg("--events")
        .arg(&events)
        .arg(&scene_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "1 modified chunk not written: {} (1 chunk: ",
            dir.join("r.0.0.wsr").display()
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let text = std::fs::read_to_string(&events).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("world.terrain.error") && l.contains("\"region\":\"r.0.0.wsr\"")),
        "{text}"
    );
    // The same run with the fault gone exits 0.
    std::fs::remove_dir_all(dir.join("r.0.0.wsr.tmp")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    bin()
        .args(["run", "--ticks", "20", "-q", "--inputs"])
        .arg(&inputs)
        .arg(&scene_file)
        .assert()
        .success();
}

#[cfg(unix)]
#[test]
fn world_verify_names_a_fifo_or_a_link_as_a_region_file_and_never_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    std::fs::create_dir(&dir).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("r.0.0.wsr"))
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", dir.join("r.1.0.wsr")).unwrap();
    let out = bin().args(["world", "verify"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("r.0.0.wsr") && text.contains("a FIFO, not a regular file"),
        "{text}"
    );
    assert!(
        text.contains("r.1.0.wsr") && text.contains("a symbolic link, not a regular file"),
        "{text}"
    );
}
