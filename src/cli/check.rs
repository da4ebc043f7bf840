//! `world-streaming check FILE…`: validate scene, mod, inputs and save files, reporting every
//! problem found (each naming the file and the JSON path or line).

use std::path::Path;

use anyhow::bail;
use world_streaming::files::{display_name, parse_json, read_text, FileError};
use world_streaming::game::{Game, GameError};
use world_streaming::host::{HOOK_CHUNK_LOAD, HOOK_CHUNK_UNLOAD};
use world_streaming::mods::{check_hooks, read_mod};

pub fn run(files: &[std::path::PathBuf]) -> anyhow::Result<()> {
    let mut problems: Vec<String> = Vec::new();
    for path in files {
        match check_file(path) {
            Ok(kind) => println!("{}: ok ({kind})", display_name(path)),
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

/// Checks one file; returns what kind it was, or every problem.
fn check_file(path: &Path) -> Result<&'static str, Vec<String>> {
    let file = display_name(path);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "lua" => read_mod(path).map(|_| "Lua mod").map_err(strings),
        "jsonl" => {
            let text = read_text(path).map_err(|e| vec![e.to_string()])?;
            world_streaming::files::inputs::Inputs::parse(&text, &file)
                .map(|_| "inputs")
                .map_err(strings)
        }
        _ => {
            let text = read_text(path).map_err(|e| vec![e.to_string()])?;
            let value = parse_json(&text, &file).map_err(|e| vec![e.to_string()])?;
            let obj = value.as_object();
            let has = |k: &str| obj.is_some_and(|o| o.contains_key(k));
            if has("format") && value["format"] == world_streaming::files::save::SAVE_FORMAT {
                world_streaming::files::save::check(&value)
                    .map(|_| "save")
                    .map_err(|p| vec![FileError::invalid(&file, p).to_string()])
            } else if has("kits") {
                match Game::from_scene_file(path) {
                    Ok(_) => Ok("scene"),
                    Err(GameError::Files(list)) => Err(strings(list)),
                    Err(e) => Err(vec![e.to_string()]),
                }
            } else if has("id") || has("hook") || has("set") {
                let m = read_mod(path).map_err(strings)?;
                // On its own, a mod is checked against the hooks of the built-in kits.
                let declared = [HOOK_CHUNK_LOAD.to_owned(), HOOK_CHUNK_UNLOAD.to_owned()];
                let problems = check_hooks(std::slice::from_ref(&m), &declared);
                if !problems.is_empty() {
                    return Err(strings(problems));
                }
                Ok("JSON mod")
            } else {
                Err(vec![format!(
                    "{file}: expected a scene (with \"kits\"), a JSON mod (with \"id\"), a save \
                     (with \"format\"), inputs (.jsonl) or a Lua mod (.lua)"
                )])
            }
        }
    }
}
