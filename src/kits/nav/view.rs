//! The nav kit's layer of the replay viewer: each agent's state as the kit holds it
//! ([`NavService::agents`]) and the header's `cellsPerChunk` (to place the cells), drawn by
//! `view.js` beside this file: its path, the chunk a wait is on, its state by colour.
//!
//! Fields: `a` the agents whose state appeared or changed other than by stepping `[id, goalX,
//! goalZ, path, wait, stuck, arrived]` (`id` an index into the data's `ids`, the goal a cell,
//! `path` the cells still to step into, flat `[x0, z0, …]`, next first, `wait` the chunk `[x,
//! z]` its wait is on or `null`, `stuck` `"none"` / `"budget"` or `null`, `arrived` a boolean),
//! `as` agents whose only change is that their path lost its first cells `[id0, cells0, …]`,
//! `ar` the agents whose state the kit dropped. A run without the kit carries none of it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::host::view::{put, Fields, FrameCtx, LayerCapture, PageIds, ViewLayer};
use crate::host::Engine;

use super::{AgentView, NavService, NAV};

/// The layer, as the kit's catalog entry registers it.
pub const LAYER: ViewLayer = ViewLayer {
    name: NAV,
    capture: || Box::<Capture>::default(),
    script: include_str!("view.js"),
};

/// What the page has: the agents by id, their index in the data's `ids` and their state.
#[derive(Default)]
struct Capture {
    agents: BTreeMap<String, (usize, AgentView)>,
}

impl LayerCapture for Capture {
    fn head(&mut self, engine: &Engine, out: &mut Fields) {
        if let Some(nav) = engine.service::<dyn NavService>(NAV) {
            put(out, "cellsPerChunk", nav.cells_per_chunk());
        }
    }

    fn frame(&mut self, ctx: &FrameCtx<'_>, ids: &mut PageIds, out: &mut Fields) {
        let Some(nav) = ctx.engine.service::<dyn NavService>(NAV) else {
            return;
        };
        let now = nav.agents();
        let live: BTreeSet<&str> = now.iter().map(|a| a.id.as_str()).collect();
        let gone: Vec<String> = self
            .agents
            .keys()
            .filter(|id| !live.contains(id.as_str()))
            .cloned()
            .collect();
        let (mut changed, mut stepped, mut removed): (Vec<Value>, Vec<u64>, Vec<usize>) =
            Default::default();
        for id in gone {
            if let Some((i, _)) = self.agents.remove(&id) {
                removed.push(i);
            }
        }
        for a in now {
            let id = a.id.as_str().to_owned();
            if let Some((i, old)) = self.agents.get_mut(&id) {
                if *old == a {
                    continue;
                }
                let k = old.path.len().saturating_sub(a.path.len());
                let step = k > 0
                    && old.path[k..] == a.path[..]
                    && AgentView {
                        path: a.path.clone(),
                        ..old.clone()
                    } == a;
                if step {
                    stepped.extend([*i as u64, k as u64]);
                    *old = a;
                    continue;
                }
            }
            let i = ids.index(&id);
            let path: Vec<i64> = a.path.iter().flat_map(|c| [c.x, c.z]).collect();
            changed.push(json!([
                i,
                a.goal.x,
                a.goal.z,
                path,
                a.waiting.map(|c| [c.x, c.z]),
                a.stuck,
                a.arrived
            ]));
            self.agents.insert(id, (i, a));
        }
        if !changed.is_empty() {
            put(out, "a", changed);
        }
        if !stepped.is_empty() {
            put(out, "as", stepped);
        }
        if !removed.is_empty() {
            put(out, "ar", removed);
        }
    }
}
