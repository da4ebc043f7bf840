//! A Lua mod's `storage` table as it is saved: plain data (numbers, strings, booleans and tables
//! of them), encoded as JSON and restored on load.
//!
//! The encoding is one rule: a Lua table is a JSON array of `[key, value]` pairs, in the
//! sandbox's `pairs` order (numbers ascending, then strings bytewise, then `false`, `true`); a
//! string is a JSON string, a boolean a JSON boolean, an integer a JSON integer (`3`) and a float
//! a JSON number with a fraction or an exponent (`3.0`, `1e300`), so integers and floats stay
//! what they were. `storage = {count = 3, seen = {[1] = "a"}}` is saved as
//! `[["count", 3], ["seen", [[1, "a"]]]]`.
//!
//! What cannot be saved is an error naming where (`storage.seen[2]: a function cannot be
//! saved …`): functions, userdata and other non-data values, strings that are not UTF-8,
//! floats that are not finite, tables that contain themselves, tables nested deeper than
//! [`MAX_DEPTH`], and a storage whose encoding is larger than [`MAX_BYTES`]. Metatables are not
//! saved; a table reached twice is saved twice (by value).

use std::cmp::Ordering;

#[cfg(feature = "lua")]
use mlua::{Lua, Table, Value as Lua_};
use serde_json::Value;

#[cfg(feature = "lua")]
use super::sandbox::{cmp_keys, Key};
use crate::json::Problem;

/// Largest encoded `storage` of one mod, in bytes of JSON.
pub const MAX_BYTES: usize = 1 << 20;
/// Deepest nesting of tables in `storage` (`storage` itself is depth 1).
pub const MAX_DEPTH: usize = 32;

#[cfg(feature = "lua")]
const WHAT: &str = "storage holds numbers, strings, booleans and tables of them";

/// `.name` for an identifier, else `["text"]` / `[3]`.
#[cfg(feature = "lua")]
fn key_path(key: &Key) -> String {
    match key {
        Key::Int(i) => format!("[{i}]"),
        Key::Float(f) => format!("[{f:?}]"),
        Key::Bool(b) => format!("[{b}]"),
        Key::Str(s) => {
            let text = s.to_string_lossy();
            let ident = text.bytes().enumerate().all(|(i, b)| {
                b == b'_' || b.is_ascii_alphabetic() || (i > 0 && b.is_ascii_digit())
            }) && !text.is_empty();
            if ident {
                format!(".{text}")
            } else {
                format!("[{text:?}]")
            }
        }
    }
}

/// Encodes the mod's `storage` value (`nil` is an empty storage).
#[cfg(feature = "lua")]
pub(super) fn encode(storage: &Lua_) -> Result<Value, String> {
    let mut budget = MAX_BYTES;
    let mut stack = Vec::new();
    match storage {
        Lua_::Nil => Ok(Value::Array(Vec::new())),
        Lua_::Table(t) => encode_table(t, "storage", &mut stack, &mut budget),
        other => Err(format!(
            "storage: expected a table, got a {}",
            crate::script::lua_type(other)
        )),
    }
}

#[cfg(feature = "lua")]
fn spend(budget: &mut usize, n: usize, path: &str) -> Result<(), String> {
    if n > *budget {
        return Err(format!(
            "{path}: storage is larger than {MAX_BYTES} bytes once saved; keep less in it"
        ));
    }
    *budget -= n;
    Ok(())
}

#[cfg(feature = "lua")]
fn encode_table(
    t: &Table,
    path: &str,
    stack: &mut Vec<*const std::ffi::c_void>,
    budget: &mut usize,
) -> Result<Value, String> {
    let ptr = t.to_pointer();
    if stack.contains(&ptr) {
        return Err(format!(
            "{path}: a table that contains itself cannot be saved ({WHAT})"
        ));
    }
    if stack.len() >= MAX_DEPTH {
        return Err(format!(
            "{path}: tables nested deeper than {MAX_DEPTH} cannot be saved"
        ));
    }
    let mut entries: Vec<(Key, Lua_)> = Vec::new();
    let mut bad_key = None;
    t.for_each::<Lua_, Lua_>(|k, v| {
        match k {
            Lua_::Integer(i) => entries.push((Key::Int(i), v)),
            Lua_::Number(f) => entries.push((Key::Float(f), v)),
            Lua_::String(s) => entries.push((Key::Str(s), v)),
            Lua_::Boolean(b) => entries.push((Key::Bool(b), v)),
            other => bad_key = Some(crate::script::lua_type(&other)),
        }
        Ok(())
    })
    .map_err(|e| format!("{path}: {e}"))?;
    if let Some(kind) = bad_key {
        return Err(format!(
            "{path}: a key of type {kind} cannot be saved ({WHAT})"
        ));
    }
    entries.sort_by(|a, b| cmp_keys(&a.0, &b.0));
    stack.push(ptr);
    let mut pairs = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let here = format!("{path}{}", key_path(&key));
        let k = scalar(&key_value(&key), &here)?;
        spend(budget, k.to_string().len() + 4, &here)?;
        let v = match &value {
            Lua_::Table(inner) => encode_table(inner, &here, stack, budget)?,
            other => {
                let v = scalar(other, &here)?;
                spend(budget, v.to_string().len(), &here)?;
                v
            }
        };
        pairs.push(Value::Array(vec![k, v]));
    }
    stack.pop();
    Ok(Value::Array(pairs))
}

#[cfg(feature = "lua")]
fn key_value(key: &Key) -> Lua_ {
    match key {
        Key::Int(i) => Lua_::Integer(*i),
        Key::Float(f) => Lua_::Number(*f),
        Key::Str(s) => Lua_::String(s.clone()),
        Key::Bool(b) => Lua_::Boolean(*b),
    }
}

#[cfg(feature = "lua")]
fn scalar(v: &Lua_, path: &str) -> Result<Value, String> {
    match v {
        Lua_::Boolean(b) => Ok(Value::Bool(*b)),
        Lua_::Integer(i) => Ok(Value::from(*i)),
        Lua_::Number(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("{path}: the number {f} cannot be saved (not finite)")),
        Lua_::String(s) => match std::str::from_utf8(&s.as_bytes()) {
            Ok(text) => Ok(Value::String(text.to_owned())),
            Err(_) => Err(format!(
                "{path}: a string that is not UTF-8 text cannot be saved"
            )),
        },
        other => Err(format!(
            "{path}: a {} cannot be saved ({WHAT})",
            crate::script::lua_type(other)
        )),
    }
}

/// Checks a saved storage (what [`encode`] writes) without a Lua state: pairs, key types and
/// order, finite numbers, depth and size. Paths are JSON paths under `path`.
pub fn check(value: &Value, path: &str) -> Result<(), Problem> {
    let size = value.to_string().len();
    if size > MAX_BYTES {
        return Err(Problem::new(
            path,
            format!("expected a storage of at most {MAX_BYTES} bytes, got {size}"),
        ));
    }
    check_table(value, path, 1)
}

fn check_table(value: &Value, path: &str, depth: usize) -> Result<(), Problem> {
    if depth > MAX_DEPTH {
        return Err(Problem::new(
            path,
            format!("expected tables nested at most {MAX_DEPTH} deep"),
        ));
    }
    let Value::Array(pairs) = value else {
        return Err(Problem::new(
            path,
            format!(
                "expected a table: an array of [key, value] pairs, got {}",
                crate::json::describe(value)
            ),
        ));
    };
    let mut previous: Option<&Value> = None;
    for (i, pair) in pairs.iter().enumerate() {
        let here = format!("{path}[{i}]");
        let (k, v) = match pair.as_array().map(Vec::as_slice) {
            Some([k, v]) => (k, v),
            _ => {
                return Err(Problem::new(
                    here,
                    format!(
                        "expected a [key, value] pair, got {}",
                        crate::json::describe(pair)
                    ),
                ))
            }
        };
        match k {
            Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) && !n.is_i64() => {
                return Err(Problem::new(
                    format!("{here}[0]"),
                    format!(
                        "expected an integer key within ±2^63 or a non-integral float, got {n}"
                    ),
                ))
            }
            Value::Number(_) | Value::String(_) | Value::Bool(_) => {}
            other => {
                return Err(Problem::new(
                    format!("{here}[0]"),
                    format!(
                        "expected a key: a number, a string or a boolean, got {}",
                        crate::json::describe(other)
                    ),
                ))
            }
        }
        if let Some(p) = previous {
            if json_key_order(p, k) != Ordering::Less {
                return Err(Problem::new(
                    format!("{here}[0]"),
                    "expected keys in pairs order without repeats (numbers ascending, then strings bytewise, then false, true)",
                ));
            }
        }
        previous = Some(k);
        match v {
            Value::Array(_) => check_table(v, &format!("{here}[1]"), depth + 1)?,
            Value::Number(n) if n.as_i64().is_none() && n.as_f64().is_none() => {
                return Err(Problem::new(
                    format!("{here}[1]"),
                    format!("expected a number within ±2^63, got {n}"),
                ))
            }
            Value::Number(n) if n.is_u64() && !n.is_i64() => {
                return Err(Problem::new(
                    format!("{here}[1]"),
                    format!("expected an integer within ±2^63, got {n}"),
                ))
            }
            Value::Number(_) | Value::String(_) | Value::Bool(_) => {}
            other => {
                return Err(Problem::new(
                    format!("{here}[1]"),
                    format!(
                        "expected a value: a number, a string, a boolean or a table, got {}",
                        crate::json::describe(other)
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// The `pairs` order on saved keys.
fn json_key_order(a: &Value, b: &Value) -> Ordering {
    let rank = |v: &Value| match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        _ => 2,
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Builds the Lua table of a storage checked by [`check`], in `lua` (its memory limit applies).
#[cfg(feature = "lua")]
pub(super) fn decode(lua: &Lua, value: &Value) -> mlua::Result<Table> {
    let pairs = value.as_array().map(Vec::as_slice).unwrap_or_default();
    let t = lua.create_table()?;
    for pair in pairs {
        let Some([k, v]) = pair.as_array().map(Vec::as_slice) else {
            continue; // checked before
        };
        let v = match v {
            Value::Array(_) => Lua_::Table(decode(lua, v)?),
            other => scalar_to_lua(lua, other)?,
        };
        t.raw_set(scalar_to_lua(lua, k)?, v)?;
    }
    Ok(t)
}

#[cfg(feature = "lua")]
fn scalar_to_lua(lua: &Lua, v: &Value) -> mlua::Result<Lua_> {
    Ok(match v {
        Value::Bool(b) => Lua_::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) if !n.is_f64() => Lua_::Integer(i),
            _ => Lua_::Number(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => Lua_::String(lua.create_string(s)?),
        _ => Lua_::Nil,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_saved_storage_is_checked_for_shape_order_and_types() {
        assert!(check(&json!([["a", 1], ["b", [[1, 2.5], [2, true]]]]), "s").is_ok());
        let bad = [
            (json!({"a": 1}), "s"),
            (json!([["a"]]), "s[0]"),
            (json!([[null, 1]]), "s[0][0]"),
            (json!([["b", 1], ["a", 1]]), "s[1][0]"),
            (json!([["a", 1], ["a", 2]]), "s[1][0]"),
            (json!([["a", null]]), "s[0][1]"),
            (json!([[1.0, 1]]), "s[0][0]"),
            (json!([["a", {"x": 1}]]), "s[0][1]"),
        ];
        for (value, path) in bad {
            let e = check(&value, "s").unwrap_err();
            assert_eq!(e.path, path, "{value}: {e}");
        }
        let mut deep = json!([]);
        for _ in 0..MAX_DEPTH {
            deep = json!([["d", deep]]);
        }
        assert!(check(&deep, "s").unwrap_err().message.contains("nested"));
    }
}
