//! Reading a user's file (a scene, inputs, a mod, a save, a recording, a schema) through its
//! cap. The size a file system reports is not trusted: `/dev/zero` and a pipe report 0 bytes and
//! never end, a file may grow while it is read. So a file is
//!
//! 1. looked at (`stat`, following links): what is not a regular file is refused before it is
//!    opened (a FIFO nobody writes to would block `open` forever, a device may act on `open`);
//! 2. opened without blocking (`O_NONBLOCK` on Unix: if a FIFO took the file's place since step
//!    1, the open still returns; on a regular file the flag changes nothing) and looked at
//!    again through the opened handle (`fstat`), which is what is read;
//! 3. read at most `cap + 1` bytes: one more than the cap means it is too large, refused
//!    without reading the rest.
//!
//! Standard input is never read by path: `/dev/stdin` is a pipe or a terminal, not a regular
//! file, and is refused like any other.

use std::fs::{File, FileType};
use std::io::Read;
use std::path::Path;

/// Largest file the tool reads (scene, inputs, mod, save, recording): 16 MiB.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The system refused to open or read it.
    #[error("{file}: {message}")]
    Io {
        /// The file (escaped for printing).
        file: String,
        /// What the system said.
        message: String,
    },
    /// It is a directory, a FIFO, a device or a socket.
    #[error("{file}: expected a regular file, found {found}")]
    NotRegular {
        /// The file (escaped for printing).
        file: String,
        /// What it is instead (`a FIFO`, `a character device`, …).
        found: &'static str,
    },
    /// It holds more than the cap.
    #[error("{file}: the file is larger than the {} limit (the limit is {limit} bytes)", human(*.limit))]
    TooLarge {
        /// The file (escaped for printing).
        file: String,
        /// The cap, in bytes.
        limit: u64,
    },
}

/// `16 MiB`, `1 GiB`, or bytes.
fn human(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    match bytes {
        b if b >= 1024 * MIB && b.is_multiple_of(1024 * MIB) => format!("{} GiB", b / (1024 * MIB)),
        b if b >= MIB && b.is_multiple_of(MIB) => format!("{} MiB", b / MIB),
        b => format!("{b}-byte"),
    }
}

/// The name of `path` in messages: as given, with control characters escaped.
pub fn name(path: &Path) -> String {
    crate::escape::escape(&path.display().to_string()).into_owned()
}

/// What a file is when it is not a regular file: the crate's one test of a file's type, with
/// its two wordings (the tool's files say [`FileKind::words`], the world directory's region files
/// [`FileKind::short`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A symbolic link (looked at without following it).
    Symlink,
    /// A FIFO (a named or unnamed pipe).
    Fifo,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A socket.
    Socket,
    /// Anything else that is not a regular file.
    Other,
}

impl FileKind {
    /// What `t` is, `None` for a regular file.
    pub fn of(t: &FileType) -> Option<FileKind> {
        if t.is_file() {
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if t.is_fifo() {
                return Some(FileKind::Fifo);
            }
            if t.is_char_device() {
                return Some(FileKind::CharDevice);
            }
            if t.is_block_device() {
                return Some(FileKind::BlockDevice);
            }
            if t.is_socket() {
                return Some(FileKind::Socket);
            }
        }
        Some(if t.is_dir() {
            FileKind::Directory
        } else if t.is_symlink() {
            FileKind::Symlink
        } else {
            FileKind::Other
        })
    }

    /// In words, for the tool's files (`a FIFO (a named or unnamed pipe)`, `a character
    /// device`, …).
    pub fn words(self) -> &'static str {
        match self {
            FileKind::Fifo => "a FIFO (a named or unnamed pipe)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symbolic link",
            FileKind::Other => "something else (not a regular file)",
        }
    }

    /// In short words, for the world directory's messages (`a FIFO`, `a device`, …).
    pub fn short(self) -> &'static str {
        match self {
            FileKind::Fifo => "a FIFO",
            FileKind::CharDevice | FileKind::BlockDevice => "a device",
            FileKind::Socket => "a socket",
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symbolic link",
            FileKind::Other => "not a regular file",
        }
    }
}

/// What a file type is, in words ([`FileKind::words`]).
pub(crate) fn kind(t: &FileType) -> &'static str {
    FileKind::of(t).map_or("a regular file", FileKind::words)
}

/// Whether a final symbolic link is followed when a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Followed: the file it names is read (a user's file given by its path).
    Follow,
    /// Refused, never read through (`O_NOFOLLOW`): a file the tool found in a directory it
    /// owns (a region file, a journal).
    Refuse,
}

/// A file as read by [`read_regular`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Regular {
    /// A regular file of at most the cap: its bytes.
    Bytes(Vec<u8>),
    /// A regular file longer than the cap (read no further than the cap and one byte).
    TooLarge,
    /// Not a regular file: not read.
    NotRegular(FileKind),
}

/// Steps 1 and 2 of the module: the regular file at `path` opened, and what the handle says of
/// it; or what it is instead.
fn open_checked(
    path: &Path,
    links: Links,
) -> std::io::Result<Result<(File, std::fs::Metadata), FileKind>> {
    // 1. Looked at. With links refused, a link goes on to the open on Unix, which refuses it
    //    (`O_NOFOLLOW`), as it refuses a file replaced by a link since the look.
    let look = match links {
        Links::Follow => std::fs::metadata(path)?,
        Links::Refuse => std::fs::symlink_metadata(path)?,
    };
    let t = look.file_type();
    if let Some(kind) = FileKind::of(&t) {
        if links == Links::Follow || cfg!(not(unix)) || !t.is_symlink() {
            return Ok(Err(kind));
        }
    }
    // 2. Opened without blocking, and looked at again: what was opened, not what the name was
    //    a moment ago.
    let handle = match open(path, links) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if links == Links::Refuse && e.raw_os_error() == Some(libc::ELOOP) => {
            return Ok(Err(FileKind::Symlink))
        }
        Err(e) => return Err(e),
    };
    let meta = handle.metadata()?;
    Ok(match FileKind::of(&meta.file_type()) {
        Some(kind) => Err(kind),
        None => Ok((handle, meta)),
    })
}

/// The one capped read of a file by its path: what is not a regular file is refused before it is
/// opened and again through the opened handle, a file the opened handle says is past `cap` is
/// refused unread, any other is read through the cap (never more than `cap + 1` bytes: a file
/// that grows while it is read is still stopped there). Opened without blocking on a FIFO; a
/// final link is followed or refused as `links` says (refused: a link is [`FileKind::Symlink`],
/// also when one took the file's place since it was looked at). The module's steps.
pub fn read_regular(path: &Path, cap: u64, links: Links) -> std::io::Result<Regular> {
    let (handle, meta) = match open_checked(path, links)? {
        Ok(opened) => opened,
        Err(kind) => return Ok(Regular::NotRegular(kind)),
    };
    // 3. A regular file that says it is past the cap is refused unread (a sparse file of 2 GiB
    //    costs no disk, and reading it up to the cap would cost a gigabyte of memory each
    //    time); one that says it is within is read through the cap all the same: it may grow.
    if meta.len() > cap {
        return Ok(Regular::TooLarge);
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    read_capped(handle, &mut bytes, cap)?;
    if bytes.len() as u64 > cap {
        return Ok(Regular::TooLarge);
    }
    Ok(Regular::Bytes(bytes))
}

/// Opens `path` for reading without blocking on a FIFO (and, with links refused, without
/// following a final link).
fn open(path: &Path, links: Links) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(match links {
            Links::Follow => libc::O_NONBLOCK,
            Links::Refuse => libc::O_NOFOLLOW | libc::O_NONBLOCK,
        });
    }
    #[cfg(not(unix))]
    let _ = links;
    options.open(path)
}

/// Opens the regular file at `path` (links followed) for reading, refusing what is not one
/// before and after opening it (steps 1 and 2 of the module); for a reader that reads it
/// itself, through its own cap.
pub fn open_regular(path: &Path) -> Result<(File, std::fs::Metadata), ReadError> {
    let file = name(path);
    let opened = open_checked(path, Links::Follow).map_err(|e| ReadError::Io {
        file: file.clone(),
        message: e.to_string(),
    })?;
    opened.map_err(|kind| ReadError::NotRegular {
        file,
        found: kind.words(),
    })
}

/// The bytes of the regular file at `path` (links followed), at most `cap` of them; see the
/// module's steps ([`read_regular`]).
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let file = name(path);
    let read = read_regular(path, cap, Links::Follow).map_err(|e| ReadError::Io {
        file: file.clone(),
        message: e.to_string(),
    })?;
    match read {
        Regular::Bytes(bytes) => Ok(bytes),
        Regular::TooLarge => Err(ReadError::TooLarge { file, limit: cap }),
        Regular::NotRegular(kind) => Err(ReadError::NotRegular {
            file,
            found: kind.words(),
        }),
    }
}

/// Reads `source` to its end or to `cap + 1` bytes, whichever comes first, into `bytes`:
/// more than `cap` bytes read means the source is over the cap.
pub fn read_capped(source: impl Read, bytes: &mut Vec<u8>, cap: u64) -> std::io::Result<()> {
    source.take(cap.saturating_add(1)).read_to_end(bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_under_the_cap_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read(&path, 5).unwrap(), b"12345");
        let err = read(&path, 4).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "a.json: the file is larger than the 4-byte limit (the limit is 4 bytes)"
            ),
            "{err}"
        );
    }

    #[test]
    fn an_endless_source_costs_the_cap_plus_one_byte() {
        let mut bytes = Vec::new();
        read_capped(std::io::repeat(b'y'), &mut bytes, 1000).unwrap();
        assert_eq!(bytes.len(), 1001);
    }

    #[test]
    fn a_directory_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = read(dir.path(), MAX_FILE_BYTES).unwrap_err().to_string();
        assert!(
            err.ends_with(": expected a regular file, found a directory"),
            "{err}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn dev_zero_is_refused_without_reading() {
        let err = read(Path::new("/dev/zero"), MAX_FILE_BYTES)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "/dev/zero: expected a regular file, found a character device"
        );
    }

    #[test]
    fn the_limit_reads_in_binary_units() {
        assert_eq!(human(MAX_FILE_BYTES), "16 MiB");
        assert_eq!(human(1 << 30), "1 GiB");
        assert_eq!(human(1000), "1000-byte");
    }

    #[test]
    fn names_are_escaped() {
        assert_eq!(name(Path::new("a\u{1b}[2J.json")), "a\\u{1b}[2J.json");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_followed_or_refused_as_asked_and_kinds_have_both_wordings() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        std::fs::write(&target, b"abc").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(
            read_regular(&link, 10, Links::Follow).unwrap(),
            Regular::Bytes(b"abc".to_vec())
        );
        assert_eq!(
            read_regular(&link, 10, Links::Refuse).unwrap(),
            Regular::NotRegular(FileKind::Symlink)
        );
        assert_eq!(
            read_regular(&target, 2, Links::Refuse).unwrap(),
            Regular::TooLarge
        );
        let dev = FileKind::of(&std::fs::metadata("/dev/zero").unwrap().file_type()).unwrap();
        assert_eq!(
            (dev.words(), dev.short()),
            ("a character device", "a device")
        );
        assert_eq!(
            FileKind::of(&std::fs::metadata(&target).unwrap().file_type()),
            None
        );
    }
}
