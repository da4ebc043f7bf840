//! The streaming kit's vocabulary: the events it emits, the hooks it asks, and reading an event
//! back as typed data ([`ChunkEvent`] for the chunk and block events, [`StreamingEvent`] for
//! every event). The host knows none of these names; every kit owns its own.

use serde_json::{json, Value};

use crate::grid::ChunkPos;
use crate::host::{chunk_data, section_data, Event, EventData};

/// Emitted when a chunk became live: `{x, z}` (`{x, y, z}` in a vertical world, docs/vertical.md).
pub const CHUNK_LOADED: &str = "world.chunk.loaded";
/// Emitted when a chunk was released: `{x, z}` (`{x, y, z}` in a vertical world).
pub const CHUNK_UNLOADED: &str = "world.chunk.unloaded";
/// Asked before a chunk loads: `{x, z}`.
pub const HOOK_CHUNK_LOAD: &str = "world.chunk.load";
/// Asked before a loaded chunk is released: `{x, z}`.
pub const HOOK_CHUNK_UNLOAD: &str = "world.chunk.unload";
/// Event: a LOD block loaded `{level, x, z}` (level 1 = the first `lod` entry).
pub const LOD_LOADED: &str = "world.lod.loaded";
/// Event: a LOD block released `{level, x, z}`.
pub const LOD_UNLOADED: &str = "world.lod.unloaded";
/// Event: a ticket's square is ready `{id}` (once per ticket, after the tick's other events).
pub const TICKET_READY: &str = "world.ticket.ready";
/// Event: a ticket request was refused by the ticket cap `{id, reason}`, whoever asked (where
/// the request was made; see docs/many-foci.md#the-ticket-cap).
pub const TICKET_REFUSED: &str = "world.ticket.refused";
/// Event: the wanted chunks outnumber the cap `{wanted, cap}` (when that state starts).
pub const CAPACITY: &str = "world.streaming.capacity";
/// Event: a loaded chunk became complete `{x, z}`: it and every chunk within `neighbours` rings
/// of it that overlaps the ground are loaded and built (docs/reference/streaming.md#complete-chunks;
/// `neighbours > 0` only).
pub const CHUNK_COMPLETE: &str = "world.chunk.complete";
/// Event: a chunk complete at the end of the last tick is loaded but no longer complete `{x, z}`
/// (docs/reference/streaming.md#complete-chunks; `neighbours > 0` only).
pub const CHUNK_INCOMPLETE: &str = "world.chunk.incomplete";

/// Event (vertical worlds only, docs/vertical.md): a column became loaded `{x, z}`, that is, one
/// of its sections did while none was; after the load step's section events, in row order.
pub const COLUMN_LOADED: &str = "world.column.loaded";
/// Event (vertical worlds only): a column's last loaded section was released `{x, z}`; after the
/// release step's section events in row order (an eviction's right after its section's event).
pub const COLUMN_UNLOADED: &str = "world.column.unloaded";

/// Every event name of the kit (the hooks are not events).
pub const NAMES: &[&str] = &[
    CHUNK_LOADED,
    CHUNK_UNLOADED,
    LOD_LOADED,
    LOD_UNLOADED,
    TICKET_READY,
    TICKET_REFUSED,
    CAPACITY,
    CHUNK_COMPLETE,
    CHUNK_INCOMPLETE,
    COLUMN_LOADED,
    COLUMN_UNLOADED,
];

/// One event of the streaming kit, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamingEvent {
    /// `world.chunk.loaded`.
    ChunkLoaded(ChunkPos),
    /// `world.chunk.unloaded`.
    ChunkUnloaded(ChunkPos),
    /// `world.lod.loaded`: a block of `level` (1 = the first `lod` entry).
    LodLoaded {
        /// The level.
        level: u32,
        /// The block.
        block: ChunkPos,
    },
    /// `world.lod.unloaded`.
    LodUnloaded {
        /// The level.
        level: u32,
        /// The block.
        block: ChunkPos,
    },
    /// `world.ticket.ready`: the ticket's id.
    TicketReady(String),
    /// `world.ticket.refused`: the ticket's id and why.
    TicketRefused {
        /// The id asked for.
        id: String,
        /// Why.
        reason: String,
    },
    /// `world.streaming.capacity`: the wanted chunks and the cap they outnumber.
    Capacity {
        /// Chunks wanted.
        wanted: u64,
        /// The cap.
        cap: u64,
    },
    /// `world.chunk.complete`: the chunk became complete.
    ChunkComplete(ChunkPos),
    /// `world.chunk.incomplete`: the chunk, complete at the end of the last tick, is no longer.
    ChunkIncomplete(ChunkPos),
    /// `world.column.loaded`: the column (`y` 0) of a vertical world.
    ColumnLoaded(ChunkPos),
    /// `world.column.unloaded`: the column (`y` 0) of a vertical world.
    ColumnUnloaded(ChunkPos),
}

impl StreamingEvent {
    /// The event as typed data when it is one of the kit's; `None` for any other event.
    pub fn from_event(event: &Event) -> Option<StreamingEvent> {
        if let Some((chunk, loaded)) = event.chunk() {
            return Some(if loaded {
                StreamingEvent::ChunkLoaded(chunk)
            } else {
                StreamingEvent::ChunkUnloaded(chunk)
            });
        }
        if let Some((column, loaded)) = event.column() {
            return Some(if loaded {
                StreamingEvent::ColumnLoaded(column)
            } else {
                StreamingEvent::ColumnUnloaded(column)
            });
        }
        if let Some((level, block, loaded)) = event.block() {
            return Some(if loaded {
                StreamingEvent::LodLoaded { level, block }
            } else {
                StreamingEvent::LodUnloaded { level, block }
            });
        }
        let data = &event.data;
        let text = |k: &str| Some(data.get(k)?.as_str()?.to_owned());
        Some(match &*event.event {
            TICKET_READY => StreamingEvent::TicketReady(text("id")?),
            TICKET_REFUSED => StreamingEvent::TicketRefused {
                id: text("id")?,
                reason: text("reason")?,
            },
            CAPACITY => StreamingEvent::Capacity {
                wanted: data.get("wanted")?.as_u64()?,
                cap: data.get("cap")?.as_u64()?,
            },
            CHUNK_COMPLETE => StreamingEvent::ChunkComplete(data.xz()?),
            CHUNK_INCOMPLETE => StreamingEvent::ChunkIncomplete(data.xz()?),
            _ => return None,
        })
    }

    /// The event's name.
    pub fn name(&self) -> &'static str {
        match self {
            StreamingEvent::ChunkLoaded(_) => CHUNK_LOADED,
            StreamingEvent::ChunkUnloaded(_) => CHUNK_UNLOADED,
            StreamingEvent::LodLoaded { .. } => LOD_LOADED,
            StreamingEvent::LodUnloaded { .. } => LOD_UNLOADED,
            StreamingEvent::TicketReady(_) => TICKET_READY,
            StreamingEvent::TicketRefused { .. } => TICKET_REFUSED,
            StreamingEvent::Capacity { .. } => CAPACITY,
            StreamingEvent::ChunkComplete(_) => CHUNK_COMPLETE,
            StreamingEvent::ChunkIncomplete(_) => CHUNK_INCOMPLETE,
            StreamingEvent::ColumnLoaded(_) => COLUMN_LOADED,
            StreamingEvent::ColumnUnloaded(_) => COLUMN_UNLOADED,
        }
    }

    /// The payload the kit emits it with in a flat world (a chunk's `y` written only when not
    /// 0; a vertical world writes every section's, [`chunk_event_data`]).
    pub fn data(&self) -> EventData {
        match self {
            StreamingEvent::ChunkLoaded(c)
            | StreamingEvent::ChunkUnloaded(c)
            | StreamingEvent::ChunkComplete(c)
            | StreamingEvent::ChunkIncomplete(c) => chunk_event_data(*c, c.y != 0),
            StreamingEvent::ColumnLoaded(c) | StreamingEvent::ColumnUnloaded(c) => {
                chunk_data(c.column())
            }
            StreamingEvent::LodLoaded { level, block }
            | StreamingEvent::LodUnloaded { level, block } => block_data(*level, *block),
            StreamingEvent::TicketReady(id) => json!({ "id": id }).into(),
            StreamingEvent::TicketRefused { id, reason } => {
                json!({ "id": id, "reason": reason }).into()
            }
            StreamingEvent::Capacity { wanted, cap } => {
                json!({ "wanted": wanted, "cap": cap }).into()
            }
        }
    }
}

/// The payload of a chunk's events and hooks: `{x, y, z}` ([`section_data`]) in a vertical
/// world (`vertical` true: `y` always written), else `{x, z}` ([`chunk_data`]).
pub fn chunk_event_data(chunk: ChunkPos, vertical: bool) -> EventData {
    if vertical {
        section_data(chunk)
    } else {
        chunk_data(chunk)
    }
}

/// `{"level": level, "x": x, "z": z}`: the payload of the LOD block events (built without
/// allocating).
pub fn block_data(level: u32, block: ChunkPos) -> EventData {
    EventData::LevelXz {
        level: Value::from(level),
        x: Value::from(block.x),
        z: Value::from(block.z),
    }
}

/// Reads the streaming kit's chunk events: `event.chunk()` (with this trait in scope, as the
/// prelude has it).
pub trait ChunkEvent {
    /// The chunk of a `world.chunk.loaded` (`Some((chunk, true))`) or `world.chunk.unloaded`
    /// (`Some((chunk, false))`) event, with its `y` in a vertical world; `None` for any other
    /// event.
    fn chunk(&self) -> Option<(ChunkPos, bool)>;

    /// The column (`y` 0) of a `world.column.loaded` (`Some((column, true))`) or
    /// `world.column.unloaded` (`Some((column, false))`) event (vertical worlds,
    /// docs/vertical.md); `None` for any other event.
    fn column(&self) -> Option<(ChunkPos, bool)>;

    /// The level and block of a `world.lod.loaded` (`Some((level, block, true))`) or
    /// `world.lod.unloaded` (`Some((level, block, false))`) event
    /// (docs/reference/lod.md#lod-events; level 1 is the first `lod` entry); `None` for any other
    /// event.
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
        Some((self.data.xz()?, loaded))
    }

    #[inline]
    fn column(&self) -> Option<(ChunkPos, bool)> {
        let loaded = match &*self.event {
            COLUMN_LOADED => true,
            COLUMN_UNLOADED => false,
            _ => return None,
        };
        Some((self.data.xz()?.column(), loaded))
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

    #[test]
    fn column_events_read_back_as_columns_and_sections_keep_their_y() {
        let xz = || crate::host::chunk_data(ChunkPos::new(3, -2));
        assert_eq!(
            event(COLUMN_LOADED, xz()).column(),
            Some((ChunkPos::new(3, -2), true))
        );
        assert_eq!(
            event(COLUMN_UNLOADED, xz()).column(),
            Some((ChunkPos::new(3, -2), false))
        );
        assert_eq!(event(CHUNK_LOADED, xz()).column(), None);
        assert_eq!(event(COLUMN_LOADED, xz()).chunk(), None);
        assert_eq!(
            StreamingEvent::from_event(&event(COLUMN_UNLOADED, xz())),
            Some(StreamingEvent::ColumnUnloaded(ChunkPos::new(3, -2)))
        );
        assert_eq!(
            StreamingEvent::ColumnLoaded(ChunkPos::new(0, 0)).name(),
            COLUMN_LOADED
        );
        let s = ChunkPos::section(3, -4, -2);
        let e = event(CHUNK_LOADED, chunk_event_data(s, true));
        assert_eq!(e.chunk(), Some((s, true)));
        assert_eq!(
            StreamingEvent::from_event(&e).map(|e| e.data()),
            Some(crate::host::section_data(s))
        );
        assert!(NAMES.contains(&COLUMN_LOADED) && NAMES.contains(&COLUMN_UNLOADED));
    }
}
