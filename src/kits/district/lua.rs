//! The `district` table of a Lua mod (docs/reference/district.md#district-data): one Rust function
//! per Lua function, listed in [`FUNCTIONS`] (the reference in `docs/mods.md` is checked against
//! that list), built with the bridge of [`crate::script`] and registered in the kit's catalog entry
//! as [`TABLE`]. Data crosses as plain tables: a JSON object is a table with string keys, an array
//! a sequence `{1, 2, …}`.

use std::rc::{Rc, Weak};

use mlua::{Lua, MultiValue, Table, Value};
use serde_json::{Map, Value as Json};

use crate::host::EntityId;
use crate::script::{
    add_metered_fn, arg, got, ok, Answer, LuaTable, Meter, ServiceLookup, TableCtx,
};

use super::{DistrictService, DISTRICT};

/// The table, as the kit's catalog entry registers it.
pub const TABLE: LuaTable = LuaTable {
    name: "district",
    functions: || FUNCTIONS.iter().map(|(n, _)| *n).collect(),
    install,
};

/// The table for a mod of a game with the district service; none without it.
fn install(
    lua: &Lua,
    services: &dyn ServiceLookup,
    ctx: &TableCtx<'_>,
) -> mlua::Result<Option<Table>> {
    let Some(service) = crate::script::service::<dyn DistrictService>(services, DISTRICT) else {
        return Ok(None);
    };
    table(lua, Rc::downgrade(&service), ctx.meter.clone()).map(Some)
}

/// Deepest nesting of a `data` table.
const MAX_DEPTH: usize = 32;

/// What the functions share: the mod's budget.
struct Ctx {
    meter: Rc<dyn Meter>,
}

/// One `district` function: `Err(message)` is a usage error, prefixed with its name.
type Fun = fn(&Lua, &dyn DistrictService, &Ctx, &MultiValue) -> Answer;

/// Every function of the table, by its Lua name.
const FUNCTIONS: &[(&str, Fun)] = &[
    ("set", set),
    ("data", data),
    ("live", live),
    ("stored", stored),
];

/// The table, each function bound to the live service (or failing once the kit is gone).
fn table(
    lua: &Lua,
    service: Weak<dyn DistrictService>,
    meter: Rc<dyn Meter>,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let ctx = Rc::new(Ctx { meter });
    for &(name, f) in FUNCTIONS {
        let ctx = ctx.clone();
        add_metered_fn(
            lua,
            &t,
            ("district", name),
            &service,
            ctx.meter.clone(),
            Box::new(move |lua, s, args| f(lua, s, &ctx, &args)),
        )?;
    }
    Ok(t)
}

fn entity_arg(v: &Value) -> Result<EntityId, String> {
    match v {
        Value::String(s) => {
            let s = s
                .to_str()
                .map_err(|_| "expected an entity id (UTF-8)".to_owned())?;
            crate::limits::check_name(&s)?;
            Ok(EntityId::new(&s))
        }
        other => Err(format!(
            "expected an entity id (a string), got {}",
            got(other)
        )),
    }
}

/// A Lua value as JSON: `nil` none; tables are arrays when their keys are exactly `1..=n`.
fn to_json(v: &Value, depth: usize, units: &mut u64) -> Result<Json, String> {
    *units += 1;
    if depth > MAX_DEPTH {
        return Err(format!("data nested deeper than {MAX_DEPTH} tables"));
    }
    Ok(match v {
        Value::Nil => Json::Null,
        Value::Boolean(b) => Json::Bool(*b),
        Value::Integer(i) => Json::from(*i),
        Value::Number(n) if n.is_finite() => Json::from(*n),
        Value::String(s) => {
            let s = s
                .to_str()
                .map_err(|_| "data strings must be UTF-8".to_owned())?;
            *units += s.len() as u64 / 16;
            Json::String(s.to_string())
        }
        Value::Table(t) => {
            let n = t.raw_len();
            let mut pairs = Vec::new();
            for pair in t.clone().pairs::<Value, Value>() {
                let (k, v) = pair.map_err(|e| e.to_string())?;
                pairs.push((k, v));
                if pairs.len() > crate::limits::MAX_DATA_BYTES {
                    return Err("data too large".into());
                }
            }
            let is_array = n > 0
                && pairs.len() == n
                && pairs
                    .iter()
                    .all(|(k, _)| matches!(k, Value::Integer(i) if *i >= 1 && *i as usize <= n));
            if is_array {
                let mut out = vec![Json::Null; n];
                for (k, v) in &pairs {
                    if let Value::Integer(i) = k {
                        out[*i as usize - 1] = to_json(v, depth + 1, units)?;
                    }
                }
                Json::Array(out)
            } else {
                Json::Object(to_object(&pairs, depth, units)?)
            }
        }
        other => return Err(format!("data cannot hold {}", got(other))),
    })
}

fn to_object(
    pairs: &[(Value, Value)],
    depth: usize,
    units: &mut u64,
) -> Result<Map<String, Json>, String> {
    let mut out = Vec::new();
    for (k, v) in pairs {
        let Value::String(k) = k else {
            return Err(format!(
                "data keys must be strings (or 1..n for an array), got {}",
                got(k)
            ));
        };
        let k = k
            .to_str()
            .map_err(|_| "data keys must be UTF-8".to_owned())?
            .to_string();
        out.push((k, to_json(v, depth + 1, units)?));
    }
    // `pairs` order is the table's: sort the keys, so the same table gives the same bytes.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().collect())
}

fn to_lua(lua: &Lua, v: &Json) -> mlua::Result<Value> {
    Ok(match v {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Boolean(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Number(n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => Value::String(lua.create_string(s)?),
        Json::Array(a) => {
            let t = lua.create_table_with_capacity(a.len(), 0)?;
            for (i, x) in a.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, x)?)?;
            }
            Value::Table(t)
        }
        Json::Object(m) => {
            let t = lua.create_table_with_capacity(0, m.len())?;
            for (k, x) in m {
                t.raw_set(k.as_str(), to_lua(lua, x)?)?;
            }
            Value::Table(t)
        }
    })
}

fn set(lua: &Lua, s: &dyn DistrictService, ctx: &Ctx, args: &MultiValue) -> Answer {
    let id = entity_arg(&arg(args, 0))?;
    let data = match arg(args, 1) {
        Value::Nil => None,
        Value::Table(t) => {
            let mut units = 0;
            let pairs: Vec<(Value, Value)> = t
                .pairs::<Value, Value>()
                .collect::<mlua::Result<_>>()
                .map_err(|e| e.to_string())?;
            let map = to_object(&pairs, 0, &mut units)?;
            if let Err(e) = ctx.meter.charge(units) {
                return Ok(Err(e));
            }
            Some(map)
        }
        other => return Err(format!("expected a data table or nil, got {}", got(&other))),
    };
    s.set(&id, data)?;
    Ok(ok(lua, ()))
}

fn data(lua: &Lua, s: &dyn DistrictService, ctx: &Ctx, args: &MultiValue) -> Answer {
    let id = entity_arg(&arg(args, 0))?;
    Ok(match s.data(&id).flatten() {
        None => ok(lua, Value::Nil),
        Some(map) => {
            let units = serde_json::to_vec(&map).map_or(0, |b| b.len() as u64 / 16);
            if let Err(e) = ctx.meter.charge(units) {
                return Ok(Err(e));
            }
            to_lua(lua, &Json::Object(map)).and_then(|t| ok(lua, t))
        }
    })
}

fn live(lua: &Lua, s: &dyn DistrictService, _: &Ctx, _: &MultiValue) -> Answer {
    Ok(ok(lua, s.live() as i64))
}

fn stored(lua: &Lua, s: &dyn DistrictService, _: &Ctx, _: &MultiValue) -> Answer {
    Ok(ok(lua, s.stored() as i64))
}
