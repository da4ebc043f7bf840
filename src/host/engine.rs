//! The engine: owns the entities, the event bus, hooks, services, variables, scenes and kits, and
//! runs the fixed tick loop. It knows no kit by type; kits are reached through [`Kit`] and services.

use indexmap::IndexMap;
use serde_json::Value;

use super::entity::{EntityError, World};
use super::events::{Event, EventBus};
use super::hooks::Hooks;
use super::kit::{unmet_requirements, Install, Kit, KitCatalog, KitError, KitSpec, Problem};
use super::save::{SaveChecks, SaveDoc, BASE_SAVE_VERSION, SAVE_FORMAT};
use super::scene::SceneDef;
use super::services::Services;
use super::variables::Variables;

/// A [`Ctx`] over the engine's fields, borrowed field by field so `self.kits` stays free.
macro_rules! ctx {
    ($engine:ident) => {
        Ctx {
            tick: $engine.tick,
            world: &mut $engine.world,
            events: &mut $engine.events,
            hooks: &$engine.hooks,
            services: &$engine.services,
            variables: &mut $engine.variables,
            scene: $engine.active.map(|i| &$engine.scenes[i]),
        }
    };
}

/// What a kit sees while it runs.
pub struct Ctx<'a> {
    /// The current tick (events are stamped with it).
    pub tick: u64,
    /// The entities.
    pub world: &'a mut World,
    /// The event bus.
    pub events: &'a mut EventBus,
    /// The hooks, to ask.
    pub hooks: &'a Hooks,
    /// The services of other kits.
    pub services: &'a Services,
    /// The variables.
    pub variables: &'a mut Variables,
    /// The active scene, if any.
    pub scene: Option<&'a SceneDef>,
}

/// Why an engine could not be built or an operation was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The scene file enables a kit the catalog does not have.
    #[error(
        "{path}: kit {} is not installed; installed kits: {known}",
        crate::escape::escape(id)
    )]
    UnknownKit {
        /// JSON path of the kit entry.
        path: String,
        /// The id asked for.
        id: String,
        /// The installed ids.
        known: String,
    },
    /// The same kit is enabled twice.
    #[error("{path}: kit `{}` is enabled twice", crate::escape::escape(id))]
    DuplicateKit {
        /// JSON path of the second entry.
        path: String,
        /// The id.
        id: String,
    },
    /// A kit's config or layer is wrong.
    #[error("{0}")]
    Config(Problem),
    /// A kit's requirement is not met.
    #[error("{0}")]
    Requirement(String),
    /// A kit could not start.
    #[error(transparent)]
    Kit(#[from] KitError),
    /// An entity operation was refused.
    #[error(transparent)]
    Entity(#[from] EntityError),
    /// A scene that does not exist.
    #[error(
        "no such scene `{}`; scenes: {}",
        crate::escape::escape(name),
        crate::escape::escape(known)
    )]
    NoSuchScene {
        /// The name asked for.
        name: String,
        /// The scene ids.
        known: String,
    },
}

/// One kit to enable: its id and config, as a scene file gives them.
#[derive(Debug, Clone)]
pub struct KitEntry {
    /// The kit id.
    pub id: String,
    /// Its config object.
    pub config: Option<Value>,
}

/// A save document checked by [`Engine::check_document`]'s half of a load, ready to commit.
struct PreparedDocument {
    doc: SaveDoc,
    world: World,
    active: Option<usize>,
    prepared: Vec<Option<super::kit::PreparedSection>>,
}

/// The engine host (`game.engine`).
pub struct Engine {
    world: World,
    events: EventBus,
    hooks: Hooks,
    services: Services,
    variables: Variables,
    scenes: Vec<SceneDef>,
    active: Option<usize>,
    kits: Vec<Box<dyn Kit>>,
    /// The catalog's kits with their save checks: which sections a save may hold, and the
    /// check each gets before anything needs this game.
    save_checks: SaveChecks,
    /// The catalog's Lua tables, in catalog order: what every Lua mod of the game gets (each
    /// whose kit's service the game has).
    #[cfg(feature = "lua")]
    lua_tables: Vec<crate::script::LuaTable>,
    /// The catalog's layers of the replay viewer, in catalog order.
    view_layers: Vec<super::view::ViewLayer>,
    tick: u64,
    mod_errors: super::events::ModErrors,
    outbox: super::events::Outbox,
    steps: super::events::Steps,
}

/// The id under which the host itself is listed; it is always present.
pub const ENGINE_KIT: &str = "game.engine";

/// The host's own entry of a catalog: `game.engine` 1.0.0, which kits may require. It is never
/// built as a kit (the engine is the host), takes no config and keeps no save section of a kit.
pub fn engine_entry() -> super::CatalogEntry {
    super::CatalogEntry::new(
        super::KitManifest::simple(ENGINE_KIT, "1.0.0"),
        Box::new(|_| unreachable!("the host is never built as a kit")),
    )
}

impl Engine {
    /// Builds the engine: every kit of `kits` from `catalog`, requirements checked, kits installed
    /// and started. No scene is active yet. Returns every config problem found.
    pub fn new(
        catalog: &KitCatalog,
        kits: &[KitEntry],
        scenes: Vec<SceneDef>,
    ) -> Result<Engine, Vec<EngineError>> {
        Self::new_in(catalog, kits, scenes, std::path::Path::new("."))
    }

    /// [`Engine::new`] for a scene file in `base_dir`: kits resolve relative paths of their
    /// config against it ([`KitSpec::base_dir`]).
    pub fn new_in(
        catalog: &KitCatalog,
        kits: &[KitEntry],
        scenes: Vec<SceneDef>,
        base_dir: &std::path::Path,
    ) -> Result<Engine, Vec<EngineError>> {
        let files = crate::scene_files::SceneFiles::dir(base_dir);
        Self::new_with_files(catalog, kits, scenes, &files)
    }

    /// [`Engine::new`] for a scene whose files come from `files` (its directory, or files given
    /// as text): kits read the files their config names through it ([`KitSpec::files`]) and
    /// resolve the directories they write against [`SceneFiles::base_dir`](crate::scene_files::SceneFiles::base_dir).
    pub fn new_with_files(
        catalog: &KitCatalog,
        kits: &[KitEntry],
        scenes: Vec<SceneDef>,
        files: &crate::scene_files::SceneFiles,
    ) -> Result<Engine, Vec<EngineError>> {
        let base_dir = files.base_dir();
        let mut problems = Vec::new();
        let mut built: Vec<Box<dyn Kit>> = Vec::new();
        let mut manifests = Vec::new();
        let mut seen = IndexMap::new();
        if let Some(m) = catalog.manifest(ENGINE_KIT) {
            manifests.push(m);
        }
        for (i, entry) in kits.iter().enumerate() {
            let path = format!("kits[{i}]");
            if seen.insert(entry.id.clone(), i).is_some() {
                problems.push(EngineError::DuplicateKit {
                    path,
                    id: entry.id.clone(),
                });
                continue;
            }
            let Some(manifest) = catalog.manifest(&entry.id) else {
                problems.push(EngineError::UnknownKit {
                    path: format!("{path}.id"),
                    id: crate::json::describe(&Value::String(entry.id.clone())),
                    known: catalog.ids().collect::<Vec<_>>().join(", "),
                });
                continue;
            };
            if entry.id == ENGINE_KIT {
                // The host itself: always present, and it takes no settings.
                if entry.config.is_some() {
                    problems.push(EngineError::Config(Problem::new(
                        format!("{path}.config"),
                        "game.engine takes no config",
                    )));
                }
                for (i, scene) in scenes.iter().enumerate() {
                    if scene.layers.contains_key(ENGINE_KIT) {
                        problems.push(EngineError::Config(Problem::new(
                            KitSpec::layer_path(i, ENGINE_KIT),
                            "game.engine takes no layer settings",
                        )));
                    }
                }
                continue;
            }
            manifests.push(manifest);
            let spec = KitSpec {
                config: entry.config.as_ref(),
                config_path: format!("{path}.config"),
                scenes: &scenes,
                base_dir,
                files,
            };
            match catalog
                .build(&entry.id, &spec)
                .expect("manifest found above")
            {
                Ok(kit) => built.push(kit),
                Err(list) => problems.extend(list.into_iter().map(EngineError::Config)),
            }
        }
        for (i, scene) in scenes.iter().enumerate() {
            for (kit, _) in &scene.layers {
                if !seen.contains_key(kit) {
                    problems.push(EngineError::Config(Problem::new(
                        format!("scenes[{i}].layers.{kit}"),
                        format!("a layer for kit `{kit}`, which the scene file does not enable"),
                    )));
                }
            }
        }
        problems.extend(
            unmet_requirements(&manifests)
                .into_iter()
                .map(EngineError::Requirement),
        );
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut engine = Engine {
            world: World::new(),
            events: EventBus::default(),
            hooks: Hooks::default(),
            services: Services::default(),
            variables: Variables::default(),
            scenes,
            active: None,
            kits: built,
            save_checks: catalog.save_checks(),
            #[cfg(feature = "lua")]
            lua_tables: catalog.lua_tables().collect(),
            view_layers: catalog.view_layers().collect(),
            tick: 0,
            mod_errors: Default::default(),
            outbox: Default::default(),
            steps: Default::default(),
        };
        for kit in &mut engine.kits {
            kit.install(&mut Install {
                hooks: &mut engine.hooks,
                services: &mut engine.services,
                variables: &mut engine.variables,
                outbox: &engine.outbox,
            });
        }
        for kit in &mut engine.kits {
            kit.start(&engine.services).map_err(|e| vec![e.into()])?;
        }
        Ok(engine)
    }

    /// The tick counter: the last tick that ran (0 before tick 1).
    pub fn tick_count(&self) -> u64 {
        self.tick
    }

    /// The entities.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The variables.
    pub fn variables(&self) -> &Variables {
        &self.variables
    }

    /// The hooks (mods register their handlers here).
    pub fn hooks_mut(&mut self) -> &mut Hooks {
        &mut self.hooks
    }

    /// The hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// The services.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// The service `name` with interface `T`.
    pub fn service<T: ?Sized + 'static>(&self, name: &str) -> Option<std::rc::Rc<T>> {
        self.services.get(name)
    }

    /// The scenes.
    pub fn scenes(&self) -> &[SceneDef] {
        &self.scenes
    }

    /// The active scene, if any.
    pub fn active_scene(&self) -> Option<&SceneDef> {
        self.active.map(|i| &self.scenes[i])
    }

    /// The delivered events so far, oldest first.
    pub fn events(&self) -> &[Event] {
        self.events.log()
    }

    /// Takes the delivered events, oldest first.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.events.take_log()
    }

    /// Runs one tick: the counter advances, every kit ticks in order, events are delivered.
    /// The tick is one step of [`Engine::steps`].
    pub fn tick(&mut self) {
        self.steps.advance();
        self.tick_kits();
        self.steps.advance();
    }

    fn tick_kits(&mut self) {
        self.tick += 1;
        self.events.set_tick(self.tick);
        for i in 0..self.kits.len() {
            let mut ctx = ctx!(self);
            self.kits[i].begin_tick(&mut ctx);
            self.settle();
        }
        for i in 0..self.kits.len() {
            let mut ctx = ctx!(self);
            self.kits[i].tick(&mut ctx);
            self.settle();
        }
        for i in 0..self.kits.len() {
            let mut ctx = ctx!(self);
            self.kits[i].end_tick(&mut ctx);
            self.settle();
        }
    }

    /// Runs `f` as an input stamped with tick `stamp`: its events carry that tick, and kits hear
    /// of the entity changes and events it caused before it returns.
    /// The input is one step of [`Engine::steps`].
    pub fn input<R>(&mut self, stamp: u64, f: impl FnOnce(&mut Engine) -> R) -> R {
        self.steps.advance();
        self.events.set_tick(stamp);
        let r = f(self);
        self.settle();
        self.steps.advance();
        r
    }

    /// Replaces every entity (used when a game is built from a file); kits hear of every entity.
    pub fn replace_world(&mut self, world: World) {
        let ids: Vec<_> = world.iter().map(|e| e.id.clone()).collect();
        self.world = world;
        for id in ids {
            self.world.mark_changed(id);
        }
    }

    /// Mutable access to the entities (changes are reported to kits when the input settles).
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Emits an event from outside the kits (e.g. `player.moved` from an input).
    pub fn emit(
        &mut self,
        event: impl Into<std::borrow::Cow<'static, str>>,
        data: impl Into<super::events::EventData>,
    ) {
        self.events.emit(event, data);
    }

    /// Leaves the active scene, if any.
    pub fn leave(&mut self) {
        if self.active.take().is_none() {
            return;
        }
        self.each_kit(|kit, ctx| kit.on_leave(ctx));
    }

    /// Enters scene `name`, leaving the active one first.
    pub fn enter(&mut self, name: &str) -> Result<(), EngineError> {
        let index = self.scene_index(name)?;
        self.leave();
        self.active = Some(index);
        self.each_kit(|kit, ctx| {
            let scene = ctx.scene.expect("just made active");
            kit.on_enter(scene, ctx)
        });
        Ok(())
    }

    /// The index of scene `name`.
    pub fn scene_index(&self, name: &str) -> Result<usize, EngineError> {
        self.scenes
            .iter()
            .position(|s| s.id == name)
            .ok_or_else(|| EngineError::NoSuchScene {
                name: name.to_owned(),
                known: self
                    .scenes
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    fn each_kit(&mut self, mut f: impl FnMut(&mut dyn Kit, &mut Ctx<'_>)) {
        for i in 0..self.kits.len() {
            let mut ctx = ctx!(self);
            f(self.kits[i].as_mut(), &mut ctx);
            self.settle();
        }
    }

    /// Asks every kit to make durable what it keeps outside the save ([`Kit::flush`]), in
    /// kit order; the first failure names its kit.
    pub fn flush(&self) -> Result<(), String> {
        for k in &self.kits {
            k.flush_world(&self.world)
                .map_err(|e| format!("kit {}: {e}", k.id()))?;
        }
        Ok(())
    }

    /// The save document of the current game: the host's part and every kit's section.
    pub fn save_document(&self) -> SaveDoc {
        SaveDoc {
            schema: None,
            format: SAVE_FORMAT.to_owned(),
            version: self
                .kits
                .iter()
                .map(|k| k.save_version())
                .fold(BASE_SAVE_VERSION, u32::max),
            tick: self.tick,
            scene: self.active_scene().map(|s| s.id.clone()),
            control: self.world.control().cloned(),
            entities: self.world.iter().cloned().collect(),
            variables: self
                .variables
                .iter()
                .map(|(k, v)| (k.to_owned(), v.clone()))
                .collect(),
            kits: self
                .kits
                .iter()
                .filter_map(|k| Some((k.id().to_owned(), k.save()?)))
                .collect(),
            mods: Vec::new(),
        }
    }

    /// Loads a save document. The whole document is validated first — what the save is on its
    /// own ([`super::save::check_alone`] with this engine's catalog: the check `check` of a save
    /// runs), then what this game adds (its scenes, the kits it enables, each kit's section in
    /// [`Kit::prepare_load`]); on any problem nothing changes. Restoring emits no events and
    /// asks no hooks; kits bring their subscribers in step in [`Kit::after_load`] (the streaming
    /// kit calls `onChunk` for the difference; see [`Kit`] for the order).
    pub fn load_document(&mut self, value: &Value) -> Result<(), Problem> {
        self.load_document_then(value, || {})
    }

    /// The Lua tables of the catalog the engine was built with, in catalog order (the Lua mods'
    /// service tables: `mods::install` builds each whose kit's service the game has).
    #[cfg(feature = "lua")]
    pub fn lua_tables(&self) -> &[crate::script::LuaTable] {
        &self.lua_tables
    }

    /// The layers of the replay viewer of the catalog the engine was built with, in catalog
    /// order (each kit's whether the game enables it or not: a layer without its kit's service
    /// captures what the page shows without the kit).
    pub fn view_layers(&self) -> &[super::view::ViewLayer] {
        &self.view_layers
    }

    /// The catalog's kits with their save checks (what a save is checked by on its own).
    pub fn save_checks(&self) -> &SaveChecks {
        &self.save_checks
    }

    /// Checks a save document exactly as [`Engine::load_document`] would, changing nothing:
    /// `Ok` when loading it would succeed (the same checks, in the same order, give the same
    /// first problem).
    pub fn check_document(&self, value: &Value) -> Result<(), Problem> {
        let (doc, world) = self.check_alone(value)?;
        self.check_parsed(doc, world)
    }

    /// [`Engine::check_document`] of a document [`super::save::check_alone`] already checked
    /// (`Game::check_save` checks the Lua mods' storage there).
    pub(crate) fn check_parsed(&self, doc: SaveDoc, world: World) -> Result<(), Problem> {
        self.prepare_document(doc, world).map(drop)
    }

    /// The save on its own, with this engine's catalog (no mod's storage is read here).
    fn check_alone(&self, value: &Value) -> Result<(SaveDoc, World), Problem> {
        super::save::check_alone(value, super::save::any_storage, &self.save_checks)
    }

    /// What this game adds to a load's checks, for a document already checked on its own: its
    /// scenes, the kits it enables, then every kit's section ([`Kit::prepare_load`]); nothing
    /// changes.
    fn prepare_document(&self, doc: SaveDoc, world: World) -> Result<PreparedDocument, Problem> {
        let active = match &doc.scene {
            None => None,
            Some(name) => Some(
                self.scene_index(name)
                    .map_err(|e| Problem::new("scene", e.to_string()))?,
            ),
        };
        for id in doc.kits.keys() {
            if !self.kits.iter().any(|k| k.id() == id) {
                return Err(Problem::new(
                    format!("kits.{id}"),
                    format!("a section for kit `{id}`, which this scene does not enable"),
                ));
            }
        }
        let scene = active.map(|i| &self.scenes[i]);
        let facts = super::save::SaveFacts::new(&doc, &world);
        let mut prepared = Vec::with_capacity(self.kits.len());
        for kit in &self.kits {
            prepared.push(kit.prepare_load(doc.kits.get(kit.id()), scene, &facts)?);
        }
        Ok(PreparedDocument {
            doc,
            world,
            active,
            prepared,
        })
    }

    /// [`Engine::load_document`], running `restore` once every kit's section is committed
    /// and before any kit's [`Kit::after_load`] (the game restores its Lua mods' state there).
    pub fn load_document_then(
        &mut self,
        value: &Value,
        restore: impl FnOnce(),
    ) -> Result<(), Problem> {
        let (doc, world) = self.check_alone(value)?;
        self.load_parsed_then(doc, world, restore)
    }

    /// [`Engine::load_document_then`] of a document [`super::save::check_alone`] already
    /// checked (`Game::load` checks the Lua mods' storage there).
    pub(crate) fn load_parsed_then(
        &mut self,
        doc: SaveDoc,
        world: World,
        restore: impl FnOnce(),
    ) -> Result<(), Problem> {
        let PreparedDocument {
            doc,
            world,
            active,
            prepared,
        } = self.prepare_document(doc, world)?;
        // Everything checked: commit. The load is one step of `steps` (what subscribers do
        // while they are told the difference is budgeted apart from the ticks).
        self.steps.advance();
        self.world = world;
        self.tick = doc.tick;
        self.events.set_tick(doc.tick);
        self.active = active;
        // The engine's variables keep their order (the saved values over them), then any others
        // the save names (kits that publish theirs only after a tick).
        let mut variables: IndexMap<String, Value> = self
            .variables
            .iter()
            .map(|(k, v)| (k.to_owned(), doc.variables.get(k).unwrap_or(v).clone()))
            .collect();
        for (k, v) in doc.variables {
            variables.entry(k).or_insert(v);
        }
        self.variables.replace(variables);
        for (i, p) in prepared.into_iter().enumerate() {
            let mut ctx = ctx!(self);
            self.kits[i].commit_load(p, &mut ctx);
        }
        self.world.take_changed();
        restore();
        for i in 0..self.kits.len() {
            let mut ctx = ctx!(self);
            self.kits[i].after_load(&mut ctx);
        }
        // Only what subscribers did (a failing Lua callback's mod.error, a spawn) is delivered.
        self.settle();
        self.steps.advance();
        Ok(())
    }

    /// The enabled kit of type `T`, if any: a kit reaching its own state back, e.g.
    /// `engine.kit::<ColliderKit>()`.
    pub fn kit<T: Kit>(&self) -> Option<&T> {
        self.kits
            .iter()
            .find_map(|k| k.as_ref().as_any().downcast_ref())
    }

    /// The enabled kit of type `T`, mutably.
    pub fn kit_mut<T: Kit>(&mut self) -> Option<&mut T> {
        self.kits
            .iter_mut()
            .find_map(|k| k.as_mut().as_any_mut().downcast_mut())
    }

    /// The engine's steps (each tick, input and load is one): what mods may spend per tick
    /// starts afresh with each (see [`super::events::Steps`]).
    pub fn steps(&self) -> super::events::Steps {
        self.steps.clone()
    }

    /// Where mod runtimes report failures outside hooks; each becomes a `mod.error` event.
    pub fn mod_errors(&self) -> super::events::ModErrors {
        self.mod_errors.clone()
    }

    /// Delivers queued events and entity changes to every kit until nothing is left.
    fn settle(&mut self) {
        // Before every event, and once the last is delivered: failed mods and queued events are
        // emitted (after what waits), changed entities told. Events are delivered a batch at a
        // time, in the order of a single queue (what one emits comes after the batch).
        loop {
            self.before_event();
            if !self.events.has_undelivered() {
                break;
            }
            let (log, waiting) = self.events.take_batch();
            for (i, event) in log[waiting].iter().enumerate() {
                if i > 0 {
                    self.before_event();
                }
                let mut ctx = ctx!(self);
                for kit in &mut self.kits {
                    kit.on_event(event, &mut ctx);
                }
            }
            self.events.delivered_batch(log);
        }
    }

    /// What comes before the next event: failed mods' errors and queued events emitted, then
    /// changed entities told, until no entity changes.
    fn before_event(&mut self) {
        loop {
            if !self.mod_errors.borrow().is_empty() {
                let failures = std::mem::take(&mut *self.mod_errors.borrow_mut());
                for (by, hook, message) in failures {
                    self.events.emit(
                        super::events::MOD_ERROR,
                        serde_json::json!({ "mod": by, "hook": hook, "message": message }),
                    );
                }
            }
            if !self.outbox.borrow().is_empty() {
                let queued = std::mem::take(&mut *self.outbox.borrow_mut());
                for (event, data) in queued {
                    self.events.emit(event, data);
                }
            }
            if !self.world.has_changes() {
                return;
            }
            let changed = self.world.take_changed();
            for kit in &mut self.kits {
                let mut ctx = ctx!(self);
                kit.on_entities_changed(&changed, &mut ctx);
            }
        }
    }
}
