//! `world.district` (docs/reference/district.md): entities that stream with their chunks. District
//! files (JSON Lines) are indexed at start by home chunk, as file offsets; a chunk's entities are
//! spawned when it loads (before `world.chunk.loaded` and the `onChunk` callbacks) and stored when
//! it is released (after them); only differences from the district files are kept, in memory and in
//! game saves.
//!
//! - [`config`]: the district files and the world directory; [`events`]: the names of the
//!   events it emits, their payloads, and reading them back ([`DistrictEvent`]);
//! - [`index`]: the pure JSON Lines reader and the index by home chunk;
//! - `state.rs`: live entities by chunk, kept differences, materialise and store;
//! - `save.rs`: the save section;
//! - `region.rs`: the district kind of region file (pure); `persist.rs`: the write-back to the
//!   world directory (`worldDir`);
//! - [`service`]: what mods and the game ask of the kit;
//! - this file: the kit, which subscribes to the streaming kit's load and release stages.

pub mod config;
pub mod events;
pub mod index;
#[cfg(feature = "lua")]
mod lua;
mod persist;
mod region;
mod save;
pub mod service;
mod state;
mod view;

use std::cell::RefCell;
use std::io::BufReader;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use crate::grid::{ChunkPos, Grid};
use crate::host::{
    Ctx, EntityId, Event, Install, Kit, KitError, KitManifest, KitSpec, PreparedSection, Problem,
    SceneDef, Services,
};
use crate::json::from_value;
use crate::kits::streaming::{ChunkStage, ChunkSubscription, StreamingService, STREAMING};

use crate::worlddir::store::{Fs, GameToken, RealFs, Store, GAME_TOKEN};
pub use config::{DistrictConfig, DistrictEntry};
pub use events::{DistrictEvent, ERROR, MATERIALISED, STORED};
pub use persist::DistrictStoreError;
pub use region::{ChunkRecord, District, DistrictStamp};
pub use save::SaveSection;
pub use service::DistrictService;
use state::State;
pub use state::{PERSISTENT, STREAMED};

/// One district region file as found on disk (`world inspect`, `world verify`).
pub type DistrictReport = crate::worlddir::store::RegionReport<District>;

/// Reads every district region file of `dir` (files named `d.<x>.<z>.wsd`; others are
/// ignored), in region order. Reading is all it does: no lock is taken, nothing is created.
pub fn read_dir(dir: &std::path::Path) -> Result<Vec<DistrictReport>, DistrictStoreError> {
    crate::worlddir::store::read_dir::<District>(dir)
}

/// The kit and service id.
pub const DISTRICT: &str = "world.district";
/// Variable: live streamed entities.
pub const VAR_LIVE: &str = "world.district.live";
/// Variable: stored entities.
pub const VAR_STORED: &str = "world.district.stored";

/// Checks a `world.district` save section on its own (the catalog's
/// [`crate::host::SaveCheck`]): its shape. Its lines, stamps and entities are checked against
/// the district files when it is loaded.
pub fn check_save_section(
    section: &Value,
    _save: &crate::host::SaveFacts<'_>,
) -> Result<(), Problem> {
    parse_save_section(section).map(drop)
}

/// A section read as [`SaveSection`]: what both `check` and a load check first.
fn parse_save_section(section: &Value) -> Result<SaveSection, Problem> {
    from_value(section, &format!("kits.{DISTRICT}"))
}

/// The kit's manifest, read from `kit.json` beside this file.
pub fn manifest() -> KitManifest {
    serde_json::from_str(include_str!("kit.json")).expect("kit.json is a valid manifest")
}

/// The kit's entry of the catalog: its manifest, factory, schemas (a district file's line
/// among them), save check, Lua table and viewer layer.
pub fn entry() -> crate::host::CatalogEntry {
    let entry = crate::host::CatalogEntry::new(manifest(), Box::new(DistrictKit::from_spec))
        .config_schema("district-config.schema.json", || {
            schemars::schema_for!(DistrictConfig)
        })
        .save_schema("district-save.schema.json", || {
            schemars::schema_for!(SaveSection)
        })
        .file_schema("district-line.schema.json", || {
            schemars::schema_for!(crate::host::Entity)
        })
        .save_check(check_save_section)
        .view(view::LAYER);
    #[cfg(feature = "lua")]
    let entry = entry.lua(lua::TABLE);
    entry
}

/// The `world.district` kit.
pub struct DistrictKit {
    /// The district files: each one's scene and name, as the config gives it.
    files: Vec<(u16, String)>,
    /// Where they are read from (the scene's directory, or files given as text).
    source: crate::scene_files::SceneFiles,
    /// `worldDir`, resolved, and `flushEveryTicks`.
    world_dir: Option<PathBuf>,
    every: u64,
    /// What the save thread writes with (the tests' seam).
    fs: Arc<dyn Fs>,
    state: Rc<RefCell<State>>,
    subscriptions: Vec<ChunkSubscription>,
    streaming: Option<Rc<dyn StreamingService>>,
    published: Option<(usize, u64)>,
}

impl DistrictKit {
    /// The catalog factory: the config checked, each district's scene resolved.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        Self::from_spec_with_fs(spec, Arc::new(RealFs))
    }

    /// [`DistrictKit::from_spec`], its save thread writing through `fs` (a test's failing file
    /// system).
    pub fn from_spec_with_fs(
        spec: &KitSpec<'_>,
        fs: Arc<dyn Fs>,
    ) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let config: DistrictConfig = match spec.config {
            None => DistrictConfig::default(),
            Some(v) => from_value(v, &spec.config_path).map_err(|p| vec![p])?,
        };
        let mut problems = Vec::new();
        let world_dir = match config.world_dir.as_deref() {
            Some(_) if cfg!(target_arch = "wasm32") => {
                problems.extend(crate::worlddir::refuse_without_file_system(
                    &crate::json::join_path(&spec.config_path, "worldDir"),
                ));
                None
            }
            Some("") => {
                problems.push(Problem::new(
                    crate::json::join_path(&spec.config_path, "worldDir"),
                    "expected a directory path, got an empty string",
                ));
                None
            }
            Some(dir) => Some(crate::worlddir::resolve(dir, spec.base_dir)),
            None => None,
        };
        // Homes follow the streaming kit's config `vertical`, indexed once at start
        // (docs/reference/district.md#homes-in-a-vertical-world): a scene layer may not change it.
        for (i, scene) in spec.scenes.iter().enumerate() {
            let layer = scene.layers.get(STREAMING);
            if layer.and_then(|l| l.get("vertical")).is_some() {
                problems.push(Problem::new(
                    format!("{}.vertical", KitSpec::layer_path(i, STREAMING)),
                    "expected no `vertical` in a scene layer with world.district: homes are \
                     indexed at start with the streaming kit's config `vertical`",
                ));
            }
        }
        let scenes: Vec<String> = spec.scenes.iter().map(|s| s.id.clone()).collect();
        let mut files = Vec::new();
        for (i, d) in config.districts.iter().enumerate() {
            let (scene, file) = d.parts();
            let index = match scene {
                None => 0,
                Some(name) => match scenes.iter().position(|s| s == name) {
                    Some(i) => i,
                    None => {
                        problems.push(Problem::new(
                            format!("{}.districts[{i}].scene", spec.config_path),
                            format!(
                                "no scene {name:?} in this scene file; scenes: {}",
                                scenes.join(", ")
                            ),
                        ));
                        continue;
                    }
                },
            };
            files.push((index as u16, file.to_owned()));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let state = State {
            grid: Grid::new(32.0),
            height: None,
            index: index::Index::default(),
            files: Vec::new(),
            scenes,
            active: None,
            last: None,
            live: FxHashMap::default(),
            by_chunk: Default::default(),
            records: Default::default(),
            stored_ids: Default::default(),
            gone: Default::default(),
            stored: 0,
            check: Default::default(),
            data: FxHashMap::default(),
            pending: Vec::new(),
            errors: Vec::new(),
            persist: None,
            dirty: Default::default(),
            released: false,
            scene_copies_pending: false,
        };
        Ok(Box::new(DistrictKit {
            files,
            source: spec.files.clone(),
            world_dir,
            every: config.flush_every_ticks.get(),
            fs,
            state: Rc::new(RefCell::new(state)),
            subscriptions: Vec::new(),
            streaming: None,
            published: None,
        }))
    }

    /// The bytes the district index holds (the benchmarks' bytes per unloaded entity).
    pub fn index_bytes(&self) -> usize {
        self.state.borrow().index.heap_bytes()
    }

    /// With `worldDir`: FNV-1a 64 (16 hex digits) of the district records last sent to the
    /// directory (as the directory was read, at start or by a load, before the first write):
    /// what a save records, and what tests compare a directory with.
    pub fn image_digest(&self) -> Option<String> {
        self.state
            .borrow()
            .image_digest()
            .map(|(_, h)| format!("{h:016x}"))
    }

    /// The kit's two chunk steps on their own (the benchmarks time each alone).
    pub fn chunk_steps(&self) -> ChunkSteps {
        ChunkSteps(self.state.clone())
    }

    /// Opens the world directory: its lock taken (or shared with this game's terrain kit), its
    /// district records read and taken as the kept differences; the damage found is reported
    /// as `world.district.error` events on the first tick.
    fn open_world_dir(
        &mut self,
        services: &Services,
        dir: PathBuf,
        chunk_size: f64,
    ) -> Result<(), KitError> {
        let mut st = self.state.borrow_mut();
        let stamp = DistrictStamp::of(&st.index.stamps, &st.scenes, chunk_size);
        let game = services.get::<GameToken>(GAME_TOKEN);
        let started = Store::<region::District>::start_for(
            Some(dir.clone()),
            stamp,
            self.fs.clone(),
            game.as_deref(),
        );
        let files: Vec<String> = st
            .index
            .stamps
            .iter()
            .map(|s| {
                let scene = st.scenes.get(s.scene as usize).map_or("", String::as_str);
                format!("{} (scene {:?})", s.file, crate::escape::escape(scene))
            })
            .collect();
        let (store, damage) = started.map_err(|e| match e {
            DistrictStoreError::Locked { dir, lock } => KitError::InUse {
                kit: DISTRICT.into(),
                what: "world directory".into(),
                dir,
                lock,
            },
            e @ DistrictStoreError::Stamp { .. } => Self::start_error(format!(
                "{e}; this scene's district files: {} (a district file changed under the \
                 differences kept for it, or was moved to another scene)",
                files.join(", ")
            )),
            e => Self::start_error(e.to_string()),
        })?;
        let image = store
            .snapshot()
            .map_err(|e| Self::start_error(e.to_string()))?;
        st.persist = Some(persist::Persist {
            store,
            stamp,
            dir: dir.to_string_lossy().into_owned(),
            image: image.clone(),
            every: self.every,
            outcome: None,
            failing: false,
            closed: false,
        });
        st.errors
            .extend(damage.into_iter().map(|r| (r.chunk, r.message)));
        let problems = st.take_image(&image, false);
        st.errors.extend(problems);
        // The scene's entities are in the world at the first enter: their copies are dropped.
        st.scene_copies_pending = true;
        Ok(())
    }

    /// Whether `c` is loaded now.
    fn loaded_fn(&self) -> impl Fn(ChunkPos) -> bool {
        let streaming = self.streaming.clone();
        move |c| streaming.as_ref().is_some_and(|s| s.is_loaded(c))
    }

    /// The write-back of the tick's end (the policy,
    /// docs/reference/district.md#district-persistence, docs/reference/world-dir.md#write-back): on
    /// a multiple of `flushEveryTicks`, hears the last write back's outcome, periodic or on release
    /// (each region not written is a `world.district.error`) and sends every change (with the
    /// regions to try again); on another tick that released or stored into a chunk, sends every
    /// change.
    fn write_back(&mut self, ctx: &mut Ctx<'_>) {
        let loaded = self.loaded_fn();
        let mut st = self.state.borrow_mut();
        let Some(p) = st.persist.as_mut() else {
            return;
        };
        let periodic = p.every > 0 && ctx.tick.is_multiple_of(p.every);
        if periodic {
            if let Some(outcome) = p.outcome.take() {
                let result = outcome.wait();
                p.failing = result.is_err();
                if let Err(DistrictStoreError::Unsaved { failures, .. }) = result {
                    for f in failures {
                        let origin = f.region.origin();
                        let error = DistrictEvent::WriteError {
                            origin,
                            message: format!(
                                "cannot write {}: {}; its differences are kept in memory and \
                                 written at the next write back",
                                f.file, f.message
                            ),
                            region: f.file,
                            chunks: f.chunks as u64,
                        };
                        ctx.events.emit(ERROR, error.data());
                    }
                }
            }
            let changes = st.changes(ctx.world, &loaded);
            let p = st.persist.as_mut().expect("checked above");
            if changes.is_empty() && !p.failing {
                return;
            }
            p.outcome = Some(p.store.write_then(changes));
        } else if st.released {
            let changes = st.changes(ctx.world, &loaded);
            if !changes.is_empty() {
                // Its outcome is heard at the next periodic write back, in place of the
                // earlier one's: each write tries every region not written yet, so the
                // latest outcome names every region still failing.
                let p = st.persist.as_mut().expect("checked above");
                p.outcome = Some(p.store.write_then(changes));
            }
        }
    }

    /// The last write back (a game's close): every change written and waited for, after which
    /// dropping the kit writes nothing. The error lists the regions whose differences are
    /// lost, with how many chunks each.
    pub fn close(&self, world: &crate::host::World) -> Result<(), DistrictStoreError> {
        let loaded = self.loaded_fn();
        let mut st = self.state.borrow_mut();
        let result = st.flush_now(world, &loaded);
        if let Some(p) = st.persist.as_mut() {
            p.closed = true;
        }
        result
    }

    /// Writes back every change and waits until it is on disk (what a game save does first).
    pub fn flush(&self, world: &crate::host::World) -> Result<(), DistrictStoreError> {
        let loaded = self.loaded_fn();
        self.state.borrow_mut().flush_now(world, &loaded)
    }

    fn start_error(message: String) -> KitError {
        KitError::Start {
            kit: DISTRICT.into(),
            message,
        }
    }

    fn publish(&mut self, ctx: &mut Ctx<'_>) {
        let st = self.state.borrow();
        let now = (st.live.len(), st.stored);
        if self.published != Some(now) {
            ctx.variables.set(VAR_LIVE, now.0 as u64);
            ctx.variables.set(VAR_STORED, now.1);
            self.published = Some(now);
        }
    }

    fn emit_errors(state: &RefCell<State>, emit: &mut dyn FnMut(&'static str, Value)) {
        let (errors, vertical) = {
            let mut st = state.borrow_mut();
            (std::mem::take(&mut st.errors), st.height.is_some())
        };
        for (c, message) in errors {
            emit(
                ERROR,
                DistrictEvent::ReadError { chunk: c, message }.value_in(vertical),
            );
        }
    }
}

impl Kit for DistrictKit {
    fn id(&self) -> &str {
        DISTRICT
    }

    fn install(&mut self, host: &mut Install<'_>) {
        let handle: Rc<dyn DistrictService> = Rc::new(Handle(self.state.clone()));
        host.services.provide(DISTRICT, handle);
        host.variables.set(VAR_LIVE, 0u64);
        host.variables.set(VAR_STORED, 0u64);
        // The world directory's owner, shared with the game's other kits.
        if host.services.get::<GameToken>(GAME_TOKEN).is_none() {
            host.services.provide(GAME_TOKEN, Rc::new(GameToken::new()));
        }
    }

    fn start(&mut self, services: &Services) -> Result<(), KitError> {
        let streaming = services
            .get::<dyn StreamingService>(STREAMING)
            .ok_or_else(|| KitError::MissingService {
                kit: DISTRICT.into(),
                service: STREAMING.into(),
            })?;
        let grid = Grid::new(streaming.chunk_size());
        // Homes are sections with `vertical` on (docs/reference/district.md#homes-in-a-vertical-world).
        let height = streaming.vertical().map(|v| v.height);
        if let (Some(_), Some(_)) = (height, &self.world_dir) {
            return Err(Self::start_error(
                "config.worldDir: expected no worldDir with `vertical` on (district region \
                 files keep chunks (x, z), not sections; keep the differences in game saves: \
                 leave worldDir out)"
                    .into(),
            ));
        }
        let mut builder = index::Builder::new(grid).vertical(height);
        let mut handles = Vec::new();
        for (scene, file) in &self.files {
            let name = self.source.name(file);
            // Read through the scene's files (its directory, or files given as text). On disk,
            // a regular file, checked before and after opening (a FIFO swapped in between
            // never blocks the start); the index reads it through its own cap. A file that
            // cannot be opened is an error told with the others
            // (docs/reference/files-and-cli.md#check: every error found). A file that says it is
            // past the cap is refused unread (the read stops at the cap all the same, should it
            // grow).
            let cap = crate::limits::MAX_DISTRICT_BYTES;
            let opened = self
                .source
                .open(file)
                .map_err(|e| format!("{e} (a district file)"))
                .and_then(|(file, len)| {
                    if len > cap {
                        return Err(format!(
                            "{name}: the file is larger than the district file limit ({cap} \
                             bytes)"
                        ));
                    }
                    let reader = file.try_clone().map_err(|e| format!("{name}: {e}"))?;
                    Ok((file, reader))
                });
            match opened {
                Ok((file, reader)) => {
                    builder.add(
                        *scene,
                        &name,
                        BufReader::with_capacity(1 << 16, reader),
                        cap,
                    );
                    handles.push(RefCell::new(file));
                }
                Err(message) => builder.file_error(*scene, &name, message),
            }
        }
        let index = builder.finish().map_err(|errors| {
            let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
            let total = errors
                .iter()
                .map(|e| match e {
                    index::IndexError::More(n) => *n,
                    _ => 1,
                })
                .sum::<usize>();
            // One line (messages are escaped for the terminal, a newline included).
            Self::start_error(match &lines[..] {
                [one] => one.clone(),
                _ => format!("{total} errors in the district files: {}", lines.join("; ")),
            })
        })?;
        {
            let mut st = self.state.borrow_mut();
            st.grid = grid;
            st.height = height;
            st.stored = index.len() as u64;
            st.index = index;
            st.files = handles;
        }
        if let Some(dir) = self.world_dir.clone() {
            self.open_world_dir(services, dir, streaming.chunk_size())?;
        }
        let st = self.state.clone();
        self.subscriptions.push(streaming.on_chunk_stage(
            ChunkStage::BeforeLoaded,
            Box::new(move |ctx, chunk, _| {
                let (c, n) = st.borrow_mut().materialise(ctx.world(), chunk);
                DistrictKit::emit_errors(&st, &mut |e, d| ctx.emit(e, d));
                if n > 0 {
                    let count = n as u64;
                    let vertical = st.borrow().height.is_some();
                    ctx.emit(
                        MATERIALISED,
                        DistrictEvent::Materialised { chunk: c, count }.value_in(vertical),
                    );
                }
            }),
        ));
        let st = self.state.clone();
        self.subscriptions.push(streaming.on_chunk_stage(
            ChunkStage::AfterUnloaded,
            Box::new(move |ctx, chunk, _| {
                let (c, n) = st.borrow_mut().release(ctx.world(), chunk);
                if n > 0 {
                    let vertical = st.borrow().height.is_some();
                    ctx.emit(
                        STORED,
                        DistrictEvent::Stored {
                            chunk: c,
                            count: n as u64,
                        }
                        .value_in(vertical),
                    );
                }
            }),
        ));
        self.streaming = Some(streaming);
        Ok(())
    }

    fn on_enter(&mut self, scene: &SceneDef, ctx: &mut Ctx<'_>) {
        let mut st = self.state.borrow_mut();
        if std::mem::take(&mut st.scene_copies_pending) {
            st.drop_scene_copies(ctx.world);
        }
        let i = st
            .scenes
            .iter()
            .position(|s| *s == scene.id)
            .map(|i| i as u16);
        st.active = i;
        st.last = i;
    }

    fn on_leave(&mut self, _ctx: &mut Ctx<'_>) {
        self.state.borrow_mut().active = None;
    }

    fn on_event(&mut self, _event: &Event, ctx: &mut Ctx<'_>) {
        State::apply_pending(&self.state, ctx.world);
    }

    fn on_entities_changed(&mut self, changed: &[EntityId], ctx: &mut Ctx<'_>) {
        self.state.borrow_mut().changed(changed, ctx.world);
        State::apply_pending(&self.state, ctx.world);
    }

    fn begin_tick(&mut self, ctx: &mut Ctx<'_>) {
        DistrictKit::emit_errors(&self.state, &mut |e, d| ctx.events.emit(e, d));
        State::apply_pending(&self.state, ctx.world);
    }

    fn end_tick(&mut self, ctx: &mut Ctx<'_>) {
        State::apply_pending(&self.state, ctx.world);
        let streaming = self.streaming.clone();
        let loaded = |c: ChunkPos| streaming.as_ref().is_some_and(|s| s.is_loaded(c));
        let stored = self.state.borrow_mut().end_tick(ctx.world, loaded);
        let vertical = self.state.borrow().height.is_some();
        for (c, n) in stored {
            let stored = DistrictEvent::Stored {
                chunk: c,
                count: n as u64,
            };
            ctx.events.emit(STORED, stored.value_in(vertical));
        }
        self.write_back(ctx);
        self.publish(ctx);
    }

    fn flush_world(&self, world: &crate::host::World) -> Result<(), String> {
        DistrictKit::flush(self, world).map_err(|e| e.to_string())
    }

    fn save_version(&self) -> u32 {
        crate::host::save::ROUND3_SAVE_VERSION
    }

    fn save(&self) -> Option<Value> {
        Some(serde_json::to_value(self.state.borrow().save_section()).expect("plain data"))
    }

    fn prepare_load(
        &self,
        section: Option<&Value>,
        _scene: Option<&SceneDef>,
        save: &crate::host::SaveFacts<'_>,
    ) -> Result<Option<PreparedSection>, Problem> {
        let path = format!("kits.{DISTRICT}");
        let Some(section) = section else {
            return Ok(None); // an older save: the district files as they are
        };
        // check_save_section's check, then what needs this game's district files.
        let parsed = parse_save_section(section)?;
        let (saved_dir, saved_image) = (parsed.world_dir.clone(), parsed.image.clone());
        let st = self.state.borrow();
        let mut prepared = st
            .check_section(parsed, save.world)
            .map_err(|p| p.under(&path))?;
        // A save belongs to its world: it loads into a game on the same world directory (or,
        // both without one, carrying its differences), and that directory must still hold
        // what the save found there.
        let ours = st.persist.as_ref().map(|p| p.dir.clone());
        if !crate::worlddir::same_dir(saved_dir.as_deref(), ours.as_deref()) {
            let name =
                |d: &Option<String>| d.as_deref().map_or("none".to_owned(), |d| format!("{d:?}"));
            return Err(Problem::new(
                format!("{path}.worldDir"),
                format!(
                    "this save's world directory is {}, this game's is {}: load it into a game \
                     of the same scene",
                    name(&saved_dir),
                    name(&ours)
                ),
            ));
        }
        if let Some(p) = st.persist.as_ref() {
            let opened = p
                .store
                .peek(PathBuf::from(&p.dir))
                .map_err(|e| Problem::new(format!("{path}.worldDir"), e.to_string()))?;
            let now = format!("{:016x}", region::digest(&opened.chunks, p.stamp));
            if saved_image.as_deref() != Some(now.as_str()) {
                return Err(Problem::new(
                    format!("{path}.image"),
                    format!(
                        "the world directory {} changed since this save was made (its district \
                         records hash {now}, the save expects {}): a later run wrote to it, or \
                         it is damaged",
                        p.dir,
                        saved_image.as_deref().unwrap_or("none")
                    ),
                ));
            }
            prepared.dir = Some(opened);
        }
        Ok(Some(Box::new(prepared)))
    }

    fn commit_load(&mut self, prepared: Option<PreparedSection>, ctx: &mut Ctx<'_>) {
        let mut st = self.state.borrow_mut();
        let active = ctx
            .scene
            .and_then(|s| st.scenes.iter().position(|x| *x == s.id))
            .map(|i| i as u16);
        let prepared = match prepared.and_then(|p| p.downcast::<save::Prepared>().ok()) {
            Some(p) => *p,
            None => save::Prepared::baseline(st.index.len() as u64, active),
        };
        st.restore(prepared, active, ctx.world);
        self.published = None;
    }
}

impl Drop for DistrictKit {
    fn drop(&mut self) {
        // Write back what was sent (unless closed). Nobody is left to tell of a failure but
        // the terminal; `Game::close` and the CLI report it as an error instead. The changes
        // of the world since the last write back are not known here (the world is not).
        if let Ok(mut st) = self.state.try_borrow_mut() {
            if let Some(p) = st.persist.take() {
                if !p.closed {
                    if let Err(e) = p.store.flush(Vec::new()) {
                        eprintln!("world.district: differences not written back on close: {e}");
                    }
                }
            }
        }
    }
}

/// Whether `name` is a file the kit keeps in a world directory: a district region file
/// (`d.<x>.<z>.wsd`) or the journal (`district.journal`).
pub fn is_world_file(name: &str) -> bool {
    name == region::JOURNAL
        || crate::worlddir::frame::RegionPos::parse_file_name_of::<region::District>(name).is_some()
}

/// The kit's files in world directory `dir` ([`is_world_file`]), sorted; none if it cannot be
/// listed.
pub fn world_files(dir: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| is_world_file(n))
        .collect();
    out.sort();
    out
}

/// The kit's materialise and store steps, called directly: what a chunk load and a chunk release
/// do to the world, without the streaming kit around them and without their events (the
/// benchmarks time each alone).
#[derive(Clone)]
pub struct ChunkSteps(Rc<RefCell<State>>);

impl ChunkSteps {
    /// Spawns `chunk`'s stored entities of the active scene into `world`, as a chunk load does;
    /// how many.
    pub fn materialise(&self, world: &mut crate::host::World, chunk: ChunkPos) -> usize {
        self.0.borrow_mut().materialise(world, chunk).1
    }

    /// Stores `chunk`'s live streamed entities, as a chunk release does; how many.
    pub fn store(&self, world: &mut crate::host::World, chunk: ChunkPos) -> usize {
        self.0.borrow_mut().release(world, chunk).1
    }
}

/// The service handle registered as `world.district`.
struct Handle(Rc<RefCell<State>>);

impl DistrictService for Handle {
    fn live(&self) -> usize {
        self.0.borrow().live.len()
    }

    fn stored(&self) -> usize {
        self.0.borrow().stored as usize
    }

    fn data(&self, id: &EntityId) -> Option<Option<Map<String, Value>>> {
        let st = self.0.borrow();
        if let Some((_, d)) = st.pending.iter().rev().find(|(p, _)| p == id) {
            return Some(d.clone());
        }
        st.data.get(id).cloned()
    }

    fn set(&self, id: &EntityId, data: Option<Map<String, Value>>) -> Result<(), String> {
        if let Some(d) = &data {
            crate::host::check_data(d)?;
        }
        let mut st = self.0.borrow_mut();
        if !st.data.contains_key(id) {
            return Err(format!(
                "no entity `{}` is live",
                crate::escape::escape(id.as_str())
            ));
        }
        st.pending.push((id.clone(), data));
        Ok(())
    }

    fn district_line(&self, id: &EntityId) -> Option<(String, u32)> {
        let st = self.0.borrow();
        let i = st.line_of(id.as_str())?;
        let (file, r) = st.index.line(i);
        Some((st.index.stamps[file as usize].file.clone(), r.line))
    }

    fn reserved(&self, id: &EntityId) -> bool {
        self.0.borrow().reserved(id)
    }
}
