//! The file-system seam the save thread writes through ([`Fs`]: the real one, and one that fails
//! for tests), the capped read of a file that is never a link, a FIFO or a device, and the
//! atomic rewrite of a file (temporary file, fsync, rename, fsync of the directory).

use std::io::Write as _;
use std::path::Path;

use crate::user_file::{read_regular, Links, Regular};

/// The file-system operations the save thread writes with: the seam tests replace with one that
/// fails ([`RealFs`] is the one a game uses). Reads do not go through it.
pub trait Fs: Send + Sync {
    /// Creates `dir` and its parents.
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()>;
    /// Creates `path`, which must not exist (never following a link), holding `bytes`.
    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()>;
    /// Makes `path`'s content durable (fsync).
    fn fsync(&self, path: &Path) -> std::io::Result<()>;
    /// Renames `from` over `to` (atomic).
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()>;
    /// Makes `dir`'s entries durable (fsync of the directory).
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()>;
    /// Removes the file (or link) `path`.
    fn remove_file(&self, path: &Path) -> std::io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl Fs for RealFs {
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        no_follow(&mut options);
        options.open(path)?.write_all(bytes)
    }

    fn fsync(&self, path: &Path) -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true);
        no_follow(&mut options);
        options.open(path)?.sync_all()
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_file(path)
    }
}

/// One step of [`Fs`], to make fail ([`FaultyFs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsOp {
    /// [`Fs::create_dir_all`].
    CreateDir,
    /// [`Fs::write`].
    Write,
    /// [`Fs::fsync`].
    Fsync,
    /// [`Fs::rename`].
    Rename,
    /// [`Fs::sync_dir`].
    SyncDir,
    /// [`Fs::remove_file`].
    Remove,
}

/// The real file system, except that the chosen step fails (a failing write writes half its
/// bytes first, as a full disk does) and writes can be made slow: the test double for a write
/// back that fails, for this crate's tests and an embedder's (`Store::start_with`,
/// `DistrictKit::from_spec_with_fs`).
#[derive(Debug, Default)]
pub struct FaultyFs {
    fail: std::sync::Mutex<Option<FsOp>>,
    slow_write: std::sync::Mutex<Option<std::time::Duration>>,
    renames: std::sync::atomic::AtomicUsize,
}

impl FaultyFs {
    /// Makes `op` fail from now on (`None`: nothing fails).
    pub fn fail(&self, op: Option<FsOp>) {
        *self.fail.lock().expect("not poisoned") = op;
    }

    /// Makes every write take at least `d` first (`None`: as fast as the disk).
    pub fn slow_writes(&self, d: Option<std::time::Duration>) {
        *self.slow_write.lock().expect("not poisoned") = d;
    }

    /// How many renames succeeded.
    pub fn renames(&self) -> usize {
        self.renames.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn check(&self, op: FsOp) -> std::io::Result<()> {
        match *self.fail.lock().expect("not poisoned") == Some(op) {
            true => Err(std::io::Error::other(format!("injected {op:?} failure"))),
            false => Ok(()),
        }
    }
}

impl Fs for FaultyFs {
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.check(FsOp::CreateDir)?;
        RealFs.create_dir_all(dir)
    }
    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        if let Some(d) = *self.slow_write.lock().expect("not poisoned") {
            std::thread::sleep(d);
        }
        if self.check(FsOp::Write).is_err() {
            RealFs.write(path, &bytes[..bytes.len() / 2])?;
            return self.check(FsOp::Write);
        }
        RealFs.write(path, bytes)
    }
    fn fsync(&self, path: &Path) -> std::io::Result<()> {
        self.check(FsOp::Fsync)?;
        RealFs.fsync(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.check(FsOp::Rename)?;
        RealFs.rename(from, to)?;
        self.renames
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.check(FsOp::SyncDir)?;
        RealFs.sync_dir(dir)
    }
    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        self.check(FsOp::Remove)?;
        RealFs.remove_file(path)
    }
}

/// Opens without following a final symbolic link and without blocking on a FIFO.
pub(crate) fn no_follow(options: &mut std::fs::OpenOptions) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    let _ = options;
}

/// A file as read by [`read_capped`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capped {
    /// A regular file of at most the cap: its bytes.
    Bytes(Vec<u8>),
    /// A regular file longer than the cap (read no further than the cap and one byte).
    TooLarge,
    /// Not a regular file (a link, a FIFO, a directory, a device): not read.
    NotRegular(&'static str),
}

/// Reads `path` if it is a regular file, never following a link or blocking on a FIFO: one whose
/// size (as the opened file reports it) is past `cap` is [`Capped::TooLarge`] without a read;
/// any other is read through the cap, never more than `cap + 1` bytes (a file that grows while
/// it is read is still stopped there). The crate's one capped read,
/// [`crate::user_file::read_regular`], with links refused.
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<Capped> {
    Ok(match read_regular(path, cap, Links::Refuse)? {
        Regular::Bytes(bytes) => Capped::Bytes(bytes),
        Regular::TooLarge => Capped::TooLarge,
        Regular::NotRegular(kind) => Capped::NotRegular(kind.short()),
    })
}

/// Replaces `dir/name` with `bytes` atomically: `name.tmp`, fsync, rename, fsync the directory.
/// A reader (or a crash) sees the old file or the new one, never a mix. The temporary file is
/// created anew (an old one, or a link by that name, is removed first, never written through).
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(&RealFs, dir, name, bytes)
}

/// [`write_atomic`] through `fs` ([`Temp::Fixed`]), each error naming its step and path.
pub(crate) fn write_atomic_with(
    fs: &dyn Fs,
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
    replace(fs, dir, name.as_ref(), bytes, Temp::Fixed, |_| Ok(())).map_err(|f| {
        let what = match f.step {
            Step::Remove => "remove",
            Step::Write | Step::Named => "write",
            Step::Fsync | Step::SyncDir => "fsync",
            Step::BeforeRename | Step::Rename => "rename",
        };
        op(what, &f.path, f.error)
    })
}

/// How many temporary names [`Temp::Fresh`] tries.
pub(crate) const TEMP_NAMES: u32 = 64;

/// How the temporary file of an atomic write is named and made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Temp {
    /// `name.tmp`, whatever is by that name removed first (a removal that fails fails the
    /// write): the world directory's files, whose leftovers the save thread sweeps by that name.
    Fixed,
    /// `.name.tmp-<pid>`, made new: a name taken (a file a killed write left, a planted link) is
    /// removed and made new again; taken again at once, the next name (`.1` … `.63`) is tried.
    /// The tool's own files (saves, states, recordings), which any process may write.
    Fresh,
}

/// The step of an atomic write that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Removing the old temporary file ([`Temp::Fixed`]).
    Remove,
    /// Every temporary name was taken ([`Temp::Fresh`]; the error says so).
    Named,
    /// Making and writing the temporary file.
    Write,
    /// Its fsync.
    Fsync,
    /// The caller's step before the rename.
    BeforeRename,
    /// The rename over the target.
    Rename,
    /// The fsync of the directory.
    SyncDir,
}

/// Why an atomic write failed: the step, the path it was at (the temporary file; the target for
/// the rename; the directory for its fsync), what the system said.
#[derive(Debug)]
pub(crate) struct Failed {
    pub step: Step,
    pub path: std::path::PathBuf,
    pub error: std::io::Error,
}

/// The crate's one atomic write: `dir/name` replaced by `bytes` through a temporary file in
/// the same directory named and made as `temp` says, written, fsynced, `before_rename` run (tests
/// simulate a crash there), renamed over the target, the directory fsynced. A failure before the
/// rename removes the temporary file (best effort) and leaves the target as it was. Every step
/// goes through `fs`, the seam tests replace.
pub(crate) fn replace(
    fs: &dyn Fs,
    dir: &Path,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    temp: Temp,
    before_rename: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Result<(), Failed> {
    let failed = |step: Step, path: &Path, error: std::io::Error| Failed {
        step,
        path: path.to_owned(),
        error,
    };
    let exists = |e: &std::io::Error| e.kind() == std::io::ErrorKind::AlreadyExists;
    let tmp = match temp {
        Temp::Fixed => {
            let mut tmp_name = name.to_owned();
            tmp_name.push(".tmp");
            let tmp = dir.join(tmp_name);
            match fs.remove_file(&tmp) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(failed(Step::Remove, &tmp, e))
                }
                _ => {}
            }
            if let Err(e) = fs.write(&tmp, bytes) {
                let _ = fs.remove_file(&tmp);
                return Err(failed(Step::Write, &tmp, e));
            }
            tmp
        }
        Temp::Fresh => {
            // Made new (`O_EXCL`: a link or file planted at the name is never opened, so
            // nothing is written through it); `remove_file` removes a link, not what it
            // points to.
            let pid = std::process::id();
            let name = name.to_string_lossy();
            let mut made = None;
            for n in 0..TEMP_NAMES {
                let suffix = if n == 0 {
                    String::new()
                } else {
                    format!(".{n}")
                };
                let tmp = dir.join(format!(".{name}.tmp-{pid}{suffix}"));
                let written = match fs.write(&tmp, bytes) {
                    Err(e) if exists(&e) => {
                        let _ = fs.remove_file(&tmp);
                        fs.write(&tmp, bytes)
                    }
                    other => other,
                };
                match written {
                    Ok(()) => {
                        made = Some(tmp);
                        break;
                    }
                    Err(e) if exists(&e) => {}
                    Err(e) => {
                        let _ = fs.remove_file(&tmp);
                        return Err(failed(Step::Write, &tmp, e));
                    }
                }
            }
            let Some(tmp) = made else {
                let first = dir.join(format!(".{name}.tmp-{pid}"));
                let e = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
                return Err(failed(Step::Named, &first, e));
            };
            tmp
        }
    };
    let to = dir.join(name);
    let renamed = fs
        .fsync(&tmp)
        .map_err(|e| failed(Step::Fsync, &tmp, e))
        .and_then(|()| before_rename(&tmp).map_err(|e| failed(Step::BeforeRename, &tmp, e)))
        .and_then(|()| {
            fs.rename(&tmp, &to)
                .map_err(|e| failed(Step::Rename, &to, e))
        });
    if renamed.is_err() {
        // Best effort: a temporary file left behind is never read, and swept later.
        let _ = fs.remove_file(&tmp);
    }
    renamed?;
    fs.sync_dir(dir).map_err(|e| failed(Step::SyncDir, dir, e))
}

/// An I/O error naming the operation and the path.
pub(super) fn op(what: &str, path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::no_follow;
    use std::path::Path;

    #[cfg(unix)]
    #[test]
    fn files_are_opened_without_following_a_final_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"t").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        no_follow(&mut options);
        let err = options.open(&link).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
        assert!(options.open(&target).is_ok());
        // fsync through the seam refuses the link too.
        assert_eq!(
            RealFs.fsync(&link).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
    }

    #[cfg(unix)]
    #[test]
    fn reads_stop_at_the_cap_and_refuse_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, [7u8; 100]).unwrap();
        assert_eq!(read_capped(&f, 100).unwrap(), Capped::Bytes(vec![7; 100]));
        assert_eq!(read_capped(&f, 99).unwrap(), Capped::TooLarge);
        assert_eq!(
            read_capped(Path::new("/dev/zero"), 10).unwrap(),
            Capped::NotRegular("a device")
        );
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        assert_eq!(
            read_capped(&fifo, 10).unwrap(),
            Capped::NotRegular("a FIFO")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_temporary_file_that_is_a_link_is_replaced_never_written_through() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("t");
        std::fs::write(&target, b"outside").unwrap();
        symlink(&target, dir.path().join("r.0.0.wsr.tmp")).unwrap();
        write_atomic(dir.path(), "r.0.0.wsr", b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"outside");
        assert_eq!(std::fs::read(dir.path().join("r.0.0.wsr")).unwrap(), b"new");
    }
}
