//! What the store's tests share: a kind of region file of their own ([`Test`], framed as any
//! kind is: its records a list of numbers), a stamp, records, and looks at a directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use super::super::frame::{self, Kind, RegionPos, STAMP_LEN};
use super::{FaultyFs, Fs, Store, StoreKind};
use crate::grid::ChunkPos;

/// The tests' kind: `r.<x>.<z>.wsr` files whose records are lists of numbers.
#[derive(Debug)]
pub struct Test;

/// The tests' stamp: one number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamp(pub u64);

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stamp {}", self.0)
    }
}

impl Kind for Test {
    type Stamp = Stamp;
    type Data = Vec<u16>;
    const REGION_MAGIC: [u8; 4] = *b"TSTR";
    const RECORD_MAGIC: [u8; 4] = *b"TSTC";
    const FORMAT_VERSION: u16 = 1;
    const RECORD_VERSION: u16 = 1;
    const PREFIX: &'static str = "r";
    const EXTENSION: &'static str = "wsr";
    const MAX_RAW_PAYLOAD: usize = 1 << 20;
    const MAX_FILE_LEN: u64 = 1 << 24;

    fn stamp_bytes(stamp: &Stamp) -> [u8; STAMP_LEN] {
        let mut out = [0u8; STAMP_LEN];
        out[..8].copy_from_slice(&stamp.0.to_le_bytes());
        out
    }

    fn stamp_from(b: &[u8; STAMP_LEN]) -> Stamp {
        Stamp(u64::from_le_bytes(b[..8].try_into().expect("8 bytes")))
    }

    fn same(a: &Stamp, b: &Stamp) -> bool {
        a == b
    }

    fn is_empty(data: &Vec<u16>) -> bool {
        data.is_empty()
    }

    fn encode_payload(chunk: ChunkPos, stamp: Stamp, data: &Vec<u16>) -> Vec<u8> {
        postcard::to_allocvec(&(chunk.x, chunk.z, stamp.0, data)).expect("plain data serializes")
    }

    fn decode_payload(raw: &[u8]) -> Result<(ChunkPos, Stamp, Vec<u16>), String> {
        let (x, z, stamp, data): (i64, i64, u64, Vec<u16>) =
            postcard::from_bytes(raw).map_err(|e| e.to_string())?;
        Ok((ChunkPos::new(x, z), Stamp(stamp), data))
    }
}

impl StoreKind for Test {
    const KIT: &'static str = "world.test";
    const FALLBACK: &'static str = "the chunk loads as generated";
    const STAMP_HINT: &'static str = "another world's";
    const JOURNAL: Option<&'static str> = None;
    const REWRITE_DAMAGED: bool = false;
}

/// The tests' stamp.
pub fn stamp() -> Stamp {
    Stamp(42)
}

/// A record.
pub fn diff(cell: u32, height: u16) -> Vec<u16> {
    vec![cell as u16, height]
}

/// The region of chunks (0, 0)..(31, 31).
pub const R: RegionPos = RegionPos { x: 0, z: 0 };

/// The file name of a region.
pub fn file(pos: RegionPos) -> String {
    pos.file_name_of::<Test>()
}

/// What `dir` stores for region `R`, checked sound: chunk → record.
pub fn stored(dir: &Path) -> BTreeMap<ChunkPos, Vec<u16>> {
    let bytes = std::fs::read(dir.join(file(R))).unwrap();
    let d = frame::decode::<Test>(&bytes, R);
    assert_eq!(d.damage, vec![], "the region file is damaged");
    d.chunks.into_iter().map(|(c, (_, d))| (c, d)).collect()
}

/// Two chunks' records of `height`.
pub fn image(height: u16) -> Vec<(ChunkPos, Option<Vec<u16>>)> {
    vec![
        (ChunkPos::new(1, 2), Some(diff(5, height))),
        (ChunkPos::new(3, 4), Some(diff(6, height))),
    ]
}

/// The records `changes` leave.
pub fn as_map(changes: &[(ChunkPos, Option<Vec<u16>>)]) -> BTreeMap<ChunkPos, Vec<u16>> {
    changes
        .iter()
        .filter_map(|(c, d)| Some((*c, d.clone()?)))
        .collect()
}

/// A store on `dir` writing through `fs`, no damage found.
pub fn start(dir: &Path, fs: &Arc<FaultyFs>) -> Store<Test> {
    let fs: Arc<dyn Fs> = fs.clone();
    let (store, damage) = Store::start_with(Some(dir.to_owned()), stamp(), fs).unwrap();
    assert_eq!(damage, vec![]);
    store
}

/// The names in `dir`.
pub fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Makes a FIFO at `path`.
#[cfg(unix)]
pub fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {path:?}");
}
