//! docs/reference/streaming.md against a reference planner of its own, tick by tick (what
//! tests/reference.rs is for the round-1 rules (docs/reference/grid.md, docs/reference/tick.md,
//! docs/reference/hooks.md, docs/reference/saves.md)).
//!
//! The reference keeps no incremental state and shares no code with the product: every tick it
//! lists the anchors (`focus: "players"`) or the one player (`"player"`) from its own copy of the
//! entities, adds the tickets counting in the tick, recomputes the whole wanted union with its
//! own grid arithmetic, applies the refusal drop rules, releases in row order, checks the
//! resident cap, sorts every pending chunk by its nearest-first key, evicts least recently wanted
//! chunks before each load that would exceed `maxLoaded`, asks its own model of the JSON mods
//! (load and unload refusals, several mods sharing an id, `maxRefusalsPerMod`), then announces
//! ready tickets and expires spent ones. Random scenes (focus mode and cap from the config or a
//! scene layer, `maxLoaded: null` in a layer, bounds or not) and inputs (moves, rides, dismounts,
//! control changes, `player` tagged and untagged, despawns and respawns of anchors and
//! vehicles, tickets requested and dropped, releases, `player.moved`, leave/enter) are played on
//! the kit and on the reference; after every tick the event log, `loaded()`, `pending()`,
//! `refusals()`, the foci, the tickets, the variables, `ready(entity)`, `ticketReady(id)` and the
//! `dormant` tags must agree. Most cases save at a random tick and continue in a fresh game
//! loaded from that save, or play on and later load the save back into the same game: either
//! way it must go on exactly as the reference. Expectations never come from the product. 300
//! cases from a fixed seed by default (~5 s in debug); set `PROPTEST_CASES` for more.

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

/// A JSON mod cancelling one hook, on the chunks its match names.
#[derive(Debug, Clone, Copy)]
struct JsonMod {
    /// Its id is `m{id}`: two files may share an id (and so a refusal count).
    id: usize,
    load: bool,
    x: Option<i64>,
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
    /// A move by about a chunk from where the entity is.
    Step {
        who: usize,
        dx: i32,
        dz: i32,
    },
    Move {
        who: usize,
        x: i32,
        z: i32,
    },
    Ride {
        rider: usize,
        vehicle: usize,
    },
    Dismount(usize),
    Control(Option<usize>),
    Spawn {
        who: usize,
        x: i32,
        z: i32,
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
        x: i32,
        z: i32,
    },
    Request {
        id: usize,
        x: i32,
        z: i32,
        radius: u32,
        ticks: u64,
    },
    Drop(usize),
    Leave,
    Enter(usize),
}

#[derive(Debug, Clone)]
struct Scenario {
    mode: Mode,
    radius: u32,
    budget: u32,
    bounded: bool,
    cap: Option<usize>,
    refusal_cap: Option<usize>,
    layer_mode: Option<Mode>,
    layer_cap: LayerCap,
    control: Option<usize>,
    mods: Vec<JsonMod>,
    ticks: Vec<Vec<Op>>,
    /// Save before this tick's inputs and continue in a fresh game loaded from the save.
    save_at: Option<usize>,
    /// Instead: keep playing the same game this many ticks, then load the save back into it
    /// and play on from the save (the world it had then replaced by the saved one).
    rewind: Option<usize>,
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![1 => Just(Mode::Player), 3 => Just(Mode::Players)]
}

fn json_mod() -> impl Strategy<Value = JsonMod> {
    (
        0..2usize,
        prop::bool::weighted(0.3),
        proptest::option::weighted(0.6, -3..3i64),
        proptest::option::weighted(0.3, -3..3i64),
    )
        .prop_map(|(id, load, x, z)| JsonMod { id, load, x, z })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (prop_oneof![3 => 0..2usize, 1 => 0..6usize], -20..20i32, -20..20i32)
            .prop_map(|(who, dx, dz)| Op::Step { who, dx, dz }),
        4 => (0..6usize, -60..60i32, -60..60i32).prop_map(|(who, x, z)| Op::Move { who, x, z }),
        1 => (0..6usize, -200..200i32, -200..200i32).prop_map(|(who, x, z)| Op::Move { who, x, z }),
        3 => (0..6usize, 0..6usize).prop_map(|(rider, vehicle)| Op::Ride { rider, vehicle }),
        2 => (0..6usize).prop_map(Op::Dismount),
        2 => proptest::option::weighted(0.8, 0..6usize).prop_map(Op::Control),
        2 => (0..6usize, -80..80i32, -80..80i32).prop_map(|(who, x, z)| Op::Spawn { who, x, z }),
        2 => (0..6usize).prop_map(Op::Despawn),
        3 => (0..6usize, any::<bool>()).prop_map(|(who, on)| Op::Tag { who, on }),
        1 => (-3..3i64, -3..3i64).prop_map(|(x, z)| Op::Release { x, z }),
        1 => (-80..80i32, -80..80i32).prop_map(|(x, z)| Op::Moved { x, z }),
        3 => (0..3usize, -120..120i32, -120..120i32, 0..3u32, 1..8u64)
            .prop_map(|(id, x, z, radius, ticks)| Op::Request { id, x, z, radius, ticks }),
        1 => (0..3usize).prop_map(Op::Drop),
        1 => Just(Op::Leave),
        1 => (0..3usize).prop_map(Op::Enter),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        (mode(), 0..3u32, 1..5u32, any::<bool>()),
        (
            (0..3u32, 1..40usize, 0..5usize, 1..4usize),
            proptest::option::weighted(0.7, 0..4usize),
        ),
        (
            proptest::option::of(mode()),
            prop_oneof![
                Just(LayerCap::Absent),
                Just(LayerCap::Null),
                (1..30usize).prop_map(LayerCap::Cap)
            ],
            proptest::option::weighted(0.2, 0..6usize),
        ),
        proptest::collection::vec(json_mod(), 0..4),
        proptest::collection::vec(proptest::collection::vec(op(), 0..4), 1..28),
        proptest::option::weighted(0.7, 1..28usize),
        proptest::option::weighted(0.3, 1..6usize),
    )
        .prop_map(
            |(
                (mode, radius, budget, bounded),
                ((cap_kind, cap, slack, squares), refusal_cap),
                (layer_mode, layer_cap, control),
                mods,
                ticks,
                save_at,
                rewind,
            )| Scenario {
                mode,
                radius,
                budget,
                bounded,
                // No cap, any cap, or one just above one to three squares (evictions).
                cap: match cap_kind {
                    0 => None,
                    1 => Some(cap),
                    _ => Some(((2 * radius + 1) * (2 * radius + 1)) as usize * squares + slack),
                },
                refusal_cap,
                layer_mode,
                layer_cap,
                control,
                mods,
                ticks,
                save_at,
                rewind,
            },
        )
}

// ---------------------------------------------------------------------------------------------
// The reference.

type Xz = (f64, f64);
/// A chunk as `(z, x)`: a `BTreeSet` of these is in row order.
type Zx = (i64, i64);

#[derive(Debug, Clone)]
struct Ent {
    id: String,
    tags: BTreeSet<&'static str>,
    pos: Xz,
    rides: Option<String>,
}

fn original(who: usize, pos: Xz) -> Ent {
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

const START: [Xz; 6] = [
    (5.0, 5.0),
    (-30.0, 20.0),
    (-10.0, -40.0),
    (30.0, 5.0),
    (50.0, 40.0),
    (20.0, -20.0),
];

#[derive(Debug, Clone, PartialEq)]
struct Held {
    load: bool,
    by: String,
    reason: String,
}

#[derive(Debug, Clone)]
struct Tk {
    at: Xz,
    radius: u32,
    from: u64,
    until: u64,
    announced: bool,
}

#[derive(Clone)]
struct Reference {
    s: Scenario,
    entities: Vec<Ent>,
    control: Option<String>,
    scene: Option<usize>,
    last_moved: Option<Xz>,
    /// The last non-ticket foci (docs/reference/tick.md#focus-resolution).
    previous: Vec<Xz>,
    /// The anchor each of them is the focus of (none for `player.moved` or a previous focus).
    anchor_ids: Vec<Option<String>>,
    tickets: BTreeMap<String, Tk>,
    loaded: BTreeSet<Zx>,
    last_wanted: BTreeMap<Zx, u64>,
    refusals: BTreeMap<Zx, Held>,
    over: bool,
    /// The foci in force after the last tick: position and radius.
    foci: Vec<(Xz, u32)>,
    variables: (u64, u64, f64, u64),
    events: Vec<String>,
    /// Evictions asked (to see that the generator reaches them).
    evictions: usize,
}

const ENTRIES: [Option<Xz>; 3] = [Some((0.0, 0.0)), Some((40.0, -40.0)), None];
const SCENES: [&str; 3] = ["a", "b", "c"];

fn chunk_of(p: Xz) -> (i64, i64) {
    ((p.0 / SIZE).floor() as i64, (p.1 / SIZE).floor() as i64)
}

fn ring(a: (i64, i64), b: (i64, i64)) -> u64 {
    a.0.abs_diff(b.0).max(a.1.abs_diff(b.1))
}

fn dist2(f: Xz, x: i64, z: i64) -> f64 {
    let dx = (x as f64 + 0.5) * SIZE - f.0;
    let dz = (z as f64 + 0.5) * SIZE - f.1;
    dx * dx + dz * dz
}

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

    fn budget(&self) -> usize {
        self.s.budget as usize
    }

    fn inside(&self, (x, z): (i64, i64)) -> bool {
        if !self.s.bounded {
            return true;
        }
        let (min_x, min_z, max_x, max_z) = BOUNDS;
        (x as f64 * SIZE) < max_x
            && min_x < (x + 1) as f64 * SIZE
            && (z as f64 * SIZE) < max_z
            && min_z < (z + 1) as f64 * SIZE
    }

    /// The chunks of a focus's square inside the ground, as `(z, x)`.
    fn square(&self, f: Xz, r: u32) -> Vec<Zx> {
        let (cx, cz) = chunk_of(f);
        let r = i64::from(r);
        let mut v = Vec::new();
        for z in cz - r..=cz + r {
            for x in cx - r..=cx + r {
                if self.inside((x, z)) {
                    v.push((z, x));
                }
            }
        }
        v
    }

    fn union(&self, foci: &[(Xz, u32)]) -> BTreeSet<Zx> {
        foci.iter().flat_map(|&(f, r)| self.square(f, r)).collect()
    }

    /// Kept by some focus: within `r(F) + 1` of it.
    fn kept(foci: &[(Xz, u32)], (z, x): Zx) -> bool {
        foci.iter()
            .any(|&(f, r)| ring((x, z), chunk_of(f)) <= u64::from(r) + 1)
    }

    /// The wanted chunks neither loaded nor held by a load refusal, nearest-first.
    fn pending(&self, foci: &[(Xz, u32)]) -> Vec<(i64, i64)> {
        let mut keyed: Vec<(f64, i64, i64)> = self
            .union(foci)
            .into_iter()
            .filter(|c| !self.loaded.contains(c) && !self.refusals.contains_key(c))
            .map(|(z, x)| {
                let key = foci
                    .iter()
                    .filter(|&&(f, r)| ring((x, z), chunk_of(f)) <= u64::from(r))
                    .map(|&(f, _)| dist2(f, x, z))
                    .fold(f64::INFINITY, f64::min);
                (key, z, x)
            })
            .collect();
        keyed.sort_by(|a, b| {
            a.0.partial_cmp(&b.0)
                .unwrap()
                .then(a.1.cmp(&b.1))
                .then(a.2.cmp(&b.2))
        });
        keyed.into_iter().map(|(_, z, x)| (x, z)).collect()
    }

    fn get(&self, id: &str) -> Option<&Ent> {
        self.entities.iter().find(|e| e.id == id)
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Ent> {
        self.entities.iter_mut().find(|e| e.id == id)
    }

    /// An entity's focus: the position of the vehicle it rides (if that exists), else its own.
    fn focus_of(&self, e: &Ent) -> Xz {
        e.rides
            .as_deref()
            .and_then(|v| self.get(v))
            .map_or(e.pos, |v| v.pos)
    }

    /// The non-ticket foci of this tick, each with the anchor it is the focus of.
    fn non_ticket_foci(&self) -> Vec<(Xz, Option<String>)> {
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

    /// Every chunk of the square (inside the ground) loaded or held by a load refusal.
    fn square_ready(&self, f: Xz, r: u32) -> bool {
        self.square(f, r)
            .iter()
            .all(|c| self.loaded.contains(c) || self.refusals.get(c).is_some_and(|h| h.load))
    }

    fn ticket_foci(&self, t: u64) -> Vec<(Xz, u32)> {
        self.tickets
            .values()
            .filter(|k| k.from <= t && t <= k.until)
            .map(|k| (k.at, k.radius))
            .collect()
    }

    /// The mods in mod order: the first whose hook and match fit cancels.
    fn ask(&self, load: bool, (z, x): Zx) -> Option<Held> {
        self.s.mods.iter().enumerate().find_map(|(i, m)| {
            (m.load == load && m.x.is_none_or(|mx| mx == x) && m.z.is_none_or(|mz| mz == z)).then(
                || Held {
                    load,
                    by: format!("m{}", m.id),
                    reason: format!("r{i}"),
                },
            )
        })
    }

    fn chunk_event(&mut self, t: u64, name: &str, (z, x): Zx) {
        self.events.push(format!("{t} {name} {x} {z}"));
    }

    fn release(&mut self, t: u64, c: Zx) {
        self.loaded.remove(&c);
        self.last_wanted.remove(&c);
        self.chunk_event(t, "world.chunk.unloaded", c);
    }

    /// Asks `world.chunk.unload` (a release or an eviction) and applies the answer, the
    /// refusal cap included.
    fn unload(&mut self, t: u64, c: Zx) {
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
                if self.square_ready(k.at, k.radius) {
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
        // The variables, over the foci in force once spent tickets are gone.
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
        let (non_ticket, ids): (Vec<Xz>, Vec<Option<String>>) =
            self.non_ticket_foci().into_iter().unzip();
        self.previous = non_ticket.clone();
        self.anchor_ids = ids;
        let r = self.s.radius;
        let mut foci: Vec<(Xz, u32)> = non_ticket.into_iter().map(|f| (f, r)).collect();
        foci.extend(self.ticket_foci(t));
        let union = self.union(&foci);
        for c in &union {
            if self.loaded.contains(c) {
                self.last_wanted.insert(*c, t);
            }
        }
        self.refusals.retain(|c, h| {
            if h.load {
                union.contains(c)
            } else {
                !Self::kept(&foci, *c)
            }
        });
        if foci.is_empty() {
            self.over = false;
            return;
        }
        // Release.
        let due: Vec<Zx> = self
            .loaded
            .iter()
            .filter(|c| !Self::kept(&foci, **c) && !self.refusals.contains_key(c))
            .copied()
            .collect();
        for c in due {
            self.unload(t, c);
        }
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
        // Load, evicting before each load that would exceed the cap.
        let batch: Vec<(i64, i64)> = self
            .pending(&foci)
            .into_iter()
            .take(self.budget())
            .collect();
        let mut asked = BTreeSet::new();
        'loads: for (x, z) in batch {
            if let Some(cap) = cap {
                while self.loaded.len() >= cap {
                    let candidate = self
                        .loaded
                        .iter()
                        .filter(|c| {
                            !union.contains(c)
                                && !self.refusals.contains_key(c)
                                && !asked.contains(*c)
                        })
                        .min_by_key(|c| (self.last_wanted.get(c).copied().unwrap_or(0), c.0, c.1))
                        .copied();
                    let Some(victim) = candidate else {
                        break 'loads;
                    };
                    asked.insert(victim);
                    self.evictions += 1;
                    self.unload(t, victim);
                }
            }
            match self.ask(true, (z, x)) {
                Some(h) => {
                    self.refusals.insert((z, x), h);
                }
                None => {
                    self.loaded.insert((z, x));
                    self.last_wanted.insert((z, x), t);
                    self.chunk_event(t, "world.chunk.loaded", (z, x));
                }
            }
        }
    }

    fn leave(&mut self, t: u64) {
        if self.scene.take().is_none() {
            return;
        }
        for c in std::mem::take(&mut self.loaded) {
            self.chunk_event(t, "world.chunk.unloaded", c);
        }
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
        let (mut line, ok) = match *op {
            Op::Step { who, dx, dz } => {
                let (x, z) = self.get(NAMES[who]).map_or((0.0, 0.0), |e| {
                    (e.pos.0 + f64::from(dx), e.pos.1 + f64::from(dz))
                });
                let ok = self.get_mut(NAMES[who]).map(|e| e.pos = (x, z)).is_some();
                (
                    json!({"do": "move", "entity": name(who), "to": {"x": x, "z": z}}),
                    ok,
                )
            }
            Op::Move { who, x, z } => {
                let (x, z) = (f64::from(x), f64::from(z));
                let ok = self.get_mut(NAMES[who]).map(|e| e.pos = (x, z)).is_some();
                (
                    json!({"do": "move", "entity": name(who), "to": {"x": x, "z": z}}),
                    ok,
                )
            }
            Op::Ride { rider, vehicle } => {
                let (r, v) = (name(rider), name(vehicle));
                // Refused: a missing rider or vehicle, or a chain of links from the vehicle back
                // to the rider (a link to a missing entity ends the chain).
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
            Op::Spawn { who, x, z } => {
                let e = original(who, (f64::from(x), f64::from(z)));
                let line = json!({"do": "spawn", "entity": {"id": e.id, "tags": e.tags, "position": {"x": x, "z": z}}});
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
                self.refusals.remove(&(z, x));
                (json!({"do": "release", "x": x, "z": z}), true)
            }
            Op::Moved { x, z } => {
                let (x, z) = (f64::from(x), f64::from(z));
                self.events.push(format!("{t} player.moved {x} {z}"));
                if self.scene.is_some() {
                    self.last_moved = Some((x, z));
                }
                (json!({"do": "player.moved", "at": {"x": x, "z": z}}), true)
            }
            Op::Request {
                id,
                x,
                z,
                radius,
                ticks,
            } => {
                let k = Tk {
                    at: (f64::from(x), f64::from(z)),
                    radius,
                    from: t,
                    until: t + ticks - 1,
                    announced: false,
                };
                self.tickets.insert(TICKETS[id].to_owned(), k);
                (
                    json!({"do": "request", "id": TICKETS[id], "at": {"x": x, "z": z}, "radius": radius, "ticks": ticks}),
                    true,
                )
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

    /// What the state must say after tick `t`.
    fn state(&self, t: u64) -> Value {
        let xz = |(z, x): &Zx| json!([x, z]);
        let mut dormant: Vec<&str> = self
            .entities
            .iter()
            .filter(|e| e.tags.contains("streamable"))
            .filter(|e| {
                let (x, z) = chunk_of(e.pos);
                !self.loaded.contains(&(z, x))
            })
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
                active && i.is_some_and(|i| self.square_ready(self.previous[i], self.s.radius))
            })
            .collect();
        let ticket_ready: Vec<bool> = TICKETS
            .iter()
            .map(|id| {
                active
                    && self
                        .tickets
                        .get(*id)
                        .is_some_and(|k| self.square_ready(k.at, k.radius))
            })
            .collect();
        json!({
            "tick": t,
            "scene": self.scene.map(|i| SCENES[i]),
            "ready": ready,
            "ticketReady": ticket_ready,
            "loaded": self.loaded.iter().map(xz).collect::<Vec<_>>(),
            "pending": self.pending(&self.foci).iter().map(|&(x, z)| json!([x, z])).collect::<Vec<_>>(),
            "refusals": self.refusals.iter().map(|((z, x), h)| {
                json!([x, z, if h.load { LOAD } else { UNLOAD }, h.by, h.reason])
            }).collect::<Vec<_>>(),
            "focus": self.foci.first().map(|&((x, z), _)| json!([x, z])),
            "foci": self.foci.iter().map(|&((x, z), _)| json!([x, z])).collect::<Vec<_>>(),
            "tickets": self.tickets.iter().map(|(id, k)| {
                json!([id, k.at.0, k.at.1, k.radius, k.until - t])
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
        if let Some(x) = m.x {
            v["match"]["x"] = json!(x);
        }
        if let Some(z) = m.z {
            v["match"]["z"] = json!(z);
        }
        let name = format!("m{i}.json");
        std::fs::write(dir.join(&name), v.to_string()).unwrap();
        mods.push(name);
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
    let entities: Vec<Value> = (0..6)
        .map(|i| {
            let e = original(i, START[i]);
            json!({"id": e.id, "tags": e.tags, "position": {"x": e.pos.0, "z": e.pos.1}})
        })
        .collect();
    json!({
        "kits": [ground, {"id": "world.streaming", "config": config}],
        "mods": mods,
        "scenes": [
            {"id": "a", "entry": {"x": 0, "z": 0}},
            {"id": "b", "entry": {"x": 40, "z": -40}, "layers": {"world.streaming": layer}},
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

/// An event as the reference writes it (a `mod.error` by mod and hook: the message is the kit's).
fn event_line(e: &world_streaming::host::Event) -> String {
    let v = serde_json::to_value(e).unwrap();
    let (tick, name, d) = (&v["tick"], v["event"].as_str().unwrap(), &v["data"]);
    match name {
        "world.chunk.loaded" | "world.chunk.unloaded" => {
            format!("{tick} {name} {} {}", d["x"], d["z"])
        }
        "mod.error" => format!(
            "{tick} mod.error {} {}",
            d["mod"].as_str().unwrap(),
            d["hook"].as_str().unwrap()
        ),
        "player.moved" => format!(
            "{tick} player.moved {} {}",
            d["x"].as_f64().unwrap(),
            d["z"].as_f64().unwrap()
        ),
        "world.streaming.capacity" => format!("{tick} {name} {} {}", d["wanted"], d["cap"]),
        "world.ticket.ready" => format!("{tick} {name} {}", d["id"].as_str().unwrap()),
        _ => format!("{tick} {name} {d}"),
    }
}

/// The kit's state in the reference's shape.
fn kit_state(game: &Game) -> Value {
    let st = game.state();
    let xz = |c: &world_streaming::grid::ChunkPos| json!([c.x, c.z]);
    let f = |v: f64| json!(v);
    let var = |k: &str| st.variables.get(k).cloned().unwrap_or(Value::Null);
    let s = game.streaming().unwrap();
    json!({
        "tick": st.tick,
        "ready": NAMES.iter().map(|n| game.ready(n)).collect::<Vec<_>>(),
        "ticketReady": TICKETS.iter().map(|id| s.ticket_ready(id)).collect::<Vec<_>>(),
        "scene": st.scene,
        "loaded": st.loaded.iter().map(xz).collect::<Vec<_>>(),
        "pending": st.pending.iter().map(xz).collect::<Vec<_>>(),
        "refusals": st.refusals.iter().map(|r| json!([r.x, r.z, r.hook, r.by, r.reason])).collect::<Vec<_>>(),
        "focus": st.focus.as_ref().map(|p| json!([f(p.x), f(p.z)])),
        "foci": st.foci.iter().map(|p| json!([f(p.x), f(p.z)])).collect::<Vec<_>>(),
        "tickets": st.tickets.iter().map(|k| json!([k.id, f(k.x), f(k.z), k.radius, k.ticks_left])).collect::<Vec<_>>(),
        "variables": [
            var("world.chunks.loaded"),
            var("world.chunks.pending"),
            var("world.chunks.progress").as_f64().map(f).unwrap_or(Value::Null),
            var("world.chunks.overCapacity"),
        ],
        "dormant": st.dormant,
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

/// What a scenario exercised (so that the generator is seen to reach every rule).
#[derive(Debug, Default)]
struct Seen {
    evictions: usize,
    capacity: usize,
    ready: usize,
    cap_errors: usize,
    many_foci: usize,
    anchors_ready: usize,
}

fn play(s: &Scenario, seen_kinds: &mut Seen) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene_json(s, dir.path());
    let mut game = build(&scene, dir.path());
    let mut reference = Reference::new(s);
    let mut seen = 0;
    let mut lines = Vec::new();
    let path = dir.path().join("run.save.json");
    let (mut snapshot, mut rewound) = (None, false);
    let mut i = 0;
    while i < s.ticks.len() {
        let tick = i as u64 + 1;
        if s.save_at == Some(i) && !rewound {
            game.save(&path).unwrap();
            if s.rewind.is_some() {
                snapshot = Some(reference.clone());
                lines.push(format!("(saved after tick {i})"));
            } else {
                game = build(&scene, dir.path());
                seen = game.engine().events().len();
                game.load(&path).unwrap();
                lines.push(format!("(saved after tick {i}, loaded into a fresh game)"));
            }
        }
        if let (Some(at), Some(k), false) = (s.save_at, s.rewind, rewound) {
            if i == at + k {
                game.load(&path).unwrap();
                seen = game.engine().events().len();
                reference = snapshot.take().unwrap();
                rewound = true;
                i = at;
                lines.push(format!(
                    "(the save of tick {at} loaded back into the same game)"
                ));
                continue;
            }
        }
        let ops = &s.ticks[i];
        i += 1;
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
            }
        }
        seen_kinds.evictions += std::mem::take(&mut reference.evictions);
        if reference.foci.len() > 2 {
            seen_kinds.many_foci += 1;
        }
        let state = reference.state(tick);
        seen_kinds.anchors_ready += state["ready"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r.as_bool() == Some(true))
            .count();
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
        .unwrap_or(300)
}

#[test]
fn the_kit_agrees_with_an_independent_many_foci_planner_tick_by_tick() {
    let seen = std::cell::RefCell::new(Seen::default());
    // The same scenarios on every run (as tests/common's `Rng`); `PROPTEST_CASES` for more.
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
    // The generator reaches every rule the reference models.
    assert!(seen.evictions > 0, "{seen:?}");
    assert!(seen.capacity > 0, "{seen:?}");
    assert!(seen.ready > 0, "{seen:?}");
    assert!(seen.cap_errors > 0, "{seen:?}");
    assert!(seen.many_foci > 0, "{seen:?}");
    assert!(seen.anchors_ready > 0, "{seen:?}");
}

/// The reference is not vacuous: on a fixed scene it predicts orders worked out by hand.
#[test]
fn the_reference_itself_reproduces_a_hand_worked_eviction_and_capacity_start() {
    let s = Scenario {
        mode: Mode::Players,
        radius: 0,
        budget: 1,
        bounded: false,
        cap: Some(2),
        refusal_cap: None,
        layer_mode: None,
        layer_cap: LayerCap::Absent,
        control: None,
        mods: Vec::new(),
        ticks: Vec::new(),
        save_at: None,
        rewind: None,
    };
    let mut r = Reference::new(&s);
    // p0 at (5, 5) is 18 m² from the centre of (0, 0); p1 at (-30, 20) is 52 m² from (-2, 1)'s.
    r.tick(1);
    r.tick(2);
    assert_eq!(
        r.events,
        ["1 world.chunk.loaded 0 0", "2 world.chunk.loaded -2 1"]
    );
    r.events.clear();
    // p0 steps into (1, 0): (0, 0) is within radius + 1, not released, but the cap of 2 makes
    // room for (1, 0) by evicting it (the only loaded chunk outside the union).
    r.apply(
        3,
        &Op::Step {
            who: 0,
            dx: 16,
            dz: 0,
        },
    );
    r.tick(3);
    assert_eq!(
        r.events,
        ["3 world.chunk.unloaded 0 0", "3 world.chunk.loaded 1 0"]
    );
    r.events.clear();
    // A ticket makes three chunks wanted: over the cap, announced once, nothing loads.
    let request = Op::Request {
        id: 0,
        x: 100,
        z: 100,
        radius: 0,
        ticks: 3,
    };
    r.apply(4, &request);
    r.tick(4);
    r.tick(5);
    assert_eq!(r.events, ["4 world.streaming.capacity 3 2"]);
    assert_eq!(r.variables.3, 1, "world.chunks.overCapacity");
    assert_eq!(r.variables.1, 1, "the ticket's chunk is pending");
}
