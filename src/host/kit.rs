//! Kits are plugins: a [`Kit`] is built from its scene-file config by a factory in a
//! [`KitCatalog`], declares its hooks and services at install, and is then driven by the engine.
//! Adding a kit means adding a catalog entry, never editing the host.

use std::any::Any;

use indexmap::IndexMap;
use semver::{Version, VersionReq};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::entity::EntityId;
use super::events::Event;
use super::save::{SaveCheck, SaveChecks, SaveFacts};
use super::scene::SceneDef;
use super::{Ctx, Hooks, Services};
pub use crate::json::{join_path, Problem};

/// A kit's manifest (`kit.json`): what it is, what it provides and what it needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KitManifest {
    /// The kit's id, e.g. `world.streaming`.
    pub id: String,
    /// The kit's own version.
    pub version: Version,
    /// Interfaces it provides, with their versions.
    #[serde(default)]
    pub provides: IndexMap<String, Version>,
    /// Interfaces it needs, with semver requirements (`^1`).
    #[serde(default)]
    pub requires: IndexMap<String, VersionReq>,
    /// Documentation of its config keys and their defaults.
    #[serde(default)]
    pub config: IndexMap<String, Value>,
}

impl KitManifest {
    /// A manifest providing `id` at `version`, with no requirements.
    pub fn simple(id: &str, version: &str) -> Self {
        let version = Version::parse(version).expect("a valid version literal");
        KitManifest {
            id: id.to_owned(),
            provides: IndexMap::from([(id.to_owned(), version.clone())]),
            version,
            requires: IndexMap::new(),
            config: IndexMap::new(),
        }
    }
}

/// Checks that every kit's requirements are provided by the kits enabled together with it.
/// Returns one message per unmet requirement, saying which kit needs which.
pub fn unmet_requirements(manifests: &[&KitManifest]) -> Vec<String> {
    let mut problems = Vec::new();
    for kit in manifests {
        for (name, req) in &kit.requires {
            let offers: Vec<(&str, &Version)> = manifests
                .iter()
                .filter_map(|m| m.provides.get(name).map(|v| (m.id.as_str(), v)))
                .collect();
            if offers.iter().any(|(_, v)| req.matches(v)) {
                continue;
            }
            let found = match offers.first() {
                None => "no enabled kit provides it".to_owned(),
                Some((by, v)) => format!("but {by} provides {name} {v}"),
            };
            problems.push(format!("kit {} requires {name}@{req}, {found}", kit.id));
        }
    }
    problems
}

/// What a kit factory is given: its config and every scene (for its layers).
pub struct KitSpec<'a> {
    /// The kit's `config` object, if the scene file gave one.
    pub config: Option<&'a Value>,
    /// JSON path of the config (`kits[2].config`), for error messages.
    pub config_path: String,
    /// The scenes of the file; a kit reads `layers[<its id>]` of each.
    pub scenes: &'a [SceneDef],
    /// Where directories the kit writes resolve (a relative `worldDir`): the scene file's
    /// directory, or the current directory for a scene whose files are given as text
    /// ([`crate::scene_files::SceneFiles::base_dir`]).
    pub base_dir: &'a std::path::Path,
    /// The files the scene names relative to itself (its directory, or files given as text):
    /// a kit reads a file its config names through these, never by a path of its own.
    pub files: &'a crate::scene_files::SceneFiles,
}

impl KitSpec<'_> {
    /// JSON path of scene `index`'s layer for kit `id`.
    pub fn layer_path(index: usize, id: &str) -> String {
        format!("scenes[{index}].layers.{id}")
    }
}

/// Builds a kit from its spec, or lists what is wrong with the config.
pub type KitFactory = Box<dyn Fn(&KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>>>;

/// A JSON Schema a kit publishes: the file it is written to under `schemas/` (e.g.
/// `streaming-config.schema.json`, the name `world-streaming schema --out` gives it) and the
/// function that makes it from the Rust type.
#[derive(Clone, Copy)]
pub struct KitSchema {
    /// The schema file's name.
    pub file: &'static str,
    /// Makes the schema (`|| schemars::schema_for!(MyConfig)`).
    pub make: fn() -> schemars::Schema,
}

/// One kit of a [`KitCatalog`]: everything the crate's rooms need of the kit, registered once.
/// Built by the kit itself (each built-in kit's `entry()`), added with [`KitCatalog::register`]:
/// its manifest and factory, the schemas of its config, its save section and any file it reads,
/// the check of its save section on its own, its Lua table and its layer of the replay viewer.
/// `files` writes and checks the schemas and runs the save checks, `mods` installs the Lua
/// tables and the viewer captures and draws the layers by looping over the catalog, so a new
/// kit touches only its own folder and one line of the catalog.
///
/// ```
/// use world_streaming::host::{CatalogEntry, KitCatalog, KitManifest};
/// # use world_streaming::host::{Kit, KitSpec, Problem};
/// # struct Hello;
/// # impl Kit for Hello { fn id(&self) -> &str { "my.hello" } }
/// # fn factory(_: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> { Ok(Box::new(Hello)) }
/// let mut catalog = KitCatalog::default();
/// catalog.register(CatalogEntry::new(KitManifest::simple("my.hello", "1.0.0"), Box::new(factory)));
/// assert!(catalog.manifest("my.hello").is_some());
/// ```
pub struct CatalogEntry {
    manifest: KitManifest,
    factory: KitFactory,
    config_schema: Option<KitSchema>,
    save_schema: Option<KitSchema>,
    file_schemas: Vec<KitSchema>,
    save_check: Option<SaveCheck>,
    #[cfg(feature = "lua")]
    lua: Option<crate::script::LuaTable>,
    view: Option<super::view::ViewLayer>,
}

impl CatalogEntry {
    /// A kit with its manifest and factory and nothing else yet.
    pub fn new(manifest: KitManifest, factory: KitFactory) -> Self {
        CatalogEntry {
            manifest,
            factory,
            config_schema: None,
            save_schema: None,
            file_schemas: Vec::new(),
            save_check: None,
            #[cfg(feature = "lua")]
            lua: None,
            view: None,
        }
    }

    /// The schema of the kit's `config` object, written to `schemas/<file>`.
    pub fn config_schema(mut self, file: &'static str, make: fn() -> schemars::Schema) -> Self {
        self.config_schema = Some(KitSchema { file, make });
        self
    }

    /// The schema of the kit's section of a save, written to `schemas/<file>`.
    pub fn save_schema(mut self, file: &'static str, make: fn() -> schemars::Schema) -> Self {
        self.save_schema = Some(KitSchema { file, make });
        self
    }

    /// The schema of a file the kit reads (e.g. a line of a district file), written to
    /// `schemas/<file>` after the config's and the save's.
    pub fn file_schema(mut self, file: &'static str, make: fn() -> schemars::Schema) -> Self {
        self.file_schemas.push(KitSchema { file, make });
        self
    }

    /// The check of the kit's save section on its own ([`SaveCheck`]): what `check` of a save
    /// runs for the section; the kit's `prepare_load` runs the same.
    pub fn save_check(mut self, check: SaveCheck) -> Self {
        self.save_check = Some(check);
        self
    }

    /// The kit's table of Lua functions: every Lua mod of a game with the kit's service gets it
    /// ([`crate::script`] is what it is built with).
    #[cfg(feature = "lua")]
    pub fn lua(mut self, table: crate::script::LuaTable) -> Self {
        self.lua = Some(table);
        self
    }

    /// The kit's layer of the replay viewer: what it captures of a run and how the page draws
    /// it ([`super::view`]).
    pub fn view(mut self, layer: super::view::ViewLayer) -> Self {
        self.view = Some(layer);
        self
    }

    /// The kit's id (its manifest's).
    pub fn id(&self) -> &str {
        &self.manifest.id
    }

    /// The kit's manifest.
    pub fn manifest(&self) -> &KitManifest {
        &self.manifest
    }

    /// The kit's Lua table, if it registered one.
    #[cfg(feature = "lua")]
    pub fn lua_table(&self) -> Option<crate::script::LuaTable> {
        self.lua
    }

    /// The kit's layer of the replay viewer, if it registered one.
    pub fn view_layer(&self) -> Option<super::view::ViewLayer> {
        self.view
    }

    /// The kit's schemas: its config's, its save section's, then its files', each if it has one.
    pub fn schemas(&self) -> impl Iterator<Item = KitSchema> + '_ {
        self.config_schema
            .iter()
            .chain(&self.save_schema)
            .chain(&self.file_schemas)
            .copied()
    }
}

/// The kits a host can enable, by id, in the order they were registered.
#[derive(Default)]
pub struct KitCatalog {
    entries: IndexMap<String, CatalogEntry>,
}

impl KitCatalog {
    /// Adds (or replaces, keeping its place) a kit with everything its entry registers.
    pub fn register(&mut self, entry: CatalogEntry) -> &mut Self {
        self.entries.insert(entry.manifest.id.clone(), entry);
        self
    }

    /// Adds (or replaces) a kit with its manifest and factory alone: [`KitCatalog::register`]
    /// of `CatalogEntry::new(manifest, factory)`.
    pub fn add(&mut self, manifest: KitManifest, factory: KitFactory) -> &mut Self {
        self.register(CatalogEntry::new(manifest, factory))
    }

    /// Registers the check of kit `id`'s save section on its own ([`SaveCheck`]): what `check`
    /// of a save runs for the section (the kit's `prepare_load` runs the same). Does nothing
    /// for a kit not added. [`CatalogEntry::save_check`] registers it with the kit.
    pub fn set_save_check(&mut self, id: &str, check: SaveCheck) -> &mut Self {
        if let Some(e) = self.entries.get_mut(id) {
            e.save_check = Some(check);
        }
        self
    }

    /// The entries, in registration order.
    pub fn entries(&self) -> impl Iterator<Item = &CatalogEntry> {
        self.entries.values()
    }

    /// The entry of kit `id`.
    pub fn entry(&self, id: &str) -> Option<&CatalogEntry> {
        self.entries.get(id)
    }

    /// The manifest of kit `id`.
    pub fn manifest(&self, id: &str) -> Option<&KitManifest> {
        self.entries.get(id).map(|e| &e.manifest)
    }

    /// The check of kit `id`'s save section on its own, if it registered one.
    pub fn save_check(&self, id: &str) -> Option<SaveCheck> {
        self.entries.get(id).and_then(|e| e.save_check)
    }

    /// Every kit of the catalog with its save check: what [`super::save::check_alone`] checks a
    /// save's sections by.
    pub fn save_checks(&self) -> SaveChecks {
        let mut checks = SaveChecks::default();
        for (id, e) in &self.entries {
            checks.add(id, e.save_check);
        }
        checks
    }

    /// The Lua tables of the catalog's kits, in catalog order.
    #[cfg(feature = "lua")]
    pub fn lua_tables(&self) -> impl Iterator<Item = crate::script::LuaTable> + '_ {
        self.entries.values().filter_map(|e| e.lua)
    }

    /// The layers of the replay viewer of the catalog's kits, in catalog order.
    pub fn view_layers(&self) -> impl Iterator<Item = super::view::ViewLayer> + '_ {
        self.entries.values().filter_map(|e| e.view)
    }

    /// Builds kit `id`.
    pub fn build(
        &self,
        id: &str,
        spec: &KitSpec<'_>,
    ) -> Option<Result<Box<dyn Kit>, Vec<Problem>>> {
        self.entries.get(id).map(|e| (e.factory)(spec))
    }

    /// Known kit ids.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }
}

/// What a kit may touch while installing: declare hooks, provide services.
pub struct Install<'a> {
    /// Hooks; declare the ones this kit asks.
    pub hooks: &'a mut Hooks,
    /// Services; provide this kit's.
    pub services: &'a mut Services,
    /// Variables; give this kit's their value before tick 1.
    pub variables: &'a mut super::Variables,
    /// Where services called outside event delivery put the events they emit.
    pub outbox: &'a super::Outbox,
}

/// Why a kit could not start or load its save section.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KitError {
    /// A service the kit needs is missing.
    #[error("kit {kit} needs the service `{service}`, which no enabled kit provides")]
    MissingService {
        /// The kit.
        kit: String,
        /// The service.
        service: String,
    },
    /// The kit's save section is wrong.
    #[error("{0}")]
    BadSave(Problem),
    /// What the kit needs is held by another game: a directory whose lock file another game
    /// (in this process or another) holds.
    #[error("kit {kit}: {what} {dir} is in use by another game (lock file {lock} held)")]
    InUse {
        /// The kit.
        kit: String,
        /// What the directory is (`world directory`).
        what: String,
        /// The directory.
        dir: std::path::PathBuf,
        /// Its lock file.
        lock: std::path::PathBuf,
    },
    /// The kit could not start (e.g. its threads).
    #[error("kit {kit}: {message}")]
    Start {
        /// The kit.
        kit: String,
        /// Why.
        message: String,
    },
}

/// A prepared, validated save section, applied later by [`Kit::commit_load`].
pub type PreparedSection = Box<dyn Any>;

/// Any kit as [`Any`], so the engine can hand a kit back as its concrete type
/// ([`crate::host::Engine::kit`]). Implemented for every `'static` type.
pub trait AsAny: Any {
    /// `self` as [`Any`].
    fn as_any(&self) -> &dyn Any;
    /// `self` as mutable [`Any`].
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A kit: a plugin of the engine. Every method has a default that does nothing.
///
/// **Loading a save** happens in this order: the whole file is validated (every kit's
/// [`Kit::prepare_load`]) before anything changes; then the host's part and each kit's section
/// are committed ([`Kit::commit_load`]) in the order the scene file lists the kits; then the Lua
/// mods get their `storage` back; then every kit's [`Kit::after_load`] runs, in the same order.
/// So when a kit hears of the restored world in `after_load` (the streaming kit tells its
/// `onChunk` subscribers there), every kit and mod already has its own saved state back.
pub trait Kit: AsAny {
    /// The kit's id, e.g. `world.streaming`.
    fn id(&self) -> &str;

    /// Declares hooks and provides services.
    fn install(&mut self, _host: &mut Install<'_>) {}

    /// Once every kit is installed: look up the services of the kits it builds on.
    fn start(&mut self, _services: &Services) -> Result<(), KitError> {
        Ok(())
    }

    /// A scene was entered.
    fn on_enter(&mut self, _scene: &SceneDef, _ctx: &mut Ctx<'_>) {}

    /// The active scene is being left.
    fn on_leave(&mut self, _ctx: &mut Ctx<'_>) {}

    /// An event was emitted (delivered to every kit in emission order).
    fn on_event(&mut self, _event: &Event, _ctx: &mut Ctx<'_>) {}

    /// These entities were spawned, despawned, moved, tagged, untagged or relinked.
    fn on_entities_changed(&mut self, _changed: &[EntityId], _ctx: &mut Ctx<'_>) {}

    /// At the start of a tick, before any kit ticks (e.g. committing work done off the tick).
    fn begin_tick(&mut self, _ctx: &mut Ctx<'_>) {}

    /// One fixed tick.
    fn tick(&mut self, _ctx: &mut Ctx<'_>) {}

    /// After every kit ticked (and the tick's events were delivered): checks that need the
    /// whole tick's work, such as readiness, whose events come after all the tick's others.
    fn end_tick(&mut self, _ctx: &mut Ctx<'_>) {}

    /// Before a save is written: make durable what the kit keeps outside the save (e.g. write
    /// modified chunks back to the world directory). An error fails the save.
    fn flush(&self) -> Result<(), String> {
        Ok(())
    }

    /// [`Kit::flush`] for a kit whose durable state is read from the world (the entities it
    /// writes back): the engine calls this one, with the world as the save will hold it. By
    /// default, [`Kit::flush`].
    fn flush_world(&self, _world: &super::World) -> Result<(), String> {
        self.flush()
    }

    /// The save version this kit's section needs (a save is written with the highest any
    /// enabled kit needs; [`super::save::BASE_SAVE_VERSION`] by default).
    fn save_version(&self) -> u32 {
        super::save::BASE_SAVE_VERSION
    }

    /// This kit's section of a save, if it keeps state.
    fn save(&self) -> Option<Value> {
        None
    }

    /// Validates this kit's section completely, without changing anything: `scene` is the
    /// scene the save is in, `save` the rest of the save (its tick, its own world — what it
    /// will restore — and the other kits' sections), already checked. The engine has run the
    /// kit's registered [`SaveCheck`] on the section before; a kit runs the same check again
    /// here (keeping what it parsed), then what needs this game.
    fn prepare_load(
        &self,
        _section: Option<&Value>,
        _scene: Option<&SceneDef>,
        _save: &SaveFacts<'_>,
    ) -> Result<Option<PreparedSection>, Problem> {
        Ok(None)
    }

    /// Applies a section validated by [`Kit::prepare_load`]; emits nothing, calls no hooks.
    fn commit_load(&mut self, _prepared: Option<PreparedSection>, _ctx: &mut Ctx<'_>) {}

    /// Every kit and mod has its saved state back (see the order above): bring whatever
    /// depends on other kits in step (emit no events, ask no hooks).
    fn after_load(&mut self, _ctx: &mut Ctx<'_>) {}
}
