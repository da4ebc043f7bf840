//! The path search of `world.nav` (docs/reference/nav.md#the-search-order), pure: the cell graph of
//! *built* chunks and A* over it, with no host, no threads and no clock, so the same ground gives
//! the same answer on every machine.
//!
//! **Cells.** A cell is a terrain cell in global integer coordinates: with `n` cells per chunk
//! side, cell `(x, z)` is cell `(x.rem_euclid(n), z.rem_euclid(n))` of chunk
//! `(x.div_euclid(n), z.div_euclid(n))`. The cell of a position is the one `world.terrain`'s
//! `heightAt` reads ([`CellGrid::cell_of`]); the position of a cell is its centre
//! ([`CellGrid::centre`]).
//!
//! **The graph.** A cell is *passable* when its chunk is built and its material is not
//! `blocked`. A step between 4-neighbours `a`, `b` is an edge when both are passable and
//! `|height(a) - height(b)| <= maxStep`; it costs 1. With `diagonal`, a step from `a` to its
//! diagonal neighbour `d` (through the two cells `o1`, `o2` it touches) is an edge when the four
//! steps `a→o1`, `o1→d`, `a→o2`, `o2→d` are edges and `|height(a) - height(d)| <= maxStep`: no
//! corner is ever cut (a walker fits through a diagonal only where both L-shaped routes are
//! walkable). It costs exactly `1.4142135623730951`.
//!
//! **A\*.** `g` is the sum of step costs (f64, added in path order); the heuristic `h` is the
//! Manhattan distance `|dx| + |dz|` without diagonals and the octile distance
//! `max(|dx|, |dz|) + (√2 - 1) · min(|dx|, |dz|)` with them, both admissible and consistent
//! with the costs; `f = g + h`. The open set pops the least `(f, g descending, z, x)` — f
//! first, then the deeper node, then row order — so every machine expands the same nodes in the
//! same order. A node's parent is the first expanded node that reached it with its least `g`
//! (a later equal `g` does not replace it). Neighbours are looked at in row order:
//! `(0,-1)`, `(-1,0)`, `(1,0)`, `(0,1)`, then the diagonals `(-1,-1)`, `(1,-1)`, `(-1,1)`,
//! `(1,1)`. A node is *expanded* when it is popped (not a stale entry): that is what `maxNodes`
//! and a mod's budget count, the goal's pop included.
//!
//! **Answers.** The start or goal cell on a chunk that is not built: `indeterminate` naming that
//! chunk (the start's first), before any node. A goal cell of a `blocked` material: `none` at
//! once (no route can end there). Otherwise the search runs over built cells; a neighbour cell
//! of a chunk that is not built is *met* (the first chunk met, in expansion order and neighbour
//! order, is remembered) and treated as no edge for now. The goal popped: `found`, the cells
//! from start to goal. The open set empty: `indeterminate {x, z}` naming the first chunk met if
//! any was met (an unbuilt chunk might hold the route), else `none` (proven: only built cells
//! were exhausted). `maxNodes` nodes expanded and the goal not popped: `budget`. A route that
//! exists over built cells is found even while a chunk beside it is not built: an agent never
//! waits for a chunk its route does not need.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::{ChunkPos, Grid, Position};
use crate::kits::terrain::ChunkData;

/// The cost of a diagonal step: √2 as the exact f64 `1.4142135623730951` (the standard
/// library's constant, the nearest f64 to √2).
pub const DIAGONAL_COST: f64 = std::f64::consts::SQRT_2;

/// A terrain cell, in global cell coordinates.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// Cell column (east).
    pub x: i64,
    /// Cell row (north).
    pub z: i64,
}

impl Cell {
    /// Cell `(x, z)`.
    pub fn new(x: i64, z: i64) -> Self {
        Cell { x, z }
    }
}

/// How cells sit in chunks and in metres: `cells` per chunk side of `chunk_size` metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellGrid {
    /// Metres per chunk side.
    pub chunk_size: f64,
    /// Cells per chunk side.
    pub cells: u32,
}

impl CellGrid {
    /// The chunk holding `cell`.
    pub fn chunk_of(&self, cell: Cell) -> ChunkPos {
        Self::chunk_of_cells(self.cells, cell)
    }

    /// The chunk holding `cell`, with `cells` cells per chunk side.
    pub fn chunk_of_cells(cells: u32, cell: Cell) -> ChunkPos {
        let n = i64::from(cells);
        ChunkPos::new(cell.x.div_euclid(n), cell.z.div_euclid(n))
    }

    /// The cell containing `pos`: the one `world.terrain`'s `heightAt(pos)` reads (the chunk of
    /// the position, then the cell within it, clamped to the chunk).
    pub fn cell_of(&self, pos: Position) -> Cell {
        let size = self.chunk_size;
        let chunk = Grid::new(size).chunk_of(pos);
        let n = self.cells;
        let cell = size / f64::from(n);
        let local = |v: f64, c: i64| {
            let i = ((v - c as f64 * size) / cell).floor();
            i64::from((i.max(0.0) as u32).min(n - 1))
        };
        let n = i64::from(n);
        Cell::new(
            chunk.x * n + local(pos.x, chunk.x),
            chunk.z * n + local(pos.z, chunk.z),
        )
    }

    /// The centre of `cell`, in metres (`y` 0): where an agent standing on it is placed.
    pub fn centre(&self, cell: Cell) -> Position {
        let side = self.chunk_size / f64::from(self.cells);
        Position::new((cell.x as f64 + 0.5) * side, (cell.z as f64 + 0.5) * side)
    }
}

/// What the search reads: built chunks.
pub trait Ground {
    /// Cells per chunk side.
    fn cells(&self) -> u32;
    /// The built terrain of `chunk`, `None` when it is not built.
    fn chunk(&self, chunk: ChunkPos) -> Option<Arc<ChunkData>>;
}

/// The default climb between 4-neighbouring cells ([`Rules::default`]; the kit's config's default
/// `maxStep`).
pub const DEFAULT_MAX_STEP: u16 = 256;

/// The walking rules (the kit's config).
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    /// Most height difference between 4-neighbours.
    pub max_step: u16,
    /// `blocked[m]`: material `m` cannot be entered.
    pub blocked: [bool; 256],
    /// Whether diagonal steps are edges.
    pub diagonal: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            max_step: DEFAULT_MAX_STEP,
            blocked: [false; 256],
            diagonal: false,
        }
    }
}

/// A search's answer (docs/reference/nav.md#the-answers).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A cheapest path over built cells, from the start cell to the goal cell (both included).
    Found(Vec<Cell>),
    /// Proven unreachable: the search exhausted built cells only.
    None,
    /// The answer needs chunk `(x, z)`, which is not built.
    Indeterminate(ChunkPos),
    /// The node budget ran out.
    Budget,
}

impl Answer {
    /// `found`, `none`, `indeterminate` or `budget`.
    pub fn status(&self) -> &'static str {
        match self {
            Answer::Found(_) => "found",
            Answer::None => "none",
            Answer::Indeterminate(_) => "indeterminate",
            Answer::Budget => "budget",
        }
    }
}

/// An answer and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The answer.
    pub answer: Answer,
    /// Nodes expanded.
    pub nodes: u64,
}

/// The meter stopped the search (a mod's budget ran out) after this many nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped(pub u64);

/// The four orthogonal steps, then the four diagonals, in row order.
const STEPS: [(i64, i64); 8] = [
    (0, -1),
    (-1, 0),
    (1, 0),
    (0, 1),
    (-1, -1),
    (1, -1),
    (-1, 1),
    (1, 1),
];

/// The orthogonal step index of `(dx, 0)` and `(0, dz)`.
fn ortho(dx: i64, dz: i64) -> (usize, usize) {
    let x = if dx < 0 { 1 } else { 2 };
    let z = if dz < 0 { 0 } else { 3 };
    (x, z)
}

/// An open-set entry: `(f, g descending, z, x)` as integers that compare in that order (`f` and
/// `g` are never negative, so their IEEE bits order like the numbers; `!bits` reverses `g`).
/// The least key is popped first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Open {
    key: (u64, u64, i64, i64),
}

impl Open {
    fn new(f: f64, g: f64, cell: Cell) -> Self {
        debug_assert!(f >= 0.0 && g >= 0.0);
        Open {
            key: (f.to_bits(), !g.to_bits(), cell.z, cell.x),
        }
    }

    fn f(&self) -> f64 {
        f64::from_bits(self.key.0)
    }

    fn g(&self) -> f64 {
        f64::from_bits(!self.key.1)
    }

    fn cell(&self) -> Cell {
        Cell::new(self.key.3, self.key.2)
    }
}

/// The open set: a bucket queue on `f` that pops exactly the least `(f, g descending, z, x)`.
///
/// An entry goes to bucket `⌊f · scale⌋` (`scale` a power of two, so the product is exact):
/// a non-decreasing function of the key, so every entry of a lower bucket comes before every
/// entry of a higher one, and only the order *within* the front bucket needs the full key. The
/// front bucket is sorted (descending, the least last) when it becomes the front and kept
/// sorted by inserting at the place the key says; the others are unsorted piles. With a
/// consistent heuristic `f` grows by at most twice a step's cost from the entry popped to the
/// entries it pushes, so the buckets in use span a few numbers past the front. An entry below
/// the front bucket (float rounding can put `f` an ulp under its parent's) joins the front
/// bucket in key order, which keeps the order exact: its `f` is below every `f` of the higher
/// buckets. Without diagonals every `f` is an integer and an entry pushed into the front bucket
/// is always its new least (the same `f` one step deeper), so a pop and most pushes cost O(1).
struct OpenSet {
    scale: f64,
    /// Bucket `base + i` at `buckets[i]`; `buckets[0]` is the front.
    buckets: VecDeque<Vec<Open>>,
    base: i64,
    /// Whether the front bucket is sorted.
    sorted: bool,
    /// Emptied buckets, to reuse.
    spare: Vec<Vec<Open>>,
}

impl OpenSet {
    fn new(diagonal: bool) -> Self {
        OpenSet {
            scale: if diagonal { 4.0 } else { 1.0 },
            buckets: VecDeque::new(),
            base: 0,
            sorted: false,
            spare: Vec::new(),
        }
    }

    fn bucket(&self, e: &Open) -> i64 {
        // `f` is never negative, so truncation is the floor; `as` saturates: still
        // non-decreasing in `f`.
        (e.f() * self.scale) as i64
    }

    fn push(&mut self, e: Open) {
        let b = self.bucket(&e);
        if self.buckets.is_empty() {
            self.base = b;
            self.sorted = true;
        }
        if b <= self.base {
            let front = &mut self.buckets;
            if front.is_empty() {
                front.push_back(self.spare.pop().unwrap_or_default());
            }
            let bucket = &mut front[0];
            if !self.sorted {
                bucket.push(e);
            } else if is_new_least(bucket, &e) {
                // On top (always, without diagonals).
                bucket.push(e);
            } else {
                // Descending: the place after every greater key.
                let at = bucket.partition_point(|o| o.key > e.key);
                bucket.insert(at, e);
            }
            return;
        }
        let i = (b - self.base) as usize;
        while self.buckets.len() <= i {
            let v = self.spare.pop().unwrap_or_default();
            self.buckets.push_back(v);
        }
        self.buckets[i].push(e);
    }

    fn pop(&mut self) -> Option<Open> {
        loop {
            let front = self.buckets.front_mut()?;
            if !front.is_empty() {
                if !self.sorted {
                    // Keys are unique (a cell is pushed again only with a lesser g).
                    front.sort_unstable_by_key(|o| std::cmp::Reverse(o.key));
                    self.sorted = true;
                }
                return front.pop();
            }
            let empty = self.buckets.pop_front().expect("a front");
            self.spare.push(empty);
            self.base += 1;
            self.sorted = false;
        }
    }
}

/// Whether `e` is less than every key of a bucket sorted descending (so it goes on top): a fast
/// path only, the sorted insert would find the same place.
fn is_new_least(bucket: &[Open], e: &Open) -> bool {
    bucket.last().is_none_or(|o| o.key > e.key)
}

/// One cell's search state: its best `g`, the step that reached it (`u8::MAX`: none), whether
/// it was expanded, valid only when `stamp` is the search's (so a reused table needs no reset).
#[derive(Debug, Clone, Copy)]
struct Node {
    g: f64,
    stamp: u32,
    via: u8,
    closed: bool,
}

impl Node {
    const UNSEEN: Node = Node {
        g: f64::INFINITY,
        stamp: 0,
        via: u8::MAX,
        closed: false,
    };
}

/// The cell tables of finished searches, kept per thread so a search does not allocate and
/// clear one per chunk it touches; each search takes a new stamp. Which tables a search gets
/// never changes its answer: a cell whose stamp is not the search's reads as unseen.
struct Pool {
    stamp: u32,
    /// Bumped when the stamps wrap: tables of an older epoch are not taken back.
    epoch: u64,
    free: Vec<Vec<Node>>,
}

/// Cells the kept tables may hold in all: 4 MiB a thread (256 tables of 32 × 32 cells, or 4
/// of 256 × 256).
const POOL_CELLS: usize = 1 << 18;

thread_local! {
    static POOL: RefCell<Pool> = const { RefCell::new(Pool { stamp: 0, epoch: 0, free: Vec::new() }) };
}

/// What the search keeps for one chunk it touched.
struct Slot {
    data: Option<Arc<ChunkData>>,
    /// Per cell, row order (empty when the chunk is not built).
    nodes: Vec<Node>,
}

/// The chunks the search touched, each looked up once.
struct Window<'a> {
    ground: &'a dyn Ground,
    n: i64,
    /// `log2(n)` when `n` is a power of two: chunk and cell by shift and mask, no division.
    shift: Option<u32>,
    slots: Vec<Slot>,
    index: FxHashMap<ChunkPos, u32>,
    last: Option<(ChunkPos, u32)>,
    stamp: u32,
    epoch: u64,
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        let slots = std::mem::take(&mut self.slots);
        POOL.with(|p| {
            let Ok(mut p) = p.try_borrow_mut() else {
                return;
            };
            if p.epoch != self.epoch {
                return;
            }
            let mut kept: usize = p.free.iter().map(Vec::len).sum();
            for s in slots {
                if s.nodes.is_empty() || kept + s.nodes.len() > POOL_CELLS {
                    continue;
                }
                kept += s.nodes.len();
                p.free.push(s.nodes);
            }
        });
    }
}

/// Where a cell's state lives: its slot and its index in the chunk.
#[derive(Clone, Copy)]
struct At {
    slot: u32,
    k: usize,
}

impl<'a> Window<'a> {
    fn new(ground: &'a dyn Ground) -> Self {
        let n = ground.cells().max(1);
        let (stamp, epoch) = POOL.with(|p| {
            let mut p = p.borrow_mut();
            p.stamp = p.stamp.wrapping_add(1);
            if p.stamp == 0 {
                // Wrapped: every kept table may hold any stamp; start over.
                p.free.clear();
                p.epoch += 1;
                p.stamp = 1;
            }
            (p.stamp, p.epoch)
        });
        Window {
            ground,
            n: i64::from(n),
            shift: n.is_power_of_two().then(|| n.trailing_zeros()),
            slots: Vec::new(),
            index: FxHashMap::default(),
            last: None,
            stamp,
            epoch,
        }
    }

    /// A table of `cells` unseen cells for this search.
    fn table(&self, cells: usize) -> Vec<Node> {
        let kept = POOL.with(|p| {
            let mut p = p.try_borrow_mut().ok()?;
            let i = p.free.iter().rposition(|t| t.len() == cells)?;
            Some(p.free.swap_remove(i))
        });
        kept.unwrap_or_else(|| vec![Node::UNSEEN; cells])
    }

    /// The state of a cell of a built chunk, as this search sees it.
    #[inline]
    fn node(&self, at: At) -> Node {
        let n = self.slots[at.slot as usize].nodes[at.k];
        if n.stamp == self.stamp {
            n
        } else {
            Node::UNSEEN
        }
    }

    /// Writes the state of a cell of a built chunk.
    #[inline]
    fn set(&mut self, at: At, mut node: Node) {
        node.stamp = self.stamp;
        self.slots[at.slot as usize].nodes[at.k] = node;
    }

    #[inline]
    fn slot_of(&mut self, chunk: ChunkPos) -> u32 {
        if let Some((c, s)) = self.last {
            if c == chunk {
                return s;
            }
        }
        self.slot_of_other(chunk)
    }

    /// [`Window::slot_of`] for another chunk than the last one asked.
    fn slot_of_other(&mut self, chunk: ChunkPos) -> u32 {
        let s = match self.index.get(&chunk) {
            Some(&s) => s,
            None => {
                let data = self.ground.chunk(chunk);
                let nodes = if data.is_some() {
                    self.table((self.n * self.n) as usize)
                } else {
                    Vec::new()
                };
                self.slots.push(Slot { data, nodes });
                let s = (self.slots.len() - 1) as u32;
                self.index.insert(chunk, s);
                s
            }
        };
        self.last = Some((chunk, s));
        s
    }

    /// The cell's place, or `Err(chunk)` when its chunk is not built.
    #[inline(always)]
    fn at(&mut self, cell: Cell) -> Result<At, ChunkPos> {
        let (chunk, i, j) = match self.shift {
            Some(s) => {
                let mask = self.n - 1;
                (
                    ChunkPos::new(cell.x >> s, cell.z >> s),
                    cell.x & mask,
                    cell.z & mask,
                )
            }
            None => (
                ChunkPos::new(cell.x.div_euclid(self.n), cell.z.div_euclid(self.n)),
                cell.x.rem_euclid(self.n),
                cell.z.rem_euclid(self.n),
            ),
        };
        let slot = self.slot_of(chunk);
        if self.slots[slot as usize].data.is_none() {
            return Err(chunk);
        }
        Ok(At {
            slot,
            k: (j * self.n + i) as usize,
        })
    }

    /// Height and material of a cell in a built chunk (read straight from the chunk's bytes:
    /// heights, little-endian u16 in row order, then materials).
    #[inline]
    fn cell(&self, at: At) -> (u16, u8) {
        let data = self.slots[at.slot as usize]
            .data
            .as_ref()
            .expect("at() found it built");
        let b = &data.bytes;
        let cells = (data.cells * data.cells) as usize;
        let h = u16::from_le_bytes([b[2 * at.k], b[2 * at.k + 1]]);
        (h, b[2 * cells + at.k])
    }
}

/// The heuristic: Manhattan (4 steps) or octile (8 steps) distance from `a` to `b`.
pub fn heuristic(a: Cell, b: Cell, diagonal: bool) -> f64 {
    let dx = (a.x - b.x).unsigned_abs() as f64;
    let dz = (a.z - b.z).unsigned_abs() as f64;
    if diagonal {
        let (hi, lo) = if dx >= dz { (dx, dz) } else { (dz, dx) };
        hi + (DIAGONAL_COST - 1.0) * lo
    } else {
        dx + dz
    }
}

/// Searches a path from `from` to `to` over `ground` by `rules`, expanding at most `limit`
/// nodes; `meter` is asked once per node expanded and stops the search when it answers false.
pub fn search(
    ground: &dyn Ground,
    rules: &Rules,
    from: Cell,
    to: Cell,
    limit: u64,
    meter: &mut dyn FnMut() -> bool,
) -> Result<Outcome, Stopped> {
    let mut w = Window::new(ground);
    let done = |answer, nodes| Ok(Outcome { answer, nodes });
    if let Err(c) = w.at(from) {
        return done(Answer::Indeterminate(c), 0);
    }
    let goal = match w.at(to) {
        Ok(a) => a,
        Err(c) => return done(Answer::Indeterminate(c), 0),
    };
    if rules.blocked[usize::from(w.cell(goal).1)] {
        return done(Answer::None, 0);
    }
    let step_ok = |a: u16, b: u16| a.abs_diff(b) <= rules.max_step;
    let steps = if rules.diagonal { 8 } else { 4 };
    let mut met: Option<ChunkPos> = None;
    let mut open = OpenSet::new(rules.diagonal);
    // The start's node is left unseen: its entry is the first popped, which closes it.
    open.push(Open::new(heuristic(from, to, rules.diagonal), 0.0, from));
    let mut nodes = 0u64;
    while let Some(entry) = open.pop() {
        let (top_g, top_cell) = (entry.g(), entry.cell());
        let at = w.at(top_cell).expect("only built cells are opened");
        let mut top = w.node(at);
        if top.closed || top_g > top.g {
            continue; // stale
        }
        if nodes >= limit {
            return done(Answer::Budget, nodes);
        }
        nodes += 1;
        if !meter() {
            return Err(Stopped(nodes));
        }
        top.closed = true;
        w.set(at, top);
        if top_cell == to {
            return done(Answer::Found(path(&mut w, from, to)), nodes);
        }
        let (h0, _) = w.cell(at);
        // Heights of the orthogonal neighbours whose step from here is an edge.
        let mut walk: [Option<u16>; 4] = [None; 4];
        for (d, &(dx, dz)) in STEPS.iter().enumerate().take(steps) {
            let cell = Cell::new(top_cell.x + dx, top_cell.z + dz);
            let cost = if d < 4 {
                1.0
            } else {
                let (ox, oz) = ortho(dx, dz);
                let (Some(hx), Some(hz)) = (walk[ox], walk[oz]) else {
                    continue; // a corner is not walkable
                };
                // Both corners' second steps are checked below with the target's height.
                match w.at(cell) {
                    Err(c) => {
                        met.get_or_insert(c);
                        continue;
                    }
                    Ok(nb) => {
                        let (h, m) = w.cell(nb);
                        if rules.blocked[usize::from(m)]
                            || !step_ok(hx, h)
                            || !step_ok(hz, h)
                            || !step_ok(h0, h)
                        {
                            continue;
                        }
                    }
                }
                DIAGONAL_COST
            };
            let nb = match w.at(cell) {
                Err(c) => {
                    met.get_or_insert(c);
                    continue;
                }
                Ok(nb) => nb,
            };
            if d < 4 {
                let (h, m) = w.cell(nb);
                if rules.blocked[usize::from(m)] || !step_ok(h0, h) {
                    continue;
                }
                walk[d] = Some(h);
            }
            let node = w.node(nb);
            if node.closed {
                continue;
            }
            let g = top_g + cost;
            if g < node.g {
                w.set(
                    nb,
                    Node {
                        g,
                        via: d as u8,
                        ..node
                    },
                );
                open.push(Open::new(g + heuristic(cell, to, rules.diagonal), g, cell));
            }
        }
    }
    done(met.map_or(Answer::None, Answer::Indeterminate), nodes)
}

/// The cells from `from` to `to`, walking the recorded steps back from the goal.
fn path(w: &mut Window<'_>, from: Cell, to: Cell) -> Vec<Cell> {
    let mut cells = vec![to];
    let mut c = to;
    while c != from {
        let at = w.at(c).expect("a path cell is built");
        let (dx, dz) = STEPS[usize::from(w.node(at).via)];
        c = Cell::new(c.x - dx, c.z - dz);
        cells.push(c);
    }
    cells.reverse();
    cells
}

/// [`search`] with no meter.
pub fn search_unmetered(
    ground: &dyn Ground,
    rules: &Rules,
    from: Cell,
    to: Cell,
    limit: u64,
) -> Outcome {
    search(ground, rules, from, to, limit, &mut || true).expect("no meter stops it")
}

/// The cost of a path by the search's costs (1 a step, √2 a diagonal), added in path order.
pub fn path_cost(path: &[Cell]) -> f64 {
    path.windows(2).fold(0.0, |g, w| {
        let diagonal = w[0].x != w[1].x && w[0].z != w[1].z;
        g + if diagonal { DIAGONAL_COST } else { 1.0 }
    })
}

/// Whether the single step `a → b` (adjacent cells) is an edge of the graph on `ground` now
/// (an agent checks its next step before taking it).
pub fn is_edge(ground: &dyn Ground, rules: &Rules, a: Cell, b: Cell) -> bool {
    let (dx, dz) = (b.x - a.x, b.z - a.z);
    if dx.abs() > 1 || dz.abs() > 1 || (dx == 0 && dz == 0) {
        return false;
    }
    let mut w = Window::new(ground);
    let mut passable = |c: Cell| -> Option<u16> {
        let at = w.at(c).ok()?;
        let (h, m) = w.cell(at);
        (!rules.blocked[usize::from(m)]).then_some(h)
    };
    let ok = |x: u16, y: u16| x.abs_diff(y) <= rules.max_step;
    let (Some(ha), Some(hb)) = (passable(a), passable(b)) else {
        return false;
    };
    if dx == 0 || dz == 0 {
        return ok(ha, hb);
    }
    if !rules.diagonal {
        return false;
    }
    let (Some(h1), Some(h2)) = (
        passable(Cell::new(a.x + dx, a.z)),
        passable(Cell::new(a.x, a.z + dz)),
    ) else {
        return false;
    };
    ok(ha, hb) && ok(ha, h1) && ok(h1, hb) && ok(ha, h2) && ok(h2, hb)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::kits::terrain::generate::material;

    /// Ground drawn by hand: chunks of `n` cells, each built from a picture, row `z` 0 first;
    /// `.` flat grass (height 0), `#` rock (material 3, the test's blocked material), a digit
    /// `d` grass at height `d * 100`.
    /// Every chunk not drawn is `outside`: solid rock (a bounded world) unless cleared.
    pub(crate) struct Drawn {
        pub(crate) n: u32,
        pub(crate) chunks: BTreeMap<ChunkPos, Arc<ChunkData>>,
        pub(crate) outside: Option<Arc<ChunkData>>,
        /// Chunks not built (drawn or not).
        pub(crate) unbuilt: std::collections::BTreeSet<ChunkPos>,
    }

    impl Drawn {
        pub(crate) fn new(n: u32) -> Self {
            let cells = (n * n) as usize;
            let rock = ChunkData::from_cells(n, &vec![0; cells], &vec![material::ROCK; cells]);
            Drawn {
                n,
                chunks: BTreeMap::new(),
                outside: Some(Arc::new(rock)),
                unbuilt: Default::default(),
            }
        }

        /// Draws a whole world picture (row `z` = 0 first, cell `x` = 0 leftmost) starting
        /// at cell (0, 0), walled by rock; chunks whose cells are all `?` stay not built.
        pub(crate) fn world(n: u32, rows: &[&str]) -> Self {
            let mut d = Drawn::new(n);
            let (w, h) = (rows[0].len() as u32, rows.len() as u32);
            assert!(w % n == 0 && h % n == 0);
            for cz in 0..h / n {
                for cx in 0..w / n {
                    let mut heights = Vec::new();
                    let mut materials = Vec::new();
                    let mut unbuilt = true;
                    for j in 0..n {
                        for i in 0..n {
                            let ch = rows[(cz * n + j) as usize].as_bytes()[(cx * n + i) as usize];
                            unbuilt &= ch == b'?';
                            let (hgt, m) = match ch {
                                b'#' => (0, material::ROCK),
                                b'0'..=b'9' => (u16::from(ch - b'0') * 100, material::GRASS),
                                _ => (0, material::GRASS),
                            };
                            heights.push(hgt);
                            materials.push(m);
                        }
                    }
                    let c = ChunkPos::new(i64::from(cx), i64::from(cz));
                    if unbuilt {
                        d.unbuilt.insert(c);
                    } else {
                        d.chunks
                            .insert(c, Arc::new(ChunkData::from_cells(n, &heights, &materials)));
                    }
                }
            }
            d
        }
    }

    impl Ground for Drawn {
        fn cells(&self) -> u32 {
            self.n
        }
        fn chunk(&self, chunk: ChunkPos) -> Option<Arc<ChunkData>> {
            if self.unbuilt.contains(&chunk) {
                return None;
            }
            match self.chunks.get(&chunk) {
                Some(c) => Some(c.clone()),
                None => self.outside.clone(),
            }
        }
    }

    pub(crate) fn rock_blocked() -> Rules {
        let mut r = Rules::default();
        r.blocked[usize::from(material::ROCK)] = true;
        r
    }

    fn run(g: &Drawn, r: &Rules, from: (i64, i64), to: (i64, i64)) -> Outcome {
        search_unmetered(
            g,
            r,
            Cell::new(from.0, from.1),
            Cell::new(to.0, to.1),
            1 << 20,
        )
    }

    fn cells(list: &[(i64, i64)]) -> Vec<Cell> {
        list.iter().map(|&(x, z)| Cell::new(x, z)).collect()
    }

    #[test]
    fn a_straight_corridor_is_found_cell_by_cell() {
        let g = Drawn::world(4, &["....", "####", "####", "####"]);
        let o = run(&g, &rock_blocked(), (0, 0), (3, 0));
        assert_eq!(
            o.answer,
            Answer::Found(cells(&[(0, 0), (1, 0), (2, 0), (3, 0)]))
        );
        assert_eq!(o.nodes, 4);
    }

    #[test]
    fn max_step_bounds_the_height_difference_of_a_step() {
        // A 200-unit step between x=1 and x=2: passable at maxStep 200, not at 199.
        let g = Drawn::world(4, &["0022", "####", "####", "####"]);
        let mut r = rock_blocked();
        r.max_step = 200;
        assert!(matches!(
            run(&g, &r, (0, 0), (3, 0)).answer,
            Answer::Found(_)
        ));
        r.max_step = 199;
        assert_eq!(run(&g, &r, (0, 0), (3, 0)).answer, Answer::None);
    }

    #[test]
    fn a_blocked_goal_is_none_at_once_and_blocked_cells_are_never_entered() {
        let g = Drawn::world(4, &["..#.", "..#.", "..#.", "..#."]);
        let o = run(&g, &rock_blocked(), (0, 0), (2, 0));
        assert_eq!((o.answer, o.nodes), (Answer::None, 0));
        let o = run(&g, &rock_blocked(), (0, 0), (3, 0));
        assert_eq!(o.answer, Answer::None, "the wall splits the chunk");
        assert_eq!(o.nodes, 8, "every cell left of the wall, once each");
        // Not blocked: rock is walkable.
        let o = run(&g, &Rules::default(), (0, 0), (3, 0));
        assert!(matches!(o.answer, Answer::Found(p) if p.len() == 4));
    }

    #[test]
    fn diagonals_cost_root_two_and_never_cut_a_corner() {
        assert_eq!(DIAGONAL_COST.to_string(), "1.4142135623730951");
        let g = Drawn::world(4, &["....", "....", "....", "...."]);
        let r = Rules {
            diagonal: true,
            ..Rules::default()
        };
        let o = run(&g, &r, (0, 0), (3, 3));
        let Answer::Found(p) = o.answer else { panic!() };
        assert_eq!(p, cells(&[(0, 0), (1, 1), (2, 2), (3, 3)]));
        assert_eq!(path_cost(&p), DIAGONAL_COST + DIAGONAL_COST + DIAGONAL_COST);
        // A step along a row or a column costs 1, in either direction.
        assert_eq!(
            path_cost(&cells(&[(0, 0), (1, 0), (2, 1), (2, 0)])),
            1.0 + DIAGONAL_COST + 1.0
        );
        // The diagonal (0,0)→(1,1) touches (1,0) and (0,1): with (1,0) rock the walker goes
        // around.
        let g = Drawn::world(4, &[".#..", "....", "....", "...."]);
        let o = run(
            &g,
            &{
                let mut r = rock_blocked();
                r.diagonal = true;
                r
            },
            (0, 0),
            (1, 1),
        );
        let Answer::Found(p) = o.answer else { panic!() };
        assert_eq!(p, cells(&[(0, 0), (0, 1), (1, 1)]), "no corner cut");
        // Without diagonals, no diagonal step at all.
        let o = run(&g, &rock_blocked(), (0, 0), (1, 1));
        assert_eq!(o.answer, Answer::Found(cells(&[(0, 0), (0, 1), (1, 1)])));
    }

    #[test]
    fn equal_cost_paths_are_broken_by_depth_then_row_order() {
        // From (0,0) to (1,1) on open flat ground: two paths of cost 2, via (1,0) or (0,1).
        // Pop 1: (0,0), f=2. It opens (1,0) [f=1+1=2, g=1] and (0,1) [f=2, g=1]: equal f and
        // g, so row order: (1,0) (z=0) is popped first and opens (1,1) with g=2, f=2 (parent
        // (1,0)). Pop 3: (1,1) g=2 beats (0,1) g=1 (g descending) and is the goal. So the
        // path goes through (1,0): east first, then north.
        let g = Drawn::world(4, &["....", "....", "....", "...."]);
        let o = run(&g, &Rules::default(), (0, 0), (1, 1));
        assert_eq!(o.answer, Answer::Found(cells(&[(0, 0), (1, 0), (1, 1)])));
        assert_eq!(o.nodes, 3);
        // Mirrored: from (1,0) to (0,1) the row order prefers (0,0) (z=0) over (1,1).
        let o = run(&g, &Rules::default(), (1, 0), (0, 1));
        assert_eq!(o.answer, Answer::Found(cells(&[(1, 0), (0, 0), (0, 1)])));
        // Longer, (0,0) to (2,2), six paths of cost 4, every node f=4: pop (0,0); (1,0) and
        // (0,1) tie on g=1, row order takes (1,0), which opens (2,0) and (1,1) (g=2); both
        // deeper than (0,1), and (2,0) has the lesser z; it opens (2,1) (g=3, f=4); then (2,2)
        // (g=4): east twice, then north twice, and not one node off the path.
        let o = run(&g, &Rules::default(), (0, 0), (2, 2));
        assert_eq!(
            o.answer,
            Answer::Found(cells(&[(0, 0), (1, 0), (2, 0), (2, 1), (2, 2)]))
        );
        assert_eq!(
            o.nodes, 5,
            "the deepest node always wins a tie: no detour is expanded"
        );
        // Equal f, g and z: x decides. From (1,1) to (1,3) round the rock at (1,2): (0,1)
        // and (2,1) tie (f=4, g=1, z=1) after (1,0) (z=0) is expanded; (0,1) has the lesser
        // x, and its branch reaches the goal without (2,1) ever being popped.
        let g = Drawn::world(4, &["....", "....", ".#..", "...."]);
        let o = run(&g, &rock_blocked(), (1, 1), (1, 3));
        assert_eq!(
            o.answer,
            Answer::Found(cells(&[(1, 1), (0, 1), (0, 2), (0, 3), (1, 3)]))
        );
        assert_eq!(o.nodes, 6);
    }

    /// The lengths of the tables this thread's pool keeps, sorted.
    fn pooled() -> Vec<usize> {
        POOL.with(|p| {
            let mut v: Vec<usize> = p.borrow().free.iter().map(Vec::len).collect();
            v.sort_unstable();
            v
        })
    }

    /// Opens a window, touches the chunks of `cells`, and closes it.
    fn touch(g: &Drawn, cells: &[(i64, i64)]) {
        let mut w = Window::new(g);
        for &(x, z) in cells {
            let _ = w.at(Cell::new(x, z));
        }
    }

    #[test]
    fn a_finished_search_keeps_its_built_chunks_tables_up_to_the_cap_and_none_across_a_wrap() {
        // Each test's own thread, so its own pool.
        std::thread::spawn(|| {
            let mut g = Drawn::new(4);
            g.unbuilt.insert(ChunkPos::new(9, 9));
            // Three built chunks and one not built: three tables of 16 cells kept.
            touch(&g, &[(0, 0), (1, 1), (4, 0), (8, 3), (36, 36)]);
            assert_eq!(pooled(), vec![16; 3]);
            // The next window takes one back and returns it.
            let mut w = Window::new(&g);
            let _ = w.at(Cell::new(0, 0));
            assert_eq!(pooled(), vec![16; 2]);
            drop(w);
            assert_eq!(pooled(), vec![16; 3]);

            // A window open when the stamps wrap gives nothing back.
            let mut before = Window::new(&g);
            let _ = before.at(Cell::new(0, 0));
            let _ = before.at(Cell::new(12, 0));
            POOL.with(|p| p.borrow_mut().stamp = u32::MAX);
            let after = Window::new(&g);
            assert_eq!(after.stamp, 1);
            assert!(pooled().is_empty(), "the wrap empties the pool");
            drop(before);
            assert!(pooled().is_empty(), "no table of the epoch before the wrap");
            drop(after);

            // The cap: 4 tables of 256 × 256 cells fill it exactly; a fifth is not kept.
            let big = Drawn::new(256);
            let corners: Vec<(i64, i64)> = (0..5).map(|i| (i * 256, 0)).collect();
            touch(&big, &corners);
            assert_eq!(pooled(), vec![1 << 16; 4]);
            assert_eq!(POOL_CELLS, 4 << 16);
            // Kept tables count against the cap: a window of two chunks takes one table back
            // and gives back only that one.
            touch(&big, &[(5 * 256, 0), (6 * 256, 0)]);
            assert_eq!(pooled(), vec![1 << 16; 4]);
        })
        .join()
        .expect("the pool's test");
    }

    #[test]
    fn an_entry_a_cheaper_route_left_behind_is_skipped_even_when_it_pops_first() {
        // Two routes to a cell whose costs differ only in the rounding of their sums (steps
        // of 1 and √2 added in another order) can give the same f; the key's g descending
        // then pops the dearer, stale entry first. It is skipped, so the cell is expanded
        // once, with its best g. Expanded with the dearer g instead, the search here takes
        // 38 nodes: found by running a plain A* on random walled grids with and without the
        // skip.
        let g = Drawn::world(
            4,
            &[
                "#..#....", "..##.#..", ".#.....#", "..#.....", "...#..##", "##......", "........",
                ".....##.",
            ],
        );
        let mut r = rock_blocked();
        r.diagonal = true;
        let o = run(&g, &r, (6, 0), (1, 0));
        assert_eq!(o.nodes, 39);
        let path = [
            (6, 0),
            (6, 1),
            (6, 2),
            (5, 3),
            (4, 4),
            (4, 5),
            (3, 5),
            (2, 5),
            (2, 4),
            (1, 4),
            (0, 3),
            (0, 2),
            (0, 1),
            (1, 1),
            (1, 0),
        ];
        assert_eq!(o.answer, Answer::Found(cells(&path)));
    }

    #[test]
    fn the_budget_counts_nodes_expanded_the_goals_pop_included() {
        let g = Drawn::world(4, &["....", "####", "####", "####"]);
        let r = rock_blocked();
        let go = |limit| search_unmetered(&g, &r, Cell::new(0, 0), Cell::new(3, 0), limit);
        assert_eq!(go(3).answer, Answer::Budget);
        assert_eq!(go(3).nodes, 3);
        assert!(matches!(go(4).answer, Answer::Found(_)));
        let mut calls = 0;
        let stopped = search(&g, &r, Cell::new(0, 0), Cell::new(3, 0), 100, &mut || {
            calls += 1;
            calls < 2
        });
        assert_eq!(stopped, Err(Stopped(2)));
    }

    #[test]
    fn an_unbuilt_start_or_goal_is_indeterminate_before_any_node() {
        let mut g = Drawn::world(2, &["..??", "..??"]);
        g.outside = None;
        let o = run(&g, &Rules::default(), (0, 0), (3, 0));
        assert_eq!(
            (o.answer, o.nodes),
            (Answer::Indeterminate(ChunkPos::new(1, 0)), 0)
        );
        let o = run(&g, &Rules::default(), (-1, 0), (3, 0));
        assert_eq!(
            o.answer,
            Answer::Indeterminate(ChunkPos::new(-1, 0)),
            "start first"
        );
    }

    #[test]
    fn cells_and_positions_agree_with_the_terrains_cells() {
        let grid = CellGrid {
            chunk_size: 32.0,
            cells: 16,
        };
        for x in -40..40 {
            for z in [-33, -1, 0, 5, 31] {
                let c = Cell::new(x, z);
                assert_eq!(grid.cell_of(grid.centre(c)), c);
            }
        }
        assert_eq!(grid.cell_of(Position::new(-0.1, 1.99)), Cell::new(-1, 0));
        // A hair west of x = 0 lies in chunk -1, whose offset then rounds to the chunk's full
        // side (32 - 1e-15 is 32.0): clamped to its last cell, as the terrain reads it.
        assert_eq!(
            grid.cell_of(Position::new(-1e-15, 1.0)),
            Cell::new(-1, 0),
            "the chunk's last cell, not the next chunk's first"
        );
        assert_eq!(grid.centre(Cell::new(0, -1)), Position::new(1.0, -1.0));
        assert_eq!(grid.chunk_of(Cell::new(-1, 16)), ChunkPos::new(-1, 1));
    }

    #[test]
    fn is_edge_applies_the_same_rules_as_the_search() {
        let g = Drawn::world(4, &[".#..", "..9.", "....", "...."]);
        let mut r = rock_blocked();
        r.diagonal = true;
        let e = |a: (i64, i64), b: (i64, i64)| {
            is_edge(&g, &r, Cell::new(a.0, a.1), Cell::new(b.0, b.1))
        };
        assert!(e((0, 0), (0, 1)));
        assert!(!e((0, 0), (1, 0)), "rock");
        assert!(!e((0, 0), (1, 1)), "corner (1,0) is rock");
        assert!(!e((1, 1), (2, 1)), "900 height units");
        assert!(e((2, 2), (3, 3)));
        assert!(!e((0, 0), (2, 0)), "not adjacent");
        assert!(!e((0, 0), (0, 2)), "not adjacent");
        assert!(!e((2, 2), (2, 2)), "not a step");

        // A diagonal takes both corners: heights 0 → 100 (x corner) → 200, but the z
        // corner is at 300, a step of 300 from the start.
        let g = Drawn::world(4, &["....", ".01.", ".32.", "...."]);
        let e = |a: (i64, i64), b: (i64, i64)| {
            is_edge(&g, &r, Cell::new(a.0, a.1), Cell::new(b.0, b.1))
        };
        assert!(!e((1, 1), (2, 2)), "the z corner is 300 above the start");
        assert!(e((1, 1), (2, 0)), "both corners within a step");
        // The x corner of (1,1) → (2,0) is (2,1), not (0,1).
        let g = Drawn::world(4, &["....", "..#.", "....", "...."]);
        assert!(
            !is_edge(&g, &r, Cell::new(1, 1), Cell::new(2, 0)),
            "rock at (2,1)"
        );
        assert!(is_edge(&g, &r, Cell::new(1, 1), Cell::new(0, 0)));
    }

    /// Draws `rows` and puts `chunk` of `with` into it (a chunk built later).
    fn build(g: &mut Drawn, chunk: (i64, i64), with: &Drawn) {
        let c = ChunkPos::new(chunk.0, chunk.1);
        g.chunks.insert(c, with.chunks[&c].clone());
        g.unbuilt.remove(&c);
    }

    #[test]
    fn the_seed_fixture_a_missing_bridge_is_indeterminate_until_it_is_built() {
        // Two islands joined by a bridge chunk (1, 0) whose only walkable row is z = 1.
        let rows = [
            "....########....",
            "................",
            "....########....",
            "....########....",
        ];
        let built = Drawn::world(4, &rows);
        let mut g = Drawn::world(4, &rows);
        g.unbuilt.insert(ChunkPos::new(1, 0));
        g.unbuilt.insert(ChunkPos::new(2, 0));
        build(&mut g, (2, 0), &built);
        let r = rock_blocked();
        // Across the missing chunk: not "no path", but "needs chunk (1, 0)".
        let o = run(&g, &r, (0, 0), (15, 3));
        assert_eq!(o.answer, Answer::Indeterminate(ChunkPos::new(1, 0)));
        assert_eq!(
            o.nodes, 16,
            "the whole first island, then the open set is empty"
        );
        // The bridge is built: the same query finds the route across it.
        build(&mut g, (1, 0), &built);
        let o = run(&g, &r, (0, 0), (15, 3));
        let Answer::Found(p) = o.answer else {
            panic!("{o:?}")
        };
        assert_eq!(p.len(), 1 + 15 + 3, "a shortest 4-neighbour route");
        assert!(
            (4..12).all(|x| p.contains(&Cell::new(x, 1))),
            "over the bridge"
        );
    }

    #[test]
    fn the_seed_fixture_a_wall_is_proven_none_only_when_every_cell_around_it_is_built() {
        // A rock wall down x = 5 of chunk (1, 0); below it chunk (1, 1), not built at first.
        let top = ".....#..........";
        let rows = [top, top, top, top];
        let walled = [
            rows[0],
            rows[0],
            rows[0],
            rows[0],
            ".....#..........",
            ".....#..........",
            ".....#..........",
            ".....#..........",
        ];
        let open = [
            rows[0],
            rows[0],
            rows[0],
            rows[0],
            "................",
            "................",
            "................",
            "................",
        ];
        let r = rock_blocked();
        let mut g = Drawn::world(4, &walled);
        g.unbuilt.insert(ChunkPos::new(1, 1));
        let o = run(&g, &r, (0, 0), (15, 0));
        assert_eq!(
            o.answer,
            Answer::Indeterminate(ChunkPos::new(1, 1)),
            "the wall might end in the chunk not built"
        );
        // Built, and the wall goes on through it: every cell around the search is built.
        build(&mut g, (1, 1), &Drawn::world(4, &walled));
        let o = run(&g, &r, (0, 0), (15, 0));
        assert_eq!(o.answer, Answer::None, "proven unreachable");
        assert_eq!(o.nodes, 5 * 8, "every cell west of the wall, once");
        // Built open instead: the route goes round the wall's end.
        let mut g = Drawn::world(4, &walled);
        build(&mut g, (1, 1), &Drawn::world(4, &open));
        let o = run(&g, &r, (0, 0), (15, 0));
        assert!(matches!(&o.answer, Answer::Found(p) if p.contains(&Cell::new(5, 4))));
    }

    #[test]
    fn a_route_over_built_cells_is_found_beside_a_chunk_not_built() {
        // Chunk (1, 1) is not built, but the straight route along z = 0 does not need it.
        let mut g = Drawn::world(
            4,
            &[
                "............",
                "............",
                "............",
                "............",
                "............",
                "............",
                "............",
                "............",
            ],
        );
        g.unbuilt.insert(ChunkPos::new(1, 1));
        let o = run(&g, &Rules::default(), (0, 3), (11, 3));
        assert!(matches!(o.answer, Answer::Found(p) if p.len() == 12));
    }

    #[test]
    fn indeterminate_names_the_first_chunk_met_in_expansion_then_neighbour_order() {
        // Chunk (1, 0) is not built, nor is anything outside the picture.
        let mut g = Drawn::world(
            4,
            &[
                "....????....",
                "....????....",
                "....????....",
                "....????....",
            ],
        );
        g.outside = None;
        // From (0, 0) the first node's first neighbour, (0, -1), is in chunk (0, -1).
        let o = run(&g, &Rules::default(), (0, 0), (11, 0));
        assert_eq!(o.answer, Answer::Indeterminate(ChunkPos::new(0, -1)));
        // From (3, 1): (3, 0) and (2, 1) are built, then (4, 1) is in chunk (1, 0).
        let o = run(&g, &Rules::default(), (3, 1), (11, 0));
        assert_eq!(o.answer, Answer::Indeterminate(ChunkPos::new(1, 0)));
    }
}
