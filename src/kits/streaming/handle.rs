//! The `world.streaming` service over the kit's state: the handle registered in the service
//! registry, and the `onChunk` subscribers it keeps.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::grid::{ChunkPos, Position};
use crate::host::{EntityId, ModId};

use super::config::{Overrides, Settings};
use super::foci::TicketError;
use super::service::{
    BuilderId, Callback, ChunkCallback, ChunkCtx, ChunkStage, ChunkSubscription,
    ChunkWorldCallback, Refusal, StreamingService, Subscriber, TicketInfo,
};
use super::state::{refusal_list, State, Subscribers};

/// Tells the [`StreamingService::on_lod_blocks`] callbacks of `changes`, in subscription order,
/// with no borrow of the state held (a callback subscribing another one meanwhile is kept, after
/// them).
pub(crate) fn notify_lod(state: &RefCell<State>, tick: u64, changes: &[super::service::LodChange]) {
    if changes.is_empty() {
        return;
    }
    let list = state.borrow().lod_subscribers.clone();
    let mut running = std::mem::take(&mut *list.borrow_mut());
    for f in running.iter_mut() {
        f(tick, changes);
    }
    let mut now = list.borrow_mut();
    running.append(&mut now);
    *now = running;
}

/// Runs the `onChunk` callbacks, in subscription order, with no borrow of the state held.
pub(crate) fn notify(
    state: &RefCell<State>,
    ctx: &mut ChunkCtx<'_>,
    chunk: ChunkPos,
    loaded: bool,
) {
    let list = state.borrow().subscribers.clone();
    run(&list, ctx, chunk, loaded);
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
    run(&list, ctx, chunk, loaded);
}

/// Calls every live subscriber of `list` (a snapshot: a callback may subscribe or unsubscribe).
fn run(list: &Subscribers, ctx: &mut ChunkCtx<'_>, chunk: ChunkPos, loaded: bool) {
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

/// Adds a subscriber at the end of `list`'s subscription order.
fn subscribe(list: Subscribers, callback: Callback) -> ChunkSubscription {
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

    fn listed_len(&self, list: super::Listed) -> usize {
        let st = self.0.borrow();
        match list {
            super::Listed::Loaded => st.residency.loaded().len(),
            super::Listed::Pending => st.residency.pending_len(),
            super::Listed::Around => {
                let settings = st.settings();
                let radius = settings.radius + settings.neighbours;
                st.residency
                    .footprint_len(radius, super::form_of(&settings))
            }
            super::Listed::Lod(level) => match level.checked_sub(1) {
                Some(k) => st.lod.loaded_in(k as usize),
                None => 0,
            },
        }
    }

    fn is_loaded(&self, chunk: ChunkPos) -> bool {
        self.0.borrow().residency.is_loaded(chunk)
    }

    fn columns(&self) -> Vec<ChunkPos> {
        // docs/reference/streaming.md#columns (flat: a column is its chunk).
        let st = self.0.borrow();
        match st.columns.is_on() {
            true => st.columns.with_sections(),
            false => st.residency.loaded().collect(),
        }
    }

    fn is_column_loaded(&self, column: ChunkPos) -> bool {
        let st = self.0.borrow();
        match st.columns.is_on() {
            true => st.columns.has_sections(column),
            false => st.residency.is_loaded(column.column()),
        }
    }

    fn chunk_of(&self, pos: Position) -> ChunkPos {
        self.0.borrow().residency.chunk_of(pos)
    }

    fn around(&self, pos: Position) -> Vec<ChunkPos> {
        let st = self.0.borrow();
        let settings = st.settings();
        let radius = settings.radius + settings.neighbours;
        if super::form_of(&settings) == super::Form::default() {
            return st
                .residency
                .grid()
                .around(pos, radius, st.residency.bounds());
        }
        st.residency.around(pos, radius, super::form_of(&settings))
    }

    fn shape(&self) -> super::config::Shape {
        self.0.borrow().settings().shape
    }

    fn vertical(&self) -> Option<super::config::Vertical> {
        self.0.borrow().settings().vertical
    }

    fn on_chunk(&self, callback: ChunkCallback) -> ChunkSubscription {
        subscribe(
            self.0.borrow().subscribers.clone(),
            Callback::Plain(callback),
        )
    }

    fn on_chunk_with(&self, callback: ChunkWorldCallback) -> ChunkSubscription {
        subscribe(
            self.0.borrow().subscribers.clone(),
            Callback::World(callback),
        )
    }

    fn on_chunk_stage(&self, stage: ChunkStage, callback: ChunkWorldCallback) -> ChunkSubscription {
        let list = self.0.borrow().stages[stage as usize].clone();
        subscribe(list, Callback::World(callback))
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
        st.scheduling_used |= overrides.uses_scheduling();
        st.lod_used |= overrides.lod.is_some_and(|l| !l.is_empty());
        st.neighbours_used |= overrides.uses_neighbours();
        let merged = overrides.over(st.overrides());
        st.set_overrides(merged);
    }

    fn settings(&self) -> Settings {
        self.0.borrow().settings()
    }

    fn foci(&self) -> Vec<Position> {
        // The foci (docs/reference/streaming.md#the-foci-in-force): the non-ticket ones and the
        // tickets, not the predicted ones.
        let st = self.0.borrow();
        let before = st.anchor_foci;
        let skip = st.predicted_foci;
        st.residency
            .foci()
            .enumerate()
            .filter(|(i, _)| *i < before || *i >= before + skip)
            .map(|(_, v)| v.pos)
            .collect()
    }

    fn request(
        &self,
        id: &str,
        at: Position,
        radius: i64,
        ticks: i64,
        from: Option<u64>,
        priority: Option<u8>,
    ) -> Result<(), TicketError> {
        let mut st = self.0.borrow_mut();
        let from = from.unwrap_or(st.now + 1);
        st.request(id, at, radius, ticks, from, priority)
    }

    fn predicted(&self) -> Option<Vec<Position>> {
        let st = self.0.borrow();
        st.uses_scheduling()
            .then(|| st.predicted().map(|v| v.pos).collect())
    }

    fn holes(&self) -> (u64, u64) {
        let st = self.0.borrow();
        (st.holes, st.hole_ticks)
    }

    fn hole_chunks(&self) -> Option<Vec<ChunkPos>> {
        let st = self.0.borrow();
        st.uses_scheduling().then(|| {
            if st.active {
                st.residency
                    .hole_chunks(st.anchor_foci, st.settings().hole_ring)
            } else {
                Vec::new()
            }
        })
    }

    fn lod_loaded(&self, level: u32) -> Vec<ChunkPos> {
        let st = self.0.borrow();
        match level.checked_sub(1) {
            Some(k) => st.lod.loaded(k as usize).collect(),
            None => Vec::new(),
        }
    }

    fn lod(&self) -> Option<Vec<Vec<ChunkPos>>> {
        let st = self.0.borrow();
        if !st.uses_lod() {
            return None;
        }
        let levels = st.settings().lod.levels().len();
        let mut list: Vec<Vec<ChunkPos>> = (0..crate::kits::streaming::config::MAX_LOD_LEVELS)
            .map(|k| st.lod.loaded(k).collect())
            .collect();
        while list.len() > levels && list.last().is_some_and(Vec::is_empty) {
            list.pop();
        }
        Some(list)
    }

    fn lod_ready(&self, level: u32, block: ChunkPos) -> bool {
        let st = self.0.borrow();
        level.checked_sub(1).is_some_and(|k| {
            (k as usize) < crate::kits::streaming::config::MAX_LOD_LEVELS
                && st.lod.is_ready(k as usize, block)
        })
    }

    fn lod_step(&self, level: u32) -> Option<u32> {
        let st = self.0.borrow();
        st.lod.step(level.checked_sub(1)? as usize)
    }

    fn lod_steps_after_load(
        &self,
        section: &serde_json::Value,
        scene: Option<&str>,
    ) -> Option<[u32; crate::kits::streaming::config::MAX_LOD_LEVELS]> {
        let section = crate::json::from_value(section, "").ok()?;
        Some(self.0.borrow().lod_steps_after_load(&section, scene))
    }

    fn lod_holes(&self) -> (u64, u64) {
        let st = self.0.borrow();
        (st.lod_holes, st.lod_hole_ticks)
    }

    fn register_lod_builder(&self, builder: BuilderId) {
        self.0.borrow_mut().lod.add_builder(builder.0);
    }

    fn set_lod_built(&self, builder: BuilderId, level: u32, block: ChunkPos, built: bool) {
        if let Some(k) = level.checked_sub(1) {
            self.0
                .borrow_mut()
                .lod
                .set_built(builder.0, k as usize, block, built);
        }
    }

    fn on_lod_blocks(&self, f: super::service::LodCallback) {
        let list = self.0.borrow().lod_subscribers.clone();
        list.borrow_mut().push(f);
    }

    fn neighbours(&self) -> u32 {
        self.0.borrow().settings().neighbours
    }

    fn is_complete(&self, chunk: ChunkPos) -> bool {
        self.0.borrow().residency.is_complete(chunk)
    }

    fn complete(&self) -> Vec<ChunkPos> {
        self.0.borrow().residency.complete_chunks()
    }

    fn on_complete(&self, callback: super::service::CompleteCallback) {
        let list = self.0.borrow().complete_subscribers.clone();
        list.borrow_mut().push(callback);
    }

    fn drop_ticket(&self, id: &str) -> bool {
        let mut st = self.0.borrow_mut();
        st.foci_dirty = true;
        st.tickets.drop_ticket(id)
    }

    fn tickets(&self) -> Vec<TicketInfo> {
        let st = self.0.borrow();
        let vertical = st.settings().vertical.is_some();
        st.tickets
            .iter()
            .map(|(id, t)| TicketInfo {
                id: id.to_owned(),
                x: t.at.x,
                y: vertical.then_some(t.at.y),
                z: t.at.z,
                radius: t.radius,
                ticks_left: t.until.saturating_sub(st.now),
                priority: st.uses_scheduling().then_some(t.priority),
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
            && st.tickets.get(id).is_some_and(|t| {
                let k = st.residency.neighbours();
                st.residency.square_ready(State::ticket_view(t, k))
            })
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
        self.0.borrow_mut().set_overrides(Overrides::default());
    }

    fn restoring(&self) -> bool {
        self.0.borrow().restoring.get()
    }
}
