//! The terrain of one chunk: a height (u16) and a material (u8) per cell, a pure function of
//! `(seed, x, z, cellsPerChunk, chunkSize)`.
//!
//! Byte-identical on every machine: the only floating-point operations on the path are `+`, `-`,
//! `*`, `/`, `floor` and conversions, which IEEE 754 rounds exactly the same everywhere (Rust never
//! fuses them into FMA on its own), in `noise`'s Perlin noise (`perlin_2d`: gradients picked by a
//! permutation table seeded by a xorshift generator, a quintic fade, linear interpolation) and in
//! the octave sum below. No `sin`, `exp`, `pow`, `sqrt` or `powi`: those are the functions whose
//! results differ between C libraries. `tests/terrain.rs` pins the FNV-1a 64 hash of chunks at
//! fixed seeds.

use noise::{NoiseFn, Perlin};

use crate::grid::ChunkPos;
use crate::hash::fnv1a64;

/// The generator's version, stamped on anything derived from its output
/// (docs/reference/world-dir.md#what-is-stored).
pub const GENERATOR_VERSION: u32 = 1;

/// Octaves: (wavelength in metres, weight). Weights sum to 1; wavelengths halve.
const OCTAVES: [(f64, f64); 4] = [
    (512.0, 0.5),
    (256.0, 0.25),
    (128.0, 0.15625),
    (64.0, 0.09375),
];

/// `noise`'s Perlin noise is total below this magnitude of a lattice coordinate (2^63).
const NOISE_LIMIT: f64 = 9_223_372_036_854_775_808.0;

/// `p`, a coordinate in an octave's lattice units (metres × frequency), as the noise is fed it.
///
/// `noise` 0.9's Perlin noise converts `floor(p)` to `isize`: it panics once `p >= 2^63` or
/// `p < -2^63` (and overflows at `-2^63`), and on a non-finite `p`. A `chunkSize` of `1e21`
/// reaches that on chunk 1. Its permutation table repeats every 256 lattice units (the hash
/// takes `corner & 0xff`), so the noise is periodic and a far coordinate can be brought back to
/// one that is the same point of the noise:
///
/// - `|p| < 2^63`: `p` itself, so every chunk the generator made before is unchanged (the
///   generator's version stays 1);
/// - `|p| >= 2^63` (an integer there): `p % 256 + 256·sign(p)`, exact in `f64` (`%` is exact),
///   in `256..512` or `-512..=-256`: the same corner modulo 256 and the same fraction (none);
/// - `±∞` (a cell centre past `f64::MAX` metres) is taken as `±f64::MAX`, NaN as 0.
fn lattice(p: f64) -> f64 {
    if p.abs() < NOISE_LIMIT {
        return p;
    }
    if p.is_nan() {
        return 0.0;
    }
    let p = p.clamp(-f64::MAX, f64::MAX);
    p % 256.0 + 256.0f64.copysign(p)
}

/// Materials, by height band.
pub mod material {
    /// Below the water line.
    pub const WATER: u8 = 0;
    /// The shore.
    pub const SAND: u8 = 1;
    /// Lowlands.
    pub const GRASS: u8 = 2;
    /// Hills.
    pub const ROCK: u8 = 3;
    /// Peaks.
    pub const SNOW: u8 = 4;
}

/// A generator: one Perlin table per octave, from the seed.
#[derive(Clone)]
pub struct Generator {
    seed: u64,
    octaves: Vec<(Perlin, f64, f64)>,
    cells: u32,
    chunk_size: f64,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("cells", &self.cells)
            .field("chunk_size", &self.chunk_size)
            .finish_non_exhaustive()
    }
}

/// One generated chunk: `cells × cells` heights (u16, little-endian) then materials (u8), in
/// row order (`z`, then `x`) of the cells, and their hash (computed where the chunk is
/// generated, on a worker, not on the tick).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkData {
    /// Cells per side.
    pub cells: u32,
    /// The bytes: heights then materials.
    pub bytes: Vec<u8>,
    hash: u64,
}

impl ChunkData {
    /// The height of cell `(i, j)` (`i` east, `j` north), 0..=65535.
    pub fn height(&self, i: u32, j: u32) -> u16 {
        let k = 2 * (j * self.cells + i) as usize;
        u16::from_le_bytes([self.bytes[k], self.bytes[k + 1]])
    }

    /// The material of cell `(i, j)`.
    pub fn material(&self, i: u32, j: u32) -> u8 {
        let n = (self.cells * self.cells) as usize;
        self.bytes[2 * n + (j * self.cells + i) as usize]
    }

    /// A chunk of `cells × cells` cells from its heights and materials in row order (`z`,
    /// then `x`), hashed: terrain drawn by hand (tests, benchmarks, other kits' fixtures).
    ///
    /// # Panics
    /// When either slice does not hold `cells²` values.
    pub fn from_cells(cells: u32, heights: &[u16], materials: &[u8]) -> ChunkData {
        let n = (cells * cells) as usize;
        assert!(
            heights.len() == n && materials.len() == n,
            "cells² heights and materials"
        );
        let mut bytes = Vec::with_capacity(3 * n);
        for h in heights {
            bytes.extend_from_slice(&h.to_le_bytes());
        }
        bytes.extend_from_slice(materials);
        let hash = fnv1a64(&bytes);
        ChunkData { cells, bytes, hash }
    }

    /// FNV-1a 64 of the bytes: the chunk hash.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// Sets cell `index` (`j * cells + i`) to `height` and `material`, without rehashing (call
    /// [`ChunkData::rehash`] after a batch).
    fn put(&mut self, index: u32, height: u16, material: u8) {
        let n = (self.cells * self.cells) as usize;
        let k = index as usize;
        self.bytes[2 * k..2 * k + 2].copy_from_slice(&height.to_le_bytes());
        self.bytes[2 * n + k] = material;
    }

    fn rehash(&mut self) {
        self.hash = fnv1a64(&self.bytes);
    }

    /// Sets cell `(i, j)` and updates the hash.
    pub fn set(&mut self, i: u32, j: u32, height: u16, material: u8) {
        self.put(j * self.cells + i, height, material);
        self.rehash();
    }

    /// Applies a stored diff (its cells overwrite these) and updates the hash. Cells outside the
    /// chunk are ignored (the decoder already refuses them).
    pub fn apply(&mut self, diff: &super::region::Diff) {
        let n = self.cells * self.cells;
        for (&index, &(height, material)) in diff.cells.range(..n) {
            self.put(index, height, material);
        }
        self.rehash();
    }
}

impl Generator {
    /// A generator for `seed`, `cells` per chunk side and `chunk_size` metres.
    pub fn new(seed: u64, cells: u32, chunk_size: f64) -> Self {
        let folded = (seed ^ (seed >> 32)) as u32;
        let octaves = OCTAVES
            .iter()
            .enumerate()
            .map(|(k, (wavelength, weight))| {
                let table = folded.wrapping_add((k as u32).wrapping_mul(0x9E37_79B9));
                (Perlin::new(table), 1.0 / wavelength, *weight)
            })
            .collect();
        Generator {
            seed,
            octaves,
            cells,
            chunk_size,
        }
    }

    /// What a stored diff must have been taken against to apply to this generator's chunks.
    pub fn stamp(&self) -> super::region::Stamp {
        super::region::Stamp {
            generator: GENERATOR_VERSION,
            seed: self.seed,
            cells: self.cells,
            chunk_size: self.chunk_size,
        }
    }

    /// The normalised height 0..=1 at world position `(x, z)`. Total: any `f64` gives a height
    /// (see [`lattice`]).
    fn height_at(&self, x: f64, z: f64) -> f64 {
        let mut sum = 0.0;
        for (perlin, frequency, weight) in &self.octaves {
            sum += perlin.get([lattice(x * frequency), lattice(z * frequency)]) * weight;
        }
        (sum * 0.5 + 0.5).clamp(0.0, 1.0)
    }

    /// The height and material of cell `(i, j)` of chunk `c`, as [`Generator::generate`] makes
    /// them (an edit compares with it to tell a modified cell from a restored one).
    pub fn cell(&self, c: ChunkPos, i: u32, j: u32) -> (u16, u8) {
        let n = self.cells;
        let cell = self.chunk_size / f64::from(n);
        // The cell's centre, in metres.
        let x = (c.x as f64 * f64::from(n) + f64::from(i) + 0.5) * cell;
        let z = (c.z as f64 * f64::from(n) + f64::from(j) + 0.5) * cell;
        let h = self.height_at(x, z);
        let material = match h {
            h if h < 0.42 => material::WATER,
            h if h < 0.46 => material::SAND,
            h if h < 0.62 => material::GRASS,
            h if h < 0.75 => material::ROCK,
            _ => material::SNOW,
        };
        ((h * 65535.0).floor() as u16, material)
    }

    /// Generates chunk `c`.
    pub fn generate(&self, c: ChunkPos) -> ChunkData {
        let n = self.cells;
        let cells = (n * n) as usize;
        let mut bytes = vec![0u8; cells * 3];
        for j in 0..n {
            for i in 0..n {
                let (height, material) = self.cell(c, i, j);
                let k = (j * n + i) as usize;
                bytes[2 * k..2 * k + 2].copy_from_slice(&height.to_le_bytes());
                bytes[2 * cells + k] = material;
            }
        }
        let hash = fnv1a64(&bytes);
        ChunkData {
            cells: n,
            bytes,
            hash,
        }
    }
}

/// The chunk and its cell that sample `(i, j)` of block `block` of `step` chunks a side
/// (docs/reference/terrain.md#lod-blocks-built-by-terrain): the full-resolution cell
/// `(i·step, j·step)` of the block's area.
pub fn block_sample(
    block: ChunkPos,
    step: u32,
    cells: u32,
    i: u32,
    j: u32,
) -> (ChunkPos, u32, u32) {
    let n = u64::from(cells);
    let (gi, gj) = (
        u64::from(i) * u64::from(step),
        u64::from(j) * u64::from(step),
    );
    let s = i64::from(step);
    let chunk = ChunkPos::new(block.x * s + (gi / n) as i64, block.z * s + (gj / n) as i64);
    (chunk, (gi % n) as u32, (gj % n) as u32)
}

/// Whether cell `(i, j)` of `chunk` is one a block of `step` samples, and which block cell.
pub fn sampled_by(
    chunk: ChunkPos,
    step: u32,
    cells: u32,
    i: u32,
    j: u32,
) -> Option<(ChunkPos, u32, u32)> {
    let s = i64::from(step);
    let block = ChunkPos::new(chunk.x.div_euclid(s), chunk.z.div_euclid(s));
    let n = i64::from(cells);
    let gx = (chunk.x - block.x * s) * n + i64::from(i);
    let gz = (chunk.z - block.z * s) * n + i64::from(j);
    (gx % s == 0 && gz % s == 0).then(|| (block, (gx / s) as u32, (gz / s) as u32))
}

/// The chunks whose cells a block samples, row order: on each axis the chunk offsets
/// ⌊i·step / cells⌋ for i < cells (every offset below `step` when `step ≤ cells`, the
/// increments being at most 1; else `cells` distinct ones), as [`block_sample`] gives them.
pub fn sampled_chunks(block: ChunkPos, step: u32, cells: u32) -> Vec<ChunkPos> {
    let offsets = || {
        let (s, n) = (u64::from(step), u64::from(cells));
        let count = if step <= cells { step } else { cells };
        (0..u64::from(count)).map(move |i| if step <= cells { i } else { i * s / n } as i64)
    };
    let s = i64::from(step);
    let (x0, z0) = (block.x * s, block.z * s);
    let mut out = Vec::with_capacity((step.min(cells) as usize).pow(2));
    for dz in offsets() {
        out.extend(offsets().map(|dx| ChunkPos::new(x0 + dx, z0 + dz)));
    }
    out
}

impl Generator {
    /// Builds block `block` of `step` chunks a side: cell `(i, j)` is exactly the
    /// full-resolution cell `(i·step, j·step)` of its area, with the diff `diff` gives for its
    /// chunk (asked once a chunk) applied.
    pub fn generate_block(
        &self,
        block: ChunkPos,
        step: u32,
        mut diff: impl FnMut(ChunkPos) -> Option<super::region::Diff>,
    ) -> ChunkData {
        let n = self.cells;
        let cells = (n * n) as usize;
        let mut bytes = vec![0u8; cells * 3];
        let mut diffs: std::collections::BTreeMap<ChunkPos, Option<super::region::Diff>> =
            std::collections::BTreeMap::new();
        for j in 0..n {
            for i in 0..n {
                let (c, ci, cj) = block_sample(block, step, n, i, j);
                let d = diffs.entry(c).or_insert_with(|| diff(c));
                let edited = d
                    .as_ref()
                    .and_then(|d| d.cells.get(&(cj * n + ci)).copied());
                let (height, material) = edited.unwrap_or_else(|| self.cell(c, ci, cj));
                let k = (j * n + i) as usize;
                bytes[2 * k..2 * k + 2].copy_from_slice(&height.to_le_bytes());
                bytes[2 * cells + k] = material;
            }
        }
        let hash = fnv1a64(&bytes);
        ChunkData {
            cells: n,
            bytes,
            hash,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::MAX_CHUNK_COORD;
    use proptest::prelude::*;

    #[test]
    fn the_sampled_chunks_are_the_chunks_of_the_sampled_cells_in_row_order() {
        for step in [2u32, 4, 8, 16, 32, 64] {
            for cells in 1..=40u32 {
                for block in [ChunkPos::new(0, 0), ChunkPos::new(-3, 5)] {
                    let mut want: Vec<ChunkPos> = (0..cells)
                        .flat_map(|j| (0..cells).map(move |i| (i, j)))
                        .map(|(i, j)| block_sample(block, step, cells, i, j).0)
                        .collect();
                    want.sort();
                    want.dedup();
                    assert_eq!(sampled_chunks(block, step, cells), want, "{step} {cells}");
                }
            }
        }
    }

    /// Chunk coordinates the grid can want: clamped focus chunks ± the largest radius and one.
    fn chunk_coord() -> impl Strategy<Value = i64> {
        let edge = MAX_CHUNK_COORD + 65;
        prop_oneof![
            -edge..=edge,
            (0..=130i64).prop_map(move |d| edge - d),
            (0..=130i64).prop_map(move |d| d - edge),
            -70..=70i64,
        ]
    }

    /// Chunk sizes a scene may give: any finite positive `f64`, the extremes more often.
    fn chunk_size() -> impl Strategy<Value = f64> {
        prop_oneof![
            (1u64..0x7ff0_0000_0000_0000).prop_map(f64::from_bits),
            Just(f64::MAX),
            Just(f64::MIN_POSITIVE),
            Just(5e-324),
            Just(1e-300),
            Just(1e21),
            Just(1e300),
            0.001..1e6f64,
        ]
    }

    #[test]
    fn a_chunk_size_of_1e21_generates_chunk_1_instead_of_panicking() {
        // Chunk 1's first cell centre is at 32.5 cells of 3.125e19 m = 1.016e21 m: 1.6e19 units
        // of the 64 m octave's lattice, >= 2^63, which the noise library converted to isize
        // and panicked on (exit 101 from `run`).
        let g = Generator::new(1, 32, 1e21);
        let a = g.generate(ChunkPos::new(1, 0));
        let b = g.generate(ChunkPos::new(1, 0));
        assert_eq!(a, b, "deterministic");
        assert_eq!(a.bytes.len(), 32 * 32 * 3);
    }

    #[test]
    fn the_largest_chunks_at_the_clamp_edge_generate() {
        for size in [f64::MAX, 1e300, 1e21, 2048.0, 1e-300, 5e-324] {
            let g = Generator::new(7, 2, size);
            for c in [
                ChunkPos::new(MAX_CHUNK_COORD + 65, -MAX_CHUNK_COORD - 65),
                ChunkPos::new(-MAX_CHUNK_COORD, MAX_CHUNK_COORD),
                ChunkPos::new(-1, 0),
            ] {
                let data = g.generate(c);
                assert_eq!(data.bytes.len(), 12, "{size} {c}");
            }
        }
    }

    #[test]
    fn lattice_coordinates_the_noise_takes_are_passed_unchanged() {
        // Below 2^63 nothing changes: the chunks generated before keep their bytes.
        let below = f64::from_bits(NOISE_LIMIT.to_bits() - 1);
        for p in [
            0.0,
            -0.0,
            0.5,
            -1.0,
            1e15,
            -1e18,
            below,
            -below,
            2f64.powi(53),
        ] {
            assert_eq!(lattice(p).to_bits(), p.to_bits(), "{p}");
        }
    }

    #[test]
    fn far_lattice_coordinates_come_back_to_the_same_point_of_the_periodic_noise() {
        // On the positive side the library still computes at 2^53..2^63 (integers there, the
        // fraction 0): the wrapped coordinate gives bit for bit the value it gives.
        let perlin = Perlin::new(12345);
        let mut p = 2f64.powi(53);
        while p < NOISE_LIMIT {
            for q in [0.25, 3.5, -7.75, p] {
                let wrapped = p % 256.0 + 256.0;
                assert!((256.0..512.0).contains(&wrapped));
                assert_eq!(
                    perlin.get([p, q]).to_bits(),
                    perlin.get([wrapped, q]).to_bits(),
                    "{p} {q}"
                );
            }
            p = p * 1.75 + 3.0 * 2f64.powi(11);
        }
        for (p, expected) in [
            (NOISE_LIMIT, 256.0),
            (-NOISE_LIMIT, -256.0),
            (NOISE_LIMIT + 2048.0 * 3.0, 256.0),
            (1e300, 1e300 % 256.0 + 256.0),
            (f64::INFINITY, f64::MAX % 256.0 + 256.0),
            (f64::NEG_INFINITY, -(f64::MAX % 256.0) - 256.0),
            (f64::NAN, 0.0),
        ] {
            assert_eq!(lattice(p), expected, "{p}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_cell_of_every_chunk_the_grid_can_want_has_a_height(
            seed in any::<u64>(),
            cells in 1u32..=256,
            size in chunk_size(),
            x in chunk_coord(),
            z in chunk_coord(),
            i in any::<u32>(),
            j in any::<u32>(),
        ) {
            let g = Generator::new(seed, cells, size);
            let (i, j) = (i % cells, j % cells);
            let a = g.cell(ChunkPos::new(x, z), i, j);
            prop_assert_eq!(a, g.cell(ChunkPos::new(x, z), i, j));
        }

        #[test]
        fn the_height_field_is_total_over_every_f64(x in any::<f64>(), z in any::<f64>()) {
            let g = Generator::new(3, 32, 32.0);
            let h = g.height_at(x, z);
            prop_assert!((0.0..=1.0).contains(&h), "{}", h);
        }
    }
}
