//! The save thread: the one owner of a kind's region files, its messages, write-back with retry,
//! the journal first when a write touches several files that change together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

use super::super::frame::{self, Kind, Region, RegionPos};
use super::aside::copy_aside_with;
use super::fs::{op, write_atomic_with, Fs};
use super::journal::encode_journal;
use super::scan::{open_dir, remove_stale_temporaries, JournalState, Opened};
use super::{StoreError, StoreKind, WriteFailure};
use crate::grid::ChunkPos;

/// A message to the save thread.
pub(super) enum Request<K: Kind> {
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

/// The save thread's state.
pub(super) struct Owner<K: StoreKind> {
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
    pub(super) fn new(
        dir: Option<PathBuf>,
        stamp: K::Stamp,
        fs: Arc<dyn Fs>,
        opened: Opened<K>,
    ) -> Self {
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

    pub(super) fn serve(mut self, requests: &Receiver<Request<K>>, reads: &AtomicU64) {
        while let Ok(request) = requests.recv() {
            self.handle(request, reads);
        }
    }

    /// Answers one request (on the save thread, or on the caller's thread for a store without
    /// one: every reply channel has room for its answer, so nothing waits).
    pub(super) fn handle(&mut self, request: Request<K>, reads: &AtomicU64) {
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::FsOp as Op;
    use super::super::*;
    use crate::grid::ChunkPos;
    use std::sync::Arc;

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

            fs.fail(Some(op));
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

            fs.fail(None);
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
                Store::<Test>::start_with(Some(dir.path().to_owned()), stamp(), dyn_fs).unwrap();
            assert_eq!(damage.len(), 1);
            fs.fail(Some(op));
            assert!(store.flush(image(1)).is_err(), "{op:?}");
            // The damaged file is still there, byte for byte (copied aside or not yet).
            assert_eq!(std::fs::read(dir.path().join("r.0.0.wsr")).unwrap(), bad);
            fs.fail(None);
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
    fn edits_reverted_before_their_region_was_ever_written_leave_no_file_and_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        fs.fail(Some(Op::Write));
        assert!(store.flush(image(1)).is_err());
        fs.fail(None);
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
        fs.fail(Some(Op::Remove));
        let reverted: Vec<_> = image(1).into_iter().map(|(c, _)| (c, None)).collect();
        assert!(store.flush(reverted).is_err());
        assert_eq!(
            stored(dir.path()),
            as_map(&image(1)),
            "the old file stays whole"
        );
        fs.fail(None);
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

    #[test]
    fn dropping_the_store_writes_everything_sent_to_it_first() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        // A slow disk: the write is still under way when the store is dropped.
        fs.slow_writes(Some(std::time::Duration::from_millis(300)));
        store.write(image(3));
        drop(store);
        assert_eq!(fs.renames(), 1);
        assert_eq!(stored(dir.path()), as_map(&image(3)));
    }
}
