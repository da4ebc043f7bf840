//! Chunk positions as Bevy sees them: an `IVec3` `(x, y, z)` (docs/reference/engines.md#the-bevy-plugin),
//! `y` the section row with `vertical` on and 0 without it, and the conversions to and from the
//! kit's [`ChunkPos`].

use ::bevy::prelude::IVec3;

use crate::grid::ChunkPos;

/// The kit's chunk (or section) as an `IVec3 (x, y, z)`. Bevy's `IVec3` is 32-bit; a coordinate
/// beyond `i32`'s range (a chunk more than 2³¹ chunk sizes out, which only positions far past
/// what an `f32` `Transform` can hold reach) saturates to `i32::MIN` / `i32::MAX`.
pub fn chunk_ivec3(chunk: ChunkPos) -> IVec3 {
    let narrow = |v: i64| v.clamp(i32::MIN.into(), i32::MAX.into()) as i32;
    IVec3::new(narrow(chunk.x), narrow(chunk.y), narrow(chunk.z))
}

/// The kit's chunk (or section) at `IVec3 (x, y, z)`: [`ChunkPos::section`]; `y` 0 is the flat
/// world's chunk [`ChunkPos::new`]`(x, z)`.
pub fn ivec3_chunk(at: IVec3) -> ChunkPos {
    ChunkPos::section(at.x.into(), at.y.into(), at.z.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_round_trips_through_ivec3_with_its_row() {
        for c in [
            ChunkPos::new(0, 0),
            ChunkPos::new(-3, 7),
            ChunkPos::section(2, -1, 5),
            ChunkPos::section(i32::MIN.into(), i32::MAX.into(), -1),
        ] {
            let v = chunk_ivec3(c);
            assert_eq!((v.x as i64, v.y as i64, v.z as i64), (c.x, c.y, c.z));
            assert_eq!(ivec3_chunk(v), c);
        }
        assert_eq!(ivec3_chunk(IVec3::new(4, 0, -2)), ChunkPos::new(4, -2));
    }

    #[test]
    fn a_chunk_beyond_i32_saturates() {
        let far = ChunkPos::section(1 << 40, -(1 << 40), i64::from(i32::MAX) + 1);
        assert_eq!(chunk_ivec3(far), IVec3::new(i32::MAX, i32::MIN, i32::MAX));
    }
}
