//! The kit's state, shared between the kit (which ticks) and the service handle (which other kits
//! and mods hold). Borrows are kept short: no borrow is held while hooks or callbacks run, so a
//! Lua handler or an `onChunk` callback may read the service.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::{ChunkPos, Grid, Position};
use crate::host::{ModId, Problem, HOOK_CHUNK_LOAD, HOOK_CHUNK_UNLOAD};

use super::config::{BudgetMs, Overrides, Radius, Settings, StreamingConfig};
use super::dormancy::Dormancy;
use super::plan::{Held, RefusalKind, Residency};
use super::service::{ChunkCallback, ChunkSubscription, Refusal, StreamingService, Subscriber};

type Subscribers = Rc<RefCell<Vec<Rc<Subscriber>>>>;

pub(crate) struct State {
    pub(crate) config: StreamingConfig,
    pub(crate) layers: IndexMap<String, Overrides>,
    /// The active scene's layer.
    pub(crate) layer: Overrides,
    /// Set by mods; saved with the game.
    pub(crate) overrides: Overrides,
    pub(crate) residency: Residency,
    pub(crate) dormancy: Dormancy,
    pub(crate) active: bool,
    pub(crate) last_moved: Option<Position>,
    subscribers: Subscribers,
    /// Whether the subscribers are being told what a load changed.
    pub(crate) restoring: Cell<bool>,
}

impl State {
    pub(crate) fn new(config: StreamingConfig, layers: IndexMap<String, Overrides>) -> Self {
        State {
            residency: Residency::new(Grid::new(config.chunk_size.0), None),
            config,
            layers,
            layer: Overrides::default(),
            overrides: Overrides::default(),
            dormancy: Dormancy::default(),
            active: false,
            last_moved: None,
            subscribers: Subscribers::default(),
            restoring: Cell::new(false),
        }
    }

    /// The settings in force for the next tick.
    pub(crate) fn settings(&self) -> Settings {
        self.config.settings(self.layer, self.overrides)
    }

    pub(crate) fn save_section(&self) -> SaveSection {
        SaveSection {
            loaded: self.residency.loaded().collect(),
            focus: self.residency.focus(),
            last_moved: self.last_moved,
            refusals: refusal_list(&self.residency),
            overrides: self.overrides,
        }
    }

    /// Validates a save section completely against this kit's grid and bounds, and against
    /// whether the save has an active scene.
    pub(crate) fn check_section(&self, s: SaveSection, active: bool) -> Result<Prepared, Problem> {
        if !active {
            for (key, empty) in [
                ("loaded", s.loaded.is_empty()),
                ("refusals", s.refusals.is_empty()),
                ("focus", s.focus.is_none()),
                ("lastMoved", s.last_moved.is_none()),
            ] {
                if !empty {
                    return Err(Problem::new(
                        key,
                        "expected nothing here: the save has no active scene (\"scene\": null)",
                    ));
                }
            }
        }
        if s.focus.is_none() && !(s.loaded.is_empty() && s.refusals.is_empty()) {
            return Err(Problem::new(
                "focus",
                "expected a focus: chunks are loaded or refused, which needs one",
            ));
        }
        let grid = self.residency.grid();
        let mut loaded = BTreeSet::new();
        for (i, c) in s.loaded.iter().enumerate() {
            if !grid.overlaps(*c, self.residency.bounds()) {
                return Err(Problem::new(
                    format!("loaded[{i}]"),
                    format!("chunk {c} lies outside the world.ground bounds"),
                ));
            }
            if !loaded.insert(*c) {
                return Err(Problem::new(
                    format!("loaded[{i}]"),
                    format!("chunk {c} is listed twice"),
                ));
            }
        }
        let mut refusals = BTreeMap::new();
        for (i, r) in s.refusals.into_iter().enumerate() {
            let c = ChunkPos::new(r.x, r.z);
            let path = format!("refusals[{i}]");
            if !grid.overlaps(c, self.residency.bounds()) {
                return Err(Problem::new(
                    path,
                    format!("chunk {c} lies outside the world.ground bounds"),
                ));
            }
            if r.reason.len() > crate::mods::json::MAX_REASON_LEN {
                return Err(Problem::new(
                    format!("{path}.reason"),
                    format!(
                        "expected at most {} bytes, got {}",
                        crate::mods::json::MAX_REASON_LEN,
                        r.reason.len()
                    ),
                ));
            }
            crate::files::check_name(&r.by).map_err(|m| Problem::new(format!("{path}.mod"), m))?;
            let kind = match r.hook.as_str() {
                HOOK_CHUNK_LOAD => RefusalKind::Load,
                HOOK_CHUNK_UNLOAD => RefusalKind::Unload,
                other => {
                    return Err(Problem::new(
                        format!("{path}.hook"),
                        format!("expected {HOOK_CHUNK_LOAD} or {HOOK_CHUNK_UNLOAD}, got {other:?}"),
                    ))
                }
            };
            match (kind, loaded.contains(&c)) {
                (RefusalKind::Unload, false) => {
                    return Err(Problem::new(
                        path,
                        format!("an unload refusal of chunk {c}, which is not loaded"),
                    ))
                }
                (RefusalKind::Load, true) => {
                    return Err(Problem::new(
                        path,
                        format!("a load refusal of chunk {c}, which is loaded"),
                    ))
                }
                _ => {}
            }
            let held = Held {
                kind,
                by: r.by,
                reason: r.reason,
            };
            if refusals.insert(c, held).is_some() {
                return Err(Problem::new(path, format!("a second refusal of chunk {c}")));
            }
        }
        for (name, p) in [("focus", s.focus), ("lastMoved", s.last_moved)] {
            if let Some(p) = p {
                p.check().map_err(|p| p.under(name))?;
            }
        }
        Ok(Prepared {
            loaded,
            refusals,
            focus: s.focus,
            last_moved: s.last_moved,
            overrides: s.overrides,
        })
    }

    pub(crate) fn restore(&mut self, p: Prepared, scene: Option<&str>) {
        self.active = scene.is_some();
        self.layer = scene
            .and_then(|s| self.layers.get(s))
            .copied()
            .unwrap_or_default();
        self.overrides = p.overrides;
        self.last_moved = p.last_moved;
        let settings = self.settings();
        let focus = if self.active { p.focus } else { None };
        self.residency
            .restore(p.loaded, p.refusals, focus, settings.radius);
    }
}

fn refusal_list(residency: &Residency) -> Vec<Refusal> {
    residency
        .refusals()
        .map(|(c, h)| Refusal {
            x: c.x,
            z: c.z,
            hook: match h.kind {
                RefusalKind::Load => HOOK_CHUNK_LOAD,
                RefusalKind::Unload => HOOK_CHUNK_UNLOAD,
            }
            .to_owned(),
            by: h.by.clone(),
            reason: h.reason.clone(),
        })
        .collect()
}

/// The kit's section of a save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SaveSection {
    /// Loaded chunks, in row order.
    pub loaded: Vec<ChunkPos>,
    /// The last focus (`null` when there is none).
    pub focus: Option<Position>,
    /// The position of the last `player.moved` event in this scene.
    pub last_moved: Option<Position>,
    /// Held refusals, in row order.
    pub refusals: Vec<Refusal>,
    /// `radius` / `budgetMs` set by mods.
    pub overrides: Overrides,
}

/// A validated section, ready to apply.
pub(crate) struct Prepared {
    loaded: BTreeSet<ChunkPos>,
    refusals: BTreeMap<ChunkPos, Held>,
    focus: Option<Position>,
    last_moved: Option<Position>,
    overrides: Overrides,
}

/// Runs the `onChunk` callbacks, in subscription order, with no borrow of the state held.
pub(crate) fn notify(state: &RefCell<State>, chunk: ChunkPos, loaded: bool) {
    let list = state.borrow().subscribers.clone();
    if list.borrow().is_empty() {
        return;
    }
    let snapshot: Vec<Rc<Subscriber>> = list.borrow().clone();
    for s in snapshot {
        if s.alive.get() {
            (s.callback.borrow_mut())(chunk, loaded);
        }
    }
}

/// The service handle registered as `world.streaming`.
pub(crate) struct Handle(pub(crate) Rc<RefCell<State>>);

impl StreamingService for Handle {
    fn loaded(&self) -> Vec<ChunkPos> {
        self.0.borrow().residency.loaded().collect()
    }

    fn pending(&self) -> Vec<ChunkPos> {
        self.0.borrow().residency.pending()
    }

    fn is_loaded(&self, chunk: ChunkPos) -> bool {
        self.0.borrow().residency.is_loaded(chunk)
    }

    fn chunk_of(&self, pos: Position) -> ChunkPos {
        self.0.borrow().residency.grid().chunk_of(pos)
    }

    fn around(&self, pos: Position) -> Vec<ChunkPos> {
        let st = self.0.borrow();
        st.residency
            .grid()
            .around(pos, st.settings().radius, st.residency.bounds())
    }

    fn on_chunk(&self, callback: ChunkCallback) -> ChunkSubscription {
        let list = self.0.borrow().subscribers.clone();
        let subscriber = Rc::new(Subscriber {
            alive: Cell::new(true),
            callback: RefCell::new(callback),
        });
        list.borrow_mut().push(subscriber.clone());
        ChunkSubscription {
            subscriber: Rc::downgrade(&subscriber),
            list: Rc::downgrade(&list),
        }
    }

    fn chunk_size(&self) -> f64 {
        self.0.borrow().residency.grid().size()
    }

    fn refusals(&self) -> Vec<Refusal> {
        refusal_list(&self.0.borrow().residency)
    }

    fn release(&self, chunk: ChunkPos) -> bool {
        self.0.borrow_mut().residency.release_refusal(chunk)
    }

    fn focus(&self) -> Option<Position> {
        self.0.borrow().residency.focus()
    }

    fn radius(&self) -> u32 {
        self.0.borrow().settings().radius
    }

    fn loads_per_tick(&self) -> usize {
        self.0.borrow().settings().loads_per_tick
    }

    fn bounds(&self) -> Option<crate::grid::Bounds> {
        self.0.borrow().residency.bounds().copied()
    }

    fn set_radius(&self, _by: &ModId, radius: Radius) {
        self.0.borrow_mut().overrides.radius = Some(radius);
    }

    fn set_budget_ms(&self, _by: &ModId, budget: BudgetMs) {
        self.0.borrow_mut().overrides.budget_ms = Some(budget);
    }

    fn restoring(&self) -> bool {
        self.0.borrow().restoring.get()
    }
}
