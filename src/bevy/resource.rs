//! [`WorldStreaming`]: the game as a non-send resource, and what systems read of it.
//!
//! The kit's state is shared through `Rc<RefCell<…>>` (services are `Rc<dyn …>`), so a game
//! is `!Send`: it lives in the app as non-send data and the systems that touch it run on the
//! main thread (docs/bevy.md gives the measured cost of this and of the alternative).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use ::bevy::prelude::{Entity, IVec3};

use crate::game::Game;
use crate::grid::{ChunkPos, Position};
use crate::host::{EntityId, Event};
use crate::kits::district::{DistrictService, DISTRICT};
use crate::kits::streaming::StreamingService;
use crate::kits::terrain::{ChunkData, Snapshot, SnapshotError, TerrainService, TERRAIN};

use super::coords::{chunk_ivec3, ivec3_chunk};
use super::plugin::StreamingPluginConfig;

/// The running game, read (`NonSend<WorldStreaming>`) and driven (`NonSendMut<WorldStreaming>`)
/// from systems: the streaming service (what is loaded), the terrain (what is built, its
/// cells), the last step's events, and the [`Game`] itself for everything else (inputs, saves).
pub struct WorldStreaming {
    pub(crate) game: Game,
    streaming: Option<Rc<dyn StreamingService>>,
    terrain: Option<Rc<dyn TerrainService>>,
    pub(crate) district: Option<Rc<dyn DistrictService>>,
    pub(crate) config: StreamingPluginConfig,
    /// The events of the last step (its inputs and its tick), oldest first.
    pub(crate) events: Vec<Event>,
    /// Kit ticks run by the plugin.
    pub(crate) steps: u64,
    /// Bevy entity → its kit entity, and whether the plugin spawned that entity.
    pub(crate) anchors: BTreeMap<Entity, super::anchor::Bound>,
    /// Live streamed kit entities → their Bevy entity.
    pub(crate) mirrored: BTreeMap<EntityId, Entity>,
    /// Whether the district entities must be brought in step at the next step whatever the
    /// events say (at start, after a change made through this resource).
    pub(crate) districts_dirty: bool,
}

impl WorldStreaming {
    /// The resource for `game` (insert it with `app.insert_non_send(..)` before adding
    /// [`super::WorldStreamingPlugin::inserted`]).
    pub fn new(game: Game) -> Self {
        let engine = game.engine();
        WorldStreaming {
            streaming: game.streaming(),
            terrain: engine.service::<dyn TerrainService>(TERRAIN),
            district: engine.service::<dyn DistrictService>(DISTRICT),
            game,
            config: StreamingPluginConfig::default(),
            events: Vec::new(),
            steps: 0,
            anchors: BTreeMap::new(),
            mirrored: BTreeMap::new(),
            districts_dirty: true,
        }
    }

    pub(crate) fn set_config(&mut self, config: StreamingPluginConfig) {
        self.config = config;
    }

    /// The game.
    pub fn game(&self) -> &Game {
        &self.game
    }

    /// The game, to drive by hand (inputs, saves, settings). District entities changed this
    /// way are brought in step with Bevy at the next step.
    pub fn game_mut(&mut self) -> &mut Game {
        self.districts_dirty = true;
        &mut self.game
    }

    /// The `world.streaming` service (`None` when the scene does not enable the kit).
    pub fn streaming(&self) -> Option<&dyn StreamingService> {
        self.streaming.as_deref()
    }

    /// The `world.terrain` service (`None` when the scene does not enable the kit).
    pub fn terrain(&self) -> Option<&dyn TerrainService> {
        self.terrain.as_deref()
    }

    /// The `world.district` service (`None` when the scene does not enable the kit).
    pub fn district(&self) -> Option<&dyn DistrictService> {
        self.district.as_deref()
    }

    /// The kit's tick counter: the last tick that ran.
    pub fn tick(&self) -> u64 {
        self.game.engine().tick_count()
    }

    /// How many kit ticks the plugin ran (one per `FixedUpdate` step).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Every event of the last step (the anchors' input and the tick), oldest first: the
    /// chunk events the messages carry and all the others (`world.district.materialised`,
    /// `mod.error`, …).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Loaded chunks `(x, y, z)` in row order (y, then z, then x; `y` 0 without `vertical`).
    pub fn loaded(&self) -> Vec<IVec3> {
        let loaded = self.streaming().map(|s| s.loaded()).unwrap_or_default();
        loaded.into_iter().map(chunk_ivec3).collect()
    }

    /// Whether chunk `(x, y, z)` is loaded: with `vertical` on the section of row `y`; without
    /// it only row 0 exists.
    pub fn is_loaded(&self, chunk: IVec3) -> bool {
        self.streaming()
            .is_some_and(|s| s.is_loaded(ivec3_chunk(chunk)))
    }

    /// Whether `chunk` is complete (docs/reference/engines.md#the-bevy-plugin): it and every
    /// chunk within `neighbours` rings of it that overlaps the ground are loaded and built.
    pub fn is_complete(&self, chunk: IVec3) -> bool {
        self.streaming()
            .is_some_and(|s| s.is_complete(ivec3_chunk(chunk)))
    }

    /// The complete chunks in row order.
    pub fn complete(&self) -> Vec<IVec3> {
        let complete = self.streaming().map(|s| s.complete()).unwrap_or_default();
        complete.into_iter().map(chunk_ivec3).collect()
    }

    /// The loaded columns `(x, 0, z)` in row order (z, then x): a column is loaded while one of
    /// its sections is; without `vertical` the loaded chunks.
    pub fn columns(&self) -> Vec<IVec3> {
        let columns = self.streaming().map(|s| s.columns()).unwrap_or_default();
        columns.into_iter().map(chunk_ivec3).collect()
    }

    /// Whether column `(x, z)` of `column` is loaded (its `y` does not matter).
    pub fn is_column_loaded(&self, column: IVec3) -> bool {
        self.streaming()
            .is_some_and(|s| s.is_column_loaded(self::column(column)))
    }

    /// The chunk containing `pos` (with `vertical` on its section: `y` from `pos.y`).
    pub fn chunk_of(&self, pos: Position) -> Option<IVec3> {
        self.streaming().map(|s| chunk_ivec3(s.chunk_of(pos)))
    }

    /// Whether the terrain of `chunk`'s column `(x, z)` is built (terrain is per column: `y`
    /// does not matter).
    pub fn is_built(&self, chunk: IVec3) -> bool {
        self.terrain().is_some_and(|t| t.is_built(column(chunk)))
    }

    /// A built column's terrain (`chunk`'s `(x, z)`; `y` does not matter): its cells (heights
    /// and materials, row order) and hash. The data is shared and immutable (`Arc`), so a
    /// system may hand it to a task building a mesh.
    pub fn chunk(&self, chunk: IVec3) -> Option<Arc<ChunkData>> {
        self.terrain().and_then(|t| t.chunk(column(chunk)))
    }

    /// A bordered snapshot of `chunk` with `skin` (0..=8, at most `cellsPerChunk`): its cells and
    /// its neighbours' `skin` cells around them, with the chunk's version, copied in one call
    /// (docs/reference/engines.md#the-bevy-plugin). It owns its cells, so a system may hand it to
    /// a task building a mesh; the mesh is stale once [`WorldStreaming::version`] moves. Not
    /// complete (with skin 0: not built), or no terrain: [`SnapshotError::NotComplete`].
    pub fn snapshot(&self, chunk: IVec3, skin: u32) -> Result<Snapshot, SnapshotError> {
        match self.terrain() {
            Some(t) => t.snapshot(column(chunk), skin),
            None => Err(SnapshotError::NotComplete),
        }
    }

    /// A built chunk's version (1 at its commit, one more at each edit of it or of a
    /// neighbour); `None` when it is not built.
    pub fn version(&self, chunk: IVec3) -> Option<u64> {
        self.terrain().and_then(|t| t.version(column(chunk)))
    }

    /// The terrain height of the cell containing `pos`, if its chunk is built.
    pub fn height_at(&self, pos: Position) -> Option<u16> {
        self.terrain().and_then(|t| t.height_at(pos))
    }

    /// The Bevy entity of live streamed kit entity `id`, while it is mirrored.
    pub fn district_entity(&self, id: &EntityId) -> Option<Entity> {
        self.mirrored.get(id).copied()
    }

    /// The kit entity a Bevy anchor is bound to.
    pub fn anchor_id(&self, anchor: Entity) -> Option<&EntityId> {
        self.anchors.get(&anchor).map(|b| &b.id)
    }
}

/// The column `(x, z)` of chunk `(x, y, z)`: where its terrain is.
fn column(chunk: IVec3) -> ChunkPos {
    ivec3_chunk(chunk).column()
}
