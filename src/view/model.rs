//! The page model: everything the page shows ([`ViewData`]), and what changed at one tick
//! ([`Frame`]), as embedded in the page (its fields' order is the JSON's).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Everything the page shows, as embedded in it.
#[derive(Debug, Clone, Serialize)]
pub struct ViewData {
    /// Always [`VIEW_FORMAT`].
    pub format: &'static str,
    /// Version 1.
    pub version: u32,
    /// What the page is titled (the replay's file name).
    pub title: String,
    /// `chunkSize` in metres (to place foci and entities inside their chunks): the streaming
    /// layer's, 32 without it.
    #[serde(rename = "chunkSize")]
    pub chunk_size: f64,
    /// The frame the page opens on: the first that shows a loaded chunk, else the first that
    /// shows anything (pending chunks, refusals, foci, tickets, entities), else 0.
    pub start: u64,
    /// How many ticks ran (the frames after the first). Ticks usually count 1, 2, 3, …; a `load`
    /// input sets the counter to the save's tick, and the frame after says so in `t`.
    pub ticks: u64,
    /// Event names, indexed by the frames.
    pub names: Vec<String>,
    /// Entity ids, indexed by the frames' entity records, in the order they first appear.
    pub ids: Vec<String>,
    /// One frame per tick run, after the frame of the state before tick 1.
    pub frames: Vec<Frame>,
    /// With `world.nav` (docs/reference/nav.md): the terrain's cells per chunk side, to place the
    /// agents' path cells (cell `(x, z)`'s centre is `((x + 0.5)·s, (z + 0.5)·s)`, `s = chunkSize /
    /// cellsPerChunk`). Absent without the kit.
    #[serde(rename = "cellsPerChunk", skip_serializing_if = "Option::is_none")]
    pub cells_per_chunk: Option<u32>,
    /// Header fields of layers this struct does not name (a kit of your own's).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// The drawings of the run's layers, in catalog order: the page runs each
    /// ([`crate::host::view::ViewLayer::script`]).
    #[serde(skip)]
    pub scripts: Vec<&'static str>,
}

/// What changed at one tick. Chunk lists are flat `[x0, z0, x1, z1, …]`; empty fields are left
/// out of the page. While `vertical` is in force (the streaming layer's `vt`, in
/// [`Frame::extra`]; docs/viewer.md#vertical-worlds) they are sections `[x0, y0, z0, …]`, the
/// foci and predicted foci `[x0, y0, z0, …]` in metres, and a section's event `[name, {x, y, z}]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Frame {
    /// The tick, when it is not the previous frame's plus one (after a `load`).
    #[serde(rename = "t", skip_serializing_if = "Option::is_none")]
    pub tick: Option<u64>,
    /// The tick's events: `[name, x, z]` for chunk-shaped payloads, `[name, data]` otherwise.
    #[serde(rename = "e", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    /// Chunks loaded that the events do not account for.
    #[serde(rename = "la", skip_serializing_if = "Vec::is_empty")]
    pub loaded_add: Vec<i64>,
    /// Chunks released that the events do not account for.
    #[serde(rename = "lr", skip_serializing_if = "Vec::is_empty")]
    pub loaded_remove: Vec<i64>,
    /// Chunks that became pending.
    #[serde(rename = "pa", skip_serializing_if = "Vec::is_empty")]
    pub pending_add: Vec<i64>,
    /// Chunks no longer pending, other than those the events loaded.
    #[serde(rename = "pr", skip_serializing_if = "Vec::is_empty")]
    pub pending_remove: Vec<i64>,
    /// The held refusals, when they changed: `[x, z, "load" | "unload", mod, reason]`.
    #[serde(rename = "r", skip_serializing_if = "Option::is_none")]
    pub refusals: Option<Vec<Value>>,
    /// The foci, when they changed: `[x0, z0, x1, z1, …]` in metres.
    #[serde(rename = "f", skip_serializing_if = "Option::is_none")]
    pub foci: Option<Vec<f64>>,
    /// The tickets, when they changed: `[id, x, z, radius, ticksLeft]`.
    #[serde(rename = "k", skip_serializing_if = "Option::is_none")]
    pub tickets: Option<Vec<Value>>,
    /// The dormant entities, when they changed: `[id, x, z]` (their position in metres).
    #[serde(rename = "d", skip_serializing_if = "Option::is_none")]
    pub dormant: Option<Vec<Value>>,
    /// Heights of loaded chunks that got one this tick (their terrain was built): `[x, z,
    /// height, …]`. A chunk's height is forgotten when it is released.
    #[serde(rename = "h", skip_serializing_if = "Vec::is_empty")]
    pub heights: Vec<f64>,
    /// Variables whose value changed.
    #[serde(rename = "v", skip_serializing_if = "Map::is_empty")]
    pub variables: Map<String, Value>,
    /// The active scene, when it changed (`null` outside a scene).
    #[serde(
        rename = "s",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub scene: Option<Value>,
    /// The predicted foci of docs/reference/streaming.md#look-ahead (the state's `predicted`), when
    /// they changed: `[x0, z0, …]` in metres, anchor order.
    #[serde(rename = "p", skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Vec<f64>>,
    /// The hole cells of docs/reference/streaming.md#holes (the chunks `world.chunks.holes`
    /// counts), when they changed: flat, row order. Never set when the scene does not use
    /// scheduling (docs/reference/config.md#outputs-that-appear-only-when-used).
    #[serde(rename = "o", skip_serializing_if = "Option::is_none")]
    pub holes: Option<Vec<i64>>,
    /// Live entities that appeared or changed other than by moving: `[id, kind, x, z, tags,
    /// data]`, `id` an index into [`ViewData::ids`], kind `"p"` (a player: tagged `player` or
    /// controlled), `"v"` (a vehicle: tagged `vehicle` or ridden), `"d"` (a district entity) or
    /// `"e"` (any other), `data` `null` when it has none.
    #[serde(rename = "n", skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<Value>,
    /// Live entities that only moved: `[id0, x0, z0, id1, …]` (ids as in `n`).
    #[serde(rename = "m", skip_serializing_if = "Vec::is_empty")]
    pub entities_moved: Vec<Value>,
    /// The entities no longer live (ids as in `n`).
    #[serde(rename = "nr", skip_serializing_if = "Vec::is_empty")]
    pub entities_removed: Vec<usize>,
    /// The state's `district` counts `[live, stored]`
    /// (docs/reference/district.md#district-state-variables-and-events), when they changed.
    #[serde(rename = "c", skip_serializing_if = "Option::is_none")]
    pub district: Option<[u64; 2]>,
    /// `world.nav`'s agents (docs/reference/nav.md#agents) whose state appeared or changed other
    /// than by stepping: `[id, goalX, goalZ, path, wait, stuck, arrived]`, `id` an index into
    /// [`ViewData::ids`], the goal a cell, `path` the cells still to step into (flat `[x0, z0, …]`,
    /// next first), `wait` the chunk `[x, z]` its wait is on or `null`, `stuck` `"none"` /
    /// `"budget"` or `null`, `arrived` a boolean.
    #[serde(rename = "a", skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<Value>,
    /// Agents whose only change is that their path lost its first cells (they stepped):
    /// `[id0, cells0, id1, …]`.
    #[serde(rename = "as", skip_serializing_if = "Vec::is_empty")]
    pub agents_stepped: Vec<u64>,
    /// Agents whose state the kit dropped (no goal any more, or gone).
    #[serde(rename = "ar", skip_serializing_if = "Vec::is_empty")]
    pub agents_removed: Vec<usize>,
    /// docs/reference/config.md#outputs-that-appear-only-when-used, only in a run that uses `lod`:
    /// the step (block side in chunks) of each level (level 1 first) when they changed, `null` for
    /// a level that still holds blocks but is no longer in force. The blocks follow the tick's
    /// `world.lod.loaded` / `unloaded` events (written `[name, x, z, level]`), which load a block
    /// not built and without a height, and the fields below.
    #[serde(rename = "ls", skip_serializing_if = "Option::is_none")]
    pub lod_steps: Option<Vec<Option<u32>>>,
    /// LOD blocks loaded that the events do not account for (a `load` of a save): flat
    /// `[level, x, z, …]`, not built, no height.
    #[serde(rename = "ba", skip_serializing_if = "Vec::is_empty")]
    pub blocks_add: Vec<i64>,
    /// LOD blocks released that the events do not account for: `[level, x, z, …]`.
    #[serde(rename = "br", skip_serializing_if = "Vec::is_empty")]
    pub blocks_remove: Vec<i64>,
    /// Loaded blocks that became ready (built by every builder): `[level, x, z, …]`.
    #[serde(rename = "bb", skip_serializing_if = "Vec::is_empty")]
    pub blocks_built: Vec<i64>,
    /// Loaded blocks no longer ready: `[level, x, z, …]`; their height is forgotten.
    #[serde(rename = "bu", skip_serializing_if = "Vec::is_empty")]
    pub blocks_unbuilt: Vec<i64>,
    /// Loaded blocks that got a height or whose height changed (built, or rebuilt after an
    /// edit): `[level, x, z, height, …]`, the mean of the block's cells.
    #[serde(rename = "bh", skip_serializing_if = "Vec::is_empty")]
    pub block_heights: Vec<Value>,
    /// docs/viewer.md#complete-chunks, only in a run that uses `neighbours` (k > 0 at some tick):
    /// the neighbours in force when it changed (from its first frame with k > 0 on; at 0 the page
    /// forgets every complete chunk). The complete chunks follow the tick's `world.chunk.complete`
    /// (added while k > 0), `world.chunk.incomplete` and `world.chunk.unloaded` events (removed),
    /// then the two fields below.
    #[serde(rename = "nb", skip_serializing_if = "Option::is_none")]
    pub neighbours: Option<u32>,
    /// Complete chunks the events do not account for (a `load` of a save): flat, row order.
    #[serde(rename = "ca", skip_serializing_if = "Vec::is_empty")]
    pub complete_add: Vec<i64>,
    /// Chunks no longer complete that the events do not account for: flat, row order.
    #[serde(rename = "cr", skip_serializing_if = "Vec::is_empty")]
    pub complete_remove: Vec<i64>,
    /// The fields of layers this struct does not name (a kit of your own's), as they wrote them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A present field, even `null`, is `Some` (the scene left is `"s": null`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_frame_reads_back_what_it_writes_and_keeps_fields_it_does_not_name() {
        let written = json!({"t": 9, "la": [1, 2], "s": null, "f": [8.0, -8.0], "zz": {"a": 1}});
        let frame: Frame = serde_json::from_value(written.clone()).unwrap();
        assert_eq!(frame.scene, Some(Value::Null), "a scene left is written");
        assert_eq!(frame.loaded_add, [1, 2]);
        assert_eq!(frame.extra["zz"], json!({"a": 1}));
        assert_eq!(serde_json::to_value(&frame).unwrap(), written);
        let none: Frame = serde_json::from_value(json!({})).unwrap();
        assert_eq!(none.scene, None);
        assert_eq!(serde_json::to_string(&none).unwrap(), "{}");
    }
}
