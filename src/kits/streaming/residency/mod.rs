//! The residency: the kit's record of which chunks are loaded, wanted, pending and refused, kept
//! up to date incrementally as foci move, and the queries each tick plans with (what is due for
//! release, what to load next, what to evict) around any number of foci
//! (docs/reference/tick.md#focus-resolution, docs/reference/streaming.md#eviction). Stateful, but
//! plain data over [`Grid`] math with no host types, so it is unit-tested and benchmarked alone;
//! the kit resolves the foci, asks the hooks and applies the answers.
//!
//! Work is proportional to what changed. Each chunk near a focus carries two counts: how many
//! foci want it (ring `<= r`) and how many keep it (ring `<= r + 1`). When a focus moves to
//! another chunk only the strips between its old and new squares are counted, so a walker crossing
//! a chunk edge touches O(r) chunks whatever the number of other foci, and a focus that stays in
//! its chunk touches none. A chunk whose counts cross zero is put on a *recheck* list; the refusal
//! drop rules and the releases of the next tick look at that list only. Eviction candidates
//! (loaded, unwanted, unrefused) are kept ordered by (last wanted, row order) in a log with a
//! sorted set beside it ([`Evictable`]), so the cap picks one without scanning or sorting the
//! loaded set.
//!
//! Choosing loads costs what is taken, not the pending set. Each focus counts the pending chunks
//! of its square, and keeps a *queue* of them: a heap by (priority descending, squared distance
//! from its own position, z, x), built from its square the first time a load is chosen for it
//! after it moved, then kept: a chunk that becomes pending again, or whose priority changes, is
//! pushed; a chunk that stops being pending stays behind and is skipped when it comes up. The
//! `"fair"` deal pops the queue of the focus whose turn it is; `"nearest"` pops the least head
//! over the queues of the foci with pending chunks (a chunk's nearest-first key is the least of
//! its foci's distances, so the least head is the nearest pending chunk). Both give exactly the
//! orders of the plain scans they replaced (the tests run them side by side).
//!
//! The parts: `squares.rs` (the foci's squares and the counts they keep), `queue.rs` (the pending
//! chunks and the loads chosen from them), `refusals.rs` (refusals held and dropped),
//! `readiness.rs` (builders, the readiness log, holes); this file the record itself, its
//! resolution, loads, releases, eviction, clearing and restoring.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use indexmap::IndexSet;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};
use smallvec::SmallVec;

use crate::grid::{Bounds, ChunkPos, Grid, Position};

mod columns;
mod complete;
mod queue;
mod readiness;
mod refusals;
mod squares;
#[cfg(test)]
mod testing;

pub use columns::Columns;
pub use complete::CompleteChange;
use complete::Completeness;
use queue::*;
pub use squares::Form;
use squares::Rect;

/// Which hook a refusal answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefusalKind {
    /// `world.chunk.load` was cancelled: the chunk stays unloaded.
    Load,
    /// `world.chunk.unload` was cancelled: the chunk stays loaded.
    Unload,
}

/// A held refusal of one chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The hook that was cancelled.
    pub kind: RefusalKind,
    /// The id of the mod that cancelled it.
    pub by: String,
    /// Its reason.
    pub reason: String,
}

/// A focus as the planner sees it: a position and the rings it wants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FocusView {
    /// Where the focus is (its chunk is the centre of its square).
    pub pos: Position,
    /// Rings wanted around the focus chunk.
    pub radius: u32,
    /// Its priority (docs/reference/streaming.md#priorities): 0 but for a ticket that asked for
    /// more.
    pub priority: u8,
}

impl FocusView {
    /// A focus of priority 0.
    pub fn new(pos: Position, radius: u32) -> Self {
        FocusView {
            pos,
            radius,
            priority: 0,
        }
    }
}

/// A focus in force: its view and its chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Slot {
    view: FocusView,
    centre: ChunkPos,
}

impl Slot {
    /// The chunks it wants: within the shape of its radius, on its rows.
    fn want(&self, form: Form) -> Rect {
        Rect::around(self.centre, self.view.radius, form.disc, form.rows()).padded(form.ring)
    }
    /// The chunks it keeps: within the shape of its radius + 1, one row more each side (a
    /// disc's: the disc of `r + 1` with the same skin of rings).
    fn keep(&self, form: Form) -> Rect {
        let rows = form.vertical.map_or(0, |(rv, _)| rv + 1);
        Rect::around(self.centre, self.view.radius + 1, form.disc, rows).padded(form.ring)
    }
}

/// The place of an id that is not in use.
const FREE: u32 = u32::MAX;

/// The squared distance from `pos` to the centre of `c`: in x, z when flat, else in 3-D with
/// sections `height` tall (docs/reference/grid.md#nearest-first-order).
pub(super) fn distance(grid: &Grid, height: Option<f64>, pos: Position, c: ChunkPos) -> f64 {
    match height {
        None => grid.distance_sq(pos, c),
        Some(h) => grid.distance_sq_section(pos, c, h),
    }
}

/// The section of `pos` with sections `height` tall.
pub(super) fn section_of(grid: &Grid, pos: Position, height: f64) -> ChunkPos {
    grid.section_of(pos, height)
}

/// Which foci want a chunk (ring `<= r`, by id of the foci in force) and how many keep it
/// (ring `<= r + 1`). The list makes the nearest-first key of a chunk cost the foci that want
/// it, not every focus.
#[derive(Debug, Clone, Default)]
struct Cover {
    wanted_by: SmallVec<[u32; 2]>,
    keep: u32,
    /// The highest priority of the foci in `wanted_by` (meaningless while it is empty).
    prio: u8,
}

/// Loaded chunks, pending chunks, held refusals and eviction candidates around the foci.
#[derive(Debug, Clone)]
pub struct Residency {
    grid: Grid,
    bounds: Option<Bounds>,
    /// The footprints' shape and rows (the default: flat squares).
    form: Form,
    /// With vertical sections: per column holding a loaded section, what its builders built
    /// (the bits every loaded section of it mirrors in `built`) and the rows loaded, in load
    /// order. Empty when flat.
    columns_built: FxHashMap<ChunkPos, (u64, SmallVec<[i64; 12]>)>,
    loaded: BTreeSet<ChunkPos>,
    refusals: BTreeMap<ChunkPos, Held>,
    /// Held load refusals of chunks in the union.
    load_refusals_wanted: usize,
    /// Held unload refusals per mod id.
    unload_refusals_by: BTreeMap<String, usize>,
    /// The foci in force, in order (anchors, then tickets).
    foci: Vec<Slot>,
    /// Each focus's id (by place in `foci`). A focus keeps its id while it stays in force, even
    /// when foci before it come or go, so the chunks counted for it (by id) stay counted.
    ids: Vec<u32>,
    /// Each id's place in `foci` ([`FREE`] for an id not in use).
    place: Vec<u32>,
    /// Ids not in use, to be used again.
    free_ids: Vec<u32>,
    /// Counts of the chunks within `r + 1` of some focus and inside the ground. Only looked up,
    /// never iterated, so its hash order cannot leak.
    cover: FxHashMap<ChunkPos, Cover>,
    /// Chunks wanted by at least one focus.
    union_len: usize,
    /// Wanted, not loaded, not refused; in an order that depends only on what happened (never on
    /// hashes), and taken from by the nearest-first key, which is a total order. Changed only
    /// through [`Residency::pend`] and [`Residency::unpend`], which keep the counts below.
    pending: IndexSet<ChunkPos, FxBuildHasher>,
    /// Per focus id: how many pending chunks its square holds.
    pending_in: Vec<u32>,
    /// Per focus id: its queue of pending chunks, once built (dropped when the focus
    /// moves, even within its chunk: its distances changed). Every pending chunk of the focus's
    /// square has a true entry in a built queue.
    queues: Vec<Option<Queue>>,
    /// Queue entries and square chunks looked at while choosing loads (see
    /// [`Residency::examined`]).
    examined: u64,
    /// Chunks counted in or out of a focus's squares (see [`Residency::recounted`]).
    recounted: u64,
    /// The last tick each loaded chunk outside the union was wanted: an entry for every such
    /// chunk and no other (0 for a chunk never wanted), so one lookup tells whether an entry of
    /// the eviction order is current.
    last_wanted: FxHashMap<ChunkPos, u64>,
    /// The eviction order: loaded chunks outside the union holding no refusal, by (last
    /// wanted, row order).
    evictable: Evictable,
    /// Chunks whose refusal may drop or which may be due for release at the next resolution.
    recheck: BTreeSet<ChunkPos>,
    /// The tick of the last resolution.
    resolved_at: u64,
    /// Wanted chunks that are ready (loaded and built by every builder, or load-refused).
    ready: usize,
    /// How many builders readiness waits for (at most 64).
    builders: u32,
    /// Which builders built each loaded chunk (bit `i`: builder `i`). Every loaded chunk has
    /// an entry, so one hashed lookup also tells whether a chunk is loaded.
    built: FxHashMap<ChunkPos, u64>,
    /// Chunks whose readiness may have changed since the last [`Residency::swap_ready_log`]
    /// (the hole count (docs/reference/lod.md#lod-holes) follows them rather than recounting), kept
    /// only once [`Residency::track_readiness`] was called; past [`READY_LOG_MAX`] entries, or
    /// after a change of every chunk at once, `ready_log_lost` says the log is not the whole story.
    /// Each entry says whether that change can only have made the chunk ready (a load, a
    /// build, a refusal held) rather than unready.
    ready_log: Vec<(ChunkPos, bool)>,
    ready_log_on: bool,
    ready_log_lost: bool,
    /// Complete chunks (docs/reference/streaming.md#complete-chunks), kept while `k > 0`.
    complete: Completeness,
    /// [`Residency::progress`] with `k > 0` as last counted; `None` once a focus's square or a
    /// chunk's completeness changed since, so a tick where nothing changed costs no recount.
    mesh_progress: std::cell::Cell<Option<(usize, usize)>>,
    /// Counts the changes that may move the hole count of one focus: a chunk's readiness or
    /// completeness ([`Residency::touched`], [`Residency::recount_complete`]) or the footprints'
    /// form. Its focus's chunk and radius are part of the memo's key.
    readiness_epoch: u64,
    /// [`Residency::holes`] of one focus as last counted, with what it was counted for, so a
    /// tick where nothing changed costs no recount.
    holes_memo: std::cell::Cell<Option<(HolesKey, usize)>>,
}

/// The eviction order, kept as a log rather than a sorted set, so that a chunk entering or
/// leaving the union costs a push, not a tree's insert and remove: an entry `(last wanted,
/// chunk)` is added each time a chunk becomes a candidate, and is *current* while the chunk's
/// last-wanted tick is still that tick and it holds no refusal. An entry that stopped being
/// current (the chunk entered the union, was released or refused, or left again later) stays
/// behind until it is met at the front or the entries are compacted: when they have doubled
/// since the last compaction, which keeps the work per push constant. The log stays in order:
/// a push in order (the usual case: one tick's chunks leave in row order) is appended; one out
/// of order (a refusal dropped, an older tick restored, a second focus's strips) goes to a
/// sorted set beside it, and a candidate is the first current entry of the two merged. Nothing
/// is ever sorted whole, so asking between pushes costs what the pushes did.
#[derive(Debug, Clone, Default)]
struct Evictable {
    /// In order (each entry at least the one before it).
    log: Vec<(u64, ChunkPos)>,
    /// The entries pushed out of order.
    late: BTreeSet<(u64, ChunkPos)>,
    /// How many entries there were after the last compaction.
    compacted: usize,
    /// Entries of `log` before it are stale (skipped once, not again).
    start: usize,
}

impl Evictable {
    fn push(&mut self, e: (u64, ChunkPos), current: impl Fn(&(u64, ChunkPos)) -> bool) {
        if self.log.len() + self.late.len() >= 2 * self.compacted + 64 {
            self.log.retain(&current);
            self.late.retain(&current);
            (self.compacted, self.start) = (self.log.len() + self.late.len(), 0);
        }
        if self.log.last().is_some_and(|last| *last > e) {
            self.late.insert(e);
        } else {
            self.log.push(e);
        }
    }

    fn candidate(
        &mut self,
        current: impl Fn(&(u64, ChunkPos)) -> bool,
        asked: &BTreeSet<ChunkPos>,
    ) -> Option<ChunkPos> {
        while self.log.get(self.start).is_some_and(|e| !current(e)) {
            self.start += 1;
        }
        while self.late.first().is_some_and(|e| !current(e)) {
            self.late.pop_first();
        }
        let mut inline = self.log[self.start..]
            .iter()
            .filter(|e| current(e))
            .peekable();
        let mut late = self.late.iter().filter(|e| current(e)).peekable();
        loop {
            let next = match (inline.peek(), late.peek()) {
                (Some(a), Some(b)) if a <= b => inline.next(),
                (_, Some(_)) => late.next(),
                (Some(_), None) => inline.next(),
                (None, None) => return None,
            };
            let c = next.expect("a peeked entry").1;
            if !asked.contains(&c) {
                return Some(c);
            }
        }
    }
}

/// Whether an entry `(last wanted, chunk)` of the eviction order is current: the chunk's
/// last-wanted tick is still that tick (so it is loaded and outside the union) and it holds no
/// refusal.
fn current_in<'a>(
    last_wanted: &'a FxHashMap<ChunkPos, u64>,
    refusals: &'a BTreeMap<ChunkPos, Held>,
) -> impl Fn(&(u64, ChunkPos)) -> bool + 'a {
    move |&(t, c)| last_wanted.get(&c) == Some(&t) && !refusals.contains_key(&c)
}

/// What a hole count of one focus was counted for: the readiness epoch, the ring, the focus's
/// chunk and radius.
type HolesKey = (u64, u32, ChunkPos, u32);

/// The most chunks [`Residency`]'s readiness log holds before it gives up (a full recount).
pub const READY_LOG_MAX: usize = 1 << 16;

impl Residency {
    /// Nothing loaded, no focus.
    pub fn new(grid: Grid, bounds: Option<Bounds>) -> Self {
        Residency {
            grid,
            bounds,
            form: Form::default(),
            columns_built: FxHashMap::default(),
            loaded: BTreeSet::new(),
            refusals: BTreeMap::new(),
            load_refusals_wanted: 0,
            unload_refusals_by: BTreeMap::new(),
            foci: Vec::new(),
            ids: Vec::new(),
            place: Vec::new(),
            free_ids: Vec::new(),
            cover: FxHashMap::default(),
            union_len: 0,
            pending: IndexSet::default(),
            pending_in: Vec::new(),
            queues: Vec::new(),
            examined: 0,
            recounted: 0,
            last_wanted: FxHashMap::default(),
            evictable: Evictable::default(),
            recheck: BTreeSet::new(),
            resolved_at: 0,
            ready: 0,
            builders: 0,
            built: FxHashMap::default(),
            ready_log: Vec::new(),
            ready_log_on: false,
            ready_log_lost: true,
            complete: Completeness::default(),
            mesh_progress: std::cell::Cell::new(None),
            readiness_epoch: 0,
            holes_memo: std::cell::Cell::new(None),
        }
    }

    /// How many queued chunks (and chunks of a square, while a focus's queue is built) the
    /// planner has looked at while choosing loads, since it was made: a deterministic measure
    /// of the cost of [`Residency::take_nearest`] and [`Residency::take_fair`] for tests and
    /// benches (each load costs the entries it skips plus one, never the whole pending set).
    pub fn examined(&self) -> u64 {
        self.examined
    }

    /// How many times a chunk was counted into or out of a focus's wanted or kept square since
    /// the planner was made: a deterministic measure of what [`Residency::set_foci`] costs.
    pub fn recounted(&self) -> u64 {
        self.recounted
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The ground bounds.
    pub fn bounds(&self) -> Option<&Bounds> {
        self.bounds.as_ref()
    }

    /// The first focus in force.
    pub fn focus(&self) -> Option<Position> {
        self.foci.first().map(|s| s.view.pos)
    }

    /// The foci in force, in order.
    pub fn foci(&self) -> impl ExactSizeIterator<Item = FocusView> + '_ {
        self.foci.iter().map(|s| s.view)
    }

    /// Whether `chunk` is loaded: one hashed lookup (every loaded chunk has an entry in `built`),
    /// not a search of the ordered set, as the strips a moving focus counts ask it of every
    /// chunk entering or leaving them.
    pub fn is_loaded(&self, chunk: ChunkPos) -> bool {
        let loaded = self.built.contains_key(&chunk);
        debug_assert_eq!(loaded, self.loaded.contains(&chunk));
        loaded
    }

    /// Loaded chunks in row order.
    pub fn loaded(&self) -> impl ExactSizeIterator<Item = ChunkPos> + '_ {
        self.loaded.iter().copied()
    }

    /// Held refusals in row order.
    pub fn refusals(&self) -> impl Iterator<Item = (ChunkPos, &Held)> {
        self.refusals.iter().map(|(c, h)| (*c, h))
    }

    /// How many chunks are pending.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// How many chunks the foci want (the union, inside the ground).
    pub fn wanted_len(&self) -> usize {
        self.union_len
    }

    /// Wanted chunks not held by a load refusal: what the resident cap is compared with.
    pub fn wanted_unrefused(&self) -> usize {
        self.union_len - self.load_refusals_wanted
    }

    /// Wanted chunks that are ready, and wanted chunks. With `neighbours` `k > 0`
    /// (docs/reference/streaming.md#readiness-with-neighbours) both read the foci's mesh
    /// squares (each focus's radius less `k`): the complete chunks of their union, and its size.
    pub fn progress(&self) -> (usize, usize) {
        if self.neighbours() == 0 {
            return (self.ready, self.union_len);
        }
        if let Some(counted) = self.mesh_progress.get() {
            return counted;
        }
        let counted = self.count_mesh_progress();
        self.mesh_progress.set(Some(counted));
        counted
    }

    /// [`Residency::progress`] with `k > 0`: the union of the mesh squares counted from the
    /// squares themselves (one focus, the common case, needs no merge). Costs the mesh area on
    /// the ticks after a focus's square changed only; a chunk completing or losing it moves the
    /// count kept since (`mesh_progress_flip`).
    fn count_mesh_progress(&self) -> (usize, usize) {
        let k = self.neighbours();
        let area = |slot: &Slot| self.footprint(slot.centre, slot.view.radius, k);
        if let [slot] = &self.foci[..] {
            let (mut complete, mut wanted) = (0, 0);
            for c in self.inside(area(slot)) {
                wanted += 1;
                complete += usize::from(self.is_complete(c));
            }
            return (complete, wanted);
        }
        let union: BTreeSet<ChunkPos> = self
            .foci
            .iter()
            .flat_map(|slot| self.inside(area(slot)))
            .collect();
        let complete = union.iter().filter(|c| self.is_complete(**c)).count();
        (complete, union.len())
    }

    /// The mesh squares moved (`changed`: id, old slot, new slot, for each focus whose square
    /// changed; `old_n` foci before). One focus moved stays one focus: the counted progress
    /// follows the strips its mesh footprint gained and lost, as the readiness count does
    /// (a drive crossing a chunk border costs a strip, not the mesh area). Anything else is
    /// counted afresh when next asked.
    pub(super) fn mesh_progress_moved(
        &self,
        old_n: usize,
        changed: &[(u32, Option<Slot>, Option<Slot>)],
    ) {
        let counted = self.mesh_progress.take();
        let (Some((mut done, mut wanted)), 1, [(_, Some(old), Some(new))]) =
            (counted, old_n, changed)
        else {
            return;
        };
        if self.foci.len() != 1 {
            return;
        }
        let k = self.neighbours();
        let (was, now) = (
            self.footprint(old.centre, old.view.radius, k),
            self.footprint(new.centre, new.view.radius, k),
        );
        let bounds = self.bounds;
        now.for_each_outside(Some(was), |c| {
            if self.grid.overlaps(c, bounds.as_ref()) {
                wanted += 1;
                done += usize::from(self.is_complete(c));
            }
        });
        was.for_each_outside(Some(now), |c| {
            if self.grid.overlaps(c, bounds.as_ref()) {
                wanted -= 1;
                done -= usize::from(self.is_complete(c));
            }
        });
        self.mesh_progress.set(Some((done, wanted)));
    }

    /// Unload refusals `by` holds.
    pub fn unload_refusals_of(&self, by: &str) -> usize {
        self.unload_refusals_by.get(by).copied().unwrap_or(0)
    }

    /// Whether some focus wants `chunk`.
    pub fn is_wanted(&self, chunk: ChunkPos) -> bool {
        self.cover
            .get(&chunk)
            .is_some_and(|c| !c.wanted_by.is_empty())
    }

    /// The last tick `chunk` was wanted, for a loaded chunk (the last resolution's tick while it
    /// is wanted; 0 when never recorded).
    pub fn last_wanted(&self, chunk: ChunkPos) -> u64 {
        if self.is_wanted(chunk) {
            self.resolved_at
        } else {
            self.last_wanted.get(&chunk).copied().unwrap_or(0)
        }
    }

    /// The footprints' form in force.
    pub fn form(&self) -> Form {
        self.form
    }

    /// Sets the footprints' form (a change of `shape` or `vertical`): every focus's footprint
    /// is counted again (rare: a layer, a mod or a save changed the setting), so the chunks
    /// the new footprints do not keep are due for release at the next resolution.
    pub fn set_form(&mut self, form: Form) {
        if form == self.form {
            return;
        }
        let foci: Vec<FocusView> = self.foci().collect();
        self.set_foci(&[]);
        self.form = form;
        self.readiness_epoch += 1;
        self.rebuild_columns();
        self.set_foci(&foci);
        self.mesh_progress.set(None);
        self.recount_complete();
    }

    /// The section height with vertical sections on.
    fn height(&self) -> Option<f64> {
        self.form.vertical.map(|(_, h)| h)
    }

    /// The chunk of `pos`: with vertical sections the section (`y` from `pos.y`), else the
    /// chunk `(x, z)` (docs/reference/grid.md).
    pub fn chunk_of(&self, pos: Position) -> ChunkPos {
        match self.height() {
            Some(h) => section_of(&self.grid, pos, h),
            None => self.grid.chunk_of(pos),
        }
    }

    /// The centre of a focus at `pos`.
    fn centre_of(&self, pos: Position) -> ChunkPos {
        self.chunk_of(pos)
    }

    /// The footprint of radius `radius` less `less` rings (and rows) around `centre` (a disc's
    /// skin of rings less them too).
    fn footprint(&self, centre: ChunkPos, radius: u32, less: u32) -> Rect {
        Rect::around(
            centre,
            radius.saturating_sub(less),
            self.form.disc,
            self.form.rows().saturating_sub(less),
        )
        .padded(self.form.ring.saturating_sub(less))
    }

    /// The chunks of a footprint inside the ground, row order.
    fn inside(&self, area: Rect) -> impl Iterator<Item = ChunkPos> + '_ {
        let bounds = self.bounds;
        area.chunks()
            .filter(move |c| self.grid.overlaps(*c, bounds.as_ref()))
    }

    /// The footprint of radius `radius` around `pos` under `form` (which may differ from the
    /// form in force, e.g. the settings of the next tick), inside the ground, nearest-first
    /// (distance, then z, x, y).
    pub fn around(&self, pos: Position, radius: u32, form: Form) -> Vec<ChunkPos> {
        let height = form.vertical.map(|(_, h)| h);
        let centre = match height {
            Some(h) => section_of(&self.grid, pos, h),
            None => self.grid.chunk_of(pos),
        };
        let area = Rect::around(centre, radius, form.disc, form.rows()).padded(form.ring);
        let mut chunks: Vec<ChunkPos> = area
            .chunks()
            .filter(|c| self.grid.overlaps(*c, self.bounds.as_ref()))
            .collect();
        chunks.sort_by_cached_key(|c| (distance(&self.grid, height, pos, *c).to_bits(), Tie(*c)));
        chunks
    }

    /// How many chunks [`Residency::around`] gives at most for `radius` under `form` (the
    /// footprint before the ground clips it), worked out without listing them.
    pub fn footprint_len(&self, radius: u32, form: Form) -> usize {
        Rect::around(ChunkPos::new(0, 0), radius, form.disc, form.rows())
            .padded(form.ring)
            .len()
    }

    /// The chunks a focus wants (within the ground), in row order: with vertical sections its
    /// rows too, with `disc` its disc.
    pub fn wanted_of(&self, view: FocusView) -> Vec<ChunkPos> {
        let area = self.footprint(self.centre_of(view.pos), view.radius, 0);
        self.inside(area).collect()
    }

    /// The focus in force of id `id`.
    fn slot(&self, id: u32) -> &Slot {
        &self.foci[self.place[id as usize] as usize]
    }

    /// How many foci keep `c` (ring `<= r + 1`).
    fn keep_count(&self, c: ChunkPos) -> u32 {
        self.cover.get(&c).map_or(0, |c| c.keep)
    }

    /// The nearest-first key of a wanted chunk: the least squared distance from a focus that
    /// wants it to its centre (docs/reference/streaming.md#the-nearest-first-key; with vertical
    /// sections the 3-D distance to the section's centre); `+inf` for a chunk no focus wants.
    fn key(&self, c: ChunkPos) -> f64 {
        let height = self.height();
        if let [only] = self.foci.as_slice() {
            return distance(&self.grid, height, only.view.pos, c);
        }
        let Some(cover) = self.cover.get(&c) else {
            return f64::INFINITY;
        };
        cover
            .wanted_by
            .iter()
            .map(|&id| distance(&self.grid, height, self.slot(id).view.pos, c))
            .min_by(f64::total_cmp)
            .unwrap_or(f64::INFINITY)
    }

    /// A wanted chunk's priority: the highest of the foci that want it
    /// (docs/reference/streaming.md#priorities).
    fn priority(&self, c: ChunkPos) -> u8 {
        match self.cover.get(&c) {
            Some(cover) if !cover.wanted_by.is_empty() => cover.prio,
            _ => 0,
        }
    }

    /// The order of `"nearest"` (docs/reference/streaming.md#the-nearest-schedule): priority
    /// descending, then the key (docs/reference/streaming.md#the-nearest-first-key), z, x. With
    /// every priority 0 it is the order (docs/reference/streaming.md#the-nearest-first-key)
    /// exactly.
    fn order(&self, c: ChunkPos) -> Entry {
        (u8::MAX - self.priority(c), self.key(c).to_bits(), Tie(c))
    }

    /// Step 1 of a tick, after the foci are set: records the tick, applies the refusal drop
    /// rules to the chunks whose counts crossed zero, and appends to `releases` (in row order)
    /// the loaded chunks no focus keeps that hold no refusal. With no focus nothing is released
    /// (those chunks wait for a focus) and load refusals lapse.
    pub fn resolve(&mut self, tick: u64, releases: &mut Vec<ChunkPos>) {
        self.resolved_at = tick;
        if self.recheck.is_empty() {
            return;
        }
        let mut waiting = Vec::new();
        while let Some(c) = self.recheck.pop_first() {
            let (wanted, kept) = (self.is_wanted(c), self.keep_count(c) > 0);
            match self.refusal_kind(c) {
                Some(RefusalKind::Load) if !wanted => {
                    self.drop_refusal(c);
                }
                Some(RefusalKind::Unload) if kept => {
                    self.drop_refusal(c);
                }
                _ => {}
            }
            if self.is_loaded(c) && !kept && !self.refusals.contains_key(&c) {
                if self.foci.is_empty() {
                    waiting.push(c);
                } else {
                    releases.push(c);
                }
            }
        }
        self.recheck.extend(waiting);
    }

    /// Records that `chunk` loaded.
    pub fn mark_loaded(&mut self, chunk: ChunkPos) {
        if !self.loaded.insert(chunk) {
            return;
        }
        let bits = self.column_loaded(chunk);
        self.built.insert(chunk, bits);
        self.complete_loaded(chunk);
        self.touched(chunk, true);
        self.unpend(chunk);
        if self.is_wanted(chunk) {
            if self.chunk_ready(chunk) {
                self.ready += 1;
            }
        } else {
            self.last_wanted.insert(chunk, self.resolved_at);
            self.evictable_push(self.resolved_at, chunk);
        }
    }

    /// Records that `chunk` was released: it forgets its last-wanted tick and what was built.
    pub fn mark_released(&mut self, chunk: ChunkPos) {
        if !self.is_loaded(chunk) {
            return;
        }
        let was_ready = self.is_wanted(chunk) && self.chunk_ready(chunk);
        self.complete_releasing(chunk);
        self.loaded.remove(&chunk);
        self.built.remove(&chunk);
        self.column_released(chunk);
        self.touched(chunk, false);
        if was_ready {
            self.ready -= 1;
        }
        // Its entry in the eviction order, if any, is stale from here on.
        self.last_wanted.remove(&chunk);
        if self.is_wanted(chunk) && !self.refusals.contains_key(&chunk) {
            self.pend(chunk);
        }
    }

    /// The next eviction candidate not in `asked`: a loaded chunk outside the union holding no
    /// refusal, least recently wanted first (ties in row order): the first current entry of the
    /// eviction order ([`Evictable`]) not in `asked`; stale entries met at the front are dropped.
    pub fn eviction_candidate(&mut self, asked: &BTreeSet<ChunkPos>) -> Option<ChunkPos> {
        let current = current_in(&self.last_wanted, &self.refusals);
        self.evictable.candidate(current, asked)
    }

    /// `chunk` became an eviction candidate, last wanted at `tick`.
    fn evictable_push(&mut self, tick: u64, chunk: ChunkPos) {
        let current = current_in(&self.last_wanted, &self.refusals);
        self.evictable.push((tick, chunk), current);
    }

    /// Forgets everything (leaving a scene): returns the chunks that were loaded, in row order.
    /// Builders stay registered.
    pub fn clear(&mut self) -> Vec<ChunkPos> {
        let released = std::mem::take(&mut self.loaded).into_iter().collect();
        let (grid, bounds, builders) = (self.grid, self.bounds, self.builders);
        let (mut log, on) = (std::mem::take(&mut self.ready_log), self.ready_log_on);
        let (k, form) = (self.complete.k, self.form);
        *self = Residency::new(grid, bounds);
        self.form = form;
        self.builders = builders;
        self.complete.k = k;
        log.clear();
        (self.ready_log, self.ready_log_on) = (log, on);
        released
    }

    /// Replaces the whole state (loading a save): the loaded chunks, refusals, foci in force,
    /// last-wanted ticks and the tick of the last resolution. Every loaded or refused chunk is
    /// rechecked at the next resolution.
    pub fn restore(
        &mut self,
        loaded: BTreeSet<ChunkPos>,
        refusals: BTreeMap<ChunkPos, Held>,
        foci: &[FocusView],
        last_wanted: BTreeMap<ChunkPos, u64>,
        tick: u64,
    ) {
        self.clear();
        self.resolved_at = tick;
        for h in refusals.values() {
            if h.kind == RefusalKind::Unload {
                *self.unload_refusals_by.entry(h.by.clone()).or_default() += 1;
            }
        }
        self.recheck.extend(loaded.iter().copied());
        self.recheck.extend(refusals.keys().copied());
        self.refusals = refusals;
        for c in &loaded {
            let lw = last_wanted.get(c).copied().unwrap_or(0);
            self.last_wanted.insert(*c, lw);
            if !self.refusals.contains_key(c) {
                self.evictable_push(lw, *c);
            }
        }
        self.built = loaded.iter().map(|c| (*c, 0)).collect();
        if self.form.vertical.is_some() {
            for c in &loaded {
                let col = self.columns_built.entry(c.column()).or_default();
                col.1.push(c.y);
            }
        }
        self.loaded = loaded;
        // Every loaded chunk starts outside the union (an eviction candidate at its saved
        // last-wanted tick); counting the foci moves the wanted ones in.
        self.set_foci(foci);
        self.recount_complete();
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    /// A chunk released while still wanted (the resident cap's eviction, a service's
    /// `release`) is pending again, to load again nearest-first; an unwanted one is not
    /// (cargo-mutants: the `!` before the refusal test deleted was missed).
    #[test]
    fn a_chunk_released_while_wanted_is_pending_again() {
        let mut r = res();
        fill(&mut r, Position::new(10.0, 10.0), 1);
        assert_eq!(r.pending_len(), 0);
        let c = ChunkPos::new(1, 0);
        r.mark_released(c);
        assert_eq!(r.pending(), [c]);
        assert!(!r.is_loaded(c));
        r.set_foci(&[FocusView::new(Position::new(10_000.0, 10.0), 1)]);
        let far = ChunkPos::new(0, 1);
        r.mark_released(far);
        assert!(!r.pending().contains(&far), "no longer wanted");
    }

    /// A restore counts each mod's unload refusals, and only those (cargo-mutants: the kind's
    /// test made `!=` was missed).
    #[test]
    fn a_restore_counts_each_mods_unload_refusals_only() {
        let mut r = res();
        let held = |kind, by: &str| Held {
            kind,
            by: by.into(),
            reason: "saved".into(),
        };
        let (a, b, c) = (
            ChunkPos::new(0, 0),
            ChunkPos::new(5, 5),
            ChunkPos::new(1, 0),
        );
        let refusals = BTreeMap::from([
            (a, held(RefusalKind::Unload, "keeper")),
            (b, held(RefusalKind::Load, "blocker")),
            (c, held(RefusalKind::Unload, "keeper")),
        ]);
        let loaded = BTreeSet::from([a, c]);
        let foci = [FocusView::new(Position::new(10.0, 10.0), 1)];
        r.restore(loaded, refusals, &foci, BTreeMap::new(), 7);
        assert_eq!(r.unload_refusals_of("keeper"), 2);
        assert_eq!(r.unload_refusals_of("blocker"), 0);
    }

    /// After a restore, the loaded chunks no focus wants are eviction candidates in the order
    /// of their saved last-wanted ticks, and a chunk holding an unload refusal never is
    /// (cargo-mutants: the refusal test's `!` deleted was missed).
    #[test]
    fn a_restore_orders_eviction_by_last_wanted_and_leaves_refused_chunks_out() {
        let mut r = res();
        let (a, b, c) = (
            ChunkPos::new(0, 0),
            ChunkPos::new(1, 0),
            ChunkPos::new(2, 0),
        );
        let refusals = BTreeMap::from([(
            b,
            Held {
                kind: RefusalKind::Unload,
                by: "keeper".into(),
                reason: "saved".into(),
            },
        )]);
        let last_wanted = BTreeMap::from([(a, 5), (b, 1), (c, 3)]);
        let far = [FocusView::new(Position::new(10_000.0, 10.0), 1)];
        r.restore(BTreeSet::from([a, b, c]), refusals, &far, last_wanted, 9);
        assert_eq!(r.eviction_candidate(&BTreeSet::new()), Some(c));
        assert_eq!(r.eviction_candidate(&BTreeSet::from([c])), Some(a));
        assert_eq!(r.eviction_candidate(&BTreeSet::from([a, c])), None);
        assert_eq!((r.last_wanted(a), r.last_wanted(b)), (5, 1));
    }

    #[test]
    fn releases_only_beyond_radius_plus_one_in_row_order() {
        let mut r = res();
        fill(&mut r, Position::new(8.0, 8.0), 1);
        let mut out = Vec::new();
        // One chunk east: the west column is at ring 2 = radius + 1, kept.
        r.update_view(Some(Position::new(40.0, 8.0)), 1, &mut out);
        assert!(out.is_empty());
        // Two chunks east: the west column is at ring 3.
        r.update_view(Some(Position::new(72.0, 8.0)), 1, &mut out);
        assert_eq!(
            out,
            [
                ChunkPos::new(-1, -1),
                ChunkPos::new(-1, 0),
                ChunkPos::new(-1, 1)
            ]
        );
    }

    #[test]
    fn eviction_candidates_are_ordered_by_last_wanted_then_row_order() {
        let mut r = res();
        // Focus at chunk (1,0) on tick 1, (0,0) on tick 2, (0,1) on tick 3, radius 0.
        for (tick, x, z) in [(1, 48.0, 16.0), (2, 16.0, 16.0), (3, 16.0, 48.0)] {
            let mut out = Vec::new();
            r.set_foci(&[FocusView::new(Position::new(x, z), 0)]);
            r.resolve(tick, &mut out);
            let mut batch = Vec::new();
            r.take_nearest(1, &mut batch);
            batch.into_iter().for_each(|c| r.mark_loaded(c));
        }
        assert_eq!(r.last_wanted(ChunkPos::new(1, 0)), 1);
        assert_eq!(r.last_wanted(ChunkPos::new(0, 0)), 2);
        assert_eq!(r.last_wanted(ChunkPos::new(0, 1)), 3, "wanted now");
        let none = BTreeSet::new();
        assert_eq!(r.eviction_candidate(&none), Some(ChunkPos::new(1, 0)));
        let asked = BTreeSet::from([ChunkPos::new(1, 0)]);
        assert_eq!(
            r.eviction_candidate(&asked),
            Some(ChunkPos::new(0, 0)),
            "asked: the next"
        );
        r.hold(ChunkPos::new(1, 0), refusal(RefusalKind::Unload));
        assert_eq!(
            r.eviction_candidate(&none),
            Some(ChunkPos::new(0, 0)),
            "refused: the next"
        );
        r.mark_released(ChunkPos::new(0, 0));
        assert_eq!(r.eviction_candidate(&none), None);
    }

    /// `footprint_len` (what a Lua `around()` is charged before it is gathered) is exactly the
    /// length of `around()` without a ground, for squares, discs, rows and a disc's rings.
    #[test]
    fn the_footprint_s_length_is_what_around_gives() {
        let r = res();
        for disc in [false, true] {
            for vertical in [None, Some((2, 32.0))] {
                for ring in [0, 1, 2] {
                    let form = Form {
                        disc,
                        vertical,
                        ring: if disc { ring } else { 0 },
                    };
                    for radius in ring..6 {
                        let got = r.around(Position::new(40.0, -70.0), radius, form).len();
                        assert_eq!(r.footprint_len(radius, form), got, "{form:?} r {radius}");
                    }
                }
            }
        }
    }

    /// The eviction order kept as a log (stale entries skipped, compacted, sorted when a push
    /// broke the order) gives exactly the plain order, every loaded chunk outside the union
    /// holding no refusal by (last wanted, row order), through a random walk of two foci with
    /// loads, releases, chunks loaded after they left the union, unload refusals held and
    /// dropped (pushes of old ticks, out of order), a handler's refusals and releases between
    /// the asks, and restores; and the entries kept stay within twice the most chunks ever
    /// loaded.
    #[test]
    fn the_eviction_log_gives_the_plain_order_whatever_happened() {
        let mut seed = 7u64;
        let mut r = res();
        let (mut most, mut asks, mut out_of_order) = (0, 0, 0);
        let (mut last_refused, mut interleaved) = (None, 0);
        for tick in 1..=400u64 {
            let mut pick = |n: u64| next(&mut seed) % n;
            let at = |v: u64| (v as f64) * 32.0 + 16.0;
            let foci = [
                FocusView::new(Position::new(at(pick(6)), at(pick(6))), pick(3) as u32),
                FocusView::new(Position::new(at(pick(6)), at(pick(6))), 1),
            ];
            r.set_foci(&foci[..1 + pick(2) as usize]);
            let mut releases = Vec::new();
            r.resolve(tick, &mut releases);
            for c in releases {
                if pick(4) == 0 {
                    r.hold(c, refusal(RefusalKind::Unload));
                } else {
                    r.mark_released(c);
                }
            }
            let mut taken = Vec::new();
            r.take_nearest(pick(6) as usize, &mut taken);
            if pick(3) == 0 {
                // The foci move on before the loads land: loaded outside the union.
                r.set_foci(&foci[1..]);
            }
            taken.into_iter().for_each(|c| r.mark_loaded(c));
            let held: Vec<ChunkPos> = r.refusals().map(|(c, _)| c).collect();
            for c in held {
                if pick(3) == 0 {
                    out_of_order += usize::from(r.is_loaded(c) && !r.is_wanted(c));
                    r.release_refusal(c);
                }
            }
            if tick % 97 == 0 {
                let loaded: BTreeSet<ChunkPos> = r.loaded().collect();
                let lw = loaded.iter().map(|&c| (c, r.last_wanted(c))).collect();
                let refusals = r.refusals().map(|(c, h)| (c, h.clone())).collect();
                let foci: Vec<FocusView> = r.foci().collect();
                r.restore(loaded, refusals, &foci, lw, tick);
            }
            most = most.max(r.loaded().len());
            let kept = r.evictable.log.len() + r.evictable.late.len();
            assert!(kept <= 2 * most + 64, "tick {tick}");
            if tick % 5 == 0 {
                // A mod's unload handler refusing each eviction asked for and releasing its
                // last refusal (an old tick pushed again, out of order) between the asks.
                for _ in 0..3 {
                    let plain_first = r
                        .loaded()
                        .filter(|&c| !r.is_wanted(c) && r.refusal_kind(c).is_none())
                        .map(|c| (r.last_wanted(c), c))
                        .min()
                        .map(|(_, c)| c);
                    let Some(c) = r.eviction_candidate(&BTreeSet::new()) else {
                        assert_eq!(plain_first, None);
                        break;
                    };
                    assert_eq!(Some(c), plain_first, "tick {tick}");
                    r.hold(c, refusal(RefusalKind::Unload));
                    if let Some(prev) = last_refused.replace(c) {
                        interleaved += usize::from(r.release_refusal(prev));
                    }
                }
            }
            if tick % 20 != 0 {
                continue; // pushes pile up between the asks: compacted as they go
            }
            let mut plain: Vec<(u64, ChunkPos)> = r
                .loaded()
                .filter(|&c| !r.is_wanted(c) && r.refusal_kind(c).is_none())
                .map(|c| (r.last_wanted(c), c))
                .collect();
            plain.sort();
            let mut asked = BTreeSet::new();
            let mut got = Vec::new();
            while let Some(c) = r.eviction_candidate(&asked) {
                asked.insert(c);
                got.push((r.last_wanted(c), c));
            }
            assert_eq!(got, plain, "tick {tick}");
            asks += 1;
        }
        assert!(
            asks == 20 && out_of_order > 20 && interleaved > 20,
            "{asks} {out_of_order} {interleaved}"
        );
    }
}
