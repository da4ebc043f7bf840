//! The residency: the kit's record of which chunks are loaded, wanted, pending and refused, kept
//! up to date incrementally as foci move, and the queries each tick plans with (what is due for
//! release, what to load next, what to evict) around any number of foci (SPEC §3, §11). Stateful,
//! but plain data over [`Grid`] math with no host types, so it is unit-tested and benchmarked
//! alone; the kit resolves the foci, asks the hooks and applies the answers.
//!
//! Work is proportional to what changed. Each chunk near a focus carries two counts: how many
//! foci want it (ring `<= r`) and how many keep it (ring `<= r + 1`). When a focus moves to
//! another chunk only the strips between its old and new squares are counted, so a walker crossing
//! a chunk edge touches O(r) chunks whatever the number of other foci, and a focus that stays in
//! its chunk touches none. A chunk whose counts cross zero is put on a *recheck* list; the refusal
//! drop rules and the releases of the next tick look at that list only. Eviction candidates
//! (loaded, unwanted, unrefused) are kept ordered by (last wanted, row order), so the cap picks
//! one in O(log n) without scanning the loaded set.
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

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use indexmap::IndexSet;
use rustc_hash::{FxBuildHasher, FxHashMap};
use smallvec::SmallVec;

use crate::grid::{Bounds, ChunkPos, Grid, Position};
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
    /// Its priority (SPEC §16): 0 but for a ticket that asked for more.
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

/// An inclusive rectangle of chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rect {
    x0: i64,
    x1: i64,
    z0: i64,
    z1: i64,
}

impl Rect {
    fn around(c: ChunkPos, r: u32) -> Rect {
        let r = i64::from(r);
        Rect {
            x0: c.x - r,
            x1: c.x + r,
            z0: c.z - r,
            z1: c.z + r,
        }
    }

    /// Calls `f` on every chunk of `self` outside `other`, in row order: the strips a moved
    /// square gained or lost, not the whole square.
    fn for_each_outside(self, other: Option<Rect>, mut f: impl FnMut(ChunkPos)) {
        let inner = other.and_then(|o| {
            let i = Rect {
                x0: self.x0.max(o.x0),
                x1: self.x1.min(o.x1),
                z0: self.z0.max(o.z0),
                z1: self.z1.min(o.z1),
            };
            (i.x0 <= i.x1 && i.z0 <= i.z1).then_some(i)
        });
        for z in self.z0..=self.z1 {
            match inner {
                Some(i) if (i.z0..=i.z1).contains(&z) => {
                    (self.x0..i.x0).for_each(|x| f(ChunkPos::new(x, z)));
                    (i.x1 + 1..=self.x1).for_each(|x| f(ChunkPos::new(x, z)));
                }
                _ => (self.x0..=self.x1).for_each(|x| f(ChunkPos::new(x, z))),
            }
        }
    }
}

/// A focus in force: its view and its chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Slot {
    view: FocusView,
    centre: ChunkPos,
}

impl Slot {
    fn want(&self) -> Rect {
        Rect::around(self.centre, self.view.radius)
    }
    fn keep(&self) -> Rect {
        Rect::around(self.centre, self.view.radius + 1)
    }
}

/// The place of an id that is not in use.
const FREE: u32 = u32::MAX;

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

/// A pending chunk as a focus's queue orders it: `u8::MAX - priority` (so the highest priority
/// comes first), the squared distance from the focus's position as bits (non-negative, so the
/// bits order as the numbers), the chunk (z, x).
type Entry = (u8, u64, ChunkPos);

/// A focus's queue: a min-heap of [`Entry`], which may hold entries that are no longer true
/// (the chunk is not pending, or its priority changed): they are skipped when popped.
type Queue = BinaryHeap<Reverse<Entry>>;

/// A queue holding more than this many entries per chunk of its focus's square (plus a little)
/// is dropped and built again when next needed, so stale entries cannot pile up.
const QUEUE_SLACK: usize = 2;

/// The entry of chunk `c` of priority `prio` in the queue of a focus at `pos`.
fn entry(grid: &Grid, pos: Position, c: ChunkPos, prio: u8) -> Entry {
    (u8::MAX - prio, grid.distance_sq(pos, c).to_bits(), c)
}

/// Loaded chunks, pending chunks, held refusals and eviction candidates around the foci.
#[derive(Debug, Clone)]
pub struct Residency {
    grid: Grid,
    bounds: Option<Bounds>,
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
    /// The last tick each loaded chunk outside the union was wanted (absent: 0).
    last_wanted: FxHashMap<ChunkPos, u64>,
    /// Loaded chunks outside the union holding no refusal, by (last wanted, row order).
    evictable: BTreeSet<(u64, ChunkPos)>,
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
    /// (SPEC §17's hole count follows them rather than recounting), kept only once
    /// [`Residency::track_readiness`] was called; past [`READY_LOG_MAX`] entries, or after a
    /// change of every chunk at once, `ready_log_lost` says the log is not the whole story.
    /// Each entry says whether that change can only have made the chunk ready (a load, a
    /// build, a refusal held) rather than unready.
    ready_log: Vec<(ChunkPos, bool)>,
    ready_log_on: bool,
    ready_log_lost: bool,
}

/// The most chunks [`Residency`]'s readiness log holds before it gives up (a full recount).
pub const READY_LOG_MAX: usize = 1 << 16;

impl Residency {
    /// Nothing loaded, no focus.
    pub fn new(grid: Grid, bounds: Option<Bounds>) -> Self {
        Residency {
            grid,
            bounds,
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
            evictable: BTreeSet::new(),
            recheck: BTreeSet::new(),
            resolved_at: 0,
            ready: 0,
            builders: 0,
            built: FxHashMap::default(),
            ready_log: Vec::new(),
            ready_log_on: false,
            ready_log_lost: true,
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

    /// Records from now on which chunks' readiness may change (for SPEC §17's hole count).
    pub fn track_readiness(&mut self) {
        if !self.ready_log_on {
            self.ready_log_on = true;
            self.ready_log_lost = true;
        }
    }

    /// Swaps the readiness log with `buf` (cleared first, so capacities are reused and a
    /// steady tick allocates nothing): `buf` then holds the chunks whose readiness may have
    /// changed since the last swap, each with whether that change can only have made it ready.
    /// Returns whether that list is complete (false after an overflow, a new builder, a clear
    /// or a restore: recount everything).
    pub fn swap_ready_log(&mut self, buf: &mut Vec<(ChunkPos, bool)>) -> bool {
        buf.clear();
        std::mem::swap(buf, &mut self.ready_log);
        !std::mem::replace(&mut self.ready_log_lost, false)
    }

    /// `c`'s readiness may have changed (`gained`: it can only have become ready).
    fn touched(&mut self, c: ChunkPos, gained: bool) {
        if self.ready_log_on && !self.ready_log_lost {
            if self.ready_log.len() < READY_LOG_MAX {
                self.ready_log.push((c, gained));
            } else {
                self.ready_log.clear();
                self.ready_log_lost = true;
            }
        }
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

    /// Whether `chunk` is loaded.
    pub fn is_loaded(&self, chunk: ChunkPos) -> bool {
        self.loaded.contains(&chunk)
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

    /// Wanted chunks that are ready, and wanted chunks.
    pub fn progress(&self) -> (usize, usize) {
        (self.ready, self.union_len)
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

    /// The focus in force of id `id`.
    fn slot(&self, id: u32) -> &Slot {
        &self.foci[self.place[id as usize] as usize]
    }

    /// How many foci keep `c` (ring `<= r + 1`).
    fn keep_count(&self, c: ChunkPos) -> u32 {
        self.cover.get(&c).map_or(0, |c| c.keep)
    }

    /// The nearest-first key of a wanted chunk: the least squared distance from a focus that
    /// wants it to its centre (SPEC §11); `+inf` for a chunk no focus wants.
    fn key(&self, c: ChunkPos) -> f64 {
        if let [only] = self.foci.as_slice() {
            return self.grid.distance_sq(only.view.pos, c);
        }
        let Some(cover) = self.cover.get(&c) else {
            return f64::INFINITY;
        };
        cover
            .wanted_by
            .iter()
            .map(|&id| self.grid.distance_sq(self.slot(id).view.pos, c))
            .min_by(f64::total_cmp)
            .unwrap_or(f64::INFINITY)
    }

    /// A wanted chunk's priority: the highest of the foci that want it (SPEC §16).
    fn priority(&self, c: ChunkPos) -> u8 {
        match self.cover.get(&c) {
            Some(cover) if !cover.wanted_by.is_empty() => cover.prio,
            _ => 0,
        }
    }

    /// The order of `"nearest"` (SPEC §16): priority descending, then §11's key, z, x. With
    /// every priority 0 it is §11's order exactly.
    fn order(&self, c: ChunkPos) -> (u8, u64, ChunkPos) {
        (u8::MAX - self.priority(c), self.key(c).to_bits(), c)
    }

    /// Pending chunks, priority descending then nearest-first.
    pub fn pending(&self) -> Vec<ChunkPos> {
        let mut v: Vec<ChunkPos> = self.pending.iter().copied().collect();
        v.sort_by_cached_key(|c| self.order(*c));
        v
    }

    /// Moves focus `i` to `pos` when that keeps it in its chunk (nothing to recount); returns
    /// whether it did.
    pub fn move_focus(&mut self, i: usize, pos: Position) -> bool {
        let centre = self.grid.chunk_of(pos);
        match self.foci.get_mut(i) {
            Some(slot) if slot.centre == centre => {
                if slot.view.pos != pos {
                    slot.view.pos = pos;
                    self.queues[self.ids[i] as usize] = None; // its distances changed
                }
                true
            }
            _ => false,
        }
    }

    /// Replaces the foci in force. Only the squares that changed are counted again: each new
    /// focus continues an old one (keeping its id and the chunks counted for it), the one at
    /// its place if their squares are the same (a focus that stays in its chunk with the same
    /// radius and priority costs a comparison), else one of the same square elsewhere in the
    /// order (foci that came or went before it moved it), else any old focus left over (only the
    /// strips between the two squares are counted; all of it when the priority changed, as the
    /// priorities of its chunks may change). Chunks that leave the union get the last
    /// resolution's tick as their last-wanted tick. A focus whose position changed at all loses
    /// its queue.
    pub fn set_foci(&mut self, foci: &[FocusView]) {
        let new: Vec<Slot> = foci
            .iter()
            .map(|v| Slot {
                view: *v,
                centre: self.grid.chunk_of(v.pos),
            })
            .collect();
        let square = |s: &Slot| (s.centre, s.view.radius, s.view.priority);
        let old_n = self.foci.len();
        // Which old focus (by place) each new one continues.
        let mut from: Vec<Option<usize>> = vec![None; new.len()];
        let mut used = vec![false; old_n];
        for (i, n) in new.iter().enumerate().take(old_n) {
            if square(&self.foci[i]) == square(n) {
                (from[i], used[i]) = (Some(i), true);
            }
        }
        if from.iter().any(Option::is_none) || used.iter().any(|u| !u) {
            let mut same: BTreeMap<(ChunkPos, u32, u8), std::collections::VecDeque<usize>> =
                BTreeMap::new();
            for j in (0..old_n).filter(|j| !used[*j]) {
                same.entry(square(&self.foci[j])).or_default().push_back(j);
            }
            for (i, n) in new.iter().enumerate() {
                if from[i].is_none() {
                    if let Some(j) = same.get_mut(&square(n)).and_then(|q| q.pop_front()) {
                        (from[i], used[j]) = (Some(j), true);
                    }
                }
            }
            let mut rest = (0..old_n)
                .filter(|j| !used[*j])
                .collect::<Vec<_>>()
                .into_iter();
            for f in from.iter_mut().filter(|f| f.is_none()) {
                match rest.next() {
                    Some(j) => (*f, used[j]) = (Some(j), true),
                    None => break,
                }
            }
        }
        // The ids, and what changed for each: (id, old slot, new slot).
        let mut changed: Vec<(u32, Option<Slot>, Option<Slot>)> = Vec::new();
        let mut ids = Vec::with_capacity(new.len());
        for (n, from) in new.iter().zip(&from) {
            let (id, old) = match from {
                Some(j) => (self.ids[*j], Some(self.foci[*j])),
                None => (self.new_id(), None),
            };
            if old.map(|o| o.view) != Some(n.view) {
                self.queues[id as usize] = None;
            }
            if old.as_ref().map(square) != Some(square(n)) {
                changed.push((id, old, Some(*n)));
            }
            ids.push(id);
        }
        let mut freed = Vec::new();
        for j in (0..old_n).filter(|j| !used[*j]) {
            let id = self.ids[j];
            self.queues[id as usize] = None;
            changed.push((id, Some(self.foci[j]), None));
            freed.push(id);
        }
        for &id in &self.ids {
            self.place[id as usize] = FREE;
        }
        for (i, &id) in ids.iter().enumerate() {
            self.place[id as usize] = i as u32;
        }
        self.foci = new;
        self.ids = ids;
        // The part of an old square still counted: all of it, unless the priority changed.
        let kept_want = |a: &Option<Slot>, b: &Option<Slot>| match (a, b) {
            (Some(a), Some(b)) if a.view.priority == b.view.priority => Some(b.want()),
            _ => None,
        };
        // Every gain before any loss, so a chunk crosses zero at most once per call.
        for (id, old, new) in &changed {
            if let Some(n) = new {
                n.want()
                    .for_each_outside(kept_want(new, old), |c| self.count(c, Some(*id)));
                n.keep()
                    .for_each_outside(old.map(|o| o.keep()), |c| self.count(c, None));
            }
        }
        for (id, old, new) in &changed {
            if let Some(o) = old {
                o.want()
                    .for_each_outside(kept_want(old, new), |c| self.uncount(c, Some(*id)));
                o.keep()
                    .for_each_outside(new.map(|n| n.keep()), |c| self.uncount(c, None));
            }
        }
        for id in freed {
            debug_assert_eq!(self.pending_in[id as usize], 0);
            self.free_ids.push(id);
        }
    }

    /// An id not in use (its count 0, no queue), placed nowhere yet.
    fn new_id(&mut self) -> u32 {
        self.free_ids.pop().unwrap_or_else(|| {
            self.place.push(FREE);
            self.pending_in.push(0);
            self.queues.push(None);
            (self.place.len() - 1) as u32
        })
    }

    /// Focus `wanted_by` now wants `c`, or (with `None`) one more focus keeps it.
    fn count(&mut self, c: ChunkPos, wanted_by: Option<u32>) {
        self.recounted += 1;
        if !self.grid.overlaps(c, self.bounds.as_ref()) {
            return;
        }
        let p = wanted_by.map_or(0, |id| self.slot(id).view.priority);
        let cover = self.cover.entry(c).or_default();
        let (entered, kept, raised) = match wanted_by {
            Some(i) => {
                cover.wanted_by.push(i);
                let entered = cover.wanted_by.len() == 1;
                let raised = !entered && p > cover.prio;
                if entered || raised {
                    cover.prio = p;
                }
                (entered, false, raised)
            }
            None => {
                cover.keep += 1;
                (false, cover.keep == 1, false)
            }
        };
        if entered {
            self.enter(c);
        } else if let Some(i) = wanted_by {
            if self.pending.contains(&c) {
                self.pending_in[i as usize] += 1;
                // A higher priority: a new entry in every queue; else in the new focus's.
                self.queue_pending(c, (!raised).then_some(i));
            }
        }
        if kept && matches!(self.refusal_kind(c), Some(RefusalKind::Unload)) {
            self.recheck.insert(c);
        }
    }

    /// The reverse of [`Residency::count`].
    fn uncount(&mut self, c: ChunkPos, wanted_by: Option<u32>) {
        self.recounted += 1;
        let Some(cover) = self.cover.get_mut(&c) else {
            return; // outside the ground: never counted
        };
        let (left, unkept, lowered) = match wanted_by {
            Some(i) => {
                if let Some(at) = cover.wanted_by.iter().position(|&w| w == i) {
                    cover.wanted_by.swap_remove(at);
                }
                // The highest priority of the foci left. Within `set_foci` an id may still be
                // listed for its old square (its loss comes later and counts again); one no
                // longer in use is such an id.
                let (foci, place) = (&self.foci, &self.place);
                let p = cover
                    .wanted_by
                    .iter()
                    .map(|&w| place[w as usize])
                    .filter(|&at| at != FREE)
                    .map(|at| foci[at as usize].view.priority)
                    .max();
                let lowered = p.is_some_and(|p| p != cover.prio);
                if let Some(p) = p {
                    cover.prio = p;
                }
                (cover.wanted_by.is_empty(), false, lowered)
            }
            None => {
                cover.keep -= 1;
                (false, cover.keep == 0, false)
            }
        };
        if let Some(i) = wanted_by {
            if self.pending.contains(&c) {
                self.unqueue_from(i as usize);
                if lowered {
                    self.queue_pending(c, None);
                }
            }
        }
        if self
            .cover
            .get(&c)
            .is_some_and(|cv| cv.wanted_by.is_empty() && cv.keep == 0)
        {
            self.cover.remove(&c);
        }
        if left {
            self.leave(c);
        }
        if unkept && self.loaded.contains(&c) {
            self.recheck.insert(c);
        }
    }

    fn refusal_kind(&self, c: ChunkPos) -> Option<RefusalKind> {
        self.refusals.get(&c).map(|h| h.kind)
    }

    /// Whether a wanted chunk counts as ready.
    fn chunk_ready(&self, c: ChunkPos) -> bool {
        match self.refusal_kind(c) {
            Some(RefusalKind::Load) => true,
            // Loaded, and built by every builder: one hashed lookup.
            _ => self.built.get(&c).is_some_and(|bits| self.all_built(*bits)),
        }
    }

    /// Whether a chunk is ready (SPEC §11): loaded and built by every builder, or held by a
    /// load refusal.
    pub fn is_ready(&self, c: ChunkPos) -> bool {
        self.chunk_ready(c)
    }

    fn built_by_all(&self, c: ChunkPos) -> bool {
        self.all_built(self.built.get(&c).copied().unwrap_or(0))
    }

    /// Whether `bits` hold every builder's bit (always, with no builder).
    fn all_built(&self, bits: u64) -> bool {
        let all = if self.builders >= 64 {
            u64::MAX
        } else {
            (1u64 << self.builders) - 1
        };
        bits & all == all
    }

    /// `c` joined the union.
    fn enter(&mut self, c: ChunkPos) {
        self.union_len += 1;
        if self.chunk_ready(c) {
            self.ready += 1;
        }
        match self.refusal_kind(c) {
            Some(RefusalKind::Load) => self.load_refusals_wanted += 1,
            Some(RefusalKind::Unload) => {}
            None if self.loaded.contains(&c) => {
                let lw = self.last_wanted.remove(&c).unwrap_or(0);
                self.evictable.remove(&(lw, c));
            }
            None => {
                self.pend(c);
            }
        }
        if self.loaded.contains(&c) {
            self.last_wanted.remove(&c);
        }
    }

    /// `c` (wanted, not loaded, not refused) becomes pending: counted in the foci that want it
    /// and pushed into their built queues.
    fn pend(&mut self, c: ChunkPos) {
        if !self.pending.insert(c) {
            return;
        }
        if let Some(cover) = self.cover.get(&c) {
            for &i in &cover.wanted_by {
                self.pending_in[i as usize] += 1;
            }
        }
        self.queue_pending(c, None);
    }

    /// `c` stops being pending (taken, loaded, refused, or no longer wanted); returns whether it
    /// was. Its queue entries stay behind, skipped when popped.
    fn unpend(&mut self, c: ChunkPos) -> bool {
        if !self.pending.swap_remove(&c) {
            return false;
        }
        let foci: SmallVec<[u32; 4]> = self
            .cover
            .get(&c)
            .map(|cover| cover.wanted_by.iter().copied().collect())
            .unwrap_or_default();
        for i in foci {
            self.unqueue_from(i as usize);
        }
        true
    }

    /// One pending chunk fewer in the square of the focus of id `i`; none left: its queue holds only stale
    /// entries and is emptied.
    fn unqueue_from(&mut self, i: usize) {
        self.pending_in[i] -= 1;
        if self.pending_in[i] == 0 {
            if let Some(q) = &mut self.queues[i] {
                if q.capacity() > 1024 {
                    *q = Queue::new();
                } else {
                    q.clear();
                }
            }
        }
    }

    /// Pushes pending chunk `c`'s entry (at its current priority) into the built queues of the
    /// foci that want it, or of `only`. A queue grown past its slack is dropped (built again from
    /// its square when next needed).
    fn queue_pending(&mut self, c: ChunkPos, only: Option<u32>) {
        let Self {
            cover,
            queues,
            foci,
            place,
            grid,
            ..
        } = self;
        let Some(cover) = cover.get(&c) else {
            return;
        };
        let one = [only.unwrap_or(0)];
        let list: &[u32] = if only.is_some() {
            &one
        } else {
            &cover.wanted_by
        };
        for &i in list {
            let i = i as usize;
            let slot = place.get(i).and_then(|&at| foci.get(at as usize));
            let (Some(slot), Some(q)) = (slot, queues.get_mut(i)) else {
                continue;
            };
            if let Some(heap) = q {
                heap.push(Reverse(entry(grid, slot.view.pos, c, cover.prio)));
                let side = 2 * slot.view.radius as usize + 1;
                if heap.len() > QUEUE_SLACK * side * side + 64 {
                    *q = None;
                }
            }
        }
    }

    /// `c` left the union.
    fn leave(&mut self, c: ChunkPos) {
        self.union_len -= 1;
        if self.chunk_ready(c) {
            self.ready -= 1;
        }
        self.unpend(c);
        match self.refusal_kind(c) {
            Some(RefusalKind::Load) => {
                self.load_refusals_wanted -= 1;
                self.recheck.insert(c);
            }
            Some(RefusalKind::Unload) => {
                self.last_wanted.insert(c, self.resolved_at);
            }
            None if self.loaded.contains(&c) => {
                self.last_wanted.insert(c, self.resolved_at);
                self.evictable.insert((self.resolved_at, c));
            }
            None => {}
        }
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
            if self.loaded.contains(&c) && !kept && !self.refusals.contains_key(&c) {
                if self.foci.is_empty() {
                    waiting.push(c);
                } else {
                    releases.push(c);
                }
            }
        }
        self.recheck.extend(waiting);
    }

    /// Takes the `k` nearest pending chunks out of the pending set and appends them to `out`,
    /// nearest-first (priority descending, then §11's key, z, x; their hooks are asked next, in
    /// that order). A chunk's key is the least of its foci's distances, so the least head over
    /// the queues of the foci with pending chunks is the nearest pending chunk: a load costs the
    /// stale entries it skips and a few heap steps, never the pending set.
    pub fn take_nearest(&mut self, k: usize, out: &mut Vec<ChunkPos>) {
        let mut k = k.min(self.pending.len());
        if k == 0 {
            return;
        }
        // Each focus's head, with the focus's id; the least first.
        let mut heads: BTreeSet<(Entry, u32)> = BTreeSet::new();
        for at in 0..self.ids.len() {
            let id = self.ids[at] as usize;
            if self.pending_in[id] > 0 {
                if let Some(Reverse(e)) = self.queue(id).peek() {
                    heads.insert((*e, id as u32));
                }
            }
        }
        while k > 0 {
            let Some((head, i)) = heads.pop_first() else {
                debug_assert!(false, "a pending chunk in no queue");
                return;
            };
            let i = i as usize;
            if let Some(c) = self.pop_head(i, head) {
                self.unpend(c);
                out.push(c);
                k -= 1;
            }
            if let Some(Reverse(next)) = self.queues[i].as_ref().and_then(Queue::peek) {
                heads.insert((*next, i as u32));
            }
        }
    }

    /// The `"fair"` deal (SPEC §16): takes up to `k` pending chunks one at a time, each dealt to
    /// the first focus from `turn` on (cyclically over the foci in force, from 0 when `turn` is
    /// past the end) whose priority is the top priority still pending and whose square holds a
    /// pending chunk; that focus takes its own nearest (least squared distance from its
    /// position, then z, x). Appends each chunk and the turn after it (the next focus) to `out`.
    ///
    /// The top priority still pending is the highest of the foci whose squares hold a pending
    /// chunk (a chunk's priority is its highest focus's), so the deal keeps those foci by
    /// priority, finds the next in turn in O(log n) and pops its queue: a load costs the stale
    /// entries it skips and a few heap steps, never the pending set or every focus.
    pub fn take_fair(&mut self, k: usize, turn: usize, out: &mut Vec<(ChunkPos, usize)>) {
        let n = self.foci.len();
        if k == 0 || self.pending.is_empty() {
            return;
        }
        // The foci whose squares hold pending chunks, by priority: only fewer as chunks are dealt.
        let mut dealing: BTreeMap<u8, BTreeSet<u32>> = BTreeMap::new();
        for (i, slot) in self.foci.iter().enumerate() {
            if self.pending_in[self.ids[i] as usize] > 0 {
                dealing
                    .entry(slot.view.priority)
                    .or_default()
                    .insert(i as u32);
            }
        }
        let mut turn = turn;
        for _ in 0..k {
            let Some((_, top)) = dealing.last_key_value() else {
                return;
            };
            if turn >= n {
                turn = 0;
            }
            let next = top.range(turn as u32..).next().or_else(|| top.first());
            let Some(i) = next.map(|&i| i as usize) else {
                return; // unreachable: no empty set is kept
            };
            let Some(c) = self.pop_nearest(self.ids[i] as usize) else {
                debug_assert!(
                    false,
                    "focus {i} counts pending chunks its queue does not hold"
                );
                return;
            };
            self.unpend(c);
            // The foci of the chunk that have nothing pending left drop out of the deal.
            if let Some(cover) = self.cover.get(&c) {
                for &id in &cover.wanted_by {
                    if self.pending_in[id as usize] == 0 {
                        let at = self.place[id as usize];
                        let p = self.foci[at as usize].view.priority;
                        if let Some(set) = dealing.get_mut(&p) {
                            set.remove(&at);
                            if set.is_empty() {
                                dealing.remove(&p);
                            }
                        }
                    }
                }
            }
            turn = (i + 1) % n;
            out.push((c, turn));
        }
    }

    /// The queue of the focus of id `i`, built from the pending chunks of its square if it is
    /// not: from the pending set when that is the smaller, else from the square.
    fn queue(&mut self, i: usize) -> &mut Queue {
        if self.queues[i].is_none() {
            let slot = *self.slot(i as u32);
            let r = i64::from(slot.view.radius);
            let side = 2 * slot.view.radius as usize + 1;
            let mut entries = Vec::with_capacity(self.pending_in[i] as usize);
            let prio = |c: &ChunkPos| self.cover.get(c).map_or(0, |cover| cover.prio);
            if self.pending.len() < side * side {
                self.examined += self.pending.len() as u64;
                entries.extend(
                    self.pending
                        .iter()
                        .filter(|c| {
                            (c.x - slot.centre.x).abs() <= r && (c.z - slot.centre.z).abs() <= r
                        })
                        .map(|c| Reverse(entry(&self.grid, slot.view.pos, *c, prio(c)))),
                );
            } else {
                let mut looked = 0;
                for c in self
                    .grid
                    .square(slot.centre, slot.view.radius, self.bounds.as_ref())
                {
                    looked += 1;
                    if self.pending.contains(&c) {
                        entries.push(Reverse(entry(&self.grid, slot.view.pos, c, prio(&c))));
                    }
                }
                self.examined += looked;
            }
            debug_assert_eq!(entries.len(), self.pending_in[i] as usize);
            self.queues[i] = Some(Queue::from(entries));
        }
        self.queues[i].as_mut().expect("built above")
    }

    /// Whether a queue entry is true: its chunk is pending at that priority (its distance is
    /// right by construction: a focus that moves loses its queue).
    fn is_current(&self, e: &Entry) -> bool {
        self.pending.contains(&e.2) && self.priority(e.2) == u8::MAX - e.0
    }

    /// Pops the head of the queue of id `i` if it still is `head`; its chunk if the entry is true.
    fn pop_head(&mut self, i: usize, head: Entry) -> Option<ChunkPos> {
        let q = self.queues[i].as_mut()?;
        if q.peek() != Some(&Reverse(head)) {
            return None; // emptied meanwhile: its focus has nothing pending left
        }
        q.pop();
        self.examined += 1;
        self.is_current(&head).then_some(head.2)
    }

    /// The nearest pending chunk of the focus of id `i` (least squared distance from its position, then z, x),
    /// popped from its queue (building it if needed); the chunk stays pending.
    fn pop_nearest(&mut self, i: usize) -> Option<ChunkPos> {
        loop {
            let Reverse(head) = self.queue(i).pop()?;
            self.examined += 1;
            if self.is_current(&head) {
                return Some(head.2);
            }
        }
    }

    /// `world.chunks.holes` (SPEC §16): the chunks inside the ground within ring
    /// `min(ring, r)` of the first `foci` foci's chunks (each once) that are not ready.
    pub fn holes(&self, foci: usize, ring: u32) -> usize {
        if let [slot] = &self.foci[..foci.min(self.foci.len())] {
            // One focus (the common case): its square holds each chunk once, nothing to merge.
            let r = ring.min(slot.view.radius);
            return self
                .grid
                .square(slot.centre, r, self.bounds.as_ref())
                .filter(|c| !self.chunk_ready(*c))
                .count();
        }
        let mut seen: BTreeSet<ChunkPos> = BTreeSet::new();
        for slot in self.foci.iter().take(foci) {
            let r = ring.min(slot.view.radius);
            for c in self.grid.square(slot.centre, r, self.bounds.as_ref()) {
                if !self.chunk_ready(c) {
                    seen.insert(c);
                }
            }
        }
        seen.len()
    }

    /// The chunks [`Residency::holes`] counts (each once), in row order: for the viewer, which
    /// marks them.
    pub fn hole_chunks(&self, foci: usize, ring: u32) -> Vec<ChunkPos> {
        let mut seen: BTreeSet<ChunkPos> = BTreeSet::new();
        for slot in self.foci.iter().take(foci) {
            let r = ring.min(slot.view.radius);
            seen.extend(
                self.grid
                    .square(slot.centre, r, self.bounds.as_ref())
                    .filter(|c| !self.chunk_ready(*c)),
            );
        }
        seen.into_iter().collect()
    }

    /// Puts a chunk taken by [`Residency::take_nearest`] back (its load was not asked).
    pub fn untake(&mut self, chunk: ChunkPos) {
        if self.is_wanted(chunk)
            && !self.loaded.contains(&chunk)
            && !self.refusals.contains_key(&chunk)
        {
            self.pend(chunk);
        }
    }

    /// Records that `chunk` loaded.
    pub fn mark_loaded(&mut self, chunk: ChunkPos) {
        if !self.loaded.insert(chunk) {
            return;
        }
        self.built.insert(chunk, 0);
        self.touched(chunk, true);
        self.unpend(chunk);
        if self.is_wanted(chunk) {
            if self.chunk_ready(chunk) {
                self.ready += 1;
            }
        } else {
            self.last_wanted.insert(chunk, self.resolved_at);
            self.evictable.insert((self.resolved_at, chunk));
        }
    }

    /// Records that `chunk` was released: it forgets its last-wanted tick and what was built.
    pub fn mark_released(&mut self, chunk: ChunkPos) {
        if !self.loaded.contains(&chunk) {
            return;
        }
        let was_ready = self.is_wanted(chunk) && self.chunk_ready(chunk);
        self.loaded.remove(&chunk);
        self.built.remove(&chunk);
        self.touched(chunk, false);
        if was_ready {
            self.ready -= 1;
        }
        if let Some(lw) = self.last_wanted.remove(&chunk) {
            self.evictable.remove(&(lw, chunk));
        } else {
            self.evictable.remove(&(0, chunk));
        }
        if self.is_wanted(chunk) && !self.refusals.contains_key(&chunk) {
            self.pend(chunk);
        }
    }

    /// Holds a refusal of `chunk` (a load refusal of a chunk taken for loading, or an unload
    /// refusal of a loaded one).
    pub fn hold(&mut self, chunk: ChunkPos, held: Held) {
        if self.refusals.contains_key(&chunk) {
            self.drop_refusal(chunk);
        }
        let wanted = self.is_wanted(chunk);
        let was_ready = wanted && self.chunk_ready(chunk);
        match held.kind {
            RefusalKind::Load => {
                self.unpend(chunk);
                if wanted {
                    self.load_refusals_wanted += 1;
                }
            }
            RefusalKind::Unload => {
                *self.unload_refusals_by.entry(held.by.clone()).or_default() += 1;
                // Out of the eviction order (which holds only loaded chunks no focus wants:
                // for any other chunk there is nothing to remove).
                self.evictable.remove(&(self.last_wanted(chunk), chunk));
                if self.keep_count(chunk) > 0 {
                    // A refused eviction in the hysteresis band: the drop rule applies next tick.
                    self.recheck.insert(chunk);
                }
            }
        }
        self.refusals.insert(chunk, held);
        self.touched(chunk, true); // holding never makes a chunk unready (below)
                                   // Holding never makes a chunk unready (`was_ready` is taken after any old refusal was
                                   // dropped): a load refusal makes it ready, an unload refusal leaves it to its builds.
        if wanted && !was_ready && self.chunk_ready(chunk) {
            self.ready += 1;
        }
    }

    fn drop_refusal(&mut self, chunk: ChunkPos) -> Option<Held> {
        let wanted = self.is_wanted(chunk);
        let was_ready = wanted && self.chunk_ready(chunk);
        let held = self.refusals.remove(&chunk)?;
        self.touched(chunk, false);
        match held.kind {
            RefusalKind::Load => {
                if wanted {
                    self.load_refusals_wanted -= 1;
                    if !self.loaded.contains(&chunk) {
                        self.pend(chunk);
                    }
                }
            }
            RefusalKind::Unload => {
                if let Some(n) = self.unload_refusals_by.get_mut(&held.by) {
                    *n -= 1;
                    if *n == 0 {
                        self.unload_refusals_by.remove(&held.by);
                    }
                }
                if self.loaded.contains(&chunk) && !wanted {
                    self.evictable.insert((self.last_wanted(chunk), chunk));
                }
            }
        }
        // Dropping never makes a chunk ready: a load refusal's chunk was ready by it, an
        // unload refusal's readiness is its builds' either way.
        if was_ready && !(wanted && self.chunk_ready(chunk)) {
            self.ready -= 1;
        }
        Some(held)
    }

    /// Drops whatever refusal is held at `chunk`: a load refusal makes the chunk pending again
    /// (if wanted), an unload refusal makes it due for release again on the next tick.
    /// Returns whether a refusal was held.
    pub fn release_refusal(&mut self, chunk: ChunkPos) -> bool {
        let dropped = self.drop_refusal(chunk).is_some();
        if dropped && self.loaded.contains(&chunk) {
            self.recheck.insert(chunk);
        }
        dropped
    }

    /// The next eviction candidate not in `asked`: a loaded chunk outside the union holding no
    /// refusal, least recently wanted first (ties in row order). O(log n + |asked|).
    pub fn eviction_candidate(&self, asked: &BTreeSet<ChunkPos>) -> Option<ChunkPos> {
        self.evictable
            .iter()
            .map(|(_, c)| *c)
            .find(|c| !asked.contains(c))
    }

    /// Registers a builder readiness waits for; returns its index (at most 64 builders).
    pub fn add_builder(&mut self) -> Option<u32> {
        if self.builders >= 64 {
            return None;
        }
        // Chunks loaded before the builder existed are not built by it.
        self.ready = 0;
        self.builders += 1;
        self.ready_log_lost = true;
        self.ready_log.clear();
        self.ready = self.recount_ready();
        Some(self.builders - 1)
    }

    fn recount_ready(&self) -> usize {
        self.loaded
            .iter()
            .filter(|c| self.is_wanted(**c) && self.built_by_all(**c))
            .count()
            + self.load_refusals_wanted
    }

    /// Builder `builder` built (or unbuilt) a loaded chunk; ignored for a chunk not loaded.
    /// A builder's commit calls it for every chunk: one hashed lookup when it changes no
    /// readiness.
    pub fn set_built(&mut self, builder: u32, chunk: ChunkPos, built: bool) {
        if builder >= self.builders {
            return;
        }
        let Some(bits) = self.built.get_mut(&chunk) else {
            return; // not loaded
        };
        let was = *bits;
        if built {
            *bits |= 1 << builder;
        } else {
            *bits &= !(1 << builder);
        }
        let now = *bits;
        if now != was {
            self.touched(chunk, built);
        }
        // Readiness moves with the bits, unless a load refusal makes the chunk ready anyway.
        let (was_ready, now_ready) = (self.all_built(was), self.all_built(now));
        if was_ready != now_ready
            && self.is_wanted(chunk)
            && self.refusal_kind(chunk) != Some(RefusalKind::Load)
        {
            if now_ready {
                self.ready += 1;
            } else {
                self.ready -= 1;
            }
        }
    }

    /// Whether builder `builder` built `chunk`.
    pub fn is_built_by(&self, builder: u32, chunk: ChunkPos) -> bool {
        self.built
            .get(&chunk)
            .is_some_and(|b| b & (1 << builder) != 0)
    }

    /// Whether every chunk of `view`'s square inside the ground is loaded (and built by every
    /// builder) or held by a load refusal.
    pub fn square_ready(&self, view: FocusView) -> bool {
        let centre = self.grid.chunk_of(view.pos);
        self.grid
            .square(centre, view.radius, self.bounds.as_ref())
            .all(|c| self.chunk_ready(c))
    }

    /// Forgets everything (leaving a scene): returns the chunks that were loaded, in row order.
    /// Builders stay registered.
    pub fn clear(&mut self) -> Vec<ChunkPos> {
        let released = std::mem::take(&mut self.loaded).into_iter().collect();
        let (grid, bounds, builders) = (self.grid, self.bounds, self.builders);
        let (mut log, on) = (std::mem::take(&mut self.ready_log), self.ready_log_on);
        *self = Residency::new(grid, bounds);
        self.builders = builders;
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
        for c in &loaded {
            if !refusals.contains_key(c) {
                let lw = last_wanted.get(c).copied().unwrap_or(0);
                self.last_wanted.insert(*c, lw);
                self.evictable.insert((lw, *c));
            } else if let Some(lw) = last_wanted.get(c) {
                self.last_wanted.insert(*c, *lw);
            }
        }
        self.built = loaded.iter().map(|c| (*c, 0)).collect();
        self.loaded = loaded;
        self.refusals = refusals;
        // Every loaded chunk starts outside the union (an eviction candidate at its saved
        // last-wanted tick); counting the foci moves the wanted ones in.
        self.set_foci(foci);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round 1's one-focus step: set the focus (or none) and resolve.
    trait OneFocus {
        fn update_view(&mut self, focus: Option<Position>, radius: u32, out: &mut Vec<ChunkPos>);
        fn restore_around(
            &mut self,
            refusals: BTreeMap<ChunkPos, Held>,
            focus: Position,
            radius: u32,
        );
    }

    impl OneFocus for Residency {
        fn update_view(&mut self, focus: Option<Position>, radius: u32, out: &mut Vec<ChunkPos>) {
            let foci: Vec<FocusView> = focus
                .map(|pos| FocusView::new(pos, radius))
                .into_iter()
                .collect();
            self.set_foci(&foci);
            let tick = self.resolved_at + 1;
            self.resolve(tick, out);
        }
        fn restore_around(
            &mut self,
            refusals: BTreeMap<ChunkPos, Held>,
            focus: Position,
            radius: u32,
        ) {
            let foci = [FocusView::new(focus, radius)];
            self.restore(BTreeSet::new(), refusals, &foci, BTreeMap::new(), 0);
        }
    }

    fn res() -> Residency {
        Residency::new(Grid::new(32.0), None)
    }

    /// One focus of radius 1 and its 9 chunks taken for loading, nearest first.
    fn nine_taken() -> (Residency, Vec<ChunkPos>) {
        let mut r = res();
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        let mut taken = Vec::new();
        r.take_nearest(9, &mut taken);
        (r, taken)
    }

    fn fill(r: &mut Residency, focus: Position, radius: u32) {
        let mut out = Vec::new();
        r.update_view(Some(focus), radius, &mut out);
        let mut batch = Vec::new();
        r.take_nearest(usize::MAX, &mut batch);
        for c in batch {
            r.mark_loaded(c);
        }
    }

    /// The readiness log that SPEC §17's hole count follows (cargo-mutants found it untested):
    /// nothing is logged until it is asked for; the first list after that is incomplete (the
    /// hole count recounts); then each load and release lists its chunk, complete; exactly
    /// `READY_LOG_MAX` entries stay complete, one more loses the list (empty, incomplete), and
    /// the list after that is complete again.
    #[test]
    fn the_readiness_log_lists_what_changed_and_says_when_it_is_not_the_whole_story() {
        let mut r = Residency::new(Grid::new(32.0), None);
        let mut buf = vec![(ChunkPos::new(9, 9), true)];
        let (a, b) = (ChunkPos::new(1, 1), ChunkPos::new(-2, 3));
        r.swap_ready_log(&mut buf);
        r.mark_loaded(a);
        r.swap_ready_log(&mut buf);
        assert_eq!(buf, [], "not asked for: nothing logged");
        r.track_readiness();
        r.mark_loaded(b);
        assert!(
            !r.swap_ready_log(&mut buf),
            "the first list is not the whole story"
        );
        assert_eq!(buf, []);
        r.mark_released(a);
        r.mark_loaded(a);
        r.mark_loaded(a);
        assert!(r.swap_ready_log(&mut buf));
        assert_eq!(
            buf,
            [(a, false), (a, true)],
            "a release loses, a load gains"
        );
        let touch = |r: &mut Residency, n: usize| {
            for k in 0..n {
                if k % 2 == 0 {
                    r.mark_released(b);
                } else {
                    r.mark_loaded(b);
                }
            }
        };
        touch(&mut r, READY_LOG_MAX);
        assert!(r.swap_ready_log(&mut buf), "exactly the most it holds");
        assert_eq!(buf.len(), READY_LOG_MAX);
        assert_eq!(READY_LOG_MAX, 65_536);
        touch(&mut r, READY_LOG_MAX + 1);
        assert!(!r.swap_ready_log(&mut buf), "one more: lost");
        assert_eq!(buf, []);
        r.mark_released(a);
        assert!(r.swap_ready_log(&mut buf));
        assert_eq!(buf, [(a, false)]);
        // A build gains, an unbuild loses.
        let builder = r.add_builder().unwrap();
        r.swap_ready_log(&mut buf);
        r.mark_loaded(a);
        r.set_built(builder, a, true);
        r.set_built(builder, a, false);
        r.set_built(builder, a, false);
        assert!(r.swap_ready_log(&mut buf));
        assert_eq!(buf, [(a, true), (a, true), (a, false)]);
    }

    /// `move_focus` moves a focus that stays in its chunk and says so (the fast path that spares
    /// a recount); a focus changing chunk, or no such focus, is left to `set_foci` (false).
    /// cargo-mutants found both answers untested (a `false` only costs the recount).
    #[test]
    fn a_focus_moved_within_its_chunk_is_moved_in_place_and_one_leaving_it_is_not() {
        let mut r = res();
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        assert!(r.move_focus(0, Position::new(30.0, 1.0)));
        assert_eq!(r.foci[0].view.pos, Position::new(30.0, 1.0));
        assert!(!r.move_focus(0, Position::new(33.0, 1.0)), "another chunk");
        assert_eq!(r.foci[0].view.pos, Position::new(30.0, 1.0));
        assert!(!r.move_focus(1, Position::new(10.0, 10.0)), "no focus 1");
    }

    /// Only a chunk held by an unload refusal is queued to be looked at again when it comes
    /// back into a kept square (cargo-mutants: queuing every newly kept chunk was missed, as it
    /// only costs work).
    #[test]
    fn only_unload_refused_chunks_are_rechecked_when_kept_again() {
        let mut r = res();
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        assert!(r.recheck.is_empty(), "{:?}", r.recheck);
        r.set_foci(&[FocusView::new(Position::new(1000.0, 10.0), 1)]);
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        assert!(r.recheck.is_empty(), "{:?}", r.recheck);
    }

    /// An unload refusal lapses only once a focus keeps its chunk at a resolution: a chunk
    /// that a focus came back to and left again between two resolutions keeps its refusal and
    /// is not released (cargo-mutants: dropping it whenever the chunk was looked at again was
    /// missed).
    #[test]
    fn an_unload_refusal_outlives_a_focus_that_came_and_went_between_two_resolutions() {
        let mut r = res();
        let (near, away) = (Position::new(10.0, 10.0), Position::new(10_000.0, 10.0));
        fill(&mut r, near, 1);
        r.set_foci(&[FocusView::new(away, 1)]);
        let mut released = Vec::new();
        r.resolve(1, &mut released);
        let c = ChunkPos::new(0, 0);
        assert!(released.contains(&c));
        r.hold(
            c,
            Held {
                kind: RefusalKind::Unload,
                by: "mod".into(),
                reason: "keep".into(),
            },
        );
        for o in released.into_iter().filter(|o| *o != c) {
            r.mark_released(o);
        }
        r.set_foci(&[FocusView::new(near, 1)]);
        r.set_foci(&[FocusView::new(away, 1)]);
        let mut again = Vec::new();
        r.resolve(2, &mut again);
        assert_eq!(again, [], "still refused");
        assert_eq!(r.unload_refusals_of("mod"), 1);
        assert!(r.is_loaded(c));
        // Kept at a resolution, the refusal lapses (SPEC §4).
        r.set_foci(&[FocusView::new(near, 1)]);
        r.resolve(3, &mut again);
        assert_eq!(r.unload_refusals_of("mod"), 0);
    }

    /// The fair deal gives a focus the nearest pending chunk *of its square*: a pending chunk
    /// nearer to it but outside its square (in line with it, in another focus's square) is not
    /// its to take (cargo-mutants: the square's test made "x or z within r" was missed).
    #[test]
    fn the_fair_deal_gives_a_focus_only_chunks_of_its_own_square() {
        let mut r = res();
        let at = |x: i64, z: i64| Position::new(x as f64 * 32.0 + 16.0, z as f64 * 32.0 + 16.0);
        r.set_foci(&[FocusView::new(at(0, 0), 4), FocusView::new(at(0, 9), 4)]);
        let (corner, beyond) = (ChunkPos::new(4, 4), ChunkPos::new(0, 5));
        for c in r.pending() {
            if c != corner && c != beyond {
                r.mark_loaded(c);
            }
        }
        assert_eq!(r.pending_len(), 2);
        // `beyond` is nearer to focus 0 (160 m) than its own corner (181 m), but lies in focus
        // 1's square only.
        let mut out = Vec::new();
        r.take_fair(1, 0, &mut out);
        assert_eq!(out, [(corner, 1)]);
        r.take_fair(1, 1, &mut out);
        assert_eq!(out, [(corner, 1), (beyond, 0)]);
    }

    /// A chunk taken for its load and put back unasked becomes pending again only if it is
    /// still wanted, not loaded and holds no refusal (cargo-mutants: either `&&` made `||` was
    /// missed, as nothing loads or refuses a chunk between its take and its put-back in the kit).
    #[test]
    fn a_chunk_put_back_is_pending_again_only_if_still_wanted_unloaded_and_unrefused() {
        let (mut r, taken) = nine_taken();
        assert_eq!((taken.len(), r.pending_len()), (9, 0));
        let (loaded, refused, kept) = (taken[0], taken[1], taken[2]);
        r.mark_loaded(loaded);
        r.hold(
            refused,
            Held {
                kind: RefusalKind::Load,
                by: "mod".into(),
                reason: "no".into(),
            },
        );
        for c in [loaded, refused, kept] {
            r.untake(c);
        }
        assert_eq!(r.pending(), [kept]);
        // No longer wanted (the focus went far away): not put back either.
        let other = taken[3];
        r.set_foci(&[FocusView::new(Position::new(10_000.0, 10.0), 1)]);
        r.untake(other);
        assert!(!r.pending().contains(&other));
    }

    /// The viewer's hole cells are exactly the chunks `holes` counts, each once, in row order,
    /// with one focus and with two overlapping (cargo-mutants: `hole_chunks` made empty, or
    /// listing the ready chunks, was missed by the tests it was run with; the viewer's test in
    /// Chromium checks it too).
    #[test]
    fn the_hole_chunks_are_the_chunks_the_hole_count_counts() {
        let mut r = res();
        let (a, b) = (Position::new(10.0, 10.0), Position::new(74.0, 10.0));
        r.set_foci(&[FocusView::new(a, 2), FocusView::new(b, 2)]);
        let mut taken = Vec::new();
        r.take_nearest(usize::MAX, &mut taken);
        for c in taken.iter().step_by(3) {
            r.mark_loaded(*c);
        }
        for (foci, ring) in [(1, 2), (1, 1), (2, 2), (2, 0)] {
            let holes = r.hole_chunks(foci, ring);
            assert_eq!(holes.len(), r.holes(foci, ring), "{foci} {ring}");
            assert!(
                holes.windows(2).all(|w| w[0] < w[1]),
                "row order, each once"
            );
            let mut want: Vec<ChunkPos> = Vec::new();
            for slot in r.foci.iter().take(foci) {
                let rr = i64::from(ring.min(slot.view.radius));
                for z in slot.centre.z - rr..=slot.centre.z + rr {
                    for x in slot.centre.x - rr..=slot.centre.x + rr {
                        let c = ChunkPos::new(x, z);
                        if !r.is_loaded(c) && !want.contains(&c) {
                            want.push(c);
                        }
                    }
                }
            }
            want.sort();
            assert_eq!(holes, want, "{foci} {ring}");
            assert!(!holes.is_empty());
        }
    }

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

    /// The resident cap's count, wanted chunks not held by a load refusal, follows load
    /// refusals held and dropped (by `release_refusal` and by a refusal replacing another),
    /// and readiness counts a load-refused chunk as ready (cargo-mutants: the count's decrement
    /// on a drop made `+=` or `/=` was missed).
    #[test]
    fn dropping_a_load_refusal_counts_the_chunk_as_unrefused_again() {
        let mut r = res();
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        let refuse = |r: &mut Residency, c: ChunkPos, kind: RefusalKind| {
            let held = Held {
                kind,
                by: "mod".into(),
                reason: "no".into(),
            };
            r.hold(c, held);
        };
        let (a, b) = (ChunkPos::new(0, 0), ChunkPos::new(1, 1));
        assert_eq!((r.wanted_unrefused(), r.progress()), (9, (0, 9)));
        refuse(&mut r, a, RefusalKind::Load);
        refuse(&mut r, b, RefusalKind::Load);
        assert_eq!((r.wanted_unrefused(), r.progress()), (7, (2, 9)));
        assert!(r.release_refusal(a));
        assert_eq!((r.wanted_unrefused(), r.progress()), (8, (1, 9)));
        assert!(r.pending().contains(&a));
        // A refusal replacing another drops the old one first.
        refuse(&mut r, b, RefusalKind::Load);
        assert_eq!((r.wanted_unrefused(), r.progress()), (8, (1, 9)));
        assert!(r.release_refusal(b));
        assert_eq!((r.wanted_unrefused(), r.progress()), (9, (0, 9)));
    }

    /// A builder registered while chunks are loaded and load refusals held recounts readiness:
    /// the loaded chunks are not built by it yet, a load-refused chunk stays ready
    /// (cargo-mutants: the recount's `+` made `-` was missed).
    #[test]
    fn a_new_builder_recounts_readiness_keeping_load_refused_chunks_ready() {
        let (mut r, taken) = nine_taken();
        for c in &taken[..5] {
            r.mark_loaded(*c);
        }
        for c in &taken[5..7] {
            let held = Held {
                kind: RefusalKind::Load,
                by: "mod".into(),
                reason: "no".into(),
            };
            r.hold(*c, held);
        }
        assert_eq!(r.progress(), (7, 9));
        let b = r.add_builder().unwrap();
        assert_eq!(r.progress(), (2, 9), "only the refused are ready");
        r.set_built(b, taken[0], true);
        assert_eq!(r.progress(), (3, 9));
    }

    /// A builder unbuilding a chunk clears its own bit only: the other builders' stay, the
    /// chunk is no longer ready, and building it again makes it ready (cargo-mutants: the mask's
    /// `!` deleted and its `<<` made `>>` were missed).
    #[test]
    fn unbuilding_clears_only_that_builders_bit() {
        let mut r = res();
        let (a, b) = (r.add_builder().unwrap(), r.add_builder().unwrap());
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 0)]);
        let c = ChunkPos::new(0, 0);
        let mut taken = Vec::new();
        r.take_nearest(1, &mut taken);
        r.mark_loaded(c);
        r.set_built(a, c, true);
        r.set_built(b, c, true);
        assert_eq!(r.progress(), (1, 1));
        r.set_built(b, c, false);
        assert!(r.is_built_by(a, c) && !r.is_built_by(b, c));
        assert_eq!(r.progress(), (0, 1));
        r.set_built(a, c, false);
        assert!(!r.is_built_by(a, c) && !r.is_built_by(b, c));
        r.set_built(a, c, true);
        r.set_built(b, c, true);
        assert_eq!(r.progress(), (1, 1));
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

    /// `for_each_outside` gives exactly the chunks of one square that are not in the other, in
    /// row order, for every placement of two small squares (apart in x only, in z only, in
    /// both, overlapping, nested), checked against a plain scan (cargo-mutants found the
    /// apart-in-x case untested: the strips a sideways jump gained were wrong).
    #[test]
    fn the_strips_outside_another_square_are_exactly_its_chunks_not_in_it() {
        let inside =
            |r: Rect, c: ChunkPos| (r.x0..=r.x1).contains(&c.x) && (r.z0..=r.z1).contains(&c.z);
        for r1 in 0..3u32 {
            for r2 in 0..3u32 {
                for dx in -6i64..=6 {
                    for dz in -6i64..=6 {
                        let a = Rect::around(ChunkPos::new(0, 0), r1);
                        let b = Rect::around(ChunkPos::new(dx, dz), r2);
                        let mut got = Vec::new();
                        a.for_each_outside(Some(b), |c| got.push(c));
                        let mut want = Vec::new();
                        for z in a.z0..=a.z1 {
                            for x in a.x0..=a.x1 {
                                let c = ChunkPos::new(x, z);
                                if !inside(b, c) {
                                    want.push(c);
                                }
                            }
                        }
                        assert_eq!(got, want, "{a:?} outside {b:?}");
                    }
                }
            }
        }
        let mut all = Vec::new();
        Rect::around(ChunkPos::new(5, -5), 1).for_each_outside(None, |c| all.push(c));
        assert_eq!(all.len(), 9);
        assert_eq!(
            (all[0], all[8]),
            (ChunkPos::new(4, -6), ChunkPos::new(6, -4))
        );
    }

    #[test]
    fn readiness_follows_every_builder_through_loads_releases_and_restores() {
        let mut r = res();
        let (a, b) = (r.add_builder().unwrap(), r.add_builder().unwrap());
        let check = |r: &Residency| assert_eq!(r.progress().0, r.recount_ready());
        fill(&mut r, Position::new(8.0, 8.0), 1);
        assert_eq!(r.progress(), (0, 9));
        let c = ChunkPos::new(0, 0);
        r.set_built(a, c, true);
        assert_eq!(r.progress(), (0, 9), "one builder of two");
        r.set_built(b, c, true);
        r.set_built(b, c, true); // again: no change
        assert_eq!(r.progress(), (1, 9));
        assert!(r.is_built_by(a, c) && r.is_built_by(b, c));
        r.set_built(a, c, false);
        assert_eq!(r.progress(), (0, 9));
        r.set_built(a, c, true);
        // Not loaded, or no such builder: ignored.
        r.set_built(a, ChunkPos::new(5, 5), true);
        r.set_built(7, c, true);
        assert!(!r.is_built_by(a, ChunkPos::new(5, 5)));
        check(&r);
        // Released: forgotten; loaded again: built by nobody.
        r.mark_released(c);
        assert_eq!(r.progress(), (0, 9));
        assert!(!r.is_built_by(a, c));
        r.mark_loaded(c);
        assert!(!r.is_built_by(a, c));
        r.set_built(a, c, true);
        r.set_built(b, c, true);
        assert_eq!(r.progress(), (1, 9));
        check(&r);
        // A restored chunk is loaded: its builders can tell it built.
        let loaded: BTreeSet<ChunkPos> = [c, ChunkPos::new(1, 0)].into();
        let foci = [FocusView::new(Position::new(8.0, 8.0), 1)];
        r.restore(loaded, BTreeMap::new(), &foci, BTreeMap::new(), 3);
        assert_eq!(r.progress(), (0, 9));
        for builder in [a, b] {
            r.set_built(builder, ChunkPos::new(1, 0), true);
        }
        assert_eq!(r.progress(), (1, 9));
        check(&r);
    }

    #[test]
    fn the_pending_set_is_the_wanted_square_nearest_first() {
        let mut r = res();
        let mut out = Vec::new();
        r.update_view(Some(Position::new(8.0, 8.0)), 1, &mut out);
        assert!(out.is_empty());
        assert_eq!(r.pending_len(), 9);
        assert_eq!(
            r.pending()[..2],
            [ChunkPos::new(0, 0), ChunkPos::new(0, -1)]
        );
        let mut batch = Vec::new();
        r.take_nearest(2, &mut batch);
        assert_eq!(batch, [ChunkPos::new(0, 0), ChunkPos::new(0, -1)]);
        assert_eq!(r.pending_len(), 7);
    }

    #[test]
    fn nothing_is_recomputed_while_the_focus_stays_in_its_chunk() {
        let mut r = res();
        fill(&mut r, Position::new(8.0, 8.0), 2);
        let mut out = Vec::new();
        r.update_view(Some(Position::new(30.0, 1.0)), 2, &mut out);
        assert!(out.is_empty());
        assert_eq!(r.pending_len(), 0);
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
    fn a_load_refusal_lapses_when_the_chunk_leaves_the_wanted_square() {
        let mut r = res();
        let mut out = Vec::new();
        r.update_view(Some(Position::new(8.0, 8.0)), 1, &mut out);
        let mut batch = Vec::new();
        r.take_nearest(1, &mut batch);
        let c = batch[0];
        let held = Held {
            kind: RefusalKind::Load,
            by: "m".to_owned(),
            reason: String::new(),
        };
        r.hold(c, held);
        r.update_view(Some(Position::new(40.0, 8.0)), 1, &mut out);
        assert_eq!(r.refusals().count(), 1, "still wanted at ring 1");
        assert!(!r.pending().contains(&c));
        r.update_view(Some(Position::new(72.0, 8.0)), 1, &mut out);
        assert_eq!(
            r.refusals().count(),
            0,
            "ring 2 is outside the wanted square"
        );
        r.update_view(Some(Position::new(8.0, 8.0)), 1, &mut out);
        assert!(r.pending().contains(&c), "wanted anew");
    }

    #[test]
    fn releasing_an_unload_refusal_makes_the_chunk_due_again() {
        let mut r = res();
        fill(&mut r, Position::new(8.0, 8.0), 0);
        let mut out = Vec::new();
        r.update_view(Some(Position::new(200.0, 8.0)), 0, &mut out);
        assert_eq!(out, [ChunkPos::new(0, 0)]);
        let held = Held {
            kind: RefusalKind::Unload,
            by: "m".to_owned(),
            reason: "home".into(),
        };
        r.hold(ChunkPos::new(0, 0), held);
        out.clear();
        r.update_view(Some(Position::new(201.0, 8.0)), 0, &mut out);
        assert!(out.is_empty(), "held: not asked again");
        assert!(r.release_refusal(ChunkPos::new(0, 0)));
        r.update_view(Some(Position::new(201.0, 8.0)), 0, &mut out);
        assert_eq!(out, [ChunkPos::new(0, 0)]);
    }

    #[test]
    fn no_focus_wants_nothing_and_releases_nothing() {
        let mut r = res();
        fill(&mut r, Position::new(8.0, 8.0), 1);
        let mut out = Vec::new();
        r.update_view(None, 1, &mut out);
        assert!(out.is_empty());
        assert_eq!(r.pending_len(), 0);
        assert_eq!(r.loaded().len(), 9);
    }

    #[test]
    fn bounds_keep_outside_chunks_from_ever_being_wanted() {
        let b = Bounds {
            min_x: 0.0,
            min_z: 0.0,
            max_x: 40.0,
            max_z: 64.0,
        };
        let mut r = Residency::new(Grid::new(32.0), Some(b));
        let mut out = Vec::new();
        r.update_view(Some(Position::new(8.0, 8.0)), 1, &mut out);
        let mut p = r.pending();
        p.sort();
        assert_eq!(
            p,
            [
                ChunkPos::new(0, 0),
                ChunkPos::new(1, 0),
                ChunkPos::new(0, 1),
                ChunkPos::new(1, 1)
            ]
        );
    }

    fn refusal(kind: RefusalKind) -> Held {
        Held {
            kind,
            by: "m".to_owned(),
            reason: String::new(),
        }
    }

    #[test]
    fn without_a_focus_load_refusals_lapse_and_unload_refusals_stay() {
        let mut r = res();
        fill(&mut r, Position::new(8.0, 8.0), 0);
        let mut out = Vec::new();
        // Far away: (0,0) is due; its release is refused. (6,0) is wanted; its load is refused.
        r.update_view(Some(Position::new(200.0, 8.0)), 0, &mut out);
        assert_eq!(out, [ChunkPos::new(0, 0)]);
        r.hold(ChunkPos::new(0, 0), refusal(RefusalKind::Unload));
        let mut batch = Vec::new();
        r.take_nearest(1, &mut batch);
        assert_eq!(batch, [ChunkPos::new(6, 0)]);
        r.hold(ChunkPos::new(6, 0), refusal(RefusalKind::Load));
        out.clear();
        r.update_view(None, 0, &mut out);
        let held: Vec<(ChunkPos, RefusalKind)> = r.refusals().map(|(c, h)| (c, h.kind)).collect();
        assert_eq!(
            held,
            [(ChunkPos::new(0, 0), RefusalKind::Unload)],
            "nothing is wanted: the load refusal lapses; nothing comes back: the unload one stays"
        );
        assert!(out.is_empty(), "and nothing is released");
    }

    #[test]
    fn an_unload_refusal_drops_exactly_when_the_chunk_is_back_within_radius_plus_one() {
        let mut r = res();
        fill(&mut r, Position::new(8.0, 8.0), 1);
        let mut out = Vec::new();
        // Focus chunk (3,0): the west column (-1, *) is at ring 4 > radius + 1 = 2.
        r.update_view(Some(Position::new(104.0, 8.0)), 1, &mut out);
        assert!(out.contains(&ChunkPos::new(-1, 0)));
        r.hold(ChunkPos::new(-1, 0), refusal(RefusalKind::Unload));
        // Focus chunk (2,0): ring 3, still beyond radius + 1: held.
        r.update_view(Some(Position::new(72.0, 8.0)), 1, &mut out);
        assert_eq!(r.refusals().count(), 1, "ring 3 > radius + 1: still held");
        // Focus chunk (1,0): ring 2 = radius + 1: back within, the refusal drops.
        r.update_view(Some(Position::new(40.0, 8.0)), 1, &mut out);
        assert_eq!(r.refusals().count(), 0, "ring 2 = radius + 1: dropped");
    }

    #[test]
    fn releasing_a_load_refusal_of_a_chunk_that_is_not_wanted_leaves_it_not_pending() {
        // A save may hold a load refusal the current view does not want (the radius a mod set
        // applies from the next tick); releasing it must not make it pending.
        let mut r = res();
        let refusals = BTreeMap::from([
            (ChunkPos::new(5, 5), refusal(RefusalKind::Load)),
            (ChunkPos::new(1, 0), refusal(RefusalKind::Load)),
        ]);
        r.restore_around(refusals, Position::new(8.0, 8.0), 1);
        assert_eq!(r.pending_len(), 8);
        assert!(r.release_refusal(ChunkPos::new(5, 5)));
        assert_eq!(r.pending_len(), 8, "(5,5) is not wanted");
        assert!(r.release_refusal(ChunkPos::new(1, 0)));
        assert_eq!(r.pending_len(), 9, "(1,0) is wanted: pending again");
        assert!(
            !r.release_refusal(ChunkPos::new(1, 0)),
            "nothing held any more"
        );
    }

    #[test]
    fn releasing_a_load_refusal_outside_the_bounds_leaves_it_not_pending() {
        let b = Bounds {
            min_x: 0.0,
            min_z: 0.0,
            max_x: 64.0,
            max_z: 64.0,
        };
        let mut r = Residency::new(Grid::new(32.0), Some(b));
        let refusals = BTreeMap::from([(ChunkPos::new(-1, 0), refusal(RefusalKind::Load))]);
        r.restore_around(refusals, Position::new(8.0, 8.0), 1);
        assert_eq!(r.pending_len(), 4);
        assert!(r.release_refusal(ChunkPos::new(-1, 0)));
        assert_eq!(r.pending_len(), 4, "(-1,0) lies outside the ground");
    }

    /// SplitMix64, so the cases are the same on every run.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Whether `slot`'s square holds `c`.
    fn holds(slot: &Slot, c: ChunkPos) -> bool {
        c.ring_distance(slot.centre) <= u64::from(slot.view.radius)
    }

    /// The nearest-first order of a pending chunk worked out plainly from the foci in force (no
    /// cover, no queue): priority descending, least distance from a focus that wants it, z, x.
    fn plain_order(r: &Residency, c: ChunkPos) -> Entry {
        let wanting: Vec<&Slot> = r.foci.iter().filter(|s| holds(s, c)).collect();
        let p = wanting
            .iter()
            .map(|s| s.view.priority)
            .max()
            .expect("wanted");
        let d = wanting
            .iter()
            .map(|s| r.grid.distance_sq(s.view.pos, c))
            .min_by(f64::total_cmp)
            .expect("wanted");
        (u8::MAX - p, d.to_bits(), c)
    }

    /// The nearest take as it was: sort the whole pending set, take the first `k`.
    fn plain_nearest(r: &mut Residency, k: usize) -> Vec<ChunkPos> {
        let mut all: Vec<ChunkPos> = r.pending.iter().copied().collect();
        all.sort_by_key(|c| plain_order(r, *c));
        all.truncate(k);
        for c in &all {
            r.unpend(*c);
        }
        all
    }

    /// The fair deal as it was: for every load, scan the pending set for the top priority, then
    /// the foci from the turn on for the first of that priority whose square holds a pending
    /// chunk, and scan for its nearest.
    fn plain_fair(r: &mut Residency, k: usize, turn: usize) -> Vec<(ChunkPos, usize)> {
        let n = r.foci.len();
        let mut turn = turn;
        let mut out = Vec::new();
        for _ in 0..k {
            let Some(top) = r
                .pending
                .iter()
                .map(|c| u8::MAX - plain_order(r, *c).0)
                .max()
            else {
                break;
            };
            if turn >= n {
                turn = 0;
            }
            let (c, i) = (0..n)
                .map(|step| (turn + step) % n)
                .find_map(|i| {
                    let slot = r.foci[i];
                    let nearest = r
                        .pending
                        .iter()
                        .filter(|c| holds(&slot, **c))
                        .min_by_key(|c| (r.grid.distance_sq(slot.view.pos, **c).to_bits(), **c));
                    (slot.view.priority == top)
                        .then_some(nearest)
                        .flatten()
                        .map(|c| (*c, i))
                })
                .expect("a focus of the top priority holds a pending chunk");
            r.unpend(c);
            turn = (i + 1) % n;
            out.push((c, turn));
        }
        out
    }

    /// The counts and queues agree with the pending set and the foci: each focus counts the
    /// pending chunks of its square, each built queue holds a true entry for every one of them,
    /// and each wanted chunk's priority is the highest of its foci's.
    fn check_queues(r: &Residency) {
        assert_eq!(r.pending_in.len(), r.place.len());
        assert_eq!(r.queues.len(), r.place.len());
        assert_eq!(r.ids.len(), r.foci.len());
        for (id, &at) in r.place.iter().enumerate() {
            if at == FREE {
                assert!(r.free_ids.contains(&(id as u32)), "id {id} lost");
                assert_eq!(r.pending_in[id], 0, "free id {id}");
                assert!(r.queues[id].is_none(), "free id {id}");
            } else {
                assert_eq!(r.ids[at as usize], id as u32);
            }
        }
        for (c, cover) in &r.cover {
            if let Some(p) = r
                .foci
                .iter()
                .filter(|s| holds(s, *c))
                .map(|s| s.view.priority)
                .max()
            {
                assert_eq!(cover.prio, p, "{c:?}");
                assert_eq!(
                    cover.wanted_by.len(),
                    r.foci.iter().filter(|s| holds(s, *c)).count()
                );
            } else {
                assert!(cover.wanted_by.is_empty(), "{c:?}");
            }
        }
        for (i, slot) in r.foci.iter().enumerate() {
            let mine: Vec<ChunkPos> = r
                .pending
                .iter()
                .copied()
                .filter(|c| holds(slot, *c))
                .collect();
            let id = r.ids[i] as usize;
            assert_eq!(r.pending_in[id] as usize, mine.len(), "focus {i}");
            if let Some(q) = &r.queues[id] {
                let entries: BTreeSet<Entry> = q.iter().map(|Reverse(e)| *e).collect();
                for c in mine {
                    let p = u8::MAX - plain_order(r, c).0;
                    let e = entry(&r.grid, slot.view.pos, c, p);
                    assert!(entries.contains(&e), "focus {i} does not queue {c:?}");
                }
            }
        }
    }

    /// One focus on quarter chunks near the origin (many exact distance ties, overlapping
    /// squares), radius 0..=4, priority mostly 0.
    fn random_focus(seed: &mut u64, size: f64) -> FocusView {
        let coord = |s: &mut u64| (next(s) % 64) as f64 * size / 4.0 - 8.0 * size;
        FocusView {
            pos: Position::new(coord(seed), coord(seed)),
            radius: (next(seed) % 5) as u32,
            priority: [0, 0, 0, 1, 2, 7][(next(seed) % 6) as usize],
        }
    }

    /// The queues take exactly what the plain scans took, under both schedules, over ticks of
    /// foci moving (within their chunk and beyond), appearing, leaving and changing priority,
    /// with bounds, load refusals held and released, chunks released while wanted, chunks put
    /// back unasked, and restores.
    #[test]
    fn the_queues_take_exactly_what_the_plain_scans_take() {
        let mut seed = 16;
        for case in 0..300 {
            let size = [1.0, 8.0, 32.0][(next(&mut seed) % 3) as usize];
            let bounds = (case % 4 == 0).then_some(Bounds {
                min_x: -6.0 * size,
                min_z: -5.0 * size,
                max_x: 7.5 * size,
                max_z: 6.0 * size,
            });
            let mut r = Residency::new(Grid::new(size), bounds);
            let mut foci: Vec<FocusView> = (0..1 + next(&mut seed) % 12)
                .map(|_| random_focus(&mut seed, size))
                .collect();
            let mut turn = (next(&mut seed) % 8) as usize;
            for tick in 1..=10u64 {
                let same_list = tick > 1 && next(&mut seed).is_multiple_of(3);
                for f in foci.iter_mut() {
                    match next(&mut seed) % 6 {
                        0 => {
                            f.pos.x += size * 0.25;
                            f.pos.z -= size * 0.5;
                        }
                        1 if !same_list => *f = random_focus(&mut seed, size),
                        2 if !same_list => f.priority = (next(&mut seed) % 3) as u8,
                        _ => {}
                    }
                }
                if !same_list && next(&mut seed).is_multiple_of(4) && foci.len() < 16 {
                    let at = (next(&mut seed) as usize) % (foci.len() + 1);
                    foci.insert(at, random_focus(&mut seed, size));
                }
                if !same_list && next(&mut seed).is_multiple_of(5) && foci.len() > 1 {
                    foci.remove((next(&mut seed) as usize) % foci.len());
                }
                // The kit's quick path: foci that stay in their chunk are moved in place.
                let moved_in_place = same_list
                    && (0..foci.len()).all(|i| r.move_focus(i, foci[i].pos))
                    && r.foci().eq(foci.iter().copied());
                if !moved_in_place {
                    r.set_foci(&foci);
                }
                let mut due = Vec::new();
                r.resolve(tick, &mut due);
                due.into_iter().for_each(|c| r.mark_released(c));
                // Refusals held and dropped, a chunk released while wanted.
                if let Some(&c) = r.pending.get_index(0) {
                    if next(&mut seed).is_multiple_of(3) {
                        r.hold(c, refusal(RefusalKind::Load));
                    }
                }
                if next(&mut seed).is_multiple_of(3) {
                    let held: Vec<ChunkPos> = r.refusals().map(|(c, _)| c).collect();
                    if let Some(c) = held.get((next(&mut seed) as usize) % held.len().max(1)) {
                        r.release_refusal(*c);
                    }
                }
                if next(&mut seed).is_multiple_of(3) {
                    let wanted: Vec<ChunkPos> = r.loaded().filter(|c| r.is_wanted(*c)).collect();
                    if let Some(c) = wanted.get((next(&mut seed) as usize) % wanted.len().max(1)) {
                        r.mark_released(*c);
                    }
                }
                if next(&mut seed).is_multiple_of(9) {
                    let loaded: BTreeSet<ChunkPos> = r.loaded().collect();
                    let refusals: BTreeMap<ChunkPos, Held> =
                        r.refusals().map(|(c, h)| (c, h.clone())).collect();
                    let views: Vec<FocusView> = r.foci().collect();
                    r.restore(loaded, refusals, &views, BTreeMap::new(), tick);
                }
                check_queues(&r);
                let k = 1 + (next(&mut seed) as usize) % (r.pending_len() + 2);
                let mut plain = r.clone();
                let taken: Vec<ChunkPos> = if next(&mut seed).is_multiple_of(2) {
                    let want = plain_nearest(&mut plain, k);
                    let mut got = Vec::new();
                    r.take_nearest(k, &mut got);
                    assert_eq!(got, want, "case {case} tick {tick}: nearest, k {k}");
                    got
                } else {
                    let want = plain_fair(&mut plain, k, turn);
                    let mut got = Vec::new();
                    r.take_fair(k, turn, &mut got);
                    assert_eq!(
                        got, want,
                        "case {case} tick {tick}: fair, k {k}, turn {turn}"
                    );
                    if let Some((_, t)) = got.last() {
                        turn = *t;
                    }
                    got.into_iter().map(|(c, _)| c).collect()
                };
                assert_eq!(
                    r.pending(),
                    plain.pending(),
                    "case {case} tick {tick}: the rest"
                );
                check_queues(&r);
                // Most load, some are refused, some are put back unasked (the cap stopped).
                for c in taken {
                    match next(&mut seed) % 8 {
                        0 => r.hold(c, refusal(RefusalKind::Load)),
                        1 => r.untake(c),
                        _ => r.mark_loaded(c),
                    }
                }
                check_queues(&r);
            }
        }
    }

    /// Ties in distance between chunks and between foci: the take follows the plain sort for
    /// one focus on quarter chunks (as the old scan and sort did), after loads and a move
    /// within the chunk.
    #[test]
    fn the_queue_takes_the_k_first_of_the_pending_list() {
        let mut seed = 16;
        for case in 0..2000 {
            let size = [1.0, 8.0, 32.0][(next(&mut seed) % 3) as usize];
            // Foci on chunk centres, edges and corners give many exact distance ties.
            let coord = |s: &mut u64| (next(s) % 64) as f64 * size / 4.0 - 8.0 * size;
            let focus = Position::new(coord(&mut seed), coord(&mut seed));
            let radius = (next(&mut seed) % 5) as u32;
            let mut r = Residency::new(Grid::new(size), None);
            let mut out = Vec::new();
            r.update_view(Some(focus), radius, &mut out);
            // Knock a few chunks out of the pending set, as loads and refusals would.
            for _ in 0..next(&mut seed) % 4 {
                if r.pending_len() < 2 {
                    break;
                }
                let mut batch = Vec::new();
                r.take_nearest(1, &mut batch);
                r.mark_loaded(batch[0]);
            }
            // Moving within the chunk keeps the pending set but changes its order.
            let moved = Position::new(focus.x + size * 0.25, focus.z - size * 0.5);
            if r.grid().chunk_of(moved) == r.grid().chunk_of(focus) && case % 2 == 0 {
                r.update_view(Some(moved), radius, &mut out);
            }
            let len = r.pending_len();
            let k = 1 + (next(&mut seed) as usize) % len.max(1);
            let mut expected = r.pending();
            expected.truncate(k.min(len));
            let mut plain = r.clone();
            assert_eq!(plain_nearest(&mut plain, k), expected, "case {case}");
            let mut a = Vec::new();
            r.take_nearest(k, &mut a);
            assert_eq!(a, expected, "case {case}: the k first of pending()");
            assert_eq!(r.pending(), plain.pending(), "case {case}: what is left");
        }
    }

    /// A focus that appears before others in the focus order (a predicted focus before the
    /// tickets), or one that leaves from the middle, moves the others to other places in the
    /// order: only the square that came or went is counted, not every focus after it.
    #[test]
    fn foci_moving_to_other_places_in_the_order_are_not_counted_again() {
        let mut r = res();
        let tickets: Vec<FocusView> = (0..20)
            .map(|i| FocusView::new(Position::new(f64::from(i) * 1000.0, 5000.0), 8))
            .collect();
        r.set_foci(&tickets);
        r.resolve(1, &mut Vec::new());
        let mut taken = Vec::new();
        r.take_fair(100, 0, &mut taken);
        taken.iter().for_each(|(c, _)| r.mark_loaded(*c));
        let one_square = 17 * 17 + 19 * 19; // wanted (r = 8) and kept (r + 1)
        let predicted = FocusView::new(Position::new(0.0, -5000.0), 8);
        let before = |f: &[FocusView]| [&[predicted], f].concat();
        let mut fewer = tickets.clone();
        fewer.remove(3);
        // (the foci, how many squares came or went)
        for (tick, (foci, squares)) in [
            (before(&tickets), 1),
            (tickets.clone(), 1),
            (fewer.clone(), 1),
            (before(&fewer), 1),
            (tickets.clone(), 2),
        ]
        .into_iter()
        .enumerate()
        {
            let was = r.recounted();
            r.set_foci(&foci);
            r.resolve(tick as u64 + 2, &mut Vec::new());
            assert_eq!(r.recounted() - was, squares * one_square, "step {tick}");
            check_queues(&r);
            // The same chunks wanted and pending, in the same order, as counted afresh.
            let mut fresh = res();
            fresh.set_foci(&foci);
            taken.iter().for_each(|(c, _)| fresh.mark_loaded(*c));
            assert_eq!(r.pending(), fresh.pending(), "step {tick}");
            assert_eq!(r.wanted_len(), fresh.wanted_len(), "step {tick}");
            let (mut a, mut b) = (r.clone(), fresh.clone());
            let (mut x, mut y) = (Vec::new(), Vec::new());
            a.take_fair(300, 7, &mut x);
            b.take_fair(300, 7, &mut y);
            assert_eq!(x, y, "step {tick}");
        }
    }

    /// 48 foci of radius 4, far apart (48 × 81 = 3 888 pending chunks), priorities 0–2 (or all
    /// 0), resolved at tick 1.
    fn many_apart(priorities: bool) -> Residency {
        let mut r = res();
        let foci: Vec<FocusView> = (0..48)
            .map(|i| FocusView {
                pos: Position::new(f64::from(i % 8) * 1000.0 + 5.0, f64::from(i / 8) * 1000.0),
                radius: 4,
                priority: if priorities { (i % 3) as u8 } else { 0 },
            })
            .collect();
        r.set_foci(&foci);
        r.resolve(1, &mut Vec::new());
        assert_eq!(r.pending_len(), 48 * 81);
        r
    }

    /// The fair deal costs what it deals, not the pending set: each focus's queue is built once
    /// from its square, then a load looks at one queued chunk. (It used to look at every pending
    /// chunk for the top priority, then at its focus's square, for every load: quadratic in the
    /// budget when the pending set is large.)
    #[test]
    fn the_fair_deal_looks_at_what_it_deals_not_at_every_pending_chunk() {
        let mut r = many_apart(true);
        let (mut turn, mut loads) = (0, 0);
        for tick in 2..=21 {
            r.resolve(tick, &mut Vec::new());
            let mut out = Vec::new();
            r.take_fair(8, turn, &mut out);
            assert_eq!(out.len(), 8);
            turn = out[7].1;
            loads += out.len() as u64;
            out.into_iter().for_each(|(c, _)| r.mark_loaded(c));
        }
        assert!(
            r.examined() <= 48 * 81 + loads,
            "{} pending chunks looked at for {loads} loads",
            r.examined()
        );
    }

    /// The same for `"nearest"`: a small budget against a large pending set used to scan the
    /// whole set once per load.
    #[test]
    fn the_nearest_take_looks_at_what_it_takes_not_at_every_pending_chunk() {
        let mut r = many_apart(false);
        let mut loads = 0;
        for tick in 2..=21 {
            r.resolve(tick, &mut Vec::new());
            let mut out = Vec::new();
            r.take_nearest(8, &mut out);
            assert_eq!(out.len(), 8);
            loads += out.len() as u64;
            out.into_iter().for_each(|c| r.mark_loaded(c));
        }
        assert!(
            r.examined() <= 48 * 81 + loads,
            "{} pending chunks looked at for {loads} loads",
            r.examined()
        );
    }

    fn two(r: &mut Residency, a: Position, b: Position, radius: u32, tick: u64) -> Vec<ChunkPos> {
        let mut out = Vec::new();
        r.set_foci(&[FocusView::new(a, radius), FocusView::new(b, radius)]);
        r.resolve(tick, &mut out);
        out
    }

    #[test]
    fn refusal_rules_apply_over_the_union_of_the_foci() {
        let mut r = res();
        let (a, b) = (Position::new(8.0, 8.0), Position::new(40.0, 8.0));
        // a at (0,0), b at (1,0), radius 1: (1,1) is wanted by both.
        two(&mut r, a, b, 1, 1);
        assert_eq!(r.wanted_len(), 12);
        r.hold(ChunkPos::new(1, 1), refusal(RefusalKind::Load));
        assert_eq!(r.wanted_unrefused(), 11);
        // a leaves: b still wants (1,1), so the load refusal stays.
        two(&mut r, Position::new(-300.0, 8.0), b, 1, 2);
        assert_eq!(r.refusals().count(), 1);
        // b leaves too: nobody wants it, the refusal drops.
        two(
            &mut r,
            Position::new(-300.0, 8.0),
            Position::new(-300.0, 300.0),
            1,
            3,
        );
        assert_eq!(r.refusals().count(), 0);
        // An unload refusal drops as soon as one focus keeps the chunk again (ring <= r + 1).
        let mut r = res();
        fill(&mut r, a, 0);
        let due = two(
            &mut r,
            Position::new(300.0, 8.0),
            Position::new(-300.0, 8.0),
            0,
            2,
        );
        assert_eq!(due, [ChunkPos::new(0, 0)]);
        r.hold(ChunkPos::new(0, 0), refusal(RefusalKind::Unload));
        two(
            &mut r,
            Position::new(300.0, 8.0),
            Position::new(-300.0, 8.0),
            0,
            3,
        );
        assert_eq!(r.refusals().count(), 1, "kept by no focus: held");
        two(
            &mut r,
            Position::new(300.0, 8.0),
            Position::new(40.0, 40.0),
            0,
            4,
        );
        assert_eq!(
            r.refusals().count(),
            0,
            "ring 1 of the second focus: dropped"
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
}
