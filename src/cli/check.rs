//! `world-streaming check FILE…`: validate scene, mod, inputs and save files, reporting every
//! problem found (each naming the file and the JSON path or line). Inputs files that follow a
//! scene file on the command line are also checked against that scene (entities, scenes, and with
//! `--ticks` the saves past the target); a save that follows one is checked as loading it into
//! that scene would check it (`Game::check_save`), one alone by what every game refuses
//! (`files::save::check`).

use std::path::Path;

use anyhow::bail;
use indexmap::IndexMap;
use serde::de::IgnoredAny;
use serde_json::json;
use world_streaming::files::inputs::Inputs;
use world_streaming::files::scene::SceneFile;
use world_streaming::files::{display_name, parse_json, parse_typed, read_text, FileError};
use world_streaming::game::{Game, GameError};
use world_streaming::kits::builtin_catalog;

/// A scene file checked on the command line: what later files are checked against.
struct Scene {
    file: SceneFile,
    /// Its name in messages.
    name: String,
    /// Its directory (mod paths are relative to it).
    base: std::path::PathBuf,
}

pub fn run(files: &[std::path::PathBuf], ticks: Option<u64>) -> anyhow::Result<()> {
    let mut problems: Vec<String> = Vec::new();
    let mut scene: Option<Scene> = None;
    for path in files {
        match check_file(path, scene.as_ref(), ticks) {
            Ok((kind, parsed)) => {
                println!("{}: ok ({kind})", display_name(path));
                if parsed.is_some() {
                    scene = parsed;
                }
            }
            Err(list) => problems.extend(list),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("{}", problems.join("\n"))
    }
}

fn strings(errors: Vec<FileError>) -> Vec<String> {
    errors.into_iter().map(|e| e.to_string()).collect()
}

fn game_errors(e: GameError) -> Vec<String> {
    match e {
        GameError::Files(list) => strings(list),
        e => vec![e.to_string()],
    }
}

/// A mod on its own is loaded (its Lua top level run in the sandbox) in a game with the
/// built-in kits, so what loading it in a scene would refuse is refused here too.
fn check_mod(path: &Path) -> Result<(), Vec<String>> {
    let scene = json!({
        "kits": [ { "id": "world.ground" }, { "id": "world.streaming" } ],
        "mods": [ path.to_string_lossy() ]
    });
    Game::from_scene_text(
        &scene.to_string(),
        "check",
        Path::new(""),
        &builtin_catalog(),
    )
    .map(drop)
    .map_err(game_errors)
}

/// A save that follows a scene: loaded into a game of that scene, as far as a load checks
/// before it changes anything (the same checks, the same first problem).
fn check_save_against(path: &Path, scene: &Scene) -> Result<(), Vec<String>> {
    let game = Game::from_scene(&scene.file, &scene.name, &scene.base, &builtin_catalog())
        .map_err(game_errors)?;
    game.check_save(path).map_err(|e| vec![e.to_string()])
}

/// Checks one file; returns what kind it was (and the scene, for a scene), or every problem.
fn check_file(
    path: &Path,
    scene: Option<&Scene>,
    ticks: Option<u64>,
) -> Result<(&'static str, Option<Scene>), Vec<String>> {
    let file = display_name(path);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "lua" => check_mod(path).map(|_| ("Lua mod", None)),
        "jsonl" => {
            let inputs = Inputs::read(path).map_err(strings)?;
            for w in inputs.path_warnings(path) {
                eprintln!("{w}");
            }
            match scene {
                Some(scene) => {
                    let errors = inputs.check_against(&scene.file, ticks);
                    if errors.is_empty() {
                        Ok(("inputs, checked against the scene before it", None))
                    } else {
                        Err(strings(errors))
                    }
                }
                None => Ok(("inputs", None)),
            }
        }
        _ => {
            let text = read_text(path).map_err(|e| vec![e.to_string()])?;
            // The kind from the top-level keys alone (no value tree: a scene may be large).
            let keys: IndexMap<String, IgnoredAny> = match serde_json::from_str(&text) {
                Ok(keys) => keys,
                Err(_) => {
                    // Not an object of keys: the parser says why, with line and column.
                    let value = parse_json(&text, &file).map_err(|e| vec![e.to_string()])?;
                    return Err(vec![format!(
                        "{file}: expected a scene, a JSON mod or a save (a JSON object), got {}",
                        world_streaming::json::describe(&value)
                    )]);
                }
            };
            let has = |k: &str| keys.contains_key(k);
            if has("format") {
                if let Some(scene) = scene {
                    check_save_against(path, scene)?;
                    return Ok(("save, checked against the scene before it", None));
                }
                let value = parse_json(&text, &file).map_err(|e| vec![e.to_string()])?;
                world_streaming::files::save::check(&value)
                    .map(|_| ("save", None))
                    .map_err(|p| vec![FileError::invalid(&file, p).to_string()])
            } else if has("kits") {
                let scene: SceneFile =
                    parse_typed(&text, &file).map_err(|e| vec![e.to_string()])?;
                let base = path.parent().unwrap_or(Path::new("."));
                Game::from_scene(&scene, &file, base, &builtin_catalog()).map_err(game_errors)?;
                for w in world_streaming::mods::scene_mod_warnings(path) {
                    eprintln!("{w}");
                }
                let scene = Scene {
                    file: scene,
                    name: file.clone(),
                    base: base.to_path_buf(),
                };
                Ok(("scene", Some(scene)))
            } else if has("id") || has("hook") || has("set") || has("rules") {
                check_mod(path)?;
                for w in world_streaming::mods::mod_warnings(path) {
                    eprintln!("{w}");
                }
                Ok(("JSON mod", None))
            } else {
                Err(vec![format!(
                    "{file}: expected a scene (with \"kits\"), a JSON mod (with \"id\"), a save \
                     (with \"format\"), inputs (.jsonl) or a Lua mod (.lua)"
                )])
            }
        }
    }
}
