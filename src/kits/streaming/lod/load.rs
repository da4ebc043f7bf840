//! Loads and releases: the order of the pending blocks (level ascending, nearest a focus's
//! centre, row order) under the budget, and the no-hole release (a block goes once what replaces
//! it is ready, or beyond `r + 1`).

use super::*;

impl LodPlan {
    /// The squared distance from the nearest focus within level `l`'s radius of `b` to its
    /// centre (exact f64), the foci's ranges (blocks within the radius) being `ranges`, in
    /// focus order.
    pub(super) fn key(&self, l: LodLevel, ranges: &[Area], b: ChunkPos) -> f64 {
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

    /// A lower bound of [`LodPlan::key`] over the blocks of `a` (blocks of level `l`), as the
    /// bits of a non-negative f64 (ordered as it is); `None` when no focus's range meets `a`
    /// (nothing there is wanted). For each focus whose range meets `a`, the distance to the
    /// nearest block centre of that part, per axis: the same expressions as `key`, and
    /// rounding is monotone, so no block's key is below it.
    pub(super) fn bound(&self, l: LodLevel, ranges: &[Area], a: &Area) -> Option<u64> {
        let s = f64::from(l.step);
        let size = self.grid.size();
        let centre = |v: i64| (v as f64 * s + s * 0.5) * size;
        let axis = |p: f64, lo: i64, hi: i64| {
            let (clo, chi) = (centre(lo), centre(hi));
            if p < clo {
                clo - p
            } else if p > chi {
                chi - p
            } else {
                0.0
            }
        };
        let mut best: Option<f64> = None;
        for (p, range) in self.foci.iter().zip(ranges) {
            let Some(q) = range.intersect(a) else {
                continue;
            };
            let (dx, dz) = (axis(p.x, q.x0, q.x1), axis(p.z, q.z0, q.z1));
            let d = dx * dx + dz * dz;
            if best.is_none_or(|b| d < b) {
                best = Some(d);
            }
        }
        best.map(f64::to_bits)
    }

    /// Loads up to `budget` pending blocks, in order (level ascending, the least squared
    /// distance from a focus to the block's centre, z, x), into `out` as `(level index, block)`.
    ///
    /// A best-first search per level over the pending tiles, the rectangles not looked at and
    /// the blocks they hold, each container ranked by a lower bound of its blocks' keys (see
    /// [`LodPlan::bound`]): a block is taken when nothing left can hold a block before it. A
    /// rectangle reached is split in two until it is one tile, whose pending blocks are then
    /// found (wanted, not loaded) and kept by tile. The work is the budget's blocks, the tiles
    /// and rectangles nearer than the last of them, and one bound per container.
    pub fn load(&mut self, budget: usize, out: &mut Vec<(usize, ChunkPos)>) {
        let mut left = budget;
        for k in 0..MAX_LOD_LEVELS {
            if left == 0 {
                break;
            }
            if self.pending[k].is_empty() && self.unscanned[k].is_empty() {
                continue;
            }
            let l = self.level(k).expect("a level in force");
            if self.unscanned[k].is_empty() && self.pending_len[k] <= self.sort_max {
                left -= self.load_sorted(k, l, left, out);
                continue;
            }
            let mut carved = std::mem::take(&mut self.carved);
            let mut ranges = std::mem::take(&mut self.ranges);
            let mut heap = std::mem::take(&mut self.heap);
            let mut boxes = std::mem::take(&mut self.boxes);
            self.areas_into(k, &mut carved);
            ranges.clear();
            ranges.extend(self.centres.iter().map(|c| range(*c, l)));
            heap.clear();
            boxes.clear();
            for t in self.pending[k].keys() {
                let key = self.bound(l, &ranges, &tile_area(*t)).unwrap_or(0);
                heap.push(Reverse((key, KIND_TILE, row_key(*t), KIND_TILE)));
            }
            for a in std::mem::take(&mut self.unscanned[k]) {
                if let Some(key) = self.bound(l, &ranges, &a) {
                    heap.push(Reverse((key, KIND_RECT, boxes.len() as u128, KIND_RECT)));
                    boxes.push(a);
                }
            }
            let now = Now {
                step: l.step,
                areas: &carved,
                unit: self.carve(k).unit(),
                ranges: &ranges,
                ground: self.ground_blocks(l.step),
            };
            while left > 0 {
                let Some(Reverse((_, _, payload, kind))) = heap.pop() else {
                    break;
                };
                match kind {
                    KIND_BLOCK => {
                        self.take(k, from_row_key(payload), out);
                        left -= 1;
                    }
                    KIND_TILE => {
                        let t = from_row_key(payload);
                        let mut m = self.pending[k].get(&t).copied().unwrap_or(0);
                        while m != 0 {
                            let bit = m.trailing_zeros();
                            m &= m - 1;
                            let b = cell_of(t, bit);
                            let key = self.key(l, &ranges, b).to_bits();
                            heap.push(Reverse((key, KIND_BLOCK, row_key(b), KIND_BLOCK)));
                        }
                    }
                    _ => {
                        let a = boxes[payload as usize];
                        let tiles = a.blocks(TILE);
                        if tiles.count() == 1 {
                            // Looked at now: its wanted blocks not loaded are pending.
                            let t = ChunkPos::new(tiles.x0, tiles.z0);
                            let mut m = now.wanted_mask(t);
                            let mut bits = m;
                            while bits != 0 {
                                let bit = bits.trailing_zeros();
                                bits &= bits - 1;
                                if self.slots[k].contains_key(&cell_of(t, bit)) {
                                    m &= !(1 << bit);
                                }
                            }
                            if m != 0 {
                                self.pending[k].insert(t, m);
                                self.pending_len[k] += m.count_ones() as usize;
                                let key = self.bound(l, &ranges, &a).unwrap_or(0);
                                heap.push(Reverse((key, KIND_TILE, row_key(t), KIND_TILE)));
                            }
                            continue;
                        }
                        // Split in two along the longer side, in tiles.
                        let halves = if tiles.x1 - tiles.x0 >= tiles.z1 - tiles.z0 {
                            let mid = tiles.x0 + (tiles.x1 - tiles.x0 + 1) / 2;
                            [
                                Area {
                                    x1: mid - 1,
                                    ..tiles
                                },
                                Area { x0: mid, ..tiles },
                            ]
                        } else {
                            let mid = tiles.z0 + (tiles.z1 - tiles.z0 + 1) / 2;
                            [
                                Area {
                                    z1: mid - 1,
                                    ..tiles
                                },
                                Area { z0: mid, ..tiles },
                            ]
                        };
                        for h in halves {
                            let h = h.chunks(TILE);
                            if let Some(key) = self.bound(l, &ranges, &h) {
                                heap.push(Reverse((
                                    key,
                                    KIND_RECT,
                                    boxes.len() as u128,
                                    KIND_RECT,
                                )));
                                boxes.push(h);
                            }
                        }
                    }
                }
            }
            // What was not reached stays: rectangles not looked at go back to their list
            // (tiles and their blocks are kept in `pending`).
            for Reverse((_, _, payload, kind)) in heap.drain() {
                if kind == KIND_RECT {
                    self.unscanned[k].push(boxes[payload as usize]);
                }
            }
            self.carved = carved;
            self.ranges = ranges;
            self.heap = heap;
            self.boxes = boxes;
            // Iterating a hashed map costs its capacity: after a fill give the room back.
            let p = &mut self.pending[k];
            if p.capacity() > 8 * (p.len() + 16) {
                p.shrink_to(2 * p.len());
            }
        }
    }

    /// Loads the first `left` pending blocks of level `k` (all kept by tile) by sorting them
    /// all: the key made once per block, the first `left` selected, then sorted. Returns how
    /// many loaded.
    pub(super) fn load_sorted(
        &mut self,
        k: usize,
        l: LodLevel,
        left: usize,
        out: &mut Vec<(usize, ChunkPos)>,
    ) -> usize {
        let mut keyed = std::mem::take(&mut self.keyed);
        let mut ranges = std::mem::take(&mut self.ranges);
        ranges.clear();
        ranges.extend(self.centres.iter().map(|c| range(*c, l)));
        keyed.clear();
        for (t, m) in &self.pending[k] {
            let mut m = *m;
            while m != 0 {
                let b = cell_of(*t, m.trailing_zeros());
                m &= m - 1;
                // A squared distance is never negative (nor NaN): its bits are ordered as it is.
                keyed.push((self.key(l, &ranges, b).to_bits(), row_key(b)));
            }
        }
        self.ranges = ranges;
        if keyed.len() > left {
            keyed.select_nth_unstable(left - 1);
            keyed.truncate(left);
        } else {
            // All of them load: forget the tiles at once.
            self.pending[k].clear();
            self.pending_len[k] = 0;
        }
        keyed.sort_unstable();
        for &(_, r) in &keyed {
            self.take(k, from_row_key(r), out);
        }
        let n = keyed.len();
        self.keyed = keyed;
        n
    }

    /// Loads pending block `b` of level `k`.
    pub(super) fn take(&mut self, k: usize, b: ChunkPos, out: &mut Vec<(usize, ChunkPos)>) {
        if set_bit(&mut self.pending[k], b, false) {
            self.pending_len[k] -= 1;
        }
        let slot = Slot {
            wanted: true,
            built: 0,
        };
        self.slots[k].insert(b, slot);
        self.changes += 1;
        if self.builders == 0 {
            // Ready as it loads.
            self.hole_block(k, b, true);
        }
        out.push((k, b));
    }

    /// Whether a loaded block is ready: built by every builder blocks wait for.
    pub fn is_ready(&self, k: usize, b: ChunkPos) -> bool {
        self.slots[k]
            .get(&b)
            .is_some_and(|s| s.built & self.builders == self.builders)
    }

    /// Whether `chunk` is seen by a ready chunk or a ready block of a level below `k` (index).
    pub(super) fn seen_below(
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
            sort_rows(&mut out[start..]);
        }
    }

    /// Whether every chunk of block `b` inside the ground is seen by a ready chunk or a ready
    /// block finer than level `k`. Looked at cell by cell, a cell being a block of the next finer
    /// level (one lookup answers for the chunks a ready one covers), and starting from the cell
    /// that was not seen last time (`memo`, set to the one not seen now): a block waiting for its
    /// replacement costs a lookup or two a tick, not one per chunk of its area.
    pub(super) fn replaced(
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
                    if self.ground.holds(c) && !self.seen_below(below, c, chunk_ready) {
                        memo.set(cell);
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Records a release.
    pub fn mark_released(&mut self, k: usize, b: ChunkPos) {
        let Some(slot) = self.slots[k].remove(&b) else {
            return;
        };
        self.changes += 1;
        let replaced = self.unwanted[k]
            .remove(&b)
            .is_some_and(|memo| memo.get() == REPLACED);
        if slot.built & self.builders == self.builders {
            // `due` listed it because every chunk of it in the ground is seen by ready chunks
            // or finer blocks: when those are the ones counted (the chunks told since they
            // last changed, the finer levels counted as they are), its release changes nothing
            // but the count's record of it.
            let counted = self.chunks_told && (0..k).all(|j| self.hole_steps[j] == self.steps[j]);
            if replaced && counted && self.holes_valid && self.hole_steps[k] != 0 {
                set_bit(&mut self.h_blocks[k], b, false);
                self.h_ready[k] -= 1;
            } else {
                self.hole_block(k, b, false);
            }
        }
        if slot.wanted
            && self.in_force(k).is_some()
            && !self.unscanned[k].iter().any(|u| u.holds(b))
            && set_bit(&mut self.pending[k], b, true)
        {
            // (Of a step no longer in force, nothing is pending until the last block goes.)
            self.pending_len[k] += 1;
        }
        if self.slots[k].is_empty() {
            let level = self.level(k);
            let step = level.map_or(0, |l| l.step);
            if self.steps[k] != step {
                // The last block of the old step is gone: the level starts over (its blocks
                // now wanted are pending).
                self.steps[k] = step;
                self.made[k] = None;
                if let Some(l) = level {
                    let now = (l, self.carve(k));
                    self.reset_level(k, now);
                    self.made[k] = Some(now);
                }
                self.sync_hole_steps();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn a_block_is_ready_once_every_builder_built_it_each_builder_by_its_own_bit() {
        let mut p = plan(1, &[(2, 4)], centre());
        assert!(p.is_empty());
        load_all(&mut p);
        assert!(!p.is_empty());
        assert_eq!(p.loaded_len(), 24);
        let b = p.loaded(0).next().expect("a block");
        let holes = |p: &mut LodPlan| {
            let kept = p.update_holes(&[centre()], |_| false, &[], true, std::iter::empty);
            assert_eq!(kept, p.holes(&[centre()], |_| false));
            kept
        };
        assert!(p.is_ready(0, b), "no builder: loaded is ready");
        let all_ready = holes(&mut p);
        let changes = p.changes();
        p.add_builder(1);
        p.add_builder(5);
        assert_eq!(p.changes(), changes + 2);
        assert!(!p.is_ready(0, b));
        let none_ready = holes(&mut p);
        assert!(none_ready > all_ready);
        p.set_built(5, 0, b, true);
        assert!(!p.is_ready(0, b), "builder 1 has not built it");
        p.set_built(1, 0, b, true);
        assert!(p.is_ready(0, b));
        assert_eq!(p.changes(), changes + 4);
        let one_ready = holes(&mut p);
        assert!(one_ready < none_ready);
        p.set_built(5, 0, b, false);
        assert!(!p.is_ready(0, b), "builder 5 unbuilt it");
        assert_eq!(holes(&mut p), none_ready);
        p.set_built(5, 0, b, true);
        assert!(p.is_ready(0, b), "builder 1's bit kept");
        assert_eq!(holes(&mut p), one_ready);
        // Builders from 64 on, and levels past the last, are ignored.
        let changes = p.changes();
        p.add_builder(64);
        p.set_built(64, 0, b, false);
        p.set_built(1, MAX_LOD_LEVELS, b, false);
        assert!(p.is_ready(0, b));
        assert_eq!(p.changes(), changes);
    }

    #[test]
    fn clear_gives_back_every_block_and_restore_puts_them_back_unbuilt() {
        let mut p = plan(1, &[(2, 4), (4, 16)], centre());
        assert_eq!((p.step(0), p.step(1), p.step(2)), (Some(2), Some(4), None));
        p.add_builder(3);
        load_all(&mut p);
        let loaded: Vec<Vec<ChunkPos>> = (0..2).map(|k| p.loaded(k).collect()).collect();
        assert!(loaded.iter().all(|l| !l.is_empty()));
        let changes = p.changes();
        let cleared = p.clear();
        let listed: Vec<(usize, ChunkPos)> = (0..2)
            .flat_map(|k| loaded[k].iter().map(move |b| (k, *b)))
            .collect();
        assert_eq!(cleared, listed, "by level, then row order");
        assert!(p.is_empty());
        assert_eq!(p.changes(), changes + 1);
        assert_eq!(p.step(0), None, "the levels are forgotten with the blocks");
        // Restored: the same blocks, not built (builder 3 is still waited for), levels back.
        p.restore(1, lod(&[(2, 4), (4, 16)]), &loaded, [2, 4, 0, 0]);
        assert_eq!(p.step(1), Some(4));
        for (k, blocks) in loaded.iter().enumerate() {
            assert_eq!(&p.loaded(k).collect::<Vec<_>>(), blocks);
            assert!(blocks.iter().all(|b| !p.is_ready(k, *b)));
        }
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

    /// The loads' search (tiles and rectangles not looked at, ranked by a lower bound of their
    /// blocks' keys) takes blocks in exactly the order of sorting them all, wherever the foci
    /// stand: within a centimetre of the axes, on both sides of zero, far out; one focus and
    /// two. cargo-mutants: a bound made too large (`/` for `-`) went unnoticed, as it only shows
    /// where dividing by the focus's coordinate grows the distance (a coordinate under a metre).
    #[test]
    fn the_search_takes_blocks_in_the_sorted_order_wherever_the_foci_stand() {
        let spots = [
            (0.01, 0.01),
            (-0.01, 0.02),
            (0.01, -0.01),
            (-0.02, -0.01),
            (1e-6, 40.0),
            (16.0, 16.0),
            (-300.5, 700.25),
        ];
        let mut cases: Vec<(u32, Vec<Position>)> = Vec::new();
        for &(x, z) in &spots {
            cases.push((1, vec![Position::new(x, z)]));
            cases.push((
                1,
                vec![Position::new(x, z), Position::new(x + 300.0, z - 200.0)],
            ));
        }
        // Two foci at the very centres of blocks (3, 5) and (9, 2) of step 2, in tiles (0, 0)
        // and (1, 0); radius 0 carves neither. Both keys are 0: the later tile's block comes
        // first in row order, so a tile must not rank after a block of its least key.
        let centre = |b: i64| (b * 2 + 1) as f64 * 32.0;
        cases.push((
            0,
            vec![
                Position::new(centre(3), centre(5)),
                Position::new(centre(9), centre(2)),
            ],
        ));
        for (radius, foci) in cases {
            let mut search = LodPlan::new(Grid::new(32.0), None);
            search.set_levels(radius, lod(&[(2, 9), (4, 20)]));
            (search.defer_min, search.sort_max) = (4, 0); // regions noted, then searched
            let mut sorted = search.clone();
            (sorted.defer_min, sorted.sort_max) = (u64::MAX, usize::MAX);
            let mut got = [Vec::new(), Vec::new()];
            for (p, got) in [&mut search, &mut sorted].into_iter().zip(&mut got) {
                p.set_foci(&foci);
                p.resolve();
                loop {
                    let n = got.len();
                    p.load(3, got);
                    if got.len() == n {
                        break;
                    }
                }
            }
            assert!(!search.unscanned.iter().any(|u| !u.is_empty()));
            assert!(got[1].len() > 100, "{}", got[1].len());
            assert_eq!(got[0], got[1], "foci {foci:?}");
            if radius == 0 {
                let first = [(0, ChunkPos::new(9, 2)), (0, ChunkPos::new(3, 5))];
                assert_eq!(got[0][..2], first);
            }
            // One change counted per block loaded.
            assert_eq!(search.changes(), got[0].len() as u64);
        }
    }

    /// With no chunk ready, the loaded blocks no longer wanted that go are exactly those beyond
    /// `r + 1` of every focus, with up to 8 foci (rectangles) and with more (ring by ring), in
    /// level then row order. cargo-mutants: every test had fewer than 9 foci, so the ring walk's
    /// bounds and the choice between the two ways were untested.
    #[test]
    fn blocks_beyond_r_plus_one_of_every_focus_go_with_few_foci_and_many() {
        for n in [3, MAX_FOCI_FAST, MAX_FOCI_FAST + 1, 13] {
            let foci: Vec<Position> = (0..n)
                .map(|i| Position::new(i as f64 * 150.0 - 600.0, (i % 3) as f64 * 200.0))
                .collect();
            let l = LodLevel { step: 2, radius: 6 };
            let mut p = LodPlan::new(Grid::new(32.0), None);
            p.set_levels(1, lod(&[(l.step, l.radius)]));
            p.set_foci(&foci);
            p.resolve();
            load_all(&mut p);
            // Every focus moves 3 chunks south-east and then 2 more: blocks go unwanted, some
            // stay in the band.
            for shift in [96.0, 160.0] {
                let moved: Vec<Position> = foci
                    .iter()
                    .map(|f| Position::new(f.x + shift, f.z + shift))
                    .collect();
                p.set_foci(&moved);
                p.resolve();
                let centres: Vec<ChunkPos> = moved.iter().map(|f| p.grid.chunk_of(*f)).collect();
                let mut due = Vec::new();
                p.due(|_| false, &mut due);
                let wanted: FxHashSet<ChunkPos> = p.wanted(0).collect();
                let ring = |b: &ChunkPos| {
                    let ring = centres.iter().map(|c| block_ring(*b, l.step, *c)).min();
                    ring.expect("foci")
                };
                let r = u64::from(l.radius);
                let mut expect: Vec<(usize, ChunkPos)> = p
                    .loaded(0)
                    .filter(|b| !wanted.contains(b) && ring(b) > r + 1)
                    .map(|b| (0, b))
                    .collect();
                expect.sort_unstable();
                assert!(!expect.is_empty(), "{n} foci");
                let band = p.loaded(0).filter(|b| !wanted.contains(b)).count() - expect.len();
                assert!(band > 0, "{n} foci: some blocks stay in the band");
                assert_eq!(due, expect, "{n} foci, moved {shift}");
                // Every chunk ready: the blocks within `r` (carved out by the moved squares)
                // are replaced and go too; only the band (ring `r + 1`) stays.
                let mut expect: Vec<(usize, ChunkPos)> = p
                    .loaded(0)
                    .filter(|b| !wanted.contains(b) && ring(b) != r + 1)
                    .map(|b| (0, b))
                    .collect();
                expect.sort_unstable();
                assert!(
                    expect.iter().any(|(_, b)| ring(b) <= r),
                    "{n} foci: some carved out"
                );
                due.clear();
                p.due(|_| true, &mut due);
                assert_eq!(due, expect, "{n} foci, moved {shift}, every chunk ready");
            }
        }
    }

    /// After a fill the pending tiles' map gives its room back (a hashed map is iterated at
    /// the cost of its capacity, and the loads and the sorted path iterate it), and a map
    /// still in use keeps it. cargo-mutants: no test looked at the capacity.
    #[test]
    fn the_pending_tiles_give_their_room_back_after_a_fill() {
        let mut p = plan(1, &[(2, 400)], centre());
        let mut out = Vec::new();
        // A part of the fill: many tiles pending, the room kept.
        p.load(20_000, &mut out);
        assert!(p.pending[0].len() > 16, "{}", p.pending[0].len());
        let kept = p.pending[0].capacity();
        assert!(kept <= 8 * (p.pending[0].len() + 16), "{kept}");
        // The rest: none pending, and the room of the thousands the search held given back.
        let mut peak = kept;
        while {
            out.clear();
            p.load(20_000, &mut out);
            !out.is_empty()
        } {
            peak = peak.max(p.pending[0].capacity());
        }
        assert!(p.pending[0].is_empty());
        assert!(
            p.pending[0].capacity() <= 8 * 16,
            "{}",
            p.pending[0].capacity()
        );
        assert!(peak > 8 * 16, "{peak}");
    }

    /// `replaced` answers exactly whether every chunk of a block inside the ground is seen by a
    /// ready chunk or a ready finer block, whatever cell its memo starts from, for cells of
    /// finer blocks (steps 2 and 4 under 8) and of chunks (level 0), with the ground cutting
    /// through blocks; checked chunk by chunk against random readiness. cargo-mutants: the lod
    /// tests reached it only with everything or nothing ready.
    #[test]
    fn replaced_is_every_chunk_seen_whatever_the_memo_says() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut bit = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed & 7 != 0 // seven in eight
        };
        let mut outcomes = [[0u32; 2]; 3]; // [level][replaced]
        let bounds = Bounds {
            min_x: -200.0,
            min_z: -1000.0,
            max_x: 1000.0,
            max_z: 300.0,
        };
        for (levels, bounded) in [
            (&[(2, 10), (8, 24)][..], false),
            (&[(4, 12), (8, 24)][..], true),
            (&[(2, 10), (8, 24)][..], true),
            // Three levels: a cell of step 4 not ready may still have its chunks under ready
            // blocks of step 2, asked chunk by chunk.
            (&[(2, 6), (4, 12), (8, 24)][..], false),
        ] {
            let mut p = LodPlan::new(Grid::new(32.0), bounded.then_some(bounds));
            p.set_levels(1, lod(levels));
            p.set_foci(&[centre()]);
            p.resolve();
            load_all(&mut p);
            p.add_builder(0);
            // A random seven in eight of the finer levels' loaded blocks built (ready).
            let top = levels.len() - 1;
            for j in 0..top {
                let finer: Vec<ChunkPos> = p.loaded(j).collect();
                for b in &finer {
                    let built = bit();
                    p.set_built(0, j, *b, built);
                }
            }
            let ground = p.ground;
            for (k, step) in [(top, 8u32), (0, levels[0].0)] {
                for bx in -4..4i64 {
                    for bz in -4..4i64 {
                        let b = ChunkPos::new(bx, bz);
                        let a = block_area(b, step);
                        let ready: FxHashSet<ChunkPos> = (a.x0 - 1..=a.x1 + 1)
                            .flat_map(|x| (a.z0 - 1..=a.z1 + 1).map(move |z| ChunkPos::new(x, z)))
                            .filter(|_| bit())
                            .collect();
                        let chunk_ready = |c: ChunkPos| ready.contains(&c);
                        let seen = (a.x0..=a.x1).all(|x| {
                            (a.z0..=a.z1).all(|z| {
                                let c = ChunkPos::new(x, z);
                                !ground.holds(c)
                                    || chunk_ready(c)
                                    || (0..k).any(|j| p.is_ready(j, block_of(c, levels[j].0)))
                            })
                        });
                        outcomes[k][usize::from(seen)] += 1;
                        for first in [0, 1, 5, 15, 63, 64, 1000] {
                            let memo = Cell::new(first);
                            let got = p.replaced(k, b, step, &memo, &chunk_ready);
                            assert_eq!(got, seen, "{levels:?} level {k} block {b:?} memo {first}");
                            // The memo names a cell not seen when the block is not replaced.
                            if !got {
                                let unit = if k > 0 { levels[k - 1].0 } else { 1 };
                                let cells = (step / unit).pow(2);
                                assert!(memo.get() < cells, "{}", memo.get());
                            }
                        }
                    }
                }
            }
        }
        for (k, o) in outcomes.iter().enumerate() {
            assert!(o[0] > 5 && o[1] > 5, "level {k}: {o:?}");
        }
    }

    /// Releases while the hole count is kept: the blocks `due` lists as replaced update the
    /// kept count by their own record (the kit's way: the chunks told first), which stays the
    /// count from scratch; each release counts one change; and a block released while still
    /// wanted is pending again. cargo-mutants: the kit tests count holes after such releases
    /// only from scratch, so the kept count's update went untested.
    #[test]
    fn releases_keep_the_hole_count_and_a_wanted_block_released_is_pending_again() {
        let mut p = plan(1, &[(2, 8), (8, 64)], centre());
        load_all(&mut p);
        let square = |c: ChunkPos| c.x.abs() <= 1 && c.z.abs() <= 1;
        let all = || (-1..=1).flat_map(|z| (-1..=1).map(move |x| ChunkPos::new(x, z)));
        p.update_holes(&[centre()], square, &[], true, all);
        // Eight chunks east: the finer level's new blocks carve coarse blocks out (block (1, 0)
        // of step 8, chunks 8..=15, lies within 8 of chunk (8, 0)).
        let moved = Position::new(16.0 + 256.0, 16.0);
        p.set_foci(&[moved]);
        p.resolve();
        load_all(&mut p);
        let square = |c: ChunkPos| (c.x - 8).abs() <= 1 && c.z.abs() <= 1;
        p.note_chunks(&[], square, true);
        let kept = p.update_holes(&[moved], square, &[], true, all);
        assert_eq!(kept, p.holes(&[moved], square));
        let mut due = Vec::new();
        p.due(square, &mut due);
        assert!(due.iter().any(|(k, _)| *k == 1), "{due:?}");
        let changes = p.changes();
        p.note_chunks(&[], square, true);
        for (k, b) in &due {
            p.mark_released(*k, *b);
        }
        assert_eq!(p.changes(), changes + due.len() as u64);
        let kept = p.update_holes(&[moved], square, &[], true, || -> [ChunkPos; 0] {
            panic!("kept: told everything")
        });
        assert_eq!(kept, p.holes(&[moved], square));
        // The ready blocks counted per level (the estimate of the walk over what is ready) are
        // the count's records of them.
        for k in 0..2 {
            let records: u64 = p.h_blocks[k]
                .values()
                .map(|m| u64::from(m.count_ones()))
                .sum();
            assert_eq!(p.h_ready[k], records, "level {k}");
        }
        // A block released while it is still wanted is pending again.
        let b = p.wanted(0).next().expect("a wanted block");
        let pending = p.pending_len[0];
        p.mark_released(0, b);
        assert!(p.pending_set(0).contains(&b));
        assert_eq!(p.pending_len[0], pending + 1);
        p.check_pending(0);
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
}
