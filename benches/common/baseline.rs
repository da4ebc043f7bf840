//! The baseline the benchmarks compare against: the straightforward per-tick reconcile that the
//! seed `chunk_streaming_server.txt` describes, as a kit with the same id, hooks, events and
//! dormancy semantics as `world.streaming`. Every tick it rebuilds one wanted set from every
//! focus's square (the union of docs/reference/streaming.md#the-wanted-union with
//! `focus: "players"`), diffs it against the loaded set with hash sets, sorts the missing chunks by
//! their nearest focus, and rescans every entity for dormancy. No tickets and no cap. It is
//! deliberately naive; `tests/baseline.rs` checks that it produces the same events as the real kit,
//! so the comparison is fair.

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;
use world_streaming::grid::{Bounds, ChunkPos, Grid, Position};
use world_streaming::host::KitCatalog;
use world_streaming::host::{
    chunk_data, Cancel, Ctx, Event, HookArgs, HookValue, Install, Kit, KitError, KitSpec, Problem,
    SceneDef, Services, PLAYER_MOVED,
};
use world_streaming::json::from_value;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::ground::{GroundService, GROUND};
use world_streaming::kits::streaming::{
    manifest, FocusMode, Overrides, StreamingConfig, STREAMING,
};
use world_streaming::kits::streaming::{
    CHUNK_LOADED, CHUNK_UNLOADED, HOOK_CHUNK_LOAD, HOOK_CHUNK_UNLOAD,
};

#[derive(PartialEq)]
enum Kind {
    Load,
    Unload,
}

pub struct NaiveKit {
    config: StreamingConfig,
    layers: IndexMap<String, Overrides>,
    layer: Overrides,
    grid: Grid,
    bounds: Option<Bounds>,
    active: bool,
    foci: Vec<Position>,
    last_moved: Option<Position>,
    loaded: HashSet<ChunkPos>,
    refusals: HashMap<ChunkPos, Kind>,
}

/// The built-in catalog with `world.streaming` replaced by the baseline.
pub fn catalog() -> KitCatalog {
    let mut c = builtin_catalog();
    c.add(manifest(), Box::new(NaiveKit::from_spec));
    c
}

impl NaiveKit {
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let config: StreamingConfig = match spec.config {
            Some(v) => from_value(v, &spec.config_path).map_err(|p| vec![p])?,
            None => StreamingConfig::default(),
        };
        let mut layers = IndexMap::new();
        for s in spec.scenes {
            if let Some(v) = s.layers.get(STREAMING) {
                layers.insert(s.id.clone(), from_value(v, "").map_err(|p| vec![p])?);
            }
        }
        Ok(Box::new(NaiveKit {
            grid: Grid::new(config.chunk_size.get()),
            config,
            layers,
            layer: Overrides::default(),
            bounds: None,
            active: false,
            foci: Vec::new(),
            last_moved: None,
            loaded: HashSet::new(),
            refusals: HashMap::new(),
        }))
    }

    fn ask(ctx: &mut Ctx<'_>, hook: &'static str, c: ChunkPos) -> Option<Cancel> {
        let fields = [("x", HookValue::Int(c.x)), ("z", HookValue::Int(c.z))];
        ctx.hooks.ask(
            &HookArgs {
                hook,
                fields: &fields,
            },
            ctx.events,
        )
    }

    fn dormancy(&self, ctx: &mut Ctx<'_>) {
        let changes: Vec<_> = ctx
            .world
            .iter()
            .filter(|e| e.has_tag("streamable"))
            .map(|e| {
                (
                    e.id.clone(),
                    !self.loaded.contains(&self.grid.chunk_of(e.position)),
                )
            })
            .collect();
        for (id, dormant) in changes {
            ctx.world.set_derived_tag(&id, "dormant", dormant);
        }
    }
}

impl Kit for NaiveKit {
    fn id(&self) -> &str {
        STREAMING
    }

    fn install(&mut self, host: &mut Install<'_>) {
        host.hooks.declare(HOOK_CHUNK_LOAD);
        host.hooks.declare(HOOK_CHUNK_UNLOAD);
    }

    fn start(&mut self, services: &Services) -> Result<(), KitError> {
        self.bounds = services
            .get::<dyn GroundService>(GROUND)
            .and_then(|g| g.bounds());
        Ok(())
    }

    fn on_enter(&mut self, scene: &SceneDef, _: &mut Ctx<'_>) {
        self.active = true;
        self.layer = self.layers.get(&scene.id).copied().unwrap_or_default();
        self.foci = scene.entry.into_iter().collect();
    }

    fn on_leave(&mut self, ctx: &mut Ctx<'_>) {
        let mut all: Vec<ChunkPos> = self.loaded.drain().collect();
        all.sort();
        for c in all {
            ctx.events.emit(CHUNK_UNLOADED, chunk_data(c));
        }
        self.refusals.clear();
        self.active = false;
        self.foci.clear();
        self.last_moved = None;
        self.dormancy(ctx);
    }

    fn on_event(&mut self, event: &Event, _: &mut Ctx<'_>) {
        if event.event == PLAYER_MOVED && self.active {
            let f = |k: &str| event.data[k].as_f64().unwrap_or(0.0);
            self.last_moved = Some(Position::new(f("x"), f("z")));
        }
    }

    fn on_entities_changed(&mut self, _: &[world_streaming::host::EntityId], ctx: &mut Ctx<'_>) {
        self.dormancy(ctx);
    }

    fn tick(&mut self, ctx: &mut Ctx<'_>) {
        let settings = self.config.settings(self.layer, Overrides::default());
        if self.active {
            let world = &*ctx.world;
            let focus_of = |e| world.vehicle_of(e).unwrap_or(e).position;
            let anchors: Vec<Position> = match settings.focus {
                FocusMode::Player => world.player().map(focus_of).into_iter().collect(),
                FocusMode::Players => world.anchors().map(focus_of).collect(),
            };
            if !anchors.is_empty() {
                self.foci = anchors;
            } else if let Some(m) = self.last_moved {
                self.foci = vec![m];
            }
        }
        if self.active && !self.foci.is_empty() {
            let r = u64::from(settings.radius);
            let centres: Vec<ChunkPos> = self.foci.iter().map(|f| self.grid.chunk_of(*f)).collect();
            let mut wanted: HashSet<ChunkPos> = HashSet::new();
            for c in &centres {
                wanted.extend(self.grid.square(*c, settings.radius, self.bounds.as_ref()));
            }
            let kept = |c: &ChunkPos| centres.iter().any(|f| c.ring_distance(*f) <= r + 1);
            self.refusals.retain(|c, k| match k {
                Kind::Load => wanted.contains(c),
                Kind::Unload => !kept(c),
            });
            let mut release: Vec<ChunkPos> = self
                .loaded
                .iter()
                .filter(|c| !kept(c) && !self.refusals.contains_key(c))
                .copied()
                .collect();
            release.sort();
            for c in release {
                match Self::ask(ctx, HOOK_CHUNK_UNLOAD, c) {
                    None => {
                        self.loaded.remove(&c);
                        ctx.events.emit(CHUNK_UNLOADED, chunk_data(c));
                    }
                    Some(_) => {
                        self.refusals.insert(c, Kind::Unload);
                    }
                }
            }
            let key = |c: &ChunkPos| {
                self.foci
                    .iter()
                    .zip(&centres)
                    .filter(|(_, f)| c.ring_distance(**f) <= r)
                    .map(|(p, _)| self.grid.distance_sq(*p, *c))
                    .min_by(f64::total_cmp)
                    .unwrap_or(f64::INFINITY)
            };
            let mut missing: Vec<ChunkPos> = wanted
                .iter()
                .filter(|c| !self.loaded.contains(c) && !self.refusals.contains_key(c))
                .copied()
                .collect();
            missing.sort_by(|a, b| key(a).total_cmp(&key(b)).then(a.cmp(b)));
            for c in missing.iter().take(settings.loads_per_tick) {
                match Self::ask(ctx, HOOK_CHUNK_LOAD, *c) {
                    None => {
                        self.loaded.insert(*c);
                        ctx.events.emit(CHUNK_LOADED, chunk_data(*c));
                    }
                    Some(_) => {
                        self.refusals.insert(*c, Kind::Load);
                    }
                }
            }
            let pending = missing.len() - missing.len().min(settings.loads_per_tick);
            ctx.variables.set("world.chunks.pending", pending as u64);
        } else {
            ctx.variables.set("world.chunks.pending", 0u64);
        }
        self.dormancy(ctx);
        ctx.variables
            .set("world.chunks.loaded", self.loaded.len() as u64);
    }
}
