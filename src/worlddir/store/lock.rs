//! The world directory's lock: one game owns a directory (its kits share it), any other game,
//! in this process or another, is refused.

use std::collections::BTreeMap;
#[cfg(unix)]
use std::io::Write as _;
use std::path::Path;

#[cfg(unix)]
use super::fs::no_follow;
use super::StoreError;

/// The lock file of a world directory: whoever holds its advisory lock owns the directory.
pub const LOCK_FILE: &str = "session.lock";

/// The directories this process holds, by the directory's device and inode: which game holds
/// each (one owner per directory in the process: two games here, through the C ABI say, never
/// share one; the kits of one game do), how many of its stores, and the lock file's descriptor.
static HELD: std::sync::Mutex<BTreeMap<(u64, u64), Held>> = std::sync::Mutex::new(BTreeMap::new());

/// One held directory.
#[derive(Debug)]
struct Held {
    /// The game holding it ([`GameToken`]); `None`: a store of no game, never shared.
    #[cfg_attr(not(unix), allow(dead_code))]
    game: Option<u64>,
    /// Stores holding it.
    count: usize,
    /// The lock file, open (its record lock held) while any store holds the directory.
    _file: std::fs::File,
}

/// Who a game is, for the world directory's lock: the kits of one game (`world.terrain` and
/// `world.district` on the same `worldDir`) share the directory, any other game is refused.
/// The first kit to install registers one as the service [`GAME_TOKEN`].
#[derive(Debug)]
pub struct GameToken(pub(super) u64);

/// The service name of a game's [`GameToken`].
pub const GAME_TOKEN: &str = "world.dir.token";

impl GameToken {
    /// A token no other game has.
    pub fn new() -> GameToken {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        GameToken(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl Default for GameToken {
    fn default() -> Self {
        GameToken::new()
    }
}

/// The lock on a world directory: this process's claim in [`HELD`] and a POSIX record lock
/// (`fcntl` `F_SETLK`, a write lock over the whole of `session.lock`) that the OS releases when
/// the process dies. A record lock belongs to the process, not to the open file, so a child
/// forked by another thread (spawning a program) never holds it, not even between its fork and
/// its exec: with `flock` such a child kept the directory locked after the game that owned it
/// was gone. The price of record locks, that closing *any* descriptor of the file in this
/// process releases them, is paid by never opening `session.lock` anywhere else (reading a
/// directory does not touch it), by checking [`HELD`] before opening it, and by one descriptor
/// per directory however many stores of one game hold it. Released when the last is dropped.
#[derive(Debug)]
pub(super) struct Lock {
    key: (u64, u64),
}

impl Lock {
    /// Creates `dir` if needed and takes its lock (or shares it, for a store of the game that
    /// holds it), or says who holds it.
    #[cfg(unix)]
    pub(super) fn take<S>(dir: &Path, game: Option<u64>) -> Result<Lock, StoreError<S>> {
        use std::os::unix::fs::MetadataExt as _;
        let io = |message: String| StoreError::Io {
            dir: dir.to_owned(),
            message,
        };
        std::fs::create_dir_all(dir).map_err(|e| io(format!("cannot create it: {e}")))?;
        let path = dir.join(LOCK_FILE);
        let meta = std::fs::metadata(dir).map_err(|e| io(format!("cannot read it: {e}")))?;
        let key = (meta.dev(), meta.ino());
        let locked = || StoreError::Locked {
            dir: dir.to_owned(),
            lock: path.clone(),
        };
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.get_mut(&key) {
            if game.is_some() && h.game == game {
                h.count += 1;
                return Ok(Lock { key });
            }
            return Err(locked());
        }
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        no_follow(&mut options);
        let mut file = options
            .open(&path)
            .map_err(|e| io(format!("cannot open its lock file {LOCK_FILE}: {e}")))?;
        match rustix::fs::fcntl_lock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::ACCESS || e == rustix::io::Errno::AGAIN => {
                return Err(locked())
            }
            Err(e) => return Err(io(format!("cannot lock {LOCK_FILE}: {e}"))),
        }
        // For a person looking: which process holds it (never read back by the game).
        let _ = file
            .set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        held.insert(
            key,
            Held {
                game,
                count: 1,
                _file: file,
            },
        );
        Ok(Lock { key })
    }

    /// Without POSIX record locks (the wasm build, which has no file system and refuses a
    /// `worldDir` before any store is made: docs/reference/web.md#no-file-system) a directory
    /// cannot be locked, so it cannot be used: an error, never an unlocked directory.
    #[cfg(not(unix))]
    pub(super) fn take<S>(dir: &Path, _game: Option<u64>) -> Result<Lock, StoreError<S>> {
        Err(StoreError::Io {
            dir: dir.to_owned(),
            message: format!("cannot lock {LOCK_FILE}: this build has no POSIX record locks"),
        })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Under the registry's lock: the last store's drop closes the descriptor (which
        // releases the record lock) as it gives up the claim. Otherwise a take in between
        // would open and lock the file, and this close would then release that new owner's
        // lock (record locks are the process's).
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.get_mut(&self.key) {
            h.count -= 1;
            if h.count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use crate::grid::ChunkPos;

    #[test]
    fn one_store_owns_a_directory_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let world = dir.path().join("world");
        let (first, _) = Store::<Test>::start(Some(world.clone()), stamp()).unwrap();
        first.flush(image(1)).unwrap();
        let err = Store::<Test>::start(Some(world.clone()), stamp()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "world directory {} is in use by another game (lock file {} held)",
                world.display(),
                world.join("session.lock").display()
            )
        );
        // Reading needs no lock, and a store without a directory none.
        assert_eq!(read_dir::<Test>(&world).unwrap().len(), 1);
        assert!(Store::<Test>::start(None, stamp()).is_ok());
        drop(first);
        let (third, _) = Store::<Test>::start(Some(world.clone()), stamp()).unwrap();
        assert_eq!(third.read(ChunkPos::new(1, 2)), Some(diff(5, 1)));
        // The lock file says who holds it, for a person looking.
        let text = std::fs::read_to_string(world.join(LOCK_FILE)).unwrap();
        assert_eq!(text, format!("{}\n", std::process::id()));
    }
}
