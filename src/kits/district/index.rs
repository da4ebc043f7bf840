//! District files (SPEC §15), free of the host: one entity a line (JSON Lines), read once,
//! sequentially, and indexed by home chunk as file offsets, never as entities. A line is read
//! again (one seek, one read) when its chunk loads.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Seek, SeekFrom};

use rustc_hash::FxHashMap;

use crate::grid::{ChunkPos, Grid};
use crate::host::{check_data, Entity, EntityId};

/// FNV-1a, 64 bits, fed in pieces.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> u64 {
        let mut h = Fnv::default();
        h.update(bytes);
        h.0
    }
}

/// Where one line is: 16 bytes per district entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRef {
    /// Byte offset in its file.
    pub offset: u64,
    /// Length in bytes (no newline).
    pub len: u32,
    /// Its 1-based line number.
    pub line: u32,
}

/// A district file's stamp, recorded at first use: its length and FNV-1a 64 hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The file as configured.
    pub file: String,
    /// Its length in bytes.
    pub length: u64,
    /// FNV-1a 64 of its bytes.
    pub hash: u64,
}

/// Why a district file was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IndexError {
    /// A line that is not an entity, or a bad one.
    #[error("{file}: line {line}: {message}")]
    Line {
        /// The file.
        file: String,
        /// 1-based line.
        line: u32,
        /// What is wrong.
        message: String,
    },
    /// The file as a whole (missing, unreadable, not regular, too large).
    #[error("{file}: {message}")]
    File {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// Parses and checks one district line: the scene's entity shape plus an optional `data`
/// object of at most 4 KiB.
pub fn parse_line(bytes: &[u8]) -> Result<Entity, String> {
    let e: Entity = serde_json::from_slice(bytes).map_err(|e| {
        let m = e.to_string();
        // serde_json appends " at line L column C": the line is ours, the column is kept.
        match m.rfind(" at line ") {
            Some(i) => format!(
                "expected an entity {{id, tags?, position, rides?, data?}}: {}{}",
                &m[..i],
                m[i..]
                    .split_once(" column ")
                    .map(|(_, c)| format!(" (column {c})"))
                    .unwrap_or_default()
            ),
            None => format!("expected an entity {{id, tags?, position, rides?, data?}}: {m}"),
        }
    })?;
    crate::limits::check_name(e.id.as_str()).map_err(|m| format!("id: {m}"))?;
    for t in e.tags.iter() {
        crate::limits::check_name(t).map_err(|m| format!("tags: {m}"))?;
    }
    if let Some(r) = &e.rides {
        crate::limits::check_name(r.as_str()).map_err(|m| format!("rides: {m}"))?;
    }
    e.position
        .check()
        .map_err(|p| p.under("position").to_string())?;
    if let Some(d) = &e.data {
        check_data(d).map_err(|m| format!("data: {m}"))?;
    }
    Ok(e)
}

/// The hash an id is looked up by.
pub fn id_hash(id: &str) -> u64 {
    Fnv::of(id.as_bytes())
}

/// Every district line of a world, grouped by (scene, home chunk), each group in file order.
#[derive(Debug, Default)]
pub struct Index {
    /// Lines grouped by group, in (scene, chunk) order.
    lines: Vec<LineRef>,
    /// The file of each line.
    files: Vec<u16>,
    /// (scene, chunk) → the range of `lines`.
    groups: BTreeMap<(u16, ChunkPos), (u32, u32)>,
    /// (id hash, line index), sorted: is an id a district id.
    ids: Vec<(u64, u32)>,
    /// The first line index of each group and its chunk, ascending: a line's home.
    starts: Vec<(u32, ChunkPos)>,
    /// The files' stamps, in config order.
    pub stamps: Vec<Stamp>,
}

/// Builds an [`Index`]: files are added one by one; ids are checked unique across them.
pub struct Builder {
    grid: Grid,
    entries: Vec<(u16, ChunkPos, u16, LineRef, u64)>,
    seen: FxHashMap<EntityId, (u16, u32)>,
    stamps: Vec<Stamp>,
}

impl Builder {
    /// A builder for chunks of `grid`.
    pub fn new(grid: Grid) -> Self {
        Builder {
            grid,
            entries: Vec::new(),
            seen: FxHashMap::default(),
            stamps: Vec::new(),
        }
    }

    /// Reads district file `name` (the next file index) for scene `scene` from `reader`,
    /// refusing more than `cap` bytes. The first bad line is the error.
    pub fn add(
        &mut self,
        scene: u16,
        name: &str,
        reader: impl BufRead,
        cap: u64,
    ) -> Result<(), IndexError> {
        let file = u16::try_from(self.stamps.len()).map_err(|_| IndexError::File {
            file: name.to_owned(),
            message: "more than 65535 district files".into(),
        })?;
        let mut reader = reader.take(cap + 1);
        let mut hash = Fnv::default();
        let mut offset = 0u64;
        let mut buf = Vec::new();
        let mut line = 0u32;
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| IndexError::File {
                    file: name.to_owned(),
                    message: format!("cannot read: {e}"),
                })?;
            if n == 0 {
                break;
            }
            if offset + n as u64 > cap {
                return Err(IndexError::File {
                    file: name.to_owned(),
                    message: format!(
                        "the file is larger than the district file limit ({cap} bytes)"
                    ),
                });
            }
            hash.update(&buf);
            line += 1;
            let text = trim_newline(&buf);
            let at = offset;
            offset += n as u64;
            if text.iter().all(u8::is_ascii_whitespace) {
                continue; // blank lines (a trailing newline) carry nothing
            }
            let fail = |message: String| IndexError::Line {
                file: name.to_owned(),
                line,
                message,
            };
            let len = u32::try_from(text.len()).map_err(|_| fail("a line over 4 GiB".into()))?;
            let e = parse_line(text).map_err(fail)?;
            if let Some((f, l)) = self.seen.get(&e.id) {
                let other = &self
                    .stamps
                    .get(*f as usize)
                    .map_or(name, |s| s.file.as_str());
                return Err(fail(format!(
                    "duplicate entity id {:?}: {other} line {l} has it",
                    e.id.as_str()
                )));
            }
            let chunk = self.grid.chunk_of(e.position);
            let r = LineRef {
                offset: at,
                len,
                line,
            };
            self.entries
                .push((scene, chunk, file, r, id_hash(e.id.as_str())));
            self.seen.insert(e.id, (file, line));
        }
        self.stamps.push(Stamp {
            file: name.to_owned(),
            length: offset,
            hash: hash.0,
        });
        Ok(())
    }

    /// Where id `id` is, when a district line has it: `(file name, line)`.
    pub fn find(&self, id: &EntityId) -> Option<(&str, u32)> {
        self.seen
            .get(id)
            .map(|(f, l)| (self.stamps[*f as usize].file.as_str(), *l))
    }

    /// The index (the id table is dropped: only hashes are kept).
    pub fn finish(self) -> Index {
        let mut entries = self.entries;
        // Stable: each group keeps file order (files in config order, lines in line order).
        entries.sort_by_key(|(s, c, ..)| (*s, (c.z, c.x)));
        let mut index = Index {
            lines: Vec::with_capacity(entries.len()),
            files: Vec::with_capacity(entries.len()),
            groups: BTreeMap::new(),
            ids: Vec::with_capacity(entries.len()),
            starts: Vec::new(),
            stamps: self.stamps,
        };
        for (i, (scene, chunk, file, r, h)) in entries.into_iter().enumerate() {
            let i = i as u32;
            index
                .groups
                .entry((scene, chunk))
                .and_modify(|g| g.1 = i + 1)
                .or_insert((i, i + 1));
            index.lines.push(r);
            index.files.push(file);
            index.ids.push((h, i));
        }
        index.ids.sort_unstable();
        index.starts = index.groups.iter().map(|(k, g)| (g.0, k.1)).collect();
        index
    }
}

fn trim_newline(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}

impl Index {
    /// How many district entities.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The line indices homed in `chunk` of `scene`, in file order.
    pub fn group(&self, scene: u16, chunk: ChunkPos) -> std::ops::Range<u32> {
        self.groups
            .get(&(scene, chunk))
            .map_or(0..0, |&(a, b)| a..b)
    }

    /// The home chunk of line `i`.
    pub fn home(&self, i: u32) -> ChunkPos {
        let at = self.starts.partition_point(|(s, _)| *s <= i);
        self.starts[at.saturating_sub(1)].1
    }

    /// Line `i`: its file and where it is.
    pub fn line(&self, i: u32) -> (u16, LineRef) {
        (self.files[i as usize], self.lines[i as usize])
    }

    /// The line indices whose id hashes like `id` (usually none or one).
    pub fn candidates(&self, id: &str) -> impl Iterator<Item = u32> + '_ {
        let h = id_hash(id);
        let start = self.ids.partition_point(|(x, _)| *x < h);
        self.ids[start..]
            .iter()
            .take_while(move |(x, _)| *x == h)
            .map(|(_, i)| *i)
    }

    /// The bytes the index holds (for the benchmarks' bytes-per-entity).
    pub fn heap_bytes(&self) -> usize {
        self.lines.capacity() * std::mem::size_of::<LineRef>()
            + self.files.capacity() * 2
            + self.ids.capacity() * 16
            + self.groups.len() * 48
            + self.starts.capacity() * 24
    }
}

/// Reads line `r` of `file` (one seek, one read).
pub fn read_line<F: Read + Seek>(file: &mut F, r: LineRef) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(r.offset))?;
    let mut buf = vec![0; r.len as usize];
    file.read_exact(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_grouped_by_home_chunk_in_file_order() {
        let text = "{\"id\":\"a\",\"position\":{\"x\":40,\"z\":0}}\n\n{\"id\":\"b\",\"position\":{\"x\":1,\"z\":1}}\n{\"id\":\"c\",\"position\":{\"x\":33,\"z\":2}}\n";
        let mut b = Builder::new(Grid::new(32.0));
        b.add(0, "d.jsonl", text.as_bytes(), 1 << 20).unwrap();
        let index = b.finish();
        assert_eq!(index.len(), 3);
        let g = index.group(0, ChunkPos::new(1, 0));
        let lines: Vec<u32> = g.map(|i| index.line(i).1.line).collect();
        assert_eq!(lines, vec![1, 4]);
        assert_eq!(index.stamps[0].length, text.len() as u64);
        assert_eq!(index.candidates("b").count(), 1);
    }

    #[test]
    fn a_duplicate_id_names_both_lines() {
        let text = "{\"id\":\"a\",\"position\":{\"x\":0,\"z\":0}}\n{\"id\":\"a\",\"position\":{\"x\":1,\"z\":0}}\n";
        let mut b = Builder::new(Grid::new(32.0));
        let e = b.add(0, "d.jsonl", text.as_bytes(), 1 << 20).unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.jsonl: line 2: duplicate entity id \"a\": d.jsonl line 1 has it"
        );
    }

    #[test]
    fn a_file_over_its_cap_is_refused() {
        let text = "{\"id\":\"a\",\"position\":{\"x\":0,\"z\":0}}\n";
        let mut b = Builder::new(Grid::new(32.0));
        assert!(b.add(0, "d.jsonl", text.as_bytes(), 10).is_err());
    }
}
