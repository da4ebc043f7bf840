//! The terrain kit's vocabulary: the names of the events it emits, their payloads as the kit
//! writes them, and reading an event back as typed data ([`TerrainEvent`]). Listeners (other
//! kits, the C ABI, the Bevy plugin) read these events through [`TerrainEvent`], never by
//! looking into the JSON; the JSON is the outward, logged record (docs/reference/terrain.md).

use serde_json::{json, Value};

use super::EditRefused;
use crate::grid::ChunkPos;
use crate::host::{block_hash_values, chunk_data, chunk_hash_data, Event, EventData};

/// Event: a chunk's terrain was committed `{x, z, hash}` (hash: 16 hex digits of FNV-1a 64).
pub const TERRAIN_BUILT: &str = "world.terrain.built";
/// Event: a LOD block's terrain was committed `{level, x, z, hash}`
/// (docs/reference/terrain.md#lod-blocks-built-by-terrain).
pub const TERRAIN_LOD_BUILT: &str = "world.terrain.lod.built";
/// Event: an edit was refused `{x, z, reason}` (docs/reference/terrain.md#edit-refusals).
pub const EDIT_REFUSED: &str = "world.terrain.edit.refused";
/// Event: a built chunk must be rebuilt `{x, z}` (an edit in it or on its edge), once per tick;
/// or a built LOD block `{x, z, level}`.
pub const TERRAIN_CHANGED: &str = "world.terrain.changed";
/// Event: stored edits could not be read `{x, z, message}` (the chunk loads as generated), or a
/// region could not be written back `{x, z, region, chunks, message}` (`x`, `z`: the region's
/// first chunk; `region`: its file; `chunks`: how many of its chunks are not on disk; the edits
/// are kept in memory and written by the next write back that succeeds).
pub const TERRAIN_ERROR: &str = "world.terrain.error";

/// Every event name of the kit.
pub const NAMES: &[&str] = &[
    TERRAIN_BUILT,
    TERRAIN_LOD_BUILT,
    EDIT_REFUSED,
    TERRAIN_CHANGED,
    TERRAIN_ERROR,
];

/// What the column kits (terrain, nav, LOD's builder) build on
/// (docs/reference/terrain.md#columns): in a flat world a chunk's `world.chunk.loaded` /
/// `world.chunk.unloaded`, with `vertical` on a column's `world.column.loaded` /
/// `world.column.unloaded`. A section's chunk event (its payload carries `y`, which only a
/// vertical world's does) is not a column's: `None`, as for any other event.
pub fn column_change(event: &Event) -> Option<(ChunkPos, bool)> {
    use crate::kits::streaming::ChunkEvent;
    if let Some(change) = event.column() {
        return Some(change);
    }
    let change = event.chunk()?;
    event.data.get("y").is_none().then_some(change)
}

/// One event of the terrain kit, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerrainEvent {
    /// `world.terrain.built`: the chunk and the FNV-1a 64 of its bytes
    /// (docs/reference/terrain.md#chunk-content).
    Built {
        /// The chunk.
        chunk: ChunkPos,
        /// Its hash.
        hash: u64,
    },
    /// `world.terrain.lod.built`: a LOD block (level ≥ 1) and its hash.
    LodBuilt {
        /// The level (1 = the first `lod` entry).
        level: u32,
        /// The block.
        block: ChunkPos,
        /// Its hash.
        hash: u64,
    },
    /// `world.terrain.changed`: a built chunk (`level` 0) or LOD block to rebuild.
    Changed {
        /// 0 for a chunk, else the block's level.
        level: u32,
        /// The chunk or block.
        at: ChunkPos,
    },
    /// `world.terrain.edit.refused`: the chunk of the edit and why.
    EditRefused {
        /// The chunk.
        chunk: ChunkPos,
        /// Why.
        reason: EditRefused,
    },
    /// `world.terrain.error`: stored edits of `chunk` could not be read.
    ReadError {
        /// The chunk.
        chunk: ChunkPos,
        /// What went wrong.
        message: String,
    },
    /// `world.terrain.error`: a region could not be written back.
    WriteError {
        /// The region's first chunk.
        origin: ChunkPos,
        /// Its file.
        region: String,
        /// How many of its chunks are not on disk.
        chunks: u64,
        /// What went wrong.
        message: String,
    },
}

impl TerrainEvent {
    /// The event as typed data when it is one of the kit's (with the payload the kit writes);
    /// `None` for any other event.
    pub fn from_event(event: &Event) -> Option<TerrainEvent> {
        let data = &event.data;
        let at = || data.xz();
        let text = |k: &str| data.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(match &*event.event {
            TERRAIN_BUILT => TerrainEvent::Built {
                chunk: at()?,
                hash: data.hash()?,
            },
            TERRAIN_LOD_BUILT => TerrainEvent::LodBuilt {
                level: level(data)?,
                block: at()?,
                hash: data.hash()?,
            },
            TERRAIN_CHANGED => TerrainEvent::Changed {
                level: match data.get("level") {
                    None => 0,
                    Some(_) => level(data)?,
                },
                at: at()?,
            },
            EDIT_REFUSED => TerrainEvent::EditRefused {
                chunk: at()?,
                reason: match data.get("reason")?.as_str()? {
                    "not loaded" => EditRefused::NotLoaded,
                    "not built" => EditRefused::NotBuilt,
                    _ => return None,
                },
            },
            TERRAIN_ERROR => match data.get("region") {
                None => TerrainEvent::ReadError {
                    chunk: at()?,
                    message: text("message")?,
                },
                Some(region) => TerrainEvent::WriteError {
                    origin: at()?,
                    region: region.as_str()?.to_owned(),
                    chunks: data.get("chunks")?.as_u64()?,
                    message: text("message")?,
                },
            },
            _ => return None,
        })
    }

    /// The chunk and hash of a `world.terrain.built` event; `None` for any other event.
    pub fn built(event: &Event) -> Option<(ChunkPos, u64)> {
        if event.event != TERRAIN_BUILT {
            return None;
        }
        match Self::from_event(event)? {
            TerrainEvent::Built { chunk, hash } => Some((chunk, hash)),
            _ => None,
        }
    }

    /// The level (0 for a chunk) and chunk or block of a `world.terrain.changed` event; `None`
    /// for any other event.
    pub fn changed(event: &Event) -> Option<(u32, ChunkPos)> {
        if event.event != TERRAIN_CHANGED {
            return None;
        }
        match Self::from_event(event)? {
            TerrainEvent::Changed { level, at } => Some((level, at)),
            _ => None,
        }
    }

    /// The event's name.
    pub fn name(&self) -> &'static str {
        match self {
            TerrainEvent::Built { .. } => TERRAIN_BUILT,
            TerrainEvent::LodBuilt { .. } => TERRAIN_LOD_BUILT,
            TerrainEvent::Changed { .. } => TERRAIN_CHANGED,
            TerrainEvent::EditRefused { .. } => EDIT_REFUSED,
            TerrainEvent::ReadError { .. } | TerrainEvent::WriteError { .. } => TERRAIN_ERROR,
        }
    }

    /// The payload the kit emits it with.
    pub fn data(&self) -> EventData {
        match self {
            TerrainEvent::Built { chunk, hash } => chunk_hash_data(*chunk, *hash),
            TerrainEvent::LodBuilt { level, block, hash } => {
                EventData::LevelXzHash(block_hash_values(*level, *block, *hash))
            }
            TerrainEvent::Changed { level: 0, at } => chunk_data(*at),
            TerrainEvent::Changed { level, at } => {
                json!({ "x": at.x, "z": at.z, "level": level }).into()
            }
            TerrainEvent::EditRefused { chunk, reason } => {
                json!({ "x": chunk.x, "z": chunk.z, "reason": reason.to_string() }).into()
            }
            TerrainEvent::ReadError { chunk, message } => {
                json!({ "x": chunk.x, "z": chunk.z, "message": message }).into()
            }
            TerrainEvent::WriteError {
                origin,
                region,
                chunks,
                message,
            } => json!({
                "x": origin.x,
                "z": origin.z,
                "region": region,
                "chunks": chunks,
                "message": message,
            })
            .into(),
        }
    }
}

/// A `level` that is a u32.
fn level(data: &EventData) -> Option<u32> {
    u32::try_from(data.get("level")?.as_u64()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(e: &TerrainEvent) -> Event {
        Event {
            tick: 4,
            event: e.name().into(),
            data: e.data(),
        }
    }

    #[test]
    fn every_event_reads_back_as_itself_and_writes_its_json() {
        let c = ChunkPos::new(-3, 7);
        let all = [
            TerrainEvent::Built {
                chunk: c,
                hash: 0x9d01_eaa5_47c9_a46c,
            },
            TerrainEvent::LodBuilt {
                level: 2,
                block: c,
                hash: u64::MAX,
            },
            TerrainEvent::Changed { level: 0, at: c },
            TerrainEvent::Changed { level: 3, at: c },
            TerrainEvent::EditRefused {
                chunk: c,
                reason: EditRefused::NotBuilt,
            },
            TerrainEvent::ReadError {
                chunk: c,
                message: "bad".into(),
            },
            TerrainEvent::WriteError {
                origin: c,
                region: "r.0.0.wst".into(),
                chunks: 2,
                message: "full".into(),
            },
        ];
        for e in &all {
            assert_eq!(TerrainEvent::from_event(&event(e)).as_ref(), Some(e));
        }
        assert_eq!(
            serde_json::to_string(&event(&all[0]).data).unwrap(),
            r#"{"x":-3,"z":7,"hash":"9d01eaa547c9a46c"}"#
        );
        assert_eq!(
            serde_json::to_string(&event(&all[3]).data).unwrap(),
            r#"{"x":-3,"z":7,"level":3}"#
        );
        assert_eq!(
            TerrainEvent::built(&event(&all[0])),
            Some((c, 0x9d01_eaa5_47c9_a46c))
        );
        assert_eq!(TerrainEvent::changed(&event(&all[3])), Some((3, c)));
        assert_eq!(TerrainEvent::built(&event(&all[2])), None);
    }

    #[test]
    fn a_built_hash_is_read_as_carried_never_from_text() {
        // A payload that only holds the text (JSON, as a program's own kit might emit) is not
        // the kit's: the hash is not parsed back.
        let json = Event {
            tick: 1,
            event: TERRAIN_BUILT.into(),
            data: json!({"x": 1, "z": 2, "hash": "00000000000000ff"}).into(),
        };
        assert_eq!(TerrainEvent::from_event(&json), None);
        let other = Event {
            tick: 1,
            event: "world.other".into(),
            data: chunk_hash_data(ChunkPos::new(1, 2), 3),
        };
        assert_eq!(TerrainEvent::from_event(&other), None);
    }
}
