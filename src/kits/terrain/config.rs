//! `world.terrain` settings (docs/reference/terrain.md#terrain-settings,
//! docs/reference/world-dir.md#region-files): the kit config, each range declared once, and the
//! defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{checked_number, config_settings};

/// Most cells per chunk side.
pub const MAX_CELLS: u32 = 256;
/// Most worker threads.
pub const MAX_WORKERS: u32 = 64;
/// Most ticks from a load to its commit.
pub const MAX_COMMIT_LATENCY: u64 = 64;
/// Most ticks between write-backs.
pub const MAX_FLUSH_EVERY: u64 = 2_147_483_647;

checked_number!(
    /// Cells per chunk side: an integer 1..=[`MAX_CELLS`].
    CellsPerChunk(u32),
    integer 1..=MAX_CELLS,
    "cells per chunk side"
);

/// What `workers` asks for (docs/reference/terrain.md#inline): worker threads, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkerCount {
    /// Up to this many worker threads (0: the available cores minus one, at least 1).
    Threads(u32),
    /// No worker thread: every job is built on the tick thread at its commit tick.
    Inline,
}

impl Serialize for WorkerCount {
    /// As a config file writes it: the integer, or `"inline"`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WorkerCount::Threads(n) => s.serialize_u32(*n),
            WorkerCount::Inline => s.serialize_str(INLINE),
        }
    }
}

/// The word of `workers` that asks for no worker thread.
pub const INLINE: &str = "inline";

/// Whether this build can start threads: not a WebAssembly one (`wasm32-unknown-unknown` has
/// none), which runs every scene inline whatever `workers` says
/// (docs/reference/terrain.md#inline).
pub const THREADS: bool = !cfg!(target_arch = "wasm32");

checked_number!(
    /// Worker threads: an integer 0..=[`MAX_WORKERS`] (0: the available cores minus one, at
    /// least 1), or `"inline"` ([`WorkerCount::Inline`]: none).
    Workers(WorkerCount),
    format!("an integer 0..={MAX_WORKERS} or \"{INLINE}\""),
    |v| match v {
        serde_json::Value::String(s) if s == INLINE => Some(WorkerCount::Inline),
        _ => crate::json::as_integer(v)
            .filter(|n| (0..=i64::from(MAX_WORKERS)).contains(n))
            .map(|n| WorkerCount::Threads(n as u32)),
    },
    {
        "oneOf": [
            { "type": "integer", "minimum": 0, "maximum": MAX_WORKERS },
            { "const": INLINE }
        ],
        "description": "worker threads; 0: cores - 1, at least 1; \"inline\": none, every chunk and block built on the tick at its commit tick"
    }
);

impl Workers {
    /// `"inline"`: no worker thread.
    pub const INLINE: Workers = Workers(WorkerCount::Inline);
}

checked_number!(
    /// Ticks from a load to its commit: an integer 1..=[`MAX_COMMIT_LATENCY`].
    CommitLatency(u64),
    integer 1..=MAX_COMMIT_LATENCY,
    "ticks from a chunk's load to its commit"
);

checked_number!(
    /// The world seed: an integer 0..=2^64-1.
    Seed(u64),
    "an integer 0..=18446744073709551615",
    |v| v.as_u64(),
    { "type": "integer", "minimum": 0, "description": "the world seed" }
);

checked_number!(
    /// Ticks between write-backs: an integer 0..=[`MAX_FLUSH_EVERY`] (0: never periodically).
    FlushEvery(u64),
    integer 0..=MAX_FLUSH_EVERY,
    "ticks between write-backs; 0: only on release, save and close"
);

config_settings! {
    /// `{ "seed": 7, "cellsPerChunk": 32, "workers": 0, "commitLatency": 2 }`, every key optional.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct TerrainConfig {
        /// The world seed (default 0).
        seed "seed": Seed = Seed(0),
        /// Cells per chunk side (default 32).
        cells_per_chunk "cellsPerChunk": CellsPerChunk = CellsPerChunk(32),
        /// Worker threads (default 0: the available cores minus one, at least 1), or
        /// `"inline"`: none, every chunk and LOD block built on the tick at its commit tick.
        workers "workers": Workers = Workers(WorkerCount::Threads(0)),
        /// Ticks from a chunk's load to its commit (default 2).
        commit_latency "commitLatency": CommitLatency = CommitLatency(2),
        /// Where modified chunks are kept (docs/reference/world-dir.md#what-is-stored), relative to
        /// the scene file; without it they live in memory and in game saves.
        world_dir "worldDir": Option<String> = None,
        /// Write back modified chunks on every tick that is a multiple of it (0: only on release,
        /// game save and close). Default 600.
        flush_every_ticks "flushEveryTicks": FlushEvery = FlushEvery(600),
    }
}

impl TerrainConfig {
    /// Whether every job runs on the tick thread at its commit tick, with no thread started
    /// (docs/reference/terrain.md#inline): `workers: "inline"`, or any scene on a build without
    /// threads ([`THREADS`]).
    pub fn runs_inline(&self) -> bool {
        !THREADS || self.workers.get() == WorkerCount::Inline
    }

    /// The worker threads to start: none inline ([`TerrainConfig::runs_inline`]), else
    /// [`worker_threads_for`] on this machine's cores.
    pub fn worker_threads(&self) -> usize {
        match self.workers.get() {
            WorkerCount::Threads(n) if THREADS => {
                let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
                worker_threads_for(n, cores)
            }
            _ => 0,
        }
    }
}

/// The worker threads `workers` (the config's value) starts on a machine of `cores` cores:
/// 0 is the cores minus one, at least 1; any other value is at most `cores`. More threads than
/// cores build nothing sooner (the bytes are the same for any count) and take the core the
/// tick needs: 64 workers on 2 cores left the tick thread a 65th of the machine.
pub fn worker_threads_for(workers: u32, cores: usize) -> usize {
    let cores = cores.max(1);
    match workers {
        0 => cores.saturating_sub(1).max(1),
        n => (n as usize).min(cores),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_start_at_most_one_thread_a_core() {
        assert_eq!(worker_threads_for(64, 2), 2);
        assert_eq!(worker_threads_for(3, 2), 2);
        assert_eq!(worker_threads_for(1, 2), 1);
        assert_eq!(worker_threads_for(0, 2), 1);
        assert_eq!(worker_threads_for(0, 8), 7);
        assert_eq!(worker_threads_for(0, 1), 1);
        assert_eq!(worker_threads_for(64, 16), 16);
        assert_eq!(worker_threads_for(5, 0), 1);
    }
}
