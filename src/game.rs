//! A game: a scene file made running. Builds the engine from a scene file (kits, mods, entities,
//! first scene), applies inputs with the run loop of docs/reference/tick.md#inputs-before-ticks,
//! and reports the state; saves and loads. This is what the command line drives, and what tests
//! use.

use std::path::Path;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::files::inputs::{Action, InputLine, Inputs};
use crate::files::scene::SceneFile;
use crate::files::state::{FocusXZ, StateDoc};
use crate::files::{display_name, parse_json, read_text, write_atomic, FileError};
use crate::host::KitCatalog;
use crate::host::{Engine, EngineError, Log, PLAYER_MOVED};
use crate::json::{number, Problem};
use crate::kits::builtin_catalog;
use crate::kits::district::{DistrictService, DISTRICT};
use crate::kits::streaming::dormancy::DORMANT;
use crate::kits::streaming::{StreamingService, TicketError, TicketInfo, STREAMING};
use crate::kits::streaming::{HOOK_CHUNK_LOAD, HOOK_CHUNK_UNLOAD};
use crate::kits::terrain::{TerrainService, TERRAIN};
use crate::mods;
use crate::scene_files::SceneFiles;

/// Why a game could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum GameError {
    /// One or more files are wrong (every problem found).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Files(Vec<FileError>),
    /// An input could not be applied (e.g. it names an entity that does not exist).
    #[error("{file}: line {line}: {message}")]
    Input {
        /// The inputs file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What went wrong.
        message: String,
    },
    /// A streaming request was refused (e.g. a ticket out of range), or the kit is missing.
    #[error("{0}")]
    Streaming(String),
    /// A value out of its range (`Game::set_radius(65)`).
    #[error(transparent)]
    Value(#[from] crate::json::ValueError),
    /// An input was refused by the world: an entity that does not exist, an id that exists, a
    /// ride that would close a loop.
    #[error(transparent)]
    Entity(#[from] crate::host::EntityError),
    /// An input was refused by the engine (a scene that does not exist).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// An input's value is wrong (e.g. `player.moved` far out of range), at a JSON path.
    #[error("{0}")]
    Invalid(Problem),
    /// `world.terrain` is missing, or refused an edit ([`Game::edit`]).
    #[error("{0}")]
    Terrain(String),
    /// `world.nav` is missing (a `path` input without the kit).
    #[error("{0}")]
    Nav(String),
    /// The scene's world directory (`worldDir`) is held by another game, in this process or
    /// another: one game owns a world directory (its `session.lock`).
    #[error("world directory {dir} is in use by another game (lock file {lock} held)")]
    WorldInUse {
        /// The directory.
        dir: std::path::PathBuf,
        /// Its lock file.
        lock: std::path::PathBuf,
    },
    /// [`Game::close`] could not write every edit back to the world directory: the regions
    /// not written, with their paths and how many chunks each (those edits are lost).
    #[error("edits lost: {0}")]
    Unsaved(crate::kits::terrain::store::StoreError),
    /// [`Game::close`] could not write every district difference back to the world directory
    /// (docs/reference/district.md#district-persistence): the regions not written, with their paths
    /// and how many chunks each.
    #[error("district differences lost: {0}")]
    DistrictUnsaved(crate::kits::district::DistrictStoreError),
    /// `run_until_ready` ran out of ticks.
    #[error("{} was not ready after {ticks} ticks", crate::escape::escape(entity))]
    NotReady {
        /// The entity waited for.
        entity: String,
        /// The ticks run.
        ticks: u64,
    },
}

impl From<FileError> for GameError {
    fn from(e: FileError) -> Self {
        GameError::Files(vec![e])
    }
}

/// The mod id the game's own setters ([`Game::set_radius`] …) act as.
pub const GAME_MOD_ID: &str = "game";

/// A running game.
pub struct Game {
    engine: Engine,
    streaming: Option<Rc<dyn StreamingService>>,
    log: Log,
    /// What a save holds of each Lua mod, in mod order.
    lua_mods: Vec<mods::lua::LuaModState>,
    /// The scene's seed (Lua mods' `math.random`) and how many mods are installed.
    seed: u64,
    mod_count: usize,
}

impl Game {
    /// Builds a game from a scene file with the built-in kits.
    pub fn from_scene_file(path: &Path) -> Result<Game, GameError> {
        Self::from_scene_file_with(path, &builtin_catalog())
    }

    /// Builds a game from a scene file with the kits of `catalog`.
    pub fn from_scene_file_with(path: &Path, catalog: &KitCatalog) -> Result<Game, GameError> {
        let file = display_name(path);
        let text = read_text(path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::from_scene_text(&text, &file, base, catalog)
    }

    /// Builds a game from scene JSON text; `file` names it in messages and `base_dir` is where
    /// its mod paths are relative to.
    pub fn from_scene_text(
        text: &str,
        file: &str,
        base_dir: &Path,
        catalog: &KitCatalog,
    ) -> Result<Game, GameError> {
        Self::from_scene_text_with_files(text, file, &SceneFiles::dir(base_dir), catalog)
    }

    /// Builds a game from scene JSON text whose mods and district files are read from `files`
    /// and nowhere else: the scene's directory ([`SceneFiles::dir`]), or files given as text
    /// ([`SceneFiles::from_json`], [`SceneFiles::from_texts`]) standing for it
    /// (docs/reference/engines.md#scene-files-as-text). `file` names the scene in messages.
    pub fn from_scene_text_with_files(
        text: &str,
        file: &str,
        files: &SceneFiles,
        catalog: &KitCatalog,
    ) -> Result<Game, GameError> {
        // Straight into the typed scene: no JSON value tree (a 100 000-entity scene costs its
        // typed size, see `examples/big_scene.rs`).
        let scene: SceneFile = crate::files::parse_typed(text, file)?;
        Self::build(scene, file, files, catalog)
    }

    /// Builds a game from a parsed scene file. Every problem is checked before anything runs.
    pub fn from_scene(
        scene: &SceneFile,
        file: &str,
        base_dir: &Path,
        catalog: &KitCatalog,
    ) -> Result<Game, GameError> {
        Self::build(scene.clone(), file, &SceneFiles::dir(base_dir), catalog)
    }

    /// [`Game::from_scene`], taking the scene (its entities move into the world).
    fn build(
        mut scene: SceneFile,
        file: &str,
        files: &SceneFiles,
        catalog: &KitCatalog,
    ) -> Result<Game, GameError> {
        let invalid = |p: Problem| FileError::invalid(file, p);
        let mut errors: Vec<FileError> = scene.problems().into_iter().map(invalid).collect();
        let engine =
            Engine::new_with_files(catalog, &scene.kit_entries(), scene.scene_defs(), files);
        let mut engine = match engine {
            Ok(e) => Some(e),
            Err(list) => {
                let in_use = list.iter().find_map(|e| match e {
                    EngineError::Kit(crate::host::KitError::InUse { dir, lock, .. }) => {
                        Some((dir.clone(), lock.clone()))
                    }
                    _ => None,
                });
                if let Some((dir, lock)) = in_use {
                    return Err(GameError::WorldInUse { dir, lock });
                }
                errors.extend(list.into_iter().map(|e| engine_error(file, e)));
                None
            }
        };
        let mut mod_files = Vec::new();
        for (i, m) in scene.mods.iter().enumerate() {
            // Before looking for the file: a build without Lua (the wasm build) may have no file
            // system either (docs/reference/web.md#lua-mods-need-the-native-build).
            #[cfg(not(feature = "lua"))]
            if Path::new(m).extension().is_some_and(|e| e == "lua") {
                errors.push(invalid(Problem::new(
                    format!("mods[{i}]"),
                    mods::LUA_NEEDS_NATIVE,
                )));
                continue;
            }
            // What exists but is not a regular file (a directory, a FIFO, `/dev/zero`) is
            // refused by the read, which says what it is.
            let missing = match files.exists(m) {
                Ok(true) => None,
                Ok(false) => Some(format!(
                    "expected a mod file, but {} does not exist",
                    files.name(m)
                )),
                Err(why) => Some(format!("{}: {why}", files.name(m))),
            };
            if let Some(message) = missing {
                errors.push(invalid(Problem::new(format!("mods[{i}]"), message)));
                continue;
            }
            let read = files.read_text(m).map_err(|e| vec![e]);
            match read.and_then(|text| mods::parse_mod(text, &files.path(m))) {
                Ok(f) => mod_files.push(f),
                Err(list) => errors.extend(list),
            }
        }
        // Mod hooks are checked against the hooks the kits declare (when a kit's config is bad
        // and the engine could not be built, against the streaming kit's two).
        let declared: Vec<String> = match &engine {
            Some(engine) => engine.hooks().declared().map(str::to_owned).collect(),
            None => vec![HOOK_CHUNK_LOAD.to_owned(), HOOK_CHUNK_UNLOAD.to_owned()],
        };
        errors.extend(mods::check_hooks(&mod_files, &declared));
        if !errors.is_empty() {
            return Err(GameError::Files(errors));
        }
        let mut engine = engine.take().expect("no errors");
        let log = Log::default();
        let lua_mods =
            mods::install(mod_files, &mut engine, scene.seed, &log).map_err(GameError::Files)?;
        let entities = std::mem::take(&mut scene.entities);
        let control = scene.control.clone();
        // Ids are unique across the scene and its districts
        // (docs/reference/district.md#district-files).
        if let Some(d) = engine.service::<dyn DistrictService>(DISTRICT) {
            let clashes: Vec<FileError> = entities
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    let (f, line) = d.district_line(&e.id)?;
                    Some(invalid(Problem::new(
                        format!("entities[{i}].id"),
                        format!(
                            "duplicate entity id {:?}: {f} line {line} has it",
                            e.id.as_str()
                        ),
                    )))
                })
                .collect();
            if !clashes.is_empty() {
                return Err(GameError::Files(clashes));
            }
        }
        let world = crate::host::World::restore(entities, control)
            .map_err(|(i, e)| invalid(Problem::new(format!("entities[{i}]"), e.to_string())))?;
        engine.input(0, |e| e.replace_world(world));
        let first = engine.scenes()[0].id.clone();
        engine
            .input(0, |e| e.enter(&first))
            .map_err(|e| engine_error(file, e))?;
        let streaming = engine.service::<dyn StreamingService>(STREAMING);
        Ok(Game {
            engine,
            streaming,
            log,
            lua_mods,
            seed: scene.seed,
            mod_count: scene.mods.len(),
        })
    }

    /// Ends the game: writes every edit back to the world directory and waits until it is on
    /// disk. Dropping a game instead writes only what was already sent (terrain edits, and
    /// the district chunks released or written back periodically), not the changes of the
    /// live district entities since the last write back, and can only print a failure on
    /// stderr: call `close` on every path, an error one too. The error lists every region
    /// not written, with its path and how many chunks: those edits are lost. The world
    /// directory's lock is released either way.
    pub fn close(self) -> Result<(), GameError> {
        let terrain = match self.kit::<crate::kits::terrain::TerrainKit>() {
            Some(terrain) => terrain.close().map_err(GameError::Unsaved),
            None => Ok(()),
        };
        let district = match self.kit::<crate::kits::district::DistrictKit>() {
            Some(d) => d
                .close(self.engine.world())
                .map_err(GameError::DistrictUnsaved),
            None => Ok(()),
        };
        terrain.and(district)
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine, mutably (to run ticks or inputs by hand).
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// The enabled kit of type `T` (see [`Engine::kit`]).
    pub fn kit<T: crate::host::Kit>(&self) -> Option<&T> {
        self.engine.kit()
    }

    /// The `world.streaming` service, if the scene enables the kit.
    pub fn streaming(&self) -> Option<Rc<dyn StreamingService>> {
        self.streaming.clone()
    }

    /// What mods logged so far, oldest first.
    pub fn take_mod_log(&self) -> Vec<crate::host::LogLine> {
        std::mem::take(&mut self.log.borrow_mut())
    }

    /// The mod log itself, to drain while the game runs (e.g. after every tick), so that a long
    /// run does not keep every line.
    pub fn mod_log(&self) -> crate::host::Log {
        self.log.clone()
    }

    /// Runs one tick.
    pub fn tick(&mut self) {
        self.engine.tick();
    }

    /// Applies one input, stamped with its tick; `save`/`load` paths are relative to the
    /// current directory. A refused input is a typed error ([`GameError::Entity`],
    /// [`GameError::Engine`], [`GameError::Invalid`], [`GameError::Streaming`],
    /// [`GameError::Files`] for a save or load); the run loop adds the file and line.
    pub fn apply(&mut self, input: &InputLine) -> Result<(), GameError> {
        self.apply_in(input, &Inputs::default())
    }

    /// Applies one input of `inputs`: its `save`/`load` paths resolved with
    /// [`Inputs::resolve`] (relative to the current directory unless [`Inputs::dir`] says
    /// otherwise, as a replay's temporary directory does).
    pub fn apply_in(&mut self, input: &InputLine, inputs: &Inputs) -> Result<(), GameError> {
        let stamp = input.tick;
        let streaming = self.streaming.clone();
        match &input.action {
            Action::Save { path } => return Ok(self.save(&inputs.resolve(path))?),
            Action::Load { path } => return Ok(self.load(&inputs.resolve(path))?),
            _ => {}
        }
        let needs = |what: &str| {
            streaming
                .clone()
                .ok_or_else(|| GameError::Streaming(format!("{what} needs the {STREAMING} kit")))
        };
        self.engine.input(stamp, |e| -> Result<(), GameError> {
            match &input.action {
                Action::Move { entity, to } => e.world_mut().move_to(entity, *to)?,
                Action::PlayerMoved { at } => {
                    at.position()
                        .check()
                        .map_err(|p| GameError::Invalid(p.under("at")))?;
                    let mut data = Map::new();
                    data.insert("x".into(), number(at.x));
                    if let Some(y) = at.y {
                        data.insert("y".into(), number(y));
                    }
                    data.insert("z".into(), number(at.z));
                    e.emit(PLAYER_MOVED, Value::Object(data));
                }
                Action::Spawn { entity } => {
                    let district = e.service::<dyn DistrictService>(DISTRICT);
                    if e.world().get(&entity.id).is_none()
                        && district.is_some_and(|d| d.reserved(&entity.id))
                    {
                        return Err(crate::host::EntityError::Reserved(entity.id.clone()).into());
                    }
                    e.world_mut().spawn(entity.clone())?
                }
                Action::Despawn { entity } => e.world_mut().despawn(entity).map(drop)?,
                Action::Tag { entity, tag } => e.world_mut().tag(entity, tag)?,
                Action::Untag { entity, tag } => e.world_mut().untag(entity, tag)?,
                Action::Ride { entity, vehicle } => e.world_mut().ride(entity, vehicle)?,
                Action::Dismount { entity } => e.world_mut().dismount(entity)?,
                Action::Set { entity, data } => {
                    e.world_mut().set_data(entity, Some(data.clone()))?
                }
                Action::Control { entity } => e.world_mut().set_control(entity.clone())?,
                Action::Leave {} => e.leave(),
                Action::Enter { scene } => e.enter(scene)?,
                Action::Release { x, y, z } => {
                    // docs/reference/files-and-cli.md#actions: `y` names a section's row.
                    let chunk = crate::grid::ChunkPos::section(*x, y.unwrap_or(0), *z);
                    needs("release")?.release(chunk);
                }
                Action::Request {
                    id,
                    at,
                    radius,
                    ticks,
                    priority,
                } => match needs("request")?.request(
                    id,
                    *at,
                    i64::from(radius.get()),
                    ticks.get() as i64,
                    Some(stamp),
                    priority.map(|p| p.get() as u8),
                ) {
                    // Refused by the ticket cap: the world's answer is the event
                    // `world.ticket.refused`; the run goes on.
                    Ok(()) | Err(TicketError::OverCap { .. }) => {}
                    Err(e) => return Err(GameError::Streaming(e.to_string())),
                },
                Action::Drop { ticket } => {
                    needs("drop")?.drop_ticket(ticket);
                }
                Action::Edit {
                    at,
                    height,
                    material,
                } => {
                    let terrain = e.service::<dyn TerrainService>(TERRAIN).ok_or_else(|| {
                        GameError::Terrain(format!("edit needs the {TERRAIN} kit"))
                    })?;
                    // A refusal is the world's answer (an event), not a failed input.
                    let _ = terrain.edit(*at, *height, *material);
                }
                Action::Path { id, from, to } => {
                    let nav = e
                        .service::<dyn crate::kits::nav::NavService>(crate::kits::nav::NAV)
                        .ok_or_else(|| {
                            GameError::Nav(format!("path needs the {} kit", crate::kits::nav::NAV))
                        })?;
                    let outcome = nav.path_input(*from, *to);
                    e.emit(
                        crate::kits::nav::NAV_PATH,
                        crate::kits::nav::path_event(id, &outcome),
                    );
                }
                Action::Save { .. } | Action::Load { .. } => unreachable!("handled above"),
            }
            Ok(())
        })
    }

    /// Adds a mod after the scene's (last in mod order), as if the scene listed it: `name`
    /// ends in `.json` or `.lua` and names it in messages (a Lua mod's id is its stem); it uses
    /// the game's mod log and seed (`math.random` seeded with the scene's `seed` plus its
    /// position). A JSON `set` applies from the next tick. Every problem is an error and
    /// nothing is added. A save made before the mod was added holds no state for it, so it does
    /// not load into this game (the Lua mods must be the same).
    pub fn add_mod(&mut self, name: &str, source: &str) -> Result<(), GameError> {
        let file = mods::parse_mod(source.to_owned(), Path::new(name)).map_err(GameError::Files)?;
        let added = mods::install_from(
            vec![file],
            self.mod_count,
            &mut self.engine,
            self.seed,
            &self.log,
        )
        .map_err(GameError::Files)?;
        self.mod_count += 1;
        self.lua_mods.extend(added);
        Ok(())
    }

    /// Sets the radius from the next tick, at the level of mod overrides (over the scene layer
    /// and the config; a later mod or setter wins); saved with the game. `Radius::new` checks it.
    pub fn set_radius(&mut self, radius: u32) -> Result<(), GameError> {
        let radius = crate::kits::streaming::Radius::new(radius)?;
        self.require_streaming()?
            .set_radius(&crate::host::ModId::new(GAME_MOD_ID), radius);
        Ok(())
    }

    /// Sets the load budget (`max(1, floor(budget_ms))` loads per tick) from the next tick, like
    /// [`Game::set_radius`].
    pub fn set_budget_ms(&mut self, budget_ms: f64) -> Result<(), GameError> {
        let budget = crate::kits::streaming::BudgetMs::new(budget_ms)?;
        self.require_streaming()?
            .set_budget_ms(&crate::host::ModId::new(GAME_MOD_ID), budget);
        Ok(())
    }

    /// Forgets every override set by mods or by [`Game::set_radius`] and the other setters:
    /// the scene layer and the kit config are in force again from the next tick.
    pub fn clear_overrides(&mut self) -> Result<(), GameError> {
        self.require_streaming()?.clear_overrides();
        Ok(())
    }

    /// Requests (or replaces) preload ticket `id` from the next tick: a focus at `at` with its
    /// own `radius` for `ticks` tick plans (docs/reference/streaming.md#tickets). Refused by the
    /// ticket cap (`maxTicketChunks`), it is [`GameError::Streaming`] with the reason, and the
    /// event `world.ticket.refused` comes at the next input or tick.
    pub fn request_around(
        &mut self,
        id: &str,
        at: crate::grid::Position,
        radius: u32,
        ticks: u64,
    ) -> Result<(), GameError> {
        let s = self.require_streaming()?;
        let ticks = i64::try_from(ticks).unwrap_or(i64::MAX);
        s.request_around(id, at, i64::from(radius), ticks)
            .map_err(|e| GameError::Streaming(e.to_string()))
    }

    /// Replaces the `data` of live entity `id` (docs/reference/engine.md#entity-data; `None` clears
    /// it), as a `set` input does: at most 4 KiB serialized; kits hear of the change at once.
    pub fn set_data(
        &mut self,
        id: &str,
        data: Option<Map<String, Value>>,
    ) -> Result<(), GameError> {
        let id = crate::host::EntityId::new(id);
        self.engine.input(self.engine.tick_count(), |e| {
            e.world_mut().set_data(&id, data)
        })?;
        Ok(())
    }

    /// [`Game::request_around`] with a `priority` (0..=255,
    /// docs/reference/streaming.md#priorities): higher loads first.
    pub fn request_around_with_priority(
        &mut self,
        id: &str,
        at: crate::grid::Position,
        radius: u32,
        ticks: u64,
        priority: u8,
    ) -> Result<(), GameError> {
        let s = self.require_streaming()?;
        let ticks = i64::try_from(ticks).unwrap_or(i64::MAX);
        s.request_around_with_priority(id, at, i64::from(radius), ticks, priority)
            .map_err(|e| GameError::Streaming(e.to_string()))
    }

    /// Removes ticket `id` at once; returns whether it was held.
    pub fn drop_ticket(&mut self, id: &str) -> bool {
        self.streaming.as_ref().is_some_and(|s| s.drop_ticket(id))
    }

    /// Sets the `world.terrain` cell containing `at` (docs/reference/terrain.md#edits), as an
    /// `edit` input stamped with the next tick would: events it causes carry that tick. A chunk
    /// that is not built refuses (the `world.terrain.edit.refused` event is emitted too):
    /// [`GameError::Terrain`].
    pub fn edit(
        &mut self,
        at: crate::grid::Position,
        height: u16,
        material: Option<u8>,
    ) -> Result<(), GameError> {
        at.check().map_err(|p| GameError::Invalid(p.under("at")))?;
        let terrain = self
            .engine
            .service::<dyn TerrainService>(TERRAIN)
            .ok_or_else(|| GameError::Terrain(format!("the scene does not enable {TERRAIN}")))?;
        let stamp = self.engine.tick_count() + 1;
        self.engine
            .input(stamp, |_| terrain.edit(at, height, material))
            .map_err(|reason| GameError::Terrain(format!("edit refused: {reason}")))
    }

    /// The held tickets, in id order.
    pub fn tickets(&self) -> Vec<TicketInfo> {
        self.streaming
            .as_ref()
            .map(|s| s.tickets())
            .unwrap_or_default()
    }

    /// Whether `entity` is an anchor whose focus is ready (docs/reference/streaming.md#readiness).
    pub fn ready(&self, entity: &str) -> bool {
        self.streaming
            .as_ref()
            .is_some_and(|s| s.ready(&crate::host::EntityId::new(entity)))
    }

    /// Ticks (applying no inputs) until `entity`'s focus is ready, at most `max_ticks` ticks:
    /// the loading gate before play. Returns the ticks run, or an error when it never got ready.
    pub fn run_until_ready(&mut self, entity: &str, max_ticks: u64) -> Result<u64, GameError> {
        self.require_streaming()?;
        self.run_until_ready_with(entity, max_ticks, &Inputs::default())
    }

    /// [`Game::run_until_ready`] applying `inputs` with the run loop of
    /// docs/reference/tick.md#inputs-before-ticks on the way.
    pub fn run_until_ready_with(
        &mut self,
        entity: &str,
        max_ticks: u64,
        inputs: &Inputs,
    ) -> Result<u64, GameError> {
        let start = self.engine.tick_count();
        let target = start.saturating_add(max_ticks);
        let mut next = 0;
        while !self.ready(entity) {
            if self.engine.tick_count() >= target {
                return Err(GameError::NotReady {
                    entity: entity.to_owned(),
                    ticks: max_ticks,
                });
            }
            next = self.apply_due(inputs, next)?;
            self.engine.tick();
        }
        Ok(self.engine.tick_count() - start)
    }

    fn require_streaming(&self) -> Result<Rc<dyn StreamingService>, GameError> {
        self.streaming
            .clone()
            .ok_or_else(|| GameError::Streaming(format!("the scene does not enable {STREAMING}")))
    }

    /// Applies the inputs from `next` stamped at most `counter + 1`; returns the next index.
    fn apply_due(&mut self, inputs: &Inputs, mut next: usize) -> Result<usize, GameError> {
        while let Some(line) = inputs.lines.get(next) {
            if line.input.tick > self.engine.tick_count() + 1 {
                break;
            }
            next += 1;
            self.apply_in(&line.input, inputs)
                .map_err(|e| GameError::Input {
                    file: inputs.file.clone(),
                    line: line.line,
                    message: e.to_string(),
                })?;
        }
        Ok(next)
    }

    /// The run loop of docs/reference/tick.md#inputs-before-ticks: while the tick counter is below
    /// `target`, apply every input stamped at most `counter + 1` (re-reading the counter after
    /// each), then run the next tick.
    pub fn run(&mut self, inputs: &Inputs, target: u64) -> Result<(), GameError> {
        self.run_with(inputs, target, |_: &Engine, _| {})
    }

    /// [`Game::run`], calling `after_tick(engine, cost)` after every tick with the wall-clock time
    /// the tick took (for progress bars, profiles and recordings; the simulation never reads it).
    /// The wasm build has no clock: there the cost is not measured and reads as zero
    /// (docs/reference/web.md#no-clock).
    pub fn run_with(
        &mut self,
        inputs: &Inputs,
        target: u64,
        mut after_tick: impl FnMut(&Engine, std::time::Duration),
    ) -> Result<(), GameError> {
        self.run_observing(inputs, target, |game, cost| after_tick(game.engine(), cost))
    }

    /// [`Game::run_with`], handing `after_tick` the whole game (its state, its service), as the
    /// replay viewer needs.
    pub fn run_observing(
        &mut self,
        inputs: &Inputs,
        target: u64,
        mut after_tick: impl FnMut(&Game, std::time::Duration),
    ) -> Result<(), GameError> {
        self.run_while(inputs, target, |game, cost| {
            after_tick(game, cost);
            true
        })
    }

    /// [`Game::run_observing`], stopping after the first tick for which `after_tick` answers
    /// false (a replay stops at its first divergence).
    pub fn run_while(
        &mut self,
        inputs: &Inputs,
        target: u64,
        mut after_tick: impl FnMut(&Game, std::time::Duration) -> bool,
    ) -> Result<(), GameError> {
        let mut next = 0;
        while self.engine.tick_count() < target {
            next = self.apply_due(inputs, next)?;
            if self.engine.tick_count() >= target {
                break;
            }
            let cost = timed(|| self.engine.tick());
            if !after_tick(self, cost) {
                break;
            }
        }
        Ok(())
    }

    /// The state document of docs/reference/files-and-cli.md#the-state-document.
    pub fn state(&self) -> StateDoc {
        let s = self.streaming.as_ref();
        let active = self.engine.active_scene().is_some();
        let mut dormant: Vec<String> = self
            .engine
            .world()
            .iter()
            .filter(|e| e.has_tag(DORMANT))
            .map(|e| e.id.as_str().to_owned())
            .collect();
        dormant.sort();
        StateDoc {
            tick: self.engine.tick_count(),
            scene: self.engine.active_scene().map(|s| s.id.clone()),
            focus: s
                .and_then(|s| s.focus())
                .filter(|_| active)
                .map(|f| FocusXZ { x: f.x, z: f.z }),
            foci: s
                .filter(|_| active)
                .map(|s| {
                    s.foci()
                        .into_iter()
                        .map(|f| FocusXZ { x: f.x, z: f.z })
                        .collect()
                })
                .unwrap_or_default(),
            tickets: s.map(|s| s.tickets()).unwrap_or_default(),
            predicted: s.and_then(|s| s.predicted()).map(|list| {
                list.into_iter()
                    .filter(|_| active)
                    .map(|f| FocusXZ { x: f.x, z: f.z })
                    .collect()
            }),
            lod: s.and_then(|s| s.lod()),
            loaded: s.map(|s| s.loaded()).unwrap_or_default(),
            pending: s.map(|s| s.pending()).unwrap_or_default(),
            refusals: s.map(|s| s.refusals()).unwrap_or_default(),
            variables: self
                .engine
                .variables()
                .iter()
                .map(|(k, v)| (k.to_owned(), v.clone()))
                .collect(),
            dormant,
            district: self
                .engine
                .service::<dyn DistrictService>(DISTRICT)
                .map(|d| crate::files::state::DistrictCounts {
                    live: d.live() as u64,
                    stored: d.stored() as u64,
                }),
            sections: s.is_some_and(|s| s.vertical().is_some()),
        }
    }

    /// Saves the game atomically to `path`: the engine, every kit's section and each Lua mod's
    /// `storage` and `math.random` state. A mod whose `storage` cannot be saved (not plain data,
    /// too large) is an error naming the mod and where, and nothing is written.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        let bytes = self.save_bytes(&display_name(path))?;
        write_atomic(path, &bytes)
    }

    /// The save as text: byte for byte what [`Game::save`] writes to a file, with the same
    /// checks (docs/reference/engines.md#saves-as-text); a problem names the save
    /// [`SAVE_TEXT_NAME`].
    pub fn save_text(&self) -> Result<String, FileError> {
        let bytes = self.save_bytes(SAVE_TEXT_NAME)?;
        Ok(String::from_utf8(bytes).expect("JSON is UTF-8"))
    }

    /// The bytes of a save, `file` naming it in messages: what [`Game::save`] writes and
    /// [`Game::save_text`] returns.
    fn save_bytes(&self, file: &str) -> Result<Vec<u8>, FileError> {
        self.engine.flush().map_err(|message| FileError::Io {
            file: file.to_owned(),
            message: format!("cannot save: {message}"),
        })?;
        let mut doc = self.engine.save_document();
        for m in &self.lua_mods {
            doc.mods.push(m.save().map_err(|message| FileError::Io {
                file: file.to_owned(),
                message: format!("cannot save Lua mod {}: {message}", m.id()),
            })?);
        }
        let mut bytes = serde_json::to_vec_pretty(&doc).expect("plain data");
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Loads a save from `path`; on any problem the game is unchanged. Restoring emits no event
    /// and asks no hook; `onChunk` subscribers are told the difference (see
    /// [`StreamingService::on_chunk`]). A save holding Lua mod
    /// states must hold one per Lua mod of this game, with the same ids in the same order; their
    /// `storage` and `math.random` state replace the mods' own. A save without (`mods` absent)
    /// leaves the mods' state as it is.
    pub fn load(&mut self, path: &Path) -> Result<(), FileError> {
        let file = display_name(path);
        let text = read_text(path)?;
        self.load_read(&text, &file)
    }

    /// Loads a save given as text (what [`Game::save_text`] returns, or a save file's bytes):
    /// every check of [`Game::load`] — the size cap of a file included — and on any problem
    /// the game is unchanged (docs/reference/engines.md#saves-as-text). A problem names the
    /// save [`SAVE_TEXT_NAME`].
    pub fn load_text(&mut self, text: &str) -> Result<(), FileError> {
        within_file_cap(text, SAVE_TEXT_NAME)?;
        self.load_read(text, SAVE_TEXT_NAME)
    }

    /// [`Game::load`] of a save's text, read (`file` names it in messages).
    fn load_read(&mut self, text: &str, file: &str) -> Result<(), FileError> {
        let (doc, world, prepared) = self.check_save_read(text, file)?;
        let invalid = |p: Problem| FileError::invalid(file, p);
        let lua_mods = &self.lua_mods;
        // The mods get their state back before the kits tell subscribers (Lua `onChunk`
        // callbacks included) what the load changed.
        self.engine
            .load_parsed_then(doc, world, || {
                for (m, p) in lua_mods.iter().zip(prepared) {
                    m.commit(p);
                }
            })
            .map_err(invalid)
    }

    /// Checks the save at `path` exactly as [`Game::load`] would — the same reading, the same
    /// checks in the same order, so the same first problem — and changes nothing: `Ok` when
    /// loading it into this game would succeed. (`world-streaming check SCENE SAVE` is this.)
    pub fn check_save(&self, path: &Path) -> Result<(), FileError> {
        let file = display_name(path);
        let text = read_text(path)?;
        let (doc, world, _) = self.check_save_read(&text, &file)?;
        self.engine
            .check_parsed(doc, world)
            .map_err(|p| FileError::invalid(&file, p))
    }

    /// What [`Game::load`], [`Game::load_text`] and [`Game::check_save`] check first, once the
    /// save's text is read (`file` names it): the save on its own — what `check` of a save
    /// checks ([`crate::files::save::check_with`]: the host's part with the Lua mods' storage,
    /// each section by its kit's check) — then its Lua mods' states against this game's mods.
    #[allow(clippy::type_complexity)]
    fn check_save_read(
        &self,
        text: &str,
        file: &str,
    ) -> Result<
        (
            crate::host::save::SaveDoc,
            crate::host::World,
            Vec<mods::lua::PreparedModState>,
        ),
        FileError,
    > {
        let value = parse_json(text, file)?;
        let invalid = |p: Problem| FileError::invalid(file, p);
        let (doc, world) = crate::host::save::check_alone(
            &value,
            mods::lua::check_storage,
            self.engine.save_checks(),
        )
        .map_err(invalid)?;
        let prepared = self.prepare_mods(&value).map_err(invalid)?;
        Ok((doc, world, prepared))
    }

    /// Checks the `mods` of a save against this game's Lua mods and builds their storage.
    fn prepare_mods(&self, value: &Value) -> Result<Vec<mods::lua::PreparedModState>, Problem> {
        let Some(list) = value.get("mods") else {
            return Ok(Vec::new());
        };
        let saved: Vec<crate::files::save::ModSave> = crate::json::from_value(list, "mods")?;
        let ids = |it: &mut dyn Iterator<Item = &str>| it.collect::<Vec<_>>().join(", ");
        let mine = ids(&mut self.lua_mods.iter().map(|m| m.id().as_str()));
        let theirs = ids(&mut saved.iter().map(|m| m.id.as_str()));
        if mine != theirs || saved.len() != self.lua_mods.len() {
            return Err(Problem::new(
                "mods",
                format!(
                    "the save holds the state of the Lua mods [{theirs}]; this game runs [{mine}]"
                ),
            ));
        }
        self.lua_mods
            .iter()
            .zip(&saved)
            .enumerate()
            .map(|(i, (m, s))| m.prepare(s, &format!("mods[{i}]")))
            .collect()
    }
}

/// The name a save given as text ([`Game::save_text`], [`Game::load_text`]) has in messages, as
/// a file's path names a save file (`save: line 1 column 1: expected value`).
pub const SAVE_TEXT_NAME: &str = "save";

/// `text` as the text of a file: refused with a file's words when it is longer than a file may
/// be ([`crate::files::MAX_FILE_BYTES`]).
fn within_file_cap(text: &str, file: &str) -> Result<(), FileError> {
    let limit = crate::files::MAX_FILE_BYTES;
    if text.len() as u64 > limit {
        return Err(FileError::Read(crate::user_file::ReadError::TooLarge {
            file: file.to_owned(),
            limit,
        }));
    }
    Ok(())
}

/// Runs `f`, returning the wall-clock time it took; on the wasm build, which has no clock
/// (`Instant::now` panics there), zero: not measured (docs/reference/web.md#no-clock).
fn timed(f: impl FnOnce()) -> std::time::Duration {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let start = std::time::Instant::now();
        f();
        start.elapsed()
    }
    #[cfg(target_arch = "wasm32")]
    {
        f();
        std::time::Duration::ZERO
    }
}

fn engine_error(file: &str, e: EngineError) -> FileError {
    match e {
        EngineError::Config(p) => FileError::invalid(file, p),
        other => FileError::invalid(file, Problem::new("", other.to_string())),
    }
}
