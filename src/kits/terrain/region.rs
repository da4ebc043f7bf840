//! The terrain kind of region file (docs/reference/world-dir.md#region-files; byte tables in the
//! book, "World files"): what a `world.terrain` region file holds, the *modified* chunks of 32×32
//! chunk columns, each as its difference from the generated baseline. The framing (header, table,
//! records, checksums, compression, the scan of a damaged file) is shared with every kind of region
//! file and lives in [`crate::worlddir::frame`]; this file gives it the terrain's stamp and
//! payload.
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
    use crate::worlddir::frame::{u32_at, SCAN_BUDGET_FACTOR};

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

    /// A record's bounds are checked at their exact edges (cargo-mutants found each comparison
    /// untested): a slice one byte short of a header is refused as short, one exactly a header
    /// long is read as a header (and fails on its empty payload); a stored length one past the
    /// slice's end is refused with and without the table's length, and a table length that
    /// disagrees with the record's by one byte is refused even when the payload fits.
    #[test]
    fn a_record_is_bounded_exactly_at_its_header_its_payload_and_the_tables_length() {
        let bytes = encode_record(ChunkPos::new(2, -7), stamp(), &diff(&[(3, 4, 5)]));
        let short = decode_record(&bytes[..RECORD_HEADER_LEN - 1], 0, None).unwrap_err();
        assert_eq!(short, "a record header is 20 bytes, 19 left");
        // A header alone, claiming an empty payload with its (empty) checksum.
        let mut header = bytes[..RECORD_HEADER_LEN].to_vec();
        header[6..8].copy_from_slice(&0u16.to_le_bytes());
        header[8..12].copy_from_slice(&0u32.to_le_bytes());
        header[12..16].copy_from_slice(&0u32.to_le_bytes());
        header[16..20].copy_from_slice(&crc32fast::hash(&[]).to_le_bytes());
        let empty = decode_record(&header, 0, None).unwrap_err();
        assert!(empty.starts_with("payload: "), "{empty}");
        // The stored length one past the end: refused by the bound, not a slice panic.
        let stored = (bytes.len() - RECORD_HEADER_LEN) as u32;
        let mut over = bytes.clone();
        over[8..12].copy_from_slice(&(stored + 1).to_le_bytes());
        let fits = format!("payload of {} bytes does not fit the record", stored + 1);
        let e = decode_record(&over, 0, None).unwrap_err();
        assert!(e.starts_with(&fits), "{e}");
        let e = decode_record(&over, 0, Some(over.len())).unwrap_err();
        assert!(e.starts_with(&fits), "{e}");
        // The record is sound, but the table claims one byte more than it: damage.
        let mut padded = bytes.clone();
        padded.push(0);
        let e = decode_record(&padded, 0, Some(padded.len())).unwrap_err();
        assert!(e.starts_with(&format!("payload of {stored} bytes")), "{e}");
        assert_eq!(decode_record(&padded, 0, None).unwrap().3, bytes.len());
        assert_eq!(
            decode_record(&bytes, 0, Some(bytes.len())).unwrap().3,
            bytes.len()
        );
    }

    /// The grid's last chunk on each side is a chunk like any other; one past it is damage.
    #[test]
    fn a_record_of_a_chunk_at_the_grids_edge_is_read_and_one_past_it_is_damage() {
        let edge = crate::grid::MAX_CHUNK_COORD;
        for (x, z) in [(edge, -edge), (-edge, edge), (0, edge)] {
            let d = diff(&[(1, 2, 3)]);
            let record = encode_record(ChunkPos::new(x, z), stamp(), &d);
            let (chunk, _, read, _) = decode_record(&record, 0, None).unwrap();
            assert_eq!((chunk, &read), (ChunkPos::new(x, z), &d));
            let past = encode_record(ChunkPos::new(x, z + z.signum()), stamp(), &d);
            let err = decode_record(&past, 0, None).unwrap_err();
            assert!(err.contains("outside the grid"), "{err}");
        }
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

    /// A record header with the magic and version, no flags, claiming `claim` bytes (stored and
    /// raw) and a zero checksum: what a damaged file's scan must not trust.
    fn false_header(claim: usize) -> Vec<u8> {
        let mut h = RECORD_MAGIC.to_vec();
        h.extend_from_slice(&RECORD_VERSION.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(&(claim as u32).to_le_bytes());
        h.extend_from_slice(&(claim as u32).to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h
    }

    /// A damaged file's scan checksums at most 4× the file's length, and only payloads that fit
    /// in the file count against that budget (cargo-mutants found both untested): false record
    /// headers claiming three file-lengths that fit, or six claiming one byte more than is left,
    /// leave the budget enough to reach the sound record after them.
    #[test]
    fn the_scans_budget_is_four_file_lengths_of_payloads_that_fit() {
        let chunk = ChunkPos::new(-1, 0);
        let pos = RegionPos::of(chunk);
        let record = encode_record(chunk, stamp(), &diff(&[(9, 8, 7)]));
        let scan = |false_headers: usize, overrun: usize| {
            let gap = 10_000;
            let len = HEADER_LEN + RECORD_HEADER_LEN * false_headers + gap + record.len();
            let mut bytes = vec![0u8; HEADER_LEN];
            for _ in 0..false_headers {
                let at = bytes.len();
                let claim = len - at - RECORD_HEADER_LEN + overrun;
                bytes.extend_from_slice(&false_header(claim));
            }
            bytes.resize(len - record.len(), 0);
            bytes.extend_from_slice(&record);
            assert_eq!(bytes.len(), len);
            decode(&bytes, pos)
        };
        // Three claims that fit (to the file's last byte), about 3 file-lengths in all; six
        // claims each one byte past the end (never checksummed, never charged): the scan goes
        // on to the record.
        for (false_headers, overrun) in [(3, 0), (6, 1)] {
            let d = scan(false_headers, overrun);
            assert_eq!(d.chunks.keys().collect::<Vec<_>>(), [&chunk]);
            assert!(
                matches!(&d.damage[..], [Damage::Header(m)] if !m.contains("stopped")),
                "{false_headers} claims: {:?}",
                d.damage
            );
        }
        // Five claims that fit, past 4 file-lengths: the scan stops and says where.
        let d = scan(5, 0);
        assert!(d.chunks.is_empty(), "{:?}", d.chunks);
        assert!(
            matches!(&d.damage[..], [Damage::Header(m)] if m.contains("the scan for records stopped at byte")),
            "{:?}",
            d.damage
        );
    }

    /// Claims that spend the scan's budget to its last byte do not stop it: only a claim over
    /// what is left does (a sound record first, then false headers claiming, together with it,
    /// exactly 4 file-lengths).
    #[test]
    fn a_claim_of_exactly_the_budget_left_is_checksummed() {
        let chunk = ChunkPos::new(-1, 0);
        let record = encode_record(chunk, stamp(), &diff(&[(9, 8, 7)]));
        let len = 20_000;
        let mut left = SCAN_BUDGET_FACTOR * len - (record.len() - RECORD_HEADER_LEN);
        let mut bytes = vec![0u8; HEADER_LEN];
        bytes.extend_from_slice(&record);
        let mut last = (0, 0);
        while left > 0 {
            let claim = left.min(len - bytes.len() - RECORD_HEADER_LEN);
            left -= claim;
            last = (bytes.len(), claim);
            bytes.extend_from_slice(&false_header(claim));
        }
        bytes.resize(len, 0);
        let d = decode(&bytes, RegionPos::of(chunk));
        assert_eq!(d.chunks.keys().collect::<Vec<_>>(), [&chunk]);
        assert!(
            matches!(&d.damage[..], [Damage::Header(m)] if !m.contains("stopped")),
            "{:?}",
            d.damage
        );
        // One more byte of claims, and the scan stops at the last false header.
        let (at, claim) = last;
        assert!(
            claim < len - at - RECORD_HEADER_LEN,
            "the last claim can grow and still fit"
        );
        bytes[at + 8..at + 12].copy_from_slice(&(claim as u32 + 1).to_le_bytes());
        let d = decode(&bytes, RegionPos::of(chunk));
        assert!(
            matches!(&d.damage[..], [Damage::Header(m)] if m.ends_with(&format!("the scan for records stopped at byte {at}: too many false record headers"))),
            "{:?}",
            d.damage
        );
    }

    /// The header's bounds at their exact edges (cargo-mutants found each untested): an empty
    /// region is exactly a header and its checksum, a full region lists all 1 024 chunks.
    #[test]
    fn an_empty_and_a_full_region_are_read_whole() {
        let mut empty = region();
        empty.chunks.clear();
        let bytes = encode(&empty);
        assert_eq!(bytes.len(), HEADER_LEN + 4);
        let d = decode(&bytes, empty.pos);
        assert_eq!(
            (d.stamp, d.damage, d.chunks.len()),
            (Some(stamp()), vec![], 0)
        );

        let mut full = region();
        let origin = full.pos.origin();
        full.chunks = (0..REGION_CHUNKS * REGION_CHUNKS)
            .map(|k| {
                let c = ChunkPos::new(origin.x + k % REGION_CHUNKS, origin.z + k / REGION_CHUNKS);
                (c, diff(&[(k as u32, 1, 2)]))
            })
            .collect();
        let d = decode(&encode(&full), full.pos);
        assert_eq!(d.damage, vec![]);
        assert_eq!(d.chunks.len(), 1024);
        assert!(full.chunks.iter().all(|(c, diff)| d.chunks[c].1 == *diff));
    }

    /// A table entry outside the region (either coordinate 32) or listing a chunk twice makes
    /// the header damaged (then the records are found by the scan).
    #[test]
    fn a_table_entry_outside_the_region_or_listed_twice_is_header_damage() {
        let r = region();
        let plain = encode(&r);
        let table = |edit: &dyn Fn(&mut [u8])| {
            let mut b = plain.clone();
            edit(&mut b[HEADER_LEN..]);
            let crc_at = HEADER_LEN + r.chunks.len() * TABLE_ENTRY_LEN;
            let crc = crc32fast::hash(&b[..crc_at]);
            b[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
            let d = decode(&b, r.pos);
            assert_eq!(
                d.chunks.len(),
                r.chunks.len(),
                "the scan finds every record"
            );
            match &d.damage[..] {
                [Damage::Header(m)] => m.clone(),
                other => panic!("{other:?}"),
            }
        };
        let (lx, lz) = (plain[HEADER_LEN], plain[HEADER_LEN + 1]);
        let m = table(&|t| t[0] = 32);
        assert!(m.starts_with("table entry 0: chunk (32, "), "{m}");
        let m = table(&|t| t[1] = 32);
        assert!(
            m.ends_with(", 32) is outside the region or listed twice"),
            "{m}"
        );
        let m = table(&|t| {
            t[TABLE_ENTRY_LEN] = t[0];
            t[TABLE_ENTRY_LEN + 1] = t[1];
        });
        assert_eq!(
            m,
            format!("table entry 1: chunk ({lx}, {lz}) is outside the region or listed twice")
        );
    }

    /// A free list another writer left (this one writes none) is read entry by entry: the
    /// checksum is found after it, each span must start past the header, and no span may
    /// overlap another or a record (cargo-mutants found the free list untested). The file: the
    /// header, its table and two free entries, 16 free bytes, the records, 8 free bytes.
    #[test]
    fn a_free_list_is_read_entry_by_entry_and_its_spans_may_not_overlap() {
        let r = region();
        let plain = encode(&r);
        let entries = u32_at(&plain, 48) as usize;
        let table_end = HEADER_LEN + entries * TABLE_ENTRY_LEN;
        let data_start = table_end + 2 * FREE_ENTRY_LEN + 4;
        let records = &plain[table_end + 4..];
        let end = data_start + 16 + records.len();
        let file = |free: [(usize, usize); 2]| {
            let mut b = plain[..table_end].to_vec();
            b[52..56].copy_from_slice(&2u32.to_le_bytes());
            for k in 0..entries {
                let e = HEADER_LEN + k * TABLE_ENTRY_LEN + 4;
                let moved = u32_at(&b, e) as usize - (table_end + 4) + data_start + 16;
                b[e..e + 4].copy_from_slice(&(moved as u32).to_le_bytes());
            }
            for (offset, len) in free {
                b.extend_from_slice(&(offset as u32).to_le_bytes());
                b.extend_from_slice(&(len as u32).to_le_bytes());
            }
            let crc = crc32fast::hash(&b);
            b.extend_from_slice(&crc.to_le_bytes());
            b.extend_from_slice(&[0xEE; 16]);
            b.extend_from_slice(records);
            b.extend_from_slice(&[0xEE; 8]);
            assert_eq!(b.len(), end + 8);
            let d = decode(&b, r.pos);
            assert_eq!(d.chunks.len(), r.chunks.len());
            assert!(r.chunks.iter().all(|(c, diff)| d.chunks[c].1 == *diff));
            d.damage
        };
        assert_eq!(file([(data_start, 16), (end, 8)]), vec![]);
        assert_eq!(file([(end, 8), (data_start, 16)]), vec![]);
        let header = |m: &str| vec![Damage::Header(m.to_string())];
        let first = data_start + 16;
        let overlap = |a: usize, b: usize, c: usize, d: usize| {
            header(&format!("spans {a}..{b} and {c}..{d} overlap"))
        };
        assert_eq!(
            file([(data_start, 17), (end, 8)]),
            overlap(
                data_start,
                data_start + 17,
                first,
                first + u32_at(&plain, HEADER_LEN + 8) as usize
            )
        );
        let last = u32_at(&plain, table_end - 4) as usize;
        assert_eq!(
            file([(data_start, 16), (end - 1, 9)]),
            overlap(end - last, end, end - 1, end + 8)
        );
        assert_eq!(
            file([(data_start - 1, 16), (end, 8)]),
            header(&format!(
                "free-list entry 0: offset {} is inside the header",
                data_start - 1
            ))
        );
        assert_eq!(
            file([(data_start, 16), (data_start - 1, 1)]),
            header(&format!(
                "free-list entry 1: offset {} is inside the header",
                data_start - 1
            ))
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
