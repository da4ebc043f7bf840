//! A kit of a test's own, `test.counter`, registered through the catalog alone: one
//! `CatalogEntry` and nothing else in the crate. From that entry it gets its config's schema
//! (among the files `schema --out` writes), the check of its save section (by `check` of a save
//! on its own and by every load) and its Lua table (a Lua mod calls it).

use std::cell::Cell;
use std::rc::{Rc, Weak};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use world_streaming::files::{save, schemas};
use world_streaming::game::Game;
use world_streaming::host::{
    CatalogEntry, Install, Kit, KitCatalog, KitManifest, KitSpec, PreparedSection, Problem,
    SaveFacts, SceneDef,
};
use world_streaming::kits::builtin_catalog;
use world_streaming::script::mlua::{Lua, MultiValue, Table};
use world_streaming::script::{
    add_service_fn, arg, got, integer, ok, service, Answer, LuaTable, ServiceLookup, TableCtx,
};

const COUNTER: &str = "test.counter";
/// The largest count a save may hold.
const MAX_COUNT: u64 = 1_000_000;

/// The kit's config: how much it counts a tick.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CounterConfig {
    /// Added to the count every tick.
    #[serde(default = "one")]
    step: u64,
}

fn one() -> u64 {
    1
}

/// The face other kits and the Lua table see.
trait CounterService {
    fn count(&self) -> u64;
    fn bump(&self, by: u64);
}

struct Count(Cell<u64>);

impl CounterService for Count {
    fn count(&self) -> u64 {
        self.0.get()
    }
    fn bump(&self, by: u64) {
        self.0.set(self.0.get() + by);
    }
}

struct CounterKit {
    step: u64,
    count: Rc<Count>,
}

fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
    let config: CounterConfig = match spec.config {
        None => CounterConfig { step: 1 },
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| vec![Problem::new(spec.config_path.clone(), e.to_string())])?,
    };
    Ok(Box::new(CounterKit {
        step: config.step,
        count: Rc::new(Count(Cell::new(0))),
    }))
}

/// The check of the kit's save section on its own: `{"count": 0..=1000000}`.
fn check_section(section: &Value, _: &SaveFacts<'_>) -> Result<u64, Problem> {
    let path = format!("kits.{COUNTER}.count");
    match section.get("count").and_then(Value::as_u64) {
        Some(n) if n <= MAX_COUNT => Ok(n),
        _ => Err(Problem::new(
            path,
            format!(
                "expected an integer 0..={MAX_COUNT}, got {}",
                section.get("count").unwrap_or(&Value::Null)
            ),
        )),
    }
}

impl Kit for CounterKit {
    fn id(&self) -> &str {
        COUNTER
    }

    fn install(&mut self, host: &mut Install<'_>) {
        let service: Rc<dyn CounterService> = self.count.clone();
        host.services.provide(COUNTER, service);
    }

    fn tick(&mut self, _: &mut world_streaming::host::Ctx<'_>) {
        self.count.bump(self.step);
    }

    fn save(&self) -> Option<Value> {
        Some(json!({ "count": self.count.count() }))
    }

    fn prepare_load(
        &self,
        section: Option<&Value>,
        _: Option<&SceneDef>,
        save: &SaveFacts<'_>,
    ) -> Result<Option<PreparedSection>, Problem> {
        match section {
            None => Ok(None),
            Some(s) => Ok(Some(Box::new(check_section(s, save)?))),
        }
    }

    fn commit_load(
        &mut self,
        prepared: Option<PreparedSection>,
        _: &mut world_streaming::host::Ctx<'_>,
    ) {
        if let Some(n) = prepared.and_then(|p| p.downcast::<u64>().ok()) {
            self.count.0.set(*n);
        }
    }
}

/// The `counter` table: `counter.count()` and `counter.bump(n)` (n 1..=100).
const TABLE: LuaTable = LuaTable {
    name: "counter",
    functions: || FUNCTIONS.iter().map(|(n, _)| *n).collect(),
    install: install_table,
};

type Fun = fn(&Lua, &dyn CounterService, &MultiValue) -> Answer;

const FUNCTIONS: &[(&str, Fun)] = &[("count", count), ("bump", bump)];

fn install_table(
    lua: &Lua,
    services: &dyn ServiceLookup,
    _: &TableCtx<'_>,
) -> world_streaming::script::mlua::Result<Option<Table>> {
    let Some(counter) = service::<dyn CounterService>(services, COUNTER) else {
        return Ok(None);
    };
    let weak: Weak<dyn CounterService> = Rc::downgrade(&counter);
    let t = lua.create_table()?;
    for &(name, f) in FUNCTIONS {
        add_service_fn(
            lua,
            &t,
            "counter",
            &weak,
            name,
            Box::new(move |lua, s, args| f(lua, s, &args)),
        )?;
    }
    Ok(Some(t))
}

fn count(lua: &Lua, s: &dyn CounterService, _: &MultiValue) -> Answer {
    Ok(ok(lua, s.count() as i64))
}

fn bump(lua: &Lua, s: &dyn CounterService, args: &MultiValue) -> Answer {
    let by = integer(&arg(args, 0))
        .filter(|n| (1..=100).contains(n))
        .ok_or_else(|| format!("expected a step 1..=100, got {}", got(&arg(args, 0))))?;
    s.bump(by as u64);
    Ok(ok(lua, ()))
}

/// The kit's whole registration: one entry.
fn entry() -> CatalogEntry {
    CatalogEntry::new(KitManifest::simple(COUNTER, "1.0.0"), Box::new(from_spec))
        .config_schema("counter-config.schema.json", || {
            schemars::schema_for!(CounterConfig)
        })
        .save_check(|section, save| check_section(section, save).map(drop))
        .lua(TABLE)
}

fn catalog() -> KitCatalog {
    let mut catalog = builtin_catalog();
    catalog.register(entry());
    catalog
}

fn game(step: u64) -> Game {
    let scene = json!({ "kits": [ { "id": COUNTER, "config": { "step": step } } ] });
    Game::from_scene_text(&scene.to_string(), "scene.json", ".".as_ref(), &catalog())
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_kit_registered_through_the_catalog_gets_its_config_schema_written() {
    let with = schemas::all_with(&catalog());
    let names: Vec<&str> = with.iter().map(|(n, _)| *n).collect();
    let at = names
        .iter()
        .position(|n| *n == "counter-config.schema.json")
        .expect("the kit's schema is among the files");
    // After every built-in kit's, before the files that are no kit's.
    assert!(
        at > names
            .iter()
            .position(|n| *n == "nav-save.schema.json")
            .unwrap()
    );
    assert_eq!(names[at + 1], "mod.schema.json");
    let schema: Value = serde_json::from_str(&with[at].1).unwrap();
    assert_eq!(schema["title"], "CounterConfig");
    assert_eq!(schema["properties"]["step"]["type"], "integer");
    assert_eq!(schema["additionalProperties"], false);
    // The built-in catalog's files are those of before, without it.
    let builtin: Vec<&str> = schemas::all().iter().map(|(n, _)| *n).collect();
    let mut expected = names.clone();
    expected.remove(at);
    assert_eq!(builtin, expected);
}

#[test]
fn a_kit_registered_through_the_catalog_gets_its_save_section_checked_by_check_and_load() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = game(3);
    g.run(&Default::default(), 4).unwrap();
    let path = dir.path().join("good.json");
    g.save(&path).unwrap();
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(good["kits"][COUNTER], json!({ "count": 12 }));
    save::check_with(&good, &catalog()).unwrap();
    // The built-in catalog keeps no such section.
    let alone = save::check(&good).unwrap_err();
    assert_eq!(alone.path, format!("kits.{COUNTER}"));

    let mut bad = good.clone();
    bad["kits"][COUNTER]["count"] = json!(MAX_COUNT + 1);
    let problem = save::check_with(&bad, &catalog()).unwrap_err();
    assert_eq!(problem.path, format!("kits.{COUNTER}.count"));
    assert_eq!(
        problem.message,
        format!("expected an integer 0..={MAX_COUNT}, got {}", MAX_COUNT + 1)
    );
    let bad_path = dir.path().join("bad.json");
    std::fs::write(&bad_path, bad.to_string()).unwrap();
    let mut g = game(3);
    g.run(&Default::default(), 1).unwrap();
    let refused = g.load(&bad_path).unwrap_err().to_string();
    assert!(refused.contains(&problem.to_string()), "{refused}");
    assert_eq!(g.engine().tick_count(), 1, "the game is unchanged");
    g.load(&path).unwrap();
    assert_eq!(g.engine().tick_count(), 4);
}

#[test]
fn a_kit_registered_through_the_catalog_gets_its_lua_table() {
    let mut g = game(1);
    g.add_mod(
        "m.lua",
        r#"counter.bump(5)
log(counter.count())
local ok, message = pcall(function() counter.bump(0) end)
log(message)
log(type(counter.nope))"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<String> = g
        .mod_log()
        .borrow()
        .iter()
        .map(|l| l.message.clone())
        .collect();
    assert_eq!(
        lines,
        [
            "5",
            "m.lua:3: counter.bump: expected a step 1..=100, got a number",
            "nil"
        ]
    );
    // A game without the kit: no table.
    let scene = json!({ "kits": [ { "id": "world.ground" } ] });
    let mut plain =
        Game::from_scene_text(&scene.to_string(), "scene.json", ".".as_ref(), &catalog()).unwrap();
    plain.add_mod("m.lua", "log(type(counter))").unwrap();
    assert_eq!(plain.mod_log().borrow()[0].message, "nil");
}
