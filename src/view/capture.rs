//! The re-run of a recording and the capture of its frames: the page's own part of a frame
//! (events, variables, scene, entities) and the loop over the game's catalog's layers.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::model::{Frame, ViewData};
#[cfg(not(target_arch = "wasm32"))]
use super::HeightProbe;
use super::{ViewError, VIEW_FORMAT};
use crate::grid::ChunkPos;
use crate::host::view::{
    block_payload, changed, chunk_payload, metres, put, EntityKinds, Fields, FrameCtx,
    LayerCapture, PageIds, Shows,
};
use crate::host::{Engine, Event, PLAYER_TAG};
#[cfg(not(target_arch = "wasm32"))]
use crate::replay::{compare, Recording, Step, Verdict};

/// The tag the page draws as a vehicle (as does an entity someone rides).
const VEHICLE_TAG: &str = "vehicle";

/// The chunk side the page assumes when no layer gives one, in metres.
const DEFAULT_CHUNK_SIZE: f64 = 32.0;

/// The page's own part of a frame, and what it remembers to diff against: the events' names,
/// the variables, the scene, the live entities.
#[derive(Default)]
struct Core {
    names: BTreeMap<String, usize>,
    variables: Map<String, Value>,
    scene: Option<Value>,
    /// The live entities as the page has them, by id: their index in `ids` and their record
    /// (`[kind, tags, data]`, and the position).
    entities: BTreeMap<String, (usize, Value, [f64; 2])>,
}

impl Core {
    fn name(&mut self, names: &mut Vec<String>, name: &str) -> usize {
        if let Some(&i) = self.names.get(name) {
            return i;
        }
        names.push(name.to_owned());
        self.names.insert(name.to_owned(), names.len() - 1);
        names.len() - 1
    }

    /// The events, `[name, x, z]` for chunk-shaped payloads, `[name, x, z, level]` for block-
    /// shaped ones, `[name, data]` otherwise; the variables that changed (but those a layer
    /// leaves out); the scene when it changed.
    fn frame(
        &mut self,
        engine: &Engine,
        events: &[Event],
        names: &mut Vec<String>,
        hidden: &[&str],
        out: &mut Fields,
    ) {
        let mut listed = Vec::with_capacity(events.len());
        for e in events {
            let name = self.name(names, &e.event);
            listed.push(if let Some((level, b)) = block_payload(&e.data) {
                json!([name, b.x, b.z, level])
            } else if let Some(c) = chunk_payload(&e.data) {
                json!([name, c.x, c.z])
            } else {
                json!([name, e.data.to_value()])
            });
        }
        if !listed.is_empty() {
            put(out, "e", listed);
        }
        let mut variables = Map::new();
        for (k, v) in engine.variables().iter() {
            if hidden.contains(&k) || self.variables.get(k) == Some(v) {
                continue;
            }
            variables.insert(k.to_owned(), v.clone());
            self.variables.insert(k.to_owned(), v.clone());
        }
        if !variables.is_empty() {
            put(out, "v", variables);
        }
        let scene = engine
            .active_scene()
            .map_or(Value::Null, |s| Value::String(s.id.clone()));
        if let Some(s) = changed(&mut self.scene, scene) {
            put(out, "s", s);
        }
    }

    /// The live entities that appeared or changed since the last frame, and those gone.
    fn entities(
        &mut self,
        engine: &Engine,
        kinds: &[EntityKinds<'_>],
        ids: &mut PageIds,
        out: &mut Fields,
    ) {
        let world = engine.world();
        let ridden: std::collections::BTreeSet<&str> = world
            .iter()
            .filter_map(|e| e.rides.as_ref().map(|r| r.as_str()))
            .collect();
        let control = world.control();
        let mut now = std::collections::BTreeSet::new();
        let (mut appeared, mut moved, mut removed) = (Vec::new(), Vec::new(), Vec::new());
        for e in world.iter() {
            let id = e.id.as_str();
            let kind = if e.has_tag(PLAYER_TAG) || control == Some(&e.id) {
                "p"
            } else if e.has_tag(VEHICLE_TAG) || ridden.contains(id) {
                "v"
            } else {
                kinds.iter().find_map(|k| k(e)).unwrap_or("e")
            };
            let tags: Vec<&str> = e.tags.iter().collect();
            let data = e
                .data
                .as_deref()
                .map_or(Value::Null, |d| Value::Object(d.clone()));
            let record = json!([kind, tags, data]);
            let at = [e.position.x, e.position.z];
            now.insert(id);
            match self.entities.get_mut(id) {
                Some((_, r, p)) if *r == record && *p == at => {}
                Some((i, r, p)) if *r == record => {
                    *p = at;
                    moved.extend([json!(*i), metres(at[0]), metres(at[1])]);
                }
                _ => {
                    let i = ids.index(id);
                    appeared.push(json!([
                        i,
                        record[0],
                        metres(at[0]),
                        metres(at[1]),
                        record[1],
                        record[2]
                    ]));
                    self.entities.insert(id.to_owned(), (i, record, at));
                }
            }
        }
        let gone: Vec<String> = self
            .entities
            .keys()
            .filter(|id| !now.contains(id.as_str()))
            .cloned()
            .collect();
        for id in gone {
            if let Some((i, ..)) = self.entities.remove(&id) {
                removed.push(i);
            }
        }
        for (key, list) in [("n", appeared), ("m", moved)] {
            if !list.is_empty() {
                put(out, key, list);
            }
        }
        if !removed.is_empty() {
            put(out, "nr", removed);
        }
    }
}

/// One run's capture: the page's own part and each layer's, with the state they share (the
/// events' names, the entities' ids). [`capture`] makes one for a recording; a live page's
/// session ([`super::Live`]) keeps one beside its game.
pub(super) struct Capture {
    core: Core,
    /// Each layer's name and capture, in catalog order.
    layers: Vec<(&'static str, Box<dyn LayerCapture>)>,
    /// The variables the layers leave out.
    hidden: Vec<&'static str>,
    pub(super) names: Vec<String>,
    pub(super) ids: PageIds,
    /// Frames made so far.
    made: u64,
    /// The first frame with what a layer opens on, and the first showing anything.
    first: [Option<u64>; 2],
}

impl Capture {
    pub(super) fn new(engine: &Engine) -> Self {
        let layers: Vec<(&'static str, Box<dyn LayerCapture>)> = engine
            .view_layers()
            .iter()
            .map(|l| (l.name, (l.capture)()))
            .collect();
        let hidden = layers
            .iter()
            .flat_map(|(_, c)| c.hidden_variables().iter().copied())
            .collect();
        Capture {
            core: Core::default(),
            layers,
            hidden,
            names: Vec::new(),
            ids: PageIds::default(),
            made: 0,
            first: [None, None],
        }
    }

    /// The layers' header fields.
    pub(super) fn head(&mut self, engine: &Engine) -> Result<Fields, ViewError> {
        let mut fields = Fields::new();
        for (name, capture) in &mut self.layers {
            let mut own = Fields::new();
            capture.head(engine, &mut own);
            merge(&mut fields, own, name)?;
        }
        Ok(fields)
    }

    /// The frame that takes the page from the last step seen to `engine`'s state now.
    pub(super) fn frame(
        &mut self,
        engine: &Engine,
        events: &[Event],
        heights: Option<&dyn Fn(ChunkPos) -> Option<f64>>,
    ) -> Result<Frame, ViewError> {
        let mut fields = Fields::new();
        self.core
            .frame(engine, events, &mut self.names, &self.hidden, &mut fields);
        let kinds: Vec<EntityKinds<'_>> = self
            .layers
            .iter()
            .filter_map(|(_, c)| c.entity_kinds(engine))
            .collect();
        self.core
            .entities(engine, &kinds, &mut self.ids, &mut fields);
        drop(kinds);
        let ctx = FrameCtx {
            engine,
            events,
            heights,
        };
        for (name, capture) in &mut self.layers {
            let mut own = Fields::new();
            capture.frame(&ctx, &mut self.ids, &mut own);
            merge(&mut fields, own, name)?;
        }
        let frame: Frame =
            serde_json::from_value(Value::Object(fields)).map_err(|e| ViewError::Layer {
                layer: self
                    .layers
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
                message: format!("a frame field does not read as the page's: {e}"),
            })?;
        let mut shows = Shows {
            opening: false,
            anything: !self.core.entities.is_empty(),
        };
        for (_, c) in &self.layers {
            let s = c.shows();
            shows.opening |= s.opening;
            shows.anything |= s.anything;
        }
        for (slot, yes) in self.first.iter_mut().zip([shows.opening, shows.anything]) {
            if yes && slot.is_none() {
                *slot = Some(self.made);
            }
        }
        self.made += 1;
        Ok(frame)
    }
}

/// Adds a layer's fields to the frame's: a field is written by one part of the page only.
fn merge(fields: &mut Fields, own: Fields, layer: &str) -> Result<(), ViewError> {
    for (key, value) in own {
        if fields.contains_key(&key) {
            return Err(ViewError::Layer {
                layer: layer.to_owned(),
                message: format!("writes the field `{key}`, which another part of the page writes"),
            });
        }
        fields.insert(key, value);
    }
    Ok(())
}

#[cfg(not(target_arch = "wasm32"))]
/// Re-runs `recording`, checks it reproduces, and captures one frame per tick, each layer of
/// the game's catalog adding its part. `heights`, when given, is asked the height of every chunk
/// as it loads (and the layers shade the blocks of the levels of detail too).
pub fn capture(
    recording: &Recording,
    title: &str,
    heights: Option<&HeightProbe<'_>>,
) -> Result<ViewData, ViewError> {
    let (_dir, mut game, inputs) = recording.game()?;
    let mut capture = Capture::new(game.engine());
    let scripts = scripts(game.engine());
    let head = capture.head(game.engine())?;
    let first = {
        let g = &game;
        let bound = heights.map(|p| move |c| p(g, c));
        let heights = bound
            .as_ref()
            .map(|b| b as &dyn Fn(ChunkPos) -> Option<f64>);
        capture.frame(game.engine(), &[], heights)?
    };
    let mut frames = vec![first];
    let mut steps = Vec::new();
    let mut events_seen = 0;
    let mut last_tick = game.engine().tick_count();
    let mut failed = None;
    // Stopped at the first step that differs from the recording's, as `replay` does (a
    // recording claiming more ticks than it holds is not run to its end first).
    game.run_while(&inputs, recording.ticks, |game, _| {
        let events = &game.engine().events()[events_seen..];
        events_seen += events.len();
        let tick = game.engine().tick_count();
        let step = Step::new(tick, events);
        let same = recording
            .steps
            .get(steps.len())
            .is_some_and(|e| (e.tick, &e.digest) == (step.tick, &step.digest));
        steps.push(step);
        let bound = heights.map(|p| move |c| p(game, c));
        let heights = bound
            .as_ref()
            .map(|b| b as &dyn Fn(ChunkPos) -> Option<f64>);
        match capture.frame(game.engine(), events, heights) {
            Ok(mut frame) => {
                if tick != last_tick + 1 {
                    frame.tick = Some(tick);
                }
                frames.push(frame);
            }
            Err(e) => {
                failed = Some(e);
                return false;
            }
        }
        last_tick = tick;
        same
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if let Verdict::Differs(d) = compare(&recording.steps, &steps) {
        return Err(ViewError::Differs(Box::new(d)));
    }
    let start = capture.first[0].or(capture.first[1]).unwrap_or(0);
    let mut data = view_data(head, title, scripts);
    data.start = start;
    data.ticks = frames.len() as u64 - 1;
    data.names = capture.names;
    data.ids = capture.ids.into_ids();
    data.frames = frames;
    Ok(data)
}

/// The page model's header from the layers' header fields (`head`), with no frame yet.
pub(super) fn view_data(mut head: Fields, title: &str, scripts: Vec<&'static str>) -> ViewData {
    let chunk_size = head
        .remove("chunkSize")
        .and_then(|v| v.as_f64())
        .unwrap_or(DEFAULT_CHUNK_SIZE);
    let cells_per_chunk = head
        .remove("cellsPerChunk")
        .and_then(|v| v.as_u64())
        .and_then(|n| u32::try_from(n).ok());
    ViewData {
        format: VIEW_FORMAT,
        version: 1,
        title: title.to_owned(),
        start: 0,
        chunk_size,
        ticks: 0,
        names: Vec::new(),
        ids: Vec::new(),
        frames: Vec::new(),
        cells_per_chunk,
        extra: head,
        scripts,
    }
}

/// The drawings of the game's layers, in catalog order (those that have one).
pub(super) fn scripts(engine: &Engine) -> Vec<&'static str> {
    engine
        .view_layers()
        .iter()
        .map(|l| l.script)
        .filter(|s| !s.is_empty())
        .collect()
}

/// A kit of a test's own with a layer: a field each frame, a header field, a drawing.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Game;
    use crate::host::view::ViewLayer;
    use crate::host::{CatalogEntry, Kit, KitCatalog, KitManifest};
    use serde_json::json;

    struct Quiet;
    impl Kit for Quiet {
        fn id(&self) -> &str {
            "test.quiet"
        }
    }

    #[derive(Default)]
    struct Counting(u64, &'static str);
    impl LayerCapture for Counting {
        fn head(&mut self, _: &Engine, out: &mut Fields) {
            put(out, "quietHead", "hello");
        }
        fn frame(&mut self, ctx: &FrameCtx<'_>, _: &mut PageIds, out: &mut Fields) {
            self.0 += 1;
            put(out, self.1, [self.0, ctx.engine.tick_count()]);
        }
    }

    fn game(layer: ViewLayer) -> Game {
        let mut catalog: KitCatalog = crate::kits::builtin_catalog();
        catalog.register(
            CatalogEntry::new(
                KitManifest::simple("test.quiet", "1.0.0"),
                Box::new(|_| Ok(Box::new(Quiet))),
            )
            .view(layer),
        );
        let scene = r#"{"kits": [{"id": "world.ground"}, {"id": "test.quiet"}]}"#;
        Game::from_scene_text(scene, "scene.json", ".".as_ref(), &catalog).unwrap()
    }

    #[test]
    fn a_kits_own_layer_writes_its_fields_and_the_page_runs_its_drawing() {
        let layer = ViewLayer {
            name: "test.quiet",
            capture: || Box::new(Counting(0, "quiet")),
            script: "layer({ caption() { return ' · quiet'; } });",
        };
        let mut g = game(layer);
        let mut capture = Capture::new(g.engine());
        let head = capture.head(g.engine()).unwrap();
        assert_eq!(head["quietHead"], "hello");
        assert_eq!(head["chunkSize"], 32.0, "the streaming layer's default");
        let mut frames = vec![capture.frame(g.engine(), &[], None).unwrap()];
        for _ in 0..2 {
            g.tick();
            frames.push(capture.frame(g.engine(), &[], None).unwrap());
        }
        let quiet: Vec<&Value> = frames.iter().map(|f| &f.extra["quiet"]).collect();
        assert_eq!(quiet, [&json!([1, 0]), &json!([2, 1]), &json!([3, 2])]);
        // Written after the fields the page names, as the layer wrote it.
        let text = serde_json::to_string(&frames[1]).unwrap();
        assert!(text.ends_with(r#""quiet":[2,1]}"#), "{text}");
        assert!(g
            .engine()
            .view_layers()
            .iter()
            .any(|l| l.script == layer.script));
    }

    #[test]
    fn a_layer_writing_a_field_another_part_writes_is_refused() {
        let layer = ViewLayer {
            name: "test.quiet",
            capture: || Box::new(Counting(0, "r")),
            script: "",
        };
        let g = game(layer);
        let mut capture = Capture::new(g.engine());
        match capture.frame(g.engine(), &[], None) {
            Err(ViewError::Layer { layer, message }) => {
                assert_eq!(layer, "test.quiet");
                assert!(message.contains("`r`"), "{message}");
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
