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

/// The generator's version, stamped on anything derived from its output (SPEC §13).
pub const GENERATOR_VERSION: u32 = 1;

/// Octaves: (wavelength in metres, weight). Weights sum to 1; wavelengths halve.
const OCTAVES: [(f64, f64); 4] = [
    (512.0, 0.5),
    (256.0, 0.25),
    (128.0, 0.15625),
    (64.0, 0.09375),
];

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

/// FNV-1a, 64 bits.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
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

    /// The normalised height 0..=1 at world position `(x, z)`.
    fn height_at(&self, x: f64, z: f64) -> f64 {
        let mut sum = 0.0;
        for (perlin, frequency, weight) in &self.octaves {
            sum += perlin.get([x * frequency, z * frequency]) * weight;
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
