//! The kit's state, shared between the kit (which ticks) and the service handle (which other kits
//! and mods hold). Borrows are kept short: no borrow is held while hooks or callbacks run, so a
//! Lua handler or an `onChunk` callback may read the service.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::{ChunkPos, Grid, Position};
use crate::host::{EntityId, ModId, Problem};

use super::events::{HOOK_CHUNK_LOAD, HOOK_CHUNK_UNLOAD};

use super::config::{Overrides, Settings, StreamingConfig, MAX_RADIUS};
use super::dormancy::Dormancy;
use super::foci::{check_id, Ticket, TicketError, Tickets, MAX_TICKETS};
use super::plan::{FocusView, Held, RefusalKind, Residency};
use super::service::{
    BuilderId, Callback, ChunkCallback, ChunkCtx, ChunkStage, ChunkSubscription,
    ChunkWorldCallback, Refusal, StreamingService, Subscriber, TicketInfo,
};

type Subscribers = Rc<RefCell<Vec<Rc<Subscriber>>>>;

pub(crate) struct State {
    pub(crate) config: StreamingConfig,
    pub(crate) layers: IndexMap<String, Overrides>,
    /// The active scene's layer.
    pub(crate) layer: Overrides,
    /// Set by mods; saved with the game.
    pub(crate) overrides: Overrides,
    pub(crate) residency: Residency,
    pub(crate) dormancy: Dormancy,
    pub(crate) active: bool,
    pub(crate) last_moved: Option<Position>,
    pub(crate) tickets: Tickets,
    /// How many of the foci in force are not tickets (they come first).
    pub(crate) anchor_foci: usize,
    /// The entity behind each non-ticket focus in force, when it is one (for `ready(entity)`).
    pub(crate) anchor_ids: Vec<Option<EntityId>>,
    /// The tick that last ran (or is running).
    pub(crate) now: u64,
    /// Whether the wanted chunks outnumber the cap (`world.chunks.overCapacity`).
    pub(crate) over_capacity: bool,
    /// Names of the kits readiness waits for, by builder index.
    pub(crate) builders: Vec<String>,
    /// Something other than the anchors changed the foci (tickets, `player.moved`, a scene, a
    /// load): the next tick lists them in full.
    pub(crate) foci_dirty: bool,
    subscribers: Subscribers,
    /// The stage subscribers: `[before a load is announced, after a release is announced]`.
    stages: [Subscribers; 2],
    /// Whether the subscribers are being told what a load changed.
    pub(crate) restoring: Cell<bool>,
}

impl State {
    pub(crate) fn new(config: StreamingConfig, layers: IndexMap<String, Overrides>) -> Self {
        State {
            residency: Residency::new(Grid::new(config.chunk_size.get()), None),
            config,
            layers,
            layer: Overrides::default(),
            overrides: Overrides::default(),
            dormancy: Dormancy::default(),
            active: false,
            last_moved: None,
            tickets: Tickets::default(),
            anchor_foci: 0,
            anchor_ids: Vec::new(),
            now: 0,
            over_capacity: false,
            builders: Vec::new(),
            foci_dirty: true,
            subscribers: Subscribers::default(),
            stages: Default::default(),
            restoring: Cell::new(false),
        }
    }

    /// The view of a ticket.
    pub(crate) fn ticket_view(t: &Ticket) -> FocusView {
        FocusView {
            pos: t.at,
            radius: t.radius,
        }
    }

    /// The foci in force after the non-ticket ones: the tickets counting in `tick`, id order.
    pub(crate) fn ticket_foci(&self, tick: u64, out: &mut Vec<FocusView>) {
        out.extend(
            self.tickets
                .iter()
                .filter(|(_, t)| t.counts_in(tick))
                .map(|(_, t)| Self::ticket_view(t)),
        );
    }

    /// Requests ticket `id` counting from tick `from`.
    pub(crate) fn request(
        &mut self,
        id: &str,
        at: Position,
        radius: i64,
        ticks: i64,
        from: u64,
    ) -> Result<(), TicketError> {
        let ticket = Ticket::new(id, at, radius, ticks, from)?;
        self.foci_dirty = true;
        self.tickets.request(id, ticket, self.now)
    }

    /// The settings in force for the next tick.
    pub(crate) fn settings(&self) -> Settings {
        self.config.settings(self.layer, self.overrides)
    }

    pub(crate) fn save_section(&self) -> SaveSection {
        let foci = self
            .residency
            .foci()
            .enumerate()
            .map(|(i, v)| SavedFocus {
                at: v.pos,
                radius: v.radius,
                ticket: i >= self.anchor_foci,
            })
            .collect();
        SaveSection {
            loaded: self.residency.loaded().collect(),
            focus: self.residency.focus(),
            last_moved: self.last_moved,
            refusals: refusal_list(&self.residency),
            overrides: self.overrides,
            foci: Some(foci),
            tickets: self
                .tickets
                .iter()
                .map(|(id, t)| SavedTicket {
                    id: id.to_owned(),
                    ticket: *t,
                })
                .collect(),
            last_wanted: self
                .residency
                .loaded()
                .map(|c| LastWanted {
                    x: c.x,
                    z: c.z,
                    tick: self.residency.last_wanted(c),
                })
                .filter(|l| l.tick > 0)
                .collect(),
            over_capacity: self.over_capacity,
        }
    }

    /// Validates a save section completely against this kit's grid and bounds, and against
    /// whether the save has an active scene.
    pub(crate) fn check_section(&self, s: SaveSection, active: bool) -> Result<Prepared, Problem> {
        if !active {
            for (key, empty) in [
                ("loaded", s.loaded.is_empty()),
                ("refusals", s.refusals.is_empty()),
                ("focus", s.focus.is_none()),
                ("lastMoved", s.last_moved.is_none()),
            ] {
                if !empty {
                    return Err(Problem::new(
                        key,
                        "expected nothing here: the save has no active scene (\"scene\": null)",
                    ));
                }
            }
        }
        if s.focus.is_none() && !(s.loaded.is_empty() && s.refusals.is_empty()) {
            return Err(Problem::new(
                "focus",
                "expected a focus: chunks are loaded or refused, which needs one",
            ));
        }
        let grid = self.residency.grid();
        let mut loaded = BTreeSet::new();
        for (i, c) in s.loaded.iter().enumerate() {
            if !grid.overlaps(*c, self.residency.bounds()) {
                return Err(Problem::new(
                    format!("loaded[{i}]"),
                    format!("chunk {c} lies outside the world.ground bounds"),
                ));
            }
            if !loaded.insert(*c) {
                return Err(Problem::new(
                    format!("loaded[{i}]"),
                    format!("chunk {c} is listed twice"),
                ));
            }
        }
        let mut refusals = BTreeMap::new();
        for (i, r) in s.refusals.into_iter().enumerate() {
            let c = ChunkPos::new(r.x, r.z);
            let path = format!("refusals[{i}]");
            if !grid.overlaps(c, self.residency.bounds()) {
                return Err(Problem::new(
                    path,
                    format!("chunk {c} lies outside the world.ground bounds"),
                ));
            }
            if r.reason.len() > crate::limits::MAX_REASON_LEN {
                return Err(Problem::new(
                    format!("{path}.reason"),
                    format!(
                        "expected at most {} bytes, got {}",
                        crate::limits::MAX_REASON_LEN,
                        r.reason.len()
                    ),
                ));
            }
            crate::limits::check_name(&r.by).map_err(|m| Problem::new(format!("{path}.mod"), m))?;
            let kind = match r.hook.as_str() {
                HOOK_CHUNK_LOAD => RefusalKind::Load,
                HOOK_CHUNK_UNLOAD => RefusalKind::Unload,
                other => {
                    return Err(Problem::new(
                        format!("{path}.hook"),
                        format!("expected {HOOK_CHUNK_LOAD} or {HOOK_CHUNK_UNLOAD}, got {other:?}"),
                    ))
                }
            };
            match (kind, loaded.contains(&c)) {
                (RefusalKind::Unload, false) => {
                    return Err(Problem::new(
                        path,
                        format!("an unload refusal of chunk {c}, which is not loaded"),
                    ))
                }
                (RefusalKind::Load, true) => {
                    return Err(Problem::new(
                        path,
                        format!("a load refusal of chunk {c}, which is loaded"),
                    ))
                }
                _ => {}
            }
            let held = Held {
                kind,
                by: r.by,
                reason: r.reason,
            };
            if refusals.insert(c, held).is_some() {
                return Err(Problem::new(path, format!("a second refusal of chunk {c}")));
            }
        }
        for (name, p) in [("focus", s.focus), ("lastMoved", s.last_moved)] {
            if let Some(p) = p {
                p.check().map_err(|p| p.under(name))?;
            }
        }
        let mut foci = Vec::new();
        let mut anchors = 0;
        let version_1 = s.foci.is_none();
        let list = match s.foci {
            Some(list) => list,
            // A version-1 section: its one focus, at the radius in force (set in `restore`).
            None => s
                .focus
                .map(|at| SavedFocus {
                    at,
                    radius: 0,
                    ticket: false,
                })
                .into_iter()
                .collect(),
        };
        if !active && !list.is_empty() {
            return Err(Problem::new(
                "foci",
                "expected nothing here: the save has no active scene (\"scene\": null)",
            ));
        }
        // At most one focus per entity (and the fallback), plus one per ticket: a hostile save
        // cannot ask for millions of squares.
        let most = crate::limits::MAX_ENTITIES + 1 + MAX_TICKETS;
        if list.len() > most {
            return Err(Problem::new(
                "foci",
                format!("expected at most {most} foci, got {}", list.len()),
            ));
        }
        for (i, f) in list.iter().enumerate() {
            let path = format!("foci[{i}]");
            f.at.check().map_err(|p| p.under(&path))?;
            if f.radius > MAX_RADIUS {
                return Err(Problem::new(
                    format!("{path}.radius"),
                    format!("expected an integer 0..=64, got {}", f.radius),
                ));
            }
            if !f.ticket {
                if anchors < i {
                    return Err(Problem::new(
                        path,
                        "expected the non-ticket foci first, then the tickets",
                    ));
                }
                anchors += 1;
            }
            foci.push(FocusView {
                pos: f.at,
                radius: f.radius,
            });
        }
        if foci.len() - anchors > MAX_TICKETS {
            return Err(Problem::new(
                "foci",
                format!(
                    "expected at most {MAX_TICKETS} ticket foci, got {}",
                    foci.len() - anchors
                ),
            ));
        }
        if s.focus != foci.first().map(|f| f.pos) {
            return Err(Problem::new("focus", "expected the first of `foci`"));
        }
        if s.tickets.len() > MAX_TICKETS {
            return Err(Problem::new(
                "tickets",
                format!(
                    "expected at most {MAX_TICKETS} tickets, got {}",
                    s.tickets.len()
                ),
            ));
        }
        let mut tickets = Tickets::default();
        for (i, t) in s.tickets.into_iter().enumerate() {
            let path = format!("tickets[{i}]");
            check_id(&t.id).map_err(|e| Problem::new(format!("{path}.id"), e.to_string()))?;
            t.ticket
                .at
                .check()
                .map_err(|p| p.under(&format!("{path}.at")))?;
            if t.ticket.radius > MAX_RADIUS {
                return Err(Problem::new(
                    format!("{path}.radius"),
                    format!("expected an integer 0..=64, got {}", t.ticket.radius),
                ));
            }
            if t.ticket.until < t.ticket.from {
                return Err(Problem::new(
                    format!("{path}.until"),
                    "expected a tick at or after `from`",
                ));
            }
            if tickets.get(&t.id).is_some() {
                return Err(Problem::new(
                    format!("{path}.id"),
                    format!("ticket {:?} is listed twice", t.id),
                ));
            }
            tickets.request(&t.id, t.ticket, 0).expect("checked above");
        }
        if !active && !tickets.is_empty() {
            return Err(Problem::new(
                "tickets",
                "expected nothing here: leaving a scene drops the tickets",
            ));
        }
        let mut last_wanted = BTreeMap::new();
        for (i, l) in s.last_wanted.iter().enumerate() {
            let c = ChunkPos::new(l.x, l.z);
            if !loaded.contains(&c) {
                return Err(Problem::new(
                    format!("lastWanted[{i}]"),
                    format!("chunk {c} is not loaded"),
                ));
            }
            if last_wanted.insert(c, l.tick).is_some() {
                return Err(Problem::new(
                    format!("lastWanted[{i}]"),
                    format!("chunk {c} is listed twice"),
                ));
            }
        }
        Ok(Prepared {
            loaded,
            refusals,
            last_moved: s.last_moved,
            overrides: s.overrides,
            foci,
            anchors,
            version_1,
            tickets,
            last_wanted,
            over_capacity: s.over_capacity,
        })
    }

    pub(crate) fn restore(&mut self, mut p: Prepared, scene: Option<&str>, tick: u64) {
        self.active = scene.is_some();
        self.layer = scene
            .and_then(|s| self.layers.get(s))
            .copied()
            .unwrap_or_default();
        self.overrides = p.overrides;
        self.last_moved = p.last_moved;
        self.now = tick;
        self.tickets = p.tickets;
        self.anchor_foci = p.anchors;
        self.anchor_ids = vec![None; p.anchors];
        self.over_capacity = p.over_capacity;
        self.foci_dirty = true;
        if p.version_1 {
            let radius = self.settings().radius;
            p.foci.iter_mut().for_each(|f| f.radius = radius);
        }
        self.residency
            .restore(p.loaded, p.refusals, &p.foci, p.last_wanted, tick);
    }

    /// The previous non-ticket foci (the foci in force before the tickets).
    pub(crate) fn previous_foci(&self) -> impl Iterator<Item = Position> + '_ {
        self.residency.foci().take(self.anchor_foci).map(|v| v.pos)
    }
}

fn refusal_list(residency: &Residency) -> Vec<Refusal> {
    residency
        .refusals()
        .map(|(c, h)| Refusal {
            x: c.x,
            z: c.z,
            hook: match h.kind {
                RefusalKind::Load => HOOK_CHUNK_LOAD,
                RefusalKind::Unload => HOOK_CHUNK_UNLOAD,
            }
            .to_owned(),
            by: h.by.clone(),
            reason: h.reason.clone(),
        })
        .collect()
}

/// A focus in force, as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SavedFocus {
    /// Where.
    pub at: Position,
    /// Its radius.
    pub radius: u32,
    /// Whether it stands for a ticket.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ticket: bool,
}

/// A ticket, as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SavedTicket {
    /// Its id.
    pub id: String,
    /// The ticket.
    #[serde(flatten)]
    pub ticket: Ticket,
}

/// The last tick a loaded chunk was wanted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LastWanted {
    /// Chunk column.
    pub x: i64,
    /// Chunk row.
    pub z: i64,
    /// The tick.
    pub tick: u64,
}

/// The kit's section of a save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SaveSection {
    /// Loaded chunks, in row order.
    pub loaded: Vec<ChunkPos>,
    /// The last focus (`null` when there is none).
    pub focus: Option<Position>,
    /// The position of the last `player.moved` event in this scene.
    pub last_moved: Option<Position>,
    /// Held refusals, in row order.
    pub refusals: Vec<Refusal>,
    /// Settings set by mods.
    pub overrides: Overrides,
    /// The foci in force, in order: non-ticket ones, then tickets (version 2; a version-1
    /// section has `focus` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foci: Option<Vec<SavedFocus>>,
    /// Held tickets in id order (version 2).
    #[serde(default)]
    pub tickets: Vec<SavedTicket>,
    /// The last tick each loaded chunk was wanted, row order; absent: 0 (version 2).
    #[serde(default)]
    pub last_wanted: Vec<LastWanted>,
    /// Whether the wanted chunks outnumbered the cap (version 2).
    #[serde(default)]
    pub over_capacity: bool,
}

/// A validated section, ready to apply.
pub(crate) struct Prepared {
    loaded: BTreeSet<ChunkPos>,
    refusals: BTreeMap<ChunkPos, Held>,
    last_moved: Option<Position>,
    overrides: Overrides,
    foci: Vec<FocusView>,
    anchors: usize,
    /// Saved before foci had radii: the one focus takes the radius in force.
    version_1: bool,
    tickets: Tickets,
    last_wanted: BTreeMap<ChunkPos, u64>,
    over_capacity: bool,
}

/// Runs the `onChunk` callbacks, in subscription order, with no borrow of the state held.
pub(crate) fn notify(
    state: &RefCell<State>,
    ctx: &mut ChunkCtx<'_>,
    chunk: ChunkPos,
    loaded: bool,
) {
    let list = state.borrow().subscribers.clone();
    if list.borrow().is_empty() {
        return;
    }
    let snapshot: Vec<Rc<Subscriber>> = list.borrow().clone();
    for s in snapshot {
        if s.alive.get() {
            match &mut *s.callback.borrow_mut() {
                Callback::Plain(f) => f(chunk, loaded),
                Callback::World(f) => f(ctx, chunk, loaded),
            }
        }
    }
}

/// Runs the callbacks of `stage`, in subscription order, with no borrow of the state held.
pub(crate) fn notify_stage(
    state: &RefCell<State>,
    stage: ChunkStage,
    ctx: &mut ChunkCtx<'_>,
    chunk: ChunkPos,
    loaded: bool,
) {
    let list = state.borrow().stages[stage as usize].clone();
    if list.borrow().is_empty() {
        return;
    }
    let snapshot: Vec<Rc<Subscriber>> = list.borrow().clone();
    for s in snapshot {
        if s.alive.get() {
            match &mut *s.callback.borrow_mut() {
                Callback::Plain(f) => f(chunk, loaded),
                Callback::World(f) => f(ctx, chunk, loaded),
            }
        }
    }
}

/// Adds a subscriber at the end of the subscription order.
fn subscribe(state: &RefCell<State>, callback: Callback) -> ChunkSubscription {
    let list = state.borrow().subscribers.clone();
    subscribe_to(list, callback)
}

fn subscribe_to(list: Subscribers, callback: Callback) -> ChunkSubscription {
    let subscriber = Rc::new(Subscriber {
        alive: Cell::new(true),
        callback: RefCell::new(callback),
    });
    list.borrow_mut().push(subscriber.clone());
    ChunkSubscription {
        subscriber: Rc::downgrade(&subscriber),
        list: Rc::downgrade(&list),
    }
}

/// The service handle registered as `world.streaming`.
pub(crate) struct Handle(pub(crate) Rc<RefCell<State>>);

impl StreamingService for Handle {
    fn loaded(&self) -> Vec<ChunkPos> {
        self.0.borrow().residency.loaded().collect()
    }

    fn pending(&self) -> Vec<ChunkPos> {
        self.0.borrow().residency.pending()
    }

    fn is_loaded(&self, chunk: ChunkPos) -> bool {
        self.0.borrow().residency.is_loaded(chunk)
    }

    fn chunk_of(&self, pos: Position) -> ChunkPos {
        self.0.borrow().residency.grid().chunk_of(pos)
    }

    fn around(&self, pos: Position) -> Vec<ChunkPos> {
        let st = self.0.borrow();
        st.residency
            .grid()
            .around(pos, st.settings().radius, st.residency.bounds())
    }

    fn on_chunk(&self, callback: ChunkCallback) -> ChunkSubscription {
        subscribe(&self.0, Callback::Plain(callback))
    }

    fn on_chunk_with(&self, callback: ChunkWorldCallback) -> ChunkSubscription {
        subscribe(&self.0, Callback::World(callback))
    }

    fn on_chunk_stage(&self, stage: ChunkStage, callback: ChunkWorldCallback) -> ChunkSubscription {
        let list = self.0.borrow().stages[stage as usize].clone();
        subscribe_to(list, Callback::World(callback))
    }

    fn chunk_size(&self) -> f64 {
        self.0.borrow().residency.grid().size()
    }

    fn refusals(&self) -> Vec<Refusal> {
        refusal_list(&self.0.borrow().residency)
    }

    fn release(&self, chunk: ChunkPos) -> bool {
        self.0.borrow_mut().residency.release_refusal(chunk)
    }

    fn focus(&self) -> Option<Position> {
        self.0.borrow().residency.focus()
    }

    fn radius(&self) -> u32 {
        self.0.borrow().settings().radius
    }

    fn loads_per_tick(&self) -> usize {
        self.0.borrow().settings().loads_per_tick
    }

    fn bounds(&self) -> Option<crate::grid::Bounds> {
        self.0.borrow().residency.bounds().copied()
    }

    fn set(&self, _by: &ModId, overrides: Overrides) {
        let mut st = self.0.borrow_mut();
        st.overrides = overrides.over(st.overrides);
    }

    fn settings(&self) -> Settings {
        self.0.borrow().settings()
    }

    fn foci(&self) -> Vec<Position> {
        self.0.borrow().residency.foci().map(|v| v.pos).collect()
    }

    fn request(
        &self,
        id: &str,
        at: Position,
        radius: i64,
        ticks: i64,
        from: Option<u64>,
    ) -> Result<(), TicketError> {
        let mut st = self.0.borrow_mut();
        let from = from.unwrap_or(st.now + 1);
        st.request(id, at, radius, ticks, from)
    }

    fn drop_ticket(&self, id: &str) -> bool {
        let mut st = self.0.borrow_mut();
        st.foci_dirty = true;
        st.tickets.drop_ticket(id)
    }

    fn tickets(&self) -> Vec<TicketInfo> {
        let st = self.0.borrow();
        st.tickets
            .iter()
            .map(|(id, t)| TicketInfo {
                id: id.to_owned(),
                x: t.at.x,
                z: t.at.z,
                radius: t.radius,
                ticks_left: t.until.saturating_sub(st.now),
            })
            .collect()
    }

    fn ready(&self, entity: &EntityId) -> bool {
        let st = self.0.borrow();
        let Some(i) = st
            .anchor_ids
            .iter()
            .position(|a| a.as_ref() == Some(entity))
        else {
            return false;
        };
        st.active
            && st
                .residency
                .foci()
                .nth(i)
                .is_some_and(|v| st.residency.square_ready(v))
    }

    fn ticket_ready(&self, id: &str) -> bool {
        let st = self.0.borrow();
        st.active
            && st
                .tickets
                .get(id)
                .is_some_and(|t| st.residency.square_ready(State::ticket_view(t)))
    }

    fn progress(&self) -> f64 {
        let (ready, wanted) = self.0.borrow().residency.progress();
        if wanted == 0 {
            1.0
        } else {
            ready as f64 / wanted as f64
        }
    }

    fn register_builder(&self, name: &str) -> Option<BuilderId> {
        let mut st = self.0.borrow_mut();
        let index = st.residency.add_builder()?;
        st.builders.push(name.to_owned());
        Some(BuilderId(index))
    }

    fn set_built(&self, builder: BuilderId, chunk: ChunkPos, built: bool) {
        self.0
            .borrow_mut()
            .residency
            .set_built(builder.0, chunk, built);
    }

    fn clear_overrides(&self) {
        self.0.borrow_mut().overrides = Overrides::default();
    }

    fn restoring(&self) -> bool {
        self.0.borrow().restoring.get()
    }
}
