//! The functions a Lua mod calls: `on` and `cancel` here, and one file per service table
//! (`streaming.rs`, `terrain.rs`), each one small Rust function per Lua function listed in its
//! `FUNCTIONS`; `args.rs` reads their arguments. Each answers `true, results...` or
//! `false, message`; the prelude raises the message at the mod's line.

mod args;
mod district;
mod nav;
mod streaming;
mod terrain;

pub(in crate::mods::lua) use args::chunk_table;

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use mlua::{
    AnyUserData, Function, IntoLuaMulti, Lua, MetaMethod, MultiValue, Table, UserData,
    UserDataFields, UserDataMethods, Value,
};

use crate::kits::district::DistrictService;
use crate::kits::streaming::{ChunkSubscription, StreamingService};
use crate::kits::terrain::TerrainService;

use super::sandbox::{EntrySlot, Meter};
use args::got;

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
    pub(super) subscription: RefCell<Option<ChunkSubscription>>,
    /// The mod's count of live subscriptions.
    pub(super) live: Rc<Cell<usize>>,
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
    /// The district service, likewise.
    pub(super) district: Option<Weak<dyn DistrictService>>,
    /// The nav service, likewise.
    pub(super) nav: Option<Weak<dyn crate::kits::nav::NavService>>,
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

/// Adds `on`, `cancel` and (with the service) the raw `streaming` functions to `r`.
pub(super) fn install(lua: &Lua, r: &Table, ctx: ApiContext) -> mlua::Result<()> {
    let ApiContext {
        hooks,
        streaming,
        terrain,
        district,
        nav,
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
    if let Some(service) = nav {
        r.raw_set("nav", nav::table(lua, service, meter.clone())?)?;
    }
    if let Some(service) = district {
        r.raw_set("district", district::table(lua, service, meter.clone())?)?;
    }
    if let Some(service) = terrain {
        r.raw_set(
            "terrain",
            terrain::table(lua, service, entry.clone(), meter.clone())?,
        )?;
    }
    if let Some(service) = streaming {
        r.raw_set(
            "streaming",
            streaming::table(lua, service, id, entry, meter)?,
        )?;
    }
    Ok(())
}

/// What an API function answers: `Ok` the Lua result (an error there is the VM's, e.g. the budget
/// spent), `Err(message)` a usage error, which the table prefixes with the function's name.
type Answer = Result<mlua::Result<MultiValue>, String>;

/// One function of a service table: `Err(message)` is a usage error, prefixed with the table and
/// function names.
type ServiceFn<S> = Box<dyn Fn(&Lua, &S, MultiValue) -> Answer>;

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

/// The functions of every service table, as `table.name` (`streaming.isLoaded`, …): what the
/// Lua reference in `docs/mods.md` must list, no more and no less.
#[cfg(test)]
fn reference() -> Vec<String> {
    let streaming = streaming::FUNCTIONS
        .iter()
        .map(|(n, _)| format!("streaming.{n}"));
    let terrain = terrain::FUNCTIONS
        .iter()
        .map(|(n, _)| format!("terrain.{n}"));
    let district = district::FUNCTIONS
        .iter()
        .map(|(n, _)| format!("district.{n}"));
    let nav = nav::FUNCTIONS.iter().map(|(n, _)| format!("nav.{n}"));
    streaming
        .chain(terrain)
        .chain(district)
        .chain(nav)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The `table.name` of every function the reference table of `docs/mods.md` lists: each row
    /// whose first cell starts with `` `streaming. `` or `` `terrain. ``, a later `` `.name( ``
    /// in that cell meaning the same table.
    fn documented() -> BTreeSet<String> {
        let page = include_str!("../../../../docs/mods.md");
        let mut out = BTreeSet::new();
        for row in page.lines().filter(|l| l.starts_with("| `")) {
            let cell = row.split(" | ").next().unwrap_or("");
            let mut table = None;
            for code in cell.split('`').skip(1).step_by(2) {
                let Some((path, _)) = code.split_once('(') else {
                    continue;
                };
                match path.split_once('.') {
                    Some(("", name)) => {
                        if let Some(t) = table {
                            out.insert(format!("{t}.{name}"));
                        }
                    }
                    Some((t @ ("streaming" | "terrain" | "district" | "nav"), name)) => {
                        table = Some(t);
                        out.insert(format!("{t}.{name}"));
                    }
                    _ => {}
                }
            }
        }
        out
    }

    #[test]
    fn the_lua_reference_lists_exactly_the_functions_registered() {
        let registered: BTreeSet<String> = super::reference().into_iter().collect();
        let documented = documented();
        let missing: Vec<_> = registered.difference(&documented).collect();
        let extra: Vec<_> = documented.difference(&registered).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "docs/mods.md misses {missing:?} and lists {extra:?}, which no table registers"
        );
        assert_eq!(registered.len(), 44);
    }
}
