//! The work budget of the patched Lua VM (`vendor/lua-5.4.7`, built by `build.rs`): the only
//! unsafe code of the crate, four C calls on a state's raw pointer.
//!
//! The budget lives in the VM's global state: one unit per VM instruction, plus the work done
//! outside the instruction count (bytes allocated, values moved by calls and returns, bytes
//! compared or scanned, elements moved by the table library, pattern-matcher steps). Once it is
//! spent, every further VM instruction raises, so no Lua code runs on until the next call sets
//! a new budget.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ptr::NonNull;

use mlua::{ffi, Lua};

extern "C" {
    fn lua_wsbudget(state: *mut ffi::lua_State, n: ffi::lua_Integer);
    fn lua_wscharge(state: *mut ffi::lua_State, n: ffi::lua_Integer) -> std::os::raw::c_int;
    fn lua_wsexhausted(state: *mut ffi::lua_State) -> std::os::raw::c_int;
}

/// A handle on one Lua state's budget. It holds the state's raw pointer while attached; the
/// owner detaches it before the state is closed (see `sandbox::Entry`).
#[derive(Default)]
pub(super) struct Budget {
    state: Cell<Option<NonNull<ffi::lua_State>>>,
}

impl Budget {
    /// Attaches to `lua`'s main state.
    pub(super) fn attach(&self, lua: &Lua) -> mlua::Result<()> {
        let mut main = None;
        // SAFETY: the closure only reads the pointer mlua hands it; the main state lives as
        // long as `lua`, and `detach` is called before `lua` is dropped.
        unsafe {
            lua.exec_raw::<()>((), |state| main = NonNull::new(state))?;
        }
        self.state.set(main);
        Ok(())
    }

    /// Forgets the state (it is about to be closed).
    pub(super) fn detach(&self) {
        self.state.set(None);
    }

    /// Starts a call with `units` (`None`: unmetered) and clears the exhausted flag.
    pub(super) fn set(&self, units: Option<u64>) {
        if let Some(state) = self.state.get() {
            let n = units.map_or(-1, |u| i64::try_from(u).unwrap_or(i64::MAX));
            // SAFETY: an attached pointer is a live state (see `attach`).
            unsafe { lua_wsbudget(state.as_ptr(), n) }
        }
    }

    /// Charges `units` of work done outside the VM; whether the budget is spent.
    pub(super) fn charge(&self, units: u64) -> bool {
        match self.state.get() {
            // SAFETY: as in `set`.
            Some(state) => unsafe {
                lua_wscharge(state.as_ptr(), i64::try_from(units).unwrap_or(i64::MAX)) != 0
            },
            None => false,
        }
    }

    /// Whether the budget ran out during this call.
    pub(super) fn exhausted(&self) -> bool {
        match self.state.get() {
            // SAFETY: as in `set`.
            Some(state) => unsafe { lua_wsexhausted(state.as_ptr()) != 0 },
            None => false,
        }
    }
}
