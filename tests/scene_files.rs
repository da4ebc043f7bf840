//! A scene's files given as text (docs/reference/engines.md#scene-files-as-text) and saves as
//! text (docs/reference/engines.md#saves-as-text), through the Rust API: the same game as from
//! the scene's directory, the files read from the map and nowhere else, the refusals naming the
//! path or key, and a save as text that is the file's bytes with every check of a file load.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::{Game, SAVE_TEXT_NAME};
use world_streaming::kits::builtin_catalog;
use world_streaming::scene_files::SceneFiles;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap()
}

/// The shipped town scene (a district file) with the shipped JSON mod `keep_home` added under
/// `mods/`, as scene text.
fn town_with_mod() -> String {
    let mut scene: Value = serde_json::from_str(&read("examples/scenes/town.json")).unwrap();
    scene["mods"] = json!(["mods/keep_home.json"]);
    serde_json::to_string_pretty(&scene).unwrap()
}

/// The town's files, as the scene names them.
fn town_files() -> Vec<(String, String)> {
    vec![
        ("mods/keep_home.json".into(), read("mods/keep_home.json")),
        (
            "town.district.jsonl".into(),
            read("examples/scenes/town.district.jsonl"),
        ),
    ]
}

fn text_files(files: Vec<(String, String)>) -> SceneFiles {
    SceneFiles::from_texts(files).unwrap()
}

fn with_files(scene: &str, files: &SceneFiles) -> Result<Game, String> {
    Game::from_scene_text_with_files(scene, "scene.json", files, &builtin_catalog())
        .map_err(|e| e.to_string())
}

/// The scene and its files written to a directory: `dir/scene.json` and each file beside it.
fn on_disk(scene: &str, files: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scene.json"), scene).unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn town_inputs() -> Inputs {
    Inputs::read(&repo().join("examples/scenes/town.inputs.jsonl")).unwrap()
}

#[test]
fn a_scene_with_a_json_mod_and_a_district_file_gives_the_same_log_from_text_as_from_disk() {
    let scene = town_with_mod();
    let files = town_files();
    let dir = on_disk(&scene, &files);
    let mut from_disk = Game::from_scene_file(&dir.path().join("scene.json")).unwrap();
    let mut from_text = with_files(&scene, &text_files(files)).unwrap();
    // The state after every tick.
    let states = |game: &mut Game| {
        let mut out = Vec::new();
        game.run_observing(&town_inputs(), 12, |g, _| out.push(state_without_timing(g)))
            .unwrap();
        out
    };
    let text_states = states(&mut from_text);
    assert_eq!(states(&mut from_disk), text_states);
    assert_eq!(event_lines(&from_disk), event_lines(&from_text));
    // Not vacuous: the mod held an unload refused (its reason is "home") while the hero was
    // away, and the district file's entities came live.
    assert!(
        text_states
            .iter()
            .any(|s| s["refusals"].to_string().contains("\"home\"")),
        "the mod never refused an unload"
    );
    assert!(
        events_named(&from_text, "world.district.materialised").len() > 1,
        "the district file's entities never came live"
    );
}

#[test]
fn a_name_missing_from_the_files_is_the_missing_file_error_naming_the_path() {
    let scene = town_with_mod();
    let mut files = town_files();
    files.retain(|(name, _)| name != "mods/keep_home.json");
    let told = with_files(&scene, &text_files(files.clone()))
        .err()
        .unwrap();
    assert_eq!(
        told,
        "scene.json: mods[0]: expected a mod file, but mods/keep_home.json does not exist"
    );
    // The words a missing file on disk gets, the path named as the scene's directory holds it.
    let dir = on_disk(&scene, &files);
    let disk = Game::from_scene_file(&dir.path().join("scene.json"))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        disk.replace(&format!("{}/", dir.path().display()), ""),
        told
    );

    // A district file missing: the disk's words too.
    let mut files = town_files();
    files.retain(|(name, _)| name != "town.district.jsonl");
    let told = with_files(&scene, &text_files(files.clone()))
        .err()
        .unwrap();
    assert!(
        told.contains("town.district.jsonl: No such file or directory"),
        "{told}"
    );
    let dir = on_disk(&scene, &files);
    let disk = Game::from_scene_file(&dir.path().join("scene.json"))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        disk.replace(&format!("{}/", dir.path().display()), ""),
        told
    );
}

#[test]
fn the_files_are_read_from_the_map_and_nowhere_else() {
    // The district file exists on disk at this path (relative to the current directory, the
    // package root while tests run), but not in the map: not found.
    let mut scene: Value = serde_json::from_str(&town_with_mod()).unwrap();
    scene["kits"][3]["config"]["districts"] = json!(["examples/scenes/town.district.jsonl"]);
    scene["mods"] = json!(["mods/keep_home.json"]);
    assert!(repo().join("mods/keep_home.json").is_file());
    let told = with_files(&scene.to_string(), &text_files(Vec::new()))
        .err()
        .unwrap();
    assert!(
        told.contains("mods[0]: expected a mod file, but mods/keep_home.json does not exist"),
        "{told}"
    );
    assert!(
        told.contains("examples/scenes/town.district.jsonl: No such file or directory"),
        "{told}"
    );
}

#[test]
fn names_through_dot_dot_or_absolute_are_refused_naming_the_path() {
    let files = text_files(town_files());
    for (name, words) in [
        ("../mods/keep_home.json", "through `..`"),
        ("/etc/keep_home.json", "absolute path"),
    ] {
        let mut scene: Value = serde_json::from_str(&town_with_mod()).unwrap();
        scene["mods"] = json!([name]);
        let told = with_files(&scene.to_string(), &files).err().unwrap();
        assert!(
            told.starts_with(&format!("scene.json: mods[0]: {name}: expected a")),
            "{told}"
        );
        assert!(told.contains(words), "{told}");
        let mut scene: Value = serde_json::from_str(&town_with_mod()).unwrap();
        scene["kits"][3]["config"]["districts"] = json!([name]);
        let told = with_files(&scene.to_string(), &files).err().unwrap();
        assert!(told.contains(&format!("{name}: expected a")), "{told}");
        assert!(told.contains("(a district file)"), "{told}");
    }
}

#[test]
fn a_file_past_its_cap_is_refused_with_the_caps_words() {
    let mut files = town_files();
    // A mod of 16 MiB and one byte: JSON whitespace, refused before it is parsed.
    let big = format!("{}{}", read("mods/keep_home.json"), " ".repeat(16 << 20));
    files[0].1 = big;
    let told = with_files(&town_with_mod(), &text_files(files))
        .err()
        .unwrap();
    assert!(
        told.contains("mods/keep_home.json: the file is larger than the 16 MiB limit"),
        "{told}"
    );
}

/// A relative `worldDir` in a scene whose files are given as text is a directory on disk,
/// relative to the current directory (the package root while tests run), as `save` paths are.
#[test]
fn a_relative_world_dir_with_files_as_text_is_relative_to_the_current_directory() {
    let rel = format!("target/scene-files-test-{}/world", std::process::id());
    let _ = std::fs::remove_dir_all(repo().join(&rel));
    let scene = json!({
        "kits": [
            { "id": "game.engine" },
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1 } },
            { "id": "world.terrain", "config": { "seed": 3, "cellsPerChunk": 8, "worldDir": rel } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
    });
    let game = with_files(&scene.to_string(), &text_files(Vec::new())).unwrap();
    assert!(repo().join(&rel).join("session.lock").is_file());
    game.close().unwrap();
    std::fs::remove_dir_all(repo().join(&rel).parent().unwrap()).unwrap();
}

#[test]
fn a_save_as_text_is_the_files_bytes_and_loads_back_to_the_same_state() {
    let mut game = with_files(&town_with_mod(), &text_files(town_files())).unwrap();
    game.run(&town_inputs(), 8).unwrap();
    let text = game.save_text().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.save.json");
    game.save(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
    let at_save = state_without_timing(&game);
    run(&mut game, &[], 12);
    assert_ne!(state_without_timing(&game), at_save);
    game.load_text(&text).unwrap();
    assert_eq!(state_without_timing(&game), at_save);
    // And the same save loads into a fresh game of the scene.
    let mut fresh = with_files(&town_with_mod(), &text_files(town_files())).unwrap();
    fresh.load_text(&text).unwrap();
    assert_eq!(state_without_timing(&fresh), at_save);
    assert_eq!(fresh.save_text().unwrap(), text);
}

#[test]
fn a_bad_save_as_text_is_refused_like_the_file_and_changes_nothing() {
    let mut game = with_files(&town_with_mod(), &text_files(town_files())).unwrap();
    game.run(&town_inputs(), 8).unwrap();
    let good: Value = serde_json::from_str(&game.save_text().unwrap()).unwrap();
    let mut wrong_tick = good.clone();
    wrong_tick["tick"] = json!("soon");
    let mut bad_section = good.clone();
    bad_section["kits"] = json!({ "world.district": { "stamps": 3 } });
    let dir = tempfile::tempdir().unwrap();
    for bad in [
        "{".to_owned(),
        "[]".to_owned(),
        wrong_tick.to_string(),
        bad_section.to_string(),
        " ".repeat((16 << 20) + 1),
    ] {
        let state = state_without_timing(&game);
        let events = event_lines(&game);
        let save = game.save_text().unwrap();
        let told = game.load_text(&bad).unwrap_err().to_string();
        assert_eq!(state_without_timing(&game), state, "{told}");
        assert_eq!(event_lines(&game), events, "{told}");
        assert_eq!(game.save_text().unwrap(), save, "{told}");
        // The file's message, the file named "save".
        let path = dir.path().join("bad.save.json");
        std::fs::write(&path, &bad).unwrap();
        let file = game.load(&path).unwrap_err().to_string();
        assert!(told.starts_with(&format!("{SAVE_TEXT_NAME}: ")), "{told}");
        assert_eq!(
            file.replace(&path.display().to_string(), SAVE_TEXT_NAME),
            told
        );
    }
}
