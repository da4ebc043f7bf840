//! The work budget of the patched Lua VM (`vendor/lua-5.4.7`, built by `build.rs`): one of the
//! crate's two modules with unsafe code (the other is the C ABI, `capi`), a few C calls on a
//! state's raw pointer.
//!
//! The budget lives in the VM's global state: one unit per VM instruction, plus the work done
//! outside the instruction count (bytes allocated, values moved by calls and returns, bytes
//! compared or scanned, elements moved by the table library, pattern-matcher steps). Once it is
//! spent, every further VM instruction raises, so no Lua code runs on until the next call sets
//! a new budget.
//!
//! It also hands the VM its floating-point math ([`set_portable_math`]: the pure-Rust `libm`
//! crate, so `^`, `math.sin` … give the same bits on every machine) and reads or writes the
//! state of `math.random` ([`random_state`], for saves).
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ptr::NonNull;

use mlua::{ffi, Lua};

extern "C" {
    fn lua_wsbudget(state: *mut ffi::lua_State, n: ffi::lua_Integer);
    fn lua_wscharge(state: *mut ffi::lua_State, n: ffi::lua_Integer) -> std::os::raw::c_int;
    fn lua_wsexhausted(state: *mut ffi::lua_State) -> std::os::raw::c_int;
    fn lua_wsleft(state: *mut ffi::lua_State) -> ffi::lua_Integer;
    fn lua_wssetmath(state: *mut ffi::lua_State, math: *const PortableMath);
    fn lua_wsrandstate(
        state: *mut ffi::lua_State,
        idx: std::os::raw::c_int,
        buf: *mut u64,
        set: std::os::raw::c_int,
    ) -> std::os::raw::c_int;
}

/// `lua_WSMath` of `vendor/lua-5.4.7/lua.h`: the math functions the VM calls instead of the C
/// library's.
#[repr(C)]
struct PortableMath {
    sin: extern "C" fn(f64) -> f64,
    cos: extern "C" fn(f64) -> f64,
    tan: extern "C" fn(f64) -> f64,
    asin: extern "C" fn(f64) -> f64,
    acos: extern "C" fn(f64) -> f64,
    atan2: extern "C" fn(f64, f64) -> f64,
    exp: extern "C" fn(f64) -> f64,
    log: extern "C" fn(f64) -> f64,
    log2: extern "C" fn(f64) -> f64,
    log10: extern "C" fn(f64) -> f64,
    pow: extern "C" fn(f64, f64) -> f64,
    sqrt: extern "C" fn(f64) -> f64,
    sinh: extern "C" fn(f64) -> f64,
    cosh: extern "C" fn(f64) -> f64,
    tanh: extern "C" fn(f64) -> f64,
}

macro_rules! portable {
    ($($name:ident($($arg:ident),+)),* $(,)?) => {
        $(extern "C" fn $name($($arg: f64),+) -> f64 {
            libm::$name($($arg),+)
        })*
        /// The `libm` functions, as the VM calls them.
        static PORTABLE_MATH: PortableMath = PortableMath { $($name),* };
    };
}

portable!(
    sin(x),
    cos(x),
    tan(x),
    asin(x),
    acos(x),
    atan2(y, x),
    exp(x),
    log(x),
    log2(x),
    log10(x),
    pow(x, y),
    sqrt(x),
    sinh(x),
    cosh(x),
    tanh(x),
);

/// From now on, `lua`'s `^` and `math` functions compute with the pure-Rust `libm` crate
/// (the same bits on every machine) instead of the platform's C library.
pub(super) fn set_portable_math(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: the closure gets the live state; the table is a `static`, so the pointer the VM
    // keeps stays valid for as long as the state exists.
    unsafe { lua.exec_raw::<()>((), |state| lua_wssetmath(state, &PORTABLE_MATH)) }
}

/// Reads (`set: None`) or writes the state of the library's `math.random` function `random`:
/// four 64-bit words. `None` when `random` is not the library's function.
pub(super) fn random_state(
    lua: &Lua,
    random: &mlua::Function,
    set: Option<[u64; 4]>,
) -> mlua::Result<Option<[u64; 4]>> {
    let mut words = set.unwrap_or_default();
    let mut found = false;
    // SAFETY: `random` is pushed as the closure's only stack value (index 1); the C function
    // checks it is the library's `random` before touching its upvalue, and `words` holds the
    // four words it reads or writes.
    unsafe {
        lua.exec_raw::<()>(random, |state| {
            found = lua_wsrandstate(state, 1, words.as_mut_ptr(), i32::from(set.is_some())) != 0;
            ffi::lua_settop(state, 0);
        })?;
    }
    Ok(found.then_some(words))
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

    /// The units left of this call's budget (0 once spent; `None` unattached).
    pub(super) fn left(&self) -> Option<u64> {
        self.state.get().map(|state| {
            // SAFETY: as in `set`.
            let left = unsafe { lua_wsleft(state.as_ptr()) };
            u64::try_from(left).unwrap_or(0)
        })
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
