//! The pending chunks and the loads chosen from them: each focus's queue (priority descending,
//! squared distance, z, x, y), the `"nearest"` take and the `"fair"` deal, a chunk taken put back.

use super::*;

/// A chunk ordered as the nearest-first order breaks ties: by `z`, then `x`, then `y`
/// (docs/reference/streaming.md#the-nearest-first-key; in a flat world `y` is 0, so `z`, `x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Tie(pub(super) ChunkPos);

impl Ord for Tie {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let (a, b) = (self.0, other.0);
        (a.z, a.x, a.y).cmp(&(b.z, b.x, b.y))
    }
}

impl PartialOrd for Tie {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A pending chunk as a focus's queue orders it: `u8::MAX - priority` (so the highest priority
/// comes first), the squared distance from the focus's position as bits (non-negative, so the
/// bits order as the numbers), the chunk (z, x, y).
pub(super) type Entry = (u8, u64, Tie);

/// A focus's queue: a min-heap of [`Entry`], which may hold entries that are no longer true
/// (the chunk is not pending, or its priority changed): they are skipped when popped.
pub(super) type Queue = BinaryHeap<Reverse<Entry>>;

/// A queue holding more than this many entries per chunk of its focus's square (plus a little)
/// is dropped and built again when next needed, so stale entries cannot pile up.
pub(super) const QUEUE_SLACK: usize = 2;

/// The entry of chunk `c` of priority `prio` in the queue of a focus at `pos` (sections
/// `height` tall with vertical sections on).
pub(super) fn entry(
    grid: &Grid,
    height: Option<f64>,
    pos: Position,
    c: ChunkPos,
    prio: u8,
) -> Entry {
    (
        u8::MAX - prio,
        distance(grid, height, pos, c).to_bits(),
        Tie(c),
    )
}

impl Residency {
    /// Pending chunks, priority descending then nearest-first.
    pub fn pending(&self) -> Vec<ChunkPos> {
        let mut v: Vec<ChunkPos> = self.pending.iter().copied().collect();
        v.sort_by_cached_key(|c| self.order(*c));
        v
    }

    /// `c` (wanted, not loaded, not refused) becomes pending: counted in the foci that want it
    /// and pushed into their built queues.
    pub(super) fn pend(&mut self, c: ChunkPos) {
        if !self.pending.insert(c) {
            return;
        }
        if let Some(cover) = self.cover.get(&c) {
            for &i in &cover.wanted_by {
                self.pending_in[i as usize] += 1;
            }
        }
        self.queue_pending(c, None);
    }

    /// `c` stops being pending (taken, loaded, refused, or no longer wanted); returns whether it
    /// was. Its queue entries stay behind, skipped when popped.
    pub(super) fn unpend(&mut self, c: ChunkPos) -> bool {
        if !self.pending.swap_remove(&c) {
            return false;
        }
        let foci: SmallVec<[u32; 4]> = self
            .cover
            .get(&c)
            .map(|cover| cover.wanted_by.iter().copied().collect())
            .unwrap_or_default();
        for i in foci {
            self.unqueue_from(i as usize);
        }
        true
    }

    /// One pending chunk fewer in the square of the focus of id `i`; none left: its queue holds only stale
    /// entries and is emptied.
    pub(super) fn unqueue_from(&mut self, i: usize) {
        self.pending_in[i] -= 1;
        if self.pending_in[i] == 0 {
            if let Some(q) = &mut self.queues[i] {
                if q.capacity() > 1024 {
                    *q = Queue::new();
                } else {
                    q.clear();
                }
            }
        }
    }

    /// Pushes pending chunk `c`'s entry (at its current priority) into the built queues of the
    /// foci that want it, or of `only`. A queue grown past its slack is dropped (built again from
    /// its square when next needed).
    pub(super) fn queue_pending(&mut self, c: ChunkPos, only: Option<u32>) {
        let Self {
            cover,
            queues,
            foci,
            place,
            grid,
            form,
            ..
        } = self;
        let height = form.vertical.map(|(_, h)| h);
        let Some(cover) = cover.get(&c) else {
            return;
        };
        let one = [only.unwrap_or(0)];
        let list: &[u32] = if only.is_some() {
            &one
        } else {
            &cover.wanted_by
        };
        for &i in list {
            let i = i as usize;
            let slot = place.get(i).and_then(|&at| foci.get(at as usize));
            let (Some(slot), Some(q)) = (slot, queues.get_mut(i)) else {
                continue;
            };
            if let Some(heap) = q {
                heap.push(Reverse(entry(grid, height, slot.view.pos, c, cover.prio)));
                let side = 2 * slot.view.radius as usize + 1;
                let rows = 2 * form.rows() as usize + 1;
                if heap.len() > QUEUE_SLACK * side * side * rows + 64 {
                    *q = None;
                }
            }
        }
    }

    /// Takes the `k` nearest pending chunks out of the pending set and appends them to `out`,
    /// nearest-first (priority descending, then the key
    /// (docs/reference/streaming.md#the-nearest-first-key), z, x; their hooks are asked next, in
    /// that order). A chunk's key is the least of its foci's distances, so the least head over the
    /// queues of the foci with pending chunks is the nearest pending chunk: a load costs the stale
    /// entries it skips and a few heap steps, never the pending set.
    pub fn take_nearest(&mut self, k: usize, out: &mut Vec<ChunkPos>) {
        let mut k = k.min(self.pending.len());
        if k == 0 {
            return;
        }
        // Each focus's head, with the focus's id; the least first.
        let mut heads: BTreeSet<(Entry, u32)> = BTreeSet::new();
        for at in 0..self.ids.len() {
            let id = self.ids[at] as usize;
            if self.pending_in[id] > 0 {
                if let Some(Reverse(e)) = self.queue(id).peek() {
                    heads.insert((*e, id as u32));
                }
            }
        }
        while k > 0 {
            let Some((head, i)) = heads.pop_first() else {
                debug_assert!(false, "a pending chunk in no queue");
                return;
            };
            let i = i as usize;
            if let Some(c) = self.pop_head(i, head) {
                self.unpend(c);
                out.push(c);
                k -= 1;
            }
            if let Some(Reverse(next)) = self.queues[i].as_ref().and_then(Queue::peek) {
                heads.insert((*next, i as u32));
            }
        }
    }

    /// The `"fair"` deal (docs/reference/streaming.md#the-fair-schedule): takes up to `k` pending
    /// chunks one at a time, each dealt to the first focus from `turn` on (cyclically over the foci
    /// in force, from 0 when `turn` is past the end) whose priority is the top priority still
    /// pending and whose square holds a pending chunk; that focus takes its own nearest (least
    /// squared distance from its position, then z, x). Appends each chunk and the turn after it
    /// (the next focus) to `out`.
    ///
    /// The top priority still pending is the highest of the foci whose squares hold a pending
    /// chunk (a chunk's priority is its highest focus's), so the deal keeps those foci by
    /// priority, finds the next in turn in O(log n) and pops its queue: a load costs the stale
    /// entries it skips and a few heap steps, never the pending set or every focus.
    pub fn take_fair(&mut self, k: usize, turn: usize, out: &mut Vec<(ChunkPos, usize)>) {
        let n = self.foci.len();
        if k == 0 || self.pending.is_empty() {
            return;
        }
        // The foci whose squares hold pending chunks, by priority: only fewer as chunks are dealt.
        let mut dealing: BTreeMap<u8, BTreeSet<u32>> = BTreeMap::new();
        for (i, slot) in self.foci.iter().enumerate() {
            if self.pending_in[self.ids[i] as usize] > 0 {
                dealing
                    .entry(slot.view.priority)
                    .or_default()
                    .insert(i as u32);
            }
        }
        let mut turn = turn;
        for _ in 0..k {
            let Some((_, top)) = dealing.last_key_value() else {
                return;
            };
            if turn >= n {
                turn = 0;
            }
            let next = top.range(turn as u32..).next().or_else(|| top.first());
            let Some(i) = next.map(|&i| i as usize) else {
                return; // unreachable: no empty set is kept
            };
            let Some(c) = self.pop_nearest(self.ids[i] as usize) else {
                debug_assert!(
                    false,
                    "focus {i} counts pending chunks its queue does not hold"
                );
                return;
            };
            self.unpend(c);
            // The foci of the chunk that have nothing pending left drop out of the deal.
            if let Some(cover) = self.cover.get(&c) {
                for &id in &cover.wanted_by {
                    if self.pending_in[id as usize] == 0 {
                        let at = self.place[id as usize];
                        let p = self.foci[at as usize].view.priority;
                        if let Some(set) = dealing.get_mut(&p) {
                            set.remove(&at);
                            if set.is_empty() {
                                dealing.remove(&p);
                            }
                        }
                    }
                }
            }
            turn = (i + 1) % n;
            out.push((c, turn));
        }
    }

    /// The queue of the focus of id `i`, built from the pending chunks of its square if it is
    /// not: from the pending set when that is the smaller, else from the square.
    pub(super) fn queue(&mut self, i: usize) -> &mut Queue {
        if self.queues[i].is_none() {
            let slot = *self.slot(i as u32);
            let area = slot.want(self.form);
            let height = self.height();
            let mut entries = Vec::with_capacity(self.pending_in[i] as usize);
            let prio = |c: &ChunkPos| self.cover.get(c).map_or(0, |cover| cover.prio);
            let entry =
                |c: ChunkPos| Reverse(entry(&self.grid, height, slot.view.pos, c, prio(&c)));
            if self.pending.len() < area.len() {
                self.examined += self.pending.len() as u64;
                entries.extend(
                    self.pending
                        .iter()
                        .filter(|c| area.contains(**c))
                        .map(|c| entry(*c)),
                );
            } else {
                let mut looked = 0;
                for c in self.inside(area) {
                    looked += 1;
                    if self.pending.contains(&c) {
                        entries.push(entry(c));
                    }
                }
                self.examined += looked;
            }
            debug_assert_eq!(entries.len(), self.pending_in[i] as usize);
            self.queues[i] = Some(Queue::from(entries));
        }
        self.queues[i].as_mut().expect("built above")
    }

    /// Whether a queue entry is true: its chunk is pending at that priority (its distance is
    /// right by construction: a focus that moves loses its queue).
    pub(super) fn is_current(&self, e: &Entry) -> bool {
        self.pending.contains(&e.2 .0) && self.priority(e.2 .0) == u8::MAX - e.0
    }

    /// Pops the head of the queue of id `i` if it still is `head`; its chunk if the entry is true.
    pub(super) fn pop_head(&mut self, i: usize, head: Entry) -> Option<ChunkPos> {
        let q = self.queues[i].as_mut()?;
        if q.peek() != Some(&Reverse(head)) {
            return None; // emptied meanwhile: its focus has nothing pending left
        }
        q.pop();
        self.examined += 1;
        self.is_current(&head).then_some(head.2 .0)
    }

    /// The nearest pending chunk of the focus of id `i` (least squared distance from its position, then z, x),
    /// popped from its queue (building it if needed); the chunk stays pending.
    pub(super) fn pop_nearest(&mut self, i: usize) -> Option<ChunkPos> {
        loop {
            let Reverse(head) = self.queue(i).pop()?;
            self.examined += 1;
            if self.is_current(&head) {
                return Some(head.2 .0);
            }
        }
    }

    /// Puts a chunk taken by [`Residency::take_nearest`] back (its load was not asked).
    pub fn untake(&mut self, chunk: ChunkPos) {
        if self.is_wanted(chunk) && !self.is_loaded(chunk) && !self.refusals.contains_key(&chunk) {
            self.pend(chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

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

    /// The fair deal gives a focus the nearest pending chunk *of its square*: a pending chunk
    /// nearer to it but outside its square (in line with it, in another focus's square) is not
    /// its to take (cargo-mutants: the square's test made "x or z within r" was missed).
    #[test]
    fn the_fair_deal_gives_a_focus_only_chunks_of_its_own_square() {
        let mut r = res();
        let at = |x: i64, z: i64| Position::new(x as f64 * 32.0 + 16.0, z as f64 * 32.0 + 16.0);
        r.set_foci(&[FocusView::new(at(0, 0), 4), FocusView::new(at(0, 9), 4)]);
        let (corner, beyond) = (ChunkPos::new(4, 4), ChunkPos::new(0, 5));
        for c in r.pending() {
            if c != corner && c != beyond {
                r.mark_loaded(c);
            }
        }
        assert_eq!(r.pending_len(), 2);
        // `beyond` is nearer to focus 0 (160 m) than its own corner (181 m), but lies in focus
        // 1's square only.
        let mut out = Vec::new();
        r.take_fair(1, 0, &mut out);
        assert_eq!(out, [(corner, 1)]);
        r.take_fair(1, 1, &mut out);
        assert_eq!(out, [(corner, 1), (beyond, 0)]);
    }

    /// A chunk taken for its load and put back unasked becomes pending again only if it is
    /// still wanted, not loaded and holds no refusal (cargo-mutants: either `&&` made `||` was
    /// missed, as nothing loads or refuses a chunk between its take and its put-back in the kit).
    #[test]
    fn a_chunk_put_back_is_pending_again_only_if_still_wanted_unloaded_and_unrefused() {
        let (mut r, taken) = nine_taken();
        assert_eq!((taken.len(), r.pending_len()), (9, 0));
        let (loaded, refused, kept) = (taken[0], taken[1], taken[2]);
        r.mark_loaded(loaded);
        r.hold(
            refused,
            Held {
                kind: RefusalKind::Load,
                by: "mod".into(),
                reason: "no".into(),
            },
        );
        for c in [loaded, refused, kept] {
            r.untake(c);
        }
        assert_eq!(r.pending(), [kept]);
        // No longer wanted (the focus went far away): not put back either.
        let other = taken[3];
        r.set_foci(&[FocusView::new(Position::new(10_000.0, 10.0), 1)]);
        r.untake(other);
        assert!(!r.pending().contains(&other));
    }

    /// A queue grows only to its slack: entries queued again (as a priority change queues a
    /// chunk) past `QUEUE_SLACK` entries a chunk of its focus's square (a section of its box with
    /// vertical sections) plus 64 drop it (built again when next needed), and not one entry
    /// before. A queue whose focus has nothing pending left keeps a buffer of up to 1 024
    /// entries and gives a larger one back. (cargo-mutants: the bound's and the side's `+` and
    /// `*` and the buffer test's `>` were missed: the takes are the same either way, only the
    /// memory differs.)
    #[test]
    fn a_queue_is_dropped_past_its_slack_and_an_emptied_large_one_gives_its_buffer_back() {
        let flat = Form::default();
        let tall = Form {
            disc: false,
            vertical: Some((1, 32.0)),
            ring: 0,
        };
        // Radius 1: 3 × 3 chunks, or 3 × 3 × 3 sections.
        for (form, chunks) in [(flat, 9), (tall, 27)] {
            let mut r = res();
            r.set_form(form);
            r.set_foci(&[FocusView::new(Position::new(8.0, 8.0), 1)]);
            let c = r.pending()[0];
            assert_eq!(r.queue(0).len(), chunks);
            let bound = QUEUE_SLACK * chunks + 64;
            while r.queues[0].as_ref().expect("kept within its slack").len() < bound {
                r.queue_pending(c, None);
            }
            assert_eq!(r.queues[0].as_ref().map(|q| q.len()), Some(bound));
            r.queue_pending(c, None);
            assert!(r.queues[0].is_none(), "one past the slack: dropped");
            assert_eq!(r.queue(0).len(), chunks, "built again from the square");
        }
        for (cap, kept) in [(1024, 1024), (1025, 0)] {
            let mut r = res();
            r.set_foci(&[FocusView::new(Position::new(8.0, 8.0), 1)]);
            let mut q = Queue::with_capacity(cap);
            q.extend(r.queue(0).drain());
            r.queues[0] = Some(q);
            for c in r.pending() {
                r.unpend(c);
            }
            let q = r.queues[0].as_ref().expect("emptied, not dropped");
            assert_eq!((q.len(), q.capacity()), (0, kept), "capacity {cap}");
        }
    }

    /// A take builds the queue of a focus only when its square holds a pending chunk: a focus
    /// whose chunks are all loaded costs the take nothing, and each entry popped is counted.
    /// (cargo-mutants: `pending_in > 0` made `>= 0` was missed: the empty queue built finds
    /// nothing to take; so were the pops' counts, `+=` made `*=`.)
    #[test]
    fn a_take_builds_no_queue_for_a_focus_with_nothing_pending() {
        let at = |x: i64| Position::new(x as f64 * 32.0 + 16.0, 16.0);
        for fair in [false, true] {
            let mut r = res();
            r.set_foci(&[FocusView::new(at(0), 1), FocusView::new(at(10), 1)]);
            for c in r.pending() {
                if c.x < 5 {
                    r.mark_loaded(c);
                }
            }
            r.queues[0] = None;
            let looked = r.examined();
            let mut taken = Vec::new();
            if fair {
                let mut dealt = Vec::new();
                r.take_fair(2, 0, &mut dealt);
                taken.extend(dealt.into_iter().map(|(c, _)| c));
            } else {
                r.take_nearest(2, &mut taken);
            }
            assert_eq!(taken.len(), 2);
            assert!(taken.iter().all(|c| c.x >= 9), "{taken:?}");
            assert!(r.queues[0].is_none(), "fair: {fair}");
            assert_eq!(
                r.examined() - looked,
                9 + 2,
                "fair: {fair}: the square built, two taken"
            );
        }
    }

    /// A focus's queue is built from the smaller of the pending set and its square, and what
    /// it looked at is counted. (cargo-mutants: the choice `<` made `==` and the square's count
    /// `+=` made `*=` were missed: the queue is the same either way.)
    #[test]
    fn a_queue_is_built_from_the_smaller_of_the_pending_set_and_the_square() {
        let at = |x: i64| Position::new(x as f64 * 32.0 + 16.0, 16.0);
        // 4 pending chunks, a square of 25: the pending set is looked at.
        let mut r = res();
        r.set_foci(&[FocusView::new(at(0), 2)]);
        for c in r.pending().into_iter().skip(4) {
            r.mark_loaded(c);
        }
        let looked = r.examined();
        assert_eq!(r.queue(0).len(), 4);
        assert_eq!(r.examined() - looked, 4);
        // A square of 1 against 49 + 1 pending chunks: the square is looked at.
        let mut r = res();
        r.set_foci(&[FocusView::new(at(0), 0), FocusView::new(at(20), 3)]);
        assert_eq!(r.pending_len(), 50);
        let looked = r.examined();
        assert_eq!(r.queue(0).len(), 1);
        assert_eq!(r.examined() - looked, 1);
    }

    /// The nearest take as it was: sort the whole pending set, take the first `k`.
    fn plain_nearest(r: &mut Residency, k: usize) -> Vec<ChunkPos> {
        let mut all: Vec<ChunkPos> = r.pending.iter().copied().collect();
        all.sort_by_key(|c| plain_order(r, *c));
        all.truncate(k);
        for c in &all {
            r.unpend(*c);
        }
        all
    }

    /// The fair deal as it was: for every load, scan the pending set for the top priority, then
    /// the foci from the turn on for the first of that priority whose square holds a pending
    /// chunk, and scan for its nearest.
    fn plain_fair(r: &mut Residency, k: usize, turn: usize) -> Vec<(ChunkPos, usize)> {
        let n = r.foci.len();
        let mut turn = turn;
        let mut out = Vec::new();
        for _ in 0..k {
            let Some(top) = r
                .pending
                .iter()
                .map(|c| u8::MAX - plain_order(r, *c).0)
                .max()
            else {
                break;
            };
            if turn >= n {
                turn = 0;
            }
            let (c, i) = (0..n)
                .map(|step| (turn + step) % n)
                .find_map(|i| {
                    let slot = r.foci[i];
                    let nearest = r
                        .pending
                        .iter()
                        .filter(|c| holds_in(r.form, &slot, **c))
                        .min_by_key(|c| {
                            let d = distance(&r.grid, r.height(), slot.view.pos, **c);
                            (d.to_bits(), Tie(**c))
                        });
                    (slot.view.priority == top)
                        .then_some(nearest)
                        .flatten()
                        .map(|c| (*c, i))
                })
                .expect("a focus of the top priority holds a pending chunk");
            r.unpend(c);
            turn = (i + 1) % n;
            out.push((c, turn));
        }
        out
    }

    /// The queues take exactly what the plain scans took, under both schedules, over ticks of
    /// foci moving (within their chunk and beyond), appearing, leaving and changing priority,
    /// with bounds, load refusals held and released, chunks released while wanted, chunks put
    /// back unasked, and restores.
    #[test]
    fn the_queues_take_exactly_what_the_plain_scans_take() {
        plain_scan_cases(16, 300, false);
    }

    /// The same with discs and vertical sections (docs/reference/streaming.md#shapes-and-sections):
    /// the footprints (disc rows, section rows), the 3-D nearest-first order and its ties (z, x,
    /// y), foci climbing within and across rows, and the form changed mid-run.
    #[test]
    fn the_queues_take_exactly_what_the_plain_scans_take_with_discs_and_sections() {
        plain_scan_cases(45, 300, true);
    }

    fn plain_scan_cases(mut seed: u64, cases: u32, shaped: bool) {
        for case in 0..cases {
            let size = [1.0, 8.0, 32.0][(next(&mut seed) % 3) as usize];
            let bounds = (case % 4 == 0).then_some(Bounds {
                min_x: -6.0 * size,
                min_z: -5.0 * size,
                max_x: 7.5 * size,
                max_z: 6.0 * size,
            });
            let mut r = Residency::new(Grid::new(size), bounds);
            let height = [size, size / 2.0, 3.0][case as usize % 3];
            let form = |seed: &mut u64| Form {
                disc: next(seed).is_multiple_of(2),
                vertical: (!next(seed).is_multiple_of(4))
                    .then(|| ((next(seed) % 3) as u32, height)),
                ring: 0,
            };
            let climb = |seed: &mut u64, mut f: FocusView| {
                if shaped {
                    f.pos.y = (next(seed) % 40) as f64 * height / 4.0 - 5.0 * height;
                }
                f
            };
            if shaped {
                r.set_form(form(&mut seed));
            }
            let mut foci: Vec<FocusView> = (0..1 + next(&mut seed) % 12)
                .map(|_| {
                    let f = random_focus(&mut seed, size);
                    climb(&mut seed, f)
                })
                .collect();
            let mut turn = (next(&mut seed) % 8) as usize;
            for tick in 1..=10u64 {
                let same_list = tick > 1 && next(&mut seed).is_multiple_of(3);
                for f in foci.iter_mut() {
                    match next(&mut seed) % 6 {
                        0 => {
                            f.pos.x += size * 0.25;
                            f.pos.z -= size * 0.5;
                            if shaped {
                                f.pos.y += height * 0.75;
                            }
                        }
                        1 if !same_list => {
                            let new = random_focus(&mut seed, size);
                            *f = climb(&mut seed, new);
                        }
                        2 if !same_list => f.priority = (next(&mut seed) % 3) as u8,
                        _ => {}
                    }
                }
                if shaped && tick == 5 && !same_list {
                    r.set_form(form(&mut seed));
                }
                if !same_list && next(&mut seed).is_multiple_of(4) && foci.len() < 16 {
                    let at = (next(&mut seed) as usize) % (foci.len() + 1);
                    let f = random_focus(&mut seed, size);
                    foci.insert(at, climb(&mut seed, f));
                }
                if !same_list && next(&mut seed).is_multiple_of(5) && foci.len() > 1 {
                    foci.remove((next(&mut seed) as usize) % foci.len());
                }
                // The kit's quick path: foci that stay in their chunk are moved in place.
                let moved_in_place = same_list
                    && (0..foci.len()).all(|i| r.move_focus(i, foci[i].pos))
                    && r.foci().eq(foci.iter().copied());
                if !moved_in_place {
                    r.set_foci(&foci);
                }
                let mut due = Vec::new();
                r.resolve(tick, &mut due);
                due.into_iter().for_each(|c| r.mark_released(c));
                // Refusals held and dropped, a chunk released while wanted.
                if let Some(&c) = r.pending.get_index(0) {
                    if next(&mut seed).is_multiple_of(3) {
                        r.hold(c, refusal(RefusalKind::Load));
                    }
                }
                if next(&mut seed).is_multiple_of(3) {
                    let held: Vec<ChunkPos> = r.refusals().map(|(c, _)| c).collect();
                    if let Some(c) = held.get((next(&mut seed) as usize) % held.len().max(1)) {
                        r.release_refusal(*c);
                    }
                }
                if next(&mut seed).is_multiple_of(3) {
                    let wanted: Vec<ChunkPos> = r.loaded().filter(|c| r.is_wanted(*c)).collect();
                    if let Some(c) = wanted.get((next(&mut seed) as usize) % wanted.len().max(1)) {
                        r.mark_released(*c);
                    }
                }
                if next(&mut seed).is_multiple_of(9) {
                    let loaded: BTreeSet<ChunkPos> = r.loaded().collect();
                    let refusals: BTreeMap<ChunkPos, Held> =
                        r.refusals().map(|(c, h)| (c, h.clone())).collect();
                    let views: Vec<FocusView> = r.foci().collect();
                    r.restore(loaded, refusals, &views, BTreeMap::new(), tick);
                }
                check_queues(&r);
                let k = 1 + (next(&mut seed) as usize) % (r.pending_len() + 2);
                let mut plain = r.clone();
                let taken: Vec<ChunkPos> = if next(&mut seed).is_multiple_of(2) {
                    let want = plain_nearest(&mut plain, k);
                    let mut got = Vec::new();
                    r.take_nearest(k, &mut got);
                    assert_eq!(got, want, "case {case} tick {tick}: nearest, k {k}");
                    got
                } else {
                    let want = plain_fair(&mut plain, k, turn);
                    let mut got = Vec::new();
                    r.take_fair(k, turn, &mut got);
                    assert_eq!(
                        got, want,
                        "case {case} tick {tick}: fair, k {k}, turn {turn}"
                    );
                    if let Some((_, t)) = got.last() {
                        turn = *t;
                    }
                    got.into_iter().map(|(c, _)| c).collect()
                };
                assert_eq!(
                    r.pending(),
                    plain.pending(),
                    "case {case} tick {tick}: the rest"
                );
                check_queues(&r);
                // Most load, some are refused, some are put back unasked (the cap stopped).
                for c in taken {
                    match next(&mut seed) % 8 {
                        0 => r.hold(c, refusal(RefusalKind::Load)),
                        1 => r.untake(c),
                        _ => r.mark_loaded(c),
                    }
                }
                check_queues(&r);
            }
        }
    }

    /// Ties in distance between chunks and between foci: the take follows the plain sort for
    /// one focus on quarter chunks (as the old scan and sort did), after loads and a move
    /// within the chunk.
    #[test]
    fn the_queue_takes_the_k_first_of_the_pending_list() {
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
            let mut expected = r.pending();
            expected.truncate(k.min(len));
            let mut plain = r.clone();
            assert_eq!(plain_nearest(&mut plain, k), expected, "case {case}");
            let mut a = Vec::new();
            r.take_nearest(k, &mut a);
            assert_eq!(a, expected, "case {case}: the k first of pending()");
            assert_eq!(r.pending(), plain.pending(), "case {case}: what is left");
        }
    }

    /// The fair deal costs what it deals, not the pending set: each focus's queue is built once
    /// from its square, then a load looks at one queued chunk. (It used to look at every pending
    /// chunk for the top priority, then at its focus's square, for every load: quadratic in the
    /// budget when the pending set is large.)
    #[test]
    fn the_fair_deal_looks_at_what_it_deals_not_at_every_pending_chunk() {
        let mut r = many_apart(true);
        let (mut turn, mut loads) = (0, 0);
        for tick in 2..=21 {
            r.resolve(tick, &mut Vec::new());
            let mut out = Vec::new();
            r.take_fair(8, turn, &mut out);
            assert_eq!(out.len(), 8);
            turn = out[7].1;
            loads += out.len() as u64;
            out.into_iter().for_each(|(c, _)| r.mark_loaded(c));
        }
        assert!(
            r.examined() <= 48 * 81 + loads,
            "{} pending chunks looked at for {loads} loads",
            r.examined()
        );
    }

    /// The same for `"nearest"`: a small budget against a large pending set used to scan the
    /// whole set once per load.
    #[test]
    fn the_nearest_take_looks_at_what_it_takes_not_at_every_pending_chunk() {
        let mut r = many_apart(false);
        let mut loads = 0;
        for tick in 2..=21 {
            r.resolve(tick, &mut Vec::new());
            let mut out = Vec::new();
            r.take_nearest(8, &mut out);
            assert_eq!(out.len(), 8);
            loads += out.len() as u64;
            out.into_iter().for_each(|c| r.mark_loaded(c));
        }
        assert!(
            r.examined() <= 48 * 81 + loads,
            "{} pending chunks looked at for {loads} loads",
            r.examined()
        );
    }
}
