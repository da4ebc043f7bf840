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
    /// last tick); otherwise one sort. No allocation either way.
    pub fn take_nearest(&mut self, k: usize, out: &mut Vec<ChunkPos>) {
        let Some(focus) = self.focus else { return };
        let k = k.min(self.pending.len());
        if k.saturating_mul(16) < self.pending.len() {
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
        } else {
            let grid = self.grid;
            self.pending
                .sort_unstable_by(|a, b| grid.nearest_first(focus, *a, *b));
            out.extend(self.pending.drain(..k));
        }
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
}
