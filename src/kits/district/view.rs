//! The district kit's layer of the replay viewer: its counts `c` (`[live, stored]`, written when
//! they change) shown beside the entities, and the kind `"d"` of the live entities that come
//! from a district file (drawn in the district colour); `view.js` beside this file.

use std::rc::Rc;

use crate::host::view::{
    changed, put, EntityKinds, Fields, FrameCtx, LayerCapture, PageIds, ViewLayer,
};
use crate::host::Engine;

use super::{DistrictService, DISTRICT};

/// The layer, as the kit's catalog entry registers it.
pub const LAYER: ViewLayer = ViewLayer {
    name: DISTRICT,
    capture: || Box::<Capture>::default(),
    script: include_str!("view.js"),
};

/// What the page has: the counts.
#[derive(Default)]
struct Capture {
    counts: Option<[u64; 2]>,
}

impl LayerCapture for Capture {
    fn frame(&mut self, ctx: &FrameCtx<'_>, _: &mut PageIds, out: &mut Fields) {
        let Some(d) = ctx.engine.service::<dyn DistrictService>(DISTRICT) else {
            return;
        };
        let counts = [d.live() as u64, d.stored() as u64];
        if let Some(c) = changed(&mut self.counts, counts) {
            put(out, "c", c);
        }
    }

    fn entity_kinds<'a>(&'a self, engine: &'a Engine) -> Option<EntityKinds<'a>> {
        let d: Rc<dyn DistrictService> = engine.service(DISTRICT)?;
        Some(Box::new(move |e| d.district_line(&e.id).map(|_| "d")))
    }
}
