//! Why a world directory cannot be used, and a region whose write-back failed.

use std::path::{Path, PathBuf};

use super::super::frame::RegionPos;

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
