//! What the planner's tests share: levels from pairs, a plan around a point, loading all, and
//! looks inside a plan (its pending blocks as a set, the shape of the pending side).

use super::*;
use crate::kits::streaming::config::{LodLevelDef, LodRadius, LodStep};
use serde_json::json;

pub(super) fn lod(levels: &[(u32, u32)]) -> Lod {
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
/// its blocks within `r_k` (docs/reference/lod.md#blocks).
pub(super) fn plan(radius: u32, levels: &[(u32, u32)], at: Position) -> LodPlan {
    let mut p = LodPlan::new(Grid::new(32.0), None);
    p.set_levels(radius, lod(levels));
    p.set_foci(&[at]);
    p.resolve();
    p
}

/// Loads everything wanted (no builders: loaded is ready).
pub(super) fn load_all(p: &mut LodPlan) -> Vec<(usize, ChunkPos)> {
    let mut out = Vec::new();
    p.load(usize::MAX, &mut out);
    out
}

pub(super) fn centre() -> Position {
    Position::new(16.0, 16.0) // chunk (0, 0)
}

impl LodPlan {
    /// The pending blocks of level `k`: those kept by tile, and those found now in the
    /// rectangles not looked at (wanted, not loaded).
    pub(super) fn pending_set(&self, k: usize) -> FxHashSet<ChunkPos> {
        let mut out = FxHashSet::default();
        for (t, m) in &self.pending[k] {
            let mut m = *m;
            while m != 0 {
                out.insert(cell_of(*t, m.trailing_zeros()));
                m &= m - 1;
            }
        }
        let Some(l) = self.level(k) else {
            return out;
        };
        let mut areas = Vec::new();
        self.areas_into(k, &mut areas);
        let ranges: Vec<Area> = self.centres.iter().map(|c| range(*c, l)).collect();
        let now = Now {
            step: l.step,
            areas: &areas,
            unit: self.carve(k).unit(),
            ranges: &ranges,
            ground: self.ground_blocks(l.step),
        };
        for a in &self.unscanned[k] {
            let t = a.blocks(TILE);
            for tz in t.z0..=t.z1 {
                for tx in t.x0..=t.x1 {
                    let t = ChunkPos::new(tx, tz);
                    let mut m = now.wanted_mask(t);
                    // The tile's mask is the block-by-block test's.
                    for bit in 0..64 {
                        assert_eq!(m >> bit & 1 == 1, now.wants(cell_of(t, bit)));
                    }
                    while m != 0 {
                        let b = cell_of(t, m.trailing_zeros());
                        m &= m - 1;
                        if !self.slots[k].contains_key(&b) {
                            out.insert(b);
                        }
                    }
                }
            }
        }
        out
    }

    /// The shape of the pending side: rectangles aligned to tiles, disjoint, holding no
    /// tile kept by bits; no empty tile kept.
    pub(super) fn check_pending(&self, k: usize) {
        let u = &self.unscanned[k];
        for (i, a) in u.iter().enumerate() {
            assert_eq!(*a, a.blocks(TILE).chunks(TILE), "aligned: {a:?}");
            assert!(u[..i].iter().all(|b| !b.meets(a)), "disjoint: {u:?}");
        }
        for (t, m) in &self.pending[k] {
            assert_ne!(*m, 0);
            assert!(!u.iter().any(|a| a.meets(&tile_area(*t))), "{t:?} in {u:?}");
        }
    }
}
