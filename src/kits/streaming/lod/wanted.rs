//! The wanted blocks of each level: what a change of levels or of foci re-tests (the strips a
//! focus swept, the levels re-made), the pending blocks kept by tile or as rectangles not looked
//! at yet, the loaded blocks no longer wanted.

use super::*;

/// What a level's wanted test reads of the foci now: the areas they carve (chunks), their
/// ranges (blocks within `r_k`: those holding a chunk of the square of `r_k`), and the blocks
/// overlapping the ground.
pub(super) struct Now<'a> {
    pub(super) step: u32,
    pub(super) areas: &'a [Area],
    /// The side of the finer grid the areas are aligned to (chunks).
    pub(super) unit: i64,
    pub(super) ranges: &'a [Area],
    pub(super) ground: Area,
}

impl Now<'_> {
    /// The wanted test, one block: within `r_k` of a focus, in the ground, not inside the
    /// finer area.
    pub(super) fn wants(&self, b: ChunkPos) -> bool {
        self.ranges.iter().any(|r| r.holds(b))
            && self.ground.holds(b)
            && !LodPlan::inside_area(self.areas, self.unit, block_area(b, self.step))
    }

    /// The wanted blocks of tile `t`, as its bits: the same test as [`Now::wants`], by
    /// rectangles (a block inside one area is carved; one meeting two or more areas and
    /// inside none alone is tested cell by cell, as `wants` does).
    pub(super) fn wanted_mask(&self, t: ChunkPos) -> u64 {
        let mut m = 0;
        for r in self.ranges {
            m |= rect_mask(r, t);
        }
        m &= rect_mask(&self.ground, t);
        if m == 0 {
            return 0;
        }
        let (mut carved, mut meets1, mut meets2) = (0, 0, 0);
        for a in self.areas {
            if let Some(inner) = a.inner_blocks(self.step) {
                carved |= rect_mask(&inner, t);
            }
            let mb = rect_mask(&a.blocks(self.step), t);
            meets2 |= meets1 & mb;
            meets1 |= mb;
        }
        m &= !carved;
        let mut several = m & meets2;
        while several != 0 {
            let bit = several.trailing_zeros();
            several &= several - 1;
            let b = cell_of(t, bit);
            if LodPlan::inside_area(self.areas, self.unit, block_area(b, self.step)) {
                m &= !(1 << bit);
            }
        }
        m
    }
}

impl LodPlan {
    /// Forgets level `k`'s pending blocks (kept and not looked at).
    pub(super) fn clear_pending(&mut self, k: usize) {
        self.pending[k].clear();
        self.pending_len[k] = 0;
        self.unscanned[k].clear();
    }

    /// Makes level `k`'s pending and not-wanted blocks from scratch for the foci now: the
    /// ranges not looked at (small ones tested block by block), every loaded block tested.
    pub(super) fn reset_level(&mut self, k: usize, (l, carve): (LodLevel, Carve)) {
        self.clear_pending(k);
        let mut carved = std::mem::take(&mut self.carved);
        let mut ranges = std::mem::take(&mut self.ranges);
        self.areas_into(k, &mut carved);
        ranges.clear();
        ranges.extend(self.centres.iter().map(|c| range(*c, l)));
        let now = Now {
            step: l.step,
            areas: &carved,
            unit: carve.unit(),
            ranges: &ranges,
            ground: self.ground_blocks(l.step),
        };
        for r in now.ranges {
            self.retest_region(k, &now, *r);
        }
        self.retest_loaded(k, &now);
        // Made again from the slots (the memos start over).
        self.unwanted[k] = self.slots[k]
            .iter()
            .filter(|(_, s)| !s.wanted)
            .map(|(b, _)| (*b, Cell::new(0)))
            .collect();
        self.deferred = false;
        self.carved = carved;
        self.ranges = ranges;
    }

    /// Level `k` brought up to date from what changed since its sets were made (`was`: the
    /// level and carve then, with the focus chunks of `resolved`) to now (same step): only the
    /// blocks where a focus's range or finer area gained or lost a strip can change whether
    /// they are wanted (the wanted test reads the foci only through whether a block lies in a
    /// focus's range and whether each of its chunks lies in a focus's finer area), so only
    /// those are tested again, and each one moves between wanted, pending and not-wanted as a
    /// recomputation would move it. A strip of more than `defer_min` blocks is noted as not
    /// looked at instead (and every loaded block is tested again).
    ///
    /// A block of a range strip that another focus holds in its range both before and after
    /// is in range either way, and one of an area strip that another focus's area holds whole
    /// both before and after is carved either way: neither part of the test changed through
    /// this strip, and a change of the other part puts the block in a strip where it is not
    /// held so (a focus holding it stably would keep that part unchanged). Those blocks, a
    /// rectangle per focus, are cut out of the strip (the strip's own focus holds none of
    /// it). (A player and its look-ahead focus sweep mostly each other's strips.)
    pub(super) fn resolve_level(
        &mut self,
        k: usize,
        was: (LodLevel, Carve),
        (l, carve): (LodLevel, Carve),
    ) {
        let n = self.resolved.len().max(self.centres.len());
        let mut carved = std::mem::take(&mut self.carved);
        let mut spans = std::mem::take(&mut self.spans);
        let mut held = std::mem::take(&mut self.held);
        let mut ranges = std::mem::take(&mut self.ranges);
        self.areas_into(k, &mut carved);
        spans.clear();
        spans.extend((0..n).map(|i| {
            let (old, new) = (self.resolved.get(i).copied(), self.centres.get(i).copied());
            let range = [old.map(|c| range(c, was.0)), new.map(|c| range(c, l))];
            let area = [old.map(|c| was.1.area(c)), new.map(|c| carve.area(c))];
            Spans {
                moved: range[0] != range[1] || area[0] != area[1],
                range,
                area,
            }
        }));
        ranges.clear();
        ranges.extend(spans.iter().filter_map(|s| s.range[1]));
        let now = Now {
            step: l.step,
            areas: &carved,
            unit: carve.unit(),
            ranges: &ranges,
            ground: self.ground_blocks(l.step),
        };
        self.deferred = false;
        for span in &spans {
            if !span.moved {
                continue;
            }
            // The blocks the foci hold in range, or carve whole, before and after (this
            // focus's own never meet its changed strips).
            held.clear();
            held.extend(spans.iter().filter_map(|s| both(s.range)));
            for r in changed_areas(span.range[0], span.range[1])
                .into_iter()
                .flatten()
            {
                Area::cut(r, &held, &mut |r| self.retest_region(k, &now, r));
            }
            held.clear();
            held.extend(
                spans
                    .iter()
                    .filter_map(|s| both(s.area)?.inner_blocks(l.step)),
            );
            for r in changed_areas(span.area[0], span.area[1])
                .into_iter()
                .flatten()
            {
                let r = r.blocks(l.step);
                Area::cut(r, &held, &mut |r| self.retest_region(k, &now, r));
            }
        }
        if std::mem::take(&mut self.deferred) {
            self.retest_loaded(k, &now);
            // What no range meets holds nothing pending.
            self.unscanned[k].retain(|a| now.ranges.iter().any(|r| r.meets(a)));
        }
        self.carved = carved;
        self.spans = spans;
        self.held = held;
        self.ranges = ranges;
    }

    /// Tests the blocks of `r` (level `k`) again, or, past `defer_min` blocks, notes `r` as not
    /// looked at. Where `r` meets a rectangle not looked at, only loaded blocks are tested
    /// (pending blocks there are found when the loads reach them).
    pub(super) fn retest_region(&mut self, k: usize, now: &Now<'_>, r: Area) {
        if r.count() > self.defer_min {
            self.defer(k, r);
            return;
        }
        if !self.unscanned[k].iter().any(|u| u.meets(&r)) {
            self.retest_blocks(k, now, r, true);
            return;
        }
        let mut meeting = std::mem::take(&mut self.meeting);
        meeting.clear();
        meeting.extend(self.unscanned[k].iter().filter(|u| u.meets(&r)));
        Area::cut(r, &meeting, &mut |p| self.retest_blocks(k, now, p, true));
        for u in &meeting {
            if let Some(p) = r.intersect(u) {
                self.retest_blocks(k, now, p, false);
            }
        }
        self.meeting = meeting;
    }

    /// Tests every block of `r` (level `k`) again; `scanned`: `r` holds no rectangle not looked
    /// at, so its pending blocks are kept by tile.
    pub(super) fn retest_blocks(&mut self, k: usize, now: &Now<'_>, r: Area, scanned: bool) {
        for bz in r.z0..=r.z1 {
            for bx in r.x0..=r.x1 {
                let b = ChunkPos::new(bx, bz);
                self.want(k, b, now.wants(b), scanned);
            }
        }
    }

    /// Block `b` of level `k` (in force) is wanted (`want`) or not: a loaded block moves
    /// between wanted and not-wanted, another in or out of pending (unless it lies where
    /// nothing was looked at: `scanned` false).
    pub(super) fn want(&mut self, k: usize, b: ChunkPos, want: bool, scanned: bool) {
        if let Some(slot) = self.slots[k].get_mut(&b) {
            if slot.wanted != want {
                slot.wanted = want;
                if want {
                    self.unwanted[k].remove(&b);
                } else {
                    self.unwanted[k].insert(b, Cell::new(0));
                }
            }
            return;
        }
        if scanned && set_bit(&mut self.pending[k], b, want) {
            if want {
                self.pending_len[k] += 1;
            } else {
                self.pending_len[k] -= 1;
            }
        }
    }

    /// Notes the blocks of `r` (level `k`) as not looked at: the tiles holding them are
    /// forgotten as pending and become rectangles not looked at. Their loaded blocks are tested
    /// again by the caller ([`LodPlan::retest_loaded`]).
    pub(super) fn defer(&mut self, k: usize, r: Area) {
        self.deferred = true;
        let tiles = r.blocks(TILE);
        let (pending, len) = (&mut self.pending[k], &mut self.pending_len[k]);
        if !pending.is_empty() {
            if tiles.count() <= pending.len() as u64 {
                for tz in tiles.z0..=tiles.z1 {
                    for tx in tiles.x0..=tiles.x1 {
                        if let Some(m) = pending.remove(&ChunkPos::new(tx, tz)) {
                            *len -= m.count_ones() as usize;
                        }
                    }
                }
            } else {
                pending.retain(|t, m| {
                    let keep = !tiles.holds(*t);
                    if !keep {
                        *len -= m.count_ones() as usize;
                    }
                    keep
                });
            }
        }
        self.add_unscanned(k, tiles.chunks(TILE));
    }

    /// Adds `a` (aligned to tiles) to the rectangles not looked at, minus those already there.
    pub(super) fn add_unscanned(&mut self, k: usize, a: Area) {
        let mut meeting = std::mem::take(&mut self.meeting);
        meeting.clear();
        meeting.extend(self.unscanned[k].iter().filter(|u| u.meets(&a)));
        let list = &mut self.unscanned[k];
        Area::cut(a, &meeting, &mut |p| list.push(p));
        self.meeting = meeting;
    }

    /// Tests every loaded block of level `k` again (after a region was noted as not looked at:
    /// a pass over the loaded blocks, not over the region).
    pub(super) fn retest_loaded(&mut self, k: usize, now: &Now<'_>) {
        let (slots, unwanted) = (&mut self.slots[k], &mut self.unwanted[k]);
        for (b, slot) in slots.iter_mut() {
            let want = now.wants(*b);
            if slot.wanted != want {
                slot.wanted = want;
                if want {
                    unwanted.remove(b);
                } else {
                    unwanted.insert(*b, Cell::new(0));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use std::collections::BTreeSet;

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
        // Radius 1: all four lie inside the square -1..=1: carved (no margin,
        // docs/reference/lod.md#wanted-blocks).
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

    /// Two foci want the union of their ranges and carve by both squares together: block
    /// (0, 0) lies half in each chunk square and in neither alone. With a third focus far away
    /// (three areas: the walk over the finer grid rather than the two-area shortcut) the same.
    #[test]
    fn two_foci_want_the_union_and_carve_by_both_squares() {
        // Chunks (-1, 0) and (2, 0): squares -2..=0 and 1..=3 along x (z -1..=1); block (0, 0)
        // covers chunks 0..=1 × 0..=1.
        let at = |x: f64, z: f64| Position::new(x * 32.0 + 16.0, z * 32.0 + 16.0);
        let two = [at(-1.0, 0.0), at(2.0, 0.0)];
        for foci in [&two[..], &[two[0], two[1], at(50.0, 50.0)]] {
            let mut p = LodPlan::new(Grid::new(32.0), None);
            p.set_levels(1, lod(&[(2, 4)]));
            p.set_foci(foci);
            p.resolve();
            let wanted: BTreeSet<ChunkPos> = p.wanted(0).collect();
            let n = foci.len();
            assert!(
                !wanted.contains(&ChunkPos::new(0, 0)),
                "{n}: carved by both"
            );
            assert!(
                wanted.contains(&ChunkPos::new(0, 1)),
                "{n}: z 2..=3, outside both"
            );
            assert!(
                wanted.contains(&ChunkPos::new(0, -1)),
                "{n}: z -2..=-1, half out"
            );
            assert!(
                wanted.contains(&ChunkPos::new(3, 0)),
                "{n}: the second's range"
            );
            load_all(&mut p);
            assert!(!p.loaded(0).any(|b| b == ChunkPos::new(0, 0)), "{n}");
            assert!(p.loaded(0).any(|b| b == ChunkPos::new(0, 1)), "{n}");
        }
    }

    #[test]
    fn a_region_past_defer_min_blocks_is_noted_not_looked_at_and_one_at_it_is_tested() {
        // Level step 2, radius 40: a range of 41 × 41 blocks; a move of one block east sweeps
        // strips of 41 blocks.
        let at = |x: f64| Position::new(x, 16.0);
        let start = |defer_min: u64| {
            let mut p = LodPlan::new(Grid::new(32.0), None);
            p.defer_min = defer_min;
            p.set_levels(1, lod(&[(2, 40)]));
            p.set_foci(&[at(16.0)]);
            p.resolve();
            p
        };
        let mut p = start(41 * 41);
        assert!(p.unscanned[0].is_empty(), "the whole range, tested");
        let before = p.pending_set(0);
        p.defer_min = 41;
        p.set_foci(&[at(16.0 + 64.0)]);
        p.resolve();
        assert!(p.unscanned[0].is_empty(), "strips of 41, tested");
        let after = p.pending_set(0);

        let q = start(41 * 41 - 1);
        assert_eq!(q.unscanned[0].len(), 1, "one block past: noted whole");
        assert_eq!(q.pending_set(0), before);
        let mut p = start(41 * 41);
        p.defer_min = 40;
        p.set_foci(&[at(16.0 + 64.0)]);
        p.resolve();
        assert!(!p.unscanned[0].is_empty(), "strips of 41 past 40, noted");
        assert_eq!(p.pending_set(0), after);
        p.check_pending(0);
    }

    #[test]
    fn a_block_touching_the_ground_s_edge_from_outside_is_not_wanted() {
        // The ground is chunks 0..=3 each way (0 m to 128 m): blocks 0..=1 of step 2. Block
        // (-1, 0) ends at x = 0 m, where the ground begins: it does not overlap it.
        let ground = Bounds {
            min_x: 0.0,
            min_z: 0.0,
            max_x: 128.0,
            max_z: 128.0,
        };
        let mut p = LodPlan::new(Grid::new(32.0), Some(ground));
        p.set_levels(1, lod(&[(2, 8)]));
        p.set_foci(&[centre()]);
        p.resolve();
        // Block (0, 0) lies inside the chunk square of radius 1: carved.
        let want = [(1, 0), (0, 1), (1, 1)].map(|(x, z)| ChunkPos::new(x, z));
        assert_eq!(p.wanted(0).collect::<Vec<_>>(), want);
        load_all(&mut p);
        assert_eq!(p.loaded(0).collect::<Vec<_>>(), want);
    }

    #[test]
    fn a_radius_changed_alone_carves_the_new_square_and_nothing_changed_resolves_nothing() {
        let mut p = plan(1, &[(2, 8)], centre());
        let before: BTreeSet<ChunkPos> = p.wanted(0).collect();
        // Radius 3 covers chunks -3..=3: blocks -1..=1 each way (chunks -2..=3) are carved.
        p.set_levels(3, lod(&[(2, 8)]));
        assert!(p.stale);
        p.resolve();
        let after: BTreeSet<ChunkPos> = p.wanted(0).collect();
        assert!(before.contains(&ChunkPos::new(1, 1)));
        assert!(!after.contains(&ChunkPos::new(1, 1)));
        assert_eq!(before.len() - after.len(), 8);
        assert_eq!(p.pending_set(0), after.iter().copied().collect());
        p.set_levels(3, lod(&[(2, 8)]));
        assert!(!p.stale, "the same radius and levels");
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
}
