//! The LOD planner (see docs/lod.md): which coarse blocks each level wants around the non-ticket
//! foci, which to load next under `lodBudget`, which to release without leaving a hole, and how
//! many chunks are seen by nothing. Plain data over [`Grid`] math, host-free, so every rule is
//! unit-tested alone; the kit applies the plan and announces it.
//!
//! - A level-k block `(bx, bz)` of step `s` covers the chunks `[bx·s, (bx+1)·s) × [bz·s,
//!   (bz+1)·s)`; its ring distance from a focus chunk is the ring distance to its nearest chunk.
//! - The area of level 0 around a focus is its chunk square of `radius`; the area of level k is
//!   the union of its level-k blocks within `r_k` (steps are powers of two, so a level-k block
//!   holds whole level-(k−1) blocks and the area of level k holds the area of level k−1). A
//!   block is *wanted* when it is within `r_k` of a focus, not entirely inside the area of the
//!   finer level (over every focus), and overlaps the ground.
//! - **Nothing is kept per block that is not loaded.** The wanted sets are geometry (a union
//!   of squares around the foci minus the finer areas, inside the ground), asked block by
//!   block or tile by tile. Pending blocks (wanted, not loaded) are kept as bits of 8 × 8
//!   tiles where they were looked at, and as rectangles not looked at yet, looked at lazily,
//!   nearest first, by the loads (a budget's worth at a time). The holes are a count: the area
//!   of the players' squares inside the ground minus what ready chunks and blocks see there,
//!   kept from each change of readiness and each strip the squares gained or lost.
//! - So every step of a tick costs in proportion to what changed (the strips a focus swept,
//!   the blocks loaded, released or built, the chunks whose readiness changed), never to the
//!   area of a level; a change larger than a few thousand blocks is noted as a rectangle.
//!
//! The parts: `area.rs` (the rectangle algebra, blocks and their ring distance), `tiles.rs`
//! (8 × 8 bit masks), `wanted.rs` (the wanted and pending blocks of each level), `load.rs` (the
//! loads' order and the no-hole release), `holes.rs` (the count of chunks seen by nothing); this
//! file the plan itself: its state, its levels and foci, and what the kit reads of it.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::grid::{Bounds, ChunkPos, Grid, Position};

use super::config::{Lod, LodLevel, MAX_LOD_LEVELS};

mod area;
mod holes;
mod load;
#[cfg(test)]
mod props;
#[cfg(test)]
mod testing;
mod tiles;
mod wanted;

use area::*;
pub use area::{block_of, block_ring};
use tiles::*;
use wanted::Now;

/// A loaded block's builders (bit `i`: builder `i` built it).
type Bits = u64;

/// A loaded block: whether it is wanted, and which builders built it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    wanted: bool,
    built: Bits,
}

/// What a level carves out of the next one around a focus chunk: the chunk square of `radius`
/// (level 0), or the blocks of the finer level within its radius.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carve {
    Square(u32),
    Blocks(LodLevel),
}

impl Carve {
    fn area(self, c: ChunkPos) -> Area {
        match self {
            Carve::Square(r) => Area::square(c, i64::from(r)),
            Carve::Blocks(l) => range(c, l).chunks(l.step),
        }
    }

    /// The side (chunks) of the grid the carved areas are aligned to.
    fn unit(self) -> i64 {
        match self {
            Carve::Square(_) => 1,
            Carve::Blocks(l) => i64::from(l.step),
        }
    }
}

/// The LOD plan of every level.
#[derive(Debug, Clone)]
pub struct LodPlan {
    grid: Grid,
    bounds: Option<Bounds>,
    /// The chunks inside the ground, a rectangle (see [`ground_chunks`]).
    ground: Area,
    /// The chunk radius (level 0) and the levels in force.
    radius: u32,
    levels: Lod,
    /// The step the loaded blocks of each level were planned with (a level whose step changed
    /// or that was removed releases its blocks at once).
    steps: [u32; MAX_LOD_LEVELS],
    foci: Vec<Position>,
    centres: Vec<ChunkPos>,
    /// The loaded blocks, each with whether it is wanted and which builders built it (while a
    /// level's step changes, they are of the old step). Hashed: only looked up, or listed
    /// sorted.
    slots: [FxHashMap<ChunkPos, Slot>; MAX_LOD_LEVELS],
    /// Pending blocks (wanted, not loaded) where they were looked at: tiles of blocks, bits.
    pending: [FxHashMap<ChunkPos, u64>; MAX_LOD_LEVELS],
    /// How many bits `pending` holds, per level.
    pending_len: [usize; MAX_LOD_LEVELS],
    /// Rectangles of blocks (aligned to tiles, disjoint, and holding no tile of `pending`) not
    /// looked at yet: their pending blocks are the wanted ones not loaded, found when the loads
    /// reach them.
    unscanned: [Vec<Area>; MAX_LOD_LEVELS],
    /// Loaded and not wanted: what the release rule looks at (its answer is sorted), each with
    /// the cell of its area that was not seen when it was last looked at (looked at first next
    /// time: see [`LodPlan::replaced`]).
    unwanted: [FxHashMap<ChunkPos, Cell<u32>>; MAX_LOD_LEVELS],
    /// Builders a block waits for before it is ready.
    builders: Bits,
    /// The wanted sets must be brought up to date (a focus changed chunk, the levels changed).
    stale: bool,
    /// They must be made from scratch (a restore), not from what changed.
    full: bool,
    /// What each level's pending and not-wanted blocks were last made for (the level and its
    /// carve), with the focus chunks of `resolved`; `None`: made from scratch next time.
    made: [Option<(LodLevel, Carve)>; MAX_LOD_LEVELS],
    resolved: Vec<ChunkPos>,
    /// A region of more blocks than this is noted as not looked at rather than tested block by
    /// block (a field so the tests can drive both ways).
    defer_min: u64,
    /// Up to this many pending blocks kept by tile (and no rectangle not looked at), the loads
    /// are found by sorting them all (cheaper for a few than the search; a field so the tests
    /// can drive both ways).
    sort_max: usize,
    /// Scratch for the sorted loads' keys.
    keyed: Vec<(u64, u128)>,
    /// Bumped on every change of what is loaded or built.
    changes: u64,
    /// The count's record of the chunks is their readiness now: they were told by
    /// [`LodPlan::note_chunks`], and the caller changes none before the next
    /// [`LodPlan::update_holes`].
    chunks_told: bool,
    /// `world.lod.holes`, kept rather than recounted: the area of the players' squares of the
    /// last level's radius inside the ground (`area`) minus the chunks of it that ready chunks
    /// and blocks see (`seen`). `h_chunks` and `h_blocks` are the ready chunks and blocks the
    /// count was last brought up to (tiles of bits), `hole_steps` the step each level's blocks
    /// count with (0: none); the squares are those of `hole_centres` and `hole_radius`.
    holes_valid: bool,
    hole_steps: [u32; MAX_LOD_LEVELS],
    h_chunks: FxHashMap<ChunkPos, u64>,
    h_blocks: [FxHashMap<ChunkPos, u64>; MAX_LOD_LEVELS],
    h_ready: [u64; MAX_LOD_LEVELS],
    area: u64,
    seen: u64,
    hole_centres: Vec<ChunkPos>,
    hole_squares: Vec<Area>,
    hole_radius: i64,
    /// Scratch, reused every tick.
    scratch: Vec<ChunkPos>,
    squares: Vec<Area>,
    tiles: Vec<ChunkPos>,
    carved: Vec<Area>,
    spans: Vec<Spans>,
    held: Vec<Area>,
    pieces: Vec<(Area, bool)>,
    ranges: Vec<Area>,
    boxes: Vec<Area>,
    meeting: Vec<Area>,
    heap: BinaryHeap<Reverse<(u64, u8, u128, u8)>>,
    deferred: bool,
}

/// A focus's range (blocks) and finer area (chunks) at one level, before and after the foci
/// moved (`None`: the focus was not there).
#[derive(Debug, Clone, Copy)]
struct Spans {
    moved: bool,
    range: [Option<Area>; 2],
    area: [Option<Area>; 2],
}

/// The memo of a not-wanted block that `due` listed because it is replaced (see
/// [`LodPlan::mark_released`]); otherwise the memo is a cell of the block's area.
const REPLACED: u32 = u32::MAX;

/// The release rule tests the rings of up to this many foci by rectangles.
const MAX_FOCI_FAST: usize = 8;

/// A region of more blocks than this is noted as not looked at (see `LodPlan::defer_min`).
const DEFER_MIN: u64 = 4096;

/// Up to this many pending blocks, the loads sort them all (see `LodPlan::sort_max`).
const SORT_MAX: usize = 1024;

/// Entries of the loads' search: rectangles not looked at and tiles (ranked before a block of
/// the same key: they may hold a block of that key earlier in row order), then blocks.
const KIND_RECT: u8 = 0;

const KIND_TILE: u8 = 1;

const KIND_BLOCK: u8 = 2;

impl LodPlan {
    /// No levels, nothing loaded.
    pub fn new(grid: Grid, bounds: Option<Bounds>) -> Self {
        LodPlan {
            grid,
            bounds,
            ground: ground_chunks(&grid, bounds.as_ref()),
            radius: 0,
            levels: Lod::default(),
            steps: [0; MAX_LOD_LEVELS],
            foci: Vec::new(),
            centres: Vec::new(),
            slots: Default::default(),
            pending: Default::default(),
            pending_len: [0; MAX_LOD_LEVELS],
            unscanned: Default::default(),
            unwanted: Default::default(),
            builders: 0,
            stale: true,
            full: true,
            made: [None; MAX_LOD_LEVELS],
            resolved: Vec::new(),
            defer_min: DEFER_MIN,
            sort_max: SORT_MAX,
            keyed: Vec::new(),
            changes: 0,
            chunks_told: false,
            holes_valid: false,
            hole_steps: [0; MAX_LOD_LEVELS],
            h_chunks: FxHashMap::default(),
            h_blocks: Default::default(),
            h_ready: [0; MAX_LOD_LEVELS],
            area: 0,
            seen: 0,
            hole_centres: Vec::new(),
            hole_squares: Vec::new(),
            hole_radius: -1,
            scratch: Vec::new(),
            squares: Vec::new(),
            tiles: Vec::new(),
            carved: Vec::new(),
            spans: Vec::new(),
            held: Vec::new(),
            pieces: Vec::new(),
            ranges: Vec::new(),
            boxes: Vec::new(),
            meeting: Vec::new(),
            heap: BinaryHeap::new(),
            deferred: false,
        }
    }

    /// The next hole count starts from scratch.
    pub fn invalidate_holes(&mut self) {
        self.holes_valid = false;
        self.chunks_told = false;
    }

    fn level(&self, k: usize) -> Option<LodLevel> {
        self.levels.levels().get(k).copied()
    }

    /// Level `k`, if its loaded blocks are of the step in force (none of an old step left).
    fn in_force(&self, k: usize) -> Option<LodLevel> {
        self.level(k).filter(|l| l.step == self.steps[k])
    }

    /// The step each level's ready blocks count with for the holes (0: none).
    fn in_force_steps(&self) -> [u32; MAX_LOD_LEVELS] {
        std::array::from_fn(|k| self.in_force(k).map_or(0, |l| l.step))
    }

    /// A level came into force or went out of it: the holes are counted again from scratch.
    fn sync_hole_steps(&mut self) {
        if self.holes_valid && self.in_force_steps() != self.hole_steps {
            self.invalidate_holes();
        }
    }

    /// What level `k` carves out of the next one (the levels in force).
    fn carve(&self, k: usize) -> Carve {
        match k.checked_sub(1) {
            None => Carve::Square(self.radius),
            Some(j) => Carve::Blocks(self.level(j).expect("a level in force")),
        }
    }

    /// Sets the chunk radius and the levels in force.
    pub fn set_levels(&mut self, radius: u32, levels: Lod) {
        if self.radius == radius && self.levels == levels {
            return;
        }
        self.radius = radius;
        self.levels = levels;
        self.stale = true;
        self.sync_hole_steps();
    }

    /// Sets the non-ticket foci (their positions rank the loads; their chunks decide what is
    /// wanted, brought up to date only when one changed chunk).
    pub fn set_foci(&mut self, foci: &[Position]) {
        if self.foci != foci {
            self.foci.clear();
            self.foci.extend_from_slice(foci);
            let grid = self.grid;
            let same = self.centres.len() == foci.len()
                && self
                    .centres
                    .iter()
                    .zip(foci)
                    .all(|(c, p)| *c == grid.chunk_of(*p));
            if !same {
                self.centres.clear();
                self.centres.extend(foci.iter().map(|p| grid.chunk_of(*p)));
                self.stale = true;
            }
        }
    }

    /// The areas level `k` carves out of the next level around each focus, into `out`.
    fn areas_into(&self, k: usize, out: &mut Vec<Area>) {
        out.clear();
        let carve = self.carve(k);
        out.extend(self.centres.iter().map(|c| carve.area(*c)));
    }

    /// Whether every chunk of `a` lies in one of `areas`, the areas a level carves around the
    /// foci ([`LodPlan::areas_into`]), aligned to cells of `unit` chunks ([`Carve::unit`]).
    fn inside_area(areas: &[Area], unit: i64, a: Area) -> bool {
        if areas.iter().any(|r| r.contains(&a)) {
            return true;
        }
        if areas.len() < 2 || !areas.iter().any(|r| r.meets(&a)) {
            return false;
        }
        // Several foci: the cells of the finer grid (every area is aligned to it) one by one.
        let mut z = a.z0;
        while z <= a.z1 {
            let mut x = a.x0;
            while x <= a.x1 {
                let cell = Area {
                    x0: x,
                    x1: x + unit - 1,
                    z0: z,
                    z1: z + unit - 1,
                };
                if !areas.iter().any(|r| r.contains(&cell)) {
                    return false;
                }
                x += unit;
            }
            z += unit;
        }
        true
    }

    /// The blocks of `step` overlapping the ground (those holding a chunk of it).
    fn ground_blocks(&self, step: u32) -> Area {
        if self.ground.is_empty() {
            Area::EMPTY
        } else {
            self.ground.blocks(step)
        }
    }

    /// Whether block `b` of `step` overlaps the ground, by metres as the contract says (the
    /// reference [`Now::wants`]' rectangle is checked against, in the tests).
    fn overlaps_ground(&self, b: ChunkPos, step: u32) -> bool {
        let Some(g) = self.bounds.as_ref() else {
            return true;
        };
        let a = block_area(b, step);
        let s = self.grid.size();
        let (x0, x1) = (a.x0 as f64 * s, a.x1.saturating_add(1) as f64 * s);
        let (z0, z1) = (a.z0 as f64 * s, a.z1.saturating_add(1) as f64 * s);
        x0 < g.max_x && g.min_x < x1 && z0 < g.max_z && g.min_z < z1
    }

    /// The wanted blocks of level `k` now, from scratch, block by block over the foci's
    /// ranges: what the kept sets must equal (costs the area of the ranges).
    fn compute_wanted(&self, k: usize) -> FxHashSet<ChunkPos> {
        let mut out = FxHashSet::default();
        let Some(l) = self.level(k) else {
            return out;
        };
        let mut areas = Vec::new();
        self.areas_into(k, &mut areas);
        let unit = self.carve(k).unit();
        for c in &self.centres {
            let r = range(*c, l);
            for bz in r.z0..=r.z1 {
                for bx in r.x0..=r.x1 {
                    let b = ChunkPos::new(bx, bz);
                    if out.contains(&b) {
                        continue;
                    }
                    if !Self::inside_area(&areas, unit, block_area(b, l.step))
                        && self.overlaps_ground(b, l.step)
                    {
                        out.insert(b);
                    }
                }
            }
        }
        out
    }

    /// Brings the wanted sets up to date (a no-op unless a focus changed chunk or the levels
    /// changed). Each level whose step stayed is brought up to date from what changed: the
    /// strips each focus's range and finer area gained or lost (see
    /// [`LodPlan::resolve_level`]); a level new, or whose step came back into force, is made
    /// from scratch (its ranges noted as not looked at, its loaded blocks tested again).
    pub fn resolve(&mut self) {
        if !self.stale {
            return;
        }
        self.stale = false;
        let full = std::mem::take(&mut self.full);
        for k in 0..MAX_LOD_LEVELS {
            let level = self.level(k);
            let step = level.map_or(0, |l| l.step);
            if step != self.steps[k] && !self.slots[k].is_empty() {
                // Planned with another step: every loaded block of the level goes, and nothing
                // of the new step is pending until they are gone (see `mark_released`).
                if self.made[k].is_some() || full {
                    self.unwanted[k] = self.slots[k].keys().map(|b| (*b, Cell::new(0))).collect();
                    self.clear_pending(k);
                    self.made[k] = None;
                }
                continue;
            }
            self.steps[k] = step;
            let Some(l) = level else {
                self.clear_pending(k);
                self.made[k] = None;
                continue;
            };
            let now = (l, self.carve(k));
            match self.made[k] {
                Some(was) if !full && was.0.step == l.step => self.resolve_level(k, was, now),
                _ => self.reset_level(k, now),
            }
            self.made[k] = Some(now);
        }
        self.resolved.clear();
        self.resolved.extend_from_slice(&self.centres);
        self.sync_hole_steps();
    }

    /// Registers builder `i` as one blocks wait for.
    pub fn add_builder(&mut self, i: u32) {
        if i < 64 {
            self.builders |= 1 << i;
            self.changes += 1;
            self.invalidate_holes();
        }
    }

    /// Builder `i` built (or unbuilt) a loaded block; ignored for a block not loaded.
    pub fn set_built(&mut self, i: u32, k: usize, b: ChunkPos, built: bool) {
        if i >= 64 || k >= MAX_LOD_LEVELS {
            return;
        }
        let Some(slot) = self.slots[k].get_mut(&b) else {
            return;
        };
        let was = slot.built;
        if built {
            slot.built |= 1 << i;
        } else {
            slot.built &= !(1 << i);
        }
        let now = slot.built;
        if now != was {
            self.changes += 1;
            let ready = now & self.builders == self.builders;
            // Only a change of readiness can change what is seen.
            if ready != (was & self.builders == self.builders) {
                self.hole_block(k, b, ready);
            }
        }
    }

    /// How many blocks of level `k` (index) are loaded.
    pub fn loaded_in(&self, k: usize) -> usize {
        self.slots.get(k).map_or(0, |m| m.len())
    }

    /// The loaded blocks of level `k` (index), row order.
    pub fn loaded(&self, k: usize) -> impl Iterator<Item = ChunkPos> + '_ {
        let mut v: Vec<ChunkPos> = self
            .slots
            .get(k)
            .into_iter()
            .flat_map(|m| m.keys().copied())
            .collect();
        v.sort_unstable();
        v.into_iter()
    }

    /// Blocks loaded over every level.
    pub fn loaded_len(&self) -> usize {
        self.slots.iter().map(FxHashMap::len).sum()
    }

    /// Whether any block is loaded.
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(FxHashMap::is_empty)
    }

    /// The wanted blocks of level `k` (index), row order, computed from scratch block by block
    /// over the foci's ranges (the plan keeps no wanted set: this costs the ranges' area).
    pub fn wanted(&self, k: usize) -> impl Iterator<Item = ChunkPos> + '_ {
        let mut v: Vec<ChunkPos> = self.compute_wanted(k).into_iter().collect();
        v.sort_unstable();
        v.into_iter()
    }

    /// A counter bumped on every load, release or build of a block.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The step level `k`'s (index) loaded blocks were planned with (0: none yet).
    pub fn planned_step(&self, k: usize) -> u32 {
        self.steps[k]
    }

    /// The step of level `k` (index) in force, if any.
    pub fn step(&self, k: usize) -> Option<u32> {
        self.level(k).map(|l| l.step)
    }

    /// Forgets every block (leaving a scene): returns them, by level then row order. Builders
    /// stay registered.
    pub fn clear(&mut self) -> Vec<(usize, ChunkPos)> {
        let mut out = Vec::new();
        for k in 0..MAX_LOD_LEVELS {
            out.extend(self.loaded(k).map(|b| (k, b)));
        }
        let (grid, bounds, builders) = (self.grid, self.bounds, self.builders);
        let (changes, defer_min, sort_max) = (self.changes + 1, self.defer_min, self.sort_max);
        *self = LodPlan::new(grid, bounds);
        self.builders = builders;
        self.changes = changes;
        (self.defer_min, self.sort_max) = (defer_min, sort_max);
        out
    }

    /// Replaces the loaded blocks (loading a save), none built: the builders report theirs
    /// again. `steps` are the steps they were planned with (a level's in force, unless the save
    /// was made while blocks of an older step were still loaded). The wanted sets are
    /// recomputed at the next resolution.
    pub fn restore(
        &mut self,
        radius: u32,
        levels: Lod,
        loaded: &[Vec<ChunkPos>],
        steps: [u32; MAX_LOD_LEVELS],
    ) {
        self.clear();
        self.radius = radius;
        self.levels = levels;
        for (k, blocks) in loaded.iter().enumerate().take(MAX_LOD_LEVELS) {
            self.steps[k] = steps[k];
            for b in blocks {
                let slot = Slot {
                    wanted: false,
                    built: 0,
                };
                self.slots[k].insert(*b, slot);
                self.unwanted[k].insert(*b, Cell::new(0));
            }
        }
        self.stale = true;
    }
}
