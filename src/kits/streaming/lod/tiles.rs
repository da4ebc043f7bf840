//! Tiles of 8 × 8 blocks (or chunks) kept as 64-bit masks: a cell's tile and bit, a rectangle's
//! mask over a tile, widening a mask to a coarser step, bits in a map of tiles.

use super::*;

// ---- Tiles: 8 × 8 cells (chunks or blocks) as the bits of a u64, row order ----

/// A tile is `TILE × TILE` cells (a power of two: [`Area::blocks`] takes it as a step).
pub(super) const TILE: u32 = 8;

/// The tile holding cell `p`.
pub(super) fn tile_of(p: ChunkPos) -> ChunkPos {
    ChunkPos::new(p.x >> 3, p.z >> 3)
}

/// Cell `p`'s bit in its tile: row order (z, then x), so ascending bits are row order.
pub(super) fn bit_of(p: ChunkPos) -> u32 {
    (((p.z & 7) << 3) | (p.x & 7)) as u32
}

/// The cell of tile `t` whose bit is `bit`.
pub(super) fn cell_of(t: ChunkPos, bit: u32) -> ChunkPos {
    ChunkPos::new(t.x * 8 + i64::from(bit & 7), t.z * 8 + i64::from(bit >> 3))
}

/// The cells of tile `t`.
pub(super) fn tile_area(t: ChunkPos) -> Area {
    Area {
        x0: t.x * 8,
        x1: t.x * 8 + 7,
        z0: t.z * 8,
        z1: t.z * 8 + 7,
    }
}

/// The cells of `a` inside tile `t`, as bits.
pub(super) fn rect_mask(a: &Area, t: ChunkPos) -> u64 {
    let (ox, oz) = (t.x * 8, t.z * 8);
    let x0 = a.x0.saturating_sub(ox).max(0);
    let x1 = a.x1.saturating_sub(ox).min(7);
    let z0 = a.z0.saturating_sub(oz).max(0);
    let z1 = a.z1.saturating_sub(oz).min(7);
    if x0 > x1 || z0 > z1 {
        return 0;
    }
    let row = (0xFFu64 >> (7 - (x1 - x0))) << x0;
    let rows = u64::MAX >> (8 * (7 - (z1 - z0))) << (8 * z0);
    (row * 0x0101_0101_0101_0101) & rows
}

/// Four bits of blocks of step 2 as eight bits of chunks.
pub(super) const WIDEN_2: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        let mut b = 0;
        while b < 4 {
            if i >> b & 1 == 1 {
                t[i] |= 0b11 << (2 * b);
            }
            b += 1;
        }
        i += 1;
    }
    t
};

/// Two bits of blocks of step 4 as eight bits of chunks.
pub(super) const WIDEN_4: [u8; 4] = [0, 0x0F, 0xF0, 0xFF];

/// Whether bit `b` of the tile holding `p` is set in `map`.
pub(super) fn has(map: &FxHashMap<ChunkPos, u64>, p: ChunkPos) -> bool {
    map.get(&tile_of(p))
        .is_some_and(|w| w >> bit_of(p) & 1 == 1)
}

/// Sets (or clears) `p`'s bit in `map`; a tile left empty goes. Whether the bit changed.
pub(super) fn set_bit(map: &mut FxHashMap<ChunkPos, u64>, p: ChunkPos, on: bool) -> bool {
    let bit = 1u64 << bit_of(p);
    match map.entry(tile_of(p)) {
        Entry::Occupied(mut e) => {
            let was = *e.get();
            let now = if on { was | bit } else { was & !bit };
            if now == 0 {
                e.remove();
            } else {
                *e.get_mut() = now;
            }
            now != was
        }
        Entry::Vacant(e) => {
            if on {
                e.insert(bit);
            }
            on
        }
    }
}
