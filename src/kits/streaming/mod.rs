//! `world.streaming`: decides every tick which chunks of the XZ grid are live around the focus,
//! loads them nearest-first within a fixed per-tick budget, releases those beyond `radius + 1`,
//! keeps `dormant` tags, asks the cancellable hooks and tells the kits that build.
//!
//! - [`config`]: settings and their precedence;
//! - [`foci`]: anchors and preload tickets;
//! - [`residency`]: the host-free, incremental record of what is loaded, wanted, pending,
//!   refused, evictable and ready over any number of foci;
//! - [`dormancy`]: streamable entities indexed by chunk;
//! - `events.rs`: the kit's event and hook names;
//! - [`service`]: the service other kits reach it through, and `handle.rs` that service over the
//!   state;
//! - `state.rs` the state, `save.rs` its save section (one check per key);
//! - this file: the kit, which resolves the focus and applies the plan.

mod column_events;
pub mod config;
pub mod dormancy;
pub mod events;
pub mod foci;
mod handle;
pub mod lod;
#[cfg(feature = "lua")]
mod lua;
pub mod residency;
mod save;
pub mod service;
mod state;
mod view;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use indexmap::IndexMap;

use crate::grid::{ChunkPos, Grid, Position};
use crate::host::{
    Cancel, Ctx, EntityId, Event, HookArgs, HookValue, Install, Kit, KitError, KitManifest,
    KitSpec, PreparedSection, Problem, SaveFacts, SceneDef, MOD_ERROR, PLAYER_MOVED,
};
use crate::json::from_value;
use crate::kits::ground::{GroundService, GROUND};

pub use config::{
    BudgetMs, ChunkSize, FocusMode, HoleRing, Lod, LodBudget, LodLevel, LodLevelDef,
    LookAheadTicks, MaxLoaded, MaxRefusals, MaxTicketChunks, Overrides, Priority, Radius, Schedule,
    SectionHeight, Settings, Shape, StreamingConfig, Vertical, VerticalDef, VerticalRadius,
};
pub use events::{
    chunk_event_data, ChunkEvent, StreamingEvent, CAPACITY, CHUNK_COMPLETE, CHUNK_INCOMPLETE,
    CHUNK_LOADED, CHUNK_UNLOADED, COLUMN_LOADED, COLUMN_UNLOADED, HOOK_CHUNK_LOAD,
    HOOK_CHUNK_UNLOAD, LOD_LOADED, LOD_UNLOADED, TICKET_READY, TICKET_REFUSED,
};
use foci::{AnchorCache, Refresh};
pub use foci::{Ticket, TicketError};
use handle::Handle;
pub use residency::{CompleteChange, FocusView, Form, Held, RefusalKind, Residency};
pub use save::SaveSection;
pub use service::{
    BuilderId, ChunkCallback, ChunkCtx, ChunkStage, ChunkSubscription, ChunkWorldCallback,
    CompleteCallback, Listed, LodCallback, LodChange, Refusal, StreamingService, TicketInfo,
};
use state::State;

/// The kit and service id.
pub const STREAMING: &str = "world.streaming";
/// Variable: how many chunks are loaded.
pub const VAR_LOADED: &str = "world.chunks.loaded";
/// Variable: how many chunks are pending.
pub const VAR_PENDING: &str = "world.chunks.pending";
/// Variable: ready chunks / wanted chunks over the union (a float; 1 when nothing is wanted).
pub const VAR_PROGRESS: &str = "world.chunks.progress";
/// Variable: 1 while the wanted chunks outnumber `maxLoaded`, else 0.
pub const VAR_OVER_CAPACITY: &str = "world.chunks.overCapacity";
/// Variable: the chunks within `holeRing` of a player's focus that are not ready
/// (docs/reference/streaming.md#holes).
pub const VAR_HOLES: &str = "world.chunks.holes";
/// Variable: the running sum of `world.chunks.holes` over the ticks (saved).
pub const VAR_HOLE_TICKS: &str = "world.chunks.holeTicks";
/// Variable: how many loaded chunks are complete at the end of the tick (`neighbours > 0` only;
/// docs/reference/streaming.md#complete-chunks).
pub const VAR_COMPLETE: &str = "world.chunks.complete";
/// Variable: LOD blocks loaded over every level (docs/reference/lod.md#lod-variables).
pub const VAR_LOD_LOADED: &str = "world.lod.loaded";
/// Variable: the chunks within the last level's radius of a player's focus seen by nothing.
pub const VAR_LOD_HOLES: &str = "world.lod.holes";
/// Variable: the running sum of `world.lod.holes` over the ticks (saved).
pub const VAR_LOD_HOLE_TICKS: &str = "world.lod.holeTicks";
/// The kit's manifest, read from `kit.json` beside this file.
pub fn manifest() -> KitManifest {
    serde_json::from_str(include_str!("kit.json")).expect("kit.json is a valid manifest")
}

/// The kit's entry of the catalog: its manifest, factory, config schema, save check, Lua table and viewer layer.
pub fn entry() -> crate::host::CatalogEntry {
    let entry = crate::host::CatalogEntry::new(manifest(), Box::new(StreamingKit::from_spec))
        .config_schema("streaming-config.schema.json", || {
            schemars::schema_for!(StreamingConfig)
        })
        .save_check(check_save_section)
        .view(view::LAYER);
    #[cfg(feature = "lua")]
    let entry = entry.lua(lua::TABLE);
    entry
}

/// Checks a saved `world.streaming` section on its own (the catalog's
/// [`crate::host::SaveCheck`]): [`StreamingKit`]'s `prepare_load` check, run by a kit of the
/// default settings without bounds (whatever a game's own grid and bounds add, its load tells).
pub fn check_save_section(
    section: &serde_json::Value,
    save: &SaveFacts<'_>,
) -> Result<(), Problem> {
    let path = format!("kits.{STREAMING}");
    let parsed: SaveSection = from_value(section, &path)?;
    // Alone, the save is checked against the loosest ticket cap any scene may set; loading it
    // checks it against its scene's.
    // Alone, a save may be a vertical game's (its sections' rows are checked by its load).
    let config = StreamingConfig {
        max_ticket_chunks: Some(MaxTicketChunks::new(config::MAX_TICKET_CHUNKS).expect("in range")),
        vertical: Some(VerticalDef::radius_only(
            VerticalRadius::new(0).expect("in range"),
        )),
        ..StreamingConfig::default()
    };
    State::new(config, IndexMap::new())
        .check_section(parsed, save)
        .map(drop)
        .map_err(|p| p.under(&path))
}

/// The footprints' form of `settings` (docs/reference/streaming.md#shapes-and-sections): the
/// shape, and with vertical sections the rows wanted each side (`rv` plus the `neighbours`
/// rings, as the radius gets them) and the section height.
pub(crate) fn form_of(settings: &Settings) -> Form {
    let disc = settings.shape == config::Shape::Disc;
    Form {
        disc,
        vertical: settings
            .vertical
            .map(|v| (v.radius + settings.neighbours, v.height)),
        ring: if disc { settings.neighbours } else { 0 },
    }
}

/// Sets the footprints' form of `settings` (docs/reference/streaming.md#shapes-and-sections) on
/// the residency; returns whether it changed. A new shape or new rows change every footprint
/// (and with sections, every focus's chunk); sections turned on or off, or of another height,
/// change each entity's chunk, so dormancy is indexed again (rare: a scene's layer, a load).
fn apply_form(st: &mut State, settings: &Settings, world: &mut crate::host::World) -> bool {
    let (form, was) = (form_of(settings), st.residency.form());
    if form == was {
        return false;
    }
    st.residency.set_form(form);
    if form.vertical.map(|v| v.1) != was.vertical.map(|v| v.1) {
        let residency = &st.residency;
        st.dormancy
            .rebuild(world, |p| residency.chunk_of(p), |c| residency.is_loaded(c));
    }
    true
}

/// The payload of `world.lod.loaded` / `unloaded`: `{level, x, z}` (level 1 = index 0).
fn lod_data(k: usize, b: ChunkPos) -> crate::host::EventData {
    events::block_data(k as u32 + 1, b)
}

/// Block `b` of level index `k` (level `k + 1`) of `step`, loaded or released.
fn lod_change(k: usize, b: ChunkPos, step: u32, loaded: bool) -> LodChange {
    LodChange {
        level: k as u32 + 1,
        block: b,
        step,
        loaded,
    }
}

/// The `world.streaming` kit.
pub struct StreamingKit {
    state: Rc<RefCell<State>>,
    /// The values last written to the variables (`None` after a load): unchanged values are not
    /// written again, which keeps a steady tick to a few comparisons.
    published: Option<Published>,
    /// Scratch for the chunks due for release, reused every tick (no allocation when steady).
    due: Vec<ChunkPos>,
    /// Scratch for this tick's loads.
    batch: Vec<ChunkPos>,
    /// Scratch for this tick's non-ticket foci and the foci in force.
    anchors: Vec<Position>,
    foci: Vec<FocusView>,
    /// The anchors of `focus: "players"`, kept between ticks.
    cache: AnchorCache,
    /// The settings of the last tick (a change lists the foci again).
    last_settings: Option<Settings>,
    /// Eviction candidates asked this tick.
    asked: BTreeSet<ChunkPos>,
    /// Scratch for the `"fair"` deal: each chunk and the turn after it.
    dealt: Vec<(ChunkPos, usize)>,
    /// Scratch for this tick's predicted foci.
    predicted: Vec<Position>,
    /// What a load changed, for the subscribers (see [`Kit::after_load`] below).
    restored: Vec<(ChunkPos, bool)>,
    /// Scratch for the LOD step's releases and loads, the players' positions and the chunks
    /// whose readiness changed (docs/reference/lod.md#ready-blocks-and-seen-chunks), reused every
    /// tick.
    lod_moves: Vec<(usize, ChunkPos)>,
    /// Scratch for the tick's LOD changes, told to the `on_lod_blocks` callbacks.
    lod_changes: Vec<LodChange>,
    players: Vec<Position>,
    readiness: Vec<(ChunkPos, bool)>,
    /// Scratch for the end of the tick's completeness changes.
    complete_changes: Vec<CompleteChange>,
    /// Scratch for the columns announced (docs/reference/streaming.md#columns).
    batch_columns: Vec<ChunkPos>,
}

/// What the variables say.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Published {
    loaded: usize,
    pending: usize,
    progress: (usize, usize),
    over: bool,
    holes: Option<(u64, u64)>,
    lod: Option<(usize, u64, u64)>,
    complete: Option<usize>,
}

impl StreamingKit {
    /// A kit with `config` and the layers of each scene (by scene id).
    pub fn new(config: StreamingConfig, layers: IndexMap<String, Overrides>) -> Self {
        StreamingKit {
            state: Rc::new(RefCell::new(State::new(config, layers))),
            published: None,
            due: Vec::new(),
            batch: Vec::new(),
            anchors: Vec::new(),
            foci: Vec::new(),
            cache: AnchorCache::default(),
            last_settings: None,
            asked: BTreeSet::new(),
            dealt: Vec::new(),
            predicted: Vec::new(),
            restored: Vec::new(),
            lod_moves: Vec::new(),
            lod_changes: Vec::new(),
            players: Vec::new(),
            readiness: Vec::new(),
            complete_changes: Vec::new(),
            batch_columns: Vec::new(),
        }
    }

    /// The catalog factory: parses the config and every scene's `layers["world.streaming"]`.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let mut problems = Vec::new();
        let config = match spec.config {
            None => StreamingConfig::default(),
            Some(v) => from_value(v, &spec.config_path).unwrap_or_else(|p| {
                problems.push(p);
                StreamingConfig::default()
            }),
        };
        if let Err((key, message)) = config.check_lod(None) {
            problems.push(Problem::new(
                crate::json::join_path(&spec.config_path, &key),
                message,
            ));
        }
        let mut layers = IndexMap::new();
        for (i, scene) in spec.scenes.iter().enumerate() {
            if let Some(v) = scene.layers.get(STREAMING) {
                let path = KitSpec::layer_path(i, STREAMING);
                match from_value::<Overrides>(v, &path) {
                    Ok(layer) => {
                        if let Err((key, message)) = config.check_lod(Some(&layer)) {
                            problems
                                .push(Problem::new(crate::json::join_path(&path, &key), message));
                        }
                        layers.insert(scene.id.clone(), layer);
                    }
                    Err(p) => problems.push(p),
                }
            }
        }
        if problems.is_empty() {
            Ok(Box::new(StreamingKit::new(config, layers)))
        } else {
            Err(problems)
        }
    }

    /// Step 1 of the tick: the foci in force, in the order of
    /// docs/reference/tick.md#focus-resolution, docs/reference/streaming.md#the-foci-in-force, set
    /// on the planner (which only recounts the squares that moved) and resolved. With `"players"`,
    /// anchors are kept between ticks: a tick in which nothing moved lists nothing, one in which
    /// one anchor moved within its chunk moves that focus only.
    fn resolve_foci(&mut self, ctx: &mut Ctx<'_>) -> Settings {
        let state = self.state.clone();
        let mut st = state.borrow_mut();
        let st = &mut *st;
        let settings = st.settings();
        st.now = ctx.tick;
        if settings.neighbours != st.residency.neighbours() {
            // docs/reference/streaming.md#complete-chunks: every focus's radius changes with k,
            // the tickets' too, so the foci are listed in full.
            st.residency.set_neighbours(settings.neighbours);
            st.foci_dirty = true;
        }
        if apply_form(st, &settings, ctx.world) {
            st.foci_dirty = true;
        }
        let same_settings = self.last_settings == Some(settings);
        if !same_settings {
            self.cache.invalidate();
            self.last_settings = Some(settings);
        }
        let players = st.active && settings.focus == FocusMode::Players;
        let refresh = if players {
            self.cache.refresh(ctx.world)
        } else {
            Refresh::Rebuilt
        };
        // A ticket that starts counting this tick (one stamped ahead, or from a save) changes the
        // foci in force even when nothing else did.
        let ticket_starts = st.tickets.starts_at(ctx.tick);
        // Look-ahead predicts from every anchor each tick: the foci are listed in full.
        let quick = players
            && settings.look_ahead_ticks == 0
            && !st.foci_dirty
            && !ticket_starts
            && same_settings
            && !self.cache.positions().is_empty();
        let done = quick
            && match refresh {
                Refresh::Same => true,
                Refresh::Moved => {
                    // The history follows the anchors that moved (the same anchors as listed).
                    if st.history.len() == self.cache.positions().len() {
                        for &i in self.cache.moved() {
                            st.history[i as usize].1 = self.cache.positions()[i as usize];
                        }
                    }
                    self.cache.moved().iter().all(|&i| {
                        st.residency
                            .move_focus(i as usize, self.cache.positions()[i as usize])
                    })
                }
                Refresh::Rebuilt => false,
            };
        self.cache.clear_moved();
        if !done {
            self.list_foci(ctx, st, settings);
        }
        st.foci_dirty = false;
        st.residency.resolve(ctx.tick, &mut self.due);
        settings
    }

    /// The foci in force listed in full: the anchors (or the one focus), else the last
    /// `player.moved`, else the previous foci; then the tickets counting in this tick.
    fn list_foci(&mut self, ctx: &mut Ctx<'_>, st: &mut State, settings: Settings) {
        self.anchors.clear();
        self.foci.clear();
        st.anchor_ids.clear();
        let mut predicted = std::mem::take(&mut self.predicted);
        predicted.clear();
        if st.active {
            match settings.focus {
                FocusMode::Player => {
                    if let Some(p) = ctx.world.player() {
                        let v = ctx.world.vehicle_of(p).unwrap_or(p);
                        self.anchors.push(v.position);
                        st.anchor_ids.push(Some(p.id.clone()));
                    }
                }
                FocusMode::Players => {
                    self.anchors.extend_from_slice(self.cache.positions());
                    st.anchor_ids
                        .extend(self.cache.ids().map(|id| Some(id.clone())));
                }
            }
            if self.anchors.is_empty() {
                match st.last_moved {
                    Some(p) => self.anchors.push(p),
                    None => self.anchors.extend(st.previous_foci()),
                }
                st.anchor_ids.resize(self.anchors.len(), None);
            }
            // The outer `neighbours` rings are wanted for their data
            // (docs/reference/streaming.md#complete-chunks).
            let radius = settings.radius + settings.neighbours;
            self.foci
                .extend(self.anchors.iter().map(|&pos| FocusView::new(pos, radius)));
            self.predict(st, settings, &mut predicted);
            self.foci
                .extend(predicted.iter().map(|&pos| FocusView::new(pos, radius)));
            if st.foci_dirty || st.tickets.starts_at(ctx.tick) {
                st.ticket_foci(ctx.tick, &mut self.foci);
            } else {
                // The tickets in force did not change: no need to look at every ticket.
                let in_force = st.residency.foci().skip(st.before_tickets());
                self.foci.extend(in_force);
            }
        } else {
            st.history.clear();
        }
        st.anchor_foci = self.anchors.len();
        st.predicted_foci = predicted.len();
        self.predicted = predicted;
        if !st.residency.foci().eq(self.foci.iter().copied()) {
            st.residency.set_foci(&self.foci);
        }
    }

    /// Look-ahead (docs/reference/streaming.md#look-ahead): for each anchor of this tick (entity
    /// ids in `st.anchor_ids`, positions in `self.anchors`) that was an anchor on the last tick
    /// too, its focus plus `lookAheadTicks` times its displacement since then, unless it did not
    /// move or jumped farther than `radius × chunkSize` (squared lengths, exact f64). Records this
    /// tick's anchors as the history (none when the foci are not anchors').
    fn predict(&self, st: &mut State, settings: Settings, out: &mut Vec<Position>) {
        let ids = st.anchor_ids.iter().zip(&self.anchors);
        let anchors = ids.clone().filter(|(id, _)| id.is_some());
        // The same anchors as on the last tick, in the same order (the steady case): compared
        // and updated in place, without allocating.
        let aligned = anchors.clone().count() == st.history.len()
            && anchors
                .clone()
                .zip(&st.history)
                .all(|((id, _), (was, _))| id.as_ref() == Some(was));
        let n = f64::from(settings.look_ahead_ticks);
        let reach = f64::from(settings.radius) * st.residency.grid().size();
        let reach_sq = reach * reach;
        // With vertical sections the displacement is 3-D (a climb alone predicts), the jump
        // rule reads its horizontal part (docs/reference/streaming.md#look-ahead-in-3-d).
        let vertical = settings.vertical.is_some();
        let mut predict = |pos: &Position, last: &Position| {
            let (dx, dz) = (pos.x - last.x, pos.z - last.z);
            let dy = if vertical { pos.y - last.y } else { 0.0 };
            // Radius 0 never predicts (in 3-D too: a climb with no horizontal part would pass
            // the jump rule's `0 <= 0`).
            if settings.look_ahead_ticks > 0
                && settings.radius > 0
                && !(dx == 0.0 && dy == 0.0 && dz == 0.0)
                && dx * dx + dz * dz <= reach_sq
            {
                out.push(if vertical {
                    Position {
                        x: pos.x + n * dx,
                        y: pos.y + n * dy,
                        z: pos.z + n * dz,
                    }
                } else {
                    Position::new(pos.x + n * dx, pos.z + n * dz)
                });
            }
        };
        if aligned {
            for ((_, pos), (_, last)) in anchors.zip(st.history.iter_mut()) {
                predict(pos, last);
                *last = *pos;
            }
            return;
        }
        let before: std::collections::BTreeMap<&EntityId, Position> =
            st.history.iter().map(|(id, p)| (id, *p)).collect();
        for (id, pos) in anchors.clone() {
            if let Some(last) = id.as_ref().and_then(|id| before.get(id)) {
                predict(pos, last); // else not an anchor on the last tick
            }
        }
        let now: Vec<(EntityId, Position)> = anchors
            .map(|(id, pos)| (id.clone().expect("filtered"), *pos))
            .collect();
        st.history = now;
    }

    /// An unload was cancelled: held, unless the mod already holds its share of refusals (then
    /// `mod.error` says so and the chunk is released).
    fn refuse_unload(&self, ctx: &mut Ctx<'_>, chunk: ChunkPos, cancel: Cancel, cap: usize) {
        let held = self
            .state
            .borrow()
            .residency
            .unload_refusals_of(cancel.by.as_str());
        if held >= cap {
            ctx.events.emit(
                MOD_ERROR,
                serde_json::json!({
                    "mod": cancel.by.as_str(),
                    "hook": HOOK_CHUNK_UNLOAD,
                    "message": format!(
                        "refusal cap reached: the mod holds {held} unload refusals \
                         (maxRefusalsPerMod {cap}); chunk {} is released",
                        self.chunk_name(chunk)
                    ),
                }),
            );
            self.announce(ctx, chunk, false);
        } else {
            self.hold(chunk, RefusalKind::Unload, cancel);
        }
    }

    /// `(x, z)`, or `(x, y, z)` with vertical sections on.
    fn chunk_name(&self, chunk: ChunkPos) -> String {
        if self.vertical() {
            format!("({}, {}, {})", chunk.x, chunk.y, chunk.z)
        } else {
            format!("({}, {})", chunk.x, chunk.z)
        }
    }

    /// Whether vertical sections are on (docs/reference/streaming.md#shapes-and-sections).
    fn vertical(&self) -> bool {
        self.state.borrow().residency.form().vertical.is_some()
    }

    /// Asks `world.chunk.unload` for `chunk` and applies the answer.
    fn unload(&self, ctx: &mut Ctx<'_>, chunk: ChunkPos, settings: Settings) {
        match Self::ask(ctx, HOOK_CHUNK_UNLOAD, chunk, self.vertical()) {
            None => self.announce(ctx, chunk, false),
            Some(cancel) => self.refuse_unload(ctx, chunk, cancel, settings.max_refusals_per_mod),
        }
    }

    /// The capacity check (docs/reference/streaming.md#over-capacity): whether this tick may load,
    /// and the event when the wanted chunks start to outnumber the cap.
    fn within_capacity(&self, ctx: &mut Ctx<'_>, settings: Settings) -> bool {
        let mut st = self.state.borrow_mut();
        let over = match settings.max_loaded {
            Some(cap) if st.active && st.residency.foci().len() > 0 => {
                let wanted = st.residency.wanted_unrefused();
                (wanted > cap).then_some((wanted, cap))
            }
            _ => None,
        };
        if let (Some((wanted, cap)), false) = (over, st.over_capacity) {
            ctx.events.emit(
                CAPACITY,
                serde_json::json!({ "wanted": wanted, "cap": cap }),
            );
        }
        st.over_capacity = over.is_some();
        over.is_none()
    }

    /// Makes room for one load under the cap: evicts least recently wanted chunks outside the
    /// union until the load fits. `false` when no candidate is left. Each chunk is asked at most
    /// once a tick (`asked`), so a mod that releases refusals from its unload handler cannot make
    /// two candidates trade places forever.
    fn make_room(&mut self, ctx: &mut Ctx<'_>, settings: Settings) -> bool {
        let Some(cap) = settings.max_loaded else {
            return true;
        };
        loop {
            let candidate = {
                let mut st = self.state.borrow_mut();
                if st.residency.loaded().len() < cap {
                    return true;
                }
                st.residency.eviction_candidate(&self.asked)
            };
            match candidate {
                Some(chunk) => {
                    self.asked.insert(chunk);
                    self.unload(ctx, chunk, settings);
                    self.announce_columns(ctx, false); // an eviction's column right after it
                }
                None => return false,
            }
        }
    }

    /// Asks `hook` about `chunk`: fields `x`, `z`, and with vertical sections `x`, `y`, `z`
    /// (docs/reference/streaming.md#section-events).
    fn ask(
        ctx: &mut Ctx<'_>,
        hook: &'static str,
        chunk: ChunkPos,
        vertical: bool,
    ) -> Option<Cancel> {
        if !ctx.hooks.has_handlers(hook) {
            return None;
        }
        let flat = [
            ("x", HookValue::Int(chunk.x)),
            ("z", HookValue::Int(chunk.z)),
        ];
        let section = [
            ("x", HookValue::Int(chunk.x)),
            ("y", HookValue::Int(chunk.y)),
            ("z", HookValue::Int(chunk.z)),
        ];
        ctx.hooks.ask(
            &HookArgs {
                hook,
                fields: if vertical { &section } else { &flat },
            },
            ctx.events,
        )
    }

    /// Applies a load or a release: residency, dormancy, callbacks, then the event.
    fn announce(&self, ctx: &mut Ctx<'_>, chunk: ChunkPos, loaded: bool) {
        let vertical = self.vertical();
        {
            let mut st = self.state.borrow_mut();
            if loaded {
                st.residency.mark_loaded(chunk);
            } else {
                st.residency.mark_released(chunk);
            }
            st.columns.section_changed(chunk, loaded);
            st.dormancy.chunk_changed(chunk, loaded, ctx.world);
        }
        let mut chunk_ctx = ChunkCtx {
            tick: ctx.tick,
            world: ctx.world,
            events: ctx.events,
        };
        if loaded {
            handle::notify_stage(
                &self.state,
                ChunkStage::BeforeLoaded,
                &mut chunk_ctx,
                chunk,
                true,
            );
        }
        handle::notify(&self.state, &mut chunk_ctx, chunk, loaded);
        chunk_ctx.events.emit(
            if loaded { CHUNK_LOADED } else { CHUNK_UNLOADED },
            chunk_event_data(chunk, vertical),
        );
        if !loaded {
            handle::notify_stage(
                &self.state,
                ChunkStage::AfterUnloaded,
                &mut chunk_ctx,
                chunk,
                false,
            );
        }
    }

    fn hold(&self, chunk: ChunkPos, kind: RefusalKind, cancel: Cancel) {
        let held = Held {
            kind,
            by: cancel.by.as_str().to_owned(),
            reason: cancel.reason,
        };
        self.state.borrow_mut().residency.hold(chunk, held);
    }

    fn publish(&mut self, ctx: &mut Ctx<'_>) {
        let st = self.state.borrow();
        let now = Published {
            loaded: st.residency.loaded().len(),
            pending: st.residency.pending_len(),
            progress: st.residency.progress(),
            over: st.over_capacity,
            holes: st.uses_scheduling().then_some((st.holes, st.hole_ticks)),
            lod: st
                .uses_lod()
                .then(|| (st.lod.loaded_len(), st.lod_holes, st.lod_hole_ticks)),
            complete: st.uses_neighbours().then(|| st.residency.complete_len()),
        };
        // Only what changed (a builder's commit moves the progress alone).
        let all = self.published.is_none();
        let was = self.published.unwrap_or(now);
        if all || was.loaded != now.loaded {
            ctx.variables.set(VAR_LOADED, now.loaded as u64);
        }
        if all || was.pending != now.pending {
            ctx.variables.set(VAR_PENDING, now.pending as u64);
        }
        if all || was.progress != now.progress {
            let (ready, wanted) = now.progress;
            let progress = if wanted == 0 {
                1.0
            } else {
                ready as f64 / wanted as f64
            };
            ctx.variables.set(VAR_PROGRESS, progress);
        }
        if all || was.over != now.over {
            ctx.variables.set(VAR_OVER_CAPACITY, u64::from(now.over));
        }
        if let Some((holes, hole_ticks)) = now.holes {
            if all || was.holes != now.holes {
                ctx.variables.set(VAR_HOLES, holes);
                ctx.variables.set(VAR_HOLE_TICKS, hole_ticks);
            }
        }
        if let Some((loaded, holes, hole_ticks)) = now.lod {
            if all || was.lod != now.lod {
                ctx.variables.set(VAR_LOD_LOADED, loaded as u64);
                ctx.variables.set(VAR_LOD_HOLES, holes);
                ctx.variables.set(VAR_LOD_HOLE_TICKS, hole_ticks);
            }
        }
        if let Some(complete) = now.complete {
            if all || was.complete != now.complete {
                ctx.variables.set(VAR_COMPLETE, complete as u64);
            }
        }
        self.published = Some(now);
    }

    /// Step 3 of the tick: loads nearest-first (or dealt fairly) within budget, under the cap.
    fn load_chunks(&mut self, ctx: &mut Ctx<'_>, settings: Settings) {
        self.asked.clear();
        let mut batch = std::mem::take(&mut self.batch);
        let mut dealt = std::mem::take(&mut self.dealt);
        {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            match settings.schedule {
                Schedule::Nearest => st
                    .residency
                    .take_nearest(settings.loads_per_tick, &mut batch),
                Schedule::Fair => {
                    // The deal is made before any hook is asked, like the nearest batch; a
                    // chunk that is asked (loaded or refused) moves the turn past its focus.
                    st.residency
                        .take_fair(settings.loads_per_tick, st.turn, &mut dealt);
                    batch.extend(dealt.iter().map(|(c, _)| *c));
                }
            }
        }
        let mut turns = dealt.drain(..).map(|(_, t)| t);
        let mut chunks = batch.drain(..);
        for chunk in chunks.by_ref() {
            if !self.make_room(ctx, settings) {
                let mut st = self.state.borrow_mut();
                st.residency.untake(chunk);
                break;
            }
            if let Some(turn) = turns.next() {
                self.state.borrow_mut().turn = turn;
            }
            match Self::ask(ctx, HOOK_CHUNK_LOAD, chunk, self.vertical()) {
                None => self.announce(ctx, chunk, true),
                Some(cancel) => self.hold(chunk, RefusalKind::Load, cancel),
            }
        }
        drop(turns);
        self.dealt = dealt;
        {
            let mut st = self.state.borrow_mut();
            for chunk in chunks {
                st.residency.untake(chunk);
            }
        }
        self.batch = batch;
    }

    /// The LOD step of the tick (docs/reference/lod.md#the-lod-step): the plan follows the
    /// non-ticket foci; blocks no longer wanted whose replacements are ready (or that are out of
    /// range) are released, then up to `lodBudget` pending blocks load. No hook is asked, no
    /// refusal held, no cap counts them. Events after the tick's chunk events, releases first.
    fn lod_tick(&mut self, ctx: &mut Ctx<'_>, settings: Settings) {
        let mut guard = self.state.borrow_mut();
        if settings.lod.is_empty() && guard.lod.is_empty() {
            return;
        }
        let st = &mut *guard;
        // The non-ticket foci: the players' and the predicted ones (which count wherever a focus
        // counts, docs/reference/streaming.md#holes); holes are counted around the players' alone.
        self.anchors.clear();
        if st.active {
            self.anchors
                .extend(st.residency.foci().take(st.before_tickets()).map(|v| v.pos));
        }
        st.lod.set_levels(settings.radius, settings.lod);
        st.lod.set_foci(&self.anchors);
        st.lod.resolve();
        // The chunks the tick's first steps loaded, released or saw built, counted before any
        // block changes (a block whose replacement is ready then changes nothing).
        st.residency.track_readiness();
        let complete = st.residency.swap_ready_log(&mut self.readiness);
        st.columns.lod_log(&mut self.readiness); // docs/reference/lod.md#columns
        let (residency, columns) = (&st.residency, &st.columns);
        let ready = |c| columns.lod_ready(residency, c);
        st.lod.note_chunks(&self.readiness, ready, complete);
        // And the players' squares, where they are now (they stay so to the end of the tick).
        self.players.clear();
        self.players
            .extend(self.anchors.iter().take(st.anchor_foci).copied());
        st.lod.note_players(&self.players);
        let moves = &mut self.lod_moves;
        let changes = &mut self.lod_changes;
        moves.clear();
        changes.clear();
        let (residency, columns) = (&st.residency, &st.columns);
        st.lod.due(|c| columns.lod_ready(residency, c), moves);
        for &(k, b) in moves.iter() {
            changes.push(lod_change(k, b, st.lod.planned_step(k), false));
            st.lod.mark_released(k, b);
            ctx.events.emit(LOD_UNLOADED, lod_data(k, b));
        }
        moves.clear();
        st.lod.load(settings.lod_budget, moves);
        for &(k, b) in moves.iter() {
            changes.push(lod_change(k, b, st.lod.planned_step(k), true));
            ctx.events.emit(LOD_LOADED, lod_data(k, b));
        }
        drop(guard);
        handle::notify_lod(&self.state, ctx.events.tick(), &self.lod_changes);
    }

    /// docs/reference/streaming.md#complete-chunks: at the end of the tick (`k > 0`), the
    /// chunks that became complete and the loaded ones no longer complete since the last end
    /// of tick, in row order, each event followed by the `on_complete` callbacks (no borrow of
    /// the state held).
    fn announce_complete(&mut self, ctx: &mut Ctx<'_>) {
        let mut changes = std::mem::take(&mut self.complete_changes);
        changes.clear();
        let vertical = self.vertical();
        let list = {
            let mut st = self.state.borrow_mut();
            if st.residency.neighbours() == 0 {
                self.complete_changes = changes;
                return;
            }
            st.residency.take_complete_changes(&mut changes);
            st.complete_subscribers.clone()
        };
        for change in &changes {
            let (name, chunk) = (
                if change.complete {
                    CHUNK_COMPLETE
                } else {
                    CHUNK_INCOMPLETE
                },
                change.chunk,
            );
            ctx.events.emit(name, chunk_event_data(chunk, vertical));
            if list.borrow().is_empty() {
                continue;
            }
            let mut running = std::mem::take(&mut *list.borrow_mut());
            for f in running.iter_mut() {
                f(chunk, change.complete);
            }
            let mut now = list.borrow_mut();
            running.append(&mut now);
            *now = running;
        }
        self.complete_changes = changes;
    }

    fn end_of_tick(&mut self, ctx: &mut Ctx<'_>) {
        let mut ready = Vec::new();
        {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            if st.active {
                let residency = &st.residency;
                ready = st.tickets.announce(ctx.tick, |t| {
                    residency.square_ready(State::ticket_view(t, residency.neighbours()))
                });
            }
            // Tickets leave at the end of their last tick, before the variables.
            if st.tickets.expire(ctx.tick) {
                st.foci_dirty = true;
                self.foci.clear();
                // Outside a scene nothing is wanted: the tickets left wait for one.
                if st.active {
                    self.foci
                        .extend(st.residency.foci().take(st.before_tickets()));
                    st.ticket_foci(ctx.tick, &mut self.foci);
                }
                st.residency.set_foci(&self.foci);
            }
        }
        {
            // Holes (docs/reference/streaming.md#holes), at the end of every tick: around the
            // non-ticket, non-predicted foci, once the tick's builders have committed.
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            let settings = st.settings();
            st.holes = if st.active {
                st.residency.holes(st.anchor_foci, settings.hole_ring) as u64
            } else {
                0
            };
            st.hole_ticks = st.hole_ticks.saturating_add(st.holes);
            if st.uses_lod() {
                // docs/reference/lod.md#ready-blocks-and-seen-chunks: what is seen by no ready
                // chunk and no ready block within the last level's radius, kept up to date from
                // what changed (see `update_holes`).
                st.residency.track_readiness();
                let complete = st.residency.swap_ready_log(&mut self.readiness);
                st.columns.lod_log(&mut self.readiness);
                let (residency, columns) = (&st.residency, &st.columns);
                self.players.clear();
                self.players
                    .extend(residency.foci().take(st.anchor_foci).map(|v| v.pos));
                st.lod_holes = if st.active {
                    st.lod.update_holes(
                        &self.players,
                        |c| columns.lod_ready(residency, c),
                        &self.readiness,
                        complete,
                        || columns.lod_candidates(residency),
                    ) as u64
                } else {
                    st.lod.invalidate_holes();
                    0
                };
                st.lod_hole_ticks = st.lod_hole_ticks.saturating_add(st.lod_holes);
            }
        }
        self.announce_complete(ctx);
        for id in ready {
            ctx.events
                .emit(TICKET_READY, serde_json::json!({ "id": id }));
        }
        self.publish(ctx);
    }
}

impl Kit for StreamingKit {
    fn id(&self) -> &str {
        STREAMING
    }

    fn install(&mut self, host: &mut Install<'_>) {
        self.state.borrow_mut().outbox = host.outbox.clone();
        host.hooks.declare(HOOK_CHUNK_LOAD);
        host.hooks.declare(HOOK_CHUNK_UNLOAD);
        let handle: Rc<dyn StreamingService> = Rc::new(Handle(self.state.clone()));
        host.services.provide(STREAMING, handle);
        host.variables.set(VAR_LOADED, 0u64);
        host.variables.set(VAR_PENDING, 0u64);
        host.variables.set(VAR_PROGRESS, 0.0);
        host.variables.set(VAR_OVER_CAPACITY, 0u64);
        if self.state.borrow().uses_scheduling() {
            host.variables.set(VAR_HOLES, 0u64);
            host.variables.set(VAR_HOLE_TICKS, 0u64);
        }
        if self.state.borrow().uses_neighbours() {
            host.variables.set(VAR_COMPLETE, 0u64);
        }
        if self.state.borrow().uses_lod() {
            host.variables.set(VAR_LOD_LOADED, 0u64);
            host.variables.set(VAR_LOD_HOLES, 0u64);
            host.variables.set(VAR_LOD_HOLE_TICKS, 0u64);
        }
    }

    /// Version 4 once `neighbours` above 0 or `vertical` is in use (docs/reference/streaming.md#complete-chunks:
    /// the section holds `complete`), or the mods' overrides hold a round-4 key (`shape`,
    /// `vertical`, `neighbours`: a reader of an older version refuses the save by its version,
    /// not by an unknown key); else version 3 once a scheduling key
    /// (docs/reference/config.md#outputs-that-appear-only-when-used) or a ticket priority is in use
    /// (its fields are in the section); else what round 2 wrote, byte for byte.
    fn save_version(&self) -> u32 {
        let st = self.state.borrow();
        let o = st.overrides();
        let round4_key = o.shape.is_some() || o.vertical.is_some() || o.neighbours.is_some();
        if st.uses_neighbours() || st.uses_vertical() || round4_key {
            crate::host::save::SAVE_VERSION
        } else if st.uses_scheduling() || st.uses_lod() {
            crate::host::save::ROUND3_SAVE_VERSION
        } else {
            crate::host::save::BASE_SAVE_VERSION
        }
    }

    fn start(&mut self, services: &crate::host::Services) -> Result<(), KitError> {
        let ground =
            services
                .get::<dyn GroundService>(GROUND)
                .ok_or_else(|| KitError::MissingService {
                    kit: STREAMING.into(),
                    service: GROUND.into(),
                })?;
        let mut st = self.state.borrow_mut();
        let grid = Grid::new(st.config.chunk_size.get());
        st.residency = Residency::new(grid, ground.bounds());
        st.lod = lod::LodPlan::new(grid, ground.bounds());
        Ok(())
    }

    fn on_enter(&mut self, scene: &SceneDef, ctx: &mut Ctx<'_>) {
        self.cache.invalidate();
        let mut st = self.state.borrow_mut();
        st.foci_dirty = true;
        st.active = true;
        let layer = st.layers.get(&scene.id).copied().unwrap_or_default();
        st.set_layer(layer);
        let settings = st.settings();
        let radius = settings.radius + settings.neighbours;
        st.residency.set_neighbours(settings.neighbours);
        apply_form(&mut st, &settings, ctx.world);
        // Nothing is loaded when a scene is entered (leaving released everything, and a save
        // without an active scene holds no chunks), so this only sets the foci (the entry, and
        // tickets requested outside the scene) and the pending set: loads begin on the next tick.
        self.foci.clear();
        self.foci
            .extend(scene.entry.map(|pos| FocusView::new(pos, radius)));
        st.anchor_foci = self.foci.len();
        st.anchor_ids = vec![None; self.foci.len()];
        st.predicted_foci = 0;
        st.history.clear(); // no prediction right after entering
        let next = st.now + 1;
        st.ticket_foci(next, &mut self.foci);
        st.residency.set_foci(&self.foci);
    }

    fn on_leave(&mut self, ctx: &mut Ctx<'_>) {
        // Released one by one in row order, without asking hooks, exactly as a tick's releases
        // are announced; then the focus, the last player.moved and the refusals are forgotten.
        let loaded: Vec<ChunkPos> = self.state.borrow().residency.loaded().collect();
        for chunk in loaded {
            self.announce(ctx, chunk, false);
        }
        self.announce_columns(ctx, false);
        // Then the LOD blocks, by level then row order (after the chunk events, as a tick's).
        let (blocks, steps) = {
            let mut st = self.state.borrow_mut();
            let steps: [u32; config::MAX_LOD_LEVELS] =
                std::array::from_fn(|k| st.lod.planned_step(k));
            (st.lod.clear(), steps)
        };
        for &(k, b) in &blocks {
            ctx.events.emit(LOD_UNLOADED, lod_data(k, b));
        }
        let changes: Vec<LodChange> = blocks
            .iter()
            .map(|&(k, b)| lod_change(k, b, steps[k], false))
            .collect();
        handle::notify_lod(&self.state, ctx.events.tick(), &changes);
        self.cache.invalidate();
        let mut st = self.state.borrow_mut();
        st.foci_dirty = true;
        st.active = false;
        st.last_moved = None;
        st.set_layer(Overrides::default());
        st.residency.clear();
        st.tickets.clear();
        st.anchor_foci = 0;
        st.anchor_ids.clear();
        st.predicted_foci = 0;
        st.history.clear();
        st.turn = 0;
        // over_capacity keeps its value: the next tick (outside a scene, or in the one entered)
        // decides it, so leaving and entering between two ticks over the cap is no new start.
    }

    fn on_event(&mut self, event: &Event, _ctx: &mut Ctx<'_>) {
        if event.event != PLAYER_MOVED {
            return;
        }
        let mut st = self.state.borrow_mut();
        if !st.active {
            return; // no scene: nothing streams, and entering starts at the entry
        }
        let coord = |k: &str| event.data.get(k).and_then(serde_json::Value::as_f64);
        if let (Some(x), Some(z)) = (coord("x"), coord("z")) {
            st.foci_dirty = true;
            st.last_moved = Some(Position {
                x,
                y: coord("y").unwrap_or(0.0),
                z,
            });
        }
    }

    fn on_entities_changed(&mut self, changed: &[EntityId], ctx: &mut Ctx<'_>) {
        self.cache.entities_changed(changed, ctx.world);
        let st = &mut *self.state.borrow_mut();
        for id in changed {
            let residency = &st.residency;
            st.dormancy.entity_changed(
                id,
                ctx.world,
                |p| residency.chunk_of(p),
                |c| residency.is_loaded(c),
            );
        }
        // An anchor despawned leaves look-ahead's history at once: one spawned again under its
        // id is a new anchor (it predicts from its second tick), and a save holds no entity it
        // does not hold.
        if !st.history.is_empty() && changed.iter().any(|id| ctx.world.get(id).is_none()) {
            st.history.retain(|(id, _)| ctx.world.get(id).is_some());
        }
    }

    fn begin_tick(&mut self, ctx: &mut Ctx<'_>) {
        // Kits that run before this kit's tick (a builder committing at the start of the tick)
        // may call the service: a ticket a mod requests then counts from the next tick.
        self.state.borrow_mut().now = ctx.tick;
    }

    fn tick(&mut self, ctx: &mut Ctx<'_>) {
        let settings = self.resolve_foci(ctx);
        self.follow_columns(settings);
        // 2. Release, in row order, no budget.
        let mut due = std::mem::take(&mut self.due);
        for chunk in due.drain(..) {
            self.unload(ctx, chunk, settings);
        }
        self.due = due;
        self.announce_columns(ctx, false);
        // 3. Load, nearest-first, within budget and under the cap; a refused load spends its
        //    slot. The batch is chosen before any hook is asked: a refusal released meanwhile
        //    waits for next tick.
        if self.within_capacity(ctx, settings) {
            self.load_chunks(ctx, settings);
        }
        self.announce_columns(ctx, true);
        // 3b. LOD blocks (docs/reference/lod.md#lod-events), after the chunk events.
        self.lod_tick(ctx, settings);
        // 4. Dormancy was kept up to date chunk by chunk; readiness and the variables come at
        //    the end of the tick, after every kit (builders included) ticked.
    }

    fn end_tick(&mut self, ctx: &mut Ctx<'_>) {
        self.end_of_tick(ctx);
    }

    fn save(&self) -> Option<serde_json::Value> {
        Some(self.state.borrow().save_value())
    }

    fn prepare_load(
        &self,
        section: Option<&serde_json::Value>,
        _scene: Option<&SceneDef>,
        save: &SaveFacts<'_>,
    ) -> Result<Option<PreparedSection>, Problem> {
        let path = format!("kits.{STREAMING}");
        let section = section.ok_or_else(|| Problem::new(&path, "missing section"))?;
        // The check `check` runs on its own (check_save_section), with this kit's grid and
        // bounds.
        let parsed: SaveSection = from_value(section, &path)?;
        let prepared = self
            .state
            .borrow()
            .check_section(parsed, save)
            .map_err(|p| p.under(&path))?;
        Ok(Some(Box::new(prepared)))
    }

    fn commit_load(&mut self, prepared: Option<PreparedSection>, ctx: &mut Ctx<'_>) {
        let prepared = prepared
            .and_then(|p| p.downcast::<save::Prepared>().ok())
            .expect("prepared by prepare_load");
        self.published = None;
        self.cache.invalidate();
        let mut st = self.state.borrow_mut();
        let before: Vec<ChunkPos> = st.residency.loaded().collect();
        st.restore(*prepared, ctx.scene.map(|s| s.id.as_str()), ctx.tick);
        // The restored settings' shape and rows (docs/reference/streaming.md#shapes-and-sections);
        // dormancy is rebuilt below anyway.
        let form = form_of(&st.settings());
        st.residency.set_form(form);
        {
            // The columns of the restored sections, without events (a load tells none).
            let (on, s) = (st.settings().vertical.is_some(), &mut *st);
            s.columns.set_on(on, Vec::new);
            s.columns.rebuild(s.residency.loaded());
        }
        // The subscribers' difference: releases first, then loads, each in row order.
        self.restored = before
            .iter()
            .filter(|c| !st.residency.is_loaded(**c))
            .map(|c| (*c, false))
            .collect();
        let residency = &st.residency;
        let gained = residency
            .loaded()
            .filter(|c| before.binary_search(c).is_err())
            .map(|c| (c, true));
        self.restored.extend(gained);
        let st = &mut *st;
        let residency = &st.residency;
        st.dormancy.rebuild(
            ctx.world,
            |p| residency.chunk_of(p),
            |c| residency.is_loaded(c),
        );
    }

    /// Brings the `onChunk` subscribers in step with the restored set: each is called for the
    /// difference between the loaded set before and after the load, releases first, then loads,
    /// each in row order, with [`StreamingService::restoring`] true (Lua: a third argument
    /// `restored`). No event is emitted and no hook is asked.
    fn after_load(&mut self, ctx: &mut Ctx<'_>) {
        let changes = std::mem::take(&mut self.restored);
        self.state.borrow().restoring.set(true);
        let mut chunk_ctx = ChunkCtx {
            tick: ctx.tick,
            world: ctx.world,
            events: ctx.events,
        };
        for (chunk, loaded) in changes {
            handle::notify(&self.state, &mut chunk_ctx, chunk, loaded);
        }
        self.state.borrow().restoring.set(false);
    }
}
