//! The save thread of one kind of region file (docs/reference/world-dir.md#the-save-thread), moved
//! here from `world.terrain`'s `store.rs` and made generic over the [`frame::Kind`]: one thread
//! owns every region file of that kind in the world directory, and one game owns the directory (an
//! advisory lock on `session.lock`, held as long as any of the game's [`Store`]s lives: the kits of
//! one game share it, another game is refused). The tick sends it the chunks to write back, workers
//! ask it for a chunk's stored record; both by message, so no region file needs a lock. It reads
//! every region file once, when it opens the directory (checking stamps and checksums), and serves
//! reads from memory thereafter. A write rewrites each region it touches whole and atomically: a
//! temporary file, fsync, rename over the region file, fsync of the directory; a region file
//! found damaged is first kept aside (copied byte for byte, or, when it is not a regular file,
//! renamed aside unread). A write that fails keeps the chunks in memory and is tried again with
//! every later write; the failure is reported until a write succeeds. A kind whose files must
//! change together ([`StoreKind::JOURNAL`]) writes a journal first when a write touches several.
//!
//! Region files are read only when they are regular files, never through a symbolic link, never
//! blocking on a FIFO, and never past their size cap. Every write goes through [`Fs`], the
//! file-system seam tests replace with one that fails.
//!
//! Without a directory the thread keeps the records in memory only (the game save carries them).
//!
//! The tick also keeps an index of the chunks that have a record (`handle.rs`), changed before each
//! write or replacement is sent: a worker asks the thread only for a chunk the index holds, so a
//! world with few edits costs the workers no message for the chunks without one (a LOD block
//! samples up to 4096 chunks).
//!
//! By concern: `error.rs` (why a directory cannot be used, a write that failed), `fs.rs` (the
//! `Fs` seam, the capped read that never follows a link, the atomic rewrite), `scan.rs` (reading
//! a directory's region files and the journal's images over them), `journal.rs` (its bytes),
//! `aside.rs` (keeping a damaged file aside), `lock.rs` (the directory's lock, shared by one
//! game's kits), `handle.rs` (the tick's [`Store`] and the workers' [`Reader`]), `owner.rs` (the
//! save thread itself).

mod aside;
mod error;
mod fs;
mod handle;
mod journal;
mod lock;
mod owner;
mod scan;
#[cfg(test)]
mod testing;

pub use aside::{aside_name, copy_aside, MAX_ASIDE_NAMES};
pub use error::{StoreError, WriteFailure};
pub use fs::{read_capped, write_atomic, Capped, FaultyFs, Fs, FsOp, RealFs};
pub(crate) use fs::{replace, Step, Temp, TEMP_NAMES};
pub use handle::{Outcome, Reader, Started, Store};
pub use journal::{decode_journal, encode_journal, JOURNAL_MAGIC, JOURNAL_VERSION};
pub use lock::{GameToken, GAME_TOKEN, LOCK_FILE};
pub use scan::{open_dir, read_dir, JournalState, Opened, RegionReport, Reported};

use super::frame::Kind;

/// What the save thread needs of a kind of region file beyond its framing: who it belongs to
/// (for messages and the thread's name), what damage falls back to, and whether its writes
/// that touch several files go through a journal.
pub trait StoreKind: Kind {
    /// The kit, for messages and the save thread's name (`world.terrain`).
    const KIT: &'static str;
    /// What a chunk whose record is damaged loads as ("the chunk loads as generated").
    const FALLBACK: &'static str;
    /// What to do about a region file of another stamp.
    const STAMP_HINT: &'static str;
    /// The journal's file name, for a kind whose files must change together: a write that
    /// rewrites several region files first writes every new image into the journal
    /// (atomically), then the files, then removes the journal; opening a directory with a
    /// journal takes the journal's images (a write killed midway is finished, never half
    /// done). `None`: each region file stands alone.
    const JOURNAL: Option<&'static str>;
    /// Whether a region file found damaged is rewritten (after it is kept aside) by the first
    /// write, whatever it changes: for a kind whose fallback must reach the directory at once
    /// (`false`: when one of its chunks is next written).
    const REWRITE_DAMAGED: bool;
}
