//! District files (docs/reference/district.md#district-files), free of the host: one entity a line
//! (JSON Lines), read once, sequentially, and indexed by home chunk as file offsets, never as
//! entities. A line is read again (one seek, one read) when its chunk loads.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Seek, SeekFrom};

use rustc_hash::FxHashMap;

use crate::grid::{ChunkPos, Grid};
use crate::hash::Fnv1a64;
use crate::host::{check_data, Entity};

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
    /// The scene it is a district of (an index over the scene file's scenes).
    pub scene: u16,
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
    /// A file that could not be opened (the message names it).
    #[error("{0}")]
    Open(String),
    /// More errors than are told.
    #[error("… and {0} more")]
    More(usize),
}

/// The most errors [`Builder::finish`] tells (docs/reference/files-and-cli.md#check: `check` tells
/// every error found; a file of a million bad lines is told by its first ones and a count).
pub const MAX_ERRORS: usize = 20;

/// Parses and checks one district line (without its newline): at most
/// [`crate::limits::MAX_DISTRICT_LINE_BYTES`], the scene's entity shape plus an optional `data`
/// object of at most 4 KiB.
pub fn parse_line(bytes: &[u8]) -> Result<Entity, String> {
    if bytes.len() > crate::limits::MAX_DISTRICT_LINE_BYTES {
        return Err(line_too_long(bytes.len() as u64));
    }
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

/// A district line's shape as the index needs it, borrowed from the line: its id, tags and
/// `rides` as slices of the text (when they have no escapes), its position. Field for field the
/// shape of [`Entity`] (`deny_unknown_fields`, the same names and defaults), so a line is
/// accepted here exactly when [`parse_line`] accepts it; `data`, rare and at most 4 KiB, is
/// parsed in full to measure its compact size.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(default)]
    #[allow(dead_code)] // checked while read
    tags: TagNames,
    position: crate::grid::Position,
    #[serde(default, borrow)]
    rides: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    data: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A line's tags, each checked as it is read and none kept.
#[derive(Default)]
struct TagNames;

impl<'de> serde::Deserialize<'de> for TagNames {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = TagNames;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of tags (strings)")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<TagNames, A::Error> {
                while let Some(t) = seq.next_element::<std::borrow::Cow<'de, str>>()? {
                    crate::limits::check_name(&t).map_err(serde::de::Error::custom)?;
                }
                Ok(TagNames)
            }
        }
        d.deserialize_seq(V)
    }
}

/// What the index keeps of a checked line: its id and its position (and, for the check of
/// `rides` loops at start, what it rides).
pub struct Checked<'a> {
    /// The id (borrowed from the line when it has no escapes).
    pub id: std::borrow::Cow<'a, str>,
    /// The position.
    pub position: crate::grid::Position,
    /// The entity it rides, if any.
    pub rides: Option<std::borrow::Cow<'a, str>>,
}

/// Checks one district line as [`parse_line`] does, without building the entity: no
/// allocation for a line without escapes or `data`. The error is [`parse_line`]'s own message.
pub fn check_line(bytes: &[u8]) -> Result<Checked<'_>, String> {
    let fast = (|| {
        let s: Shape<'_> = serde_json::from_slice(bytes).ok()?;
        crate::limits::check_name(&s.id).ok()?;
        if let Some(r) = &s.rides {
            crate::limits::check_name(r).ok()?;
        }
        s.position.check().ok()?;
        if let Some(d) = &s.data {
            check_data(d).ok()?;
        }
        Some(Checked {
            id: s.id,
            position: s.position,
            rides: s.rides,
        })
    })();
    match fast {
        Some(c) => Ok(c),
        // A bad line: the full parse names what is wrong (it refuses what the shape refused).
        None => match parse_line(bytes) {
            Err(m) => Err(m),
            Ok(_) => Err("expected an entity {id, tags?, position, rides?, data?}".into()),
        },
    }
}

/// An entity's home (docs/reference/district.md#home-chunks-and-the-index): the chunk of its
/// position; with `vertical` on (`height`), the section of it, the 3-D chunk
/// (docs/reference/district.md#homes-in-a-vertical-world).
pub fn home_of(grid: &Grid, height: Option<f64>, pos: crate::grid::Position) -> ChunkPos {
    match height {
        Some(h) => grid.section_of(pos, h),
        None => grid.chunk_of(pos),
    }
}

/// The hash an id is looked up by.
pub fn id_hash(id: &str) -> u64 {
    Fnv1a64::of(id.as_bytes())
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
///
/// Memory: a district file is streamed, one line at a time (a line is held only up to
/// [`crate::limits::MAX_DISTRICT_LINE_BYTES`]; the rest of a longer one is counted, never
/// kept), and what is kept per line while reading is its place (16 bytes), its group (4 bytes,
/// the (scene, home chunk) as a number) and its id (its bytes end to end in one buffer, and
/// where it ends: 8 bytes); the id hashes (16 bytes a line with the line's index) are made when
/// the last file is read, and the ids dropped before the lines are grouped.
///
/// Uniqueness is checked by sorting, not by a map: a sort of (id hash, line) pairs, which the
/// index needs anyway, brings equal ids together (ids whose hashes collide, as a crafted file
/// can make FNV's, are told apart by their bytes). The error is the one reading line by line
/// would give: the first line, in file and line order, whose id an earlier line has, naming that
/// earlier line (or, when a line that is not an entity comes first, that line).
pub struct Builder {
    grid: Grid,
    /// With `vertical` on, the section height: homes are sections
    /// (docs/reference/district.md#homes-in-a-vertical-world).
    height: Option<f64>,
    /// Every line read, in reading order (files in config order, each in line order).
    lines: Vec<LineRef>,
    /// The group of each line: its (scene, home chunk) as a number of `keys`.
    group_of: Vec<u32>,
    /// Each (scene, home chunk) met, with its number; and the last one asked for.
    keys: FxHashMap<(u16, ChunkPos), u32>,
    last: Option<((u16, ChunkPos), u32)>,
    /// Each group's lines so far: how many, and their bytes.
    sizes: Vec<(u32, u64)>,
    /// The groups with lines past the most a chunk may be home to: the place of the error told
    /// for the first of them (when kept), and how many there are.
    over: BTreeMap<u32, (Option<usize>, u64)>,
    /// The first line of each file (by its index, that of its stamp).
    file_starts: Vec<u32>,
    /// Every id read so far, end to end (dropped by [`Builder::finish`]); line `i`'s id ends at
    /// `id_ends[i]` and starts where line `i - 1`'s ends.
    arena: Vec<u8>,
    id_ends: Vec<u64>,
    stamps: Vec<Stamp>,
    /// The lines that ride, with the id they ride (dropped by [`Builder::finish`]).
    rides: Vec<(u32, Box<str>)>,
    /// The errors found so far, each with its file and line (`u32::MAX`: the file as a whole),
    /// at most [`MAX_ERRORS`] + 1 of them; `more` counts the rest.
    errors: Vec<(u16, u32, IndexError)>,
    more: usize,
    /// As if every id hashed alike (a crafted file can make FNV collide): the tests' seam.
    #[cfg(test)]
    collide: bool,
}

impl Builder {
    /// A builder for chunks of `grid`.
    pub fn new(grid: Grid) -> Self {
        Builder {
            grid,
            height: None,
            lines: Vec::new(),
            group_of: Vec::new(),
            keys: FxHashMap::default(),
            last: None,
            sizes: Vec::new(),
            over: BTreeMap::new(),
            file_starts: Vec::new(),
            arena: Vec::new(),
            id_ends: Vec::new(),
            stamps: Vec::new(),
            rides: Vec::new(),
            errors: Vec::new(),
            more: 0,
            #[cfg(test)]
            collide: false,
        }
    }

    /// Homes are sections of `height` (`vertical` on) rather than chunks
    /// (docs/reference/district.md#homes-in-a-vertical-world).
    pub fn vertical(mut self, height: Option<f64>) -> Self {
        self.height = height;
        self
    }

    /// Keeps error `e` of file `file` at `line`.
    fn error(&mut self, file: u16, line: u32, e: IndexError) {
        if self.errors.len() <= MAX_ERRORS {
            self.errors.push((file, line, e));
        } else {
            self.more += 1;
        }
    }

    /// District file `name` (the next file index) could not be opened: `message` says why.
    pub fn file_error(&mut self, scene: u16, name: &str, message: String) {
        let file = self.stamps.len().min(usize::from(u16::MAX)) as u16;
        self.file_starts.push(self.lines.len() as u32);
        self.stamps.push(Stamp {
            file: name.to_owned(),
            scene,
            length: 0,
            hash: 0,
        });
        self.error(file, u32::MAX, IndexError::Open(message));
    }

    /// The id of line `i`.
    fn id_of(&self, i: u32) -> &[u8] {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.id_ends[i - 1] };
        &self.arena[start as usize..self.id_ends[i] as usize]
    }

    /// The hash of line `i`'s id.
    fn hash_of(&self, i: u32) -> u64 {
        #[cfg(test)]
        if self.collide {
            return 7;
        }
        Fnv1a64::of(self.id_of(i))
    }

    /// The file of line `i`.
    fn file_of(&self, i: u32) -> u16 {
        (self.file_starts.partition_point(|s| *s <= i) - 1) as u16
    }

    /// The number of group (`scene`, `chunk`).
    fn group(&mut self, scene: u16, chunk: ChunkPos) -> u32 {
        let key = (scene, chunk);
        match self.last {
            Some((k, g)) if k == key => g,
            _ => {
                let next = self.keys.len() as u32;
                let g = *self.keys.entry(key).or_insert(next);
                if g == next {
                    self.sizes.push((0, 0));
                }
                self.last = Some((key, g));
                g
            }
        }
    }

    /// The (id hash, line) pairs, sorted.
    fn sorted_ids(&self) -> Vec<(u64, u32)> {
        let mut ids: Vec<(u64, u32)> = (0..self.lines.len() as u32)
            .map(|i| (self.hash_of(i), i))
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Every line (in reading order) whose id an earlier line has, with the first line that
    /// has it; `sorted` from [`Builder::sorted_ids`].
    fn duplicates(&self, sorted: &[(u64, u32)]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < sorted.len() {
            let mut end = at + 1;
            while end < sorted.len() && sorted[end].0 == sorted[at].0 {
                end += 1;
            }
            if end - at > 1 {
                // Equal hashes: equal ids side by side, each id's lines in reading order.
                let mut run: Vec<u32> = sorted[at..end].iter().map(|(_, i)| *i).collect();
                run.sort_by(|x, y| self.id_of(*x).cmp(self.id_of(*y)).then(x.cmp(y)));
                for same in run.chunk_by(|x, y| self.id_of(*x) == self.id_of(*y)) {
                    out.extend(same[1..].iter().map(|later| (*later, same[0])));
                }
            }
            at = end;
        }
        out.sort_unstable();
        out
    }

    /// The line whose id is `id`, if any; `sorted` from [`Builder::sorted_ids`].
    fn find(&self, sorted: &[(u64, u32)], id: &str) -> Option<u32> {
        let h = self.hash_of_text(id);
        let start = sorted.partition_point(|(x, _)| *x < h);
        sorted[start..]
            .iter()
            .take_while(|(x, _)| *x == h)
            .map(|(_, i)| *i)
            .find(|i| self.id_of(*i) == id.as_bytes())
    }

    /// The hash `id` is looked up by (as [`Builder::hash_of`] hashes a line's).
    fn hash_of_text(&self, id: &str) -> u64 {
        #[cfg(test)]
        if self.collide {
            return 7;
        }
        id_hash(id)
    }

    /// docs/reference/engine.md#rides: `rides` links never form a loop. District entities ride each
    /// other only through their lines (a scene entity rides only entities of its own file), so a
    /// loop is one among the lines. Each loop's error names the line that closes it (its last line
    /// read), as the scene file's check does for its own.
    fn loops(&self, sorted: &[(u64, u32)]) -> Vec<(u32, IndexError)> {
        let next: BTreeMap<u32, (u32, &str)> = self
            .rides
            .iter()
            .filter_map(|(i, r)| Some((*i, (self.find(sorted, r)?, &**r))))
            .collect();
        // Each line rides at most one: follow every chain once, marking where it went.
        let mut state: BTreeMap<u32, bool> = BTreeMap::new(); // false: on this walk; true: done
        let mut closers: Vec<(u32, &str)> = Vec::new();
        for &start in next.keys() {
            let mut path = Vec::new();
            let mut at = start;
            while let (Some(&(to, _)), None) = (next.get(&at), state.get(&at)) {
                state.insert(at, false);
                path.push(at);
                at = to;
            }
            if state.get(&at) == Some(&false) {
                let from = path.iter().position(|p| *p == at).expect("on this walk");
                let last = *path[from..].iter().max().expect("a loop has a member");
                closers.push((last, next[&last].1));
            }
            for p in path {
                state.insert(p, true);
            }
        }
        closers
            .into_iter()
            .map(|(i, rides)| {
                let e = IndexError::Line {
                    file: self.stamps[self.file_of(i) as usize].file.clone(),
                    line: self.lines[i as usize].line,
                    message: format!(
                        "`{}` riding `{}` would close a loop of rides",
                        crate::escape::escape(&String::from_utf8_lossy(self.id_of(i))),
                        crate::escape::escape(rides)
                    ),
                };
                (i, e)
            })
            .collect()
    }

    /// The duplicate-id error for `(later, earlier)`.
    fn duplicate_error(&self, (later, earlier): (u32, u32)) -> IndexError {
        let name = |i: u32| self.stamps[self.file_of(i) as usize].file.clone();
        IndexError::Line {
            file: name(later),
            line: self.lines[later as usize].line,
            message: format!(
                "duplicate entity id {:?}: {} line {} has it",
                String::from_utf8_lossy(self.id_of(later)),
                name(earlier),
                self.lines[earlier as usize].line
            ),
        }
    }

    /// Reads district file `name` (the next file index) for scene `scene` from `reader`,
    /// refusing more than `cap` bytes. Every bad line is kept as an error (and left out), as
    /// is a file that cannot be read to its end; [`Builder::finish`] tells them.
    pub fn add(&mut self, scene: u16, name: &str, reader: impl BufRead, cap: u64) {
        let Ok(file) = u16::try_from(self.stamps.len()) else {
            let e = IndexError::File {
                file: name.to_owned(),
                message: "more than 65535 district files".into(),
            };
            self.error(u16::MAX, u32::MAX, e);
            return;
        };
        self.file_starts.push(self.lines.len() as u32);
        let (length, hash) = match self.read(scene, file, name, reader, cap) {
            Ok(stamp) => stamp,
            Err(e) => {
                self.error(file, u32::MAX, e);
                (0, 0)
            }
        };
        self.stamps.push(Stamp {
            file: name.to_owned(),
            scene,
            length,
            hash,
        });
    }

    /// The lines of `reader` (file `file`), into the lines; its length and hash (the hash of a
    /// file without errors). A line is held up to the longest a district line may be; a longer
    /// one is an error, the rest of it read (counted) but never kept.
    fn read(
        &mut self,
        scene: u16,
        file: u16,
        name: &str,
        reader: impl BufRead,
        cap: u64,
    ) -> Result<(u64, u64), IndexError> {
        let max = crate::limits::MAX_DISTRICT_LINE_BYTES;
        let mut reader = reader.take(cap + 1);
        let mut hash = Fnv1a64::default();
        let mut offset = 0u64;
        let mut buf = Vec::new();
        let mut line = 0u32;
        // The stamp's hash is made while the file has no error (one with an error is refused:
        // its stamp is never used), so the rest of a line too long is never hashed.
        let mut sound = true;
        let cannot = |e: std::io::Error| IndexError::File {
            file: name.to_owned(),
            message: format!("cannot read: {e}"),
        };
        loop {
            buf.clear();
            // The longest line and its `\r\n`, at most.
            let n = (&mut reader)
                .take(max as u64 + 2)
                .read_until(b'\n', &mut buf)
                .map_err(cannot)?;
            if n == 0 {
                break;
            }
            if sound {
                hash.update(&buf);
            }
            let mut whole = n as u64;
            let mut blank = buf.iter().all(u8::is_ascii_whitespace);
            let mut long = None;
            if n == max + 2 && !buf.ends_with(b"\n") {
                let hash = sound.then_some(&mut hash);
                let (rest, len, all_blank) =
                    skip_line(&mut reader, buf[n - 1], n as u64, blank, hash).map_err(cannot)?;
                whole += rest;
                blank = all_blank;
                long = Some(len);
            }
            if offset + whole > cap {
                return Err(IndexError::File {
                    file: name.to_owned(),
                    message: format!(
                        "the file is larger than the district file limit ({cap} bytes)"
                    ),
                });
            }
            line += 1;
            let text = trim_newline(&buf);
            let at = offset;
            offset += whole;
            let fail = |message: String| IndexError::Line {
                file: name.to_owned(),
                line,
                message,
            };
            if blank {
                continue; // blank lines (a trailing newline) carry nothing, whatever their length
            }
            if let Some(len) = long.or((text.len() > max).then_some(text.len() as u64)) {
                self.error(file, line, fail(line_too_long(len)));
                sound = false;
                continue;
            }
            let e = match check_line(text) {
                Ok(e) => e,
                Err(m) => {
                    self.error(file, line, fail(m));
                    sound = false;
                    continue;
                }
            };
            if u32::try_from(self.lines.len()).is_err() {
                return Err(fail("more than 4294967295 district entities".into()));
            }
            let chunk = home_of(&self.grid, self.height, e.position);
            let group = self.group(scene, chunk);
            let (count, bytes) = &mut self.sizes[group as usize];
            let full = chunk_full(chunk, *count, *bytes, text.len() as u64);
            if let Some(m) = full {
                // One error per chunk, at its first line past the most: the others are counted.
                sound = false;
                if let Some((_, past)) = self.over.get_mut(&group) {
                    *past += 1;
                    continue;
                }
                let kept = (self.errors.len() <= MAX_ERRORS).then_some(self.errors.len());
                self.over.insert(group, (kept, 1));
                self.error(file, line, fail(m));
                continue;
            }
            *count += 1;
            *bytes += text.len() as u64;
            if let Some(r) = e.rides {
                self.rides.push((self.lines.len() as u32, r.into()));
            }
            self.arena.extend_from_slice(e.id.as_bytes());
            self.id_ends.push(self.arena.len() as u64);
            self.lines.push(LineRef {
                offset: at,
                len: text.len() as u32,
                line,
            });
            self.group_of.push(group);
        }
        Ok((offset, hash.0))
    }

    /// The index, once every id is known unique (the ids themselves are dropped: only their
    /// hashes are kept).
    ///
    /// Otherwise every error found, in file and line order (a file's own error after its
    /// lines'): bad lines, files that could not be read, duplicate ids (each naming the first
    /// line with the id), `rides` loops; at most [`MAX_ERRORS`], then [`IndexError::More`].
    pub fn finish(mut self) -> Result<Index, Vec<IndexError>> {
        let mut sorted = self.sorted_ids();
        let mut errors = std::mem::take(&mut self.errors);
        for (kept, past) in self.over.values() {
            if let (Some(i), 2..) = (kept, past) {
                if let IndexError::Line { message, .. } = &mut errors[*i].2 {
                    message.push_str(&format!(
                        "; {past} of the lines homed there are past the most, this one the first"
                    ));
                }
            }
        }
        let place = |b: &Builder, i: u32| (b.file_of(i), b.lines[i as usize].line);
        for d in self.duplicates(&sorted) {
            let (f, line) = place(&self, d.0);
            errors.push((f, line, self.duplicate_error(d)));
        }
        for (i, e) in self.loops(&sorted) {
            let (f, line) = place(&self, i);
            errors.push((f, line, e));
        }
        if !errors.is_empty() {
            errors.sort_by_key(|(f, line, _)| (*f, *line)); // stable: a line's own order kept
            let total = errors.len() + self.more;
            let mut told: Vec<IndexError> = errors
                .into_iter()
                .take(MAX_ERRORS)
                .map(|(_, _, e)| e)
                .collect();
            if total > MAX_ERRORS {
                told.push(IndexError::More(total - MAX_ERRORS));
            }
            return Err(told);
        }
        let Builder {
            lines: read,
            group_of,
            keys,
            file_starts,
            arena,
            id_ends,
            rides,
            stamps,
            ..
        } = self;
        // The ids are unique: their bytes are not needed any more.
        drop((arena, id_ends, rides));
        // Groups in (scene, chunk) order, each keeping file order (files in config order,
        // lines in line order): where each group starts, by a count of its lines.
        let mut keys: Vec<((u16, ChunkPos), u32)> = keys.into_iter().collect();
        keys.sort_unstable_by_key(|(k, _)| *k);
        let mut next = vec![0u32; keys.len()];
        for g in &group_of {
            next[*g as usize] += 1;
        }
        let mut groups = BTreeMap::new();
        let mut at = 0u32;
        for (key, g) in keys {
            let size = next[g as usize];
            next[g as usize] = at;
            groups.insert(key, (at, at + size));
            at += size;
        }
        // Where each line goes (in place of its group).
        let mut moved = group_of;
        for g in &mut moved {
            let place = &mut next[*g as usize];
            *g = *place;
            *place += 1;
        }
        drop(next);
        let n = read.len();
        let mut lines = vec![
            LineRef {
                offset: 0,
                len: 0,
                line: 0
            };
            n
        ];
        for (old, r) in read.into_iter().enumerate() {
            lines[moved[old] as usize] = r;
        }
        let mut files = vec![0u16; n];
        for (f, start) in file_starts.iter().enumerate() {
            let end = file_starts.get(f + 1).map_or(n, |e| *e as usize);
            for old in *start as usize..end {
                files[moved[old] as usize] = f as u16;
            }
        }
        // The sorted hashes then name the grouped lines, still sorted.
        for (_, i) in &mut sorted {
            *i = moved[*i as usize];
        }
        let starts = groups.iter().map(|(k, g)| (g.0, k.1)).collect();
        Ok(Index {
            lines,
            files,
            groups,
            ids: sorted,
            starts,
            stamps,
        })
    }
}

/// Reads the rest of a line longer than a district line may be from `reader`, through its
/// newline, keeping none of it (64 KiB at a time); `last` is the last byte held of the line,
/// `held` how many bytes were, `blank` whether they were all whitespace. Returns how many bytes
/// it read, the line's length without its `\n` or `\r\n`, and whether the line is blank (all
/// whitespace: nothing, whatever its length). While the line may be blank its bytes are hashed
/// into `hash` (a blank line is part of a sound file); past its first other byte, never.
fn skip_line(
    reader: &mut impl BufRead,
    mut last: u8,
    held: u64,
    mut blank: bool,
    mut hash: Option<&mut Fnv1a64>,
) -> std::io::Result<(u64, u64, bool)> {
    let mut scratch = Vec::with_capacity(1 << 16);
    let mut read = 0u64;
    loop {
        scratch.clear();
        let k = (&mut *reader)
            .take(1 << 16)
            .read_until(b'\n', &mut scratch)?;
        if k == 0 {
            return Ok((read, held + read, blank));
        }
        read += k as u64;
        blank = blank && scratch.iter().all(u8::is_ascii_whitespace);
        if let (true, Some(h)) = (blank, hash.as_mut()) {
            h.update(&scratch);
        }
        if scratch.ends_with(b"\n") {
            let before = if k >= 2 { scratch[k - 2] } else { last };
            let cr = u64::from(before == b'\r');
            return Ok((read, held + read - 1 - cr, blank));
        }
        last = scratch[k - 1];
    }
}

/// Why a line of `len` bytes may not be homed in `chunk`, home to `count` lines of `bytes`
/// bytes so far, if it may not: a chunk's entities are spawned in one tick, so one chunk is
/// home to at most [`crate::limits::MAX_DISTRICT_CHUNK_ENTITIES`] lines of at most
/// [`crate::limits::MAX_DISTRICT_CHUNK_BYTES`] together.
fn chunk_full(chunk: ChunkPos, count: u32, bytes: u64, len: u64) -> Option<String> {
    use crate::limits::{MAX_DISTRICT_CHUNK_BYTES, MAX_DISTRICT_CHUNK_ENTITIES};
    let why = "a chunk's district entities are spawned in the tick it loads";
    if count as usize >= MAX_DISTRICT_CHUNK_ENTITIES {
        Some(format!(
            "chunk {chunk} is home to {MAX_DISTRICT_CHUNK_ENTITIES} district entities already, \
             the most a chunk may be ({why})"
        ))
    } else if bytes + len > MAX_DISTRICT_CHUNK_BYTES {
        Some(format!(
            "chunk {chunk}'s district lines would come to {} bytes with this one, past the \
             {MAX_DISTRICT_CHUNK_BYTES} a chunk may be home to ({why})",
            bytes + len
        ))
    } else {
        None
    }
}

/// The error of a line of `len` bytes, longer than a district line may be.
pub fn line_too_long(len: u64) -> String {
    format!(
        "a line of {len} bytes: a district line is at most {} bytes (an entity with data of at \
         most {} bytes serialized and names of at most {} bytes)",
        crate::limits::MAX_DISTRICT_LINE_BYTES,
        crate::limits::MAX_DATA_BYTES,
        crate::limits::MAX_ID_LEN
    )
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

    /// Every group: (scene, chunk) and its lines, in (scene, chunk) order.
    pub fn groups(&self) -> impl Iterator<Item = ((u16, ChunkPos), std::ops::Range<u32>)> + '_ {
        self.groups.iter().map(|(k, &(a, b))| (*k, a..b))
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

    /// Whether line `i` was indexed with id `id` (by its hash: no read).
    pub fn is_id_of(&self, i: u32, id: &str) -> bool {
        self.candidates(id).any(|j| j == i)
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
        b.add(0, "d.jsonl", text.as_bytes(), 1 << 20);
        let index = b.finish().unwrap();
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
        b.add(0, "d.jsonl", text.as_bytes(), 1 << 20);
        let e = b.finish().unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].to_string(),
            "d.jsonl: line 2: duplicate entity id \"a\": d.jsonl line 1 has it"
        );
    }

    fn lines(ids: &[&str]) -> String {
        ids.iter()
            .map(|id| match *id {
                "bad" => "{\"id\":\"bad\"}\n".to_string(),
                id => format!("{{\"id\":\"{id}\",\"position\":{{\"x\":0,\"z\":0}}}}\n"),
            })
            .collect()
    }

    /// The index, or every error told, one string each.
    fn build(files: &[&[&str]], same_hash: bool) -> Result<Index, Vec<String>> {
        let mut b = Builder::new(Grid::new(32.0));
        b.collide = same_hash;
        for (i, f) in files.iter().enumerate() {
            let name = format!("{i}.jsonl");
            b.add(0, &name, lines(f).as_bytes(), 1 << 20);
        }
        b.finish()
            .map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn every_error_is_told_in_reading_order_hashes_colliding_or_not() {
        let dup = |at: &str, id: &str, first: &str| {
            format!("{at}: duplicate entity id \"{id}\": {first} has it")
        };
        let bad = |at: &str| format!("{at}: expected an entity");
        for same in [false, true] {
            assert_eq!(build(&[&["a", "b", "c"], &["d"]], same).unwrap().len(), 4);
            let cases: Vec<(Vec<&[&str]>, Vec<String>)> = vec![
                (
                    vec![&["x", "y", "y", "x"]],
                    vec![
                        dup("0.jsonl: line 3", "y", "0.jsonl line 2"),
                        dup("0.jsonl: line 4", "x", "0.jsonl line 1"),
                    ],
                ),
                (
                    vec![&["x", "y"], &["z", "x", "y"]],
                    vec![
                        dup("1.jsonl: line 2", "x", "0.jsonl line 1"),
                        dup("1.jsonl: line 3", "y", "0.jsonl line 2"),
                    ],
                ),
                (
                    vec![&["a", "a", "bad"]],
                    vec![
                        dup("0.jsonl: line 2", "a", "0.jsonl line 1"),
                        bad("0.jsonl: line 3"),
                    ],
                ),
                (
                    vec![&["a", "a"], &["bad"]],
                    vec![
                        dup("0.jsonl: line 2", "a", "0.jsonl line 1"),
                        bad("1.jsonl: line 1"),
                    ],
                ),
                (
                    vec![&["a", "bad", "a", "a"]],
                    vec![
                        bad("0.jsonl: line 2"),
                        dup("0.jsonl: line 3", "a", "0.jsonl line 1"),
                        dup("0.jsonl: line 4", "a", "0.jsonl line 1"),
                    ],
                ),
            ];
            for (files, expected) in cases {
                let got = build(&files, same).unwrap_err();
                assert_eq!(got.len(), expected.len(), "{got:?}");
                for (g, e) in got.iter().zip(&expected) {
                    assert!(g.starts_with(e.as_str()), "{g:?} / {e:?}");
                }
            }
        }
    }

    #[test]
    fn past_the_limit_the_errors_are_counted() {
        let many: Vec<&str> = vec!["bad"; MAX_ERRORS + 5];
        let got = build(&[&many], false).unwrap_err();
        assert_eq!(got.len(), MAX_ERRORS + 1);
        assert!(got[MAX_ERRORS - 1].starts_with(&format!("0.jsonl: line {MAX_ERRORS}: ")));
        assert_eq!(got[MAX_ERRORS], "… and 5 more");
    }

    #[test]
    fn the_fast_check_accepts_and_refuses_what_the_full_parse_does() {
        let cases = [
            r#"{"id":"a","position":{"x":1,"z":2}}"#,
            r#"{"id":"a","tags":["x","y"],"position":{"x":1,"y":3,"z":2},"rides":"v","data":{"k":[1,2]}}"#,
            r#"{"id":"a\u0041","tags":["t\n"],"position":{"x":1,"z":2},"data":null}"#,
            r#"{"id":"a","position":{"x":1,"z":2},"extra":1}"#,
            r#"{"id":"","position":{"x":1,"z":2}}"#,
            r#"{"id":"a","tags":[""],"position":{"x":1,"z":2}}"#,
            r#"{"id":"a","rides":"","position":{"x":1,"z":2}}"#,
            r#"{"id":"a","position":{"x":1e16,"z":2}}"#,
            r#"{"id":"a","position":{"x":1,"z":2,"w":0}}"#,
            r#"{"id":"a","position":{"x":1}}"#,
            r#"{"id":"a","id":"b","position":{"x":1,"z":2}}"#,
            r#"{"id":"a","tags":"x","position":{"x":1,"z":2}}"#,
            r#"{"id":"a","position":{"x":1,"z":2},"data":[]}"#,
            r#"{"id":"a","position":{"x":1,"z":2}} x"#,
            r#"[1]"#,
            r#"{"id":"a","position":{"x":1,"z":2}"#,
        ];
        for c in cases {
            let full = parse_line(c.as_bytes());
            let fast = check_line(c.as_bytes());
            assert_eq!(full.is_ok(), fast.is_ok(), "{c}");
            match (full, fast) {
                (Ok(e), Ok(k)) => {
                    assert_eq!(e.id.as_str(), &*k.id, "{c}");
                    assert_eq!(e.position, k.position, "{c}");
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "{c}"),
                _ => unreachable!(),
            }
        }
        let big = format!(
            r#"{{"id":"a","position":{{"x":1,"z":2}},"data":{{"k":"{}"}}}}"#,
            "x".repeat(5000)
        );
        assert_eq!(
            check_line(big.as_bytes()).err(),
            parse_line(big.as_bytes()).err()
        );
        assert!(check_line(big.as_bytes()).is_err());
    }

    /// `text` as a writer escaping every non-ASCII character writes it (Python's `json.dumps`
    /// by default).
    fn ascii_escaped(text: &str) -> String {
        text.chars()
            .map(|c| match c {
                c if c.is_ascii() => c.to_string(),
                c => c
                    .encode_utf16(&mut [0; 2])
                    .iter()
                    .map(|u| format!("\\u{u:04x}"))
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn an_entity_at_every_limit_as_a_common_writer_writes_it_fits_in_a_district_line() {
        use crate::limits::{MAX_DATA_BYTES, MAX_DISTRICT_LINE_BYTES, MAX_ID_LEN};
        // Names of 256 bytes and data of 4 096 bytes compact, made of two-byte characters (six
        // bytes each escaped, the most a writer makes of a byte), written with a space after
        // every `:` and `,`.
        let name = |k: usize| format!("{}{k:02}", "é".repeat((MAX_ID_LEN - 2) / 2));
        let quoted = |s: &str| format!("\"{}\"", ascii_escaped(s));
        let long = "é".repeat((MAX_DATA_BYTES - r#"{"k":""}"#.len()) / 2);
        let data = serde_json::json!({ "k": long });
        assert_eq!(serde_json::to_vec(&data).unwrap().len(), MAX_DATA_BYTES);
        let tags: Vec<String> = (1..=6).map(|k| quoted(&name(k))).collect();
        let x = "-1.2345678901234567e-300";
        let line = format!(
            "{{\"id\": {}, \"tags\": [{}], \"position\": {{\"x\": {x}, \"y\": {x}, \"z\": {x}}}, \
             \"rides\": {}, \"data\": {{\"k\": {}}}}}",
            quoted(&name(0)),
            tags.join(", "),
            quoted(&name(7)),
            quoted(&long)
        );
        assert!(line.len() <= MAX_DISTRICT_LINE_BYTES, "{}", line.len());
        assert!(
            line.len() > MAX_DISTRICT_LINE_BYTES * 9 / 10,
            "{}",
            line.len()
        );
        let mut b = Builder::new(Grid::new(32.0));
        b.add(0, "d.jsonl", format!("{line}\n").as_bytes(), 1 << 20);
        let index = b.finish().unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(index.len(), 1);
    }

    #[test]
    fn a_line_longer_than_a_district_line_is_an_error_naming_it_and_its_length() {
        let max = crate::limits::MAX_DISTRICT_LINE_BYTES;
        let good = |id: &str| format!("{{\"id\":\"{id}\",\"position\":{{\"x\":0,\"z\":0}}}}");
        // Padded with spaces to `len` bytes (a valid line up to the cap).
        let padded =
            |id: &str, len: usize| format!("{}{}", good(id), " ".repeat(len - good(id).len()));
        let cases = [
            (format!("{}\n", padded("a", max)), None),
            (format!("{}\r\n", padded("a", max)), None),
            (format!("{}\n", padded("a", max + 1)), Some(max + 1)),
            (format!("{}\r\n", padded("a", max + 1)), Some(max + 1)),
            (format!("{}\n", padded("a", max + 2)), Some(max + 2)),
            (padded("a", max + 1), Some(max + 1)),
            (format!("{}\n", padded("a", 3 << 20)), Some(3 << 20)),
            (format!("{}\r\n", padded("a", 3 << 20)), Some(3 << 20)),
            ("x".repeat(5 << 20), Some(5 << 20)),
        ];
        for (long, expected) in cases {
            let text = format!("{}\n{long}{}\n", good("first"), good("last"));
            let mut b = Builder::new(Grid::new(32.0));
            b.add(0, "d.jsonl", text.as_bytes(), 1 << 30);
            let got = b.finish();
            match expected {
                None => assert_eq!(got.unwrap().len(), 3),
                Some(len) => {
                    let e = got.unwrap_err();
                    let told: Vec<String> = e.iter().map(ToString::to_string).collect();
                    // A line without its newline runs into the next one.
                    let len = if long.ends_with('\n') {
                        len
                    } else {
                        len + good("last").len()
                    };
                    assert_eq!(
                        told,
                        [format!(
                            "d.jsonl: line 2: a line of {len} bytes: a district line is at most \
                             19200 bytes (an entity with data of at most 4096 bytes serialized \
                             and names of at most 256 bytes)"
                        )]
                    );
                }
            }
        }
        // A blank line is nothing, whatever its length (as before the cap), and is hashed.
        for blank in [
            " ".repeat(max + 1),
            " \t".repeat(3 << 20),
            " ".repeat(5 << 20) + "\r",
        ] {
            let text = format!("{}\n{blank}\n{}\n", good("first"), good("last"));
            let mut b = Builder::new(Grid::new(32.0));
            let read = b.read(0, 0, "d.jsonl", text.as_bytes(), 1 << 30).unwrap();
            assert_eq!(read, (text.len() as u64, Fnv1a64::of(text.as_bytes())));
            assert!(b.errors.is_empty());
            assert_eq!(b.finish().unwrap().len(), 2);
        }
        // The length counts every byte, the long line's included; a sound file's stamp hashes
        // every byte.
        let text = format!("{}\n{}\n", padded("a", max + 5), good("b"));
        let mut b = Builder::new(Grid::new(32.0));
        let read = b.read(0, 0, "d.jsonl", text.as_bytes(), 1 << 30).unwrap();
        assert_eq!(read.0, text.len() as u64);
        let text = format!("{}\n{}\n", padded("a", max), good("b"));
        let read = b.read(0, 1, "e.jsonl", text.as_bytes(), 1 << 30).unwrap();
        assert_eq!(read, (text.len() as u64, Fnv1a64::of(text.as_bytes())));
    }

    #[test]
    fn a_chunk_is_home_to_at_most_10_000_entities_and_2_mib_of_lines() {
        use crate::limits::{MAX_DISTRICT_CHUNK_BYTES, MAX_DISTRICT_CHUNK_ENTITIES};
        let at = |id: usize, x: f64| {
            format!("{{\"id\":\"e{id}\",\"position\":{{\"x\":{x},\"z\":1}}}}\n")
        };
        let build = |files: &[(u16, String)]| {
            let mut b = Builder::new(Grid::new(32.0));
            for (i, (scene, text)) in files.iter().enumerate() {
                b.add(*scene, &format!("{i}.jsonl"), text.as_bytes(), 1 << 30);
            }
            b.finish()
                .map(|i| i.len())
                .map_err(|e| e.iter().map(ToString::to_string).collect::<Vec<_>>())
        };
        let n = MAX_DISTRICT_CHUNK_ENTITIES;
        // The most, over two files, and one more in another chunk and in another scene.
        let first: String = (0..n / 2).map(|k| at(k, 1.0)).collect();
        let second: String = (n / 2..n).map(|k| at(k, 2.0)).collect();
        let other = at(n, 40.0);
        let scene_1 = at(n + 1, 1.0);
        let files = [
            (0, first.clone()),
            (0, second.clone() + &other),
            (1, scene_1.clone()),
        ];
        assert_eq!(build(&files), Ok(n + 2));
        // One more in that chunk, in either file: the line past the most is named.
        let files = [(0, first.clone() + &at(n + 2, 3.0)), (0, second.clone())];
        let told = build(&files).unwrap_err();
        assert_eq!(
            told,
            [format!(
                "1.jsonl: line {}: chunk (0, 0) is home to 10000 district entities already, \
                     the most a chunk may be (a chunk's district entities are spawned in the \
                     tick it loads)",
                n / 2
            )]
        );
        // Three past it: one error, at the first, counting them.
        let files = [
            (0, first.clone() + &at(n + 2, 3.0)),
            (
                0,
                second.clone() + &at(n + 3, 4.0) + &other + &at(n + 4, 5.0),
            ),
        ];
        let told = build(&files).unwrap_err();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(
            told[0].starts_with(&format!("1.jsonl: line {}: chunk (0, 0) is home", n / 2)),
            "{told:?}"
        );
        assert!(
            told[0].ends_with("; 3 of the lines homed there are past the most, this one the first"),
            "{told:?}"
        );
        // Bytes: lines padded with spaces to 2 MiB together, then one more byte.
        let pad = |k: usize, len: usize| {
            let l = at(k, 1.0);
            format!("{}{}\n", &l[..l.len() - 1], " ".repeat(len + 1 - l.len()))
        };
        let each = MAX_DISTRICT_CHUNK_BYTES as usize / 128;
        let full: String = (0..128).map(|k| pad(k, each)).collect();
        assert_eq!(build(&[(0, full.clone())]), Ok(128));
        let told = build(&[(0, full + &at(128, 1.0))]).unwrap_err();
        assert_eq!(
            told,
            [format!(
                "0.jsonl: line 129: chunk (0, 0)'s district lines would come to {} bytes with \
                 this one, past the 2097152 a chunk may be home to (a chunk's district entities \
                 are spawned in the tick it loads)",
                MAX_DISTRICT_CHUNK_BYTES as usize + at(128, 1.0).len() - 1
            )]
        );
    }

    #[test]
    fn a_file_over_its_cap_is_refused() {
        let text = "{\"id\":\"a\",\"position\":{\"x\":0,\"z\":0}}\n";
        let mut b = Builder::new(Grid::new(32.0));
        b.add(0, "d.jsonl", text.as_bytes(), 10);
        let e = b.finish().unwrap_err();
        assert_eq!(
            e[0].to_string(),
            "d.jsonl: the file is larger than the district file limit (10 bytes)"
        );
    }
}
