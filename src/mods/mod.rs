//! Mods: JSON mods ([`json`]) and sandboxed Lua mods ([`lua`]), read from the files a scene lists
//! and installed as hook handlers in mod order. Consecutive JSON mods of a hook share one indexed
//! handler; each Lua mod runs in its own sandboxed state.

pub mod json;
#[cfg(feature = "lua")]
pub mod lua;
#[cfg(not(feature = "lua"))]
#[path = "no_lua.rs"]
pub mod lua;

use std::path::Path;
use std::rc::Rc;

use indexmap::IndexMap;
use serde_json::json;

use crate::fileio::{parse_json, read_text, FileError};
use crate::host::{Engine, HookHandler, Log, ModId, MOD_ERROR};
use crate::json::{from_value, Problem};
use crate::kits::streaming::{StreamingService, STREAMING};
use crate::scene_files::SceneFiles;

use self::json::{JsonMod, JsonRules};

/// Why a Lua mod is refused on a build without the `lua` feature (the wasm build): the message
/// that follows the scene's `mods[i]` (docs/reference/web.md#lua-mods-need-the-native-build).
pub const LUA_NEEDS_NATIVE: &str = "Lua mods need the native build (this build has JSON mods only)";

/// The `hook` reported in `mod.error` when a Lua mod fails while loading (outside any hook).
pub const LOAD_HOOK: &str = "mod.load";

/// A mod file, read and checked.
pub struct ModFile {
    /// The file's name, for messages.
    pub file: String,
    /// The mod's id: a JSON mod's `id`, a Lua mod's file stem.
    pub id: ModId,
    /// Its content.
    pub source: ModSource,
}

/// What a mod file holds.
pub enum ModSource {
    /// A JSON mod.
    Json(Box<JsonMod>),
    /// Lua source text (syntax already checked).
    #[cfg(feature = "lua")]
    Lua(String),
}

/// Reads a mod file: `.json` or `.lua` by extension. Returns every problem found.
pub fn read_mod(path: &Path) -> Result<ModFile, Vec<FileError>> {
    let text = read_text(path).map_err(|e| vec![e])?;
    parse_mod(text, path)
}

/// The warnings of the JSON mods a scene file lists ([`JsonMod::warnings`]), as
/// `warning: FILE: PATH: message` lines; files that cannot be read or parsed are left to the
/// errors of loading the scene.
pub fn scene_mod_warnings(scene_path: &Path) -> Vec<String> {
    let files = SceneFiles::dir(scene_path.parent().unwrap_or(Path::new(".")));
    let Ok(text) = read_text(scene_path) else {
        return Vec::new();
    };
    let Ok(scene) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let mods = scene
        .get("mods")
        .and_then(|m| m.as_array())
        .cloned()
        .unwrap_or_default();
    mods.iter()
        .filter_map(|m| m.as_str())
        .filter(|m| m.ends_with(".json"))
        .flat_map(|m| mod_warnings_in(&files, m))
        .collect()
}

/// The warnings of one JSON mod file (none for a Lua mod or a file that does not parse).
pub fn mod_warnings(path: &Path) -> Vec<String> {
    match read_text(path) {
        Ok(text) => warnings_of(&text, &crate::fileio::display_name(path)),
        Err(_) => Vec::new(),
    }
}

/// [`mod_warnings`] of the mod `name` of a scene's `files` (its directory, or files given as
/// text).
pub fn mod_warnings_in(files: &SceneFiles, name: &str) -> Vec<String> {
    match files.read_text(name) {
        Ok(text) => warnings_of(&text, &files.name(name)),
        Err(_) => Vec::new(),
    }
}

/// The warnings of a JSON mod's `text` (`file` names it).
fn warnings_of(text: &str, file: &str) -> Vec<String> {
    match serde_json::from_str::<JsonMod>(text) {
        Ok(m) => m
            .warnings()
            .into_iter()
            .map(|p| format!("warning: {file}: {p}"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Parses mod text as the file `path` (its extension tells JSON from Lua; a Lua mod's id is the
/// file stem). Returns every problem found.
pub fn parse_mod(text: String, path: &Path) -> Result<ModFile, Vec<FileError>> {
    let file = crate::fileio::display_name(path);
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => {
            let value = parse_json(&text, &file).map_err(|e| vec![e])?;
            let m: JsonMod =
                from_value(&value, "").map_err(|p| vec![FileError::invalid(&file, p)])?;
            let problems: Vec<FileError> = m
                .problems()
                .into_iter()
                .map(|p| FileError::invalid(&file, p))
                .collect();
            if !problems.is_empty() {
                return Err(problems);
            }
            Ok(ModFile {
                id: ModId::new(&m.id),
                file,
                source: ModSource::Json(Box::new(m)),
            })
        }
        #[cfg(not(feature = "lua"))]
        Some("lua") => Err(vec![FileError::Io {
            file,
            message: LUA_NEEDS_NATIVE.into(),
        }]),
        #[cfg(feature = "lua")]
        Some("lua") => {
            lua::check_syntax(&text, &file).map_err(|e| vec![e])?;
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(ModFile {
                id: ModId::new(&stem),
                file,
                source: ModSource::Lua(text),
            })
        }
        _ => Err(vec![FileError::Io {
            file,
            message: "expected a mod file ending in .json or .lua".into(),
        }]),
    }
}

/// The rules of the JSON mods among `mods` whose `hook` is not one of `declared`, each as an
/// error naming the file, the JSON path and the hooks there are.
pub fn check_hooks(mods: &[ModFile], declared: &[String]) -> Vec<FileError> {
    let mut out = Vec::new();
    for m in mods {
        #[cfg_attr(not(feature = "lua"), allow(irrefutable_let_patterns))]
        let ModSource::Json(j) = &m.source
        else {
            continue;
        };
        for (path, rule) in j.rule_specs() {
            if !declared.contains(&rule.hook) {
                out.push(FileError::invalid(
                    &m.file,
                    Problem::new(
                        path,
                        format!(
                            "unknown hook {:?}; expected one of: {}",
                            rule.hook,
                            declared.join(", ")
                        ),
                    ),
                ));
            }
        }
    }
    out
}

/// One handler slot of a hook, in mod order.
enum Slot {
    Json(JsonRules),
    #[cfg(feature = "lua")]
    Lua(Box<dyn HookHandler>),
}

/// Installs `mods` into `engine` in mod order: `set`s applied (the last wins), hook handlers
/// registered, Lua mods run in their sandboxes. A Lua mod failing at load is reported as a
/// `mod.error` event (hook `mod.load`) and keeps the handlers it registered before failing.
/// Returns what a save holds of each Lua mod, in mod order.
pub fn install(
    mods: Vec<ModFile>,
    engine: &mut Engine,
    seed: u64,
    log: &Log,
) -> Result<Vec<lua::LuaModState>, Vec<FileError>> {
    install_from(mods, 0, engine, seed, log)
}

/// [`install`] for mods that come after `first` others in mod order (their handlers are asked
/// after those already registered; a Lua mod's `math.random` is seeded with `seed` plus its
/// position in mod order).
// Without Lua, `first`, `seed` and `log` are a Lua mod's and the lists stay empty.
#[cfg_attr(not(feature = "lua"), allow(unused_variables, unused_mut))]
pub fn install_from(
    mods: Vec<ModFile>,
    first: usize,
    engine: &mut Engine,
    seed: u64,
    log: &Log,
) -> Result<Vec<lua::LuaModState>, Vec<FileError>> {
    // A JSON mod's `set` is the streaming kit's settings.
    let streaming: Option<Rc<dyn StreamingService>> = engine.service(STREAMING);
    let declared: Vec<String> = engine.hooks().declared().map(str::to_owned).collect();
    let mut slots: IndexMap<String, Vec<Slot>> = IndexMap::new();
    let mut errors = check_hooks(&mods, &declared);
    let mut failures: Vec<(ModId, String)> = Vec::new();
    let mut states = Vec::new();
    for (index, m) in mods.into_iter().enumerate() {
        match m.source {
            ModSource::Json(j) => {
                if let Some(set) = j.set {
                    match &streaming {
                        Some(s) => s.set(&m.id, set),
                        None => errors.push(FileError::invalid(
                            &m.file,
                            Problem::new(
                                "set",
                                format!(
                                    "needs the {STREAMING} kit, which the scene does not enable"
                                ),
                            ),
                        )),
                    }
                }
                for (_, rule) in j.rule_specs() {
                    if !declared.contains(&rule.hook) {
                        continue; // reported by check_hooks above
                    }
                    if !rule.cancel {
                        continue; // a rule that never cancels changes nothing
                    }
                    let list = slots.entry(rule.hook).or_default();
                    if !matches!(list.last(), Some(Slot::Json(_))) {
                        list.push(Slot::Json(JsonRules::default()));
                    }
                    if let Some(Slot::Json(rules)) = list.last_mut() {
                        let any = [json::Match::default()];
                        let patterns = rule.matches.as_ref().map_or(&any[..], |m| m.patterns());
                        rules.push(m.id.clone(), patterns, rule.reason);
                    }
                }
            }
            #[cfg(feature = "lua")]
            ModSource::Lua(source) => {
                // Chunks are named by the file's name alone, so messages (and so event logs and
                // replay digests) do not depend on where the scene was run from.
                let name = Path::new(&m.file)
                    .file_name()
                    .map_or_else(|| m.file.clone(), |n| n.to_string_lossy().into_owned());
                let setup = lua::LuaSetup {
                    file: &name,
                    id: m.id.clone(),
                    seed: seed.wrapping_add((first + index) as u64),
                    services: engine.services(),
                    tables: engine.lua_tables(),
                    hooks: &declared,
                    log: log.clone(),
                    errors: engine.mod_errors(),
                    steps: engine.steps(),
                    limits: lua::LuaLimits::default(),
                };
                match lua::load(&source, setup) {
                    Ok(loaded) => {
                        for (hook, handler) in loaded.handlers {
                            slots.entry(hook).or_default().push(Slot::Lua(handler));
                        }
                        if let Some(message) = loaded.error {
                            failures.push((m.id.clone(), message));
                        }
                        states.push(loaded.state);
                    }
                    // The chunk is named by the file's name alone; the error names the file as
                    // the scene does.
                    Err(FileError::Line { line, message, .. }) => errors.push(FileError::Line {
                        file: m.file.clone(),
                        line,
                        message,
                    }),
                    Err(e) => errors.push(e),
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    for (by, message) in failures {
        let stamp = engine.tick_count();
        engine.input(stamp, |e| {
            e.emit(
                MOD_ERROR,
                json!({ "mod": by.as_str(), "hook": LOAD_HOOK, "message": message }),
            )
        });
    }
    for (hook, list) in slots {
        for slot in list {
            let handler: Box<dyn HookHandler> = match slot {
                Slot::Json(rules) => Box::new(rules),
                #[cfg(feature = "lua")]
                Slot::Lua(h) => h,
            };
            engine
                .hooks_mut()
                .register(&hook, handler)
                .expect("declared hooks only");
        }
    }
    Ok(states)
}
