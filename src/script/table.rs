//! A kit's Lua table: its descriptor ([`LuaTable`]), what it is built with ([`TableCtx`]: the
//! mod, its [`Meter`], its [`RunningMod`]), and how each of its functions answers.

use std::any::Any;
use std::cell::OnceCell;
use std::rc::{Rc, Weak};

use mlua::{Function, IntoLuaMulti, Lua, MultiValue, Table, Value};

use crate::grid::ChunkPos;

/// A kit's table of Lua functions (`streaming`, `terrain`, …), registered in the kit's catalog
/// entry. Every Lua mod of a game whose kit provides the service gets the table under `name`,
/// each function lifted by the prelude (a usage error raised at the mod's line).
#[derive(Clone, Copy)]
pub struct LuaTable {
    /// The table's global name in a mod.
    pub name: &'static str,
    /// The Lua names of its functions: what the Lua reference (`docs/mods.md`) must list.
    pub functions: fn() -> Vec<&'static str>,
    /// Builds the table in a mod's state: `Ok(None)` when the game has no such service (the kit
    /// is not enabled), so the mod has no such table.
    pub install: fn(&Lua, &dyn ServiceLookup, &TableCtx<'_>) -> mlua::Result<Option<Table>>,
}

/// Where a table finds its kit's service: the engine's service registry
/// (`host::Services`), seen as values of any type by name.
pub trait ServiceLookup {
    /// The service registered under `name`, as the registry holds it (an `Rc<dyn Trait>`).
    fn lookup(&self, name: &str) -> Option<&dyn Any>;
}

/// The service `name` with interface `T`, if `services` has it (as `host::Services::get`).
pub fn service<T: ?Sized + 'static>(services: &dyn ServiceLookup, name: &str) -> Option<Rc<T>> {
    services.lookup(name)?.downcast_ref::<Rc<T>>().cloned()
}

/// The mod's budget, as a table sees it: the host's work a function does for the mod is
/// charged to it (about what the same work costs in VM instructions), so a mod cannot make the
/// host work for longer than its own budget allows.
pub trait Meter {
    /// Charges `units` of work done in Rust; an error (the budget's message) once it is spent.
    fn charge(&self, units: u64) -> mlua::Result<()>;
}

/// The running mod, for functions that call it back (`onChunk`, `onBuilt`).
pub trait RunningMod {
    /// Calls `f({x = …, z = …}, rest…)` with `chunk`, `rest` made in the mod's state; a failure
    /// (an error, the budget spent, anything else) is reported as a `mod.error` event with hook
    /// `hook`. Nothing runs while the mod's tick budget is spent.
    fn callback(
        &self,
        hook: &'static str,
        f: &Function,
        chunk: ChunkPos,
        rest: &dyn Fn(&Lua) -> mlua::Result<MultiValue>,
    ) {
        self.callback_section(hook, f, chunk, false, rest);
    }

    /// [`RunningMod::callback`] with the chunk's table `{x, y, z}` when `with_y` (a section of a
    /// vertical world, docs/vertical.md), else `{x, z}` (`y` written only when not 0).
    fn callback_section(
        &self,
        hook: &'static str,
        f: &Function,
        chunk: ChunkPos,
        with_y: bool,
        rest: &dyn Fn(&Lua) -> mlua::Result<MultiValue>,
    );
}

/// Where a table finds the running mod once it exists (weak: no reference cycle through the
/// state's own functions). Empty while the state is being built.
pub type EntrySlot = Rc<OnceCell<Weak<dyn RunningMod>>>;

/// What a table is built with for one mod.
pub struct TableCtx<'a> {
    /// The mod's id (the one its settings are set under).
    pub mod_id: &'a str,
    /// The mod's budget.
    pub meter: &'a Rc<dyn Meter>,
    /// The running mod, for callbacks.
    pub entry: &'a EntrySlot,
}

/// `true, values…`: what a function answers the prelude when it succeeds.
pub fn ok(lua: &Lua, values: impl IntoLuaMulti) -> mlua::Result<MultiValue> {
    let mut mv = values.into_lua_multi(lua)?;
    mv.push_front(Value::Boolean(true));
    Ok(mv)
}

/// `false, message`: the prelude raises `message` at the mod's line.
pub fn fail(lua: &Lua, message: String) -> mlua::Result<MultiValue> {
    (false, message).into_lua_multi(lua)
}

/// What a table's function answers: `Ok` the Lua result (an error there is the VM's, e.g. the
/// budget spent), `Err(message)` a usage error, which [`add_service_fn`] prefixes with the
/// table's and the function's names.
pub type Answer = Result<mlua::Result<MultiValue>, String>;

/// One function of a service table: `Err(message)` is a usage error, prefixed with the table and
/// function names.
pub type ServiceFn<S> = Box<dyn Fn(&Lua, &S, MultiValue) -> Answer>;

/// Adds `table.name` to `t`: `f` with the live service, or an error once the kit is gone. The
/// call itself charges nothing: see [`add_metered_fn`].
pub fn add_service_fn<S: ?Sized + 'static>(
    lua: &Lua,
    t: &Table,
    table: &'static str,
    service: &Weak<S>,
    name: &'static str,
    f: ServiceFn<S>,
) -> mlua::Result<()> {
    add_fn(lua, t, (table, name), service, None, f)
}

/// [`add_service_fn`] whose every call first costs [`crate::script::UNITS_PER_CALL`] of
/// `meter`'s budget (TableCtx::meter; running out there is the VM's error, as for any
/// instruction), so that a loop of cheap calls costs its mod what it costs the tick
/// (docs/lua-vm.md#what-a-service-call-costs). The built-in kits' tables use it.
pub fn add_metered_fn<S: ?Sized + 'static>(
    lua: &Lua,
    t: &Table,
    (table, name): (&'static str, &'static str),
    service: &Weak<S>,
    meter: Rc<dyn Meter>,
    f: ServiceFn<S>,
) -> mlua::Result<()> {
    add_fn(lua, t, (table, name), service, Some(meter), f)
}

fn add_fn<S: ?Sized + 'static>(
    lua: &Lua,
    t: &Table,
    (table, name): (&'static str, &'static str),
    service: &Weak<S>,
    meter: Option<Rc<dyn Meter>>,
    f: ServiceFn<S>,
) -> mlua::Result<()> {
    let service = service.clone();
    t.raw_set(
        name,
        lua.create_function(move |lua, args: MultiValue| {
            if let Some(meter) = &meter {
                meter.charge(crate::script::UNITS_PER_CALL)?;
            }
            let Some(s) = service.upgrade() else {
                return fail(lua, format!("{table}.{name}: the {table} service is gone"));
            };
            match f(lua, &*s, args) {
                Ok(result) => result,
                Err(message) => fail(lua, format!("{table}.{name}: {message}")),
            }
        })?,
    )
}
