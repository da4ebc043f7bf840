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

/// Why a `worldDir` is refused at start on a build without a file system (the wasm build): the
/// message that follows the key's JSON path (docs/reference/web.md#no-file-system).
pub const NEEDS_FILE_SYSTEM: &str = "a world directory needs a file system (this build has none)";

/// A kit's `worldDir` on a build without a file system: refused, naming the key (`path`), never
/// replaced by something that is not a directory. `None` where there is a file system.
pub fn refuse_without_file_system(path: &str) -> Option<crate::json::Problem> {
    if cfg!(target_arch = "wasm32") {
        Some(crate::json::Problem::new(path, NEEDS_FILE_SYSTEM))
    } else {
        None
    }
}

/// The directory a kit's `worldDir` names: a relative one is relative to the scene file's
/// directory `base` (as mod paths are), kept as written when that is the working directory
/// (`""` or `"."`), so that saves and messages name it as the scene does.
pub(crate) fn resolve(dir: &str, base: &std::path::Path) -> std::path::PathBuf {
    if std::path::Path::new(dir).is_relative() && !matches!(base.to_str(), Some("" | ".")) {
        base.join(dir)
    } else {
        std::path::PathBuf::from(dir)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn a_relative_world_dir_is_relative_to_the_scene_and_kept_as_written_beside_it() {
        assert_eq!(resolve("w", Path::new("scenes")), PathBuf::from("scenes/w"));
        assert_eq!(resolve("../w", Path::new("a/b")), PathBuf::from("a/b/../w"));
        assert_eq!(resolve("w", Path::new("")), PathBuf::from("w"));
        assert_eq!(resolve("w", Path::new(".")), PathBuf::from("w"));
        assert_eq!(
            resolve("/data/w", Path::new("scenes")),
            PathBuf::from("/data/w")
        );
        assert_eq!(resolve("/data/w", Path::new(".")), PathBuf::from("/data/w"));
    }
}
