//! The district kit's vocabulary: the names of the events it emits, their payloads as the kit
//! writes them, and reading an event back as typed data ([`DistrictEvent`]); the JSON is the
//! outward, logged record (docs/reference/district.md).

use serde_json::{json, Value};

use crate::grid::ChunkPos;
use crate::host::{Event, EventData};

/// Event: a chunk's stored entities were spawned `{x, z, count}` (count > 0).
pub const MATERIALISED: &str = "world.district.materialised";
/// Event: a chunk's streamed entities were stored `{x, z, count}` (count > 0).
pub const STORED: &str = "world.district.stored";
/// Event: a district line could not be brought back `{x, z, message}`, or a region could not be
/// written back `{x, z, region, chunks, message}` (`x`, `z`: the region's first chunk).
pub const ERROR: &str = "world.district.error";

/// Every event name of the kit.
pub const NAMES: &[&str] = &[MATERIALISED, STORED, ERROR];

/// One event of the district kit, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DistrictEvent {
    /// `world.district.materialised`: `count` entities of `chunk` were spawned.
    Materialised {
        /// The chunk.
        chunk: ChunkPos,
        /// How many.
        count: u64,
    },
    /// `world.district.stored`: `count` streamed entities of `chunk` were stored.
    Stored {
        /// The chunk.
        chunk: ChunkPos,
        /// How many.
        count: u64,
    },
    /// `world.district.error`: a line of `chunk` could not be brought back.
    ReadError {
        /// The chunk.
        chunk: ChunkPos,
        /// What went wrong.
        message: String,
    },
    /// `world.district.error`: a region could not be written back.
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

impl DistrictEvent {
    /// The event as typed data when it is one of the kit's; `None` for any other event.
    pub fn from_event(event: &Event) -> Option<DistrictEvent> {
        let data = &event.data;
        let at = || data.xz();
        let text = |k: &str| Some(data.get(k)?.as_str()?.to_owned());
        let count = || data.get("count")?.as_u64();
        Some(match &*event.event {
            MATERIALISED => DistrictEvent::Materialised {
                chunk: at()?,
                count: count()?,
            },
            STORED => DistrictEvent::Stored {
                chunk: at()?,
                count: count()?,
            },
            ERROR => match data.get("region") {
                None => DistrictEvent::ReadError {
                    chunk: at()?,
                    message: text("message")?,
                },
                Some(region) => DistrictEvent::WriteError {
                    origin: at()?,
                    region: region.as_str()?.to_owned(),
                    chunks: data.get("chunks")?.as_u64()?,
                    message: text("message")?,
                },
            },
            _ => return None,
        })
    }

    /// Whether the event spawned or stored entities (`world.district.materialised` or
    /// `world.district.stored`).
    pub fn moves_entities(event: &Event) -> bool {
        event.event == MATERIALISED || event.event == STORED
    }

    /// The event's name.
    pub fn name(&self) -> &'static str {
        match self {
            DistrictEvent::Materialised { .. } => MATERIALISED,
            DistrictEvent::Stored { .. } => STORED,
            DistrictEvent::ReadError { .. } | DistrictEvent::WriteError { .. } => ERROR,
        }
    }

    /// The payload the kit emits it with.
    pub fn data(&self) -> EventData {
        self.value().into()
    }

    /// The payload as JSON with `y` after `x` when `vertical` (a home is a section then,
    /// docs/reference/district.md#homes-in-a-vertical-world); a region's origin never has one.
    pub(super) fn value_in(&self, vertical: bool) -> Value {
        let mut v = self.value();
        match (self, v.as_object_mut()) {
            (
                DistrictEvent::Materialised { chunk, .. }
                | DistrictEvent::Stored { chunk, .. }
                | DistrictEvent::ReadError { chunk, .. },
                Some(map),
            ) if vertical => {
                map.shift_insert(1, "y".into(), Value::from(chunk.y));
            }
            _ => {}
        }
        v
    }

    /// The payload as JSON.
    pub(super) fn value(&self) -> Value {
        match self {
            DistrictEvent::Materialised { chunk, count }
            | DistrictEvent::Stored { chunk, count } => {
                json!({ "x": chunk.x, "z": chunk.z, "count": count })
            }
            DistrictEvent::ReadError { chunk, message } => {
                json!({ "x": chunk.x, "z": chunk.z, "message": message })
            }
            DistrictEvent::WriteError {
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
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_reads_back_as_itself() {
        let c = ChunkPos::new(4, -9);
        for e in [
            DistrictEvent::Materialised { chunk: c, count: 3 },
            DistrictEvent::Stored { chunk: c, count: 1 },
            DistrictEvent::ReadError {
                chunk: c,
                message: "line 4: not JSON".into(),
            },
            DistrictEvent::WriteError {
                origin: c,
                region: "d.0.0.wsd".into(),
                chunks: 7,
                message: "full".into(),
            },
        ] {
            let event = Event {
                tick: 2,
                event: e.name().into(),
                data: e.data(),
            };
            assert_eq!(DistrictEvent::from_event(&event), Some(e));
        }
        let other = Event {
            tick: 2,
            event: "world.other".into(),
            data: json!({"x": 1, "z": 2, "count": 3}).into(),
        };
        assert_eq!(DistrictEvent::from_event(&other), None);
    }
}
