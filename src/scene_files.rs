//! Where the files a scene names relative to itself come from (its mods, its district files):
//! the scene file's directory on disk, or files given as text — a map of relative path → text
//! that stands for that directory (docs/reference/engines.md#scene-files-as-text), for a game
//! whose scene is not on disk (a browser, an engine's packed resources). Every reader of such a
//! file goes through [`SceneFiles`], so both sources are read with the same caps, the same
//! checks and the same messages.
//!
//! With files given as text, a name the scene uses is looked up in the map and nowhere else: a
//! name missing from it is the file-not-found error a missing file gets on disk, naming the path;
//! a name through `..` or an absolute one names nothing in it and is refused, naming the path.
//! Directories a kit *writes* (a `worldDir`) are not files of the scene: they resolve against
//! [`SceneFiles::base_dir`] (the current directory for files given as text).

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::fileio::{parse_json, FileError};
use crate::json::Problem;
use crate::user_file::{ReadError, MAX_FILE_BYTES};

/// Where the files a scene names relative to itself are read from.
#[derive(Debug, Clone)]
pub enum SceneFiles {
    /// A directory on disk (the scene file's): a name is a path relative to it.
    Dir(PathBuf),
    /// Files given as text, standing for the scene's directory: a name is looked up in them and
    /// nowhere else.
    Text(TextFiles),
}

/// Files given as text: relative path (normalised: no `.` or empty components) → bytes.
#[derive(Debug, Clone, Default)]
pub struct TextFiles {
    files: Arc<BTreeMap<String, Arc<[u8]>>>,
}

impl TextFiles {
    /// The files' paths, normalised, in order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// How many files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// A file of the scene opened for reading: a file on disk or one given as text.
#[derive(Debug)]
pub enum SceneReader {
    /// A regular file on disk.
    File(std::fs::File),
    /// A file given as text.
    Text(Cursor<Arc<[u8]>>),
}

impl SceneReader {
    /// A second reader of the same file (on disk, sharing its offset, as `File::try_clone`
    /// does; given as text, with its own position).
    pub fn try_clone(&self) -> std::io::Result<SceneReader> {
        Ok(match self {
            SceneReader::File(f) => SceneReader::File(f.try_clone()?),
            SceneReader::Text(c) => SceneReader::Text(c.clone()),
        })
    }
}

impl Read for SceneReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SceneReader::File(f) => f.read(buf),
            SceneReader::Text(c) => c.read(buf),
        }
    }
}

impl Seek for SceneReader {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match self {
            SceneReader::File(f) => f.seek(pos),
            SceneReader::Text(c) => c.seek(pos),
        }
    }
}

/// Why a key of files given as text is refused, or `None`: the one rule of a path in the map,
/// for its keys and for the names a scene looks up in it. Absolute paths, `..` components
/// (split on `/` and `\`) and NUL are refused; so is a path naming no file (empty, or only `.`
/// components).
fn path_problem(path: &str) -> Option<&'static str> {
    let bytes = path.as_bytes();
    if path.contains('\0') {
        return Some("expected a file path, got one holding a NUL byte");
    }
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if path.starts_with('/') || path.starts_with('\\') || drive || Path::new(path).is_absolute() {
        return Some(
            "expected a path relative to the scene's directory, got an absolute path (files \
             given as text stand for the scene's directory)",
        );
    }
    if path.split(['/', '\\']).any(|c| c == "..") {
        return Some(
            "expected a path inside the scene's directory, got one through `..` (files given as \
             text stand for the scene's directory, and nothing outside it)",
        );
    }
    if normalise(path).is_empty() {
        return Some("expected a file path, got an empty one");
    }
    None
}

/// `path` without empty and `.` components (`./mods//a.json` is `mods/a.json`).
fn normalise(path: &str) -> String {
    path.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// The message of a file that does not exist: the system's own words for it (`No such file or
/// directory (os error 2)` on Linux), as a missing file on disk gets.
fn not_found() -> String {
    #[cfg(any(unix, windows))]
    {
        std::io::Error::from_raw_os_error(2).to_string()
    }
    #[cfg(not(any(unix, windows)))]
    {
        "No such file or directory".to_owned()
    }
}

impl SceneFiles {
    /// The files of the directory `dir` (a scene file's directory: `"."` for the current one).
    pub fn dir(dir: impl Into<PathBuf>) -> SceneFiles {
        SceneFiles::Dir(dir.into())
    }

    /// Files given as text, from `(relative path, text)` pairs. Every key is checked: an
    /// absolute path, a `..` component, a NUL byte, an empty path, or two keys naming the same
    /// file (`a.json` and `./a.json`) is a problem naming the key (as a JSON string) — every
    /// problem found.
    pub fn from_texts(
        files: impl IntoIterator<Item = (String, String)>,
    ) -> Result<SceneFiles, Vec<Problem>> {
        build(files.into_iter().map(|(k, v)| (k, Ok(v))))
    }

    /// Files given as text, from a JSON object `{ "relative/path": "text", … }` (`file` names it
    /// in messages): a syntax error with its line and column; not an object, a value that is not
    /// a string, or a key [`SceneFiles::from_texts`] refuses is an error naming the key — every
    /// problem found, in the object's order.
    pub fn from_json(json: &str, file: &str) -> Result<SceneFiles, Vec<FileError>> {
        let value = parse_json(json, file).map_err(|e| vec![e])?;
        let Value::Object(map) = value else {
            return Err(vec![FileError::invalid(
                file,
                Problem::new(
                    "",
                    format!(
                        "expected an object of relative path → file text, got {}",
                        crate::json::describe(&value)
                    ),
                ),
            )]);
        };
        build(map.into_iter().map(|(key, v)| match v {
            Value::String(text) => (key, Ok(text)),
            other => (
                key,
                Err(format!(
                    "expected the file's text (a string), got {}",
                    crate::json::describe(&other)
                )),
            ),
        }))
        .map_err(|problems| {
            problems
                .into_iter()
                .map(|p| FileError::invalid(file, p))
                .collect()
        })
    }

    /// Where directories the scene's kits write (a `worldDir`) resolve: the directory, or the
    /// current directory (`.`) for files given as text.
    pub fn base_dir(&self) -> &Path {
        match self {
            SceneFiles::Dir(dir) => dir,
            SceneFiles::Text(_) => Path::new("."),
        }
    }

    /// The path of `name` as messages show it: joined to the directory, or as the scene wrote
    /// it for files given as text. (The extension and stem of a mod are read from it.)
    pub fn path(&self, name: &str) -> PathBuf {
        match self {
            SceneFiles::Dir(dir) => dir.join(name),
            SceneFiles::Text(_) => PathBuf::from(name),
        }
    }

    /// The name of `name` in messages ([`crate::user_file::name`] of [`SceneFiles::path`]).
    pub fn name(&self, name: &str) -> String {
        crate::user_file::name(&self.path(name))
    }

    /// Whether `name` exists (on disk: anything by that name, as `Path::exists`); for files
    /// given as text, a name they cannot hold (absolute, through `..`, with a NUL) is an error
    /// saying why.
    pub fn exists(&self, name: &str) -> Result<bool, String> {
        match self {
            SceneFiles::Dir(dir) => Ok(dir.join(name).exists()),
            SceneFiles::Text(t) => match path_problem(name) {
                Some(p) => Err(p.to_owned()),
                None => Ok(t.files.contains_key(&normalise(name))),
            },
        }
    }

    /// Opens `name` for reading: on disk, a regular file (links followed, what is not one
    /// refused before and after opening it, [`crate::user_file::open_regular`]); its reader and
    /// its length. The caller reads it through its own cap.
    pub fn open(&self, name: &str) -> Result<(SceneReader, u64), ReadError> {
        match self {
            SceneFiles::Dir(dir) => {
                let (file, meta) = crate::user_file::open_regular(&dir.join(name))?;
                Ok((SceneReader::File(file), meta.len()))
            }
            SceneFiles::Text(t) => {
                let bytes = self.text_bytes(t, name)?;
                let len = bytes.len() as u64;
                Ok((SceneReader::Text(Cursor::new(bytes)), len))
            }
        }
    }

    /// The bytes of `name`, at most `cap` of them (on disk, [`crate::user_file::read`]).
    pub fn read(&self, name: &str, cap: u64) -> Result<Vec<u8>, ReadError> {
        match self {
            SceneFiles::Dir(dir) => crate::user_file::read(&dir.join(name), cap),
            SceneFiles::Text(t) => {
                let bytes = self.text_bytes(t, name)?;
                if bytes.len() as u64 > cap {
                    return Err(ReadError::TooLarge {
                        file: self.name(name),
                        limit: cap,
                    });
                }
                Ok(bytes.to_vec())
            }
        }
    }

    /// `name` as UTF-8 text of at most [`MAX_FILE_BYTES`] (on disk,
    /// [`crate::fileio::read_text`]; given as text, the same cap and messages).
    pub fn read_text(&self, name: &str) -> Result<String, FileError> {
        match self {
            SceneFiles::Dir(dir) => crate::fileio::read_text(&dir.join(name)),
            SceneFiles::Text(_) => {
                let bytes = self.read(name, MAX_FILE_BYTES)?;
                // Given as a Rust string or JSON text: always UTF-8.
                Ok(String::from_utf8(bytes).expect("files given as text are UTF-8"))
            }
        }
    }

    /// The bytes of `name` in `t`, or the error a missing file (or a name `t` cannot hold) gets.
    fn text_bytes(&self, t: &TextFiles, name: &str) -> Result<Arc<[u8]>, ReadError> {
        let io = |message: String| ReadError::Io {
            file: self.name(name),
            message,
        };
        if let Some(p) = path_problem(name) {
            return Err(io(p.to_owned()));
        }
        t.files
            .get(&normalise(name))
            .cloned()
            .ok_or_else(|| io(not_found()))
    }
}

/// Files given as text from `(key, text or what is wrong with the value)`, every problem told in
/// order: a key's own first, then its value's, then a key naming a file an earlier key named.
fn build(
    entries: impl Iterator<Item = (String, Result<String, String>)>,
) -> Result<SceneFiles, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut map: BTreeMap<String, (String, Arc<[u8]>)> = BTreeMap::new();
    for (key, text) in entries {
        let at = key_path(&key);
        if let Some(p) = path_problem(&key) {
            problems.push(Problem::new(at, p));
            continue;
        }
        let text = match text {
            Ok(text) => text,
            Err(message) => {
                problems.push(Problem::new(at, message));
                continue;
            }
        };
        let normal = normalise(&key);
        if let Some((first, _)) = map.get(&normal) {
            problems.push(Problem::new(
                at,
                format!("names the same file as key {}", key_path(first)),
            ));
            continue;
        }
        map.insert(normal, (key, Arc::from(text.into_bytes())));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let files = map.into_iter().map(|(k, (_, v))| (k, v)).collect();
    Ok(SceneFiles::Text(TextFiles {
        files: Arc::new(files),
    }))
}

/// A key as the JSON path of messages: the JSON string (quoted, a NUL shown as `\u0000`).
fn key_path(key: &str) -> String {
    serde_json::to_string(key).expect("a string is JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(pairs: &[(&str, &str)]) -> SceneFiles {
        SceneFiles::from_texts(pairs.iter().map(|(k, v)| ((*k).into(), (*v).into()))).unwrap()
    }

    #[test]
    fn a_name_is_looked_up_normalised_and_only_in_the_map() {
        let files = texts(&[("mods/a.json", "{}"), ("./b.jsonl", "x\n")]);
        assert_eq!(files.read_text("./mods//a.json").unwrap(), "{}");
        assert_eq!(files.read_text("b.jsonl").unwrap(), "x\n");
        assert_eq!(files.exists("mods/./a.json"), Ok(true));
        assert_eq!(files.exists("c.json"), Ok(false));
        let missing = files.read_text("mods/c.json").unwrap_err().to_string();
        let on_disk = crate::fileio::read_text(Path::new("mods/c.json"))
            .unwrap_err()
            .to_string();
        assert_eq!(missing, on_disk, "the same words as a missing file on disk");
        assert!(missing.starts_with("mods/c.json: "), "{missing}");
        // Nothing of the disk: Cargo.toml is in the current directory, not in the map.
        assert_eq!(files.exists("Cargo.toml"), Ok(false));
    }

    #[test]
    fn names_outside_the_map_are_refused_naming_the_path() {
        let files = texts(&[("a.json", "{}")]);
        for (name, words) in [
            ("../a.json", "through `..`"),
            ("x/../a.json", "through `..`"),
            ("/etc/passwd", "absolute path"),
            ("C:/x.json", "absolute path"),
            ("a\0.json", "NUL"),
        ] {
            let e = files.read_text(name).unwrap_err().to_string();
            assert!(e.contains(words), "{name}: {e}");
            assert!(files.exists(name).unwrap_err().contains(words));
        }
        let e = files.read_text("../a.json").unwrap_err().to_string();
        assert!(e.starts_with("../a.json: "), "{e}");
    }

    #[test]
    fn bad_keys_are_refused_each_naming_the_key() {
        let json = r#"{"ok.json": "{}", "../x": "", "/abs": "", "n\u0000ul": "", "num": 3,
                       "": "", "./ok.json": "again"}"#;
        let errors: Vec<String> = SceneFiles::from_json(json, "files")
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        let all = errors.join("\n");
        assert_eq!(errors.len(), 6, "{all}");
        for expected in [
            r#"files: "../x": expected a path inside the scene's directory, got one through `..`"#,
            r#"files: "/abs": expected a path relative to the scene's directory, got an absolute path"#,
            r#"files: "n\u0000ul": expected a file path, got one holding a NUL byte"#,
            r#"files: "num": expected the file's text (a string), got 3"#,
            r#"files: "": expected a file path, got an empty one"#,
            r#"files: "./ok.json": names the same file as key "ok.json""#,
        ] {
            assert!(all.contains(expected), "{expected}\nnot in:\n{all}");
        }
        let e = SceneFiles::from_json("[1]", "files").unwrap_err()[0].to_string();
        assert_eq!(
            e,
            "files: expected an object of relative path → file text, got [1]"
        );
        let e = SceneFiles::from_json("{", "files").unwrap_err()[0].to_string();
        assert!(e.starts_with("files: line 1 column 1: "), "{e}");
    }

    #[test]
    fn the_cap_of_a_file_given_as_text_is_a_files_cap_with_its_words() {
        let files = texts(&[("big.jsonl", "0123456789")]);
        assert_eq!(files.read("big.jsonl", 10).unwrap().len(), 10);
        let e = files.read("big.jsonl", 9).unwrap_err().to_string();
        assert_eq!(
            e,
            "big.jsonl: the file is larger than the 9-byte limit (the limit is 9 bytes)"
        );
    }

    #[test]
    fn a_reader_of_text_reads_and_seeks_like_a_file() {
        let files = texts(&[("d.jsonl", "line one\nline two\n")]);
        let (mut r, len) = files.open("d.jsonl").unwrap();
        assert_eq!(len, 18);
        let mut second = r.try_clone().unwrap();
        r.seek(SeekFrom::Start(9)).unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "line two\n");
        let mut all = String::new();
        second.read_to_string(&mut all).unwrap();
        assert_eq!(all.len(), 18);
    }

    #[test]
    fn a_directory_reads_as_before() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), "{}").unwrap();
        let files = SceneFiles::dir(dir.path());
        assert_eq!(files.read_text("a.json").unwrap(), "{}");
        assert_eq!(files.exists("a.json"), Ok(true));
        assert_eq!(files.base_dir(), dir.path());
        assert_eq!(texts(&[]).base_dir(), Path::new("."));
    }
}
