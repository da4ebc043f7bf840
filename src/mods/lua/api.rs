//! The functions a Lua mod calls that are the sandbox's own: `on` and `cancel`. The service
//! tables (`streaming`, `terrain`, …) are the kits' (`kits/<kit>/lua.rs`, built with
//! [`crate::script`]); [`install`] builds those of the game's catalog. Each function answers
//! `true, results...` or `false, message`; the prelude raises the message at the mod's line.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use mlua::{
    AnyUserData, Function, Lua, MetaMethod, Table, UserData, UserDataFields, UserDataMethods, Value,
};

use crate::host::Services;
use crate::script::{fail, got, ok, EntrySlot, LuaTable, Meter, TableCtx};

/// Most handlers one mod may register with `on`.
pub(super) const MAX_HANDLERS: usize = 1000;
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

/// The reason of a cancel token.
pub(super) fn cancel_reason(ud: &AnyUserData) -> Option<String> {
    ud.borrow::<CancelToken>().ok().map(|t| t.reason.clone())
}

/// Everything the API functions share.
pub(super) struct ApiContext<'a> {
    /// The declared hooks.
    pub(super) hooks: Vec<String>,
    /// The game's services, for the kits' tables.
    pub(super) services: &'a Services,
    /// The tables of the game's catalog, in catalog order.
    pub(super) tables: &'a [LuaTable],
    /// `(hook, handler)` registered by `on`, in order.
    pub(super) registered: Rc<RefCell<Vec<(String, Function)>>>,
    /// Whether the mod's top level is running (`on` is allowed only then).
    pub(super) top_level: Rc<Cell<bool>>,
    /// The mod id (the one its settings are set under).
    pub(super) id: crate::host::ModId,
    /// The running sandbox, for callbacks.
    pub(super) entry: EntrySlot,
    /// The mod's budget, charged for the work the tables do for the mod.
    pub(super) meter: Rc<dyn Meter>,
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

/// Adds `on`, `cancel` and the raw tables of the catalog's kits whose service the game has to
/// `r`, and their names, in catalog order, as the sequence `r.services` (the prelude lifts each).
pub(super) fn install(lua: &Lua, r: &Table, ctx: ApiContext<'_>) -> mlua::Result<()> {
    let ApiContext {
        hooks,
        services,
        tables,
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
    let table_ctx = TableCtx {
        mod_id: id.as_str(),
        meter: &meter,
        entry: &entry,
    };
    let names = lua.create_table()?;
    for table in tables {
        if let Some(t) = (table.install)(lua, services, &table_ctx)? {
            r.raw_set(table.name, t)?;
            names.raw_push(table.name)?;
        }
    }
    r.raw_set("services", names)
}

/// The functions of every service table of the built-in catalog, as `table.name`
/// (`streaming.isLoaded`, …): what the Lua reference in `docs/mods.md` must list, no more and
/// no less.
#[cfg(test)]
fn reference() -> Vec<String> {
    crate::kits::builtin_catalog()
        .lua_tables()
        .flat_map(|t| {
            (t.functions)()
                .into_iter()
                .map(move |n| format!("{}.{n}", t.name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The `table.name` of every function the reference table of `docs/mods.md` lists: each row
    /// whose first cell starts with `` `streaming. `` (or another table of the catalog), a later
    /// `` `.name( `` in that cell meaning the same table.
    fn documented() -> BTreeSet<String> {
        let tables: Vec<&str> = crate::kits::builtin_catalog()
            .lua_tables()
            .map(|t| t.name)
            .collect();
        let page = include_str!("../../../docs/mods.md");
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
                        if let Some(t) = &table {
                            out.insert(format!("{t}.{name}"));
                        }
                    }
                    Some((t, name)) if tables.contains(&t) => {
                        table = Some(t.to_owned());
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
        assert_eq!(registered.len(), 52);
    }
}
