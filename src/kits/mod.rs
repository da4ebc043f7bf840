//! The kits this crate ships: `world.ground` (the extent of the ground), `world.streaming`
//! (which chunks are live) and `world.terrain` (a world generated off the tick), `world.district`
//! (entities that stream with their chunks) and `world.nav` (paths over built terrain, agents),
//! plus the catalog that lets a host enable them.

pub mod district;
pub mod ground;
pub mod nav;
pub mod streaming;
pub mod terrain;

use crate::host::{engine_entry, KitCatalog};

/// A catalog with `game.engine` (the host itself), `world.ground`, `world.streaming`,
/// `world.terrain`, `world.district` and `world.nav`: one line per kit, each kit's `entry()`
/// registering everything of it (its factory, schemas, save check, Lua table, viewer layer).
/// Add your own kits to it with [`KitCatalog::register`] (or [`KitCatalog::add`]).
pub fn builtin_catalog() -> KitCatalog {
    let mut catalog = KitCatalog::default();
    catalog.register(engine_entry());
    catalog.register(ground::entry());
    catalog.register(streaming::entry());
    catalog.register(terrain::entry());
    catalog.register(district::entry());
    catalog.register(nav::entry());
    catalog
}
