//! The Lua bridge: what a kit builds its Lua table with, so that a kit's table lives in the kit's
//! own folder (`kits/<kit>/lua.rs`) and the sandbox (`mods::lua`) installs every table of the
//! catalog without knowing any kit.
//!
//! A kit registers a [`LuaTable`] in its catalog entry: the table's global name (`streaming`),
//! the Lua names of its functions (what the reference in `docs/mods.md` must list) and the
//! function that builds it in a mod's Lua state from the kit's service. The table's functions are
//! written with the helpers here: [`add_service_fn`] binds a Rust function to the live service
//! (failing once the kit is gone), [`ok`] and [`fail`] answer the sandbox's prelude (which
//! raises a usage error at the mod's line), the readers of `args` read arguments with the
//! sandbox's wording (`expected …, got a table`), and a [`Meter`] charges the host's work to the
//! mod's budget. A function that calls the mod back (a subscription) does so through the
//! [`RunningMod`] in its [`TableCtx`], so a failure is reported as `mod.error` like every other.
//!
//! What is not a table stays in `mods::lua`: `on`, `cancel`, `log`, `storage`, the meter and the
//! VM's budget behind it.

mod args;
mod table;

pub use args::{
    arg, checked, chunk_args, chunk_list, chunk_table, expected_got, float, got, integer, lua_type,
    number, position_arg, section_args, section_list, section_list_charged, section_table, setting,
    subscriber, MAX_SUBSCRIPTIONS, UNITS_PER_CALL, UNITS_PER_TABLE,
};
pub use table::{
    add_metered_fn, add_service_fn, fail, ok, service, Answer, EntrySlot, LuaTable, Meter,
    RunningMod, ServiceFn, ServiceLookup, TableCtx,
};

/// The `mlua` this crate builds its Lua states with: a kit of your own builds its table with it.
pub use mlua;
