//! Complete chunks (docs/reference/streaming.md#complete-chunks): a loaded chunk is complete when
//! it and every chunk within ring `k` of it that overlaps the ground are loaded and built by
//! every builder. Kept up to date incrementally: each loaded chunk counts its *missing*
//! neighbours (within ring `k`, inside the ground, not loaded-and-built), so a chunk whose state
//! changes touches the `(2k + 1)²` chunks around it, never the loaded set. The chunks whose
//! completeness flipped are logged; the end of the tick diffs them against the set announced at
//! the end of the last tick ([`Residency::take_complete_changes`]).

use super::*;

/// The completeness record (only kept while `k > 0`).
#[derive(Debug, Clone, Default)]
pub(super) struct Completeness {
    /// `neighbours` in force (0: nothing is tracked).
    pub(super) k: u32,
    /// Per loaded chunk: its neighbours within ring `k` inside the ground that are not loaded
    /// and built by every builder. Looked up only, never iterated.
    pub(super) missing: FxHashMap<ChunkPos, u32>,
    /// The complete chunks now. Looked up on every count change around a load, release or
    /// build (a hash lookup, where an ordered set's was a tenth of the drive's tick); put in row
    /// order only when the service lists them.
    pub(super) now: FxHashSet<ChunkPos>,
    /// The chunks complete at the end of the last tick, less those released since (their
    /// `world.chunk.unloaded` said it).
    pub(super) announced: FxHashSet<ChunkPos>,
    /// Chunks whose completeness may differ from `announced`: flipped since the last end of
    /// tick (or everything after a restore or a change of `k`). A log, put in row order and
    /// deduplicated at the end of the tick; a chunk released since may stay in it (the end of
    /// the tick finds it neither complete nor announced).
    pub(super) changed: Vec<ChunkPos>,
}

/// A completeness change the end of the tick announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompleteChange {
    /// The chunk.
    pub chunk: ChunkPos,
    /// `true`: it became complete (`world.chunk.complete`); `false`: it is loaded and no longer
    /// complete (`world.chunk.incomplete`).
    pub complete: bool,
}

impl Residency {
    /// `neighbours` in force for completeness (and added to every focus's radius by the kit).
    pub fn neighbours(&self) -> u32 {
        self.complete.k
    }

    /// Sets `neighbours` (`k`). A change recomputes every loaded chunk's count (rare: a mod or
    /// a save changed the setting) and marks every loaded or announced chunk to be compared at
    /// the next end of tick. With `k = 0` nothing is tracked and the announced set is
    /// forgotten (nothing is emitted with `k = 0`).
    pub fn set_neighbours(&mut self, k: u32) {
        if k == self.complete.k {
            return;
        }
        self.complete.k = k;
        self.recount_complete();
        if k == 0 {
            self.complete.announced.clear();
        }
    }

    /// Recounts completeness from the loaded set (a restore, a new builder, a change of `k`),
    /// and marks every loaded or announced chunk to be compared at the next end of tick.
    pub(super) fn recount_complete(&mut self) {
        self.mesh_progress.set(None);
        self.readiness_epoch += 1;
        let c = &mut self.complete;
        c.missing.clear();
        c.now.clear();
        c.changed.clear();
        if c.k == 0 {
            return;
        }
        let loaded: Vec<ChunkPos> = self.loaded.iter().copied().collect();
        for &d in &loaded {
            let m = self.count_missing(d);
            self.complete.missing.insert(d, m);
        }
        for &d in &loaded {
            if self.good(d) && self.complete.missing[&d] == 0 {
                self.complete.now.insert(d);
            }
        }
        let c = &mut self.complete;
        c.changed.extend(loaded);
        c.changed.extend(c.announced.iter().copied());
    }

    /// Loaded and built by every builder.
    fn good(&self, c: ChunkPos) -> bool {
        self.built.get(&c).is_some_and(|b| self.all_built(*b))
    }

    /// The chunks within ring `k` of `d` inside the ground, `d` included: the square around it,
    /// and with vertical sections the cube (`k` rows each side; 26 neighbours at `k = 1`). The
    /// ring stays square with a disc (a mesher's neighbours are the ones around it).
    fn cube(&self, d: ChunkPos, k: u32) -> impl Iterator<Item = ChunkPos> + '_ {
        let rows = if self.form.vertical.is_some() { k } else { 0 };
        self.inside(Rect::around(d, k, false, rows))
    }

    /// `d`'s neighbours within ring `k` inside the ground that are not good (plain loops, as
    /// [`Residency::neighbours_gained`] walks them: this runs at every load).
    fn count_missing(&self, d: ChunkPos) -> u32 {
        let k = i64::from(self.complete.k);
        let rows = if self.form.vertical.is_some() { k } else { 0 };
        let mut missing = 0;
        for y in d.y - rows..=d.y + rows {
            for z in d.z - k..=d.z + k {
                for x in d.x - k..=d.x + k {
                    let c = ChunkPos::section(x, y, z);
                    if c != d && !self.good(c) && self.grid.overlaps(c, self.bounds.as_ref()) {
                        missing += 1;
                    }
                }
            }
        }
        missing
    }

    /// Whether `chunk` is complete now: with `k > 0` from the record; with `k = 0`, loaded
    /// and built by every builder (docs/reference/streaming.md#complete-chunks).
    pub fn is_complete(&self, chunk: ChunkPos) -> bool {
        if self.complete.k == 0 {
            self.good(chunk)
        } else {
            self.complete.now.contains(&chunk)
        }
    }

    /// The complete chunks now, in row order.
    pub fn complete_chunks(&self) -> Vec<ChunkPos> {
        if self.complete.k == 0 {
            self.loaded
                .iter()
                .copied()
                .filter(|c| self.good(*c))
                .collect()
        } else {
            let mut out: Vec<ChunkPos> = self.complete.now.iter().copied().collect();
            out.sort_unstable();
            out
        }
    }

    /// How many chunks are complete now (`k > 0`; 0 with `k = 0`, which counts nothing).
    pub fn complete_len(&self) -> usize {
        self.complete.now.len()
    }

    /// Re-evaluates `c`'s completeness after its count or state changed.
    fn update_complete(&mut self, c: ChunkPos) {
        let now = self.good(c) && self.complete.missing.get(&c) == Some(&0);
        let flipped = if now {
            self.complete.now.insert(c)
        } else {
            self.complete.now.remove(&c)
        };
        if flipped {
            self.mesh_progress_flip(c, now);
            self.complete.changed.push(c);
        }
    }

    /// `c` became complete (`now`) or stopped being: the counted progress, if any, follows it
    /// when `c` lies in a focus's mesh footprint (each focus's radius and rows less `k`) — a look at each
    /// focus, not a recount of the mesh area on every tick a chunk completes.
    fn mesh_progress_flip(&self, c: ChunkPos, now: bool) {
        let Some((done, wanted)) = self.mesh_progress.get() else {
            return;
        };
        let k = self.complete.k;
        let in_mesh = self
            .foci
            .iter()
            .any(|s| self.footprint(s.centre, s.view.radius, k).contains(c));
        if in_mesh {
            let done = if now { done + 1 } else { done - 1 };
            self.mesh_progress.set(Some((done, wanted)));
        }
    }

    /// `d` was just loaded (its entry in `built` exists). Counts its missing neighbours and,
    /// if it is already good (no builder), tells its neighbours.
    pub(super) fn complete_loaded(&mut self, d: ChunkPos) {
        if self.complete.k == 0 {
            return;
        }
        let m = self.count_missing(d);
        self.complete.missing.insert(d, m);
        if self.good(d) {
            self.neighbours_gained(d, true);
        }
        self.update_complete(d);
    }

    /// `d` is about to be released (still loaded): its neighbours miss it, and it leaves the
    /// complete and announced sets silently (its `world.chunk.unloaded` says it).
    pub(super) fn complete_releasing(&mut self, d: ChunkPos) {
        if self.complete.k == 0 {
            return;
        }
        if self.good(d) {
            self.neighbours_gained(d, false);
        }
        if self.complete.now.contains(&d) {
            self.mesh_progress_flip(d, false);
        }
        let c = &mut self.complete;
        c.missing.remove(&d);
        c.now.remove(&d);
        c.announced.remove(&d);
    }

    /// `d`'s built bits changed from `was` (it is loaded).
    pub(super) fn complete_built(&mut self, d: ChunkPos, was: u64, now: u64) {
        if self.complete.k == 0 || self.all_built(was) == self.all_built(now) {
            return;
        }
        self.neighbours_gained(d, self.all_built(now));
        self.update_complete(d);
    }

    /// `d` became good (`gained`) or stopped being good: the loaded chunks within ring `k`
    /// count one missing neighbour less or more.
    fn neighbours_gained(&mut self, d: ChunkPos, gained: bool) {
        let k = i64::from(self.complete.k);
        let rows = if self.form.vertical.is_some() { k } else { 0 };
        for y in d.y - rows..=d.y + rows {
            for z in d.z - k..=d.z + k {
                for x in d.x - k..=d.x + k {
                    let c = ChunkPos::section(x, y, z);
                    if c == d {
                        continue;
                    }
                    // Only loaded chunks have a count; `d` lies inside the ground, as every
                    // loaded chunk does, so it is in each of their rings.
                    let Some(m) = self.complete.missing.get_mut(&c) else {
                        continue;
                    };
                    // Completeness can flip only where the count leaves or reaches 0.
                    let flips = if gained {
                        *m -= 1;
                        *m == 0
                    } else {
                        *m += 1;
                        *m == 1
                    };
                    if flips {
                        self.update_complete(c);
                    }
                }
            }
        }
    }

    /// The end of the tick (`k > 0`): the chunks that became complete and the loaded chunks
    /// no longer complete since the last end of tick, in row order, appended to `out`; the
    /// announced set becomes the complete set.
    pub fn take_complete_changes(&mut self, out: &mut Vec<CompleteChange>) {
        let c = &mut self.complete;
        let mut changed = std::mem::take(&mut c.changed);
        changed.sort_unstable();
        changed.dedup();
        for chunk in changed.drain(..) {
            let (now, was) = (c.now.contains(&chunk), c.announced.contains(&chunk));
            if now && !was {
                c.announced.insert(chunk);
                out.push(CompleteChange {
                    chunk,
                    complete: true,
                });
            } else if !now && was {
                c.announced.remove(&chunk);
                if self.loaded.contains(&chunk) {
                    out.push(CompleteChange {
                        chunk,
                        complete: false,
                    });
                }
            }
        }
        self.complete.changed = changed; // empty: its room is kept for the next tick
    }

    /// The chunks complete at the end of the last tick (less those released since), row
    /// order: what a save keeps so that a loaded game announces exactly what the uninterrupted
    /// one does.
    pub fn announced_complete(&self) -> impl Iterator<Item = ChunkPos> {
        let mut announced: Vec<ChunkPos> = self.complete.announced.iter().copied().collect();
        announced.sort_unstable();
        announced.into_iter()
    }

    /// Restores the announced set (a save's `complete`; only loaded chunks are kept), and
    /// marks every loaded or announced chunk to be compared at the next end of tick.
    pub fn restore_announced(&mut self, announced: impl IntoIterator<Item = ChunkPos>) {
        if self.complete.k == 0 {
            return;
        }
        let loaded = &self.loaded;
        self.complete.announced = announced
            .into_iter()
            .filter(|c| loaded.contains(c))
            .collect();
        let c = &mut self.complete;
        c.changed.extend(c.announced.iter().copied());
        c.changed.extend(self.loaded.iter().copied());
    }

    /// The complete set recounted from scratch (what the record must equal; for tests).
    pub fn naive_complete(&self) -> Vec<ChunkPos> {
        let k = self.complete.k;
        self.loaded
            .iter()
            .copied()
            .filter(|&c| self.cube(c, k).all(|n| self.good(n)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    fn load(r: &mut Residency, cs: &[(i64, i64)]) {
        for &(x, z) in cs {
            r.mark_loaded(ChunkPos::new(x, z));
        }
    }

    fn changes(r: &mut Residency) -> Vec<(i64, i64, bool)> {
        let mut out = Vec::new();
        r.take_complete_changes(&mut out);
        assert_eq!(
            r.complete_chunks(),
            r.naive_complete(),
            "incremental = naive"
        );
        out.into_iter()
            .map(|c| (c.chunk.x, c.chunk.z, c.complete))
            .collect()
    }

    fn square(cx: i64, cz: i64, r: i64) -> Vec<(i64, i64)> {
        let mut v = Vec::new();
        for z in cz - r..=cz + r {
            for x in cx - r..=cx + r {
                v.push((x, z));
            }
        }
        v
    }

    /// A chunk is complete once its ring-1 neighbours are loaded; a neighbour released makes
    /// it incomplete; the released chunk itself (complete before) gets nothing.
    #[test]
    fn completeness_follows_loads_and_releases_of_neighbours() {
        let mut r = res();
        r.set_neighbours(1);
        load(&mut r, &square(0, 0, 1));
        assert_eq!(changes(&mut r), [(0, 0, true)]);
        load(&mut r, &[(2, -1), (2, 0), (2, 1)]);
        assert_eq!(changes(&mut r), [(1, 0, true)]);
        r.mark_released(ChunkPos::new(-1, 0));
        assert_eq!(changes(&mut r), [(0, 0, false)]);
        r.mark_released(ChunkPos::new(1, 0));
        // (1, 0) was complete and is released: nothing (its unloaded event says it).
        assert_eq!(changes(&mut r), []);
        assert!(!r.is_complete(ChunkPos::new(1, 0)));
    }

    /// Completing and losing it between two ends of tick is no event; losing and regaining
    /// neither.
    #[test]
    fn a_flip_and_back_within_one_tick_is_no_event() {
        let mut r = res();
        r.set_neighbours(1);
        let mut all = square(0, 0, 1);
        all.retain(|c| *c != (1, 1));
        load(&mut r, &all);
        assert_eq!(changes(&mut r), []);
        r.mark_loaded(ChunkPos::new(1, 1));
        assert!(r.is_complete(ChunkPos::new(0, 0)));
        r.mark_released(ChunkPos::new(-1, -1));
        assert_eq!(changes(&mut r), [], "completed and lost on one tick");
        r.mark_loaded(ChunkPos::new(-1, -1));
        assert_eq!(changes(&mut r), [(0, 0, true)]);
        r.mark_released(ChunkPos::new(-1, -1));
        r.mark_loaded(ChunkPos::new(-1, -1));
        assert_eq!(changes(&mut r), [], "lost and regained on one tick");
    }

    /// Every builder must have built the chunk and its neighbours; an unbuild makes it (and
    /// its neighbours) incomplete.
    #[test]
    fn completeness_waits_for_every_builder() {
        let mut r = res();
        let (a, b) = (r.add_builder().unwrap(), r.add_builder().unwrap());
        r.set_neighbours(1);
        load(&mut r, &square(0, 0, 1));
        for (x, z) in square(0, 0, 1) {
            r.set_built(a, ChunkPos::new(x, z), true);
        }
        assert_eq!(changes(&mut r), []);
        for (x, z) in square(0, 0, 1) {
            r.set_built(b, ChunkPos::new(x, z), true);
        }
        assert_eq!(changes(&mut r), [(0, 0, true)]);
        r.set_built(a, ChunkPos::new(1, 1), false);
        assert_eq!(changes(&mut r), [(0, 0, false)]);
    }

    /// At the edge of the ground, neighbours outside it are not needed; k = 2 needs two rings.
    #[test]
    fn the_ground_edge_and_two_rings() {
        let b = Bounds {
            min_x: 0.0,
            min_z: 0.0,
            max_x: 64.0,
            max_z: 64.0,
        };
        let mut r = Residency::new(Grid::new(32.0), Some(b));
        r.set_neighbours(1);
        load(&mut r, &[(0, 0), (1, 0), (0, 1)]);
        assert_eq!(changes(&mut r), []);
        load(&mut r, &[(1, 1)]);
        assert_eq!(
            changes(&mut r),
            [(0, 0, true), (1, 0, true), (0, 1, true), (1, 1, true)]
        );
        let mut r = res();
        r.set_neighbours(2);
        load(&mut r, &square(0, 0, 1));
        assert_eq!(changes(&mut r), []);
        let mut outer = square(0, 0, 2);
        outer.retain(|c| c.0.abs() == 2 || c.1.abs() == 2);
        load(&mut r, &outer[..outer.len() - 1]);
        assert_eq!(changes(&mut r), []);
        load(&mut r, &outer[outer.len() - 1..]);
        assert_eq!(changes(&mut r), [(0, 0, true)]);
    }

    /// Changing k recounts: from 1 to 2 a complete chunk may become incomplete; to 0 nothing
    /// is tracked and `is_complete` is "loaded and built".
    #[test]
    fn a_change_of_k_recounts() {
        let mut r = res();
        r.set_neighbours(1);
        load(&mut r, &square(0, 0, 1));
        assert_eq!(changes(&mut r), [(0, 0, true)]);
        r.set_neighbours(2);
        assert_eq!(changes(&mut r), [(0, 0, false)]);
        r.set_neighbours(0);
        assert_eq!(changes(&mut r), []);
        assert!(r.is_complete(ChunkPos::new(1, 1)));
        assert_eq!(r.complete_chunks().len(), 9);
        assert_eq!(r.complete_len(), 0);
    }

    /// The reference: random loads, releases, builds and unbuilds by two builders, inside
    /// and at the edge of a small ground, with k 1 or 2 (and a change of k): after each step
    /// the incremental complete set equals a naive recount, and at each "end of tick" the
    /// events equal the naive diff (a chunk released since counts as not complete before;
    /// complete: now and not before; incomplete: before, still loaded, not now).
    #[test]
    fn the_incremental_record_equals_a_naive_recount_and_its_events_the_naive_diff() {
        let mut seed = 0x5eed_u64;
        let mut next = move |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        let b = Bounds {
            min_x: -64.0,
            min_z: -64.0,
            max_x: 128.0,
            max_z: 96.0,
        };
        let mut total = (0, 0);
        for case in 0..40 {
            let mut r = Residency::new(Grid::new(32.0), Some(b));
            let builders = [r.add_builder().unwrap(), r.add_builder().unwrap()];
            r.set_neighbours(1 + (case % 2) as u32);
            let mut before: BTreeSet<ChunkPos> = BTreeSet::new();
            let mut released: BTreeSet<ChunkPos> = BTreeSet::new();
            for step in 0..400 {
                // Inside the ground (x -2..=3, z -2..=2), as every loaded chunk is.
                let c = ChunkPos::new(next(6) as i64 - 2, next(5) as i64 - 2);
                match next(20) {
                    0..=8 => r.mark_loaded(c),
                    9 => {
                        if r.is_loaded(c) {
                            released.insert(c);
                        }
                        r.mark_released(c)
                    }
                    10..=13 => r.set_built(builders[next(2) as usize], c, true),
                    14..=18 => builders.iter().for_each(|b| r.set_built(*b, c, true)),
                    _ => r.set_built(builders[next(2) as usize], c, false),
                }
                if step == 200 && case % 5 == 0 {
                    r.set_neighbours(if r.neighbours() == 1 { 2 } else { 1 });
                }
                if next(8) == 0 {
                    // One or two foci somewhere on the ground: `progress` reads their mesh
                    // squares (radius less k), kept from the last count until something moved.
                    let foci: Vec<FocusView> = (0..1 + next(2))
                        .map(|_| {
                            let at = Position {
                                x: next(200) as f64 - 70.0,
                                y: 0.0,
                                z: next(170) as f64 - 70.0,
                            };
                            FocusView::new(at, r.neighbours() + next(3) as u32)
                        })
                        .collect();
                    r.set_foci(&foci);
                }
                let naive = r.naive_complete();
                assert_eq!(r.complete_chunks(), naive, "case {case} step {step}");
                let mut mesh = BTreeSet::new();
                for f in r.foci() {
                    let centre = r.grid().chunk_of(f.pos);
                    let radius = f.radius.saturating_sub(r.neighbours());
                    mesh.extend(r.grid().square(centre, radius, Some(&b)));
                }
                let complete = mesh.iter().filter(|c| naive.contains(c)).count();
                assert_eq!(
                    r.progress(),
                    (complete, mesh.len()),
                    "case {case} step {step}"
                );
                if next(6) == 0 {
                    let now: BTreeSet<ChunkPos> = naive.iter().copied().collect();
                    let mut want = Vec::new();
                    for p in now.union(&before) {
                        // Released since: no longer counted as complete before.
                        let (n, w) = (now.contains(p), before.contains(p) && !released.contains(p));
                        if n && !w {
                            want.push(CompleteChange {
                                chunk: *p,
                                complete: true,
                            });
                        } else if w && !n && r.is_loaded(*p) {
                            want.push(CompleteChange {
                                chunk: *p,
                                complete: false,
                            });
                        }
                    }
                    let mut got = Vec::new();
                    r.take_complete_changes(&mut got);
                    assert_eq!(got, want, "case {case} step {step}");
                    total.0 += got.iter().filter(|c| c.complete).count();
                    total.1 += got.iter().filter(|c| !c.complete).count();
                    before = now;
                    released.clear();
                }
            }
        }
        assert!(total.0 > 50 && total.1 > 50, "{total:?}");
    }

    /// With vertical sections a section is complete when the 26 around it (ring 1 in 3-D, a
    /// cube: the ring stays square with a disc) are loaded and built; the incremental record
    /// agrees with a plain count over random loads and releases.
    #[test]
    fn with_sections_completeness_reads_the_26_neighbours() {
        for disc in [false, true] {
            let mut r = res();
            r.set_form(Form {
                disc,
                vertical: Some((2, 32.0)),
                ring: 0,
            });
            r.set_neighbours(1);
            for y in -1..=1 {
                for (x, z) in square(0, 0, 1) {
                    if (x, y, z) != (1, 1, 1) {
                        r.mark_loaded(ChunkPos::section(x, y, z));
                    }
                }
            }
            assert_eq!(changes(&mut r), [], "(1, 1, 1) missing: not complete");
            r.mark_loaded(ChunkPos::section(1, 1, 1));
            let mut out = Vec::new();
            r.take_complete_changes(&mut out);
            assert_eq!(
                out,
                [CompleteChange {
                    chunk: ChunkPos::section(0, 0, 0),
                    complete: true
                }]
            );
            r.mark_released(ChunkPos::section(-1, -1, -1));
            assert_eq!(changes(&mut r), [(0, 0, false)]);
            assert!(!r.is_complete(ChunkPos::section(0, 0, 0)));
            // Random loads and releases: the record = the plain count.
            let mut seed = 7;
            for _ in 0..400 {
                let c = ChunkPos::section(
                    (next(&mut seed) % 5) as i64 - 2,
                    (next(&mut seed) % 5) as i64 - 2,
                    (next(&mut seed) % 5) as i64 - 2,
                );
                if r.is_loaded(c) {
                    r.mark_released(c);
                } else {
                    r.mark_loaded(c);
                }
                let plain: Vec<ChunkPos> = r
                    .loaded()
                    .filter(|d| {
                        (-1..=1).all(|dy| {
                            (-1..=1).all(|dz| {
                                (-1..=1).all(|dx| {
                                    r.is_loaded(ChunkPos::section(d.x + dx, d.y + dy, d.z + dz))
                                })
                            })
                        })
                    })
                    .collect();
                assert_eq!(r.complete_chunks(), plain);
            }
        }
    }
}
