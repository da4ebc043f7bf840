//! docs/vertical.md against a naive reference planner of its own, tick by tick: shapes (the
//! square and the disc) and vertical sections, over many foci, tickets, JSON mod refusals (a
//! `match` naming `y`), the refusal cap per mod, the resident cap and eviction (what
//! tests/reference_foci.rs is for flat squares).
//!
//! The reference shares no code with the product and keeps no incremental state: every tick it
//! lists the foci from its own copy of the entities (positions in 3-D), recomputes every focus's
//! wanted sections with its own arithmetic (a column is wanted when its offset `(dx, dz)` from the
//! focus column is within the shape — square `max(|dx|, |dz|) <= r`, disc `dx² + dz² <= r²` — and a
//! section of it when `|y − fy| <= rv`, `fy` the focus's section row; kept within `r + 1` and
//! `rv + 1`), applies the refusal drop rules, releases in row order (`y`, `z`, `x`), checks the
//! resident cap, sorts every pending section by its least exact squared 3-D distance to a focus
//! that wants it (ties `z`, `x`, `y`), evicts least recently wanted sections before a load that
//! would exceed `maxLoaded`, asks its own model of the JSON mods, derives the columns
//! (`world.column.loaded` / `world.column.unloaded`) and announces ready tickets. The settings come
//! from the config, scene `b`'s layer (`shape`, `vertical.radius`, `focus`, `maxLoaded`) and a
//! JSON mod's `set` (`shape`, `vertical.radius`), highest first. Random scenes (square or disc,
//! vertical or flat, section heights other than the chunk size) and inputs (3-D steps and moves,
//! rides, control, `player` tags, despawns and respawns, tickets at a height, releases,
//! `player.moved`, leave/enter) are played on the kit and on the reference; after every tick the
//! event log, `loaded()`, `pending()`, `refusals()`, the foci, the tickets, the variables,
//! `ready(entity)`, `ticketReady(id)` and the `dormant` tags must agree. Some cases save and go
//! on in a fresh game loaded from the save. Expectations never come from the product. 120 cases
//! from a fixed seed by default; set `PROPTEST_CASES` for more.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{json, Value};
use world_streaming::files::inputs::parse_line;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

const LOAD: &str = "world.chunk.load";
const UNLOAD: &str = "world.chunk.unload";
const SIZE: f64 = 16.0;
const BOUNDS: (f64, f64, f64, f64) = (-70.0, -50.0, 90.0, 60.0);
const NAMES: [&str; 6] = ["p0", "p1", "p2", "car", "bike", "crate"];
const TICKETS: [&str; 3] = ["a", "b", "é"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Player,
    Players,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Player => "player",
            Mode::Players => "players",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Square,
    Disc,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Square => "square",
            Shape::Disc => "disc",
        }
    }

    /// The column at offset `(dx, dz)` lies within `r` of the focus column.
    fn within(self, dx: i64, dz: i64, r: u32) -> bool {
        let r = i128::from(r);
        let (dx, dz) = (i128::from(dx), i128::from(dz));
        match self {
            Shape::Square => dx.abs() <= r && dz.abs() <= r,
            Shape::Disc => dx * dx + dz * dz <= r * r,
        }
    }
}

/// A JSON mod cancelling one hook, on the sections its match names.
#[derive(Debug, Clone, Copy)]
struct JsonMod {
    /// Its id is `m{id}`: two files may share an id (and so a refusal count).
    id: usize,
    load: bool,
    x: Option<i64>,
    y: Option<i64>,
    z: Option<i64>,
}

/// What scene `b`'s layer sets for `maxLoaded`.
#[derive(Debug, Clone, Copy)]
enum LayerCap {
    Absent,
    Null,
    Cap(usize),
}

#[derive(Debug, Clone)]
enum Op {
    /// A move by about a section from where the entity is.
    Step {
        who: usize,
        dx: i32,
        dy: i32,
        dz: i32,
    },
    Move {
        who: usize,
        at: (i32, i32, i32),
    },
    Ride {
        rider: usize,
        vehicle: usize,
    },
    Dismount(usize),
    Control(Option<usize>),
    Spawn {
        who: usize,
        at: (i32, i32, i32),
    },
    Despawn(usize),
    Tag {
        who: usize,
        on: bool,
    },
    Release {
        x: i64,
        z: i64,
    },
    Moved {
        at: (i32, i32, i32),
    },
    Request {
        id: usize,
        at: (i32, i32, i32),
        radius: u32,
        ticks: u64,
    },
    Drop(usize),
    Leave,
    Enter(usize),
}

/// `vertical` in the config: its radius and its height (`None`: left to the default, the chunk
/// size).
#[derive(Debug, Clone, Copy)]
struct Vertical {
    radius: u32,
    height: Option<f64>,
}

#[derive(Debug, Clone)]
struct Scenario {
    mode: Mode,
    radius: u32,
    budget: u32,
    bounded: bool,
    /// `shape` in the config (`None`: absent, the square).
    shape: Option<Shape>,
    vertical: Option<Vertical>,
    cap: Option<usize>,
    refusal_cap: Option<usize>,
    layer_mode: Option<Mode>,
    layer_cap: LayerCap,
    layer_shape: Option<Shape>,
    /// `vertical.radius` in scene `b`'s layer (only with `vertical` in the config).
    layer_rv: Option<u32>,
    /// A last mod's `set`: `shape` and `vertical.radius` (the latter only with `vertical`).
    set_shape: Option<Shape>,
    set_rv: Option<u32>,
    control: Option<usize>,
    mods: Vec<JsonMod>,
    ticks: Vec<Vec<Op>>,
    /// Save before this tick's inputs and continue in a fresh game loaded from the save.
    save_at: Option<usize>,
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![1 => Just(Mode::Player), 3 => Just(Mode::Players)]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![1 => Just(Shape::Square), 2 => Just(Shape::Disc)]
}

fn json_mod() -> impl Strategy<Value = JsonMod> {
    (
        0..2usize,
        prop::bool::weighted(0.3),
        proptest::option::weighted(0.5, -3..3i64),
        proptest::option::weighted(0.5, -2..3i64),
        proptest::option::weighted(0.3, -3..3i64),
    )
        .prop_map(|(id, load, x, y, z)| JsonMod { id, load, x, y, z })
}

fn at(xz: i32, y: i32) -> impl Strategy<Value = (i32, i32, i32)> {
    (-xz..xz, -y..y, -xz..xz)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (prop_oneof![3 => 0..2usize, 1 => 0..6usize], -20..20i32, -20..20i32, -20..20i32)
            .prop_map(|(who, dx, dy, dz)| Op::Step { who, dx, dy, dz }),
        4 => (0..6usize, at(60, 50)).prop_map(|(who, at)| Op::Move { who, at }),
        1 => (0..6usize, at(200, 400)).prop_map(|(who, at)| Op::Move { who, at }),
        3 => (0..6usize, 0..6usize).prop_map(|(rider, vehicle)| Op::Ride { rider, vehicle }),
        2 => (0..6usize).prop_map(Op::Dismount),
        2 => proptest::option::weighted(0.8, 0..6usize).prop_map(Op::Control),
        2 => (0..6usize, at(80, 50)).prop_map(|(who, at)| Op::Spawn { who, at }),
        2 => (0..6usize).prop_map(Op::Despawn),
        3 => (0..6usize, any::<bool>()).prop_map(|(who, on)| Op::Tag { who, on }),
        1 => (-3..3i64, -3..3i64).prop_map(|(x, z)| Op::Release { x, z }),
        1 => at(80, 50).prop_map(|at| Op::Moved { at }),
        3 => (0..3usize, at(120, 80), 0..3u32, 1..8u64)
            .prop_map(|(id, at, radius, ticks)| Op::Request { id, at, radius, ticks }),
        1 => (0..3usize).prop_map(Op::Drop),
        1 => Just(Op::Leave),
        1 => (0..3usize).prop_map(Op::Enter),
    ]
}

/// The sections of one focus's cylinder (no bounds): columns within the shape times rows.
fn count(shape: Shape, r: u32, rv: Option<u32>) -> usize {
    let ri = i64::from(r);
    let columns = (-ri..=ri)
        .flat_map(|dx| (-ri..=ri).map(move |dz| (dx, dz)))
        .filter(|&(dx, dz)| shape.within(dx, dz, r))
        .count();
    columns * rv.map_or(1, |rv| 2 * rv as usize + 1)
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        (mode(), 0..4u32, 1..6u32, any::<bool>()),
        (
            proptest::option::weighted(0.8, shape()),
            proptest::option::weighted(
                0.8,
                (
                    0..3u32,
                    prop_oneof![Just(None), Just(Some(10.0)), Just(Some(24.0))],
                )
                    .prop_map(|(radius, height)| Vertical { radius, height }),
            ),
        ),
        (
            (0..3u32, 1..150usize, 0..5usize, 1..4usize),
            proptest::option::weighted(0.7, 0..4usize),
        ),
        (
            proptest::option::of(mode()),
            prop_oneof![
                Just(LayerCap::Absent),
                Just(LayerCap::Null),
                (1..120usize).prop_map(LayerCap::Cap)
            ],
            proptest::option::weighted(0.3, shape()),
            proptest::option::weighted(0.3, 0..3u32),
        ),
        (
            proptest::option::weighted(0.15, shape()),
            proptest::option::weighted(0.15, 0..3u32),
            proptest::option::weighted(0.2, 0..6usize),
        ),
        proptest::collection::vec(json_mod(), 0..4),
        proptest::collection::vec(proptest::collection::vec(op(), 0..4), 1..24),
        proptest::option::weighted(0.4, 1..24usize),
    )
        .prop_map(
            |(
                (mode, radius, budget, bounded),
                (shape, vertical),
                ((cap_kind, cap, slack, cylinders), refusal_cap),
                (layer_mode, layer_cap, layer_shape, layer_rv),
                (set_shape, set_rv, control),
                mods,
                ticks,
                save_at,
            )| {
                let rv = vertical.map(|v| v.radius);
                Scenario {
                    mode,
                    radius,
                    budget,
                    bounded,
                    shape,
                    vertical,
                    // No cap, any cap, or one just above one to three cylinders (evictions).
                    cap: match cap_kind {
                        0 => None,
                        1 => Some(cap),
                        _ => Some(
                            count(shape.unwrap_or(Shape::Square), radius, rv) * cylinders + slack,
                        ),
                    },
                    refusal_cap,
                    layer_mode,
                    layer_cap,
                    layer_shape,
                    layer_rv: layer_rv.filter(|_| vertical.is_some()),
                    set_shape,
                    set_rv: set_rv.filter(|_| vertical.is_some()),
                    control,
                    // A match on `y` only where sections have rows.
                    mods: mods
                        .into_iter()
                        .map(|m| JsonMod {
                            y: m.y.filter(|_| vertical.is_some()),
                            ..m
                        })
                        .collect(),
                    ticks,
                    save_at,
                }
            },
        )
}

// ---------------------------------------------------------------------------------------------
// The reference.

type Xyz = (f64, f64, f64);
/// A section as `(y, z, x)`: a `BTreeSet` of these is in row order.
type Yzx = (i64, i64, i64);
/// A column as `(z, x)`: row order.
type Zx = (i64, i64);

#[derive(Debug, Clone)]
struct Ent {
    id: String,
    tags: BTreeSet<&'static str>,
    pos: Xyz,
    rides: Option<String>,
}

fn original(who: usize, pos: Xyz) -> Ent {
    let tags: &[&'static str] = match who {
        0 | 1 => &["player"],
        2 => &[],
        3 => &["vehicle", "streamable"],
        4 => &["vehicle"],
        _ => &["streamable"],
    };
    Ent {
        id: NAMES[who].to_owned(),
        tags: tags.iter().copied().collect(),
        pos,
        rides: None,
    }
}

const START: [Xyz; 6] = [
    (5.0, 3.0, 5.0),
    (-30.0, -20.0, 20.0),
    (-10.0, 40.0, -40.0),
    (30.0, 0.0, 5.0),
    (50.0, 12.0, 40.0),
    (20.0, -7.0, -20.0),
];

#[derive(Debug, Clone, PartialEq)]
struct Held {
    load: bool,
    by: String,
    reason: String,
}

#[derive(Debug, Clone)]
struct Tk {
    at: Xyz,
    radius: u32,
    from: u64,
    until: u64,
    announced: bool,
}

/// A focus: its position and its horizontal radius (its vertical radius is the one in force).
type Focus = (Xyz, u32);

#[derive(Clone)]
struct Reference {
    s: Scenario,
    entities: Vec<Ent>,
    control: Option<String>,
    scene: Option<usize>,
    last_moved: Option<Xyz>,
    previous: Vec<Xyz>,
    anchor_ids: Vec<Option<String>>,
    tickets: BTreeMap<String, Tk>,
    loaded: BTreeSet<Yzx>,
    /// The columns announced loaded (`world.column.loaded` without its `unloaded` since).
    columns: BTreeSet<Zx>,
    last_wanted: BTreeMap<Yzx, u64>,
    refusals: BTreeMap<Yzx, Held>,
    over: bool,
    /// The foci in force after the last tick.
    foci: Vec<Focus>,
    variables: (u64, u64, f64, u64),
    events: Vec<String>,
    evictions: usize,
}

const ENTRIES: [Option<Xyz>; 3] = [Some((0.0, 0.0, 0.0)), Some((40.0, 30.0, -40.0)), None];
const SCENES: [&str; 3] = ["a", "b", "c"];

impl Reference {
    fn new(s: &Scenario) -> Self {
        let mut r = Reference {
            s: s.clone(),
            entities: (0..6).map(|i| original(i, START[i])).collect(),
            control: s.control.map(|i| NAMES[i].to_owned()),
            scene: None,
            last_moved: None,
            previous: Vec::new(),
            anchor_ids: Vec::new(),
            tickets: BTreeMap::new(),
            loaded: BTreeSet::new(),
            columns: BTreeSet::new(),
            last_wanted: BTreeMap::new(),
            refusals: BTreeMap::new(),
            over: false,
            foci: Vec::new(),
            variables: (0, 0, 0.0, 0),
            events: Vec::new(),
            evictions: 0,
        };
        r.enter(0, 0);
        r
    }

    fn in_b(&self) -> bool {
        self.scene == Some(1)
    }

    fn mode(&self) -> Mode {
        match self.s.layer_mode {
            Some(m) if self.in_b() => m,
            _ => self.s.mode,
        }
    }

    fn cap(&self) -> Option<usize> {
        match self.s.layer_cap {
            LayerCap::Null if self.in_b() => None,
            LayerCap::Cap(n) if self.in_b() => Some(n),
            _ => self.s.cap,
        }
    }

    /// Mod > scene layer > config.
    fn shape(&self) -> Shape {
        self.s
            .set_shape
            .or(self.s.layer_shape.filter(|_| self.in_b()))
            .or(self.s.shape)
            .unwrap_or(Shape::Square)
    }

    /// The vertical radius in force; `None` in a flat world.
    fn rv(&self) -> Option<u32> {
        let v = self.s.vertical?;
        Some(
            self.s
                .set_rv
                .or(self.s.layer_rv.filter(|_| self.in_b()))
                .unwrap_or(v.radius),
        )
    }

    fn height(&self) -> f64 {
        self.s.vertical.and_then(|v| v.height).unwrap_or(SIZE)
    }

    fn vertical(&self) -> bool {
        self.s.vertical.is_some()
    }

    /// The section of a position: `(y, z, x)`; the row is 0 in a flat world.
    fn section_of(&self, p: Xyz) -> Yzx {
        let y = if self.vertical() {
            (p.1 / self.height()).floor() as i64
        } else {
            0
        };
        (y, (p.2 / SIZE).floor() as i64, (p.0 / SIZE).floor() as i64)
    }

    fn inside(&self, (_, z, x): Yzx) -> bool {
        if !self.s.bounded {
            return true;
        }
        let (min_x, min_z, max_x, max_z) = BOUNDS;
        (x as f64 * SIZE) < max_x
            && min_x < (x + 1) as f64 * SIZE
            && (z as f64 * SIZE) < max_z
            && min_z < (z + 1) as f64 * SIZE
    }

    /// Within `r + extra` horizontally (the shape) and `rv + extra` vertically of focus `f`.
    fn near(&self, &(f, r): &Focus, (y, z, x): Yzx, extra: u32) -> bool {
        let (fy, fz, fx) = self.section_of(f);
        self.shape().within(x - fx, z - fz, r + extra)
            && self
                .rv()
                .is_none_or(|rv| y.abs_diff(fy) <= u64::from(rv + extra))
    }

    /// The sections a focus wants inside the ground, by enumeration of its bounding box.
    fn cylinder(&self, focus: &Focus) -> Vec<Yzx> {
        let (fy, fz, fx) = self.section_of(focus.0);
        let r = i64::from(focus.1);
        let rv = i64::from(self.rv().unwrap_or(0));
        let mut v = Vec::new();
        for y in fy - rv..=fy + rv {
            for z in fz - r..=fz + r {
                for x in fx - r..=fx + r {
                    let c = (y, z, x);
                    if self.near(focus, c, 0) && self.inside(c) {
                        v.push(c);
                    }
                }
            }
        }
        v
    }

    fn union(&self, foci: &[Focus]) -> BTreeSet<Yzx> {
        foci.iter().flat_map(|f| self.cylinder(f)).collect()
    }

    fn kept(&self, foci: &[Focus], c: Yzx) -> bool {
        foci.iter().any(|f| self.near(f, c, 1))
    }

    /// Squared distance from `f` to the centre of the section: `dx·dx + dy·dy + dz·dz` left to
    /// right (`dx·dx + dz·dz` in a flat world).
    fn dist2(&self, f: Xyz, (y, z, x): Yzx) -> f64 {
        let dx = (x as f64 + 0.5) * SIZE - f.0;
        let dz = (z as f64 + 0.5) * SIZE - f.2;
        if self.vertical() {
            let dy = (y as f64 + 0.5) * self.height() - f.1;
            dx * dx + dy * dy + dz * dz
        } else {
            dx * dx + dz * dz
        }
    }

    /// The wanted sections neither loaded nor held by a load refusal, nearest-first: least
    /// distance over the foci that want it, then `z`, `x`, `y`.
    fn pending(&self, foci: &[Focus]) -> Vec<Yzx> {
        let mut keyed: Vec<(f64, Yzx)> = self
            .union(foci)
            .into_iter()
            .filter(|c| !self.loaded.contains(c) && !self.refusals.contains_key(c))
            .map(|c| {
                let key = foci
                    .iter()
                    .filter(|f| self.near(f, c, 0))
                    .map(|f| self.dist2(f.0, c))
                    .fold(f64::INFINITY, f64::min);
                (key, c)
            })
            .collect();
        keyed.sort_by(|(ka, (ya, za, xa)), (kb, (yb, zb, xb))| {
            ka.partial_cmp(kb)
                .unwrap()
                .then(za.cmp(zb))
                .then(xa.cmp(xb))
                .then(ya.cmp(yb))
        });
        keyed.into_iter().map(|(_, c)| c).collect()
    }

    fn get(&self, id: &str) -> Option<&Ent> {
        self.entities.iter().find(|e| e.id == id)
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Ent> {
        self.entities.iter_mut().find(|e| e.id == id)
    }

    fn focus_of(&self, e: &Ent) -> Xyz {
        e.rides
            .as_deref()
            .and_then(|v| self.get(v))
            .map_or(e.pos, |v| v.pos)
    }

    fn non_ticket_foci(&self) -> Vec<(Xyz, Option<String>)> {
        let controlled = self.control.as_deref().and_then(|id| self.get(id));
        let anchors: Vec<&Ent> = match self.mode() {
            Mode::Player => controlled
                .or_else(|| self.entities.iter().find(|e| e.tags.contains("player")))
                .into_iter()
                .collect(),
            Mode::Players => self
                .entities
                .iter()
                .filter(|e| e.tags.contains("player"))
                .chain(controlled.filter(|e| !e.tags.contains("player")))
                .collect(),
        };
        if !anchors.is_empty() {
            anchors
                .into_iter()
                .map(|e| (self.focus_of(e), Some(e.id.clone())))
                .collect()
        } else if let Some(m) = self.last_moved {
            vec![(m, None)]
        } else {
            self.previous.iter().map(|&f| (f, None)).collect()
        }
    }

    fn cylinder_ready(&self, f: &Focus) -> bool {
        self.cylinder(f)
            .iter()
            .all(|c| self.loaded.contains(c) || self.refusals.get(c).is_some_and(|h| h.load))
    }

    fn ticket_foci(&self, t: u64) -> Vec<Focus> {
        self.tickets
            .values()
            .filter(|k| k.from <= t && t <= k.until)
            .map(|k| (k.at, k.radius))
            .collect()
    }

    /// The mods in mod order: the first whose hook and match fit cancels.
    fn ask(&self, load: bool, (y, z, x): Yzx) -> Option<Held> {
        self.s.mods.iter().enumerate().find_map(|(i, m)| {
            (m.load == load
                && m.x.is_none_or(|mx| mx == x)
                && m.y.is_none_or(|my| my == y)
                && m.z.is_none_or(|mz| mz == z))
            .then(|| Held {
                load,
                by: format!("m{}", m.id),
                reason: format!("r{i}"),
            })
        })
    }

    fn section_event(&mut self, t: u64, name: &str, (y, z, x): Yzx) {
        if self.vertical() {
            self.events.push(format!("{t} {name} {x} {y} {z}"));
        } else {
            self.events.push(format!("{t} {name} {x} {z}"));
        }
    }

    fn column_loaded(&self, (z, x): Zx) -> bool {
        self.loaded.iter().any(|&(_, cz, cx)| (cz, cx) == (z, x))
    }

    /// `world.column.unloaded` for every announced column none of whose sections is loaded, in
    /// row order (with `vertical` only).
    fn columns_gone(&mut self, t: u64) {
        if !self.vertical() {
            return;
        }
        let gone: Vec<Zx> = self
            .columns
            .iter()
            .filter(|c| !self.column_loaded(**c))
            .copied()
            .collect();
        for (z, x) in gone {
            self.columns.remove(&(z, x));
            self.events
                .push(format!("{t} world.column.unloaded {x} {z}"));
        }
    }

    /// `world.column.loaded` for every column with a loaded section not yet announced, in row
    /// order (with `vertical` only).
    fn columns_new(&mut self, t: u64) {
        if !self.vertical() {
            return;
        }
        let new: BTreeSet<Zx> = self
            .loaded
            .iter()
            .map(|&(_, z, x)| (z, x))
            .filter(|c| !self.columns.contains(c))
            .collect();
        for (z, x) in new {
            self.columns.insert((z, x));
            self.events.push(format!("{t} world.column.loaded {x} {z}"));
        }
    }

    fn release(&mut self, t: u64, c: Yzx) {
        self.loaded.remove(&c);
        self.last_wanted.remove(&c);
        self.section_event(t, "world.chunk.unloaded", c);
    }

    /// Asks `world.chunk.unload` (a release or an eviction) and applies the answer, the refusal
    /// cap included.
    fn unload(&mut self, t: u64, c: Yzx) {
        match self.ask(false, c) {
            None => self.release(t, c),
            Some(h) => {
                let held = self
                    .refusals
                    .values()
                    .filter(|r| !r.load && r.by == h.by)
                    .count();
                if held >= self.s.refusal_cap.unwrap_or(256) {
                    self.events.push(format!("{t} mod.error {} {UNLOAD}", h.by));
                    self.release(t, c);
                } else {
                    self.refusals.insert(c, h);
                }
            }
        }
    }

    fn tick(&mut self, t: u64) {
        if self.scene.is_some() {
            self.plan(t);
            let mut ready = Vec::new();
            for (id, k) in &self.tickets {
                if k.announced || !(k.from <= t && t <= k.until) {
                    continue;
                }
                if self.cylinder_ready(&(k.at, k.radius)) {
                    ready.push(id.clone());
                }
            }
            for id in ready {
                self.tickets.get_mut(&id).unwrap().announced = true;
                self.events.push(format!("{t} world.ticket.ready {id}"));
            }
        } else {
            self.over = false;
        }
        self.tickets.retain(|_, k| k.until > t);
        self.foci.clear();
        if self.scene.is_some() {
            let r = self.s.radius;
            self.foci = self.previous.iter().map(|&f| (f, r)).collect();
            self.foci.extend(self.ticket_foci(t));
        }
        let union = self.union(&self.foci);
        let ready = union
            .iter()
            .filter(|c| self.loaded.contains(c) || self.refusals.get(c).is_some_and(|h| h.load))
            .count();
        self.variables = (
            self.loaded.len() as u64,
            self.pending(&self.foci).len() as u64,
            if union.is_empty() {
                1.0
            } else {
                ready as f64 / union.len() as f64
            },
            u64::from(self.over),
        );
    }

    /// Steps 1–3 of a tick inside a scene.
    fn plan(&mut self, t: u64) {
        let (non_ticket, ids): (Vec<Xyz>, Vec<Option<String>>) =
            self.non_ticket_foci().into_iter().unzip();
        self.previous = non_ticket.clone();
        self.anchor_ids = ids;
        let r = self.s.radius;
        let mut foci: Vec<Focus> = non_ticket.into_iter().map(|f| (f, r)).collect();
        foci.extend(self.ticket_foci(t));
        let union = self.union(&foci);
        for c in &union {
            if self.loaded.contains(c) {
                self.last_wanted.insert(*c, t);
            }
        }
        let refusals = std::mem::take(&mut self.refusals);
        self.refusals = refusals
            .into_iter()
            .filter(|(c, h)| {
                if h.load {
                    union.contains(c)
                } else {
                    !self.kept(&foci, *c)
                }
            })
            .collect();
        if foci.is_empty() {
            self.over = false;
            return;
        }
        // Release, then the columns it emptied.
        let due: Vec<Yzx> = self
            .loaded
            .iter()
            .filter(|c| !self.kept(&foci, **c) && !self.refusals.contains_key(c))
            .copied()
            .collect();
        for c in due {
            self.unload(t, c);
        }
        self.columns_gone(t);
        // The cap: fail before mutation.
        let cap = self.cap();
        if let Some(cap) = cap {
            let wanted = union
                .iter()
                .filter(|c| !self.refusals.get(c).is_some_and(|h| h.load))
                .count();
            if wanted > cap {
                if !self.over {
                    self.events
                        .push(format!("{t} world.streaming.capacity {wanted} {cap}"));
                }
                self.over = true;
                return;
            }
        }
        self.over = false;
        // Load, evicting (least recently wanted, then row order) before each load that would
        // exceed the cap; an evicted section's column goes right after its section.
        let batch: Vec<Yzx> = self
            .pending(&foci)
            .into_iter()
            .take(self.s.budget as usize)
            .collect();
        let mut asked = BTreeSet::new();
        'loads: for c in batch {
            if let Some(cap) = cap {
                while self.loaded.len() >= cap {
                    let candidate = self
                        .loaded
                        .iter()
                        .filter(|v| {
                            !union.contains(v)
                                && !self.refusals.contains_key(v)
                                && !asked.contains(*v)
                        })
                        .min_by_key(|v| (self.last_wanted.get(v).copied().unwrap_or(0), **v))
                        .copied();
                    let Some(victim) = candidate else {
                        break 'loads;
                    };
                    asked.insert(victim);
                    self.evictions += 1;
                    self.unload(t, victim);
                    self.columns_gone(t);
                }
            }
            match self.ask(true, c) {
                Some(h) => {
                    self.refusals.insert(c, h);
                }
                None => {
                    self.loaded.insert(c);
                    self.last_wanted.insert(c, t);
                    self.section_event(t, "world.chunk.loaded", c);
                }
            }
        }
        self.columns_new(t);
    }

    fn leave(&mut self, t: u64) {
        if self.scene.take().is_none() {
            return;
        }
        for c in std::mem::take(&mut self.loaded) {
            self.section_event(t, "world.chunk.unloaded", c);
        }
        self.columns_gone(t);
        self.refusals.clear();
        self.tickets.clear();
        self.last_wanted.clear();
        self.last_moved = None;
        self.previous.clear();
        self.anchor_ids.clear();
    }

    fn enter(&mut self, t: u64, i: usize) {
        self.leave(t);
        self.scene = Some(i);
        self.previous = ENTRIES[i].into_iter().collect();
        self.anchor_ids = vec![None; self.previous.len()];
    }

    /// The input line of `op` at tick `t`, and whether applying it must succeed; applies it.
    fn apply(&mut self, t: u64, op: &Op) -> (Value, bool) {
        let name = |i: usize| NAMES[i].to_owned();
        let xyz = |(x, y, z): (i32, i32, i32)| (f64::from(x), f64::from(y), f64::from(z));
        let pos = |p: Xyz| json!({"x": p.0, "y": p.1, "z": p.2});
        let (mut line, ok) = match *op {
            Op::Step { who, dx, dy, dz } => {
                let p = self.get(NAMES[who]).map_or((0.0, 0.0, 0.0), |e| {
                    (
                        e.pos.0 + f64::from(dx),
                        e.pos.1 + f64::from(dy),
                        e.pos.2 + f64::from(dz),
                    )
                });
                let ok = self.get_mut(NAMES[who]).map(|e| e.pos = p).is_some();
                (json!({"do": "move", "entity": name(who), "to": pos(p)}), ok)
            }
            Op::Move { who, at } => {
                let p = xyz(at);
                let ok = self.get_mut(NAMES[who]).map(|e| e.pos = p).is_some();
                (json!({"do": "move", "entity": name(who), "to": pos(p)}), ok)
            }
            Op::Ride { rider, vehicle } => {
                let (r, v) = (name(rider), name(vehicle));
                let mut ok = self.get(&r).is_some() && self.get(&v).is_some();
                let mut at = Some(v.clone());
                while ok {
                    match at {
                        Some(ref a) if *a == r => ok = false,
                        Some(ref a) => at = self.get(a).and_then(|e| e.rides.clone()),
                        None => break,
                    }
                }
                if ok {
                    self.get_mut(&r).unwrap().rides = Some(v.clone());
                }
                (json!({"do": "ride", "entity": r, "vehicle": v}), ok)
            }
            Op::Dismount(who) => {
                let ok = self.get_mut(NAMES[who]).map(|e| e.rides = None).is_some();
                (json!({"do": "dismount", "entity": name(who)}), ok)
            }
            Op::Control(who) => {
                let ok = who.is_none_or(|i| self.get(NAMES[i]).is_some());
                if ok {
                    self.control = who.map(name);
                }
                (json!({"do": "control", "entity": who.map(name)}), ok)
            }
            Op::Spawn { who, at } => {
                let e = original(who, xyz(at));
                let line = json!({"do": "spawn", "entity": {"id": e.id, "tags": e.tags, "position": pos(e.pos)}});
                let ok = self.get(&e.id).is_none();
                if ok {
                    self.entities.push(e);
                }
                (line, ok)
            }
            Op::Despawn(who) => {
                let ok = self.get(NAMES[who]).is_some();
                self.entities.retain(|e| e.id != NAMES[who]);
                (json!({"do": "despawn", "entity": name(who)}), ok)
            }
            Op::Tag { who, on } => {
                let ok = self
                    .get_mut(NAMES[who])
                    .map(|e| {
                        if on {
                            e.tags.insert("player");
                        } else {
                            e.tags.remove("player");
                        }
                    })
                    .is_some();
                (
                    json!({"do": if on { "tag" } else { "untag" }, "entity": name(who), "tag": "player"}),
                    ok,
                )
            }
            Op::Release { x, z } => {
                // The `release` input names a column `{x, z}`: in a vertical world it releases
                // the section at row 0 (a chunk written without `y` is at row 0).
                self.refusals.remove(&(0, z, x));
                (json!({"do": "release", "x": x, "z": z}), true)
            }
            Op::Moved { at } => {
                let p = xyz(at);
                self.events
                    .push(format!("{t} player.moved {} {} {}", p.0, p.1, p.2));
                if self.scene.is_some() {
                    self.last_moved = Some(p);
                }
                (json!({"do": "player.moved", "at": pos(p)}), true)
            }
            Op::Request {
                id,
                at,
                radius,
                ticks,
            } => {
                let k = Tk {
                    at: xyz(at),
                    radius,
                    from: t,
                    until: t + ticks - 1,
                    announced: false,
                };
                let line = json!({"do": "request", "id": TICKETS[id], "at": pos(k.at), "radius": radius, "ticks": ticks});
                self.tickets.insert(TICKETS[id].to_owned(), k);
                (line, true)
            }
            Op::Drop(id) => {
                self.tickets.remove(TICKETS[id]);
                (json!({"do": "drop", "ticket": TICKETS[id]}), true)
            }
            Op::Leave => {
                self.leave(t);
                (json!({"do": "leave"}), true)
            }
            Op::Enter(i) => {
                self.enter(t, i);
                (json!({"do": "enter", "scene": SCENES[i]}), true)
            }
        };
        line["tick"] = json!(t);
        (line, ok)
    }

    /// What the state must say after tick `t`, sections as `[x, y, z]`.
    fn state(&self, t: u64) -> Value {
        let xyz = |&(y, z, x): &Yzx| json!([x, y, z]);
        let mut dormant: Vec<&str> = self
            .entities
            .iter()
            .filter(|e| e.tags.contains("streamable"))
            .filter(|e| !self.loaded.contains(&self.section_of(e.pos)))
            .map(|e| e.id.as_str())
            .collect();
        dormant.sort();
        let active = self.scene.is_some();
        let ready: Vec<bool> = NAMES
            .iter()
            .map(|n| {
                let i = self
                    .anchor_ids
                    .iter()
                    .position(|a| a.as_deref() == Some(*n));
                active && i.is_some_and(|i| self.cylinder_ready(&(self.previous[i], self.s.radius)))
            })
            .collect();
        let ticket_ready: Vec<bool> = TICKETS
            .iter()
            .map(|id| {
                active
                    && self
                        .tickets
                        .get(*id)
                        .is_some_and(|k| self.cylinder_ready(&(k.at, k.radius)))
            })
            .collect();
        let columns: BTreeSet<Zx> = self.loaded.iter().map(|&(_, z, x)| (z, x)).collect();
        json!({
            "tick": t,
            "scene": self.scene.map(|i| SCENES[i]),
            "ready": ready,
            "ticketReady": ticket_ready,
            "loaded": self.loaded.iter().map(xyz).collect::<Vec<_>>(),
            "columns": columns.iter().map(|(z, x)| json!([x, z])).collect::<Vec<_>>(),
            "pending": self.pending(&self.foci).iter().map(xyz).collect::<Vec<_>>(),
            "refusals": self.refusals.iter().map(|(c, h)| {
                json!([xyz(c), if h.load { LOAD } else { UNLOAD }, h.by, h.reason])
            }).collect::<Vec<_>>(),
            "focus": self.foci.first().map(|&((x, _, z), _)| json!([x, z])),
            "foci": self.foci.iter().map(|&((x, _, z), _)| json!([x, z])).collect::<Vec<_>>(),
            "tickets": self.tickets.iter().map(|(id, k)| {
                json!([id, k.at.0, k.at.2, k.radius, k.until - t])
            }).collect::<Vec<_>>(),
            "variables": [self.variables.0, self.variables.1, self.variables.2, self.variables.3],
            "dormant": dormant,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The kit, driven through its files and inputs.

fn scene_json(s: &Scenario, dir: &std::path::Path) -> Value {
    let mut mods = Vec::new();
    for (i, m) in s.mods.iter().enumerate() {
        let mut v = json!({
            "id": format!("m{}", m.id),
            "hook": if m.load { LOAD } else { UNLOAD },
            "cancel": true,
            "reason": format!("r{i}"),
        });
        for (key, value) in [("x", m.x), ("y", m.y), ("z", m.z)] {
            if let Some(n) = value {
                v["match"][key] = json!(n);
            }
        }
        let name = format!("m{i}.json");
        std::fs::write(dir.join(&name), v.to_string()).unwrap();
        mods.push(name);
    }
    if s.set_shape.is_some() || s.set_rv.is_some() {
        let mut v = json!({"id": "setter", "set": {}});
        if let Some(shape) = s.set_shape {
            v["set"]["shape"] = json!(shape.name());
        }
        if let Some(rv) = s.set_rv {
            v["set"]["vertical"] = json!({"radius": rv});
        }
        std::fs::write(dir.join("setter.json"), v.to_string()).unwrap();
        mods.push("setter.json".to_owned());
    }
    let mut ground = json!({"id": "world.ground"});
    if s.bounded {
        let (min_x, min_z, max_x, max_z) = BOUNDS;
        ground["config"] =
            json!({"bounds": {"minX": min_x, "minZ": min_z, "maxX": max_x, "maxZ": max_z}});
    }
    let mut config = json!({
        "chunkSize": SIZE, "radius": s.radius, "budgetMs": s.budget, "focus": s.mode.name(),
    });
    if let Some(shape) = s.shape {
        config["shape"] = json!(shape.name());
    }
    if let Some(v) = s.vertical {
        config["vertical"] = json!({"radius": v.radius});
        if let Some(h) = v.height {
            config["vertical"]["height"] = json!(h);
        }
    }
    if let Some(cap) = s.cap {
        config["maxLoaded"] = json!(cap);
    }
    if let Some(n) = s.refusal_cap {
        config["maxRefusalsPerMod"] = json!(n);
    }
    let mut layer = json!({});
    if let Some(m) = s.layer_mode {
        layer["focus"] = json!(m.name());
    }
    match s.layer_cap {
        LayerCap::Absent => {}
        LayerCap::Null => layer["maxLoaded"] = Value::Null,
        LayerCap::Cap(n) => layer["maxLoaded"] = json!(n),
    }
    if let Some(shape) = s.layer_shape {
        layer["shape"] = json!(shape.name());
    }
    if let (Some(rv), Some(v)) = (s.layer_rv, s.vertical) {
        // The layer's section height is the config's: a layer changes how far, not how tall.
        layer["vertical"] = json!({"radius": rv, "height": v.height.unwrap_or(SIZE)});
    }
    let entities: Vec<Value> = (0..6)
        .map(|i| {
            let e = original(i, START[i]);
            json!({"id": e.id, "tags": e.tags, "position": {"x": e.pos.0, "y": e.pos.1, "z": e.pos.2}})
        })
        .collect();
    json!({
        "kits": [ground, {"id": "world.streaming", "config": config}],
        "mods": mods,
        "scenes": [
            {"id": "a", "entry": {"x": 0, "z": 0}},
            {"id": "b", "entry": {"x": 40, "y": 30, "z": -40}, "layers": {"world.streaming": layer}},
            {"id": "c"}
        ],
        "entities": entities,
        "control": s.control.map(|i| NAMES[i]),
    })
}

fn build(scene: &Value, dir: &std::path::Path) -> Game {
    Game::from_scene_text(&scene.to_string(), "scene.json", dir, &builtin_catalog())
        .unwrap_or_else(|e| panic!("scene refused: {e}\n{scene}"))
}

/// An event as the reference writes it: a section by `x y z` when the data has `y` (with
/// `vertical` it must, without it must not), a column by `x z`.
fn event_line(e: &world_streaming::host::Event) -> String {
    let v = serde_json::to_value(e).unwrap();
    let (tick, name, d) = (&v["tick"], v["event"].as_str().unwrap(), &v["data"]);
    match name {
        "world.chunk.loaded" | "world.chunk.unloaded" => match d.get("y") {
            Some(y) => format!("{tick} {name} {} {y} {}", d["x"], d["z"]),
            None => format!("{tick} {name} {} {}", d["x"], d["z"]),
        },
        "world.column.loaded" | "world.column.unloaded" => {
            format!("{tick} {name} {} {}", d["x"], d["z"])
        }
        "mod.error" => format!(
            "{tick} mod.error {} {}",
            d["mod"].as_str().unwrap(),
            d["hook"].as_str().unwrap()
        ),
        "player.moved" => format!(
            "{tick} player.moved {} {} {}",
            d["x"].as_f64().unwrap(),
            d["y"].as_f64().unwrap_or(0.0),
            d["z"].as_f64().unwrap()
        ),
        "world.streaming.capacity" => format!("{tick} {name} {} {}", d["wanted"], d["cap"]),
        "world.ticket.ready" => format!("{tick} {name} {}", d["id"].as_str().unwrap()),
        _ => format!("{tick} {name} {d}"),
    }
}

/// A section of the kit's state or service as `[x, y, z]` (`y` absent: 0).
fn section(v: &Value) -> Value {
    json!([v["x"], v.get("y").cloned().unwrap_or(json!(0)), v["z"]])
}

/// The kit's state in the reference's shape.
fn kit_state(game: &Game) -> Value {
    let st = serde_json::to_value(game.state()).unwrap();
    let f = |v: &Value| json!(v.as_f64().unwrap());
    let list =
        |key: &str| -> Vec<Value> { st[key].as_array().unwrap().iter().map(section).collect() };
    let var = |k: &str| st["variables"].get(k).cloned().unwrap_or(Value::Null);
    let s = game.streaming().unwrap();
    json!({
        "tick": st["tick"],
        "ready": NAMES.iter().map(|n| game.ready(n)).collect::<Vec<_>>(),
        "ticketReady": TICKETS.iter().map(|id| s.ticket_ready(id)).collect::<Vec<_>>(),
        "scene": st["scene"],
        "loaded": list("loaded"),
        "columns": s.columns().iter().map(|c| json!([c.x, c.z])).collect::<Vec<_>>(),
        "pending": list("pending"),
        "refusals": st["refusals"].as_array().unwrap().iter().map(|r| {
            json!([section(r), r["hook"], r["mod"], r["reason"]])
        }).collect::<Vec<_>>(),
        "focus": st["focus"].as_object().map(|_| json!([f(&st["focus"]["x"]), f(&st["focus"]["z"])])),
        "foci": st["foci"].as_array().unwrap().iter().map(|p| json!([f(&p["x"]), f(&p["z"])])).collect::<Vec<_>>(),
        "tickets": st["tickets"].as_array().unwrap().iter().map(|k| {
            json!([k["id"], f(&k["x"]), f(&k["z"]), k["radius"], k["ticksLeft"]])
        }).collect::<Vec<_>>(),
        "variables": [
            var("world.chunks.loaded"),
            var("world.chunks.pending"),
            var("world.chunks.progress").as_f64().map(|v| json!(v)).unwrap_or(Value::Null),
            var("world.chunks.overCapacity"),
        ],
        "dormant": st["dormant"],
    })
}

fn check(game: &Game, reference: &mut Reference, seen: &mut usize, t: u64) -> Result<(), String> {
    let events: Vec<String> = game.engine().events()[*seen..]
        .iter()
        .map(event_line)
        .collect();
    *seen = game.engine().events().len();
    if events != reference.events {
        return Err(format!(
            "events\n  kit:       {events:?}\n  reference: {:?}",
            reference.events
        ));
    }
    reference.events.clear();
    let (actual, expected) = (kit_state(game), reference.state(t));
    for (k, want) in expected.as_object().unwrap() {
        if actual[k] != *want {
            return Err(format!(
                "{k}\n  kit:       {}\n  reference: {want}",
                actual[k]
            ));
        }
    }
    Ok(())
}

/// What the cases exercised, so that the generator is seen to reach every rule.
#[derive(Debug, Default)]
struct Seen {
    discs: usize,
    vertical: usize,
    sections_off_row_0: usize,
    evictions: usize,
    capacity: usize,
    ready: usize,
    cap_errors: usize,
    y_refusals: usize,
    columns: usize,
    many_foci: usize,
}

fn play(s: &Scenario, seen_kinds: &mut Seen) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene_json(s, dir.path());
    let mut game = build(&scene, dir.path());
    let mut reference = Reference::new(s);
    let mut seen = 0;
    let mut lines = Vec::new();
    let path = dir.path().join("run.save.json");
    for (i, ops) in s.ticks.iter().enumerate() {
        let tick = i as u64 + 1;
        if s.save_at == Some(i) {
            game.save(&path).unwrap();
            game = build(&scene, dir.path());
            seen = game.engine().events().len();
            game.load(&path).unwrap();
            lines.push(format!("(saved after tick {i}, loaded into a fresh game)"));
        }
        for op in ops {
            let (line, ok) = reference.apply(tick, op);
            let applied = game.apply(&parse_line(&line.to_string()).unwrap());
            lines.push(format!("{line} -> {applied:?}"));
            prop_assert_eq!(applied.is_ok(), ok, "{}\ninputs: {:#?}", line, lines);
        }
        game.tick();
        reference.tick(tick);
        for e in &reference.events {
            if e.contains("world.streaming.capacity") {
                seen_kinds.capacity += 1;
            } else if e.contains("world.ticket.ready") {
                seen_kinds.ready += 1;
            } else if e.contains("mod.error") {
                seen_kinds.cap_errors += 1;
            } else if e.contains("world.column.") {
                seen_kinds.columns += 1;
            }
        }
        seen_kinds.evictions += std::mem::take(&mut reference.evictions);
        if reference.foci.len() > 2 {
            seen_kinds.many_foci += 1;
        }
        if reference.shape() == Shape::Disc && !reference.loaded.is_empty() {
            seen_kinds.discs += 1;
        }
        if reference.vertical() {
            seen_kinds.vertical += 1;
            seen_kinds.sections_off_row_0 += reference.loaded.iter().filter(|c| c.0 != 0).count();
            seen_kinds.y_refusals += reference
                .refusals
                .iter()
                .filter(|(c, h)| s.mods[h.reason[1..].parse::<usize>().unwrap()].y == Some(c.0))
                .count();
        }
        check(&game, &mut reference, &mut seen, tick).map_err(|e| {
            TestCaseError::fail(format!(
                "tick {tick}: {e}\nscene: {scene}\ninputs: {lines:#?}"
            ))
        })?;
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120)
}

#[test]
fn the_kit_agrees_with_an_independent_shape_and_section_planner_tick_by_tick() {
    let seen = std::cell::RefCell::new(Seen::default());
    let config = ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let rng = proptest::test_runner::TestRng::deterministic_rng(config.rng_algorithm);
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(config, rng);
    let result = runner.run(&scenario(), |s| play(&s, &mut seen.borrow_mut()));
    if let Err(e) = result {
        panic!("{e}");
    }
    let seen = seen.into_inner();
    eprintln!("{seen:?}");
    assert!(seen.discs > 0, "{seen:?}");
    assert!(seen.vertical > 0, "{seen:?}");
    assert!(seen.sections_off_row_0 > 0, "{seen:?}");
    assert!(seen.evictions > 0, "{seen:?}");
    assert!(seen.capacity > 0, "{seen:?}");
    assert!(seen.ready > 0, "{seen:?}");
    assert!(seen.cap_errors > 0, "{seen:?}");
    assert!(seen.y_refusals > 0, "{seen:?}");
    assert!(seen.columns > 0, "{seen:?}");
    assert!(seen.many_foci > 0, "{seen:?}");
}

fn still(shape: Option<Shape>, radius: u32, vertical: Option<Vertical>) -> Scenario {
    Scenario {
        mode: Mode::Player,
        radius,
        budget: 1,
        bounded: false,
        shape,
        vertical,
        cap: None,
        refusal_cap: None,
        layer_mode: None,
        layer_cap: LayerCap::Absent,
        layer_shape: None,
        layer_rv: None,
        set_shape: None,
        set_rv: None,
        control: None,
        mods: Vec::new(),
        ticks: Vec::new(),
        save_at: None,
    }
}

/// The reference is not vacuous: the seed's cylinder counts, and orders worked out by hand.
#[test]
fn the_reference_itself_counts_the_seed_cylinder_and_orders_by_hand() {
    // Radius 8, rv 4: 197 columns × 9 rows.
    assert_eq!(count(Shape::Disc, 8, Some(4)), 1773);
    assert_eq!(count(Shape::Disc, 8, None), 197);
    assert_eq!(count(Shape::Square, 8, Some(4)), 17 * 17 * 9);
    assert_eq!(
        count(Shape::Disc, 1, None),
        5,
        "a plus: the corners are at 2 > 1"
    );
    let v = Vertical {
        radius: 1,
        height: Some(10.0),
    };
    let mut r = Reference::new(&still(Some(Shape::Disc), 1, Some(v)));
    // p0 at (5, 3, 5): section (0, 0, 0), its centre (8, 5, 8) is 9 + 4 + 9 = 22 m² away and
    // loads first. Then row -1's (0, -1, 0) at 9 + 64 + 9 = 82, row 1's (0, 1, 0) at 9 + 144 + 9
    // = 162, and row 0's (0, 0, -1) and (-1, 0, 0), both 9 + 4 + 169 = 182: lower z first.
    r.tick(1);
    let f = r.foci[0];
    assert_eq!(r.cylinder(&f).len(), 15);
    let order: Vec<Yzx> = r.pending(&r.foci).into_iter().take(4).collect();
    assert_eq!(order, [(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 0, -1)]);
    assert_eq!(
        r.events,
        ["1 world.chunk.loaded 0 0 0", "1 world.column.loaded 0 0"]
    );
    // A step up by one section: row 2 is wanted, row -1 is kept (within rv + 1).
    r.events.clear();
    r.apply(
        2,
        &Op::Step {
            who: 0,
            dx: 0,
            dy: 10,
            dz: 0,
        },
    );
    r.tick(2);
    assert!(r.union(&r.foci).contains(&(2, 0, 0)));
    assert!(!r.union(&r.foci).contains(&(-1, 0, 0)));
    assert!(r.kept(&r.foci, (-1, 0, 0)));
    assert!(!r.kept(&r.foci, (-2, 0, 0)));
    // Flat disc: the order is 2-D and nothing carries y.
    let mut r = Reference::new(&still(Some(Shape::Disc), 1, None));
    r.tick(1);
    assert_eq!(r.events, ["1 world.chunk.loaded 0 0"]);
}
