//! The LOD planner (SPEC §17): which coarse blocks each level wants around the non-ticket foci,
//! which to load next under `lodBudget`, which to release without leaving a hole, and what is
//! seen. Plain data over [`Grid`] math, host-free, so every rule is unit-tested alone; the kit
//! applies the plan and announces it.
//!
//! - A level-k block `(bx, bz)` of step `s` covers the chunks `[bx·s, (bx+1)·s) × [bz·s,
//!   (bz+1)·s)`; its ring distance from a focus chunk is the ring distance to its nearest chunk.
//! - The area of level 0 around a focus is its chunk square of `radius`; the area of level k is
//!   the union of its level-k blocks within `r_k` (steps are powers of two, so a level-k block
//!   holds whole level-(k−1) blocks and the area of level k holds the area of level k−1). A
//!   block is *wanted* when it is within `r_k` of a focus, not entirely inside the area of the
//!   finer level (over every focus), and overlaps the ground.
//! - Work is proportional to what changed: the wanted sets are recomputed only when a focus
//!   changes chunk or the levels change, and diffed against the last ones; pending and
//!   not-wanted-but-loaded blocks are kept as sets, so a steady tick looks at nothing.

use std::cell::Cell;
use std::collections::BTreeSet;

use std::collections::hash_map::Entry;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::grid::{Bounds, ChunkPos, Grid, Position};

use super::config::{Lod, LodLevel, MAX_LOD_LEVELS};

/// An inclusive rectangle of chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Area {
    x0: i64,
    x1: i64,
    z0: i64,
    z1: i64,
}

impl Area {
    const EMPTY: Area = Area {
        x0: 0,
        x1: -1,
        z0: 0,
        z1: -1,
    };

    fn contains(&self, o: &Area) -> bool {
        self.x0 <= o.x0 && o.x1 <= self.x1 && self.z0 <= o.z0 && o.z1 <= self.z1
    }

    /// The square of ring distance `r` around `c`.
    fn square(c: ChunkPos, r: i64) -> Area {
        Area {
            x0: c.x - r,
            x1: c.x + r,
            z0: c.z - r,
            z1: c.z + r,
        }
    }

    fn holds(&self, c: ChunkPos) -> bool {
        self.x0 <= c.x && c.x <= self.x1 && self.z0 <= c.z && c.z <= self.z1
    }

    fn meets(&self, o: &Area) -> bool {
        self.x0 <= o.x1 && o.x0 <= self.x1 && self.z0 <= o.z1 && o.z0 <= self.z1
    }

    /// The parts of `self` outside `o`: at most four disjoint rectangles (the strips a moved
    /// rectangle lost, or gained with the arguments swapped).
    fn minus(&self, o: &Area) -> [Option<Area>; 4] {
        let mut out = [None; 4];
        if !self.meets(o) {
            out[0] = Some(*self);
            return out;
        }
        if self.z0 < o.z0 {
            out[0] = Some(Area {
                z1: o.z0 - 1,
                ..*self
            });
        }
        if o.z1 < self.z1 {
            out[1] = Some(Area {
                z0: o.z1 + 1,
                ..*self
            });
        }
        let (z0, z1) = (self.z0.max(o.z0), self.z1.min(o.z1));
        if self.x0 < o.x0 {
            out[2] = Some(Area {
                x0: self.x0,
                x1: o.x0 - 1,
                z0,
                z1,
            });
        }
        if o.x1 < self.x1 {
            out[3] = Some(Area {
                x0: o.x1 + 1,
                x1: self.x1,
                z0,
                z1,
            });
        }
        out
    }

    fn intersect(&self, o: &Area) -> Option<Area> {
        self.meets(o).then(|| Area {
            x0: self.x0.max(o.x0),
            x1: self.x1.min(o.x1),
            z0: self.z0.max(o.z0),
            z1: self.z1.min(o.z1),
        })
    }

    /// Calls `f` with disjoint rectangles that together are `self` minus every one of `cut`.
    fn cut(self, cut: &[Area], f: &mut impl FnMut(Area)) {
        match cut.split_first() {
            None => f(self),
            Some((c, rest)) if self.meets(c) => {
                for piece in self.minus(c).into_iter().flatten() {
                    piece.cut(rest, f);
                }
            }
            Some((_, rest)) => self.cut(rest, f),
        }
    }

    /// The blocks of `step` lying whole inside this area of chunks, if any.
    fn inner_blocks(&self, step: u32) -> Option<Area> {
        let s = shift(step);
        let a = Area {
            x0: -((-self.x0) >> s),
            x1: ((self.x1 + 1) >> s) - 1,
            z0: -((-self.z0) >> s),
            z1: ((self.z1 + 1) >> s) - 1,
        };
        (a.x0 <= a.x1 && a.z0 <= a.z1).then_some(a)
    }

    /// The chunks of this area of blocks of `step`.
    fn chunks(&self, step: u32) -> Area {
        let s = i64::from(step);
        Area {
            x0: self.x0 * s,
            x1: self.x1 * s + s - 1,
            z0: self.z0 * s,
            z1: self.z1 * s + s - 1,
        }
    }

    /// The blocks of `step` holding a chunk of this area of chunks.
    fn blocks(&self, step: u32) -> Area {
        let s = shift(step);
        Area {
            x0: self.x0 >> s,
            x1: self.x1 >> s,
            z0: self.z0 >> s,
            z1: self.z1 >> s,
        }
    }
}

/// The rectangles where `old` and `new` differ (`a − b` and `b − a`; a side absent: the
/// other whole).
fn changed_areas(old: Option<Area>, new: Option<Area>) -> [Option<Area>; 8] {
    let mut out = [None; 8];
    match (old, new) {
        (Some(a), Some(b)) if a == b => {}
        (Some(a), Some(b)) => {
            out[..4].copy_from_slice(&a.minus(&b));
            out[4..].copy_from_slice(&b.minus(&a));
        }
        (a, b) => out[0] = a.or(b),
    }
    out
}

/// A key ordered as `b`'s row order (z, then x), cheaper to compare.
fn row_key(b: ChunkPos) -> u128 {
    let flip = |v: i64| (v as u64 ^ (1 << 63)) as u128;
    flip(b.z) << 64 | flip(b.x)
}

/// The block whose [`row_key`] is `r`.
fn from_row_key(r: u128) -> ChunkPos {
    let unflip = |v: u64| (v ^ (1 << 63)) as i64;
    ChunkPos::new(unflip(r as u64), unflip((r >> 64) as u64))
}

/// What `a` holds before and after, if it held something both times.
fn both(a: [Option<Area>; 2]) -> Option<Area> {
    a[0]?.intersect(&a[1]?)
}

/// The blocks of level `l` within its radius of the focus chunk `c` (a block's ring is at most
/// `r` exactly when it holds a chunk of the square of `r`): a rectangle of blocks.
fn range(c: ChunkPos, l: LodLevel) -> Area {
    Area::square(c, i64::from(l.radius)).blocks(l.step)
}

/// The chunks a block of `step` covers.
fn block_area(b: ChunkPos, step: u32) -> Area {
    Area {
        x0: b.x,
        x1: b.x,
        z0: b.z,
        z1: b.z,
    }
    .chunks(step)
}

/// The block of `step` that covers `chunk`. `step` is a power of two (a LOD step, or 1 for
/// chunks; debug-asserted): the floor division is a shift.
pub fn block_of(chunk: ChunkPos, step: u32) -> ChunkPos {
    let s = shift(step);
    ChunkPos::new(chunk.x >> s, chunk.z >> s)
}

/// `log2(step)`: steps are powers of two (SPEC §17, checked by the config), so dividing by one,
/// rounding down, is an arithmetic shift right by this (no division on the tick's paths).
fn shift(step: u32) -> u32 {
    debug_assert!(
        step.is_power_of_two(),
        "a step is a power of two, not {step}"
    );
    step.trailing_zeros()
}

/// Ring distance from `centre` to the nearest chunk of block `b` of `step` (0 when it covers
/// it).
pub fn block_ring(b: ChunkPos, step: u32, centre: ChunkPos) -> u64 {
    let a = block_area(b, step);
    let d = |c: i64, lo: i64, hi: i64| {
        if c < lo {
            lo.abs_diff(c)
        } else if c > hi {
            c.abs_diff(hi)
        } else {
            0
        }
    };
    d(centre.x, a.x0, a.x1).max(d(centre.z, a.z0, a.z1))
}

/// A loaded block: which builders built it (bit `i`: builder `i`).
type Bits = u64;

/// A block the plan knows of: wanted, loaded (and by which builders built), or both. One
/// hashed entry answers both questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    wanted: bool,
    built: Option<Bits>,
}

/// The LOD plan of every level.
#[derive(Debug, Clone)]
pub struct LodPlan {
    grid: Grid,
    bounds: Option<Bounds>,
    /// The chunk radius (level 0) and the levels in force.
    radius: u32,
    levels: Lod,
    /// The step the loaded blocks of each level were planned with (a level whose step changed
    /// or that was removed releases its blocks at once).
    steps: [u32; MAX_LOD_LEVELS],
    foci: Vec<Position>,
    centres: Vec<ChunkPos>,
    /// The sets below that are only looked up (or iterated into a total order) are hashed:
    /// their hash order cannot leak. What is listed is sorted into row order when listed.
    /// The wanted and the loaded blocks (while a level's step changes, the loaded ones are of
    /// the old step and the wanted ones of the new).
    blocks: [FxHashMap<ChunkPos, Slot>; MAX_LOD_LEVELS],
    /// How many of `blocks` are loaded, per level.
    loaded_len: [usize; MAX_LOD_LEVELS],
    /// Wanted and not loaded (taken from in the total order of `load`).
    pending: [FxHashSet<ChunkPos>; MAX_LOD_LEVELS],
    /// Loaded and not wanted: what the release rule looks at (its answer is sorted), each with
    /// the cell of its area that was not seen when it was last looked at (looked at first next
    /// time: see [`LodPlan::replaced`]).
    unwanted: [FxHashMap<ChunkPos, Cell<u32>>; MAX_LOD_LEVELS],
    /// Builders a block waits for before it is ready.
    builders: Bits,
    /// The wanted sets must be brought up to date (a focus changed chunk, the levels changed).
    stale: bool,
    /// They must be recomputed from scratch (the levels changed, a restore), not only where
    /// the foci moved.
    full: bool,
    /// The focus chunks the wanted sets were last resolved for.
    resolved: Vec<ChunkPos>,
    /// Bumped on every change of what is loaded or built (a cache key for the holes).
    changes: u64,
    /// Scratch for the loads' keys, reused every tick.
    keyed: Vec<(u64, u128)>,
    /// `world.lod.holes`, kept up to date rather than recounted: the hole chunks, the players'
    /// chunks and the last level's radius they were counted for, and whether they are valid
    /// (a change of levels, steps, builders, a clear or restore recounts from scratch). Ordered,
    /// so forgetting a region costs the holes held, not a table's capacity.
    hole_set: BTreeSet<ChunkPos>,
    hole_centres: Vec<ChunkPos>,
    hole_radius: i64,
    holes_valid: bool,
    /// Blocks (step, block, ready then) whose readiness changed since the holes were last
    /// counted.
    block_log: Vec<(u32, ChunkPos, bool)>,
    /// Scratch for the players' chunks and their squares of the last level's radius.
    scratch: Vec<ChunkPos>,
    squares: Vec<Area>,
    /// Scratch for the areas a level carves around the foci.
    carved: Vec<Area>,
    /// Scratch for each focus's range and area before and after a move, and for what the
    /// other foci hold of them.
    spans: Vec<Spans>,
    held: Vec<Area>,
    /// Scratch for the foci's ranges now.
    ranges: Vec<Area>,
}

/// A focus's range (blocks) and finer area (chunks) at one level, before and after the foci
/// moved (`None`: the focus was not there).
#[derive(Debug, Clone, Copy)]
struct Spans {
    moved: bool,
    range: [Option<Area>; 2],
    area: [Option<Area>; 2],
}

/// What a level's wanted test reads of the foci now: the areas they carve (chunks) and their
/// ranges (blocks within `r_k`: those holding a chunk of the square of `r_k`).
struct Now<'a> {
    areas: &'a [Area],
    /// The side of the finer grid the areas are aligned to (chunks).
    unit: i64,
    ranges: &'a [Area],
}

/// The release rule tests the rings of up to this many foci by rectangles.
const MAX_FOCI_FAST: usize = 8;

/// The memo of a not-wanted block that `due` listed because it is replaced (see
/// [`LodPlan::mark_released`]); otherwise the memo is a cell of the block's area.
const REPLACED: u32 = u32::MAX;

/// Blocks of at most this step (4 chunks at step 2) have their holes counted again chunk by
/// chunk ([`LodPlan::recount_chunk`]); coarser ones by the walk down the levels, which skips
/// what a ready finer block covers.
const SMALL_BLOCK: u32 = 2;

/// The most block changes kept between two hole counts before a full recount.
const BLOCK_LOG_MAX: usize = 1 << 16;

impl LodPlan {
    /// No levels, nothing loaded.
    pub fn new(grid: Grid, bounds: Option<Bounds>) -> Self {
        LodPlan {
            grid,
            bounds,
            radius: 0,
            levels: Lod::default(),
            steps: [0; MAX_LOD_LEVELS],
            foci: Vec::new(),
            centres: Vec::new(),
            blocks: Default::default(),
            loaded_len: [0; MAX_LOD_LEVELS],
            pending: Default::default(),
            unwanted: Default::default(),
            builders: 0,
            stale: true,
            full: true,
            resolved: Vec::new(),
            changes: 0,
            keyed: Vec::new(),
            hole_set: BTreeSet::new(),
            hole_centres: Vec::new(),
            hole_radius: -1,
            holes_valid: false,
            block_log: Vec::new(),
            scratch: Vec::new(),
            squares: Vec::new(),
            carved: Vec::new(),
            spans: Vec::new(),
            held: Vec::new(),
            ranges: Vec::new(),
        }
    }

    /// Block `b` of `step` may have become ready (`ready`) or unready: the holes under it are
    /// counted again at the next count.
    fn log_block(&mut self, step: u32, b: ChunkPos, ready: bool) {
        if !self.holes_valid {
            return;
        }
        if self.block_log.len() < BLOCK_LOG_MAX {
            self.block_log.push((step, b, ready));
        } else {
            self.invalidate_holes();
        }
    }

    /// The next hole count starts from scratch.
    pub fn invalidate_holes(&mut self) {
        self.holes_valid = false;
        self.block_log.clear();
    }

    fn level(&self, k: usize) -> Option<LodLevel> {
        self.levels.levels().get(k).copied()
    }

    /// Level `k`, if its loaded blocks are of the step in force (none of an old step left).
    fn in_force(&self, k: usize) -> Option<LodLevel> {
        self.level(k).filter(|l| l.step == self.steps[k])
    }

    /// Sets the chunk radius and the levels in force.
    pub fn set_levels(&mut self, radius: u32, levels: Lod) {
        if self.radius == radius && self.levels == levels {
            return;
        }
        self.radius = radius;
        self.levels = levels;
        self.stale = true;
        self.full = true;
        self.invalidate_holes();
    }

    /// Sets the non-ticket foci (their positions rank the loads; their chunks decide what is
    /// wanted, recomputed only when one changed chunk).
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
        out.extend(self.centres.iter().map(|c| self.area(k, *c)));
    }

    /// The side (chunks) of the grid level `k`'s carved areas are aligned to: the finer
    /// level's blocks (chunks for the first level).
    fn unit(&self, k: usize) -> i64 {
        if k == 0 {
            1
        } else {
            i64::from(self.level(k - 1).map_or(1, |l| l.step))
        }
    }

    /// Whether every chunk of `a` lies in one of `areas`, the areas a level carves around the
    /// foci ([`LodPlan::areas_into`]), aligned to cells of `unit` chunks ([`LodPlan::unit`]).
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

    /// The area level `k` carves out of the next level around the focus chunk `c`, exactly as
    /// SPEC §17 says: the chunk square of `radius` (k = 0), or the level-k blocks within `r_k`.
    /// (No margin: a block is wanted as soon as one chunk it covers lies outside. With
    /// `commitLatency` 2 and a focus at 0.75 chunk a tick, the block replacing a trailing chunk
    /// is then not built before that chunk goes, a 16-chunk hole; docs/lod.md recommends
    /// `commitLatency` 1 for such drives.)
    fn area(&self, k: usize, c: ChunkPos) -> Area {
        if k == 0 {
            return Area::square(c, i64::from(self.radius));
        }
        let l = self.level(k - 1).expect("a level in force");
        range(c, l).chunks(l.step)
    }

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

    /// The wanted blocks of level `k` now.
    fn compute_wanted(&self, k: usize) -> FxHashSet<ChunkPos> {
        let mut out = FxHashSet::default();
        let Some(l) = self.level(k) else {
            return out;
        };
        let mut areas = Vec::new();
        self.areas_into(k, &mut areas);
        for c in &self.centres {
            let r = range(*c, l);
            for bz in r.z0..=r.z1 {
                for bx in r.x0..=r.x1 {
                    let b = ChunkPos::new(bx, bz);
                    if out.contains(&b) {
                        continue;
                    }
                    if !Self::inside_area(&areas, self.unit(k), block_area(b, l.step))
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
    /// changed): the difference moves blocks between pending and not-wanted.
    pub fn resolve(&mut self) {
        if !self.stale {
            return;
        }
        self.stale = false;
        if !self.full {
            self.resolve_moved();
            return;
        }
        self.full = false;
        self.resolved.clear();
        self.resolved.extend_from_slice(&self.centres);
        for k in 0..MAX_LOD_LEVELS {
            let step = self.level(k).map_or(0, |l| l.step);
            if step != self.steps[k] && self.loaded_len[k] > 0 {
                // Planned with another step: every loaded block of the level goes.
                self.unwanted[k] = self.blocks[k]
                    .iter()
                    .filter(|(_, s)| s.built.is_some())
                    .map(|(b, _)| (*b, Cell::new(0)))
                    .collect();
                self.pending[k].clear();
            }
            if self.loaded_len[k] == 0 && self.steps[k] != step {
                self.steps[k] = step;
                self.invalidate_holes();
            }
            // Loaded blocks of an old step still there: nothing of the new step is pending
            // until they are gone (see `mark_released`).
            let in_force = self.steps[k] == step;
            let new = self.compute_wanted(k);
            let gone: Vec<ChunkPos> = self.blocks[k]
                .iter()
                .filter(|(b, s)| s.wanted && !new.contains(b))
                .map(|(b, _)| *b)
                .collect();
            for b in gone {
                self.want(k, b, false, in_force);
            }
            for b in new {
                self.want(k, b, true, in_force);
            }
            if in_force {
                // Made again from the slots, not only diffed: a level whose step changed and
                // changed back before its loaded blocks went has blocks wanted under both
                // steps, which no diff flips, though they were neither pending nor kept.
                let slots = &self.blocks[k];
                self.pending[k] = slots
                    .iter()
                    .filter(|(_, s)| s.wanted && s.built.is_none())
                    .map(|(b, _)| *b)
                    .collect();
                self.unwanted[k] = slots
                    .iter()
                    .filter(|(_, s)| !s.wanted && s.built.is_some())
                    .map(|(b, _)| (*b, Cell::new(0)))
                    .collect();
            }
        }
    }

    /// Block `b` of level `k` becomes wanted (`want`) or not: a change moves it between
    /// pending and not-wanted, as the full diff of the wanted sets would (unless `in_force`
    /// is false: blocks of an old step are still loaded, see `mark_released`).
    fn want(&mut self, k: usize, b: ChunkPos, want: bool, in_force: bool) {
        let loaded = match self.blocks[k].entry(b) {
            Entry::Occupied(mut e) => {
                if e.get().wanted == want {
                    return;
                }
                let loaded = e.get().built.is_some();
                if want || loaded {
                    e.get_mut().wanted = want;
                } else {
                    e.remove();
                }
                loaded
            }
            Entry::Vacant(e) => {
                if !want {
                    return;
                }
                e.insert(Slot {
                    wanted: true,
                    built: None,
                });
                false
            }
        };
        if !in_force {
            return;
        }
        match (want, loaded) {
            (true, true) => {
                self.unwanted[k].remove(&b);
            }
            (true, false) => {
                self.pending[k].insert(b);
            }
            (false, true) => {
                self.unwanted[k].insert(b, Cell::new(0));
            }
            (false, false) => {
                self.pending[k].remove(&b);
            }
        }
    }

    /// The incremental resolution (the levels unchanged, some foci moved, came or went): only
    /// the blocks where a moved focus's range or finer area gained or lost a strip can change
    /// whether they are wanted (the wanted test reads the foci only through whether a block
    /// lies in a focus's range and whether each of its chunks lies in a focus's finer area), so
    /// only those are tested again, and each one moves between wanted, pending and not-wanted
    /// exactly as the full diff would move it.
    ///
    /// A block of a range strip that another focus holds in its range both before and after
    /// is in range either way, and one of an area strip that another focus's area holds whole
    /// both before and after is carved either way: neither part of the test changed through
    /// this strip, and a change of the other part puts the block in a strip where it is not
    /// held so (a focus holding it stably would keep that part unchanged). Those blocks, a
    /// rectangle per other focus, are cut out of the strip. (A player and its look-ahead focus
    /// sweep mostly each other's strips.)
    fn resolve_moved(&mut self) {
        let n = self.resolved.len().max(self.centres.len());
        let mut carved = std::mem::take(&mut self.carved);
        let mut spans = std::mem::take(&mut self.spans);
        let mut held = std::mem::take(&mut self.held);
        let mut ranges = std::mem::take(&mut self.ranges);
        for k in 0..MAX_LOD_LEVELS {
            let Some(l) = self.level(k) else {
                continue;
            };
            self.areas_into(k, &mut carved);
            // Each focus's range (blocks) and finer area (chunks), before and after.
            spans.clear();
            spans.extend((0..n).map(|i| {
                let (old, new) = (self.resolved.get(i).copied(), self.centres.get(i).copied());
                Spans {
                    moved: old != new,
                    range: [old.map(|c| range(c, l)), new.map(|c| range(c, l))],
                    area: [old.map(|c| self.area(k, c)), new.map(|c| self.area(k, c))],
                }
            }));
            ranges.clear();
            ranges.extend(spans.iter().filter_map(|s| s.range[1]));
            let now = Now {
                areas: &carved,
                unit: self.unit(k),
                ranges: &ranges,
            };
            for (i, span) in spans.iter().enumerate() {
                if !span.moved {
                    continue;
                }
                // The blocks the other foci hold in range, or carve whole, before and after.
                let others = || spans.iter().enumerate().filter(move |(j, _)| *j != i);
                held.clear();
                held.extend(others().filter_map(|(_, s)| both(s.range)));
                let strips = changed_areas(span.range[0], span.range[1]);
                for r in strips.into_iter().flatten() {
                    Area::cut(r, &held, &mut |r| self.retest_all(k, l, &now, r));
                }
                held.clear();
                held.extend(others().filter_map(|(_, s)| both(s.area)?.inner_blocks(l.step)));
                let strips = changed_areas(span.area[0], span.area[1]);
                for r in strips.into_iter().flatten() {
                    let r = r.blocks(l.step);
                    Area::cut(r, &held, &mut |r| self.retest_all(k, l, &now, r));
                }
            }
        }
        self.carved = carved;
        self.spans = spans;
        self.held = held;
        self.ranges = ranges;
        self.resolved.clear();
        self.resolved.extend_from_slice(&self.centres);
    }

    /// Tests every block of `r` (blocks of level `k`) again.
    fn retest_all(&mut self, k: usize, l: LodLevel, now: &Now<'_>, r: Area) {
        let in_force = self.steps[k] == l.step;
        for bz in r.z0..=r.z1 {
            for bx in r.x0..=r.x1 {
                let b = ChunkPos::new(bx, bz);
                // SPEC §17's test, one block: within `r_k` of a focus, not inside the finer
                // area, in the ground.
                let want = now.ranges.iter().any(|r| r.holds(b))
                    && !Self::inside_area(now.areas, now.unit, block_area(b, l.step))
                    && self.overlaps_ground(b, l.step);
                self.want(k, b, want, in_force);
            }
        }
    }

    /// The squared distance from the nearest focus within level `l`'s radius of `b` to its
    /// centre (exact f64, as SPEC §1), the foci's ranges (blocks within the radius) being
    /// `ranges`, in focus order.
    fn key(&self, l: LodLevel, ranges: &[Area], b: ChunkPos) -> f64 {
        let s = f64::from(l.step);
        let size = self.grid.size();
        let cx = (b.x as f64 * s + s * 0.5) * size;
        let cz = (b.z as f64 * s + s * 0.5) * size;
        let mut best = f64::INFINITY;
        for (p, range) in self.foci.iter().zip(ranges) {
            if range.holds(b) {
                let (dx, dz) = (cx - p.x, cz - p.z);
                let d = dx * dx + dz * dz;
                if d < best {
                    best = d;
                }
            }
        }
        best
    }

    /// Loads up to `budget` pending blocks, in order (level ascending, the least squared
    /// distance from a focus to the block's centre, z, x), into `out` as `(level index, block)`.
    pub fn load(&mut self, budget: usize, out: &mut Vec<(usize, ChunkPos)>) {
        let mut left = budget;
        for k in 0..MAX_LOD_LEVELS {
            if left == 0 {
                break;
            }
            if self.pending[k].is_empty() {
                continue;
            }
            let mut keyed = std::mem::take(&mut self.keyed);
            keyed.clear();
            let l = self.level(k).expect("a level in force");
            let mut ranges = std::mem::take(&mut self.ranges);
            ranges.clear();
            ranges.extend(self.centres.iter().map(|c| range(*c, l)));
            // The distance, then row order, as one key made once per block. A squared distance
            // is never negative (nor NaN), so its bits are ordered as it is.
            keyed.extend(
                self.pending[k]
                    .iter()
                    .map(|b| (self.key(l, &ranges, *b).to_bits(), row_key(*b))),
            );
            self.ranges = ranges;
            if keyed.len() > left {
                keyed.select_nth_unstable(left - 1);
                keyed.truncate(left);
            }
            keyed.sort_unstable();
            let step = self.steps[k];
            for b in keyed.iter().map(|&(_, r)| from_row_key(r)) {
                self.pending[k].remove(&b);
                // A pending block is wanted: its slot is there.
                if let Some(slot) = self.blocks[k].get_mut(&b) {
                    slot.built = Some(0);
                }
                self.loaded_len[k] += 1;
                self.changes += 1;
                if self.builders == 0 {
                    // Ready as it loads. (Waiting for a builder, it is as unready as before:
                    // nothing for the holes to look at.)
                    self.log_block(step, b, true);
                }
                out.push((k, b));
                left -= 1;
            }
            self.keyed = keyed;
            // Iterating a hashed set costs its capacity: after a fill (entering a scene, a
            // teleport) give the room back.
            let p = &mut self.pending[k];
            if p.capacity() > 8 * (p.len() + 16) {
                p.shrink_to(2 * p.len());
            }
        }
    }

    /// Whether a loaded block is ready: built by every builder blocks wait for.
    pub fn is_ready(&self, k: usize, b: ChunkPos) -> bool {
        self.blocks[k]
            .get(&b)
            .and_then(|s| s.built)
            .is_some_and(|bits| bits & self.builders == self.builders)
    }

    /// Whether `chunk` is seen by a ready chunk or a ready block of a level below `k` (index).
    fn seen_below(
        &self,
        k: usize,
        chunk: ChunkPos,
        chunk_ready: &impl Fn(ChunkPos) -> bool,
    ) -> bool {
        chunk_ready(chunk)
            || (0..k)
                .any(|j| self.steps[j] != 0 && self.is_ready(j, block_of(chunk, self.steps[j])))
    }

    /// The release rule (no holes while degrading): the loaded blocks no longer wanted that
    /// may go, by level then row order, as `(level index, block)`. One goes once every chunk
    /// of its area inside the ground is seen by a ready chunk or a ready finer block (what
    /// replaces it), or once it is beyond `r_k + 1` of every focus; one in between (beyond
    /// `r_k`, within `r_k + 1`) stays. A level removed, or whose step changed, goes at once.
    /// Without a focus nothing goes.
    pub fn due(&self, chunk_ready: impl Fn(ChunkPos) -> bool, out: &mut Vec<(usize, ChunkPos)>) {
        if self.centres.is_empty() {
            return;
        }
        let mut ranges = [(Area::EMPTY, Area::EMPTY); MAX_FOCI_FAST];
        for k in 0..MAX_LOD_LEVELS {
            let start = out.len();
            let level = self.in_force(k);
            // The blocks within `r_k` and within `r_k + 1` of each focus, as rectangles (a
            // block's ring is at most `r` exactly when it lies in the blocks of the chunk
            // square of `r`), for up to MAX_FOCI_FAST foci; more, ring by ring.
            let fast = self.centres.len() <= MAX_FOCI_FAST;
            if let (Some(l), true) = (level, fast) {
                for (pair, c) in ranges.iter_mut().zip(&self.centres) {
                    let r = i64::from(l.radius);
                    *pair = (range(*c, l), Area::square(*c, r + 1).blocks(l.step));
                }
            }
            let ranges = &ranges[..self.centres.len().min(MAX_FOCI_FAST)];
            for (b, memo) in &self.unwanted[k] {
                let Some(l) = level else {
                    // (The levels changed: the holes are counted again from scratch.)
                    out.push((k, *b));
                    continue;
                };
                let (within, near) = if fast {
                    (
                        ranges.iter().any(|(r, _)| r.holds(*b)),
                        ranges.iter().any(|(_, r1)| r1.holds(*b)),
                    )
                } else {
                    let ring = self
                        .centres
                        .iter()
                        .map(|c| block_ring(*b, l.step, *c))
                        .min();
                    let r = u64::from(l.radius);
                    (ring <= Some(r), ring <= Some(r + 1))
                };
                let go = if !near {
                    memo.set(0);
                    true
                } else if !within {
                    false // the hysteresis band, as chunks have
                } else if self.replaced(k, *b, l.step, memo, &chunk_ready) {
                    memo.set(REPLACED);
                    true
                } else {
                    false
                };
                if go {
                    out.push((k, *b));
                }
            }
            // The hashed set's order must not leak: level by level, row order.
            out[start..].sort_unstable(); // one level: by block, row order
        }
    }

    /// Whether every chunk of block `b` inside the ground is seen by a ready chunk or a ready
    /// block finer than level `k`. Looked at cell by cell, a cell being a block of the next finer
    /// level (one lookup answers for the chunks a ready one covers), and starting from the cell
    /// that was not seen last time (`memo`, set to the one not seen now): a block waiting for its
    /// replacement costs a lookup or two a tick, not one per chunk of its area.
    fn replaced(
        &self,
        k: usize,
        b: ChunkPos,
        step: u32,
        memo: &Cell<u32>,
        chunk_ready: &impl Fn(ChunkPos) -> bool,
    ) -> bool {
        let a = block_area(b, step);
        // The finer level's step in force, when its blocks tile this one (else chunk by chunk).
        let unit = match k.checked_sub(1).map(|j| self.steps[j]) {
            Some(u) if u > 1 && u < step && step.is_multiple_of(u) => u,
            _ => 1,
        };
        // Below the cell: the levels finer than the cell's (all below `k` when cells are chunks).
        let below = if unit > 1 { k - 1 } else { k };
        // Powers of two: `side` and `cells` too, so `%` and `/` by them are a mask and a shift.
        let side = step >> shift(unit);
        let cells = side * side;
        let first = memo.get() & (cells - 1);
        let u = i64::from(unit);
        for i in 0..cells {
            let cell = (first + i) & (cells - 1);
            let (x0, z0) = (
                a.x0 + i64::from(cell & (side - 1)) * u,
                a.z0 + i64::from(cell >> shift(side)) * u,
            );
            if unit > 1 && self.is_ready(k - 1, block_of(ChunkPos::new(x0, z0), unit)) {
                continue;
            }
            for z in z0..z0 + u {
                for x in x0..x0 + u {
                    let c = ChunkPos::new(x, z);
                    if self.grid.overlaps(c, self.bounds.as_ref())
                        && !self.seen_below(below, c, chunk_ready)
                    {
                        memo.set(cell);
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Records a release. A block `due` has just listed because what replaces it is ready
    /// leaves no hole (every chunk of it in the ground is seen by something else), so the hole
    /// count does not look at it again; a change since to what replaces it is logged itself.
    pub fn mark_released(&mut self, k: usize, b: ChunkPos) {
        let Entry::Occupied(mut e) = self.blocks[k].entry(b) else {
            return;
        };
        if e.get().built.is_none() {
            return;
        }
        let wanted = e.get().wanted;
        let was_ready = e
            .get()
            .built
            .is_some_and(|bits| bits & self.builders == self.builders);
        if wanted {
            e.get_mut().built = None;
        } else {
            e.remove();
        }
        self.loaded_len[k] -= 1;
        self.changes += 1;
        let replaced = self.unwanted[k]
            .remove(&b)
            .is_some_and(|memo| memo.get() == REPLACED);
        if was_ready && !replaced {
            self.log_block(self.steps[k], b, false);
        }
        if wanted && self.in_force(k).is_some() {
            // (Of a step no longer in force, nothing is pending until the last block goes.)
            self.pending[k].insert(b);
        }
        if self.loaded_len[k] == 0 {
            let step = self.level(k).map_or(0, |l| l.step);
            if self.steps[k] != step {
                // The last block of the old step is gone: the level starts over (every block
                // it knows now is wanted and not loaded).
                self.steps[k] = step;
                self.invalidate_holes();
                self.pending[k] = self.blocks[k].keys().copied().collect();
            }
        }
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
        if let Some(bits) = self.blocks[k].get_mut(&b).and_then(|s| s.built.as_mut()) {
            let was = *bits;
            if built {
                *bits |= 1 << i;
            } else {
                *bits &= !(1 << i);
            }
            if *bits != was {
                let ready = *bits & self.builders == self.builders;
                self.changes += 1;
                // Only a change of readiness can change what is seen.
                if ready != (was & self.builders == self.builders) {
                    self.log_block(self.steps[k], b, ready);
                }
            }
        }
    }

    /// The loaded blocks of level `k` (index), row order.
    pub fn loaded(&self, k: usize) -> impl Iterator<Item = ChunkPos> + '_ {
        self.listed(k, |s| s.built.is_some())
    }

    /// The blocks of level `k` (index) whose slot passes `test`, row order.
    fn listed(&self, k: usize, test: impl Fn(&Slot) -> bool) -> std::vec::IntoIter<ChunkPos> {
        let mut v: Vec<ChunkPos> = self
            .blocks
            .get(k)
            .into_iter()
            .flat_map(|m| m.iter().filter(|(_, s)| test(s)).map(|(b, _)| *b))
            .collect();
        v.sort_unstable();
        v.into_iter()
    }

    /// Blocks loaded over every level.
    pub fn loaded_len(&self) -> usize {
        self.loaded_len.iter().sum()
    }

    /// Whether any block is loaded.
    pub fn is_empty(&self) -> bool {
        self.loaded_len.iter().all(|n| *n == 0)
    }

    /// The wanted blocks of level `k` (index), row order.
    pub fn wanted(&self, k: usize) -> impl Iterator<Item = ChunkPos> + '_ {
        self.listed(k, |s| s.wanted)
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

    /// `world.lod.holes`: the chunks inside the ground within `r_last` of one of `foci` (the
    /// players', not predicted) that are seen by nothing (no ready chunk, no ready block of any
    /// level covers them). Walked from the coarsest level down, descending only into blocks
    /// that are not ready.
    pub fn holes(&self, foci: &[Position], chunk_ready: impl Fn(ChunkPos) -> bool) -> usize {
        let n = self.levels.levels().len();
        let Some(last) = self.level(n.wrapping_sub(1)) else {
            return 0;
        };
        let centres: Vec<ChunkPos> = foci.iter().map(|p| self.grid.chunk_of(*p)).collect();
        if centres.is_empty() {
            return 0;
        }
        let r = i64::from(last.radius);
        let squares: Vec<Area> = centres.iter().map(|c| Area::square(*c, r)).collect();
        if let [c] = centres[..] {
            // One focus: its blocks are a rectangle, each once.
            let top = range(c, last);
            let mut holes = 0;
            for bz in top.z0..=top.z1 {
                for bx in top.x0..=top.x1 {
                    holes += self.holes_in(n - 1, ChunkPos::new(bx, bz), &squares, &chunk_ready);
                }
            }
            return holes;
        }
        let mut top: BTreeSet<ChunkPos> = BTreeSet::new();
        for c in &centres {
            let r = range(*c, last);
            for bz in r.z0..=r.z1 {
                for bx in r.x0..=r.x1 {
                    top.insert(ChunkPos::new(bx, bz));
                }
            }
        }
        let mut holes = 0;
        for b in top {
            holes += self.holes_in(n - 1, b, &squares, &chunk_ready);
        }
        holes
    }

    fn holes_in(
        &self,
        k: usize,
        b: ChunkPos,
        squares: &[Area],
        chunk_ready: &impl Fn(ChunkPos) -> bool,
    ) -> usize {
        let step = self.level(k).expect("a level in force").step;
        let a = block_area(b, step);
        if !squares
            .iter()
            .any(|s| s.x0 <= a.x1 && a.x0 <= s.x1 && s.z0 <= a.z1 && a.z0 <= s.z1)
        {
            return 0;
        }
        if self.steps[k] == step && self.is_ready(k, b) {
            return 0;
        }
        if k == 0 {
            let mut holes = 0;
            for z in a.z0..=a.z1 {
                for x in a.x0..=a.x1 {
                    let c = ChunkPos::new(x, z);
                    if squares
                        .iter()
                        .any(|s| s.x0 <= x && x <= s.x1 && s.z0 <= z && z <= s.z1)
                        && self.grid.overlaps(c, self.bounds.as_ref())
                        && !chunk_ready(c)
                    {
                        holes += 1;
                    }
                }
            }
            return holes;
        }
        let finer = self.level(k - 1).expect("a level in force").step;
        let n = i64::from(step >> shift(finer));
        let mut holes = 0;
        for dz in 0..n {
            for dx in 0..n {
                let sub = ChunkPos::new(b.x * n + dx, b.z * n + dz);
                holes += self.holes_in(k - 1, sub, squares, chunk_ready);
            }
        }
        holes
    }

    /// `world.lod.holes` kept up to date (SPEC §17; the same number as [`LodPlan::holes`]):
    /// `changed` lists the chunks whose readiness may have changed since the last call (each
    /// with whether that change can only have made it ready) and `complete` says whether that list is the whole story (else, and after any change of
    /// levels, steps, builders, a clear or a restore, everything is counted again). Otherwise
    /// only the strips the players' squares of `r_last` gained or lost, the changed chunks
    /// and the chunks under blocks loaded, released or built since are counted again, each
    /// region walked from the coarsest level down as the full count is.
    pub fn update_holes(
        &mut self,
        foci: &[Position],
        chunk_ready: impl Fn(ChunkPos) -> bool,
        changed: &[(ChunkPos, bool)],
        complete: bool,
    ) -> usize {
        let n = self.levels.levels().len();
        let Some(last) = self.level(n.wrapping_sub(1)) else {
            self.hole_set.clear();
            self.invalidate_holes();
            return 0;
        };
        let r = i64::from(last.radius);
        let mut centres = std::mem::take(&mut self.scratch);
        centres.clear();
        centres.extend(foci.iter().map(|p| self.grid.chunk_of(*p)));
        let mut squares = std::mem::take(&mut self.squares);
        squares.clear();
        squares.extend(centres.iter().map(|c| Area::square(*c, r)));
        let squares_now = &squares[..];
        let mut set = std::mem::take(&mut self.hole_set);
        if !self.holes_valid || !complete || self.hole_radius != r {
            set.clear();
            for a in squares_now {
                self.recount(&mut set, *a, squares_now, &chunk_ready);
            }
            self.block_log.clear();
            self.holes_valid = true;
            self.hole_radius = r;
        } else {
            let m = self.hole_centres.len().max(centres.len());
            for i in 0..m {
                let old = self.hole_centres.get(i).map(|c| Area::square(*c, r));
                let new = squares_now.get(i).copied();
                for a in changed_areas(old, new).into_iter().flatten() {
                    self.recount(&mut set, a, squares_now, &chunk_ready);
                }
            }
            for &(c, gained) in changed {
                if gained && set.is_empty() {
                    // It can only have become ready: it took no hole away (there are none) and
                    // made none. (Unready again since, it is listed again, later.)
                    continue;
                }
                self.recount_chunk(&mut set, c, squares_now, &chunk_ready);
            }
            let log = std::mem::take(&mut self.block_log);
            for &(step, b, ready) in &log {
                if ready && set.is_empty() {
                    // It became ready: it can only have taken holes away, and there are none.
                    // (Unready again since, it was logged again, later.)
                    continue;
                }
                let a = block_area(b, step);
                if !squares_now.iter().any(|s| s.meets(&a)) {
                    // Outside every player's square (a block released out of range): no
                    // hole there, and none held (the squares' strips were counted above).
                    continue;
                }
                if self.covered(a, step) {
                    // Under a ready block now (its own or a coarser one): no hole there.
                    Self::forget(&mut set, a);
                } else if step <= SMALL_BLOCK {
                    for z in a.z0..=a.z1 {
                        for x in a.x0..=a.x1 {
                            let c = ChunkPos::new(x, z);
                            self.recount_chunk(&mut set, c, squares_now, &chunk_ready);
                        }
                    }
                } else {
                    self.recount(&mut set, a, squares_now, &chunk_ready);
                }
            }
            self.block_log = log;
            self.block_log.clear();
        }
        self.squares = squares;
        self.hole_centres.clear();
        self.hole_centres.extend_from_slice(&centres);
        self.scratch = centres;
        self.hole_set = set;
        self.hole_set.len()
    }

    /// Whether a ready block of a step in force covers the whole of `a`, an area aligned to
    /// blocks of `step` (a block of `step`, or a coarser one holding it: steps are powers of
    /// two, so a coarser block holds the finer blocks it meets whole).
    fn covered(&self, a: Area, step: u32) -> bool {
        let corner = ChunkPos::new(a.x0, a.z0);
        self.levels.levels().iter().enumerate().any(|(k, l)| {
            l.step >= step && self.steps[k] == l.step && self.is_ready(k, block_of(corner, l.step))
        })
    }

    /// Forgets the holes `set` holds in region `a`: in row order from its first corner to its
    /// last, visiting only the holes of the rows `a` spans.
    fn forget(set: &mut BTreeSet<ChunkPos>, a: Area) {
        if set.is_empty() {
            return;
        }
        let (mut from, to) = (ChunkPos::new(a.x0, a.z0), ChunkPos::new(a.x1, a.z1));
        while let Some(c) = set.range(from..=to).find(|c| a.holds(**c)).copied() {
            set.remove(&c);
            from = c;
        }
    }

    /// Counts chunk `c` again into `set`, as [`LodPlan::recount`] of its one-chunk region
    /// would: a hole when it lies in a player's square of `r` and in the ground, is not ready
    /// and no ready block of any level (of the step in force) covers it. Direct, without the
    /// walk down the levels: the readiness of one chunk and one block per level.
    fn recount_chunk(
        &self,
        set: &mut BTreeSet<ChunkPos>,
        c: ChunkPos,
        squares: &[Area],
        chunk_ready: &impl Fn(ChunkPos) -> bool,
    ) {
        // (A changed chunk is mostly one just released, under a ready block: the blocks first.)
        let hole = squares.iter().any(|s| s.holds(c))
            && self.grid.overlaps(c, self.bounds.as_ref())
            && !self
                .levels
                .levels()
                .iter()
                .enumerate()
                .any(|(k, l)| self.steps[k] == l.step && self.is_ready(k, block_of(c, l.step)))
            && !chunk_ready(c);
        if hole {
            set.insert(c);
        } else if !set.is_empty() {
            set.remove(&c);
        }
    }

    /// Counts the holes of region `a` (chunks) again into `set`: forgets those it held there,
    /// then walks the last level's blocks over `a` down to what is not ready.
    fn recount(
        &self,
        set: &mut BTreeSet<ChunkPos>,
        a: Area,
        squares: &[Area],
        chunk_ready: &impl Fn(ChunkPos) -> bool,
    ) {
        Self::forget(set, a);
        if !squares.iter().any(|s| s.meets(&a)) {
            return; // outside every player's square (a strip it lost): nothing to count
        }
        let k = self.levels.levels().len() - 1;
        let top = a.blocks(self.level(k).expect("a level in force").step);
        for bz in top.z0..=top.z1 {
            for bx in top.x0..=top.x1 {
                self.walk(set, k, ChunkPos::new(bx, bz), &a, squares, chunk_ready);
            }
        }
    }

    /// The holes of block `b` of level `k` inside region `a` and the players' squares, into
    /// `set`: nothing under a ready block, else its finer blocks, else its chunks.
    fn walk(
        &self,
        set: &mut BTreeSet<ChunkPos>,
        k: usize,
        b: ChunkPos,
        a: &Area,
        squares: &[Area],
        chunk_ready: &impl Fn(ChunkPos) -> bool,
    ) {
        let step = self.level(k).expect("a level in force").step;
        let area = block_area(b, step);
        if !area.meets(a) || !squares.iter().any(|s| s.meets(&area)) {
            return;
        }
        if self.steps[k] == step && self.is_ready(k, b) {
            return;
        }
        if k == 0 {
            for z in area.z0.max(a.z0)..=area.z1.min(a.z1) {
                for x in area.x0.max(a.x0)..=area.x1.min(a.x1) {
                    let c = ChunkPos::new(x, z);
                    if squares.iter().any(|s| s.holds(c))
                        && self.grid.overlaps(c, self.bounds.as_ref())
                        && !chunk_ready(c)
                    {
                        set.insert(c);
                    }
                }
            }
            return;
        }
        // The finer blocks of `b` that meet `a`, only.
        let finer = self.level(k - 1).expect("a level in force").step;
        let Area { x0, x1, z0, z1 } = Area {
            x0: area.x0.max(a.x0),
            x1: area.x1.min(a.x1),
            z0: area.z0.max(a.z0),
            z1: area.z1.min(a.z1),
        }
        .blocks(finer);
        for z in z0..=z1 {
            for x in x0..=x1 {
                self.walk(set, k - 1, ChunkPos::new(x, z), a, squares, chunk_ready);
            }
        }
    }

    /// Forgets every block (leaving a scene): returns them, by level then row order. Builders
    /// stay registered.
    pub fn clear(&mut self) -> Vec<(usize, ChunkPos)> {
        let mut out = Vec::new();
        for k in 0..MAX_LOD_LEVELS {
            out.extend(self.loaded(k).map(|b| (k, b)));
        }
        let (grid, bounds, builders) = (self.grid, self.bounds, self.builders);
        let changes = self.changes + 1;
        *self = LodPlan::new(grid, bounds);
        self.builders = builders;
        self.changes = changes;
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
                    built: Some(0),
                };
                if self.blocks[k].insert(*b, slot).is_none() {
                    self.loaded_len[k] += 1;
                }
                self.unwanted[k].insert(*b, Cell::new(0));
            }
        }
        self.stale = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kits::streaming::config::{LodLevelDef, LodRadius, LodStep};
    use serde_json::json;

    fn lod(levels: &[(u32, u32)]) -> Lod {
        let defs: Vec<LodLevelDef> = levels
            .iter()
            .map(|(s, r)| LodLevelDef {
                step: LodStep::parse(&json!(s)).unwrap(),
                radius: LodRadius::parse(&json!(r)).unwrap(),
            })
            .collect();
        Lod::new(&defs).unwrap()
    }

    /// A plan around `at`: radius `r` carves the chunk square of `r`, a level of radius `r_k`
    /// its blocks within `r_k` (SPEC §17).
    fn plan(radius: u32, levels: &[(u32, u32)], at: Position) -> LodPlan {
        let mut p = LodPlan::new(Grid::new(32.0), None);
        p.set_levels(radius, lod(levels));
        p.set_foci(&[at]);
        p.resolve();
        p
    }

    /// Loads everything wanted (no builders: loaded is ready).
    fn load_all(p: &mut LodPlan) -> Vec<(usize, ChunkPos)> {
        let mut out = Vec::new();
        p.load(usize::MAX, &mut out);
        out
    }

    fn centre() -> Position {
        Position::new(16.0, 16.0) // chunk (0, 0)
    }

    #[test]
    fn blocks_cover_floor_divided_chunks_and_ring_to_their_nearest_chunk() {
        assert_eq!(block_of(ChunkPos::new(-1, 3), 2), ChunkPos::new(-1, 1));
        assert_eq!(block_of(ChunkPos::new(-8, 7), 8), ChunkPos::new(-1, 0));
        assert_eq!(block_ring(ChunkPos::new(0, 0), 2, ChunkPos::new(1, 1)), 0);
        assert_eq!(block_ring(ChunkPos::new(2, 0), 2, ChunkPos::new(1, 1)), 3);
        assert_eq!(block_ring(ChunkPos::new(-2, 0), 2, ChunkPos::new(1, 1)), 4);
    }

    proptest::proptest! {
        /// A focus's range (the blocks of its chunk square of `r`), which the loads' order and
        /// the release rule test a block against, holds exactly the blocks whose ring distance
        /// from the focus chunk is at most `r` (SPEC §17's "within r_k").
        #[test]
        fn a_range_holds_the_blocks_within_the_radius(
            cx in -300i64..300, cz in -300i64..300, bx in -80i64..80, bz in -80i64..80,
            shift in 1u32..=6, radius in 1u32..200,
        ) {
            let step = 1 << shift;
            let l = LodLevel { step, radius };
            let (c, b) = (ChunkPos::new(cx, cz), ChunkPos::new(bx, bz));
            proptest::prop_assert_eq!(
                range(c, l).holds(b),
                block_ring(b, step, c) <= u64::from(radius)
            );
        }
    }

    #[test]
    fn the_row_key_orders_blocks_in_row_order_and_gives_them_back() {
        let mut rows: Vec<ChunkPos> = [
            (0, 0),
            (i64::MIN, 0),
            (i64::MAX, -1),
            (-1, -1),
            (0, -1),
            (1, 0),
            (-3, 2),
            (5, i64::MIN),
            (0, i64::MAX),
            (-1, i64::MAX),
        ]
        .map(|(x, z)| ChunkPos::new(x, z))
        .to_vec();
        let mut by_key = rows.clone();
        rows.sort();
        by_key.sort_by_key(|b| row_key(*b));
        assert_eq!(by_key, rows);
        for b in rows {
            assert_eq!(from_row_key(row_key(b)), b, "the key gives its block back");
        }
    }

    #[test]
    fn a_level_wants_its_range_minus_the_finer_area_and_nothing_outside_the_ground() {
        // radius 1 (chunks -1..=1), level 1 step 2 radius 4: blocks -2..=2 each way (chunks
        // -4..=5); block (0, 0) (chunks 0..=1) lies inside the chunk square: carved.
        let p = plan(1, &[(2, 4)], centre());
        let wanted: Vec<ChunkPos> = p.wanted(0).collect();
        assert_eq!(wanted.len(), 24);
        assert!(!wanted.contains(&ChunkPos::new(0, 0)));
        assert!(wanted.contains(&ChunkPos::new(-1, -1)) && wanted.contains(&ChunkPos::new(2, 2)));
        // radius 3 covers chunks -3..=3: blocks -1..=1 each way (chunks -2..=3) lie inside
        // it; blocks -5..=4 each way are in range (ring <= 9).
        let p = plan(3, &[(2, 9)], centre());
        let wanted: BTreeSet<ChunkPos> = p.wanted(0).collect();
        for b in [(-1, -1), (1, -1), (-1, 1), (0, 0), (1, 1)] {
            assert!(
                !wanted.contains(&ChunkPos::new(b.0, b.1)),
                "{b:?} is carved"
            );
        }
        assert!(wanted.contains(&ChunkPos::new(2, 0)) && wanted.contains(&ChunkPos::new(-2, 0)));
        assert!(wanted.contains(&ChunkPos::new(-5, -5)) && wanted.contains(&ChunkPos::new(4, 4)));
        assert_eq!(wanted.len(), 10 * 10 - 9);
        // Level 2 carves level 1's area: step 4 radius 12 around level 1's blocks -3..=3.
        let p = plan(3, &[(2, 6), (4, 12)], centre());
        let l2: BTreeSet<ChunkPos> = p.wanted(1).collect();
        // level 1 area: chunks -6..=7 (blocks -3..=3 of 2); level-2 blocks inside: -1..=1.
        for b in [(0, 0), (-1, -1), (1, 0), (1, 1)] {
            assert!(!l2.contains(&ChunkPos::new(b.0, b.1)), "{b:?} is carved");
        }
        assert!(l2.contains(&ChunkPos::new(2, 0)) && l2.contains(&ChunkPos::new(-2, 0)));
        // Ground: x >= 0 only.
        let bounds = Bounds {
            min_x: 0.0,
            min_z: -1e6,
            max_x: 1e6,
            max_z: 1e6,
        };
        let mut p = LodPlan::new(Grid::new(32.0), Some(bounds));
        p.set_levels(1, lod(&[(2, 4)]));
        p.set_foci(&[centre()]);
        p.resolve();
        assert!(p.wanted(0).all(|b| b.x >= 0));
    }

    #[test]
    fn a_block_is_wanted_as_soon_as_one_of_its_chunks_leaves_the_finer_area() {
        // Radius 0: block (0, 0) (chunks 0..=1) has chunks outside the square {0}: wanted.
        // Radius 1: all four lie inside the square -1..=1: carved (no margin, SPEC §17).
        assert!(plan(0, &[(2, 4)], centre())
            .wanted(0)
            .any(|b| b == ChunkPos::new(0, 0)));
        assert!(!plan(1, &[(2, 4)], centre())
            .wanted(0)
            .any(|b| b == ChunkPos::new(0, 0)));
        // Level 2 against level 1's blocks within r_1: with (2, 3) level 1's area is chunks
        // -4..=3 (blocks -2..=1), so level-2 block (0, 0) (chunks 0..=3) is carved, (-1, 0)
        // (chunks -4..=-1) too, and with (2, 2) (blocks -1..=1, chunks -2..=3) only (0, 0) is.
        let l2: BTreeSet<ChunkPos> = plan(1, &[(2, 3), (4, 12)], centre()).wanted(1).collect();
        assert!(!l2.contains(&ChunkPos::new(0, 0)) && !l2.contains(&ChunkPos::new(-1, 0)));
        let l2: BTreeSet<ChunkPos> = plan(1, &[(2, 2), (4, 12)], centre()).wanted(1).collect();
        assert!(!l2.contains(&ChunkPos::new(0, 0)) && l2.contains(&ChunkPos::new(-1, 0)));
    }

    #[test]
    fn loads_go_level_ascending_then_nearest_centre_then_z_x_within_the_budget() {
        let mut p = plan(1, &[(2, 4), (4, 12)], Position::new(40.0, 20.0));
        let mut out = Vec::new();
        p.load(3, &mut out);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|(k, _)| *k == 0), "level 1 first");
        // The three nearest level-1 block centres to (40, 20): block (0,0) centre (32, 32).
        let mut all: Vec<(f64, ChunkPos)> = plan(1, &[(2, 4), (4, 12)], Position::new(40.0, 20.0))
            .wanted(0)
            .map(|b| {
                let (cx, cz) = (
                    (b.x as f64 * 2.0 + 1.0) * 32.0,
                    (b.z as f64 * 2.0 + 1.0) * 32.0,
                );
                ((cx - 40.0) * (cx - 40.0) + (cz - 20.0) * (cz - 20.0), b)
            })
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let expect: Vec<(usize, ChunkPos)> = all.iter().take(3).map(|(_, b)| (0, *b)).collect();
        assert_eq!(out, expect);
        // The rest of level 1 before any of level 2.
        let n1 = p.wanted(0).count();
        out.clear();
        p.load(n1 - 3 + 1, &mut out);
        assert_eq!(out.iter().filter(|(k, _)| *k == 1).count(), 1);
        assert_eq!(out.last().unwrap().0, 1);
        // A budget of 0 loads nothing.
        out.clear();
        p.load(0, &mut out);
        assert!(out.is_empty());
    }

    /// A block `due` listed as replaced but the caller kept, whose replacement then went, and
    /// which is later listed out of range: its release must be counted by the holes (only the
    /// release right after the `due` that found it replaced is skipped by the hole count).
    #[test]
    fn a_block_listed_replaced_then_kept_is_counted_when_released_out_of_range() {
        let mut p = plan(2, &[(2, 8), (4, 32)], Position::new(-200.0, -200.0)); // (-7, -7)
        p.add_builder(0);
        load_all(&mut p);
        // Level 1 built, level 2 not: only level-1 blocks and ready chunks are seen.
        for b in p.loaded(0).collect::<Vec<_>>() {
            p.set_built(0, 0, b, true);
        }
        let around = |c: ChunkPos, r: i64| {
            let mut v = Vec::new();
            for z in c.z - r..=c.z + r {
                for x in c.x - r..=c.x + r {
                    v.push(ChunkPos::new(x, z));
                }
            }
            v
        };
        let mut ready: BTreeSet<ChunkPos> = around(ChunkPos::new(1, 1), 2).into_iter().collect();
        let count = |p: &mut LodPlan, at: Position, ready: &BTreeSet<ChunkPos>, changed| {
            let kept = p.update_holes(&[at], |c| ready.contains(&c), changed, true);
            assert_eq!(kept, p.holes(&[at], |c| ready.contains(&c)));
            kept
        };
        count(&mut p, Position::new(-200.0, -200.0), &ready, &[]);
        // To chunk (1, 1): block (0, 0) of level 1 (chunks 0..=1) lies in the chunk square and
        // its chunks are ready: listed as replaced, and kept.
        let at = Position::new(48.0, 48.0);
        p.set_foci(&[at]);
        p.resolve();
        count(&mut p, at, &ready, &[]);
        let mut due = Vec::new();
        p.due(|c| ready.contains(&c), &mut due);
        let block = (0, ChunkPos::new(0, 0));
        assert!(due.contains(&block));
        // Its chunks go; the block still covers them.
        let gone = around(ChunkPos::new(0, 0), 0)
            .into_iter()
            .chain([(1, 0), (0, 1), (1, 1)].map(|(x, z)| ChunkPos::new(x, z)))
            .collect::<Vec<_>>();
        let changed: Vec<(ChunkPos, bool)> = gone.iter().map(|c| (*c, false)).collect();
        for c in &gone {
            ready.remove(c);
        }
        count(&mut p, at, &ready, &changed);
        // To chunk (12, 0): the block is out of range (ring 11 > 9), within the last level's
        // 32, and nothing else sees its chunks.
        let at = Position::new(12.0 * 32.0 + 16.0, 16.0);
        p.set_foci(&[at]);
        p.resolve();
        due.clear();
        p.due(|c| ready.contains(&c), &mut due);
        assert!(due.contains(&block));
        for (k, b) in due {
            p.mark_released(k, b);
        }
        let holes = count(&mut p, at, &ready, &[]);
        let seen = p.holes(&[at], |c| ready.contains(&c) || gone.contains(&c));
        assert_eq!(holes - seen, 4, "its four chunks are holes now");
    }

    #[test]
    fn a_block_carved_out_waits_until_its_chunks_are_ready() {
        // radius 1, level step 2 radius 4; the focus moves so a block falls inside the square.
        let mut p = plan(2, &[(2, 8)], Position::new(-200.0, -200.0)); // chunk (-7, -7)
        load_all(&mut p);
        assert!(p.loaded(0).any(|b| b == ChunkPos::new(0, 0)));
        // Focus to chunk (1, 1): square 0..=2, block (0, 0) (chunks 0..=1) is inside it.
        p.set_foci(&[Position::new(48.0, 48.0)]);
        p.resolve();
        assert!(!p.wanted(0).any(|b| b == ChunkPos::new(0, 0)));
        let block = (0, ChunkPos::new(0, 0));
        let mut due = Vec::new();
        p.due(|_| false, &mut due);
        assert!(!due.contains(&block), "no chunk ready: the block stays");
        let ready = |c: ChunkPos| {
            (0..=1).contains(&c.x) && (0..=1).contains(&c.z) && c != ChunkPos::new(1, 1)
        };
        due.clear();
        p.due(ready, &mut due);
        assert!(
            !due.contains(&block),
            "one chunk not ready: the block stays"
        );
        due.clear();
        p.due(
            |c| (0..=1).contains(&c.x) && (0..=1).contains(&c.z),
            &mut due,
        );
        assert!(due.contains(&block));
    }

    #[test]
    fn a_coarse_block_carved_out_is_replaced_by_ready_finer_blocks() {
        // Level 2 (step 4) block inside level 1's area waits for the level-1 blocks.
        // From chunk (-12, 0) level-2 block (0, 0) (chunks 0..=3) is in range, not carved.
        let start = Position::new(-368.0, 16.0);
        let square = |c: ChunkPos| c.x.abs() <= 1 && c.z.abs() <= 1;
        let mut p = plan(2, &[(2, 5), (4, 16)], start);
        load_all(&mut p);
        assert!(p.loaded(1).any(|b| b == ChunkPos::new(0, 0)));
        p.set_foci(&[centre()]);
        p.resolve();
        // Level-2 block (0, 0) covers chunks 0..=3: inside level 1's area now.
        let mut due = Vec::new();
        p.due(square, &mut due);
        assert!(
            !due.contains(&(1, ChunkPos::new(0, 0))),
            "level-1 blocks not loaded"
        );
        let mut out = Vec::new();
        p.load(usize::MAX, &mut out);
        due.clear();
        p.due(|_| false, &mut due);
        assert!(
            !due.contains(&(1, ChunkPos::new(0, 0))),
            "the chunks (0..=1)² not ready"
        );
        due.clear();
        p.due(square, &mut due);
        assert!(
            due.contains(&(1, ChunkPos::new(0, 0))),
            "finer blocks and chunks ready"
        );
        // With a builder, loaded is not ready: the block waits for the build.
        let mut p = plan(2, &[(2, 5), (4, 16)], start);
        p.add_builder(0);
        load_all(&mut p);
        let coarse: Vec<ChunkPos> = p.loaded(1).collect();
        for b in coarse {
            p.set_built(0, 1, b, true);
        }
        p.set_foci(&[centre()]);
        p.resolve();
        load_all(&mut p);
        due.clear();
        p.due(square, &mut due);
        assert!(!due.contains(&(1, ChunkPos::new(0, 0))), "finer not built");
        for b in [(1, 0), (0, 1), (1, 1)] {
            p.set_built(0, 0, ChunkPos::new(b.0, b.1), true);
        }
        p.due(square, &mut due);
        assert!(due.contains(&(1, ChunkPos::new(0, 0))));
    }

    #[test]
    fn a_block_out_of_range_stays_in_the_band_and_goes_beyond_r_plus_one() {
        let mut p = plan(0, &[(2, 2)], centre());
        load_all(&mut p);
        assert!(p.loaded(0).any(|b| b == ChunkPos::new(1, 0))); // chunks 2..=3, ring 2
                                                                // Focus to chunk (-1, 0): block (1, 0) at ring 3 = r + 1: stays.
        p.set_foci(&[Position::new(-16.0, 16.0)]);
        p.resolve();
        let mut due = Vec::new();
        p.due(|_| false, &mut due);
        assert!(!due.contains(&(0, ChunkPos::new(1, 0))));
        // To chunk (-2, 0): ring 4 > r + 1: goes, no replacement needed.
        p.set_foci(&[Position::new(-48.0, 16.0)]);
        p.resolve();
        p.due(|_| false, &mut due);
        assert!(due.contains(&(0, ChunkPos::new(1, 0))));
    }

    #[test]
    fn without_a_focus_nothing_is_wanted_or_released() {
        let mut p = plan(0, &[(2, 4)], centre());
        load_all(&mut p);
        p.set_foci(&[]);
        p.resolve();
        assert_eq!(p.wanted(0).count(), 0);
        let mut due = Vec::new();
        p.due(|_| false, &mut due);
        assert!(due.is_empty());
    }

    #[test]
    fn holes_count_chunks_within_the_last_radius_seen_by_nothing() {
        let mut p = plan(1, &[(2, 4)], centre());
        // Nothing ready: every chunk within ring 4 is a hole.
        assert_eq!(p.holes(&[centre()], |_| false), 81);
        // The chunk square ready: 72 left.
        let square = |c: ChunkPos| c.x.abs() <= 1 && c.z.abs() <= 1;
        assert_eq!(p.holes(&[centre()], square), 72);
        load_all(&mut p);
        assert_eq!(
            p.holes(&[centre()], |_| false),
            4,
            "the carved block's chunks (0..=1)²"
        );
        assert_eq!(
            p.holes(&[centre()], square),
            0,
            "every other chunk under a ready block"
        );
        p.add_builder(0);
        assert_eq!(
            p.holes(&[centre()], square),
            72,
            "loaded, not built: not ready"
        );
        p.set_built(0, 0, ChunkPos::new(2, 0), true); // chunks 4..=5 × 0..=1, ring 4 only
        assert_eq!(
            p.holes(&[centre()], square),
            70,
            "the block's chunks inside ring 4"
        );
    }

    #[test]
    fn two_foci_want_the_union_and_carve_by_both_squares() {
        let mut p = LodPlan::new(Grid::new(32.0), None);
        p.set_levels(1, lod(&[(2, 4)]));
        // Chunks (-1,0) and (2,0): squares -2..=0 and 1..=3 along x; block (0, 0) covers
        // chunks 0..=1 × 0..=1: inside the union of the squares, not inside either alone.
        p.set_foci(&[Position::new(-16.0, 16.0), Position::new(80.0, 16.0)]);
        p.resolve();
        let wanted: BTreeSet<ChunkPos> = p.wanted(0).collect();
        assert!(
            !wanted.contains(&ChunkPos::new(0, 0)),
            "carved by the union"
        );
        assert!(
            wanted.contains(&ChunkPos::new(3, 0)),
            "the second focus's range"
        );
    }

    #[test]
    fn a_focus_moving_within_its_chunk_recomputes_nothing() {
        let mut p = plan(1, &[(2, 4)], centre());
        load_all(&mut p);
        p.set_foci(&[Position::new(20.0, 20.0)]);
        assert!(!p.stale);
        p.set_foci(&[Position::new(40.0, 20.0)]);
        assert!(p.stale);
    }

    /// A block wanted under both steps released first (the kit releases them all in one tick;
    /// the plan's API allows one at a time) is not loaded again at the old step.
    #[test]
    fn a_changed_step_releases_the_level_and_starts_it_over() {
        let mut p = plan(1, &[(2, 4)], centre());
        load_all(&mut p);
        p.set_levels(1, lod(&[(4, 8)]));
        p.resolve();
        let mut due = Vec::new();
        p.due(|_| false, &mut due);
        assert_eq!(due.len(), p.loaded(0).count());
        let first = due
            .iter()
            .position(|(_, b)| p.wanted(0).any(|w| w == *b))
            .expect("a block wanted under both steps");
        let (k, b) = due.remove(first);
        p.mark_released(k, b);
        let mut out = Vec::new();
        p.load(usize::MAX, &mut out);
        assert!(
            out.is_empty(),
            "nothing of the new step, nor of the old, before the old ones are gone: {out:?}"
        );
        for (k, b) in due {
            p.mark_released(k, b);
        }
        p.load(usize::MAX, &mut out);
        assert_eq!(out.len(), p.wanted(0).count());
        assert_eq!(p.planned_step(0), 4);
    }

    /// (The kit releases a changed step's blocks in the tick it changes: this drives the plan
    /// through an order only its API allows.)
    #[test]
    fn a_step_changed_and_changed_back_before_its_blocks_went_keeps_them_and_loads_the_rest() {
        let mut p = plan(1, &[(2, 4)], centre());
        let mut out = Vec::new();
        p.load(5, &mut out);
        let wanted = p.wanted(0).count();
        assert!(wanted > 5);
        // Step 4, then step 2 again, the five blocks of step 2 still loaded.
        p.set_levels(1, lod(&[(4, 8)]));
        p.resolve();
        p.set_levels(1, lod(&[(2, 4)]));
        p.resolve();
        let mut due = Vec::new();
        // Every chunk ready: a loaded block still listed as not wanted would be due.
        p.due(|_| true, &mut due);
        assert!(
            due.is_empty(),
            "the loaded blocks are wanted again: {due:?}"
        );
        out.clear();
        p.load(usize::MAX, &mut out);
        assert_eq!(out.len(), wanted - 5, "every other wanted block loads");
        assert_eq!(
            p.loaded(0).collect::<Vec<_>>(),
            p.wanted(0).collect::<Vec<_>>()
        );
    }

    /// What the property drives: the plan's inputs, one at a time.
    #[derive(Debug, Clone)]
    enum Op {
        /// Focus `i` (modulo their number) moves by a few chunks (or within its chunk).
        Move(usize, i64, i64),
        /// Every focus moves at once (as in a game's tick): the even ones by the first
        /// offset, the odd ones by the second.
        MoveAll(i64, i64, i64, i64),
        /// Focus `i` jumps anywhere.
        Teleport(usize, i64, i64),
        Add(i64, i64),
        Remove(usize),
        /// Configuration `c` of [`CONFIGS`] with chunk radius `r` (levels kept above it).
        Levels(usize, u32),
        Load(usize),
        /// Releases what is due and marks it released.
        Release,
        /// Marks only the first `n` due blocks released (the kit releases all; the plan must
        /// hold its sets whatever it is told).
        ReleaseFirst(usize),
        /// Builds (or unbuilds) loaded block `i` of level `k`, builder 0.
        Build(usize, usize, bool),
        /// Chunk (x, z) becomes ready or not.
        Chunk(i64, i64, bool),
        /// Leaving the scene and entering it again.
        Clear,
        AddBuilder,
    }

    const CONFIGS: [&[(u32, u32)]; 4] = [
        &[(2, 6)],
        &[(2, 5), (4, 12)],
        &[(2, 4), (8, 14)],
        &[(2, 3), (4, 6), (8, 11)],
    ];

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (0..4usize, -3..=3i64, -3..=3i64).prop_map(|(i, x, z)| Op::Move(i, x, z)),
            4 => (-3..=3i64, -3..=3i64, -3..=3i64, -3..=3i64)
                .prop_map(|(a, b, c, d)| Op::MoveAll(a, b, c, d)),
            1 => (0..4usize, -40..40i64, -40..40i64).prop_map(|(i, x, z)| Op::Teleport(i, x, z)),
            1 => (-20..20i64, -20..20i64).prop_map(|(x, z)| Op::Add(x, z)),
            1 => (0..4usize).prop_map(Op::Remove),
            1 => (0..4usize, 0..3u32).prop_map(|(c, r)| Op::Levels(c, r)),
            3 => (0..40usize).prop_map(Op::Load),
            2 => Just(Op::Release),
            1 => (1..4usize).prop_map(Op::ReleaseFirst),
            3 => (0..3usize, 0..200usize, any::<bool>()).prop_map(|(k, i, b)| Op::Build(k, i, b)),
            3 => (-12..12i64, -12..12i64, any::<bool>()).prop_map(|(x, z, b)| Op::Chunk(x, z, b)),
            1 => Just(Op::Clear),
            1 => Just(Op::AddBuilder),
        ]
    }

    fn levels_above(c: usize, r: u32) -> Lod {
        let kept: Vec<(u32, u32)> = CONFIGS[c].iter().copied().filter(|l| l.1 > r).collect();
        lod(&kept)
    }

    /// The same inputs to a plan kept up to date incrementally and to one recomputed from
    /// scratch at every resolution (and whose holes are counted from scratch): after every
    /// input the wanted, pending, not-wanted and loaded sets, what loads, what is due and the
    /// hole count are the same.
    fn same_as_from_scratch(bounded: bool, players: usize, ops: &[Op]) {
        let bounds = bounded.then_some(Bounds {
            min_x: -300.0,
            min_z: -200.0,
            max_x: 500.0,
            max_z: 400.0,
        });
        let mut inc = LodPlan::new(Grid::new(32.0), bounds);
        inc.set_levels(1, levels_above(1, 1));
        let mut full = inc.clone();
        let mut foci: Vec<Position> = vec![Position::new(16.0, 16.0)];
        let mut ready: BTreeSet<ChunkPos> = BTreeSet::new();
        let mut changed: Vec<(ChunkPos, bool)> = Vec::new();
        let mut builders = 0;
        let at = |x: i64, z: i64| Position::new(x as f64 * 32.0 + 7.0, z as f64 * 32.0 + 20.0);
        for (step, op) in ops.iter().enumerate() {
            let n = foci.len().max(1);
            match op.clone() {
                Op::Move(i, dx, dz) if !foci.is_empty() => {
                    let p = foci[i % n];
                    foci[i % n] = Position::new(p.x + dx as f64 * 24.0, p.z + dz as f64 * 24.0);
                }
                Op::MoveAll(a, b, c, d) => {
                    for (i, p) in foci.iter_mut().enumerate() {
                        let (dx, dz) = if i % 2 == 0 { (a, b) } else { (c, d) };
                        *p = Position::new(p.x + dx as f64 * 24.0, p.z + dz as f64 * 24.0);
                    }
                }
                Op::Teleport(i, x, z) if !foci.is_empty() => foci[i % n] = at(x, z),
                Op::Add(x, z) if foci.len() < 4 => foci.push(at(x, z)),
                Op::Remove(i) if !foci.is_empty() => {
                    foci.remove(i % n);
                }
                Op::Levels(c, r) => {
                    for p in [&mut inc, &mut full] {
                        p.set_levels(r, levels_above(c, r));
                    }
                }
                Op::Build(k, i, b) if builders > 0 => {
                    let Some(block) = inc.loaded(k).nth(i % inc.loaded(k).count().max(1)) else {
                        continue;
                    };
                    for p in [&mut inc, &mut full] {
                        p.set_built(0, k, block, b);
                    }
                }
                Op::Chunk(x, z, b) => {
                    let c = ChunkPos::new(x, z);
                    if b {
                        ready.insert(c);
                    } else {
                        ready.remove(&c);
                    }
                    changed.push((c, b));
                }
                Op::Clear => {
                    assert_eq!(inc.clear(), full.clear());
                }
                Op::AddBuilder if builders == 0 => {
                    builders = 1;
                    for p in [&mut inc, &mut full] {
                        p.add_builder(0);
                    }
                }
                _ => {}
            }
            for p in [&mut inc, &mut full] {
                p.set_foci(&foci);
            }
            full.full = true;
            inc.resolve();
            full.resolve();
            match op {
                Op::Load(budget) => {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    inc.load(*budget, &mut a);
                    full.load(*budget, &mut b);
                    assert_eq!(a, b, "loads at input {step}");
                }
                Op::Release | Op::ReleaseFirst(_) => {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    inc.due(|c| ready.contains(&c), &mut a);
                    full.due(|c| ready.contains(&c), &mut b);
                    assert_eq!(a, b, "releases at input {step}");
                    assert_eq!(a, due_by_chunk(&inc, &ready), "releases at input {step}");
                    let n = match op {
                        Op::ReleaseFirst(n) => *n,
                        _ => usize::MAX,
                    };
                    for (k, blk) in a.into_iter().take(n) {
                        inc.mark_released(k, blk);
                        full.mark_released(k, blk);
                    }
                }
                _ => {}
            }
            for k in 0..MAX_LOD_LEVELS {
                assert_eq!(inc.blocks[k], full.blocks[k], "blocks {k} at input {step}");
                let wanted: FxHashSet<ChunkPos> = inc.wanted(k).collect();
                assert_eq!(wanted, inc.compute_wanted(k), "wanted {k} at {step}");
                assert_eq!(
                    inc.loaded_len[k],
                    inc.loaded(k).count(),
                    "loaded {k} at {step}"
                );
                // Pending is wanted and not loaded, not-wanted loaded and not wanted (while the
                // step is in force; else every loaded block goes and nothing is pending).
                let loaded: FxHashSet<ChunkPos> = inc.loaded(k).collect();
                let in_force = inc.steps[k] == inc.level(k).map_or(0, |l| l.step);
                let pending: FxHashSet<ChunkPos> = match in_force {
                    true => wanted.difference(&loaded).copied().collect(),
                    false => FxHashSet::default(),
                };
                let unwanted: BTreeSet<ChunkPos> = match in_force {
                    true => loaded.difference(&wanted).copied().collect(),
                    false => loaded.iter().copied().collect(),
                };
                assert_eq!(inc.pending[k], pending, "pending {k} at {step}");
                assert_eq!(
                    inc.unwanted[k].keys().copied().collect::<BTreeSet<_>>(),
                    unwanted,
                    "not wanted {k} at {step}"
                );
                assert_eq!(
                    inc.pending[k], full.pending[k],
                    "pending {k} at input {step}"
                );
                let keys = |p: &LodPlan| p.unwanted[k].keys().copied().collect::<BTreeSet<_>>();
                assert_eq!(keys(&inc), keys(&full), "unwanted {k} at {step}");
            }
            let players = &foci[..players.min(foci.len())];
            let counted = full.holes(players, |c| ready.contains(&c));
            let kept = inc.update_holes(players, |c| ready.contains(&c), &changed, true);
            changed.clear();
            assert_eq!(kept, counted, "holes at input {step} ({op:?})");
        }
    }

    /// The release rule as SPEC §17 states it, chunk by chunk with no memo: what `due` must
    /// answer.
    fn due_by_chunk(p: &LodPlan, ready: &BTreeSet<ChunkPos>) -> Vec<(usize, ChunkPos)> {
        let mut out = Vec::new();
        if p.centres.is_empty() {
            return out;
        }
        for k in 0..MAX_LOD_LEVELS {
            let mut blocks: Vec<ChunkPos> = p.unwanted[k].keys().copied().collect();
            blocks.sort_unstable();
            for b in blocks {
                let Some(l) = p.level(k).filter(|l| l.step == p.steps[k]) else {
                    out.push((k, b));
                    continue;
                };
                let ring = p.centres.iter().map(|c| block_ring(b, l.step, *c)).min();
                let r = u64::from(l.radius);
                let a = block_area(b, l.step);
                let seen = |c: ChunkPos| {
                    ready.contains(&c)
                        || (0..k).any(|j| p.steps[j] != 0 && p.is_ready(j, block_of(c, p.steps[j])))
                };
                let replaced = (a.z0..=a.z1).all(|z| {
                    (a.x0..=a.x1).all(|x| {
                        let c = ChunkPos::new(x, z);
                        !p.grid.overlaps(c, p.bounds.as_ref()) || seen(c)
                    })
                });
                if ring > Some(r + 1) || (ring <= Some(r) && replaced) {
                    out.push((k, b));
                }
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn incremental_wanted_sets_and_holes_equal_a_recomputation(
            bounded in proptest::prelude::any::<bool>(),
            players in 0..3usize,
            ops in proptest::collection::vec(op(), 1..80),
        ) {
            same_as_from_scratch(bounded, players, &ops);
        }
    }
}
