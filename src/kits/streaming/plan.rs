//! The pure planner: which chunks are loaded, which are pending, which refusals are held, and what
//! each tick must release and load. Plain data over [`Grid`] math, no host types, so it can be
//! unit-tested and benchmarked alone; the kit asks the hooks and applies the answers.
//!
//! Work is proportional to what changed: the wanted square, the release scan and the refusal drop
//! rules are recomputed only when the focus *chunk*, the radius or the refusals changed. A tick in
//! which the focus stays in its chunk and nothing is pending does a handful of comparisons.

use std::collections::{BTreeMap, BTreeSet};

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

/// The view the pending set was computed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct View {
    centre: ChunkPos,
    radius: u32,
}

/// Loaded chunks, pending chunks and held refusals around a focus.
#[derive(Debug, Clone)]
pub struct Residency {
    grid: Grid,
    bounds: Option<Bounds>,
    loaded: BTreeSet<ChunkPos>,
    refusals: BTreeMap<ChunkPos, Held>,
    /// Wanted, not loaded, not refused, in no particular order (see [`Residency::take_nearest`]).
    pending: Vec<ChunkPos>,
    focus: Option<Position>,
    view: Option<View>,
    /// Set when something other than the view changed what is due (a refusal was released).
    stale: bool,
}

impl Residency {
    /// Nothing loaded, no focus.
    pub fn new(grid: Grid, bounds: Option<Bounds>) -> Self {
        Residency {
            grid,
            bounds,
            loaded: BTreeSet::new(),
            refusals: BTreeMap::new(),
            pending: Vec::new(),
            focus: None,
            view: None,
            stale: false,
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

    /// The last focus.
    pub fn focus(&self) -> Option<Position> {
        self.focus
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

    /// Pending chunks, nearest-first from the last focus.
    pub fn pending(&self) -> Vec<ChunkPos> {
        let mut v = self.pending.clone();
        if let Some(f) = self.focus {
            v.sort_unstable_by(|a, b| self.grid.nearest_first(f, *a, *b));
        }
        v
    }

    /// Step 1 of a tick, after the focus is resolved: applies the refusal drop rules with this
    /// focus and radius, recomputes the pending set, and appends to `releases` (in row order) the
    /// loaded chunks beyond `radius + 1` that hold no unload refusal. Does nothing when the focus
    /// chunk and radius are unchanged and no refusal was released.
    pub fn update_view(
        &mut self,
        focus: Option<Position>,
        radius: u32,
        releases: &mut Vec<ChunkPos>,
    ) {
        self.focus = focus;
        let view = focus.map(|f| View {
            centre: self.grid.chunk_of(f),
            radius,
        });
        if view == self.view && !self.stale {
            return;
        }
        self.view = view;
        self.stale = false;
        self.pending.clear();
        let Some(v) = view else {
            // No focus: nothing is wanted and nothing is released; load refusals lapse.
            self.refusals.retain(|_, h| h.kind == RefusalKind::Unload);
            return;
        };
        let (wanted, kept) = (u64::from(v.radius), u64::from(v.radius) + 1);
        let (grid, bounds) = (self.grid, self.bounds);
        self.refusals.retain(|c, h| match h.kind {
            RefusalKind::Load => {
                c.ring_distance(v.centre) <= wanted && grid.overlaps(*c, bounds.as_ref())
            }
            RefusalKind::Unload => c.ring_distance(v.centre) > kept,
        });
        releases.extend(
            self.loaded
                .iter()
                .filter(|c| c.ring_distance(v.centre) > kept && !self.refusals.contains_key(c)),
        );
        self.fill_pending(v);
    }

    /// The pending set of view `v`: its wanted square, minus loaded and refused chunks.
    fn fill_pending(&mut self, v: View) {
        let (loaded, refusals) = (&self.loaded, &self.refusals);
        self.pending.extend(
            self.grid
                .square(v.centre, v.radius, self.bounds.as_ref())
                .filter(|c| !loaded.contains(c) && !refusals.contains_key(c)),
        );
    }

    /// Takes the `k` nearest pending chunks out of the pending set and appends them to `out`,
    /// nearest-first (their hooks are asked next, in that order). For a budget small against the
    /// pending set, `k` linear scans (O(k·pending), no sorting, whatever the focus did since the
    /// last tick); otherwise one sort. Both give the same chunks in the same order (a unit test
    /// holds them to it), so where the threshold lies is a matter of speed only. No allocation
    /// either way.
    pub fn take_nearest(&mut self, k: usize, out: &mut Vec<ChunkPos>) {
        let Some(focus) = self.focus else { return };
        let k = k.min(self.pending.len());
        if k.saturating_mul(16) < self.pending.len() {
            self.take_by_scan(focus, k, out);
        } else {
            self.take_by_sort(focus, k, out);
        }
    }

    /// `k` linear scans, each taking the nearest remaining pending chunk.
    fn take_by_scan(&mut self, focus: Position, k: usize, out: &mut Vec<ChunkPos>) {
        for _ in 0..k {
            let mut best = 0;
            let mut best_d = self.grid.distance_sq(focus, self.pending[0]);
            for (i, c) in self.pending.iter().enumerate().skip(1) {
                let d = self.grid.distance_sq(focus, *c);
                if d.total_cmp(&best_d)
                    .then(c.cmp(&self.pending[best]))
                    .is_lt()
                {
                    (best, best_d) = (i, d);
                }
            }
            out.push(self.pending.swap_remove(best));
        }
    }

    /// One sort of the pending set, then its first `k`.
    fn take_by_sort(&mut self, focus: Position, k: usize, out: &mut Vec<ChunkPos>) {
        let grid = self.grid;
        self.pending
            .sort_unstable_by(|a, b| grid.nearest_first(focus, *a, *b));
        out.extend(self.pending.drain(..k));
    }

    /// Records that `chunk` loaded.
    pub fn mark_loaded(&mut self, chunk: ChunkPos) {
        self.loaded.insert(chunk);
    }

    /// Records that `chunk` was released.
    pub fn mark_released(&mut self, chunk: ChunkPos) {
        self.loaded.remove(&chunk);
    }

    /// Holds a refusal of `chunk`.
    pub fn hold(&mut self, chunk: ChunkPos, held: Held) {
        self.refusals.insert(chunk, held);
    }

    /// Drops whatever refusal is held at `chunk`: a load refusal makes the chunk pending again
    /// (if wanted), an unload refusal makes it due for release again on the next tick.
    /// Returns whether a refusal was held.
    pub fn release_refusal(&mut self, chunk: ChunkPos) -> bool {
        let Some(held) = self.refusals.remove(&chunk) else {
            return false;
        };
        match held.kind {
            RefusalKind::Load => {
                if let Some(v) = self.view {
                    if chunk.ring_distance(v.centre) <= u64::from(v.radius)
                        && self.grid.overlaps(chunk, self.bounds.as_ref())
                    {
                        self.pending.push(chunk);
                    }
                }
            }
            RefusalKind::Unload => self.stale = true,
        }
        true
    }

    /// Forgets everything (leaving a scene): returns the chunks that were loaded, in row order.
    pub fn clear(&mut self) -> Vec<ChunkPos> {
        let released = std::mem::take(&mut self.loaded).into_iter().collect();
        self.refusals.clear();
        self.pending.clear();
        self.focus = None;
        self.view = None;
        self.stale = false;
        released
    }

    /// Replaces the whole state (loading a save). The pending set is recomputed from `focus`.
    pub fn restore(
        &mut self,
        loaded: BTreeSet<ChunkPos>,
        refusals: BTreeMap<ChunkPos, Held>,
        focus: Option<Position>,
        radius: u32,
    ) {
        self.clear();
        self.loaded = loaded;
        self.refusals = refusals;
        // The pending set is recomputed now for `pending()`; the next tick re-checks releases
        // and drop rules (`stale`), which finds nothing new unless a refusal was released just
        // before the save.
        self.focus = focus;
        self.stale = true;
        self.view = focus.map(|f| View {
            centre: self.grid.chunk_of(f),
            radius,
        });
        if let Some(v) = self.view {
            self.fill_pending(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res() -> Residency {
        Residency::new(Grid::new(32.0), None)
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
        r.restore(BTreeSet::new(), refusals, Some(Position::new(8.0, 8.0)), 1);
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
        r.restore(BTreeSet::new(), refusals, Some(Position::new(8.0, 8.0)), 1);
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

    #[test]
    fn the_linear_scan_and_the_sort_take_the_same_chunks_in_the_same_order() {
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
            let (mut scan, mut sort) = (r.clone(), r.clone());
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let f = r.focus().unwrap();
            scan.take_by_scan(f, k.min(len), &mut a);
            sort.take_by_sort(f, k.min(len), &mut b);
            assert_eq!(a, b, "case {case}: focus {f:?}, radius {radius}, k {k}");
            assert_eq!(scan.pending(), sort.pending(), "case {case}: what is left");
            let mut expected = r.pending();
            expected.truncate(k.min(len));
            assert_eq!(a, expected, "case {case}: the k first of pending()");
        }
    }
}
