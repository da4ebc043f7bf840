//! The kits this crate ships: `world.ground` (the extent of the ground), `world.streaming`
//! (which chunks are live) and `world.terrain` (a world generated off the tick), `world.district`
//! (entities that stream with their chunks) and `world.nav` (paths over built terrain, agents),
//! plus the catalog that lets a host enable them.

pub mod district;
pub mod ground;
pub mod nav;
pub mod streaming;
pub mod terrain;

use crate::host::{KitCatalog, KitManifest, ENGINE_KIT};

/// A catalog with `game.engine` (the host itself), `world.ground`, `world.streaming`,
/// `world.terrain`, `world.district` and `world.nav`, each kit with the check of its save
/// section on its own (what `check` of a save runs; the kit's load runs it too).
/// Add your own kits to it with [`KitCatalog::add`].
pub fn builtin_catalog() -> KitCatalog {
    let mut catalog = KitCatalog::default();
    catalog.add(
        KitManifest::simple(ENGINE_KIT, "1.0.0"),
        Box::new(|_| unreachable!("the host is never built as a kit")),
    );
    catalog.add(ground::manifest(), Box::new(ground::GroundKit::from_spec));
    catalog.add(
        streaming::manifest(),
        Box::new(streaming::StreamingKit::from_spec),
    );
    catalog.add(
        terrain::manifest(),
        Box::new(terrain::TerrainKit::from_spec),
    );
    catalog.add(
        district::manifest(),
        Box::new(district::DistrictKit::from_spec),
    );
    catalog.add(nav::manifest(), Box::new(nav::NavKit::from_spec));
    catalog
        .set_save_check(streaming::STREAMING, streaming::check_save_section)
        .set_save_check(terrain::TERRAIN, terrain::check_save_section)
        .set_save_check(district::DISTRICT, district::check_save_section)
        .set_save_check(nav::NAV, nav::check_save_section);
    catalog
}
