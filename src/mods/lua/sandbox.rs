//! The sandbox of one Lua mod: its own `mlua::Lua` state with only the safe libraries, the
//! instruction meter, the trusted prelude (`prelude.lua`) that builds the mod's environment from an
//! allow-list, and the Rust half of the wrapped library functions.

use std::cell::{Cell, OnceCell};
use std::cmp::Ordering;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::{Rc, Weak};

use mlua::{
    ChunkMode, Function, HookTriggers, IntoLuaMulti, Lua, LuaOptions, MultiValue, StdLib, Table,
    Value, VmState,
};

use crate::grid::ChunkPos;
use crate::host::{HookArgs, HookValue, Log, LogLine, ModErrors, ModId};

use super::pattern::{self, Cap, Matcher, Stop};
use super::{api, LuaLimits};

/// The trusted prelude, run once per state before the mod.
const PRELUDE: &str = include_str!("prelude.lua");

/// The standard libraries a mod state opens (the base library is always there, but the mod never
/// sees the real globals): no `io`, `os`, `package`, `debug`, `coroutine`.
pub(super) fn safe_libs() -> StdLib {
    StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8
}

/// Counts a call's VM instructions (and the work charged by wrapped library functions) against
/// the budget. Once spent, it stays spent until the next call starts.
pub(super) struct Meter {
    used: Cell<u64>,
    exhausted: Cell<bool>,
    limits: LuaLimits,
}

impl Meter {
    pub(super) fn new(limits: LuaLimits) -> Self {
        Meter {
            used: Cell::new(0),
            exhausted: Cell::new(false),
            limits,
        }
    }

    /// Hook granularity: the largest of 1000, 100, 10, 1 that divides the budget, so that a call
    /// may run exactly `instructions_per_call` instructions and not one more.
    pub(super) fn step(&self) -> u32 {
        let limit = self.limits.instructions_per_call;
        [1000u32, 100, 10]
            .into_iter()
            .find(|&s| limit >= u64::from(s) && limit.is_multiple_of(u64::from(s)))
            .unwrap_or(1)
    }

    fn reset(&self) {
        self.used.set(0);
        self.exhausted.set(false);
    }

    /// Charges `n` instructions; an error once the budget is spent.
    pub(super) fn charge(&self, n: u64) -> mlua::Result<()> {
        let used = self.used.get().saturating_add(n);
        self.used.set(used);
        if used > self.limits.instructions_per_call {
            self.exhausted.set(true);
        }
        if self.exhausted.get() {
            return Err(mlua::Error::RuntimeError(self.budget_message()));
        }
        Ok(())
    }

    pub(super) fn exhausted(&self) -> bool {
        self.exhausted.get()
    }

    pub(super) fn budget_message(&self) -> String {
        format!(
            "instruction budget exceeded ({} instructions)",
            self.limits.instructions_per_call
        )
    }

    pub(super) fn memory_message(&self) -> String {
        format!("memory limit exceeded ({} bytes)", self.limits.memory_bytes)
    }

    pub(super) fn memory_bytes(&self) -> usize {
        self.limits.memory_bytes
    }

    /// A matcher-step charger for [`pattern`].
    fn pattern_charge(&self) -> impl Fn(u64) -> Result<(), Stop> + '_ {
        move |n| self.charge(n).map_err(|_| Stop::Budget)
    }
}

/// Lua's name for the type of `v` (`error` objects of mlua are userdata to Lua).
pub(super) fn lua_type(v: &Value) -> &'static str {
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

/// A deterministic message for an mlua error: the root cause, no traceback.
pub(super) fn clean_error(e: &mlua::Error, meter: &Meter) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => clean_error(cause, meter),
        mlua::Error::WithContext { cause, .. } => clean_error(cause, meter),
        mlua::Error::MemoryError(_) => meter.memory_message(),
        mlua::Error::RuntimeError(m) => clean_message(m, meter),
        mlua::Error::SyntaxError { message, .. } => clean_message(message, meter),
        other => clean_message(&other.to_string(), meter),
    }
}

/// Cuts any `stack traceback:`; Lua's out-of-memory message names the limit.
pub(super) fn clean_message(m: &str, meter: &Meter) -> String {
    let m = match m.find("stack traceback:") {
        Some(i) => &m[..i],
        None => m,
    }
    .trim_end();
    if m == "not enough memory" {
        meter.memory_message()
    } else {
        m.to_owned()
    }
}

/// A deterministic message for an error object a mod raised.
pub(super) fn describe_error_value(v: &Value, meter: &Meter) -> String {
    match v {
        Value::String(s) => clean_message(&s.to_string_lossy(), meter),
        Value::Error(e) => clean_error(e, meter),
        Value::Nil => "error object is nil".to_owned(),
        other => format!("error object is a {}", lua_type(other)),
    }
}

/// Builds the Rust half the prelude takes (`R` in `prelude.lua`): metering, deterministic
/// `pairs` and `tostring`, the log, and the metered pattern matcher.
pub(super) fn core_functions(
    lua: &Lua,
    r: &Table,
    meter: &Rc<Meter>,
    log: &Log,
    id: &ModId,
) -> mlua::Result<()> {
    let m = meter.clone();
    r.raw_set(
        "charge",
        lua.create_function(move |_, n: i64| m.charge(n.max(0) as u64))?,
    )?;
    let m = meter.clone();
    r.raw_set(
        "charge_span",
        lua.create_function(move |_, (a, b): (i64, i64)| {
            let n = (i128::from(b) - i128::from(a) + 1).clamp(0, i128::from(u64::MAX));
            m.charge(n as u64)
        })?,
    )?;
    let m = meter.clone();
    r.raw_set(
        "recheck",
        lua.create_function(move |_, args: MultiValue| {
            if m.exhausted() {
                return Err(mlua::Error::RuntimeError(m.budget_message()));
            }
            Ok(args)
        })?,
    )?;
    let m = meter.clone();
    r.raw_set(
        "sorted_keys",
        lua.create_function(move |lua, t: Table| sorted_keys(lua, &t, &m))?,
    )?;
    let m = meter.clone();
    r.raw_set(
        "special_tostring",
        lua.create_function(move |lua, v: Value| special_tostring(lua, v, &m))?,
    )?;
    let m = meter.clone();
    let (log, source) = (log.clone(), id.as_str().to_owned());
    r.raw_set(
        "emit",
        lua.create_function(move |_, message: mlua::String| {
            let bytes = message.as_bytes();
            m.charge(1 + (bytes.len() as u64 >> 4))?;
            let message = String::from_utf8_lossy(&bytes).into_owned();
            log.borrow_mut().push(LogLine {
                source: source.clone(),
                message,
            });
            Ok(())
        })?,
    )?;
    let m = meter.clone();
    r.raw_set(
        "pm_find",
        lua.create_function(
            move |lua, args: (mlua::String, mlua::String, i64, bool, bool)| pm_find(lua, &m, args),
        )?,
    )?;
    let m = meter.clone();
    r.raw_set(
        "pm_next",
        lua.create_function(
            move |lua, args: (mlua::String, mlua::String, i64, i64, bool)| pm_next(lua, &m, args),
        )?,
    )?;
    let m = meter.clone();
    r.raw_set(
        "pm_gsub",
        lua.create_function(
            move |lua, args: (mlua::String, mlua::String, mlua::String, i64)| {
                pm_gsub(lua, &m, args)
            },
        )?,
    )?;
    Ok(())
}

fn ok_values(lua: &Lua, values: impl IntoLuaMulti) -> mlua::Result<MultiValue> {
    let mut mv = values.into_lua_multi(lua)?;
    mv.push_front(Value::Boolean(true));
    Ok(mv)
}

fn failed(lua: &Lua, message: String) -> mlua::Result<MultiValue> {
    (false, message).into_lua_multi(lua)
}

/// `(false, message)` for a pattern error, a raised error for a spent budget.
fn stopped(lua: &Lua, meter: &Meter, stop: Stop) -> mlua::Result<MultiValue> {
    match stop {
        Stop::Error(message) => failed(lua, message),
        Stop::Budget => Err(mlua::Error::RuntimeError(meter.budget_message())),
    }
}

/// A `pairs` key, held on the Rust side (no Lua reference per key).
enum Key {
    Int(i64),
    Float(f64),
    Str(Vec<u8>),
    Bool(bool),
}

impl Key {
    fn rank(&self) -> u8 {
        match self {
            Key::Int(_) | Key::Float(_) => 0,
            Key::Str(_) => 1,
            Key::Bool(_) => 2,
        }
    }

    fn into_lua(self, lua: &Lua) -> mlua::Result<Value> {
        Ok(match self {
            Key::Int(i) => Value::Integer(i),
            Key::Float(f) => Value::Number(f),
            Key::Str(s) => Value::String(lua.create_string(s)?),
            Key::Bool(b) => Value::Boolean(b),
        })
    }
}

/// Compares an integer with a float exactly (no rounding of large integers).
fn cmp_int_float(i: i64, f: f64) -> Ordering {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f >= TWO_63 {
        return Ordering::Less;
    }
    if f < -TWO_63 {
        return Ordering::Greater;
    }
    let floor = f.floor();
    match i.cmp(&(floor as i64)) {
        Ordering::Equal if f > floor => Ordering::Less,
        o => o,
    }
}

/// Numbers ascending, then strings bytewise, then `false`, `true`.
fn cmp_keys(a: &Key, b: &Key) -> Ordering {
    match (a, b) {
        (Key::Int(x), Key::Int(y)) => x.cmp(y),
        (Key::Float(x), Key::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Key::Int(x), Key::Float(y)) => cmp_int_float(*x, *y),
        (Key::Float(x), Key::Int(y)) => cmp_int_float(*y, *x).reverse(),
        (Key::Str(x), Key::Str(y)) => x.cmp(y),
        (Key::Bool(x), Key::Bool(y)) => x.cmp(y),
        _ => a.rank().cmp(&b.rank()),
    }
}

/// The keys of `t` in the fixed `pairs` order, as a sequence; or `nil, message` when a key has no
/// deterministic order (tables, functions, userdata, threads).
fn sorted_keys(lua: &Lua, t: &Table, meter: &Meter) -> mlua::Result<MultiValue> {
    let mut keys = Vec::new();
    let mut bad: Option<&'static str> = None;
    let mut seen = 0u64;
    // Report the first offending type in a fixed order, never in hash order.
    let order = ["table", "function", "userdata", "thread"];
    t.for_each::<Value, Value>(|k, _| {
        match k {
            Value::Integer(i) => keys.push(Key::Int(i)),
            Value::Number(f) => keys.push(Key::Float(f)),
            Value::String(s) => keys.push(Key::Str(s.as_bytes().to_vec())),
            Value::Boolean(b) => keys.push(Key::Bool(b)),
            other => {
                let kind = lua_type(&other);
                let rank = |k: &str| order.iter().position(|o| *o == k);
                if bad.is_none_or(|b| rank(kind) < rank(b)) {
                    bad = Some(kind);
                }
            }
        }
        seen += 1;
        if seen.is_multiple_of(1024) {
            meter.charge(1024)?; // one instruction per key, charged as we go
        }
        Ok(())
    })?;
    meter.charge(seen % 1024)?;
    if let Some(kind) = bad {
        return (
            Value::Nil,
            format!("pairs: cannot order keys of type {kind} deterministically"),
        )
            .into_lua_multi(lua);
    }
    keys.sort_by(cmp_keys);
    let seq = lua.create_table_with_capacity(keys.len(), 0)?;
    for (i, k) in keys.into_iter().enumerate() {
        seq.raw_set(i + 1, k.into_lua(lua)?)?;
    }
    seq.into_lua_multi(lua)
}

/// What `tostring` shows for `v` when it is not the native rendering: a string, the table's
/// `__tostring` to call, or nil for values the native `tostring` renders deterministically.
fn special_tostring(lua: &Lua, v: Value, meter: &Meter) -> mlua::Result<Value> {
    let text = match &v {
        Value::Nil | Value::Boolean(_) | Value::Integer(_) | Value::String(_) => {
            return Ok(Value::Nil)
        }
        Value::Number(f) if f.is_nan() => "nan".to_owned(), // the sign of a NaN differs by CPU
        Value::Number(_) => return Ok(Value::Nil),
        Value::Table(t) => {
            if let Some(mt) = t.metatable() {
                let f: Value = mt.raw_get("__tostring")?;
                if !f.is_nil() {
                    return Ok(f);
                }
            }
            "table".to_owned()
        }
        Value::UserData(ud) => api::userdata_text(ud).unwrap_or_else(|| "userdata".to_owned()),
        Value::Error(e) => clean_error(e, meter),
        other => lua_type(other).to_owned(),
    };
    Ok(Value::String(lua.create_string(text)?))
}

fn push_captures(lua: &Lua, out: &mut MultiValue, src: &[u8], caps: Vec<Cap>) -> mlua::Result<()> {
    for c in caps {
        out.push_back(match c {
            Cap::Str(a, b) => Value::String(lua.create_string(&src[a..b])?),
            Cap::Pos(p) => Value::Integer(p as i64),
        });
    }
    Ok(())
}

fn split_anchor(p: &[u8]) -> (bool, &[u8]) {
    match p.first() {
        Some(b'^') => (true, &p[1..]),
        _ => (false, p),
    }
}

/// `string.find` (`find`) and `string.match`: `true, results...`, `true, nil`, or `false, message`.
fn pm_find(
    lua: &Lua,
    meter: &Meter,
    (s, p, init, plain, find): (mlua::String, mlua::String, i64, bool, bool),
) -> mlua::Result<MultiValue> {
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let init = pattern::posrelat(init, src.len()) - 1;
    if init > src.len() as u64 {
        return ok_values(lua, Value::Nil);
    }
    let init = init as usize;
    let charge = meter.pattern_charge();
    if find && (plain || pattern::no_specials(&pat)) {
        return match pattern::find_plain(&src, &pat, init, &charge) {
            Ok(Some(i)) => ok_values(lua, ((i + 1) as i64, (i + pat.len()) as i64)),
            Ok(None) => ok_values(lua, Value::Nil),
            Err(stop) => stopped(lua, meter, stop),
        };
    }
    let (anchored, pat) = split_anchor(&pat);
    let mut m = Matcher::new(&src, pat, &charge);
    let found = pattern::next_match(&mut m, init, None, anchored).and_then(|found| {
        m.flush()?;
        match found {
            None => Ok(None),
            Some((st, e)) => Ok(Some((st, e, m.captures(st, e, !find)?))),
        }
    });
    match found {
        Ok(None) => ok_values(lua, Value::Nil),
        Ok(Some((st, e, caps))) => {
            let mut out = MultiValue::new();
            out.push_back(Value::Boolean(true));
            if find {
                out.push_back(Value::Integer(st as i64 + 1));
                out.push_back(Value::Integer(e as i64));
            }
            push_captures(lua, &mut out, &src, caps)?;
            Ok(out)
        }
        Err(stop) => stopped(lua, meter, stop),
    }
}

/// The next match for `gmatch` / `gsub` with a function or table: `true, start, end, captures...`
/// (0-based start, exclusive end), `true, nil`, or `false, message`. With `gsub`, a leading `^`
/// anchors the pattern at `src`.
fn pm_next(
    lua: &Lua,
    meter: &Meter,
    (s, p, src, last, gsub): (mlua::String, mlua::String, i64, i64, bool),
) -> mlua::Result<MultiValue> {
    let (bytes, pat) = (s.as_bytes(), p.as_bytes());
    if src < 0 || src as u64 > bytes.len() as u64 {
        return ok_values(lua, Value::Nil);
    }
    let (anchored, pat) = if gsub {
        split_anchor(&pat)
    } else {
        (false, &pat[..])
    };
    let last = usize::try_from(last).ok();
    let charge = meter.pattern_charge();
    let mut m = Matcher::new(&bytes, pat, &charge);
    let found = pattern::next_match(&mut m, src as usize, last, anchored).and_then(|found| {
        m.flush()?;
        match found {
            None => Ok(None),
            Some((st, e)) => Ok(Some((st, e, m.captures(st, e, true)?))),
        }
    });
    match found {
        Ok(None) => ok_values(lua, Value::Nil),
        Ok(Some((st, e, caps))) => {
            let mut out = MultiValue::new();
            out.push_back(Value::Boolean(true));
            out.push_back(Value::Integer(st as i64));
            out.push_back(Value::Integer(e as i64));
            push_captures(lua, &mut out, &bytes, caps)?;
            Ok(out)
        }
        Err(stop) => stopped(lua, meter, stop),
    }
}

/// `string.gsub` with a replacement string: `true, result, n` or `false, message`.
fn pm_gsub(
    lua: &Lua,
    meter: &Meter,
    (s, p, repl, max_n): (mlua::String, mlua::String, mlua::String, i64),
) -> mlua::Result<MultiValue> {
    let (src, pat, repl) = (s.as_bytes(), p.as_bytes(), repl.as_bytes());
    let charge = meter.pattern_charge();
    match pattern::gsub_str(&src, &pat, &repl, max_n, meter.memory_bytes(), &charge) {
        Ok((out, n)) => ok_values(lua, (lua.create_string(out)?, n)),
        Err(stop) => stopped(lua, meter, stop),
    }
}

/// Decrements the call depth even when a call unwinds.
struct Depth<'a>(&'a Cell<u32>);

impl Drop for Depth<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// One mod's running sandbox: every call into the mod goes through [`Entry::call`].
pub(super) struct Entry {
    // Lua values first: they are dropped before the state.
    runner: Function,
    lua: Lua,
    pub(super) meter: Rc<Meter>,
    pub(super) id: ModId,
    errors: ModErrors,
    depth: Cell<u32>,
}

/// What the prelude returns: the mod's environment and the runner.
pub(super) struct Prepared {
    pub(super) env: Table,
    pub(super) runner: Function,
}

/// Runs the prelude with the Rust half `r`.
pub(super) fn run_prelude(lua: &Lua, r: Table) -> mlua::Result<Prepared> {
    let prelude = lua
        .load(PRELUDE)
        .set_name("=sandbox")
        .set_mode(ChunkMode::Text)
        .into_function()?;
    let (env, runner): (Table, Function) = prelude.call(r)?;
    Ok(Prepared { env, runner })
}

impl Entry {
    pub(super) fn new(
        lua: Lua,
        runner: Function,
        meter: Rc<Meter>,
        id: ModId,
        errors: ModErrors,
    ) -> Self {
        Entry {
            runner,
            lua,
            meter,
            id,
            errors,
            depth: Cell::new(0),
        }
    }

    /// Resets the budget and the VM's instruction countdown (re-installing the hook resets it).
    fn arm(&self) {
        self.meter.reset();
        let meter = self.meter.clone();
        let step = meter.step();
        self.lua.set_hook(
            HookTriggers::new().every_nth_instruction(step),
            move |_, _| {
                meter.charge(u64::from(step))?;
                Ok(VmState::Continue)
            },
        );
    }

    /// Calls `f(args...)`, given as `(f, args...)`, with a fresh budget (unless nested in a running
    /// call): its first result, or a deterministic message.
    pub(super) fn call(&self, call: impl IntoLuaMulti) -> Result<Value, String> {
        if self.depth.get() == 0 {
            self.arm();
        }
        self.depth.set(self.depth.get() + 1);
        let depth = Depth(&self.depth);
        let result = self.runner.call::<(Value, Value)>(call);
        drop(depth);
        if self.meter.exhausted() {
            return Err(self.meter.budget_message());
        }
        match result {
            Ok((Value::Boolean(true), v)) => Ok(v),
            Ok((_, e)) => Err(describe_error_value(&e, &self.meter)),
            Err(e) => Err(clean_error(&e, &self.meter)),
        }
    }

    /// Asks a hook handler: `Some(reason)` to cancel.
    pub(super) fn ask(&self, f: &Function, args: &HookArgs<'_>) -> Result<Option<String>, String> {
        let payload = self
            .payload(args)
            .map_err(|e| clean_error(&e, &self.meter))?;
        match self.call((f, payload))? {
            Value::Nil => Ok(None),
            Value::UserData(ud) if api::cancel_reason(&ud).is_some() => Ok(api::cancel_reason(&ud)),
            other => Err(format!(
                "handler returned a {}; expected nothing or cancel(reason)",
                lua_type(&other)
            )),
        }
    }

    /// A fresh table of the hook's fields: changing it changes nothing.
    fn payload(&self, args: &HookArgs<'_>) -> mlua::Result<Table> {
        let t = self.lua.create_table_with_capacity(0, args.fields.len())?;
        for (name, value) in args.fields {
            match value {
                HookValue::Int(i) => t.raw_set(*name, *i)?,
                HookValue::Number(n) => t.raw_set(*name, *n)?,
                HookValue::Bool(b) => t.raw_set(*name, *b)?,
            }
        }
        Ok(t)
    }

    /// Runs an `onChunk` callback; a failure is reported as `mod.error` with hook `onChunk`.
    pub(super) fn chunk_callback(&self, f: &Function, chunk: ChunkPos, loaded: bool) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let t = api::chunk_table(&self.lua, chunk).map_err(|e| clean_error(&e, &self.meter))?;
            self.call((f, t, loaded)).map(drop)
        }));
        let message = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(message)) => message,
            Err(_) => "internal error in the Lua sandbox".to_owned(),
        };
        self.errors.borrow_mut().push((
            self.id.as_str().to_owned(),
            "onChunk".to_owned(),
            super::portable(message),
        ));
    }
}

/// Where the `onChunk` API finds the entry once it exists (weak: no reference cycle through the
/// state's own functions).
pub(super) type EntrySlot = Rc<OnceCell<Weak<Entry>>>;

/// Creates a mod's state with the safe libraries.
pub(super) fn new_state() -> mlua::Result<Lua> {
    Lua::new_with(safe_libs(), LuaOptions::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_floats_order_exactly() {
        assert_eq!(cmp_int_float(1, 1.5), Ordering::Less);
        assert_eq!(cmp_int_float(2, 1.5), Ordering::Greater);
        assert_eq!(cmp_int_float(-2, -1.5), Ordering::Less);
        assert_eq!(cmp_int_float(i64::MAX, 9.3e18), Ordering::Less);
        assert_eq!(cmp_int_float(i64::MIN, -9.3e18), Ordering::Greater);
        assert_eq!(cmp_int_float(3, f64::INFINITY), Ordering::Less);
    }

    #[test]
    fn the_hook_step_divides_the_budget() {
        let step = |n| {
            Meter::new(LuaLimits {
                memory_bytes: 1,
                instructions_per_call: n,
            })
            .step()
        };
        assert_eq!(step(1_000_000), 1000);
        assert_eq!(step(12_340), 10);
        assert_eq!(step(7), 1);
        assert_eq!(step(0), 1);
    }
}
