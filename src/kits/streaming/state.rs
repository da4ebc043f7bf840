//! The kit's state, shared between the kit (which ticks) and the service handle (`handle.rs`,
//! which other kits and mods hold). Borrows are kept short: no borrow is held while hooks or
//! callbacks run, so a Lua handler or an `onChunk` callback may read the service. Its save
//! section and the checks of a loaded one are in `save.rs`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use indexmap::IndexMap;

use crate::grid::{Grid, Position};
use crate::host::EntityId;

use super::config::{Overrides, Settings, StreamingConfig};
use super::dormancy::Dormancy;
use super::events::{HOOK_CHUNK_LOAD, HOOK_CHUNK_UNLOAD};
use super::foci::{Ticket, TicketError, Tickets};
use super::lod::LodPlan;
use super::residency::{Columns, FocusView, RefusalKind, Residency};
use super::service::{Refusal, Subscriber};
use super::TICKET_REFUSED;

pub(crate) type Subscribers = Rc<RefCell<Vec<Rc<Subscriber>>>>;

/// The [`super::service::StreamingService::on_complete`] callbacks, subscription order.
pub(crate) type CompleteSubscribers = Rc<RefCell<Vec<super::service::CompleteCallback>>>;

/// The [`super::service::StreamingService::on_lod_blocks`] callbacks, subscription order.
pub(crate) type LodSubscribers = Rc<RefCell<Vec<super::service::LodCallback>>>;

pub(crate) struct State {
    pub(crate) config: StreamingConfig,
    pub(crate) layers: IndexMap<String, Overrides>,
    /// The active scene's layer ([`State::set_layer`]).
    layer: Overrides,
    /// Set by mods; saved with the game ([`State::set_overrides`]).
    overrides: Overrides,
    /// [`State::settings`] once resolved, until the layer or the overrides change.
    settings_memo: std::cell::Cell<Option<Settings>>,
    pub(crate) residency: Residency,
    /// The loaded columns with `vertical` on (docs/reference/streaming.md#columns).
    pub(crate) columns: Columns,
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
    pub(crate) subscribers: Subscribers,
    /// The stage subscribers: `[before a load is announced, after a release is announced]`.
    pub(crate) stages: [Subscribers; 2],
    pub(crate) lod_subscribers: LodSubscribers,
    /// Whether the subscribers are being told what a load changed.
    pub(crate) restoring: Cell<bool>,
    /// How many predicted foci follow the non-ticket foci in force
    /// (docs/reference/streaming.md#look-ahead).
    pub(crate) predicted_foci: usize,
    /// The `"fair"` turn: a position in the focus order (saved).
    pub(crate) turn: usize,
    /// Each anchor's focus at the last resolution, anchor order (saved): what look-ahead
    /// measures the displacement from.
    pub(crate) history: Vec<(EntityId, Position)>,
    /// `world.chunks.holes` at the end of the last tick, and their running sum (saved).
    pub(crate) holes: u64,
    pub(crate) hole_ticks: u64,
    /// A mod set a scheduling key (docs/reference/config.md#outputs-that-appear-only-when-used), a
    /// request carried `priority`, or a save said so.
    pub(crate) scheduling_used: bool,
    /// The LOD blocks (docs/reference/lod.md#blocks).
    pub(crate) lod: LodPlan,
    /// `world.lod.holes` at the end of the last tick and their running sum (saved).
    pub(crate) lod_holes: u64,
    pub(crate) lod_hole_ticks: u64,
    /// A mod set `lod`, or a save said so.
    pub(crate) lod_used: bool,
    /// A mod set `neighbours` above 0, or a save said so
    /// (docs/reference/streaming.md#complete-chunks).
    pub(crate) neighbours_used: bool,
    /// The [`super::service::StreamingService::on_complete`] callbacks, subscription order.
    pub(crate) complete_subscribers: CompleteSubscribers,
    /// Where the events of service calls go (`world.ticket.refused`): the engine emits them
    /// when it next settles.
    pub(crate) outbox: crate::host::Outbox,
}

impl State {
    pub(crate) fn new(config: StreamingConfig, layers: IndexMap<String, Overrides>) -> Self {
        State {
            residency: Residency::new(Grid::new(config.chunk_size.get()), None),
            columns: Columns::new(),
            config,
            layers,
            layer: Overrides::default(),
            overrides: Overrides::default(),
            settings_memo: std::cell::Cell::new(None),
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
            lod_subscribers: LodSubscribers::default(),
            restoring: Cell::new(false),
            predicted_foci: 0,
            turn: 0,
            history: Vec::new(),
            holes: 0,
            hole_ticks: 0,
            scheduling_used: false,
            lod: LodPlan::new(Grid::new(config.chunk_size.get()), None),
            lod_holes: 0,
            lod_hole_ticks: 0,
            lod_used: false,
            neighbours_used: false,
            complete_subscribers: CompleteSubscribers::default(),
            outbox: crate::host::Outbox::default(),
        }
    }

    /// Whether the scene uses docs/reference/config.md#outputs-that-appear-only-when-used (`lod` in
    /// the config, a layer or a mod's `set`, or a save with blocks): only then does the state show
    /// `lod` and the LOD variables exist.
    pub(crate) fn uses_lod(&self) -> bool {
        self.lod_used
            || self.config.uses_lod()
            || self
                .layers
                .values()
                .any(|l| l.lod.is_some_and(|l| !l.is_empty()))
    }

    /// Whether the scene uses `neighbours` above 0 (the config, a layer, a mod's `set`, or a
    /// save): only then do the complete-chunk variable and save version 4 appear
    /// (docs/reference/streaming.md#complete-chunks).
    pub(crate) fn uses_neighbours(&self) -> bool {
        self.neighbours_used
            || self.config.uses_neighbours()
            || self.layers.values().any(Overrides::uses_neighbours)
    }

    /// Whether the scene uses docs/reference/config.md#outputs-that-appear-only-when-used (a key in
    /// the config, a layer or a mod's `set`, or a request's `priority`): only then does the state
    /// show `predicted`, ticket priorities and the hole variables, so that every earlier output
    /// stays byte for byte.
    pub(crate) fn uses_scheduling(&self) -> bool {
        self.scheduling_used
            || self.config.uses_scheduling()
            || self.layers.values().any(Overrides::uses_scheduling)
    }

    /// The predicted foci in force (after the non-ticket ones).
    pub(crate) fn predicted(&self) -> impl Iterator<Item = FocusView> + '_ {
        self.residency
            .foci()
            .skip(self.anchor_foci)
            .take(self.predicted_foci)
    }

    /// The non-ticket foci and the predicted ones: what comes before the tickets.
    pub(crate) fn before_tickets(&self) -> usize {
        self.anchor_foci + self.predicted_foci
    }

    /// The view of a ticket: its own radius plus `neighbours` `k`
    /// (docs/reference/streaming.md#complete-chunks).
    pub(crate) fn ticket_view(t: &Ticket, k: u32) -> FocusView {
        FocusView {
            pos: t.at,
            radius: t.radius + k,
            priority: t.priority,
        }
    }

    /// The foci in force after the non-ticket ones: the tickets counting in `tick`, id order.
    pub(crate) fn ticket_foci(&self, tick: u64, out: &mut Vec<FocusView>) {
        out.extend(
            self.tickets
                .iter()
                .filter(|(_, t)| t.counts_in(tick))
                .map(|(_, t)| Self::ticket_view(t, self.residency.neighbours())),
        );
    }

    /// Requests ticket `id` counting from tick `from`. Refused by the ticket cap, it changes
    /// nothing and `world.ticket.refused {id, reason}` is emitted, whoever asked.
    pub(crate) fn request(
        &mut self,
        id: &str,
        at: Position,
        radius: i64,
        ticks: i64,
        from: u64,
        priority: Option<u8>,
    ) -> Result<(), TicketError> {
        let ticket = Ticket::new(id, at, radius, ticks, from)?.with_priority(priority.unwrap_or(0));
        let cap = self.config.max_ticket_chunks();
        self.tickets
            .set_measure(super::foci::Measure::of(&self.settings()));
        let result = self.tickets.request(id, ticket, self.now, cap);
        if let Err(e @ TicketError::OverCap { .. }) = &result {
            self.outbox.borrow_mut().push((
                TICKET_REFUSED.into(),
                serde_json::json!({ "id": id, "reason": e.to_string() }).into(),
            ));
            return result;
        }
        self.scheduling_used |= priority.is_some();
        self.foci_dirty = true;
        result
    }

    /// The settings in force for the next tick: resolved once for each layer and overrides
    /// (a tick asks several times; resolving is a few hundred instructions).
    pub(crate) fn settings(&self) -> Settings {
        if let Some(s) = self.settings_memo.get() {
            return s;
        }
        let s = self.config.settings(self.layer, self.overrides);
        self.settings_memo.set(Some(s));
        s
    }

    /// Sets the active scene's layer (entering or leaving a scene, a load).
    pub(crate) fn set_layer(&mut self, layer: Overrides) {
        self.layer = layer;
        self.settings_memo.set(None);
    }

    /// What mods set.
    pub(crate) fn overrides(&self) -> Overrides {
        self.overrides
    }

    /// Sets what mods set (a mod's `set`, a load, leaving the game's scenes).
    pub(crate) fn set_overrides(&mut self, overrides: Overrides) {
        self.overrides = overrides;
        self.settings_memo.set(None);
    }

    /// The previous non-ticket foci (the foci in force before the tickets).
    pub(crate) fn previous_foci(&self) -> impl Iterator<Item = Position> + '_ {
        self.residency.foci().take(self.anchor_foci).map(|v| v.pos)
    }
}

pub(crate) fn refusal_list(residency: &Residency) -> Vec<Refusal> {
    residency
        .refusals()
        .map(|(c, h)| Refusal {
            x: c.x,
            y: residency.form().vertical.map(|_| c.y),
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
