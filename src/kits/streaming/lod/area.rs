//! The area algebra: inclusive rectangles of chunks, blocks or tiles, what a focus's move adds
//! and takes away, blocks of a step and their ring distance, the ground's rectangle, the row key
//! releases are sorted by.

use super::*;

/// An inclusive rectangle of chunks (or of blocks, or of tiles: the unit is the caller's).
/// An empty one (an empty ground) is only asked if it is empty, its count, if it holds a cell,
/// its tile mask (`rect_mask`: 0) or an intersection (none, or empty): the rest of the algebra
/// works on the foci's squares and the pieces cut from them, never empty (an empty area "meets"
/// what its bounds overlap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Area {
    pub(super) x0: i64,
    pub(super) x1: i64,
    pub(super) z0: i64,
    pub(super) z1: i64,
}

impl Area {
    pub(super) const EMPTY: Area = Area {
        x0: 0,
        x1: -1,
        z0: 0,
        z1: -1,
    };

    pub(super) fn is_empty(&self) -> bool {
        self.x0 > self.x1 || self.z0 > self.z1
    }

    /// How many cells it holds (0 when empty).
    pub(super) fn count(&self) -> u64 {
        if self.is_empty() {
            return 0;
        }
        let w = self.x1.abs_diff(self.x0).saturating_add(1);
        let h = self.z1.abs_diff(self.z0).saturating_add(1);
        w.saturating_mul(h)
    }

    pub(super) fn contains(&self, o: &Area) -> bool {
        self.x0 <= o.x0 && o.x1 <= self.x1 && self.z0 <= o.z0 && o.z1 <= self.z1
    }

    /// The square of ring distance `r` around `c`.
    pub(super) fn square(c: ChunkPos, r: i64) -> Area {
        Area {
            x0: c.x - r,
            x1: c.x + r,
            z0: c.z - r,
            z1: c.z + r,
        }
    }

    pub(super) fn holds(&self, c: ChunkPos) -> bool {
        self.x0 <= c.x && c.x <= self.x1 && self.z0 <= c.z && c.z <= self.z1
    }

    pub(super) fn meets(&self, o: &Area) -> bool {
        self.x0 <= o.x1 && o.x0 <= self.x1 && self.z0 <= o.z1 && o.z0 <= self.z1
    }

    /// The parts of `self` outside `o`: at most four disjoint rectangles (the strips a moved
    /// rectangle lost, or gained with the arguments swapped).
    pub(super) fn minus(&self, o: &Area) -> [Option<Area>; 4] {
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

    pub(super) fn intersect(&self, o: &Area) -> Option<Area> {
        self.meets(o).then(|| Area {
            x0: self.x0.max(o.x0),
            x1: self.x1.min(o.x1),
            z0: self.z0.max(o.z0),
            z1: self.z1.min(o.z1),
        })
    }

    /// Calls `f` with disjoint rectangles that together are `self` minus every one of `cut`.
    pub(super) fn cut(self, cut: &[Area], f: &mut impl FnMut(Area)) {
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
    pub(super) fn inner_blocks(&self, step: u32) -> Option<Area> {
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
    pub(super) fn chunks(&self, step: u32) -> Area {
        let s = i64::from(step);
        Area {
            x0: self.x0 * s,
            x1: self.x1 * s + s - 1,
            z0: self.z0 * s,
            z1: self.z1 * s + s - 1,
        }
    }

    /// The blocks of `step` holding a chunk of this area of chunks.
    pub(super) fn blocks(&self, step: u32) -> Area {
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
pub(super) fn changed_areas(old: Option<Area>, new: Option<Area>) -> [Option<Area>; 8] {
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
pub(super) fn row_key(b: ChunkPos) -> u128 {
    let flip = |v: i64| (v as u64 ^ (1 << 63)) as u128;
    flip(b.z) << 64 | flip(b.x)
}

/// The block whose [`row_key`] is `r`.
pub(super) fn from_row_key(r: u128) -> ChunkPos {
    let unflip = |v: u64| (v ^ (1 << 63)) as i64;
    ChunkPos::new(unflip(r as u64), unflip((r >> 64) as u64))
}

/// Sorts one level's blocks in row order; a long list by its [`row_key`]s (a teleport releases
/// a level whole: one u128 compared is cheaper than two coordinates).
pub(super) fn sort_rows(list: &mut [(usize, ChunkPos)]) {
    if list.len() <= 64 {
        list.sort_unstable();
        return;
    }
    let mut keys: Vec<u128> = list.iter().map(|(_, b)| row_key(*b)).collect();
    keys.sort_unstable();
    for (slot, key) in list.iter_mut().zip(keys) {
        slot.1 = from_row_key(key);
    }
}

/// What `a` holds before and after, if it held something both times.
pub(super) fn both(a: [Option<Area>; 2]) -> Option<Area> {
    a[0]?.intersect(&a[1]?)
}

/// The blocks of level `l` within its radius of the focus chunk `c` (a block's ring is at most
/// `r` exactly when it holds a chunk of the square of `r`): a rectangle of blocks.
pub(super) fn range(c: ChunkPos, l: LodLevel) -> Area {
    Area::square(c, i64::from(l.radius)).blocks(l.step)
}

/// The chunks a block of `step` covers.
pub(super) fn block_area(b: ChunkPos, step: u32) -> Area {
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

/// `log2(step)`: steps are powers of two (checked by the config), so dividing by one, rounding
/// down, is an arithmetic shift right by this (no division on the tick's paths).
pub(super) fn shift(step: u32) -> u32 {
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

/// The chunks inside the ground (`Grid::overlaps`) as a rectangle: each axis's test is an
/// interval of chunk coordinates (the metre edges grow with the coordinate), found by bisection
/// with the very same floating-point expressions. Without bounds: every chunk a coordinate can
/// reach (chunk coordinates are clamped far inside).
pub(super) fn ground_chunks(grid: &Grid, bounds: Option<&Bounds>) -> Area {
    pub(super) const LIM: i64 = 1 << 60;
    let Some(b) = bounds else {
        return Area {
            x0: -LIM,
            x1: LIM,
            z0: -LIM,
            z1: LIM,
        };
    };
    let s = grid.size();
    // The least c in [-LIM, LIM + 1] for which `up(c)` holds (`up` false then true).
    let least = |up: &dyn Fn(i64) -> bool| {
        let (mut lo, mut hi) = (-LIM, LIM + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if up(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    };
    // As `Grid::overlaps`: `c·s < max` and `min < (c + 1)·s` (NaN cannot reach here).
    let below = |c: i64, max: f64| (c as f64 * s) < max;
    let x0 = least(&|c| b.min_x < c.saturating_add(1) as f64 * s);
    let x1 = least(&|c| !below(c, b.max_x)) - 1;
    let z0 = least(&|c| b.min_z < c.saturating_add(1) as f64 * s);
    let z1 = least(&|c| !below(c, b.max_z)) - 1;
    let a = Area { x0, x1, z0, z1 };
    if a.is_empty() {
        Area::EMPTY
    } else {
        a
    }
}

/// The number of cells of the union of `rects` inside `ground`: each rectangle minus those
/// before it, in disjoint pieces (`cut` is scratch).
pub(super) fn union_count(rects: &[Area], ground: &Area, cut: &mut Vec<Area>) -> u64 {
    let mut n = 0;
    for (i, r) in rects.iter().enumerate() {
        cut.clear();
        cut.extend_from_slice(&rects[..i]);
        Area::cut(*r, cut, &mut |p| {
            n += p.intersect(ground).map_or(0, |p| p.count());
        });
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    type Cells = std::collections::BTreeSet<(i64, i64)>;

    /// The cells of `a`, one by one.
    fn cells(a: &Area) -> Cells {
        (a.x0..=a.x1)
            .flat_map(|x| (a.z0..=a.z1).map(move |z| (x, z)))
            .collect()
    }

    /// The cells of disjoint pieces (asserted disjoint).
    fn pieces(list: impl IntoIterator<Item = Area>) -> Cells {
        let mut all = Cells::new();
        for p in list {
            for c in cells(&p) {
                assert!(all.insert(c), "{c:?} in two pieces");
            }
        }
        all
    }

    /// Every area with its edges in `-2..=1` (some of them empty).
    fn small_areas() -> Vec<Area> {
        let r = -2..=1i64;
        let mut out = Vec::new();
        for x0 in r.clone() {
            for x1 in r.clone() {
                for z0 in r.clone() {
                    for z1 in r.clone() {
                        out.push(Area { x0, x1, z0, z1 });
                    }
                }
            }
        }
        out
    }

    /// The area algebra agrees with the sets of cells it stands for, for every pair (and some
    /// triples) of small areas: emptiness, counts, holding, meeting, containing, the pieces of
    /// a difference and of a cut (disjoint, and exactly the difference), intersections, the
    /// changed areas of a move and the count of a union inside the ground. cargo-mutants: the
    /// lod unit tests exercised these only through the plans built on them.
    #[test]
    fn the_area_algebra_agrees_with_the_sets_of_cells() {
        let areas = small_areas();
        let around: Vec<(i64, i64)> = (-3..=2)
            .flat_map(|x| (-3..=2).map(move |z| (x, z)))
            .collect();
        for a in &areas {
            let ca = cells(a);
            assert_eq!(a.is_empty(), ca.is_empty(), "{a:?}");
            assert_eq!(a.count(), ca.len() as u64, "{a:?}");
            for &(x, z) in &around {
                assert_eq!(a.holds(ChunkPos::new(x, z)), ca.contains(&(x, z)), "{a:?}");
            }
            if ca.is_empty() {
                continue; // the rest of the algebra never sees an empty area
            }
            assert_eq!(changed_areas(Some(*a), Some(*a)), [None; 8]);
            assert_eq!(changed_areas(Some(*a), None)[0], Some(*a));
            assert_eq!(changed_areas(None, Some(*a))[0], Some(*a));
            assert_eq!(both([Some(*a), None]), None);
            assert_eq!(both([None, Some(*a)]), None);
            for o in &areas {
                let co = cells(o);
                if co.is_empty() {
                    assert!(a.intersect(o).is_none_or(|i| i.is_empty()), "{a:?} ∩ {o:?}");
                    continue;
                }
                let common: Cells = ca.intersection(&co).copied().collect();
                assert_eq!(a.meets(o), !common.is_empty(), "{a:?} meets {o:?}");
                assert_eq!(a.contains(o), co.is_subset(&ca), "{a:?} contains {o:?}");
                assert_eq!(
                    a.intersect(o).map_or_else(Cells::new, |i| cells(&i)),
                    common,
                    "{a:?} ∩ {o:?}"
                );
                assert_eq!(both([Some(*a), Some(*o)]), a.intersect(o));
                let a_o: Cells = ca.difference(&co).copied().collect();
                let o_a: Cells = co.difference(&ca).copied().collect();
                let minus = a.minus(o);
                assert_eq!(pieces(minus.into_iter().flatten()), a_o, "{a:?} − {o:?}");
                assert!(minus.iter().flatten().all(|p| !p.is_empty()), "{minus:?}");
                let mut cut = Vec::new();
                a.cut(&[*o], &mut |p| cut.push(p));
                assert_eq!(pieces(cut), a_o, "{a:?} cut by {o:?}");
                if a != o {
                    let ch = changed_areas(Some(*a), Some(*o));
                    assert_eq!(pieces(ch[..4].iter().flatten().copied()), a_o);
                    assert_eq!(pieces(ch[4..].iter().flatten().copied()), o_a);
                }
            }
        }
        // Triples: a cut by two, and the union's count inside a ground.
        let ground = Area {
            x0: -1,
            x1: 1,
            z0: -2,
            z1: 0,
        };
        let some: Vec<Area> = areas
            .iter()
            .copied()
            .filter(|a| !a.is_empty())
            .step_by(3)
            .collect();
        let mut scratch = Vec::new();
        for a in &some {
            for o in &some {
                for p in &some {
                    let mut cut = Vec::new();
                    a.cut(&[*o, *p], &mut |piece| cut.push(piece));
                    let want: Cells = cells(a)
                        .into_iter()
                        .filter(|c| !cells(o).contains(c) && !cells(p).contains(c))
                        .collect();
                    assert_eq!(pieces(cut), want, "{a:?} cut by {o:?}, {p:?}");
                    let union: Cells = [a, o, p].into_iter().flat_map(cells).collect();
                    let inside = union.intersection(&cells(&ground)).count() as u64;
                    assert_eq!(
                        union_count(&[*a, *o, *p], &ground, &mut scratch),
                        inside,
                        "{a:?} {o:?} {p:?}"
                    );
                }
            }
        }
    }

    /// Blocks of a step against chunks: a block's chunks, the blocks holding an area's chunks
    /// and the blocks lying whole inside it, each checked cell by cell on both sides of zero.
    #[test]
    fn blocks_and_chunks_of_an_area_agree_cell_by_cell() {
        for step in [1u32, 2, 4, 8] {
            let s = i64::from(step);
            for a in small_areas().iter().filter(|a| !a.is_empty()) {
                // Stretch the small areas so they cut blocks of every step in several ways.
                let a = Area {
                    x0: a.x0 * 3 - 1,
                    x1: a.x1 * 5 + 2,
                    z0: a.z0 * 3,
                    z1: a.z1 * 5 + 1,
                };
                if a.is_empty() {
                    continue;
                }
                let ca = cells(&a);
                let blocks: Cells = ca
                    .iter()
                    .map(|&(x, z)| (x.div_euclid(s), z.div_euclid(s)))
                    .collect();
                assert_eq!(cells(&a.blocks(step)), blocks, "{a:?} step {step}");
                let whole: Cells = blocks
                    .iter()
                    .copied()
                    .filter(|&(bx, bz)| {
                        cells(&block_area(ChunkPos::new(bx, bz), step)).is_subset(&ca)
                    })
                    .collect();
                assert_eq!(
                    a.inner_blocks(step).map_or_else(Cells::new, |i| cells(&i)),
                    whole,
                    "{a:?} step {step}"
                );
                // None rather than an empty area: the algebra takes no empty one.
                assert_eq!(a.inner_blocks(step).is_none(), whole.is_empty());
                for &(bx, bz) in &blocks {
                    let chunks: Cells = (bx * s..bx * s + s)
                        .flat_map(|x| (bz * s..bz * s + s).map(move |z| (x, z)))
                        .collect();
                    let b = Area {
                        x0: bx,
                        x1: bx,
                        z0: bz,
                        z1: bz,
                    };
                    assert_eq!(cells(&b.chunks(step)), chunks);
                    assert_eq!(cells(&block_area(ChunkPos::new(bx, bz), step)), chunks);
                }
            }
        }
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
        /// from the focus chunk is at most `r` (the "within r_k",
        /// docs/reference/lod.md#wanted-blocks).
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

    proptest::proptest! {
        /// The ground as a rectangle of chunks holds exactly the chunks `Grid::overlaps` says
        /// overlap the bounds, at and around its edges, for any chunk size.
        #[test]
        fn the_ground_rectangle_is_the_chunks_overlapping_the_bounds(
            size_exp in -20i32..40, x0 in -1e6f64..1e6, w in 0f64..1e6, z0 in -1e6f64..1e6,
            h in 0f64..1e6, scale_exp in -10i32..20,
        ) {
            let size = 2f64.powi(size_exp) * 1.37;
            let k = 2f64.powi(scale_exp);
            let b = Bounds { min_x: x0 * k, max_x: (x0 + w) * k, min_z: z0 * k, max_z: (z0 + h) * k };
            let grid = Grid::new(size);
            let g = ground_chunks(&grid, Some(&b));
            let probe = |c: ChunkPos| {
                proptest::prop_assert_eq!(g.holds(c), grid.overlaps(c, Some(&b)), "{:?} {:?}", c, g);
                Ok(())
            };
            if g.is_empty() {
                let c = grid.chunk_of(Position::new(b.min_x, b.min_z));
                for d in -2..=2 {
                    probe(ChunkPos::new(c.x + d, c.z + d))?;
                }
            } else {
                for (x, z) in [(g.x0, g.z0), (g.x1, g.z1), (g.x0, g.z1), (g.x1, g.z0)] {
                    for d in -1..=1 {
                        probe(ChunkPos::new(x + d, z))?;
                        probe(ChunkPos::new(x, z + d))?;
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// A level's releases, long or short, come out in row order.
        #[test]
        fn releases_sort_in_row_order(blocks in proptest::collection::vec((-1000i64..1000, -1000i64..1000), 0..300)) {
            let mut list: Vec<(usize, ChunkPos)> = blocks.iter().map(|(x, z)| (2, ChunkPos::new(*x, *z))).collect();
            let mut expect = list.clone();
            expect.sort_unstable();
            sort_rows(&mut list);
            proptest::prop_assert_eq!(list, expect);
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
}
