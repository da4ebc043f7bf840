//! The `game.engine` host: entities, tags and `rides` links ([`World`]), the ordered event bus,
//! cancellable hooks, the service registry, variables, scenes, kits as plugins, and the fixed tick
//! loop ([`Engine`]). It knows no kit by type.

mod engine;
mod entity;
mod events;
mod hooks;
mod kit;
pub mod save;
mod scene;
mod services;
mod variables;
pub mod view;

pub use engine::{engine_entry, Ctx, Engine, EngineError, KitEntry, ENGINE_KIT};
pub use entity::{check_data, Entity, EntityData, EntityError, EntityId, Tags, World, PLAYER_TAG};
pub use events::{
    block_hash_values, chunk_data, chunk_hash_data, hash_hex, section_data, Event, EventBus,
    EventData, Hashed, Log, LogLine, ModErrors, Outbox, Steps, MOD_ERROR, PLAYER_MOVED,
};
pub use hooks::{
    Cancel, HookAnswer, HookArgs, HookError, HookHandler, HookProfile, HookStat, HookValue, Hooks,
    ModFailure, ModId,
};
pub use kit::{
    join_path, unmet_requirements, AsAny, CatalogEntry, Install, Kit, KitCatalog, KitError,
    KitFactory, KitManifest, KitSchema, KitSpec, PreparedSection, Problem,
};
pub use save::{SaveCheck, SaveChecks, SaveFacts};
pub use scene::SceneDef;
pub use services::Services;
pub use variables::Variables;
