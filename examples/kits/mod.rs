//! The example kits, and a catalog with them beside the built-in ones.

pub mod collider;

use world_streaming::host::KitCatalog;
use world_streaming::kits::builtin_catalog;

/// The built-in kits (`world.terrain` among them) plus `physics.colliders`.
pub fn catalog() -> KitCatalog {
    let mut catalog = builtin_catalog();
    catalog.add(
        collider::manifest(),
        Box::new(collider::ColliderKit::from_spec),
    );
    catalog
}
