//! The save thread (SPEC §13): one thread owns every region file of
//! the world directory, and one game owns the directory (an advisory lock on `session.lock`,
//! held as long as the [`Store`] lives). The tick sends it the modified chunks to write back,
//! workers ask it for a chunk's stored diff; both by message, so no region file needs a lock. It
//! reads every region file once, when it opens the directory (checking stamps and checksums),
//! and serves reads from memory thereafter. A write rewrites each region it touches whole and
//! atomically: a temporary file, fsync, rename over the region file, fsync of the directory; a
//! region file found damaged is first kept aside (copied byte for byte, or, when it is not a
//! regular file, renamed aside unread). A write that fails keeps the chunks in memory and is
//! tried again with every later write; the failure is reported until a write succeeds.
//!
//! Region files are read only when they are regular files, never through a symbolic link, never
//! blocking on a FIFO, and never past their size cap. Every write goes through [`Fs`], the
//! file-system seam tests replace with one that fails.
//!
//! Without a directory the thread keeps the diffs in memory only (the game save carries them).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use super::region::{self, Damage, Diff, Region, RegionPos, Stamp};
use crate::grid::ChunkPos;

/// The lock file of a world directory: whoever holds its advisory lock owns the directory.
pub const LOCK_FILE: &str = "session.lock";

/// How many `.damaged.N` names copy-aside tries before it gives up (and the write fails).
pub const MAX_ASIDE_NAMES: u32 = 1000;

/// Why a world directory cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// The directory cannot be created, listed or read.
    #[error("world directory {dir}: {message}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What failed.
        message: String,
    },
    /// Another game (in this process or another) holds the directory's lock.
    #[error("world directory {dir} is in use by another game (lock file {lock} held)")]
    Locked {
        /// The directory.
        dir: PathBuf,
        /// Its lock file.
        lock: PathBuf,
    },
    /// A region file was written for other terrain: its diffs would apply to other chunks.
    #[error(
        "world directory {dir}: {file} was written by {found}; this game has {expected}: its edits \
         belong to another world (use another worldDir, or the seed and generator that wrote it)"
    )]
    Stamp {
        /// The directory.
        dir: PathBuf,
        /// The region file.
        file: String,
        /// Its stamp.
        found: Stamp,
        /// The game's.
        expected: Stamp,
    },
    /// Write-backs failed: these regions' edits are on disk only as they were before (kept in
    /// memory, tried again with the next write).
    #[error("{}", unsaved_message(.dir, .failures))]
    Unsaved {
        /// The directory.
        dir: PathBuf,
        /// Each region not written, in region order.
        failures: Vec<WriteFailure>,
    },
    /// The save thread is gone (it panicked).
    #[error("the world.terrain save thread stopped")]
    Stopped,
}

fn unsaved_message(dir: &Path, failures: &[WriteFailure]) -> String {
    let chunks: usize = failures.iter().map(|f| f.chunks).sum();
    let each: Vec<String> = failures
        .iter()
        .map(|f| {
            format!(
                "{} ({} chunk{}: {})",
                dir.join(&f.file).display(),
                f.chunks,
                if f.chunks == 1 { "" } else { "s" },
                f.message
            )
        })
        .collect();
    format!(
        "world directory {}: {chunks} modified chunk{} not written: {}",
        dir.display(),
        if chunks == 1 { "" } else { "s" },
        each.join("; ")
    )
}

/// One region whose write-back failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    /// The region.
    pub region: RegionPos,
    /// Its file name (`r.0.0.wsr`).
    pub file: String,
    /// How many of its chunks have edits (or reverts) not on disk.
    pub chunks: usize,
    /// What failed (the operation, the path, the OS error).
    pub message: String,
}

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

/// Opens without following a final symbolic link and without blocking on a FIFO.
fn no_follow(options: &mut std::fs::OpenOptions) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    let _ = options;
}

/// What a file that is not a regular file is, for messages.
fn kind_of(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        return None;
    }
    if t.is_symlink() {
        return Some("a symbolic link");
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_block_device() || t.is_char_device() {
            return Some("a device");
        }
    }
    Some("not a regular file")
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

/// Reads `path` if it is a regular file, never following a link or blocking on a FIFO, and
/// never reading more than `cap + 1` bytes, whatever size the file system reports.
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<Capped> {
    // Not opened at all: FIFOs, devices, directories, sockets. A link goes on to the open,
    // which refuses it (`O_NOFOLLOW`), as it refuses a file replaced by a link since the look.
    let t = std::fs::symlink_metadata(path)?.file_type();
    if let Some(kind) = kind_of(t).filter(|_| cfg!(not(unix)) || !t.is_symlink()) {
        return Ok(Capped::NotRegular(kind));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    no_follow(&mut options);
    let file = match options.open(path) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Ok(Capped::NotRegular("a symbolic link"))
        }
        Err(e) => return Err(e),
    };
    // What was opened, not what the name was a moment ago.
    if let Some(kind) = kind_of(file.metadata()?.file_type()) {
        return Ok(Capped::NotRegular(kind));
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Ok(Capped::TooLarge);
    }
    Ok(Capped::Bytes(bytes))
}

/// One region file as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionReport {
    /// The region.
    pub pos: RegionPos,
    /// Its file name.
    pub file: String,
    /// Its size in bytes (of the link itself for a link, as the file system reports it).
    pub len: u64,
    /// What it holds and what is damaged.
    pub decoded: region::Decoded,
}

/// Damage found when opening a directory, for `world.terrain.error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The chunk the event names (the record's, or the region's origin for a bad header).
    pub chunk: ChunkPos,
    /// What is wrong and what was done.
    pub message: String,
}

/// What opening a directory gives: every sound diff, and what was damaged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Opened {
    /// The stored diffs.
    pub chunks: BTreeMap<ChunkPos, Diff>,
    /// The damage, region by region (row order of regions), in file order.
    pub damage: Vec<Reported>,
    /// The regions whose file is damaged: copied aside before they are rewritten.
    pub damaged: BTreeSet<RegionPos>,
}

fn header_damage(message: String) -> region::Decoded {
    region::Decoded {
        stamp: None,
        chunks: BTreeMap::new(),
        entries: Vec::new(),
        damage: vec![Damage::Header(message)],
    }
}

/// Reads every region file of `dir` (files named `r.<x>.<z>.wsr`; others are ignored), in
/// region order. Reading is all it does: no lock is taken, nothing is created. A region name
/// that is not a regular file (a symbolic link, a FIFO, a directory) is not read: it is a
/// damaged region.
pub fn read_dir(dir: &Path) -> Result<Vec<RegionReport>, StoreError> {
    let io = |e: std::io::Error| StoreError::Io {
        dir: dir.to_owned(),
        message: e.to_string(),
    };
    let mut regions = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pos) = RegionPos::parse_file_name(&name) {
            regions.insert(pos, name);
        }
    }
    let mut out = Vec::with_capacity(regions.len());
    for (pos, file) in regions {
        let path = dir.join(&file);
        let len = std::fs::symlink_metadata(&path).map_err(io)?.len();
        let decoded = match read_capped(&path, region::MAX_FILE_LEN).map_err(io)? {
            Capped::Bytes(bytes) => region::decode(&bytes, pos),
            Capped::TooLarge => header_damage(format!(
                "{len} bytes: larger than any region file ({} bytes at most)",
                region::MAX_FILE_LEN
            )),
            Capped::NotRegular(kind) => header_damage(format!(
                "{kind}, not a regular file: not read (a region file is never followed or \
                 opened unless it is a regular file)"
            )),
        };
        out.push(RegionReport {
            pos,
            file,
            len,
            decoded,
        });
    }
    Ok(out)
}

/// Opens `dir` for a game whose chunks have `stamp`, reading only: reads every region, refuses
/// one written for other terrain, lists the damage. A directory that does not exist is an empty
/// world.
pub fn open_dir(dir: &Path, stamp: Stamp) -> Result<Opened, StoreError> {
    if !dir.exists() {
        return Ok(Opened::default());
    }
    let mut opened = Opened::default();
    for report in read_dir(dir)? {
        let stamps = report
            .decoded
            .stamp
            .iter()
            .chain(report.decoded.chunks.values().map(|(s, _)| s));
        for found in stamps {
            if !found.same(&stamp) {
                return Err(StoreError::Stamp {
                    dir: dir.to_owned(),
                    file: report.file,
                    found: *found,
                    expected: stamp,
                });
            }
        }
        if !report.decoded.damage.is_empty() {
            opened.damaged.insert(report.pos);
            for d in &report.decoded.damage {
                opened.damage.push(Reported {
                    chunk: d.chunk(report.pos),
                    message: format!(
                        "{}: {d}; the chunk loads as generated (the file is kept aside as {}.damaged \
                         before it is rewritten)",
                        report.file, report.file
                    ),
                });
            }
        }
        opened
            .chunks
            .extend(report.decoded.chunks.into_iter().map(|(c, (_, d))| (c, d)));
    }
    Ok(opened)
}

/// Keeps `dir/file` aside as `file.damaged` (or `.damaged.1`, … when that name holds other
/// bytes, or is not a regular file: a directory or link squatting a name is never read or
/// replaced). A regular file is copied byte for byte (the original stays until it is replaced);
/// anything else — a link, a FIFO, a directory, a file past the size cap — is renamed aside,
/// never read. Returns the name used, or `None` when there is no such file any more.
pub fn copy_aside(dir: &Path, file: &str) -> std::io::Result<Option<String>> {
    copy_aside_with(&RealFs, dir, file)
}

fn copy_aside_with(fs: &dyn Fs, dir: &Path, file: &str) -> std::io::Result<Option<String>> {
    let src = dir.join(file);
    let bytes = match read_capped(&src, region::MAX_FILE_LEN) {
        Ok(Capped::Bytes(b)) => Some(b),
        Ok(Capped::TooLarge | Capped::NotRegular(_)) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    for n in 0..MAX_ASIDE_NAMES {
        let name = match n {
            0 => format!("{file}.damaged"),
            n => format!("{file}.damaged.{n}"),
        };
        let path = dir.join(&name);
        let taken = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match &bytes {
                    Some(b) => write_atomic_with(fs, dir, &name, b)?,
                    None => {
                        fs.rename(&src, &path).map_err(|e| op("rename", &src, e))?;
                        fs.sync_dir(dir).map_err(|e| op("fsync", dir, e))?;
                    }
                }
                return Ok(Some(name));
            }
            Err(e) => return Err(e),
        };
        // Kept already (an earlier copy whose rewrite failed): the same bytes, a regular file.
        if let (Some(b), true) = (&bytes, taken.file_type().is_file()) {
            if read_capped(&path, b.len() as u64)? == Capped::Bytes(b.clone()) {
                return Ok(Some(name));
            }
        }
    }
    Err(std::io::Error::other(format!(
        "keeping {file} aside: {file}.damaged and {file}.damaged.1 … .{} are all taken",
        MAX_ASIDE_NAMES - 1
    )))
}

/// An I/O error naming the operation and the path.
fn op(what: &str, path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Removes the temporary files (`r.x.z.wsr.tmp`, `r.x.z.wsr.damaged….tmp`) a write killed
/// midway left in `dir`; they are never read.
fn remove_stale_temporaries(fs: &dyn Fs, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".tmp") else {
            continue;
        };
        let region = stem.split_once(".wsr").map(|(r, _)| format!("{r}.wsr"));
        if region
            .as_deref()
            .and_then(RegionPos::parse_file_name)
            .is_some()
        {
            let _ = fs.remove_file(&entry.path());
        }
    }
}

/// Replaces `dir/name` with `bytes` atomically: `name.tmp`, fsync, rename, fsync the directory.
/// A reader (or a crash) sees the old file or the new one, never a mix. The temporary file is
/// created anew (an old one, or a link by that name, is removed first, never written through).
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(&RealFs, dir, name, bytes)
}

fn write_atomic_with(fs: &dyn Fs, dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    match fs.remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(op("remove", &tmp, e)),
        _ => {}
    }
    let written = fs
        .write(&tmp, bytes)
        .map_err(|e| op("write", &tmp, e))
        .and_then(|()| fs.fsync(&tmp).map_err(|e| op("fsync", &tmp, e)))
        .and_then(|()| {
            let to = dir.join(name);
            fs.rename(&tmp, &to).map_err(|e| op("rename", &to, e))
        });
    if written.is_err() {
        // Best effort: a temporary file left behind is never read, and swept later.
        let _ = fs.remove_file(&tmp);
    }
    written?;
    fs.sync_dir(dir).map_err(|e| op("fsync", dir, e))
}

/// The directories this process holds, by the directory's device and inode (one owner per
/// directory in the process: two games here, through the C ABI say, never share one).
static HELD: std::sync::Mutex<BTreeSet<(u64, u64)>> = std::sync::Mutex::new(BTreeSet::new());

/// The lock on a world directory: this process's claim in [`HELD`] and a POSIX record lock
/// (`fcntl` `F_SETLK`, a write lock over the whole of `session.lock`) that the OS releases when
/// the process dies. A record lock belongs to the process, not to the open file, so a child
/// forked by another thread (spawning a program) never holds it, not even between its fork and
/// its exec: with `flock` such a child kept the directory locked after the game that owned it
/// was gone. The price of record locks, that closing *any* descriptor of the file in this
/// process releases them, is paid by never opening `session.lock` anywhere else (reading a
/// directory does not touch it) and by checking [`HELD`] before opening it. Released when
/// dropped.
#[derive(Debug)]
struct Lock {
    /// Always `Some` until dropped.
    file: Option<std::fs::File>,
    key: (u64, u64),
}

impl Lock {
    /// Creates `dir` if needed and takes its lock, or says who holds it.
    fn take(dir: &Path) -> Result<Lock, StoreError> {
        use std::os::unix::fs::MetadataExt as _;
        let io = |message: String| StoreError::Io {
            dir: dir.to_owned(),
            message,
        };
        std::fs::create_dir_all(dir).map_err(|e| io(format!("cannot create it: {e}")))?;
        let path = dir.join(LOCK_FILE);
        let meta = std::fs::metadata(dir).map_err(|e| io(format!("cannot read it: {e}")))?;
        let key = (meta.dev(), meta.ino());
        let locked = || StoreError::Locked {
            dir: dir.to_owned(),
            lock: path.clone(),
        };
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if held.contains(&key) {
            return Err(locked());
        }
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        no_follow(&mut options);
        let mut file = options
            .open(&path)
            .map_err(|e| io(format!("cannot open its lock file {LOCK_FILE}: {e}")))?;
        match rustix::fs::fcntl_lock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::ACCESS || e == rustix::io::Errno::AGAIN => {
                return Err(locked())
            }
            Err(e) => return Err(io(format!("cannot lock {LOCK_FILE}: {e}"))),
        }
        held.insert(key);
        // For a person looking: which process holds it (never read back by the game).
        let _ = file
            .set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        Ok(Lock {
            file: Some(file),
            key,
        })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Under the registry's lock: close the descriptor (which releases the record lock),
        // then give up the claim. In the other order a take in between would open and lock the
        // file, and this close would then release that new owner's lock (record locks are the
        // process's).
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        drop(self.file.take());
        held.remove(&self.key);
    }
}

/// A message to the save thread.
enum Request {
    /// A worker asks for a chunk's stored diff.
    Read {
        chunk: ChunkPos,
        reply: Sender<Option<Diff>>,
    },
    /// Write these chunks back (`None`: no longer modified), with every region an earlier write
    /// failed to write; `done` hears which regions are still not written.
    Write {
        changes: Vec<(ChunkPos, Option<Diff>)>,
        done: Option<Sender<Result<(), StoreError>>>,
    },
    /// Every stored diff.
    Snapshot {
        reply: Sender<BTreeMap<ChunkPos, Diff>>,
    },
    /// Opens another directory (a loaded save's), reading only.
    Peek {
        dir: PathBuf,
        reply: Sender<Result<Opened, StoreError>>,
    },
    /// From now on, serve `opened` and write to `dir` (a load was committed).
    Replace {
        dir: Option<PathBuf>,
        opened: Opened,
    },
}

/// What a worker holds to ask the save thread for diffs: the request queue and a reply channel
/// of its own (a clone gets a new one, so answers never cross between workers).
pub struct Reader {
    requests: Sender<Request>,
    reply: (Sender<Option<Diff>>, Receiver<Option<Diff>>),
}

impl Clone for Reader {
    fn clone(&self) -> Self {
        Reader {
            requests: self.requests.clone(),
            reply: crossbeam_channel::bounded(1),
        }
    }
}

impl Reader {
    /// The stored diff of `chunk`, if it is modified (`None` also if the thread is gone).
    pub fn read(&self, chunk: ChunkPos) -> Option<Diff> {
        let request = Request::Read {
            chunk,
            reply: self.reply.0.clone(),
        };
        self.requests.send(request).ok()?;
        self.reply.1.recv().ok().flatten()
    }
}

/// The outcome of a write sent with [`Store::write_then`], to wait for later.
#[derive(Debug)]
pub struct Outcome(Receiver<Result<(), StoreError>>);

impl Outcome {
    /// Waits until the write is done: `Ok`, or every region still not written.
    pub fn wait(self) -> Result<(), StoreError> {
        self.0.recv().map_err(|_| StoreError::Stopped)?
    }
}

/// The tick's handle on the save thread. Dropping it ends the thread after it has written
/// everything sent to it (what it could not write is reported on stderr), then releases the
/// directory's lock.
pub struct Store {
    requests: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    stamp: Stamp,
    /// Dropped after the thread is joined (fields drop after [`Drop::drop`]).
    _lock: Option<Lock>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Starts the save thread on `dir` (created if needed, its lock taken, then opened with
    /// [`open_dir`] on the thread) or, with no directory, in memory. Returns the damage found.
    pub fn start(dir: Option<PathBuf>, stamp: Stamp) -> Result<(Store, Vec<Reported>), StoreError> {
        Self::start_with(dir, stamp, Arc::new(RealFs))
    }

    /// [`Store::start`], writing through `fs`.
    pub fn start_with(
        dir: Option<PathBuf>,
        stamp: Stamp,
        fs: Arc<dyn Fs>,
    ) -> Result<(Store, Vec<Reported>), StoreError> {
        let lock = dir.as_deref().map(Lock::take).transpose()?;
        let (tx, rx) = crossbeam_channel::unbounded::<Request>();
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let thread = std::thread::Builder::new()
            .name("world.terrain save".into())
            .spawn(move || {
                let opened = match &dir {
                    Some(d) => open_dir(d, stamp),
                    None => Ok(Opened::default()),
                };
                let opened = match opened {
                    Ok(o) => {
                        let _ = ready_tx.send(Ok(o.damage.clone()));
                        o
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                Owner::new(dir, stamp, fs, opened).serve(&rx);
            })
            .map_err(|e| StoreError::Io {
                dir: PathBuf::new(),
                message: format!("cannot start the save thread: {e}"),
            })?;
        let damage = ready_rx.recv().map_err(|_| StoreError::Stopped)?;
        let store = Store {
            requests: Some(tx),
            thread: Some(thread),
            stamp,
            _lock: lock,
        };
        Ok((store, damage?))
    }

    /// A reader for a worker.
    pub fn reader(&self) -> Option<Reader> {
        Some(Reader {
            requests: self.requests.clone()?,
            reply: crossbeam_channel::bounded(1),
        })
    }

    /// The stamp diffs are taken against.
    pub fn stamp(&self) -> Stamp {
        self.stamp
    }

    fn send(&self, request: Request) -> Result<(), StoreError> {
        self.requests
            .as_ref()
            .ok_or(StoreError::Stopped)?
            .send(request)
            .map_err(|_| StoreError::Stopped)
    }

    fn ask<T>(&self, request: impl FnOnce(Sender<T>) -> Request) -> Result<T, StoreError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(request(tx))?;
        rx.recv().map_err(|_| StoreError::Stopped)
    }

    /// Queues a write back and returns at once.
    pub fn write(&self, changes: Vec<(ChunkPos, Option<Diff>)>) {
        // A failure here (the thread is gone) surfaces at the next `flush`.
        let _ = self.send(Request::Write {
            changes,
            done: None,
        });
    }

    /// Queues a write back and returns at once, with its outcome to wait for later.
    pub fn write_then(&self, changes: Vec<(ChunkPos, Option<Diff>)>) -> Outcome {
        let (tx, rx) = crossbeam_channel::bounded(1);
        // The thread gone: the sender is dropped with the request, `wait` says `Stopped`.
        let _ = self.send(Request::Write {
            changes,
            done: Some(tx),
        });
        Outcome(rx)
    }

    /// Writes back (with every region an earlier write could not write) and waits until it is
    /// on disk; the error lists every region still not written.
    pub fn flush(&self, changes: Vec<(ChunkPos, Option<Diff>)>) -> Result<(), StoreError> {
        self.write_then(changes).wait()
    }

    /// The stored diff of one chunk, waiting for it (the tick's own fallback).
    pub fn read(&self, chunk: ChunkPos) -> Option<Diff> {
        self.ask(|reply| Request::Read { chunk, reply })
            .ok()
            .flatten()
    }

    /// Every stored diff (what a save without a world directory carries).
    pub fn snapshot(&self) -> Result<BTreeMap<ChunkPos, Diff>, StoreError> {
        self.ask(|reply| Request::Snapshot { reply })
    }

    /// Opens another directory for a load, reading only.
    pub fn peek(&self, dir: PathBuf) -> Result<Opened, StoreError> {
        self.ask(|reply| Request::Peek { dir, reply })?
    }

    /// Serves `opened` and writes to `dir` from now on (a load was committed). Requests sent
    /// before are answered first.
    pub fn replace(&self, dir: Option<PathBuf>, opened: Opened) {
        let _ = self.send(Request::Replace { dir, opened });
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // Workers hold senders too; the pool is dropped (and joined) before the store.
        self.requests = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The save thread's state.
struct Owner {
    dir: Option<PathBuf>,
    stamp: Stamp,
    fs: Arc<dyn Fs>,
    regions: BTreeMap<RegionPos, BTreeMap<ChunkPos, Diff>>,
    /// The chunks whose stored form is behind, by region: written by the next write that
    /// succeeds for their region (every write tries them all).
    behind: BTreeMap<RegionPos, BTreeSet<ChunkPos>>,
    /// Regions whose last write failed, with why.
    failing: BTreeMap<RegionPos, WriteFailure>,
    /// Regions whose file was found damaged and is not kept aside yet.
    damaged: BTreeSet<RegionPos>,
    /// Whether the temporary files a killed write left were removed (at the first write:
    /// opening changes nothing on disk).
    swept: bool,
}

impl Owner {
    fn new(dir: Option<PathBuf>, stamp: Stamp, fs: Arc<dyn Fs>, opened: Opened) -> Owner {
        let mut owner = Owner {
            dir,
            stamp,
            fs,
            regions: BTreeMap::new(),
            behind: BTreeMap::new(),
            failing: BTreeMap::new(),
            damaged: BTreeSet::new(),
            swept: false,
        };
        owner.fill(opened);
        owner
    }

    fn fill(&mut self, opened: Opened) {
        self.regions.clear();
        self.behind.clear();
        self.failing.clear();
        self.damaged = opened.damaged;
        for (c, d) in opened.chunks {
            self.regions
                .entry(RegionPos::of(c))
                .or_default()
                .insert(c, d);
        }
    }

    fn serve(mut self, requests: &Receiver<Request>) {
        while let Ok(request) = requests.recv() {
            match request {
                Request::Read { chunk, reply } => {
                    let diff = self
                        .regions
                        .get(&RegionPos::of(chunk))
                        .and_then(|r| r.get(&chunk))
                        .cloned();
                    let _ = reply.send(diff);
                }
                Request::Write { changes, done } => {
                    self.write(changes);
                    if let Some(done) = done {
                        let _ = done.send(self.outcome());
                    }
                }
                Request::Snapshot { reply } => {
                    let all = self
                        .regions
                        .values()
                        .flatten()
                        .map(|(c, d)| (*c, d.clone()));
                    let _ = reply.send(all.collect());
                }
                Request::Peek { dir, reply } => {
                    let _ = reply.send(open_dir(&dir, self.stamp));
                }
                Request::Replace { dir, opened } => {
                    self.dir = dir;
                    self.fill(opened);
                }
            }
        }
    }

    /// `Ok`, or every region not written.
    fn outcome(&self) -> Result<(), StoreError> {
        match &self.dir {
            Some(dir) if !self.failing.is_empty() => Err(StoreError::Unsaved {
                dir: dir.clone(),
                failures: self.failing.values().cloned().collect(),
            }),
            _ => Ok(()),
        }
    }

    /// Applies `changes` and rewrites every region whose stored form is behind (in memory only
    /// without a dir); a region that fails stays behind.
    fn write(&mut self, changes: Vec<(ChunkPos, Option<Diff>)>) {
        for (chunk, diff) in changes {
            let pos = RegionPos::of(chunk);
            let region = self.regions.entry(pos).or_default();
            let changed = match diff {
                Some(d) if !d.is_empty() => region.insert(chunk, d.clone()).as_ref() != Some(&d),
                _ => region.remove(&chunk).is_some(),
            };
            if changed {
                self.behind.entry(pos).or_default().insert(chunk);
            }
        }
        let Some(dir) = self.dir.clone() else {
            self.behind.clear();
            return;
        };
        let touched: Vec<RegionPos> = self.behind.keys().copied().collect();
        if touched.is_empty() {
            return;
        }
        let fs = self.fs.clone();
        if let Err(e) = fs.create_dir_all(&dir) {
            for pos in touched {
                self.fail(pos, format!("cannot create the directory: {e}"));
            }
            return;
        }
        if !self.swept {
            // Best effort: a temporary file left behind is harmless, only untidy.
            remove_stale_temporaries(fs.as_ref(), &dir);
            self.swept = true;
        }
        for pos in touched {
            match self.write_region(fs.as_ref(), &dir, pos) {
                Ok(()) => {
                    self.behind.remove(&pos);
                    self.failing.remove(&pos);
                }
                Err(e) => self.fail(pos, e.to_string()),
            }
        }
    }

    fn fail(&mut self, pos: RegionPos, message: String) {
        let chunks = self.behind.get(&pos).map_or(0, BTreeSet::len);
        let failure = WriteFailure {
            region: pos,
            file: pos.file_name(),
            chunks,
            message,
        };
        self.failing.insert(pos, failure);
    }

    /// Rewrites one region (or removes its file when no chunk is left), a damaged file kept
    /// aside first.
    fn write_region(&mut self, fs: &dyn Fs, dir: &Path, pos: RegionPos) -> std::io::Result<()> {
        let file = pos.file_name();
        if self.damaged.contains(&pos) {
            copy_aside_with(fs, dir, &file)?;
            self.damaged.remove(&pos);
        }
        let chunks = self.regions.get(&pos).cloned().unwrap_or_default();
        if chunks.is_empty() {
            let path = dir.join(&file);
            return match fs.remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(op("remove", &path, e)),
                _ => fs.sync_dir(dir).map_err(|e| op("fsync", dir, e)),
            };
        }
        let bytes = region::encode(&Region {
            pos,
            stamp: self.stamp,
            chunks,
        });
        write_atomic_with(fs, dir, &file, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn stamp() -> Stamp {
        Stamp {
            generator: 3,
            seed: 42,
            cells: 16,
            chunk_size: 32.0,
        }
    }

    fn diff(cell: u32, height: u16) -> Diff {
        Diff {
            cells: [(cell, (height, 1))].into(),
        }
    }

    /// The region of chunks (0, 0)..(31, 31).
    const R: RegionPos = RegionPos { x: 0, z: 0 };

    /// What `dir` stores for region `R`, checked sound: chunk → diff.
    fn stored(dir: &Path) -> BTreeMap<ChunkPos, Diff> {
        let bytes = std::fs::read(dir.join(R.file_name())).unwrap();
        let d = region::decode(&bytes, R);
        assert_eq!(d.damage, vec![], "the region file is damaged");
        d.chunks.into_iter().map(|(c, (_, d))| (c, d)).collect()
    }

    fn image(height: u16) -> Vec<(ChunkPos, Option<Diff>)> {
        vec![
            (ChunkPos::new(1, 2), Some(diff(5, height))),
            (ChunkPos::new(3, 4), Some(diff(6, height))),
        ]
    }

    fn as_map(changes: &[(ChunkPos, Option<Diff>)]) -> BTreeMap<ChunkPos, Diff> {
        changes
            .iter()
            .filter_map(|(c, d)| Some((*c, d.clone()?)))
            .collect()
    }

    /// One operation of [`Fs`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Op {
        CreateDir,
        Write,
        Fsync,
        Rename,
        SyncDir,
        Remove,
    }

    /// The real file system, except that `fail` fails (a write writes half its bytes first,
    /// as a full disk does), and `write` can be made slow.
    #[derive(Default)]
    struct FaultyFs {
        fail: Mutex<Option<Op>>,
        slow_write: Mutex<Option<std::time::Duration>>,
        /// Renames done.
        renames: Mutex<usize>,
    }

    impl FaultyFs {
        fn set(&self, op: Option<Op>) {
            *self.fail.lock().unwrap() = op;
        }

        fn check(&self, op: Op) -> std::io::Result<()> {
            match *self.fail.lock().unwrap() == Some(op) {
                true => Err(std::io::Error::other(format!("injected {op:?} failure"))),
                false => Ok(()),
            }
        }
    }

    impl Fs for FaultyFs {
        fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
            self.check(Op::CreateDir)?;
            RealFs.create_dir_all(dir)
        }
        fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
            if let Some(d) = *self.slow_write.lock().unwrap() {
                std::thread::sleep(d);
            }
            if self.check(Op::Write).is_err() {
                RealFs.write(path, &bytes[..bytes.len() / 2])?;
                return self.check(Op::Write);
            }
            RealFs.write(path, bytes)
        }
        fn fsync(&self, path: &Path) -> std::io::Result<()> {
            self.check(Op::Fsync)?;
            RealFs.fsync(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            self.check(Op::Rename)?;
            RealFs.rename(from, to)?;
            *self.renames.lock().unwrap() += 1;
            Ok(())
        }
        fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
            self.check(Op::SyncDir)?;
            RealFs.sync_dir(dir)
        }
        fn remove_file(&self, path: &Path) -> std::io::Result<()> {
            self.check(Op::Remove)?;
            RealFs.remove_file(path)
        }
    }

    fn start(dir: &Path, fs: &Arc<FaultyFs>) -> Store {
        let fs: Arc<dyn Fs> = fs.clone();
        let (store, damage) = Store::start_with(Some(dir.to_owned()), stamp(), fs).unwrap();
        assert_eq!(damage, vec![]);
        store
    }

    fn names(dir: &Path) -> BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn each_failed_write_step_damages_nothing_is_reported_and_is_retried_until_it_succeeds() {
        for op in [
            Op::Write,
            Op::Fsync,
            Op::Rename,
            Op::SyncDir,
            Op::Remove,
            Op::CreateDir,
        ] {
            let dir = tempfile::tempdir().unwrap();
            let fs = Arc::new(FaultyFs::default());
            let store = start(dir.path(), &fs);
            store.flush(image(1)).unwrap();
            assert_eq!(stored(dir.path()), as_map(&image(1)));

            fs.set(Some(op));
            let err = store.flush(image(2)).unwrap_err();
            let StoreError::Unsaved { failures, .. } = &err else {
                panic!("{op:?}: {err:?}");
            };
            assert_eq!(failures.len(), 1, "{op:?}");
            assert_eq!((failures[0].region, failures[0].chunks), (R, 2), "{op:?}");
            assert_eq!(failures[0].file, "r.0.0.wsr");
            assert!(
                failures[0]
                    .message
                    .contains(&format!("injected {op:?} failure")),
                "{op:?}: {}",
                failures[0].message
            );
            let text = err.to_string();
            let path = dir.path().join("r.0.0.wsr");
            assert!(
                text.contains("2 modified chunks not written")
                    && text.contains(&format!("{} (2 chunks: ", path.display())),
                "{op:?}: {text}"
            );
            // Nothing on disk is damaged: the old image (or, when only the directory's fsync
            // failed, the new one: the rename was done, its durability is not known).
            let want = if op == Op::SyncDir { 2 } else { 1 };
            assert_eq!(stored(dir.path()), as_map(&image(want)), "{op:?}");
            // Kept in memory: served to readers, and reported again while it fails.
            assert_eq!(store.read(ChunkPos::new(1, 2)), Some(diff(5, 2)), "{op:?}");
            assert!(store.flush(vec![]).is_err(), "{op:?}");

            fs.set(None);
            store.flush(vec![]).unwrap();
            assert_eq!(stored(dir.path()), as_map(&image(2)), "{op:?}");
            assert_eq!(
                names(dir.path()),
                ["r.0.0.wsr", LOCK_FILE].map(String::from).into(),
                "{op:?}: debris"
            );
            store.flush(vec![]).unwrap();
        }
    }

    #[test]
    fn a_failed_copy_aside_keeps_the_damaged_file_and_is_retried() {
        for op in [Op::Write, Op::Fsync, Op::Rename, Op::SyncDir] {
            let dir = tempfile::tempdir().unwrap();
            let bad = b"WSRG not a region file".to_vec();
            std::fs::write(dir.path().join("r.0.0.wsr"), &bad).unwrap();
            let fs = Arc::new(FaultyFs::default());
            let dyn_fs: Arc<dyn Fs> = fs.clone();
            let (store, damage) =
                Store::start_with(Some(dir.path().to_owned()), stamp(), dyn_fs).unwrap();
            assert_eq!(damage.len(), 1);
            fs.set(Some(op));
            assert!(store.flush(image(1)).is_err(), "{op:?}");
            // The damaged file is still there, byte for byte (copied aside or not yet).
            assert_eq!(std::fs::read(dir.path().join("r.0.0.wsr")).unwrap(), bad);
            fs.set(None);
            store.flush(vec![]).unwrap();
            assert_eq!(
                std::fs::read(dir.path().join("r.0.0.wsr.damaged")).unwrap(),
                bad,
                "{op:?}"
            );
            assert_eq!(stored(dir.path()), as_map(&image(1)), "{op:?}");
        }
    }

    #[test]
    fn the_store_answers_reads_from_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        store.write(image(7));
        assert_eq!(store.read(ChunkPos::new(3, 4)), Some(diff(6, 7)));
        assert_eq!(
            store.reader().unwrap().read(ChunkPos::new(1, 2)),
            Some(diff(5, 7))
        );
        assert_eq!(store.read(ChunkPos::new(1, 3)), None);
        drop(store);
        // And what it opened.
        let store = start(dir.path(), &fs);
        assert_eq!(store.read(ChunkPos::new(1, 2)), Some(diff(5, 7)));
    }

    #[test]
    fn dropping_the_store_writes_everything_sent_to_it_first() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        // A slow disk: the write is still under way when the store is dropped.
        *fs.slow_write.lock().unwrap() = Some(std::time::Duration::from_millis(300));
        store.write(image(3));
        drop(store);
        assert_eq!(*fs.renames.lock().unwrap(), 1);
        assert_eq!(stored(dir.path()), as_map(&image(3)));
    }

    #[test]
    fn a_region_of_other_terrain_is_refused_whichever_part_of_the_stamp_differs() {
        let others = [
            Stamp {
                generator: 4,
                ..stamp()
            },
            Stamp {
                seed: 43,
                ..stamp()
            },
            Stamp {
                cells: 17,
                ..stamp()
            },
            Stamp {
                chunk_size: 64.0,
                ..stamp()
            },
        ];
        for other in others {
            let dir = tempfile::tempdir().unwrap();
            let mut chunks = BTreeMap::new();
            chunks.insert(ChunkPos::new(1, 1), diff(1, 1));
            let bytes = region::encode(&Region {
                pos: R,
                stamp: other,
                chunks,
            });
            std::fs::write(dir.path().join("r.0.0.wsr"), bytes).unwrap();
            let err = open_dir(dir.path(), stamp()).unwrap_err();
            assert!(
                matches!(&err, StoreError::Stamp { found, .. } if found.same(&other)),
                "{other:?}: {err:?}"
            );
            assert!(open_dir(dir.path(), other).is_ok());
        }
    }

    /// Copy-aside of `r.0.0.wsr` holding `bytes`, with `setup` run first; returns the name.
    fn aside(bytes: &[u8], setup: impl FnOnce(&Path)) -> (tempfile::TempDir, Option<String>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.0.0.wsr"), bytes).unwrap();
        setup(dir.path());
        let name = copy_aside(dir.path(), "r.0.0.wsr").unwrap();
        (dir, name)
    }

    #[test]
    fn copy_aside_takes_the_first_free_name_and_reuses_one_holding_the_same_bytes() {
        let read = |d: &Path, n: &str| std::fs::read(d.join(n)).unwrap();
        // A free `.damaged`.
        let (d, name) = aside(b"bad", |_| {});
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged"));
        assert_eq!(read(d.path(), "r.0.0.wsr.damaged"), b"bad");
        assert_eq!(read(d.path(), "r.0.0.wsr"), b"bad", "the original stays");
        // `.damaged` holds these bytes already (an earlier copy): nothing new.
        let (d, name) = aside(b"bad", |d| {
            std::fs::write(d.join("r.0.0.wsr.damaged"), b"bad").unwrap()
        });
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged"));
        assert!(!d.path().join("r.0.0.wsr.damaged.1").exists());
        // `.damaged` holds other bytes: `.damaged.1`, the other copy untouched.
        let (d, name) = aside(b"bad", |d| {
            std::fs::write(d.join("r.0.0.wsr.damaged"), b"old").unwrap()
        });
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged.1"));
        assert_eq!(read(d.path(), "r.0.0.wsr.damaged"), b"old");
        assert_eq!(read(d.path(), "r.0.0.wsr.damaged.1"), b"bad");
        // … and `.damaged.1` too: `.damaged.2`; `.damaged.1` holding the bytes is reused.
        let (d, name) = aside(b"bad", |d| {
            std::fs::write(d.join("r.0.0.wsr.damaged"), b"old").unwrap();
            std::fs::write(d.join("r.0.0.wsr.damaged.1"), b"older").unwrap();
        });
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged.2"));
        assert_eq!(read(d.path(), "r.0.0.wsr.damaged.2"), b"bad");
        let (_d, name) = aside(b"bad", |d| {
            std::fs::write(d.join("r.0.0.wsr.damaged"), b"old").unwrap();
            std::fs::write(d.join("r.0.0.wsr.damaged.1"), b"bad").unwrap();
        });
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged.1"));
        // A longer file by that name is other bytes, not the same ones.
        let (_d, name) = aside(b"bad", |d| {
            std::fs::write(d.join("r.0.0.wsr.damaged"), b"badder").unwrap()
        });
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged.1"));
        // Nothing to keep: no file.
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(copy_aside(dir.path(), "r.0.0.wsr").unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn copy_aside_never_reads_through_a_link_nor_replaces_a_squatter() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, b"outside bytes").unwrap();
        // A directory squatting `.damaged`: skipped, kept.
        let (d, name) = aside(b"bad", |d| {
            std::fs::create_dir(d.join("r.0.0.wsr.damaged")).unwrap()
        });
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged.1"));
        assert!(d.path().join("r.0.0.wsr.damaged").is_dir());
        assert_eq!(
            std::fs::read(d.path().join("r.0.0.wsr.damaged.1")).unwrap(),
            b"bad"
        );
        // A link squatting `.damaged`, even to the same bytes: never read, never replaced.
        std::fs::write(&secret, b"bad").unwrap();
        let (d, name) = aside(b"bad", |d| {
            symlink(&secret, d.join("r.0.0.wsr.damaged")).unwrap()
        });
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged.1"));
        assert!(d.path().join("r.0.0.wsr.damaged").is_symlink());
        assert_eq!(std::fs::read(&secret).unwrap(), b"bad");
        std::fs::write(&secret, b"outside bytes").unwrap();
        // The region file itself a link out of the world: renamed aside as the link it is.
        let dir = tempfile::tempdir().unwrap();
        symlink(&secret, dir.path().join("r.0.0.wsr")).unwrap();
        let name = copy_aside(dir.path(), "r.0.0.wsr").unwrap();
        assert_eq!(name.as_deref(), Some("r.0.0.wsr.damaged"));
        let kept = dir.path().join("r.0.0.wsr.damaged");
        assert!(kept.is_symlink());
        assert!(!dir.path().join("r.0.0.wsr").exists());
        assert_eq!(std::fs::read(&secret).unwrap(), b"outside bytes");
        // No regular file of the world holds the outside bytes.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            assert!(!std::fs::symlink_metadata(&p).unwrap().is_file(), "{p:?}");
        }
    }

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {path:?}");
    }

    #[cfg(unix)]
    #[test]
    fn region_names_that_are_not_regular_files_are_damage_never_read() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("f"), b"outside").unwrap();
        symlink(outside.path().join("f"), dir.path().join("r.0.0.wsr")).unwrap();
        symlink("/dev/zero", dir.path().join("r.1.0.wsr")).unwrap();
        mkfifo(&dir.path().join("r.2.0.wsr"));
        std::fs::create_dir(dir.path().join("r.3.0.wsr")).unwrap();
        let reports = read_dir(dir.path()).unwrap();
        let kinds: Vec<(String, Vec<Damage>)> = reports
            .into_iter()
            .map(|r| (r.file, r.decoded.damage))
            .collect();
        let not_read = |kind: &str| {
            vec![Damage::Header(format!(
                "{kind}, not a regular file: not read (a region file is never followed or \
                 opened unless it is a regular file)"
            ))]
        };
        assert_eq!(
            kinds,
            vec![
                ("r.0.0.wsr".into(), not_read("a symbolic link")),
                ("r.1.0.wsr".into(), not_read("a symbolic link")),
                ("r.2.0.wsr".into(), not_read("a FIFO")),
                ("r.3.0.wsr".into(), not_read("a directory")),
            ]
        );
        // A game opens it (every one is damage: kept aside, never read) and writes over them.
        let fs = Arc::new(FaultyFs::default());
        let dyn_fs: Arc<dyn Fs> = fs.clone();
        let (store, damage) =
            Store::start_with(Some(dir.path().to_owned()), stamp(), dyn_fs).unwrap();
        assert_eq!(damage.len(), 4);
        let changes = (0..4)
            .map(|x| (ChunkPos::new(32 * x, 0), Some(diff(1, 1))))
            .collect();
        store.flush(changes).unwrap();
        for x in 0..4 {
            let pos = RegionPos { x, z: 0 };
            let file = dir.path().join(pos.file_name());
            assert!(std::fs::symlink_metadata(&file).unwrap().is_file());
            assert!(std::fs::symlink_metadata(
                dir.path().join(format!("{}.damaged", pos.file_name()))
            )
            .is_ok());
        }
        assert_eq!(std::fs::read(outside.path().join("f")).unwrap(), b"outside");
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

    #[test]
    fn edits_reverted_before_their_region_was_ever_written_leave_no_file_and_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        fs.set(Some(Op::Write));
        assert!(store.flush(image(1)).is_err());
        fs.set(None);
        let reverted = image(1).into_iter().map(|(c, _)| (c, None)).collect();
        store.flush(reverted).unwrap();
        assert_eq!(names(dir.path()), [LOCK_FILE.to_owned()].into());
        assert_eq!(store.read(ChunkPos::new(1, 2)), None);
    }

    #[test]
    fn a_failed_removal_of_an_emptied_region_is_reported_and_retried() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        store.flush(image(1)).unwrap();
        fs.set(Some(Op::Remove));
        let reverted: Vec<_> = image(1).into_iter().map(|(c, _)| (c, None)).collect();
        assert!(store.flush(reverted).is_err());
        assert_eq!(
            stored(dir.path()),
            as_map(&image(1)),
            "the old file stays whole"
        );
        fs.set(None);
        store.flush(vec![]).unwrap();
        assert_eq!(names(dir.path()), [LOCK_FILE.to_owned()].into());
    }

    #[test]
    fn the_first_write_sweeps_every_stale_temporary_file_of_a_region_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "r.9.9.wsr.tmp",
            "r.0.0.wsr.damaged.1.tmp",
            "notes.tmp",
            "r.x.wsr.tmp",
        ] {
            std::fs::write(dir.path().join(f), b"left").unwrap();
        }
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        assert_eq!(names(dir.path()).len(), 5, "opening removes nothing");
        store.flush(image(1)).unwrap();
        assert_eq!(
            names(dir.path()),
            ["notes.tmp", "r.0.0.wsr", "r.x.wsr.tmp", LOCK_FILE]
                .map(String::from)
                .into()
        );
        assert_eq!(format!("{store:?}"), "Store { .. }");
    }

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

    #[test]
    fn one_store_owns_a_directory_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let world = dir.path().join("world");
        let (first, _) = Store::start(Some(world.clone()), stamp()).unwrap();
        first.flush(image(1)).unwrap();
        let err = Store::start(Some(world.clone()), stamp()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "world directory {} is in use by another game (lock file {} held)",
                world.display(),
                world.join("session.lock").display()
            )
        );
        // Reading needs no lock, and a store without a directory none.
        assert_eq!(read_dir(&world).unwrap().len(), 1);
        assert!(Store::start(None, stamp()).is_ok());
        drop(first);
        let (third, _) = Store::start(Some(world.clone()), stamp()).unwrap();
        assert_eq!(third.read(ChunkPos::new(1, 2)), Some(diff(5, 1)));
        // The lock file says who holds it, for a person looking.
        let text = std::fs::read_to_string(world.join(LOCK_FILE)).unwrap();
        assert_eq!(text, format!("{}\n", std::process::id()));
    }

    #[test]
    fn reading_a_directory_creates_no_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(
            dir.path(),
            "r.0.0.wsr",
            &region::encode(&Region {
                pos: R,
                stamp: stamp(),
                chunks: as_map(&image(1)),
            }),
        )
        .unwrap();
        assert_eq!(read_dir(dir.path()).unwrap().len(), 1);
        assert_eq!(
            open_dir(dir.path(), stamp()).unwrap().chunks,
            as_map(&image(1))
        );
        assert_eq!(names(dir.path()), ["r.0.0.wsr".to_owned()].into());
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
