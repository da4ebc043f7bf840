//! The search (docs/reference/nav.md) as a property: on random grids (walls of a blocked material,
//! heights that `maxStep` may or may not climb, chunks not built, a world bounded by rock or by
//! nothing built, diagonals on and off, budgets that run out) the product's search gives exactly
//! the answer and the node count of a plain reference A* written here on its own: an open *list*
//! scanned for the least `(f, g descending, z, x)` on every pop, maps for `g`, parents and the
//! closed set. The product's open set (whatever structure it uses) must pop the same nodes in
//! the same order, so the same path, the same first chunk met and the same node count.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::nav::search::{search_unmetered, Answer, Cell, Ground, Rules};
use world_streaming::kits::terrain::ChunkData;

/// The blocked material of these grids; 2 is walkable.
const WALL: u8 = 3;
const OPEN: u8 = 2;

/// A drawn world: `n` cells a chunk side, `side` × `side` chunks from (0, 0), a cell's height
/// and material; chunks in `unbuilt` are not built; outside the square: rock (blocked) when
/// `walled`, else not built.
#[derive(Debug, Clone)]
struct World {
    n: u32,
    side: i64,
    heights: Vec<u16>,
    materials: Vec<u8>,
    unbuilt: BTreeSet<(i64, i64)>,
    walled: bool,
}

impl World {
    fn width(&self) -> i64 {
        self.side * i64::from(self.n)
    }

    fn chunk_of(&self, c: Cell) -> (i64, i64) {
        let n = i64::from(self.n);
        (c.x.div_euclid(n), c.z.div_euclid(n))
    }

    /// Whether the cell's chunk is built.
    fn built(&self, c: Cell) -> bool {
        let (cx, cz) = self.chunk_of(c);
        let inside = (0..self.side).contains(&cx) && (0..self.side).contains(&cz);
        if inside {
            !self.unbuilt.contains(&(cx, cz))
        } else {
            self.walled
        }
    }

    /// Height and material of a cell of a built chunk.
    fn cell(&self, c: Cell) -> (u16, u8) {
        let w = self.width();
        if (0..w).contains(&c.x) && (0..w).contains(&c.z) {
            let k = (c.z * w + c.x) as usize;
            (self.heights[k], self.materials[k])
        } else {
            (0, WALL)
        }
    }
}

impl Ground for World {
    fn cells(&self) -> u32 {
        self.n
    }
    fn chunk(&self, chunk: ChunkPos) -> Option<Arc<ChunkData>> {
        let n = i64::from(self.n);
        if !self.built(Cell::new(chunk.x * n, chunk.z * n)) {
            return None;
        }
        let mut heights = Vec::new();
        let mut materials = Vec::new();
        for j in 0..n {
            for i in 0..n {
                let (h, m) = self.cell(Cell::new(chunk.x * n + i, chunk.z * n + j));
                heights.push(h);
                materials.push(m);
            }
        }
        Some(Arc::new(ChunkData::from_cells(
            self.n, &heights, &materials,
        )))
    }
}

/// The reference A*, straight from docs/reference/nav.md#the-search-order and `docs/nav.md`.
fn reference(
    w: &World,
    max_step: u16,
    diagonal: bool,
    from: Cell,
    to: Cell,
    limit: u64,
) -> (Answer, u64) {
    let chunk = |c: Cell| {
        let (x, z) = w.chunk_of(c);
        ChunkPos::new(x, z)
    };
    if !w.built(from) {
        return (Answer::Indeterminate(chunk(from)), 0);
    }
    if !w.built(to) {
        return (Answer::Indeterminate(chunk(to)), 0);
    }
    if w.cell(to).1 == WALL {
        return (Answer::None, 0);
    }
    // docs/reference/nav.md#the-search-order, as written there
    let sqrt2: f64 = "1.4142135623730951".parse().unwrap();
    let h = |c: Cell| {
        let dx = (c.x - to.x).abs() as f64;
        let dz = (c.z - to.z).abs() as f64;
        if diagonal {
            dx.max(dz) + (sqrt2 - 1.0) * dx.min(dz)
        } else {
            dx + dz
        }
    };
    // A step a → b between 4-neighbours, both built: an edge when b is not blocked and the
    // heights differ by at most maxStep (a itself was entered, or is the start).
    let climb = |a: u16, b: u16| (i32::from(a) - i32::from(b)).abs() <= i32::from(max_step);
    let passable = |c: Cell| w.built(c) && w.cell(c).1 != WALL;
    let mut g: BTreeMap<Cell, f64> = BTreeMap::from([(from, 0.0)]);
    let mut parent: BTreeMap<Cell, Cell> = BTreeMap::new();
    let mut closed: BTreeSet<Cell> = BTreeSet::new();
    // The open list: one entry per open cell, its best g (no duplicates to skip).
    let mut open: Vec<Cell> = vec![from];
    let mut met: Option<ChunkPos> = None;
    let mut nodes = 0u64;
    let before = |a: Cell, b: Cell, g: &BTreeMap<Cell, f64>| {
        let (ga, gb) = (g[&a], g[&b]);
        let (fa, fb) = (ga + h(a), gb + h(b));
        if fa != fb {
            return fa < fb;
        }
        if ga != gb {
            return ga > gb;
        }
        (a.z, a.x) < (b.z, b.x)
    };
    loop {
        if open.is_empty() {
            return (met.map_or(Answer::None, Answer::Indeterminate), nodes);
        }
        let mut best = 0;
        for i in 1..open.len() {
            if before(open[i], open[best], &g) {
                best = i;
            }
        }
        if nodes >= limit {
            return (Answer::Budget, nodes);
        }
        let c = open.swap_remove(best);
        nodes += 1;
        closed.insert(c);
        if c == to {
            let mut path = vec![to];
            while *path.last().unwrap() != from {
                path.push(parent[path.last().unwrap()]);
            }
            path.reverse();
            return (Answer::Found(path), nodes);
        }
        let hc = w.cell(c).0;
        let mut tries: Vec<(Cell, f64)> = Vec::new();
        for (dx, dz) in [(0, -1), (-1, 0), (1, 0), (0, 1)] {
            let b = Cell::new(c.x + dx, c.z + dz);
            if !w.built(b) {
                met.get_or_insert(chunk(b));
                continue;
            }
            if passable(b) && climb(hc, w.cell(b).0) {
                tries.push((b, 1.0));
            }
        }
        if diagonal {
            for (dx, dz) in [(-1, -1), (1, -1), (-1, 1), (1, 1)] {
                let (o1, o2) = (Cell::new(c.x + dx, c.z), Cell::new(c.x, c.z + dz));
                // Both corners first: each must be an edge from here.
                let edge = |o: Cell| passable(o) && climb(hc, w.cell(o).0);
                if !(edge(o1) && edge(o2)) {
                    continue;
                }
                let d = Cell::new(c.x + dx, c.z + dz);
                if !w.built(d) {
                    met.get_or_insert(chunk(d));
                    continue;
                }
                let hd = w.cell(d).0;
                if passable(d)
                    && climb(w.cell(o1).0, hd)
                    && climb(w.cell(o2).0, hd)
                    && climb(hc, hd)
                {
                    tries.push((d, sqrt2));
                }
            }
        }
        let gc = g[&c];
        for (b, cost) in tries {
            if closed.contains(&b) {
                continue;
            }
            let nb = gc + cost;
            if g.get(&b).is_none_or(|&old| nb < old) {
                if !g.contains_key(&b) {
                    open.push(b);
                }
                g.insert(b, nb);
                parent.insert(b, c);
            }
        }
    }
}

/// A random world: 1 to 3 chunks a side of 2 to 5 cells, a wall density, heights of a few
/// levels (0, 100, 300), some chunks not built.
fn world() -> impl Strategy<Value = World> {
    (2u32..=5, 1i64..=3, 0u32..=40, any::<bool>(), any::<u64>()).prop_flat_map(
        |(n, side, walls, walled, _)| {
            let cells = (side * i64::from(n)).pow(2) as usize;
            (
                proptest::collection::vec((0u32..100, 0u8..3), cells),
                proptest::collection::btree_set((0..side, 0..side), 0..=(side * side / 2) as usize),
            )
                .prop_map(move |(raw, unbuilt)| World {
                    n,
                    side,
                    heights: raw
                        .iter()
                        .map(|&(_, l)| [0, 100, 300][usize::from(l)])
                        .collect(),
                    materials: raw
                        .iter()
                        .map(|&(r, _)| if r < walls { WALL } else { OPEN })
                        .collect(),
                    unbuilt,
                    walled,
                })
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn the_search_pops_like_a_plain_reference_a_star(
        w in world(),
        ends in (0u32..10_000, 0u32..10_000, 0u32..10_000, 0u32..10_000),
        max_step in prop_oneof![Just(0u16), Just(100), Just(200), Just(65535)],
        diagonal in any::<bool>(),
        limit in prop_oneof![Just(1u64 << 20), 1u64..40],
    ) {
        // Ends anywhere in the square and one cell around it.
        let span = w.width() + 2;
        let at = |a: u32, b: u32| Cell::new(i64::from(a) % span - 1, i64::from(b) % span - 1);
        let (from, to) = (at(ends.0, ends.1), at(ends.2, ends.3));
        let mut rules = Rules { max_step, diagonal, ..Rules::default() };
        rules.blocked[usize::from(WALL)] = true;
        let got = search_unmetered(&w, &rules, from, to, limit);
        let (answer, nodes) = reference(&w, max_step, diagonal, from, to, limit);
        prop_assert_eq!(&got.answer, &answer, "{:?} → {:?}", from, to);
        prop_assert_eq!(got.nodes, nodes);
    }

    /// Open ground where many paths tie: the tie-break alone decides the path.
    #[test]
    fn on_open_ground_the_tie_break_alone_picks_the_same_path(
        n in 2u32..=6,
        side in 1i64..=3,
        ends in (0u32..10_000, 0u32..10_000, 0u32..10_000, 0u32..10_000),
        diagonal in any::<bool>(),
        limit in prop_oneof![Just(1u64 << 20), 1u64..30],
    ) {
        let cells = (side * i64::from(n)).pow(2) as usize;
        let w = World {
            n,
            side,
            heights: vec![0; cells],
            materials: vec![OPEN; cells],
            unbuilt: BTreeSet::new(),
            walled: true,
        };
        let span = w.width();
        let at = |a: u32, b: u32| Cell::new(i64::from(a) % span, i64::from(b) % span);
        let (from, to) = (at(ends.0, ends.1), at(ends.2, ends.3));
        let mut rules = Rules { diagonal, ..Rules::default() };
        rules.blocked[usize::from(WALL)] = true;
        let got = search_unmetered(&w, &rules, from, to, limit);
        let (answer, nodes) = reference(&w, rules.max_step, diagonal, from, to, limit);
        prop_assert_eq!(&got.answer, &answer, "{:?} → {:?}", from, to);
        prop_assert_eq!(got.nodes, nodes);
    }
}
