//! The save thread (SPEC §13, `seeds/save_format.txt`): one thread owns every region file of
//! the world directory. The tick sends it the modified chunks to write back, workers ask it for
//! a chunk's stored diff; both by message, so no region file needs a lock. It reads every region
//! file once, when it opens the directory (checking stamps and checksums; opening changes nothing
//! on disk), and serves reads from memory thereafter. A write rewrites each region it touches
//! whole and atomically: a temporary file, fsync, rename over the region file, fsync of the
//! directory; a region file found damaged is first copied aside, byte for byte.
//!
//! Without a directory the thread keeps the diffs in memory only (the game save carries them).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use super::region::{self, Damage, Diff, Region, RegionPos, Stamp};
use crate::grid::ChunkPos;

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
    /// A write back failed.
    #[error("world directory {dir}: writing {file}: {message}")]
    Write {
        /// The directory.
        dir: PathBuf,
        /// The file.
        file: String,
        /// What failed.
        message: String,
    },
    /// The save thread is gone (it panicked).
    #[error("the world.terrain save thread stopped")]
    Stopped,
}

/// One region file as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionReport {
    /// The region.
    pub pos: RegionPos,
    /// Its file name.
    pub file: String,
    /// Its size in bytes.
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

/// Reads every region file of `dir` (files named `r.<x>.<z>.wsr`; others are ignored), in
/// region order. Reading is all it does.
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
        let len = std::fs::metadata(&path).map_err(io)?.len();
        let decoded = if len > region::MAX_FILE_LEN {
            region::Decoded {
                stamp: None,
                chunks: BTreeMap::new(),
                entries: Vec::new(),
                damage: vec![Damage::Header(format!(
                    "{len} bytes: larger than any region file ({} bytes at most)",
                    region::MAX_FILE_LEN
                ))],
            }
        } else {
            region::decode(&std::fs::read(&path).map_err(io)?, pos)
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
/// world (it is created at the first write back).
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
            if found.generator != stamp.generator
                || found.seed != stamp.seed
                || found.cells != stamp.cells
                || found.chunk_size.to_bits() != stamp.chunk_size.to_bits()
            {
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
                        "{}: {d}; the chunk loads as generated (the file is copied to {}.damaged \
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

/// Copies `dir/file` to `file.damaged` (or `.damaged.1`, … if that name holds other bytes);
/// returns that name.
pub fn copy_aside(dir: &Path, file: &str) -> std::io::Result<String> {
    let bytes = std::fs::read(dir.join(file))?;
    for n in 0.. {
        let name = match n {
            0 => format!("{file}.damaged"),
            n => format!("{file}.damaged.{n}"),
        };
        let path = dir.join(&name);
        match std::fs::read(&path) {
            Ok(existing) if existing == bytes => return Ok(name),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                write_atomic(dir, &name, &bytes)?;
                return Ok(name);
            }
            Err(e) => return Err(e),
        }
    }
    unreachable!("some name is free")
}

/// Removes the temporary files (`r.x.z.wsr.tmp`, `r.x.z.wsr.damaged….tmp`) a write killed
/// midway left in `dir`; they are never read.
fn remove_stale_temporaries(dir: &Path) {
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
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Replaces `dir/name` with `bytes` atomically: `name.tmp`, fsync, rename, fsync the directory.
/// A reader (or a crash) sees the old file or the new one, never a mix.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, dir.join(name))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// A message to the save thread.
enum Request {
    /// A worker asks for a chunk's stored diff.
    Read {
        chunk: ChunkPos,
        reply: Sender<Option<Diff>>,
    },
    /// Write these chunks back (`None`: no longer modified); `done` hears the outcome, which
    /// includes the failure of any earlier write that nobody waited for.
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

/// The tick's handle on the save thread. Dropping it ends the thread after it has written
/// everything sent to it.
pub struct Store {
    requests: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    stamp: Stamp,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Starts the save thread on `dir` (opened with [`open_dir`], on the thread) or, with no
    /// directory, in memory. Returns the damage found.
    pub fn start(dir: Option<PathBuf>, stamp: Stamp) -> Result<(Store, Vec<Reported>), StoreError> {
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
                Owner::new(dir, stamp, opened).serve(&rx);
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

    /// Writes back and waits until it is on disk; reports this or any earlier failure.
    pub fn flush(&self, changes: Vec<(ChunkPos, Option<Diff>)>) -> Result<(), StoreError> {
        self.ask(|done| Request::Write {
            changes,
            done: Some(done),
        })?
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
    regions: BTreeMap<RegionPos, BTreeMap<ChunkPos, Diff>>,
    /// The first failed write nobody has heard of yet.
    failed: Option<StoreError>,
    /// Regions whose last rewrite failed: every later write tries them again.
    retry: BTreeSet<RegionPos>,
    /// Regions whose file was found damaged and is not copied aside yet.
    damaged: BTreeSet<RegionPos>,
    /// Whether the temporary files a killed write left were removed (at the first write:
    /// opening changes nothing on disk).
    swept: bool,
}

impl Owner {
    fn new(dir: Option<PathBuf>, stamp: Stamp, opened: Opened) -> Owner {
        let mut owner = Owner {
            dir,
            stamp,
            regions: BTreeMap::new(),
            failed: None,
            retry: BTreeSet::new(),
            damaged: BTreeSet::new(),
            swept: false,
        };
        owner.fill(opened);
        owner
    }

    fn fill(&mut self, opened: Opened) {
        self.regions.clear();
        self.retry.clear();
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
                    if let Err(e) = self.write(changes) {
                        self.failed.get_or_insert(e);
                    }
                    if let Some(done) = done {
                        let _ = done.send(self.failed.take().map_or(Ok(()), Err));
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
                    self.failed = None;
                    self.fill(opened);
                }
            }
        }
    }

    /// Applies `changes` and rewrites every region they touch (in memory only without a dir).
    fn write(&mut self, changes: Vec<(ChunkPos, Option<Diff>)>) -> Result<(), StoreError> {
        let mut touched = std::mem::take(&mut self.retry);
        for (chunk, diff) in changes {
            let pos = RegionPos::of(chunk);
            let region = self.regions.entry(pos).or_default();
            let changed = match diff {
                Some(d) if !d.is_empty() => region.insert(chunk, d.clone()).as_ref() != Some(&d),
                _ => region.remove(&chunk).is_some(),
            };
            if changed {
                touched.insert(pos);
            }
        }
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let mut result = Ok(());
        if !touched.is_empty() {
            if let Err(e) = std::fs::create_dir_all(dir) {
                self.retry = touched;
                return Err(StoreError::Io {
                    dir: dir.clone(),
                    message: format!("cannot create it: {e}"),
                });
            }
            if !self.swept {
                // Best effort: a temporary file left behind is harmless, only untidy.
                remove_stale_temporaries(dir);
                self.swept = true;
            }
        }
        for pos in touched {
            let file = pos.file_name();
            let chunks = self.regions.get(&pos).cloned().unwrap_or_default();
            // A damaged file is kept, byte for byte, before anything replaces it.
            let aside = match self.damaged.contains(&pos) {
                true => copy_aside(dir, &file).map(|_| {
                    self.damaged.remove(&pos);
                }),
                false => Ok(()),
            };
            let written = aside.and_then(|()| {
                if chunks.is_empty() {
                    match std::fs::remove_file(dir.join(&file)) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                        _ => sync_dir(dir),
                    }
                } else {
                    let bytes = region::encode(&Region {
                        pos,
                        stamp: self.stamp,
                        chunks,
                    });
                    write_atomic(dir, &file, &bytes)
                }
            });
            if let Err(e) = written {
                self.retry.insert(pos);
                result = result.and(Err(StoreError::Write {
                    dir: dir.clone(),
                    file,
                    message: e.to_string(),
                }));
            }
        }
        result
    }
}
