//! Keeping a damaged file aside (`file.damaged`, `.damaged.1`, …) before it is replaced: a
//! regular file copied byte for byte, anything else renamed aside unread.

use std::path::Path;

use super::fs::{op, read_capped, write_atomic_with, Capped, Fs, RealFs};

/// How many `.damaged.N` names copy-aside tries before it gives up (and the write fails).
pub const MAX_ASIDE_NAMES: u32 = 1000;

/// The cap of a file copied aside (the largest region file any kind reads).
pub(super) const ASIDE_CAP: u64 = 1 << 30;

/// Keeps `dir/file` aside as `file.damaged` (or `.damaged.1`, … when that name holds other
/// bytes, or is not a regular file: a directory or link squatting a name is never read or
/// replaced). A regular file is copied byte for byte (the original stays until it is replaced);
/// anything else — a link, a FIFO, a directory, a file past the size cap — is renamed aside,
/// never read. Returns the name used, or `None` when there is no such file any more.
pub fn copy_aside(dir: &Path, file: &str) -> std::io::Result<Option<String>> {
    copy_aside_with(&RealFs, dir, file)
}

pub(crate) fn copy_aside_with(
    fs: &dyn Fs,
    dir: &Path,
    file: &str,
) -> std::io::Result<Option<String>> {
    let src = dir.join(file);
    let bytes = match read_capped(&src, ASIDE_CAP) {
        Ok(Capped::Bytes(b)) => Some(b),
        Ok(Capped::TooLarge | Capped::NotRegular(_)) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let (name, kept) = pick_aside(dir, file, bytes.as_deref())?;
    if !kept {
        match &bytes {
            Some(b) => write_atomic_with(fs, dir, &name, b)?,
            None => {
                let path = dir.join(&name);
                fs.rename(&src, &path).map_err(|e| op("rename", &src, e))?;
                fs.sync_dir(dir).map_err(|e| op("fsync", dir, e))?;
            }
        }
    }
    Ok(Some(name))
}

/// The name [`copy_aside`] keeps `dir/file` aside under, as the directory is now (the first
/// free of `file.damaged`, `.damaged.1`, …, or the one already holding the same bytes), for
/// the damage message told when the directory is opened; what went wrong, if no name is free.
pub fn aside_name(dir: &Path, file: &str) -> String {
    let bytes = match read_capped(&dir.join(file), ASIDE_CAP) {
        Ok(Capped::Bytes(b)) => Some(b),
        _ => None,
    };
    match pick_aside(dir, file, bytes.as_deref()) {
        Ok((name, _)) => name,
        Err(e) => format!("{file}.damaged ({e})"),
    }
}

/// The name to keep `file` (holding `bytes`, `None`: not to be read) aside under, and whether a
/// copy of those bytes is kept there already (an earlier copy whose rewrite failed).
fn pick_aside(dir: &Path, file: &str, bytes: Option<&[u8]>) -> std::io::Result<(String, bool)> {
    for n in 0..MAX_ASIDE_NAMES {
        let name = match n {
            0 => format!("{file}.damaged"),
            n => format!("{file}.damaged.{n}"),
        };
        let path = dir.join(&name);
        let taken = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((name, false)),
            Err(e) => return Err(e),
        };
        // Kept already: the same bytes, a regular file.
        if let (Some(b), true) = (bytes, taken.file_type().is_file()) {
            if read_capped(&path, b.len() as u64)? == Capped::Bytes(b.to_vec()) {
                return Ok((name, true));
            }
        }
    }
    Err(std::io::Error::other(format!(
        "keeping {file} aside: {file}.damaged and {file}.damaged.1 … .{} are all taken",
        MAX_ASIDE_NAMES - 1
    )))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use std::path::Path;
    use std::sync::Arc;

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

    #[test]
    fn the_damage_names_the_copy_the_file_is_kept_aside_as() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let message = |dir: &Path| {
            let dyn_fs: Arc<dyn Fs> = fs.clone();
            let (store, damage) =
                Store::<Test>::start_with(Some(dir.to_owned()), stamp(), dyn_fs).unwrap();
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
}
