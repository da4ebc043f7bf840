//! The streaming kit's save section (docs/reference/saves.md#the-streaming-section): what it holds,
//! writing it from the state, checking a loaded one completely (one check per key) before anything
//! changes, and restoring it.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::{ChunkPos, Position, MAX_CHUNK_COORD};
use crate::host::{EntityId, Problem, SaveFacts, World};
use crate::limits::{check_name, MAX_ENTITIES, MAX_REASON_LEN};

use super::config::{
    is_lod_step, Lod, Overrides, Settings, MAX_LOD_LEVELS, MAX_LOD_STEP, MAX_RADIUS, MIN_LOD_STEP,
};
use super::events::{HOOK_CHUNK_LOAD, HOOK_CHUNK_UNLOAD};
use super::foci::{check_id, Measure, Ticket, TicketError, Tickets, MAX_TICKETS};
use super::residency::{FocusView, Held, RefusalKind};
use super::service::Refusal;
use super::state::{refusal_list, State};

/// A focus in force, as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SavedFocus {
    /// Where.
    pub at: Position,
    /// Its radius.
    pub radius: u32,
    /// Whether it stands for a ticket.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ticket: bool,
    /// Whether it is a predicted focus (version 3; after the non-ticket foci, before tickets).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub predicted: bool,
}

/// An anchor's focus at the last resolution, as saved (version 3): look-ahead's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedAnchor {
    /// The anchor's entity id.
    pub id: String,
    /// Its focus.
    pub at: Position,
}

/// A ticket, as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SavedTicket {
    /// Its id.
    pub id: String,
    // The ticket's fields, written out rather than flattened: a bad value in a flattened
    // struct is told at the ticket, not at its key.
    /// Where (its `y` is ignored).
    pub at: Position,
    /// Rings wanted around `at`'s chunk.
    pub radius: u32,
    /// The first tick it counts in.
    pub from: u64,
    /// The last tick it counts in.
    pub until: u64,
    /// Whether `world.ticket.ready` was emitted for it.
    #[serde(default)]
    pub announced: bool,
    /// Its priority (docs/reference/streaming.md#priorities; absent: 0; never `null`).
    #[serde(
        default,
        deserialize_with = "crate::kits::streaming::config::not_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "crate::kits::streaming::config::Priority")]
    pub priority: Option<crate::kits::streaming::config::Priority>,
}

impl SavedTicket {
    fn of(id: &str, t: &Ticket) -> SavedTicket {
        SavedTicket {
            id: id.to_owned(),
            at: t.at,
            radius: t.radius,
            from: t.from,
            until: t.until,
            announced: t.announced,
            priority: (t.priority > 0).then(|| {
                crate::kits::streaming::config::Priority::new(u32::from(t.priority)).expect("a u8")
            }),
        }
    }

    fn ticket(&self) -> Ticket {
        Ticket {
            at: self.at,
            radius: self.radius,
            from: self.from,
            until: self.until,
            announced: self.announced,
            priority: self.priority.map_or(0, |p| p.get() as u8), // checked 0..=255
        }
    }
}

/// The last tick a loaded chunk was wanted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LastWanted {
    /// Chunk column.
    pub x: i64,
    /// The section row of a vertical world (docs/reference/saves.md#sections-in-saves); absent
    /// in a flat world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<i64>,
    /// Chunk row.
    pub z: i64,
    /// The tick.
    pub tick: u64,
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
    /// Settings set by mods.
    pub overrides: Overrides,
    /// The foci in force, in order: non-ticket ones, then tickets (version 2; a version-1
    /// section has `focus` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foci: Option<Vec<SavedFocus>>,
    /// Held tickets in id order (version 2).
    #[serde(default)]
    pub tickets: Vec<SavedTicket>,
    /// The last tick each loaded chunk was wanted, row order; absent: 0 (version 2).
    #[serde(default)]
    pub last_wanted: Vec<LastWanted>,
    /// Whether the wanted chunks outnumbered the cap (version 2).
    #[serde(default)]
    pub over_capacity: bool,
    /// The `"fair"` turn (version 3; absent: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// Each anchor's focus at the last resolution, anchor order (version 3; absent: none, so
    /// the next tick predicts nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<SavedAnchor>>,
    /// The running sum of `world.chunks.holes` (version 3; absent: 0). Present exactly when
    /// the game used scheduling (docs/reference/streaming.md#holes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hole_ticks: Option<u64>,
    /// The loaded LOD blocks, one list per level (level 1 first), each in row order (version
    /// 3, docs/reference/config.md#outputs-that-appear-only-when-used; absent: none). Present
    /// exactly when the game uses `lod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lod: Option<Vec<Vec<ChunkPos>>>,
    /// The running sum of `world.lod.holes` (version 3; absent: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lod_hole_ticks: Option<u64>,
    /// The step each level's listed blocks were planned with, one entry per list of `lod` (0
    /// for a level without blocks), present only when one is not its level's step in force:
    /// the levels changed (a mod's `setLod`) and blocks of the old step are still loaded until
    /// the next tick releases them (version 3; absent: every level's step in force).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lod_steps: Option<Vec<u32>>,
    /// The chunks complete at the end of the last tick and still loaded, row order (version
    /// 4, docs/reference/streaming.md#complete-chunks; absent: none). Present exactly when the
    /// game uses `neighbours` above 0, so that a loaded game announces what the uninterrupted
    /// one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<Vec<ChunkPos>>,
}

/// A validated section, ready to apply.
pub(crate) struct Prepared {
    loaded: BTreeSet<ChunkPos>,
    refusals: BTreeMap<ChunkPos, Held>,
    last_moved: Option<Position>,
    overrides: Overrides,
    foci: Vec<FocusView>,
    anchors: usize,
    /// Saved before foci had radii: the one focus takes the radius in force.
    version_1: bool,
    tickets: Tickets,
    last_wanted: BTreeMap<ChunkPos, u64>,
    over_capacity: bool,
    predicted: usize,
    turn: usize,
    history: Vec<(EntityId, Position)>,
    hole_ticks: Option<u64>,
    lod: Option<Vec<Vec<ChunkPos>>>,
    lod_hole_ticks: Option<u64>,
    lod_steps: Option<Vec<u32>>,
    complete: Option<Vec<ChunkPos>>,
}

impl State {
    pub(crate) fn save_section(&self) -> SaveSection {
        // The rows are written in the scene in force's world (as a load checks them).
        let vertical = self.settings().vertical.is_some();
        let foci = self
            .residency
            .foci()
            .enumerate()
            .map(|(i, v)| SavedFocus {
                at: v.pos,
                radius: v.radius,
                ticket: i >= self.before_tickets(),
                predicted: i >= self.anchor_foci && i < self.before_tickets(),
            })
            .collect();
        let lod = self.uses_lod().then(|| {
            let levels = (0..crate::kits::streaming::config::MAX_LOD_LEVELS)
                .map(|k| self.lod.loaded(k).collect::<Vec<_>>());
            let mut list: Vec<Vec<ChunkPos>> = levels.collect();
            while list.last().is_some_and(Vec::is_empty) {
                list.pop();
            }
            list
        });
        SaveSection {
            loaded: self.residency.loaded().collect(),
            focus: self.residency.focus(),
            last_moved: self.last_moved,
            refusals: refusal_list(&self.residency),
            overrides: self.overrides(),
            foci: Some(foci),
            tickets: self
                .tickets
                .iter()
                .map(|(id, t)| SavedTicket::of(id, t))
                .collect(),
            last_wanted: self
                .residency
                .loaded()
                .map(|c| LastWanted {
                    x: c.x,
                    y: vertical.then_some(c.y),
                    z: c.z,
                    tick: self.residency.last_wanted(c),
                })
                .filter(|l| l.tick > 0)
                .collect(),
            over_capacity: self.over_capacity,
            turn: self.uses_scheduling().then_some(self.turn as u64),
            history: self.uses_scheduling().then(|| {
                self.history
                    .iter()
                    .map(|(id, at)| SavedAnchor {
                        id: id.as_str().to_owned(),
                        at: *at,
                    })
                    .collect()
            }),
            hole_ticks: self.uses_scheduling().then_some(self.hole_ticks),
            lod_steps: lod.as_ref().and_then(|list| self.lod_steps(list)),
            lod,
            lod_hole_ticks: self.uses_lod().then_some(self.lod_hole_ticks),
            complete: self
                .uses_neighbours()
                .then(|| self.residency.announced_complete().collect()),
        }
    }

    /// The step each LOD level's blocks are planned with once section `s` is restored with
    /// the scene `scene` active: [`planned_steps`] over the levels then in force (this kit's
    /// config, the scene's layer, the section's overrides), as [`State::restore`] sets them.
    pub(crate) fn lod_steps_after_load(
        &self,
        s: &SaveSection,
        scene: Option<&str>,
    ) -> [u32; MAX_LOD_LEVELS] {
        let lod = self.settings_after_load(s.overrides, scene).lod;
        planned_steps(s.lod_steps.as_deref(), &lod)
    }

    /// The settings in force once a section with `overrides` is restored with the scene
    /// `scene` active: this kit's config, the scene's layer, the overrides (as
    /// [`State::restore`] sets them).
    fn settings_after_load(&self, overrides: Overrides, scene: Option<&str>) -> Settings {
        let layer = scene
            .and_then(|name| self.layers.get(name))
            .copied()
            .unwrap_or_default();
        self.config.settings(layer, overrides)
    }

    /// `lodSteps` for the listed blocks `list`: the step each level's blocks were planned with,
    /// when one is not the level's step in force (else `None`, and nothing is written).
    fn lod_steps(&self, list: &[Vec<ChunkPos>]) -> Option<Vec<u32>> {
        let settings = self.settings();
        let in_force = settings.lod.levels();
        let steps: Vec<u32> = list
            .iter()
            .enumerate()
            .map(|(k, blocks)| {
                if blocks.is_empty() {
                    0
                } else {
                    self.lod.planned_step(k)
                }
            })
            .collect();
        let differs = steps
            .iter()
            .enumerate()
            .any(|(k, &s)| s != 0 && Some(s) != in_force.get(k).map(|l| l.step));
        differs.then_some(steps)
    }

    /// Validates a save section completely against the rest of the save (whether it has an
    /// active scene, its entities) — one check per key, in the section's order, so the first
    /// problem found is always the same one — and then against this kit's grid and bounds (a
    /// save checked on its own: a kit of the default settings, no bounds). So what a save
    /// checked on its own is refused for, every load refuses first, with the same problem.
    pub(crate) fn check_section(
        &self,
        s: SaveSection,
        save: &SaveFacts<'_>,
    ) -> Result<Prepared, Problem> {
        let active = save.scene.is_some();
        if !self.vertical_for(save.scene) {
            check_flat(&s)?;
        }
        check_scene_less(&s, active)?;
        let refused: Vec<ChunkPos> = s.refusals.iter().map(refused_chunk).collect();
        let loaded = check_loaded(&s.loaded)?;
        let refusals = check_refusals(s.refusals, &loaded)?;
        for (name, p) in [("focus", s.focus), ("lastMoved", s.last_moved)] {
            if let Some(p) = p {
                p.check().map_err(|p| p.under(name))?;
            }
        }
        let version_1 = s.foci.is_none();
        let (foci, anchors, predicted) = check_foci(s.foci, s.focus, active)?;
        let measure = Measure::of(&self.settings_after_load(s.overrides, save.scene));
        let tickets = check_tickets(s.tickets, self.config.max_ticket_chunks(), measure)?;
        let last_wanted = check_last_wanted(&s.last_wanted, &loaded)?;
        let turn = check_turn(s.turn)?;
        let history = check_history(s.history.unwrap_or_default(), active, save.world)?;
        if let Some(lod) = &s.lod {
            check_lod(lod, active)?;
        }
        check_lod_steps(s.lod_steps.as_deref(), s.lod.as_deref())?;
        if let Some(complete) = &s.complete {
            check_complete(complete, &loaded)?;
        }
        // What this game adds: its ground.
        self.check_bounds("loaded", &s.loaded)?;
        self.check_bounds("refusals", &refused)?;
        Ok(Prepared {
            loaded,
            refusals,
            last_moved: s.last_moved,
            overrides: s.overrides,
            foci,
            anchors,
            version_1,
            tickets,
            last_wanted,
            over_capacity: s.over_capacity,
            predicted,
            turn,
            history,
            hole_ticks: s.hole_ticks,
            lod: s.lod,
            lod_hole_ticks: s.lod_hole_ticks,
            lod_steps: s.lod_steps,
            complete: s.complete,
        })
    }

    /// `key`'s chunks `list` lie inside the ground (`loaded`, `refusals`).
    fn check_bounds(&self, key: &str, list: &[ChunkPos]) -> Result<(), Problem> {
        let grid = self.residency.grid();
        match list
            .iter()
            .enumerate()
            .find(|(_, c)| !grid.overlaps(**c, self.residency.bounds()))
        {
            Some((i, c)) => Err(Problem::new(
                format!("{key}[{i}]"),
                format!("chunk {c} lies outside the world.ground bounds"),
            )),
            None => Ok(()),
        }
    }

    pub(crate) fn restore(&mut self, mut p: Prepared, scene: Option<&str>, tick: u64) {
        self.active = scene.is_some();
        let layer = scene
            .and_then(|s| self.layers.get(s))
            .copied()
            .unwrap_or_default();
        self.set_layer(layer);
        self.set_overrides(p.overrides);
        self.last_moved = p.last_moved;
        self.now = tick;
        self.tickets = p.tickets;
        self.anchor_foci = p.anchors;
        self.anchor_ids = vec![None; p.anchors];
        self.predicted_foci = p.predicted;
        self.turn = p.turn;
        self.history = p.history;
        self.scheduling_used = p.hole_ticks.is_some();
        self.hole_ticks = p.hole_ticks.unwrap_or(0);
        self.over_capacity = p.over_capacity;
        self.foci_dirty = true;
        self.lod_used = p.lod.is_some();
        self.neighbours_used = p.complete.is_some();
        self.lod_hole_ticks = p.lod_hole_ticks.unwrap_or(0);
        let settings = self.settings();
        let steps = planned_steps(p.lod_steps.as_deref(), &settings.lod);
        self.lod.restore(
            settings.radius,
            settings.lod,
            &p.lod.unwrap_or_default(),
            steps,
        );
        // Ticket foci take their tickets' priorities (a save lists the tickets counting in the
        // tick that last ran, in id order, after the other foci).
        let start = p.anchors + p.predicted;
        let counting: Vec<u8> = self
            .tickets
            .iter()
            .filter(|(_, t)| t.counts_in(tick))
            .map(|(_, t)| t.priority)
            .collect();
        if p.foci.len() - start == counting.len() {
            for (f, priority) in p.foci[start..].iter_mut().zip(counting) {
                f.priority = priority;
            }
        }
        // Foci and tickets want `neighbours` rings more (docs/reference/streaming.md#complete-chunks).
        self.residency.set_neighbours(settings.neighbours);
        if p.version_1 {
            let radius = self.settings().radius + settings.neighbours;
            p.foci.iter_mut().for_each(|f| f.radius = radius);
        }
        self.residency
            .restore(p.loaded, p.refusals, &p.foci, p.last_wanted, tick);
        self.residency
            .restore_announced(p.complete.unwrap_or_default());
    }
}

/// `lod`: at most four levels, each in row order without repeats, none without an active scene.
fn check_lod(lod: &[Vec<ChunkPos>], active: bool) -> Result<(), Problem> {
    let max = crate::kits::streaming::config::MAX_LOD_LEVELS;
    if lod.len() > max {
        return Err(Problem::new(
            "lod",
            format!("expected at most {max} levels, got {}", lod.len()),
        ));
    }
    for (k, blocks) in lod.iter().enumerate() {
        for (i, b) in blocks.iter().enumerate() {
            check_coords(&format!("lod[{k}][{i}]"), *b)?;
            if b.y != 0 {
                return Err(Problem::new(
                    format!("lod[{k}][{i}].y"),
                    "expected no section row: LOD blocks are columns \
                     (docs/reference/lod.md#lod-service-state-and-saves)",
                ));
            }
        }
        if !active && !blocks.is_empty() {
            return Err(Problem::new(
                format!("lod[{k}]"),
                "expected no LOD block in a save without an active scene",
            ));
        }
        for (i, pair) in blocks.windows(2).enumerate() {
            if pair[0] >= pair[1] {
                return Err(Problem::new(
                    format!("lod[{k}][{}]", i + 1),
                    "expected the blocks in row order (z, then x), each once",
                ));
            }
        }
    }
    Ok(())
}

/// `complete`: loaded chunks, in row order, each once
/// (docs/reference/streaming.md#complete-chunks).
fn check_complete(list: &[ChunkPos], loaded: &BTreeSet<ChunkPos>) -> Result<(), Problem> {
    for (i, c) in list.iter().enumerate() {
        if i > 0 && list[i - 1] >= *c {
            return Err(Problem::new(
                format!("complete[{i}]"),
                "expected the chunks in row order (z, then x), each once",
            ));
        }
        if !loaded.contains(c) {
            return Err(Problem::new(
                format!("complete[{i}]"),
                format!("chunk {c} is not loaded"),
            ));
        }
    }
    Ok(())
}

/// A chunk no game can hold: a coordinate beyond ±2 × [`MAX_CHUNK_COORD`]. Every position's
/// chunk is clamped to ±[`MAX_CHUNK_COORD`] (docs/reference/grid.md#chunks-and-chunkof) and a
/// clamped focus's footprint (its radius, rows, rings and LOD levels) reaches a little beyond, so
/// twice the clamp holds every legal chunk while keeping a forged far one from the grid
/// arithmetic; told at `path`'s offending key (docs/reference/saves.md#sections-in-saves).
fn check_coords(path: &str, c: ChunkPos) -> Result<(), Problem> {
    let max = 2 * MAX_CHUNK_COORD;
    for (key, v) in [("x", c.x), ("y", c.y), ("z", c.z)] {
        if v.unsigned_abs() > max as u64 {
            return Err(Problem::new(
                format!("{path}.{key}"),
                format!("expected a chunk coordinate within ±{max}, got {v}"),
            ));
        }
    }
    Ok(())
}

/// `loaded`: each chunk once, within the grid's coordinates (inside the ground:
/// [`State::check_bounds`]).
fn check_loaded(list: &[ChunkPos]) -> Result<BTreeSet<ChunkPos>, Problem> {
    let mut loaded = BTreeSet::new();
    for (i, c) in list.iter().enumerate() {
        check_coords(&format!("loaded[{i}]"), *c)?;
        if !loaded.insert(*c) {
            return Err(Problem::new(
                format!("loaded[{i}]"),
                format!("chunk {c} is listed twice"),
            ));
        }
    }
    Ok(loaded)
}

/// `refusals`: a reason and a mod id within their limits, a hook of this kit, an unload
/// refusal of a loaded chunk or a load refusal of an unloaded one, one a chunk (inside the
/// ground: [`State::check_bounds`]).
fn check_refusals(
    list: Vec<Refusal>,
    loaded: &BTreeSet<ChunkPos>,
) -> Result<BTreeMap<ChunkPos, Held>, Problem> {
    let mut refusals = BTreeMap::new();
    for (i, r) in list.into_iter().enumerate() {
        let c = refused_chunk(&r);
        let path = format!("refusals[{i}]");
        check_coords(&path, c)?;
        if r.reason.len() > MAX_REASON_LEN {
            return Err(Problem::new(
                format!("{path}.reason"),
                format!(
                    "expected at most {MAX_REASON_LEN} bytes, got {}",
                    r.reason.len()
                ),
            ));
        }
        check_name(&r.by).map_err(|m| Problem::new(format!("{path}.mod"), m))?;
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
    Ok(refusals)
}

/// A section without an active scene holds no chunk, refusal or focus; chunks or refusals need a
/// focus.
fn check_scene_less(s: &SaveSection, active: bool) -> Result<(), Problem> {
    if !active {
        for (key, empty) in [
            ("loaded", s.loaded.is_empty()),
            ("refusals", s.refusals.is_empty()),
            ("focus", s.focus.is_none()),
            ("lastMoved", s.last_moved.is_none()),
        ] {
            if !empty {
                return Err(Problem::new(key, NO_SCENE));
            }
        }
    }
    if s.focus.is_none() && !(s.loaded.is_empty() && s.refusals.is_empty()) {
        return Err(Problem::new(
            "focus",
            "expected a focus: chunks are loaded or refused, which needs one",
        ));
    }
    Ok(())
}

/// A save of a flat game holds no section row (docs/reference/saves.md#sections-in-saves): the
/// first `y` of a chunk list, in the section's order, is refused with its path.
fn check_flat(s: &SaveSection) -> Result<(), Problem> {
    let lists: [(&str, Vec<bool>); 4] = [
        ("loaded", s.loaded.iter().map(|c| c.y != 0).collect()),
        (
            "refusals",
            s.refusals.iter().map(|r| r.y.is_some()).collect(),
        ),
        (
            "lastWanted",
            s.last_wanted.iter().map(|l| l.y.is_some()).collect(),
        ),
        (
            "complete",
            s.complete.iter().flatten().map(|c| c.y != 0).collect(),
        ),
    ];
    for (key, has_y) in lists {
        if let Some(i) = has_y.iter().position(|y| *y) {
            return Err(Problem::new(format!("{key}[{i}].y"), FLAT));
        }
    }
    Ok(())
}

const FLAT: &str = "expected no section row: the game is flat (its scene has no `vertical`, \
                    docs/reference/saves.md#sections-in-saves)";

/// The section a held refusal names (`y` absent: row 0).
fn refused_chunk(r: &Refusal) -> ChunkPos {
    ChunkPos::section(r.x, r.y.unwrap_or(0), r.z)
}

/// The keys of a section whose chunks a vertical game writes with `y` (even 0).
const SECTION_LISTS: [&str; 3] = ["loaded", "lastWanted", "complete"];

/// `{x, y: 0, …}` for a chunk object without `y`, keys in the order x, y, then the rest.
fn with_y(item: &mut serde_json::Value) {
    if let serde_json::Value::Object(m) = item {
        if m.contains_key("y") {
            return;
        }
        let old = std::mem::take(m);
        for (k, v) in old {
            let x = k == "x";
            m.insert(k, v);
            if x {
                m.insert("y".to_owned(), serde_json::Value::from(0));
            }
        }
    }
}

impl State {
    /// Whether the game is vertical (docs/reference/config.md#vertical): the config or any
    /// scene's layer sets `vertical` (a mod cannot turn it on).
    pub(crate) fn uses_vertical(&self) -> bool {
        self.config.uses_vertical() || self.layers.values().any(Overrides::uses_vertical)
    }

    /// Whether a save made with `scene` active is of a vertical game: the scene's layer sets
    /// `vertical`, else the config does.
    fn vertical_for(&self, scene: Option<&str>) -> bool {
        scene
            .and_then(|name| self.layers.get(name))
            .and_then(|l| l.vertical)
            .or(self.config.vertical)
            .is_some()
    }

    /// The save section as JSON: [`State::save_section`], and in a vertical world (the
    /// settings in force) every section of its chunk lists with its `y`, row 0 too
    /// (docs/reference/saves.md#sections-in-saves).
    pub(crate) fn save_value(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.save_section()).expect("plain data");
        if self.settings().vertical.is_some() {
            for key in SECTION_LISTS {
                if let Some(list) = v.get_mut(key).and_then(|l| l.as_array_mut()) {
                    list.iter_mut().for_each(with_y);
                }
            }
        }
        v
    }
}

const NO_SCENE: &str = "expected nothing here: the save has no active scene (\"scene\": null)";

/// `foci` (a version-1 section: its one `focus`): positions, radii, the non-ticket foci first,
/// bounded counts, `focus` the first of them. Returns the foci and how many are not tickets.
fn check_foci(
    saved: Option<Vec<SavedFocus>>,
    focus: Option<Position>,
    active: bool,
) -> Result<(Vec<FocusView>, usize, usize), Problem> {
    let list = match saved {
        Some(list) => list,
        // A version-1 section: its one focus, at the radius in force (set in `restore`).
        None => focus
            .map(|at| SavedFocus {
                at,
                radius: 0,
                ticket: false,
                predicted: false,
            })
            .into_iter()
            .collect(),
    };
    if !active && !list.is_empty() {
        return Err(Problem::new("foci", NO_SCENE));
    }
    // At most one focus per entity (and the fallback), plus one per ticket: a hostile save
    // cannot ask for millions of squares.
    let most = MAX_ENTITIES + 1 + MAX_TICKETS;
    if list.len() > most {
        return Err(Problem::new(
            "foci",
            format!("expected at most {most} foci, got {}", list.len()),
        ));
    }
    let mut foci = Vec::new();
    let (mut anchors, mut predicted) = (0, 0);
    for (i, f) in list.iter().enumerate() {
        let path = format!("foci[{i}]");
        f.at.check().map_err(|p| p.under(&path))?;
        check_radius(f.radius, &path)?;
        let order = "expected the non-ticket foci first, then the predicted ones, then the tickets";
        match (f.ticket, f.predicted) {
            (true, true) => {
                return Err(Problem::new(
                    path,
                    "expected a ticket or a predicted focus, not both",
                ))
            }
            (false, false) if anchors + predicted < i || predicted > 0 => {
                return Err(Problem::new(path, order))
            }
            (false, false) => anchors += 1,
            (false, true) if anchors + predicted < i => return Err(Problem::new(path, order)),
            (false, true) => predicted += 1,
            (true, false) => {}
        }
        // Ticket foci take their priority from the tickets when the foci are listed again
        // (the first tick after a load lists them in full).
        foci.push(FocusView::new(f.at, f.radius));
    }
    if predicted > anchors {
        return Err(Problem::new(
            "foci",
            format!("expected at most one predicted focus per non-ticket focus ({anchors}), got {predicted}"),
        ));
    }
    if foci.len() - anchors - predicted > MAX_TICKETS {
        return Err(Problem::new(
            "foci",
            format!(
                "expected at most {MAX_TICKETS} ticket foci, got {}",
                foci.len() - anchors - predicted
            ),
        ));
    }
    if focus != foci.first().map(|f| f.pos) {
        return Err(Problem::new("focus", "expected the first of `foci`"));
    }
    Ok((foci, anchors, predicted))
}

/// `turn`: a position in a focus order (absent: 0).
fn check_turn(turn: Option<u64>) -> Result<usize, Problem> {
    let most = (2 * MAX_ENTITIES + 1 + MAX_TICKETS) as u64;
    match turn {
        None => Ok(0),
        Some(t) if t <= most => Ok(t as usize),
        Some(t) => Err(Problem::new(
            "turn",
            format!("expected an integer 0..={most}, got {t}"),
        )),
    }
}

/// `history`: at most one entry per entity, valid ids each once, each an entity of the save
/// (an anchor despawned since the last tick leaves the history at once), positions in range;
/// none without an active scene.
fn check_history(
    list: Vec<SavedAnchor>,
    active: bool,
    world: &World,
) -> Result<Vec<(EntityId, Position)>, Problem> {
    if !active && !list.is_empty() {
        return Err(Problem::new("history", NO_SCENE));
    }
    if list.len() > MAX_ENTITIES {
        return Err(Problem::new(
            "history",
            format!(
                "expected at most {MAX_ENTITIES} anchors, got {}",
                list.len()
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(list.len());
    for (i, a) in list.into_iter().enumerate() {
        let path = format!("history[{i}]");
        check_name(&a.id).map_err(|m| Problem::new(format!("{path}.id"), m))?;
        a.at.check().map_err(|p| p.under(&format!("{path}.at")))?;
        if !seen.insert(a.id.clone()) {
            return Err(Problem::new(
                format!("{path}.id"),
                format!("anchor {:?} is listed twice", a.id),
            ));
        }
        let id = EntityId::new(&a.id);
        if world.get(&id).is_none() {
            return Err(Problem::new(
                format!("{path}.id"),
                format!("anchor {:?} is no entity of the save", a.id),
            ));
        }
        out.push((id, a.at));
    }
    Ok(out)
}

/// `lodSteps`: only beside `lod`, one entry per level listed there; 0 for a level without
/// blocks, else a LOD step (a power of two 2..=64).
fn check_lod_steps(steps: Option<&[u32]>, lod: Option<&[Vec<ChunkPos>]>) -> Result<(), Problem> {
    let Some(steps) = steps else {
        return Ok(());
    };
    let Some(lod) = lod else {
        return Err(Problem::new(
            "lodSteps",
            "expected no steps without `lod` (the blocks they are of)",
        ));
    };
    if steps.len() != lod.len() {
        return Err(Problem::new(
            "lodSteps",
            format!(
                "expected one step per level of `lod` ({}), got {}",
                lod.len(),
                steps.len()
            ),
        ));
    }
    for (k, (&step, blocks)) in steps.iter().zip(lod).enumerate() {
        let ok = if blocks.is_empty() {
            step == 0
        } else {
            is_lod_step(step)
        };
        if !ok {
            let expected = if blocks.is_empty() {
                format!("expected 0: level {} has no block", k + 1)
            } else {
                format!(
                    "expected a power of two {MIN_LOD_STEP}..={MAX_LOD_STEP} (level {} has blocks)",
                    k + 1
                )
            };
            return Err(Problem::new(
                format!("lodSteps[{k}]"),
                format!("{expected}, got {step}"),
            ));
        }
    }
    Ok(())
}

/// The step each level's blocks are planned with once a section is restored: its `lodSteps`
/// entry, else the level's step in `lod` (the levels in force then), 0 for no level. The
/// restore uses it, and so does [`super::StreamingService::lod_steps_after_load`] (what a
/// builder's saved blocks are checked against).
pub(crate) fn planned_steps(lod_steps: Option<&[u32]>, lod: &Lod) -> [u32; MAX_LOD_LEVELS] {
    std::array::from_fn(|k| {
        lod_steps
            .and_then(|s| s.get(k).copied())
            .filter(|s| *s != 0)
            .or_else(|| lod.levels().get(k).map(|l| l.step))
            .unwrap_or(0)
    })
}

/// A saved radius: 0..=[`MAX_RADIUS`].
fn check_radius(radius: u32, path: &str) -> Result<(), Problem> {
    if radius > MAX_RADIUS {
        return Err(Problem::new(
            format!("{path}.radius"),
            format!("expected an integer 0..={MAX_RADIUS}, got {radius}"),
        ));
    }
    Ok(())
}

/// `tickets`: at most [`MAX_TICKETS`], each id valid and once, positions, radii and tick ranges
/// (a ticket requested outside a scene is kept, docs/reference/saves.md#the-streaming-section, so a
/// scene-less save may hold some), wanting together at most `cap` chunks (`maxTicketChunks`: the
/// first ticket past it is named).
fn check_tickets(list: Vec<SavedTicket>, cap: u64, measure: Measure) -> Result<Tickets, Problem> {
    if list.len() > MAX_TICKETS {
        return Err(Problem::new(
            "tickets",
            format!("expected at most {MAX_TICKETS} tickets, got {}", list.len()),
        ));
    }
    let mut tickets = Tickets::default();
    tickets.set_measure(measure);
    for (i, t) in list.into_iter().enumerate() {
        let path = format!("tickets[{i}]");
        check_id(&t.id).map_err(|e| Problem::new(format!("{path}.id"), e.to_string()))?;
        t.at.check().map_err(|p| p.under(&format!("{path}.at")))?;
        check_radius(t.radius, &path)?;
        if t.until < t.from {
            return Err(Problem::new(
                format!("{path}.until"),
                "expected a tick at or after `from`",
            ));
        }
        if tickets.get(&t.id).is_some() {
            return Err(Problem::new(
                format!("{path}.id"),
                format!("ticket {:?} is listed twice", t.id),
            ));
        }
        match tickets.request(&t.id, t.ticket(), 0, cap) {
            Ok(()) => {}
            Err(TicketError::OverCap { wanted, cap }) => {
                return Err(Problem::new(
                    path,
                    format!(
                        "the tickets up to this one want {wanted} chunks, more than the \
                         scene's maxTicketChunks {cap}"
                    ),
                ))
            }
            Err(e) => unreachable!("checked above: {e}"),
        }
    }
    Ok(tickets)
}

/// `lastWanted`: loaded chunks, each once.
fn check_last_wanted(
    list: &[LastWanted],
    loaded: &BTreeSet<ChunkPos>,
) -> Result<BTreeMap<ChunkPos, u64>, Problem> {
    let mut last_wanted = BTreeMap::new();
    for (i, l) in list.iter().enumerate() {
        let c = ChunkPos::section(l.x, l.y.unwrap_or(0), l.z);
        if !loaded.contains(&c) {
            return Err(Problem::new(
                format!("lastWanted[{i}]"),
                format!("chunk {c} is not loaded"),
            ));
        }
        if last_wanted.insert(c, l.tick).is_some() {
            return Err(Problem::new(
                format!("lastWanted[{i}]"),
                format!("chunk {c} is listed twice"),
            ));
        }
    }
    Ok(last_wanted)
}
