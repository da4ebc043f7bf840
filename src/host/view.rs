//! The replay viewer's layers: what one kit adds to the page the viewer (`crate::view`) makes
//! of a recorded run. A layer is registered once, in the kit's catalog entry
//! ([`super::CatalogEntry::view`]): a *capture* that reads the engine after every tick and writes
//! what changed as named fields of the page's frame (data the page diffs), and a *drawing*
//! (JavaScript the page runs) that applies those fields and draws them. The viewer loops over
//! the layers of the game's catalog, so a new kit in the viewer is its layer, in its own folder.
//!
//! A capture works on the engine alone (services, world, variables, the step's events): no
//! files, no threads, nothing of the game around it, so the same capture can run wherever the
//! engine does.

use serde_json::{Map, Value};

use super::{Engine, Entity, Event, EventData};
use crate::grid::ChunkPos;

/// Fields of the page's data, by name, in the order they were written: a frame's (`{"la":
/// [...], ...}`) or the data's header (`chunkSize`).
pub type Fields = Map<String, Value>;

/// One kit's layer of the replay viewer, registered in its catalog entry.
#[derive(Clone, Copy)]
pub struct ViewLayer {
    /// The layer's name (its kit's id), for messages.
    pub name: &'static str,
    /// A fresh capture of one run (what the layer remembers of the page between frames).
    pub capture: fn() -> Box<dyn LayerCapture>,
    /// The layer's drawing: JavaScript the page runs inside its drawing core (`view.js`), which
    /// registers the layer with `layer({...})` (see `src/view/view.js` for what a layer may
    /// give: how it applies a frame, its bounds, what it draws under and over the entities, its
    /// captions, its details under the pointer, its legend).
    pub script: &'static str,
}

/// What a layer's capture reads of one step (the state before tick 1, or a tick).
pub struct FrameCtx<'a> {
    /// The engine after the step.
    pub engine: &'a Engine,
    /// The step's events, in emission order.
    pub events: &'a [Event],
    /// The height of a chunk (e.g. its terrain's mean height), when the page is to shade the
    /// chunks: asked of each chunk as it loads, `None` while it has none.
    pub heights: Option<&'a dyn Fn(ChunkPos) -> Option<f64>>,
}

/// The page's index of entity ids: a frame names an entity by its index (its place in the
/// data's `ids`, in the order ids first appear).
#[derive(Default)]
pub struct PageIds {
    ids: Vec<String>,
    index: std::collections::BTreeMap<String, usize>,
}

impl PageIds {
    /// The index of `id`, given the next one when it is new.
    pub fn index(&mut self, id: &str) -> usize {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        self.ids.push(id.to_owned());
        self.index.insert(id.to_owned(), self.ids.len() - 1);
        self.ids.len() - 1
    }

    /// The ids, by index.
    pub fn into_ids(self) -> Vec<String> {
        self.ids
    }

    /// The ids given so far, by index (a live page takes those it has not seen).
    pub fn ids(&self) -> &[String] {
        &self.ids
    }
}

/// What the page shows of a layer at a frame: whether it shows what the page should open on (a
/// loaded chunk), and whether it shows anything.
#[derive(Clone, Copy, Default)]
pub struct Shows {
    /// Something the page opens on (the first frame showing it is the page's start).
    pub opening: bool,
    /// Anything at all (the start when no frame has an opening).
    pub anything: bool,
}

/// Sorts an entity into a kind the page draws (`"d"`, a district entity): `None` when the layer
/// has no kind for it.
pub type EntityKinds<'a> = Box<dyn Fn(&Entity) -> Option<&'static str> + 'a>;

/// A layer's capture of one run: it remembers what the page has, and writes what changed.
pub trait LayerCapture {
    /// Fields of the data's header, once, before the first frame (`chunkSize`,
    /// `cellsPerChunk`).
    fn head(&mut self, _engine: &Engine, _out: &mut Fields) {}

    /// The fields that take the page from the last frame to the engine's state now (the first
    /// call: from nothing). `ids` indexes the entities a field names.
    fn frame(&mut self, ctx: &FrameCtx<'_>, ids: &mut PageIds, out: &mut Fields);

    /// What the page shows of this layer after the last frame.
    fn shows(&self) -> Shows {
        Shows::default()
    }

    /// Variables the page leaves out: their value depends on something else than the run
    /// (thread timing), so the same replay would not always give the same page.
    fn hidden_variables(&self) -> &'static [&'static str] {
        &[]
    }

    /// A kind for the entities of this frame, asked of each live entity that is not a player or
    /// a vehicle, before [`LayerCapture::frame`].
    fn entity_kinds<'a>(&'a self, _engine: &'a Engine) -> Option<EntityKinds<'a>> {
        None
    }
}

/// The chunk of a `{x, z}` payload with integer coordinates (the chunk events'), else `None`:
/// the page writes such an event `[name, x, z]`.
pub fn chunk_payload(data: &EventData) -> Option<ChunkPos> {
    match data {
        EventData::Xz { x, z } => Some(ChunkPos::new(x.as_i64()?, z.as_i64()?)),
        _ => None,
    }
}

/// The section of a `{x, y, z}` payload with integer coordinates (the chunk events' with
/// `vertical` in force, docs/viewer.md#vertical-worlds), else `None`: the page writes such an
/// event `[name, {"x": x, "y": y, "z": z}]`, as the event's JSON.
pub fn section_payload(data: &EventData) -> Option<ChunkPos> {
    match data {
        EventData::Xyz { x, y, z } => {
            Some(ChunkPos::section(x.as_i64()?, y.as_i64()?, z.as_i64()?))
        }
        // The same payload written as JSON (exactly those three keys).
        EventData::Json(v) if v.as_object().is_some_and(|o| o.len() == 3) => {
            let coord = |k: &str| data.get(k).and_then(Value::as_i64);
            Some(ChunkPos::section(coord("x")?, coord("y")?, coord("z")?))
        }
        _ => None,
    }
}

/// The level and block of a `{level, x, z}` payload with integer values (the LOD block events'),
/// else `None`: the page writes such an event `[name, x, z, level]`.
pub fn block_payload(data: &EventData) -> Option<(u32, ChunkPos)> {
    match data {
        EventData::LevelXz { level, x, z } => Some((
            u32::try_from(level.as_u64()?).ok()?,
            ChunkPos::new(x.as_i64()?, z.as_i64()?),
        )),
        _ => None,
    }
}

/// `new` when it differs from `old` (and becomes the new `old`): a field written whole on the
/// frames it changes.
pub fn changed<T: PartialEq + Clone>(old: &mut Option<T>, new: T) -> Option<T> {
    if old.as_ref() == Some(&new) {
        return None;
    }
    *old = Some(new.clone());
    Some(new)
}

/// A position coordinate for the page: an integer when it is one (`18`, not `18.0`: most
/// positions are, and a moving entity writes two every tick).
pub fn metres(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// Chunks as the page writes them: flat, `[x0, z0, x1, z1, …]`.
pub fn flat(chunks: impl IntoIterator<Item = ChunkPos>) -> Vec<i64> {
    chunks.into_iter().flat_map(|c| [c.x, c.z]).collect()
}

/// Chunks as the page writes them with `vertical` in force (sections,
/// docs/viewer.md#vertical-worlds): `[x0, y0, z0, x1, …]`; else [`flat`].
pub fn cells(chunks: impl IntoIterator<Item = ChunkPos>, vertical: bool) -> Vec<i64> {
    if !vertical {
        return flat(chunks);
    }
    chunks.into_iter().flat_map(|c| [c.x, c.y, c.z]).collect()
}

/// Writes `value` as field `key` of `out` (a field is written once a frame).
pub fn put(out: &mut Fields, key: &str, value: impl serde::Serialize) {
    out.insert(
        key.to_owned(),
        serde_json::to_value(value).expect("plain data"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_section_payload_is_x_y_z_and_a_chunk_payload_is_x_z() {
        let s = crate::host::section_data(ChunkPos::section(1, -2, 3));
        assert_eq!(section_payload(&s), Some(ChunkPos::section(1, -2, 3)));
        assert_eq!(
            chunk_payload(&s),
            None,
            "a section is not written [name, x, z]"
        );
        let c = EventData::Xz {
            x: json!(1),
            z: json!(3),
        };
        assert_eq!(
            (section_payload(&c), chunk_payload(&c)),
            (None, Some(ChunkPos::new(1, 3)))
        );
        let j = EventData::Json(json!({"x": 1, "y": 0, "z": 3}));
        assert_eq!(section_payload(&j), Some(ChunkPos::new(1, 3)));
        for other in [
            json!({"x": 1, "y": 0, "z": 3, "hash": "00"}),
            json!({"x": 1, "y": 0.5, "z": 3}),
            json!({"x": 1, "z": 3}),
        ] {
            assert_eq!(
                section_payload(&EventData::Json(other.clone())),
                None,
                "{other}"
            );
        }
        let list = [ChunkPos::section(1, -2, 3), ChunkPos::new(4, 5)];
        assert_eq!(cells(list, true), [1, -2, 3, 4, 0, 5]);
        assert_eq!(cells(list, false), [1, 3, 4, 5]);
    }
}
