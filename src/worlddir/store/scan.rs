//! Reading a world directory: every region file of a kind (damage listed, never followed through
//! a link), a journal's images taken over the files', the stamps checked; and the sweep of the
//! temporary files a killed write left.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::super::frame::{self, Damage, Kind, RegionPos};
use super::aside::{aside_name, ASIDE_CAP};
use super::fs::{read_capped, Capped, Fs};
use super::journal::decode_journal;
use super::{StoreError, StoreKind};
use crate::grid::ChunkPos;

/// One region file as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionReport<K: Kind> {
    /// The region.
    pub pos: RegionPos,
    /// Its file name.
    pub file: String,
    /// Its size in bytes (of the link itself for a link, as the file system reports it).
    pub len: u64,
    /// What it holds and what is damaged.
    pub decoded: frame::Decoded<K>,
}

/// Damage found when opening a directory, for the kit's error event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The chunk the event names (the record's, or the region's origin for a bad header).
    pub chunk: ChunkPos,
    /// What is wrong and what was done.
    pub message: String,
}

/// The journal as found when a directory was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JournalState {
    /// None.
    #[default]
    Absent,
    /// A sound journal: its images were taken, and it is removed once they are written.
    Pending,
    /// A damaged one: ignored, kept aside before it is replaced.
    Damaged,
}

/// What opening a directory gives: every sound record, and what was damaged.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened<K: Kind> {
    /// The stored records.
    pub chunks: BTreeMap<ChunkPos, K::Data>,
    /// The damage, region by region (row order of regions), in file order.
    pub damage: Vec<Reported>,
    /// The regions whose file is damaged: copied aside before they are rewritten.
    pub damaged: BTreeSet<RegionPos>,
    /// The regions whose image was taken from the journal: rewritten by the first write.
    pub replay: BTreeSet<RegionPos>,
    /// The journal found.
    pub journal: JournalState,
}

impl<K: Kind> Default for Opened<K> {
    fn default() -> Self {
        Opened {
            chunks: BTreeMap::new(),
            damage: Vec::new(),
            damaged: BTreeSet::new(),
            replay: BTreeSet::new(),
            journal: JournalState::Absent,
        }
    }
}

fn header_damage<K: Kind>(message: String) -> frame::Decoded<K> {
    frame::Decoded {
        stamp: None,
        chunks: BTreeMap::new(),
        entries: Vec::new(),
        damage: vec![Damage::Header(message)],
    }
}

/// Reads every region file of kind `K` in `dir` (files named `<prefix>.<x>.<z>.<extension>`;
/// others are ignored), in region order. Reading is all it does: no lock is taken, nothing is
/// created. A region name that is not a regular file (a symbolic link, a FIFO, a directory) is
/// not read: it is a damaged region.
pub fn read_dir<K: Kind>(dir: &Path) -> Result<Vec<RegionReport<K>>, StoreError<K::Stamp>> {
    let io = |e: std::io::Error| StoreError::Io {
        dir: dir.to_owned(),
        message: e.to_string(),
    };
    let mut regions = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pos) = RegionPos::parse_file_name_of::<K>(&name) {
            regions.insert(pos, name);
        }
    }
    let mut out = Vec::with_capacity(regions.len());
    for (pos, file) in regions {
        let path = dir.join(&file);
        let len = std::fs::symlink_metadata(&path).map_err(io)?.len();
        let decoded = match read_capped(&path, K::MAX_FILE_LEN).map_err(io)? {
            Capped::Bytes(bytes) => frame::decode::<K>(&bytes, pos),
            Capped::TooLarge => header_damage(format!(
                "{len} bytes: larger than any region file ({} bytes at most)",
                K::MAX_FILE_LEN
            )),
            Capped::NotRegular(kind) => header_damage(format!(
                "{kind}, not a regular file: not read (a region file is never followed or \
                 opened unless it is a regular file)"
            )),
        };
        out.push(RegionReport {
            pos,
            file,
            len,
            decoded,
        });
    }
    Ok(out)
}

/// Opens `dir` for a game whose records have `stamp`, reading only: reads every region (a
/// journal's images over the files'), refuses one of another stamp, lists the damage. A
/// directory that does not exist is an empty world.
pub fn open_dir<K: StoreKind>(
    dir: &Path,
    stamp: K::Stamp,
) -> Result<Opened<K>, StoreError<K::Stamp>> {
    if !dir.exists() {
        return Ok(Opened::default());
    }
    let mut opened = Opened::default();
    let mut reports = read_dir::<K>(dir)?;
    if let Some(name) = K::JOURNAL {
        let path = dir.join(name);
        let found = match read_capped(&path, ASIDE_CAP) {
            Ok(c) => Some(c),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(StoreError::Io {
                    dir: dir.to_owned(),
                    message: format!("cannot read {name}: {e}"),
                })
            }
        };
        let journal = found.map(|c| match c {
            Capped::Bytes(b) => decode_journal(&b),
            Capped::TooLarge => Err("larger than any journal".into()),
            Capped::NotRegular(kind) => Err(format!("{kind}, not a regular file: not read")),
        });
        match journal {
            None => {}
            Some(Err(message)) => {
                opened.journal = JournalState::Damaged;
                opened.damage.push(Reported {
                    chunk: ChunkPos::new(0, 0),
                    message: format!(
                        "{name}: {message}; ignored: the region files are as the last complete \
                         write left them (the journal is kept aside as {} before it is \
                         replaced)",
                        aside_name(dir, name)
                    ),
                });
            }
            Some(Ok(entries)) => {
                opened.journal = JournalState::Pending;
                for (file, image) in entries {
                    let Some(pos) = RegionPos::parse_file_name_of::<K>(&file) else {
                        continue;
                    };
                    let decoded = if image.is_empty() {
                        frame::Decoded {
                            stamp: Some(stamp),
                            chunks: BTreeMap::new(),
                            entries: Vec::new(),
                            damage: Vec::new(),
                        }
                    } else {
                        frame::decode::<K>(&image, pos)
                    };
                    opened.replay.insert(pos);
                    match reports.iter_mut().find(|r| r.pos == pos) {
                        Some(r) => {
                            // A damaged file the journal replaces is still kept aside.
                            if !r.decoded.damage.is_empty() {
                                opened.damaged.insert(pos);
                            }
                            r.decoded = decoded;
                        }
                        None => reports.push(RegionReport {
                            pos,
                            len: image.len() as u64,
                            file,
                            decoded,
                        }),
                    }
                }
                reports.sort_by_key(|r| r.pos);
            }
        }
    }
    for report in reports {
        let stamps = report
            .decoded
            .stamp
            .iter()
            .chain(report.decoded.chunks.values().map(|(s, _)| s));
        for found in stamps {
            if !K::same(found, &stamp) {
                return Err(StoreError::Stamp {
                    dir: dir.to_owned(),
                    file: report.file,
                    found: *found,
                    expected: stamp,
                    hint: K::STAMP_HINT,
                });
            }
        }
        if !report.decoded.damage.is_empty() {
            opened.damaged.insert(report.pos);
            let aside = aside_name(dir, &report.file);
            for d in &report.decoded.damage {
                // A bad header's file was scanned: the records found are kept, and only a
                // chunk whose record was not found falls back.
                let fallback = match d {
                    frame::Damage::Header(_) => format!(
                        "the records found by scanning are kept; for any other chunk of the \
                         region, {}",
                        K::FALLBACK
                    ),
                    frame::Damage::Record { .. } => K::FALLBACK.to_owned(),
                };
                opened.damage.push(Reported {
                    chunk: d.chunk(report.pos),
                    message: format!(
                        "{}: {d}; {fallback} (the file is kept aside as {aside} before it is \
                         rewritten)",
                        report.file,
                    ),
                });
            }
        }
        opened
            .chunks
            .extend(report.decoded.chunks.into_iter().map(|(c, (_, d))| (c, d)));
    }
    Ok(opened)
}

/// Removes the temporary files (`r.x.z.wsr.tmp`, `r.x.z.wsr.damaged….tmp`, and the kind's
/// journal's) a write killed midway left in `dir`; they are never read.
pub(super) fn remove_stale_temporaries<K: StoreKind>(fs: &dyn Fs, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let extension = format!(".{}", K::EXTENSION);
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".tmp") else {
            continue;
        };
        let journal =
            K::JOURNAL.is_some_and(|j| stem == j || stem.starts_with(&format!("{j}.damaged")));
        let region = stem
            .split_once(extension.as_str())
            .map(|(r, _)| format!("{r}{extension}"));
        if journal
            || region
                .as_deref()
                .and_then(RegionPos::parse_file_name_of::<K>)
                .is_some()
        {
            let _ = fs.remove_file(&entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::frame::{self, Damage, Region, RegionPos};
    use super::super::testing::*;
    use super::super::*;
    use crate::grid::ChunkPos;
    use std::sync::Arc;

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
        let reports = read_dir::<Test>(dir.path()).unwrap();
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
            Store::<Test>::start_with(Some(dir.path().to_owned()), stamp(), dyn_fs).unwrap();
        assert_eq!(damage.len(), 4);
        let changes = (0..4)
            .map(|x| (ChunkPos::new(32 * x, 0), Some(diff(1, 1))))
            .collect();
        store.flush(changes).unwrap();
        for x in 0..4 {
            let pos = RegionPos { x, z: 0 };
            let path = dir.path().join(file(pos));
            assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
            assert!(
                std::fs::symlink_metadata(dir.path().join(format!("{}.damaged", file(pos))))
                    .is_ok()
            );
        }
        assert_eq!(std::fs::read(outside.path().join("f")).unwrap(), b"outside");
    }

    #[test]
    fn reading_a_directory_creates_no_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(
            dir.path(),
            "r.0.0.wsr",
            &frame::encode::<Test>(&Region {
                pos: R,
                stamp: stamp(),
                chunks: as_map(&image(1)),
            }),
        )
        .unwrap();
        assert_eq!(read_dir::<Test>(dir.path()).unwrap().len(), 1);
        assert_eq!(
            open_dir::<Test>(dir.path(), stamp()).unwrap().chunks,
            as_map(&image(1))
        );
        assert_eq!(names(dir.path()), ["r.0.0.wsr".to_owned()].into());
    }

    #[test]
    fn a_bad_header_says_its_records_found_by_scanning_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultyFs::default());
        let store = start(dir.path(), &fs);
        store.flush(image(7)).unwrap();
        drop(store);
        let path = dir.path().join(file(R));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8] ^= 0xff; // inside the header, past the magic
        std::fs::write(&path, &bytes).unwrap();
        let dyn_fs: Arc<dyn Fs> = fs.clone();
        let (store, damage) =
            Store::<Test>::start_with(Some(dir.path().to_owned()), stamp(), dyn_fs).unwrap();
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
}
