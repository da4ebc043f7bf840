//! The sandbox of one Lua mod: its own `mlua::Lua` state with only the safe libraries, the
//! instruction meter, the trusted prelude (`prelude.lua`) that builds the mod's environment from an
//! allow-list, and the Rust half of the wrapped library functions.

use std::cell::Cell;
use std::cmp::Ordering;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use mlua::{ChunkMode, Function, IntoLuaMulti, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

use crate::grid::ChunkPos;
use crate::host::{HookArgs, HookValue, Log, LogLine, ModErrors, ModId, Steps};
use crate::script::{lua_type, section_table, RunningMod};

use super::{api, vm, LuaLimits};

/// The trusted prelude, run once per state before the mod.
const PRELUDE: &str = include_str!("prelude.lua");

/// The standard libraries a mod state opens (the base library is always there, but the mod never
/// sees the real globals): no `io`, `os`, `package`, `debug`, `coroutine`.
pub(super) fn safe_libs() -> StdLib {
    StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8
}

/// Counts a call's work against its budget, in the VM (see [`vm`]), and what the call may make
/// the host keep: its log lines. Once spent, the budget stays spent until the next call starts.
///
/// Also the mod's *tick budget* (docs/lua-vm.md#the-tick-budget): what all its outermost calls
/// of one step of the engine ([`Steps`]: a tick, an input, a load) may spend together. A call
/// gets the least of its own budget and what is left of the step's; one that the step's budget
/// cut short and that ran out, or one made with nothing left, ends the mod's calls for that step.
pub(super) struct Meter {
    budget: vm::Budget,
    limits: LuaLimits,
    /// Log lines this call wrote (the one past the cap says the rest were dropped).
    logged: Cell<usize>,
    /// The engine's steps, and the one the tick budget below counts in.
    steps: Steps,
    step: Cell<u64>,
    /// Units of the step's budget left.
    tick_left: Cell<u64>,
    /// The step's budget ran out: the mod is not called again in this step.
    silenced: Cell<bool>,
    /// The running call's budget (what the VM was given), and whether the tick budget cut it.
    call_budget: Cell<u64>,
    cut: Cell<bool>,
}

impl Meter {
    /// A meter whose tick budget is never renewed (for a state that only compiles or checks).
    pub(super) fn new(limits: LuaLimits) -> Self {
        Self::with_steps(limits, Steps::default())
    }

    /// A meter whose tick budget starts afresh with each of `steps`.
    pub(super) fn with_steps(limits: LuaLimits, steps: Steps) -> Self {
        Meter {
            budget: vm::Budget::default(),
            limits,
            logged: Cell::new(0),
            step: Cell::new(steps.now()),
            steps,
            tick_left: Cell::new(limits.instructions_per_tick),
            silenced: Cell::new(false),
            call_budget: Cell::new(0),
            cut: Cell::new(false),
        }
    }

    /// Meters `lua` from now on (its work is unmetered until a call starts).
    pub(super) fn attach(&self, lua: &Lua) -> mlua::Result<()> {
        self.budget.attach(lua)
    }

    /// The state is about to be closed.
    pub(super) fn detach(&self) {
        self.budget.detach();
    }

    /// A new step of the engine started since the last look: a fresh tick budget.
    fn renew(&self) {
        let now = self.steps.now();
        if now != self.step.get() {
            self.step.set(now);
            self.tick_left.set(self.limits.instructions_per_tick);
            self.silenced.set(false);
        }
    }

    /// Whether the mod's tick budget ran out in this step (its calls are not made).
    pub(super) fn silenced(&self) -> bool {
        self.renew();
        self.silenced.get()
    }

    /// A fresh budget for an outermost call: the least of the call's and what is left of the
    /// step's. `false` (and the mod silenced for the step) when nothing is left of the step's:
    /// the call would go past it, so it is not made and ends as if it ran away.
    fn reset(&self) -> bool {
        self.renew();
        self.logged.set(0);
        let left = self.tick_left.get();
        let units = self.limits.instructions_per_call.min(left);
        self.call_budget.set(units);
        self.cut.set(left < self.limits.instructions_per_call);
        if left == 0 {
            self.silenced.set(true);
            return false;
        }
        self.budget.set(Some(units));
        true
    }

    /// No budget between calls (the host's own work in the state is not the mod's); what the
    /// call spent is taken from the step's budget, and a call the step's budget cut short that
    /// ran out silences the mod for the step.
    fn unmeter(&self, exhausted: bool) {
        let given = self.call_budget.get();
        let spent = if exhausted {
            given
        } else {
            given - self.budget.left().unwrap_or(given).min(given)
        };
        self.tick_left.set(self.tick_left.get() - spent);
        if exhausted && self.cut.get() {
            self.silenced.set(true);
        }
        self.budget.set(None);
    }

    /// Charges `n` units of work done in Rust; an error once the budget is spent.
    pub(super) fn charge(&self, n: u64) -> mlua::Result<()> {
        if self.budget.charge(n) {
            return Err(mlua::Error::RuntimeError(self.budget_message()));
        }
        Ok(())
    }

    pub(super) fn exhausted(&self) -> bool {
        self.budget.exhausted()
    }

    /// What a call that ran out of its budget ends with: the call's own budget, or the step's
    /// when that is what cut the call short.
    pub(super) fn budget_message(&self) -> String {
        if self.cut.get() {
            format!(
                "tick budget exceeded ({} instructions a tick for the mod; its other calls this \
                 tick are not made)",
                self.limits.instructions_per_tick
            )
        } else {
            format!(
                "instruction budget exceeded ({} instructions)",
                self.limits.instructions_per_call
            )
        }
    }

    pub(super) fn memory_message(&self) -> String {
        format!("memory limit exceeded ({} bytes)", self.limits.memory_bytes)
    }
}

/// What the kits' tables charge (`crate::script::Meter`): the same budget.
impl crate::script::Meter for Meter {
    fn charge(&self, units: u64) -> mlua::Result<()> {
        Meter::charge(self, units)
    }
}

/// Longest message the host keeps from a mod (a `mod.error` message, a log line), in bytes.
pub(super) const MAX_MESSAGE_BYTES: usize = 1024;

/// `bytes` as text the host keeps: invalid UTF-8 replaced, cut to [`MAX_MESSAGE_BYTES`] at a
/// character boundary, with a note of the original length when cut. Only the bytes kept are
/// ever copied.
pub(super) fn capped(bytes: &[u8]) -> String {
    if bytes.len() <= MAX_MESSAGE_BYTES {
        let text = String::from_utf8_lossy(bytes);
        if text.len() <= MAX_MESSAGE_BYTES {
            return text.into_owned();
        }
    }
    let note = format!(" … [cut: {} bytes in all]", bytes.len());
    let room = MAX_MESSAGE_BYTES - note.len();
    let text = String::from_utf8_lossy(&bytes[..room.min(bytes.len())]);
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{note}", &text[..end])
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
        capped(m.as_bytes())
    }
}

/// A deterministic message for an error object a mod raised.
pub(super) fn describe_error_value(v: &Value, meter: &Meter) -> String {
    match v {
        Value::String(s) if s.as_bytes().len() > MAX_MESSAGE_BYTES => capped(&s.as_bytes()),
        Value::String(s) => clean_message(&s.to_string_lossy(), meter),
        Value::Error(e) => clean_error(e, meter),
        Value::Nil => "error object is nil".to_owned(),
        other => format!("error object is a {}", lua_type(other)),
    }
}

/// Builds the Rust half the prelude takes (`R` in `prelude.lua`): deterministic `pairs`, the
/// raw metatable `pairs` looks `__pairs` up in, and the log.
pub(super) fn core_functions(
    lua: &Lua,
    r: &Table,
    meter: &Rc<Meter>,
    log: &Log,
    id: &ModId,
) -> mlua::Result<()> {
    let m = meter.clone();
    r.raw_set(
        "sorted_keys",
        lua.create_function(move |lua, t: Table| sorted_keys(lua, &t, &m))?,
    )?;
    r.raw_set(
        "raw_metatable",
        lua.create_function(|_, v: Value| {
            Ok(match v {
                Value::Table(t) => t.metatable(),
                _ => None,
            })
        })?,
    )?;
    let m = meter.clone();
    let (log, source) = (log.clone(), id.as_str().to_owned());
    r.raw_set(
        "emit",
        lua.create_function(move |_, message: mlua::String| {
            let n = m.logged.get();
            m.logged.set(n + 1);
            let cap = m.limits.log_lines_per_call;
            let message = match n.cmp(&cap) {
                Ordering::Less => capped(&message.as_bytes()),
                Ordering::Equal => format!(
                    "[log: at most {cap} lines a call; the rest of this call's lines are dropped]"
                ),
                Ordering::Greater => return Ok(()),
            };
            log.borrow_mut().push(LogLine {
                source: source.clone(),
                message,
            });
            Ok(())
        })?,
    )?;
    Ok(())
}

/// A `pairs` key. Strings stay Lua strings: nothing is copied, and the iteration hands the
/// table's own key objects back.
pub(super) enum Key {
    Int(i64),
    Float(f64),
    Str(mlua::String),
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

    fn into_lua(self) -> Value {
        match self {
            Key::Int(i) => Value::Integer(i),
            Key::Float(f) => Value::Number(f),
            Key::Str(s) => Value::String(s),
            Key::Bool(b) => Value::Boolean(b),
        }
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
pub(super) fn cmp_keys(a: &Key, b: &Key) -> Ordering {
    match (a, b) {
        (Key::Int(x), Key::Int(y)) => x.cmp(y),
        (Key::Float(x), Key::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Key::Int(x), Key::Float(y)) => cmp_int_float(*x, *y),
        (Key::Float(x), Key::Int(y)) => cmp_int_float(*y, *x).reverse(),
        (Key::Str(x), Key::Str(y)) => x.as_bytes().cmp(&y.as_bytes()),
        (Key::Bool(x), Key::Bool(y)) => x.cmp(y),
        _ => a.rank().cmp(&b.rank()),
    }
}

/// The keys of `t` in the fixed `pairs` order, as a sequence; or `nil, message` when a key has no
/// deterministic order (tables, functions, userdata, threads). Charged like the VM: a unit per
/// key and per 16 bytes of string keys (each may be compared), and `n log n` for the sort.
fn sorted_keys(lua: &Lua, t: &Table, meter: &Meter) -> mlua::Result<MultiValue> {
    let mut keys = Vec::new();
    let mut bad: Option<&'static str> = None;
    let mut work = 0u64;
    // Report the first offending type in a fixed order, never in hash order.
    let order = ["table", "function", "userdata", "thread"];
    t.for_each::<Value, Value>(|k, _| {
        work += 1;
        match k {
            Value::Integer(i) => keys.push(Key::Int(i)),
            Value::Number(f) => keys.push(Key::Float(f)),
            Value::String(s) => {
                work += s.as_bytes().len() as u64 >> 4;
                keys.push(Key::Str(s));
            }
            Value::Boolean(b) => keys.push(Key::Bool(b)),
            other => {
                let kind = lua_type(&other);
                let rank = |k: &str| order.iter().position(|o| *o == k);
                if bad.is_none_or(|b| rank(kind) < rank(b)) {
                    bad = Some(kind);
                }
            }
        }
        if work >= 1024 {
            meter.charge(work)?;
            work = 0;
        }
        Ok(())
    })?;
    let n = keys.len() as u64;
    meter.charge(work + n * u64::from(64 - n.leading_zeros()))?;
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
        seq.raw_set(i + 1, k.into_lua())?;
    }
    seq.into_lua_multi(lua)
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
    /// Whether the last outermost call ran out of its instruction budget.
    ran_away: Cell<bool>,
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
            ran_away: Cell::new(false),
        }
    }

    /// Calls `f(args...)`, given as `(f, args...)`, with a fresh budget (unless nested in a running
    /// call): its first result, or a deterministic message. An outermost call made with nothing
    /// left of the mod's tick budget is not run: it fails as a runaway, naming the tick budget
    /// (callers check [`Entry::silenced`] first: once that failed, the mod is not called).
    pub(super) fn call(&self, call: impl IntoLuaMulti) -> Result<Value, String> {
        let outermost = self.depth.get() == 0;
        if outermost && !self.meter.reset() {
            self.ran_away.set(true);
            return Err(self.meter.budget_message());
        }
        self.depth.set(self.depth.get() + 1);
        let depth = Depth(&self.depth);
        let result = self.runner.call::<(Value, Value)>(call);
        drop(depth);
        let exhausted = self.meter.exhausted();
        if outermost {
            self.meter.unmeter(exhausted);
            self.ran_away.set(exhausted);
        }
        if exhausted {
            return Err(self.meter.budget_message());
        }
        match result {
            Ok((Value::Boolean(true), v)) => Ok(v),
            Ok((_, e)) => Err(describe_error_value(&e, &self.meter)),
            Err(e) => Err(clean_error(&e, &self.meter)),
        }
    }

    /// Whether the mod's tick budget ran out in this step of the engine: its handlers and
    /// callbacks are not called (a hook not asked counts as not cancelled).
    pub(super) fn silenced(&self) -> bool {
        self.meter.silenced()
    }

    /// Whether the last call (outermost) ran out of its instruction budget.
    pub(super) fn ran_away(&self) -> bool {
        self.ran_away.get()
    }

    /// The mod's Lua state.
    pub(super) fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Asks a hook handler: `Some(reason)` to cancel.
    pub(super) fn ask(&self, f: &Function, args: &HookArgs<'_>) -> Result<Option<String>, String> {
        if self.silenced() {
            return Ok(None);
        }
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
}

impl RunningMod for Entry {
    /// Calls `f({x, z}, rest...)`; a failure is reported as `mod.error` with hook `hook`.
    fn callback_section(
        &self,
        hook: &'static str,
        f: &Function,
        chunk: ChunkPos,
        with_y: bool,
        rest: &dyn Fn(&Lua) -> mlua::Result<MultiValue>,
    ) {
        if self.silenced() {
            return;
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let t = section_table(&self.lua, chunk, with_y)
                .map_err(|e| clean_error(&e, &self.meter))?;
            let mut args = rest(&self.lua).map_err(|e| clean_error(&e, &self.meter))?;
            args.push_front(mlua::Value::Table(t));
            self.call((f, args)).map(drop)
        }));
        let message = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(message)) => message,
            Err(_) => "internal error in the Lua sandbox".to_owned(),
        };
        self.errors.borrow_mut().push((
            self.id.as_str().to_owned(),
            hook.to_owned(),
            super::portable(message),
        ));
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // Before the state closes: the meter must not keep its pointer.
        self.meter.detach();
    }
}

/// Creates a mod's state with the safe libraries and portable math (`^` and `math` from the
/// `libm` crate: the same bits on every machine).
pub(super) fn new_state() -> mlua::Result<Lua> {
    let lua = Lua::new_with(safe_libs(), LuaOptions::default())?;
    vm::set_portable_math(&lua)?;
    Ok(lua)
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
}
