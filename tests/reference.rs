//! The kit against a reference planner written from the round-1 rules (docs/reference/grid.md,
//! docs/reference/tick.md, docs/reference/hooks.md, docs/reference/saves.md) alone, tick by tick.
//!
//! The reference keeps no incremental state: every tick it resolves the focus from its own copy
//! of the entities, applies the refusal drop rules, releases in row order, sorts the whole wanted
//! square nearest-first and asks the `min(budget, pending)` nearest through its own model of the
//! mods (JSON rules, Lua handlers that cancel, fail or set `radius`/`budgetMs`, and `set` mods).
//! It uses nothing of the product but the input and event formats: no `Grid`, no `ChunkPos`, no
//! service call to learn what to expect. Random scenes (radius and scene layers up to 4, budgets
//! from 1, bounds or not) and inputs (moves, teleports, rides, control, spawns and despawns of the
//! player, tag changes, releases, `player.moved`, leave/enter) are played on the kit and on the
//! reference; after every tick the event log (loads in order, releases, `mod.error`s, with their
//! ticks), `loaded()`, `pending()`, `refusals()`, the focus, the settings, the variables and the
//! `dormant` tags must agree. Most cases save at a random tick and continue in a fresh game
//! loaded from that save, so a save that forgets anything shows up as a difference from the
//! uninterrupted reference. 1 000 cases by default; set `PROPTEST_CASES` for more.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{json, Value};
use world_streaming::files::inputs::parse_line;
use world_streaming::game::Game;
use world_streaming::kits::builtin_catalog;

const LOAD: &str = "world.chunk.load";
const UNLOAD: &str = "world.chunk.unload";

/// What a matching handler does.
#[derive(Debug, Clone, Copy)]
enum Act {
    Cancel,
    Fail,
    SetRadius(u32),
    SetBudget(u32),
}

/// One handler: its hook, its optional chunk match and what it does on a match.
#[derive(Debug, Clone, Copy)]
struct Rule {
    load: bool,
    x: Option<i64>,
    z: Option<i64>,
    act: Act,
}

/// `radius` / `budgetMs` a mod sets when it is installed.
type Set = (Option<u32>, Option<u32>);

#[derive(Debug, Clone)]
enum ModSpec {
    /// A JSON mod: an optional cancelling rule and an optional `set`.
    Json {
        rule: Option<Rule>,
        set: Option<Set>,
    },
    /// A Lua mod: top-level `setRadius`/`setBudgetMs`, then its handlers in registration order.
    Lua { top: Set, rules: Vec<Rule> },
}

#[derive(Debug, Clone)]
enum Op {
    Move { who: usize, x: i32, z: i32 },
    Ride { rider: usize, vehicle: usize },
    Dismount(usize),
    Control(Option<usize>),
    Spawn { who: usize, x: i32, z: i32 },
    Despawn(usize),
    Tag { who: usize, player: bool, on: bool },
    Release { x: i64, z: i64 },
    Moved { x: i32, z: i32 },
    Leave,
    Enter(usize),
}

#[derive(Debug, Clone)]
struct Scenario {
    size: f64,
    radius: u32,
    budget: u32,
    bounded: bool,
    layer_b: (u32, Option<u32>),
    layer_c: u32,
    mods: Vec<ModSpec>,
    ticks: Vec<Vec<Op>>,
    /// Save before this tick's inputs and continue in a fresh game loaded from the save.
    save_at: Option<usize>,
}

fn rule(cancel_only: bool) -> impl Strategy<Value = Rule> {
    let act = if cancel_only {
        Just(Act::Cancel).boxed()
    } else {
        prop_oneof![
            3 => Just(Act::Cancel),
            2 => Just(Act::Fail),
            1 => (0..5u32).prop_map(Act::SetRadius),
            1 => (0..4u32).prop_map(Act::SetBudget),
        ]
        .boxed()
    };
    (
        any::<bool>(),
        proptest::option::weighted(0.7, -2..3i64),
        proptest::option::weighted(0.5, -2..3i64),
        act,
    )
        .prop_map(|(load, x, z, act)| Rule { load, x, z, act })
}

fn set() -> impl Strategy<Value = Set> {
    (proptest::option::of(0..5u32), proptest::option::of(0..4u32))
}

fn mod_spec() -> impl Strategy<Value = ModSpec> {
    prop_oneof![
        2 => (proptest::option::weighted(0.8, rule(true)), proptest::option::weighted(0.3, set()))
            .prop_map(|(rule, set)| match (rule, set) {
                (None, None) => ModSpec::Json { rule: None, set: Some((Some(2), None)) },
                (rule, set) => ModSpec::Json { rule, set },
            }),
        2 => (
            prop_oneof![4 => Just((None, None)), 1 => set()],
            proptest::collection::vec(rule(false), 1..3),
        )
            .prop_map(|(top, rules)| ModSpec::Lua { top, rules }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..3usize, -60..60i32, -60..60i32).prop_map(|(who, x, z)| Op::Move { who, x, z }),
        1 => (0..3usize, -400..400i32, -400..400i32).prop_map(|(who, x, z)| Op::Move { who, x, z }),
        1 => (0..3usize, 0..3usize).prop_map(|(rider, vehicle)| Op::Ride { rider, vehicle }),
        1 => (0..3usize).prop_map(Op::Dismount),
        1 => proptest::option::of(0..5usize).prop_map(Op::Control),
        1 => (0..4usize, -150..150i32, -150..150i32).prop_map(|(who, x, z)| Op::Spawn { who, x, z }),
        1 => (0..5usize).prop_map(Op::Despawn),
        1 => (0..5usize, any::<bool>(), any::<bool>()).prop_map(|(who, player, on)| Op::Tag { who, player, on }),
        1 => (-3..3i64, -3..3i64).prop_map(|(x, z)| Op::Release { x, z }),
        2 => (-120..120i32, -120..120i32).prop_map(|(x, z)| Op::Moved { x, z }),
        1 => Just(Op::Leave),
        1 => (0..3usize).prop_map(Op::Enter),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop_oneof![Just(8.0), Just(16.0), Just(32.0)],
        0..5u32,
        0..4u32,
        any::<bool>(),
        (1..5u32, proptest::option::of(0..4u32)),
        1..4u32,
        proptest::collection::vec(mod_spec(), 0..4),
        proptest::collection::vec(proptest::collection::vec(op(), 0..3), 1..30),
        proptest::option::weighted(0.7, 1..30usize),
    )
        .prop_map(
            |(size, radius, budget, bounded, layer_b, layer_c, mods, ticks, save_at)| Scenario {
                size,
                radius,
                budget,
                bounded,
                layer_b,
                layer_c,
                mods,
                ticks,
                save_at,
            },
        )
}

// ---------------------------------------------------------------------------------------------
// The reference.

const NAMES: [&str; 3] = ["hero", "car", "walker"];
const BOUNDS: (f64, f64, f64, f64) = (-90.0, -70.0, 130.0, 100.0);

#[derive(Debug, Clone)]
struct Ent {
    id: String,
    tags: BTreeSet<String>,
    pos: (f64, f64),
    rides: Option<String>,
}

fn original(who: usize, x: f64, z: f64) -> Ent {
    let tags: &[&str] = match who {
        0 => &["player"],
        1 => &["vehicle", "streamable"],
        _ => &["streamable"],
    };
    Ent {
        id: NAMES[who].to_owned(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        pos: (x, z),
        rides: None,
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Held {
    hook: &'static str,
    by: String,
    reason: String,
}

struct Scene {
    id: &'static str,
    entry: Option<(f64, f64)>,
    radius: Option<u32>,
    budget: Option<u32>,
}

struct Reference {
    size: f64,
    bounded: bool,
    radius: u32,
    budget: u32,
    scenes: Vec<Scene>,
    /// Handlers of each hook in mod order: (mod id, reason, rule).
    handlers: Vec<(String, String, Rule)>,
    over_radius: Option<u32>,
    over_budget: Option<u32>,
    entities: Vec<Ent>,
    control: Option<String>,
    crates: usize,
    scene: Option<usize>,
    last_focus: Option<(f64, f64)>,
    last_moved: Option<(f64, f64)>,
    /// The radius of the last tick's wanted square (what `pending()` is relative to).
    view_radius: u32,
    /// Loaded chunks keyed `(z, x)`: row order.
    loaded: BTreeSet<(i64, i64)>,
    refusals: BTreeMap<(i64, i64), Held>,
    events: Vec<String>,
}

impl Reference {
    fn new(s: &Scenario) -> Self {
        let mut r = Reference {
            size: s.size,
            bounded: s.bounded,
            radius: s.radius,
            budget: s.budget,
            scenes: vec![
                Scene {
                    id: "a",
                    entry: Some((0.0, 0.0)),
                    radius: None,
                    budget: None,
                },
                Scene {
                    id: "b",
                    entry: Some((40.0, -40.0)),
                    radius: Some(s.layer_b.0),
                    budget: s.layer_b.1,
                },
                Scene {
                    id: "c",
                    entry: None,
                    radius: Some(s.layer_c),
                    budget: None,
                },
            ],
            handlers: Vec::new(),
            over_radius: None,
            over_budget: None,
            entities: vec![
                original(0, 1.0, 1.0),
                original(1, 30.0, 5.0),
                original(2, -20.0, 9.0),
            ],
            control: None,
            crates: 0,
            scene: None,
            last_focus: None,
            last_moved: None,
            view_radius: 0,
            loaded: BTreeSet::new(),
            refusals: BTreeMap::new(),
            events: Vec::new(),
        };
        for (i, m) in s.mods.iter().enumerate() {
            let id = format!("m{i}");
            let (rules, set): (Vec<Rule>, Set) = match m {
                ModSpec::Json { rule, set } => {
                    (rule.iter().copied().collect(), set.unwrap_or_default())
                }
                ModSpec::Lua { top, rules } => (rules.clone(), *top),
            };
            r.over_radius = set.0.or(r.over_radius);
            r.over_budget = set.1.or(r.over_budget);
            for rule in rules {
                r.handlers.push((id.clone(), format!("r{i}"), rule));
            }
        }
        r.enter(0, 0);
        r
    }

    fn settings(&self) -> (u32, usize) {
        let scene = self.scene.map(|i| &self.scenes[i]);
        let radius = self
            .over_radius
            .or(scene.and_then(|s| s.radius))
            .unwrap_or(self.radius);
        let budget = self
            .over_budget
            .or(scene.and_then(|s| s.budget))
            .unwrap_or(self.budget);
        (radius, (budget as usize).max(1))
    }

    fn chunk_of(&self, p: (f64, f64)) -> (i64, i64) {
        (
            (p.0 / self.size).floor() as i64,
            (p.1 / self.size).floor() as i64,
        )
    }

    fn ring(a: (i64, i64), b: (i64, i64)) -> u64 {
        a.0.abs_diff(b.0).max(a.1.abs_diff(b.1))
    }

    fn inside(&self, c: (i64, i64)) -> bool {
        if !self.bounded {
            return true;
        }
        let (min_x, min_z, max_x, max_z) = BOUNDS;
        let s = self.size;
        (c.0 as f64 * s) < max_x
            && min_x < (c.0 + 1) as f64 * s
            && (c.1 as f64 * s) < max_z
            && min_z < (c.1 + 1) as f64 * s
    }

    fn distance(&self, f: (f64, f64), c: (i64, i64)) -> f64 {
        let dx = (c.0 as f64 + 0.5) * self.size - f.0;
        let dz = (c.1 as f64 + 0.5) * self.size - f.1;
        dx * dx + dz * dz
    }

    /// The wanted square around `f`, minus loaded and refused chunks, sorted nearest-first.
    fn pending_at(&self, f: (f64, f64), radius: u32) -> Vec<(i64, i64)> {
        let centre = self.chunk_of(f);
        let r = i64::from(radius);
        let mut all = Vec::new();
        for x in centre.0 - r..=centre.0 + r {
            for z in centre.1 - r..=centre.1 + r {
                let c = (x, z);
                let key = (z, x);
                if self.inside(c)
                    && !self.loaded.contains(&key)
                    && !self.refusals.contains_key(&key)
                {
                    all.push(c);
                }
            }
        }
        all.sort_by(|a, b| {
            self.distance(f, *a)
                .partial_cmp(&self.distance(f, *b))
                .unwrap()
                .then(a.1.cmp(&b.1))
                .then(a.0.cmp(&b.0))
        });
        all
    }

    fn pending(&self) -> Vec<(i64, i64)> {
        match (self.scene, self.last_focus) {
            (Some(_), Some(f)) => self.pending_at(f, self.view_radius),
            _ => Vec::new(),
        }
    }

    fn get(&self, id: &str) -> Option<&Ent> {
        self.entities.iter().find(|e| e.id == id)
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Ent> {
        self.entities.iter_mut().find(|e| e.id == id)
    }

    fn focus_now(&self) -> Option<(f64, f64)> {
        let player = self
            .control
            .as_deref()
            .and_then(|id| self.get(id))
            .or_else(|| self.entities.iter().find(|e| e.tags.contains("player")));
        if let Some(p) = player {
            let vehicle = p.rides.as_deref().and_then(|v| self.get(v));
            return Some(vehicle.unwrap_or(p).pos);
        }
        self.last_moved.or(self.last_focus)
    }

    fn event(&mut self, tick: u64, name: &str, c: (i64, i64)) {
        self.events.push(format!("{tick} {name} {} {}", c.0, c.1));
    }

    /// Asks `hook` of `c` through the handlers in mod order: the first cancel wins and later
    /// handlers are not asked; a failing handler is a `mod.error` and does not cancel.
    fn ask(&mut self, tick: u64, hook: &'static str, c: (i64, i64)) -> Option<Held> {
        for i in 0..self.handlers.len() {
            let (by, reason, rule) = self.handlers[i].clone();
            if (rule.load != (hook == LOAD))
                || rule.x.is_some_and(|x| x != c.0)
                || rule.z.is_some_and(|z| z != c.1)
            {
                continue;
            }
            match rule.act {
                Act::Cancel => return Some(Held { hook, by, reason }),
                Act::Fail => self.events.push(format!("{tick} mod.error {by} {hook}")),
                Act::SetRadius(r) => self.over_radius = Some(r),
                Act::SetBudget(b) => self.over_budget = Some(b),
            }
        }
        None
    }

    fn tick(&mut self, t: u64) {
        if self.scene.is_none() {
            return;
        }
        let focus = self.focus_now();
        self.last_focus = focus;
        let (radius, budget) = self.settings();
        self.view_radius = radius;
        let Some(f) = focus else {
            // Nothing is wanted: load refusals lapse; nothing is released.
            self.refusals.retain(|_, h| h.hook == UNLOAD);
            return;
        };
        let centre = self.chunk_of(f);
        let (wanted, kept) = (u64::from(radius), u64::from(radius) + 1);
        let refusals = std::mem::take(&mut self.refusals);
        self.refusals = refusals
            .into_iter()
            .filter(|((z, x), h)| {
                let c = (*x, *z);
                if h.hook == LOAD {
                    Self::ring(c, centre) <= wanted && self.inside(c)
                } else {
                    Self::ring(c, centre) > kept
                }
            })
            .collect();
        let due: Vec<(i64, i64)> = self
            .loaded
            .iter()
            .filter(|(z, x)| {
                Self::ring((*x, *z), centre) > kept && !self.refusals.contains_key(&(*z, *x))
            })
            .copied()
            .collect();
        for (z, x) in due {
            match self.ask(t, UNLOAD, (x, z)) {
                Some(h) => {
                    self.refusals.insert((z, x), h);
                }
                None => {
                    self.loaded.remove(&(z, x));
                    self.event(t, "world.chunk.unloaded", (x, z));
                }
            }
        }
        let batch: Vec<(i64, i64)> = self
            .pending_at(f, radius)
            .into_iter()
            .take(budget)
            .collect();
        for (x, z) in batch {
            match self.ask(t, LOAD, (x, z)) {
                Some(h) => {
                    self.refusals.insert((z, x), h);
                }
                None => {
                    self.loaded.insert((z, x));
                    self.event(t, "world.chunk.loaded", (x, z));
                }
            }
        }
    }

    fn leave(&mut self, t: u64) {
        if self.scene.take().is_none() {
            return;
        }
        for (z, x) in std::mem::take(&mut self.loaded) {
            self.event(t, "world.chunk.unloaded", (x, z));
        }
        self.refusals.clear();
        self.last_focus = None;
        self.last_moved = None;
    }

    fn enter(&mut self, t: u64, i: usize) {
        self.leave(t);
        self.scene = Some(i);
        self.last_focus = self.scenes[i].entry;
        self.view_radius = self.settings().0;
    }

    /// The id an op's entity index names: the three named entities, then `crate0`, `crate1`.
    fn name(who: usize) -> String {
        match who {
            0..=2 => NAMES[who].to_owned(),
            k => format!("crate{}", k - 3),
        }
    }

    /// The input line of `op` at tick `t`, and whether applying it must succeed; applies it.
    fn apply(&mut self, t: u64, op: &Op) -> (Value, bool) {
        let exists = |r: &Self, id: &str| r.get(id).is_some();
        let line = match op {
            Op::Move { who, x, z } => {
                let id = Self::name(*who);
                let (x, z) = (f64::from(*x), f64::from(*z));
                let ok = match self.get_mut(&id) {
                    Some(e) => {
                        e.pos = (x, z);
                        true
                    }
                    None => false,
                };
                (
                    json!({"do": "move", "entity": id, "to": {"x": x, "z": z}}),
                    ok,
                )
            }
            Op::Ride { rider, vehicle } => {
                let (r, v) = (Self::name(*rider), Self::name(*vehicle));
                // Refused: a missing rider or vehicle, or a chain from the vehicle back to the
                // rider (links through missing entities end the chain).
                let mut ok = exists(self, &r) && exists(self, &v);
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
                let id = Self::name(*who);
                let ok = match self.get_mut(&id) {
                    Some(e) => {
                        e.rides = None;
                        true
                    }
                    None => false,
                };
                (json!({"do": "dismount", "entity": id}), ok)
            }
            Op::Control(who) => {
                let id = who.map(Self::name);
                let ok = id.as_deref().is_none_or(|id| exists(self, id));
                if ok {
                    self.control = id.clone();
                }
                (json!({"do": "control", "entity": id}), ok)
            }
            Op::Spawn { who, x, z } => {
                let (x, z) = (f64::from(*x), f64::from(*z));
                let e = if *who < 3 {
                    original(*who, x, z)
                } else {
                    self.crates += 1;
                    Ent {
                        id: format!("crate{}", self.crates - 1),
                        tags: ["streamable".to_owned()].into(),
                        pos: (x, z),
                        rides: None,
                    }
                };
                let line = json!({"do": "spawn", "entity": {"id": e.id, "tags": e.tags, "position": {"x": x, "z": z}}});
                let ok = !exists(self, &e.id);
                if ok {
                    self.entities.push(e);
                }
                (line, ok)
            }
            Op::Despawn(who) => {
                let id = Self::name(*who);
                let ok = exists(self, &id);
                self.entities.retain(|e| e.id != id);
                (json!({"do": "despawn", "entity": id}), ok)
            }
            Op::Tag { who, player, on } => {
                let id = Self::name(*who);
                let tag = if *player { "player" } else { "streamable" };
                let ok = match self.get_mut(&id) {
                    Some(e) => {
                        if *on {
                            e.tags.insert(tag.to_owned());
                        } else {
                            e.tags.remove(tag);
                        }
                        true
                    }
                    None => false,
                };
                (
                    json!({"do": if *on { "tag" } else { "untag" }, "entity": id, "tag": tag}),
                    ok,
                )
            }
            Op::Release { x, z } => {
                self.refusals.remove(&(*z, *x));
                (json!({"do": "release", "x": x, "z": z}), true)
            }
            Op::Moved { x, z } => {
                let (x, z) = (f64::from(*x), f64::from(*z));
                self.events.push(format!("{t} player.moved {x} {z}"));
                if self.scene.is_some() {
                    self.last_moved = Some((x, z));
                }
                (json!({"do": "player.moved", "at": {"x": x, "z": z}}), true)
            }
            Op::Leave => {
                self.leave(t);
                (json!({"do": "leave"}), true)
            }
            Op::Enter(i) => {
                self.enter(t, *i);
                (json!({"do": "enter", "scene": self.scenes[*i].id}), true)
            }
        };
        let (mut line, ok) = line;
        line["tick"] = json!(t);
        (line, ok)
    }

    /// Streamable entities whose chunk is not loaded, sorted by id.
    fn dormant(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .entities
            .iter()
            .filter(|e| e.tags.contains("streamable"))
            .filter(|e| {
                let (x, z) = self.chunk_of(e.pos);
                !self.loaded.contains(&(z, x))
            })
            .map(|e| e.id.clone())
            .collect();
        v.sort();
        v
    }
}

// ---------------------------------------------------------------------------------------------
// The kit, driven through its files and inputs.

fn lua_source(top: Set, rules: &[Rule], reason: &str) -> String {
    let mut src = String::new();
    if let Some(r) = top.0 {
        src += &format!("streaming.setRadius({r})\n");
    }
    if let Some(b) = top.1 {
        src += &format!("streaming.setBudgetMs({b})\n");
    }
    for rule in rules {
        let mut cond = vec!["true".to_owned()];
        if let Some(x) = rule.x {
            cond.push(format!("c.x == {x}"));
        }
        if let Some(z) = rule.z {
            cond.push(format!("c.z == {z}"));
        }
        let body = match rule.act {
            Act::Cancel => format!("return cancel(\"{reason}\")"),
            Act::Fail => "error(\"refused to answer\")".to_owned(),
            Act::SetRadius(r) => format!("streaming.setRadius({r})"),
            Act::SetBudget(b) => format!("streaming.setBudgetMs({b})"),
        };
        let hook = if rule.load { LOAD } else { UNLOAD };
        src += &format!(
            "on(\"{hook}\", function(c)\n  if {} then\n    {body}\n  end\nend)\n",
            cond.join(" and ")
        );
    }
    src
}

fn scene_json(s: &Scenario, dir: &std::path::Path) -> Value {
    let mut mods = Vec::new();
    for (i, m) in s.mods.iter().enumerate() {
        let (name, text) = match m {
            ModSpec::Json { rule, set } => {
                let mut v = json!({"id": format!("m{i}")});
                if let Some(rule) = rule {
                    v["hook"] = json!(if rule.load { LOAD } else { UNLOAD });
                    v["cancel"] = json!(true);
                    v["reason"] = json!(format!("r{i}"));
                    if let Some(x) = rule.x {
                        v["match"]["x"] = json!(x);
                    }
                    if let Some(z) = rule.z {
                        v["match"]["z"] = json!(z);
                    }
                }
                if let Some((radius, budget)) = set {
                    v["set"] = json!({});
                    if let Some(r) = radius {
                        v["set"]["radius"] = json!(r);
                    }
                    if let Some(b) = budget {
                        v["set"]["budgetMs"] = json!(b);
                    }
                }
                (format!("m{i}.json"), v.to_string())
            }
            ModSpec::Lua { top, rules } => (
                format!("m{i}.lua"),
                lua_source(*top, rules, &format!("r{i}")),
            ),
        };
        std::fs::write(dir.join(&name), text).unwrap();
        mods.push(name);
    }
    let mut ground = json!({"id": "world.ground"});
    if s.bounded {
        let (min_x, min_z, max_x, max_z) = BOUNDS;
        ground["config"] =
            json!({"bounds": {"minX": min_x, "minZ": min_z, "maxX": max_x, "maxZ": max_z}});
    }
    let mut layer_b = json!({"radius": s.layer_b.0});
    if let Some(b) = s.layer_b.1 {
        layer_b["budgetMs"] = json!(b);
    }
    json!({
        "kits": [ground, {"id": "world.streaming", "config": {"chunkSize": s.size, "radius": s.radius, "budgetMs": s.budget}}],
        "mods": mods,
        "scenes": [
            {"id": "a", "entry": {"x": 0, "z": 0}},
            {"id": "b", "entry": {"x": 40, "z": -40}, "layers": {"world.streaming": layer_b}},
            {"id": "c", "layers": {"world.streaming": {"radius": s.layer_c}}}
        ],
        "entities": [
            {"id": "hero", "tags": ["player"], "position": {"x": 1, "z": 1}},
            {"id": "car", "tags": ["vehicle", "streamable"], "position": {"x": 30, "z": 5}},
            {"id": "walker", "tags": ["streamable"], "position": {"x": -20, "z": 9}}
        ]
    })
}

fn build(scene: &Value, dir: &std::path::Path) -> Game {
    Game::from_scene_text(&scene.to_string(), "scene.json", dir, &builtin_catalog()).unwrap()
}

/// An event as the reference writes it: chunk events by `(x, z)`, `mod.error` by mod and hook
/// (the message is the sandbox's), `player.moved` by its coordinates.
fn event_line(e: &world_streaming::host::Event) -> String {
    let v = serde_json::to_value(e).unwrap();
    let (tick, name, data) = (&v["tick"], v["event"].as_str().unwrap(), &v["data"]);
    match name {
        "world.chunk.loaded" | "world.chunk.unloaded" => format!(
            "{tick} {name} {} {}",
            data["x"].as_i64().unwrap(),
            data["z"].as_i64().unwrap()
        ),
        "mod.error" => format!(
            "{tick} mod.error {} {}",
            data["mod"].as_str().unwrap(),
            data["hook"].as_str().unwrap()
        ),
        "player.moved" => format!(
            "{tick} player.moved {} {}",
            data["x"].as_f64().unwrap(),
            data["z"].as_f64().unwrap()
        ),
        _ => format!("{tick} {name} {data}"),
    }
}

fn check(game: &Game, reference: &mut Reference, seen: &mut usize) -> Result<(), TestCaseError> {
    let events: Vec<String> = game.engine().events()[*seen..]
        .iter()
        .map(event_line)
        .collect();
    *seen = game.engine().events().len();
    prop_assert_eq!(
        &events,
        &reference.events,
        "events (loads nearest-first within budget, releases in row order, mod errors)"
    );
    reference.events.clear();
    let s = game.streaming().unwrap();
    let xz = |v: Vec<world_streaming::grid::ChunkPos>| -> Vec<(i64, i64)> {
        v.into_iter().map(|c| (c.x, c.z)).collect()
    };
    let loaded: Vec<(i64, i64)> = reference.loaded.iter().map(|(z, x)| (*x, *z)).collect();
    prop_assert_eq!(xz(s.loaded()), loaded, "loaded() in row order");
    prop_assert_eq!(
        xz(s.pending()),
        reference.pending(),
        "pending() nearest-first"
    );
    let refusals: Vec<(i64, i64, String, String, String)> = s
        .refusals()
        .into_iter()
        .map(|r| (r.x, r.z, r.hook, r.by, r.reason))
        .collect();
    let expected: Vec<(i64, i64, String, String, String)> = reference
        .refusals
        .iter()
        .map(|((z, x), h)| (*x, *z, h.hook.to_owned(), h.by.clone(), h.reason.clone()))
        .collect();
    prop_assert_eq!(refusals, expected, "refusals()");
    prop_assert_eq!(
        s.focus().map(|f| (f.x, f.z)),
        reference.scene.and(reference.last_focus),
        "focus"
    );
    let (radius, loads) = reference.settings();
    prop_assert_eq!(
        (s.radius(), s.loads_per_tick()),
        (radius, loads),
        "settings"
    );
    let v = game.engine().variables();
    prop_assert_eq!(
        (
            v.count("world.chunks.loaded"),
            v.count("world.chunks.pending")
        ),
        (
            reference.loaded.len() as u64,
            reference.pending().len() as u64
        ),
        "variables"
    );
    prop_assert_eq!(game.state().dormant, reference.dormant(), "dormant");
    Ok(())
}

fn play(s: &Scenario) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene_json(s, dir.path());
    let mut game = build(&scene, dir.path());
    let mut reference = Reference::new(s);
    let mut seen = 0;
    let mut lines = Vec::new();
    for (i, ops) in s.ticks.iter().enumerate() {
        let tick = i as u64 + 1;
        if s.save_at == Some(i) {
            let path = dir.path().join("run.save.json");
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
        prop_assert_eq!(game.engine().tick_count(), tick);
        check(&game, &mut reference, &mut seen)
            .map_err(|e| TestCaseError::fail(format!("tick {tick}: {e}\ninputs: {lines:#?}")))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(), ..ProptestConfig::default() })]

    #[test]
    fn the_kit_agrees_with_the_reference_planner_tick_by_tick(s in scenario()) {
        play(&s)?;
    }
}

/// The reference is not vacuous: on a fixed scene it predicts the seed example of
/// docs/reference/tick.md#the-worked-example and a radius-3, budget-1 order worked out by hand (the
/// kit's linear-scan path).
#[test]
fn the_reference_itself_reproduces_hand_worked_orders() {
    let mut s = Scenario {
        size: 32.0,
        radius: 1,
        budget: 2,
        bounded: false,
        layer_b: (1, None),
        layer_c: 1,
        mods: Vec::new(),
        ticks: Vec::new(),
        save_at: None,
    };
    let mut r = Reference::new(&s);
    r.apply(1, &Op::Move { who: 0, x: 8, z: 8 });
    r.tick(1);
    assert_eq!(
        r.events,
        ["1 world.chunk.loaded 0 0", "1 world.chunk.loaded 0 -1"]
    );
    assert_eq!(r.pending().len(), 7);
    s.radius = 3;
    s.budget = 1;
    let mut r = Reference::new(&s);
    r.apply(1, &Op::Move { who: 0, x: 8, z: 8 });
    for t in 1..=9 {
        r.tick(t);
    }
    let order: Vec<&str> = r.events.iter().map(|e| &e[21..]).collect();
    assert_eq!(
        order,
        ["0 0", "0 -1", "-1 0", "-1 -1", "1 0", "0 1", "1 -1", "-1 1", "0 -2"],
        "(0,-2) and (1,1) are both 3200 m² from (8,8): the lower z wins"
    );
}
