//! The `streaming` table of a Lua mod (docs/reference/tick.md#the-streaming-service,
//! docs/reference/streaming.md#the-foci-in-force): one Rust function per Lua function, listed in
//! [`FUNCTIONS`] (the reference in `docs/mods.md` is checked against that list), built with the
//! bridge of [`crate::script`] and registered in the kit's catalog entry as [`TABLE`].

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use mlua::{IntoLuaMulti, Lua, MetaMethod, MultiValue, Table, UserData, UserDataMethods, Value};
use serde_json::json;

use crate::host::{EntityId, ModId};
use crate::script::{
    add_metered_fn, arg, checked, chunk_list, got, integer, number, ok, position_arg, section_args,
    section_list, section_list_charged, section_table, setting, subscriber, Answer, EntrySlot,
    LuaTable, Meter, ServiceLookup, TableCtx, UNITS_PER_TABLE,
};

use super::config::{LuaArg, LUA_SETTERS, MAX_RADIUS};
use super::{
    ChunkSubscription, Listed, Lod, Overrides, Priority, Refusal, StreamingService, TicketError,
    STREAMING,
};

/// The table, as the kit's catalog entry registers it.
pub const TABLE: LuaTable = LuaTable {
    name: "streaming",
    functions: || FUNCTIONS.iter().map(|(n, _)| *n).collect(),
    install,
};

/// The table for a mod of a game with the streaming service; none without it.
fn install(
    lua: &Lua,
    services: &dyn ServiceLookup,
    ctx: &TableCtx<'_>,
) -> mlua::Result<Option<Table>> {
    let Some(service) = crate::script::service::<dyn StreamingService>(services, STREAMING) else {
        return Ok(None);
    };
    table(
        lua,
        Rc::downgrade(&service),
        ModId::new(ctx.mod_id),
        ctx.entry.clone(),
        ctx.meter.clone(),
    )
    .map(Some)
}

/// What the functions share: the mod, its budget, its running sandbox (for callbacks), its
/// count of live `onChunk` subscriptions and the service (for `restoring()` in callbacks).
struct Ctx {
    id: ModId,
    meter: Rc<dyn Meter>,
    entry: EntrySlot,
    live: Rc<Cell<usize>>,
    service: Weak<dyn StreamingService>,
}

/// One `streaming` function: `Err(message)` is a usage error, prefixed with its name.
type Fun = fn(&Lua, &dyn StreamingService, &Ctx, &MultiValue) -> Answer;

/// Every function of the table, by its Lua name.
const FUNCTIONS: &[(&str, Fun)] = &[
    ("isLoaded", is_loaded),
    ("isComplete", is_complete),
    ("complete", complete),
    ("onComplete", on_complete),
    ("chunkSize", chunk_size),
    ("loaded", loaded),
    ("pending", pending),
    ("chunkOf", chunk_of),
    ("around", around),
    ("refusals", refusals),
    ("release", release),
    ("focus", focus),
    ("radius", radius),
    ("columns", columns),
    ("isColumnLoaded", is_column_loaded),
    // The setters, as their settings declare them (`config.rs`); `setLod` reads a list of
    // tables with a function of its own.
    (LUA_SETTERS[0].name, setter::<0>),
    (LUA_SETTERS[1].name, setter::<1>),
    (LUA_SETTERS[2].name, setter::<2>),
    (LUA_SETTERS[3].name, setter::<3>),
    (LUA_SETTERS[4].name, setter::<4>),
    (LUA_SETTERS[5].name, setter::<5>),
    (LUA_SETTERS[6].name, setter::<6>),
    (LUA_SETTERS[7].name, setter::<7>),
    (LUA_SETTERS[8].name, set_lod),
    (LUA_SETTERS[9].name, setter::<9>),
    (LUA_SETTERS[10].name, setter::<10>),
    (LUA_SETTERS[11].name, setter::<11>),
    (LUA_SETTERS[12].name, set_vertical_radius),
    ("lodLoaded", lod_loaded),
    ("predicted", predicted),
    ("holes", holes),
    ("request", request),
    ("drop", drop_ticket),
    ("tickets", tickets),
    ("foci", foci),
    ("ready", ready),
    ("ticketReady", ticket_ready),
    ("progress", progress),
    ("onChunk", on_chunk),
];

/// The table, each function bound to the live service (or failing once the kit is gone).
fn table(
    lua: &Lua,
    service: Weak<dyn StreamingService>,
    id: ModId,
    entry: EntrySlot,
    meter: Rc<dyn Meter>,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let ctx = Rc::new(Ctx {
        id,
        meter,
        entry,
        live: Rc::new(Cell::new(0)),
        service: service.clone(),
    });
    for &(name, f) in FUNCTIONS {
        let ctx = ctx.clone();
        add_metered_fn(
            lua,
            &t,
            ("streaming", name),
            &service,
            ctx.meter.clone(),
            Box::new(move |lua, s, args| f(lua, s, &ctx, &args)),
        )?;
    }
    Ok(t)
}

/// Whether the world is vertical (docs/vertical.md): chunks are sections and the tables the
/// functions build carry `y` (even 0).
fn vertical(s: &dyn StreamingService) -> bool {
    s.vertical().is_some()
}

/// The chunk a function takes: `x, z` and an optional last `y` (a section's row; `nil`: 0).
fn chunk_arg(args: &MultiValue) -> Result<crate::grid::ChunkPos, String> {
    section_args(&arg(args, 0), &arg(args, 1), &arg(args, 2))
}

/// `streaming.isLoaded(x, z, y?)`.
fn is_loaded(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let c = chunk_arg(args)?;
    Ok(ok(lua, s.is_loaded(c)))
}

/// `streaming.isComplete(x, z, y?)` (docs/reference/streaming.md#complete-chunks).
fn is_complete(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let c = chunk_arg(args)?;
    Ok(ok(lua, s.is_complete(c)))
}

/// `streaming.complete()`: the complete chunks in row order (docs/reference/streaming.md#complete-chunks).
fn complete(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, _: &MultiValue) -> Answer {
    Ok(section_list(lua, &*ctx.meter, s.complete(), vertical(s)).and_then(|t| ok(lua, t)))
}

/// `streaming.onComplete(fn)`: calls `fn(chunk, complete)` right after each
/// `world.chunk.complete` / `world.chunk.incomplete` event (docs/reference/streaming.md#complete-chunks),
/// for as long as the mod runs (like `terrain.onBuilt`: no handle; it counts as one of the mod's
/// subscriptions). A failure is a `mod.error` with hook `onComplete`.
fn on_complete(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, args: &MultiValue) -> Answer {
    let (f, entry) = subscriber(&arg(args, 0), &ctx.entry, &ctx.live)?;
    let service = ctx.service.clone();
    ctx.live.set(ctx.live.get() + 1);
    s.on_complete(Box::new(move |chunk, complete| {
        let with_y = service.upgrade().is_some_and(|s| vertical(&*s));
        entry.callback_section("onComplete", &f, chunk, with_y, &|lua| {
            complete.into_lua_multi(lua)
        })
    }));
    Ok(ok(lua, ()))
}

fn chunk_size(lua: &Lua, s: &dyn StreamingService, _: &Ctx, _: &MultiValue) -> Answer {
    Ok(ok(lua, number(s.chunk_size())))
}

/// A list charged [`UNITS_PER_TABLE`] an entry of `list`'s length before it is gathered (a
/// list the budget cannot pay for costs nothing to refuse), then built: sections with their row
/// in a vertical world, LOD blocks `{x, z}` always.
fn listed(
    lua: &Lua,
    s: &dyn StreamingService,
    ctx: &Ctx,
    list: Listed,
    gather: impl FnOnce() -> Vec<crate::grid::ChunkPos>,
) -> Answer {
    let build = || -> mlua::Result<Table> {
        let paid = s.listed_len(list);
        ctx.meter.charge(UNITS_PER_TABLE * paid as u64)?;
        let chunks = gather();
        // A service whose length fell short (another implementation's) pays the rest now.
        let rest = chunks.len().saturating_sub(paid);
        ctx.meter.charge(UNITS_PER_TABLE * rest as u64)?;
        let with_y = !matches!(list, Listed::Lod(_)) && vertical(s);
        section_list_charged(lua, chunks, with_y)
    };
    Ok(build().and_then(|t| ok(lua, t)))
}

fn loaded(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, _: &MultiValue) -> Answer {
    listed(lua, s, ctx, Listed::Loaded, || s.loaded())
}

fn pending(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, _: &MultiValue) -> Answer {
    listed(lua, s, ctx, Listed::Pending, || s.pending())
}

fn chunk_of(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let p = position_arg(&arg(args, 0))?;
    Ok(section_table(lua, s.chunk_of(p), vertical(s)).and_then(|t| ok(lua, t)))
}

fn around(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, args: &MultiValue) -> Answer {
    let p = position_arg(&arg(args, 0))?;
    listed(lua, s, ctx, Listed::Around, || s.around(p))
}

fn refusals(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, _: &MultiValue) -> Answer {
    let build = || -> mlua::Result<Table> {
        let list = s.refusals();
        ctx.meter.charge(UNITS_PER_TABLE * list.len() as u64)?;
        let t = lua.create_table_with_capacity(list.len(), 0)?;
        for (i, r) in list.into_iter().enumerate() {
            t.raw_set(i + 1, refusal_table(lua, r)?)?;
        }
        Ok(t)
    };
    Ok(build().and_then(|t| ok(lua, t)))
}

/// `streaming.columns()`: the loaded columns `{x, z}` in row order (a flat world's loaded
/// chunks; docs/reference/hooks.md#lua-and-sections).
fn columns(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, _: &MultiValue) -> Answer {
    Ok(chunk_list(lua, &*ctx.meter, s.columns()).and_then(|t| ok(lua, t)))
}

/// `streaming.isColumnLoaded(x, z)`: whether a section of column `(x, z)` is loaded.
fn is_column_loaded(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let c = crate::script::chunk_args(&arg(args, 0), &arg(args, 1))?;
    Ok(ok(lua, s.is_column_loaded(c)))
}

/// `streaming.release(x, z, y?)`.
fn release(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let c = chunk_arg(args)?;
    Ok(ok(lua, s.release(c)))
}

fn focus(lua: &Lua, s: &dyn StreamingService, _: &Ctx, _: &MultiValue) -> Answer {
    Ok(match s.focus() {
        None => ok(lua, Value::Nil),
        Some(p) => (|| {
            let t = lua.create_table_with_capacity(0, 3)?;
            t.raw_set("x", number(p.x))?;
            if vertical(s) {
                t.raw_set("y", number(p.y))?;
            }
            t.raw_set("z", number(p.z))?;
            ok(lua, t)
        })(),
    })
}

fn radius(lua: &Lua, s: &dyn StreamingService, _: &Ctx, _: &MultiValue) -> Answer {
    Ok(ok(lua, i64::from(s.radius())))
}

fn request(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let id = ticket_id(&arg(args, 0))?;
    let at = position_arg(&arg(args, 1))?;
    let radius = integer(&arg(args, 2)).ok_or_else(|| {
        format!(
            "expected a radius 0..={MAX_RADIUS}, got {}",
            got(&arg(args, 2))
        )
    })?;
    let ticks = integer(&arg(args, 3))
        .ok_or_else(|| format!("expected ticks 1..=2147483647, got {}", got(&arg(args, 3))))?;
    let priority = match arg(args, 4) {
        Value::Nil => None,
        v => Some(checked(&v, Priority::parse)?.get() as u8),
    };
    // Refused by the ticket cap: the answer `nil, message` (and `world.ticket.refused`), not
    // an error; any other problem is a usage error.
    Ok(match s.request(&id, at, radius, ticks, None, priority) {
        Ok(()) => ok(lua, true),
        Err(e @ TicketError::OverCap { .. }) => ok(lua, (Value::Nil, e.to_string())),
        Err(e) => return Err(e.to_string()),
    })
}

/// `streaming.setLod({{step = 2, radius = 24}, …})` (docs/reference/lod.md#lod-levels): replaces
/// the levels whole (`{}`: none), checked as a scene's `lod` is, against the radius in force.
fn set_lod(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, args: &MultiValue) -> Answer {
    let v = arg(args, 0);
    let Value::Table(t) = &v else {
        return Err(format!(
            "expected a list of levels {{step = …, radius = …}}, got {}",
            got(&v)
        ));
    };
    let mut list = Vec::new();
    for (i, level) in t.clone().sequence_values::<Value>().enumerate() {
        let level = level.map_err(|e| e.to_string())?;
        let Value::Table(l) = &level else {
            return Err(format!(
                "[{i}]: expected a level {{step = …, radius = …}}, got {}",
                got(&level)
            ));
        };
        let mut object = serde_json::Map::new();
        for pair in l.clone().pairs::<Value, Value>() {
            let (k, v) = pair.map_err(|e| e.to_string())?;
            let key = match &k {
                Value::String(k) => k.to_string_lossy().to_string(),
                other => return Err(format!("[{i}]: unknown key {}", got(other))),
            };
            let value = setting(&v).map_err(|r| format!("[{i}].{key}: got {r}"))?;
            object.insert(key, value);
        }
        list.push(serde_json::Value::Object(object));
        if list.len() > 64 {
            break; // far past the limit: the check below says so
        }
    }
    let lod = Lod::parse(&serde_json::Value::Array(list))?;
    lod.check_against(s.radius())
        .map_err(|(path, message)| format!("{path}: {message}"))?;
    let overrides = Overrides {
        lod: Some(lod),
        ..Overrides::default()
    };
    set_override(lua, s, ctx, overrides)
}

/// `streaming.lodLoaded(level)`: the loaded blocks of a level (1 = the first), row order.
fn lod_loaded(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, args: &MultiValue) -> Answer {
    let level = integer(&arg(args, 0))
        .filter(|l| (1..=4).contains(l))
        .ok_or_else(|| format!("expected a level 1..=4, got {}", got(&arg(args, 0))))?;
    let level = level as u32;
    listed(lua, s, ctx, Listed::Lod(level), || s.lod_loaded(level))
}

fn predicted(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, _: &MultiValue) -> Answer {
    let list = s.predicted().unwrap_or_default();
    Ok(position_list(lua, &*ctx.meter, list).and_then(|t| ok(lua, t)))
}

fn holes(lua: &Lua, s: &dyn StreamingService, _: &Ctx, _: &MultiValue) -> Answer {
    let (holes, hole_ticks) = s.holes();
    Ok(ok(lua, (holes, hole_ticks)))
}

fn drop_ticket(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let id = ticket_id(&arg(args, 0))?;
    Ok(ok(lua, s.drop_ticket(&id)))
}

fn tickets(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, _: &MultiValue) -> Answer {
    let build = || -> mlua::Result<Table> {
        let list = s.tickets();
        ctx.meter.charge(UNITS_PER_TABLE * list.len() as u64)?;
        let t = lua.create_table_with_capacity(list.len(), 0)?;
        for (i, k) in list.into_iter().enumerate() {
            let e = lua.create_table_with_capacity(0, 5)?;
            e.raw_set("id", k.id)?;
            e.raw_set("x", number(k.x))?;
            e.raw_set("z", number(k.z))?;
            e.raw_set("radius", k.radius)?;
            e.raw_set("ticksLeft", k.ticks_left)?;
            if let Some(p) = k.priority {
                e.raw_set("priority", p)?;
            }
            t.raw_set(i + 1, e)?;
        }
        Ok(t)
    };
    Ok(build().and_then(|t| ok(lua, t)))
}

fn foci(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, _: &MultiValue) -> Answer {
    Ok(position_list(lua, &*ctx.meter, s.foci()).and_then(|t| ok(lua, t)))
}

fn ready(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let Value::String(id) = arg(args, 0) else {
        return Err(format!(
            "expected an entity id (a string), got {}",
            got(&arg(args, 0))
        ));
    };
    Ok(ok(lua, s.ready(&EntityId::new(&id.to_string_lossy()))))
}

fn ticket_ready(lua: &Lua, s: &dyn StreamingService, _: &Ctx, args: &MultiValue) -> Answer {
    let id = ticket_id(&arg(args, 0))?;
    Ok(ok(lua, s.ticket_ready(&id)))
}

fn progress(lua: &Lua, s: &dyn StreamingService, _: &Ctx, _: &MultiValue) -> Answer {
    Ok(ok(lua, s.progress()))
}

fn on_chunk(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, args: &MultiValue) -> Answer {
    let (f, entry) = subscriber(&arg(args, 0), &ctx.entry, &ctx.live)?;
    let service = ctx.service.clone();
    let subscription = s.on_chunk(Box::new(move |chunk, loaded| {
        let service = service.upgrade();
        let restored = service.as_ref().is_some_and(|s| s.restoring());
        let with_y = service.as_ref().is_some_and(|s| vertical(&**s));
        entry.callback_section("onChunk", &f, chunk, with_y, &|lua| {
            (loaded, restored).into_lua_multi(lua)
        })
    }));
    ctx.live.set(ctx.live.get() + 1);
    let handle = Subscription {
        subscription: RefCell::new(Some(subscription)),
        live: ctx.live.clone(),
    };
    Ok(lua.create_userdata(handle).and_then(|ud| ok(lua, ud)))
}

/// A setting's Lua setter (`streaming.setRadius(3)`), as [`LUA_SETTERS`]`[I]` declares it:
/// its argument read as the setting says and checked by the setting's own parser.
fn setter<const I: usize>(
    lua: &Lua,
    s: &dyn StreamingService,
    ctx: &Ctx,
    args: &MultiValue,
) -> Answer {
    let setter = &LUA_SETTERS[I];
    let overrides = match (setter.arg, arg(args, 0)) {
        (LuaArg::Word, v) => word(&v, setter.parse)?,
        (LuaArg::NilOrChecked, Value::Nil) => (setter.parse)(&serde_json::Value::Null)?,
        (LuaArg::Checked | LuaArg::NilOrChecked | LuaArg::ByHand, v) => checked(&v, setter.parse)?,
    };
    set_override(lua, s, ctx, overrides)
}

/// `streaming.setVerticalRadius(n)`: the radius of `vertical` alone (a mod never sets the
/// height; in a flat scene the radius is kept and does nothing, docs/reference/config.md#vertical).
fn set_vertical_radius(
    lua: &Lua,
    s: &dyn StreamingService,
    ctx: &Ctx,
    args: &MultiValue,
) -> Answer {
    let radius = checked(&arg(args, 0), super::VerticalRadius::parse)?;
    let overrides = Overrides {
        vertical: Some(super::VerticalDef::radius_only(radius)),
        ..Overrides::default()
    };
    set_override(lua, s, ctx, overrides)
}

/// Sets one of the mod's overrides (from the next tick, saved with the game).
fn set_override(lua: &Lua, s: &dyn StreamingService, ctx: &Ctx, overrides: Overrides) -> Answer {
    s.set(&ctx.id, overrides);
    Ok(ok(lua, ()))
}

/// A setting that is a word (`"players"`, `"fair"`), checked by the config's own parser, so a
/// bad value reads as it would in a scene file.
fn word<T>(v: &Value, parse: fn(&serde_json::Value) -> Result<T, String>) -> Result<T, String> {
    match v {
        Value::String(m) => parse(&json!(m.to_string_lossy())),
        other => parse(&serde_json::Value::Null)
            .map_err(|e| format!("{}{}", e.trim_end_matches("null"), got(other))),
    }
}

/// `{ {x = …, z = …}, … }`, charged like every list the API builds.
fn position_list(
    lua: &Lua,
    meter: &dyn Meter,
    list: Vec<crate::grid::Position>,
) -> mlua::Result<Table> {
    meter.charge(UNITS_PER_TABLE * list.len() as u64)?;
    let t = lua.create_table_with_capacity(list.len(), 0)?;
    for (i, p) in list.into_iter().enumerate() {
        let e = lua.create_table_with_capacity(0, 2)?;
        e.raw_set("x", number(p.x))?;
        e.raw_set("z", number(p.z))?;
        t.raw_set(i + 1, e)?;
    }
    Ok(t)
}

/// `{x, z, hook, mod, reason}` of a held refusal.
fn refusal_table(lua: &Lua, r: Refusal) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 5)?;
    t.raw_set("x", r.x)?;
    t.raw_set("z", r.z)?;
    t.raw_set("hook", r.hook)?;
    t.raw_set("mod", r.by)?;
    t.raw_set("reason", r.reason)?;
    Ok(t)
}

/// A ticket id argument.
fn ticket_id(v: &Value) -> Result<String, String> {
    match v {
        Value::String(id) => Ok(id.to_string_lossy()),
        other => Err(format!(
            "expected a ticket id (a string), got {}",
            got(other)
        )),
    }
}

/// What `streaming.onChunk(fn)` returns: `handle:unsubscribe()` stops the callbacks.
struct Subscription {
    subscription: RefCell<Option<ChunkSubscription>>,
    /// The mod's count of live subscriptions.
    live: Rc<Cell<usize>>,
}

impl UserData for Subscription {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::ToString, |_, _, ()| Ok("subscription"));
        methods.add_method("unsubscribe", |_, this, ()| {
            if let Some(s) = this.subscription.borrow_mut().take() {
                s.unsubscribe();
                this.live.set(this.live.get().saturating_sub(1));
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_a_mod_may_set_has_its_setter_once() {
        let keys: Vec<&str> = LUA_SETTERS.iter().map(|s| s.key).collect();
        assert_eq!(keys, Overrides::KEYS);
        for setter in LUA_SETTERS {
            let listed = FUNCTIONS.iter().filter(|(n, _)| *n == setter.name).count();
            assert_eq!(listed, 1, "{} in the table", setter.name);
        }
        let mut names: Vec<&str> = FUNCTIONS.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FUNCTIONS.len(), "no name twice");
    }
}
