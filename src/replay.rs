//! Recorded runs and their verification: a recording holds the scene, its mods' sources, the
//! inputs, and for every tick the FNV-1a 64 digest of that tick's events (with the events, so a
//! mismatch can show both sides). Replaying re-runs it and reports the first tick that differs.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use world_streaming::files::inputs::Inputs;
//! use world_streaming::replay::{Recording, Verdict};
//! let inputs = Inputs::parse(r#"{"tick": 3, "do": "leave"}"#, "inputs.jsonl").unwrap();
//! let recording = Recording::record("scene.json".as_ref(), &inputs, 10)?;
//! assert!(matches!(recording.verify()?, Verdict::Same { .. }));
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::Path;
#[cfg(not(target_arch = "wasm32"))]
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::files::inputs::{parse_line, Action, InputLine, Inputs, MAX_TICK};
use crate::files::{display_name, parse_json, read_text, write_atomic, FileError, MAX_FILE_BYTES};
#[cfg(not(target_arch = "wasm32"))]
use crate::files::{inputs::NumberedInput, scene::SceneFile};
use crate::game::{Game, GameError};
use crate::host::{Engine, Event};
use crate::json::{from_value, Problem};
#[cfg(not(target_arch = "wasm32"))]
use crate::{
    kits::builtin_catalog,
    scene_files::SceneFiles,
    worlddir::store::{read_capped, Capped},
};

/// The `format` of a recording.
pub const REPLAY_FORMAT: &str = "world-streaming-replay";
/// The recording version this build writes and reads.
pub const REPLAY_VERSION: u64 = 1;

/// FNV-1a, 64 bits: a stable hash with no seed, the same on every machine (the crate's one,
/// [`crate::hash`]).
pub use crate::hash::fnv1a64;

/// The canonical bytes of an event: its compact JSON, keys in emission order.
pub fn canonical(event: &Event) -> String {
    serde_json::to_string(event).expect("events are JSON")
}

/// The events of one tick (including those of the inputs applied before it) and their digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The tick.
    pub tick: u64,
    /// FNV-1a 64 of the canonical events joined by `\n`, as 16 hex digits.
    pub digest: String,
    /// The canonical events.
    pub events: Vec<String>,
}

impl Step {
    /// The step of `tick` with its `events`.
    pub fn new(tick: u64, events: &[Event]) -> Step {
        let events: Vec<String> = events.iter().map(canonical).collect();
        Step {
            tick,
            digest: Step::digest_of(&events),
            events,
        }
    }

    /// The digest of a step's canonical `events`: FNV-1a 64 of them joined by `\n`, as 16 hex
    /// digits.
    pub fn digest_of<S: AsRef<str>>(events: &[S]) -> String {
        let joined: Vec<&str> = events.iter().map(AsRef::as_ref).collect();
        format!("{:016x}", fnv1a64(joined.join("\n").as_bytes()))
    }
}

/// A mod's source, as the scene names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedMod {
    /// The path as written in the scene file.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// A region file of the world directory as the recorded run found it
/// (docs/reference/world-dir.md#region-files).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedFile {
    /// The file name, `r.<x>.<z>.wsr`.
    pub name: String,
    /// Its bytes, as lowercase hex.
    pub hex: String,
}

/// A district file of `world.district` (docs/reference/district.md#district-files) as the recorded
/// run read it. A replay writes `text` to a file of its own temporary directory and runs on that:
/// `file` is only shown in messages, never opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedDistrict {
    /// The path as the scene's config names it.
    pub file: String,
    /// The text's length in bytes.
    pub length: u64,
    /// FNV-1a 64 of the text, 16 lowercase hex digits (the district file's stamp).
    pub hash: String,
    /// The file's text.
    pub text: String,
}

impl RecordedDistrict {
    /// The entry for district file `file` holding `text`.
    pub fn new(file: &str, text: String) -> RecordedDistrict {
        RecordedDistrict {
            file: file.to_owned(),
            length: text.len() as u64,
            hash: format!("{:016x}", fnv1a64(text.as_bytes())),
            text,
        }
    }
}

/// A recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    /// Always `world-streaming-replay`.
    pub format: String,
    /// Version 1.
    pub version: u32,
    /// The scene document.
    pub scene: Value,
    /// The mods' sources, in mod order.
    pub mods: Vec<RecordedMod>,
    /// The inputs.
    pub inputs: Vec<InputLine>,
    /// The target tick.
    pub ticks: u64,
    /// One step per tick that ran.
    pub steps: Vec<Step>,
    /// With `world.terrain`'s `worldDir`: its region files as the run started (a replay runs
    /// on a copy of them in a temporary directory, so it neither reads nor writes the real one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub world: Vec<RecordedFile>,
    /// With `world.district`: its district files, in the order its config lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub districts: Vec<RecordedDistrict>,
}

/// The `worldDir` of the scene's `world.terrain` kit, if it has one (as written).
fn world_dir_of(scene: &Value) -> Option<&str> {
    scene
        .get("kits")?
        .as_array()?
        .iter()
        .find(|k| k.get("id").and_then(Value::as_str) == Some(crate::kits::terrain::TERRAIN))?
        .get("config")?
        .get("worldDir")?
        .as_str()
}

/// The `worldDir` of the scene's `world.district` kit, if it has one (as written).
#[cfg(not(target_arch = "wasm32"))]
fn district_world_dir_of(scene: &Value) -> Option<&str> {
    scene
        .get("kits")?
        .as_array()?
        .iter()
        .find(|k| k.get("id").and_then(Value::as_str) == Some(crate::kits::district::DISTRICT))?
        .get("config")?
        .get("worldDir")?
        .as_str()
}

/// The key of the scene's first `worldDir` (`world.terrain`'s, else `world.district`'s), as a
/// JSON path (`kits[1].config.worldDir`), if it names one: what a build without a file system
/// refuses.
pub(crate) fn world_dir_key(scene: &Value) -> Option<String> {
    let kits = scene.get("kits")?.as_array()?;
    kits.iter().enumerate().find_map(|(i, k)| {
        k.get("config")?.get("worldDir")?;
        Some(format!("scene.kits[{i}].config.worldDir"))
    })
}

/// The world directory a recording carries: `world.terrain`'s, or `world.district`'s when the
/// terrain kit names none (both kits may name the same one).
#[cfg(not(target_arch = "wasm32"))]
fn recorded_dir_of(scene: &Value) -> Option<&str> {
    world_dir_of(scene).or_else(|| district_world_dir_of(scene))
}

/// The district file entries of the scene's `world.district` kits, in config order (each the
/// entry as written: a path, or `{scene, file}`), and whether a kit names a `worldDir` a
/// recording cannot carry (another directory than `world.terrain`'s); none when the config is
/// not well formed (the game then reports it).
fn district_entries(scene: &Value) -> (Vec<&Value>, bool) {
    let kits = scene.get("kits").and_then(Value::as_array);
    let configs = kits
        .into_iter()
        .flatten()
        .filter(|k| k.get("id").and_then(Value::as_str) == Some(crate::kits::district::DISTRICT))
        .filter_map(|k| k.get("config"));
    let mut entries = Vec::new();
    let mut world_dir = false;
    for c in configs {
        let terrain = world_dir_of(scene);
        world_dir |= c
            .get("worldDir")
            .and_then(Value::as_str)
            .is_some_and(|d| terrain.is_some_and(|t| t != d));
        entries.extend(
            c.get("districts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        );
    }
    (entries, world_dir)
}

/// The path of a district entry (a string, or the `file` of `{scene, file}`).
#[cfg(not(target_arch = "wasm32"))]
fn district_path(entry: &Value) -> Option<&str> {
    entry
        .as_str()
        .or_else(|| entry.get("file").and_then(Value::as_str))
}

/// Points the scene's district entries, in config order, at `paths` (one each).
pub(crate) fn set_district_paths(scene: &mut Value, paths: &[String]) {
    let mut paths = paths.iter();
    let kits = scene.get_mut("kits").and_then(Value::as_array_mut);
    for k in kits.into_iter().flatten() {
        if k.get("id").and_then(Value::as_str) != Some(crate::kits::district::DISTRICT) {
            continue;
        }
        let entries = k
            .get_mut("config")
            .and_then(|c| c.get_mut("districts"))
            .and_then(Value::as_array_mut);
        for e in entries.into_iter().flatten() {
            let Some(p) = paths.next() else { return };
            match e.as_object_mut() {
                Some(obj) => {
                    obj.insert("file".into(), Value::String(p.clone()));
                }
                None => *e = Value::String(p.clone()),
            }
        }
    }
}

/// Sets the `worldDir` of the scene's `world.terrain` and `world.district` kits (those that
/// have one).
#[cfg(not(target_arch = "wasm32"))]
fn set_world_dir(scene: &mut Value, dir: &Path) {
    let kits = scene.get_mut("kits").and_then(Value::as_array_mut);
    for k in kits.into_iter().flatten() {
        let id = k.get("id").and_then(Value::as_str);
        if id == Some(crate::kits::terrain::TERRAIN) || id == Some(crate::kits::district::DISTRICT)
        {
            if let Some(config) = k.get_mut("config").and_then(Value::as_object_mut) {
                config.insert("worldDir".into(), dir.to_string_lossy().into_owned().into());
            }
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(not(target_arch = "wasm32"))]
fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Why `path`, a `save` or `load` path, cannot be part of a recording, or `None` when it can.
///
/// A replay runs a recording's saves and loads in a fresh temporary directory, so a recorded
/// path must name a file inside it: not empty, no NUL byte, relative (no root, no drive or UNC
/// prefix), and no `..` component (`.` components are harmless). Nothing else can lead out:
/// the directory is new, and the only things a replay puts in it are its saves (regular files)
/// and the directories those saves' paths name, never a symbolic link.
pub fn recorded_path_problem(path: &str) -> Option<&'static str> {
    use std::path::Component;
    if path.is_empty() {
        return Some("is empty");
    }
    if path.contains('\0') {
        return Some("holds a NUL byte");
    }
    let mut names = 0;
    for c in Path::new(path).components() {
        match c {
            Component::Prefix(_) => return Some("has a drive or UNC prefix"),
            Component::RootDir => return Some("is an absolute path"),
            Component::ParentDir => return Some("has a `..` component"),
            Component::CurDir => {}
            Component::Normal(_) => names += 1,
        }
    }
    if names == 0 {
        return Some("names no file");
    }
    None
}

/// The `save`/`load` path of an input, with the action's name.
fn saved_path(input: &InputLine) -> Option<(&'static str, &str)> {
    match &input.action {
        Action::Save { path } => Some(("save", path)),
        Action::Load { path } => Some(("load", path)),
        _ => None,
    }
}

/// Checks that `inputs` can be recorded: every `save`/`load` path passes
/// [`recorded_path_problem`] (a recording of one that does not could not be replayed, and
/// opening it would be refused). Every bad line is reported, naming its file and line.
pub fn check_recordable(inputs: &Inputs) -> Result<(), Vec<FileError>> {
    let errors: Vec<FileError> = inputs
        .lines
        .iter()
        .filter_map(|l| {
            let (_, path) = saved_path(&l.input)?;
            let problem = recorded_path_problem(path)?;
            Some(FileError::Line {
                file: inputs.file.clone(),
                line: l.line,
                message: format!(
                    "path: {path:?} {problem}; a recorded run's save and load paths must be \
                     relative and stay below the current directory (no root, no `..`): its \
                     replay runs them in a directory of its own"
                ),
            })
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every tick's digest matches.
    Same {
        /// How many ticks were compared.
        ticks: usize,
    },
    /// The first tick that differs.
    Differs(Divergence),
}

/// The first tick whose events differ, with both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The tick the replay was at (the recording's step's when the replay ran out).
    pub tick: u64,
    /// The recorded step, if any.
    pub expected: Option<Step>,
    /// The replayed step, if any.
    pub actual: Option<Step>,
    /// How many ticks the replay ran (it stops at the first step that differs).
    pub ticks_run: usize,
}

/// The recorded side comes from a file that may have been tampered with: its digests and
/// events are printed escaped ([`crate::escape`]), one event a line.
impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::escape::escape;
        let digest = |s: &Option<Step>| {
            s.as_ref()
                .map_or("(no tick)".to_owned(), |s| escape(&s.digest).into_owned())
        };
        match (&self.expected, &self.actual) {
            (Some(e), Some(a)) if e.tick != a.tick => writeln!(
                f,
                "tick {}: the recording's step for it is labelled tick {} (expected digest {}, \
                 got {})",
                self.tick,
                e.tick,
                digest(&self.expected),
                digest(&self.actual)
            )?,
            (None, Some(_)) => writeln!(
                f,
                "tick {}: the recording holds no step for it (its ticks claim more than its steps \
                 hold; got digest {})",
                self.tick,
                digest(&self.actual)
            )?,
            _ => writeln!(
                f,
                "tick {}: the events differ (expected digest {}, got {})",
                self.tick,
                digest(&self.expected),
                digest(&self.actual)
            )?,
        }
        for (side, step) in [("expected", &self.expected), ("actual", &self.actual)] {
            writeln!(f, "{side}:")?;
            match step {
                Some(s) if !s.events.is_empty() => {
                    for e in &s.events {
                        writeln!(f, "  {}", escape(e))?;
                    }
                }
                _ => writeln!(f, "  (no events)")?,
            }
        }
        Ok(())
    }
}

/// Runs `game` to `target`, cutting the event log into one [`Step`] per tick.
pub fn run_steps(game: &mut Game, inputs: &Inputs, target: u64) -> Result<Vec<Step>, GameError> {
    let mut steps = Vec::new();
    let mut seen = 0;
    game.run_with(inputs, target, |engine: &Engine, _| {
        let events = engine.events();
        steps.push(Step::new(engine.tick_count(), &events[seen..]));
        seen = events.len();
    })?;
    Ok(steps)
}

/// Reads the district files the scene's `world.district` names (from the scene's `files`), for a
/// recording: each a regular UTF-8 file, together at most [`MAX_FILE_BYTES`] (the cap a
/// recording is read with). A district `worldDir` other than `world.terrain`'s is refused (a
/// recording carries one world directory).
#[cfg(not(target_arch = "wasm32"))]
fn read_districts(
    scene: &Value,
    files: &SceneFiles,
    file: &str,
) -> Result<Vec<RecordedDistrict>, GameError> {
    let (entries, world_dir) = district_entries(scene);
    if world_dir {
        return Err(FileError::invalid(
            file,
            Problem::new(
                "kits",
                "world.district names a worldDir, which a recording does not carry (it carries \
                 one world directory, world.terrain's): its replay could not run, so nothing is \
                 recorded",
            ),
        )
        .into());
    }
    let mut out = Vec::new();
    let mut total = 0u64;
    for entry in entries {
        let Some(path) = district_path(entry) else {
            continue; // not well formed: the game says so
        };
        let text = files.read_text(path)?;
        total += text.len() as u64;
        if total > MAX_FILE_BYTES {
            return Err(FileError::Io {
                file: files.name(path),
                message: format!(
                    "the district files come to more than {MAX_FILE_BYTES} bytes, the most a \
                     recording holds: not recorded"
                ),
            }
            .into());
        }
        out.push(RecordedDistrict::new(path, text));
    }
    Ok(out)
}

/// Writes each district's text to `dir/districts/<i>.jsonl`; returns those paths, relative to
/// `dir`, in order.
#[cfg(not(target_arch = "wasm32"))]
fn write_districts(districts: &[RecordedDistrict], dir: &Path) -> Result<Vec<String>, FileError> {
    let mut paths = Vec::new();
    if districts.is_empty() {
        return Ok(paths);
    }
    let sub = dir.join("districts");
    let io = |p: &Path, e: std::io::Error| FileError::Io {
        file: display_name(p),
        message: e.to_string(),
    };
    std::fs::create_dir_all(&sub).map_err(|e| io(&sub, e))?;
    for (i, d) in districts.iter().enumerate() {
        let rel = format!("districts/{i}.jsonl");
        let full = dir.join(&rel);
        std::fs::write(&full, &d.text).map_err(|e| io(&full, e))?;
        paths.push(rel);
    }
    Ok(paths)
}

impl Recording {
    /// Runs the scene file with `inputs` to `target` and records it.
    /// Its inputs must pass [`check_recordable`] (checked first, before anything is read or
    /// run).
    // Through a temporary directory: not on the web (docs/web.md).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn record(scene_path: &Path, inputs: &Inputs, target: u64) -> Result<Recording, GameError> {
        check_recordable(inputs).map_err(GameError::Files)?;
        let file = display_name(scene_path);
        let scene_value = parse_json(&read_text(scene_path)?, &file)?;
        let scene = SceneFile::from_json(&scene_value).map_err(|p| FileError::invalid(&file, p))?;
        let base = scene_path.parent().unwrap_or(Path::new("."));
        let files = SceneFiles::dir(base);
        let mut mods = Vec::new();
        for m in &scene.mods {
            mods.push(RecordedMod {
                path: m.clone(),
                text: files.read_text(m)?,
            });
        }
        // The world directory as the run finds it (region files only).
        let mut world = Vec::new();
        let mut world_copy = None;
        if let Some(dir) = recorded_dir_of(&scene_value) {
            let dir = base.join(dir);
            if dir.is_dir() {
                let reports =
                    crate::kits::terrain::store::read_dir(&dir).map_err(|e| FileError::Io {
                        file: display_name(&dir),
                        message: e.to_string(),
                    })?;
                let names = reports
                    .into_iter()
                    .map(|r| r.file)
                    .chain(crate::kits::district::world_files(&dir));
                for name in names {
                    let path = dir.join(&name);
                    let io = |message: String| FileError::Io {
                        file: display_name(&path),
                        message,
                    };
                    // Never through a link, never blocking on a FIFO, never past the cap.
                    let max = crate::kits::terrain::region::MAX_FILE_LEN;
                    let bytes = match read_capped(&path, max) {
                        Ok(Capped::Bytes(b)) => b,
                        Ok(Capped::TooLarge) => {
                            return Err(io(format!(
                                "larger than any region file ({max} bytes at most): not recorded"
                            ))
                            .into())
                        }
                        Ok(Capped::NotRegular(kind)) => {
                            return Err(
                                io(format!("{kind}, not a regular file: not recorded")).into()
                            )
                        }
                        Err(e) => return Err(io(e.to_string()).into()),
                    };
                    world.push(RecordedFile {
                        name,
                        hex: to_hex(&bytes),
                    });
                }
            }
        }
        let districts = read_districts(&scene_value, &files, &file)?;
        // The recording's own run works on a copy of that world: the directory belongs to the
        // game being recorded (its lock), and the run must see it as that game found it. It
        // runs on copies of the district files too, so that it runs on exactly what the
        // recording carries (a file changed in between cannot make a recording that does not
        // replay).
        let mut game = if recorded_dir_of(&scene_value).is_some() || !districts.is_empty() {
            let copy = tempfile::tempdir().map_err(|e| FileError::Io {
                file: "recording".into(),
                message: e.to_string(),
            })?;
            let mut scene = scene_value.clone();
            if recorded_dir_of(&scene_value).is_some() {
                let dir = copy.path().join("world");
                std::fs::create_dir_all(&dir).map_err(|e| FileError::Io {
                    file: display_name(&dir),
                    message: e.to_string(),
                })?;
                for f in &world {
                    let path = dir.join(&f.name);
                    let bytes = from_hex(&f.hex).expect("hex written above");
                    std::fs::write(&path, bytes).map_err(|e| FileError::Io {
                        file: display_name(&path),
                        message: e.to_string(),
                    })?;
                }
                set_world_dir(&mut scene, &dir);
            }
            let paths = write_districts(&districts, copy.path())?;
            let paths: Vec<String> = paths
                .iter()
                .map(|p| copy.path().join(p).to_string_lossy().into_owned())
                .collect();
            set_district_paths(&mut scene, &paths);
            let game = Game::from_scene_text(&scene.to_string(), &file, base, &builtin_catalog())?;
            world_copy = Some(copy);
            game
        } else {
            Game::from_scene_file(scene_path)?
        };
        let steps = run_steps(&mut game, inputs, target)?;
        // Its edits stay in the copy, removed with it.
        drop(game);
        drop(world_copy);
        Ok(Recording {
            world,
            districts,
            format: REPLAY_FORMAT.into(),
            version: REPLAY_VERSION as u32,
            scene: scene_value,
            mods,
            inputs: inputs.lines.iter().map(|l| l.input.clone()).collect(),
            ticks: target,
            steps,
        })
    }

    /// Writes the recording (atomically).
    pub fn write(&self, path: &Path) -> Result<(), FileError> {
        let mut bytes = serde_json::to_vec(self).expect("plain data");
        bytes.push(b'\n');
        // What `replay` and `view` could not read is not written.
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(FileError::Io {
                file: display_name(path),
                message: format!(
                    "the recording would be {} bytes, more than the {MAX_FILE_BYTES} bytes replay \
                     and view read: record fewer ticks, or a scene with fewer events a tick",
                    bytes.len()
                ),
            });
        }
        write_atomic(path, &bytes)
    }

    /// Reads a recording, checked as a whole before anything runs: its format and version, its
    /// inputs as an inputs file's, and its `save`/`load` paths ([`recorded_path_problem`]).
    pub fn read(path: &Path) -> Result<Recording, FileError> {
        Recording::parse(&read_text(path)?, &display_name(path))
    }

    /// [`Recording::read`] of a recording's text; `file` names it in messages.
    pub fn parse(text: &str, file: &str) -> Result<Recording, FileError> {
        let file = file.to_owned();
        let value = parse_json(text, &file)?;
        if value.get("format").and_then(Value::as_str) != Some(REPLAY_FORMAT) {
            return Err(FileError::invalid(
                &file,
                Problem::new("format", format!("expected \"{REPLAY_FORMAT}\"")),
            ));
        }
        let bad =
            |path: String, message: String| FileError::invalid(&file, Problem::new(path, message));
        // The version first: a recording of another version gets that message, not a list of
        // fields that differ.
        match value.get("version") {
            Some(v) if v.as_u64() == Some(REPLAY_VERSION) => {}
            Some(v) if v.as_u64().is_some_and(|n| n > REPLAY_VERSION) => {
                return Err(bad(
                    "version".into(),
                    format!(
                        "replay version {v} is newer than this build reads (version {REPLAY_VERSION}); \
                         replay it with the build that recorded it"
                    ),
                ))
            }
            Some(v) if v.as_u64().is_some() => {
                return Err(bad(
                    "version".into(),
                    format!(
                        "replay version {v} is older than this build reads (version {REPLAY_VERSION}); \
                         record the run again"
                    ),
                ))
            }
            other => {
                return Err(bad(
                    "version".into(),
                    format!(
                        "expected a replay version (this build reads {REPLAY_VERSION}), got {}",
                        other.map_or("nothing".into(), crate::json::describe)
                    ),
                ))
            }
        }
        let rec: Recording = from_value(&value, "").map_err(|p| FileError::invalid(&file, p))?;
        if rec.ticks > MAX_TICK {
            return Err(bad(
                "ticks".into(),
                format!("expected at most {MAX_TICK}, got {}", rec.ticks),
            ));
        }
        // The inputs get the checks of an inputs file: shape, values, order.
        let mut last = 0;
        for (i, input) in rec.inputs.iter().enumerate() {
            let line = serde_json::to_string(input).expect("plain data");
            parse_line(&line).map_err(|m| bad(format!("inputs[{i}]"), m))?;
            if input.tick < last {
                return Err(bad(
                    format!("inputs[{i}].tick"),
                    format!(
                        "expected ticks in non-decreasing order, got {} after {last}",
                        input.tick
                    ),
                ));
            }
            last = input.tick;
        }
        // Each step's events are those its digest was made of: a recording whose events text
        // was altered is inconsistent with itself (what a divergence would print is that text).
        for (i, step) in rec.steps.iter().enumerate() {
            let digest = Step::digest_of(&step.events);
            if digest != step.digest {
                return Err(bad(
                    format!("steps[{i}].events"),
                    format!(
                        "the events do not make the step's digest {} (they make {digest}): the \
                         recording was altered or damaged",
                        crate::escape::escape(&step.digest)
                    ),
                ));
            }
        }
        rec.check_paths(&file)?;
        rec.check_districts(&file)?;
        Ok(rec)
    }

    /// Checks the embedded district files against the scene before anything runs: one for each
    /// district the scene's config names, each matching its stamp (length and FNV-1a 64: a
    /// text altered or damaged is caught here), each line a district entity
    /// (docs/reference/district.md#district-files), at most [`MAX_FILE_BYTES`] together. Duplicate
    /// ids are the kit's to find when the replay starts.
    pub fn check_districts(&self, file: &str) -> Result<(), FileError> {
        use crate::escape::escape;
        let bad =
            |path: String, message: String| FileError::invalid(file, Problem::new(path, message));
        let (entries, world_dir) = district_entries(&self.scene);
        if world_dir {
            return Err(bad(
                "scene.kits".into(),
                "world.district names a worldDir, which a recording does not carry (it carries \
                 one world directory, world.terrain's); nothing was run"
                    .into(),
            ));
        }
        if entries.len() != self.districts.len() {
            return Err(bad(
                "districts".into(),
                format!(
                    "the scene names {} district file(s) and the recording carries {}: it was \
                     altered or damaged; nothing was run",
                    entries.len(),
                    self.districts.len()
                ),
            ));
        }
        let mut total = 0u64;
        for (i, d) in self.districts.iter().enumerate() {
            let name = escape(&d.file);
            let length = d.text.len() as u64;
            let hash = format!("{:016x}", fnv1a64(d.text.as_bytes()));
            if length != d.length || hash != d.hash {
                return Err(bad(
                    format!("districts[{i}]"),
                    format!(
                        "the text of district file \"{name}\" does not match its stamp (length {}, \
                         hash {}; the text has length {length}, hash {hash}): it was altered or \
                         damaged; nothing was run",
                        d.length,
                        escape(&d.hash)
                    ),
                ));
            }
            total += length;
            if total > MAX_FILE_BYTES {
                return Err(bad(
                    format!("districts[{i}]"),
                    format!("the district files come to more than {MAX_FILE_BYTES} bytes"),
                ));
            }
            for (n, line) in d.text.split('\n').enumerate() {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if line.bytes().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                if let Err(m) = crate::kits::district::index::parse_line(line.as_bytes()) {
                    return Err(bad(
                        format!("districts[{i}].text"),
                        format!(
                            "district file \"{name}\" line {}: {m}; nothing was run",
                            n + 1
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Refuses the first `save`/`load` input whose path fails [`recorded_path_problem`],
    /// naming its step (1-based, in the recording's order), its tick and the path.
    fn check_paths(&self, file: &str) -> Result<(), FileError> {
        for (i, input) in self.inputs.iter().enumerate() {
            let Some((what, path)) = saved_path(input) else {
                continue;
            };
            if let Some(problem) = recorded_path_problem(path) {
                return Err(FileError::invalid(
                    file,
                    Problem::new(
                        format!("inputs[{i}].path"),
                        format!(
                            "step {} (a {what} at tick {}): {path:?} {problem}; a recording's \
                             save and load paths must be relative and stay inside the replay's \
                             directory (no root, no `..`); nothing was run",
                            i + 1,
                            input.tick
                        ),
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Re-runs the recording (its mods written to a temporary directory) and compares every
    /// tick's digest. Its `save` and `load` inputs use that temporary directory too (so a
    /// recording that loads a save it did not write itself cannot be replayed), and a path that
    /// would lead out of it is refused before the directory is made.
    // Through a temporary directory: not on the web (docs/web.md).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn verify(&self) -> Result<Verdict, GameError> {
        let (_dir, mut game, inputs) = self.game()?;
        // Compared as it runs, stopping at the first step that differs: a recording claiming
        // more ticks than its steps hold is not run to its end first.
        let mut actual: Vec<Step> = Vec::new();
        let mut seen = 0;
        game.run_while(&inputs, self.ticks, |game, _| {
            let events = game.engine().events();
            let step = Step::new(game.engine().tick_count(), &events[seen..]);
            seen = events.len();
            let same = self
                .steps
                .get(actual.len())
                .is_some_and(|e| (e.tick, &e.digest) == (step.tick, &step.digest));
            actual.push(step);
            same
        })?;
        Ok(compare(&self.steps, &actual))
    }

    /// The recorded game, built afresh and not yet run, with its inputs: its mods are written to
    /// the returned temporary directory (keep it while the game runs).
    // Through a temporary directory: not on the web (docs/web.md).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn game(&self) -> Result<(tempfile::TempDir, Game, Inputs), GameError> {
        // Before the temporary directory exists: a path that would lead out of it is refused
        // before anything is written (a recording built in memory skips `read`'s check).
        self.check_paths("replay")?;
        self.check_districts("replay")?;
        let dir = tempfile::tempdir().map_err(|e| FileError::Io {
            file: "replay".into(),
            message: e.to_string(),
        })?;
        let mut scene = self.scene.clone();
        let mut paths = Vec::new();
        for (i, m) in self.mods.iter().enumerate() {
            let name = Path::new(&m.path)
                .file_name()
                .map(PathBuf::from)
                .unwrap_or_else(|| format!("mod{i}").into());
            let rel = Path::new(&format!("m{i}")).join(name);
            let full = dir.path().join(&rel);
            let io = |e: std::io::Error| FileError::Io {
                file: display_name(&full),
                message: e.to_string(),
            };
            std::fs::create_dir_all(full.parent().expect("has a parent")).map_err(io)?;
            std::fs::write(&full, &m.text).map_err(io)?;
            paths.push(Value::String(rel.to_string_lossy().into_owned()));
        }
        if let Some(obj) = scene.as_object_mut() {
            obj.insert("mods".into(), Value::Array(paths));
        }
        // The world directory: a fresh one holding the recorded region files.
        if recorded_dir_of(&scene).is_some() {
            let world = dir.path().join("world");
            let io = |e: std::io::Error| FileError::Io {
                file: display_name(&world),
                message: e.to_string(),
            };
            std::fs::create_dir_all(&world).map_err(io)?;
            for (i, f) in self.world.iter().enumerate() {
                let bad =
                    |m: &str| FileError::invalid("replay", Problem::new(format!("world[{i}]"), m));
                if crate::kits::terrain::region::RegionPos::parse_file_name(&f.name).is_none()
                    && !crate::kits::district::is_world_file(&f.name)
                {
                    return Err(bad(
                        "expected a region file name r.<x>.<z>.wsr or d.<x>.<z>.wsd, or \
                         district.journal",
                    )
                    .into());
                }
                let bytes = from_hex(&f.hex).ok_or_else(|| bad("expected lowercase hex bytes"))?;
                std::fs::write(world.join(&f.name), bytes).map_err(io)?;
            }
            set_world_dir(&mut scene, &world);
        }
        // The district files: the recording's texts, in files of that directory (the paths
        // the recorded scene names are never opened).
        let paths = write_districts(&self.districts, dir.path())?;
        set_district_paths(&mut scene, &paths);
        let game = Game::from_scene_text(
            &scene.to_string(),
            "replay scene",
            dir.path(),
            &builtin_catalog(),
        )?;
        // `save`/`load` inputs are resolved in the temporary directory: a replay never writes
        // where it is run from.
        let files = dir.path().join("files");
        // With the directories the paths name (`saves/a.json`): the recorded run found them in
        // its current directory. Checked above: each stays inside `files`.
        for path in self
            .inputs
            .iter()
            .filter_map(|i| saved_path(i).map(|(_, p)| p))
        {
            let parent = Path::new(path).parent().unwrap_or(Path::new(""));
            let full = files.join(parent);
            std::fs::create_dir_all(&full).map_err(|e| FileError::Io {
                file: display_name(&full),
                message: e.to_string(),
            })?;
        }
        std::fs::create_dir_all(&files).map_err(|e| FileError::Io {
            file: display_name(&files),
            message: e.to_string(),
        })?;
        let inputs = Inputs {
            file: "replay inputs".into(),
            dir: Some(files),
            lines: self
                .inputs
                .iter()
                .enumerate()
                .map(|(i, input)| NumberedInput {
                    line: i + 1,
                    input: input.clone(),
                })
                .collect(),
        };
        Ok((dir, game, inputs))
    }
}

/// The first step that differs between two runs.
pub fn compare(expected: &[Step], actual: &[Step]) -> Verdict {
    let n = expected.len().max(actual.len());
    for i in 0..n {
        let (e, a) = (expected.get(i), actual.get(i));
        if e.map(|s| (&s.digest, s.tick)) != a.map(|s| (&s.digest, s.tick)) {
            // The tick the replay was at (the recording's label may be what was altered).
            let tick = a.or(e).map_or(0, |s| s.tick);
            return Verdict::Differs(Divergence {
                tick,
                expected: e.cloned(),
                actual: a.cloned(),
                ticks_run: actual.len(),
            });
        }
    }
    Verdict::Same {
        ticks: expected.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_path_is_a_relative_path_below_the_replay_directory() {
        for ok in [
            "a.json",
            "saves/a.json",
            "./a.json",
            "saves/./a.json",
            "a/",
            "..a",
            "a..b",
        ] {
            assert_eq!(recorded_path_problem(ok), None, "{ok}");
        }
        for (bad, problem) in [
            ("", "is empty"),
            ("a\0b", "holds a NUL byte"),
            ("/tmp/a.json", "is an absolute path"),
            ("//a", "is an absolute path"),
            ("..", "has a `..` component"),
            ("../a.json", "has a `..` component"),
            ("saves/../../a.json", "has a `..` component"),
            ("a/..", "has a `..` component"),
            (".", "names no file"),
            ("./", "names no file"),
        ] {
            assert_eq!(recorded_path_problem(bad), Some(problem), "{bad:?}");
        }
    }
}
