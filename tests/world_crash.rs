//! Crash safety of region writes (docs/reference/world-dir.md#atomic-rewrites: "a region file
//! killed mid-flush opens as the old or the new image, never a mix"). The test re-runs its own
//! binary as a child that rewrites one region file forever, image after image, and kills it with
//! SIGKILL at seeded random moments; after each kill the file must be exactly one image the child
//! had started or finished, the only debris a `.tmp` file, which opening leaves alone (opening
//! changes nothing on disk) and the save thread's first write removes.
//!
//! Half the rounds write through `store::write_atomic`, half through the save thread
//! (`Store::flush`), which is what the game uses.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::region::{self, Diff, Region, RegionPos, Stamp};
use world_streaming::kits::terrain::store::{self, Store};

const TEST: &str = "a_region_file_killed_mid_write_is_the_old_or_the_new_image";
const CHILD_DIR: &str = "WS_CRASH_CHILD_DIR";
const CHILD_LOG: &str = "WS_CRASH_CHILD_LOG";
const CHILD_FROM: &str = "WS_CRASH_CHILD_FROM";
const CHILD_MODE: &str = "WS_CRASH_CHILD_MODE";
const KILLS: usize = 50;
const POS: RegionPos = RegionPos { x: 0, z: 0 };

fn stamp() -> Stamp {
    Stamp {
        generator: 1,
        seed: 99,
        cells: 64,
        chunk_size: 16.0,
    }
}

/// Every chunk an image may hold.
const CHUNKS: [ChunkPos; 3] = [
    ChunkPos::new(0, 0),
    ChunkPos::new(3, 1),
    ChunkPos::new(31, 31),
];

/// Image `k`: a pure function of `k`. One chunk whose size (up to about 20 KiB of record) and
/// heights change with k, one present every other image, one single edit that moves.
fn image(k: u64) -> BTreeMap<ChunkPos, Diff> {
    let mut h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        h ^= h << 13;
        h ^= h >> 7;
        h ^= h << 17;
        h
    };
    let mut chunks = BTreeMap::new();
    let n = 1 + (k % 41) as u32 * 97;
    chunks.insert(
        CHUNKS[0],
        Diff {
            cells: (0..n)
                .map(|i| (i, (next() as u16, (next() % 8) as u8)))
                .collect(),
        },
    );
    if k.is_multiple_of(2) {
        chunks.insert(
            CHUNKS[1],
            Diff {
                cells: [((k % 4096) as u32, (k as u16, 1))].into(),
            },
        );
    }
    chunks.insert(
        CHUNKS[2],
        Diff {
            cells: [((k * 13 % 4096) as u32, ((k >> 16) as u16, 2))].into(),
        },
    );
    chunks
}

fn encoded(k: u64) -> Vec<u8> {
    region::encode(&Region {
        pos: POS,
        stamp: stamp(),
        chunks: image(k),
    })
}

/// The child: from image `from` on, note "k" in the log, then write image k; forever.
fn child(dir: &Path, log: &Path, from: u64, through_store: bool) -> ! {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let name = POS.file_name();
    let store = through_store.then(|| {
        let (store, damage) = Store::start(Some(dir.to_owned()), stamp()).unwrap();
        assert_eq!(damage, vec![], "the child opened a damaged directory");
        store
    });
    for k in from.. {
        // One write(2) per line: a kill leaves whole lines only.
        log.write_all(format!("{k}\n").as_bytes()).unwrap();
        match &store {
            Some(store) => {
                let chunks = image(k);
                let changes = CHUNKS
                    .iter()
                    .map(|c| (*c, chunks.get(c).cloned()))
                    .collect();
                store.flush(changes).unwrap();
            }
            None => store::write_atomic(dir, &name, &encoded(k)).unwrap(),
        }
    }
    unreachable!()
}

/// A small seeded xorshift: the kill moments are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The files of `dir`.
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Which image the region file holds, out of `candidates` (`None`: no file yet).
fn which(dir: &Path, candidates: &[Option<u64>]) -> Option<Option<u64>> {
    let path = dir.join(POS.file_name());
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return candidates.contains(&None).then_some(None)
        }
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let d = region::decode(&bytes, POS);
    assert_eq!(d.damage, vec![], "the region file is damaged after a kill");
    assert_eq!(d.stamp, Some(stamp()));
    let chunks: BTreeMap<ChunkPos, Diff> = d.chunks.into_iter().map(|(c, (_, x))| (c, x)).collect();
    candidates
        .iter()
        .flatten()
        .find(|k| chunks == image(**k) && bytes == encoded(**k))
        .map(|k| Some(*k))
}

#[test]
fn a_region_file_killed_mid_write_is_the_old_or_the_new_image() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        let log = PathBuf::from(std::env::var_os(CHILD_LOG).unwrap());
        let from: u64 = std::env::var(CHILD_FROM).unwrap().parse().unwrap();
        let through_store = std::env::var(CHILD_MODE).unwrap() == "store";
        child(Path::new(&dir), &log, from, through_store);
    }

    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    std::fs::create_dir(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x5eed_2026_0d15_c0de);
    // The image the file holds (None: no file yet), and the next image to write.
    let mut current: Option<u64> = None;
    let mut from = 0u64;
    let (mut new_images, mut old_images, mut tmp_left, mut idle) = (0, 0, 0, 0);
    let mut seen = BTreeSet::new();
    for round in 0..KILLS {
        let log = tmp.path().join(format!("log.{round}"));
        let err = tmp.path().join(format!("stderr.{round}"));
        let through_store = round % 2 == 1;
        let mut child = Command::new(&exe)
            .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_DIR, &dir)
            .env(CHILD_LOG, &log)
            .env(CHILD_FROM, from.to_string())
            .env(CHILD_MODE, if through_store { "store" } else { "atomic" })
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let delay = Duration::from_micros(5_000 + rng.next() % 150_000);
        std::thread::sleep(delay);
        let early = child.try_wait().unwrap();
        assert!(
            early.is_none(),
            "round {round}: the child stopped by itself ({early:?}): {}",
            std::fs::read_to_string(&err).unwrap_or_default()
        );
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        // The images the child had started: from..=last.
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let last: Option<u64> = text.lines().last().map(|l| l.parse().unwrap());
        let candidates: Vec<Option<u64>> = match last {
            None => vec![current],
            // Writes are sequential: image `last` or the one before it (the file as the round
            // found it, if `last` was the round's first).
            Some(last) if last == from => vec![Some(last), current],
            Some(last) => vec![Some(last), Some(last - 1)],
        };
        let found = which(&dir, &candidates).unwrap_or_else(|| {
            panic!("round {round}: the region file is none of the images {candidates:?}")
        });
        match last {
            None => idle += 1,
            Some(last) if found == Some(last) => new_images += 1,
            Some(_) => old_images += 1,
        }
        if let Some(k) = found {
            seen.insert(k);
        }

        // Debris: the region file and at most its temporary file (and the lock file a save
        // thread leaves: its lock died with the child, as the next round's child shows).
        let files = names(&dir);
        let debris: BTreeSet<String> = files
            .iter()
            .filter(|f| **f != POS.file_name() && **f != store::LOCK_FILE)
            .cloned()
            .collect();
        let tmp_name = format!("{}.tmp", POS.file_name());
        assert!(
            debris.iter().all(|f| *f == tmp_name),
            "round {round}: debris {debris:?}"
        );
        if !debris.is_empty() {
            tmp_left += 1;
        }
        // Opening the directory finds no damage and changes nothing.
        if found.is_some() || !debris.is_empty() {
            let opened = store::open_dir(&dir, stamp()).unwrap();
            assert_eq!(opened.damage, vec![], "round {round}");
            assert_eq!(opened.chunks, found.map(image).unwrap_or_default());
            assert_eq!(names(&dir), files, "round {round}");
        }
        current = found;
        from = last.map_or(from, |l| l + 1);
    }

    // A game's save thread opens what is left: no damage, the last image; its first write
    // removes a temporary file left behind.
    let (store, damage) = Store::start(Some(dir.clone()), stamp()).unwrap();
    assert_eq!(damage, vec![]);
    assert_eq!(
        store.snapshot().unwrap(),
        current.map(image).unwrap_or_default()
    );
    std::fs::write(
        dir.join(format!("{}.tmp", POS.file_name())),
        b"left by a kill",
    )
    .unwrap();
    store
        .flush(vec![(
            ChunkPos::new(5, 5),
            Some(Diff {
                cells: [(1, (2, 3))].into(),
            }),
        )])
        .unwrap();
    assert_eq!(
        names(&dir),
        [POS.file_name(), store::LOCK_FILE.to_owned()]
            .into_iter()
            .collect::<BTreeSet<_>>()
    );
    drop(store);
    assert!(
        !names(&dir).iter().any(|f| f.contains("damaged")),
        "nothing was copied aside"
    );

    eprintln!(
        "world_crash: {KILLS} kills in {:.1} s: {} images written, {} distinct images seen after a \
         kill ({new_images} rounds left the image being written or just written, {old_images} the \
         one before, {idle} were killed before writing), {tmp_left} left a .tmp file",
        started.elapsed().as_secs_f64(),
        from,
        seen.len(),
    );
    assert!(
        new_images > 0 && old_images + tmp_left > 0,
        "kills should land both between and inside writes"
    );
}
