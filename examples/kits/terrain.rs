//! `world.terrain`, an example kit that builds on `world.chunk.loaded` the way a real one would:
//! it generates a deterministic height field for each loaded chunk from a seed and the chunk's
//! coordinates, and drops it on `world.chunk.unloaded`. Regenerating a chunk gives the same bytes.

use std::collections::BTreeMap;

use serde::Deserialize;
use world_streaming::grid::ChunkPos;
use world_streaming::host::{
    Ctx, Event, Kit, KitManifest, KitSpec, Problem, CHUNK_LOADED, CHUNK_UNLOADED,
};
use world_streaming::json::from_value;

/// Heights per side of a chunk.
pub const SAMPLES: usize = 16;

/// `{ "seed": 7 }`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerrainConfig {
    /// The world seed.
    #[serde(default)]
    pub seed: u64,
}

/// The kit: the height fields of the live chunks.
pub struct TerrainKit {
    config: TerrainConfig,
    chunks: BTreeMap<ChunkPos, Vec<u8>>,
    generated: u64,
}

/// The kit's manifest: it needs the streaming kit's events.
pub fn manifest() -> KitManifest {
    let mut m = KitManifest::simple("world.terrain", "1.0.0");
    m.requires
        .insert("world.streaming".into(), "^1".parse().unwrap());
    m
}

impl TerrainKit {
    /// The catalog factory.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let config = match spec.config {
            Some(v) => from_value(v, &spec.config_path).map_err(|p| vec![p])?,
            None => TerrainConfig::default(),
        };
        Ok(Box::new(TerrainKit {
            config,
            chunks: BTreeMap::new(),
            generated: 0,
        }))
    }
}

/// Generates the height field of `chunk`: value noise from a seeded integer hash, so the same
/// seed and chunk always give the same bytes, on every machine.
pub fn generate(seed: u64, chunk: ChunkPos) -> Vec<u8> {
    let mut out = Vec::with_capacity(SAMPLES * SAMPLES * 2);
    for j in 0..SAMPLES as i64 {
        for i in 0..SAMPLES as i64 {
            let gx = chunk.x * SAMPLES as i64 + i;
            let gz = chunk.z * SAMPLES as i64 + j;
            // Two octaves of lattice noise, integer-only.
            let coarse = lattice(seed, gx.div_euclid(8), gz.div_euclid(8)) % 2048;
            let fine = lattice(seed ^ 0x9e37, gx, gz) % 256;
            out.extend_from_slice(&((coarse + fine) as u16).to_le_bytes());
        }
    }
    out
}

fn lattice(seed: u64, x: i64, z: i64) -> u64 {
    // SplitMix64 over the mixed coordinates.
    let mut h = seed
        ^ (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (z as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

impl Kit for TerrainKit {
    fn id(&self) -> &str {
        "world.terrain"
    }

    fn on_event(&mut self, event: &Event, ctx: &mut Ctx<'_>) {
        let chunk = || {
            ChunkPos::new(
                event.data["x"].as_i64().unwrap_or(0),
                event.data["z"].as_i64().unwrap_or(0),
            )
        };
        if event.event == CHUNK_LOADED {
            self.chunks
                .insert(chunk(), generate(self.config.seed, chunk()));
            self.generated += 1;
        } else if event.event == CHUNK_UNLOADED {
            self.chunks.remove(&chunk());
        } else {
            return;
        }
        ctx.variables
            .set("world.terrain.chunks", self.chunks.len() as u64);
        ctx.variables.set("world.terrain.generated", self.generated);
    }
}
