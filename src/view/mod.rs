//! The replay viewer (docs/reference/engines.md#the-viewer):
//! `world-streaming view REPLAY --out view.html` writes one self-contained page (inline JS and CSS,
//! the data embedded, no network) that shows a recorded run tick by tick — the grid with loaded,
//! pending, load-refused and unload-refused chunks, the foci, tickets, dormant entities and terrain
//! heights when the run has them, and each tick's events — with Start / Pause / Reset / Step, a
//! tick slider and keys.
//!
//! A recording holds the scene, mods and inputs, not the states, so the viewer re-runs it in the
//! engine (as `replay` does), checks every tick's digest against the recording (a page of a run
//! that does not reproduce would show something else than what happened), and captures what
//! changed after every tick. The page gets one *frame* per tick, each the difference from the
//! previous tick, so a 10 000-tick run at radius 32 stays a few megabytes.
//!
//! What a frame holds is written by *layers*, one per kit ([`crate::host::view`]: each kit's
//! `view.rs` and `view.js` in its own folder, registered in its catalog entry): this room is the
//! page model and the loop over the game's catalog's layers. Its own part of a frame is what
//! belongs to no kit: the tick's events (`e`), the variables that changed (`v`), the active scene
//! (`s`) and the live entities (`n`, `m`, `nr`: a per-id delta, a move costing its index and
//! position), each of a kind the page draws — a player, a vehicle, a kind a layer gives (a
//! district entity), or any other. The page opens on [`ViewData::start`], the first frame
//! showing what a layer opens on (a loaded chunk). Terrain heights are asked of a
//! [`HeightProbe`] the caller passes ([`terrain_height`] for `world.terrain`).
//!
//! The page itself lives in `page.html`, `view.css` and `view.js` (the drawing core the layers'
//! drawings run in) beside this file.
//!
//! The parts: `model.rs` (the page model: [`ViewData`] and its [`Frame`]s), `capture.rs` (the
//! re-run and the loop over the catalog's layers: [`capture`]), `render.rs` (the page: [`render`]);
//! this file the errors and the height probes of `world.terrain`.

use crate::files::FileError;
use crate::game::{Game, GameError};
use crate::grid::ChunkPos;
use crate::replay::{Divergence, Recording};

mod capture;
mod live;
mod model;
mod play;
mod render;

// A recording re-runs through a temporary directory: not on the web (docs/web.md); a live page
// captures its frames with the same capture (`Live`).
#[cfg(not(target_arch = "wasm32"))]
pub use capture::capture;
pub use live::{recording_files, Live};
pub use model::{Frame, ViewData};
pub use play::{check_playable, play_page};
pub use render::render;

/// The `format` of the data embedded in a page.
pub const VIEW_FORMAT: &str = "world-streaming-view";

/// Why a page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The replay file could not be read.
    #[error(transparent)]
    Replay(#[from] FileError),
    /// The recorded game could not be built or run.
    #[error(transparent)]
    Game(#[from] GameError),
    /// The recording does not reproduce on this build: the page would show another run.
    #[error("the replay does not reproduce on this build, so a page would not show the recorded run:\n{0}")]
    Differs(Box<Divergence>),
    /// A live page's session refused something (docs/web.md#the-live-page): an input, a
    /// recording it cannot run.
    #[error("{0}")]
    Live(String),
    /// A layer wrote a field another part of the page writes, or one the page cannot read.
    #[error("the viewer layer {layer}: {message}")]
    Layer {
        /// The layer's name.
        layer: String,
        /// What is wrong.
        message: String,
    },
}

/// The height of a chunk (e.g. its terrain's mean height), asked once per chunk when it loads;
/// `None` while it has none (e.g. its terrain is not built yet). [`terrain_height`] is the one of
/// `world.terrain`.
pub type HeightProbe<'a> = dyn Fn(&Game, ChunkPos) -> Option<f64> + 'a;

/// The probe of `world.terrain`: a built chunk's mean cell height (0..=65535, rounded down), as
/// the demo's map shades it; `None` while the chunk is not built or without the kit
/// ([`crate::kits::terrain::view::chunk_height`]).
pub fn terrain_height(game: &Game, chunk: ChunkPos) -> Option<f64> {
    crate::kits::terrain::view::chunk_height(game.engine(), chunk)
}

/// The height of a LOD block (docs/reference/terrain.md#lod-blocks-built-by-terrain) of `level` (1
/// = the first `lod` entry): the mean of its built cells, rounded down as [`terrain_height`]'s;
/// `None` while the block is not built or without `world.terrain`
/// ([`crate::kits::terrain::view::block_height`]). [`capture`] asks it of every loaded block when
/// it is given a chunk probe.
pub fn terrain_block_height(game: &Game, level: u32, block: ChunkPos) -> Option<f64> {
    crate::kits::terrain::view::block_height(game.engine(), level, block)
}

/// Whether a recording's scene enables `world.terrain` (then [`terrain_height`] is worth asking).
pub fn has_terrain(recording: &Recording) -> bool {
    recording.scene["kits"].as_array().is_some_and(|kits| {
        kits.iter()
            .any(|k| k["id"] == crate::kits::terrain::TERRAIN)
    })
}
