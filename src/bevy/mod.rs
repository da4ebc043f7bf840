//! The Bevy plugin (docs/reference/engines.md#the-bevy-plugin, feature `bevy`): a scene made
//! running inside a Bevy app.
//!
//! [`WorldStreamingPlugin`] builds a [`crate::game::Game`] from a scene file or text and ticks it
//! once per `FixedUpdate` step. Entities carrying a [`StreamingAnchor`] have their `Transform`
//! translation written into the kit before it ticks; the kit's chunk events come out as the
//! messages [`ChunkLoaded`], [`ChunkUnloaded`] and [`TerrainBuilt`] (and, with `neighbours` > 0,
//! [`ChunkComplete`] and [`ChunkIncomplete`]; with `vertical`, [`ColumnLoaded`] and
//! [`ColumnUnloaded`]), every chunk an `IVec3 (x, y, z)`; `world.district` entities
//! (docs/reference/district.md#streamed-entities) are Bevy entities with a [`DistrictEntity`]
//! component while they are live; and the game itself (its streaming and terrain services) is the
//! non-send resource [`WorldStreaming`].
//!
//! ```no_run
//! use bevy::prelude::*;
//! use world_streaming::bevy::prelude::*;
//!
//! App::new()
//!     .add_plugins(MinimalPlugins)
//!     .add_plugins(WorldStreamingPlugin::from_scene_file("examples/scenes/town.json"))
//!     .add_systems(Startup, |mut commands: Commands| {
//!         commands.spawn((StreamingAnchor::new("hero"), Transform::from_xyz(16.0, 0.0, 16.0)));
//!     })
//!     .add_systems(Update, |mut loaded: MessageReader<ChunkLoaded>| {
//!         for m in loaded.read() {
//!             println!("tick {}: chunk {:?} loaded", m.tick, m.chunk);
//!         }
//!     })
//!     .run();
//! ```
//!
//! - `plugin.rs`: the plugin, its config and its system sets;
//! - `resource.rs`: [`WorldStreaming`], the game and what systems read of it;
//! - `anchor.rs`: [`StreamingAnchor`] and the system writing anchors into the kit;
//! - `messages.rs`: the messages and the system that ticks the kit and writes them;
//! - `district.rs`: [`DistrictEntity`] and the system keeping Bevy's entities in step;
//! - `coords.rs`: chunk positions as `IVec3 (x, y, z)` ([`chunk_ivec3`], [`ivec3_chunk`]).

mod anchor;
mod coords;
mod district;
mod messages;
mod plugin;
mod resource;

pub use anchor::{AnchorRefused, StreamingAnchor};
pub use coords::{chunk_ivec3, ivec3_chunk};
pub use district::DistrictEntity;
pub use messages::{
    ChunkComplete, ChunkIncomplete, ChunkLoaded, ChunkUnloaded, ColumnLoaded, ColumnUnloaded,
    TerrainBuilt,
};
pub use plugin::{StreamingPluginConfig, StreamingSystems, WorldStreamingPlugin};
pub use resource::WorldStreaming;

/// The names a Bevy game using the plugin needs.
pub mod prelude {
    pub use super::{
        chunk_ivec3, ivec3_chunk, AnchorRefused, ChunkComplete, ChunkIncomplete, ChunkLoaded,
        ChunkUnloaded, ColumnLoaded, ColumnUnloaded, DistrictEntity, StreamingAnchor,
        StreamingPluginConfig, StreamingSystems, TerrainBuilt, WorldStreaming,
        WorldStreamingPlugin,
    };
    pub use crate::grid::{ChunkPos, Position};
    pub use crate::kits::terrain::{Snapshot, SnapshotError};
}
