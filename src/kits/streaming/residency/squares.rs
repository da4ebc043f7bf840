//! The foci's footprints and the counts they keep: how many foci want a chunk (within the shape
//! of `r`, on the rows `|y − fy| <= rv`) and keep it (within `r + 1`, rows `rv + 1`), counted
//! again only over the strips a focus's move added or took away; a chunk entering or leaving the
//! union.

use super::*;

/// The form every focus's footprint takes (docs/reference/streaming.md#shapes-and-sections):
/// square or disc in x, z, and with vertical sections the rows wanted each side of the focus's
/// section row and the height of a section. The default is the flat square grid.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Form {
    /// A disc (`dx² + dz² <= r²`) rather than a square (`max(|dx|, |dz|) <= r`).
    pub disc: bool,
    /// With vertical sections: the rows wanted each side of a focus's row (`rv`, with any
    /// `neighbours` rings added) and a section's height in metres.
    pub vertical: Option<(u32, f64)>,
    /// With a disc: the `neighbours` rings (`k`) its footprints gain as a square skin, so that
    /// every chunk a disc's edge chunk needs to be complete is wanted: the chunks within ring
    /// distance `k` of the disc of `r` (docs/reference/streaming.md#shapes-and-sections). A
    /// focus's radius includes them. 0 for squares, where the radius alone gives them.
    pub ring: u32,
}

impl Form {
    /// The rows wanted each side of a focus's row (0 when flat).
    pub fn rows(&self) -> u32 {
        self.vertical.map_or(0, |(rv, _)| rv)
    }
}

/// The x half-width of row `dz` (`|dz| <= r`) of a disc of radius `r`: the largest `w` with
/// `w² + dz² <= r²`.
pub(super) fn disc_half(r: i64, dz: i64) -> i64 {
    let left = (r * r - dz * dz) as u64;
    left.isqrt() as i64
}

/// A focus's footprint: the chunks whose offset `(dx, dz)` from the centre is within the shape
/// of radius `r`, on every section row `y0 ..= y1` (one row, 0, when flat). Row order is y, z, x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rect {
    pub(super) cx: i64,
    pub(super) cz: i64,
    /// How far it reaches from the centre in x and z.
    pub(super) r: i64,
    pub(super) disc: bool,
    /// For a disc: the square skin around the disc of `r − pad` (0: the disc of `r` itself).
    pub(super) pad: i64,
    pub(super) y0: i64,
    pub(super) y1: i64,
}

impl Rect {
    /// The footprint of radius `r` around `c` with `rows` rows each side of `c.y`.
    pub(super) fn around(c: ChunkPos, r: u32, disc: bool, rows: u32) -> Rect {
        let rows = i64::from(rows);
        Rect {
            cx: c.x,
            cz: c.z,
            r: i64::from(r),
            disc,
            pad: 0,
            y0: c.y - rows,
            y1: c.y + rows,
        }
    }

    /// A disc's footprint with its outer `pad` rings (at most `r`) made a square skin: the
    /// chunks within ring distance `pad` of the disc of `r − pad`. A square is left as it is.
    pub(super) fn padded(self, pad: u32) -> Rect {
        Rect {
            pad: if self.disc {
                i64::from(pad).min(self.r)
            } else {
                0
            },
            ..self
        }
    }

    /// The x half-width of the row `dz` from the centre (`|dz| <= r`).
    fn half(&self, dz: i64) -> i64 {
        if !self.disc {
            return self.r;
        }
        // The widest row of the inner disc within `pad` rows of `dz`, widened by `pad`.
        let inner = (dz.abs() - self.pad).max(0);
        self.pad + disc_half(self.r - self.pad, inner)
    }

    /// The x range of row `(y, z)`, if the footprint has that row.
    pub(super) fn row(&self, y: i64, z: i64) -> Option<(i64, i64)> {
        let dz = z - self.cz;
        if y < self.y0 || y > self.y1 || dz < -self.r || dz > self.r {
            return None;
        }
        let w = self.half(dz);
        Some((self.cx - w, self.cx + w))
    }

    /// Whether `c` is in the footprint.
    pub(super) fn contains(&self, c: ChunkPos) -> bool {
        self.row(c.y, c.z)
            .is_some_and(|(x0, x1)| (x0..=x1).contains(&c.x))
    }

    /// How many chunks it holds.
    pub(super) fn len(&self) -> usize {
        let per_layer: i64 = if self.disc {
            (-self.r..=self.r).map(|dz| 2 * self.half(dz) + 1).sum()
        } else {
            (2 * self.r + 1) * (2 * self.r + 1)
        };
        (per_layer * (self.y1 - self.y0 + 1)) as usize
    }

    /// Its chunks in row order.
    pub(super) fn chunks(self) -> impl Iterator<Item = ChunkPos> {
        (self.y0..=self.y1).flat_map(move |y| {
            (self.cz - self.r..=self.cz + self.r).flat_map(move |z| {
                let (x0, x1) = self.row(y, z).expect("a row of the footprint");
                (x0..=x1).map(move |x| ChunkPos::section(x, y, z))
            })
        })
    }

    /// Calls `f` on every chunk of `self` outside `other`, in row order: the strips a moved
    /// footprint gained or lost, not the whole footprint (a row costs a comparison). A layer of
    /// the same shape at the same place that `other` also has is skipped whole, so a move up
    /// or down costs the one layer it changed.
    pub(super) fn for_each_outside(self, other: Option<Rect>, mut f: impl FnMut(ChunkPos)) {
        let place = |o: &Rect| (o.cx, o.cz, o.r, o.disc, o.pad);
        let same_place = other.is_some_and(|o| place(&o) == place(&self));
        for y in self.y0..=self.y1 {
            if same_place && other.is_some_and(|o| (o.y0..=o.y1).contains(&y)) {
                continue;
            }
            for z in self.cz - self.r..=self.cz + self.r {
                let (x0, x1) = self.row(y, z).expect("a row of the footprint");
                match other.and_then(|o| o.row(y, z)) {
                    Some((o0, o1)) => {
                        (x0..=x1.min(o0 - 1)).for_each(|x| f(ChunkPos::section(x, y, z)));
                        (x0.max(o1 + 1)..=x1).for_each(|x| f(ChunkPos::section(x, y, z)));
                    }
                    None => (x0..=x1).for_each(|x| f(ChunkPos::section(x, y, z))),
                }
            }
        }
    }
}

impl Residency {
    /// Moves focus `i` to `pos` when that keeps it in its chunk (nothing to recount); returns
    /// whether it did.
    pub fn move_focus(&mut self, i: usize, pos: Position) -> bool {
        let centre = self.centre_of(pos);
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
                centre: self.centre_of(v.pos),
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
        let form = self.form;
        let kept_want = |a: &Option<Slot>, b: &Option<Slot>| match (a, b) {
            (Some(a), Some(b)) if a.view.priority == b.view.priority => Some(b.want(form)),
            _ => None,
        };
        // Every gain before any loss, so a chunk crosses zero at most once per call.
        for (id, old, new) in &changed {
            if let Some(n) = new {
                n.want(form)
                    .for_each_outside(kept_want(new, old), |c| self.count(c, Some(*id)));
                n.keep(form)
                    .for_each_outside(old.map(|o| o.keep(form)), |c| self.count(c, None));
            }
        }
        for (id, old, new) in &changed {
            if let Some(o) = old {
                o.want(form)
                    .for_each_outside(kept_want(old, new), |c| self.uncount(c, Some(*id)));
                o.keep(form)
                    .for_each_outside(new.map(|n| n.keep(form)), |c| self.uncount(c, None));
            }
        }
        if !changed.is_empty() {
            self.mesh_progress_moved(old_n, &changed);
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
        // The queues below read the cover, never change it: whether it is left empty is known now.
        let empty = cover.wanted_by.is_empty() && cover.keep == 0;
        if let Some(i) = wanted_by {
            if self.pending.contains(&c) {
                self.unqueue_from(i as usize);
                if lowered {
                    self.queue_pending(c, None);
                }
            }
        }
        if empty {
            self.cover.remove(&c);
        }
        if left {
            self.leave(c);
        }
        if unkept && self.is_loaded(c) {
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
            None if !self.is_loaded(c) => self.pend(c),
            None => {}
        }
        // A chunk in the union has no last-wanted tick (only loaded chunks outside it have
        // one), and so no current entry in the eviction order.
        self.last_wanted.remove(&c);
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
            None if self.is_loaded(c) => {
                self.last_wanted.insert(c, self.resolved_at);
                self.evictable_push(self.resolved_at, c);
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
        let inside = |r: Rect, c: ChunkPos| r.contains(c);
        for r1 in 0..3u32 {
            for r2 in 0..3u32 {
                for dx in -6i64..=6 {
                    for dz in -6i64..=6 {
                        let a = Rect::around(ChunkPos::new(0, 0), r1, false, 0);
                        let b = Rect::around(ChunkPos::new(dx, dz), r2, false, 0);
                        let mut got = Vec::new();
                        a.for_each_outside(Some(b), |c| got.push(c));
                        let mut want = Vec::new();
                        let r1 = i64::from(r1);
                        for z in -r1..=r1 {
                            for x in -r1..=r1 {
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
        Rect::around(ChunkPos::new(5, -5), 1, false, 0).for_each_outside(None, |c| all.push(c));
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

    /// A plain footprint: the shape's inequality (in i128) and the rows.
    fn plain_holds(centre: ChunkPos, r: u32, disc: bool, rows: u32, c: ChunkPos) -> bool {
        let (dx, dz, r) = (
            i128::from(c.x - centre.x),
            i128::from(c.z - centre.z),
            i128::from(r),
        );
        let within = if disc {
            dx * dx + dz * dz <= r * r
        } else {
            dx.abs().max(dz.abs()) <= r
        };
        within && (c.y - centre.y).abs() <= i64::from(rows)
    }

    /// A disc padded with `pad` rings holds exactly the chunks within ring distance `pad` of
    /// the disc of `r − pad` (worked out plainly, chunk by chunk), so an edge chunk of that disc
    /// has every neighbour a complete chunk needs; `contains`, `len`, `chunks` and
    /// `for_each_outside` between two padded discs agree with it, in row order.
    #[test]
    fn a_padded_disc_is_every_chunk_within_its_rings_of_the_inner_disc() {
        let plain = |centre: ChunkPos, r: u32, pad: u32, c: ChunkPos| {
            let inner = r - pad;
            let p = i64::from(pad);
            (-p..=p).any(|ox| {
                (-p..=p).any(|oz| {
                    let o = ChunkPos::section(c.x + ox, c.y, c.z + oz);
                    plain_holds(centre, inner, true, 0, o)
                })
            }) && c.y == centre.y
        };
        for r in 0..7u32 {
            for pad in 0..=r.min(3) {
                let a = Rect::around(ChunkPos::new(0, 0), r, true, 0).padded(pad);
                let span = i64::from(r) + 1;
                let all: Vec<ChunkPos> = (-span..=span)
                    .flat_map(|z| (-span..=span).map(move |x| ChunkPos::new(x, z)))
                    .filter(|c| plain(ChunkPos::new(0, 0), r, pad, *c))
                    .collect();
                assert_eq!(a.chunks().collect::<Vec<_>>(), all, "r {r} pad {pad}");
                assert_eq!(a.len(), all.len());
                assert!(all.iter().all(|c| a.contains(*c)));
                for (dx, dz) in [(1, 0), (0, -1), (2, 1), (0, 0)] {
                    let cb = ChunkPos::new(dx, dz);
                    let b = Rect::around(cb, r, true, 0).padded(pad);
                    let mut got = Vec::new();
                    a.for_each_outside(Some(b), |c| got.push(c));
                    let want: Vec<ChunkPos> = all
                        .iter()
                        .copied()
                        .filter(|c| !plain(cb, r, pad, *c))
                        .collect();
                    assert_eq!(got, want, "r {r} pad {pad} against {cb}");
                }
                // The same disc with another skin is another footprint.
                let other = Rect::around(ChunkPos::new(0, 0), r, true, 0).padded(pad + 1);
                let mut got = Vec::new();
                a.for_each_outside(Some(other), |c| got.push(c));
                assert!(got.iter().all(|c| !other.contains(*c)));
            }
        }
        // A square is never padded: its radius has the rings already.
        let sq = Rect::around(ChunkPos::new(0, 0), 3, false, 0);
        assert_eq!(sq.padded(2), sq);
    }

    /// Discs and rows: `for_each_outside` gives exactly the chunks of one footprint outside
    /// another, in row order (y, z, x), for every placement of two small footprints apart and
    /// overlapping in x, y and z; `chunks`, `contains` and `len` agree with the plain inequality.
    #[test]
    fn the_strips_outside_another_footprint_are_exactly_its_chunks_not_in_it() {
        for disc in [false, true] {
            for (r1, r2) in [(0, 2), (3, 3), (4, 2), (2, 5)] {
                for (v1, v2) in [(0, 0), (1, 2), (2, 1)] {
                    for d in -5i64..=5 {
                        for (dx, dy, dz) in [(d, 0, 0), (0, d, 0), (0, 0, d), (d, d / 2, -d)] {
                            let ca = ChunkPos::section(0, 0, 0);
                            let cb = ChunkPos::section(dx, dy, dz);
                            let a = Rect::around(ca, r1, disc, v1);
                            let b = Rect::around(cb, r2, disc, v2);
                            let mut got = Vec::new();
                            a.for_each_outside(Some(b), |c| got.push(c));
                            let mut all = Vec::new();
                            let span = i64::from(r1 + 1);
                            let rows = i64::from(v1 + 1);
                            for y in -rows..=rows {
                                for z in -span..=span {
                                    for x in -span..=span {
                                        let c = ChunkPos::section(x, y, z);
                                        if plain_holds(ca, r1, disc, v1, c) {
                                            all.push(c);
                                        }
                                    }
                                }
                            }
                            let want: Vec<ChunkPos> = all
                                .iter()
                                .copied()
                                .filter(|c| !plain_holds(cb, r2, disc, v2, *c))
                                .collect();
                            assert_eq!(got, want, "{a:?} outside {b:?}");
                            assert_eq!(a.chunks().collect::<Vec<_>>(), all, "{a:?}");
                            assert_eq!(a.len(), all.len(), "{a:?}");
                            assert!(all.iter().all(|c| a.contains(*c)));
                            assert!(!a.contains(ChunkPos::section(0, rows, 0)));
                        }
                    }
                }
            }
        }
    }

    fn cylinder() -> Residency {
        let mut r = res();
        r.set_form(Form {
            disc: true,
            vertical: Some((4, 32.0)),
            ring: 0,
        });
        r
    }

    /// The seed's cylinder (disc, radius 8, 4 rows each side): 197 columns × 9 rows = 1 773
    /// sections, pending in the 3-D nearest-first order (squared distance to the section
    /// centre, then z, x, y), worked out plainly.
    #[test]
    fn the_seed_cylinder_wants_1773_sections_nearest_first() {
        let mut r = cylinder();
        let at = Position {
            x: 40.0,
            y: 70.0,
            z: -5.0,
        };
        r.set_foci(&[FocusView::new(at, 8)]);
        r.resolve(1, &mut Vec::new());
        assert_eq!(r.wanted_len(), 1773);
        let centre = ChunkPos::section(1, 2, -1);
        assert_eq!(r.chunk_of(at), centre);
        let mut want = Vec::new();
        for y in -2..=6 {
            for z in -9..=7 {
                for x in -7..=9 {
                    let c = ChunkPos::section(x, y, z);
                    if plain_holds(centre, 8, true, 4, c) {
                        want.push(c);
                    }
                }
            }
        }
        let columns: BTreeSet<ChunkPos> = want.iter().map(|c| c.column()).collect();
        assert_eq!((want.len(), columns.len()), (1773, 197));
        let d = |c: &ChunkPos| {
            let dx = (c.x as f64 + 0.5) * 32.0 - at.x;
            let dy = (c.y as f64 + 0.5) * 32.0 - at.y;
            let dz = (c.z as f64 + 0.5) * 32.0 - at.z;
            dx * dx + dy * dy + dz * dz
        };
        want.sort_by(|a, b| {
            d(a).total_cmp(&d(b))
                .then((a.z, a.x, a.y).cmp(&(b.z, b.x, b.y)))
        });
        assert_eq!(r.pending(), want);
        let mut taken = Vec::new();
        r.take_nearest(usize::MAX, &mut taken);
        assert_eq!(taken, want);
    }

    /// A climb of two rows releases the rows beyond `rv + 1` below (in row order) and wants the
    /// new rows above; a climb of one row releases nothing (the hysteresis row). A one-section
    /// move counts only the strips it adds or takes away.
    #[test]
    fn a_climb_releases_the_rows_beyond_rv_plus_one_and_counts_only_what_changed() {
        let mut r = cylinder();
        let at = |y: f64| Position {
            x: 16.0,
            y,
            z: 16.0,
        };
        r.set_foci(&[FocusView::new(at(16.0), 8)]);
        let mut taken = Vec::new();
        r.take_nearest(usize::MAX, &mut taken);
        taken.iter().for_each(|c| r.mark_loaded(*c));
        let mut out = Vec::new();
        r.update_view(Some(at(48.0)), 8, &mut out);
        assert!(out.is_empty(), "row -4 is at 5 = rv + 1: kept");
        assert_eq!(r.pending_len(), 197, "row 5 is new");
        let was = r.recounted();
        r.update_view(Some(at(80.0)), 8, &mut out);
        // Wanted: row 6 in, row -3 out (197 sections each); kept: row 7 in, row -4 out (the
        // disc of 9 each).
        let kept_row = Rect::around(ChunkPos::new(0, 0), 9, true, 0).len() as u64;
        assert_eq!(kept_row, 253);
        assert_eq!(r.recounted() - was, 2 * 197 + 2 * kept_row);
        let mut row: Vec<ChunkPos> = taken.iter().copied().filter(|c| c.y == -4).collect();
        row.sort();
        assert_eq!(out, row, "row -4 is at 6: released, in row order");
        assert_eq!(r.pending_len(), 2 * 197);
        // One section east: each row's east and west arcs only.
        let was = r.recounted();
        r.update_view(
            Some(Position {
                x: 48.0,
                ..at(80.0)
            }),
            8,
            &mut out,
        );
        let plain = |r: u32, rows: u32| {
            let (a, b) = (ChunkPos::section(0, 2, 0), ChunkPos::section(1, 2, 0));
            let mut n = 0;
            for y in -10..=10 {
                for z in -10..=10 {
                    for x in -10..=11 {
                        let c = ChunkPos::section(x, y, z);
                        n += u64::from(
                            plain_holds(a, r, true, rows, c) != plain_holds(b, r, true, rows, c),
                        );
                    }
                }
            }
            n
        };
        assert_eq!(r.recounted() - was, plain(8, 4) + plain(9, 5));
        assert_eq!(
            r.recounted() - was,
            724,
            "not the footprints (1 773 + 2 783)"
        );
    }

    /// A change of form counts every footprint again: from the flat square to the cylinder, the
    /// flat chunks outside the disc, and every chunk of row 0 kept, are due for release.
    #[test]
    fn a_new_form_counts_the_footprints_again() {
        let mut r = res();
        fill(&mut r, Position::new(16.0, 16.0), 2);
        assert_eq!(r.loaded().len(), 25);
        r.set_form(Form {
            disc: true,
            vertical: Some((0, 32.0)),
            ring: 0,
        });
        let mut out = Vec::new();
        r.resolve(2, &mut out);
        assert_eq!(out, [], "the corners (2, 2) are within the kept disc of 3");
        assert_eq!(r.wanted_len(), 13);
        r.set_form(Form {
            disc: true,
            vertical: Some((0, 32.0)),
            ring: 0,
        });
        r.update_view(Some(Position::new(16.0, 16.0)), 1, &mut out);
        // Kept disc of 2: the corners (±2, ±2) and (±2, ±1), (±1, ±2) leave (x² + z² > 4).
        assert_eq!(out.len(), 25 - 13);
        assert!(out.windows(2).all(|w| w[0] < w[1]));
    }
}
