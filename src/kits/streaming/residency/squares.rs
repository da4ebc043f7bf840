//! The foci's squares and the counts they keep: how many foci want a chunk (ring `<= r`) and
//! keep it (ring `<= r + 1`), counted again only over the strips a focus's move added or took
//! away; a chunk entering or leaving the union.

use super::*;

/// An inclusive rectangle of chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rect {
    pub(super) x0: i64,
    pub(super) x1: i64,
    pub(super) z0: i64,
    pub(super) z1: i64,
}

impl Rect {
    pub(super) fn around(c: ChunkPos, r: u32) -> Rect {
        let r = i64::from(r);
        Rect {
            x0: c.x - r,
            x1: c.x + r,
            z0: c.z - r,
            z1: c.z + r,
        }
    }

    /// Calls `f` on every chunk of `self` outside `other`, in row order: the strips a moved
    /// square gained or lost, not the whole square.
    pub(super) fn for_each_outside(self, other: Option<Rect>, mut f: impl FnMut(ChunkPos)) {
        let inner = other.and_then(|o| {
            let i = Rect {
                x0: self.x0.max(o.x0),
                x1: self.x1.min(o.x1),
                z0: self.z0.max(o.z0),
                z1: self.z1.min(o.z1),
            };
            (i.x0 <= i.x1 && i.z0 <= i.z1).then_some(i)
        });
        for z in self.z0..=self.z1 {
            match inner {
                Some(i) if (i.z0..=i.z1).contains(&z) => {
                    (self.x0..i.x0).for_each(|x| f(ChunkPos::new(x, z)));
                    (i.x1 + 1..=self.x1).for_each(|x| f(ChunkPos::new(x, z)));
                }
                _ => (self.x0..=self.x1).for_each(|x| f(ChunkPos::new(x, z))),
            }
        }
    }
}

impl Residency {
    /// Moves focus `i` to `pos` when that keeps it in its chunk (nothing to recount); returns
    /// whether it did.
    pub fn move_focus(&mut self, i: usize, pos: Position) -> bool {
        let centre = self.grid.chunk_of(pos);
        match self.foci.get_mut(i) {
            Some(slot) if slot.centre == centre => {
                if slot.view.pos != pos {
                    slot.view.pos = pos;
                    self.queues[self.ids[i] as usize] = None; // its distances changed
                }
                true
            }
            _ => false,
        }
    }

    /// Replaces the foci in force. Only the squares that changed are counted again: each new
    /// focus continues an old one (keeping its id and the chunks counted for it), the one at
    /// its place if their squares are the same (a focus that stays in its chunk with the same
    /// radius and priority costs a comparison), else one of the same square elsewhere in the
    /// order (foci that came or went before it moved it), else any old focus left over (only the
    /// strips between the two squares are counted; all of it when the priority changed, as the
    /// priorities of its chunks may change). Chunks that leave the union get the last
    /// resolution's tick as their last-wanted tick. A focus whose position changed at all loses
    /// its queue.
    pub fn set_foci(&mut self, foci: &[FocusView]) {
        let new: Vec<Slot> = foci
            .iter()
            .map(|v| Slot {
                view: *v,
                centre: self.grid.chunk_of(v.pos),
            })
            .collect();
        let square = |s: &Slot| (s.centre, s.view.radius, s.view.priority);
        let old_n = self.foci.len();
        // Which old focus (by place) each new one continues.
        let mut from: Vec<Option<usize>> = vec![None; new.len()];
        let mut used = vec![false; old_n];
        for (i, n) in new.iter().enumerate().take(old_n) {
            if square(&self.foci[i]) == square(n) {
                (from[i], used[i]) = (Some(i), true);
            }
        }
        if from.iter().any(Option::is_none) || used.iter().any(|u| !u) {
            let mut same: BTreeMap<(ChunkPos, u32, u8), std::collections::VecDeque<usize>> =
                BTreeMap::new();
            for j in (0..old_n).filter(|j| !used[*j]) {
                same.entry(square(&self.foci[j])).or_default().push_back(j);
            }
            for (i, n) in new.iter().enumerate() {
                if from[i].is_none() {
                    if let Some(j) = same.get_mut(&square(n)).and_then(|q| q.pop_front()) {
                        (from[i], used[j]) = (Some(j), true);
                    }
                }
            }
            let mut rest = (0..old_n)
                .filter(|j| !used[*j])
                .collect::<Vec<_>>()
                .into_iter();
            for f in from.iter_mut().filter(|f| f.is_none()) {
                match rest.next() {
                    Some(j) => (*f, used[j]) = (Some(j), true),
                    None => break,
                }
            }
        }
        // The ids, and what changed for each: (id, old slot, new slot).
        let mut changed: Vec<(u32, Option<Slot>, Option<Slot>)> = Vec::new();
        let mut ids = Vec::with_capacity(new.len());
        for (n, from) in new.iter().zip(&from) {
            let (id, old) = match from {
                Some(j) => (self.ids[*j], Some(self.foci[*j])),
                None => (self.new_id(), None),
            };
            if old.map(|o| o.view) != Some(n.view) {
                self.queues[id as usize] = None;
            }
            if old.as_ref().map(square) != Some(square(n)) {
                changed.push((id, old, Some(*n)));
            }
            ids.push(id);
        }
        let mut freed = Vec::new();
        for j in (0..old_n).filter(|j| !used[*j]) {
            let id = self.ids[j];
            self.queues[id as usize] = None;
            changed.push((id, Some(self.foci[j]), None));
            freed.push(id);
        }
        for &id in &self.ids {
            self.place[id as usize] = FREE;
        }
        for (i, &id) in ids.iter().enumerate() {
            self.place[id as usize] = i as u32;
        }
        self.foci = new;
        self.ids = ids;
        // The part of an old square still counted: all of it, unless the priority changed.
        let kept_want = |a: &Option<Slot>, b: &Option<Slot>| match (a, b) {
            (Some(a), Some(b)) if a.view.priority == b.view.priority => Some(b.want()),
            _ => None,
        };
        // Every gain before any loss, so a chunk crosses zero at most once per call.
        for (id, old, new) in &changed {
            if let Some(n) = new {
                n.want()
                    .for_each_outside(kept_want(new, old), |c| self.count(c, Some(*id)));
                n.keep()
                    .for_each_outside(old.map(|o| o.keep()), |c| self.count(c, None));
            }
        }
        for (id, old, new) in &changed {
            if let Some(o) = old {
                o.want()
                    .for_each_outside(kept_want(old, new), |c| self.uncount(c, Some(*id)));
                o.keep()
                    .for_each_outside(new.map(|n| n.keep()), |c| self.uncount(c, None));
            }
        }
        if !changed.is_empty() {
            self.mesh_progress.set(None); // the mesh squares moved
        }
        for id in freed {
            debug_assert_eq!(self.pending_in[id as usize], 0);
            self.free_ids.push(id);
        }
    }

    /// An id not in use (its count 0, no queue), placed nowhere yet.
    pub(super) fn new_id(&mut self) -> u32 {
        self.free_ids.pop().unwrap_or_else(|| {
            self.place.push(FREE);
            self.pending_in.push(0);
            self.queues.push(None);
            (self.place.len() - 1) as u32
        })
    }

    /// Focus `wanted_by` now wants `c`, or (with `None`) one more focus keeps it.
    pub(super) fn count(&mut self, c: ChunkPos, wanted_by: Option<u32>) {
        self.recounted += 1;
        if !self.grid.overlaps(c, self.bounds.as_ref()) {
            return;
        }
        let p = wanted_by.map_or(0, |id| self.slot(id).view.priority);
        let cover = self.cover.entry(c).or_default();
        let (entered, kept, raised) = match wanted_by {
            Some(i) => {
                cover.wanted_by.push(i);
                let entered = cover.wanted_by.len() == 1;
                let raised = !entered && p > cover.prio;
                if entered || raised {
                    cover.prio = p;
                }
                (entered, false, raised)
            }
            None => {
                cover.keep += 1;
                (false, cover.keep == 1, false)
            }
        };
        if entered {
            self.enter(c);
        } else if let Some(i) = wanted_by {
            if self.pending.contains(&c) {
                self.pending_in[i as usize] += 1;
                // A higher priority: a new entry in every queue; else in the new focus's.
                self.queue_pending(c, (!raised).then_some(i));
            }
        }
        if kept && matches!(self.refusal_kind(c), Some(RefusalKind::Unload)) {
            self.recheck.insert(c);
        }
    }

    /// The reverse of [`Residency::count`].
    pub(super) fn uncount(&mut self, c: ChunkPos, wanted_by: Option<u32>) {
        self.recounted += 1;
        let Some(cover) = self.cover.get_mut(&c) else {
            return; // outside the ground: never counted
        };
        let (left, unkept, lowered) = match wanted_by {
            Some(i) => {
                if let Some(at) = cover.wanted_by.iter().position(|&w| w == i) {
                    cover.wanted_by.swap_remove(at);
                }
                // The highest priority of the foci left. Within `set_foci` an id may still be
                // listed for its old square (its loss comes later and counts again); one no
                // longer in use is such an id.
                let (foci, place) = (&self.foci, &self.place);
                let p = cover
                    .wanted_by
                    .iter()
                    .map(|&w| place[w as usize])
                    .filter(|&at| at != FREE)
                    .map(|at| foci[at as usize].view.priority)
                    .max();
                let lowered = p.is_some_and(|p| p != cover.prio);
                if let Some(p) = p {
                    cover.prio = p;
                }
                (cover.wanted_by.is_empty(), false, lowered)
            }
            None => {
                cover.keep -= 1;
                (false, cover.keep == 0, false)
            }
        };
        if let Some(i) = wanted_by {
            if self.pending.contains(&c) {
                self.unqueue_from(i as usize);
                if lowered {
                    self.queue_pending(c, None);
                }
            }
        }
        if self
            .cover
            .get(&c)
            .is_some_and(|cv| cv.wanted_by.is_empty() && cv.keep == 0)
        {
            self.cover.remove(&c);
        }
        if left {
            self.leave(c);
        }
        if unkept && self.loaded.contains(&c) {
            self.recheck.insert(c);
        }
    }

    /// `c` joined the union.
    pub(super) fn enter(&mut self, c: ChunkPos) {
        self.union_len += 1;
        if self.chunk_ready(c) {
            self.ready += 1;
        }
        match self.refusal_kind(c) {
            Some(RefusalKind::Load) => self.load_refusals_wanted += 1,
            Some(RefusalKind::Unload) => {}
            None if self.loaded.contains(&c) => {
                let lw = self.last_wanted.remove(&c).unwrap_or(0);
                self.evictable.remove(&(lw, c));
            }
            None => {
                self.pend(c);
            }
        }
        if self.loaded.contains(&c) {
            self.last_wanted.remove(&c);
        }
    }

    /// `c` left the union.
    pub(super) fn leave(&mut self, c: ChunkPos) {
        self.union_len -= 1;
        if self.chunk_ready(c) {
            self.ready -= 1;
        }
        self.unpend(c);
        match self.refusal_kind(c) {
            Some(RefusalKind::Load) => {
                self.load_refusals_wanted -= 1;
                self.recheck.insert(c);
            }
            Some(RefusalKind::Unload) => {
                self.last_wanted.insert(c, self.resolved_at);
            }
            None if self.loaded.contains(&c) => {
                self.last_wanted.insert(c, self.resolved_at);
                self.evictable.insert((self.resolved_at, c));
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    /// `move_focus` moves a focus that stays in its chunk and says so (the fast path that spares
    /// a recount); a focus changing chunk, or no such focus, is left to `set_foci` (false).
    /// cargo-mutants found both answers untested (a `false` only costs the recount).
    #[test]
    fn a_focus_moved_within_its_chunk_is_moved_in_place_and_one_leaving_it_is_not() {
        let mut r = res();
        r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
        assert!(r.move_focus(0, Position::new(30.0, 1.0)));
        assert_eq!(r.foci[0].view.pos, Position::new(30.0, 1.0));
        assert!(!r.move_focus(0, Position::new(33.0, 1.0)), "another chunk");
        assert_eq!(r.foci[0].view.pos, Position::new(30.0, 1.0));
        assert!(!r.move_focus(1, Position::new(10.0, 10.0)), "no focus 1");
    }

    /// `for_each_outside` gives exactly the chunks of one square that are not in the other, in
    /// row order, for every placement of two small squares (apart in x only, in z only, in
    /// both, overlapping, nested), checked against a plain scan (cargo-mutants found the
    /// apart-in-x case untested: the strips a sideways jump gained were wrong).
    #[test]
    fn the_strips_outside_another_square_are_exactly_its_chunks_not_in_it() {
        let inside =
            |r: Rect, c: ChunkPos| (r.x0..=r.x1).contains(&c.x) && (r.z0..=r.z1).contains(&c.z);
        for r1 in 0..3u32 {
            for r2 in 0..3u32 {
                for dx in -6i64..=6 {
                    for dz in -6i64..=6 {
                        let a = Rect::around(ChunkPos::new(0, 0), r1);
                        let b = Rect::around(ChunkPos::new(dx, dz), r2);
                        let mut got = Vec::new();
                        a.for_each_outside(Some(b), |c| got.push(c));
                        let mut want = Vec::new();
                        for z in a.z0..=a.z1 {
                            for x in a.x0..=a.x1 {
                                let c = ChunkPos::new(x, z);
                                if !inside(b, c) {
                                    want.push(c);
                                }
                            }
                        }
                        assert_eq!(got, want, "{a:?} outside {b:?}");
                    }
                }
            }
        }
        let mut all = Vec::new();
        Rect::around(ChunkPos::new(5, -5), 1).for_each_outside(None, |c| all.push(c));
        assert_eq!(all.len(), 9);
        assert_eq!(
            (all[0], all[8]),
            (ChunkPos::new(4, -6), ChunkPos::new(6, -4))
        );
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

    /// A focus that appears before others in the focus order (a predicted focus before the
    /// tickets), or one that leaves from the middle, moves the others to other places in the
    /// order: only the square that came or went is counted, not every focus after it.
    #[test]
    fn foci_moving_to_other_places_in_the_order_are_not_counted_again() {
        let mut r = res();
        let tickets: Vec<FocusView> = (0..20)
            .map(|i| FocusView::new(Position::new(f64::from(i) * 1000.0, 5000.0), 8))
            .collect();
        r.set_foci(&tickets);
        r.resolve(1, &mut Vec::new());
        let mut taken = Vec::new();
        r.take_fair(100, 0, &mut taken);
        taken.iter().for_each(|(c, _)| r.mark_loaded(*c));
        let one_square = 17 * 17 + 19 * 19; // wanted (r = 8) and kept (r + 1)
        let predicted = FocusView::new(Position::new(0.0, -5000.0), 8);
        let before = |f: &[FocusView]| [&[predicted], f].concat();
        let mut fewer = tickets.clone();
        fewer.remove(3);
        // (the foci, how many squares came or went)
        for (tick, (foci, squares)) in [
            (before(&tickets), 1),
            (tickets.clone(), 1),
            (fewer.clone(), 1),
            (before(&fewer), 1),
            (tickets.clone(), 2),
        ]
        .into_iter()
        .enumerate()
        {
            let was = r.recounted();
            r.set_foci(&foci);
            r.resolve(tick as u64 + 2, &mut Vec::new());
            assert_eq!(r.recounted() - was, squares * one_square, "step {tick}");
            check_queues(&r);
            // The same chunks wanted and pending, in the same order, as counted afresh.
            let mut fresh = res();
            fresh.set_foci(&foci);
            taken.iter().for_each(|(c, _)| fresh.mark_loaded(*c));
            assert_eq!(r.pending(), fresh.pending(), "step {tick}");
            assert_eq!(r.wanted_len(), fresh.wanted_len(), "step {tick}");
            let (mut a, mut b) = (r.clone(), fresh.clone());
            let (mut x, mut y) = (Vec::new(), Vec::new());
            a.take_fair(300, 7, &mut x);
            b.take_fair(300, 7, &mut y);
            assert_eq!(x, y, "step {tick}");
        }
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
}
