//! What the residency's tests share: the one-focus step, a residency, chunks taken and loaded,
//! a refusal, seeded foci.

use super::*;
use std::collections::BTreeMap;

/// Round 1's one-focus step: set the focus (or none) and resolve.
pub(super) trait OneFocus {
    fn update_view(&mut self, focus: Option<Position>, radius: u32, out: &mut Vec<ChunkPos>);
    fn restore_around(&mut self, refusals: BTreeMap<ChunkPos, Held>, focus: Position, radius: u32);
}

impl OneFocus for Residency {
    fn update_view(&mut self, focus: Option<Position>, radius: u32, out: &mut Vec<ChunkPos>) {
        let foci: Vec<FocusView> = focus
            .map(|pos| FocusView::new(pos, radius))
            .into_iter()
            .collect();
        self.set_foci(&foci);
        let tick = self.resolved_at + 1;
        self.resolve(tick, out);
    }
    fn restore_around(&mut self, refusals: BTreeMap<ChunkPos, Held>, focus: Position, radius: u32) {
        let foci = [FocusView::new(focus, radius)];
        self.restore(BTreeSet::new(), refusals, &foci, BTreeMap::new(), 0);
    }
}

pub(super) fn res() -> Residency {
    Residency::new(Grid::new(32.0), None)
}

/// One focus of radius 1 and its 9 chunks taken for loading, nearest first.
pub(super) fn nine_taken() -> (Residency, Vec<ChunkPos>) {
    let mut r = res();
    r.set_foci(&[FocusView::new(Position::new(10.0, 10.0), 1)]);
    let mut taken = Vec::new();
    r.take_nearest(9, &mut taken);
    (r, taken)
}

pub(super) fn fill(r: &mut Residency, focus: Position, radius: u32) {
    let mut out = Vec::new();
    r.update_view(Some(focus), radius, &mut out);
    let mut batch = Vec::new();
    r.take_nearest(usize::MAX, &mut batch);
    for c in batch {
        r.mark_loaded(c);
    }
}

pub(super) fn refusal(kind: RefusalKind) -> Held {
    Held {
        kind,
        by: "m".to_owned(),
        reason: String::new(),
    }
}

/// SplitMix64, so the cases are the same on every run.
pub(super) fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Whether `slot`'s footprint holds `c` (worked out plainly: the shape's inequality on the
/// offset, and the rows).
pub(super) fn holds_in(form: Form, slot: &Slot, c: ChunkPos) -> bool {
    let (dx, dz, r) = (
        i128::from(c.x - slot.centre.x),
        i128::from(c.z - slot.centre.z),
        i128::from(slot.view.radius),
    );
    let within = if form.disc {
        dx * dx + dz * dz <= r * r
    } else {
        dx.abs().max(dz.abs()) <= r
    };
    within && (c.y - slot.centre.y).abs() <= i64::from(form.rows())
}

/// One focus on quarter chunks near the origin (many exact distance ties, overlapping
/// squares), radius 0..=4, priority mostly 0.
pub(super) fn random_focus(seed: &mut u64, size: f64) -> FocusView {
    let coord = |s: &mut u64| (next(s) % 64) as f64 * size / 4.0 - 8.0 * size;
    FocusView {
        pos: Position::new(coord(seed), coord(seed)),
        radius: (next(seed) % 5) as u32,
        priority: [0, 0, 0, 1, 2, 7][(next(seed) % 6) as usize],
    }
}

/// 48 foci of radius 4, far apart (48 × 81 = 3 888 pending chunks), priorities 0–2 (or all
/// 0), resolved at tick 1.
pub(super) fn many_apart(priorities: bool) -> Residency {
    let mut r = res();
    let foci: Vec<FocusView> = (0..48)
        .map(|i| FocusView {
            pos: Position::new(f64::from(i % 8) * 1000.0 + 5.0, f64::from(i / 8) * 1000.0),
            radius: 4,
            priority: if priorities { (i % 3) as u8 } else { 0 },
        })
        .collect();
    r.set_foci(&foci);
    r.resolve(1, &mut Vec::new());
    assert_eq!(r.pending_len(), 48 * 81);
    r
}

pub(super) fn two(
    r: &mut Residency,
    a: Position,
    b: Position,
    radius: u32,
    tick: u64,
) -> Vec<ChunkPos> {
    let mut out = Vec::new();
    r.set_foci(&[FocusView::new(a, radius), FocusView::new(b, radius)]);
    r.resolve(tick, &mut out);
    out
}

/// The counts and queues agree with the pending set and the foci: each focus counts the
/// pending chunks of its square, each built queue holds a true entry for every one of them,
/// and each wanted chunk's priority is the highest of its foci's.
pub(super) fn check_queues(r: &Residency) {
    assert_eq!(r.pending_in.len(), r.place.len());
    assert_eq!(r.queues.len(), r.place.len());
    assert_eq!(r.ids.len(), r.foci.len());
    for (id, &at) in r.place.iter().enumerate() {
        if at == FREE {
            assert!(r.free_ids.contains(&(id as u32)), "id {id} lost");
            assert_eq!(r.pending_in[id], 0, "free id {id}");
            assert!(r.queues[id].is_none(), "free id {id}");
        } else {
            assert_eq!(r.ids[at as usize], id as u32);
        }
    }
    for (c, cover) in &r.cover {
        if let Some(p) = r
            .foci
            .iter()
            .filter(|s| holds_in(r.form, s, *c))
            .map(|s| s.view.priority)
            .max()
        {
            assert_eq!(cover.prio, p, "{c:?}");
            assert_eq!(
                cover.wanted_by.len(),
                r.foci.iter().filter(|s| holds_in(r.form, s, *c)).count()
            );
        } else {
            assert!(cover.wanted_by.is_empty(), "{c:?}");
        }
    }
    for (i, slot) in r.foci.iter().enumerate() {
        let mine: Vec<ChunkPos> = r
            .pending
            .iter()
            .copied()
            .filter(|c| holds_in(r.form, slot, *c))
            .collect();
        let id = r.ids[i] as usize;
        assert_eq!(r.pending_in[id] as usize, mine.len(), "focus {i}");
        if let Some(q) = &r.queues[id] {
            let entries: BTreeSet<Entry> = q.iter().map(|Reverse(e)| *e).collect();
            for c in mine {
                let p = u8::MAX - plain_order(r, c).0;
                let e = entry(&r.grid, r.height(), slot.view.pos, c, p);
                assert!(entries.contains(&e), "focus {i} does not queue {c:?}");
            }
        }
    }
}

/// The nearest-first order of a pending chunk worked out plainly from the foci in force (no
/// cover, no queue): priority descending, least distance from a focus that wants it, z, x.
pub(super) fn plain_order(r: &Residency, c: ChunkPos) -> Entry {
    let wanting: Vec<&Slot> = r.foci.iter().filter(|s| holds_in(r.form, s, c)).collect();
    let p = wanting
        .iter()
        .map(|s| s.view.priority)
        .max()
        .expect("wanted");
    let d = wanting
        .iter()
        .map(|s| distance(&r.grid, r.height(), s.view.pos, c))
        .min_by(f64::total_cmp)
        .expect("wanted");
    (u8::MAX - p, d.to_bits(), Tie(c))
}
