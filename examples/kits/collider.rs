//! `physics.colliders`, an example kit that builds on other kits' services (reached by name and
//! interface, never as concrete kits): it makes a ground collider for each chunk once
//! `world.terrain` built it (`onBuilt`, with the chunk's terrain to shape it) and drops it when
//! `world.streaming` releases the chunk (`onChunk`). It publishes the count as
//! `physics.colliders.live` and the highest cell of the live colliders as
//! `physics.colliders.top`. An edit makes the chunks it touches dirty: on
//! `world.terrain.changed` their colliders are made again. After a save is loaded
//! (`after_load`), the colliders are made again for exactly the loaded chunks whose terrain is
//! built.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use world_streaming::grid::ChunkPos;
use world_streaming::host::{Ctx, Event, Kit, KitError, KitManifest, KitSpec, Problem, Services};
use world_streaming::kits::streaming::{ChunkSubscription, StreamingService, STREAMING};
use world_streaming::kits::terrain::{TerrainEvent, TerrainService, TERRAIN};

/// The kit: one collider (here: the chunk's highest cell) per built, live chunk.
pub struct ColliderKit {
    live: Rc<RefCell<BTreeMap<ChunkPos, u16>>>,
    /// Kept so the kit could unsubscribe (e.g. when physics is switched off).
    _subscription: Option<ChunkSubscription>,
}

/// The kit's manifest.
pub fn manifest() -> KitManifest {
    let mut m = KitManifest::simple("physics.colliders", "1.0.0");
    m.requires.insert(STREAMING.into(), "^1.1".parse().unwrap());
    m.requires.insert(TERRAIN.into(), "^1".parse().unwrap());
    m
}

impl ColliderKit {
    /// The catalog factory (no config).
    pub fn from_spec(_: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        Ok(Box::new(ColliderKit {
            live: Rc::default(),
            _subscription: None,
        }))
    }
}

impl ColliderKit {
    /// The chunks that have a collider, in row order (reach the kit with
    /// `engine.kit::<ColliderKit>()`).
    pub fn live_chunks(&self) -> Vec<ChunkPos> {
        self.live.borrow().keys().copied().collect()
    }
}

/// A chunk's collider: here, its highest cell.
fn collider(data: &world_streaming::kits::terrain::ChunkData) -> u16 {
    let n = data.cells;
    (0..n)
        .flat_map(|j| (0..n).map(move |i| (i, j)))
        .map(|(i, j)| data.height(i, j))
        .max()
        .unwrap_or(0)
}

fn missing(service: &str) -> KitError {
    KitError::MissingService {
        kit: "physics.colliders".into(),
        service: service.into(),
    }
}

impl Kit for ColliderKit {
    fn id(&self) -> &str {
        "physics.colliders"
    }

    fn start(&mut self, services: &Services) -> Result<(), KitError> {
        let streaming = services
            .get::<dyn StreamingService>(STREAMING)
            .ok_or_else(|| missing(STREAMING))?;
        let terrain = services
            .get::<dyn TerrainService>(TERRAIN)
            .ok_or_else(|| missing(TERRAIN))?;
        let (live, built) = (self.live.clone(), self.live.clone());
        let reader = terrain.clone();
        terrain.on_built(Box::new(move |chunk, _hash| {
            if let Some(data) = reader.chunk(chunk) {
                built.borrow_mut().insert(chunk, collider(&data));
            }
        }));
        self._subscription = Some(streaming.on_chunk(Box::new(move |chunk, loaded| {
            if !loaded {
                live.borrow_mut().remove(&chunk);
            }
        })));
        Ok(())
    }

    fn on_event(&mut self, event: &Event, ctx: &mut Ctx<'_>) {
        // A dirty chunk (an edit in it or on its edge): its collider is made again. The terrain
        // kit's reader says which (level 0: a chunk, not a LOD block).
        let Some((0, chunk)) = TerrainEvent::changed(event) else {
            return;
        };
        let terrain = ctx.services.get::<dyn TerrainService>(TERRAIN);
        let mut live = self.live.borrow_mut();
        if let (Some(data), true) = (
            terrain.and_then(|t| t.chunk(chunk)),
            live.contains_key(&chunk),
        ) {
            live.insert(chunk, collider(&data));
        }
    }

    fn after_load(&mut self, ctx: &mut Ctx<'_>) {
        // A load emits no `world.terrain.built`: make the colliders of what is built now.
        let (Some(streaming), Some(terrain)) = (
            ctx.services.get::<dyn StreamingService>(STREAMING),
            ctx.services.get::<dyn TerrainService>(TERRAIN),
        ) else {
            return;
        };
        let mut live = self.live.borrow_mut();
        live.clear();
        for c in streaming.loaded() {
            if let Some(data) = terrain.chunk(c) {
                live.insert(c, collider(&data));
            }
        }
    }

    fn tick(&mut self, ctx: &mut Ctx<'_>) {
        let live = self.live.borrow();
        ctx.variables
            .set("physics.colliders.live", live.len() as u64);
        let top = live.values().copied().max().unwrap_or(0);
        ctx.variables.set("physics.colliders.top", u64::from(top));
    }
}
