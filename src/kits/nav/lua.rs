//! The `nav` table of a Lua mod (docs/reference/nav.md#queries): one Rust function per Lua
//! function, listed in [`FUNCTIONS`] (the reference in `docs/mods.md` is checked against that
//! list), built with the bridge of [`crate::script`] and registered in the kit's catalog entry as
//! [`TABLE`]. A search is charged to the mod's budget as it runs: [`NODE_UNITS`] per node expanded,
//! so a mod cannot make the host search for longer than its own budget allows.

use std::rc::{Rc, Weak};

use mlua::{Lua, MultiValue, Table};

use crate::script::{
    add_metered_fn, arg, ok, position_arg, Answer as ApiAnswer, LuaTable, Meter, ServiceLookup,
    TableCtx, UNITS_PER_TABLE,
};

use super::{Answer, Cell, NavService, NAV};

/// The table, as the kit's catalog entry registers it.
pub const TABLE: LuaTable = LuaTable {
    name: "nav",
    functions: || FUNCTIONS.iter().map(|(n, _)| *n).collect(),
    install,
};

/// The table for a mod of a game with the nav service; none without it.
fn install(
    lua: &Lua,
    services: &dyn ServiceLookup,
    ctx: &TableCtx<'_>,
) -> mlua::Result<Option<Table>> {
    let Some(service) = crate::script::service::<dyn NavService>(services, NAV) else {
        return Ok(None);
    };
    table(lua, Rc::downgrade(&service), ctx.meter.clone()).map(Some)
}

/// Budget units one node expanded costs (a heap pop and up to eight neighbours looked at:
/// about the time of this many VM instructions).
const NODE_UNITS: u64 = 16;

/// What the functions share: the mod's budget.
struct Ctx {
    meter: Rc<dyn Meter>,
}

/// One `nav` function: `Err(message)` is a usage error, prefixed with its name.
type Fun = fn(&Lua, &dyn NavService, &Ctx, &MultiValue) -> ApiAnswer;

/// Every function of the table, by its Lua name.
const FUNCTIONS: &[(&str, Fun)] = &[("path", path), ("cellOf", cell_of)];

/// The table, each function bound to the live service (or failing once the kit is gone).
fn table(lua: &Lua, service: Weak<dyn NavService>, meter: Rc<dyn Meter>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let ctx = Rc::new(Ctx { meter });
    for &(name, f) in FUNCTIONS {
        let ctx = ctx.clone();
        add_metered_fn(
            lua,
            &t,
            ("nav", name),
            &service,
            ctx.meter.clone(),
            Box::new(move |lua, s, args| f(lua, s, &ctx, &args)),
        )?;
    }
    Ok(t)
}

fn cell_table(lua: &Lua, c: Cell) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 2)?;
    t.raw_set("x", c.x)?;
    t.raw_set("z", c.z)?;
    Ok(t)
}

/// `nav.path(from, to)` → `{status, nodes, path = {{x, z}, …}}` when found, `{status, nodes,
/// x, z}` when indeterminate, `{status, nodes}` for `none` and `budget`.
fn path(lua: &Lua, s: &dyn NavService, ctx: &Ctx, args: &MultiValue) -> ApiAnswer {
    let from = position_arg(&arg(args, 0)).map_err(|m| format!("from: {m}"))?;
    let to = position_arg(&arg(args, 1)).map_err(|m| format!("to: {m}"))?;
    let mut spent = None;
    let outcome = s.path_metered(from, to, &mut || match ctx.meter.charge(NODE_UNITS) {
        Ok(()) => true,
        Err(e) => {
            spent = Some(e);
            false
        }
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(_) => {
            let e = spent.unwrap_or_else(|| mlua::Error::RuntimeError("budget".into()));
            return Ok(Err(e));
        }
    };
    Ok((|| {
        let t = lua.create_table_with_capacity(0, 4)?;
        t.raw_set("status", outcome.answer.status())?;
        t.raw_set("nodes", outcome.nodes)?;
        match &outcome.answer {
            Answer::Found(cells) => {
                ctx.meter.charge(UNITS_PER_TABLE * cells.len() as u64)?;
                let list = lua.create_table_with_capacity(cells.len(), 0)?;
                for (i, c) in cells.iter().enumerate() {
                    list.raw_set(i + 1, cell_table(lua, *c)?)?;
                }
                t.raw_set("path", list)?;
            }
            Answer::Indeterminate(c) => {
                t.raw_set("x", c.x)?;
                t.raw_set("z", c.z)?;
            }
            Answer::None | Answer::Budget => {}
        }
        ok(lua, t)
    })())
}

/// `nav.cellOf({x, z})` → the cell `{x, z}` containing the position.
fn cell_of(lua: &Lua, s: &dyn NavService, _: &Ctx, args: &MultiValue) -> ApiAnswer {
    let p = position_arg(&arg(args, 0))?;
    Ok(cell_table(lua, s.cell_of(p)).and_then(|t| ok(lua, t)))
}
