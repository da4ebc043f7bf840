//! The arguments and results the API functions share: reading Lua values as chunk
//! coordinates, positions and checked settings, building `{x, z}` tables, and the usage-error
//! wording (`expected …, got a table`).

use std::cell::Cell;
use std::rc::{Rc, Weak};

use mlua::{Function, Lua, Table, Value};
use serde_json::json;

use crate::grid::{ChunkPos, Position};

use super::table::{EntrySlot, Meter, RunningMod};

/// Most live subscriptions (`onChunk`, `onBuilt`) one mod may hold at once, per function.
pub const MAX_SUBSCRIPTIONS: usize = 64;

/// Lua's name for the type of `v` (`error` objects of mlua are userdata to Lua).
pub fn lua_type(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// `a table`, `nil`, `a string` … for "got …".
pub fn got(v: &Value) -> String {
    match v {
        Value::Nil => "nil".to_owned(),
        other => format!("a {}", lua_type(other)),
    }
}

/// Whole numbers as Lua integers (so `32` prints as `32`, not `32.0`), others as floats.
pub fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::Integer(v as i64)
    } else {
        Value::Number(v)
    }
}

/// `{x = …, z = …}` (and `y` when not 0: only a vertical world's sections have one).
pub fn chunk_table(lua: &Lua, c: ChunkPos) -> mlua::Result<Table> {
    section_table(lua, c, false)
}

/// `{x = …, y = …, z = …}` when `with_y` (a section of a vertical world, docs/vertical.md, `y`
/// even when 0), else [`chunk_table`]'s `{x = …, z = …}`.
pub fn section_table(lua: &Lua, c: ChunkPos, with_y: bool) -> mlua::Result<Table> {
    let with_y = with_y || c.y != 0;
    let t = lua.create_table_with_capacity(0, 2 + usize::from(with_y))?;
    t.raw_set("x", c.x)?;
    if with_y {
        t.raw_set("y", c.y)?;
    }
    t.raw_set("z", c.z)?;
    Ok(t)
}

/// Budget units per table the API builds for a mod, on top of the memory it allocates (which the
/// VM charges): gathering an entry on the service's side and building its table through mlua
/// costs about as much time as this many instructions (a list of 16 641 chunks, ~7 ms in a
/// release build, against ~2.5 ns an instruction: docs/lua-vm.md#what-a-service-call-costs).
pub const UNITS_PER_TABLE: u64 = 64;

/// Budget units every service function call costs before it does anything: the call through
/// mlua, the service looked up and borrowed, the arguments read, about 150 ns in a release
/// build (docs/lua-vm.md#what-a-service-call-costs).
pub const UNITS_PER_CALL: u64 = 64;

/// `{ {x = …, z = …}, … }`, charged [`UNITS_PER_TABLE`] a chunk.
pub fn chunk_list(lua: &Lua, meter: &dyn Meter, chunks: Vec<ChunkPos>) -> mlua::Result<Table> {
    section_list(lua, meter, chunks, false)
}

/// [`chunk_list`] of [`section_table`]s: `{x, y, z}` each when `with_y`.
pub fn section_list(
    lua: &Lua,
    meter: &dyn Meter,
    chunks: Vec<ChunkPos>,
    with_y: bool,
) -> mlua::Result<Table> {
    meter.charge(UNITS_PER_TABLE * chunks.len() as u64)?;
    section_list_charged(lua, chunks, with_y)
}

/// [`section_list`] of a list already charged for (before it was gathered).
pub fn section_list_charged(lua: &Lua, chunks: Vec<ChunkPos>, with_y: bool) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(chunks.len(), 0)?;
    for (i, c) in chunks.into_iter().enumerate() {
        t.raw_set(i + 1, section_table(lua, c, with_y)?)?;
    }
    Ok(t)
}

/// A whole number (an integer, or a float without a fraction in range), else `None`.
pub fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(i) => Some(*i),
        Value::Number(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(*f as i64),
        _ => None,
    }
}

/// A number as a float, else `None`.
pub fn float(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(f) => Some(*f),
        _ => None,
    }
}

/// `(x, z)` chunk coordinates.
pub fn chunk_args(x: &Value, z: &Value) -> Result<ChunkPos, String> {
    match (integer(x), integer(z)) {
        (Some(x), Some(z)) => Ok(ChunkPos::new(x, z)),
        _ => {
            let (name, v) = if integer(x).is_none() {
                ("x", x)
            } else {
                ("z", z)
            };
            Err(format!(
                "{name}: expected an integer chunk coordinate, got {}",
                got(v)
            ))
        }
    }
}

/// `(x, z)` chunk coordinates and an optional section row `y` (docs/vertical.md; `nil`: row 0),
/// the last argument of the functions that take a chunk (`isLoaded(x, z, y)`).
pub fn section_args(x: &Value, z: &Value, y: &Value) -> Result<ChunkPos, String> {
    let c = chunk_args(x, z)?;
    match (y, integer(y)) {
        (Value::Nil, _) => Ok(c),
        (_, Some(y)) => Ok(ChunkPos::section(c.x, y, c.z)),
        (v, None) => Err(format!(
            "y: expected an integer section row or nil, got {}",
            got(v)
        )),
    }
}

/// A position table `{x = …, z = …}` (`y` optional), fields read raw.
pub fn position_arg(v: &Value) -> Result<Position, String> {
    let Value::Table(t) = v else {
        return Err(format!(
            "expected a position {{x = …, z = …}}, got {}",
            got(v)
        ));
    };
    let field = |name: &str, optional: bool| -> Result<f64, String> {
        let v: Value = t.raw_get(name).map_err(|e| e.to_string())?;
        match float(&v) {
            Some(f) => Ok(f),
            None if optional && v.is_nil() => Ok(0.0),
            None => Err(format!(
                "{name}: expected a number of metres, got {}",
                got(&v)
            )),
        }
    };
    let p = Position {
        x: field("x", false)?,
        y: field("y", true)?,
        z: field("z", false)?,
    };
    p.check().map_err(|p| p.to_string())?;
    Ok(p)
}

/// A Lua number as JSON for the kit's checked settings; `Err(rendering)` when JSON has none.
pub fn setting(v: &Value) -> Result<serde_json::Value, String> {
    match v {
        Value::Integer(i) => Ok(json!(i)),
        Value::Number(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .ok_or_else(|| {
                // As Lua prints them.
                match (f.is_nan(), f.is_sign_negative()) {
                    (true, _) => "nan".to_owned(),
                    (false, true) => "-inf".to_owned(),
                    (false, false) => "inf".to_owned(),
                }
            }),
        Value::String(s) => Ok(json!(s.to_string_lossy())),
        other => Err(got(other)),
    }
}

/// A mod's setting checked by the kit config's own parser, so a bad value reads exactly as it
/// would in a scene file (`expected an integer 0..=64, got 65`).
pub fn checked<T>(
    v: &Value,
    parse: fn(&serde_json::Value) -> Result<T, String>,
) -> Result<T, String> {
    match setting(v) {
        Ok(json) => parse(&json),
        Err(rendering) => Err(expected_got(
            parse(&serde_json::Value::Null).map(drop),
            &rendering,
        )),
    }
}

/// `expected …, got <rendering>` from a checked parser's own wording.
pub fn expected_got(parse_null: Result<(), String>, rendering: &str) -> String {
    let message = parse_null.err().unwrap_or_default();
    format!(
        "{}{rendering}",
        message.strip_suffix("null").unwrap_or(&message)
    )
}

/// The callback a subscribing function (`onBuilt`, `onChunk`) was given and the running mod,
/// once the mod's subscriptions (`live`) are below [`MAX_SUBSCRIPTIONS`].
pub fn subscriber(
    callback: &Value,
    entry: &EntrySlot,
    live: &Cell<usize>,
) -> Result<(Function, Rc<dyn RunningMod>), String> {
    let Value::Function(f) = callback else {
        return Err(format!("expected a function, got {}", got(callback)));
    };
    let Some(entry) = entry.get().and_then(Weak::upgrade) else {
        return Err("the mod is not running".to_owned());
    };
    if live.get() >= MAX_SUBSCRIPTIONS {
        return Err(format!(
            "too many subscriptions (at most {MAX_SUBSCRIPTIONS} a mod)"
        ));
    }
    Ok((f.clone(), entry))
}

/// Argument `i` of a call (`nil` past the end).
pub fn arg(args: &mlua::MultiValue, i: usize) -> Value {
    args.get(i).cloned().unwrap_or(Value::Nil)
}
