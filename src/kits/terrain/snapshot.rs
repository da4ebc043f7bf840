//! Bordered snapshots (docs/reference/terrain.md#bordered-snapshots): a chunk's cells plus a
//! skin of its 8 neighbours' cells, copied in one call with the chunk's version, owned by
//! whoever holds it (a mesh job on another thread shares nothing with the world). The copy is
//! a pure function over the 3 × 3 chunks, benchmarkable alone; the service (`handle.rs`) says
//! when a snapshot is available and which neighbours are outside the ground.

use crate::grid::ChunkPos;

use super::ChunkData;

/// The widest skin a snapshot may have, in cells (and never more than `cellsPerChunk`).
pub const MAX_SKIN: u32 = 8;

/// A bordered snapshot of a chunk (docs/reference/terrain.md#bordered-snapshots): `side²`
/// cells, `side = cellsPerChunk + 2·skin`, in row order — row `j` (north) then column `i`
/// (east), the orientation of [`ChunkData`]: cell `(skin, skin)` is the chunk's cell `(0, 0)`,
/// cell `(0, 0)` the south-west corner of the skin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The chunk.
    pub chunk: ChunkPos,
    /// The skin, in cells.
    pub skin: u32,
    /// Cells per side: `cellsPerChunk + 2·skin`.
    pub side: u32,
    /// `side²` heights, row order.
    pub heights: Vec<u16>,
    /// `side²` materials, row order.
    pub materials: Vec<u8>,
    /// The chunk's version when the snapshot was taken
    /// (docs/reference/terrain.md#versions): a result built from it is stale once the
    /// chunk's version differs.
    pub version: u64,
}

impl Snapshot {
    /// The height of cell `(i, j)` (`i` east, `j` north, both in `0..side`).
    ///
    /// # Panics
    /// When `i` or `j` is not below `side`.
    pub fn height(&self, i: u32, j: u32) -> u16 {
        self.heights[self.index(i, j)]
    }

    /// The material of cell `(i, j)` (`i` east, `j` north, both in `0..side`).
    ///
    /// # Panics
    /// When `i` or `j` is not below `side`.
    pub fn material(&self, i: u32, j: u32) -> u8 {
        self.materials[self.index(i, j)]
    }

    fn index(&self, i: u32, j: u32) -> usize {
        assert!(
            i < self.side && j < self.side,
            "cell ({i}, {j}) is outside a snapshot of side {}",
            self.side
        );
        (j * self.side + i) as usize
    }
}

/// Why a snapshot was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// The chunk is not complete (skin > 0) or not built (skin 0)
    /// (docs/reference/terrain.md#bordered-snapshots).
    #[error("not complete")]
    NotComplete,
    /// The skin is wider than [`MAX_SKIN`] or than `cellsPerChunk`.
    #[error("skin {skin} is out of range (0..={max})")]
    Skin {
        /// The skin asked for.
        skin: u32,
        /// The widest skin this terrain allows: `min(8, cellsPerChunk)`.
        max: u32,
    },
}

/// The widest skin for chunks of `cells` cells a side.
pub fn max_skin(cells: u32) -> u32 {
    MAX_SKIN.min(cells)
}

/// Copies the bordered snapshot of `chunk` from the 3 × 3 chunks around it, neighbour
/// `(dx, dz)` at `around[3·(dz + 1) + dx + 1]` (row order: south row first; `around[4]` the
/// chunk itself), `None` for a neighbour outside the ground. A skin cell of a neighbour outside the ground repeats the
/// nearest cell of the ground's chunks: its column is clamped to the chunk's when the
/// neighbouring column (`dx`) is outside the ground, its row likewise — beside the chunk that
/// is the chunk's own edge cell, and two neighbouring snapshots agree on every cell they share.
///
/// # Panics
/// When `around[4]` is `None`, the chunks' sides differ, or `skin` exceeds their side.
pub fn copy(
    chunk: ChunkPos,
    skin: u32,
    version: u64,
    around: &[Option<&ChunkData>; 9],
) -> Snapshot {
    let centre = around[4].expect("the chunk itself");
    let c = centre.cells;
    assert!(skin <= c, "skin {skin} wider than the chunk ({c})");
    let side = c + 2 * skin;
    let cells = (side * side) as usize;
    let mut heights = vec![0u16; cells];
    let mut materials = vec![0u8; cells];
    let mut out = 0usize; // the next cell written
                          // Which neighbouring column / row (index dx + 1, dz + 1) is inside the ground.
    let column_in = [around[3].is_some(), true, around[5].is_some()];
    let row_in = [around[1].is_some(), true, around[7].is_some()];
    // Each output row's three runs: (dx, first column, columns) of the source chunk.
    let runs = [(0usize, c - skin, skin), (1usize, 0, c), (2usize, 0, skin)];
    for r in 0..side {
        let (dz, j) = if r < skin {
            (0usize, c - skin + r)
        } else if r < skin + c {
            (1, r - skin)
        } else {
            (2, r - skin - c)
        };
        // A row beyond the ground's edge repeats the chunk's edge row.
        let (dz, j) = match (dz, row_in[dz]) {
            (0, false) => (1, 0),
            (2, false) => (1, c - 1),
            keep => (keep.0, j),
        };
        for &(dx, first, count) in &runs {
            if count == 0 {
                continue;
            }
            let (dx, first, repeat) = match (dx, column_in[dx]) {
                (0, false) => (1, 0, true),
                (2, false) => (1, c - 1, true),
                _ => (dx, first, false),
            };
            // A corner outside the ground whose row and column are inside: cannot happen on
            // a rectangular ground; the chunk's nearest cell then.
            let (data, first, j, repeat) = match around[dz * 3 + dx] {
                Some(d) => (d, first, j, repeat),
                None => {
                    let i = if dx == 0 { 0 } else { c - 1 };
                    let j = if dz == 0 { 0 } else { c - 1 };
                    (centre, i, j, true)
                }
            };
            let n = (c * c) as usize;
            let at = (j * c + first) as usize;
            let count = count as usize;
            let (h_out, m_out) = (
                &mut heights[out..out + count],
                &mut materials[out..out + count],
            );
            out += count;
            if repeat {
                let k = 2 * at;
                h_out.fill(u16::from_le_bytes([data.bytes[k], data.bytes[k + 1]]));
                m_out.fill(data.bytes[2 * n + at]);
            } else {
                let bytes = &data.bytes[2 * at..2 * (at + count)];
                for (h, b) in h_out.iter_mut().zip(bytes.chunks_exact(2)) {
                    *h = u16::from_le_bytes([b[0], b[1]]);
                }
                m_out.copy_from_slice(&data.bytes[2 * n + at..2 * n + at + count]);
            }
        }
    }
    debug_assert_eq!(out, cells);
    Snapshot {
        chunk,
        skin,
        side,
        heights,
        materials,
        version,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of `n²` cells whose every cell says where it is: height `1000·tag + index`,
    /// unique per chunk and cell, and a material of its own.
    fn drawn(n: u32, tag: u16) -> ChunkData {
        let heights: Vec<u16> = (0..n * n).map(|k| tag * 1000 + k as u16).collect();
        let materials: Vec<u8> = (0..n * n)
            .map(|k| (tag as u8) * 20 + (k % 17) as u8)
            .collect();
        ChunkData::from_cells(n, &heights, &materials)
    }

    /// The cell at chunk-local `(i, j)` (either may be outside `0..n`) read one by one.
    fn cell(around: &[Option<&ChunkData>; 9], n: u32, i: i64, j: i64) -> (u16, u8) {
        let n = i64::from(n);
        let (dx, dz) = (i.div_euclid(n), j.div_euclid(n));
        let d = around[((dz + 1) * 3 + dx + 1) as usize].unwrap();
        let (li, lj) = (i.rem_euclid(n) as u32, j.rem_euclid(n) as u32);
        (d.height(li, lj), d.material(li, lj))
    }

    #[test]
    fn a_snapshot_is_the_chunk_and_its_neighbours_skin_cell_by_cell() {
        let n = 4;
        let chunks: Vec<ChunkData> = (0..9).map(|t| drawn(n, t)).collect();
        let around: [Option<&ChunkData>; 9] = std::array::from_fn(|k| Some(&chunks[k]));
        for skin in 0..=n {
            let s = copy(ChunkPos::new(3, -1), skin, 7, &around);
            assert_eq!((s.side, s.skin, s.version), (n + 2 * skin, skin, 7));
            assert_eq!(s.heights.len(), (s.side * s.side) as usize);
            assert_eq!(s.materials.len(), s.heights.len());
            for j in 0..s.side {
                for i in 0..s.side {
                    let want = cell(
                        &around,
                        n,
                        i64::from(i) - i64::from(skin),
                        i64::from(j) - i64::from(skin),
                    );
                    assert_eq!((s.height(i, j), s.material(i, j)), want, "({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn skin_beyond_the_ground_repeats_the_nearest_cell_of_the_ground() {
        let n = 4;
        let skin = 2;
        let chunks: Vec<ChunkData> = (0..9).map(|t| drawn(n, t)).collect();
        // The ground's north-east corner... and its north edge: the row dz = +1 is outside
        // (and, for the corner, the column dx = +1).
        for east_out in [false, true] {
            let around: [Option<&ChunkData>; 9] = std::array::from_fn(|k| {
                let (dx, dz) = (k % 3, k / 3);
                (dz != 2 && !(east_out && dx == 2)).then_some(&chunks[k])
            });
            let s = copy(ChunkPos::new(0, 0), skin, 1, &around);
            for j in 0..s.side {
                for i in 0..s.side {
                    let mut ci = i64::from(i) - i64::from(skin);
                    let mut cj = i64::from(j) - i64::from(skin);
                    // Clamped along each axis that leaves the ground.
                    cj = cj.min(i64::from(n) - 1);
                    if east_out {
                        ci = ci.min(i64::from(n) - 1);
                    }
                    let want = cell(&around, n, ci, cj);
                    assert_eq!((s.height(i, j), s.material(i, j)), want, "({i}, {j})");
                }
            }
        }
        // Beyond the ground on every side: the chunk's own edge cells.
        let alone: [Option<&ChunkData>; 9] =
            std::array::from_fn(|k| (k == 4).then_some(&chunks[4]));
        let s = copy(ChunkPos::new(0, 0), 1, 1, &alone);
        assert_eq!(s.height(0, 0), chunks[4].height(0, 0));
        assert_eq!(s.height(5, 5), chunks[4].height(3, 3));
        assert_eq!(s.height(0, 3), chunks[4].height(0, 2));
        assert_eq!(s.material(5, 2), chunks[4].material(3, 1));
    }

    #[test]
    fn the_widest_skin_is_eight_cells_and_never_wider_than_the_chunk() {
        assert_eq!(max_skin(32), 8);
        assert_eq!(max_skin(8), 8);
        assert_eq!(max_skin(3), 3);
        assert_eq!(max_skin(1), 1);
    }
}
