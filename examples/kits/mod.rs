//! The example kits, and a catalog with them beside the built-in ones.

pub mod collider;
pub mod terrain;

use world_streaming::host::KitCatalog;
use world_streaming::kits::builtin_catalog;

/// The built-in kits plus `world.terrain` and `physics.colliders`.
pub fn catalog() -> KitCatalog {
    let mut catalog = builtin_catalog();
    catalog.add(
        terrain::manifest(),
        Box::new(terrain::TerrainKit::from_spec),
    );
    catalog.add(
        collider::manifest(),
        Box::new(collider::ColliderKit::from_spec),
    );
    catalog
}
