//! `world.terrain`'s save thread (SPEC §13): the shared one of [`crate::worlddir::store`] for the
//! terrain kind of region file ([`Terrain`]): one thread owns every terrain region file of the
//! world directory, and one game owns the directory (an advisory lock on `session.lock`, shared
//! with the game's other kits). The tick sends it the modified chunks to write back, workers ask
//! it for a chunk's stored diff; both by message. A write rewrites each region it touches whole
//! and atomically; a region file found damaged is first kept aside; a write that fails keeps the
//! chunks in memory and is tried again with every later write.
//!
//! Without a directory the thread keeps the diffs in memory only (the game save carries them).

use std::path::Path;

#[cfg(test)]
use super::region::{self, Damage, Diff, Region, RegionPos};
use super::region::{Stamp, Terrain};
#[cfg(test)]
use crate::grid::ChunkPos;
#[cfg(test)]
use crate::worlddir::store::no_follow;
use crate::worlddir::store::{self as shared, StoreKind};
pub use crate::worlddir::store::{
    copy_aside, read_capped, write_atomic, Capped, Fs, GameToken, RealFs, Reported, WriteFailure,
    GAME_TOKEN, LOCK_FILE, MAX_ASIDE_NAMES,
};
#[cfg(test)]
use std::collections::{BTreeMap, BTreeSet};
#[cfg(test)]
use std::sync::Arc;

impl StoreKind for Terrain {
    const KIT: &'static str = "world.terrain";
    const FALLBACK: &'static str = "the chunk loads as generated";
    const STAMP_HINT: &'static str = "its edits belong to another world (use another worldDir, \
                                      or the seed and generator that wrote it)";
    const JOURNAL: Option<&'static str> = None;
    const REWRITE_DAMAGED: bool = false;
}

/// Why a world directory cannot be used (terrain's).
pub type StoreError = shared::StoreError<Stamp>;
/// One terrain region file as found on disk.
pub type RegionReport = shared::RegionReport<Terrain>;
/// What opening a directory gives: every sound diff, and what was damaged.
pub type Opened = shared::Opened<Terrain>;
/// What a worker holds to ask the save thread for diffs.
pub type Reader = shared::Reader<Terrain>;
/// The outcome of a write, to wait for later.
pub type Outcome = shared::Outcome<Terrain>;
/// The tick's handle on the save thread.
pub type Store = shared::Store<Terrain>;

/// Reads every region file of `dir` (files named `r.<x>.<z>.wsr`; others are ignored), in
/// region order. Reading is all it does: no lock is taken, nothing is created.
pub fn read_dir(dir: &Path) -> Result<Vec<RegionReport>, StoreError> {
    shared::read_dir::<Terrain>(dir)
}

/// Opens `dir` for a game whose chunks have `stamp`, reading only: reads every region, refuses
/// one written for other terrain, lists the damage. A directory that does not exist is an empty
/// world.
pub fn open_dir(dir: &Path, stamp: Stamp) -> Result<Opened, StoreError> {
    shared::open_dir::<Terrain>(dir, stamp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worlddir::store::{FaultyFs, FsOp as Op};

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
                Store::start_with(Some(dir.path().to_owned()), stamp(), dyn_fs).unwrap();
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
    fn the_damage_names_the_copy_the_file_is_kept_aside_as() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let message = |dir: &Path| {
            let dyn_fs: Arc<dyn Fs> = fs.clone();
            let (store, damage) = Store::start_with(Some(dir.to_owned()), stamp(), dyn_fs).unwrap();
            assert_eq!(damage.len(), 1);
            (store, damage[0].message.clone())
        };
        let first = b"WSRG not a region file".to_vec();
        std::fs::write(dir.path().join("r.0.0.wsr"), &first).unwrap();
        let (store, m) = message(dir.path());
        assert!(m.contains("kept aside as r.0.0.wsr.damaged before"), "{m}");
        store.flush(image(1)).unwrap();
        drop(store);
        // Damaged again: the first copy holds other bytes, so this one goes to `.damaged.1`,
        // and the message says so.
        std::fs::write(dir.path().join("r.0.0.wsr"), b"WSRG damaged again").unwrap();
        let (store, m) = message(dir.path());
        assert!(
            m.contains("kept aside as r.0.0.wsr.damaged.1 before"),
            "{m}"
        );
        store.flush(image(1)).unwrap();
        drop(store);
        assert_eq!(
            std::fs::read(dir.path().join("r.0.0.wsr.damaged.1")).unwrap(),
            b"WSRG damaged again"
        );
        assert_eq!(
            std::fs::read(dir.path().join("r.0.0.wsr.damaged")).unwrap(),
            first
        );
    }

    #[test]
    fn a_bad_header_says_its_records_found_by_scanning_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        store.flush(image(7)).unwrap();
        drop(store);
        let path = dir.path().join(R.file_name());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8] ^= 0xff; // inside the header, past the magic
        std::fs::write(&path, &bytes).unwrap();
        let dyn_fs: Arc<dyn Fs> = fs.clone();
        let (store, damage) =
            Store::start_with(Some(dir.path().to_owned()), stamp(), dyn_fs).unwrap();
        assert_eq!(damage.len(), 1, "{damage:?}");
        let m = &damage[0].message;
        assert!(m.contains("bad region header"), "{m}");
        assert!(
            m.contains(
                "the records found by scanning are kept; for any other chunk of the region, \
                 the chunk loads as generated"
            ),
            "{m}"
        );
        // And they are.
        assert_eq!(store.read(ChunkPos::new(3, 4)), Some(diff(6, 7)));
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
        let mut opened = Opened::default();
        opened.chunks.insert(ChunkPos::new(1, 2), diff(9, 9));
        store.replace(None, opened);
        assert_eq!(reader.read(ChunkPos::new(1, 2)), Some(diff(9, 9)));
        assert_eq!(reader.read(ChunkPos::new(3, 4)), None);
        assert_eq!(store.reads_served(), 2);
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
