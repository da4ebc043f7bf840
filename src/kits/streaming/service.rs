//! The `world.streaming` service: what other kits, mods and tests may ask of the kit. Reach it
//! through the service registry as `Rc<dyn StreamingService>`, never as the concrete kit.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::{ChunkPos, Position};
use crate::host::{EntityId, ModId};

use super::config::{BudgetMs, Overrides, Radius, Settings, Shape, Vertical};
use super::foci::TicketError;

/// A preload ticket as the service and the state file show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TicketInfo {
    /// Its id.
    pub id: String,
    /// Where (east-west, metres).
    #[serde(serialize_with = "crate::json::serialize_number")]
    pub x: f64,
    /// Its height (metres), shown with vertical sections on: the row it wants around
    /// (docs/reference/streaming.md#tickets-in-3-d); absent in a flat world.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::json::serialize_some_number"
    )]
    pub y: Option<f64>,
    /// Where (north-south, metres).
    #[serde(serialize_with = "crate::json::serialize_number")]
    pub z: f64,
    /// Its radius.
    pub radius: u32,
    /// Ticks it still counts in after the current one: its last tick minus the current tick.
    pub ticks_left: u64,
    /// Its priority (docs/reference/config.md#outputs-that-appear-only-when-used), shown only when
    /// the scene uses scheduling (docs/reference/config.md#outputs-that-appear-only-when-used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
}

/// A kit readiness waits for (docs/reference/streaming.md#readiness): a chunk is ready once every
/// builder built it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BuilderId(pub(crate) u32);

/// A held refusal as the service and the files show it: `{x, z, hook, mod, reason}`, with
/// vertical sections `{x, y, z, hook, mod, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    /// Chunk column.
    pub x: i64,
    /// The section row, with vertical sections on (docs/reference/streaming.md#section-events);
    /// absent in a flat world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<i64>,
    /// Chunk row.
    pub z: i64,
    /// `world.chunk.load` or `world.chunk.unload`.
    pub hook: String,
    /// The mod that cancelled.
    #[serde(rename = "mod")]
    pub by: String,
    /// Its reason.
    pub reason: String,
}

/// A chunk callback: `(chunk, loaded)`.
pub type ChunkCallback = Box<dyn FnMut(ChunkPos, bool)>;

/// A completeness callback: `(chunk, complete)` (docs/reference/streaming.md#complete-chunks).
pub type CompleteCallback = Box<dyn FnMut(ChunkPos, bool)>;

/// A chunk callback that may act on the world: `(ctx, chunk, loaded)`.
pub type ChunkWorldCallback = Box<dyn FnMut(&mut ChunkCtx<'_>, ChunkPos, bool)>;

/// A LOD block the streaming kit loaded or released (docs/reference/lod.md#releasing-blocks): what
/// a [`StreamingService::on_lod_blocks`] callback hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LodChange {
    /// Its level (1 = the first `lod` entry).
    pub level: u32,
    /// The block.
    pub block: ChunkPos,
    /// The side in chunks of the level's blocks it was planned with.
    pub step: u32,
    /// Loaded (`true`) or released.
    pub loaded: bool,
}

/// A LOD blocks callback: `(tick, changes)`, the tick their `world.lod.*` events are stamped
/// with and the changes in the order of those events (a tick's releases, then its loads).
pub type LodCallback = Box<dyn FnMut(u64, &[LodChange])>;

/// What a [`StreamingService::on_chunk_with`] callback may touch while it runs: the entities
/// (spawn, despawn, move, tag, untag …) and the event bus, at the moment the kit announces the
/// chunk, so what it does is part of the tick, in subscription order, the same on every run.
/// Entity changes reach the kits (dormancy included) once the callbacks of that step are done.
pub struct ChunkCtx<'a> {
    pub(crate) tick: u64,
    pub(crate) world: &'a mut crate::host::World,
    pub(crate) events: &'a mut crate::host::EventBus,
}

impl ChunkCtx<'_> {
    /// The tick the change belongs to (events emitted now are stamped with it).
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// The entities, to change.
    pub fn world(&mut self) -> &mut crate::host::World {
        self.world
    }

    /// Emits an event after the ones already queued.
    pub fn emit(
        &mut self,
        event: impl Into<std::borrow::Cow<'static, str>>,
        data: impl Into<crate::host::EventData>,
    ) {
        self.events.emit(event, data);
    }
}

/// A list the service gives, for [`StreamingService::listed_len`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// [`StreamingService::loaded`].
    Loaded,
    /// [`StreamingService::pending`].
    Pending,
    /// [`StreamingService::around`] (of any position).
    Around,
    /// [`StreamingService::lod_loaded`] of a level.
    Lod(u32),
}

/// When a [`StreamingService::on_chunk_stage`] callback runs, around the announcement of a load
/// or a release (the `onChunk` callbacks and the `world.chunk.loaded` / `unloaded` event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkStage {
    /// On a load, after the chunk is marked loaded and before the `onChunk` callbacks run and
    /// `world.chunk.loaded` is emitted (a kit materialising what the chunk holds:
    /// docs/reference/district.md#materialising).
    BeforeLoaded = 0,
    /// On a release, after the `onChunk` callbacks ran and `world.chunk.unloaded` was emitted
    /// (a kit storing what the chunk held).
    AfterUnloaded = 1,
}

pub(crate) enum Callback {
    Plain(ChunkCallback),
    World(ChunkWorldCallback),
}

pub(crate) struct Subscriber {
    pub(crate) alive: Cell<bool>,
    pub(crate) callback: RefCell<Callback>,
}

/// The handle `on_chunk` returns; [`ChunkSubscription::unsubscribe`] stops the callbacks.
/// Dropping the handle keeps the subscription.
#[must_use = "keep the handle to be able to unsubscribe"]
pub struct ChunkSubscription {
    pub(crate) subscriber: Weak<Subscriber>,
    pub(crate) list: Weak<RefCell<Vec<Rc<Subscriber>>>>,
}

impl ChunkSubscription {
    /// Stops the callbacks (also for a release or load already being announced).
    pub fn unsubscribe(self) {
        if let Some(s) = self.subscriber.upgrade() {
            s.alive.set(false);
            if let Some(list) = self.list.upgrade() {
                if let Ok(mut list) = list.try_borrow_mut() {
                    list.retain(|x| !Rc::ptr_eq(x, &s));
                }
            }
        }
    }
}

/// What the `world.streaming` kit offers other kits, mods and tests.
pub trait StreamingService {
    /// Loaded chunks in row order (`z`, then `x`; with vertical sections, the sections by `y`,
    /// then `z`, then `x`).
    fn loaded(&self) -> Vec<ChunkPos>;
    /// Wanted, unloaded, unrefused chunks, nearest-first.
    fn pending(&self) -> Vec<ChunkPos>;
    /// How long `list` is, worked out without gathering it (for `Around`, at most: the footprint
    /// before the ground clips it), so that a caller who pays per entry (a Lua mod,
    /// docs/lua-vm.md#what-a-service-call-costs) is charged before the work is done.
    fn listed_len(&self, list: Listed) -> usize {
        match list {
            Listed::Loaded => self.loaded().len(),
            Listed::Pending => self.pending().len(),
            Listed::Around => self.around(Position::new(0.0, 0.0)).len(),
            Listed::Lod(level) => self.lod_loaded(level).len(),
        }
    }
    /// Whether `chunk` is loaded.
    fn is_loaded(&self, chunk: ChunkPos) -> bool;
    /// The chunk containing `pos`; with vertical sections the section, its `y` from `pos.y`
    /// (docs/reference/streaming.md#shapes-and-sections).
    fn chunk_of(&self, pos: Position) -> ChunkPos;
    /// The wanted footprint around `pos` (current radius and shape, with vertical sections the
    /// rows too; ground bounds), nearest-first.
    fn around(&self, pos: Position) -> Vec<ChunkPos>;
    /// The shape in force (docs/reference/streaming.md#shapes-and-sections).
    fn shape(&self) -> Shape {
        Shape::Square
    }
    /// The vertical sections in force (`radius` rows each side, `height` resolved); `None` in
    /// a flat world (docs/reference/streaming.md#shapes-and-sections).
    fn vertical(&self) -> Option<Vertical> {
        None
    }
    /// The loaded columns `(x, z)` (`y` 0) in row order (`z`, then `x`): a column is loaded
    /// while at least one of its sections is. In a flat world, the loaded chunks.
    fn columns(&self) -> Vec<ChunkPos> {
        self.loaded()
    }
    /// Whether column `(column.x, column.z)` has a loaded section (in a flat world, whether
    /// the chunk is loaded).
    fn is_column_loaded(&self, column: ChunkPos) -> bool {
        self.is_loaded(column)
    }
    /// Calls `callback(chunk, loaded)` on every load and release, in subscription order; and
    /// after a save is loaded, for the difference between the loaded set before and after
    /// (releases first, then loads, each in row order) while [`StreamingService::restoring`] is
    /// true. So a subscriber's view always equals [`StreamingService::loaded`].
    fn on_chunk(&self, callback: ChunkCallback) -> ChunkSubscription;
    /// [`StreamingService::on_chunk`] for a callback that acts on the world through a
    /// [`ChunkCtx`] (spawn, tag … while the chunk is announced). Both kinds run in one
    /// subscription order.
    fn on_chunk_with(&self, callback: ChunkWorldCallback) -> ChunkSubscription;
    /// Calls `callback(ctx, chunk, loaded)` at `stage` of every load ([`ChunkStage::BeforeLoaded`])
    /// or every release ([`ChunkStage::AfterUnloaded`]) of a tick or a scene change, in
    /// subscription order; never for what a load of a save changed (the kit restores its own).
    fn on_chunk_stage(&self, stage: ChunkStage, callback: ChunkWorldCallback) -> ChunkSubscription;
    /// The side of a chunk in metres.
    fn chunk_size(&self) -> f64;
    /// Held refusals, by `z`, then `x`, then hook.
    fn refusals(&self) -> Vec<Refusal>;
    /// Drops the refusal held at `chunk`, if any; returns whether one was held.
    fn release(&self, chunk: ChunkPos) -> bool;
    /// The last focus (`None` outside a scene or before any focus).
    fn focus(&self) -> Option<Position>;
    /// The radius in force from the next tick (mod > scene layer > config).
    fn radius(&self) -> u32;
    /// The loads per tick in force from the next tick: `max(1, floor(budgetMs))`.
    fn loads_per_tick(&self) -> usize;
    /// The ground bounds the wanted square is clipped to.
    fn bounds(&self) -> Option<crate::grid::Bounds>;
    /// A mod sets the keys present in `overrides` (from the next tick on; saved with the game).
    fn set(&self, by: &ModId, overrides: Overrides);
    /// A mod sets the radius (from the next tick on; saved with the game).
    fn set_radius(&self, by: &ModId, radius: Radius) {
        let radius = Some(radius);
        self.set(
            by,
            Overrides {
                radius,
                ..Overrides::default()
            },
        );
    }
    /// A mod sets the load budget (from the next tick on; saved with the game).
    fn set_budget_ms(&self, by: &ModId, budget: BudgetMs) {
        let budget_ms = Some(budget);
        self.set(
            by,
            Overrides {
                budget_ms,
                ..Overrides::default()
            },
        );
    }
    /// Every setting in force from the next tick.
    fn settings(&self) -> Settings;
    /// The foci in force (non-ticket ones, then tickets in id order).
    fn foci(&self) -> Vec<Position>;
    /// Requests (or replaces) preload ticket `id`: a focus at `at` with `radius` (0..=64) for
    /// `ticks` (1..=2^31-1) tick plans, counting from tick `from` (an input's stamp), else from
    /// the next tick (a mod during a tick, or Rust between ticks).
    /// `priority` (0..=255, docs/reference/streaming.md#priorities; `None`: 0, and the request does
    /// not by itself make the scene show the outputs,
    /// docs/reference/config.md#outputs-that-appear-only-when-used). Past `maxTicketChunks` it is
    /// refused whole ([`TicketError::OverCap`]) and `world.ticket.refused {id, reason}` is emitted
    /// when the engine next settles (see docs/many-foci.md#the-ticket-cap).
    fn request(
        &self,
        id: &str,
        at: Position,
        radius: i64,
        ticks: i64,
        from: Option<u64>,
        priority: Option<u8>,
    ) -> Result<(), TicketError>;
    /// [`StreamingService::request`] from the next tick, priority 0.
    fn request_around(
        &self,
        id: &str,
        at: Position,
        radius: i64,
        ticks: i64,
    ) -> Result<(), TicketError> {
        self.request(id, at, radius, ticks, None, None)
    }
    /// [`StreamingService::request`] from the next tick with `priority`
    /// (docs/reference/streaming.md#priorities).
    fn request_around_with_priority(
        &self,
        id: &str,
        at: Position,
        radius: i64,
        ticks: i64,
        priority: u8,
    ) -> Result<(), TicketError> {
        self.request(id, at, radius, ticks, None, Some(priority))
    }
    /// The predicted foci in force (docs/reference/streaming.md#look-ahead), anchor order; `None`
    /// when the scene does not use docs/reference/streaming.md#look-ahead.
    fn predicted(&self) -> Option<Vec<Position>> {
        None
    }
    /// `world.chunks.holes` of the last tick and `world.chunks.holeTicks`
    /// (docs/reference/streaming.md#holes).
    fn holes(&self) -> (u64, u64) {
        (0, 0)
    }
    /// The chunks `world.chunks.holes` counts, in row order, computed now from the resident
    /// set: right after a tick, exactly the ones it counted (an input applied since, such as a
    /// `release` or a `load`, may change them before the next tick counts again); `None` when
    /// the scene does not use docs/reference/config.md#outputs-that-appear-only-when-used (as
    /// [`StreamingService::predicted`]).
    fn hole_chunks(&self) -> Option<Vec<ChunkPos>> {
        None
    }
    /// The loaded LOD blocks of `level` (1 = the first `lod` entry), row order
    /// (docs/reference/lod.md#lod-levels); empty for a level not in force.
    fn lod_loaded(&self, level: u32) -> Vec<ChunkPos> {
        let _ = level;
        Vec::new()
    }
    /// The loaded LOD blocks per level (level 1 first; every level in force, and any level
    /// still holding blocks), each in row order; `None` when the scene does not use `lod`.
    fn lod(&self) -> Option<Vec<Vec<ChunkPos>>> {
        None
    }
    /// Whether the loaded block `block` of `level` (1 = the first `lod` entry) is ready: built
    /// by every builder that builds blocks (loaded is ready without one). `false` for a block
    /// not loaded.
    fn lod_ready(&self, level: u32, block: ChunkPos) -> bool {
        let _ = (level, block);
        false
    }
    /// The side in chunks of the blocks of `level` (1 = the first `lod` entry) in force.
    fn lod_step(&self, level: u32) -> Option<u32> {
        let _ = level;
        None
    }
    /// The step each LOD level's blocks will be planned with once this kit has loaded the save
    /// section `section` with the scene `scene` active (index = level − 1; 0: no such level):
    /// what a builder's saved blocks are checked against before a load. `None` when the section
    /// is not one this kit loads (its own check says why).
    fn lod_steps_after_load(
        &self,
        section: &serde_json::Value,
        scene: Option<&str>,
    ) -> Option<[u32; crate::kits::streaming::config::MAX_LOD_LEVELS]> {
        let _ = (section, scene);
        None
    }
    /// `world.lod.holes` of the last tick and `world.lod.holeTicks`
    /// (docs/reference/lod.md#lod-holes).
    fn lod_holes(&self) -> (u64, u64) {
        (0, 0)
    }
    /// A builder that builds LOD blocks too: a block is ready (seen) once every such builder
    /// reported it built through [`StreamingService::set_lod_built`].
    fn register_lod_builder(&self, builder: BuilderId) {
        let _ = builder;
    }
    /// A builder reports a loaded block of `level` (1 = the first) built or no longer built.
    fn set_lod_built(&self, builder: BuilderId, level: u32, block: ChunkPos, built: bool) {
        let _ = (builder, level, block, built);
    }
    /// Calls `f` with every LOD block the kit loads or releases, from the next one on: each
    /// tick's (and a scene change's) blocks at once, in the order of their `world.lod.*`
    /// events, as the kit decides them, before those events are delivered. A builder hears of
    /// its work here, typed, rather than by reading the events back. `f` runs with no borrow
    /// of the kit's state held; it lives as long as the kit.
    fn on_lod_blocks(&self, f: LodCallback) {
        let _ = f;
    }
    /// `neighbours` in force (k, 0..=2; docs/reference/streaming.md#complete-chunks).
    fn neighbours(&self) -> u32 {
        0
    }
    /// Whether `chunk` is complete: it and every chunk within ring k of it that overlaps the
    /// ground are loaded and built by every builder (a load-refused neighbour is missing). With
    /// k = 0 this is "loaded and built by every builder" (ring 0 is the chunk itself): the query
    /// answers, but nothing is emitted or counted (no events, no variable, no `on_complete`
    /// calls). See docs/reference/streaming.md#complete-chunks.
    fn is_complete(&self, chunk: ChunkPos) -> bool {
        let _ = chunk;
        false
    }
    /// The complete chunks in row order (`z`, then `x`). Same k = 0 rule as
    /// [`StreamingService::is_complete`].
    fn complete(&self) -> Vec<ChunkPos> {
        Vec::new()
    }
    /// Calls `callback(chunk, complete)` for each `world.chunk.complete` /
    /// `world.chunk.incomplete`, in their order, when they are emitted (k > 0 only).
    fn on_complete(&self, callback: CompleteCallback) {
        let _ = callback;
    }
    /// Removes ticket `id` at once; returns whether it was held.
    fn drop_ticket(&self, id: &str) -> bool;
    /// The held tickets, in id order.
    fn tickets(&self) -> Vec<TicketInfo>;
    /// Whether `entity` is an anchor whose focus is ready: every chunk of its square is loaded
    /// and built by every builder, or held by a load refusal.
    fn ready(&self, entity: &EntityId) -> bool;
    /// Whether ticket `id` is held and its square is ready.
    fn ticket_ready(&self, id: &str) -> bool;
    /// Ready chunks / wanted chunks over the union (1 when nothing is wanted).
    fn progress(&self) -> f64;
    /// Registers a kit that builds loaded chunks: readiness then waits for it to report each
    /// chunk built through [`StreamingService::set_built`]. `None` past 64 builders.
    fn register_builder(&self, name: &str) -> Option<BuilderId>;
    /// A builder reports a loaded chunk built (or no longer built). With vertical sections
    /// builders build columns: `chunk` is the column (its `y` ignored), and a section is built
    /// when its column is built by every builder
    /// (docs/reference/streaming.md#sections-built-by-column).
    fn set_built(&self, builder: BuilderId, chunk: ChunkPos, built: bool);
    /// Forgets every mod override (`set`, `setRadius` …): the scene layer and the config are in
    /// force again from the next tick.
    fn clear_overrides(&self);
    /// Whether the `onChunk` callbacks running now tell what a load of a save changed (no
    /// hook was asked and no event is emitted for these), rather than a load or release of a
    /// tick or a scene change.
    fn restoring(&self) -> bool;
}
