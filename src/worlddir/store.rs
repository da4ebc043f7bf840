//! The save thread of one kind of region file (SPEC §13), moved here from `world.terrain`'s
//! `store.rs` and made generic over the [`frame::Kind`]: one thread owns every region file of
//! that kind in the world directory, and one game owns the directory (an advisory lock on
//! `session.lock`, held as long as any of the game's [`Store`]s lives: the kits of one game share
//! it, another game is refused). The tick sends it the chunks to write back, workers ask it for
//! a chunk's stored record; both by message, so no region file needs a lock. It reads every
//! region file once, when it opens the directory (checking stamps and checksums), and serves
//! reads from memory thereafter. A write rewrites each region it touches whole and atomically: a
//! temporary file, fsync, rename over the region file, fsync of the directory; a region file
//! found damaged is first kept aside (copied byte for byte, or, when it is not a regular file,
//! renamed aside unread). A write that fails keeps the chunks in memory and is tried again with
//! every later write; the failure is reported until a write succeeds. A kind whose files must
//! change together ([`StoreKind::JOURNAL`]) writes a journal first when a write touches several.
//!
//! Region files are read only when they are regular files, never through a symbolic link, never
//! blocking on a FIFO, and never past their size cap. Every write goes through [`Fs`], the
//! file-system seam tests replace with one that fails.
//!
//! Without a directory the thread keeps the records in memory only (the game save carries them).
//!
//! The tick also keeps an index of the chunks that have a record ([`Index`]), changed before each
//! write or replacement is sent: a worker asks the thread only for a chunk the index holds, so a
//! world with few edits costs the workers no message for the chunks without one (a LOD block
//! samples up to 4096 chunks).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use rustc_hash::FxHashSet;

use super::frame::{self, Damage, Kind, Region, RegionPos};
use crate::grid::ChunkPos;

/// The lock file of a world directory: whoever holds its advisory lock owns the directory.
pub const LOCK_FILE: &str = "session.lock";

/// How many `.damaged.N` names copy-aside tries before it gives up (and the write fails).
pub const MAX_ASIDE_NAMES: u32 = 1000;

/// Why a world directory cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError<S> {
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
        "world directory {dir}: {file} was written by {found}; this game has {expected}: {hint}"
    )]
    Stamp {
        /// The directory.
        dir: PathBuf,
        /// The region file.
        file: String,
        /// Its stamp.
        found: S,
        /// The game's.
        expected: S,
        /// What to do about it.
        hint: &'static str,
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
    #[error("the {0} save thread stopped")]
    Stopped(&'static str),
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

/// Reads `path` if it is a regular file, never following a link or blocking on a FIFO: one whose
/// size (as the opened file reports it) is past `cap` is [`Capped::TooLarge`] without a read;
/// any other is read through the cap, never more than `cap + 1` bytes (a file that grows while
/// it is read is still stopped there).
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
    let meta = file.metadata()?;
    if let Some(kind) = kind_of(meta.file_type()) {
        return Ok(Capped::NotRegular(kind));
    }
    // A regular file that says it is past the cap is refused unread (a sparse file of 2 GiB
    // costs no disk, and reading it up to the cap would cost a gigabyte of memory each time).
    if meta.len() > cap {
        return Ok(Capped::TooLarge);
    }
    // One that says it is within is read through the cap all the same: it may grow meanwhile.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Ok(Capped::TooLarge);
    }
    Ok(Capped::Bytes(bytes))
}

/// What the save thread needs of a kind of region file beyond its framing: who it belongs to
/// (for messages and the thread's name), what damage falls back to, and whether its writes
/// that touch several files go through a journal.
pub trait StoreKind: Kind {
    /// The kit, for messages and the save thread's name (`world.terrain`).
    const KIT: &'static str;
    /// What a chunk whose record is damaged loads as ("the chunk loads as generated").
    const FALLBACK: &'static str;
    /// What to do about a region file of another stamp.
    const STAMP_HINT: &'static str;
    /// The journal's file name, for a kind whose files must change together: a write that
    /// rewrites several region files first writes every new image into the journal
    /// (atomically), then the files, then removes the journal; opening a directory with a
    /// journal takes the journal's images (a write killed midway is finished, never half
    /// done). `None`: each region file stands alone.
    const JOURNAL: Option<&'static str>;
    /// Whether a region file found damaged is rewritten (after it is kept aside) by the first
    /// write, whatever it changes: for a kind whose fallback must reach the directory at once
    /// (`false`: when one of its chunks is next written).
    const REWRITE_DAMAGED: bool;
}

/// The cap of a file copied aside (the largest region file any kind reads).
const ASIDE_CAP: u64 = 1 << 30;

/// One region file as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionReport<K: Kind> {
    /// The region.
    pub pos: RegionPos,
    /// Its file name.
    pub file: String,
    /// Its size in bytes (of the link itself for a link, as the file system reports it).
    pub len: u64,
    /// What it holds and what is damaged.
    pub decoded: frame::Decoded<K>,
}

/// Damage found when opening a directory, for the kit's error event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The chunk the event names (the record's, or the region's origin for a bad header).
    pub chunk: ChunkPos,
    /// What is wrong and what was done.
    pub message: String,
}

/// The journal as found when a directory was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JournalState {
    /// None.
    #[default]
    Absent,
    /// A sound journal: its images were taken, and it is removed once they are written.
    Pending,
    /// A damaged one: ignored, kept aside before it is replaced.
    Damaged,
}

/// What opening a directory gives: every sound record, and what was damaged.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened<K: Kind> {
    /// The stored records.
    pub chunks: BTreeMap<ChunkPos, K::Data>,
    /// The damage, region by region (row order of regions), in file order.
    pub damage: Vec<Reported>,
    /// The regions whose file is damaged: copied aside before they are rewritten.
    pub damaged: BTreeSet<RegionPos>,
    /// The regions whose image was taken from the journal: rewritten by the first write.
    pub replay: BTreeSet<RegionPos>,
    /// The journal found.
    pub journal: JournalState,
}

impl<K: Kind> Default for Opened<K> {
    fn default() -> Self {
        Opened {
            chunks: BTreeMap::new(),
            damage: Vec::new(),
            damaged: BTreeSet::new(),
            replay: BTreeSet::new(),
            journal: JournalState::Absent,
        }
    }
}

fn header_damage<K: Kind>(message: String) -> frame::Decoded<K> {
    frame::Decoded {
        stamp: None,
        chunks: BTreeMap::new(),
        entries: Vec::new(),
        damage: vec![Damage::Header(message)],
    }
}

/// Reads every region file of kind `K` in `dir` (files named `<prefix>.<x>.<z>.<extension>`;
/// others are ignored), in region order. Reading is all it does: no lock is taken, nothing is
/// created. A region name that is not a regular file (a symbolic link, a FIFO, a directory) is
/// not read: it is a damaged region.
pub fn read_dir<K: Kind>(dir: &Path) -> Result<Vec<RegionReport<K>>, StoreError<K::Stamp>> {
    let io = |e: std::io::Error| StoreError::Io {
        dir: dir.to_owned(),
        message: e.to_string(),
    };
    let mut regions = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pos) = RegionPos::parse_file_name_of::<K>(&name) {
            regions.insert(pos, name);
        }
    }
    let mut out = Vec::with_capacity(regions.len());
    for (pos, file) in regions {
        let path = dir.join(&file);
        let len = std::fs::symlink_metadata(&path).map_err(io)?.len();
        let decoded = match read_capped(&path, K::MAX_FILE_LEN).map_err(io)? {
            Capped::Bytes(bytes) => frame::decode::<K>(&bytes, pos),
            Capped::TooLarge => header_damage(format!(
                "{len} bytes: larger than any region file ({} bytes at most)",
                K::MAX_FILE_LEN
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

/// Magic of a journal.
pub const JOURNAL_MAGIC: [u8; 4] = *b"WSJN";
/// The journal format version this build writes and reads.
pub const JOURNAL_VERSION: u16 = 1;

/// Encodes a journal: magic, version u16, flags u16 (0), the entry count u32, then each entry
/// (its file name's length u16 and UTF-8 bytes, its image's length u32 and bytes; an empty
/// image: the file is removed), then the CRC-32 of everything before it. Little-endian.
pub fn encode_journal(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&JOURNAL_MAGIC);
    out.extend_from_slice(&JOURNAL_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for (name, image) in entries {
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(image.len() as u32).to_le_bytes());
        out.extend_from_slice(image);
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes a journal: its entries, every length checked against the file.
pub fn decode_journal(b: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    if b.len() < 16 {
        return Err(format!("{} bytes, a journal has at least 16", b.len()));
    }
    let body = &b[..b.len() - 4];
    let crc = u32::from_le_bytes(b[b.len() - 4..].try_into().expect("4 bytes"));
    let actual = crc32fast::hash(body);
    if crc != actual {
        return Err(format!(
            "CRC-32 mismatch: stored {crc:08x}, journal is {actual:08x}"
        ));
    }
    if body[..4] != JOURNAL_MAGIC {
        return Err(format!("expected magic WSJN, got {:02x?}", &body[..4]));
    }
    let version = u16::from_le_bytes([body[4], body[5]]);
    if version != JOURNAL_VERSION {
        return Err(format!(
            "journal version {version}, this build reads {JOURNAL_VERSION}"
        ));
    }
    if body[6..8] != [0, 0] {
        return Err("unknown journal flags".into());
    }
    let count = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
    let mut at = 12usize;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let end = at
            .checked_add(n)
            .filter(|&e| e <= body.len())
            .ok_or_else(|| format!("entry past the end of the journal at byte {at}"))?;
        let out = &body[at..end];
        at = end;
        Ok(out)
    };
    let mut out = Vec::new();
    for _ in 0..count {
        let n = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
        let name = String::from_utf8(take(n)?.to_vec()).map_err(|e| format!("a name: {e}"))?;
        let len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        let image = take(len)?.to_vec();
        out.push((name, image));
    }
    if at != body.len() {
        return Err(format!("{} bytes after the last entry", body.len() - at));
    }
    Ok(out)
}

/// Opens `dir` for a game whose records have `stamp`, reading only: reads every region (a
/// journal's images over the files'), refuses one of another stamp, lists the damage. A
/// directory that does not exist is an empty world.
pub fn open_dir<K: StoreKind>(
    dir: &Path,
    stamp: K::Stamp,
) -> Result<Opened<K>, StoreError<K::Stamp>> {
    if !dir.exists() {
        return Ok(Opened::default());
    }
    let mut opened = Opened::default();
    let mut reports = read_dir::<K>(dir)?;
    if let Some(name) = K::JOURNAL {
        let path = dir.join(name);
        let found = match read_capped(&path, ASIDE_CAP) {
            Ok(c) => Some(c),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(StoreError::Io {
                    dir: dir.to_owned(),
                    message: format!("cannot read {name}: {e}"),
                })
            }
        };
        let journal = found.map(|c| match c {
            Capped::Bytes(b) => decode_journal(&b),
            Capped::TooLarge => Err("larger than any journal".into()),
            Capped::NotRegular(kind) => Err(format!("{kind}, not a regular file: not read")),
        });
        match journal {
            None => {}
            Some(Err(message)) => {
                opened.journal = JournalState::Damaged;
                opened.damage.push(Reported {
                    chunk: ChunkPos::new(0, 0),
                    message: format!(
                        "{name}: {message}; ignored: the region files are as the last complete \
                         write left them (the journal is kept aside as {} before it is \
                         replaced)",
                        aside_name(dir, name)
                    ),
                });
            }
            Some(Ok(entries)) => {
                opened.journal = JournalState::Pending;
                for (file, image) in entries {
                    let Some(pos) = RegionPos::parse_file_name_of::<K>(&file) else {
                        continue;
                    };
                    let decoded = if image.is_empty() {
                        frame::Decoded {
                            stamp: Some(stamp),
                            chunks: BTreeMap::new(),
                            entries: Vec::new(),
                            damage: Vec::new(),
                        }
                    } else {
                        frame::decode::<K>(&image, pos)
                    };
                    opened.replay.insert(pos);
                    match reports.iter_mut().find(|r| r.pos == pos) {
                        Some(r) => {
                            // A damaged file the journal replaces is still kept aside.
                            if !r.decoded.damage.is_empty() {
                                opened.damaged.insert(pos);
                            }
                            r.decoded = decoded;
                        }
                        None => reports.push(RegionReport {
                            pos,
                            len: image.len() as u64,
                            file,
                            decoded,
                        }),
                    }
                }
                reports.sort_by_key(|r| r.pos);
            }
        }
    }
    for report in reports {
        let stamps = report
            .decoded
            .stamp
            .iter()
            .chain(report.decoded.chunks.values().map(|(s, _)| s));
        for found in stamps {
            if !K::same(found, &stamp) {
                return Err(StoreError::Stamp {
                    dir: dir.to_owned(),
                    file: report.file,
                    found: *found,
                    expected: stamp,
                    hint: K::STAMP_HINT,
                });
            }
        }
        if !report.decoded.damage.is_empty() {
            opened.damaged.insert(report.pos);
            let aside = aside_name(dir, &report.file);
            for d in &report.decoded.damage {
                // A bad header's file was scanned: the records found are kept, and only a
                // chunk whose record was not found falls back.
                let fallback = match d {
                    frame::Damage::Header(_) => format!(
                        "the records found by scanning are kept; for any other chunk of the \
                         region, {}",
                        K::FALLBACK
                    ),
                    frame::Damage::Record { .. } => K::FALLBACK.to_owned(),
                };
                opened.damage.push(Reported {
                    chunk: d.chunk(report.pos),
                    message: format!(
                        "{}: {d}; {fallback} (the file is kept aside as {aside} before it is \
                         rewritten)",
                        report.file,
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

pub(crate) fn copy_aside_with(
    fs: &dyn Fs,
    dir: &Path,
    file: &str,
) -> std::io::Result<Option<String>> {
    let src = dir.join(file);
    let bytes = match read_capped(&src, ASIDE_CAP) {
        Ok(Capped::Bytes(b)) => Some(b),
        Ok(Capped::TooLarge | Capped::NotRegular(_)) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let (name, kept) = pick_aside(dir, file, bytes.as_deref())?;
    if !kept {
        match &bytes {
            Some(b) => write_atomic_with(fs, dir, &name, b)?,
            None => {
                let path = dir.join(&name);
                fs.rename(&src, &path).map_err(|e| op("rename", &src, e))?;
                fs.sync_dir(dir).map_err(|e| op("fsync", dir, e))?;
            }
        }
    }
    Ok(Some(name))
}

/// The name [`copy_aside`] keeps `dir/file` aside under, as the directory is now (the first
/// free of `file.damaged`, `.damaged.1`, …, or the one already holding the same bytes), for
/// the damage message told when the directory is opened; what went wrong, if no name is free.
pub fn aside_name(dir: &Path, file: &str) -> String {
    let bytes = match read_capped(&dir.join(file), ASIDE_CAP) {
        Ok(Capped::Bytes(b)) => Some(b),
        _ => None,
    };
    match pick_aside(dir, file, bytes.as_deref()) {
        Ok((name, _)) => name,
        Err(e) => format!("{file}.damaged ({e})"),
    }
}

/// The name to keep `file` (holding `bytes`, `None`: not to be read) aside under, and whether a
/// copy of those bytes is kept there already (an earlier copy whose rewrite failed).
fn pick_aside(dir: &Path, file: &str, bytes: Option<&[u8]>) -> std::io::Result<(String, bool)> {
    for n in 0..MAX_ASIDE_NAMES {
        let name = match n {
            0 => format!("{file}.damaged"),
            n => format!("{file}.damaged.{n}"),
        };
        let path = dir.join(&name);
        let taken = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((name, false)),
            Err(e) => return Err(e),
        };
        // Kept already: the same bytes, a regular file.
        if let (Some(b), true) = (bytes, taken.file_type().is_file()) {
            if read_capped(&path, b.len() as u64)? == Capped::Bytes(b.to_vec()) {
                return Ok((name, true));
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

/// Removes the temporary files (`r.x.z.wsr.tmp`, `r.x.z.wsr.damaged….tmp`, and the kind's
/// journal's) a write killed midway left in `dir`; they are never read.
fn remove_stale_temporaries<K: StoreKind>(fs: &dyn Fs, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let extension = format!(".{}", K::EXTENSION);
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".tmp") else {
            continue;
        };
        let journal =
            K::JOURNAL.is_some_and(|j| stem == j || stem.starts_with(&format!("{j}.damaged")));
        let region = stem
            .split_once(extension.as_str())
            .map(|(r, _)| format!("{r}{extension}"));
        if journal
            || region
                .as_deref()
                .and_then(RegionPos::parse_file_name_of::<K>)
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

pub(crate) fn write_atomic_with(
    fs: &dyn Fs,
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
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

/// The directories this process holds, by the directory's device and inode: which game holds
/// each (one owner per directory in the process: two games here, through the C ABI say, never
/// share one; the kits of one game do), how many of its stores, and the lock file's descriptor.
static HELD: std::sync::Mutex<BTreeMap<(u64, u64), Held>> = std::sync::Mutex::new(BTreeMap::new());

/// One held directory.
#[derive(Debug)]
struct Held {
    /// The game holding it ([`GameToken`]); `None`: a store of no game, never shared.
    game: Option<u64>,
    /// Stores holding it.
    count: usize,
    /// The lock file, open (its record lock held) while any store holds the directory.
    _file: std::fs::File,
}

/// Who a game is, for the world directory's lock: the kits of one game (`world.terrain` and
/// `world.district` on the same `worldDir`) share the directory, any other game is refused.
/// The first kit to install registers one as the service [`GAME_TOKEN`].
#[derive(Debug)]
pub struct GameToken(u64);

/// The service name of a game's [`GameToken`].
pub const GAME_TOKEN: &str = "world.dir.token";

impl GameToken {
    /// A token no other game has.
    pub fn new() -> GameToken {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        GameToken(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl Default for GameToken {
    fn default() -> Self {
        GameToken::new()
    }
}

/// The lock on a world directory: this process's claim in [`HELD`] and a POSIX record lock
/// (`fcntl` `F_SETLK`, a write lock over the whole of `session.lock`) that the OS releases when
/// the process dies. A record lock belongs to the process, not to the open file, so a child
/// forked by another thread (spawning a program) never holds it, not even between its fork and
/// its exec: with `flock` such a child kept the directory locked after the game that owned it
/// was gone. The price of record locks, that closing *any* descriptor of the file in this
/// process releases them, is paid by never opening `session.lock` anywhere else (reading a
/// directory does not touch it), by checking [`HELD`] before opening it, and by one descriptor
/// per directory however many stores of one game hold it. Released when the last is dropped.
#[derive(Debug)]
struct Lock {
    key: (u64, u64),
}

impl Lock {
    /// Creates `dir` if needed and takes its lock (or shares it, for a store of the game that
    /// holds it), or says who holds it.
    fn take<S>(dir: &Path, game: Option<u64>) -> Result<Lock, StoreError<S>> {
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
        if let Some(h) = held.get_mut(&key) {
            if game.is_some() && h.game == game {
                h.count += 1;
                return Ok(Lock { key });
            }
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
        // For a person looking: which process holds it (never read back by the game).
        let _ = file
            .set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        held.insert(
            key,
            Held {
                game,
                count: 1,
                _file: file,
            },
        );
        Ok(Lock { key })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Under the registry's lock: the last store's drop closes the descriptor (which
        // releases the record lock) as it gives up the claim. Otherwise a take in between
        // would open and lock the file, and this close would then release that new owner's
        // lock (record locks are the process's).
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.get_mut(&self.key) {
            h.count -= 1;
            if h.count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// A message to the save thread.
enum Request<K: Kind> {
    /// A worker asks for a chunk's stored record.
    Read {
        chunk: ChunkPos,
        reply: Sender<Option<K::Data>>,
    },
    /// Write these chunks back (`None`: no longer stored), with every region an earlier write
    /// failed to write; `done` hears which regions are still not written.
    Write {
        changes: Vec<(ChunkPos, Option<K::Data>)>,
        done: Option<Sender<Result<(), StoreError<K::Stamp>>>>,
    },
    /// Every stored record.
    Snapshot {
        reply: Sender<BTreeMap<ChunkPos, K::Data>>,
    },
    /// Opens another directory (a loaded save's), reading only.
    Peek {
        dir: PathBuf,
        reply: Sender<Result<Opened<K>, StoreError<K::Stamp>>>,
    },
    /// From now on, serve `opened` and write to `dir` (a load was committed).
    Replace {
        dir: Option<PathBuf>,
        opened: Opened<K>,
    },
}

/// The chunks that have a stored record, kept by the tick and read by the workers: a chunk is
/// added before the write that stores it is sent, and removed before the one that removes it
/// (or the replacement that drops it) is sent. A worker's job is handed over after the writes
/// its tick sent, so the index it reads holds every record the job may need; one it does not
/// hold is absent from the thread too, or becomes so by a write sent after the job (a chunk
/// edited after a job was dispatched makes that job's result stale, and it is dispatched again).
#[derive(Debug, Default, Clone)]
struct Index(Arc<RwLock<FxHashSet<ChunkPos>>>);

impl Index {
    fn holds(&self, chunk: ChunkPos) -> bool {
        let set = self.0.read().unwrap_or_else(PoisonError::into_inner);
        !set.is_empty() && set.contains(&chunk)
    }

    fn change(&self, f: impl FnOnce(&mut FxHashSet<ChunkPos>)) {
        f(&mut self.0.write().unwrap_or_else(PoisonError::into_inner));
    }
}

/// What a worker holds to ask the save thread for records: the request queue and a reply
/// channel of its own (a clone gets a new one, so answers never cross between workers), and
/// the index of the chunks with a record.
pub struct Reader<K: Kind> {
    requests: Sender<Request<K>>,
    reply: ReplyPair<K>,
    index: Index,
}

/// A reader's own reply channel.
type ReplyPair<K> = (
    Sender<Option<<K as Kind>::Data>>,
    Receiver<Option<<K as Kind>::Data>>,
);

impl<K: Kind> Clone for Reader<K> {
    fn clone(&self) -> Self {
        Reader {
            requests: self.requests.clone(),
            reply: crossbeam_channel::bounded(1),
            index: self.index.clone(),
        }
    }
}

impl<K: Kind> Reader<K> {
    /// The stored record of `chunk`, if it has one (`None` also if the thread is gone). Only a
    /// chunk the index holds is asked of the thread.
    pub fn read(&self, chunk: ChunkPos) -> Option<K::Data> {
        if !self.index.holds(chunk) {
            return None;
        }
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
pub struct Outcome<K: StoreKind>(Receiver<Result<(), StoreError<K::Stamp>>>);

impl<K: StoreKind> Outcome<K> {
    /// Waits until the write is done: `Ok`, or every region still not written.
    pub fn wait(self) -> Result<(), StoreError<K::Stamp>> {
        self.0.recv().map_err(|_| StoreError::Stopped(K::KIT))?
    }
}

/// The tick's handle on the save thread. Dropping it ends the thread after it has written
/// everything sent to it (what it could not write is reported on stderr), then releases the
/// directory's lock.
pub struct Store<K: StoreKind> {
    requests: Option<Sender<Request<K>>>,
    thread: Option<JoinHandle<()>>,
    stamp: K::Stamp,
    index: Index,
    /// How many reads of a record the thread answered.
    reads: Arc<AtomicU64>,
    /// Dropped after the thread is joined (fields drop after [`Drop::drop`]).
    _lock: Option<Lock>,
}

impl<K: StoreKind> std::fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// What [`Store::start`] gives: the store and the damage found.
pub type Started<K> = (Store<K>, Vec<Reported>);

impl<K: StoreKind> Store<K> {
    /// Starts the save thread on `dir` (created if needed, its lock taken, then opened with
    /// [`open_dir`] on the thread) or, with no directory, in memory. Returns the damage found.
    pub fn start(
        dir: Option<PathBuf>,
        stamp: K::Stamp,
    ) -> Result<Started<K>, StoreError<K::Stamp>> {
        Self::start_with(dir, stamp, Arc::new(RealFs))
    }

    /// [`Store::start`], writing through `fs`.
    pub fn start_with(
        dir: Option<PathBuf>,
        stamp: K::Stamp,
        fs: Arc<dyn Fs>,
    ) -> Result<Started<K>, StoreError<K::Stamp>> {
        Self::start_for(dir, stamp, fs, None)
    }

    /// [`Store::start_with`] for the game `game`: a directory its other kits hold is shared,
    /// one another game holds is refused.
    pub fn start_for(
        dir: Option<PathBuf>,
        stamp: K::Stamp,
        fs: Arc<dyn Fs>,
        game: Option<&GameToken>,
    ) -> Result<Started<K>, StoreError<K::Stamp>> {
        let lock = dir
            .as_deref()
            .map(|d| Lock::take(d, game.map(|g| g.0)))
            .transpose()?;
        let (tx, rx) = crossbeam_channel::unbounded::<Request<K>>();
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let index = Index::default();
        let reads = Arc::new(AtomicU64::new(0));
        let (thread_index, thread_reads) = (index.clone(), reads.clone());
        let thread = std::thread::Builder::new()
            .name(format!("{} save", K::KIT))
            .spawn(move || {
                let opened = match &dir {
                    Some(d) => open_dir::<K>(d, stamp),
                    None => Ok(Opened::default()),
                };
                let opened = match opened {
                    Ok(o) => {
                        // Indexed before anyone may read (the store is handed out once ready).
                        thread_index.change(|set| set.extend(Self::stored(&o)));
                        let _ = ready_tx.send(Ok(o.damage.clone()));
                        o
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                Owner::new(dir, stamp, fs, opened).serve(&rx, &thread_reads);
            })
            .map_err(|e| StoreError::Io {
                dir: PathBuf::new(),
                message: format!("cannot start the save thread: {e}"),
            })?;
        let damage = ready_rx.recv().map_err(|_| StoreError::Stopped(K::KIT))?;
        let store = Store {
            requests: Some(tx),
            thread: Some(thread),
            stamp,
            index,
            reads,
            _lock: lock,
        };
        Ok((store, damage?))
    }

    /// The chunks `opened` holds a record of (the thread stores no empty one).
    fn stored(opened: &Opened<K>) -> impl Iterator<Item = ChunkPos> + '_ {
        opened
            .chunks
            .iter()
            .filter(|(_, d)| !K::is_empty(d))
            .map(|(c, _)| *c)
    }

    /// A reader for a worker.
    pub fn reader(&self) -> Option<Reader<K>> {
        Some(Reader {
            requests: self.requests.clone()?,
            reply: crossbeam_channel::bounded(1),
            index: self.index.clone(),
        })
    }

    /// How many reads of a record reached the thread (readers ask only for the chunks the
    /// index holds).
    pub fn reads_served(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Brings the index in step with `changes`, before they are sent.
    fn index_changes(&self, changes: &[(ChunkPos, Option<K::Data>)]) {
        if changes.is_empty() {
            return;
        }
        self.index.change(|set| {
            for (chunk, data) in changes {
                match data {
                    Some(d) if !K::is_empty(d) => set.insert(*chunk),
                    _ => set.remove(chunk),
                };
            }
        });
    }

    /// The stamp records are taken against.
    pub fn stamp(&self) -> K::Stamp {
        self.stamp
    }

    fn send(&self, request: Request<K>) -> Result<(), StoreError<K::Stamp>> {
        self.requests
            .as_ref()
            .ok_or(StoreError::Stopped(K::KIT))?
            .send(request)
            .map_err(|_| StoreError::Stopped(K::KIT))
    }

    fn ask<T>(
        &self,
        request: impl FnOnce(Sender<T>) -> Request<K>,
    ) -> Result<T, StoreError<K::Stamp>> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(request(tx))?;
        rx.recv().map_err(|_| StoreError::Stopped(K::KIT))
    }

    /// Queues a write back and returns at once.
    pub fn write(&self, changes: Vec<(ChunkPos, Option<K::Data>)>) {
        self.index_changes(&changes);
        // A failure here (the thread is gone) surfaces at the next `flush`.
        let _ = self.send(Request::Write {
            changes,
            done: None,
        });
    }

    /// Queues a write back and returns at once, with its outcome to wait for later.
    pub fn write_then(&self, changes: Vec<(ChunkPos, Option<K::Data>)>) -> Outcome<K> {
        self.index_changes(&changes);
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
    pub fn flush(
        &self,
        changes: Vec<(ChunkPos, Option<K::Data>)>,
    ) -> Result<(), StoreError<K::Stamp>> {
        self.write_then(changes).wait()
    }

    /// The stored record of one chunk, waiting for it (the tick's own fallback).
    pub fn read(&self, chunk: ChunkPos) -> Option<K::Data> {
        self.ask(|reply| Request::Read { chunk, reply })
            .ok()
            .flatten()
    }

    /// Every stored record (what a save without a world directory carries).
    pub fn snapshot(&self) -> Result<BTreeMap<ChunkPos, K::Data>, StoreError<K::Stamp>> {
        self.ask(|reply| Request::Snapshot { reply })
    }

    /// Opens another directory for a load, reading only.
    pub fn peek(&self, dir: PathBuf) -> Result<Opened<K>, StoreError<K::Stamp>> {
        self.ask(|reply| Request::Peek { dir, reply })?
    }

    /// Serves `opened` and writes to `dir` from now on (a load was committed). Requests sent
    /// before are answered first.
    pub fn replace(&self, dir: Option<PathBuf>, opened: Opened<K>) {
        self.index.change(|set| {
            set.clear();
            set.extend(Self::stored(&opened));
        });
        let _ = self.send(Request::Replace { dir, opened });
    }
}

impl<K: StoreKind> Drop for Store<K> {
    fn drop(&mut self) {
        // Workers hold senders too; the pool is dropped (and joined) before the store.
        self.requests = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The save thread's state.
struct Owner<K: StoreKind> {
    dir: Option<PathBuf>,
    stamp: K::Stamp,
    fs: Arc<dyn Fs>,
    regions: BTreeMap<RegionPos, BTreeMap<ChunkPos, K::Data>>,
    /// The chunks whose stored form is behind, by region: written by the next write that
    /// succeeds for their region (every write tries them all).
    behind: BTreeMap<RegionPos, BTreeSet<ChunkPos>>,
    /// Regions whose last write failed, with why.
    failing: BTreeMap<RegionPos, WriteFailure>,
    /// Regions whose file was found damaged and is not kept aside yet.
    damaged: BTreeSet<RegionPos>,
    /// The kind's journal on disk: none, one whose images are not all written yet, or a
    /// damaged one.
    journal: JournalState,
    /// Whether the temporary files a killed write left were removed (at the first write:
    /// opening changes nothing on disk).
    swept: bool,
}

impl<K: StoreKind> Owner<K> {
    fn new(dir: Option<PathBuf>, stamp: K::Stamp, fs: Arc<dyn Fs>, opened: Opened<K>) -> Self {
        let mut owner = Owner {
            dir,
            stamp,
            fs,
            regions: BTreeMap::new(),
            behind: BTreeMap::new(),
            failing: BTreeMap::new(),
            damaged: BTreeSet::new(),
            journal: JournalState::Absent,
            swept: false,
        };
        owner.fill(opened);
        owner
    }

    fn fill(&mut self, opened: Opened<K>) {
        self.regions.clear();
        self.behind.clear();
        self.failing.clear();
        self.damaged = opened.damaged;
        self.journal = opened.journal;
        for (c, d) in opened.chunks {
            self.regions
                .entry(RegionPos::of(c))
                .or_default()
                .insert(c, d);
        }
        // The journal's regions are rewritten by the first write (their files may be old).
        for pos in opened.replay {
            self.behind.entry(pos).or_default();
        }
        if K::REWRITE_DAMAGED {
            for pos in &self.damaged {
                self.behind.entry(*pos).or_default();
            }
        }
    }

    fn serve(mut self, requests: &Receiver<Request<K>>, reads: &AtomicU64) {
        while let Ok(request) = requests.recv() {
            match request {
                Request::Read { chunk, reply } => {
                    reads.fetch_add(1, Ordering::Relaxed);
                    let data = self
                        .regions
                        .get(&RegionPos::of(chunk))
                        .and_then(|r| r.get(&chunk))
                        .cloned();
                    let _ = reply.send(data);
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
                    let _ = reply.send(open_dir::<K>(&dir, self.stamp));
                }
                Request::Replace { dir, opened } => {
                    self.dir = dir;
                    self.fill(opened);
                }
            }
        }
    }

    /// `Ok`, or every region not written.
    fn outcome(&self) -> Result<(), StoreError<K::Stamp>> {
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
    fn write(&mut self, changes: Vec<(ChunkPos, Option<K::Data>)>) {
        for (chunk, data) in changes {
            let pos = RegionPos::of(chunk);
            let region = self.regions.entry(pos).or_default();
            let changed = match data {
                Some(d) if !K::is_empty(&d) => region.insert(chunk, d.clone()).as_ref() != Some(&d),
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
            remove_stale_temporaries::<K>(fs.as_ref(), &dir);
            self.swept = true;
        }
        // Several files that must change together (or a journal still on disk): the journal
        // first, holding every new image; it is the write's commit.
        let journal =
            K::JOURNAL.filter(|_| touched.len() > 1 || self.journal != JournalState::Absent);
        if let Some(name) = journal {
            if let Err(e) = self.write_journal(fs.as_ref(), &dir, name, &touched) {
                for pos in touched {
                    self.fail(pos, format!("cannot write the journal {name}: {e}"));
                }
                return;
            }
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
        if let Some(name) = journal {
            if self.behind.is_empty() {
                // Every image is in its file: the journal is done with. Should its removal
                // fail, it stays pending (opening it again gives the same images).
                let path = dir.join(name);
                let removed = match fs.remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => fs.sync_dir(&dir),
                };
                if removed.is_ok() {
                    self.journal = JournalState::Absent;
                }
            }
        }
    }

    /// Writes the journal of every region in `touched` (a damaged one kept aside first).
    fn write_journal(
        &mut self,
        fs: &dyn Fs,
        dir: &Path,
        name: &str,
        touched: &[RegionPos],
    ) -> std::io::Result<()> {
        if self.journal == JournalState::Damaged {
            copy_aside_with(fs, dir, name)?;
        }
        let entries: Vec<(String, Vec<u8>)> = touched
            .iter()
            .map(|&pos| (pos.file_name_of::<K>(), self.image(pos).unwrap_or_default()))
            .collect();
        write_atomic_with(fs, dir, name, &encode_journal(&entries))?;
        self.journal = JournalState::Pending;
        Ok(())
    }

    fn fail(&mut self, pos: RegionPos, message: String) {
        let chunks = self.behind.get(&pos).map_or(0, BTreeSet::len);
        let failure = WriteFailure {
            region: pos,
            file: pos.file_name_of::<K>(),
            chunks,
            message,
        };
        self.failing.insert(pos, failure);
    }

    /// The bytes of a region file (`None`: no chunk is left, the file is removed).
    fn image(&self, pos: RegionPos) -> Option<Vec<u8>> {
        let chunks = self.regions.get(&pos).cloned().unwrap_or_default();
        if chunks.is_empty() {
            return None;
        }
        Some(frame::encode::<K>(&Region {
            pos,
            stamp: self.stamp,
            chunks,
        }))
    }

    /// Rewrites one region (or removes its file when no chunk is left), a damaged file kept
    /// aside first.
    fn write_region(&mut self, fs: &dyn Fs, dir: &Path, pos: RegionPos) -> std::io::Result<()> {
        let file = pos.file_name_of::<K>();
        if self.damaged.contains(&pos) {
            copy_aside_with(fs, dir, &file)?;
            self.damaged.remove(&pos);
        }
        let Some(bytes) = self.image(pos) else {
            let path = dir.join(&file);
            return match fs.remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(op("remove", &path, e)),
                _ => fs.sync_dir(dir).map_err(|e| op("fsync", dir, e)),
            };
        };
        write_atomic_with(fs, dir, &file, &bytes)
    }
}
