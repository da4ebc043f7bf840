//! The `terrain` table of a Lua mod (docs/reference/terrain.md#the-terrain-service,
//! docs/reference/terrain.md#edits): one Rust function per Lua function, listed in [`FUNCTIONS`]
//! (the reference in `docs/mods.md` is checked against that list), built with the bridge of
//! [`crate::script`] and registered in the kit's catalog entry as [`TABLE`].

use std::cell::Cell;
use std::rc::{Rc, Weak};

use mlua::{IntoLuaMulti, Lua, MultiValue, Table, Value};

use crate::script::{
    add_metered_fn, arg, chunk_args, got, integer, ok, position_arg, subscriber, Answer, EntrySlot,
    LuaTable, Meter, ServiceLookup, TableCtx,
};

use super::{hash_text, TerrainService, TERRAIN};

/// The table, as the kit's catalog entry registers it.
pub const TABLE: LuaTable = LuaTable {
    name: "terrain",
    functions: || FUNCTIONS.iter().map(|(n, _)| *n).collect(),
    install,
};

/// The table for a mod of a game with the terrain service; none without it.
fn install(
    lua: &Lua,
    services: &dyn ServiceLookup,
    ctx: &TableCtx<'_>,
) -> mlua::Result<Option<Table>> {
    let Some(service) = crate::script::service::<dyn TerrainService>(services, TERRAIN) else {
        return Ok(None);
    };
    table(
        lua,
        Rc::downgrade(&service),
        ctx.entry.clone(),
        ctx.meter.clone(),
    )
    .map(Some)
}

/// Budget units an edit costs beyond rehashing its chunk (the generator's cell, the diff).
const EDIT_UNITS: u64 = 64;

/// What the functions share: the mod's budget, its running sandbox (for callbacks) and its
/// count of `onBuilt` subscriptions.
struct Ctx {
    meter: Rc<dyn Meter>,
    entry: EntrySlot,
    live: Cell<usize>,
}

/// One `terrain` function: `Err(message)` is a usage error, prefixed with its name.
type Fun = fn(&Lua, &dyn TerrainService, &Ctx, &MultiValue) -> Answer;

/// Every function of the table, by its Lua name.
const FUNCTIONS: &[(&str, Fun)] = &[
    ("heightAt", height_at),
    ("isBuilt", is_built),
    ("cellsPerChunk", cells_per_chunk),
    ("chunk", chunk),
    ("edit", edit),
    ("isModified", is_modified),
    ("onBuilt", on_built),
];

/// The table, each function bound to the live service (or failing once the kit is gone).
fn table(
    lua: &Lua,
    service: Weak<dyn TerrainService>,
    entry: EntrySlot,
    meter: Rc<dyn Meter>,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let ctx = Rc::new(Ctx {
        meter,
        entry,
        live: Cell::new(0),
    });
    for &(name, f) in FUNCTIONS {
        let ctx = ctx.clone();
        add_metered_fn(
            lua,
            &t,
            ("terrain", name),
            &service,
            ctx.meter.clone(),
            Box::new(move |lua, s, args| f(lua, s, &ctx, &args)),
        )?;
    }
    Ok(t)
}

fn height_at(lua: &Lua, s: &dyn TerrainService, _: &Ctx, args: &MultiValue) -> Answer {
    let p = position_arg(&arg(args, 0))?;
    Ok(ok(lua, s.height_at(p).map(i64::from)))
}

fn is_built(lua: &Lua, s: &dyn TerrainService, _: &Ctx, args: &MultiValue) -> Answer {
    let c = chunk_args(&arg(args, 0), &arg(args, 1))?;
    Ok(ok(lua, s.is_built(c)))
}

fn cells_per_chunk(lua: &Lua, s: &dyn TerrainService, _: &Ctx, _: &MultiValue) -> Answer {
    Ok(ok(lua, i64::from(s.cells_per_chunk())))
}

fn chunk(lua: &Lua, s: &dyn TerrainService, _: &Ctx, args: &MultiValue) -> Answer {
    let c = chunk_args(&arg(args, 0), &arg(args, 1))?;
    Ok(match s.chunk(c) {
        None => ok(lua, Value::Nil),
        Some(data) => (|| {
            let t = lua.create_table_with_capacity(0, 4)?;
            t.raw_set("x", c.x)?;
            t.raw_set("z", c.z)?;
            t.raw_set("cells", i64::from(data.cells))?;
            t.raw_set("hash", hash_text(data.hash()))?;
            ok(lua, t)
        })(),
    })
}

fn edit(lua: &Lua, s: &dyn TerrainService, ctx: &Ctx, args: &MultiValue) -> Answer {
    // The host's work is charged like the mod's: an edit rehashes the chunk's 3·cells² bytes
    // (about one unit per 4 bytes) and evaluates the generator once.
    let cells = u64::from(s.cells_per_chunk());
    if let Err(e) = ctx.meter.charge(EDIT_UNITS + cells * cells * 3 / 4) {
        return Ok(Err(e));
    }
    let at = position_arg(&arg(args, 0))?;
    let height = integer(&arg(args, 1))
        .and_then(|h| u16::try_from(h).ok())
        .ok_or_else(|| format!("expected a height 0..=65535, got {}", got(&arg(args, 1))))?;
    let material = match arg(args, 2) {
        Value::Nil => None,
        v => Some(
            integer(&v)
                .and_then(|m| u8::try_from(m).ok())
                .ok_or_else(|| format!("expected a material 0..=255 or nil, got {}", got(&v)))?,
        ),
    };
    Ok(match s.edit(at, height, material) {
        Ok(()) => ok(lua, true),
        Err(reason) => ok(lua, (false, reason.to_string())),
    })
}

fn is_modified(lua: &Lua, s: &dyn TerrainService, _: &Ctx, args: &MultiValue) -> Answer {
    let c = chunk_args(&arg(args, 0), &arg(args, 1))?;
    Ok(ok(lua, s.is_modified(c)))
}

fn on_built(lua: &Lua, s: &dyn TerrainService, ctx: &Ctx, args: &MultiValue) -> Answer {
    let (f, entry) = subscriber(&arg(args, 0), &ctx.entry, &ctx.live)?;
    ctx.live.set(ctx.live.get() + 1);
    s.on_built(Box::new(move |chunk, hash| {
        entry.callback("onBuilt", &f, chunk, &|lua| {
            hash_text(hash).into_lua_multi(lua)
        })
    }));
    Ok(ok(lua, ()))
}
