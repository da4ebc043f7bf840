//! The district kind of region file (docs/reference/district.md#district-persistence; bytes in the
//! book, "World files"): a file kind of its own, `d.<x>.<z>.wsd`, in the framing
//! (docs/reference/world-dir.md#what-is-stored) ([`crate::worlddir::frame`]): one record per chunk
//! that is not as its district lines describe it, holding, per scene, what the chunk stores and the
//! live entities standing in it. Pure: no I/O.
//!
//! The stamp (24 bytes in the header): the payload format (u32), how many district files
//! (u32), FNV-1a 64 over their lengths and hashes (u64), and the chunk size (f64). A
//! record's payload is postcard: the chunk, the stamp, and the scenes in name order, each with
//! its `loaded` flag and its entries (a district line index, or an entity as compact JSON).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::index::{parse_line, Stamp as FileStamp};
use crate::grid::ChunkPos;
use crate::hash::Fnv1a64;
use crate::host::Entity;
use crate::worlddir::frame::{self, Kind, STAMP_LEN};
use crate::worlddir::store::StoreKind;

/// Magic of a district region file.
pub const REGION_MAGIC: [u8; 4] = *b"WSDR";
/// Magic of a district record.
pub const RECORD_MAGIC: [u8; 4] = *b"WSDC";
/// The payload format this build writes and reads (the stamp's first field). 2: the stamp's
/// hash covers each district file's scene (1 did not: such a directory is refused).
pub const PAYLOAD_FORMAT: u32 = 2;
/// The journal of the district files (a write that rewrites several region files).
pub const JOURNAL: &str = "district.journal";
/// The largest raw payload a record may claim (a chunk of about 14 000 entities of 4 KiB data).
pub const MAX_RAW_PAYLOAD: usize = 64 << 20;

/// The most entries a record may hold (over all its scenes): a world's most entities.
pub const MAX_RECORD_ENTRIES: usize = crate::limits::MAX_ENTITIES;

/// Entry flag: the entity was live when the record was written (stored entries have none).
pub const ENTRY_LIVE: u8 = 1;
/// Entry flag: an entity (its JSON), not a district line.
pub const ENTRY_ENTITY: u8 = 2;
/// Entry flag: the entity is a district entity (its `line` and `base` are meaningful).
pub const ENTRY_HAS_LINE: u8 = 4;

/// What district records apply to: the district files and the chunk size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DistrictStamp {
    /// [`PAYLOAD_FORMAT`].
    pub format: u32,
    /// How many district files.
    pub files: u32,
    /// FNV-1a 64 over each file's length and hash (u64 LE each), in config order.
    pub hash: u64,
    /// Chunk side in metres (it decides every line's home chunk).
    pub chunk_size: f64,
}

impl DistrictStamp {
    /// The stamp of these district files at this chunk size, `scenes` naming the scenes
    /// their `scene` indices are over.
    pub fn of(stamps: &[FileStamp], scenes: &[String], chunk_size: f64) -> DistrictStamp {
        let mut h = Fnv1a64::default();
        // Their content and the scene each belongs to, in config order, not their names: a
        // directory belongs to the same district files however the scene is reached
        // (`scene.json` or `/abs/scene.json`), and the line indices its records name are
        // over (scene, chunk, file) order, so files moved between scenes are other files.
        for s in stamps {
            let scene = scenes.get(s.scene as usize).map_or("", String::as_str);
            h.update(&(scene.len() as u64).to_le_bytes());
            h.update(scene.as_bytes());
            h.update(&s.length.to_le_bytes());
            h.update(&s.hash.to_le_bytes());
        }
        DistrictStamp {
            format: PAYLOAD_FORMAT,
            files: stamps.len() as u32,
            hash: h.0,
            chunk_size,
        }
    }
}

impl std::fmt::Display for DistrictStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "payload format {}, {} district files hashing {:016x}, chunk size {} m",
            self.format, self.files, self.hash, self.chunk_size
        )
    }
}

/// One stored entity of a kept difference (what a record's entry holds; the kit's state keeps
/// its kept differences as these too).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stored {
    /// Exactly as district line `i` describes it (in its home chunk).
    Line(u32),
    /// Anything else: its state, and its line and that line's hash when it is a district entity.
    Entity {
        line: Option<u32>,
        base: u64,
        entity: Box<Entity>,
    },
}

/// One entry of a scene's record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The entity was live (its chunk loaded, or it is never stored) when this was written: a
    /// game continuing from a save has it in its world already; a game started afresh on the
    /// directory brings it back as stored.
    pub live: bool,
    /// The entity.
    pub stored: Stored,
}

/// One scene's part of a chunk's record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SceneRecord {
    /// The chunk was loaded (in the scene streaming) when this was written: every entry is live.
    pub loaded: bool,
    /// Stored entries first (in stored order), then the live ones (in spawn order).
    pub entries: Vec<Entry>,
}

/// A chunk's record: its scenes that are not as their district lines describe them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkRecord {
    /// Scene id → its part.
    pub(crate) scenes: BTreeMap<String, SceneRecord>,
}

impl ChunkRecord {
    /// The entities it holds, over all its scenes (what `world inspect` lists).
    pub fn entities(&self) -> usize {
        self.scenes.values().map(|s| s.entries.len()).sum()
    }
}

#[derive(Serialize, Deserialize)]
struct PEntry {
    flags: u8,
    line: u32,
    base: u64,
    entity: String,
}

#[derive(Serialize, Deserialize)]
struct PScene {
    scene: String,
    loaded: bool,
    entries: Vec<PEntry>,
}

#[derive(Serialize, Deserialize)]
struct Payload {
    x: i64,
    z: i64,
    stamp: DistrictStamp,
    scenes: Vec<PScene>,
}

/// The district kind of region file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct District;

impl Kind for District {
    type Stamp = DistrictStamp;
    type Data = ChunkRecord;
    const REGION_MAGIC: [u8; 4] = REGION_MAGIC;
    const RECORD_MAGIC: [u8; 4] = RECORD_MAGIC;
    const FORMAT_VERSION: u16 = 1;
    const RECORD_VERSION: u16 = 1;
    const PREFIX: &'static str = "d";
    const EXTENSION: &'static str = "wsd";
    const MAX_RAW_PAYLOAD: usize = MAX_RAW_PAYLOAD;
    const MAX_FILE_LEN: u64 = 1 << 30;

    /// Format u32, files u32, hash u64, chunk size f64 (its bits), little-endian.
    fn stamp_bytes(s: &DistrictStamp) -> [u8; STAMP_LEN] {
        let mut out = [0u8; STAMP_LEN];
        out[0..4].copy_from_slice(&s.format.to_le_bytes());
        out[4..8].copy_from_slice(&s.files.to_le_bytes());
        out[8..16].copy_from_slice(&s.hash.to_le_bytes());
        out[16..24].copy_from_slice(&s.chunk_size.to_le_bytes());
        out
    }

    fn stamp_from(b: &[u8; STAMP_LEN]) -> DistrictStamp {
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        DistrictStamp {
            format: u32_at(0),
            files: u32_at(4),
            hash: u64_at(8),
            chunk_size: f64::from_bits(u64_at(16)),
        }
    }

    fn same(a: &DistrictStamp, b: &DistrictStamp) -> bool {
        (a.format, a.files, a.hash, a.chunk_size.to_bits())
            == (b.format, b.files, b.hash, b.chunk_size.to_bits())
    }

    fn is_empty(data: &ChunkRecord) -> bool {
        data.scenes.is_empty()
    }

    fn encode_payload(chunk: ChunkPos, stamp: DistrictStamp, data: &ChunkRecord) -> Vec<u8> {
        postcard::to_allocvec(&payload(chunk, stamp, data)).expect("plain data serializes")
    }

    fn decode_payload(raw: &[u8]) -> Result<(ChunkPos, DistrictStamp, ChunkRecord), String> {
        let (p, left): (Payload, &[u8]) =
            postcard::take_from_bytes(raw).map_err(|e| format!("payload: {e}"))?;
        if !left.is_empty() {
            return Err(format!("{} bytes after the payload", left.len()));
        }
        let chunk = frame::check_chunk(p.x, p.z)?;
        // Every entity once: no record holds more entries than a world holds entities, nor
        // names one district line or one entity id twice (a writer never writes that; taken
        // whole, it would spawn or store one entity many times).
        let total: usize = p.scenes.iter().map(|s| s.entries.len()).sum();
        if total > MAX_RECORD_ENTRIES {
            return Err(format!(
                "{total} entries, more than a world holds ({MAX_RECORD_ENTRIES})"
            ));
        }
        let mut lines = std::collections::BTreeSet::new();
        let mut ids = std::collections::BTreeSet::new();
        let mut record = ChunkRecord::default();
        for (k, s) in p.scenes.into_iter().enumerate() {
            let mut entries = Vec::with_capacity(s.entries.len());
            for (j, e) in s.entries.into_iter().enumerate() {
                let at = |m: String| format!("scene {k}, entry {j}: {m}");
                if e.flags & !(ENTRY_LIVE | ENTRY_ENTITY | ENTRY_HAS_LINE) != 0 {
                    return Err(at(format!("unknown entry flags {:#04x}", e.flags)));
                }
                let live = e.flags & ENTRY_LIVE != 0;
                if s.loaded && !live {
                    return Err(at("a loaded chunk stores nothing".into()));
                }
                let stored = if e.flags & ENTRY_ENTITY == 0 {
                    if e.flags & ENTRY_HAS_LINE != 0 || e.base != 0 || !e.entity.is_empty() {
                        return Err(at("a line entry with an entity's fields".into()));
                    }
                    Stored::Line(e.line)
                } else {
                    let entity = parse_line(e.entity.as_bytes()).map_err(at)?;
                    let has_line = e.flags & ENTRY_HAS_LINE != 0;
                    if !has_line && (e.line != 0 || e.base != 0) {
                        return Err(at("an entity of no district line with a line".into()));
                    }
                    Stored::Entity {
                        line: has_line.then_some(e.line),
                        base: e.base,
                        entity: Box::new(entity),
                    }
                };
                let once = match &stored {
                    Stored::Line(i) => lines.insert(*i),
                    Stored::Entity { line, entity, .. } => {
                        line.is_none_or(|i| lines.insert(i)) && ids.insert(entity.id.clone())
                    }
                };
                if !once {
                    return Err(at("a district line or entity id named twice".into()));
                }
                entries.push(Entry { live, stored });
            }
            let part = SceneRecord {
                loaded: s.loaded,
                entries,
            };
            if record.scenes.insert(s.scene.clone(), part).is_some() {
                return Err(format!("scene {:?} twice", s.scene));
            }
        }
        if record.scenes.is_empty() {
            return Err("a record of no scene".into());
        }
        Ok((chunk, p.stamp, record))
    }
}

fn payload(chunk: ChunkPos, stamp: DistrictStamp, data: &ChunkRecord) -> Payload {
    Payload {
        x: chunk.x,
        z: chunk.z,
        stamp,
        scenes: data
            .scenes
            .iter()
            .map(|(scene, s)| PScene {
                scene: scene.clone(),
                loaded: s.loaded,
                entries: s
                    .entries
                    .iter()
                    .map(|e| {
                        let live = if e.live { ENTRY_LIVE } else { 0 };
                        match &e.stored {
                            Stored::Line(i) => PEntry {
                                flags: live,
                                line: *i,
                                base: 0,
                                entity: String::new(),
                            },
                            Stored::Entity { line, base, entity } => PEntry {
                                flags: live
                                    | ENTRY_ENTITY
                                    | if line.is_some() { ENTRY_HAS_LINE } else { 0 },
                                line: line.unwrap_or(0),
                                base: if line.is_some() { *base } else { 0 },
                                entity: serde_json::to_string(entity).expect("entities are JSON"),
                            },
                        }
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// FNV-1a 64 of a whole image (every chunk's payload in row order): what a save with a world
/// directory records, and checks against the directory it loads.
pub(crate) fn digest(image: &BTreeMap<ChunkPos, ChunkRecord>, stamp: DistrictStamp) -> u64 {
    let mut h = Fnv1a64::default();
    for (c, r) in image {
        let bytes = District::encode_payload(*c, stamp, r);
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    h.0
}

impl StoreKind for District {
    const KIT: &'static str = "world.district";
    const FALLBACK: &'static str =
        "the chunk's entities load as their district files describe them";
    const STAMP_HINT: &'static str = "its differences belong to other district files (use \
                                      another worldDir, or the district files that wrote it)";
    const JOURNAL: Option<&'static str> = Some(JOURNAL);
    /// The fallback (the chunk's original entities) is what the game brings back: the
    /// directory is brought in step at the first write, the damaged file kept aside first.
    const REWRITE_DAMAGED: bool = true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worlddir::frame::{decode, encode, Damage, Region, RegionPos};

    fn stamp() -> DistrictStamp {
        DistrictStamp {
            format: PAYLOAD_FORMAT,
            files: 1,
            hash: 7,
            chunk_size: 32.0,
        }
    }

    fn entity(id: &str) -> Entity {
        serde_json::from_str(&format!(
            r#"{{"id":"{id}","tags":["crate"],"position":{{"x":1.5,"y":0,"z":-2}},"data":{{"hp":3}}}}"#
        ))
        .unwrap()
    }

    fn record() -> ChunkRecord {
        let mut r = ChunkRecord::default();
        r.scenes.insert(
            "town".into(),
            SceneRecord {
                loaded: false,
                entries: vec![
                    Entry {
                        live: false,
                        stored: Stored::Line(4),
                    },
                    Entry {
                        live: false,
                        stored: Stored::Entity {
                            line: Some(9),
                            base: 0xdead_beef,
                            entity: Box::new(entity("c9")),
                        },
                    },
                    Entry {
                        live: true,
                        stored: Stored::Entity {
                            line: None,
                            base: 0,
                            entity: Box::new(entity("spawned")),
                        },
                    },
                ],
            },
        );
        r.scenes.insert(
            "cave".into(),
            SceneRecord {
                loaded: true,
                entries: vec![],
            },
        );
        r
    }

    #[test]
    fn a_district_region_round_trips_with_its_own_magics_and_deterministic_bytes() {
        let pos = RegionPos { x: -1, z: 0 };
        let region = Region::<District> {
            pos,
            stamp: stamp(),
            chunks: [(ChunkPos::new(-3, 5), record())].into(),
        };
        let bytes = encode(&region);
        assert_eq!(&bytes[..4], b"WSDR");
        assert_eq!(bytes, encode(&region.clone()));
        let d = decode::<District>(&bytes, pos);
        assert_eq!(d.damage, vec![]);
        assert_eq!(d.chunks[&ChunkPos::new(-3, 5)].1, record());
        // A terrain decoder does not take it, nor the other way round.
        let t = decode::<crate::kits::terrain::region::Terrain>(&bytes, pos);
        assert!(matches!(&t.damage[..], [Damage::Header(m)] if m.contains("WSRG")));
        assert_eq!(pos.file_name_of::<District>(), "d.-1.0.wsd");
    }

    #[test]
    fn a_flipped_byte_in_a_district_record_is_damage_of_that_chunk() {
        let pos = RegionPos { x: 0, z: 0 };
        let region = Region::<District> {
            pos,
            stamp: stamp(),
            chunks: [
                (ChunkPos::new(1, 1), record()),
                (ChunkPos::new(2, 1), record()),
            ]
            .into(),
        };
        let mut bytes = encode(&region);
        let d = decode::<District>(&bytes, pos);
        let (victim, offset, _) = d.entries[0];
        bytes[offset as usize + frame::RECORD_HEADER_LEN + 2] ^= 0x10;
        let d = decode::<District>(&bytes, pos);
        assert!(
            matches!(&d.damage[..], [Damage::Record { chunk, message, .. }] if *chunk == victim && message.contains("CRC-32")),
            "{:?}",
            d.damage
        );
        assert_eq!(d.chunks.len(), 1);
    }

    #[test]
    fn payload_checks_refuse_what_a_writer_never_writes() {
        let c = ChunkPos::new(0, 0);
        let good = payload(c, stamp(), &record());
        let check = |edit: &dyn Fn(&mut Payload)| {
            let mut p = payload(c, stamp(), &record());
            edit(&mut p);
            District::decode_payload(&postcard::to_allocvec(&p).unwrap()).unwrap_err()
        };
        assert!(District::decode_payload(&postcard::to_allocvec(&good).unwrap()).is_ok());
        assert!(check(&|p| p.scenes[1].entries[0].flags = 0x80).contains("unknown entry flags"));
        assert!(check(&|p| p.scenes[1].loaded = true).contains("a loaded chunk stores nothing"));
        assert!(check(&|p| p.scenes[1].entries[0].base = 1).contains("a line entry"));
        assert!(
            check(&|p| p.scenes[1].entries[1].entity = "{".into()).contains("expected an entity")
        );
        assert!(check(&|p| p.scenes.clear()).contains("no scene"));
        assert!(check(&|p| p.scenes[1].scene = "cave".into()).contains("twice"));
        assert!(check(&|p| p.x = i64::MAX).contains("outside the grid"));
        // Every entity once: a line twice (in one scene or two), an entity id twice, too many.
        let twice = |p: &mut Payload| {
            let e = &p.scenes[1].entries[0];
            let copy = PEntry {
                entity: e.entity.clone(),
                ..*e
            };
            p.scenes[0].entries.push(copy);
        };
        assert!(check(&|p| {
            p.scenes[0].loaded = false;
            twice(p)
        })
        .contains("named twice"));
        assert!(check(&|p| {
            let e = &p.scenes[1].entries[2];
            let copy = PEntry {
                entity: e.entity.clone(),
                ..*e
            };
            p.scenes[1].entries.push(copy);
        })
        .contains("named twice"));
        assert!(check(&|p| {
            let e = &p.scenes[1].entries[1];
            let copy = PEntry {
                flags: 0,
                line: e.line,
                base: 0,
                entity: String::new(),
            };
            p.scenes[1].entries.push(copy);
        })
        .contains("named twice"));
        let many = |p: &mut Payload| {
            p.scenes[1].entries = (0..=MAX_RECORD_ENTRIES as u32)
                .map(|line| PEntry {
                    flags: 0,
                    line,
                    base: 0,
                    entity: String::new(),
                })
                .collect();
        };
        assert!(check(&many).contains("more than a world holds"));
    }
}
