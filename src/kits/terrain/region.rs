//! The terrain kind of region file (SPEC §13; byte tables in the book, "World files"): what a
//! `world.terrain` region file holds, the *modified* chunks of 32×32 chunk columns, each as its
//! difference from the generated baseline. The framing (header, table, records, checksums,
//! compression, the scan of a damaged file) is shared with every kind of region file and lives
//! in [`crate::worlddir::frame`]; this file gives it the terrain's stamp and payload.
//!
//! ```text
//! region header   magic "WSRG", format version, flags, the generator stamp, the region's
//!                 coordinates, the table and free-list lengths
//! table           (local x, local z) → flags, offset, length; row order
//! free list       (offset, length) spans; written empty (every write compacts)
//! header CRC-32   of everything above
//! records         magic "WSCK", version, flags, stored and raw lengths, CRC-32 of the payload,
//!                 then the payload: a postcard-serialized [`Diff`], LZ4-compressed when smaller
//! ```
//!
//! Decoding never trusts a length: a damaged record is reported and skipped, the others are
//! kept; a damaged header falls back to scanning the file for records, each of which carries
//! its own chunk, stamp and checksum. Encoding is deterministic: no timestamps, sorted tables,
//! records in table order, so the same edits give the same bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::grid::ChunkPos;
use crate::worlddir::frame::{self, Kind, STAMP_LEN};
pub use crate::worlddir::frame::{
    Damage, RegionPos, Table, FLAG_LZ4, FREE_ENTRY_LEN, HEADER_LEN, MAX_REGION_COORD,
    RECORD_HEADER_LEN, REGION_CHUNKS, TABLE_ENTRY_LEN,
};

/// Magic of a region file.
pub const REGION_MAGIC: [u8; 4] = *b"WSRG";
/// Magic of a chunk record.
pub const RECORD_MAGIC: [u8; 4] = *b"WSCK";
/// The region format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// The record format version this build writes and reads.
pub const RECORD_VERSION: u16 = 1;
/// The largest region file this build reads (a full region of 256×256-cell chunks, every cell
/// edited, is about 600 MiB; anything larger is not a region file).
pub const MAX_FILE_LEN: u64 = 1 << 30;

/// What generated the baseline that diffs are taken against: a diff only applies to chunks
/// generated the same way.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// [`super::GENERATOR_VERSION`].
    pub generator: u32,
    /// The world seed.
    pub seed: u64,
    /// Cells per chunk side.
    pub cells: u32,
    /// Chunk side in metres.
    pub chunk_size: f64,
}

impl Stamp {
    /// The same stamp, bit for bit (as `store::open_dir` compares them): `==` on the `f64` would
    /// make a NaN chunk size differ from itself and take `0.0` for `-0.0`.
    pub fn same(&self, other: &Stamp) -> bool {
        (
            self.generator,
            self.seed,
            self.cells,
            self.chunk_size.to_bits(),
        ) == (
            other.generator,
            other.seed,
            other.cells,
            other.chunk_size.to_bits(),
        )
    }
}

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "generator {}, seed {}, {} cells per chunk, chunk size {} m",
            self.generator, self.seed, self.cells, self.chunk_size
        )
    }
}

/// A modified chunk as stored: the cells that differ from the generated baseline, by cell index
/// (`j * cells + i`), each with its height and material.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Cell index → (height, material).
    pub cells: BTreeMap<u32, (u16, u8)>,
}

impl Diff {
    /// Whether it changes nothing (the chunk is not modified).
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// The serialized payload: the chunk, its stamp, and its cells with delta-coded indices
/// (postcard writes integers as varints, so a sparse diff stays small).
#[derive(Serialize, Deserialize)]
struct Payload {
    x: i64,
    z: i64,
    stamp: Stamp,
    /// `(index − previous index − 1, height, material)`; the first index is absolute.
    cells: Vec<(u32, u16, u8)>,
}

/// The terrain kind of region file: `r.<x>.<z>.wsr`, stamped with the generator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Terrain;

/// The largest raw payload a record may claim: every cell of a 256×256 chunk, at the varints'
/// widest, plus the chunk and stamp.
const MAX_RAW_PAYLOAD: usize = 65_536 * (5 + 3 + 1) + 64;

impl Kind for Terrain {
    type Stamp = Stamp;
    type Data = Diff;
    const REGION_MAGIC: [u8; 4] = REGION_MAGIC;
    const RECORD_MAGIC: [u8; 4] = RECORD_MAGIC;
    const FORMAT_VERSION: u16 = FORMAT_VERSION;
    const RECORD_VERSION: u16 = RECORD_VERSION;
    const PREFIX: &'static str = "r";
    const EXTENSION: &'static str = "wsr";
    const MAX_RAW_PAYLOAD: usize = MAX_RAW_PAYLOAD;
    const MAX_FILE_LEN: u64 = MAX_FILE_LEN;

    /// Generator u32, cells u32, seed u64, chunk size f64 (its bits), little-endian.
    fn stamp_bytes(stamp: &Stamp) -> [u8; STAMP_LEN] {
        let mut out = [0u8; STAMP_LEN];
        out[0..4].copy_from_slice(&stamp.generator.to_le_bytes());
        out[4..8].copy_from_slice(&stamp.cells.to_le_bytes());
        out[8..16].copy_from_slice(&stamp.seed.to_le_bytes());
        out[16..24].copy_from_slice(&stamp.chunk_size.to_le_bytes());
        out
    }

    fn stamp_from(b: &[u8; STAMP_LEN]) -> Stamp {
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        Stamp {
            generator: u32_at(0),
            cells: u32_at(4),
            seed: u64_at(8),
            chunk_size: f64::from_bits(u64_at(16)),
        }
    }

    fn same(a: &Stamp, b: &Stamp) -> bool {
        a.same(b)
    }

    fn is_empty(data: &Diff) -> bool {
        data.is_empty()
    }

    fn encode_payload(chunk: ChunkPos, stamp: Stamp, diff: &Diff) -> Vec<u8> {
        let mut previous: Option<u32> = None;
        let cells = diff
            .cells
            .iter()
            .map(|(&i, &(h, m))| {
                let delta = previous.map_or(i, |p| i - p - 1);
                previous = Some(i);
                (delta, h, m)
            })
            .collect();
        postcard::to_allocvec(&Payload {
            x: chunk.x,
            z: chunk.z,
            stamp,
            cells,
        })
        .expect("plain data serializes")
    }

    fn decode_payload(raw: &[u8]) -> Result<(ChunkPos, Stamp, Diff), String> {
        let (p, left): (Payload, &[u8]) =
            postcard::take_from_bytes(raw).map_err(|e| format!("payload: {e}"))?;
        if !left.is_empty() {
            return Err(format!("{} bytes after the payload", left.len()));
        }
        if p.x.unsigned_abs().max(p.z.unsigned_abs()) > crate::grid::MAX_CHUNK_COORD as u64 {
            return Err(format!("chunk ({}, {}) is outside the grid", p.x, p.z));
        }
        let cells_limit = u64::from(p.stamp.cells) * u64::from(p.stamp.cells);
        let mut diff = Diff::default();
        let mut next: u64 = 0;
        for (k, (delta, h, m)) in p.cells.iter().enumerate() {
            let index = next + u64::from(*delta);
            if index >= cells_limit {
                return Err(format!(
                    "cell {k}: index {index} is outside a {0}×{0} chunk",
                    p.stamp.cells
                ));
            }
            let Ok(cell) = u32::try_from(index) else {
                return Err(format!(
                    "cell {k}: index {index} is past the largest cell index, {}",
                    u32::MAX
                ));
            };
            diff.cells.insert(cell, (*h, *m));
            next = index + 1;
        }
        Ok((ChunkPos::new(p.x, p.z), p.stamp, diff))
    }
}

/// A terrain region's content: its stamp and its modified chunks.
pub type Region = frame::Region<Terrain>;

/// What decoding a terrain region file found.
pub type Decoded = frame::Decoded<Terrain>;

/// Encodes a region file: header, table, empty free list, header CRC, records in table order.
pub fn encode(region: &Region) -> Vec<u8> {
    frame::encode(region)
}

/// Encodes one record: header, then the payload, LZ4-compressed when that is smaller.
pub fn encode_record(chunk: ChunkPos, stamp: Stamp, diff: &Diff) -> Vec<u8> {
    frame::encode_record::<Terrain>(chunk, stamp, diff)
}

/// Decodes the record at `offset` (at most `len` bytes of it, if the table says so): its chunk,
/// stamp and diff, and its total length.
pub fn decode_record(
    bytes: &[u8],
    offset: usize,
    len: Option<usize>,
) -> Result<(ChunkPos, Stamp, Diff, usize), String> {
    frame::decode_record::<Terrain>(bytes, offset, len)
}

/// Decodes a region file expected to be region `pos`. Never fails: what cannot be trusted is
/// listed in [`Decoded::damage`], every record that can is kept.
pub fn decode(bytes: &[u8], pos: RegionPos) -> Decoded {
    frame::decode::<Terrain>(bytes, pos)
}

/// The header's stamp and the table.
#[cfg(test)]
fn decode_header(b: &[u8], pos: RegionPos) -> Result<(Stamp, Table), String> {
    frame::decode_header::<Terrain>(b, pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp() -> Stamp {
        Stamp {
            generator: 1,
            seed: 2026,
            cells: 32,
            chunk_size: 32.0,
        }
    }

    fn diff(cells: &[(u32, u16, u8)]) -> Diff {
        Diff {
            cells: cells.iter().map(|&(i, h, m)| (i, (h, m))).collect(),
        }
    }

    fn region() -> Region {
        let pos = RegionPos { x: -1, z: 0 };
        let mut chunks = BTreeMap::new();
        chunks.insert(ChunkPos::new(-1, 0), diff(&[(0, 1, 2)]));
        chunks.insert(ChunkPos::new(-32, 5), diff(&[(7, 65535, 4), (1023, 9, 0)]));
        // A big, compressible diff: a flattened chunk.
        chunks.insert(
            ChunkPos::new(-3, 31),
            diff(&(0..1024).map(|i| (i, 1000, 2)).collect::<Vec<_>>()),
        );
        Region {
            pos,
            stamp: stamp(),
            chunks,
        }
    }

    /// The cap on a record's claimed uncompressed length is exactly `MAX_RAW_PAYLOAD`: one byte
    /// over is refused by it, the cap itself is not (the record then fails later, on its
    /// length), and the largest real diff (every cell of a 256 × 256 chunk, the widest
    /// heights) is far below it and round-trips (cargo-mutants found the cap's arithmetic
    /// untested).
    #[test]
    fn the_claimed_uncompressed_length_is_capped_exactly_and_a_full_chunk_fits() {
        let full = Diff {
            cells: (0..65_536u32)
                .map(|i| (i, (u16::MAX - (i % 7) as u16, (i % 5) as u8)))
                .collect(),
        };
        let wide = Stamp {
            cells: 256,
            ..stamp()
        };
        let bytes = encode_record(ChunkPos::new(-3, 9), wide, &full);
        let (chunk, _, diff, len) = decode_record(&bytes, 0, None).unwrap();
        assert_eq!((chunk, len), (ChunkPos::new(-3, 9), bytes.len()));
        assert_eq!(diff, full);
        let claim = |raw: usize| {
            let mut b = bytes.clone();
            b[12..16].copy_from_slice(&(raw as u32).to_le_bytes());
            decode_record(&b, 0, None).unwrap_err()
        };
        let over = claim(MAX_RAW_PAYLOAD + 1);
        assert_eq!(
            over,
            format!("payload claims {} bytes uncompressed", MAX_RAW_PAYLOAD + 1)
        );
        let at = claim(MAX_RAW_PAYLOAD);
        assert!(!at.starts_with("payload claims"), "{at}");
        assert_eq!(MAX_RAW_PAYLOAD, 589_888);
    }

    /// Regions order in row order (`z`, then `x`), through `<` as through `cmp` (a mutant
    /// answering `None` from `partial_cmp` was missed by every other test).
    #[test]
    fn regions_order_in_row_order_through_both_comparisons() {
        let a = RegionPos { x: 5, z: -1 };
        let b = RegionPos { x: -5, z: 0 };
        let c = RegionPos { x: -4, z: 0 };
        assert!(a < b && b < c && a < c);
        assert_eq!(b.partial_cmp(&c), Some(std::cmp::Ordering::Less));
        assert_eq!(c.partial_cmp(&a), Some(std::cmp::Ordering::Greater));
        assert_eq!(a.partial_cmp(&a), Some(std::cmp::Ordering::Equal));
    }

    #[test]
    fn regions_floor_toward_negative_infinity_and_name_their_files() {
        assert_eq!(
            RegionPos::of(ChunkPos::new(-1, 31)),
            RegionPos { x: -1, z: 0 }
        );
        assert_eq!(
            RegionPos::of(ChunkPos::new(32, -33)),
            RegionPos { x: 1, z: -2 }
        );
        let p = RegionPos { x: -3, z: 12 };
        assert_eq!(p.file_name(), "r.-3.12.wsr");
        assert_eq!(RegionPos::parse_file_name("r.-3.12.wsr"), Some(p));
        for bad in [
            "r.1.wsr",
            "r.01.2.wsr",
            "r.1.2.wsr.tmp",
            "x.1.2.wsr",
            "r.+1.2.wsr",
        ] {
            assert_eq!(RegionPos::parse_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_region_round_trips_and_its_bytes_depend_only_on_its_content() {
        let r = region();
        let bytes = encode(&r);
        assert_eq!(bytes, encode(&r.clone()));
        let d = decode(&bytes, r.pos);
        assert_eq!(d.damage, vec![]);
        assert_eq!(d.stamp, Some(stamp()));
        let chunks: BTreeMap<ChunkPos, Diff> = d
            .chunks
            .into_iter()
            .map(|(c, (s, diff))| {
                assert_eq!(s, stamp());
                (c, diff)
            })
            .collect();
        assert_eq!(chunks, r.chunks);
        // Row order in the table.
        let order: Vec<ChunkPos> = d.entries.iter().map(|e| e.0).collect();
        assert_eq!(order, r.chunks.keys().copied().collect::<Vec<_>>());
    }

    #[test]
    fn a_one_cell_edit_is_a_small_record() {
        let record = encode_record(ChunkPos::new(3, 4), stamp(), &diff(&[(517, 40000, 3)]));
        assert!(record.len() < 100, "{} bytes", record.len());
        let file = encode(&Region {
            pos: RegionPos { x: 0, z: 0 },
            stamp: stamp(),
            chunks: [(ChunkPos::new(3, 4), diff(&[(517, 40000, 3)]))].into(),
        });
        assert_eq!(file.len(), HEADER_LEN + TABLE_ENTRY_LEN + 4 + record.len());
    }

    #[test]
    fn a_flipped_byte_in_a_record_loses_that_chunk_only() {
        let r = region();
        let bytes = encode(&r);
        let d = decode(&bytes, r.pos);
        let (victim, offset, _) = d.entries[1];
        let mut bad = bytes.clone();
        bad[offset as usize + RECORD_HEADER_LEN + 1] ^= 0x40;
        let d = decode(&bad, r.pos);
        assert_eq!(d.damage.len(), 1);
        assert!(
            matches!(&d.damage[0], Damage::Record { chunk, message, .. }
            if *chunk == victim && message.contains("CRC-32")),
            "{:?}",
            d.damage
        );
        assert_eq!(d.chunks.len(), 2);
        assert!(!d.chunks.contains_key(&victim));
    }

    #[test]
    fn a_truncated_file_keeps_the_records_before_the_cut() {
        let r = region();
        let bytes = encode(&r);
        let d = decode(&bytes, r.pos);
        let (last, offset, _) = *d.entries.last().unwrap();
        let cut = &bytes[..offset as usize + 10];
        let d = decode(cut, r.pos);
        assert_eq!(d.chunks.len(), 2);
        assert!(matches!(&d.damage[..], [Damage::Record { chunk, .. }] if *chunk == last));
        // Cut inside the header: every record is found by scanning... none are left here.
        let d = decode(&bytes[..20], r.pos);
        assert!(matches!(&d.damage[..], [Damage::Header(_)]));
        assert!(d.chunks.is_empty());
    }

    #[test]
    fn garbage_in_the_header_falls_back_to_scanning_for_records() {
        let r = region();
        let mut bytes = encode(&r);
        for b in &mut bytes[8..HEADER_LEN] {
            *b = 0xA5;
        }
        let d = decode(&bytes, r.pos);
        assert!(
            matches!(&d.damage[..], [Damage::Header(_)]),
            "{:?}",
            d.damage
        );
        let chunks: BTreeMap<ChunkPos, Diff> =
            d.chunks.into_iter().map(|(c, (_, x))| (c, x)).collect();
        assert_eq!(chunks, r.chunks);
        assert_eq!(d.damage[0].chunk(r.pos), ChunkPos::new(-32, 0));
    }

    #[test]
    fn a_file_of_another_region_or_version_is_damaged_not_trusted() {
        let r = region();
        let bytes = encode(&r);
        let d = decode(&bytes, RegionPos { x: 0, z: 0 });
        assert!(matches!(&d.damage[..], [Damage::Header(m)] if m.contains("file name")));
        assert!(
            d.chunks.is_empty(),
            "records of another region are not taken"
        );
        let mut v2 = bytes.clone();
        v2[4] = 2;
        let header = |b: &[u8]| decode_header(b, r.pos).map(|_| ()).unwrap_err();
        assert!(matches!(
            &decode(&v2, r.pos).damage[..],
            [Damage::Header(_)]
        ));
        assert_eq!(header(&v2), "format version 2, this build reads 1");
        let mut magic = bytes.clone();
        magic[0] = b'X';
        assert_eq!(header(&magic), "expected magic WSRG, got [58, 53, 52, 47]");
        // A record says the same of its own magic and version.
        let (_, at, _) = decode(&bytes, r.pos).entries[0];
        let record = |b: &[u8]| decode_record(b, at as usize, None).map(|_| ()).unwrap_err();
        let mut rv = bytes.clone();
        rv[at as usize + 4] = 7;
        assert_eq!(record(&rv), "record version 7, this build reads 1");
        let mut rm = bytes.clone();
        rm[at as usize] = b'X';
        assert_eq!(record(&rm), "expected magic WSCK, got [58, 53, 43, 4b]");
    }

    #[test]
    fn regions_and_chunks_beyond_the_grid_are_damage_not_an_overflow() {
        // A file name of a region no game has is not a region file (its origin would overflow).
        let far = RegionPos { x: i64::MAX, z: 0 };
        assert_eq!(RegionPos::parse_file_name(&far.file_name()), None);
        let edge = RegionPos {
            x: -MAX_REGION_COORD,
            z: MAX_REGION_COORD,
        };
        assert_eq!(RegionPos::parse_file_name(&edge.file_name()), Some(edge));
        assert_eq!(
            edge.origin(),
            ChunkPos::new(-crate::grid::MAX_CHUNK_COORD, crate::grid::MAX_CHUNK_COORD)
        );
        // A sound header naming such a region, decoded as that region: damage, no panic (the
        // table's chunks were computed with an overflowing multiplication).
        let mut r = region();
        r.pos = far;
        r.chunks = [(ChunkPos::new(i64::MAX, 3), diff(&[(1, 2, 3)]))].into();
        let d = decode(&encode(&r), far);
        assert!(
            matches!(&d.damage[..], [Damage::Header(m)] if m.contains("outside the grid")),
            "{:?}",
            d.damage
        );
        assert!(d.chunks.is_empty(), "{:?}", d.chunks);
        // A record of a chunk beyond the grid is damaged.
        let record = encode_record(ChunkPos::new(0, i64::MIN), stamp(), &diff(&[(1, 2, 3)]));
        let err = decode_record(&record, 0, None).unwrap_err();
        assert!(err.contains("outside the grid"), "{err}");
    }

    #[test]
    fn a_cell_index_past_u32_is_damage_not_truncated() {
        // 70000 cells per side: cells² > 2^32, so the delta coding can reach an index a Diff
        // cannot hold; it was truncated to `index as u32` (4294967301 became cell 5).
        let stamp = Stamp {
            cells: 70_000,
            ..stamp()
        };
        let raw = postcard::to_allocvec(&Payload {
            x: 1,
            z: 2,
            stamp,
            cells: vec![(u32::MAX, 1, 1), (5, 2, 2)],
        })
        .unwrap();
        let mut record = RECORD_MAGIC.to_vec();
        record.extend_from_slice(&RECORD_VERSION.to_le_bytes());
        record.extend_from_slice(&0u16.to_le_bytes());
        record.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        record.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        record.extend_from_slice(&crc32fast::hash(&raw).to_le_bytes());
        record.extend_from_slice(&raw);
        let err = decode_record(&record, 0, None).unwrap_err();
        assert!(err.contains("index 4294967301"), "{err}");
    }

    #[test]
    fn stamps_compare_bit_for_bit() {
        // A NaN chunk size made every record of its own region "not the region's stamp": the
        // region did not survive encode → decode.
        let mut r = region();
        r.stamp.chunk_size = f64::NAN;
        let d = decode(&encode(&r), r.pos);
        assert_eq!(d.damage, vec![]);
        assert_eq!(d.chunks.len(), 3);
        // And a record stamped -0.0 is not one of a region stamped 0.0.
        r.stamp.chunk_size = 0.0;
        let mut bytes = encode(&r);
        let (chunk, offset, len) = decode(&bytes, r.pos).entries[0];
        let record = encode_record(
            chunk,
            Stamp {
                chunk_size: -0.0,
                ..r.stamp
            },
            &r.chunks[&chunk],
        );
        assert_eq!(record.len() as u64, len);
        bytes[offset as usize..(offset + len) as usize].copy_from_slice(&record);
        let d = decode(&bytes, r.pos);
        assert!(
            matches!(&d.damage[..], [Damage::Record { message, .. }] if message.contains("stamp")),
            "{:?}",
            d.damage
        );
    }

    #[test]
    fn a_file_full_of_false_record_headers_is_scanned_in_linear_time() {
        // 40 000 false headers each claiming the rest of the file: without a bound the scan
        // would checksum ~16 GB; with it, at most 4× the file's 800 KB.
        let mut bytes = vec![0u8; 800_000];
        for at in (0..bytes.len() - RECORD_HEADER_LEN).step_by(RECORD_HEADER_LEN) {
            bytes[at..at + 4].copy_from_slice(&RECORD_MAGIC);
            bytes[at + 4..at + 6].copy_from_slice(&RECORD_VERSION.to_le_bytes());
            let rest = (bytes.len() - at - RECORD_HEADER_LEN) as u32;
            bytes[at + 8..at + 12].copy_from_slice(&rest.to_le_bytes());
            bytes[at + 12..at + 16].copy_from_slice(&10u32.to_le_bytes());
        }
        let d = decode(&bytes, RegionPos { x: 0, z: 0 });
        assert!(d.chunks.is_empty());
        assert!(
            d.damage
                .iter()
                .any(|x| x.to_string().contains("scan for records stopped")),
            "{:?}",
            d.damage
        );
    }

    #[test]
    fn hostile_lengths_never_panic_or_allocate_wildly() {
        let r = region();
        let bytes = encode(&r);
        let d = decode(&bytes, r.pos);
        let (_, offset, _) = d.entries[0];
        let o = offset as usize;
        for (at, value) in [(8, u32::MAX), (12, u32::MAX), (12, 0), (8, 0)] {
            let mut bad = bytes.clone();
            bad[o + at..o + at + 4].copy_from_slice(&value.to_le_bytes());
            let d = decode(&bad, r.pos);
            assert!(!d.damage.is_empty());
        }
        for n in 0..bytes.len() {
            let _ = decode(&bytes[..n], r.pos);
        }
    }
}
