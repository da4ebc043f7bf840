//! Dormancy: an entity tagged `streamable` carries `dormant` exactly while the chunk of its
//! position is not loaded (with vertical sections, the section of its position:
//! docs/reference/streaming.md#dormancy-in-3-d). Entities are indexed by chunk, so a load or release touches only the
//! entities of that chunk, and an entity change touches only that entity.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use crate::grid::{ChunkPos, Position};
use crate::host::{EntityId, World};

/// The tag that opts an entity in.
pub const STREAMABLE: &str = "streamable";
/// The tag the kit maintains.
pub const DORMANT: &str = "dormant";

/// Streamable entities by chunk.
#[derive(Debug, Default, Clone)]
pub struct Dormancy {
    by_chunk: HashMap<ChunkPos, BTreeSet<EntityId>>,
    chunk_of: HashMap<EntityId, ChunkPos>,
}

impl Dormancy {
    /// Brings one entity up to date after it changed (spawn, despawn, move, tag, untag).
    pub fn entity_changed(
        &mut self,
        id: &EntityId,
        world: &mut World,
        chunk_of: impl Fn(Position) -> ChunkPos,
        is_loaded: impl Fn(ChunkPos) -> bool,
    ) {
        let now = world
            .get(id)
            .filter(|e| e.has_tag(STREAMABLE))
            .map(|e| chunk_of(e.position));
        let before = self.chunk_of.get(id).copied();
        if before != now {
            if let Some(old) = before {
                self.unindex(id, old);
            }
            if let Some(new) = now {
                self.by_chunk.entry(new).or_default().insert(id.clone());
                self.chunk_of.insert(id.clone(), new);
            }
        }
        match now {
            Some(c) => world.set_derived_tag(id, DORMANT, !is_loaded(c)),
            // Removing `streamable` also removes `dormant`.
            None if before.is_some() => world.set_derived_tag(id, DORMANT, false),
            None => {}
        }
    }

    fn unindex(&mut self, id: &EntityId, chunk: ChunkPos) {
        self.chunk_of.remove(id);
        if let Some(set) = self.by_chunk.get_mut(&chunk) {
            set.remove(id);
            if set.is_empty() {
                self.by_chunk.remove(&chunk);
            }
        }
    }

    /// Sets `dormant` on the entities of `chunk` to `!loaded`.
    pub fn chunk_changed(&self, chunk: ChunkPos, loaded: bool, world: &mut World) {
        if let Some(ids) = self.by_chunk.get(&chunk) {
            for id in ids {
                world.set_derived_tag(id, DORMANT, !loaded);
            }
        }
    }

    /// Rebuilds the index from every entity (after loading a save) and fixes every tag.
    pub fn rebuild(
        &mut self,
        world: &mut World,
        chunk_of: impl Fn(Position) -> ChunkPos,
        is_loaded: impl Fn(ChunkPos) -> bool,
    ) {
        self.by_chunk.clear();
        self.chunk_of.clear();
        let ids: Vec<EntityId> = world.iter().map(|e| e.id.clone()).collect();
        for id in &ids {
            self.entity_changed(id, world, &chunk_of, &is_loaded);
        }
    }

    /// How many streamable entities are indexed.
    pub fn len(&self) -> usize {
        self.chunk_of.len()
    }

    /// Whether no streamable entity is indexed.
    pub fn is_empty(&self) -> bool {
        self.chunk_of.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Grid;
    use crate::host::Entity;

    fn spawn(w: &mut World, id: &str, tags: &[&str], x: f64) {
        w.spawn(Entity {
            id: id.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            position: Position::new(x, 8.0),
            rides: None,
            data: None,
        })
        .unwrap();
    }

    fn dormant(w: &World) -> Vec<&str> {
        w.iter()
            .filter(|e| e.has_tag(DORMANT))
            .map(|e| e.id.as_str())
            .collect()
    }

    #[test]
    fn entities_are_indexed_by_chunk_and_follow_moves_loads_and_tags() {
        let g = Grid::new(32.0);
        let grid = |p: Position| g.chunk_of(p);
        let mut w = World::new();
        spawn(&mut w, "a", &[STREAMABLE], 1.0);
        spawn(&mut w, "b", &[STREAMABLE], 2.0);
        spawn(&mut w, "rock", &[DORMANT], 3.0);
        let loaded = |c: ChunkPos| c == ChunkPos::new(0, 0);
        let mut d = Dormancy::default();
        assert!(d.is_empty());
        d.rebuild(&mut w, grid, loaded);
        assert_eq!((d.len(), d.is_empty()), (2, false));
        assert_eq!(dormant(&w), ["rock"], "a and b sit in the loaded (0,0)");
        // `a` walks to (1,0); `b` stays in (0,0), which is then released.
        w.move_to(&"a".into(), Position::new(40.0, 8.0)).unwrap();
        d.entity_changed(&"a".into(), &mut w, grid, loaded);
        assert_eq!(dormant(&w), ["a", "rock"]);
        d.chunk_changed(ChunkPos::new(0, 0), false, &mut w);
        assert_eq!(dormant(&w), ["a", "b", "rock"]);
        d.chunk_changed(ChunkPos::new(1, 0), true, &mut w);
        assert_eq!(dormant(&w), ["b", "rock"]);
        // Untagging `streamable` removes `dormant` and the index entry; a `dormant` tag on an
        // entity that never was streamable is not the kit's.
        w.untag(&"b".into(), STREAMABLE).unwrap();
        d.entity_changed(&"b".into(), &mut w, grid, loaded);
        d.entity_changed(&"rock".into(), &mut w, grid, loaded);
        assert_eq!(dormant(&w), ["rock"]);
        assert_eq!(d.len(), 1);
        w.despawn(&"a".into()).unwrap();
        d.entity_changed(&"a".into(), &mut w, grid, loaded);
        assert!(d.is_empty());
    }
}
