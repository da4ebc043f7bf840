//! `physics.colliders`, an example kit that subscribes through the streaming service's `onChunk`
//! (reached by name and interface, never as the concrete kit) and keeps one ground collider per
//! live chunk, publishing the count as the variable `physics.colliders.live`. After a save is
//! loaded, the streaming kit calls the subscription for what the load changed, so the colliders
//! stay in step with no code here for saves.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use world_streaming::grid::ChunkPos;
use world_streaming::host::{Ctx, Kit, KitError, KitManifest, KitSpec, Problem, Services};
use world_streaming::kits::streaming::{ChunkSubscription, StreamingService, STREAMING};

/// The kit.
pub struct ColliderKit {
    live: Rc<RefCell<BTreeSet<ChunkPos>>>,
    /// Kept so the kit could unsubscribe (e.g. when physics is switched off).
    _subscription: Option<ChunkSubscription>,
}

/// The kit's manifest.
pub fn manifest() -> KitManifest {
    let mut m = KitManifest::simple("physics.colliders", "1.0.0");
    m.requires
        .insert("world.streaming".into(), "^1".parse().unwrap());
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

    /// How many colliders are live.
    pub fn live(&self) -> usize {
        self.live.borrow().len()
    }

    /// The chunks that have a collider, in row order (reach the kit with
    /// `engine.kit::<ColliderKit>()`).
    pub fn live_chunks(&self) -> Vec<ChunkPos> {
        self.live.borrow().iter().copied().collect()
    }
}

impl Kit for ColliderKit {
    fn id(&self) -> &str {
        "physics.colliders"
    }

    fn start(&mut self, services: &Services) -> Result<(), KitError> {
        let streaming = services
            .get::<dyn StreamingService>(STREAMING)
            .ok_or_else(|| KitError::MissingService {
                kit: "physics.colliders".into(),
                service: STREAMING.into(),
            })?;
        let live = self.live.clone();
        self._subscription = Some(streaming.on_chunk(Box::new(move |chunk, loaded| {
            let mut live = live.borrow_mut();
            if loaded {
                live.insert(chunk);
            } else {
                live.remove(&chunk);
            }
        })));
        Ok(())
    }

    fn tick(&mut self, ctx: &mut Ctx<'_>) {
        ctx.variables
            .set("physics.colliders.live", self.live() as u64);
    }
}
