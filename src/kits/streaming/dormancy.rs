//! Dormancy: an entity tagged `streamable` carries `dormant` exactly while the chunk of its
//! position is not loaded. Entities are indexed by chunk, so a load or release touches only the
//! entities of that chunk, and an entity change touches only that entity.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use crate::grid::{ChunkPos, Grid};
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
        grid: &Grid,
        is_loaded: impl Fn(ChunkPos) -> bool,
    ) {
        let now = world
            .get(id)
            .filter(|e| e.has_tag(STREAMABLE))
            .map(|e| grid.chunk_of(e.position));
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
        grid: &Grid,
        is_loaded: impl Fn(ChunkPos) -> bool,
    ) {
        self.by_chunk.clear();
        self.chunk_of.clear();
        let ids: Vec<EntityId> = world.iter().map(|e| e.id.clone()).collect();
        for id in &ids {
            self.entity_changed(id, world, grid, &is_loaded);
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
