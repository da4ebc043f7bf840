//! The ordered event bus: kits emit events, the engine delivers them to every kit in emission
//! order, and keeps the log of everything emitted (with its tick) for the caller.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

/// Emitted by the `player.moved` input: `{x, y?, z}`.
pub const PLAYER_MOVED: &str = "player.moved";
/// Emitted when a mod failed: `{mod, hook, message}`.
pub const MOD_ERROR: &str = "mod.error";

/// One event, stamped with the tick it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// The tick (an input's events carry the input's tick).
    pub tick: u64,
    /// The event's name, e.g. `world.chunk.loaded` (borrowed when it is a constant).
    pub event: Cow<'static, str>,
    /// Its payload.
    pub data: EventData,
}

/// An event's payload: JSON, with fast paths for the two shapes kits emit most, `{x, z}` (a
/// chunk) and `{x, z, hash}` (a chunk and its content's hash) (no map is built; indexing, comparing and
/// serializing behave exactly as for the JSON object, keys in that order).
#[derive(Debug, Clone)]
pub enum EventData {
    /// `{"x": x, "z": z}`, held as two numbers.
    Xz {
        /// `x`.
        x: Value,
        /// `z`.
        z: Value,
    },
    /// `{"x": x, "z": z, "hash": hash}`, held as three values.
    XzHash {
        /// `x`.
        x: Value,
        /// `z`.
        z: Value,
        /// `hash`.
        hash: Value,
    },
    /// `{"level": level, "x": x, "z": z}` (a block of a level of detail, SPEC §17), held as
    /// three values.
    LevelXz {
        /// `level`.
        level: Value,
        /// `x`.
        x: Value,
        /// `z`.
        z: Value,
    },
    /// Any other payload.
    Json(Value),
}

static NULL: Value = Value::Null;

impl EventData {
    /// The field `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match (self, key) {
            (EventData::Xz { x, .. }, "x") => Some(x),
            (EventData::Xz { z, .. }, "z") => Some(z),
            (EventData::Xz { .. }, _) => None,
            (EventData::XzHash { x, .. }, "x") => Some(x),
            (EventData::XzHash { z, .. }, "z") => Some(z),
            (EventData::XzHash { hash, .. }, "hash") => Some(hash),
            (EventData::XzHash { .. }, _) => None,
            (EventData::LevelXz { level, .. }, "level") => Some(level),
            (EventData::LevelXz { x, .. }, "x") => Some(x),
            (EventData::LevelXz { z, .. }, "z") => Some(z),
            (EventData::LevelXz { .. }, _) => None,
            (EventData::Json(v), _) => v.get(key),
        }
    }

    /// The payload as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            EventData::Xz { x, z } => serde_json::json!({ "x": x, "z": z }),
            EventData::XzHash { x, z, hash } => {
                serde_json::json!({ "x": x, "z": z, "hash": hash })
            }
            EventData::LevelXz { level, x, z } => {
                serde_json::json!({ "level": level, "x": x, "z": z })
            }
            EventData::Json(v) => v.clone(),
        }
    }
}

/// Equal when the JSON objects are (a fast-path payload equals the `Json` one it stands for).
impl PartialEq for EventData {
    fn eq(&self, other: &EventData) -> bool {
        match (self, other) {
            (EventData::Json(a), b) | (b, EventData::Json(a)) => b == a,
            (EventData::Xz { x, z }, EventData::Xz { x: x2, z: z2 }) => x == x2 && z == z2,
            (
                EventData::XzHash { x, z, hash },
                EventData::XzHash {
                    x: x2,
                    z: z2,
                    hash: h2,
                },
            ) => x == x2 && z == z2 && hash == h2,
            (
                EventData::LevelXz { level, x, z },
                EventData::LevelXz {
                    level: l2,
                    x: x2,
                    z: z2,
                },
            ) => level == l2 && x == x2 && z == z2,
            _ => false,
        }
    }
}

impl std::ops::Index<&str> for EventData {
    type Output = Value;

    /// Like indexing a JSON value: `Null` when the field is absent.
    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

impl PartialEq<Value> for EventData {
    fn eq(&self, other: &Value) -> bool {
        match self {
            EventData::Json(v) => v == other,
            xz => xz.to_value() == *other,
        }
    }
}

impl From<Value> for EventData {
    fn from(v: Value) -> Self {
        EventData::Json(v)
    }
}

impl Serialize for EventData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            EventData::Xz { x, z } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("x", x)?;
                m.serialize_entry("z", z)?;
                m.end()
            }
            EventData::XzHash { x, z, hash } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("x", x)?;
                m.serialize_entry("z", z)?;
                m.serialize_entry("hash", hash)?;
                m.end()
            }
            EventData::LevelXz { level, x, z } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("level", level)?;
                m.serialize_entry("x", x)?;
                m.serialize_entry("z", z)?;
                m.end()
            }
            EventData::Json(v) => v.serialize(s),
        }
    }
}

/// Events waiting to be delivered, and the log of delivered ones.
#[derive(Debug, Default)]
pub struct EventBus {
    /// Oldest first; delivered a batch at a time ([`EventBus::take_batch`]), so an event is
    /// moved once on its way to the log rather than out of a queue and into the log.
    queue: Vec<Event>,
    log: Vec<Event>,
    tick: u64,
}

impl EventBus {
    /// Emits `event` with `data`, stamped with the current tick.
    pub fn emit(&mut self, event: impl Into<Cow<'static, str>>, data: impl Into<EventData>) {
        self.queue.push(Event {
            tick: self.tick,
            event: event.into(),
            data: data.into(),
        });
    }

    /// The tick that new events are stamped with.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    pub(crate) fn set_tick(&mut self, tick: u64) {
        self.tick = tick;
    }

    /// The next event to deliver; hand it back with [`EventBus::delivered`].
    #[cfg(test)]
    pub(crate) fn next_undelivered(&mut self) -> Option<Event> {
        (!self.queue.is_empty()).then(|| self.queue.remove(0))
    }

    /// Moves a delivered event to the log.
    #[cfg(test)]
    pub(crate) fn delivered(&mut self, event: Event) {
        self.log.push(event);
    }

    /// Whether events wait to be delivered.
    pub(crate) fn has_undelivered(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Swaps the events waiting to be delivered, oldest first, into `batch` (empty): what is
    /// emitted while they are delivered waits for the next batch, after them, as a queue
    /// would have it. Hand them back with [`EventBus::delivered_batch`].
    pub(crate) fn take_batch(&mut self, batch: &mut Vec<Event>) {
        debug_assert!(batch.is_empty());
        std::mem::swap(&mut self.queue, batch);
    }

    /// Moves a delivered batch to the log, leaving `batch` empty (its room kept).
    pub(crate) fn delivered_batch(&mut self, batch: &mut Vec<Event>) {
        if self.log.is_empty() {
            std::mem::swap(&mut self.log, batch);
        } else {
            self.log.append(batch);
        }
    }

    /// Takes the log of delivered events, oldest first.
    pub fn take_log(&mut self) -> Vec<Event> {
        if self.log.is_empty() {
            return Vec::new(); // keeps the log's room
        }
        // Room for as many as the most so far (the log's capacity): one allocation, not a
        // doubling from 4 every tick, nor a doubling on every tick busier than the last.
        let room = self.log.capacity();
        std::mem::replace(&mut self.log, Vec::with_capacity(room))
    }

    /// The log of delivered events so far.
    pub fn log(&self) -> &[Event] {
        &self.log
    }
}

/// `{"x": x, "z": z}`: the payload of the chunk events (built without allocating).
pub fn chunk_data(chunk: crate::grid::ChunkPos) -> EventData {
    EventData::Xz {
        x: Value::from(chunk.x),
        z: Value::from(chunk.z),
    }
}

/// `{"x": x, "z": z, "hash": "…"}`: the payload of `world.terrain.built`, the hash as 16
/// lowercase hex digits (as `format!("{hash:016x}")` writes it, without the formatter).
pub fn chunk_hash_data(chunk: crate::grid::ChunkPos, hash: u64) -> EventData {
    let mut hex = [0u8; 16];
    for (i, digit) in hex.iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[(hash >> (60 - 4 * i)) as usize & 15];
    }
    let hex = std::str::from_utf8(&hex).expect("hex digits are ASCII");
    EventData::XzHash {
        x: Value::from(chunk.x),
        z: Value::from(chunk.z),
        hash: Value::String(hex.to_owned()),
    }
}

/// One line a mod logged (`log(...)` / `print(...)` in Lua).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// The mod's id.
    pub source: String,
    /// What it said.
    pub message: String,
}

/// The host's log, shared with the mods that write to it.
pub type Log = std::rc::Rc<std::cell::RefCell<Vec<LogLine>>>;

/// Events a service emits when it is called outside any event delivery (e.g. `world.terrain`'s
/// edit refusals, from Lua or Rust): the engine emits them, in order, when it next settles.
pub type Outbox = std::rc::Rc<std::cell::RefCell<Vec<(Cow<'static, str>, EventData)>>>;

/// A mod's failure outside any hook (e.g. in an `onChunk` callback): `(mod, where, message)`.
/// The engine reports each as a `mod.error` event when it next settles.
pub type ModErrors = std::rc::Rc<std::cell::RefCell<Vec<(String, String, String)>>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::ChunkPos;
    use serde_json::json;

    #[test]
    fn the_built_payload_is_the_json_object_it_stands_for() {
        for (x, z, hash) in [
            (0i64, 0i64, 0u64),
            (-3, 7, 0x9d01_eaa5_47c9_a46c),
            (i64::MIN, i64::MAX, u64::MAX),
            (5, -1, 0xab),
        ] {
            let fast = chunk_hash_data(ChunkPos::new(x, z), hash);
            let json = json!({ "x": x, "z": z, "hash": format!("{hash:016x}") });
            assert_eq!(
                serde_json::to_string(&fast).unwrap(),
                serde_json::to_string(&json).unwrap()
            );
            assert_eq!(fast.to_value(), json);
            assert_eq!(fast, json);
            assert_eq!(fast, EventData::Json(json.clone()));
            assert_eq!(EventData::Json(json.clone()), fast);
            for key in ["x", "z", "hash", "y", "other"] {
                assert_eq!(fast[key], json[key], "{key}");
                assert_eq!(fast.get(key), json.get(key), "{key}");
            }
        }
        let a = chunk_hash_data(ChunkPos::new(1, 2), 3);
        assert_ne!(a, chunk_hash_data(ChunkPos::new(1, 2), 4));
        assert_ne!(a, chunk_data(ChunkPos::new(1, 2)));
        assert_eq!(
            chunk_data(ChunkPos::new(1, 2)),
            EventData::Json(json!({"x": 1, "z": 2}))
        );
    }
}
