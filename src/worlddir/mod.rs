//! The world directory's machinery (docs/reference/world-dir.md), shared by every kit that keeps
//! records there (`world.terrain`'s modified chunks, `world.district`'s kept differences):
//!
//! - [`frame`]: the region file framing, pure: a header, a table chunk → record, a free list, a
//!   header CRC-32, and records each with its own header and CRC-32 over an (LZ4-compressed when
//!   smaller) payload. What a payload and a stamp hold is the kit's: a [`frame::Kind`];
//! - [`store`]: the one owner thread of a kind's region files, write-back with retry, atomic
//!   rewrites (temporary file, fsync, rename, fsync of the directory), copy-aside of damaged
//!   files, the [`store::Fs`] seam, and the directory's lock (shared by the kits of one game,
//!   refused to any other game).

pub mod frame;
pub mod store;

/// Whether two `worldDir`s name the same directory: both absent, or equal, or the same place
/// once resolved (one may not exist yet).
pub fn same_dir(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a == b
                || std::path::absolute(a)
                    .ok()
                    .zip(std::path::absolute(b).ok())
                    .is_some_and(|(x, y)| {
                        x == y
                            || x.canonicalize()
                                .ok()
                                .is_some_and(|x| Some(x) == y.canonicalize().ok())
                    })
        }
        _ => false,
    }
}
