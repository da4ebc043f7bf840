//! Reading and writing the tool's own files (scene, inputs, mods, saves, states, recordings):
//! regular files only, read through the size cap ([`crate::user_file`]), UTF-8, JSON syntax
//! errors with line and column, shape errors with the JSON path, every message prefixed with the
//! file's name; and atomic writes (temp file, fsync, rename). On the ground floor, so that every
//! room reading a file (the formats of `files/`, the mods of `mods/`) reads it the same way.

use std::path::Path;

use serde_json::Value;

use crate::json::Problem;
use crate::worlddir::store::{Fs, RealFs};

pub use crate::user_file::MAX_FILE_BYTES;

/// Why a file was refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// It could not be read or written.
    #[error("{file}: {message}")]
    Io {
        /// The file.
        file: String,
        /// What the system said.
        message: String,
    },
    /// It is not a regular file, or larger than [`MAX_FILE_BYTES`] ([`crate::user_file`]).
    #[error(transparent)]
    Read(crate::user_file::ReadError),
    /// It is not JSON.
    #[error("{file}: line {line} column {column}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A value is wrong (JSON path inside the file).
    #[error("{file}: {problem}")]
    Invalid {
        /// The file.
        file: String,
        /// Where and what.
        problem: Problem,
    },
    /// A line of a JSON Lines file (or of a Lua source) is wrong.
    #[error("{file}: line {line}: {}", crate::escape::escape(message))]
    Line {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl FileError {
    /// A path problem in `file`.
    pub fn invalid(file: &str, problem: Problem) -> Self {
        FileError::Invalid {
            file: file.to_owned(),
            problem,
        }
    }
}

impl From<crate::user_file::ReadError> for FileError {
    fn from(e: crate::user_file::ReadError) -> Self {
        match e {
            crate::user_file::ReadError::Io { file, message } => FileError::Io { file, message },
            other => FileError::Read(other),
        }
    }
}

/// The name to show for `path` in messages: as given, control characters escaped
/// ([`crate::escape`]).
pub fn display_name(path: &Path) -> String {
    crate::user_file::name(path)
}

/// Reads a UTF-8 text file of at most [`MAX_FILE_BYTES`]; what is not a regular file is refused
/// ([`crate::user_file::read`]).
pub fn read_text(path: &Path) -> Result<String, FileError> {
    let file = display_name(path);
    let bytes = crate::user_file::read(path, MAX_FILE_BYTES)?;
    String::from_utf8(bytes).map_err(|e| FileError::Io {
        file: file.clone(),
        message: format!(
            "expected UTF-8 text, found an invalid byte at offset {}",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// Parses JSON text; a syntax error names the line and column (nesting deeper than 128 levels is
/// refused by the parser, never a stack overflow).
pub fn parse_json(text: &str, file: &str) -> Result<Value, FileError> {
    serde_json::from_str(text).map_err(|e| FileError::Syntax {
        file: file.to_owned(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    })
}

/// Parses JSON text straight into `T` (no JSON value tree: a large scene costs its typed size),
/// with the errors of [`parse_json`] for syntax and of [`crate::json::from_value`] for shape:
/// the JSON path and plain words (`entities[3].position.z: missing field`).
pub fn parse_typed<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<T, FileError> {
    let syntax = |e: &serde_json::Error| FileError::Syntax {
        file: file.to_owned(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    };
    // The fast path: no path tracking (it allocates a string per key visited). Only a file that
    // fails is parsed again, tracked, for the JSON path of its first problem.
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        if inner.classify() != serde_json::error::Category::Data {
            return syntax(inner);
        }
        // Only now, on the cold path, the value tree: for "got …" in the message, and because a
        // syntax error later in the file (which the typed parse stopped short of) comes first.
        let tree: Value = match serde_json::from_str(text) {
            Ok(tree) => tree,
            Err(e) => return syntax(&e),
        };
        let found = crate::json::value_at(&tree, e.path());
        let problem = crate::json::problem_at(
            &e.path().to_string(),
            &strip_position(&inner.to_string()),
            found,
        );
        FileError::invalid(file, problem)
    })?;
    de.end().map_err(|e| syntax(&e))?;
    Ok(value)
}

/// serde_json appends " at line L column C"; the message already says where.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename over
/// the target, fsync of the directory. On any failure the previous file is left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_atomic_with(path, bytes, |_| Ok(()))
}

/// [`write_atomic`] with a step run between the write and the rename (tests use it to simulate a
/// crash there). The crate's one atomic write ([`crate::worlddir::store`]'s, its temporary file
/// `.name.tmp-<pid>` made new), through `ToolFs`.
pub fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    before_rename: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Result<(), FileError> {
    use crate::worlddir::store::{replace, Step, Temp, TEMP_NAMES};
    let file = display_name(path);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| FileError::Io {
        file: file.clone(),
        message: "expected a file path, got a directory".into(),
    })?;
    // Only a file (or a link, replaced, never written through) is replaced: a FIFO, a device or
    // a directory found in the target's place is an error. (Checked before the rename: one
    // swapped in after the check is replaced as a file would be.)
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let t = m.file_type();
        if !t.is_file() && !t.is_symlink() {
            return Err(FileError::Io {
                file: file.clone(),
                message: format!(
                    "expected a regular file, found {}: not replaced",
                    crate::user_file::kind(&t)
                ),
            });
        }
    }
    replace(&ToolFs, &dir, name, bytes, Temp::Fresh, before_rename).map_err(|f| {
        let message = match f.step {
            Step::Named => format!(
                "cannot make a temporary file next to it: .{}.tmp-{} and its {} next names \
                 are taken",
                name.to_string_lossy(),
                std::process::id(),
                TEMP_NAMES - 1
            ),
            _ => f.error.to_string(),
        };
        FileError::Io { file, message }
    })
}

/// The file system the tool's own files are written through: the real one, the temporary file
/// fsynced through a handle that only reads it (whatever mode the umask gave it), and a directory
/// that cannot be opened (no read permission) left unsynced rather than failing the write.
struct ToolFs;

impl Fs for ToolFs {
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        RealFs.write(path, bytes)
    }

    fn fsync(&self, path: &Path) -> std::io::Result<()> {
        std::fs::File::open(path)?.sync_all()
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        match std::fs::File::open(dir) {
            Ok(d) => d.sync_all(),
            Err(_) => Ok(()),
        }
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_name_line_and_column() {
        let err = parse_json("{\n  \"a\": ,\n}", "s.json").unwrap_err();
        assert_eq!(err.to_string(), "s.json: line 2 column 8: expected value");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_the_temporary_name_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "VICTIM").unwrap();
        let tmp = dir
            .path()
            .join(format!(".s.json.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        let target = dir.path().join("s.json");
        write_atomic(&target, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "VICTIM");
        assert_eq!(std::fs::read(&target).unwrap(), b"{}");
        assert!(std::fs::symlink_metadata(&target).unwrap().is_file());
        // The planted link was removed (the link, not what it points to), and nothing is left.
        assert!(std::fs::symlink_metadata(&tmp).is_err());
    }

    #[test]
    fn a_temporary_file_a_killed_write_left_is_replaced_not_piled_up() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir
            .path()
            .join(format!(".s.json.tmp-{}", std::process::id()));
        std::fs::write(&tmp, "half a save").unwrap();
        let target = dir.path().join("s.json");
        for _ in 0..3 {
            write_atomic(&target, b"{}").unwrap();
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"{}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the save");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_in_the_target_s_place_is_an_error_and_stays() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("fifo.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&target)
            .status()
            .unwrap();
        assert!(made.success());
        let err = write_atomic(&target, b"{}").unwrap_err().to_string();
        assert!(
            err.contains("expected a regular file, found a FIFO"),
            "{err}"
        );
        assert!(err.contains("fifo.json"), "{err}");
        use std::os::unix::fs::FileTypeExt;
        let t = std::fs::symlink_metadata(&target).unwrap().file_type();
        assert!(t.is_fifo());
        // Nothing left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = "[".repeat(100_000);
        let err = parse_json(&text, "deep.json").unwrap_err();
        assert!(
            err.to_string().contains("recursion limit exceeded"),
            "{err}"
        );
    }
}
