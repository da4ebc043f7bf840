//! `world.terrain`'s save thread (docs/reference/world-dir.md#what-is-stored): the shared one of
//! [`crate::worlddir::store`] for the terrain kind of region file ([`Terrain`]): one thread owns
//! every terrain region file of the world directory, and one game owns the directory (an advisory
//! lock on `session.lock`, shared with the game's other kits). The tick sends it the modified
//! chunks to write back, workers ask it for a chunk's stored diff; both by message. A write
//! rewrites each region it touches whole and atomically; a region file found damaged is first kept
//! aside; a write that fails keeps the chunks in memory and is tried again with every later write.
//!
//! Without a directory the thread keeps the diffs in memory only (the game save carries them).

use std::path::Path;

use super::region::{Stamp, Terrain};
use crate::worlddir::store::{self as shared, StoreKind};
pub use crate::worlddir::store::{
    copy_aside, read_capped, write_atomic, Capped, Fs, GameToken, RealFs, Reported, WriteFailure,
    GAME_TOKEN, LOCK_FILE, MAX_ASIDE_NAMES,
};

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
    use crate::grid::ChunkPos;
    use crate::kits::terrain::region::{self, Diff, Region, RegionPos};
    use std::collections::BTreeMap;

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
}
