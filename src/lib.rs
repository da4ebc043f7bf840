//! # world-streaming
//!
//! The `world.streaming` kit of a data-driven game engine, and the small engine host it plugs into.
//!
//! Every tick the kit decides which square chunks of the XZ grid are live around the focus (the
//! vehicle the player rides, else the player, else the last `player.moved`), loads wanted chunks
//! nearest-first within a fixed per-tick budget, releases chunks beyond `radius + 1`, tags
//! `streamable` entities `dormant` while their chunk is not loaded, and tells the kits that build
//! through `world.chunk.loaded` / `world.chunk.unloaded` events and `on_chunk` callbacks. Mods
//! (JSON, or sandboxed Lua) may cancel the hooks `world.chunk.load` / `world.chunk.unload`.
//!
//! The layout follows the architecture (`ARCHITECTURE.md`: floors that depend downward only):
//! - the ground floor: [`limits`] (shared limits and name rules), [`json`] (JSON helpers),
//!   [`grid`] (positions, chunks, ring distance, the nearest-first order, bounds), [`escape`]
//!   (untrusted text for a terminal), [`user_file`] and [`fileio`] (reading and writing files);
//! - [`host`]: the `game.engine` host (entities, events, hooks, services, variables, scenes, kits,
//!   the tick loop, the save document);
//! - [`kits`]: `world.ground`, `world.streaming` (its host-free residency in
//!   `kits::streaming::residency`, its levels of detail in `kits::streaming::lod`),
//!   `world.terrain`, `world.district` and `world.nav`;
//! - [`mods`]: JSON mods and the Lua sandbox;
//! - [`files`]: the public file formats (scene, inputs, state, saves) and their schemas;
//! - [`game`]: a scene file made running: inputs applied, ticks run, state and saves written;
//! - [`replay`]: recorded runs and their verification;
//! - [`view`]: the replay viewer, one self-contained HTML page per recorded run;
//! - `bevy` (feature `bevy`): the Bevy plugin, a scene streamed around a Bevy app's anchors;
//! - [`capi`]: the C ABI for engines (Godot, Unity, Unreal), the crate's reviewed `unsafe`;
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "bevy")]
pub mod bevy;
pub mod capi;
pub mod escape;
pub mod fileio;
pub mod files;
pub mod game;
pub mod grid;
pub mod hash;
pub mod host;
pub mod json;
pub mod kits;
pub mod limits;
pub mod mods;
pub mod replay;
pub mod scene_files;
#[cfg(feature = "lua")]
pub mod script;
pub mod user_file;
pub mod view;
pub mod worlddir;

/// The names most programs need.
pub mod prelude {
    pub use crate::game::{Game, GameError};
    pub use crate::grid::{ChunkPos, Position};
    pub use crate::host::{Engine, EntityId, Event, Kit, KitCatalog};
    pub use crate::kits::builtin_catalog;
    pub use crate::kits::streaming::{ChunkEvent, StreamingService, STREAMING};
}

/// The README's Rust examples, compiled and run as doctests so they cannot rot.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The book's Rust chapter, compiled and run as doctests like the README.
#[doc = include_str!("../docs/rust.md")]
#[cfg(doctest)]
pub struct BookRustDoctests;
