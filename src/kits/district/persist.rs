//! `world.district` with a world directory (docs/reference/district.md#district-persistence): the
//! kept differences, and the live entities standing in each chunk, written as district records
//! (`region.rs`) by the shared save thread of [`crate::worlddir::store`].
//!
//! What is written is an *image*: per chunk and scene, what the chunk stores (its kept
//! difference, or its district lines when it has none) followed by the live streamed entities
//! standing in it, each marked live; a chunk exactly as its district lines describe it has no
//! record. Every write-back sends the records of every chunk that changed since the last one,
//! all together, and the save thread commits them together (a journal when several region files
//! change), so the directory always holds the image of one tick: every entity exactly once.
//! A game started afresh on the directory takes every entry as stored; a game loading a save
//! takes only the stored ones (the live ones are in the save's world).

use std::collections::{BTreeMap, BTreeSet};

use super::region::{self, ChunkRecord, District, DistrictStamp, Entry, SceneRecord, Stored};
use super::state::{entity_hash, State, DORMANT};
use crate::grid::ChunkPos;
use crate::host::World;
use crate::worlddir::store::{Outcome, Store, StoreError};

/// The store's error for district records.
pub type DistrictStoreError = StoreError<DistrictStamp>;

/// The write-back of a world directory.
pub(crate) struct Persist {
    /// The save thread.
    pub store: Store<District>,
    /// The stamp of this world's district files.
    pub stamp: DistrictStamp,
    /// The directory, as configured (resolved against the scene file).
    pub dir: String,
    /// The records last sent to the save thread, chunk → record.
    pub image: BTreeMap<ChunkPos, ChunkRecord>,
    /// Write back every so many ticks (0: never periodically).
    pub every: u64,
    /// The last write back's outcome (periodic or on release), heard at the next periodic
    /// one.
    pub outcome: Option<Outcome<District>>,
    /// Whether the last write back heard failed (the next periodic one retries even with
    /// nothing new).
    pub failing: bool,
    /// Closed: dropping writes nothing more.
    pub closed: bool,
}

/// What an entry of a record holds: a district line (by index) or an entity of no line (by id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Held {
    Line(u32),
    Id(String),
}

/// What `s` holds, and how a message names it.
fn held(s: &Stored) -> (Held, String) {
    match s {
        Stored::Line(i) | Stored::Entity { line: Some(i), .. } => {
            let what = match s {
                Stored::Entity { entity, .. } => format!(
                    "entity `{}` (district line index {i})",
                    crate::escape::escape(entity.id.as_str())
                ),
                _ => format!("district line index {i}"),
            };
            (Held::Line(*i), what)
        }
        Stored::Entity {
            line: None, entity, ..
        } => {
            let id = entity.id.as_str().to_string();
            let what = format!("entity `{}`", crate::escape::escape(&id));
            (Held::Id(id), what)
        }
    }
}

fn line_of(s: &Stored) -> Option<u32> {
    match s {
        Stored::Line(i) => Some(*i),
        Stored::Entity { line, .. } => *line,
    }
}

impl State {
    /// `chunk`'s record now: `None` when every scene of it is as its district lines describe.
    fn image_of(
        &self,
        world: &World,
        c: ChunkPos,
        loaded: &dyn Fn(ChunkPos) -> bool,
    ) -> Option<ChunkRecord> {
        let mut out = ChunkRecord::default();
        for (k, name) in self.scenes.iter().enumerate() {
            let s = k as u16;
            let group = self.index.group(s, c);
            let record = self.records.get(&(s, c));
            let is_loaded = record.is_none() && self.active == Some(s) && loaded(c);
            let mut entries: Vec<Entry> = match record {
                Some(list) => list
                    .iter()
                    .map(|x| Entry {
                        live: false,
                        stored: x.clone(),
                    })
                    .collect(),
                None if is_loaded => Vec::new(),
                None => group
                    .clone()
                    .map(|i| Entry {
                        live: false,
                        stored: Stored::Line(i),
                    })
                    .collect(),
            };
            if self.last == Some(s) {
                for id in self.by_chunk.get(&c).into_iter().flat_map(|m| m.values()) {
                    let (Some(l), Some(e)) = (self.live.get(id), world.get(id)) else {
                        continue;
                    };
                    let mut e = e.clone();
                    e.tags.remove(DORMANT);
                    let same = l.line.is_some_and(|i| self.index.home(i) == c)
                        && entity_hash(&e) == l.base;
                    entries.push(Entry {
                        live: true,
                        stored: match (same, l.line) {
                            (true, Some(i)) => Stored::Line(i),
                            _ => Stored::Entity {
                                line: l.line,
                                base: l.base,
                                entity: Box::new(e),
                            },
                        },
                    });
                }
            }
            // Kept unless the chunk is exactly its district lines: no record, and its entries
            // (the lines, or the live entities while loaded) are the lines in order. Unloaded
            // without a record, that is when nothing of it is live (live entities add to the
            // lines).
            let needed = record.is_some()
                || entries.len() != group.len()
                || !entries
                    .iter()
                    .zip(group)
                    .all(|(x, i)| x.stored == Stored::Line(i));
            if needed {
                out.scenes.insert(
                    name.clone(),
                    SceneRecord {
                        loaded: is_loaded,
                        entries,
                    },
                );
            }
        }
        (!out.scenes.is_empty()).then_some(out)
    }

    /// The records of every chunk that changed since the last write back (the image updated).
    pub fn changes(
        &mut self,
        world: &World,
        loaded: &dyn Fn(ChunkPos) -> bool,
    ) -> Vec<(ChunkPos, Option<ChunkRecord>)> {
        let dirty = std::mem::take(&mut self.dirty);
        self.released = false;
        let mut out = Vec::new();
        for c in dirty {
            let now = self.image_of(world, c, loaded);
            let Some(p) = self.persist.as_mut() else {
                return Vec::new();
            };
            if p.image.get(&c) != now.as_ref() {
                match &now {
                    Some(r) => p.image.insert(c, r.clone()),
                    None => p.image.remove(&c),
                };
                out.push((c, now));
            }
        }
        out
    }

    /// What is wrong with `entry` of the record of chunk `c` (a directory's or a save's), in
    /// words that follow "it": a line entry stands in its home chunk (of any scene: a district
    /// entity kept live across a scene change is stored under the scene it was in); an entity
    /// of a district line has that line's id (by the index's id hashes, no read); an entity of
    /// no line has no district line's id (read to be sure: that would be the id twice).
    pub fn entry_problem(&self, c: ChunkPos, entry: &Stored) -> Option<String> {
        let id = |e: &crate::host::Entity| crate::escape::escape(e.id.as_str()).into_owned();
        match entry {
            Stored::Line(i) if self.index.home(*i) != c => Some(format!(
                "names district line index {i} (of chunk {}) as standing in it",
                self.index.home(*i)
            )),
            Stored::Entity {
                line: Some(i),
                entity,
                ..
            } if !self.index.is_id_of(*i, entity.id.as_str()) => Some(format!(
                "names entity `{}` as district line index {i}, which is another entity's",
                id(entity)
            )),
            Stored::Entity {
                line: None, entity, ..
            } => self.line_of(entity.id.as_str()).map(|j| {
                format!(
                    "holds entity `{}` as no district line's, which district line index {j} is",
                    id(entity)
                )
            }),
            _ => None,
        }
    }

    /// Takes the records of a directory as the kept differences: every entry (a game started
    /// afresh), or only the stored ones of chunks not loaded when they were written (a game
    /// loading a save, whose world holds the live ones). Returns the problems (each a
    /// `world.district.error`: that scene of that chunk falls back to its district lines) and
    /// the stored count.
    pub fn take_image(
        &mut self,
        image: &BTreeMap<ChunkPos, ChunkRecord>,
        from_save: bool,
    ) -> Vec<(ChunkPos, String)> {
        let mut errors = Vec::new();
        let mut records = BTreeMap::new();
        let mut referenced = BTreeSet::new();
        let mut held_by: BTreeMap<Held, ChunkPos> = BTreeMap::new();
        let lines = self.index.len();
        for (c, rec) in image {
            for (name, part) in &rec.scenes {
                let Some(s) = self.scenes.iter().position(|x| x == name) else {
                    errors.push((
                        *c,
                        format!(
                            "chunk {c}: a district record of scene {:?}, which this scene file \
                             does not have: ignored",
                            crate::escape::escape(name)
                        ),
                    ));
                    continue;
                };
                let s = s as u16;
                if let Some(bad) = part
                    .entries
                    .iter()
                    .filter_map(|e| line_of(&e.stored))
                    .find(|&i| i as usize >= lines)
                {
                    errors.push((
                        *c,
                        format!(
                            "chunk {c}: a district record names line index {bad}, the district \
                             files have {lines} lines; the chunk's entities load as their \
                             district files describe them"
                        ),
                    ));
                    continue;
                }
                let misplaced = part
                    .entries
                    .iter()
                    .find_map(|e| self.entry_problem(*c, &e.stored));
                // An entity stands in one place: an entry holding a line or an id that an
                // earlier record of the image holds makes this one damaged.
                let mine: Vec<(Held, String)> =
                    part.entries.iter().map(|e| held(&e.stored)).collect();
                let twice = mine.iter().find_map(|(k, what)| {
                    held_by.get(k).map(|first| {
                        format!("holds {what}, which the record of chunk {first} holds too")
                    })
                });
                let misplaced = misplaced.or(twice);
                if let Some(m) = misplaced {
                    errors.push((
                        *c,
                        format!(
                            "chunk {c}: a damaged district record: it {m}; the chunk's entities \
                             load as their district files describe them"
                        ),
                    ));
                    continue;
                }
                held_by.extend(mine.into_iter().map(|(k, _)| (k, *c)));
                if from_save && part.loaded {
                    continue;
                }
                let list: Vec<Stored> = part
                    .entries
                    .iter()
                    .filter(|e| !(from_save && e.live))
                    .map(|e| e.stored.clone())
                    .collect();
                referenced.extend(part.entries.iter().filter_map(|e| line_of(&e.stored)));
                let group = self.index.group(s, *c);
                let baseline = list.len() == group.len()
                    && list.iter().zip(group).all(|(x, i)| *x == Stored::Line(i));
                if !baseline {
                    records.insert((s, *c), list);
                }
            }
        }
        if !from_save {
            // A line taken elsewhere is not brought back by its home chunk's district lines
            // (its home's record was damaged, or of a scene file that changed): the fallback
            // is the chunk's original entities less those.
            let mut fixed = BTreeSet::new();
            for &i in &referenced {
                let home = self.index.home(i);
                for s in 0..self.scenes.len() as u16 {
                    let group = self.index.group(s, home);
                    if !group.contains(&i) || records.contains_key(&(s, home)) {
                        continue;
                    }
                    let list: Vec<Stored> = group
                        .filter(|j| !referenced.contains(j))
                        .map(Stored::Line)
                        .collect();
                    records.insert((s, home), list);
                    fixed.insert(home);
                }
            }
            self.dirty.extend(fixed);
            let mut stored = lines as u64;
            for ((s, c), list) in &records {
                stored = stored - self.index.group(*s, *c).len() as u64 + list.len() as u64;
            }
            self.stored = stored;
        }
        self.records = records;
        self.reindex_stored();
        errors
    }

    /// A game started afresh on a directory, once its scene's entities are in the world: a
    /// streamed scene entity the directory also holds (the last run stored it) is the scene's
    /// copy alone, every entity once. The directory's copy is dropped from its chunk's record
    /// (the chunk written again at the next write back); when it differs from the scene's (the
    /// last run changed it), that is a `world.district.error` naming it: its stored state is
    /// not brought back.
    pub fn drop_scene_copies(&mut self, world: &World) {
        let mut emptied = Vec::new();
        let mut dropped = 0u64;
        for ((s, c), list) in self.records.iter_mut() {
            let before = list.len();
            list.retain(|x| {
                let Stored::Entity {
                    line: None, entity, ..
                } = x
                else {
                    return true;
                };
                let Some(e) = world.get(&entity.id) else {
                    return true;
                };
                let mut e = e.clone();
                e.tags.remove(DORMANT);
                if entity_hash(&e) != entity_hash(entity) {
                    self.errors.push((
                        *c,
                        format!(
                            "chunk {c}: the scene spawns `{}` again, and the world directory's \
                             copy of it (stored by an earlier run) differs: the scene's copy \
                             is kept, the directory's is dropped",
                            crate::escape::escape(entity.id.as_str())
                        ),
                    ));
                }
                false
            });
            if list.len() != before {
                dropped += (before - list.len()) as u64;
                emptied.push((*s, *c));
            }
        }
        for (s, c) in emptied {
            if self.persist.is_some() {
                self.dirty.insert(c);
            }
            let group = self.index.group(s, c);
            let list = &self.records[&(s, c)];
            if list.len() == group.len()
                && list.iter().zip(group).all(|(x, i)| *x == Stored::Line(i))
            {
                self.records.remove(&(s, c));
            }
        }
        self.stored = self.stored.saturating_sub(dropped);
        self.reindex_stored();
    }

    /// Writes back every chunk that changed and waits until it is on disk (a game save and
    /// close do this). The error lists every region not written, this time or earlier.
    pub fn flush_now(
        &mut self,
        world: &World,
        loaded: &dyn Fn(ChunkPos) -> bool,
    ) -> Result<(), DistrictStoreError> {
        if self.persist.is_none() {
            return Ok(());
        }
        let changes = self.changes(world, loaded);
        let p = self.persist.as_mut().expect("checked above");
        let result = p.store.flush(changes);
        p.failing = result.is_err();
        result
    }

    /// The digest of the image on disk (a save records it).
    pub fn image_digest(&self) -> Option<(String, u64)> {
        let p = self.persist.as_ref()?;
        Some((p.dir.clone(), region::digest(&p.image, p.stamp)))
    }
}
