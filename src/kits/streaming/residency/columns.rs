//! The derived column set (docs/reference/streaming.md#columns): with `vertical` on, a column
//! `(x, z)` is *loaded* while at least one of its sections `(x, y, z)` is. Column kits (terrain,
//! nav, LOD) build on it in place of the sections.
//!
//! Kept from the sections' loads and releases as they are announced, so its cost is the changes
//! of a tick, never the loaded set: each column holds a count of its loaded sections (looked up
//! only), and a column whose count crossed zero is noted; the kit takes the noted columns at the
//! points the events are due (after the release step's chunk events, right after an eviction's,
//! after the load step's), in row order (z, x). What was announced is the set
//! [`Columns::loaded`] lists, so a column loaded and emptied again between two of those points
//! (or emptied and loaded again) is never announced at all.
//!
//! Plain data, no host types: unit-tested alone; `mod.rs` calls it and emits the events.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use crate::grid::ChunkPos;

use super::Residency;

/// The loaded columns, derived from the loaded sections.
#[derive(Debug, Clone, Default)]
pub struct Columns {
    /// Kept only while `vertical` is on (flat, a column is its chunk: nothing to derive).
    on: bool,
    /// Loaded sections per column (absent: none). Only looked up, never iterated, so its hash
    /// order cannot leak.
    counts: FxHashMap<ChunkPos, u32>,
    /// The columns announced loaded, row order (z, x): what [`Columns::loaded`] lists.
    announced: BTreeSet<ChunkPos>,
    /// Columns whose count crossed zero since they were last taken.
    noted: BTreeSet<ChunkPos>,
}

impl Columns {
    /// No column loaded, the set not kept (`vertical` off).
    pub fn new() -> Self {
        Columns::default()
    }

    /// A set kept from now on (`vertical` on).
    pub fn kept() -> Self {
        Columns {
            on: true,
            ..Columns::default()
        }
    }

    /// Whether the set is kept (`vertical` on).
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Keeps the set while `on`: switched on it is made from `sections` (the loaded sections,
    /// announced as loaded: no event is owed), switched off it is forgotten. Costs nothing when
    /// `on` did not change (each tick asks).
    pub fn set_on<I: IntoIterator<Item = ChunkPos>>(
        &mut self,
        on: bool,
        sections: impl FnOnce() -> I,
    ) {
        if on == self.on {
            return;
        }
        self.on = on;
        if on {
            self.rebuild(sections());
        } else {
            self.clear();
        }
    }

    /// Section `section` loaded (`true`) or was released (nothing while the set is not kept).
    /// A section counted twice in the same direction is the caller's mistake; the count never
    /// goes below zero.
    pub fn section_changed(&mut self, section: ChunkPos, loaded: bool) {
        if !self.on {
            return;
        }
        let column = section.column();
        if loaded {
            let n = self.counts.entry(column).or_insert(0);
            *n += 1;
            if *n == 1 {
                self.noted.insert(column);
            }
        } else if let Some(n) = self.counts.get_mut(&column) {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&column);
                self.noted.insert(column);
            }
        }
    }

    /// Appends to `out`, in row order, the announced columns none of whose sections is loaded
    /// any more, and counts them as announced released.
    pub fn take_unloaded(&mut self, out: &mut Vec<ChunkPos>) {
        if self.noted.is_empty() {
            return;
        }
        let (counts, announced) = (&self.counts, &mut self.announced);
        self.noted.retain(|c| {
            if counts.contains_key(c) {
                return !announced.contains(c); // not announced yet: waits for take_loaded
            }
            if announced.remove(c) {
                out.push(*c);
            }
            false
        });
    }

    /// Appends to `out`, in row order, the columns loaded and not announced yet, and counts them
    /// as announced; a column noted and back where it was announced is forgotten.
    pub fn take_loaded(&mut self, out: &mut Vec<ChunkPos>) {
        if self.noted.is_empty() {
            return;
        }
        let (counts, announced) = (&self.counts, &mut self.announced);
        self.noted.retain(|c| {
            if !counts.contains_key(c) {
                return announced.contains(c); // announced: waits for take_unloaded
            }
            if announced.insert(*c) {
                out.push(*c);
            }
            false
        });
    }

    /// Whether `column` (its `y` ignored) is loaded as announced.
    pub fn is_loaded(&self, column: ChunkPos) -> bool {
        self.announced.contains(&column.column())
    }

    /// The loaded columns as announced, row order (z, x), `y` 0.
    pub fn loaded(&self) -> impl ExactSizeIterator<Item = ChunkPos> + '_ {
        self.announced.iter().copied()
    }

    /// Whether `column` (its `y` ignored) has a loaded section now: what the service answers,
    /// also between a section's load and its column's event.
    pub fn has_sections(&self, column: ChunkPos) -> bool {
        self.counts.contains_key(&column.column())
    }

    /// The columns with a loaded section now, row order (z, x), `y` 0.
    pub fn with_sections(&self) -> Vec<ChunkPos> {
        let mut all: Vec<ChunkPos> = self.counts.keys().copied().collect();
        all.sort_unstable();
        all
    }

    /// How many sections of `column` are loaded.
    pub fn sections_in(&self, column: ChunkPos) -> u32 {
        self.counts.get(&column.column()).copied().unwrap_or(0)
    }

    /// Whether a change is noted and not taken yet.
    pub fn has_noted(&self) -> bool {
        !self.noted.is_empty()
    }

    /// Made again from `sections` (a load of a save, or `vertical` switched on): every column
    /// of a loaded section counts as announced, nothing is noted (no event is owed). Nothing
    /// while the set is not kept.
    pub fn rebuild(&mut self, sections: impl IntoIterator<Item = ChunkPos>) {
        self.clear();
        if !self.on {
            return;
        }
        for s in sections {
            *self.counts.entry(s.column()).or_insert(0) += 1;
            self.announced.insert(s.column());
        }
    }

    /// Forgets every column (the set stays kept or not).
    pub fn clear(&mut self) {
        self.counts.clear();
        self.announced.clear();
        self.noted.clear();
    }
}

/// LOD's view of readiness (docs/reference/lod.md#columns): with `vertical` on, LOD works on the
/// XZ grid of columns, and a column counts as ready when it is loaded and built by every builder.
impl Columns {
    /// Whether chunk `c` counts as ready for LOD: flat, [`Residency::is_ready`]; vertical, its
    /// column loaded and built by every builder.
    pub fn lod_ready(&self, residency: &Residency, c: ChunkPos) -> bool {
        if !self.on {
            return residency.is_ready(c);
        }
        self.is_loaded(c) && residency.column_built(c)
    }

    /// The readiness log as LOD reads it: with `vertical` on each section stands for its column
    /// (a column may then be listed more than once, which LOD's count takes as it is).
    pub fn lod_log(&self, log: &mut [(ChunkPos, bool)]) {
        if self.on {
            for (c, _) in log.iter_mut() {
                *c = c.column();
            }
        }
    }

    /// Every chunk that may be ready for LOD (a recount's candidates): flat, the loaded and the
    /// refused chunks; vertical, the loaded columns.
    pub fn lod_candidates<'a>(
        &'a self,
        residency: &'a Residency,
    ) -> Box<dyn Iterator<Item = ChunkPos> + 'a> {
        if self.on {
            Box::new(self.loaded())
        } else {
            Box::new(
                residency
                    .loaded()
                    .chain(residency.refusals().map(|(c, _)| c)),
            )
        }
    }
}

impl Residency {
    /// Whether column `c` (its `y` ignored) is built by every builder (always, with none):
    /// with vertical sections builders build columns.
    pub(crate) fn column_built(&self, c: ChunkPos) -> bool {
        (0..self.builders).all(|b| self.is_built_by(b, c.column()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: i64, y: i64, z: i64) -> ChunkPos {
        ChunkPos::section(x, y, z)
    }

    fn taken(c: &mut Columns, loaded: bool) -> Vec<ChunkPos> {
        let mut out = Vec::new();
        if loaded {
            c.take_loaded(&mut out);
        } else {
            c.take_unloaded(&mut out);
        }
        out
    }

    #[test]
    fn a_column_is_loaded_while_one_of_its_sections_is() {
        let mut c = Columns::kept();
        c.section_changed(s(1, 0, 2), true);
        c.section_changed(s(1, 3, 2), true);
        c.section_changed(s(1, -2, 2), true);
        assert_eq!(taken(&mut c, true), [ChunkPos::new(1, 2)], "once");
        assert!(c.is_loaded(ChunkPos::new(1, 2)));
        assert!(c.is_loaded(s(1, 7, 2)), "y is ignored");
        assert_eq!(c.sections_in(ChunkPos::new(1, 2)), 3);
        for y in [0, 3] {
            c.section_changed(s(1, y, 2), false);
            assert!(taken(&mut c, false).is_empty(), "one section left");
        }
        assert!(c.is_loaded(ChunkPos::new(1, 2)));
        c.section_changed(s(1, -2, 2), false);
        assert_eq!(taken(&mut c, false), [ChunkPos::new(1, 2)]);
        assert!(!c.is_loaded(ChunkPos::new(1, 2)));
        assert_eq!(c.loaded().len(), 0);
        assert!(!c.has_noted());
    }

    #[test]
    fn columns_are_taken_in_row_order_z_then_x_whatever_the_order_of_their_sections() {
        let mut c = Columns::kept();
        // Sections in their own row order (y first): columns come out by z, then x.
        for sec in [
            s(5, -1, 0),
            s(-3, 0, 1),
            s(2, 0, 0),
            s(0, 4, -1),
            s(-3, 9, 1),
        ] {
            c.section_changed(sec, true);
        }
        let want = [
            ChunkPos::new(0, -1),
            ChunkPos::new(2, 0),
            ChunkPos::new(5, 0),
            ChunkPos::new(-3, 1),
        ];
        assert_eq!(taken(&mut c, true), want);
        assert!(c.loaded().eq(want));
        for sec in [s(-3, 9, 1), s(2, 0, 0), s(-3, 0, 1), s(0, 4, -1)] {
            c.section_changed(sec, false);
        }
        assert_eq!(
            taken(&mut c, false),
            [
                ChunkPos::new(0, -1),
                ChunkPos::new(2, 0),
                ChunkPos::new(-3, 1)
            ]
        );
        assert!(c.loaded().eq([ChunkPos::new(5, 0)]));
    }

    #[test]
    fn a_column_emptied_and_filled_again_between_takes_owes_nothing() {
        let mut c = Columns::kept();
        c.section_changed(s(0, 0, 0), true);
        assert_eq!(taken(&mut c, true).len(), 1);
        // Released and loaded again (another section) before anything is taken.
        c.section_changed(s(0, 0, 0), false);
        c.section_changed(s(0, 1, 0), true);
        assert!(taken(&mut c, false).is_empty());
        assert!(taken(&mut c, true).is_empty());
        assert!(!c.has_noted());
        // Loaded and emptied again before it was announced: never announced.
        c.section_changed(s(4, 0, 4), true);
        c.section_changed(s(4, 0, 4), false);
        assert!(taken(&mut c, false).is_empty());
        assert!(taken(&mut c, true).is_empty());
        assert!(!c.is_loaded(ChunkPos::new(4, 4)));
    }

    #[test]
    fn an_unloaded_column_waits_for_its_take_and_a_loaded_one_for_its_own() {
        let mut c = Columns::kept();
        c.section_changed(s(0, 0, 0), true);
        taken(&mut c, true);
        // The release step empties (0, 0); the load step then loads (1, 0).
        c.section_changed(s(0, 0, 0), false);
        c.section_changed(s(1, 0, 0), true);
        assert_eq!(taken(&mut c, true), [ChunkPos::new(1, 0)], "loads only");
        assert!(c.is_loaded(ChunkPos::new(0, 0)), "not taken yet");
        assert_eq!(taken(&mut c, false), [ChunkPos::new(0, 0)]);
        // Emptied, then a section of it loads again after the take: released, then loaded.
        c.section_changed(s(1, 0, 0), false);
        assert_eq!(taken(&mut c, false), [ChunkPos::new(1, 0)]);
        c.section_changed(s(1, 2, 0), true);
        assert_eq!(taken(&mut c, true), [ChunkPos::new(1, 0)]);
    }

    #[test]
    fn a_rebuild_announces_every_column_of_the_sections_and_owes_no_event() {
        let mut c = Columns::kept();
        c.section_changed(s(9, 9, 9), true);
        c.rebuild([s(0, 0, 0), s(0, 1, 0), s(2, -1, 3)]);
        assert!(!c.has_noted());
        assert!(c.loaded().eq([ChunkPos::new(0, 0), ChunkPos::new(2, 3)]));
        assert_eq!(c.sections_in(ChunkPos::new(0, 0)), 2);
        assert!(!c.is_loaded(ChunkPos::new(9, 9)));
        c.section_changed(s(0, 0, 0), false);
        assert!(taken(&mut c, false).is_empty(), "(0, 1, 0) is left");
        c.section_changed(s(0, 1, 0), false);
        assert_eq!(taken(&mut c, false), [ChunkPos::new(0, 0)]);
    }

    #[test]
    fn a_set_not_kept_counts_nothing_and_switching_on_takes_the_loaded_sections() {
        let mut c = Columns::new();
        assert!(!c.is_on());
        c.section_changed(s(1, 0, 1), true);
        assert_eq!(
            c.sections_in(ChunkPos::new(1, 1)),
            0,
            "flat: nothing derived"
        );
        assert!(!c.has_noted());
        c.set_on(true, || [s(1, 0, 1), s(1, 2, 1), s(3, 0, 0)]);
        assert!(c.is_on());
        assert!(c.loaded().eq([ChunkPos::new(3, 0), ChunkPos::new(1, 1)]));
        assert!(!c.has_noted(), "no event owed");
        c.set_on(true, || -> Vec<ChunkPos> {
            panic!("unchanged: not listed again")
        });
        c.set_on(false, Vec::new);
        assert_eq!(c.loaded().len(), 0);
        assert_eq!(c.sections_in(ChunkPos::new(1, 1)), 0);
    }

    /// Random loads and releases of sections against a naive recount: after each take the
    /// announced set is exactly the columns of the loaded sections, and each take lists exactly
    /// the columns whose state changed since the last take of that kind.
    #[test]
    fn the_announced_set_follows_a_naive_recount_through_random_changes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut c = Columns::kept();
        let mut sections: BTreeSet<ChunkPos> = BTreeSet::new();
        let mut seen: BTreeSet<ChunkPos> = BTreeSet::new();
        for round in 0..400 {
            for _ in 0..(next() % 12) {
                let sec = s(
                    (next() % 5) as i64 - 2,
                    (next() % 4) as i64 - 2,
                    (next() % 5) as i64 - 2,
                );
                let load = !sections.contains(&sec);
                if load {
                    sections.insert(sec);
                } else {
                    sections.remove(&sec);
                }
                c.section_changed(sec, load);
            }
            let naive: BTreeSet<ChunkPos> = sections.iter().map(|s| s.column()).collect();
            let mut out = Vec::new();
            if round % 2 == 0 {
                c.take_unloaded(&mut out);
                let gone: Vec<ChunkPos> = seen.difference(&naive).copied().collect();
                assert_eq!(out, gone, "round {round}");
                seen.retain(|x| naive.contains(x));
            } else {
                c.take_loaded(&mut out);
                let new: Vec<ChunkPos> = naive.difference(&seen).copied().collect();
                assert_eq!(out, new, "round {round}");
                seen.extend(new);
            }
            assert!(c.loaded().eq(seen.iter().copied()), "round {round}");
            for col in &naive {
                let n = sections.iter().filter(|s| s.column() == *col).count();
                assert_eq!(c.sections_in(*col) as usize, n);
            }
        }
    }
}
