//! The streaming kit's vocabulary: the events it emits, the hooks it asks, and reading a chunk
//! event back as typed data. The host knows none of these names; every kit owns its own.

use serde_json::Value;

use super::{LOD_LOADED, LOD_UNLOADED};
use crate::grid::ChunkPos;
use crate::host::{Event, EventData};

/// Emitted when a chunk became live: `{x, z}`.
pub const CHUNK_LOADED: &str = "world.chunk.loaded";
/// Emitted when a chunk was released: `{x, z}`.
pub const CHUNK_UNLOADED: &str = "world.chunk.unloaded";
/// Asked before a chunk loads: `{x, z}`.
pub const HOOK_CHUNK_LOAD: &str = "world.chunk.load";
/// Asked before a loaded chunk is released: `{x, z}`.
pub const HOOK_CHUNK_UNLOAD: &str = "world.chunk.unload";

/// Reads the streaming kit's chunk events: `event.chunk()` (with this trait in scope, as the
/// prelude has it).
pub trait ChunkEvent {
    /// The chunk of a `world.chunk.loaded` (`Some((chunk, true))`) or `world.chunk.unloaded`
    /// (`Some((chunk, false))`) event; `None` for any other event.
    fn chunk(&self) -> Option<(ChunkPos, bool)>;

    /// The level and block of a `world.lod.loaded` (`Some((level, block, true))`) or
    /// `world.lod.unloaded` (`Some((level, block, false))`) event (SPEC §17; level 1 is the
    /// first `lod` entry); `None` for any other event.
    fn block(&self) -> Option<(u32, ChunkPos, bool)>;
}

impl ChunkEvent for Event {
    #[inline]
    fn chunk(&self) -> Option<(ChunkPos, bool)> {
        let loaded = match &*self.event {
            CHUNK_LOADED => true,
            CHUNK_UNLOADED => false,
            _ => return None,
        };
        let coord = |k: &str| self.data.get(k).and_then(Value::as_i64);
        Some((ChunkPos::new(coord("x")?, coord("z")?), loaded))
    }

    #[inline]
    fn block(&self) -> Option<(u32, ChunkPos, bool)> {
        let loaded = match &*self.event {
            LOD_LOADED => true,
            LOD_UNLOADED => false,
            _ => return None,
        };
        let (level, x, z) = match &self.data {
            // The streaming kit's own payload: its values, without looking up their names.
            EventData::LevelXz { level, x, z } => (level, x, z),
            data => (data.get("level")?, data.get("x")?, data.get("z")?),
        };
        let level = u32::try_from(level.as_u64()?).ok()?;
        Some((level, ChunkPos::new(x.as_i64()?, z.as_i64()?), loaded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::EventData;

    fn event(name: &'static str, data: EventData) -> Event {
        Event {
            tick: 1,
            event: name.into(),
            data,
        }
    }

    #[test]
    fn chunk_events_read_back_as_chunks_and_others_as_none() {
        let xz = || EventData::Xz {
            x: Value::from(3),
            z: Value::from(-2),
        };
        assert_eq!(
            event(CHUNK_LOADED, xz()).chunk(),
            Some((ChunkPos::new(3, -2), true))
        );
        assert_eq!(
            event(CHUNK_UNLOADED, xz()).chunk(),
            Some((ChunkPos::new(3, -2), false))
        );
        assert_eq!(event("player.moved", xz()).chunk(), None);
        assert_eq!(event(CHUNK_LOADED, xz()).block(), None);
    }

    #[test]
    fn block_events_read_back_as_blocks_whatever_their_payload_and_others_as_none() {
        let fast = || EventData::LevelXz {
            level: Value::from(2),
            x: Value::from(3),
            z: Value::from(-2),
        };
        let json = || EventData::Json(serde_json::json!({"level": 2, "x": 3, "z": -2}));
        for data in [fast, json] {
            let b = Some((2, ChunkPos::new(3, -2), true));
            assert_eq!(event(LOD_LOADED, data()).block(), b);
            let b = Some((2, ChunkPos::new(3, -2), false));
            assert_eq!(event(LOD_UNLOADED, data()).block(), b);
            assert_eq!(event(CHUNK_LOADED, data()).block(), None);
            assert_eq!(event(LOD_LOADED, data()).chunk(), None);
        }
        for bad in [
            serde_json::json!({"level": -1, "x": 3, "z": -2}),
            serde_json::json!({"level": 1, "x": 3.5, "z": -2}),
            serde_json::json!({"level": 1, "x": 3}),
        ] {
            assert_eq!(event(LOD_LOADED, EventData::Json(bad)).block(), None);
        }
    }
}
