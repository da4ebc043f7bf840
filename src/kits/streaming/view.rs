//! The streaming kit's layer of the replay viewer: the grid's chunks (loaded, pending, held
//! refusals), the foci, tickets, dormant entities, predicted foci and hole cells
//! (docs/reference/streaming.md#holes) and the LOD blocks (docs/reference/lod.md#blocks), captured
//! after every tick from the kit's service and drawn by `view.js` beside this file. Chunks and
//! blocks are written as differences: the page applies the tick's `world.chunk.loaded`/`unloaded`
//! and `world.lod.loaded`/`unloaded` events (which the frame carries anyway), then the corrections
//! here (a `load` of a save restores chunks without events); the small lists are written whole on
//! the frames they change.
//!
//! Fields: `la`/`lr` loaded chunks the events do not account for (added, removed), `pa`/`pr`
//! pending chunks added and no longer pending (other than those an event loaded), `r` the held
//! refusals `[x, z, "load" | "unload", mod, reason]`, `f` the foci `[x0, z0, …]` in metres, `k`
//! the tickets `[id, x, z, radius, ticksLeft]`, `d` the dormant entities `[id, x, z]`, `p` the
//! predicted foci, `o` the hole cells, `ls` the steps of the LOD levels, `ba`/`br` blocks
//! loaded and released that the events do not account for, `bb`/`bu` loaded blocks that became
//! ready or no longer are (`[level, x, z, …]`); `nb` the neighbours in force and `ca`/`cr` the
//! complete chunks the events do not account for (docs/viewer.md#complete-chunks: only in a run
//! that uses `neighbours`); the header's `chunkSize`. The heights of chunks and blocks (`h`,
//! `bh`) come from another layer (the terrain's); this drawing shades with them.
//!
//! docs/viewer.md#vertical-worlds: `vt` the `vertical` in force (`{radius, height}`, `null` when
//! it goes off), written on the frames it changes and only in a run that has used it. While it is
//! in force the chunks are sections: the chunk lists (`la`, `lr`, `pa`, `pr`, `o`, `ca`, `cr`)
//! are triples `[x0, y0, z0, …]`, the foci and predicted foci `[x0, y0, z0, …]` in metres, a held
//! refusal and a ticket carry their `y` last (a section row; metres), and the section events
//! come as `[name, {x, y, z}]`; the page draws a slice at a row and a side view. A flat run's
//! frames are as before, byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use serde_json::{json, Value};

use crate::grid::ChunkPos;
use crate::host::view::{
    block_payload, cells, changed, chunk_payload, put, section_payload, Fields, FrameCtx,
    LayerCapture, PageIds, Shows, ViewLayer,
};
use crate::host::Engine;

use super::dormancy::DORMANT;
use super::{
    StreamingService, CHUNK_COMPLETE, CHUNK_INCOMPLETE, CHUNK_LOADED, CHUNK_UNLOADED, LOD_LOADED,
    LOD_UNLOADED, STREAMING,
};

/// The layer, as the kit's catalog entry registers it.
pub const LAYER: ViewLayer = ViewLayer {
    name: STREAMING,
    capture: || Box::<Capture>::default(),
    script: include_str!("view.js"),
};

/// The chunk side the page assumes without the kit, in metres.
const DEFAULT_CHUNK_SIZE: f64 = 32.0;

/// What the page has, to diff against.
#[derive(Default)]
struct Capture {
    /// Sorted (row order), as are the chunk lists below.
    loaded: Vec<ChunkPos>,
    pending: Vec<ChunkPos>,
    refusals: Option<Vec<Value>>,
    foci: Option<Vec<f64>>,
    tickets: Option<Vec<Value>>,
    dormant: Option<Vec<Value>>,
    predicted: Option<Vec<f64>>,
    holes: Option<Vec<i64>>,
    /// The levels' steps as the page has them (`None`: the run shows no `lod`).
    lod_steps: Option<Vec<Option<u32>>>,
    /// The loaded LOD blocks as the page has them, by (level, block): whether built.
    blocks: BTreeMap<(u32, ChunkPos), bool>,
    /// The neighbours in force as the page has them (`None`: the run has not used `neighbours`
    /// yet, and the page has no `nb`).
    neighbours: Option<u32>,
    /// The complete chunks as the page has them.
    complete: BTreeSet<ChunkPos>,
    /// The `vertical` in force as the page has it (`None`: the run has not used it yet, and the
    /// page has no `vt`; `Some(Null)`: off again).
    vertical: Option<Value>,
}

fn service(engine: &Engine) -> Option<Rc<dyn StreamingService>> {
    engine.service::<dyn StreamingService>(STREAMING)
}

/// The chunks in `a` and not in `b`, both sorted.
fn minus(a: &[ChunkPos], b: &[ChunkPos]) -> Vec<ChunkPos> {
    let mut out = Vec::new();
    let mut j = 0;
    for &c in a {
        while j < b.len() && b[j] < c {
            j += 1;
        }
        if b.get(j) != Some(&c) {
            out.push(c);
        }
    }
    out
}

/// `[x0, z0, x1, z1, …]` of positions, in metres; with `vertical` in force `[x0, y0, z0, …]`.
fn positions(list: impl IntoIterator<Item = crate::grid::Position>, vertical: bool) -> Vec<f64> {
    if vertical {
        return list.into_iter().flat_map(|p| [p.x, p.y, p.z]).collect();
    }
    list.into_iter().flat_map(|p| [p.x, p.z]).collect()
}

/// The chunk of a chunk event's payload: `{x, z}`, or a section's `{x, y, z}`.
fn chunk_at(data: &crate::host::EventData) -> Option<ChunkPos> {
    chunk_payload(data).or_else(|| section_payload(data))
}

impl LayerCapture for Capture {
    fn head(&mut self, engine: &Engine, out: &mut Fields) {
        let size = service(engine).map_or(DEFAULT_CHUNK_SIZE, |s| s.chunk_size());
        put(out, "chunkSize", size);
    }

    fn frame(&mut self, ctx: &FrameCtx<'_>, _: &mut PageIds, out: &mut Fields) {
        let s = service(ctx.engine);
        let active = ctx.engine.active_scene().is_some();
        // docs/viewer.md#vertical-worlds: first, so the page reads this frame's lists as it says.
        let vertical = s.as_ref().and_then(|s| s.vertical());
        let v = vertical.is_some();
        if v || self.vertical.is_some() {
            let now = vertical.map_or(
                Value::Null,
                |vt| json!({"radius": vt.radius, "height": crate::host::view::metres(vt.height)}),
            );
            put_some(out, "vt", changed(&mut self.vertical, now));
        }
        let now_loaded = s.as_ref().map(|s| s.loaded()).unwrap_or_default();
        let mut now_pending = s.as_ref().map(|s| s.pending()).unwrap_or_default();
        now_pending.sort_unstable();
        // The last chunk event of each chunk (a release or a load), and the blocks the events
        // load and release, in order.
        let mut last_event: BTreeMap<ChunkPos, bool> = BTreeMap::new();
        let mut loaded_by_events: BTreeSet<ChunkPos> = BTreeSet::new();
        let mut block_events: Vec<(bool, u32, ChunkPos)> = Vec::new();
        for e in ctx.events {
            if let Some((level, b)) = block_payload(&e.data) {
                if e.event == LOD_LOADED || e.event == LOD_UNLOADED {
                    block_events.push((e.event == LOD_LOADED, level, b));
                }
                continue;
            }
            if let Some(c) = chunk_at(&e.data) {
                if e.event == CHUNK_LOADED {
                    last_event.insert(c, true);
                    loaded_by_events.insert(c);
                } else if e.event == CHUNK_UNLOADED {
                    last_event.insert(c, false);
                }
            }
        }
        // The page applies the events, then these corrections: what differs between the
        // loaded set the events imply and the real one.
        let added = minus(&now_loaded, &self.loaded);
        let removed = minus(&self.loaded, &now_loaded);
        let is_now = |c: &ChunkPos| now_loaded.binary_search(c).is_ok();
        let mut loaded_add = BTreeSet::new();
        let mut loaded_remove = BTreeSet::new();
        for c in &added {
            if last_event.get(c) != Some(&true) {
                loaded_add.insert(*c);
            }
        }
        for c in &removed {
            if last_event.get(c) != Some(&false) {
                loaded_remove.insert(*c);
            }
        }
        for (c, &implied) in &last_event {
            match (implied, is_now(c)) {
                (false, true) => loaded_add.insert(*c),
                (true, false) => loaded_remove.insert(*c),
                _ => false,
            };
        }
        put_list(out, "la", cells(loaded_add, v));
        put_list(out, "lr", cells(loaded_remove, v));
        // Pending: the page drops every chunk an event loaded, then applies this delta.
        let loaded_by_events: Vec<ChunkPos> = loaded_by_events.into_iter().collect();
        let pending = minus(&self.pending, &loaded_by_events);
        put_list(out, "pa", cells(minus(&now_pending, &pending), v));
        put_list(out, "pr", cells(minus(&pending, &now_pending), v));
        self.loaded = now_loaded;
        self.pending = now_pending;

        let refusals: Vec<Value> = s
            .as_ref()
            .map(|s| s.refusals())
            .unwrap_or_default()
            .into_iter()
            .map(|r| {
                let kind = if r.hook == super::HOOK_CHUNK_LOAD {
                    "load"
                } else {
                    "unload"
                };
                // A held refusal's section row with `vertical` in force (its `y` as the state
                // writes it).
                let y = v.then(|| serde_json::to_value(&r).expect("plain data")["y"].clone());
                let mut list = json!([r.x, r.z, kind, r.by, r.reason]);
                if let Some(y) = y {
                    let y = if y.is_null() { json!(0) } else { y };
                    list.as_array_mut().expect("an array").push(y);
                }
                list
            })
            .collect();
        let foci = s
            .as_ref()
            .filter(|_| active)
            .map(|s| positions(s.foci(), v))
            .unwrap_or_default();
        let tickets: Vec<Value> = s
            .as_ref()
            .map(|s| s.tickets())
            .unwrap_or_default()
            .into_iter()
            .map(|t| {
                let t = serde_json::to_value(t).expect("plain data");
                let mut t = json!([t["id"], t["x"], t["z"], t["radius"], t["ticksLeft"], t["y"]]);
                // A ticket's `y` (metres) with `vertical` in force.
                if !v {
                    t.as_array_mut().expect("an array").pop();
                } else if t[5].is_null() {
                    t[5] = json!(0);
                }
                t
            })
            .collect();
        put_some(out, "r", changed(&mut self.refusals, refusals));
        put_some(out, "f", changed(&mut self.foci, foci));
        put_some(out, "k", changed(&mut self.tickets, tickets));
        let mut dormant: Vec<Value> = ctx
            .engine
            .world()
            .iter()
            .filter(|e| e.has_tag(DORMANT))
            .map(|e| json!([e.id.as_str(), e.position.x, e.position.z]))
            .collect();
        dormant.sort_by(|a, b| a[0].as_str().cmp(&b[0].as_str()));
        put_some(out, "d", changed(&mut self.dormant, dormant));
        if let Some(predicted) = s.as_ref().and_then(|s| s.predicted()) {
            let flat = positions(predicted.into_iter().filter(|_| active), v);
            put_some(out, "p", changed(&mut self.predicted, flat));
        }
        if let Some(holes) = s.as_ref().and_then(|s| s.hole_chunks()) {
            put_some(out, "o", changed(&mut self.holes, cells(holes, v)));
        }
        if let (Some(s), Some(levels)) = (&s, s.as_ref().and_then(|s| s.lod())) {
            self.blocks(&**s, levels, &block_events, out);
        }
        if let Some(s) = &s {
            self.complete(&**s, ctx.events, v, out);
        }
    }

    fn shows(&self) -> Shows {
        let loaded = !self.loaded.is_empty();
        Shows {
            opening: loaded,
            anything: loaded
                || !self.pending.is_empty()
                || self.refusals.as_ref().is_some_and(|r| !r.is_empty())
                || self.foci.as_ref().is_some_and(|f| !f.is_empty())
                || self.tickets.as_ref().is_some_and(|t| !t.is_empty()),
        }
    }
}

impl Capture {
    /// The blocks (docs/reference/engines.md#the-viewer): the page applies the tick's block events
    /// (a load: not built; a release), then these corrections and the ready changes.
    fn blocks(
        &mut self,
        streaming: &dyn StreamingService,
        levels: Vec<Vec<ChunkPos>>,
        events: &[(bool, u32, ChunkPos)],
        out: &mut Fields,
    ) {
        let steps = (1..=levels.len() as u32)
            .map(|level| streaming.lod_step(level))
            .collect();
        put_some(out, "ls", changed(&mut self.lod_steps, steps));
        for &(loaded, level, b) in events {
            if loaded {
                self.blocks.insert((level, b), false);
            } else {
                self.blocks.remove(&(level, b));
            }
        }
        let now: BTreeSet<(u32, ChunkPos)> = levels
            .iter()
            .zip(1u32..)
            .flat_map(|(blocks, level)| blocks.iter().map(move |&b| (level, b)))
            .collect();
        let gone: Vec<(u32, ChunkPos)> = self
            .blocks
            .keys()
            .filter(|k| !now.contains(k))
            .copied()
            .collect();
        let (mut add, mut remove, mut built, mut unbuilt) = (vec![], vec![], vec![], vec![]);
        for (level, b) in gone {
            self.blocks.remove(&(level, b));
            remove.extend([i64::from(level), b.x, b.z]);
        }
        for &(level, b) in &now {
            let seen = self.blocks.entry((level, b)).or_insert_with(|| {
                add.extend([i64::from(level), b.x, b.z]);
                false
            });
            let ready = streaming.lod_ready(level, b);
            if ready != *seen {
                *seen = ready;
                let list = if ready { &mut built } else { &mut unbuilt };
                list.extend([i64::from(level), b.x, b.z]);
            }
        }
        put_list(out, "ba", add);
        put_list(out, "br", remove);
        put_list(out, "bb", built);
        put_list(out, "bu", unbuilt);
    }
}

impl Capture {
    /// The complete chunks (docs/viewer.md#complete-chunks): nothing in a run that has not used
    /// `neighbours`; else `nb` when it changed, and what the page gets wrong after applying the
    /// tick's events as it does (`world.chunk.complete` adds while k > 0, `world.chunk.incomplete`
    /// and `world.chunk.unloaded` remove; k = 0 forgets them all).
    fn complete(
        &mut self,
        streaming: &dyn StreamingService,
        events: &[crate::host::Event],
        vertical: bool,
        out: &mut Fields,
    ) {
        let k = streaming.neighbours();
        if k == 0 && self.neighbours.is_none() {
            return;
        }
        put_some(out, "nb", changed(&mut self.neighbours, k));
        if k == 0 {
            self.complete.clear();
            return;
        }
        for e in events {
            let Some(c) = chunk_at(&e.data) else {
                continue;
            };
            if e.event == CHUNK_COMPLETE {
                self.complete.insert(c);
            } else if e.event == CHUNK_INCOMPLETE || e.event == CHUNK_UNLOADED {
                self.complete.remove(&c);
            }
        }
        let now: BTreeSet<ChunkPos> = streaming.complete().into_iter().collect();
        put_list(
            out,
            "ca",
            cells(now.difference(&self.complete).copied(), vertical),
        );
        put_list(
            out,
            "cr",
            cells(self.complete.difference(&now).copied(), vertical),
        );
        self.complete = now;
    }
}

/// A list field, left out when empty.
fn put_list<T: serde::Serialize>(out: &mut Fields, key: &str, list: Vec<T>) {
    if !list.is_empty() {
        put(out, key, list);
    }
}

/// A field written whole on the frames it changes.
fn put_some<T: serde::Serialize>(out: &mut Fields, key: &str, value: Option<T>) {
    if let Some(v) = value {
        put(out, key, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_difference_of_sorted_chunks() {
        let c = |x, z| ChunkPos::new(x, z);
        let a = [c(0, -1), c(1, -1), c(0, 0), c(5, 3)];
        let b = [c(1, -1), c(0, 0), c(9, 9)];
        assert_eq!(minus(&a, &b), [c(0, -1), c(5, 3)]);
        assert_eq!(minus(&b, &a), [c(9, 9)]);
        assert_eq!(minus(&[], &a), []);
    }
}
