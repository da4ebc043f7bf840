//! The ordered event bus: kits emit events, the engine delivers them to every kit in emission
//! order, and keeps the log of everything emitted (with its tick) for the caller.

use std::collections::VecDeque;

use serde::Serialize;
use serde_json::Value;

/// Emitted when a chunk became live: `{x, z}`.
pub const CHUNK_LOADED: &str = "world.chunk.loaded";
/// Emitted when a chunk was released: `{x, z}`.
pub const CHUNK_UNLOADED: &str = "world.chunk.unloaded";
/// Emitted by the `player.moved` input: `{x, y?, z}`.
pub const PLAYER_MOVED: &str = "player.moved";
/// Emitted when a mod failed: `{mod, hook, message}`.
pub const MOD_ERROR: &str = "mod.error";

/// One event, stamped with the tick it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// The tick (an input's events carry the input's tick).
    pub tick: u64,
    /// The event's name, e.g. `world.chunk.loaded`.
    pub event: String,
    /// Its payload.
    pub data: Value,
}

/// Events waiting to be delivered, and the log of delivered ones.
#[derive(Debug, Default)]
pub struct EventBus {
    queue: VecDeque<Event>,
    log: Vec<Event>,
    tick: u64,
}

impl EventBus {
    /// Emits `event` with `data`, stamped with the current tick.
    pub fn emit(&mut self, event: &str, data: Value) {
        self.queue.push_back(Event {
            tick: self.tick,
            event: event.to_owned(),
            data,
        });
    }

    /// The tick that new events are stamped with.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    pub(crate) fn set_tick(&mut self, tick: u64) {
        self.tick = tick;
    }

    /// The next event to deliver; it moves to the log.
    pub(crate) fn next_undelivered(&mut self) -> Option<Event> {
        let e = self.queue.pop_front()?;
        self.log.push(e.clone());
        Some(e)
    }

    /// Takes the log of delivered events, oldest first.
    pub fn take_log(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.log)
    }

    /// The log of delivered events so far.
    pub fn log(&self) -> &[Event] {
        &self.log
    }
}

/// `{"x": x, "z": z}`: the payload of the chunk events and hooks.
pub fn chunk_data(chunk: crate::grid::ChunkPos) -> Value {
    serde_json::json!({ "x": chunk.x, "z": chunk.z })
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
