//! The kit's state (docs/reference/district.md#district-files): the index of the district files,
//! the live streamed entities by chunk, the kept differences by (scene, chunk), the despawned
//! district ids; and the two steps that move entities between the world and storage: materialise (a
//! chunk loads) and store (a chunk is released, or a streamed entity ends a tick in a chunk that is
//! not loaded).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value};

use super::index::{parse_line, read_line, Index};
use super::region::Stored;
use crate::grid::{ChunkPos, Grid};
use crate::hash::Fnv1a64;
use crate::host::{Entity, EntityId, World};

/// The tag that makes any entity streamed (stored with its chunk).
pub const STREAMED: &str = "streamed";
/// The tag that keeps an entity live whatever its chunk.
pub const PERSISTENT: &str = "persistent";
/// The derived tag a stored entity drops (the streaming kit sets it again).
pub(crate) const DORMANT: &str = "dormant";

/// A live streamed entity.
#[derive(Debug, Clone)]
pub(crate) struct Live {
    /// Its district line, when it is a district entity.
    pub line: Option<u32>,
    /// The hash of the entity as its line describes it (0 for none).
    pub base: u64,
    /// The chunk it was indexed under (its position's).
    pub chunk: ChunkPos,
    /// Its spawn sequence number.
    pub seq: u64,
}

/// What one step did, for its event.
pub(crate) type Count = (ChunkPos, usize);

/// The kit's state, shared with the service.
pub(crate) struct State {
    pub grid: Grid,
    /// With `vertical` on, the section height: homes are sections
    /// (docs/reference/district.md#homes-in-a-vertical-world).
    pub height: Option<f64>,
    pub index: Index,
    pub files: Vec<RefCell<crate::scene_files::SceneReader>>,
    /// Scene ids by index (every scene of the file).
    pub scenes: Vec<String>,
    /// The scene streaming now, and the one last entered (what is stored outside a scene
    /// goes there).
    pub active: Option<u16>,
    pub last: Option<u16>,
    pub live: FxHashMap<EntityId, Live>,
    pub by_chunk: BTreeMap<ChunkPos, BTreeMap<u64, EntityId>>,
    pub records: BTreeMap<(u16, ChunkPos), Vec<Stored>>,
    /// The ids of the stored entities of no district line (spawned or streamed scene ones):
    /// reserved while stored, as a district id is (see [`State::reindex_stored`]).
    pub stored_ids: FxHashSet<EntityId>,
    pub gone: BTreeSet<EntityId>,
    pub stored: u64,
    /// Streamed entities that changed: checked at the end of the tick.
    pub check: BTreeSet<EntityId>,
    /// Every entity's data, for the service (`None`: no data).
    pub data: FxHashMap<EntityId, Option<Map<String, Value>>>,
    /// Sets queued by mods, in call order.
    pub pending: Vec<(EntityId, Option<Map<String, Value>>)>,
    /// Problems met while materialising (a district file changed on disk), and damage found
    /// in the world directory: `world.district.error` events to emit.
    pub errors: Vec<(ChunkPos, String)>,
    /// The world directory's write-back, with `worldDir` (see `persist.rs`).
    pub persist: Option<super::persist::Persist>,
    /// With `worldDir`: the chunks whose record may have changed since the last write-back.
    pub dirty: BTreeSet<ChunkPos>,
    /// With `worldDir`: a chunk was released or stored into this tick (a write-back is due).
    pub released: bool,
    /// With `worldDir`, from the start until the first scene is entered: the directory's
    /// copies of the scene's streamed entities are still to be dropped.
    pub scene_copies_pending: bool,
}

/// The hash a stored entity is compared by: its compact JSON.
pub(crate) fn entity_hash(e: &Entity) -> u64 {
    Fnv1a64::of(&serde_json::to_vec(e).expect("entities are JSON"))
}

impl State {
    /// An entity's home: the chunk of `pos`, or its section with `vertical` on.
    pub fn home_of(&self, pos: crate::grid::Position) -> ChunkPos {
        super::index::home_of(&self.grid, self.height, pos)
    }

    /// Reads district line `i` again.
    pub fn read(&self, i: u32) -> Result<Entity, String> {
        let (file, r) = self.index.line(i);
        let name = &self.index.stamps[file as usize].file;
        let read = read_line(&mut *self.files[file as usize].borrow_mut(), r);
        let bytes = read.map_err(|e| read_error(name, r.line, &e))?;
        parse_line(&bytes)
            .map_err(|m| {
                format!(
                    "{name}: line {}: the file changed since it was indexed: {m}",
                    r.line
                )
            })
            .and_then(|e| self.same_id(i, e))
    }

    /// Line `i` read again is the entity it was indexed as (a line edited in place under a
    /// running game may still parse, as another entity): else the same error as a line that
    /// no longer parses, and nothing is spawned.
    fn same_id(&self, i: u32, e: Entity) -> Result<Entity, String> {
        if self.index.is_id_of(i, e.id.as_str()) {
            return Ok(e);
        }
        let (file, r) = self.index.line(i);
        Err(format!(
            "{}: line {}: the file changed since it was indexed: the line now holds entity \
             `{}`, another than the one indexed there; not spawned",
            self.index.stamps[file as usize].file,
            r.line,
            crate::escape::escape(e.id.as_str())
        ))
    }

    /// Reads district lines `lines` again: one read of their span when they are in one file,
    /// in order, within 1 MiB (a chunk's lines usually are), else one read each.
    fn read_many(&self, lines: &[u32]) -> Vec<Result<Entity, String>> {
        let refs: Vec<(u16, super::index::LineRef)> =
            lines.iter().map(|&i| self.index.line(i)).collect();
        let one_file = refs
            .windows(2)
            .all(|w| w[0].0 == w[1].0 && w[0].1.offset + u64::from(w[0].1.len) <= w[1].1.offset);
        let span = match (refs.first(), refs.last()) {
            (Some(a), Some(b)) if one_file => b.1.offset + u64::from(b.1.len) - a.1.offset,
            _ => u64::MAX,
        };
        if refs.len() < 2 || span > 1 << 20 {
            return lines.iter().map(|&i| self.read(i)).collect();
        }
        let (file, first) = refs[0];
        let name = &self.index.stamps[file as usize].file;
        let whole = super::index::LineRef {
            offset: first.offset,
            len: span as u32,
            line: first.line,
        };
        // The file's borrow ends with this statement: a span that cannot be read whole (the
        // file was cut short under the game) is read again line by line, each line's own
        // error told and the others spawned.
        let read = read_line(&mut *self.files[file as usize].borrow_mut(), whole);
        let Ok(bytes) = read else {
            return lines.iter().map(|&i| self.read(i)).collect();
        };
        refs.iter()
            .zip(lines)
            .map(|((_, r), &i)| {
                let at = (r.offset - first.offset) as usize;
                parse_line(&bytes[at..at + r.len as usize])
                    .map_err(|m| {
                        format!(
                            "{name}: line {}: the file changed since it was indexed: {m}",
                            r.line
                        )
                    })
                    .and_then(|e| self.same_id(i, e))
            })
            .collect()
    }

    /// Makes [`State::stored_ids`] again from the records (after they were replaced whole).
    pub fn reindex_stored(&mut self) {
        self.stored_ids = self
            .records
            .values()
            .flatten()
            .filter_map(|s| match s {
                Stored::Entity {
                    line: None, entity, ..
                } => Some(entity.id.clone()),
                _ => None,
            })
            .collect();
    }

    /// Whether `id` may not be spawned: a district line's id (its entity is live, stored or
    /// gone for good), or a stored entity's.
    pub fn reserved(&self, id: &EntityId) -> bool {
        self.stored_ids.contains(id) || self.line_of(id.as_str()).is_some()
    }

    /// The district line holding `id`, if any.
    pub fn line_of(&self, id: &str) -> Option<u32> {
        self.index
            .candidates(id)
            .find(|&i| self.read(i).is_ok_and(|e| e.id.as_str() == id))
    }

    /// With `worldDir`: `chunk`'s record may have changed.
    fn touch(&mut self, chunk: ChunkPos) {
        if self.persist.is_some() {
            self.dirty.insert(chunk);
        }
    }

    fn index_live(&mut self, id: &EntityId, chunk: ChunkPos, seq: u64) {
        self.touch(chunk);
        if let Some(c) = self.live.get(id).map(|l| l.chunk) {
            self.touch(c);
        }
        if let Some(l) = self.live.get_mut(id) {
            remove_from(&mut self.by_chunk, l, id);
            l.chunk = chunk;
            l.seq = seq;
        }
        self.by_chunk
            .entry(chunk)
            .or_default()
            .insert(seq, id.clone());
    }

    fn unindex(&mut self, id: &EntityId) -> Option<Live> {
        let l = self.live.remove(id)?;
        self.touch(l.chunk);
        remove_from(&mut self.by_chunk, &l, id);
        Some(l)
    }

    /// A chunk of the active scene loads: its stored entities are spawned (district file order
    /// for a chunk without kept differences, stored order otherwise).
    pub fn materialise(&mut self, world: &mut World, chunk: ChunkPos) -> Count {
        let Some(scene) = self.active else {
            return (chunk, 0);
        };
        self.touch(chunk);
        let list = match self.records.remove(&(scene, chunk)) {
            Some(list) => list,
            None => self.index.group(scene, chunk).map(Stored::Line).collect(),
        };
        let lines: Vec<u32> = list
            .iter()
            .filter_map(|s| match s {
                Stored::Line(i) => Some(*i),
                Stored::Entity { .. } => None,
            })
            .collect();
        let mut read = self.read_many(&lines).into_iter();
        let mut count = 0;
        for s in list {
            let (line, base, entity) = match s {
                Stored::Line(i) => match read.next().expect("one read per line") {
                    Ok(e) => (Some(i), entity_hash(&e), e),
                    Err(m) => {
                        self.stored = self.stored.saturating_sub(1);
                        self.errors.push((chunk, m));
                        continue;
                    }
                },
                Stored::Entity { line, base, entity } => {
                    if line.is_none() {
                        self.stored_ids.remove(&entity.id);
                    }
                    (line, base, *entity)
                }
            };
            self.stored = self.stored.saturating_sub(1);
            let id = entity.id.clone();
            let at = self.home_of(entity.position);
            let data = entity.data.as_deref().cloned();
            if let Err(e) = world.spawn_restored(entity) {
                self.errors.push((chunk, e.to_string()));
                continue;
            }
            let seq = world.spawn_seq(&id).unwrap_or_default();
            self.data.insert(id.clone(), data);
            self.live.insert(
                id.clone(),
                Live {
                    line,
                    base,
                    chunk: at,
                    seq,
                },
            );
            self.index_live(&id, at, seq);
            count += 1;
        }
        (chunk, count)
    }

    /// The entities never stored: the anchors (every `player`, the controlled one), the
    /// vehicles they ride.
    fn protected(world: &World) -> FxHashSet<EntityId> {
        let mut out = FxHashSet::default();
        for a in world.anchors().chain(world.player()) {
            out.insert(a.id.clone());
            if let Some(v) = world.vehicle_of(a) {
                out.insert(v.id.clone());
            }
        }
        out
    }

    /// Stores `ids` (live, streamed, in `chunk`, in this order) under `chunk` of the last scene.
    /// `released`: the chunk was loaded until now (what it held is live, not stored).
    fn store_ids(
        &mut self,
        world: &mut World,
        chunk: ChunkPos,
        ids: Vec<EntityId>,
        released: bool,
    ) -> Count {
        let Some(scene) = self.last else {
            return (chunk, 0);
        };
        self.touch(chunk);
        self.released |= self.persist.is_some();
        let mut list = match self.records.remove(&(scene, chunk)) {
            Some(list) => list,
            None if released => Vec::new(),
            None => self.index.group(scene, chunk).map(Stored::Line).collect(),
        };
        let had = list.len();
        let mut lives = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(live) = self.unindex(&id) else {
                continue;
            };
            self.check.remove(&id);
            self.data.remove(&id);
            lives.push((id, live));
        }
        let ids: Vec<EntityId> = lives.iter().map(|(id, _)| id.clone()).collect();
        // One pass over the world for the whole chunk.
        let despawned = world.despawn_many(&ids);
        for ((_, live), e) in lives.into_iter().zip(despawned) {
            let Ok(mut e) = e else {
                continue;
            };
            e.tags.remove(DORMANT);
            let same = live.line.is_some_and(|i| self.index.home(i) == chunk)
                && entity_hash(&e) == live.base;
            if live.line.is_none() {
                self.stored_ids.insert(e.id.clone());
            }
            list.push(match (same, live.line) {
                (true, Some(i)) => Stored::Line(i),
                _ => Stored::Entity {
                    line: live.line,
                    base: live.base,
                    entity: Box::new(e),
                },
            });
        }
        let count = list.len() - had;
        self.stored += count as u64;
        // Only differences are kept: a chunk holding exactly its district lines costs nothing.
        let group = self.index.group(scene, chunk);
        let baseline =
            list.len() == group.len() && list.iter().zip(group).all(|(s, i)| *s == Stored::Line(i));
        if !baseline {
            self.records.insert((scene, chunk), list);
        }
        (chunk, count)
    }

    /// A chunk was released: every live streamed entity in it that may be stored is.
    pub fn release(&mut self, world: &mut World, chunk: ChunkPos) -> Count {
        let protected = Self::protected(world);
        let ids: Vec<EntityId> = self
            .by_chunk
            .get(&chunk)
            .map(|m| {
                m.values()
                    .filter(|id| storable(world, id, &protected))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        self.store_ids(world, chunk, ids, true)
    }

    /// The end of a tick: every streamed entity that changed and stands in a chunk that is not
    /// loaded is stored there (chunks in row order, entities in spawn order).
    pub fn end_tick(&mut self, world: &mut World, loaded: impl Fn(ChunkPos) -> bool) -> Vec<Count> {
        if self.check.is_empty() {
            return Vec::new();
        }
        let protected = Self::protected(world);
        let mut due: BTreeMap<(i64, i64), BTreeMap<u64, EntityId>> = BTreeMap::new();
        let mut keep = BTreeSet::new();
        for id in std::mem::take(&mut self.check) {
            let Some(l) = self.live.get(&id) else {
                continue;
            };
            if loaded(l.chunk) {
                continue;
            }
            if !storable(world, &id, &protected) {
                keep.insert(id); // asked again next tick (an anchor may stop being one)
                continue;
            }
            due.entry((l.chunk.z, l.chunk.x))
                .or_default()
                .insert(l.seq, id);
        }
        self.check = keep;
        due.into_iter()
            .map(|((z, x), ids)| {
                self.store_ids(
                    world,
                    ChunkPos::new(x, z),
                    ids.into_values().collect(),
                    false,
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// What the kit hears of changed entities.
    pub fn changed(&mut self, ids: &[EntityId], world: &World) {
        for id in ids {
            match world.get(id) {
                None => {
                    if let Some(l) = self.unindex(id) {
                        if l.line.is_some() {
                            self.gone.insert(id.clone());
                        }
                    }
                    self.check.remove(id);
                    self.data.remove(id);
                }
                Some(e) => {
                    let district = self.live.get(id).is_some_and(|l| l.line.is_some());
                    if district || e.has_tag(STREAMED) {
                        let chunk = self.home_of(e.position);
                        let seq = world.spawn_seq(id).unwrap_or_default();
                        self.live.entry(id.clone()).or_insert(Live {
                            line: None,
                            base: 0,
                            chunk,
                            seq,
                        });
                        self.index_live(id, chunk, seq);
                        self.check.insert(id.clone());
                    } else if self.live.contains_key(id) {
                        self.unindex(id);
                        self.check.remove(id);
                    }
                    self.data.insert(id.clone(), e.data.as_deref().cloned());
                }
            }
        }
    }

    /// Applies the sets mods queued, in call order (an entity gone meanwhile is skipped).
    pub fn apply_pending(state: &Rc<RefCell<State>>, world: &mut World) {
        let pending = std::mem::take(&mut state.borrow_mut().pending);
        for (id, data) in pending {
            let _ = world.set_data(&id, data);
        }
    }
}

/// Why line `line` of district file `name` could not be read again.
fn read_error(name: &str, line: u32, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        format!(
            "{name}: line {line}: the file changed since it was indexed: it was cut short \
             before this line's end; not spawned"
        )
    } else {
        format!("{name}: line {line}: cannot read: {e}")
    }
}

/// Removes `id`'s place in the chunk index, if it is there.
fn remove_from(
    by_chunk: &mut BTreeMap<ChunkPos, BTreeMap<u64, EntityId>>,
    l: &Live,
    id: &EntityId,
) {
    if let Some(m) = by_chunk.get_mut(&l.chunk) {
        if m.get(&l.seq) == Some(id) {
            m.remove(&l.seq);
        }
        if m.is_empty() {
            by_chunk.remove(&l.chunk);
        }
    }
}

fn storable(world: &World, id: &EntityId, protected: &FxHashSet<EntityId>) -> bool {
    !protected.contains(id) && world.get(id).is_some_and(|e| !e.has_tag(PERSISTENT))
}
