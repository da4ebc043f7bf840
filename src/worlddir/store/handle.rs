//! The tick's handle on the save thread ([`Store`]), the workers' [`Reader`], and the index of the
//! chunks that have a record (a worker asks the thread only for those).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use rustc_hash::FxHashSet;

use super::super::frame::Kind;
use super::fs::{Fs, RealFs};
use super::lock::{GameToken, Lock};
use super::owner::{Owner, Request};
use super::scan::{open_dir, Opened, Reported};
use super::{StoreError, StoreKind};
use crate::grid::ChunkPos;

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

/// How requests reach the records' owner: the save thread's queue, or the owner itself, served
/// on the caller's thread by a store started without a thread ([`Store::start_here`]: a build
/// without threads, or terrain inline, docs/reference/terrain.md#inline). Every request has a
/// reply channel with room for its answer, so a request served here never waits.
enum Line<K: StoreKind> {
    Thread(Sender<Request<K>>),
    Here(Arc<Here<K>>),
}

/// A store's owner served on the caller's thread, and its count of reads answered.
struct Here<K: StoreKind> {
    owner: Mutex<Owner<K>>,
    reads: Arc<AtomicU64>,
}

impl<K: StoreKind> Clone for Line<K> {
    fn clone(&self) -> Self {
        match self {
            Line::Thread(tx) => Line::Thread(tx.clone()),
            Line::Here(here) => Line::Here(here.clone()),
        }
    }
}

impl<K: StoreKind> Line<K> {
    /// Sends `request` to the thread, or answers it here. `Err`: the thread is gone.
    fn send(&self, request: Request<K>) -> Result<(), ()> {
        match self {
            Line::Thread(tx) => tx.send(request).map_err(|_| ()),
            Line::Here(here) => {
                let mut owner = here.owner.lock().unwrap_or_else(PoisonError::into_inner);
                owner.handle(request, &here.reads);
                Ok(())
            }
        }
    }
}

/// What a worker holds to ask the save thread for records: the request queue and a reply
/// channel of its own (a clone gets a new one, so answers never cross between workers), and
/// the index of the chunks with a record.
pub struct Reader<K: StoreKind> {
    requests: Line<K>,
    reply: ReplyPair<K>,
    index: Index,
}

/// A reader's own reply channel.
type ReplyPair<K> = (
    Sender<Option<<K as Kind>::Data>>,
    Receiver<Option<<K as Kind>::Data>>,
);

impl<K: StoreKind> Clone for Reader<K> {
    fn clone(&self) -> Self {
        Reader {
            requests: self.requests.clone(),
            reply: crossbeam_channel::bounded(1),
            index: self.index.clone(),
        }
    }
}

impl<K: StoreKind> Reader<K> {
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
    requests: Option<Line<K>>,
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
    /// one another game holds is refused. A build without threads (`wasm32`) serves it here
    /// ([`Store::start_here`]).
    pub fn start_for(
        dir: Option<PathBuf>,
        stamp: K::Stamp,
        fs: Arc<dyn Fs>,
        game: Option<&GameToken>,
    ) -> Result<Started<K>, StoreError<K::Stamp>> {
        if cfg!(target_arch = "wasm32") {
            return Self::start_here(dir, stamp, fs, game);
        }
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
            requests: Some(Line::Thread(tx)),
            thread: Some(thread),
            stamp,
            index,
            reads,
            _lock: lock,
        };
        Ok((store, damage?))
    }

    /// [`Store::start_for`] without a thread: the records' owner is served on the caller's
    /// thread, each request answered as it is made (a write is on disk, or has failed, when
    /// [`Store::write`] returns). The same records, files and bytes as with the thread.
    pub fn start_here(
        dir: Option<PathBuf>,
        stamp: K::Stamp,
        fs: Arc<dyn Fs>,
        game: Option<&GameToken>,
    ) -> Result<Started<K>, StoreError<K::Stamp>> {
        let lock = dir
            .as_deref()
            .map(|d| Lock::take(d, game.map(|g| g.0)))
            .transpose()?;
        let opened = match &dir {
            Some(d) => open_dir::<K>(d, stamp)?,
            None => Opened::default(),
        };
        let index = Index::default();
        index.change(|set| set.extend(Self::stored(&opened)));
        let damage = opened.damage.clone();
        let reads = Arc::new(AtomicU64::new(0));
        let here = Here {
            owner: Mutex::new(Owner::new(dir, stamp, fs, opened)),
            reads: reads.clone(),
        };
        let store = Store {
            requests: Some(Line::Here(Arc::new(here))),
            thread: None,
            stamp,
            index,
            reads,
            _lock: lock,
        };
        Ok((store, damage))
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

    /// The threads it runs: 1 (its save thread), or 0 when served here
    /// ([`Store::start_here`]).
    pub fn threads(&self) -> usize {
        usize::from(self.thread.is_some())
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
            .map_err(|()| StoreError::Stopped(K::KIT))
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use crate::grid::ChunkPos;
    use std::sync::Arc;

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
    fn a_store_served_here_has_no_thread_and_writes_the_same_bytes() {
        let run = |here: bool| {
            let dir = tempfile::tempdir().unwrap();
            let fs: Arc<dyn Fs> = Arc::new(FaultyFs::default());
            let start = if here {
                Store::<Test>::start_here
            } else {
                Store::<Test>::start_for
            };
            let (store, damage) = start(Some(dir.path().to_owned()), stamp(), fs, None).unwrap();
            assert_eq!((store.threads(), damage), (usize::from(!here), vec![]));
            let reader = store.reader().unwrap();
            store.write(image(7));
            assert_eq!(reader.read(ChunkPos::new(1, 2)), Some(diff(5, 7)));
            assert_eq!(reader.read(ChunkPos::new(2, 2)), None);
            store.write(vec![
                (ChunkPos::new(1, 2), None),
                (ChunkPos::new(40, 0), Some(diff(1, 2))),
            ]);
            store.flush(image(9)).unwrap();
            assert_eq!(store.snapshot().unwrap(), {
                let mut m = as_map(&image(9));
                m.insert(ChunkPos::new(40, 0), diff(1, 2));
                m
            });
            assert_eq!(store.reads_served(), 1);
            drop((reader, store));
            // Reopened (by either kind): what was written.
            let fs: Arc<dyn Fs> = Arc::new(FaultyFs::default());
            let (again, _) =
                Store::<Test>::start_here(Some(dir.path().to_owned()), stamp(), fs, None).unwrap();
            assert_eq!(again.read(ChunkPos::new(40, 0)), Some(diff(1, 2)));
            drop(again);
            let mut files: Vec<(String, Vec<u8>)> = names(dir.path())
                .into_iter()
                .filter(|n| n != LOCK_FILE)
                .map(|n| (n.clone(), std::fs::read(dir.path().join(n)).unwrap()))
                .collect();
            files.sort();
            files
        };
        let (thread, here) = (run(false), run(true));
        assert_eq!(thread.len(), 2, "two regions: {thread:?}");
        assert_eq!(thread, here);
    }

    #[test]
    fn a_worker_asks_the_thread_only_for_chunks_with_a_record() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        let reader = store.reader().unwrap();
        let asked = |n: u64| assert_eq!(store.reads_served(), n);
        // Nothing stored: no chunk is asked for.
        assert_eq!(reader.read(ChunkPos::new(1, 2)), None);
        asked(0);
        // A record written is read from the thread; its neighbour is not asked for.
        store.write(image(7));
        assert_eq!(reader.read(ChunkPos::new(1, 2)), Some(diff(5, 7)));
        asked(1);
        assert_eq!(reader.read(ChunkPos::new(2, 2)), None);
        asked(1);
        // A record removed (back to the baseline) is no longer asked for.
        store.write(vec![(ChunkPos::new(1, 2), None)]);
        assert_eq!(reader.read(ChunkPos::new(1, 2)), None);
        asked(1);
        assert_eq!(reader.read(ChunkPos::new(3, 4)), Some(diff(6, 7)));
        asked(2);
        store.flush(vec![]).unwrap();
        drop((reader, store));
        // What a directory holds when it is opened is asked for; a replacement swaps the index.
        let store = start(dir.path(), &fs);
        let reader = store.reader().unwrap();
        assert_eq!(reader.read(ChunkPos::new(3, 4)), Some(diff(6, 7)));
        assert_eq!(reader.read(ChunkPos::new(1, 2)), None);
        assert_eq!(store.reads_served(), 1);
        let mut opened = Opened::<Test>::default();
        opened.chunks.insert(ChunkPos::new(1, 2), diff(9, 9));
        store.replace(None, opened);
        assert_eq!(reader.read(ChunkPos::new(1, 2)), Some(diff(9, 9)));
        assert_eq!(reader.read(ChunkPos::new(3, 4)), None);
        assert_eq!(store.reads_served(), 2);
    }
}
