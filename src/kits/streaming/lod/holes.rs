//! The holes: chunks within the players' squares (inside the ground) that no ready chunk or
//! block sees, counted from scratch or kept from each change of readiness and each strip the
//! squares gained or lost.

use super::*;

impl LodPlan {
    /// `world.lod.holes` counted from scratch, chunk by chunk (what [`LodPlan::update_holes`]
    /// keeps; it costs the area of the players' squares, so the tests use it as the reference):
    /// the chunks inside the ground within `r_last` of one of `foci` (the players', not
    /// predicted) that are seen by nothing (no ready chunk, no ready block of any level covers
    /// them). Walked from the coarsest level down, descending only into blocks that are not
    /// ready.
    pub fn holes(&self, foci: &[Position], chunk_ready: impl Fn(ChunkPos) -> bool) -> usize {
        let n = self.levels.levels().len();
        let Some(last) = self.level(n.wrapping_sub(1)) else {
            return 0;
        };
        let centres: Vec<ChunkPos> = foci.iter().map(|p| self.grid.chunk_of(*p)).collect();
        let r = i64::from(last.radius);
        let squares: Vec<Area> = centres.iter().map(|c| Area::square(*c, r)).collect();
        let mut top: Vec<ChunkPos> = Vec::new();
        for c in &centres {
            let r = range(*c, last);
            for bz in r.z0..=r.z1 {
                for bx in r.x0..=r.x1 {
                    top.push(ChunkPos::new(bx, bz));
                }
            }
        }
        top.sort_unstable();
        top.dedup();
        top.into_iter()
            .map(|b| self.holes_in(n - 1, b, &squares, &chunk_ready))
            .sum()
    }

    pub(super) fn holes_in(
        &self,
        k: usize,
        b: ChunkPos,
        squares: &[Area],
        chunk_ready: &impl Fn(ChunkPos) -> bool,
    ) -> usize {
        let step = self.level(k).expect("a level in force").step;
        let a = block_area(b, step);
        if !squares.iter().any(|s| s.meets(&a)) {
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
                    if squares.iter().any(|s| s.holds(c))
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

    // ---- world.lod.holes, kept ----

    /// The chunks of tile `t` (of chunks) inside `squares` and the ground, as bits.
    pub(super) fn square_mask(&self, squares: &[Area], t: ChunkPos) -> u64 {
        let ta = tile_area(t);
        let mut m = 0;
        for s in squares {
            if s.meets(&ta) {
                m |= rect_mask(s, t);
            }
        }
        m & rect_mask(&self.ground, t)
    }

    /// Level `k`'s ready blocks (of `step`, as last counted) over tile `t` of chunks, as bits.
    pub(super) fn level_mask(&self, k: usize, step: u32, t: ChunkPos) -> u64 {
        let e = shift(step);
        if step >= TILE {
            let b = ChunkPos::new((t.x << 3) >> e, (t.z << 3) >> e);
            return if has(&self.h_blocks[k], b) {
                u64::MAX
            } else {
                0
            };
        }
        // The tile's chunks are `n × n` blocks of one tile of blocks (steps 2 and 4).
        let n = 8 >> e;
        let (bx0, bz0) = (t.x * n, t.z * n);
        let Some(word) = self.h_blocks[k].get(&ChunkPos::new(bx0 >> 3, bz0 >> 3)) else {
            return 0;
        };
        let (ox, oz) = (bx0 & 7, bz0 & 7);
        // A row of blocks' bits, each widened to `step` chunks; then `step` rows of chunks.
        let (widen, rows): (&[u8], u64) = if step == 2 {
            (&WIDEN_2, 0x0101)
        } else {
            (&WIDEN_4, 0x0101_0101)
        };
        let mut m = 0;
        for j in 0..n {
            let bits = (word >> ((oz + j) * 8 + ox)) & ((1 << n) - 1);
            if bits != 0 {
                m |= (u64::from(widen[bits as usize]) * rows) << (j * i64::from(step) * 8);
            }
        }
        m
    }

    /// The chunks of tile `t` seen by a ready chunk or block, as last counted (the coarsest
    /// level first: a ready block covering the tile answers alone).
    pub(super) fn seen_mask(&self, t: ChunkPos) -> u64 {
        let mut m = 0;
        for k in (0..MAX_LOD_LEVELS).rev() {
            let step = self.hole_steps[k];
            if step != 0 {
                m |= self.level_mask(k, step, t);
                if m == u64::MAX {
                    return m;
                }
            }
        }
        m | self.h_chunks.get(&t).copied().unwrap_or(0)
    }

    /// Whether a ready block (as last counted) of a level coarser than `step` covers `c`.
    pub(super) fn covered_above(&self, step: u32, c: ChunkPos) -> bool {
        // The next coarser level first: the likeliest to cover what changes at its edge.
        (0..MAX_LOD_LEVELS).any(|k| {
            let s = self.hole_steps[k];
            s > step && has(&self.h_blocks[k], block_of(c, s))
        })
    }

    /// The chunks of `r` (inside the ground) seen by a ready chunk or block, as last counted,
    /// walked over `r`: by the coarsest level's blocks when they hold whole tiles (a ready one
    /// counts whole), else tile by tile.
    pub(super) fn seen_walk(&self, r: Area) -> u64 {
        let tile_by_tile = |r: Area| {
            let tiles = r.blocks(TILE);
            let mut n = 0;
            for tz in tiles.z0..=tiles.z1 {
                for tx in tiles.x0..=tiles.x1 {
                    let t = ChunkPos::new(tx, tz);
                    n += u64::from((self.seen_mask(t) & rect_mask(&r, t)).count_ones());
                }
            }
            n
        };
        // The coarsest level counted, when its blocks hold whole tiles: a ready block counts
        // whole, without a mask.
        let top = (0..MAX_LOD_LEVELS)
            .rev()
            .find(|k| self.hole_steps[*k] != 0)
            .filter(|k| self.hole_steps[*k] >= TILE);
        let Some(k) = top else {
            return tile_by_tile(r);
        };
        let step = self.hole_steps[k];
        let blocks = r.blocks(step);
        let mut n = 0;
        for bz in blocks.z0..=blocks.z1 {
            for bx in blocks.x0..=blocks.x1 {
                let b = ChunkPos::new(bx, bz);
                let part = block_area(b, step).intersect(&r).expect("a block of r");
                n += if has(&self.h_blocks[k], b) {
                    part.count()
                } else {
                    tile_by_tile(part)
                };
            }
        }
        n
    }

    /// Block `b` of level `k` became ready (or stopped being ready): the chunks of it in the
    /// players' squares and the ground that nothing else sees change the count. A no-op while
    /// the count is to be made from scratch or the level does not count.
    pub(super) fn hole_block(&mut self, k: usize, b: ChunkPos, ready: bool) {
        if !self.holes_valid || self.hole_steps[k] == 0 || !set_bit(&mut self.h_blocks[k], b, ready)
        {
            return;
        }
        let step = self.hole_steps[k];
        if ready {
            self.h_ready[k] += 1;
            // With no hole, what becomes ready sees nothing new.
            if self.seen != self.area {
                set_bit(&mut self.h_blocks[k], b, false);
                self.seen += self.alone(step, b);
                set_bit(&mut self.h_blocks[k], b, true);
            }
        } else {
            self.h_ready[k] -= 1;
            self.seen -= self.alone(step, b);
        }
    }

    /// The chunks of block `b` of `step` (not counted as ready) in the players' squares and the
    /// ground that nothing else sees.
    pub(super) fn alone(&self, step: u32, b: ChunkPos) -> u64 {
        let whole = block_area(b, step);
        // Under a ready coarser block, or outside the squares or the ground: none.
        if self.covered_above(step, ChunkPos::new(whole.x0, whole.z0)) {
            return 0;
        }
        let Some(a) = whole.intersect(&self.ground) else {
            return 0;
        };
        let one = self.hole_squares.iter().any(|s| s.contains(&a));
        if !one && !self.hole_squares.iter().any(|s| s.meets(&a)) {
            return 0;
        }
        let mut alone = 0u64;
        let tiles = a.blocks(TILE);
        for tz in tiles.z0..=tiles.z1 {
            for tx in tiles.x0..=tiles.x1 {
                let t = ChunkPos::new(tx, tz);
                let mut m = rect_mask(&a, t);
                if !one {
                    m &= self.square_mask(&self.hole_squares, t);
                }
                if m != 0 {
                    alone += u64::from((m & !self.seen_mask(t)).count_ones());
                }
            }
        }
        alone
    }

    /// Chunk `c`'s readiness is `ready` now: counted if it lies in a square and the ground and
    /// no ready block sees it.
    pub(super) fn hole_chunk(&mut self, c: ChunkPos, ready: bool) {
        if !set_bit(&mut self.h_chunks, c, ready)
            || (ready && self.seen == self.area) // no hole: nothing new is seen
            || self.covered_above(1, c)
            || !self.ground.holds(c)
            || !self.hole_squares.iter().any(|s| s.holds(c))
        {
            return;
        }
        if ready {
            self.seen += 1;
        } else {
            self.seen -= 1;
        }
    }

    /// Into `out`: the tiles of chunks where something ready (as last counted) lies, meeting
    /// one of `regions` (unsorted, maybe repeated).
    pub(super) fn ready_tiles(&self, regions: &[Area], out: &mut Vec<ChunkPos>) {
        let meets = |a: &Area| regions.iter().any(|r| r.meets(a));
        for t in self.h_chunks.keys() {
            if meets(&tile_area(*t)) {
                out.push(*t);
            }
        }
        for k in 0..MAX_LOD_LEVELS {
            let step = self.hole_steps[k];
            if step == 0 {
                continue;
            }
            for (bt, word) in &self.h_blocks[k] {
                if step < TILE {
                    // The tile of blocks covers `step × step` tiles of chunks, each `n × n` of
                    // its blocks: one look per tile of chunks, not per block.
                    let n = TILE / step;
                    let s = i64::from(step);
                    let quarter = (1u64 << n) - 1;
                    for j in 0..step {
                        for i in 0..step {
                            let rows =
                                (0..n).fold(0u64, |m, r| m | quarter << ((j * n + r) * 8 + i * n));
                            let t = ChunkPos::new(bt.x * s + i64::from(i), bt.z * s + i64::from(j));
                            if word & rows != 0 && meets(&tile_area(t)) {
                                out.push(t);
                            }
                        }
                    }
                    continue;
                }
                let mut w = *word;
                while w != 0 {
                    let bit = w.trailing_zeros();
                    w &= w - 1;
                    let a = block_area(cell_of(*bt, bit), step);
                    if !meets(&a) {
                        continue;
                    }
                    let tiles = a.blocks(TILE);
                    for tz in tiles.z0..=tiles.z1 {
                        for tx in tiles.x0..=tiles.x1 {
                            let t = ChunkPos::new(tx, tz);
                            if meets(&tile_area(t)) {
                                out.push(t);
                            }
                        }
                    }
                }
            }
        }
    }

    /// About how many tiles of chunks something ready covers (what [`LodPlan::ready_tiles`]
    /// walks).
    pub(super) fn ready_tiles_len(&self) -> u64 {
        let blocks: u64 = (0..MAX_LOD_LEVELS)
            .filter(|k| self.hole_steps[*k] != 0)
            .map(|k| {
                let s = u64::from(self.hole_steps[k]);
                self.h_ready[k] * (s * s / 64).max(1)
            })
            .sum();
        self.h_chunks.len() as u64 + blocks
    }

    /// Chunks whose readiness may have changed (`chunk_ready` says how it is now), told early
    /// (the kit tells those of the tick's first steps before the blocks change, so that a
    /// block released because the chunks replacing it are ready finds them counted); `complete`
    /// false: some were not told, and the holes are counted from scratch at the next
    /// [`LodPlan::update_holes`].
    pub fn note_chunks(
        &mut self,
        changed: &[(ChunkPos, bool)],
        chunk_ready: impl Fn(ChunkPos) -> bool,
        complete: bool,
    ) {
        if !complete {
            self.invalidate_holes();
        }
        if self.holes_valid {
            for &(c, _) in changed {
                self.hole_chunk(c, chunk_ready(c));
            }
        }
        self.chunks_told = true;
    }

    /// `world.lod.holes` kept up to date (the same number as [`LodPlan::holes`]): `changed`
    /// lists the chunks whose readiness may have changed since the last call and `complete`
    /// says whether that list is the whole story; `candidates` yields every chunk that may be
    /// ready (asked only to count from scratch: after a change of the levels' steps in force,
    /// of builders, a clear or a restore, an incomplete list, or a tick without a scene).
    ///
    /// The count is the area of the players' squares of `r_last` inside the ground minus the
    /// chunks of it seen by a ready chunk or block. Each change of readiness of a block (told
    /// as it happens) or of a chunk changes the second by the chunks it alone sees; each strip
    /// the squares gained or lost, by what is seen there: the tiles with something ready in the
    /// strips, found by walking the strips or what is ready, whichever is fewer. So nothing
    /// here costs the area of a square, and a region with nothing ready costs nothing at all.
    pub fn update_holes<I: IntoIterator<Item = ChunkPos>>(
        &mut self,
        foci: &[Position],
        chunk_ready: impl Fn(ChunkPos) -> bool,
        changed: &[(ChunkPos, bool)],
        complete: bool,
        candidates: impl FnOnce() -> I,
    ) -> usize {
        self.chunks_told = false;
        let n = self.levels.levels().len();
        let Some(last) = self.level(n.wrapping_sub(1)) else {
            self.invalidate_holes();
            return 0;
        };
        if !self.holes_valid || !complete || self.in_force_steps() != self.hole_steps {
            let r = i64::from(last.radius);
            let mut squares = std::mem::take(&mut self.squares);
            squares.clear();
            squares.extend(foci.iter().map(|p| Area::square(self.grid.chunk_of(*p), r)));
            self.count_holes(&squares, &chunk_ready, candidates);
            self.squares = squares;
            self.hole_centres.clear();
            self.hole_centres
                .extend(foci.iter().map(|p| self.grid.chunk_of(*p)));
            self.hole_radius = r;
        } else {
            for &(c, _) in changed {
                self.hole_chunk(c, chunk_ready(c));
            }
        }
        self.note_players(foci);
        (self.area - self.seen) as usize
    }

    /// The players' foci are `foci`: their squares of the last level's radius follow (what is
    /// seen in the strips they gained counts, in those they lost no longer). Told early by the
    /// kit (before the tick's blocks change: a block released where no square is any more then
    /// changes nothing), and again by [`LodPlan::update_holes`].
    pub fn note_players(&mut self, foci: &[Position]) {
        let n = self.levels.levels().len();
        let Some(last) = self.level(n.wrapping_sub(1)) else {
            return;
        };
        if !self.holes_valid {
            return;
        }
        let r = i64::from(last.radius);
        let mut centres = std::mem::take(&mut self.scratch);
        centres.clear();
        centres.extend(foci.iter().map(|p| self.grid.chunk_of(*p)));
        if self.hole_radius != r || self.hole_centres != centres {
            let mut squares = std::mem::take(&mut self.squares);
            squares.clear();
            squares.extend(centres.iter().map(|c| Area::square(*c, r)));
            self.move_squares(&squares);
            self.squares = squares;
            self.hole_centres.clear();
            self.hole_centres.extend_from_slice(&centres);
            self.hole_radius = r;
        }
        self.scratch = centres;
    }

    /// The squares moved (or changed size) to `squares`: the area they gained and what is seen
    /// there count, the area they lost and what is seen there no longer do. Gained: each new
    /// square minus every old one and the new ones before it (disjoint pieces); lost: the
    /// converse.
    pub(super) fn move_squares(&mut self, squares: &[Area]) {
        let mut cut = std::mem::take(&mut self.held);
        let mut pieces = std::mem::take(&mut self.pieces);
        let old = std::mem::take(&mut self.hole_squares);
        pieces.clear();
        for (mine, theirs, gain) in [(squares, &old[..], true), (&old[..], squares, false)] {
            for (i, sq) in mine.iter().enumerate() {
                cut.clear();
                cut.extend_from_slice(theirs);
                cut.extend_from_slice(&mine[..i]);
                let ground = self.ground;
                Area::cut(*sq, &cut, &mut |p| {
                    pieces.extend(p.intersect(&ground).map(|p| (p, gain)));
                });
            }
        }
        let (mut gained, mut lost) = (0, 0);
        for (p, gain) in &pieces {
            if *gain {
                self.area += p.count();
            } else {
                lost += p.count();
            }
        }
        self.area -= lost;
        lost = 0;
        // What is seen in the pieces: walked piece by piece, or, when what is ready is fewer
        // tiles than the pieces, found from what is ready (one pass for every piece).
        let walk: u64 = pieces.iter().map(|(p, _)| p.blocks(TILE).count()).sum();
        if walk <= self.ready_tiles_len() {
            for (p, gain) in &pieces {
                let v = self.seen_walk(*p);
                if *gain {
                    gained += v;
                } else {
                    lost += v;
                }
            }
        } else {
            let mut tiles = std::mem::take(&mut self.tiles);
            tiles.clear();
            cut.clear();
            cut.extend(pieces.iter().map(|(p, _)| *p));
            self.ready_tiles(&cut, &mut tiles);
            tiles.sort_unstable();
            tiles.dedup();
            for t in &tiles {
                let seen = self.seen_mask(*t);
                if seen == 0 {
                    continue;
                }
                let ta = tile_area(*t);
                for (p, gain) in pieces.iter().filter(|(p, _)| p.meets(&ta)) {
                    let v = u64::from((seen & rect_mask(p, *t)).count_ones());
                    if *gain {
                        gained += v;
                    } else {
                        lost += v;
                    }
                }
            }
            self.tiles = tiles;
        }
        self.seen = self.seen + gained - lost;
        self.pieces = pieces;
        self.hole_squares = old;
        self.hole_squares.clear();
        self.hole_squares.extend_from_slice(squares);
        self.held = cut;
    }

    /// Counts the holes from scratch: what is ready (the loaded blocks of the levels in force,
    /// the chunks of `candidates` that are ready), then what it sees in `squares`.
    pub(super) fn count_holes<I: IntoIterator<Item = ChunkPos>>(
        &mut self,
        squares: &[Area],
        chunk_ready: &impl Fn(ChunkPos) -> bool,
        candidates: impl FnOnce() -> I,
    ) {
        self.hole_steps = self.in_force_steps();
        self.h_chunks.clear();
        for k in 0..MAX_LOD_LEVELS {
            self.h_blocks[k].clear();
            self.h_ready[k] = 0;
            if self.hole_steps[k] == 0 {
                continue;
            }
            for (b, slot) in &self.slots[k] {
                if slot.built & self.builders == self.builders {
                    set_bit(&mut self.h_blocks[k], *b, true);
                    self.h_ready[k] += 1;
                }
            }
        }
        for c in candidates() {
            if chunk_ready(c) {
                set_bit(&mut self.h_chunks, c, true);
            }
        }
        self.hole_squares.clear();
        self.hole_squares.extend_from_slice(squares);
        self.area = union_count(squares, &self.ground, &mut self.held);
        let mut tiles = std::mem::take(&mut self.tiles);
        tiles.clear();
        self.ready_tiles(squares, &mut tiles);
        tiles.sort_unstable();
        tiles.dedup();
        self.seen = tiles
            .iter()
            .map(|t| u64::from((self.seen_mask(*t) & self.square_mask(squares, *t)).count_ones()))
            .sum();
        self.tiles = tiles;
        self.holes_valid = true;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use std::collections::BTreeSet;

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
            let kept = p.update_holes(
                &[at],
                |c| ready.contains(&c),
                changed,
                true,
                || ready.iter().copied(),
            );
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

    /// A block released as replaced by chunks that became ready since the count last saw them
    /// (not told by `note_chunks`): its release must be counted, and the chunks' readiness
    /// after it. Told, the release changes only the count's record. Either way the count is
    /// the one made from scratch.
    #[test]
    fn a_block_replaced_by_chunks_the_count_has_not_seen_is_counted_when_released() {
        for told in [false, true] {
            let mut p = plan(2, &[(2, 8)], Position::new(-200.0, -200.0)); // (-7, -7)
            load_all(&mut p);
            assert!(p.loaded(0).any(|b| b == ChunkPos::new(0, 0)));
            let mut ready: BTreeSet<ChunkPos> = BTreeSet::new();
            let at = Position::new(48.0, 48.0); // chunk (1, 1): block (0, 0) is carved
            let none =
                |p: &mut LodPlan, ready: &BTreeSet<ChunkPos>, changed: &[(ChunkPos, bool)]| {
                    p.update_holes(
                        &[at],
                        |c| ready.contains(&c),
                        changed,
                        true,
                        || ready.iter().copied(),
                    )
                };
            none(&mut p, &ready, &[]);
            p.set_foci(&[at]);
            p.resolve();
            // The four chunks of block (0, 0) become ready.
            let changed: Vec<(ChunkPos, bool)> = [(0, 0), (1, 0), (0, 1), (1, 1)]
                .map(|(x, z)| (ChunkPos::new(x, z), true))
                .to_vec();
            ready.extend(changed.iter().map(|(c, _)| *c));
            let mut rest = changed.clone();
            if told {
                p.note_chunks(&changed, |c| ready.contains(&c), true);
                rest.clear();
            }
            let mut due = Vec::new();
            p.due(|c| ready.contains(&c), &mut due);
            assert!(due.contains(&(0, ChunkPos::new(0, 0))), "{due:?}");
            for (k, b) in due {
                p.mark_released(k, b);
            }
            let kept = none(&mut p, &ready, &rest);
            assert_eq!(kept, p.holes(&[at], |c| ready.contains(&c)), "told: {told}");
        }
    }

    /// The count is made from scratch (the only time `candidates` is asked) at the first
    /// update, after an incomplete list of chunks, or when the levels' steps in force change;
    /// never on a tick that told everything, whatever moved: a recount costs the area of the
    /// players' squares.
    #[test]
    fn the_count_is_made_from_scratch_only_when_it_must_be() {
        let mut p = plan(1, &[(2, 4), (8, 64)], centre());
        load_all(&mut p);
        let square = |c: ChunkPos| c.x.abs() <= 1 && c.z.abs() <= 1;
        let asked = Cell::new(0);
        let update = |p: &mut LodPlan, at: Position, changed: &[(ChunkPos, bool)], complete| {
            let candidates = || {
                asked.set(asked.get() + 1);
                (-1..=1).flat_map(|z| (-1..=1).map(move |x| ChunkPos::new(x, z)))
            };
            let kept = p.update_holes(&[at], square, changed, complete, candidates);
            assert_eq!(kept, p.holes(&[at], square));
        };
        update(&mut p, centre(), &[], true);
        assert_eq!(asked.get(), 1, "the first count");
        for _ in 0..3 {
            p.note_chunks(&[(ChunkPos::new(0, 0), true)], square, true);
            update(&mut p, centre(), &[(ChunkPos::new(0, 0), true)], true);
        }
        let moved = Position::new(16.0 + 96.0, 16.0);
        p.set_foci(&[moved]);
        p.resolve();
        update(&mut p, moved, &[], true);
        assert_eq!(asked.get(), 1, "told everything: kept");
        p.note_chunks(&[], square, false);
        update(&mut p, moved, &[], true);
        assert_eq!(asked.get(), 2, "a list told incomplete");
        p.set_levels(1, lod(&[(4, 8), (8, 64)]));
        p.resolve();
        load_all(&mut p);
        update(&mut p, moved, &[], true);
        assert_eq!(asked.get(), 3, "another step in force");
        update(&mut p, moved, &[], true);
        assert_eq!(asked.get(), 3);
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
}
