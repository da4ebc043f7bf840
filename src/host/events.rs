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

/// An event's payload: JSON, with fast paths for the shapes kits emit most, `{x, z}` (a
/// chunk), `{x, z, hash}` (a chunk and its content's hash) and their LOD blocks' `{level, x, z}`
/// and `{level, x, z, hash}` (no map is built; indexing, comparing and serializing behave
/// exactly as for the JSON object, keys in that order).
#[derive(Debug, Clone)]
pub enum EventData {
    /// `{"x": x, "z": z}`, held as two numbers.
    Xz {
        /// `x`.
        x: Value,
        /// `z`.
        z: Value,
    },
    /// `{"x": x, "y": y, "z": z}`: a section of a vertical world (docs/vertical.md), held as
    /// three numbers ([`section_data`]).
    Xyz {
        /// `x`.
        x: Value,
        /// `y`.
        y: Value,
        /// `z`.
        z: Value,
    },
    /// `{"x": x, "z": z, "hash": hash}`, held as two values and the hash (its number and its
    /// text).
    XzHash {
        /// `x`.
        x: Value,
        /// `z`.
        z: Value,
        /// `hash`.
        hash: Hashed,
    },
    /// `{"level": level, "x": x, "z": z}` (a block of a level of detail,
    /// docs/reference/lod.md#blocks), held as three values.
    LevelXz {
        /// `level`.
        level: Value,
        /// `x`.
        x: Value,
        /// `z`.
        z: Value,
    },
    /// `{"level": level, "x": x, "z": z, "hash": hash}` (a built block of a level of detail,
    /// docs/reference/terrain.md#lod-blocks-built-by-terrain): the three values in that order and
    /// the hash, boxed (made off the tick by a worker, and an event no larger than with three
    /// values inline).
    LevelXzHash(Box<([Value; 3], Hashed)>),
    /// Any other payload.
    Json(Value),
}

static NULL: Value = Value::Null;

/// A hash an event carries, typed: its number, and the text the event's JSON writes (16
/// lowercase hex digits, [`hash_hex`]), made once. A listener reads the number
/// ([`EventData::hash`]); nothing reads the text back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hashed {
    value: u64,
    text: Value,
}

impl Hashed {
    /// `value` and its text.
    pub fn new(value: u64) -> Hashed {
        Hashed {
            value,
            text: Value::String(hash_hex(value)),
        }
    }

    /// The number.
    pub fn value(&self) -> u64 {
        self.value
    }

    /// The text, as the event's JSON holds it.
    pub fn text(&self) -> &Value {
        &self.text
    }
}

impl EventData {
    /// The field `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match (self, key) {
            (EventData::Xz { x, .. }, "x") => Some(x),
            (EventData::Xz { z, .. }, "z") => Some(z),
            (EventData::Xz { .. }, _) => None,
            (EventData::Xyz { x, .. }, "x") => Some(x),
            (EventData::Xyz { y, .. }, "y") => Some(y),
            (EventData::Xyz { z, .. }, "z") => Some(z),
            (EventData::Xyz { .. }, _) => None,
            (EventData::XzHash { x, .. }, "x") => Some(x),
            (EventData::XzHash { z, .. }, "z") => Some(z),
            (EventData::XzHash { hash, .. }, "hash") => Some(hash.text()),
            (EventData::XzHash { .. }, _) => None,
            (EventData::LevelXz { level, .. }, "level") => Some(level),
            (EventData::LevelXz { x, .. }, "x") => Some(x),
            (EventData::LevelXz { z, .. }, "z") => Some(z),
            (EventData::LevelXz { .. }, _) => None,
            (EventData::LevelXzHash(v), "level") => Some(&v.0[0]),
            (EventData::LevelXzHash(v), "x") => Some(&v.0[1]),
            (EventData::LevelXzHash(v), "z") => Some(&v.0[2]),
            (EventData::LevelXzHash(v), "hash") => Some(v.1.text()),
            (EventData::LevelXzHash(_), _) => None,
            (EventData::Json(v), _) => v.get(key),
        }
    }

    /// The chunk a payload names by its integer `x` and `z` (every kit's chunk and block events
    /// write them so), and its section row `y` when the payload has one (a vertical world's
    /// sections, docs/vertical.md; absent: 0); `None` when `x` or `z` is missing, or any of them
    /// is not an integer.
    pub fn xz(&self) -> Option<crate::grid::ChunkPos> {
        let coord = |k: &str| self.get(k).and_then(Value::as_i64);
        let y = match self.get("y") {
            None => 0,
            Some(y) => y.as_i64()?,
        };
        Some(crate::grid::ChunkPos::section(coord("x")?, y, coord("z")?))
    }

    /// The hash a built payload carries ([`EventData::XzHash`], [`EventData::LevelXzHash`]) as a
    /// number; `None` for any other payload (a JSON payload's text is not read back).
    pub fn hash(&self) -> Option<u64> {
        match self {
            EventData::XzHash { hash, .. } => Some(hash.value()),
            EventData::LevelXzHash(v) => Some(v.1.value()),
            _ => None,
        }
    }

    /// The payload as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            EventData::Xz { x, z } => serde_json::json!({ "x": x, "z": z }),
            EventData::Xyz { x, y, z } => serde_json::json!({ "x": x, "y": y, "z": z }),
            EventData::XzHash { x, z, hash } => {
                serde_json::json!({ "x": x, "z": z, "hash": hash.text() })
            }
            EventData::LevelXz { level, x, z } => {
                serde_json::json!({ "level": level, "x": x, "z": z })
            }
            EventData::LevelXzHash(v) => {
                let [level, x, z] = &v.0;
                serde_json::json!({ "level": level, "x": x, "z": z, "hash": v.1.text() })
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
                EventData::Xyz { x, y, z },
                EventData::Xyz {
                    x: x2,
                    y: y2,
                    z: z2,
                },
            ) => x == x2 && y == y2 && z == z2,
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
            (EventData::LevelXzHash(a), EventData::LevelXzHash(b)) => a == b,
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
            EventData::Xyz { x, y, z } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("x", x)?;
                m.serialize_entry("y", y)?;
                m.serialize_entry("z", z)?;
                m.end()
            }
            EventData::XzHash { x, z, hash } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("x", x)?;
                m.serialize_entry("z", z)?;
                m.serialize_entry("hash", hash.text())?;
                m.end()
            }
            EventData::LevelXz { level, x, z } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("level", level)?;
                m.serialize_entry("x", x)?;
                m.serialize_entry("z", z)?;
                m.end()
            }
            EventData::LevelXzHash(v) => {
                let mut m = s.serialize_map(Some(4))?;
                for (key, value) in ["level", "x", "z"].into_iter().zip(&v.0) {
                    m.serialize_entry(key, value)?;
                }
                m.serialize_entry("hash", v.1.text())?;
                m.end()
            }
            EventData::Json(v) => v.serialize(s),
        }
    }
}

/// Events waiting to be delivered, and the log of delivered ones.
///
/// One vector holds both: the delivered events, then those waiting, from `next` on. An event is
/// written once, where it stays until the log is taken, and delivered by reference. While a
/// batch is out for delivery ([`EventBus::take_batch`]) what kits emit waits in `queue`, and
/// joins the log after the batch (as a single queue would order it).
#[derive(Debug, Default)]
pub struct EventBus {
    log: Vec<Event>,
    /// The first event of `log` not delivered yet.
    next: usize,
    /// What was emitted while a batch was out.
    queue: Vec<Event>,
    /// A batch is out: `log` is with the engine.
    out: bool,
    tick: u64,
}

impl EventBus {
    /// Emits `event` with `data`, stamped with the current tick.
    pub fn emit(&mut self, event: impl Into<Cow<'static, str>>, data: impl Into<EventData>) {
        let to = if self.out {
            &mut self.queue
        } else {
            &mut self.log
        };
        to.push(Event {
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

    /// The next event to deliver, marked delivered (a copy).
    #[cfg(test)]
    pub(crate) fn deliver_next(&mut self) -> Option<Event> {
        let e = self.log.get(self.next).cloned()?;
        self.next += 1;
        Some(e)
    }

    /// Whether events wait to be delivered.
    pub(crate) fn has_undelivered(&self) -> bool {
        self.next < self.log.len()
    }

    /// Hands out the log with the range of it waiting to be delivered, oldest first: what is
    /// emitted while they are delivered waits for the next batch, after them, as a queue would
    /// have it. Hand the log back with [`EventBus::delivered_batch`].
    pub(crate) fn take_batch(&mut self) -> (Vec<Event>, std::ops::Range<usize>) {
        debug_assert!(!self.out);
        self.out = true;
        let log = std::mem::take(&mut self.log);
        let waiting = self.next..log.len();
        (log, waiting)
    }

    /// Takes the log back with every event of the batch delivered: what was emitted meanwhile
    /// joins it, waiting.
    pub(crate) fn delivered_batch(&mut self, log: Vec<Event>) {
        debug_assert!(self.out && self.log.is_empty());
        self.log = log;
        self.out = false;
        self.next = self.log.len();
        self.log.append(&mut self.queue);
    }

    /// Takes the log of delivered events, oldest first (events waiting stay).
    pub fn take_log(&mut self) -> Vec<Event> {
        if self.next == 0 || self.out {
            return Vec::new(); // keeps the log's room
        }
        // Room for as many as the most so far (the log's capacity): one allocation, not a
        // doubling from 4 every tick, nor a doubling on every tick busier than the last.
        let room = self.log.capacity();
        let mut rest = Vec::with_capacity(room);
        rest.extend(self.log.drain(self.next..));
        self.next = 0;
        std::mem::replace(&mut self.log, rest)
    }

    /// The log of delivered events so far.
    pub fn log(&self) -> &[Event] {
        &self.log[..self.next]
    }
}

/// `{"x": x, "z": z}`: the payload of the chunk events (built without allocating).
pub fn chunk_data(chunk: crate::grid::ChunkPos) -> EventData {
    EventData::Xz {
        x: Value::from(chunk.x),
        z: Value::from(chunk.z),
    }
}

/// `{"x": x, "y": y, "z": z}`: the payload of a section's events and hooks in a vertical world
/// (docs/vertical.md), `y` always written, keys in that order (built without allocating).
pub fn section_data(section: crate::grid::ChunkPos) -> EventData {
    EventData::Xyz {
        x: Value::from(section.x),
        y: Value::from(section.y),
        z: Value::from(section.z),
    }
}

/// `{"x": x, "z": z, "hash": "…"}`: the payload of `world.terrain.built`, the hash as
/// [`hash_hex`] writes it (and carried as a number, [`EventData::hash`]).
pub fn chunk_hash_data(chunk: crate::grid::ChunkPos, hash: u64) -> EventData {
    EventData::XzHash {
        x: Value::from(chunk.x),
        z: Value::from(chunk.z),
        hash: Hashed::new(hash),
    }
}

/// The values of `{"level": level, "x": x, "z": z, "hash": "…"}`, the payload of
/// `world.terrain.lod.built` (docs/reference/terrain.md#lod-blocks-built-by-terrain) as
/// [`EventData::LevelXzHash`] holds them, the hash as [`hash_hex`] writes it (and carried as a
/// number, [`EventData::hash`]).
pub fn block_hash_values(
    level: u32,
    block: crate::grid::ChunkPos,
    hash: u64,
) -> Box<([Value; 3], Hashed)> {
    Box::new((
        [
            Value::from(level),
            Value::from(block.x),
            Value::from(block.z),
        ],
        Hashed::new(hash),
    ))
}

/// A hash as events and saves write it: 16 lowercase hex digits (as `format!("{hash:016x}")`
/// writes them, without the formatter).
pub fn hash_hex(hash: u64) -> String {
    let mut hex = [0u8; 16];
    for (i, digit) in hex.iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[(hash >> (60 - 4 * i)) as usize & 15];
    }
    std::str::from_utf8(&hex)
        .expect("hex digits are ASCII")
        .to_owned()
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

/// Counts the engine's *steps*: each tick, each input and each load of a save is one, and so is
/// the time between two of them. What is budgeted per tick (a Lua mod's tick budget, see
/// docs/lua-vm.md#the-tick-budget) starts afresh whenever the count changes. Shared (cheaply
/// cloned) by the engine, which advances it, and the mods, which read it.
#[derive(Debug, Clone, Default)]
pub struct Steps(std::rc::Rc<std::cell::Cell<u64>>);

impl Steps {
    /// The current step.
    pub fn now(&self) -> u64 {
        self.0.get()
    }

    /// Starts the next step (the engine does at the start and the end of every tick, input and
    /// load; a host driving mods without an engine may too).
    pub fn advance(&self) {
        self.0.set(self.0.get().wrapping_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::ChunkPos;
    use serde_json::json;

    fn names(events: &[Event]) -> Vec<&str> {
        events.iter().map(|e| e.event.as_ref()).collect()
    }

    #[test]
    fn the_log_holds_only_what_was_delivered_and_a_batch_comes_before_what_it_emits() {
        let mut bus = EventBus::default();
        bus.emit("a", json!(1));
        bus.emit("b", json!(2));
        // Waiting events are not in the log, and taking the log leaves them waiting.
        assert!(bus.log().is_empty());
        assert!(bus.take_log().is_empty());
        assert!(bus.has_undelivered());
        let (log, range) = bus.take_batch();
        assert_eq!(names(&log[range]), ["a", "b"]);
        // Emitted while the batch is out: after it, waiting.
        bus.emit("c", json!(3));
        bus.delivered_batch(log);
        assert_eq!(names(bus.log()), ["a", "b"]);
        assert!(bus.has_undelivered());
        bus.emit("d", json!(4));
        let (log, range) = bus.take_batch();
        assert_eq!(names(&log[range]), ["c", "d"]);
        bus.delivered_batch(log);
        assert!(!bus.has_undelivered());
        // One waiting when the log is taken: it stays, and is the next delivered.
        bus.emit("e", json!(5));
        assert_eq!(names(&bus.take_log()), ["a", "b", "c", "d"]);
        assert!(bus.log().is_empty());
        assert_eq!(bus.deliver_next().map(|e| e.event), Some("e".into()));
        assert_eq!(names(&bus.take_log()), ["e"]);
        assert!(!bus.has_undelivered() && bus.deliver_next().is_none());
    }

    /// A fast-path payload serializes, converts, compares and indexes (at `keys`) as `json`.
    fn stands_for(fast: &EventData, json: &Value, keys: &[&str]) {
        assert_eq!(
            serde_json::to_string(fast).unwrap(),
            serde_json::to_string(json).unwrap()
        );
        assert_eq!(fast.to_value(), *json);
        assert_eq!(*fast, *json);
        assert_eq!(*fast, EventData::Json(json.clone()));
        assert_eq!(EventData::Json(json.clone()), *fast);
        for key in keys {
            assert_eq!(fast[key], json[key], "{key}");
            assert_eq!(fast.get(key), json.get(key), "{key}");
        }
    }

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
            stands_for(&fast, &json, &["x", "z", "hash", "y", "other"]);
        }
        let a = chunk_hash_data(ChunkPos::new(1, 2), 3);
        assert_ne!(a, chunk_hash_data(ChunkPos::new(1, 2), 4));
        assert_ne!(a, chunk_data(ChunkPos::new(1, 2)));
        assert_eq!(
            chunk_data(ChunkPos::new(1, 2)),
            EventData::Json(json!({"x": 1, "z": 2}))
        );
    }

    #[test]
    fn the_block_built_payload_is_the_json_object_it_stands_for() {
        for (level, x, z, hash) in [
            (1u32, 0i64, 0i64, 0u64),
            (4, -3, 7, 0x9d01_eaa5_47c9_a46c),
            (2, i64::MIN, i64::MAX, u64::MAX),
        ] {
            let fast = EventData::LevelXzHash(block_hash_values(level, ChunkPos::new(x, z), hash));
            let json = json!({ "level": level, "x": x, "z": z, "hash": format!("{hash:016x}") });
            stands_for(&fast, &json, &["level", "x", "z", "hash", "y"]);
        }
        let block = |level, hash| {
            EventData::LevelXzHash(block_hash_values(level, ChunkPos::new(1, 2), hash))
        };
        let a = block(1, 3);
        assert_ne!(a, block(2, 3));
        assert_ne!(a, block(1, 4));
        assert_ne!(a, chunk_hash_data(ChunkPos::new(1, 2), 3));
        // As small as an event with three values inline.
        assert_eq!(
            std::mem::size_of::<EventData>(),
            std::mem::size_of::<[Value; 3]>() + 8
        );
    }

    #[test]
    fn the_section_payload_is_the_json_object_it_stands_for_and_reads_back_its_y() {
        for (x, y, z) in [(0i64, 0i64, 0i64), (-3, 5, 7), (i64::MIN, -1, i64::MAX)] {
            let fast = section_data(ChunkPos::section(x, y, z));
            let json = json!({ "x": x, "y": y, "z": z });
            stands_for(&fast, &json, &["x", "y", "z", "hash"]);
            assert_eq!(fast.xz(), Some(ChunkPos::section(x, y, z)));
        }
        assert_eq!(
            serde_json::to_string(&section_data(ChunkPos::new(1, 2))).unwrap(),
            r#"{"x":1,"y":0,"z":2}"#,
            "y always written, keys x, y, z"
        );
        assert_ne!(
            section_data(ChunkPos::new(1, 2)),
            chunk_data(ChunkPos::new(1, 2))
        );
        assert_eq!(
            chunk_data(ChunkPos::new(1, 2)).xz(),
            Some(ChunkPos::new(1, 2))
        );
        let bad = EventData::Json(json!({"x": 1, "y": 0.5, "z": 2}));
        assert_eq!(bad.xz(), None, "a y that is not an integer");
    }
}
