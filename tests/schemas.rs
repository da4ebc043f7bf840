//! The JSON Schemas: the checked-in copies match the Rust types, and every example, mod, inputs
//! line, state and save the repo ships or produces validates against its schema.

use std::path::{Path, PathBuf};

use serde_json::Value;
use world_streaming::files::schemas;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn schema(name: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("schemas").join(name)).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

fn assert_valid(validator: &jsonschema::Validator, instance: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    v.sort();
    v
}

#[test]
fn the_checked_in_schemas_match_the_rust_types() {
    for (name, text) in schemas::all() {
        let on_disk =
            std::fs::read_to_string(repo().join("schemas").join(name)).unwrap_or_default();
        assert!(
            on_disk == text,
            "schemas/{name} drifted; regenerate with: {}",
            schemas::REGENERATE
        );
    }
}

#[test]
fn every_example_scene_and_json_mod_carries_its_schema_and_validates() {
    let scene = schema("scene.schema.json");
    let mods = schema("mod.schema.json");
    let scenes = files("examples/scenes", ".json");
    assert!(scenes.len() >= 5);
    for (paths, validator, schema_file) in [
        (scenes, &scene, "scene.schema.json"),
        (files("mods", ".json"), &mods, "mod.schema.json"),
    ] {
        for path in paths {
            let value: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let declared = value["$schema"]
                .as_str()
                .unwrap_or_else(|| panic!("{} has no $schema", path.display()));
            assert!(
                declared.ends_with(schema_file),
                "{}: {declared}",
                path.display()
            );
            assert!(
                path.parent().unwrap().join(declared).exists(),
                "{}: {declared} does not exist",
                path.display()
            );
            assert_valid(validator, &value, &path.display().to_string());
        }
    }
}

#[test]
fn every_example_inputs_line_validates() {
    let line_schema = schema("inputs-line.schema.json");
    for path in files("examples/scenes", ".inputs.jsonl") {
        for (i, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            let value: Value = serde_json::from_str(line).unwrap();
            assert_valid(
                &line_schema,
                &value,
                &format!("{}:{}", path.display(), i + 1),
            );
        }
    }
}

#[test]
fn configs_validate_against_their_own_schemas() {
    let streaming = schema("streaming-config.schema.json");
    let ground = schema("ground-config.schema.json");
    for path in files("examples/scenes", ".json") {
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for kit in value["kits"].as_array().unwrap() {
            let config = kit
                .get("config")
                .cloned()
                .unwrap_or(Value::Object(Default::default()));
            match kit["id"].as_str().unwrap() {
                "world.streaming" => assert_valid(&streaming, &config, "streaming config"),
                "world.ground" => assert_valid(&ground, &config, "ground config"),
                _ => {}
            }
        }
    }
    assert!(!streaming.is_valid(&serde_json::json!({"radius": 65})));
    assert!(!streaming.is_valid(&serde_json::json!({"radious": 1})));
}

#[test]
fn the_state_and_a_save_validate_against_their_schemas() {
    use world_streaming::game::Game;
    let mut game = Game::from_scene_file(&repo().join("examples/scenes/drive.json")).unwrap();
    let inputs =
        std::fs::read_to_string(repo().join("examples/scenes/drive.inputs.jsonl")).unwrap();
    let inputs = world_streaming::files::inputs::Inputs::parse(&inputs, "drive").unwrap();
    game.run(&inputs, 60).unwrap();
    assert_valid(
        &schema("state.schema.json"),
        &serde_json::to_value(game.state()).unwrap(),
        "state",
    );
    let save = serde_json::to_value(game.engine().save_document()).unwrap();
    assert_valid(&schema("save.schema.json"), &save, "save");
}

#[test]
fn a_district_config_and_save_with_a_world_directory_validate() {
    let config = schema("district-config.schema.json");
    let good = serde_json::json!({"districts": ["d.jsonl"], "worldDir": "w", "flushEveryTicks": 0});
    assert_valid(&config, &good, "district config");
    assert!(!config.is_valid(&serde_json::json!({"worldDir": "w", "flushEveryTicks": -1})));
    assert!(!config.is_valid(&serde_json::json!({"flushEvery": 5})));
    let save = schema("district-save.schema.json");
    let section = serde_json::json!({
        "stamps": [{"file": "d.jsonl", "length": 10, "hash": "0123456789abcdef"}],
        "lastScene": "main", "live": [], "records": [], "gone": [], "stored": 4,
        "worldDir": "w", "image": "00000000deadbeef"
    });
    assert_valid(&save, &section, "district save");
    let mut bad = section.clone();
    bad["image"] = serde_json::json!(7);
    assert!(!save.is_valid(&bad));
}
