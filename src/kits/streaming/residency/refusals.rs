//! Refusals held (a load or an unload a mod cancelled) and the rules that drop them.

use super::*;

impl Residency {
    pub(super) fn refusal_kind(&self, c: ChunkPos) -> Option<RefusalKind> {
        self.refusals.get(&c).map(|h| h.kind)
    }

    /// Holds a refusal of `chunk` (a load refusal of a chunk taken for loading, or an unload
    /// refusal of a loaded one).
    pub fn hold(&mut self, chunk: ChunkPos, held: Held) {
        if self.refusals.contains_key(&chunk) {
            self.drop_refusal(chunk);
        }
        let wanted = self.is_wanted(chunk);
        let was_ready = wanted && self.chunk_ready(chunk);
        match held.kind {
            RefusalKind::Load => {
                self.unpend(chunk);
                if wanted {
                    self.load_refusals_wanted += 1;
                }
            }
            RefusalKind::Unload => {
                *self.unload_refusals_by.entry(held.by.clone()).or_default() += 1;
                // Out of the eviction order: its entry, if any, is not current while the
                // refusal is held.
                if self.keep_count(chunk) > 0 {
                    // A refused eviction in the hysteresis band: the drop rule applies next tick.
                    self.recheck.insert(chunk);
                }
            }
        }
        self.refusals.insert(chunk, held);
        self.touched(chunk, true); // holding never makes a chunk unready (below)
                                   // Holding never makes a chunk unready (`was_ready` is taken after any old refusal was
                                   // dropped): a load refusal makes it ready, an unload refusal leaves it to its builds.
        if wanted && !was_ready && self.chunk_ready(chunk) {
            self.ready += 1;
        }
    }

    pub(super) fn drop_refusal(&mut self, chunk: ChunkPos) -> Option<Held> {
        let wanted = self.is_wanted(chunk);
        let was_ready = wanted && self.chunk_ready(chunk);
        let held = self.refusals.remove(&chunk)?;
        self.touched(chunk, false);
        match held.kind {
            RefusalKind::Load => {
                if wanted {
                    self.load_refusals_wanted -= 1;
                    if !self.is_loaded(chunk) {
                        self.pend(chunk);
                    }
                }
            }
            RefusalKind::Unload => {
                if let Some(n) = self.unload_refusals_by.get_mut(&held.by) {
                    *n -= 1;
                    if *n == 0 {
                        self.unload_refusals_by.remove(&held.by);
                    }
                }
                if self.is_loaded(chunk) && !wanted {
                    self.evictable_push(self.last_wanted(chunk), chunk);
                }
            }
        }
        // Dropping never makes a chunk ready: a load refusal's chunk was ready by it, an
        // unload refusal's readiness is its builds' either way.
        if was_ready && !(wanted && self.chunk_ready(chunk)) {
            self.ready -= 1;
        }
        Some(held)
    }

    /// Drops whatever refusal is held at `chunk`: a load refusal makes the chunk pending again
    /// (if wanted), an unload refusal makes it due for release again on the next tick.
    /// Returns whether a refusal was held.
    pub fn release_refusal(&mut self, chunk: ChunkPos) -> bool {
        let dropped = self.drop_refusal(chunk).is_some();
        if dropped && self.is_loaded(chunk) {
            self.recheck.insert(chunk);
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

    /// Only a chunk held by an unload refusal is queued to be looked at again when it comes
    /// back into a kept square (cargo-mutants: queuing every newly kept chunk was missed, as it
    /// only costs work).
    #[test]
    fn only_unload_refused_chunks_are_rechecked_when_kept_again() {
        let mut r = res();
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        assert!(r.recheck.is_empty(), "{:?}", r.recheck);
        r.set_foci(&[FocusView::new(Position::new(1000.0, 10.0), 1)]);
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        assert!(r.recheck.is_empty(), "{:?}", r.recheck);
    }

    /// An unload refusal lapses only once a focus keeps its chunk at a resolution: a chunk
    /// that a focus came back to and left again between two resolutions keeps its refusal and
    /// is not released (cargo-mutants: dropping it whenever the chunk was looked at again was
    /// missed).
    #[test]
    fn an_unload_refusal_outlives_a_focus_that_came_and_went_between_two_resolutions() {
        let mut r = res();
        let (near, away) = (Position::new(10.0, 10.0), Position::new(10_000.0, 10.0));
        fill(&mut r, near, 1);
        r.set_foci(&[FocusView::new(away, 1)]);
        let mut released = Vec::new();
        r.resolve(1, &mut released);
        let c = ChunkPos::new(0, 0);
        assert!(released.contains(&c));
        r.hold(
            c,
            Held {
                kind: RefusalKind::Unload,
                by: "mod".into(),
                reason: "keep".into(),
            },
        );
        for o in released.into_iter().filter(|o| *o != c) {
            r.mark_released(o);
        }
        r.set_foci(&[FocusView::new(near, 1)]);
        r.set_foci(&[FocusView::new(away, 1)]);
        let mut again = Vec::new();
        r.resolve(2, &mut again);
        assert_eq!(again, [], "still refused");
        assert_eq!(r.unload_refusals_of("mod"), 1);
        assert!(r.is_loaded(c));
        // Kept at a resolution, the refusal lapses (docs/reference/tick.md#refusal-drop-rules).
        r.set_foci(&[FocusView::new(near, 1)]);
        r.resolve(3, &mut again);
        assert_eq!(r.unload_refusals_of("mod"), 0);
    }

    /// The resident cap's count, wanted chunks not held by a load refusal, follows load
    /// refusals held and dropped (by `release_refusal` and by a refusal replacing another),
    /// and readiness counts a load-refused chunk as ready (cargo-mutants: the count's decrement
    /// on a drop made `+=` or `/=` was missed).
    #[test]
    fn dropping_a_load_refusal_counts_the_chunk_as_unrefused_again() {
        let mut r = res();
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        let refuse = |r: &mut Residency, c: ChunkPos, kind: RefusalKind| {
            let held = Held {
                kind,
                by: "mod".into(),
                reason: "no".into(),
            };
            r.hold(c, held);
        };
        let (a, b) = (ChunkPos::new(0, 0), ChunkPos::new(1, 1));
        assert_eq!((r.wanted_unrefused(), r.progress()), (9, (0, 9)));
        refuse(&mut r, a, RefusalKind::Load);
        refuse(&mut r, b, RefusalKind::Load);
        assert_eq!((r.wanted_unrefused(), r.progress()), (7, (2, 9)));
        assert!(r.release_refusal(a));
        assert_eq!((r.wanted_unrefused(), r.progress()), (8, (1, 9)));
        assert!(r.pending().contains(&a));
        // A refusal replacing another drops the old one first.
        refuse(&mut r, b, RefusalKind::Load);
        assert_eq!((r.wanted_unrefused(), r.progress()), (8, (1, 9)));
        assert!(r.release_refusal(b));
        assert_eq!((r.wanted_unrefused(), r.progress()), (9, (0, 9)));
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
        r.restore_around(refusals, Position::new(8.0, 8.0), 1);
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
        r.restore_around(refusals, Position::new(8.0, 8.0), 1);
        assert_eq!(r.pending_len(), 4);
        assert!(r.release_refusal(ChunkPos::new(-1, 0)));
        assert_eq!(r.pending_len(), 4, "(-1,0) lies outside the ground");
    }

    #[test]
    fn refusal_rules_apply_over_the_union_of_the_foci() {
        let mut r = res();
        let (a, b) = (Position::new(8.0, 8.0), Position::new(40.0, 8.0));
        // a at (0,0), b at (1,0), radius 1: (1,1) is wanted by both.
        two(&mut r, a, b, 1, 1);
        assert_eq!(r.wanted_len(), 12);
        r.hold(ChunkPos::new(1, 1), refusal(RefusalKind::Load));
        assert_eq!(r.wanted_unrefused(), 11);
        // a leaves: b still wants (1,1), so the load refusal stays.
        two(&mut r, Position::new(-300.0, 8.0), b, 1, 2);
        assert_eq!(r.refusals().count(), 1);
        // b leaves too: nobody wants it, the refusal drops.
        two(
            &mut r,
            Position::new(-300.0, 8.0),
            Position::new(-300.0, 300.0),
            1,
            3,
        );
        assert_eq!(r.refusals().count(), 0);
        // An unload refusal drops as soon as one focus keeps the chunk again (ring <= r + 1).
        let mut r = res();
        fill(&mut r, a, 0);
        let due = two(
            &mut r,
            Position::new(300.0, 8.0),
            Position::new(-300.0, 8.0),
            0,
            2,
        );
        assert_eq!(due, [ChunkPos::new(0, 0)]);
        r.hold(ChunkPos::new(0, 0), refusal(RefusalKind::Unload));
        two(
            &mut r,
            Position::new(300.0, 8.0),
            Position::new(-300.0, 8.0),
            0,
            3,
        );
        assert_eq!(r.refusals().count(), 1, "kept by no focus: held");
        two(
            &mut r,
            Position::new(300.0, 8.0),
            Position::new(40.0, 40.0),
            0,
            4,
        );
        assert_eq!(
            r.refusals().count(),
            0,
            "ring 1 of the second focus: dropped"
        );
    }
}
