//! The region file framing (docs/reference/world-dir.md#region-files), pure: encoding and decoding,
//! no I/O. A region file holds the records of 32×32 chunk columns of one [`Kind`] (terrain's
//! modified chunks, a district's kept differences); the kind says what a record's payload and the
//! file's stamp are.
//!
//! ```text
//! region header   magic (the kind's), format version, flags, the kind's 24-byte stamp, the
//!                 region's coordinates, the table and free-list lengths
//! table           (local x, local z) → flags, offset, length; row order
//! free list       (offset, length) spans; written empty (every write compacts)
//! header CRC-32   of everything above
//! records         magic (the kind's), version, flags, stored and raw lengths, CRC-32 of the
//!                 payload, then the payload (the kind's serialization), LZ4-compressed when
//!                 smaller
//! ```
//!
//! Decoding never trusts a length: a damaged record is reported and skipped, the others are
//! kept; a damaged header falls back to scanning the file for records, each of which carries
//! its own chunk, stamp and checksum. Encoding is deterministic: no timestamps, sorted tables,
//! records in table order, so the same content gives the same bytes.
//!
//! This is `world.terrain`'s `region.rs` made generic (its functions moved here with their
//! names and checks): the terrain kind's bytes are unchanged.

use std::collections::BTreeMap;

use crate::grid::ChunkPos;

/// Chunk columns per region side.
pub const REGION_CHUNKS: i64 = 32;
/// The largest absolute region coordinate: the region of the grid's last chunk
/// ([`crate::grid::MAX_CHUNK_COORD`]). A region beyond it holds no chunk a game can have, and
/// its chunk arithmetic would overflow.
pub const MAX_REGION_COORD: i64 = crate::grid::MAX_CHUNK_COORD / REGION_CHUNKS;
/// Bytes of the fixed region header.
pub const HEADER_LEN: usize = 56;
/// Bytes of one table entry.
pub const TABLE_ENTRY_LEN: usize = 12;
/// Bytes of one free-list entry.
pub const FREE_ENTRY_LEN: usize = 8;
/// Bytes of a record header.
pub const RECORD_HEADER_LEN: usize = 20;
/// Record flag: the payload is LZ4-compressed (block format).
pub const FLAG_LZ4: u16 = 1;
/// Bytes of a kind's stamp in the region header (bytes 8..32).
pub const STAMP_LEN: usize = 24;

/// What a kind of region file holds: its magics and versions, its file names, its stamp (what
/// its records apply to) and its payload (one chunk's record).
pub trait Kind: 'static {
    /// What the records apply to (a generator and seed, district files): a record only
    /// applies to a world of the same stamp.
    type Stamp: Copy + std::fmt::Debug + std::fmt::Display + PartialEq + Send + 'static;
    /// One chunk's record.
    type Data: Clone + std::fmt::Debug + PartialEq + Send + 'static;
    /// Magic of a region file.
    const REGION_MAGIC: [u8; 4];
    /// Magic of a record.
    const RECORD_MAGIC: [u8; 4];
    /// The region format version this build writes and reads.
    const FORMAT_VERSION: u16;
    /// The record format version this build writes and reads.
    const RECORD_VERSION: u16;
    /// File names: `<PREFIX>.<x>.<z>.<EXTENSION>`.
    const PREFIX: &'static str;
    /// See [`Kind::PREFIX`].
    const EXTENSION: &'static str;
    /// The largest raw payload a record may claim.
    const MAX_RAW_PAYLOAD: usize;
    /// The largest region file this build reads.
    const MAX_FILE_LEN: u64;
    /// The stamp as the header holds it.
    fn stamp_bytes(stamp: &Self::Stamp) -> [u8; STAMP_LEN];
    /// The stamp a header holds.
    fn stamp_from(bytes: &[u8; STAMP_LEN]) -> Self::Stamp;
    /// The same stamp, bit for bit.
    fn same(a: &Self::Stamp, b: &Self::Stamp) -> bool;
    /// Whether a record changes nothing (it is not stored).
    fn is_empty(data: &Self::Data) -> bool;
    /// The serialized payload of one chunk's record.
    fn encode_payload(chunk: ChunkPos, stamp: Self::Stamp, data: &Self::Data) -> Vec<u8>;
    /// The chunk, stamp and record a raw payload holds, checked.
    fn decode_payload(raw: &[u8]) -> Result<(ChunkPos, Self::Stamp, Self::Data), String>;
}

/// A region: `floor(x / 32), floor(z / 32)` of its chunks. Ordered in row order (`z`, then
/// `x`), like chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegionPos {
    /// Region column.
    pub x: i64,
    /// Region row.
    pub z: i64,
}

impl Ord for RegionPos {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.z, self.x).cmp(&(other.z, other.x))
    }
}

impl PartialOrd for RegionPos {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl RegionPos {
    /// The region of `chunk` (`div_euclid`: negative chunks floor toward −∞).
    pub fn of(chunk: ChunkPos) -> RegionPos {
        RegionPos {
            x: chunk.x.div_euclid(REGION_CHUNKS),
            z: chunk.z.div_euclid(REGION_CHUNKS),
        }
    }

    /// Its first chunk (lowest x and z): where region-wide damage is reported.
    pub fn origin(self) -> ChunkPos {
        ChunkPos::new(self.x * REGION_CHUNKS, self.z * REGION_CHUNKS)
    }

    /// `r.<x>.<z>.wsr`: the name of a terrain region file (the first kind; see
    /// [`RegionPos::file_name_of`]).
    pub fn file_name(self) -> String {
        self.file_name_with("r", "wsr")
    }

    /// The region a terrain file name (`r.<x>.<z>.wsr`) names; none beyond
    /// [`MAX_REGION_COORD`].
    pub fn parse_file_name(name: &str) -> Option<RegionPos> {
        Self::parse_file_name_with(name, "r", "wsr")
    }

    /// Its file name of kind `K`.
    pub fn file_name_of<K: Kind>(self) -> String {
        self.file_name_with(K::PREFIX, K::EXTENSION)
    }

    /// The region a file name of kind `K` names.
    pub fn parse_file_name_of<K: Kind>(name: &str) -> Option<RegionPos> {
        Self::parse_file_name_with(name, K::PREFIX, K::EXTENSION)
    }

    fn file_name_with(self, prefix: &str, extension: &str) -> String {
        format!("{prefix}.{}.{}.{extension}", self.x, self.z)
    }

    fn parse_file_name_with(name: &str, prefix: &str, extension: &str) -> Option<RegionPos> {
        let rest = name
            .strip_prefix(prefix)?
            .strip_prefix('.')?
            .strip_suffix(extension)?
            .strip_suffix('.')?;
        let (x, z) = rest.split_once('.')?;
        let pos = RegionPos {
            x: x.parse().ok()?,
            z: z.parse().ok()?,
        };
        (pos.file_name_with(prefix, extension) == name && pos.in_grid()).then_some(pos)
    }

    /// Whether it holds chunks of the grid (|x|, |z| ≤ [`MAX_REGION_COORD`]).
    pub fn in_grid(self) -> bool {
        self.x.unsigned_abs() <= MAX_REGION_COORD as u64
            && self.z.unsigned_abs() <= MAX_REGION_COORD as u64
    }

    /// `chunk`'s `(local x, local z)` in this region, 0..32 each.
    fn local(self, chunk: ChunkPos) -> (u8, u8) {
        (
            chunk.x.rem_euclid(REGION_CHUNKS) as u8,
            chunk.z.rem_euclid(REGION_CHUNKS) as u8,
        )
    }

    fn chunk(self, lx: u8, lz: u8) -> ChunkPos {
        ChunkPos::new(
            self.x * REGION_CHUNKS + i64::from(lx),
            self.z * REGION_CHUNKS + i64::from(lz),
        )
    }
}

/// A region's content: its stamp and its chunks' records.
#[derive(Debug, Clone, PartialEq)]
pub struct Region<K: Kind> {
    /// The region.
    pub pos: RegionPos,
    /// What its records apply to.
    pub stamp: K::Stamp,
    /// The chunks' records, row order.
    pub chunks: BTreeMap<ChunkPos, K::Data>,
}

/// Something wrong in a region file. A decoder keeps going after each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Damage {
    /// The header, table or free list cannot be trusted; the records found by scanning the
    /// file were kept.
    #[error("bad region header: {0}")]
    Header(String),
    /// One chunk's record is damaged; the chunk falls back to its baseline.
    #[error("chunk {chunk}: bad record at byte {offset}: {message}")]
    Record {
        /// The chunk the table names.
        chunk: ChunkPos,
        /// Where its record starts.
        offset: u64,
        /// What is wrong.
        message: String,
    },
}

impl Damage {
    /// The chunk an error event names: the record's, or the region's origin.
    pub fn chunk(&self, region: RegionPos) -> ChunkPos {
        match self {
            Damage::Header(_) => region.origin(),
            Damage::Record { chunk, .. } => *chunk,
        }
    }
}

/// What decoding a region file found: every record it could trust, and every damage.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded<K: Kind> {
    /// The stamp of the header, if the header is sound.
    pub stamp: Option<K::Stamp>,
    /// The chunks read, each with the stamp its record carries.
    pub chunks: BTreeMap<ChunkPos, (K::Stamp, K::Data)>,
    /// Table entries read: `(chunk, offset, stored record length)`, for `world inspect`.
    pub entries: Vec<(ChunkPos, u64, u64)>,
    /// What is damaged.
    pub damage: Vec<Damage>,
}

/// Encodes a region file: header, table, empty free list, header CRC, records in table order.
pub fn encode<K: Kind>(region: &Region<K>) -> Vec<u8> {
    let records: Vec<(ChunkPos, Vec<u8>)> = region
        .chunks
        .iter()
        .map(|(c, d)| (*c, encode_record::<K>(*c, region.stamp, d)))
        .collect();
    let table_end = HEADER_LEN + TABLE_ENTRY_LEN * records.len();
    let mut out =
        Vec::with_capacity(table_end + 4 + records.iter().map(|r| r.1.len()).sum::<usize>());
    out.extend_from_slice(&K::REGION_MAGIC);
    out.extend_from_slice(&K::FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&K::stamp_bytes(&region.stamp));
    out.extend_from_slice(&region.pos.x.to_le_bytes());
    out.extend_from_slice(&region.pos.z.to_le_bytes());
    out.extend_from_slice(&(records.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // free-list entries
    debug_assert_eq!(out.len(), HEADER_LEN);
    let mut offset = table_end + 4;
    for (chunk, bytes) in &records {
        let (lx, lz) = region.pos.local(*chunk);
        out.push(lx);
        out.push(lz);
        out.extend_from_slice(&bytes[6..8]); // the record's flags
        out.extend_from_slice(&(offset as u32).to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        offset += bytes.len();
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    for (_, bytes) in records {
        out.extend_from_slice(&bytes);
    }
    out
}

/// Encodes one record: header, then the payload, LZ4-compressed when that is smaller.
pub fn encode_record<K: Kind>(chunk: ChunkPos, stamp: K::Stamp, data: &K::Data) -> Vec<u8> {
    let raw = K::encode_payload(chunk, stamp, data);
    let compressed = lz4_flex::block::compress(&raw);
    let (flags, stored) = if compressed.len() < raw.len() {
        (FLAG_LZ4, compressed)
    } else {
        (0, raw.clone())
    };
    let mut out = Vec::with_capacity(RECORD_HEADER_LEN + stored.len());
    out.extend_from_slice(&K::RECORD_MAGIC);
    out.extend_from_slice(&K::RECORD_VERSION.to_le_bytes());
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&(stored.len() as u32).to_le_bytes());
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&stored).to_le_bytes());
    out.extend_from_slice(&stored);
    out
}

/// Checks the 4-byte magic and the u16 version after it (a header or a record, `b` at least
/// 6 bytes): `what` names the version in the error.
fn magic_and_version(b: &[u8], magic: &[u8; 4], what: &str, version: u16) -> Result<(), String> {
    if b[..4] != *magic {
        let name = String::from_utf8_lossy(magic);
        return Err(format!("expected magic {name}, got {:02x?}", &b[..4]));
    }
    let found = u16_at(b, 4);
    if found != version {
        return Err(format!("{what} {found}, this build reads {version}"));
    }
    Ok(())
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decodes the record at `offset` (at most `len` bytes of it, if the table says so): its chunk,
/// stamp and record, and its total length.
pub fn decode_record<K: Kind>(
    bytes: &[u8],
    offset: usize,
    len: Option<usize>,
) -> Result<(ChunkPos, K::Stamp, K::Data, usize), String> {
    let rest = bytes.get(offset..).unwrap_or(&[]);
    let rest = match len {
        Some(len) if len > rest.len() => {
            return Err(format!(
                "the table says {len} bytes but the file ends {} bytes after it starts",
                rest.len()
            ))
        }
        Some(len) => &rest[..len],
        None => rest,
    };
    if rest.len() < RECORD_HEADER_LEN {
        return Err(format!(
            "a record header is {RECORD_HEADER_LEN} bytes, {} left",
            rest.len()
        ));
    }
    magic_and_version(rest, &K::RECORD_MAGIC, "record version", K::RECORD_VERSION)?;
    let flags = u16_at(rest, 6);
    if flags & !FLAG_LZ4 != 0 {
        return Err(format!("unknown record flags {flags:#06x}"));
    }
    let stored = u32_at(rest, 8) as usize;
    let raw_len = u32_at(rest, 12) as usize;
    let crc = u32_at(rest, 16);
    let total = RECORD_HEADER_LEN + stored;
    if stored > rest.len() - RECORD_HEADER_LEN || len.is_some_and(|l| l != total) {
        return Err(format!(
            "payload of {stored} bytes does not fit the record ({} bytes)",
            rest.len()
        ));
    }
    if raw_len > K::MAX_RAW_PAYLOAD {
        return Err(format!("payload claims {raw_len} bytes uncompressed"));
    }
    let payload = &rest[RECORD_HEADER_LEN..total];
    let actual = crc32fast::hash(payload);
    if actual != crc {
        return Err(format!(
            "CRC-32 mismatch: header says {crc:08x}, payload is {actual:08x}"
        ));
    }
    let raw = if flags & FLAG_LZ4 != 0 {
        let mut out = vec![0u8; raw_len];
        let n =
            lz4_flex::block::decompress_into(payload, &mut out).map_err(|e| format!("LZ4: {e}"))?;
        if n != raw_len {
            return Err(format!("LZ4 gave {n} bytes, the header says {raw_len}"));
        }
        out
    } else {
        if stored != raw_len {
            return Err(format!(
                "uncompressed payload of {stored} bytes, the header says {raw_len}"
            ));
        }
        payload.to_vec()
    };
    let (chunk, stamp, data) = K::decode_payload(&raw)?;
    Ok((chunk, stamp, data, total))
}

/// Checks a payload's chunk is in the grid (every kind's payload names its chunk).
pub fn check_chunk(x: i64, z: i64) -> Result<ChunkPos, String> {
    if x.unsigned_abs().max(z.unsigned_abs()) > crate::grid::MAX_CHUNK_COORD as u64 {
        return Err(format!("chunk ({x}, {z}) is outside the grid"));
    }
    Ok(ChunkPos::new(x, z))
}

/// Decodes a region file expected to be region `pos`. Never fails: what cannot be trusted is
/// listed in [`Decoded::damage`], every record that can is kept.
pub fn decode<K: Kind>(bytes: &[u8], pos: RegionPos) -> Decoded<K> {
    let mut out = Decoded {
        stamp: None,
        chunks: BTreeMap::new(),
        entries: Vec::new(),
        damage: Vec::new(),
    };
    match decode_header::<K>(bytes, pos) {
        Ok((stamp, table)) => {
            out.stamp = Some(stamp);
            for (chunk, offset, len) in table {
                out.entries.push((chunk, offset as u64, len as u64));
                let record =
                    decode_record::<K>(bytes, offset, Some(len)).and_then(|(c, s, data, _)| {
                        if c != chunk {
                            Err(format!("the record is chunk {c}, the table says {chunk}"))
                        } else if !K::same(&s, &stamp) {
                            Err(format!(
                                "the record's stamp ({s}) is not the region's ({stamp})"
                            ))
                        } else {
                            Ok(data)
                        }
                    });
                match record {
                    Ok(data) => {
                        out.chunks.insert(chunk, (stamp, data));
                    }
                    Err(message) => out.damage.push(Damage::Record {
                        chunk,
                        offset: offset as u64,
                        message,
                    }),
                }
            }
        }
        Err(message) => {
            // Records carry their own chunk, stamp and checksum: keep every sound one found.
            // Each candidate costs a checksum over the payload its header claims; a file full
            // of false headers could make that quadratic, so the scan checksums at most a few
            // times the file's size, then stops and says so.
            let mut budget = SCAN_BUDGET_FACTOR * bytes.len();
            let mut stopped = None;
            let mut at = 0;
            while at + RECORD_HEADER_LEN <= bytes.len() {
                if bytes[at..at + 4] == K::RECORD_MAGIC {
                    // Only a payload that fits in the file is checksummed.
                    let claimed = u32_at(bytes, at + 8) as usize;
                    if claimed <= bytes.len() - at - RECORD_HEADER_LEN {
                        if claimed > budget {
                            stopped = Some(at);
                            break;
                        }
                        budget -= claimed;
                    }
                    if let Ok((c, s, data, len)) = decode_record::<K>(bytes, at, None) {
                        if RegionPos::of(c) == pos {
                            out.entries.push((c, at as u64, len as u64));
                            out.chunks.insert(c, (s, data));
                            at += len;
                            continue;
                        }
                    }
                }
                at += 1;
            }
            out.damage.push(Damage::Header(match stopped {
                None => message,
                Some(at) => format!(
                    "{message}; the scan for records stopped at byte {at}: too many false \
                     record headers"
                ),
            }));
        }
    }
    out
}

/// How many times its own size a damaged file's scan for records may checksum.
pub const SCAN_BUDGET_FACTOR: usize = 4;

/// A table as read: `(chunk, offset, length)` in file order.
pub type Table = Vec<(ChunkPos, usize, usize)>;

/// The header's stamp and the table.
pub fn decode_header<K: Kind>(b: &[u8], pos: RegionPos) -> Result<(K::Stamp, Table), String> {
    if b.len() < HEADER_LEN + 4 {
        return Err(format!(
            "the file has {} bytes, a header needs {}",
            b.len(),
            HEADER_LEN + 4
        ));
    }
    magic_and_version(b, &K::REGION_MAGIC, "format version", K::FORMAT_VERSION)?;
    let entries = u32_at(b, 48) as usize;
    let free = u32_at(b, 52) as usize;
    if entries > (REGION_CHUNKS * REGION_CHUNKS) as usize {
        return Err(format!(
            "{entries} table entries, a region has at most 1024 chunks"
        ));
    }
    let crc_at =
        (HEADER_LEN + entries * TABLE_ENTRY_LEN) as u64 + free as u64 * FREE_ENTRY_LEN as u64;
    if crc_at + 4 > b.len() as u64 {
        return Err(format!(
            "{entries} table and {free} free-list entries do not fit in {} bytes",
            b.len()
        ));
    }
    let crc_at = crc_at as usize;
    let crc = u32_at(b, crc_at);
    let actual = crc32fast::hash(&b[..crc_at]);
    if crc != actual {
        return Err(format!(
            "CRC-32 mismatch: stored {crc:08x}, header is {actual:08x}"
        ));
    }
    let flags = u16_at(b, 6);
    if flags != 0 {
        return Err(format!("unknown region flags {flags:#06x}"));
    }
    let stamp = K::stamp_from(b[8..8 + STAMP_LEN].try_into().expect("24 bytes"));
    let (rx, rz) = (u64_at(b, 32) as i64, u64_at(b, 40) as i64);
    if (rx, rz) != (pos.x, pos.z) {
        return Err(format!(
            "the header says region ({rx}, {rz}), the file name says ({}, {})",
            pos.x, pos.z
        ));
    }
    if !pos.in_grid() {
        return Err(format!(
            "region ({rx}, {rz}) is outside the grid (|x|, |z| ≤ {MAX_REGION_COORD})"
        ));
    }
    let data_start = crc_at + 4;
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut table = Vec::with_capacity(entries);
    let mut seen = std::collections::BTreeSet::new();
    for k in 0..entries {
        let e = HEADER_LEN + k * TABLE_ENTRY_LEN;
        let (lx, lz) = (b[e], b[e + 1]);
        if i64::from(lx) >= REGION_CHUNKS
            || i64::from(lz) >= REGION_CHUNKS
            || !seen.insert((lz, lx))
        {
            return Err(format!(
                "table entry {k}: chunk ({lx}, {lz}) is outside the region or listed twice"
            ));
        }
        let offset = u32_at(b, e + 4) as usize;
        let len = u32_at(b, e + 8) as usize;
        if offset < data_start {
            return Err(format!(
                "table entry {k}: offset {offset} is inside the header"
            ));
        }
        spans.push((offset, offset.saturating_add(len)));
        table.push((pos.chunk(lx, lz), offset, len));
    }
    for k in 0..free {
        let e = HEADER_LEN + entries * TABLE_ENTRY_LEN + k * FREE_ENTRY_LEN;
        let offset = u32_at(b, e) as usize;
        let len = u32_at(b, e + 4) as usize;
        if offset < data_start {
            return Err(format!(
                "free-list entry {k}: offset {offset} is inside the header"
            ));
        }
        spans.push((offset, offset.saturating_add(len)));
    }
    spans.sort_unstable();
    if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(format!(
            "spans {}..{} and {}..{} overlap",
            w[0].0, w[0].1, w[1].0, w[1].1
        ));
    }
    Ok((stamp, table))
}
