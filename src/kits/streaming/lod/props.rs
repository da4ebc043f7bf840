//! The planner's property: the same inputs to a plan kept up to date incrementally and to one
//! recomputed from scratch give the same sets, loads, releases and hole counts.

use super::testing::*;
use super::*;
use std::collections::BTreeSet;

/// What the property drives: the plan's inputs, one at a time.
#[derive(Debug, Clone)]
enum Op {
    /// Focus `i` (modulo their number) moves by a few chunks (or within its chunk).
    Move(usize, i64, i64),
    /// Every focus moves at once (as in a game's tick): the even ones by the first
    /// offset, the odd ones by the second.
    MoveAll(i64, i64, i64, i64),
    /// Focus `i` jumps anywhere.
    Teleport(usize, i64, i64),
    Add(i64, i64),
    Remove(usize),
    /// Configuration `c` of [`CONFIGS`] with chunk radius `r` (levels kept above it).
    Levels(usize, u32),
    Load(usize),
    /// Releases what is due and marks it released.
    Release,
    /// Marks only the first `n` due blocks released (the kit releases all; the plan must
    /// hold its sets whatever it is told).
    ReleaseFirst(usize),
    /// Builds (or unbuilds) loaded block `i` of level `k`, builder 0.
    Build(usize, usize, bool),
    /// Chunk (x, z) becomes ready or not.
    Chunk(i64, i64, bool),
    /// Leaving the scene and entering it again.
    Clear,
    AddBuilder,
}

const CONFIGS: [&[(u32, u32)]; 4] = [
    &[(2, 6)],
    &[(2, 5), (4, 12)],
    &[(2, 4), (8, 14)],
    &[(2, 3), (4, 6), (8, 11)],
];

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        6 => (0..4usize, -3..=3i64, -3..=3i64).prop_map(|(i, x, z)| Op::Move(i, x, z)),
        4 => (-3..=3i64, -3..=3i64, -3..=3i64, -3..=3i64)
            .prop_map(|(a, b, c, d)| Op::MoveAll(a, b, c, d)),
        1 => (0..4usize, -40..40i64, -40..40i64).prop_map(|(i, x, z)| Op::Teleport(i, x, z)),
        1 => (-20..20i64, -20..20i64).prop_map(|(x, z)| Op::Add(x, z)),
        1 => (0..4usize).prop_map(Op::Remove),
        1 => (0..4usize, 0..3u32).prop_map(|(c, r)| Op::Levels(c, r)),
        3 => (0..40usize).prop_map(Op::Load),
        2 => Just(Op::Release),
        1 => (1..4usize).prop_map(Op::ReleaseFirst),
        3 => (0..3usize, 0..200usize, any::<bool>()).prop_map(|(k, i, b)| Op::Build(k, i, b)),
        3 => (-12..12i64, -12..12i64, any::<bool>()).prop_map(|(x, z, b)| Op::Chunk(x, z, b)),
        1 => Just(Op::Clear),
        1 => Just(Op::AddBuilder),
    ]
}

fn levels_above(c: usize, r: u32) -> Lod {
    let kept: Vec<(u32, u32)> = CONFIGS[c].iter().copied().filter(|l| l.1 > r).collect();
    lod(&kept)
}

/// The same inputs to a plan kept up to date incrementally and to one recomputed from
/// scratch at every resolution (and whose holes are counted from scratch): after every
/// input the wanted, pending, not-wanted and loaded sets, what loads, what is due and the
/// hole count are the same.
fn same_as_from_scratch(bounded: bool, players: usize, defer: [u64; 2], ops: &[Op]) {
    let bounds = bounded.then_some(Bounds {
        min_x: -300.0,
        min_z: -200.0,
        max_x: 500.0,
        max_z: 400.0,
    });
    let mut inc = LodPlan::new(Grid::new(32.0), bounds);
    inc.set_levels(1, levels_above(1, 1));
    let mut full = inc.clone();
    // Regions past `defer_min` blocks are noted as not looked at: both ways are driven.
    (inc.defer_min, full.defer_min) = (defer[0], defer[1]);
    // Few pending blocks are sorted, many searched: both ways are driven.
    if defer[0] == 12 {
        inc.sort_max = 0;
    }
    let mut foci: Vec<Position> = vec![Position::new(16.0, 16.0)];
    let mut ready: BTreeSet<ChunkPos> = BTreeSet::new();
    let mut changed: Vec<(ChunkPos, bool)> = Vec::new();
    let mut builders = 0;
    let at = |x: i64, z: i64| Position::new(x as f64 * 32.0 + 7.0, z as f64 * 32.0 + 20.0);
    for (step, op) in ops.iter().enumerate() {
        let n = foci.len().max(1);
        // The chunks as counted are as they are (the last count took them all): told, so a
        // release of a replaced block changes only the record (the kit's way), in `inc`.
        inc.note_chunks(&[], |_| false, true);
        match op.clone() {
            Op::Move(i, dx, dz) if !foci.is_empty() => {
                let p = foci[i % n];
                foci[i % n] = Position::new(p.x + dx as f64 * 24.0, p.z + dz as f64 * 24.0);
            }
            Op::MoveAll(a, b, c, d) => {
                for (i, p) in foci.iter_mut().enumerate() {
                    let (dx, dz) = if i % 2 == 0 { (a, b) } else { (c, d) };
                    *p = Position::new(p.x + dx as f64 * 24.0, p.z + dz as f64 * 24.0);
                }
            }
            Op::Teleport(i, x, z) if !foci.is_empty() => foci[i % n] = at(x, z),
            Op::Add(x, z) if foci.len() < 4 => foci.push(at(x, z)),
            Op::Remove(i) if !foci.is_empty() => {
                foci.remove(i % n);
            }
            Op::Levels(c, r) => {
                for p in [&mut inc, &mut full] {
                    p.set_levels(r, levels_above(c, r));
                }
            }
            Op::Build(k, i, b) if builders > 0 => {
                let Some(block) = inc.loaded(k).nth(i % inc.loaded(k).count().max(1)) else {
                    continue;
                };
                for p in [&mut inc, &mut full] {
                    p.set_built(0, k, block, b);
                }
            }
            Op::Chunk(x, z, b) => {
                let c = ChunkPos::new(x, z);
                if b {
                    ready.insert(c);
                } else {
                    ready.remove(&c);
                }
                changed.push((c, b));
            }
            Op::Clear => {
                assert_eq!(inc.clear(), full.clear());
            }
            Op::AddBuilder if builders == 0 => {
                builders = 1;
                for p in [&mut inc, &mut full] {
                    p.add_builder(0);
                }
            }
            _ => {}
        }
        for p in [&mut inc, &mut full] {
            p.set_foci(&foci);
        }
        (full.full, full.stale) = (true, true);
        inc.resolve();
        full.resolve();
        // As the kit does: the players' squares follow before the blocks change, in `inc`.
        inc.note_players(&foci[..players.min(foci.len())]);
        match op {
            Op::Load(budget) => {
                let expect = loads_by_sort(&inc, *budget);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                inc.load(*budget, &mut a);
                full.load(*budget, &mut b);
                assert_eq!(a, expect, "loads at input {step}");
                assert_eq!(a, b, "loads at input {step}");
            }
            Op::Release | Op::ReleaseFirst(_) => {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                inc.due(|c| ready.contains(&c), &mut a);
                full.due(|c| ready.contains(&c), &mut b);
                assert_eq!(a, b, "releases at input {step}");
                assert_eq!(a, due_by_chunk(&inc, &ready), "releases at input {step}");
                let n = match op {
                    Op::ReleaseFirst(n) => *n,
                    _ => usize::MAX,
                };
                for (k, blk) in a.into_iter().take(n) {
                    inc.mark_released(k, blk);
                    full.mark_released(k, blk);
                }
            }
            _ => {}
        }
        for k in 0..MAX_LOD_LEVELS {
            assert_eq!(inc.slots[k], full.slots[k], "loaded {k} at input {step}");
            let wanted: FxHashSet<ChunkPos> = inc.wanted(k).collect();
            // Pending is wanted and not loaded, not-wanted loaded and not wanted (while the
            // step is in force; else every loaded block goes and nothing is pending).
            let loaded: FxHashSet<ChunkPos> = inc.loaded(k).collect();
            let in_force = inc.steps[k] == inc.level(k).map_or(0, |l| l.step);
            let pending: FxHashSet<ChunkPos> = match in_force {
                true => wanted.difference(&loaded).copied().collect(),
                false => FxHashSet::default(),
            };
            let unwanted: BTreeSet<ChunkPos> = match in_force {
                true => loaded.difference(&wanted).copied().collect(),
                false => loaded.iter().copied().collect(),
            };
            if in_force {
                for (b, slot) in &inc.slots[k] {
                    assert_eq!(slot.wanted, wanted.contains(b), "{b:?} {k} at {step}");
                }
            }
            for p in [&inc, &full] {
                p.check_pending(k);
                let bits: usize = p.pending[k].values().map(|m| m.count_ones() as usize).sum();
                assert_eq!(p.pending_len[k], bits, "pending bits {k} at {step}");
                assert_eq!(p.pending_set(k), pending, "pending {k} at {step}");
                assert_eq!(
                    p.unwanted[k].keys().copied().collect::<BTreeSet<_>>(),
                    unwanted,
                    "not wanted {k} at {step}"
                );
            }
        }
        let players = &foci[..players.min(foci.len())];
        let counted = full.holes(players, |c| ready.contains(&c));
        let kept = inc.update_holes(
            players,
            |c| ready.contains(&c),
            &changed,
            true,
            || ready.iter().copied(),
        );
        changed.clear();
        assert_eq!(kept, counted, "holes at input {step} ({op:?})");
        // And counted from scratch by the kept count's own way.
        let again = full.update_holes(
            players,
            |c| ready.contains(&c),
            &[],
            false,
            || ready.iter().copied(),
        );
        assert_eq!(again, counted, "holes from scratch at input {step}");
    }
}

/// The loads as the contract orders them, from every pending block sorted: level
/// ascending, the least squared distance from a focus whose range holds it to its centre,
/// z, x; the first `budget`.
fn loads_by_sort(p: &LodPlan, budget: usize) -> Vec<(usize, ChunkPos)> {
    let mut out = Vec::new();
    for k in 0..MAX_LOD_LEVELS {
        let Some(l) = p.level(k) else {
            continue;
        };
        let ranges: Vec<Area> = p.centres.iter().map(|c| range(*c, l)).collect();
        let mut keyed: Vec<(f64, ChunkPos)> = p
            .pending_set(k)
            .into_iter()
            .map(|b| (p.key(l, &ranges, b), b))
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        out.extend(keyed.into_iter().map(|(_, b)| (k, b)));
    }
    out.truncate(budget);
    out
}

/// The release rule as docs/reference/lod.md#releasing-blocks states it, chunk by chunk with no
/// memo: what `due` must answer.
fn due_by_chunk(p: &LodPlan, ready: &BTreeSet<ChunkPos>) -> Vec<(usize, ChunkPos)> {
    let mut out = Vec::new();
    if p.centres.is_empty() {
        return out;
    }
    for k in 0..MAX_LOD_LEVELS {
        let mut blocks: Vec<ChunkPos> = p.unwanted[k].keys().copied().collect();
        blocks.sort_unstable();
        for b in blocks {
            let Some(l) = p.level(k).filter(|l| l.step == p.steps[k]) else {
                out.push((k, b));
                continue;
            };
            let ring = p.centres.iter().map(|c| block_ring(b, l.step, *c)).min();
            let r = u64::from(l.radius);
            let a = block_area(b, l.step);
            let seen = |c: ChunkPos| {
                ready.contains(&c)
                    || (0..k).any(|j| p.steps[j] != 0 && p.is_ready(j, block_of(c, p.steps[j])))
            };
            let replaced = (a.z0..=a.z1).all(|z| {
                (a.x0..=a.x1).all(|x| {
                    let c = ChunkPos::new(x, z);
                    !p.grid.overlaps(c, p.bounds.as_ref()) || seen(c)
                })
            });
            if ring > Some(r + 1) || (ring <= Some(r) && replaced) {
                out.push((k, b));
            }
        }
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    #[test]
    fn incremental_wanted_sets_and_holes_equal_a_recomputation(
        bounded in proptest::prelude::any::<bool>(),
        players in 0..3usize,
        defer in proptest::prelude::prop_oneof![
            proptest::prelude::Just([DEFER_MIN, DEFER_MIN]),
            proptest::prelude::Just([0, DEFER_MIN]),
            proptest::prelude::Just([DEFER_MIN, 0]),
            proptest::prelude::Just([12, 40]),
        ],
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        same_as_from_scratch(bounded, players, defer, &ops);
    }
}
