//! The plugin: where the game comes from, its config, and the three system sets it adds to
//! `FixedUpdate` (anchors, then the kit's tick and its messages, then district entities).

use std::path::{Path, PathBuf};

use ::bevy::prelude::*;

use crate::game::{Game, GameError};
use crate::kits::builtin_catalog;

use super::anchor::{sync_anchors, AnchorRefused};
use super::district::mirror_districts;
use super::messages::{
    tick_kit, ChunkComplete, ChunkIncomplete, ChunkLoaded, ChunkUnloaded, ColumnLoaded,
    ColumnUnloaded, TerrainBuilt,
};
use super::resource::WorldStreaming;

/// What the plugin does beyond ticking the kit. The defaults suit a game whose anchors are its
/// players: a new anchor's kit entity is tagged `player`, and district entities are mirrored.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamingPluginConfig {
    /// The tags of the kit entity made for a [`super::StreamingAnchor`] whose id the scene
    /// does not hold (default `["player"]`: with `focus: "players"` every such anchor is a
    /// focus, docs/reference/streaming.md#anchors).
    pub anchor_tags: Vec<String>,
    /// Whether live streamed entities (docs/reference/district.md#streamed-entities) are spawned as
    /// Bevy entities with a [`super::DistrictEntity`] component (default `true`).
    pub mirror_districts: bool,
}

impl Default for StreamingPluginConfig {
    fn default() -> Self {
        StreamingPluginConfig {
            anchor_tags: vec!["player".to_owned()],
            mirror_districts: true,
        }
    }
}

/// The plugin's systems, in `FixedUpdate`, chained in this order. Put a system that moves
/// anchors `.before(StreamingSystems::Anchors)` to have the move streamed in the same step, and
/// a system reading the step's messages or districts `.after(StreamingSystems::Districts)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, SystemSet)]
pub enum StreamingSystems {
    /// Anchors' translations are written into the kit (one input, before the tick).
    Anchors,
    /// The kit ticks once; its chunk events are written as messages.
    Tick,
    /// District entities are spawned and despawned to match the kit.
    Districts,
}

/// Where the plugin's game comes from.
#[derive(Debug, Clone)]
enum Source {
    /// A scene file, read when the plugin is built.
    File(PathBuf),
    /// Scene text; `file` names it in messages, mod and district paths are relative to `base`.
    Text {
        text: String,
        file: String,
        base: PathBuf,
    },
    /// A [`WorldStreaming`] the app already holds (`app.insert_non_send(WorldStreaming::new(game))`).
    Inserted,
}

/// Streams a world around the app's [`super::StreamingAnchor`]s: one kit tick per `FixedUpdate`
/// step. Built from a scene file ([`WorldStreamingPlugin::from_scene_file`]), scene text
/// ([`WorldStreamingPlugin::from_scene_text`]) or a game built by hand and inserted first
/// ([`WorldStreamingPlugin::inserted`]). A scene that does not build panics when the plugin is
/// added, with every problem found; [`WorldStreamingPlugin::build_game`] reports them instead.
#[derive(Debug, Clone)]
pub struct WorldStreamingPlugin {
    source: Source,
    config: StreamingPluginConfig,
}

impl WorldStreamingPlugin {
    /// The game of the scene file at `path` (its mods and districts relative to it), with the
    /// built-in kits.
    pub fn from_scene_file(path: impl AsRef<Path>) -> Self {
        Self::with_source(Source::File(path.as_ref().to_owned()))
    }

    /// The game of scene JSON `text`; `file` names it in messages and `base_dir` is where its
    /// mod and district paths are relative to.
    pub fn from_scene_text(text: &str, file: &str, base_dir: impl AsRef<Path>) -> Self {
        Self::with_source(Source::Text {
            text: text.to_owned(),
            file: file.to_owned(),
            base: base_dir.as_ref().to_owned(),
        })
    }

    /// The game the app already holds as a [`WorldStreaming`] (built with
    /// [`WorldStreaming::new`] from any [`Game`], e.g. one with kits of your own).
    pub fn inserted() -> Self {
        Self::with_source(Source::Inserted)
    }

    fn with_source(source: Source) -> Self {
        WorldStreamingPlugin {
            source,
            config: StreamingPluginConfig::default(),
        }
    }

    /// The plugin with `config` instead of the defaults.
    pub fn with_config(mut self, config: StreamingPluginConfig) -> Self {
        self.config = config;
        self
    }

    /// The plugin's config.
    pub fn config(&self) -> &StreamingPluginConfig {
        &self.config
    }

    /// Builds the plugin's game, reporting every problem of the scene (what the plugin panics
    /// with). `None` for [`WorldStreamingPlugin::inserted`].
    pub fn build_game(&self) -> Option<Result<Game, GameError>> {
        match &self.source {
            Source::File(path) => Some(Game::from_scene_file(path)),
            Source::Text { text, file, base } => {
                Some(Game::from_scene_text(text, file, base, &builtin_catalog()))
            }
            Source::Inserted => None,
        }
    }
}

impl Plugin for WorldStreamingPlugin {
    fn build(&self, app: &mut App) {
        match self.build_game() {
            Some(Ok(game)) => {
                app.insert_non_send(WorldStreaming::new(game));
            }
            Some(Err(e)) => panic!("WorldStreamingPlugin: the scene does not build:\n{e}"),
            None => {
                assert!(
                    app.world().get_non_send::<WorldStreaming>().is_some(),
                    "WorldStreamingPlugin::inserted: insert a WorldStreaming first \
                     (app.insert_non_send(WorldStreaming::new(game)))"
                );
            }
        }
        app.world_mut()
            .non_send_mut::<WorldStreaming>()
            .set_config(self.config.clone());
        app.add_message::<ChunkLoaded>()
            .add_message::<ChunkUnloaded>()
            .add_message::<TerrainBuilt>()
            .add_message::<ChunkComplete>()
            .add_message::<ChunkIncomplete>()
            .add_message::<ColumnLoaded>()
            .add_message::<ColumnUnloaded>()
            .add_message::<AnchorRefused>()
            .configure_sets(
                FixedUpdate,
                (
                    StreamingSystems::Anchors,
                    StreamingSystems::Tick,
                    StreamingSystems::Districts,
                )
                    .chain(),
            )
            .add_systems(
                FixedUpdate,
                (
                    sync_anchors.in_set(StreamingSystems::Anchors),
                    tick_kit.in_set(StreamingSystems::Tick),
                    mirror_districts.in_set(StreamingSystems::Districts),
                ),
            );
    }
}
