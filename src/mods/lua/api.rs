//! The functions a Lua mod calls: `on`, `cancel`, and the `streaming` service. Each answers
//! `true, results...` or `false, message`; the prelude raises the message at the mod's line.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use mlua::{
    AnyUserData, Function, IntoLuaMulti, Lua, MetaMethod, MultiValue, Table, UserData,
    UserDataFields, UserDataMethods, Value,
};
use serde_json::json;

use crate::grid::{ChunkPos, Position};
use crate::host::EntityId;
use crate::kits::streaming::{
    BudgetMs, ChunkSubscription, FocusMode, MaxLoaded, MaxRefusals, Overrides, Radius, Refusal,
    StreamingService,
};
use crate::kits::terrain::TerrainService;

use super::sandbox::{lua_type, EntrySlot, Meter};

/// Most handlers one mod may register with `on`.
pub(super) const MAX_HANDLERS: usize = 1000;
/// Most `onChunk` subscriptions one mod may hold at once.
pub(super) const MAX_SUBSCRIPTIONS: usize = 64;
/// Longest cancel reason, in bytes (refusals are held and saved with the game).
pub(super) const MAX_REASON_BYTES: usize = crate::limits::MAX_REASON_LEN;

fn reason_too_long() -> String {
    format!(
        "cancel: the reason is longer than {MAX_REASON_BYTES} bytes \
         (as UTF-8, each invalid byte counting as the 3 bytes of U+FFFD)"
    )
}

/// What `cancel(reason)` returns; a handler returns it to cancel.
pub(super) struct CancelToken {
    reason: String,
}

impl UserData for CancelToken {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("reason", |_, this| Ok(this.reason.clone()));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(format!("cancel({:?})", this.reason))
        });
    }
}

/// What `streaming.onChunk(fn)` returns: `handle:unsubscribe()` stops the callbacks.
pub(super) struct Subscription {
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

/// The reason of a cancel token.
pub(super) fn cancel_reason(ud: &AnyUserData) -> Option<String> {
    ud.borrow::<CancelToken>().ok().map(|t| t.reason.clone())
}

/// Everything the API functions share.
pub(super) struct ApiContext {
    /// The declared hooks.
    pub(super) hooks: Vec<String>,
    /// The service (weak: the state must not keep the kit alive).
    pub(super) streaming: Option<Weak<dyn StreamingService>>,
    /// The terrain service, likewise.
    pub(super) terrain: Option<Weak<dyn TerrainService>>,
    /// `(hook, handler)` registered by `on`, in order.
    pub(super) registered: Rc<RefCell<Vec<(String, Function)>>>,
    /// Whether the mod's top level is running (`on` is allowed only then).
    pub(super) top_level: Rc<Cell<bool>>,
    /// The mod id (for `set_radius` / `set_budget_ms`).
    pub(super) id: crate::host::ModId,
    /// The running sandbox, for `onChunk` callbacks.
    pub(super) entry: EntrySlot,
    /// The mod's budget, charged for the tables the API builds.
    pub(super) meter: Rc<Meter>,
    /// The first `on` with a name that is not a hook: `(line, message)`. It makes the mod a bad
    /// file (even when the mod caught the error).
    pub(super) bad_hook: Rc<RefCell<Option<(usize, String)>>>,
}

/// The line of the mod's code that called the running API function (the innermost frame that
/// is the mod's, not the sandbox's prelude).
fn caller_line(lua: &Lua) -> usize {
    (1..16)
        .filter_map(|level| lua.inspect_stack(level))
        .find(|d| d.source().source.is_some_and(|s| s.starts_with('@')))
        .map_or(1, |d| d.curr_line().max(1) as usize)
}

fn ok(lua: &Lua, values: impl IntoLuaMulti) -> mlua::Result<MultiValue> {
    let mut mv = values.into_lua_multi(lua)?;
    mv.push_front(Value::Boolean(true));
    Ok(mv)
}

fn fail(lua: &Lua, message: String) -> mlua::Result<MultiValue> {
    (false, message).into_lua_multi(lua)
}

/// `a table`, `nil`, `a string` … for "got …".
fn got(v: &Value) -> String {
    match v {
        Value::Nil => "nil".to_owned(),
        other => format!("a {}", lua_type(other)),
    }
}

/// Whole numbers as Lua integers (so `32` prints as `32`, not `32.0`), others as floats.
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::Integer(v as i64)
    } else {
        Value::Number(v)
    }
}

/// `{x = …, z = …}`.
pub(super) fn chunk_table(lua: &Lua, c: ChunkPos) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 2)?;
    t.raw_set("x", c.x)?;
    t.raw_set("z", c.z)?;
    Ok(t)
}

/// Budget units per table the API builds for a mod, on top of the memory it allocates (which the
/// VM charges): building one through mlua costs about as much time as this many instructions.
const UNITS_PER_TABLE: u64 = 8;

fn chunk_list(lua: &Lua, meter: &Meter, chunks: Vec<ChunkPos>) -> mlua::Result<Table> {
    meter.charge(UNITS_PER_TABLE * chunks.len() as u64)?;
    let t = lua.create_table_with_capacity(chunks.len(), 0)?;
    for (i, c) in chunks.into_iter().enumerate() {
        t.raw_set(i + 1, chunk_table(lua, c)?)?;
    }
    Ok(t)
}

fn refusal_table(lua: &Lua, r: Refusal) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 5)?;
    t.raw_set("x", r.x)?;
    t.raw_set("z", r.z)?;
    t.raw_set("hook", r.hook)?;
    t.raw_set("mod", r.by)?;
    t.raw_set("reason", r.reason)?;
    Ok(t)
}

fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(i) => Some(*i),
        Value::Number(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(*f as i64),
        _ => None,
    }
}

fn float(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(f) => Some(*f),
        _ => None,
    }
}

/// `(x, z)` chunk coordinates.
fn chunk_args(x: &Value, z: &Value) -> Result<ChunkPos, String> {
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

/// A position table `{x = …, z = …}` (`y` optional), fields read raw.
fn position_arg(v: &Value) -> Result<Position, String> {
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
fn setting(v: &Value) -> Result<serde_json::Value, String> {
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
fn checked<T>(v: &Value, parse: fn(&serde_json::Value) -> Result<T, String>) -> Result<T, String> {
    match setting(v) {
        Ok(json) => parse(&json),
        Err(rendering) => Err(expected_got(
            parse(&serde_json::Value::Null).map(drop),
            &rendering,
        )),
    }
}

/// `expected …, got <rendering>` from a checked parser's own wording.
fn expected_got(parse_null: Result<(), String>, rendering: &str) -> String {
    let message = parse_null.err().unwrap_or_default();
    format!(
        "{}{rendering}",
        message.strip_suffix("null").unwrap_or(&message)
    )
}

/// Adds `on`, `cancel` and (with the service) the raw `streaming` functions to `r`.
pub(super) fn install(lua: &Lua, r: &Table, ctx: ApiContext) -> mlua::Result<()> {
    let ApiContext {
        hooks,
        streaming,
        terrain,
        registered,
        top_level,
        id,
        entry,
        meter,
        bad_hook,
    } = ctx;
    r.raw_set(
        "on",
        lua.create_function(move |lua, (hook, handler): (Value, Value)| {
            if !top_level.get() {
                return fail(
                    lua,
                    "on: handlers can only be registered while the mod's top level runs".into(),
                );
            }
            let Value::String(name) = &hook else {
                return fail(
                    lua,
                    format!("on: expected a hook name (a string), got {}", got(&hook)),
                );
            };
            let name = name.to_string_lossy();
            if !hooks.contains(&name) {
                let message = format!(
                    "on: {name:?} is not a hook; the hooks are: {}",
                    hooks.join(", ")
                );
                bad_hook
                    .borrow_mut()
                    .get_or_insert_with(|| (caller_line(lua), message.clone()));
                return fail(lua, message);
            }
            let Value::Function(f) = handler else {
                return fail(
                    lua,
                    format!(
                        "on: expected a function to handle {name}, got {}",
                        got(&handler)
                    ),
                );
            };
            if registered.borrow().len() >= MAX_HANDLERS {
                return fail(
                    lua,
                    format!("on: too many handlers (at most {MAX_HANDLERS} a mod)"),
                );
            }
            registered.borrow_mut().push((name, f));
            ok(lua, ())
        })?,
    )?;
    r.raw_set(
        "cancel",
        lua.create_function(|lua, reason: Value| {
            let reason = match reason {
                Value::Nil => String::new(),
                // The limit holds for what is stored and saved: the reason as UTF-8, each
                // invalid byte replaced by U+FFFD (three bytes), so a save always loads.
                Value::String(s) if s.as_bytes().len() > MAX_REASON_BYTES => {
                    return fail(lua, reason_too_long());
                }
                Value::String(s) => match s.to_string_lossy() {
                    stored if stored.len() > MAX_REASON_BYTES => {
                        return fail(lua, reason_too_long())
                    }
                    stored => stored,
                },
                other => {
                    return fail(
                        lua,
                        format!(
                            "cancel: expected a reason (a string) or nothing, got {}",
                            got(&other)
                        ),
                    )
                }
            };
            ok(lua, lua.create_userdata(CancelToken { reason })?)
        })?,
    )?;
    if let Some(service) = terrain {
        r.raw_set(
            "terrain",
            terrain_functions(lua, service, entry.clone(), meter.clone())?,
        )?;
    }
    if let Some(service) = streaming {
        r.raw_set(
            "streaming",
            streaming_functions(lua, service, id, entry, meter)?,
        )?;
    }
    Ok(())
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

/// Budget units an edit costs beyond rehashing its chunk (the generator's cell, the diff).
const EDIT_UNITS: u64 = 64;

/// The callback a subscribing function (`onBuilt`, `onChunk`) was given and the running mod,
/// once the mod's subscriptions (`live`) are below [`MAX_SUBSCRIPTIONS`].
fn subscriber(
    callback: &Value,
    entry: &EntrySlot,
    live: &Cell<usize>,
) -> Result<(Function, Rc<super::sandbox::Entry>), String> {
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

/// One `terrain` function: `Err(message)` is a usage error, prefixed with the function's name.
type TerrainFn = ServiceFn<dyn TerrainService>;

/// The `terrain` table (SPEC §12).
fn terrain_functions(
    lua: &Lua,
    service: Weak<dyn TerrainService>,
    entry: EntrySlot,
    meter: Rc<Meter>,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let add = |name, f: TerrainFn| add_service_fn(lua, &t, "terrain", &service, name, f);
    let arg = |args: &MultiValue, i: usize| args.get(i).cloned().unwrap_or(Value::Nil);
    add(
        "heightAt",
        Box::new(move |lua, s, args| {
            let p = position_arg(&arg(&args, 0))?;
            Ok(ok(lua, s.height_at(p).map(i64::from)))
        }),
    )?;
    add(
        "isBuilt",
        Box::new(move |lua, s, args| {
            let c = chunk_args(&arg(&args, 0), &arg(&args, 1))?;
            Ok(ok(lua, s.is_built(c)))
        }),
    )?;
    add(
        "cellsPerChunk",
        Box::new(|lua, s, _| Ok(ok(lua, i64::from(s.cells_per_chunk())))),
    )?;
    add(
        "chunk",
        Box::new(move |lua, s, args| {
            let c = chunk_args(&arg(&args, 0), &arg(&args, 1))?;
            Ok(match s.chunk(c) {
                None => ok(lua, Value::Nil),
                Some(data) => (|| {
                    let t = lua.create_table_with_capacity(0, 4)?;
                    t.raw_set("x", c.x)?;
                    t.raw_set("z", c.z)?;
                    t.raw_set("cells", i64::from(data.cells))?;
                    t.raw_set("hash", crate::kits::terrain::hash_text(data.hash()))?;
                    ok(lua, t)
                })(),
            })
        }),
    )?;
    add(
        "edit",
        Box::new(move |lua, s, args| {
            // The host's work is charged like the mod's: an edit rehashes the chunk's
            // 3·cells² bytes (about one unit per 4 bytes) and evaluates the generator once.
            let cells = u64::from(s.cells_per_chunk());
            if let Err(e) = meter.charge(EDIT_UNITS + cells * cells * 3 / 4) {
                return Ok(Err(e));
            }
            let at = position_arg(&arg(&args, 0))?;
            let height = integer(&arg(&args, 1))
                .and_then(|h| u16::try_from(h).ok())
                .ok_or_else(|| {
                    format!("expected a height 0..=65535, got {}", got(&arg(&args, 1)))
                })?;
            let material = match arg(&args, 2) {
                Value::Nil => None,
                v => Some(
                    integer(&v)
                        .and_then(|m| u8::try_from(m).ok())
                        .ok_or_else(|| {
                            format!("expected a material 0..=255 or nil, got {}", got(&v))
                        })?,
                ),
            };
            Ok(match s.edit(at, height, material) {
                Ok(()) => ok(lua, true),
                Err(reason) => ok(lua, (false, reason.to_string())),
            })
        }),
    )?;
    add(
        "isModified",
        Box::new(move |lua, s, args| {
            let c = chunk_args(&arg(&args, 0), &arg(&args, 1))?;
            Ok(ok(lua, s.is_modified(c)))
        }),
    )?;
    let live = Rc::new(Cell::new(0usize));
    add(
        "onBuilt",
        Box::new(move |lua, s, args| {
            let (f, entry) = subscriber(&arg(&args, 0), &entry, &live)?;
            live.set(live.get() + 1);
            s.on_built(Box::new(move |chunk, hash| {
                entry.built_callback(&f, chunk, hash)
            }));
            Ok(ok(lua, ()))
        }),
    )?;
    Ok(t)
}

/// One `streaming` function: `Err(message)` is a usage error, prefixed with the function's name.
type Service = ServiceFn<dyn StreamingService>;

/// One function of a service table: `Err(message)` is a usage error, prefixed with the table and
/// function names.
type ServiceFn<S> = Box<dyn Fn(&Lua, &S, MultiValue) -> Result<mlua::Result<MultiValue>, String>>;

/// Adds `table.name` to `t`: `f` with the live service, or an error once the kit is gone.
fn add_service_fn<S: ?Sized + 'static>(
    lua: &Lua,
    t: &Table,
    table: &'static str,
    service: &Weak<S>,
    name: &'static str,
    f: ServiceFn<S>,
) -> mlua::Result<()> {
    let service = service.clone();
    t.raw_set(
        name,
        lua.create_function(move |lua, args: MultiValue| {
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

fn streaming_functions(
    lua: &Lua,
    service: Weak<dyn StreamingService>,
    id: crate::host::ModId,
    entry: EntrySlot,
    meter: Rc<Meter>,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let live = Rc::new(Cell::new(0usize));
    // Each function gets the live service, or fails if the kit is gone.
    let add = |name, f: Service| add_service_fn(lua, &t, "streaming", &service, name, f);
    let arg = |args: &MultiValue, i: usize| args.get(i).cloned().unwrap_or(Value::Nil);
    add(
        "isLoaded",
        Box::new(move |lua, s, args| {
            let c = chunk_args(&arg(&args, 0), &arg(&args, 1))?;
            Ok(ok(lua, s.is_loaded(c)))
        }),
    )?;
    add(
        "chunkSize",
        Box::new(|lua, s, _| Ok(ok(lua, number(s.chunk_size())))),
    )?;
    let (m1, m2, m3, m4) = (meter.clone(), meter.clone(), meter.clone(), meter.clone());
    add(
        "loaded",
        Box::new(move |lua, s, _| Ok(chunk_list(lua, &m1, s.loaded()).and_then(|t| ok(lua, t)))),
    )?;
    add(
        "pending",
        Box::new(move |lua, s, _| Ok(chunk_list(lua, &m2, s.pending()).and_then(|t| ok(lua, t)))),
    )?;
    add(
        "chunkOf",
        Box::new(move |lua, s, args| {
            let p = position_arg(&arg(&args, 0))?;
            Ok(chunk_table(lua, s.chunk_of(p)).and_then(|t| ok(lua, t)))
        }),
    )?;
    add(
        "around",
        Box::new(move |lua, s, args| {
            let p = position_arg(&arg(&args, 0))?;
            Ok(chunk_list(lua, &m3, s.around(p)).and_then(|t| ok(lua, t)))
        }),
    )?;
    add(
        "refusals",
        Box::new(move |lua, s, _| {
            let build = || -> mlua::Result<Table> {
                let list = s.refusals();
                m4.charge(UNITS_PER_TABLE * list.len() as u64)?;
                let t = lua.create_table_with_capacity(list.len(), 0)?;
                for (i, r) in list.into_iter().enumerate() {
                    t.raw_set(i + 1, refusal_table(lua, r)?)?;
                }
                Ok(t)
            };
            Ok(build().and_then(|t| ok(lua, t)))
        }),
    )?;
    add(
        "release",
        Box::new(move |lua, s, args| {
            let c = chunk_args(&arg(&args, 0), &arg(&args, 1))?;
            Ok(ok(lua, s.release(c)))
        }),
    )?;
    add(
        "focus",
        Box::new(|lua, s, _| {
            Ok(match s.focus() {
                None => ok(lua, Value::Nil),
                Some(p) => (|| {
                    let t = lua.create_table_with_capacity(0, 2)?;
                    t.raw_set("x", number(p.x))?;
                    t.raw_set("z", number(p.z))?;
                    ok(lua, t)
                })(),
            })
        }),
    )?;
    add(
        "radius",
        Box::new(|lua, s, _| Ok(ok(lua, i64::from(s.radius())))),
    )?;
    let by = id.clone();
    add(
        "setRadius",
        Box::new(move |lua, s, args| {
            let radius = checked(&arg(&args, 0), Radius::parse)?;
            s.set_radius(&by, radius);
            Ok(ok(lua, ()))
        }),
    )?;
    let by = id.clone();
    add(
        "setBudgetMs",
        Box::new(move |lua, s, args| {
            let budget = checked(&arg(&args, 0), BudgetMs::parse)?;
            s.set_budget_ms(&by, budget);
            Ok(ok(lua, ()))
        }),
    )?;
    let by = id.clone();
    add(
        "setFocus",
        Box::new(move |lua, s, args| {
            let focus = match arg(&args, 0) {
                Value::String(m) => FocusMode::parse(&json!(m.to_string_lossy()))?,
                other => FocusMode::parse(&serde_json::Value::Null)
                    .map_err(|e| format!("{}{}", e.trim_end_matches("null"), got(&other)))?,
            };
            let focus = Some(focus);
            s.set(
                &by,
                Overrides {
                    focus,
                    ..Overrides::default()
                },
            );
            Ok(ok(lua, ()))
        }),
    )?;
    let by = id.clone();
    add(
        "setMaxLoaded",
        Box::new(move |lua, s, args| {
            let cap = match arg(&args, 0) {
                Value::Nil => MaxLoaded::new(None).expect("null is always a cap"),
                v => checked(&v, MaxLoaded::parse)?,
            };
            let max_loaded = Some(cap);
            s.set(
                &by,
                Overrides {
                    max_loaded,
                    ..Overrides::default()
                },
            );
            Ok(ok(lua, ()))
        }),
    )?;
    let by = id;
    add(
        "setMaxRefusalsPerMod",
        Box::new(move |lua, s, args| {
            let max_refusals_per_mod = Some(checked(&arg(&args, 0), MaxRefusals::parse)?);
            s.set(
                &by,
                Overrides {
                    max_refusals_per_mod,
                    ..Overrides::default()
                },
            );
            Ok(ok(lua, ()))
        }),
    )?;
    add(
        "request",
        Box::new(move |lua, s, args| {
            let id = ticket_id(&arg(&args, 0))?;
            let at = position_arg(&arg(&args, 1))?;
            let radius = integer(&arg(&args, 2))
                .ok_or_else(|| format!("expected a radius 0..=64, got {}", got(&arg(&args, 2))))?;
            let ticks = integer(&arg(&args, 3)).ok_or_else(|| {
                format!("expected ticks 1..=2147483647, got {}", got(&arg(&args, 3)))
            })?;
            s.request_around(&id, at, radius, ticks)
                .map_err(|e| e.to_string())?;
            Ok(ok(lua, ()))
        }),
    )?;
    add(
        "drop",
        Box::new(move |lua, s, args| {
            let id = ticket_id(&arg(&args, 0))?;
            Ok(ok(lua, s.drop_ticket(&id)))
        }),
    )?;
    let m5 = meter.clone();
    add(
        "tickets",
        Box::new(move |lua, s, _| {
            let build = || -> mlua::Result<Table> {
                let list = s.tickets();
                m5.charge(UNITS_PER_TABLE * list.len() as u64)?;
                let t = lua.create_table_with_capacity(list.len(), 0)?;
                for (i, k) in list.into_iter().enumerate() {
                    let e = lua.create_table_with_capacity(0, 5)?;
                    e.raw_set("id", k.id)?;
                    e.raw_set("x", number(k.x))?;
                    e.raw_set("z", number(k.z))?;
                    e.raw_set("radius", k.radius)?;
                    e.raw_set("ticksLeft", k.ticks_left)?;
                    t.raw_set(i + 1, e)?;
                }
                Ok(t)
            };
            Ok(build().and_then(|t| ok(lua, t)))
        }),
    )?;
    let m6 = meter.clone();
    add(
        "foci",
        Box::new(move |lua, s, _| {
            let build = || -> mlua::Result<Table> {
                let list = s.foci();
                m6.charge(UNITS_PER_TABLE * list.len() as u64)?;
                let t = lua.create_table_with_capacity(list.len(), 0)?;
                for (i, p) in list.into_iter().enumerate() {
                    let e = lua.create_table_with_capacity(0, 2)?;
                    e.raw_set("x", number(p.x))?;
                    e.raw_set("z", number(p.z))?;
                    t.raw_set(i + 1, e)?;
                }
                Ok(t)
            };
            Ok(build().and_then(|t| ok(lua, t)))
        }),
    )?;
    add(
        "ready",
        Box::new(move |lua, s, args| {
            let Value::String(id) = arg(&args, 0) else {
                return Err(format!(
                    "expected an entity id (a string), got {}",
                    got(&arg(&args, 0))
                ));
            };
            Ok(ok(lua, s.ready(&EntityId::new(&id.to_string_lossy()))))
        }),
    )?;
    add(
        "ticketReady",
        Box::new(move |lua, s, args| {
            let id = ticket_id(&arg(&args, 0))?;
            Ok(ok(lua, s.ticket_ready(&id)))
        }),
    )?;
    add("progress", Box::new(|lua, s, _| Ok(ok(lua, s.progress()))))?;
    let service_for_callback = service.clone();
    add(
        "onChunk",
        Box::new(move |lua, s, args| {
            let (f, entry) = subscriber(&arg(&args, 0), &entry, &live)?;
            let service = service_for_callback.clone();
            let subscription = s.on_chunk(Box::new(move |chunk, loaded| {
                let restored = service.upgrade().is_some_and(|s| s.restoring());
                entry.chunk_callback(&f, chunk, loaded, restored)
            }));
            live.set(live.get() + 1);
            let handle = Subscription {
                subscription: RefCell::new(Some(subscription)),
                live: live.clone(),
            };
            Ok(lua.create_userdata(handle).and_then(|ud| ok(lua, ud)))
        }),
    )?;
    Ok(t)
}
